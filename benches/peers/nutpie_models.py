"""PyMC versions of the 12 posteriors of the shared posteriordb suite, sampled with nutpie
(benches/nuts_posteriordb.py).

The models are written as in benches/posteriordb/<posterior>/model.mvi (and the Stan
models), same priors, data and parameterisation:
  sblri-blr, sblrc-blr   beta[D] ~ N(0, 10), sigma ~ N(0, 10) on sigma > 0 (a HalfNormal(10),
                         the same density up to a constant), y ~ N(X beta, sigma)
  kidiq-kidscore_momiq   beta[2] flat, sigma ~ HalfCauchy(2.5), kid_score ~ N(beta1 + beta2 mom_iq, sigma)
  kidiq-kidscore_interaction
                         beta[4] flat, sigma ~ HalfCauchy(2.5),
                         kid_score ~ N(beta1 + beta2 mom_hs + beta3 mom_iq + beta4 mom_hs mom_iq, sigma)
  kidiq_with_mom_work-kidscore_interaction_z
                         the same on z = (x - mean) / (2 sd), beta and sigma flat
  earnings-logearn_interaction_z
                         log earn ~ N(beta1 + beta2 z_height + beta3 male + beta4 z_height male, sigma),
                         z = (x - mean) / sd, beta and sigma flat
  mesquite-logmesquite_logvas
                         log weight on 6 log-scale predictors and group, beta[7] and sigma flat
  nes2000-nes            partyid7 on 8 predictors (age as three indicators), beta[9], sigma flat
  arK-arK                alpha ~ N(0, 10), beta[K] ~ N(0, 10), sigma ~ HalfCauchy(2.5),
                         y[t] ~ N(alpha + sum_k beta[k] y[t - k], sigma) for t > K
  kilpisjarvi_mod-kilpisjarvi
                         alpha ~ N(pmualpha, psalpha), beta ~ N(pmubeta, psbeta), sigma flat,
                         y ~ N(alpha + beta x, sigma)
  eight_schools-eight_schools_noncentered
                         theta_trans[J] ~ N(0, 1), mu ~ N(0, 5), tau ~ HalfCauchy(5),
                         y ~ N(mu + tau theta_trans, sigma)
  diamonds-diamonds      b[K-1] ~ N(0, 1), Intercept ~ t3(8, 10), sigma ~ t3(0, 10) on sigma > 0,
                         Y ~ N(Intercept + Xc b, sigma), Xc = X[:, 2:K] with its column means removed
A flat sigma > 0 is PyMC's HalfFlat. PyMC samples every sigma / tau on the log scale, as
Stan and mvi do, so the sampler sees the same unconstrained density up to a constant:
`check` verifies that against mvi's lp__ at mvi's own draws.

`sample` compiles the model once (numba backend) and samples twice with the same chains,
warm-up and draws; it returns the second (warm) and first sampling times, compilation
excluded, and the warm run's gradient count (leapfrog steps of warm-up and draws).

  PY=benches/peers/.venv-peers/bin/python
  $PY benches/peers/nutpie_models.py --check all     # PyMC's logp against mvi's lp__
"""
import json
import os
import time

POSTERIORS = [
    "arK-arK", "sblri-blr", "sblrc-blr", "kidiq-kidscore_momiq", "kidiq-kidscore_interaction",
    "kidiq_with_mom_work-kidscore_interaction_z", "earnings-logearn_interaction_z",
    "mesquite-logmesquite_logvas", "nes2000-nes", "kilpisjarvi_mod-kilpisjarvi",
    "eight_schools-eight_schools_noncentered", "diamonds-diamonds",
]


def _model(posterior, folder):
    import numpy as np
    import pymc as pm

    with open(os.path.join(folder, "data.json")) as f:
        d = json.load(f)

    def v(name):
        return np.asarray(d[name], float)

    def design(*cols):
        return np.stack(cols, axis=1)

    with pm.Model() as m:
        if posterior in ("sblri-blr", "sblrc-blr"):
            x, y = v("X"), v("y")
            beta = pm.Normal("beta", 0.0, 10.0, shape=x.shape[1])
            sigma = pm.HalfNormal("sigma", 10.0)
            pm.Normal("y", x @ beta, sigma, observed=y)
        elif posterior == "kidiq-kidscore_momiq":
            iq, score = v("mom_iq"), v("kid_score")
            beta = pm.Flat("beta", shape=2)
            sigma = pm.HalfCauchy("sigma", 2.5)
            pm.Normal("y", beta[0] + beta[1] * iq, sigma, observed=score)
        elif posterior == "kidiq-kidscore_interaction":
            hs, iq = v("mom_hs"), v("mom_iq")
            x = design(np.ones_like(hs), hs, iq, hs * iq)
            beta = pm.Flat("beta", shape=4)
            sigma = pm.HalfCauchy("sigma", 2.5)
            pm.Normal("y", x @ beta, sigma, observed=v("kid_score"))
        elif posterior == "kidiq_with_mom_work-kidscore_interaction_z":
            hs, iq = v("mom_hs"), v("mom_iq")
            zhs = (hs - hs.mean()) / (2 * hs.std(ddof=1))
            ziq = (iq - iq.mean()) / (2 * iq.std(ddof=1))
            x = design(np.ones_like(hs), zhs, ziq, zhs * ziq)
            beta = pm.Flat("beta", shape=4)
            sigma = pm.HalfFlat("sigma")
            pm.Normal("y", x @ beta, sigma, observed=v("kid_score"))
        elif posterior == "earnings-logearn_interaction_z":
            h, male = v("height"), v("male")
            z = (h - h.mean()) / h.std(ddof=1)
            x = design(np.ones_like(h), z, male, z * male)
            beta = pm.Flat("beta", shape=4)
            sigma = pm.HalfFlat("sigma")
            pm.Normal("y", x @ beta, sigma, observed=np.log(v("earn")))
        elif posterior == "mesquite-logmesquite_logvas":
            d1, d2, ch = v("diam1"), v("diam2"), v("canopy_height")
            x = design(np.ones_like(d1), np.log(d1 * d2 * ch), np.log(d1 * d2), np.log(d1 / d2),
                       np.log(v("total_height")), np.log(v("density")), v("group"))
            beta = pm.Flat("beta", shape=7)
            sigma = pm.HalfFlat("sigma")
            pm.Normal("y", x @ beta, sigma, observed=np.log(v("weight")))
        elif posterior == "nes2000-nes":
            age = np.asarray(d["age_discrete"])
            x = design(np.ones(len(age)), v("real_ideo"), v("race_adj"), (age == 2) * 1.0,
                       (age == 3) * 1.0, (age == 4) * 1.0, v("educ1"), v("gender"), v("income"))
            beta = pm.Flat("beta", shape=9)
            sigma = pm.HalfFlat("sigma")
            pm.Normal("y", x @ beta, sigma, observed=v("partyid7"))
        elif posterior == "arK-arK":
            y, k, t = v("y"), int(d["K"]), int(d["T"])
            alpha = pm.Normal("alpha", 0.0, 10.0)
            beta = pm.Normal("beta", 0.0, 10.0, shape=k)
            sigma = pm.HalfCauchy("sigma", 2.5)
            lags = np.stack([y[k - j:t - j] for j in range(1, k + 1)], axis=1)  # y[t - j], t > K
            pm.Normal("y", alpha + lags @ beta, sigma, observed=y[k:])
        elif posterior == "kilpisjarvi_mod-kilpisjarvi":
            alpha = pm.Normal("alpha", d["pmualpha"], d["psalpha"])
            beta = pm.Normal("beta", d["pmubeta"], d["psbeta"])
            sigma = pm.HalfFlat("sigma")
            pm.Normal("y", alpha + beta * v("x"), sigma, observed=v("y"))
        elif posterior == "eight_schools-eight_schools_noncentered":
            theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=int(d["J"]))
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfCauchy("tau", 5.0)
            pm.Normal("y", mu + tau * theta_trans, v("sigma"), observed=v("y"))
        elif posterior == "diamonds-diamonds":
            x = v("X")[:, 1:]
            xc = x - x.mean(axis=0)
            b = pm.Normal("b", 0.0, 1.0, shape=xc.shape[1])
            intercept = pm.StudentT("Intercept", nu=3, mu=8.0, sigma=10.0)
            sigma = pm.HalfStudentT("sigma", nu=3, sigma=10.0)
            if not d["prior_only"]:
                pm.Normal("Y", intercept + xc @ b, sigma, observed=v("Y"))
        else:
            raise ValueError(f"no PyMC version of {posterior}")
    return m


def sample(posterior, folder, seed, chains, warmup, draws, low_rank=False):
    """(warm s, cold s, gradients of the warm run): nutpie twice on the compiled model."""
    import nutpie

    compiled = nutpie.compile_pymc_model(_model(posterior, folder))
    times = []
    for k in range(2):
        t0 = time.perf_counter()
        trace = nutpie.sample(compiled, chains=chains, tune=warmup, draws=draws, seed=seed + k,
                              progress_bar=False, cores=chains, low_rank_modified_mass_matrix=low_rank)
        times.append(time.perf_counter() - t0)
    gradients = int(trace.sample_stats["n_steps"].sum()) + int(trace.warmup_sample_stats["n_steps"].sum())
    return times[1], times[0], gradients


def check(posterior, folder, mvi, n=20):
    """PyMC's log density against mvi's lp__ at n of mvi's own nuts draws: both on the
    unconstrained scale with the log-Jacobian, so they may differ by a constant only.
    Returns the largest deviation of the differences from their mean."""
    import subprocess
    import sys
    import tempfile
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "posteriordb"))
    import coords

    with tempfile.TemporaryDirectory(prefix="nutpie-check-") as out:
        subprocess.run([mvi, "run", os.path.join(folder, "model.mvi"), "--data", os.path.join(folder, "data.json"),
                        "--method", "nuts", "--set", "chains=1", "--set", "warmup=200", "--set", f"draws={n}",
                        "--output-dir", out, "--quiet"], check=True, capture_output=True)
        cols = coords.read_columns(os.path.join(out, "draws.csv"))
    m = _model(posterior, folder)
    logp = m.compile_logp(jacobian=True)
    diffs = []
    for i in range(n):
        point = {}
        for rv in m.free_RVs:
            value = m.rvs_to_values[rv].name
            shape = m.initial_point()[value].shape
            if shape:
                x = np.array([cols[f"{rv.name}.{j + 1}"][i] for j in range(shape[0])])
            else:
                x = np.asarray(cols[rv.name][i])
            point[value] = np.log(x) if value.endswith("_log__") else x
        diffs.append(float(logp(point)) - float(cols["lp__"][i]))
    diffs = np.array(diffs)
    return float(np.max(np.abs(diffs - diffs.mean())))


if __name__ == "__main__":
    import argparse

    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", required=True, help="comma-separated posteriors, or `all`")
    ap.add_argument("--mvi", default=os.path.join(here, "..", "..", "target", "release", "mvi"))
    args = ap.parse_args()
    names = POSTERIORS if args.check == "all" else args.check.split(",")
    worst = 0.0
    for p in names:
        dev = check(p, os.path.join(here, "..", "posteriordb", p), args.mvi)
        worst = max(worst, dev)
        print(f"{p}: PyMC logp − mvi lp__ varies by at most {dev:.2e} over 20 draws")
    raise SystemExit(0 if worst < 1e-6 else 1)
