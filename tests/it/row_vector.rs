//! `row_vector[K]` as data, param and let, with Stan's algebra: row × vector is a real,
//! vector × row a matrix, row × matrix a row, `'` between rows and columns, elementwise
//! operations and indexing. Values are checked against hand computation, derivatives three
//! ways.

use crate::common::load;
use mvi::density::LogDensity;
use mvi::graph::{self, LogJoint, Tolerances};
use nalgebra::{DMatrix, DVector};

const MODEL: &str = r"
data {
  x: row_vector[K]
  X: matrix[N, K]
}
param {
  r: row_vector[K]
  b: vector[K]
}
let dotp = r * b
let outer = b * r
let rX = r * X'
let back = r'
let both = r + 2 * x .* r
let mixed = r + b'
let col = r' + b
let second = r[2]
let tail = r[2:3]
model {
  r ~ normal(0, 1)
  b ~ normal(x', 1)
  target += -0.5 * dotp ^ 2 + sum(rX) * 0.1 + x * b + sum(outer) * 0.01
}
";

const DATA: &str = r#"{"x": [1, 2, 3], "X": [[1, 0, 1], [0, 1, 1], [1, 1, 0], [2, 1, 0]]}"#;

fn value_of(joint: &LogJoint, name: &str, w: &[f64]) -> DMatrix<f64> {
    let m = DMatrix::from_column_slice(w.len(), 1, w);
    joint
        .constrain(&joint.theta_init(), &m)
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("a declared param or let")
        .1
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12 * (1.0 + w.abs()), "{got:?} vs {want:?}");
    }
}

#[test]
fn row_vector_products_follow_stans_algebra() {
    let (typed, joint) = load(MODEL, DATA);
    let shape = |n: &str| {
        typed
            .lets
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, e)| e.shape.to_string())
            .expect("a top-level let")
    };
    assert_eq!(shape("dotp"), "real");
    assert_eq!(shape("outer"), "matrix[3, 3]");
    assert_eq!(shape("rX"), "row_vector[4]");
    assert_eq!(shape("back"), "vector[3]");
    assert_eq!(shape("both"), "row_vector[3]");
    assert_eq!(shape("tail"), "row_vector[2]");
    assert_eq!(shape("mixed"), "row_vector[3]");
    assert_eq!(shape("col"), "vector[3]");
    let (r, b) = ([0.5, -1.0, 2.0], [1.5, 0.25, -0.5]);
    let w: Vec<f64> = r.iter().chain(&b).copied().collect();
    let x = [1.0, 2.0, 3.0];
    let xm = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [2.0, 1.0, 0.0]];
    let dot: f64 = r.iter().zip(&b).map(|(p, q)| p * q).sum();
    close(value_of(&joint, "dotp", &w).as_slice(), &[dot]);
    // column-major: outer[i, j] = b[i] r[j]
    let outer: Vec<f64> = (0..3).flat_map(|j| (0..3).map(move |i| b[i] * r[j])).collect();
    close(value_of(&joint, "outer", &w).as_slice(), &outer);
    let rx: Vec<f64> = xm
        .iter()
        .map(|row| row.iter().zip(&r).map(|(p, q)| p * q).sum())
        .collect();
    close(value_of(&joint, "rX", &w).as_slice(), &rx);
    close(value_of(&joint, "back", &w).as_slice(), &r);
    let both: Vec<f64> = (0..3).map(|k| r[k] + 2.0 * x[k] * r[k]).collect();
    close(value_of(&joint, "both", &w).as_slice(), &both);
    close(value_of(&joint, "second", &w).as_slice(), &[r[1]]);
    let sum: Vec<f64> = (0..3).map(|k| r[k] + b[k]).collect();
    close(value_of(&joint, "mixed", &w).as_slice(), &sum);
    close(value_of(&joint, "col", &w).as_slice(), &sum);
    close(value_of(&joint, "tail", &w).as_slice(), &r[1..]);
}

#[test]
fn a_model_with_row_vectors_agrees_three_ways() {
    let (_, joint) = load(MODEL, DATA);
    let theta = joint.theta_init();
    assert_eq!(joint.dim(), 6);
    for shift in [0.0, 0.41, -0.77] {
        let w = DVector::from_fn(6, |i, _| shift * ((i % 4) as f64 - 1.5) + 0.1);
        let r = graph::diagnose(&joint, &theta, &w, Tolerances::default());
        assert!(r.passed(), "diagnose fails at shift {shift}: {r:?}");
    }
}

#[test]
fn a_row_vector_is_not_a_vector() {
    for (src, code) in [
        (
            "param {\n  r: row_vector[3]\n  v: vector[3]\n}\nlet s = r + v\nmodel {\n  target += sum(s)\n}\n",
            "mvi::check::shape_mismatch",
        ),
        (
            "param {\n  r: row_vector[3]\n  v: vector[3]\n}\nlet s = r * r\nmodel {\n  target += sum(s)\n}\n",
            "mvi::check::shape_mismatch",
        ),
    ] {
        let mut set = mvi::data::DataSet::default();
        mvi::data::add_json_text(&mut set, "data.json", "{}".to_string()).unwrap();
        let errs = mvi::check::check_source(src, "model.mvi", crate::common::root(), &set)
            .expect_err("a row vector where a vector is needed");
        assert!(
            errs.iter().any(|d| d.code == code),
            "{:?}",
            errs.iter().map(|d| d.code).collect::<Vec<_>>()
        );
    }
}
