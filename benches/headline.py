#!/usr/bin/env python3
"""Issue 19's headline table: per posterior, the evaluations, wall time and W1 of laplace,
mvi_lr, pathfinder and nuts, and whether the claim holds.

  PY=benches/peers/.venv-peers/bin/python
  $PY benches/posteriordb_w1.py --no-build --reps 3 --methods laplace,mvi_lr,pathfinder \\
      --json benches/peers/out/headline_w1.json
  $PY benches/nuts_posteriordb.py --json benches/peers/out/nuts_posteriordb.json
  $PY benches/headline.py --w1 benches/peers/out/headline_w1.json \\
      --nuts benches/peers/out/nuts_posteriordb.json

Inputs are the two benches' --json files: posteriordb_w1.py's cells (W1 of 100 draws per
seed, fit.json's wall_time_s and evals per seed) and nuts_posteriordb.py's rows (W1 of 100
draws thinned from 4 × 1000, the sampler's wall time, its gradients). Per cell the table
shows gradients (laplace: + Hessians), the median wall time of the fit (the method only,
not loading and writing) and the mean W1 over seeds.

The claim to check (issue 19): "the best of laplace / mvi_lr reaches Pathfinder's W1 or
better with no more gradient evaluations on ≥ 80 % of posteriors, and NUTS-level accuracy
at ≥ 10× less wall time than NUTS". Checked per posterior as
  A. some m in {laplace, mvi_lr} has mean W1 ≤ pathfinder's and gradients ≤ pathfinder's
     (A' drops the gradient condition);
  B. some m in {laplace, mvi_lr} has W1 ≤ nuts's W1 + the floor's sd (NUTS-level: within
     the spread of a perfect sampler's 100 draws) and wall time ≤ nuts's / 10.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from posteriordb_w1 import calibration  # noqa: E402

FAST = ("laplace", "mvi_lr")


def summarise_cells(cells):
    """{(posterior, method): (mean W1, median seconds, median gradients, median Hessians)}."""
    out = {}
    for c in cells:
        if not c.get("w1"):
            continue
        ev = c.get("evals") or []
        grads = statistics.median(e.get("gradient", 0) for e in ev) if ev else None
        hess = statistics.median(e.get("hessian", 0) for e in ev) if ev else None
        out[(c["posterior"], c["method"])] = (statistics.fmean(c["w1"]), statistics.median(c["fit_s"]),
                                               grads, hess)
    return out


def summarise_nuts(rows):
    """{(posterior, "nuts"): (mean W1, median seconds, median gradients, 0)} and R̂."""
    by = {}
    for r in rows:
        if "w1" in r:
            by.setdefault(r["posterior"], []).append(r)
    out, rhat = {}, {}
    for p, rs in by.items():
        out[(p, "nuts")] = (statistics.fmean(r["w1"] for r in rs), statistics.median(r["mvi_s"] for r in rs),
                            statistics.median(r["gradients"] for r in rs), 0)
        rhat[p] = max(r["max_rhat"] for r in rs)
    return out, rhat


def cell(v):
    if v is None:
        return "—"
    w, t, g, h = v
    ev = "?" if g is None else f"{g:.0f}" + (f" + {h:.0f} H" if h else "")
    return f"{ev} · {t:.3g} s · **{w:.3g}**"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared", "posteriordb"))
    ap.add_argument("--w1", required=True, help="posteriordb_w1.py --json with laplace, mvi_lr, pathfinder")
    ap.add_argument("--nuts", required=True, help="nuts_posteriordb.py --json")
    args = ap.parse_args()
    with open(args.w1) as f:
        fits = summarise_cells(json.load(f)["cells"])
    with open(args.nuts) as f:
        nuts, rhat = summarise_nuts(json.load(f))
    fits.update(nuts)
    calib = calibration(args.shared)
    names = sorted({p for p, _ in fits})
    methods = ["laplace", "mvi_lr", "pathfinder", "nuts"]
    print("Each cell: gradients (+ Hessians) · wall time of the fit · **W1** (mean over seeds)\n")
    print("| posterior | floor ± sd | " + " | ".join(methods) + " | A | A' | B |")
    print("|" + "---|" * (len(methods) + 5))
    tally = {"A": [0, 0], "A'": [0, 0], "B": [0, 0]}
    for p in names:
        fl = calib[p]["floor"]
        row = [p, f"{fl['mean']:.3g} ± {fl['sd']:.2g}"] + [cell(fits.get((p, m))) for m in methods]
        pf, nu = fits.get((p, "pathfinder")), fits.get((p, "nuts"))
        fast = [fits[(p, m)] for m in FAST if (p, m) in fits]
        marks = []
        if pf and fast:
            a = any(w <= pf[0] and g is not None and pf[2] is not None and g <= pf[2] for w, _, g, _ in fast)
            a2 = any(w <= pf[0] for w, *_ in fast)
            for k, ok in (("A", a), ("A'", a2)):
                tally[k][0] += ok
                tally[k][1] += 1
            marks += ["yes" if a else "no", "yes" if a2 else "no"]
        else:
            marks += ["—", "—"]
        if nu and fast:
            b = any(w <= nu[0] + fl["sd"] and t * 10 <= nu[1] for w, t, _, _ in fast)
            tally["B"][0] += b
            tally["B"][1] += 1
            marks.append("yes" if b else "no")
        else:
            marks.append("—")
        print("| " + " | ".join(row + marks) + " |")
    print()
    for k, (yes, n) in tally.items():
        if n:
            print(f"{k}: {yes} of {n} posteriors ({100 * yes / n:.0f} %)")
    if rhat:
        worst = max(rhat, key=rhat.get)
        print(f"nuts: largest R̂ {rhat[worst]:.3f} ({worst})")


if __name__ == "__main__":
    main()
