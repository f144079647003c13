//! Ctrl-C during `mvi run` stops the fit at its next iteration and still writes the
//! results, marked as interrupted, rather than nothing or a half-written file.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A logistic regression big enough that `vi_full` runs for many seconds: N = 2000,
/// D = 60, S = 4000 (each objective evaluation multiplies 2000×60 by 60×4000).
fn write_big_model(dir: &Path) -> (PathBuf, PathBuf) {
    let (n, d) = (2000usize, 60usize);
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let x: Vec<Vec<f64>> = (0..n).map(|_| (0..d).map(|_| next()).collect()).collect();
    let y: Vec<i32> = x
        .iter()
        .map(|r| i32::from(r.iter().sum::<f64>() + next() > 0.0))
        .collect();
    let data = serde_json::json!({ "X": x, "y": y });
    let model = "data {\n  X: matrix[N, D]\n  y: ints[N]\n}\nparam {\n  w: vector[D]\n}\n\
                 model {\n  w ~ normal(0, 1)\n  y ~ bernoulli_logit(X * w)\n}\n\
                 infer {\n  method = vi_full\n  samples = 4000\n  max_iters = 100000\n  tol = 1e-300\n  test_draws = 100\n}\n";
    let (m, j) = (dir.join("big.mvi"), dir.join("big.json"));
    std::fs::write(&m, model).unwrap();
    std::fs::write(&j, data.to_string()).unwrap();
    (m, j)
}

/// A fresh scratch directory `name` under the test target directory holding the big model
/// and its data: (directory, model, data).
fn fresh_big_model(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (model, data) = write_big_model(&dir);
    (dir, model, data)
}

/// Send SIGINT (Ctrl-C) to the child process.
fn ctrl_c(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn ctrl_c_stops_the_fit_and_writes_results_marked_interrupted() {
    let (dir, model, data) = fresh_big_model("interrupt_test");
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args([
            "run",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--quiet",
        ])
        .arg("--output-dir")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the fit finished before it could be interrupted"
    );
    ctrl_c(&child);
    let started = Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the fit did not stop promptly"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("interrupted"),
        "the summary says it was interrupted:\n{stdout}"
    );
    let csv = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with('#') && l.contains("interrupted")),
        "draws.csv is marked"
    );
    let fit = std::fs::read_to_string(out.join("fit.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&fit).unwrap();
    assert_eq!(parsed["interrupted"], serde_json::Value::Bool(true));
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["draws.csv", "fit.json", "posterior.svg", "trace.svg"].contains(&n.as_str()))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left: {leftovers:?}");
}

/// Ctrl-C during `mvi compare` stops the running fit, names it as interrupted (unranked)
/// and the methods it left as not run, instead of ranking a half-finished fit best.
#[test]
fn ctrl_c_during_compare_names_the_interrupted_fit_and_the_methods_left() {
    let (_, model, data) = fresh_big_model("interrupt_compare_test");
    let child = Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args([
            "compare",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--methods",
            "vi_full,vi_diag",
            "--set",
            "samples=4000",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    ctrl_c(&child);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("interrupted: vi_full"), "{stdout}");
    assert!(stdout.contains("not run: vi_diag"), "{stdout}");
    let row = stdout.lines().find(|l| l.starts_with("vi_full"));
    assert!(
        row.is_some_and(|l| !l.contains('*')),
        "an interrupted fit is not ranked: {stdout}"
    );
}
