//! `nuts`: the No-U-Turn Sampler (NUTS) of the `nuts-rs` crate (the sampler behind
//! nutpie), as a reference to check the approximate methods against.
//!
//! q(w) is not a density but the empirical distribution of `chains` × `draws` MCMC draws of
//! p(w | θ, y) on the unconstrained scale, with θ fixed at the `hyper` block's initial values
//! (NUTS samples the parameters only; `learn_hyper` does not apply). Each chain starts at
//! the model's initial point plus U(−2, 2) per coordinate (Stan's initialisation, retried
//! until log p̃ is finite), warms up for `warmup` iterations (step size by dual averaging
//! towards `target_accept`, a diagonal mass matrix from the draws and gradients, nuts-rs's
//! schedule), then keeps `draws` draws. Chains run in parallel, one thread each.
//!
//! Cost: one gradient per leapfrog step, up to 2^`max_depth` − 1 per draw. The fitted
//! [`Posterior`] holds the draws and nuts-rs's per-draw numbers in CmdStan's layout
//! ([`Approximation::Draws`]); the report adds R̂ and bulk/tail ESS
//! ([`crate::posterior::mcmc`]). Ctrl-C stops every chain and keeps the draws so far.
//!
//! # Reference
//! Hoffman & Gelman (2014), "The No-U-Turn Sampler", JMLR 15; Betancourt (2017), "A
//! conceptual introduction to Hamiltonian Monte Carlo", arXiv:1701.02434; nuts-rs
//! (github.com/pymc-devs/nuts-rs) for the adaptation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nalgebra::{DMatrix, DVector};
use nuts_rs::rand::SeedableRng as _;
use nuts_rs::{
    Chain, CpuLogpFunc, CpuMath, CpuMathError, DiagNutsSettings, HasDims, LogpError, LowRankNutsSettings,
    Settings as _,
};
use rand::RngCore;

use crate::density::{value_grad, LogDensity};
use crate::diagnostic::Diagnostic;
use crate::infer::settings::Reader;
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Approximation, Chains, DrawStats, IterRecord, Posterior};

/// Settings of `nuts`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `chains`: independent chains, run in parallel (default 4).
    pub chains: usize,
    /// `warmup`: adaptation iterations per chain, not kept (default 1000).
    pub warmup: usize,
    /// `draws`: draws kept per chain after warm-up (default 1000).
    pub draws: usize,
    /// `max_depth`: largest tree depth; a draw takes at most 2^max_depth − 1 leapfrog steps
    /// (default 10).
    pub max_depth: u64,
    /// `target_accept`: the mean acceptance statistic the step size is tuned for (default
    /// 0.8).
    pub target_accept: f64,
    /// `mass_matrix`: the mass matrix adapted during warm-up (default diagonal).
    pub mass_matrix: MassMatrix,
}

/// The mass matrix `nuts` adapts during warm-up (nuts-rs's two Euclidean adaptations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MassMatrix {
    /// `diag`: a diagonal mass matrix from the draws' and gradients' variances (nutpie's
    /// default).
    Diag,
    /// `low_rank`: the diagonal plus a low-rank correction along the directions where the
    /// draws and gradients show strong correlation (nutpie's `low_rank_modified_mass_matrix`);
    /// for posteriors with strongly correlated coordinates, at O(D·k) per leapfrog step.
    LowRank,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 4,
            warmup: 1000,
            draws: 1000,
            max_depth: 10,
            target_accept: 0.8,
            mass_matrix: MassMatrix::Diag,
        }
    }
}

/// The `infer` keys of `nuts` besides the common ones.
pub const KEYS: &[&str] = &[
    "chains",
    "warmup",
    "max_depth",
    "target_accept",
    "mass_matrix",
    "init",
];

/// Warm-up iterations per chain when the chains start from an approximation (`init`): half
/// the default, as the start and the metric are already close to the posterior's.
pub const STARTED_WARMUP: usize = 500;

/// Where the chains start and in what metric: an approximation's mean m and a factor L of
/// its covariance (L Lᵀ = Σ). The chains run on z = L⁻¹(w − m), so that nuts-rs's adapted
/// diagonal metric in z starts from Σ in w (a dense mass matrix Σ⁻¹), and each chain starts
/// at a draw of N(m, Σ) (z ~ N(0, I)).
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    /// The method whose fit it is (`laplace`, `mvi_lr`, `pathfinder`).
    pub method: String,
    /// m, length D.
    pub mean: DVector<f64>,
    /// L, D × D lower triangular (diagonal when only the marginal sds are used).
    pub factor: DMatrix<f64>,
}

impl Start {
    /// w = m + L z.
    fn to_w(&self, z: &[f64]) -> DVector<f64> {
        &self.mean + &self.factor * DVector::from_column_slice(z)
    }
}

/// Build `nuts` from the options.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(Nuts(settings(options)?)))
}

/// The settings the options give, and the method named by `init` if any.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn settings_and_init(options: &InferOptions) -> Result<(Settings, Option<&'static str>), Diagnostic> {
    let r = Reader::new(options, "nuts", KEYS)?;
    let d = Settings::default();
    let init = match r.word("init", &["none", "laplace", "mvi_lr", "pathfinder"], "none")? {
        "none" => None,
        m => Some(m),
    };
    let target_accept = r.positive("target_accept", d.target_accept)?;
    if target_accept >= 1.0 {
        return Err(r
            .bad_key("target_accept", "a number between 0 and 1")
            .with_help("the step size is tuned for this mean acceptance rate: e.g. 0.8 (the default), 0.95 or 0.99 for a hard posterior"));
    }
    let warmup = if init.is_some() { STARTED_WARMUP } else { d.warmup };
    let s = Settings {
        chains: r.int("chains", 1, d.chains)?,
        warmup: r.int("warmup", 0, warmup)?,
        draws: r.int("draws", 1, d.draws)?,
        max_depth: r.int("max_depth", 1, d.max_depth as usize)? as u64,
        target_accept,
        mass_matrix: match r.word("mass_matrix", &["diag", "low_rank"], "diag")? {
            "low_rank" => MassMatrix::LowRank,
            _ => MassMatrix::Diag,
        },
    };
    Ok((s, init))
}

fn settings(options: &InferOptions) -> Result<Settings, Diagnostic> {
    settings_and_init(options).map(|(s, _)| s)
}

/// The No-U-Turn Sampler.
#[derive(Debug, Clone, Copy)]
pub struct Nuts(pub Settings);

impl Method for Nuts {
    fn name(&self) -> &'static str {
        "nuts"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        run_nuts(&self.0, None, model, rng, obs)
    }
}

/// `nuts` with its chains started from an approximation's draws and its metric from the
/// approximation's covariance ([`Start`]).
#[derive(Debug, Clone)]
pub struct StartedNuts {
    /// The sampler's settings.
    pub settings: Settings,
    /// The approximation.
    pub start: Start,
}

impl Method for StartedNuts {
    fn name(&self) -> &'static str {
        "nuts"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let mut post = run_nuts(&self.settings, Some(&self.start), model, rng, obs)?;
        post.notes.insert(
            0,
            format!(
                "the chains started from draws of the `{}` fit, in its covariance as the metric, \
                 with {} warm-up iterations",
                self.start.method, self.settings.warmup
            ),
        );
        Ok(post)
    }
}

/// A draw of N(0, I) in z, redrawn (up to 100 times) until log p̃ and its gradient at
/// w = m + L z are finite.
fn started_position(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: &Start,
    rng: &mut dyn RngCore,
) -> Result<Vec<f64>, Error> {
    first_finite(model, theta, rng, |rng| {
        let z: Vec<f64> = (0..model.dim())
            .map(|_| crate::dist::rng::std_normal(rng))
            .collect();
        (start.to_w(&z), z)
    })
}

/// The first of up to 100 proposals (a point w and the chain's position there) at which
/// log p̃ and its gradient are finite: the chain's position.
fn first_finite(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    rng: &mut dyn RngCore,
    mut propose: impl FnMut(&mut dyn RngCore) -> (DVector<f64>, Vec<f64>),
) -> Result<Vec<f64>, Error> {
    const TRIES: usize = 100;
    let mut last = f64::NAN;
    for _ in 0..TRIES {
        let (w, position) = propose(rng);
        let (value, grad) = value_grad(model, theta, &w);
        if value.is_finite() && grad.iter().all(|g| g.is_finite()) {
            return Ok(position);
        }
        last = value;
    }
    Err(Error::NonFiniteStart { value: last })
}

/// Run the chains: from Stan's random starts, or from an approximation's draws.
fn run_nuts(
    s: &Settings,
    start: Option<&Start>,
    model: &dyn LogDensity,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<Posterior, Error> {
    let s = *s;
    let theta = model.theta_init();
    let mut starts = Vec::with_capacity(s.chains);
    for _ in 0..s.chains {
        let seed = rng.next_u64();
        let init = match start {
            Some(st) => started_position(model, &theta, st, rng)?,
            None => initial_position(model, &theta, rng)?,
        };
        starts.push((seed, init));
    }
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, bool)>();
    let outs: Vec<ChainOut> = std::thread::scope(|scope| {
        let handles: Vec<_> = starts
            .iter()
            .enumerate()
            .map(|(c, (seed, init))| {
                let tx = tx.clone();
                let (stop, theta) = (&stop, &theta);
                scope.spawn(move || {
                    // The chain's evaluations run in a one-thread rayon pool of its own:
                    // the model's batched evaluation (`par_iter` over one chunk) then runs
                    // inline instead of being handed to the global pool and back for
                    // every gradient.
                    let run = || run_chain(model, theta, start, &s, c, *seed, init, stop, &tx);
                    match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
                        Ok(pool) => pool.install(run),
                        Err(_) => run(),
                    }
                })
            })
            .collect();
        drop(tx);
        watch(&rx, &s, obs, &stop);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| ChainOut::failed("a chain thread panicked"))
            })
            .collect()
    });
    if let Some(e) = outs.iter().find_map(|o| o.error.clone()) {
        return Err(Error::Sampler(e));
    }
    let mut outs = outs;
    if let Some(st) = start {
        for o in &mut outs {
            for z in &mut o.draws {
                *z = st.to_w(z).as_slice().to_vec();
            }
        }
    }
    Ok(posterior(model, theta, &s, outs, stop.load(Ordering::Relaxed)))
}

/// What one chain produced: its kept draws (or, stopped during warm-up, its warm-up draws).
struct ChainOut {
    draws: Vec<Vec<f64>>,
    stats: Vec<DrawStats>,
    warmup_only: bool,
    error: Option<String>,
}

impl ChainOut {
    fn failed(msg: &str) -> ChainOut {
        ChainOut {
            draws: vec![],
            stats: vec![],
            warmup_only: false,
            error: Some(msg.to_string()),
        }
    }
}

/// log p̃ and its gradient at fixed θ, as nuts-rs asks for them: in w, or in z with
/// w = m + L z for chains started from an approximation (the log-Jacobian log |L| is a
/// constant, left out).
struct Target<'a> {
    model: &'a dyn LogDensity,
    theta: &'a DVector<f64>,
    start: Option<&'a Start>,
}

/// log p̃ is −∞ or NaN at a point: nuts-rs counts the step as a divergence.
#[derive(Debug, thiserror::Error)]
#[error("log p̃ is not finite")]
struct NotFinite;

impl LogpError for NotFinite {
    fn is_recoverable(&self) -> bool {
        true
    }
}

impl HasDims for Target<'_> {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        let d = self.model.dim() as u64;
        HashMap::from([("unconstrained_parameter".to_string(), d), ("dim".to_string(), d)])
    }
}

impl CpuLogpFunc for Target<'_> {
    type LogpError = NotFinite;
    type FlowParameters = ();
    type ExpandedVector = Vec<f64>;

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn logp(&mut self, position: &[f64], gradient: &mut [f64]) -> Result<f64, NotFinite> {
        let value = match self.start {
            Some(st) => {
                let w = st.to_w(position);
                let mut g = vec![0.0; w.len()];
                let value = self.model.value_grad_into(self.theta, w.as_slice(), &mut g);
                let gz = st.factor.tr_mul(&DVector::from_vec(g));
                gradient.copy_from_slice(gz.as_slice());
                value
            }
            // straight into nuts-rs's buffer: no allocation per leapfrog step
            None => self.model.value_grad_into(self.theta, position, gradient),
        };
        if !value.is_finite() || gradient.iter().any(|g| !g.is_finite()) {
            return Err(NotFinite);
        }
        Ok(value)
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        array: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(array.to_vec())
    }
}

/// Stan's initialisation: the initial point plus U(−2, 2) per coordinate, redrawn (up to 100
/// times) until log p̃ and its gradient are finite.
fn initial_position(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    rng: &mut dyn RngCore,
) -> Result<Vec<f64>, Error> {
    let centre = model.initial_point();
    first_finite(model, theta, rng, |rng| {
        let w = centre.map(|c| c + 4.0 * uniform(rng) - 2.0);
        let position = w.iter().copied().collect();
        (w, position)
    })
}

fn uniform(rng: &mut dyn RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The settings every nuts-rs NUTS flavour shares, set from ours.
macro_rules! nuts_settings {
    ($kind:ident, $s:expr) => {{
        let mut n = $kind {
            num_tune: $s.warmup as u64,
            num_draws: $s.draws as u64,
            maxdepth: $s.max_depth,
            num_chains: $s.chains,
            ..$kind::default()
        };
        n.adapt_options.step_size_settings.target_accept = $s.target_accept;
        n
    }};
}

/// One chain: warm-up then the kept draws, reporting each draw as (chain, warm-up?) on `tx`
/// and stopping when `stop` is set.
#[allow(clippy::too_many_arguments)]
fn run_chain(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    start: Option<&Start>,
    s: &Settings,
    chain: usize,
    seed: u64,
    init: &[f64],
    stop: &AtomicBool,
    tx: &mpsc::Sender<(usize, bool)>,
) -> ChainOut {
    let math = CpuMath::new(Target { model, theta, start });
    let mut rng = nuts_rs::rand::rngs::StdRng::seed_from_u64(seed);
    // the two mass matrices are two settings types of nuts-rs with the same sampling code
    macro_rules! run_chain {
        ($settings:ident) => {{
            let settings = nuts_settings!($settings, s);
            match settings.new_chain(chain as u64, math, &mut rng) {
                Ok(sampler) => sample(sampler, s, chain, init, stop, tx, |st| {
                    (
                        st.point.logp,
                        st.adapt.step_size.mean_tree_accept,
                        st.point.energy,
                        st.depth,
                    )
                }),
                Err(e) => ChainOut::failed(&format!("{e:#}")),
            }
        }};
    }
    match s.mass_matrix {
        MassMatrix::Diag => run_chain!(DiagNutsSettings),
        MassMatrix::LowRank => run_chain!(LowRankNutsSettings),
    }
}

/// Run a chain made by nuts-rs from `init`; `numbers` reads (log p̃, acceptance statistic,
/// energy, tree depth) from its per-draw statistics.
fn sample<'a, C: Chain<CpuMath<Target<'a>>>>(
    mut sampler: C,
    s: &Settings,
    chain: usize,
    init: &[f64],
    stop: &AtomicBool,
    tx: &mpsc::Sender<(usize, bool)>,
    numbers: impl Fn(&C::Stats) -> (f64, f64, f64, u64),
) -> ChainOut {
    if let Err(e) = sampler.set_position(init) {
        return ChainOut::failed(&format!("{e:#}"));
    }
    let mut out = ChainOut {
        draws: Vec::with_capacity(s.draws),
        stats: Vec::with_capacity(s.draws),
        warmup_only: false,
        error: None,
    };
    let mut last_warmup: Option<(Vec<f64>, DrawStats)> = None;
    for i in 0..s.warmup + s.draws {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let (position, _, st, progress) = match sampler.expanded_draw() {
            Ok(d) => d,
            Err(e) => return ChainOut::failed(&format!("{e:#}")),
        };
        let (lp, accept_stat, energy, treedepth) = numbers(&st);
        let stats = DrawStats {
            lp,
            accept_stat,
            stepsize: progress.step_size,
            treedepth,
            n_leapfrog: progress.num_steps,
            divergent: progress.diverging,
            energy,
        };
        let warming = i < s.warmup;
        if warming {
            last_warmup = Some((position.to_vec(), stats));
        } else {
            out.draws.push(position.to_vec());
            out.stats.push(stats);
        }
        let _ = tx.send((chain, warming));
    }
    if out.draws.is_empty() {
        // stopped during warm-up: keep where the chain got to, marked as such
        if let Some((d, st)) = last_warmup {
            out.draws.push(d);
            out.stats.push(st);
            out.warmup_only = true;
        }
    }
    out
}

/// Show per-chain progress until every chain has finished; set `stop` when the observer
/// asks to stop (Ctrl-C).
fn watch(rx: &mpsc::Receiver<(usize, bool)>, s: &Settings, obs: &mut dyn Observer, stop: &AtomicBool) {
    const EVERY: Duration = Duration::from_millis(200);
    let mut done = vec![0usize; s.chains];
    let mut warming = vec![true; s.chains];
    let mut last = Instant::now();
    let mut total = 0usize;
    while let Ok((c, w)) = rx.recv() {
        done[c] += 1;
        warming[c] = w;
        total += 1;
        if last.elapsed() < EVERY {
            continue;
        }
        last = Instant::now();
        let per: Vec<String> = (0..s.chains)
            .map(|c| {
                let phase = if warming[c] { " warm-up" } else { "" };
                format!("{}/{}{phase}", done[c], s.warmup + s.draws)
            })
            .collect();
        obs.phase(&format!("nuts chains {}", per.join(" · ")));
        let record = IterRecord {
            iter: total,
            objective: f64::NAN,
            grad_norm: 0.0,
        };
        if !obs.iteration(&record) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The posterior from the chains' outputs, with notes on an interrupted run.
fn posterior(
    model: &dyn LogDensity,
    theta: DVector<f64>,
    s: &Settings,
    outs: Vec<ChainOut>,
    stopped: bool,
) -> Posterior {
    let d = model.dim();
    let lengths: Vec<usize> = outs.iter().map(|o| o.draws.len()).collect();
    let total: usize = lengths.iter().sum();
    let mut draws = DMatrix::zeros(d, total);
    let mut stats = Vec::with_capacity(total);
    let mut col = 0;
    for o in &outs {
        for (w, st) in o.draws.iter().zip(&o.stats) {
            draws.set_column(col, &DVector::from_column_slice(w));
            stats.push(*st);
            col += 1;
        }
    }
    let mut notes = Vec::new();
    if stopped {
        let kept: usize = outs
            .iter()
            .filter(|o| !o.warmup_only)
            .map(|o| o.draws.len())
            .sum();
        notes.push(format!(
            "interrupted by the user: {kept} of {} draws kept{}",
            s.chains * s.draws,
            if outs.iter().any(|o| o.warmup_only) {
                "; chains stopped during warm-up contribute their last warm-up draw, which is not a posterior draw"
            } else {
                ""
            }
        ));
    }
    if model.theta_dim() > 0 {
        notes.push(
            "nuts samples the parameters with θ fixed at the `hyper` block's initial values".to_string(),
        );
    }
    Posterior {
        method: "nuts".into(),
        approx: Approximation::Draws(Chains {
            draws,
            lengths,
            stats,
            warmup: s.warmup,
            max_depth: s.max_depth,
        }),
        theta,
        objective: None,
        log_evidence: None,
        trace: vec![],
        iterations: s.warmup + s.draws,
        converged: !stopped,
        notes,
        fresh_elbo: None,
        resampling: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::{Evaluated, Want};
    use crate::infer::Silent;
    use rand::SeedableRng;

    /// N(m, diag(s²)) in two dimensions.
    struct Gauss;

    const M: [f64; 2] = [1.0, -2.0];
    const S: [f64; 2] = [0.5, 2.0];

    impl LogDensity for Gauss {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            let mut g = DMatrix::zeros(2, w.ncols());
            let values = DVector::from_iterator(
                w.ncols(),
                w.column_iter().enumerate().map(|(j, c)| {
                    (0..2)
                        .map(|i| {
                            let z = (c[i] - M[i]) / S[i];
                            g[(i, j)] = -z / S[i];
                            -0.5 * z * z
                        })
                        .sum::<f64>()
                }),
            );
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            DMatrix::from_diagonal(&DVector::from_iterator(2, S.iter().map(|s| -1.0 / (s * s))))
        }
    }

    /// N(0, Σ) in two dimensions with unit sds and correlation `RHO`: a diagonal mass
    /// matrix cannot undo the correlation, a low-rank one can.
    struct Ridge;

    const RHO: f64 = 0.999;

    impl LogDensity for Ridge {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            // Σ⁻¹ = [[1, −ρ], [−ρ, 1]] / (1 − ρ²)
            let k = 1.0 / (1.0 - RHO * RHO);
            let mut g = DMatrix::zeros(2, w.ncols());
            let values = DVector::from_iterator(
                w.ncols(),
                w.column_iter().enumerate().map(|(j, c)| {
                    let (a, b) = (c[0], c[1]);
                    g[(0, j)] = -k * (a - RHO * b);
                    g[(1, j)] = -k * (b - RHO * a);
                    -0.5 * k * (a * a - 2.0 * RHO * a * b + b * b)
                }),
            );
            Evaluated {
                values,
                grad_w: want.grad_w.then_some(g),
                grad_theta: None,
            }
        }
        fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            let k = 1.0 / (1.0 - RHO * RHO);
            DMatrix::from_row_slice(2, 2, &[-k, k * RHO, k * RHO, -k])
        }
    }

    #[test]
    fn a_low_rank_mass_matrix_takes_short_trajectories_along_a_ridge() {
        let run = |mass_matrix| {
            let nuts = Nuts(Settings {
                chains: 2,
                warmup: 500,
                draws: 500,
                mass_matrix,
                ..Settings::default()
            });
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let p = nuts.fit(&Ridge, &mut rng, &mut Silent).unwrap();
            let Approximation::Draws(ch) = &p.approx else {
                panic!("nuts gives draws")
            };
            let steps = ch.stats.iter().map(|s| s.n_leapfrog as f64).sum::<f64>() / ch.stats.len() as f64;
            (p.mean(), p.cov(), steps)
        };
        let (_, _, diag_steps) = run(MassMatrix::Diag);
        let (m, c, low_rank_steps) = run(MassMatrix::LowRank);
        for i in 0..2 {
            assert!(m[i].abs() < 0.25, "{m}");
            assert!((c[(i, i)].sqrt() - 1.0).abs() < 0.2, "{c}");
        }
        assert!(c[(0, 1)] / (c[(0, 0)] * c[(1, 1)]).sqrt() > 0.99, "{c}");
        assert!(
            low_rank_steps * 4.0 < diag_steps,
            "leapfrog steps per draw: low_rank {low_rank_steps}, diag {diag_steps}"
        );
    }

    fn small() -> Nuts {
        Nuts(Settings {
            chains: 2,
            warmup: 200,
            draws: 400,
            ..Settings::default()
        })
    }

    #[test]
    fn nuts_recovers_a_gaussian_and_is_deterministic_for_a_seed() {
        let fit = |seed| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            small().fit(&Gauss, &mut rng, &mut Silent).unwrap()
        };
        let a = fit(1);
        let m = a.mean();
        let c = a.cov();
        for i in 0..2 {
            assert!((m[i] - M[i]).abs() < 0.25 * S[i], "{m}");
            assert!((c[(i, i)].sqrt() / S[i] - 1.0).abs() < 0.2, "{c}");
        }
        let Approximation::Draws(ch) = &a.approx else {
            panic!("nuts gives draws")
        };
        assert_eq!(ch.lengths, vec![400, 400]);
        assert_eq!(ch.stats.len(), 800);
        assert!(ch.stats.iter().all(|s| s.treedepth >= 1 && s.n_leapfrog >= 1));
        let b = fit(1);
        let Approximation::Draws(cb) = &b.approx else {
            panic!("nuts gives draws")
        };
        assert_eq!(ch.draws, cb.draws);
    }

    #[test]
    fn an_observer_that_says_stop_keeps_the_draws_so_far() {
        struct StopNow;
        impl Observer for StopNow {
            fn iteration(&mut self, _r: &IterRecord) -> bool {
                false
            }
        }
        let slow = Nuts(Settings {
            chains: 1,
            warmup: 0,
            draws: 2_000_000,
            ..Settings::default()
        });
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        let p = slow.fit(&Gauss, &mut rng, &mut StopNow).unwrap();
        let Approximation::Draws(ch) = &p.approx else {
            panic!("nuts gives draws")
        };
        assert!(ch.lengths[0] > 0 && ch.lengths[0] < 2_000_000);
        assert!(
            !p.converged && p.notes[0].contains("interrupted"),
            "{:?}",
            p.notes
        );
    }
}
