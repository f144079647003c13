//! What the applications (`cli`, `repl`, `bench paper`) write to the terminal: every line
//! of stdout and stderr goes through [`out`] and [`err_out`]; a failed command is a
//! [`Failure`]; under `MVI_TIMING` the timing table is printed by [`print_timings`].
//!
//! The engine and the methods below never print: they hand warnings, notes and timings to
//! their caller as data (`FitReport::notes`, `infer::timing::take`, `Observer::trace_line`), and
//! the application decides what to show.

use crate::diagnostic::Diagnostic;
use crate::infer::timing;

/// A failed command: diagnostics to print (exit 2), or a plain exit code.
#[derive(Debug)]
pub enum Failure {
    /// Problems in the user's input.
    User(Vec<Diagnostic>),
    /// Exit with this code after output was printed.
    Code(i32),
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Self {
        Failure::User(vec![d])
    }
}

impl From<Vec<Diagnostic>> for Failure {
    fn from(d: Vec<Diagnostic>) -> Self {
        Failure::User(d)
    }
}

/// Write `text` to stdout and flush it. When the reader has gone (`mvi … | head`: EPIPE)
/// the program ends quietly with exit code 0, as a pipeline expects; any other write error
/// is one line on stderr and exit code 1. Every command's stdout goes through here, never
/// through `print!`, which panics on a closed pipe.
pub fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        err_out(&format!("mvi: cannot write to standard output: {e}\n"));
        std::process::exit(1);
    }
}

/// Write `text` to stderr, ignoring failure (there is nowhere left to report it).
pub fn err_out(text: &str) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush());
}

/// When `MVI_TIMING` is set: print the timing records gathered so far on stderr and clear
/// them.
pub fn print_timings() {
    if timing::enabled() {
        err_out(&timing::render(&timing::take()));
    }
}
