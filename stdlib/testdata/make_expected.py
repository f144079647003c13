"""Expected outputs of the stdlib functions on small inputs, for the Rust tests.

  python make_expected.py      # numpy only; writes rbf.json, standardize.json, design.json

Each file holds the inputs (Stan-JSON style: matrices as lists of rows) and the expected
result computed here in float64 by a direct, loop-based definition (not the vectorised
form of the .mvi code), so a test evaluating the .mvi function on the inputs can compare
to `expected` with a tolerance of about 1e-12.
"""
import json
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def write(name, d):
    with open(os.path.join(here, name), "w") as f:
        json.dump({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}, f, indent=1)
        f.write("\n")


# rbf_features(X, C, r): N × (M + 1), last column ones; sq_dist and rbf_kernel too.
X = rng.standard_normal((5, 2))
C = rng.standard_normal((3, 2))
r = 0.8
D2 = np.array([[sum((X[n, q] - C[m, q]) ** 2 for q in range(2)) for m in range(3)] for n in range(5)])
K = np.exp(-D2 / (2 * r * r))
write("rbf.json", {"X": X, "C": C, "r": r, "sq_dist": D2, "rbf_kernel": K,
                   "rbf_features": np.hstack([K, np.ones((5, 1))])})

# standardize(X) and standardize_like(X_test, X): sd with n − 1; column 3 is constant → zeros.
X = rng.standard_normal((6, 3)) * [1.0, 3.0, 0.0] + [0.0, 5.0, 2.0]
Xt = rng.standard_normal((4, 3))
m, s = X.mean(0), X.std(0, ddof=1)
s_safe = np.where(s > 1e-12, s, 1.0)
write("standardize.json", {"X": X, "X_test": Xt, "standardize": (X - m) / s_safe,
                           "standardize_like": (Xt - m) / s_safe})

# design helpers.
X = rng.standard_normal((4, 3))
write("design.json", {"X": X, "add_bias": np.hstack([X, np.ones((4, 1))]),
                      "row_sums": X.sum(1), "col_means": X.mean(0), "ones_3": np.ones(3)})
