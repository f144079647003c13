//! The starting Gaussian of `pmfvb` and `split_mf`: the Laplace fit when it is proper,
//! otherwise a mean-field Gaussian fitted on the `vi_diag` objective from the model's
//! initial point.
//!
//! Input: a [`LogDensity`]. Output: a [`Start`] whose Gaussian has a finite mean and a
//! positive definite covariance, with θ and notes saying which start was used.
//!
//! Why a fallback: some models have no proper mode. In the stochastic volatility model the
//! log joint grows without bound as σ → 0 with h on its AR(1) path, so the mode search runs
//! off towards σ = 0 and the Hessian there is useless (or not negative definite). The
//! ELBO of a Gaussian with positive variances stays bounded (the variance of h keeps the
//! AR(1) residuals away from 0), so `vi_diag`'s objective (no Hessian) gives a usable start.
//! It is fitted from the initial point (w = 0, θ = its initial value) with σ² = 10⁻²,
//! on [`FALLBACK_SAMPLES`] fixed draws and at most [`FALLBACK_ITERS`] L-BFGS steps: it only
//! seeds the particles (pmfvb) or the one-bin stage (split_mf, whose K = 1 stage is the
//! vi_diag objective again on its own samples).

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

use crate::density::LogDensity;
use crate::infer::laplace::{fit_laplace, LaplaceFit};
use crate::infer::mvi_eig::{stack, Scaled};
use crate::infer::settings::Common;
use crate::infer::vi::{self, ViSettings};
use crate::infer::{Error, Observer};
use crate::posterior::{standard_normal, Gaussian};

/// Fixed draws of the fallback `vi_diag` fit.
pub const FALLBACK_SAMPLES: usize = 50;
/// Iteration limit of the fallback `vi_diag` fit.
pub const FALLBACK_ITERS: usize = 500;
/// Initial variance of every coordinate in the fallback fit.
const FALLBACK_VARIANCE: f64 = 1e-2;

/// Where a method starts.
#[derive(Debug, Clone)]
pub struct Start {
    /// The starting Gaussian (Laplace, or the fallback mean-field fit).
    pub gaussian: Gaussian,
    /// θ: the Laplace θ, or the fallback fit's θ.
    pub theta: DVector<f64>,
    /// Remarks for the report (which start was used and why).
    pub notes: Vec<String>,
    /// True when the Laplace fit was used.
    pub from_laplace: bool,
}

/// The Laplace fit when it succeeds and its mode search converged; otherwise the
/// fallback `vi_diag` fit (see the module documentation).
///
/// # Errors
/// [`Error::NonFiniteStart`] when log p̃ is not finite at the initial point, or the
/// fallback fit ends at a non-finite ELBO.
pub fn robust_start(
    model: &dyn LogDensity,
    learn_hyper: bool,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<Start, Error> {
    let common = Common {
        learn_hyper,
        ..Common::default()
    };
    let reason = match fit_laplace(model, &common, rng, obs) {
        Ok(fit) if fit.converged && is_proper(&fit) => {
            return Ok(Start {
                gaussian: Gaussian {
                    mean: fit.mode,
                    root: fit.chol,
                },
                theta: fit.theta,
                notes: fit.notes,
                from_laplace: true,
            })
        }
        Ok(fit) if !fit.converged => "its mode search did not converge".to_string(),
        Ok(_) => "its covariance is degenerate".to_string(),
        Err(e @ Error::NonFiniteStart { .. }) => return Err(e),
        Err(e) => e.to_string(),
    };
    obs.phase("start: vi_diag fallback");
    let mut start = fallback(model, &common, rng, obs)?;
    start.notes.insert(
        0,
        format!("started from a vi_diag fit, not the Laplace fit ({reason})"),
    );
    Ok(start)
}

/// A Laplace covariance is usable when every marginal variance is finite and positive.
fn is_proper(fit: &LaplaceFit) -> bool {
    let var = fit.cov().diagonal();
    fit.mode.iter().all(|v| v.is_finite()) && var.iter().all(|v| v.is_finite() && *v > 1e-300)
}

/// The fallback: `vi_diag`'s fixed-sample ELBO maximised from the initial point.
///
/// # Errors
/// [`Error::NonFiniteStart`] when the ELBO is not finite at the end.
pub fn fallback(
    model: &dyn LogDensity,
    common: &Common,
    rng: &mut dyn RngCore,
    obs: &mut dyn Observer,
) -> Result<Start, Error> {
    let d = model.dim();
    let mean = model.initial_point();
    let settings = ViSettings {
        common: Common {
            max_iters: FALLBACK_ITERS,
            tol: 1e-8,
            ..*common
        },
        samples: FALLBACK_SAMPLES,
        laplace_hyper_search: true,
        grow_samples: false,
        settle: true,
        batch: crate::infer::settings::Batch::Full,
    };
    let z = standard_normal(d, FALLBACK_SAMPLES, rng);
    let chol = DMatrix::from_diagonal_element(d, d, FALLBACK_VARIANCE.sqrt());
    let vstart = vi::Start::from_gaussian(mean.clone(), chol, model.theta_init(), Vec::new(), z);
    let log_sd = DVector::from_element(d, 0.5 * FALLBACK_VARIANCE.ln());
    let family = Scaled {
        q: None,
        z: vstart.z.clone(),
    };
    let run = vi::optimise(model, family, &stack(&mean, &log_sd), &vstart, &settings, obs);
    if !run.outcome.value.is_finite() {
        return Err(Error::NonFiniteStart {
            value: run.outcome.value,
        });
    }
    let (phi, theta) = run.elbo.unpack(&run.outcome.x);
    let mean = phi.rows(0, d).into_owned();
    let sd = phi.rows(d, d).map(f64::exp);
    Ok(Start {
        gaussian: Gaussian {
            mean,
            root: DMatrix::from_diagonal(&sd),
        },
        theta,
        notes: vec![format!(
            "vi_diag start: ELBO {:.3} on {FALLBACK_SAMPLES} fixed draws after {} iterations",
            run.outcome.value, run.outcome.iterations
        )],
        from_laplace: false,
    })
}
