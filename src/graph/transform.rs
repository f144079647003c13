//! Constraint transforms from ℝ to a parameter's support and their log-Jacobians as graph
//! nodes (Stan's bounds: lower `a + exp(u)`, upper `b − exp(u)`, both
//! `a + (b − a)·inv_logit(u)`), and Stan's constrained types (`simplex`, `ordered`, …),
//! one file per type below `transform/`. The same maps in plain `f64`, the table of types
//! ([`TYPES`]) and the checks of data values are `crate::constrained`'s, re-exported here.
//!
//! Input: an unconstrained slice node. Output: the constrained value node and, for `param`,
//! the log |dx/du| node added to the target; `hyper` values get no Jacobian. Every transform
//! is built from ordinary graph operations (gathers, constant matrix products, elementwise
//! functions), so it is batched over the S columns of W and differentiated by the reverse
//! sweep and by num-dual like any other node.

mod affine;
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

pub(crate) use affine::lower_affine;
pub(crate) use dependent::lower_dependent;

use super::{Error, Fun1, Fun2, Graph, NodeId, Op, Shape, GATHER_ZERO};
pub use crate::constrained::{
    entry, initial_free, value_shape, Constraint, Invalid, TwoSize, TypeEntry, TypeKind, TOLERANCE, TYPES,
};
use nalgebra::DMatrix;

/// A built transform: the constrained value and its log-Jacobian (`None` when it is 0).
pub type Lowered = (NodeId, Option<NodeId>);

/// Build the value node and the log-Jacobian node from the free coordinates `u` of an M×N
/// value.
type LowerTwoSize = fn(&mut Graph, NodeId, usize, usize) -> Result<Lowered, Error>;

/// One constrained type's transform as graph nodes: build the value node and the
/// log-Jacobian node from the free coordinates `u`, for size K, and for an M×N value of a
/// matrix type that may be written with two sizes (`cholesky_cov[M, N]`).
struct Lowering {
    kind: TypeKind,
    one_size: fn(&mut Graph, NodeId, usize) -> Result<Lowered, Error>,
    two_size: Option<LowerTwoSize>,
}

/// The transforms of [`TYPES`] as graph nodes.
const LOWERINGS: &[Lowering] = &[
    simplex::LOWERING,
    ordered::LOWERING,
    positive_ordered::LOWERING,
    unit_vector::LOWERING,
    sum_to_zero::LOWERING,
    cholesky_corr::LOWERING,
    cholesky_cov::LOWERING,
    corr_matrix::LOWERING,
    cov_matrix::LOWERING,
];

/// The value node and the log-Jacobian node of a value of type `kind` and this shape.
fn lower_of(g: &mut Graph, u: NodeId, kind: TypeKind, shape: Shape) -> Result<Lowered, Error> {
    let l = LOWERINGS
        .iter()
        .find(|l| l.kind == kind)
        .expect("every TypeKind has a row in LOWERINGS");
    match (entry(kind).two(shape), l.two_size) {
        (Some((_, m, n)), Some(two)) => two(g, u, m, n),
        _ => (l.one_size)(g, u, shape.rows()),
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
        let (x, lj) = lower_of(self, u, kind, shape)?;
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
    lower_of(g, u, kind, value_shape(kind, k))
}

/// [`lower_type`] for a value of the given shape (an M×N `cholesky_cov`).
///
/// # Errors
/// As [`Graph::typed_slice`].
pub fn lower_type_of(g: &mut Graph, u: NodeId, kind: TypeKind, shape: Shape) -> Result<Lowered, Error> {
    lower_of(g, u, kind, shape)
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
