//! `mvi bench paper`: the reproduction of the MVI paper's benchmark tables (Gianniotis,
//! "Mixed Variational Inference", Tables II–VI).
//!
//! Input: the benchmark data directory (`../shared/data`), a [`PaperArgs`] command line.
//! Output: `results.jsonl` in `--out` (one record per finished table/set/split/method,
//! appended as it finishes, so an interrupted run resumes where it stopped) and
//! `report.md` (written atomically at the end).
//!
//! One file per piece: [`data`] (files, splits, standardisation), [`kmeans`] (RBF centres),
//! [`logistic`] (Tables III/IV), [`softmax`] (Tables V/VI), [`cauchy`] (Table II and its
//! data generator), [`stats`] (sign test, bootstrap), [`store`] (the resumable store),
//! [`report`] (Markdown), [`fit`] (one fit through the ordinary `run::fit` pipeline).

pub mod cauchy;
pub mod data;
pub mod fit;
pub mod kmeans;
pub mod logistic;
pub mod report;
pub mod softmax;
pub mod stats;
pub mod store;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::diagnostic::Diagnostic;
use fit::Problem;
use store::{Record, Store};

/// The methods of every table, in the paper's column order.
pub const METHODS: &[&str] = &["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag"];

/// Arguments of `mvi bench paper`.
#[derive(Debug, Clone, Args)]
pub struct PaperArgs {
    /// The benchmark data directory (default: `../shared/data` next to the repository).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where `results.jsonl` and `report.md` are kept; finished work found there is skipped.
    #[arg(long, value_name = "DIR", default_value = "paper-results")]
    pub out: PathBuf,
    /// The short protocol: 1 split per binary set, 3 per multiclass set, 20 Cauchy data
    /// sets, 2 (r, α) pairs per M, S = 200, 1000 test draws.
    #[arg(long)]
    pub quick: bool,
    /// Only these data sets (comma-separated; `cauchy` names Table II's generated sets).
    #[arg(long, value_delimiter = ',', value_name = "SET[,SET]")]
    pub only: Vec<String>,
    /// Which tables: II (Cauchy), III (and IV: logistic RBF), V (and VI: softmax).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "II,III,V",
        default_value = "II,III,V"
    )]
    pub tables: Vec<String>,
    /// Splits per data set (generated data sets for Table II), instead of the protocol's.
    #[arg(long, value_name = "N")]
    pub splits: Option<usize>,
    /// Random (r, α) pairs per number of centres in the logistic search.
    #[arg(long, value_name = "N")]
    pub pairs: Option<usize>,
    /// Numbers of RBF centres M searched (default: the paper's 10, 20, 30).
    #[arg(long, value_delimiter = ',', value_name = "M[,M]")]
    pub centres: Vec<usize>,
    /// Fixed samples S of the VI methods.
    #[arg(long, value_name = "S")]
    pub samples: Option<usize>,
    /// Posterior draws for the test LPD.
    #[arg(long, value_name = "N")]
    pub test_draws: Option<usize>,
    /// The protocol: `fixed-centres-select` (the default: RBF centres held at their k-means
    /// values, log-uniform (r, α); the softmax's features, the inputs or RBF features, chosen
    /// per split by the Laplace evidence), `fixed-centres` (the same with the softmax on the
    /// inputs), `fixed-centres-rbf` (the softmax on RBF features) or `learned-centres` (the
    /// paper's own: RBF centres learned with r and α, r and α drawn from U(0, 1), softmax on
    /// RBF features; slower, and worse than fixed centres in docs/results.md).
    #[arg(long, value_enum, default_value_t = Protocol::FixedCentresSelect)]
    pub protocol: Protocol,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Fit nothing: only write `report.md` from the results already in `--out`.
    #[arg(long)]
    pub report_only: bool,
}

/// Which protocol `mvi bench paper` runs (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// The paper's (§V-C): θ = (r, α, c_1 … c_M), the RBF centres a `hyper` matrix started
    /// at k-means and learned with r and α; the search draws r, α ~ U(0, 1), 10 pairs per M
    /// ∈ {10, 20, 30}, each scored after 10 θ iterations of Laplace; Tables V/VI use RBF
    /// features too (`examples/softmax_rbf_iris.mvi`).
    LearnedCentres,
    /// The protocol before issue 22: centres fixed at k-means, (r, α) log-uniform in
    /// √Q·[0.2, 2] × [0.01, 10] scored by a Laplace fit at fixed (r, α); Tables V/VI a
    /// softmax on the standardised inputs (`examples/softmax_iris.mvi`).
    FixedCentres,
    /// `fixed-centres` with Tables V/VI on RBF features (`src/paper/softmax_rbf_fixed.mvi`:
    /// the centres fixed at k-means, the search of `fixed-centres`): separates what the RBF
    /// features do from what learning the centres does.
    FixedCentresRbf,
    /// `fixed-centres` with Tables V/VI's features chosen per split by the Laplace evidence:
    /// the softmax on the inputs (`examples/softmax_iris.mvi`, α learned) and on RBF features
    /// (`fixed-centres-rbf`'s model, after its search, r and α learned) are each fitted by
    /// `laplace`, and the methods run on the one whose log evidence is higher (stored as
    /// `select`). The choice of M by the evidence extended to "no RBF features".
    FixedCentresSelect,
}

impl Protocol {
    /// Its name on the command line and in the store's marker file.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::LearnedCentres => "learned-centres",
            Protocol::FixedCentres => "fixed-centres",
            Protocol::FixedCentresRbf => "fixed-centres-rbf",
            Protocol::FixedCentresSelect => "fixed-centres-select",
        }
    }

    /// Whether the RBF centres are hyperparameters.
    pub fn learns_centres(self) -> bool {
        self == Protocol::LearnedCentres
    }
}

/// The file in `--out` naming the protocol of its results (a store without it is from
/// before issue 22, i.e. `fixed-centres`).
pub const PROTOCOL_FILE: &str = "protocol.txt";

/// Check that `--out` holds results of `protocol` (or none), and mark it as such.
fn check_protocol(out: &Path, protocol: Protocol, has_records: bool) -> Result<(), Diagnostic> {
    let path = out.join(PROTOCOL_FILE);
    let found = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t.trim().to_string()),
        Err(_) if has_records => Some(Protocol::FixedCentres.name().to_string()),
        Err(_) => None,
    };
    if let Some(found) = found {
        if found != protocol.name() {
            return Err(Diagnostic::plain(
                "mvi::paper::protocol_mismatch",
                format!(
                    "`{}` holds results of the `{found}` protocol, not `{}`",
                    out.display(),
                    protocol.name()
                ),
            )
            .with_help(format!(
                "give another `--out`, or `--protocol {found}` to resume or report those results"
            )));
        }
    }
    crate::fsutil::write_atomic(&path, format!("{}\n", protocol.name()).as_bytes()).map_err(|e| {
        Diagnostic::plain(
            "mvi::paper::store_write",
            format!("cannot write `{}`: {e}", path.display()),
        )
    })
}

/// A table of the paper (IV and VI are the error-rate halves of III and V).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Table {
    /// Cauchy regression.
    II,
    /// Logistic regression with RBF features (LPD; IV is its error rate).
    III,
    /// Multiclass softmax regression (LPD; VI is its error rate).
    V,
}

impl Table {
    /// Its name in the store.
    pub fn name(self) -> &'static str {
        match self {
            Table::II => "II",
            Table::III => "III",
            Table::V => "V",
        }
    }

    fn parse(s: &str) -> Option<Table> {
        match s.trim().to_ascii_uppercase().as_str() {
            "II" | "2" => Some(Table::II),
            "III" | "IV" | "3" | "4" => Some(Table::III),
            "V" | "VI" | "5" | "6" => Some(Table::V),
            _ => None,
        }
    }
}

/// The protocol's sizes, from `--quick` and the explicit overrides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Splits per binary set (capped by the splits on disk).
    pub binary_splits: usize,
    /// Random 70/30 splits per multiclass set.
    pub multiclass_splits: usize,
    /// Generated Cauchy data sets.
    pub cauchy_sets: usize,
    /// (r, α) pairs per M in the logistic search.
    pub pairs: usize,
    /// Fixed samples S.
    pub samples: usize,
    /// Test draws S′.
    pub test_draws: usize,
    /// The protocol.
    pub protocol: Protocol,
}

impl Plan {
    /// The full protocol (the paper's sizes) or the quick one, with overrides applied.
    pub fn from_args(a: &PaperArgs) -> Plan {
        let base = if a.quick {
            Plan {
                binary_splits: 1,
                multiclass_splits: 3,
                cauchy_sets: 20,
                pairs: 2,
                samples: 200,
                test_draws: 1000,
                protocol: a.protocol,
            }
        } else {
            Plan {
                binary_splits: 100,
                multiclass_splits: 100,
                cauchy_sets: 100,
                pairs: 10,
                samples: 1000,
                test_draws: 10_000,
                protocol: a.protocol,
            }
        };
        Plan {
            binary_splits: a.splits.unwrap_or(base.binary_splits),
            multiclass_splits: a.splits.unwrap_or(base.multiclass_splits),
            cauchy_sets: a.splits.unwrap_or(base.cauchy_sets),
            pairs: a.pairs.unwrap_or(base.pairs).max(1),
            samples: a.samples.unwrap_or(base.samples).max(1),
            test_draws: a.test_draws.unwrap_or(base.test_draws).max(1),
            protocol: a.protocol,
        }
    }
}

/// Whether the run went to the end or was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Ctrl-C: stop, keep what is stored.
    Stop,
}

/// The state of one `bench paper` run: the store, the plan, the progress bar, Ctrl-C.
pub struct Ctx {
    /// The results on disk.
    pub store: Store,
    /// The protocol's sizes.
    pub plan: Plan,
    /// The data directory.
    pub data_dir: PathBuf,
    interrupt: Arc<AtomicBool>,
    bar: ProgressBar,
    /// Fits run (not skipped) in this invocation.
    pub fits_run: usize,
    /// Numbers of RBF centres searched.
    pub centres: Vec<usize>,
}

impl Ctx {
    /// Whether every method (and `extra` steps such as `search`) of a split is stored.
    pub fn split_done(&self, table: Table, set: &str, split: usize, extra: &[&str]) -> bool {
        METHODS
            .iter()
            .chain(extra)
            .all(|m| self.store.contains(table.name(), set, split, m))
    }

    /// Count one (set, split) unit as done on the progress bar.
    pub fn unit_done(&self) {
        self.bar.inc(1);
    }

    /// Show what is running.
    pub fn show(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Whether Ctrl-C was pressed.
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::SeqCst)
    }

    /// Fit `problem` with `overrides`; `None` when interrupted, else the fit's report or its
    /// diagnostic (a method's numerical failure, to be recorded, or a bad override: a bug in
    /// the protocol).
    pub fn fit(
        &mut self,
        problem: &Problem,
        overrides: &[(&str, String)],
    ) -> Option<Result<crate::report::FitReport, Diagnostic>> {
        let out = problem.fit(overrides, &self.interrupt);
        self.fitted(1, overrides);
        out.transpose()
    }

    /// Fit each of `problems` with the same `overrides`, in parallel on rayon's threads (the
    /// (M, r, α) search: single-point Laplace fits, which leave a core idle one by one); the
    /// results in `problems`' order, each as [`Ctx::fit`] gives it. `None` when interrupted.
    pub fn fit_parallel(
        &mut self,
        problems: &[&Problem],
        overrides: &[(&str, String)],
    ) -> Option<Vec<Result<crate::report::FitReport, Diagnostic>>> {
        use rayon::prelude::*;
        let interrupt = &self.interrupt;
        let out: Vec<_> = problems.par_iter().map(|p| p.fit(overrides, interrupt)).collect();
        self.fitted(problems.len(), overrides);
        out.into_iter().map(Result::transpose).collect()
    }

    /// Count `n` finished fits; under `MVI_TIMING=1 mvi bench paper …` print their
    /// breakdown, under their overrides.
    fn fitted(&mut self, n: usize, overrides: &[(&str, String)]) {
        self.fits_run += n;
        if crate::infer::timing::enabled() {
            let named: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let what = match n {
                1 => "fit".to_string(),
                n => format!("{n} fits in parallel,"),
            };
            crate::term::err_out(&format!("{what} {}\n", named.join(" ")));
            crate::term::print_timings();
        }
    }

    /// Store `r`.
    ///
    /// # Errors
    /// The store could not be written.
    pub fn save(&mut self, r: Record) -> Result<(), Diagnostic> {
        let path = self.store.path().to_path_buf();
        self.store.append(r).map_err(|e| {
            Diagnostic::plain(
                "mvi::paper::store_write",
                format!("cannot append to `{}`: {e}", path.display()),
            )
            .with_help("check that `--out` is writable")
        })
    }

    /// Fit the five methods of one split: `laplace` with θ learned from `theta_start`, then
    /// the VI methods from Laplace's θ ([`Ctx::fit_method`]). Each finished method is stored
    /// at once; stored methods are skipped.
    ///
    /// # Errors
    /// The store could not be written, or an override was rejected.
    pub fn fit_methods(
        &mut self,
        table: Table,
        set: &str,
        split: usize,
        problem: &mut Problem,
        theta_start: &[(String, f64)],
        centres: Option<usize>,
    ) -> Result<Flow, Diagnostic> {
        for method in METHODS {
            if self.store.contains(table.name(), set, split, method) {
                continue;
            }
            let Some(rec) = self.fit_method(table, set, split, method, problem, theta_start, centres)? else {
                return Ok(Flow::Stop);
            };
            self.save(rec)?;
        }
        Ok(Flow::Continue)
    }

    /// Fit one method of one split and return its record (not stored; `None` when
    /// interrupted): `laplace` with θ learned from `theta_start`; a VI method from the stored
    /// `laplace` record's θ (`laplace_hyper = given`: its Laplace start does not repeat the
    /// evidence search), or from `theta_start` when it fails numerically from Laplace's θ
    /// (with a note saying so) or no `laplace` record is stored.
    ///
    /// # Errors
    /// An override was rejected.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_method(
        &mut self,
        table: Table,
        set: &str,
        split: usize,
        method: &str,
        problem: &mut Problem,
        theta_start: &[(String, f64)],
        centres: Option<usize>,
    ) -> Result<Option<Record>, Diagnostic> {
        let laplace_theta = match self.store.get(table.name(), set, split, "laplace") {
            Some(l) if method != "laplace" && l.failed.is_none() => Some(l.theta.clone()),
            _ => None,
        };
        problem.start_hypers(laplace_theta.as_deref().unwrap_or(theta_start))?;
        self.show(format!("{} {set} split {split}: {method}", table.name()));
        let overrides = [
            ("method", method.to_string()),
            ("learn_hyper", "true".to_string()),
            ("samples", self.plan.samples.to_string()),
            ("test_draws", self.plan.test_draws.to_string()),
            ("seed", (split as u64 + 1).to_string()),
        ];
        let mut overrides: Vec<(&str, String)> = overrides
            .into_iter()
            .filter(|(k, _)| *k != "samples" || method != "laplace")
            .collect();
        if laplace_theta.is_some() {
            // θ is already the `laplace` step's evidence optimum: the VI method's Laplace
            // start need not search it again (it still learns θ on the ELBO).
            overrides.push(("laplace_hyper", "given".to_string()));
        }
        let started = Instant::now();
        let Some(mut result) = self.fit(problem, &overrides) else {
            return Ok(None);
        };
        let mut note = None;
        // a numerical failure only: another θ cannot help a rejected setting (too few
        // samples for the method's family)
        let numerical = matches!(&result, Err(e) if e.code == "mvi::infer::failed");
        if let (Err(e), Some(_), true) = (&result, &laplace_theta, numerical) {
            // Laplace's θ can be degenerate (the evidence over the learned centres drives
            // α towards 0 until the Hessian is singular to working precision): start the
            // method from the search's θ instead, which the evidence search accepted
            note = Some(format!(
                "started from the search's θ: from the laplace step's θ the fit failed ({e})"
            ));
            problem.start_hypers(theta_start)?;
            let Some(retry) = self.fit(problem, &overrides) else {
                return Ok(None);
            };
            result = retry;
        }
        let mut rec = Record::new(table.name(), set, split, method);
        rec.centres = centres;
        match result {
            Ok(report) => {
                fit::fill_record(&mut rec, &report);
                rec.notes.extend(note);
            }
            Err(e) => {
                rec.failed = Some(match note {
                    Some(first) => format!("{e}; {first}"),
                    None => e.to_string(),
                })
            }
        }
        rec.seconds = started.elapsed().as_secs_f64();
        Ok(Some(rec))
    }
}

/// K per classification set whose data can be read (binary sets: 2), for the report's mark
/// of an LPD below −log K; the multiclass data are read only when `tables` has Table V.
fn classes_of_sets(data_dir: &Path, tables: &[Table]) -> std::collections::BTreeMap<String, usize> {
    let binary = data::BINARY_SETS.iter().map(|s| ((*s).to_string(), 2));
    let multiclass: &[&str] = if tables.contains(&Table::V) {
        data::MULTICLASS_SETS
    } else {
        &[]
    };
    let multi = multiclass.iter().filter_map(|s| {
        data::load_dataset(data_dir, s)
            .ok()
            .map(|d| ((*s).to_string(), d.classes))
    });
    binary.chain(multi).collect()
}

/// The data directory to use: `--data-dir`, else `../shared/data` next to the crate.
pub fn default_data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join("data")
}

fn parse_tables(args: &PaperArgs) -> Result<Vec<Table>, Diagnostic> {
    let mut out = Vec::new();
    for t in &args.tables {
        let table = Table::parse(t).ok_or_else(|| {
            Diagnostic::plain(
                "mvi::paper::unknown_table",
                format!("`--tables` names `{t}`, which is not a table"),
            )
            .with_help("the tables are II (Cauchy), III/IV (logistic RBF) and V/VI (softmax)")
        })?;
        if !out.contains(&table) {
            out.push(table);
        }
    }
    out.sort();
    Ok(out)
}

fn check_only(args: &PaperArgs) -> Result<(), Diagnostic> {
    let known: Vec<&str> = data::BINARY_SETS
        .iter()
        .chain(data::MULTICLASS_SETS)
        .copied()
        .chain(["cauchy"])
        .collect();
    for name in &args.only {
        if !known.contains(&name.as_str()) {
            let help = crate::check::error::did_you_mean(name, known.iter().copied())
                .unwrap_or_else(|| format!("the sets are: {}", known.join(", ")));
            return Err(Diagnostic::plain(
                "mvi::paper::unknown_set",
                format!("`--only` names `{name}`, which is not a benchmark data set"),
            )
            .with_help(help));
        }
    }
    Ok(())
}

/// Whether set `name` is selected by `--only`.
pub fn selected(args: &PaperArgs, name: &str) -> bool {
    args.only.is_empty() || args.only.iter().any(|o| o == name)
}

fn progress_bar(quiet: bool, units: u64) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(units), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} splits [{elapsed} / ~{eta}] {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// What a finished (or interrupted) run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Where the report was written.
    pub report_path: PathBuf,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
    /// Fits run in this invocation (skipped ones not counted).
    pub fits_run: usize,
    /// Records in the store.
    pub records: usize,
}

/// Run the selected tables, resuming from `--out`, and write the report.
///
/// # Errors
/// Bad arguments, unreadable data, an unwritable `--out`.
pub fn run(args: &PaperArgs, interrupt: Arc<AtomicBool>) -> Result<Outcome, Diagnostic> {
    let tables = parse_tables(args)?;
    check_only(args)?;
    let data_dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    if !data_dir.is_dir() {
        return Err(Diagnostic::plain(
            "mvi::paper::no_data_dir",
            format!(
                "the benchmark data directory `{}` does not exist",
                data_dir.display()
            ),
        )
        .with_help("give it with `--data-dir DIR` (the project's `../shared/data`)"));
    }
    if args.report_only && !args.out.join(store::FILE_NAME).is_file() {
        // opening the store would create an empty one (and the directory) for a mistyped path
        return Err(Diagnostic::plain(
            "mvi::paper::nothing_to_report",
            format!(
                "`{}` holds no results to report (no {})",
                args.out.display(),
                store::FILE_NAME
            ),
        )
        .with_help("give `--out` the directory of an earlier `mvi bench paper` run"));
    }
    let store = Store::open(&args.out).map_err(|e| {
        Diagnostic::plain(
            "mvi::paper::store_open",
            format!("cannot open the results store in `{}`: {e}", args.out.display()),
        )
        .with_help("check that `--out` names a writable directory")
    })?;
    check_protocol(&args.out, args.protocol, !store.records().is_empty())?;
    let plan = Plan::from_args(args);
    let units = count_units(args, &tables, &plan, &data_dir);
    let mut ctx = Ctx {
        store,
        plan,
        data_dir,
        interrupt,
        bar: progress_bar(args.quiet, units),
        fits_run: 0,
        centres: if args.centres.is_empty() {
            logistic::CENTRES.to_vec()
        } else {
            args.centres.iter().map(|&m| m.max(1)).collect()
        },
    };
    let started = Instant::now();
    let mut flow = Flow::Continue;
    for table in tables.iter().filter(|_| !args.report_only) {
        if flow == Flow::Stop {
            break;
        }
        flow = match table {
            Table::II => cauchy::run_table(&mut ctx, args)?,
            Table::III => logistic::run_table(&mut ctx, args)?,
            Table::V => softmax::run_table(&mut ctx, args)?,
        };
    }
    ctx.bar.finish_and_clear();
    let meta = report::Meta {
        plan,
        quick: args.quick,
        tables: tables.clone(),
        only: args.only.clone(),
        wall_s: started.elapsed().as_secs_f64(),
        interrupted: flow == Flow::Stop,
        classes: classes_of_sets(&ctx.data_dir, &tables),
    };
    let text = report::render(&ctx.store, &meta);
    let report_path = args.out.join("report.md");
    crate::fsutil::write_atomic(&report_path, text.as_bytes()).map_err(|e| {
        Diagnostic::plain(
            "mvi::paper::report_write",
            format!("cannot write `{}`: {e}", report_path.display()),
        )
    })?;
    Ok(Outcome {
        report_path,
        interrupted: flow == Flow::Stop,
        fits_run: ctx.fits_run,
        records: ctx.store.records().len(),
    })
}

/// (set, split) units the progress bar counts, from the plan and the splits on disk.
fn count_units(args: &PaperArgs, tables: &[Table], plan: &Plan, data_dir: &Path) -> u64 {
    let mut n = 0usize;
    for t in tables {
        match t {
            Table::II if selected(args, "cauchy") => n += plan.cauchy_sets,
            Table::III => {
                for s in data::BINARY_SETS.iter().filter(|s| selected(args, s)) {
                    let lines = std::fs::read_to_string(data_dir.join(s).join("train_idx.csv"))
                        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
                        .unwrap_or(0);
                    n += lines.min(plan.binary_splits);
                }
            }
            Table::V => {
                n += data::MULTICLASS_SETS.iter().filter(|s| selected(args, s)).count()
                    * plan.multiclass_splits;
            }
            Table::II => {}
        }
    }
    n as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(quick: bool, splits: Option<usize>) -> PaperArgs {
        PaperArgs {
            data_dir: None,
            out: PathBuf::from("x"),
            quick,
            only: Vec::new(),
            tables: vec!["II".into(), "IV".into(), "vi".into()],
            splits,
            pairs: None,
            samples: None,
            test_draws: None,
            protocol: Protocol::FixedCentresSelect,
            centres: Vec::new(),
            quiet: true,
            report_only: false,
        }
    }

    #[test]
    fn quick_plan_is_small_and_overrides_apply_to_every_table() {
        let q = Plan::from_args(&args(true, None));
        assert!(q.binary_splits <= 10 && q.multiclass_splits <= 10);
        assert!(q.cauchy_sets >= 20);
        assert!(q.pairs < Plan::from_args(&args(false, None)).pairs);
        let o = Plan::from_args(&args(false, Some(4)));
        assert_eq!((o.binary_splits, o.multiclass_splits, o.cauchy_sets), (4, 4, 4));
        assert_eq!(o.samples, 1000);
    }

    #[test]
    fn table_names_iv_and_vi_select_their_lpd_halves() {
        assert_eq!(
            parse_tables(&args(false, None)).unwrap(),
            vec![Table::II, Table::III, Table::V]
        );
        let mut bad = args(false, None);
        bad.tables = vec!["VII".into()];
        assert!(parse_tables(&bad).is_err());
    }
}
