//! `mvi bench paper` end to end: the real binary on a tiny configuration (thyroid for
//! Tables III/IV, iris for V/VI, one generated Cauchy set for II; one split, one (r, α) pair
//! per M, S = 50, 100 test draws), checking the report's structure and that a second run
//! skips every finished fit.
//!
//! The data are the repository's copy of those two sets, `tests/data/paper` (see its README;
//! the environment variable `MVI_PAPER_DATA` points the tests at another data directory, such
//! as the whole `../shared/data`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("MVI_PAPER_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/paper"),
        PathBuf::from,
    );
    assert!(
        dir.join("thyroid").join("X.csv").is_file(),
        "the benchmark data directory `{}` has no thyroid data (point MVI_PAPER_DATA at a \
         directory laid out like ../shared/data)",
        dir.display()
    );
    dir
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mvi-paper-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn bench(out: &Path, extra: &[&str]) -> Output {
    let data = data_dir();
    let mut args = vec![
        "bench".to_string(),
        "paper".into(),
        "--data-dir".into(),
        data.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--splits".into(),
        "1".into(),
        "--pairs".into(),
        "1".into(),
        "--samples".into(),
        "50".into(),
        "--test-draws".into(),
        "100".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_string()));
    Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(&args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the mvi binary runs")
}

/// Run [`bench`] and check that it succeeds with a summary starting `summary`.
fn bench_succeeds(out: &Path, extra: &[&str], summary: &str) {
    let o = bench(out, extra);
    assert!(o.status.success(), "stderr:\n{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with(summary), "{}", text(&o.stdout));
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The store's records as JSON values.
fn records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .expect("the store exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record is JSON"))
        .collect()
}

/// `learned-centres` (the paper's protocol) learns the RBF centres: on thyroid (Table III)
/// and iris (Table V, softmax on RBF features) with M = 3 and one (r, α) pair, every split
/// has a search record and five methods, all with θ = (α, r, centres) and finite test LPDs;
/// the centres moved from their k-means start during the search; and the same `--out` then
/// refuses the other protocol.
#[test]
fn learned_centres_learns_the_centres() {
    let out = scratch("learned");
    // per set: 1 search fit (1 pair × 1 M) and 5 methods; stored: search + 5 methods
    bench_succeeds(
        &out,
        &[
            "--only",
            "thyroid,iris",
            "--tables",
            "III,V",
            "--centres",
            "3",
            "--protocol",
            "learned-centres",
        ],
        "12 fits run, 12 results stored",
    );
    let recs = records(&out);
    for (set, q) in [("thyroid", 5), ("iris", 4)] {
        for r in recs.iter().filter(|r| r["set"] == set) {
            assert!(r["failed"].is_null(), "{r}");
            assert_eq!(r["centres"], 3, "{r}");
            let theta = r["theta"].as_array().expect("θ is stored");
            assert_eq!(theta.len(), 2 + 3 * q, "{set}: {r}");
            assert!(theta.iter().any(|t| t[0] == "centres.3.1"), "{r}");
            if r["method"] != "search" {
                assert!(r["lpd"].as_f64().is_some_and(f64::is_finite), "{r}");
            }
        }
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    assert!(report.contains("`learned-centres`"), "{report}");
    assert_eq!(
        std::fs::read_to_string(out.join("protocol.txt")).expect("the protocol is marked"),
        "learned-centres\n"
    );
    let o = bench(&out, &["--only", "thyroid", "--protocol", "fixed-centres"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("`learned-centres` protocol"),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}

/// A VI method that fails from the `laplace` step's θ starts again from the search's θ and
/// says so: the store is given a `laplace` record whose α and r are 1e-300 (every RBF
/// feature 0, so the weights on them have only a prior that flat: the Hessian at the mode
/// is singular to working precision, as when the evidence over learned centres drives α
/// towards 0) and no VI records; the rerun fits the MVI methods from the search's θ, each
/// with a finite test LPD and the note.
#[test]
fn vi_methods_that_fail_from_laplaces_theta_start_from_the_searchs() {
    let out = scratch("retry");
    let args = [
        "--only",
        "thyroid",
        "--tables",
        "III",
        "--centres",
        "3",
        "--protocol",
        "learned-centres",
    ];
    let o = bench(&out, &args);
    assert!(o.status.success(), "stderr:\n{}", text(&o.stderr));
    let kept: Vec<String> = records(&out)
        .into_iter()
        .filter(|r| r["method"] == "search" || r["method"] == "laplace")
        .map(|mut r| {
            if r["method"] == "laplace" {
                for t in r["theta"].as_array_mut().expect("θ is stored") {
                    if t[0] == "alpha" || t[0] == "r" {
                        t[1] = serde_json::json!(1e-300);
                    }
                }
            }
            r.to_string()
        })
        .collect();
    assert_eq!(kept.len(), 2);
    std::fs::write(out.join("results.jsonl"), kept.join("\n") + "\n").expect("the store is rewritten");
    let o = bench(&out, &args);
    assert!(o.status.success(), "stderr:\n{}", text(&o.stderr));
    let recs = records(&out);
    for method in ["mvi_mu", "mvi_eig", "mvi_lr"] {
        let r = recs
            .iter()
            .find(|r| r["method"] == method)
            .expect("the method is stored");
        assert!(r["failed"].is_null(), "{r}");
        assert!(r["lpd"].as_f64().is_some_and(f64::is_finite), "{r}");
        let notes = r["notes"].as_array().expect("notes are stored");
        assert!(
            notes.iter().any(|n| n
                .as_str()
                .is_some_and(|n| n.starts_with("started from the search's θ"))),
            "{r}"
        );
        let alpha = r["theta"]
            .as_array()
            .expect("θ")
            .iter()
            .find(|t| t[0] == "alpha")
            .expect("α")[1]
            .as_f64()
            .expect("a number");
        assert!(
            alpha > 1e-100,
            "{method} did not start from the degenerate α: {r}"
        );
    }
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}

/// The gradient of the Laplace log evidence with respect to θ = (α, r, centres), as the θ
/// search uses it (`evidence_gradient`: traces by second differences, the mode's move
/// with θ included), against central differences of the evidence itself, each a full
/// Laplace fit at fixed θ. Tiny data: N = 16, Q = 2, M = 3 (P = 8, D = 4).
#[test]
fn laplace_evidence_gradient_through_the_centres_matches_finite_differences() {
    use mvi::infer::laplace::{curvature, evidence_gradient, fit_laplace};
    use mvi::infer::settings::Common;
    use rand::SeedableRng;
    let x: Vec<[f64; 2]> = (0..16)
        .map(|i| {
            let t = f64::from(i) * 0.7;
            [t.sin() * 1.3, (1.7 * t).cos() - 0.2]
        })
        .collect();
    let y: Vec<i32> = x
        .iter()
        .map(|p| i32::from(p[0] * p[1] + 0.3 * p[0] > 0.0))
        .collect();
    let data = serde_json::json!({
        "X": x, "y": y,
        "C": [[0.5, 0.5], [-0.8, 0.1], [0.2, -0.9]],
        "X_test": [[0.1, 0.2], [1.0, -1.0]], "y_test": [1, 0],
    });
    let mut set = mvi::data::DataSet::default();
    mvi::data::add_json_text(&mut set, "d.json", data.to_string()).expect("the data parse");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = include_str!("../../examples/logistic_rbf_centres.mvi");
    let typed = mvi::check::check_source(text, "logistic_rbf_centres.mvi", &dir, &set)
        .unwrap_or_else(|_| panic!("the example checks"));
    let mut lj = mvi::graph::lower_model(&typed).expect("the example lowers");
    assert_eq!(lj.theta0.len(), 8);
    // away from the k-means start and from α = r = 1, so that no entry is special
    for (i, v) in [-0.3, 0.2, 0.45, -0.6, 0.25, 0.55, 0.05, -0.85]
        .iter()
        .enumerate()
    {
        lj.theta0[i] = *v;
    }
    let common = Common {
        learn_hyper: false,
        ..Common::default()
    };
    let evidence = |lj: &mvi::graph::LogJoint| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        fit_laplace(lj, &common, &mut rng, &mut mvi::infer::Silent)
            .expect("laplace fits")
            .log_evidence
    };
    let theta = lj.theta0.clone();
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let fit = fit_laplace(&lj, &common, &mut rng, &mut mvi::infer::Silent).expect("laplace fits");
    let (l, log_det) = curvature(&lj, &theta, &fit.mode).expect("−H is positive definite");
    let (value, grad) = evidence_gradient(&lj, &theta, &fit.mode, fit.log_p, &l, log_det);
    assert!(
        (value - fit.log_evidence).abs() < 1e-10,
        "{value} vs {}",
        fit.log_evidence
    );
    let h = 1e-5;
    for j in 0..theta.len() {
        let mut up = lj.clone();
        up.theta0[j] += h;
        let mut down = lj.clone();
        down.theta0[j] -= h;
        let fd = (evidence(&up) - evidence(&down)) / (2.0 * h);
        assert!(
            (grad[j] - fd).abs() <= 1e-4 * fd.abs().max(1.0),
            "θ[{j}]: gradient {} against finite differences {fd}",
            grad[j]
        );
    }
}

#[test]
fn tiny_run_writes_every_table_and_a_second_run_skips_finished_work() {
    let out = scratch("tiny");
    let args = ["--only", "thyroid,iris,cauchy", "--protocol", "fixed-centres"];
    // 1 search of 3 Laplace fits + 5 methods for thyroid, 5 for iris, 5 for cauchy.
    bench_succeeds(&out, &args, "18 fits run, 16 results stored");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    for heading in [
        "## Table II",
        "## Table III",
        "## Table IV",
        "## Table V",
        "## Table VI",
    ] {
        assert!(report.contains(heading), "missing {heading}:\n{report}");
    }
    let header = "| data set | splits | laplace | mvi_mu | mvi_eig | mvi_lr | vi_diag |";
    assert_eq!(report.matches(header).count(), 5, "{report}");
    for row in [
        "| thyroid | 1 |",
        "| iris | 1 |",
        "| cauchy | 1 |",
        "| paper (Table II) | 100 | -0.818",
    ] {
        assert!(report.contains(row), "missing row {row}:\n{report}");
    }
    // Exactly one best (bold) cell per row of every table.
    for line in report
        .lines()
        .filter(|l| l.starts_with("| thyroid") || l.starts_with("| iris"))
    {
        assert_eq!(line.matches("**").count(), 2, "{line}");
    }
    let lines = std::fs::read_to_string(out.join("results.jsonl")).expect("the store exists");
    assert_eq!(lines.lines().count(), 16);

    bench_succeeds(&out, &args, "0 fits run, 16 results stored");
    assert_eq!(
        std::fs::read_to_string(out.join("report.md"))
            .expect("report.md")
            .lines()
            .count(),
        report.lines().count()
    );
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}

/// `fixed-centres-select` on iris (Table V): the search on RBF features, `laplace` on the
/// inputs and on the RBF features, then the four VI methods on the features whose evidence
/// is higher. `select` holds the higher of the two evidences its note names, the stored
/// `laplace` is that fit, and every method has its M. With the fits after the choice removed
/// from the store, a second run reads the choice from `select` and refits them alone, to
/// the same `laplace`. It is the default protocol: no `--protocol` is given.
#[test]
fn fixed_centres_select_is_the_default_and_fits_the_methods_on_the_features_with_the_higher_evidence() {
    let out = scratch("select");
    let args = ["--only", "iris", "--tables", "V", "--centres", "3"];
    // 1 search fit, 2 laplace fits, 4 VI methods; stored: search, select, 5 methods
    bench_succeeds(&out, &args, "7 fits run, 7 results stored");
    assert_eq!(
        std::fs::read_to_string(out.join("protocol.txt")).expect("the protocol is marked"),
        "fixed-centres-select\n"
    );
    let recs = records(&out);
    let get = |m: &str| recs.iter().find(|r| r["method"] == m).expect("stored").clone();
    let select = get("select");
    let note = select["notes"][0].as_str().expect("the choice's note");
    // "log evidence: inputs A, RBF features (M = 3) B"
    let evidences: Vec<f64> = note
        .split(", ")
        .map(|part| {
            part.rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .expect("a number")
        })
        .collect();
    assert!(note.contains("(M = 3)"), "{note}");
    let best = evidences[0].max(evidences[1]);
    let chosen = select["log_evidence"].as_f64().expect("the chosen evidence");
    assert!((chosen - best).abs() < 1e-3, "{note}: chose {chosen}");
    let rbf = evidences[1] > evidences[0];
    assert_eq!(
        select["centres"],
        if rbf { 3.into() } else { serde_json::Value::Null }
    );
    let laplace = get("laplace");
    assert_eq!(laplace["log_evidence"], select["log_evidence"]);
    for r in recs.iter().filter(|r| r["method"] != "search") {
        assert!(r["failed"].is_null(), "{r}");
        assert_eq!(r["centres"], select["centres"], "{r}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    assert!(report.contains("`fixed-centres-select`"), "{report}");
    assert!(report.contains("| iris | 1 |"), "{report}");

    // keep the search and the choice only: the rerun fits laplace and the VI methods
    let kept: Vec<String> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("the store")
        .lines()
        .filter(|l| l.contains("\"method\":\"search\"") || l.contains("\"method\":\"select\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(kept.len(), 2);
    std::fs::write(out.join("results.jsonl"), kept.concat()).expect("store rewritten");
    bench_succeeds(&out, &args, "5 fits run, 7 results stored");
    let again = records(&out);
    let refit = again
        .iter()
        .find(|r| r["method"] == "laplace")
        .expect("laplace refitted");
    assert_eq!(refit["log_evidence"], laplace["log_evidence"]);
    assert_eq!(refit["lpd"], laplace["lpd"]);
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}

#[test]
fn unknown_set_and_table_are_diagnostics_with_exit_code_2() {
    let out = scratch("bad");
    let o = bench(&out, &["--only", "thyriod"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("`thyriod`") && err.contains("did you mean `thyroid`?"),
        "{err}"
    );
    let o = bench(&out, &["--tables", "VII"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("not a table"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_missing_data_directory_is_a_diagnostic() {
    let out = scratch("nodata");
    let o = Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(["bench", "paper", "--data-dir", "/no/such/dir", "--out"])
        .arg(&out)
        .output()
        .expect("the mvi binary runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("does not exist"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn report_only_fits_nothing_and_still_writes_the_report() {
    let out = scratch("report-only");
    // a mistyped `--out`: a diagnostic, and no empty store or report made there
    let o = bench(&out, &["--only", "thyroid", "--report-only"]);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("holds no results to report"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists(), "{} was created", out.display());
    // a store with one finished fit: its report, and no fit run
    std::fs::create_dir_all(&out).expect("scratch directory");
    std::fs::write(out.join("protocol.txt"), "fixed-centres-select\n").expect("protocol written");
    let record = serde_json::json!({
        "table": "III", "set": "thyroid", "split": 0, "method": "laplace",
        "lpd": -0.25, "lppd": -0.2, "error": 0.05, "mse": null, "elbo": null,
        "log_evidence": -40.0, "theta": [["alpha", 0.5], ["r", 1.0]], "centres": 10,
        "seconds": 0.1, "iterations": 20, "converged": true, "dim_samples": [11, null],
        "notes": [], "failed": null
    });
    std::fs::write(out.join("results.jsonl"), format!("{record}\n")).expect("store written");
    bench_succeeds(
        &out,
        &["--only", "thyroid", "--report-only"],
        "0 fits run, 1 results stored",
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    assert!(
        report.contains("## Table III") && report.contains("| thyroid | 1 | **-0.250 ± 0.000** |"),
        "{report}"
    );
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}
