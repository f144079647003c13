"""Data for examples/cauchy_rbf.mvi (MVI paper §V-B; the paper leaves details open).

  python make_cauchy_rbf.py [--seed 20261121] [--out cauchy_rbf.json] [--noise uniform|t3]

x ~ U[-10, 10], y = 0.3·x·sin(0.7x) - 0.03x² + noise; N = 50 training and
T = 1000 test points; M = 15 RBF centres linspace(-10, 10); RBF width r = 1.5 and
Cauchy scale gamma = 0.1 are written as data. Inputs are one-column matrices.
Other seeds give the further data sets of the paper's repeated experiment.
Noise: `uniform` (the default, and the example's data set) is U(-0.5, 0.5) as in the
project's peer notes; `t3` is 0.17 times a Student-t with 3 degrees of freedom, the
construction of `mvi bench paper --tables II` (docs/results.md, Table II, says why).
"""
import argparse
import os

import numpy as np

from stanjson import dump

N, T, M = 50, 1000, 15
R, GAMMA = 1.5, 0.1


def draw(rng, n, noise):
    x = rng.uniform(-10, 10, n)
    e = rng.uniform(-0.5, 0.5, n) if noise == "uniform" else 0.17 * rng.standard_t(3, n)
    y = 0.3 * x * np.sin(0.7 * x) - 0.03 * x**2 + e
    return x, y


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--out", default=os.path.join(here, "cauchy_rbf.json"))
    p.add_argument("--noise", choices=["uniform", "t3"], default="uniform")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    x, y = draw(rng, N, a.noise)
    xt, yt = draw(rng, T, a.noise)
    C = np.linspace(-10, 10, M)
    dump(a.out, {
        "X": x[:, None], "y": y, "C": C[:, None], "r": R, "gamma": GAMMA,
        "X_test": xt[:, None], "y_test": yt,
    })


if __name__ == "__main__":
    main()
