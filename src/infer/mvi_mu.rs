//! `mvi_mu`: q(w) = N(μ, Σ_LA), the Laplace covariance kept, the mean moved.
//!
//! Objective: the fixed-sample ELBO (1/S) Σ_s log p̃(μ + C z_s) + const, with C the
//! Laplace Cholesky factor (so the entropy is constant), maximised over μ (and θ). Cost: one
//! batched gradient at S points per objective evaluation; ∂/∂μ is the mean of G's columns.
//!
//! # Reference
//! Gianniotis, "Mixed Variational Inference" (2019), §III-A.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::minibatch;
use crate::infer::objective::{points, Family};
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Gaussian, Posterior};

/// Options of `mvi_mu`: `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
pub type Settings = ViSettings;

/// Read `mvi_mu`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(MviMu {
        settings: ViSettings::from_options(options, "mvi_mu")?,
    }))
}

/// MVI with the mean free and the Laplace covariance fixed.
#[derive(Debug, Clone, Default)]
pub struct MviMu {
    /// Its options.
    pub settings: Settings,
}

impl Method for MviMu {
    fn name(&self) -> &'static str {
        "mvi_mu"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let start = vi::start(model, s, rng, obs)?;
        let family = |st: &vi::Start| MeanOnly::new(st.laplace.chol.clone(), &st.z);
        if let Some(b) = minibatch::rows_per_step(model, s.batch) {
            let mode = start.laplace.mode.clone();
            return Ok(minibatch::fit(
                self.name(),
                model,
                start,
                &mode,
                family,
                b,
                s,
                rng,
                obs,
            ));
        }
        let run = vi::optimise_staged(model, family, &start.laplace.mode.clone(), &start, s, obs);
        Ok(vi::finish_growing(self.name(), run, start, s, rng, obs, family))
    }
}

/// w = μ + C z with C fixed; φ = μ.
pub struct MeanOnly {
    c: DMatrix<f64>,
    cz: DMatrix<f64>,
    log_det: f64,
}

impl MeanOnly {
    /// The family for the fixed root C and draws Z (C Z is computed once).
    pub fn new(c: DMatrix<f64>, z: &DMatrix<f64>) -> Self {
        let log_det = crate::posterior::log_abs_det(&c);
        MeanOnly {
            cz: &c * z,
            c,
            log_det,
        }
    }
}

impl Family for MeanOnly {
    fn n_params(&self) -> usize {
        self.c.nrows()
    }

    fn forward(&self, phi: &DVector<f64>) -> (DMatrix<f64>, f64) {
        (points(phi, &self.cz), self.log_det)
    }

    fn backward(&self, _phi: &DVector<f64>, g: &DMatrix<f64>) -> DVector<f64> {
        g.column_mean()
    }

    fn gaussian(&self, phi: &DVector<f64>) -> Gaussian {
        Gaussian {
            mean: phi.clone(),
            root: self.c.clone(),
        }
    }
}
