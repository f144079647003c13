"""Data for examples/cauchy_rbf.mvi (MVI paper §V-B; the paper leaves details open).

  python make_cauchy_rbf.py [--seed 20261121] [--out cauchy_rbf.json]

x ~ U[-10, 10], y = 0.3·x·sin(0.7x) - 0.03x² + U(-0.5, 0.5); N = 50 training and
T = 1000 test points; M = 15 RBF centres linspace(-10, 10); RBF width r = 1.5 and
Cauchy scale gamma = 0.1 are written as data. Inputs are one-column matrices.
Other seeds give the further data sets of the paper's repeated experiment.
"""
import argparse
import os

import numpy as np

from stanjson import dump

N, T, M = 50, 1000, 15
R, GAMMA = 1.5, 0.1


def draw(rng, n):
    x = rng.uniform(-10, 10, n)
    y = 0.3 * x * np.sin(0.7 * x) - 0.03 * x**2 + rng.uniform(-0.5, 0.5, n)
    return x, y


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--out", default=os.path.join(here, "cauchy_rbf.json"))
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    x, y = draw(rng, N)
    xt, yt = draw(rng, T)
    C = np.linspace(-10, 10, M)
    dump(a.out, {
        "X": x[:, None], "y": y, "C": C[:, None], "r": R, "gamma": GAMMA,
        "X_test": xt[:, None], "y_test": yt,
    })


if __name__ == "__main__":
    main()
