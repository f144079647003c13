//! `simplex[K]` as graph nodes: x = softmax(A u), with A the `sum_to_zero_vector` basis;
//! log-Jacobian ½ log K + Σᵢ log xᵢ (the maps and their derivation:
//! `crate::constrained::simplex`).

use super::{matvec, Error, Graph, Lowered, Lowering, NodeId, TypeKind};

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::Simplex,
    one_size: lower,
    two_size: None,
};

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let z = matvec(g, &crate::constrained::sum_to_zero::basis(k), u)?;
    let logx = g.log_softmax(z)?;
    let x = g.unary(super::Fun1::Exp, logx);
    let s = g.sum(logx);
    let c = g.scalar(0.5 * (k as f64).ln());
    let lj = g.binary(super::Fun2::Add, s, c)?;
    Ok((x, Some(lj)))
}
