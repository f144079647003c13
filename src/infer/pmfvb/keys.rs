//! Reading one method's `infer` keys: typed look-ups with a [`Diagnostic`] that points at a
//! bad value or an unknown key. Used by `split_mf` and `pmfvb`; the shared registry may
//! absorb it.

use crate::diagnostic::Diagnostic;
use crate::infer::{InferOption, InferOptions, OptionValue};

/// Keys every method accepts, whatever its own keys are.
const COMMON: &[&str] = &["method", "seed"];

/// Typed access to the options of one method, which knows the keys it accepts.
pub(crate) struct Keys<'a> {
    opts: &'a InferOptions,
    method: &'static str,
}

impl<'a> Keys<'a> {
    /// Check that every key is known to `method` (its `known` keys or a common one).
    pub(crate) fn new(
        opts: &'a InferOptions,
        method: &'static str,
        known: &[&str],
    ) -> Result<Self, Diagnostic> {
        for e in &opts.entries {
            if !known.contains(&e.key.as_str()) && !COMMON.contains(&e.key.as_str()) {
                let msg = format!("`{method}` has no option `{}`", e.key);
                let help = format!("`{method}` accepts: {}", known.join(", "));
                return Err(error_at(opts, e, msg, "unknown key").with_help(help));
            }
        }
        Ok(Keys { opts, method })
    }

    fn last(&self, key: &str) -> Option<&'a InferOption> {
        self.opts.entries.iter().rev().find(|e| e.key == key)
    }

    fn bad(&self, e: &InferOption, want: &str) -> Diagnostic {
        let msg = format!("`{}` option `{}` must be {want}", self.method, e.key);
        error_at(self.opts, e, msg, "this value")
    }

    /// A positive integer, or `default` when the key is absent.
    pub(crate) fn count(&self, key: &str, default: usize) -> Result<usize, Diagnostic> {
        match self.last(key) {
            None => Ok(default),
            Some(e) => match e.value {
                OptionValue::Int(n) if n > 0 => Ok(n as usize),
                _ => Err(self.bad(e, "a positive integer")),
            },
        }
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

    /// A positive real (integers accepted), or `default` when the key is absent.
    pub(crate) fn positive(&self, key: &str, default: f64) -> Result<f64, Diagnostic> {
        let v = match self.last(key) {
            None => return Ok(default),
            Some(e) => (e, real(&e.value)),
        };
        match v {
            (_, Some(x)) if x > 0.0 && x.is_finite() => Ok(x),
            (e, _) => Err(self.bad(e, "a positive number")),
        }
    }

    /// A flag (`true`/`false`), or `default` when the key is absent.
    pub(crate) fn flag(&self, key: &str, default: bool) -> Result<bool, Diagnostic> {
        match self.last(key) {
            None => Ok(default),
            Some(e) => match &e.value {
                OptionValue::Ident(s) if s == "true" => Ok(true),
                OptionValue::Ident(s) if s == "false" => Ok(false),
                _ => Err(self.bad(e, "`true` or `false`")),
            },
        }
    }

    /// One of the bare words in `choices`, or `default` when the key is absent.
    pub(crate) fn word(
        &self,
        key: &str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, Diagnostic> {
        match self.last(key) {
            None => Ok(default),
            Some(e) => match &e.value {
                OptionValue::Ident(s) => match choices.iter().find(|c| *c == s) {
                    Some(c) => Ok(c),
                    None => Err(self.bad(e, &format!("one of {}", choices.join(", ")))),
                },
                _ => Err(self.bad(e, &format!("one of {}", choices.join(", ")))),
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

fn real(v: &OptionValue) -> Option<f64> {
    match v {
        OptionValue::Int(n) => Some(*n as f64),
        OptionValue::Real(x) => Some(*x),
        _ => None,
    }
}

fn error_at(opts: &InferOptions, e: &InferOption, msg: String, label: &str) -> Diagnostic {
    let d = Diagnostic::error("mvi::infer::bad_option", msg, opts.source.clone());
    match e.span {
        Some(span) => d.with_label(span, label),
        None => d,
    }
}
