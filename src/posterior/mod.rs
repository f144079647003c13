//! The one result type of every inference method.
//!
//! A [`Posterior`] holds the fitted approximation on the unconstrained scale (a Gaussian, a
//! mixture of Gaussians, or a particle set), the hyperparameters θ it was fitted with, and the
//! numbers the method produced (objective, evidence, iterations, trace). It can draw samples,
//! give its mean and covariance, and evaluate log q(w) where q has a density. Constraining
//! draws to the user's scale, `predict` and reports are later stages.

use nalgebra::{DMatrix, DVector};
use rand::RngCore;

pub mod loo;
pub mod mcmc;
pub mod psis;
pub mod sbc;
pub mod w1;

pub use crate::autodiff::numeric::{log_sum_exp, standard_normal};

/// A Gaussian N(mean, root rootᵀ); `root` is square but need not be triangular.
#[derive(Debug, Clone)]
pub struct Gaussian {
    /// The mean.
    pub mean: DVector<f64>,
    /// A square root of the covariance: Σ = root rootᵀ.
    pub root: DMatrix<f64>,
}

impl Gaussian {
    /// Dimension D.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// The covariance root rootᵀ.
    pub fn cov(&self) -> DMatrix<f64> {
        &self.root * self.root.transpose()
    }

    /// n draws as the columns of a D×n matrix.
    pub fn draw(&self, n: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        let z = standard_normal(self.dim(), n, rng);
        let mut w = &self.root * z;
        for mut col in w.column_iter_mut() {
            col += &self.mean;
        }
        w
    }

    /// log N(w_s; mean, Σ) for each column of `w`, or `None` when the root is singular.
    pub fn log_pdf(&self, w: &DMatrix<f64>) -> Option<DVector<f64>> {
        let d = self.dim();
        let mut centred = w.clone();
        for mut col in centred.column_iter_mut() {
            col -= &self.mean;
        }
        // A lower-triangular root (laplace, vi_full, mvi_lr's base) is solved in O(D² n)
        // without an LU factorisation.
        let (log_det_root, z) = if is_lower_triangular(&self.root) {
            let log_det = self.root.diagonal().iter().map(|x| x.abs().ln()).sum::<f64>();
            (log_det, self.root.solve_lower_triangular(&centred))
        } else {
            let lu = self.root.clone().lu();
            (lu_log_abs_det(&lu), lu.solve(&centred))
        };
        if !log_det_root.is_finite() {
            return None;
        }
        let z = z?;
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        Some(DVector::from_iterator(
            w.ncols(),
            z.column_iter()
                .map(|c| -0.5 * c.norm_squared() - log_det_root - d as f64 * half_log_2pi),
        ))
    }
}

/// log |det M| of a square matrix, as the sum of the logs of the absolute pivots of its LU
/// factorisation (−∞ when M is singular). Never the log of the determinant itself: that
/// product of D numbers leaves f64's range once D is a few hundred (0.1¹⁰⁰⁰ is 0).
pub fn log_abs_det(m: &DMatrix<f64>) -> f64 {
    if is_triangular(m) {
        return m.diagonal().iter().map(|x| x.abs().ln()).sum();
    }
    lu_log_abs_det(&m.clone().lu())
}

/// Σ log |Uᵢᵢ| of an LU factorisation: log |det| of the factorised matrix (the row
/// permutation only changes the sign).
pub fn lu_log_abs_det(lu: &nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>) -> f64 {
    lu.u().diagonal().iter().map(|x| x.abs().ln()).sum()
}

/// Whether a square matrix is lower or upper triangular (its determinant is then the
/// product of its diagonal).
fn is_triangular(m: &DMatrix<f64>) -> bool {
    let n = m.nrows();
    is_lower_triangular(m) || (0..n).all(|j| (j + 1..n).all(|i| m[(i, j)] == 0.0))
}

fn is_lower_triangular(m: &DMatrix<f64>) -> bool {
    (0..m.ncols()).all(|j| (0..j.min(m.nrows())).all(|i| m[(i, j)] == 0.0))
}

/// The fitted approximation on the unconstrained scale.
#[derive(Debug, Clone)]
pub enum Approximation {
    /// One Gaussian (laplace, mvi_*, vi_*).
    Gaussian(Gaussian),
    /// A mixture Σ_k π_k N(m_k, Σ_k) (split_mf).
    Mixture {
        /// Mixture weights π_k, summing to 1.
        weights: Vec<f64>,
        /// The components.
        components: Vec<Gaussian>,
    },
    /// A particle set, D×P, with no density (pmfvb).
    Particles(DMatrix<f64>),
    /// MCMC draws with the sampler's numbers per draw, and no density (nuts).
    Draws(Chains),
}

/// The draws of an MCMC run, chain after chain, with the sampler's numbers per draw.
#[derive(Debug, Clone)]
pub struct Chains {
    /// The kept draws, D × Σ lengths: chain 1's draws, then chain 2's, ...
    pub draws: DMatrix<f64>,
    /// Draws kept per chain (equal unless the run was interrupted).
    pub lengths: Vec<usize>,
    /// The sampler's numbers for each draw, in the same order.
    pub stats: Vec<DrawStats>,
    /// Warm-up iterations per chain (not kept).
    pub warmup: usize,
    /// The largest tree depth allowed.
    pub max_depth: u64,
}

/// What NUTS reports for one draw: CmdStan's sampler columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawStats {
    /// log p̃(w | θ) at the draw (`lp__`).
    pub lp: f64,
    /// Mean Metropolis acceptance probability over the tree (`accept_stat__`).
    pub accept_stat: f64,
    /// Step size (`stepsize__`).
    pub stepsize: f64,
    /// Tree depth (`treedepth__`).
    pub treedepth: u64,
    /// Leapfrog steps taken (`n_leapfrog__`).
    pub n_leapfrog: u64,
    /// Whether the trajectory diverged (`divergent__`).
    pub divergent: bool,
    /// The Hamiltonian at the draw (`energy__`).
    pub energy: f64,
}

/// One optimiser iteration, as reported to observers and kept for the objective trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterRecord {
    /// Iteration number, from 1.
    pub iter: usize,
    /// The objective being maximised (log p̃, ELBO, bound).
    pub objective: f64,
    /// Norm of the objective's gradient (0 where not defined).
    pub grad_norm: f64,
}

/// The result of `fit`: an approximate posterior plus what the method measured on the way.
#[derive(Debug, Clone)]
pub struct Posterior {
    /// Registry name of the method that produced it.
    pub method: String,
    /// q(w) on the unconstrained scale.
    pub approx: Approximation,
    /// The hyperparameters θ (unconstrained) the approximation was fitted with.
    pub theta: DVector<f64>,
    /// Final value of the method's objective (ELBO on the fixed samples, split bound,
    /// smoothed pmfvb bound, or log p̃ at the mode for laplace).
    pub objective: Option<f64>,
    /// Laplace log evidence log p̃(w*) + D/2 log 2π − ½ log det(−H), where computed.
    pub log_evidence: Option<f64>,
    /// Per-iteration objective trace.
    pub trace: Vec<IterRecord>,
    /// Iterations taken by the main optimisation.
    pub iterations: usize,
    /// Whether the stopping rule was met before `max_iters`.
    pub converged: bool,
    /// Warnings and remarks for the report ("not converged after 1000 iterations", ...).
    pub notes: Vec<String>,
    /// The ELBO re-estimated on fresh draws with its standard error (VI methods), beside the
    /// optimistic value on the fixed samples in `objective`.
    pub fresh_elbo: Option<(f64, f64)>,
    /// What Pareto-smoothed importance resampling did, when the draws are its output
    /// (multi-path `pathfinder`); `None` otherwise.
    pub resampling: Option<psis::Resampling>,
}

impl Posterior {
    /// Dimension D.
    pub fn dim(&self) -> usize {
        match &self.approx {
            Approximation::Gaussian(g) => g.dim(),
            Approximation::Mixture { components, .. } => components[0].dim(),
            Approximation::Particles(p) => p.nrows(),
            Approximation::Draws(c) => c.draws.nrows(),
        }
    }

    /// n draws as the columns of a D×n matrix. Particles and MCMC draws are resampled with
    /// replacement (or returned in order when n equals their count).
    pub fn draw(&self, n: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        match &self.approx {
            Approximation::Gaussian(g) => g.draw(n, rng),
            Approximation::Mixture { weights, components } => {
                let mut w = DMatrix::zeros(self.dim(), n);
                for s in 0..n {
                    let k = pick(weights, uniform(rng));
                    w.set_column(s, &components[k].draw(1, rng).column(0));
                }
                w
            }
            Approximation::Particles(p) | Approximation::Draws(Chains { draws: p, .. }) => {
                if n == p.ncols() {
                    return p.clone();
                }
                let mut w = DMatrix::zeros(p.nrows(), n);
                for s in 0..n {
                    let i = ((uniform(rng) * p.ncols() as f64) as usize).min(p.ncols() - 1);
                    w.set_column(s, &p.column(i));
                }
                w
            }
        }
    }

    /// log q(w_s) for each column, or `None` where q has no density (particles).
    pub fn log_q(&self, w: &DMatrix<f64>) -> Option<DVector<f64>> {
        match &self.approx {
            Approximation::Gaussian(g) => g.log_pdf(w),
            Approximation::Mixture { weights, components } => {
                let per: Option<Vec<DVector<f64>>> = components.iter().map(|c| c.log_pdf(w)).collect();
                let per = per?;
                Some(DVector::from_iterator(
                    w.ncols(),
                    (0..w.ncols()).map(|s| {
                        let terms: Vec<f64> = per.iter().zip(weights).map(|(l, p)| l[s] + p.ln()).collect();
                        log_sum_exp(&terms)
                    }),
                ))
            }
            Approximation::Particles(_) | Approximation::Draws(_) => None,
        }
    }

    /// The mean of q.
    pub fn mean(&self) -> DVector<f64> {
        match &self.approx {
            Approximation::Gaussian(g) => g.mean.clone(),
            Approximation::Mixture { weights, components } => components
                .iter()
                .zip(weights)
                .fold(DVector::zeros(self.dim()), |acc, (c, p)| acc + &c.mean * *p),
            Approximation::Particles(p) | Approximation::Draws(Chains { draws: p, .. }) => p.column_mean(),
        }
    }

    /// The covariance of q (for particles, the sample covariance).
    pub fn cov(&self) -> DMatrix<f64> {
        match &self.approx {
            Approximation::Gaussian(g) => g.cov(),
            Approximation::Mixture { weights, components } => {
                let m = self.mean();
                components
                    .iter()
                    .zip(weights)
                    .fold(DMatrix::zeros(m.len(), m.len()), |acc, (c, p)| {
                        let dm = &c.mean - &m;
                        acc + (c.cov() + &dm * dm.transpose()) * *p
                    })
            }
            Approximation::Particles(p) | Approximation::Draws(Chains { draws: p, .. }) => {
                let m = p.column_mean();
                let mut c = p.clone();
                for mut col in c.column_iter_mut() {
                    col -= &m;
                }
                let n = (p.ncols().max(2) - 1) as f64;
                &c * c.transpose() / n
            }
        }
    }
}

/// The p-quantile of sorted, non-empty `x` by linear interpolation.
pub(crate) fn quantile_sorted(x: &[f64], p: f64) -> f64 {
    let h = p * (x.len() - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(x.len() - 1);
    x[lo] + (h - lo as f64) * (x[hi] - x[lo])
}

fn uniform(rng: &mut dyn RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn pick(weights: &[f64], u: f64) -> usize {
    let mut acc = 0.0;
    for (k, p) in weights.iter().enumerate() {
        acc += p;
        if u < acc {
            return k;
        }
    }
    weights.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn log_abs_det_is_a_sum_of_logs_that_does_not_underflow() {
        // 0.1¹⁰⁰⁰ is 0 in f64: the product of the pivots underflows, their logs do not.
        let d = 1000;
        let diag = DMatrix::from_diagonal_element(d, d, 0.1);
        let want = d as f64 * 0.1f64.ln();
        assert!((log_abs_det(&diag) - want).abs() < 1e-9);
        // A full matrix with the same determinant: a rotation times the diagonal.
        let mut full = diag.clone();
        let (c, s) = (0.6, 0.8);
        for i in (0..d).step_by(2) {
            full[(i, i)] = 0.1 * c;
            full[(i, i + 1)] = -0.1 * s;
            full[(i + 1, i)] = 0.1 * s;
            full[(i + 1, i + 1)] = 0.1 * c;
        }
        assert!((log_abs_det(&full) - want).abs() < 1e-9, "{}", log_abs_det(&full));
        let g = Gaussian {
            mean: DVector::zeros(d),
            root: full,
        };
        let lp = g.log_pdf(&DMatrix::zeros(d, 1)).expect("a density");
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        assert!((lp[0] - (-want - d as f64 * half_log_2pi)).abs() < 1e-8, "{lp}");
        assert!(log_abs_det(&DMatrix::zeros(3, 3)).is_infinite());
    }

    #[test]
    fn gaussian_log_pdf_matches_closed_form_in_one_dimension() {
        let g = Gaussian {
            mean: DVector::from_element(1, 1.0),
            root: DMatrix::from_element(1, 1, 2.0),
        };
        let w = DMatrix::from_row_slice(1, 2, &[1.0, 3.0]);
        let lp = g.log_pdf(&w).unwrap();
        let c = -0.5 * (2.0 * std::f64::consts::PI).ln() - 2f64.ln();
        assert!((lp[0] - c).abs() < 1e-12);
        assert!((lp[1] - (c - 0.5)).abs() < 1e-12);
    }

    #[test]
    fn draws_have_the_requested_moments() {
        let root = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.5, 0.5]);
        let g = Gaussian {
            mean: DVector::from_vec(vec![1.0, -1.0]),
            root,
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let w = g.draw(40_000, &mut rng);
        let m = w.column_mean();
        assert!((m[0] - 1.0).abs() < 0.03 && (m[1] + 1.0).abs() < 0.03);
        let post = Posterior {
            method: "test".into(),
            approx: Approximation::Particles(w),
            theta: DVector::zeros(0),
            objective: None,
            log_evidence: None,
            trace: vec![],
            iterations: 0,
            converged: true,
            notes: vec![],
            fresh_elbo: None,
            resampling: None,
        };
        let c = post.cov();
        assert!((c[(0, 1)] - 0.5).abs() < 0.03 && (c[(1, 1)] - 0.5).abs() < 0.03);
    }
}
