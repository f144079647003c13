//! `vi_diag`: mean-field Gaussian q(w) = N(μ, diag σ²).
//!
//! Objective: (1/S) Σ_s log p̃(μ + σ ⊙ z_s) + Σ_d log σ_d + (D/2) log 2πe over μ, log σ (and
//! θ). Started twice from the Laplace mean, with σ² = diag Σ_LA and with σ² = 10⁻⁴ (the
//! paper's two initialisations); the run with the better ELBO on the fixed samples is kept.
//! Cost: one batched gradient at S points per evaluation; ∂/∂σ = (G ⊙ Z) 1 / S + 1/σ.
//!
//! # Reference
//! Gianniotis, "Mixed Variational Inference" (2019), §V (baselines); Opper & Archambeau,
//! "The variational Gaussian approximation revisited", Neural Computation 21 (2009).

use nalgebra::DVector;
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::mvi_eig::{stack, Scaled};
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::Posterior;

/// Options of `vi_diag`: `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
pub type Settings = ViSettings;

/// Read `vi_diag`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(ViDiag {
        settings: ViSettings::from_options(options, "vi_diag")?,
    }))
}

/// Mean-field Gaussian VI.
#[derive(Debug, Clone, Default)]
pub struct ViDiag {
    /// Its options.
    pub settings: Settings,
}

/// The second initial variance of the paper.
const SMALL_VARIANCE: f64 = 1e-4;

impl Method for ViDiag {
    fn name(&self) -> &'static str {
        "vi_diag"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let start = vi::start_or_fallback(model, s, rng, obs)?;
        let mode = &start.laplace.mode;
        let from_laplace = start.laplace.cov().diagonal().map(|v| 0.5 * v.ln());
        let small = DVector::from_element(mode.len(), 0.5 * SMALL_VARIANCE.ln());
        let mut best = None;
        for (phase, log_sd) in [
            ("vi_diag from diag Σ_LA", from_laplace),
            ("vi_diag from σ² = 1e-4", small),
        ] {
            obs.phase(phase);
            let family = Scaled {
                q: None,
                z: start.z.clone(),
            };
            let run = vi::optimise(model, family, &stack(mode, &log_sd), &start, s, obs);
            if best
                .as_ref()
                .is_none_or(|b: &vi::Run<'_, Scaled>| run.outcome.value > b.outcome.value)
            {
                best = Some(run);
            }
        }
        let run = best.expect("two runs were made");
        let family = |st: &vi::Start| Scaled {
            q: None,
            z: st.z.clone(),
        };
        Ok(vi::finish_growing(self.name(), run, start, s, rng, obs, family))
    }
}
