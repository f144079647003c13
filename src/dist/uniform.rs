//! `uniform(a, b)` on a ≤ x ≤ b.

use super::{affine, f1, non_negative, positive, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// The checks a ≤ x ≤ b and a < b.
fn checks(g: &mut Graph, x: NodeId, a: &[NodeId]) -> Result<[NodeId; 3], crate::graph::Error> {
    let xa = g.sub(x, a[0])?;
    let bx = g.sub(a[1], x)?;
    let ba = g.sub(a[1], a[0])?;
    Ok([non_negative(g, xa), non_negative(g, bx), positive(g, ba)])
}

/// −log(b − a).
pub fn uniform(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let ba = g.sub(a[1], a[0])?;
    let l = f1(g, Fun1::Log, ba);
    let lp0 = g.neg(l);
    let zero = g.sub(x, x)?;
    let lp = g.add_nodes(lp0, zero)?;
    let c = checks(g, x, a)?;
    with_support(g, lp, &c)
}

fn uniform_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], upper: bool) -> R {
    let num = if upper { g.sub(a[1], x)? } else { g.sub(x, a[0])? };
    let ba = g.sub(a[1], a[0])?;
    let r = g.div(num, ba)?;
    let lp = f1(g, Fun1::Log, r);
    let c = checks(g, x, a)?;
    with_support(g, lp, &c)
}

/// log((x − a)/(b − a)).
pub fn uniform_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    uniform_cdf(g, x, a, false)
}

/// log((b − x)/(b − a)).
pub fn uniform_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    uniform_cdf(g, x, a, true)
}

/// (a + b)/2.
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let s = g.add_nodes(a[0], a[1])?;
    affine(g, 0.0, 0.5, s)
}
