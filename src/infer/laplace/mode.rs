//! Finding the mode w* of log p̃(· | θ): the optimiser's search, its Newton polish, and the
//! escape from a saddle point.
//!
//! Input: a model, θ and a starting point (optionally the Cholesky factor of a nearby mode's
//! Σ, whose coordinates the search then works in). Output: the optimiser's [`Outcome`] at the
//! polished mode, with the Hessian there when the polish computed it at that point. A Newton
//! step is kept only when log p̃ does not fall (to rounding), so the polish does not leave a
//! lower point than the search found; a search stopped at its iteration limit is finished by
//! damped Newton. The saddle escape gives a nearby point with a higher log p̃, or none.

use nalgebra::{DMatrix, DVector};

use crate::density::{value_grad, LogDensity};
use crate::infer::optim::{self, Outcome};
use crate::infer::timing;
use crate::infer::Observer;

/// How often a mode search that ended at a saddle point is restarted from beside it.
pub(super) const MAX_SADDLE_ESCAPES: usize = 5;

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
pub(super) fn polished_mode(
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
pub(super) fn escape_saddle(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    out: &Outcome,
) -> Option<DVector<f64>> {
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
pub(super) fn find_mode(
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
pub(super) fn newton_polish(
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
