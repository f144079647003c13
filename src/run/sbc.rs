//! Simulation-based calibration (`mvi sbc`, Talts et al. 2018): for each simulation, the
//! parameters drawn from the prior (ancestrally), the data drawn from the model at them, a
//! fit of the simulated data by the method under test, and the rank of each true value
//! among L of the fit's draws. A calibrated method gives uniform ranks.
//!
//! Input: the model's text, its data set (sizes, covariates, and the observed variables,
//! whose values each simulation replaces), the fit's option overrides. Output: one
//! [`Simulation`] per simulation, in index order, and their [`SbcOutcome`]. Simulation i uses
//! streams derived from (seed, i) only, so a run is the same whatever the order, the number
//! of threads, or whether it was resumed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::prior::{ancestral_draws, Prior, PriorSampler};
use super::{constrained_draws, RunInfo};
use crate::check::{self, TypedModel};
use crate::data::DataSet;
use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::graph::generate::{self, Generated};
use crate::graph::{self, Reading};
use crate::infer::Silent;
use crate::posterior::sbc::{self, SbcParam};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// The name of the rank of the log-likelihood, beside the parameters' columns.
pub const LOG_LIK: &str = "log_lik";

/// What one simulation gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// Its index, 0-based.
    pub index: usize,
    /// Per column of [`Sbc::names`], the rank of the true value among the L thinned
    /// draws (0..=L); empty when the fit failed.
    pub ranks: Vec<u32>,
    /// Per column, the share of all the fit's draws below the true value (VSBC's p); empty
    /// when the fit failed.
    pub below: Vec<f64>,
    /// Whether the thinned draws of some column were not independent (an MCMC run whose
    /// ESS is below L).
    pub dependent: bool,
    /// Why the fit failed, if it did.
    pub failure: Option<String>,
}

/// The ranks of one fit.
#[derive(Debug, Default)]
struct Ranked {
    ranks: Vec<u32>,
    below: Vec<f64>,
    dependent: bool,
}

/// The setup of a calibration run: what every simulation shares.
pub struct Sbc<'a> {
    text: &'a str,
    file_name: &'a str,
    model_dir: &'a Path,
    data: &'a DataSet,
    prior: Prior,
    draw_params: Generated,
    replicates: Generated,
    /// The fit's option overrides (method, `--set`).
    overrides: Vec<(String, String)>,
    seed: u64,
    /// Draws the ranks are taken among.
    pub l: usize,
    /// The ranked columns: the parameters' and reported `let`s' coordinates, then
    /// [`LOG_LIK`].
    pub names: Vec<String>,
}

/// Why a model cannot be calibrated by simulation, pointing at the model.
fn not_generative(typed: &TypedModel, why: &str) -> Diagnostic {
    Diagnostic::plain(
        "mvi::sbc::not_generative",
        format!("simulation-based calibration needs parameters drawn from the prior, and {why}"),
    )
    .with_help(format!(
        "give every parameter a proper prior as a `~` on data, hypers and parameters drawn before it \
         (`tau ~ normal(0, 5)`, `theta ~ normal(mu, tau)`), with no `target +=` on parameters; \
         `mvi run {} --prior` says which draws it can make",
        typed.source.name()
    ))
}

impl<'a> Sbc<'a> {
    /// The setup for `typed` (checked against `data`, from `text`).
    ///
    /// # Errors
    /// A prior that cannot be drawn ancestrally (improper, or not generative), a model with
    /// no `~` on data, or data that cannot be replicated whole.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        typed: &TypedModel,
        text: &'a str,
        file_name: &'a str,
        model_dir: &'a Path,
        data: &'a DataSet,
        overrides: Vec<(String, String)>,
        seed: u64,
        l: usize,
    ) -> Result<Sbc<'a>, Diagnostic> {
        let prior = Prior::of(typed).map_err(|_| not_generative(typed, "the model has no `~` on data"))?;
        let draw_params = match &prior.sampler {
            PriorSampler::Ancestral(gen) => gen.clone(),
            PriorSampler::Nuts(why) => return Err(not_generative(typed, why)),
        };
        let (replicates, skipped) = graph::lower_observed(typed, Reading::Replicate)?;
        if let Some(s) = skipped.first() {
            return Err(not_generative(
                typed,
                &format!("`{s} ~ …` does not draw a data variable"),
            ));
        }
        let joint = graph::lower_model(typed)?;
        let (mut names, _) = constrained_draws(&joint, &joint.theta_init(), &DMatrix::zeros(joint.dim(), 0));
        names.push(LOG_LIK.to_string());
        Ok(Sbc {
            text,
            file_name,
            model_dir,
            data,
            prior,
            draw_params,
            replicates,
            overrides,
            seed,
            l,
            names,
        })
    }

    /// The seed of simulation `i`'s streams.
    fn sim_seed(&self, i: usize) -> u64 {
        generate::stream_seed(self.seed, &format!("sbc {i}"))
    }

    /// The data of simulation `i` and the true parameters (D × 1, unconstrained).
    ///
    /// # Errors
    /// Replicated data with entries no `~` draws.
    pub fn simulate(&self, i: usize) -> Result<(DataSet, DMatrix<f64>), String> {
        let seed = self.sim_seed(i);
        let w = ancestral_draws(&self.prior.joint, &self.draw_params, 1, seed);
        let theta = self.prior.joint.theta_init();
        let out = generate::eval_generated(
            &self.replicates,
            theta.as_slice(),
            &w,
            generate::stream_seed(seed, "data"),
        );
        let mut data = self.data.clone();
        for (o, values) in self.replicates.outputs.iter().zip(&out.values) {
            let name = o.name.trim_end_matches("_rep");
            let col: Vec<f64> = values.column(0).iter().copied().collect();
            if let Some(k) = col.iter().position(|v| !v.is_finite()) {
                return Err(format!(
                    "entry {} of `{name}` was not drawn (no `~` on it, or its draw failed)",
                    k + 1
                ));
            }
            let dims = o.shape.dims();
            // the data reader takes a matrix row by row
            let values = match o.shape {
                graph::Shape::Matrix(r, c) => (0..r * c).map(|k| col[(k % c) * r + k / c]).collect(),
                _ => col,
            };
            data.add_array("simulated", name, dims, values)
                .map_err(|d| d.render_plain(100))?;
        }
        Ok((data, w))
    }

    /// Simulation `i`: simulate, fit, rank.
    pub fn simulation(&self, i: usize) -> Simulation {
        let failed = |why: String| Simulation {
            index: i,
            ranks: Vec::new(),
            below: Vec::new(),
            dependent: false,
            failure: Some(why),
        };
        let (data, w) = match self.simulate(i) {
            Ok(d) => d,
            Err(why) => return failed(why),
        };
        match self.fit_and_rank(&data, &w, i) {
            Ok(r) => Simulation {
                index: i,
                ranks: r.ranks,
                below: r.below,
                dependent: r.dependent,
                failure: None,
            },
            Err(d) => failed(d.render_plain(100).lines().next().unwrap_or("").to_string()),
        }
    }

    fn fit_and_rank(&self, data: &DataSet, w: &DMatrix<f64>, i: usize) -> Result<Ranked, Diagnostic> {
        let typed = check::check_source(self.text, self.file_name, self.model_dir, data)
            .map_err(|mut ds| ds.swap_remove(0))?;
        let mut joint = graph::lower_model(&typed)?;
        let mut set = self.overrides.clone();
        // the fit's own stream, and what the ranks need: the pointwise log-likelihood
        set.push(("seed".into(), (self.sim_seed(i) >> 33).to_string()));
        set.push(("loo".into(), "true".into()));
        // L independent draws of an approximation; MCMC's draws, as many as asked, are thinned
        let mut options = check::infer_options(&typed, &set)?;
        if super::method_name(&options) != "nuts" && !set.iter().any(|(k, _)| k == "draws") {
            set.push(("draws".into(), self.l.to_string()));
            options = check::infer_options(&typed, &set)?;
        }
        super::attach_after_fit(&typed, &mut joint, &options)?;
        let report = super::fit(&joint, &options, &RunInfo::default(), &mut Silent)?.1;
        let theta = crate::graph::LogJoint::theta_init(&joint);
        let (names, truth) = constrained_draws(&joint, &theta, w);
        let ll_true: f64 = match &joint.log_lik {
            Some(gen) => generate::eval_generated(gen, theta.as_slice(), w, 0)
                .values
                .iter()
                .map(|v| v.sum())
                .sum(),
            None => f64::NAN,
        };
        let ll_draws: Vec<f64> = report
            .log_lik
            .as_ref()
            .map(|ll| ll.values.row_iter().map(|r| r.sum()).collect())
            .unwrap_or_default();
        // the chains of an MCMC run, or one run of independent draws
        let lengths = report
            .mcmc
            .as_ref()
            .map_or_else(|| vec![report.draws.nrows()], |m| m.lengths.clone());
        let mut rng = StdRng::seed_from_u64(generate::stream_seed(self.sim_seed(i), "ranks"));
        let mut out = Ranked::default();
        let mut rank_one = |values: &[f64], truth: f64| -> Result<(), Diagnostic> {
            let mut chains = Vec::with_capacity(lengths.len());
            let mut at = 0;
            for &n in &lengths {
                chains.push(&values[at..(at + n).min(values.len())]);
                at += n;
            }
            let thinned = sbc::thin(&chains, self.l)
                .map_err(|e| Diagnostic::plain("mvi::sbc::few_draws", e.to_string()))?;
            out.dependent |= report.mcmc.is_some() && !thinned.independent();
            out.ranks.push(sbc::rank(truth, &thinned.draws, &mut rng) as u32);
            out.below
                .push(values.iter().filter(|&&v| v < truth).count() as f64 / values.len().max(1) as f64);
            Ok(())
        };
        for (j, name) in names.iter().enumerate() {
            let c = report
                .columns
                .iter()
                .position(|c| c == name)
                .expect("a fit's report has every parameter's column");
            let col: Vec<f64> = report.draws.column(c).iter().copied().collect();
            rank_one(&col, truth[(0, j)])?;
        }
        rank_one(&ll_draws, ll_true)?;
        Ok(out)
    }

    /// Run the simulations of `todo` on all cores; `done` is told of each one as it ends;
    /// once `stop` is set, no further simulation starts. The simulations run, in index order.
    pub fn run(
        &self,
        todo: &[usize],
        stop: &AtomicBool,
        done: &(dyn Fn(&Simulation) + Sync),
    ) -> Vec<Simulation> {
        let mut sims: Vec<Simulation> = todo
            .par_iter()
            .filter_map(|&i| {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
                let s = self.simulation(i);
                done(&s);
                Some(s)
            })
            .collect();
        sims.sort_by_key(|s| s.index);
        sims
    }
}

/// What identifies a calibration run, so that a resumed run continues the same one: the
/// model's text, the data files, the fit's overrides, the seed and L.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SbcConfig {
    /// The model file as given.
    pub model_file: String,
    /// A hash of the model's text (FNV-1a, hex).
    pub model_hash: String,
    /// The data files as given.
    pub data_files: Vec<String>,
    /// The fit's option overrides (`method`, `--set`).
    pub overrides: Vec<(String, String)>,
    /// The seed the simulations' streams derive from.
    pub seed: u64,
    /// Draws the ranks are taken among.
    pub l: usize,
    /// The ranked columns.
    pub names: Vec<String>,
}

impl SbcConfig {
    /// The configuration of `sbc` on the model file `model_file` with `data_files`.
    pub fn of(sbc: &Sbc<'_>, model_file: &str, data_files: &[String]) -> SbcConfig {
        SbcConfig {
            model_file: model_file.to_string(),
            model_hash: fnv1a(sbc.text.as_bytes()),
            data_files: data_files.to_vec(),
            overrides: sbc.overrides.clone(),
            seed: sbc.seed,
            l: sbc.l,
            names: sbc.names.clone(),
        }
    }
}

/// The FNV-1a hash of `bytes`, as 16 hex digits.
fn fnv1a(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// One simulation as stored in `simulations.json`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Stored {
    index: usize,
    ranks: Vec<u32>,
    below: Vec<f64>,
    dependent: bool,
    failure: Option<String>,
}

/// The simulations of an earlier run of the same configuration stored in `dir`
/// (`simulations.json`), or none.
pub fn load_done(dir: &Path, config: &SbcConfig) -> Vec<Simulation> {
    let Ok(text) = std::fs::read_to_string(dir.join(SIMULATIONS_FILE)) else {
        return Vec::new();
    };
    let Ok((stored_config, sims)) = serde_json::from_str::<(SbcConfig, Vec<Stored>)>(&text) else {
        return Vec::new();
    };
    if stored_config != *config {
        return Vec::new();
    }
    sims.into_iter()
        .map(|s| Simulation {
            index: s.index,
            ranks: s.ranks,
            below: s.below,
            dependent: s.dependent,
            failure: s.failure,
        })
        .collect()
}

/// The file a run's simulations are kept in, for resuming it.
pub const SIMULATIONS_FILE: &str = "simulations.json";

/// Write the simulations done so far into `dir` (atomically): `simulations.json` (to
/// resume from: every simulation with its ranks, VSBC p's and failure) and `ranks.csv` (one
/// row per simulation whose fit succeeded, numbered in index order, one rank per column).
///
/// # Errors
/// A file that cannot be written.
pub fn save(dir: &Path, config: &SbcConfig, sims: &[Simulation]) -> std::io::Result<()> {
    let stored: Vec<Stored> = sims
        .iter()
        .map(|s| Stored {
            index: s.index,
            ranks: s.ranks.clone(),
            below: s.below.clone(),
            dependent: s.dependent,
            failure: s.failure.clone(),
        })
        .collect();
    let json = serde_json::to_string(&(config, stored)).map_err(std::io::Error::other)?;
    crate::fsutil::write_atomic(&dir.join(SIMULATIONS_FILE), json.as_bytes())?;
    crate::report::sbc::write_ranks_csv(
        &dir.join("ranks.csv"),
        &params(&config.names, config.l, sims, false),
    )
}

/// The ranks of each column over the simulations whose fit succeeded, in index order, with
/// VSBC's p = Pr_q(θ < θ_true) when `vsbc`.
pub fn params(names: &[String], l: usize, sims: &[Simulation], vsbc: bool) -> Vec<SbcParam> {
    let ok: Vec<&Simulation> = sims.iter().filter(|s| s.failure.is_none()).collect();
    names
        .iter()
        .enumerate()
        .map(|(j, name)| SbcParam {
            name: name.clone(),
            ranks: ok.iter().map(|s| s.ranks[j] as usize).collect(),
            l,
            vsbc_p: vsbc.then(|| ok.iter().map(|s| s.below[j]).collect()),
        })
        .collect()
}

/// Methods whose q is Gaussian on the unconstrained scale, for which VSBC's symmetry test
/// applies (Yao et al. 2018).
const GAUSSIAN_METHODS: &[&str] = &[
    "laplace",
    "mvi_mu",
    "mvi_eig",
    "mvi_lr",
    "vi_diag",
    "vi_full",
    "pathfinder",
];

/// What a calibration run found: the tests per column and what the counts say.
#[derive(Debug, Clone)]
pub struct SbcOutcome {
    /// The model file.
    pub model_file: String,
    /// The method under test.
    pub method: String,
    /// Simulations asked for.
    pub asked: usize,
    /// Simulations run (fewer than asked when interrupted).
    pub done: usize,
    /// The failed fits: (simulation number from 1, why), in order.
    pub failures: Vec<(usize, String)>,
    /// Fits whose thinned MCMC draws had an ESS below L for some column.
    pub dependent: usize,
    /// The tests, one per column.
    pub rows: Vec<sbc::SbcSummary>,
}

/// Test the ranks of the simulations done.
///
/// # Errors
/// Every fit failed (the first failure is named).
pub fn summarise(
    sbc: &Sbc<'_>,
    method: &str,
    sims: &[Simulation],
    asked: usize,
) -> Result<SbcOutcome, Diagnostic> {
    let failures: Vec<(usize, String)> = sims
        .iter()
        .filter_map(|s| s.failure.as_ref().map(|f| (s.index + 1, f.clone())))
        .collect();
    let vsbc = GAUSSIAN_METHODS.contains(&method);
    let params = params(&sbc.names, sbc.l, sims, vsbc);
    if params.first().is_none_or(|p| p.ranks.is_empty()) {
        let why = failures.first().map_or_else(
            || "no simulation ran".to_string(),
            |(i, f)| format!("simulation {i}: {f}"),
        );
        return Err(Diagnostic::plain(
            "mvi::sbc::no_fits",
            format!("no fit of `{method}` succeeded, so there are no ranks to test ({why})"),
        )
        .with_help("run `mvi run` with `--method` on the model and its data to see why the method fails"));
    }
    let rows = sbc::summarize(&params)
        .map_err(|e| Diagnostic::plain("mvi::sbc::ranks", format!("the ranks cannot be tested: {e}")))?;
    Ok(SbcOutcome {
        model_file: sbc.file_name.to_string(),
        method: method.to_string(),
        asked,
        done: sims.len(),
        failures,
        dependent: sims.iter().filter(|s| s.dependent).count(),
        rows,
    })
}

impl SbcOutcome {
    /// Notes on the run: interruption, failed fits, dependent draws.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.done < self.asked {
            notes.push(format!(
                "interrupted: {} of {} simulations done (run again with the same --output-dir to go on)",
                self.done, self.asked
            ));
        }
        if let Some((i, why)) = self.failures.first() {
            notes.push(format!(
                "{} of {} fits failed and are left out (simulation {i}: {why})",
                self.failures.len(),
                self.done
            ));
        }
        if self.dependent > 0 {
            notes.push(format!(
                "{} fits had an ESS below L = {} for some column: their thinned draws are not \
                 independent, which makes ranks ∪-shaped; give more draws (`--set draws=…`) or a \
                 smaller `--rank-draws`",
                self.dependent,
                self.rows.first().map_or(0, |r| r.ecdf.l)
            ));
        }
        notes
    }

    /// The text summary: what was run, the table, the notes.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "mvi {} · sbc · {} · {}\n{} simulations, {} fits ranked\n\n",
            env!("CARGO_PKG_VERSION"),
            self.method,
            self.model_file,
            self.done,
            self.done - self.failures.len()
        );
        out.push_str(&crate::report::sbc::render_sbc_summary(&self.rows));
        for n in self.notes() {
            out.push_str(&format!("warning: {n}\n"));
        }
        out
    }

    /// The JSON object: `parameters` (a list of `{name, calibrated, p_value, …}`), `level`,
    /// and the run's `model`, `method`, `sims`, `done`, `failed`, `notes`.
    pub fn json_value(&self) -> serde_json::Value {
        let mut v = crate::report::sbc::sbc_value(&self.rows);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("model".into(), self.model_file.clone().into());
            m.insert("method".into(), self.method.clone().into());
            m.insert("sims".into(), self.asked.into());
            m.insert("done".into(), self.done.into());
            m.insert("failed".into(), self.failures.len().into());
            m.insert("notes".into(), self.notes().into());
        }
        v
    }

    /// [`SbcOutcome::json_value`] pretty-printed.
    pub fn render_json(&self) -> String {
        serde_json::to_string_pretty(&self.json_value()).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// Write `sbc.json` and one ECDF-difference picture per column (`ecdf_<name>.svg`) into
/// `dir`, atomically.
///
/// # Errors
/// A file that cannot be written.
pub fn write_summary(dir: &Path, outcome: &SbcOutcome) -> std::io::Result<()> {
    crate::fsutil::write_atomic(&dir.join("sbc.json"), outcome.render_json().as_bytes())?;
    for r in &outcome.rows {
        let title = format!("{} · {}", r.name, outcome.method);
        let svg = crate::report::sbc::ecdf_svg(&r.ecdf, &title)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        crate::fsutil::write_atomic(&dir.join(format!("ecdf_{}.svg", r.name)), svg.as_bytes())?;
    }
    Ok(())
}
