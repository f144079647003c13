//! `mvi repl` driven through a pseudo-terminal (expectrl): the real binary with rustyline in
//! raw mode, as a user types. Linear regression keeps each fit to a fraction of a second.
#![cfg(unix)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use expectrl::session::OsSession;
use expectrl::{ControlCode, Eof, Expect, Regex, Session};

/// Generous: a debug build on a loaded 2-core machine.
const TIMEOUT: Duration = Duration::from_secs(60);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mvi_repl_test_{name}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mvi repl examples/linear_regression.mvi --data …` in a pty, history in `dir`.
fn spawn_repl(dir: &std::path::Path) -> OsSession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mvi"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("MVI_HISTORY", dir.join("history"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .args([
            "repl",
            "examples/linear_regression.mvi",
            "--data",
            "examples/data/linear_regression.json",
        ]);
    let mut p = Session::spawn(cmd).expect("spawn mvi repl in a pty");
    p.set_expect_timeout(Some(TIMEOUT));
    p.expect("loaded examples/linear_regression.mvi: D = 3").unwrap();
    p.expect("mvi> ").unwrap();
    p
}

#[test]
fn a_session_loads_fits_summarises_evaluates_and_quits() {
    let dir = scratch("session");
    let mut p = spawn_repl(&dir);

    p.send_line(":fit").unwrap();
    p.expect(Regex("laplace: converged after [0-9]+ iterations"))
        .unwrap();
    p.expect("mvi> ").unwrap();

    p.send_line(":summary").unwrap();
    p.expect(Regex(r"w\.1\s+0\.95[0-9]+")).unwrap();
    p.expect(Regex(r"w\.3\s+0\.46[0-9]+")).unwrap();
    p.expect("log evidence").unwrap();
    p.expect("mvi> ").unwrap();

    // w₂'s posterior mean is -1.956 with sd 0.063.
    p.send_line("w[2] * 2").unwrap();
    p.expect(Regex(r"mean -3\.9[0-9]+\s+sd 0\.1[0-9]+\s+90% \["))
        .unwrap();
    p.expect("mvi> ").unwrap();

    p.send_line("foo + 1").unwrap();
    p.expect("unknown name `foo`").unwrap();
    p.expect("mvi> ").unwrap();

    p.send_line(":quit").unwrap();
    p.expect(Eof).unwrap();
    let history = std::fs::read_to_string(dir.join("history")).unwrap();
    assert!(history.contains("w[2] * 2"), "history: {history}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_block_spans_lines_tab_completes_ctrl_c_clears_the_line_and_ctrl_d_quits() {
    let dir = scratch("block");
    let mut p = spawn_repl(&dir);

    p.send_line("fn twice(x: real) -> real {").unwrap();
    p.send_line("  return 2 * x").unwrap();
    p.send_line("}").unwrap();
    p.expect("model extended (D = 3)").unwrap();
    p.expect("mvi> ").unwrap();

    // Ctrl-C at the prompt drops the half-typed line; the REPL keeps running.
    p.send("this line is dropped").unwrap();
    p.send(ControlCode::EndOfText).unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line(":fit").unwrap();
    p.expect("laplace: converged").unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line("twice(w[1])").unwrap();
    p.expect(Regex(r"mean 1\.9[0-9]+")).unwrap();
    p.expect("mvi> ").unwrap();

    // Tab completes a command and a model name (`sig` → `sigma`, 0.5 in the data).
    p.send(":summ\t").unwrap();
    p.send_line("").unwrap();
    p.expect(Regex(r"w\.1\s+0\.95")).unwrap();
    p.expect("mvi> ").unwrap();
    p.send("sig\t").unwrap();
    p.send_line(" * 4").unwrap();
    p.expect(Regex(r"mean 2\.0000\s+sd 0\.0000")).unwrap();
    p.expect("mvi> ").unwrap();

    p.send(ControlCode::EndOfTransmission).unwrap();
    p.expect(Eof).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C while `:fit` runs stops the fit at its next iteration, not the REPL. It needs a
/// fit that runs for a while (the banana example with `vi_diag` takes about a minute in a
/// debug build), so it is not part of the default run:
/// `cargo test --test it -- --ignored repl::ctrl_c_during_a_fit`.
#[test]
#[ignore = "slow: runs a long fit to interrupt it"]
fn ctrl_c_during_a_fit_cancels_the_fit_not_the_repl() {
    let dir = scratch("interrupt");
    let mut p = spawn_repl(&dir);
    p.set_expect_timeout(Some(Duration::from_secs(300)));
    p.send_line(":data examples/data/logistic_rbf_banana.json")
        .unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line(":load examples/logistic_rbf_banana.mvi").unwrap();
    p.expect("D = 31").unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line(":method vi_diag").unwrap();
    p.expect("mvi> ").unwrap();
    // Few test draws: the work after the interrupt (predict) stays short.
    p.send_line(":set test_draws=10").unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line(":fit").unwrap();
    // The progress line shows once the fit has run for a second.
    p.expect("vi_diag from").unwrap();
    p.send(ControlCode::EndOfText).unwrap();
    p.expect("vi_diag: interrupted after").unwrap();
    p.expect("mvi> ").unwrap();
    p.send_line(":summary").unwrap();
    p.expect("interrupted").unwrap();
    p.send_line(":quit").unwrap();
    p.expect(Eof).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
