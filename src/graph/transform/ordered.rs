//! `ordered[K]` as graph nodes: x₁ = u₁, xₖ = xₖ₋₁ + exp(uₖ), as running sums of
//! (u₁, exp(u₂), …); log-Jacobian Σₖ₌₂ uₖ (the maps: `crate::constrained::ordered`).

use super::{
    cumsum, pick, Error, Fun1, Fun2, Graph, Lowered, Lowering, NodeId, Shape, TypeKind, GATHER_ZERO,
};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::Ordered,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    if k == 1 {
        return Ok((u, None));
    }
    // v = (u₁, exp(u₂), …, exp(u_K)), then x = running sums of v.
    let rest = pick(g, u, 1..k)?;
    let e = g.unary(Fun1::Exp, rest);
    let mut first = vec![GATHER_ZERO; k];
    first[0] = 0;
    let head = g.gather_flat(u, first, Shape::Vector(k))?;
    let tail = g.gather_flat(
        e,
        std::iter::once(GATHER_ZERO).chain(0..k as u32 - 1).collect(),
        Shape::Vector(k),
    )?;
    let v = g.binary(Fun2::Add, head, tail)?;
    Ok((cumsum(g, v, k)?, Some(g.sum(rest))))
}
