//! The normal family: `normal(μ, σ)`, `lognormal(μ, σ)`, `half_normal(σ)` (normalised on
//! x ≥ 0), with log CDFs through log Φ.

use super::{affine, f1, non_negative, positive, with_support, z_score, HALF_LOG_2PI, R};
use crate::graph::{Fun1, Graph, NodeId};

/// −½z² − log σ − ½ log 2π for z = (x − μ)/σ.
fn std_normal_terms(g: &mut Graph, z: NodeId, sigma: NodeId) -> R {
    let z2 = f1(g, Fun1::Square, z);
    let a = affine(g, -HALF_LOG_2PI, -0.5, z2)?;
    let ls = f1(g, Fun1::Log, sigma);
    g.sub(a, ls)
}

/// log N(x | μ, σ).
pub fn normal(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let lp = std_normal_terms(g, z, a[1])?;
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log Φ((x − μ)/σ).
pub fn normal_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let lp = f1(g, Fun1::LogPhi, z);
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log Φ(−(x − μ)/σ).
pub fn normal_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let nz = g.neg(z);
    let lp = f1(g, Fun1::LogPhi, nz);
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// The location μ (the first argument).
pub fn location(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// log LogNormal(x | μ, σ) = log N(log x | μ, σ) − log x.
pub fn lognormal(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let lx = f1(g, Fun1::Log, x);
    let z = z_score(g, lx, a[0], a[1])?;
    let n = std_normal_terms(g, z, a[1])?;
    let lp = g.sub(n, lx)?;
    let (c1, c2) = (positive(g, a[1]), positive(g, x));
    with_support(g, lp, &[c1, c2])
}

/// log Φ((log x − μ)/σ).
pub fn lognormal_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let lx = f1(g, Fun1::Log, x);
    normal_lcdf(g, lx, a)
}

/// log Φ(−(log x − μ)/σ).
pub fn lognormal_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let lx = f1(g, Fun1::Log, x);
    normal_lccdf(g, lx, a)
}

/// exp(μ + σ²/2).
pub fn lognormal_mean(g: &mut Graph, a: &[NodeId]) -> R {
    let s2 = f1(g, Fun1::Square, a[1]);
    let h = affine(g, 0.0, 0.5, s2)?;
    let m = g.add_nodes(a[0], h)?;
    Ok(f1(g, Fun1::Exp, m))
}

/// log 2 + log N(x | 0, σ) on x ≥ 0.
pub fn half_normal(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = g.div(x, a[0])?;
    let n = std_normal_terms(g, z, a[0])?;
    let ln2 = g.scalar(std::f64::consts::LN_2);
    let lp = g.add_nodes(n, ln2)?;
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// log(2Φ(x/σ) − 1) = log expm1(log 2 + log Φ(x/σ)).
pub fn half_normal_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = g.div(x, a[0])?;
    let lphi = f1(g, Fun1::LogPhi, z);
    let t = affine(g, std::f64::consts::LN_2, 1.0, lphi)?;
    let e = f1(g, Fun1::Expm1, t);
    let lp = f1(g, Fun1::Log, e);
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// log 2 + log Φ(−x/σ).
pub fn half_normal_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = g.div(x, a[0])?;
    let nz = g.neg(z);
    let lphi = f1(g, Fun1::LogPhi, nz);
    let lp = affine(g, std::f64::consts::LN_2, 1.0, lphi)?;
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// σ √(2/π).
pub fn half_normal_mean(g: &mut Graph, a: &[NodeId]) -> R {
    affine(g, 0.0, (2.0 / std::f64::consts::PI).sqrt(), a[0])
}
