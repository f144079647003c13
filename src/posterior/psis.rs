//! Pareto-smoothed importance sampling diagnostic k̂.
//!
//! Input: log importance ratios log p̃(w_s) − log q(w_s) for draws w_s ~ q. Output: k̂, the
//! shape of a generalized Pareto distribution fitted to the largest M = ⌈min(S/5, 3√S)⌉
//! ratios (above the (M+1)-th largest) by Zhang & Stephens' (2009) profile-likelihood grid
//! method, shrunk toward 0.5 by the weakly informative prior of Vehtari et al. (n·k + 5)/(n + 10).
//! Reading (Stan, loo): k̂ ≤ 0.7 means the importance ratios, and so q, are usable; larger
//! values mean q misses mass of the posterior.
//!
//! # Reference
//! Vehtari, Simpson, Gelman, Yao, Gabry, "Pareto smoothed importance sampling", JMLR 25
//! (2024); Zhang & Stephens, "A new and efficient estimation method for the generalized
//! Pareto distribution", Technometrics 51 (2009).

use rand::RngCore;

use crate::density::{LogDensity, Want};
use crate::posterior::Posterior;

/// The threshold below which PSIS considers an approximation usable.
pub const KHAT_OK: f64 = 0.7;

/// k̂ of a fitted posterior: `n` draws from q, ratios log p̃(w | θ) − log q(w). `None` where q
/// has no density (particles) or [`pareto_k`] gives none.
pub fn posterior_khat(
    model: &dyn LogDensity,
    post: &Posterior,
    n: usize,
    rng: &mut dyn RngCore,
) -> Option<f64> {
    let w = post.draw(n, rng);
    let log_q = post.log_q(&w)?;
    let log_p = model.eval(&post.theta, &w, Want::VALUE).values;
    let ratios: Vec<f64> = log_p.iter().zip(log_q.iter()).map(|(p, q)| p - q).collect();
    pareto_k(&ratios)
}

/// k̂ from log importance ratios; `None` when there are too few ratios (the tail needs at
/// least 5 points) or a ratio is NaN or +∞. Ratios that are constant up to rounding (q equal
/// to the posterior) give k̂ = 0.
pub fn pareto_k(log_ratios: &[f64]) -> Option<f64> {
    if log_ratios.iter().any(|r| r.is_nan() || *r == f64::INFINITY) {
        return None;
    }
    let s = log_ratios.len() as f64;
    let m = (0.2 * s).min(3.0 * s.sqrt()).ceil() as usize;
    if m < 5 || m + 1 > log_ratios.len() {
        return None;
    }
    let mut sorted = log_ratios.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let (top, cut) = (sorted[0], sorted[m]);
    if !cut.is_finite() && cut != f64::NEG_INFINITY {
        return None;
    }
    // Exceedances over the cutoff, scaled by exp(−top) (k̂ does not depend on the scale).
    let base = (cut - top).exp();
    if top - cut <= 1e-9 * top.abs().max(1.0) {
        return Some(0.0);
    }
    let mut x: Vec<f64> = sorted[..m].iter().map(|r| (r - top).exp() - base).collect();
    x.reverse();
    let k = gpd_shape(&x);
    let n = m as f64;
    Some((n * k + 10.0 * 0.5) / (n + 10.0))
}

/// Zhang & Stephens' estimate of the generalized Pareto shape k from exceedances `x`
/// (ascending, positive largest value), with k > 0 for heavy tails.
fn gpd_shape(x: &[f64]) -> f64 {
    let n = x.len();
    let grid = 30 + (n as f64).sqrt() as usize;
    let prior = 3.0;
    let quartile = x[((n as f64) / 4.0 + 0.5).floor() as usize - 1];
    let x_max = x[n - 1];
    let thetas: Vec<f64> = (1..=grid)
        .map(|j| 1.0 / x_max + (1.0 - (grid as f64 / (j as f64 - 0.5)).sqrt()) / prior / quartile)
        .collect();
    let profile: Vec<f64> = thetas
        .iter()
        .map(|&t| {
            let a = -t;
            let k = x.iter().map(|v| (a * v).ln_1p()).sum::<f64>() / n as f64;
            n as f64 * ((a / k).ln() - k - 1.0)
        })
        .collect();
    let finite: Vec<f64> = profile
        .iter()
        .map(|l| if l.is_finite() { *l } else { f64::NEG_INFINITY })
        .collect();
    let lse = super::log_sum_exp(&finite);
    let theta_hat: f64 = thetas.iter().zip(&finite).map(|(t, l)| t * (l - lse).exp()).sum();
    x.iter().map(|v| (-theta_hat * v).ln_1p()).sum::<f64>() / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn pareto_tailed_ratios_give_their_shape() {
        // r = u^(−k) has a Pareto tail with shape k. One k̂ from ~400 tail points has a
        // standard error near 0.08, so average over eight independent sets.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for k in [0.3, 0.8, 1.2] {
            let mean_khat = (0..8)
                .map(|_| {
                    let lr: Vec<f64> = (0..20_000).map(|_| -k * rng.random::<f64>().ln()).collect();
                    pareto_k(&lr).unwrap()
                })
                .sum::<f64>()
                / 8.0;
            assert!((mean_khat - k).abs() < 0.08, "k = {k}, mean k̂ = {mean_khat}");
        }
    }

    #[test]
    fn a_proposal_wider_than_the_target_gives_small_khat() {
        // q = N(0, 1.5²), p = N(0, 1): bounded ratios, k̂ well below 0.5.
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let lr: Vec<f64> = (0..4000)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                let w = 1.5 * z;
                -0.5 * w * w + 0.5 * z * z + 1.5f64.ln()
            })
            .collect();
        assert!(pareto_k(&lr).unwrap() < 0.3);
    }

    #[test]
    fn a_proposal_narrower_than_the_target_gives_large_khat() {
        // q = N(0, 1), p = N(0, 2²): the ratio tail has shape 1 − 1/4 = 0.75.
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let lr: Vec<f64> = (0..20_000)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                0.5 * z * z * (1.0 - 0.25)
            })
            .collect();
        let khat = pareto_k(&lr).unwrap();
        assert!(khat > KHAT_OK - 0.05 && khat < 0.95, "k̂ = {khat}");
    }

    #[test]
    fn too_few_or_invalid_ratios_give_none_and_constant_ones_zero() {
        assert_eq!(pareto_k(&[0.0; 10]), None);
        assert_eq!(pareto_k(&[f64::NAN; 100]), None);
        assert_eq!(pareto_k(&[1.0; 100]), Some(0.0));
    }
}
