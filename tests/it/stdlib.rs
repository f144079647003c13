//! The stdlib functions written in `.mvi` (`stdlib/*.mvi`) compute what they promise.
//!
//! Each function is called from a small model as a top-level `let` that depends on a
//! parameter `u` (added as `+ u`, evaluated at u = 0), so the lowered graph reports its value
//! (`LogJoint::constrain`). The expected values in `stdlib/testdata/*.json` were computed
//! independently by loop-based numpy code (`stdlib/testdata/make_expected.py`).

use std::path::{Path, PathBuf};

use mvi::check::check_source;
use mvi::data::{add_json_text, DataSet};
use mvi::graph::lower_model;
use nalgebra::{DMatrix, DVector};
use serde_json::Value;

/// numpy and the graph compute the same formulas in a different order: agreement to
/// rounding, relative to the entry's size.
const TOL: f64 = 1e-10;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn expected(file: &str) -> Value {
    let text = std::fs::read_to_string(root().join("stdlib/testdata").join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Row-major nested JSON arrays (or a flat vector) as a flat column-major list.
fn flatten(v: &Value) -> Vec<f64> {
    let rows: Vec<Vec<f64>> = match v.as_array().unwrap().first() {
        Some(Value::Array(_)) => v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect(),
        _ => {
            return v
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        }
    };
    let (n, m) = (rows.len(), rows[0].len());
    DMatrix::from_fn(n, m, |i, j| rows[i][j])
        .iter()
        .copied()
        .collect()
}

/// The value of `let F = <call> + u` in a model importing `module`, at u = 0.
fn value_of(module: &str, data_decls: &str, call: &str, data_json: &str) -> Vec<f64> {
    let src = format!(
        "import \"{module}\"\ndata {{\n{data_decls}\n}}\nparam {{\n  u: real\n}}\n\
         let F = {call} + u\nmodel {{\n  u ~ normal(0, 1)\n}}\n"
    );
    let mut data = DataSet::default();
    add_json_text(&mut data, "data.json", data_json.to_string()).unwrap();
    let typed = check_source(&src, "stdlib_test.mvi", Path::new("."), &data)
        .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
    let joint = lower_model(&typed).unwrap();
    let w = DMatrix::zeros(1, 1);
    let blocks = joint.constrain(&DVector::zeros(0), &w);
    let (_, f) = blocks.iter().find(|(n, _)| n == "F").expect("F is reported");
    f.iter().copied().collect()
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= TOL * w.abs().max(1.0),
            "{what}[{i}]: got {g}, expected {w}"
        );
    }
}

fn json_data(e: &Value, keys: &[&str]) -> String {
    let parts: Vec<String> = keys.iter().map(|k| format!("\"{k}\": {}", e[*k])).collect();
    format!("{{{}}}", parts.join(", "))
}

#[test]
fn rbf_features_match_the_loop_definition() {
    let e = expected("rbf.json");
    let data = json_data(&e, &["X", "C", "r"]);
    let decls = "  X: matrix[N, Q]\n  C: matrix[M, Q]\n  r: real<lower=0>";
    for f in ["sq_dist(X, C)", "rbf_kernel(X, C, r)", "rbf_features(X, C, r)"] {
        let name = f.split('(').next().unwrap();
        assert_close(&value_of("rbf", decls, f, &data), &flatten(&e[name]), name);
    }
}

#[test]
fn rbf_features_put_the_bias_column_last() {
    let e = expected("rbf.json");
    let v = value_of(
        "rbf",
        "  X: matrix[N, Q]\n  C: matrix[M, Q]\n  r: real<lower=0>",
        "rbf_features(X, C, r)",
        &json_data(&e, &["X", "C", "r"]),
    );
    let n = e["X"].as_array().unwrap().len();
    assert!(v[v.len() - n..].iter().all(|x| (x - 1.0).abs() < 1e-15));
}

#[test]
fn standardize_matches_the_loop_definition() {
    let e = expected("standardize.json");
    let data = json_data(&e, &["X", "X_test"]);
    let decls = "  X: matrix[N, Q]\n  X_test: matrix[T, Q]";
    assert_close(
        &value_of("standardize", decls, "standardize(X)", &data),
        &flatten(&e["standardize"]),
        "standardize",
    );
    assert_close(
        &value_of("standardize", decls, "standardize_like(X_test, X)", &data),
        &flatten(&e["standardize_like"]),
        "standardize_like",
    );
}

#[test]
fn design_helpers_match_the_loop_definition() {
    let e = expected("design.json");
    let data = json_data(&e, &["X"]);
    let decls = "  X: matrix[N, Q]";
    assert_close(
        &value_of("design", decls, "add_bias(X)", &data),
        &flatten(&e["add_bias"]),
        "add_bias",
    );
    assert_close(
        &value_of("design", decls, "row_sums(X)", &data),
        &flatten(&e["row_sums"]),
        "row_sums",
    );
    assert_close(
        &value_of("design", decls, "col_means(X)", &data),
        &flatten(&e["col_means"]),
        "col_means",
    );
    assert_close(
        &value_of("design", decls, "ones(3)", &data),
        &flatten(&e["ones_3"]),
        "ones",
    );
}
