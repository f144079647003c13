//! `binomial(n, p)` and `binomial_logit(n, η)` for counts 0 ≤ k ≤ n (n data); the log CDFs
//! of `binomial` through the regularised incomplete beta function,
//! P(K ≤ k) = 1 − I_p(k + 1, n − k).

use super::{f1, sum_all, with_support, R};
use crate::graph::{Fun1, Fun3, Graph, NodeId};

/// log C(n, k) = lgamma(n+1) − lgamma(k+1) − lgamma(n−k+1) (constant-folded for data), and
/// the check 0 ≤ k ≤ n.
fn log_choose(g: &mut Graph, k: NodeId, n: NodeId) -> Result<(NodeId, NodeId), crate::graph::Error> {
    let one = g.scalar(1.0);
    let n1 = g.add_nodes(n, one)?;
    let k1 = g.add_nodes(k, one)?;
    let nk = g.sub(n, k)?;
    let nk1 = g.add_nodes(nk, one)?;
    let (a, b, c) = (
        f1(g, Fun1::Lgamma, n1),
        f1(g, Fun1::Lgamma, k1),
        f1(g, Fun1::Lgamma, nk1),
    );
    let ab = g.sub(a, b)?;
    let lc = g.sub(ab, c)?;
    let check = g.support(nk, 0.0, f64::INFINITY, false);
    Ok((lc, check))
}

/// log C(n, k) + k log p + (n − k) log(1 − p).
pub fn binomial(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    let (n, p) = (a[0], a[1]);
    let (lc, check) = log_choose(g, k, n)?;
    let lp_ = f1(g, Fun1::Log, p);
    let np = g.neg(p);
    let l1p = f1(g, Fun1::Log1p, np);
    let nk = g.sub(n, k)?;
    let t1 = g.mul(k, lp_)?;
    let t2 = g.mul(nk, l1p)?;
    let lp = sum_all(g, &[lc, t1, t2])?;
    let c2 = g.support(p, 0.0, 1.0, false);
    with_support(g, lp, &[check, c2])
}

/// log C(n, k) + k log σ(η) + (n − k) log(1 − σ(η)).
pub fn binomial_logit(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    let (n, eta) = (a[0], a[1]);
    let (lc, check) = log_choose(g, k, n)?;
    let l1 = f1(g, Fun1::LogInvLogit, eta);
    let l2 = f1(g, Fun1::Log1mInvLogit, eta);
    let nk = g.sub(n, k)?;
    let t1 = g.mul(k, l1)?;
    let t2 = g.mul(nk, l2)?;
    let lp = sum_all(g, &[lc, t1, t2])?;
    with_support(g, lp, &[check])
}

/// log P(K ≤ k) (`upper = false`) or log P(K > k): 0 or −∞ below 0 and from n on.
fn binomial_cdf(g: &mut Graph, k: NodeId, a: &[NodeId], upper: bool) -> R {
    let f = if upper {
        Fun3::LogBinomialCcdf
    } else {
        Fun3::LogBinomialCdf
    };
    g.ternary(f, [k, a[0], a[1]])
}

/// log P(K ≤ k).
pub fn binomial_lcdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    binomial_cdf(g, k, a, false)
}

/// log P(K > k).
pub fn binomial_lccdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    binomial_cdf(g, k, a, true)
}

/// The success probability p.
pub fn probability(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[1])
}

/// The success probability σ(η).
pub fn probability_logit(g: &mut Graph, a: &[NodeId]) -> R {
    Ok(f1(g, Fun1::InvLogit, a[1]))
}
