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
//! # Reference
//! M.-N. Tran, P. Tseng, R. Kohn, "Particle Mean Field Variational Bayes", arXiv:2303.13930.

mod curvature;
pub(crate) mod keys;
pub mod start;

use crate::density::{LogDensity, Want};
use crate::diagnostic::Diagnostic;
use crate::infer::settings::Reader;
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::mcmc::probit;
use crate::posterior::{standard_normal, Approximation, Gaussian, IterRecord, Posterior};
use curvature::{curvature_root, Root, Seeds};
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
/// Particles whose Hessians are averaged for the curvature preconditioner.
const CURVATURE_PARTICLES: usize = 8;
/// Acceptance rate the Metropolis-adjusted step sizes aim at (MALA's optimum, Roberts &
/// Rosenthal 1998).
const TARGET_ACCEPT: f64 = 0.574;
/// h_j ← h_j · exp(STEP_GAIN · (rate − TARGET_ACCEPT)) after each Metropolis step.
const STEP_GAIN: f64 = 1.0;
/// Bounds of the adapted step: at MAX_STEP a Gaussian block is redrawn almost
/// independently (contraction e^{−h/2} ≈ 0.02).
const MIN_STEP: f64 = 1e-4;
const MAX_STEP: f64 = 8.0;
/// Smallest per-particle factor of the block's step (2⁻²⁰).
const MIN_FACTOR: f64 = 1.0 / 1_048_576.0;

/// Whether each of the last `patience` window means fails to exceed the best window mean
/// before them by `tol` (false while there are not more than `patience` windows).
fn stalled(means: &[f64], tol: f64, patience: usize) -> bool {
    if means.len() <= patience {
        return false;
    }
    let (before, recent) = means.split_at(means.len() - patience);
    let best = before.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    recent.iter().all(|&m| m - best < tol)
}

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

impl<'a> Run<'a> {
    fn new(
        model: &'a dyn LogDensity,
        settings: &'a Settings,
        blocks: Vec<Vec<usize>>,
        start: &Gaussian,
        theta: DVector<f64>,
        curvature: bool,
        rng: &mut dyn RngCore,
    ) -> Self {
        let mut x = start.draw(settings.particles, rng);
        decouple_blocks(&mut x, &blocks, rng);
        let precond = start.cov().diagonal().map(|v| v.max(1e-12));
        let sq_grad = precond.map(|v| 1.0 / v);
        let metropolis = settings.algorithm == 1 && settings.metropolis;
        let n_blocks = blocks.len();
        let mut run = Run {
            model,
            settings,
            blocks,
            x,
            precond,
            sq_grad,
            roots: None,
            seeds: None,
            cross: None,
            metropolis,
            steps: vec![settings.step; n_blocks],
            accept: vec![f64::NAN; n_blocks],
            factors: vec![vec![1.0; settings.particles]; n_blocks],
            theta,
            trace: Vec::new(),
            smoothed: Vec::new(),
            converged: false,
            stopped_by_observer: false,
        };
        // Metropolis-adjusted steps need the curvature preconditioner: with diag Σ_LA (the
        // marginal variances, larger than the conditional ones) large accepted steps
        // overshoot each block's conditional mean, and through the random pairing of the
        // blocks' particles outliers then grow from sweep to sweep.
        if (curvature || metropolis) && settings.algorithm == 1 {
            run.refresh_roots();
        }
        run
    }

    /// The full run after a warm-up: its particles repeated up to `settings.particles`
    /// (each block's independently shuffled), its preconditioner and step sizes.
    fn resume(
        model: &'a dyn LogDensity,
        settings: &'a Settings,
        warm: Run<'_>,
        rng: &mut dyn RngCore,
    ) -> Run<'a> {
        let (d, pw) = (warm.x.nrows(), warm.x.ncols());
        let mut x = DMatrix::from_fn(d, settings.particles, |c, i| warm.x[(c, i % pw)]);
        decouple_blocks(&mut x, &warm.blocks, rng);
        let n_blocks = warm.blocks.len();
        Run {
            model,
            settings,
            blocks: warm.blocks,
            x,
            precond: warm.precond,
            sq_grad: warm.sq_grad,
            roots: warm.roots,
            seeds: warm.seeds,
            cross: warm.cross,
            metropolis: warm.metropolis,
            steps: warm.steps,
            accept: vec![f64::NAN; n_blocks],
            factors: vec![vec![1.0; settings.particles]; n_blocks],
            theta: warm.theta,
            trace: Vec::new(),
            smoothed: Vec::new(),
            converged: false,
            stopped_by_observer: false,
        }
    }

    /// Recompute each block's curvature preconditioner: the Hessian of E_q[log p̃],
    /// estimated as the mean Hessian at [`CURVATURE_PARTICLES`] particles (a Hessian at
    /// the particle mean would miss E_q[1/σ²] ≥ 1/E_q[σ]² and step too far).
    fn refresh_roots(&mut self) {
        let h = self.mean_block_hessian();
        let m = self.settings.subset.min(self.x.ncols());
        let affordable = cross_affordable(self.x.nrows(), self.blocks.len(), m);
        let wanted = self.settings.control_variate && self.seeds.is_none() && affordable;
        self.cross = wanted.then(|| h.clone());
        let roots = self
            .blocks
            .iter()
            .map(|coords| curvature_root(&h, coords, &self.x))
            .collect();
        self.roots = Some(roots);
    }

    /// The mean Hessian at the first [`CURVATURE_PARTICLES`] particles (those with a finite
    /// one), exact inside the blocks: full Hessians at the first call, which also look for
    /// a sparse pattern, and after that products with the seed vectors when one was found.
    fn mean_block_hessian(&mut self) -> DMatrix<f64> {
        let k = CURVATURE_PARTICLES.min(self.x.ncols());
        let d = self.x.nrows();
        let finite = |m: &DMatrix<f64>| m.iter().all(|v| v.is_finite());
        let mean = |sum: DMatrix<f64>, n: usize| if n > 0 { sum / n as f64 } else { sum };
        if let Some(seeds) = &self.seeds {
            let v = seeds.vectors();
            let (mut sum, mut n) = (DMatrix::zeros(d, v.ncols()), 0);
            for i in 0..k {
                let hv = self
                    .model
                    .hessian_times(&self.theta, &self.x.column(i).into_owned(), v);
                if finite(&hv) {
                    sum += hv;
                    n += 1;
                }
            }
            return seeds.recover(&mean(sum, n));
        }
        let hessians: Vec<DMatrix<f64>> = (0..k)
            .map(|i| self.model.hessian(&self.theta, &self.x.column(i).into_owned()))
            .filter(finite)
            .collect();
        self.seeds = Seeds::from_hessians(&hessians, &self.blocks);
        let n = hessians.len();
        mean(hessians.into_iter().fold(DMatrix::zeros(d, d), |a, h| a + h), n)
    }

    fn sweeps(&mut self, rng: &mut dyn RngCore, obs: &mut dyn Observer) {
        for iter in 1..=self.settings.max_iters {
            let grad_norm = self.sweep(rng);
            let objective = self.bound_estimate();
            let record = IterRecord {
                iter,
                objective,
                grad_norm,
            };
            self.trace.push(record);
            if !obs.iteration(&record) {
                self.stopped_by_observer = true;
                return;
            }
            if iter.is_multiple_of(self.settings.window) {
                if self.window_done() {
                    self.converged = true;
                    return;
                }
                if self.roots.is_some() {
                    self.refresh_roots();
                }
            }
        }
    }

    /// Close a smoothing window; true when the smoothed bound stopped improving.
    fn window_done(&mut self) -> bool {
        let w = self.settings.window;
        let last = &self.trace[self.trace.len() - w..];
        let mean = last.iter().map(|r| r.objective).sum::<f64>() / w as f64;
        self.smoothed.push(mean);
        stalled(&self.smoothed, self.settings.tol, self.settings.patience)
    }

    /// One sweep over all blocks; returns the mean norm of the averaged gradients.
    fn sweep(&mut self, rng: &mut dyn RngCore) -> f64 {
        let mut norm = 0.0;
        for j in 0..self.blocks.len() {
            norm += match self.settings.algorithm {
                2 => self.step_block_alg2(j, rng),
                _ => self.step_block_alg1(j, rng),
            };
        }
        norm / self.blocks.len() as f64
    }

    /// Algorithm 1 for block j: every particle against m random particles of the others.
    fn step_block_alg1(&mut self, j: usize, rng: &mut dyn RngCore) -> f64 {
        // With one block there are no other blocks to average over.
        let m = if self.blocks.len() == 1 {
            1
        } else {
            self.settings.subset
        };
        let mut w = self.mixed_columns(j, m, rng);
        let cv = self.control_variate(j, &w, m);
        let (value, mean_grad) = self.block_means(j, &w, m, cv.as_ref());
        let coords = self.blocks[j].clone();
        if self.metropolis {
            return self.mala(j, &mut w, m, cv.as_ref(), &value, &mean_grad, rng);
        }
        match &self.roots {
            Some(roots) => {
                let root = roots[j].clone();
                self.langevin_full(&coords, &root, &mean_grad, rng)
            }
            None => self.langevin(&coords, &mean_grad, rng),
        }
    }

    /// D × P·m columns: column i·m + l holds particle i of block j and, for every other
    /// block, a particle drawn at random (independently per column).
    fn mixed_columns(&self, j: usize, m: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        let p = self.x.ncols();
        let mut w = DMatrix::zeros(self.x.nrows(), p * m);
        for i in 0..p {
            for l in 0..m {
                let col = i * m + l;
                for (b, coords) in self.blocks.iter().enumerate() {
                    let src = if b == j { i } else { index_below(p, rng) };
                    for &c in coords {
                        w[(c, col)] = self.x[(c, src)];
                    }
                }
            }
        }
        w
    }

    /// The control variate of block j's subset means (len_j × P), where [`Run::cross`] is
    /// set: c_i = H̄_{j,−j} (ȳ_i − ȳ), with ȳ_i the mean of the other blocks over particle
    /// i's m columns of `w` and ȳ their mean over all particles. The first-order Taylor
    /// expansion of ∇_{x_j} log p̃(x_j, y) in y says that the subset mean gradient exceeds
    /// the all-particle mean by about c_i; subtracting it (and x_jᵀ c_i from the subset
    /// mean log p̃) keeps the estimate unbiased (ȳ_i averages to ȳ over the random
    /// subsets, for any H̄) and removes the subset noise that is linear in y, all of it on
    /// a Gaussian target. Without it that noise moves each particle's block target at
    /// random from step to step and inflates the particle variances (median 14 %, up to
    /// 29 %, with m = 10 on issue 21's correlated Gaussian). Cost: O(P·D·(m + len_j)) per block.
    fn control_variate(&self, j: usize, w: &DMatrix<f64>, m: usize) -> Option<DMatrix<f64>> {
        let h = self.cross.as_ref()?;
        let coords = &self.blocks[j];
        let (d, p) = (self.x.nrows(), self.x.ncols());
        let all = self.x.column_mean();
        let mut dev = DMatrix::zeros(d, p);
        for i in 0..p {
            let mut col = dev.column_mut(i);
            for l in 0..m {
                col += w.column(i * m + l);
            }
            col /= m as f64;
            col -= &all;
            for &c in coords {
                col[c] = 0.0;
            }
        }
        let rows = DMatrix::from_fn(coords.len(), d, |r, c| h[(coords[r], c)]);
        Some(rows * dev)
    }

    /// Per particle i, the subset means (1/m) Σ_l log p̃ and (1/m) Σ_l ∇_{x_j} log p̃ over
    /// its m columns i·m + l of `w`: the block target's log density (up to a constant)
    /// and its gradient, rows `blocks[j]`; less the control variate `cv` when given
    /// (x_jᵀ c_i from the value, c_i from the gradient; see [`Run::control_variate`]).
    fn block_means(
        &self,
        j: usize,
        w: &DMatrix<f64>,
        m: usize,
        cv: Option<&DMatrix<f64>>,
    ) -> (DVector<f64>, DMatrix<f64>) {
        let e = self.model.eval(&self.theta, w, Want::GRAD_W);
        let g = e.grad_w.expect("Want::GRAD_W asks for the gradient");
        let p = w.ncols() / m;
        let value = DVector::from_fn(p, |i, _| {
            (0..m).map(|l| e.values[i * m + l]).sum::<f64>() / m as f64
        });
        let coords = &self.blocks[j];
        let grad = DMatrix::from_fn(coords.len(), p, |r, i| {
            (0..m).map(|l| g[(coords[r], i * m + l)]).sum::<f64>() / m as f64
        });
        match cv {
            None => (value, grad),
            Some(c) => {
                let value = DVector::from_fn(p, |i, _| {
                    value[i]
                        - coords
                            .iter()
                            .enumerate()
                            .map(|(r, &k)| w[(k, i * m)] * c[(r, i)])
                            .sum::<f64>()
                });
                (value, grad - c)
            }
        }
    }

    /// One Metropolis-adjusted preconditioned Langevin step (MALA) for block j, against
    /// the same subsets as the current point (the target of particle i is its subset mean
    /// of log p̃). Proposal x′ = x + a·R Rᵀ g + b·R ε with (a, b) from
    /// [`step_coefficients`] at particle i's step h_j·f_i; h_j then adapts towards an
    /// acceptance rate of [`TARGET_ACCEPT`] and f_i as [`Run::factors`] says. Returns the
    /// mean ‖g‖ at the current points.
    #[allow(clippy::too_many_arguments)]
    fn mala(
        &mut self,
        j: usize,
        w: &mut DMatrix<f64>,
        m: usize,
        cv: Option<&DMatrix<f64>>,
        value: &DVector<f64>,
        grad: &DMatrix<f64>,
        rng: &mut dyn RngCore,
    ) -> f64 {
        let coords = self.blocks[j].clone();
        let p = self.x.ncols();
        let root = self.block_root(j);
        let coeffs: Vec<(f64, f64)> = self.factors[j]
            .iter()
            .map(|f| step_coefficients(self.steps[j] * f))
            .collect();
        let eps = stratified_normal(coords.len(), p, rng);
        let finite = grad.map(|g| if g.is_finite() { g } else { 0.0 });
        let rtg = root.tr_mul(&finite);
        let mut moves = rtg.clone();
        for (i, &(a, b)) in coeffs.iter().enumerate() {
            let mut col = moves.column_mut(i);
            col *= a;
            col.axpy(b, &eps.column(i), 1.0);
        }
        let delta = root.mul(&moves);
        for i in 0..p {
            for l in 0..m {
                for (r, &c) in coords.iter().enumerate() {
                    w[(c, i * m + l)] = self.x[(c, i)] + delta[(r, i)];
                }
            }
        }
        let (value2, grad2) = self.block_means(j, w, m, cv);
        let finite2 = grad2.map(|g| if g.is_finite() { g } else { 0.0 });
        let rtg2 = root.tr_mul(&finite2);
        let mut accepted = 0usize;
        for i in 0..p {
            let ok = value2[i].is_finite() && grad2.column(i).iter().all(|g| g.is_finite());
            let take = ok && {
                let log_alpha = value2[i] - value[i]
                    + log_proposal_ratio(
                        &eps.column(i).into_owned(),
                        &(rtg.column(i) + rtg2.column(i)),
                        coeffs[i],
                    );
                log_alpha >= 0.0 || uniform(rng).ln() < log_alpha
            };
            let f = &mut self.factors[j][i];
            if take {
                accepted += 1;
                *f = (*f * 2.0).min(1.0);
                for (r, &c) in coords.iter().enumerate() {
                    self.x[(c, i)] += delta[(r, i)];
                }
            } else {
                *f = (*f * 0.5).max(MIN_FACTOR);
            }
        }
        let rate = accepted as f64 / p as f64;
        self.accept[j] = rate;
        self.steps[j] = adapted_step(self.steps[j], rate);
        finite.column_iter().map(|c| c.norm()).sum::<f64>() / p as f64
    }

    /// Block j's preconditioner root R (R Rᵀ = M_j): the curvature root, or diag √D_j.
    fn block_root(&self, j: usize) -> Root {
        match &self.roots {
            Some(roots) => roots[j].clone(),
            None => Root::diagonal(self.blocks[j].iter().map(|&c| self.precond[c])),
        }
    }

    /// Algorithm 2 for block j: a random half of its coordinates, the others at the mean.
    fn step_block_alg2(&mut self, j: usize, rng: &mut dyn RngCore) -> f64 {
        let p = self.x.ncols();
        let mean = self.x.column_mean();
        let mut w = DMatrix::zeros(self.x.nrows(), p);
        for i in 0..p {
            w.set_column(i, &mean);
            for &c in &self.blocks[j] {
                w[(c, i)] = self.x[(c, i)];
            }
        }
        let g = self.grad(&w);
        let coords = random_half(&self.blocks[j], rng);
        let mut grad = DMatrix::zeros(coords.len(), p);
        for (r, &c) in coords.iter().enumerate() {
            let row = g.row(c);
            let msq = row.iter().map(|v| v * v).sum::<f64>() / p as f64;
            self.sq_grad[c] = 0.9 * self.sq_grad[c] + 0.1 * msq;
            self.precond[c] = 1.0 / (self.sq_grad[c] + 1e-8);
            grad.row_mut(r).copy_from(&row);
        }
        self.langevin(&coords, &grad, rng)
    }

    fn grad(&self, w: &DMatrix<f64>) -> DMatrix<f64> {
        let e = self.model.eval(&self.theta, w, Want::GRAD_W);
        e.grad_w.expect("Want::GRAD_W asks for the gradient")
    }

    /// x ← x + (1 − e^{−h/2})·D·grad + √(1 − e^{−h})·D^{1/2}·ε on the rows `coords`
    /// (see [`step_coefficients`]); returns the mean ‖grad‖.
    fn langevin(&mut self, coords: &[usize], grad: &DMatrix<f64>, rng: &mut dyn RngCore) -> f64 {
        let (drift, noise) = step_coefficients(self.settings.step);
        let eps = standard_normal(coords.len(), self.x.ncols(), rng);
        for (r, &c) in coords.iter().enumerate() {
            let d = self.precond[c];
            for i in 0..self.x.ncols() {
                let g = grad[(r, i)];
                if g.is_finite() {
                    self.x[(c, i)] += drift * d * g + noise * d.sqrt() * eps[(r, i)];
                }
            }
        }
        grad.column_iter().map(|c| c.norm()).sum::<f64>() / grad.ncols() as f64
    }

    /// x ← x + (1 − e^{−h/2})·R Rᵀ·grad + √(1 − e^{−h})·R·ε on the rows `coords` (see
    /// [`step_coefficients`]); returns the mean ‖grad‖.
    fn langevin_full(
        &mut self,
        coords: &[usize],
        root: &Root,
        grad: &DMatrix<f64>,
        rng: &mut dyn RngCore,
    ) -> f64 {
        let (a, b) = step_coefficients(self.settings.step);
        let eps = standard_normal(coords.len(), self.x.ncols(), rng);
        let finite = grad.map(|g| if g.is_finite() { g } else { 0.0 });
        let drift = root.mul(&(root.tr_mul(&finite) * a + eps * b));
        for i in 0..self.x.ncols() {
            if grad.column(i).iter().all(|g| g.is_finite()) {
                for (r, &c) in coords.iter().enumerate() {
                    self.x[(c, i)] += drift[(r, i)];
                }
            }
        }
        grad.column_iter().map(|c| c.norm()).sum::<f64>() / grad.ncols() as f64
    }

    /// Particle mean of log p̃ plus the Gaussian entropy of each block's particles.
    fn bound_estimate(&self) -> f64 {
        let v = self.model.eval(&self.theta, &self.x, Want::VALUE).values;
        let log_p = v.iter().sum::<f64>() / v.len() as f64;
        log_p
            + self
                .blocks
                .iter()
                .map(|b| gaussian_entropy(&self.x, b))
                .sum::<f64>()
    }

    fn into_posterior(self, start_notes: Vec<String>) -> Posterior {
        let mut notes = start_notes;
        notes.extend([
            "PSIS k̂ not available: particles have no density".to_string(),
            "bound = particle mean of log p̃ + Gaussian entropy of each block's particle covariance (an estimate, not a bound)".to_string(),
        ]);
        if self.stopped_by_observer {
            notes.push("stopped early on request".to_string());
        } else if !self.converged {
            notes.push(format!(
                "smoothed bound still improving after {} sweeps",
                self.settings.max_iters
            ));
        }
        let objective = self
            .smoothed
            .last()
            .copied()
            .or_else(|| self.trace.last().map(|r| r.objective));
        Posterior {
            method: "pmfvb".to_string(),
            approx: Approximation::Particles(self.x),
            theta: self.theta,
            objective,
            log_evidence: None,
            iterations: self.trace.len(),
            trace: self.trace,
            converged: self.converged,
            notes,
            fresh_elbo: None,
            resampling: None,
        }
    }
}

/// ½ log det(2πe Ĉ) of the sample covariance Ĉ of rows `coords` of the particles; for a
/// block too long for its particles to estimate a full covariance (2·len ≥ P, where Ĉ is
/// singular or nearly so) the diagonal of Ĉ instead, which by Hadamard's inequality is
/// again an upper bound (log det Ĉ ≤ Σ log Ĉ_ii).
fn gaussian_entropy(x: &DMatrix<f64>, coords: &[usize]) -> f64 {
    let (k, p) = (coords.len(), x.ncols());
    if 2 * k >= p {
        return diagonal_entropy(x, coords);
    }
    let mut sub = DMatrix::zeros(k, p);
    for (r, &c) in coords.iter().enumerate() {
        sub.row_mut(r).copy_from(&x.row(c));
    }
    let mean = sub.column_mean();
    for mut col in sub.column_iter_mut() {
        col -= &mean;
    }
    let cov = &sub * sub.transpose() / (p.max(2) - 1) as f64;
    let log_det = match cov.cholesky() {
        Some(ch) => 2.0 * ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>(),
        None => f64::NEG_INFINITY,
    };
    0.5 * (k as f64 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln() + log_det)
}

/// Σ_c ½ log(2πe Ĉ_cc) over rows `coords` (−∞ when a row has no spread).
fn diagonal_entropy(x: &DMatrix<f64>, coords: &[usize]) -> f64 {
    let p = x.ncols();
    let c = (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
    coords
        .iter()
        .map(|&r| {
            let row = x.row(r);
            let m = row.mean();
            let var = row.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (p.max(2) - 1) as f64;
            0.5 * (c + var.ln())
        })
        .sum()
}

/// Shuffle each block's particles independently, so the start is the product of the
/// starting Gaussian's block marginals (mean-field) rather than the joint.
fn decouple_blocks(x: &mut DMatrix<f64>, blocks: &[Vec<usize>], rng: &mut dyn RngCore) {
    let p = x.ncols();
    for coords in blocks.iter().skip(1) {
        for i in (1..p).rev() {
            let k = index_below(i + 1, rng);
            for &c in coords {
                x.swap((c, i), (c, k));
            }
        }
    }
}

/// The drift and noise coefficients (1 − e^{−h/2}, √(1 − e^{−h})) of one preconditioned
/// Langevin step of size h: the exponential integrator of the Langevin diffusion linearised
/// at the particle, x ← x + (1 − e^{−h/2})·M∇ + √(1 − e^{−h})·M^{1/2}ε. For small h it is
/// the Euler step (h/2, √h); unlike the Euler step it leaves a Gaussian block target
/// N(m, M) exactly invariant for every h (x − m ← e^{−h/2}(x − m) + √(1 − e^{−h})·M^{1/2}ε),
/// so steps of order 1 carry no O(h) variance bias on near-Gaussian blocks.
fn step_coefficients(h: f64) -> (f64, f64) {
    (-(-0.5 * h).exp_m1(), (-(-h).exp_m1()).sqrt())
}

/// log q(x | x′) − log q(x′ | x) of the proposal x′ = x + a·R Rᵀ g + b·R ε, from ε and
/// Rᵀ(g + g′) (g′ the gradient at x′): the reverse move needs the noise
/// −(a·Rᵀ(g + g′) + b·ε) / b, so the ratio is ½‖ε‖² − ½‖a·Rᵀ(g + g′) + b·ε‖² / b².
fn log_proposal_ratio(eps: &DVector<f64>, rt_sum: &DVector<f64>, (a, b): (f64, f64)) -> f64 {
    let back = rt_sum * a + eps * b;
    0.5 * eps.norm_squared() - 0.5 * back.norm_squared() / (b * b)
}

/// The next step after a Metropolis step with acceptance `rate`: h · e^{STEP_GAIN·(rate −
/// TARGET_ACCEPT)}, within [MIN_STEP, MAX_STEP].
fn adapted_step(h: f64, rate: f64) -> f64 {
    (h * (STEP_GAIN * (rate - TARGET_ACCEPT)).exp()).clamp(MIN_STEP, MAX_STEP)
}

/// k×p standard normal draws, each row a Latin hypercube sample: entry (r, i) is
/// Φ⁻¹((π_r(i) + u_ri)/p) with π_r a random permutation of 0..p and u_ri uniform in (0, 1).
/// Each entry is exactly N(0, 1), so each particle's Metropolis-adjusted step is unchanged;
/// across the p particles every row has one draw in each of p equal-probability strata,
/// which removes most of the Monte Carlo error of the particles' spread. With independent
/// draws the variance of 300 particles has a relative standard error of √(2/299) ≈ 8 %
/// whatever the algorithm; with a large step on a near-Gaussian block (each particle
/// redrawn almost independently) stratified draws bring it to about 1–2 %.
fn stratified_normal(k: usize, p: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(k, p);
    let mut perm: Vec<usize> = (0..p).collect();
    for r in 0..k {
        for i in (1..p).rev() {
            perm.swap(i, index_below(i + 1, rng));
        }
        for (i, &s) in perm.iter().enumerate() {
            out[(r, i)] = probit((s as f64 + uniform(rng)) / p as f64);
        }
    }
    out
}

/// A uniform draw in (0, 1).
fn uniform(rng: &mut dyn RngCore) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A uniform index in 0..n.
fn index_below(n: usize, rng: &mut dyn RngCore) -> usize {
    ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * n as f64).min(n as f64 - 1.0) as usize
}

/// A random subset of about half of `coords` (at least one), in order.
fn random_half(coords: &[usize], rng: &mut dyn RngCore) -> Vec<usize> {
    if coords.len() == 1 {
        return coords.to_vec();
    }
    let picked: Vec<usize> = coords
        .iter()
        .copied()
        .filter(|_| rng.next_u32() & 1 == 1)
        .collect();
    if picked.is_empty() {
        vec![coords[index_below(coords.len(), rng)]]
    } else {
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{OptionValue, Silent};
    use rand::SeedableRng;

    #[test]
    fn stopping_needs_patience_windows_without_progress() {
        // a slow climb with one noisy dip: one window below the best does not stop it
        let climb = [-100.0, -90.0, -85.0, -86.0, -80.0];
        assert!(!(1..=climb.len()).any(|n| stalled(&climb[..n], 0.01, 2)));
        assert!(stalled(&climb[..4], 0.01, 1), "patience 1 stops at the dip");
        // a plateau: two windows in a row that do not beat the best by tol
        let flat = [-100.0, -90.0, -89.995, -90.3];
        assert!(!stalled(&flat[..3], 0.01, 2));
        assert!(stalled(&flat, 0.01, 2));
        // compared with the best window, not the previous one
        assert!(stalled(&[-90.0, -95.0, -94.0, -93.0], 0.01, 2));
        assert!(!stalled(&[-90.0], 0.01, 1) && !stalled(&[-90.0, -91.0], 0.01, 2));
    }

    /// log N(w; μ, Λ⁻¹) up to a constant, one block per coordinate.
    struct Gauss {
        mu: DVector<f64>,
        prec: DMatrix<f64>,
    }

    impl LogDensity for Gauss {
        fn dim(&self) -> usize {
            self.mu.len()
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> crate::density::Evaluated {
            let mut c = w.clone();
            for mut col in c.column_iter_mut() {
                col -= &self.mu;
            }
            let g = -(&self.prec * &c);
            let values = DVector::from_iterator(
                w.ncols(),
                c.column_iter().zip(g.column_iter()).map(|(a, b)| 0.5 * a.dot(&b)),
            );
            crate::density::Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            -self.prec.clone()
        }
        fn param_blocks(&self) -> Vec<(String, usize, usize)> {
            (0..self.dim()).map(|i| (format!("w{i}"), i, 1)).collect()
        }
    }

    fn target() -> Gauss {
        Gauss {
            mu: DVector::from_vec(vec![1.0, -2.0]),
            prec: DMatrix::from_row_slice(2, 2, &[2.0, 1.2, 1.2, 1.5]),
        }
    }

    fn options(entries: &[(&str, OptionValue)]) -> InferOptions {
        InferOptions {
            entries: entries
                .iter()
                .map(|(k, v)| crate::infer::InferOption {
                    key: k.to_string(),
                    value: v.clone(),
                    span: None,
                })
                .collect(),
            source: miette::NamedSource::new("test", String::new()),
        }
    }

    #[test]
    fn build_rejects_unknown_keys_and_bad_algorithms() {
        let bad_key = options(&[("particle", OptionValue::Int(10))]);
        assert!(build(&bad_key).is_err());
        let bad_alg = options(&[("algorithm", OptionValue::Int(3))]);
        assert!(build(&bad_alg).is_err());
        let ok = options(&[
            ("algorithm", OptionValue::Int(2)),
            ("step", OptionValue::Real(0.2)),
        ]);
        assert_eq!(build(&ok).unwrap().name(), "pmfvb");
    }

    #[test]
    fn unknown_block_name_is_unsupported() {
        let names = vec![vec!["w0".to_string()], vec!["nope".to_string()]];
        assert!(matches!(
            resolve_blocks(&target(), Some(&names)),
            Err(Error::Unsupported(_))
        ));
        let ok = resolve_blocks(&target(), Some(&[vec!["w1".to_string()]])).unwrap();
        assert_eq!(ok, vec![vec![1], vec![0]]);
    }

    #[test]
    fn gaussian_entropy_of_unit_particles_is_close_to_closed_form() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let x = standard_normal(2, 20_000, &mut rng);
        let h = gaussian_entropy(&x, &[0, 1]);
        let exact = (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
        assert!((h - exact).abs() < 0.03, "{h} vs {exact}");
    }

    #[test]
    fn step_coefficients_keep_a_gaussian_invariant_and_match_euler_for_small_steps() {
        for h in [1e-4, 0.1, 1.0, 4.0] {
            let (a, b) = step_coefficients(h);
            // x − m ← (1 − a)(x − m) + b ε keeps variance 1 iff (1 − a)² + b² = 1.
            assert!(((1.0 - a).powi(2) + b * b - 1.0).abs() < 1e-12, "h = {h}");
        }
        let (a, b) = step_coefficients(1e-4);
        assert!((a / 0.5e-4 - 1.0).abs() < 1e-3 && (b / 1e-2 - 1.0).abs() < 1e-3);
    }

    #[test]
    fn proposal_ratio_makes_the_exponential_integrator_exact_on_a_matched_gaussian() {
        // Target N(0, λ⁻¹) in 1-D with M = 1/λ: π(x′) q(x | x′) = π(x) q(x′ | x), so the
        // log acceptance ratio vanishes for every x, ε and h.
        let lam: f64 = 2.5;
        let r = (1.0 / lam).sqrt();
        for (x, e, h) in [(0.3, 1.2, 0.1), (-2.0, -0.4, 1.0), (1.5, 0.0, 8.0)] {
            let (a, b) = step_coefficients(h);
            let g = -lam * x;
            let x2 = x + a * r * r * g + b * r * e;
            let g2 = -lam * x2;
            let dv = -0.5 * lam * (x2 * x2 - x * x);
            let eps = DVector::from_element(1, e);
            let rt_sum = DVector::from_element(1, r * (g + g2));
            let log_alpha = dv + log_proposal_ratio(&eps, &rt_sum, (a, b));
            assert!(log_alpha.abs() < 1e-12, "x {x}, ε {e}, h {h}: {log_alpha}");
        }
        // A mismatched preconditioner (M = 2/λ) is not exact: the ratio is not 0.
        let (a, b) = step_coefficients(4.0);
        let r = (2.0 / lam).sqrt();
        let (x, e) = (1.0, 0.5);
        let x2 = x + a * r * r * (-lam * x) + b * r * e;
        let dv = -0.5 * lam * (x2 * x2 - x * x);
        let rt_sum = DVector::from_element(1, r * (-lam * x - lam * x2));
        let log_alpha = dv + log_proposal_ratio(&DVector::from_element(1, e), &rt_sum, (a, b));
        assert!(log_alpha.abs() > 0.1, "{log_alpha}");
    }

    #[test]
    fn stratified_normals_are_normal_with_one_draw_per_stratum() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let p = 200;
        let e = stratified_normal(3, p, &mut rng);
        for r in 0..3 {
            let mut sorted: Vec<f64> = e.row(r).iter().copied().collect();
            sorted.sort_by(f64::total_cmp);
            for (k, v) in sorted.iter().enumerate() {
                let lo = if k == 0 {
                    f64::NEG_INFINITY
                } else {
                    probit(k as f64 / p as f64)
                };
                let hi = if k + 1 == p {
                    f64::INFINITY
                } else {
                    probit((k + 1) as f64 / p as f64)
                };
                assert!(
                    lo <= *v && *v <= hi,
                    "row {r}: draw {k} = {v} outside its stratum"
                );
            }
            let var = e.row(r).iter().map(|v| v * v).sum::<f64>() / p as f64;
            assert!((var - 1.0).abs() < 0.03, "row {r}: {var}");
        }
        // Each entry is marginally N(0, 1): over many draws, mean 0 and variance 1.
        let many: Vec<f64> = (0..2000)
            .map(|_| stratified_normal(1, 5, &mut rng)[(0, 0)])
            .collect();
        let m = many.iter().sum::<f64>() / many.len() as f64;
        let v = many.iter().map(|x| (x - m).powi(2)).sum::<f64>() / many.len() as f64;
        assert!(m.abs() < 0.08 && (v - 1.0).abs() < 0.1, "{m} {v}");
    }

    #[test]
    fn adapted_step_grows_above_and_shrinks_below_the_target_rate_within_bounds() {
        assert!(adapted_step(1.0, 0.9) > 1.0 && adapted_step(1.0, 0.2) < 1.0);
        assert!((adapted_step(1.0, TARGET_ACCEPT) - 1.0).abs() < 1e-12);
        assert!((adapted_step(MAX_STEP, 1.0) - MAX_STEP).abs() < 1e-12);
        assert!((adapted_step(MIN_STEP, 0.0) - MIN_STEP).abs() < 1e-12);
    }

    #[test]
    fn entropy_of_a_block_longer_than_half_the_particles_is_the_finite_diagonal_one() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let x = standard_normal(30, 40, &mut rng) * 2.0;
        let coords: Vec<usize> = (0..30).collect();
        let h = gaussian_entropy(&x, &coords);
        assert!(h.is_finite());
        assert!((h - diagonal_entropy(&x, &coords)).abs() < 1e-12);
        // Each coordinate has variance ≈ 4: ½ log(2πe·4) per coordinate.
        let per = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * 4.0).ln();
        assert!((h / 30.0 - per).abs() < 0.1, "{h}");
    }

    #[test]
    fn metropolis_steps_reach_the_mean_field_optimum_and_grow_the_step() {
        let settings = Settings {
            particles: 1000,
            step: 0.05,
            max_iters: 200,
            metropolis: true,
            ..Settings::default()
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let blocks = vec![vec![0], vec![1]];
        let start = Gaussian {
            mean: DVector::from_vec(vec![3.0, 0.0]),
            root: DMatrix::identity(2, 2),
        };
        let model = target();
        let mut run = Run::new(
            &model,
            &settings,
            blocks,
            &start,
            DVector::zeros(0),
            true,
            &mut rng,
        );
        run.sweeps(&mut rng, &mut Silent);
        let (m, c) = (run.x.column_mean(), particle_cov(&run.x));
        assert!((m[0] - 1.0).abs() < 0.1 && (m[1] + 2.0).abs() < 0.1, "{m}");
        for (i, lam) in [2.0, 1.5].iter().enumerate() {
            assert!((c[(i, i)] * lam - 1.0).abs() < 0.15, "var {i} = {}", c[(i, i)]);
        }
        // Each block's target is an exact Gaussian and the curvature preconditioner is
        // exact: every proposal is accepted, so the step grows to its bound.
        assert!(run.steps.iter().all(|h| *h > 1.0), "{:?}", run.steps);
    }

    #[test]
    fn warm_up_hands_its_particles_to_the_full_run() {
        let settings = Settings {
            particles: 400,
            step: 0.05,
            max_iters: 200,
            warmup: Some(true),
            metropolis: true,
            ..Settings::default()
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let post = Pmfvb::new(settings)
            .fit(&target(), &mut rng, &mut Silent)
            .unwrap();
        assert!(
            post.notes.iter().any(|n| n.starts_with("warm-up")),
            "{:?}",
            post.notes
        );
        let (m, c) = (post.mean(), post.cov());
        match &post.approx {
            Approximation::Particles(x) => assert_eq!(x.ncols(), 400),
            other => panic!("particles expected, not {other:?}"),
        }
        assert!((m[0] - 1.0).abs() < 0.15 && (m[1] + 2.0).abs() < 0.15, "{m}");
        assert!((c[(0, 0)] * 2.0 - 1.0).abs() < 0.25, "{c}");
    }

    #[test]
    fn curvature_refreshes_read_sparse_block_hessians_off_seed_products() {
        // Coordinate 0 coupled to all others, a chain on coordinates 1..=n (an SV shape).
        let n = 40;
        let prec = DMatrix::from_fn(n + 1, n + 1, |i, j| match (i, j, i.abs_diff(j)) {
            (0, 0, _) => 3.0,
            (0, _, _) | (_, 0, _) => 0.05,
            (_, _, 0) => 4.0 + 0.1 * i as f64,
            (_, _, 1) => -1.0,
            _ => 0.0,
        });
        let model = Gauss {
            mu: DVector::zeros(n + 1),
            prec: prec.clone(),
        };
        let settings = Settings {
            particles: 20,
            ..Settings::default()
        };
        let blocks = vec![vec![0], (1..=n).collect::<Vec<_>>()];
        let start = Gaussian {
            mean: DVector::zeros(n + 1),
            root: DMatrix::identity(n + 1, n + 1),
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let theta = DVector::zeros(0);
        let mut run = Run::new(&model, &settings, blocks.clone(), &start, theta, true, &mut rng);
        let seeds = run
            .seeds
            .as_ref()
            .expect("the first refresh finds the sparse pattern");
        assert_eq!(
            seeds.vectors().ncols(),
            1 + 3,
            "one group for coordinate 0, 3 for the chain"
        );
        let h = run.mean_block_hessian();
        for coords in &blocks {
            for &r in coords {
                for &c in coords {
                    assert!((h[(r, c)] + prec[(r, c)]).abs() < 1e-12, "({r}, {c})");
                }
            }
        }
    }

    fn particle_cov(x: &DMatrix<f64>) -> DMatrix<f64> {
        let mean = x.column_mean();
        let mut c = x.clone();
        for mut col in c.column_iter_mut() {
            col -= &mean;
        }
        &c * c.transpose() / (x.ncols() - 1) as f64
    }

    #[test]
    fn both_algorithms_reach_the_mean_field_optimum_of_a_gaussian() {
        for algorithm in [1, 2] {
            let settings = Settings {
                particles: 1000,
                step: 0.05,
                max_iters: 300,
                algorithm,
                ..Settings::default()
            };
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let post = Pmfvb::new(settings)
                .fit(&target(), &mut rng, &mut Silent)
                .unwrap();
            let (m, c) = (post.mean(), post.cov());
            assert!(
                (m[0] - 1.0).abs() < 0.1 && (m[1] + 2.0).abs() < 0.1,
                "alg {algorithm}: {m}"
            );
            for (i, lam) in [2.0, 1.5].iter().enumerate() {
                let rel = c[(i, i)] * lam - 1.0;
                assert!(rel.abs() < 0.15, "alg {algorithm}: var {i} = {} ", c[(i, i)]);
            }
            assert!(c[(0, 1)].abs() < 0.1, "blocks stay independent: {}", c[(0, 1)]);
        }
    }
}
