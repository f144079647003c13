//! `cov_matrix[K]` as graph nodes: Σ = L Lᵀ with L the `cholesky_cov` factor of the same
//! coordinates; log-Jacobian K log 2 + Σₖ (K − k + 2) uₖₖ (the maps:
//! `crate::constrained::cov_matrix`).

use super::{
    cholesky_cov, self_outer, weighted_sum, Error, Fun2, Graph, Lowered, Lowering, NodeId, TypeKind,
};
use crate::constrained::cov_matrix;

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::CovMatrix,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let (l, d) = cholesky_cov::factor(g, u, k)?;
    let sigma = self_outer(g, l, k)?;
    let s = weighted_sum(g, d, cov_matrix::weights(k))?;
    let c = g.scalar(k as f64 * 2f64.ln());
    Ok((sigma, Some(g.binary(Fun2::Add, s, c)?)))
}
