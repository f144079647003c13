//! The one table of inference methods and their `infer` keys, with value kinds and defaults
//! (LANGUAGE.md, "infer options"). The checker validates the `infer` block and `--set`
//! overrides with it; the inference registry may reuse it.

use crate::diagnostic::Diagnostic;
use crate::options::{InferOption, InferOptions, OptionValue};
use crate::syntax::span::Span;

/// All method names, in registry order.
pub const METHODS: &[&str] = &[
    "laplace",
    "mvi_mu",
    "mvi_eig",
    "mvi_lr",
    "vi_diag",
    "vi_full",
    "pathfinder",
    "split_mf",
    "pmfvb",
    "nuts",
    "auto",
];

/// The methods `method = auto` tries, cheapest first, until one passes its gate
/// (docs/methods.md, "`auto`"); an option is valid with `auto` when every one of them takes
/// it.
pub const AUTO_LADDER: &[&str] = &["laplace", "mvi_lr", "pathfinder", "nuts"];

/// What kind of value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// One of [`METHODS`].
    Method,
    /// An integer ≥ 1.
    PositiveInt,
    /// An integer ≥ 0.
    NonNegativeInt,
    /// An integer ≥ the bound (`samples`: one draw makes any fixed-sample ELBO unbounded).
    IntAtLeast(i64),
    /// A real (or integer) > 0.
    PositiveReal,
    /// A real (or integer) ≥ 0.
    NonNegativeReal,
    /// `true` or `false`.
    Bool,
    /// One of the listed words.
    Word(&'static [&'static str]),
    /// Lists of parameter names: `[[w], [sigma, tau]]`.
    Blocks,
    /// One of the listed integers.
    IntChoice(&'static [i64]),
    /// `auto`, `full` or a positive integer (`batch`).
    Batch,
}

impl ValueKind {
    /// How the expected value is described in diagnostics.
    pub fn describe(self) -> String {
        match self {
            ValueKind::Method => format!("a method name ({})", METHODS.join(", ")),
            ValueKind::PositiveInt => "a positive integer".into(),
            ValueKind::NonNegativeInt => "a non-negative integer".into(),
            ValueKind::IntAtLeast(n) => format!("an integer ≥ {n}"),
            ValueKind::PositiveReal => "a positive number".into(),
            ValueKind::NonNegativeReal => "a non-negative number".into(),
            ValueKind::Bool => "`true` or `false`".into(),
            ValueKind::Word(ws) => format!(
                "one of {}",
                ws.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
            ),
            ValueKind::Blocks => "lists of parameter names, e.g. `[[w], [sigma, tau]]`".into(),
            ValueKind::Batch => "`auto`, `full` or a positive number of rows".into(),
            ValueKind::IntChoice(xs) => {
                let xs: Vec<String> = xs.iter().map(i64::to_string).collect();
                format!("one of {}", xs.join(", "))
            }
        }
    }

    /// Whether `v` is a valid value of this kind (parameter names in `Blocks` are checked
    /// against the model separately).
    pub fn accepts(self, v: &OptionValue) -> bool {
        match (self, v) {
            (ValueKind::Method, OptionValue::Ident(w)) => METHODS.contains(&w.as_str()),
            (ValueKind::PositiveInt, OptionValue::Int(i)) => *i >= 1,
            (ValueKind::NonNegativeInt, OptionValue::Int(i)) => *i >= 0,
            (ValueKind::IntAtLeast(n), OptionValue::Int(i)) => i >= &n,
            (ValueKind::PositiveReal, OptionValue::Int(i)) => *i > 0,
            (ValueKind::PositiveReal, OptionValue::Real(x)) => *x > 0.0 && x.is_finite(),
            (ValueKind::NonNegativeReal, OptionValue::Int(i)) => *i >= 0,
            (ValueKind::NonNegativeReal, OptionValue::Real(x)) => *x >= 0.0 && x.is_finite(),
            (ValueKind::Bool, OptionValue::Ident(w)) => w == "true" || w == "false",
            (ValueKind::Word(ws), OptionValue::Ident(w)) => ws.contains(&w.as_str()),
            (ValueKind::Blocks, OptionValue::Blocks(_)) => true,
            (ValueKind::IntChoice(xs), OptionValue::Int(i)) => xs.contains(i),
            (ValueKind::Batch, OptionValue::Int(i)) => *i >= 1,
            (ValueKind::Batch, OptionValue::Ident(w)) => w == "auto" || w == "full",
            _ => false,
        }
    }
}

/// Which methods a key applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Methods {
    /// Every method.
    All,
    /// Every method except these.
    AllBut(&'static [&'static str]),
    /// Only these.
    Only(&'static [&'static str]),
}

impl Methods {
    /// Whether the key applies to `method`.
    pub fn includes(self, method: &str) -> bool {
        if method == "auto" {
            return AUTO_LADDER.iter().all(|m| self.includes(m));
        }
        match self {
            Methods::All => true,
            Methods::AllBut(ms) => !ms.contains(&method),
            Methods::Only(ms) => ms.contains(&method),
        }
    }
}

/// One `infer` key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeySpec {
    /// The key as written.
    pub key: &'static str,
    /// The methods it applies to.
    pub methods: Methods,
    /// Its value kind.
    pub kind: ValueKind,
    /// The default, as it is shown in reports (`None`: depends on the model, e.g. `blocks`).
    pub default: Option<&'static str>,
    /// One line on what it means.
    pub meaning: &'static str,
}

/// The methods whose q has a density, so that their draws can be importance-resampled.
const PSIS_RESAMPLE: &[&str] = &[
    "laplace",
    "mvi_mu",
    "mvi_eig",
    "mvi_lr",
    "vi_diag",
    "vi_full",
    "pathfinder",
    "split_mf",
];

const MC: &[&str] = &["mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full", "split_mf"];

/// Every key, in the order reports list them.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "method",
        methods: Methods::All,
        kind: ValueKind::Method,
        default: Some("laplace"),
        meaning: "the inference method",
    },
    KeySpec {
        key: "samples",
        methods: Methods::Only(MC),
        kind: ValueKind::IntAtLeast(2),
        default: Some("1000"),
        meaning: "fixed standard-normal draws S for the Monte Carlo objective",
    },
    KeySpec {
        key: "batch",
        methods: Methods::Only(&["mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full"]),
        kind: ValueKind::Batch,
        default: Some("auto"),
        meaning: "data rows per step of a minibatch ELBO (`auto`: 1000 rows from 10⁵ rows on, when the likelihood is a sum over rows; `full`: never)",
    },
    KeySpec {
        key: "seed",
        methods: Methods::All,
        kind: ValueKind::NonNegativeInt,
        default: Some("0"),
        meaning: "RNG seed",
    },
    KeySpec {
        key: "max_iters",
        methods: Methods::AllBut(&["nuts"]),
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "optimiser iteration limit",
    },
    KeySpec {
        key: "tol",
        methods: Methods::AllBut(&["nuts"]),
        kind: ValueKind::PositiveReal,
        default: Some("1e-8"),
        meaning: "relative change of the objective at which to stop (pmfvb: smallest gain between smoothing windows)",
    },
    KeySpec {
        key: "optimizer",
        methods: Methods::AllBut(&["pmfvb", "pathfinder", "nuts"]),
        kind: ValueKind::Word(&["lbfgs", "scg"]),
        default: Some("lbfgs"),
        meaning: "lbfgs or scg",
    },
    KeySpec {
        key: "rank",
        methods: Methods::Only(&["mvi_lr"]),
        kind: ValueKind::PositiveInt,
        default: Some("1"),
        meaning: "rank of the update U Vᵀ",
    },
    KeySpec {
        key: "laplace_hyper",
        methods: Methods::Only(&["mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full"]),
        kind: ValueKind::Word(&["search", "given"]),
        default: Some("search"),
        meaning: "θ of the Laplace start: searched on the log evidence, or the `hyper` values as given (then learned on the ELBO)",
    },
    KeySpec {
        key: "restarts",
        methods: Methods::Only(&["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full"]),
        kind: ValueKind::NonNegativeInt,
        default: Some("0"),
        meaning: "further Laplace mode searches from random starts (initial point + U(−2, 2)); the highest mode is kept",
    },
    KeySpec {
        key: "learn_hyper",
        methods: Methods::AllBut(&["nuts"]),
        kind: ValueKind::Bool,
        default: Some("true"),
        meaning: "optimise `hyper` jointly",
    },
    KeySpec {
        key: "bins",
        methods: Methods::Only(&["split_mf"]),
        kind: ValueKind::PositiveInt,
        default: Some("4"),
        meaning: "number of soft bins K",
    },
    KeySpec {
        key: "particles",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::IntAtLeast(2),
        default: Some("200"),
        meaning: "particle count",
    },
    KeySpec {
        key: "step",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::PositiveReal,
        default: Some("0.1"),
        meaning: "Langevin step h, relative to the Laplace marginal variances",
    },
    KeySpec {
        key: "subset",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::PositiveInt,
        default: Some("10"),
        meaning: "other-block particles averaged per step",
    },
    KeySpec {
        key: "blocks",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::Blocks,
        default: None,
        meaning: "mean-field blocks [one block per parameter]",
    },
    KeySpec {
        key: "full_cov",
        methods: Methods::Only(&["split_mf"]),
        kind: ValueKind::Bool,
        default: Some("false"),
        meaning: "a full covariance per bin instead of a diagonal one",
    },
    KeySpec {
        key: "window",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::PositiveInt,
        default: Some("25"),
        meaning: "sweeps per smoothing window of the bound estimate",
    },
    KeySpec {
        key: "patience",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::PositiveInt,
        default: Some("2"),
        meaning: "smoothing windows in a row without progress that end the run",
    },
    KeySpec {
        key: "algorithm",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::IntChoice(&[1, 2]),
        default: Some("1"),
        meaning: "1: Langevin moves with other-block subsets; 2: random sub-blocks with adaptive drift",
    },
    KeySpec {
        key: "metropolis",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::Bool,
        default: Some("true"),
        meaning: "Metropolis-adjusted Langevin steps with a per-block adaptive step",
    },
    KeySpec {
        key: "warmup",
        methods: Methods::Only(&["pmfvb"]),
        kind: ValueKind::Bool,
        default: Some("auto"),
        meaning: "a warm-up run with 50 particles and subset 2 first (auto: on after the fallback start)",
    },
    KeySpec {
        key: "num_paths",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::PositiveInt,
        default: Some("4"),
        meaning: "independent L-BFGS paths, run in parallel; more than 1 pools and resamples their draws",
    },
    KeySpec {
        key: "history_size",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::PositiveInt,
        default: Some("5"),
        meaning: "L-BFGS memory J, the rank of each path's covariance update",
    },
    KeySpec {
        key: "num_draws",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "draws per path pooled for importance resampling",
    },
    KeySpec {
        key: "num_elbo_draws",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::PositiveInt,
        default: Some("25"),
        meaning: "draws per iterate for its ELBO estimate",
    },
    KeySpec {
        key: "tol_rel_grad",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::NonNegativeReal,
        default: Some("0"),
        meaning: "stop L-BFGS when gᵀHg / max(1, |log p̃|) is below it (CmdStan's test, 2.22e-9 there; 0: off)",
    },
    KeySpec {
        key: "lbfgs_init",
        methods: Methods::Only(&["pathfinder"]),
        kind: ValueKind::Word(&["diagonal", "scalar"]),
        default: Some("diagonal"),
        meaning: "L-BFGS's initial inverse Hessian: the paper's diagonal α, or Stan's scalar sᵀy/yᵀy",
    },
    KeySpec {
        key: "psis_resample",
        methods: Methods::Only(PSIS_RESAMPLE),
        kind: ValueKind::Bool,
        default: Some("false"),
        meaning: "Pareto-smoothed importance resampling of the draws toward the posterior (k̂ and ESS reported)",
    },
    KeySpec {
        key: "predictive",
        methods: Methods::All,
        kind: ValueKind::Bool,
        default: None,
        meaning: "draw replicated data `<name>_rep` for every data variable on the left of a `~` (posterior predictive)",
    },
    KeySpec {
        key: "loo",
        methods: Methods::All,
        kind: ValueKind::Bool,
        default: None,
        meaning: "pointwise log-likelihood of every `~` on data at every draw, and PSIS-LOO from it",
    },
    KeySpec {
        key: "chains",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::PositiveInt,
        default: Some("4"),
        meaning: "independent chains, run in parallel",
    },
    KeySpec {
        key: "warmup",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::NonNegativeInt,
        default: Some("1000"),
        meaning: "warm-up (adaptation) iterations per chain, not kept",
    },
    KeySpec {
        key: "max_depth",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::PositiveInt,
        default: Some("10"),
        meaning: "largest tree depth (at most 2^max_depth − 1 leapfrog steps per draw)",
    },
    KeySpec {
        key: "target_accept",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::PositiveReal,
        default: Some("0.8"),
        meaning: "mean acceptance statistic the step size is tuned for (below 1)",
    },
    KeySpec {
        key: "mass_matrix",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::Word(&["diag", "low_rank"]),
        default: Some("diag"),
        meaning: "mass matrix adapted in warm-up: diagonal, or diagonal plus a low-rank correction for correlated posteriors",
    },
    KeySpec {
        key: "init",
        methods: Methods::Only(&["nuts"]),
        kind: ValueKind::Word(&["none", "laplace", "mvi_lr", "pathfinder"]),
        default: Some("none"),
        meaning: "start the chains from draws of this method's fit, with its covariance as the metric, and warm up for 500 iterations by default instead of 1000",
    },
    KeySpec {
        key: "draws",
        methods: Methods::All,
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "posterior draws written out (nuts: per chain)",
    },
    KeySpec {
        key: "test_draws",
        methods: Methods::All,
        kind: ValueKind::PositiveInt,
        default: Some("10000"),
        meaning: "draws S′ for the test LPD in `predict`",
    },
];

/// The spec of `key`, whatever the method (the first, for a key two methods use with
/// different meanings, e.g. `warmup`).
pub fn key_spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.key == key)
}

/// The spec of `key` as `method` reads it: the one that applies to it, else the first.
pub fn key_spec_for(key: &str, method: Option<&str>) -> Option<&'static KeySpec> {
    method
        .and_then(|m| KEYS.iter().find(|k| k.key == key && k.methods.includes(m)))
        .or_else(|| key_spec(key))
}

/// The default of `key` for `method` as reports show it (`tol` is 0.01 for pmfvb, whose
/// stopping rule compares smoothed bound estimates, 1e-6 for split_mf, whose fixed-sample
/// bound is not worth polishing below its Monte-Carlo error, 10⁴ ε for pathfinder, CmdStan's
/// `tol_rel_obj`, and 1e-8 elsewhere; `psis_resample` is on for pathfinder's several paths).
pub fn default_for(spec: &KeySpec, method: &str) -> Option<&'static str> {
    match (spec.key, method) {
        ("tol", "pmfvb") => Some("0.01"),
        ("tol", "split_mf") => Some("1e-6"),
        ("tol", "pathfinder") => Some("2.22e-12"),
        ("psis_resample", "pathfinder") => Some("true"),
        _ => spec.default,
    }
}

/// The keys valid for `method`.
pub fn keys_for(method: &str) -> Vec<&'static str> {
    KEYS.iter()
        .filter(|k| k.methods.includes(method))
        .map(|k| k.key)
        .collect()
}

/// Check the options whose valid range depends on the model against its dimension `dim`
/// (D), before a fit starts: `rank` ≤ D for `mvi_lr` (rank D already leaves the covariance
/// unrestricted); `samples` > D for the families with a full covariance factor (`vi_full`,
/// `mvi_lr`, `split_mf` with `full_cov`), whose fixed-sample ELBO is unbounded with S ≤ D
/// draws (with the mean free, the S − 1 differences of the draws pin the factor down only
/// when they span ℝᴰ; otherwise it grows along a direction no draw sees); `subset` ≤
/// `particles` for `pmfvb`.
///
/// # Errors
/// A diagnostic at the offending value (in the `infer` block, or named as `--set key=value`).
pub fn check_against_model(
    options: &InferOptions,
    method: &str,
    dim: usize,
    minibatch: bool,
) -> Result<(), Diagnostic> {
    let d = i64::try_from(dim).unwrap_or(i64::MAX);
    if method == "mvi_lr" {
        let (rank, at) = int_option(options, "rank");
        if rank > d {
            return Err(out_of_range(
                options,
                at,
                format!("`rank = {rank}` is more than the model's D = {dim} parameters"),
                format!(
                    "rank D already leaves mvi_lr's covariance unrestricted: use `rank` ≤ {dim} \
                     (or `--method vi_full`)"
                ),
            ));
        }
    }
    let full_cov = match method {
        "vi_full" | "mvi_lr" => true,
        "split_mf" => matches!(
            options.entries.iter().rev().find(|e| e.key == "full_cov").map(|e| &e.value),
            Some(OptionValue::Ident(w)) if w == "true"
        ),
        _ => false,
    };
    let (samples, at) = int_option(options, "samples");
    // a minibatch run draws fresh standard normals at every step: S fixed draws bound nothing
    if full_cov && samples <= d && !minibatch {
        return Err(out_of_range(
            options,
            at,
            format!(
                "`samples = {samples}` fixed draws are too few for {method}'s full covariance \
                 with D = {dim} parameters"
            ),
            format!(
                "with S ≤ D fixed draws the fixed-sample ELBO is unbounded (the covariance grows \
                 along a direction no draw sees): use `samples` well above {dim} (e.g. {}), or \
                 a method with a diagonal family (`vi_diag`, `mvi_eig`)",
                (10 * dim).max(1000)
            ),
        ));
    }
    if method == "pmfvb" {
        let (subset, at) = int_option(options, "subset");
        let (particles, _) = int_option(options, "particles");
        if subset > particles {
            return Err(out_of_range(
                options,
                at,
                format!("`subset = {subset}` is more than the {particles} particles"),
                format!(
                    "`subset` is how many of the other blocks' {particles} particles each step \
                     averages over: use `subset` ≤ {particles}, or more `particles`"
                ),
            ));
        }
    }
    Ok(())
}

/// An integer option's value (or its default) and where it was written (`None`: the
/// default or the command line).
/// What a model offers a minibatch objective (`batch`): N data rows, or why its log density
/// is not a sum over rows (the statement's span when known, and the reason).
#[derive(Debug, Clone, PartialEq)]
pub enum RowsOffer {
    /// A sum over this many rows.
    Rows(usize),
    /// Not a sum over rows.
    NotRows {
        /// The statement that stops it.
        site: Option<Span>,
        /// What it does that a sum over rows cannot.
        reason: String,
    },
}

/// `batch = B` against the model: B ≤ N, and a likelihood that is a sum over the rows.
///
/// # Errors
/// A diagnostic at `batch` (or at the statement that is not a sum over rows).
pub fn check_batch(options: &InferOptions, method: &str, offer: &RowsOffer) -> Result<(), Diagnostic> {
    if !matches!(method, "mvi_mu" | "mvi_eig" | "mvi_lr" | "vi_diag" | "vi_full") {
        return Ok(());
    }
    let (b, at) = int_option(options, "batch");
    if at.is_none() {
        return Ok(()); // `auto`, `full` or not given
    }
    match offer {
        RowsOffer::Rows(n) if b as usize > *n => Err(out_of_range(
            options,
            at,
            format!("`batch = {b}` rows is more than the data's N = {n} rows"),
            format!("use `batch` ≤ {n}, or `batch = full` to read every row at every step"),
        )),
        RowsOffer::Rows(_) => Ok(()),
        RowsOffer::NotRows { site, reason } => {
            let code = "mvi::check::batch_not_rows";
            let msg = format!(
                "`batch = {b}` needs a likelihood that is a sum over data rows, and this model's is not"
            );
            let d = match site {
                Some(span) => Diagnostic::error(code, msg, options.source.clone())
                    .with_label(*span, format!("not a sum over rows: {reason}")),
                None => Diagnostic::plain(code, format!("{msg}: {reason}")),
            };
            Err(d.with_help(
                "a minibatch subsamples the rows of a `~` on a data vector (or matrix rows) whose \
                 arguments are rows of data and parameters, as in `y ~ bernoulli_logit(X * w)`; \
                 write such statements vectorised, or remove `batch` to fit on every row",
            ))
        }
    }
}

pub(super) fn int_option(options: &InferOptions, key: &str) -> (i64, Option<Option<Span>>) {
    match options.entries.iter().rev().find(|e| e.key == key) {
        Some(InferOption {
            value: OptionValue::Int(i),
            span,
            ..
        }) => (*i, Some(*span)),
        _ => {
            let default = key_spec(key).and_then(|s| s.default).and_then(|t| t.parse().ok());
            (default.unwrap_or(0), None)
        }
    }
}

/// A value out of its model-dependent range, labelled in the `infer` block when it was
/// written there.
pub(super) fn out_of_range(
    options: &InferOptions,
    at: Option<Option<Span>>,
    msg: String,
    help: String,
) -> Diagnostic {
    let code = "mvi::check::infer_value_out_of_range";
    match at {
        Some(Some(span)) => {
            Diagnostic::error(code, msg, options.source.clone()).with_label(span, "this value")
        }
        Some(None) => Diagnostic::plain(code, format!("{msg} (set on the command line)")),
        None => Diagnostic::plain(code, format!("{msg} (the default)")),
    }
    .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_is_only_for_mvi_lr() {
        assert!(keys_for("mvi_lr").contains(&"rank"));
        assert!(!keys_for("laplace").contains(&"rank"));
        assert!(!keys_for("pmfvb").contains(&"optimizer"));
    }

    #[test]
    fn value_kinds_reject_wrong_values() {
        assert!(ValueKind::PositiveInt.accepts(&OptionValue::Int(3)));
        assert!(!ValueKind::PositiveInt.accepts(&OptionValue::Int(0)));
        assert!(!ValueKind::PositiveInt.accepts(&OptionValue::Real(2.0)));
        assert!(ValueKind::PositiveReal.accepts(&OptionValue::Int(1)));
        assert!(!ValueKind::PositiveReal.accepts(&OptionValue::Real(0.0)));
        assert!(ValueKind::NonNegativeReal.accepts(&OptionValue::Int(0)));
        assert!(ValueKind::NonNegativeReal.accepts(&OptionValue::Real(2.22e-9)));
        assert!(!ValueKind::NonNegativeReal.accepts(&OptionValue::Real(-1e-9)));
        assert!(!ValueKind::NonNegativeReal.accepts(&OptionValue::Real(f64::INFINITY)));
        assert!(!ValueKind::Method.accepts(&OptionValue::Ident("mvi".into())));
        assert!(!ValueKind::IntAtLeast(2).accepts(&OptionValue::Int(1)));
        assert!(ValueKind::IntAtLeast(2).accepts(&OptionValue::Int(2)));
    }

    fn options(entries: &[(&str, OptionValue)]) -> InferOptions {
        InferOptions {
            entries: entries
                .iter()
                .map(|(k, v)| InferOption {
                    key: (*k).to_string(),
                    value: v.clone(),
                    span: None,
                })
                .collect(),
            source: miette::NamedSource::new("m.mvi", String::new()),
        }
    }

    #[test]
    fn rank_may_not_exceed_the_dimension() {
        let o = options(&[("rank", OptionValue::Int(5))]);
        let e = check_against_model(&o, "mvi_lr", 4, false).unwrap_err();
        assert!(
            e.message.contains("D = 4") && e.message.contains("command line"),
            "{}",
            e.message
        );
        assert!(e.help.as_deref().unwrap_or("").contains("≤ 4"));
        assert!(check_against_model(&o, "mvi_lr", 5, false).is_ok());
    }

    #[test]
    fn a_full_covariance_needs_more_draws_than_parameters() {
        let few = options(&[("samples", OptionValue::Int(4))]);
        assert!(check_against_model(&few, "vi_full", 4, false).is_err());
        assert!(check_against_model(&few, "vi_full", 3, false).is_ok());
        assert!(check_against_model(&few, "vi_diag", 4, false).is_ok());
        assert!(check_against_model(&few, "split_mf", 4, false).is_ok());
        let full = options(&[
            ("samples", OptionValue::Int(4)),
            ("full_cov", OptionValue::Ident("true".into())),
        ]);
        assert!(check_against_model(&full, "split_mf", 4, false).is_err());
        // the default S = 1000 is too few for D = 1000
        let e = check_against_model(&options(&[]), "mvi_lr", 1000, false).unwrap_err();
        assert!(e.message.contains("(the default)"), "{}", e.message);
    }

    #[test]
    fn subset_may_not_exceed_particles() {
        let o = options(&[("subset", OptionValue::Int(300))]);
        assert!(check_against_model(&o, "pmfvb", 4, false).is_err());
        let o = options(&[
            ("subset", OptionValue::Int(300)),
            ("particles", OptionValue::Int(300)),
        ]);
        assert!(check_against_model(&o, "pmfvb", 4, false).is_ok());
    }
}
