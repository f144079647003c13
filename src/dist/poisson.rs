//! `poisson(λ)` and `poisson_log(α)` (λ = e^α) for counts.

use super::{f1, non_negative, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId};

/// −lgamma(k + 1), constant-folded for data.
fn log_factorial(g: &mut Graph, k: NodeId) -> R {
    let one = g.scalar(1.0);
    let k1 = g.add_nodes(k, one)?;
    let l = f1(g, Fun1::Lgamma, k1);
    Ok(g.neg(l))
}

/// k log λ − λ − lgamma(k + 1).
pub fn poisson(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    let ll = f1(g, Fun1::Log, a[0]);
    let t1 = g.mul(k, ll)?;
    let nl = g.neg(a[0]);
    let lf = log_factorial(g, k)?;
    let lp = sum_all(g, &[t1, nl, lf])?;
    let c = non_negative(g, a[0]);
    with_support(g, lp, &[c])
}

/// kα − e^α − lgamma(k + 1).
pub fn poisson_log(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    let t1 = g.mul(k, a[0])?;
    let e = f1(g, Fun1::Exp, a[0]);
    let ne = g.neg(e);
    let lf = log_factorial(g, k)?;
    sum_all(g, &[t1, ne, lf])
}

/// The mean λ.
pub fn mean(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// The mean e^α.
pub fn mean_log(g: &mut Graph, a: &[NodeId]) -> R {
    Ok(f1(g, Fun1::Exp, a[0]))
}

/// log P(K ≤ k) = log Q(k + 1, λ) (`upper = false`) or log P(K > k) = log P(k + 1, λ).
fn poisson_cdf(g: &mut Graph, k: NodeId, a: &[NodeId], upper: bool) -> R {
    let k1 = super::affine(g, 1.0, 1.0, k)?;
    let f = if upper {
        crate::graph::Fun2::LogGammaP
    } else {
        crate::graph::Fun2::LogGammaQ
    };
    let lp = g.binary(f, k1, a[0])?;
    let (c1, c2) = (super::positive(g, a[0]), super::non_negative(g, k));
    super::with_support(g, lp, &[c1, c2])
}

/// log P(K ≤ k) = log Q(k + 1, λ), the regularised upper incomplete gamma function.
pub fn poisson_lcdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    poisson_cdf(g, k, a, false)
}

/// log P(K > k) = log P(k + 1, λ).
pub fn poisson_lccdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    poisson_cdf(g, k, a, true)
}
