//! The `mvi` program as a user runs it: the real binary (`CARGO_BIN_EXE_mvi`) on the
//! examples, from the crate root, checking exit codes, stdout and the files it writes.
//!
//! Covered: `check` (layout) and `diagnose` on every example; `dump ast|typed|graph`;
//! `run --json` keys; `--output-dir` files without leftover temp files; `compare` with the
//! best marked; bad inputs exit 2 with a diagnostic and a help line, never a panic;
//! `--help` of every subcommand shows an example; and Laplace on the conjugate example equals
//! its exact posterior and evidence (`examples/data/linear_regression_exact.json`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{mvi, root};
use serde_json::Value;

/// Laplace is exact for the conjugate example: only optimiser and rounding error remain.
const EXACT_TOL: f64 = 1e-6;

const LINREG: &str = "examples/linear_regression.mvi";
const LINREG_DATA: &str = "examples/data/linear_regression.json";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert the command exited 0, showing its output when not.
fn assert_ok(o: &Output, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Every example with its data arguments (`--data examples/data/<stem>.json` when present).
fn examples() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = std::fs::read_dir(root().join("examples"))
        .expect("the examples directory exists")
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mvi"))
        .map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 name");
            let data = format!("examples/data/{stem}.json");
            let args = if root().join(&data).is_file() {
                vec!["--data".to_string(), data]
            } else {
                vec![]
            };
            (format!("examples/{stem}.mvi"), args)
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the eight examples of examples/README.md"
    );
    out
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mvi-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a scratch directory can be created");
    d
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

#[test]
fn check_prints_the_layout_of_every_example() {
    for (model, data) in examples() {
        let mut args = vec!["check", model.as_str()];
        args.extend(data.iter().map(String::as_str));
        let o = mvi(&args);
        assert_ok(&o, &model);
        let out = stdout(&o);
        for part in ["params (D = ", "hyper (dim θ = ", "method "] {
            assert!(out.contains(part), "{model}: no `{part}` in\n{out}");
        }
    }
}

#[test]
fn diagnose_passes_on_every_example() {
    for (model, data) in examples() {
        let mut args = vec!["diagnose", model.as_str()];
        args.extend(data.iter().map(String::as_str));
        let o = mvi(&args);
        assert_ok(&o, &model);
        assert!(stdout(&o).contains("PASS"), "{model}:\n{}", stdout(&o));
    }
}

#[test]
fn dump_prints_ast_typed_and_graph() {
    let expect = [
        ("ast", "Program @"),
        ("typed", "param w: vector[3]"),
        ("graph", "graph D=3"),
    ];
    for (form, marker) in expect {
        let o = mvi(&["dump", form, LINREG, "--data", LINREG_DATA]);
        assert_ok(&o, form);
        assert!(stdout(&o).contains(marker), "dump {form}:\n{}", stdout(&o));
    }
}

#[test]
fn run_json_prints_one_object_with_the_summary_keys() {
    let o = mvi(&["run", LINREG, "--data", LINREG_DATA, "--json", "-q"]);
    assert_ok(&o, "run --json");
    let v: Value = serde_json::from_str(&stdout(&o)).expect("stdout is one JSON object");
    for key in [
        "method",
        "dim",
        "iterations",
        "converged",
        "wall_time_s",
        "parameters",
        "approximation",
        "elbo_fresh",
        "log_evidence",
        "theta",
        "khat",
        "predict",
        "notes",
    ] {
        assert!(v.get(key).is_some(), "no `{key}` in --json output");
    }
    assert_eq!(v["method"], "laplace");
    assert_eq!(v["dim"], 3);
    assert!(v["parameters"].get("w.3").is_some());
}

#[test]
fn output_dir_gets_the_four_files_and_no_temp_files() {
    let dir = scratch("output");
    let dir_s = dir.display().to_string();
    let o = mvi(&["run", "examples/mixture_2d.mvi", "-q", "--output-dir", &dir_s]);
    assert_ok(&o, "run --output-dir");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the output directory exists")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["draws.csv", "fit.json", "posterior.svg", "trace.svg"],
        "files in --output-dir"
    );
    let csv = std::fs::read_to_string(dir.join("draws.csv")).expect("draws.csv");
    let header = csv.lines().find(|l| !l.starts_with('#')).expect("a header row");
    assert!(header.starts_with("lp__,log_p__,log_q__"), "{header}");
    assert!(header.contains("w.1") && header.contains("w.2"), "{header}");
    assert_eq!(read_json(&dir.join("fit.json"))["method"], "mvi_lr");
    for svg in ["posterior.svg", "trace.svg"] {
        let text = std::fs::read_to_string(dir.join(svg)).expect("an SVG file");
        assert!(text.contains("<svg"), "{svg} is not SVG");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_prints_one_row_per_method_and_marks_the_exact_one_best() {
    let o = mvi(&[
        "compare",
        LINREG,
        "--data",
        LINREG_DATA,
        "-q",
        "--methods",
        "laplace,mvi_mu,vi_diag",
    ]);
    assert_ok(&o, "compare");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("ELBO (fresh)"), "{out}");
    for m in ["laplace", "mvi_mu", "vi_diag"] {
        assert!(lines.iter().any(|l| l.starts_with(m)), "no row for {m}:\n{out}");
    }
    // Laplace is the exact posterior here, so no method's fresh ELBO (first value column) can
    // be better than Laplace's by more than Monte Carlo error: the one marked best is
    // laplace, or within 3 standard errors of it.
    let elbo = |row: &str| -> (f64, f64, bool) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let value: f64 = cells[1].parse().expect("an ELBO value");
        let se: f64 = cells[3]
            .trim_end_matches('*')
            .parse()
            .expect("its standard error");
        (value, se, cells[3].ends_with('*'))
    };
    let rows: Vec<&str> = lines[1..]
        .iter()
        .copied()
        .filter(|l| !l.starts_with('*'))
        .collect();
    let marked: Vec<(f64, f64, bool)> = rows.iter().map(|r| elbo(r)).filter(|e| e.2).collect();
    assert_eq!(marked.len(), 1, "exactly one ELBO is marked best:\n{out}");
    let laplace = elbo(
        rows.iter()
            .find(|l| l.starts_with("laplace"))
            .expect("a laplace row"),
    );
    let (best, best_se, _) = marked[0];
    assert!(
        best - laplace.0 <= 3.0 * best_se.max(laplace.1) + 1e-9,
        "the best ELBO exceeds the exact one by more than Monte Carlo error:\n{out}"
    );
    assert!(out.contains("* best"), "no legend:\n{out}");
}

/// A bad input must exit 2 and print a diagnostic (a code line and a help line), no panic.
fn assert_user_error(o: &Output, what: &str, message: &str) {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: exit {:?}\n{err}",
        o.status.code()
    );
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
    assert!(err.contains("mvi::"), "{what}: no diagnostic code:\n{err}");
    assert!(err.contains(message), "{what}: no `{message}` in\n{err}");
    assert!(
        err.lines().any(|l| l.trim_start().starts_with("help:")),
        "{what}: no help line:\n{err}"
    );
}

#[test]
fn a_syntax_error_exits_2_with_a_diagnostic() {
    let dir = scratch("syntax");
    let model = dir.join("broken.mvi");
    let source = std::fs::read_to_string(root().join(LINREG)).expect("the example");
    let broken = source.replace("w ~ normal(0, tau)", "w ~ normal(0, tau");
    assert_ne!(source, broken, "the example changed: update this test");
    std::fs::write(&model, broken).expect("a scratch file");
    let o = mvi(&["run", &model.display().to_string(), "--data", LINREG_DATA]);
    assert_user_error(&o, "syntax error", "broken.mvi");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_method_exits_2_with_the_known_ones() {
    let o = mvi(&["run", LINREG, "--data", LINREG_DATA, "--method", "mvi_rl"]);
    assert_user_error(&o, "--method mvi_rl", "unknown inference method `mvi_rl`");
    assert!(stderr(&o).contains("did you mean `mvi_lr`"), "{}", stderr(&o));
}

#[test]
fn a_bad_set_exits_2() {
    let cases = [
        ("samples", "is not KEY=VALUE"),
        ("smaples=3", "unknown `infer` key `smaples`"),
        ("samples=100", "`samples` does not apply to method `laplace`"),
    ];
    for (set, message) in cases {
        let o = mvi(&["run", LINREG, "--data", LINREG_DATA, "--set", set]);
        assert_user_error(&o, &format!("--set {set}"), message);
    }
    let o = mvi(&[
        "run",
        LINREG,
        "--data",
        LINREG_DATA,
        "--method",
        "mvi_lr",
        "--set",
        "rank=abc",
    ]);
    assert_user_error(&o, "--set rank=abc", "rank");
}

#[test]
fn a_missing_data_file_exits_2() {
    let o = mvi(&["run", LINREG, "--data", "examples/data/no_such_file.json"]);
    assert_user_error(&o, "missing data file", "no_such_file.json");
}

#[test]
fn a_data_file_with_a_wrong_label_exits_2() {
    let dir = scratch("labels");
    let mut data = read_json(&root().join("examples/data/logistic_rbf_banana.json"));
    data["y"][3] = Value::from(2);
    let bad = dir.join("banana_label_2.json");
    std::fs::write(&bad, data.to_string()).expect("a scratch file");
    let o = mvi(&[
        "check",
        "examples/logistic_rbf_banana.mvi",
        "--data",
        &bad.display().to_string(),
    ]);
    assert_user_error(&o, "label 2 for bernoulli_logit", "outside its support");

    let mut data = read_json(&root().join(LINREG_DATA));
    let fields = data.as_object_mut().expect("a JSON object");
    let y = fields.remove("y").expect("the example has `y`");
    fields.insert("Y".into(), y);
    let renamed = dir.join("linreg_y_renamed.json");
    std::fs::write(&renamed, data.to_string()).expect("a scratch file");
    let o = mvi(&["check", LINREG, "--data", &renamed.display().to_string()]);
    assert_user_error(&o, "data named `Y` instead of `y`", "no data for `y`");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The subcommands listed by `mvi --help` (so new ones are covered when they appear).
fn subcommands() -> Vec<String> {
    let o = mvi(&["--help"]);
    assert_ok(&o, "--help");
    let out = stdout(&o);
    let list: Vec<String> = out
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect();
    assert!(list.len() >= 5, "subcommands in --help:\n{out}");
    list
}

#[test]
fn every_subcommand_help_shows_an_example() {
    for cmd in subcommands() {
        let o = mvi(&[cmd.as_str(), "--help"]);
        assert_ok(&o, &format!("{cmd} --help"));
        let out = stdout(&o);
        assert!(
            out.contains("Example"),
            "`mvi {cmd} --help` has no example:\n{out}"
        );
        assert!(
            out.contains(&format!("mvi {cmd} ")),
            "`mvi {cmd} --help` shows no `mvi {cmd}` command line:\n{out}"
        );
    }
}

#[test]
fn laplace_through_the_cli_equals_the_exact_conjugate_posterior() {
    let dir = scratch("exact");
    let dir_s = dir.display().to_string();
    let o = mvi(&[
        "run",
        LINREG,
        "--data",
        LINREG_DATA,
        "--method",
        "laplace",
        "-q",
        "--output-dir",
        &dir_s,
    ]);
    assert_ok(&o, "run --method laplace");
    let fit = read_json(&dir.join("fit.json"));
    let exact = read_json(&root().join("examples/data/linear_regression_exact.json"));
    let mean = f64s(&fit["approximation"]["mean"]);
    let cov: Vec<Vec<f64>> = fit["approximation"]["cov"]
        .as_array()
        .expect("a covariance matrix")
        .iter()
        .map(f64s)
        .collect();
    let (exact_mean, exact_sd) = (f64s(&exact["post_mean"]), f64s(&exact["post_sd"]));
    assert_eq!(mean.len(), exact_mean.len());
    for d in 0..mean.len() {
        let sd = cov[d][d].sqrt();
        assert!(
            (mean[d] - exact_mean[d]).abs() < EXACT_TOL,
            "mean[{d}] {} vs exact {}",
            mean[d],
            exact_mean[d]
        );
        assert!(
            (sd - exact_sd[d]).abs() < EXACT_TOL,
            "sd[{d}] {sd} vs exact {}",
            exact_sd[d]
        );
    }
    let log_z = fit["log_evidence"].as_f64().expect("a log evidence");
    let exact_z = exact["log_evidence"].as_f64().expect("the exact log evidence");
    assert!(
        (log_z - exact_z).abs() < EXACT_TOL,
        "log evidence {log_z} vs exact {exact_z}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pairs_choose_the_pair_plots_and_an_unknown_column_is_a_diagnostic() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_pairs");
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let base = [
        "run",
        "examples/eight_schools.mvi",
        "--data",
        "examples/data/eight_schools.json",
        "-q",
    ];
    let ok = mvi(&[&base[..], &["--output-dir", out, "--pairs", "mu:tau"]].concat());
    assert_ok(&ok, "run --pairs mu:tau");
    let svg = std::fs::read_to_string(dir.join("posterior.svg")).unwrap();
    assert!(svg.contains("tau vs mu"), "the chosen pair is drawn");
    let bad = mvi(&[&base[..], &["--output-dir", out, "--pairs", "mu:tauu"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("did you mean `tau`"), "{}", stderr(&bad));
}

/// A bad `--output-dir` is reported before the fit (whose results it would lose), so even a
/// model that cannot be fitted reports the directory, not the fit.
#[test]
fn a_bad_output_dir_is_reported_before_the_fit() {
    let dir = scratch("bad_output_dir");
    let file = dir.join("a_file");
    std::fs::write(&file, "x").expect("a scratch file");
    let model = "tests/fixtures/sweep/improper_flat.mvi";
    let o = mvi(&["run", model, "-q", "--output-dir", &file.display().to_string()]);
    assert_user_error(&o, "--output-dir on a file", "is a file, not a directory");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let blocked = dir.join("out");
    std::fs::create_dir_all(blocked.join("draws.csv")).expect("a scratch directory");
    let o = mvi(&["run", model, "-q", "--output-dir", &blocked.display().to_string()]);
    assert_user_error(&o, "draws.csv is a directory", "draws.csv`: it is a directory");
    let o = mvi(&[
        "compare",
        model,
        "-q",
        "--methods",
        "laplace,vi_diag",
        "--output-dir",
        &file.display().to_string(),
    ]);
    assert_user_error(&o, "compare --output-dir on a file", "not a directory");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--pairs` only draws into `posterior.svg`, so without `--output-dir` it is an error
/// rather than silently ignored; an unknown column is reported before the fit.
#[test]
fn pairs_need_an_output_dir_and_known_columns_before_the_fit() {
    let model = "tests/fixtures/sweep/improper_flat.mvi";
    let o = mvi(&["run", model, "-q", "--pairs", "mu:mu"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--output-dir"), "{}", stderr(&o));
    let dir = scratch("pairs_before_fit");
    let o = mvi(&[
        "run",
        model,
        "-q",
        "--output-dir",
        &dir.display().to_string(),
        "--pairs",
        "nope:nope",
    ]);
    assert_user_error(&o, "unknown --pairs column", "`nope`, which is not a column");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `compare` checks every method's options before the first fit: a typo in the list is
/// reported without fitting (and failing) `laplace` first. `--set samples=…` goes to the
/// methods that take it (it stopped every comparison that included `laplace`), a method
/// named twice is fitted once, and a key none of the methods takes is still an error.
#[test]
fn compare_checks_its_methods_first_and_sets_options_where_they_apply() {
    let flat = "tests/fixtures/sweep/improper_flat.mvi";
    let o = mvi(&["compare", flat, "-q", "--methods", "laplace,vi_dag"]);
    assert_user_error(&o, "a typo in --methods", "unknown inference method `vi_dag`");
    assert!(!stderr(&o).contains("mvi::infer::failed"), "{}", stderr(&o));
    let o = mvi(&[
        "compare",
        LINREG,
        "--data",
        LINREG_DATA,
        "-q",
        "--methods",
        "laplace,vi_diag,laplace",
        "--set",
        "samples=200",
    ]);
    assert_ok(&o, "compare --set samples=200 with laplace");
    let out = stdout(&o);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("laplace")).count(),
        1,
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("vi_diag")), "{out}");
    let o = mvi(&[
        "compare",
        LINREG,
        "--data",
        LINREG_DATA,
        "-q",
        "--methods",
        "laplace,vi_diag",
        "--set",
        "rank=2",
    ]);
    assert_user_error(&o, "compare --set rank=2", "does not apply");
}

/// `restarts`: on the Cauchy example the search from w = 0 ends in a lower mode; ten
/// restarts from random starts find a higher one, which is reported with a note, and its
/// Laplace evidence and test LPD are those of the new mode (they differ from the first).
#[test]
fn laplace_restarts_report_a_higher_mode_on_the_multimodal_cauchy_example() {
    let fit = |restarts: &str| -> Value {
        let o = mvi(&[
            "run",
            "examples/cauchy_rbf.mvi",
            "--data",
            "examples/data/cauchy_rbf.json",
            "--method",
            "laplace",
            "--set",
            "learn_hyper=false",
            "--set",
            &format!("restarts={restarts}"),
            "--json",
            "-q",
        ]);
        assert_ok(&o, "laplace with restarts");
        serde_json::from_str(&stdout(&o)).expect("one JSON object")
    };
    let (one, ten) = (fit("0"), fit("10"));
    let notes = |v: &Value| v["notes"].to_string();
    assert!(!notes(&one).contains("restart"), "{}", notes(&one));
    assert!(notes(&ten).contains("higher mode"), "{}", notes(&ten));
    let lpd = |v: &Value| v["predict"]["test_lpd_per_point"].as_f64().expect("a number");
    assert!(lpd(&ten) > lpd(&one) + 0.01, "{} {}", lpd(&ten), lpd(&one));
    let ev = |v: &Value| v["log_evidence"].as_f64().expect("a number");
    assert!((ev(&ten) - ev(&one)).abs() > 0.1, "{} {}", ev(&ten), ev(&one));
}

/// Run `mvi` with stdout a pipe whose reading end is already closed (as after `| head`
/// has read its lines): every write gets EPIPE.
fn mvi_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the mvi binary runs")
}

#[test]
fn every_command_ends_quietly_when_its_output_is_closed() {
    let model = ["examples/linear_regression.mvi", "--data", LINREG_DATA];
    let o = mvi_into_closed_pipe(&["repl"]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(141)),
        "mvi repl: {}",
        stderr(&o)
    );
    let commands: [&[&str]; 7] = [
        &["check"],
        &["dump", "ast"],
        &["dump", "typed"],
        &["dump", "graph"],
        &["diagnose"],
        &["run", "--quiet", "--set", "draws=20"],
        &["compare", "--quiet", "--methods", "laplace", "--set", "draws=20"],
    ];
    for cmd in commands {
        let args: Vec<&str> = cmd.iter().chain(&model).copied().collect();
        let o = mvi_into_closed_pipe(&args);
        let err = stderr(&o);
        assert!(
            matches!(o.status.code(), Some(0) | Some(141)),
            "mvi {}: exit {:?}\n{err}",
            args.join(" "),
            o.status.code()
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace") && !err.contains("Broken pipe"),
            "mvi {}: {err}",
            args.join(" ")
        );
    }
}

/// The `cargo bench` commands the docs and bench files give, with what follows `--`.
fn documented_bench_commands() -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = vec![root().join("README.md")];
    for dir in ["docs", "benches"] {
        for e in std::fs::read_dir(root().join(dir)).expect("the directory exists") {
            let p = e.expect("an entry").path();
            if p.extension().is_some_and(|x| x == "md" || x == "rs") {
                files.push(p);
            }
        }
    }
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        for cmd in text.split('`').filter(|c| c.starts_with("cargo bench")) {
            // a command wrapped across doc-comment lines reads as one line
            let words: Vec<&str> = cmd.split_whitespace().filter(|w| !w.starts_with("//")).collect();
            let cmd = words.join(" ");
            let after = cmd.split_once(" -- ").map_or("", |(_, a)| a);
            found.push((format!("{}: {cmd}", f.display()), after.to_string()));
        }
    }
    found
}

/// cargo passes `--bench` to a bench harness itself, so a documented command must not pass
/// it again after `--` (criterion then fails with "cannot be used multiple times"), and
/// every other flag after `--` must be one the named harness reads (its source names it
/// in quotes: autodiff's `--ratios-only`, loops's `--single-points`).
#[test]
fn documented_bench_commands_pass_no_second_bench_flag() {
    let commands = documented_bench_commands();
    assert!(
        commands.iter().any(|(_, a)| a.contains("--ratios-only")),
        "{commands:?}"
    );
    for (cmd, after) in commands {
        assert!(!after.split_whitespace().any(|a| a == "--bench"), "{cmd}");
        let harness = cmd
            .split_once("--bench ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{cmd}: names no bench"));
        let source = std::fs::read_to_string(root().join("benches").join(format!("{harness}.rs")))
            .unwrap_or_else(|e| panic!("{cmd}: benches/{harness}.rs: {e}"));
        for flag in after.split_whitespace().filter(|a| a.starts_with('-')) {
            assert!(
                source.contains(&format!("\"{flag}\"")),
                "{cmd}: a flag the harness does not read"
            );
        }
    }
}

/// The documented ratios-only command runs to the end (a release build of the bench):
/// `cargo test --test it -- --ignored cli::ratios_only`.
#[test]
#[ignore = "builds and runs the autodiff bench in release"]
fn the_ratios_only_bench_command_succeeds() {
    let o = Command::new(env!("CARGO"))
        .args(["bench", "--bench", "autodiff", "--", "--ratios-only"])
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert_ok(&o, "cargo bench --bench autodiff -- --ratios-only");
}
