//! `positive_ordered[K]`: a strictly increasing vector of positive numbers, from K free
//! coordinates (Stan's `positive_ordered_constrain`): x₁ = exp(u₁), xₖ = xₖ₋₁ + exp(uₖ).
//! Inverse: u₁ = log x₁, uₖ = log(xₖ − xₖ₋₁). Log-Jacobian: Σₖ uₖ.

use super::ordered::check_increasing;
use super::{Invalid, TypeEntry, TypeKind};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::PositiveOrdered,
    min_size: 1,
    free: |k| k,
    constrain,
    unconstrain,
    log_jacobian: |u, _| u.iter().sum(),
    validate,
    two_size: None,
};

fn constrain(u: &[f64], _k: usize) -> Vec<f64> {
    let mut x = Vec::with_capacity(u.len());
    let mut acc = 0.0;
    for &v in u {
        acc += v.exp();
        x.push(acc);
    }
    x
}

fn unconstrain(x: &[f64], _k: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| if i == 0 { x[0].ln() } else { (x[i] - x[i - 1]).ln() })
        .collect()
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    if let Some(&x0) = x.first() {
        if x0.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(Invalid::at(0, format!("entry 1 is {x0}, not positive")));
        }
    }
    check_increasing(x)
}
