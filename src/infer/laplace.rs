//! `laplace`: q(w) = N(w*, (−H)⁻¹) at the mode w* of log p̃, H the exact Hessian there.
//!
//! Objective: log p̃(w | θ), maximised over w by the configured optimiser (L-BFGS by
//! default). With hyperparameters (`hyper`, `learn_hyper = true`) θ maximises the Laplace log
//! evidence log p̃(w*) + (D/2) log 2π − ½ log det(−H) by an outer search, re-finding w*(θ)
//! from the previous mode for every θ: derivative-free (Nelder–Mead) for at most
//! [`SIMPLEX_MAX_THETA`] entries in θ, L-BFGS on [`evidence_gradient`] for more. Cost: one gradient per
//! optimiser step and one Hessian per θ visited. The same fit initialises every MVI and VI
//! method ([`fit_laplace`]). With `restarts = K`, K further mode searches from random starts
//! (the initial point plus U(−2, 2) per coordinate) run at the final θ and the highest mode
//! is kept, with a note.
//!
//! Failures are errors the user can act on: a Hessian that is not negative definite at the
//! mode ([`Error::NotNegativeDefinite`], after up to 5 restarts beside a saddle point), or no
//! mode at all ([`Error::NoMode`]): the search ran into the neck of a funnel, a scale
//! parameter → 0 with the values it scales collapsed and log p̃ → +∞
//! ([`runaway_coordinates`] says how that is recognised).
//!
//! This file holds the method, the fit and the curvature at the mode; the mode search and its
//! Newton polish are in `laplace/mode.rs`, the θ search in `laplace/theta.rs`, and the
//! diagnosis of a log p̃ without a mode in `laplace/no_mode.rs`.
//!
//! # Reference
//! MacKay, "Bayesian interpolation", Neural Computation 4 (1992); Gianniotis, "Mixed
//! Variational Inference" (2019), §III-D.

mod mode;
mod no_mode;
mod theta;

pub use no_mode::{runaway_coordinates, NoMode, Runaway, RUNAWAY_EXTENT, RUNAWAY_SLOPE};
pub use theta::{evidence_gradient, SIMPLEX_MAX_THETA};

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::{value_grad, LogDensity};
use crate::diagnostic::Diagnostic;
use crate::infer::optim::Outcome;
use crate::infer::settings::{Common, Reader};
use crate::infer::timing;
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Approximation, Gaussian, IterRecord, Posterior};
use mode::{escape_saddle, polished_mode, MAX_SADDLE_ESCAPES};
use theta::{search_theta, search_theta_gradient};

/// Options of `laplace`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Settings {
    /// `max_iters`, `tol`, `optimizer`, `learn_hyper` (see [`Common`]).
    pub common: Common,
}

/// Read `laplace`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let r = Reader::new(options, "laplace", &["optimizer", "restarts", "psis_resample"])?;
    Ok(Box::new(Laplace {
        settings: Settings {
            common: Common::read(&r)?,
        },
    }))
}

/// The Laplace approximation.
#[derive(Debug, Clone, Default)]
pub struct Laplace {
    /// Its options.
    pub settings: Settings,
}

impl Method for Laplace {
    fn name(&self) -> &'static str {
        "laplace"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let fit = fit_laplace(model, &self.settings.common, rng, obs)?;
        Ok(fit.into_posterior())
    }
}

/// The result of a Laplace fit, also the starting point of every MVI/VI method.
#[derive(Debug, Clone)]
pub struct LaplaceFit {
    /// The mode w*.
    pub mode: DVector<f64>,
    /// θ (optimised on the evidence when learned).
    pub theta: DVector<f64>,
    /// C, the lower Cholesky factor of Σ_LA = (−H)⁻¹.
    pub chol: DMatrix<f64>,
    /// log p̃(w* | θ).
    pub log_p: f64,
    /// The Laplace log evidence.
    pub log_evidence: f64,
    /// Iterations of the final mode search.
    pub iterations: usize,
    /// Whether the final mode search converged.
    pub converged: bool,
    /// The final mode search's trace.
    pub trace: Vec<IterRecord>,
    /// Remarks for the report.
    pub notes: Vec<String>,
}

impl LaplaceFit {
    /// Σ_LA = C Cᵀ.
    pub fn cov(&self) -> DMatrix<f64> {
        &self.chol * self.chol.transpose()
    }

    /// The `laplace` method's posterior.
    pub fn into_posterior(self) -> Posterior {
        Posterior {
            method: "laplace".into(),
            approx: Approximation::Gaussian(Gaussian {
                mean: self.mode,
                root: self.chol,
            }),
            theta: self.theta,
            objective: Some(self.log_p),
            log_evidence: Some(self.log_evidence),
            trace: self.trace,
            iterations: self.iterations,
            converged: self.converged,
            notes: self.notes,
            fresh_elbo: None,
            resampling: None,
        }
    }
}

/// Fit the Laplace approximation (with θ on the evidence when `common.learn_hyper`).
///
/// # Errors
/// [`Error::NonFiniteStart`] when log p̃ is not finite at the initial point;
/// [`Error::NoMode`] when log p̃ has no maximum: the search ran off towards the edge of the
/// parameter space while log p̃ kept rising (a funnel; see [`runaway_coordinates`]);
/// [`Error::NotNegativeDefinite`] when −H at the mode is not positive definite.
pub fn fit_laplace(
    model: &dyn LogDensity,
    common: &Common,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<LaplaceFit, Error> {
    let start = model.initial_point();
    let mut theta = model.theta_init();
    let (v0, _) = value_grad(model, &theta, &start);
    if !v0.is_finite() {
        return Err(Error::NonFiniteStart { value: v0 });
    }
    let opts = common.optim();
    let mut notes = Vec::new();
    let mut mode_start = start.clone();
    if common.learn_hyper && model.theta_dim() > 0 {
        obs.phase("laplace: hyperparameters");
        let _t = timing::span("laplace: θ search");
        if model.theta_dim() > SIMPLEX_MAX_THETA {
            let (t, mode) = search_theta_gradient(model, &theta, &start, &opts, obs);
            theta = t;
            // the mode at the last θ starts the final fit: `max_iters` capped the θ steps
            // (the paper's short search runs), not this mode search
            mode_start = mode;
        } else {
            theta = search_theta(model, &theta, &start, &opts, obs);
        }
    }
    obs.phase("laplace");
    let mut trace = Vec::new();
    let mut rec = Recorder {
        inner: obs,
        trace: &mut trace,
    };
    let mut out = polished_mode(model, &theta, mode_start, None, &opts, &mut rec).0;
    let mut iterations = out.iterations;
    let mut escapes = 0;
    let (mut chol, mut log_det_neg_h) = loop {
        let (h, result) = {
            let _t = timing::span("laplace: hessian, cholesky");
            let h = model.hessian(&theta, &out.x);
            let result = curvature_of(&h);
            (h, result)
        };
        if result.is_err() {
            let runaway = runaway_coordinates(model, &theta, &out.x, &h);
            if !runaway.is_empty() {
                return Err(Error::NoMode(Box::new(NoMode {
                    log_p: out.value,
                    log_p_start: v0,
                    iterations,
                    runaway,
                })));
            }
        }
        match result {
            Err(Error::NotNegativeDefinite { max_eig, .. })
                if max_eig > 0.0 && escapes < MAX_SADDLE_ESCAPES && !out.interrupted =>
            {
                let Some(x) = escape_saddle(model, &theta, &out) else {
                    break result?;
                };
                escapes += 1;
                out = polished_mode(model, &theta, x, None, &opts, &mut rec).0;
                iterations += out.iterations;
            }
            result => break result?,
        }
    };
    if common.restarts > 0 && !out.interrupted {
        let _t = timing::span("laplace: restarts");
        let first = out.value;
        let (mut done, mut better) = (0, 0);
        while done < common.restarts {
            let x0 = random_start(&start, rng);
            // the user's observer sees the restarts' iterations (progress, Ctrl-C), the
            // trace keeps the first search's
            let o = polished_mode(model, &theta, x0, None, &opts, &mut *rec.inner).0;
            iterations += o.iterations;
            if o.interrupted {
                break;
            }
            done += 1;
            if !(o.value.is_finite() && o.value > out.value + 1e-9 * out.value.abs().max(1.0)) {
                continue;
            }
            if let Ok((c, l)) = curvature_of(&model.hessian(&theta, &o.x)) {
                (out, chol, log_det_neg_h) = (o, c, l);
                better += 1;
            }
        }
        notes.push(restart_note(done, better, first, out.value));
        if done < common.restarts {
            notes.push(format!(
                "laplace: interrupted after {done} of {} restart(s); the best mode so far is reported",
                common.restarts
            ));
        }
    }
    if escapes > 0 {
        notes.push(format!(
            "the laplace mode search stopped at a saddle point of log p̃ (H had a positive \
             eigenvalue) and was restarted along that direction {escapes} time(s); the mode found \
             is a local maximum, but the posterior has several"
        ));
    }
    if !out.converged {
        notes.push(not_converged("laplace mode search", &out));
    }
    out.iterations = iterations;
    let d = out.x.len() as f64;
    Ok(LaplaceFit {
        log_evidence: out.value + 0.5 * d * (2.0 * std::f64::consts::PI).ln() - 0.5 * log_det_neg_h,
        log_p: out.value,
        mode: out.x,
        theta,
        chol,
        iterations: out.iterations,
        converged: out.converged,
        trace,
        notes,
    })
}

/// Half-width of the box around the initial point that restarts draw from: Stan's default
/// initialisation, uniform on (−2, 2) on the unconstrained scale.
const RESTART_RADIUS: f64 = 2.0;

/// A restart's starting point: `start` plus independent U(−2, 2) offsets.
fn random_start(start: &DVector<f64>, rng: &mut dyn RngCore) -> DVector<f64> {
    use rand::Rng;
    start.map(|x| x + rng.random_range(-RESTART_RADIUS..RESTART_RADIUS))
}

/// The report's remark on `restarts`: how many of them raised the mode, and by how much.
fn restart_note(restarts: usize, better: usize, first: f64, best: f64) -> String {
    if better == 0 {
        format!(
            "laplace: none of {restarts} restart(s) from random starts found a mode higher than \
             the first (log p̃ {first:.4})"
        )
    } else {
        format!(
            "laplace: {better} of {restarts} restart(s) from random starts found a higher mode; \
             the highest is reported (log p̃ {best:.4}, {:.4} above the first search's): the \
             posterior has several modes, and the Gaussian describes one of them",
            best - first
        )
    }
}

/// The note added when an optimisation stops before its rule is met.
pub fn not_converged(what: &str, out: &Outcome) -> String {
    if out.interrupted {
        format!("{what} interrupted after {} iterations", out.iterations)
    } else {
        format!(
            "{what} not converged after {} iterations (gradient norm {:.3e})",
            out.iterations, out.grad_norm
        )
    }
}

/// An observer that keeps the trace and forwards to another.
pub struct Recorder<'a> {
    /// Where records are forwarded.
    pub inner: &'a mut dyn Observer,
    /// The records seen.
    pub trace: &'a mut Vec<IterRecord>,
}

impl Observer for Recorder<'_> {
    fn iteration(&mut self, record: &IterRecord) -> bool {
        if timing::trace_enabled() {
            self.inner.trace_line(&format!(
                "iter {:5}  objective {:.12e}  |grad| {:.3e}\n",
                record.iter, record.objective, record.grad_norm
            ));
        }
        self.trace.push(*record);
        self.inner.iteration(record)
    }
    fn phase(&mut self, name: &str) {
        self.inner.phase(name);
    }
    fn trace_line(&mut self, line: &str) {
        self.inner.trace_line(line);
    }
}

/// C with C Cᵀ = (−H)⁻¹ (lower triangular) and log det(−H).
///
/// # Errors
/// [`Error::NotNegativeDefinite`] with H's eigenvalue range when −H is not (numerically)
/// positive definite: an eigenvalue ≥ 0, or a condition number above 10¹².
pub fn curvature(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    mode: &DVector<f64>,
) -> Result<(DMatrix<f64>, f64), Error> {
    curvature_of(&model.hessian(theta, mode))
}

/// [`curvature`] from the Hessian H itself.
fn curvature_of(h: &DMatrix<f64>) -> Result<(DMatrix<f64>, f64), Error> {
    let neg_h = (h + h.transpose()) * -0.5;
    let eig = neg_h.clone().symmetric_eigenvalues();
    let (min, max) = eig.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &e| {
        (lo.min(e), hi.max(e.abs()))
    });
    // H's eigenvalues are those of −H negated: the largest is −min, the smallest −(most
    // positive of −H)
    let most = eig.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let not_pd = || Error::NotNegativeDefinite {
        max_eig: -min,
        min_eig: -most,
    };
    if !(min.is_finite() && min > 1e-12 * max.max(1e-300)) {
        return Err(not_pd());
    }
    let r = neg_h.cholesky().ok_or_else(not_pd)?;
    let log_det = 2.0 * r.l().diagonal().iter().map(|x| x.ln()).sum::<f64>();
    let sigma = r.inverse();
    let sigma = (&sigma + sigma.transpose()) * 0.5;
    let c = sigma.cholesky().ok_or_else(not_pd)?.l();
    Ok((c, log_det))
}

#[cfg(test)]
mod tests;
