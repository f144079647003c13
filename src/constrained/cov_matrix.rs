//! `cov_matrix[K]`: a K×K symmetric positive definite matrix Σ = L Lᵀ, from K(K + 1)/2 free
//! coordinates: L is the `cholesky_cov` factor of the same coordinates (Stan's
//! `cov_matrix_constrain`: the lower triangle row by row, the diagonal as logs).
//!
//! Log-Jacobian (of the map to the lower triangle of Σ, Stan's): K log 2 +
//! Σₖ (K − k + 2) uₖₖ over the diagonal's coordinates (k = 1..K): the factor 2^K Πₖ Lₖₖ^(K−k+1)
//! of Σ = L Lᵀ times Πₖ Lₖₖ of the log.

use super::{check_symmetric, cholesky, cholesky_cov, Invalid, TypeEntry, TypeKind};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CovMatrix,
    min_size: 1,
    free: |k| k * (k + 1) / 2,
    constrain,
    unconstrain,
    log_jacobian,
    validate,
    two_size: None,
};

/// The weight of each diagonal coordinate in the log-Jacobian: K − k + 2 for k = 1..K.
pub(crate) fn weights(k: usize) -> Vec<f64> {
    (0..k).map(|i| (k - i + 1) as f64).collect()
}

fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    let l = super::matrix(&(cholesky_cov::ENTRY.constrain)(u, k), k);
    (&l * l.transpose()).as_slice().to_vec()
}

fn log_jacobian(u: &[f64], k: usize) -> f64 {
    let d = cholesky_cov::diagonal(k);
    k as f64 * 2f64.ln() + weights(k).iter().zip(&d).map(|(w, &p)| w * u[p]).sum::<f64>()
}

fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    let l = cholesky(x, k).expect("unconstrain is given a valid covariance matrix");
    cholesky_cov::unconstrain(l.as_slice(), k)
}

fn validate(x: &[f64], k: usize) -> Result<(), Invalid> {
    check_symmetric(x, k)?;
    cholesky(x, k).map(|_| ())
}
