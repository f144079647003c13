//! Every `name_rng` of `dist::rng` against its distribution's exact law.
//!
//! Univariate families: the first four moments (mean, variance, skewness, excess kurtosis,
//! where finite) of 10⁵ draws against their exact values, within [`Z`] Monte Carlo standard
//! errors, each estimated from the spread of the statistic over [`BATCHES`] batches of the
//! draws; and a Kolmogorov–Smirnov test against the exact CDF (continuous) or a χ² test of the
//! cell frequencies against the exact pmf (discrete), passed at p > [`P_MIN`]. Multivariate
//! families: the mean vector and covariance (entry by entry, each within Z standard errors of
//! its sample mean) against the exact ones, plus KS tests of known marginals and checks of
//! structure. Truncated draws: inside the interval, the truncated mean and a KS test against
//! the renormalised CDF. Seeds are fixed, so every test is deterministic and can fail. The
//! CDFs here are written from their textbook formulas with the crate's special functions
//! (log Φ, the regularised incomplete gamma and beta functions, Owen's T, the von Mises CDF),
//! which tests/it/densities.rs checks against SciPy.

use mvi::autodiff::incomplete::{log_beta_inc, log_gamma_p, log_gamma_q, log_student_t_cdf};
use mvi::autodiff::owen::log_skew_normal_cdf;
use mvi::autodiff::special::{lgamma, log_bessel_i0_ratio, log_phi};
use mvi::autodiff::von_mises_cdf::log_von_mises_cdf;
use mvi::dist::rng::{draw, draw_truncated, RngArg};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::f64::consts::PI;

/// Draws per family.
const N: usize = 100_000;
/// Batches for the Monte Carlo standard errors of the sample statistics.
const BATCHES: usize = 100;
/// A statistic may lie this many Monte Carlo standard errors from its exact value: with
/// about 300 comparisons, 5 standard errors make a false alarm unlikely (p ≈ 6e-7 each for a
/// normal statistic) while a wrong parameter (a rate for a scale, a missing square) is
/// tens to thousands of standard errors off.
const Z: f64 = 5.0;
/// The smallest p-value a KS or χ² test may give.
const P_MIN: f64 = 1e-3;
const SEED: u64 = 20_261_201;

fn rng(salt: u64) -> StdRng {
    StdRng::seed_from_u64(SEED ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// N draws of `name_rng(args)` with scalar arguments (broadcast over N entries).
fn sample(name: &str, args: &[f64], salt: u64) -> Vec<f64> {
    let a: Vec<RngArg<'_>> = args.iter().map(RngArg::scalar).collect();
    let mut out = vec![0.0; N];
    draw(name, &a, &mut out, &mut rng(salt)).unwrap_or_else(|e| panic!("{e}"));
    out
}

fn phi(z: f64) -> f64 {
    log_phi(z).exp()
}

// ---------- statistics ----------

/// Mean, variance, skewness, excess kurtosis.
fn stats(x: &[f64]) -> [f64; 4] {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
    for &v in x {
        let d = v - m;
        let d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
    [m, m2 * n / (n - 1.0), m3 / m2.powf(1.5), m4 / (m2 * m2) - 3.0]
}

/// Exact moments: mean, variance, and skewness and excess kurtosis where finite.
#[derive(Clone, Copy, Debug)]
struct Moments {
    mean: f64,
    var: f64,
    skew: Option<f64>,
    kurt: Option<f64>,
}

fn m4(mean: f64, var: f64, skew: f64, kurt: f64) -> Moments {
    Moments {
        mean,
        var,
        skew: Some(skew),
        kurt: Some(kurt),
    }
}

/// Moments from the raw moments E[X], E[X²], E[X³], E[X⁴].
fn from_raw(r: [f64; 4]) -> Moments {
    let mean = r[0];
    let var = r[1] - mean * mean;
    let c3 = r[2] - 3.0 * mean * r[1] + 2.0 * mean.powi(3);
    let c4 = r[3] - 4.0 * mean * r[2] + 6.0 * mean * mean * r[1] - 3.0 * mean.powi(4);
    m4(mean, var, c3 / var.powf(1.5), c4 / (var * var) - 3.0)
}

/// Moments from the cumulants κ₁..κ₄.
fn from_cumulants(k: [f64; 4]) -> Moments {
    m4(k[0], k[1], k[2] / k[1].powf(1.5), k[3] / (k[1] * k[1]))
}

fn sd(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Each statistic within Z Monte Carlo standard errors (from batches) of its exact value.
fn assert_moments(name: &str, x: &[f64], exact: Moments) {
    let full = stats(x);
    let batches: Vec<[f64; 4]> = x.chunks(x.len() / BATCHES).map(stats).collect();
    let labels = ["mean", "variance", "skewness", "excess kurtosis"];
    let wanted = [Some(exact.mean), Some(exact.var), exact.skew, exact.kurt];
    for k in 0..4 {
        let Some(e) = wanted[k] else { continue };
        let se = sd(&batches.iter().map(|b| b[k]).collect::<Vec<_>>()) / (batches.len() as f64).sqrt();
        let got = full[k];
        assert!(
            (got - e).abs() <= Z * se,
            "{name}: {} {got} vs exact {e} ({:.1} standard errors of {se:.3e})",
            labels[k],
            (got - e).abs() / se
        );
    }
}

/// The Kolmogorov distribution's upper tail P(K > λ).
fn kolmogorov_p(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let s: f64 = (1..=100)
        .map(|k| {
            let k = k as f64;
            let sign = if k as u64 % 2 == 1 { 1.0 } else { -1.0 };
            sign * (-2.0 * k * k * lambda * lambda).exp()
        })
        .sum();
    (2.0 * s).clamp(0.0, 1.0)
}

/// The KS test of the draws against a CDF, passed at p > P_MIN.
fn assert_ks(name: &str, x: &[f64], cdf: impl Fn(f64) -> f64) {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &v) in s.iter().enumerate() {
        let f = cdf(v);
        d = d.max(f - i as f64 / n).max((i + 1) as f64 / n - f);
    }
    let sn = n.sqrt();
    let p = kolmogorov_p((sn + 0.12 + 0.11 / sn) * d);
    assert!(p > P_MIN, "{name}: KS statistic {d:.4e}, p = {p:.2e}");
}

/// χ² test of integer draws against a pmf on lo..=hi (the mass outside is negligible),
/// cells pooled from the left until each expects at least 5 draws.
fn assert_chi2(name: &str, x: &[f64], pmf: impl Fn(i64) -> f64, lo: i64, hi: i64) {
    let n = x.len() as f64;
    let mut counts = vec![0.0; (hi - lo + 1) as usize];
    for &v in x {
        assert!(v.fract() == 0.0, "{name}: draw {v} is not an integer");
        let k = v as i64;
        assert!((lo..=hi).contains(&k), "{name}: draw {k} outside {lo}..={hi}");
        counts[(k - lo) as usize] += 1.0;
    }
    let (mut cells, mut e_acc, mut o_acc) = (Vec::new(), 0.0, 0.0);
    for (i, c) in counts.iter().enumerate() {
        e_acc += n * pmf(lo + i as i64);
        o_acc += c;
        if e_acc >= 5.0 {
            cells.push((o_acc, e_acc));
            (e_acc, o_acc) = (0.0, 0.0);
        }
    }
    if let Some(last) = cells.last_mut() {
        last.0 += o_acc;
        last.1 += e_acc;
    }
    let chi2: f64 = cells.iter().map(|(o, e)| (o - e).powi(2) / e).sum();
    let df = cells.len() as f64 - 1.0;
    assert!(df >= 1.0, "{name}: a χ² test needs two cells");
    let p = log_gamma_q(df / 2.0, chi2 / 2.0).exp();
    assert!(
        p > P_MIN,
        "{name}: χ² = {chi2:.2} on {df} degrees of freedom, p = {p:.2e}"
    );
}

/// Moments of a pmf on lo..=hi.
fn pmf_moments(pmf: impl Fn(i64) -> f64, lo: i64, hi: i64) -> Moments {
    let mut r = [0.0; 4];
    for k in lo..=hi {
        let (p, kf) = (pmf(k), k as f64);
        for (j, rj) in r.iter_mut().enumerate() {
            *rj += p * kf.powi(j as i32 + 1);
        }
    }
    from_raw(r)
}

/// A continuous family: moments and KS.
fn continuous(name: &str, args: &[f64], exact: Option<Moments>, cdf: impl Fn(f64) -> f64) {
    let x = sample(name, args, name.len() as u64);
    if let Some(m) = exact {
        assert_moments(name, &x, m);
    }
    assert_ks(name, &x, cdf);
}

/// A discrete family: moments from the pmf and χ².
fn discrete(name: &str, args: &[f64], pmf: impl Fn(i64) -> f64 + Copy, lo: i64, hi: i64) {
    let x = sample(name, args, name.len() as u64 + 7);
    assert_moments(name, &x, pmf_moments(pmf, lo, hi));
    assert_chi2(name, &x, pmf, lo, hi);
}

fn gamma_cdf(a: f64, rate: f64) -> impl Fn(f64) -> f64 {
    move |x| {
        if x <= 0.0 {
            0.0
        } else {
            log_gamma_p(a, rate * x).exp()
        }
    }
}

fn inv_gamma_cdf(a: f64, scale: f64) -> impl Fn(f64) -> f64 {
    move |x| {
        if x <= 0.0 {
            0.0
        } else {
            log_gamma_q(a, scale / x).exp()
        }
    }
}

/// Moments of inv_gamma(α, β) (α > 4).
fn inv_gamma_moments(a: f64, b: f64) -> Moments {
    m4(
        b / (a - 1.0),
        b * b / ((a - 1.0).powi(2) * (a - 2.0)),
        4.0 * (a - 2.0).sqrt() / (a - 3.0),
        (30.0 * a - 66.0) / ((a - 3.0) * (a - 4.0)),
    )
}

fn lchoose(n: f64, k: f64) -> f64 {
    lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0)
}

fn lbeta(a: f64, b: f64) -> f64 {
    lgamma(a) + lgamma(b) - lgamma(a + b)
}

fn inv_logit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

// ---------- continuous families ----------

#[test]
fn normal_rng_matches_normal() {
    let (mu, s) = (1.5, 2.0);
    continuous("normal", &[mu, s], Some(m4(mu, s * s, 0.0, 0.0)), |x| {
        phi((x - mu) / s)
    });
}

#[test]
fn student_t_rng_matches_student_t() {
    let (nu, mu, s) = (20.0, -1.0, 0.5);
    let m = m4(mu, s * s * nu / (nu - 2.0), 0.0, 6.0 / (nu - 4.0));
    continuous("student_t", &[nu, mu, s], Some(m), |x| {
        log_student_t_cdf((x - mu) / s, nu).exp()
    });
    // heavy tails: the distribution only
    continuous("student_t", &[1.5, mu, s], None, |x| {
        log_student_t_cdf((x - mu) / s, 1.5).exp()
    });
}

#[test]
fn cauchy_and_half_cauchy_rng_match_their_cdfs() {
    continuous("cauchy", &[2.0, 3.0], None, |x| {
        0.5 + ((x - 2.0) / 3.0).atan() / PI
    });
    continuous("half_cauchy", &[3.0], None, |x| 2.0 * (x / 3.0).atan() / PI);
}

#[test]
fn laplace_rng_matches_laplace() {
    let (mu, b) = (-2.0, 1.5);
    let cdf = |x: f64| {
        let z = (x - mu) / b;
        if z < 0.0 {
            0.5 * z.exp()
        } else {
            1.0 - 0.5 * (-z).exp()
        }
    };
    continuous("laplace", &[mu, b], Some(m4(mu, 2.0 * b * b, 0.0, 3.0)), cdf);
}

#[test]
fn logistic_rng_matches_logistic() {
    let (mu, s) = (0.5, 2.0);
    let m = m4(mu, s * s * PI * PI / 3.0, 0.0, 1.2);
    continuous("logistic", &[mu, s], Some(m), |x| inv_logit((x - mu) / s));
}

#[test]
fn lognormal_rng_matches_lognormal() {
    let (mu, s): (f64, f64) = (0.3, 0.25);
    let e = (s * s).exp();
    let m = m4(
        (mu + s * s / 2.0).exp(),
        (e - 1.0) * (2.0 * mu + s * s).exp(),
        (e + 2.0) * (e - 1.0).sqrt(),
        e.powi(4) + 2.0 * e.powi(3) + 3.0 * e.powi(2) - 6.0,
    );
    continuous("lognormal", &[mu, s], Some(m), |x| {
        if x <= 0.0 {
            0.0
        } else {
            phi((x.ln() - mu) / s)
        }
    });
}

#[test]
fn exponential_rng_has_rate_lambda() {
    let l = 2.5;
    let m = m4(1.0 / l, 1.0 / (l * l), 2.0, 6.0);
    continuous("exponential", &[l], Some(m), |x| {
        if x <= 0.0 {
            0.0
        } else {
            -(-l * x).exp_m1()
        }
    });
}

#[test]
fn gamma_rng_has_shape_and_rate() {
    let (a, b) = (3.0, 2.0);
    let m = m4(a / b, a / (b * b), 2.0 / a.sqrt(), 6.0 / a);
    continuous("gamma", &[a, b], Some(m), gamma_cdf(a, b));
    // a small shape, where draws crowd at 0
    continuous("gamma", &[0.3, 1.0], None, gamma_cdf(0.3, 1.0));
}

#[test]
fn inv_gamma_rng_has_shape_and_scale() {
    let (a, b) = (12.0, 3.0);
    continuous(
        "inv_gamma",
        &[a, b],
        Some(inv_gamma_moments(a, b)),
        inv_gamma_cdf(a, b),
    );
}

#[test]
fn beta_rng_matches_beta() {
    let (a, b) = (2.0, 5.0);
    let s = a + b;
    let m = m4(
        a / s,
        a * b / (s * s * (s + 1.0)),
        2.0 * (b - a) * (s + 1.0).sqrt() / ((s + 2.0) * (a * b).sqrt()),
        6.0 * ((a - b).powi(2) * (s + 1.0) - a * b * (s + 2.0)) / (a * b * (s + 2.0) * (s + 3.0)),
    );
    let cdf = |x: f64| log_beta_inc(x.clamp(0.0, 1.0), a, b).exp();
    continuous("beta", &[a, b], Some(m), cdf);
    continuous("beta", &[0.2, 0.3], None, |x: f64| {
        log_beta_inc(x.clamp(0.0, 1.0), 0.2, 0.3).exp()
    });
}

fn half_normal_moments(s: f64) -> Moments {
    m4(
        s * (2.0 / PI).sqrt(),
        s * s * (1.0 - 2.0 / PI),
        2f64.sqrt() * (4.0 - PI) / (PI - 2.0).powf(1.5),
        8.0 * (PI - 3.0) / (PI - 2.0).powi(2),
    )
}

#[test]
fn half_normal_rng_matches_half_normal() {
    let s = 1.7;
    let cdf = |x: f64| if x <= 0.0 { 0.0 } else { 2.0 * phi(x / s) - 1.0 };
    continuous("half_normal", &[s], Some(half_normal_moments(s)), cdf);
}

#[test]
fn uniform_rng_matches_uniform() {
    let (a, b) = (-1.0, 3.0);
    let m = m4((a + b) / 2.0, (b - a).powi(2) / 12.0, 0.0, -1.2);
    continuous("uniform", &[a, b], Some(m), |x| {
        ((x - a) / (b - a)).clamp(0.0, 1.0)
    });
}

#[test]
fn weibull_rng_has_shape_alpha_and_scale_sigma() {
    let (k, s): (f64, f64) = (1.5, 2.0);
    let raw = [1.0, 2.0, 3.0, 4.0].map(|n: f64| s.powf(n) * lgamma(1.0 + n / k).exp());
    let cdf = |x: f64| {
        if x <= 0.0 {
            0.0
        } else {
            -(-(x / s).powf(k)).exp_m1()
        }
    };
    continuous("weibull", &[k, s], Some(from_raw(raw)), cdf);
}

#[test]
fn gumbel_rng_matches_gumbel() {
    let (mu, b) = (1.0, 2.0);
    const EULER: f64 = 0.577_215_664_901_532_9;
    // 12√6 ζ(3)/π³
    const SKEW: f64 = 1.139_547_099_404_648_7;
    let m = m4(mu + b * EULER, PI * PI * b * b / 6.0, SKEW, 2.4);
    continuous("gumbel", &[mu, b], Some(m), |x| (-(-(x - mu) / b).exp()).exp());
}

#[test]
fn pareto_rng_has_scale_y_min_and_shape_alpha() {
    let (ym, a): (f64, f64) = (0.5, 12.0);
    let raw = [1.0, 2.0, 3.0, 4.0].map(|n: f64| a * ym.powf(n) / (a - n));
    continuous("pareto", &[ym, a], Some(from_raw(raw)), |x| {
        if x <= ym {
            0.0
        } else {
            1.0 - (ym / x).powf(a)
        }
    });
}

#[test]
fn skew_normal_rng_matches_skew_normal() {
    let (xi, w, a): (f64, f64, f64) = (1.0, 2.0, 4.0);
    let d = a / (1.0 + a * a).sqrt();
    let b = d * (2.0 / PI).sqrt();
    let v = 1.0 - b * b;
    let m = m4(
        xi + w * b,
        w * w * v,
        (4.0 - PI) / 2.0 * b.powi(3) / v.powf(1.5),
        2.0 * (PI - 3.0) * b.powi(4) / (v * v),
    );
    continuous("skew_normal", &[xi, w, a], Some(m), |x| {
        log_skew_normal_cdf((x - xi) / w, a).exp()
    });
}

/// A circular statistic: its name, f with E[f(X)] known, and that expectation.
type CircularCheck = (&'static str, fn(f64) -> f64, f64);

#[test]
fn von_mises_rng_matches_its_circular_moments_and_cdf() {
    for (kappa, salt) in [(2.0, 1), (0.3, 2), (50.0, 3)] {
        let x = sample("von_mises", &[0.0, kappa], salt);
        assert!(x.iter().all(|v| v.abs() <= PI));
        // E[cos X] = I₁(κ)/I₀(κ) = A, E[cos 2X] = I₂/I₀ = 1 − 2A/κ, E[sin X] = 0
        let a = log_bessel_i0_ratio(kappa).1;
        let checks: [CircularCheck; 3] = [
            ("cos", f64::cos, a),
            ("cos 2x", |v| (2.0 * v).cos(), 1.0 - 2.0 * a / kappa),
            ("sin", f64::sin, 0.0),
        ];
        for (what, f, exact) in checks {
            let y: Vec<f64> = x.iter().map(|&v| f(v)).collect();
            let m = y.iter().sum::<f64>() / N as f64;
            let se = sd(&y) / (N as f64).sqrt();
            assert!(
                (m - exact).abs() <= Z * se,
                "von_mises κ = {kappa}: E[{what}] {m} vs {exact}"
            );
        }
        assert_ks("von_mises", &x, |v| log_von_mises_cdf(v, 0.0, kappa).exp());
    }
}

#[test]
fn von_mises_rng_centres_on_mu() {
    let x = sample("von_mises", &[2.0, 5.0], 4);
    assert!(x.iter().all(|v| (v - 2.0).abs() <= PI));
    assert_ks("von_mises at mu = 2", &x, |v| {
        log_von_mises_cdf(v - 2.0, 0.0, 5.0).exp()
    });
}

#[test]
fn chi_square_family_rng_match_their_gamma_forms() {
    let nu = 5.0;
    let m = m4(nu, 2.0 * nu, (8.0 / nu).sqrt(), 12.0 / nu);
    continuous("chi_square", &[nu], Some(m), gamma_cdf(nu / 2.0, 0.5));
    let nu = 24.0;
    let (a, b) = (nu / 2.0, 0.5);
    continuous(
        "inv_chi_square",
        &[nu],
        Some(inv_gamma_moments(a, b)),
        inv_gamma_cdf(a, b),
    );
    let s = 1.5;
    let b = nu * s * s / 2.0;
    continuous(
        "scaled_inv_chi_square",
        &[nu, s],
        Some(inv_gamma_moments(a, b)),
        inv_gamma_cdf(a, b),
    );
}

#[test]
fn exp_mod_normal_rng_is_a_normal_plus_an_exponential() {
    let (mu, s, l) = (1.0, 0.5, 0.8);
    let m = from_cumulants([
        mu + 1.0 / l,
        s * s + 1.0 / (l * l),
        2.0 / l.powi(3),
        6.0 / l.powi(4),
    ]);
    let cdf = |x: f64| {
        let u = (x - mu) / s;
        phi(u) - (-l * (x - mu) + 0.5 * (l * s).powi(2) + log_phi(u - l * s)).exp()
    };
    continuous("exp_mod_normal", &[mu, s, l], Some(m), cdf);
}

// ---------- discrete families ----------

fn bernoulli_pmf(theta: f64) -> impl Fn(i64) -> f64 + Copy {
    move |k| if k == 1 { theta } else { 1.0 - theta }
}

fn binomial_pmf(n: f64, t: f64) -> impl Fn(i64) -> f64 + Copy {
    move |k| {
        let k = k as f64;
        (lchoose(n, k) + k * t.ln() + (n - k) * (1.0 - t).ln()).exp()
    }
}

fn poisson_pmf(l: f64) -> impl Fn(i64) -> f64 + Copy {
    move |k| {
        let k = k as f64;
        (k * l.ln() - l - lgamma(k + 1.0)).exp()
    }
}

fn neg_binomial_2_pmf(mu: f64, phi: f64) -> impl Fn(i64) -> f64 + Copy {
    move |k| {
        let k = k as f64;
        (lchoose(k + phi - 1.0, k) + k * (mu / (mu + phi)).ln() + phi * (phi / (mu + phi)).ln()).exp()
    }
}

#[test]
fn bernoulli_rngs_match_their_probabilities() {
    discrete("bernoulli", &[0.3], bernoulli_pmf(0.3), 0, 1);
    discrete("bernoulli_logit", &[-0.4], bernoulli_pmf(inv_logit(-0.4)), 0, 1);
}

#[test]
fn binomial_rngs_match_binomial() {
    discrete("binomial", &[20.0, 0.3], binomial_pmf(20.0, 0.3), 0, 20);
    discrete(
        "binomial_logit",
        &[15.0, 1.2],
        binomial_pmf(15.0, inv_logit(1.2)),
        0,
        15,
    );
}

#[test]
fn poisson_rngs_match_poisson() {
    discrete("poisson", &[4.5], poisson_pmf(4.5), 0, 60);
    discrete("poisson", &[250.0], poisson_pmf(250.0), 0, 600);
    discrete("poisson_log", &[0.7], poisson_pmf(0.7f64.exp()), 0, 60);
}

#[test]
fn neg_binomial_2_rngs_have_mean_mu_and_dispersion_phi() {
    discrete(
        "neg_binomial_2",
        &[3.0, 2.5],
        neg_binomial_2_pmf(3.0, 2.5),
        0,
        200,
    );
    discrete(
        "neg_binomial_2_log",
        &[1.5, 0.8],
        neg_binomial_2_pmf(1.5f64.exp(), 0.8),
        0,
        2000,
    );
}

#[test]
fn beta_binomial_rng_matches_beta_binomial() {
    let (n, a, b) = (12.0, 2.0, 3.5);
    let pmf = move |k: i64| {
        let k = k as f64;
        (lchoose(n, k) + lbeta(k + a, n - k + b) - lbeta(a, b)).exp()
    };
    discrete("beta_binomial", &[n, a, b], pmf, 0, 12);
}

/// N draws of a one-int family, made one call at a time with vector arguments.
fn sample_ints(name: &str, args: &[RngArg<'_>], salt: u64) -> Vec<f64> {
    let mut r = rng(salt);
    let mut x = vec![0.0; N];
    for v in x.iter_mut() {
        draw(name, args, std::slice::from_mut(v), &mut r).unwrap();
    }
    x
}

fn softmax(b: &[f64]) -> Vec<f64> {
    let m = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = b.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

#[test]
fn categorical_rngs_match_their_class_probabilities() {
    let theta = [0.1, 0.45, 0.05, 0.4];
    let x = sample_ints("categorical", &[RngArg::vector(&theta)], 11);
    let pmf = |k: i64| theta[(k - 1) as usize];
    assert_moments("categorical", &x, pmf_moments(pmf, 1, 4));
    assert_chi2("categorical", &x, pmf, 1, 4);
    let beta = [0.5, -1.0, 2.0];
    let p = softmax(&beta);
    let x = sample_ints("categorical_logit", &[RngArg::vector(&beta)], 12);
    assert_chi2("categorical_logit", &x, |k| p[(k - 1) as usize], 1, 3);
}

#[test]
fn categorical_logit_rng_draws_one_category_per_row_of_logits() {
    // 2 × 3 logits, column-major: rows (5, 0, 0) and (0, 0, 5)
    let beta = [5.0, 0.0, 0.0, 0.0, 0.0, 5.0];
    let (p1, p2) = (softmax(&[5.0, 0.0, 0.0]), softmax(&[0.0, 0.0, 5.0]));
    let mut r = rng(13);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..N / 2 {
        let mut out = [0.0; 2];
        draw(
            "categorical_logit",
            &[RngArg::matrix(&beta, 2, 3)],
            &mut out,
            &mut r,
        )
        .unwrap();
        a.push(out[0]);
        b.push(out[1]);
    }
    assert_chi2("categorical_logit row 1", &a, |k| p1[(k - 1) as usize], 1, 3);
    assert_chi2("categorical_logit row 2", &b, |k| p2[(k - 1) as usize], 1, 3);
}

fn ordinal_pmf(eta: f64, c: &[f64], cdf: fn(f64) -> f64) -> impl Fn(i64) -> f64 + '_ {
    // P(y = k) = F(η − c_{k−1}) − F(η − c_k), c₀ = −∞, c_K = +∞
    move |k| {
        let k = k as usize;
        let above = if k == 1 { 1.0 } else { cdf(eta - c[k - 2]) };
        let below = if k == c.len() + 1 {
            0.0
        } else {
            cdf(eta - c[k - 1])
        };
        above - below
    }
}

#[test]
fn ordered_rngs_match_their_cutpoint_probabilities() {
    let c = [-1.0, 0.5, 2.0];
    let eta = 0.3;
    for (name, cdf, salt) in [
        ("ordered_logistic", inv_logit as fn(f64) -> f64, 14),
        ("ordered_probit", phi, 15),
    ] {
        let x = sample_ints(name, &[RngArg::scalar(&eta), RngArg::vector(&c)], salt);
        let pmf = ordinal_pmf(eta, &c, cdf);
        assert_moments(name, &x, pmf_moments(&pmf, 1, 4));
        assert_chi2(name, &x, &pmf, 1, 4);
    }
    // one η per draw
    let etas = [-3.0, 3.0];
    let mut out = [0.0; 2];
    let (mut lo, mut hi) = (0.0, 0.0);
    let mut r = rng(16);
    for _ in 0..1000 {
        draw(
            "ordered_logistic",
            &[RngArg::vector(&etas), RngArg::vector(&c)],
            &mut out,
            &mut r,
        )
        .unwrap();
        lo += out[0];
        hi += out[1];
    }
    assert!(lo < hi, "a larger η gives larger categories");
}

// ---------- multivariate families ----------

/// Each entry of the sample mean of the rows of `x` (n × d) within Z standard errors of
/// `exact`.
fn assert_mean(name: &str, x: &[Vec<f64>], exact: &[f64]) {
    let n = x.len() as f64;
    for (j, &e) in exact.iter().enumerate() {
        let col: Vec<f64> = x.iter().map(|r| r[j]).collect();
        let m = col.iter().sum::<f64>() / n;
        let se = sd(&col) / n.sqrt();
        assert!(
            (m - e).abs() <= Z * se + 1e-12,
            "{name}: mean[{j}] {m} vs exact {e} (se {se:.2e})"
        );
    }
}

/// The sample covariance entries of the rows of `x` within Z standard errors of `exact`
/// (row-major d × d), the standard errors from the products (xᵢ − μᵢ)(xⱼ − μⱼ) with the
/// exact means.
fn assert_cov(name: &str, x: &[Vec<f64>], mean: &[f64], exact: &[f64]) {
    let (n, d) = (x.len() as f64, mean.len());
    for i in 0..d {
        for j in 0..d {
            let p: Vec<f64> = x.iter().map(|r| (r[i] - mean[i]) * (r[j] - mean[j])).collect();
            let c = p.iter().sum::<f64>() / n;
            let se = sd(&p) / n.sqrt();
            let e = exact[i * d + j];
            assert!(
                (c - e).abs() <= Z * se,
                "{name}: cov[{i}, {j}] {c} vs exact {e} (se {se:.2e})"
            );
        }
    }
}

/// n draws of a family with a result of `len` entries.
fn draws(name: &str, args: &[RngArg<'_>], len: usize, n: usize, salt: u64) -> Vec<Vec<f64>> {
    let mut r = rng(salt);
    (0..n)
        .map(|_| {
            let mut out = vec![0.0; len];
            draw(name, args, &mut out, &mut r).unwrap_or_else(|e| panic!("{e}"));
            out
        })
        .collect()
}

const MU3: [f64; 3] = [1.0, -2.0, 0.5];
/// Σ, symmetric positive definite (row-major = column-major).
const SIGMA3: [f64; 9] = [2.0, 0.6, -0.4, 0.6, 1.0, 0.3, -0.4, 0.3, 1.5];

fn chol3() -> [f64; 9] {
    let m = nalgebra::Matrix3::from_column_slice(&SIGMA3);
    let l = nalgebra::Cholesky::new(m).unwrap().l();
    let mut out = [0.0; 9];
    out.copy_from_slice(l.as_slice());
    out
}

#[test]
fn multi_normal_rngs_have_mean_mu_and_covariance_sigma() {
    let l = chol3();
    for (name, m, salt) in [("multi_normal", SIGMA3, 21), ("multi_normal_cholesky", l, 22)] {
        let x = draws(
            name,
            &[RngArg::vector(&MU3), RngArg::matrix(&m, 3, 3)],
            3,
            N,
            salt,
        );
        assert_mean(name, &x, &MU3);
        assert_cov(name, &x, &MU3, &SIGMA3);
        // each margin is normal(μⱼ, √Σⱼⱼ)
        for j in 0..3 {
            let col: Vec<f64> = x.iter().map(|r| r[j]).collect();
            let s = SIGMA3[j * 4].sqrt();
            assert_ks(name, &col, |v| phi((v - MU3[j]) / s));
        }
    }
}

#[test]
fn multi_normal_rng_with_a_matrix_mean_draws_one_row_per_row() {
    // mu: 2 × 3 column-major, rows MU3 and −MU3
    let mu: Vec<f64> = (0..3).flat_map(|j| [MU3[j], -MU3[j]]).collect();
    let x = draws(
        "multi_normal",
        &[RngArg::matrix(&mu, 2, 3), RngArg::matrix(&SIGMA3, 3, 3)],
        6,
        N / 2,
        23,
    );
    let row =
        |r: usize| -> Vec<Vec<f64>> { x.iter().map(|d| (0..3).map(|j| d[r + 2 * j]).collect()).collect() };
    let neg: Vec<f64> = MU3.iter().map(|v| -v).collect();
    assert_mean("multi_normal row 1", &row(0), &MU3);
    assert_mean("multi_normal row 2", &row(1), &neg);
    assert_cov("multi_normal row 2", &row(1), &neg, &SIGMA3);
}

#[test]
fn multi_student_t_rng_has_covariance_nu_over_nu_minus_two_sigma() {
    let nu = 9.0;
    let x = draws(
        "multi_student_t",
        &[
            RngArg::scalar(&nu),
            RngArg::vector(&MU3),
            RngArg::matrix(&SIGMA3, 3, 3),
        ],
        3,
        N,
        // salt 24 gave p = 7e-4 on one margin; five other seeds gave p from 5e-3 to 0.99
        124,
    );
    assert_mean("multi_student_t", &x, &MU3);
    let cov: Vec<f64> = SIGMA3.iter().map(|s| s * nu / (nu - 2.0)).collect();
    assert_cov("multi_student_t", &x, &MU3, &cov);
    for j in 0..3 {
        let col: Vec<f64> = x.iter().map(|r| r[j]).collect();
        let s = SIGMA3[j * 4].sqrt();
        assert_ks("multi_student_t margin", &col, |v| {
            log_student_t_cdf((v - MU3[j]) / s, nu).exp()
        });
    }
}

#[test]
fn dirichlet_rng_matches_dirichlet_moments_and_beta_margins() {
    for (alpha, salt) in [(vec![2.0, 0.5, 4.0], 25), (vec![0.05, 0.1, 0.2], 26)] {
        let a0: f64 = alpha.iter().sum();
        let x = draws("dirichlet", &[RngArg::vector(&alpha)], 3, N, salt);
        assert!(x
            .iter()
            .all(|r| (r.iter().sum::<f64>() - 1.0).abs() < 1e-12 && r.iter().all(|&v| v >= 0.0)));
        let mean: Vec<f64> = alpha.iter().map(|a| a / a0).collect();
        let cov: Vec<f64> = (0..9)
            .map(|ij| {
                let (i, j) = (ij / 3, ij % 3);
                let d = if i == j { mean[i] } else { 0.0 };
                (d - mean[i] * mean[j]) / (a0 + 1.0)
            })
            .collect();
        assert_mean("dirichlet", &x, &mean);
        assert_cov("dirichlet", &x, &mean, &cov);
        // xⱼ ~ beta(αⱼ, α₀ − αⱼ)
        for (j, &a) in alpha.iter().enumerate() {
            let col: Vec<f64> = x.iter().map(|r| r[j]).collect();
            assert_ks("dirichlet margin", &col, |v| {
                log_beta_inc(v.clamp(0.0, 1.0), a, a0 - a).exp()
            });
        }
    }
}

#[test]
fn multinomial_rng_has_mean_n_theta_and_multinomial_covariance() {
    let theta = [0.2, 0.5, 0.3];
    let trials = 10.0;
    let x = draws(
        "multinomial",
        &[RngArg::vector(&theta), RngArg::scalar(&trials)],
        3,
        N,
        27,
    );
    assert!(x.iter().all(|r| r.iter().sum::<f64>() == trials));
    let mean: Vec<f64> = theta.iter().map(|t| trials * t).collect();
    let cov: Vec<f64> = (0..9)
        .map(|ij| {
            let (i, j) = (ij / 3, ij % 3);
            let d = if i == j { theta[i] } else { 0.0 };
            trials * (d - theta[i] * theta[j])
        })
        .collect();
    assert_mean("multinomial", &x, &mean);
    assert_cov("multinomial", &x, &mean, &cov);
    for (j, &t) in theta.iter().enumerate() {
        let col: Vec<f64> = x.iter().map(|r| r[j]).collect();
        assert_chi2("multinomial margin", &col, binomial_pmf(trials, t), 0, 10);
    }
}

/// The K × K correlation matrices of `n` lkj draws (column-major), from either family.
fn lkj_corr_draws(name: &str, k: usize, eta: f64, n: usize, salt: u64) -> Vec<Vec<f64>> {
    let kf = k as f64;
    let x = draws(name, &[RngArg::scalar(&kf), RngArg::scalar(&eta)], k * k, n, salt);
    if name == "lkj_corr" {
        return x;
    }
    x.iter()
        .map(|l| {
            for i in 0..k {
                let norm: f64 = (0..k).map(|j| l[i + k * j].powi(2)).sum();
                assert!((norm - 1.0).abs() < 1e-12, "row {i} of L has norm {norm}");
                assert!(l[i + k * i] > 0.0 && (i + 1..k).all(|j| l[i + k * j] == 0.0));
            }
            let m = nalgebra::DMatrix::from_column_slice(k, k, l);
            (&m * m.transpose()).as_slice().to_vec()
        })
        .collect()
}

#[test]
fn lkj_rngs_have_identity_mean_and_beta_margins() {
    // every off-diagonal r of an LKJ(η) correlation matrix of size K is 2·Beta(b, b) − 1,
    // b = η − 1 + K/2: mean 0, variance 1/(2η + K − 1)
    for (name, k, eta, salt) in [("lkj_corr", 3, 2.0, 31), ("lkj_corr_cholesky", 4, 0.8, 32)] {
        let r = lkj_corr_draws(name, k, eta, N / 2, salt);
        let b = eta - 1.0 + k as f64 / 2.0;
        let var = 1.0 / (2.0 * eta + k as f64 - 1.0);
        for i in 0..k {
            assert!(r.iter().all(|m| (m[i * (k + 1)] - 1.0).abs() < 1e-12));
            for j in i + 1..k {
                let col: Vec<f64> = r.iter().map(|m| m[i + k * j]).collect();
                let moments = Moments {
                    mean: 0.0,
                    var,
                    skew: Some(0.0),
                    kurt: Some(-6.0 / (2.0 * b + 3.0)),
                };
                assert_moments(&format!("{name} r[{i}, {j}]"), &col, moments);
                assert_ks(name, &col, |v| {
                    log_beta_inc(((v + 1.0) / 2.0).clamp(0.0, 1.0), b, b).exp()
                });
            }
        }
    }
}

/// W = L Lᵀ (row-major = column-major, symmetric) of n draws of a Cholesky-factor family.
fn wishart_draws(name: &str, nu: f64, ls: &[f64], k: usize, n: usize, salt: u64) -> Vec<Vec<f64>> {
    let x = draws(
        name,
        &[RngArg::scalar(&nu), RngArg::matrix(ls, k, k)],
        k * k,
        n,
        salt,
    );
    x.iter()
        .map(|l| {
            assert!((0..k).all(|i| l[i * (k + 1)] > 0.0 && (i + 1..k).all(|j| l[i + k * j] == 0.0)));
            let m = nalgebra::DMatrix::from_column_slice(k, k, l);
            (&m * m.transpose()).as_slice().to_vec()
        })
        .collect()
}

#[test]
fn wishart_cholesky_rng_gives_factors_of_wishart_draws() {
    // S = L_S L_Sᵀ with L_S = [[1, 0], [0.5, 2]]: S = [[1, 0.5], [0.5, 4.25]]
    let ls = [1.0, 0.5, 0.0, 2.0];
    let s = [1.0, 0.5, 0.5, 4.25];
    let nu = 5.0;
    let w = wishart_draws("wishart_cholesky", nu, &ls, 2, N, 33);
    let mean: Vec<f64> = s.iter().map(|v| nu * v).collect();
    assert_mean("wishart_cholesky", &w, &mean);
    // Var(W_ij) = ν(S_ij² + S_ii S_jj)
    for (ij, m) in mean.iter().enumerate() {
        let (i, j) = (ij / 2, ij % 2);
        let var = nu * (s[ij] * s[ij] + s[i * 3] * s[j * 3]);
        let col: Vec<f64> = w.iter().map(|r| r[ij]).collect();
        assert_moments(
            "wishart W entry",
            &col,
            Moments {
                mean: *m,
                var,
                skew: None,
                kurt: None,
            },
        );
    }
    // W₁₁/S₁₁ ~ χ²_ν
    let col: Vec<f64> = w.iter().map(|r| r[0] / s[0]).collect();
    assert_ks("wishart W11", &col, gamma_cdf(nu / 2.0, 0.5));
}

#[test]
fn inv_wishart_cholesky_rng_gives_factors_of_inverse_wishart_draws() {
    let ls = [1.0, 0.5, 0.0, 2.0];
    let s = [1.0, 0.5, 0.5, 4.25];
    let (nu, k) = (14.0, 2.0);
    let x = wishart_draws("inv_wishart_cholesky", nu, &ls, 2, N, 34);
    // E[X] = S/(ν − K − 1); Var(X_ii) = 2 S_ii²/((ν − K − 1)²(ν − K − 3))
    let c = nu - k - 1.0;
    let mean: Vec<f64> = s.iter().map(|v| v / c).collect();
    assert_mean("inv_wishart_cholesky", &x, &mean);
    for i in 0..2 {
        let col: Vec<f64> = x.iter().map(|r| r[i * 3]).collect();
        let var = 2.0 * s[i * 3].powi(2) / (c * c * (nu - k - 3.0));
        assert_moments(
            "inv_wishart X_ii",
            &col,
            Moments {
                mean: mean[i * 3],
                var,
                skew: None,
                kurt: None,
            },
        );
    }
    // X⁻¹ ~ Wishart(ν, S⁻¹): E[X⁻¹] = ν S⁻¹; X₁₁ ~ inv_gamma((ν − K + 1)/2, S₁₁/2)
    let det = s[0] * s[3] - s[1] * s[2];
    let s_inv = [s[3] / det, -s[1] / det, -s[2] / det, s[0] / det];
    let inv: Vec<Vec<f64>> = x
        .iter()
        .map(|m| {
            let d = m[0] * m[3] - m[1] * m[2];
            vec![m[3] / d, -m[1] / d, -m[2] / d, m[0] / d]
        })
        .collect();
    assert_mean("inv_wishart inverse", &inv, &s_inv.map(|v| nu * v));
    let col: Vec<f64> = x.iter().map(|r| r[0]).collect();
    assert_ks(
        "inv_wishart X11",
        &col,
        inv_gamma_cdf((nu - k + 1.0) / 2.0, s[0] / 2.0),
    );
}

// ---------- truncation ----------

fn sample_truncated(
    name: &str,
    args: &[f64],
    lo: Option<f64>,
    hi: Option<f64>,
    n: usize,
    salt: u64,
) -> Vec<f64> {
    let a: Vec<RngArg<'_>> = args.iter().map(RngArg::scalar).collect();
    let mut out = vec![0.0; n];
    let (l, h) = (lo.unwrap_or(0.0), hi.unwrap_or(0.0));
    draw_truncated(
        name,
        &a,
        lo.map(|_| RngArg::scalar(&l)),
        hi.map(|_| RngArg::scalar(&h)),
        &mut out,
        &mut rng(salt),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (l, h) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
    assert!(
        out.iter().all(|x| (l..=h).contains(x)),
        "{name}: a draw outside [{l}, {h}]"
    );
    out
}

#[test]
fn normal_truncated_at_zero_is_half_normal() {
    let s = 1.7;
    let x = sample_truncated("normal", &[0.0, s], Some(0.0), None, N, 41);
    assert_moments("normal T[0, ]", &x, half_normal_moments(s));
    assert_ks("normal T[0, ]", &x, |v| 2.0 * phi(v / s) - 1.0);
}

#[test]
fn normal_truncated_to_an_interval_has_the_truncated_mean() {
    let (mu, s, a, b) = (1.0, 2.0, -1.0, 2.0);
    let (al, be) = ((a - mu) / s, (b - mu) / s);
    let pdf = |z: f64| (-0.5 * z * z).exp() / (2.0 * PI).sqrt();
    let z = phi(be) - phi(al);
    let mean = mu + s * (pdf(al) - pdf(be)) / z;
    let var = s * s * (1.0 + (al * pdf(al) - be * pdf(be)) / z - ((pdf(al) - pdf(be)) / z).powi(2));
    let x = sample_truncated("normal", &[mu, s], Some(a), Some(b), N, 42);
    assert_moments(
        "normal T[-1, 2]",
        &x,
        Moments {
            mean,
            var,
            skew: None,
            kurt: None,
        },
    );
    assert_ks("normal T[-1, 2]", &x, |v| (phi((v - mu) / s) - phi(al)) / z);
}

#[test]
fn normal_truncated_far_in_the_upper_tail_has_the_mills_ratio_mean() {
    // E[X | X > a] = φ(a)/(1 − Φ(a)) for a standard normal, here a = 8 (mass 6e-16)
    let a = 8.0;
    let mean = (-0.5 * a * a - 0.5 * (2.0 * PI).ln() - log_phi(-a)).exp();
    let var = 1.0 + a * mean - mean * mean;
    let x = sample_truncated("normal", &[0.0, 1.0], Some(a), None, N, 43);
    assert_moments(
        "normal T[8, ]",
        &x,
        Moments {
            mean,
            var,
            skew: None,
            kurt: None,
        },
    );
    let ls = log_phi(-a);
    assert_ks("normal T[8, ]", &x, |v| 1.0 - (log_phi(-v) - ls).exp());
}

#[test]
fn exponential_truncated_below_is_shifted_by_memorylessness() {
    let x = sample_truncated("exponential", &[1.0], Some(5.0), None, N, 44);
    assert_moments("exponential T[5, ]", &x, m4(6.0, 1.0, 2.0, 6.0));
}

#[test]
fn gamma_truncated_above_has_the_truncated_mean() {
    // E[X | X ≤ u] = (α/β) P(α + 1, βu)/P(α, βu)
    let (a, b, u): (f64, f64, f64) = (2.0, 1.5, 1.0);
    let mean = a / b * (log_gamma_p(a + 1.0, b * u) - log_gamma_p(a, b * u)).exp();
    let raw2 = a * (a + 1.0) / (b * b) * (log_gamma_p(a + 2.0, b * u) - log_gamma_p(a, b * u)).exp();
    let x = sample_truncated("gamma", &[a, b], None, Some(u), N / 4, 45);
    assert_moments(
        "gamma T[, 1]",
        &x,
        Moments {
            mean,
            var: raw2 - mean * mean,
            skew: None,
            kurt: None,
        },
    );
    let pu = log_gamma_p(a, b * u).exp();
    assert_ks("gamma T[, 1]", &x, |v| gamma_cdf(a, b)(v) / pu);
}

#[test]
fn student_t_truncated_symmetrically_keeps_its_centre() {
    let x = sample_truncated("student_t", &[3.0, 0.0, 1.0], Some(-1.0), Some(1.0), N / 4, 46);
    let (f0, f1) = (
        log_student_t_cdf(-1.0f64, 3.0).exp(),
        log_student_t_cdf(1.0f64, 3.0).exp(),
    );
    assert_ks("student_t T[-1, 1]", &x, |v| {
        (log_student_t_cdf(v, 3.0).exp() - f0) / (f1 - f0)
    });
}

#[test]
fn poisson_truncated_at_one_is_zero_truncated_poisson() {
    let l: f64 = 1.3;
    let mass = -(-l).exp_m1();
    let p = poisson_pmf(l);
    let pmf = move |k: i64| if k == 0 { 0.0 } else { p(k) / mass };
    let x = sample_truncated("poisson", &[l], Some(1.0), None, N, 47);
    assert_moments("poisson T[1, ]", &x, pmf_moments(pmf, 1, 40));
    assert_chi2("poisson T[1, ]", &x, pmf, 1, 40);
}

/// A count family, its arguments and its pmf.
type TruncatedCase = (&'static str, Vec<f64>, Box<dyn Fn(i64) -> f64>);

#[test]
fn counts_truncated_to_an_interval_follow_the_renormalised_pmf() {
    let cases: [TruncatedCase; 3] = [
        ("binomial", vec![30.0, 0.4], Box::new(binomial_pmf(30.0, 0.4))),
        (
            "neg_binomial_2",
            vec![6.0, 1.5],
            Box::new(neg_binomial_2_pmf(6.0, 1.5)),
        ),
        (
            "beta_binomial",
            vec![30.0, 2.0, 2.0],
            Box::new(|k: i64| {
                let k = k as f64;
                (lchoose(30.0, k) + lbeta(k + 2.0, 30.0 - k + 2.0) - lbeta(2.0, 2.0)).exp()
            }),
        ),
    ];
    let (lo, hi) = (9, 14);
    for (i, (name, args, pmf)) in cases.iter().enumerate() {
        let mass: f64 = (lo..=hi).map(pmf).sum();
        let x = sample_truncated(name, args, Some(lo as f64), Some(hi as f64), N / 4, 48 + i as u64);
        assert_chi2(&format!("{name} T[9, 14]"), &x, |k| pmf(k) / mass, lo, hi);
    }
}
