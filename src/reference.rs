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
use crate::graph::LogJoint;
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

/// A column name in mvi's form: `theta[1]` and `W[2,3]` become `theta.1` and `W.2.3`.
fn normalise(name: &str) -> String {
    name.trim().replace(['[', ','], ".").replace([']', ' '], "")
}

/// The unconstrained draws (D × n) of the model's parameters from constrained columns
/// (n × columns) named `names`, or the names of the columns that are missing.
///
/// Each parameter is inverted by its own transform: constant bounds entry by entry, a
/// constrained type (`simplex`, `cholesky_corr`, …) by its type's inverse on the whole
/// value. Bounds that depend on earlier parameters (`upper = 1 - alpha1`) are evaluated at
/// each draw from the coordinates already found: with the parameter's own coordinate u at 0
/// and at 1 the value is a + 1 (lower a), b − 1 (upper b) or a + (b − a)/2 and
/// a + (b − a)·σ(1) (both), which gives the bounds; bounds on `hyper`s use θ₀.
pub(crate) fn unconstrain(
    model: &LogJoint,
    names: &[String],
    values: &DMatrix<f64>,
) -> Result<DMatrix<f64>, Vec<String>> {
    let norm: Vec<String> = names.iter().map(|n| normalise(n)).collect();
    let n = values.nrows();
    // each parameter's value entries (column-major), as columns of `values`
    let mut columns = Vec::new();
    let mut missing = Vec::new();
    for p in &model.params {
        let cols: Vec<Option<usize>> = cmdstan_names(&p.name, &p.shape.dims())
            .into_iter()
            .map(|name| {
                let j = norm.iter().position(|m| *m == name);
                if j.is_none() {
                    missing.push(name);
                }
                j
            })
            .collect();
        columns.push(cols);
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    let entries = |cols: &[Option<usize>], s: usize| -> Vec<f64> {
        cols.iter()
            .map(|j| values[(s, j.expect("checked above"))])
            .collect()
    };
    let mut w = DMatrix::zeros(model.dim(), n);
    for (p, cols) in model.params.iter().zip(&columns) {
        match p.structure {
            None => {
                for s in 0..n {
                    for (k, x) in entries(cols, s).into_iter().enumerate() {
                        w[(p.offset + k, s)] = p.constraint.unconstrain(x);
                    }
                }
            }
            Some(Structure::Type(kind)) => {
                let t = entry(kind);
                for s in 0..n {
                    let u = t.unconstrain_of(&entries(cols, s), p.shape);
                    w.view_mut((p.offset, s), (u.len(), 1)).copy_from_slice(&u);
                }
            }
            Some(Structure::Dependent { lower, upper }) => {
                let theta = model.theta_init();
                let size = p.shape.size();
                let at = |w: &DMatrix<f64>, u: f64| -> DMatrix<f64> {
                    let mut w = w.clone();
                    w.rows_mut(p.offset, size).fill(u);
                    eval_nodes(&model.graph, theta.as_slice(), &w, &[p.value]).remove(0)
                };
                let (x0, x1) = (at(&w, 0.0), at(&w, 1.0));
                let half = 1.0 / (1.0 + (-1.0f64).exp()) - 0.5;
                for s in 0..n {
                    for (k, x) in entries(cols, s).into_iter().enumerate() {
                        let (v0, v1) = (x0[(k, s)], x1[(k, s)]);
                        w[(p.offset + k, s)] = match (lower, upper) {
                            (true, false) => (x - (v0 - 1.0)).ln(),
                            (false, true) => (v0 + 1.0 - x).ln(),
                            (true, true) => {
                                let width = (v1 - v0) / half;
                                let q = (x - (v0 - width / 2.0)) / width;
                                (q / (1.0 - q)).ln()
                            }
                            (false, false) => x,
                        };
                    }
                }
            }
        }
    }
    Ok(w)
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

    /// A model with every kind of transform: constant bounds, constrained types, bounds on
    /// an earlier parameter (one side and both), elementwise dependent bounds.
    fn joint_of(text: &str) -> LogJoint {
        let mut set = crate::data::DataSet::default();
        crate::data::add_json_text(&mut set, "d.json", r#"{"y": [1, 2, 3, 1]}"#.into())
            .expect("the data parse");
        let typed = crate::check::check_source(text, "m.mvi", std::path::Path::new("."), &set)
            .unwrap_or_else(|d| panic!("the model checks: {d:?}"));
        crate::graph::lower_model(&typed).expect("the model lowers")
    }

    const EVERY_TRANSFORM: &str = "data { y: ints[N] }
param {
  sigma: real<lower=0>
  p: simplex[3]
  c: ordered[2]
  L: cholesky_corr[3]
  a1: real<lower=0, upper=1>
  b1: real<lower=0, upper=1 - a1>
  m: real<lower=c[2]>
  v: vector<upper=c[1]>[2]
}
model {
  sigma ~ lognormal(0, 1)
  y ~ categorical(p)
  c ~ normal(0, 3)
  L ~ lkj_corr_cholesky(2)
  m ~ normal(0, 5)
  v ~ normal(0, 5)
}
";

    #[test]
    fn draws_go_back_to_their_coordinates_through_every_transform() {
        let model = joint_of(EVERY_TRANSFORM);
        let d = model.dim();
        assert_eq!(d, 1 + 2 + 2 + 3 + 1 + 1 + 1 + 2);
        let n = 7;
        let w = DMatrix::from_fn(d, n, |i, s| (0.7 * (i * n + s) as f64 + 0.3).sin() * 1.5);
        let theta = model.theta_init();
        // the draws as a report holds them: constrained values under CmdStan's names
        let mut names = Vec::new();
        let mut blocks = Vec::new();
        for (p, (name, block)) in model.params.iter().zip(model.constrain(&theta, &w)) {
            names.extend(cmdstan_names(&name, &p.shape.dims()));
            blocks.push(block);
        }
        let mut values = DMatrix::zeros(n, names.len());
        let mut c0 = 0;
        for b in &blocks {
            values.columns_mut(c0, b.nrows()).copy_from(&b.transpose());
            c0 += b.nrows();
        }
        let back = unconstrain(&model, &names, &values).expect("every column is there");
        let err = (&back - &w).abs().max();
        assert!(err < 1e-8, "largest error {err:e}:\n{back}\n{w}");
        // Stan's names are read too, and a missing column is named
        let stan: Vec<String> = names
            .iter()
            .map(|n| n.replacen('.', "[", 1))
            .map(|n| {
                if n.contains('[') {
                    n.replace('.', ",") + "]"
                } else {
                    n
                }
            })
            .collect();
        assert!(
            (unconstrain(&model, &stan, &values).expect("Stan's names") - &w)
                .abs()
                .max()
                < 1e-8
        );
        let missing = unconstrain(
            &model,
            &names[1..],
            &values.columns(1, names.len() - 1).into_owned(),
        );
        assert_eq!(missing.expect_err("sigma is missing"), vec!["sigma".to_string()]);
    }
}
