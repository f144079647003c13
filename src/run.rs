//! The `mvi run` pipeline as a library function, shared by the CLI, the REPL and the tests.
//!
//! Input: a checked model, its lowered [`LogJoint`] and the run's [`InferOptions`]. Output: a
//! [`FitReport`] with everything the reports render: the method's [`Posterior`], constrained
//! draws, lp/log q per draw, the fresh-draw ELBO, PSIS k̂ and the `predict` results. All
//! randomness comes from one generator seeded by `infer { seed }`, so the same inputs give
//! the same report (apart from the wall time).

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::check::infer_keys;
use crate::density::{LogDensity, Want};
use crate::diagnostic::Diagnostic;
use crate::graph::{LogJoint, Shape};
use crate::infer::{registry, timing, InferOptions, Observer, OptionValue};
use crate::posterior::{log_sum_exp, psis, Posterior};
use crate::report::{ApproxSummary, Estimate, FitReport, PredictMetric, PredictReport};

/// Draws evaluated together by `predict`; bounds memory (draws × test points per node).
const PREDICT_CHUNK: usize = 500;

/// Keep freed memory in the process instead of returning it to the system at once.
///
/// A run allocates and frees the same large blocks many times (draws × test points per
/// `predict` chunk, the tapes of every batched evaluation). With glibc's defaults, blocks
/// above its adaptive mmap threshold are mapped and unmapped each time and every page is
/// faulted in again: on the issue-4 banana problem that was 0.35 s of system time against
/// 0.55 s of user time for `laplace` (measured with /usr/bin/time; with this setting 0.02 s).
/// Fixing the mmap threshold at 32 MiB (glibc's largest on 64-bit) and the trim threshold at
/// 256 MiB keeps such blocks on the heap for reuse; both are needed (either alone left the
/// system time unchanged). Call once at process start; a no-op off glibc.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_MMAP_THRESHOLD: i32 = -3;
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only changes glibc's allocation thresholds, takes plain integers and
        // is called before any other thread exists; a rejected value leaves the default.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
        }
    }
}

/// What the caller knows about the run besides the model: names for the report.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The model file as given.
    pub model_file: String,
    /// The data files as given.
    pub data_files: Vec<String>,
}

/// The value of an integer option, or its default.
pub fn option_int(options: &InferOptions, key: &str, default: u64) -> u64 {
    match options
        .entries
        .iter()
        .rev()
        .find(|e| e.key == key)
        .map(|e| &e.value)
    {
        Some(OptionValue::Int(v)) if *v >= 0 => *v as u64,
        _ => default,
    }
}

/// The chosen method's name (`laplace` when none is given).
pub fn method_name(options: &InferOptions) -> String {
    match options
        .entries
        .iter()
        .rev()
        .find(|e| e.key == "method")
        .map(|e| &e.value)
    {
        Some(OptionValue::Ident(m)) => m.clone(),
        _ => "laplace".to_string(),
    }
}

/// Every option valid for the chosen method as (key, value) text, with defaults filled in.
pub fn options_with_defaults(options: &InferOptions) -> Vec<(String, String)> {
    let method = method_name(options);
    let mut out = Vec::new();
    for spec in infer_keys::KEYS.iter().filter(|k| k.methods.includes(&method)) {
        let given = options.entries.iter().rev().find(|e| e.key == spec.key);
        let text = match given.map(|e| &e.value) {
            Some(v) => option_text(v),
            None if spec.key == "method" => method.clone(),
            None => infer_keys::default_for(spec, &method)
                .unwrap_or("(one block per parameter)")
                .to_string(),
        };
        out.push((spec.key.to_string(), text));
    }
    out
}

fn option_text(v: &OptionValue) -> String {
    match v {
        OptionValue::Int(i) => i.to_string(),
        OptionValue::Real(x) => x.to_string(),
        OptionValue::Ident(s) => s.clone(),
        OptionValue::Blocks(b) => {
            let inner: Vec<String> = b.iter().map(|g| format!("[{}]", g.join(", "))).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// Fit the model with the method its options name and assemble the report.
///
/// # Errors
/// A diagnostic for invalid options, an unsupported model, or a numerical failure of the
/// method (with a suggestion of what to try).
pub fn fit(
    model: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    obs: &mut dyn Observer,
) -> Result<(Posterior, FitReport), Diagnostic> {
    let method = registry::build(options)?;
    method
        .supports(model)
        .map_err(|e| method_error(method.name(), &e))?;
    let seed = option_int(options, "seed", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    let post = {
        let _t = timing::span("fit (whole method)");
        method
            .fit(model, &mut rng, obs)
            .map_err(|e| method_error(method.name(), &e))?
    };
    let interrupted = post.notes.iter().any(|n| n.contains("interrupted"));
    let report = assemble(model, options, info, &post, &mut rng, start, interrupted);
    Ok((post, report))
}

/// Turn a method's numerical failure into a diagnostic with a suggestion.
fn method_error(method: &str, e: &crate::infer::Error) -> Diagnostic {
    let help = match e {
        crate::infer::Error::NotNegativeDefinite { .. } => {
            "the mode is not a proper maximum: check the priors (an improper or flat direction), \
             or try `--method vi_diag`, which does not need the Hessian"
        }
        crate::infer::Error::NonFiniteStart { .. } => {
            "the log density is −∞ or NaN at the starting point: check that the data lie in the \
             support of every distribution and that constraints match the priors"
        }
        _ => "try another method with `--method`",
    };
    Diagnostic::plain("mvi::infer::failed", format!("{method} failed: {e}")).with_help(help)
}

fn assemble(
    model: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    post: &Posterior,
    rng: &mut StdRng,
    start: Instant,
    interrupted: bool,
) -> FitReport {
    let n_draws = option_int(options, "draws", 1000).max(1) as usize;
    let t = timing::span("report: draws, log p̃, log q");
    let w = post.draw(n_draws, rng);
    let lp: Vec<f64> = model
        .eval(&post.theta, &w, Want::VALUE)
        .values
        .iter()
        .copied()
        .collect();
    let log_q: Option<Vec<f64>> = post.log_q(&w).map(|v| v.iter().copied().collect());
    drop(t);
    let t = timing::span("report: PSIS");
    let khat = log_q.as_ref().and_then(|lq| {
        let ratios: Vec<f64> = lp.iter().zip(lq).map(|(p, q)| p - q).collect();
        psis::pareto_k(&ratios)
    });
    drop(t);
    let elbo_fresh = post
        .fresh_elbo
        .map(|(value, se)| Estimate { value, se })
        .or_else(|| log_q.as_ref().map(|lq| draw_elbo(&lp, lq)));
    let t = timing::span("report: constrained draws");
    let (columns, draws) = constrained_draws(model, &post.theta, &w);
    drop(t);
    let test_draws = option_int(options, "test_draws", 10_000).max(1) as usize;
    let predict = model.predict.as_ref().map(|_| {
        let _t = timing::span("predict");
        run_predict(model, post, test_draws, rng)
    });
    let mut notes = post.notes.clone();
    if let Some(k) = khat {
        if k > psis::KHAT_OK {
            notes.push(format!(
                "PSIS k̂ = {k:.2} > 0.7: the approximation misses posterior mass; treat its \
                 tails and uncertainty with care (try `mvi compare` for a better method)"
            ));
        }
    }
    FitReport {
        model_file: info.model_file.clone(),
        method: post.method.clone(),
        options: options_with_defaults(options),
        seed: option_int(options, "seed", 0),
        data_files: info.data_files.clone(),
        dim: model.dim(),
        samples: uses_samples(&post.method).then(|| option_int(options, "samples", 1000) as usize),
        iterations: post.iterations,
        converged: post.converged,
        interrupted,
        wall_time_s: start.elapsed().as_secs_f64(),
        unconstrained_index: identity_columns(model, columns.len()),
        columns,
        draws,
        log_p: lp.clone(),
        lp,
        log_q,
        approx: ApproxSummary::from_approximation(&post.approx),
        elbo_train: if post.method == "laplace" {
            None
        } else {
            post.objective
        },
        elbo_fresh,
        log_evidence: post.log_evidence,
        theta: theta_values(model, &post.theta),
        khat,
        predict,
        trace: post.trace.clone(),
        notes,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

fn uses_samples(method: &str) -> bool {
    infer_keys::key_spec("samples").is_some_and(|k| k.methods.includes(method))
}

/// The ELBO estimated from draws of q: mean of log p̃ − log q, with its standard error.
fn draw_elbo(lp: &[f64], log_q: &[f64]) -> Estimate {
    let d: Vec<f64> = lp.iter().zip(log_q).map(|(p, q)| p - q).collect();
    let (value, se) = crate::infer::objective::mean_se(&d);
    Estimate { value, se }
}

/// CmdStan column names and the constrained draws (n_draws × columns) of every parameter
/// and reported `let`.
fn constrained_draws(
    model: &LogJoint,
    theta: &DVector<f64>,
    w: &DMatrix<f64>,
) -> (Vec<String>, DMatrix<f64>) {
    let blocks = model.constrain(theta, w);
    let shapes: Vec<Shape> = model
        .params
        .iter()
        .chain(&model.reported)
        .map(|p| p.shape)
        .collect();
    let mut names = Vec::new();
    for ((name, _), shape) in blocks.iter().zip(&shapes) {
        names.extend(crate::report::cmdstan_names(name, &shape_dims(*shape)));
    }
    let mut draws = DMatrix::zeros(w.ncols(), names.len());
    let mut c0 = 0;
    for (_, block) in &blocks {
        // block is (entries × S): transpose into S × entries.
        draws.columns_mut(c0, block.nrows()).copy_from(&block.transpose());
        c0 += block.nrows();
    }
    (names, draws)
}

fn shape_dims(shape: Shape) -> Vec<usize> {
    match shape {
        Shape::Scalar => vec![],
        Shape::Vector(n) => vec![n],
        Shape::Matrix(r, c) => vec![r, c],
    }
}

/// For each report column, the coordinate of w it equals when the parameter is an
/// unconstrained real, vector or matrix.
fn identity_columns(model: &LogJoint, n_columns: usize) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(n_columns);
    for p in &model.params {
        let n = p.shape.size();
        for i in 0..n {
            out.push(p.constraint.is_none().then_some(p.offset + i));
        }
    }
    out.resize(n_columns, None);
    out
}

/// Hyperparameters as (CmdStan name, constrained value).
fn theta_values(model: &LogJoint, theta: &DVector<f64>) -> Vec<(String, f64)> {
    let values = model.constrain_theta(theta);
    let mut out = Vec::new();
    for (p, v) in model.hypers.iter().zip(values) {
        let names = crate::report::cmdstan_names(&p.name, &shape_dims(p.shape));
        out.extend(names.into_iter().zip(v));
    }
    out
}

/// `predict` over `n` fresh posterior draws, in chunks of draws so that memory stays
/// bounded: the joint test LPD (eq. 13), the pointwise lppd, and error rate or MSE.
fn run_predict(model: &LogJoint, post: &Posterior, n: usize, rng: &mut StdRng) -> PredictReport {
    let mut joint = Vec::with_capacity(n);
    let mut pointwise = RowLogSumExp::default();
    let mut quantity_sum: Vec<(String, Vec<f64>)> = Vec::new();
    let mut observed = Vec::new();
    let mut done = 0;
    while done < n {
        let c = PREDICT_CHUNK.min(n - done);
        let w = post.draw(c, rng);
        let pred = model
            .predict(&post.theta, &w)
            .expect("the model has a predict graph");
        if done == 0 {
            observed = pred.observed.clone();
        }
        joint.extend(pred.loglik.column_iter().map(|col| col.sum()));
        pointwise.add(&pred.loglik);
        accumulate_quantities(&mut quantity_sum, &pred.quantities, c as f64);
        done += c;
    }
    let log_n = (n as f64).ln();
    let test_lpd = log_sum_exp(&joint) - log_n;
    let lppd = pointwise.values().iter().map(|v| v - log_n).sum();
    let means: Vec<(String, Vec<f64>)> = quantity_sum
        .into_iter()
        .map(|(name, v)| (name, v.into_iter().map(|x| x / n as f64).collect()))
        .collect();
    PredictReport {
        n_test: pointwise.rows(),
        draws: n,
        test_lpd,
        lppd,
        metric: predict_metric(&means, &observed),
    }
}

/// log Σ_s exp(x_is) per row i, accumulated over column blocks (chunks of draws) in one
/// pass per block with no allocation per row: a running maximum and a scaled sum per row.
#[derive(Debug, Default)]
struct RowLogSumExp {
    max: Vec<f64>,
    sum: Vec<f64>,
}

impl RowLogSumExp {
    fn rows(&self) -> usize {
        self.max.len()
    }

    /// Fold in the columns of `x` (rows × draws, column-major, so swept column by column).
    fn add(&mut self, x: &DMatrix<f64>) {
        if self.max.is_empty() {
            self.max = vec![f64::NEG_INFINITY; x.nrows()];
            self.sum = vec![0.0; x.nrows()];
        }
        let mut new_max = self.max.clone();
        for col in x.column_iter() {
            for (m, v) in new_max.iter_mut().zip(col.iter()) {
                *m = m.max(*v);
            }
        }
        for ((s, m_old), m_new) in self.sum.iter_mut().zip(&self.max).zip(&new_max) {
            if m_new.is_finite() && *s > 0.0 {
                *s *= (m_old - m_new).exp();
            }
        }
        for col in x.column_iter() {
            for ((s, m), v) in self.sum.iter_mut().zip(&new_max).zip(col.iter()) {
                if m.is_finite() {
                    *s += (v - m).exp();
                }
            }
        }
        self.max = new_max;
    }

    /// log Σ exp per row (−∞ for a row with no finite value; NaN when a NaN was seen).
    fn values(&self) -> Vec<f64> {
        self.max
            .iter()
            .zip(&self.sum)
            .map(|(m, s)| if m.is_finite() { m + s.ln() } else { *m })
            .collect()
    }
}

fn accumulate_quantities(sum: &mut Vec<(String, Vec<f64>)>, chunk: &[(String, Vec<f64>)], weight: f64) {
    if sum.is_empty() {
        *sum = chunk
            .iter()
            .map(|(n, v)| (n.clone(), vec![0.0; v.len()]))
            .collect();
    }
    for ((_, acc), (_, v)) in sum.iter_mut().zip(chunk) {
        for (a, x) in acc.iter_mut().zip(v) {
            *a += weight * x;
        }
    }
}

/// Error rate for labels (from draw-averaged probabilities), MSE for continuous outcomes.
fn predict_metric(
    means: &[(String, Vec<f64>)],
    observed: &[crate::graph::Observed],
) -> Option<PredictMetric> {
    let mut errors = 0.0;
    let mut sq = 0.0;
    let mut count = 0usize;
    let mut labels = false;
    for ((_, q), obs) in means.iter().zip(observed) {
        use crate::graph::Observed;
        match obs {
            Observed::Binary(y) => {
                labels = true;
                for (p, yi) in q.iter().zip(y) {
                    errors += f64::from(u8::from((*p > 0.5) != (*yi == 1)));
                    count += 1;
                }
            }
            Observed::Categorical { y, k } => {
                labels = true;
                let n = y.len();
                for (i, yi) in y.iter().enumerate() {
                    let best = (0..*k)
                        .max_by(|a, b| q[i + a * n].total_cmp(&q[i + b * n]))
                        .unwrap_or(0);
                    errors += f64::from(u8::from(best as i64 + 1 != *yi));
                    count += 1;
                }
            }
            Observed::Continuous(y) => {
                for (m, yi) in q.iter().zip(y) {
                    sq += (m - yi).powi(2);
                    count += 1;
                }
            }
            Observed::Other => {}
        }
    }
    match (count, labels) {
        (0, _) => None,
        (_, true) => Some(PredictMetric::ErrorRate(errors / count as f64)),
        (_, false) => Some(PredictMetric::Mse(sq / count as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_log_sum_exp_over_chunks_equals_the_direct_sum() {
        let x = DMatrix::from_fn(3, 7, |i, j| -((i * 7 + j) as f64).sin() * 40.0 - i as f64 * 300.0);
        let mut acc = RowLogSumExp::default();
        acc.add(&x.columns(0, 2).into_owned());
        acc.add(&x.columns(2, 4).into_owned());
        acc.add(&x.columns(6, 1).into_owned());
        for (i, got) in acc.values().iter().enumerate() {
            let row: Vec<f64> = x.row(i).iter().copied().collect();
            let want = log_sum_exp(&row);
            assert!(
                (got - want).abs() < 1e-12 * want.abs().max(1.0),
                "row {i}: {got} vs {want}"
            );
        }
        assert_eq!(acc.rows(), 3);
    }

    #[test]
    fn row_log_sum_exp_keeps_minus_infinity_for_impossible_rows() {
        let x = DMatrix::from_row_slice(
            2,
            2,
            &[f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY],
        );
        let mut acc = RowLogSumExp::default();
        acc.add(&x);
        let v = acc.values();
        assert!(v[0].is_infinite() && v[0] < 0.0, "{}", v[0]);
        assert!(v[1].abs() < 1e-15);
    }
}
