#!/usr/bin/env python3
"""Table II against the exact posterior: mvi's methods beside NUTS on the Cauchy regression.

  benches/peers/.venv-peers/bin/python benches/cauchy_nuts_reference.py --sets 30
  benches/peers/.venv-peers/bin/python benches/cauchy_nuts_reference.py --sets 100 --no-nuts
  benches/peers/.venv-peers/bin/python benches/cauchy_nuts_reference.py --noise uniform

For each generated data set (examples/data/make_cauchy_rbf.py with seeds 1, 2, …; with the
default `--noise t3` the same construction as `mvi bench paper --tables II`, drawn by NumPy
instead of Rust's generator; `--noise uniform` is the peer notes' construction):
  1. `mvi run examples/cauchy_rbf.mvi --method M --json -q` for laplace, mvi_mu, mvi_eig,
     mvi_lr and vi_diag (S = 1000, 10⁴ test draws, as the example's `infer` block says);
  2. unless --no-nuts: NUTS (NumPyro, 2000 warm-up and 10⁴ kept draws) on the same model with
     α fixed at mvi_eig's fitted value, and the paper's test LPD (eq. 13: the log of the mean
     over draws of the whole held-out likelihood, per test point) of its draws.
Prints one line per set, then per method the median test LPD, its median gap to NUTS, and
in how many sets vi_diag falls below mvi_eig (the Table II clause of issue 4).

About 20 s per set with NUTS on 2 cores, 2 s without. Needs the peers' virtualenv
(benches/peers/setup.sh) and a release build (`cargo build --release`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MVI = os.path.join(ROOT, "target", "release", "mvi")
MODEL = os.path.join(ROOT, "examples", "cauchy_rbf.mvi")
MAKE = os.path.join(ROOT, "examples", "data", "make_cauchy_rbf.py")
METHODS = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag"]


def mvi_fit(data, method):
    """mvi's test LPD per point and fitted α for one method."""
    out = subprocess.run([MVI, "run", MODEL, "--data", data, "--method", method, "--json", "-q"],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    return j["predict"]["test_lpd_per_point"], j["theta"]["alpha"]


def nuts_lpd(data, alpha, seed):
    """Eq. 13 of the paper under 10⁴ NUTS draws of the posterior with α fixed."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS
    jax.config.update("jax_enable_x64", True)

    d = json.load(open(data))
    c, r, g = np.array(d["C"])[:, 0], d["r"], d["gamma"]

    def features(x):  # the stdlib's rbf_features: exp(−(x − c)²/(2r²)), then a bias column
        phi = np.exp(-(np.array(x)[:, 0][:, None] - c[None, :]) ** 2 / (2 * r * r))
        return np.hstack([phi, np.ones((phi.shape[0], 1))])

    phi, phi_test = features(d["X"]), features(d["X_test"])
    y, y_test = np.array(d["y"]), np.array(d["y_test"])

    def model():
        w = numpyro.sample("w", dist.Normal(0, 1 / np.sqrt(alpha)).expand([phi.shape[1]]))
        numpyro.sample("y", dist.Cauchy(jnp.asarray(phi) @ w, g), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=2000, num_samples=10000, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed))
    w = np.asarray(mcmc.get_samples()["w"])
    joint = np.asarray(dist.Cauchy(w @ phi_test.T, g).log_prob(y_test).sum(-1))
    return (np.logaddexp.reduce(joint) - np.log(len(joint))) / len(y_test)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", type=int, default=30, help="data sets, seeds 1..N (default 30)")
    p.add_argument("--no-nuts", action="store_true", help="mvi's methods only")
    p.add_argument("--noise", choices=["t3", "uniform"], default="t3",
                   help="the noise law of the data sets (default t3, as Table II)")
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.sets + 1):
            data = os.path.join(tmp, f"cauchy_{seed}.json")
            subprocess.run([sys.executable, MAKE, "--seed", str(seed), "--out", data, "--noise", a.noise],
                           check=True)
            fits = {m: mvi_fit(data, m) for m in METHODS}
            row = {m: v[0] for m, v in fits.items()}
            if not a.no_nuts:
                row["nuts"] = nuts_lpd(data, fits["mvi_eig"][1], seed)
            rows.append(row)
            print(seed, " ".join(f"{m} {v:.4f}" for m, v in row.items()), flush=True)
    print(f"\n{len(rows)} sets: median test LPD per point" + ("" if a.no_nuts else " (gap: paired median, method − NUTS)"))
    for m in METHODS + ([] if a.no_nuts else ["nuts"]):
        line = f"  {m:8s} {statistics.median(r[m] for r in rows):.4f}"
        if not a.no_nuts and m != "nuts":
            line += f"   gap {statistics.median(r[m] - r['nuts'] for r in rows):+.4f}"
        print(line)
    below = sum(r["vi_diag"] < r["mvi_eig"] for r in rows)
    print(f"vi_diag below mvi_eig in {below} of {len(rows)} sets")


if __name__ == "__main__":
    main()
