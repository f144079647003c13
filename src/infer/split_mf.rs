//! `split_mf`: split mean-field variational inference (Bouchard & Zoeter 2009).
//!
//! q(w) = Σ_k π_k N(m_k, diag v_k), one mean-field Gaussian per soft bin (`full_cov`: N(m_k, L_k L_kᵀ))
//! s_k(w) = Π σ(±(aⱼᵀw + bⱼ)) along the root-to-leaf path of a binary tree (Σ_k s_k = 1).
//! Objective: the lower bound log I ≥ log Σ_k exp(L_k),
//! L_k = E_qk[log s_k] + E_qk[log p̃] + H(q_k), π_k ∝ exp L_k; sigmoid expectations by
//! Gauss–Hermite quadrature, E_qk[log p̃] on S fixed samples shared by the bins. All
//! hyperplanes, means and log standard deviations (and θ with `learn_hyper`) are optimised
//! jointly by L-BFGS (or SCG).
//!
//! Start: the Laplace fit, or when it fails or is degenerate (no proper mode, e.g. the
//! stochastic volatility model) a `vi_diag` fit from the initial point
//! ([`crate::infer::pmfvb::start`]).
//!
//! Growth: K = 1 is vi_diag's objective on the same samples. Then the heaviest bin is split
//! along its widest axis (hyperplane through m_k normal to that axis, children at
//! m_k ± ½√v_k), everything is re-optimised, and the split is kept only if the bound
//! improves, up to `bins`. The last stage stops at `tol` (or `max_iters`); the stages
//! before it, which only choose and warm-start the next split, stop at max(`tol`, 10⁻⁶) or
//! after [`INTERMEDIATE_ITERS`] iterations (a stage where growth stops early is then
//! finished at `tol`). With `bins = 1` the one stage is the last and runs to `tol`.
//!
//! Scaling: the optimiser works on the parameters divided by the start's marginal sds
//! (means and the rows of full-covariance roots; hyperplane normals multiplied by them),
//! so that coordinates whose posterior sds differ by orders of magnitude are equally well
//! conditioned (`Ctx::scales`): without it, on a regression whose coefficients have
//! sds of 0.001 next to a log σ with sd 0.07, the 1-bin stage stopped on the relative
//! change rule 3 nats below vi_diag's optimum with the coefficients' sds still at their
//! start.
//!
//! Cost per objective evaluation: one batched `eval` of K·S columns with ∇_w, plus
//! O(K · depth · D · GH nodes) for the sigmoid terms.
//!
//! # Reference
//! G. Bouchard, O. Zoeter, "Split variational inference", ICML 2009.

mod bound;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::optim::{self, Optimizer};
use crate::infer::pmfvb::start::robust_start;
use crate::infer::settings::Reader;
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{standard_normal, Approximation, Gaussian, Posterior};
use bound::{lower_indices, Bound, GaussHermite, Params, Tree};
use nalgebra::{DMatrix, DVector};
use rand::RngCore;

/// Relative tolerance of the intermediate growth stages (K < `bins`).
pub const INTERMEDIATE_TOL: f64 = 1e-5;
/// Iteration limit of the intermediate growth stages (K < `bins`), at most `max_iters`.
pub const INTERMEDIATE_ITERS: usize = 100;

/// The settings of `split_mf`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Maximum number of bins K. Key `bins`, default 4.
    pub bins: usize,
    /// Fixed Monte Carlo samples S per bin. Key `samples`, default 1000 (as every fixed-sample method).
    pub samples: usize,
    /// Optimiser iterations per growth stage. Key `max_iters`, default 1000.
    pub max_iters: usize,
    /// Relative change of the bound that ends an optimisation. Key `tol`, default 1e-6.
    pub tol: f64,
    /// `lbfgs` or `scg`. Key `optimizer`, default `lbfgs`.
    pub optimizer: Optimizer,
    /// Optimise θ jointly on the bound (models with `hyper`), starting from the Laplace θ.
    /// Key `learn_hyper`, default true.
    pub learn_hyper: bool,
    /// A full covariance root per bin instead of a diagonal one (small D). Key `full_cov`,
    /// default false.
    pub full_cov: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bins: 4,
            samples: 1000,
            max_iters: 1000,
            tol: 1e-6,
            optimizer: Optimizer::Lbfgs,
            learn_hyper: true,
            full_cov: false,
        }
    }
}

/// Build `split_mf` from its `infer` options.
///
/// # Errors
/// A [`Diagnostic`] at an unknown key or a value of the wrong kind.
pub fn build(opts: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let r = Reader::new(
        opts,
        "split_mf",
        &["bins", "samples", "optimizer", "full_cov", "psis_resample"],
    )?;
    let d = Settings::default();
    Ok(Box::new(SplitMf {
        settings: Settings {
            bins: r.int("bins", 1, d.bins)?,
            samples: r.int("samples", 2, d.samples)?,
            max_iters: r.int("max_iters", 1, d.max_iters)?,
            tol: r.positive("tol", d.tol)?,
            optimizer: r.optimizer()?,
            learn_hyper: r.boolean("learn_hyper", d.learn_hyper)?,
            full_cov: r.boolean("full_cov", d.full_cov)?,
        },
    }))
}

/// Split mean-field VI; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct SplitMf {
    /// The settings.
    pub settings: Settings,
}

/// What a growth run produced besides the posterior.
#[derive(Debug, Clone)]
pub struct Growth {
    /// The bound on the fixed samples after each accepted stage (K = 1, 2, …).
    pub bounds: Vec<f64>,
    /// The final bound re-estimated on fresh samples (at least 1000), not fitted to them.
    pub fresh_bound: f64,
}

impl Method for SplitMf {
    fn name(&self) -> &'static str {
        "split_mf"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        self.fit_growth(model, rng, obs).map(|(p, _)| p)
    }
}

/// One accepted stage: tree, packed parameters, bound and per-bin L_k.
struct Stage {
    tree: Tree,
    x: DVector<f64>,
    bound: f64,
    per_bin: Vec<f64>,
    iterations: usize,
    converged: bool,
}

impl SplitMf {
    /// Fit and also return the bound after each accepted growth stage.
    ///
    /// # Errors
    /// As [`Method::fit`]: the Laplace start failed or the bound is not finite there.
    pub fn fit_growth(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<(Posterior, Growth), Error> {
        let begin = robust_start(model, self.settings.learn_hyper, rng, obs)?;
        let theta0 = begin.theta.clone();
        let start = begin.gaussian;
        let z = standard_normal(model.dim(), self.settings.samples, rng);
        let gh = GaussHermite::standard();
        let ctx = Ctx {
            sd0: start.cov().diagonal().map(|v| v.sqrt().clamp(1e-8, 1e8)),
            model,
            z: &z,
            theta0: &theta0,
            gh: &gh,
            settings: &self.settings,
        };
        let mut trace = Vec::new();
        let mut notes = begin.notes;
        obs.phase("split_mf: 1 bin");
        let full = self.settings.full_cov;
        let x0 = initial_params(&start, &theta0, full).pack(ctx.learn());
        let mut stage = ctx.optimise(Tree::root(full), x0, ctx.stage_limits(1), obs, &mut trace);
        if !stage.bound.is_finite() {
            return Err(Error::NonFiniteStart { value: stage.bound });
        }
        report(obs, &mut notes, format!("bound with 1 bin: {:.6}", stage.bound));
        let mut bounds = vec![stage.bound];
        while stage.tree.bins() < self.settings.bins {
            let k = stage.tree.bins() + 1;
            obs.phase(&format!("split_mf: {k} bins"));
            let (tree, x0) = ctx.split_heaviest(&stage);
            let next = ctx.optimise(tree, x0, ctx.stage_limits(k), obs, &mut trace);
            if next.bound > stage.bound {
                report(obs, &mut notes, format!("bound with {k} bins: {:.6}", next.bound));
                bounds.push(next.bound);
                stage = next;
            } else {
                let msg = format!(
                    "split to {k} bins did not raise the bound ({:.6} ≤ {:.6}); kept {} bins",
                    next.bound,
                    stage.bound,
                    k - 1
                );
                report(obs, &mut notes, msg);
                break;
            }
        }
        if stage.tree.bins() < self.settings.bins {
            // Growth stopped at an intermediate stage: finish it at the full tolerance.
            let last = (self.settings.tol, self.settings.max_iters);
            let polished = ctx.optimise(stage.tree.clone(), stage.x.clone(), last, obs, &mut trace);
            if polished.bound >= stage.bound {
                *bounds.last_mut().expect("the first stage is always kept") = polished.bound;
                stage = polished;
            }
        }
        let fresh = ctx.fresh_bound(&stage, rng);
        notes.push(format!("bound re-estimated on fresh samples: {fresh:.6}"));
        Ok((
            ctx.posterior(stage, trace, notes),
            Growth {
                bounds,
                fresh_bound: fresh,
            },
        ))
    }
}

/// Everything fixed during one fit.
struct Ctx<'a> {
    /// The start's marginal sds, the scale of each coordinate of w.
    sd0: DVector<f64>,
    model: &'a dyn LogDensity,
    z: &'a DMatrix<f64>,
    theta0: &'a DVector<f64>,
    gh: &'a GaussHermite,
    settings: &'a Settings,
}

impl Ctx<'_> {
    fn learn(&self) -> bool {
        self.settings.learn_hyper && self.model.theta_dim() > 0
    }

    /// The relative tolerance and iteration limit of the stage with `bins` bins: `tol` and
    /// `max_iters` for the last stage; for the stages before it (which only choose the next
    /// split and warm-start it; their bound is not the result) at most [`INTERMEDIATE_TOL`]
    /// and [`INTERMEDIATE_ITERS`].
    fn stage_limits(&self, bins: usize) -> (f64, usize) {
        let s = self.settings;
        if bins >= s.bins {
            (s.tol, s.max_iters)
        } else {
            (s.tol.max(INTERMEDIATE_TOL), s.max_iters.min(INTERMEDIATE_ITERS))
        }
    }

    fn bound<'b>(&'b self, tree: &'b Tree, z: &'b DMatrix<f64>) -> Bound<'b> {
        Bound {
            model: self.model,
            tree,
            z,
            theta0: self.theta0,
            learn_theta: self.learn(),
            gh: self.gh,
        }
    }

    /// Per packed parameter of `tree`, the factor c of x = c·y between the bound's
    /// parameters x and the optimiser's y: sd0 for the means and for each row of a
    /// full-covariance root (w_i = m_i + Σ_j L_ij z_j is then sd0_i times a quantity of
    /// order one), 1/sd0 for the hyperplane normals (aᵀw stays of order one), 1 for the
    /// offsets, the log sds and θ.
    fn scales(&self, tree: &Tree) -> DVector<f64> {
        let d = self.sd0.len();
        let rows = DVector::from_iterator(
            tree.n_lower(d),
            lower_indices(d).take(tree.n_lower(d)).map(|(i, _)| self.sd0[i]),
        );
        Params {
            a: vec![self.sd0.map(|s| 1.0 / s); tree.nodes],
            b: vec![1.0; tree.nodes],
            m: vec![self.sd0.clone(); tree.bins()],
            log_sigma: vec![DVector::from_element(d, 1.0); tree.bins()],
            lower: vec![rows; tree.bins()],
            theta: DVector::from_element(self.theta0.len(), 1.0),
        }
        .pack(self.learn())
    }

    fn optimise(
        &self,
        tree: Tree,
        x0: DVector<f64>,
        (tol, max_iters): (f64, usize),
        obs: &mut dyn Observer,
        trace: &mut Vec<crate::posterior::IterRecord>,
    ) -> Stage {
        let opts = optim::Options {
            optimizer: self.settings.optimizer,
            max_iters,
            rel_tol: tol,
            ..optim::Options::default()
        };
        let bound = self.bound(&tree, self.z);
        let c = self.scales(&tree);
        let mut rec = Recorder { inner: obs, trace };
        // The optimiser's last evaluation is usually at the point it returns: keep it
        // rather than evaluating K·S columns once more.
        let mut last: Option<(DVector<f64>, bound::BoundValue)> = None;
        let out = optim::maximize(
            |y| {
                let x = y.component_mul(&c);
                let b = bound.eval(&x);
                let pair = (b.value, b.grad.component_mul(&c));
                last = Some((x, b));
                pair
            },
            x0.component_div(&c),
            &opts,
            &mut rec,
        );
        let x = out.x.component_mul(&c);
        let final_eval = match last {
            Some((xl, b)) if xl == x => b,
            _ => bound.eval(&x),
        };
        Stage {
            x,
            bound: final_eval.value,
            per_bin: final_eval.per_bin,
            iterations: out.iterations,
            converged: out.converged,
            tree,
        }
    }

    /// Split the heaviest bin along its widest axis.
    fn split_heaviest(&self, stage: &Stage) -> (Tree, DVector<f64>) {
        let d = self.z.nrows();
        let k = argmax(&stage.per_bin);
        let mut p = Params::unpack(&stage.x, &stage.tree, d, self.theta0, self.learn());
        let root = p.root(k);
        let var = DVector::from_iterator(d, root.row_iter().map(|r| r.norm_squared()));
        let axis = var.argmax().0;
        let sd = var[axis].sqrt();
        let steep = 2.0 / sd;
        let mut a = DVector::zeros(d);
        a[axis] = steep;
        p.a.push(a);
        p.b.push(-steep * p.m[k][axis]);
        let mut minus = p.m[k].clone();
        minus[axis] -= 0.5 * sd;
        p.m[k][axis] += 0.5 * sd;
        p.m.push(minus);
        p.log_sigma.push(p.log_sigma[k].clone());
        p.lower.push(p.lower[k].clone());
        (stage.tree.split(k), p.pack(self.learn()))
    }

    /// The bound at the final parameters on fresh samples.
    fn fresh_bound(&self, stage: &Stage, rng: &mut dyn RngCore) -> f64 {
        let z = standard_normal(self.z.nrows(), self.z.ncols().max(1000), rng);
        self.bound(&stage.tree, &z).eval(&stage.x).value
    }

    fn posterior(
        &self,
        stage: Stage,
        trace: Vec<crate::posterior::IterRecord>,
        notes: Vec<String>,
    ) -> Posterior {
        let d = self.z.nrows();
        let p = Params::unpack(&stage.x, &stage.tree, d, self.theta0, self.learn());
        let weights: Vec<f64> = stage.per_bin.iter().map(|l| (l - stage.bound).exp()).collect();
        let components = (0..p.m.len())
            .map(|k| Gaussian {
                mean: p.m[k].clone(),
                root: p.root(k),
            })
            .collect();
        let mut notes = notes;
        if !stage.converged {
            notes.push("the last optimisation stopped at max_iters".to_string());
        }
        Posterior {
            method: "split_mf".to_string(),
            approx: Approximation::Mixture { weights, components },
            theta: p.theta,
            objective: Some(stage.bound),
            log_evidence: None,
            trace,
            iterations: stage.iterations,
            converged: stage.converged,
            notes,
            fresh_elbo: None,
            resampling: None,
        }
    }
}

/// A growth result: to the observer as a phase ("split_mf: bound with 2 bins: …") and to the notes.
fn report(obs: &mut dyn Observer, notes: &mut Vec<String>, msg: String) {
    obs.phase(&format!("split_mf: {msg}"));
    notes.push(msg);
}

/// Parameters for one bin at the Laplace mean: σ² = diag Σ_LA, or with `full_cov` the
/// Laplace Cholesky factor itself.
fn initial_params(start: &Gaussian, theta0: &DVector<f64>, full_cov: bool) -> Params {
    let cov = start.cov();
    let d = cov.nrows();
    let (log_sigma, lower) = match cov.clone().cholesky().filter(|_| full_cov) {
        Some(ch) => {
            let l = ch.l();
            let lower = lower_indices(d).map(|(i, j)| l[(i, j)]);
            (
                l.diagonal().map(f64::ln),
                DVector::from_iterator(d * (d - 1) / 2, lower),
            )
        }
        None => (
            cov.diagonal().map(|v| 0.5 * v.max(1e-300).ln()),
            DVector::zeros(if full_cov { d * (d - 1) / 2 } else { 0 }),
        ),
    };
    Params {
        a: vec![],
        b: vec![],
        m: vec![start.mean.clone()],
        log_sigma: vec![log_sigma],
        lower: vec![lower],
        theta: theta0.clone(),
    }
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

/// Passes iterations on to the caller's observer and keeps them for the trace.
struct Recorder<'a> {
    inner: &'a mut dyn Observer,
    trace: &'a mut Vec<crate::posterior::IterRecord>,
}

impl Observer for Recorder<'_> {
    fn iteration(&mut self, record: &crate::posterior::IterRecord) -> bool {
        let mut r = *record;
        r.iter = self.trace.len() + 1;
        self.trace.push(r);
        self.inner.iteration(&r)
    }
    fn phase(&mut self, name: &str) {
        self.inner.phase(name);
    }
    fn trace_line(&mut self, line: &str) {
        self.inner.trace_line(line);
    }
}

#[cfg(test)]
mod tests;
