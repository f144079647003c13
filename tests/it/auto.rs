//! `method = auto`: the ladder laplace → mvi_lr → pathfinder → nuts stops at the first fit
//! that passes its gate, and the report says what was tried.

use crate::common::{column, load, mean_var};
use mvi::check;
use mvi::infer::Silent;
use mvi::report::FitReport;
use mvi::run::{self, RunInfo};

/// A normal mean with a known sd: the posterior is Gaussian, so Laplace is exact.
const GAUSSIAN: &str = "
data {
  N: int
  y: vector[N]
}
param {
  mu: real
}
model {
  mu ~ normal(0, 10)
  y ~ normal(mu, 1)
}
";

/// Eight schools written centred: no mode (a funnel), and a posterior no Gaussian fits.
const CENTRED: &str = "
data {
  J: int
  y: vector[J]
  sigma: vector<lower=0>[J]
}
param {
  mu: real
  tau: real<lower=0>
  theta: vector[J]
}
model {
  mu ~ normal(0, 5)
  tau ~ cauchy(0, 5)
  theta ~ normal(mu, tau)
  y ~ normal(theta, sigma)
}
";

const SCHOOLS: &str =
    r#"{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}"#;

fn fit_auto(src: &str, data: &str) -> FitReport {
    let (typed, joint) = load(src, data);
    let set = vec![("method".to_string(), "auto".to_string())];
    let options = check::infer_options(&typed, &set).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
        .1
}

#[test]
fn auto_stops_at_laplace_when_its_gate_passes() {
    let r = fit_auto(GAUSSIAN, r#"{"N": 5, "y": [0.1, -0.3, 0.8, 0.4, 1.0]}"#);
    assert_eq!(r.method, "laplace");
    assert_eq!(r.ladder.len(), 1);
    assert!(
        r.ladder[0].accepted && r.ladder[0].khat.is_some_and(|k| k <= 0.7),
        "{:?}",
        r.ladder
    );
    assert!(
        r.notes[0].starts_with("method = auto tried laplace (accepted"),
        "{:?}",
        r.notes
    );
    let json = mvi::report::render_json(&r);
    assert!(json.contains("\"ladder\""), "{json}");
}

#[test]
fn auto_climbs_to_nuts_on_a_funnel_and_says_why_each_method_was_rejected() {
    let r = fit_auto(CENTRED, SCHOOLS);
    assert_eq!(r.method, "nuts");
    let methods: Vec<&str> = r.ladder.iter().map(|g| g.method.as_str()).collect();
    assert_eq!(methods, ["laplace", "mvi_lr", "pathfinder", "nuts"]);
    assert!(r.ladder[0].verdict.contains("no maximum"), "{:?}", r.ladder[0]);
    assert!(r.ladder[1].verdict.starts_with("skipped"), "{:?}", r.ladder[1]);
    assert!(
        !r.ladder[2].accepted && r.ladder[2].verdict.contains("k̂"),
        "{:?}",
        r.ladder[2]
    );
    assert!(r.ladder[3].accepted);
    assert!(r.mcmc.is_some());
}

#[test]
fn auto_refuses_an_option_that_only_some_of_its_methods_take() {
    let (typed, _) = load(GAUSSIAN, r#"{"N": 1, "y": [0.0]}"#);
    let set = vec![
        ("method".to_string(), "auto".to_string()),
        ("rank".to_string(), "2".to_string()),
    ];
    let d = check::infer_options(&typed, &set).expect_err("rank is mvi_lr's alone");
    let text = d.render_plain(100);
    assert!(text.contains("`rank` does not apply to method `auto`"), "{text}");
    assert!(text.contains("every method it may try"), "{text}");
}

/// y_i ~ normal(mu, 1), mu ~ normal(0, 10): the posterior of mu is normal with known mean
/// and sd.
#[test]
fn nuts_started_from_an_approximation_samples_the_exact_posterior() {
    let y = [0.1, -0.3, 0.8, 0.4, 1.0];
    let data = format!(r#"{{"N": 5, "y": {y:?}}}"#);
    let (typed, joint) = load(GAUSSIAN, &data);
    let prec = 1.0 / 100.0 + 5.0;
    let (mean, sd) = (y.iter().sum::<f64>() / prec, (1.0 / prec).sqrt());
    for init in ["laplace", "mvi_lr", "pathfinder"] {
        let set: Vec<(String, String)> = [("method", "nuts"), ("init", init), ("seed", "4")]
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        let options =
            check::infer_options(&typed, &set).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
        let r = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
            .unwrap()
            .1;
        assert!(
            r.notes[0].contains(&format!("draws of the `{init}` fit")),
            "{:?}",
            r.notes
        );
        assert_eq!(r.mcmc.as_ref().unwrap().warmup, 500);
        let (m, v) = mean_var(&column(&r, "mu"));
        let s = v.sqrt();
        // 4000 draws with an ESS of at least 1000: the mean within 5 se, the sd within 10 %
        assert!(
            (m - mean).abs() < 5.0 * sd / 1000f64.sqrt(),
            "{init}: mean {m} vs {mean}"
        );
        assert!((s / sd - 1.0).abs() < 0.1, "{init}: sd {s} vs {sd}");
    }
    let set = vec![
        ("method".to_string(), "nuts".to_string()),
        ("init".to_string(), "nuts".to_string()),
    ];
    let d = check::infer_options(&typed, &set).expect_err("nuts cannot start from itself");
    assert!(
        d.render_plain(100).contains("`init` takes one of"),
        "{}",
        d.render_plain(100)
    );
}
