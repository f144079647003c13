//! Every registered method on a real example through the real pipeline:
//! `examples/linear_regression.mvi` (conjugate, so the posterior and the evidence are known
//! exactly, `examples/data/linear_regression_exact.json`) is checked, lowered and fitted by
//! `run::fit` with each entry of `infer::registry::METHODS`.
//!
//! Each method's mean must match the exact posterior mean within its Monte Carlo tolerance,
//! and the fresh-draw ELBO of every method with a density must not exceed the exact log
//! evidence by more than 3 standard errors. Invalid or unsupported options give a
//! `Diagnostic` for every method.

use crate::common::root;
use mvi::check::{self, TypedModel};
use mvi::density::{LogDensity, Want};
use mvi::graph::{self, LogJoint};
use mvi::infer::registry::METHODS;
use mvi::infer::settings::COMMON_KEYS;
use mvi::infer::Silent;
use mvi::posterior::Posterior;
use mvi::report::FitReport;
use mvi::run::{self, RunInfo};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::Value;

/// Laplace is exact for this model: only optimiser and rounding error remain.
const EXACT_TOL: f64 = 1e-6;

/// Monte Carlo means are within this many standard errors (sd/√n) of the exact mean.
const MC_SE: f64 = 5.0;

/// A fresh ELBO of an exact q equals log Z up to rounding, so allow this much above it.
const ROUNDING: f64 = 1e-9;

fn load() -> (TypedModel, LogJoint) {
    let data = root().join("examples/data/linear_regression.json");
    let typed = check::load_model(
        &root().join("examples/linear_regression.mvi"),
        &[data.display().to_string()],
    )
    .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    (typed, joint)
}

/// The exact posterior: mean, sd and log evidence.
fn exact() -> (Vec<f64>, Vec<f64>, f64) {
    let path = root().join("examples/data/linear_regression_exact.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the exact posterior file"))
        .expect("valid JSON");
    let nums = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    let log_z = v["log_evidence"].as_f64().expect("a number");
    (nums("post_mean"), nums("post_sd"), log_z)
}

fn option(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

fn fit(typed: &TypedModel, joint: &LogJoint, method: &str) -> (Posterior, FitReport) {
    let mut set = vec![option("method", method)];
    if method == "nuts" {
        // a short run keeps the suite fast; its tolerance comes from its ESS
        set.extend([
            option("chains", "2"),
            option("warmup", "200"),
            option("draws", "300"),
        ]);
    }
    let options =
        check::infer_options(typed, &set).unwrap_or_else(|d| panic!("{method}: {}", d.render_plain(100)));
    run::fit(joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{method}: {}", d.render_plain(100)))
}

/// How many independent draws a method's mean is estimated from, or `None` if exact.
fn monte_carlo_size(method: &str, report: &FitReport) -> Option<f64> {
    let get = |key: &str| {
        report
            .options
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<f64>().ok())
    };
    match method {
        "laplace" => None,
        "pmfvb" => Some(get("particles").expect("pmfvb reports its particle count")),
        "pathfinder" => Some(get("draws").expect("pathfinder reports its draws")),
        "nuts" => {
            let m = report.mcmc.as_ref().expect("nuts reports its chains");
            Some(
                m.convergence
                    .iter()
                    .map(|c| c.ess_bulk)
                    .fold(f64::INFINITY, f64::min),
            )
        }
        _ => Some(get("samples").expect("a Monte Carlo method reports its samples")),
    }
}

#[test]
fn every_method_recovers_the_exact_mean_of_the_conjugate_example() {
    let (typed, joint) = load();
    let (mean, sd, _) = exact();
    for m in METHODS {
        let (post, report) = fit(&typed, &joint, m.name);
        let got = post.mean();
        assert_eq!(got.len(), mean.len(), "{}", m.name);
        for d in 0..mean.len() {
            let tol = monte_carlo_size(m.name, &report).map_or(EXACT_TOL, |n| MC_SE * sd[d] / n.sqrt());
            let err = (got[d] - mean[d]).abs();
            assert!(
                err < tol,
                "{}: mean[{d}] = {} vs exact {}, off by {err:.3e} > {tol:.3e}",
                m.name,
                got[d],
                mean[d]
            );
        }
    }
}

#[test]
fn no_fresh_elbo_exceeds_the_exact_log_evidence() {
    let (typed, joint) = load();
    let (_, _, log_z) = exact();
    let mut checked = 0;
    for m in METHODS {
        let (_, report) = fit(&typed, &joint, m.name);
        if report.log_q.is_none() {
            continue; // particles: no density, no ELBO
        }
        let e = report
            .elbo_fresh
            .unwrap_or_else(|| panic!("{}: q has a density but no fresh ELBO", m.name));
        assert!(
            e.value <= log_z + 3.0 * e.se + ROUNDING,
            "{}: fresh ELBO {} ± {} above log Z {log_z}",
            m.name,
            e.value,
            e.se
        );
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} methods had a density");
}

/// The ELBO of q estimated from `n` fresh draws: mean of log p̃ − log q and its standard error.
fn elbo_from_draws(joint: &LogJoint, post: &Posterior, n: usize, seed: u64) -> (f64, f64) {
    let w = post.draw(n, &mut StdRng::seed_from_u64(seed));
    let lp = joint.eval(&post.theta, &w, Want::VALUE).values;
    let lq = post.log_q(&w).expect("a Gaussian q has a density");
    let d: Vec<f64> = lp.iter().zip(lq.iter()).map(|(p, q)| p - q).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, (var / n as f64).sqrt())
}

/// Full-covariance families can represent the exact Gaussian posterior: their ELBO is
/// within 0.05 nats of log Z (the fixed-sample optimum is off by O(D²/S)).
#[test]
fn full_covariance_methods_reach_the_exact_log_evidence() {
    let (typed, joint) = load();
    let (_, _, log_z) = exact();
    for method in ["vi_full", "mvi_lr"] {
        let (post, _) = fit(&typed, &joint, method);
        let (elbo, se) = elbo_from_draws(&joint, &post, 20_000, 7);
        assert!(se < 0.01, "{method}: se {se} too large for the check");
        assert!(
            (elbo - log_z).abs() < 0.05,
            "{method}: ELBO {elbo} ± {se} vs log Z {log_z}"
        );
    }
}

#[test]
fn laplace_log_evidence_is_exact_on_the_conjugate_example() {
    let (typed, joint) = load();
    let (_, _, log_z) = exact();
    let (_, report) = fit(&typed, &joint, "laplace");
    let got = report.log_evidence.expect("laplace reports the log evidence");
    assert!((got - log_z).abs() < EXACT_TOL, "{got} vs {log_z}");
}

#[test]
fn an_unknown_key_gives_a_diagnostic_for_every_method() {
    let (typed, _) = load();
    for m in METHODS {
        let err = check::infer_options(&typed, &[option("method", m.name), option("smaples", "3")])
            .err()
            .unwrap_or_else(|| panic!("{}: `smaples` accepted", m.name));
        assert!(err.message.contains("smaples"), "{}: {}", m.name, err.message);
        assert!(err.help.is_some(), "{}: no help", m.name);
    }
}

#[test]
fn another_methods_key_gives_a_diagnostic_for_every_method() {
    let (typed, _) = load();
    for m in METHODS {
        let foreign = METHODS
            .iter()
            .flat_map(|other| other.keys.iter())
            .find(|k| !m.keys.contains(k) && !COMMON_KEYS.contains(k))
            .unwrap_or_else(|| panic!("{}: every key applies to it", m.name));
        let err = check::infer_options(&typed, &[option("method", m.name), option(foreign, "1")])
            .err()
            .unwrap_or_else(|| panic!("{}: `{foreign}` accepted", m.name));
        assert!(err.message.contains(foreign), "{}: {}", m.name, err.message);
    }
}

#[test]
fn an_invalid_value_gives_a_diagnostic_for_every_method() {
    let (typed, _) = load();
    for m in METHODS {
        for (k, v) in [("max_iters", "0"), ("seed", "-1"), ("learn_hyper", "maybe")] {
            let err = check::infer_options(&typed, &[option("method", m.name), option(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{}: `{k} = {v}` accepted", m.name));
            assert!(err.message.contains(k), "{}: {}", m.name, err.message);
        }
    }
}

/// A correlated Gaussian (sds 1 and 2, correlation 0.9): `vi_diag`'s mean-field q is too
/// narrow in both marginals (sd √(1 − ρ²) of the truth).
const CORRELATED: &str = "
let m = [1.0, -1.0]
let S = [[1.0, 1.8], [1.8, 4.0]]
param {
  w: vector[2]
}
model {
  w ~ multi_normal(m, S)
}
";

fn fit_source(text: &str, overrides: &[(&str, &str)]) -> Result<FitReport, Box<mvi::diagnostic::Diagnostic>> {
    let typed = check::check_source(text, "correlated.mvi", root(), &mvi::data::DataSet::default())
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| option(k, v)).collect();
    let options = check::infer_options(&typed, &overrides).map_err(Box::new)?;
    run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .map(|(_, r)| r)
        .map_err(Box::new)
}

#[test]
fn psis_resample_widens_a_too_narrow_mean_field_fit_toward_the_truth() {
    let sd_true = [1.0, 2.0];
    let plain = fit_source(CORRELATED, &[("method", "vi_diag"), ("samples", "200")]).unwrap();
    let resampled = fit_source(
        CORRELATED,
        &[
            ("method", "vi_diag"),
            ("samples", "200"),
            ("psis_resample", "true"),
        ],
    )
    .unwrap();
    assert!(plain.resampling.is_none());
    let r = resampled.resampling.expect("the resampling is reported");
    assert!(
        r.resampled && r.pool == 4000 && r.khat.is_some() && r.ess < 4000.0,
        "{r:?}"
    );
    let (p, q) = (plain.column_summaries(), resampled.column_summaries());
    for d in 0..2 {
        let (before, after) = ((p[d].sd - sd_true[d]).abs(), (q[d].sd - sd_true[d]).abs());
        assert!(
            after < 0.7 * before,
            "w.{}: sd {} → {} (truth {})",
            d + 1,
            p[d].sd,
            q[d].sd,
            sd_true[d]
        );
    }
    // The resampled draws are what the report shows, and the summary says so.
    let text = mvi::report::summary::render_summary(&resampled);
    assert!(
        text.contains("Pareto-smoothed importance resampling of 4000 draws"),
        "{text}"
    );
}

#[test]
fn psis_resample_is_rejected_for_pmfvb_and_pathfinder_counts_must_be_positive() {
    for (method, key, value) in [
        ("pmfvb", "psis_resample", "true"),
        ("pathfinder", "num_paths", "0"),
        ("pathfinder", "num_draws", "0"),
        ("pathfinder", "history_size", "0"),
    ] {
        let err = fit_source(CORRELATED, &[("method", method), (key, value)])
            .err()
            .unwrap_or_else(|| panic!("{method}: `{key} = {value}` accepted"));
        assert!(err.message.contains(key), "{method}: {}", err.message);
        assert!(err.help.is_some(), "{method}: no help");
    }
}
