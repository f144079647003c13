//! `cholesky_corr[K]` (Stan's `cholesky_factor_corr[K]`): the lower Cholesky factor L of a
//! K×K correlation matrix, from K(K − 1)/2 free coordinates by tanh-transformed canonical
//! partial correlations (Stan's `cholesky_corr_constrain`). The coordinates fill the strict
//! lower triangle row by row ((2,1), (3,1), (3,2), …): with z = tanh(u),
//! L₁₁ = 1, Lᵢⱼ = zᵢⱼ √(1 − Σⱼ′<ⱼ Lᵢⱼ′²) for j < i, Lᵢᵢ = √(1 − Σⱼ<ᵢ Lᵢⱼ²).
//!
//! Since 1 − Σⱼ′<ⱼ Lᵢⱼ′² = Πⱼ′<ⱼ (1 − zᵢⱼ′²), the graph computes cᵢⱼ = log(1 − zᵢⱼ²) =
//! log 4 + log σ(2u) + log σ(−2u) (no cancellation when |u| is large), their running sums
//! along each row by one constant matrix product, and Lᵢⱼ = zᵢⱼ exp(½ Σⱼ′<ⱼ cᵢⱼ′).
//!
//! Log-Jacobian (of the map to the strict lower triangle, Stan's): Σ cᵢⱼ (tanh) plus
//! ½ Σᵢ Σ_{1 < j < i} log(1 − Σⱼ′<ⱼ Lᵢⱼ′²), which is linear in c: cᵢⱼ (1-based) gets the
//! weight 1 + (i − 1 − j)/2.

use super::{
    check_lower_triangular, matvec, pick, scatter, strict_lower_rows, weighted_sum, Error, Fun1, Fun2, Graph,
    Invalid, Lowered, NodeId, Shape, TypeEntry, TypeKind, TOLERANCE,
};
use nalgebra::DMatrix;

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CholeskyCorr,
    min_size: 1,
    free: |k| k * (k - 1) / 2,
    lower,
    constrain,
    unconstrain,
    log_jacobian,
    validate,
    two_size: None,
};

/// L (column-major) from free coordinates in row-major order, and Stan's log-Jacobian.
fn factor_f64(u: &[f64], k: usize) -> (Vec<f64>, f64) {
    let mut l = vec![0.0; k * k];
    let mut lj = 0.0;
    let mut p = 0;
    l[0] = 1.0;
    for i in 1..k {
        let mut sum_sqs: f64 = 0.0;
        for j in 0..i {
            let z = u[p].tanh();
            lj += (1.0 - z * z).ln();
            if j > 0 {
                lj += 0.5 * (1.0 - sum_sqs).ln();
            }
            let x = z * (1.0 - sum_sqs).sqrt();
            l[i + j * k] = x;
            sum_sqs += x * x;
            p += 1;
        }
        l[i + i * k] = (1.0 - sum_sqs).sqrt();
    }
    (l, lj)
}

fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    factor_f64(u, k).0
}

fn log_jacobian(u: &[f64], k: usize) -> f64 {
    factor_f64(u, k).1
}

/// Stan's `cholesky_corr_free`: zᵢⱼ = Lᵢⱼ / √(1 − Σⱼ′<ⱼ Lᵢⱼ′²), u = atanh(z), row by row.
pub(super) fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    let mut u = Vec::with_capacity(k * (k - 1) / 2);
    for i in 1..k {
        let mut sum_sqs: f64 = 0.0;
        for j in 0..i {
            let v = x[i + j * k];
            u.push((v / (1.0 - sum_sqs).sqrt()).atanh());
            sum_sqs += v * v;
        }
    }
    u
}

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

fn validate(x: &[f64], k: usize) -> Result<(), Invalid> {
    check_lower_triangular(x, k)?;
    for i in 0..k {
        let ss: f64 = (0..=i).map(|j| x[i + j * k] * x[i + j * k]).sum();
        if (ss - 1.0).abs() > TOLERANCE {
            return Err(Invalid::at(
                i,
                format!(
                    "row {} has squared norm {ss}, not 1 (L Lᵀ must have a unit diagonal)",
                    i + 1
                ),
            ));
        }
    }
    Ok(())
}
