//! The vocabulary of `infer` options: the values a model's `infer` block and `--set
//! key=value` give, with where each was written.
//!
//! Input: entries the checker reads from the `infer` block and the CLI from its arguments.
//! Output: [`InferOptions`], which the checker validates (`check::infer_keys`) and the
//! methods read (`infer::registry`). It sits below both, so the checker needs nothing from
//! the methods; `infer` re-exports the types.

use crate::syntax::span::Span;
use miette::NamedSource;

/// A value given to an `infer` key, in the model's `infer` block or by `--set key=value`.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// An integer literal.
    Int(i64),
    /// A real literal.
    Real(f64),
    /// A bare word (`mvi_lr`, `lbfgs`, `true`, `false`).
    Ident(String),
    /// A list of lists of names (`blocks = [[w], [sigma, tau]]`).
    Blocks(Vec<Vec<String>>),
}

/// One `key = value` entry with where it was written.
#[derive(Debug, Clone)]
pub struct InferOption {
    /// The key.
    pub key: String,
    /// The value.
    pub value: OptionValue,
    /// Where the value stands in `source` (the model file or the command line), if known.
    pub span: Option<Span>,
}

/// All `infer` options of a run: the model's `infer` block with command-line overrides applied.
#[derive(Debug, Clone)]
pub struct InferOptions {
    /// The entries; a later entry with the same key overrides an earlier one.
    pub entries: Vec<InferOption>,
    /// The text the spans point into.
    pub source: NamedSource<String>,
}
