"""Synthetic grouped data for examples/varying_slopes.mvi: varying intercepts and slopes
with correlated group effects.

  python make_varying_slopes.py      # numpy only

J = 20 groups of 15 observations (N = 300), x_n ~ N(0, 1);
(a_j, b_j) ~ N((alpha, beta), diag(tau) Omega diag(tau)) with alpha = 1, beta = -0.5,
tau = (0.8, 0.5), Omega's correlation rho = 0.6; y_n ~ N(a_g[n] + b_g[n] x_n, sigma),
sigma = 0.5; seed 20261125.
Writes varying_slopes.json (N, J, g, x, y) and varying_slopes_truth.json (the true
values, with the drawn a_j and b_j).
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261125
J, PER = 20, 15
N = J * PER
ALPHA, BETA = 1.0, -0.5
TAU = np.array([0.8, 0.5])
RHO = 0.6
SIGMA = 0.5

rng = np.random.default_rng(SEED)
omega = np.array([[1.0, RHO], [RHO, 1.0]])
cov = np.diag(TAU) @ omega @ np.diag(TAU)
ab = rng.multivariate_normal([ALPHA, BETA], cov, size=J)
g = np.repeat(np.arange(1, J + 1), PER)
x = rng.standard_normal(N)
y = ab[g - 1, 0] + ab[g - 1, 1] * x + SIGMA * rng.standard_normal(N)
here = os.path.dirname(os.path.abspath(__file__))
dump(os.path.join(here, "varying_slopes.json"), {"N": N, "J": J, "g": g, "x": x, "y": y})
with open(os.path.join(here, "varying_slopes_truth.json"), "w") as f:
    json.dump({"alpha": ALPHA, "beta": BETA, "tau": TAU.tolist(), "rho": RHO, "sigma": SIGMA,
               "a": ab[:, 0].tolist(), "b": ab[:, 1].tolist(), "seed": SEED}, f, indent=1)
    f.write("\n")
print("sample correlation of (a_j, b_j)", np.corrcoef(ab.T)[0, 1])
