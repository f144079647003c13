"""Synthetic data for examples/linear_regression.mvi and its exact posterior.

  python make_linear_regression.py      # writes linear_regression.json and linear_regression_exact.json

Model: y ~ N(X w, sigma² I), w ~ N(0, tau² I) with sigma = 0.5, tau = 1 known.
Data: N = 50, D = 3, X standard normal, true w = (1, -2, 0.5), seed 20261121.
Exact posterior N(m, V): V = (XᵀX/sigma² + I/tau²)⁻¹, m = V Xᵀy/sigma²;
log evidence log N(y; 0, sigma² I + tau² X Xᵀ), all computed in float64 from the values
exactly as written to the JSON file.
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261121
N, D = 50, 3
SIGMA, TAU = 0.5, 1.0
W_TRUE = np.array([1.0, -2.0, 0.5])

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(SEED)
X = rng.standard_normal((N, D))
y = X @ W_TRUE + SIGMA * rng.standard_normal(N)
dump(os.path.join(here, "linear_regression.json"), {"X": X, "y": y, "sigma": SIGMA, "tau": TAU})

# Exact posterior and evidence.
prec = X.T @ X / SIGMA**2 + np.eye(D) / TAU**2
V = np.linalg.inv(prec)
V = (V + V.T) / 2
m = V @ (X.T @ y) / SIGMA**2
K = SIGMA**2 * np.eye(N) + TAU**2 * X @ X.T
sign, logdet = np.linalg.slogdet(K)
assert sign > 0
log_evidence = -0.5 * (N * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(K, y))
# The same value by the Laplace identity (exact here): log p(y, m) + D/2 log 2π + ½ log det V.
log_joint_at_m = (-0.5 * N * np.log(2 * np.pi * SIGMA**2) - 0.5 * np.sum((y - X @ m) ** 2) / SIGMA**2
                  - 0.5 * D * np.log(2 * np.pi * TAU**2) - 0.5 * m @ m / TAU**2)
laplace = log_joint_at_m + 0.5 * D * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(V)[1]
assert abs(laplace - log_evidence) < 1e-9, (laplace, log_evidence)

exact = {
    "description": "exact posterior of examples/linear_regression.mvi on data/linear_regression.json "
                   "(made by make_linear_regression.py); w ~ N(post_mean, post_cov)",
    "param": "w",
    "post_mean": m.tolist(),
    "post_cov": V.tolist(),
    "post_sd": np.sqrt(np.diag(V)).tolist(),
    "log_evidence": float(log_evidence),
    "log_joint_at_mode": float(log_joint_at_m),
    "w_true": W_TRUE.tolist(),
    "seed": SEED,
}
with open(os.path.join(here, "linear_regression_exact.json"), "w") as f:
    json.dump(exact, f, indent=2)
    f.write("\n")
print("log evidence", log_evidence, "posterior mean", m)
