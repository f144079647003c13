//! Constraint transforms from ℝ to a parameter's support and their log-Jacobians (Stan's:
//! lower bound `a + exp(u)`, upper bound `b − exp(u)`, both `a + (b − a)·inv_logit(u)`),
//! and the table of Stan's constrained types ([`TYPES`]: `simplex`, `ordered`, …), one file
//! per type below `transform/`.
//!
//! Input: an unconstrained slice node. Output: the constrained value node and, for `param`,
//! the log |dx/du| node added to the target; `hyper` values get no Jacobian. Every transform
//! is built from ordinary graph operations (gathers, constant matrix products, elementwise
//! functions), so it is batched over the S columns of W and differentiated by the reverse
//! sweep and by num-dual like any other node. Each type's file also holds the same map in
//! plain `f64` (Stan's loops, for reports, initial values and tests), its inverse (Stan's
//! `*_free`), its log-Jacobian, and the check of a data value.
//!
//! Unconstrained coordinates are Stan's (Stan 2.37, `stan/math/prim/constraint`), in Stan's
//! order. Where a value has more entries than free coordinates (simplex, sum-to-zero,
//! Cholesky factors, correlation and covariance matrices), the log-Jacobian is that of the
//! map from the free coordinates to the value's free entries: the first K − 1 entries of a
//! simplex, the lower triangle of a Cholesky factor or covariance matrix, the strict lower
//! triangle of a correlation matrix or its Cholesky factor (see each file for the exceptions
//! Stan makes: `unit_vector` and `sum_to_zero_vector`).

mod cholesky_corr;
mod cholesky_cov;
mod corr_matrix;
mod cov_matrix;
mod dependent;
mod ordered;
mod positive_ordered;
mod simplex;
mod sum_to_zero;
mod unit_vector;

pub(crate) use dependent::lower_dependent;

use super::{Error, Fun1, Fun2, Graph, NodeId, Op, Shape, GATHER_ZERO};
pub use crate::syntax::ast::TypeKind;
use nalgebra::DMatrix;

/// Absolute tolerance of the checks of data values: a sum that must be 1 (simplex) or 0
/// (sum-to-zero), a norm that must be 1 (unit vector, rows of a Cholesky factor of a
/// correlation matrix), a unit diagonal, and the symmetry |Aᵢⱼ − Aⱼᵢ|. It is Stan's
/// `CONSTRAINT_TOLERANCE`, so data Stan accepts are accepted.
pub const TOLERANCE: f64 = 1e-8;

/// Why a data value is not of its constrained type: a sentence, and the (column-major)
/// entry it is about, when one entry is to blame.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// What is wrong, e.g. "its entries sum to 0.9, not 1".
    pub reason: String,
    /// The entry at fault (0-based, column-major), if one is.
    pub entry: Option<usize>,
}

impl Invalid {
    fn whole(reason: String) -> Invalid {
        Invalid { reason, entry: None }
    }

    fn at(entry: usize, reason: String) -> Invalid {
        Invalid {
            reason,
            entry: Some(entry),
        }
    }
}

/// A built transform: the constrained value and its log-Jacobian (`None` when it is 0).
pub type Lowered = (NodeId, Option<NodeId>);

/// One constrained type: its transform as graph nodes and in `f64`, its inverse, its
/// log-Jacobian and the check of a data value. K is the size written in the type.
pub struct TypeEntry {
    /// The type.
    pub kind: TypeKind,
    /// The smallest K the type allows.
    pub min_size: usize,
    /// The number of unconstrained coordinates for K.
    pub free: fn(usize) -> usize,
    /// Build the value node and the log-Jacobian node from the free coordinates `u`.
    lower: fn(&mut Graph, NodeId, usize) -> Result<Lowered, Error>,
    /// The value (column-major) at free coordinates u.
    pub constrain: fn(&[f64], usize) -> Vec<f64>,
    /// The free coordinates of a valid value (Stan's `*_free`).
    pub unconstrain: fn(&[f64], usize) -> Vec<f64>,
    /// The log-Jacobian at free coordinates u (what `param` adds to the target).
    pub log_jacobian: fn(&[f64], usize) -> f64,
    /// Whether a value (column-major) is of the type, within [`TOLERANCE`].
    pub validate: fn(&[f64], usize) -> Result<(), Invalid>,
    /// The same maps for an M×N value, for a matrix type that may be written with two sizes
    /// (`cholesky_cov[M, N]`); `None` for the others.
    pub two_size: Option<TwoSize>,
}

/// The maps of a constrained matrix type with two sizes M and N (M rows, N columns), as the
/// fields of [`TypeEntry`] with K = M = N.
pub struct TwoSize {
    /// The number of unconstrained coordinates for M, N.
    pub free: fn(usize, usize) -> usize,
    /// Build the value node and the log-Jacobian node from the free coordinates `u`.
    lower: fn(&mut Graph, NodeId, usize, usize) -> Result<Lowered, Error>,
    /// The value (column-major) at free coordinates u.
    pub constrain: fn(&[f64], usize, usize) -> Vec<f64>,
    /// The free coordinates of a valid value.
    pub unconstrain: fn(&[f64], usize, usize) -> Vec<f64>,
    /// The log-Jacobian at free coordinates u.
    pub log_jacobian: fn(&[f64], usize, usize) -> f64,
    /// Whether a value (column-major) is of the type.
    pub validate: fn(&[f64], usize, usize) -> Result<(), Invalid>,
}

impl TypeEntry {
    /// The two sizes of a value of this type and shape, when they differ (an M×N
    /// `cholesky_cov` with M ≠ N); `None` for one size K.
    fn two(&self, shape: Shape) -> Option<(&TwoSize, usize, usize)> {
        match (shape, &self.two_size) {
            (Shape::Matrix(m, n), Some(t)) if m != n => Some((t, m, n)),
            _ => None,
        }
    }

    /// The number of unconstrained coordinates of a value of this shape.
    pub fn free_of(&self, shape: Shape) -> usize {
        match self.two(shape) {
            Some((t, m, n)) => (t.free)(m, n),
            None => (self.free)(shape.rows()),
        }
    }

    /// The value (column-major) of this shape at free coordinates u.
    pub fn constrain_of(&self, u: &[f64], shape: Shape) -> Vec<f64> {
        match self.two(shape) {
            Some((t, m, n)) => (t.constrain)(u, m, n),
            None => (self.constrain)(u, shape.rows()),
        }
    }

    /// The free coordinates of a valid value of this shape.
    pub fn unconstrain_of(&self, x: &[f64], shape: Shape) -> Vec<f64> {
        match self.two(shape) {
            Some((t, m, n)) => (t.unconstrain)(x, m, n),
            None => (self.unconstrain)(x, shape.rows()),
        }
    }

    /// The log-Jacobian at free coordinates u of a value of this shape.
    pub fn log_jacobian_of(&self, u: &[f64], shape: Shape) -> f64 {
        match self.two(shape) {
            Some((t, m, n)) => (t.log_jacobian)(u, m, n),
            None => (self.log_jacobian)(u, shape.rows()),
        }
    }

    /// Whether a value (column-major) of this shape is of the type.
    ///
    /// # Errors
    /// Why it is not.
    pub fn validate_of(&self, x: &[f64], shape: Shape) -> Result<(), Invalid> {
        match self.two(shape) {
            Some((t, m, n)) => (t.validate)(x, m, n),
            None => (self.validate)(x, shape.rows()),
        }
    }

    fn lower_of(&self, g: &mut Graph, u: NodeId, shape: Shape) -> Result<Lowered, Error> {
        match self.two(shape) {
            Some((t, m, n)) => (t.lower)(g, u, m, n),
            None => (self.lower)(g, u, shape.rows()),
        }
    }
}

/// The constrained types, in the order of the language reference.
pub const TYPES: &[TypeEntry] = &[
    simplex::ENTRY,
    ordered::ENTRY,
    positive_ordered::ENTRY,
    unit_vector::ENTRY,
    sum_to_zero::ENTRY,
    cholesky_corr::ENTRY,
    cholesky_cov::ENTRY,
    corr_matrix::ENTRY,
    cov_matrix::ENTRY,
];

/// The table row of a type.
pub fn entry(kind: TypeKind) -> &'static TypeEntry {
    TYPES
        .iter()
        .find(|e| e.kind == kind)
        .expect("every TypeKind has a row in TYPES")
}

/// The free coordinates of the initial point w = 0: zeros, except for a unit vector, which
/// has no direction at 0 and starts at 1/√K in every coordinate (the unit sphere).
pub fn initial_free(kind: TypeKind, shape: Shape) -> Vec<f64> {
    let n = entry(kind).free_of(shape);
    let v = if kind == TypeKind::UnitVector {
        1.0 / (shape.rows() as f64).sqrt()
    } else {
        0.0
    };
    vec![v; n]
}

/// The shape of a K-sized value of the type: a vector of K, or a K×K matrix.
pub fn value_shape(kind: TypeKind, k: usize) -> Shape {
    if kind.is_matrix() {
        Shape::Matrix(k, k)
    } else {
        Shape::Vector(k)
    }
}

impl Graph {
    /// A `param` (with `jacobian`) or `hyper` of a constrained type over the free
    /// coordinates w[offset ..] (or θ[offset ..]); the log-Jacobian is added to the target
    /// when `jacobian` is set. Returns the constrained value.
    ///
    /// # Errors
    /// Never for K at least the type's minimum; [`Error::Shape`] signals a bug in a transform.
    pub fn typed_slice(
        &mut self,
        offset: usize,
        kind: TypeKind,
        k: usize,
        hyper: bool,
    ) -> Result<NodeId, Error> {
        self.typed_slice_of(offset, kind, value_shape(kind, k), hyper)
    }

    /// [`Graph::typed_slice`] for a value of the given shape (an M×N `cholesky_cov`).
    ///
    /// # Errors
    /// As [`Graph::typed_slice`].
    pub fn typed_slice_of(
        &mut self,
        offset: usize,
        kind: TypeKind,
        shape: Shape,
        hyper: bool,
    ) -> Result<NodeId, Error> {
        let e = entry(kind);
        let n = e.free_of(shape);
        if n == 0 {
            let x = e.constrain_of(&[], shape);
            return Ok(self.constant(shape, x));
        }
        let u = if hyper {
            self.push(Op::Hyper { offset }, Shape::Vector(n))
        } else {
            self.push(Op::Param { offset }, Shape::Vector(n))
        };
        let (x, lj) = e.lower_of(self, u, shape)?;
        if let (Some(lj), false) = (lj, hyper) {
            self.add_target(lj)?;
        }
        Ok(x)
    }
}

/// The lowered value and log-Jacobian of a type at free coordinates `u` (for tests).
///
/// # Errors
/// As [`Graph::typed_slice`].
pub fn lower_type(g: &mut Graph, u: NodeId, kind: TypeKind, k: usize) -> Result<Lowered, Error> {
    (entry(kind).lower)(g, u, k)
}

/// [`lower_type`] for a value of the given shape (an M×N `cholesky_cov`).
///
/// # Errors
/// As [`Graph::typed_slice`].
pub fn lower_type_of(g: &mut Graph, u: NodeId, kind: TypeKind, shape: Shape) -> Result<Lowered, Error> {
    entry(kind).lower_of(g, u, shape)
}

/// A constant matrix times a vector node, as a vector (also when the matrix has one row).
fn matvec(g: &mut Graph, a: &DMatrix<f64>, u: NodeId) -> Result<NodeId, Error> {
    let m = g.constant(Shape::Matrix(a.nrows(), a.ncols()), a.as_slice().to_vec());
    let x = g.matmul(m, u)?;
    if g.shape(x) == Shape::Scalar {
        return g.gather_flat(x, vec![0], Shape::Vector(1));
    }
    Ok(x)
}

/// The running sums of a vector node (x₁, x₁ + x₂, …), as a product with a constant
/// lower-triangular matrix of ones.
fn cumsum(g: &mut Graph, v: NodeId, k: usize) -> Result<NodeId, Error> {
    let t = DMatrix::from_fn(k, k, |i, j| if j <= i { 1.0 } else { 0.0 });
    matvec(g, &t, v)
}

/// L Lᵀ of a K×K matrix node (K = 1: L²).
fn self_outer(g: &mut Graph, l: NodeId, k: usize) -> Result<NodeId, Error> {
    if k == 1 {
        return g.binary(Fun2::Mul, l, l);
    }
    let lt = g.transpose(l);
    g.matmul(l, lt)
}

/// Entries `idx` of a node as a vector.
fn pick(g: &mut Graph, a: NodeId, idx: impl IntoIterator<Item = usize>) -> Result<NodeId, Error> {
    let idx: Vec<u32> = idx.into_iter().map(|i| i as u32).collect();
    let n = idx.len();
    g.gather_flat(a, idx, Shape::Vector(n))
}

/// A K×K matrix node whose entry at each (row, col) of `at` is entry i of `v` (zero
/// elsewhere).
fn scatter(g: &mut Graph, v: NodeId, k: usize, at: &[(usize, usize)]) -> Result<NodeId, Error> {
    let mut idx = vec![GATHER_ZERO; k * k];
    for (i, &(r, c)) in at.iter().enumerate() {
        idx[r + c * k] = i as u32;
    }
    g.gather_flat(v, idx, Shape::Matrix(k, k))
}

/// Σ wᵢ vᵢ for a vector node and constant weights.
fn weighted_sum(g: &mut Graph, v: NodeId, w: Vec<f64>) -> Result<NodeId, Error> {
    let n = w.len();
    let w = g.constant(Shape::Vector(n), w);
    let p = g.binary(Fun2::Mul, w, v)?;
    Ok(g.sum(p))
}

/// The positions of the strict lower triangle of a K×K matrix in Stan's row-major order
/// ((1, 0), (2, 0), (2, 1), …), the order of the free coordinates of `cholesky_corr`.
fn strict_lower_rows(k: usize) -> Vec<(usize, usize)> {
    (1..k).flat_map(|i| (0..i).map(move |j| (i, j))).collect()
}

/// A column-major K×K matrix from a slice.
fn matrix(x: &[f64], k: usize) -> DMatrix<f64> {
    DMatrix::from_column_slice(k, k, x)
}

/// Check that a column-major K×K matrix is symmetric within [`TOLERANCE`].
fn check_symmetric(x: &[f64], k: usize) -> Result<(), Invalid> {
    for j in 0..k {
        for i in j + 1..k {
            let (a, b) = (x[i + j * k], x[j + i * k]);
            if (a - b).abs() > TOLERANCE {
                return Err(Invalid::at(
                    i + j * k,
                    format!(
                        "it is not symmetric: entry [{}, {}] is {a} but [{}, {}] is {b}",
                        i + 1,
                        j + 1,
                        j + 1,
                        i + 1
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Check that a column-major K×K matrix is lower triangular with a positive diagonal.
fn check_lower_triangular(x: &[f64], k: usize) -> Result<(), Invalid> {
    for j in 0..k {
        for i in 0..j {
            if x[i + j * k] != 0.0 {
                return Err(Invalid::at(
                    i + j * k,
                    format!(
                        "it is not lower triangular: entry [{}, {}] is {}",
                        i + 1,
                        j + 1,
                        x[i + j * k]
                    ),
                ));
            }
        }
        if x[j + j * k].partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(Invalid::at(
                j + j * k,
                format!(
                    "its diagonal entry [{}, {}] is {}, not positive",
                    j + 1,
                    j + 1,
                    x[j + j * k]
                ),
            ));
        }
    }
    Ok(())
}

/// The lower Cholesky factor of a column-major symmetric matrix, or why it has none.
fn cholesky(x: &[f64], k: usize) -> Result<DMatrix<f64>, Invalid> {
    nalgebra::linalg::Cholesky::new(matrix(x, k))
        .map(|c| c.l())
        .ok_or_else(|| Invalid::whole("it is not positive definite (it has no Cholesky factor)".into()))
}

/// Bounds of a `real` or `vector` declaration (numbers: lowering evaluates data bounds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Constraint {
    /// `<lower=a>`.
    pub lower: Option<f64>,
    /// `<upper=b>`.
    pub upper: Option<f64>,
}

impl Constraint {
    /// No bounds.
    pub const NONE: Constraint = Constraint {
        lower: None,
        upper: None,
    };

    /// `<lower=a>`.
    pub fn lower(a: f64) -> Constraint {
        Constraint {
            lower: Some(a),
            upper: None,
        }
    }

    /// `<lower=a, upper=b>`.
    pub fn interval(a: f64, b: f64) -> Constraint {
        Constraint {
            lower: Some(a),
            upper: Some(b),
        }
    }

    /// The constrained value of an unconstrained number u (f64, for reports).
    pub fn constrain(&self, u: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => u,
            (Some(a), None) => a + u.exp(),
            (None, Some(b)) => b - u.exp(),
            (Some(a), Some(b)) => a + (b - a) / (1.0 + (-u).exp()),
        }
    }

    /// The unconstrained number u of a constrained value x (for initial values of `hyper`).
    pub fn unconstrain(&self, x: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => x,
            (Some(a), None) => (x - a).ln(),
            (None, Some(b)) => (b - x).ln(),
            (Some(a), Some(b)) => {
                let p = (x - a) / (b - a);
                (p / (1.0 - p)).ln()
            }
        }
    }

    /// Whether any bound is present.
    pub fn is_none(&self) -> bool {
        self.lower.is_none() && self.upper.is_none()
    }
}

/// The constrained value of `u` and the log-Jacobian (a scalar node; `None` without bounds).
pub(crate) fn lower_transform(
    g: &mut Graph,
    u: NodeId,
    c: &Constraint,
) -> Result<(NodeId, Option<NodeId>), Error> {
    match (c.lower, c.upper) {
        (None, None) => Ok((u, None)),
        (Some(a), None) => {
            let e = g.unary(Fun1::Exp, u);
            let a = g.scalar(a);
            let x = g.binary(Fun2::Add, a, e)?;
            Ok((x, Some(g.sum(u))))
        }
        (None, Some(b)) => {
            let e = g.unary(Fun1::Exp, u);
            let b = g.scalar(b);
            let x = g.binary(Fun2::Sub, b, e)?;
            Ok((x, Some(g.sum(u))))
        }
        (Some(a), Some(b)) => {
            let p = g.unary(Fun1::InvLogit, u);
            let width = g.scalar(b - a);
            let scaled = g.binary(Fun2::Mul, width, p)?;
            let a_node = g.scalar(a);
            let x = g.binary(Fun2::Add, a_node, scaled)?;
            let l1 = g.unary(Fun1::LogInvLogit, u);
            let l2 = g.unary(Fun1::Log1mInvLogit, u);
            let both = g.binary(Fun2::Add, l1, l2)?;
            let s = g.sum(both);
            let n = g.scalar(g.shape(u).size() as f64 * (b - a).ln());
            Ok((x, Some(g.binary(Fun2::Add, s, n)?)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn unconstrain_inverts_constrain() {
        for c in [
            Constraint::NONE,
            Constraint::lower(1.5),
            Constraint::interval(-1.0, 3.0),
            Constraint {
                lower: None,
                upper: Some(2.0),
            },
        ] {
            for &u in &[-2.0, 0.0, 0.7] {
                assert_relative_eq!(c.unconstrain(c.constrain(u)), u, epsilon = 1e-12);
            }
        }
    }
}
