//! `corr_matrix[K]`: a K×K correlation matrix Ω = L Lᵀ, from K(K − 1)/2 free coordinates
//! (Stan's `corr_matrix_constrain`: tanh-transformed canonical partial correlations read by
//! `read_corr_L`). L is the `cholesky_corr` factor of the same partial correlations, but
//! Stan orders them column by column ((2,1), (3,1), …, (K,1), (3,2), …), so the graph first
//! permutes the coordinates into `cholesky_corr`'s row-by-row order.
//!
//! Log-Jacobian (of the map to the strict lower triangle of Ω, Stan's, from Lewandowski,
//! Kurowicka and Joe 2009 and Joe 2006 eq. 11): Σ log(1 − z²) for the tanh plus
//! ½ Σ (K − j − 1) log(1 − zᵢⱼ²) over the partial correlations of column j (1-based).

use super::{
    check_symmetric, cholesky, cholesky_corr, strict_lower_rows, Invalid, TypeEntry, TypeKind, TOLERANCE,
};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CorrMatrix,
    min_size: 1,
    free: |k| k * (k - 1) / 2,
    constrain,
    unconstrain,
    log_jacobian,
    validate,
    two_size: None,
};

/// Stan's column-by-column order of the strict lower triangle.
fn strict_lower_cols(k: usize) -> Vec<(usize, usize)> {
    (0..k).flat_map(|j| (j + 1..k).map(move |i| (i, j))).collect()
}

/// For each position in row-major order, its index in column-major order.
pub(crate) fn rows_from_cols(k: usize) -> Vec<usize> {
    let cols = strict_lower_cols(k);
    strict_lower_rows(k)
        .iter()
        .map(|at| cols.iter().position(|c| c == at).expect("the same positions"))
        .collect()
}

/// Ω (column-major) from free coordinates in Stan's column order.
fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    let row_u: Vec<f64> = rows_from_cols(k).iter().map(|&p| u[p]).collect();
    let l = super::matrix(&(cholesky_corr::ENTRY.constrain)(&row_u, k), k);
    (&l * l.transpose()).as_slice().to_vec()
}

fn log_jacobian(u: &[f64], k: usize) -> f64 {
    strict_lower_cols(k)
        .iter()
        .zip(u)
        .map(|(&(_, j), v)| {
            let c = (1.0 - v.tanh().powi(2)).ln();
            c * (1.0 + 0.5 * (k as f64 - j as f64 - 2.0))
        })
        .sum()
}

fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    let l = cholesky(x, k).expect("unconstrain is given a valid correlation matrix");
    let row_u = cholesky_corr::unconstrain(l.as_slice(), k);
    let mut u = vec![0.0; row_u.len()];
    for (r, &p) in rows_from_cols(k).iter().enumerate() {
        u[p] = row_u[r];
    }
    u
}

fn validate(x: &[f64], k: usize) -> Result<(), Invalid> {
    check_symmetric(x, k)?;
    for i in 0..k {
        let d = x[i + i * k];
        if (d - 1.0).abs() > TOLERANCE {
            return Err(Invalid::at(
                i + i * k,
                format!("its diagonal entry [{}, {}] is {d}, not 1", i + 1, i + 1),
            ));
        }
    }
    cholesky(x, k).map(|_| ())
}
