//! Minibatch (doubly stochastic) ELBO optimisation of the Gaussian VI families, for models
//! whose likelihood is a sum over many data rows.
//!
//! Input: a [`LogDensity`] with [`LogDensity::rows`] (terms computed once plus a sum over N
//! rows), the method's Laplace start, its family and start φ₀, and B rows per step. Output:
//! the method's [`Posterior`]. Each step draws B rows without replacement and
//! [`DRAWS_PER_STEP`] fresh standard-normal draws z, and follows the unbiased estimate
//!
//! ∇ ELBO ≈ ∇_φ [ (1/S) Σ_s ( global(w_s) + (N/B) Σ_{r ∈ batch} ℓ_r(w_s) ) + log|det L_φ| ]
//!
//! (Titsias & Lázaro-Gredilla 2014, "Doubly stochastic variational Bayes for non-conjugate
//! inference"; Hoffman, Blei, Wang & Paisley 2013), made far less noisy by a control variate
//! at the Laplace mode ŵ (the terms' differences from ŵ are subsampled, not the terms; see
//! `anchored`), with Adam (Kingma & Ba 2015) at a step
//! size that decays as 1/√(1 + t / [`DECAY_STEPS`]), in the coordinates the fixed-sample
//! optimisation uses (the mean as μ₀ + C ν, C the Laplace factor, so that every coordinate
//! has about unit scale). Every [`CHECK_EVERY`] steps the average of those steps' iterates
//! (Polyak–Ruppert averaging, which removes most of the steps' noise) is scored on a
//! held-out estimate of the full ELBO: fixed rows (10 B, at most N) and fixed draws, the
//! same at every check, so that checks compare φ and not the noise. The run stops when
//! [`PATIENCE`] checks in a row gain less than [`SETTLED_NATS`] on the best so far, or after
//! 10 × `max_iters` steps; the average of the last [`PATIENCE`] windows' iterates is the fit. θ stays at the Laplace
//! start's value. The report's fresh-draw ELBO then reads every row.

use nalgebra::{DMatrix, DVector};
use rand::{Rng, RngCore};

use crate::density::{LogDensity, Want};
use crate::infer::objective::{entropy_constant, fresh_elbo, mean_se, Family, MeanPreconditioned};
use crate::infer::settings::Batch;
use crate::infer::timing;
use crate::infer::vi::{self, ViSettings};
use crate::infer::Observer;
use crate::posterior::{standard_normal, Approximation, IterRecord, Posterior};

/// `batch = auto` subsamples from this many rows on …
pub const AUTO_FROM: usize = 100_000;

/// … with this many rows per step.
pub const AUTO_ROWS: usize = 1000;

/// Fresh standard-normal draws per step.
pub const DRAWS_PER_STEP: usize = 8;

/// Steps between held-out checks (and the iterates averaged for each).
pub const CHECK_EVERY: usize = 50;

/// Fixed draws of the held-out estimate.
const HELD_OUT_DRAWS: usize = 64;

/// Held-out rows per row of a step's batch.
const HELD_OUT_FACTOR: usize = 10;

/// Checks in a row without a gain of [`SETTLED_NATS`] that end the run.
pub const PATIENCE: usize = 5;

/// The smallest gain of the held-out estimate that counts as progress.
pub const SETTLED_NATS: f64 = 0.02;

/// Adam's first step size.
pub const STEP: f64 = 0.05;

/// The step size halves (about) every 3 × this many steps.
pub const DECAY_STEPS: f64 = 1000.0;

/// Rows per step for these settings, or `None` for the fixed-sample objective on every row.
pub fn rows_per_step(model: &dyn LogDensity, batch: Batch) -> Option<usize> {
    let n = model.rows()?;
    match batch {
        Batch::Full => None,
        Batch::Auto => (n >= AUTO_FROM).then_some(AUTO_ROWS),
        Batch::Rows(b) => Some(b.min(n)),
    }
}

/// Draws `k` distinct rows of `perm`'s N by a partial Fisher–Yates shuffle of `perm`
/// (which stays a permutation): the first `k` entries afterwards.
fn draw_rows(perm: &mut [u32], k: usize, rng: &mut dyn RngCore) {
    let n = perm.len();
    for i in 0..k.min(n) {
        let j = rng.random_range(i..n);
        perm.swap(i, j);
    }
}

/// The log density at the anchor ŵ (the Laplace mode) on every row, with its gradient: the
/// control variate's exact part.
struct Anchor {
    w: DVector<f64>,
    value: f64,
    grad: DVector<f64>,
}

impl Anchor {
    fn new(model: &dyn LogDensity, theta: &DVector<f64>, w: &DVector<f64>) -> Anchor {
        let e = model.eval(
            theta,
            &DMatrix::from_column_slice(w.len(), 1, w.as_slice()),
            Want::GRAD_W,
        );
        Anchor {
            w: w.clone(),
            value: e.values[0],
            grad: e.grad_w.expect("asked for the gradient").column(0).into_owned(),
        }
    }
}

/// log p̃ at the columns of `w` estimated from `rows` with the anchor's control variate:
///
/// log p̃(w) ≈ log p̃(ŵ) + [est(w) − est(ŵ)],  est = global + (N/B) Σ_{r ∈ rows} ℓ_r,
///
/// which is global(w) + Σ_all ℓ_r(ŵ) + (N/B) Σ_rows (ℓ_r(w) − ℓ_r(ŵ)): unbiased, and near ŵ,
/// where ℓ_r(w) − ℓ_r(ŵ) is small for every row, far less noisy than est(w) alone (its
/// variance shrinks with |w − ŵ|² instead of growing with N/B; Baker, Fearnhead, Fox &
/// Nemeth 2019, "Control variates for stochastic gradient MCMC"). Gradients likewise.
fn anchored(
    model: &dyn LogDensity,
    anchor: &Anchor,
    theta: &DVector<f64>,
    w: &DMatrix<f64>,
    want: Want,
    rows: &[u32],
) -> crate::density::Evaluated {
    let (d, s) = (w.nrows(), w.ncols());
    let mut with = DMatrix::zeros(d, s + 1);
    with.columns_mut(0, s).copy_from(w);
    with.column_mut(s).copy_from(&anchor.w);
    let e = model.eval_rows(theta, &with, want, rows);
    let base = e.values[s];
    let values = DVector::from_iterator(s, e.values.iter().take(s).map(|v| v - base + anchor.value));
    let grad_w = e.grad_w.map(|g| {
        let shift = &anchor.grad - g.column(s);
        let mut out = g.columns(0, s).into_owned();
        for mut c in out.column_iter_mut() {
            c += &shift;
        }
        out
    });
    crate::density::Evaluated {
        values,
        grad_w,
        grad_theta: None,
    }
}

/// The ELBO estimate and its gradient in ψ on the given rows and draws, with the anchor's
/// control variate.
fn estimate<F: Family>(
    model: &dyn LogDensity,
    anchor: &Anchor,
    family: &MeanPreconditioned<F>,
    psi: &DVector<f64>,
    theta: &DVector<f64>,
    rows: &[u32],
    want: Want,
) -> (f64, Option<DVector<f64>>, f64) {
    let (w, log_det) = family.forward(psi);
    let e = anchored(model, anchor, theta, &w, want, rows);
    let (mean, se) = mean_se(e.values.as_slice());
    let value = mean + log_det + entropy_constant(w.nrows());
    let grad = e.grad_w.map(|g| family.backward(psi, &g));
    (value, grad, se)
}

/// Fit `family` from φ₀ by minibatch steps of `b` rows; see the module documentation.
#[allow(clippy::too_many_arguments)]
pub fn fit<F: Family>(
    name: &str,
    model: &dyn LogDensity,
    start: vi::Start,
    phi0: &DVector<f64>,
    family: impl Fn(&vi::Start) -> F,
    b: usize,
    settings: &ViSettings,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Posterior {
    let n = model.rows().expect("minibatch fits need a model with rows");
    let d = model.dim();
    let theta = start.laplace.theta.clone();
    obs.phase(&format!("{name}, minibatches of {b} of {n} rows"));
    let optimising = timing::span("minibatch: optimisation");
    let mut perm: Vec<u32> = (0..n as u32).collect();
    // the held-out rows and draws, fixed for every check
    let h = (HELD_OUT_FACTOR * b).min(n);
    draw_rows(&mut perm, h, rng);
    let held_rows: Vec<u32> = perm[..h].to_vec();
    // one start whose draws each step replaces, and one family whose inner part it rebuilds:
    // the Laplace fit and C are not copied per step (C is D × D)
    let mut st = vi::Start {
        z: standard_normal(d, HELD_OUT_DRAWS, rng),
        ..start
    };
    let (c, mode) = (&st.laplace.chol, &st.laplace.mode);
    let held = MeanPreconditioned::new(family(&st), c.clone(), mode.clone());
    let mut fam = MeanPreconditioned::new(family(&st), c.clone(), mode.clone());
    let mut psi = held.from_inner(phi0);
    let anchor = Anchor::new(model, &theta, &st.laplace.mode);
    let score = |psi: &DVector<f64>| estimate(model, &anchor, &held, psi, &theta, &held_rows, Want::VALUE).0;
    let mut best = score(&psi);
    let mut recent: std::collections::VecDeque<DVector<f64>> = std::collections::VecDeque::new();
    let (mut m, mut v) = (DVector::zeros(psi.len()), DVector::zeros(psi.len()));
    let (b1, b2, eps) = (0.9, 0.999, 1e-8);
    let mut average = DVector::zeros(psi.len());
    let mut noise: Vec<f64> = Vec::with_capacity(CHECK_EVERY);
    let mut trace = Vec::new();
    let (mut stale, mut converged, mut interrupted) = (0, false, false);
    let max_steps = settings.common.max_iters.saturating_mul(10);
    let mut steps = 0;
    let mut last_noise = f64::NAN;
    while steps < max_steps {
        steps += 1;
        draw_rows(&mut perm, b, rng);
        st.z = standard_normal(d, DRAWS_PER_STEP, rng);
        fam.inner = family(&st);
        let (value, grad, _) = estimate(model, &anchor, &fam, &psi, &theta, &perm[..b], Want::GRAD_W);
        let grad = grad.expect("asked for the gradient");
        if value.is_finite() && grad.iter().all(|x| x.is_finite()) {
            noise.push(value);
            let t = steps as i32;
            m = &m * b1 + &grad * (1.0 - b1);
            v = &v * b2 + grad.map(|x| x * x) * (1.0 - b2);
            let lr = STEP / (1.0 + steps as f64 / DECAY_STEPS).sqrt();
            let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
            for k in 0..psi.len() {
                psi[k] += lr * (m[k] / c1) / ((v[k] / c2).sqrt() + eps);
            }
        }
        average += &psi;
        if steps % CHECK_EVERY != 0 {
            continue;
        }
        let candidate = &average / CHECK_EVERY as f64;
        average.fill(0.0);
        let held_value = score(&candidate);
        last_noise = if noise.len() > 1 {
            mean_se(&noise).1 * (noise.len() as f64).sqrt()
        } else {
            f64::NAN
        };
        noise.clear();
        let record = IterRecord {
            iter: steps / CHECK_EVERY,
            objective: held_value,
            grad_norm: 0.0,
        };
        trace.push(record);
        if !obs.iteration(&record) {
            interrupted = true;
            break;
        }
        if held_value > best + SETTLED_NATS {
            stale = 0;
        } else {
            stale += 1;
        }
        best = best.max(held_value);
        recent.push_back(candidate);
        if recent.len() > PATIENCE {
            recent.pop_front();
        }
        if stale >= PATIENCE {
            converged = true;
            break;
        }
    }
    // the fit: the average of the last windows' iterates (they no longer gain on the
    // held-out estimate, so they scatter about the optimum; the held-out rows' own optimum
    // is not the full data's, so the best-scoring window is not chosen)
    let fitted = if recent.is_empty() {
        psi.clone()
    } else {
        recent.iter().fold(DVector::zeros(psi.len()), |a, c| a + c) / recent.len() as f64
    };
    drop(optimising);
    let q = held.gaussian(&fitted);
    let fresh = {
        let _t = timing::span("vi: fresh-draw ELBO");
        fresh_elbo(model, &theta, &q, settings.samples, rng)
    };
    let mut notes = st.laplace.notes.clone();
    notes.push(format!(
        "minibatch ELBO: {b} of {n} rows and {DRAWS_PER_STEP} fresh draws per step, {steps} steps; \
         one step's estimate has sd {last_noise:.3} nats; held-out estimate ({h} rows, \
         {HELD_OUT_DRAWS} draws) {best:.3}; θ held at the Laplace start's value"
    ));
    if interrupted {
        notes.push(format!("{name}: interrupted after {steps} minibatch steps"));
    } else if !converged {
        notes.push(format!(
            "{name}: the minibatch run did not settle in {steps} steps (10 × max_iters); the \
             held-out ELBO was still gaining more than {SETTLED_NATS} nats per {CHECK_EVERY} steps"
        ));
    }
    Posterior {
        method: name.to_string(),
        approx: Approximation::Gaussian(q),
        theta,
        // the held-out estimate reads a subset of the rows: not the ELBO on fixed samples
        objective: None,
        log_evidence: Some(st.laplace.log_evidence).filter(|v| v.is_finite()),
        iterations: trace.len(),
        trace,
        converged,
        notes,
        fresh_elbo: Some(fresh),
        resampling: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::Evaluated;
    use crate::infer::mvi_eig::{stack, Scaled};
    use crate::infer::Silent;
    use rand::SeedableRng;

    /// Bayesian linear regression with unit noise and a N(0, I) prior on N rows of D = 2
    /// columns: log p̃(w) = −½|w|² − ½ Σ_n (y_n − x_nᵀ w)², a sum over rows whose posterior
    /// is N(Λ⁻¹ Xᵀy, Λ⁻¹), Λ = I + XᵀX; the mean-field optimum has the posterior mean and
    /// σ_d² = 1 / Λ_dd.
    struct Rows {
        x: DMatrix<f64>,
        y: DVector<f64>,
    }

    impl Rows {
        fn new(n: usize) -> Rows {
            let x = DMatrix::from_fn(n, 2, |i, j| {
                if j == 0 {
                    1.0
                } else {
                    ((i * 37) % 101) as f64 / 50.0 - 1.0
                }
            });
            let y = DVector::from_fn(n, |i, _| {
                0.3 + 0.8 * x[(i, 1)] + (((i * 53) % 97) as f64 / 48.0 - 1.0)
            });
            Rows { x, y }
        }
        fn precision(&self) -> DMatrix<f64> {
            DMatrix::identity(2, 2) + self.x.transpose() * &self.x
        }
        fn posterior_mean(&self) -> DVector<f64> {
            self.precision()
                .cholesky()
                .unwrap()
                .solve(&(self.x.transpose() * &self.y))
        }
        /// The log density from the given rows, their sum scaled by `scale`.
        fn partial(&self, w: &DMatrix<f64>, want: Want, rows: &[usize], scale: f64) -> Evaluated {
            let s = w.ncols();
            let mut values = DVector::zeros(s);
            let mut grad = DMatrix::zeros(2, s);
            for c in 0..s {
                let wc = w.column(c);
                values[c] = -0.5 * wc.norm_squared();
                grad.column_mut(c).copy_from(&(-wc));
                for &r in rows {
                    let e = self.y[r] - self.x.row(r).dot(&wc.transpose());
                    values[c] -= 0.5 * scale * e * e;
                    grad.column_mut(c)
                        .axpy(scale * e, &self.x.row(r).transpose(), 1.0);
                }
            }
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(grad),
                grad_theta: None,
            }
        }
    }

    impl LogDensity for Rows {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            let all: Vec<usize> = (0..self.y.len()).collect();
            self.partial(w, want, &all, 1.0)
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            -self.precision()
        }
        fn rows(&self) -> Option<usize> {
            Some(self.y.len())
        }
        fn eval_rows(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want, rows: &[u32]) -> Evaluated {
            let rows: Vec<usize> = rows.iter().map(|&r| r as usize).collect();
            self.partial(w, want, &rows, self.y.len() as f64 / rows.len() as f64)
        }
    }

    #[test]
    fn minibatch_steps_find_the_mean_field_optimum_from_a_far_start() {
        let model = Rows::new(5000);
        let mean = model.posterior_mean();
        let lambda = model.precision();
        let cov = lambda.clone().try_inverse().unwrap();
        let chol = cov.clone().cholesky().unwrap().l();
        let start = vi::Start::from_gaussian(
            mean.clone(),
            chol,
            DVector::zeros(0),
            Vec::new(),
            DMatrix::zeros(2, 10),
        );
        // 3 posterior sds off in the mean, the scales e times too wide
        let sd = cov.diagonal().map(f64::sqrt);
        let log_sd = DVector::from_iterator(2, lambda.diagonal().iter().map(|l| -0.5 * l.ln() + 1.0));
        let phi0 = stack(&(&mean + &sd * 3.0), &log_sd);
        let settings = ViSettings {
            samples: 1000,
            ..ViSettings::default()
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let family = |st: &vi::Start| Scaled {
            q: None,
            z: st.z.clone(),
        };
        let post = fit(
            "vi_diag",
            &model,
            start,
            &phi0,
            family,
            100,
            &settings,
            &mut rng,
            &mut Silent,
        );
        let Approximation::Gaussian(q) = &post.approx else {
            panic!("a Gaussian fit")
        };
        for d in 0..2 {
            let err = (q.mean[d] - mean[d]).abs() / sd[d];
            assert!(
                err < 0.1,
                "mean {d}: {} vs {} ({err} sd); {:?}",
                q.mean[d],
                mean[d],
                post.notes
            );
            let sd_fit = q.cov()[(d, d)].sqrt();
            let sd_opt = 1.0 / lambda[(d, d)].sqrt();
            assert!(
                (sd_fit / sd_opt - 1.0).abs() < 0.1,
                "sd {d}: {sd_fit} vs {sd_opt}"
            );
        }
        assert!(post.converged, "{:?}", post.notes);
    }

    #[test]
    fn drawn_rows_are_distinct_and_in_range() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut perm: Vec<u32> = (0..50).collect();
        for _ in 0..20 {
            draw_rows(&mut perm, 10, &mut rng);
            let mut first: Vec<u32> = perm[..10].to_vec();
            first.sort_unstable();
            first.dedup();
            assert_eq!(first.len(), 10);
            let mut all = perm.clone();
            all.sort_unstable();
            assert_eq!(all, (0..50).collect::<Vec<u32>>());
        }
    }
}
