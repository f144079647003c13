//! ∇_θ as weighted sums of its columns (`LogDensity::eval_weighted_theta`, what the ELBO,
//! `split_mf` and the Laplace evidence gradient call) against the per-column ∇_θ of
//! `eval(Want::ALL)` multiplied by the weights, on whole models: every example with
//! hyperparameters (RBF features of a learned width and learned centres, a softmax, a
//! Cauchy likelihood), and a latent GP classifier whose θ-only part holds a Cholesky factor
//! of the kernel matrix (which the per-column path sweeps column by column). S = 600 columns
//! run as several chunks, three weight columns (a mean, signed uneven weights, and a mean
//! over one block of columns, as a `split_mf` bin's).

use crate::common;

use crate::common::root;
use mvi::check::check_source;
use mvi::data::{add_json_text, DataSet};
use mvi::density::{LogDensity, Want};
use mvi::graph::{lower_model, LogJoint};
use nalgebra::{DMatrix, DVector};

fn noise(i: usize) -> f64 {
    ((i as f64 * 12.9898 + 0.5).sin() * 43_758.545_3).fract()
}

fn check(name: &str, lj: &LogJoint) {
    let (d, p, s) = (lj.dim(), lj.theta_dim(), 600);
    assert!(p > 0, "{name} has hyperparameters");
    let t0 = lj.theta_init();
    let theta = DVector::from_fn(p, |i, _| t0[i] + 0.1 * noise(i + 3));
    let w = DMatrix::from_fn(d, s, |i, c| 0.3 * noise(i + 7 * c + 11));
    // a mean, signed uneven weights, and a mean over one block of columns (a split_mf bin)
    let weights = DMatrix::from_fn(s, 3, |c, k| match k {
        0 => 1.0 / s as f64,
        1 => 0.7 - 1.9 * noise(c + 5),
        _ if (100..250).contains(&c) => 1.0 / 150.0,
        _ => 0.0,
    });
    let all = lj.eval(&theta, &w, Want::ALL);
    let want = all.grad_theta.as_ref().expect("asked for") * &weights;
    let got = lj.eval_weighted_theta(&theta, &w, &weights);
    assert_eq!(got.values, all.values, "{name}: values");
    assert_eq!(got.grad_w, all.grad_w, "{name}: ∇_w");
    let gt = got.grad_theta.expect("the sums");
    assert_eq!(gt.shape(), (p, 3), "{name}");
    for (i, (a, b)) in gt.iter().zip(want.iter()).enumerate() {
        let scale = a.abs().max(b.abs()).max(1.0);
        assert!(
            (a - b).abs() <= 1e-10 * scale,
            "{name}: entry {i} of ∇_θ·C: {a} against {b}"
        );
    }
    assert!(
        want.iter().any(|v| v.abs() > 1e-3),
        "{name}: the check is not vacuous"
    );
}

#[test]
fn weighted_theta_gradients_equal_the_per_column_ones_on_every_example_with_hyperparameters() {
    let mut checked = 0;
    for path in common::mvi_files("examples") {
        let stem = path.file_stem().expect("a name").to_string_lossy().into_owned();
        let data = root().join(format!("examples/data/{stem}.json"));
        if !data.is_file() {
            continue;
        }
        let typed = mvi::check::load_model(&path, &[data.display().to_string()])
            .unwrap_or_else(|_| panic!("{stem} checks"));
        let lj = lower_model(&typed).unwrap_or_else(|_| panic!("{stem} lowers"));
        if lj.theta_dim() == 0 {
            continue;
        }
        check(&stem, &lj);
        checked += 1;
    }
    assert!(
        checked >= 5,
        "the RBF, softmax and Cauchy examples have hyperparameters"
    );
}

#[test]
fn weighted_theta_gradients_go_through_a_cholesky_factor_of_a_learned_kernel() {
    let src = r#"
import "rbf"
data {
  X: matrix[N, Q]
  y: ints[N]
}
hyper {
  ell: real<lower=0> = 1.0
  amp: real<lower=0> = 1.0
}
let K = square(amp) * rbf_kernel(X, X, ell) + diag_matrix(rep_vector(1e-6, N))
let L = cholesky(K)
param {
  z: vector[N]
}
model {
  z ~ normal(0, 1)
  y ~ bernoulli_logit(L * z)
}
"#;
    let n = 12;
    let x: Vec<[f64; 1]> = (0..n).map(|i| [-3.0 + 0.5 * i as f64]).collect();
    let y: Vec<i32> = (0..n).map(|i| i32::from((1.3 * x[i][0]).sin() > 0.0)).collect();
    let json = serde_json::json!({ "X": x, "y": y }).to_string();
    let mut set = DataSet::default();
    add_json_text(&mut set, "gp.json", json).expect("valid JSON");
    let typed = check_source(src, "gp.mvi", root(), &set).unwrap_or_else(|_| panic!("the GP checks"));
    let lj = lower_model(&typed).unwrap_or_else(|_| panic!("the GP lowers"));
    check("latent GP", &lj);
}
