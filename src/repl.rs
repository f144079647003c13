//! The interactive session behind `mvi repl`: load a model and data, fit, summarise, plot,
//! and evaluate expressions over the posterior draws of the last fit.
//!
//! Input: lines typed at the prompt (commands starting with `:`, definitions that extend the
//! model, or bare expressions). Output: the text to print for each line; a problem never ends
//! the session, it becomes a rendered [`Diagnostic`] in that text. [`Session`] is plain
//! library code the tests drive directly ([`Session::eval_line`]); the rustyline loop
//! (history, multi-line blocks, tab completion, Ctrl-C) sits on top in [`editor`].
//!
//! Every step calls the same library functions as the CLI: [`check::check_source`],
//! [`graph::lower_model`], [`run::fit`] and the [`report`] renderers.

pub mod editor;
pub mod expr;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use nalgebra::DVector;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Uniform};

use crate::check::{self, TypedModel};
use crate::data::{self, DataSet};
use crate::diagnostic::Diagnostic;
use crate::graph::{self, LogJoint};
use crate::infer::InferOptions;
use crate::posterior::Posterior;
use crate::progress::Progress;
use crate::reference::Reference;
use crate::report::{self, FitReport};
use crate::run::{self, RunInfo};

pub use editor::run_repl;

/// Width at which diagnostics are rendered without colour.
const PLAIN_WIDTH: usize = 100;

/// A plot that could not be drawn.
fn plot_error(e: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::plain("mvi::repl::plot", format!("cannot draw the plot: {e}"))
}

/// Write a plot atomically, or say why not.
fn write_svg(path: &Path, svg: &str) -> Result<(), Vec<Diagnostic>> {
    crate::fsutil::write_atomic(path, svg.as_bytes()).map_err(|e| {
        vec![Diagnostic::plain(
            "mvi::repl::plot",
            format!("cannot write `{}`: {e}", path.display()),
        )
        .with_help("check that the directory exists and can be written")]
    })
}

/// The methods `:compare` fits when none are named (as `mvi compare`).
pub const DEFAULT_COMPARE: &[&str] = &["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full"];

/// The REPL's commands with their one-line help, in the order `:help` lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    (":load", "FILE.mvi            load a model (keeps the data)"),
    (
        ":data",
        "FILE.json | NAME=FILE.csv ...   set the data files and re-check",
    ),
    (
        ":method",
        "[NAME]            choose the inference method (no name: show it)",
    ),
    (
        ":set",
        "[KEY=VALUE]          override an `infer` option (no argument: show all)",
    ),
    (
        ":fit",
        "[METHOD]             fit the model, with METHOD for this fit only (Ctrl-C stops at the next iteration)",
    ),
    (":summary", "                 the last fit's summary table"),
    (
        ":compare",
        "[m1,...] [--reference nuts|FILE]  fit several methods and compare them (and with a reference)",
    ),
    (
        ":plot",
        "[FILE.svg]          write the last fit's marginals (default posterior.svg)",
    ),
    (
        ":ppc",
        "[FILE.svg]           fit with replicated data and draw the posterior predictive check (default ppc.svg)",
    ),
    (
        ":loo",
        "[FILE.svg]           fit, print PSIS-LOO, and draw the LOO-PIT check (default loo_pit.svg)",
    ),
    (":diagnose", "                check derivatives at a random point"),
    (":model", "                   print the current model text"),
    (":help", "                    this list"),
    (":quit", "                    leave (also Ctrl-D)"),
];

/// Keywords that start a definition extending the model rather than an expression.
const DEFINITION_KEYWORDS: &[&str] = &[
    "let", "fn", "import", "data", "hyper", "param", "model", "predict", "infer",
];

/// Arguments of `mvi repl`.
#[derive(Debug, Args)]
pub struct ReplArgs {
    /// A `.mvi` model file to load at the start.
    pub model: Option<PathBuf>,
    /// Data: a Stan-style JSON file, or `NAME=file.csv` for one variable (repeatable).
    #[arg(long = "data", short = 'd', value_name = "FILE|NAME=FILE")]
    pub data: Vec<String>,
}

/// The loaded model: its file, its current text (with definitions typed at the prompt) and,
/// when it checks against the data, the typed model and its log joint.
#[derive(Debug, Clone)]
struct Loaded {
    path: PathBuf,
    text: String,
    checked: Option<(TypedModel, LogJoint)>,
}

/// The last fit: its posterior and report.
#[derive(Debug, Clone)]
struct LastFit {
    posterior: Posterior,
    report: FitReport,
}

/// One interactive session: model, data, method and option overrides, and the last fit.
#[derive(Debug)]
pub struct Session {
    loaded: Option<Loaded>,
    data_args: Vec<String>,
    data: DataSet,
    method: Option<String>,
    overrides: Vec<(String, String)>,
    last: Option<LastFit>,
    interrupt: Arc<AtomicBool>,
    color: bool,
    quit: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session::new(Arc::new(AtomicBool::new(false)), false)
    }
}

impl Session {
    /// An empty session. A running fit stops once `interrupt` becomes true (the terminal
    /// loop sets it on Ctrl-C); diagnostics use miette's colour report when `color` is true.
    pub fn new(interrupt: Arc<AtomicBool>, color: bool) -> Self {
        Session {
            loaded: None,
            data_args: Vec::new(),
            data: DataSet::default(),
            method: None,
            overrides: Vec::new(),
            last: None,
            interrupt,
            color,
            quit: false,
        }
    }

    /// Evaluate one input (a command, a definition or an expression) and return what to
    /// print. Problems come back as rendered diagnostics; the session stays usable.
    pub fn eval_line(&mut self, line: &str) -> String {
        let input = line.trim();
        if input.is_empty() || input.starts_with("//") {
            return String::new();
        }
        let result = if let Some(cmd) = input.strip_prefix(':') {
            self.command(cmd)
        } else if is_definition(input) {
            self.define(input)
        } else {
            self.eval_expr(input)
                .map_err(|diags| command_without_colon(input).map_or(diags, |d| vec![d]))
        };
        match result {
            Ok(text) => text,
            Err(diags) => self.render(&diags),
        }
    }

    /// Whether `:quit` was given.
    pub fn wants_quit(&self) -> bool {
        self.quit
    }

    /// Names for tab completion: parameters, data, hyperparameters, top-level lets and
    /// functions of the checked model (empty before a model checks).
    pub fn names(&self) -> Vec<String> {
        let Some((typed, _)) = self.checked() else {
            return Vec::new();
        };
        let mut out: Vec<String> = typed
            .params
            .iter()
            .chain(&typed.hypers)
            .map(|s| s.name.clone())
            .chain(typed.data_decls.iter().map(|d| d.name.clone()))
            .chain(typed.lets.iter().map(|(n, _)| n.clone()))
            .chain(typed.functions.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Load the model at `path` (keeping the current data) and check it; a `.stan` program is
    /// translated to `.mvi` first.
    ///
    /// # Errors
    /// The file cannot be read, or the model does not check against the data; the text is
    /// kept either way so that `:data` can follow.
    pub fn load(&mut self, path: &Path) -> Result<String, Vec<Diagnostic>> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![Diagnostic::plain(
                "mvi::repl::unreadable_model",
                format!("cannot read model file `{}`: {e}", path.display()),
            )
            .with_help("check the path; model files end in `.mvi`")]
        })?;
        // A Stan program is kept as its `.mvi` translation, which definitions typed at the
        // prompt extend; it is named `model.stan.mvi`, the text its diagnostics show.
        let name = path.display().to_string();
        let (path, text) = if crate::stan::is_stan_file(&name) {
            let translation = crate::stan::translate(&text, &name).map_err(|d| vec![d])?;
            (PathBuf::from(format!("{name}.mvi")), translation.text)
        } else {
            (path.to_path_buf(), text)
        };
        self.last = None;
        self.loaded = Some(Loaded {
            path,
            text,
            checked: None,
        });
        self.recheck()
    }

    /// Replace the data files (`file.json` or `NAME=file.csv`) and re-check the model.
    ///
    /// # Errors
    /// A data file cannot be read, or the model does not check against the new data.
    pub fn set_data(&mut self, args: &[String]) -> Result<String, Vec<Diagnostic>> {
        self.data = data::load_data_args(args)?;
        self.data_args = args.to_vec();
        self.last = None;
        if self.loaded.is_none() {
            return Ok(format!("data: {}\n", args.join(", ")));
        }
        self.recheck()
    }

    fn command(&mut self, cmd: &str) -> Result<String, Vec<Diagnostic>> {
        let (name, arg) = cmd
            .split_once(char::is_whitespace)
            .map_or((cmd, ""), |(n, a)| (n, a.trim()));
        match name {
            "load" | "l" => self.cmd_load(arg),
            "data" | "d" => self.cmd_data(arg),
            "method" | "m" => self.cmd_method(arg),
            "set" => self.cmd_set(arg),
            "fit" | "f" => self.cmd_fit(arg),
            "summary" | "s" => Ok(report::render_summary(&self.last_fit()?.report)),
            "compare" => self.cmd_compare(arg),
            "plot" => self.cmd_plot(arg),
            "ppc" => self.cmd_ppc(arg),
            "loo" => self.cmd_loo(arg),
            "diagnose" => self.cmd_diagnose(),
            "model" => Ok(self.loaded()?.text.clone()),
            "help" | "h" | "?" => Ok(help_text()),
            "quit" | "q" | "exit" => {
                self.quit = true;
                Ok(String::new())
            }
            _ => Err(vec![unknown_command(name)]),
        }
    }

    fn cmd_load(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        if arg.is_empty() {
            return Err(vec![usage(":load FILE.mvi")]);
        }
        self.load(Path::new(arg))
    }

    fn cmd_data(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        if arg.is_empty() {
            return Ok(if self.data_args.is_empty() {
                "no data files\n".to_string()
            } else {
                format!("data: {}\n", self.data_args.join(" "))
            });
        }
        let args: Vec<String> = arg.split_whitespace().map(str::to_string).collect();
        self.set_data(&args)
    }

    fn cmd_method(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        if arg.is_empty() {
            let typed = self.checked().map(|(t, _)| t);
            let shown = match (typed, &self.method) {
                (_, Some(m)) => m.clone(),
                (Some(t), None) => run::method_name(&t.infer),
                (None, None) => "laplace".to_string(),
            };
            return Ok(format!("method = {shown}\n"));
        }
        if self.checked().is_none() && !check::infer_keys::METHODS.contains(&arg) {
            // no model to check against yet: at least the name is checked where it is typed
            return Err(vec![unknown_method(arg)]);
        }
        let previous = self.method.replace(arg.to_string());
        if let Err(d) = self.validate_options() {
            self.method = previous;
            return Err(d);
        }
        Ok(format!("method = {arg}\n"))
    }

    fn cmd_set(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        if arg.is_empty() {
            let options = self.options()?;
            let mut out = String::new();
            for (k, v) in run::options_with_defaults(&options) {
                let _ = writeln!(out, "{k} = {v}");
            }
            return Ok(out);
        }
        let Some((k, v)) = arg.split_once('=') else {
            return Err(vec![usage(":set KEY=VALUE, e.g. `:set samples=500`")]);
        };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        if k == "method" {
            return self.cmd_method(&v);
        }
        self.overrides.push((k.clone(), v.clone()));
        if let Err(d) = self.validate_options() {
            self.overrides.pop();
            return Err(d);
        }
        Ok(format!("{k} = {v}\n"))
    }

    /// `:fit` with the session's method, or `:fit NAME` with the named one for this fit only
    /// (the session's `:set` options that NAME takes apply, as in `:compare`).
    fn cmd_fit(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        let options = match arg.split_whitespace().collect::<Vec<_>>()[..] {
            [] => self.options()?,
            [method] => {
                if !check::infer_keys::METHODS.contains(&method) {
                    return Err(vec![unknown_method(method)]);
                }
                let typed = &self.checked_or_err()?.0;
                let overrides = overrides_for(&self.overrides_with(Some(method)), method);
                check::infer_options(typed, &overrides).map_err(|d| vec![d])?
            }
            _ => {
                return Err(vec![Diagnostic::plain(
                    "mvi::repl::usage",
                    "`:fit` takes at most one argument, a method name",
                )
                .with_help(
                    "usage: `:fit [METHOD]`, e.g. `:fit laplace`; set options with `:set KEY=VALUE`",
                )])
            }
        };
        let (posterior, report) = self.fit_with(&options)?;
        let line = fit_line(&report);
        self.last = Some(LastFit { posterior, report });
        Ok(line)
    }

    fn cmd_compare(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        let (arg, reference) = match arg.split_once("--reference") {
            Some((list, r)) if !r.trim().is_empty() => (list.trim(), Some(r.trim())),
            Some(_) => return Err(vec![usage(":compare [m1,m2,...] [--reference nuts|FILE.csv]")]),
            None => (arg, None),
        };
        let methods: Vec<String> = if arg.is_empty() {
            DEFAULT_COMPARE.iter().map(|m| m.to_string()).collect()
        } else {
            arg.split([',', ' '])
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .collect()
        };
        let typed = self.checked_or_err()?.0.clone();
        // every method's options are checked before the first fit
        let mut runs = Vec::new();
        for m in &methods {
            let overrides = overrides_for(&self.overrides_with(Some(m)), m);
            runs.push((m, check::infer_options(&typed, &overrides).map_err(|d| vec![d])?));
        }
        let reference = match reference {
            None => None,
            Some(r) => Some(self.reference(&typed, r)?),
        };
        let mut reports = Vec::new();
        // a method that fails is listed under the table; the others still run
        let mut failed: Vec<String> = Vec::new();
        let mut not_run: Vec<&str> = Vec::new();
        for (i, (m, options)) in runs.iter().enumerate() {
            if i > 0 && self.interrupt.load(Ordering::SeqCst) {
                not_run = runs[i..].iter().map(|(m, _)| m.as_str()).collect();
                break;
            }
            match self.fit_with(options) {
                Ok((_, mut report)) => {
                    if let (Some(r), Some((_, joint))) = (&reference, self.checked()) {
                        report.reference = Some(r.metrics(joint, &report));
                    }
                    reports.push(report);
                }
                Err(diags) => failed.extend(diags.iter().map(|d| format!("{m}: {}", d.message))),
            }
        }
        let mut out = reference.as_ref().map_or(String::new(), Reference::describe);
        if !reports.is_empty() {
            out.push_str(&report::render_compare(&reports));
        }
        for f in &failed {
            out.push_str(&format!("failed: {f}\n"));
        }
        if !not_run.is_empty() {
            out.push_str(&format!("not run: {} (interrupted)\n", not_run.join(", ")));
        }
        Ok(out)
    }

    /// The reference of `:compare --reference`: a `nuts` run of the model (with the
    /// session's options that apply to it) or a draws file.
    fn reference(&self, typed: &TypedModel, spec: &str) -> Result<Reference, Vec<Diagnostic>> {
        if spec == "nuts" {
            let overrides = overrides_for(&self.overrides_with(Some("nuts")), "nuts");
            let options = check::infer_options(typed, &overrides).map_err(|d| vec![d])?;
            let (_, report) = self.fit_with(&options)?;
            let joint = &self.checked_or_err()?.1;
            return Ok(Reference::from_report(joint, &report));
        }
        let table = crate::data::draws::read_draws_csv(Path::new(spec)).map_err(|d| vec![d])?;
        let joint = &self.checked_or_err()?.1;
        Reference::from_table(joint, &table).map_err(|d| vec![d])
    }
    fn cmd_plot(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        let path = PathBuf::from(if arg.is_empty() { "posterior.svg" } else { arg });
        let svg = report::render_posterior_svg(&self.last_fit()?.report).map_err(|e| vec![plot_error(&e)])?;
        write_svg(&path, &svg)?;
        Ok(format!("wrote {}\n", path.display()))
    }

    /// Fit the current model with its options and `extra` ones (`predictive`, `loo`), the
    /// graphs those need attached; the fit becomes the last one.
    fn fit_after(&mut self, extra: &[(&str, &str)]) -> Result<(), Vec<Diagnostic>> {
        let (typed, joint) = self.checked_or_err()?;
        let mut overrides = self.overrides_with(self.method.as_deref());
        overrides.extend(extra.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())));
        let options = check::infer_options(typed, &overrides).map_err(|d| vec![d])?;
        let mut joint = joint.clone();
        run::attach_after_fit(typed, &mut joint, &options).map_err(|d| vec![d])?;
        let path = self.loaded()?.path.clone();
        let info = RunInfo {
            model_file: path.display().to_string(),
            data_files: self.data_args.clone(),
        };
        self.interrupt.store(false, Ordering::SeqCst);
        let mut progress = Progress::new(false, self.interrupt.clone());
        let result = run::fit(&joint, &options, &info, &mut progress);
        progress.finish();
        let (posterior, report) = result.map_err(|d| vec![d])?;
        self.last = Some(LastFit { posterior, report });
        Ok(())
    }

    fn cmd_ppc(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        let path = PathBuf::from(if arg.is_empty() { "ppc.svg" } else { arg });
        self.fit_after(&[("predictive", "true")])?;
        let r = &self.last_fit()?.report;
        let Some(rep) = r.replicated.first() else {
            return Ok(fit_line(r));
        };
        let y_rep = r.draws.columns(rep.first_column, rep.observed.len()).into_owned();
        let title = format!("posterior predictive check: {}", rep.name);
        let svg = report::loo::ppc_svg(&rep.observed, &y_rep, rep.discrete(), &title)
            .map_err(|e| vec![plot_error(&e)])?;
        write_svg(&path, &svg)?;
        Ok(format!(
            "{}wrote {} ({} replicated)\n",
            fit_line(r),
            path.display(),
            rep.name
        ))
    }

    fn cmd_loo(&mut self, arg: &str) -> Result<String, Vec<Diagnostic>> {
        let path = PathBuf::from(if arg.is_empty() { "loo_pit.svg" } else { arg });
        self.fit_after(&[("loo", "true"), ("predictive", "true")])?;
        let typed = &self.checked_or_err()?.0;
        let r = &self.last_fit()?.report;
        let m = run::loo::model_loo(typed, r).map_err(|d| vec![d])?;
        let mut out = run::loo::render_loo_text(r, &m);
        if let Some(pit) = run::loo::loo_pit_values(r) {
            let svg = report::loo::loo_pit_svg(&pit, "LOO-PIT").map_err(|e| vec![plot_error(&e)])?;
            write_svg(&path, &svg)?;
            let _ = writeln!(out, "wrote {}", path.display());
        }
        Ok(out)
    }

    fn cmd_diagnose(&mut self) -> Result<String, Vec<Diagnostic>> {
        let joint = &self.checked_or_err()?.1;
        let d = crate::density::LogDensity::dim(joint);
        let mut rng = StdRng::seed_from_u64(0);
        let u = Uniform::new(-2.0, 2.0).expect("a valid range");
        let w = DVector::from_fn(d, |_, _| u.sample(&mut rng));
        let rep = graph::diagnose(joint, &joint.theta0, &w, graph::Tolerances::default());
        Ok(format!("{rep}\n"))
    }

    /// Extend the model text with a definition typed at the prompt; rejected (and the model
    /// unchanged) if the extended model does not check.
    fn define(&mut self, input: &str) -> Result<String, Vec<Diagnostic>> {
        let loaded = self.loaded()?;
        let text = format!("{}\n{}\n", loaded.text.trim_end(), input);
        let checked = self.check_text(&loaded.path, &text)?;
        let dim = crate::density::LogDensity::dim(&checked.1);
        if self.last.as_ref().is_some_and(|f| f.posterior.dim() != dim) {
            self.last = None;
        }
        let loaded = self.loaded.as_mut().expect("checked by `loaded()` above");
        loaded.text = text;
        loaded.checked = Some(checked);
        Ok(format!("model extended (D = {dim})\n"))
    }

    /// Evaluate an expression over the last fit's posterior draws.
    fn eval_expr(&mut self, input: &str) -> Result<String, Vec<Diagnostic>> {
        let loaded = self.loaded()?;
        let fit = self.last_fit()?;
        expr::summarize(
            &loaded.text,
            &loaded.path,
            input,
            &self.data,
            &fit.posterior,
            fit.report.seed,
        )
    }

    /// Re-check the loaded model text against the data.
    fn recheck(&mut self) -> Result<String, Vec<Diagnostic>> {
        let loaded = self.loaded()?;
        let (path, text) = (loaded.path.clone(), loaded.text.clone());
        let loaded_mut = self.loaded.as_mut().expect("checked by `loaded()` above");
        loaded_mut.checked = None;
        let checked = self.check_text(&path, &text)?;
        let line = format!(
            "loaded {}: D = {}, {} hyperparameter(s)\n",
            path.display(),
            checked.0.dim,
            checked.0.hypers.len()
        );
        self.loaded.as_mut().expect("checked above").checked = Some(checked);
        Ok(line)
    }

    fn check_text(&self, path: &Path, text: &str) -> Result<(TypedModel, LogJoint), Vec<Diagnostic>> {
        let typed = check::check_source(text, &path.display().to_string(), &model_dir(path), &self.data)
            .map_err(|ds| {
                ds.into_iter()
                    .map(|d| data_help_for_the_repl(d, &self.data_args))
                    .collect::<Vec<_>>()
            })?;
        let joint = graph::lower_model(&typed).map_err(|d| vec![d])?;
        Ok((typed, joint))
    }

    fn fit_with(&self, options: &InferOptions) -> Result<(Posterior, FitReport), Vec<Diagnostic>> {
        let (path, (_, joint)) = {
            let loaded = self.loaded()?;
            (loaded.path.clone(), self.checked_or_err()?)
        };
        let info = RunInfo {
            model_file: path.display().to_string(),
            data_files: self.data_args.clone(),
        };
        self.interrupt.store(false, Ordering::SeqCst);
        let mut progress = Progress::new(false, self.interrupt.clone());
        let result = run::fit(joint, options, &info, &mut progress);
        progress.finish();
        result.map_err(|d| vec![d])
    }

    fn options(&self) -> Result<InferOptions, Vec<Diagnostic>> {
        let typed = &self.checked_or_err()?.0;
        check::infer_options(typed, &self.overrides_with(self.method.as_deref())).map_err(|d| vec![d])
    }

    /// Check the method and overrides now (when a model is checked), so a bad one is
    /// rejected where it is typed.
    fn validate_options(&self) -> Result<(), Vec<Diagnostic>> {
        if self.checked().is_some() {
            self.options()?;
        }
        Ok(())
    }

    fn overrides_with(&self, method: Option<&str>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(m) = method {
            out.push(("method".to_string(), m.to_string()));
        }
        out.extend(self.overrides.iter().cloned());
        out
    }

    fn loaded(&self) -> Result<&Loaded, Vec<Diagnostic>> {
        self.loaded.as_ref().ok_or_else(|| {
            vec![Diagnostic::plain("mvi::repl::no_model", "no model is loaded")
                .with_help("load one with `:load model.mvi`")]
        })
    }

    fn checked(&self) -> Option<&(TypedModel, LogJoint)> {
        self.loaded.as_ref().and_then(|l| l.checked.as_ref())
    }

    fn checked_or_err(&self) -> Result<&(TypedModel, LogJoint), Vec<Diagnostic>> {
        self.loaded()?;
        self.checked().ok_or_else(|| {
            vec![Diagnostic::plain(
                "mvi::repl::not_checked",
                "the model does not check against the data",
            )
            .with_help("fix the model (`:load`) or the data (`:data file.json`) first")]
        })
    }

    fn last_fit(&self) -> Result<&LastFit, Vec<Diagnostic>> {
        self.last.as_ref().ok_or_else(|| {
            vec![Diagnostic::plain("mvi::repl::no_fit", "there is no fit yet")
                .with_help("fit the model with `:fit`")]
        })
    }

    fn render(&self, diags: &[Diagnostic]) -> String {
        let mut out = String::new();
        for d in diags {
            if self.color {
                let _ = writeln!(out, "{:?}", miette::Report::new(d.clone()));
            } else {
                out.push_str(&d.render_plain(PLAIN_WIDTH));
            }
        }
        out
    }
}

/// Whether diagnostics should use colour: stdout is a terminal and `NO_COLOR` is unset.
pub fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn is_definition(input: &str) -> bool {
    let first: String = input
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let rest = input[first.len()..].trim_start();
    DEFINITION_KEYWORDS.contains(&first.as_str())
        && (first == "let" || first == "fn" || first == "import" || rest.starts_with('{'))
}

/// The overrides that apply to `method` (so `:set samples=…` does not stop `:compare` from
/// fitting `laplace`).
fn overrides_for(overrides: &[(String, String)], method: &str) -> Vec<(String, String)> {
    overrides
        .iter()
        .filter(|(k, _)| {
            check::infer_keys::key_spec_for(k, Some(method)).is_none_or(|spec| spec.methods.includes(method))
        })
        .cloned()
        .collect()
}

fn model_dir(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// An unknown method name typed at the prompt, with the known ones.
fn unknown_method(name: &str) -> Diagnostic {
    let help = crate::check::error::did_you_mean(name, check::infer_keys::METHODS.iter().copied())
        .map_or(String::new(), |h| format!("{h} "));
    Diagnostic::plain(
        "mvi::check::unknown_method",
        format!("unknown inference method `{name}`"),
    )
    .with_help(format!(
        "{help}known methods: {}",
        check::infer_keys::METHODS.join(", ")
    ))
}

/// One line after `:fit`: method, iterations, time and the headline number.
fn fit_line(r: &FitReport) -> String {
    let status = if r.interrupted {
        "interrupted"
    } else if r.converged {
        "converged"
    } else {
        "not converged"
    };
    let mut line = format!(
        "{}: {status} after {} iterations in {:.3} s",
        r.method, r.iterations, r.wall_time_s
    );
    if let Some(e) = &r.elbo_fresh {
        let _ = write!(line, "; ELBO {}", report::summary::num(e.value));
    }
    if let Some(le) = r.log_evidence {
        let _ = write!(line, "; Laplace log evidence {}", report::summary::num(le));
    }
    line.push_str("\n(`:summary` for the table, or type an expression)\n");
    line
}

/// A data diagnostic's help in the REPL's words: the data comes with `:data`, not the CLI's
/// `--data` (a `:load` before `:data` names every missing variable). `:data` replaces the
/// files, so a file to add is shown after the current ones, `files`.
fn data_help_for_the_repl(mut d: Diagnostic, files: &[String]) -> Diagnostic {
    if d.code.starts_with("mvi::data::") {
        let current: String = files.iter().map(|f| format!("{f} ")).collect();
        d.help = d.help.map(|h| {
            h.replace("pass `--data ", &format!("pass `:data {current}"))
                .replace("`--data ", "`:data ")
        });
    }
    d
}

fn help_text() -> String {
    let mut out = String::from("commands:\n");
    for (name, help) in COMMANDS {
        let _ = writeln!(out, "  {name} {help}");
    }
    out.push_str(
        "anything else:\n  let x = ... / fn f(...) { ... }   extend the model (re-checked)\n  \
         an expression, e.g. `mu + tau`      its posterior mean, sd and 90 % interval\n",
    );
    out
}

fn unknown_command(name: &str) -> Diagnostic {
    let known: Vec<&str> = COMMANDS.iter().map(|(c, _)| *c).collect();
    Diagnostic::plain("mvi::repl::unknown_command", format!("unknown command `:{name}`"))
        .with_help(format!("the commands are {}", known.join(", ")))
}

/// For an input that is no expression: when it starts with a command's name followed by
/// more words (`load model.mvi`), the diagnostic that says commands start with `:`.
fn command_without_colon(input: &str) -> Option<Diagnostic> {
    let (word, rest) = input.split_once(char::is_whitespace)?;
    let command = format!(":{word}");
    if rest.trim().is_empty() || !COMMANDS.iter().any(|(c, _)| *c == command) {
        return None;
    }
    Some(
        Diagnostic::plain(
            "mvi::repl::command_without_colon",
            format!("`{word}` is a command here, and commands start with `:`"),
        )
        .with_help(format!("type `:{input}`")),
    )
}

fn usage(text: &str) -> Diagnostic {
    Diagnostic::plain("mvi::repl::usage", "missing argument").with_help(format!("usage: {text}"))
}
