//! K-means for the RBF centres of the logistic-RBF protocol (paper §V-C): k-means++
//! seeding (Arthur & Vassilvitskii 2007) and Lloyd's iterations, from a seeded generator.
//!
//! Input: N × Q points (one per row), k, a seed. Output: k × Q centres (one per row). The
//! same inputs give the same centres.

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Lloyd iterations stop after this many rounds even if assignments still change.
pub const MAX_ROUNDS: usize = 300;

fn sq_dist(x: &DMatrix<f64>, i: usize, c: &DMatrix<f64>, j: usize) -> f64 {
    (0..x.ncols()).map(|q| (x[(i, q)] - c[(j, q)]).powi(2)).sum()
}

/// Index of the nearest centre to row `i` and its squared distance.
fn nearest(x: &DMatrix<f64>, i: usize, c: &DMatrix<f64>) -> (usize, f64) {
    (0..c.nrows())
        .map(|j| (j, sq_dist(x, i, c, j)))
        .fold(
            (0, f64::INFINITY),
            |best, cur| if cur.1 < best.1 { cur } else { best },
        )
}

/// k-means++ seeding: the first centre uniformly, each next one with probability
/// proportional to the squared distance to the nearest chosen centre (uniformly when every
/// point coincides with a centre).
fn seed_centres(x: &DMatrix<f64>, k: usize, rng: &mut StdRng) -> DMatrix<f64> {
    let n = x.nrows();
    let mut c = DMatrix::zeros(k, x.ncols());
    let first = rng.random_range(0..n);
    c.row_mut(0).copy_from(&x.row(first));
    let mut d2: Vec<f64> = (0..n).map(|i| sq_dist(x, i, &c, 0)).collect();
    for j in 1..k {
        let total: f64 = d2.iter().sum();
        let pick = if total > 0.0 {
            let mut u = rng.random::<f64>() * total;
            let mut pick = n - 1;
            for (i, d) in d2.iter().enumerate() {
                if u < *d {
                    pick = i;
                    break;
                }
                u -= d;
            }
            pick
        } else {
            rng.random_range(0..n)
        };
        c.row_mut(j).copy_from(&x.row(pick));
        for (i, d) in d2.iter_mut().enumerate() {
            *d = d.min(sq_dist(x, i, &c, j));
        }
    }
    c
}

/// `k` centres of the rows of `x` by k-means++ seeding and Lloyd's iterations until no
/// assignment changes (at most [`MAX_ROUNDS`]). A cluster that loses all its points keeps
/// its previous centre.
///
/// # Panics
/// If `x` has no rows or `k` is 0.
pub fn kmeans(x: &DMatrix<f64>, k: usize, seed: u64) -> DMatrix<f64> {
    assert!(
        x.nrows() > 0 && k > 0,
        "k-means needs points and at least one centre"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let mut c = seed_centres(x, k, &mut rng);
    let mut assign = vec![usize::MAX; x.nrows()];
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for (i, a) in assign.iter_mut().enumerate() {
            let (j, _) = nearest(x, i, &c);
            changed |= *a != j;
            *a = j;
        }
        if !changed {
            break;
        }
        let mut sums = DMatrix::zeros(k, x.ncols());
        let mut counts = vec![0usize; k];
        for (i, &j) in assign.iter().enumerate() {
            let mut row = sums.row_mut(j);
            row += x.row(i);
            counts[j] += 1;
        }
        for (j, &n) in counts.iter().enumerate() {
            if n > 0 {
                let mean = sums.row(j) / n as f64;
                c.row_mut(j).copy_from(&mean);
            }
        }
    }
    c
}

/// The within-cluster sum of squared distances of `x` to its nearest centre in `c`.
pub fn inertia(x: &DMatrix<f64>, c: &DMatrix<f64>) -> f64 {
    (0..x.nrows()).map(|i| nearest(x, i, c).1).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    fn sorted_first_column(c: &DMatrix<f64>) -> Vec<f64> {
        let mut v: Vec<f64> = c.column(0).iter().copied().collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn two_separated_groups_give_their_means() {
        // 1-D: {0, 1, 2} and {10, 11, 15}: means 1 and 12, whatever the seeding.
        let x = DMatrix::from_column_slice(6, 1, &[0.0, 1.0, 2.0, 10.0, 11.0, 15.0]);
        for seed in 0..5 {
            let c = sorted_first_column(&kmeans(&x, 2, seed));
            assert_abs_diff_eq!(c[0], 1.0, epsilon = 1e-12);
            assert_abs_diff_eq!(c[1], 12.0, epsilon = 1e-12);
        }
    }

    #[test]
    fn hand_computed_two_dimensional_clusters() {
        // Groups around (0, 0) and (5, 5): means (1/3, 1/3) and (5, 16/3).
        let x = DMatrix::from_row_slice(
            6,
            2,
            &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 5.0, 5.0, 4.0, 6.0, 6.0, 5.0],
        );
        let c = kmeans(&x, 2, 7);
        let (lo, hi) = if c[(0, 0)] < c[(1, 0)] { (0, 1) } else { (1, 0) };
        assert_abs_diff_eq!(c[(lo, 0)], 1.0 / 3.0, epsilon = 1e-12);
        assert_abs_diff_eq!(c[(lo, 1)], 1.0 / 3.0, epsilon = 1e-12);
        assert_abs_diff_eq!(c[(hi, 0)], 5.0, epsilon = 1e-12);
        assert_abs_diff_eq!(c[(hi, 1)], 16.0 / 3.0, epsilon = 1e-12);
        // Inertia by hand: group 1 (1/9+1/9) + (4/9+1/9) + (1/9+4/9) = 12/9;
        // group 2 (0 + 1/9) + (1 + 4/9) + (1 + 1/9) = 24/9.
        assert_abs_diff_eq!(inertia(&x, &c), 12.0 / 9.0 + 24.0 / 9.0, epsilon = 1e-12);
    }

    #[test]
    fn same_seed_same_centres_and_duplicates_are_handled() {
        let x = DMatrix::from_column_slice(5, 1, &[1.0, 1.0, 1.0, 1.0, 1.0]);
        let c = kmeans(&x, 3, 1);
        assert!(c.iter().all(|v| (v - 1.0).abs() < 1e-15));
        let y = DMatrix::from_fn(40, 2, |i, j| ((i * 7 + j * 3) % 11) as f64);
        assert_eq!(kmeans(&y, 4, 9), kmeans(&y, 4, 9));
    }

    #[test]
    fn k_equal_to_n_puts_a_centre_on_every_distinct_point() {
        let x = DMatrix::from_column_slice(3, 1, &[-1.0, 0.0, 4.0]);
        let c = sorted_first_column(&kmeans(&x, 3, 2));
        assert_eq!(c, vec![-1.0, 0.0, 4.0]);
        assert_abs_diff_eq!(inertia(&x, &kmeans(&x, 3, 2)), 0.0, epsilon = 1e-15);
    }
}
