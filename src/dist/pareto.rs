//! `pareto(y_min, α)` on y ≥ y_min (scale y_min, shape α), with log CDFs in closed form:
//! P(Y > y) = (y_min/y)^α.

use super::{f1, log1m_exp, non_negative, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// 0 when y ≥ y_min (every entry), −∞ otherwise.
fn above(g: &mut Graph, y: NodeId, ymin: NodeId) -> R {
    let d = g.sub(y, ymin)?;
    Ok(non_negative(g, d))
}

/// log α + α log y_min − (α + 1) log y.
pub fn pareto(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (ymin, alpha) = (a[0], a[1]);
    let la = f1(g, Fun1::Log, alpha);
    let lm = f1(g, Fun1::Log, ymin);
    let t1 = g.mul(alpha, lm)?;
    let ly = f1(g, Fun1::Log, y);
    let one = g.scalar(1.0);
    let a1 = g.add_nodes(alpha, one)?;
    let t2 = g.mul(a1, ly)?;
    let t2 = g.neg(t2);
    let lp = sum_all(g, &[la, t1, t2])?;
    let (c1, c2, c3) = (positive(g, ymin), positive(g, alpha), above(g, y, ymin)?);
    with_support(g, lp, &[c1, c2, c3])
}

fn pareto_cdf(g: &mut Graph, y: NodeId, a: &[NodeId], upper: bool) -> R {
    let (ymin, alpha) = (a[0], a[1]);
    let r = g.div(ymin, y)?;
    let lr = f1(g, Fun1::Log, r);
    let s = g.mul(alpha, lr)?;
    let lp = if upper { s } else { log1m_exp(g, s) };
    let (c1, c2, c3) = (positive(g, ymin), positive(g, alpha), above(g, y, ymin)?);
    with_support(g, lp, &[c1, c2, c3])
}

/// log(1 − (y_min/y)^α).
pub fn pareto_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    pareto_cdf(g, y, a, false)
}

/// α log(y_min/y).
pub fn pareto_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    pareto_cdf(g, y, a, true)
}

/// The mean α y_min / (α − 1) (finite for α > 1).
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let one = g.scalar(1.0);
    let am1 = g.sub(a[1], one)?;
    let num = g.mul(a[1], a[0])?;
    g.div(num, am1)
}
