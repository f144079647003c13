"""Reference posterior summaries for examples/eight_schools.mvi from posteriordb.

  python make_eight_schools_reference.py [--posteriordb /work/shared/posteriordb]

eight_schools.json is posteriordb's data file (eight_schools-eight_schools_noncentered/
data.json) copied unchanged. This script reads that posterior's 10 000 reference draws
(reference.csv: theta[1..8], mu, tau, from Stan's NUTS) and writes their mean, sd and
5/50/95 % quantiles to eight_schools_reference.json, for accuracy checks (the model's
half_cauchy(5) prior on tau equals Stan's cauchy(0, 5) on tau > 0 up to a constant, so
the posterior is the same). posteriordb is BSD-3-Clause, (c) Stan Developers.
"""
import argparse
import json
import os

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--posteriordb", default=os.environ.get("MVI_POSTERIORDB", "/work/shared/posteriordb"))
    a = p.parse_args()
    src = os.path.join(a.posteriordb, "eight_schools-eight_schools_noncentered", "reference.csv")
    with open(src) as f:
        names = f.readline().strip().split(",")
    draws = np.loadtxt(src, delimiter=",", skiprows=1)
    out = {"source": "posteriordb eight_schools-eight_schools_noncentered reference.csv (10000 NUTS draws)",
           "draws": int(draws.shape[0]), "summary": {}}
    for j, name in enumerate(names):
        x = draws[:, j]
        q5, q50, q95 = np.quantile(x, [0.05, 0.5, 0.95])
        out["summary"][name] = {"mean": float(x.mean()), "sd": float(x.std(ddof=1)),
                                "q5": float(q5), "q50": float(q50), "q95": float(q95)}
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "eight_schools_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
