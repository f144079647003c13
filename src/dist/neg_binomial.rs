//! `neg_binomial_2(μ, φ)` (mean μ, overdispersion φ: variance μ + μ²/φ) and
//! `neg_binomial_2_log(η, φ)` (log mean η), as in Stan, on counts 0, 1, 2, …; the log CDFs
//! of `neg_binomial_2` through the regularised incomplete beta function,
//! P(N ≤ n) = I_{φ/(μ+φ)}(φ, n + 1).

use super::{affine, f1, log_add_exp, non_negative, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Fun3, Graph, NodeId};

/// lgamma(n + φ) − lgamma(n + 1) − lgamma(φ): the log binomial coefficient C(n + φ − 1, n).
fn log_coefficient(g: &mut Graph, n: NodeId, phi: NodeId) -> R {
    let nphi = g.add_nodes(n, phi)?;
    let n1 = affine(g, 1.0, 1.0, n)?;
    let (a, b, c) = (
        f1(g, Fun1::Lgamma, nphi),
        f1(g, Fun1::Lgamma, n1),
        f1(g, Fun1::Lgamma, phi),
    );
    let ab = g.sub(a, b)?;
    g.sub(ab, c)
}

/// log C(n + φ − 1, n) + n (log μ − log(μ + φ)) − φ log1p(μ/φ).
pub fn neg_binomial_2(g: &mut Graph, n: NodeId, a: &[NodeId]) -> R {
    let (mu, phi) = (a[0], a[1]);
    let c = log_coefficient(g, n, phi)?;
    let lmu = f1(g, Fun1::Log, mu);
    let mp = g.add_nodes(mu, phi)?;
    let lmp = f1(g, Fun1::Log, mp);
    let d = g.sub(lmu, lmp)?;
    let t1 = g.mul(n, d)?;
    let r = g.div(mu, phi)?;
    let l1p = f1(g, Fun1::Log1p, r);
    let t2 = g.mul(phi, l1p)?;
    let t2 = g.neg(t2);
    let lp = sum_all(g, &[c, t1, t2])?;
    let (c1, c2, c3) = (positive(g, mu), positive(g, phi), non_negative(g, n));
    with_support(g, lp, &[c1, c2, c3])
}

/// log C(n + φ − 1, n) + n η + φ log φ − (n + φ) log(e^η + φ).
pub fn neg_binomial_2_log(g: &mut Graph, n: NodeId, a: &[NodeId]) -> R {
    let (eta, phi) = (a[0], a[1]);
    let c = log_coefficient(g, n, phi)?;
    let lphi = f1(g, Fun1::Log, phi);
    let lse = log_add_exp(g, eta, lphi)?;
    let nphi = g.add_nodes(n, phi)?;
    let t = g.mul(nphi, lse)?;
    let t = g.neg(t);
    let ne = g.mul(n, eta)?;
    let pl = g.mul(phi, lphi)?;
    let lp = sum_all(g, &[c, ne, pl, t])?;
    let (c1, c2) = (positive(g, phi), non_negative(g, n));
    with_support(g, lp, &[c1, c2])
}

/// log I_{φ/(μ+φ)}(φ, n + 1) (`upper = false`) or log(1 − I), with the support checks.
fn neg_binomial_2_cdf(g: &mut Graph, n: NodeId, a: &[NodeId], upper: bool) -> R {
    let (mu, phi) = (a[0], a[1]);
    let mp = g.add_nodes(mu, phi)?;
    let p = g.div(phi, mp)?;
    let n1 = affine(g, 1.0, 1.0, n)?;
    let f = if upper {
        Fun3::LogBetaIncC
    } else {
        Fun3::LogBetaInc
    };
    let lp = g.ternary(f, [p, phi, n1])?;
    let (c1, c2, c3) = (positive(g, mu), positive(g, phi), non_negative(g, n));
    with_support(g, lp, &[c1, c2, c3])
}

/// log P(N ≤ n).
pub fn neg_binomial_2_lcdf(g: &mut Graph, n: NodeId, a: &[NodeId]) -> R {
    neg_binomial_2_cdf(g, n, a, false)
}

/// log P(N > n).
pub fn neg_binomial_2_lccdf(g: &mut Graph, n: NodeId, a: &[NodeId]) -> R {
    neg_binomial_2_cdf(g, n, a, true)
}

/// The mean μ.
pub fn mean(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// The mean e^η.
pub fn mean_log(g: &mut Graph, a: &[NodeId]) -> R {
    Ok(f1(g, Fun1::Exp, a[0]))
}
