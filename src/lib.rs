//! `mvi`: a probabilistic programming language for fast approximate Bayesian inference.
//!
//! The pipeline, one stage per module, data moving only forward:
//! `.mvi` text → [`syntax`] (AST) → [`check`] + [`data`] (typed model with bound data) →
//! [`graph`] (log-joint graph, batched evaluation) with [`autodiff`] (gradients, Hessians) and
//! [`dist`] (densities) → [`infer`] (methods) → [`posterior`] → [`report`].
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
pub mod syntax;
pub mod term;
