//! A user-acceptance sweep: small models written the way a Stan or NumPyro user writes
//! them (`tests/fixtures/sweep/`), run through the real binary, and the inputs that once
//! tripped it up — each test is a regression for a problem the sweep found.
//!
//! Covered: conjugate posteriors (normal–normal, beta–binomial, gamma–Poisson) recovered by
//! the Gaussian methods on the constrained scale; empty data (N = 0) add nothing to the log
//! joint, for fused and unfused families; continuous data outside a fixed support, infinite
//! data and JSON `NaN` are diagnostics at the value; an improper model fails with a
//! diagnostic (never a summary of NaN) under every method; a model without parameters is a
//! diagnostic, not a panic; Stan's block keywords get their mvi form as help. Empty data as
//! Stan writes them: a matrix `[]` (and a CSV header without rows) binds N = 0 and fits;
//! errors in minified JSON show a window of the line; `infer` values out of range for the
//! model (`rank` > D, `samples` ≤ D for a full covariance) are diagnostics before the fit;
//! so are settings whose buffers would not fit in memory (`samples`, `bins`, `draws`,
//! `test_draws`, `particles` of 10¹⁵), which once aborted the process.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The fixtures directory, where every command runs.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep")
}

/// Run `mvi` with `args` in the fixtures directory.
fn mvi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(args)
        .current_dir(dir())
        .env("NO_COLOR", "1")
        .output()
        .expect("the mvi binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fit's `--json` output, asserting it succeeded.
fn fit_json(model: &str, data: &[&str], method: &str) -> Value {
    let mut args = vec!["run", model, "--method", method, "--json", "--quiet"];
    for d in data {
        args.extend(["--data", d]);
    }
    let o = mvi(&args);
    assert_eq!(o.status.code(), Some(0), "{model} with {method}: {}", text(&o));
    serde_json::from_slice(&o.stdout).expect("--json prints one JSON object")
}

/// A laplace fit of `model` on `data` whose held-out set is empty reports no test points
/// and a test LPD of 0.
fn assert_no_test_points(model: &str, data: &str) {
    let j = fit_json(model, &[data], "laplace");
    assert_eq!(j["predict"]["n_test"], 0, "{j}");
    let lpd = j["predict"]["test_lpd"].as_f64().expect("a test LPD");
    assert!(lpd.abs() < 1e-12, "{j}");
}

/// Assert the command failed as a user error (exit 2) with `code`, a help line and no
/// panic, and return its output.
fn user_error(args: &[&str], code: &str) -> String {
    let o = mvi(args);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {all}");
    assert!(all.contains(code), "{args:?} should report {code}: {all}");
    assert!(all.contains("help:"), "{args:?} should say what to do: {all}");
    assert!(!all.contains("panicked"), "{args:?} panicked: {all}");
    all
}

/// Posterior mean and sd of a scalar parameter in a `--json` summary.
fn moments(j: &Value, name: &str) -> (f64, f64) {
    let p = &j["parameters"][name];
    let get = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{name}.{k} in {j}"));
    (get("mean"), get("sd"))
}

/// The exact posterior moments of the three conjugate fixtures.
struct Conjugate {
    model: &'static str,
    data: &'static str,
    param: &'static str,
    mean: f64,
    sd: f64,
}

/// Normal mean: prior N(0, 10²), σ = 0.5, five observations summing to 6.5, so the
/// posterior precision is 1/100 + 5/0.25 = 20.01 and the mean 26/20.01. Beta(2, 3) prior,
/// 13 of 40: Beta(15, 30). Gamma(3, 1) prior, ten counts summing to 26: Gamma(29, 11).
const CONJUGATE: [Conjugate; 3] = [
    Conjugate {
        model: "normal_normal.mvi",
        data: "normal_normal.json",
        param: "mu",
        mean: 26.0 / 20.01,
        sd: 0.223_551_1,
    },
    Conjugate {
        model: "beta_binomial.mvi",
        data: "beta_binomial.json",
        param: "theta",
        mean: 15.0 / 45.0,
        sd: 0.069_504_3,
    },
    Conjugate {
        model: "gamma_poisson.mvi",
        data: "gamma_poisson.json",
        param: "lambda",
        mean: 29.0 / 11.0,
        sd: 0.489_560_7,
    },
];

/// Monte Carlo error of 1000 draws (mean: sd/√1000 ≈ 0.03 sd) plus the Gaussian
/// approximation of a skewed posterior (the beta and gamma ones) on the constrained scale.
const MEAN_TOL_SD: f64 = 0.15;
const SD_REL_TOL: f64 = 0.08;

#[test]
fn conjugate_posteriors_are_recovered_by_the_gaussian_methods() {
    for c in &CONJUGATE {
        for method in ["laplace", "mvi_lr", "vi_diag", "vi_full"] {
            let j = fit_json(c.model, &[c.data], method);
            let (mean, sd) = moments(&j, c.param);
            assert!(
                (mean - c.mean).abs() <= MEAN_TOL_SD * c.sd,
                "{} {method}: mean {mean}, exact {}",
                c.model,
                c.mean
            );
            assert!(
                (sd / c.sd - 1.0).abs() <= SD_REL_TOL,
                "{} {method}: sd {sd}, exact {}",
                c.model,
                c.sd
            );
        }
    }
}

/// Laplace is exact for the normal mean: its evidence is the marginal likelihood in
/// closed form, log p(y) = −5/2 log 2π − 5 log σ
/// − ½ log(1 + 5·100/σ²) − ½ (Σ(y − ȳ)²/σ² + 5ȳ²/(σ² + 5·100)).
#[test]
fn laplace_evidence_of_the_normal_mean_is_exact() {
    let y = [1.2, 0.8, 1.9, 1.1, 1.5];
    let (s2, t2, n) = (0.25_f64, 100.0_f64, 5.0_f64);
    let ybar = y.iter().sum::<f64>() / n;
    let ss: f64 = y.iter().map(|v| (v - ybar).powi(2)).sum();
    let exact = -n / 2.0 * (2.0 * std::f64::consts::PI).ln()
        - n / 2.0 * s2.ln()
        - 0.5 * (1.0 + n * t2 / s2).ln()
        - 0.5 * (ss / s2 + n * ybar * ybar / (s2 + n * t2));
    let j = fit_json("normal_normal.mvi", &["normal_normal.json"], "laplace");
    let got = j["log_evidence"].as_f64().expect("laplace reports its evidence");
    assert!((got - exact).abs() < 1e-8, "log evidence {got}, exact {exact}");
}

/// With N = 0 the likelihood adds nothing: the posterior is the N(0, 10²) prior and the
/// evidence is log 1 = 0 (the fused `normal` once added one observation's constant).
#[test]
fn empty_data_leave_the_prior() {
    for method in ["laplace", "vi_diag"] {
        let j = fit_json("normal_normal.mvi", &["empty.json"], method);
        let ev = j["log_evidence"].as_f64().expect("an evidence");
        assert!(
            ev.abs() < 1e-8,
            "{method}: log evidence {ev} of a normalised prior"
        );
        let elbo = j["elbo_fresh"]["value"].as_f64().expect("a finite fresh ELBO");
        assert!(elbo.abs() < 1e-3, "{method}: fresh ELBO {elbo}");
        let (mean, sd) = moments(&j, "mu");
        assert!(
            mean.abs() < 1.5 && (sd / 10.0 - 1.0).abs() < 0.1,
            "{method}: {mean} ± {sd}"
        );
    }
}

/// Every fused family with no observations (poisson_log and bernoulli_logit once panicked)
/// and an unfused one: log p̃ at w = 0 is the N(0, 1) prior's −½ log 2π.
#[test]
fn empty_data_add_nothing_for_every_family() {
    for model in [
        "empty_poisson_log.mvi",
        "empty_bernoulli_logit.mvi",
        "empty_cauchy.mvi",
        "empty_gamma.mvi",
    ] {
        let o = mvi(&["diagnose", model, "--data", "empty_counts.json", "--zero"]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{model}: {out}");
        assert!(out.contains("log p̃ = -9.1893853320e-1"), "{model}: {out}");
    }
}

#[test]
fn beta_data_on_the_boundary_are_reported_at_the_tilde() {
    let out = user_error(
        &["run", "beta_lik.mvi", "--data", "beta_lik_edge.json", "--quiet"],
        "mvi::lower::outcome_out_of_support",
    );
    assert!(out.contains("entry 3") && out.contains("p ~ beta(a, b)"), "{out}");
}

#[test]
fn nonpositive_lognormal_data_are_reported_but_cdfs_are_not_checked() {
    let out = user_error(
        &["check", "lognormal_pos.mvi", "--data", "lognormal_zero.json"],
        "mvi::lower::outcome_out_of_support",
    );
    assert!(out.contains("x > 0"), "{out}");
    // a log CDF is defined below the support (a censoring time of 0 is fine)
    let o = mvi(&["check", "censored.mvi", "--data", "censored_zero.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn infinite_data_are_reported_at_the_value() {
    let out = user_error(
        &["check", "normal_normal.mvi", "--data", "inf.json"],
        "mvi::data::not_finite",
    );
    assert!(out.contains("1e999") && out.contains("entry 3"), "{out}");
    let out = user_error(
        &[
            "check",
            "normal_normal.mvi",
            "--data",
            "y=y_inf.csv",
            "--data",
            "n_sigma.json",
        ],
        "mvi::data::not_finite",
    );
    assert!(out.contains("y_inf.csv"), "{out}");
}

#[test]
fn json_nan_in_a_vector_is_reported_where_it_is() {
    let o = mvi(&["check", "normal_normal.mvi", "--data", "nan.json"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("found NaN") && out.contains("nan.json:1:26"),
        "{out}"
    );
}

/// A flat prior and no data: every method fails with a diagnostic, none prints NaN.
#[test]
fn an_improper_posterior_is_never_a_summary_of_nan() {
    for method in ["laplace", "mvi_lr", "vi_diag", "vi_full", "split_mf", "pmfvb"] {
        let o = mvi(&[
            "run",
            "improper_flat.mvi",
            "--method",
            method,
            "--set",
            "max_iters=200",
            "--quiet",
        ]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{method}: {out}");
        assert!(
            out.contains("help:") && !out.contains("panicked"),
            "{method}: {out}"
        );
        assert!(o.stdout.is_empty(), "{method} printed a summary: {out}");
    }
}

/// Laplace's advice for a flat direction is a proper prior, not another method (they
/// diverge on an improper posterior).
#[test]
fn a_flat_direction_asks_for_a_prior() {
    let out = user_error(&["run", "improper_flat.mvi", "--quiet"], "mvi::infer::failed");
    assert!(out.contains("proper prior") && !out.contains("--method"), "{out}");
}

#[test]
fn an_unbounded_likelihood_is_a_diagnostic_for_the_vi_methods() {
    for method in ["vi_diag", "vi_full"] {
        user_error(
            &[
                "run",
                "unbounded.mvi",
                "--data",
                "one.json",
                "--method",
                method,
                "--quiet",
            ],
            "mvi::infer::diverged",
        );
    }
}

#[test]
fn a_model_without_parameters_is_a_diagnostic() {
    for method in ["laplace", "vi_diag", "pmfvb"] {
        user_error(
            &[
                "run",
                "no_params.mvi",
                "--data",
                "normal_normal.json",
                "--method",
                method,
                "--quiet",
            ],
            "mvi::infer::no_params",
        );
    }
}

#[test]
fn an_infinite_gradient_at_the_start_is_not_called_an_infinite_density() {
    // log p̃ is finite at w = 0 here; only the gradient of sqrt(mu) is not. The message said
    // "the log density is not finite" and its help named only the density.
    let out = user_error(&["run", "sqrt_at_start.mvi", "--quiet"], "mvi::infer::failed");
    assert!(out.contains("or its gradient is not finite"), "{out}");
    assert!(out.contains("`sqrt(x)` at x = 0"), "{out}");
}

#[test]
fn stan_block_names_get_the_mvi_form() {
    let out = user_error(&["check", "stan_parameters.mvi"], "mvi::syntax::unexpected");
    assert!(out.contains("did you mean `param`?"), "{out}");
}

#[test]
fn an_int_parameter_says_why() {
    let out = user_error(&["check", "int_param.mvi"], "mvi::check::integer_param");
    assert!(out.contains("marginalise"), "{out}");
}

/// Every model of the sweep fits with its default method (exit 0, no NaN in the summary).
#[test]
fn every_sweep_model_fits() {
    let cases: [(&str, &[&str]); 17] = [
        ("hier_groups.mvi", &["hier_groups.json"]),
        ("logistic.mvi", &["logistic.json"]),
        ("logistic_bernoulli.mvi", &["logistic.json"]),
        ("poisson_glm.mvi", &["counts.json"]),
        ("poisson_rate.mvi", &["counts.json"]),
        ("binomial_logit.mvi", &["counts.json"]),
        ("student_t_reg.mvi", &["robust.json"]),
        ("lognormal_pos.mvi", &["robust.json"]),
        ("gamma_lik.mvi", &["robust.json"]),
        ("beta_lik.mvi", &["beta_lik.json"]),
        ("ar1.mvi", &["ar1.json"]),
        ("predict_reg.mvi", &["predict_reg.json"]),
        ("hyper_ridge.mvi", &["robust.json"]),
        ("censored.mvi", &["censored.json"]),
        ("mvn.mvi", &["mvn.json"]),
        ("matrix_param.mvi", &["matrix_param.json"]),
        ("loop_fn.mvi", &["robust.json"]),
    ];
    for (model, data) in cases {
        let mut args = vec!["run", model, "--quiet"];
        for d in data {
            args.extend(["--data", d]);
        }
        let o = mvi(&args);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{model}: {out}");
        assert!(!out.contains("NaN") && !out.contains(" inf"), "{model}: {out}");
    }
}

/// `compare` reports a method that fails on the model and still compares the others: the
/// centred eight schools have no mode, so laplace fails and vi_diag starts without it.
#[test]
fn compare_goes_on_past_a_failing_method() {
    let args = [
        "compare",
        "hier_centered.mvi",
        "--data",
        "eight.json",
        "--methods",
        "laplace,vi_diag",
        "--quiet",
    ];
    let o = mvi(&args);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("vi_diag")), "{out}");
    assert!(stdout.contains("failed: laplace"), "{out}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("mvi::infer::failed"),
        "{out}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let o = mvi(&json_args);
    let j: Value = serde_json::from_slice(&o.stdout).expect("--json prints one JSON object");
    assert_eq!(j["failed"][0]["method"], "laplace", "{j}");
    assert_eq!(j["methods"][0]["method"], "vi_diag", "{j}");
}

#[test]
fn compare_fails_when_every_method_fails() {
    let o = mvi(&[
        "compare",
        "improper_flat.mvi",
        "--methods",
        "laplace,mvi_lr",
        "--quiet",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(o.stdout.is_empty() && out.contains("help:"), "{out}");
}

/// A `predict` block over an empty held-out set (M = 0) once looped for ever waiting for
/// draws that never counted: it reports no test points and a test LPD of 0.
#[test]
fn an_empty_held_out_set_finishes() {
    assert_no_test_points("predict_vec.mvi", "predict_empty.json");
}

#[test]
fn a_hyper_started_on_its_bound_says_to_start_inside() {
    let out = user_error(
        &["check", "hyper_at_bound.mvi", "--data", "normal_normal.json"],
        "mvi::check::init_violates_constraint",
    );
    assert!(out.contains("strictly inside"), "{out}");
}

/// pmfvb's default steps are Metropolis-adjusted: on this proper non-centred hierarchy
/// (one block per parameter) unadjusted Langevin steps of 0.1 × the Laplace marginal
/// variances overshoot the much narrower conditionals and ran off to infinity
/// (`mvi::infer::diverged`); with `metropolis = false` they still do.
#[test]
fn pmfvb_defaults_stay_finite_on_a_non_centred_hierarchy() {
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "hier_groups.mvi", "--data", "hier_groups.json"];
        args.extend(["--method", "pmfvb", "--set", "particles=50", "--json", "--quiet"]);
        args.extend(extra);
        mvi(&args)
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).expect("--json prints one JSON object");
    let (sigma_a, _) = moments(&j, "sigma_a");
    assert!(
        sigma_a.is_finite() && sigma_a > 0.0 && sigma_a < 10.0,
        "sigma_a {sigma_a}"
    );
    user_error(
        &[
            "run",
            "hier_groups.mvi",
            "--data",
            "hier_groups.json",
            "--method",
            "pmfvb",
            "--set",
            "particles=50",
            "--set",
            "metropolis=false",
        ],
        "mvi::infer::diverged",
    );
}

/// A matrix with no rows is `[]` in Stan's JSON; its column count comes from the
/// declaration. With N = 0 the posterior is the N(0, 2.5²) prior, which Laplace gets
/// exactly (a 0-row product once divided by zero).
#[test]
fn an_empty_json_matrix_leaves_the_prior() {
    for method in ["laplace", "mvi_lr", "vi_diag"] {
        let j = fit_json("logistic.mvi", &["empty_matrix.json"], method);
        let ev = j["log_evidence"].as_f64().expect("an evidence");
        assert!(ev.abs() < 1e-8, "{method}: log evidence {ev}");
        let (_, sd) = moments(&j, "beta.3");
        assert!((sd / 2.5 - 1.0).abs() < 0.1, "{method}: sd {sd}");
    }
    let j = fit_json("logistic.mvi", &["empty_matrix.json"], "laplace");
    let cov = j["approximation"]["cov"][3][3].as_f64().expect("a covariance");
    assert!((cov - 6.25).abs() < 1e-8, "{j}");
}

/// `[]` says nothing of its columns: when no other value gives them, say so.
#[test]
fn an_empty_json_matrix_needs_its_column_count() {
    let out = user_error(
        &["check", "logistic_shapes.mvi", "--data", "xy_empty.json"],
        "mvi::data::unknown_size",
    );
    assert!(out.contains("give `K` in the data"), "{out}");
}

/// A CSV with a header and no rows (pandas' empty data frame) is a table of 0 rows with
/// the header's columns: it binds N = 0 and K = 3, as `[]` does in JSON.
#[test]
fn a_csv_header_without_rows_binds_no_rows() {
    let o = mvi(&[
        "run",
        "logistic_shapes.mvi",
        "--data",
        "X=X_header_only.csv",
        "--data",
        "y_empty.json",
        "--json",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).expect("--json prints one JSON object");
    assert_eq!(j["dim"], 4, "{j}");
    let ev = j["log_evidence"].as_f64().expect("an evidence");
    assert!(ev.abs() < 1e-8, "log evidence {ev}");
}

#[test]
fn an_empty_csv_file_is_a_diagnostic() {
    let out = user_error(
        &[
            "check",
            "logistic_shapes.mvi",
            "--data",
            "X=X_no_lines.csv",
            "--data",
            "y_empty.json",
        ],
        "mvi::data::malformed_csv",
    );
    assert!(
        out.contains("no header and no rows") && !out.contains("0 columns"),
        "{out}"
    );
}

/// A data problem deep in a minified (one-line) file shows a window of the line around
/// it, with the true line and column, not the whole file.
#[test]
fn an_error_in_a_minified_file_shows_a_window() {
    let dir = std::env::temp_dir().join(format!("mvi-sweep-minified-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let rows: Vec<String> = (0..3000).map(|i| format!("[{i}.5, 0.25, 1.5]")).collect();
    let mut text = format!("{{\"N\": 3000, \"K\": 3, \"X\": [{}], ", rows.join(", "));
    let bad = text.len() + 12;
    text.push_str("\"y\": [0, 1, x]}");
    let path = dir.join("minified.json");
    std::fs::write(&path, &text).expect("write the data file");
    let path = path.to_string_lossy().into_owned();
    let out = user_error(
        &["check", "logistic.mvi", "--data", &path],
        "mvi::data::malformed_json",
    );
    assert!(out.len() < 2_000, "{} bytes: {out}", out.len());
    assert!(out.contains(&format!("minified.json:1:{}", bad + 1)), "{out}");
    // a shape problem labels the key, not the whole 3000-row value
    std::fs::write(
        &path,
        text.replace(", x]", ", 1]").replace("\"K\": 3", "\"K\": 2"),
    )
    .expect("write the data file");
    let out = user_error(
        &["check", "logistic.mvi", "--data", &path],
        "mvi::data::wrong_size",
    );
    assert!(out.len() < 2_000, "{} bytes: {out}", out.len());
    std::fs::remove_dir_all(&dir).ok();
}

/// Options whose range depends on the model are checked against its D = 4 before the fit:
/// `rank` above D, a full covariance with S ≤ D fixed draws (its fixed-sample ELBO is
/// unbounded: vi_full ran off to 1e13 with S = 4), `subset` above `particles` (pmfvb
/// averaged 500 draws of 200 particles, 1000 times slower). One draw is refused for every
/// Monte Carlo method (vi_diag with S = 1 ran off too).
#[test]
fn options_out_of_range_for_the_model_are_diagnostics() {
    let run = |method: &str, set: &str| {
        user_error(
            &[
                "run",
                "logistic.mvi",
                "--data",
                "logistic.json",
                "--method",
                method,
                "--set",
                set,
                "--quiet",
            ],
            if set == "samples=1" {
                "mvi::check::bad_infer_value"
            } else {
                "mvi::check::infer_value_out_of_range"
            },
        )
    };
    let out = run("mvi_lr", "rank=10");
    assert!(out.contains("D = 4") && out.contains("≤ 4"), "{out}");
    let out = run("vi_full", "samples=4");
    assert!(out.contains("unbounded"), "{out}");
    run("mvi_lr", "samples=3");
    run("pmfvb", "subset=500");
    for method in ["vi_diag", "mvi_eig", "split_mf"] {
        run(method, "samples=1");
    }
}

/// A real option is shown as written, not as a 300-digit number.
#[test]
fn a_huge_real_option_is_shown_short() {
    let o = mvi(&[
        "run",
        "normal_normal.mvi",
        "--data",
        "normal_normal.json",
        "--set",
        "tol=1e300",
        "--quiet",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("tol = 1e300,"), "{out}");
}

/// A directory given as the model or the data file is a diagnostic with a help line.
#[test]
fn a_directory_for_a_file_is_a_diagnostic() {
    user_error(&["check", "."], "mvi::check::unreadable_model");
    user_error(
        &["check", "normal_normal.mvi", "--data", "."],
        "mvi::data::unreadable",
    );
}

/// A held-out matrix with no rows (`"X_test": []`, K from the training data) gives no test
/// points, not a division by zero in the 0-row product.
#[test]
fn an_empty_held_out_matrix_has_no_test_points() {
    assert_no_test_points("predict_reg.mvi", "predict_reg_empty.json");
}

/// Settings that size a run's buffers (`samples`, `bins`, `draws`, `test_draws`, `particles`) far
/// beyond any machine's memory are refused before anything is allocated, with the estimate,
/// the memory available and a value that fits; before the check, each aborted the process
/// (Rust aborts when an allocation fails: exit 134, not even a panic).
#[test]
fn settings_too_large_for_memory_are_diagnostics_not_aborts() {
    let huge = "1000000000000000"; // 10¹⁵
    for (method, key) in [
        ("vi_diag", "samples"),
        ("mvi_lr", "samples"),
        ("split_mf", "samples"),
        ("split_mf", "bins"),
        ("laplace", "draws"),
        ("mvi_eig", "test_draws"),
        ("pmfvb", "particles"),
    ] {
        let set = format!("{key}={huge}");
        let out = user_error(
            &[
                "run",
                "predict_reg.mvi",
                "--data",
                "predict_reg.json",
                "--method",
                method,
                "--set",
                &set,
                "--quiet",
            ],
            "mvi::check::infer_value_out_of_range",
        );
        assert!(
            out.contains(&format!("`{key} = {huge}` needs about")) && out.contains("available"),
            "{method} {key}: {out}"
        );
        // the suggested value is a plain number below the one given (lines are wrapped)
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        let fits: u64 = flat
            .split(&format!("use `{key} = "))
            .nth(1)
            .and_then(|r| r.split('`').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{method} {key}: no suggested value in {out}"));
        assert!((2..1_000_000_000_000_000).contains(&fits), "{out}");
    }
}

/// Written in the `infer` block, the oversized setting is labelled at its value.
#[test]
fn an_oversized_setting_in_the_infer_block_points_at_its_value() {
    let out = user_error(
        &["run", "huge_samples.mvi", "--data", "normal_normal.json"],
        "mvi::check::infer_value_out_of_range",
    );
    assert!(out.contains("huge_samples.mvi:16:"), "{out}");
    assert!(!out.contains("command line"), "{out}");
}

/// The fresh-draw ELBO of a method without one of its own (laplace, split_mf) comes from
/// the output draws, topped up to 1000: with `draws = 2` its standard error came from two
/// values. The extra draws follow the output draws in the random stream, so `draws = 2`
/// reports the estimate of `draws = 1000`.
#[test]
fn a_few_output_draws_do_not_shrink_the_fresh_elbo() {
    for method in ["laplace", "split_mf"] {
        let fresh = |draws: &str| {
            let o = mvi(&[
                "run",
                "logistic.mvi",
                "--data",
                "logistic.json",
                "--method",
                method,
                "--set",
                &format!("draws={draws}"),
                "--json",
                "--quiet",
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let j: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
            let get = |k: &str| j["elbo_fresh"][k].as_f64().unwrap_or_else(|| panic!("{j}"));
            (get("value"), get("se"))
        };
        let (few, many) = (fresh("2"), fresh("1000"));
        assert!(
            (few.0 - many.0).abs() < 1e-9 && (few.1 - many.1).abs() < 1e-9,
            "{method}: draws = 2 gives {few:?}, draws = 1000 gives {many:?}"
        );
    }
}

/// `mvi diagnose` at a point where log p̃ is finite and its gradient is not printed
/// "log p̃ = −inf" and five "ok" lines: the value came with the gradient, under the rule
/// that turns either being non-finite into −∞. It now prints the value itself, says that
/// the gradient is not finite, and fails.
#[test]
fn diagnose_tells_a_non_finite_gradient_from_a_non_finite_value() {
    let o = mvi(&["diagnose", "infinite_gradient.mvi", "--zero"]);
    let out = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("log p̃ = -9.1893853320e-1"), "{out}");
    assert!(
        out.contains("the gradient is not finite here although log p̃ is"),
        "{out}"
    );
    assert!(out.contains("FAIL"), "{out}");
}
