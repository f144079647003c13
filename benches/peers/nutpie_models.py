"""PyMC versions of four posteriordb posteriors, sampled with nutpie (benches/nuts_posteriordb.py).

The models are written as in benches/posteriordb/<posterior>/model.mvi (and the Stan models):
  sblri-blr, sblrc-blr   beta[D] ~ N(0, 10), sigma ~ N(0, 10) on sigma > 0 (a HalfNormal(10),
                         the same density up to a constant), y ~ N(X beta, sigma)
  kidiq-kidscore_momiq   beta[2] flat, sigma ~ HalfCauchy(2.5), kid_score ~ N(beta1 + beta2 mom_iq, sigma)
  arK-arK                alpha ~ N(0, 10), beta[K] ~ N(0, 10), sigma ~ HalfCauchy(2.5),
                         y[t] ~ N(alpha + sum_k beta[k] y[t - k], sigma) for t > K
PyMC samples sigma on the log scale, as Stan and mvi do. `sample` compiles the model once
(numba backend) and samples twice with the same chains, warm-up and draws; it returns the
second (warm) and first sampling times, compilation excluded.
"""
import json
import os
import time


def _model(posterior, folder):
    import numpy as np
    import pymc as pm

    with open(os.path.join(folder, "data.json")) as f:
        d = json.load(f)
    with pm.Model() as m:
        if posterior in ("sblri-blr", "sblrc-blr"):
            x, y = np.asarray(d["X"], float), np.asarray(d["y"], float)
            beta = pm.Normal("beta", 0.0, 10.0, shape=x.shape[1])
            sigma = pm.HalfNormal("sigma", 10.0)
            pm.Normal("y", x @ beta, sigma, observed=y)
        elif posterior == "kidiq-kidscore_momiq":
            iq, score = np.asarray(d["mom_iq"], float), np.asarray(d["kid_score"], float)
            beta = pm.Flat("beta", shape=2)
            sigma = pm.HalfCauchy("sigma", 2.5)
            pm.Normal("y", beta[0] + beta[1] * iq, sigma, observed=score)
        elif posterior == "arK-arK":
            y, k, t = np.asarray(d["y"], float), int(d["K"]), int(d["T"])
            alpha = pm.Normal("alpha", 0.0, 10.0)
            beta = pm.Normal("beta", 0.0, 10.0, shape=k)
            sigma = pm.HalfCauchy("sigma", 2.5)
            lags = np.stack([y[k - j:t - j] for j in range(1, k + 1)], axis=1)  # y[t - j], t > K
            pm.Normal("y", alpha + lags @ beta, sigma, observed=y[k:])
        else:
            raise ValueError(f"no PyMC version of {posterior}")
    return m


def sample(posterior, folder, seed, chains, warmup, draws):
    import nutpie

    compiled = nutpie.compile_pymc_model(_model(posterior, folder))
    times = []
    for k in range(2):
        t0 = time.perf_counter()
        nutpie.sample(compiled, chains=chains, tune=warmup, draws=draws, seed=seed + k,
                      progress_bar=False, cores=chains)
        times.append(time.perf_counter() - t0)
    return times[1], times[0]
