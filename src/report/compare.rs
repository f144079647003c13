//! The `mvi compare` table: one row per method, the best value in each column marked.
//!
//! Input: the [`FitReport`]s of one model fitted by several methods. Output: a text table
//! (best marked with `*`) or a JSON array. Best means highest fresh ELBO, log evidence and
//! test LPD; lowest k̂, error rate / MSE, time and iterations. A fit stopped by Ctrl-C is
//! shown but never marked best (its time and iterations are short because it was stopped),
//! and is named under the table with the fits that did not converge.

use super::summary::num;
use super::{json, FitReport, PredictMetric};
use serde_json::{json as j, Value};

/// One column of the table: its heading, how to read a report, and which way is better.
struct Column {
    heading: &'static str,
    value: fn(&FitReport) -> Option<f64>,
    higher_is_better: bool,
}

/// A method's distance to the reference posterior of `mvi compare --reference`, on the
/// unconstrained scale.
#[derive(Debug, Clone, PartialEq)]
pub struct RefMetrics {
    /// W1 between `w1_draws` of the method's draws and all reference draws.
    pub w1: f64,
    /// How many of the method's draws entered W1 (100 unless it had fewer).
    pub w1_draws: usize,
    /// The largest |mean − reference mean| / reference sd over the coordinates.
    pub mean_err: f64,
    /// The coordinate where it occurs.
    pub mean_err_at: String,
    /// The sd ratio (method / reference) furthest from 1 (on the log scale).
    pub sd_ratio: f64,
    /// The coordinate where it occurs.
    pub sd_ratio_at: String,
}

const COLUMNS: &[Column] = &[
    Column {
        heading: "W1 to ref",
        value: |r| r.reference.as_ref().map(|m| m.w1),
        higher_is_better: false,
    },
    Column {
        heading: "mean err (sd)",
        value: |r| r.reference.as_ref().map(|m| m.mean_err),
        higher_is_better: false,
    },
    Column {
        heading: "sd ratio",
        // ranked by the distance of the ratio from 1 on the log scale
        value: |r| r.reference.as_ref().map(|m| m.sd_ratio),
        higher_is_better: false,
    },
    Column {
        heading: "ELBO (fresh)",
        value: |r| r.elbo_fresh.map(|e| e.value),
        higher_is_better: true,
    },
    Column {
        heading: "log evidence",
        value: |r| r.log_evidence,
        higher_is_better: true,
    },
    Column {
        heading: "k̂",
        value: |r| r.khat,
        higher_is_better: false,
    },
    Column {
        heading: "test LPD",
        value: |r| r.predict.as_ref().map(|p| p.test_lpd),
        higher_is_better: true,
    },
    Column {
        heading: "error/MSE",
        value: |r| r.predict.as_ref().and_then(|p| p.metric).map(metric_value),
        higher_is_better: false,
    },
    Column {
        heading: "gradients",
        // a report assembled by hand (not by `run::fit`) has no counts
        value: |r| (r.evals.density > 0).then_some(r.evals.gradient as f64),
        higher_is_better: false,
    },
    Column {
        heading: "time (s)",
        value: |r| Some(r.wall_time_s),
        higher_is_better: false,
    },
    Column {
        heading: "iterations",
        value: |r| Some(r.iterations as f64),
        higher_is_better: false,
    },
];

fn metric_value(m: PredictMetric) -> f64 {
    match m {
        PredictMetric::ErrorRate(e) | PredictMetric::Mse(e) => e,
    }
}

/// The comparison table as aligned text, one row per report, `*` after each column's best.
/// Columns no report has (no `predict`, no evidence) are left out.
pub fn render_compare(reports: &[FitReport]) -> String {
    let shown: Vec<&Column> = COLUMNS
        .iter()
        .filter(|c| reports.iter().any(|r| (c.value)(r).is_some()))
        .collect();
    let mut rows: Vec<Vec<String>> = vec![std::iter::once("method".to_string())
        .chain(shown.iter().map(|c| c.heading.to_string()))
        .collect()];
    for (i, r) in reports.iter().enumerate() {
        let mut row = vec![r.method.clone()];
        for c in &shown {
            let mark = if best_index(reports, c) == Some(i) {
                "*"
            } else {
                " "
            };
            row.push(format!("{}{mark}", cell(r, c)));
        }
        rows.push(row);
    }
    let mut out = align(&rows);
    out.push_str("* best in its column\n");
    let interrupted = method_list(reports, |r| r.interrupted);
    if !interrupted.is_empty() {
        out.push_str(&format!(
            "interrupted: {interrupted} (stopped early by Ctrl-C: partial results, not ranked)\n"
        ));
    }
    let unconverged = method_list(reports, |r| !r.converged && !r.interrupted);
    if !unconverged.is_empty() {
        out.push_str(&format!(
            "not converged: {unconverged} (`mvi run` with the method shows why)\n"
        ));
    }
    out
}

/// The methods of the reports that `pick` selects, comma-separated.
fn method_list(reports: &[FitReport], pick: impl Fn(&FitReport) -> bool) -> String {
    let names: Vec<&str> = reports
        .iter()
        .filter(|r| pick(r))
        .map(|r| r.method.as_str())
        .collect();
    names.join(", ")
}

fn cell(r: &FitReport, c: &Column) -> String {
    match (c.heading, (c.value)(r)) {
        (_, None) => "-".into(),
        ("ELBO (fresh)", Some(v)) => {
            let se = r.elbo_fresh.map_or(f64::NAN, |e| e.se);
            format!("{} ± {}", num(v), num(se))
        }
        ("k̂", Some(v)) => format!("{v:.2}"),
        ("time (s)", Some(v)) => format!("{v:.3}"),
        ("iterations" | "gradients", Some(v)) => format!("{v:.0}"),
        ("sd ratio", Some(v)) => format!("{v:.3}"),
        (_, Some(v)) => num(v),
    }
}

/// Index of the best finite value in a column; the first one wins a tie.
fn best_index(reports: &[FitReport], c: &Column) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in reports.iter().enumerate().filter(|(_, r)| !r.interrupted) {
        let Some(v) = (c.value)(r).filter(|v| v.is_finite()) else {
            continue;
        };
        // an sd ratio is best nearest 1
        let v = if c.heading == "sd ratio" { v.ln().abs() } else { v };
        let better = match best {
            None => true,
            Some((_, b)) => {
                if c.higher_is_better {
                    v > b
                } else {
                    v < b
                }
            }
        };
        if better {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Left-align the first column, right-align the others, two spaces between columns.
fn align(rows: &[Vec<String>]) -> String {
    let ncol = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..ncol)
        .map(|j| rows.iter().map(|r| width(&r[j])).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (j, cell) in row.iter().enumerate() {
            let pad = widths[j] - width(cell);
            if j == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Display width of a cell: characters, not counting combining marks (the hat of `k̂`).
fn width(s: &str) -> usize {
    s.chars()
        .filter(|c| !('\u{0300}'..='\u{036F}').contains(c))
        .count()
}

/// The comparison as JSON: `{"methods": [...], "best": {column: method}}`; each entry has
/// method, fresh ELBO and se, log evidence, k̂, predict results, time and iterations.
pub fn render_compare_json(reports: &[FitReport]) -> String {
    let methods: Vec<Value> = reports.iter().map(row_value).collect();
    let mut best = serde_json::Map::new();
    for (c, key) in COLUMNS.iter().zip(JSON_KEYS) {
        if let Some(i) = best_index(reports, c) {
            best.insert((*key).into(), j!(reports[i].method));
        }
    }
    let v = j!({ "methods": methods, "best": best });
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

const JSON_KEYS: &[&str] = &[
    "w1",
    "mean_err",
    "sd_ratio",
    "elbo_fresh",
    "log_evidence",
    "khat",
    "test_lpd",
    "error",
    "gradients",
    "wall_time_s",
    "iterations",
];

fn row_value(r: &FitReport) -> Value {
    let s = json::summary_value(r);
    j!({
        "method": r.method,
        "elbo_fresh": s["elbo_fresh"],
        "elbo_train": s["elbo_train"],
        "log_evidence": s["log_evidence"],
        "khat": s["khat"],
        "predict": s["predict"],
        "wall_time_s": s["wall_time_s"],
        "evals": s.get("evals").cloned().unwrap_or(Value::Null),
        "reference": r.reference.as_ref().map_or(Value::Null, |m| j!({
            "w1": json::num(m.w1), "w1_draws": m.w1_draws,
            "mean_err": json::num(m.mean_err), "mean_err_at": m.mean_err_at,
            "sd_ratio": json::num(m.sd_ratio), "sd_ratio_at": m.sd_ratio_at,
        })),
        "iterations": r.iterations,
        "converged": r.converged,
        "interrupted": r.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_pads_every_column_to_its_widest_cell() {
        let rows = vec![
            vec!["a".to_string(), "1".to_string()],
            vec!["long".to_string(), "12345".to_string()],
        ];
        assert_eq!(align(&rows), "a         1\nlong  12345\n");
    }

    #[test]
    fn combining_hat_takes_no_width() {
        assert_eq!(width("k̂"), 1);
        assert_eq!(width("0.35*"), 5);
    }

    #[test]
    fn json_keys_cover_every_column() {
        assert_eq!(JSON_KEYS.len(), COLUMNS.len());
    }
}
