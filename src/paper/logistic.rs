//! Tables III/IV: Bayesian logistic regression with Gaussian RBF features on the 13 binary
//! Rätsch sets (paper §V-C), with the model of `examples/logistic_rbf_banana.mvi`.
//!
//! Per split: standardise with the training statistics (a constant column is only
//! centred); for M ∈ {10, 20, 30} centres by k-means of the training inputs and
//! `plan.pairs` random (r, α) pairs each, scored by a short Laplace fit's log evidence; the
//! best starts the full Laplace fit with θ learned; mvi_mu, mvi_eig, mvi_lr (rank 1) and
//! vi_diag start from Laplace's θ (each from the Laplace mean, as every VI method does).
//!
//! The two protocols ([`Protocol`]): `learned-centres` (the paper's) uses
//! `examples/logistic_rbf_centres.mvi`, θ = (α, r, centres), r and α ~ U(0, 1), and scores a
//! pair after [`SEARCH_ITERS`] θ iterations of Laplace (the centres start at k-means); the
//! best pair's θ after those iterations, centres included, starts the full fit.
//! `fixed-centres` uses `examples/logistic_rbf_banana.mvi` (centres data), (r, α)
//! log-uniform in the ranges below, scored by a Laplace fit at fixed (r, α).

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::data::{self, Dataset, Split, Standardizer};
use super::fit::{labels_json, matrix_json, Problem};
use super::store::Record;
use super::{kmeans, Ctx, Flow, PaperArgs, Protocol, Table};
use crate::diagnostic::Diagnostic;

/// The model of `fixed-centres`: the project's logistic-RBF example, used as it is.
pub const MODEL: &str = include_str!("../../examples/logistic_rbf_banana.mvi");
/// The model of `learned-centres`: the same with the centres a `hyper` matrix.
pub const MODEL_LEARNED: &str = include_str!("../../examples/logistic_rbf_centres.mvi");
/// θ iterations of Laplace per (M, r, α) in the `learned-centres` search (the paper's 10).
pub const SEARCH_ITERS: usize = 10;
/// Numbers of RBF centres searched.
pub const CENTRES: [usize; 3] = [10, 20, 30];
/// Range of the random prior precision α (log-uniform).
pub const ALPHA_RANGE: (f64, f64) = (0.01, 10.0);
/// Range of the random RBF width r, in units of √Q (log-uniform).
pub const WIDTH_RANGE: (f64, f64) = (0.2, 2.0);

/// The standardised training and test data of one split.
pub struct SplitData {
    /// Training inputs.
    pub x: DMatrix<f64>,
    /// Training labels (0/1).
    pub y: Vec<usize>,
    /// Test inputs.
    pub x_test: DMatrix<f64>,
    /// Test labels.
    pub y_test: Vec<usize>,
}

/// Standardise a split with its training statistics.
pub fn prepare(ds: &Dataset, split: &Split) -> SplitData {
    let x = data::select_rows(&ds.x, &split.train);
    let x_test = data::select_rows(&ds.x, &split.test);
    let s = Standardizer::fit(&x);
    SplitData {
        x: s.apply(&x),
        y: split.train.iter().map(|&i| ds.y[i]).collect(),
        x_test: s.apply(&x_test),
        y_test: split.test.iter().map(|&i| ds.y[i]).collect(),
    }
}

fn model_data(d: &SplitData, c: &DMatrix<f64>) -> Value {
    json!({
        "X": matrix_json(&d.x),
        "y": labels_json(&d.y, false),
        "C": matrix_json(c),
        "X_test": matrix_json(&d.x_test),
        "y_test": labels_json(&d.y_test, false),
    })
}

/// The k-means seed of a set, split and M.
fn centre_seed(set: &str, split: usize, m: usize) -> u64 {
    data::name_seed(set, 1000 * split as u64 + m as u64)
}

/// M k-means centres of the (standardised) training inputs `x` of a set's split.
pub fn centres(x: &DMatrix<f64>, set: &str, split: usize, m: usize) -> DMatrix<f64> {
    kmeans::kmeans(x, m.min(x.nrows()), centre_seed(set, split, m))
}

/// `n` random (r, α) pairs for inputs of dimension `q`, log-uniform in the ranges above.
pub fn random_pairs(n: usize, q: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut log_uniform = |(lo, hi): (f64, f64)| (lo.ln() + rng.random::<f64>() * (hi / lo).ln()).exp();
    (0..n)
        .map(|_| {
            let r = log_uniform(WIDTH_RANGE) * (q as f64).sqrt();
            let alpha = log_uniform(ALPHA_RANGE);
            (r, alpha)
        })
        .collect()
}

/// `n` random (r, α) pairs, both ~ U(0, 1) (the paper's draw), kept away from 0 by 10⁻³.
pub fn uniform_pairs(n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let r = rng.random::<f64>().max(1e-3);
            let alpha = rng.random::<f64>().max(1e-3);
            (r, alpha)
        })
        .collect()
}

/// The model text and file name of a protocol.
pub fn model_of(protocol: Protocol) -> (&'static str, &'static str) {
    match protocol {
        Protocol::LearnedCentres => (MODEL_LEARNED, "logistic_rbf_centres.mvi"),
        Protocol::FixedCentres | Protocol::FixedCentresRbf | Protocol::FixedCentresSelect => {
            (MODEL, "logistic_rbf_banana.mvi")
        }
    }
}

/// Hyperparameter values by (CmdStan) name.
type Theta = Vec<(String, f64)>;

fn theta(alpha: f64, r: f64) -> Vec<(String, f64)> {
    vec![("alpha".to_string(), alpha), ("r".to_string(), r)]
}

/// The (M, r, α) search of one split: the record holds the best M, θ and evidence (θ after
/// the short Laplace fit under `learned-centres`, centres included; the pair under
/// `fixed-centres`).
///
/// `x` are the standardised training inputs (k-means runs on them), `model` the model text
/// and file name, `data` the model's data for a matrix of centres. `None` when interrupted.
///
/// # Errors
/// The model does not check against the data (a bug), or an override was rejected.
pub fn search(
    ctx: &mut Ctx,
    table: Table,
    set: &str,
    split: usize,
    x: &DMatrix<f64>,
    model: (&str, &str),
    data: &dyn Fn(&DMatrix<f64>) -> Value,
) -> Result<Option<Record>, Diagnostic> {
    let started = std::time::Instant::now();
    let protocol = ctx.plan.protocol;
    let (text, file) = model;
    let mut overrides = vec![
        ("method", "laplace".to_string()),
        ("draws", "1".to_string()),
        ("test_draws", "1".to_string()),
        ("seed", (split + 1).to_string()),
    ];
    if protocol.learns_centres() {
        overrides.push(("learn_hyper", "true".to_string()));
        overrides.push(("max_iters", SEARCH_ITERS.to_string()));
    } else {
        overrides.push(("learn_hyper", "false".to_string()));
    }
    // every (M, r, α) of the search, each its problem started at (r, α)
    let mut jobs: Vec<(usize, f64, f64, Problem)> = Vec::new();
    for m in ctx.centres.clone() {
        let c = centres(x, set, split, m);
        let problem = Problem::new(text, file, &data(&c))?;
        let seed = centre_seed(set, split, m) ^ 0x5eed;
        let pairs = if protocol.learns_centres() {
            uniform_pairs(ctx.plan.pairs, seed)
        } else {
            random_pairs(ctx.plan.pairs, x.ncols(), seed)
        };
        for (r, alpha) in pairs {
            let mut p = problem.clone();
            p.start_hypers(&theta(alpha, r))?;
            jobs.push((m, r, alpha, p));
        }
    }
    ctx.show(format!(
        "{} {set} split {split}: search, {} (M, r, α)",
        table.name(),
        jobs.len()
    ));
    let problems: Vec<&Problem> = jobs.iter().map(|j| &j.3).collect();
    let Some(results) = ctx.fit_parallel(&problems, &overrides) else {
        return Ok(None);
    };
    // (log evidence, M, θ): the first best in the search's order
    let mut best: Option<(f64, usize, Theta)> = None;
    for ((m, r, alpha, _), result) in jobs.iter().zip(results) {
        let Some(rep) = result.ok() else {
            continue;
        };
        let Some(ev) = rep.log_evidence else {
            continue;
        };
        if ev.is_finite() && best.as_ref().is_none_or(|b| ev > b.0) {
            let th = if protocol.learns_centres() {
                rep.theta.clone()
            } else {
                theta(*alpha, *r)
            };
            best = Some((ev, *m, th));
        }
    }
    let mut rec = Record::new(table.name(), set, split, "search");
    match best {
        Some((ev, m, th)) => {
            rec.log_evidence = Some(ev);
            rec.centres = Some(m);
            rec.theta = th;
        }
        None => rec.failed = Some("no (M, r, α) gave a finite Laplace log evidence".to_string()),
    }
    rec.seconds = started.elapsed().as_secs_f64();
    Ok(Some(rec))
}

/// Run Tables III/IV for every selected binary set.
///
/// # Errors
/// Unreadable data or an unwritable store.
pub fn run_table(ctx: &mut Ctx, args: &PaperArgs) -> Result<Flow, Diagnostic> {
    for set in data::BINARY_SETS.iter().filter(|s| super::selected(args, s)) {
        if run_set(ctx, set)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

fn run_set(ctx: &mut Ctx, set: &str) -> Result<Flow, Diagnostic> {
    let ds = data::load_dataset(&ctx.data_dir, set)?;
    let splits = data::load_splits(&ctx.data_dir, set, ds.x.nrows())?;
    for (i, split) in splits.iter().enumerate().take(ctx.plan.binary_splits) {
        if !ctx.split_done(Table::III, set, i, &["search"]) {
            let d = prepare(&ds, split);
            let rec = match ctx.store.get(Table::III.name(), set, i, "search") {
                Some(r) => r.clone(),
                None => {
                    let data = |c: &DMatrix<f64>| model_data(&d, c);
                    let model = model_of(ctx.plan.protocol);
                    let Some(r) = search(ctx, Table::III, set, i, &d.x, model, &data)? else {
                        return Ok(Flow::Stop);
                    };
                    ctx.save(r.clone())?;
                    r
                }
            };
            if rec.failed.is_none() {
                let m = rec.centres.unwrap_or(CENTRES[CENTRES.len() - 1]);
                // the search's M is the one stored, whatever `--centres` says now
                let c = centres(&d.x, set, i, m);
                let (text, file) = model_of(ctx.plan.protocol);
                let mut problem = Problem::new(text, file, &model_data(&d, &c))?;
                if ctx.fit_methods(Table::III, set, i, &mut problem, &rec.theta, Some(m))? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
        ctx.unit_done();
    }
    Ok(Flow::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_pairs_are_seeded_and_inside_their_ranges() {
        let p = random_pairs(50, 4, 9);
        assert_eq!(p, random_pairs(50, 4, 9));
        for (r, alpha) in p {
            assert!((0.2 * 2.0..=2.0 * 2.0).contains(&r), "{r}");
            assert!((0.01..=10.0).contains(&alpha), "{alpha}");
        }
    }

    #[test]
    fn uniform_pairs_are_seeded_and_inside_the_unit_square() {
        let p = uniform_pairs(50, 3);
        assert_eq!(p, uniform_pairs(50, 3));
        assert!(p
            .iter()
            .all(|&(r, a)| (1e-3..1.0).contains(&r) && (1e-3..1.0).contains(&a)));
        assert!(p.iter().any(|&(r, _)| r < 0.5) && p.iter().any(|&(r, _)| r > 0.5));
    }

    #[test]
    fn prepare_standardises_with_training_statistics_only() {
        let ds = Dataset {
            name: "t".into(),
            x: DMatrix::from_column_slice(4, 1, &[1.0, 3.0, 100.0, 5.0]),
            y: vec![0, 1, 1, 0],
            classes: 2,
        };
        let split = Split {
            train: vec![0, 1],
            test: vec![2, 3],
        };
        let d = prepare(&ds, &split);
        // Training mean 2, sd √2.
        let sd = 2f64.sqrt();
        assert!((d.x[(0, 0)] + 1.0 / sd).abs() < 1e-12);
        assert!((d.x_test[(0, 0)] - 98.0 / sd).abs() < 1e-12);
        assert_eq!(d.y_test, vec![1, 0]);
    }
}
