//! The `infer` value kinds that `settings::Reader` does not read yet: lists of blocks and
//! an integer from a fixed set. Keys are validated by `settings::Reader::new` first; this
//! could move into `settings.rs`.

use crate::diagnostic::Diagnostic;
use crate::infer::{InferOption, InferOptions, OptionValue};

/// Typed access to `blocks`-like and choice options of one method.
pub(crate) struct Keys<'a> {
    opts: &'a InferOptions,
    method: &'static str,
}

impl<'a> Keys<'a> {
    /// Read from `opts` on behalf of `method` (keys already validated).
    pub(crate) fn new(opts: &'a InferOptions, method: &'static str) -> Self {
        Keys { opts, method }
    }

    fn last(&self, key: &str) -> Option<&'a InferOption> {
        self.opts.entries.iter().rev().find(|e| e.key == key)
    }

    fn bad(&self, e: &InferOption, want: &str) -> Diagnostic {
        let msg = format!("`{}` option `{}` must be {want}", self.method, e.key);
        error_at(self.opts, e, msg, "this value")
    }

    /// An integer from `allowed`, or `default` when the key is absent.
    pub(crate) fn int_in(&self, key: &str, allowed: &[i64], default: i64) -> Result<i64, Diagnostic> {
        match self.last(key) {
            None => Ok(default),
            Some(e) => match e.value {
                OptionValue::Int(n) if allowed.contains(&n) => Ok(n),
                _ => {
                    let list: Vec<String> = allowed.iter().map(|n| n.to_string()).collect();
                    Err(self.bad(e, &format!("one of {}", list.join(", "))))
                }
            },
        }
    }

    /// A list of lists of names, or `None` when the key is absent.
    pub(crate) fn blocks(&self, key: &str) -> Result<Option<Vec<Vec<String>>>, Diagnostic> {
        match self.last(key) {
            None => Ok(None),
            Some(e) => match &e.value {
                OptionValue::Blocks(b) if b.iter().all(|x| !x.is_empty()) => Ok(Some(b.clone())),
                _ => Err(self.bad(e, "a list of non-empty lists of parameter names")),
            },
        }
    }
}

fn error_at(opts: &InferOptions, e: &InferOption, msg: String, label: &str) -> Diagnostic {
    let d = Diagnostic::error("mvi::infer::bad_option", msg, opts.source.clone());
    match e.span {
        Some(span) => d.with_label(span, label),
        None => d,
    }
}
