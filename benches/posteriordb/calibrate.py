#!/usr/bin/env python3
"""Calibrate W1 on the posteriors of shared `more/`, as the shared posteriordb README does
for the 12 of its own suite (its calibration.json): writes calibration_more.json here.

  benches/peers/.venv-peers/bin/python benches/posteriordb/calibrate.py \
      [--shared /work/shared/posteriordb] [--reps 20]

For every posterior folder here with a model.mvi whose reference is under --shared/more
(the 12 of the suite are calibrated in --shared/calibration.json), on Stan's unconstrained
scale (coords.py), with 100 draws per score and seeds 1000, 1001, ... (one per repeat):

  floor      the 10 000 reference draws split at random into disjoint halves; W1 of 100 draws
             of one half against all 5 000 of the other (a perfect sampler's score)
  gauss      W1 of 100 draws of N(reference mean, reference covariance) against all 10 000
             (a perfect Gaussian approximation's score)
  meanfield  the same with the variances 1/diag(cov^-1) (the KL(q||p) optimum of a diagonal
             Gaussian when the posterior is Gaussian)
  point      the mean distance of the reference draws from their mean (W1 of a point mass)

W1 is exact (POT's ot.emd2), Euclidean cost, uniform weights. numpy and POT only.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import ot

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import coords  # noqa: E402

N_DRAWS = 100


def w1(x, y):
    """Exact W1 between the empirical measures of x (n, D) and y (m, D), Euclidean cost."""
    a = np.full(x.shape[0], 1.0 / x.shape[0])
    b = np.full(y.shape[0], 1.0 / y.shape[0])
    return float(ot.emd2(a, b, ot.dist(x, y, metric="euclidean"), numItermax=10_000_000))


def stats(values):
    """{"mean", "sd", "values"} of the repeats."""
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values), "values": values}


def calibrate(ref, reps):
    """The four scores of one posterior's (10000, D) unconstrained reference draws."""
    n, d = ref.shape
    mean = ref.mean(axis=0)
    cov = np.atleast_2d(np.cov(ref, rowvar=False))
    mf_sd = np.sqrt(1.0 / np.diag(np.linalg.inv(cov)))
    floor, gauss, meanfield = [], [], []
    for r in range(reps):
        rng = np.random.default_rng(1000 + r)
        perm = rng.permutation(n)
        half, other = perm[: n // 2], perm[n // 2:]
        floor.append(w1(ref[rng.choice(half, N_DRAWS, replace=False)], ref[other]))
        gauss.append(w1(rng.multivariate_normal(mean, cov, size=N_DRAWS), ref))
        meanfield.append(w1(mean + mf_sd * rng.standard_normal((N_DRAWS, d)), ref))
    return {
        "dimension": d,
        "reference_draws": n,
        "point": float(np.linalg.norm(ref - mean, axis=1).mean()),
        "floor": stats(floor),
        "gauss": stats(gauss),
        "meanfield": stats(meanfield),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "posteriordb"))
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    names = sorted(
        d for d in os.listdir(HERE)
        if os.path.isfile(os.path.join(HERE, d, "model.mvi"))
        and os.path.isfile(os.path.join(args.shared, "more", d, "reference.csv"))
    )
    out = {
        "protocol": "W1 on the unconstrained scale, Euclidean cost, uniform weights, exact (POT ot.emd2); "
        f"{N_DRAWS} draws; reps={args.reps}, seeds 1000..{999 + args.reps}",
        "n": N_DRAWS,
        "standardize": False,
        "posteriors": {},
    }
    for name in names:
        _, ref = coords.reference_draws(os.path.join(args.shared, "more", name))
        out["posteriors"][name] = calibrate(ref, args.reps)
        c = out["posteriors"][name]
        print(f"{name}: floor {c['floor']['mean']:.3g} ± {c['floor']['sd']:.2g}, "
              f"Gaussian {c['gauss']['mean']:.3g} ± {c['gauss']['sd']:.2g}, "
              f"mean-field {c['meanfield']['mean']:.3g}, point {c['point']:.3g}", flush=True)
    tmp = os.path.join(HERE, "calibration_more.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(HERE, "calibration_more.json"))


if __name__ == "__main__":
    main()
