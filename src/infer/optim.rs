//! Deterministic optimisers for smooth objectives: L-BFGS and scaled conjugate gradients.
//!
//! Input: a closure `x ↦ (f(x), ∇f(x))` over `DVector<f64>` and a start point. Output: an
//! [`Outcome`] with the point found, its value, the gradient norm, the iteration count and
//! whether a stopping rule was met. The objective may return −∞/+∞/NaN away from its domain:
//! both optimisers treat such a point as "worse" and shrink the step. Every iteration is
//! reported to an [`Observer`]; returning `false` stops the run (`converged = false`).
//!
//! [`maximize`] is what the inference methods call (they maximise log p̃ or an ELBO);
//! [`minimize`] is the same machinery with the sign flipped back.
//!
//! # Reference
//! Nocedal & Wright, *Numerical Optimization* (2006), Alg. 7.4 (two-loop recursion) and
//! Alg. 3.5–3.6 (strong-Wolfe line search). Møller, "A scaled conjugate gradient algorithm
//! for fast supervised learning", Neural Networks 6 (1993).

use nalgebra::DVector;

use crate::infer::Observer;
use crate::posterior::IterRecord;

/// Which optimiser to run (`infer { optimizer = … }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// Limited-memory BFGS with a strong-Wolfe line search.
    Lbfgs,
    /// Møller's scaled conjugate gradients (the MVI paper's optimiser).
    Scg,
}

impl Optimizer {
    /// The names accepted by `optimizer`.
    pub const NAMES: &'static [&'static str] = &["lbfgs", "scg"];

    /// Parse `lbfgs` / `scg`.
    pub fn from_name(name: &str) -> Option<Optimizer> {
        match name {
            "lbfgs" => Some(Optimizer::Lbfgs),
            "scg" => Some(Optimizer::Scg),
            _ => None,
        }
    }

    /// The registry name.
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Lbfgs => "lbfgs",
            Optimizer::Scg => "scg",
        }
    }
}

/// Stopping rules and tuning of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The algorithm.
    pub optimizer: Optimizer,
    /// Stop after this many iterations (`converged = false`).
    pub max_iters: usize,
    /// Stop when ‖∇f‖ ≤ `grad_tol`.
    pub grad_tol: f64,
    /// Stop when |f_k − f_{k+1}| ≤ `rel_tol` · max(1, |f_{k+1}|) on [`SMALL_STEPS`]
    /// consecutive successful steps.
    pub rel_tol: f64,
    /// L-BFGS memory (pairs kept).
    pub memory: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            optimizer: Optimizer::Lbfgs,
            max_iters: 1000,
            grad_tol: 1e-8,
            rel_tol: 1e-12,
            memory: 10,
        }
    }
}

/// Consecutive successful steps whose relative change must be below `rel_tol` to stop: one
/// short step (a line search that had to backtrack, an SCG step with a large λ) does not end
/// a run that is still making progress.
pub const SMALL_STEPS: usize = 2;

/// What an optimisation run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The best point found.
    pub x: DVector<f64>,
    /// The objective there (in the caller's sign: maximised for [`maximize`]).
    pub value: f64,
    /// ‖∇f‖ there.
    pub grad_norm: f64,
    /// Iterations taken.
    pub iterations: usize,
    /// Whether the gradient or relative-change rule was met.
    pub converged: bool,
    /// Whether the observer asked to stop.
    pub interrupted: bool,
}

/// Maximise `f`, starting from `x0`. The observer sees the maximised value.
pub fn maximize<F>(f: F, x0: DVector<f64>, opts: &Options, obs: &mut dyn Observer) -> Outcome
where
    F: FnMut(&DVector<f64>) -> (f64, DVector<f64>),
{
    maximize_with(f, x0, opts, obs, &mut Curvature::default())
}

/// [`maximize`], with L-BFGS starting from the curvature pairs in `curvature` (of an earlier
/// run on a nearby objective in the same coordinates; empty for a plain start) and leaving
/// its last pairs there. The other optimisers ignore it.
pub fn maximize_with<F>(
    mut f: F,
    x0: DVector<f64>,
    opts: &Options,
    obs: &mut dyn Observer,
    curvature: &mut Curvature,
) -> Outcome
where
    F: FnMut(&DVector<f64>) -> (f64, DVector<f64>),
{
    let mut neg = |x: &DVector<f64>| {
        let (v, g) = f(x);
        (-v, -g)
    };
    let mut out = run(&mut neg, x0, opts, obs, -1.0, curvature);
    out.value = -out.value;
    out
}

/// Minimise `f`, starting from `x0`.
pub fn minimize<F>(mut f: F, x0: DVector<f64>, opts: &Options, obs: &mut dyn Observer) -> Outcome
where
    F: FnMut(&DVector<f64>) -> (f64, DVector<f64>),
{
    run(&mut f, x0, opts, obs, 1.0, &mut Curvature::default())
}

/// L-BFGS's memory: the newest steps s = x_{k+1} − x_k and gradient changes
/// y = ∇f_{k+1} − ∇f_k of the minimised function, oldest first. Differences do not change
/// when the coordinates are translated, so a run may hand them to the next one on a nearby
/// objective ([`maximize_with`]).
#[derive(Debug, Clone, Default)]
pub struct Curvature {
    s: Vec<DVector<f64>>,
    y: Vec<DVector<f64>>,
}

impl Curvature {
    /// The number of pairs kept.
    pub fn len(&self) -> usize {
        self.s.len()
    }

    /// Whether no pair is kept.
    pub fn is_empty(&self) -> bool {
        self.s.is_empty()
    }

    fn clear(&mut self) {
        self.s.clear();
        self.y.clear();
    }

    /// Add a pair (tests).
    #[cfg(test)]
    pub(crate) fn push_for_test(&mut self, s: DVector<f64>, y: DVector<f64>) {
        self.s.push(s);
        self.y.push(y);
    }

    /// The pairs, oldest first (tests).
    #[cfg(test)]
    pub(crate) fn pairs_for_test(&self) -> impl Iterator<Item = (&DVector<f64>, &DVector<f64>)> {
        self.s.iter().zip(&self.y)
    }

    /// Carry the pairs into new coordinates x′ with x = A x′ + b: each step becomes
    /// `step(s)` = A⁻¹ s and each gradient change `gradient(y)` = Aᵀ y. The products sᵀy are
    /// unchanged, so the pairs describe the same curvature in the new coordinates.
    pub fn change_coordinates(
        &mut self,
        step: impl Fn(&DVector<f64>) -> DVector<f64>,
        gradient: impl Fn(&DVector<f64>) -> DVector<f64>,
    ) {
        for s in &mut self.s {
            *s = step(s);
        }
        for y in &mut self.y {
            *y = gradient(y);
        }
    }
}

pub(crate) type Objective<'a> = dyn FnMut(&DVector<f64>) -> (f64, DVector<f64>) + 'a;

/// Minimise; `sign` turns the internal value into the one reported to the observer.
fn run(
    f: &mut Objective<'_>,
    x0: DVector<f64>,
    opts: &Options,
    obs: &mut dyn Observer,
    sign: f64,
    curvature: &mut Curvature,
) -> Outcome {
    let (v0, g0) = clean(f(&x0));
    let mut state = State {
        x: x0,
        v: v0,
        g: g0,
        iterations: 0,
        converged: false,
        interrupted: false,
        small_streak: 0,
    };
    if !state.v.is_finite() {
        return state.finish();
    }
    if state.g.norm() <= opts.grad_tol {
        state.converged = true;
        return state.finish();
    }
    let mut report = |it: usize, v: f64, gn: f64| {
        obs.iteration(&IterRecord {
            iter: it,
            objective: sign * v,
            grad_norm: gn,
        })
    };
    match opts.optimizer {
        Optimizer::Lbfgs => lbfgs(f, &mut state, opts, &mut report, curvature),
        Optimizer::Scg => scg(f, &mut state, opts, &mut report),
    }
    state.finish()
}

struct State {
    x: DVector<f64>,
    v: f64,
    g: DVector<f64>,
    iterations: usize,
    converged: bool,
    interrupted: bool,
    /// Consecutive accepted steps with a relative change below `rel_tol`.
    small_streak: usize,
}

impl State {
    fn finish(self) -> Outcome {
        Outcome {
            grad_norm: self.g.norm(),
            x: self.x,
            value: self.v,
            iterations: self.iterations,
            converged: self.converged,
            interrupted: self.interrupted,
        }
    }

    /// Accept a new point; returns true when a stopping rule is met.
    fn accept(&mut self, x: DVector<f64>, v: f64, g: DVector<f64>, opts: &Options) -> bool {
        let change = (self.v - v).abs();
        self.x = x;
        self.g = g;
        let old = self.v;
        self.v = v;
        let small_change = change <= opts.rel_tol * v.abs().max(1.0) && old.is_finite();
        self.small_streak = if small_change { self.small_streak + 1 } else { 0 };
        if self.g.norm() <= opts.grad_tol || self.small_streak >= SMALL_STEPS {
            self.converged = true;
        }
        self.converged
    }
}

/// Non-finite values become +∞ (a minimiser's "worse"); the gradient is kept as is.
fn clean((v, g): (f64, DVector<f64>)) -> (f64, DVector<f64>) {
    if v.is_finite() && g.iter().all(|x| x.is_finite()) {
        (v, g)
    } else {
        (f64::INFINITY, g)
    }
}

type Report<'a> = dyn FnMut(usize, f64, f64) -> bool + 'a;

fn lbfgs(
    f: &mut Objective<'_>,
    st: &mut State,
    opts: &Options,
    report: &mut Report<'_>,
    mem: &mut Curvature,
) {
    if mem.s.first().is_some_and(|s| s.len() != st.x.len()) {
        // pairs of another problem's coordinates: no use here
        mem.clear();
    }
    if mem.len() > opts.memory {
        let extra = mem.len() - opts.memory;
        mem.s.drain(..extra);
        mem.y.drain(..extra);
    }
    for it in 1..=opts.max_iters {
        let mut p = two_loop(&st.g, &mem.s, &mem.y);
        if p.dot(&st.g) >= 0.0 {
            // Not a descent direction (curvature information gone bad): restart.
            mem.clear();
            p = -&st.g;
        }
        let alpha0 = if mem.is_empty() {
            (1.0 / st.g.norm()).min(1.0)
        } else {
            1.0
        };
        let Some((alpha, v, g)) = line_search(f, &st.x, st.v, &st.g, &p, alpha0) else {
            if mem.is_empty() {
                // Even steepest descent makes no progress: we are at the precision limit.
                st.converged = st.g.norm() <= opts.grad_tol.max(1e-6 * st.v.abs().max(1.0));
                return;
            }
            mem.clear();
            continue;
        };
        let x_new = &st.x + &p * alpha;
        let s = &x_new - &st.x;
        let y = &g - &st.g;
        if s.dot(&y) > 1e-12 * s.norm() * y.norm() {
            mem.s.push(s);
            mem.y.push(y);
            if mem.len() > opts.memory {
                mem.s.remove(0);
                mem.y.remove(0);
            }
        }
        st.iterations = it;
        let stop = st.accept(x_new, v, g, opts);
        if !report(it, st.v, st.g.norm()) {
            st.interrupted = true;
            st.converged = false;
            return;
        }
        if stop {
            return;
        }
    }
}

/// H·g by the two-loop recursion, negated: the L-BFGS search direction.
pub(crate) fn two_loop(g: &DVector<f64>, s_hist: &[DVector<f64>], y_hist: &[DVector<f64>]) -> DVector<f64> {
    two_loop_from(g, s_hist, y_hist, None)
}

/// [`two_loop`] with the initial inverse Hessian `h0` (a diagonal) in place of the scalar
/// sᵀy / yᵀy of the newest pair, when given.
pub(crate) fn two_loop_from(
    g: &DVector<f64>,
    s_hist: &[DVector<f64>],
    y_hist: &[DVector<f64>],
    h0: Option<&DVector<f64>>,
) -> DVector<f64> {
    let mut q = g.clone();
    let mut alphas = vec![0.0; s_hist.len()];
    for i in (0..s_hist.len()).rev() {
        let rho = 1.0 / y_hist[i].dot(&s_hist[i]);
        alphas[i] = rho * s_hist[i].dot(&q);
        q.axpy(-alphas[i], &y_hist[i], 1.0);
    }
    match (h0, s_hist.last(), y_hist.last()) {
        (Some(diagonal), _, _) => q.component_mul_assign(diagonal),
        (None, Some(s), Some(y)) => q *= s.dot(y) / y.dot(y),
        _ => {}
    }
    for i in 0..s_hist.len() {
        let rho = 1.0 / y_hist[i].dot(&s_hist[i]);
        let beta = rho * y_hist[i].dot(&q);
        q.axpy(alphas[i] - beta, &s_hist[i], 1.0);
    }
    -q
}

const C1: f64 = 1e-4;
const C2: f64 = 0.9;
const MAX_EVALS: usize = 40;

/// A step length satisfying the strong Wolfe conditions, with the value and gradient there.
/// Non-finite values count as too long a step. `None` when no acceptable step was found.
/// Minimises `f` from `x` (value `v0`, gradient `g0`) along the descent direction `p`.
pub(crate) fn line_search(
    f: &mut Objective<'_>,
    x: &DVector<f64>,
    v0: f64,
    g0: &DVector<f64>,
    p: &DVector<f64>,
    alpha0: f64,
) -> Option<(f64, f64, DVector<f64>)> {
    let d0 = g0.dot(p);
    let mut prev = (0.0, v0, d0);
    let mut alpha = alpha0;
    let mut best: Option<(f64, f64, DVector<f64>)> = None;
    for i in 0..MAX_EVALS {
        let (v, g) = clean(f(&(x + p * alpha)));
        if !v.is_finite() {
            // Outside the domain: backtrack toward the last good step.
            return zoom(f, x, v0, d0, p, prev, (alpha, v, f64::NAN), best);
        }
        let d = g.dot(p);
        if v > v0 + C1 * alpha * d0 || (i > 0 && v >= prev.1) {
            return zoom(f, x, v0, d0, p, prev, (alpha, v, d), best);
        }
        if d.abs() <= -C2 * d0 {
            return Some((alpha, v, g));
        }
        if v < v0 {
            best = Some((alpha, v, g.clone()));
        }
        if d >= 0.0 {
            return zoom(f, x, v0, d0, p, (alpha, v, d), prev, best);
        }
        prev = (alpha, v, d);
        alpha *= 2.0;
    }
    best
}

/// Nocedal & Wright Alg. 3.6 with bisection/cubic interpolation between `lo` and `hi`.
#[allow(clippy::too_many_arguments)]
fn zoom(
    f: &mut Objective<'_>,
    x: &DVector<f64>,
    v0: f64,
    d0: f64,
    p: &DVector<f64>,
    mut lo: (f64, f64, f64),
    mut hi: (f64, f64, f64),
    mut best: Option<(f64, f64, DVector<f64>)>,
) -> Option<(f64, f64, DVector<f64>)> {
    for _ in 0..MAX_EVALS {
        let alpha = interpolate(lo, hi);
        let (v, g) = clean(f(&(x + p * alpha)));
        let d = if v.is_finite() { g.dot(p) } else { f64::NAN };
        if !v.is_finite() || v > v0 + C1 * alpha * d0 || v >= lo.1 {
            hi = (alpha, v, d);
        } else {
            if d.abs() <= -C2 * d0 {
                return Some((alpha, v, g));
            }
            if best.as_ref().is_none_or(|b| v < b.1) {
                best = Some((alpha, v, g.clone()));
            }
            if d * (hi.0 - lo.0) >= 0.0 {
                hi = lo;
            }
            lo = (alpha, v, d);
        }
        if (hi.0 - lo.0).abs() <= 1e-16 * lo.0.abs().max(1e-300) {
            break;
        }
    }
    // Fall back to a step with sufficient decrease if one was seen.
    best.filter(|b| b.1 <= v0 + C1 * b.0 * d0)
}

/// A trial step inside (lo, hi): the cubic minimiser when both ends are finite and it falls
/// well inside, bisection otherwise.
fn interpolate(lo: (f64, f64, f64), hi: (f64, f64, f64)) -> f64 {
    let (a, fa, da) = lo;
    let (b, fb, db) = hi;
    let mid = 0.5 * (a + b);
    if !(fb.is_finite() && db.is_finite()) {
        return mid;
    }
    let d1 = da + db - 3.0 * (fa - fb) / (a - b);
    let disc = d1 * d1 - da * db;
    if disc < 0.0 {
        return mid;
    }
    let d2 = (b - a).signum() * disc.sqrt();
    let t = b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2);
    let (lo_b, hi_b) = (a.min(b), a.max(b));
    let margin = 0.1 * (hi_b - lo_b);
    if t.is_finite() && t > lo_b + margin && t < hi_b - margin {
        t
    } else {
        mid
    }
}

const SCG_SIGMA: f64 = 1e-4;
const LAMBDA_MIN: f64 = 1e-15;
const LAMBDA_MAX: f64 = 1e100;

/// Møller's scaled conjugate gradients (minimisation), one iteration per trial step.
fn scg(f: &mut Objective<'_>, st: &mut State, opts: &Options, report: &mut Report<'_>) {
    let n = st.x.len();
    let mut r = -&st.g;
    let mut p = r.clone();
    let mut lambda = 1e-6;
    let mut lambda_bar = 0.0;
    let mut success = true;
    let mut delta = 0.0;
    let mut successes = 0usize;
    for it in 1..=opts.max_iters {
        let p2 = p.norm_squared();
        if p2 == 0.0 {
            st.converged = true;
            return;
        }
        if success {
            let sigma = SCG_SIGMA / p2.sqrt();
            let (_, g_sig) = f(&(&st.x + &p * sigma));
            let s = (g_sig - &st.g) / sigma;
            delta = p.dot(&s);
            if !delta.is_finite() {
                delta = 0.0;
            }
        }
        let mut dk = delta + (lambda - lambda_bar) * p2;
        if dk <= 0.0 {
            lambda_bar = 2.0 * (lambda - dk / p2);
            dk = -dk + lambda * p2;
            lambda = lambda_bar;
        }
        let mu = p.dot(&r);
        let alpha = mu / dk;
        let x_new = &st.x + &p * alpha;
        let (v_new, g_new) = clean(f(&x_new));
        let cmp = 2.0 * dk * (st.v - v_new) / (mu * mu);
        st.iterations = it;
        let mut stop = false;
        if cmp.is_finite() && cmp >= 0.0 {
            successes += 1;
            let r_old = r.clone();
            stop = st.accept(x_new, v_new, g_new, opts);
            if stop && !scg_may_stop(st, opts) {
                stop = false;
                st.converged = false;
            }
            r = -&st.g;
            lambda_bar = 0.0;
            success = true;
            if successes.is_multiple_of(n) {
                p = r.clone();
            } else {
                let beta = (r.norm_squared() - r.dot(&r_old)) / mu;
                p = &r + &p * beta;
            }
            if cmp >= 0.75 {
                lambda = (0.25 * lambda).max(LAMBDA_MIN);
            }
        } else {
            lambda_bar = lambda;
            success = false;
        }
        if !(cmp.is_finite() && cmp >= 0.25) {
            let bump = if cmp.is_finite() {
                delta * (1.0 - cmp) / p2
            } else {
                0.0
            };
            lambda = (lambda + bump.max(0.0)).max(4.0 * lambda).min(LAMBDA_MAX);
        }
        if !report(it, st.v, st.g.norm()) {
            st.interrupted = true;
            st.converged = false;
            return;
        }
        if stop {
            return;
        }
        if lambda >= LAMBDA_MAX {
            // No step length makes progress any more: the precision limit.
            return;
        }
    }
}

/// Whether SCG may end on the relative-change rule: only when ‖∇f‖² ≤ `rel_tol` · max(1, |f|)
/// as well (the gradient rule always may). SCG's steps also become small when λ grows far
/// from the optimum, and a run of such steps would otherwise stop it early; with unit
/// curvature the bound says the remaining gain ½‖∇f‖² is within the tolerance too.
fn scg_may_stop(st: &State, opts: &Options) -> bool {
    let g = st.g.norm();
    g <= opts.grad_tol || g * g <= opts.rel_tol * st.v.abs().max(1.0)
}

/// How [`nelder_mead_max`] starts and stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimplexOptions {
    /// Edge of the starting simplex along each axis.
    pub step: f64,
    /// Stop when the values on the simplex agree to `f_tol` · max(1, |best|) …
    pub f_tol: f64,
    /// … or every vertex is within `x_tol` (max-norm) of the best one …
    pub x_tol: f64,
    /// … or after this many evaluations.
    pub max_evals: usize,
}

/// Maximise a function without derivatives by Nelder–Mead, for small dimensions (θ of the
/// Laplace evidence). Non-finite values count as −∞. Returns the best point and its value.
pub fn nelder_mead_max<F>(mut f: F, x0: DVector<f64>, opts: &SimplexOptions) -> (DVector<f64>, f64)
where
    F: FnMut(&DVector<f64>) -> f64,
{
    let n = x0.len();
    let mut eval = |x: &DVector<f64>| {
        let v = -f(x);
        if v.is_finite() {
            v
        } else {
            f64::INFINITY
        }
    };
    let mut simplex: Vec<(DVector<f64>, f64)> = Vec::with_capacity(n + 1);
    let v0 = eval(&x0);
    simplex.push((x0.clone(), v0));
    for i in 0..n {
        let mut x = x0.clone();
        x[i] += opts.step;
        let v = eval(&x);
        simplex.push((x, v));
    }
    let mut evals = n + 1;
    while evals < opts.max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[n].1);
        let size = simplex[1..]
            .iter()
            .map(|(x, _)| (x - &simplex[0].0).amax())
            .fold(0.0, f64::max);
        if n == 0 || (worst - best).abs() <= opts.f_tol * best.abs().max(1.0) || size <= opts.x_tol {
            break;
        }
        let centroid = simplex[..n].iter().fold(DVector::zeros(n), |acc, (x, _)| acc + x) / n as f64;
        let towards = |t: f64| &centroid + (&simplex[n].0 - &centroid) * t;
        let xr = towards(-1.0);
        let vr = eval(&xr);
        evals += 1;
        if vr < simplex[0].1 {
            let xe = towards(-2.0);
            let ve = eval(&xe);
            evals += 1;
            simplex[n] = if ve < vr { (xe, ve) } else { (xr, vr) };
        } else if vr < simplex[n - 1].1 {
            simplex[n] = (xr, vr);
        } else {
            let t = if vr < simplex[n].1 { -0.5 } else { 0.5 };
            let xc = towards(t);
            let vc = eval(&xc);
            evals += 1;
            if vc < vr.min(simplex[n].1) {
                simplex[n] = (xc, vc);
            } else {
                let x_best = simplex[0].0.clone();
                for p in simplex.iter_mut().skip(1) {
                    p.0 = &x_best + (&p.0 - &x_best) * 0.5;
                    p.1 = eval(&p.0);
                    evals += 1;
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (x, v) = simplex.swap_remove(0);
    (x, -v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::Silent;
    use nalgebra::DMatrix;

    fn rosenbrock(x: &DVector<f64>) -> (f64, DVector<f64>) {
        let (a, b) = (x[0], x[1]);
        let v = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        let g = DVector::from_vec(vec![
            -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
            200.0 * (b - a * a),
        ]);
        (v, g)
    }

    fn opts(o: Optimizer) -> Options {
        Options {
            optimizer: o,
            max_iters: 5000,
            grad_tol: 1e-8,
            rel_tol: 0.0,
            memory: 10,
        }
    }

    #[test]
    fn curvature_pairs_carried_to_a_nearby_objective_save_iterations() {
        // f(x) = −½ (x − b)ᵀ A (x − b), A ill-conditioned; the second objective moves b
        let a = DMatrix::from_fn(6, 6, |i, j| if i == j { 10f64.powi(i as i32 - 2) } else { 0.0 })
            + DMatrix::from_element(6, 6, 0.05);
        let f = |b: DVector<f64>| {
            let a = a.clone();
            move |x: &DVector<f64>| {
                let r = x - &b;
                let ar = &a * &r;
                (-0.5 * r.dot(&ar), -ar)
            }
        };
        let f3 = || {
            |x: &DVector<f64>| {
                (
                    -0.5 * (x - DVector::from_element(3, 1.0)).norm_squared(),
                    DVector::from_element(3, 1.0) - x,
                )
            }
        };
        let b1 = DVector::from_fn(6, |i, _| i as f64 - 2.0);
        let b2 = &b1 + DVector::from_element(6, 0.3);
        let opts = Options::default();
        let mut curvature = Curvature::default();
        let first = maximize_with(f(b1), DVector::zeros(6), &opts, &mut Silent, &mut curvature);
        assert!(first.converged && !curvature.is_empty());
        let x1 = first.x.clone();
        let fresh = maximize(f(b2.clone()), x1.clone(), &opts, &mut Silent);
        let resumed = maximize_with(f(b2.clone()), x1, &opts, &mut Silent, &mut curvature);
        assert!(fresh.converged && resumed.converged);
        assert!((&resumed.x - &b2).amax() < 1e-5 && (&fresh.x - &b2).amax() < 1e-5);
        assert!(
            resumed.iterations < fresh.iterations,
            "resumed {} against fresh {} iterations",
            resumed.iterations,
            fresh.iterations
        );
        assert!(curvature.len() <= opts.memory);
        // pairs of another dimension are dropped, not used
        let mut other = curvature.clone();
        let three = maximize_with(f3(), DVector::zeros(3), &opts, &mut Silent, &mut other);
        assert!(three.converged && (&three.x - DVector::from_element(3, 1.0)).amax() < 1e-6);
    }

    #[test]
    fn lbfgs_finds_the_rosenbrock_minimum() {
        let out = minimize(
            rosenbrock,
            DVector::from_vec(vec![-1.2, 1.0]),
            &opts(Optimizer::Lbfgs),
            &mut Silent,
        );
        assert!(out.converged);
        assert!(
            (out.x[0] - 1.0).abs() < 1e-6 && (out.x[1] - 1.0).abs() < 1e-6,
            "{:?}",
            out.x
        );
    }

    #[test]
    fn scg_finds_the_rosenbrock_minimum() {
        let out = minimize(
            rosenbrock,
            DVector::from_vec(vec![-1.2, 1.0]),
            &opts(Optimizer::Scg),
            &mut Silent,
        );
        assert!(
            (out.x[0] - 1.0).abs() < 1e-5 && (out.x[1] - 1.0).abs() < 1e-5,
            "{:?}",
            out
        );
    }

    fn quadratic(x: &DVector<f64>) -> (f64, DVector<f64>) {
        // f = ½ xᵀ A x − bᵀ x with A = diag(1, 10, 100, 1000) + a coupling.
        let a = nalgebra::DMatrix::from_fn(4, 4, |i, j| if i == j { 10f64.powi(i as i32) } else { 0.3 });
        let b = DVector::from_vec(vec![1.0, -2.0, 3.0, 0.5]);
        let ax = &a * x;
        (0.5 * x.dot(&ax) - b.dot(x), ax - b)
    }

    #[test]
    fn both_optimisers_solve_an_ill_conditioned_quadratic() {
        for o in [Optimizer::Lbfgs, Optimizer::Scg] {
            let out = minimize(quadratic, DVector::zeros(4), &opts(o), &mut Silent);
            assert!(out.grad_norm < 1e-7, "{o:?}: {out:?}");
        }
    }

    #[test]
    fn maximize_backtracks_out_of_an_infinite_region() {
        // log density of a Gamma(3, 1) in x: −∞ for x ≤ 0; maximum at x = 2.
        let f = |x: &DVector<f64>| {
            let t = x[0];
            if t <= 0.0 {
                (f64::NEG_INFINITY, DVector::from_element(1, f64::NAN))
            } else {
                (2.0 * t.ln() - t, DVector::from_element(1, 2.0 / t - 1.0))
            }
        };
        for o in [Optimizer::Lbfgs, Optimizer::Scg] {
            let out = maximize(f, DVector::from_element(1, 0.1), &opts(o), &mut Silent);
            assert!((out.x[0] - 2.0).abs() < 1e-6, "{o:?}: {out:?}");
            assert!((out.value - (2.0 * 2f64.ln() - 2.0)).abs() < 1e-10);
        }
    }

    struct StopAfter(usize, usize);
    impl Observer for StopAfter {
        fn iteration(&mut self, r: &IterRecord) -> bool {
            self.1 = r.iter;
            r.iter < self.0
        }
    }

    #[test]
    fn observer_can_stop_the_run() {
        let mut obs = StopAfter(3, 0);
        let out = minimize(
            rosenbrock,
            DVector::from_vec(vec![-1.2, 1.0]),
            &opts(Optimizer::Lbfgs),
            &mut obs,
        );
        assert_eq!(out.iterations, 3);
        assert!(out.interrupted && !out.converged);
    }

    #[test]
    fn max_iters_stops_without_convergence() {
        let mut o = opts(Optimizer::Scg);
        o.max_iters = 5;
        let out = minimize(rosenbrock, DVector::from_vec(vec![-1.2, 1.0]), &o, &mut Silent);
        assert_eq!(out.iterations, 5);
        assert!(!out.converged);
    }

    #[test]
    fn nelder_mead_finds_the_maximum_of_a_concave_function() {
        let f = |x: &DVector<f64>| -(x[0] - 1.0).powi(2) - 3.0 * (x[1] + 0.5).powi(2) - 0.5 * x[0] * x[1];
        let opts = SimplexOptions {
            step: 0.5,
            f_tol: 1e-14,
            x_tol: 0.0,
            max_evals: 2000,
        };
        let (x, v) = nelder_mead_max(f, DVector::zeros(2), &opts);
        // Stationary point of the quadratic: solve the 2×2 system by hand.
        let (a, b) = (2.0, 6.0);
        let det = a * b - 0.25;
        let x0 = (b * 2.0 - 0.5 * -3.0) / det;
        let x1 = (a * -3.0 - 0.5 * 2.0) / det;
        assert!(
            (x[0] - x0).abs() < 1e-5 && (x[1] - x1).abs() < 1e-5,
            "{x:?} vs {x0}, {x1}"
        );
        assert!(v.is_finite());
    }

    #[test]
    fn one_small_step_does_not_stop_a_run_but_two_in_a_row_do() {
        let o = Options {
            rel_tol: 1e-8,
            grad_tol: 0.0,
            ..Options::default()
        };
        let g = DVector::from_element(1, 1.0);
        let mut st = State {
            x: DVector::zeros(1),
            v: 100.0,
            g: g.clone(),
            iterations: 0,
            converged: false,
            interrupted: false,
            small_streak: 0,
        };
        assert!(
            !st.accept(DVector::zeros(1), 100.0 - 1e-9, g.clone(), &o),
            "first small step"
        );
        assert!(
            !st.accept(DVector::zeros(1), 99.0, g.clone(), &o),
            "a large step resets"
        );
        assert!(
            !st.accept(DVector::zeros(1), 99.0 - 1e-9, g.clone(), &o),
            "small again, once"
        );
        assert!(
            st.accept(DVector::zeros(1), 99.0 - 2e-9, g, &o),
            "second small step in a row"
        );
    }

    #[test]
    fn optimizer_names_round_trip() {
        for n in Optimizer::NAMES {
            assert_eq!(Optimizer::from_name(n).map(|o| o.name()), Some(*n));
        }
        assert_eq!(Optimizer::from_name("adam"), None);
    }
}
