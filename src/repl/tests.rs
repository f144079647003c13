use super::editor::{bracket_depth, candidates};
use super::expr::entry_summary;
use super::*;
use crate::posterior::Approximation;

fn example(rel: &str) -> String {
    format!("{}/examples/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A session with the linear regression example and its data loaded.
fn linear_session() -> Session {
    let mut s = Session::default();
    let out = s.eval_line(&format!(":data {}", example("data/linear_regression.json")));
    assert!(out.starts_with("data:"), "{out}");
    let out = s.eval_line(&format!(":load {}", example("linear_regression.mvi")));
    assert!(out.contains("D = 3"), "{out}");
    s
}

fn fitted_session() -> Session {
    let mut s = linear_session();
    let out = s.eval_line(":fit");
    assert!(out.starts_with("laplace: converged"), "{out}");
    s
}

fn posterior_mean(s: &Session) -> Vec<f64> {
    match &s.last.as_ref().unwrap().posterior.approx {
        Approximation::Gaussian(g) => g.mean.iter().copied().collect(),
        other => panic!("laplace gives a Gaussian, got {other:?}"),
    }
}

/// Parse `mean X   sd Y   90% [A, B]`.
fn parse_summary(line: &str) -> (f64, f64, f64, f64) {
    let nums: Vec<f64> = line
        .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == ',')
        .filter_map(|t| t.parse().ok())
        .collect();
    assert_eq!(nums.len(), 4, "{line}");
    (nums[0], nums[1], nums[2], nums[3])
}

#[test]
fn summary_after_fit_lists_every_parameter() {
    let mut s = fitted_session();
    let out = s.eval_line(":summary");
    for name in ["w.1", "w.2", "w.3", "log evidence"] {
        assert!(out.contains(name), "{name} missing from\n{out}");
    }
}

#[test]
fn linear_expression_has_the_posterior_mean_and_sd() {
    let mut s = fitted_session();
    let m = posterior_mean(&s);
    let (mean, sd, lo, hi) = parse_summary(&s.eval_line("2 * w[1] + 1"));
    // 1000 draws: the mean's Monte Carlo error is sd/√1000 ≈ 0.0044; allow 5 of them.
    assert!(
        (mean - (2.0 * m[0] + 1.0)).abs() < 0.03,
        "{mean} vs {}",
        2.0 * m[0] + 1.0
    );
    assert!((sd - 2.0 * 0.069).abs() < 0.02, "sd {sd}");
    assert!(lo < mean && mean < hi);
}

#[test]
fn vector_expression_prints_one_line_per_entry() {
    let mut s = fitted_session();
    let out = s.eval_line("exp(w)");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[2].starts_with("[3]"), "{out}");
}

#[test]
fn data_only_expression_has_zero_spread() {
    let mut s = fitted_session();
    let (mean, sd, lo, hi) = parse_summary(&s.eval_line("sigma * 2"));
    assert!((mean - 1.0).abs() < 1e-12 && sd.abs() < 1e-12, "{mean} {sd}");
    assert!((lo - 1.0).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12);
}

#[test]
fn unknown_name_prints_a_diagnostic_and_the_session_goes_on() {
    let mut s = fitted_session();
    let out = s.eval_line("foo + 1");
    assert!(out.contains("unknown name `foo`"), "{out}");
    assert!(s.eval_line("w[2]").starts_with("mean -1.9"));
}

#[test]
fn expression_before_a_fit_asks_for_one() {
    let mut s = linear_session();
    assert!(s.eval_line("w[1]").contains("there is no fit yet"));
}

#[test]
fn definitions_extend_the_model_and_its_names() {
    let mut s = fitted_session();
    let out = s.eval_line("let z = 2 * w[1]");
    assert!(out.contains("model extended"), "{out}");
    assert!(s.names().contains(&"z".to_string()));
    let block = "fn sq(x: real) -> real {\n  return x * x\n}";
    assert!(s.eval_line(block).contains("model extended"));
    let m = posterior_mean(&s);
    let (mean, _, _, _) = parse_summary(&s.eval_line("sq(z)"));
    // E[(2 w₁)²] = 4 (m² + sd²) with sd ≈ 0.069.
    let exact = 4.0 * (m[0] * m[0] + 0.069 * 0.069);
    assert!((mean - exact).abs() < 0.05, "{mean} vs {exact}");
}

#[test]
fn a_definition_that_does_not_check_is_rejected() {
    let mut s = fitted_session();
    let before = s.eval_line(":model");
    let out = s.eval_line("let q = nope * 2");
    assert!(out.contains("unknown name `nope`"), "{out}");
    assert_eq!(s.eval_line(":model"), before);
    assert!(!s.names().contains(&"q".to_string()));
}

#[test]
fn an_unknown_method_is_rejected_and_the_old_one_kept() {
    let mut s = linear_session();
    assert!(s.eval_line(":method bogus").contains("unknown inference method"));
    assert_eq!(s.eval_line(":method"), "method = laplace\n");
    assert_eq!(s.eval_line(":method vi_diag"), "method = vi_diag\n");
    assert!(s.eval_line(":set samples=50").contains("samples = 50"));
    assert!(s.eval_line(":set").contains("samples = 50"));
}

#[test]
fn an_unknown_method_is_rejected_before_a_model_is_loaded() {
    let mut s = Session::default();
    let out = s.eval_line(":method vi_dag");
    assert!(out.contains("unknown inference method `vi_dag`"), "{out}");
    assert!(out.contains("did you mean `vi_diag`?"), "{out}");
    assert_eq!(s.eval_line(":method"), "method = laplace\n");
}

#[test]
fn compare_skips_options_another_method_does_not_take() {
    let mut s = linear_session();
    s.eval_line(":method vi_diag");
    s.eval_line(":set samples=50");
    let out = s.eval_line(":compare laplace,vi_diag");
    assert!(out.contains("laplace") && out.contains("vi_diag"), "{out}");
    assert!(!out.contains("does not apply"), "{out}");
}

#[test]
fn compare_lists_a_failing_method_and_fits_the_others() {
    let dir = format!("{}/tests/fixtures/sweep", env!("CARGO_MANIFEST_DIR"));
    let mut s = Session::default();
    s.eval_line(&format!(":data {dir}/eight.json"));
    let out = s.eval_line(&format!(":load {dir}/hier_centered.mvi"));
    assert!(out.contains("D = 10"), "{out}");
    // the centred eight schools have no mode: laplace fails, vi_diag starts without it
    let out = s.eval_line(":compare laplace,vi_diag");
    assert!(out.contains("failed: laplace: laplace failed"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("vi_diag")), "{out}");
}

/// A typo in the list is reported before any method runs (the failing `laplace` would
/// otherwise have been fitted, and its failure listed, first).
#[test]
fn compare_checks_every_method_before_fitting() {
    let dir = format!("{}/tests/fixtures/sweep", env!("CARGO_MANIFEST_DIR"));
    let mut s = Session::default();
    s.eval_line(&format!(":data {dir}/eight.json"));
    s.eval_line(&format!(":load {dir}/hier_centered.mvi"));
    let out = s.eval_line(":compare laplace,vi_dag");
    assert!(out.contains("unknown inference method `vi_dag`"), "{out}");
    assert!(!out.contains("laplace failed"), "{out}");
}

#[test]
fn plot_writes_an_svg_file() {
    let mut s = fitted_session();
    let dir = std::env::temp_dir().join(format!("mvi_repl_plot_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.svg");
    let out = s.eval_line(&format!(":plot {}", path.display()));
    assert!(out.starts_with("wrote"), "{out}");
    assert!(std::fs::read_to_string(&path).unwrap().contains("<svg"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_command_and_missing_model_are_diagnostics() {
    let mut s = Session::default();
    assert!(s
        .eval_line(":frobnicate")
        .contains("unknown command `:frobnicate`"));
    assert!(s.eval_line(":fit").contains("no model is loaded"));
    assert!(s
        .eval_line(":load /nonexistent/m.mvi")
        .contains("cannot read model file"));
    assert!(!s.wants_quit());
    s.eval_line(":quit");
    assert!(s.wants_quit());
}

#[test]
fn definitions_are_told_from_expressions() {
    assert!(is_definition("let x = 1"));
    assert!(is_definition("fn f(x: real) -> real { return x }"));
    assert!(is_definition("predict {\n y ~ normal(0, 1)\n}"));
    assert!(!is_definition("letter + 1"));
    assert!(!is_definition("model_fit * 2"));
}

#[test]
fn brackets_left_open_continue_the_input() {
    assert_eq!(bracket_depth("fn f(x: real) -> real {"), 1);
    assert_eq!(bracket_depth("dot(X[1], w)"), 0);
    assert_eq!(bracket_depth("let a = 1 // {"), 0);
    assert_eq!(bracket_depth("import \"a{\""), 0);
    assert_eq!(bracket_depth("model {\n  w ~ normal(0, 1)\n}"), 0);
}

#[test]
fn completion_offers_words_with_the_typed_prefix() {
    let words = vec!["tau".to_string(), "theta".to_string(), "w".to_string()];
    let (start, pairs) = candidates("exp(th", words);
    assert_eq!(start, 4);
    let got: Vec<&str> = pairs.iter().map(|p| p.replacement.as_str()).collect();
    assert_eq!(got, ["theta"]);
}

#[test]
fn entry_summary_interpolates_quantiles() {
    let x: Vec<f64> = (0..=100).map(f64::from).collect();
    let e = entry_summary(&x);
    assert!((e.mean - 50.0).abs() < 1e-12);
    assert!((e.q05 - 5.0).abs() < 1e-12 && (e.q95 - 95.0).abs() < 1e-12);
    assert!((e.sd - 29.3002).abs() < 1e-4);
}

#[test]
fn fit_with_a_method_name_fits_with_that_method_for_this_fit_only() {
    let mut s = linear_session();
    assert_eq!(s.eval_line(":method vi_diag"), "method = vi_diag\n");
    let out = s.eval_line(":fit laplace");
    assert!(out.starts_with("laplace: converged"), "{out}");
    assert_eq!(s.last.as_ref().unwrap().report.method, "laplace");
    let out = s.eval_line(":fit");
    assert!(out.starts_with("vi_diag"), "{out}");
    let out = s.eval_line(":fit laplaec");
    assert!(
        out.contains("unknown inference method `laplaec`") && out.contains("laplace"),
        "{out}"
    );
    let out = s.eval_line(":fit laplace mvi_lr");
    assert!(out.contains("at most one argument"), "{out}");
}

#[test]
fn an_error_in_an_expression_points_into_the_typed_input() {
    let mut s = fitted_session();
    for input in ["nosuchname + 1", "sum(w) * nosuchname"] {
        let out = s.eval_line(input);
        assert!(out.contains("unknown name `nosuchname`"), "{out}");
        assert!(out.contains("<input>") && out.contains(input), "{out}");
        assert!(
            !out.contains("__repl_expr") && !out.contains("linear_regression.mvi"),
            "{out}"
        );
    }
    // a syntax error too
    let out = s.eval_line("w[1] +");
    assert!(out.contains("<input>") && !out.contains("__repl_expr"), "{out}");
}

#[test]
fn a_model_loaded_before_its_data_is_told_to_use_the_data_command() {
    let mut s = Session::default();
    let out = s.eval_line(&format!(":load {}", example("linear_regression.mvi")));
    assert!(out.contains("no data for"), "{out}");
    assert!(out.contains("`:data data.json`"), "{out}");
    assert!(!out.contains("--data"), "{out}");
    let out = s.eval_line(&format!(":data {}", example("data/linear_regression.json")));
    assert!(out.contains("D = 3"), "{out}");
    // with data that lacks a variable, the command to type keeps the files already given
    let partial = std::env::temp_dir().join(format!("mvi-repl-partial-{}.json", std::process::id()));
    std::fs::write(&partial, r#"{"X": [[1.0, 2.0, 3.0]], "sigma": 0.5, "tau": 1.0}"#).unwrap();
    let file = partial.display().to_string();
    let diags = s.set_data(std::slice::from_ref(&file)).unwrap_err();
    let help = diags[0].help.clone().unwrap_or_default();
    assert!(
        help.contains(&format!("pass `:data {file} y=file.csv`")),
        "{help}"
    );
    std::fs::remove_file(&partial).unwrap();
}

#[test]
fn a_command_typed_without_its_colon_is_named_as_one() {
    let mut s = Session::default();
    let out = s.eval_line("load model.mvi data.json");
    assert!(out.contains("commands start with `:`"), "{out}");
    assert!(out.contains("type `:load model.mvi data.json`"), "{out}");
    // an expression that merely starts with such a word is left to the expression's error
    let mut s = fitted_session();
    let out = s.eval_line("fit");
    assert!(!out.contains("commands start with"), "{out}");
}

#[test]
fn ppc_and_loo_fit_and_draw_their_checks() {
    let dir = std::env::temp_dir().join("mvi_repl_after_fit");
    std::fs::create_dir_all(&dir).unwrap();
    let mut s = linear_session();
    let ppc = dir.join("ppc.svg");
    let out = s.eval_line(&format!(":ppc {}", ppc.display()));
    assert!(out.contains("wrote") && out.contains("(y replicated)"), "{out}");
    assert!(std::fs::read_to_string(&ppc).unwrap().contains("<svg"));
    let pit = dir.join("pit.svg");
    let out = s.eval_line(&format!(":loo {}", pit.display()));
    assert!(out.contains("elpd_loo") && out.contains("wrote"), "{out}");
    assert!(pit.is_file());
    // the summary after `:loo` is the last fit's, with the replicates
    assert!(s.eval_line(":summary").contains("y_rep.1"));
}
