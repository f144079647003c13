//! `cholesky_cov[K]` and `cholesky_cov[M, N]` as graph nodes: the free coordinates gathered
//! into the lower trapezoid row by row, the diagonal's as exp; log-Jacobian the sum of the
//! diagonal's coordinates (the maps: `crate::constrained::cholesky_cov`).

use super::{pick, scatter, Error, Fun1, Fun2, Graph, Lowered, Lowering, NodeId, TypeKind};
use crate::constrained::cholesky_cov;

/// The table row.
pub(super) const LOWERING: Lowering = Lowering {
    kind: TypeKind::CholeskyCov,
    one_size: |g, u, k| lower(g, u, k, k),
    two_size: Some(lower),
};

/// L and the diagonal's coordinates as nodes, for a K×K factor.
pub(super) fn factor(g: &mut Graph, u: NodeId, k: usize) -> Result<(NodeId, NodeId), Error> {
    factor_mn(g, u, k, k)
}

/// L (M×N) and the diagonal's coordinates as nodes.
fn factor_mn(g: &mut Graph, u: NodeId, m: usize, n: usize) -> Result<(NodeId, NodeId), Error> {
    // Gather u into the strictly lower part (diagonal coordinates are skipped), then add
    // exp of the diagonal's coordinates on the diagonal.
    let mut idx = vec![super::GATHER_ZERO; m * n];
    for (p, (i, j)) in cholesky_cov::trapezoid_rows(m, n).into_iter().enumerate() {
        if i != j {
            idx[i + j * m] = p as u32;
        }
    }
    let shape = super::Shape::Matrix(m, n);
    let l_off = g.gather_flat(u, idx, shape)?;
    let d = pick(g, u, cholesky_cov::diagonal(n))?;
    let e = g.unary(Fun1::Exp, d);
    let l_diag = if m == n {
        let at: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
        scatter(g, e, n, &at)?
    } else {
        let mut at = vec![super::GATHER_ZERO; m * n];
        for i in 0..n {
            at[i + i * m] = i as u32;
        }
        g.gather_flat(e, at, shape)?
    };
    Ok((g.binary(Fun2::Add, l_off, l_diag)?, d))
}

fn lower(g: &mut Graph, u: NodeId, m: usize, n: usize) -> Result<Lowered, Error> {
    let (l, d) = factor_mn(g, u, m, n)?;
    Ok((l, Some(g.sum(d))))
}
