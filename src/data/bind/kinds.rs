//! Data declared with a constrained type (`w: simplex[K]`, `S: cov_matrix[K]`): the value is
//! checked when it is read, within `constrained::TOLERANCE` (Stan's 1e-8) for sums,
//! norms, unit diagonals and symmetry; positive definiteness is a Cholesky factorisation.

use super::{Binder, Decl, Diagnostic, RawEntry};
use crate::constrained::{entry, TypeKind};

impl Binder<'_> {
    /// Check a data value against its declared constrained type, if it has one.
    pub(super) fn check_kind(&self, d: &Decl, e: &RawEntry, dims: &[usize]) -> Result<(), Diagnostic> {
        let Some(kind) = d.ty.kind else { return Ok(()) };
        if let Some(b) = d.ty.lower.as_ref().or(d.ty.upper.as_ref()) {
            return Err(self
                .model_error(
                    "mvi::data::bounds_on_constrained_type",
                    format!("a `{}` takes no bounds", kind.name()),
                    b.span,
                    "this bound",
                )
                .with_help(format!(
                    "the type itself constrains a `{}`; remove `<…>`",
                    kind.name()
                )));
        }
        let k = dims.first().copied().unwrap_or(0);
        let cols = if kind.is_matrix() {
            dims.get(1).copied().unwrap_or(0)
        } else {
            1
        };
        let value = &e.value;
        // an M×N Cholesky factor of a covariance (M ≥ N) need not be square
        let trapezoid = kind == TypeKind::CholeskyCov && cols <= k;
        if kind.is_matrix() && !trapezoid && dims != [k, k] {
            return Err(self.data_error(
                d,
                e,
                "mvi::data::not_square",
                format!(
                    "`{}` is declared `{}` but is not square",
                    d.name.name,
                    self.snippet(d.ty.span)
                ),
                None,
                format!("{} rows, {} columns", k, dims.get(1).copied().unwrap_or(0)),
            ));
        }
        // The checks read column by column.
        let x: Vec<f64> = (0..value.values.len())
            .map(|i| value.values[value.storage_of_col_major(i)])
            .collect();
        let shape = if kind.is_matrix() {
            crate::constrained::Shape::Matrix(k, cols)
        } else {
            crate::constrained::Shape::Vector(k)
        };
        let Err(bad) = entry(kind).validate_of(&x, shape) else {
            return Ok(());
        };
        let file = &e.source.name;
        let (at, label) = match bad.entry {
            Some(i) => (Some(value.storage_of_col_major(i)), "here".to_string()),
            None => (None, format!("not a `{}`", kind.name())),
        };
        Err(self
            .data_error(
                d,
                e,
                "mvi::data::not_of_type",
                format!(
                    "`{}` in `{file}` is declared `{}` but {}",
                    d.name.name,
                    self.snippet(d.ty.span),
                    bad.reason
                ),
                at,
                label,
            )
            .with_help(help(kind)))
    }
}

fn help(kind: TypeKind) -> String {
    let what = match kind {
        TypeKind::Simplex => "a simplex's entries are ≥ 0 and sum to 1: divide the values by their sum",
        TypeKind::Ordered => "an `ordered` vector is strictly increasing: sort it, and remove ties",
        TypeKind::PositiveOrdered => "a `positive_ordered` vector is positive and strictly increasing",
        TypeKind::UnitVector => "a unit vector has Euclidean norm 1: divide it by its norm",
        TypeKind::SumToZero => "a sum-to-zero vector's entries sum to 0: subtract their mean",
        TypeKind::CholeskyCorr => {
            "a Cholesky factor of a correlation matrix is lower triangular, with a positive \
             diagonal and rows of norm 1"
        }
        TypeKind::CholeskyCov => "a Cholesky factor is lower triangular with a positive diagonal",
        TypeKind::CorrMatrix => {
            "a correlation matrix is symmetric and positive definite, with 1 on the diagonal"
        }
        TypeKind::CovMatrix => {
            "a covariance matrix is symmetric and positive definite: check for a typo, or a \
             matrix estimated from fewer rows than columns"
        }
    };
    let tolerance = match kind {
        TypeKind::Ordered | TypeKind::PositiveOrdered | TypeKind::CholeskyCov => String::new(),
        _ => format!(" (sums, norms and symmetry are checked up to {})", TOLERANCE_TEXT),
    };
    let plain = if kind.is_matrix() { "matrix" } else { "vector" };
    format!("{what}{tolerance}; or declare it a plain `{plain}`")
}

/// `constrained::TOLERANCE` as the help line writes it (a Unicode minus, so the line never breaks
/// inside the number).
const TOLERANCE_TEXT: &str = "1e−8";

#[cfg(test)]
mod tests {
    #[test]
    fn tolerance_text_is_the_tolerance() {
        let parsed: f64 = super::TOLERANCE_TEXT.replace('−', "-").parse().unwrap();
        assert!((parsed - crate::constrained::TOLERANCE).abs() < 1e-20);
    }
}
