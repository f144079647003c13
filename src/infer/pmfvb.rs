//! `pmfvb`: particle mean-field variational Bayes (Tran, Tseng & Kohn).
//!
//! q(w) = Π_j q_j(w_j) over mean-field blocks j (from `infer { blocks = [[...], ...] }`,
//! default one block per declared parameter); each q_j is a set of P particles, drawn
//! initially from the Laplace posterior N(w*, Σ_LA). θ stays at its starting value.
//! When the Laplace fit fails or is degenerate (models without a proper mode, such as the
//! stochastic volatility example), the start is a vi_diag fit from the initial point
//! instead ([`start`]), and Algorithm 1 then preconditions each block with the inverse of
//! its regularised mean curvature −H̄_jj over a few particles (refreshed every `window`
//! sweeps) rather than the diagonal of the start's covariance.
//!
//! Algorithm 1, one sweep: for each block j in turn and every particle i one preconditioned
//! Langevin step
//! x ← x + (1 − e^{−h/2})·D_j ∇ₓ (1/m) Σ_{l∈subset} log p̃(x, x₋ⱼ⁽ˡ⁾) + √(1 − e^{−h})·D_j^{1/2} ε,
//! D_j = diag Σ_LA restricted to block j, with the other blocks taken from m particles drawn
//! at random (independently per particle and per block). The coefficients are those of the
//! exponential integrator (≈ h/2 and √h for small h, the paper's Euler step), which keeps a
//! Gaussian block target exactly invariant at any h, so larger steps carry no O(h) bias
//! there. Algorithm 2 (`algorithm = 2`):
//! each sweep updates a random half of each block's coordinates, with the other blocks at
//! their particle means, and D_j adapts like Adam/RMSprop (1 / running mean of ∇²).
//!
//! Control variate: the random subset makes each particle's block target jitter from step
//! to step, which inflates the particle variances (median 14 %, up to 29 %, with m = 10
//! on issue 21's correlated 3-D Gaussian, seeds 1–10). Where the dense mean Hessian H̄ of
//! the curvature refresh is affordable (D ≤ m·blocks, and not a sparse long block), each
//! particle's subset means subtract H̄_{j,−j}(ȳ_i − ȳ), ȳ_i its subset's mean of the
//! other blocks and ȳ the particles' (and x_jᵀ of that from the subset mean log p̃):
//! still unbiased for the all-particle mean, and exact for Gaussian targets, whatever m. The Metropolis proposal
//! noise is stratified across particles (a Latin hypercube sample per coordinate), which
//! removes most of the Monte Carlo error of the particles' spread.
//!
//! Metropolis adjustment (`metropolis`, on by default): each block step is a MALA proposal
//! with the curvature preconditioner, accepted against particle i's subset-mean target,
//! and each block adapts its own step h_j towards an acceptance rate of 0.574
//! (`Run::mala`); a particle whose proposal is rejected halves its own share of that step
//! (and doubles it back, up to the block's step, when one is accepted), so that particles
//! left far in a block's tail by a wide start, where the curvature grows and the block's
//! step overshoots, still move in. Warm-up (`warmup`, on by default after the fallback
//! start): a run with [`WARM_PARTICLES`] particles and subset [`WARM_SUBSET`] to its stopping
//! rule first; the full run starts from its particles. The mean-field fixed point of strongly coupled blocks
//! (SV: σ and h) takes hundreds of sweeps whatever P is, so most of them run cheaply.
//!
//! Bound estimate per sweep: the particle mean of log p̃ at the current particles plus, per
//! block, the Gaussian entropy ½ log det(2πe Ĉ_j) of the particle covariance Ĉ_j (exact
//! for Gaussian blocks, otherwise an upper bound on the block entropy, so the estimate is
//! not a guaranteed bound; the diagonal of Ĉ_j for blocks with 2·len ≥ P). It is smoothed
//! over windows of `window` sweeps; the run stops when `patience` windows in a row fail to
//! exceed the best earlier window's mean by `tol`, or at `max_iters`.
//!
//! Cost per sweep: one batched `eval` per block of P·m columns (Algorithm 1) or P columns
//! (Algorithm 2) with ∇_w, plus one value-only `eval` of P columns for the bound.
//!
//! This file holds the method, its settings, the blocks and a run's state; the run itself
//! (sweeps, stopping rule, bound estimate) is in `pmfvb/run.rs`, the moves of one block in
//! `pmfvb/moves.rs`, the start in [`start`] and the curvature preconditioner in
//! `pmfvb/curvature.rs`.
//!
//! # Reference
//! M.-N. Tran, P. Tseng, R. Kohn, "Particle Mean Field Variational Bayes", arXiv:2303.13930.

mod curvature;
pub(crate) mod keys;
mod moves;
mod run;
pub mod start;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::settings::Reader;
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Gaussian, IterRecord, Posterior};
use curvature::{Root, Seeds};
use keys::Keys;
use nalgebra::{DMatrix, DVector};
use rand::RngCore;

/// The settings of `pmfvb`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Mean-field blocks as lists of parameter names; `None` = one block per parameter.
    /// Key `blocks`. Parameters left out get a block each.
    pub blocks: Option<Vec<Vec<String>>>,
    /// Particles per block, P. Key `particles`, default 200.
    pub particles: usize,
    /// Particles of the other blocks averaged over per step, m. Key `subset`, default 10.
    pub subset: usize,
    /// Langevin step h relative to the Laplace marginal variances. Key `step`, default 0.1.
    pub step: f64,
    /// Maximum number of sweeps. Key `max_iters`, default 1000.
    pub max_iters: usize,
    /// Smallest gain of a window's smoothed bound over the best earlier window that counts
    /// as progress. Key `tol`, default 0.01.
    pub tol: f64,
    /// Sweeps per smoothing window. Key `window`, default 25.
    pub window: usize,
    /// Windows in a row without progress that end the run. Key `patience`, default 2: one
    /// window below the best is often noise while the bound still climbs slowly.
    pub patience: usize,
    /// 1 (subset averaging) or 2 (sub-blocks, particle means, adaptive drift). Key
    /// `algorithm`, default 1.
    pub algorithm: u8,
    /// Fit θ on the Laplace evidence before the sweeps (θ then stays fixed); otherwise θ is
    /// the model's initial value. Key `learn_hyper`, default true.
    pub learn_hyper: bool,
    /// Metropolis-adjusted Langevin steps with a per-block adaptive step (Algorithm 1).
    /// Key `metropolis`, default true: unadjusted steps of `step` × the Laplace marginal
    /// variances overshoot narrower conditionals and can run off to infinity (a
    /// non-centred hierarchy with one block per parameter did).
    pub metropolis: bool,
    /// A cheap warm-up run ([`WARM_PARTICLES`] particles, subset [`WARM_SUBSET`]) to its
    /// stopping rule before the full run, which starts from its particles. Key `warmup`;
    /// `None` (default) = on after the fallback start, off otherwise.
    pub warmup: Option<bool>,
    /// Subtract the control variate (see the module documentation) from the subset means
    /// where it is affordable. Not an `infer` key (always on from a model file); off only
    /// to measure what it changes (tests, benchmarks).
    pub control_variate: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            blocks: None,
            particles: 200,
            subset: 10,
            step: 0.1,
            max_iters: 1000,
            tol: 0.01,
            window: 25,
            patience: 2,
            algorithm: 1,
            learn_hyper: true,
            metropolis: true,
            warmup: None,
            control_variate: true,
        }
    }
}

/// The `infer` keys of `pmfvb` besides the common ones.
pub const KEYS: &[&str] = &[
    "blocks",
    "particles",
    "subset",
    "step",
    "window",
    "patience",
    "algorithm",
    "metropolis",
    "warmup",
];

/// Build `pmfvb` from its `infer` options.
///
/// # Errors
/// A [`Diagnostic`] at an unknown key or a value of the wrong kind.
pub fn build(opts: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let r = Reader::new(opts, "pmfvb", KEYS)?;
    let k = Keys::new(opts, "pmfvb");
    let d = Settings::default();
    let settings = Settings {
        blocks: k.blocks("blocks")?,
        particles: r.int("particles", 2, d.particles)?,
        subset: r.int("subset", 1, d.subset)?,
        step: r.positive("step", d.step)?,
        max_iters: r.int("max_iters", 1, d.max_iters)?,
        tol: r.positive("tol", d.tol)?,
        window: r.int("window", 1, d.window)?,
        patience: r.int("patience", 1, d.patience)?,
        algorithm: k.int_in("algorithm", &[1, 2], 1)? as u8,
        learn_hyper: r.boolean("learn_hyper", d.learn_hyper)?,
        metropolis: r.boolean("metropolis", d.metropolis)?,
        warmup: match opts.entries.iter().any(|e| e.key == "warmup") {
            true => Some(r.boolean("warmup", false)?),
            false => None,
        },
        control_variate: d.control_variate,
    };
    Ok(Box::new(Pmfvb::new(settings)))
}

/// Particle mean-field VB; see the module documentation.
#[derive(Debug, Clone)]
pub struct Pmfvb {
    /// The settings.
    pub settings: Settings,
    /// The Gaussian to draw the initial particles from and to precondition with (θ then
    /// stays at the model's initial value); `None` fits the Laplace approximation.
    pub start: Option<Gaussian>,
    /// With a given `start`: precondition with the blocks' curvature (as after the
    /// fallback start) instead of the start's marginal variances.
    pub curvature: bool,
}

impl Pmfvb {
    /// `pmfvb` with these settings, starting from the Laplace approximation.
    pub fn new(settings: Settings) -> Self {
        Pmfvb {
            settings,
            start: None,
            curvature: false,
        }
    }

    /// Start from the given Gaussian (e.g. a Laplace posterior computed elsewhere).
    pub fn with_start(mut self, start: Gaussian) -> Self {
        self.start = Some(start);
        self
    }

    /// Precondition by the blocks' curvature from a given start, as after the fallback
    /// start.
    pub fn with_curvature(mut self) -> Self {
        self.curvature = true;
        self
    }
}

impl Method for Pmfvb {
    fn name(&self) -> &'static str {
        "pmfvb"
    }

    fn supports(&self, model: &dyn LogDensity) -> Result<(), Error> {
        resolve_blocks(model, self.settings.blocks.as_deref()).map(|_| ())
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let blocks = resolve_blocks(model, self.settings.blocks.as_deref())?;
        let (start, theta, notes, curvature) = match &self.start {
            Some(g) => (g.clone(), model.theta_init(), Vec::new(), self.curvature),
            None => {
                let s = start::robust_start(model, self.settings.learn_hyper, rng, obs)?;
                (s.gaussian, s.theta, s.notes, !s.from_laplace)
            }
        };
        let s = &self.settings;
        let small = s.particles > WARM_PARTICLES || s.subset > WARM_SUBSET;
        let mut notes = notes;
        let mut run = if s.algorithm == 1 && small && s.warmup.unwrap_or(curvature) {
            let warm_settings = Settings {
                particles: s.particles.min(WARM_PARTICLES),
                subset: s.subset.min(WARM_SUBSET),
                ..s.clone()
            };
            obs.phase("pmfvb: warm-up");
            let mut warm = Run::new(model, &warm_settings, blocks, &start, theta, curvature, rng);
            warm.sweeps(rng, obs);
            notes.push(format!(
                "warm-up: {} sweeps with {} particles, subset {} ({})",
                warm.trace.len(),
                warm_settings.particles,
                warm_settings.subset,
                if warm.converged {
                    "to the stopping rule"
                } else {
                    "to max_iters"
                }
            ));
            if warm.stopped_by_observer {
                return Ok(warm.into_posterior(notes));
            }
            Run::resume(model, s, warm, rng)
        } else {
            Run::new(model, s, blocks, &start, theta, curvature, rng)
        };
        obs.phase("pmfvb");
        run.sweeps(rng, obs);
        Ok(run.into_posterior(notes))
    }
}

/// The coordinates of w in each block, from block names through `param_blocks()`.
///
/// # Errors
/// [`Error::Unsupported`] for an unknown name or a parameter named in two blocks.
pub fn resolve_blocks(
    model: &dyn LogDensity,
    names: Option<&[Vec<String>]>,
) -> Result<Vec<Vec<usize>>, Error> {
    let params = model.param_blocks();
    let mut used = vec![false; params.len()];
    let mut out = Vec::new();
    for group in names.unwrap_or(&[]) {
        let mut coords = Vec::new();
        for name in group {
            let p = params.iter().position(|(n, _, _)| n == name).ok_or_else(|| {
                let known: Vec<&str> = params.iter().map(|(n, _, _)| n.as_str()).collect();
                Error::Unsupported(format!(
                    "`blocks` names `{name}`, which is not a parameter (parameters: {})",
                    known.join(", ")
                ))
            })?;
            if used[p] {
                return Err(Error::Unsupported(format!(
                    "parameter `{name}` appears in more than one block"
                )));
            }
            used[p] = true;
            let (_, start, len) = &params[p];
            coords.extend(*start..start + len);
        }
        out.push(coords);
    }
    for (p, (_, start, len)) in params.iter().enumerate() {
        if !used[p] && *len > 0 {
            out.push((*start..start + len).collect());
        }
    }
    Ok(out)
}

/// Whether the control variate of [`Run::control_variate`] is affordable: its dense
/// D×D mean Hessian and O(P·D·(m + len_j)) work per block cost no more than the sweep's
/// P·m·blocks evaluations of log p̃ and its gradient (each at least O(D)) when D ≤
/// m·blocks: mean-field blocks of a small or moderate model, not a long latent path.
fn cross_affordable(d: usize, blocks: usize, m: usize) -> bool {
    blocks > 1 && d <= m * blocks
}

/// Particles of the warm-up run (see [`Settings::warmup`]).
pub const WARM_PARTICLES: usize = 50;
/// Subset size m of the warm-up run.
pub const WARM_SUBSET: usize = 2;

/// The state of one pmfvb run.
struct Run<'a> {
    model: &'a dyn LogDensity,
    settings: &'a Settings,
    blocks: Vec<Vec<usize>>,
    /// The particles, D×P; block j's particles are the rows `blocks[j]`.
    x: DMatrix<f64>,
    /// Preconditioner per coordinate (diag Σ_LA, or adaptive for Algorithm 2).
    precond: DVector<f64>,
    /// Running mean of the squared gradient per coordinate (Algorithm 2).
    sq_grad: DVector<f64>,
    /// Per block, a root R_j of a full preconditioner M_j = R_j R_jᵀ (Algorithm 1 after
    /// the fallback start): the inverse of the block's regularised curvature −H_jj at the
    /// particle mean, refreshed every `window` sweeps. `None`: diagonal `precond`.
    roots: Option<Vec<Root>>,
    /// Seed vectors that read the blocks' Hessians off a few products, once the first
    /// refresh has seen a sparse pattern (see [`curvature`]).
    seeds: Option<Seeds>,
    /// The mean Hessian H̄ (D×D, all blocks) of the last curvature refresh, for the
    /// control variate of [`Run::control_variate`]; `None` where it is not affordable
    /// (see [`cross_affordable`]) or not computed (sparse refreshes read only H̄_jj).
    cross: Option<DMatrix<f64>>,
    /// Metropolis-adjusted steps (Algorithm 1), see [`Run::mala`].
    metropolis: bool,
    /// Per block, its Langevin step h_j (adapted when `metropolis`).
    steps: Vec<f64>,
    /// Per block, the acceptance rate of its last Metropolis step.
    accept: Vec<f64>,
    /// Per block and particle, the factor f ∈ [MIN_FACTOR, 1] of its step h_j·f: halved
    /// after a rejected proposal, doubled (up to 1) after an accepted one.
    factors: Vec<Vec<f64>>,
    theta: DVector<f64>,
    trace: Vec<IterRecord>,
    smoothed: Vec<f64>,
    converged: bool,
    stopped_by_observer: bool,
}

#[cfg(test)]
mod tests;
