//! `laplace`: q(w) = N(w*, (−H)⁻¹) at the mode w* of log p̃, H the exact Hessian there.
//!
//! Objective: log p̃(w | θ), maximised over w by the configured optimiser (L-BFGS by
//! default). With hyperparameters (`hyper`, `learn_hyper = true`) θ maximises the Laplace log
//! evidence log p̃(w*) + (D/2) log 2π − ½ log det(−H) by a derivative-free outer search
//! (Nelder–Mead), re-finding w*(θ) from the previous mode for every θ. Cost: one gradient per
//! optimiser step and one Hessian per θ visited. The same fit initialises every MVI and VI
//! method ([`fit_laplace`]).
//!
//! # Reference
//! MacKay, "Bayesian interpolation", Neural Computation 4 (1992); Gianniotis, "Mixed
//! Variational Inference" (2019), §III-D.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::{value_grad, LogDensity};
use crate::diagnostic::Diagnostic;
use crate::infer::optim::{self, Outcome};
use crate::infer::settings::{Common, Reader};
use crate::infer::timing;
use crate::infer::{Error, InferOptions, Method, Observer, Silent};
use crate::posterior::{Approximation, Gaussian, IterRecord, Posterior};

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
    let r = Reader::new(options, "laplace", &["optimizer"])?;
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
        _rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let fit = fit_laplace(model, &self.settings.common, obs)?;
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
        }
    }
}

/// Fit the Laplace approximation (with θ on the evidence when `common.learn_hyper`).
///
/// # Errors
/// [`Error::NonFiniteStart`] when log p̃ is not finite at the initial point;
/// [`Error::NotNegativeDefinite`] when −H at the mode is not positive definite.
pub fn fit_laplace(
    model: &dyn LogDensity,
    common: &Common,
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
    if common.learn_hyper && model.theta_dim() > 0 {
        obs.phase("laplace: hyperparameters");
        let _t = timing::span("laplace: θ search");
        theta = search_theta(model, &theta, &start, &opts);
    }
    obs.phase("laplace");
    let mut trace = Vec::new();
    let mut rec = Recorder {
        inner: obs,
        trace: &mut trace,
    };
    let mut out = polished_mode(model, &theta, start, &opts, &mut rec);
    let mut iterations = out.iterations;
    let mut escapes = 0;
    let (chol, log_det_neg_h) = loop {
        let result = {
            let _t = timing::span("laplace: hessian, cholesky");
            curvature(model, &theta, &out.x)
        };
        match result {
            Err(Error::NotNegativeDefinite { max_eig, .. })
                if max_eig > 0.0 && escapes < MAX_SADDLE_ESCAPES && !out.interrupted =>
            {
                let Some(x) = escape_saddle(model, &theta, &out) else {
                    break result?;
                };
                escapes += 1;
                out = polished_mode(model, &theta, x, &opts, &mut rec);
                iterations += out.iterations;
            }
            result => break result?,
        }
    };
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
            eprintln!(
                "iter {:5}  objective {:.12e}  |grad| {:.3e}",
                record.iter, record.objective, record.grad_norm
            );
        }
        self.trace.push(*record);
        self.inner.iteration(record)
    }
    fn phase(&mut self, name: &str) {
        self.inner.phase(name);
    }
}

/// How often a mode search that ended at a saddle point is restarted from beside it.
const MAX_SADDLE_ESCAPES: usize = 5;

/// The mode search from `start` and the Newton polish of its end point.
fn polished_mode(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: DVector<f64>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> Outcome {
    let out = {
        let _t = timing::span("laplace: mode");
        find_mode(model, theta, start, opts, obs)
    };
    let _t = timing::span("laplace: newton polish");
    newton_polish(model, theta, out)
}

/// A point beside the stationary point `out.x` with a higher log p̃, along the eigenvector of
/// H's largest (positive) eigenvalue: log p̃ rises in both directions along it. Steps of
/// 1, 0.3, 0.1, 0.03 and 0.01 each way are tried and the best is kept; `None` when none of
/// them rises (the positive curvature is rounding, not a saddle).
fn escape_saddle(model: &dyn LogDensity, theta: &DVector<f64>, out: &Outcome) -> Option<DVector<f64>> {
    let h = model.hessian(theta, &out.x);
    let eig = ((&h + h.transpose()) * 0.5).symmetric_eigen();
    let (k, _) = eig
        .eigenvalues
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    let v = eig.eigenvectors.column(k).into_owned();
    let mut best: Option<(f64, DVector<f64>)> = None;
    for t in [1.0, 0.3, 0.1, 0.03, 0.01] {
        for sign in [1.0, -1.0] {
            let x = &out.x + &v * (sign * t);
            let (value, _) = value_grad(model, theta, &x);
            if value.is_finite() && value > best.as_ref().map_or(out.value, |b| b.0) {
                best = Some((value, x));
            }
        }
    }
    best.map(|(_, x)| x)
}

fn find_mode(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: DVector<f64>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> Outcome {
    optim::maximize(
        |w| {
            timing::count("laplace: log p̃ gradients", 1);
            value_grad(model, theta, w)
        },
        start,
        opts,
        obs,
    )
}

/// Up to three Newton steps w ← w − H⁻¹ ∇ from the optimiser's mode, each kept only when it
/// does not lower log p̃ and H is negative definite: the quasi-Newton stopping rules leave w*
/// accurate to about √tol, Newton steps make it accurate to rounding.
fn newton_polish(model: &dyn LogDensity, theta: &DVector<f64>, mut out: Outcome) -> Outcome {
    for _ in 0..3 {
        let (_, g) = value_grad(model, theta, &out.x);
        let neg_h = -model.hessian(theta, &out.x);
        let Some(step) = neg_h.cholesky().map(|c| c.solve(&g)) else {
            break;
        };
        let x = &out.x + step;
        let (v, g_new) = value_grad(model, theta, &x);
        if !(v.is_finite() && v >= out.value - 1e-12 * out.value.abs().max(1.0)) {
            break;
        }
        let done = g_new.norm() >= g.norm();
        out.x = x;
        out.value = v;
        out.grad_norm = g_new.norm();
        if done {
            break;
        }
    }
    out
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
    let h = model.hessian(theta, mode);
    let neg_h = (&h + h.transpose()) * -0.5;
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

/// The θ search stops when the simplex is this small (on the unconstrained scale, where a
/// change of 10⁻⁴ in log α is a relative change of 10⁻⁴ in α): the evidence is flat there
/// and its values differ by the inner fits' rounding, so the value rule alone kept the
/// search going to its evaluation limit (600 evaluations on the banana example).
const THETA_TOL: f64 = 1e-4;

/// Relative-change tolerance of the mode fits inside the θ search.
const INNER_TOL: f64 = 1e-11;

/// θ maximising the Laplace log evidence, by Nelder–Mead; each θ re-finds the mode from
/// the last one.
fn search_theta(
    model: &dyn LogDensity,
    theta0: &DVector<f64>,
    start: &DVector<f64>,
    opts: &optim::Options,
) -> DVector<f64> {
    let mut warm = start.clone();
    let d = start.len() as f64;
    // The search compares evidences to 1e-10; the inner modes must be tighter than that.
    let inner = optim::Options {
        rel_tol: opts.rel_tol.min(INNER_TOL),
        ..*opts
    };
    let evidence = |theta: &DVector<f64>| {
        timing::count("laplace: θ evidence evaluations", 1);
        let out = find_mode(model, theta, warm.clone(), &inner, &mut Silent);
        if !out.value.is_finite() {
            return f64::NEG_INFINITY;
        }
        match curvature(model, theta, &out.x) {
            Ok((_, log_det)) => {
                warm = out.x;
                out.value + 0.5 * d * (2.0 * std::f64::consts::PI).ln() - 0.5 * log_det
            }
            Err(_) => f64::NEG_INFINITY,
        }
    };
    let simplex = optim::SimplexOptions {
        step: 0.5,
        f_tol: 1e-10,
        x_tol: THETA_TOL,
        max_evals: 200 * (theta0.len() + 1),
    };
    optim::nelder_mead_max(evidence, theta0.clone(), &simplex).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::{Evaluated, Want};

    /// log p̃(w) = −w₁² + w₂²: a saddle at the origin, where the mode search starts, and no
    /// mode (log p̃ is unbounded along w₂, so escaping the saddle cannot help).
    struct Saddle;
    impl LogDensity for Saddle {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            let values =
                DVector::from_iterator(w.ncols(), w.column_iter().map(|c| -c[0] * c[0] + c[1] * c[1]));
            let mut g = w.clone();
            g.row_mut(0).scale_mut(-2.0);
            g.row_mut(1).scale_mut(2.0);
            Evaluated {
                values,
                grad_w: Some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_row_slice(2, 2, &[-2.0, 0.0, 0.0, 2.0])
        }
    }

    /// log p̃(w) = −w₁²/2 − (w₂² − 1)²: modes at (0, ±1) and a saddle at the origin, where
    /// the mode search starts and where its gradient is zero.
    struct DoubleWell;
    impl LogDensity for DoubleWell {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            let values = DVector::from_iterator(
                w.ncols(),
                w.column_iter()
                    .map(|c| -0.5 * c[0] * c[0] - (c[1] * c[1] - 1.0).powi(2)),
            );
            let mut g = w.clone();
            for mut c in g.column_iter_mut() {
                c[0] = -c[0];
                c[1] = -4.0 * c[1] * (c[1] * c[1] - 1.0);
            }
            Evaluated {
                values,
                grad_w: Some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_row_slice(2, 2, &[-1.0, 0.0, 0.0, 4.0 - 12.0 * w[1] * w[1]])
        }
    }

    #[test]
    fn a_mode_search_that_stops_at_a_saddle_is_restarted_beside_it() {
        let fit = fit_laplace(&DoubleWell, &Common::default(), &mut Silent).unwrap();
        assert!(fit.mode[0].abs() < 1e-8, "mode {}", fit.mode);
        assert!((fit.mode[1].abs() - 1.0).abs() < 1e-8, "mode {}", fit.mode);
        assert!(fit.log_p.abs() < 1e-12);
        // −H = diag(1, 8), so Σ = diag(1, 1/8)
        let cov = fit.cov();
        assert!((cov[(0, 0)] - 1.0).abs() < 1e-8 && (cov[(1, 1)] - 0.125).abs() < 1e-8);
        assert!(
            fit.notes.iter().any(|n| n.contains("saddle point")),
            "notes: {:?}",
            fit.notes
        );
    }

    #[test]
    fn positive_curvature_is_an_error_that_names_the_eigenvalue() {
        let err = fit_laplace(&Saddle, &Common::default(), &mut Silent).unwrap_err();
        match err {
            Error::NotNegativeDefinite { max_eig, .. } => assert!((max_eig - 2.0).abs() < 1e-12),
            e => panic!("unexpected {e}"),
        }
        assert!(err.to_string().contains("2.000e0"));
    }

    #[test]
    fn build_rejects_samples_for_laplace() {
        use crate::infer::{InferOption, OptionValue};
        let o = InferOptions {
            entries: vec![InferOption {
                key: "samples".into(),
                value: OptionValue::Int(10),
                span: None,
            }],
            source: miette::NamedSource::new("m", String::new()),
        };
        assert!(build(&o).is_err());
    }
}
