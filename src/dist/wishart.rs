//! `wishart_cholesky(ν, L_S)` and `inv_wishart_cholesky(ν, L_S)` on the Cholesky factor L_W
//! of W = L_W L_Wᵀ, as in Stan: the Wishart (inverse Wishart) density of W with scale
//! S = L_S L_Sᵀ times the Jacobian |∂W/∂L_W| = 2^K Π Lₖₖ^{K − k + 1}.

use super::{affine, diagonal, f1, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Graph, NodeId, Shape};

/// log Γ_K(x) = K(K − 1)/4 log π + Σ_{j=1}^{K} lgamma(x + (1 − j)/2).
fn lmgamma(g: &mut Graph, k: usize, x: NodeId) -> R {
    let offs = g.constant(
        Shape::Vector(k),
        (1..=k).map(|j| (1.0 - j as f64) / 2.0).collect(),
    );
    let b = g.add_nodes(x, offs)?;
    let lg = f1(g, Fun1::Lgamma, b);
    let s = g.sum(lg);
    let c = (k * (k - 1)) as f64 / 4.0 * std::f64::consts::PI.ln();
    affine(g, c, 1.0, s)
}

/// (log-diagonal of L, 1..K as a vector, the check that the diagonal is positive).
fn log_diag(g: &mut Graph, l: NodeId) -> Result<(NodeId, NodeId, NodeId), crate::graph::Error> {
    let d = diagonal(g, l)?;
    let k = g.shape(l).rows();
    let ks = g.constant(Shape::Vector(k), (1..=k).map(|j| j as f64).collect());
    let c = positive(g, d);
    Ok((f1(g, Fun1::Log, d), ks, c))
}

/// The terms both densities share: −νK/2 log 2 − log Γ_K(ν/2) + K log 2, and ν > K − 1.
fn common(g: &mut Graph, nu: NodeId, k: usize) -> Result<(NodeId, NodeId), crate::graph::Error> {
    let half = affine(g, 0.0, 0.5, nu)?;
    let lm = lmgamma(g, k, half)?;
    let ln2 = std::f64::consts::LN_2;
    let a = affine(g, k as f64 * ln2, -(k as f64) / 2.0 * ln2, nu)?;
    let t = g.sub(a, lm)?;
    let km1 = affine(g, -(k as f64 - 1.0), 1.0, nu)?;
    Ok((t, g.support(km1, 0.0, f64::INFINITY, true)))
}

/// ½ ‖A⁻¹ B‖²_F for a lower-triangular A.
fn half_frobenius(g: &mut Graph, a: NodeId, b: NodeId) -> R {
    let z = g.tri_solve(a, b)?;
    let z2 = f1(g, Fun1::Square, z);
    let s = g.sum(z2);
    affine(g, 0.0, 0.5, s)
}

/// Σₖ (ν − k) log L_W,kk − ½ ‖L_S⁻¹ L_W‖²_F − ν Σ log L_S,kk − νK/2 log 2 − log Γ_K(ν/2)
/// + K log 2.
pub fn wishart_cholesky(g: &mut Graph, lw: NodeId, a: &[NodeId]) -> R {
    let (nu, ls) = (a[0], a[1]);
    let k = g.shape(lw).rows();
    let (dw, ks, cw) = log_diag(g, lw)?;
    let (ds, _, cs) = log_diag(g, ls)?;
    let sw = g.sum(dw);
    let nsw = g.mul(nu, sw)?;
    let kdw = g.dot(ks, dw)?;
    let t1 = g.sub(nsw, kdw)?;
    let fro = half_frobenius(g, ls, lw)?;
    let ss = g.sum(ds);
    let nss = g.mul(nu, ss)?;
    let (c, cnu) = common(g, nu, k)?;
    let pos = sum_all(g, &[t1, c])?;
    let neg = g.add_nodes(fro, nss)?;
    let lp = g.sub(pos, neg)?;
    with_support(g, lp, &[cw, cs, cnu])
}

/// −Σₖ (ν + k) log L_W,kk − ½ ‖L_W⁻¹ L_S‖²_F + ν Σ log L_S,kk − νK/2 log 2 − log Γ_K(ν/2)
/// + K log 2.
pub fn inv_wishart_cholesky(g: &mut Graph, lw: NodeId, a: &[NodeId]) -> R {
    let (nu, ls) = (a[0], a[1]);
    let k = g.shape(lw).rows();
    let (dw, ks, cw) = log_diag(g, lw)?;
    let (ds, _, cs) = log_diag(g, ls)?;
    let sw = g.sum(dw);
    let nsw = g.mul(nu, sw)?;
    let kdw = g.dot(ks, dw)?;
    let t1 = g.add_nodes(nsw, kdw)?;
    let fro = half_frobenius(g, lw, ls)?;
    let ss = g.sum(ds);
    let nss = g.mul(nu, ss)?;
    let (c, cnu) = common(g, nu, k)?;
    let pos = sum_all(g, &[nss, c])?;
    let neg = sum_all(g, &[t1, fro])?;
    let lp = g.sub(pos, neg)?;
    with_support(g, lp, &[cw, cs, cnu])
}

/// The degrees of freedom ν.
pub fn dof(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
