"""Synthetic draws for examples/mixture_k3.mvi: a three-component normal mixture.

  python make_mixture_k3.py      # numpy only

N = 300; weights w = (0.3, 0.5, 0.2), means mu = (-3, 0, 4), sds sigma = (0.8, 1.0, 0.6);
each y_n's component drawn from w, then y_n ~ N(mu_k, sigma_k); seed 20261125.
Writes mixture_k3.json (N, y) and mixture_k3_truth.json (the true values).
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261125
N = 300
W = np.array([0.3, 0.5, 0.2])
MU = np.array([-3.0, 0.0, 4.0])
SIGMA = np.array([0.8, 1.0, 0.6])

rng = np.random.default_rng(SEED)
z = rng.choice(3, size=N, p=W)
y = MU[z] + SIGMA[z] * rng.standard_normal(N)
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "mixture_k3.json"), {"N": N, "y": y})
with open(os.path.join(here, "mixture_k3_truth.json"), "w") as f:
    json.dump({"w": W.tolist(), "mu": MU.tolist(), "sigma": SIGMA.tolist(), "seed": SEED}, f, indent=1)
    f.write("\n")
print("component counts", np.bincount(z, minlength=3))
