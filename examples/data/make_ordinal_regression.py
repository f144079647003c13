"""Synthetic ratings for examples/ordinal_regression.mvi: an ordered-logistic regression.

  python make_ordinal_regression.py      # numpy only

N = 400, K = 5 categories, Q = 2 standard-normal covariates; latent eta = X beta with
beta = (1.0, -0.7); y = 1 + the number of cutpoints c = (-2, -0.5, 0.5, 2) below
eta + logistic noise (so P(y <= k) = inv_logit(c_k - eta), Stan's ordered_logistic);
seed 20261125. Writes ordinal_regression.json (N, K, Q, X, y) and
ordinal_regression_truth.json.
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261125
N, K, Q = 400, 5, 2
BETA = np.array([1.0, -0.7])
CUTS = np.array([-2.0, -0.5, 0.5, 2.0])

rng = np.random.default_rng(SEED)
X = rng.standard_normal((N, Q))
latent = X @ BETA + rng.logistic(size=N)
y = 1 + (latent[:, None] > CUTS[None, :]).sum(axis=1)
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "ordinal_regression.json"), {"N": N, "K": K, "Q": Q, "X": X, "y": y})
with open(os.path.join(here, "ordinal_regression_truth.json"), "w") as f:
    json.dump({"beta": BETA.tolist(), "c": CUTS.tolist(), "seed": SEED}, f, indent=1)
    f.write("\n")
print("category counts", np.bincount(y, minlength=K + 1)[1:])
