#!/usr/bin/env python3
"""Issue 4's benchmark: the whole `mvi run` process against NumPyro, measured in one run.

  python3 benches/run_vs_numpyro.py                 # build, set up the peers, run, print the table
  python3 benches/run_vs_numpyro.py --repeat 5 --json benches/peers/out/run_vs_numpyro.json

What it does, in order:
  1. `cargo build --release` (skip with --no-build);
  2. `benches/peers/setup.sh` when benches/peers/.venv-peers/ does not exist yet;
  3. NumPyro: `numpyro_fit.py --problem P --method M` once per pair, each in a fresh process
     (cold = first fit including JIT, warm = the same fit again, process = the whole child
     process, imports and evaluation included); this also writes the synthetic data set;
  4. mvi: `mvi run MODEL --data DATA --method M --set learn_hyper=false --json -q`, --repeat
     times per pair, timed from process start to exit (the summary includes predict over
     10⁴ draws); the median is reported, with the CPU time (user + sys) of the same runs;
  5. one table: times, the ratios NumPyro / mvi, and the fresh-draw ELBOs side by side.

Like with like: NumPyro's models fix the hyperparameters at the mvi models' initial values
(α = 1, r = 1 on banana), so mvi runs with `--set learn_hyper=false`. NumPyro's low-rank
guide has rank round(√D) (6 on banana, 4 on logistic_synth) and is fitted by 10⁴ Adam steps;
mvi_lr has rank 1 on top of the Laplace Cholesky factor (a full-covariance start).

Pairs: laplace ↔ AutoLaplaceApproximation, mvi_lr ↔ AutoLowRankMultivariateNormal,
vi_diag ↔ AutoDiagonalNormal (issue 7: every VI method ≥ 2× faster than NumPyro warm).
`--pairs laplace,vi_diag` restricts the run to some mvi methods.

Problems: banana_rbf (examples/logistic_rbf_banana.mvi, N = 400, D = 31, S = 1000) and
logistic_synth (benches/peers/models/logistic.mvi, N = 1000, D = 20). Only the standard
library is used here; NumPyro runs in its own virtualenv.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(HERE, "peers")
VENV_PY = os.path.join(PEERS, ".venv-peers", "bin", "python")
MVI = os.path.join(ROOT, "target", "release", "mvi")

PROBLEMS = {
    "banana_rbf": ("examples/logistic_rbf_banana.mvi", "examples/data/logistic_rbf_banana.json"),
    "logistic_synth": ("benches/peers/models/logistic.mvi", "benches/peers/out/data/logistic_synth.json"),
}
# mvi method -> NumPyro peer method
PAIRS = [("laplace", "laplace"), ("mvi_lr", "lowrank"), ("vi_diag", "diag")]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def numpyro(problem, method):
    """One NumPyro fit in a fresh process: its JSON result with the process wall time."""
    t = time.perf_counter()
    done = subprocess.run([VENV_PY, os.path.join(PEERS, "numpyro_fit.py"), "--problem", problem,
                           "--method", method], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"numpyro_fit.py failed on {problem}/{method}:\n{done.stderr}")
    r = json.loads(done.stdout)[0]
    r["process_s"] = wall
    return r


def mvi(problem, method, repeat):
    """`mvi run` `repeat` times: the last JSON result with the median and minimum wall times,
    the CPU time of the runs (median), and one more run's MVI_TIMING breakdown."""
    model, data = PROBLEMS[problem]
    cmd = [MVI, "run", model, "--data", data, "--method", method, "--set", "learn_hyper=false",
           "--json", "-q"]
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c0 = children_cpu()
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        walls.append(time.perf_counter() - t)
        cpus.append(children_cpu() - c0)
        if done.returncode != 0:
            sys.exit(f"mvi run failed on {problem}/{method}:\n{done.stderr}")
        out = json.loads(done.stdout)
    out["process_s"] = statistics.median(walls)
    out["process_min_s"] = min(walls)
    out["cpu_s"] = statistics.median(cpus)
    out["phases"] = phases(cmd)
    return out


def phases(cmd):
    """One run with MVI_TIMING=1: {phase: {"ms": …, "calls": …, "count": …}}."""
    env = dict(os.environ, MVI_TIMING="1")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    rows = {}
    for line in done.stderr.splitlines()[1:]:
        parts = line.rsplit(None, 4)
        if len(parts) == 5:
            name, ms, calls, _, count = parts
            try:
                rows[name.strip()] = {"ms": float(ms), "calls": int(calls), "count": int(count)}
            except ValueError:
                pass
    return rows


def evaluations(m):
    """Objective evaluations of a run: ELBO evaluations, else log p̃ gradients of the mode."""
    p = m.get("phases", {})
    for key in ("elbo: evaluations", "laplace: log p̃ gradients"):
        if key in p:
            return p[key]["count"]
    return 0


def table(rows):
    head = ("| problem | mvi method | evals | mvi process s median / min (CPU s) | NumPyro peer "
            "| NumPyro cold s | warm s | process s | cold / mvi | warm / mvi "
            "| mvi fresh ELBO ± se | NumPyro fresh ELBO ± se |")
    lines = [head, "|" + "---|" * 12]
    for problem, m, n in rows:
        e = m["elbo_fresh"]
        lines.append(
            f"| {problem} | {m['method']} | {evaluations(m)} "
            f"| {m['process_s']:.3f} / {m['process_min_s']:.3f} ({m['cpu_s']:.3f}) | {n['method']} "
            f"| {n['cold_s']:.2f} | {n['warm_s']:.3f} | {n['process_s']:.2f} "
            f"| {n['cold_s'] / m['process_s']:.1f}× | {n['warm_s'] / m['process_s']:.2f}× "
            f"| {e['value']:.2f} ± {e['se']:.3f} | {n['elbo_fresh']:.2f} ± {n['elbo_se']:.3f} |")
    return "\n".join(lines)


def prepare(no_build):
    """Build mvi in release (unless `no_build`) and set up the NumPyro venv if missing."""
    if not no_build:
        subprocess.run(["cargo", "build", "--release", "--bin", "mvi"], cwd=ROOT, check=True)
    if not os.path.exists(VENV_PY):
        subprocess.run([os.path.join(PEERS, "setup.sh")], check=True)


def write_json(path, rows):
    """Every (problem, mvi result, NumPyro result) row as a JSON list at `path`."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump([{"problem": pr, "mvi": m, "numpyro": n} for pr, m, n in rows], f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-build", action="store_true", help="use target/release/mvi as it is")
    p.add_argument("--repeat", type=int, default=3, help="mvi runs per pair (median reported)")
    p.add_argument("--json", help="also write every result to this file")
    p.add_argument("--pairs", help="comma-separated mvi methods to run (default: all pairs)")
    p.add_argument("--problems", help="comma-separated problems (default: all)")
    a = p.parse_args()
    pairs = [pr for pr in PAIRS if not a.pairs or pr[0] in a.pairs.split(",")]
    problems = [pr for pr in PROBLEMS if not a.problems or pr in a.problems.split(",")]
    prepare(a.no_build)
    rows = []
    for problem in problems:
        for mvi_method, peer in pairs:
            n = numpyro(problem, peer)  # first: it also writes the synthetic data
            m = mvi(problem, mvi_method, a.repeat)
            print(f"{problem} {mvi_method}: mvi {m['process_s']:.3f} s, NumPyro {peer} cold "
                  f"{n['cold_s']:.2f} s warm {n['warm_s']:.3f} s", file=sys.stderr)
            rows.append((problem, m, n))
    print(table(rows))
    print("\nmvi: whole process, `--set learn_hyper=false` (NumPyro fixes the hyperparameters), "
          "median of", a.repeat, "runs; ratios are NumPyro time / mvi median process time; evals = ELBO "
          "evaluations (VI) or log p̃ gradients of the mode search (laplace).")
    if a.json:
        write_json(a.json, rows)


if __name__ == "__main__":
    main()
