//! `pathfinder`: Gaussian approximations along an L-BFGS path, the best by ELBO; several
//! paths pooled by Pareto-smoothed importance resampling.
//!
//! One path: L-BFGS maximises log p̃(w | θ) from the initial point plus U(−2, 2) per
//! coordinate (Stan's initialisation), with memory J = `history_size`. At every iterate w_l
//! the (s, y) pairs kept by L-BFGS and a diagonal α (updated from each pair, the paper's
//! Algorithm 4) give the inverse-Hessian estimate H_l = diag(α) + β γ βᵀ (β = [diag(α) Y, S],
//! D×2J; the compact BFGS form) and the local approximation
//! q_l = N(w_l + H_l ∇ log p̃(w_l), H_l). Its ELBO is estimated from `num_elbo_draws` draws
//! (log p̃ − log q_l); the iterate with the highest ELBO is the path's approximation.
//! Draws use the factored form (Algorithm 5): with 2J < D a thin QR of diag(α)^(−½) β = Q R
//! and L = chol(I + R γ Rᵀ), w = μ + diag(α)^(½) (u + Q (L − I) Qᵀ u), u ~ N(0, I), and
//! log q = −½ (Σ log α + 2 Σ log L_ii + uᵀu + D log 2π); otherwise the same with Q = I.
//!
//! `num_paths = 1` returns the chosen Gaussian (a density: the report gives its k̂ and
//! fresh ELBO like any Gaussian method's). `num_paths > 1` runs the paths in parallel, draws
//! `num_draws` from each path's approximation, pools them with log importance ratios
//! log p̃ − log q_path, and resamples `draws` of them by their Pareto-smoothed weights
//! (`psis_resample = true`, the default), reporting k̂ and the importance-sampling ESS; with
//! `psis_resample = false` the pool itself is the posterior's draw set.
//!
//! θ (`hyper`) is not learned on the path: with `learn_hyper = true` it is the Laplace
//! fit's θ (searched on the Laplace evidence, as the MVI methods start from), otherwise the
//! `hyper` block's initial values.
//!
//! Cost per path: one gradient per L-BFGS trial point (about 1–2 per iteration) plus
//! `num_elbo_draws` log p̃ values per iterate, then `num_draws` log p̃ values; O(D J²) per
//! iterate for the factors.
//!
//! L-BFGS stops on CmdStan's tests: |Δ log p̃| < 10⁻¹², relative change < `tol` (default
//! 10⁴ ε ≈ 2.2·10⁻¹², CmdStan's `tol_rel_obj`), ‖∇‖ < 10⁻⁸, ‖Δw‖ < 10⁻⁸, or `max_iters`
//! (Stan's `max_lbfgs_iters`, default 1000). Two things differ from Stan's L-BFGS, both
//! because of badly scaled posteriors (docs/results.md, "Pathfinder against BlackJAX"):
//!
//! - the initial inverse Hessian of the two-loop recursion is the diagonal α above (the
//!   paper's Algorithm 4, Gilbert & Lemaréchal's diagonal update), not Stan's scalar
//!   sᵀy / yᵀy, so the search direction is the local approximation's own mean shift
//!   −H_l ∇f; with a scalar, a coordinate whose curvature is 10⁶ times another's takes
//!   steps scaled to the steep one (`lbfgs_init = scalar` restores Stan's);
//! - CmdStan's relative-gradient test, gᵀHg / max(1, |log p̃|) < 10⁷ ε with H the L-BFGS
//!   estimate, is off by default (`tol_rel_grad = 0`). H only knows the directions the path
//!   has moved along, so on a ridge (kilpisjarvi: alpha and beta correlated at −0.99999) it
//!   underestimates the variance along the ridge by a factor of about 10⁸ and the test fires
//!   on the ridge 2 nats below the mode, on every path; `tol_rel_grad = 2.22e-9` restores it.
//!
//! # Reference
//! Zhang, Carpenter, Gelman & Vehtari, "Pathfinder: Parallel quasi-Newton variational
//! inference", JMLR 23 (2022), Algorithms 1–5; Byrd, Nocedal & Schnabel, "Representations
//! of quasi-Newton matrices and their use in limited memory methods", Math. Prog. 63 (1994).

use std::sync::atomic::{AtomicBool, Ordering};

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use rayon::prelude::*;

use crate::density::{value_grad, LogDensity, Want};
use crate::diagnostic::Diagnostic;
use crate::infer::optim::{line_search, two_loop_from};
use crate::infer::settings::{Common, Reader};
use crate::infer::{laplace, Error, InferOptions, Method, Observer};
use crate::posterior::psis::{self, Resampling};
use crate::posterior::{standard_normal, Approximation, Gaussian, IterRecord, Posterior};

/// The keys of `pathfinder` besides the common ones.
pub const KEYS: &[&str] = &[
    "num_paths",
    "history_size",
    "num_draws",
    "num_elbo_draws",
    "psis_resample",
    "tol_rel_grad",
    "lbfgs_init",
];

/// Options of `pathfinder` (Stan's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `num_paths`: independent L-BFGS paths (default 4).
    pub num_paths: usize,
    /// `history_size`: L-BFGS memory J, also the rank of the covariance update (default 5).
    pub history_size: usize,
    /// `num_draws`: draws from each path's approximation pooled for resampling (default 1000).
    pub num_draws: usize,
    /// `num_elbo_draws`: draws per iterate for its ELBO estimate (default 25).
    pub num_elbo_draws: usize,
    /// `draws`: draws resampled from the pool (default 1000; Stan's `num_psis_draws`).
    pub draws: usize,
    /// `max_iters`: L-BFGS iteration limit per path (default 1000; Stan's `max_lbfgs_iters`).
    pub max_iters: usize,
    /// `tol`: relative change of log p̃ that stops L-BFGS (default 10⁴ ε, CmdStan's
    /// `tol_rel_obj`).
    pub tol_rel_obj: f64,
    /// `tol_rel_grad`: stop L-BFGS when gᵀHg / max(1, |log p̃|) falls below it, H its
    /// inverse-Hessian estimate (CmdStan's relative-gradient test, 10⁷ ε there; default 0:
    /// off, see the module doc).
    pub tol_rel_grad: f64,
    /// `lbfgs_init`: L-BFGS's initial inverse Hessian is the diagonal α of the paper's
    /// Algorithm 4 (`diagonal`, default) or Stan's scalar sᵀy / yᵀy (`scalar`).
    pub diagonal_init: bool,
    /// `psis_resample`: resample the pooled draws by their smoothed weights (default true).
    pub psis_resample: bool,
    /// `learn_hyper`: θ from the Laplace fit (true, default) or as initialised (false).
    pub learn_hyper: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            num_paths: 4,
            history_size: 5,
            num_draws: 1000,
            num_elbo_draws: 25,
            draws: 1000,
            max_iters: 1000,
            tol_rel_obj: TOL_REL_OBJ,
            tol_rel_grad: 0.0,
            diagonal_init: true,
            psis_resample: true,
            learn_hyper: true,
        }
    }
}

/// Read `pathfinder`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value (`num_paths`, `history_size`, `num_draws`
/// and `num_elbo_draws` must be at least 1).
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let r = Reader::new(options, "pathfinder", KEYS)?;
    let d = Settings::default();
    Ok(Box::new(Pathfinder {
        settings: Settings {
            num_paths: r.int("num_paths", 1, d.num_paths)?,
            history_size: r.int("history_size", 1, d.history_size)?,
            num_draws: r.int("num_draws", 1, d.num_draws)?,
            num_elbo_draws: r.int("num_elbo_draws", 1, d.num_elbo_draws)?,
            draws: r.int("draws", 1, d.draws)?,
            max_iters: r.int("max_iters", 1, d.max_iters)?,
            tol_rel_obj: r.positive("tol", d.tol_rel_obj)?,
            tol_rel_grad: r.non_negative("tol_rel_grad", d.tol_rel_grad)?,
            diagonal_init: r.word("lbfgs_init", &["diagonal", "scalar"], "diagonal")? == "diagonal",
            psis_resample: r.boolean("psis_resample", d.psis_resample)?,
            learn_hyper: r.boolean("learn_hyper", d.learn_hyper)?,
        },
    }))
}

/// Pathfinder variational inference.
#[derive(Debug, Clone, Default)]
pub struct Pathfinder {
    /// Its options.
    pub settings: Settings,
}

/// Machine epsilon as CmdStan scales its relative tolerances by it.
const EPS: f64 = 2.220446049250313e-16;
/// CmdStan's `tol_obj`.
const TOL_OBJ: f64 = 1e-12;
/// CmdStan's `tol_rel_obj` (10⁴) times ε.
const TOL_REL_OBJ: f64 = 1e4 * EPS;
/// CmdStan's `tol_grad`.
const TOL_GRAD: f64 = 1e-8;
/// CmdStan's `tol_param`.
const TOL_PARAM: f64 = 1e-8;
/// Half-width of Stan's uniform initialisation on the unconstrained scale.
const INIT_RADIUS: f64 = 2.0;
/// Random initial points tried before a path gives up on a non-finite log p̃ (Stan's 100).
const INIT_TRIES: usize = 100;

impl Method for Pathfinder {
    fn name(&self) -> &'static str {
        "pathfinder"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let mut notes = Vec::new();
        let theta = hyperparameters(model, s.learn_hyper, rng, obs, &mut notes)?;
        let seeds: Vec<u64> = (0..s.num_paths).map(|_| rng.next_u64()).collect();
        obs.phase(&format!("pathfinder ({} paths)", s.num_paths));
        let (first, rest) = run_paths(model, &theta, s, &seeds, obs);
        let mut trace = Vec::new();
        let mut paths = Vec::new();
        for path in std::iter::once(first).chain(rest) {
            match path {
                Ok(p) => {
                    if trace.is_empty() {
                        trace.clone_from(&p.trace);
                    }
                    paths.push(p);
                }
                Err(e) if s.num_paths == 1 => return Err(e),
                Err(e) => notes.push(format!("a path failed: {e}")),
            }
        }
        if paths.is_empty() {
            return Err(Error::NoApproximation(
                "no Pathfinder path found an approximation with a finite ELBO".into(),
            ));
        }
        let interrupted = paths.iter().any(|p| p.interrupted);
        if interrupted {
            notes.push(
                "interrupted: the paths stopped early; their best approximations so far are used".into(),
            );
        }
        notes.extend(path_notes(&paths, s.max_iters));
        let converged = paths.iter().all(|p| p.converged);
        let iterations = paths.iter().map(|p| p.iterations).max().unwrap_or(0);
        let best_elbo = paths.iter().map(|p| p.elbo).fold(f64::NEG_INFINITY, f64::max);
        let approx_resampling = if s.num_paths == 1 {
            (
                Approximation::Gaussian(paths.swap_remove(0).local.gaussian()),
                None,
            )
        } else {
            pool(model, &theta, &paths, s, rng)
        };
        Ok(Posterior {
            method: "pathfinder".into(),
            approx: approx_resampling.0,
            theta,
            objective: Some(best_elbo),
            log_evidence: None,
            trace,
            iterations,
            converged,
            notes,
            fresh_elbo: None,
            resampling: approx_resampling.1,
        })
    }
}

/// θ for the paths: the Laplace fit's with `learn_hyper` (and P > 0), else the initial one.
fn hyperparameters(
    model: &dyn LogDensity,
    learn_hyper: bool,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
    notes: &mut Vec<String>,
) -> Result<DVector<f64>, Error> {
    if model.theta_dim() == 0 || !learn_hyper {
        return Ok(model.theta_init());
    }
    obs.phase("laplace (θ)");
    let fit = laplace::fit_laplace(model, &Common::default(), rng, obs)?;
    notes.push("θ (`hyper`) fixed at the Laplace fit's values; Pathfinder does not learn θ".into());
    Ok(fit.theta)
}

/// Path 0 on this thread with the user's observer (progress, Ctrl-C), the others in
/// parallel; a stop asked for on path 0 stops them all.
fn run_paths(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    s: &Settings,
    seeds: &[u64],
    obs: &mut dyn Observer,
) -> (Result<PathFit, Error>, Vec<Result<PathFit, Error>>) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let others = scope.spawn(|| {
            seeds[1..]
                .par_iter()
                .map(|&seed| {
                    let mut rng = StdRng::seed_from_u64(seed);
                    let mut keep_going = |_: &IterRecord| !stop.load(Ordering::Relaxed);
                    run_path(model, theta, s, &mut rng, &mut keep_going)
                })
                .collect::<Vec<_>>()
        });
        let mut rng = StdRng::seed_from_u64(seeds[0]);
        let mut forward = |r: &IterRecord| {
            let go = obs.iteration(r);
            if !go {
                stop.store(true, Ordering::Relaxed);
            }
            go
        };
        let first = run_path(model, theta, s, &mut rng, &mut forward);
        let rest = others.join().expect("a Pathfinder path panicked");
        (first, rest)
    })
}

/// One path's result: its chosen approximation and `num_draws` draws from it (multi-path).
struct PathFit {
    local: LocalGaussian,
    elbo: f64,
    iterations: usize,
    converged: bool,
    interrupted: bool,
    trace: Vec<IterRecord>,
}

/// The L-BFGS path with the ELBO of the local approximation at every iterate.
fn run_path(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    s: &Settings,
    rng: &mut StdRng,
    observe: &mut dyn FnMut(&IterRecord) -> bool,
) -> Result<PathFit, Error> {
    // L-BFGS minimises f = −log p̃; g below is ∇f.
    let mut f = |x: &DVector<f64>| {
        let (v, g) = value_grad(model, theta, x);
        (-v, -g)
    };
    let (mut x, mut v, mut g) = initial_point(model, &mut f, rng)?;
    let mut hist = History::new(x.len(), s.history_size);
    let mut best: Option<(f64, LocalGaussian)> = None;
    let (mut trace, mut converged, mut interrupted, mut iterations) = (Vec::new(), false, false, 0);
    // the direction the relative-gradient test computed at the end of the last iteration
    // (the same pairs and gradient): the next step's, not computed twice
    let mut next: Option<DVector<f64>> = None;
    for it in 1..=s.max_iters {
        let mut p = next.take().unwrap_or_else(|| hist.direction(&g, s.diagonal_init));
        if p.dot(&g) >= 0.0 {
            hist.clear();
            p = -&g;
        }
        let alpha0 = if hist.s.is_empty() {
            (1.0 / g.norm()).min(1.0)
        } else {
            1.0
        };
        let Some((step, v_new, g_new)) = line_search(&mut f, &x, v, &g, &p, alpha0) else {
            if hist.s.is_empty() {
                converged = g.norm() <= TOL_GRAD.max(1e-6 * v.abs().max(1.0));
                break;
            }
            hist.clear();
            continue;
        };
        let x_new = &x + &p * step;
        hist.push(&x_new - &x, &g_new - &g);
        let dx = (&x_new - &x).norm();
        let dv = (v - v_new).abs();
        let rel_dv = dv / v.abs().max(v_new.abs()).max(1.0);
        (x, v, g) = (x_new, v_new, g_new);
        iterations = it;
        if let Some(local) = hist.approximation(&x, &g) {
            let elbo = local.elbo(model, theta, s.num_elbo_draws, rng);
            if elbo.is_finite() && best.as_ref().is_none_or(|(b, _)| elbo > *b) {
                best = Some((elbo, local));
            }
        }
        let record = IterRecord {
            iter: it,
            objective: -v,
            grad_norm: g.norm(),
        };
        trace.push(record);
        if !observe(&record) {
            interrupted = true;
            break;
        }
        if dv < TOL_OBJ
            || rel_dv < s.tol_rel_obj
            || g.norm() < TOL_GRAD
            || (s.tol_rel_grad > 0.0 && {
                let d = hist.direction(&g, s.diagonal_init);
                let rel_grad = d.dot(&g).abs() / v.abs().max(1.0);
                next = Some(d);
                rel_grad < s.tol_rel_grad
            })
            || dx < TOL_PARAM
        {
            converged = true;
            break;
        }
    }
    let Some((elbo, local)) = best else {
        return Err(Error::NoApproximation(format!(
            "no iterate of the L-BFGS path ({iterations} iterations) gave an approximation with \
             a finite ELBO"
        )));
    };
    Ok(PathFit {
        local,
        elbo,
        iterations,
        converged,
        interrupted,
        trace,
    })
}

/// The initial point plus U(−2, 2) per coordinate, retried while log p̃ or its gradient is
/// not finite; (point, −log p̃, −∇ log p̃).
#[allow(clippy::type_complexity)]
fn initial_point(
    model: &dyn LogDensity,
    f: &mut dyn FnMut(&DVector<f64>) -> (f64, DVector<f64>),
    rng: &mut StdRng,
) -> Result<(DVector<f64>, f64, DVector<f64>), Error> {
    let centre = model.initial_point();
    let mut last = f64::NAN;
    for _ in 0..INIT_TRIES {
        let x = centre.map(|c| c + rng.random_range(-INIT_RADIUS..INIT_RADIUS));
        let (v, g) = f(&x);
        if v.is_finite() && g.iter().all(|d| d.is_finite()) {
            return Ok((x, v, g));
        }
        last = -v;
    }
    Err(Error::NonFiniteStart { value: last })
}

/// The (s, y) pairs kept by L-BFGS (minimisation convention, y = Δ∇f) and the diagonal α.
struct History {
    s: Vec<DVector<f64>>,
    y: Vec<DVector<f64>>,
    alpha: DVector<f64>,
    size: usize,
}

impl History {
    fn new(dim: usize, size: usize) -> Self {
        History {
            s: Vec::new(),
            y: Vec::new(),
            alpha: DVector::from_element(dim, 1.0),
            size,
        }
    }

    fn clear(&mut self) {
        self.s.clear();
        self.y.clear();
    }

    /// The L-BFGS direction −H g from the pairs, H's initial matrix diag(α) when
    /// `diagonal` (and there are pairs), sᵀy / yᵀy of the newest pair otherwise.
    fn direction(&self, g: &DVector<f64>, diagonal: bool) -> DVector<f64> {
        let h0 = (diagonal && !self.s.is_empty()).then_some(&self.alpha);
        two_loop_from(g, &self.s, &self.y, h0)
    }

    /// Keep the pair when it has positive curvature (sᵀy > ε ‖y‖², the paper's check) and
    /// update α from it (Algorithm 4); otherwise leave everything as it is.
    fn push(&mut self, s: DVector<f64>, y: DVector<f64>) {
        let b = s.dot(&y);
        let curved = b > EPS * y.norm_squared();
        if !curved {
            return;
        }
        let a: f64 = self.alpha.iter().zip(y.iter()).map(|(al, yi)| al * yi * yi).sum();
        let c: f64 = self.alpha.iter().zip(s.iter()).map(|(al, si)| si * si / al).sum();
        let updated = DVector::from_iterator(
            s.len(),
            (0..s.len()).map(|i| {
                let al = self.alpha[i];
                1.0 / (a / (b * al) + y[i] * y[i] / b - a * s[i] * s[i] / (b * c * al * al))
            }),
        );
        if updated.iter().all(|v| v.is_finite() && *v > 0.0) {
            self.alpha = updated;
        }
        self.s.push(s);
        self.y.push(y);
        if self.s.len() > self.size {
            self.s.remove(0);
            self.y.remove(0);
        }
    }

    /// The local Gaussian at `x` with gradient `g` of f = −log p̃ (Algorithms 3 and 5);
    /// `None` without pairs or when the factor is not positive definite.
    fn approximation(&self, x: &DVector<f64>, g: &DVector<f64>) -> Option<LocalGaussian> {
        let (d, m) = (x.len(), self.s.len());
        if m == 0 {
            return None;
        }
        let s_mat = DMatrix::from_columns(&self.s);
        let y_mat = DMatrix::from_columns(&self.y);
        let sty = s_mat.transpose() * &y_mat;
        let r = sty.upper_triangle();
        let r_inv = r.clone().solve_upper_triangular(&DMatrix::identity(m, m))?;
        let ay = DMatrix::from_fn(d, m, |i, j| self.alpha[i] * y_mat[(i, j)]);
        let middle = DMatrix::from_diagonal(&sty.diagonal()) + y_mat.transpose() * &ay;
        let mut gamma = DMatrix::zeros(2 * m, 2 * m);
        gamma.view_mut((0, m), (m, m)).copy_from(&(-&r_inv));
        gamma.view_mut((m, 0), (m, m)).copy_from(&(-r_inv.transpose()));
        gamma
            .view_mut((m, m), (m, m))
            .copy_from(&(r_inv.transpose() * middle * &r_inv));
        let mut beta = DMatrix::zeros(d, 2 * m);
        beta.view_mut((0, 0), (d, m)).copy_from(&ay);
        beta.view_mut((0, m), (d, m)).copy_from(&s_mat);
        let h_g = self.alpha.component_mul(g) + &beta * (&gamma * (beta.transpose() * g));
        let mean = x - h_g;
        let sqrt_alpha = self.alpha.map(f64::sqrt);
        let scaled = DMatrix::from_fn(d, 2 * m, |i, j| beta[(i, j)] / sqrt_alpha[i]);
        let (q, core) = if 2 * m < d {
            let qr = scaled.qr();
            let (q, r) = (qr.q(), qr.r());
            (Some(q), &r * &gamma * r.transpose())
        } else {
            (None, &scaled * &gamma * scaled.transpose())
        };
        let k = core.nrows();
        let chol = (DMatrix::identity(k, k) + core).cholesky()?.l();
        let log_det = self.alpha.iter().map(|a| a.ln()).sum::<f64>()
            + 2.0 * chol.diagonal().iter().map(|l| l.ln()).sum::<f64>();
        Some(LocalGaussian {
            mean,
            sqrt_alpha,
            q,
            chol,
            log_det,
        })
    }
}

/// N(mean, Σ) with Σ = diag(√α) (I + Q (L Lᵀ − I) Qᵀ) diag(√α), Q = I when `q` is `None`.
#[derive(Debug, Clone)]
struct LocalGaussian {
    mean: DVector<f64>,
    sqrt_alpha: DVector<f64>,
    q: Option<DMatrix<f64>>,
    chol: DMatrix<f64>,
    /// log det Σ.
    log_det: f64,
}

impl LocalGaussian {
    /// n draws (columns) and log q at each.
    fn draw(&self, n: usize, rng: &mut dyn RngCore) -> (DMatrix<f64>, Vec<f64>) {
        let d = self.mean.len();
        let u = standard_normal(d, n, rng);
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        let log_q: Vec<f64> = u
            .column_iter()
            .map(|c| -0.5 * (self.log_det + c.norm_squared()) - d as f64 * half_log_2pi)
            .collect();
        let mut w = self.whiten_inverse(&u);
        for mut col in w.column_iter_mut() {
            col += &self.mean;
        }
        (w, log_q)
    }

    /// diag(√α) (u + Q (L − I) Qᵀ u) for the columns u.
    fn whiten_inverse(&self, u: &DMatrix<f64>) -> DMatrix<f64> {
        let mut z = match &self.q {
            Some(q) => {
                let qtu = q.transpose() * u;
                u + q * (&self.chol * &qtu - &qtu)
            }
            None => &self.chol * u,
        };
        for (i, mut row) in z.row_iter_mut().enumerate() {
            row *= self.sqrt_alpha[i];
        }
        z
    }

    /// The ELBO from n fresh draws: mean of log p̃ − log q (−∞ when any log p̃ is −∞).
    fn elbo(&self, model: &dyn LogDensity, theta: &DVector<f64>, n: usize, rng: &mut dyn RngCore) -> f64 {
        let (w, log_q) = self.draw(n, rng);
        let lp = model.eval(theta, &w, Want::VALUE).values;
        let total: f64 = lp.iter().zip(&log_q).map(|(p, q)| p - q).sum();
        let elbo = total / n as f64;
        if elbo.is_nan() {
            f64::NEG_INFINITY
        } else {
            elbo
        }
    }

    /// The same Gaussian with a dense square root of Σ.
    fn gaussian(&self) -> Gaussian {
        let d = self.mean.len();
        Gaussian {
            mean: self.mean.clone(),
            root: self.whiten_inverse(&DMatrix::identity(d, d)),
        }
    }
}

/// `num_draws` from every path's approximation, pooled with log importance ratios
/// log p̃ − log q_path, Pareto-smoothed, and resampled to `draws` (or kept whole).
fn pool(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    paths: &[PathFit],
    s: &Settings,
    rng: &mut dyn RngCore,
) -> (Approximation, Option<Resampling>) {
    let d = model.dim();
    let n = s.num_draws;
    let mut pooled = DMatrix::zeros(d, n * paths.len());
    let mut log_ratios = Vec::with_capacity(n * paths.len());
    for (k, path) in paths.iter().enumerate() {
        let (w, log_q) = path.local.draw(n, rng);
        let lp = model.eval(theta, &w, Want::VALUE).values;
        log_ratios.extend(lp.iter().zip(&log_q).map(|(p, q)| p - q));
        pooled.columns_mut(k * n, n).copy_from(&w);
    }
    let smoothed = psis::smooth(&log_ratios);
    let resampling = Resampling {
        khat: smoothed.khat,
        ess: smoothed.ess(),
        pool: pooled.ncols(),
        resampled: s.psis_resample,
    };
    if !s.psis_resample {
        return (Approximation::Particles(pooled), Some(resampling));
    }
    let idx = psis::resample(&smoothed.log_weights, s.draws, rng);
    let chosen = DMatrix::from_fn(d, idx.len(), |i, j| pooled[(i, idx[j])]);
    (Approximation::Particles(chosen), Some(resampling))
}

/// One line on the paths: ELBO range and L-BFGS iterations, and which hit `max_iters`.
fn path_notes(paths: &[PathFit], max_iters: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if paths.len() > 1 {
        let elbos: Vec<String> = paths.iter().map(|p| format!("{:.2}", p.elbo)).collect();
        let iters: Vec<String> = paths.iter().map(|p| p.iterations.to_string()).collect();
        notes.push(format!(
            "{} paths: ELBO {}; L-BFGS iterations {}",
            paths.len(),
            elbos.join(", "),
            iters.join(", ")
        ));
    }
    let capped = paths.iter().filter(|p| !p.converged && !p.interrupted).count();
    if capped > 0 {
        notes.push(format!(
            "{capped} of {} L-BFGS paths did not converge in `max_iters = {max_iters}` iterations \
             (their best iterate so far is used)",
            paths.len()
        ));
    }
    notes
}

#[cfg(test)]
#[path = "pathfinder/tests.rs"]
mod tests;
