//! `cholesky_cov[K]` (Stan's `cholesky_factor_cov[K]`): a K×K lower-triangular matrix with a
//! positive diagonal, from K(K + 1)/2 free coordinates filling the lower triangle row by
//! row, each diagonal entry as its log ((1,1), (2,1), (2,2), (3,1), …; Stan's
//! `cholesky_factor_constrain`). Log-Jacobian: the sum of the diagonal's coordinates.

use super::{
    check_lower_triangular, pick, scatter, Error, Fun1, Fun2, Graph, Lowered, NodeId, TypeEntry, TypeKind,
};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::CholeskyCov,
    min_size: 1,
    free: |k| k * (k + 1) / 2,
    lower,
    constrain,
    unconstrain,
    log_jacobian: |u, k| diagonal(k).iter().map(|&p| u[p]).sum(),
    validate: check_lower_triangular,
};

/// The lower triangle with the diagonal, row by row.
pub(super) fn lower_rows(k: usize) -> Vec<(usize, usize)> {
    (0..k).flat_map(|i| (0..=i).map(move |j| (i, j))).collect()
}

/// The positions of the diagonal's coordinates among the free ones.
pub(super) fn diagonal(k: usize) -> Vec<usize> {
    (0..k).map(|i| i * (i + 3) / 2).collect()
}

fn constrain(u: &[f64], k: usize) -> Vec<f64> {
    let mut l = vec![0.0; k * k];
    for (p, (i, j)) in lower_rows(k).into_iter().enumerate() {
        l[i + j * k] = if i == j { u[p].exp() } else { u[p] };
    }
    l
}

pub(super) fn unconstrain(x: &[f64], k: usize) -> Vec<f64> {
    lower_rows(k)
        .into_iter()
        .map(|(i, j)| if i == j { x[i + j * k].ln() } else { x[i + j * k] })
        .collect()
}

/// L and the diagonal's coordinates as nodes.
pub(super) fn factor(g: &mut Graph, u: NodeId, k: usize) -> Result<(NodeId, NodeId), Error> {
    let rows = lower_rows(k);
    let diag_pos = diagonal(k);
    let off: Vec<(usize, usize)> = rows
        .iter()
        .map(|&(i, j)| if i == j { (k, k) } else { (i, j) })
        .collect();
    // Gather u into the strict lower triangle (diagonal coordinates are skipped), then add
    // exp of the diagonal's coordinates on the diagonal.
    let mut idx = vec![super::GATHER_ZERO; k * k];
    for (p, &(i, j)) in off.iter().enumerate() {
        if i < k {
            idx[i + j * k] = p as u32;
        }
    }
    let l_off = g.gather_flat(u, idx, super::Shape::Matrix(k, k))?;
    let d = pick(g, u, diag_pos)?;
    let e = g.unary(Fun1::Exp, d);
    let at: Vec<(usize, usize)> = (0..k).map(|i| (i, i)).collect();
    let l_diag = scatter(g, e, k, &at)?;
    Ok((g.binary(Fun2::Add, l_off, l_diag)?, d))
}

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    let (l, d) = factor(g, u, k)?;
    Ok((l, Some(g.sum(d))))
}
