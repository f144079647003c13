//! The compiled single-point value + gradient (`graph::point`, what L-BFGS, Pathfinder and
//! NUTS call through `LogDensity::value_grad_into`) against the batched reverse-mode path at
//! one column, on every example model and every posteriordb model of the repository, plus
//! the loop-written models of `benches/loops/` and every constrained type: the values and
//! gradients must be equal to the bit (the point path computes the same operations in the
//! same order), so no optimiser's iterates move. The points are also evaluated together as
//! the columns of one batch, and each column must equal its point alone (the batched kernels
//! that run across columns, such as a one-observation likelihood's, change no bit).

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::root;
use mvi::check::{self, check_source};
use mvi::data::{add_json_text, DataSet};
use mvi::density::{LogDensity, Want};
use mvi::graph::{self, LogJoint};
use nalgebra::{DMatrix, DVector};

fn load(model: &Path, data: &[PathBuf]) -> LogJoint {
    let args: Vec<String> = data.iter().map(|d| d.display().to_string()).collect();
    let typed = check::load_model(model, &args).unwrap_or_else(|ds| {
        panic!(
            "{} does not check: {}",
            model.display(),
            ds.iter().map(|d| d.render_plain(100)).collect::<String>()
        )
    });
    graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}: {}", model.display(), d.render_plain(100)))
}

fn load_source(src: &str, json: &str) -> LogJoint {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", json.to_string()).expect("valid JSON");
    let typed = check_source(src, "model.mvi", root(), &set)
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

/// A deterministic pseudo-random number in (−1, 1).
fn noise(i: usize) -> f64 {
    ((i as f64 * 12.9898 + 0.5).sin() * 43_758.545_3).fract()
}

/// Compares the two paths at the initial point and at three points around it (the last far
/// out, where some models leave their support); returns how many points had a finite value.
fn compare(name: &str, lj: &LogJoint) -> usize {
    let d = lj.dim();
    let theta = lj.theta_init();
    let centre = lj.initial_point();
    let mut finite = 0;
    let points: Vec<DVector<f64>> = [0.0, 0.3, 1.0, 4.0]
        .into_iter()
        .enumerate()
        .map(|(k, scale)| DVector::from_fn(d, |i, _| centre[i] + scale * noise(i + 1000 * k)))
        .collect();
    // the four points as the columns of one batch: each column as the point alone
    let together = lj.eval(&theta, &DMatrix::from_columns(&points), Want::GRAD_W);
    let g_together = together.grad_w.expect("asked for");
    for (k, w) in points.iter().enumerate() {
        let batched = lj.eval(
            &theta,
            &DMatrix::from_column_slice(d, 1, w.as_slice()),
            Want::GRAD_W,
        );
        let gb = batched.grad_w.expect("asked for");
        let mut g = vec![f64::NAN; d];
        let v = lj.value_grad_into(&theta, w.as_slice(), &mut g);
        assert!(
            lj.point.get(&lj.graph).is_some(),
            "{name}: the single-point path does not compile this graph"
        );
        assert_eq!(
            v.to_bits(),
            batched.values[0].to_bits(),
            "{name}, point {k}: value {v} against {}",
            batched.values[0]
        );
        for (i, (a, b)) in g.iter().zip(gb.iter()).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{name}, point {k}: ∂/∂w{i} {a} against {b}"
            );
        }
        assert_eq!(
            v.to_bits(),
            together.values[k].to_bits(),
            "{name}, point {k} in a batch of 4: value {v} against {}",
            together.values[k]
        );
        if v.is_finite() {
            for (i, a) in g.iter().enumerate() {
                let b = g_together[(i, k)];
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{name}, point {k} in a batch of 4: ∂/∂w{i} {a} against {b}"
                );
            }
        }
        // the same tape as machine code: the same bits again
        let point = lj.point.get(&lj.graph).expect("compiled above");
        let mut gm = vec![f64::NAN; d];
        let vm = point
            .value_grad_compiled(&lj.graph, theta.as_slice(), w.as_slice(), &mut gm)
            .unwrap_or_else(|| panic!("{name}: the tape does not compile to machine code"));
        assert_eq!(
            vm.to_bits(),
            v.to_bits(),
            "{name}, point {k}: machine code's value {vm} against {v}"
        );
        for (i, (a, b)) in gm.iter().zip(&g).enumerate() {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{name}, point {k}: machine code's ∂/∂w{i} {a} against {b}"
            );
        }
        finite += usize::from(v.is_finite());
    }
    finite
}

#[test]
fn point_path_equals_the_batched_path_on_every_example() {
    let mut seen = 0;
    for model in common::mvi_files("examples") {
        let stem = model
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .to_string();
        let data = root().join("examples/data").join(format!("{stem}.json"));
        let data: Vec<PathBuf> = if data.exists() { vec![data] } else { vec![] };
        let lj = load(&model, &data);
        assert!(compare(&stem, &lj) >= 1, "{stem}: no finite point");
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} examples");
}

#[test]
fn point_path_equals_the_batched_path_on_every_posteriordb_model() {
    let dir = root().join("benches/posteriordb");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("benches/posteriordb")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("model.mvi").exists())
        .collect();
    folders.sort();
    for f in &folders {
        let name = f.file_name().expect("a folder").to_string_lossy().to_string();
        let lj = load(&f.join("model.mvi"), &[f.join("data.json")]);
        assert!(compare(&name, &lj) >= 1, "{name}: no finite point");
    }
    assert!(folders.len() >= 30, "only {} posteriordb models", folders.len());
}

#[test]
fn point_path_equals_the_batched_path_on_the_loop_benchmarks() {
    let y: Vec<String> = (0..60).map(|i| format!("{:.4}", 0.5 + noise(i))).collect();
    let y = y.join(", ");
    let tmp = std::env::temp_dir().join(format!("mvi-point-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("a temp dir");
    let series = tmp.join("series.json");
    std::fs::write(
        &series,
        format!(r#"{{"T": 60, "N": 60, "y": [{y}], "sigma1": 1.0}}"#),
    )
    .expect("written");
    for stem in ["arma11", "garch11", "hmm", "mixture"] {
        let lj = load(
            &root().join(format!("benches/loops/{stem}.mvi")),
            std::slice::from_ref(&series),
        );
        assert!(compare(stem, &lj) >= 1, "{stem}: no finite point");
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn point_path_equals_the_batched_path_on_every_constrained_type() {
    let src = r"
data {
  N: int
  y: vector[N]
}
hyper {
  w0: simplex[3] = [0.2, 0.3, 0.5]
  s0: real<lower=0> = 1.5
}
param {
  theta: simplex[4]
  mu: ordered[3]
  pos: positive_ordered[2]
  dir: unit_vector[3]
  z: sum_to_zero_vector[3]
  L: cholesky_corr[3]
  Lc: cholesky_cov[2]
  R: corr_matrix[3]
  S: cov_matrix[2]
  a: real<lower=0, upper=1>
  b: real<lower=0, upper=1 - a>
  c: vector<lower=mu[1], upper=mu[3] + pos[2]>[2]
  nu: real<lower=1>
}
model {
  target += sum(log(theta))
  mu ~ normal(0, 2)
  pos ~ gamma(2, 1)
  z ~ normal(0, 1)
  target += 2 * log(L[2, 2]) + 2 * log(L[3, 3]) - 0.5 * sum(Lc .* Lc)
  target += -0.5 * sum(R .* R) - 0.5 * sum(S .* S) + sum(w0 .* theta[1:3])
  target += dir[1] + log(a) + log(b) - sum(c .* c)
  nu ~ gamma(2, 0.1)
  y ~ student_t(nu, mu[2], s0 * pos[1])
  y[1:2] ~ multi_normal([0, 0], S)
  target += log_sum_exp(mu) + max(mu) - min(pos) + pow(a, 2.5) + gamma_lcdf(pos[1] | 2, 1)
  target += skew_normal_lcdf(y[3] | mu[1], pos[2], 2 * a - 1) + sum(cumulative_sum(c))
}
";
    let lj = load_source(src, r#"{"N": 4, "y": [0.3, -1.2, 2.0, 0.7]}"#);
    assert!(compare("constrained types", &lj) >= 1);
}

#[test]
fn point_path_equals_the_batched_path_on_scalar_chains_and_elementwise_shapes() {
    // runs of scalar operations (joined into chains: the running value on either side of
    // `-` and `/`, unary links, an intermediate read twice that ends a run), and the
    // elementwise reverse rules with every operand shape (scalar and vector on either
    // side), contiguous gathers and the unary functions with a reverse loop of their own
    let src = r"
data {
  N: int
  y: vector[N]
}
param {
  a: real
  b: real<lower=0>
  v: vector[N]
}
model {
  let u = 2 / (a - 1)
  let q = exp(u / b) - 3
  let z = 1 - b * q
  target += log1p(square(z)) / (1 + b) - sqrt(b) * a
  let s = -(a * a)
  target += s / (2 + b) + s * s
  let r = v[2:N] - v[1:N-1]
  target += -0.5 * sum(square(r / b)) - sum(log(b + exp(v) / b)) + sum(b / (1 + square(v)))
  target += sum(sqrt(1 + square(v)) - v * b) + sum(-(v - a))
  a ~ normal(0, 1)
  y ~ normal(a + b * v, exp(v / 2))
}
";
    let lj = load_source(src, r#"{"N": 5, "y": [0.3, -1.2, 2.0, 0.7, 0.1]}"#);
    assert!(compare("scalar chains", &lj) >= 1);
}

#[test]
fn the_point_path_switches_to_machine_code_after_its_calls_and_gives_the_same_bits() {
    let es = root().join("examples/eight_schools.mvi");
    let lj = load(&es, &[root().join("examples/data/eight_schools.json")]);
    let theta = lj.theta_init();
    let w = lj.initial_point();
    let mut first = vec![0.0; lj.dim()];
    let v0 = lj.value_grad_into(&theta, w.as_slice(), &mut first);
    let mut g = vec![0.0; lj.dim()];
    for _ in 0..graph::point::jit_auto_after() + 5 {
        let v = lj.value_grad_into(&theta, w.as_slice(), &mut g);
        assert_eq!(v.to_bits(), v0.to_bits());
        assert!(g.iter().zip(&first).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    let point = lj.point.get(&lj.graph).expect("compiled");
    match graph::point::jit_policy() {
        graph::point::JitPolicy::Never => assert!(!point.is_compiled()),
        _ => assert!(point.is_compiled(), "still interpreted after its calls"),
    }
}

/// The θ-only values (RBF features of the learned width and centres) are computed once per
/// θ and kept in the thread's buffers: evaluations that alternate between two θs (and a
/// θ that differs from another only in the sign of a zero) must each equal the batched
/// path at that θ, interpreted and as machine code.
#[test]
fn the_point_path_recomputes_the_theta_only_values_when_theta_changes() {
    for (model, data) in [
        ("logistic_rbf_centres", "logistic_rbf_centres"),
        ("softmax_rbf_iris", "softmax_rbf_iris"),
        ("logistic_rbf_banana", "logistic_rbf_banana"),
        ("cauchy_rbf", "cauchy_rbf"),
    ] {
        let lj = load(
            &root().join(format!("examples/{model}.mvi")),
            &[root().join(format!("examples/data/{data}.json"))],
        );
        let d = lj.dim();
        let p = lj.theta_dim();
        assert!(p > 0, "{model} has hyperparameters");
        let t0 = lj.theta_init();
        let t1 = DVector::from_fn(p, |i, _| t0[i] + 0.2 * noise(i + 77));
        let mut t2 = t0.clone();
        t2[0] = if t0[0] == 0.0 { -0.0 } else { t0[0] };
        let w = DVector::from_fn(d, |i, _| 0.3 * noise(i + 5));
        let point = lj.point.get(&lj.graph).expect("the point path compiles");
        for (k, theta) in [&t0, &t1, &t0, &t2, &t1].into_iter().enumerate() {
            let batched = lj.eval(
                theta,
                &DMatrix::from_column_slice(d, 1, w.as_slice()),
                Want::GRAD_W,
            );
            let gb = batched.grad_w.expect("asked for");
            let mut g = vec![f64::NAN; d];
            let v = point.value_grad(&lj.graph, theta.as_slice(), w.as_slice(), &mut g);
            let mut gm = vec![f64::NAN; d];
            let vm = point
                .value_grad_compiled(&lj.graph, theta.as_slice(), w.as_slice(), &mut gm)
                .expect("machine code");
            for (what, v, g) in [("interpreted", v, &g), ("machine code", vm, &gm)] {
                assert_eq!(v.to_bits(), batched.values[0].to_bits(), "{model}, θ {k}, {what}");
                for (i, (a, b)) in g.iter().zip(gb.iter()).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{model}, θ {k}, {what}: ∂/∂w{i}");
                }
            }
        }
    }
}
