//! The one table of inference methods and their `infer` keys, with value kinds and defaults
//! (LANGUAGE.md, "infer options"). The checker validates the `infer` block and `--set`
//! overrides with it; the inference registry may reuse it.

use crate::infer::OptionValue;

/// All method names, in registry order.
pub const METHODS: &[&str] = &[
    "laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full", "split_mf", "pmfvb",
];

/// What kind of value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// One of [`METHODS`].
    Method,
    /// An integer ≥ 1.
    PositiveInt,
    /// An integer ≥ 0.
    NonNegativeInt,
    /// A real (or integer) > 0.
    PositiveReal,
    /// `true` or `false`.
    Bool,
    /// One of the listed words.
    Word(&'static [&'static str]),
    /// Lists of parameter names: `[[w], [sigma, tau]]`.
    Blocks,
    /// One of the listed integers.
    IntChoice(&'static [i64]),
}

impl ValueKind {
    /// How the expected value is described in diagnostics.
    pub fn describe(self) -> String {
        match self {
            ValueKind::Method => format!("a method name ({})", METHODS.join(", ")),
            ValueKind::PositiveInt => "a positive integer".into(),
            ValueKind::NonNegativeInt => "a non-negative integer".into(),
            ValueKind::PositiveReal => "a positive number".into(),
            ValueKind::Bool => "`true` or `false`".into(),
            ValueKind::Word(ws) => format!(
                "one of {}",
                ws.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
            ),
            ValueKind::Blocks => "lists of parameter names, e.g. `[[w], [sigma, tau]]`".into(),
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
            (ValueKind::PositiveReal, OptionValue::Int(i)) => *i > 0,
            (ValueKind::PositiveReal, OptionValue::Real(x)) => *x > 0.0 && x.is_finite(),
            (ValueKind::Bool, OptionValue::Ident(w)) => w == "true" || w == "false",
            (ValueKind::Word(ws), OptionValue::Ident(w)) => ws.contains(&w.as_str()),
            (ValueKind::Blocks, OptionValue::Blocks(_)) => true,
            (ValueKind::IntChoice(xs), OptionValue::Int(i)) => xs.contains(i),
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
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "fixed standard-normal draws S for the Monte Carlo objective",
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
        methods: Methods::All,
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "optimiser iteration limit",
    },
    KeySpec {
        key: "tol",
        methods: Methods::All,
        kind: ValueKind::PositiveReal,
        default: Some("1e-8"),
        meaning: "relative change of the objective at which to stop (pmfvb: smallest gain between smoothing windows)",
    },
    KeySpec {
        key: "optimizer",
        methods: Methods::AllBut(&["pmfvb"]),
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
        key: "learn_hyper",
        methods: Methods::All,
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
        kind: ValueKind::PositiveInt,
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
        key: "draws",
        methods: Methods::All,
        kind: ValueKind::PositiveInt,
        default: Some("1000"),
        meaning: "posterior draws written out",
    },
    KeySpec {
        key: "test_draws",
        methods: Methods::All,
        kind: ValueKind::PositiveInt,
        default: Some("10000"),
        meaning: "draws S′ for the test LPD in `predict`",
    },
];

/// The spec of `key`, whatever the method.
pub fn key_spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.key == key)
}

/// The default of `key` for `method` as reports show it (`tol` is 0.01 for pmfvb, whose
/// stopping rule compares smoothed bound estimates, 1e-6 for split_mf, whose fixed-sample
/// bound is not worth polishing below its Monte-Carlo error, and 1e-8 elsewhere).
pub fn default_for(spec: &KeySpec, method: &str) -> Option<&'static str> {
    match (spec.key, method) {
        ("tol", "pmfvb") => Some("0.01"),
        ("tol", "split_mf") => Some("1e-6"),
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
        assert!(!ValueKind::Method.accepts(&OptionValue::Ident("mvi".into())));
    }
}
