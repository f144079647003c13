//! The Student-t family: `student_t(ν, μ, σ)`, `cauchy(μ, σ)` and `half_cauchy(σ)`
//! (normalised on x ≥ 0), with the Cauchy log CDFs through atan and the Student-t ones
//! through the regularised incomplete beta function.

use std::f64::consts::PI;

use super::{affine, f1, non_negative, positive, sum_all, with_support, z_score, R};
use crate::graph::{Fun1, Fun2, Graph, NodeId};

/// lgamma((ν+1)/2) − lgamma(ν/2) − ½ log(νπ) − log σ − (ν+1)/2 · log1p(z²/ν).
pub fn student_t(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let (nu, mu, sigma) = (a[0], a[1], a[2]);
    let z = z_score(g, x, mu, sigma)?;
    let half_nu1 = affine(g, 0.5, 0.5, nu)?;
    let half_nu = affine(g, 0.0, 0.5, nu)?;
    let lg1 = f1(g, Fun1::Lgamma, half_nu1);
    let lg2 = f1(g, Fun1::Lgamma, half_nu);
    let nu_pi = affine(g, 0.0, PI, nu)?;
    let l_nu_pi = f1(g, Fun1::Log, nu_pi);
    let half_l = affine(g, 0.0, -0.5, l_nu_pi)?;
    let z2 = f1(g, Fun1::Square, z);
    let r = g.div(z2, nu)?;
    let l1p = f1(g, Fun1::Log1p, r);
    let tail = g.mul(half_nu1, l1p)?;
    let ls = f1(g, Fun1::Log, sigma);
    let a1 = g.sub(lg1, lg2)?;
    let a2 = g.sub(half_l, ls)?;
    let a3 = g.sub(a2, tail)?;
    let lp = sum_all(g, &[a1, a3])?;
    let (c1, c2) = (positive(g, nu), positive(g, sigma));
    with_support(g, lp, &[c1, c2])
}

/// log F(±z | ν) for z = (x − μ)/σ (`sign` −1 for the complementary CDF, by symmetry).
fn student_t_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], sign: f64) -> R {
    let (nu, mu, sigma) = (a[0], a[1], a[2]);
    let z = z_score(g, x, mu, sigma)?;
    let z = if sign < 0.0 { g.neg(z) } else { z };
    let lp = g.binary(Fun2::LogStudentTCdf, z, nu)?;
    let (c1, c2) = (positive(g, nu), positive(g, sigma));
    with_support(g, lp, &[c1, c2])
}

/// log F((x − μ)/σ | ν) through the regularised incomplete beta function.
pub fn student_t_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    student_t_cdf(g, x, a, 1.0)
}

/// log(1 − F((x − μ)/σ | ν)) = log F(−(x − μ)/σ | ν).
pub fn student_t_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    student_t_cdf(g, x, a, -1.0)
}

/// The location μ (the second argument).
pub fn location(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[1])
}

/// −log π − log σ − log1p(z²).
fn cauchy_terms(g: &mut Graph, z: NodeId, sigma: NodeId) -> R {
    let z2 = f1(g, Fun1::Square, z);
    let l1p = f1(g, Fun1::Log1p, z2);
    let ls = f1(g, Fun1::Log, sigma);
    let s = g.add_nodes(l1p, ls)?;
    affine(g, -PI.ln(), -1.0, s)
}

/// log Cauchy(x | μ, σ).
pub fn cauchy(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    let lp = cauchy_terms(g, z, a[1])?;
    let c = positive(g, a[1]);
    with_support(g, lp, &[c])
}

/// log(½ ± atan(z)/π).
fn cauchy_cdf(g: &mut Graph, z: NodeId, sigma: NodeId, sign: f64) -> R {
    let at = f1(g, Fun1::Atan, z);
    let p = affine(g, 0.5, sign / PI, at)?;
    let lp = f1(g, Fun1::Log, p);
    let c = positive(g, sigma);
    with_support(g, lp, &[c])
}

/// log(½ + atan(z)/π).
pub fn cauchy_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    cauchy_cdf(g, z, a[1], 1.0)
}

/// log(½ − atan(z)/π).
pub fn cauchy_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = z_score(g, x, a[0], a[1])?;
    cauchy_cdf(g, z, a[1], -1.0)
}

/// log 2 + log Cauchy(x | 0, σ) on x ≥ 0.
pub fn half_cauchy(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    let z = g.div(x, a[0])?;
    let c = cauchy_terms(g, z, a[0])?;
    let lp = affine(g, std::f64::consts::LN_2, 1.0, c)?;
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

fn half_cauchy_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], upper: bool) -> R {
    let z = g.div(x, a[0])?;
    let at = f1(g, Fun1::Atan, z);
    let p = if upper {
        affine(g, 1.0, -2.0 / PI, at)?
    } else {
        affine(g, 0.0, 2.0 / PI, at)?
    };
    let lp = f1(g, Fun1::Log, p);
    let (c1, c2) = (positive(g, a[0]), non_negative(g, x));
    with_support(g, lp, &[c1, c2])
}

/// log(2/π · atan(x/σ)).
pub fn half_cauchy_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    half_cauchy_cdf(g, x, a, false)
}

/// log(1 − 2/π · atan(x/σ)).
pub fn half_cauchy_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    half_cauchy_cdf(g, x, a, true)
}

/// The median σ (the mean does not exist).
pub fn half_cauchy_median(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
