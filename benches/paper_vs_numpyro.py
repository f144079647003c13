#!/usr/bin/env python3
"""Issue 7's speed comparison: the whole `mvi run` process against NumPyro on the paper's
three model families, measured in one run.

  python3 benches/paper_vs_numpyro.py                  # build, set up the peers, run, print the table
  python3 benches/paper_vs_numpyro.py --no-build --repeat 3 --json benches/peers/out/paper_vs_numpyro.json

Problems (the same models and data on both sides, see benches/peers/README.md):
  logistic  banana_rbf:   examples/logistic_rbf_banana.mvi, banana generated split 0 with its
                          30 k-means RBF centres (N = 400, D = 31, 1000 test rows);
  softmax   softmax_iris: examples/softmax_iris.mvi, iris 70/30 (N = 105, D = 15);
  cauchy    cauchy_rbf:   examples/cauchy_rbf.mvi, one generated set (N = 50, D = 16, 1000 test points).

Pairs: mvi laplace / NumPyro AutoLaplaceApproximation, mvi_lr (rank 1) / AutoLowRankMultivariateNormal,
vi_diag / AutoDiagonalNormal. Like with like: NumPyro fixes the hyperparameters at the mvi models'
initial values, so mvi runs with `--set learn_hyper=false`.

Timing: NumPyro `numpyro_fit.py --problem P --method M` once per pair in a fresh process (cold = the
first fit including JIT, warm = the same fit again, both as measured inside the process; evaluation
not timed in). mvi: `mvi run MODEL --data DATA --method M --set learn_hyper=false --json -q`, timed
from process start to exit (parsing, fitting, the fresh-draw ELBO and predict over 10⁴ draws all
included), --repeat times, the minimum reported (the machine is shared; the minimum is the least
disturbed run), with the CPU time (user + sys) of that run.

Printed: times, ratios NumPyro cold / mvi and warm / mvi, and the fresh-draw ELBO and test LPD per
point (the paper's eq. 13 / N_test) side by side. Only the standard library is used here; NumPyro
runs in benches/peers/.venv-peers (created by benches/peers/setup.sh when missing).
"""
import argparse
import json
import subprocess
import sys
import time

# The shared harness (paths, pairs, the NumPyro child process) of issue 4's benchmark.
from run_vs_numpyro import MVI, PAIRS, ROOT, children_cpu, numpyro, prepare, write_json

PROBLEMS = {
    "banana_rbf": ("logistic", "examples/logistic_rbf_banana.mvi", "examples/data/logistic_rbf_banana.json"),
    "softmax_iris": ("softmax", "examples/softmax_iris.mvi", "examples/data/softmax_iris.json"),
    "cauchy_rbf": ("cauchy", "examples/cauchy_rbf.mvi", "examples/data/cauchy_rbf.json"),
}


def mvi(problem, method, repeat):
    """`mvi run` `repeat` times: the JSON result of the fastest run with its wall and CPU times."""
    _, model, data = PROBLEMS[problem]
    cmd = [MVI, "run", model, "--data", data, "--method", method, "--set", "learn_hyper=false",
           "--json", "-q"]
    best = None
    for _ in range(repeat):
        c0 = children_cpu()
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t
        cpu = children_cpu() - c0
        if done.returncode != 0:
            sys.exit(f"mvi run failed on {problem}/{method}:\n{done.stderr}")
        if best is None or wall < best["process_s"]:
            best = json.loads(done.stdout)
            best["process_s"], best["cpu_s"] = wall, cpu
    return best


def table(rows):
    head = ("| problem | mvi method | mvi process s (CPU s) | NumPyro peer | NumPyro cold s | warm s "
            "| cold / mvi | warm / mvi | fresh ELBO mvi | fresh ELBO NumPyro | test LPD/pt mvi "
            "| test LPD/pt NumPyro |")
    lines = [head, "|" + "---|" * 12]
    for problem, m, n in rows:
        e = m["elbo_fresh"]
        lpd_m = m["predict"]["test_lpd_per_point"] if m.get("predict") else float("nan")
        lpd_n = n["test"]["lpd_eq13_per_point"]
        lines.append(
            f"| {PROBLEMS[problem][0]} ({problem}) | {m['method']} | {m['process_s']:.3f} ({m['cpu_s']:.3f}) "
            f"| {n['method']} | {n['cold_s']:.2f} | {n['warm_s']:.3f} "
            f"| {n['cold_s'] / m['process_s']:.1f}× | {n['warm_s'] / m['process_s']:.2f}× "
            f"| {e['value']:.2f} ± {e['se']:.2f} | {n['elbo_fresh']:.2f} ± {n['elbo_se']:.2f} "
            f"| {lpd_m:.4f} | {lpd_n:.4f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-build", action="store_true", help="use target/release/mvi as it is")
    p.add_argument("--repeat", type=int, default=3, help="mvi runs per pair (the fastest is reported)")
    p.add_argument("--json", help="also write every result to this file")
    a = p.parse_args()
    prepare(a.no_build)
    rows = []
    for problem in PROBLEMS:
        for mvi_method, peer in PAIRS:
            n = numpyro(problem, peer)
            m = mvi(problem, mvi_method, a.repeat)
            print(f"{problem} {mvi_method}: mvi {m['process_s']:.3f} s, NumPyro {peer} cold "
                  f"{n['cold_s']:.2f} s warm {n['warm_s']:.3f} s", file=sys.stderr)
            rows.append((problem, m, n))
    print(table(rows))
    print(f"\nmvi: whole process, `--set learn_hyper=false`, fastest of {a.repeat} runs; "
          "NumPyro: fit times inside a fresh process (cold includes JIT); ratios are NumPyro / mvi.")
    if a.json:
        write_json(a.json, rows)


if __name__ == "__main__":
    main()
