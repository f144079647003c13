//! After the fit: the `generated` block, `--predictive`'s replicates and the pointwise
//! log-likelihoods of `loo = true`, end to end through `run::fit`, compared with known
//! answers (a conjugate normal model, whose posterior Laplace gets exactly).

use crate::common::{column, load, mean_var, mvi};
use mvi::check;
use mvi::infer::Silent;
use mvi::report::FitReport;
use mvi::run::{self, RunInfo};

/// y_i ~ normal(mu, 1), mu ~ normal(0, 10): the posterior of mu is normal, so Laplace is
/// exact, and y_rep_i ~ normal(m, v + 1) with (m, v) the posterior mean and variance.
const CONJUGATE: &str = "
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

const Y: [f64; 6] = [0.3, -0.4, 1.1, 0.8, 0.2, 0.5];

fn data() -> String {
    format!(r#"{{"N": {}, "y": {Y:?}}}"#, Y.len())
}

/// Fit `src` on the conjugate data with `set` overrides (KEY=VALUE).
fn fit(src: &str, set: &[(&str, &str)]) -> FitReport {
    let (typed, mut joint) = load(src, &data());
    let set: Vec<(String, String)> = set
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let options = check::infer_options(&typed, &set).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    run::attach_after_fit(&typed, &mut joint, &options).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
        .1
}

/// The exact posterior of mu: precision 1/100 + N, mean Σy / precision.
fn posterior() -> (f64, f64) {
    let prec = 0.01 + Y.len() as f64;
    (Y.iter().sum::<f64>() / prec, 1.0 / prec)
}

fn with_generated(block: &str) -> String {
    format!("{CONJUGATE}\ngenerated {{\n{block}\n}}\n")
}

#[test]
fn generated_outputs_are_columns_after_the_parameters() {
    let r = fit(
        &with_generated("  let y_rep = normal_rng(rep_vector(mu, N), 1)\n  let m = mean(y_rep)"),
        &[("draws", "200")],
    );
    let names: Vec<&str> = r.columns.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        ["mu", "y_rep.1", "y_rep.2", "y_rep.3", "y_rep.4", "y_rep.5", "y_rep.6", "m"]
    );
    // m is computed from the same draws of y_rep, draw by draw
    for s in 0..r.n_draws() {
        let mean = (1..=6).map(|i| r.draws[(s, i)]).sum::<f64>() / 6.0;
        assert!((r.draws[(s, 7)] - mean).abs() < 1e-12);
    }
}

#[test]
fn the_same_seed_gives_the_same_generated_values_and_another_seed_others() {
    let src = with_generated("  let y_rep = normal_rng(rep_vector(mu, N), 1)");
    let a = fit(&src, &[("seed", "7")]);
    let b = fit(&src, &[("seed", "7")]);
    let c = fit(&src, &[("seed", "8")]);
    assert_eq!(a.draws, b.draws);
    assert_ne!(column(&a, "y_rep.1"), column(&c, "y_rep.1"));
}

#[test]
fn adding_a_generated_block_does_not_change_the_fit() {
    let plain = fit(CONJUGATE, &[("method", "vi_diag"), ("samples", "200")]);
    let with = fit(
        &with_generated("  let y_rep = normal_rng(rep_vector(mu, N), 1)"),
        &[("method", "vi_diag"), ("samples", "200")],
    );
    assert_eq!(column(&plain, "mu"), column(&with, "mu"));
    assert_eq!(plain.elbo_fresh, with.elbo_fresh);
    assert_eq!(plain.khat, with.khat);
}

#[test]
fn branches_on_parameters_are_taken_draw_by_draw() {
    let r = fit(
        &with_generated(
            "  let z = 0.0\n  if (mu > 0.4) {\n    z = 1.0\n  } else {\n    z = -1.0\n  }\n  \
             let big = mu > 0.4 ? 10 : 20\n  let not_big = !(mu > 0.4)",
        ),
        &[],
    );
    let (mu, z, big, not_big) = (
        column(&r, "mu"),
        column(&r, "z"),
        column(&r, "big"),
        column(&r, "not_big"),
    );
    let mut taken = 0;
    for s in 0..mu.len() {
        let above = mu[s] > 0.4;
        taken += usize::from(above);
        assert_eq!(z[s], if above { 1.0 } else { -1.0 });
        assert_eq!(big[s], if above { 10.0 } else { 20.0 });
        assert_eq!(not_big[s], if above { 0.0 } else { 1.0 });
    }
    // both branches occur (the posterior mean is 0.416)
    assert!(taken > 100 && taken < 900, "{taken} of {}", mu.len());
}

#[test]
fn replicates_follow_the_posterior_predictive_of_a_conjugate_model() {
    let r = fit(CONJUGATE, &[("predictive", "true"), ("draws", "20000")]);
    let (m, v) = posterior();
    for i in 1..=Y.len() {
        let x = column(&r, &format!("y_rep.{i}"));
        let (mean, var) = mean_var(&x);
        let n = x.len() as f64;
        let want_var = v + 1.0;
        // 3 standard errors of the mean and of the variance (normal: var(s²) = 2σ⁴/(n − 1))
        assert!(
            (mean - m).abs() < 3.0 * (want_var / n).sqrt(),
            "y_rep.{i}: mean {mean} vs {m}"
        );
        let se_var = (2.0 * want_var * want_var / (n - 1.0)).sqrt();
        assert!(
            (var - want_var).abs() < 3.0 * se_var,
            "y_rep.{i}: var {var} vs {want_var}"
        );
    }
}

#[test]
fn replicates_of_an_indexed_tilde_in_a_loop_fill_the_data_shape() {
    let src = "
data {
  N: int
  y: vector[N]
}
param {
  mu: real
}
model {
  mu ~ normal(0, 10)
  for n in 1:N {
    y[n] ~ normal(mu + n, 1)
  }
}
";
    let r = fit(src, &[("predictive", "true"), ("draws", "4000")]);
    let mu_mean = column(&r, "mu").iter().sum::<f64>() / 4000.0;
    for n in 1..=Y.len() {
        let (mean, _) = mean_var(&column(&r, &format!("y_rep.{n}")));
        // y_rep[n] = mu + n + noise: its mean is the posterior mean of mu plus n
        assert!((mean - (mu_mean + n as f64)).abs() < 0.1, "y_rep.{n}: {mean}");
    }
}

#[test]
fn count_replicates_are_integers() {
    let src = "
data {
  N: int
  k: ints[N]
}
param {
  a: real
}
model {
  a ~ normal(0, 2)
  k ~ poisson_log(a)
}
";
    let (typed, mut joint) = load(src, r#"{"N": 4, "k": [3, 0, 2, 5]}"#);
    let options = check::infer_options(&typed, &[("predictive".into(), "true".into())]).unwrap();
    run::attach_after_fit(&typed, &mut joint, &options).unwrap();
    let (_, r) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent).unwrap();
    let k = column(&r, "k_rep.2");
    assert!(k.iter().all(|v| v.fract() == 0.0 && *v >= 0.0));
    // E[k_rep] = E[exp(a)] ≈ the mean count 2.5
    let (mean, _) = mean_var(&k);
    assert!((mean - 2.5).abs() < 0.4, "{mean}");
}

#[test]
fn loo_gives_one_log_likelihood_per_observation_at_each_draw() {
    let r = fit(CONJUGATE, &[("loo", "true"), ("draws", "300")]);
    let ll = r
        .log_lik
        .as_ref()
        .expect("loo = true keeps the pointwise log-likelihood");
    assert_eq!(ll.vars, vec![("y".to_string(), Y.len())]);
    assert_eq!(ll.values.shape(), (300, Y.len()));
    let mu = column(&r, "mu");
    for s in [0, 17, 299] {
        for (i, y) in Y.iter().enumerate() {
            let want = -0.5 * (y - mu[s]).powi(2) - 0.5 * (2.0 * std::f64::consts::PI).ln();
            assert!((ll.values[(s, i)] - want).abs() < 1e-12);
        }
    }
    // Laplace's draws carry the correction log p̃ − log q, the same at every draw here (q
    // is the exact posterior, so up to the normalising constant)
    let corr = ll.log_correction.as_ref().expect("laplace has a density");
    let spread = corr.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - corr.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(spread < 1e-6, "{spread}");
}

#[test]
fn predictive_on_a_model_without_observations_is_a_diagnostic() {
    let dir = std::env::temp_dir().join("mvi_predictive_no_obs");
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("prior_only.mvi");
    std::fs::write(
        &model,
        "param {\n  mu: real\n}\nmodel {\n  mu ~ normal(0, 1)\n}\n",
    )
    .unwrap();
    let out = mvi(&["run", model.to_str().unwrap(), "--predictive", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mvi::run::no_observations"), "{err}");
    assert!(err.contains("this `~` is on a parameter"), "{err}");
}

/// `mvi loo --json` on the linear regression example with `method`, parsed.
fn loo_json(method: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "loo",
        "examples/linear_regression.mvi",
        "--data",
        "examples/data/linear_regression.json",
        "--method",
        method,
        "--json",
        "-q",
    ];
    args.extend(extra);
    let out = mvi(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("mvi loo --json prints JSON")
}

#[test]
fn corrected_loo_from_laplace_agrees_with_loo_from_nuts() {
    let nuts = loo_json("nuts", &[]);
    let laplace = loo_json("laplace", &[]);
    let (e_nuts, se) = (
        nuts["loo"]["elpd_loo"].as_f64().unwrap(),
        nuts["loo"]["se"].as_f64().unwrap(),
    );
    let e_laplace = laplace["loo"]["elpd_loo"].as_f64().unwrap();
    assert_eq!(nuts["loo"]["corrected"], false);
    assert_eq!(laplace["loo"]["corrected"], true);
    assert_eq!(laplace["loo"]["n_obs"], 50);
    assert!(
        (e_laplace - e_nuts).abs() < 0.1 * se,
        "laplace {e_laplace} vs nuts {e_nuts} (se {se})"
    );
}

#[test]
fn loo_writes_loo_json_and_the_log_likelihood_csv() {
    let dir = std::env::temp_dir().join("mvi_loo_files");
    let _ = std::fs::remove_dir_all(&dir);
    loo_json(
        "laplace",
        &[
            "--log-lik",
            "--output-dir",
            dir.to_str().unwrap(),
            "--set",
            "draws=200",
        ],
    );
    let csv = std::fs::read_to_string(dir.join("log_lik.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 201);
    assert!(lines[0].starts_with("y.1,y.2,"));
    assert_eq!(lines[1].split(',').count(), 50);
    let loo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("loo.json")).unwrap()).unwrap();
    assert_eq!(loo["loo"]["n_draws"], 200);
    assert!(dir.join("draws.csv").is_file());
}

#[test]
fn compare_models_ranks_the_full_regression_first() {
    let out = mvi(&[
        "compare-models",
        "examples/linear_regression.mvi",
        "tests/data/loo_models/first_column.mvi",
        "--data",
        "examples/data/linear_regression.json",
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models[0]["model"], "examples/linear_regression.mvi");
    assert_eq!(models[0]["rank"], 0);
    assert!(models[1]["elpd_diff"].as_f64().unwrap() > 100.0);
    let w: f64 = models.iter().map(|m| m["weight"].as_f64().unwrap()).sum();
    assert!((w - 1.0).abs() < 1e-9);
}

#[test]
fn compare_models_of_different_data_is_a_diagnostic() {
    let out = mvi(&[
        "compare-models",
        "examples/linear_regression.mvi",
        "tests/data/loo_models/other_data.mvi",
        "--data",
        "examples/data/linear_regression.json",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mvi::run::different_data") && err.contains("help:"),
        "{err}"
    );
}

#[test]
fn loo_of_a_whole_vector_scored_at_once_says_how_to_split_it() {
    let dir = std::env::temp_dir().join("mvi_loo_unsplit");
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("mvn.mvi");
    std::fs::write(
        &model,
        "data {\n  y: vector[3]\n}\nparam {\n  mu: vector[3]\n}\nmodel {\n  mu ~ normal(0, 1)\n  \
         y ~ multi_normal(mu, [[1, 0, 0], [0, 1, 0], [0, 0, 1]])\n}\n",
    )
    .unwrap();
    let data = dir.join("mvn.json");
    std::fs::write(&data, r#"{"y": [0.1, 0.2, 0.3]}"#).unwrap();
    let out = mvi(&[
        "loo",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mvi::run::loo_not_pointwise") && err.contains("one term for all of it"),
        "{err}"
    );
}

/// `mvi run examples/<stem>.mvi` on its data with `flags`, into a fresh temporary directory
/// `dir`; the run must succeed.
fn run_example_into(dir: &str, stem: &str, flags: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(dir);
    let _ = std::fs::remove_dir_all(&dir);
    let (model, data) = (
        format!("examples/{stem}.mvi"),
        format!("examples/data/{stem}.json"),
    );
    let mut args = vec![
        "run",
        model.as_str(),
        "--data",
        data.as_str(),
        "-q",
        "--output-dir",
        dir.to_str().unwrap(),
    ];
    args.extend(flags);
    let out = mvi(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (out, dir)
}

#[test]
fn prior_draws_follow_the_prior_and_replicate_the_data_from_it() {
    let (out, dir) = run_example_into("mvi_prior_draws", "linear_regression", &["--prior", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["method"], "prior");
    assert!(
        v["notes"]
            .to_string()
            .contains("prior draws by ancestral sampling"),
        "{}",
        v["notes"]
    );
    // w ~ normal(0, tau) with tau = 1 in the data
    let w1 = &v["parameters"]["w.1"];
    assert!(w1["mean"].as_f64().unwrap().abs() < 0.1, "{w1}");
    assert!((w1["sd"].as_f64().unwrap() - 1.0).abs() < 0.1, "{w1}");
    assert!(v["parameters"]["y_rep.50"].is_object());
    assert!(dir.join("ppc_y.svg").is_file());
}

#[test]
fn predictive_with_an_output_dir_draws_the_check() {
    let (_, dir) = run_example_into("mvi_ppc_svg", "poisson_regression", &["--predictive"]);
    let svg = std::fs::read_to_string(dir.join("ppc_y.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("frequency"),
        "{}",
        &svg[..200.min(svg.len())]
    );
}

#[test]
fn a_target_increment_on_data_is_an_observation_like_a_tilde() {
    let with_target = CONJUGATE.replace("y ~ normal(mu, 1)", "target += normal_lpdf(y | mu, 1)");
    let a = fit(
        CONJUGATE,
        &[("loo", "true"), ("predictive", "true"), ("draws", "100")],
    );
    let b = fit(
        &with_target,
        &[("loo", "true"), ("predictive", "true"), ("draws", "100")],
    );
    assert_eq!(a.log_lik, b.log_lik);
    assert_eq!(column(&a, "y_rep.3"), column(&b, "y_rep.3"));
}

#[test]
fn a_random_draw_in_predict_widens_the_held_out_predictive() {
    // y_test ~ normal(mu + e, 1) with e ~ normal(0, 3) drawn per posterior draw: the held-out
    // density is that of normal(mu, √10), so its test LPD is below the one without e
    let src = |extra: &str| {
        format!(
            "{CONJUGATE}\ndata {{\n  y_test: vector[2]\n}}\npredict {{\n  y_test ~ normal(mu{extra}, 1)\n}}\n"
        )
    };
    let json = format!(r#"{{"N": {}, "y": {Y:?}, "y_test": [0.4, 0.1]}}"#, Y.len());
    let lpd = |s: &str| {
        let (typed, joint) = load(s, &json);
        let options = check::infer_options(&typed, &[("test_draws".into(), "20000".into())]).unwrap();
        let (_, r) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent).unwrap();
        r.predict.expect("a predict block").lppd
    };
    let plain = lpd(&src(""));
    let wide = lpd(&src(" + normal_rng(0, 3)"));
    let (m, v) = posterior();
    // the exact pointwise lppd of normal(m, √(v + 1 + 9)) at the two test points
    let exact: f64 = [0.4, 0.1]
        .iter()
        .map(|y: &f64| {
            -0.5 * (2.0 * std::f64::consts::PI * (v + 10.0)).ln() - (y - m).powi(2) / (2.0 * (v + 10.0))
        })
        .sum();
    assert!(wide < plain - 1.0, "{wide} vs {plain}");
    assert!((wide - exact).abs() < 0.05, "{wide} vs exact {exact}");
}
