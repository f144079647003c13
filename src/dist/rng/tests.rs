//! Light checks of `dist::rng`: domains, broadcasting, sizes, determinism and the structure
//! of matrix draws. The moment, KS and χ² tests of every family are in tests/it/rng.rs.

// The values compared exactly are exact by construction: a rate-0 Poisson's 0, zeros above
// a triangular factor's diagonal, a diagonal set to 1, integer counts, one seed's draws twice.
#![allow(clippy::float_cmp)]

use super::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

fn s(v: &f64) -> RngArg<'_> {
    RngArg::scalar(v)
}

fn rng() -> StdRng {
    StdRng::seed_from_u64(20_261_201)
}

#[test]
fn a_negative_scale_is_an_error_like_stans() {
    let mut out = [0.0];
    let e = draw("normal", &[s(&0.0), s(&-1.0)], &mut out, &mut rng()).unwrap_err();
    assert_eq!(e, "normal_rng: sigma is -1, but must be positive and finite");
    let e = draw("binomial", &[s(&3.5), s(&0.5)], &mut out, &mut rng()).unwrap_err();
    assert!(e.contains("N is 3.5"), "{e}");
    let e = draw("bernoulli", &[s(&1.5)], &mut out, &mut rng()).unwrap_err();
    assert!(e.contains("theta is 1.5"), "{e}");
    let e = draw("uniform", &[s(&1.0), s(&0.0)], &mut out, &mut rng()).unwrap_err();
    assert!(e.contains("greater than lower"), "{e}");
    let e = draw("normal", &[s(&f64::NAN), s(&1.0)], &mut out, &mut rng()).unwrap_err();
    assert!(e.contains("mu is NaN"), "{e}");
}

#[test]
fn poisson_rates_from_two_to_the_thirty_are_errors() {
    let mut out = [0.0];
    assert!(draw("poisson", &[s(&1.2e9)], &mut out, &mut rng()).is_err());
    assert!(draw("poisson_log", &[s(&21.0)], &mut out, &mut rng()).is_err());
    draw("poisson", &[s(&0.0)], &mut out, &mut rng()).unwrap();
    assert_eq!(out[0], 0.0);
}

#[test]
fn univariate_draws_broadcast_scalars_over_vectors() {
    let mu = [-100.0, 0.0, 100.0];
    let mut out = [0.0; 3];
    draw("normal", &[RngArg::vector(&mu), s(&1e-6)], &mut out, &mut rng()).unwrap();
    for (o, m) in out.iter().zip(mu) {
        assert!((o - m).abs() < 1e-4, "{o} vs {m}");
    }
    let short = [1.0, 2.0];
    assert!(draw("normal", &[RngArg::vector(&short), s(&1.0)], &mut out, &mut rng()).is_err());
}

#[test]
fn one_seed_gives_one_sequence() {
    let mut a = [0.0; 5];
    let mut b = [0.0; 5];
    draw("gamma", &[s(&2.0), s(&3.0)], &mut a, &mut rng()).unwrap();
    draw("gamma", &[s(&2.0), s(&3.0)], &mut b, &mut rng()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn discrete_draws_are_whole_numbers_in_the_support() {
    let mut out = [0.0; 200];
    for (name, args) in [
        ("binomial", vec![10.0, 0.3]),
        ("beta_binomial", vec![7.0, 0.5, 0.5]),
        ("neg_binomial_2_log", vec![1.0, 2.0]),
        ("bernoulli_logit", vec![0.3]),
    ] {
        let a: Vec<RngArg<'_>> = args.iter().map(RngArg::scalar).collect();
        draw(name, &a, &mut out, &mut rng()).unwrap();
        assert!(out.iter().all(|x| x.fract() == 0.0 && *x >= 0.0), "{name}");
    }
    assert!(out.iter().all(|&x| x <= 1.0));
}

#[test]
fn von_mises_draws_lie_within_pi_of_mu_mod_two_pi_in_zero_two_pi() {
    let mut out = [0.0; 500];
    draw("von_mises", &[s(&7.0), s(&0.5)], &mut out, &mut rng()).unwrap();
    let m = 7.0 - 2.0 * PI;
    assert!(out.iter().all(|x| (x - m).abs() <= PI), "{out:?}");
    draw("von_mises", &[s(&-1.0), s(&0.5)], &mut out, &mut rng()).unwrap();
    let m = 2.0 * PI - 1.0;
    assert!(out.iter().all(|x| (x - m).abs() <= PI), "{out:?}");
}

#[test]
fn lkj_cholesky_rows_have_unit_norm_and_corr_has_a_unit_diagonal() {
    let mut l = [0.0; 16];
    draw("lkj_corr_cholesky", &[s(&4.0), s(&1.5)], &mut l, &mut rng()).unwrap();
    for i in 0..4 {
        let norm: f64 = (0..4).map(|j| l[i + 4 * j].powi(2)).sum();
        assert!((norm - 1.0).abs() < 1e-12);
        for j in i + 1..4 {
            assert_eq!(l[i + 4 * j], 0.0, "upper triangle");
        }
    }
    let mut r = [0.0; 9];
    draw("lkj_corr", &[s(&3.0), s(&0.7)], &mut r, &mut rng()).unwrap();
    assert!((0..3).all(|i| r[i + 3 * i] == 1.0));
    assert!(r.iter().all(|x| x.abs() <= 1.0));
}

#[test]
fn multi_normal_with_a_matrix_mean_draws_one_row_each() {
    let mu = [0.0, 100.0, 0.0, 100.0]; // 2 × 2, rows (0, 0) and (100, 100)
    let sigma = [1e-12, 0.0, 0.0, 1e-12];
    let mut out = [0.0; 4];
    draw(
        "multi_normal",
        &[RngArg::matrix(&mu, 2, 2), RngArg::matrix(&sigma, 2, 2)],
        &mut out,
        &mut rng(),
    )
    .unwrap();
    assert!(out[0].abs() < 1e-3 && out[2].abs() < 1e-3 && (out[1] - 100.0).abs() < 1e-3);
    let bad = [1.0, 2.0, 0.0, 1.0];
    let e = draw(
        "multi_normal",
        &[RngArg::vector(&mu[..2]), RngArg::matrix(&bad, 2, 2)],
        &mut out[..2],
        &mut rng(),
    );
    assert!(e.unwrap_err().contains("not symmetric"));
}

#[test]
fn simplex_families_reject_a_theta_that_does_not_sum_to_one() {
    let theta = [0.5, 0.6];
    let mut out = [0.0; 2];
    assert!(draw(
        "categorical",
        &[RngArg::vector(&theta)],
        &mut out[..1],
        &mut rng()
    )
    .is_err());
    assert!(draw(
        "multinomial",
        &[RngArg::vector(&theta), s(&3.0)],
        &mut out,
        &mut rng()
    )
    .is_err());
}

#[test]
fn multinomial_counts_add_up_to_n() {
    let theta = [0.2, 0.3, 0.5];
    let mut out = [0.0; 3];
    for _ in 0..20 {
        draw(
            "multinomial",
            &[RngArg::vector(&theta), s(&17.0)],
            &mut out,
            &mut rng(),
        )
        .unwrap();
        assert_eq!(out.iter().sum::<f64>(), 17.0);
    }
}

#[test]
fn wishart_factors_are_lower_triangular_with_positive_diagonals() {
    let ls = [1.0, 0.5, 0.0, 2.0];
    for name in ["wishart_cholesky", "inv_wishart_cholesky"] {
        let mut out = [0.0; 4];
        draw(name, &[s(&4.0), RngArg::matrix(&ls, 2, 2)], &mut out, &mut rng()).unwrap();
        assert!(out[0] > 0.0 && out[3] > 0.0 && out[2] == 0.0, "{name}: {out:?}");
        let e = draw(name, &[s(&0.5), RngArg::matrix(&ls, 2, 2)], &mut out, &mut rng()).unwrap_err();
        assert!(e.contains("greater than K - 1"), "{e}");
    }
}

#[test]
fn ordinal_draws_need_increasing_cutpoints() {
    let c = [0.0, -1.0];
    let mut out = [0.0];
    let e = draw(
        "ordered_logistic",
        &[s(&0.0), RngArg::vector(&c)],
        &mut out,
        &mut rng(),
    )
    .unwrap_err();
    assert!(e.contains("not increasing"), "{e}");
}

#[test]
fn truncated_draws_stay_in_the_interval_even_far_in_a_tail() {
    let mut out = [0.0; 300];
    let (lo, hi) = (10.0, 10.5);
    draw_truncated(
        "normal",
        &[s(&0.0), s(&1.0)],
        Some(s(&lo)),
        Some(s(&hi)),
        &mut out,
        &mut rng(),
    )
    .unwrap();
    assert!(out.iter().all(|&x| (lo..=hi).contains(&x)));
    draw_truncated("poisson", &[s(&3.0)], Some(s(&20.0)), None, &mut out, &mut rng()).unwrap();
    assert!(out.iter().all(|&x| x >= 20.0 && x.fract() == 0.0));
    draw_truncated(
        "von_mises",
        &[s(&0.0), s(&2.0)],
        Some(s(&-0.5)),
        Some(s(&0.5)),
        &mut out,
        &mut rng(),
    )
    .unwrap();
    assert!(out.iter().all(|&x| (-0.5..=0.5).contains(&x)));
}

#[test]
fn truncation_to_an_interval_without_mass_is_an_error() {
    let mut out = [0.0];
    let e = draw_truncated(
        "beta",
        &[s(&2.0), s(&2.0)],
        Some(s(&1.5)),
        None,
        &mut out,
        &mut rng(),
    )
    .unwrap_err();
    assert!(e.contains("no probability mass"), "{e}");
    let e = draw_truncated(
        "normal",
        &[s(&0.0), s(&1.0)],
        Some(s(&1.0)),
        Some(s(&0.0)),
        &mut out,
        &mut rng(),
    )
    .unwrap_err();
    assert!(e.contains("empty"), "{e}");
    let e = draw_truncated("bernoulli", &[s(&0.0)], Some(s(&1.0)), None, &mut out, &mut rng()).unwrap_err();
    assert!(e.contains("too little mass"), "{e}");
}
