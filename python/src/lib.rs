//! `mvi._mvi`: the Rust side of the Python package.
//!
//! Input: a model's text, its data as a Python mapping, a method and `infer` options as
//! keyword arguments. Output: plain Python values (dicts, lists, strings, bytes) that the
//! Python layer (`mvi/__init__.py`) turns into NumPy arrays, pandas tables and ArviZ data.
//!
//! Every step calls the library functions the CLI calls: `check::check_source` (what
//! `check::load_model` does after reading the files), `graph::lower_model`,
//! `cli::run_options`/`cli::compare_options` for the options, `run::attach_after_fit` (the
//! replicates of `predictive = true`, the log-likelihoods of `loo = true`), `run::fit`, the
//! `report` renderers and `run::loo` ([`after_fit`]). NumPy arrays and pandas columns and tables of numbers reach the data set as
//! buffers of numbers (`DataSet::add_array`), never as text; Python scalars and lists go
//! through the JSON loader (`data::add_json_text`) as a Stan-style JSON text. Either way
//! shapes, integers and constraints are checked exactly as for a `--data` file. A
//! `Diagnostic` becomes `mvi.ModelError`. Everything after the data conversion (parsing,
//! checking, the fit, rendering its reports) runs with the GIL released, so fits in several
//! Python threads run side by side; Ctrl-C is noticed between iterations through the
//! [`Observer`].

mod after_fit;
mod sbc;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mvi::check::{self, Transform, TypedModel};
use mvi::cli::{self, Failure};
use mvi::data::{self, DataSet};
use mvi::diagnostic::Diagnostic;
use mvi::graph::{self, LogJoint};
use mvi::infer::{InferOptions, Observer};
use mvi::posterior::IterRecord;
use mvi::report::{self, FitReport};
use mvi::run::{self, RunInfo};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};

create_exception!(
    mvi,
    ModelError,
    PyValueError,
    "A problem in a model, its data or the options of a fit. The message is the rendered \
     diagnostic (where, what, and a help line); `code`, `line` and `column` say which check \
     failed and where (line and column from 1, `None` when the problem has no place in a \
     text), `diagnostics` lists every (code, message) when several were found."
);

/// The name the data mapping gets in diagnostics (it stands where a file name would).
const DATA_NAME: &str = "<data>";

/// How often a fit on the main thread looks for Ctrl-C (re-acquiring the GIL briefly).
const SIGNAL_CHECK_EVERY: Duration = Duration::from_millis(20);

/// Width diagnostics are rendered at (the CLI's, off a terminal).
const RENDER_WIDTH: usize = 100;

/// A model's text with the names the library needs: the file name diagnostics show and
/// the directory imports and `csv("…")` paths are looked up in.
struct Source {
    text: String,
    name: String,
    dir: PathBuf,
}

impl Source {
    fn new(text: String, name: String, dir: Option<PathBuf>) -> Self {
        let dir = dir.unwrap_or_else(|| PathBuf::from("."));
        Source { text, name, dir }
    }
}

/// What a `ModelError` carries, gathered without the GIL: the rendered message, the first
/// diagnostic's code and place, and every (code, message).
struct ErrorInfo {
    message: String,
    code: Option<&'static str>,
    place: Option<(usize, usize)>,
    file: Option<String>,
    list: Vec<(String, String)>,
}

impl ErrorInfo {
    fn new(diags: &[Diagnostic]) -> Self {
        let message: String = diags
            .iter()
            .map(|d| d.render_plain(RENDER_WIDTH))
            .collect::<Vec<_>>()
            .join("");
        let first = diags.first();
        ErrorInfo {
            message: message.trim_end().to_string(),
            code: first.map(|d| d.code),
            place: first.and_then(place_of),
            file: first.map(|d| d.source_code.name().to_string()),
            list: diags
                .iter()
                .map(|d| (d.code.to_string(), d.message.clone()))
                .collect(),
        }
    }

    /// As a dict (`message`, `code`, `line`, `column`, `file`, `diagnostics`), for an error
    /// the Python layer raises later (`Fit.loo()`).
    fn into_dict(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("message", self.message)?;
        d.set_item("code", self.code)?;
        d.set_item("line", self.place.map(|p| p.0))?;
        d.set_item("column", self.place.map(|p| p.1))?;
        d.set_item("file", self.file)?;
        d.set_item("diagnostics", self.list)?;
        Ok(d)
    }
}

/// The diagnostics of a failure as a `ModelError`.
fn model_error(py: Python<'_>, diags: &[Diagnostic]) -> PyErr {
    let info = ErrorInfo::new(diags);
    let err = ModelError::new_err(info.message);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail; an error here would
    // only lose the attributes, never the exception.
    let _ = value.setattr("code", info.code);
    let _ = value.setattr("line", info.place.map(|p| p.0));
    let _ = value.setattr("column", info.place.map(|p| p.1));
    let _ = value.setattr("file", info.file);
    let _ = value.setattr("diagnostics", info.list);
    err
}

/// Line and column (from 1, the column in characters) of a diagnostic's primary label.
fn place_of(d: &Diagnostic) -> Option<(usize, usize)> {
    let label = d.labels.first()?;
    let text = d.source_code.inner();
    let before = text.get(..label.offset())?;
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((line, before[line_start..].chars().count() + 1))
}

fn failure_error(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::User(diags) => model_error(py, &diags),
        Failure::Code(code) => ModelError::new_err(format!("mvi failed (exit code {code})")),
    }
}

// ---------------------------------------------------------------------------------------
// Data: a Python mapping → arrays of numbers, and a Stan-style JSON text for the rest

/// The data mapping as read from Python: arrays of numbers, and the other entries as a JSON
/// text.
struct PyData {
    /// Scalars and lists, as a Stan-style JSON object, one entry per line (so a diagnostic
    /// shows the entry it is about).
    json: String,
    /// NumPy arrays and pandas columns and tables of numbers: name, shape, numbers row by row.
    arrays: Vec<(String, Vec<usize>, Vec<f64>)>,
}

/// Read the data mapping. Accepts Python scalars (bools as 0/1), (nested) lists and tuples,
/// NumPy arrays and scalars, and anything with `to_numpy()` (pandas Series and DataFrames).
/// Arrays of booleans, integers and floats are read from their buffers; others (object
/// arrays, say) element by element through the JSON text, which reports what is wrong.
fn read_data(data: &Bound<'_, PyAny>) -> PyResult<PyData> {
    let mapping = data.cast::<PyMapping>().map_err(|_| {
        PyTypeError::new_err(format!(
            "data must be a mapping of names to values (a dict), not {}",
            type_name(data)
        ))
    })?;
    let mut json = String::from("{\n");
    let mut arrays = Vec::new();
    let mut first = true;
    for item in mapping.items()?.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let key: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!("data names must be strings, not {}", type_name(&key)))
        })?;
        if let Some((dims, values)) = numeric_array(&value)? {
            arrays.push((key, dims, values));
            continue;
        }
        if !std::mem::take(&mut first) {
            json.push_str(",\n");
        }
        json.push_str("  ");
        json.push_str(&serde_json_string(&key));
        json.push_str(": ");
        write_value(&mut json, &key, &value)?;
    }
    json.push_str("\n}");
    Ok(PyData { json, arrays })
}

/// A NumPy array (or pandas Series or DataFrame) of booleans, integers or floats: its shape
/// and its numbers row by row, read from its buffer; `None` for anything else.
fn numeric_array(v: &Bound<'_, PyAny>) -> PyResult<Option<(Vec<usize>, Vec<f64>)>> {
    let v = if v.hasattr("to_numpy")? && !v.hasattr("__array_interface__")? {
        // a pandas Series or DataFrame (NumPy arrays have no `to_numpy`)
        v.call_method0("to_numpy")?
    } else {
        v.clone()
    };
    if !(v.hasattr("dtype")? && v.hasattr("shape")? && v.hasattr("ndim")?) {
        return Ok(None);
    }
    let kind: String = v.getattr("dtype")?.getattr("kind")?.extract()?;
    let shape: Vec<usize> = v.getattr("shape")?.extract()?;
    let np = v.py().import("numpy")?;
    let values = match kind.as_str() {
        // C order and aligned: an array that Dask or pickle rebuilt from a byte buffer may sit
        // at any address, and a buffer of f64 must be aligned to be read in place
        "f" => {
            let a = np.call_method1("require", (&v, "float64", ["C", "A"]))?;
            PyBuffer::<f64>::get(&a)?.to_vec(v.py())?
        }
        "b" | "i" | "u" => {
            let a = np.call_method1("require", (&v, "int64", ["C", "A"]))?;
            let ints = PyBuffer::<i64>::get(&a)?.to_vec(v.py())?;
            ints.into_iter().map(|i| i as f64).collect()
        }
        _ => return Ok(None),
    };
    Ok(Some((shape, values)))
}

fn serde_json_string(s: &str) -> String {
    // JSON string escaping of a key: quotes, backslashes and control characters.
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "an unknown type".to_string(), |n| format!("`{n}`"))
}

fn write_value(out: &mut String, key: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    if v.is_instance_of::<PyBool>() {
        out.push_str(if v.extract::<bool>()? { "1" } else { "0" });
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => {
                let _ = write!(out, "{i}");
            }
            // beyond i64: written as the real number it is close to
            Err(_) => write_real(out, v.extract::<f64>()?),
        }
    } else if v.is_instance_of::<PyFloat>() {
        write_real(out, v.extract::<f64>()?);
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        out.push('[');
        for (i, x) in v.try_iter()?.enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_value(out, key, &x?)?;
        }
        out.push(']');
    } else if v.hasattr("to_numpy")? {
        // a pandas Series or DataFrame (NumPy arrays have no `to_numpy`)
        write_value(out, key, &v.call_method0("to_numpy")?)?;
    } else if v.hasattr("dtype")? && v.hasattr("shape")? {
        write_array(out, key, v)?;
    } else if v.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "data `{key}` is a string; data values are numbers or arrays of numbers"
        )));
    } else {
        return Err(PyTypeError::new_err(format!(
            "data `{key}` is a {}; data values are numbers, lists, NumPy arrays or pandas columns",
            type_name(v)
        )));
    }
    Ok(())
}

/// A NumPy array (or scalar): booleans and integers as integers, floats as reals, other
/// kinds element by element.
fn write_array(out: &mut String, key: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = v.py();
    let np = py.import("numpy")?;
    let kind: String = v.getattr("dtype")?.getattr("kind")?.extract()?;
    let shape: Vec<usize> = v.getattr("shape")?.extract()?;
    let (is_int, dtype) = match kind.as_str() {
        "b" | "i" | "u" => (true, "<i8"),
        "f" => (false, "<f8"),
        _ => return write_value(out, key, &v.call_method0("tolist")?),
    };
    let contiguous = np.call_method1("ascontiguousarray", (v, dtype))?;
    let bytes = contiguous.call_method0("tobytes")?;
    let bytes = bytes.cast::<PyBytes>()?.as_bytes();
    let mut cells = bytes.chunks_exact(8).map(|c| {
        let b: [u8; 8] = c.try_into().expect("chunks of 8 bytes");
        b
    });
    write_nested(out, &shape, &mut || {
        let b = cells
            .next()
            .expect("a C-contiguous array holds prod(shape) cells");
        if is_int {
            i64::from_le_bytes(b).to_string()
        } else {
            let mut s = String::new();
            write_real(&mut s, f64::from_le_bytes(b));
            s
        }
    });
    Ok(())
}

fn write_nested(out: &mut String, shape: &[usize], next: &mut dyn FnMut() -> String) {
    let Some((&n, rest)) = shape.split_first() else {
        out.push_str(&next());
        return;
    };
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        write_nested(out, rest, next);
    }
    out.push(']');
}

/// A real in shortest round-trip form (`{:?}` keeps `1.0` a real and writes `1e300` short);
/// non-finite values as the words the JSON loader reports as non-numbers.
fn write_real(out: &mut String, x: f64) {
    if x.is_finite() {
        let _ = write!(out, "{x:?}");
    } else if x.is_nan() {
        out.push_str("NaN");
    } else if x > 0.0 {
        out.push_str("Infinity");
    } else {
        out.push_str("-Infinity");
    }
}

// ---------------------------------------------------------------------------------------
// The pipeline, as the CLI runs it

/// Read the data and check the model against it (no GIL needed).
fn check_model(src: &Source, data: PyData) -> Result<TypedModel, Vec<Diagnostic>> {
    let set = data_set(data)?;
    check::check_source(&src.text, &src.name, &src.dir, &set)
}

/// The data as the checker reads them.
fn data_set(data: PyData) -> Result<DataSet, Vec<Diagnostic>> {
    let mut set = DataSet::default();
    data::add_json_text(&mut set, DATA_NAME, data.json).map_err(|d| vec![d])?;
    for (name, dims, values) in data.arrays {
        set.add_array(DATA_NAME, &name, dims, values)
            .map_err(|d| vec![d])?;
    }
    Ok(set)
}

fn load(src: &Source, data: PyData) -> Result<(TypedModel, LogJoint), Failure> {
    let typed = check_model(src, data)?;
    let joint = graph::lower_model(&typed)?;
    Ok((typed, joint))
}

/// An observer for fits called from Python: on the main thread it runs Python's signal
/// handlers every [`SIGNAL_CHECK_EVERY`], holding the GIL only for that, and stops the fit
/// when one raises (Ctrl-C → `KeyboardInterrupt`), keeping the error to raise afterwards.
struct Signals {
    enabled: bool,
    last: Instant,
    raised: Option<PyErr>,
}

impl Signals {
    fn new(enabled: bool) -> Self {
        Signals {
            enabled,
            last: Instant::now(),
            raised: None,
        }
    }
}

impl Observer for Signals {
    fn iteration(&mut self, _record: &IterRecord) -> bool {
        if self.raised.is_some() {
            return false;
        }
        if self.enabled && self.last.elapsed() >= SIGNAL_CHECK_EVERY {
            self.last = Instant::now();
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                self.raised = Some(e);
                return false;
            }
        }
        true
    }

    fn trace_line(&mut self, line: &str) {
        mvi::term::err_out(line);
    }
}

/// Whether this is Python's main thread (the only one signal handlers run on).
fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    let current = threading.call_method0("current_thread")?;
    let main = threading.call_method0("main_thread")?;
    Ok(current.is(&main))
}

/// The run's options as `--method`/`--set` would give them: the CLI's own parsing.
fn set_args(options: &[(String, String)]) -> Vec<String> {
    options.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// One keyword argument as the text `--set key=value` would take.
fn option_text(key: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract::<bool>()? { "true" } else { "false" }.to_string());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(v.extract::<i64>()?.to_string());
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(format!("{:?}", v.extract::<f64>()?));
    }
    if v.is_instance_of::<PyString>() {
        return v.extract::<String>();
    }
    if let Ok(blocks) = v.extract::<Vec<Vec<String>>>() {
        let inner: Vec<String> = blocks.iter().map(|b| format!("[{}]", b.join(", "))).collect();
        return Ok(format!("[{}]", inner.join(", ")));
    }
    Err(PyTypeError::new_err(format!(
        "option `{key}` is a {}; options are numbers, strings, booleans or (for `blocks`) lists of lists of names",
        type_name(v)
    )))
}

fn options_list(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    if let Some(d) = options {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let text = option_text(&key, &v)?;
            out.push((key, text));
        }
    }
    Ok(out)
}

fn run_info(src: &Source) -> RunInfo {
    RunInfo {
        model_file: src.name.clone(),
        data_files: vec![DATA_NAME.to_string()],
    }
}

/// One finished fit, rendered: `fit.json`'s text, the summary, the column-major draws with
/// their blocks, and the per-draw numbers as little-endian f64 bytes. Made with the GIL
/// released (rendering sorts every column for its quantiles); [`FitOutput::into_py`] only
/// moves it into Python objects.
struct FitOutput {
    json: String,
    summary: String,
    columns: Vec<String>,
    n_draws: usize,
    draws: Vec<u8>,
    blocks: Vec<(String, Vec<usize>)>,
    params: Vec<String>,
    lp: Vec<u8>,
    log_p: Vec<u8>,
    log_q: Option<Vec<u8>>,
    /// NUTS's per-draw numbers (draws.csv's sampler columns); empty for other methods.
    sampler: Vec<(&'static str, Vec<u8>)>,
    /// Generated outputs, replicates, observed data, log-likelihood and LOO.
    after: after_fit::AfterFit,
}

impl FitOutput {
    fn new(typed: &TypedModel, joint: &LogJoint, r: &FitReport) -> Self {
        // the report's columns: parameters, reported lets, generated outputs, replicates
        let outputs = [&joint.generated, &joint.replicates]
            .into_iter()
            .flatten()
            .flat_map(|g| &g.outputs)
            .map(|o| (o.name.clone(), o.shape.dims()));
        let blocks = joint
            .params
            .iter()
            .chain(&joint.reported)
            .map(|p| (p.name.clone(), p.shape.dims()))
            .chain(outputs)
            .collect();
        FitOutput {
            json: report::render_fit_json(r),
            summary: report::render_summary(r),
            columns: r.columns.clone(),
            n_draws: r.n_draws(),
            draws: f64_bytes(r.draws.as_slice()),
            blocks,
            params: joint.params.iter().map(|p| p.name.clone()).collect(),
            lp: f64_bytes(&r.lp),
            log_p: f64_bytes(&r.log_p),
            log_q: r.log_q.as_deref().map(f64_bytes),
            sampler: r.mcmc.as_ref().map_or_else(Vec::new, sampler_columns),
            after: after_fit::AfterFit::new(typed, joint, r),
        }
    }

    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("json", self.json)?;
        d.set_item("summary", self.summary)?;
        d.set_item("columns", self.columns)?;
        d.set_item("n_draws", self.n_draws)?;
        d.set_item("draws", PyBytes::new(py, &self.draws))?;
        d.set_item("blocks", self.blocks)?;
        d.set_item("params", self.params)?;
        d.set_item("lp", PyBytes::new(py, &self.lp))?;
        d.set_item("log_p", PyBytes::new(py, &self.log_p))?;
        d.set_item("log_q", self.log_q.map(|q| PyBytes::new(py, &q)))?;
        let sampler = PyDict::new(py);
        for (name, values) in self.sampler {
            sampler.set_item(name, PyBytes::new(py, &values))?;
        }
        d.set_item("sampler", sampler)?;
        self.after.add_to(py, &d)?;
        Ok(d)
    }
}

/// NUTS's per-draw numbers, each column as little-endian f64 bytes.
fn sampler_columns(m: &mvi::report::mcmc::McmcReport) -> Vec<(&'static str, Vec<u8>)> {
    let column = |f: fn(&mvi::posterior::DrawStats) -> f64| -> Vec<u8> {
        f64_bytes(&m.stats.iter().map(f).collect::<Vec<_>>())
    };
    vec![
        ("accept_stat", column(|s| s.accept_stat)),
        ("stepsize", column(|s| s.stepsize)),
        ("treedepth", column(|s| s.treedepth as f64)),
        ("n_leapfrog", column(|s| s.n_leapfrog as f64)),
        ("divergent", column(|s| f64::from(u8::from(s.divergent)))),
        ("energy", column(|s| s.energy)),
    ]
}

fn f64_bytes(x: &[f64]) -> Vec<u8> {
    x.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Check that a model text parses (syntax errors raise `ModelError` at `Model(...)`); a
/// `name` ending in `.stan` is a Stan program, which must parse and translate.
#[pyfunction]
#[pyo3(signature = (source, name))]
fn parse(py: Python<'_>, source: String, name: String) -> PyResult<()> {
    let parsed = move || {
        if mvi::stan::is_stan_file(&name) {
            mvi::stan::translate(&source, &name).err()
        } else {
            mvi::syntax::parse_program(&source, &name).err()
        }
    };
    match py.detach(parsed) {
        Some(d) => Err(model_error(py, &[d])),
        None => Ok(()),
    }
}

/// The layout `mvi check` prints, as a dict.
#[pyfunction]
#[pyo3(signature = (source, name, model_dir, data))]
fn check_layout<'py>(
    py: Python<'py>,
    source: String,
    name: String,
    model_dir: Option<PathBuf>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let src = Source::new(source, name, model_dir);
    let text = read_data(data)?;
    let result = py.detach(move || {
        load(&src, text).map(|(typed, _)| {
            let report = check::layout_report(&typed);
            (typed, report)
        })
    });
    let (typed, report) = result.map_err(|f| failure_error(py, f))?;
    layout_value(py, &typed, report)
}

/// The layout as a dict; `report` is `check::layout_report`'s text, rendered with the GIL
/// released.
fn layout_value<'py>(py: Python<'py>, m: &TypedModel, report: String) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("model", m.source.name())?;
    let sizes = PyDict::new(py);
    for (k, v) in &m.data.sizes {
        sizes.set_item(k, v)?;
    }
    d.set_item("sizes", sizes)?;
    let data = PyList::empty(py);
    for decl in &m.data_decls {
        let e = PyDict::new(py);
        e.set_item("name", &decl.name)?;
        e.set_item("type", decl.shape.to_string())?;
        e.set_item("declared", &decl.declared)?;
        e.set_item(
            "value",
            m.data.get(&decl.name).and_then(mvi::data::Value::as_scalar),
        )?;
        data.append(e)?;
    }
    d.set_item("data", data)?;
    d.set_item("dim", m.dim)?;
    let params = PyList::empty(py);
    for p in &m.params {
        let e = slot_value(py, p)?;
        e.set_item("slice", (p.len > 0).then(|| (p.offset + 1, p.offset + p.len)))?;
        params.append(e)?;
    }
    d.set_item("params", params)?;
    d.set_item("hyper_dim", m.hyper_dim)?;
    let hypers = PyList::empty(py);
    for p in &m.hypers {
        let e = slot_value(py, p)?;
        e.set_item("init", p.init.clone())?;
        hypers.append(e)?;
    }
    d.set_item("hypers", hypers)?;
    d.set_item("method", run::method_name(&m.infer))?;
    let options = PyDict::new(py);
    for (k, v) in run::options_with_defaults(&m.infer) {
        if k != "method" {
            options.set_item(k, v)?;
        }
    }
    d.set_item("options", options)?;
    d.set_item("ignored", m.data.ignored.clone())?;
    d.set_item("report", report)?;
    Ok(d)
}

fn slot_value<'py>(py: Python<'py>, p: &check::Slot) -> PyResult<Bound<'py, PyDict>> {
    let e = PyDict::new(py);
    e.set_item("name", &p.name)?;
    e.set_item("type", p.shape.to_string())?;
    e.set_item("declared", &p.declared)?;
    let (lower, upper) = match p.transform {
        Transform::Identity => (None, None),
        Transform::Lower(a) => (Some(a), None),
        Transform::Upper(b) => (None, Some(b)),
        Transform::LowerUpper(a, b) => (Some(a), Some(b)),
        // a constrained type (`simplex`, …) or bounds that are expressions: no constant bounds
        Transform::Type(_) | Transform::Dependent => (None, None),
    };
    e.set_item("lower", lower)?;
    e.set_item("upper", upper)?;
    e.set_item("transform", p.transform.name())?;
    e.set_item("size", p.len)?;
    Ok(e)
}

/// Fit a model: `method` as `--method`, `options` as `--set key=value`.
#[pyfunction]
#[pyo3(signature = (source, name, model_dir, data, method=None, options=None))]
fn fit<'py>(
    py: Python<'py>,
    source: String,
    name: String,
    model_dir: Option<PathBuf>,
    data: &Bound<'py, PyAny>,
    method: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let src = Source::new(source, name, model_dir);
    let text = read_data(data)?;
    let set = set_args(&options_list(options)?);
    let signals = Signals::new(on_main_thread(py)?);
    let (result, signals) = py.detach(move || {
        let mut signals = signals;
        let result = (|| {
            let (typed, mut joint) = load(&src, text)?;
            let options: InferOptions = cli::run_options(&typed, method.as_deref(), &set)?;
            // `predictive = true` and `loo = true` add their graphs, as `mvi run` does
            run::attach_after_fit(&typed, &mut joint, &options)?;
            let (_, report) = run::fit(&joint, &options, &run_info(&src), &mut signals)?;
            Ok::<_, Failure>(FitOutput::new(&typed, &joint, &report))
        })();
        (result, signals)
    });
    if let Some(e) = signals.raised {
        return Err(e);
    }
    result.map_err(|f| failure_error(py, f))?.into_py(py)
}

/// Fit several methods as `mvi compare` does: returns `render_compare_json`'s text, the
/// methods that failed with their diagnostics, and those a Ctrl-C left unrun.
#[pyfunction]
#[pyo3(signature = (source, name, model_dir, data, methods, options=None))]
fn compare<'py>(
    py: Python<'py>,
    source: String,
    name: String,
    model_dir: Option<PathBuf>,
    data: &Bound<'py, PyAny>,
    methods: Vec<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let src = Source::new(source, name, model_dir);
    let text = read_data(data)?;
    let set = set_args(&options_list(options)?);
    let signals = Signals::new(on_main_thread(py)?);
    // the reports rendered (compare JSON, table), the methods that failed, those not run
    type Outcome = (Option<(String, String)>, Vec<(String, Diagnostic)>, Vec<String>);
    let (result, signals) = py.detach(move || {
        let mut signals = signals;
        let result = (|| -> Result<Outcome, Failure> {
            let (typed, joint) = load(&src, text)?;
            let runs = cli::compare_options(&typed, &methods, &set)?;
            let mut reports = Vec::new();
            let mut failed = Vec::new();
            let mut not_run = Vec::new();
            for (i, (method, options)) in runs.iter().enumerate() {
                if signals.raised.is_some() {
                    not_run = runs[i..].iter().map(|(m, _)| m.clone()).collect();
                    break;
                }
                match run::fit(&joint, options, &run_info(&src), &mut signals) {
                    Ok((_, report)) => reports.push(report),
                    Err(d) => failed.push((method.clone(), d)),
                }
            }
            let rendered = (!reports.is_empty()).then(|| {
                (
                    report::render_compare_json(&reports),
                    report::render_compare(&reports),
                )
            });
            Ok((rendered, failed, not_run))
        })();
        (result, signals)
    });
    if let Some(e) = signals.raised {
        return Err(e);
    }
    let (rendered, failed, not_run) = result.map_err(|f| failure_error(py, f))?;
    let Some((json, table)) = rendered else {
        let diags: Vec<Diagnostic> = failed.into_iter().map(|(_, d)| d).collect();
        return Err(model_error(py, &diags));
    };
    let d = PyDict::new(py);
    d.set_item("json", json)?;
    d.set_item("table", table)?;
    let failed: Vec<(String, String)> = failed
        .iter()
        .map(|(m, d)| (m.clone(), d.render_plain(RENDER_WIDTH)))
        .collect();
    d.set_item("failed", failed)?;
    d.set_item("not_run", not_run)?;
    Ok(d)
}

/// The Rust extension of the `mvi` package.
#[pymodule]
fn _mvi(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The CLI's glibc allocator thresholds (see `run::tune_allocator`): without them a
    // banana fit from Python took 12 % longer than `mvi run` (page faults of blocks mapped
    // and unmapped again). They hold for the whole process: freed blocks up to 256 MiB stay
    // in it for reuse. mallopt takes the arena lock, so other threads may already exist.
    run::tune_allocator();
    m.add("ModelError", m.py().get_type::<ModelError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(check_layout, m)?)?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(after_fit::compare_models, m)?)?;
    m.add_function(wrap_pyfunction!(sbc::sbc_simulations, m)?)?;
    m.add_function(wrap_pyfunction!(sbc::sbc_summary, m)?)?;
    Ok(())
}
