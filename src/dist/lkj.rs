//! `lkj_corr(η)` on a correlation matrix R and `lkj_corr_cholesky(η)` on its Cholesky factor
//! L (R = L Lᵀ), as in Stan: p(R) ∝ det(R)^{η − 1}, normalised by the constant of
//! Lewandowski, Kurowicka and Joe (2009), and p(L) = p(L Lᵀ) |∂R/∂L|.
//!
//! # Reference
//! Lewandowski, Kurowicka and Joe (2009), "Generating random correlation matrices based on
//! vines and extended onion method", J. Multivariate Analysis 100, eq. (16).

use super::{affine, diagonal, f1, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId, Shape};

/// log c_K(η) = Σ_{i=1}^{K−1} (K − i) [(2η − 2 + K − i) log 2 + log B(bᵢ, bᵢ)] with
/// bᵢ = η + (K − i − 1)/2: the log of the integral of det(R)^{η − 1} over K×K correlation
/// matrices.
pub(crate) fn log_normaliser(g: &mut Graph, eta: NodeId, k: usize) -> R {
    if k < 2 {
        return Ok(g.scalar(0.0));
    }
    let m = k - 1;
    let w: Vec<f64> = (1..k).map(|i| (k - i) as f64).collect();
    let off: Vec<f64> = (1..k).map(|i| (k - i - 1) as f64 / 2.0).collect();
    let offs = g.constant(Shape::Vector(m), off);
    let b = g.add_nodes(eta, offs)?;
    let lg = f1(g, Fun1::Lgamma, b);
    let b2 = affine(g, 0.0, 2.0, b)?;
    let lg2 = f1(g, Fun1::Lgamma, b2);
    let two = g.scalar(2.0);
    let lg_twice = g.mul(two, lg)?;
    let lb = g.sub(lg_twice, lg2)?;
    let wk = g.constant(Shape::Vector(m), w.clone());
    let t1 = g.dot(wk, lb)?;
    let (sw, sw2): (f64, f64) = (w.iter().sum(), w.iter().map(|x| x * x).sum());
    let ln2 = std::f64::consts::LN_2;
    let t2 = affine(g, ln2 * (sw2 - 2.0 * sw), 2.0 * ln2 * sw, eta)?;
    g.add_nodes(t1, t2)
}

/// log Lₖₖ for k = 2..K (the first is 1 for a Cholesky factor of a correlation matrix).
fn log_diag_tail(g: &mut Graph, l: NodeId) -> Result<(NodeId, NodeId), crate::graph::Error> {
    let d = diagonal(g, l)?;
    let k = g.shape(l).rows();
    let tail = g.gather_flat(d, (1..k as u32).collect(), Shape::Vector(k - 1))?;
    let c = positive(g, d);
    Ok((f1(g, Fun1::Log, tail), c))
}

/// Σ_{k=2}^{K} (K − k + 2η − 2) log Lₖₖ − log c_K(η).
pub fn lkj_corr_cholesky(g: &mut Graph, l: NodeId, a: &[NodeId]) -> R {
    let eta = a[0];
    let k = g.shape(l).rows();
    let lc = log_normaliser(g, eta, k)?;
    let nlc = g.neg(lc);
    if k < 2 {
        let c = positive(g, eta);
        return with_support(g, nlc, &[c]);
    }
    let (ld, c_diag) = log_diag_tail(g, l)?;
    let w = g.constant(Shape::Vector(k - 1), (2..=k).map(|j| (k - j) as f64).collect());
    let t1 = g.dot(w, ld)?;
    let s = g.sum(ld);
    let e2 = affine(g, -2.0, 2.0, eta)?;
    let t2 = g.mul(e2, s)?;
    let lp = sum_all(g, &[t1, t2, nlc])?;
    let c = positive(g, eta);
    with_support(g, lp, &[c, c_diag])
}

/// 0 when R is a correlation matrix's shape: a unit diagonal and symmetric, within Stan's
/// tolerance (positive definiteness is left to the Cholesky factorisation); −∞ otherwise.
fn unit_diagonal_and_symmetric(g: &mut Graph, r: NodeId) -> R {
    let tol = crate::graph::transform::TOLERANCE;
    let d = diagonal(g, r)?;
    let unit = g.support(d, 1.0 - tol, 1.0 + tol, false);
    let rt = g.transpose(r);
    let asym = g.sub(r, rt)?;
    let sym = g.support(asym, -tol, tol, false);
    g.add_nodes(unit, sym)
}

/// (η − 1) log det R − log c_K(η), log det R = 2 Σ log Lₖₖ of R's Cholesky factor; −∞ when
/// R is not a correlation matrix (as Stan rejects it: an `lkj_corr` on a Cholesky factor
/// wants `lkj_corr_cholesky`).
pub fn lkj_corr(g: &mut Graph, r: NodeId, a: &[NodeId]) -> R {
    let eta = a[0];
    let k = g.shape(r).rows();
    let lc = log_normaliser(g, eta, k)?;
    let l = g.cholesky(r)?;
    let d = diagonal(g, l)?;
    let ld = f1(g, Fun1::Log, d);
    let s = g.sum(ld);
    let e1 = affine(g, -2.0, 2.0, eta)?;
    let t = g.mul(e1, s)?;
    let lp = g.sub(t, lc)?;
    let c = positive(g, eta);
    let corr = unit_diagonal_and_symmetric(g, r)?;
    with_support(g, lp, &[c, corr])
}

/// The shape η.
pub fn shape(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
