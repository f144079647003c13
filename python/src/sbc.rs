//! Simulation-based calibration for the Python layer (`mvi.sbc`): the simulations of a run,
//! computed wherever the caller sends them (this process's cores, a Dask cluster), and the
//! summary of their ranks.
//!
//! Input: the model's text, its data, the fit's method and options, L and the simulation
//! indices. Output: per simulation a dict `{index, ranks, below, dependent, failure}`
//! (`run::sbc::Simulation`), and the summary as `mvi sbc --json` prints it. Simulation i
//! depends only on the seed and i, so the same indices give the same numbers wherever they
//! run.

use std::sync::atomic::AtomicBool;

use mvi::check;
use mvi::cli::Failure;
use mvi::data::DataSet;
use mvi::run::{self, sbc::Sbc, sbc::Simulation};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{data_set, failure_error, options_list, read_data, Source};

/// What every simulation of a run shares, as the caller gave it.
struct Setup {
    src: Source,
    set: DataSet,
    overrides: Vec<(String, String)>,
    l: usize,
}

impl Setup {
    fn new(
        source: String,
        name: String,
        model_dir: Option<std::path::PathBuf>,
        data: &Bound<'_, PyAny>,
        rank_draws: usize,
        method: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Result<Setup, Failure>> {
        let src = Source::new(source, name, model_dir);
        let mut overrides = Vec::new();
        if let Some(m) = method {
            overrides.push(("method".to_string(), m));
        }
        overrides.extend(options_list(options)?);
        let data = read_data(data)?;
        Ok(data_set(data).map_err(Failure::from).map(|set| Setup {
            src,
            set,
            overrides,
            l: rank_draws,
        }))
    }

    /// Check the model and set the run up, then `f` with it and the method's name.
    fn with<T>(&self, f: impl FnOnce(&Sbc<'_>, &str) -> Result<T, Failure>) -> Result<T, Failure> {
        if self.l == 0 {
            return Err(mvi::diagnostic::Diagnostic::plain(
                "mvi::sbc::no_rank_draws",
                "`rank_draws=0`: ranks among no draws say nothing",
            )
            .with_help("give L ≥ 1, e.g. `rank_draws=99` (ranks 0..=99, 100 bins)")
            .into());
        }
        let typed = check::check_source(&self.src.text, &self.src.name, &self.src.dir, &self.set)?;
        let options = check::infer_options(&typed, &self.overrides)?;
        let seed = run::option_int(&options, "seed", 0);
        let method = run::method_name(&options);
        let sbc = Sbc::new(
            &typed,
            &self.src.text,
            &self.src.name,
            &self.src.dir,
            &self.set,
            self.overrides.clone(),
            seed,
            self.l,
        )?;
        f(&sbc, &method)
    }
}

/// Run the simulations `indices` of a calibration run on this process's cores; a list of
/// dicts, one per simulation in index order.
#[pyfunction]
#[pyo3(signature = (source, name, model_dir, data, indices, rank_draws, method=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub fn sbc_simulations<'py>(
    py: Python<'py>,
    source: String,
    name: String,
    model_dir: Option<std::path::PathBuf>,
    data: &Bound<'py, PyAny>,
    indices: Vec<usize>,
    rank_draws: usize,
    method: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let setup = match Setup::new(source, name, model_dir, data, rank_draws, method, options)? {
        Ok(s) => s,
        Err(f) => return Err(failure_error(py, f)),
    };
    let sims = py
        .detach(|| {
            setup.with(|sbc, _| {
                let stop = AtomicBool::new(false);
                Ok(sbc.run(&indices, &stop, &|_| {}))
            })
        })
        .map_err(|f| failure_error(py, f))?;
    let out = PyList::empty(py);
    for s in sims {
        let d = PyDict::new(py);
        d.set_item("index", s.index)?;
        d.set_item("ranks", s.ranks)?;
        d.set_item("below", s.below)?;
        d.set_item("dependent", s.dependent)?;
        d.set_item("failure", s.failure)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The summary of a run's simulations (dicts as [`sbc_simulations`] gives them), as
/// `mvi sbc --json` prints it; `asked` is the number of simulations asked for.
#[pyfunction]
#[pyo3(signature = (source, name, model_dir, data, simulations, asked, rank_draws, method=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub fn sbc_summary<'py>(
    py: Python<'py>,
    source: String,
    name: String,
    model_dir: Option<std::path::PathBuf>,
    data: &Bound<'py, PyAny>,
    simulations: &Bound<'py, PyList>,
    asked: usize,
    rank_draws: usize,
    method: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<String> {
    let mut sims = Vec::with_capacity(simulations.len());
    for item in simulations.iter() {
        let d = item.cast::<PyDict>()?;
        let get = |key: &str| -> PyResult<Bound<'py, PyAny>> {
            d.get_item(key)?
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))
        };
        sims.push(Simulation {
            index: get("index")?.extract()?,
            ranks: get("ranks")?.extract()?,
            below: get("below")?.extract()?,
            dependent: get("dependent")?.extract()?,
            failure: get("failure")?.extract()?,
        });
    }
    sims.sort_by_key(|s| s.index);
    let setup = match Setup::new(source, name, model_dir, data, rank_draws, method, options)? {
        Ok(s) => s,
        Err(f) => return Err(failure_error(py, f)),
    };
    py.detach(|| {
        setup.with(|sbc, method| {
            let outcome = run::sbc::summarise(sbc, method, &sims, asked)?;
            Ok(outcome.render_json())
        })
    })
    .map_err(|f| failure_error(py, f))
}
