#!/usr/bin/env python3
"""How much real Stan code mvi runs: posteriordb's programs, unmodified, through `mvi`.

For every folder P of ../shared/posteriordb/programs (P/model.stan, P/data.json, P/info.json),
runs `mvi check P/model.stan --data P/data.json`, then `mvi run --method nuts` on the programs
that check, and compares the marginal means and sds with the reference draws of the posterior
that P/info.json names (in ../shared/posteriordb/<ref>/reference.csv or .../more/<ref>/):
a marginal matches when its mean is within 0.1 reference sd and its sd within 10 %. Prints a
markdown table (program, checks, runs, accuracy, the construct that stops it) and totals.

    python3 benches/stan_programs.py --check-only            # fast: translation and checking
    python3 benches/stan_programs.py --quick --timeout 300   # nuts with fewer draws
    python3 benches/stan_programs.py --only eight_schools    # programs whose name contains it
    python3 benches/stan_programs.py --with-reference        # only those with reference draws

Standard library only. Uses target/release/mvi unless --mvi says otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PDB = ROOT.parent / "shared" / "posteriordb"

MEAN_TOL_SD = 0.1
SD_TOL_REL = 0.10


def first_problem(stderr: str) -> str:
    """The diagnostic's message (miette's `× …` line), or the first non-empty line."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("×"):
            message = s.lstrip("× ").strip()
            # miette wraps a long message onto lines that start with `│`
            for more in lines[i + 1 :]:
                if not more.strip().startswith("│"):
                    break
                message += " " + more.strip().lstrip("│").strip()
            return message
    for line in stderr.splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"


def run(cmd: list[str], timeout: float) -> tuple[int | None, str, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout:.0f} s"


def read_columns(path: Path) -> dict[str, list[float]]:
    """Columns of a CSV file (CmdStan-style `#` comment lines skipped), by name."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    cols: dict[str, list[float]] = {h: [] for h in header}
    for r in body:
        for h, v in zip(header, r):
            try:
                cols[h].append(float(v))
            except ValueError:
                pass
    return cols


def mvi_name(stan_column: str) -> str:
    """`theta[1,2]` → `theta.1.2`, mvi's (and CmdStan's draws.csv) column name."""
    return re.sub(r"[\[\],]", ".", stan_column).rstrip(".").replace("..", ".")


def mean_sd(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    m = sum(xs) / n
    v = sum((x - m) ** 2 for x in xs) / max(n - 1, 1)
    return m, math.sqrt(v)


def compare(draws: dict[str, list[float]], reference: dict[str, list[float]]) -> str:
    """`ok n/n`, or how many marginals match and the worst one."""
    matched, total, worst = 0, 0, None
    for col, ref in reference.items():
        ours = draws.get(mvi_name(col))
        if not ref or ours is None or not ours:
            continue
        total += 1
        rm, rs = mean_sd(ref)
        om, osd = mean_sd(ours)
        mean_err = abs(om - rm) / rs if rs > 0 else abs(om - rm)
        sd_err = abs(osd - rs) / rs if rs > 0 else abs(osd - rs)
        if mean_err <= MEAN_TOL_SD and sd_err <= SD_TOL_REL:
            matched += 1
        else:
            score = max(mean_err / MEAN_TOL_SD, sd_err / SD_TOL_REL)
            if worst is None or score > worst[0]:
                worst = (score, col, mean_err, sd_err)
    if total == 0:
        return "no common columns"
    if worst is None:
        return f"ok {matched}/{total}"
    _, col, me, se = worst
    return f"{matched}/{total} (worst `{col}`: mean {me:.2f} sd, sd {100 * se:.0f} %)"


def reference_of(pdb: Path, program: Path) -> Path | None:
    try:
        info = json.loads((program / "info.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    ref = info.get("reference_posterior")
    if not ref:
        return None
    for base in (pdb, pdb / "more"):
        path = base / ref / "reference.csv"
        if path.exists():
            return path
    return None


def bench_one(mvi: str, pdb: Path, program: Path, args) -> dict:
    model, data = program / "model.stan", program / "data.json"
    row = {"program": program.name, "checks": False, "runs": None, "accuracy": "", "stops": ""}
    code, _, err = run([mvi, "check", str(model), "--data", str(data)], args.timeout)
    if code != 0:
        row["stops"] = first_problem(err)
        return row
    row["checks"] = True
    if args.check_only:
        return row
    with tempfile.TemporaryDirectory() as out:
        cmd = [mvi, "run", str(model), "--data", str(data), "--method", "nuts", "--quiet", "--output-dir", out]
        if args.quick:
            cmd += ["--set", "warmup=300", "--set", "draws=1000"]
        code, _, err = run(cmd, args.timeout)
        row["runs"] = code == 0
        if code != 0:
            row["stops"] = first_problem(err)
            return row
        ref = reference_of(pdb, program)
        if ref is None:
            row["accuracy"] = "no reference"
            return row
        draws = Path(out) / "draws.csv"
        row["accuracy"] = compare(read_columns(draws), read_columns(ref)) if draws.exists() else "no draws.csv"
    return row


def table(rows: list[dict], check_only: bool) -> str:
    def mark(v):
        return "–" if v is None else ("yes" if v else "no")

    lines = ["| program | checks | runs | accuracy | what stops it |", "|---|---|---|---|---|"]
    for r in rows:
        stops = r["stops"].replace("|", "\\|")
        lines.append(f"| {r['program']} | {mark(r['checks'])} | {mark(r['runs'])} | {r['accuracy']} | {stops} |")
    n = len(rows)
    checks = sum(r["checks"] for r in rows)
    runs = sum(bool(r["runs"]) for r in rows)
    accurate = sum(r["accuracy"].startswith("ok") for r in rows)
    with_ref = sum(r["accuracy"] not in ("", "no reference") for r in rows)
    lines.append("")
    lines.append(f"Totals: {checks}/{n} check" + ("" if check_only else f", {runs}/{n} run, {accurate}/{with_ref} with reference draws match"))
    return "\n".join(lines)


def stop_counts(rows: list[dict]) -> str:
    """How many programs each problem stops, most common first (numbers blanked)."""
    counts: dict[str, int] = {}
    for r in rows:
        if r["stops"]:
            key = re.sub(r"`[^`]*`", "`…`", r["stops"]) if "unknown" in r["stops"] else r["stops"]
            counts[key] = counts.get(key, 0) + 1
    lines = ["| programs | what stops them |", "|---|---|"]
    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {v} | {k.replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mvi", default=str(ROOT / "target" / "release" / "mvi"), help="the mvi binary")
    ap.add_argument("--posteriordb", default=str(DEFAULT_PDB), type=Path, help="posteriordb folder")
    ap.add_argument("--check-only", action="store_true", help="only `mvi check` (fast)")
    ap.add_argument("--quick", action="store_true", help="nuts with 300 warm-up iterations and 1000 draws")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per program and command")
    ap.add_argument("--only", default="", help="only programs whose folder name contains this")
    ap.add_argument("--with-reference", action="store_true", help="only programs with reference draws")
    ap.add_argument("--summary", action="store_true", help="also print how many programs each problem stops")
    args = ap.parse_args()
    if not os.path.exists(args.mvi):
        print(f"no mvi binary at {args.mvi}; build it with `cargo build --release` or pass --mvi", file=sys.stderr)
        return 2
    programs = sorted(p for p in (args.posteriordb / "programs").iterdir() if (p / "model.stan").exists())
    programs = [p for p in programs if args.only in p.name]
    if args.with_reference:
        programs = [p for p in programs if reference_of(args.posteriordb, p) is not None]
    rows = []
    for p in programs:
        rows.append(bench_one(args.mvi, args.posteriordb, p, args))
        print(f"{p.name}: {'checks' if rows[-1]['checks'] else rows[-1]['stops']}", file=sys.stderr)
    print(table(rows, args.check_only))
    if args.summary:
        print()
        print(stop_counts(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
