//! `exp_mod_normal(μ, σ, λ)`: a normal(μ, σ) plus an independent exponential(λ), as in Stan
//! (arguments in Stan's current order), with log CDFs through log Φ.

use super::{affine, f1, log_add_exp, log_diff_exp, positive, sum_all, with_support, z_score, R};
use crate::graph::{Fun1, Graph, NodeId};

/// (u, v, log Φ(u − λσ)) with u = (y − μ)/σ and v = −λ(y − μ) + ½λ²σ²: the pieces shared by
/// the density and the CDFs.
fn pieces(g: &mut Graph, y: NodeId, a: &[NodeId]) -> Result<[NodeId; 3], crate::graph::Error> {
    let (mu, sigma, lambda) = (a[0], a[1], a[2]);
    let u = z_score(g, y, mu, sigma)?;
    let ls = g.mul(lambda, sigma)?;
    let w = g.sub(u, ls)?;
    let lphi = f1(g, Fun1::LogPhi, w);
    let d = g.sub(y, mu)?;
    let ld = g.mul(lambda, d)?;
    let ls2 = f1(g, Fun1::Square, ls);
    let h = affine(g, 0.0, 0.5, ls2)?;
    let v = g.sub(h, ld)?;
    Ok([u, v, lphi])
}

fn checks(g: &mut Graph, a: &[NodeId]) -> [NodeId; 2] {
    [positive(g, a[1]), positive(g, a[2])]
}

/// log λ + λ(μ + ½λσ² − y) + log Φ((y − μ)/σ − λσ).
pub fn exp_mod_normal(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let [_, v, lphi] = pieces(g, y, a)?;
    let ll = f1(g, Fun1::Log, a[2]);
    let lp = sum_all(g, &[ll, v, lphi])?;
    let c = checks(g, a);
    with_support(g, lp, &c)
}

/// log(Φ(u) − e^{v} Φ(u − λσ)).
pub fn exp_mod_normal_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let [u, v, lphi] = pieces(g, y, a)?;
    let lu = f1(g, Fun1::LogPhi, u);
    let b = g.add_nodes(v, lphi)?;
    let lp = log_diff_exp(g, lu, b)?;
    let c = checks(g, a);
    with_support(g, lp, &c)
}

/// log(Φ(−u) + e^{v} Φ(u − λσ)).
pub fn exp_mod_normal_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let [u, v, lphi] = pieces(g, y, a)?;
    let nu = g.neg(u);
    let lu = f1(g, Fun1::LogPhi, nu);
    let b = g.add_nodes(v, lphi)?;
    let lp = log_add_exp(g, lu, b)?;
    let c = checks(g, a);
    with_support(g, lp, &c)
}

/// The mean μ + 1/λ.
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let one = g.scalar(1.0);
    let inv = g.div(one, a[2])?;
    g.add_nodes(a[0], inv)
}
