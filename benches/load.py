"""Loading N = 10⁶ × 10 numbers: `mvi check` on CSV, Parquet and .npy against pandas.

    cargo build --release
    python /work/shared/peers/make_synth.py --task logistic --N 1000000 --D 10 --seed 0 --out /tmp/big/l6
    python benches/load.py --dir /tmp/big/l6 [--cli target/release/mvi] [--repeats 3]

Needs numpy, pandas and pyarrow. The Parquet (Snappy, pandas' default) and .npy copies of
X.csv and y.csv are written beside them on the first run. Every load runs in a child process
of its own, timed from start to exit (so `mvi` includes reading the model, binding and
checking the data, and pandas includes `import pandas`); pandas's own reading time inside its
process is printed too, and is the figure the targets compare with: `mvi check` on the CSV no
slower than `pandas.read_csv` (C engine), peak RSS ≤ 2 × the numbers' bytes + 50 MB, and
Parquet ≥ 3× faster than the CSV. Peak RSS is the child's (`wait4`'s ru_maxrss). Runs of the
same case are alternated with the others so that load on the machine hits all alike; the
figure is the median.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODEL = """data {
  X: matrix[N, D]
  y: ints[N]
}
param {
  w: vector[D]
}
model {
  w ~ normal(0, 1)
  y ~ bernoulli_logit(X * w)
}
"""

PANDAS_CSV = """
import sys, time
t = time.perf_counter()
import pandas as pd
t0 = time.perf_counter()
X = pd.read_csv(sys.argv[1], header=None, engine="c").to_numpy()
y = pd.read_csv(sys.argv[2], header=None, engine="c").to_numpy()
print(time.perf_counter() - t0)
"""

PANDAS_PARQUET = """
import sys, time
import pandas as pd
t0 = time.perf_counter()
X = pd.read_parquet(sys.argv[1]).to_numpy()
print(time.perf_counter() - t0)
"""


def run(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB and stdout of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(args)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024, out


def prepare(d: Path) -> None:
    """Write table.parquet (x1..x10, y) and X.npy, y.npy beside the CSV files, once."""
    import numpy as np
    import pandas as pd

    if (d / "table.parquet").exists() and (d / "X.npy").exists():
        return
    X = pd.read_csv(d / "X.csv", header=None).to_numpy()
    y = pd.read_csv(d / "y.csv", header=None).to_numpy()[:, 0].astype(np.int64)
    table = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(X.shape[1])])
    table["y"] = y
    table.to_parquet(d / "table.parquet")
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/big/l6"))
    ap.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "mvi")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    d = a.dir
    if a.prepare_only:
        prepare(d)
        return
    # in a child: a child forked from a parent that read the CSV would start with its RSS
    subprocess.run([sys.executable, __file__, "--dir", str(d), "--prepare-only"], check=True)
    model = d / "load_logit.mvi"
    model.write_text(MODEL)
    import numpy as np

    n, k = np.load(d / "X.npy", mmap_mode="r").shape
    del np
    cols = ",".join(f"x{j + 1}" for j in range(k))
    mvi = [str(a.cli), "check", str(model)]
    cases = {
        "mvi check, CSV": mvi + ["--data", f"X={d / 'X.csv'}", "--data", f"y={d / 'y.csv'}"],
        "mvi check, Parquet": mvi + ["--data", f"X={d / 'table.parquet'}:{cols}", "--data", f"y={d / 'table.parquet'}:y"],
        "mvi check, .npy": mvi + ["--data", f"X={d / 'X.npy'}", "--data", f"y={d / 'y.npy'}"],
        "pandas.read_csv (C engine)": [sys.executable, "-c", PANDAS_CSV, str(d / "X.csv"), str(d / "y.csv")],
        "pandas.read_parquet": [sys.executable, "-c", PANDAS_PARQUET, str(d / "table.parquet")],
    }
    runs: dict[str, list[tuple[float, float, str]]] = {c: [] for c in cases}
    for _ in range(a.repeats):
        for c, args in cases.items():
            runs[c].append(run(args))
    numbers_mb = n * (k + 1) * 8 / 1e6
    print(f"N = {n}, D = {k}: {numbers_mb:.0f} MB of numbers (X and y as f64); median of {a.repeats}")
    print(f"{'case':32} {'wall s':>8} {'read s':>8} {'peak RSS MB':>12}")
    med = {}
    for c, rs in runs.items():
        wall = statistics.median(r[0] for r in rs)
        rss = statistics.median(r[1] for r in rs)
        inner = [float(r[2].split()[0]) for r in rs if r[2].strip() and c.startswith("pandas")]
        read = statistics.median(inner) if inner else wall
        med[c] = (wall, read, rss)
        print(f"{c:32} {wall:8.2f} {read:8.2f} {rss:12.0f}")
    csv_wall, _, csv_rss = med["mvi check, CSV"]
    pandas_read = med["pandas.read_csv (C engine)"][1]
    print(f"mvi CSV / pandas.read_csv (its read time): {csv_wall / pandas_read:.2f} (target ≤ 1)")
    print(f"mvi CSV peak RSS / (2 × numbers + 50 MB): {csv_rss / (2 * numbers_mb + 50):.2f} (target ≤ 1)")
    print(f"mvi CSV / mvi Parquet: {csv_wall / med['mvi check, Parquet'][0]:.2f} (target ≥ 3)")
    print(f"mvi CSV / mvi .npy: {csv_wall / med['mvi check, .npy'][0]:.2f}")


if __name__ == "__main__":
    main()
