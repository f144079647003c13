"""Data for examples/softmax_iris.mvi.

  python make_softmax_iris.py [--shared /work/shared/data]

Fisher's iris (scikit-learn's copy in the project's shared data: 150 rows, Q = 4
measurements in cm, labels 0..2) split at random 70/30 (105 train, 45 test) with
numpy default_rng(20261121).permutation(150); both parts keep ascending row order.
Labels are shifted to 1..K (1 setosa, 2 versicolor, 3 virginica) as categorical_logit
expects. The raw measurements are written: the model standardises them itself.
Writes softmax_iris.json (Stan JSON).
"""
import argparse
import os

import numpy as np

from stanjson import dump

SEED = 20261121


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", default=os.environ.get("MVI_SHARED_DATA", "/work/shared/data"))
    a = p.parse_args()
    src = os.path.join(a.shared, "iris")
    X = np.loadtxt(os.path.join(src, "X.csv"), delimiter=",", skiprows=1)
    y = np.loadtxt(os.path.join(src, "y.csv"), delimiter=",", skiprows=1).astype(int) + 1
    n = X.shape[0]
    perm = np.random.default_rng(SEED).permutation(n)
    n_train = int(round(0.7 * n))
    train, test = np.sort(perm[:n_train]), np.sort(perm[n_train:])
    here = os.path.dirname(os.path.abspath(__file__))
    dump(os.path.join(here, "softmax_iris.json"), {
        "K": int(y.max()), "X": X[train], "y": y[train], "X_test": X[test], "y_test": y[test],
    })
    print(f"train {len(train)} {np.bincount(y[train])[1:]}, test {len(test)} {np.bincount(y[test])[1:]}")


if __name__ == "__main__":
    main()
