//! Prior draws (`mvi run --prior`): ancestral sampling where every parameter is the outcome
//! of one `~` on what was drawn before it, compared with the prior's exact moments, and the
//! fall-back to `nuts` (with its reason) where it is not.

use crate::common::{column, load, mean_var};
use mvi::check;
use mvi::infer::Silent;
use mvi::report::FitReport;
use mvi::run::prior::{fit_prior, Prior, PriorSampler};
use mvi::run::{self, RunInfo};

/// A hierarchical prior with a bounded scale: mu ~ N(1, 2²), sigma ~ N⁺(0, 1) (a normal
/// truncated to sigma > 0 by the declaration), theta_j ~ N(mu, sigma²), y_j ~ N(theta_j, 1).
const HIERARCHICAL: &str = "
data {
  J: int
  y: vector[J]
}
param {
  mu: real
  sigma: real<lower=0>
  theta: vector[J]
}
model {
  mu ~ normal(1, 2)
  sigma ~ normal(0, 1)
  theta ~ normal(mu, sigma)
  y ~ normal(theta, 1)
}
";

const DATA: &str = r#"{"J": 3, "y": [0.5, -1.0, 2.0]}"#;

fn prior_fit(src: &str, set: &[(&str, &str)]) -> (PriorSampler, FitReport) {
    let (typed, _) = load(src, DATA);
    let mut prior = Prior::of(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let mut set: Vec<(String, String)> = set.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    set.push(("method".into(), "nuts".into()));
    set.push(("predictive".into(), "true".into()));
    let options = check::infer_options(&typed, &set).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    run::attach_after_fit(&typed, &mut prior.joint, &options).unwrap();
    let report = fit_prior(
        &prior.joint,
        &prior.sampler,
        &options,
        &RunInfo::default(),
        &mut Silent,
    )
    .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    (prior.sampler, report)
}

/// The mean and variance of `x` agree with `mean` and `var` within 5 Monte Carlo standard
/// errors (independent draws; the variance's se from the fourth moment `m4`).
fn assert_moments(x: &[f64], mean: f64, var: f64, m4: f64, what: &str) {
    let n = x.len() as f64;
    let (m, v) = mean_var(x);
    let se_m = (var / n).sqrt();
    let se_v = ((m4 - var * var) / n).sqrt();
    assert!(
        (m - mean).abs() < 5.0 * se_m,
        "{what}: mean {m} vs {mean} (se {se_m})"
    );
    assert!(
        (v - var).abs() < 5.0 * se_v,
        "{what}: variance {v} vs {var} (se {se_v})"
    );
}

#[test]
fn a_hierarchical_prior_is_drawn_ancestrally_with_its_exact_moments() {
    let (sampler, r) = prior_fit(HIERARCHICAL, &[("draws", "20000"), ("seed", "3")]);
    assert!(matches!(sampler, PriorSampler::Ancestral(_)), "{sampler:?}");
    assert_eq!(r.method, "prior");
    assert!(r.notes[0].contains("ancestral"), "{:?}", r.notes);
    assert_eq!(r.draws.nrows(), 20000);
    // mu ~ N(1, 4): m4 = 3·16
    assert_moments(&column(&r, "mu"), 1.0, 4.0, 48.0, "mu");
    // the half-normal: E = √(2/π), Var = 1 − 2/π, E[σ⁴] = 3
    let pi = std::f64::consts::PI;
    let (ms, vs) = ((2.0 / pi).sqrt(), 1.0 - 2.0 / pi);
    let sigma = column(&r, "sigma");
    assert!(sigma.iter().all(|&s| s > 0.0));
    let m4 = 3.0 - 4.0 * ms * (2.0 * ms) + 6.0 * ms * ms - 3.0 * ms.powi(4);
    assert_moments(&sigma, ms, vs, m4, "sigma");
    // theta_j = mu + sigma·z: mean 1, variance 4 + E[σ²] = 5; y_rep_j adds 1
    for j in 1..=3 {
        let theta = column(&r, &format!("theta.{j}"));
        let (m, v) = mean_var(&theta);
        assert!(
            (m - 1.0).abs() < 5.0 * (5.0f64 / 20000.0).sqrt(),
            "theta.{j} mean {m}"
        );
        assert!((v - 5.0).abs() < 0.35, "theta.{j} variance {v}");
        let (m, v) = mean_var(&column(&r, &format!("y_rep.{j}")));
        assert!(
            (m - 1.0).abs() < 5.0 * (6.0f64 / 20000.0).sqrt(),
            "y_rep.{j} mean {m}"
        );
        assert!((v - 6.0).abs() < 0.4, "y_rep.{j} variance {v}");
    }
    // independent draws: neighbours are uncorrelated
    let mu = column(&r, "mu");
    let (m, v) = mean_var(&mu);
    let lag1 = mu.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (mu.len() as f64 - 1.0) / v;
    assert!(lag1.abs() < 0.03, "lag-1 autocorrelation {lag1}");
}

#[test]
fn element_draws_in_a_loop_and_a_simplex_from_dirichlet_are_ancestral() {
    let src = "
data {
  J: int
  y: vector[J]
}
param {
  mu: real
  theta: vector[J]
  p: simplex[3]
}
model {
  mu ~ normal(0, 1)
  for j in 1:J {
    theta[j] ~ normal(mu, 1)
  }
  p ~ dirichlet([1.0, 2.0, 3.0])
  y ~ normal(theta + p[1], 1)
}
";
    let (sampler, r) = prior_fit(src, &[("draws", "20000")]);
    assert!(matches!(sampler, PriorSampler::Ancestral(_)), "{sampler:?}");
    // p ~ Dirichlet(1, 2, 3): E p_k = α_k / 6, Var p_k = α_k (6 − α_k) / (36 · 7)
    for (k, a) in [1.0, 2.0, 3.0].iter().enumerate() {
        let p = column(&r, &format!("p.{}", k + 1));
        let (m, v) = mean_var(&p);
        let (em, ev) = (a / 6.0, a * (6.0 - a) / 252.0);
        assert!(
            (m - em).abs() < 5.0 * (ev / 20000.0f64).sqrt(),
            "p.{} mean {m} vs {em}",
            k + 1
        );
        assert!((v - ev).abs() < 0.1 * ev, "p.{} variance {v} vs {ev}", k + 1);
    }
    let (m, v) = mean_var(&column(&r, "theta.2"));
    assert!(m.abs() < 0.05 && (v - 2.0).abs() < 0.1, "theta.2: {m} {v}");
}

#[test]
fn the_same_seed_gives_the_same_prior_draws() {
    let a = prior_fit(HIERARCHICAL, &[("draws", "50"), ("seed", "9")]).1;
    let b = prior_fit(HIERARCHICAL, &[("draws", "50"), ("seed", "9")]).1;
    let c = prior_fit(HIERARCHICAL, &[("draws", "50"), ("seed", "10")]).1;
    assert_eq!(a.draws, b.draws);
    assert_ne!(a.draws, c.draws);
}

/// Each model's prior cannot be drawn ancestrally, and the reason names what stops it.
#[test]
fn priors_that_are_not_ancestral_fall_back_to_nuts_and_say_why() {
    let cases = [
        ("sigma ~ normal(0, 1)", "", "`sigma` is not the outcome of a `~`"),
        (
            "mu ~ normal(1, 2)",
            "mu ~ normal(1, 2)\n  target += normal_lpdf(mu | 0, 3)",
            "adds a term on parameters",
        ),
        (
            "theta ~ normal(mu, sigma)",
            "theta ~ normal(mu + theta[1], sigma)",
            "is read before all of it is drawn",
        ),
        (
            "mu ~ normal(1, 2)",
            "mu ~ normal(1, 2)\n  mu ~ normal(0, 1)",
            "more than one `~`",
        ),
        (
            "mu ~ normal(1, 2)",
            "exp(mu) ~ lognormal(1, 2)",
            "an expression of parameters",
        ),
        (
            "sigma: real<lower=0>",
            "sigma: real<lower=0, upper=mu + 10>",
            "depend on other parameters",
        ),
    ];
    for (from, to, why) in cases {
        let src = HIERARCHICAL.replace(from, to);
        let (sampler, r) = prior_fit(&src, &[("draws", "200"), ("warmup", "200"), ("chains", "1")]);
        let PriorSampler::Nuts(reason) = &sampler else {
            panic!("{to}: drawn ancestrally");
        };
        assert!(reason.contains(why), "{to}: {reason}");
        assert_eq!(r.method, "nuts");
        assert!(
            r.notes[0].contains("`nuts` on the prior alone") && r.notes[0].contains(why),
            "{:?}",
            r.notes
        );
    }
}

#[test]
fn a_parameter_with_offset_and_multiplier_is_drawn_ancestrally() {
    let src = HIERARCHICAL.replace(
        "theta: vector[J]",
        "theta: vector<offset=mu, multiplier=sigma>[J]",
    );
    let (sampler, r) = prior_fit(&src, &[("draws", "20000")]);
    assert!(matches!(sampler, PriorSampler::Ancestral(_)), "{sampler:?}");
    let (m, v) = mean_var(&column(&r, "theta.1"));
    assert!(
        (m - 1.0).abs() < 0.08 && (v - 5.0).abs() < 0.35,
        "theta.1: {m} {v}"
    );
}
