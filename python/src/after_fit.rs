//! What a fit adds after its draws, for the Python layer: the generated outputs and the
//! replicates of `predictive = true` with the observed data they replicate, the pointwise
//! log-likelihood and PSIS-LOO of `loo = true`, and `compare_models`.
//!
//! Input: the checked model, its [`LogJoint`] (with [`run::attach_after_fit`] applied) and
//! the [`FitReport`]. Output: plain values (names, shapes, little-endian f64 bytes, JSON
//! text) that `mvi/__init__.py` turns into NumPy arrays and ArviZ groups. The numbers are
//! the report's; LOO is `run::loo::model_loo`'s, as `mvi loo` prints it, and the model
//! comparison is `run::loo::compare_models`'s, as `mvi compare-models` prints it.

use mvi::check::TypedModel;
use mvi::data::Value as DataValue;
use mvi::diagnostic::Diagnostic;
use mvi::graph::LogJoint;
use mvi::posterior::loo::psis_loo;
use mvi::report::FitReport;
use mvi::run::loo::{self, ModelLoo};
use nalgebra::DMatrix;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::{f64_bytes, model_error, ErrorInfo};

/// A data variable that a replicate or a log-likelihood refers to: its dims, its values
/// column-major (as draws.csv orders a matrix) as f64 bytes, and whether it holds integers.
pub struct ObservedData {
    name: String,
    dims: Vec<usize>,
    values: Vec<u8>,
    integer: bool,
}

/// The pointwise log-likelihood of a `loo = true` fit ([`mvi::report::LogLikDraws`]).
pub struct LogLik {
    vars: Vec<(String, usize)>,
    /// draws × observations, column-major, as f64 bytes.
    values: Vec<u8>,
    observed: Vec<u8>,
    correction: Option<Vec<u8>>,
}

/// Everything after the draws: generated outputs, replicates, observed data, log-likelihood
/// and LOO (each empty or `None` when the fit did not ask for it).
pub struct AfterFit {
    /// Names of the `generated` block's outputs (columns after the reported lets).
    generated: Vec<String>,
    /// Each replicate with the data variable it replicates (`("y_rep", "y")`).
    replicates: Vec<(String, String)>,
    observed: Vec<ObservedData>,
    log_lik: Option<LogLik>,
    /// `loo_value`'s JSON text, or the diagnostic that says why there is no LOO.
    loo: Option<Result<String, ErrorInfo>>,
}

impl AfterFit {
    /// Gather what `joint`'s after-fit graphs added to `r`; computes LOO when `r` has the
    /// pointwise log-likelihood.
    pub fn new(typed: &TypedModel, joint: &LogJoint, r: &FitReport) -> Self {
        let generated = joint
            .generated
            .iter()
            .flat_map(|g| &g.outputs)
            .map(|o| o.name.clone())
            .collect();
        let replicates: Vec<(String, String)> = joint
            .replicates
            .iter()
            .flat_map(|g| &g.outputs)
            .map(|o| {
                let data = o.name.strip_suffix("_rep").unwrap_or(&o.name);
                (o.name.clone(), data.to_string())
            })
            .collect();
        let ll_vars = r.log_lik.iter().flat_map(|ll| ll.vars.iter().map(|v| &v.0));
        let mut observed: Vec<ObservedData> = Vec::new();
        for name in replicates.iter().map(|r| &r.1).chain(ll_vars) {
            if observed.iter().all(|o| &o.name != name) {
                observed.extend(observed_data(typed, name));
            }
        }
        let log_lik = r.log_lik.as_ref().map(|ll| LogLik {
            vars: ll.vars.clone(),
            values: f64_bytes(ll.values.as_slice()),
            observed: f64_bytes(&ll.observed),
            correction: ll.log_correction.as_deref().map(f64_bytes),
        });
        let loo = r.log_lik.as_ref().map(|_| {
            loo::model_loo(typed, r)
                .map(|m| loo::loo_value(&m.loo).to_string())
                .map_err(|d| ErrorInfo::new(&[d]))
        });
        AfterFit {
            generated,
            replicates,
            observed,
            log_lik,
            loo,
        }
    }

    /// Add the entries `generated`, `replicates`, `observed`, `log_lik`, `loo` and
    /// `loo_error` to a fit's dict.
    pub fn add_to(self, py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<()> {
        d.set_item("generated", self.generated)?;
        d.set_item("replicates", self.replicates)?;
        let observed = PyDict::new(py);
        for o in self.observed {
            let bytes = PyBytes::new(py, &o.values);
            observed.set_item(o.name, (o.dims, bytes, o.integer))?;
        }
        d.set_item("observed", observed)?;
        let log_lik = match self.log_lik {
            None => None,
            Some(ll) => {
                let e = PyDict::new(py);
                e.set_item("vars", ll.vars)?;
                e.set_item("values", PyBytes::new(py, &ll.values))?;
                e.set_item("observed", PyBytes::new(py, &ll.observed))?;
                e.set_item("correction", ll.correction.map(|c| PyBytes::new(py, &c)))?;
                Some(e)
            }
        };
        d.set_item("log_lik", log_lik)?;
        let (loo, error) = match self.loo {
            None => (None, None),
            Some(Ok(json)) => (Some(json), None),
            Some(Err(info)) => (None, Some(info.into_dict(py)?)),
        };
        d.set_item("loo", loo)?;
        d.set_item("loo_error", error)?;
        Ok(())
    }
}

/// The data variable `name` (dims, column-major values, integer-ness); `None` if the
/// model has no such data.
fn observed_data(typed: &TypedModel, name: &str) -> Option<ObservedData> {
    let (dims, values, integer) = match typed.data.get(name)? {
        DataValue::Int(i) => (vec![], vec![*i as f64], true),
        DataValue::Real(x) => (vec![], vec![*x], false),
        DataValue::Vector(v) => (vec![v.len()], v.iter().copied().collect(), false),
        DataValue::Matrix(m) => (vec![m.nrows(), m.ncols()], m.iter().copied().collect(), false),
        DataValue::Ints(v) => (vec![v.len()], v.iter().map(|&k| k as f64).collect(), true),
    };
    Some(ObservedData {
        name: name.to_string(),
        dims,
        values: f64_bytes(&values),
        integer,
    })
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")))
        .collect()
}

/// One model for [`compare_models`]: its name, method, number of draws, and its fit's
/// `log_lik` entry (values, observed values, correction) as f64 bytes.
type LooInput<'py> = (
    String,
    String,
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
);

/// One fit's pointwise log-likelihood, read from Python's bytes.
struct Scored {
    name: String,
    method: String,
    n_draws: usize,
    values: Vec<f64>,
    observed: Vec<f64>,
    correction: Option<Vec<f64>>,
}

impl Scored {
    fn new((name, method, n_draws, values, observed, correction): &LooInput<'_>) -> Self {
        Scored {
            name: name.clone(),
            method: method.clone(),
            n_draws: *n_draws,
            values: f64s(values.as_bytes()),
            observed: f64s(observed.as_bytes()),
            correction: correction.as_ref().map(|c| f64s(c.as_bytes())),
        }
    }

    /// PSIS-LOO as `run::loo::model_loo` computes it (r_eff = 1).
    fn into_model_loo(self) -> (String, ModelLoo) {
        let n = self.values.len().checked_div(self.n_draws).unwrap_or(0);
        let ll = DMatrix::from_column_slice(self.n_draws, n, &self.values);
        let loo = psis_loo(&ll, self.correction.as_deref(), 1.0);
        let m = ModelLoo {
            loo,
            observed: self.observed,
            method: self.method,
        };
        (self.name, m)
    }
}

/// The `az.compare` table of fits made with `loo = true` (`mvi compare-models`): returns
/// `render_comparison_json`'s text and `render_comparison_text`'s. Each fit's PSIS-LOO is
/// computed again from its pointwise log-likelihood, as `run::loo::model_loo` does.
#[pyfunction]
pub fn compare_models(py: Python<'_>, fits: Vec<LooInput<'_>>) -> PyResult<(String, String)> {
    if fits.is_empty() {
        return Err(PyValueError::new_err("compare_models needs at least one fit"));
    }
    let scored: Vec<Scored> = fits.iter().map(Scored::new).collect();
    let result = py.detach(move || {
        let models: Vec<(String, ModelLoo)> = scored.into_iter().map(Scored::into_model_loo).collect();
        let rows = loo::compare_models(&models).map_err(|d| vec![d])?;
        Ok((
            loo::render_comparison_json(&rows),
            loo::render_comparison_text(&models, &rows),
        ))
    });
    result.map_err(|d: Vec<Diagnostic>| model_error(py, &d))
}
