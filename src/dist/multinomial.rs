//! `multinomial(θ)` on a count vector y (one draw of Σy trials over K categories with
//! probabilities θ, a simplex).

use super::{f1, non_negative, sum_all, sums_to_one, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// lgamma(Σy + 1) − Σ lgamma(y + 1) + Σ y log θ (−∞ when θ is not a simplex).
pub fn multinomial(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let theta = a[0];
    let n = g.sum(y);
    let one = g.scalar(1.0);
    let n1 = g.add_nodes(n, one)?;
    let t1 = f1(g, Fun1::Lgamma, n1);
    let y1 = g.add_nodes(y, one)?;
    let ly = f1(g, Fun1::Lgamma, y1);
    let t2 = g.sum(ly);
    let t2 = g.neg(t2);
    let lt = f1(g, Fun1::Log, theta);
    let t3 = g.dot(y, lt)?;
    let lp = sum_all(g, &[t1, t2, t3])?;
    let (c1, c2) = (non_negative(g, theta), non_negative(g, y));
    let c3 = sums_to_one(g, theta);
    with_support(g, lp, &[c1, c2, c3])
}

/// The expected counts θ Σy are not known from the arguments alone: the probabilities θ.
pub fn probabilities(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
