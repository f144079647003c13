//! The table of inference methods by name: what `infer { method = … }` and `--method` accept.
//!
//! Input: [`InferOptions`]. Output: the chosen method, built with its options validated, or a
//! [`Diagnostic`] naming the known methods (with a "did you mean" when one is close).

use crate::diagnostic::Diagnostic;
use crate::infer::settings::{COMMON_KEYS, VI_KEYS};
use crate::infer::{laplace, mvi_eig, mvi_lr, mvi_mu, nuts, pathfinder, pmfvb, split_mf, vi_diag, vi_full};
use crate::infer::{BuildFn, InferOptions, Method, OptionValue};

/// One registered method.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Registry name.
    pub name: &'static str,
    /// Builds the method from the options, validating its keys.
    pub build: BuildFn,
    /// Keys accepted besides the common ones (`method`, `seed`, `max_iters`, `tol`,
    /// `learn_hyper`, `draws`, `test_draws`).
    pub keys: &'static [&'static str],
    /// One line for `--help` and the docs.
    pub description: &'static str,
}

/// Every method, in the order of the docs.
pub const METHODS: &[Entry] = &[
    Entry {
        name: "laplace",
        build: laplace::build,
        keys: &["optimizer", "restarts", "psis_resample"],
        description: "Gaussian at the mode with the inverse negative Hessian as covariance",
    },
    Entry {
        name: "mvi_mu",
        build: mvi_mu::build,
        keys: VI_KEYS,
        description: "MVI: Laplace covariance, mean optimised on the fixed-sample ELBO",
    },
    Entry {
        name: "mvi_eig",
        build: mvi_eig::build,
        keys: VI_KEYS,
        description: "MVI: Laplace eigenvectors, eigenvalues and mean optimised on the ELBO",
    },
    Entry {
        name: "mvi_lr",
        build: mvi_lr::build,
        keys: &[
            "samples",
            "optimizer",
            "laplace_hyper",
            "restarts",
            "psis_resample",
            "batch",
            "rank",
        ],
        description: "MVI: Laplace Cholesky factor plus a rank-k update, optimised on the ELBO",
    },
    Entry {
        name: "vi_diag",
        build: vi_diag::build,
        keys: VI_KEYS,
        description: "mean-field Gaussian VI (diagonal covariance)",
    },
    Entry {
        name: "vi_full",
        build: vi_full::build,
        keys: VI_KEYS,
        description: "full-covariance Gaussian VI (free Cholesky factor)",
    },
    Entry {
        name: "pathfinder",
        build: pathfinder::build,
        keys: pathfinder::KEYS,
        description: "Pathfinder: Gaussians along L-BFGS paths, best ELBO, multi-path PSIS resampling",
    },
    Entry {
        name: "split_mf",
        build: split_mf::build,
        keys: &["bins", "samples", "optimizer", "full_cov", "psis_resample"],
        description: "split mean-field: a mixture of mean-field Gaussians on soft bins, grown by splitting",
    },
    Entry {
        name: "pmfvb",
        build: pmfvb::build,
        keys: pmfvb::KEYS,
        description: "particle mean-field VB: Langevin-moved particle sets per block",
    },
    Entry {
        name: "nuts",
        build: nuts::build,
        keys: nuts::KEYS,
        description: "the No-U-Turn Sampler (nuts-rs): MCMC draws, the reference to check the others against",
    },
];

/// The method named by `method` (default `laplace`), built from the options.
///
/// # Errors
/// A diagnostic for an unknown method (listing the known ones) or for a bad key of the
/// chosen method.
pub fn build(options: &InferOptions) -> Result<Box<dyn Method>, Diagnostic> {
    let chosen = options.entries.iter().rev().find(|e| e.key == "method");
    let Some(entry) = chosen else {
        return laplace::build(options);
    };
    let name = match &entry.value {
        OptionValue::Ident(s) => s.as_str(),
        _ => "",
    };
    match METHODS.iter().find(|m| m.name == name) {
        Some(m) => (m.build)(options),
        None => Err(unknown_method(options, entry, name)),
    }
}

/// The entry of a method by name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    METHODS.iter().find(|m| m.name == name)
}

/// All keys some method accepts.
pub fn all_keys() -> Vec<&'static str> {
    let mut keys: Vec<&str> = COMMON_KEYS.to_vec();
    for m in METHODS {
        keys.extend(m.keys.iter().copied());
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn unknown_method(options: &InferOptions, entry: &crate::infer::InferOption, name: &str) -> Diagnostic {
    let known: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
    let mut d = Diagnostic::error(
        "mvi::infer::unknown_method",
        format!("unknown inference method `{name}`"),
        options.source.clone(),
    );
    if let Some(span) = entry.span {
        d = d.with_label(span, "not a known method");
    }
    let close = crate::check::error::closest(name, known.iter().copied());
    let list = known
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match close {
        Some(k) => d.with_help(format!("did you mean `{k}`? known methods: {list}")),
        None => d.with_help(format!("known methods: {list}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::InferOption;
    use miette::NamedSource;

    fn with_method(name: &str) -> InferOptions {
        InferOptions {
            entries: vec![InferOption {
                key: "method".into(),
                value: OptionValue::Ident(name.into()),
                span: None,
            }],
            source: NamedSource::new("m", String::new()),
        }
    }

    #[test]
    fn every_registered_method_builds_under_its_name() {
        for m in METHODS {
            let built = build(&with_method(m.name)).unwrap();
            assert_eq!(built.name(), m.name);
        }
    }

    #[test]
    fn no_method_means_laplace() {
        let o = InferOptions {
            entries: vec![],
            source: NamedSource::new("m", String::new()),
        };
        assert_eq!(build(&o).unwrap().name(), "laplace");
    }

    #[test]
    fn a_misspelt_method_gets_a_suggestion() {
        let err = build(&with_method("mvi_rl")).err().unwrap();
        let help = err.help.unwrap();
        assert!(help.contains("did you mean `mvi_lr`"), "{help}");
        let err = build(&with_method("hmc")).err().unwrap();
        assert!(!err.help.unwrap().contains("did you mean"));
    }

    #[test]
    fn rank_is_accepted_by_mvi_lr_only() {
        let mut o = with_method("mvi_lr");
        o.entries.push(InferOption {
            key: "rank".into(),
            value: OptionValue::Int(2),
            span: None,
        });
        assert!(build(&o).is_ok());
        o.entries[0].value = OptionValue::Ident("mvi_mu".into());
        assert!(build(&o).is_err());
    }
}
