//! Truth recovery on the synthetic examples of issue 17: each of `examples/mixture_k3.mvi`,
//! `varying_slopes.mvi`, `ordinal_regression.mvi`, `negbin_regression.mvi` and
//! `hmm_drive.mvi` is fitted as written (its `infer` block fixes method and seed) on the
//! data its `examples/data/make_<stem>.py` simulated, and the posterior must put the
//! data-generating values (`examples/data/<stem>_truth.json`) within `K_SD` posterior sds
//! of its mean, for every named quantity.
//!
//! The bound is for a correct posterior: the truth is a draw-like point of it, so with a
//! few dozen quantities across the five examples a |z| up to about 3 occurs by chance, and
//! the seeds are fixed, so the test is deterministic. A method that misplaces the mode
//! (label switching in the mixture, the wrong state ordering in the HMM, a collapsed
//! correlation) fails it by many sds. Each example fits in well under a second in the test
//! profile.

use crate::common::root;
use mvi::check;
use mvi::graph;
use mvi::infer::Silent;
use mvi::report::FitReport;
use mvi::run::{self, RunInfo};
use serde_json::Value;

/// How many posterior sds the truth may lie from the posterior mean.
const K_SD: f64 = 3.5;

/// Fit `examples/<stem>.mvi` on `examples/data/<stem>.json` as written.
fn fit_example(stem: &str) -> FitReport {
    let model = root().join(format!("examples/{stem}.mvi"));
    let data = root()
        .join(format!("examples/data/{stem}.json"))
        .display()
        .to_string();
    let render =
        |ds: &[mvi::diagnostic::Diagnostic]| -> String { ds.iter().map(|d| d.render_plain(100)).collect() };
    let typed = check::load_model(&model, &[data]).unwrap_or_else(|ds| panic!("{stem}: {}", render(&ds)));
    let joint = graph::lower_model(&typed).unwrap_or_else(|d| panic!("{stem}: {}", render(&[d])));
    let options = check::infer_options(&typed, &[]).unwrap_or_else(|d| panic!("{stem}: {}", render(&[d])));
    let (_, report) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{stem}: {}", render(&[d])));
    report
}

/// The data-generating values written by the example's data script.
fn truth(stem: &str) -> Value {
    let path = root().join(format!("examples/data/{stem}_truth.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("the truth file is JSON")
}

/// A number of the truth file: `key` or `key[i]` (0-based) or `key[i][j]`.
fn num(v: &Value, key: &str, index: &[usize]) -> f64 {
    index
        .iter()
        .fold(&v[key], |v, &i| &v[i])
        .as_f64()
        .unwrap_or_else(|| panic!("truth {key}{index:?} is not a number"))
}

/// Posterior (mean, sd) of the draws' column `name` (CmdStan's names: `mu.1`, `L.2.1`).
fn moments(report: &FitReport, name: &str) -> (f64, f64) {
    let j = report
        .columns
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", report.columns));
    let col = report.draws.column(j);
    let n = col.len() as f64;
    let mean = col.sum() / n;
    let var = col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Every (column, true value) within `K_SD` posterior sds; all failures listed at once.
fn assert_recovers(stem: &str, report: &FitReport, pairs: &[(String, f64)]) {
    let mut bad = Vec::new();
    for (name, t) in pairs {
        let (m, s) = moments(report, name);
        assert!(s.is_finite() && s > 0.0, "{stem} {name}: posterior sd {s}");
        let z = (m - t) / s;
        eprintln!("{stem} {name}: mean {m:.4} sd {s:.4} truth {t} (z = {z:+.2})");
        if z.abs() > K_SD {
            bad.push(format!("{name}: mean {m:.4} ± {s:.4}, truth {t}, z = {z:+.2}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{stem}: truth not recovered:\n  {}",
        bad.join("\n  ")
    );
}

/// `name.1 … name.n` paired with the truth file's vector `key`.
fn vector(v: &Value, name: &str, key: &str, n: usize) -> Vec<(String, f64)> {
    (0..n)
        .map(|i| (format!("{name}.{}", i + 1), num(v, key, &[i])))
        .collect()
}

#[test]
fn mixture_k3_recovers_means_sds_and_weights() {
    let stem = "mixture_k3";
    let (report, t) = (fit_example(stem), truth(stem));
    let mut pairs = vector(&t, "mu", "mu", 3);
    pairs.extend(vector(&t, "sigma", "sigma", 3));
    pairs.extend(vector(&t, "w", "w", 3));
    assert_recovers(stem, &report, &pairs);
}

#[test]
fn varying_slopes_recovers_the_population_and_the_correlation() {
    let stem = "varying_slopes";
    let (report, t) = (fit_example(stem), truth(stem));
    let mut pairs = vec![
        ("alpha".to_string(), num(&t, "alpha", &[])),
        ("beta".to_string(), num(&t, "beta", &[])),
        ("sigma".to_string(), num(&t, "sigma", &[])),
        // Omega[2, 1] = L[2, 1] L[1, 1] = L[2, 1]
        ("L_Omega.2.1".to_string(), num(&t, "rho", &[])),
    ];
    pairs.extend(vector(&t, "tau", "tau", 2));
    assert_recovers(stem, &report, &pairs);
    // the group effects: every a_j and b_j, too
    let mut groups = vector(&t, "a", "a", 20);
    groups.extend(vector(&t, "b", "b", 20));
    assert_recovers(stem, &report, &groups);
}

#[test]
fn ordinal_regression_recovers_coefficients_and_cutpoints() {
    let stem = "ordinal_regression";
    let (report, t) = (fit_example(stem), truth(stem));
    let mut pairs = vector(&t, "beta", "beta", 2);
    pairs.extend(vector(&t, "c", "c", 4));
    assert_recovers(stem, &report, &pairs);
}

#[test]
fn negbin_regression_recovers_coefficients_and_dispersion() {
    let stem = "negbin_regression";
    let (report, t) = (fit_example(stem), truth(stem));
    let mut pairs = vec![
        ("a".to_string(), num(&t, "a", &[])),
        ("phi".to_string(), num(&t, "phi", &[])),
    ];
    pairs.extend(vector(&t, "b", "b", 2));
    assert_recovers(stem, &report, &pairs);
}

#[test]
fn hmm_drive_recovers_transitions_and_rates() {
    let stem = "hmm_drive";
    let (report, t) = (fit_example(stem), truth(stem));
    let mut pairs = vec![
        ("theta1.1".to_string(), num(&t, "theta", &[0, 0])),
        ("theta2.2".to_string(), num(&t, "theta", &[1, 1])),
    ];
    pairs.extend(vector(&t, "phi", "phi", 2));
    pairs.extend(vector(&t, "lambda", "lambda", 2));
    assert_recovers(stem, &report, &pairs);
}
