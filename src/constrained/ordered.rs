//! `ordered[K]`: a strictly increasing vector, from K free coordinates (Stan's
//! `ordered_constrain`): x₁ = u₁, xₖ = xₖ₋₁ + exp(uₖ). Inverse: u₁ = x₁,
//! uₖ = log(xₖ − xₖ₋₁). Log-Jacobian: Σₖ₌₂ uₖ (the map is triangular).

use super::{Invalid, TypeEntry, TypeKind};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::Ordered,
    min_size: 1,
    free: |k| k,
    constrain,
    unconstrain,
    log_jacobian: |u, _| u.iter().skip(1).sum(),
    validate,
    two_size: None,
};

fn constrain(u: &[f64], _k: usize) -> Vec<f64> {
    let mut x = Vec::with_capacity(u.len());
    for (i, &v) in u.iter().enumerate() {
        x.push(if i == 0 { v } else { x[i - 1] + v.exp() });
    }
    x
}

fn unconstrain(x: &[f64], _k: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| if i == 0 { x[0] } else { (x[i] - x[i - 1]).ln() })
        .collect()
}

/// Strictly increasing.
pub(super) fn check_increasing(x: &[f64]) -> Result<(), Invalid> {
    for i in 1..x.len() {
        if x[i].partial_cmp(&x[i - 1]) != Some(std::cmp::Ordering::Greater) {
            return Err(Invalid::at(
                i,
                format!(
                    "it is not increasing: entry {} is {}, entry {} is {}",
                    i,
                    x[i - 1],
                    i + 1,
                    x[i]
                ),
            ));
        }
    }
    Ok(())
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    check_increasing(x)
}
