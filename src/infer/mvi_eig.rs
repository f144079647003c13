//! `mvi_eig`: q(w) = N(μ, Q diag(r²) Qᵀ), the Laplace eigenvectors Q kept, the spectrum r
//! and the mean free.
//!
//! Objective: (1/S) Σ_s log p̃(μ + Q diag(r) z_s) + Σ_d log r_d + (D/2) log 2πe, over μ,
//! ρ = log r (and θ), from r = √eig(Σ_LA). Cost: one batched gradient at S points per
//! evaluation; ∂/∂r = ((Qᵀ G) ⊙ Z) 1 / S + 1/r. [`Scaled`] with Q = I is `vi_diag`'s family.
//!
//! # Reference
//! Gianniotis, "Mixed Variational Inference" (2019), §III-B.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::minibatch;
use crate::infer::objective::{points, Family};
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Gaussian, Posterior};

/// Options of `mvi_eig`: `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
pub type Settings = ViSettings;

/// Read `mvi_eig`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(MviEig {
        settings: ViSettings::from_options(options, "mvi_eig")?,
    }))
}

/// MVI with the Laplace eigenvectors fixed and the eigenvalues and mean free.
#[derive(Debug, Clone, Default)]
pub struct MviEig {
    /// Its options.
    pub settings: Settings,
}

impl Method for MviEig {
    fn name(&self) -> &'static str {
        "mvi_eig"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let start = vi::start(model, s, rng, obs)?;
        let eig = start.laplace.cov().symmetric_eigen();
        let log_r = eig.eigenvalues.map(|l| 0.5 * l.max(1e-300).ln());
        let family = |st: &vi::Start| Scaled {
            q: Some(eig.eigenvectors.clone()),
            z: st.z.clone(),
        };
        let phi0 = stack(&start.laplace.mode, &log_r);
        if let Some(b) = minibatch::rows_per_step(model, s.batch) {
            return Ok(minibatch::fit(
                self.name(),
                model,
                start,
                &phi0,
                family,
                b,
                s,
                rng,
                obs,
            ));
        }
        let run = vi::optimise_staged(model, family, &phi0, &start, s, obs);
        Ok(vi::finish_growing(self.name(), run, start, s, rng, obs, family))
    }
}

/// [a; b].
pub fn stack(a: &DVector<f64>, b: &DVector<f64>) -> DVector<f64> {
    DVector::from_iterator(a.len() + b.len(), a.iter().chain(b.iter()).copied())
}

/// w = μ + Q diag(r) z, φ = [μ; log r]; Q = I when `q` is `None` (vi_diag).
pub struct Scaled {
    /// The fixed orthogonal matrix, or `None` for the identity.
    pub q: Option<DMatrix<f64>>,
    /// The fixed draws.
    pub z: DMatrix<f64>,
}

impl Scaled {
    fn split(phi: &DVector<f64>) -> (DVector<f64>, DVector<f64>) {
        let d = phi.len() / 2;
        (phi.rows(0, d).into_owned(), phi.rows(d, d).map(f64::exp))
    }
}

impl Family for Scaled {
    fn n_params(&self) -> usize {
        2 * self.z.nrows()
    }

    fn forward(&self, phi: &DVector<f64>) -> (DMatrix<f64>, f64) {
        let (mu, r) = Self::split(phi);
        let mut rz = self.z.clone();
        for (d, mut row) in rz.row_iter_mut().enumerate() {
            row *= r[d];
        }
        let a = match &self.q {
            Some(q) => q * rz,
            None => rz,
        };
        let d = mu.len();
        (points(&mu, &a), phi.rows(d, d).sum())
    }

    fn backward(&self, phi: &DVector<f64>, g: &DMatrix<f64>) -> DVector<f64> {
        let (_, r) = Self::split(phi);
        let rotated;
        let a = match &self.q {
            Some(q) => {
                rotated = q.tr_mul(g);
                &rotated
            }
            None => g,
        };
        let s = g.ncols() as f64;
        let d_log_r = DVector::from_iterator(
            r.len(),
            (0..r.len()).map(|d| r[d] * a.row(d).dot(&self.z.row(d)) / s + 1.0),
        );
        stack(&g.column_mean(), &d_log_r)
    }

    fn gaussian(&self, phi: &DVector<f64>) -> Gaussian {
        let (mu, r) = Self::split(phi);
        let diag = DMatrix::from_diagonal(&r);
        Gaussian {
            mean: mu,
            root: match &self.q {
                Some(q) => q * diag,
                None => diag,
            },
        }
    }
}
