"""Synthetic counts for examples/poisson_regression.mvi.

  python make_poisson_regression.py

N = 100, Q = 3 standard-normal covariates, exposures U[0.5, 2] (written as their logs),
y ~ Poisson(exposure · exp(a + X b)) with a = 0.5, b = (0.3, -0.2, 0.1); seed 20261121.
Writes poisson_regression.json (Stan JSON).
"""
import os

import numpy as np

from stanjson import dump

SEED = 20261121
N, Q = 100, 3
A_TRUE, B_TRUE = 0.5, np.array([0.3, -0.2, 0.1])

rng = np.random.default_rng(SEED)
X = rng.standard_normal((N, Q))
log_exposure = np.log(rng.uniform(0.5, 2.0, N))
y = rng.poisson(np.exp(log_exposure + A_TRUE + X @ B_TRUE))
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "poisson_regression.json"), {"X": X, "log_exposure": log_exposure, "y": y})
print("counts: mean", y.mean(), "max", y.max())
