#!/usr/bin/env python3
"""Fixtures for `tests/it/sbc.rs`: the SBC ECDF test's bands, coverages and p-values from
ArviZ 0.x (`arviz.stats.ecdf_utils`) and scipy, and VSBC's KS test from scipy.

  /work/main/target/arviz-venv/bin/python benches/sbc_fixtures.py [--out DIR]

(any Python with numpy, scipy and arviz 0.x will do; the default output is
tests/data/sbc). Writes `ecdf.json` and `vsbc.json`.

ecdf.json holds one case per (N, L, ranks), ranks drawn with numpy (seeded): uniform,
skewed low (a biased posterior), ∩-shaped (a posterior too wide) and ∪-shaped (too
narrow), with L + 1 divisible by K or not. For each case, with K = min(L + 1, N),
c_i = ⌊i (L + 1) / K⌋ and z_i = c_i / (L + 1), i = 1 … K − 1 (the convention of
`mvi::posterior::sbc`):

  counts       N F̂_i = #{ranks < c_i}, from ArviZ's `compute_ecdf` of the sorted r + 1
               at c_i;
  pointwise    for γ in GAMMAS: scipy's `binom.interval(γ, N, z_i)` counts and ArviZ's
               exact interior probability of that band (`_ecdf_band_interior_probability`,
               the recursion of Säilynoja et al. 2022);
  arviz        ArviZ's optimised pointwise level for a 95 % simultaneous band
               (`_optimize_simultaneous_ecdf_band_probability`, scipy's bounded Brent on
               |coverage − 0.95|), its band and that band's coverage;
  exact        the narrowest band {both binomial tails ≥ τ} with coverage ≥ 0.95: τ found by
               bisection over the tail probabilities scipy gives, each coverage from ArviZ's
               recursion (the definition `mvi` implements, computed here independently);
  t_obs, p_value  the smallest pointwise tail probability of the observed ECDF (from
               ArviZ's `_fit_pointwise_band_probability`: γ_obs = 1 − 2 t_obs) and
               p = 1 − coverage of {both tails > t_obs}.

vsbc.json: p_j = Pr_q(θ < θ_true) vectors (symmetric: Φ of normal noise; skewed: a
Beta(2, 5) sample; a small one) with scipy's `ks_2samp(p, 1 − p, method="exact")`.

Numbers are written with Python's shortest round-trip repr.
"""
import argparse
import json
import os

import numpy as np
from scipy.stats import binom, ks_2samp, norm

from arviz.stats import ecdf_utils as eu

HERE = os.path.dirname(os.path.abspath(__file__))
GAMMAS = [0.9, 0.99, 0.999, 0.9995]
LEVEL = 0.95
TIE_TOL = 1e-12


def evaluation_points(n, l):
    k = min(l + 1, n)
    c = np.array([i * (l + 1) // k for i in range(1, k)], dtype=np.int64)
    return k, c, c / (l + 1)


def coverage(n, z, lower, upper):
    """ArviZ's exact interior probability of the band lower ≤ N F̂ ≤ upper (inclusive)."""
    if np.any(np.asarray(lower) > np.asarray(upper)):
        return 0.0
    z_prev = np.insert(z[:-1], 0, 0.0)
    between = (z - z_prev) / (1 - z_prev)
    return float(eu._ecdf_band_interior_probability(
        between, n, np.asarray(lower, dtype=np.int64), np.asarray(upper, dtype=np.int64) + 1))


def tails(n, zi):
    m = np.arange(n + 1)
    return binom.cdf(m, n, zi), binom.sf(m - 1, n, zi)


def band_at(n, z, tau, inclusive):
    lower, upper = [], []
    for zi in z:
        below, above = tails(n, zi)
        keep_lo = below >= tau * (1 - TIE_TOL) if inclusive else below > tau * (1 + TIE_TOL)
        keep_hi = above >= tau * (1 - TIE_TOL) if inclusive else above > tau * (1 + TIE_TOL)
        lo = int(np.argmax(keep_lo)) if keep_lo.any() else n + 1
        hi = int(n - np.argmax(keep_hi[::-1])) if keep_hi.any() else 0
        lower.append(lo)
        upper.append(hi)
    return lower, upper


def exact_band(n, z):
    cands = []
    for zi in z:
        below, above = tails(n, zi)
        t = np.minimum(below, above)
        cands.extend(t[(t > 0) & (t <= 0.5)])
    cands = np.unique(cands)
    good, a, b = None, 0, len(cands)
    while a < b:
        mid = (a + b) // 2
        if coverage(n, z, *band_at(n, z, cands[mid], True)) >= LEVEL:
            good, a = mid, mid + 1
        else:
            b = mid
    tau = 0.0 if good is None else float(cands[good])
    lower, upper = band_at(n, z, tau, True)
    return {"tau": tau, "lower": lower, "upper": upper, "coverage": coverage(n, z, lower, upper)}


def case(name, ranks, l):
    ranks = np.asarray(ranks, dtype=np.int64)
    n = len(ranks)
    k, c, z = evaluation_points(n, l)
    counts = np.rint(eu.compute_ecdf(np.sort(ranks + 1), c) * n).astype(np.int64)
    pointwise = []
    for g in GAMMAS:
        lo, hi = binom.interval(g, n, z)
        lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        pointwise.append({"gamma": g, "lower": lo.tolist(), "upper": hi.tolist(),
                          "coverage": coverage(n, z, lo, hi)})
    g_a = float(eu._optimize_simultaneous_ecdf_band_probability(n, z, z, prob=LEVEL))
    lo, hi = binom.interval(g_a, n, z)
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    # ArviZ truncates N F̂ to an integer; a quarter added keeps 29/100 · 100 from becoming 28.
    g_obs = eu._fit_pointwise_band_probability(n, (counts + 0.25) / n, z)
    t_obs = (1 - g_obs) / 2
    p_value = 1 - coverage(n, z, *band_at(n, z, t_obs, False))
    print(f"{name}: N={n} L={l} K={k} t_obs={t_obs:.3g} p={p_value:.4g}")
    return {
        "name": name, "n": n, "l": l, "k": k, "ranks": ranks.tolist(),
        "thresholds": c.tolist(), "z": z.tolist(), "counts": counts.tolist(),
        "pointwise": pointwise,
        "arviz": {"gamma": g_a, "lower": lo.tolist(), "upper": hi.tolist(),
                  "coverage": coverage(n, z, lo, hi)},
        "exact": exact_band(n, z),
        "t_obs": float(t_obs), "p_value": float(p_value),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "sbc"))
    args = ap.parse_args()
    rng = np.random.default_rng(43)
    cases = [
        case("uniform_n100_l99", rng.integers(0, 100, 100), 99),
        # the smaller of two uniform ranks: too many low ranks
        case("low_n200_l49", np.minimum(rng.integers(0, 50, 200), rng.integers(0, 50, 200)), 49),
        # the middle of three uniform ranks: ∩-shaped, K = 40 does not divide L + 1 = 100
        case("middle_n40_l99", np.median(rng.integers(0, 100, (40, 3)), axis=1), 99),
        # rank of a truth among draws of a posterior 1.6 times too narrow: ∪-shaped
        case("narrow_n300_l19", [int((rng.normal(0, 1.6) > rng.normal(0, 1, 19)).sum())
                                 for _ in range(300)], 19),
        case("uniform_n500_l999", rng.integers(0, 1000, 500), 999),
    ]
    with open(os.path.join(args.out, "ecdf.json"), "w") as f:
        json.dump({"level": LEVEL, "cases": cases}, f, indent=1)
        f.write("\n")
    vsbc = []
    for name, p in [
        ("symmetric_n200", norm.cdf(rng.normal(0, 1, 200))),
        ("skewed_n200", rng.beta(2, 5, 200)),
        ("small_n12", rng.uniform(0, 1, 12)),
    ]:
        r = ks_2samp(p, 1 - p, method="exact")
        vsbc.append({"name": name, "p": p.tolist(), "statistic": float(r.statistic),
                     "p_value": float(r.pvalue)})
        print(f"{name}: D={r.statistic:.4g} p={r.pvalue:.4g}")
    with open(os.path.join(args.out, "vsbc.json"), "w") as f:
        json.dump({"cases": vsbc}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
