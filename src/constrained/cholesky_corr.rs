//! `cholesky_corr[K]` (Stan's `cholesky_factor_corr[K]`): the lower Cholesky factor L of a
//! K×K correlation matrix, from K(K − 1)/2 free coordinates by tanh-transformed canonical
//! partial correlations (Stan's `cholesky_corr_constrain`). The coordinates fill the strict
//! lower triangle row by row ((2,1), (3,1), (3,2), …): with z = tanh(u),
//! L₁₁ = 1, Lᵢⱼ = zᵢⱼ √(1 − Σⱼ′<ⱼ Lᵢⱼ′²) for j < i, Lᵢᵢ = √(1 − Σⱼ<ᵢ Lᵢⱼ²).
//!
//! Log-Jacobian (of the map to the strict lower triangle, Stan's): Σ cᵢⱼ with
//! cᵢⱼ = log(1 − zᵢⱼ²) (tanh) plus ½ Σᵢ Σ_{1 < j < i} log(1 − Σⱼ′<ⱼ Lᵢⱼ′²), which is
//! linear in c (1 − Σⱼ′<ⱼ Lᵢⱼ′² = Πⱼ′<ⱼ (1 − zᵢⱼ′²)): cᵢⱼ (1-based) gets the weight
//! 1 + (i − 1 − j)/2.

use super::{check_lower_triangular, Invalid, TypeEntry, TypeKind, TOLERANCE};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CholeskyCorr,
    min_size: 1,
    free: |k| k * (k - 1) / 2,
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
pub(crate) fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
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
