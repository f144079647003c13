//! `positive_ordered[K]` as graph nodes: the running sums of exp(u); log-Jacobian Σₖ uₖ
//! (the maps: `crate::constrained::positive_ordered`).

use super::{cumsum, Error, Fun1, Graph, Lowered, Lowering, NodeId, TypeKind};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::PositiveOrdered,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let v = g.unary(Fun1::Exp, u);
    let x = if k == 1 { v } else { cumsum(g, v, k)? };
    Ok((x, Some(g.sum(u))))
}
