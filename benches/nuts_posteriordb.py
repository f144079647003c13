#!/usr/bin/env python3
"""mvi's `nuts` on the posteriordb suite: W1 to the reference, R̂, and wall time beside
NumPyro's NUTS (warm) and nutpie (PyMC models).

  benches/peers/setup.sh                                        # once: the benches' venv
  benches/peers/.venv-peers/bin/pip install nutpie pymc         # for --nutpie
  PY=benches/peers/.venv-peers/bin/python
  $PY benches/nuts_posteriordb.py                               # all 12, mvi + NumPyro
  $PY benches/nuts_posteriordb.py --posteriors arK-arK,sblri-blr --no-numpyro
  $PY benches/nuts_posteriordb.py --posteriors suite --nutpie all   # + nutpie on the 12
  $PY benches/nuts_posteriordb.py --json benches/peers/out/nuts_posteriordb.json
  $PY benches/nuts_posteriordb.py --tables-from A.json B.json             # print again

For each posterior (all 34 folders of benches/posteriordb: the shared suite's 12 and its
more/) and seed s = 1..--reps this runs

  mvi run model.mvi --data data.json --method nuts --set seed=s --output-dir TMP --quiet

with the defaults (4 chains, 1000 warm-up and 1000 draws each) and the posterior's entry
in SETTINGS below (the low-rank mass matrix where the coordinates are strongly
correlated; --defaults to ignore them), reads fit.json (wall time
of the sampler, largest R̂, divergences, gradient evaluations) and draws.csv, takes 100
evenly spaced draws of the 4000 on Stan's unconstrained scale and computes W1 against the
10 000 reference draws exactly (the Pathfinder paper's protocol, as
benches/posteriordb_w1.py; the floor is the shared calibration's: 100 reference draws
against the rest).

NumPyro's NUTS (`--no-numpyro` to skip; the 12 of the suite only) runs the same posterior written as in
benches/peers/numpyro_posteriordb.py with the same chains, warm-up and draws
(chain_method "parallel" over 4 host devices, NumPyro's default init_to_uniform(2) as
Stan's), twice in this process: the second run is the warm time (JIT compilation
excluded); the table shows it beside mvi's sampler time.

nutpie (`--nutpie P1,P2,...` or `--nutpie all`) samples PyMC versions of the 12 of the
suite (benches/peers/nutpie_models.py: same priors, data and parameterisation; its
`--check all` compares their log density with mvi's lp__) with the same chains, warm-up
and draws, and the low-rank modified mass matrix where mvi uses it; its time is the
sampling only (the model compiled first, numba backend), also run twice with the warm time
shown. A second table puts the cost of one gradient (sampler seconds over gradients, so
including the sampler's own work) beside the number of gradients for mvi and nutpie.

Timings on a shared, loaded machine are noisy: the table gives the 1-minute load average
beside every time, and the peers' times over mvi's from the same run (above 1: mvi is
faster). mvi's time is fit.json's wall_time_s (the sampler: 4 chains in parallel threads).
"""
import argparse
import json
import os
import sys
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
from posteriordb_w1 import calibration, posteriors, w1  # noqa: E402

CHAINS, WARMUP, DRAWS, N_W1 = 4, 1000, 1000, 100


# Per-posterior settings where the defaults miss R̂ ≤ 1.01 or the floor (docs/results.md says
# why): `mvi run --set` keys; NumPyro gets the same warm-up and target_accept, and
# dense_mass where mvi uses the low-rank mass matrix.
SETTINGS = {
    # alpha and beta correlated at −0.99999: with a diagonal mass matrix every draw runs
    # to max_depth (1.27 M gradients) and R̂ ends at 1.011; the low-rank correction gives
    # R̂ 1.001 with 30× fewer gradients.
    "kilpisjarvi_mod-kilpisjarvi": {"mass_matrix": "low_rank"},
    # the interaction of two uncentred predictors: at the defaults R̂ 1.009 but W1 5.40
    # (floor 3.42 ± 0.68), 297 815 gradients; low-rank: W1 2.90, R̂ 1.002, 29 994 gradients
    "kidiq-kidscore_interaction": {"mass_matrix": "low_rank"},
    # 24 polynomial terms of a price regression (N = 5000, D = 26): the posterior's
    # correlation matrix has condition number 2.7e5 (smallest eigenvalue 1.3e-5), so a
    # diagonal mass matrix takes tree depths 7–10, 380 leapfrog steps per draw (one chain,
    # warm-up 300: R̂ 1.44, ESS 5 of 50 draws; 4 × 2000 did not finish in 13 minutes at
    # load 15–20); low-rank: about 9 steps per draw, R̂ 1.004, 71 415 gradients, 17 s
    "diamonds-diamonds": {"mass_matrix": "low_rank"},
    # uncentred predictors (height in inches, earnings in dollars): intercept and slopes
    # correlated near ±1, R̂ 1.011–1.013 with the diagonal mass matrix (logearn_height and
    # logearn_height_male pass with it: 1.008, 1.005)
    "earnings-earn_height": {"mass_matrix": "low_rank"},
    "earnings-logearn_interaction": {"mass_matrix": "low_rank"},
    "earnings-logearn_logheight_male": {"mass_matrix": "low_rank"},
    # a latent GP (funnel between its scale and the latent values): 54 divergences and R̂
    # 1.017 at target_accept 0.8; low_rank with 0.95 (and warm-up 1000 or 2000) still
    # 1.013–1.016; R̂ 1.004 and no divergence at 0.99 with warm-up 2000 (3.8 M gradients)
    "gp_pois_regr-gp_pois_regr": {"target_accept": 0.99, "warmup": 2000},
    # two-state HMM with a local mode about 60 nats below the main one (its Laplace needs
    # 20 restarts): at warm-up 1000 one chain stays in it (R̂ 1.55, W1 3.5× the floor);
    # warm-up 3000 lets every chain reach the main mode (R̂ 1.003, W1 at the floor)
    "bball_drive_event_0-hmm_drive_0": {"warmup": 3000},
    # the same model on other data: at warm-up 1000 R̂ 1.004 but W1 0.221 (floor
    # 0.190 ± 0.013); warm-up 3000: W1 0.208, R̂ 1.002
    "bball_drive_event_1-hmm_drive_1": {"warmup": 3000},
}


def run_mvi(posterior, seed, timeout, mvi=MVI, extra=()):
    """One `mvi run --method nuts`: a dict with fit.json numbers, the unconstrained draws and
    the process's seconds (start, parse, compile, sample, write)."""
    sets = [f"seed={seed}", *(f"{k}={v}" for k, v in extra)]
    return coords.run_fit(mvi, os.path.join(PDB, posterior), "nuts", sets, timeout)


def thin(draws, n):
    """n evenly spaced rows (the draws are chain after chain)."""
    idx = (np.arange(n) * draws.shape[0]) // n
    return draws[idx]


def numpyro_nuts(posterior, seed, settings):
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

    kernel = NUTS(model, target_accept_prob=float(settings.get("target_accept", 0.8)),
                  dense_mass=settings.get("mass_matrix") == "low_rank")
    mcmc = MCMC(kernel, num_warmup=int(settings.get("warmup", WARMUP)), num_samples=DRAWS,
                num_chains=CHAINS, chain_method="parallel", progress_bar=False)
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
    """The 1-minute load average (2 cores: above 2 the machine is oversubscribed)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def in_suite(shared, posterior):
    """Whether the posterior is one of the 12 of the shared suite (not its more/)."""
    return os.path.isfile(os.path.join(shared, posterior, "reference.csv"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "posteriordb"))
    ap.add_argument("--posteriors", default="all", help="comma-separated, `all` (34) or `suite` (the 12)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--no-numpyro", action="store_true",
                    help="skip NumPyro (it runs on the 12 of the shared suite only)")
    ap.add_argument("--nutpie", default="",
                    help="comma-separated posteriors to run nutpie on, or `all` (every one run; PyMC "
                         "versions of the 12 of the suite in benches/peers/nutpie_models.py)")
    ap.add_argument("--defaults", action="store_true", help="ignore SETTINGS: every posterior at the defaults")
    ap.add_argument("--mvi", default=MVI, help="the mvi binary (default: the release build)")
    ap.add_argument("--json")
    ap.add_argument("--tables-from", metavar="JSON", nargs="+",
                    help="print the table of earlier runs' --json files instead of running")
    args = ap.parse_args()
    if args.tables_from:
        rows = []
        for path in args.tables_from:
            with open(path) as f:
                rows += json.load(f)
        print_table(rows)
        print_profile(rows)
        return
    if args.posteriors == "all":
        names = posteriors()
    elif args.posteriors == "suite":
        names = [p for p in posteriors() if in_suite(args.shared, p)]
    else:
        names = args.posteriors.split(",")
    calib = calibration(args.shared)
    nutpie_names = names if args.nutpie == "all" else args.nutpie.split(",")
    rows = []
    for p in names:
        info, ref = coords.reference_draws(coords.shared_folder(args.shared, p))
        settings = {} if args.defaults else SETTINGS.get(p, {})
        for seed in range(1, args.reps + 1):
            row = {"posterior": p, "seed": seed, "settings": settings, "load": load_avg()}
            r = run_mvi(p, seed, args.timeout, args.mvi, sorted(settings.items()))
            if "error" in r:
                row["error"] = r["error"]
            else:
                fit = r["fit"]
                draws = coords.unconstrained_draws(info, r["cols"], rename=coords.mvi_name)
                row.update(w1=w1(thin(draws, N_W1), ref), floor=calib[p]["floor"]["mean"],
                           floor_sd=calib[p]["floor"]["sd"], mvi_s=fit["wall_time_s"],
                           process_s=r["process_s"], max_rhat=fit["mcmc"]["max_rhat"],
                           divergences=fit["mcmc"]["divergences"], gradients=fit["evals"]["gradient"])
            if not args.no_numpyro and in_suite(args.shared, p):
                row["numpyro_load"] = load_avg()
                try:
                    row["numpyro_warm_s"], row["numpyro_cold_s"], row["numpyro_rhat"] = numpyro_nuts(
                        p, seed, settings)
                except Exception as e:  # a peer's failure is a finding, reported in the table
                    row["numpyro_error"] = f"{type(e).__name__}: {e}"
            if p in nutpie_names:
                row["nutpie_load"] = load_avg()
                try:
                    import nutpie_models
                    row["nutpie_warm_s"], row["nutpie_cold_s"], row["nutpie_gradients"] = nutpie_models.sample(
                        p, os.path.join(PDB, p), seed, CHAINS, int(settings.get("warmup", WARMUP)), DRAWS,
                        low_rank=settings.get("mass_matrix") == "low_rank")
                except Exception as e:
                    row["nutpie_error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if args.json:  # after every row: a long run that dies keeps what it measured
                os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
                with open(args.json + ".tmp", "w") as f:
                    json.dump(rows, f, indent=1)
                os.replace(args.json + ".tmp", args.json)
    print_table(rows)
    print_profile(rows)


def ratio(peer, ours):
    return f"{peer / ours:.1f}×" if peer and ours else "-"


def print_profile(rows):
    """Where nutpie was run: gradients and seconds per gradient of each sampler (both run
    4 chains on the same cores; the time includes the sampler's own work per step)."""
    rows = [r for r in rows if r.get("nutpie_warm_s") and "error" not in r]
    if not rows:
        return
    print()
    print("| posterior | mvi gradients | nutpie gradients | nutpie / mvi gradients "
          "| mvi µs per gradient | nutpie µs per gradient | nutpie / mvi per gradient |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        mg, ng = r["gradients"], r["nutpie_gradients"]
        mc, nc = 1e6 * r["mvi_s"] / mg, 1e6 * r["nutpie_warm_s"] / ng
        print(f"| {r['posterior']} | {mg} | {ng} | {ng / mg:.2f} | {mc:.1f} | {nc:.1f} | {nc / mc:.2f} |")


def print_table(rows):
    """The markdown table: accuracy and R̂, then the times with the load beside each and the
    peers' times over mvi's (above 1: mvi is faster)."""
    print("| posterior | settings | W1 (floor ± sd) | max R̂ | div. | gradients | mvi nuts s (load) "
          "| NumPyro warm s (load) | NumPyro / mvi | nutpie warm s (load) | nutpie / mvi |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sets = ", ".join(f"{k}={v}" for k, v in sorted(r["settings"].items())) or "defaults"
        if "error" in r:
            print(f"| {r['posterior']} | {sets} | error: {r['error']} |")
            continue
        npy, nut = r.get("numpyro_warm_s"), r.get("nutpie_warm_s")
        npy_s = f"{npy:.2f} ({r['numpyro_load']:.1f})" if npy else r.get("numpyro_error", "-")
        nut_s = f"{nut:.2f} ({r['nutpie_load']:.1f})" if nut else r.get("nutpie_error", "-")
        print(f"| {r['posterior']} | {sets} | {r['w1']:.3g} ({r['floor']:.3g} ± {r['floor_sd']:.2g}) "
              f"| {r['max_rhat']:.3f} | {r['divergences']} | {r['gradients']} | {r['mvi_s']:.2f} ({r['load']:.1f}) "
              f"| {npy_s} | {ratio(npy, r['mvi_s'])} | {nut_s} | {ratio(nut, r['mvi_s'])} |")


if __name__ == "__main__":
    main()
