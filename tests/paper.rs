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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn tiny_run_writes_every_table_and_a_second_run_skips_finished_work() {
    let out = scratch("tiny");
    let first = bench(&out, &["--only", "thyroid,iris,cauchy"]);
    assert!(first.status.success(), "stderr:\n{}", text(&first.stderr));
    // 1 search of 3 Laplace fits + 5 methods for thyroid, 5 for iris, 5 for cauchy.
    assert!(
        text(&first.stdout).starts_with("18 fits run, 16 results stored"),
        "{}",
        text(&first.stdout)
    );
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

    let second = bench(&out, &["--only", "thyroid,iris,cauchy"]);
    assert!(second.status.success(), "stderr:\n{}", text(&second.stderr));
    assert!(
        text(&second.stdout).starts_with("0 fits run, 16 results stored"),
        "{}",
        text(&second.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md"))
            .expect("report.md")
            .lines()
            .count(),
        report.lines().count()
    );
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
    let o = bench(&out, &["--only", "thyroid", "--report-only"]);
    assert!(o.status.success(), "stderr:\n{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("0 fits run, 0 results stored"),
        "{}",
        text(&o.stdout)
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md is written");
    assert!(
        report.contains("## Table III") && !report.contains("| thyroid |"),
        "{report}"
    );
    std::fs::remove_dir_all(&out).expect("scratch directory removed");
}
