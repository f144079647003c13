//! Stan's affine transform `<offset=…, multiplier=…>`: x = offset + multiplier · u with
//! log-Jacobian Σ log multiplier. Eight schools written with
//! `theta: vector<offset=mu, multiplier=tau>[J]` and `theta ~ normal(mu, tau)` has the log
//! density (and gradient) of examples/eight_schools.mvi at matched points; derivatives agree
//! three ways; laplace is exact on a normal prior scaled by a constant affine transform;
//! reported values are x, not u; a hyper starts at its initial value; reference draws map
//! back to their coordinates.

use crate::common::{load, root};
use mvi::check;
use mvi::density::{LogDensity, Want};
use mvi::graph::{self, LogJoint, Tolerances};
use mvi::infer::Silent;
use mvi::posterior::Approximation;
use mvi::run::{self, RunInfo};
use nalgebra::{DMatrix, DVector};

const EIGHT_SCHOOLS_AFFINE: &str = r"
data {
  J: int<lower=1>
  y: vector[J]
  sigma: vector<lower=0>[J]
}
param {
  mu: real
  tau: real<lower=0>
  theta: vector<offset=mu, multiplier=tau>[J]
}
model {
  theta ~ normal(mu, tau)
  mu ~ normal(0, 5)
  tau ~ half_cauchy(5)
  y ~ normal(theta, sigma)
}
";

fn eight_schools() -> (String, String) {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).expect("the example exists");
    (
        read("examples/eight_schools.mvi"),
        read("examples/data/eight_schools.json"),
    )
}

/// Value and gradient of the log joint at w.
fn value_grad(joint: &LogJoint, w: &[f64]) -> (f64, Vec<f64>) {
    let m = DMatrix::from_column_slice(w.len(), 1, w);
    let e = joint.eval(&joint.theta_init(), &m, Want::GRAD_W);
    let g = e.grad_w.expect("asked for the gradient");
    (e.values[0], g.column(0).iter().copied().collect())
}

/// The constrained value of `name` at w.
fn value_of(joint: &LogJoint, name: &str, w: &[f64]) -> Vec<f64> {
    let m = DMatrix::from_column_slice(w.len(), 1, w);
    let (_, v) = joint
        .constrain(&joint.theta_init(), &m)
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("a declared param or let");
    v.as_slice().to_vec()
}

#[test]
fn eight_schools_with_offset_and_multiplier_has_the_non_centred_log_density() {
    // The example orders its coordinates (theta_trans[1..8], mu, log tau); the affine form
    // (mu, log tau, u[1..8]). With x = mu + tau·u, normal(x | mu, tau) = normal(u | 0, 1) / tau
    // per school, and the Jacobian's 8 log tau cancels the 1/tau: the two densities agree.
    let (example, json) = eight_schools();
    let (_, original) = load(&example, &json);
    let (_, affine) = load(EIGHT_SCHOOLS_AFFINE, &json);
    assert_eq!((original.dim(), affine.dim()), (10, 10));
    for k in 0..5 {
        let w_aff: Vec<f64> = (0..10)
            .map(|i| ((i * 7 + k * 3) % 11) as f64 / 4.0 - 1.3)
            .collect();
        let w_orig: Vec<f64> = w_aff[2..].iter().chain(&w_aff[..2]).copied().collect();
        let (va, ga) = value_grad(&affine, &w_aff);
        let (vo, go) = value_grad(&original, &w_orig);
        assert!((va - vo).abs() < 1e-10 * (1.0 + vo.abs()), "{va} vs {vo}");
        let go: Vec<f64> = go[8..].iter().chain(&go[..8]).copied().collect();
        for (a, o) in ga.iter().zip(&go) {
            assert!((a - o).abs() < 1e-9 * (1.0 + o.abs()), "{ga:?} vs {go:?}");
        }
        // reported values are x = mu + tau·u, the example's `let theta`
        let (x, t) = (
            value_of(&affine, "theta", &w_aff),
            value_of(&original, "theta", &w_orig),
        );
        for (a, b) in x.iter().zip(&t) {
            assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()), "{x:?} vs {t:?}");
        }
    }
}

#[test]
fn affine_declarations_agree_three_ways() {
    // vector and scalar offsets and multipliers, either alone, from data, hypers and params
    let src = r"
data {
  s: vector<lower=0>[3]
}
hyper {
  m0: real = 0.5
}
param {
  a: real<multiplier=2>
  b: real<offset=a>
  tau: vector<lower=0>[3]
  v: vector<offset=b, multiplier=tau>[3]
  z: vector<offset=[1, 2, 3], multiplier=s>[3]
  c: real<offset=m0, multiplier=exp(a)>
}
model {
  a ~ normal(0, 1)
  b ~ normal(1, 2)
  tau ~ lognormal(0, 1)
  v ~ normal(b, tau)
  z ~ normal(0, 3)
  c ~ normal(m0, 1)
}
";
    let (_, joint) = load(src, r#"{"s": [0.5, 1.0, 2.0]}"#);
    let theta = joint.theta_init();
    let d = joint.dim();
    assert_eq!(d, 1 + 1 + 3 + 3 + 3 + 1);
    for shift in [0.0, 0.43, -0.71] {
        let w = DVector::from_fn(d, |i, _| shift * ((i % 4) as f64 - 1.5));
        let r = graph::diagnose(&joint, &theta, &w, Tolerances::default());
        assert!(r.passed(), "diagnose fails at shift {shift}: {r:?}");
    }
}

#[test]
fn the_jacobian_is_the_sum_of_log_multipliers() {
    // target += 0: the log joint is the log-Jacobian alone, 3·log 2 for a scalar multiplier
    // of a 3-vector plus Σ log s for a vector one, whatever u
    let src = "data {\n  s: vector[2]\n}\nparam {\n  x: vector<offset=1, multiplier=2>[3]\n  y: vector<multiplier=s>[2]\n}\nmodel {\n  target += 0\n}\n";
    let (_, joint) = load(src, r#"{"s": [0.5, 3.0]}"#);
    let w = [0.3, -1.2, 2.0, 0.7, -0.4];
    let (v, _) = value_grad(&joint, &w);
    let expected = 3.0 * 2f64.ln() + 0.5f64.ln() + 3f64.ln();
    assert!((v - expected).abs() < 1e-12, "{v} vs {expected}");
    let x = value_of(&joint, "x", &w);
    for (a, b) in x.iter().zip([1.6, -1.4, 5.0]) {
        assert!((a - b).abs() < 1e-15, "{x:?}");
    }
    let y = value_of(&joint, "y", &w);
    assert!((y[0] - 0.35).abs() < 1e-15 && (y[1] + 1.2).abs() < 1e-15, "{y:?}");
}

#[test]
fn laplace_is_exact_on_a_normal_written_with_its_own_offset_and_multiplier() {
    // x ~ normal(3, 2) with x = 3 + 2u: on u the posterior is exactly N(0, 1)
    let src = "param {\n  x: real<offset=3, multiplier=2>\n}\nmodel {\n  x ~ normal(3, 2)\n}\ninfer { method = laplace }\n";
    let (typed, joint) = load(src, "{}");
    let options = check::infer_options(&typed, &[]).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let (post, _) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let Approximation::Gaussian(q) = &post.approx else {
        panic!("laplace gives a Gaussian")
    };
    assert!(q.mean[0].abs() < 1e-8, "mode u = {}", q.mean[0]);
    assert!(
        (q.cov()[(0, 0)] - 1.0).abs() < 1e-6,
        "var u = {}",
        q.cov()[(0, 0)]
    );
    assert!((value_of(&joint, "x", &[q.mean[0]])[0] - 3.0).abs() < 1e-8);
}

#[test]
fn a_non_positive_multiplier_at_the_current_point_is_outside_the_support() {
    let src = "param {\n  m: real\n  x: real<multiplier=m>\n}\nmodel {\n  x ~ normal(0, 1)\n}\n";
    let (_, joint) = load(src, "{}");
    let (v, _) = value_grad(&joint, &[-0.5, 0.2]);
    assert!(!v.is_finite(), "log joint {v} at multiplier −0.5");
    let (v, _) = value_grad(&joint, &[0.5, 0.2]);
    assert!(v.is_finite());
}

#[test]
fn a_hyper_with_offset_and_multiplier_starts_at_its_initial_value() {
    let src = "hyper {\n  s: real<lower=0> = 2.0\n  h: real<offset=1, multiplier=s> = 4.0\n}\nparam {\n  x: real\n}\nmodel {\n  x ~ normal(h, s)\n}\n";
    let (_, joint) = load(src, "{}");
    let theta = joint.theta_init();
    // h = 1 + 2·u = 4 at u = 1.5
    assert!((theta[1] - 1.5).abs() < 1e-12, "{theta:?}");
    let values = joint.constrain_theta(&theta);
    assert!((values[1][0] - 4.0).abs() < 1e-12, "{values:?}");
}

#[test]
fn reference_draws_of_an_affine_param_map_back_to_their_coordinates() {
    let (_, json) = eight_schools();
    let (_, joint) = load(EIGHT_SCHOOLS_AFFINE, &json);
    let (d, n, theta) = (joint.dim(), 5, joint.theta_init());
    let w = DMatrix::from_fn(d, n, |i, s| ((i * 5 + s * 3) % 7) as f64 / 3.0 - 1.0);
    let values = joint.constrain(&theta, &w);
    let (mut columns, mut entries) = (Vec::new(), Vec::new());
    for p in &joint.params {
        let v = &values
            .iter()
            .find(|(name, _)| *name == p.name)
            .expect("a param")
            .1;
        let dims = p.shape.dims();
        for (k, name) in mvi::report::cmdstan_names(&p.name, &dims).into_iter().enumerate() {
            columns.push(name);
            entries.push(v.row(k).iter().copied().collect::<Vec<f64>>());
        }
    }
    let table = mvi::data::draws::DrawsTable {
        file: "ref.csv".to_string(),
        values: DMatrix::from_fn(n, columns.len(), |s, j| entries[j][s]),
        columns,
    };
    let reference = mvi::reference::Reference::from_table(&joint, &table)
        .unwrap_or_else(|e| panic!("{}", e.render_plain(100)));
    for i in 0..d {
        for s in 0..n {
            let (x, y) = (w[(i, s)], reference.draws[(i, s)]);
            assert!(
                (x - y).abs() < 1e-9,
                "coordinate {i} of draw {s}: {x} came back as {y}"
            );
        }
    }
}
