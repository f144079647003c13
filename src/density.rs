//! The contract between the log-joint graph and the inference methods.
//!
//! An inference method sees a model only through [`LogDensity`]: the unnormalised log
//! posterior log p̃(w | θ) over one unconstrained vector w ∈ R^D (log-Jacobians of the
//! constraint transforms included) and the unconstrained hyperparameters θ ∈ R^P
//! (transformed without a Jacobian). Evaluation is batched: S points at once as the
//! columns of a D×S matrix. `graph::LogJoint` implements it for real models; tests implement
//! it by hand for targets with known answers.

use nalgebra::{DMatrix, DVector};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a batched evaluation should compute besides the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// ∇_w log p̃ per column (D×S).
    pub grad_w: bool,
    /// ∇_θ log p̃ per column (P×S).
    pub grad_theta: bool,
}

impl Want {
    /// Values only.
    pub const VALUE: Want = Want {
        grad_w: false,
        grad_theta: false,
    };
    /// Values and ∇_w.
    pub const GRAD_W: Want = Want {
        grad_w: true,
        grad_theta: false,
    };
    /// Values, ∇_w and ∇_θ.
    pub const ALL: Want = Want {
        grad_w: true,
        grad_theta: true,
    };
}

/// The result of a batched evaluation at S points.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// log p̃(w_s | θ) for each column s; −∞ outside the support, never NaN.
    pub values: DVector<f64>,
    /// ∇_w log p̃, D×S, when asked for.
    pub grad_w: Option<DMatrix<f64>>,
    /// ∇_θ log p̃, P×S, when asked for.
    pub grad_theta: Option<DMatrix<f64>>,
}

/// The unnormalised log posterior of a model on the unconstrained scale.
pub trait LogDensity: Sync {
    /// D, the length of the unconstrained parameter vector w.
    fn dim(&self) -> usize;

    /// P, the length of the unconstrained hyperparameter vector θ (0 without `hyper`).
    fn theta_dim(&self) -> usize {
        0
    }

    /// The initial θ on the unconstrained scale (from the `hyper` block's initial values).
    fn theta_init(&self) -> DVector<f64> {
        DVector::zeros(self.theta_dim())
    }

    /// Evaluate log p̃ at the S columns of `w` (D×S), with the gradients `want` asks for.
    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated;

    /// [`LogDensity::eval`] with ∇_w, and ∇_θ wanted only as weighted sums of its columns:
    /// `grad_theta` is ∇_θ·C (P×R) for the weights C (S×R), e.g. the mean over the draws
    /// (C = 1/S). A column with a non-finite value or gradient counts as in `eval` (value
    /// −∞, gradient zero). The default forms the per-column ∇_θ and multiplies; `LogJoint`
    /// sums the adjoints over the columns before they reach θ, at a cost that does not grow
    /// with P (`autodiff::reverse::weighted_seeds`).
    fn eval_weighted_theta(
        &self,
        theta: &DVector<f64>,
        w: &DMatrix<f64>,
        weights: &DMatrix<f64>,
    ) -> Evaluated {
        let mut e = self.eval(theta, w, Want::ALL);
        e.grad_theta = e.grad_theta.map(|g| g * weights);
        e
    }

    /// log p̃(w | θ) at one point, with ∇_w written to `grad` (length D): what L-BFGS,
    /// Pathfinder and NUTS call. The default evaluates a batch of one column; `LogJoint`
    /// overrides it with a compiled single-point tape (`graph::point`) that gives the same
    /// numbers without the batch machinery.
    fn value_grad_into(&self, theta: &DVector<f64>, w: &[f64], grad: &mut [f64]) -> f64 {
        let e = self.eval(theta, &DMatrix::from_column_slice(w.len(), 1, w), Want::GRAD_W);
        let g = e.grad_w.expect("Want::GRAD_W asks for the gradient");
        grad.copy_from_slice(g.as_slice());
        e.values[0]
    }

    /// The Hessian ∇²_w log p̃ at one point (D×D, symmetric).
    fn hessian(&self, theta: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64>;

    /// Hessian–vector product ∇²_w log p̃ · v at one point. The default uses the full Hessian.
    fn hvp(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        self.hessian(theta, w) * v
    }

    /// ∇²_w log p̃ · V at one point for the K columns of V (D×K), e.g. the products with a
    /// few seed vectors from which a sparse Hessian is recovered. The default uses the full
    /// Hessian.
    fn hessian_times(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
        self.hessian(theta, w) * v
    }

    /// A point to start optimisation from (the default is w = 0, i.e. the centre of every
    /// constraint transform).
    fn initial_point(&self) -> DVector<f64> {
        DVector::zeros(self.dim())
    }

    /// Names of the coordinates of w (`w.1`, `sigma`, ...), for messages and reports.
    fn coordinate_names(&self) -> Vec<String> {
        (1..=self.dim()).map(|i| format!("w.{i}")).collect()
    }

    /// The declared bounds of coordinate i of w, when the model knows them (the runaway
    /// coordinates of a failed mode search are then reported on the declared scale).
    fn coordinate_constraint(&self, _i: usize) -> Option<crate::constrained::Constraint> {
        None
    }

    /// Which coordinates of w belong to each declared parameter: (name, start, len).
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        vec![("w".to_string(), 0, self.dim())]
    }

    /// N, when log p̃ is terms computed once plus a sum over N rows of data that a minibatch
    /// objective may subsample ([`LogDensity::eval_rows`]); `None` otherwise.
    fn rows(&self) -> Option<usize> {
        None
    }

    /// The unbiased estimate of log p̃ from the given rows (0-based, drawn without
    /// replacement): the terms computed once plus N/B times the sum of the B rows' terms,
    /// with the gradients `want` asks for. Only called when [`LogDensity::rows`] is `Some`;
    /// the default, for densities without rows, is [`LogDensity::eval`].
    fn eval_rows(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want, rows: &[u32]) -> Evaluated {
        let _ = rows;
        self.eval(theta, w, want)
    }
}

/// Convenience: evaluate at a single point and return (value, gradient).
/// ([`LogDensity::value_grad_into`]).
pub fn value_grad(model: &dyn LogDensity, theta: &DVector<f64>, w: &DVector<f64>) -> (f64, DVector<f64>) {
    let mut g = DVector::zeros(w.len());
    let v = model.value_grad_into(theta, w.as_slice(), g.as_mut_slice());
    (v, g)
}

/// How much work a method asked of the log density: the Pathfinder paper's cost measure.
///
/// Counts are per point: a batched evaluation at S points counts S. `density` counts every
/// point at which log p̃ was evaluated, with or without a gradient; `gradient` counts the
/// points at which ∇_w (or ∇_θ) was computed as well, so `density − gradient` evaluations
/// were values only. A full Hessian counts once in `hessian`; each Hessian–vector product
/// counts once in `hvp` (`hessian_times` with K columns counts K).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evals {
    /// Points at which log p̃ was evaluated (with or without a gradient).
    pub density: u64,
    /// Points at which the gradient was computed too.
    pub gradient: u64,
    /// Full Hessians ∇²_w log p̃.
    pub hessian: u64,
    /// Hessian–vector products ∇²_w log p̃ · v.
    pub hvp: u64,
}

/// A [`LogDensity`] that counts the work done through it ([`Evals`]) and otherwise passes
/// every call on unchanged. `run::fit` hands every method its model through one of these,
/// so every method's cost is counted without code of its own. Safe to share between
/// threads (the counters are atomic).
pub struct Counting<'a> {
    inner: &'a dyn LogDensity,
    density: AtomicU64,
    gradient: AtomicU64,
    hessian: AtomicU64,
    hvp: AtomicU64,
}

impl<'a> Counting<'a> {
    /// Wrap `inner` with all counters at zero.
    pub fn new(inner: &'a dyn LogDensity) -> Counting<'a> {
        Counting {
            inner,
            density: AtomicU64::new(0),
            gradient: AtomicU64::new(0),
            hessian: AtomicU64::new(0),
            hvp: AtomicU64::new(0),
        }
    }

    /// The counts so far.
    pub fn evals(&self) -> Evals {
        Evals {
            density: self.density.load(Ordering::Relaxed),
            gradient: self.gradient.load(Ordering::Relaxed),
            hessian: self.hessian.load(Ordering::Relaxed),
            hvp: self.hvp.load(Ordering::Relaxed),
        }
    }
}

impl LogDensity for Counting<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn theta_dim(&self) -> usize {
        self.inner.theta_dim()
    }
    fn theta_init(&self) -> DVector<f64> {
        self.inner.theta_init()
    }
    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let s = w.ncols() as u64;
        self.density.fetch_add(s, Ordering::Relaxed);
        if want.grad_w || want.grad_theta {
            self.gradient.fetch_add(s, Ordering::Relaxed);
        }
        self.inner.eval(theta, w, want)
    }
    fn eval_weighted_theta(
        &self,
        theta: &DVector<f64>,
        w: &DMatrix<f64>,
        weights: &DMatrix<f64>,
    ) -> Evaluated {
        let s = w.ncols() as u64;
        self.density.fetch_add(s, Ordering::Relaxed);
        self.gradient.fetch_add(s, Ordering::Relaxed);
        self.inner.eval_weighted_theta(theta, w, weights)
    }
    fn value_grad_into(&self, theta: &DVector<f64>, w: &[f64], grad: &mut [f64]) -> f64 {
        self.density.fetch_add(1, Ordering::Relaxed);
        self.gradient.fetch_add(1, Ordering::Relaxed);
        self.inner.value_grad_into(theta, w, grad)
    }
    fn hessian(&self, theta: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        self.hessian.fetch_add(1, Ordering::Relaxed);
        self.inner.hessian(theta, w)
    }
    fn hvp(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        self.hvp.fetch_add(1, Ordering::Relaxed);
        self.inner.hvp(theta, w, v)
    }
    fn hessian_times(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
        self.hvp.fetch_add(v.ncols() as u64, Ordering::Relaxed);
        self.inner.hessian_times(theta, w, v)
    }
    fn initial_point(&self) -> DVector<f64> {
        self.inner.initial_point()
    }
    fn coordinate_names(&self) -> Vec<String> {
        self.inner.coordinate_names()
    }
    fn coordinate_constraint(&self, i: usize) -> Option<crate::constrained::Constraint> {
        self.inner.coordinate_constraint(i)
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        self.inner.param_blocks()
    }
    fn rows(&self) -> Option<usize> {
        self.inner.rows()
    }
    fn eval_rows(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want, rows: &[u32]) -> Evaluated {
        // a minibatch evaluation counts as the fraction B/N of a point per column (rounded up)
        let n = self.inner.rows().unwrap_or(1).max(1) as u64;
        let s = (w.ncols() as u64 * rows.len() as u64).div_ceil(n);
        self.density.fetch_add(s, Ordering::Relaxed);
        if want.grad_w || want.grad_theta {
            self.gradient.fetch_add(s, Ordering::Relaxed);
        }
        self.inner.eval_rows(theta, w, want, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log p̃(w) = −½ |w|², for counting.
    struct StdNormal;

    impl LogDensity for StdNormal {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&self, _theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
            Evaluated {
                values: DVector::from_iterator(w.ncols(), w.column_iter().map(|c| -0.5 * c.norm_squared())),
                grad_w: want.grad_w.then(|| -w),
                grad_theta: None,
            }
        }
        fn hessian(&self, _theta: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
            -DMatrix::identity(2, 2)
        }
    }

    #[test]
    fn counting_counts_points_not_calls() {
        let c = Counting::new(&StdNormal);
        let theta = DVector::zeros(0);
        let _ = c.eval(&theta, &DMatrix::zeros(2, 5), Want::VALUE);
        let _ = value_grad(&c, &theta, &DVector::zeros(2));
        let _ = c.hessian(&theta, &DVector::zeros(2));
        let _ = c.hessian_times(&theta, &DVector::zeros(2), &DMatrix::zeros(2, 3));
        let _ = c.hvp(&theta, &DVector::zeros(2), &DVector::zeros(2));
        assert_eq!(
            c.evals(),
            Evals {
                density: 6,
                gradient: 1,
                hessian: 1,
                hvp: 4
            }
        );
    }
}
