//! `simplex[K]`: K non-negative entries summing to 1, from K − 1 free coordinates.
//!
//! Stan 2.37 replaced the stick-breaking transform (zₖ = inv_logit(uₖ + log(1/(K − k))))
//! by the inverse isometric log-ratio transform, which is what this file implements:
//! x = softmax(A u) with A the `sum_to_zero_vector` basis (`simplex_constrain` in Stan Math
//! 5.1: "equivalent to softmax(sum_to_zero_constrain(y))"). u = 0 is the uniform simplex.
//! The inverse is u = Aᵀ log x (Aᵀ 1 = 0 removes the normaliser).
//!
//! Log-Jacobian, of the map from u to the first K − 1 entries: ½ log K + Σᵢ log xᵢ
//! (`tests/it/transforms.rs` checks it against log |det J| computed numerically).

use super::{sum_to_zero, Invalid, TypeEntry, TypeKind, TOLERANCE};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::Simplex,
    min_size: 1,
    free: |k| k - 1,
    constrain,
    unconstrain,
    log_jacobian,
    validate,
    two_size: None,
};

fn log_softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    z.iter().map(|v| v - lse).collect()
}

fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    log_softmax(&sum_to_zero::constrain(u, k))
        .into_iter()
        .map(f64::exp)
        .collect()
}

fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    sum_to_zero::unconstrain(&logs, k)
}

fn log_jacobian(u: &[f64], k: usize) -> f64 {
    0.5 * (k as f64).ln() + log_softmax(&sum_to_zero::constrain(u, k)).iter().sum::<f64>()
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    if let Some(i) = x.iter().position(|v| *v < 0.0) {
        return Err(Invalid::at(i, format!("entry {} is {}, below 0", i + 1, x[i])));
    }
    let s: f64 = x.iter().sum();
    if (s - 1.0).abs() > TOLERANCE {
        return Err(Invalid::whole(format!("its entries sum to {s}, not 1")));
    }
    Ok(())
}
