"""Data for examples/logistic_rbf_banana.mvi (and benches/peers/numpyro_fit.py).

  python make_logistic_rbf_banana.py [--shared /work/shared/data]

From the Rätsch banana set as distributed in the project's shared data (already
standardised, Q = 2, labels 0/1):
  X, y           the 400 training rows of the first generated split (train_idx.csv, line 1);
  X_test, y_test 1000 of that split's 4900 test rows, drawn without replacement (seed below)
                 and kept in ascending row order;
  C              M = 30 RBF centres: k-means of the training X (k-means++ start, then
                 Lloyd iterations to convergence; seed below).
Writes logistic_rbf_banana.json (Stan JSON).
"""
import argparse
import os

import numpy as np

from stanjson import dump

SEED = 20261121
M = 30
N_TEST = 1000


def kmeans(X, k, rng, iters=300):
    """k-means++ initialisation followed by Lloyd iterations; returns the k × Q centres."""
    n = X.shape[0]
    centres = [X[rng.integers(n)]]
    for _ in range(1, k):
        d2 = np.min(((X[:, None, :] - np.array(centres)[None, :, :]) ** 2).sum(-1), axis=1)
        centres.append(X[rng.choice(n, p=d2 / d2.sum())])
    C = np.array(centres)
    for _ in range(iters):
        assign = np.argmin(((X[:, None, :] - C[None, :, :]) ** 2).sum(-1), axis=1)
        newC = np.array([X[assign == j].mean(0) if np.any(assign == j) else C[j] for j in range(k)])
        if np.allclose(newC, C, rtol=0, atol=1e-12):
            break
        C = newC
    return C


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", default=os.environ.get("MVI_SHARED_DATA", "/work/shared/data"))
    a = p.parse_args()
    src = os.path.join(a.shared, "banana")
    X = np.loadtxt(os.path.join(src, "X.csv"), delimiter=",", skiprows=1)
    y = np.loadtxt(os.path.join(src, "y.csv"), delimiter=",", skiprows=1).astype(int)
    with open(os.path.join(src, "train_idx.csv")) as f:
        train = np.array([int(t) for t in f.readline().split(",")])
    with open(os.path.join(src, "test_idx.csv")) as f:
        test_all = np.array([int(t) for t in f.readline().split(",")])
    assert len(train) == 400 and len(test_all) == 4900

    rng = np.random.default_rng(SEED)
    test = np.sort(rng.choice(test_all, size=N_TEST, replace=False))
    C = kmeans(X[train], M, rng)
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "logistic_rbf_banana.json"), {
        "X": X[train], "y": y[train], "C": C, "X_test": X[test], "y_test": y[test],
    })
    print(f"train {len(train)} (y=1: {y[train].sum()}), test {len(test)} (y=1: {y[test].sum()}), centres {C.shape}")


if __name__ == "__main__":
    main()
