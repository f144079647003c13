//! The gamma family: `exponential(λ)` (rate), `gamma(α, β)` (shape, rate),
//! `inv_gamma(α, β)` (shape, scale).

use super::{f1, non_negative, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// log λ − λx on x ≥ 0.
pub fn exponential(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let ll = f1(g, Fun1::Log, a[0]);
    let lx = g.mul(a[0], x)?;
    let lp = g.sub(ll, lx)?;
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// log(1 − e^{−λx}) = log(−expm1(−λx)).
pub fn exponential_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let lx = g.mul(a[0], x)?;
    let n = g.neg(lx);
    let e = f1(g, Fun1::Expm1, n);
    let ne = g.neg(e);
    let lp = f1(g, Fun1::Log, ne);
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// −λx.
pub fn exponential_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let lx = g.mul(a[0], x)?;
    let lp = g.neg(lx);
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// 1/λ.
pub fn exponential_mean(g: &mut Graph, a: &[NodeId]) -> R {
    let one = g.scalar(1.0);
    g.div(one, a[0])
}

/// α log β − lgamma(α) + (α − 1) log x − βx.
pub fn gamma(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let (al, be) = (a[0], a[1]);
    let lb = f1(g, Fun1::Log, be);
    let t1 = g.mul(al, lb)?;
    let t2 = f1(g, Fun1::Lgamma, al);
    let one = g.scalar(1.0);
    let am1 = g.sub(al, one)?;
    let lx = f1(g, Fun1::Log, x);
    let t3 = g.mul(am1, lx)?;
    let t4 = g.mul(be, x)?;
    let n2 = g.neg(t2);
    let n4 = g.neg(t4);
    let lp = sum_all(g, &[t1, n2, t3, n4])?;
    let (c1, c2, c3) = (positive(g, al), positive(g, be), positive(g, x));
    with_support(g, lp, &[c1, c2, c3])
}

/// α/β.
pub fn gamma_mean(g: &mut Graph, a: &[NodeId]) -> R {
    g.div(a[0], a[1])
}

/// α log β − lgamma(α) − (α + 1) log x − β/x.
pub fn inv_gamma(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let (al, be) = (a[0], a[1]);
    let lb = f1(g, Fun1::Log, be);
    let t1 = g.mul(al, lb)?;
    let t2 = f1(g, Fun1::Lgamma, al);
    let one = g.scalar(1.0);
    let ap1 = g.add_nodes(al, one)?;
    let lx = f1(g, Fun1::Log, x);
    let t3 = g.mul(ap1, lx)?;
    let t4 = g.div(be, x)?;
    let (n2, n3, n4) = (g.neg(t2), g.neg(t3), g.neg(t4));
    let lp = sum_all(g, &[t1, n2, n3, n4])?;
    let (c1, c2, c3) = (positive(g, al), positive(g, be), positive(g, x));
    with_support(g, lp, &[c1, c2, c3])
}

/// β/(α − 1), the mean (for α > 1; otherwise this location is still reported).
pub fn inv_gamma_location(g: &mut Graph, a: &[NodeId]) -> R {
    let one = g.scalar(1.0);
    let am1 = g.sub(a[0], one)?;
    g.div(a[1], am1)
}
