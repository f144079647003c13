//! Memory estimates of the `infer` settings that size a run's buffers, checked before a fit
//! allocates anything.
//!
//! Input: the run's options, the method and the model's [`Footprint`] (D, θ, report
//! columns, parameters), and the memory the machine has ([`available_memory`]:
//! `MemAvailable`, or the room under a container's cgroup limit when that is less). Output:
//! `Ok`, or a diagnostic at the setting whose buffers would not fit, with the estimated
//! size, the memory available and a value that would fit. Rust aborts the process when an
//! allocation fails, so an oversized setting must be refused here, never discovered later.
//!
//! Per setting, what grows with it (in f64 entries; where unsure, the estimate is generous):
//! - `samples` S (the fixed-sample methods): the fixed draws Z, the draws W = m + C Z, the
//!   batched gradient G (D×S each) and the copies the methods keep (Laplace start, both
//!   `vi_diag` initialisations, `mvi_eig`'s R Z), taken as 12 D×S blocks, plus the θ
//!   gradient (P×S) twice and a few values per draw. The batched graph itself is evaluated
//!   in chunks of columns and does not grow.
//! - `bins` K (`split_mf`): the points of every bin and their gradient, D×S each per bin
//!   (`samples` is checked with at most 4 bins, then `bins` at the given S).
//! - `draws`: the output draws are held whole (the summary's quantiles, `draws.csv`, the
//!   plots), as w (D per draw, twice) and the constrained columns twice (the blocks and
//!   the report's matrix); `draws.csv` is written as it is formatted. Chunking the
//!   evaluation would not bound this, so the setting is checked.
//!
//! Measured against the peak resident memory (`/usr/bin/time -f %M`) of the stochastic
//! volatility example (D = 1003): `vi_diag` with S = 4000, estimate 385 MB, peak 371 MB of
//! the whole process; `pmfvb` with P = 2000 (m = 10), 690 MB against 654 MB; 19 000 more
//! `draws`, 0.61 GB against 0.47 GB more (0.50 GB writing `draws.csv`, 438 MB).
//! - `test_draws` (models with `predict`): `predict` already evaluates them in chunks; what
//!   grows is one joint held-out log likelihood per draw (with the vector's doubling, 3 f64).
//! - `particles` P (`pmfvb`): the particles (D×P), and per block step the mixed columns of
//!   every particle with `subset` m particles of the other blocks and their gradient (D×P·m
//!   each, twice with a Metropolis proposal), plus a step factor per particle and block.
//!
//! The fresh-draw ELBO is evaluated in chunks and needs no check.

use crate::diagnostic::Diagnostic;
use crate::options::{InferOptions, OptionValue};

use super::infer_keys::{int_option, out_of_range};

/// Bytes assumed available where `/proc/meminfo` cannot be read (off Linux): 4 GiB.
pub const FALLBACK_AVAILABLE: u64 = 4 << 30;

/// A suggested value uses at most this share of the available memory.
const SUGGEST_SHARE: f64 = 0.5;

/// What a model contributes to the size of a run's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// D, the unconstrained parameter dimension.
    pub dim: usize,
    /// P, the number of unconstrained hyperparameters.
    pub theta_dim: usize,
    /// Columns of the output draws: constrained parameter entries and reported `let`s.
    pub columns: usize,
    /// Declared parameters (`pmfvb`'s default blocks).
    pub params: usize,
    /// Whether the model has a `predict` block (else `test_draws` is unused).
    pub predict: bool,
}

/// The memory a run may use, and where the figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Available {
    /// Bytes.
    pub bytes: u64,
    /// In words, for the diagnostic ("available", "in total", "assumed").
    pub source: &'static str,
}

/// The memory available now: `MemAvailable` (else `MemTotal`) of `/proc/meminfo`, or
/// [`FALLBACK_AVAILABLE`] where that file cannot be read; less where the process's control
/// group (a container) has a lower memory limit, which `/proc/meminfo` does not show.
pub fn available_memory() -> Available {
    let system = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| parse_meminfo(&text))
        .unwrap_or(Available {
            bytes: FALLBACK_AVAILABLE,
            source: "assumed (the system does not report its memory)",
        });
    match cgroup_room() {
        Some(room) if room < system.bytes => Available {
            bytes: room,
            source: "left under this container's memory limit",
        },
        _ => system,
    }
}

/// Room left under the control group's memory limit (cgroup v2, else v1), if it has one.
fn cgroup_room() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    [
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ]
    .into_iter()
    .find_map(|(limit, usage)| limit_room(&read(limit)?, read(usage).as_deref()))
}

/// Limit minus usage from the texts of a cgroup's limit and usage files; `None` for no
/// limit (`max`, or v1's near-2⁶³ "unlimited").
pub fn limit_room(limit: &str, usage: Option<&str>) -> Option<u64> {
    /// Limits from here up mean "unlimited" (v1 writes 2⁶³ rounded down to a page).
    const UNLIMITED: u64 = 1 << 60;
    let limit: u64 = limit.trim().parse().ok().filter(|&l| l < UNLIMITED)?;
    let used: u64 = usage.and_then(|u| u.trim().parse().ok()).unwrap_or(0);
    Some(limit.saturating_sub(used))
}

/// `MemAvailable` (else `MemTotal`) of a `/proc/meminfo` text, in bytes.
pub fn parse_meminfo(text: &str) -> Option<Available> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    };
    match (field("MemAvailable"), field("MemTotal")) {
        (Some(bytes), _) => Some(Available {
            bytes,
            source: "available",
        }),
        (None, Some(bytes)) => Some(Available {
            bytes,
            source: "in total",
        }),
        _ => None,
    }
}

/// One setting's memory: bytes = `base` + `per_unit` × value; the smallest valid value.
struct Cost {
    key: &'static str,
    base: f64,
    per_unit: f64,
    min: i64,
}

/// Refuse settings whose buffers would need more memory than is available.
///
/// # Errors
/// A diagnostic at the first such setting (`samples`, `bins`, `particles`, `draws`,
/// `test_draws`), with the estimate, the memory available and a value that would fit.
pub fn check_memory(
    options: &InferOptions,
    method: &str,
    model: &Footprint,
    available: Available,
) -> Result<(), Diagnostic> {
    for cost in costs(options, method, model) {
        let (value, at) = int_option(options, cost.key);
        let bytes = cost.base + cost.per_unit * value as f64;
        if bytes <= available.bytes as f64 {
            continue;
        }
        let msg = format!(
            "`{} = {value}` needs about {} of memory, more than the {} {}",
            cost.key,
            bytes_text(bytes),
            bytes_text(available.bytes as f64),
            available.source
        );
        return Err(out_of_range(options, at, msg, help(&cost, available)));
    }
    Ok(())
}

/// The help line: a value that fits in [`SUGGEST_SHARE`] of the memory, or that none does.
fn help(cost: &Cost, available: Available) -> String {
    let fits = suggestion((available.bytes as f64 * SUGGEST_SHARE - cost.base) / cost.per_unit);
    if fits >= cost.min {
        format!(
            "the estimate grows with `{}` ({} per unit for this model and method); use \
             `{} = {fits}` or less, which needs about {}",
            cost.key,
            bytes_text(cost.per_unit),
            cost.key,
            bytes_text(cost.base + cost.per_unit * fits as f64)
        )
    } else {
        format!(
            "even the smallest `{}` ({}) needs about {}: this model is too large for this \
             machine with this method; try `--method laplace`",
            cost.key,
            cost.min,
            bytes_text(cost.base + cost.per_unit * cost.min as f64)
        )
    }
}

/// The settings that size buffers for `method`, with their bytes, in the order they are
/// checked. `split_mf` holds D×S per bin: `samples` is checked with at most the default 4
/// bins, then `bins` at the given S, so that the setting named is the one that is too large.
fn costs(options: &InferOptions, method: &str, m: &Footprint) -> Vec<Cost> {
    const F64: f64 = 8.0;
    /// Bins `samples` is checked with.
    const DEFAULT_BINS: f64 = 4.0;
    let (d, p, cols) = (m.dim as f64, m.theta_dim as f64, m.columns as f64);
    let mut out = Vec::new();
    let fixed_sample = matches!(
        method,
        "mvi_mu" | "mvi_eig" | "mvi_lr" | "vi_diag" | "vi_full" | "split_mf"
    );
    if fixed_sample {
        let bins = if method == "split_mf" {
            (int_option(options, "bins").0.max(1) as f64).min(DEFAULT_BINS)
        } else {
            0.0
        };
        out.push(Cost {
            key: "samples",
            base: 0.0,
            per_unit: F64 * ((12.0 + 2.0 * bins) * d + 2.0 * p + 8.0),
            min: 2,
        });
    }
    if method == "split_mf" {
        let s = int_option(options, "samples").0.max(1) as f64;
        out.push(Cost {
            key: "bins",
            base: F64 * s * (12.0 * d + 2.0 * p + 8.0),
            // the points and their gradient (D×S each) and the bin's parameters
            per_unit: F64 * (2.0 * d * s + 4.0 * d + 8.0),
            min: 1,
        });
    }
    if method == "pmfvb" {
        let blocks = blocks_count(options).unwrap_or(m.params).max(1);
        let subset = if blocks == 1 {
            1.0
        } else {
            int_option(options, "subset").0.max(1) as f64
        };
        out.push(Cost {
            key: "particles",
            base: 0.0,
            per_unit: F64 * ((4.0 * subset + 3.0) * d + blocks as f64 + 8.0),
            min: 2,
        });
    }
    out.push(Cost {
        key: "draws",
        base: 0.0,
        per_unit: F64 * (2.0 * d + 2.0 * cols + 8.0),
        min: 1,
    });
    if m.predict {
        out.push(Cost {
            key: "test_draws",
            base: 0.0,
            per_unit: 3.0 * F64,
            min: 1,
        });
    }
    out
}

/// The number of `pmfvb` blocks the options list, if they list them.
fn blocks_count(options: &InferOptions) -> Option<usize> {
    match options
        .entries
        .iter()
        .rev()
        .find(|e| e.key == "blocks")
        .map(|e| &e.value)
    {
        Some(OptionValue::Blocks(b)) => Some(b.len()),
        _ => None,
    }
}

/// `x` rounded down to two significant digits (`123456` → `120000`), as an integer.
fn suggestion(x: f64) -> i64 {
    if x.is_nan() || x < 1.0 {
        return 0;
    }
    let scale = 10f64.powi(x.log10().floor() as i32 - 1).max(1.0);
    ((x / scale).floor() * scale).min(i64::MAX as f64) as i64
}

/// Bytes in binary units: `512 B`, `3.5 KiB`, `1.2 GiB`, `8.0 TiB`.
fn bytes_text(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::InferOption;
    use crate::syntax::span::Span;

    fn options(entries: &[(&str, i64)]) -> InferOptions {
        let src = "infer { samples = 1000000000 }".to_string();
        InferOptions {
            entries: entries
                .iter()
                .map(|(k, v)| InferOption {
                    key: (*k).to_string(),
                    value: OptionValue::Int(*v),
                    span: Some(Span::new(18, 28)),
                })
                .collect(),
            source: miette::NamedSource::new("m.mvi", src),
        }
    }

    const SMALL: Footprint = Footprint {
        dim: 10,
        theta_dim: 1,
        columns: 12,
        params: 2,
        predict: true,
    };

    const GIB: Available = Available {
        bytes: 1 << 30,
        source: "available",
    };

    #[test]
    fn meminfo_prefers_the_available_memory_to_the_total() {
        let text = "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n";
        let a = parse_meminfo(text).unwrap();
        assert_eq!(a.bytes, 8_000_000 * 1024);
        assert_eq!(a.source, "available");
        let a = parse_meminfo("MemTotal: 2048 kB\n").unwrap();
        assert_eq!((a.bytes, a.source), (2048 * 1024, "in total"));
        assert_eq!(parse_meminfo("nothing here"), None);
    }

    #[test]
    fn a_container_limit_leaves_its_room_and_no_limit_is_none() {
        assert_eq!(
            limit_room("1073741824\n", Some("73741824\n")),
            Some(1_000_000_000)
        );
        assert_eq!(limit_room("max\n", Some("5")), None);
        assert_eq!(limit_room("9223372036854771712", None), None);
        assert_eq!(limit_room("100", Some("200")), Some(0));
    }

    #[test]
    fn the_defaults_fit_in_a_gibibyte_for_a_small_model() {
        for method in ["laplace", "mvi_lr", "split_mf", "pmfvb"] {
            assert!(
                check_memory(&options(&[]), method, &SMALL, GIB).is_ok(),
                "{method}"
            );
        }
    }

    #[test]
    fn a_billion_samples_are_refused_at_the_key_with_a_value_that_fits() {
        let o = options(&[("samples", 1_000_000_000)]);
        let e = check_memory(&o, "vi_diag", &SMALL, GIB).unwrap_err();
        assert_eq!(e.code, "mvi::check::infer_value_out_of_range");
        assert!(
            e.message.contains("more than the 1.0 GiB available"),
            "{}",
            e.message
        );
        assert_eq!(e.labels[0].offset(), 18);
        // 8·(12·10 + 2 + 8) = 1040 bytes per sample; half a GiB fits 516 222 of them.
        let help = e.help.unwrap();
        assert!(help.contains("`samples = 510000` or less"), "{help}");
        // laplace uses no samples
        assert!(check_memory(&o, "laplace", &SMALL, GIB).is_ok());
    }

    #[test]
    fn the_suggested_value_passes_the_check() {
        for key in ["samples", "bins", "draws", "test_draws", "particles"] {
            let o = options(&[(key, i64::MAX)]);
            let method = match key {
                "particles" => "pmfvb",
                "bins" => "split_mf",
                _ => "vi_full",
            };
            let e = check_memory(&o, method, &SMALL, GIB).unwrap_err();
            let help = e.help.unwrap();
            let fits: i64 = help
                .split(&format!("`{key} = "))
                .nth(1)
                .and_then(|r| r.split('`').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no value in {help}"));
            assert!(
                check_memory(&options(&[(key, fits)]), method, &SMALL, GIB).is_ok(),
                "{key}"
            );
        }
    }

    #[test]
    fn split_mf_names_the_bins_when_the_bins_are_too_many() {
        let o = options(&[("bins", 1_000_000_000)]);
        let e = check_memory(&o, "split_mf", &SMALL, GIB).unwrap_err();
        assert!(e.message.starts_with("`bins = 1000000000`"), "{}", e.message);
        let o = options(&[("samples", 1_000_000_000)]);
        let e = check_memory(&o, "split_mf", &SMALL, GIB).unwrap_err();
        assert!(e.message.starts_with("`samples = 1000000000`"), "{}", e.message);
    }

    #[test]
    fn test_draws_are_not_checked_without_a_predict_block() {
        let o = options(&[("test_draws", i64::MAX)]);
        assert!(check_memory(&o, "laplace", &SMALL, GIB).is_err());
        let no_predict = Footprint {
            predict: false,
            ..SMALL
        };
        assert!(check_memory(&o, "laplace", &no_predict, GIB).is_ok());
    }

    #[test]
    fn a_model_too_large_for_any_value_says_so() {
        let huge = Footprint {
            dim: 1 << 40,
            ..SMALL
        };
        let e = check_memory(&options(&[]), "vi_diag", &huge, GIB).unwrap_err();
        assert!(e.message.contains("(the default)"), "{}", e.message);
        assert!(e.help.unwrap().contains("too large for this machine"));
    }

    #[test]
    fn suggestions_keep_two_significant_digits() {
        assert_eq!(suggestion(123_456.0), 120_000);
        assert_eq!(suggestion(7.9), 7);
        assert_eq!(suggestion(0.5), 0);
        assert_eq!(suggestion(f64::NAN), 0);
        assert_eq!(bytes_text(1536.0), "1.5 KiB");
        assert_eq!(bytes_text(100.0), "100 B");
    }
}
