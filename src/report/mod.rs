//! Reports: everything a fit produced, rendered as text, CSV, JSON and SVG.
//!
//! Input: one [`FitReport`], a plain value the CLI assembles from a `Posterior`, its
//! constrained draws, the fresh-draw ELBO, PSIS k̂ and `predict` results. Output: strings
//! (the summary table, `--json`, `draws.csv`, `fit.json`, SVG plots). Nothing here touches
//! files or the terminal; `run::write_output_dir` writes them atomically. Every
//! renderer is deterministic (fixed precision, no clocks), so the same report gives the same
//! bytes.

pub mod compare;
pub mod csv;
pub mod json;
pub mod loo;
pub mod mcmc;
pub mod sbc;
pub mod summary;
pub mod svg;

use crate::posterior::{quantile_sorted, Approximation, IterRecord};
use nalgebra::DMatrix;

pub use compare::{render_compare, render_compare_json};
pub use csv::render_draws_csv;
pub use json::render_fit_json;
pub use summary::{render_json, render_summary};
pub use svg::{render_posterior_svg, render_trace_svg};

/// A Monte Carlo estimate with its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Its Monte Carlo standard error.
    pub se: f64,
}

/// The fitted approximation q(w) on the unconstrained scale, summarised for reports.
#[derive(Debug, Clone)]
pub enum ApproxSummary {
    /// One Gaussian N(mean, cov) (laplace, mvi_*, vi_*).
    Gaussian {
        /// The mean, length D.
        mean: Vec<f64>,
        /// The covariance, D×D.
        cov: DMatrix<f64>,
    },
    /// A mixture Σ_k π_k N(m_k, Σ_k) (split_mf).
    Mixture {
        /// Mixture weights π_k, summing to 1.
        weights: Vec<f64>,
        /// Component means m_k, each of length D.
        means: Vec<Vec<f64>>,
        /// Component covariances Σ_k, each D×D.
        covs: Vec<DMatrix<f64>>,
    },
    /// A particle set (pmfvb), summarised by its sample moments.
    Particles {
        /// Number of particles P.
        count: usize,
        /// The particle mean, length D.
        mean: Vec<f64>,
        /// The particle sample covariance, D×D.
        cov: DMatrix<f64>,
    },
}

impl ApproxSummary {
    /// Summarise a fitted approximation: Gaussians and mixtures by their moments,
    /// particles by their count, mean and sample covariance.
    pub fn from_approximation(a: &Approximation) -> Self {
        let to_vec = |v: &nalgebra::DVector<f64>| v.iter().copied().collect::<Vec<f64>>();
        match a {
            Approximation::Gaussian(g) => ApproxSummary::Gaussian {
                mean: to_vec(&g.mean),
                cov: g.cov(),
            },
            Approximation::Mixture { weights, components } => ApproxSummary::Mixture {
                weights: weights.clone(),
                means: components.iter().map(|c| to_vec(&c.mean)).collect(),
                covs: components.iter().map(|c| c.cov()).collect(),
            },
            Approximation::Particles(p) | Approximation::Draws(crate::posterior::Chains { draws: p, .. }) => {
                let m = p.column_mean();
                let mut c = p.clone();
                for mut col in c.column_iter_mut() {
                    col -= &m;
                }
                let n = (p.ncols().max(2) - 1) as f64;
                ApproxSummary::Particles {
                    count: p.ncols(),
                    mean: to_vec(&m),
                    cov: &c * c.transpose() / n,
                }
            }
        }
    }

    /// The overall mean of q, length D.
    pub fn mean(&self) -> Vec<f64> {
        match self {
            ApproxSummary::Gaussian { mean, .. } | ApproxSummary::Particles { mean, .. } => mean.clone(),
            ApproxSummary::Mixture { weights, means, .. } => {
                let d = means.first().map_or(0, Vec::len);
                let mut m = vec![0.0; d];
                for (mk, p) in means.iter().zip(weights) {
                    for (a, b) in m.iter_mut().zip(mk) {
                        *a += p * b;
                    }
                }
                m
            }
        }
    }

    /// The Gaussians to draw as ellipses: (weight, mean, covariance) per component.
    pub fn components(&self) -> Vec<(f64, &[f64], &DMatrix<f64>)> {
        match self {
            ApproxSummary::Gaussian { mean, cov } | ApproxSummary::Particles { mean, cov, .. } => {
                vec![(1.0, mean.as_slice(), cov)]
            }
            ApproxSummary::Mixture { weights, means, covs } => weights
                .iter()
                .zip(means)
                .zip(covs)
                .map(|((p, m), c)| (*p, m.as_slice(), c))
                .collect(),
        }
    }
}

/// What to report about the error of `predict`: a classification error rate or a mean
/// squared error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PredictMetric {
    /// Fraction of test labels not equal to the label of the draw-averaged probabilities
    /// (`bernoulli*`, `categorical*` outcomes).
    ErrorRate(f64),
    /// Mean squared error of the draw-averaged prediction (continuous outcomes).
    Mse(f64),
}

/// Results of a model's `predict` block, evaluated over S′ posterior draws.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictReport {
    /// Number of held-out points N_test.
    pub n_test: usize,
    /// Number of posterior draws S′ used.
    pub draws: usize,
    /// The paper's test LPD (eq. 13): log (1/S′) Σ_s exp(Σ_n log p(y_n | w_s)).
    pub test_lpd: f64,
    /// The pointwise lppd: Σ_n log (1/S′) Σ_s p(y_n | w_s).
    pub lppd: f64,
    /// Error rate or mean squared error, when the outcome kind defines one.
    pub metric: Option<PredictMetric>,
}

impl PredictReport {
    /// The test LPD divided by N_test (the per-point number of the paper's Table II).
    pub fn test_lpd_per_point(&self) -> f64 {
        self.test_lpd / self.n_test.max(1) as f64
    }

    /// The pointwise lppd divided by N_test.
    pub fn lppd_per_point(&self) -> f64 {
        self.lppd / self.n_test.max(1) as f64
    }
}

/// Everything one fit produced: the single value every output renders from.
#[derive(Debug, Clone)]
pub struct FitReport {
    /// The model file's name as given on the command line (`model.mvi`).
    pub model_file: String,
    /// Registry name of the method (`laplace`, `mvi_lr`, ...).
    pub method: String,
    /// Every `infer` option of the run as (key, value) text, defaults filled in, in the
    /// order to print them.
    pub options: Vec<(String, String)>,
    /// The random seed of the run.
    pub seed: u64,
    /// The data files read, as given.
    pub data_files: Vec<String>,
    /// Dimension D of the unconstrained parameter vector.
    pub dim: usize,
    /// Number of fixed samples S, for methods that use them.
    pub samples: Option<usize>,
    /// Iterations taken by the main optimisation.
    pub iterations: usize,
    /// Whether the stopping rule was met before `max_iters`.
    pub converged: bool,
    /// Whether the run was stopped early by the user (Ctrl-C).
    pub interrupted: bool,
    /// Wall time of the fit in seconds.
    pub wall_time_s: f64,
    /// Names of the parameter columns as CmdStan writes them: `sigma`, `w.1`, `W.2.3`
    /// (matrices column-major, indices from 1). One per column of `draws`.
    pub columns: Vec<String>,
    /// For each column, the index of the unconstrained coordinate it equals (an
    /// identity-transformed real), or `None`. Used to overlay q's ellipses on pair plots;
    /// may be empty when unknown.
    pub unconstrained_index: Vec<Option<usize>>,
    /// Constrained draws, n_draws × n_cols.
    pub draws: DMatrix<f64>,
    /// Per draw: log p̃(w | θ) on the unconstrained scale, including the log-Jacobian
    /// (CmdStan's `lp__`).
    pub lp: Vec<f64>,
    /// Per draw: the log density used in the importance ratio log p̃ − log q (CmdStan's
    /// `log_p__`); normally equal to `lp`.
    pub log_p: Vec<f64>,
    /// Per draw: log q(w) (CmdStan's `log_q__`); `None` where q has no density (particles).
    pub log_q: Option<Vec<f64>>,
    /// The approximation on the unconstrained scale.
    pub approx: ApproxSummary,
    /// The objective on the fixed training samples (ELBO, split bound, smoothed pmfvb
    /// bound), where the method has one.
    pub elbo_train: Option<f64>,
    /// The ELBO re-estimated on fresh draws, ± its standard error.
    pub elbo_fresh: Option<Estimate>,
    /// Laplace log evidence log p̃(w*) + D/2 log 2π − ½ log det(−H), where computed.
    pub log_evidence: Option<f64>,
    /// Hyperparameters θ as (name, constrained value).
    pub theta: Vec<(String, f64)>,
    /// PSIS Pareto k̂ of log p̃ − log q over the draws; `None` = not available.
    pub khat: Option<f64>,
    /// Pareto-smoothed importance resampling of the draws (`psis_resample`, multi-path
    /// `pathfinder`): k̂, ESS and pool size; the draws are then the resampled ones.
    pub resampling: Option<crate::posterior::psis::Resampling>,
    /// `predict` results, when the model has a `predict` block and test data.
    pub predict: Option<PredictReport>,
    /// The objective per iteration.
    pub trace: Vec<IterRecord>,
    /// Warnings and remarks to show the user.
    pub notes: Vec<String>,
    /// The mvi version that produced the fit.
    pub version: String,
    /// Log-density, gradient and Hessian evaluations the method used (per point).
    pub evals: crate::density::Evals,
    /// The sampler's numbers and convergence diagnostics, for MCMC methods (nuts).
    pub mcmc: Option<mcmc::McmcReport>,
    /// Distances to a reference posterior (`mvi compare --reference`), when one was given.
    pub reference: Option<compare::RefMetrics>,
    /// The pointwise log-likelihood at every draw (`loo = true`), with the importance
    /// correction log p̃ − log q of an approximation.
    pub log_lik: Option<LogLikDraws>,
    /// The replicated data variables (`predictive = true`), for posterior predictive checks.
    pub replicated: Vec<Replicated>,
    /// `method = auto`: the methods tried in order, the last the one reported; empty
    /// otherwise.
    pub ladder: Vec<Rung>,
}

/// One method `method = auto` tried: what it measured and whether it passed the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Rung {
    /// The method.
    pub method: String,
    /// Its PSIS k̂, where it has one.
    pub khat: Option<f64>,
    /// Its wall time in seconds (0 when it failed before fitting).
    pub wall_time_s: f64,
    /// Whether its fit is the one reported.
    pub accepted: bool,
    /// Why it was rejected, or what it passed.
    pub verdict: String,
}

/// A data variable replicated at every draw: its values and where its replicates are.
#[derive(Debug, Clone, PartialEq)]
pub struct Replicated {
    /// The data variable's name (`y`; its columns are `y_rep.1`, …).
    pub name: String,
    /// The observed values, in the order of the replicate's columns.
    pub observed: Vec<f64>,
    /// The first of its columns in `draws`.
    pub first_column: usize,
}

impl Replicated {
    /// Whether the data are counts or labels (every value an integer): a rootogram rather
    /// than densities.
    pub fn discrete(&self) -> bool {
        self.observed.iter().all(|v| v.fract() == 0.0)
    }
}

/// Pointwise log-likelihoods at the draws of a fit, for LOO.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLikDraws {
    /// Per observed data variable, its name and number of observations, in order.
    pub vars: Vec<(String, usize)>,
    /// draws × observations (every variable's observations, in order).
    pub values: DMatrix<f64>,
    /// The observed outcomes, one per observation (ArviZ's `observed_data`).
    pub observed: Vec<f64>,
    /// Per draw, log p̃(w | y) − log q(w) for draws of an approximation q (Magnusson et
    /// al.'s correction); `None` for exact posterior draws (MCMC) or a q with no density.
    pub log_correction: Option<Vec<f64>>,
}

impl FitReport {
    /// Per-column summaries of the constrained draws, in column order.
    pub fn column_summaries(&self) -> Vec<ColumnSummary> {
        summarize_columns(&self.draws)
    }

    /// Number of draws (rows of `draws`).
    pub fn n_draws(&self) -> usize {
        self.draws.nrows()
    }
}

/// The CmdStan column names of a parameter with the given shape: `sigma` for a scalar
/// (empty shape), `w.1 … w.n` for a vector, and `W.1.1, W.2.1, …` for a matrix or array,
/// in column-major order (first index fastest), indices from 1.
pub fn cmdstan_names(name: &str, shape: &[usize]) -> Vec<String> {
    if shape.is_empty() {
        return vec![name.to_string()];
    }
    let total: usize = shape.iter().product();
    let mut names = Vec::with_capacity(total);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..total {
        let parts: Vec<String> = index.iter().map(|i| (i + 1).to_string()).collect();
        names.push(format!("{name}.{}", parts.join(".")));
        for (k, n) in index.iter_mut().zip(shape) {
            *k += 1;
            if *k < *n {
                break;
            }
            *k = 0;
        }
    }
    names
}

/// Summary of one column of draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnSummary {
    /// Sample mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1; 0 for a single draw).
    pub sd: f64,
    /// 5 % quantile.
    pub q5: f64,
    /// Median.
    pub q50: f64,
    /// 95 % quantile.
    pub q95: f64,
}

/// Mean, sd and 5/50/95 % quantiles of every column of `draws` (n_draws × n_cols).
///
/// Quantiles interpolate linearly between order statistics (NumPy's default). An empty
/// column gives NaN everywhere.
pub fn summarize_columns(draws: &DMatrix<f64>) -> Vec<ColumnSummary> {
    draws
        .column_iter()
        .map(|c| summarize(c.iter().copied().collect()))
        .collect()
}

fn summarize(mut x: Vec<f64>) -> ColumnSummary {
    let n = x.len();
    if n == 0 {
        return ColumnSummary {
            mean: f64::NAN,
            sd: f64::NAN,
            q5: f64::NAN,
            q50: f64::NAN,
            q95: f64::NAN,
        };
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let ss: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    let sd = if n > 1 { (ss / (n - 1) as f64).sqrt() } else { 0.0 };
    x.sort_by(f64::total_cmp);
    ColumnSummary {
        mean,
        sd,
        q5: quantile_sorted(&x, 0.05),
        q50: quantile_sorted(&x, 0.5),
        q95: quantile_sorted(&x, 0.95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn summaries_match_hand_computed_values() {
        let d = DMatrix::from_column_slice(5, 1, &[3.0, 1.0, 2.0, 5.0, 4.0]);
        let s = summarize_columns(&d)[0];
        assert_relative_eq!(s.mean, 3.0);
        assert_relative_eq!(s.sd, 2.5f64.sqrt());
        assert_relative_eq!(s.q50, 3.0);
        assert_relative_eq!(s.q5, 1.2);
        assert_relative_eq!(s.q95, 4.8);
    }

    #[test]
    fn single_draw_has_zero_sd_and_empty_column_is_nan() {
        let one = DMatrix::from_element(1, 1, 2.0);
        assert_relative_eq!(summarize_columns(&one)[0].sd, 0.0);
        let none = DMatrix::<f64>::zeros(0, 2);
        let s = summarize_columns(&none);
        assert_eq!(s.len(), 2);
        assert!(s[0].mean.is_nan());
    }

    #[test]
    fn mixture_mean_is_weighted_component_mean() {
        let a = ApproxSummary::Mixture {
            weights: vec![0.25, 0.75],
            means: vec![vec![0.0, 4.0], vec![4.0, 0.0]],
            covs: vec![DMatrix::identity(2, 2), DMatrix::identity(2, 2)],
        };
        let m = a.mean();
        assert_relative_eq!(m[0], 3.0);
        assert_relative_eq!(m[1], 1.0);
        assert_eq!(a.components().len(), 2);
    }

    #[test]
    fn cmdstan_names_are_column_major_from_one() {
        assert_eq!(cmdstan_names("sigma", &[]), vec!["sigma"]);
        assert_eq!(cmdstan_names("w", &[2]), vec!["w.1", "w.2"]);
        assert_eq!(
            cmdstan_names("W", &[2, 3]),
            vec!["W.1.1", "W.2.1", "W.1.2", "W.2.2", "W.1.3", "W.2.3"]
        );
        assert!(cmdstan_names("z", &[0]).is_empty());
    }

    #[test]
    fn particle_summary_has_sample_moments() {
        let p = DMatrix::from_row_slice(1, 3, &[1.0, 2.0, 6.0]);
        match ApproxSummary::from_approximation(&Approximation::Particles(p)) {
            ApproxSummary::Particles { count, mean, cov } => {
                assert_eq!(count, 3);
                assert_relative_eq!(mean[0], 3.0);
                assert_relative_eq!(cov[(0, 0)], 7.0);
            }
            other => panic!("expected particles, got {other:?}"),
        }
    }

    #[test]
    fn gaussian_summary_has_root_times_root_transpose() {
        let g = crate::posterior::Gaussian {
            mean: nalgebra::DVector::from_vec(vec![1.0, 2.0]),
            root: DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 1.0, 1.0]),
        };
        match ApproxSummary::from_approximation(&Approximation::Gaussian(g)) {
            ApproxSummary::Gaussian { mean, cov } => {
                assert_eq!(mean, vec![1.0, 2.0]);
                assert_relative_eq!(cov[(0, 1)], 2.0);
                assert_relative_eq!(cov[(1, 1)], 2.0);
            }
            other => panic!("expected a Gaussian, got {other:?}"),
        }
    }

    #[test]
    fn predict_per_point_divides_by_test_size() {
        let p = PredictReport {
            n_test: 4,
            draws: 10,
            test_lpd: -8.0,
            lppd: -6.0,
            metric: None,
        };
        assert_relative_eq!(p.test_lpd_per_point(), -2.0);
        assert_relative_eq!(p.lppd_per_point(), -1.5);
    }
}
