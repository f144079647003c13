//! PSIS-LOO: leave-one-out cross-validation from posterior draws, model comparison by it
//! (ArviZ's `compare`, stacking weights) and LOO-PIT values.
//!
//! Input: the S × N pointwise log-likelihood log p(y_n | w_s) (rows = draws, columns =
//! observations) and, when the draws come from an approximation q instead of the posterior,
//! the per-draw correction c_s = log p̃(w_s | y) − log q(w_s). Output: a [`Loo`] with the
//! totals and, per observation, elpd_n, k̂_n and p_loo,n; [`compare`] ranks several of them.
//! Nothing here draws random numbers except [`loo_pit`]'s tie-breaking, from a generator
//! the caller passes in.
//!
//! # Formulas
//! Per observation n the log importance ratios of the leave-one-out posterior are
//! r_sn = −log p(y_n | w_s) (exact draws) or r_sn = c_s − log p(y_n | w_s) (draws from q;
//! Magnusson, Andersen, Jonasson & Vehtari 2019, eq. 5). They are Pareto-smoothed one
//! observation at a time ([`psis::smooth_with`] with [`Convention::ArviZ`]: tail length
//! ⌊3√(S/r_eff)⌋, or ⌊S/5⌋ when S·r_eff ≤ 225), giving normalised log weights log w̃_sn and
//! k̂_n. Then
//!
//! - elpd_n = log Σ_s w̃_sn p(y_n | w_s), elpd_loo = Σ_n elpd_n,
//!   se = √(N · var(elpd_n)) (variance with divisor N, as ArviZ);
//! - lppd_n = log (1/S) Σ_s p(y_n | w_s) for exact draws; with a correction, the
//!   full-posterior expectation by self-normalised PSIS: lppd_n = log Σ_s ṽ_s p(y_n | w_s),
//!   with ṽ the smoothed, normalised weights of c alone (its k̂ is [`Loo::khat_correction`]);
//! - p_loo,n = lppd_n − elpd_n, p_loo = Σ_n p_loo,n, lppd = Σ_n lppd_n.
//!
//! Without a correction every number equals `arviz_stats.loo` (ArviZ 1.x) to rounding
//! (`tests/it/loo.rs` checks 1e-6 on three posteriordb posteriors). With one, elpd_n, se and
//! k̂_n equal `arviz_stats.loo_approximate_posterior`; p_loo and lppd differ on purpose:
//! ArviZ takes lppd_n as the plain mean over the draws of q, which estimates a q-average,
//! not the posterior's, so its p_loo is not the effective number of parameters.
//!
//! k̂_n > good_k = min(1 − 1/log10 S, 0.7) (ArviZ's threshold) marks observations whose
//! elpd_n is unreliable; k̂_n is NaN when S is too small for a tail of 5 draws (the weights
//! are then the raw normalised ratios).
//!
//! # Reference
//! Vehtari, Gelman & Gabry, "Practical Bayesian model evaluation using leave-one-out
//! cross-validation and WAIC", Statistics and Computing 27 (2017); Vehtari, Simpson, Gelman,
//! Yao & Gabry, "Pareto smoothed importance sampling", JMLR 25 (2024); Magnusson, Andersen,
//! Jonasson & Vehtari, "Bayesian leave-one-out cross-validation for large data", ICML 2019;
//! Yao, Vehtari, Simpson & Gelman, "Using stacking to average Bayesian predictive
//! distributions", Bayesian Analysis 13 (2018); Säilynoja, Bürkner & Vehtari, "Graphical test
//! for discrete uniformity and its applications in goodness-of-fit evaluation and multiple
//! sample comparison", Statistics and Computing 32 (2022).

use std::cmp::Ordering;

use nalgebra::DMatrix;
use rand::RngCore;

use super::log_sum_exp;
use super::psis::{self, Convention};

/// PSIS-LOO of one observation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointLoo {
    /// elpd_n = log Σ_s w̃_sn p(y_n | w_s).
    pub elpd: f64,
    /// k̂_n of the observation's importance ratios (NaN: too few draws to fit a tail).
    pub khat: f64,
    /// p_loo,n = lppd_n − elpd_n.
    pub p_loo: f64,
}

/// PSIS-LOO of a model: totals, pointwise values and the k̂ diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct Loo {
    /// Σ_n elpd_n.
    pub elpd_loo: f64,
    /// Standard error of elpd_loo: √(N · var(elpd_n)).
    pub se: f64,
    /// Effective number of parameters Σ_n (lppd_n − elpd_n).
    pub p_loo: f64,
    /// Σ_n lppd_n, the in-sample log pointwise predictive density (see the module doc for
    /// its meaning with a correction).
    pub lppd: f64,
    /// Number of draws S.
    pub n_draws: usize,
    /// Number of observations N.
    pub n_obs: usize,
    /// Per observation, in column order.
    pub pointwise: Vec<PointLoo>,
    /// Observations with k̂_n > `good_k` (ArviZ warns when there is one).
    pub n_high_k: usize,
    /// ArviZ's k̂ threshold min(1 − 1/log10 S, 0.7) (0.7 for S ≤ 1).
    pub good_k: f64,
    /// Whether the draws came from an approximation and were corrected by log p̃ − log q.
    pub corrected: bool,
    /// k̂ of the correction log p̃ − log q alone (how well q covers the posterior); `None`
    /// without a correction or with too few draws.
    pub khat_correction: Option<f64>,
}

impl Loo {
    /// Whether some k̂_n exceeds `good_k` (ArviZ's `warning`).
    pub fn warning(&self) -> bool {
        self.n_high_k > 0
    }
}

/// ArviZ's k̂ threshold for S draws: min(1 − 1/log10 S, 0.7), and 0.7 for S ≤ 1.
pub fn good_k(n_draws: usize) -> f64 {
    if n_draws > 1 {
        (1.0 - 1.0 / (n_draws as f64).log10()).min(0.7)
    } else {
        0.7
    }
}

/// PSIS-LOO from an S × N log-likelihood matrix (rows = draws).
///
/// `log_correction`: for draws from an approximation q, log p̃(w_s | y) − log q(w_s) per draw
/// (any additive constant; the weights are normalised); `None` for exact posterior draws
/// (MCMC). `r_eff`: the relative efficiency of the draws (1 for independent draws), which
/// sets the tail length. The formulas are in the module doc.
///
/// # Panics
/// If `log_correction` does not have one value per row of `log_lik` or `r_eff` is not
/// positive: the caller computes both from the same draws.
pub fn psis_loo(log_lik: &DMatrix<f64>, log_correction: Option<&[f64]>, r_eff: f64) -> Loo {
    let (s, n) = log_lik.shape();
    check_inputs(s, log_correction, r_eff);
    let convention = Convention::ArviZ { r_eff };
    let full = log_correction.map(|c| psis::smooth_with(c, convention));
    let mut pointwise = Vec::with_capacity(n);
    let mut lppd = 0.0;
    for col in log_lik.column_iter() {
        let ll: Vec<f64> = col.iter().copied().collect();
        let (weights, khat) = loo_weights(&ll, log_correction, convention);
        let elpd = weighted_log_mean(&weights, &ll);
        let lppd_n = match &full {
            Some(f) => weighted_log_mean(&f.log_weights, &ll),
            None => log_sum_exp(&ll) - (s as f64).ln(),
        };
        lppd += lppd_n;
        pointwise.push(PointLoo {
            elpd,
            khat,
            p_loo: lppd_n - elpd,
        });
    }
    let elpd_i: Vec<f64> = pointwise.iter().map(|p| p.elpd).collect();
    let good_k = good_k(s);
    Loo {
        elpd_loo: elpd_i.iter().sum(),
        se: (n as f64 * variance(&elpd_i)).sqrt(),
        p_loo: pointwise.iter().map(|p| p.p_loo).sum(),
        lppd,
        n_draws: s,
        n_obs: n,
        n_high_k: pointwise.iter().filter(|p| p.khat > good_k).count(),
        good_k,
        corrected: log_correction.is_some(),
        khat_correction: full.and_then(|f| f.khat),
        pointwise,
    }
}

/// The smoothed, normalised PSIS-LOO log weights log w̃_sn, S × N (each column has
/// log-sum-exp 0): what [`psis_loo`] weights observation n's draws by. Arguments as there.
///
/// # Panics
/// As [`psis_loo`].
pub fn loo_log_weights(log_lik: &DMatrix<f64>, log_correction: Option<&[f64]>, r_eff: f64) -> DMatrix<f64> {
    let (s, n) = log_lik.shape();
    check_inputs(s, log_correction, r_eff);
    let convention = Convention::ArviZ { r_eff };
    let mut out = DMatrix::zeros(s, n);
    for (j, col) in log_lik.column_iter().enumerate() {
        let ll: Vec<f64> = col.iter().copied().collect();
        let (weights, _) = loo_weights(&ll, log_correction, convention);
        out.column_mut(j).copy_from_slice(&weights);
    }
    out
}

fn check_inputs(s: usize, log_correction: Option<&[f64]>, r_eff: f64) {
    if let Some(c) = log_correction {
        assert_eq!(c.len(), s, "one log correction per draw (the caller's draws)");
    }
    assert!(r_eff > 0.0, "r_eff must be positive, got {r_eff}");
}

/// Normalised smoothed log weights and k̂ (NaN without a tail fit) of one observation.
fn loo_weights(ll: &[f64], correction: Option<&[f64]>, convention: Convention) -> (Vec<f64>, f64) {
    let ratios: Vec<f64> = match correction {
        Some(c) => c.iter().zip(ll).map(|(c, l)| c - l).collect(),
        None => ll.iter().map(|l| -l).collect(),
    };
    let sm = psis::smooth_with(&ratios, convention);
    (sm.log_weights, sm.khat.unwrap_or(f64::NAN))
}

/// log Σ_s exp(log_w_s + x_s).
fn weighted_log_mean(log_w: &[f64], x: &[f64]) -> f64 {
    let terms: Vec<f64> = log_w.iter().zip(x).map(|(w, v)| w + v).collect();
    log_sum_exp(&terms)
}

/// Variance with divisor n (NumPy's default); 0 for no values.
fn variance(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n
}

/// One row of a model comparison, as `az.compare` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// The model's name as given.
    pub name: String,
    /// 0 for the best model (highest elpd_loo), then 1, 2, … (ArviZ's `rank`).
    pub rank: usize,
    /// The model's elpd_loo.
    pub elpd_loo: f64,
    /// The model's p_loo.
    pub p_loo: f64,
    /// elpd_loo of the best model minus this one's (0 for the best).
    pub elpd_diff: f64,
    /// The model's own standard error of elpd_loo.
    pub se: f64,
    /// Standard error of elpd_diff from the pointwise differences d_n: √(N · var(d_n)).
    pub dse: f64,
    /// Stacking weight (the weights of all rows sum to 1).
    pub weight: f64,
    /// Whether some k̂_n of the model exceeds its `good_k`.
    pub warning: bool,
}

/// Compare models by PSIS-LOO, as `az.compare(…, method="stacking")`: rows sorted by
/// elpd_loo, best first, with differences and their standard errors against the best and
/// stacking weights ([`stacking_weights`]). The weights agree with ArviZ's to about 1e-4
/// (ArviZ stops scipy's SLSQP at its default tolerance; these are the optimum to ~1e-10).
///
/// # Errors
/// A message naming the models when they do not all have the same number of observations,
/// or when `models` is empty.
pub fn compare(models: &[(String, &Loo)]) -> Result<Vec<CompareRow>, String> {
    let Some((_, first)) = models.first() else {
        return Err("no models to compare".to_string());
    };
    if models.iter().any(|(_, l)| l.n_obs != first.n_obs) {
        let counts: Vec<String> = models
            .iter()
            .map(|(name, l)| format!("`{name}` ({})", l.n_obs))
            .collect();
        return Err(format!(
            "all models must have the same number of observations, but they have {}",
            counts.join(", ")
        ));
    }
    let mut order: Vec<usize> = (0..models.len()).collect();
    order.sort_by(|&a, &b| models[b].1.elpd_loo.total_cmp(&models[a].1.elpd_loo));
    let elpd_i = |k: usize| -> Vec<f64> { models[k].1.pointwise.iter().map(|p| p.elpd).collect() };
    let sorted: Vec<Vec<f64>> = order.iter().map(|&k| elpd_i(k)).collect();
    let weights = stacking_weights(&sorted);
    let best = &sorted[0];
    let best_elpd = models[order[0]].1.elpd_loo;
    Ok(order
        .iter()
        .enumerate()
        .map(|(rank, &k)| {
            let (name, l) = &models[k];
            let (elpd_diff, dse) = if rank == 0 {
                (0.0, 0.0)
            } else {
                let d: Vec<f64> = best.iter().zip(&sorted[rank]).map(|(a, b)| a - b).collect();
                (best_elpd - l.elpd_loo, (d.len() as f64 * variance(&d)).sqrt())
            };
            CompareRow {
                name: name.clone(),
                rank,
                elpd_loo: l.elpd_loo,
                p_loo: l.p_loo,
                elpd_diff,
                se: l.se,
                dse,
                weight: weights[rank],
                warning: l.warning(),
            }
        })
        .collect())
}

/// Stacking weights of K models from their pointwise elpd (`pointwise_elpd[k][n]`): the w on
/// the simplex maximising Σ_n log Σ_k w_k exp(elpd_{n,k}) (Yao et al. 2018, eq. 4).
///
/// The objective is concave; it is maximised by a few multiplicative (EM) steps followed by
/// Newton steps on the face of the simplex where the weights are positive, dropping a model
/// whose weight reaches 0 and adding back one whose gradient shows it would help, until the
/// optimality conditions hold (∂/∂w_k = N for every w_k > 0, ≤ N otherwise) to 1e-10
/// relative. Models with identical pointwise elpd share a flat direction; the weights then
/// come from where the steps stop. No models give no weights.
///
/// # Panics
/// If the models have different numbers of observations ([`compare`] checks).
pub fn stacking_weights(pointwise_elpd: &[Vec<f64>]) -> Vec<f64> {
    let k = pointwise_elpd.len();
    if k <= 1 {
        return vec![1.0; k];
    }
    let a = stacking_matrix(pointwise_elpd);
    Stacking { a: &a }.solve()
}

/// exp(elpd_{n,k} − max_k elpd_{n,k}), N × K: scaling a row does not move the optimum.
fn stacking_matrix(pointwise_elpd: &[Vec<f64>]) -> DMatrix<f64> {
    let n = pointwise_elpd[0].len();
    assert!(
        pointwise_elpd.iter().all(|e| e.len() == n),
        "every model has the same observations (checked in loo::compare)"
    );
    DMatrix::from_fn(n, pointwise_elpd.len(), |i, j| {
        let top = pointwise_elpd
            .iter()
            .map(|e| e[i])
            .fold(f64::NEG_INFINITY, f64::max);
        (pointwise_elpd[j][i] - top).exp()
    })
}

/// The stacking problem max_w Σ_n log (A w)_n on the simplex.
struct Stacking<'a> {
    a: &'a DMatrix<f64>,
}

/// Relative tolerance on the optimality conditions ∂f/∂w_k = N.
const STACKING_TOL: f64 = 1e-10;

impl Stacking<'_> {
    fn objective(&self, w: &[f64]) -> f64 {
        self.mix(w).iter().map(|m| m.ln()).sum()
    }

    /// (A w)_n per observation.
    fn mix(&self, w: &[f64]) -> Vec<f64> {
        self.a
            .row_iter()
            .map(|r| r.iter().zip(w).map(|(a, w)| a * w).sum())
            .collect()
    }

    /// ∂f/∂w_k = Σ_n A_nk / (A w)_n.
    fn gradient(&self, w: &[f64]) -> Vec<f64> {
        let mix = self.mix(w);
        (0..w.len())
            .map(|k| self.a.column(k).iter().zip(&mix).map(|(a, m)| a / m).sum())
            .collect()
    }

    fn solve(&self) -> Vec<f64> {
        let k = self.a.ncols();
        let n = self.a.nrows() as f64;
        let mut w = vec![1.0 / k as f64; k];
        for _ in 0..50 {
            let g = self.gradient(&w);
            w = w.iter().zip(&g).map(|(w, g)| w * g / n).collect();
        }
        for _ in 0..500 {
            let g = self.gradient(&w);
            let d = self.newton_direction(&w, &g);
            let step = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if step > 1e-13 && self.step_along(&mut w, &d) {
                continue;
            }
            // Optimal on this face: bring in the best excluded model if it would help.
            let Some(j) = (0..k)
                .filter(|&j| w[j] == 0.0 && g[j] > n * (1.0 + STACKING_TOL))
                .max_by(|&a, &b| g[a].total_cmp(&g[b]))
            else {
                break;
            };
            let d: Vec<f64> = (0..k).map(|i| if i == j { 1.0 - w[i] } else { -w[i] }).collect();
            if !self.step_along(&mut w, &d) {
                break;
            }
        }
        let total: f64 = w.iter().sum();
        w.iter().map(|v| v / total).collect()
    }

    /// The Newton step on the face {w_k > 0}, Σ d_k = 0: solves [H 1; 1ᵀ 0] [d; λ] = [−g; 0]
    /// with H = −Σ_n a_n a_nᵀ / (A w)_n² (a tiny ridge keeps it invertible when models
    /// coincide). Zero where w_k = 0.
    fn newton_direction(&self, w: &[f64], g: &[f64]) -> Vec<f64> {
        let free: Vec<usize> = (0..w.len()).filter(|&k| w[k] > 0.0).collect();
        let m = free.len();
        let mut d = vec![0.0; w.len()];
        if m < 2 {
            return d;
        }
        let mix = self.mix(w);
        let mut kkt = DMatrix::zeros(m + 1, m + 1);
        for (i, &ki) in free.iter().enumerate() {
            for (j, &kj) in free.iter().enumerate() {
                let h: f64 = (0..self.a.nrows())
                    .map(|r| self.a[(r, ki)] * self.a[(r, kj)] / (mix[r] * mix[r]))
                    .sum();
                kkt[(i, j)] = -h;
            }
            kkt[(i, m)] = 1.0;
            kkt[(m, i)] = 1.0;
        }
        let scale = (0..m).map(|i| kkt[(i, i)].abs()).fold(0.0, f64::max);
        for i in 0..m {
            kkt[(i, i)] -= 1e-12 * scale;
        }
        let rhs =
            nalgebra::DVector::from_iterator(m + 1, free.iter().map(|&k| -g[k]).chain(std::iter::once(0.0)));
        if let Some(sol) = kkt.lu().solve(&rhs) {
            for (i, &k) in free.iter().enumerate() {
                d[k] = sol[i];
            }
        }
        d
    }

    /// w ← w + t d with t ≤ 1 as far as the simplex allows, halved until f does not
    /// decrease; a weight that the step would take below 0 is set to 0. `false` when no
    /// step (down to t = 10⁻¹²) keeps f from decreasing: w is then left as it was.
    fn step_along(&self, w: &mut [f64], d: &[f64]) -> bool {
        let (mut t_max, mut blocking) = (1.0, None);
        for (k, (wk, dk)) in w.iter().zip(d).enumerate() {
            if *dk < 0.0 && -wk / dk < t_max {
                t_max = -wk / dk;
                blocking = Some(k);
            }
        }
        let f0 = self.objective(w);
        let mut t = t_max;
        loop {
            let trial: Vec<f64> = w.iter().zip(d).map(|(wk, dk)| (wk + t * dk).max(0.0)).collect();
            let f = self.objective(&trial);
            if f >= f0 {
                w.copy_from_slice(&trial);
                // A full step to the boundary sets the blocking weight to 0 exactly.
                if let Some(b) = blocking.filter(|_| t >= t_max) {
                    w[b] = 0.0;
                }
                return true;
            }
            if t < 1e-12 {
                return false;
            }
            t *= 0.5;
        }
    }
}

/// LOO-PIT values: for observation n, Σ_s w̃_sn 1\[y_rep,sn < y_n\] plus, for replicates equal
/// to y_n (discrete outcomes), a point between that and Σ_s w̃_sn 1[y_rep,sn ≤ y_n]: uniform
/// from `ties` when given (ArviZ's `loo_pit`, which uses a seeded generator), else the
/// midpoint. w̃ are the PSIS-LOO weights of [`loo_log_weights`] (arguments as [`psis_loo`]);
/// `y_rep` is S × N like `log_lik`.
///
/// # Panics
/// If `y`, `y_rep` and `log_lik` disagree in shape (the caller's draws and data), or as
/// [`psis_loo`].
pub fn loo_pit(
    y: &[f64],
    y_rep: &DMatrix<f64>,
    log_lik: &DMatrix<f64>,
    log_correction: Option<&[f64]>,
    r_eff: f64,
    ties: Option<&mut dyn RngCore>,
) -> Vec<f64> {
    let log_weights = loo_log_weights(log_lik, log_correction, r_eff);
    loo_pit_weighted(y, y_rep, &log_weights, ties)
}

/// [`loo_pit`] with the log weights given (S × N, e.g. from [`loo_log_weights`]; each column
/// is normalised here).
///
/// # Panics
/// If the shapes of `y`, `y_rep` and `log_weights` disagree.
pub fn loo_pit_weighted(
    y: &[f64],
    y_rep: &DMatrix<f64>,
    log_weights: &DMatrix<f64>,
    mut ties: Option<&mut dyn RngCore>,
) -> Vec<f64> {
    assert_eq!(
        y_rep.shape(),
        log_weights.shape(),
        "y_rep and the weights: S × N each"
    );
    assert_eq!(y.len(), y_rep.ncols(), "one observation per column of y_rep");
    y.iter()
        .enumerate()
        .map(|(n, &yn)| {
            let lw: Vec<f64> = log_weights.column(n).iter().copied().collect();
            let norm = log_sum_exp(&lw);
            let (mut below, mut equal) = (0.0, 0.0);
            for (l, r) in lw.iter().zip(y_rep.column(n).iter()) {
                let w = (l - norm).exp();
                match r.partial_cmp(&yn) {
                    Some(Ordering::Less) => below += w,
                    Some(Ordering::Equal) => equal += w,
                    _ => {}
                }
            }
            match ties.as_deref_mut() {
                _ if equal == 0.0 => below,
                Some(rng) => below + equal * unit_uniform(rng),
                None => below + 0.5 * equal,
            }
        })
        .collect()
}

/// A uniform number in [0, 1) from 53 random bits.
fn unit_uniform(rng: &mut dyn RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests;
