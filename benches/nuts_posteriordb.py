#!/usr/bin/env python3
"""mvi's `nuts` on the posteriordb suite: W1 to the reference, R̂, and wall time beside
NumPyro's NUTS (warm) and nutpie (PyMC models).

  benches/peers/setup.sh                                        # once: the benches' venv
  benches/peers/.venv-peers/bin/pip install nutpie pymc         # for --nutpie
  PY=benches/peers/.venv-peers/bin/python
  $PY benches/nuts_posteriordb.py                               # all 12, mvi + NumPyro
  $PY benches/nuts_posteriordb.py --posteriors arK-arK,sblri-blr --no-numpyro
  $PY benches/nuts_posteriordb.py --nutpie sblri-blr,arK-arK,kidiq-kidscore_momiq
  $PY benches/nuts_posteriordb.py --json benches/peers/out/nuts_posteriordb.json

For each posterior (benches/posteriordb/<posterior>/model.mvi with its data.json) and seed
s = 1..--reps this runs

  mvi run model.mvi --data data.json --method nuts --set seed=s --output-dir TMP --quiet

with the defaults (4 chains, 1000 warm-up and 1000 draws each), reads fit.json (wall time
of the sampler, largest R̂, divergences, gradient evaluations) and draws.csv, takes 100
evenly spaced draws of the 4000 on Stan's unconstrained scale and computes W1 against the
10 000 reference draws exactly (the Pathfinder paper's protocol, as
benches/posteriordb_w1.py; the floor is the shared calibration's: 100 reference draws
against the rest).

NumPyro's NUTS (`--no-numpyro` to skip) runs the same posterior written as in
benches/peers/numpyro_posteriordb.py with the same chains, warm-up and draws
(chain_method "parallel" over 4 host devices, NumPyro's default init_to_uniform(2) as
Stan's), twice in this process: the second run is the warm time (JIT compilation
excluded); the table shows it beside mvi's sampler time.

nutpie (`--nutpie P1,P2,...`) samples PyMC versions of the linear-regression posteriors
(blr, kidiq, earnings, mesquite, nes; the design built as in benches/posteriordb's
models) with the same chains, warm-up and draws; its time is the sampling only (the model
compiled first, numba backend), also run twice with the warm time shown.

Timings on a shared, loaded machine are noisy: the script prints the load average.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PDB = os.path.join(HERE, "posteriordb")
MVI = os.path.join(ROOT, "target", "release", "mvi")
sys.path.insert(0, PDB)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
import coords  # noqa: E402
from posteriordb_w1 import posteriors, w1  # noqa: E402

CHAINS, WARMUP, DRAWS, N_W1 = 4, 1000, 1000, 100


def run_mvi(posterior, seed, timeout, mvi=MVI):
    """One `mvi run --method nuts`: a dict with fit.json numbers and the unconstrained draws."""
    folder = os.path.join(PDB, posterior)
    with tempfile.TemporaryDirectory(prefix="pdb-nuts-") as out:
        cmd = [mvi, "run", os.path.join(folder, "model.mvi"), "--data", os.path.join(folder, "data.json"),
               "--method", "nuts", "--set", f"seed={seed}", "--output-dir", out, "--quiet", "--json"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return {"error": next((ln for ln in proc.stderr.splitlines() if ln.strip()), "?")}
        with open(os.path.join(out, "fit.json")) as f:
            fit = json.load(f)
        cols = coords.read_columns(os.path.join(out, "draws.csv"))
    return {"fit": fit, "cols": cols}


def thin(draws, n):
    """n evenly spaced rows (the draws are chain after chain)."""
    idx = (np.arange(n) * draws.shape[0]) // n
    return draws[idx]


def numpyro_nuts(posterior, seed):
    """NumPyro NUTS, same chains/warm-up/draws: (warm seconds, cold seconds, max R̂)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints
    from numpyro.infer import MCMC, NUTS
    import numpyro_posteriordb

    sites, logp = numpyro_posteriordb.build(posterior, os.path.join(PDB, posterior))

    def model():
        v = {}
        for name, size, positive in sites:
            support = constraints.positive if positive else constraints.real
            shape = () if size is None else (size,)
            v[name] = numpyro.sample(name, dist.ImproperUniform(support, (), shape))
        numpyro.factor("log_density", logp(v))

    mcmc = MCMC(NUTS(model), num_warmup=WARMUP, num_samples=DRAWS, num_chains=CHAINS,
                chain_method="parallel", progress_bar=False)
    times = []
    for k in range(2):
        t0 = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(seed + k))
        jax.block_until_ready(mcmc.get_samples())
        times.append(time.perf_counter() - t0)
    rhat = max(float(np.max(v)) for v in numpyro.diagnostics.summary(
        mcmc.get_samples(group_by_chain=True)).values() for v in [v["r_hat"]])
    return times[1], times[0], rhat


def load_avg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "posteriordb"))
    ap.add_argument("--posteriors", default="all")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--no-numpyro", action="store_true")
    ap.add_argument("--nutpie", default="", help="comma-separated posteriors to run nutpie on")
    ap.add_argument("--mvi", default=MVI, help="the mvi binary (default: the release build)")
    ap.add_argument("--json")
    args = ap.parse_args()
    names = posteriors() if args.posteriors == "all" else args.posteriors.split(",")
    with open(os.path.join(args.shared, "calibration.json")) as f:
        calib = json.load(f)["posteriors"]
    rows = []
    for p in names:
        info, ref = coords.reference_draws(os.path.join(args.shared, p))
        for seed in range(1, args.reps + 1):
            load = load_avg()
            r = run_mvi(p, seed, args.timeout, args.mvi)
            row = {"posterior": p, "seed": seed, "load": load}
            if "error" in r:
                row["error"] = r["error"]
            else:
                fit = r["fit"]
                draws = coords.unconstrained_draws(info, r["cols"], rename=coords.mvi_name)
                row.update(w1=w1(thin(draws, N_W1), ref), floor=calib[p]["floor"]["mean"],
                           floor_sd=calib[p]["floor"]["sd"], mvi_s=fit["wall_time_s"],
                           max_rhat=fit["mcmc"]["max_rhat"], divergences=fit["mcmc"]["divergences"],
                           gradients=fit["evals"]["gradient"])
            if not args.no_numpyro:
                try:
                    row["numpyro_warm_s"], row["numpyro_cold_s"], row["numpyro_rhat"] = numpyro_nuts(p, seed)
                except Exception as e:  # a peer's failure is a finding, reported in the table
                    row["numpyro_error"] = f"{type(e).__name__}: {e}"
            if p in args.nutpie.split(","):
                try:
                    import nutpie_models
                    row["nutpie_warm_s"], row["nutpie_cold_s"] = nutpie_models.sample(
                        p, os.path.join(PDB, p), seed, CHAINS, WARMUP, DRAWS)
                except Exception as e:
                    row["nutpie_error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| posterior | W1 (floor ± sd) | max R̂ | div. | gradients | mvi nuts s | NumPyro warm s | ratio | nutpie warm s | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['posterior']} | error: {r['error']} |")
            continue
        npy = r.get("numpyro_warm_s")
        ratio = f"{npy / r['mvi_s']:.1f}×" if npy else "-"
        print(f"| {r['posterior']} | {r['w1']:.3g} ({r['floor']:.3g} ± {r['floor_sd']:.2g}) | {r['max_rhat']:.3f} "
              f"| {r['divergences']} | {r['gradients']} | {r['mvi_s']:.2f} | "
              f"{npy if npy is None else round(npy, 2)} | {ratio} | {r.get('nutpie_warm_s', '-')} | {r['load']} |")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
