"""Data for examples/softmax_rbf_iris.mvi.

  python make_softmax_rbf_iris.py

The split of softmax_iris.json (read from it: 105 training and 45 test rows, labels 1..K,
raw measurements) and C, M = 10 RBF centres: k-means of the training inputs standardised
with their own means and sds (divisor n - 1, as the model's `standardize`), k-means++
start and 100 Lloyd iterations, numpy default_rng(20261121).
Writes softmax_rbf_iris.json (Stan JSON).
"""
import json
import os

import numpy as np

from stanjson import dump

SEED = 20261121
M = 10


def kmeans(x, k, rng):
    centres = [x[rng.integers(len(x))]]
    for _ in range(1, k):
        d2 = np.min(((x[:, None, :] - np.array(centres)[None]) ** 2).sum(-1), axis=1)
        centres.append(x[rng.choice(len(x), p=d2 / d2.sum())])
    c = np.array(centres)
    for _ in range(100):
        lab = np.argmin(((x[:, None, :] - c[None]) ** 2).sum(-1), axis=1)
        new = np.array([x[lab == j].mean(0) if np.any(lab == j) else c[j] for j in range(k)])
        if np.allclose(new, c):
            break
        c = new
    return c


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "softmax_iris.json")) as f:
        d = json.load(f)
    X = np.array(d["X"])
    xs = (X - X.mean(0)) / X.std(0, ddof=1)
    C = kmeans(xs, M, np.random.default_rng(SEED))
    dump(os.path.join(here, "softmax_rbf_iris.json"), {
        "K": d["K"], "X": X, "y": np.array(d["y"]), "C": C,
        "X_test": np.array(d["X_test"]), "y_test": np.array(d["y_test"]),
    })
    print(f"C {C.shape}")


if __name__ == "__main__":
    main()
