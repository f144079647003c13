//! `mvi`: a probabilistic programming language for fast approximate Bayesian inference.
//!
//! The pipeline, one stage per module, data moving only forward:
//! `.mvi` text → [`syntax`] (AST) → [`check`] + [`data`] (typed model with bound data) →
//! [`graph`] (log-joint graph, batched evaluation) with [`autodiff`] (gradients, Hessians) and
//! [`dist`] (densities) → [`infer`] (methods) → [`posterior`] → [`report`].
//!
//! # Layers
//!
//! The modules stand in layers, listed here from the bottom up. A module imports only
//! modules of its own layer or of a layer below it (code under `#[cfg(test)]` may import
//! anything); `tests/it/layers.rs` reads this list and fails on every `crate::` path in `src/`
//! that goes against it, naming the file, the line and the edge. Layers follow the types a
//! module uses, so a result type sits below the stage that produces it (`posterior` below
//! `infer`), and modules that are one stage and use each other share a layer.
//!
//! 1. [`fsutil`]: files written atomically; it imports nothing from the crate.
//! 2. [`syntax`], [`stan`], [`diagnostic`]: `.mvi` text to an AST with spans, Stan programs
//!    translated to `.mvi` text with a map back to the `.stan` file, and the one user-facing
//!    error type (a parse error is a `Diagnostic`, which points into the source).
//! 3. [`constrained`], [`options`]: vocabularies the later stages share: the shape of a
//!    value, Stan's constrained types and bounds in plain numbers, and the `infer` options.
//! 4. [`check`], [`data`]: the typed model and its bound data (the checker binds the data
//!    that size the model; data binding suggests names the checker's way).
//! 5. [`density`]: the contract between the model and the methods (`LogDensity`).
//! 6. [`graph`], [`autodiff`], [`dist`]: the log-joint graph, its derivatives and the
//!    distributions as graph nodes: one engine, whose parts call each other.
//! 7. [`posterior`]: the one result type of every method.
//! 8. [`infer`]: the methods; they print nothing, but hand notes, timings and trace lines
//!    to their caller.
//! 9. [`report`]: everything a fit produced, rendered as strings.
//! 10. [`run`], [`reference`](mod@reference), [`progress`], [`term`]: a fit as a library
//!     function and its results files, reference draws to compare against, the progress
//!     line, and what the applications write to the terminal.
//! 11. [`repl`], [`paper`]: the REPL and `mvi bench paper`.
//! 12. [`cli`]: the `mvi` command line; only `main` (and the Python package, for its option
//!     parsing) uses it.
#![warn(missing_docs)]
#![warn(clippy::float_cmp)]
// `Diagnostic` (the one user-facing error type) is returned by value by design.
#![allow(clippy::result_large_err)]

pub mod autodiff;
pub mod check;
pub mod cli;
pub mod constrained;
pub mod data;
pub mod density;
pub mod diagnostic;
pub mod dist;
pub mod fsutil;
pub mod graph;
pub mod infer;
pub mod options;
pub mod paper;
pub mod posterior;
pub mod progress;
pub mod reference;
pub mod repl;
pub mod report;
pub mod run;
pub mod stan;
pub mod syntax;
pub mod term;
