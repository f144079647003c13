//! `mvi diagnose`: check the derivatives of a log joint at one unconstrained point three
//! ways (like CmdStan's `diagnose`).
//!
//! Input: a [`LogJoint`], θ and w. Output: a [`DiagnoseReport`] with log p̃, the gradient by
//! reverse mode, by num-dual forward mode and by central finite differences, the Hessian by
//! forward-over-reverse, all-forward num-dual and finite differences of the gradient, the
//! largest relative errors, and pass/fail against named [`Tolerances`].

use std::fmt;

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::LogJoint;
use crate::autodiff::{dual, finite_diff};
use crate::density::{value_grad, LogDensity, Want};

/// The tolerances `diagnose` checks against.
#[derive(Debug, Clone, Copy)]
pub struct Tolerances {
    /// Exact modes (reverse vs forward; forward-over-reverse vs all-forward): they differ
    /// only by rounding in a different order.
    pub exact: f64,
    /// Exact vs central finite differences: truncation O(h²) and cancellation O(ε/h) with
    /// h = 1e-5 give errors around 1e-8 to 1e-7 in smooth models.
    pub finite_diff: f64,
    /// |H − Hᵀ| relative to |H|: the forward-over-reverse columns are computed separately.
    pub symmetry: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            exact: 1e-9,
            finite_diff: 1e-5,
            symmetry: 1e-9,
        }
    }
}

/// The result of `diagnose` at one point.
#[derive(Debug, Clone)]
pub struct DiagnoseReport {
    /// Coordinate names of w.
    pub names: Vec<String>,
    /// The point.
    pub w: DVector<f64>,
    /// log p̃(w | θ).
    pub log_p: f64,
    /// Whether log p̃ is finite but its gradient is not (`grad_reverse` is then zero).
    pub grad_not_finite: bool,
    /// ∇ by reverse mode.
    pub grad_reverse: DVector<f64>,
    /// ∇ by num-dual forward mode.
    pub grad_dual: DVector<f64>,
    /// ∇ by central finite differences.
    pub grad_fd: DVector<f64>,
    /// Largest relative error reverse vs num-dual.
    pub grad_err_exact: f64,
    /// Largest relative error reverse vs finite differences.
    pub grad_err_fd: f64,
    /// The same beyond each entry's uncertainty ([`fd_rel_err`]): what pass or fail is
    /// judged on.
    pub grad_err_fd_beyond: f64,
    /// Coordinates whose finite-difference uncertainty alone exceeds the tolerance
    /// (|log p̃| large against their partial): finite differences cannot check them at
    /// this point, only num-dual does.
    pub grad_fd_unresolved: usize,
    /// Largest |H − Hᵀ| relative to max(1, |H|).
    pub hess_asymmetry: f64,
    /// Largest relative error forward-over-reverse vs all-forward Hessian.
    pub hess_err_exact: f64,
    /// Largest relative error forward-over-reverse vs finite differences of the gradient.
    pub hess_err_fd: f64,
    /// The same beyond each entry's uncertainty ([`fd_rel_err`]): what pass or fail is
    /// judged on.
    pub hess_err_fd_beyond: f64,
    /// Hessian entries (or entries of H·v on the directions) that finite differences
    /// cannot resolve at this point.
    pub hess_fd_unresolved: usize,
    /// `Some(k)` when D is above [`FULL_HESSIAN_MAX_DIM`] and the Hessian was checked on k
    /// random directions instead of in full.
    pub hess_directions: Option<usize>,
    /// The tolerances checked.
    pub tol: Tolerances,
}

/// |a − b| / max(1, |a|, |b|), largest over the entries: relative for large entries,
/// absolute near zero.
pub fn max_rel_err(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1.0))
        .fold(0.0, f64::max)
}

/// The rounding error central differences of a function of size `scale` can carry with
/// step `step`: a few units of roundoff of each value (each a sum of many terms, so
/// [`FD_ROUNDING_ULPS`] of them) over the 2·step between the two points. When log p̃ is
/// −8·10⁹ (a Poisson state-space model at a random point) this is about 2 at step 10⁻⁵,
/// far above a partial of 1.9 that only the prior sets: no step size can check it there.
pub fn fd_floor(scale: f64, step: f64) -> f64 {
    FD_ROUNDING_ULPS * f64::EPSILON * scale.abs().max(1.0) / step
}

/// Units of roundoff allowed in each value of a finite difference ([`fd_floor`]).
pub const FD_ROUNDING_ULPS: f64 = 10.0;

/// The step of the finite differences, relative to max(1, |wᵢ|).
pub const FD_STEP: f64 = 1e-5;

/// The exact derivatives `a` against finite differences at two steps, `b` at [`FD_STEP`]
/// and `b10` at ten times it. Each entry's uncertainty u is the larger of its rounding
/// `floor` and |b − b10|: where the two steps disagree, finite differences know the
/// derivative no better than that (when the entries are sums of large terms that cancel,
/// the rounding is far above the floor's few units of the result; hmm_drive's Hessian at a
/// random point: 0.1 against an entry of 0.1). Returns the largest
/// (min(|a − b|, |a − b10|) − u)⁺ / max(1, |a|, |b|), what pass or fail is judged on, and how
/// many entries have u above `tol` relative to their size (those finite differences cannot
/// check at this point).
pub fn fd_rel_err(a: &[f64], b: &[f64], b10: &[f64], floor: &[f64], tol: f64) -> (f64, usize) {
    let mut worst: f64 = 0.0;
    let mut unresolved = 0;
    for (((x, y), y10), f) in a.iter().zip(b).zip(b10).zip(floor) {
        let size = x.abs().max(y.abs()).max(1.0);
        let u = f.max((y - y10).abs());
        let err = (x - y).abs().min((x - y10).abs());
        worst = worst.max((err - u).max(0.0) / size);
        if u / size > tol {
            unresolved += 1;
        }
    }
    (worst, unresolved)
}

impl DiagnoseReport {
    /// Whether every check is within its tolerance (and log p̃ is finite).
    pub fn passed(&self) -> bool {
        self.log_p.is_finite()
            && !self.grad_not_finite
            && self.grad_err_exact <= self.tol.exact
            && self.grad_err_fd_beyond <= self.tol.finite_diff
            && self.hess_asymmetry <= self.tol.symmetry
            && self.hess_err_exact <= self.tol.exact
            && self.hess_err_fd_beyond <= self.tol.finite_diff
    }
}

/// Above this dimension the Hessian is checked on [`DIRECTIONS`] random directions instead of
/// in full: the all-forward reference costs O(D³) memory (about 22 GB at D = 1000).
pub const FULL_HESSIAN_MAX_DIM: usize = 200;

/// The number of random directions of the directional Hessian check.
pub const DIRECTIONS: usize = 6;

/// Check the derivatives of `model` at (θ, w) three ways.
pub fn diagnose(model: &LogJoint, theta: &DVector<f64>, w: &DVector<f64>, tol: Tolerances) -> DiagnoseReport {
    let g = &model.graph;
    let value = |x: &[f64]| {
        let m = DMatrix::from_column_slice(x.len(), 1, x);
        model.eval(theta, &m, Want::VALUE).values[0]
    };
    // A value with its gradient is −∞ with a zero gradient whenever either is not finite;
    // log p̃ is the value alone, so that a finite log p̃ with a non-finite gradient is
    // reported as such.
    let log_p = value(w.as_slice());
    let (with_grad, grad_reverse) = value_grad(model, theta, w);
    let grad_not_finite = log_p.is_finite() && !with_grad.is_finite();
    let grad_dual = dual::forward_grad(g, theta.as_slice(), w.as_slice());
    let grad_fd = finite_diff::gradient(&value, w.as_slice(), FD_STEP);
    let grad_fd10 = finite_diff::gradient(&value, w.as_slice(), 10.0 * FD_STEP);
    // outside the support (log p̃ not finite) there is no scale to speak of: the report
    // fails on log p̃ itself
    let scale = if log_p.is_finite() { log_p } else { 0.0 };
    let floor: Vec<f64> = w
        .iter()
        .map(|&wi| fd_floor(scale, finite_diff::step(FD_STEP, wi)))
        .collect();
    let (grad_err_fd_beyond, grad_fd_unresolved) = fd_rel_err(
        grad_reverse.as_slice(),
        grad_fd.as_slice(),
        grad_fd10.as_slice(),
        &floor,
        tol.finite_diff,
    );
    let grad = |x: &[f64]| value_grad(model, theta, &DVector::from_column_slice(x)).1;
    let hess = if w.len() > FULL_HESSIAN_MAX_DIM {
        directional_hessian_checks(model, theta, w, &grad, &grad_reverse, tol.finite_diff)
    } else {
        full_hessian_checks(model, theta, w, &grad, &grad_reverse, tol.finite_diff)
    };
    DiagnoseReport {
        names: model.coordinate_names(),
        w: w.clone(),
        log_p,
        grad_not_finite,
        grad_err_exact: max_rel_err(grad_reverse.as_slice(), grad_dual.as_slice()),
        grad_err_fd: max_rel_err(grad_reverse.as_slice(), grad_fd.as_slice()),
        grad_err_fd_beyond,
        grad_fd_unresolved,
        hess_asymmetry: hess.asymmetry,
        hess_err_exact: hess.err_exact,
        hess_err_fd: hess.err_fd,
        hess_err_fd_beyond: hess.err_fd_beyond,
        hess_fd_unresolved: hess.unresolved,
        hess_directions: hess.directions,
        grad_reverse,
        grad_dual,
        grad_fd,
        tol,
    }
}

/// The three Hessian figures of a report.
pub(super) struct HessianChecks {
    pub(super) asymmetry: f64,
    pub(super) err_exact: f64,
    pub(super) err_fd: f64,
    pub(super) err_fd_beyond: f64,
    pub(super) unresolved: usize,
    pub(super) directions: Option<usize>,
}

/// The full D × D Hessian three ways.
pub(super) fn full_hessian_checks(
    model: &LogJoint,
    theta: &DVector<f64>,
    w: &DVector<f64>,
    grad: &dyn Fn(&[f64]) -> DVector<f64>,
    g0: &DVector<f64>,
    tol: f64,
) -> HessianChecks {
    let g = &model.graph;
    let h_raw = dual::hessian_raw(g, theta.as_slice(), w.as_slice());
    let h = (&h_raw + h_raw.transpose()) * 0.5;
    let h_fwd = dual::hessian_forward(g, theta.as_slice(), w.as_slice());
    let h_fd = finite_diff::hessian(grad, w.as_slice(), FD_STEP);
    let h_fd10 = finite_diff::hessian(grad, w.as_slice(), 10.0 * FD_STEP);
    // entry (i, j) is a difference of ∂ᵢ log p̃ along coordinate j
    let d = w.len();
    let floor = DMatrix::from_fn(d, d, |i, j| fd_floor(g0[i], finite_diff::step(FD_STEP, w[j])));
    let (err_fd_beyond, unresolved) = fd_rel_err(
        h.as_slice(),
        h_fd.as_slice(),
        h_fd10.as_slice(),
        floor.as_slice(),
        tol,
    );
    HessianChecks {
        asymmetry: max_rel_err(h_raw.as_slice(), h_raw.transpose().as_slice()),
        err_exact: max_rel_err(h.as_slice(), h_fwd.as_slice()),
        err_fd: max_rel_err(h.as_slice(), h_fd.as_slice()),
        err_fd_beyond,
        unresolved,
        directions: None,
    }
}

/// The Hessian on [`DIRECTIONS`] fixed pseudo-random unit directions vᵢ: H·vᵢ by
/// forward-over-reverse; vⱼᵀ H vᵢ against the all-forward vⱼᵀ H vᵢ and against vᵢᵀ H vⱼ
/// (symmetry); H·vᵢ against central differences of the gradient along vᵢ.
pub(super) fn directional_hessian_checks(
    model: &LogJoint,
    theta: &DVector<f64>,
    w: &DVector<f64>,
    grad: &dyn Fn(&[f64]) -> DVector<f64>,
    g0: &DVector<f64>,
    tol: f64,
) -> HessianChecks {
    let g = &model.graph;
    let mut rng = StdRng::seed_from_u64(20_261_121);
    let dirs: Vec<DVector<f64>> = (0..DIRECTIONS)
        .map(|_| {
            let v = crate::autodiff::numeric::standard_normal(w.len(), 1, &mut rng)
                .column(0)
                .into_owned();
            let n = v.norm();
            v / n
        })
        .collect();
    let hv: Vec<DVector<f64>> = dirs
        .iter()
        .map(|v| dual::hvp(g, theta.as_slice(), w.as_slice(), v.as_slice()))
        .collect();
    let k = dirs.len();
    let m = DMatrix::from_fn(k, k, |i, j| dirs[i].dot(&hv[j]));
    let m_sym = (&m + m.transpose()) * 0.5;
    let m_fwd = dual::directional_hessian_forward(g, theta.as_slice(), w.as_slice(), &dirs);
    let step = FD_STEP;
    let floor: Vec<f64> = g0.iter().map(|&gi| fd_floor(gi, step)).collect();
    let (mut err_fd, mut err_fd_beyond, mut unresolved): (f64, f64, usize) = (0.0, 0.0, 0);
    let central =
        |v: &DVector<f64>, h: f64| (grad((w + v * h).as_slice()) - grad((w - v * h).as_slice())) / (2.0 * h);
    for (v, hv) in dirs.iter().zip(&hv) {
        let (fd, fd10) = (central(v, step), central(v, 10.0 * step));
        err_fd = err_fd.max(max_rel_err(hv.as_slice(), fd.as_slice()));
        let (beyond, n) = fd_rel_err(hv.as_slice(), fd.as_slice(), fd10.as_slice(), &floor, tol);
        err_fd_beyond = err_fd_beyond.max(beyond);
        unresolved += n;
    }
    HessianChecks {
        asymmetry: max_rel_err(m.as_slice(), m.transpose().as_slice()),
        err_exact: max_rel_err(m_sym.as_slice(), m_fwd.as_slice()),
        err_fd,
        err_fd_beyond,
        unresolved,
        directions: Some(k),
    }
}

fn verdict(err: f64, tol: f64) -> &'static str {
    if err <= tol {
        "ok"
    } else {
        "FAIL"
    }
}

/// A finite-difference comparison: the error, its verdict, and the error less the rounding
/// floor when the verdict rests on it.
fn fd_line(err: f64, beyond: f64, tol: f64) -> String {
    if err <= tol || beyond > tol {
        format!("{err:.2e} ({}, tol {tol:.0e})", verdict(beyond, tol))
    } else {
        format!(
            "{err:.2e}, {beyond:.2e} beyond what finite differences resolve here \
             ({}, tol {tol:.0e})",
            verdict(beyond, tol)
        )
    }
}

impl fmt::Display for DiagnoseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "log p̃ = {:.10e}", self.log_p)?;
        if self.grad_not_finite {
            writeln!(
                f,
                "the gradient is not finite here although log p̃ is: the reverse column shows \
                 zeros, and a method started at this point stops (FAIL)"
            )?;
        }
        writeln!(
            f,
            "{:<16} {:>14} {:>18} {:>18} {:>18}",
            "param", "w", "reverse", "num-dual", "finite diff"
        )?;
        for i in 0..self.w.len() {
            let name = self.names.get(i).map_or("?", String::as_str);
            writeln!(
                f,
                "{name:<16} {:>14.6e} {:>18.10e} {:>18.10e} {:>18.10e}",
                self.w[i], self.grad_reverse[i], self.grad_dual[i], self.grad_fd[i]
            )?;
        }
        let t = self.tol;
        if let Some(k) = self.hess_directions {
            writeln!(
                f,
                "D = {} > {FULL_HESSIAN_MAX_DIM}: the Hessian is checked on {k} random directions",
                self.w.len()
            )?;
        }
        writeln!(
            f,
            "gradient: reverse vs num-dual {:.2e} ({}, tol {:.0e})",
            self.grad_err_exact,
            verdict(self.grad_err_exact, t.exact),
            t.exact
        )?;
        writeln!(
            f,
            "gradient: reverse vs finite diff {}",
            fd_line(self.grad_err_fd, self.grad_err_fd_beyond, t.finite_diff)
        )?;
        if self.grad_fd_unresolved > 0 {
            writeln!(
                f,
                "  {} of {} partials are below what finite differences resolve at this point \
                 (|log p̃| = {:.1e}; checked by num-dual only); `--zero` or another `--seed` \
                 checks them at a better scaled point",
                self.grad_fd_unresolved,
                self.w.len(),
                self.log_p.abs()
            )?;
        }
        writeln!(
            f,
            "hessian: asymmetry {:.2e} ({}, tol {:.0e})",
            self.hess_asymmetry,
            verdict(self.hess_asymmetry, t.symmetry),
            t.symmetry
        )?;
        writeln!(
            f,
            "hessian: forward-over-reverse vs all-forward {:.2e} ({}, tol {:.0e})",
            self.hess_err_exact,
            verdict(self.hess_err_exact, t.exact),
            t.exact
        )?;
        writeln!(
            f,
            "hessian: vs finite diff of gradient {}",
            fd_line(self.hess_err_fd, self.hess_err_fd_beyond, t.finite_diff)
        )?;
        if self.hess_fd_unresolved > 0 {
            writeln!(
                f,
                "  {} Hessian entries are below what finite differences of the gradient resolve \
                 at this point (checked by num-dual only)",
                self.hess_fd_unresolved
            )?;
        }
        writeln!(f, "{}", if self.passed() { "PASS" } else { "FAIL" })
    }
}
