//! Numeric helpers the graph, the methods and the posterior share, free of the graph itself:
//! standard-normal draws and a stable log-sum-exp. `posterior` re-exports both.

use nalgebra::DMatrix;
use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

/// A D×n matrix of independent standard-normal draws (column by column, so the first
/// columns do not depend on n).
pub fn standard_normal(d: usize, n: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
    let mut z = DMatrix::zeros(d, n);
    for v in z.iter_mut() {
        *v = StandardNormal.sample(rng);
    }
    z
}

/// log Σ exp(x_i), stable; −∞ for an empty slice or all −∞.
pub fn log_sum_exp(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY || m.is_nan() {
        return m;
    }
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}
