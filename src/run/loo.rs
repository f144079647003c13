//! PSIS-LOO of a fit (`mvi loo`, `loo = true`) and the comparison of models by it (`mvi
//! compare-models`).
//!
//! Input: a [`FitReport`] with its pointwise log-likelihoods ([`FitReport::log_lik`]) and
//! the checked model. Output: the [`Loo`] (with the importance correction of an
//! approximation, Magnusson et al. 2019), its text and JSON, `loo.json` and `log_lik.csv`,
//! and the `az.compare` table of several models fitted to the same data.

use std::io;
use std::path::Path;

use serde_json::{json, Value};

use crate::check::{TExpr, TExprKind, TStmt, TypedModel};
use crate::data::Value as DataValue;
use crate::diagnostic::Diagnostic;
use crate::fsutil::write_atomic;
use crate::posterior::loo::{compare, loo_pit, psis_loo, CompareRow, Loo};
use crate::report::{self, FitReport, LogLikDraws};

/// A model's PSIS-LOO with the observed values it scores (to check that compared models
/// saw the same data).
#[derive(Debug, Clone)]
pub struct ModelLoo {
    /// The estimate.
    pub loo: Loo,
    /// The observed data's values, variable by variable in the order of the log-likelihood.
    pub observed: Vec<f64>,
    /// The method that made the draws.
    pub method: String,
}

/// PSIS-LOO of a fit made with `loo = true`.
///
/// # Errors
/// A fit without pointwise log-likelihoods (a bug in the caller), or a `~` that scores a
/// whole data vector or matrix as one observation, at that `~` with how to split it.
pub fn model_loo(typed: &TypedModel, report: &FitReport) -> Result<ModelLoo, Diagnostic> {
    let Some(ll) = &report.log_lik else {
        return Err(
            Diagnostic::plain("mvi::run::no_log_lik", "the fit has no pointwise log-likelihood")
                .with_help("fit with `loo = true` (`mvi loo` does)"),
        );
    };
    for (name, n) in &ll.vars {
        if *n == 1 && data_values(typed, name).len() > 1 {
            return Err(unsplit(typed, name));
        }
    }
    let loo = psis_loo(&ll.values, ll.log_correction.as_deref(), 1.0);
    Ok(ModelLoo {
        loo,
        observed: ll.observed.clone(),
        method: report.method.clone(),
    })
}

/// The values of a data variable, in its storage order (empty for an outcome that is not a
/// data variable).
fn data_values(typed: &TypedModel, name: &str) -> Vec<f64> {
    match typed.data.get(name) {
        Some(DataValue::Int(i)) => vec![*i as f64],
        Some(DataValue::Real(x)) => vec![*x],
        Some(DataValue::Vector(v)) => v.iter().copied().collect(),
        Some(DataValue::Matrix(m)) => m.iter().copied().collect(),
        Some(DataValue::Ints(v)) => v.iter().map(|&k| k as f64).collect(),
        None => Vec::new(),
    }
}

/// A `~` whose density scores all of `name` at once (a multivariate family on a vector)
/// has one term for the whole data set: LOO would leave out everything.
fn unsplit(typed: &TypedModel, name: &str) -> Diagnostic {
    let msg = format!(
        "LOO needs one log-likelihood term per observation, but the `~` on `{name}` scores all \
         of `{name}` as one"
    );
    let help = format!(
        "write one observation per `~` or per row: a matrix with one outcome per row \
         (`Y ~ multi_normal(mu, Sigma)` with `Y: matrix[N, K]`), or a loop \
         (`for n in 1:N {{ {name}[n] ~ … }}`)"
    );
    match typed.model.iter().find_map(|s| tilde_on(s, name)) {
        Some(span) => Diagnostic::error("mvi::run::loo_not_pointwise", msg, typed.source.clone())
            .with_label(span, "one term for all of it")
            .with_help(help),
        None => Diagnostic::plain("mvi::run::loo_not_pointwise", msg).with_help(help),
    }
}

/// The outcome span of the first `~` on the data variable `name`.
fn tilde_on(s: &TStmt, name: &str) -> Option<crate::syntax::span::Span> {
    let names = |e: &TExpr| match &e.kind {
        TExprKind::Name(n, _) => n == name,
        TExprKind::Index(b, _) => matches!(&b.kind, TExprKind::Name(n, _) if n == name),
        _ => false,
    };
    match s {
        TStmt::Tilde { lhs, .. } if names(lhs) => Some(lhs.span),
        TStmt::For { iterations, .. } => iterations.iter().flatten().find_map(|s| tilde_on(s, name)),
        TStmt::If { then, otherwise, .. } => then.iter().chain(otherwise).find_map(|s| tilde_on(s, name)),
        _ => None,
    }
}

/// The LOO summary as `az.loo` prints it, with a line on the correction for draws of an
/// approximation.
pub fn render_loo_text(report: &FitReport, m: &ModelLoo) -> String {
    let mut out = format!(
        "mvi {} · {} · {}\n",
        report.version, report.method, report.model_file
    );
    out.push_str(&report::loo::render_loo(&m.loo));
    if m.loo.corrected {
        out.push_str(
            "draws of an approximation: each observation's importance ratios carry p(w | y) / q(w) \
             (Magnusson et al. 2019), so this is the LOO of the posterior, not of q\n",
        );
    }
    for n in &report.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// Every number of a LOO estimate as JSON (non-finite numbers are `null`).
pub fn loo_value(loo: &Loo) -> Value {
    json!({
        "elpd_loo": num(loo.elpd_loo),
        "se": num(loo.se),
        "p_loo": num(loo.p_loo),
        "lppd": num(loo.lppd),
        "looic": num(-2.0 * loo.elpd_loo),
        "n_draws": loo.n_draws,
        "n_obs": loo.n_obs,
        "n_high_k": loo.n_high_k,
        "good_k": num(loo.good_k),
        "corrected": loo.corrected,
        "khat_correction": loo.khat_correction.map(num),
        "pointwise": loo.pointwise.iter().map(|p| json!({
            "elpd": num(p.elpd),
            "khat": num(p.khat),
            "p_loo": num(p.p_loo),
        })).collect::<Vec<_>>(),
    })
}

/// `mvi loo --json`: the fit's model, method and seed with every LOO number.
pub fn render_loo_json(report: &FitReport, m: &ModelLoo) -> String {
    let v = json!({
        "model": report.model_file,
        "method": report.method,
        "seed": report.seed,
        "loo": loo_value(&m.loo),
        "notes": report.notes,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// `log_lik.csv`: one row per draw, one column per observation (`y.1`, `y.2`, …).
pub fn render_log_lik_csv(ll: &LogLikDraws) -> String {
    let mut names = Vec::new();
    for (name, n) in &ll.vars {
        names.extend(report::cmdstan_names(name, &[*n]));
    }
    let mut out = names.join(",");
    out.push('\n');
    for s in 0..ll.values.nrows() {
        let row: Vec<String> = ll.values.row(s).iter().map(|v| format!("{v}")).collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// Write `loo.json` (and `log_lik.csv` when asked, and `loo_pit.svg` when the fit has the
/// replicates of its one observed variable) into `dir`, each atomically.
///
/// # Errors
/// An I/O error writing a file, or a plot that could not be drawn.
pub fn write_loo_files(dir: &Path, report: &FitReport, m: &ModelLoo, log_lik: bool) -> io::Result<()> {
    write_atomic(&dir.join("loo.json"), render_loo_json(report, m).as_bytes())?;
    if let (true, Some(ll)) = (log_lik, &report.log_lik) {
        write_atomic(&dir.join("log_lik.csv"), render_log_lik_csv(ll).as_bytes())?;
    }
    if let Some(pit) = loo_pit_values(report) {
        let svg = report::loo::loo_pit_svg(&pit, &format!("LOO-PIT: {}", report.model_file))
            .map_err(io::Error::other)?;
        write_atomic(&dir.join("loo_pit.svg"), svg.as_bytes())?;
    }
    Ok(())
}

/// The LOO-PIT values of a fit with `loo` and `predictive`, when its one observed variable
/// is replicated entry for entry (a `~` on the whole variable, or on each entry in order).
pub fn loo_pit_values(report: &FitReport) -> Option<Vec<f64>> {
    let ll = report.log_lik.as_ref()?;
    let [rep] = report.replicated.as_slice() else {
        return None;
    };
    let [(name, n)] = ll.vars.as_slice() else {
        return None;
    };
    if *name != rep.name || *n != rep.observed.len() || ll.observed != rep.observed {
        return None;
    }
    let y_rep = report.draws.columns(rep.first_column, *n).into_owned();
    Some(loo_pit(
        &rep.observed,
        &y_rep,
        &ll.values,
        ll.log_correction.as_deref(),
        1.0,
        None,
    ))
}

/// The `az.compare` table of models fitted to the same data, best first.
///
/// # Errors
/// Models that observed different data (other values or another number of observations).
pub fn compare_models(fits: &[(String, ModelLoo)]) -> Result<Vec<CompareRow>, Diagnostic> {
    let (first, base) = &fits[0];
    for (name, m) in &fits[1..] {
        let same = m.observed.len() == base.observed.len()
            && m.observed
                .iter()
                .zip(&base.observed)
                .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        if !same {
            return Err(Diagnostic::plain(
                "mvi::run::different_data",
                format!(
                    "`{first}` and `{name}` observe different data ({} and {} observations{}): \
                     LOO compares models on the same observations",
                    base.observed.len(),
                    m.observed.len(),
                    if base.observed.len() == m.observed.len() {
                        ", other values"
                    } else {
                        ""
                    }
                ),
            )
            .with_help(
                "give every model the same data variables on the left of its `~` statements, \
                 with the same values (the same `--data`)",
            ));
        }
    }
    let models: Vec<(String, &Loo)> = fits.iter().map(|(n, m)| (n.clone(), &m.loo)).collect();
    compare(&models).map_err(|e| {
        Diagnostic::plain("mvi::run::different_data", e)
            .with_help("compare models fitted to the same observations")
    })
}

/// The comparison as text: `az.compare`'s table, then each model's method.
pub fn render_comparison_text(fits: &[(String, ModelLoo)], rows: &[CompareRow]) -> String {
    let mut out = report::loo::render_comparison(rows);
    for (name, m) in fits {
        let corr = if m.loo.corrected {
            ", LOO corrected for q"
        } else {
            ""
        };
        out.push_str(&format!(
            "{name}: {} draws of {}{corr}\n",
            m.loo.n_draws, m.method
        ));
    }
    out
}

/// The comparison as JSON: one object per model, best first.
pub fn render_comparison_json(rows: &[CompareRow]) -> String {
    let v: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "model": r.name,
                "rank": r.rank,
                "elpd_loo": num(r.elpd_loo),
                "p_loo": num(r.p_loo),
                "elpd_diff": num(r.elpd_diff),
                "se": num(r.se),
                "dse": num(r.dse),
                "weight": num(r.weight),
                "warning": r.warning,
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "models": v })).unwrap_or_default()
}
