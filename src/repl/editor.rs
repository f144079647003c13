//! The terminal loop of `mvi repl`: rustyline with a history file, multi-line blocks and tab
//! completion, over a [`Session`].
//!
//! Input: keystrokes. Output: each input's text from [`Session::eval_line`] on stdout. An
//! input with unbalanced `{`, `(` or `[` continues on the next line; Tab completes commands,
//! method names after `:method`/`:compare`, file names after `:load`/`:data`/`:plot`, and the
//! model's names elsewhere. Ctrl-C at the prompt clears the line, Ctrl-C during a fit stops
//! it at the next iteration (one process-wide handler sets the session's interrupt flag),
//! Ctrl-D quits.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use super::{ReplArgs, Session, COMMANDS};
use crate::diagnostic::Diagnostic;
use crate::infer::registry::METHODS;
use crate::term::{out, Failure};

/// The prompt.
pub const PROMPT: &str = "mvi> ";

/// The interrupt flag shared by every session of this process, with its Ctrl-C handler
/// installed on first use (a process can hold only one handler).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        // If another handler is already installed, Ctrl-C keeps that meaning; the REPL
        // still works, only a running fit cannot be stopped.
        let _ = ctrlc::set_handler(move || f.store(true, std::sync::atomic::Ordering::SeqCst));
        flag
    })
    .clone()
}

/// The history file: `$MVI_HISTORY`, else `~/.mvi_history`; `None` when neither is known.
pub fn history_path() -> Option<PathBuf> {
    match std::env::var_os("MVI_HISTORY") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".mvi_history")),
    }
}

/// Run the interactive loop until `:quit` or Ctrl-D.
///
/// # Errors
/// The terminal cannot be set up ([`Failure::User`] with a diagnostic).
pub fn run_repl(args: &ReplArgs) -> Result<(), Failure> {
    // The editor first: creating it replaces the SIGINT handler (rustyline's own), and the
    // Ctrl-C handler installed after it must be the one that runs during a fit.
    let mut rl = editor()?;
    let mut session = Session::new(interrupt_flag(), super::use_color());
    if !args.data.is_empty() {
        out(&session.eval_line(&format!(":data {}", args.data.join(" "))));
    }
    if let Some(model) = &args.model {
        out(&session.eval_line(&format!(":load {}", model.display())));
    }
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    out(&format!(
        "mvi {} — `:help` for commands, Ctrl-D to quit\n",
        env!("CARGO_PKG_VERSION")
    ));
    loop {
        if let Some(h) = rl.helper_mut() {
            h.names = session.names();
        }
        match rl.readline(PROMPT) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = rl.add_history_entry(line.as_str());
                }
                out(&session.eval_line(&line));
                if session.wants_quit() {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(terminal_error(&e).into()),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}

fn editor() -> Result<Editor<ReplHelper, DefaultHistory>, Failure> {
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .build();
    let mut rl = Editor::with_config(config).map_err(|e| Failure::from(terminal_error(&e)))?;
    rl.set_helper(Some(ReplHelper::default()));
    Ok(rl)
}

fn terminal_error(e: &ReadlineError) -> Diagnostic {
    Diagnostic::plain("mvi::repl::terminal", format!("terminal error: {e}"))
}

/// Completion and multi-line validation for the prompt.
#[derive(Default)]
pub struct ReplHelper {
    /// The model's names, refreshed before each prompt.
    pub names: Vec<String>,
    files: FilenameCompleter,
}

impl Helper for ReplHelper {}
impl Highlighter for ReplHelper {}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if bracket_depth(ctx.input()) > 0 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let command = before.split_whitespace().next().unwrap_or("");
        let in_first_word = !before.trim_start().contains(char::is_whitespace);
        if command.starts_with(':') && !in_first_word {
            if matches!(command, ":load" | ":l" | ":data" | ":d" | ":plot") {
                return self.files.complete(line, pos, ctx);
            }
            if matches!(command, ":method" | ":m" | ":compare") {
                let methods = METHODS.iter().map(|m| m.name.to_string());
                return Ok(candidates(before, methods.collect()));
            }
        }
        let words = if in_first_word && before.trim_start().starts_with(':') {
            COMMANDS.iter().map(|(c, _)| c.to_string()).collect()
        } else {
            self.names.clone()
        };
        Ok(candidates(before, words))
    }
}

/// The start of the word before the cursor and the words it is a prefix of.
pub fn candidates(before: &str, words: Vec<String>) -> (usize, Vec<Pair>) {
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == ':'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let prefix = &before[start..];
    let pairs = words
        .into_iter()
        .filter(|w| w.starts_with(prefix))
        .map(|w| Pair {
            display: w.clone(),
            replacement: w,
        })
        .collect();
    (start, pairs)
}

/// Open `{`, `(` and `[` minus closed ones, ignoring `//` comments and string literals.
pub fn bracket_depth(input: &str) -> i64 {
    let mut depth = 0i64;
    for line in input.lines() {
        let mut in_string = false;
        let mut prev = '\0';
        for c in line.chars() {
            if in_string {
                in_string = c != '"';
            } else if c == '/' && prev == '/' {
                break;
            } else {
                match c {
                    '"' => in_string = true,
                    '{' | '(' | '[' => depth += 1,
                    '}' | ')' | ']' => depth -= 1,
                    _ => {}
                }
            }
            prev = c;
        }
    }
    depth
}
