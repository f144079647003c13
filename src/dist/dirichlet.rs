//! `dirichlet(α)` on a simplex θ (a vector of K positive entries summing to 1).

use super::{f1, positive, sum_all, sums_to_one, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// lgamma(Σα) − Σ lgamma(α) + Σ (α − 1) log θ (−∞ when θ is not a simplex).
pub fn dirichlet(g: &mut Graph, theta: NodeId, a: &[NodeId]) -> R {
    let alpha = a[0];
    let sa = g.sum(alpha);
    let t1 = f1(g, Fun1::Lgamma, sa);
    let la = f1(g, Fun1::Lgamma, alpha);
    let t2 = g.sum(la);
    let t2 = g.neg(t2);
    let lt = f1(g, Fun1::Log, theta);
    let one = g.scalar(1.0);
    let am1 = g.sub(alpha, one)?;
    let t3 = g.dot(am1, lt)?;
    let lp = sum_all(g, &[t1, t2, t3])?;
    let (c1, c2) = (positive(g, alpha), positive(g, theta));
    let c3 = sums_to_one(g, theta);
    with_support(g, lp, &[c1, c2, c3])
}

/// The mean α / Σα.
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let s = g.sum(a[0]);
    g.div(a[0], s)
}
