//! `multi_normal(μ, Σ)` and `multi_normal_cholesky(μ, L)` on a vector, or on each row of a
//! matrix (one observation per row); μ a vector (shared) or a matrix of the same shape.

use super::{f1, HALF_LOG_2PI, R};
use crate::graph::{Error, Fun1, Graph, NodeId, Shape};

/// Σ log Lᵢᵢ.
fn log_det_half(g: &mut Graph, l: NodeId) -> R {
    let n = g.shape(l).rows();
    let idx = (0..n).map(|i| (i + i * n) as u32).collect();
    let d = g.gather_flat(l, idx, Shape::Vector(n))?;
    let ld = f1(g, Fun1::Log, d);
    Ok(g.sum(ld))
}

/// The residuals as columns: y − μ (n) or (Y − μ)ᵀ (n×N).
fn residual_columns(g: &mut Graph, y: NodeId, mu: NodeId) -> R {
    match g.shape(y) {
        Shape::Matrix(rows, _) => {
            let mu_rows = match g.shape(mu) {
                Shape::Vector(_) => {
                    let ones = g.constant(Shape::Matrix(rows, 1), vec![1.0; rows]);
                    let mt = g.transpose(mu);
                    g.matmul(ones, mt)?
                }
                _ => mu,
            };
            let d = g.sub(y, mu_rows)?;
            Ok(g.transpose(d))
        }
        _ => g.sub(y, mu),
    }
}

/// |L⁻¹(y − μ)|² per observation (a scalar, or a vector with one entry per row of y).
fn mahalanobis(g: &mut Graph, y: NodeId, mu: NodeId, l: NodeId) -> R {
    let n = g.shape(l).rows();
    let d = residual_columns(g, y, mu)?;
    if g.shape(d).rows() != n {
        return Err(Error::Shape {
            op: "multi_normal",
            left: g.shape(y),
            right: g.shape(l),
        });
    }
    let z = g.tri_solve(l, d)?;
    let z2 = f1(g, Fun1::Square, z);
    Ok(match g.shape(z2) {
        Shape::Matrix(..) => {
            let ones = g.constant(Shape::Matrix(1, n), vec![1.0; n]);
            let row = g.matmul(ones, z2)?;
            g.transpose(row)
        }
        _ => g.sum(z2),
    })
}

/// log N(y | μ, L Lᵀ) per observation: −½|L⁻¹(y − μ)|² − Σ log Lᵢᵢ − (n/2) log 2π.
pub fn multi_normal_cholesky(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (mu, l) = (a[0], a[1]);
    let n = g.shape(l).rows();
    let quad = mahalanobis(g, y, mu, l)?;
    let ld = log_det_half(g, l)?;
    let h = g.scalar(-0.5);
    let q = g.mul(h, quad)?;
    let c = g.scalar(-(n as f64) * HALF_LOG_2PI);
    let q = g.add_nodes(q, c)?;
    g.sub(q, ld)
}

/// log t_ν(y | μ, Σ) per observation, through the Cholesky factor L of Σ:
/// lgamma((ν + n)/2) − lgamma(ν/2) − (n/2) log(νπ) − Σ log Lᵢᵢ − (ν + n)/2 · log1p(q/ν)
/// with q = |L⁻¹(y − μ)|².
pub fn multi_student_t(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (nu, mu) = (a[0], a[1]);
    let l = g.cholesky(a[2])?;
    let n = g.shape(l).rows() as f64;
    let quad = mahalanobis(g, y, mu, l)?;
    let r = g.div(quad, nu)?;
    let l1p = f1(g, Fun1::Log1p, r);
    let half_nun = super::affine(g, 0.5 * n, 0.5, nu)?;
    let tail = g.mul(half_nun, l1p)?;
    let half_nu = super::affine(g, 0.0, 0.5, nu)?;
    let (lg1, lg2) = (f1(g, Fun1::Lgamma, half_nun), f1(g, Fun1::Lgamma, half_nu));
    let lnu = f1(g, Fun1::Log, nu);
    let c = super::affine(g, -0.5 * n * std::f64::consts::PI.ln(), -0.5 * n, lnu)?;
    let ld = log_det_half(g, l)?;
    let head = super::sum_all(g, &[lg1, c])?;
    let head = g.sub(head, lg2)?;
    let head = g.sub(head, ld)?;
    let lp = g.sub(head, tail)?;
    let ok = super::positive(g, nu);
    super::with_support(g, lp, &[ok])
}

/// The location μ (the second argument of `multi_student_t`).
pub fn location_t(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[1])
}

/// log N(y | μ, Σ) via the Cholesky factor of Σ (−∞ when Σ is not positive definite).
pub fn multi_normal(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let l = g.cholesky(a[1])?;
    multi_normal_cholesky(g, y, &[a[0], l])
}

/// The location μ.
pub fn location(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
