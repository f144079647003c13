//! `fit.json` and the `--json` summary: every number of a fit as JSON.
//!
//! Input: a [`FitReport`]. Output: a pretty-printed JSON object. Non-finite numbers become
//! `null` (JSON has no NaN). Object keys are sorted, so output is byte-stable.

use super::{ApproxSummary, FitReport, PredictMetric, PredictReport};
use nalgebra::DMatrix;
use serde_json::{json, Map, Value};

/// The content of `fit.json`: the `--json` summary plus options, data files, version,
/// interruption flag and the per-iteration objective trace.
pub fn render_fit_json(r: &FitReport) -> String {
    let mut v = summary_value(r);
    if let Value::Object(m) = &mut v {
        m.insert("trace".into(), trace_value(r));
    }
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The summary object shared by `--json` and `fit.json`.
pub fn summary_value(r: &FitReport) -> Value {
    let mut m = Map::new();
    m.insert("mvi_version".into(), json!(r.version));
    m.insert("model".into(), json!(r.model_file));
    m.insert("method".into(), json!(r.method));
    m.insert("options".into(), options_value(&r.options));
    m.insert("seed".into(), json!(r.seed));
    m.insert("data_files".into(), json!(r.data_files));
    m.insert("dim".into(), json!(r.dim));
    m.insert("samples".into(), json!(r.samples));
    m.insert("draws".into(), json!(r.n_draws()));
    m.insert("iterations".into(), json!(r.iterations));
    m.insert("converged".into(), json!(r.converged));
    m.insert("interrupted".into(), json!(r.interrupted));
    m.insert("wall_time_s".into(), num(r.wall_time_s));
    m.insert("parameters".into(), parameters_value(r));
    m.insert("approximation".into(), approx_value(&r.approx));
    m.insert("elbo_train".into(), opt(r.elbo_train));
    m.insert(
        "elbo_fresh".into(),
        r.elbo_fresh
            .map_or(Value::Null, |e| json!({ "value": num(e.value), "se": num(e.se) })),
    );
    m.insert("log_evidence".into(), opt(r.log_evidence));
    m.insert("theta".into(), pairs_value(&r.theta));
    m.insert("khat".into(), opt(r.khat));
    if let Some(s) = &r.resampling {
        m.insert(
            "psis_resample".into(),
            json!({ "khat": opt(s.khat), "ess": num(s.ess), "pool": s.pool, "resampled": s.resampled }),
        );
    }
    m.insert(
        "predict".into(),
        r.predict.as_ref().map_or(Value::Null, predict_value),
    );
    m.insert("notes".into(), json!(r.notes));
    if !r.ladder.is_empty() {
        let rungs: Vec<Value> = r
            .ladder
            .iter()
            .map(|g| {
                json!({
                    "method": g.method, "khat": opt(g.khat), "wall_time_s": num(g.wall_time_s),
                    "accepted": g.accepted, "verdict": g.verdict,
                })
            })
            .collect();
        m.insert("ladder".into(), json!(rungs));
    }
    // a report assembled by hand (not by `run::fit`) has no counts
    if r.evals.density > 0 {
        m.insert(
            "evals".into(),
            json!({
                "density": r.evals.density, "gradient": r.evals.gradient,
                "hessian": r.evals.hessian, "hvp": r.evals.hvp,
            }),
        );
    }
    if let Some(mc) = &r.mcmc {
        m.insert("mcmc".into(), mcmc_value(mc, &r.columns));
    }
    Value::Object(m)
}

/// Chains, divergences, tree-depth hits, E-BFMI and per-column R̂ and ESS of an MCMC run.
fn mcmc_value(mc: &super::mcmc::McmcReport, columns: &[String]) -> Value {
    let mut per = Map::new();
    for (name, c) in columns.iter().zip(&mc.convergence) {
        per.insert(
            name.clone(),
            json!({ "rhat": num(c.rhat), "ess_bulk": num(c.ess_bulk), "ess_tail": num(c.ess_tail) }),
        );
    }
    json!({
        "chains": mc.lengths.len(),
        "draws_per_chain": mc.lengths,
        "warmup": mc.warmup,
        "max_depth": mc.max_depth,
        "divergences": mc.divergences,
        "max_depth_hits": mc.depth_hits,
        "ebfmi": mc.ebfmi.iter().map(|e| num(*e)).collect::<Vec<_>>(),
        "max_rhat": num(mc.max_rhat()),
        "convergence": Value::Object(per),
    })
}

fn options_value(options: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in options {
        m.insert(k.clone(), json!(v));
    }
    Value::Object(m)
}

fn pairs_value(pairs: &[(String, f64)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.clone(), num(*v));
    }
    Value::Object(m)
}

/// Per constrained column: mean, sd, q5, q50, q95, keyed by the CmdStan column name.
fn parameters_value(r: &FitReport) -> Value {
    let mut m = Map::new();
    for (name, s) in r.columns.iter().zip(r.column_summaries()) {
        m.insert(
            name.clone(),
            json!({
                "mean": num(s.mean), "sd": num(s.sd),
                "q5": num(s.q5), "q50": num(s.q50), "q95": num(s.q95),
            }),
        );
    }
    Value::Object(m)
}

fn approx_value(a: &ApproxSummary) -> Value {
    match a {
        ApproxSummary::Gaussian { mean, cov } => json!({
            "kind": "gaussian",
            "mean": vec_value(mean),
            "cov": matrix_value(cov),
        }),
        ApproxSummary::Mixture { weights, means, covs } => {
            let comps: Vec<Value> = weights
                .iter()
                .zip(means)
                .zip(covs)
                .map(|((w, m), c)| json!({ "weight": num(*w), "mean": vec_value(m), "cov": matrix_value(c) }))
                .collect();
            json!({ "kind": "mixture", "mean": vec_value(&a.mean()), "components": comps })
        }
        ApproxSummary::Particles { count, mean, cov } => json!({
            "kind": "particles",
            "count": count,
            "mean": vec_value(mean),
            "cov": matrix_value(cov),
        }),
    }
}

fn predict_value(p: &PredictReport) -> Value {
    let (error_rate, mse) = match p.metric {
        Some(PredictMetric::ErrorRate(e)) => (num(e), Value::Null),
        Some(PredictMetric::Mse(e)) => (Value::Null, num(e)),
        None => (Value::Null, Value::Null),
    };
    json!({
        "n_test": p.n_test,
        "draws": p.draws,
        "test_lpd": num(p.test_lpd),
        "test_lpd_per_point": num(p.test_lpd_per_point()),
        "lppd": num(p.lppd),
        "lppd_per_point": num(p.lppd_per_point()),
        "error_rate": error_rate,
        "mse": mse,
    })
}

fn trace_value(r: &FitReport) -> Value {
    Value::Array(
        r.trace
            .iter()
            .map(|t| json!({ "iter": t.iter, "objective": num(t.objective), "grad_norm": num(t.grad_norm) }))
            .collect(),
    )
}

fn vec_value(v: &[f64]) -> Value {
    Value::Array(v.iter().map(|x| num(*x)).collect())
}

/// A matrix as a list of rows.
fn matrix_value(m: &DMatrix<f64>) -> Value {
    Value::Array(
        m.row_iter()
            .map(|r| Value::Array(r.iter().map(|x| num(*x)).collect()))
            .collect(),
    )
}

/// A finite number, or `null`.
pub(crate) fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, num)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_become_null() {
        assert_eq!(num(f64::NAN), Value::Null);
        assert_eq!(num(f64::INFINITY), Value::Null);
        assert_eq!(num(1.5), json!(1.5));
    }

    #[test]
    fn matrices_are_written_as_rows() {
        let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(matrix_value(&m), json!([[1.0, 2.0], [3.0, 4.0]]));
    }
}
