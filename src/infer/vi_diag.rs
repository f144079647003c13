//! `vi_diag`: mean-field Gaussian q(w) = N(μ, diag σ²).
//!
//! Objective: (1/S) Σ_s log p̃(μ + σ ⊙ z_s) + Σ_d log σ_d + (D/2) log 2πe over μ, log σ (and
//! θ). Started twice from the Laplace mean, with σ² = diag Σ_LA and with σ² = 10⁻⁴ (the
//! paper's two initialisations); the run with the better ELBO on the fixed samples is kept.
//! Cost: one batched gradient at S points per evaluation; ∂/∂σ = (G ⊙ Z) 1 / S + 1/σ.
//!
//! With S ≥ 512 the two starts first run on the first S / 8 of the fixed draws, and only
//! then on all S from where they ended, with L-BFGS's curvature pairs carried over; when
//! both reached the same optimum, or the worse is more than [`REACH`] standard errors
//! behind, only the better is continued. The optimum is
//! that of both starts on all S draws, to the optimiser's tolerance, for 1.9–4.3× fewer
//! model gradients (ARMA, GARCH and HMM: 17 000–28 000 gradient columns → 8 400–10 700).
//!
//! # Reference
//! Gianniotis, "Mixed Variational Inference" (2019), §V (baselines); Opper & Archambeau,
//! "The variational Gaussian approximation revisited", Neural Computation 21 (2009).

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::minibatch;
use crate::infer::mvi_eig::{stack, Scaled};
use crate::infer::objective::{elbo_on_draws, Family};
use crate::infer::timing;
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::Posterior;

/// Options of `vi_diag`: `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
pub type Settings = ViSettings;

/// Read `vi_diag`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(ViDiag {
        settings: ViSettings::from_options(options, "vi_diag")?,
    }))
}

/// Mean-field Gaussian VI.
#[derive(Debug, Clone, Default)]
pub struct ViDiag {
    /// Its options.
    pub settings: Settings,
}

/// The second initial variance of the paper.
const SMALL_VARIANCE: f64 = 1e-4;

impl Method for ViDiag {
    fn name(&self) -> &'static str {
        "vi_diag"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let start = vi::start_or_fallback(model, s, rng, obs)?;
        let mode = &start.laplace.mode;
        let from_laplace = start.laplace.cov().diagonal().map(|v| 0.5 * v.ln());
        let small = DVector::from_element(mode.len(), 0.5 * SMALL_VARIANCE.ln());
        let starts = [
            ("vi_diag from diag Σ_LA", stack(mode, &from_laplace)),
            ("vi_diag from σ² = 1e-4", stack(mode, &small)),
        ];
        if let Some(b) = minibatch::rows_per_step(model, s.batch) {
            // the mean-field optimum of a Gaussian target: σ_d² = 1 / Λ_dd, Λ the Laplace
            // precision (C Cᵀ)⁻¹, whose diagonal is the column norms of C⁻¹
            let c_inv = start
                .laplace
                .chol
                .solve_lower_triangular(&DMatrix::identity(mode.len(), mode.len()))
                .unwrap_or_else(|| DMatrix::identity(mode.len(), mode.len()));
            let log_sd = DVector::from_iterator(mode.len(), c_inv.column_iter().map(|c| -c.norm().ln()));
            let phi0 = stack(mode, &log_sd);
            let family = |st: &vi::Start| scaled(&st.z);
            return Ok(minibatch::fit(
                self.name(),
                model,
                start.clone(),
                &phi0,
                family,
                b,
                s,
                rng,
                obs,
            ));
        }
        let run = match vi::sub_samples(s.samples) {
            Some(sub) => staged(model, &start, starts, sub, s, obs),
            None => on_all_draws(model, &start, starts, s, obs),
        };
        let family = |st: &vi::Start| Scaled {
            q: None,
            z: st.z.clone(),
        };
        Ok(vi::finish_growing(self.name(), run, start, s, rng, obs, family))
    }
}

/// The mean-field family on the draws `z`.
fn scaled(z: &DMatrix<f64>) -> Scaled {
    Scaled {
        q: None,
        z: z.clone(),
    }
}

/// The run with the higher ELBO on its draws (the first on a tie).
fn better<'a, const N: usize>(runs: [vi::Run<'a, Scaled>; N]) -> vi::Run<'a, Scaled> {
    runs.into_iter()
        .reduce(|best, run| {
            if run.outcome.value > best.outcome.value {
                run
            } else {
                best
            }
        })
        .expect("at least one run")
}

/// Both starts optimised on all S fixed draws; the better kept.
fn on_all_draws<'a>(
    model: &'a dyn LogDensity,
    start: &vi::Start,
    starts: [(&str, DVector<f64>); 2],
    s: &ViSettings,
    obs: &mut dyn Observer,
) -> vi::Run<'a, Scaled> {
    better(starts.map(|(phase, phi0)| {
        obs.phase(phase);
        vi::optimise(model, scaled(&start.z), &phi0, start, s, obs)
    }))
}

/// Both starts optimised on the first `sub` fixed draws, then continued on all S of them
/// from where they ended. Only the better one is continued when the two reached the same
/// optimum (or one of them stopped at the iteration cap, where there is no choice between
/// optima to make); both are, and the better kept on all S draws, when they converged to
/// different optima and the worse is [`within_reach`] of the better. The objective is the
/// same as optimising both starts on all S draws from the start; the first stage costs
/// S / 8 draws per evaluation, and the second starts next to the optimum.
fn staged<'a>(
    model: &'a dyn LogDensity,
    start: &vi::Start,
    starts: [(&str, DVector<f64>); 2],
    sub: usize,
    s: &ViSettings,
    obs: &mut dyn Observer,
) -> vi::Run<'a, Scaled> {
    let small = vi::on_sub_draws(start, sub);
    let [a, b] = starts.map(|(phase, phi0)| {
        obs.phase(&format!("{phase}, on {sub} of the draws"));
        let _t = timing::span("vi: first stage (S / 8)");
        vi::optimise(model, scaled(&small.z), &phi0, &small, &s.first_stage(), obs)
    });
    let both = a.outcome.converged
        && b.outcome.converged
        && !same_point(&a.elbo.unpack(&a.outcome.x), &b.elbo.unpack(&b.outcome.x))
        && within_reach(model, &small.z, &a, &b);
    let (first, second) = if b.outcome.value > a.outcome.value {
        (b, a)
    } else {
        (a, b)
    };
    let mut resume = |run: vi::Run<'a, Scaled>| {
        obs.phase("vi_diag on all the draws");
        vi::resume(model, scaled(&start.z), run, s, obs)
    };
    let first = resume(first);
    if both {
        let second = resume(second);
        better([first, second])
    } else {
        first
    }
}

/// How many standard errors of the first stage's ELBO estimates the worse start may be
/// behind the better and still be continued on all S draws.
pub const REACH: f64 = 10.0;

/// Whether the worse of two first-stage runs could still end better on all S draws: its
/// ELBO is behind by at most [`REACH`] combined standard errors of the two estimates on
/// the first stage's draws `z`. Further behind, continuing it cannot change which run is
/// kept; it only costs its second stage (vehicle's RBF features, `mvi bench paper
/// --protocol fixed-centres-rbf`, split 0: the start from diag Σ_LA stops 266 nats behind,
/// and its 66 iterations on all S were 40 % of the fit).
fn within_reach(
    model: &dyn LogDensity,
    z: &DMatrix<f64>,
    a: &vi::Run<'_, Scaled>,
    b: &vi::Run<'_, Scaled>,
) -> bool {
    let se = |run: &vi::Run<'_, Scaled>| {
        let (phi, theta) = run.elbo.unpack(&run.outcome.x);
        let q = run.elbo.family.gaussian(&phi);
        elbo_on_draws(model, &theta, &q, z).1
    };
    let gap = (a.outcome.value - b.outcome.value).abs();
    let (sa, sb) = (se(a), se(b));
    // a non-finite standard error (a draw where log p̃ is not finite) decides nothing
    !(sa.is_finite() && sb.is_finite()) || gap <= REACH * sa.hypot(sb)
}

/// Whether two fits (φ = [μ; log σ], θ) are the same point: means within 1 % of the larger
/// sd, log sds within 0.01 and θ within 1 % (relative to 1 + |θ|).
fn same_point(a: &(DVector<f64>, DVector<f64>), b: &(DVector<f64>, DVector<f64>)) -> bool {
    let ((pa, ta), (pb, tb)) = (a, b);
    let d = pa.len() / 2;
    let means = (0..d).all(|i| {
        let sd = pa[d + i].exp().max(pb[d + i].exp());
        (pa[i] - pb[i]).abs() <= 0.01 * sd
    });
    let sds = (0..d).all(|i| (pa[d + i] - pb[d + i]).abs() <= 0.01);
    let thetas = ta
        .iter()
        .zip(tb.iter())
        .all(|(x, y)| (x - y).abs() <= 0.01 * (1.0 + x.abs()));
    means && sds && thetas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::{Evaluated, Want};
    use crate::infer::Silent;
    use rand::SeedableRng;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// log p̃(w) = Σ_d (−½ w_d² + 2 log σ(3 w_d + 1)) + 0.3 w_0 w_1, skewed and correlated;
    /// counts the columns it evaluates.
    struct Skewed {
        columns: AtomicUsize,
    }

    const D: usize = 3;

    fn log_sigmoid(u: f64) -> f64 {
        -(-u).exp().ln_1p()
    }

    impl LogDensity for Skewed {
        fn dim(&self) -> usize {
            D
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            self.columns.fetch_add(w.ncols(), Ordering::Relaxed);
            let mut values = DVector::zeros(w.ncols());
            let mut g = DMatrix::zeros(D, w.ncols());
            for (s, col) in w.column_iter().enumerate() {
                values[s] = 0.3 * col[0] * col[1];
                g[(0, s)] += 0.3 * col[1];
                g[(1, s)] += 0.3 * col[0];
                for d in 0..D {
                    let u = 3.0 * col[d] + 1.0;
                    values[s] += -0.5 * col[d] * col[d] + 2.0 * log_sigmoid(u);
                    g[(d, s)] += -col[d] + 6.0 / (1.0 + u.exp());
                }
            }
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            let mut h = DMatrix::zeros(D, D);
            h[(0, 1)] = 0.3;
            h[(1, 0)] = 0.3;
            for d in 0..D {
                let p = 1.0 / (1.0 + (-(3.0 * w[d] + 1.0)).exp());
                h[(d, d)] = -1.0 - 18.0 * p * (1.0 - p);
            }
            h
        }
    }

    /// [`Skewed`], the default settings and their Laplace start.
    fn skewed_start() -> (Skewed, ViSettings, vi::Start) {
        let model = Skewed {
            columns: AtomicUsize::new(0),
        };
        let s = ViSettings::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let start = vi::start(&model, &s, &mut rng, &mut Silent).expect("a Laplace fit");
        (model, s, start)
    }

    #[test]
    fn the_staged_fit_reaches_the_optimum_of_both_starts_on_all_draws_for_less_work() {
        let (model, s, start) = skewed_start();
        let mode = &start.laplace.mode;
        let starts = || {
            [
                (
                    "a",
                    stack(mode, &start.laplace.cov().diagonal().map(|v| 0.5 * v.ln())),
                ),
                (
                    "b",
                    stack(mode, &DVector::from_element(D, 0.5 * SMALL_VARIANCE.ln())),
                ),
            ]
        };
        let before = model.columns.load(Ordering::Relaxed);
        let all = on_all_draws(&model, &start, starts(), &s, &mut Silent);
        let mid = model.columns.load(Ordering::Relaxed);
        let sub = vi::sub_samples(s.samples).expect("S = 1000 has a first stage");
        let two = staged(&model, &start, starts(), sub, &s, &mut Silent);
        let after = model.columns.load(Ordering::Relaxed);
        assert!(all.outcome.converged && two.outcome.converged);
        let (va, vb) = (all.outcome.value, two.outcome.value);
        assert!((va - vb).abs() <= 1e-8 * va.abs(), "ELBO {va} against {vb}");
        let (pa, pb) = (
            all.elbo.unpack(&all.outcome.x).0,
            two.elbo.unpack(&two.outcome.x).0,
        );
        assert!((&pa - &pb).amax() < 1e-4, "{pa} against {pb}");
        let (full, cheap) = (mid - before, after - mid);
        assert!(
            2 * cheap < full,
            "columns evaluated: staged {cheap}, on all draws {full}"
        );
    }

    #[test]
    fn a_start_far_behind_after_the_first_stage_is_out_of_reach_and_one_at_the_same_optimum_is_not() {
        let (model, s, start) = skewed_start();
        let small = vi::on_sub_draws(&start, vi::sub_samples(s.samples).expect("a first stage"));
        let mode = &start.laplace.mode;
        let log_sd = |v: f64| DVector::from_element(D, v);
        let run = |phi0: DVector<f64>, max_iters: usize| {
            let mut s = s;
            s.common.max_iters = max_iters;
            vi::optimise(&model, scaled(&small.z), &phi0, &small, &s, &mut Silent)
        };
        let a = run(stack(mode, &log_sd(-1.0)), 1000);
        let b = run(stack(mode, &log_sd(-0.5)), 1000);
        assert!(a.outcome.converged && b.outcome.converged);
        assert!(within_reach(&model, &small.z, &a, &b));
        // one step from a mean 6 away: far behind, by many standard errors
        let far = run(stack(&mode.add_scalar(6.0), &log_sd(-3.0)), 1);
        assert!(a.outcome.value - far.outcome.value > 10.0);
        assert!(!within_reach(&model, &small.z, &a, &far));
        assert!(!within_reach(&model, &small.z, &far, &a));
    }

    #[test]
    fn two_fits_are_the_same_point_only_when_means_sds_and_theta_all_agree() {
        let phi = DVector::from_vec(vec![1.0, -2.0, 0.5f64.ln(), 2.0f64.ln()]);
        let theta = DVector::from_vec(vec![3.0]);
        let a = (phi.clone(), theta.clone());
        let moved = |i: usize, by: f64| {
            let mut p = phi.clone();
            p[i] += by;
            (p, theta.clone())
        };
        assert!(same_point(&a, &a));
        // μ₁ moves 0.004 with σ₁ = 0.5: 0.8 % of an sd; 0.006 is 1.2 %
        assert!(same_point(&a, &moved(0, 0.004)));
        assert!(!same_point(&a, &moved(0, 0.006)));
        // μ₂ has σ₂ = 2, so 0.015 is within 1 %
        assert!(same_point(&a, &moved(1, 0.015)));
        assert!(!same_point(&a, &moved(3, 0.02)));
        assert!(!same_point(&a, &(phi.clone(), DVector::from_vec(vec![3.05]))));
        assert!(same_point(&a, &(phi.clone(), DVector::from_vec(vec![3.03]))));
    }
}
