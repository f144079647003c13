//! `laplace(μ, b)`, Stan's `double_exponential`.

use super::{affine, f1, positive, with_support, R};
use crate::graph::{Fun1, Fun2, Graph, NodeId};

/// −log 2 − log b − |x − μ|/b.
pub fn laplace(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let d = g.sub(x, a[0])?;
    let ad = f1(g, Fun1::Abs, d);
    let r = g.div(ad, a[1])?;
    let lb = f1(g, Fun1::Log, a[1]);
    let s = g.add_nodes(r, lb)?;
    let lp = affine(g, -std::f64::consts::LN_2, -1.0, s)?;
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// F = ½e^{min(z,0)} + ½(1 − e^{−max(z,0)}) (or 1 − F), z = (x − μ)/b, as a log.
fn laplace_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], upper: bool) -> R {
    let d = g.sub(x, a[0])?;
    let z = g.div(d, a[1])?;
    let z = if upper { g.neg(z) } else { z };
    let zero = g.scalar(0.0);
    let lo = g.binary(Fun2::Min, z, zero)?;
    let hi = g.binary(Fun2::Max, z, zero)?;
    let e1 = f1(g, Fun1::Exp, lo);
    let nhi = g.neg(hi);
    let e2 = f1(g, Fun1::Exp, nhi);
    let t1 = affine(g, 0.0, 0.5, e1)?;
    let t2 = affine(g, 0.5, -0.5, e2)?;
    let f = g.add_nodes(t1, t2)?;
    let lp = f1(g, Fun1::Log, f);
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log F(x).
pub fn laplace_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    laplace_cdf(g, x, a, false)
}

/// log(1 − F(x)) = log F(−z) by symmetry.
pub fn laplace_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    laplace_cdf(g, x, a, true)
}
