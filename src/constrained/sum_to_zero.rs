//! `sum_to_zero_vector[K]`: K entries summing to 0, from K − 1 free coordinates by Stan's
//! isometric transform (Stan ≥ 2.36, `sum_to_zero_constrain`: the inverse isometric
//! log-ratio transform in pivot coordinates). The map is linear, x = A u, with A a K×(K − 1)
//! matrix whose orthonormal columns are orthogonal to 1; its inverse is u = Aᵀ x.
//!
//! Log-Jacobian: 0, as in Stan. An isometry keeps the surface measure of the hyperplane
//! Σ x = 0; against the first K − 1 entries of x instead, |det| is the constant 1/√K
//! (`tests/it/transforms.rs` checks it).

use super::{Invalid, TypeEntry, TypeKind, TOLERANCE};
use nalgebra::{DMatrix, DVector};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::SumToZero,
    min_size: 1,
    free: |k| k - 1,
    constrain,
    unconstrain,
    log_jacobian: |_, _| 0.0,
    validate,
    two_size: None,
};

/// Stan's loop: for i = K − 1 down to 1, w = uᵢ / √(i(i + 1)); x₁..ᵢ += w, xᵢ₊₁ −= i·w.
pub(super) fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    let mut x = vec![0.0; k];
    let mut sum_w = 0.0;
    for i in (1..k).rev() {
        let n = i as f64;
        let w = u[i - 1] / (n * (n + 1.0)).sqrt();
        sum_w += w;
        x[i - 1] += sum_w;
        x[i] -= w * n;
    }
    x
}

/// A: column j is the value of the j-th unit vector.
pub(crate) fn basis(k: usize) -> DMatrix<f64> {
    let mut a = DMatrix::zeros(k, k - 1);
    for j in 0..k - 1 {
        let mut e = vec![0.0; k - 1];
        e[j] = 1.0;
        a.set_column(j, &DVector::from_vec(constrain(&e, k)));
    }
    a
}

/// u = Aᵀ x (the columns of A are orthonormal).
pub(super) fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    (basis(k).transpose() * DVector::from_column_slice(x))
        .as_slice()
        .to_vec()
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    let s: f64 = x.iter().sum();
    if s.abs() > TOLERANCE {
        return Err(Invalid::whole(format!("its entries sum to {s}, not 0")));
    }
    Ok(())
}
