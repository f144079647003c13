//! SBC's ECDF test and VSBC against ArviZ 0.x (`arviz.stats.ecdf_utils`) and scipy, and the
//! test's behaviour on simulated calibrated and miscalibrated posteriors. The fixtures in
//! tests/data/sbc/ come from `benches/sbc_fixtures.py` (its doc says how to rerun it).

use std::path::Path;

use approx::{assert_abs_diff_eq, assert_relative_eq};
use mvi::autodiff::special::log_phi;
use mvi::posterior::sbc::{self, EcdfBand, Shape};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde_json::Value;

/// Coverages are sums of the same products of binomial probabilities on both sides; scipy's
/// pmf and ours (from a table of ln j!) differ by ~1e-12 relative at N = 500, and the sums
/// by less than this.
const COVERAGE_TOL: f64 = 1e-9;
/// p = 1 − coverage: its absolute error is the coverage's, so small p-values are compared
/// absolutely (p = 4e-12 is known to ~1e-15 absolute, not to 1e-9 relative).
const P_TOL: f64 = 1e-9;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sbc")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn counts(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn cases() -> Vec<Value> {
    fixture("ecdf.json")["cases"].as_array().unwrap().clone()
}

fn size(c: &Value, key: &str) -> usize {
    c[key].as_u64().unwrap() as usize
}

#[test]
fn sbc_pointwise_bands_and_their_coverage_equal_arviz() {
    for c in cases() {
        let (n, z) = (size(&c, "n"), floats(&c["z"]));
        for p in c["pointwise"].as_array().unwrap() {
            let gamma = p["gamma"].as_f64().unwrap();
            let (lo, hi) = sbc::pointwise_band(n, &z, gamma);
            assert_eq!(lo, counts(&p["lower"]), "{} γ {gamma}", c["name"]);
            assert_eq!(hi, counts(&p["upper"]), "{} γ {gamma}", c["name"]);
            let ours = sbc::band_coverage(n, &z, &lo, &hi);
            assert_relative_eq!(ours, p["coverage"].as_f64().unwrap(), max_relative = COVERAGE_TOL);
        }
    }
}

#[test]
fn sbc_band_is_the_narrowest_covering_95_percent_and_nests_with_arviz_optimiser() {
    for c in cases() {
        let (n, l) = (size(&c, "n"), size(&c, "l"));
        let band = EcdfBand::new(n, l);
        let name = c["name"].as_str().unwrap();
        assert_eq!(band.k, size(&c, "k"), "{name}");
        assert_eq!(band.thresholds, counts(&c["thresholds"]), "{name}");
        for (a, b) in band.z.iter().zip(floats(&c["z"])) {
            assert_relative_eq!(*a, b, max_relative = 1e-15);
        }
        let exact = &c["exact"];
        assert_eq!(band.lower, counts(&exact["lower"]), "{name}");
        assert_eq!(band.upper, counts(&exact["upper"]), "{name}");
        assert_relative_eq!(
            band.coverage,
            exact["coverage"].as_f64().unwrap(),
            max_relative = COVERAGE_TOL
        );
        assert_relative_eq!(
            band.gamma,
            1.0 - 2.0 * exact["tau"].as_f64().unwrap(),
            max_relative = 1e-12
        );
        assert!(band.coverage >= sbc::LEVEL);
        // ArviZ minimises |coverage − 0.95|, so it may stop one step narrower (coverage just
        // under 0.95); its band then lies inside ours, else it contains ours.
        let arviz = &c["arviz"];
        let (a_lo, a_hi) = (counts(&arviz["lower"]), counts(&arviz["upper"]));
        let a_cov = arviz["coverage"].as_f64().unwrap();
        let inside = |lo: &[usize], hi: &[usize], lo2: &[usize], hi2: &[usize]| {
            (0..lo.len()).all(|i| lo[i] >= lo2[i] && hi[i] <= hi2[i])
        };
        if a_cov >= sbc::LEVEL {
            assert!(inside(&band.lower, &band.upper, &a_lo, &a_hi), "{name}");
            assert!(band.coverage <= a_cov + COVERAGE_TOL, "{name}");
        } else {
            assert!(inside(&a_lo, &a_hi, &band.lower, &band.upper), "{name}");
        }
    }
}

#[test]
fn sbc_ecdf_and_p_value_equal_the_reference() {
    for c in cases() {
        let (n, l) = (size(&c, "n"), size(&c, "l"));
        let name = c["name"].as_str().unwrap();
        let t = sbc::ecdf_test(&counts(&c["ranks"]), l).unwrap();
        let z = floats(&c["z"]);
        for ((d, m), zi) in t.diff.iter().zip(counts(&c["counts"])).zip(&z) {
            assert_abs_diff_eq!(*d, m as f64 / n as f64 - zi, epsilon = 1e-15);
        }
        let p = c["p_value"].as_f64().unwrap();
        assert_abs_diff_eq!(t.p_value, p, epsilon = P_TOL);
        assert_eq!(t.calibrated, p > 0.05, "{name}");
        let expected = match name.split('_').next().unwrap() {
            "uniform" => None,
            "low" => Some(Shape::BiasedHigh),
            "middle" => Some(Shape::TooWide),
            "narrow" => Some(Shape::TooNarrow),
            other => panic!("unknown case {other}"),
        };
        assert_eq!(t.shape(), expected, "{name}");
    }
}

#[test]
fn sbc_vsbc_equals_scipy_ks_2samp() {
    for c in fixture("vsbc.json")["cases"].as_array().unwrap() {
        let t = sbc::vsbc_test(&floats(&c["p"]));
        assert_relative_eq!(
            t.statistic,
            c["statistic"].as_f64().unwrap(),
            max_relative = 1e-12
        );
        assert_relative_eq!(t.p_value, c["p_value"].as_f64().unwrap(), max_relative = 1e-8);
    }
}

/// One SBC run of the conjugate model θ ~ N(0, 1), y ~ N(θ, 1), whose posterior is
/// N(y/2, ½), "fitted" by N(y/2 + shift, ½ · scale²): per simulation the rank of θ among
/// `l` draws and Pr_q(θ' < θ).
fn conjugate_sbc(rng: &mut StdRng, sims: usize, l: usize, shift: f64, scale: f64) -> (Vec<usize>, Vec<f64>) {
    let sd = 0.5f64.sqrt() * scale;
    let mut ranks = Vec::with_capacity(sims);
    let mut p = Vec::with_capacity(sims);
    for _ in 0..sims {
        let theta: f64 = rng.sample(StandardNormal);
        let y = theta + rng.sample::<f64, _>(StandardNormal);
        let mean = y / 2.0 + shift;
        let draws: Vec<f64> = (0..l)
            .map(|_| mean + sd * rng.sample::<f64, _>(StandardNormal))
            .collect();
        ranks.push(sbc::rank(theta, &draws, rng));
        p.push(log_phi((theta - mean) / sd).exp());
    }
    (ranks, p)
}

/// P(X ≤ k) for X ~ Binomial(n, q), by summing the pmf.
fn binom_cdf(k: usize, n: usize, q: f64) -> f64 {
    let mut pmf = (1.0 - q).powi(n as i32);
    let mut cdf = pmf;
    for j in 0..k {
        pmf *= (n - j) as f64 / (j + 1) as f64 * q / (1.0 - q);
        cdf += pmf;
    }
    cdf
}

#[test]
fn sbc_calibrated_posteriors_are_rejected_at_the_nominal_rate() {
    let (reps, sims, l) = (400, 100, 99);
    let band = EcdfBand::new(sims, l);
    let mut rng = StdRng::seed_from_u64(43);
    let (mut rejected, mut vsbc_rejected) = (0, 0);
    for _ in 0..reps {
        let (ranks, p) = conjugate_sbc(&mut rng, sims, l, 0.0, 1.0);
        rejected += usize::from(!band.test(&ranks).unwrap().calibrated);
        vsbc_rejected += usize::from(sbc::vsbc_test(&p).p_value <= 0.05);
    }
    // The rejection rate is exactly 1 − coverage; its count over the replications lies in
    // the central 99.9 % interval of Binomial(reps, 1 − coverage).
    let q = 1.0 - band.coverage;
    let lo = (0..reps).find(|&k| binom_cdf(k, reps, q) >= 0.0005).unwrap();
    let hi = (0..reps).find(|&k| binom_cdf(k, reps, q) >= 0.9995).unwrap();
    assert!(
        (lo..=hi).contains(&rejected),
        "{rejected} rejections, expected {lo}..={hi}"
    );
    // VSBC's KS p-value is not exact ({p} and {1 − p} are dependent): only check that a
    // calibrated symmetric fit is rarely flagged.
    assert!(vsbc_rejected <= reps / 10, "{vsbc_rejected}");
}

#[test]
fn sbc_too_wide_too_narrow_and_biased_posteriors_are_flagged_with_their_shape() {
    let (reps, sims, l) = (40, 200, 99);
    let band = EcdfBand::new(sims, l);
    let mut rng = StdRng::seed_from_u64(44);
    for (shift, scale, shape) in [
        (0.0, 1.6, Shape::TooWide),
        (0.0, 0.6, Shape::TooNarrow),
        (0.4, 1.0, Shape::BiasedHigh),
        (-0.4, 1.0, Shape::BiasedLow),
    ] {
        let mut right = 0;
        for _ in 0..reps {
            let (ranks, _) = conjugate_sbc(&mut rng, sims, l, shift, scale);
            right += usize::from(band.test(&ranks).unwrap().shape() == Some(shape));
        }
        assert!(right >= reps * 9 / 10, "{shape:?}: {right} of {reps}");
    }
}

#[test]
fn sbc_vsbc_flags_a_biased_gaussian_approximation() {
    let mut rng = StdRng::seed_from_u64(45);
    let (_, p) = conjugate_sbc(&mut rng, 200, 10, 0.5, 1.0);
    let t = sbc::vsbc_test(&p);
    assert!(t.p_value < 1e-3, "{t:?}");
}
