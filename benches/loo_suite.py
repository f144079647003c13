#!/usr/bin/env python3
"""PSIS-LOO from approximations against LOO from `nuts`, on the posteriordb suite.

  cargo build --release
  target/ci-venv/bin/python benches/loo_suite.py                       # the 12 of the suite
  target/ci-venv/bin/python benches/loo_suite.py --methods laplace,mvi_lr --posteriors arK-arK

For each posterior in benches/posteriordb (the 12 of the shared suite by default) this runs

  mvi loo model.mvi --data data.json --method nuts --json            (the reference)
  mvi loo model.mvi --data data.json --method M --json --log-lik --output-dir TMP

and prints elpd_loo and its se from `nuts`, then for each method M the corrected estimate
(mvi's: importance ratios p(w | y) / q(w) / p(y_n | w), Magnusson et al. 2019) and the
uncorrected one (PSIS-LOO of q's draws as if they were posterior draws, computed here from
log_lik.csv with arviz_stats.loo, reff = 1), each as its difference from `nuts` in units of
nuts's se. |diff| ≤ 2 is the target for the corrected estimate.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import warnings

import numpy as np

# arviz_stats warns at every k̂ above its threshold; the table says what matters here
warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE = [
    "arK-arK",
    "diamonds-diamonds",
    "earnings-logearn_interaction_z",
    "eight_schools-eight_schools_noncentered",
    "kidiq-kidscore_interaction",
    "kidiq-kidscore_momiq",
    "kidiq_with_mom_work-kidscore_interaction_z",
    "kilpisjarvi_mod-kilpisjarvi",
    "mesquite-logmesquite_logvas",
    "nes2000-nes",
    "sblrc-blr",
    "sblri-blr",
]


def mvi_loo(name, method, extra=()):
    d = ROOT / "benches" / "posteriordb" / name
    cmd = [
        str(ROOT / "target" / "release" / "mvi"),
        "loo",
        str(d / "model.mvi"),
        "--data",
        str(d / "data.json"),
        "--method",
        method,
        "--json",
        "-q",
        *extra,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[0] if out.stderr else "failed"
    return json.loads(out.stdout), None


def uncorrected(log_lik_csv):
    """arviz_stats.loo of the draws as if they were exact posterior draws."""
    import arviz_stats
    from arviz_base import from_dict

    ll = np.loadtxt(log_lik_csv, delimiter=",", skiprows=1, ndmin=2)
    tree = from_dict({"posterior": {"x": np.zeros((1, ll.shape[0]))}, "log_likelihood": {"y": ll[None, :, :]}})
    r = arviz_stats.loo(tree, reff=1.0)
    return float(r.elpd), float(r.se)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--posteriors", default=",".join(SUITE))
    ap.add_argument("--methods", default="laplace,mvi_lr")
    a = ap.parse_args()
    methods = a.methods.split(",")
    head = f"{'posterior':44} {'nuts elpd':>10} {'se':>6}"
    for m in methods:
        head += f" {m + ' corr':>12} {m + ' raw':>12}"
    print(head)
    for name in a.posteriors.split(","):
        ref, err = mvi_loo(name, "nuts")
        if ref is None:
            print(f"{name:44} nuts failed: {err}")
            continue
        e0, se = ref["loo"]["elpd_loo"], ref["loo"]["se"]
        row = f"{name:44} {e0:10.2f} {se:6.2f}"
        for m in methods:
            with tempfile.TemporaryDirectory() as tmp:
                r, err = mvi_loo(name, m, ["--log-lik", "--output-dir", tmp])
                if r is None:
                    row += f" {'failed':>12} {'':>12}"
                    continue
                corr = (r["loo"]["elpd_loo"] - e0) / se
                raw = (uncorrected(pathlib.Path(tmp) / "log_lik.csv")[0] - e0) / se
                row += f" {corr:+12.2f} {raw:+12.2f}"
        print(row, flush=True)
    print("(method columns: elpd_loo − nuts's elpd_loo, in nuts's se; corr = mvi's corrected LOO, raw = uncorrected)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
