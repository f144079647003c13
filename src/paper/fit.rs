//! One fit of the benchmark through the ordinary pipeline: a `.mvi` model text and data
//! values → `check::check_source` → `graph::lower_model` → `run::fit`, exactly what
//! `mvi run` does, so that the benchmark measures the product.
//!
//! Input: a model text, its data as a JSON value, hyperparameter starting values and
//! `infer` overrides. Output: the [`FitReport`], or a [`Diagnostic`].

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use nalgebra::DMatrix;
use serde_json::{json, Value};

use crate::check::{self, TypedModel};
use crate::diagnostic::Diagnostic;
use crate::graph::{self, LogJoint};
use crate::progress::Progress;
use crate::report::{FitReport, PredictMetric};
use crate::run::{self, RunInfo};

use super::store::Record;

/// A checked and lowered model with its data.
#[derive(Clone)]
pub struct Problem {
    typed: TypedModel,
    joint: LogJoint,
    file: String,
}

/// A matrix as Stan JSON (an array of rows).
pub fn matrix_json(m: &DMatrix<f64>) -> Value {
    Value::Array(
        m.row_iter()
            .map(|r| Value::Array(r.iter().map(|v| json!(v)).collect()))
            .collect(),
    )
}

/// 0-based labels as the 1-based ints `categorical*` expects (`bernoulli*` takes them as they are).
pub fn labels_json(y: &[usize], one_based: bool) -> Value {
    Value::Array(y.iter().map(|&k| json!(k + usize::from(one_based))).collect())
}

fn first(mut diags: Vec<Diagnostic>) -> Diagnostic {
    if diags.is_empty() {
        Diagnostic::plain("mvi::paper::check_failed", "the benchmark model did not check")
    } else {
        diags.swap_remove(0)
    }
}

impl Problem {
    /// Check `text` (named `file` in diagnostics; imports come from the crate's stdlib)
    /// against `data` and lower it.
    ///
    /// # Errors
    /// The first diagnostic of checking or lowering.
    pub fn new(text: &str, file: &str, data: &Value) -> Result<Problem, Diagnostic> {
        let mut set = crate::data::DataSet::default();
        crate::data::add_json_text(&mut set, "bench-paper-data.json", data.to_string())?;
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let typed = check::check_source(text, file, &dir, &set).map_err(first)?;
        let joint = graph::lower_model(&typed)?;
        Ok(Problem {
            typed,
            joint,
            file: file.to_string(),
        })
    }

    /// Start the hyperparameters named in `values` at these (constrained) values: a scalar
    /// by its name, an element of a vector or matrix hyperparameter by its CmdStan name
    /// (`centres.3.2`, as the fit reports it).
    ///
    /// # Errors
    /// A name that is not a hyperparameter (or an element of one) of the model.
    pub fn start_hypers(&mut self, values: &[(String, f64)]) -> Result<(), Diagnostic> {
        let mut slots: std::collections::HashMap<String, (usize, crate::graph::Constraint)> =
            std::collections::HashMap::new();
        for p in self.joint.hypers.iter().filter(|p| p.structure.is_none()) {
            for (i, name) in crate::report::cmdstan_names(&p.name, &p.shape.dims())
                .into_iter()
                .enumerate()
            {
                slots.insert(name, (p.offset + i, p.constraint));
            }
        }
        for (name, v) in values {
            let (offset, constraint) = slots.get(name).ok_or_else(|| {
                Diagnostic::plain(
                    "mvi::paper::unknown_hyper",
                    format!("the benchmark model has no hyperparameter `{name}`"),
                )
            })?;
            self.joint.theta0[*offset] = constraint.unconstrain(*v);
        }
        Ok(())
    }

    /// Fit with the model's `infer` block overridden by `overrides`. `None` when the fit was
    /// interrupted by `interrupt` (Ctrl-C): nothing of it should be kept.
    ///
    /// # Errors
    /// A bad override or the method's failure, as a diagnostic.
    pub fn fit(
        &self,
        overrides: &[(&str, String)],
        interrupt: &Arc<AtomicBool>,
    ) -> Result<Option<FitReport>, Diagnostic> {
        let pairs: Vec<(String, String)> = overrides
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        let options = check::infer_options(&self.typed, &pairs)?;
        let info = RunInfo {
            model_file: self.file.clone(),
            data_files: Vec::new(),
        };
        let mut obs = Progress::with_settings(false, Duration::MAX, interrupt.clone());
        let (_, report) = run::fit(&self.joint, &options, &info, &mut obs)?;
        Ok((!report.interrupted && !obs.interrupted()).then_some(report))
    }
}

/// The numbers the tables need from a fit, filled into `r`.
pub fn fill_record(r: &mut Record, report: &FitReport) {
    if let Some(p) = &report.predict {
        let n = p.n_test.max(1) as f64;
        r.lpd = Some(p.test_lpd / n);
        r.lppd = Some(p.lppd / n);
        match p.metric {
            Some(PredictMetric::ErrorRate(e)) => r.error = Some(e),
            Some(PredictMetric::Mse(m)) => r.mse = Some(m),
            None => {}
        }
    }
    r.elbo = report.elbo_fresh.map(|e| e.value);
    r.log_evidence = report.log_evidence;
    r.theta = report.theta.clone();
    r.seconds = report.wall_time_s;
    r.iterations = Some(report.iterations);
    r.converged = Some(report.converged);
    r.dim_samples = Some((report.dim, report.samples));
    r.notes = report.notes.clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_are_written_as_arrays_of_rows_and_labels_shift_by_one() {
        let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(matrix_json(&m).to_string(), "[[1.0,2.0],[3.0,4.0]]");
        assert_eq!(labels_json(&[0, 2], true).to_string(), "[1,3]");
        assert_eq!(labels_json(&[0, 1], false).to_string(), "[0,1]");
    }
}
