//! Data with many rows: evaluation by blocks of rows equals the whole graph's, minibatch
//! fits (`batch`) agree with full-data ones, and `batch` on a model or data it does not fit
//! is a diagnostic naming why.

use crate::common::{load, mvi};
use mvi::density::{LogDensity, Want};
use nalgebra::{DMatrix, DVector};
use serde_json::Value;
use std::process::Output;

const MODEL: &str = "tests/data/scale/logistic.mvi";
const X: &str = "X=tests/data/scale/X.csv";
const Y: &str = "y=tests/data/scale/y.csv";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `mvi run` on the 4000-row logistic regression with `extra` arguments, as JSON.
fn run_json(extra: &[&str]) -> Value {
    let mut args = vec!["run", MODEL, "--data", X, "--data", Y, "--json", "-q"];
    args.extend_from_slice(extra);
    let o = mvi(&args);
    assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn mean_sd(v: &Value, name: &str) -> (f64, f64) {
    let p = &v["parameters"][name];
    (p["mean"].as_f64().unwrap(), p["sd"].as_f64().unwrap())
}

#[test]
fn minibatch_vi_diag_agrees_with_laplace_on_many_rows() {
    // 4000 rows and 3 nearly independent coefficients: the posterior is close to Gaussian
    // and nearly uncorrelated, so mean-field VI and Laplace agree closely
    let laplace = run_json(&["--method", "laplace"]);
    let mb = run_json(&[
        "--method",
        "vi_diag",
        "--set",
        "batch=200",
        "--set",
        "samples=200",
    ]);
    for name in ["w.1", "w.2", "w.3"] {
        let (m0, s0) = mean_sd(&laplace, name);
        let (m1, s1) = mean_sd(&mb, name);
        assert!(
            (m1 - m0).abs() < 0.25 * s0,
            "{name}: mean {m1} vs laplace {m0} (sd {s0})"
        );
        assert!((0.7..1.3).contains(&(s1 / s0)), "{name}: sd {s1} vs laplace {s0}");
    }
    let notes = mb["notes"].to_string();
    assert!(notes.contains("minibatch ELBO: 200 of 4000 rows"), "{notes}");
    // the fresh ELBO reads every row: within a nat of Laplace's own fresh ELBO
    let fresh = |v: &Value| v["elbo_fresh"]["value"].as_f64().unwrap();
    assert!(
        (fresh(&mb) - fresh(&laplace)).abs() < 1.0,
        "{} vs {}",
        fresh(&mb),
        fresh(&laplace)
    );
}

#[test]
fn batch_auto_leaves_small_data_untouched() {
    // 4000 rows are below the 10⁵ from which `auto` subsamples: the same bits as `full`
    let auto = run_json(&["--method", "mvi_mu", "--set", "samples=100"]);
    let full = run_json(&[
        "--method",
        "mvi_mu",
        "--set",
        "samples=100",
        "--set",
        "batch=full",
    ]);
    assert_eq!(auto["parameters"], full["parameters"]);
    assert_eq!(auto["elbo_fresh"], full["elbo_fresh"]);
}

fn assert_diagnostic(o: &Output, message: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(message), "no `{message}` in\n{err}");
    assert!(
        err.lines().any(|l| l.trim_start().starts_with("help:")),
        "no help line:\n{err}"
    );
}

#[test]
fn batch_over_the_rows_or_zero_exits_2() {
    let more = mvi(&[
        "run",
        MODEL,
        "--data",
        X,
        "--data",
        Y,
        "--method",
        "vi_diag",
        "--set",
        "batch=5000",
    ]);
    assert_diagnostic(&more, "`batch = 5000` rows is more than the data's N = 4000 rows");
    let zero = mvi(&[
        "run", MODEL, "--data", X, "--data", Y, "--method", "vi_diag", "--set", "batch=0",
    ]);
    assert_diagnostic(&zero, "batch");
    let word = mvi(&[
        "run",
        MODEL,
        "--data",
        X,
        "--data",
        Y,
        "--method",
        "vi_diag",
        "--set",
        "batch=some",
    ]);
    assert_diagnostic(&word, "`auto`, `full` or a positive number of rows");
}

#[test]
fn batch_on_a_model_that_is_not_a_sum_over_rows_names_the_statement() {
    let o = mvi(&[
        "run",
        "tests/data/scale/per_row_param.mvi",
        "--data",
        X,
        "--data",
        Y,
        "--method",
        "vi_diag",
        "--set",
        "batch=100",
    ]);
    assert_diagnostic(&o, "needs a likelihood that is a sum over data rows");
    let err = stderr(&o);
    assert!(
        err.contains("y ~ bernoulli_logit(X * w + z)"),
        "the statement is shown:\n{err}"
    );
    assert!(err.contains("not indexed by row"), "{err}");
}

/// Logistic regression on `n` rows of 2 columns as Stan-style JSON.
fn many_rows(n: usize) -> String {
    let x: Vec<String> = (0..n)
        .map(|i| format!("[1.0, {}]", ((i * 7919) % 1000) as f64 / 500.0 - 1.0))
        .collect();
    let y: Vec<String> = (0..n).map(|i| ((i * 31 + i / 7) % 2).to_string()).collect();
    format!("{{\"X\": [{}], \"y\": [{}]}}", x.join(","), y.join(","))
}

const LOGISTIC: &str = "data {\n  X: matrix[N, 2]\n  y: ints[N]\n}\nparam {\n  w: vector[2]\n}\nmodel {\n  w ~ normal(0, 1)\n  y ~ bernoulli_logit(X * w)\n}\n";

#[test]
fn blocks_of_rows_give_the_whole_graphs_values_and_derivatives() {
    let (_, joint) = load(LOGISTIC, &many_rows(100_000));
    assert!(joint.blocked().is_some(), "10⁵ rows go by blocks");
    assert_eq!(joint.rows(), Some(100_000));
    let theta = DVector::zeros(0);
    let w = DMatrix::from_column_slice(2, 3, &[0.1, -0.2, 0.3, 0.05, -0.4, 0.2]);
    let blocked = joint.eval(&theta, &w, Want::GRAD_W);
    let whole = mvi::graph::logjoint::eval_graph(&joint.graph, &theta, &w, Want::GRAD_W);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + b.abs());
    for (a, b) in blocked.values.iter().zip(whole.values.iter()) {
        assert!(close(*a, *b), "{a} vs {b}");
    }
    let (ga, gb) = (blocked.grad_w.unwrap(), whole.grad_w.unwrap());
    for (a, b) in ga.iter().zip(gb.iter()) {
        assert!(close(*a, *b), "gradient {a} vs {b}");
    }
    // one point, and the Hessian
    let p = DVector::from_column_slice(&[0.1, -0.2]);
    let (v, g) = mvi::density::value_grad(&joint, &theta, &p);
    let one = mvi::graph::logjoint::eval_graph(
        &joint.graph,
        &theta,
        &DMatrix::from_column_slice(2, 1, p.as_slice()),
        Want::GRAD_W,
    );
    assert!(close(v, one.values[0]));
    for (a, b) in g.iter().zip(one.grad_w.unwrap().iter()) {
        assert!(close(*a, *b));
    }
    let h = joint.hessian(&theta, &p);
    let h_whole = mvi::autodiff::dual::hessian(&joint.graph, theta.as_slice(), p.as_slice());
    for (a, b) in h.iter().zip(h_whole.iter()) {
        assert!(close(*a, *b), "Hessian {a} vs {b}");
    }
    // a minibatch of every row is the whole log density
    let rows: Vec<u32> = (0..100_000).collect();
    let all = joint.eval_rows(&theta, &w, Want::VALUE, &rows);
    for (a, b) in all.values.iter().zip(whole.values.iter()) {
        assert!(close(*a, *b));
    }
}
