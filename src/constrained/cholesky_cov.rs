//! `cholesky_cov[K]` and `cholesky_cov[M, N]` (Stan's `cholesky_factor_cov[K]` and
//! `cholesky_factor_cov[M, N]`, M ≥ N): an M×N lower-trapezoidal matrix with a positive
//! diagonal, from N(N + 1)/2 + (M − N)N free coordinates filling it row by row, each
//! diagonal entry as its log ((1,1), (2,1), (2,2), (3,1), …; the rows below the N-th are
//! full; Stan's `cholesky_factor_constrain`). Log-Jacobian: the sum of the diagonal's
//! coordinates.

use super::{check_lower_triangular, Invalid, TwoSize, TypeEntry, TypeKind};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CholeskyCov,
    min_size: 1,
    free: |k| free(k, k),
    constrain: |u, k| constrain(u, k, k),
    unconstrain,
    log_jacobian: |u, k| log_jacobian(u, k, k),
    validate: check_lower_triangular,
    two_size: Some(TwoSize {
        free,
        constrain,
        unconstrain: unconstrain_mn,
        log_jacobian,
        validate,
    }),
};

/// N(N + 1)/2 + (M − N)N.
fn free(m: usize, n: usize) -> usize {
    n * (n + 1) / 2 + (m - n) * n
}

fn log_jacobian(u: &[f64], _m: usize, n: usize) -> f64 {
    diagonal(n).iter().map(|&p| u[p]).sum()
}

/// The entries of an M×N lower-trapezoidal matrix, row by row.
pub(crate) fn trapezoid_rows(m: usize, n: usize) -> Vec<(usize, usize)> {
    (0..m)
        .flat_map(|i| (0..=i.min(n - 1)).map(move |j| (i, j)))
        .collect()
}

/// The positions of the diagonal's coordinates among the free ones (the first N rows are
/// those of a K×K factor).
pub(crate) fn diagonal(k: usize) -> Vec<usize> {
    (0..k).map(|i| i * (i + 3) / 2).collect()
}

fn constrain(u: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut l = vec![0.0; m * n];
    for (p, (i, j)) in trapezoid_rows(m, n).into_iter().enumerate() {
        l[i + j * m] = if i == j { u[p].exp() } else { u[p] };
    }
    l
}

pub(crate) fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    unconstrain_mn(x, k, k)
}

fn unconstrain_mn(x: &[f64], m: usize, n: usize) -> Vec<f64> {
    trapezoid_rows(m, n)
        .into_iter()
        .map(|(i, j)| if i == j { x[i + j * m].ln() } else { x[i + j * m] })
        .collect()
}

/// Check that a column-major M×N matrix is lower trapezoidal with a positive diagonal.
fn validate(x: &[f64], m: usize, n: usize) -> Result<(), Invalid> {
    for j in 0..n {
        for i in 0..j {
            if x[i + j * m] != 0.0 {
                return Err(Invalid::at(
                    i + j * m,
                    format!(
                        "it is not lower triangular: entry [{}, {}] is {}",
                        i + 1,
                        j + 1,
                        x[i + j * m]
                    ),
                ));
            }
        }
        if x[j + j * m].partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(Invalid::at(
                j + j * m,
                format!(
                    "its diagonal entry [{}, {}] is {}, not positive",
                    j + 1,
                    j + 1,
                    x[j + j * m]
                ),
            ));
        }
    }
    Ok(())
}
