//! `unit_vector[K]` as graph nodes: x = u / ‖u‖, with −½ ‖u‖² added to the target (why:
//! `crate::constrained::unit_vector`).

use super::{Error, Fun1, Fun2, Graph, Lowered, Lowering, NodeId, TypeKind};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::UnitVector,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, _k: usize) -> Result<Lowered, Error> {
    let sq = g.unary(Fun1::Square, u);
    let ss = g.sum(sq);
    let r = g.unary(Fun1::Sqrt, ss);
    let x = g.binary(Fun2::Div, u, r)?;
    let half = g.scalar(-0.5);
    let lj = g.binary(Fun2::Mul, half, ss)?;
    Ok((x, Some(lj)))
}
