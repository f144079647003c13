//! `vi_full`: full-covariance Gaussian q(w) = N(μ, L Lᵀ), L lower-triangular and free.
//!
//! Objective: (1/S) Σ_s log p̃(μ + L z_s) + Σ_d log|L_dd| + (D/2) log 2πe over μ, L (and θ),
//! from the Laplace mean and L = C, the Laplace Cholesky factor. Cost: one batched gradient at
//! S points per evaluation plus O(D²S): ∂/∂L = tril(G Zᵀ / S) + diag(1/L_dd).
//!
//! # Reference
//! Titsias & Lázaro-Gredilla, "Doubly stochastic variational Bayes for non-conjugate
//! inference", ICML (2014); Gianniotis, "Mixed Variational Inference" (2019), §V.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::minibatch;
use crate::infer::objective::{points, Family};
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{Gaussian, Posterior};

/// Options of `vi_full`: `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
pub type Settings = ViSettings;

/// Read `vi_full`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    Ok(Box::new(ViFull {
        settings: ViSettings::from_options(options, "vi_full")?,
    }))
}

/// Full-covariance Gaussian VI.
#[derive(Debug, Clone, Default)]
pub struct ViFull {
    /// Its options.
    pub settings: Settings,
}

impl Method for ViFull {
    fn name(&self) -> &'static str {
        "vi_full"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings;
        let start = vi::start_or_fallback(model, s, rng, obs)?;
        let d = model.dim();
        let family = |st: &vi::Start| Triangular {
            z: st.z.clone(),
            base: Some(st.laplace.chol.clone()),
        };
        let phi0 = family(&start).pack(&start.laplace.mode, &DMatrix::identity(d, d));
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
        let run = vi::optimise(model, family(&start), &phi0, &start, s, obs);
        Ok(vi::finish_growing(self.name(), run, start, s, rng, obs, family))
    }
}

/// w = μ + L z, L lower-triangular; φ = [μ; the lower triangle of T, column by column]
/// with L = B T for a fixed lower-triangular B (the Laplace factor C in `vi_full`, so T
/// starts at I and the optimiser works in whitened coordinates; the family is the same,
/// since B T is lower-triangular exactly when T is) or L = T without one.
pub struct Triangular {
    /// The fixed draws.
    pub z: DMatrix<f64>,
    /// B, when L = B T.
    pub base: Option<DMatrix<f64>>,
}

impl Triangular {
    fn dim(&self) -> usize {
        self.z.nrows()
    }

    /// φ from μ and the lower triangle of L.
    pub fn pack(&self, mu: &DVector<f64>, l: &DMatrix<f64>) -> DVector<f64> {
        let d = self.dim();
        let tri = (0..d)
            .flat_map(|j| (j..d).map(move |i| (i, j)))
            .map(|(i, j)| l[(i, j)]);
        DVector::from_iterator(self.n_params(), mu.iter().copied().chain(tri))
    }

    /// L = B T (or T).
    fn root(&self, t: DMatrix<f64>) -> DMatrix<f64> {
        match &self.base {
            Some(b) => b * t,
            None => t,
        }
    }

    fn unpack(&self, phi: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>) {
        let d = self.dim();
        let mut l = DMatrix::zeros(d, d);
        let mut idx = d;
        for j in 0..d {
            for i in j..d {
                l[(i, j)] = phi[idx];
                idx += 1;
            }
        }
        (phi.rows(0, d).into_owned(), l)
    }
}

impl Family for Triangular {
    fn n_params(&self) -> usize {
        let d = self.dim();
        d + d * (d + 1) / 2
    }

    fn forward(&self, phi: &DVector<f64>) -> (DMatrix<f64>, f64) {
        let (mu, t) = self.unpack(phi);
        let log_abs_diag = |m: &DMatrix<f64>| m.diagonal().iter().map(|x| x.abs().ln()).sum::<f64>();
        let log_det = log_abs_diag(&t) + self.base.as_ref().map_or(0.0, log_abs_diag);
        (points(&mu, &(self.root(t) * &self.z)), log_det)
    }

    fn backward(&self, phi: &DVector<f64>, g: &DMatrix<f64>) -> DVector<f64> {
        let (_, t) = self.unpack(phi);
        let dl = g * self.z.transpose() / g.ncols() as f64;
        // L = B T: ∂/∂T = Bᵀ ∂/∂L (the lower triangle is kept by `pack`)
        let mut dt = match &self.base {
            Some(b) => b.tr_mul(&dl),
            None => dl,
        };
        for d in 0..self.dim() {
            dt[(d, d)] += 1.0 / t[(d, d)];
        }
        self.pack(&g.column_mean(), &dt)
    }

    fn gaussian(&self, phi: &DVector<f64>) -> Gaussian {
        let (mean, t) = self.unpack(phi);
        Gaussian {
            mean,
            root: self.root(t),
        }
    }
}
