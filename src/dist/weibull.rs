//! `weibull(α, σ)` (shape α, scale σ) on y ≥ 0, with log CDFs in closed form.

use super::{affine, f1, log1m_exp, non_negative, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// t = log(y/σ).
fn log_ratio(g: &mut Graph, y: NodeId, sigma: NodeId) -> R {
    let r = g.div(y, sigma)?;
    Ok(f1(g, Fun1::Log, r))
}

/// (y/σ)^α = e^{α t}.
fn power(g: &mut Graph, alpha: NodeId, t: NodeId) -> R {
    let at = g.mul(alpha, t)?;
    Ok(f1(g, Fun1::Exp, at))
}

/// log α − log σ + (α − 1) log(y/σ) − (y/σ)^α.
pub fn weibull(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (alpha, sigma) = (a[0], a[1]);
    let t = log_ratio(g, y, sigma)?;
    let p = power(g, alpha, t)?;
    let am1 = affine(g, -1.0, 1.0, alpha)?;
    let t1 = g.mul(am1, t)?;
    let la = f1(g, Fun1::Log, alpha);
    let ls = f1(g, Fun1::Log, sigma);
    let (ls, p) = (g.neg(ls), g.neg(p));
    let lp = sum_all(g, &[la, ls, t1, p])?;
    let (c1, c2, c3) = (positive(g, alpha), positive(g, sigma), non_negative(g, y));
    with_support(g, lp, &[c1, c2, c3])
}

fn weibull_cdf(g: &mut Graph, y: NodeId, a: &[NodeId], upper: bool) -> R {
    let t = log_ratio(g, y, a[1])?;
    let p = power(g, a[0], t)?;
    let np = g.neg(p);
    let lp = if upper { np } else { log1m_exp(g, np) };
    let (c1, c2, c3) = (positive(g, a[0]), positive(g, a[1]), non_negative(g, y));
    with_support(g, lp, &[c1, c2, c3])
}

/// log(1 − e^{−(y/σ)^α}).
pub fn weibull_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    weibull_cdf(g, y, a, false)
}

/// −(y/σ)^α.
pub fn weibull_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    weibull_cdf(g, y, a, true)
}

/// The mean σ Γ(1 + 1/α).
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let one = g.scalar(1.0);
    let inv = g.div(one, a[0])?;
    let i1 = g.add_nodes(inv, one)?;
    let lg = f1(g, Fun1::Lgamma, i1);
    let e = f1(g, Fun1::Exp, lg);
    g.mul(a[1], e)
}
