//! The contract between the log-joint graph and the inference methods.
//!
//! An inference method sees a model only through [`LogDensity`]: the unnormalised log
//! posterior log p̃(w | θ) over one unconstrained vector w ∈ R^D (log-Jacobians of the
//! constraint transforms included) and the unconstrained hyperparameters θ ∈ R^P
//! (transformed without a Jacobian). Evaluation is batched: S points at once as the
//! columns of a D×S matrix. `graph::LogJoint` implements it for real models; tests implement
//! it by hand for targets with known answers.

use nalgebra::{DMatrix, DVector};

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
    fn coordinate_constraint(&self, _i: usize) -> Option<crate::graph::Constraint> {
        None
    }

    /// Which coordinates of w belong to each declared parameter: (name, start, len).
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        vec![("w".to_string(), 0, self.dim())]
    }
}

/// Convenience: evaluate at a single point and return (value, gradient).
pub fn value_grad(model: &dyn LogDensity, theta: &DVector<f64>, w: &DVector<f64>) -> (f64, DVector<f64>) {
    let e = model.eval(
        theta,
        &DMatrix::from_column_slice(w.len(), 1, w.as_slice()),
        Want::GRAD_W,
    );
    let g = e.grad_w.expect("Want::GRAD_W asks for the gradient");
    (e.values[0], g.column(0).into_owned())
}
