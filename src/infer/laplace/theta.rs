//! The θ search of `laplace` with `learn_hyper`: θ maximising the Laplace log evidence
//! log p̃(w*) + (D/2) log 2π − ½ log det(−H), w* = w*(θ) re-found for every θ.
//!
//! Input: a model, the initial θ and point, the optimiser's options and an observer. Output: θ
//! (and, for the gradient search, the mode at the last θ). Nelder–Mead on the evidence for at
//! most [`SIMPLEX_MAX_THETA`] entries in θ; L-BFGS on [`evidence_gradient`] for more. Every
//! inner mode search starts from the last mode found, in the coordinates of its Cholesky
//! factor. Nelder–Mead's observer sees the inner searches' iterations, and once it asks to
//! stop the search ends with the best θ evaluated so far; the gradient search's observer sees
//! its θ steps.

use nalgebra::{DMatrix, DVector};

use super::mode::{find_mode, newton_polish, polished_mode};
use super::{curvature, curvature_of};
use crate::density::LogDensity;
use crate::infer::optim;
use crate::infer::timing;
use crate::infer::Observer;

/// The θ search stops when the simplex is this small (on the unconstrained scale, where a
/// change of 10⁻⁴ in log α is a relative change of 10⁻⁴ in α): the evidence is flat there
/// and its values differ by the inner fits' rounding, so the value rule alone kept the
/// search going to its evaluation limit (600 evaluations on the banana example).
const THETA_TOL: f64 = 1e-4;

/// Relative-change tolerance of the mode fits inside the θ search.
pub(super) const INNER_TOL: f64 = 1e-11;

/// θ maximising the Laplace log evidence, by Nelder–Mead; each θ re-finds the mode from
/// the last one. The observer sees the inner mode searches' iterations (progress, Ctrl-C):
/// once it asks to stop, the search ends with the best θ evaluated so far.
pub(super) fn search_theta(
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
pub(super) fn search_theta_gradient(
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
