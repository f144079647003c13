//! Stan's arrays: `array[N] vector[K]` (an N × K matrix whose row n is element n), as data
//! from nested JSON lists and as a param; `x[n]` is a `vector[K]`, `x[n, k]` and `x[n][k]`
//! an entry; a `~` over the whole array equals the loop over its elements; `array[N] real`,
//! `array[N] int` and `array[N, M] real` are a vector, an ints array and a matrix.

use crate::common::{load, root};
use mvi::density::{LogDensity, Want};
use mvi::graph::{self, Tolerances};
use nalgebra::{DMatrix, DVector};

const DATA: &str = r#"{"N": 3, "K": 2, "xs": [[1, 2], [0.5, 1.5], [2, -1]], "g": [1, 2, 1],
  "w": [0.1, 0.2, 0.3], "T": [[1, 2, 3], [4, 5, 6]]}"#;

fn model(tilde: &str) -> String {
    format!(
        r"
data {{
  N: int
  K: int
  xs: array[N] vector[K]
  g: array[N] int
  w: array[N] real
  T: array[2, 3] real
}}
param {{
  mu: vector[K]
  L: cholesky_corr[K]
  zs: array[N] vector<lower=-5>[K]
}}
let second = xs[2]
let entry = xs[3, 2] * mu[1]
let chained = xs[3][2] * mu[1]
let z2 = zs[2]
model {{
  mu ~ normal(0, 2)
  xs ~ multi_normal_cholesky(mu, L)
  {tilde}
  target += sum(w) + g[2] + T[2, 3]
}}
"
    )
}

const WHOLE: &str = "zs ~ multi_normal_cholesky(mu, L)";
const LOOP: &str = "for n in 1:N {\n    zs[n] ~ multi_normal_cholesky(mu, L)\n  }";

#[test]
fn an_array_of_vectors_binds_from_nested_lists_and_indexes_as_in_stan() {
    let (typed, joint) = load(&model(WHOLE), DATA);
    let shape = |n: &str| {
        let data = typed.data_decls.iter().find(|d| d.name == n).map(|d| d.shape);
        let lets = typed.lets.iter().find(|(m, _)| m == n).map(|(_, e)| e.shape);
        data.or(lets).expect("declared").to_string()
    };
    assert_eq!(shape("xs"), "matrix[3, 2]");
    assert_eq!(shape("g"), "ints[3]");
    assert_eq!(shape("w"), "vector[3]");
    assert_eq!(shape("T"), "matrix[2, 3]");
    assert_eq!(shape("second"), "vector[2]");
    assert_eq!(shape("entry"), "real");
    assert_eq!(shape("chained"), "real");
    // zs[2] is the second element: the param's entries 2 and 5 (column-major rows)
    let d = joint.dim();
    assert_eq!(d, 2 + 1 + 6);
    let w: Vec<f64> = (0..d).map(|i| 0.1 * i as f64 - 0.3).collect();
    let m = DMatrix::from_column_slice(d, 1, &w);
    let values = joint.constrain(&joint.theta_init(), &m);
    let zs = &values.iter().find(|(n, _)| n == "zs").expect("zs").1;
    let z2 = &values.iter().find(|(n, _)| n == "z2").expect("z2").1;
    assert_eq!((zs.nrows(), z2.nrows()), (6, 2));
    assert!(
        (z2[0] - zs[1]).abs() < 1e-15 && (z2[1] - zs[4]).abs() < 1e-15,
        "{zs} {z2}"
    );
    // xs[3, 2] = xs[3][2] = −1, times mu[1] = w[0]
    for n in ["entry", "chained"] {
        let v = values.iter().find(|(m, _)| m == n).expect("reported").1[0];
        assert!((v + w[0]).abs() < 1e-15, "{n} = {v}");
    }
}

#[test]
fn a_tilde_over_a_whole_array_of_vectors_equals_the_loop_over_its_elements() {
    let (_, whole) = load(&model(WHOLE), DATA);
    let (_, looped) = load(&model(LOOP), DATA);
    let d = whole.dim();
    let theta = whole.theta_init();
    for k in 0..4 {
        let w = DMatrix::from_fn(d, 1, |i, _| ((i * 5 + k * 3) % 7) as f64 / 4.0 - 0.8);
        let a = whole.eval(&theta, &w, Want::VALUE).values[0];
        let b = looped.eval(&theta, &w, Want::VALUE).values[0];
        assert!(
            a.is_finite() && (a - b).abs() < 1e-10 * (1.0 + b.abs()),
            "{a} vs {b}"
        );
        let r = graph::diagnose(
            &whole,
            &theta,
            &DVector::from_column_slice(w.as_slice()),
            Tolerances::default(),
        );
        assert!(r.passed(), "diagnose fails: {r:?}");
    }
}

#[test]
fn an_array_of_vectors_with_a_row_of_the_wrong_length_is_a_data_error() {
    let bad = DATA.replace("[0.5, 1.5]", "[0.5]");
    let mut set = mvi::data::DataSet::default();
    mvi::data::add_json_text(&mut set, "data.json", bad).unwrap();
    let errs = mvi::check::check_source(&model(WHOLE), "model.mvi", root(), &set)
        .expect_err("a ragged array of vectors");
    assert!(
        errs.iter().any(|d| d.code.starts_with("mvi::data::")),
        "{:?}",
        errs.iter().map(|d| d.code).collect::<Vec<_>>()
    );
}
