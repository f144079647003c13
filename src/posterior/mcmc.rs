//! Convergence diagnostics of MCMC draws: rank-normalised split R̂ and bulk/tail effective
//! sample sizes.
//!
//! Input: the draws of one quantity as one slice per chain. Output: numbers. The
//! definitions are those of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R̂ for assessing convergence
//! of MCMC", Bayesian Analysis 16(2), as Stan and ArviZ compute them: every chain is split
//! in half; R̂ is the larger of the rank-normalised split R̂ of the draws and of their
//! folded values |x − median|; the bulk ESS is the ESS of the rank-normalised split chains;
//! the tail ESS is the smaller of the ESS of the indicators x ≤ q₅ and x ≤ q₉₅. The ESS uses
//! Geyer's initial monotone sequence on the multi-chain autocorrelation (Stan's estimator).

use crate::autodiff::special::log_phi;

/// R̂ above this means the chains have not mixed (Vehtari et al. 2021's threshold).
pub const RHAT_OK: f64 = 1.01;

/// Bulk or tail ESS below this many draws per chain is too few for reliable estimates
/// (Stan warns below 100 per chain).
pub const ESS_PER_CHAIN_OK: f64 = 100.0;

/// R̂, bulk ESS and tail ESS of one quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Convergence {
    /// Rank-normalised split R̂ (the maximum of the bulk and folded versions).
    pub rhat: f64,
    /// Bulk effective sample size.
    pub ess_bulk: f64,
    /// Tail effective sample size (5 % and 95 % quantiles).
    pub ess_tail: f64,
}

/// The diagnostics of one quantity from its draws, one slice per chain. Chains shorter than
/// 4 draws are left out (they cannot be split); with none left, everything is NaN.
pub fn convergence(chains: &[&[f64]]) -> Convergence {
    let split = split_chains(chains);
    if split.is_empty() || split.iter().flatten().any(|v| !v.is_finite()) {
        return Convergence {
            rhat: f64::NAN,
            ess_bulk: f64::NAN,
            ess_tail: f64::NAN,
        };
    }
    let all: Vec<f64> = split.iter().flatten().copied().collect();
    if all.iter().all(|v| (v - all[0]).abs() == 0.0) {
        // a constant: nothing to mix
        return Convergence {
            rhat: 1.0,
            ess_bulk: all.len() as f64,
            ess_tail: all.len() as f64,
        };
    }
    let z = rank_normalise(&split);
    let median = quantile(&all, 0.5);
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|v| (v - median).abs()).collect())
        .collect();
    let zf = rank_normalise(&folded);
    let rhat = split_rhat(&z).max(split_rhat(&zf));
    let ess_bulk = ess(&z);
    let tail = |p: f64| {
        let q = quantile(&all, p);
        let ind: Vec<Vec<f64>> = split
            .iter()
            .map(|c| c.iter().map(|&v| f64::from(u8::from(v <= q))).collect())
            .collect();
        ess(&ind)
    };
    Convergence {
        rhat,
        ess_bulk,
        ess_tail: tail(0.05).min(tail(0.95)),
    }
}

/// Each chain cut into its first and second half (the middle draw of an odd chain dropped).
fn split_chains(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for c in chains.iter().filter(|c| c.len() >= 4) {
        let h = c.len() / 2;
        out.push(c[..h].to_vec());
        out.push(c[c.len() - h..].to_vec());
    }
    // chains of different lengths (a run stopped by Ctrl-C): cut all to the shortest
    let n = out.iter().map(Vec::len).min().unwrap_or(0);
    for c in &mut out {
        c.truncate(n);
    }
    out
}

/// Φ⁻¹((r − 3/8) / (S + 1/4)) of the pooled ranks r (average ranks for ties), per chain.
fn rank_normalise(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = all.len();
    let mut order: Vec<usize> = (0..s).collect();
    order.sort_by(|&a, &b| all[a].total_cmp(&all[b]));
    let mut rank = vec![0.0; s];
    let mut i = 0;
    while i < s {
        let mut j = i;
        while j + 1 < s && all[order[j + 1]].total_cmp(&all[order[i]]).is_eq() {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            rank[k] = r;
        }
        i = j + 1;
    }
    let z: Vec<f64> = rank
        .iter()
        .map(|r| probit((r - 0.375) / (s as f64 + 0.25)))
        .collect();
    let n = chains.first().map_or(0, Vec::len);
    z.chunks(n.max(1)).map(<[f64]>::to_vec).collect()
}

/// The split R̂ of equally long chains: √(var⁺ / W).
fn split_rhat(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len() as f64;
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let grand = mean(&means);
    let b = n / (m - 1.0).max(1.0) * means.iter().map(|x| (x - grand).powi(2)).sum::<f64>();
    let w = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (n - 1.0))
        .sum::<f64>()
        / m;
    let var_plus = (n - 1.0) / n * w + b / n;
    (var_plus / w).sqrt()
}

/// The effective sample size of equally long chains (Stan's estimator, as in ArviZ).
fn ess(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len();
    let n = chains[0].len();
    let total = (m * n) as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let acov = |t: usize| -> f64 {
        chains
            .iter()
            .zip(&means)
            .map(|(c, mu)| (0..n - t).map(|i| (c[i] - mu) * (c[i + t] - mu)).sum::<f64>() / n as f64)
            .sum::<f64>()
            / m as f64
    };
    let acov0 = acov(0);
    let mean_var = acov0 * n as f64 / (n as f64 - 1.0);
    let mut var_plus = mean_var * (n as f64 - 1.0) / n as f64;
    if m > 1 {
        let grand = mean(&means);
        var_plus += means.iter().map(|x| (x - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0);
    }
    if var_plus <= 0.0 {
        return f64::NAN;
    }
    let rho = |t: usize| 1.0 - (mean_var - acov(t)) / var_plus;
    let mut rho_hat = vec![0.0; n];
    rho_hat[0] = 1.0;
    let mut even = 1.0;
    let mut odd = rho(1);
    if n > 1 {
        rho_hat[1] = odd;
    }
    let mut t = 1;
    while t < n.saturating_sub(3) && even + odd > 0.0 {
        even = rho(t + 1);
        odd = rho(t + 2);
        if even + odd >= 0.0 {
            rho_hat[t + 1] = even;
            rho_hat[t + 2] = odd;
        }
        t += 2;
    }
    let max_t = t.saturating_sub(2).max(1);
    if even > 0.0 && max_t + 1 < n {
        rho_hat[max_t + 1] = even;
    }
    // Geyer's initial monotone sequence
    let mut t = 1;
    while t + 2 <= max_t {
        if rho_hat[t + 1] + rho_hat[t + 2] > rho_hat[t - 1] + rho_hat[t] {
            rho_hat[t + 1] = (rho_hat[t - 1] + rho_hat[t]) / 2.0;
            rho_hat[t + 2] = rho_hat[t + 1];
        }
        t += 2;
    }
    let extra = rho_hat.get(max_t + 1).copied().unwrap_or(0.0);
    let tau =
        (-1.0 + 2.0 * rho_hat[..=max_t.min(n - 1)].iter().sum::<f64>() + extra).max(1.0 / total.log10());
    total / tau
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// The p-quantile of x by linear interpolation (NumPy's default).
fn quantile(x: &[f64], p: f64) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    super::quantile_sorted(&s, p)
}

/// Φ⁻¹(p) for p in (0, 1): Acklam's rational approximation (relative error 1.2e-9),
/// polished by one Newton step on log Φ.
pub fn probit(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    let x = if p < P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    // Newton on log Φ(x) = log p: x ← x − (log Φ(x) − log p) Φ(x)/φ(x)
    let lphi = log_phi(x);
    let log_density = -0.5 * x * x - 0.5 * (2.0 * std::f64::consts::PI).ln();
    x - (lphi - p.ln()) * (lphi - log_density).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn probit_inverts_the_normal_cdf() {
        for &x in &[-6.0, -2.5, -1.0, 0.0, 0.3, 1.7, 4.0] {
            let p = log_phi(x).exp();
            assert!((probit(p) - x).abs() < 1e-9, "{x}: {}", probit(p));
        }
    }

    fn iid_chains(m: usize, n: usize, shift: f64) -> Vec<Vec<f64>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        (0..m)
            .map(|k| {
                (0..n)
                    .map(|_| {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        z + shift * k as f64
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn independent_draws_have_rhat_one_and_ess_near_the_count() {
        let c = iid_chains(4, 500, 0.0);
        let refs: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let d = convergence(&refs);
        assert!(d.rhat < 1.01, "{d:?}");
        assert!(d.ess_bulk > 1500.0 && d.ess_bulk < 2600.0, "{d:?}");
        assert!(d.ess_tail > 1200.0 && d.ess_tail < 2600.0, "{d:?}");
    }

    #[test]
    fn chains_stuck_in_different_places_have_a_large_rhat() {
        let c = iid_chains(4, 300, 2.0);
        let refs: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let d = convergence(&refs);
        assert!(d.rhat > 1.5, "{d:?}");
    }

    #[test]
    fn autocorrelated_draws_have_a_small_ess() {
        // AR(1) with φ = 0.9: ESS ≈ S (1 − φ)/(1 + φ) ≈ S / 19
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let c: Vec<Vec<f64>> = (0..4)
            .map(|_| {
                let mut x = 0.0;
                (0..2000)
                    .map(|_| {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        x = 0.9 * x + z;
                        x
                    })
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        let d = convergence(&refs);
        assert!(d.ess_bulk > 250.0 && d.ess_bulk < 700.0, "{d:?}");
    }
}
