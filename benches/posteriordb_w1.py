#!/usr/bin/env python3
"""Accuracy on posteriordb: the 1-Wasserstein distance of mvi's draws to NUTS reference draws.

  benches/peers/setup.sh                                       # once: numpy + POT in the venv
  PY=benches/peers/.venv-peers/bin/python
  $PY benches/posteriordb_w1.py                                # every posterior x method, 5 seeds
  $PY benches/posteriordb_w1.py --posteriors sblrc-blr,arK-arK --methods laplace,vi_diag --reps 3
  $PY benches/posteriordb_w1.py --json benches/peers/out/posteriordb_w1.json
  $PY benches/posteriordb_w1.py --tables-from benches/peers/out/posteriordb_w1.json   # print again
  $PY benches/posteriordb_w1.py --methods laplace,mvi_lr --peers     # with NumPyro's autoguides
  $PY benches/posteriordb_w1.py --methods pathfinder,pathfinder1,blackjax_pathfinder --reps 3
                                              # mvi's pathfinder (4 paths; 1 path) and BlackJAX's

The protocol is the Pathfinder paper's (Zhang et al., JMLR 2022), as the shared posteriordb
README defines it: W1 on the model's unconstrained scale (Stan's coordinates, from each
posterior's info.json) between 100 approximate draws and the 10 000 reference draws,
Euclidean cost, uniform weights, exact optimal transport (POT's `ot.emd2`).

For each posterior (benches/posteriordb/<posterior>/model.mvi with its data.json), method
and seed s = 1..--reps this runs

  mvi run model.mvi --data data.json --method M --set seed=s --set draws=100 \
      --output-dir TMP --quiet --json

reads TMP/draws.csv (constrained draws, CmdStan's names), maps them to Stan's unconstrained
coordinates (benches/posteriordb/coords.py), and computes W1 against the reference draws read
from --shared (the reference is not copied into the repository). The seed changes both the
method's randomness and which 100 draws are taken from q.

The posteriors are the 12 of the shared folder's calibrated suite and the further ones of
its `more/` (every folder of benches/posteriordb with a model.mvi; coords.py finds the
reference in `--shared/P` or `--shared/more/P`).

The table gives, per posterior and method, the mean ± sd of W1 over the seeds beside the
calibration (the shared README's calibration.json in --shared for its 12 posteriors, and
benches/posteriordb/calibration_more.json, made by benches/posteriordb/calibrate.py in the
same way, for the others): the floor (100 reference draws against
the rest), a perfect Gaussian (the reference mean and covariance), the mean-field optimum
and a point mass at the reference mean; and the median wall time of the fit itself
(fit.json's wall_time_s: the method, without loading and writing). A second table gives the
marginal checks on the unconstrained scale from q's own moments (fit.json's mean and
covariance for Gaussian q; the draws' moments for split_mf and pmfvb, which have no single
Gaussian): the largest |mean error| in reference sds and the range of sd ratios q/reference.
A third table checks issue 17's target where laplace and mvi_lr both ran: the better of the
two has every marginal mean within 0.3 reference sd and every sd ratio in [0.7, 1.3], and,
where the posterior is near-Gaussian, a W1 within the perfect Gaussian's mean + 2 sd.
Near-Gaussian means that the metric cannot tell a perfect Gaussian from the reference: the
calibration's Gaussian score is within the floor's mean + 2 sd (the table also shows the
largest |skewness| of a coordinate, from reference.json).

NumPyro's autoguides on the same posteriors (`--peers`, or methods `numpyro_laplace`,
`numpyro_lowrank`, `numpyro_diag`, and `numpyro_lowrank_map`, `numpyro_diag_map` started at NumPyro's MAP) run in this process from benches/peers/numpyro_posteriordb.py:
their 100 draws come straight from the guide on the unconstrained scale, their moments are
the guide's, and their time is the whole fit with JIT compilation (cold).

`blackjax_pathfinder` is BlackJAX's single-path Pathfinder (benches/peers/blackjax_posteriordb.py,
Stan's settings; needs `pip install blackjax` in the venv); `pathfinder1` is mvi's with
`num_paths=1`. Where fit.json reports evaluation counts (`evals`) and for BlackJAX (counted
in the bench), a third table gives the median gradients / log-density values per fit.

A fit that fails (non-zero exit) or exceeds --timeout is reported as such in the table.
Only the standard library, numpy, POT and (for the peers) NumPyro are used: run it with the
benches' virtualenv.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import ot

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PDB = os.path.join(HERE, "posteriordb")
MVI = os.path.join(ROOT, "target", "release", "mvi")
sys.path.insert(0, PDB)
import coords  # noqa: E402

METHODS = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full", "pathfinder", "split_mf", "pmfvb"]
PEERS = ["numpyro_laplace", "numpyro_lowrank", "numpyro_diag", "numpyro_lowrank_map", "numpyro_diag_map"]
# BlackJAX's single-path Pathfinder (benches/peers/blackjax_posteriordb.py; needs blackjax in the venv).
BLACKJAX = ["blackjax_pathfinder"]
N_DRAWS = 100


def posteriors():
    """Every posterior folder with a model, sorted."""
    return sorted(
        d for d in os.listdir(PDB) if os.path.isfile(os.path.join(PDB, d, "model.mvi"))
    )


def w1(x, y):
    """Exact W1 between the empirical measures of x (n, D) and y (m, D), Euclidean cost."""
    a = np.full(x.shape[0], 1.0 / x.shape[0])
    b = np.full(y.shape[0], 1.0 / y.shape[0])
    cost = ot.dist(x, y, metric="euclidean")
    return float(ot.emd2(a, b, cost, numItermax=10_000_000))


def fit(posterior, method, seed, timeout, extra):
    """One `mvi run`: (fit.json, (n, D) unconstrained draws, process seconds) or an error."""
    sets = [f"seed={seed}", f"draws={N_DRAWS}", *extra]
    return coords.run_fit(MVI, os.path.join(PDB, posterior), method, sets, timeout)


def q_moments(report, draws):
    """Mean and covariance of q on the unconstrained scale (see the module doc)."""
    approx = report.get("approximation") or {}
    if approx.get("kind") == "gaussian":
        return np.array(approx["mean"]), np.array(approx["cov"])
    return draws.mean(axis=0), np.atleast_2d(np.cov(draws, rowvar=False))


def marginals(mean, cov, ref_mean, ref_sd):
    """(largest |mean error| in reference sds, smallest and largest sd ratio)."""
    z = np.abs(mean - ref_mean) / ref_sd
    ratio = np.sqrt(np.clip(np.diag(cov), 0.0, None)) / ref_sd
    return float(z.max()), float(ratio.min()), float(ratio.max())


def fit_numpyro(posterior, method, seed):
    """One NumPyro fit (benches/peers/numpyro_posteriordb.py): (draws, mean, cov, seconds)."""
    sys.path.insert(0, os.path.join(HERE, "peers"))
    import numpyro_posteriordb

    return numpyro_posteriordb.fit(posterior, os.path.join(PDB, posterior), method, seed, N_DRAWS)


def fit_blackjax(posterior, seed):
    """One BlackJAX Pathfinder fit: (draws, mean, cov, seconds, evaluation counts)."""
    sys.path.insert(0, os.path.join(HERE, "peers"))
    import blackjax_posteriordb

    return blackjax_posteriordb.fit(posterior, os.path.join(PDB, posterior), seed, N_DRAWS)


def mvi_method(method):
    """(mvi's method name, extra --set options): `pathfinder1` is single-path pathfinder."""
    if method == "pathfinder1":
        return "pathfinder", ["num_paths=1"]
    return method, []


def one_fit(posterior, method, info, seed, args):
    """(unconstrained draws, q's mean, q's covariance, fit seconds, evaluations or None) or
    {"error": ...}. Evaluations are fit.json's `evals` where the build reports them."""
    if method == "blackjax_pathfinder":
        try:
            return fit_blackjax(posterior, seed)
        except Exception as e:  # report a peer's failure in the table, as for mvi
            return {"error": f"{type(e).__name__}: {e}"}
    if method.startswith("numpyro_"):
        try:
            return (*fit_numpyro(posterior, method.removeprefix("numpyro_"), seed), None)
        except Exception as e:  # report a peer's failure in the table, as for mvi
            return {"error": f"{type(e).__name__}: {e}"}
    name, extra = mvi_method(method)
    r = fit(posterior, name, seed, args.timeout, args.set + extra)
    if "error" in r:
        return r
    draws = coords.unconstrained_draws(info, r["cols"], rename=coords.mvi_name)
    mean, cov = q_moments(r["fit"], draws)
    return draws, mean, cov, float(r["fit"]["wall_time_s"]), r["fit"].get("evals")


def run_cell(posterior, method, info, ref, args):
    """Every seed of one posterior x method: a result dict for the table and the JSON."""
    ref_mean, ref_sd = ref.mean(axis=0), ref.std(axis=0, ddof=1)
    scores, times, checks, errors, evals = [], [], [], [], []
    for seed in range(1, args.reps + 1):
        r = one_fit(posterior, method, info, seed, args)
        if isinstance(r, dict):
            errors.append(r["error"])
            break
        draws, mean, cov, seconds, counts = r
        if counts is not None:
            evals.append(counts)
        if draws.shape != (N_DRAWS, ref.shape[1]):
            errors.append(f"draws of shape {draws.shape} instead of {(N_DRAWS, ref.shape[1])}")
            break
        scores.append(w1(draws, ref))
        times.append(seconds)
        checks.append(marginals(mean, cov, ref_mean, ref_sd))
    cell = {"posterior": posterior, "method": method, "w1": scores, "fit_s": times}
    if evals:
        cell["evals"] = evals
    if checks:
        cell["max_abs_z"] = max(c[0] for c in checks)
        cell["sd_ratio_min"] = min(c[1] for c in checks)
        cell["sd_ratio_max"] = max(c[2] for c in checks)
    if errors:
        cell["error"] = errors[0]
    return cell


def fmt(mean, sd):
    """A score as `mean ± sd` with 3 significant digits."""
    return f"{mean:.3g} ± {sd:.2g}"


def spread(values):
    """(mean, sd) of a list (sd 0 for a single value)."""
    if len(values) == 1:
        return values[0], 0.0
    return statistics.fmean(values), statistics.stdev(values)


def print_tables(cells, calib, methods):
    """The W1 table (markdown) and the marginal-check table."""
    by = {(c["posterior"], c["method"]): c for c in cells}
    names = sorted({c["posterior"] for c in cells})
    print("\n### W1 (100 draws, unconstrained scale): mean ± sd over seeds; fit time (median)\n")
    head = ["posterior", "floor", "Gaussian", "mean-field", "point"] + methods
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for p in names:
        c = calib[p]
        row = [p, fmt(c["floor"]["mean"], c["floor"]["sd"]), fmt(c["gauss"]["mean"], c["gauss"]["sd"]),
               fmt(c["meanfield"]["mean"], c["meanfield"]["sd"]), f"{c['point']:.3g}"]
        for m in methods:
            cell = by.get((p, m))
            if cell is None:
                row.append("—")
            elif cell.get("error") and not cell["w1"]:
                row.append(f"failed: {cell['error']}")
            else:
                mu, sd = spread(cell["w1"])
                t = statistics.median(cell["fit_s"])
                row.append(f"{fmt(mu, sd)} ({t:.2g} s)" + (" (partial)" if cell.get("error") else ""))
        print("| " + " | ".join(row) + " |")
    print("\n### Marginal checks of q: max |mean error| in reference sds; sd ratio q/reference (min–max)\n")
    print("| posterior | " + " | ".join(methods) + " |")
    print("|" + "---|" * (len(methods) + 1))
    for p in names:
        row = [p]
        for m in methods:
            cell = by.get((p, m))
            if cell is None or "max_abs_z" not in cell:
                row.append("—")
            else:
                row.append(f"{cell['max_abs_z']:.2f}; {cell['sd_ratio_min']:.2f}–{cell['sd_ratio_max']:.2f}")
        print("| " + " | ".join(row) + " |")
    if any(c.get("evals") for c in cells):
        print("\n### Evaluations per fit (median over seeds): gradients / log-density values\n")
        print("| posterior | " + " | ".join(methods) + " |")
        print("|" + "---|" * (len(methods) + 1))
        for p in names:
            row = [p]
            for m in methods:
                ev = (by.get((p, m)) or {}).get("evals")
                if not ev:
                    row.append("—")
                    continue
                g = statistics.median(e.get("gradient", 0) for e in ev)
                d = statistics.median(e.get("density", 0) for e in ev)
                row.append(f"{g:.0f} / {d:.0f}")
            print("| " + " | ".join(row) + " |")
    print_targets(by, names, calib)
    failed = [c for c in cells if c.get("error")]
    if failed:
        print("\nFailures:")
        for c in failed:
            print(f"  {c['posterior']} {c['method']}: {c['error']}")


def near_gaussian(posterior, calib):
    """Whether a perfect Gaussian scores within the floor's mean + 2 sd, and the largest
    |skewness| of a coordinate (reference.json)."""
    with open(os.path.join(PDB, posterior, "reference.json")) as f:
        skew = max(abs(x) for x in json.load(f)["skewness"])
    floor, gauss = calib["floor"], calib["gauss"]
    return gauss["mean"] <= floor["mean"] + 2 * floor["sd"], skew


def print_targets(by, names, calib):
    """Issue 17's target per posterior, for the better of laplace and mvi_lr (module doc)."""
    rows = []
    for p in names:
        cells = [by.get((p, m)) for m in ("laplace", "mvi_lr")]
        if any(c is None or "max_abs_z" not in c for c in cells):
            continue
        gauss = calib[p]["gauss"]
        bound = gauss["mean"] + 2 * gauss["sd"]
        near, skew = near_gaussian(p, calib[p])
        verdicts = []
        for m, c in zip(("laplace", "mvi_lr"), cells):
            marg = c["max_abs_z"] <= 0.3 and c["sd_ratio_min"] >= 0.7 and c["sd_ratio_max"] <= 1.3
            w = statistics.fmean(c["w1"]) <= bound
            verdicts.append((m, marg, w, marg and (w or not near)))
        best = next((m for m, *_, ok in verdicts if ok), None)
        flags = "; ".join(f"{m}: marginals {'ok' if a else 'no'}, W1 {'ok' if b else 'no'}" for m, a, b, _ in verdicts)
        rows.append(f"| {p} | {'yes' if near else 'no'} ({skew:.2f}) | {bound:.3g} | {flags} | {best or 'NOT MET'} |")
    if not rows:
        return
    print("\n### Target: the better of laplace / mvi_lr within 0.3 sd, sd ratio 0.7–1.3, W1 ≤ Gaussian + 2 sd where near-Gaussian\n")
    print("| posterior | near-Gaussian (max \\|skewness\\|) | Gaussian + 2 sd | checks | met by |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "posteriordb"),
                    help="the shared posteriordb folder with reference.csv, info.json, calibration.json")
    ap.add_argument("--posteriors", default="all", help="comma-separated folder names, or all")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated methods: mvi's, and NumPyro's " + ", ".join(PEERS))
    ap.add_argument("--peers", action="store_true", help="add NumPyro's three autoguides to --methods")
    ap.add_argument("--reps", type=int, default=5, help="seeds 1..reps per posterior x method")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per fit before giving up")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra --set options for every fit (e.g. samples=500)")
    ap.add_argument("--no-build", action="store_true", help="skip `cargo build --release`")
    ap.add_argument("--json", help="also write every score to this file")
    ap.add_argument("--tables-from", metavar="JSON",
                    help="print the tables of an earlier run's --json file instead of running")
    ap.add_argument("--reuse", help="take the cells of these methods from an earlier --json file "
                    "(e.g. slow peers) instead of fitting them again")
    args = ap.parse_args()

    if args.tables_from:
        with open(args.tables_from) as f:
            saved = json.load(f)
        print_tables(saved["cells"], calibration(args.shared), saved["methods"])
        return
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    names = posteriors() if args.posteriors == "all" else args.posteriors.split(",")
    methods = args.methods.split(",") + (PEERS if args.peers else [])

    reused = {}
    if args.reuse:
        with open(args.reuse) as f:
            reused = {(c["posterior"], c["method"]): c for c in json.load(f)["cells"]}
    cells = []
    for p in names:
        info, ref = coords.reference_draws(coords.shared_folder(args.shared, p))
        for m in methods:
            if (p, m) in reused:
                cells.append(reused[(p, m)])
                continue
            t0 = time.perf_counter()
            cell = run_cell(p, m, info, ref, args)
            cells.append(cell)
            status = cell.get("error") or fmt(*spread(cell["w1"]))
            print(f"{p:45s} {m:9s} {status}  [{time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"protocol": "W1, 100 draws, unconstrained scale, exact (ot.emd2)",
                       "reps": args.reps, "set": args.set, "methods": methods, "cells": cells}, f, indent=1)
    print_tables(cells, calibration(args.shared), methods)


def calibration(shared):
    """The W1 calibration of every posterior: the shared suite's and calibration_more.json."""
    with open(os.path.join(shared, "calibration.json")) as f:
        calib = json.load(f)["posteriors"]
    with open(os.path.join(PDB, "calibration_more.json")) as f:
        calib.update(json.load(f)["posteriors"])
    return calib


if __name__ == "__main__":
    main()
