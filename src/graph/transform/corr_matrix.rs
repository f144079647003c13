//! `corr_matrix[K]` as graph nodes: the free coordinates permuted from Stan's column order
//! into `cholesky_corr`'s row order, then Ω = L Lᵀ of that factor (the maps and Stan's
//! log-Jacobian: `crate::constrained::corr_matrix`).

use super::{
    cholesky_corr, self_outer, weighted_sum, Error, Graph, Lowered, Lowering, NodeId, Shape, TypeKind,
};
use crate::constrained::{corr_matrix, strict_lower_rows};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::CorrMatrix,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let perm: Vec<u32> = corr_matrix::rows_from_cols(k)
        .into_iter()
        .map(|p| p as u32)
        .collect();
    let n = perm.len();
    let row_u = g.gather_flat(u, perm, Shape::Vector(n))?;
    let (l, c) = cholesky_corr::factor(g, row_u, k)?;
    let omega = self_outer(g, l, k)?;
    let w = strict_lower_rows(k)
        .into_iter()
        .map(|(_, j)| 1.0 + 0.5 * (k as f64 - j as f64 - 2.0))
        .collect();
    Ok((omega, Some(weighted_sum(g, c, w)?)))
}
