//! Pareto-smoothed importance sampling: the diagnostic k̂, smoothed weights and resampling.
//!
//! Input: log importance ratios log p̃(w_s) − log q(w_s) for draws w_s ~ q. Output: k̂, the
//! shape of a generalized Pareto distribution fitted to the largest M = ⌈min(S/5, 3√S)⌉
//! ratios (above the (M+1)-th largest) by Zhang & Stephens' (2009) profile-likelihood grid
//! method, shrunk toward 0.5 by the weakly informative prior of Vehtari et al. (n·k + 5)/(n + 10).
//! Reading (Stan, loo): k̂ ≤ 0.7 means the importance ratios, and so q, are usable; larger
//! values mean q misses mass of the posterior. [`smooth`] replaces the M largest ratios by
//! the fitted distribution's expected order statistics (PSIS proper); [`resample`] draws
//! indices by those weights (Pareto-smoothed importance resampling, as Pathfinder does).
//!
//! Two conventions ([`Convention`]) differ in small details: [`Convention::Loo`], R's loo
//! package with r_eff = 1 (the tail above; every grid point of the fit kept), used by [`smooth`]
//! and [`pareto_k`]; and [`Convention::ArviZ`], `arviz_stats`' `psislw` (tail length
//! ⌊3√(S/r_eff)⌋ when S·r_eff > 225, else ⌊S/5⌋; grid points of weight below 10 ε dropped
//! from the posterior mean of θ), used by PSIS-LOO (`posterior::loo`) to agree with ArviZ to
//! rounding.
//!
//! # Reference
//! Vehtari, Simpson, Gelman, Yao, Gabry, "Pareto smoothed importance sampling", JMLR 25
//! (2024); Zhang & Stephens, "A new and efficient estimation method for the generalized
//! Pareto distribution", Technometrics 51 (2009).

use rand::RngCore;

use crate::density::{LogDensity, Want};
use crate::posterior::Posterior;

/// What Pareto-smoothed importance resampling of a pool of draws found and did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resampling {
    /// k̂ of the importance ratios of the pool (`None`: too few draws to fit a tail).
    pub khat: Option<f64>,
    /// The importance-sampling effective sample size 1 / Σ w̃ₛ² of the pool.
    pub ess: f64,
    /// Draws in the pool.
    pub pool: usize,
    /// Whether the output draws were resampled by the weights (`false`: the pool as it is).
    pub resampled: bool,
}

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
    tail_fit(log_ratios, Convention::Loo).map(|t| t.khat)
}

/// Whose details of PSIS to follow: the tail length M and the grid of the generalized Pareto
/// fit. k̂ and the smoothed weights of the two agree up to the difference in M.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Convention {
    /// R's loo package with r_eff = 1: M = ⌈min(S/5, 3√S)⌉, every grid point kept.
    Loo,
    /// `arviz_stats`' `psislw` (ArviZ 1.x): M = ⌊3√(S/r_eff)⌋ when S·r_eff > 225, else
    /// ⌊S/5⌋; grid points whose normalised weight is below 10 ε are dropped.
    ArviZ {
        /// Relative efficiency of the draws (1 for independent draws).
        r_eff: f64,
    },
}

impl Convention {
    /// The number M of largest ratios in the tail, for S ratios.
    pub fn tail_len(self, s: usize) -> usize {
        let s = s as f64;
        let m = match self {
            Convention::Loo => (0.2 * s).min(3.0 * s.sqrt()).ceil(),
            Convention::ArviZ { r_eff } if s * r_eff > 225.0 => (3.0 * (s / r_eff).sqrt()).floor(),
            Convention::ArviZ { .. } => (s / 5.0).floor(),
        };
        m as usize
    }

    fn drops_negligible_grid_points(self) -> bool {
        matches!(self, Convention::ArviZ { .. })
    }
}

/// The generalized Pareto fit to the largest ratios.
struct TailFit {
    /// Indices of the M tail ratios, in ascending order of their ratio.
    tail: Vec<usize>,
    /// The largest ratio, the scale of the exceedances.
    top: f64,
    /// exp(cutoff − top): the exceedances are exp(r − top) − base.
    base: f64,
    /// k̂ shrunk toward 0.5 (as reported and used for smoothing).
    khat: f64,
    /// σ̂ of the exceedances on the exp(r − top) scale; 0 for a constant tail.
    sigma: f64,
}

fn tail_fit(log_ratios: &[f64], convention: Convention) -> Option<TailFit> {
    if log_ratios.iter().any(|r| r.is_nan() || *r == f64::INFINITY) {
        return None;
    }
    let m = convention.tail_len(log_ratios.len());
    if m < 5 || m + 1 > log_ratios.len() {
        return None;
    }
    let mut order: Vec<usize> = (0..log_ratios.len()).collect();
    order.sort_by(|&a, &b| log_ratios[b].total_cmp(&log_ratios[a]));
    let (top, cut) = (log_ratios[order[0]], log_ratios[order[m]]);
    if !cut.is_finite() && cut != f64::NEG_INFINITY {
        return None;
    }
    // Exceedances over the cutoff, scaled by exp(−top) (k̂ does not depend on the scale).
    let base = (cut - top).exp();
    let mut tail: Vec<usize> = order[..m].to_vec();
    tail.reverse();
    if top - cut <= 1e-9 * top.abs().max(1.0) {
        return Some(TailFit {
            tail,
            top,
            base,
            khat: 0.0,
            sigma: 0.0,
        });
    }
    let x: Vec<f64> = tail.iter().map(|&i| (log_ratios[i] - top).exp() - base).collect();
    let (k, theta_hat) = gpd_fit(&x, convention.drops_negligible_grid_points());
    let n = m as f64;
    Some(TailFit {
        tail,
        top,
        base,
        khat: (n * k + 10.0 * 0.5) / (n + 10.0),
        sigma: -k / theta_hat,
    })
}

/// Pareto-smoothed importance weights: the result of [`smooth`].
#[derive(Debug, Clone)]
pub struct Smoothed {
    /// Normalised log weights (log-sum-exp 0), one per ratio; −∞ where log p̃ was −∞.
    pub log_weights: Vec<f64>,
    /// k̂ of the tail fit, `None` when there were too few ratios to fit one (the weights are
    /// then the raw normalised ratios).
    pub khat: Option<f64>,
}

impl Smoothed {
    /// The importance-sampling effective sample size 1 / Σ w̃ₛ² of the normalised weights.
    pub fn ess(&self) -> f64 {
        1.0 / self.log_weights.iter().map(|l| (2.0 * l).exp()).sum::<f64>()
    }
}

/// Pareto-smoothed importance sampling (Vehtari et al. 2024, §3): the M largest ratios are
/// replaced by the expected order statistics of the fitted generalized Pareto distribution
/// (capped at the largest raw ratio), then all are normalised. NaN ratios count as −∞.
/// The tail follows [`Convention::Loo`].
pub fn smooth(log_ratios: &[f64]) -> Smoothed {
    smooth_with(log_ratios, Convention::Loo)
}

/// [`smooth`] with the tail length and fit details of `convention`.
pub fn smooth_with(log_ratios: &[f64], convention: Convention) -> Smoothed {
    let mut lw: Vec<f64> = log_ratios
        .iter()
        .map(|r| if r.is_nan() { f64::NEG_INFINITY } else { *r })
        .collect();
    let fit = tail_fit(&lw, convention);
    if let Some(t) = &fit {
        let m = t.tail.len() as f64;
        for (j, &i) in t.tail.iter().enumerate() {
            let p = (j as f64 + 0.5) / m;
            let q = gpd_quantile(p, t.khat, t.sigma);
            lw[i] = (t.top + (t.base + q).ln()).min(t.top);
        }
    }
    let lse = super::log_sum_exp(&lw);
    for l in &mut lw {
        *l -= lse;
    }
    Smoothed {
        log_weights: lw,
        khat: fit.map(|t| t.khat),
    }
}

/// n indices drawn with replacement with probabilities exp(log_weights) (normalised).
pub fn resample(log_weights: &[f64], n: usize, rng: &mut dyn RngCore) -> Vec<usize> {
    let mut cum = Vec::with_capacity(log_weights.len());
    let mut acc = 0.0;
    for l in log_weights {
        acc += l.exp();
        cum.push(acc);
    }
    (0..n)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * acc;
            cum.partition_point(|c| *c <= u).min(log_weights.len() - 1)
        })
        .collect()
}

/// The p-quantile of the generalized Pareto distribution with shape k and scale σ.
fn gpd_quantile(p: f64, k: f64, sigma: f64) -> f64 {
    let log_tail = (-p).ln_1p();
    if k.abs() < 1e-12 {
        -sigma * log_tail
    } else {
        sigma * (-k * log_tail).exp_m1() / k
    }
}

/// Zhang & Stephens' estimate of the generalized Pareto shape k (k > 0 for heavy tails) and
/// their θ̂ (σ̂ = −k/θ̂) from exceedances `x` (ascending, positive largest value). With
/// `drop_negligible`, θ̂ averages only the grid points of normalised weight ≥ 10 ε (ArviZ).
fn gpd_fit(x: &[f64], drop_negligible: bool) -> (f64, f64) {
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
    let theta_hat: f64 = if drop_negligible {
        let kept: Vec<(f64, f64)> = thetas
            .iter()
            .zip(&finite)
            .map(|(t, l)| (*t, (l - lse).exp()))
            .filter(|(_, w)| *w >= 10.0 * f64::EPSILON)
            .collect();
        let total: f64 = kept.iter().map(|(_, w)| w).sum();
        kept.iter().map(|(t, w)| t * (w / total)).sum()
    } else {
        thetas.iter().zip(&finite).map(|(t, l)| t * (l - lse).exp()).sum()
    };
    let k = x.iter().map(|v| (-theta_hat * v).ln_1p()).sum::<f64>() / n as f64;
    (k, theta_hat)
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
    fn tail_lengths_follow_each_convention() {
        assert_eq!(Convention::Loo.tail_len(1000), 95);
        assert_eq!(Convention::Loo.tail_len(200), 40);
        assert_eq!(Convention::ArviZ { r_eff: 1.0 }.tail_len(1000), 94);
        assert_eq!(Convention::ArviZ { r_eff: 1.0 }.tail_len(200), 40);
        assert_eq!(Convention::ArviZ { r_eff: 0.5 }.tail_len(1000), 134);
    }

    #[test]
    fn the_conventions_differ_only_slightly_on_the_same_ratios() {
        // q = N(0, 1), p = N(0, 2²): a heavy tail; M = 95 vs 94 moves k̂ a little.
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        let lr: Vec<f64> = (0..1000)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                0.375 * z * z
            })
            .collect();
        let loo = smooth_with(&lr, Convention::Loo);
        let arviz = smooth_with(&lr, Convention::ArviZ { r_eff: 1.0 });
        let (a, b) = (loo.khat.unwrap(), arviz.khat.unwrap());
        assert!((a - b).abs() > 1e-9 && (a - b).abs() < 0.05, "{a} vs {b}");
    }

    #[test]
    fn too_few_or_invalid_ratios_give_none_and_constant_ones_zero() {
        assert_eq!(pareto_k(&[0.0; 10]), None);
        assert_eq!(pareto_k(&[f64::NAN; 100]), None);
        assert_eq!(pareto_k(&[1.0; 100]), Some(0.0));
    }

    #[test]
    fn smoothed_weights_are_normalised_and_change_only_the_tail() {
        // q = N(0, 1), p = N(0, 2²): a heavy ratio tail.
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let lr: Vec<f64> = (0..4000)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                0.375 * z * z
            })
            .collect();
        let s = smooth(&lr);
        let total: f64 = s.log_weights.iter().map(|l| l.exp()).sum();
        assert!((total - 1.0).abs() < 1e-12);
        // The order of the ratios is kept, and only the M = ⌈min(S/5, 3√S)⌉ largest change
        // relative to each other (the body keeps its raw ratios up to the normalisation).
        let mut order: Vec<usize> = (0..lr.len()).collect();
        order.sort_by(|&i, &j| lr[i].total_cmp(&lr[j]));
        assert!(order
            .windows(2)
            .all(|p| s.log_weights[p[0]] <= s.log_weights[p[1]] + 1e-12));
        let m = (3.0 * 4000f64.sqrt()).ceil() as usize;
        let body = &order[..4000 - m];
        let shift = s.log_weights[body[0]] - lr[body[0]];
        assert!(body
            .iter()
            .all(|&i| (s.log_weights[i] - lr[i] - shift).abs() < 1e-9));
        let tail = &order[4000 - m..];
        assert!(tail
            .iter()
            .any(|&i| (s.log_weights[i] - lr[i] - shift).abs() > 1e-6));
        assert_eq!(s.khat, pareto_k(&lr));
        let ess = s.ess();
        assert!(ess > 1.0 && ess < 4000.0, "ESS {ess}");
    }

    #[test]
    fn equal_weights_have_full_ess_and_resampling_follows_the_weights() {
        let s = smooth(&[0.0; 100]);
        assert!((s.ess() - 100.0).abs() < 1e-9);
        let lw = [f64::NEG_INFINITY, 0.75f64.ln(), 0.25f64.ln()];
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let idx = resample(&lw, 8000, &mut rng);
        assert!(idx.iter().all(|&i| i != 0));
        let ones = idx.iter().filter(|&&i| i == 1).count() as f64 / 8000.0;
        assert!((ones - 0.75).abs() < 0.02, "{ones}");
    }
}
