//! The curvature preconditioner of `pmfvb`'s Algorithm 1: per block j a root R_j with
//! R_j R_jᵀ = (−H̄_jj)⁻¹, H̄ the mean Hessian over a few particles, and the two ways it is
//! made cheap on long latent blocks.
//!
//! - **Sparse Hessians from a few products.** Only the diagonal blocks H_jj are needed. The
//!   first refresh computes full Hessians; their nonzero entries inside the blocks give a
//!   pattern, and the columns of each block are grouped so that no two columns of a group
//!   share a nonzero row inside the block (Curtis, Powell & Reid 1974). Later refreshes
//!   read H_jj off one product H·V per particle, V holding one 0/1 seed column per group:
//!   a stochastic volatility path (tridiagonal H_hh) needs 3 products instead of T. The
//!   pattern is read at the first refresh's particles; an entry that only becomes nonzero
//!   elsewhere would be misattributed, which changes the preconditioner, not the target
//!   (Metropolis-adjusted steps stay exact with any preconditioner).
//! - **Banded roots.** When −H_jj is banded (bandwidth b ≪ len) and needs no clipping, R_j
//!   = L⁻ᵀ is kept as the banded Cholesky factor L and applied by banded triangular solves,
//!   O(len·b) per particle instead of a dense len × len product.

use nalgebra::{DMatrix, DVector};

/// Blocks whose pattern has more nonzero entries per column than this are not grouped
/// (every column is its own group): grouping costs O(Σ degree²) and saves little there.
const MAX_GROUPED_DEGREE: usize = 32;

/// Blocks shorter than this keep a dense root: the banded path only pays on long blocks.
const MIN_BANDED_LEN: usize = 32;

/// Seed vectors from which the diagonal blocks of a sparse Hessian are read off H·V.
#[derive(Debug, Clone)]
pub(crate) struct Seeds {
    /// D × C: column c is 1 on the columns of group c, 0 elsewhere.
    v: DMatrix<f64>,
    /// (row, column, group) for every pattern entry inside a block, both coordinates of w.
    entries: Vec<(usize, usize, usize)>,
}

impl Seeds {
    /// Group the columns of each block by the pattern of nonzero (or non-finite) entries
    /// of `hessians` inside the blocks; `None` when the groups would save less than half of
    /// the D products of a full Hessian.
    pub(crate) fn from_hessians(hessians: &[DMatrix<f64>], blocks: &[Vec<usize>]) -> Option<Seeds> {
        let d = hessians.first()?.nrows();
        let nonzero = |r: usize, c: usize| hessians.iter().any(|h| h[(r, c)] != 0.0);
        let mut groups_of = vec![0usize; d];
        let mut entries = Vec::new();
        let mut n_groups = 0;
        for coords in blocks {
            // rows[a]: block-local rows with a nonzero in block-local column a (symmetric
            // pattern, so also the columns of row a).
            let rows: Vec<Vec<usize>> = (0..coords.len())
                .map(|a| {
                    (0..coords.len())
                        .filter(|&r| nonzero(coords[r], coords[a]) || nonzero(coords[a], coords[r]))
                        .collect()
                })
                .collect();
            let local = group_columns(&rows);
            let used = local.iter().max().map_or(0, |g| g + 1);
            for (a, &g) in local.iter().enumerate() {
                groups_of[coords[a]] = n_groups + g;
                entries.extend(rows[a].iter().map(|&r| (coords[r], coords[a], n_groups + g)));
            }
            n_groups += used;
        }
        if 2 * n_groups >= d {
            return None;
        }
        let mut v = DMatrix::zeros(d, n_groups);
        for coords in blocks {
            for &c in coords {
                v[(c, groups_of[c])] = 1.0;
            }
        }
        Some(Seeds { v, entries })
    }

    /// The seed vectors V (D × number of groups).
    pub(crate) fn vectors(&self) -> &DMatrix<f64> {
        &self.v
    }

    /// The diagonal blocks of H from H·V (D×D, zero outside the blocks' patterns).
    pub(crate) fn recover(&self, hv: &DMatrix<f64>) -> DMatrix<f64> {
        let d = hv.nrows();
        let mut h = DMatrix::zeros(d, d);
        for &(r, c, g) in &self.entries {
            h[(r, c)] = hv[(r, g)];
        }
        h
    }
}

/// Greedy grouping of columns: a column joins the first group in which no column shares a
/// nonzero row with it. `rows[a]` lists column a's nonzero rows (symmetric pattern). Dense
/// patterns get one group per column.
fn group_columns(rows: &[Vec<usize>]) -> Vec<usize> {
    let n = rows.len();
    let nnz: usize = rows.iter().map(Vec::len).sum();
    if nnz > MAX_GROUPED_DEGREE * n {
        return (0..n).collect();
    }
    let mut group = vec![usize::MAX; n];
    let mut taken = Vec::new();
    for a in 0..n {
        taken.clear();
        // Columns sharing a row r with a are the nonzeros of row r, i.e. rows[r].
        for &r in &rows[a] {
            taken.extend(rows[r].iter().map(|&b| group[b]).filter(|&g| g != usize::MAX));
        }
        group[a] = (0..).find(|g| !taken.contains(g)).expect("some group is free");
    }
    group
}

/// A root R of a block preconditioner M = R Rᵀ.
#[derive(Debug, Clone)]
pub(crate) enum Root {
    /// R as a dense matrix.
    Dense(DMatrix<f64>),
    /// R = L⁻ᵀ for a banded lower-triangular L.
    Banded(Band),
}

impl Root {
    /// M = diag(d): R = diag(√d), i.e. L = diag(1/√d) of bandwidth 0.
    pub(crate) fn diagonal(d: impl Iterator<Item = f64>) -> Root {
        let l: Vec<f64> = d.map(|v| 1.0 / v.sqrt()).collect();
        Root::Banded(Band { n: l.len(), bw: 0, l })
    }

    /// Rᵀ G for the columns of G.
    pub(crate) fn tr_mul(&self, g: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Root::Dense(r) => r.tr_mul(g),
            Root::Banded(b) => b.map_columns(g, Band::solve_lower),
        }
    }

    /// R V for the columns of V.
    pub(crate) fn mul(&self, v: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Root::Dense(r) => r * v,
            Root::Banded(b) => b.map_columns(v, Band::solve_upper),
        }
    }

    /// R as a dense matrix (for tests and small blocks).
    #[cfg(test)]
    pub(crate) fn dense(&self) -> DMatrix<f64> {
        match self {
            Root::Dense(r) => r.clone(),
            Root::Banded(b) => b.map_columns(&DMatrix::identity(b.n, b.n), Band::solve_upper),
        }
    }
}

/// A lower-triangular n×n matrix L with L_ij = 0 for i − j > bw, stored by rows: row i
/// holds L_{i, i−bw} … L_{i,i} at `l[i·(bw+1) ..]` (entries left of column 0 unused).
#[derive(Debug, Clone)]
pub(crate) struct Band {
    n: usize,
    bw: usize,
    l: Vec<f64>,
}

impl Band {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.l[i * (self.bw + 1) + self.bw + j - i]
    }

    /// The Cholesky factor of a symmetric A of bandwidth `bw` (entries beyond it ignored),
    /// or `None` when A is not positive definite.
    fn cholesky(a: &DMatrix<f64>, bw: usize) -> Option<Band> {
        let n = a.nrows();
        let mut b = Band {
            n,
            bw,
            l: vec![0.0; n * (bw + 1)],
        };
        for i in 0..n {
            let lo = i.saturating_sub(bw);
            for j in lo..=i {
                let s = a[(i, j)] - (lo..j).map(|k| b.at(i, k) * b.at(j, k)).sum::<f64>();
                let v = if i == j {
                    if s.is_nan() || s <= 0.0 {
                        return None;
                    }
                    s.sqrt()
                } else {
                    s / b.at(j, j)
                };
                b.l[i * (bw + 1) + bw + j - i] = v;
            }
        }
        Some(b)
    }

    /// L⁻¹ y in place (forward substitution).
    fn solve_lower(&self, y: &mut [f64]) {
        for i in 0..self.n {
            let lo = i.saturating_sub(self.bw);
            let s: f64 = (lo..i).map(|k| self.at(i, k) * y[k]).sum();
            y[i] = (y[i] - s) / self.at(i, i);
        }
    }

    /// L⁻ᵀ y in place (back substitution).
    fn solve_upper(&self, y: &mut [f64]) {
        for i in (0..self.n).rev() {
            let hi = (i + self.bw).min(self.n - 1);
            let s: f64 = (i + 1..=hi).map(|k| self.at(k, i) * y[k]).sum();
            y[i] = (y[i] - s) / self.at(i, i);
        }
    }

    fn map_columns(&self, x: &DMatrix<f64>, solve: fn(&Band, &mut [f64])) -> DMatrix<f64> {
        let mut out = x.clone();
        for mut col in out.column_iter_mut() {
            solve(self, col.as_mut_slice());
        }
        out
    }
}

/// R with R Rᵀ = (−H_jj)⁻¹ after clipping the eigenvalues of −H_jj (block `coords`) from
/// below at 1 / (total particle variance of the block): directions of flat or positive
/// curvature then move on the scale of the particle spread, never faster.
pub(crate) fn curvature_root(h: &DMatrix<f64>, coords: &[usize], x: &DMatrix<f64>) -> Root {
    let k = coords.len();
    let neg_h = DMatrix::from_fn(k, k, |a, b| {
        -0.5 * (h[(coords[a], coords[b])] + h[(coords[b], coords[a])])
    });
    // The total particle variance tr Ĉ bounds the largest eigenvalue of Ĉ from above, so
    // no direction is held to a smaller spread than the particles have (the largest single
    // coordinate variance would over-clip the smooth directions of a long latent path).
    let total_var = coords
        .iter()
        .map(|&c| {
            let row = x.row(c);
            let m = row.mean();
            row.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.ncols().max(2) - 1) as f64
        })
        .sum::<f64>()
        .max(1e-12);
    let floor = 1.0 / total_var;
    if let Some(root) = cholesky_root(&neg_h, floor) {
        return root;
    }
    let eig = neg_h.symmetric_eigen();
    let scale = eig.eigenvalues.map(|l| {
        let l = if l.is_finite() { l.max(floor) } else { floor };
        1.0 / l.sqrt()
    });
    Root::Dense(eig.eigenvectors * DMatrix::from_diagonal(&scale))
}

/// R = L⁻ᵀ with A = L Lᵀ, so R Rᵀ = A⁻¹, when every eigenvalue of A is at least `floor`
/// (A − floor·I has a Cholesky factor): then clipping would change nothing, and two
/// Cholesky factorisations are far cheaper than an eigendecomposition of a long block.
/// Banded when A's bandwidth is small against its size.
fn cholesky_root(a: &DMatrix<f64>, floor: f64) -> Option<Root> {
    let k = a.nrows();
    let shifted = a - DMatrix::from_diagonal(&DVector::from_element(k, floor));
    let bw = bandwidth(a);
    if k >= MIN_BANDED_LEN && 4 * (bw + 1) <= k {
        Band::cholesky(&shifted, bw)?;
        return Band::cholesky(a, bw).map(Root::Banded);
    }
    shifted.cholesky()?;
    let l = a.clone().cholesky()?.unpack();
    let l_inv = l.solve_lower_triangular(&DMatrix::identity(k, k))?;
    Some(Root::Dense(l_inv.transpose()))
}

/// The largest |i − j| with A_ij ≠ 0 (non-finite entries count as nonzero).
fn bandwidth(a: &DMatrix<f64>) -> usize {
    let mut bw = 0;
    for j in 0..a.ncols() {
        for i in j + bw + 1..a.nrows() {
            if a[(i, j)] != 0.0 {
                bw = i - j;
            }
        }
    }
    bw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posterior::standard_normal;
    use rand::SeedableRng;

    /// −H of an AR(1)-like chain: tridiagonal, diagonal `diag`, off-diagonal 1.
    fn chain(n: usize, diag: f64) -> DMatrix<f64> {
        DMatrix::from_fn(n, n, |i, j| match i.abs_diff(j) {
            0 => diag,
            1 => 1.0,
            _ => 0.0,
        })
    }

    #[test]
    fn curvature_root_does_not_clip_smooth_directions_of_a_long_block() {
        // −H = tridiagonal AR(1)-like precision whose smallest eigenvalue (the smooth
        // direction) is far below 1 / (largest coordinate variance) of the particles.
        let n = 50;
        let h = -chain(n, 2.2);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let x = standard_normal(n, 400, &mut rng) * 0.5;
        let coords: Vec<usize> = (0..n).collect();
        let r = curvature_root(&h, &coords, &x);
        assert!(matches!(r, Root::Banded(_)), "a long tridiagonal block is banded");
        let r = r.dense();
        let m = &r * r.transpose();
        let exact = (-&h).try_inverse().unwrap();
        assert!((&m - &exact).norm() < 1e-8 * exact.norm(), "unclipped inverse");
    }

    #[test]
    fn curvature_root_clips_positive_curvature_at_the_total_particle_variance() {
        // log p̃ curving up along the second axis: its step is held to the particle spread.
        let h = DMatrix::from_diagonal(&DVector::from_vec(vec![-4.0, 1.0]));
        let x = DMatrix::from_row_slice(2, 4, &[1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0]);
        let r = curvature_root(&h, &[0, 1], &x).dense();
        let m = &r * r.transpose();
        // Each row has sample variance 4/3, so the floor is 1 / (8/3) = 3/8.
        let expect = DMatrix::from_diagonal(&DVector::from_vec(vec![0.25, 8.0 / 3.0]));
        assert!((&m - &expect).norm() < 1e-12, "{m}");
    }

    #[test]
    fn banded_root_applies_the_same_r_as_the_dense_cholesky_inverse() {
        // A pentadiagonal SPD matrix (bandwidth 2).
        let n = 40;
        let a = DMatrix::from_fn(n, n, |i, j| match i.abs_diff(j) {
            0 => 6.0 + (i % 3) as f64,
            1 => -1.5,
            2 => 0.7,
            _ => 0.0,
        });
        assert_eq!(bandwidth(&a), 2);
        let band = Band::cholesky(&a, 2).unwrap();
        let root = Root::Banded(band);
        let l = a.clone().cholesky().unwrap().unpack();
        let dense = l
            .solve_lower_triangular(&DMatrix::identity(n, n))
            .unwrap()
            .transpose();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let g = standard_normal(n, 3, &mut rng);
        assert!((root.tr_mul(&g) - dense.tr_mul(&g)).norm() < 1e-12);
        assert!((root.mul(&g) - &dense * &g).norm() < 1e-12);
        assert!(Band::cholesky(&-&a, 2).is_none(), "not positive definite");
    }

    #[test]
    fn diagonal_root_is_the_square_root_of_the_variances() {
        let r = Root::diagonal([4.0, 0.25].into_iter()).dense();
        assert!((r - DMatrix::from_diagonal(&DVector::from_vec(vec![2.0, 0.5]))).norm() < 1e-15);
    }

    /// A 2 + n Hessian shaped like stochastic volatility's: a dense 2-block (μ, σ) coupled
    /// to everything, and a tridiagonal n-block.
    fn arrow(n: usize) -> DMatrix<f64> {
        DMatrix::from_fn(n + 2, n + 2, |i, j| {
            if i < 2 || j < 2 {
                -0.3 - 0.01 * (i + j) as f64
            } else {
                match i.abs_diff(j) {
                    0 => -3.0 - 0.1 * i as f64,
                    1 => -1.0,
                    _ => 0.0,
                }
            }
        })
    }

    #[test]
    #[allow(clippy::float_cmp)] // recovered entries are copies of products of 0/1 seeds
    fn seeds_read_the_diagonal_blocks_of_a_sparse_hessian_off_a_few_products() {
        let n = 60;
        let h = arrow(n);
        let blocks = vec![vec![0, 1], (2..n + 2).collect::<Vec<_>>()];
        let seeds = Seeds::from_hessians(std::slice::from_ref(&h), &blocks).unwrap();
        assert_eq!(
            seeds.vectors().ncols(),
            2 + 3,
            "2 for the dense block, 3 for the chain"
        );
        let got = seeds.recover(&(&h * seeds.vectors()));
        for (b, coords) in blocks.iter().enumerate() {
            for &r in coords {
                for &c in coords {
                    assert_eq!(got[(r, c)], h[(r, c)], "block {b} entry ({r}, {c})");
                }
            }
        }
        // Cross-block entries are not recovered (not needed).
        assert_eq!(got[(0, 5)], 0.0);
    }

    #[test]
    fn dense_blocks_get_no_seeds() {
        let h = DMatrix::from_element(10, 10, -1.0);
        assert!(Seeds::from_hessians(&[h], &[(0..10).collect()]).is_none());
    }
}
