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
use crate::infer::laplace::{
    curvature as laplace_curvature, fit_laplace, not_converged, LaplaceFit, Recorder,
};
use crate::infer::objective::{fresh_elbo, Elbo, Family, MeanPreconditioned};
use crate::infer::optim::{self, Curvature, Outcome};
use crate::infer::settings::{Batch, Common, Reader, VI_KEYS};
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
    /// Whether the ELBO optimisation also stops once settled in its Monte Carlo noise
    /// ([`SETTLE_FRACTION`]); true except in the first stage of a two-stage fit
    /// ([`ViSettings::first_stage`]).
    pub settle: bool,
    /// `batch`: data rows per step ([`crate::infer::minibatch`]).
    pub batch: Batch,
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
            settle: true,
            batch: Batch::Auto,
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
            settle: true,
            batch: r.batch()?,
        })
    }

    /// These settings for the first stage of a two-stage fit, on S / 8 draws
    /// ([`optimise_staged`], `vi_diag`'s two starts): run to the tolerance `tol`, never
    /// stopped as settled in the noise, because the first stage's optimum decides between
    /// starts and a plateau on the way to a better one can look settled (vehicle's RBF
    /// features, split 1: `vi_diag`'s start from σ² = 10⁻⁴ stopped 305 nats below the
    /// optimum it reaches).
    pub fn first_stage(&self) -> ViSettings {
        ViSettings {
            settle: false,
            ..*self
        }
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
    /// The factor C of the mean's coordinates μ = μ₀ + C ν at the end of the run (the
    /// curvature pairs are in those coordinates).
    pub precond: DMatrix<f64>,
}

/// Maximise the fixed-sample ELBO of `family` from φ₀ and the Laplace θ.
///
/// The mean block is optimised in the coordinates of [`MeanPreconditioned`] (C the start's
/// Laplace factor, renewed when θ moves far, see [`DRIFT`]); the run returned is in the
/// family's own coordinates φ (only the outcome's gradient norm stays in the optimiser's).
/// It stops when the ELBO has settled within its Monte Carlo noise ([`SETTLE_FRACTION`]).
pub fn optimise<'a, F: Family>(
    model: &'a dyn LogDensity,
    family: F,
    phi0: &DVector<f64>,
    start: &Start,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    let from = Resumed {
        theta: start.laplace.theta.clone(),
        precond: start.laplace.chol.clone(),
        curvature: Curvature::default(),
        drift: Some(DRIFT),
    };
    optimise_from(model, family, phi0, from, settings, obs)
}

/// Where an optimisation resumes: θ, the mean's coordinates C and L-BFGS's curvature pairs
/// in them (empty for a plain start); `drift`, the θ move that renews C ([`DRIFT`]; `None`:
/// never).
struct Resumed {
    theta: DVector<f64>,
    precond: DMatrix<f64>,
    curvature: Curvature,
    drift: Option<f64>,
}

/// L-BFGS pairs kept by the ELBO optimisations (10 elsewhere). An evaluation costs S
/// model gradients, against O(memory · D) for the two-loop recursion, so more pairs cost
/// nothing that shows; the mean's coordinates are the Laplace precision's, so what the
/// pairs must learn is θ and its coupling with the rest. On vehicle's RBF features (D =
/// 124, θ = (α, r), `mvi bench paper --protocol fixed-centres-rbf`, split 1) 30 pairs take
/// `mvi_lr` from 207 iterations to 108 and `mvi_eig` from 106 to 66.
pub const ELBO_MEMORY: usize = 30;

/// When learned θ has moved this far from where the mean's coordinates C were computed (in
/// any entry, on the unconstrained scale: a factor e^0.5 ≈ 1.65 in α or r), the run stops,
/// C is renewed from the curvature of log p̃ at the current mean and θ, and the run goes on
/// from where it stopped in the new coordinates (L-BFGS's pairs carried into them).
///
/// The Laplace factor at the start's θ is the right scale of the mean only near that θ: a
/// mean-field fit on vehicle's RBF features (D = 124) takes α from 8·10⁻⁵ to 0.08 and r from
/// 7.9 to 1.35, and with the stale C its ELBO had gained 2 nats in 1000 iterations without
/// converging; started with C at the θ it reaches it converges in 60.
pub const DRIFT: f64 = 0.5;

/// Forwards iterations to `inner` with their numbers shifted by `offset`, and stops the run
/// (without counting as an interruption by `inner`) once the last θ evaluated is more than
/// `drift` from `anchor`.
struct DriftWatch<'o, 'c> {
    inner: &'o mut dyn Observer,
    offset: usize,
    anchor: Option<DVector<f64>>,
    drift: f64,
    last_theta: &'c std::cell::RefCell<DVector<f64>>,
    drifted: bool,
    /// The objective's last [`SETTLE_WINDOW`] + 1 values, oldest first.
    recent: std::collections::VecDeque<f64>,
    /// The Monte Carlo standard error of the last evaluated ELBO.
    last_se: &'c std::cell::Cell<f64>,
    /// Whether to stop once settled.
    settle: bool,
    settled: bool,
}

/// The ELBO optimisations stop when, over the last [`SETTLE_WINDOW`] iterations, the ELBO
/// on the fixed draws has gained less than this fraction of its own Monte Carlo standard
/// error (the sd of log p̃ over the draws / √S) …
pub const SETTLE_FRACTION: f64 = 0.1;

/// … iterations. Such gains are fitted to the fixed draws' particulars as much as to the
/// posterior: on vehicle's RBF features (`mvi bench paper --protocol fixed-centres-rbf`,
/// split 0) `mvi_lr`'s ELBO rose 0.13 nats in its last 155 of 255 iterations, a quarter of
/// its fresh-draw standard error, while its fresh-draw estimate fell 2.4 nats below the
/// fixed-draw value. Where q fits the posterior nearly exactly the relative tolerance
/// `tol` stops first.
pub const SETTLE_WINDOW: usize = 25;

/// … and only when its last this many steps gained no faster than the window's average: an
/// optimiser accelerating off a plateau has not settled.
pub const SETTLE_RECENT: usize = 5;

impl DriftWatch<'_, '_> {
    /// Whether the last [`SETTLE_WINDOW`] iterations gained less than [`SETTLE_FRACTION`]
    /// standard errors.
    fn settles(&mut self, objective: f64) -> bool {
        self.recent.push_back(objective);
        if self.recent.len() > SETTLE_WINDOW + 1 {
            self.recent.pop_front();
        }
        let (Some(first), Some(last)) = (self.recent.front(), self.recent.back()) else {
            return false;
        };
        let n = self.recent.len();
        let gain = last - first;
        // the last SETTLE_RECENT steps gained no faster than the window's average: not
        // leaving a plateau
        let last_steps = last - self.recent[n.saturating_sub(SETTLE_RECENT + 1)];
        n == SETTLE_WINDOW + 1
            && last.is_finite()
            && gain < SETTLE_FRACTION * self.last_se.get()
            && last_steps * SETTLE_WINDOW as f64 <= gain * SETTLE_RECENT as f64
    }
}

impl Observer for DriftWatch<'_, '_> {
    fn iteration(&mut self, record: &IterRecord) -> bool {
        let shifted = IterRecord {
            iter: record.iter + self.offset,
            ..*record
        };
        if !self.inner.iteration(&shifted) {
            return false;
        }
        if self.settle && self.settles(record.objective) {
            self.settled = true;
            return false;
        }
        if let Some(anchor) = &self.anchor {
            let theta = self.last_theta.borrow();
            if (&*theta - anchor).amax() > self.drift {
                self.drifted = true;
                return false;
            }
        }
        true
    }
    fn phase(&mut self, name: &str) {
        self.inner.phase(name);
    }
    fn trace_line(&mut self, line: &str) {
        self.inner.trace_line(line);
    }
}

/// L-BFGS's pairs carried from the mean's coordinates ν (μ = μ₀ + C ν) to ν′ (μ = μ₀′ + C′ ν′):
/// ν = C⁻¹ C′ ν′ + b, so a step's mean block becomes C′⁻¹ C s and a gradient change's
/// C′ᵀ C⁻ᵀ y; the other blocks stay. Dropping the pairs instead cost the learned-centres
/// softmax_rbf_iris example its convergence (1000 iterations against 783).
fn carry_pairs(curvature: &mut Curvature, old: &DMatrix<f64>, new: &DMatrix<f64>) {
    let d = old.nrows();
    curvature.change_coordinates(
        |s| {
            let mut s = s.clone();
            let mean = new
                .solve_lower_triangular(&(old * s.rows(0, d)))
                .unwrap_or_else(|| DVector::from_element(d, f64::NAN));
            s.rows_mut(0, d).copy_from(&mean);
            s
        },
        |y| {
            let mut y = y.clone();
            let mean = old
                .tr_solve_lower_triangular(&y.rows(0, d).into_owned())
                .map(|v| new.tr_mul(&v))
                .unwrap_or_else(|| DVector::from_element(d, f64::NAN));
            y.rows_mut(0, d).copy_from(&mean);
            y
        },
    );
}

/// [`optimise`] from `from`: θ, the mean's coordinates and L-BFGS's pairs of an earlier run.
fn optimise_from<'a, F: Family>(
    model: &'a dyn LogDensity,
    family: F,
    phi0: &DVector<f64>,
    from: Resumed,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    let Resumed {
        mut theta,
        mut precond,
        mut curvature,
        drift,
    } = from;
    let learn = settings.common.learn_hyper && model.theta_dim() > 0;
    let fixed_theta = if learn { None } else { Some(theta.clone()) };
    let d = precond.nrows();
    let max_iters = settings.common.optim().max_iters;
    let mut phi = phi0.clone();
    let mut family = family;
    let mut trace = Vec::new();
    let mut anchor = drift.filter(|_| learn).map(|_| theta.clone());
    let last_theta = std::cell::RefCell::new(theta.clone());
    let last_se = std::cell::Cell::new(f64::INFINITY);
    loop {
        let used = trace.len();
        let elbo = Elbo {
            model,
            family: MeanPreconditioned::new(family, precond.clone(), phi.rows(0, d).into_owned()),
            fixed_theta: fixed_theta.clone(),
        };
        let x0 = elbo.pack(&elbo.family.from_inner(&phi), &theta);
        // the window runs on across renewals of the coordinates
        let recent = trace[trace.len().saturating_sub(SETTLE_WINDOW)..]
            .iter()
            .map(|r: &IterRecord| r.objective)
            .collect();
        let mut watch = DriftWatch {
            inner: &mut Recorder {
                inner: &mut *obs,
                trace: &mut trace,
            },
            offset: used,
            anchor: anchor.clone(),
            drift: drift.unwrap_or(f64::INFINITY),
            last_theta: &last_theta,
            drifted: false,
            recent,
            last_se: &last_se,
            settle: settings.settle,
            settled: false,
        };
        let mut outcome = {
            let _t = timing::span("vi: optimise");
            let options = optim::Options {
                max_iters: max_iters - used,
                memory: ELBO_MEMORY,
                ..settings.common.optim()
            };
            optim::maximize_with(
                |x| {
                    if learn {
                        let p = model.theta_dim();
                        last_theta.borrow_mut().copy_from(&x.rows(x.len() - p, p));
                    }
                    let (value, grad, se) = elbo.value_grad_se(x);
                    last_se.set(se);
                    (value, grad)
                },
                x0,
                &options,
                &mut watch,
                &mut curvature,
            )
        };
        let (drifted, settled) = (watch.drifted, watch.settled);
        let (psi, t) = elbo.unpack(&outcome.x);
        phi = elbo.family.to_inner(&psi);
        theta = t;
        let Elbo { family: pre, .. } = elbo;
        family = pre.inner;
        if drifted || settled {
            // stopped by the watch, not by the caller's observer
            outcome.interrupted = false;
        }
        if settled {
            outcome.converged = true;
        }
        if drifted && outcome.value.is_finite() && trace.len() < max_iters {
            anchor = Some(theta.clone());
            // −H not positive definite at the mean: the old coordinates stay
            if let Ok((c, _)) = laplace_curvature(model, &theta, &phi.rows(0, d).into_owned()) {
                timing::count("vi: coordinates renewed", 1);
                carry_pairs(&mut curvature, &precond, &c);
                precond = c;
            }
            continue;
        }
        outcome.iterations = trace.len();
        let elbo = Elbo {
            model,
            fixed_theta,
            family,
        };
        outcome.x = elbo.pack(&phi, &theta);
        return Run {
            elbo,
            outcome,
            trace,
            curvature,
            precond,
        };
    }
}

/// [`optimise`] in two stages when S allows one ([`sub_samples`]): first on the first S / 8 of
/// the fixed draws, then on all S from where it ended, with the mean's coordinates and
/// L-BFGS's pairs carried over. The objective is that on all S draws; the first stage
/// costs S / 8 draws per evaluation and hands the second a start next to its optimum, as
/// in `vi_diag` ([`crate::infer::vi_diag`]). `family` builds the method's family on a
/// start's draws. For families with few covariance parameters (`mvi_mu`, `mvi_eig`): on
/// vehicle's RBF features (`mvi bench paper --protocol fixed-centres-rbf`, split 0)
/// `mvi_eig` takes 2.5 s instead of 3.9. `mvi_lr`'s 2Dk parameters fitted the S / 8 draws'
/// particulars instead (an ELBO of −1454 on all the draws after the first stage).
pub fn optimise_staged<'a, F: Family>(
    model: &'a dyn LogDensity,
    family: impl Fn(&Start) -> F,
    phi0: &DVector<f64>,
    start: &Start,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    let Some(sub) = sub_samples(start.z.ncols()) else {
        return optimise(model, family(start), phi0, start, settings, obs);
    };
    let small = on_sub_draws(start, sub);
    let first = {
        let _t = timing::span("vi: first stage (S / 8)");
        optimise(model, family(&small), phi0, &small, &settings.first_stage(), obs)
    };
    resume(model, family(start), first, settings, obs)
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

/// Continue `run` (made on some of the fixed draws) on `family` (all of them), from its φ
/// and θ, with its mean's coordinates and L-BFGS curvature pairs.
pub fn resume<'a, F: Family, G: Family>(
    model: &'a dyn LogDensity,
    family: F,
    run: Run<'a, G>,
    settings: &ViSettings,
    obs: &mut dyn Observer,
) -> Run<'a, F> {
    let (phi, theta) = run.elbo.unpack(&run.outcome.x);
    let from = Resumed {
        theta,
        precond: run.precond,
        curvature: run.curvature,
        drift: Some(DRIFT),
    };
    let _t = timing::span("vi: second stage (all S)");
    optimise_from(model, family, &phi, from, settings, obs)
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
        let precond = run.precond.clone();
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
        start.laplace.theta = theta.clone();
        let from = Resumed {
            theta,
            precond,
            curvature: Curvature::default(),
            drift: Some(DRIFT),
        };
        run = optimise_from(model, family(&start), &phi, from, &s, obs);
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
    use crate::density::{Evaluated, Want};
    use crate::infer::mvi_eig::{stack, Scaled};
    use crate::infer::Silent;
    use rand::SeedableRng;

    const DS: usize = 30;

    /// k_d = 3 d / (D − 1), d = 0 … D − 1.
    fn k(d: usize) -> f64 {
        3.0 * d as f64 / (DS - 1) as f64
    }

    /// log p̃(w | θ) = Σ_d (−½ e^{θ k_d} w_d² + ½ θ k_d) − 2 (θ − 3)²: a Gaussian whose
    /// precisions are all 1 at θ = 0 and spread from 1 to e⁹ at θ = 3, so θ moves the
    /// posterior's shape, not only its scale. The diagonal-Gaussian ELBO is largest at θ = 3,
    /// μ = 0, σ_d = e^{−3 k_d / 2} (the θ-dependence of the optimal σ cancels).
    struct Stretching;

    impl LogDensity for Stretching {
        fn dim(&self) -> usize {
            DS
        }
        fn theta_dim(&self) -> usize {
            1
        }
        fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            let th = t[0];
            let mut values = DVector::zeros(w.ncols());
            let mut g = DMatrix::zeros(DS, w.ncols());
            let mut gt = DMatrix::zeros(1, w.ncols());
            for (s, col) in w.column_iter().enumerate() {
                values[s] = -2.0 * (th - 3.0).powi(2);
                gt[(0, s)] = -4.0 * (th - 3.0);
                for d in 0..DS {
                    let p = (th * k(d)).exp();
                    values[s] += -0.5 * p * col[d] * col[d] + 0.5 * th * k(d);
                    g[(d, s)] = -p * col[d];
                    gt[(0, s)] += -0.5 * k(d) * p * col[d] * col[d] + 0.5 * k(d);
                }
            }
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: want.grad_theta.then_some(gt),
            }
        }
        fn hessian(&self, t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_diagonal(&DVector::from_fn(DS, |d, _| -(t[0] * k(d)).exp()))
        }
    }

    #[test]
    fn renewing_the_means_coordinates_as_theta_moves_reaches_the_same_optimum_in_fewer_steps() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let z = standard_normal(DS, 200, &mut rng);
        // the Laplace fit at θ = 0: mode 0, covariance I
        let identity = DMatrix::identity(DS, DS);
        let phi0 = stack(&DVector::zeros(DS), &DVector::zeros(DS));
        // both run to the tolerance: the test compares their optima
        let settings = ViSettings::default().first_stage();
        let fit = |drift| {
            let from = Resumed {
                theta: DVector::zeros(1),
                precond: identity.clone(),
                curvature: Curvature::default(),
                drift,
            };
            let family = Scaled {
                q: None,
                z: z.clone(),
            };
            optimise_from(&Stretching, family, &phi0, from, &settings, &mut Silent)
        };
        let (renewed, stale) = (fit(Some(DRIFT)), fit(None));
        for run in [&renewed, &stale] {
            assert!(run.outcome.converged, "{:?}", run.outcome);
            let (phi, theta) = run.elbo.unpack(&run.outcome.x);
            assert!((theta[0] - 3.0).abs() < 0.05, "θ = {theta}");
            for d in 0..DS {
                let log_sd = -1.5 * k(d);
                assert!(
                    (phi[DS + d] - log_sd).abs() < 0.15,
                    "log σ_{d} {} against {log_sd}",
                    phi[DS + d]
                );
            }
            assert_eq!(run.trace.len(), run.outcome.iterations);
        }
        let (a, b) = (renewed.outcome.value, stale.outcome.value);
        assert!((a - b).abs() < 1e-6 * a.abs(), "ELBO {a} against {b}");
        // renewed at θ = 3: C = diag(e^{−3 k_d / 2}), the optimum's σ
        let c = renewed.precond.diagonal();
        assert!(
            (c[DS - 1].ln() + 4.5).abs() < 0.75,
            "C's last entry {}",
            c[DS - 1]
        );
        let (fast, slow) = (renewed.outcome.iterations, stale.outcome.iterations);
        assert!(2 * fast < slow, "iterations: renewed {fast}, stale {slow}");
    }

    #[test]
    fn a_run_settled_in_the_noise_stops_early_within_a_fraction_of_its_standard_error() {
        let (start, phi0) = identity_start(5, 200);
        let settings = ViSettings::default();
        // the stale coordinates (no renewal) make this run crawl towards its optimum
        let fit = |settle| {
            let from = Resumed {
                theta: start.laplace.theta.clone(),
                precond: start.laplace.chol.clone(),
                curvature: Curvature::default(),
                drift: None,
            };
            let family = Scaled {
                q: None,
                z: start.z.clone(),
            };
            let settings = ViSettings { settle, ..settings };
            optimise_from(&Stretching, family, &phi0, from, &settings, &mut Silent)
        };
        let (settled, full) = (fit(true), fit(false));
        assert!(settled.outcome.converged && !settled.outcome.interrupted);
        assert!(full.outcome.converged);
        let se = settled.elbo.value_grad_se(&settled.outcome.x).2;
        let (a, b) = (settled.outcome.value, full.outcome.value);
        assert!(b - a < se, "ELBO {a} settled, {b} at the tolerance, se {se}");
        let (early, late) = (settled.outcome.iterations, full.outcome.iterations);
        assert!(
            3 * early < 2 * late,
            "iterations: settled {early}, to the tolerance {late}"
        );
        assert_eq!(settled.trace.len(), early);
    }

    #[test]
    fn a_plateau_the_optimiser_is_leaving_is_not_settled_and_a_flattening_tail_is() {
        let theta = std::cell::RefCell::new(DVector::zeros(0));
        let se = std::cell::Cell::new(1.0);
        let mut silent = Silent;
        let mut watch = DriftWatch {
            inner: &mut silent,
            offset: 0,
            anchor: None,
            drift: f64::INFINITY,
            last_theta: &theta,
            drifted: false,
            recent: std::collections::VecDeque::new(),
            last_se: &se,
            settle: true,
            settled: false,
        };
        // 21 steps of 10⁻⁴, then steps growing fast: 0.066 in all, below 0.1 se, so only
        // the acceleration keeps it from settling
        let plateau = (0..SETTLE_WINDOW + 1).map(|i| {
            let i = i as f64;
            1e-4 * i.min(21.0) + 1e-3 * (i - 21.0).max(0.0).powi(3)
        });
        let settled: Vec<bool> = plateau.map(|v| watch.settles(v)).collect();
        assert!(settled.iter().all(|s| !s), "{settled:?}");
        // a tail whose steps shrink geometrically settles once the window is full
        watch.recent.clear();
        let tail: Vec<bool> = (0..SETTLE_WINDOW + 1)
            .map(|i| watch.settles(-0.05 * 0.8f64.powi(i as i32)))
            .collect();
        assert_eq!(tail.iter().position(|&s| s), Some(SETTLE_WINDOW));
        // the same tail with a standard error ten times smaller has not settled
        watch.recent.clear();
        se.set(0.1);
        assert!((0..SETTLE_WINDOW + 1).all(|i| !watch.settles(-0.05 * 0.8f64.powi(i as i32))));
    }

    /// The Laplace fit of [`Stretching`] at θ = 0 (mode 0, covariance I) with `samples` draws
    /// from `seed`, and the vi_diag start there (μ = 0, log σ = 0).
    fn identity_start(seed: u64, samples: usize) -> (Start, DVector<f64>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let z = standard_normal(DS, samples, &mut rng);
        let start = Start::from_gaussian(
            DVector::zeros(DS),
            DMatrix::identity(DS, DS),
            DVector::zeros(1),
            Vec::new(),
            z,
        );
        (start, stack(&DVector::zeros(DS), &DVector::zeros(DS)))
    }

    #[test]
    fn a_run_stopped_by_its_iteration_limit_is_not_reported_as_interrupted_whatever_the_drift() {
        let (start, phi0) = identity_start(5, 50);
        let mut renewed_at_the_limit = false;
        for max_iters in 1..=12 {
            let mut settings = ViSettings::default();
            settings.common.max_iters = max_iters;
            let family = Scaled {
                q: None,
                z: start.z.clone(),
            };
            let run = optimise(&Stretching, family, &phi0, &start, &settings, &mut Silent);
            assert!(
                !run.outcome.interrupted,
                "max_iters {max_iters}: {:?}",
                run.outcome
            );
            assert_eq!(run.outcome.iterations, run.trace.len());
            assert!(run.outcome.iterations <= max_iters);
            let theta = run.elbo.unpack(&run.outcome.x).1;
            renewed_at_the_limit |= run.outcome.iterations == max_iters && theta[0] > DRIFT;
        }
        assert!(
            renewed_at_the_limit,
            "θ never moved past the drift within the limits tried"
        );
    }

    #[test]
    fn a_staged_optimisation_reaches_the_optimum_on_all_draws_for_less_work() {
        let (start, phi0) = identity_start(8, 1000);
        let settings = ViSettings::default();
        let family = |st: &Start| Scaled {
            q: None,
            z: st.z.clone(),
        };
        let plain_model = crate::density::Counting::new(&Stretching);
        let plain = optimise(
            &plain_model,
            family(&start),
            &phi0,
            &start,
            &settings,
            &mut Silent,
        );
        let staged_model = crate::density::Counting::new(&Stretching);
        let staged = optimise_staged(&staged_model, family, &phi0, &start, &settings, &mut Silent);
        assert!(plain.outcome.converged && staged.outcome.converged);
        let (a, b) = (plain.outcome.value, staged.outcome.value);
        assert!((a - b).abs() <= 1e-8 * a.abs(), "ELBO {a} against {b}");
        let (pa, pb) = (plain.outcome.x.clone(), staged.outcome.x.clone());
        assert!((&pa - &pb).amax() < 1e-4, "{pa} against {pb}");
        let (full, cheap) = (plain_model.evals().gradient, staged_model.evals().gradient);
        assert!(
            2 * cheap < full,
            "gradient columns: staged {cheap}, on all draws {full}"
        );
    }

    #[test]
    fn curvature_pairs_carried_into_new_coordinates_describe_the_same_hessian() {
        // x = [ν; ρ] with μ = μ₀ + C ν, D = 3 and one more coordinate ρ
        let c_old = DMatrix::from_row_slice(3, 3, &[2.0, 0.0, 0.0, 0.5, 1.0, 0.0, -0.3, 0.2, 0.7]);
        let c_new = DMatrix::from_row_slice(3, 3, &[0.4, 0.0, 0.0, -0.1, 3.0, 0.0, 0.6, 0.3, 1.5]);
        let m = DMatrix::from_row_slice(
            4,
            4,
            &[
                1.0, 0.2, 0.0, 0.3, 0.1, 2.0, -0.4, 0.0, 0.5, 0.0, 1.5, 0.2, 0.0, 0.3, 0.1, 1.0,
            ],
        );
        let b = &m * m.transpose(); // the Hessian in the old coordinates
                                    // x = T x′ + const with T = diag(C_old⁻¹ C_new, 1)
        let a = c_old.clone().solve_lower_triangular(&c_new).expect("invertible");
        let mut t = DMatrix::identity(4, 4);
        t.view_mut((0, 0), (3, 3)).copy_from(&a);
        let b_new = t.transpose() * &b * &t;
        let steps = [
            DVector::from_vec(vec![1.0, -2.0, 0.5, 0.3]),
            DVector::from_vec(vec![0.0, 0.4, -1.0, 2.0]),
        ];
        let mut pairs = Curvature::default();
        for s in &steps {
            pairs.push_for_test(s.clone(), &b * s);
        }
        carry_pairs(&mut pairs, &c_old, &c_new);
        for (s, y) in pairs.pairs_for_test() {
            assert!(
                (&b_new * s - y).amax() < 1e-12,
                "y′ = {y}, B′ s′ = {}",
                &b_new * s
            );
        }
        let before: Vec<f64> = steps.iter().map(|s| s.dot(&(&b * s))).collect();
        let after: Vec<f64> = pairs.pairs_for_test().map(|(s, y)| s.dot(y)).collect();
        for (x, y) in before.iter().zip(&after) {
            assert!((x - y).abs() < 1e-12 * x.abs(), "sᵀy {x} against {y}");
        }
    }

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
