//! The statistics of the paper's tables (§IV-B): medians and quantiles over splits, the
//! exact two-sided sign test of paired results, and a seeded bootstrap confidence interval
//! of the paired median difference.
//!
//! Input: per-split values of two methods on the same splits. Output: numbers; nothing
//! here knows about data sets or methods.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Differences smaller than this count as ties in the sign test.
pub const TIE: f64 = 1e-12;
/// Significance level of the marks in the report.
pub const ALPHA: f64 = 0.05;
/// Bootstrap resamples for the confidence interval.
pub const BOOTSTRAP_REPS: usize = 2000;

/// The `p`-quantile (0 ≤ p ≤ 1) with linear interpolation between order statistics
/// (R's type 7); NaN for an empty slice.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The median (the mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// Result of the exact two-sided sign test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignTest {
    /// Pairs where the difference is positive.
    pub positive: usize,
    /// Pairs where it is negative.
    pub negative: usize,
    /// Two-sided p-value: 2 · P(X ≤ min(pos, neg)) for X ~ Binomial(pos + neg, 1/2), at most 1.
    pub p_value: f64,
}

/// The exact sign test of paired differences: ties (|d| ≤ [`TIE`]) are dropped.
pub fn sign_test(diffs: &[f64]) -> SignTest {
    let positive = diffs.iter().filter(|d| **d > TIE).count();
    let negative = diffs.iter().filter(|d| **d < -TIE).count();
    let n = positive + negative;
    let k = positive.min(negative);
    // P(X ≤ k) = Σ_{i ≤ k} C(n, i) / 2ⁿ, with C(n, i) built up term by term.
    let mut term = 0.5f64.powi(n as i32);
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            term *= (n - i + 1) as f64 / i as f64;
        }
        tail += term;
    }
    SignTest {
        positive,
        negative,
        p_value: if n == 0 { 1.0 } else { (2.0 * tail).min(1.0) },
    }
}

/// A 95 % percentile-bootstrap interval of the median of `diffs` (resampling the pairs with
/// replacement, [`BOOTSTRAP_REPS`] times, from `seed`). `(NaN, NaN)` for no pairs.
pub fn bootstrap_median_ci(diffs: &[f64], reps: usize, seed: u64) -> (f64, f64) {
    if diffs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sample = vec![0.0; diffs.len()];
    let medians: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            for s in &mut sample {
                *s = diffs[rng.random_range(0..diffs.len())];
            }
            median(&sample)
        })
        .collect();
    (quantile(&medians, 0.025), quantile(&medians, 0.975))
}

/// The best method of a row against one other, over the splits both have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Paired splits used.
    pub pairs: usize,
    /// The sign test of best − other.
    pub sign: SignTest,
    /// Bootstrap 95 % interval of the median of best − other.
    pub ci: (f64, f64),
}

impl Comparison {
    /// Compare paired values (`best[i]` and `other[i]` from the same split). Differences are
    /// oriented so that positive means the best method did better (`higher_is_better`
    /// tells which direction is better).
    pub fn new(best: &[f64], other: &[f64], higher_is_better: bool, seed: u64) -> Comparison {
        let diffs: Vec<f64> = best
            .iter()
            .zip(other)
            .map(|(b, o)| if higher_is_better { b - o } else { o - b })
            .collect();
        Comparison {
            pairs: diffs.len(),
            sign: sign_test(&diffs),
            ci: bootstrap_median_ci(&diffs, BOOTSTRAP_REPS, seed),
        }
    }

    /// Significant: the sign test rejects at [`ALPHA`] and the interval excludes 0.
    pub fn significant(&self) -> bool {
        self.sign.p_value < ALPHA && self.ci.0 > 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_abs_diff_eq!(median(&v), 2.5, epsilon = 1e-15);
        assert_abs_diff_eq!(quantile(&v, 0.25), 1.75, epsilon = 1e-15);
        assert_abs_diff_eq!(median(&[5.0, 1.0, 3.0]), 3.0, epsilon = 1e-15);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn sign_test_matches_hand_computed_binomial_tails() {
        // 10 of 10 positive: 2 · 2⁻¹⁰ = 0.001953125.
        let all = sign_test(&[1.0; 10]);
        assert_eq!((all.positive, all.negative), (10, 0));
        assert_abs_diff_eq!(all.p_value, 2.0 / 1024.0, epsilon = 1e-15);
        // 8 positive, 2 negative: 2 · (1 + 10 + 45) / 1024 = 0.109375.
        let mut d = vec![1.0; 8];
        d.extend([-1.0, -1.0]);
        assert_abs_diff_eq!(sign_test(&d).p_value, 112.0 / 1024.0, epsilon = 1e-15);
        // 3 vs 3 is capped at 1; ties are dropped: 5 positive, 0 negative, 2 ties → 2/32.
        assert_abs_diff_eq!(
            sign_test(&[1.0, 1.0, 1.0, -1.0, -1.0, -1.0]).p_value,
            1.0,
            epsilon = 1e-15
        );
        let t = sign_test(&[1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
        assert_abs_diff_eq!(t.p_value, 2.0 / 32.0, epsilon = 1e-15);
        assert_abs_diff_eq!(sign_test(&[]).p_value, 1.0, epsilon = 1e-15);
    }

    #[test]
    fn bootstrap_interval_of_constant_differences_is_that_constant() {
        let (lo, hi) = bootstrap_median_ci(&[0.3; 7], 500, 1);
        assert_abs_diff_eq!(lo, 0.3, epsilon = 1e-15);
        assert_abs_diff_eq!(hi, 0.3, epsilon = 1e-15);
    }

    #[test]
    fn bootstrap_interval_of_two_values_spans_both() {
        // Resampled medians of {0, 10}: 0 (p = 1/4), 5 (1/2), 10 (1/4); the 2.5 % and
        // 97.5 % quantiles of 2000 of them are 0 and 10.
        let (lo, hi) = bootstrap_median_ci(&[0.0, 10.0], 2000, 3);
        assert_abs_diff_eq!(lo, 0.0, epsilon = 1e-15);
        assert_abs_diff_eq!(hi, 10.0, epsilon = 1e-15);
        assert_eq!(bootstrap_median_ci(&[0.0, 10.0], 2000, 3), (lo, hi));
    }

    #[test]
    fn comparison_orients_differences_by_direction() {
        let best = [0.1; 12];
        let worse = [0.3; 12];
        // Lower is better (error rates): best − other oriented as other − best = 0.2 > 0.
        let c = Comparison::new(&best, &worse, false, 1);
        assert!(c.significant());
        assert_abs_diff_eq!(c.ci.0, 0.2, epsilon = 1e-12);
        // Read as higher-is-better the same numbers favour the other method: not significant.
        assert!(!Comparison::new(&best, &worse, true, 1).significant());
    }
}
