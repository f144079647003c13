//! The 1-Wasserstein distance between two sets of draws: the Pathfinder paper's accuracy
//! measure (Zhang, Carpenter, Gelman & Vehtari, JMLR 2022).
//!
//! Input: two sets of points in ℝᴰ (the columns of two D×n matrices) with uniform weights.
//! Output: W1 = min over transport plans of Σ π_ij |x_i − y_j|, the optimal-transport linear
//! program POT's `ot.emd2` solves, here by Bertsekas' auction algorithm with ε-scaling for
//! the transportation problem (each point of the larger set is a bidder; each point of the
//! smaller set has as many slots as its weight holds). The auction ends ε-optimal: every
//! bidder's share of the cost is within ε of its best, so W1 is exact to [`REL_EPS`] times the
//! largest distance, far below the Monte Carlo spread of the metric.
//!
//! # Reference
//! Bertsekas & Castañon (1989), "The auction algorithm for the transportation problem",
//! Annals of Operations Research 20.

use nalgebra::DMatrix;

/// The final ε of the auction relative to the largest distance: W1's error bound.
pub const REL_EPS: f64 = 1e-9;

/// W1 between the empirical measures of the columns of `x` (D×n) and `y` (D×m), Euclidean
/// cost, uniform weights. NaN when either set is empty or a distance is not finite.
pub fn w1(x: &DMatrix<f64>, y: &DMatrix<f64>) -> f64 {
    let (big, small) = if x.ncols() >= y.ncols() { (x, y) } else { (y, x) };
    let (a, b) = (big.ncols(), small.ncols());
    if b == 0 {
        return f64::NAN;
    }
    // cost[p][o]: bidder p (a point of the larger set), object o (of the smaller set)
    let cost: Vec<f64> = (0..a)
        .flat_map(|p| (0..b).map(move |o| (p, o)))
        .map(|(p, o)| (big.column(p) - small.column(o)).norm())
        .collect();
    let max_cost = cost.iter().copied().fold(0.0, f64::max);
    if !max_cost.is_finite() {
        return f64::NAN;
    }
    if max_cost == 0.0 {
        return 0.0;
    }
    let g = gcd(a, b);
    // each larger-set point bids `copies` times, each smaller-set point has `slots` slots:
    // a·copies = b·slots, so both sides carry equal weight per unit
    let copies = b / g;
    let slots = a / g;
    let owner = auction(&cost, a, b, copies, slots, max_cost);
    let units = (a * copies) as f64;
    owner
        .iter()
        .enumerate()
        .map(|(u, &o)| cost[(u / copies) * b + o])
        .sum::<f64>()
        / units
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The auction: returns, for every bidding unit u (point u / copies), the object it is
/// assigned to.
fn auction(cost: &[f64], a: usize, b: usize, copies: usize, slots: usize, max_cost: f64) -> Vec<usize> {
    let units = a * copies;
    // per object: slot prices and holders
    let mut price = vec![vec![0.0f64; slots]; b];
    let mut holder = vec![vec![usize::MAX; slots]; b];
    let mut min_price = vec![0.0f64; b];
    let mut assigned = vec![usize::MAX; units];
    let final_eps = REL_EPS * max_cost;
    let mut eps = max_cost / 4.0;
    loop {
        // a new phase: everyone bids again, prices are kept
        for h in holder.iter_mut() {
            h.fill(usize::MAX);
        }
        assigned.fill(usize::MAX);
        let mut free: Vec<usize> = (0..units).rev().collect();
        while let Some(u) = free.pop() {
            let row = &cost[(u / copies) * b..(u / copies + 1) * b];
            let (mut best, mut best_v, mut second_v) = (0, f64::NEG_INFINITY, f64::NEG_INFINITY);
            for (o, c) in row.iter().enumerate() {
                let v = -c - min_price[o];
                if v > best_v {
                    second_v = best_v;
                    best_v = v;
                    best = o;
                } else if v > second_v {
                    second_v = v;
                }
            }
            // the second-cheapest slot of the best object is also an alternative
            let s = cheapest(&price[best]);
            if slots > 1 {
                let second_slot = price[best]
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != s)
                    .map(|(_, p)| *p)
                    .fold(f64::INFINITY, f64::min);
                second_v = second_v.max(-row[best] - second_slot);
            }
            if !second_v.is_finite() {
                second_v = best_v - max_cost;
            }
            price[best][s] += best_v - second_v + eps;
            let evicted = holder[best][s];
            holder[best][s] = u;
            assigned[u] = best;
            if evicted != usize::MAX {
                assigned[evicted] = usize::MAX;
                free.push(evicted);
            }
            min_price[best] = price[best][cheapest(&price[best])];
        }
        if eps <= final_eps {
            return assigned;
        }
        eps = (eps / 8.0).max(final_eps);
    }
}

/// The index of the cheapest slot.
fn cheapest(prices: &[f64]) -> usize {
    let mut k = 0;
    for (i, p) in prices.iter().enumerate() {
        if *p < prices[k] {
            k = i;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};

    fn random(d: usize, n: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        DMatrix::from_fn(d, n, |_, _| {
            (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        })
    }

    #[test]
    fn one_dimension_matches_sorted_matching() {
        // in 1-D with equal sizes the optimal plan pairs the sorted points
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let x = random(1, 50, &mut rng);
        let y = random(1, 50, &mut rng);
        let mut xs: Vec<f64> = x.iter().copied().collect();
        let mut ys: Vec<f64> = y.iter().copied().collect();
        xs.sort_by(f64::total_cmp);
        ys.sort_by(f64::total_cmp);
        let exact = xs.iter().zip(&ys).map(|(a, b)| (a - b).abs()).sum::<f64>() / 50.0;
        assert!((w1(&x, &y) - exact).abs() < 1e-7, "{} vs {exact}", w1(&x, &y));
        // unequal sizes: the quantile functions, 3 points against 6
        let x = DMatrix::from_row_slice(1, 3, &[0.0, 1.0, 2.0]);
        let y = DMatrix::from_row_slice(1, 6, &[0.0, 0.0, 1.0, 1.0, 2.0, 5.0]);
        // mass 1/6 moves from 2 to 5
        assert!((w1(&x, &y) - 0.5).abs() < 1e-7);
        assert!((w1(&y, &x) - 0.5).abs() < 1e-7);
    }

    #[test]
    fn small_problems_match_every_assignment() {
        // 4 points against 4: the best of all 24 permutations
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..5 {
            let x = random(3, 4, &mut rng);
            let y = random(3, 4, &mut rng);
            let mut best = f64::INFINITY;
            for p in permutations(4) {
                let c: f64 = (0..4).map(|i| (x.column(i) - y.column(p[i])).norm()).sum();
                best = best.min(c / 4.0);
            }
            assert!((w1(&x, &y) - best).abs() < 1e-7, "{} vs {best}", w1(&x, &y));
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 1 {
            return vec![vec![0]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for k in 0..n {
                let mut q = p.clone();
                q.insert(k, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn identical_sets_are_at_distance_zero_and_a_shift_costs_its_length() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let x = random(2, 30, &mut rng);
        assert!(w1(&x, &x).abs() < 1e-7);
        let y = x.map(|v| v + 0.0) + DMatrix::from_fn(2, 30, |i, _| if i == 0 { 3.0 } else { 4.0 });
        // translating by (3, 4) moves every point by 5 at least; the shift plan attains it
        assert!((w1(&x, &y) - 5.0).abs() < 1e-6);
    }
}
