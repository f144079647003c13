"""What the Python call adds to a fit: `mvi run` against `mvi.Model.fit` on the banana example.

    cargo build --release && pip install ./python
    python benches/python_overhead.py [--repeats 7] [--method mvi_lr] [--cli target/release/mvi]

The CLI is timed as a user runs it: process start, reading the model and data files, the
fit, printing the summary (`--quiet`, output to /dev/null). The Python side is timed from
reading the JSON data to a finished `Fit` (data conversion, the fit with the GIL released,
the NumPy arrays). Runs alternate CLI / Python so that load on the machine hits both alike;
the figure is the ratio of the medians, from one run of this script (target ≤ 1.05).
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import mvi

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "logistic_rbf_banana.mvi"
DATA = ROOT / "examples" / "data" / "logistic_rbf_banana.json"


def time_cli(cli: Path, method: str | None) -> float:
    args = [str(cli), "run", str(MODEL), "--data", str(DATA), "--quiet"]
    if method:
        args += ["--method", method]
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_python(method: str | None) -> tuple[float, mvi.Fit]:
    start = time.perf_counter()
    with open(DATA, encoding="utf-8") as f:
        data = json.load(f)
    fit = mvi.Model.from_file(MODEL).fit(data=data, method=method)
    return time.perf_counter() - start, fit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--method", default=None, help="default: the model's (mvi_lr)")
    ap.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "mvi")
    a = ap.parse_args()
    if not a.cli.exists():
        print(f"{a.cli} is missing: run `cargo build --release` first", file=sys.stderr)
        return 2
    # warm up both (page cache, lazy imports)
    time_cli(a.cli, a.method)
    time_python(a.method)
    cli, py = [], []
    for _ in range(a.repeats):
        cli.append(time_cli(a.cli, a.method))
        t, fit = time_python(a.method)
        py.append(t)
    c, p = statistics.median(cli), statistics.median(py)
    print(f"banana, method {fit.method}, {a.repeats} runs each (alternating)")
    print(f"CLI    `mvi run`      median {c:.3f} s  (min {min(cli):.3f}, max {max(cli):.3f})")
    print(f"Python Model.fit      median {p:.3f} s  (min {min(py):.3f}, max {max(py):.3f})")
    print(f"ratio Python / CLI    {p / c:.3f}  (target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
