#!/usr/bin/env python3
"""Two `mvi bench paper` stores of different protocols, paired split by split (issue 22:
does learning the RBF centres help, per data set?).

Usage: python3 benches/paper_protocols.py A_DIR B_DIR [--names A,B]

Reads A_DIR/results.jsonl and B_DIR/results.jsonl, keeps the (table, set, split) on which
the search and all five methods have a record (a fit or a failure) in both stores, and
prints per data set: the splits, each protocol's median test LPD per point of every method
(over its fits that did not fail), of the split's best method (the largest on that split
among the methods that did not fail: what the paper's "best" compares), the median test
error (%) of the best, the number of failed fits, the median wall seconds per split (the
search and the five methods summed), and the median of the paired difference of the best
(A − B) with the number of splits on which A is higher. Medians as `src/paper/stats.rs` (linear
interpolation between order statistics).
"""

import argparse
import json
import os

METHODS = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag"]


def median(v):
    v = sorted(v)
    if not v:
        return float("nan")
    h = (len(v) - 1) * 0.5
    lo = int(h)
    return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


def load(d):
    """{(table, set, split): {method: record}} of the splits on which the search and all
    five methods have a record (a fit or a failure)."""
    splits = {}
    with open(os.path.join(d, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            splits.setdefault((r["table"], r["set"], r["split"]), {})[r["method"]] = r
    return {k: recs for k, recs in splits.items() if "search" in recs and all(m in recs for m in METHODS)}


def ok(rec):
    return not rec.get("failed") and rec.get("lpd") is not None


def best(recs):
    """The split's best test LPD per point and that method's error (%), over the methods
    that did not fail."""
    m = max((m for m in METHODS if ok(recs[m])), key=lambda m: recs[m]["lpd"])
    return recs[m]["lpd"], 100.0 * recs[m]["error"]


def seconds(recs):
    return sum(r.get("seconds") or 0.0 for r in recs.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--names", default="A,B", help="the two protocols' names for the table")
    args = ap.parse_args()
    na, nb = args.names.split(",")
    a, b = load(args.a), load(args.b)
    both = sorted(set(a) & set(b))
    sets = []
    for key in both:
        if key[:2] not in sets:
            sets.append(key[:2])
    head = ("| table | set | splits | protocol | " + " | ".join(METHODS)
            + " | best | error % (best) | failed fits | s/split |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    summary = []
    for table, name in sets:
        keys = [k for k in both if k[:2] == (table, name)]
        for label, store in ((na, a), (nb, b)):
            cols = [f"{median([store[k][m]['lpd'] for k in keys if ok(store[k][m])]):.3f}" for m in METHODS]
            bl = median([best(store[k])[0] for k in keys])
            be = median([best(store[k])[1] for k in keys])
            failed = sum(not ok(store[k][m]) for k in keys for m in METHODS)
            s = median([seconds(store[k]) for k in keys])
            print(f"| {table} | {name} | {len(keys)} | {label} | " + " | ".join(cols)
                  + f" | {bl:.3f} | {be:.1f} | {failed} | {s:.0f} |")
        diffs = [best(a[k])[0] - best(b[k])[0] for k in keys]
        summary.append((table, name, len(keys), median(diffs), sum(d > 0 for d in diffs)))
    print()
    print(f"| table | set | splits | median of best LPD {na} − {nb} | splits where {na} is higher |")
    print("|---|---|---|---|---|")
    for table, name, n, d, wins in summary:
        print(f"| {table} | {name} | {n} | {d:+.3f} | {wins} of {n} |")


if __name__ == "__main__":
    main()
