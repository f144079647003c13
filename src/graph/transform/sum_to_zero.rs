//! `sum_to_zero_vector[K]` as graph nodes: the linear map x = A u (A and the log-Jacobian 0:
//! `crate::constrained::sum_to_zero`).

use super::{matvec, Error, Graph, Lowered, Lowering, NodeId, TypeKind};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::SumToZero,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    Ok((matvec(g, &crate::constrained::sum_to_zero::basis(k), u)?, None))
}
