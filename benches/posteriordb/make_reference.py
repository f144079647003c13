#!/usr/bin/env python3
"""Write benches/posteriordb/<posterior>/reference.json from the shared posteriordb folder.

  benches/peers/.venv-peers/bin/python benches/posteriordb/make_reference.py \
      [--shared /work/shared/posteriordb]

For every posterior folder here with a model.mvi, reads from --shared (default
../shared/posteriordb relative to the repository root; the folder `P` or `more/P`)
reference.csv (10 000 NUTS draws, constrained scale) and info.json (Stan's transforms, see
coords.py; for hmm_drive and gp_pois_regr this folder's coordinates.json instead), maps the draws to Stan's unconstrained coordinates and
writes the summary that tests/it/posteriordb.rs compares mvi's fits with:

  names       the unconstrained coordinates in Stan's order (`sigma` meaning log sigma,
              as `transforms` says)
  transforms  each coordinate's transform
  mean, sd    per coordinate (sd with divisor n - 1)
  cov         the D x D covariance (divisor n - 1), rows as lists
  skewness    per coordinate (the third standardised moment), to judge how Gaussian it is
  draws       the number of reference draws

Numbers are written with repr() (float64 round trip). numpy only.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import coords  # noqa: E402


def summary(info, draws):
    """The reference.json content for one posterior."""
    mean = draws.mean(axis=0)
    cov = np.cov(draws, rowvar=False, ddof=1).reshape(draws.shape[1], draws.shape[1])
    sd = np.sqrt(np.diag(cov))
    skew = ((draws - mean) ** 3).mean(axis=0) / draws.std(axis=0) ** 3
    return {
        "posterior": info["posterior"],
        "source": "posteriordb reference draws (reference.csv), Stan's unconstrained scale",
        "draws": int(draws.shape[0]),
        "names": [c["name"] for c in info["coordinates"]],
        "transforms": [c["transform"]["type"] for c in info["coordinates"]],
        "mean": mean.tolist(),
        "sd": sd.tolist(),
        "skewness": skew.tolist(),
        "cov": cov.tolist(),
    }


def write(path, content):
    """JSON with one covariance row per line."""
    lines = ["{"]
    keys = list(content)
    for i, k in enumerate(keys):
        v = content[k]
        if k == "cov":
            rows = ",\n    ".join(json.dumps([float(x) for x in row]) for row in v)
            text = "[\n    " + rows + "\n  ]"
        else:
            text = json.dumps(v)
        lines.append(f"  {json.dumps(k)}: {text}" + ("," if i + 1 < len(keys) else ""))
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "posteriordb"))
    args = ap.parse_args()
    names = sorted(
        d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "model.mvi"))
    )
    for name in names:
        info, draws = coords.reference_draws(coords.shared_folder(args.shared, name))
        out = summary(info, draws)
        write(os.path.join(HERE, name, "reference.json"), out)
        print(f"{name}: D = {draws.shape[1]}, {draws.shape[0]} draws")


if __name__ == "__main__":
    main()
