//! The `mvi run` pipeline as a library function, shared by the CLI, the REPL and the tests.
//!
//! Input: a checked model, its lowered [`LogJoint`] and the run's [`InferOptions`]. Output: a
//! [`FitReport`] with everything the reports render: the method's [`Posterior`], constrained
//! draws, lp/log q per draw, the fresh-draw ELBO, PSIS k̂ and the `predict` results. All
//! randomness comes from one generator seeded by `infer { seed }`, so the same inputs give
//! the same report (apart from the wall time).

mod auto;
pub mod loo;
mod output;
pub mod prior;
pub mod sbc;

pub use output::{write_output_dir, write_output_dir_with_pairs, OUTPUT_FILES};

use std::time::Instant;

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::check::{infer_keys, memory};
use crate::check::{TStmt, TypedModel};
use crate::density::{Counting, Evals, LogDensity, Want};
use crate::diagnostic::Diagnostic;
use crate::graph::logjoint::Structure;
use crate::graph::predict::PredictSums;
use crate::graph::{self, generate, Reading};
use crate::graph::{LogJoint, Shape};
use crate::infer::{registry, timing, InferOptions, Observer, OptionValue};
use crate::posterior::{log_sum_exp, psis, Approximation, Posterior};
use crate::report::mcmc::McmcReport;
use crate::report::{ApproxSummary, Estimate, FitReport, PredictMetric, PredictReport};

/// Draws evaluated together by `predict`; bounds memory (draws × test points per node).
const PREDICT_CHUNK: usize = 2048;

/// Keep freed memory in the process instead of returning it to the system at once.
///
/// A run allocates and frees the same large blocks many times (draws × test points per
/// `predict` chunk, the tapes of every batched evaluation). With glibc's defaults, blocks
/// above its adaptive mmap threshold are mapped and unmapped each time and every page is
/// faulted in again: on the issue-4 banana problem that was 0.35 s of system time against
/// 0.55 s of user time for `laplace` (measured with /usr/bin/time; with this setting 0.02 s).
/// Fixing the mmap threshold at 32 MiB (glibc's largest on 64-bit) and the trim threshold at
/// 256 MiB keeps such blocks on the heap for reuse; both are needed (either alone left the
/// system time unchanged). A top pad of 256 MiB (address space only; pages are touched when
/// used) makes the heaps of the worker threads grow in large steps instead of one per
/// allocation: the Cauchy example's `vi_diag` run 87 → 77 ms median of 15 (page-fault and
/// TLB-shootdown time in the kernel). Call once at process start; a no-op off glibc.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_TOP_PAD: i32 = -2;
        const M_MMAP_THRESHOLD: i32 = -3;
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only changes glibc's allocation thresholds, takes plain integers and
        // is called before any other thread exists; a rejected value leaves the default.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
            mallopt(M_TOP_PAD, 256 << 20);
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

/// Whether a Gaussian VI method will optimise a minibatch ELBO on `model` with these options
/// (`batch` ≥ 1, or `auto` on at least [`crate::infer::minibatch::AUTO_FROM`] rows).
fn minibatch(options: &InferOptions, model: &LogJoint) -> bool {
    let Some(n) = model.rows() else {
        return false;
    };
    match options
        .entries
        .iter()
        .rev()
        .find(|e| e.key == "batch")
        .map(|e| &e.value)
    {
        Some(OptionValue::Int(_)) => true,
        Some(OptionValue::Ident(w)) if w == "full" => false,
        _ => n >= crate::infer::minibatch::AUTO_FROM,
    }
}

/// What `model` offers a minibatch objective: its rows, or the term that is not a sum over
/// rows and why.
fn rows_offer(model: &LogJoint) -> infer_keys::RowsOffer {
    use crate::graph::rows::RowSplit;
    use infer_keys::RowsOffer;
    if let Some(n) = model.rows() {
        return RowsOffer::Rows(n);
    }
    let g = &model.graph;
    match RowSplit::of(g) {
        Err(e) => RowsOffer::NotRows {
            site: g.target_site(g.targets[e.target]),
            reason: e.reason,
        },
        Ok(None) => RowsOffer::NotRows {
            site: None,
            reason: "no `~` reads rows of the data".into(),
        },
        Ok(Some(_)) => RowsOffer::NotRows {
            site: None,
            reason: "its terms do not add up to the log density row by row".into(),
        },
    }
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
            None => match infer_keys::default_for(spec, &method) {
                Some(d) => d.to_string(),
                None if spec.key == "blocks" => "(one block per parameter)".to_string(),
                // a switch that is off unless given (`predictive`, `loo`)
                None => continue,
            },
        };
        out.push((spec.key.to_string(), text));
    }
    out
}

fn option_text(v: &OptionValue) -> String {
    match v {
        OptionValue::Int(i) => i.to_string(),
        // `1e300` stays short, as it was written
        OptionValue::Real(x) if *x != 0.0 && (x.abs() >= 1e6 || x.abs() < 1e-4) => format!("{x:e}"),
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
    if method_name(options) == "auto" {
        return auto::fit_auto(model, options, info, obs);
    }
    let method = match crate::infer::nuts::settings_and_init(options) {
        Ok((settings, Some(init))) if method_name(options) == "nuts" => {
            started_nuts(model, options, info, settings, init)?
        }
        _ => registry::build(options)?,
    };
    if model.dim() == 0 {
        return Err(Diagnostic::plain(
            "mvi::infer::no_params",
            "the model has no parameters (D = 0): there is no posterior to approximate",
        )
        .with_help(
            "declare the unknowns in a `param { … }` block (`mu: real`); a `param` whose sizes \
             come from the data (`vector[K]`) has no entries when the data give K = 0",
        ));
    }
    infer_keys::check_batch(options, method.name(), &rows_offer(model))?;
    let minibatch = minibatch(options, model)
        && matches!(
            method.name(),
            "mvi_mu" | "mvi_eig" | "mvi_lr" | "vi_diag" | "vi_full"
        );
    infer_keys::check_against_model(options, method.name(), model.dim(), minibatch)?;
    memory::check_memory(
        options,
        method.name(),
        &footprint(model),
        memory::available_memory(),
    )?;
    method
        .supports(model)
        .map_err(|e| method_error(method.name(), &e))?;
    let seed = option_int(options, "seed", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let start = Instant::now();
    // Every method sees the model through the counter: its cost in evaluations is
    // measured here once, with no code in the methods.
    let counted = Counting::new(model);
    let post = {
        let _t = timing::span("fit (whole method)");
        method
            .fit(&counted, &mut rng, obs)
            .map_err(|e| method_error(method.name(), &e))?
    };
    let interrupted = post.notes.iter().any(|n| n.contains("interrupted"));
    let mut report = assemble(model, options, info, &post, &mut rng, start, interrupted);
    report.evals = counted.evals();
    if let Some(d) = diverged(method.name(), &report, declared_columns(model)) {
        return Err(d);
    }
    Ok((post, report))
}

/// `nuts` started from a fit of `init` (`laplace`, `mvi_lr`, `pathfinder`): its mean and a
/// factor of its covariance (Cholesky; the marginal sds when that fails).
fn started_nuts(
    model: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    settings: crate::infer::nuts::Settings,
    init: &str,
) -> Result<Box<dyn crate::infer::Method>, Diagnostic> {
    // the options that apply to the method started from, under its name
    let mut first = options.clone();
    first.entries.retain(|e| {
        e.key != "method"
            && infer_keys::key_spec_for(&e.key, Some(init)).is_some_and(|s| s.methods.includes(init))
    });
    first.entries.push(crate::options::InferOption {
        key: "method".into(),
        value: OptionValue::Ident(init.into()),
        span: None,
    });
    let (post, _) = fit(model, &first, info, &mut crate::infer::Silent)?;
    let mean = post.mean();
    let cov = post.cov();
    let factor = match cov.clone().cholesky() {
        Some(c) => c.l(),
        None => DMatrix::from_diagonal(&cov.diagonal().map(|v| v.max(f64::MIN_POSITIVE).sqrt())),
    };
    Ok(Box::new(crate::infer::nuts::StartedNuts {
        settings,
        start: crate::infer::nuts::Start {
            method: init.to_string(),
            mean,
            factor,
        },
    }))
}

/// Build what `options` ask of the model for after the fit: the replicates of
/// `predictive = true` ([`LogJoint::replicates`]).
///
/// # Errors
/// `predictive` on a model with no `~` on data, with a span at the first `~` and a help line.
pub fn attach_after_fit(
    typed: &TypedModel,
    joint: &mut LogJoint,
    options: &InferOptions,
) -> Result<(), Diagnostic> {
    if option_bool(options, "predictive") && joint.replicates.is_none() {
        let (mut reps, skipped) = graph::lower_observed(typed, Reading::Replicate)?;
        if reps.outputs.is_empty() {
            return Err(nothing_observed(typed, "--predictive"));
        }
        reps.notes = skipped
            .iter()
            .map(|s| {
                format!(
                    "`{s} ~ …` is not replicated: only a data variable, possibly indexed, on the left \
                     of `~` has a `_rep`"
                )
            })
            .collect();
        if let Some(gen) = &joint.generated {
            if let Some(o) = reps
                .outputs
                .iter()
                .find(|o| gen.outputs.iter().any(|g| g.name == o.name))
            {
                return Err(Diagnostic::plain(
                    "mvi::run::name_clash",
                    format!("`{}` is both an output of `generated` and the replicate `--predictive` draws", o.name),
                )
                .with_help(format!(
                    "rename the `let {}` of `generated`, or leave out `--predictive` (the block already draws it)",
                    o.name
                )));
            }
        }
        joint.replicates = Some(reps);
    }
    if option_bool(options, "loo") && joint.log_lik.is_none() {
        let (ll, _) = graph::lower_observed(typed, Reading::LogLik)?;
        if ll.outputs.is_empty() {
            return Err(nothing_observed(typed, "LOO"));
        }
        joint.log_lik = Some(ll);
    }
    Ok(())
}

pub(crate) fn has_data_tilde(s: &TStmt) -> bool {
    match s {
        TStmt::Tilde { lhs, .. } => lhs.stage == crate::check::Stage::Const,
        TStmt::Target(e) => e.scores_data(),
        TStmt::For { iterations, .. } => iterations.iter().flatten().any(has_data_tilde),
        TStmt::If { then, otherwise, .. } => then.iter().chain(otherwise).any(has_data_tilde),
        _ => false,
    }
}

/// A diagnostic for a request that needs a `~` on data in a model that has none: at the
/// model's first `~` when it has one.
pub fn nothing_observed(typed: &TypedModel, what: &str) -> Diagnostic {
    let first = typed.model.iter().find_map(first_tilde);
    let msg = format!("{what} needs a `~` with data on its left, and the model has none");
    let help = "write the likelihood as `y ~ dist(…)` or `target += dist_lpdf(y | …)` with `y` \
                declared in `data`";
    match first {
        Some(span) => Diagnostic::error("mvi::run::no_observations", msg, typed.source.clone())
            .with_label(span, "this `~` is on a parameter")
            .with_help(help),
        None => Diagnostic::plain("mvi::run::no_observations", msg).with_help(help),
    }
}

/// The span of the outcome of the first `~` in a statement, inside loops and branches too.
fn first_tilde(s: &TStmt) -> Option<crate::syntax::span::Span> {
    match s {
        TStmt::Tilde { lhs, .. } => Some(lhs.span),
        TStmt::For { iterations, .. } => iterations.iter().flatten().find_map(first_tilde),
        TStmt::If { then, otherwise, .. } => then.iter().chain(otherwise).find_map(first_tilde),
        _ => None,
    }
}

/// What the model adds to the size of a run's buffers, for [`memory::check_memory`].
fn footprint(model: &LogJoint) -> memory::Footprint {
    memory::Footprint {
        dim: model.dim(),
        theta_dim: model.graph.theta_dim,
        // the report's columns, and per draw the outputs of `generated`, the replicates and
        // the pointwise log-likelihoods
        columns: declared_columns(model)
            + [&model.generated, &model.replicates, &model.log_lik]
                .into_iter()
                .flatten()
                .flat_map(|g| &g.outputs)
                .map(|o| o.shape.size())
                .sum::<usize>(),
        params: model.params.len(),
        predict: model.predict.is_some(),
    }
}

/// The number of report columns of the parameters and the top-level `let`s (before those of
/// `generated` and the replicates).
fn declared_columns(model: &LogJoint) -> usize {
    model
        .params
        .iter()
        .chain(&model.reported)
        .map(|p| p.shape.size())
        .sum()
}

/// The draws of a fit that ran away (an improper posterior, or a method that diverged)
/// hold infinities or NaN, or overflow their mean or variance: report that with the parameters it hit rather than print a
/// summary of NaN. Only the first `declared` columns (parameters and `let`s) are looked at.
fn diverged(method: &str, report: &FitReport, declared: usize) -> Option<Diagnostic> {
    let bad: Vec<&str> = report
        .columns
        .iter()
        .take(declared)
        .enumerate()
        .filter(|&(j, _)| !finite_moments(report.draws.column(j).iter().copied()))
        .map(|(_, name)| name.as_str())
        .collect();
    let shown = bad
        .iter()
        .take(5)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let more = if bad.len() > 5 {
        format!(" and {} more", bad.len() - 5)
    } else {
        String::new()
    };
    (!bad.is_empty()).then(|| {
        Diagnostic::plain(
            "mvi::infer::diverged",
            format!("{method} diverged: its draws of {shown}{more} run off to infinity"),
        )
        .with_help(
            "the approximation ran off to infinity, so there is no posterior to report. Usually the \
             posterior is improper: a parameter with no prior (or a flat one) that the data do not \
             determine, or a likelihood that grows without bound (a scale → 0 at a single \
             observation). Give every parameter a proper prior (`x ~ normal(0, 10)`, \
             `sigma ~ half_normal(1)`); if the model is proper, try another method with `--method`",
        )
    })
}

/// Turn a method's numerical failure into a diagnostic with a suggestion.
fn method_error(method: &str, e: &crate::infer::Error) -> Diagnostic {
    let help = match e {
        crate::infer::Error::NoMode(no_mode) => &no_mode.help(),
        crate::infer::Error::NotNegativeDefinite { max_eig, min_eig } if is_flat(*max_eig, *min_eig) => {
            "log p̃ is flat along some direction at the mode: a parameter with no prior (or a \
             flat one) that the data do not determine makes the posterior improper, and no method \
             can approximate it. Give every parameter a proper prior (`x ~ normal(0, 10)`, \
             `sigma ~ half_normal(1)`)"
        }
        crate::infer::Error::NotNegativeDefinite { .. } => {
            "the mode is not a proper maximum: check the priors (an improper or flat direction); \
             a density with kinks (`laplace`, `abs`, `fmin`, `fmax`) has no useful curvature at \
             them. Try `--method pmfvb`, `split_mf`, `vi_diag` or `vi_full`, which start from a \
             vi_diag fit from the initial point when the Laplace fit fails (the MVI methods are \
             built on it)"
        }
        crate::infer::Error::NonFiniteStart { .. } => {
            "log p̃ or its gradient is −∞ or NaN where the method starts: check that each \
             parameter's declared constraint matches the support of its distribution \
             (`sigma: real<lower=0>` for `sigma ~ gamma(…)`) and of the functions applied to it \
             (`sqrt(x)` at x = 0, where w = 0 starts an unbounded `x`), that computed arguments \
             stay valid, and that every parameter has a proper prior (an improper posterior \
             sends the start off to infinity)"
        }
        _ => "try another method with `--method`",
    };
    Diagnostic::plain("mvi::infer::failed", format!("{method} failed: {e}")).with_help(help)
}

/// Whether draws are finite and so are their mean and variance (draws near ±1.8e308 are
/// finite, but their summary is not).
fn finite_moments(draws: impl Iterator<Item = f64> + Clone) -> bool {
    let n = draws.clone().count().max(1) as f64;
    let mean = draws.clone().sum::<f64>() / n;
    let var = draws.clone().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    draws.into_iter().all(f64::is_finite) && mean.is_finite() && var.is_finite()
}

/// Whether the Hessian's largest eigenvalue is zero to working precision (relative to the
/// largest curvature): a flat direction, not a saddle or a kink.
fn is_flat(max_eig: f64, min_eig: f64) -> bool {
    /// Eigenvalues this small relative to the largest curvature are rounding.
    const FLAT_REL: f64 = 1e-10;
    max_eig.abs() <= FLAT_REL * min_eig.abs().max(1.0)
}

pub(crate) fn assemble(
    model: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    post: &Posterior,
    rng: &mut StdRng,
    start: Instant,
    interrupted: bool,
) -> FitReport {
    let n_draws = option_int(options, "draws", 1000).max(1) as usize;
    // MCMC draws are reported as they are, every chain in order
    let chains = match &post.approx {
        Approximation::Draws(c) => Some(c),
        _ => None,
    };
    let resample = option_bool(options, "psis_resample") && post.resampling.is_none();
    let resampled = resample
        .then(|| {
            let _t = timing::span("report: PSIS resampling");
            resampled_draws(model, post, n_draws, rng)
        })
        .flatten();
    let (w, lp, log_q, khat, pool_elbo) = match resampled {
        Some(r) => (
            r.w,
            r.lp,
            r.log_q,
            r.resampling.khat,
            Some((r.elbo, r.resampling)),
        ),
        None => {
            let t = timing::span("report: draws, log p̃, log q");
            let w = chains.map_or_else(|| post.draw(n_draws, rng), |c| c.draws.clone());
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
            let khat = khat.or(post.resampling.and_then(|r| r.khat));
            (w, lp, log_q, khat, None)
        }
    };
    let resampling = pool_elbo.map(|(_, r)| r).or(post.resampling);
    let elbo_fresh = match pool_elbo {
        Some((e, _)) => Some(e),
        None => post
            .fresh_elbo
            .map(|(value, se)| Estimate { value, se })
            .or_else(|| log_q.as_ref().map(|lq| draws_elbo(model, post, &lp, lq, rng))),
    };
    let t = timing::span("report: constrained draws");
    let (mut columns, mut draws) = constrained_draws(model, &post.theta, &w);
    drop(t);
    let mut generated_notes = Vec::new();
    let mut replicated = Vec::new();
    for (gen, purpose) in [(&model.generated, "generated"), (&model.replicates, "replicates")] {
        let Some(gen) = gen else { continue };
        generated_notes.extend(gen.notes.iter().cloned());
        if purpose == "replicates" {
            let mut c = columns.len();
            for o in &gen.outputs {
                replicated.push(crate::report::Replicated {
                    name: o.name.trim_end_matches("_rep").to_string(),
                    observed: o.observed.clone().unwrap_or_default(),
                    first_column: c,
                });
                c += o.shape.size();
            }
        }
        let _t = timing::span("report: generated quantities");
        let seed = generate::stream_seed(option_int(options, "seed", 0), purpose);
        let out = generate::eval_generated(gen, post.theta.as_slice(), &w, seed);
        generated_notes.extend(out.notes());
        (columns, draws) = append_outputs(columns, draws, &gen.outputs, &out);
    }
    let log_lik = model.log_lik.as_ref().map(|gen| {
        let _t = timing::span("report: pointwise log-likelihood");
        let out = generate::eval_generated(gen, post.theta.as_slice(), &w, 0);
        let vars: Vec<(String, usize)> = gen
            .outputs
            .iter()
            .map(|o| (o.name.clone(), o.shape.size()))
            .collect();
        let values = out.by_draw();
        // draws of q carry the correction; MCMC and importance-resampled draws are (close
        // to) posterior draws already
        let log_correction = match (&chains, &log_q, resampling) {
            (None, Some(lq), None) => Some(lp.iter().zip(lq).map(|(p, q)| p - q).collect()),
            _ => None,
        };
        let observed = gen
            .outputs
            .iter()
            .flat_map(|o| o.observed.iter().flatten().copied())
            .collect();
        crate::report::LogLikDraws {
            vars,
            values,
            observed,
            log_correction,
        }
    });
    let mcmc = chains.map(|c| McmcReport::new(c, &draws));
    let test_draws = option_int(options, "test_draws", 10_000).max(1) as usize;
    let predict = model.predict.as_ref().map(|_| {
        let _t = timing::span("predict");
        let seed = generate::stream_seed(option_int(options, "seed", 0), "predict");
        run_predict(model, post, test_draws, rng, seed)
    });
    let mut notes = post.notes.clone();
    if let Some(m) = &mcmc {
        notes.extend(m.warnings(&columns));
    }
    notes.extend(non_finite_notes(post, &lp, log_q.as_deref(), elbo_fresh));
    notes.extend(generated_notes);
    notes.extend(unit_vector_note(model, &post.method));
    if let Some(r) = resampling.filter(|r| r.khat.is_some_and(|k| k > psis::KHAT_OK)) {
        notes.push(crate::report::summary::resampling_warning(&r));
    } else if let Some(k) = khat {
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
        converged: post.converged && !mcmc.as_ref().is_some_and(McmcReport::troubled),
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
        resampling,
        predict,
        trace: post.trace.clone(),
        notes,
        version: env!("CARGO_PKG_VERSION").to_string(),
        evals: Evals::default(),
        mcmc,
        reference: None,
        log_lik,
        replicated,
        ladder: Vec::new(),
    }
}

/// Whether a boolean option is given as `true`.
fn option_bool(options: &InferOptions, key: &str) -> bool {
    matches!(
        options.entries.iter().rev().find(|e| e.key == key).map(|e| &e.value),
        Some(OptionValue::Ident(w)) if w == "true"
    )
}

/// How many draws of q `psis_resample` pools per output draw (as multi-path Pathfinder's 4
/// paths × 1000 draws → 1000).
const RESAMPLE_POOL: usize = 4;

/// Draws importance-resampled toward the posterior, with what the resampling found.
struct Resampled {
    w: DMatrix<f64>,
    lp: Vec<f64>,
    log_q: Option<Vec<f64>>,
    resampling: psis::Resampling,
    /// The ELBO from the pool (draws of q), before resampling.
    elbo: Estimate,
}

/// `psis_resample = true`: [`RESAMPLE_POOL`] × `n` draws of q, their log importance ratios
/// log p̃ − log q Pareto-smoothed, and `n` of them drawn with replacement by the smoothed
/// weights. `None` where q has no density.
fn resampled_draws(model: &LogJoint, post: &Posterior, n: usize, rng: &mut StdRng) -> Option<Resampled> {
    let pool = post.draw(RESAMPLE_POOL * n, rng);
    let log_q: Vec<f64> = post.log_q(&pool)?.iter().copied().collect();
    let lp: Vec<f64> = model
        .eval(&post.theta, &pool, Want::VALUE)
        .values
        .iter()
        .copied()
        .collect();
    let ratios: Vec<f64> = lp.iter().zip(&log_q).map(|(p, q)| p - q).collect();
    let smoothed = psis::smooth(&ratios);
    let idx = psis::resample(&smoothed.log_weights, n, rng);
    Some(Resampled {
        w: DMatrix::from_fn(pool.nrows(), n, |i, j| pool[(i, idx[j])]),
        lp: idx.iter().map(|&i| lp[i]).collect(),
        log_q: Some(idx.iter().map(|&i| log_q[i]).collect()),
        resampling: psis::Resampling {
            khat: smoothed.khat,
            ess: smoothed.ess(),
            pool: pool.ncols(),
            resampled: true,
        },
        elbo: draw_elbo(&lp, &log_q),
    })
}

/// Notes for what must not pass silently on a q with a density: log q that cannot be
/// evaluated or is not finite at some draws, log p̃ not finite at some draws, and a fresh
/// ELBO that is not finite. Each names its cause; k̂ and the ELBO are then not available.
fn non_finite_notes(
    post: &Posterior,
    lp: &[f64],
    log_q: Option<&[f64]>,
    elbo: Option<Estimate>,
) -> Vec<String> {
    if matches!(post.approx, Approximation::Particles(_) | Approximation::Draws(_)) {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let count = |x: &[f64]| x.iter().filter(|v| !v.is_finite()).count();
    match log_q {
        None => notes.push(
            "log q is not available: the covariance root of q is singular (log det is −∞), so \
             q has no density; the draws' log_q__, PSIS k̂ and the fresh ELBO are missing"
                .to_string(),
        ),
        Some(lq) if count(lq) > 0 => notes.push(format!(
            "log q is not finite at {} of {} draws (log_q__): PSIS k̂ and the fresh ELBO are not \
             available",
            count(lq),
            lq.len()
        )),
        Some(_) => {}
    }
    let elbo_bad = elbo.is_some_and(|e| !e.value.is_finite());
    if elbo_bad && count(lp) > 0 {
        notes.push(format!(
            "log p̃ is not finite at {} of {} draws of q (lp__): q puts mass where the model has \
             none, so the fresh ELBO is not available (PSIS k̂ gives those draws weight 0)",
            count(lp),
            lp.len()
        ));
    }
    if let Some(e) = elbo.filter(|e| !e.value.is_finite()) {
        if notes.is_empty() && post.notes.iter().all(|n| !n.contains("ELBO is not finite")) {
            notes.push(format!(
                "the fresh-draw ELBO is {}: log p̃ − log q is not finite at some fresh draws of q",
                e.value
            ));
        }
    }
    notes
}

fn uses_samples(method: &str) -> bool {
    infer_keys::key_spec("samples").is_some_and(|k| k.methods.includes(method))
}

/// The ELBO from the output draws of a q with a density (methods that report no fresh ELBO
/// of their own), topped up with further draws of q to at least
/// [`crate::infer::objective::MIN_FRESH_DRAWS`], so that `--set draws=2` does not give a
/// standard error from 2 values. The extra draws follow the output draws in the random
/// stream, so the estimate is the one `draws = 1000` gives.
fn draws_elbo(model: &LogJoint, post: &Posterior, lp: &[f64], log_q: &[f64], rng: &mut StdRng) -> Estimate {
    let extra = crate::infer::objective::MIN_FRESH_DRAWS.saturating_sub(lp.len());
    if extra == 0 {
        return draw_elbo(lp, log_q);
    }
    let w = post.draw(extra, rng);
    let more_lp = model.eval(&post.theta, &w, Want::VALUE).values;
    let Some(more_lq) = post.log_q(&w) else {
        return draw_elbo(lp, log_q);
    };
    let lp: Vec<f64> = lp.iter().chain(more_lp.iter()).copied().collect();
    let log_q: Vec<f64> = log_q.iter().chain(more_lq.iter()).copied().collect();
    draw_elbo(&lp, &log_q)
}

/// The ELBO estimated from draws of q: mean of log p̃ − log q, with its standard error.
fn draw_elbo(lp: &[f64], log_q: &[f64]) -> Estimate {
    let d: Vec<f64> = lp.iter().zip(log_q).map(|(p, q)| p - q).collect();
    let (value, se) = crate::infer::objective::mean_se(&d);
    Estimate { value, se }
}

/// A warning when `laplace` fits a model with a `unit_vector`: the density of its K free
/// coordinates (the direction times a standard normal radius, Stan's transform) peaks at the
/// origin, where the direction is undefined, so the mode and Hessian say nothing about the
/// direction's posterior.
fn unit_vector_note(model: &LogJoint, method: &str) -> Option<String> {
    if method != "laplace" {
        return None;
    }
    let p = model
        .params
        .iter()
        .find(|p| p.structure == Some(Structure::Type(crate::graph::transform::TypeKind::UnitVector)))?;
    Some(format!(
        "`{}` is a unit_vector: its coordinates have no useful mode (the density peaks where the \
         direction is undefined), so this Laplace fit does not describe its posterior; use \
         `vi_full`, `mvi_lr` or `nuts`",
        p.name
    ))
}

/// CmdStan column names and the constrained draws (n_draws × columns) of every parameter
/// and reported `let`.
pub(crate) fn constrained_draws(
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
        names.extend(crate::report::cmdstan_names(name, &shape.dims()));
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

/// The report's columns and draws with per-draw outputs appended (CmdStan's names,
/// `y_rep.3`), their values those of `values`.
fn append_outputs(
    mut columns: Vec<String>,
    draws: DMatrix<f64>,
    outputs: &[generate::Output],
    values: &generate::GeneratedDraws,
) -> (Vec<String>, DMatrix<f64>) {
    let c0 = columns.len();
    for o in outputs {
        columns.extend(crate::report::cmdstan_names(&o.name, &o.shape.dims()));
    }
    let new = values.by_draw();
    let mut out = draws.resize_horizontally(columns.len(), 0.0);
    out.columns_mut(c0, new.ncols()).copy_from(&new);
    (columns, out)
}

/// For each report column, the coordinate of w it equals when the parameter is an
/// unconstrained real, vector or matrix.
fn identity_columns(model: &LogJoint, n_columns: usize) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(n_columns);
    for p in &model.params {
        let n = p.shape.size();
        for i in 0..n {
            out.push(p.is_identity().then_some(p.offset + i));
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
        let names = crate::report::cmdstan_names(&p.name, &p.shape.dims());
        out.extend(names.into_iter().zip(v));
    }
    out
}

/// `predict` over `n` fresh posterior draws, drawn and reduced in blocks so that memory
/// stays bounded: the joint test LPD (eq. 13), the pointwise lppd, and error rate or MSE.
fn run_predict(model: &LogJoint, post: &Posterior, n: usize, rng: &mut StdRng, seed: u64) -> PredictReport {
    let mut sums = PredictSums::default();
    while sums.draws() < n {
        let c = PREDICT_CHUNK.min(n - sums.draws());
        let w = post.draw(c, rng);
        let block = model
            .predict_seeded(&post.theta, &w, seed, sums.draws())
            .expect("the model has a predict graph");
        sums.merge(block);
    }
    let log_n = (n as f64).ln();
    PredictReport {
        n_test: sums.pointwise.rows(),
        draws: n,
        test_lpd: log_sum_exp(&sums.joint) - log_n,
        lppd: sums.pointwise.values().iter().map(|v| v - log_n).sum(),
        metric: predict_metric(&sums.quantity_means(), &sums.observed),
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
    use crate::posterior::Gaussian;

    fn post(root: DMatrix<f64>) -> Posterior {
        Posterior {
            method: "laplace".into(),
            approx: Approximation::Gaussian(Gaussian {
                mean: DVector::zeros(root.nrows()),
                root,
            }),
            theta: DVector::zeros(0),
            objective: None,
            log_evidence: None,
            trace: Vec::new(),
            iterations: 0,
            converged: true,
            notes: Vec::new(),
            fresh_elbo: None,
            resampling: None,
        }
    }

    #[test]
    fn a_missing_or_non_finite_log_q_is_named_in_a_note() {
        let ok = post(DMatrix::identity(2, 2));
        assert!(non_finite_notes(&ok, &[-1.0, -2.0], Some(&[-1.0, -2.0]), None).is_empty());
        let singular = post(DMatrix::zeros(2, 2));
        let n = non_finite_notes(&singular, &[-1.0], None, None);
        assert!(n.len() == 1 && n[0].contains("singular"), "{n:?}");
        let n = non_finite_notes(&ok, &[-1.0, -2.0], Some(&[f64::NAN, -2.0]), None);
        assert!(n.len() == 1 && n[0].contains("1 of 2 draws"), "{n:?}");
        let bad = Some(Estimate {
            value: f64::NEG_INFINITY,
            se: f64::INFINITY,
        });
        let n = non_finite_notes(&ok, &[f64::NEG_INFINITY, -2.0], Some(&[-1.0, -2.0]), bad);
        assert!(
            n.len() == 1 && n[0].contains("log p̃ is not finite at 1 of 2") && n[0].contains("weight 0"),
            "{n:?}"
        );
    }
}
