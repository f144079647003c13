//! `skew_normal(ξ, ω, α)` (location ξ, scale ω, shape α), as in Stan:
//! 2/ω · φ(z) · Φ(αz) with z = (y − ξ)/ω; its log CDFs through Owen's T function
//! ([`crate::autodiff::owen`]).

use super::{f1, positive, sum_all, with_support, z_score, HALF_LOG_2PI, R};
use crate::graph::{Fun1, Fun2, Graph, NodeId};

/// log 2 − ½ log 2π − log ω − ½z² + log Φ(αz).
pub fn skew_normal(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (xi, omega, alpha) = (a[0], a[1], a[2]);
    let z = z_score(g, y, xi, omega)?;
    let z2 = f1(g, Fun1::Square, z);
    let q = super::affine(g, std::f64::consts::LN_2 - HALF_LOG_2PI, -0.5, z2)?;
    let lo = f1(g, Fun1::Log, omega);
    let lo = g.neg(lo);
    let az = g.mul(alpha, z)?;
    let lphi = f1(g, Fun1::LogPhi, az);
    let lp = sum_all(g, &[q, lo, lphi])?;
    let c = positive(g, omega);
    with_support(g, lp, &[c])
}

/// log F(z; α) (`upper = false`) or log(1 − F(z; α)) at z = (y − ξ)/ω, with ω > 0.
fn skew_normal_cdf(g: &mut Graph, y: NodeId, a: &[NodeId], upper: bool) -> R {
    let (xi, omega, alpha) = (a[0], a[1], a[2]);
    let z = z_score(g, y, xi, omega)?;
    let f = if upper {
        Fun2::LogSkewNormalCcdf
    } else {
        Fun2::LogSkewNormalCdf
    };
    let lp = g.binary(f, z, alpha)?;
    let c = positive(g, omega);
    with_support(g, lp, &[c])
}

/// log P(Y ≤ y).
pub fn skew_normal_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    skew_normal_cdf(g, y, a, false)
}

/// log P(Y > y).
pub fn skew_normal_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    skew_normal_cdf(g, y, a, true)
}

/// The mean ξ + ω δ √(2/π) with δ = α/√(1 + α²).
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let a2 = f1(g, Fun1::Square, a[2]);
    let one = g.scalar(1.0);
    let s = g.add_nodes(a2, one)?;
    let r = f1(g, Fun1::Sqrt, s);
    let d = g.div(a[2], r)?;
    let k = g.scalar((2.0 / std::f64::consts::PI).sqrt());
    let kd = g.mul(k, d)?;
    let wkd = g.mul(a[1], kd)?;
    g.add_nodes(a[0], wkd)
}
