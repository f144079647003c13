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
//! inference"; Hoffman, Blei, Wang & Paisley 2013) with Adam (Kingma & Ba 2015) at a step
//! size that decays as 1/√(1 + t / [`DECAY_STEPS`]), in the coordinates the fixed-sample
//! optimisation uses (the mean as μ₀ + C ν, C the Laplace factor, so that every coordinate
//! has about unit scale). Every [`CHECK_EVERY`] steps the average of those steps' iterates
//! (Polyak–Ruppert averaging, which removes most of the steps' noise) is scored on a
//! held-out estimate of the full ELBO: fixed rows (10 B, at most N) and fixed draws, the
//! same at every check, so that checks compare φ and not the noise. The run stops when
//! [`PATIENCE`] checks in a row gain less than [`SETTLED_NATS`] on the best so far, or after
//! 10 × `max_iters` steps; the best-scoring average is the fit. θ stays at the Laplace
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
pub const PATIENCE: usize = 3;

/// The smallest gain of the held-out estimate that counts as progress.
pub const SETTLED_NATS: f64 = 0.02;

/// Adam's first step size.
const STEP: f64 = 0.01;

/// The step size halves (about) every 3 × this many steps.
const DECAY_STEPS: f64 = 100.0;

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

/// The ELBO estimate and its gradient in ψ on the given rows and draws.
fn estimate<F: Family>(
    model: &dyn LogDensity,
    family: &MeanPreconditioned<F>,
    psi: &DVector<f64>,
    theta: &DVector<f64>,
    rows: &[u32],
    want: Want,
) -> (f64, Option<DVector<f64>>, f64) {
    let (w, log_det) = family.forward(psi);
    let e = model.eval_rows(theta, &w, want, rows);
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
    let at = |z: DMatrix<f64>| {
        let st = vi::Start {
            laplace: start.laplace.clone(),
            z,
        };
        MeanPreconditioned::new(
            family(&st),
            start.laplace.chol.clone(),
            start.laplace.mode.clone(),
        )
    };
    obs.phase(&format!("{name}, minibatches of {b} of {n} rows"));
    let optimising = timing::span("minibatch: optimisation");
    let mut perm: Vec<u32> = (0..n as u32).collect();
    // the held-out rows and draws, fixed for every check
    let h = (HELD_OUT_FACTOR * b).min(n);
    draw_rows(&mut perm, h, rng);
    let held_rows: Vec<u32> = perm[..h].to_vec();
    let held = at(standard_normal(d, HELD_OUT_DRAWS, rng));
    let mut psi = held.from_inner(phi0);
    let score = |psi: &DVector<f64>| estimate(model, &held, psi, &theta, &held_rows, Want::VALUE).0;
    let (mut best_psi, mut best) = (psi.clone(), score(&psi));
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
        let fam = at(standard_normal(d, DRAWS_PER_STEP, rng));
        let (value, grad, _) = estimate(model, &fam, &psi, &theta, &perm[..b], Want::GRAD_W);
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
        trace.push(record.clone());
        if !obs.iteration(&record) {
            interrupted = true;
            break;
        }
        if held_value > best + SETTLED_NATS {
            stale = 0;
        } else {
            stale += 1;
        }
        if held_value > best {
            best = held_value;
            best_psi = candidate;
        }
        if stale >= PATIENCE {
            converged = true;
            break;
        }
    }
    drop(optimising);
    let q = held.gaussian(&best_psi);
    let fresh = {
        let _t = timing::span("vi: fresh-draw ELBO");
        fresh_elbo(model, &theta, &q, settings.samples, rng)
    };
    let mut notes = start.laplace.notes.clone();
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
        log_evidence: Some(start.laplace.log_evidence).filter(|v| v.is_finite()),
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
    use rand::SeedableRng;

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
