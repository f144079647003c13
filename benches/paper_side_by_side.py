#!/usr/bin/env python3
"""The "vs paper" column of docs/results.md for Tables V/VI from a `mvi bench paper` store.

Usage: python3 benches/paper_side_by_side.py DIR [DIR ...]

Reads DIR/results.jsonl (several stores of the same protocol are merged; a record found in
more than one must be identical), keeps the splits on which all five methods finished, and
prints per set: the splits, our best median and method, the paper's best (per point: the
paper's Table V cells are totals over N_test), the difference and its mark, for the LPD
(Table V) and the error (Table VI), then the counts. Marks as in docs/results.md "The
paper's numbers": ✓ at or above the paper's best (LPD; at or below for the error), ≈ level
(below the cells' precision, 0.0005 nats or 0.05 %, or below two standard errors of a
difference of two medians, 2·√2·1.2533·σ/√n with σ = half-IQR/0.6745 of our best method;
never with 1 split), ✗ below. Medians and quantiles as `src/paper/stats.rs` (linear
interpolation between order statistics).
"""

import json
import math
import sys

METHODS = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag"]

# The paper's Table V (median test LPD summed over the test set) with N_test, and Table VI
# (median test error, %), from ../shared/paper/tables.md, in METHODS order.
PAPER_V = {
    "ecoli": (100, [-50.32, -48.80, -49.31, -48.52, -51.39]),
    "crabs": (60, [-64.59, -64.11, -64.28, -64.10, -68.92]),
    "iris": (45, [-9.06, -7.53, -6.42, -7.46, -8.17]),
    "soybean": (14, [-4.10, -2.35, -0.66, -2.36, -1.67]),
    "glass": (64, [-61.35, -60.39, -59.79, -60.44, -76.26]),
    "vehicle": (293, [-159.783, -158.39, -158.60, -159.15, -174.725]),
    "balance": (187, [-23.5734, -22.7321, -23.2197, -23.078, -31.587]),
}
PAPER_VI = {
    "ecoli": [17.22, 16.75, 17.23, 16.73, 17.87],
    "crabs": [55.75, 54.98, 55.10, 55.00, 58.96],
    "iris": [9.24, 7.57, 7.86, 7.58, 9.76],
    "soybean": [13.12, 4.83, 3.85, 4.86, 9.33],
    "glass": [42.93, 41.14, 39.79, 41.14, 53.01],
    "vehicle": [32.60, 32.15, 32.34, 32.22, 34.61],
    "balance": [6.56, 6.07, 6.27, 6.25, 8.06],
}


def quantile(v, p):
    v = sorted(v)
    h = (len(v) - 1) * p
    lo, hi = math.floor(h), math.ceil(h)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def load(dirs):
    recs = {}
    for d in dirs:
        with open(f"{d}/results.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["table"] != "V" or r["method"] not in METHODS or r.get("failed"):
                    continue
                key = (r["set"], r["split"], r["method"])
                if key in recs and recs[key]["lpd"] != r["lpd"]:
                    sys.exit(f"{key} differs between stores")
                recs[key] = r
    return recs


def main():
    recs = load(sys.argv[1:])
    counts = {"lpd": {"✓": [], "≈": [], "✗": []}, "error": {"✓": [], "≈": [], "✗": []}}
    print("| set | splits | metric | our best (method) | paper's best (method) | difference | mark |")
    print("|---|---|---|---|---|---|---|")
    for s, (ntest, totals) in PAPER_V.items():
        splits = sorted({k[1] for k in recs if k[0] == s})
        done = [i for i in splits if all((s, i, m) in recs for m in METHODS)]
        if not done:
            continue
        n = len(done)
        for metric, paper, higher, prec, scale in [
            ("lpd", [t / ntest for t in totals], True, 0.0005, 1.0),
            ("error", PAPER_VI[s], False, 0.05, 100.0),
        ]:
            med = {}
            for m in METHODS:
                vals = [recs[(s, i, m)][metric] * scale for i in done]
                med[m] = (quantile(vals, 0.5), 0.5 * (quantile(vals, 0.75) - quantile(vals, 0.25)))
            ours = max(METHODS, key=lambda m: med[m][0] if higher else -med[m][0])
            pbest = max(range(5), key=lambda j: paper[j] if higher else -paper[j])
            diff = (med[ours][0] - paper[pbest]) if higher else (paper[pbest] - med[ours][0])
            sigma = med[ours][1] / 0.6745
            noise = 2 * math.sqrt(2) * 1.2533 * sigma / math.sqrt(n) if n > 1 else 0.0
            if diff >= 0:
                mark = "✓"
            elif -diff < prec or -diff < noise:
                mark = "≈"
            else:
                mark = "✗"
            counts[metric][mark].append(s)
            fmt = "{:.3f}" if metric == "lpd" else "{:.1f}"
            print(
                f"| {s} | {n} | {'LPD' if metric == 'lpd' else 'error %'} | "
                f"{fmt.format(med[ours][0])} ± {fmt.format(med[ours][1])} ({ours}) | "
                f"{fmt.format(paper[pbest])} ({METHODS[pbest]}) | {diff:+.3f} | {mark} |"
            )
    for metric, c in counts.items():
        print(
            f"\n{metric}: ✓ {len(c['✓'])}, ≈ {len(c['≈'])} ({', '.join(c['≈']) or 'none'}), "
            f"✗ {len(c['✗'])} ({', '.join(c['✗']) or 'none'})"
        )


if __name__ == "__main__":
    main()
