//! Stan's constrained types (`simplex`, `ordered`, `cov_matrix`, …; the table [`TYPES`]) and
//! bounds ([`Constraint`]) in plain `f64`, with the [`Shape`] of a value.
//!
//! Input: a type and its size, and free (unconstrained) coordinates or a value. Output: the
//! number of free coordinates, the value at free coordinates (Stan's loops), its inverse
//! (Stan's `*_free`), the log-Jacobian, and the check of a data value. The checker sizes
//! declarations with it, data binding checks values with it, reports and initial values use
//! the maps; `graph::transform` builds the same maps as graph nodes (one file per type
//! there too), and `tests/it/transforms.rs` checks the two against each other. Nothing here
//! knows the graph.
//!
//! Unconstrained coordinates are Stan's (Stan 2.37, `stan/math/prim/constraint`), in Stan's
//! order. Where a value has more entries than free coordinates (simplex, sum-to-zero,
//! Cholesky factors, correlation and covariance matrices), the log-Jacobian is that of the
//! map from the free coordinates to the value's free entries: the first K − 1 entries of a
//! simplex, the lower triangle of a Cholesky factor or covariance matrix, the strict lower
//! triangle of a correlation matrix or its Cholesky factor (see each file for the exceptions
//! Stan makes: `unit_vector` and `sum_to_zero_vector`).

pub(crate) mod cholesky_corr;
pub(crate) mod cholesky_cov;
pub(crate) mod corr_matrix;
pub(crate) mod cov_matrix;
pub(crate) mod ordered;
pub(crate) mod positive_ordered;
pub(crate) mod simplex;
pub(crate) mod sum_to_zero;
pub(crate) mod unit_vector;

pub use crate::syntax::ast::TypeKind;
use nalgebra::DMatrix;

/// The shape of a value: of a declared variable, and of a graph node's value per batch
/// column (`graph::Shape` re-exports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One number.
    Scalar,
    /// A column vector of length n.
    Vector(usize),
    /// An n×m matrix, stored column-major.
    Matrix(usize, usize),
}

impl Shape {
    /// Number of rows (1 for a scalar).
    pub fn rows(self) -> usize {
        match self {
            Shape::Scalar => 1,
            Shape::Vector(n) | Shape::Matrix(n, _) => n,
        }
    }

    /// Number of columns (1 for a scalar or vector).
    pub fn cols(self) -> usize {
        match self {
            Shape::Scalar | Shape::Vector(_) => 1,
            Shape::Matrix(_, m) => m,
        }
    }

    /// Number of entries.
    pub fn size(self) -> usize {
        self.rows() * self.cols()
    }

    /// The dimensions, as the column names of reports are built from them: `[]`, `[n]` or
    /// `[r, c]`.
    pub fn dims(self) -> Vec<usize> {
        match self {
            Shape::Scalar => vec![],
            Shape::Vector(n) => vec![n],
            Shape::Matrix(r, c) => vec![r, c],
        }
    }
}

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

/// One constrained type in `f64`: its number of free coordinates, its transform, its
/// inverse, its log-Jacobian and the check of a data value. K is the size written in the
/// type. The same transform as graph nodes is `graph::transform`'s.
pub struct TypeEntry {
    /// The type.
    pub kind: TypeKind,
    /// The smallest K the type allows.
    pub min_size: usize,
    /// The number of unconstrained coordinates for K.
    pub free: fn(usize) -> usize,
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
    pub(crate) fn two(&self, shape: Shape) -> Option<(&TwoSize, usize, usize)> {
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

/// The positions of the strict lower triangle of a K×K matrix in Stan's row-major order
/// ((1, 0), (2, 0), (2, 1), …), the order of the free coordinates of `cholesky_corr`.
pub(crate) fn strict_lower_rows(k: usize) -> Vec<(usize, usize)> {
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
