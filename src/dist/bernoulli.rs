//! `bernoulli(p)` and `bernoulli_logit(η)` for outcomes in {0, 1} (data, checked by
//! [`super::check_outcome`]).

use super::{affine, f1, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// log(y p + (1 − y)(1 − p)) = log((1 − y) + (2y − 1) p): exact for y ∈ {0, 1} and finite
/// at p ∈ {0, 1} where the outcome allows it.
pub fn bernoulli(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let s = affine(g, -1.0, 2.0, y)?;
    let sp = g.mul(s, a[0])?;
    let one_m_y = affine(g, 1.0, -1.0, y)?;
    let q = g.add_nodes(one_m_y, sp)?;
    let lp = f1(g, Fun1::Log, q);
    let c = g.support(a[0], 0.0, 1.0, false);
    with_support(g, lp, &[c])
}

/// log σ((2y − 1) η).
pub fn bernoulli_logit(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let s = affine(g, -1.0, 2.0, y)?;
    let se = g.mul(s, a[0])?;
    Ok(f1(g, Fun1::LogInvLogit, se))
}

/// P(y = 1) = p.
pub fn probability(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// P(y = 1) = σ(η).
pub fn probability_logit(g: &mut Graph, a: &[NodeId]) -> R {
    Ok(f1(g, Fun1::InvLogit, a[0]))
}
