use super::*;
use approx::assert_relative_eq;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Every rank vector of N ranks on 0..=L, each with probability (L + 1)^−N.
fn all_rank_vectors(n: usize, l: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for _ in 0..n {
        out = out
            .into_iter()
            .flat_map(|v| {
                (0..=l).map(move |r| {
                    let mut w = v.clone();
                    w.push(r);
                    w
                })
            })
            .collect();
    }
    out
}

#[test]
fn rank_counts_draws_below_and_breaks_ties_uniformly() {
    let mut rng = StdRng::seed_from_u64(1);
    assert_eq!(rank(2.5, &[1.0, 2.0, 3.0, 4.0], &mut rng), 2);
    assert_eq!(rank(0.0, &[1.0, 2.0], &mut rng), 0);
    assert_eq!(rank(9.0, &[1.0, 2.0], &mut rng), 2);
    // Truth equal to three of five draws, one below: ranks 1, 2, 3 or 4, equally often.
    let draws = [0.0, 1.0, 1.0, 1.0, 2.0];
    let mut counts = [0usize; 6];
    for _ in 0..8000 {
        counts[rank(1.0, &draws, &mut rng)] += 1;
    }
    assert_eq!((counts[0], counts[5]), (0, 0));
    for c in &counts[1..5] {
        assert!(
            (*c as f64 - 2000.0).abs() < 4.0 * (8000.0f64 * 0.25 * 0.75).sqrt(),
            "{counts:?}"
        );
    }
}

#[test]
fn thin_keeps_evenly_spaced_draws_and_reports_the_ess() {
    let x: Vec<f64> = (0..100).map(f64::from).collect();
    let t = thin(&[&x], 10).unwrap();
    assert_eq!(
        t.draws,
        vec![5.0, 15.0, 25.0, 35.0, 45.0, 55.0, 65.0, 75.0, 85.0, 95.0]
    );
    // A steadily rising run is as dependent as draws can be.
    assert!(!t.independent(), "ess {}", t.ess);
    let mut rng = StdRng::seed_from_u64(2);
    let iid: Vec<f64> = (0..400).map(|_| rng.random::<f64>()).collect();
    let t = thin(&[&iid[..200], &iid[200..]], 100).unwrap();
    assert_eq!(t.draws.len(), 100);
    assert!(t.independent(), "ess {}", t.ess);
    assert_eq!(thin(&[&x], 101), Err(Error::TooFewDraws { draws: 100, l: 101 }));
}

#[test]
fn coverage_recursion_equals_enumeration_of_every_rank_vector() {
    let (n, l) = (4, 4);
    let z: Vec<f64> = (1..=l).map(|c| c as f64 / (l + 1) as f64).collect();
    let lower = vec![0, 0, 1, 2];
    let upper = vec![2, 3, 3, 4];
    let inside = all_rank_vectors(n, l)
        .iter()
        .filter(|ranks| {
            (1..=l).all(|c| {
                let m = ranks.iter().filter(|&&r| r < c).count();
                lower[c - 1] <= m && m <= upper[c - 1]
            })
        })
        .count();
    let exact = inside as f64 / ((l + 1) as f64).powi(n as i32);
    assert_relative_eq!(band_coverage(n, &z, &lower, &upper), exact, epsilon = 1e-14);
}

#[test]
fn p_value_equals_enumeration_of_every_rank_vector() {
    let (n, l) = (5, 3);
    let band = EcdfBand::new(n, l);
    let all = all_rank_vectors(n, l);
    let t_min = |ranks: &[usize]| {
        band.counts(ranks)
            .iter()
            .zip(&band.tails)
            .map(|(&m, t)| t.smaller(m))
            .fold(f64::INFINITY, f64::min)
    };
    let stats: Vec<f64> = all.iter().map(|r| t_min(r)).collect();
    for (ranks, &t) in all.iter().zip(&stats).step_by(37) {
        let as_extreme = stats.iter().filter(|&&s| s <= t * (1.0 + 1e-12)).count();
        let exact = as_extreme as f64 / all.len() as f64;
        assert_relative_eq!(band.test(ranks).unwrap().p_value, exact, epsilon = 1e-12);
    }
}

#[test]
fn band_is_the_narrowest_with_coverage_at_least_the_level() {
    let band = EcdfBand::new(50, 19);
    assert_eq!((band.k, band.z.len()), (20, 19));
    assert!(band.coverage >= LEVEL, "{}", band.coverage);
    // The next narrower band (threshold just above τ) covers less than the level.
    let tau = (1.0 - band.gamma) / 2.0;
    let (lo, hi) = band.intervals(tau, false);
    assert!(band_coverage(50, &band.z, &lo, &hi) < LEVEL);
    assert!(band.gamma > LEVEL && band.gamma < 1.0);
    // Symmetric: the band at z and 1 − z mirror each other.
    for i in 0..band.z.len() {
        let j = band.z.len() - 1 - i;
        assert_eq!(band.lower[i] + band.upper[j], 50);
    }
}

#[test]
fn calibrated_means_inside_the_band_means_p_above_five_percent() {
    let mut rng = StdRng::seed_from_u64(3);
    let band = EcdfBand::new(40, 9);
    let (mut flagged, mut passed) = (0, 0);
    for rep in 0..300 {
        // Half the replications skewed towards low ranks, to see both verdicts.
        let ranks: Vec<usize> = (0..40)
            .map(|_| {
                let r = rng.random_range(0..=9usize);
                if rep % 2 == 0 {
                    r
                } else {
                    r.min(rng.random_range(0..=9usize))
                }
            })
            .collect();
        let t = band.test(&ranks).unwrap();
        assert_eq!(t.calibrated, t.p_value > 0.05, "{t:?}");
        if t.calibrated {
            passed += 1;
        } else {
            flagged += 1;
        }
    }
    assert!(flagged > 20 && passed > 20, "{flagged} {passed}");
}

#[test]
fn shape_names_how_the_ranks_are_off() {
    let l = 19;
    let spread = |f: &dyn Fn(usize) -> usize| -> Vec<usize> { (0..200).map(|i| f(i % 20)).collect() };
    let shape = |ranks: Vec<usize>| ecdf_test(&ranks, l).unwrap().shape();
    // Uniform: calibrated, no shape.
    assert_eq!(shape(spread(&|r| r)), None);
    // Both ends: too narrow; the middle: too wide.
    assert_eq!(
        shape(spread(&|r| if r < 10 { r / 4 } else { 19 - (19 - r) / 4 })),
        Some(Shape::TooNarrow)
    );
    assert_eq!(shape(spread(&|r| 7 + r / 4)), Some(Shape::TooWide));
    // Low ranks: the posterior sits above the truth; high ranks: below.
    assert_eq!(shape(spread(&|r| r / 2)), Some(Shape::BiasedHigh));
    assert_eq!(shape(spread(&|r| 10 + r / 2)), Some(Shape::BiasedLow));
}

#[test]
fn bad_ranks_are_errors() {
    assert_eq!(ecdf_test(&[], 5), Err(Error::NoRanks));
    assert_eq!(
        ecdf_test(&[0, 6], 5),
        Err(Error::RankOutOfRange { rank: 6, l: 5 })
    );
    // One rank or one possible rank value: nothing to test.
    let t = ecdf_test(&[3], 5).unwrap();
    assert!(t.calibrated && t.z.is_empty());
    assert_relative_eq!(t.p_value, 1.0);
}

#[test]
fn ks_p_value_for_equal_sizes_matches_counting_lattice_paths() {
    // n = 3: of the 20 interleavings of 3 + 3 values, D = 1 for the 2 fully separated ones
    // and D = 2/3 for 10 more (counted by enumerating them).
    assert_relative_eq!(ks_equal_sizes_p_value(3, 3), 2.0 / 20.0, epsilon = 1e-14);
    assert_relative_eq!(ks_equal_sizes_p_value(3, 2), 12.0 / 20.0, epsilon = 1e-14);
    assert_relative_eq!(ks_equal_sizes_p_value(3, 0), 1.0);
}

#[test]
fn vsbc_passes_symmetric_p_and_flags_skewed_p() {
    // Dyadic values, so that 1 − p is exactly another of them.
    let sym: Vec<f64> = (0..128).map(|i| (i as f64 + 0.5) / 128.0).collect();
    let t = vsbc_test(&sym);
    assert_relative_eq!(t.statistic, 0.0);
    assert_relative_eq!(t.p_value, 1.0);
    let skew: Vec<f64> = sym.iter().map(|p| p * p).collect();
    let t = vsbc_test(&skew);
    assert!(t.statistic > 0.3 && t.p_value < 1e-4, "{t:?}");
}
