//! What the Gaussian VI methods (`mvi_mu`, `mvi_eig`, `mvi_lr`, `vi_diag`, `vi_full`) share:
//! their settings, the Laplace start, the fixed draws Z, the optimisation of the
//! fixed-sample ELBO and the finishing touches (fresh-draw ELBO, over-fitting and
//! convergence notes).
//!
//! Input: a [`LogDensity`] and a method's [`Family`]. Output: a [`Posterior`] whose
//! `objective` is the ELBO on the fixed samples and whose `fresh_elbo` is the re-estimate
//! on as many fresh draws, with its standard error.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::laplace::{fit_laplace, not_converged, LaplaceFit, Recorder};
use crate::infer::objective::{fresh_elbo, Elbo, Family, MeanPreconditioned};
use crate::infer::optim::{self, Curvature, Outcome};
use crate::infer::settings::{Common, Reader, VI_KEYS};
use crate::infer::timing;
use crate::infer::{Error, InferOptions, Observer};
use crate::posterior::{standard_normal, Approximation, IterRecord, Posterior};

/// Options shared by the Gaussian VI methods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViSettings {
    /// `max_iters`, `tol`, `optimizer`, `learn_hyper`.
    pub common: Common,
    /// `samples`: S, the number of fixed standard-normal draws (default 1000).
    pub samples: usize,
    /// `laplace_hyper = search` (the default): the Laplace start searches θ on the log
    /// evidence when `learn_hyper` is on; `given` (false here) starts from the `hyper`
    /// block's values, e.g. when they come from an earlier `laplace` run.
    pub laplace_hyper_search: bool,
    /// Whether S may grow when the fit is over-fitted to its draws (see [`finish_growing`]):
    /// true when `samples` is not given; an explicit `samples` keeps S fixed.
    pub grow_samples: bool,
}

/// S grows at most to this multiple of its starting value.
pub const MAX_SAMPLE_GROWTH: usize = 8;

impl Default for ViSettings {
    fn default() -> Self {
        ViSettings {
            common: Common::default(),
            samples: 1000,
            laplace_hyper_search: true,
            grow_samples: false,
        }
    }
}

impl ViSettings {
    /// Read the VI keys (`samples` and the common ones).
    ///
    /// # Errors
    /// A diagnostic at a bad value.
    pub fn read(r: &Reader<'_>) -> Result<ViSettings, Diagnostic> {
        Ok(ViSettings {
            common: Common::read(r)?,
            samples: r.int("samples", 2, 1000)?,
            laplace_hyper_search: r.word("laplace_hyper", &["search", "given"], "search")? == "search",
            grow_samples: !r.has("samples"),
        })
    }

    /// Read the options of a fixed-sample method that takes exactly the VI keys
    /// (`mvi_mu`, `mvi_eig`, `vi_diag`, `vi_full`).
    ///
    /// # Errors
    /// A diagnostic at an unknown key or a bad value.
    pub fn from_options(options: &InferOptions, method: &'static str) -> Result<ViSettings, Diagnostic> {
        ViSettings::read(&Reader::new(options, method, VI_KEYS)?)
    }
}

/// The Laplace fit and the fixed draws every VI method starts from.
#[derive(Debug, Clone)]
pub struct Start {
    /// The Laplace approximation (mean, θ, C).
    pub laplace: LaplaceFit,
    /// Z, D×S standard-normal draws, fixed for the whole optimisation.
    pub z: DMatrix<f64>,
}

/// Fit Laplace (θ searched on the evidence when learned, unless `laplace_hyper = given`),
/// then draw Z from `rng`.
///
/// # Errors
/// As [`fit_laplace`].
pub fn start(
    model: &dyn LogDensity,
    settings: &ViSettings,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<Start, Error> {
    let common = Common {
        learn_hyper: settings.common.learn_hyper && settings.laplace_hyper_search,
        ..settings.common
    };
    let laplace = fit_laplace(model, &common, rng, obs)?;
    let z = standard_normal(model.dim(), settings.samples, rng);
    Ok(Start { laplace, z })
}

/// As [`start`], but when the model has no usable Laplace fit (no mode, or −H not positive
/// definite at the end of the mode search) the start is the `vi_diag` fit from the initial
/// point of [`crate::infer::pmfvb::start::fallback`], with a note, and the posterior reports
/// no Laplace evidence. For `vi_diag` and `vi_full`, whose families do not depend on the
/// Laplace covariance; the MVI variants are defined through it and fail instead.
///
/// # Errors
/// As [`start`] for other failures; as the fallback when it fails too.
pub fn start_or_fallback(
    model: &dyn LogDensity,
    settings: &ViSettings,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<Start, Error> {
    let reason = match start(model, settings, rng, obs) {
        Err(e @ (Error::NoMode(_) | Error::NotNegativeDefinite { .. })) => e,
        other => return other,
    };
    obs.phase("start: vi_diag fallback");
    let fallback = crate::infer::pmfvb::start::fallback(model, &settings.common, rng, obs)?;
    let mut notes = vec![format!(
        "started from a vi_diag fit from the initial point, not the Laplace fit ({reason})"
    )];
    notes.extend(fallback.notes);
    let g = fallback.gaussian;
    let z = standard_normal(model.dim(), settings.samples, rng);
    Ok(Start::from_gaussian(g.mean, g.root, fallback.theta, notes, z))
}

impl Start {
    /// A start from a Gaussian N(mean, C Cᵀ) that is not a Laplace fit, at θ: no log
    /// evidence (NaN, not reported) and no mode-search trace.
    pub fn from_gaussian(
        mean: DVector<f64>,
        chol: DMatrix<f64>,
        theta: DVector<f64>,
        notes: Vec<String>,
        z: DMatrix<f64>,
    ) -> Start {
        let laplace = LaplaceFit {
            mode: mean,
            theta,
            chol,
            log_p: f64::NAN,
            log_evidence: f64::NAN,
            iterations: 0,
            converged: false,
            trace: Vec::new(),
            notes,
        };
        Start { laplace, z }
    }
}

/// One optimised ELBO: the objective, the optimiser's outcome and the trace.
pub struct Run<'a, F: Family> {
    /// The objective (family and model).
    pub elbo: Elbo<'a, F>,
    /// What the optimiser found.
    pub outcome: Outcome,
    /// The iterations seen.
    pub trace: Vec<IterRecord>,
    /// L-BFGS's last curvature pairs, in the optimiser's coordinates ([`resume`] hands them
    /// to the next stage).
    pub curvature: Curvature,
}

/// Maximise the fixed-sample ELBO of `family` from φ₀ and the Laplace θ.
///
/// The mean block is optimised in the coordinates of [`MeanPreconditioned`] (C the start's
/// Laplace factor); the run returned is in the family's own coordinates φ (only the
/// outcome's gradient norm stays in the optimiser's).
pub fn optimise<'a, F: Family>(
    model: &'a dyn LogDensity,
    family: F,
    phi0: &DVector<f64>,
    start: &Start,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    optimise_from(model, family, phi0, start, settings, obs, Curvature::default())
}

/// [`optimise`], with L-BFGS starting from the curvature pairs of an earlier run whose start
/// had the same Laplace factor C (the optimiser's coordinates then differ only by a
/// translation).
fn optimise_from<'a, F: Family>(
    model: &'a dyn LogDensity,
    family: F,
    phi0: &DVector<f64>,
    start: &Start,
    settings: &ViSettings,
    obs: &mut dyn Observer,
    mut curvature: Curvature,
) -> Run<'a, F> {
    let theta = &start.laplace.theta;
    let learn = settings.common.learn_hyper && model.theta_dim() > 0;
    let d = start.laplace.chol.nrows();
    let pre = MeanPreconditioned::new(family, start.laplace.chol.clone(), phi0.rows(0, d).into_owned());
    let elbo = Elbo {
        model,
        family: pre,
        fixed_theta: if learn { None } else { Some(theta.clone()) },
    };
    let x0 = elbo.pack(&elbo.family.from_inner(phi0), theta);
    let mut trace = Vec::new();
    let mut outcome = {
        let _t = timing::span("vi: optimise");
        let mut rec = Recorder {
            inner: obs,
            trace: &mut trace,
        };
        optim::maximize_with(
            |x| elbo.value_grad(x),
            x0,
            &settings.common.optim(),
            &mut rec,
            &mut curvature,
        )
    };
    let (psi, theta) = elbo.unpack(&outcome.x);
    let phi = elbo.family.to_inner(&psi);
    let Elbo {
        model,
        family: pre,
        fixed_theta,
    } = elbo;
    let elbo = Elbo {
        model,
        fixed_theta,
        family: pre.inner,
    };
    outcome.x = elbo.pack(&phi, &theta);
    Run {
        elbo,
        outcome,
        trace,
        curvature,
    }
}

/// A first stage on fewer draws (`vi_diag`'s two starts, [`crate::infer::vi_diag`]) uses
/// S / this many of the fixed draws …
pub const SUB_FRACTION: usize = 8;

/// … when that is at least this many; with fewer fixed draws there is no first stage.
pub const MIN_SUB_SAMPLES: usize = 64;

/// How many of the S fixed draws a first stage uses, or `None` for no first stage.
pub fn sub_samples(samples: usize) -> Option<usize> {
    let sub = samples / SUB_FRACTION;
    (sub >= MIN_SUB_SAMPLES).then_some(sub)
}

/// `start` with only the first `sub` of its fixed draws.
pub fn on_sub_draws(start: &Start, sub: usize) -> Start {
    Start {
        laplace: start.laplace.clone(),
        z: start.z.columns(0, sub).into_owned(),
    }
}

/// Continue `run` (made on some of `start`'s draws) on `family` (all of them), from its φ
/// and θ, with its L-BFGS curvature pairs.
pub fn resume<'a, F: Family, G: Family>(
    model: &'a dyn LogDensity,
    family: F,
    run: Run<'a, G>,
    start: &Start,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    let (phi, theta) = run.elbo.unpack(&run.outcome.x);
    let mut from = start.clone();
    from.laplace.theta = theta;
    let _t = timing::span("vi: second stage (all S)");
    optimise_from(model, family, &phi, &from, settings, obs, run.curvature)
}

/// [`finish`], then the remedy for over-fitting when `grow_samples` is on: while the ELBO
/// on the S fixed draws exceeds its fresh-draw estimate by more than 3 standard errors, S
/// doubles (new draws, up to [`MAX_SAMPLE_GROWTH`]·S) and the ELBO is re-optimised from
/// the fit so far; a note says so. `family` builds the method's family on a start's draws.
/// Where the first fit is not over-fitted nothing changes, the random stream included.
pub fn finish_growing<'a, F: Family>(
    name: &str,
    mut run: Run<'a, F>,
    mut start: Start,
    settings: &ViSettings,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
    family: impl Fn(&Start) -> F,
) -> Posterior {
    let model = run.elbo.model;
    let mut s = *settings;
    let mut grown: Vec<String> = Vec::new();
    loop {
        let (phi, theta) = run.elbo.unpack(&run.outcome.x);
        let mut post = finish(name, run, start.clone(), &s, rng);
        let train = post.objective.unwrap_or(f64::NAN);
        let over = post
            .fresh_elbo
            .is_some_and(|(e, se)| train.is_finite() && e.is_finite() && train > e + 3.0 * se);
        if !(s.grow_samples && over && s.samples * 2 <= settings.samples * MAX_SAMPLE_GROWTH) {
            post.notes.extend(grown);
            return post;
        }
        let (e, se) = post.fresh_elbo.expect("checked above");
        grown.push(format!(
            "over-fitted to S = {} fixed draws (ELBO {train:.3} on them, {e:.3} ± {se:.3} on fresh \
             draws): re-optimised with S = {}",
            s.samples,
            2 * s.samples
        ));
        s.samples *= 2;
        obs.phase(&format!("{name}: S = {}", s.samples));
        start.z = standard_normal(model.dim(), s.samples, rng);
        start.laplace.theta = theta;
        run = optimise(model, family(&start), &phi, &start, &s, obs);
    }
}

/// Turn a run into the method's posterior: fresh-draw ELBO from `rng` (S draws), notes.
pub fn finish<F: Family>(
    name: &str,
    run: Run<'_, F>,
    start: Start,
    settings: &ViSettings,
    rng: &mut dyn RngCore,
) -> Posterior {
    let (phi, theta) = run.elbo.unpack(&run.outcome.x);
    let q = run.elbo.family.gaussian(&phi);
    timing::count("vi: iterations", run.outcome.iterations);
    let fresh = {
        let _t = timing::span("vi: fresh-draw ELBO");
        fresh_elbo(run.elbo.model, &theta, &q, settings.samples, rng)
    };
    let mut notes = start.laplace.notes;
    if !run.outcome.converged {
        notes.push(not_converged(&format!("{name} ELBO optimisation"), &run.outcome));
    }
    let train = run.outcome.value;
    notes.extend(non_finite_elbo_notes(&run.outcome, fresh, settings.samples));
    if train > fresh.0 + 3.0 * fresh.1 {
        notes.push(format!(
            "the ELBO on the fixed samples ({train:.3}) exceeds its fresh-draw estimate ({:.3} ± {:.3}) by more \
             than 3 standard errors: the fit is tuned to the fixed samples; try a larger `samples`",
            fresh.0, fresh.1
        ));
    }
    Posterior {
        method: name.to_string(),
        approx: Approximation::Gaussian(q),
        theta,
        objective: Some(train),
        log_evidence: Some(start.laplace.log_evidence).filter(|v| v.is_finite()),
        trace: run.trace,
        iterations: run.outcome.iterations,
        converged: run.outcome.converged,
        notes,
        fresh_elbo: Some(fresh),
        resampling: None,
    }
}

/// Notes naming the cause when the fixed-sample ELBO, its gradient or the fresh-draw ELBO is
/// not finite: such a fit is not usable and must not pass for one.
fn non_finite_elbo_notes(outcome: &Outcome, fresh: (f64, f64), samples: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if !outcome.value.is_finite() {
        notes.push(format!(
            "the ELBO is not finite on the fixed samples ({}) after {} iterations: log p̃ or \
             log q is not finite at some of the {samples} fixed draws (a draw outside the \
             model's support, or a singular covariance root); the fit is not usable",
            outcome.value, outcome.iterations
        ));
    } else if !outcome.grad_norm.is_finite() {
        notes.push(format!(
            "the ELBO gradient is not finite (norm {}) after {} iterations: the model's \
             gradient overflows at some of the fixed draws; the fit is not usable",
            outcome.grad_norm, outcome.iterations
        ));
    }
    if !fresh.0.is_finite() {
        notes.push(format!(
            "the fresh-draw ELBO is not finite ({}): log p̃ − log q is not finite at some of \
             the {samples} fresh draws of q, so it is not reported",
            fresh.0
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(value: f64, grad_norm: f64) -> Outcome {
        Outcome {
            x: DVector::zeros(1),
            value,
            grad_norm,
            iterations: 0,
            converged: false,
            interrupted: false,
        }
    }

    #[test]
    fn a_first_stage_uses_an_eighth_of_the_draws_when_that_is_at_least_64() {
        assert_eq!(sub_samples(1000), Some(125));
        assert_eq!(sub_samples(512), Some(64));
        assert_eq!(sub_samples(511), None);
        assert_eq!(sub_samples(200), None);
    }

    #[test]
    fn a_non_finite_elbo_or_gradient_is_named_in_a_note() {
        assert!(non_finite_elbo_notes(&outcome(-3.0, 0.1), (-3.1, 0.1), 10).is_empty());
        let n = non_finite_elbo_notes(&outcome(f64::NEG_INFINITY, f64::NAN), (-3.1, 0.1), 10);
        assert!(
            n.len() == 1 && n[0].contains("not finite on the fixed samples"),
            "{n:?}"
        );
        let n = non_finite_elbo_notes(&outcome(-3.0, f64::NAN), (-3.1, 0.1), 10);
        assert!(n.len() == 1 && n[0].contains("gradient is not finite"), "{n:?}");
        let n = non_finite_elbo_notes(&outcome(-3.0, 0.1), (f64::NEG_INFINITY, f64::INFINITY), 10);
        assert!(
            n.len() == 1 && n[0].contains("fresh-draw ELBO is not finite"),
            "{n:?}"
        );
    }
}
