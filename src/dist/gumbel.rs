//! `gumbel(μ, β)` (location μ, scale β), with log CDFs in closed form:
//! F(y) = exp(−e^{−(y − μ)/β}).

use super::{f1, log1m_exp, positive, sum_all, with_support, z_score, R};
use crate::graph::{Fun1, Graph, NodeId};

/// −log β − z − e^{−z} for z = (y − μ)/β.
pub fn gumbel(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, y, a[0], a[1])?;
    let nz = g.neg(z);
    let e = f1(g, Fun1::Exp, nz);
    let ne = g.neg(e);
    let lb = f1(g, Fun1::Log, a[1]);
    let nlb = g.neg(lb);
    let lp = sum_all(g, &[nlb, nz, ne])?;
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

fn gumbel_cdf(g: &mut Graph, y: NodeId, a: &[NodeId], upper: bool) -> R {
    let z = z_score(g, y, a[0], a[1])?;
    let nz = g.neg(z);
    let e = f1(g, Fun1::Exp, nz);
    let ne = g.neg(e);
    let lp = if upper { log1m_exp(g, ne) } else { ne };
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// −e^{−z}.
pub fn gumbel_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    gumbel_cdf(g, y, a, false)
}

/// log(1 − exp(−e^{−z})).
pub fn gumbel_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    gumbel_cdf(g, y, a, true)
}

/// The mean μ + γβ (γ the Euler–Mascheroni constant).
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let gamma = g.scalar(0.577_215_664_901_532_9);
    let gb = g.mul(gamma, a[1])?;
    g.add_nodes(a[0], gb)
}
