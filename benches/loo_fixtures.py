#!/usr/bin/env python3
"""Fixtures for `tests/it/loo.rs`: ArviZ's PSIS-LOO, compare and LOO-PIT on posteriordb draws.

  /work/main/target/ci-venv/bin/python benches/loo_fixtures.py [--posteriordb DIR] [--out DIR]

(any Python with numpy, scipy, arviz_base and arviz_stats 0.8 will do; the defaults are
/work/shared/posteriordb and tests/data/loo). Writes one JSON file per posterior:

  eight_schools.json  eight_schools-eight_schools_noncentered: y_j ~ normal(theta_j, sigma_j),
                      J = 8. The S × N log-likelihood is stored as it is.
  gp_pois_regr.json   more/gp_pois_regr-gp_pois_regr: k_n ~ poisson_log(f_n), N = 11; k̂ is
                      large for several points here. Log-likelihood stored as it is.
  kidiq.json          three regressions of kid_score on the same N = 434 children
                      (kidiq-kidscore_momiq, kidiq-kidscore_interaction,
                      more/kidiq-kidscore_momhs): kid_score_n ~ normal(X_n β, σ). A 1000 × 434
                      matrix per model would be ~8 MB of JSON, so the file holds the design
                      X, y and the draws (β, σ), and the test recomputes the log-likelihood
                      with the formula below; ArviZ is run on the same formula's values here.

Every posterior uses the 10 000 reference draws (10 chains × 1000) thinned to every 10th:
S = 1000 draws, treated as one chain with reff = 1 (the reference draws are nearly
independent; the Rust side is called with r_eff = 1 too). Per model the file holds ArviZ's
elpd_loo, se, p_loo, good_k, warning and the pointwise elpd_i and pareto_k.

Also:
  - eight_schools.json: `loo_approximate_posterior` with a synthetic correction
    log p − log q = 0.3 (mu − mean mu) + 0.05 tau (the draws treated as if from q), for the
    corrected elpd and k̂; and the LOO-PIT of replicates y_rep ~ normal(theta, sigma) drawn
    with numpy (seed 1), from `arviz_stats.loo_pit` (continuous: no ties, so deterministic);
  - gp_pois_regr.json: replicates k_rep ~ poisson(exp f) (seed 2) and ArviZ's LOO-PIT with
    ties at the midpoint (its `_loo_pit` with rng=None; the public `loo_pit` draws ties
    uniformly with a seeded generator, which cannot be matched bit for bit);
  - kidiq.json: `arviz_stats.compare` of the three regressions (method "stacking").

Normal log-density: −½ log 2π − log σ − ½ ((y − μ)/σ)²; Poisson with log-rate f:
k f − exp f − lgamma(k + 1). Numbers are written with Python's shortest round-trip repr.
"""
import argparse
import json
import math
import os

import numpy as np
import xarray as xr
from scipy.special import gammaln

import arviz_base as azb
import arviz_stats as azs
from arviz_stats.base import array_stats

HERE = os.path.dirname(os.path.abspath(__file__))
THIN = 10
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def reference(folder):
    """The reference draws as {column: array}, every THIN-th row."""
    with open(os.path.join(folder, "reference.csv")) as f:
        names = f.readline().strip().split(",")
        rows = np.loadtxt(f, delimiter=",")
    rows = rows[::THIN]
    return {n: rows[:, j] for j, n in enumerate(names)}


def vector(draws, name, n):
    return np.stack([draws[f"{name}[{i + 1}]"] for i in range(n)], axis=1)


def normal_ll(y, mu, sigma):
    return -HALF_LOG_2PI - np.log(sigma) - 0.5 * ((y - mu) / sigma) ** 2


def tree(log_lik, extra=None):
    """A DataTree with one chain: log_likelihood (and posterior) group(s)."""
    s, n = log_lik.shape
    groups = {
        "posterior": {"dummy": np.zeros((1, s))},
        "log_likelihood": {"y": log_lik[None, :, :]},
        "observed_data": {"y": np.zeros(n)},
    }
    if extra:
        groups.update(extra)
    return azb.from_dict(groups, dims={"y": ["obs"]})


def loo_numbers(elpd):
    return {
        "elpd_loo": float(elpd.elpd),
        "se": float(elpd.se),
        "p_loo": float(elpd.p),
        "good_k": float(elpd.good_k),
        "warning": bool(elpd.warning),
        "elpd_i": [float(v) for v in np.ravel(elpd.elpd_i.values)],
        "pareto_k": [float(v) for v in np.ravel(elpd.pareto_k.values)],
    }


def matrix(a):
    return [[float(v) for v in row] for row in a]


def eight_schools(pdb):
    folder = os.path.join(pdb, "eight_schools-eight_schools_noncentered")
    data = json.load(open(os.path.join(folder, "data.json")))
    d = reference(folder)
    y, sigma = np.array(data["y"], float), np.array(data["sigma"], float)
    theta = vector(d, "theta", len(y))
    ll = normal_ll(y, theta, sigma)
    out = {"posterior": "eight_schools-eight_schools_noncentered", "log_lik": matrix(ll)}
    out["loo"] = loo_numbers(azs.loo(tree(ll), pointwise=True, reff=1.0))

    corr = 0.3 * (d["mu"] - d["mu"].mean()) + 0.05 * d["tau"]
    log_p = xr.DataArray(corr[None, :], dims=["chain", "draw"])
    log_q = xr.DataArray(np.zeros((1, len(corr))), dims=["chain", "draw"])
    approx = azs.loo_approximate_posterior(tree(ll), log_p, log_q, pointwise=True)
    out["log_correction"] = [float(v) for v in corr]
    out["loo_corrected"] = loo_numbers(approx)

    rng = np.random.default_rng(1)
    y_rep = rng.normal(theta, sigma)
    dt = tree(ll, {"posterior_predictive": {"y": y_rep[None, :, :]},
                   "observed_data": {"y": y}})
    pit = azs.loo_pit(dt, var_names="y")["y"].values
    out["y"] = [float(v) for v in y]
    out["y_rep"] = matrix(y_rep)
    out["loo_pit"] = [float(v) for v in np.ravel(pit)]
    return out


def gp_pois_regr(pdb):
    folder = os.path.join(pdb, "more", "gp_pois_regr-gp_pois_regr")
    data = json.load(open(os.path.join(folder, "data.json")))
    d = reference(folder)
    k = np.array(data["k"], float)
    f = vector(d, "f", len(k))
    ll = k * f - np.exp(f) - gammaln(k + 1)
    out = {"posterior": "gp_pois_regr-gp_pois_regr", "log_lik": matrix(ll)}
    out["loo"] = loo_numbers(azs.loo(tree(ll), pointwise=True, reff=1.0))

    rng = np.random.default_rng(2)
    k_rep = rng.poisson(np.exp(f)).astype(float)
    # psislw(a) smooths the log ratios −a: the log-likelihood gives the LOO ratios
    # 1 / p(y_n | w), one row per observation.
    log_weights, _ = array_stats.psislw(ll.T, r_eff=1.0, axis=-1)
    pit = [array_stats._loo_pit(k_rep[:, n], k[n], log_weights[n], rng=None)
           for n in range(len(k))]
    out["y"] = [float(v) for v in k]
    out["y_rep"] = matrix(k_rep)
    out["loo_pit_midpoint"] = [float(v) for v in pit]
    return out


KIDIQ = [
    ("momiq", "kidiq-kidscore_momiq", lambda hs, iq: [np.ones_like(iq), iq]),
    ("interaction", "kidiq-kidscore_interaction",
     lambda hs, iq: [np.ones_like(iq), hs, iq, hs * iq]),
    ("momhs", os.path.join("more", "kidiq-kidscore_momhs"), lambda hs, iq: [np.ones_like(iq), hs]),
]


def kidiq(pdb):
    data = json.load(open(os.path.join(pdb, "kidiq-kidscore_momiq", "data.json")))
    y = np.array(data["kid_score"], float)
    hs, iq = np.array(data["mom_hs"], float), np.array(data["mom_iq"], float)
    out = {"y": [float(v) for v in y], "models": []}
    loos = {}
    for name, path, design in KIDIQ:
        d = reference(os.path.join(pdb, path))
        x = np.stack(design(hs, iq), axis=1)
        beta = vector(d, "beta", x.shape[1])
        sigma = d["sigma"]
        # μ_sn = Σ_p X_np β_sp, summed in the order p = 1, 2, … (as the Rust test does).
        mu = np.zeros((len(sigma), len(y)))
        for p in range(x.shape[1]):
            mu = mu + beta[:, p:p + 1] * x[None, :, p]
        ll = normal_ll(y[None, :], mu, sigma[:, None])
        elpd = azs.loo(tree(ll), pointwise=True, reff=1.0)
        loos[name] = elpd
        out["models"].append({
            "name": name,
            "posterior": path,
            "x": matrix(x.T),
            "beta": matrix(beta),
            "sigma": [float(v) for v in sigma],
            "loo": loo_numbers(elpd),
        })
    table = azs.compare(loos)
    out["compare"] = [
        {
            "name": str(name),
            "rank": int(row["rank"]),
            "elpd_loo": float(row["elpd"]),
            "p_loo": float(row["p"]),
            "elpd_diff": float(row["elpd_diff"]),
            "weight": float(row["weight"]),
            "se": float(row["se"]),
            "dse": float(row["dse"]),
            "warning": bool(row["warning"]),
        }
        for name, row in table.iterrows()
    ]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--posteriordb", default="/work/shared/posteriordb")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "loo"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, build in [("eight_schools", eight_schools), ("gp_pois_regr", gp_pois_regr),
                        ("kidiq", kidiq)]:
        path = os.path.join(args.out, f"{name}.json")
        with open(path, "w") as f:
            json.dump(build(args.posteriordb), f)
            f.write("\n")
        print(f"{path}: {os.path.getsize(path) / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
