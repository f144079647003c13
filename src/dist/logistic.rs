//! `logistic(μ, s)`.

use super::{f1, positive, sum_all, with_support, z_score, R};
use crate::graph::{Fun1, Graph, NodeId};

/// −log s + log σ(z) + log(1 − σ(z)), z = (x − μ)/s.
pub fn logistic(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let l1 = f1(g, Fun1::LogInvLogit, z);
    let l2 = f1(g, Fun1::Log1mInvLogit, z);
    let ls = f1(g, Fun1::Log, a[1]);
    let nls = g.neg(ls);
    let lp = sum_all(g, &[l1, l2, nls])?;
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log σ(z).
pub fn logistic_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let lp = f1(g, Fun1::LogInvLogit, z);
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log(1 − σ(z)).
pub fn logistic_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let lp = f1(g, Fun1::Log1mInvLogit, z);
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}
