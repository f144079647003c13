//! `chi_square(ν)`, `inv_chi_square(ν)` and `scaled_inv_chi_square(ν, s)` as their gamma and
//! inverse-gamma forms: gamma(ν/2, ½), inv_gamma(ν/2, ½) and inv_gamma(ν/2, ν s²/2), with
//! the same log CDFs.

use super::registry::DensityFn;
use super::{affine, exponential, f1, gamma_cdf, R};
use crate::graph::{Fun1, Graph, NodeId};

/// (ν/2, ½).
fn chi_args(g: &mut Graph, a: &[NodeId]) -> Result<[NodeId; 2], crate::graph::Error> {
    Ok([affine(g, 0.0, 0.5, a[0])?, g.scalar(0.5)])
}

/// (ν/2, ν s²/2).
fn scaled_args(g: &mut Graph, a: &[NodeId]) -> Result<[NodeId; 2], crate::graph::Error> {
    let half_nu = affine(g, 0.0, 0.5, a[0])?;
    let s2 = f1(g, Fun1::Square, a[1]);
    Ok([half_nu, g.mul(half_nu, s2)?])
}

fn via(
    g: &mut Graph,
    y: NodeId,
    a: &[NodeId],
    args: fn(&mut Graph, &[NodeId]) -> Result<[NodeId; 2], crate::graph::Error>,
    f: DensityFn,
) -> R {
    let b = args(g, a)?;
    f(g, y, &b)
}

/// log χ²(y | ν) = log Gamma(y | ν/2, ½).
pub fn chi_square(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, exponential::gamma)
}

/// log P(ν/2, y/2).
pub fn chi_square_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, gamma_cdf::gamma_lcdf)
}

/// log Q(ν/2, y/2).
pub fn chi_square_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, gamma_cdf::gamma_lccdf)
}

/// log Inv-χ²(y | ν) = log InvGamma(y | ν/2, ½).
pub fn inv_chi_square(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, exponential::inv_gamma)
}

/// log Q(ν/2, 1/(2y)).
pub fn inv_chi_square_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, gamma_cdf::inv_gamma_lcdf)
}

/// log P(ν/2, 1/(2y)).
pub fn inv_chi_square_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, chi_args, gamma_cdf::inv_gamma_lccdf)
}

/// log Scaled-Inv-χ²(y | ν, s) = log InvGamma(y | ν/2, ν s²/2).
pub fn scaled_inv_chi_square(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, scaled_args, exponential::inv_gamma)
}

/// log Q(ν/2, ν s²/(2y)).
pub fn scaled_inv_chi_square_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, scaled_args, gamma_cdf::inv_gamma_lcdf)
}

/// log P(ν/2, ν s²/(2y)).
pub fn scaled_inv_chi_square_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    via(g, y, a, scaled_args, gamma_cdf::inv_gamma_lccdf)
}

/// The mean ν.
pub fn mean(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// The mean 1/(ν − 2) (finite for ν > 2).
pub fn inv_mean(g: &mut Graph, a: &[NodeId]) -> R {
    let d = affine(g, -2.0, 1.0, a[0])?;
    let one = g.scalar(1.0);
    g.div(one, d)
}

/// The mean ν s²/(ν − 2) (finite for ν > 2).
pub fn scaled_mean(g: &mut Graph, a: &[NodeId]) -> R {
    let d = affine(g, -2.0, 1.0, a[0])?;
    let s2 = f1(g, Fun1::Square, a[1]);
    let n = g.mul(a[0], s2)?;
    g.div(n, d)
}
