"""Synthetic over-dispersed counts for examples/negbin_regression.mvi.

  python make_negbin_regression.py      # numpy only

N = 200, Q = 2 standard-normal covariates; log mean eta = a + X b with a = 1.0,
b = (0.5, -0.3); y ~ NegBinomial2(mean exp(eta), dispersion phi = 3), i.e. variance
mu + mu^2 / phi (Stan's neg_binomial_2_log), drawn as a gamma-Poisson mixture; seed
20261125. Writes negbin_regression.json (N, Q, X, y) and negbin_regression_truth.json.
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261125
N, Q = 200, 2
A, B = 1.0, np.array([0.5, -0.3])
PHI = 3.0

rng = np.random.default_rng(SEED)
X = rng.standard_normal((N, Q))
mu = np.exp(A + X @ B)
y = rng.poisson(rng.gamma(PHI, mu / PHI))
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "negbin_regression.json"), {"N": N, "Q": Q, "X": X, "y": y})
with open(os.path.join(here, "negbin_regression_truth.json"), "w") as f:
    json.dump({"a": A, "b": B.tolist(), "phi": PHI, "seed": SEED}, f, indent=1)
    f.write("\n")
print("counts: mean", y.mean(), "var", y.var(), "max", y.max())
