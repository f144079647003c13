//! Whole-pipeline use of the CDFs through the incomplete gamma and beta functions: a model
//! using every `student_t`, `gamma`, `inv_gamma` and `beta` `_lcdf`/`_lccdf` form checks,
//! lowers and passes `diagnose`; a right-censored gamma survival model fitted with laplace
//! has its mode where an independent implementation of the same log posterior (the survival
//! function by quadrature of the gamma density, not through the crate's incomplete gamma
//! function) has zero gradient.

use crate::common::load;
use mvi::autodiff::special::{lgamma, log_phi};
use mvi::check;
use mvi::graph::{self, Tolerances};
use mvi::infer::Silent;
use mvi::posterior::Approximation;
use mvi::run::{self, RunInfo};
use nalgebra::DVector;

const EVERY_FORM: &str = "data {
  x: vector[N]
  u: vector[N]
}
param {
  nu: real<lower=0>
  a: real<lower=0>
  b: real<lower=0>
  m: real
}
model {
  nu ~ gamma(2, 0.5)
  a ~ gamma(2, 1)
  b ~ gamma(2, 1)
  m ~ normal(0, 1)
  target += student_t_lcdf(x | nu, m, 1) + student_t_lccdf(x | nu, m, 2)
  target += gamma_lcdf(u | a, b) + gamma_lccdf(u | a, b)
  target += inv_gamma_lcdf(u | a, b) + inv_gamma_lccdf(u | a, b)
  target += beta_lcdf(u / 4 | a, b) + beta_lccdf(u / 4 | a, b)
}
";

#[test]
fn every_new_cdf_form_checks_lowers_and_passes_diagnose() {
    let (_, joint) = load(EVERY_FORM, r#"{"x": [-3.0, 0.2, 1.5], "u": [0.3, 1.1, 2.9]}"#);
    let dump = graph::dump_graph(&joint.graph);
    for op in [
        "log_student_t_cdf",
        "log_gamma_p",
        "log_gamma_q",
        "log_beta_inc ",
        "log_beta_inc_c",
    ] {
        assert!(dump.contains(op), "`{op}` missing from the graph:\n{dump}");
    }
    for w in [[0.3, -0.2, 0.5, 0.1], [1.5, 0.8, -0.9, -1.2]] {
        let report = graph::diagnose(
            &joint,
            &DVector::zeros(0),
            &DVector::from_row_slice(&w),
            Tolerances::default(),
        );
        assert!(report.passed(), "diagnose failed at {w:?}: {report:?}");
    }
}

/// Observed event times and right-censoring times (still alive at c).
const TIMES: [f64; 8] = [0.8, 1.9, 2.4, 3.1, 4.0, 5.6, 1.2, 7.3];
const CENSORED: [f64; 4] = [3.0, 6.0, 8.5, 10.0];

const SURVIVAL: &str = "data {
  t: vector[N]
  c: vector[M]
}
param {
  alpha: real<lower=0>
  beta: real<lower=0>
}
model {
  alpha ~ gamma(2, 1)
  beta ~ gamma(2, 1)
  t ~ gamma(alpha, beta)
  target += gamma_lccdf(c | alpha, beta)
}
infer {
  method = laplace
}
";

fn log_gamma_density(x: f64, a: f64, b: f64) -> f64 {
    a * b.ln() - lgamma(a) + (a - 1.0) * x.ln() - b * x
}

/// log P(X > c) for X ~ Gamma(a, rate b), by composite Simpson quadrature of the density on
/// [c, c + L] with the integrand scaled by its value at c (L covers 60 e-folds past c).
fn log_survival_by_quadrature(c: f64, a: f64, b: f64) -> f64 {
    let len = (60.0 + 4.0 * a) / b;
    let n = 20_000;
    let h = len / n as f64;
    let f0 = log_gamma_density(c, a, b);
    let f = |x: f64| (log_gamma_density(x, a, b) - f0).exp();
    let mut s = f(c) + f(c + len);
    for i in 1..n {
        s += f(c + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    f0 + (s * h / 3.0).ln()
}

/// The model's log posterior on the unconstrained scale (log α, log β), written out by hand.
fn independent_log_posterior(u: &[f64]) -> f64 {
    let (a, b) = (u[0].exp(), u[1].exp());
    let prior = log_gamma_density(a, 2.0, 1.0) + log_gamma_density(b, 2.0, 1.0);
    let jacobian = u[0] + u[1];
    let events: f64 = TIMES.iter().map(|&t| log_gamma_density(t, a, b)).sum();
    let censored: f64 = CENSORED
        .iter()
        .map(|&c| log_survival_by_quadrature(c, a, b))
        .sum();
    prior + jacobian + events + censored
}

#[test]
fn censored_gamma_survival_mode_matches_an_independent_optimum() {
    let json = format!(r#"{{"t": {TIMES:?}, "c": {CENSORED:?}}}"#);
    let (typed, joint) = load(SURVIVAL, &json);
    let options = check::infer_options(&typed, &[]).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let (post, _) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let Approximation::Gaussian(q) = &post.approx else {
        panic!("laplace gives a Gaussian")
    };
    let mode = q.mean.as_slice().to_vec();
    // the independent log posterior agrees with the graph's up to its constant-free form
    let lp_graph = |u: &[f64]| {
        let w = nalgebra::DMatrix::from_column_slice(2, 1, u);
        mvi::density::LogDensity::eval(&joint, &DVector::zeros(0), &w, mvi::density::Want::VALUE).values[0]
    };
    let shifted = [mode[0] + 0.3, mode[1] - 0.2];
    let diff_graph = lp_graph(&mode) - lp_graph(&shifted);
    let diff_indep = independent_log_posterior(&mode) - independent_log_posterior(&shifted);
    assert!(
        (diff_graph - diff_indep).abs() < 1e-8,
        "{diff_graph} vs {diff_indep}"
    );
    // the independent gradient vanishes at the mode (central differences, h = 1e-5)
    let h = 1e-5;
    for i in 0..2 {
        let (mut lo, mut hi) = (mode.clone(), mode.clone());
        lo[i] -= h;
        hi[i] += h;
        let g = (independent_log_posterior(&hi) - independent_log_posterior(&lo)) / (2.0 * h);
        assert!(g.abs() < 1e-4, "∂/∂u{i} = {g} at the laplace mode {mode:?}");
    }
    // and it is a maximum of the independent function, not merely a stationary point
    let at_mode = independent_log_posterior(&mode);
    for d in [[0.05, 0.0], [0.0, 0.05], [-0.05, 0.03]] {
        let p = [mode[0] + d[0], mode[1] + d[1]];
        assert!(independent_log_posterior(&p) < at_mode, "{p:?} beats the mode");
    }
}

/// Truncation by each family whose CDFs are new here, in one model: a skew normal and a
/// von Mises truncated on both sides, counts truncated below and above (binomial) and above
/// only (beta_binomial).
const TRUNCATED: &str = "data {
  y: vector[N]
  a: vector[N]
  k: ints[N]
  m: ints[N]
}
param {
  xi: real
  omega: real<lower=0>
  alpha: real
  mu: real
  kappa: real<lower=0>
  p: real<lower=0, upper=1>
  ab: real<lower=0>
}
model {
  xi ~ normal(0, 1)
  omega ~ gamma(2, 2)
  alpha ~ normal(0, 2)
  mu ~ normal(0, 1)
  kappa ~ gamma(2, 0.5)
  p ~ beta(2, 2)
  ab ~ gamma(2, 1)
  y ~ skew_normal(xi, omega, alpha) T[-1, 3]
  a ~ von_mises(mu, kappa) T[-2, 2.5]
  k ~ binomial(12, p) T[1, 10]
  m ~ beta_binomial(12, ab, 2) T[, 9]
}
";

const Y: [f64; 5] = [-0.4, 0.3, 1.7, 0.9, 2.6];
const A: [f64; 5] = [-1.5, 0.2, 0.7, 2.1, -0.3];
const K: [f64; 5] = [1.0, 4.0, 7.0, 10.0, 3.0];
const M: [f64; 5] = [0.0, 2.0, 9.0, 5.0, 4.0];

/// ∫ₗᵘ f by composite Simpson with n (even) intervals.
fn simpson(f: impl Fn(f64) -> f64, l: f64, u: f64, n: usize) -> f64 {
    let h = (u - l) / n as f64;
    let mut s = f(l) + f(u);
    for i in 1..n {
        s += f(l + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

fn log_choose(n: f64, k: f64) -> f64 {
    lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0)
}

fn lbeta(a: f64, b: f64) -> f64 {
    lgamma(a) + lgamma(b) - lgamma(a + b)
}

/// The model's log posterior on the unconstrained scale, written out by hand: the truncated
/// continuous densities renormalised by Simpson quadrature of the density over [L, U], the
/// truncated counts by their finite sums.
fn independent_truncated_log_posterior(u: &[f64]) -> f64 {
    use std::f64::consts::PI;
    let (xi, omega, alpha, mu) = (u[0], u[1].exp(), u[2], u[3]);
    let kappa = u[4].exp();
    let p = 1.0 / (1.0 + (-u[5]).exp());
    let ab = u[6].exp();
    let normal = |x: f64, m: f64, s: f64| -0.5 * ((x - m) / s).powi(2) - s.ln() - 0.5 * (2.0 * PI).ln();
    let prior = normal(xi, 0.0, 1.0)
        + log_gamma_density(omega, 2.0, 2.0)
        + normal(alpha, 0.0, 2.0)
        + normal(mu, 0.0, 1.0)
        + log_gamma_density(kappa, 2.0, 0.5)
        + (lgamma(4.0) - 2.0 * lgamma(2.0) + p.ln() + (1.0 - p).ln())
        + log_gamma_density(ab, 2.0, 1.0);
    let jacobian = u[1] + u[4] + p.ln() + (1.0 - p).ln() + u[6];
    let sn = |x: f64| {
        let z = (x - xi) / omega;
        // the density's own log Φ (the CDFs are under test here, not the density)
        (2.0 / omega / (2.0 * PI).sqrt()).ln() - 0.5 * z * z + log_phi(alpha * z)
    };
    let sn_mass = simpson(|x| sn(x).exp(), -1.0, 3.0, 4000);
    let skew: f64 = Y.iter().map(|&x| sn(x) - sn_mass.ln()).sum();
    // the von Mises normaliser 2π I₀(κ) cancels against the mass's
    let vm = |x: f64| (kappa * (x - mu).cos()).exp();
    let vm_mass = simpson(vm, -2.0, 2.5, 4000);
    let circ: f64 = A.iter().map(|&x| (vm(x) / vm_mass).ln()).sum();
    let binom = |j: f64| log_choose(12.0, j) + j * p.ln() + (12.0 - j) * (1.0 - p).ln();
    let b_mass: f64 = (1..=10).map(|j| binom(j as f64).exp()).sum();
    let counts: f64 = K.iter().map(|&j| binom(j) - b_mass.ln()).sum();
    let bb = |j: f64| log_choose(12.0, j) + lbeta(j + ab, 12.0 - j + 2.0) - lbeta(ab, 2.0);
    let bb_mass: f64 = (0..=9).map(|j| bb(j as f64).exp()).sum();
    let over: f64 = M.iter().map(|&j| bb(j) - bb_mass.ln()).sum();
    prior + jacobian + skew + circ + counts + over
}

#[test]
fn truncated_skew_normal_von_mises_and_counts_match_an_independent_log_posterior() {
    let json = format!(r#"{{"y": {Y:?}, "a": {A:?}, "k": {K:?}, "m": {M:?}}}"#);
    let (_, joint) = load(TRUNCATED, &json);
    let dump = graph::dump_graph(&joint.graph);
    for op in [
        "log_skew_normal_cdf",
        "log_von_mises_cdf",
        "log_binomial_cdf",
        "log_sum_exp_rows",
    ] {
        assert!(dump.contains(op), "`{op}` missing from the graph:\n{dump}");
    }
    let lp_graph = |u: &[f64]| {
        let w = nalgebra::DMatrix::from_column_slice(7, 1, u);
        mvi::density::LogDensity::eval(&joint, &DVector::zeros(0), &w, mvi::density::Want::VALUE).values[0]
    };
    let points = [
        [0.2, -0.1, 1.5, 0.3, 0.8, 0.4, 0.1],
        [-0.5, 0.4, -0.7, -0.2, 1.6, -0.3, 0.9],
        [1.0, -0.6, 3.0, 0.5, -0.4, 1.2, -0.5],
    ];
    for w in &points {
        let (got, want) = (lp_graph(w), independent_truncated_log_posterior(w));
        assert!(
            (got - want).abs() < 1e-8 * want.abs().max(1.0),
            "{w:?}: {got} vs {want}"
        );
        let report = graph::diagnose(
            &joint,
            &DVector::zeros(0),
            &DVector::from_row_slice(w),
            Tolerances::default(),
        );
        assert!(report.passed(), "diagnose failed at {w:?}: {report:?}");
    }
}
