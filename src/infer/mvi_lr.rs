//! `mvi_lr`: q(w) = N(μ, L Lᵀ) with L = C + U Vᵀ, a rank-k update of the Laplace Cholesky
//! factor C (U, V ∈ R^{D×k}).
//!
//! Objective: (1/S) Σ_s log p̃(μ + L z_s) + log|det L| + (D/2) log 2πe over μ, U, V (and θ).
//! U is optimised in whitened coordinates Ũ = C⁻¹U (and μ as ν = C⁻¹(μ − w*), see
//! [`MeanPreconditioned`](crate::infer::objective::MeanPreconditioned)), so L = C (I + Ũ Vᵀ):
//! the same family, with the posterior's scales taken out of the optimiser's coordinates.
//! From μ = w*, Ũ, V with N(0, 0.01) entries. log|det L| = Σ log C_dd + log|det K| with
//! K = I_k + Vᵀ Ũ (matrix determinant lemma), and the gradients need no D×D product
//! besides Cᵀ(·): ∂/∂Ũ = Cᵀ G (Zᵀ V)/S + V K⁻ᵀ, ∂/∂V = Z (Gᵀ C Ũ)/S + Ũ K⁻¹ (C Z
//! computed once). Cost: one batched gradient at S points per evaluation plus O(D²k + DSk).
//!
//! # Reference
//! Gianniotis, "Mixed Variational Inference" (2019), §III-C.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::infer::minibatch;
use crate::infer::objective::{points, Family};
use crate::infer::settings::{Reader, VI_KEYS};
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, InferOptions, Method, Observer};
use crate::posterior::{standard_normal, Gaussian, Posterior};

/// Options of `mvi_lr`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `samples`, `max_iters`, `tol`, `optimizer`, `learn_hyper`.
    pub vi: ViSettings,
    /// `rank`: k ≥ 1 (default 1).
    pub rank: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            vi: ViSettings::default(),
            rank: 1,
        }
    }
}

/// Read `mvi_lr`'s keys.
///
/// # Errors
/// A diagnostic at an unknown key or a bad value.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let keys: Vec<&str> = VI_KEYS.iter().copied().chain(["rank"]).collect();
    let r = Reader::new(options, "mvi_lr", &keys)?;
    Ok(Box::new(MviLr {
        settings: Settings {
            vi: ViSettings::read(&r)?,
            rank: r.int("rank", 1, 1)?,
        },
    }))
}

/// MVI with a low-rank update of the Laplace Cholesky factor.
#[derive(Debug, Clone, Default)]
pub struct MviLr {
    /// Its options.
    pub settings: Settings,
}

/// Standard deviation of the initial entries of U and V (variance 0.01).
const INIT_SD: f64 = 0.1;

impl Method for MviLr {
    fn name(&self) -> &'static str {
        "mvi_lr"
    }

    fn fit(
        &self,
        model: &dyn LogDensity,
        rng: &mut dyn RngCore,
        obs: &mut dyn Observer,
    ) -> Result<Posterior, Error> {
        let s = &self.settings.vi;
        let start = vi::start(model, s, rng, obs)?;
        let d = model.dim();
        let k = self.settings.rank;
        let uv = standard_normal(2 * d * k, 1, rng) * INIT_SD;
        let family = |st: &vi::Start| LowRank::new(st.laplace.chol.clone(), &st.z, k);
        let phi0 = DVector::from_iterator(d + 2 * d * k, start.laplace.mode.iter().chain(uv.iter()).copied());
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

/// w = μ + C (I + Ũ Vᵀ) z; φ = [μ; vec Ũ; vec V] (column-major).
pub struct LowRank {
    c: DMatrix<f64>,
    z: DMatrix<f64>,
    cz: DMatrix<f64>,
    log_det_c: f64,
    k: usize,
}

impl LowRank {
    /// The family for the fixed lower-triangular C, draws Z and rank k.
    pub fn new(c: DMatrix<f64>, z: &DMatrix<f64>, k: usize) -> Self {
        let log_det_c = c.diagonal().iter().map(|x| x.abs().ln()).sum();
        LowRank {
            cz: &c * z,
            z: z.clone(),
            c,
            log_det_c,
            k,
        }
    }

    fn split(&self, phi: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>, DMatrix<f64>) {
        let d = self.c.nrows();
        let n = d * self.k;
        let mu = phi.rows(0, d).into_owned();
        let u = DMatrix::from_column_slice(d, self.k, phi.rows(d, n).as_slice());
        let v = DMatrix::from_column_slice(d, self.k, phi.rows(d + n, n).as_slice());
        (mu, u, v)
    }

    /// K = I + Vᵀ Ũ.
    fn k_matrix(&self, u: &DMatrix<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
        DMatrix::identity(self.k, self.k) + v.tr_mul(u)
    }
}

impl Family for LowRank {
    fn n_params(&self) -> usize {
        self.c.nrows() * (1 + 2 * self.k)
    }

    fn forward(&self, phi: &DVector<f64>) -> (DMatrix<f64>, f64) {
        let (mu, u, v) = self.split(phi);
        let a = &self.cz + (&self.c * &u) * v.tr_mul(&self.z);
        let log_det = self.log_det_c + crate::posterior::log_abs_det(&self.k_matrix(&u, &v));
        (points(&mu, &a), log_det)
    }

    fn backward(&self, phi: &DVector<f64>, g: &DMatrix<f64>) -> DVector<f64> {
        let (_, u, v) = self.split(phi);
        let s = g.ncols() as f64;
        let k_inv = self
            .k_matrix(&u, &v)
            .try_inverse()
            .unwrap_or_else(|| DMatrix::from_element(self.k, self.k, f64::NAN));
        let g_zv = g * self.z.tr_mul(&v) / s;
        let du = self.c.tr_mul(&g_zv) + &v * k_inv.transpose();
        let dv = &self.z * g.tr_mul(&(&self.c * &u)) / s + &u * k_inv;
        let mean = g.column_mean();
        DVector::from_iterator(
            self.n_params(),
            mean.iter().chain(du.iter()).chain(dv.iter()).copied(),
        )
    }

    fn gaussian(&self, phi: &DVector<f64>) -> Gaussian {
        let (mu, u, v) = self.split(phi);
        let d = self.c.nrows();
        Gaussian {
            mean: mu,
            root: &self.c * (DMatrix::identity(d, d) + u * v.transpose()),
        }
    }
}
