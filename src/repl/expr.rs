//! Expressions typed at the REPL prompt, evaluated over posterior draws.
//!
//! Input: the model text, an expression, the data and the last fit's [`Posterior`]. The
//! expression becomes a top-level `let` appended to the model; checking and lowering the
//! extended model make it a reported quantity ([`LogJoint::constrain`] returns it after the
//! parameters). Output: its mean, sd and 90 % interval over draws of the posterior, one line
//! per entry.

use std::fmt::Write as _;
use std::path::Path;

use miette::{LabeledSpan, NamedSource};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::check::{self, Stage};
use crate::data::DataSet;
use crate::diagnostic::Diagnostic;
use crate::graph::{self, LogJoint};
use crate::posterior::Posterior;
use crate::report::summary::num;

/// The name of the `let` that holds the expression.
pub const EXPR_NAME: &str = "__repl_expr";

/// Posterior draws an expression is evaluated at.
pub const EXPR_DRAWS: usize = 1000;

/// Summary of one entry of an expression over the draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EntrySummary {
    /// Mean over the draws.
    pub mean: f64,
    /// Standard deviation over the draws.
    pub sd: f64,
    /// 5 % quantile.
    pub q05: f64,
    /// 95 % quantile.
    pub q95: f64,
}

/// Evaluate `expr` over [`EXPR_DRAWS`] posterior draws (seeded by `seed`) and render its
/// summary.
///
/// # Errors
/// The expression does not parse or check in the model, or the model's parameters changed
/// since the fit.
pub fn summarize(
    text: &str,
    path: &Path,
    expr: &str,
    data: &DataSet,
    post: &Posterior,
    seed: u64,
) -> Result<String, Vec<Diagnostic>> {
    let entries = evaluate(text, path, expr, data, post, seed)?;
    Ok(render(&entries))
}

/// The expression's value at [`EXPR_DRAWS`] posterior draws: one summary per entry
/// (column-major for matrices).
///
/// # Errors
/// As [`summarize`].
pub fn evaluate(
    text: &str,
    path: &Path,
    expr: &str,
    data: &DataSet,
    post: &Posterior,
    seed: u64,
) -> Result<Vec<EntrySummary>, Vec<Diagnostic>> {
    let joint = lower_with_expr(text, path, expr, data)?;
    if crate::density::LogDensity::dim(&joint) != post.dim() {
        return Err(vec![Diagnostic::plain(
            "mvi::repl::stale_fit",
            "the model's parameters changed since the last fit",
        )
        .with_help("fit again with `:fit`")]);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let w = post.draw(EXPR_DRAWS, &mut rng);
    let block = joint
        .constrain(&post.theta, &w)
        .into_iter()
        .find(|(name, _)| name == EXPR_NAME)
        .map(|(_, b)| b)
        .expect("lower_with_expr checked that the expression is reported");
    Ok(block
        .row_iter()
        .map(|row| entry_summary(&row.iter().copied().collect::<Vec<_>>()))
        .collect())
}

/// Check and lower the model with `let __repl_expr = expr` appended. An expression that does
/// not depend on the parameters is tied to the first one (`+ 0 * sum(p)`) so that it is
/// reported too.
fn lower_with_expr(text: &str, path: &Path, expr: &str, data: &DataSet) -> Result<LogJoint, Vec<Diagnostic>> {
    let base = text.trim_end();
    let file = path.display().to_string();
    let dir = super::model_dir(path);
    let prefix = format!("{base}\nlet {EXPR_NAME} = ");
    let plain = format!("{prefix}{expr}\n");
    let typed =
        check::check_source(&plain, &file, &dir, data).map_err(|d| at_input(d, prefix.len(), expr))?;
    let stage = typed
        .lets
        .iter()
        .find(|(n, _)| n == EXPR_NAME)
        .map(|(_, e)| e.stage)
        .expect("the let was appended above");
    let typed = if stage == Stage::Param {
        typed
    } else {
        let Some(first) = typed.params.first() else {
            return Err(vec![Diagnostic::plain(
                "mvi::repl::no_params",
                "the model has no parameters",
            )]);
        };
        let prefix = format!("{base}\nlet {EXPR_NAME} = (");
        let tied = format!("{prefix}{expr}) + 0 * sum({})\n", first.name);
        check::check_source(&tied, &file, &dir, data).map_err(|d| at_input(d, prefix.len(), expr))?
    };
    graph::lower_model(&typed).map_err(|d| vec![d])
}

/// Diagnostics of the extended model text shown against the user's own input: a diagnostic
/// whose labels point into the expression (which starts at byte `offset` of the text) gets
/// `<input>` as its source, with the labels moved into it (a label just past the end, where
/// a parser expected more, stays at the input's end). Others are left as they are.
fn at_input(diags: Vec<Diagnostic>, offset: usize, input: &str) -> Vec<Diagnostic> {
    diags
        .into_iter()
        .map(|mut d| {
            if d.labels.is_empty() || d.labels.iter().any(|l| l.offset() < offset) {
                return d;
            }
            d.labels = d
                .labels
                .iter()
                .map(|l| {
                    let start = (l.offset() - offset).min(input.len());
                    let len = l.len().min(input.len() - start);
                    let label = l
                        .label()
                        .map(|t| t.replace("the end of the file", "the end of the input"));
                    LabeledSpan::new(label, start, len)
                })
                .collect();
            d.source_code = NamedSource::new("<input>", input.to_string());
            d.message = d.message.replace(EXPR_NAME, "the expression");
            d
        })
        .collect()
}

/// Mean, sd (n − 1) and the 5 % / 95 % quantiles (linear interpolation) of `x`.
pub fn entry_summary(x: &[f64]) -> EntrySummary {
    let n = x.len().max(1) as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    EntrySummary {
        mean,
        sd: var.sqrt(),
        q05: quantile(&sorted, 0.05),
        q95: quantile(&sorted, 0.95),
    }
}

/// The p-quantile of sorted values, interpolating between order statistics.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = p * (n - 1) as f64;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

fn render(entries: &[EntrySummary]) -> String {
    let line = |e: &EntrySummary| {
        format!(
            "mean {}   sd {}   90% [{}, {}]",
            num(e.mean),
            num(e.sd),
            num(e.q05),
            num(e.q95)
        )
    };
    if let [one] = entries {
        return format!("{}\n", line(one));
    }
    let mut out = String::new();
    for (i, e) in entries.iter().enumerate() {
        let _ = writeln!(out, "[{}]  {}", i + 1, line(e));
    }
    out
}
