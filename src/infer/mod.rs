//! Inference methods: turn a [`LogDensity`] into a [`Posterior`].
//!
//! One trait, [`Method`], one file per method, and a registry by name (`registry.rs`).
//! Shared machinery is written once: the fixed-sample Monte Carlo objective
//! (`objective.rs`), the optimisers L-BFGS and SCG (`optim.rs`), Laplace initialisation and
//! Gaussian algebra. Every method gets its randomness passed in and is deterministic for a
//! given generator state.

// `build` functions return `Diagnostic` by value, as the `BuildFn` contract prescribes.
#![allow(clippy::result_large_err)]

pub mod laplace;
pub mod minibatch;
pub mod mvi_eig;
pub mod mvi_lr;
pub mod mvi_mu;
pub mod nuts;
pub mod objective;
pub mod optim;
pub mod pathfinder;
pub mod pmfvb;
pub mod registry;
pub mod settings;
pub mod split_mf;
pub mod timing;
pub mod vi;
pub mod vi_diag;
pub mod vi_full;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::posterior::{IterRecord, Posterior};
use rand::RngCore;

pub use crate::options::{InferOption, InferOptions, OptionValue};

/// Per-iteration progress from a running method: feeds the progress line, the trace plot and
/// tests. Returning `false` from [`Observer::iteration`] asks the method to stop early
/// (Ctrl-C); it then returns what it has, with `converged = false` and a note.
pub trait Observer {
    /// Called once per optimiser iteration (or pmfvb sweep).
    fn iteration(&mut self, record: &IterRecord) -> bool;
    /// Called when a method moves to a new phase ("laplace", "split 2 of 4", ...).
    fn phase(&mut self, _name: &str) {}
    /// Called with one line of developer output, ending in a newline: under
    /// `MVI_TIMING=trace`, each iteration of a Laplace or Gaussian-family optimisation. The
    /// method never prints it; the caller decides where it goes (the CLI: stderr).
    fn trace_line(&mut self, _line: &str) {}
}

/// An observer that ignores everything and never stops a run.
pub struct Silent;

impl Observer for Silent {
    fn iteration(&mut self, _record: &IterRecord) -> bool {
        true
    }
}

/// Numerical failures inside a method. The CLI turns these into a [`Diagnostic`] with a
/// suggestion.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Hessian at the mode is not negative definite (to working precision: its
    /// eigenvalues may all be negative but spread over more than 12 orders of magnitude).
    #[error(
        "Hessian at the mode is not negative definite to working precision (eigenvalues from \
         {min_eig:.3e} to {max_eig:.3e})"
    )]
    NotNegativeDefinite {
        /// Largest eigenvalue of H.
        max_eig: f64,
        /// Smallest (most negative) eigenvalue of H.
        min_eig: f64,
    },
    /// log p̃ has no maximum: the mode search ran off towards the edge of the parameter space
    /// while log p̃ kept rising (a funnel: a scale → 0 with the values it scales collapsed).
    #[error("{0}")]
    NoMode(Box<laplace::NoMode>),
    /// The objective or its gradient became non-finite at the starting point.
    #[error("the log density or its gradient is not finite at the starting point ({value})")]
    NonFiniteStart {
        /// The value found.
        value: f64,
    },
    /// A method that picks its approximation among candidates found none usable (Pathfinder:
    /// no iterate of any path had a finite ELBO).
    #[error("{0}")]
    NoApproximation(String),
    /// The method cannot handle this model.
    #[error("{0}")]
    Unsupported(String),
    /// The MCMC sampler stopped with an error.
    #[error("the sampler stopped: {0}")]
    Sampler(String),
}

/// An inference method: turns a log density into an approximate posterior.
pub trait Method {
    /// Registry name; the same string `infer { method = … }` and `--method` accept.
    fn name(&self) -> &'static str;

    /// Reject models this method cannot handle, before any work starts.
    ///
    /// # Errors
    /// [`Error::Unsupported`] with the reason.
    fn supports(&self, _model: &dyn LogDensity) -> Result<(), Error> {
        Ok(())
    }

    /// Fit the approximation. Deterministic for a given `rng` state.
    ///
    /// # Errors
    /// A numerical failure the user can act on (see [`Error`]).
    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error>;
}

/// Build a method by name from the options; validates that method's keys.
pub type BuildFn = fn(&InferOptions) -> Result<Box<dyn Method>, Diagnostic>;
