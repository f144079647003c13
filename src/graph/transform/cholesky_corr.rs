//! `cholesky_corr[K]` as graph nodes (the map, its inverse and Stan's log-Jacobian:
//! `crate::constrained::cholesky_corr`).
//!
//! Since 1 − Σⱼ′<ⱼ Lᵢⱼ′² = Πⱼ′<ⱼ (1 − zᵢⱼ′²), the graph computes cᵢⱼ = log(1 − zᵢⱼ²) =
//! log 4 + log σ(2u) + log σ(−2u) (no cancellation when |u| is large), their running sums
//! along each row by one constant matrix product, and Lᵢⱼ = zᵢⱼ exp(½ Σⱼ′<ⱼ cᵢⱼ′).
//! The log-Jacobian is linear in c: cᵢⱼ (1-based) gets the weight 1 + (i − 1 − j)/2.

use super::{
    matvec, pick, scatter, weighted_sum, Error, Fun1, Fun2, Graph, Lowered, Lowering, NodeId, Shape, TypeKind,
};
use crate::constrained::strict_lower_rows;
use nalgebra::DMatrix;

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::CholeskyCorr,
    one_size: lower,
    two_size: None,
};

/// L and c = log(1 − tanh²u) as nodes, from free coordinates in row-major order.
pub(super) fn factor(g: &mut Graph, u: NodeId, k: usize) -> Result<(NodeId, NodeId), Error> {
    let rows = strict_lower_rows(k);
    let n = rows.len();
    let z = g.unary(Fun1::Tanh, u);
    let two = g.scalar(2.0);
    let u2 = g.binary(Fun2::Mul, two, u)?;
    let a = g.unary(Fun1::LogInvLogit, u2);
    let b = g.unary(Fun1::Log1mInvLogit, u2);
    let ab = g.binary(Fun2::Add, a, b)?;
    let log4 = g.scalar(4f64.ln());
    let c = g.binary(Fun2::Add, ab, log4)?;
    // Running sums along each row: one row of M per entry (i, j) (the sum over j′ < j),
    // then one per diagonal entry i ≥ 2 (the sum over the whole row).
    let mut m = DMatrix::zeros(n + k - 1, n);
    for (p, &(i, j)) in rows.iter().enumerate() {
        for (q, &(i2, j2)) in rows.iter().enumerate() {
            if i2 == i && j2 < j {
                m[(p, q)] = 1.0;
            }
            if i2 == i {
                m[(n + i - 1, q)] = 1.0;
            }
        }
    }
    let sums = matvec(g, &m, c)?;
    let half = g.scalar(0.5);
    let halves = g.binary(Fun2::Mul, half, sums)?;
    let h = g.unary(Fun1::Exp, halves);
    let h_off = pick(g, h, 0..n)?;
    let off = g.binary(Fun2::Mul, z, h_off)?;
    let diag = pick(g, h, n..n + k - 1)?;
    let l_off = scatter(g, off, k, &rows)?;
    let diag_at: Vec<(usize, usize)> = (1..k).map(|i| (i, i)).collect();
    let l_diag = scatter(g, diag, k, &diag_at)?;
    let mut corner = vec![0.0; k * k];
    corner[0] = 1.0;
    let corner = g.constant(Shape::Matrix(k, k), corner);
    let l = g.binary(Fun2::Add, l_off, l_diag)?;
    Ok((g.binary(Fun2::Add, l, corner)?, c))
}

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let (l, c) = factor(g, u, k)?;
    let w = strict_lower_rows(k)
        .into_iter()
        .map(|(i, j)| 1.0 + 0.5 * (i - j - 1) as f64)
        .collect();
    Ok((l, Some(weighted_sum(g, c, w)?)))
}
