//! Command-line arguments and the subcommands of the `mvi` program.
//!
//! Every subcommand calls the same library functions the REPL and the tests use
//! (`check::load_model`, `graph::lower_model`, `run::fit`, the `report` renderers) and turns
//! every user-facing problem into a rendered [`Diagnostic`] with exit code 2. Results files
//! are written atomically (`run::write_output_dir`, through `fsutil`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use nalgebra::DVector;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Uniform};

use crate::check::{self, TypedModel};
use crate::diagnostic::Diagnostic;
use crate::graph::{self, LogJoint};
use crate::infer::{timing, InferOptions};
use crate::progress::Progress;
use crate::report::{self, FitReport};
use crate::run::{self, RunInfo};
use crate::term::{err_out, out};

pub use crate::term::Failure;

/// Exit code for problems in the user's model, data or command.
pub const EXIT_USER_ERROR: i32 = 2;
/// Exit code when `diagnose` finds derivatives that disagree.
pub const EXIT_DIAGNOSE_FAILED: i32 = 1;

/// mvi: fast, trustworthy approximate Bayesian inference for models written in `.mvi`.
#[derive(Debug, Parser)]
#[command(name = "mvi", version, about, long_about = None)]
#[command(
    after_help = "Examples:\n  mvi check examples/eight_schools.mvi --data examples/data/eight_schools.json\n  \
mvi run examples/logistic_rbf_banana.mvi --data examples/data/logistic_rbf_banana.json --method mvi_eig\n  \
mvi compare examples/cauchy_rbf.mvi --data examples/data/cauchy_rbf.json --methods laplace,mvi_lr,vi_diag"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a model and its data; print the parameter layout, D, hyperparameters and options.
    #[command(
        after_help = "Example:\n  mvi check examples/eight_schools.mvi --data examples/data/eight_schools.json"
    )]
    Check(ModelArgs),
    /// Print an intermediate form: the AST, the typed model, or the log-joint graph.
    #[command(after_help = "Examples:\n  mvi dump ast examples/mixture_2d.mvi\n  \
mvi dump graph examples/linear_regression.mvi --data examples/data/linear_regression.json")]
    Dump {
        /// Which form to print.
        form: DumpForm,
        /// The model and its data.
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Check derivatives at a point: reverse mode vs num-dual vs finite differences, and the
    /// Hessian's symmetry and agreement. Exits 1 when they disagree beyond tolerance.
    #[command(
        after_help = "Example:\n  mvi diagnose examples/eight_schools.mvi --data examples/data/eight_schools.json --seed 3"
    )]
    Diagnose(DiagnoseArgs),
    /// Fit a model with the method of its `infer` block (or `--method`) and print a summary.
    #[command(
        after_help = "Examples:\n  mvi run examples/linear_regression.mvi --data examples/data/linear_regression.json\n  \
mvi run examples/logistic_rbf_banana.mvi --data examples/data/logistic_rbf_banana.json \\\n      \
--method mvi_lr --set samples=500 --output-dir out/"
    )]
    Run(RunArgs),
    /// Fit several methods to one model and print one comparison table.
    #[command(
        after_help = "Example:\n  mvi compare examples/cauchy_rbf.mvi --data examples/data/cauchy_rbf.json \\\n      \
--methods laplace,mvi_mu,mvi_eig,mvi_lr,vi_diag"
    )]
    Compare(CompareArgs),
    /// Fit a model and estimate its expected log predictive density by PSIS-LOO (as
    /// `az.loo`), from the pointwise log-likelihood of every `~` on data.
    #[command(
        after_help = "Examples:\n  mvi loo examples/linear_regression.mvi --data examples/data/linear_regression.json\n  \
mvi loo examples/eight_schools.mvi --data examples/data/eight_schools.json --method nuts --log-lik --output-dir out/"
    )]
    Loo(LooArgs),
    /// Fit several models to the same data and rank them by PSIS-LOO (as `az.compare`:
    /// elpd differences with their standard errors, stacking weights).
    #[command(
        name = "compare-models",
        after_help = "Example:\n  mvi compare-models a.mvi b.mvi --data d.json --method nuts"
    )]
    CompareModels(CompareModelsArgs),
    /// Simulation-based calibration of a method on a model: parameters drawn from the prior,
    /// data from the model, a fit of each simulated data set, and the ranks of the true values
    /// among the fit's draws, tested for uniformity.
    #[command(
        after_help = "Examples:\n  mvi sbc examples/eight_schools.mvi --data examples/data/eight_schools.json \
--method vi_full --sims 200 --output-dir sbc-vi_full/\n  \
mvi sbc model.mvi --data d.json --method nuts --sims 100 --json"
    )]
    Sbc(SbcArgs),
    /// An interactive session: load, fit, summarise, plot, and evaluate expressions over the
    /// posterior draws.
    #[command(
        after_help = "Example:\n  mvi repl examples/linear_regression.mvi --data examples/data/linear_regression.json"
    )]
    Repl(crate::repl::ReplArgs),
    /// Translate a Stan program to `.mvi` text (what `run`, `check` and the others do with a
    /// `.stan` file before checking it).
    #[command(after_help = "Examples:\n  mvi translate eight_schools_noncentered.stan\n  \
mvi translate model.stan -o model.mvi")]
    Translate(TranslateArgs),
    /// Benchmarks: `mvi bench paper` reproduces the MVI paper's tables II–VI.
    #[command(after_help = "Example:\n  mvi bench paper --quick --out paper-quick")]
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        which: BenchCommand,
    },
}

/// The benchmarks of `mvi bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Reproduce the MVI paper's tables II–VI on the benchmark data (resumable: finished
    /// fits in `--out` are skipped); writes `results.jsonl` and `report.md` into `--out`.
    #[command(after_help = "Examples:\n  mvi bench paper --quick --out paper-quick\n  \
mvi bench paper --tables III --only banana,thyroid --splits 5 --data-dir ../shared/data")]
    Paper(crate::paper::PaperArgs),
}

/// Intermediate forms `dump` prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DumpForm {
    /// The parsed syntax tree.
    Ast,
    /// The checked model with shapes and stages.
    Typed,
    /// The lowered log-joint graph.
    Graph,
}

/// A model file and its data.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The `.mvi` model file (or a `.stan` program, translated first).
    pub model: PathBuf,
    /// Data: a Stan-style JSON file, or `NAME=file.csv` for one variable (repeatable).
    #[arg(long = "data", short = 'd', value_name = "FILE|NAME=FILE")]
    pub data: Vec<String>,
}

/// Arguments of `translate`.
#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// The `.stan` program.
    pub model: PathBuf,
    /// Write the `.mvi` text to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// The model and its data.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Seed of the random point (uniform in [−2, 2] per unconstrained coordinate).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Evaluate at the initial point (w = 0; a unit vector's coordinates at 1/√K) instead of
    /// a random point.
    #[arg(long)]
    pub zero: bool,
}

/// Options shared by `run` and `compare`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// Override an `infer` option, e.g. `--set samples=500` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the result as one JSON object instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// Write draws.csv, fit.json, posterior.svg and trace.svg into this directory.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Draw replicated data `<name>_rep` for every data variable on the left of a `~`, at
    /// every posterior draw (the posterior predictive; as `predictive = true` in `infer`).
    #[arg(long)]
    pub predictive: bool,
    /// Pairs of columns to plot against each other in posterior.svg, e.g. `--pairs mu:tau`
    /// (repeatable; default: the first few parameters).
    #[arg(long, value_name = "NAME:NAME", requires = "output_dir")]
    pub pairs: Vec<String>,
}

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model and its data.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The inference method (overrides the model's `infer { method = … }`).
    #[arg(long, short = 'm')]
    pub method: Option<String>,
    /// Draw from the prior instead of the posterior (ancestrally, each parameter from its
    /// `~`, where the model allows it; else `nuts` on the model without its `~` on data),
    /// with prior predictive replicates `<name>_rep` of the data.
    #[arg(long, conflicts_with = "method")]
    pub prior: bool,
    /// Options shared with `compare`.
    #[command(flatten)]
    pub fit: FitArgs,
}

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The model and its data.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Comma-separated methods to fit.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "laplace,mvi_mu,mvi_eig,mvi_lr,vi_diag,vi_full"
    )]
    pub methods: Vec<String>,
    /// A reference posterior to measure every method against: `nuts` (run NUTS on the model
    /// first) or a CSV file of draws (CmdStan's layout, constrained parameter columns named
    /// `theta[1]` or `theta.1`). Adds W1, the worst mean error and sd ratio to the table.
    #[arg(long, value_name = "nuts|FILE")]
    pub reference: Option<String>,
    /// Options shared with `run`.
    #[command(flatten)]
    pub fit: FitArgs,
}

/// Arguments of `loo`.
#[derive(Debug, Args)]
pub struct LooArgs {
    /// The model and its data.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The inference method (overrides the model's `infer { method = … }`).
    #[arg(long, short = 'm')]
    pub method: Option<String>,
    /// Also write `log_lik.csv` (draws × observations) into `--output-dir`.
    #[arg(long, requires = "output_dir")]
    pub log_lik: bool,
    /// Options shared with `run`.
    #[command(flatten)]
    pub fit: FitArgs,
}

/// Arguments of `sbc`.
#[derive(Debug, Args)]
pub struct SbcArgs {
    /// The model and its data: sizes and covariates, and the observed variables (whose
    /// values each simulation replaces).
    #[command(flatten)]
    pub model: ModelArgs,
    /// The inference method under test (overrides the model's `infer { method = … }`).
    #[arg(long, short = 'm')]
    pub method: Option<String>,
    /// How many simulations.
    #[arg(long, default_value_t = 100)]
    pub sims: u64,
    /// How many of each fit's draws the ranks are taken among (L: ranks run from 0 to L).
    #[arg(long, default_value_t = 99, value_name = "L")]
    pub rank_draws: u64,
    /// Override an `infer` option of every fit, e.g. `--set samples=500` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the result as one JSON object instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// Write ranks.csv, sbc.json and one ECDF-difference picture per parameter into this
    /// directory; a run into a directory that holds an unfinished run of the same
    /// calibration goes on from where it stopped.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Arguments of `compare-models`.
#[derive(Debug, Args)]
pub struct CompareModelsArgs {
    /// The `.mvi` model files (at least two), fitted to the same data.
    #[arg(required = true, num_args = 2..)]
    pub models: Vec<PathBuf>,
    /// Data: a Stan-style JSON file, or `NAME=file.csv` for one variable (repeatable).
    #[arg(long = "data", short = 'd', value_name = "FILE|NAME=FILE")]
    pub data: Vec<String>,
    /// The inference method for every model (overrides each model's `infer` block).
    #[arg(long, short = 'm')]
    pub method: Option<String>,
    /// `infer` options for every model, e.g. `--set seed=3` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Run one parsed command line, printing results to stdout.
///
/// # Errors
/// [`Failure`] with the diagnostics or exit code for `main` to report.
pub fn execute(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Check(m) => cmd_check(&m),
        Command::Dump { form, model } => cmd_dump(form, &model),
        Command::Diagnose(a) => cmd_diagnose(&a),
        Command::Run(a) => cmd_run(&a),
        Command::Compare(a) => cmd_compare(&a),
        Command::Loo(a) => cmd_loo(&a),
        Command::CompareModels(a) => cmd_compare_models(&a),
        Command::Sbc(a) => cmd_sbc(&a),
        Command::Repl(a) => crate::repl::run_repl(&a),
        Command::Translate(a) => cmd_translate(&a),
        Command::Bench {
            which: BenchCommand::Paper(a),
        } => cmd_bench_paper(&a),
    }
}

/// Replace the panic message with one that names the bug and prints no backtrace (set
/// `MVI_BACKTRACE=1` to get the default message with its backtrace, for a bug report).
pub fn install_panic_hook() {
    if std::env::var_os("MVI_BACKTRACE").is_some_and(|v| v != "0") {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_string());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        err_out(&format!(
            "mvi: internal error{place}: {what}\n  this is a bug in mvi; please report it with the \
             command that caused it (MVI_BACKTRACE=1 shows a backtrace)\n"
        ));
    }));
}

/// Print diagnostics to stderr, with colour only on a terminal.
pub fn print_diagnostics(diags: &[Diagnostic]) {
    let color = std::io::stderr().is_terminal();
    for d in diags {
        if color {
            err_out(&format!("{:?}\n", miette::Report::new(d.clone())));
        } else {
            err_out(&d.render_plain(100));
        }
    }
}

fn load(m: &ModelArgs) -> Result<TypedModel, Failure> {
    Ok(check::load_model(&m.model, &m.data)?)
}

fn load_and_lower(m: &ModelArgs) -> Result<(TypedModel, LogJoint), Failure> {
    let typed = load(m)?;
    let joint = lower(m, &typed)?;
    Ok((typed, joint))
}

/// Lower a checked model; a diagnostic about a translated Stan program points into the
/// `.stan` file.
fn lower(m: &ModelArgs, typed: &TypedModel) -> Result<LogJoint, Diagnostic> {
    graph::lower_model(typed).map_err(|d| {
        let name = m.model.display().to_string();
        if !crate::stan::is_stan_file(&name) {
            return d;
        }
        match std::fs::read_to_string(&m.model)
            .ok()
            .and_then(|text| crate::stan::translate(&text, &name).ok())
        {
            Some(translation) => translation.to_stan(d),
            None => d,
        }
    })
}

fn cmd_check(m: &ModelArgs) -> Result<(), Failure> {
    let typed = load(m)?;
    lower(m, &typed)?;
    out(&check::layout_report(&typed));
    Ok(())
}

fn cmd_dump(form: DumpForm, m: &ModelArgs) -> Result<(), Failure> {
    match form {
        DumpForm::Ast => {
            let mut text = std::fs::read_to_string(&m.model).map_err(|e| unreadable(&m.model, &e))?;
            let name = m.model.display().to_string();
            if crate::stan::is_stan_file(&name) {
                text = crate::stan::translate(&text, &name)?.text;
            }
            let program = crate::syntax::parse_program(&text, &name)?;
            out(&crate::syntax::dump_ast(&program));
        }
        DumpForm::Typed => out(&check::dump_typed(&load(m)?)),
        DumpForm::Graph => out(&graph::dump_graph(&load_and_lower(m)?.1.graph)),
    }
    Ok(())
}

fn unreadable(path: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::plain(
        "mvi::cli::unreadable_model",
        format!("cannot read model file `{}`: {e}", path.display()),
    )
    .with_help("check the path; model files end in `.mvi` (or `.stan`)")
}

fn cmd_translate(a: &TranslateArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&a.model).map_err(|e| unreadable(&a.model, &e))?;
    let translation = crate::stan::translate(&text, &a.model.display().to_string())?;
    match &a.output {
        Some(path) => crate::fsutil::write_atomic(path, translation.text.as_bytes()).map_err(|e| {
            Diagnostic::plain(
                "mvi::cli::unwritable_output",
                format!("cannot write `{}`: {e}", path.display()),
            )
            .with_help("check that the directory exists and is writable")
        })?,
        None => out(&translation.text),
    }
    Ok(())
}

fn cmd_diagnose(a: &DiagnoseArgs) -> Result<(), Failure> {
    let (_, joint) = load_and_lower(&a.model)?;
    let d = crate::density::LogDensity::dim(&joint);
    let w = if a.zero {
        crate::density::LogDensity::initial_point(&joint)
    } else {
        let mut rng = StdRng::seed_from_u64(a.seed);
        let u = Uniform::new(-2.0, 2.0).expect("a valid range");
        DVector::from_fn(d, |_, _| u.sample(&mut rng))
    };
    let rep = graph::diagnose(&joint, &joint.theta0, &w, graph::Tolerances::default());
    out(&rep.to_string());
    if rep.passed() {
        Ok(())
    } else {
        Err(Failure::Code(EXIT_DIAGNOSE_FAILED))
    }
}

/// The run's options: the model's `infer` block, then `--method`, then `--set` overrides
/// (`KEY=VALUE` strings). The Python package passes its keyword arguments through here too.
///
/// # Errors
/// A `--set` that is not `KEY=VALUE`, or an invalid key or value.
pub fn run_options(
    typed: &TypedModel,
    method: Option<&str>,
    set: &[String],
) -> Result<InferOptions, Failure> {
    Ok(check::infer_options(typed, &overrides(method, set)?)?)
}

/// The `--method` and `--set` overrides as (key, value) pairs.
fn overrides(method: Option<&str>, set: &[String]) -> Result<Vec<(String, String)>, Failure> {
    let mut overrides = Vec::new();
    if let Some(m) = method {
        overrides.push(("method".to_string(), m.to_string()));
    }
    for s in set {
        let Some((k, v)) = s.split_once('=') else {
            return Err(
                Diagnostic::plain("mvi::cli::bad_set", format!("`--set {s}` is not KEY=VALUE"))
                    .with_help("write e.g. `--set samples=500`")
                    .into(),
            );
        };
        overrides.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(overrides)
}

/// The `--set` overrides with the flags that stand for options (`--predictive`).
fn fit_set(f: &FitArgs) -> Vec<String> {
    let mut set = f.set.clone();
    if f.predictive {
        set.push("predictive=true".into());
    }
    set
}

/// A Ctrl-C flag: the first Ctrl-C asks the running fit to stop at its next iteration.
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    // A second handler cannot be installed (the REPL or a test may have one): then Ctrl-C
    // keeps its default meaning.
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    flag
}

fn fit_one(
    joint: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    quiet: bool,
    flag: &Arc<AtomicBool>,
) -> Result<FitReport, Failure> {
    let mut progress = Progress::new(quiet, flag.clone());
    let (_, report) = run::fit(joint, options, info, &mut progress)?;
    progress.finish();
    Ok(report)
}

fn run_info(m: &ModelArgs) -> RunInfo {
    RunInfo {
        model_file: m.model.display().to_string(),
        data_files: m.data.clone(),
    }
}

fn cmd_run(a: &RunArgs) -> Result<(), Failure> {
    let t = timing::span("load: parse, check, data, lower");
    let (typed, mut joint) = load_and_lower(&a.model)?;
    let mut set = fit_set(&a.fit);
    let prior = a.prior.then(|| run::prior::Prior::of(&typed)).transpose()?;
    let method = match &prior {
        Some(p) => {
            joint = p.joint.clone();
            set.push("predictive=true".into());
            Some("nuts")
        }
        None => a.method.as_deref(),
    };
    let options = run_options(&typed, method, &set)?;
    run::attach_after_fit(&typed, &mut joint, &options)?;
    drop(t);
    // Output problems are found before the fit, not after it.
    let pairs = plot_pairs(&column_names(&joint), &a.fit.pairs)?;
    if let Some(dir) = &a.fit.output_dir {
        prepare_output_dir(dir)?;
    }
    let flag = interrupt_flag();
    let report = match &prior {
        Some(p) => {
            let mut progress = Progress::new(a.fit.quiet, flag.clone());
            let r = run::prior::fit_prior(&joint, &p.sampler, &options, &run_info(&a.model), &mut progress)?;
            progress.finish();
            r
        }
        None => fit_one(&joint, &options, &run_info(&a.model), a.fit.quiet, &flag)?,
    };
    let t = timing::span("report: write and print");
    let written = match &a.fit.output_dir {
        Some(dir) => write_outputs(dir, &report, &pairs),
        None => Ok(()),
    };
    // The summary is printed even when a file could not be written: the fit is not lost.
    if a.fit.json {
        out(&format!("{}\n", report::render_json(&report)));
    } else {
        out(&report::render_summary(&report));
    }
    drop(t);
    crate::term::print_timings();
    // The process ends here: freeing the checked model (every loop iteration's typed
    // statements), the graph and the report, node by node, would only delay the exit
    // (about a millisecond on a 100-step recursion); the OS takes the memory back at once.
    std::mem::forget((typed, joint, report));
    written
}

/// Fit with `loo = true`; the fit's report and its PSIS-LOO.
fn fit_loo(
    m: &ModelArgs,
    method: Option<&str>,
    set: &[String],
    quiet: bool,
) -> Result<(FitReport, run::loo::ModelLoo), Failure> {
    let (typed, mut joint) = load_and_lower(m)?;
    let mut set = set.to_vec();
    set.push("loo=true".into());
    let options = run_options(&typed, method, &set)?;
    run::attach_after_fit(&typed, &mut joint, &options)?;
    let flag = interrupt_flag();
    let report = fit_one(&joint, &options, &run_info(m), quiet, &flag)?;
    let loo = run::loo::model_loo(&typed, &report)?;
    Ok((report, loo))
}

fn cmd_loo(a: &LooArgs) -> Result<(), Failure> {
    if let Some(dir) = &a.fit.output_dir {
        prepare_output_dir(dir)?;
    }
    let (report, loo) = fit_loo(&a.model, a.method.as_deref(), &fit_set(&a.fit), a.fit.quiet)?;
    let written = match &a.fit.output_dir {
        Some(dir) => write_outputs(dir, &report, &[]).and_then(|()| {
            run::loo::write_loo_files(dir, &report, &loo, a.log_lik).map_err(|e| {
                Failure::from(
                    Diagnostic::plain(
                        "mvi::cli::output_dir",
                        format!("cannot write results to `{}`: {e}", dir.display()),
                    )
                    .with_help("check that the directory can be created and written"),
                )
            })
        }),
        None => Ok(()),
    };
    if a.fit.json {
        out(&format!("{}\n", run::loo::render_loo_json(&report, &loo)));
    } else {
        out(&run::loo::render_loo_text(&report, &loo));
    }
    written
}

fn cmd_compare_models(a: &CompareModelsArgs) -> Result<(), Failure> {
    let mut fits = Vec::new();
    for model in &a.models {
        let m = ModelArgs {
            model: model.clone(),
            data: a.data.clone(),
        };
        let (_, loo) = fit_loo(&m, a.method.as_deref(), &a.set, a.quiet)?;
        fits.push((model.display().to_string(), loo));
    }
    let table = run::loo::compare_models(&fits)?;
    if a.json {
        out(&format!("{}\n", run::loo::render_comparison_json(&table)));
    } else {
        out(&run::loo::render_comparison_text(&fits, &table));
    }
    Ok(())
}

fn cmd_bench_paper(a: &crate::paper::PaperArgs) -> Result<(), Failure> {
    let outcome = crate::paper::run(a, interrupt_flag())?;
    out(&format!(
        "{} fits run, {} results stored; report: {}\n",
        outcome.fits_run,
        outcome.records,
        outcome.report_path.display()
    ));
    if outcome.interrupted {
        err_out("interrupted: run the same command again to resume\n");
        return Err(Failure::Code(130));
    }
    Ok(())
}

fn cmd_compare(a: &CompareArgs) -> Result<(), Failure> {
    let (typed, joint) = load_and_lower(&a.model)?;
    let pairs = plot_pairs(&column_names(&joint), &a.fit.pairs)?;
    if let Some(dir) = &a.fit.output_dir {
        // the methods' subdirectories are created as their fits finish
        prepare_output_dir(dir)?;
        if let Some(file) = a.methods.iter().map(|m| dir.join(m)).find(|p| p.is_file()) {
            return Err(Diagnostic::plain(
                "mvi::cli::output_dir",
                format!("`{}` is a file, not a directory", file.display()),
            )
            .with_help("`compare` writes each method's results into a subdirectory named after it")
            .into());
        }
    }
    let flag = interrupt_flag();
    let mut reports = Vec::new();
    // A method that fails on this model (no mode, diverged) is a finding of the comparison:
    // its diagnostic is printed and the other methods still run.
    let mut failed: Vec<(String, Diagnostic)> = Vec::new();
    let mut listed = a.methods.clone();
    if a.reference.as_deref() == Some("nuts") {
        listed.push("nuts".into());
    }
    // every method's options (and the reference run's) are checked before the first fit
    let mut runs = compare_options(&typed, &listed, &a.fit.set)?;
    let nuts_options = runs.iter().find(|(m, _)| m == "nuts").map(|(_, o)| o.clone());
    runs.retain(|(m, _)| a.methods.contains(m));
    let reference = match a.reference.as_deref() {
        None => None,
        Some("nuts") => {
            let options = nuts_options.expect("nuts is in the list");
            let r = fit_one(&joint, &options, &run_info(&a.model), a.fit.quiet, &flag)?;
            Some(crate::reference::Reference::from_report(&joint, &r))
        }
        Some(file) => {
            let table = crate::data::draws::read_draws_csv(std::path::Path::new(file))?;
            Some(crate::reference::Reference::from_table(&joint, &table)?)
        }
    };
    // methods left when Ctrl-C stopped the comparison
    let mut not_run: Vec<String> = Vec::new();
    for (i, (method, options)) in runs.iter().enumerate() {
        if flag.load(Ordering::SeqCst) {
            not_run = runs[i..].iter().map(|(m, _)| m.clone()).collect();
            break;
        }
        let report = match fit_one(&joint, options, &run_info(&a.model), a.fit.quiet, &flag) {
            Ok(report) => report,
            Err(Failure::User(diags)) if !diags.is_empty() => {
                print_diagnostics(&diags);
                failed.push((method.clone(), diags[0].clone()));
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(dir) = &a.fit.output_dir {
            write_outputs(&dir.join(method), &report, &pairs)?;
        }
        let mut report = report;
        report.reference = reference.as_ref().map(|r| r.metrics(&joint, &report));
        reports.push(report);
    }
    if reports.is_empty() {
        // every method failed: its diagnostics are printed above
        return Err(Failure::Code(2));
    }
    if a.fit.json {
        let text = compare_json_with_failures(&reports, &failed, &not_run);
        out(&format!("{}\n", with_reference_json(text, reference.as_ref())));
    } else {
        if let Some(r) = &reference {
            out(&r.describe());
        }
        out(&report::render_compare(&reports));
        if !failed.is_empty() {
            let names: Vec<&str> = failed.iter().map(|(m, _)| m.as_str()).collect();
            out(&format!("failed: {} (diagnostics on stderr)\n", names.join(", ")));
        }
        if !not_run.is_empty() {
            out(&format!("not run: {} (interrupted)\n", not_run.join(", ")));
        }
    }
    Ok(())
}

/// The options of each method of `compare` (a method named twice is fitted once), all
/// checked before the first fit. A `--set` key applies to the methods that take it
/// (`samples` is not given to `laplace`); a key none of them takes is an error.
///
/// # Errors
/// As [`run_options`], for the first method whose options are invalid.
pub fn compare_options(
    typed: &TypedModel,
    methods: &[String],
    set: &[String],
) -> Result<Vec<(String, InferOptions)>, Failure> {
    let mut unique: Vec<&String> = Vec::new();
    for m in methods {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    let mut out = Vec::new();
    for m in unique {
        let set: Vec<String> = set
            .iter()
            .filter(|s| {
                let key = s.split_once('=').map_or(s.as_str(), |(k, _)| k.trim());
                let spec = |x: &str| check::infer_keys::key_spec_for(key, Some(x));
                spec(m).is_none_or(|s| {
                    s.methods.includes(m)
                        || !methods
                            .iter()
                            .any(|x| spec(x).is_some_and(|s| s.methods.includes(x)))
                })
            })
            .cloned()
            .collect();
        out.push((m.clone(), run_options(typed, Some(m), &set)?));
    }
    Ok(out)
}

/// `render_compare_json` with a `failed` array of the methods that failed, each with the
/// code and message of its diagnostic, and a `not_run` array of the methods a Ctrl-C left.
fn compare_json_with_failures(
    reports: &[FitReport],
    failed: &[(String, Diagnostic)],
    not_run: &[String],
) -> String {
    let text = report::render_compare_json(reports);
    let Ok(serde_json::Value::Object(mut v)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    let list = failed
        .iter()
        .map(|(m, d)| serde_json::json!({ "method": m, "code": d.code, "message": d.message }))
        .collect();
    v.insert("failed".into(), serde_json::Value::Array(list));
    v.insert("not_run".into(), serde_json::json!(not_run));
    serde_json::to_string_pretty(&v).unwrap_or(text)
}

/// The compare JSON with a `reference` object, when there is a reference.
fn with_reference_json(text: String, reference: Option<&crate::reference::Reference>) -> String {
    let Some(r) = reference else {
        return text;
    };
    let Ok(serde_json::Value::Object(mut v)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    v.insert("reference".into(), r.json());
    serde_json::to_string_pretty(&v).unwrap_or(text)
}

/// The CmdStan column names of a fit's draws: every parameter and reported `let`, as
/// `run::fit` names them, known before the fit.
fn column_names(joint: &LogJoint) -> Vec<String> {
    joint
        .params
        .iter()
        .chain(&joint.reported)
        .flat_map(|p| report::cmdstan_names(&p.name, &p.shape.dims()))
        .collect()
}

/// Column indices of `--pairs a:b` arguments in `columns`; empty (the default pairs) when
/// none are given.
fn plot_pairs(columns: &[String], pairs: &[String]) -> Result<Vec<(usize, usize)>, Failure> {
    let column = |name: &str| {
        columns.iter().position(|c| c == name).ok_or_else(|| {
            let help = crate::check::error::did_you_mean(name, columns.iter().map(String::as_str))
                .unwrap_or_else(|| format!("columns: {}", columns.join(", ")));
            Diagnostic::plain(
                "mvi::cli::unknown_column",
                format!("`--pairs` names `{name}`, which is not a column"),
            )
            .with_help(help)
        })
    };
    let mut out = Vec::new();
    for p in pairs {
        let Some((a, b)) = p.split_once(':') else {
            return Err(
                Diagnostic::plain("mvi::cli::bad_pairs", format!("`--pairs {p}` is not NAME:NAME"))
                    .with_help("write e.g. `--pairs mu:tau` or `--pairs w.1:w.2`")
                    .into(),
            );
        };
        out.push((column(a.trim())?, column(b.trim())?));
    }
    Ok(out)
}

/// Create the `--output-dir` (if missing) and check that its files can be written, before a
/// fit whose results would otherwise be lost.
fn prepare_output_dir(dir: &Path) -> Result<(), Failure> {
    let fail = |msg: String, help: &str| -> Failure {
        Diagnostic::plain("mvi::cli::output_dir", msg)
            .with_help(help)
            .into()
    };
    // the directory, or the nearest of its parents that exists, must be a directory
    if let Some(file) = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
        return Err(fail(
            format!("`{}` is a file, not a directory", file.display()),
            "name a directory for the results files (`--output-dir`); it is created if missing",
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        fail(
            format!("cannot create the output directory `{}`: {e}", dir.display()),
            "check the path and the permissions of its parent directories",
        )
    })?;
    for name in run::OUTPUT_FILES {
        let path = dir.join(name);
        if path.is_dir() {
            return Err(fail(
                format!("cannot write `{}`: it is a directory", path.display()),
                "remove or rename it, or choose another `--output-dir`",
            ));
        }
    }
    let probe = dir.join(format!(".mvi-write-test.{}", std::process::id()));
    let writable = std::fs::write(&probe, b"");
    let _ = std::fs::remove_file(&probe);
    writable.map_err(|e| {
        fail(
            format!("cannot write into the output directory `{}`: {e}", dir.display()),
            "check the directory's permissions, or choose another `--output-dir`",
        )
    })
}

fn write_outputs(dir: &Path, report: &FitReport, pairs: &[(usize, usize)]) -> Result<(), Failure> {
    let default_pairs;
    let pairs = if pairs.is_empty() {
        default_pairs = report::svg::default_pairs(report);
        &default_pairs
    } else {
        pairs
    };
    run::write_output_dir_with_pairs(dir, report, Some(pairs)).map_err(|e| {
        Diagnostic::plain(
            "mvi::cli::output_dir",
            format!("cannot write results to `{}`: {e}", dir.display()),
        )
        .with_help("check that the directory can be created and written")
        .into()
    })
}

fn cmd_sbc(a: &SbcArgs) -> Result<(), Failure> {
    let usage = |code: &'static str, msg: &str, help: &str| -> Failure {
        Diagnostic::plain(code, msg.to_string())
            .with_help(help.to_string())
            .into()
    };
    if a.sims == 0 {
        return Err(usage(
            "mvi::sbc::no_sims",
            "`--sims 0`: there is nothing to calibrate",
            "give the number of simulations, e.g. `--sims 200` (the uniformity test has little power below 100)",
        ));
    }
    if a.rank_draws == 0 {
        return Err(usage(
            "mvi::sbc::no_rank_draws",
            "`--rank-draws 0`: ranks among no draws say nothing",
            "give L ≥ 1, e.g. `--rank-draws 99` (ranks 0..=99, 100 bins)",
        ));
    }
    let t = timing::span("load: parse, check, data, lower");
    let path = &a.model.model;
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(path, &e))?;
    let data = crate::data::load_data_args(&a.model.data)?;
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = path.display().to_string();
    let typed = check::check_source(&text, &name, &dir, &data)?;
    let overrides = overrides(a.method.as_deref(), &a.set)?;
    let options = check::infer_options(&typed, &overrides)?;
    let seed = run::option_int(&options, "seed", 0);
    let sbc = run::sbc::Sbc::new(
        &typed,
        &text,
        &name,
        &dir,
        &data,
        overrides,
        seed,
        a.rank_draws as usize,
    )?;
    drop(t);
    let config = run::sbc::SbcConfig::of(&sbc, &name, &a.model.data);
    let mut done = Vec::new();
    if let Some(dir) = &a.output_dir {
        prepare_output_dir(dir)?;
        done = run::sbc::load_done(dir, &config);
        done.retain(|s| s.index < a.sims as usize);
    }
    let todo: Vec<usize> = (0..a.sims as usize)
        .filter(|i| !done.iter().any(|s| s.index == *i))
        .collect();
    let bar = (!a.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(a.sims);
        bar.set_style(
            indicatif::ProgressStyle::with_template("sbc {bar:30} {pos}/{len} fits, {elapsed} (eta {eta})")
                .expect("a valid template"),
        );
        bar.set_position(done.len() as u64);
        bar
    });
    let flag = interrupt_flag();
    let so_far = std::sync::Mutex::new(done);
    let write_error = std::sync::Mutex::new(None);
    let record = |s: &run::sbc::Simulation| {
        let mut sims = so_far.lock().expect("no panic while held");
        sims.push(s.clone());
        sims.sort_by_key(|s| s.index);
        if let Some(dir) = &a.output_dir {
            if let Err(e) = run::sbc::save(dir, &config, &sims) {
                write_error.lock().expect("no panic while held").get_or_insert(e);
            }
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    sbc.run(&todo, &flag, &record);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let sims = so_far.into_inner().expect("no panic while held");
    if let Some(e) = write_error.into_inner().expect("no panic while held") {
        let dir = a.output_dir.as_deref().unwrap_or(Path::new("."));
        return Err(Diagnostic::plain(
            "mvi::cli::output_dir",
            format!("cannot write results to `{}`: {e}", dir.display()),
        )
        .with_help("check that the directory can be written")
        .into());
    }
    let method = run::method_name(&options);
    let summary = run::sbc::summarise(&sbc, &method, &sims, a.sims as usize).map_err(Failure::from)?;
    if let Some(dir) = &a.output_dir {
        run::sbc::write_summary(dir, &summary).map_err(|e| {
            Failure::from(
                Diagnostic::plain(
                    "mvi::cli::output_dir",
                    format!("cannot write results to `{}`: {e}", dir.display()),
                )
                .with_help("check that the directory can be written"),
            )
        })?;
    }
    if a.json {
        out(&format!("{}\n", summary.render_json()));
    } else {
        out(&summary.render_text());
    }
    Ok(())
}
