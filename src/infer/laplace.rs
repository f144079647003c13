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
use crate::infer::{Error, InferOptions, Method, Observer};
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

/// How far out on the unconstrained scale a coordinate must be before the mode search is
/// said to have run off with it: |w_i| ≥ 12, i.e. a log-transformed scale below e⁻¹² ≈ 6·10⁻⁶
/// (or above e¹² ≈ 1.6·10⁵) times its unit. On the stochastic volatility example the search
/// stops at log σ = −31.7, on eight schools written centred at log τ = −35.6, and on
/// `z[1:3] ~ normal(0, sigma)` at log σ = −708.7 (the last value before σ underflows).
pub const RUNAWAY_EXTENT: f64 = 12.0;

/// The least rise of log p̃ per unit of the coordinate, further out, for it to count as running
/// off. In a funnel the rise is about the number of values the scale collapses, less one
/// (measured: 2, 7 and 920 on the three cases above); a sup that is only approached, as with
/// a separable logistic regression, rises by far less than this, and at a mode it is 0.
pub const RUNAWAY_SLOPE: f64 = 0.25;

/// A coordinate of w that the mode search drove towards the edge of its range while log p̃
/// kept rising: the scale of a funnel.
#[derive(Debug, Clone, PartialEq)]
pub struct Runaway {
    /// The coordinate's name (from [`LogDensity::coordinate_names`]).
    pub name: String,
    /// Its index in w.
    pub index: usize,
    /// Its value on the unconstrained scale where the search stopped.
    pub unconstrained: f64,
    /// ∂ log p̃ / ∂w_i there, signed outwards (positive: log p̃ still rises further out).
    pub slope: f64,
    /// Its value on the declared scale, when the model knows the transform
    /// ([`LogDensity::coordinate_constraint`]).
    pub constrained: Option<f64>,
    /// The value it approaches on the declared scale (a bound, or ±∞), when known.
    pub limit: Option<f64>,
}

/// Where the mode search went when log p̃ has no maximum ([`Error::NoMode`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NoMode {
    /// log p̃ where the search stopped.
    pub log_p: f64,
    /// log p̃ at the initial point.
    pub log_p_start: f64,
    /// Iterations of the mode search.
    pub iterations: usize,
    /// The coordinates that ran off, outermost first (never empty).
    pub runaway: Vec<Runaway>,
}

/// How many runaway coordinates a message names.
const NAMED_RUNAWAYS: usize = 3;

impl Runaway {
    /// `sigma ≈ 1.77e-14, -31.7 unconstrained` when the declared value is known, else
    /// `sigma = -31.7 unconstrained`.
    fn value_text(&self) -> String {
        match self.constrained {
            Some(v) => format!("{} ≈ {v:.2e}, {:.1} unconstrained", self.name, self.unconstrained),
            None => format!("{} = {:.1} unconstrained", self.name, self.unconstrained),
        }
    }

    /// `→ 0` when the limit is known, else a description.
    fn limit_text(&self) -> String {
        match self.limit {
            Some(l) if l.is_infinite() && l > 0.0 => "→ ∞".to_string(),
            Some(l) if l.is_infinite() => "→ −∞".to_string(),
            Some(l) => format!("→ {l}"),
            None => "runs to the edge of its range".to_string(),
        }
    }
}

impl NoMode {
    /// The runaway coordinates as "`s.1`, `s.2`, `s.3` and 2 more", and the values of those
    /// named as "s.1 ≈ …; s.2 ≈ …; s.3 ≈ …".
    fn names_and_values(&self) -> (String, String) {
        let named = &self.runaway[..self.runaway.len().min(NAMED_RUNAWAYS)];
        let mut names = named
            .iter()
            .map(|r| format!("`{}`", r.name))
            .collect::<Vec<_>>()
            .join(", ");
        let more = self.runaway.len() - named.len();
        if more > 0 {
            names.push_str(&format!(" and {more} more"));
        }
        let values = named
            .iter()
            .map(Runaway::value_text)
            .collect::<Vec<_>>()
            .join("; ");
        (names, values)
    }

    /// What to try, for the diagnostic's help line.
    pub fn help(&self) -> String {
        let first = &self.runaway[0];
        let name = &first.name;
        let base = name.split('.').next().unwrap_or(name);
        format!(
            "a funnel: as `{name}` {} the values it scales collapse together and log p̃ grows \
             without bound, so there is no mode for laplace or the MVI methods to start from. \
             Try `--method pmfvb` or `--method vi_diag` (they start from a vi_diag fit from the \
             initial point when there is no mode), or write the model non-centred where it allows (`x = m + {base} * z` with \
             `z ~ normal(0, 1)` instead of `x ~ normal(m, {base})`). A prior on `{base}` that \
             vanishes at the edge makes a mode, but one in the neck of the funnel, not a useful fit",
            first.limit_text()
        )
    }
}

impl std::fmt::Display for NoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (names, values) = self.names_and_values();
        let verb = if self.runaway.len() == 1 { "runs" } else { "run" };
        write!(
            f,
            "the joint density has no maximum: the mode search raised log p̃ from {:.4e} to \
             {:.4e} in {} iterations, and it still rises as {names} {verb} off into the neck of a \
             funnel ({values})",
            self.log_p_start, self.log_p, self.iterations,
        )
    }
}

/// The coordinates the mode search ran off with, if the end point `x` (H the Hessian there)
/// looks like the neck of a funnel: a coordinate i with |x_i| ≥ [`RUNAWAY_EXTENT`] along
/// which log p̃ still rises outwards by at least [`RUNAWAY_SLOPE`] per unit, while the
/// values it scales have collapsed: some other coordinate's curvature −H_jj is at least
/// e^{|x_i|/2} (it grows like σ⁻² = e^{2|log σ|} in a funnel), or H is not finite there.
/// Called only when the curvature at the end point is unusable, so a proper mode (however
/// sharp) is never flagged. Empty when nothing ran off.
pub fn runaway_coordinates(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    x: &DVector<f64>,
    h: &DMatrix<f64>,
) -> Vec<Runaway> {
    let (value, g) = value_grad(model, theta, x);
    if !value.is_finite() {
        return Vec::new();
    }
    let names = model.coordinate_names();
    let h_finite = h.iter().all(|v| v.is_finite());
    let collapsed = |i: usize| {
        let need = (0.5 * x[i].abs()).exp();
        !h_finite || (0..x.len()).any(|j| j != i && -h[(j, j)] >= need)
    };
    let mut out: Vec<Runaway> = (0..x.len())
        .filter(|&i| x[i].abs() >= RUNAWAY_EXTENT)
        .filter(|&i| g[i] * x[i].signum() >= RUNAWAY_SLOPE)
        .filter(|&i| collapsed(i))
        .map(|i| {
            let declared = model.coordinate_constraint(i);
            Runaway {
                name: names.get(i).cloned().unwrap_or_else(|| format!("w.{}", i + 1)),
                index: i,
                unconstrained: x[i],
                slope: g[i] * x[i].signum(),
                constrained: declared.map(|c| c.constrain(x[i])),
                limit: declared.map(|c| edge(c, x[i] < 0.0)),
            }
        })
        .collect();
    out.sort_by(|a, b| b.unconstrained.abs().total_cmp(&a.unconstrained.abs()));
    out
}

/// The value a coordinate with bounds `c` approaches on its declared scale as its
/// unconstrained value runs to −∞ (`towards_minus`) or +∞: a bound, or ±∞.
fn edge(c: crate::graph::Constraint, towards_minus: bool) -> f64 {
    match (c.lower, c.upper, towards_minus) {
        (Some(a), _, true) => a,
        (None, Some(b), true) | (Some(_), Some(b), false) => b,
        (None, Some(_), false) | (None, None, true) => f64::NEG_INFINITY,
        (_, None, false) => f64::INFINITY,
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

/// How often a mode search that ended at a saddle point is restarted from beside it.
const MAX_SADDLE_ESCAPES: usize = 5;

/// Most Newton steps of the polish (Newton converges quadratically: from a point the
/// quasi-Newton rules accept, two or three suffice, and the rest stop at once on the gain).
const POLISH_STEPS: usize = 6;

/// The polish stops when a Newton step's predicted gain is below this fraction of |log p̃|.
const POLISH_GAIN: f64 = 1e-13;

/// Most damped Newton steps that finish a mode search stopped at its iteration limit (on the
/// crabs posterior of [`newton_polish`]'s note: 7).
const RESCUE_STEPS: usize = 100;

/// The mode search from `start` and the Newton polish of its end point, with the Hessian at
/// the mode when the polish computed it there (its last Newton step was not taken), so the
/// curvature need not compute it again.
fn polished_mode(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: DVector<f64>,
    scale: Option<&DMatrix<f64>>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> (Outcome, Option<DMatrix<f64>>) {
    let out = {
        let _t = timing::span("laplace: mode");
        find_mode(model, theta, start, scale, opts, obs)
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

/// L-BFGS on log p̃(· | θ) from `start`; with `scale` = C, in the coordinates u of
/// w = start + C u (the outcome's point is w; its gradient norm is in u).
///
/// The θ searches pass the Cholesky factor of Σ = (−H)⁻¹ at the last mode found: near θ's
/// optimum the next mode's Hessian is about the last one, −I in u, however ill-conditioned
/// −H is. On vehicle's RBF features (D = 124, α ≈ 3·10⁻⁵) each inner search took about 700
/// iterations in w.
fn find_mode(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: DVector<f64>,
    scale: Option<&DMatrix<f64>>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> Outcome {
    let Some(c) = scale else {
        return optim::maximize(
            |w| {
                timing::count("laplace: log p̃ gradients", 1);
                value_grad(model, theta, w)
            },
            start,
            opts,
            obs,
        );
    };
    let mut out = optim::maximize(
        |u| {
            timing::count("laplace: log p̃ gradients", 1);
            let (v, g) = value_grad(model, theta, &(&start + c * u));
            (v, c.tr_mul(&g))
        },
        DVector::zeros(start.len()),
        opts,
        obs,
    );
    out.x = &start + c * &out.x;
    out
}

/// Newton steps w ← w − H⁻¹ ∇ from the optimiser's mode, each kept only when it does not
/// lower log p̃ and H is negative definite: the quasi-Newton stopping rules leave w*
/// accurate to about √tol, Newton steps make it accurate to rounding. They continue while
/// the predicted gain ½ gᵀ(−H)⁻¹g is above rounding (at most `POLISH_STEPS`). The rule is the
/// gain, not the gradient norm: on an ill-conditioned posterior a step can gain nats while the
/// gradient norm grows (posteriordb's kilpisjarvi, cond(H) ≈ 7e11: L-BFGS stopped 2.15 nats
/// below the mode, and stopping after the first Newton step left log p̃ 0.14 nats low and log
/// sigma 0.66 posterior sds off).
///
/// When the mode search stopped at its iteration limit (`out.converged` false), the polish
/// finishes it instead: damped Newton (Levenberg–Marquardt where −H is not positive definite,
/// [`shifted_newton_step`]), up to `RESCUE_STEPS` steps, each halved until log p̃
/// does not fall, marked converged when the predicted gain reaches rounding. On a nearly
/// separable softmax (`mvi bench paper`, crabs split 0, α = 1.6·10⁻⁷) L-BFGS stopped after
/// 1000 iterations 29.5 nats below the mode; the Laplace fit there had a test LPD of −0.306
/// per point against −0.166 at the mode.
/// Returns the polished mode and H there when the last Hessian computed is at it.
fn newton_polish(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    mut out: Outcome,
) -> (Outcome, Option<DMatrix<f64>>) {
    let rescue = !out.converged && !out.interrupted;
    let steps = if rescue { RESCUE_STEPS } else { POLISH_STEPS };
    let mut at_mode = None;
    // ∇ log p̃ at out.x: computed once here, then carried from each step taken
    let mut g = value_grad(model, theta, &out.x).1;
    for _ in 0..steps {
        let h = model.hessian(theta, &out.x);
        // (step, whether it is a Newton step: −H positive definite)
        let step = match (-&h).cholesky() {
            Some(c) => Some((c.solve(&g), true)),
            None if rescue => shifted_newton_step(&h, &g).map(|s| (s, false)),
            None => None,
        };
        at_mode = Some(h);
        let Some((step, newton)) = step else {
            break;
        };
        let scale = out.value.abs().max(1.0);
        let gain = 0.5 * g.dot(&step);
        if gain.is_nan() || gain <= POLISH_GAIN * scale {
            // a mode only where H is negative definite: a stationary point with positive
            // curvature is left to the saddle escape
            out.converged |= rescue && newton && !gain.is_nan();
            break;
        }
        let Some((x, v, g_new)) = newton_step(model, theta, &out, &step, rescue) else {
            break;
        };
        out.x = x;
        out.value = v;
        out.grad_norm = g_new.norm();
        g = g_new;
        if rescue {
            out.iterations += 1;
        }
        at_mode = None;
    }
    (out, at_mode)
}

/// The Levenberg–Marquardt step (−H + λI)⁻¹ g where −H is not positive definite, for a
/// mode search stopped at its iteration limit where log p̃ is not concave. λ turns −H's most
/// negative eigenvalue e into |e| (plus 10⁻¹⁰ of the largest magnitude), so the step rises
/// along g and moves along that direction by about the Newton step of its curvature's size.
/// `None` when H or g is not finite.
///
/// Without it the search stopped there was taken for a saddle point: on posteriordb's
/// earnings-earn_height with `max_iters = 20`, L-BFGS stopped where H had a positive
/// eigenvalue (far from any stationary point) and the fit reported a posterior "with several"
/// maxima; it has one.
fn shifted_newton_step(h: &DMatrix<f64>, g: &DVector<f64>) -> Option<DVector<f64>> {
    let neg_h = (h + h.transpose()) * -0.5;
    if !(neg_h.iter().all(|v| v.is_finite()) && g.iter().all(|v| v.is_finite())) {
        return None;
    }
    let eig = neg_h.symmetric_eigen();
    let lowest = eig.eigenvalues.iter().copied().fold(f64::INFINITY, f64::min);
    let largest = eig.eigenvalues.amax();
    let lambda = 2.0 * (-lowest).max(0.0) + 1e-10 * largest.max(f64::MIN_POSITIVE);
    let v = &eig.eigenvectors;
    let coef = (v.transpose() * g).zip_map(&eig.eigenvalues, |c, e| c / (e + lambda));
    Some(v * coef)
}

/// The point `out.x + t·step` with t = 1, or, when `damped`, the first of t = 1, ½, ¼, …
/// (down to 2⁻⁴⁰) where log p̃ is finite and does not fall (to rounding); `None` when there
/// is none. Returns the point, log p̃ and its gradient there.
fn newton_step(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    out: &Outcome,
    step: &DVector<f64>,
    damped: bool,
) -> Option<(DVector<f64>, f64, DVector<f64>)> {
    let scale = out.value.abs().max(1.0);
    let mut t = 1.0;
    for _ in 0..=if damped { 40 } else { 0 } {
        let x = &out.x + step * t;
        let (v, g) = value_grad(model, theta, &x);
        if v.is_finite() && v >= out.value - 1e-12 * scale {
            return Some((x, v, g));
        }
        t *= 0.5;
    }
    None
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

/// The θ search stops when the simplex is this small (on the unconstrained scale, where a
/// change of 10⁻⁴ in log α is a relative change of 10⁻⁴ in α): the evidence is flat there
/// and its values differ by the inner fits' rounding, so the value rule alone kept the
/// search going to its evaluation limit (600 evaluations on the banana example).
const THETA_TOL: f64 = 1e-4;

/// Relative-change tolerance of the mode fits inside the θ search.
const INNER_TOL: f64 = 1e-11;

/// θ maximising the Laplace log evidence, by Nelder–Mead; each θ re-finds the mode from
/// the last one. The observer sees the inner mode searches' iterations (progress, Ctrl-C):
/// once it asks to stop, the search ends with the best θ evaluated so far.
fn search_theta(
    model: &dyn LogDensity,
    theta0: &DVector<f64>,
    start: &DVector<f64>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> DVector<f64> {
    let mut warm = start.clone();
    // the Cholesky factor of Σ at `warm` once it is a mode: the inner searches' coordinates
    let mut warm_scale: Option<DMatrix<f64>> = None;
    let mut stopped = false;
    let d = start.len() as f64;
    // The search compares evidences to 1e-10; the inner modes must be tighter than that.
    let inner = optim::Options {
        rel_tol: opts.rel_tol.min(INNER_TOL),
        ..*opts
    };
    let evidence = |theta: &DVector<f64>| {
        if stopped {
            // the simplex's remaining evaluations cost nothing and never win
            return f64::NEG_INFINITY;
        }
        timing::count("laplace: θ evidence evaluations", 1);
        let out = find_mode(model, theta, warm.clone(), warm_scale.as_ref(), &inner, &mut *obs);
        // a search stopped at its limit is finished by Newton (a converged one is left as
        // it is: the simplex compares evidences, not modes to rounding)
        let out = if out.converged {
            out
        } else {
            newton_polish(model, theta, out).0
        };
        if out.interrupted {
            stopped = true;
            return f64::NEG_INFINITY;
        }
        if !out.value.is_finite() {
            return f64::NEG_INFINITY;
        }
        match curvature(model, theta, &out.x) {
            Ok((c, log_det)) => {
                warm = out.x;
                warm_scale = Some(c);
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

/// Above this many hyperparameters the evidence is maximised by L-BFGS on its gradient
/// ([`evidence_gradient`]) instead of Nelder–Mead: the simplex needs O(P) evidence
/// evaluations per step and up to 200·(P + 1) of them (the banana model with its 60 RBF
/// centres as hyperparameters: 39 s against well under a second), while the gradient costs
/// one batched evaluation of 2D + 3 points. At P ≤ 4 (every model with scalar
/// hyperparameters in the examples) the simplex is kept: it is robust and already fast.
pub const SIMPLEX_MAX_THETA: usize = 4;

/// Step, in posterior standard deviations along each column of the Cholesky factor of Σ, of
/// the second differences in [`evidence_gradient`].
const TRACE_STEP: f64 = 1e-2;

/// The Laplace log evidence at θ and its gradient, from the (polished) mode `mode` of
/// log p̃(· | θ) and the Cholesky factor `l` of Σ = (−H)⁻¹ there (`log_det` = log det(−H)).
///
/// With A = −∇²_w f at the mode ŵ(θ) (f = log p̃) and L(θ) = f(ŵ, θ) + (D/2) log 2π − ½ log
/// det A, dL/dθ_j = ∂_j f + ½ tr(Σ ∂_j ∇²_w f) + tᵀ dŵ/dθ_j, where t_k = ½ tr(Σ ∂_k ∇²_w f)
/// and dŵ/dθ_j = Σ ∂_j ∇_w f (the mode moves with θ; ∇_w f = 0 there, so f's own change
/// through ŵ vanishes). Both traces are second differences along the columns l_i of L
/// (Σ_i l_iᵀ M l_i = tr(Σ M)) of ∇_θ f and ∇_w f at ŵ ± h l_i; the last term is
/// uᵀ ∂_j ∇_w f with u = Σ t, a central difference of ∇_θ f along u. One batched
/// evaluation of 2D + 1 points and one of 2: no third derivatives, no Hessian per θ_j.
pub fn evidence_gradient(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    mode: &DVector<f64>,
    value: f64,
    l: &DMatrix<f64>,
    log_det: f64,
) -> (f64, DVector<f64>) {
    let d = mode.len();
    let p = theta.len();
    let evidence = value + 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln() - 0.5 * log_det;
    let mut w = DMatrix::zeros(d, 2 * d + 1);
    w.set_column(0, mode);
    for i in 0..d {
        let step = l.column(i) * TRACE_STEP;
        w.set_column(1 + 2 * i, &(mode + &step));
        w.set_column(2 + 2 * i, &(mode - &step));
    }
    let h2 = 2.0 * TRACE_STEP * TRACE_STEP;
    // ∇_θ f at the mode plus its second differences, one weighted sum of ∇_θ's columns
    let mut weights = DMatrix::from_element(2 * d + 1, 1, 1.0 / h2);
    weights[0] = 1.0 - 2.0 * d as f64 / h2;
    let e = model.eval_weighted_theta(theta, &w, &weights);
    let (Some(gw), Some(gt)) = (e.grad_w, e.grad_theta) else {
        return (f64::NAN, DVector::zeros(p));
    };
    let mut grad = gt.column(0).into_owned();
    let mut t = DVector::zeros(d);
    for i in 0..d {
        t += (gw.column(1 + 2 * i) + gw.column(2 + 2 * i) - gw.column(0) * 2.0) / h2;
    }
    let lt_t = l.transpose() * &t;
    let norm = lt_t.norm();
    if norm > 0.0 && norm.is_finite() {
        let u = l * &lt_t;
        let s = 1e-3 / norm;
        let mut w2 = DMatrix::zeros(d, 2);
        w2.set_column(0, &(mode + &u * s));
        w2.set_column(1, &(mode - &u * s));
        let difference = DMatrix::from_column_slice(2, 1, &[0.5 / s, -0.5 / s]);
        if let Some(g2) = model.eval_weighted_theta(theta, &w2, &difference).grad_theta {
            grad += g2.column(0);
        }
    }
    (evidence, grad)
}

/// θ maximising the Laplace log evidence by L-BFGS on [`evidence_gradient`], each θ
/// re-finding (and polishing) the mode from the last one. At most `opts.max_iters` θ
/// steps; the inner mode searches keep at least 1000 iterations. A θ whose mode or
/// curvature fails is a failed line-search point (the optimiser backs off). Returns θ and
/// the last mode found.
fn search_theta_gradient(
    model: &dyn LogDensity,
    theta0: &DVector<f64>,
    start: &DVector<f64>,
    opts: &optim::Options,
    obs: &mut dyn Observer,
) -> (DVector<f64>, DVector<f64>) {
    let mut warm = start.clone();
    let mut warm_scale: Option<DMatrix<f64>> = None;
    let inner = optim::Options {
        rel_tol: opts.rel_tol.min(INNER_TOL),
        max_iters: opts.max_iters.max(1000),
        ..*opts
    };
    let outer = optim::Options {
        grad_tol: 1e-6,
        ..*opts
    };
    let mut silent = crate::infer::Silent;
    let f = |theta: &DVector<f64>| {
        timing::count("laplace: θ evidence evaluations", 1);
        let (out, h) = polished_mode(
            model,
            theta,
            warm.clone(),
            warm_scale.as_ref(),
            &inner,
            &mut silent,
        );
        if !out.value.is_finite() {
            return (f64::NEG_INFINITY, DVector::zeros(theta.len()));
        }
        let curv = {
            let _t = timing::span("laplace: θ hessian, cholesky");
            match h {
                // the polish's last Hessian is at the mode: the same matrix
                Some(h) => curvature_of(&h),
                None => curvature(model, theta, &out.x),
            }
        };
        match curv {
            Ok((l, log_det)) => {
                let _t = timing::span("laplace: evidence gradient");
                let r = evidence_gradient(model, theta, &out.x, out.value, &l, log_det);
                warm = out.x;
                warm_scale = Some(l);
                r
            }
            Err(_) => (f64::NEG_INFINITY, DVector::zeros(theta.len())),
        }
    };
    let theta = optim::maximize(f, theta0.clone(), &outer, obs).x;
    (theta, warm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::{Evaluated, Want};
    use crate::infer::Silent;

    /// log p̃(w) = −½ (w − m)ᵀ A (w − m), A = Q diag(λ) Qᵀ with λ from 1 to 10⁶ and Q a
    /// rotation (products of Givens rotations), m = (1, 2, …, D) / D.
    struct IllConditioned {
        a: DMatrix<f64>,
        m: DVector<f64>,
    }

    impl IllConditioned {
        fn new(d: usize, stretch: f64) -> Self {
            let mut q = DMatrix::<f64>::identity(d, d);
            for i in 0..d - 1 {
                let (c, s) = (0.8f64, 0.6f64);
                let mut g = DMatrix::<f64>::identity(d, d);
                g[(i, i)] = c;
                g[(i + 1, i + 1)] = c;
                g[(i, i + 1)] = -s;
                g[(i + 1, i)] = s;
                q = g * q;
            }
            let lambda = DVector::from_fn(d, |i, _| {
                10f64.powf(6.0 * i as f64 / (d - 1) as f64) * if i % 2 == 0 { stretch } else { 1.0 }
            });
            IllConditioned {
                a: &q * DMatrix::from_diagonal(&lambda) * q.transpose(),
                m: DVector::from_fn(d, |i, _| (i + 1) as f64 / d as f64),
            }
        }
    }

    impl LogDensity for IllConditioned {
        fn dim(&self) -> usize {
            self.m.len()
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            let r = w - &self.m * DMatrix::from_element(1, w.ncols(), 1.0);
            let g = -(&self.a * &r);
            let values = DVector::from_iterator(
                w.ncols(),
                (0..w.ncols()).map(|s| 0.5 * r.column(s).dot(&g.column(s))),
            );
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            -&self.a
        }
    }

    #[test]
    fn an_inner_mode_search_in_the_coordinates_of_a_nearby_mode_takes_far_fewer_steps() {
        let d = 20;
        let model = IllConditioned::new(d, 1.0);
        // C from a nearby posterior: every other curvature 1.5 times larger
        let nearby = IllConditioned::new(d, 1.5);
        let (c, _) = curvature(&nearby, &DVector::zeros(0), &DVector::zeros(d)).expect("positive definite");
        let opts = optim::Options {
            rel_tol: INNER_TOL,
            ..optim::Options::default()
        };
        let theta = DVector::zeros(0);
        let plain = find_mode(&model, &theta, DVector::zeros(d), None, &opts, &mut Silent);
        let scaled = find_mode(&model, &theta, DVector::zeros(d), Some(&c), &opts, &mut Silent);
        assert!(scaled.converged, "{scaled:?}");
        assert!(
            (&scaled.x - &model.m).amax() < 1e-6,
            "mode {} against {}",
            scaled.x,
            model.m
        );
        assert!(
            5 * scaled.iterations < plain.iterations,
            "iterations: in C's coordinates {}, in w's {}",
            scaled.iterations,
            plain.iterations
        );
    }

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
        let fit = fit_laplace(&DoubleWell, &Common::default(), &mut rng(), &mut Silent).unwrap();
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

    /// log p̃(w) = w − eʷ (a Poisson log-likelihood in log λ with one count of 1): mode at 0,
    /// curvature −eʷ. A Newton step from w = −1 lands at e − 2 ≈ 0.718: log p̃ rises
    /// (−1.368 → −1.332) but |∇| grows (0.632 → 1.05).
    struct LogRate;
    impl LogDensity for LogRate {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            columnwise(w, |c| (c[0] - c[0].exp(), [1.0 - c[0].exp()]))
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_element(1, 1, -w[0].exp())
        }
    }

    #[test]
    fn the_newton_polish_continues_while_log_p_rises_even_if_the_gradient_grows() {
        let theta = DVector::zeros(0);
        let x = DVector::from_element(1, -1.0);
        let (value, g) = value_grad(&LogRate, &theta, &x);
        let start = Outcome {
            x,
            value,
            grad_norm: g.norm(),
            iterations: 0,
            converged: true,
            interrupted: false,
        };
        let (out, h) = newton_polish(&LogRate, &theta, start);
        // the Hessian handed back for the curvature is the one at the polished mode
        let h = h.expect("the last Newton step was declined, at the mode");
        assert_eq!(h, LogRate.hessian(&theta, &out.x));
        assert!(out.x[0].abs() < 1e-6, "polished to {}", out.x[0]);
        assert!((out.value + 1.0).abs() < 1e-12, "log p̃ {}", out.value);
        assert!(out.grad_norm < 1e-6, "gradient norm {}", out.grad_norm);
    }

    /// An outcome at `w` on [`LogRate`], converged or stopped at the iteration limit.
    fn log_rate_at(w: f64, converged: bool) -> Outcome {
        let x = DVector::from_element(1, w);
        let (value, g) = value_grad(&LogRate, &DVector::zeros(0), &x);
        Outcome {
            x,
            value,
            grad_norm: g.norm(),
            iterations: 1000,
            converged,
            interrupted: false,
        }
    }

    #[test]
    fn a_mode_search_stopped_at_its_limit_is_finished_by_damped_newton() {
        // from w = −5 the full Newton step (+147) overshoots into log p̃ ≈ −e¹⁴²: the polish
        // of a converged search declines it and stays, the rescue halves it down to the mode
        let theta = DVector::zeros(0);
        let (kept, _) = newton_polish(&LogRate, &theta, log_rate_at(-5.0, true));
        assert_eq!(
            kept.x,
            DVector::from_element(1, -5.0),
            "the overshooting step is declined"
        );
        let (out, h) = newton_polish(&LogRate, &theta, log_rate_at(-5.0, false));
        assert!(out.converged, "{out:?}");
        assert!(out.x[0].abs() < 1e-6, "finished at {}", out.x[0]);
        assert!((out.value + 1.0).abs() < 1e-12, "log p̃ {}", out.value);
        assert!(
            out.iterations > 1000,
            "the Newton steps count: {}",
            out.iterations
        );
        assert_eq!(h, Some(LogRate.hessian(&theta, &out.x)), "H at the mode");
    }

    /// log p̃(w) = −log(1 + w²): one mode at 0, not concave where |w| > 1; started at w = 4.
    struct Cauchy;
    impl LogDensity for Cauchy {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            columnwise(w, |c| {
                let w = c[0];
                (-(1.0 + w * w).ln(), [-2.0 * w / (1.0 + w * w)])
            })
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            let w2 = w[0] * w[0];
            DMatrix::from_element(1, 1, -2.0 * (1.0 - w2) / ((1.0 + w2) * (1.0 + w2)))
        }
        fn initial_point(&self) -> DVector<f64> {
            DVector::from_element(1, 4.0)
        }
    }

    #[test]
    fn a_search_stopped_where_log_p_is_not_concave_is_finished_not_taken_for_a_saddle() {
        let theta = DVector::zeros(0);
        let at = |converged| {
            let x = DVector::from_element(1, 4.0);
            let (value, g) = value_grad(&Cauchy, &theta, &x);
            Outcome {
                x,
                value,
                grad_norm: g.norm(),
                iterations: 1,
                converged,
                interrupted: false,
            }
        };
        // H(4) > 0: there is no Newton step; the polish of a converged search stays
        let (kept, _) = newton_polish(&Cauchy, &theta, at(true));
        assert_eq!(kept.x, DVector::from_element(1, 4.0));
        let (out, _) = newton_polish(&Cauchy, &theta, at(false));
        assert!(out.converged, "{out:?}");
        assert!(out.x[0].abs() < 1e-6, "finished at {}", out.x[0]);
        // the whole fit: no saddle, no second maximum, the one mode
        for max_iters in [1, 2] {
            let common = Common {
                max_iters,
                ..Common::default()
            };
            let fit = fit_laplace(&Cauchy, &common, &mut rng(), &mut Silent).unwrap();
            assert!(fit.converged, "notes: {:?}", fit.notes);
            assert!(fit.mode[0].abs() < 1e-6, "mode {}", fit.mode);
            assert!(fit.notes.is_empty(), "{:?}", fit.notes);
        }
    }

    /// [`LogRate`] started at w = −5, far left of its mode.
    struct LogRateFromLeft;
    impl LogDensity for LogRateFromLeft {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            LogRate.eval(t, w, want)
        }
        fn hessian(&self, t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            LogRate.hessian(t, w)
        }
        fn initial_point(&self) -> DVector<f64> {
            DVector::from_element(1, -5.0)
        }
    }

    #[test]
    fn a_laplace_fit_whose_search_hits_max_iters_reports_the_mode_not_a_warning() {
        let common = Common {
            max_iters: 1,
            ..Common::default()
        };
        let fit = fit_laplace(&LogRateFromLeft, &common, &mut rng(), &mut Silent).unwrap();
        assert!(fit.converged, "notes: {:?}", fit.notes);
        assert!(fit.mode[0].abs() < 1e-6, "mode {}", fit.mode);
        assert!(
            !fit.notes.iter().any(|n| n.contains("not converged")),
            "{:?}",
            fit.notes
        );
    }

    #[test]
    fn the_newton_polish_leaves_an_exact_mode_alone() {
        let theta = DVector::zeros(0);
        let x = DVector::from_element(1, 0.0);
        let start = Outcome {
            x: x.clone(),
            value: -1.0,
            grad_norm: 0.0,
            iterations: 0,
            converged: true,
            interrupted: false,
        };
        let (out, h) = newton_polish(&LogRate, &theta, start);
        assert_eq!(out.x, x);
        assert_eq!(h, Some(LogRate.hessian(&theta, &x)), "H at the unmoved mode");
    }

    #[test]
    fn positive_curvature_is_an_error_that_names_the_eigenvalue() {
        let err = fit_laplace(&Saddle, &Common::default(), &mut rng(), &mut Silent).unwrap_err();
        match err {
            Error::NotNegativeDefinite { max_eig, .. } => assert!((max_eig - 2.0).abs() < 1e-12),
            e => panic!("unexpected {e}"),
        }
        assert!(err.to_string().contains("2.000e0"));
    }

    fn rng() -> rand::rngs::StdRng {
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1)
    }

    /// log p̃(w) = −(w² − 1)² + 0.3 w: modes near w = −1 (log p̃ ≈ −0.3) and w = +1
    /// (≈ +0.3); the search starts at −0.5, where the gradient points to the lower one.
    struct TiltedWell;

    impl LogDensity for TiltedWell {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            columnwise(w, |c| {
                let x = c[0];
                (-(x * x - 1.0).powi(2) + 0.3 * x, [-4.0 * x * (x * x - 1.0) + 0.3])
            })
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_element(1, 1, 4.0 - 12.0 * w[0] * w[0])
        }
        fn initial_point(&self) -> DVector<f64> {
            DVector::from_element(1, -0.5)
        }
    }

    #[test]
    fn restarts_keep_the_highest_mode_and_say_so() {
        let first = fit_laplace(&TiltedWell, &Common::default(), &mut rng(), &mut Silent).unwrap();
        assert!(first.mode[0] < -0.9 && first.notes.is_empty(), "{first:?}");
        let common = Common {
            restarts: 10,
            ..Common::default()
        };
        let best = fit_laplace(&TiltedWell, &common, &mut rng(), &mut Silent).unwrap();
        assert!(best.mode[0] > 0.9, "mode {}", best.mode);
        assert!(best.log_p > first.log_p + 0.5, "{} {}", best.log_p, first.log_p);
        // C and the evidence are those of the mode reported: −H = 12 w² − 4 there
        let neg_h = 12.0 * best.mode[0] * best.mode[0] - 4.0;
        assert!((best.chol[(0, 0)] - neg_h.powf(-0.5)).abs() < 1e-10);
        assert!(
            best.notes.iter().any(|n| n.contains("higher mode")),
            "{:?}",
            best.notes
        );
        // a restart that finds nothing better changes nothing but the note
        let again = fit_laplace(&DoubleWell, &common, &mut rng(), &mut Silent).unwrap();
        assert!(again.log_p.abs() < 1e-12 && again.notes.iter().any(|n| n.contains("none of 10")));
    }

    /// Counts iterations and asks to stop once `limit` have been seen.
    struct StopAfter {
        seen: usize,
        limit: usize,
    }

    impl Observer for StopAfter {
        fn iteration(&mut self, _record: &IterRecord) -> bool {
            self.seen += 1;
            self.seen <= self.limit
        }
    }

    #[test]
    fn an_interrupt_during_the_restarts_keeps_the_best_mode_so_far() {
        let mut count = StopAfter {
            seen: 0,
            limit: usize::MAX,
        };
        let first = fit_laplace(&TiltedWell, &Common::default(), &mut rng(), &mut count).unwrap();
        let common = Common {
            restarts: 10,
            ..Common::default()
        };
        // the first search runs to its end, the first restart's first iteration is refused
        let mut stop = StopAfter {
            seen: 0,
            limit: count.seen,
        };
        let fit = fit_laplace(&TiltedWell, &common, &mut rng(), &mut stop).unwrap();
        assert_eq!(fit.mode, first.mode);
        assert!(
            fit.notes.iter().any(|n| n.contains("interrupted after 0 of 10")),
            "{:?}",
            fit.notes
        );
    }

    /// Value and gradient at every column of `w`, one column at a time.
    fn columnwise<G: AsRef<[f64]>>(w: &DMatrix<f64>, f: impl Fn(&[f64]) -> (f64, G)) -> Evaluated {
        let mut g = DMatrix::zeros(w.nrows(), w.ncols());
        let mut values = DVector::zeros(w.ncols());
        for (s, col) in w.column_iter().enumerate() {
            let (v, gs) = f(col.as_slice());
            values[s] = v;
            g.column_mut(s).copy_from_slice(gs.as_ref());
        }
        Evaluated {
            values,
            grad_w: Some(g),
            grad_theta: None,
        }
    }

    /// Neal's funnel as a joint density: w = (u, z₁, …, z_K) with σ = e^u,
    /// z_k ~ N(0, σ), σ ~ half-normal(10), the log-Jacobian u included:
    /// log p̃ = −(K − 1) u − Σ z_k² e^{−2u}/2 − e^{2u}/200. Unbounded above as u → −∞ with
    /// z = 0; the search starts at z ≠ 0 so that the z have to collapse first.
    struct Funnel {
        k: usize,
    }

    impl Funnel {
        fn value_grad_at(&self, c: &[f64]) -> (f64, Vec<f64>) {
            let u = c[0];
            let prec = (-2.0 * u).exp();
            let ss: f64 = c[1..].iter().map(|z| z * z).sum();
            let km1 = self.k as f64 - 1.0;
            let value = -km1 * u - 0.5 * ss * prec - (2.0 * u).exp() / 200.0;
            let mut g = vec![-km1 + ss * prec - (2.0 * u).exp() / 100.0];
            g.extend(c[1..].iter().map(|z| -z * prec));
            if value.is_finite() {
                (value, g)
            } else {
                (f64::NEG_INFINITY, vec![0.0; c.len()])
            }
        }
    }

    impl LogDensity for Funnel {
        fn dim(&self) -> usize {
            self.k + 1
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            columnwise(w, |c| self.value_grad_at(c))
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            let u = w[0];
            let prec = (-2.0 * u).exp();
            let ss: f64 = w.rows(1, self.k).iter().map(|z| z * z).sum();
            let mut h = DMatrix::from_diagonal_element(self.k + 1, self.k + 1, -prec);
            h[(0, 0)] = -2.0 * ss * prec - (2.0 * u).exp() / 50.0;
            for i in 1..=self.k {
                h[(0, i)] = 2.0 * w[i] * prec;
                h[(i, 0)] = h[(0, i)];
            }
            h
        }
        fn initial_point(&self) -> DVector<f64> {
            DVector::from_fn(self.k + 1, |i, _| if i == 0 { 0.0 } else { 1.0 - 0.3 * i as f64 })
        }
        fn coordinate_names(&self) -> Vec<String> {
            let mut names = vec!["sigma".to_string()];
            names.extend((1..=self.k).map(|i| format!("z.{i}")));
            names
        }
    }

    /// y_i ~ N(mu, σ) for n data points with sample mean 3 and sample sd `s`, a flat prior on
    /// mu and σ = e^u with its log-Jacobian: log p̃ = −(n − 1) u − n (s² + (mu − 3)²) e^{−2u}/2.
    /// A proper, sharp posterior with its mode at u = log s + ½ log(n/(n − 1)).
    struct Sharp {
        n: f64,
        s: f64,
    }

    impl Sharp {
        fn value_grad_at(&self, c: &[f64]) -> (f64, [f64; 2]) {
            let (mu, u) = (c[0], c[1]);
            let prec = (-2.0 * u).exp();
            let ss = self.n * (self.s * self.s + (mu - 3.0).powi(2));
            let value = -(self.n - 1.0) * u - 0.5 * ss * prec;
            let g = [-self.n * (mu - 3.0) * prec, -(self.n - 1.0) + ss * prec];
            if value.is_finite() {
                (value, g)
            } else {
                (f64::NEG_INFINITY, [0.0; 2])
            }
        }
    }

    impl LogDensity for Sharp {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
            columnwise(w, |c| self.value_grad_at(c))
        }
        fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
            let (mu, u) = (w[0], w[1]);
            let prec = (-2.0 * u).exp();
            let ss = self.n * (self.s * self.s + (mu - 3.0).powi(2));
            let cross = 2.0 * self.n * (mu - 3.0) * prec;
            DMatrix::from_row_slice(2, 2, &[-self.n * prec, cross, cross, -2.0 * ss * prec])
        }
        fn coordinate_names(&self) -> Vec<String> {
            vec!["mu".into(), "sigma".into()]
        }
    }

    fn no_mode(err: Error) -> NoMode {
        match err {
            Error::NoMode(m) => *m,
            e => panic!("expected NoMode, got {e}"),
        }
    }

    #[test]
    fn a_funnel_is_reported_as_having_no_mode_naming_its_scale() {
        for k in [2, 3, 8] {
            let err = fit_laplace(&Funnel { k }, &Common::default(), &mut rng(), &mut Silent).unwrap_err();
            let text = err.to_string();
            let m = no_mode(err);
            assert_eq!(m.runaway.len(), 1, "K = {k}: {text}");
            let r = &m.runaway[0];
            assert_eq!((r.name.as_str(), r.index), ("sigma", 0), "K = {k}");
            assert!(r.unconstrained <= -RUNAWAY_EXTENT, "K = {k}: {text}");
            // the outward slope is K − 1 less what the not quite collapsed z pull back
            let km1 = k as f64 - 1.0;
            assert!(
                r.slope > 0.5 * km1 && r.slope < km1 + 1e-9,
                "K = {k}: slope {}",
                r.slope
            );
            assert!(m.log_p > m.log_p_start, "K = {k}: {text}");
            assert!(text.contains("no maximum") && text.contains("`sigma`"), "{text}");
            assert!(m.help().contains("`--method pmfvb`"), "{}", m.help());
        }
    }

    #[test]
    fn the_message_gives_the_declared_value_and_limit_when_known() {
        let mut m =
            no_mode(fit_laplace(&Funnel { k: 3 }, &Common::default(), &mut rng(), &mut Silent).unwrap_err());
        let u = m.runaway[0].unconstrained;
        let bare = m.to_string();
        assert!(
            bare.contains(&format!("(sigma = {u:.1} unconstrained)")),
            "{bare}"
        );
        m.runaway[0].constrained = Some(u.exp());
        m.runaway[0].limit = Some(0.0);
        let text = m.to_string();
        assert!(
            text.contains(&format!("(sigma ≈ {:.2e}, {u:.1} unconstrained)", u.exp())),
            "{text}"
        );
        assert!(m.help().starts_with("a funnel: as `sigma` → 0 "), "{}", m.help());
    }

    #[test]
    fn several_runaways_are_named_up_to_three_then_counted() {
        let runaway = (1..=5)
            .map(|i| Runaway {
                name: format!("s.{i}"),
                index: i - 1,
                unconstrained: -20.0 - i as f64,
                slope: 3.0,
                constrained: None,
                limit: None,
            })
            .collect();
        let m = NoMode {
            log_p: 100.0,
            log_p_start: -5.0,
            iterations: 42,
            runaway,
        };
        let text = m.to_string();
        assert!(
            text.contains("as `s.1`, `s.2`, `s.3` and 2 more run off into the neck of a funnel"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "(s.1 = -21.0 unconstrained; s.2 = -22.0 unconstrained; s.3 = -23.0 unconstrained)"
            ),
            "{text}"
        );
        assert!(
            text.contains("from -5.0000e0 to 1.0000e2 in 42 iterations"),
            "{text}"
        );
        assert!(
            m.help().contains("as `s.1` runs to the edge of its range"),
            "{}",
            m.help()
        );
    }

    #[test]
    fn a_sharp_proper_posterior_is_fitted_not_flagged() {
        let sharp = Sharp { n: 1e5, s: 1e-3 };
        let fit = fit_laplace(&sharp, &Common::default(), &mut rng(), &mut Silent).unwrap();
        let u = (1e-3f64).ln() + 0.5 * (1e5f64 / (1e5 - 1.0)).ln();
        assert!(
            (fit.mode[0] - 3.0).abs() < 1e-9 && (fit.mode[1] - u).abs() < 1e-8,
            "{}",
            fit.mode
        );
    }

    #[test]
    fn a_proper_mode_at_an_extreme_scale_is_not_called_a_funnel() {
        // σ ≈ 1e-7: log σ ≈ −16 is past RUNAWAY_EXTENT and −H's condition number (≈ 5e13)
        // fails the curvature test, but log p̃ does not rise further out: a mode, not a funnel
        let sharp = Sharp { n: 100.0, s: 1e-7 };
        match fit_laplace(&sharp, &Common::default(), &mut rng(), &mut Silent) {
            Err(Error::NotNegativeDefinite { .. }) => {}
            Err(e) => panic!("unexpected {e}"),
            Ok(fit) => panic!("the curvature test should fail, mode {}", fit.mode),
        }
        let x = DVector::from_vec(vec![3.0, (1e-7f64).ln() + 0.5 * (100f64 / 99.0).ln()]);
        let h = sharp.hessian(&DVector::zeros(0), &x);
        assert!(runaway_coordinates(&sharp, &DVector::zeros(0), &x, &h).is_empty());
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
