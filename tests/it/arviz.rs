//! ArviZ reads mvi's `draws.csv`: `az.from_cmdstan` on a hand-made fit gives the same
//! posterior means as `fit.json`.
//!
//! The test keeps a Python virtualenv with ArviZ from PyPI in `target/arviz-venv`, built on
//! first use (a few minutes) and reused afterwards (the check then takes seconds). It is
//! skipped, with a printed message, only when PyPI cannot be reached; any other failure
//! (no `python3`, a broken venv, a mismatch) fails the test. To run it alone:
//! `cargo test --test it -- --nocapture arviz::`.

use crate::fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Phrases in pip's output that mean the package index could not be reached.
const UNREACHABLE: &[&str] = &[
    "Failed to establish a new connection",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Could not fetch URL",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
];

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is target/tmp")
        .to_path_buf()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("could not run {cmd:?}: {e} (python3 with venv is required)"))
}

fn has_arviz(python: &Path) -> bool {
    python.exists()
        && run(Command::new(python).args(["-c", "import arviz"]))
            .status
            .success()
}

/// The venv's python with ArviZ installed, or `None` when PyPI is unreachable.
fn arviz_python() -> Option<PathBuf> {
    let venv = target_dir().join("arviz-venv");
    let python = venv.join("bin").join("python");
    if has_arviz(&python) {
        return Some(python);
    }
    let made = run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    assert!(made.status.success(), "python3 -m venv failed:\n{}", text(&made));
    let pip = run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--retries",
            "1",
            "--timeout",
            "20",
            "arviz>=0.20,<1",
        ])
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"));
    if !pip.status.success() {
        let out = text(&pip);
        if UNREACHABLE.iter().any(|m| out.contains(m)) {
            println!("SKIPPED arviz test: PyPI is unreachable, so ArviZ cannot be installed:\n{out}");
            return None;
        }
        panic!("pip install arviz failed:\n{out}");
    }
    assert!(has_arviz(&python), "arviz installed but cannot be imported");
    Some(python)
}

#[test]
fn arviz_from_cmdstan_reads_draws_csv_with_the_means_of_fit_json() {
    let Some(python) = arviz_python() else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arviz-check");
    let report = fixture::report("mvi_lr", 500, 11);
    mvi::run::write_output_dir(&dir, &report, false).expect("writing the output dir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/arviz/check_from_cmdstan.py");
    let out = run(Command::new(&python)
        .arg(&script)
        .arg(dir.join("draws.csv"))
        .arg(dir.join("fit.json"))
        .env("PYTHONWARNINGS", "ignore"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ArviZ check failed:\n{}", text(&out));
    assert!(stdout.starts_with("ok 7 columns, 500 draws"), "{stdout}");
}

#[test]
fn arviz_from_cmdstan_reads_the_replicates_and_the_log_likelihood() {
    let Some(python) = arviz_python() else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arviz-ppc");
    let _ = std::fs::remove_dir_all(&dir);
    let out = crate::common::mvi(&[
        "loo",
        "examples/linear_regression.mvi",
        "--data",
        "examples/data/linear_regression.json",
        "--method",
        "nuts",
        "--predictive",
        "--set",
        "draws=100",
        "-q",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let script = "import sys, arviz as az\n\
        d = az.from_cmdstan(posterior=sys.argv[1], posterior_predictive='y_rep', \
        log_likelihood='log_lik', observed_data=sys.argv[2], observed_data_var='y')\n\
        print(sorted(d.groups()), d.posterior_predictive['y_rep'].shape, d.observed_data['y'].shape)\n\
        print('elpd', float(az.loo(d, reff=1.0).elpd_loo))\n";
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/linear_regression.json");
    let out = run(Command::new(&python)
        .args(["-c", script])
        .arg(dir.join("draws.csv"))
        .arg(data)
        .env("PYTHONWARNINGS", "ignore"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ArviZ failed:\n{}", text(&out));
    // one CSV is one chain to from_cmdstan: the 4 chains' 100 draws in a row
    assert!(
        stdout.contains("'observed_data'")
            && stdout.contains("'posterior_predictive'")
            && stdout.contains("'log_likelihood'")
            && stdout.contains("(1, 400, 50) (50,)"),
        "{stdout}"
    );
    // ArviZ's LOO of these nuts draws is mvi's (both with r_eff = 1)
    let ours: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("loo.json")).unwrap()).unwrap();
    let theirs: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("elpd "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let mine = ours["loo"]["elpd_loo"].as_f64().unwrap();
    assert!((theirs - mine).abs() < 1e-6, "ArviZ {theirs} vs mvi {mine}");
}
