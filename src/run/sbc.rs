//! Simulation-based calibration (`mvi sbc`, Talts et al. 2018): for each simulation, the
//! parameters drawn from the prior (ancestrally), the data drawn from the model at them, a
//! fit of the simulated data by the method under test, and the rank of each true value
//! among L of the fit's draws. A calibrated method gives uniform ranks.
//!
//! Input: the model's text, its data set (sizes, covariates, and the observed variables,
//! whose values each simulation replaces), the fit's option overrides. Output: an
//! [`SbcRun`] with one [`Simulation`] per simulation, in index order. Simulation i uses
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

/// The name of the rank of the log-likelihood, beside the parameters' columns.
pub const LOG_LIK: &str = "log_lik";

/// What one simulation gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// Its index, 0-based.
    pub index: usize,
    /// Per column of [`SbcRun::names`], the rank of the true value among the L thinned
    /// draws (0..=L); empty when the fit failed.
    pub ranks: Vec<u32>,
    /// Per column, the share of all the fit's draws below the true value (VSBC's p); empty
    /// when the fit failed.
    pub below: Vec<f64>,
    /// Why the fit failed, if it did.
    pub failure: Option<String>,
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
    /// The fit's option overrides (method, `--set`), without `seed` and `draws`.
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
    fn run_one(&self, i: usize) -> Simulation {
        let failed = |why: String| Simulation {
            index: i,
            ranks: Vec::new(),
            below: Vec::new(),
            failure: Some(why),
        };
        let (data, w) = match self.simulate(i) {
            Ok(d) => d,
            Err(why) => return failed(why),
        };
        match self.fit_and_rank(&data, &w, i) {
            Ok((ranks, below)) => Simulation {
                index: i,
                ranks,
                below,
                failure: None,
            },
            Err(d) => failed(d.render_plain(100).lines().next().unwrap_or("").to_string()),
        }
    }

    fn fit_and_rank(
        &self,
        data: &DataSet,
        w: &DMatrix<f64>,
        i: usize,
    ) -> Result<(Vec<u32>, Vec<f64>), Diagnostic> {
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
        let n = report.draws.nrows();
        if n < self.l {
            return Err(Diagnostic::plain(
                "mvi::sbc::few_draws",
                format!(
                    "the fit gave {n} draws, fewer than the {} the ranks are taken among",
                    self.l
                ),
            ));
        }
        let keep = thin(n, self.l);
        let mut ranks = Vec::with_capacity(names.len() + 1);
        let mut below = Vec::with_capacity(names.len() + 1);
        for (j, name) in names.iter().enumerate() {
            let c = report
                .columns
                .iter()
                .position(|c| c == name)
                .expect("a fit's report has every parameter's column");
            let x = truth[(0, j)];
            let col = report.draws.column(c);
            ranks.push(keep.iter().filter(|&&s| col[s] < x).count() as u32);
            below.push(col.iter().filter(|&&v| v < x).count() as f64 / n as f64);
        }
        ranks.push(
            keep.iter()
                .filter(|&&s| ll_draws.get(s).is_some_and(|&v| v < ll_true))
                .count() as u32,
        );
        below.push(ll_draws.iter().filter(|&&v| v < ll_true).count() as f64 / ll_draws.len().max(1) as f64);
        Ok((ranks, below))
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
                let s = self.run_one(i);
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
            failure: s.failure,
        })
        .collect()
}

/// The file a run's simulations are kept in, for resuming it.
pub const SIMULATIONS_FILE: &str = "simulations.json";

/// Write the simulations done so far into `dir` (atomically): `simulations.json` (to
/// resume from) and `ranks.csv` (one row per simulation whose fit succeeded: its index,
/// then the rank of each column).
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
            failure: s.failure.clone(),
        })
        .collect();
    let json = serde_json::to_string(&(config, stored)).map_err(std::io::Error::other)?;
    crate::fsutil::write_atomic(&dir.join(SIMULATIONS_FILE), json.as_bytes())?;
    let mut csv = format!("sim,{}\n", config.names.join(","));
    for s in sims.iter().filter(|s| s.failure.is_none()) {
        let ranks: Vec<String> = s.ranks.iter().map(u32::to_string).collect();
        csv.push_str(&format!("{},{}\n", s.index + 1, ranks.join(",")));
    }
    crate::fsutil::write_atomic(&dir.join("ranks.csv"), csv.as_bytes())
}

/// `l` of `n` draws, evenly spaced (all of them when there are at most `l`): MCMC draws
/// thinned so that the ranks are of nearly independent draws.
fn thin(n: usize, l: usize) -> Vec<usize> {
    if n <= l {
        return (0..n).collect();
    }
    (0..l).map(|k| k * n / l).collect()
}

#[cfg(test)]
mod tests {
    use super::thin;

    #[test]
    fn thinning_keeps_evenly_spaced_draws() {
        assert_eq!(thin(10, 5), vec![0, 2, 4, 6, 8]);
        assert_eq!(thin(3, 5), vec![0, 1, 2]);
        assert_eq!(thin(4000, 100).len(), 100);
    }
}
