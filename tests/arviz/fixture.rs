//! A hand-made [`FitReport`] shared by `tests/it/report.rs` and `tests/it/arviz.rs`: a 7-dimensional
//! Gaussian q over `w` (vector of 2), `sigma` (positive, log transform) and `W` (2×2 matrix,
//! column-major), with draws from a seeded generator so every run is identical.

use mvi::posterior::{Gaussian, IterRecord};
use mvi::report::{ApproxSummary, Estimate, FitReport, PredictMetric, PredictReport};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// Column names in CmdStan's convention, in unconstrained-coordinate order.
pub const COLUMNS: [&str; 7] = ["w.1", "w.2", "sigma", "W.1.1", "W.2.1", "W.1.2", "W.2.2"];
/// Index of the `sigma` column, the only constrained (exp-transformed) one.
pub const SIGMA: usize = 2;

/// The fixture, for `method` with `n_draws` draws from a generator seeded with `seed`.
pub fn report(method: &str, n_draws: usize, seed: u64) -> FitReport {
    let mean = DVector::from_vec(vec![0.5, -1.0, 0.8f64.ln(), 0.1, 0.2, 0.3, 0.4]);
    let mut root = DMatrix::<f64>::identity(7, 7) * 0.2;
    for i in 0..7 {
        root[(i, 0)] += 0.1 * (i as f64 + 1.0) / 7.0;
    }
    let q = Gaussian { mean, root };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let w = q.draw(n_draws, &mut rng);
    let log_q: Vec<f64> = q
        .log_pdf(&w)
        .expect("root is non-singular")
        .iter()
        .copied()
        .collect();
    let lp: Vec<f64> = w
        .column_iter()
        .map(|c| -0.5 * c.norm_squared() + c[SIGMA])
        .collect();
    let mut draws = w.transpose();
    for i in 0..n_draws {
        draws[(i, SIGMA)] = draws[(i, SIGMA)].exp();
    }
    let unconstrained_index = (0..7).map(|j| (j != SIGMA).then_some(j)).collect();
    FitReport {
        model_file: "regression.mvi".into(),
        method: method.into(),
        options: vec![
            ("max_iters".into(), "1000".into()),
            ("optimizer".into(), "lbfgs".into()),
            ("rank".into(), "1".into()),
            ("samples".into(), "1000".into()),
            ("tol".into(), "1e-8".into()),
        ],
        seed,
        data_files: vec!["data/train.json".into(), "data/test.json".into()],
        dim: 7,
        samples: Some(1000),
        iterations: 20,
        converged: true,
        interrupted: false,
        wall_time_s: 0.125,
        columns: COLUMNS.iter().map(|s| s.to_string()).collect(),
        unconstrained_index,
        draws,
        log_p: lp.clone(),
        lp,
        log_q: Some(log_q),
        approx: ApproxSummary::Gaussian {
            cov: q.cov(),
            mean: q.mean.iter().copied().collect(),
        },
        elbo_train: Some(-12.3456),
        elbo_fresh: Some(Estimate {
            value: -12.5,
            se: 0.05,
        }),
        log_evidence: Some(-12.0),
        theta: vec![("tau".into(), 1.3)],
        khat: Some(0.42),
        resampling: None,
        predict: Some(PredictReport {
            n_test: 100,
            draws: 10_000,
            test_lpd: -81.8,
            lppd: -77.1,
            metric: Some(PredictMetric::Mse(0.25)),
        }),
        trace: (1..=20)
            .map(|i| IterRecord {
                iter: i,
                objective: -12.3456 - 50.0 * (-(i as f64) / 3.0).exp(),
                grad_norm: 10.0 * 0.5f64.powi(i as i32),
            })
            .collect(),
        notes: vec!["an example note".into()],
        version: "0.1.0".into(),
        evals: Default::default(),
        mcmc: None,
        reference: None,
        log_lik: None,
        replicated: Vec::new(),
        ladder: Vec::new(),
    }
}
