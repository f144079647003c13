//! The reference posterior of `mvi compare --reference` and each method's distance to it.
//!
//! Input: reference draws of the model's parameters on their constrained scale, by column
//! name: from a CSV file ([`crate::data::draws`], Stan's names `theta[1]` or mvi's
//! `theta.1`) or from a `nuts` run's [`FitReport`]. Output: a [`Reference`] on the
//! unconstrained scale, and for each method's report the [`RefMetrics`] the comparison
//! prints: W1 between 100 of the method's draws and every reference draw (the Pathfinder
//! paper's protocol, [`crate::posterior::w1`]), the worst marginal mean error in reference
//! sds and the worst ratio of marginal sds, all on the unconstrained scale.

use nalgebra::{DMatrix, DVector};

use crate::data::draws::DrawsTable;
use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::graph::logjoint::{eval_nodes, Structure};
use crate::graph::transform::entry;
use crate::graph::{LogJoint, ParamInfo, Shape};
use crate::posterior::w1::w1;
use crate::report::compare::RefMetrics;
use crate::report::{cmdstan_names, FitReport};

/// Draws of a method taken for W1 (the Pathfinder paper's protocol).
pub const W1_DRAWS: usize = 100;

/// Reference draws on the unconstrained scale with their marginal moments.
#[derive(Debug, Clone)]
pub struct Reference {
    /// Where the draws came from (`nuts`, or the file name).
    pub source: String,
    /// The draws, D × n.
    pub draws: DMatrix<f64>,
    /// Marginal means, length D.
    pub mean: DVector<f64>,
    /// Marginal sds, length D.
    pub sd: DVector<f64>,
    /// Coordinate names (`mu`, `theta.1`).
    pub names: Vec<String>,
    /// The reference run's report, when the reference is a `nuts` run.
    pub run: Option<Box<FitReport>>,
}

/// The constrained value's column names of a param (`theta.1`, …, `L.2.1`, column-major).
fn value_names(p: &ParamInfo) -> Vec<String> {
    let dims = match p.shape {
        Shape::Scalar => vec![],
        Shape::Vector(n) => vec![n],
        Shape::Matrix(r, c) => vec![r, c],
    };
    cmdstan_names(&p.name, &dims)
}

/// A column name in mvi's form: `theta[1]` and `W[2,3]` become `theta.1` and `W.2.3`.
fn normalise(name: &str) -> String {
    name.trim().replace(['[', ','], ".").replace([']', ' '], "")
}

/// The unconstrained draws (D × n) of the model's parameters from constrained columns
/// (n × columns) named `names`; `None` and the missing names when a parameter has no column.
/// A constrained type goes through its inverse transform (Stan's `*_free`), a bound through
/// its inverse, and a bound that depends on earlier params through [`unconstrain_dependent`];
/// params are taken in declaration order, so the ones a bound reads are already in w. A
/// value outside its constraint gives a non-finite coordinate.
fn unconstrain(
    model: &LogJoint,
    names: &[String],
    values: &DMatrix<f64>,
) -> Result<DMatrix<f64>, Vec<String>> {
    let norm: Vec<String> = names.iter().map(|n| normalise(n)).collect();
    let mut w = DMatrix::zeros(model.dim(), values.nrows());
    let mut missing = Vec::new();
    for p in &model.params {
        let wanted = value_names(p);
        let cols: Vec<Option<usize>> = wanted.iter().map(|c| norm.iter().position(|n| n == c)).collect();
        if cols.iter().any(Option::is_none) {
            missing.extend(
                wanted
                    .into_iter()
                    .zip(&cols)
                    .filter(|(_, c)| c.is_none())
                    .map(|(n, _)| n),
            );
            continue;
        }
        if !missing.is_empty() {
            continue;
        }
        let cols: Vec<usize> = cols.into_iter().flatten().collect();
        match p.structure {
            Some(Structure::Type(kind)) => {
                let e = entry(kind);
                for s in 0..values.nrows() {
                    let x: Vec<f64> = cols.iter().map(|&j| values[(s, j)]).collect();
                    for (k, u) in e.unconstrain_of(&x, p.shape).into_iter().enumerate() {
                        w[(p.offset + k, s)] = u;
                    }
                }
            }
            Some(Structure::Dependent) => unconstrain_dependent(model, p, &cols, values, &mut w),
            None => {
                for (k, &j) in cols.iter().enumerate() {
                    for s in 0..values.nrows() {
                        w[(p.offset + k, s)] = p.constraint.unconstrain(values[(s, j)]);
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(w)
    } else {
        Err(missing)
    }
}

/// The coordinates of a param whose bounds depend on earlier params, at every draw: its
/// value node at u = −1, 0, 1 (the earlier params' coordinates already in `w`) tells the
/// transform and the bounds' values (hypers at their initial values). Entry by entry,
/// x(u) = a + eᵘ and x(u) = b − eᵘ step e times further from 0 to 1 than from −1 to 0, while
/// a + (b − a)·inv_logit(u) steps equally.
fn unconstrain_dependent(
    model: &LogJoint,
    p: &ParamInfo,
    cols: &[usize],
    values: &DMatrix<f64>,
    w: &mut DMatrix<f64>,
) {
    let theta = model.theta_init();
    let rows = p.offset..p.offset + p.free_len();
    let mut at = |u: f64| {
        for i in rows.clone() {
            w.row_mut(i).fill(u);
        }
        eval_nodes(&model.graph, theta.as_slice(), w, &[p.value]).remove(0)
    };
    let (below, mid, above) = (at(-1.0), at(0.0), at(1.0));
    let half_width = 1.0 / (1.0 + (-1.0f64).exp()) - 0.5;
    for (k, &j) in cols.iter().enumerate() {
        for s in 0..values.nrows() {
            let (x, m) = (values[(s, j)], mid[(k, s)]);
            let (up, down) = (above[(k, s)] - m, m - below[(k, s)]);
            w[(p.offset + k, s)] = if (up / down - 1.0).abs() < 0.5 {
                let width = up / half_width;
                let t = (x - (m - width / 2.0)) / width;
                (t / (1.0 - t)).ln()
            } else if up > 0.0 {
                (x - (m - 1.0)).ln()
            } else {
                ((m + 1.0) - x).ln()
            };
        }
    }
}

impl Reference {
    /// The reference from a draws file.
    ///
    /// # Errors
    /// A diagnostic naming the parameters the file has no column for, or the draws that
    /// fall outside a parameter's constraint.
    pub fn from_table(model: &LogJoint, table: &DrawsTable) -> Result<Reference, Diagnostic> {
        let w = unconstrain(model, &table.columns, &table.values).map_err(|missing| {
            let shown: Vec<String> = missing.iter().take(6).map(|m| format!("`{m}`")).collect();
            let more = if missing.len() > 6 {
                format!(" and {} more", missing.len() - 6)
            } else {
                String::new()
            };
            Diagnostic::plain(
                "mvi::compare::reference_columns",
                format!(
                    "the reference `{}` has no column for {}{more}",
                    table.file,
                    shown.join(", ")
                ),
            )
            .with_help(format!(
                "a reference file needs one column per parameter coordinate of the model, named \
                 as Stan names them (`theta[1]`) or as mvi does (`theta.1`), on the constrained \
                 scale; its columns are: {}",
                table.columns.join(", ")
            ))
        })?;
        if let Some(j) = (0..w.nrows()).find(|&i| w.row(i).iter().any(|v| !v.is_finite())) {
            let name = &model.coordinate_names()[j];
            return Err(Diagnostic::plain(
                "mvi::compare::reference_values",
                format!(
                    "the reference `{}` has draws of `{name}` outside its constraint (or not finite)",
                    table.file
                ),
            )
            .with_help("the reference's draws must be on the parameters' constrained scale, as the model declares them"));
        }
        Ok(Reference::new(table.file.clone(), w, model, None))
    }

    /// The reference from a `nuts` run of the model.
    pub fn from_report(model: &LogJoint, report: &FitReport) -> Reference {
        let w = unconstrain(model, &report.columns, &report.draws)
            .expect("a fit's report has a column for every parameter (run::constrained_draws)");
        Reference::new(report.method.clone(), w, model, Some(Box::new(report.clone())))
    }

    fn new(source: String, draws: DMatrix<f64>, model: &LogJoint, run: Option<Box<FitReport>>) -> Reference {
        let (mean, sd) = moments(&draws);
        let names = model.coordinate_names();
        Reference {
            source,
            draws,
            mean,
            sd,
            names,
            run,
        }
    }

    /// One line on where the reference came from (and, for a `nuts` run, its cost and
    /// health), plus a warning line when its chains disagree or diverged.
    pub fn describe(&self) -> String {
        let n = self.draws.ncols();
        let Some(r) = &self.run else {
            return format!("reference: {} ({n} draws)\n", self.source);
        };
        let mut out = format!(
            "reference: {} ({n} draws, {:.3} s, {} gradients",
            self.source, r.wall_time_s, r.evals.gradient
        );
        if let Some(m) = &r.mcmc {
            out.push_str(&format!(
                ", max R̂ {:.3}, {} divergences)\n",
                m.max_rhat(),
                m.divergences
            ));
            if m.troubled() {
                out.push_str(
                    "warning: the NUTS reference itself did not converge (R̂ > 1.01 or \
                     divergences): distances to it are not trustworthy; see `mvi run --method nuts`\n",
                );
            }
        } else {
            out.push_str(")\n");
        }
        out
    }

    /// The reference as JSON: source, draws and, for a `nuts` run, time, evaluations, max
    /// R̂ and divergences.
    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "source": self.source, "draws": self.draws.ncols() });
        if let (Some(r), serde_json::Value::Object(m)) = (&self.run, &mut v) {
            m.insert("wall_time_s".into(), serde_json::json!(r.wall_time_s));
            m.insert(
                "evals".into(),
                serde_json::json!({ "density": r.evals.density, "gradient": r.evals.gradient }),
            );
            if let Some(mc) = &r.mcmc {
                let rhat = mc.max_rhat();
                m.insert(
                    "max_rhat".into(),
                    serde_json::json!(rhat.is_finite().then_some(rhat)),
                );
                m.insert("divergences".into(), serde_json::json!(mc.divergences));
            }
        }
        v
    }

    /// A method's distance to the reference, from its report's draws: W1 over
    /// [`W1_DRAWS`] of them (evenly spaced for MCMC draws, whose neighbours are correlated;
    /// the first ones otherwise, which are independent), and the marginal mean error and sd
    /// ratio over all of them.
    pub fn metrics(&self, model: &LogJoint, report: &FitReport) -> RefMetrics {
        let w = unconstrain(model, &report.columns, &report.draws)
            .expect("a fit's report has a column for every parameter (run::constrained_draws)");
        let n = w.ncols();
        let take = W1_DRAWS.min(n);
        let picked: Vec<usize> = if report.mcmc.is_some() {
            (0..take).map(|k| k * n / take).collect()
        } else {
            (0..take).collect()
        };
        let sub = w.select_columns(&picked);
        let (mean, sd) = moments(&w);
        let mut mean_err = (0.0, 0);
        let mut ratio = (1.0, 0);
        for i in 0..w.nrows() {
            let e = (mean[i] - self.mean[i]).abs() / self.sd[i];
            if e > mean_err.0 {
                mean_err = (e, i);
            }
            let r = sd[i] / self.sd[i];
            if r.ln().abs() > f64::ln(ratio.0).abs() {
                ratio = (r, i);
            }
        }
        RefMetrics {
            w1: w1(&sub, &self.draws),
            w1_draws: take,
            mean_err: mean_err.0,
            mean_err_at: self.names[mean_err.1].clone(),
            sd_ratio: ratio.0,
            sd_ratio_at: self.names[ratio.1].clone(),
        }
    }
}

/// Marginal means and sds (divisor n − 1) of the columns of `w` (D × n).
fn moments(w: &DMatrix<f64>) -> (DVector<f64>, DVector<f64>) {
    let n = w.ncols() as f64;
    let mean = w.column_mean();
    let sd = DVector::from_iterator(
        w.nrows(),
        (0..w.nrows()).map(|i| {
            let ss: f64 = w.row(i).iter().map(|v| (v - mean[i]).powi(2)).sum();
            (ss / (n - 1.0).max(1.0)).sqrt()
        }),
    );
    (mean, sd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stan_names_become_mvi_names() {
        assert_eq!(normalise("theta[1]"), "theta.1");
        assert_eq!(normalise("W[2, 3]"), "W.2.3");
        assert_eq!(normalise("mu"), "mu");
    }
}
