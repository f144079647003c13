//! Exact values of lowered models: the log joint of the linear regression example against its
//! closed form, a constrained parameter's Jacobian, slicing, gathering and loops against the
//! vectorised form, categorical softmax and `predict` log-likelihoods by hand, and the
//! diagnostic for a data label outside the support.

use crate::common::root;
use mvi::check::{check_source, TypedModel};
use mvi::data::{add_json_text, DataSet, Value};
use mvi::density::{LogDensity, Want};
use mvi::graph::{lower_model, LogJoint};
use nalgebra::{DMatrix, DVector};

fn load_example(stem: &str) -> TypedModel {
    let model = root().join(format!("examples/{stem}.mvi"));
    let data = root().join(format!("examples/data/{stem}.json"));
    let args = if data.is_file() {
        vec![data.display().to_string()]
    } else {
        vec![]
    };
    mvi::check::load_model(&model, &args).unwrap_or_else(|ds| panic!("{}", ds[0].render_plain(100)))
}

/// S = 1000 batched value + gradient of the banana example, timed (release build):
/// `cargo test --release --test it -- --ignored --nocapture lower::banana_batch_timing`
#[test]
#[ignore]
fn banana_batch_timing() {
    let lj = lower_model(&load_example("logistic_rbf_banana")).unwrap();
    let theta = lj.theta_init();
    let w = DMatrix::from_fn(lj.dim(), 1000, |i, j| ((i * 7 + j * 13) % 17) as f64 / 17.0 - 0.5);
    for (label, want) in [
        ("value", Want::VALUE),
        ("value + grad_w", Want::GRAD_W),
        ("value + grad_w + grad_theta", Want::ALL),
    ] {
        let _ = lj.eval(&theta, &w, want);
        let reps = 10;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            std::hint::black_box(lj.eval(&theta, &w, want));
        }
        println!(
            "banana S=1000 {label}: {:.2} ms per call",
            t0.elapsed().as_secs_f64() * 1e3 / reps as f64
        );
    }
}

fn check(src: &str, json: &str) -> TypedModel {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", json.to_string()).unwrap();
    check_source(src, "model.mvi", root(), &set).unwrap_or_else(|ds| panic!("{}", ds[0].render_plain(100)))
}

fn lower(src: &str, json: &str) -> LogJoint {
    lower_model(&check(src, json)).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

fn value_at(lj: &LogJoint, w: &[f64]) -> f64 {
    let m = DMatrix::from_column_slice(w.len(), 1, w);
    lj.eval(&lj.theta_init(), &m, Want::VALUE).values[0]
}

fn log_normal(x: f64, mu: f64, sd: f64) -> f64 {
    -0.5 * ((x - mu) / sd).powi(2) - sd.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

fn assert_close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0), "{a} vs {b}");
}

/// Relative tolerance for the same sums added in a different order.
const TOL: f64 = 1e-12;

#[test]
fn linear_regression_log_joint_equals_its_closed_form() {
    let model = load_example("linear_regression");
    let lj = lower_model(&model).unwrap();
    let Some(Value::Matrix(x)) = model.data.get("X") else {
        panic!("X is a matrix")
    };
    let Some(Value::Vector(y)) = model.data.get("y") else {
        panic!("y is a vector")
    };
    let sigma = model.data.get("sigma").and_then(Value::as_scalar).unwrap();
    let tau = model.data.get("tau").and_then(Value::as_scalar).unwrap();
    for w in [[0.3, -0.2, 0.5], [0.0, 0.0, 0.0], [-1.0, 2.0, 0.25]] {
        let prior: f64 = w.iter().map(|&v| log_normal(v, 0.0, tau)).sum();
        let lik: f64 = (0..x.nrows())
            .map(|n| {
                let mean: f64 = (0..3).map(|d| x[(n, d)] * w[d]).sum();
                log_normal(y[n], mean, sigma)
            })
            .sum();
        assert_close(value_at(&lj, &w), prior + lik, TOL);
    }
    assert_eq!(lj.coordinate_names(), vec!["w.1", "w.2", "w.3"]);
    assert_eq!(lj.param_blocks(), vec![("w".to_string(), 0, 3)]);
}

#[test]
fn stan_constants_are_their_values() {
    // a normal log density written out with pi(), and every other constant as a data-free term
    let lj = lower(
        "param { mu: real }\nmodel {\n  target += -0.5 * log(2 * pi()) - 0.5 * square(mu)\n  \
         target += e() + sqrt2() + log2() + log10() + machine_precision()\n  \
         target += log2(8) + log10(square(mu) + 1)\n}\n",
        "{}",
    );
    let c = std::f64::consts::E + std::f64::consts::SQRT_2 + 2f64.ln() + 10f64.ln() + f64::EPSILON;
    for mu in [-1.5f64, 0.0, 0.4] {
        let logs = 3.0 + (mu * mu + 1.0).log10();
        assert_close(value_at(&lj, &[mu]), log_normal(mu, 0.0, 1.0) + c + logs, TOL);
    }
    // the infinities as truncation bounds: T[0, positive_infinity()] is a half-normal
    let lj = lower(
        "data { y: vector[2] }\nparam { s: real<lower=0> }\nmodel {\n  s ~ exponential(1)\n  \
         y ~ normal(0, s) T[0, positive_infinity()]\n}\n",
        r#"{"y": [0.5, 1.5]}"#,
    );
    let u: f64 = 0.3;
    let s = u.exp();
    let half: f64 = [0.5, 1.5]
        .iter()
        .map(|&y| log_normal(y, 0.0, s) + 2f64.ln())
        .sum();
    assert_close(value_at(&lj, &[u]), -s + u + half, 1e-10);
}

#[test]
fn lower_bounded_parameter_adds_its_log_jacobian() {
    let lj = lower(
        "param { sigma: real<lower=0> }\nmodel { sigma ~ exponential(1) }\n",
        "{}",
    );
    for u in [-1.3, 0.0, 0.7] {
        assert_close(value_at(&lj, &[u]), -u.exp() + u, TOL);
    }
}

#[test]
fn interval_parameter_adds_its_log_jacobian() {
    let lj = lower(
        "param { p: real<lower=-1, upper=3> }\nmodel { p ~ uniform(-1, 3) }\n",
        "{}",
    );
    for u in [-0.4_f64, 1.1] {
        let s = 1.0 / (1.0 + (-u).exp());
        let jac = (4.0 * s * (1.0 - s)).ln();
        assert_close(value_at(&lj, &[u]), -(4.0_f64).ln() + jac, TOL);
    }
}

const GROUPS_DATA: &str = r#"{"N": 5, "J": 3, "y": [0.5, -1.0, 2.0, 0.1, 1.5], "g": [1, 3, 2, 3, 1]}"#;

const GROUPS_HEAD: &str =
    "data { N: int\n J: int\n y: vector[N]\n g: ints[N] }\nparam { theta: vector[J]\n mu: real }\n";

#[test]
fn loops_locals_and_the_vectorised_form_agree() {
    let forms = [
        "model { y ~ normal(theta[g], 1)\n y[2:N] ~ normal(mu, 2) }",
        "model { for n in 1:N { y[n] ~ normal(theta[g[n]], 1) }\n for n in 2:N { target += normal_lpdf(y[n] | mu, 2) } }",
        "model { let m = rep_vector(0.0, N)\n for n in 1:N { m[n] = theta[g[n]] }\n y ~ normal(m, 1)\n let acc = 0.0\n for n in 2:N { acc = acc + normal_lpdf(y[n] | mu, 2) }\n target += acc }",
    ];
    let lowered: Vec<LogJoint> = forms
        .iter()
        .map(|m| lower(&format!("{GROUPS_HEAD}{m}\n"), GROUPS_DATA))
        .collect();
    let y = [0.5, -1.0, 2.0, 0.1, 1.5];
    let g = [1, 3, 2, 3, 1];
    for w in [[0.1, -0.3, 0.8, 0.4], [1.0, 0.0, -2.0, -0.5]] {
        let by_hand: f64 = (0..5).map(|n| log_normal(y[n], w[g[n] - 1], 1.0)).sum::<f64>()
            + (1..5).map(|n| log_normal(y[n], w[3], 2.0)).sum::<f64>();
        for lj in &lowered {
            assert_close(value_at(lj, &w), by_hand, TOL);
        }
    }
}

#[test]
fn sliced_update_of_a_local_matches_the_direct_form() {
    let data = r#"{"N": 4, "y": [0.3, -0.2, 1.1, 0.7]}"#;
    let head = "data { N: int\n y: vector[N] }\nparam { mu: real\n beta: real }\n";
    let updated = lower(
        &format!(
            "{head}model {{ let m = rep_vector(mu, N)\n m[2:N] += beta * y[1:N-1]\n y ~ normal(m, 1) }}\n"
        ),
        data,
    );
    let direct = lower(
        &format!("{head}model {{ y[1] ~ normal(mu, 1)\n y[2:N] ~ normal(mu + beta * y[1:N-1], 1) }}\n"),
        data,
    );
    for w in [[0.2, 0.5], [-1.0, 0.9]] {
        let y = [0.3, -0.2, 1.1, 0.7];
        let by_hand = log_normal(y[0], w[0], 1.0)
            + (1..4)
                .map(|n| log_normal(y[n], w[0] + w[1] * y[n - 1], 1.0))
                .sum::<f64>();
        assert_close(value_at(&updated, &w), by_hand, TOL);
        assert_close(value_at(&direct, &w), by_hand, TOL);
    }
}

#[test]
fn matrix_column_block_assignment_keeps_the_other_columns() {
    let src = "param { a: vector[2] }\nmodel { let A = rep_matrix(1.0, 2, 3)\n A[:, 2:3] = a * [1.0, 2.0]'\n target += sum(A .* [[1.0, 10.0, 100.0], [1000.0, 10000.0, 100000.0]]) }\n";
    let lj = lower(src, "{}");
    let w = [0.5, -2.0];
    // A = [[1, a1, 2 a1], [1, a2, 2 a2]].
    let by_hand = 1.0 + 10.0 * w[0] + 200.0 * w[0] + 1000.0 + 10000.0 * w[1] + 200000.0 * w[1];
    assert_close(value_at(&lj, &w), by_hand, TOL);
}

#[test]
fn categorical_logit_with_a_matrix_of_logits_matches_softmax_by_hand() {
    let lj = lower(
        "data { y: ints[3] }\nparam { B: matrix[3, 2] }\nmodel { y ~ categorical_logit(B) }\n",
        r#"{"y": [2, 1, 2]}"#,
    );
    let w: [f64; 6] = [0.3, -0.1, 1.2, -0.7, 0.4, 2.0]; // column-major B
    let b = |n: usize, k: usize| w[n + 3 * k];
    let y = [2, 1, 2];
    let by_hand: f64 = (0..3)
        .map(|n| b(n, y[n] - 1) - (b(n, 0).exp() + b(n, 1).exp()).ln())
        .sum();
    assert_close(value_at(&lj, &w), by_hand, TOL);
    assert_eq!(
        lj.coordinate_names(),
        vec!["B.1.1", "B.2.1", "B.3.1", "B.1.2", "B.2.2", "B.3.2"]
    );
}

#[test]
fn predict_reduces_the_pointwise_log_likelihood_over_draws() {
    let src = "data { x: vector[2]\n y_test: ints[2] }\nparam { w: real }\nmodel { w ~ normal(0, 1) }\npredict { y_test ~ bernoulli_logit(w * x) }\n";
    let lj = lower(src, r#"{"x": [0.5, -2.0], "y_test": [1, 0]}"#);
    let draws = DMatrix::from_row_slice(1, 3, &[0.2, -1.0, 1.5]);
    let p = lj.predict(&lj.theta_init(), &draws).expect("a predict block");
    let (x, y) = ([0.5, -2.0], [1.0, 0.0]);
    let sig = |t: f64| 1.0 / (1.0 + (-t).exp());
    let loglik = |n: usize, s: usize| {
        let q = sig(draws[(0, s)] * x[n]);
        y[n] * q.ln() + (1.0 - y[n]) * (1.0 - q).ln()
    };
    // per draw: the sum over the test points; per point: log Σ over draws of the likelihood
    for s in 0..3 {
        assert_close(p.joint[s], loglik(0, s) + loglik(1, s), TOL);
    }
    for (n, got) in p.pointwise.values().into_iter().enumerate() {
        let want = (0..3).map(|s| loglik(n, s).exp()).sum::<f64>().ln();
        assert_close(got, want, TOL);
    }
    let (name, probs) = &p.quantities[0];
    assert_eq!(name, "y_test");
    for n in 0..2 {
        let sum = (0..3).map(|s| sig(draws[(0, s)] * x[n])).sum::<f64>();
        assert_close(probs[n], sum, TOL);
    }
}

#[test]
fn label_outside_the_support_is_a_diagnostic_at_the_outcome() {
    let src = "data { y: ints[3] }\nparam { a: real }\nmodel { y ~ bernoulli_logit(a) }\n";
    let model = check(src, r#"{"y": [0, 2, 1]}"#);
    let d = lower_model(&model).expect_err("a label 2 is outside {0, 1}");
    assert_eq!(d.code, "mvi::lower::outcome_out_of_support");
    assert!(d.message.contains('2'), "{}", d.message);
    assert!(d.help.as_deref().is_some_and(|h| h.contains("0 and 1")));
    let label = d.labels.first().expect("a primary label");
    let at = &src[label.offset()..label.offset() + label.len()];
    assert_eq!(at, "y");
    insta::assert_snapshot!(d.render_plain(90));
}

#[test]
fn reported_lets_come_after_the_params() {
    let lj = lower_model(&load_example("eight_schools")).unwrap();
    let w = DMatrix::from_fn(10, 2, |i, j| 0.1 * i as f64 - 0.2 * j as f64);
    let out = lj.constrain(&lj.theta_init(), &w);
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["theta_trans", "mu", "tau", "theta"]);
    for s in 0..2 {
        let tau = w[(9, s)].exp();
        for j in 0..8 {
            assert_close(out[3].1[(j, s)], w[(8, s)] + tau * w[(j, s)], TOL);
        }
    }
    assert_eq!(lj.coordinate_names()[8..], ["mu".to_string(), "tau".to_string()]);
}

#[test]
fn hyper_gradient_per_column_matches_finite_differences() {
    let lj = lower_model(&load_example("logistic_rbf_banana")).unwrap();
    let theta = lj.theta_init() + DVector::from_vec(vec![0.2, -0.3]);
    let w = DMatrix::from_fn(lj.dim(), 3, |i, j| 0.05 * ((i * 3 + j * 5) % 7) as f64 - 0.15);
    let e = lj.eval(&theta, &w, Want::ALL);
    let gt = e.grad_theta.expect("asked for ∇_θ");
    let h = 1e-6;
    for p in 0..2 {
        let mut tp = theta.clone();
        tp[p] += h;
        let mut tm = theta.clone();
        tm[p] -= h;
        let (vp, vm) = (
            lj.eval(&tp, &w, Want::VALUE).values,
            lj.eval(&tm, &w, Want::VALUE).values,
        );
        for s in 0..3 {
            let fd = (vp[s] - vm[s]) / (2.0 * h);
            assert!(
                (gt[(p, s)] - fd).abs() <= 1e-5 * fd.abs().max(1.0),
                "θ{p} column {s}: {} vs {fd}",
                gt[(p, s)]
            );
        }
    }
    let gw_only = lj.eval(&theta, &w, Want::GRAD_W).grad_w.expect("asked for ∇_w");
    let gw_all = e.grad_w.expect("asked for ∇_w");
    assert!((gw_only - gw_all).amax() <= 1e-12);
}

#[test]
fn category_above_the_number_of_logits_is_a_diagnostic() {
    let src = "data { y: ints[2] }\nparam { b: vector[3] }\nmodel { y ~ categorical_logit(b) }\n";
    let d = lower_model(&check(src, r#"{"y": [1, 4]}"#)).expect_err("category 4 of 3");
    assert_eq!(d.code, "mvi::lower::outcome_out_of_support");
    assert!(d.message.contains("1, 2, ..., 3"), "{}", d.message);
}

/// Every built-in function of `check::builtins` in one model: it lowers, and the derivatives
/// agree three ways at a random point.
#[test]
fn every_builtin_lowers_and_differentiates() {
    let src = "param { v: vector[3]\n a: real\n M: matrix[2, 2] }
model {
  let p = inv_logit(v)
  let e = exp(v) + log(exp(v)) + log1p(exp(v)) + expm1(v) + sqrt(exp(v)) + square(v) + abs(v) + sin(v) + cos(v)
  let f = tanh(v) + logit(p) + log_inv_logit(v) + log1m_inv_logit(v) + lgamma(exp(v)) + log1m(p) + inv(exp(v)) + tan(v / 4) + atan(v)
  let r = sum(v) + mean(v) + sd(v) + variance(v) + log_sum_exp(v) + min(v) + max(v) + log_sum_exp(a, 1.0) + min(a, 2.0) + max(a, -2.0)
  let s = dot(v, v) + rows(v) + cols(M) + size(v) + sum(softmax(v)) + sum(log_softmax(v)) + sum(rep_vector(a, 2)) + sum(rep_matrix(a, 2, 2))
  let t = sum(rep_matrix(v, 2)) + sum(col(M, 2)) + sum(row(M, 1)) + sum(diag_matrix(exp(v))) + sum(cholesky(diag_matrix(exp(v)) + rep_matrix(0.1, 3, 3)))
  let u = sum(to_vector(M)) + sum(append_col(M, v[1:2])) + sum(append_row(v, a)) + sum(append_row(M, M)) + sum(pow(exp(v), 1.5)) + fmin(a, 0.5) + fmax(a, 0.5)
  target += sum(e) + sum(f) + r + s + t + u
  target += normal_lcdf(a | 0, 1) + normal_lccdf(a | 0, 2) + exponential_lcdf(exp(a) | 1) + logistic_lpdf(v | 0, 1)
}
";
    let lj = lower(src, "{}");
    let w = DVector::from_fn(lj.dim(), |i, _| 0.1 * i as f64 - 0.3);
    let report = mvi::graph::diagnose(&lj, &lj.theta_init(), &w, mvi::graph::Tolerances::default());
    assert!(report.passed(), "{report}");
}

#[test]
fn concatenation_and_reshaping_builtins_have_the_right_values() {
    let src = "param { v: vector[2]\n a: real }
model {
  target += dot(append_row(v, a), [1.0, 10.0, 100.0])
  target += dot(append_row(a, v), [1000.0, 10000.0, 100000.0])
  target += sum(append_col([[1.0], [2.0]], v) .* [[0.0, 1e6], [0.0, 1e7]])
  target += dot(to_vector([[v[1], 0.0], [0.0, a]]), [1e8, 0.0, 0.0, 1e9])
  target += sum(rep_matrix(v, 3) .* rep_matrix(1.0, 2, 3)) * 1e10
}
";
    let lj = lower(src, "{}");
    let (v1, v2, a) = (0.25, -0.5, 2.0);
    let by_hand = v1
        + 10.0 * v2
        + 100.0 * a
        + 1000.0 * a
        + 1e4 * v1
        + 1e5 * v2
        + 1e6 * v1
        + 1e7 * v2
        + 1e8 * v1
        + 1e9 * a
        + 3e10 * (v1 + v2);
    assert_close(value_at(&lj, &[v1, v2, a]), by_hand, TOL);
}

#[test]
fn binomial_count_above_its_trials_is_a_diagnostic() {
    let src = "data { y: ints[2]\n n: ints[2] }\nparam { a: real }\nmodel { y ~ binomial_logit(n, a) }\n";
    let d = lower_model(&check(src, r#"{"y": [3, 6], "n": [5, 5]}"#)).expect_err("6 successes in 5 trials");
    assert_eq!(d.code, "mvi::lower::outcome_out_of_support");
    assert!(d.message.contains("entry 2"), "{}", d.message);
    lower(src, r#"{"y": [3, 5], "n": [5, 5]}"#);
}

#[test]
fn data_outside_a_new_family_support_or_a_truncation_is_a_diagnostic_at_the_outcome() {
    // (model, data, the code, a word the help must contain)
    let cases = [
        (
            "data { y: ints[3] }\nparam { mu: real<lower=0> }\nmodel { y ~ neg_binomial_2(mu, 2) }\n",
            r#"{"y": [1, -2, 0]}"#,
            "mvi::lower::outcome_out_of_support",
            "counts",
        ),
        (
            "data { y: ints[3] }\nparam { a: real }\nmodel { y ~ ordered_logistic(a, [-1.0, 1.0]) }\n",
            r#"{"y": [1, 4, 2]}"#,
            "mvi::lower::outcome_out_of_support",
            "cutpoints",
        ),
        (
            "data { y: vector[3] }\nparam { mu: real }\nmodel { y ~ normal(mu, 1) T[0, 2] }\n",
            r#"{"y": [0.5, 2.5, 1.0]}"#,
            "mvi::lower::outside_truncation",
            "bounds",
        ),
    ];
    for (src, data, code, help) in cases {
        let model = check(src, data);
        let d = lower_model(&model).expect_err(src);
        assert_eq!(d.code, code, "{src}");
        assert!(
            d.help.as_deref().is_some_and(|h| h.contains(help)),
            "{src}: {:?}",
            d.help
        );
        let label = d.labels.first().expect("a primary label");
        assert_eq!(&src[label.offset()..label.offset() + label.len()], "y");
    }
}

/// `[z1, z2, z3] ~ multi_normal(…)` scores the vector literal as `let z = [z1, z2, z3]`
/// followed by `z ~ …` does (no Jacobian), and any expression may stand on the left of `~`
/// in `model`, as in Stan.
#[test]
fn a_tilde_on_a_vector_literal_or_an_expression_matches_the_let_form() {
    let head = "param {\n  z1: real\n  z2: real\n  z3: real\n}\n";
    let args = "[1.0, -2.0, 0.5], [[2.0, 1.2, 0.3], [1.2, 1.5, -0.4], [0.3, -0.4, 1.0]]";
    let forms = [
        format!("model {{\n  [z1, z2, z3] ~ multi_normal({args})\n  z1 + z2 ~ normal(0, 3)\n}}"),
        format!(
            "model {{\n  let z = [z1, z2, z3]\n  z ~ multi_normal({args})\n  let s = z1 + z2\n  s ~ normal(0, 3)\n}}"
        ),
    ];
    let lowered: Vec<LogJoint> = forms
        .iter()
        .map(|m| lower(&format!("{head}{m}\n"), "{}"))
        .collect();
    for w in [[0.1, -0.3, 0.8], [1.0, 0.0, -2.0]] {
        assert_close(value_at(&lowered[0], &w), value_at(&lowered[1], &w), TOL);
    }
}

/// `cumulative_sum` is one running-sum node: a random walk of 20 000 steps lowers to a graph
/// of O(n) entries (no n×n matrix of ones), and its log joint and gradient equal the closed
/// forms of the walk written out by hand.
#[test]
fn cumulative_sum_is_linear_in_the_length_and_exact() {
    let n = 20_000;
    let y: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 50.0 - 1.0).collect();
    let json = format!(r#"{{"y": {y:?}}}"#);
    let lj = lower(
        "data { y: vector[N] }\nparam { z: vector[N] }\nmodel {\n  z ~ normal(0, 1)\n  y ~ normal(cumulative_sum(z), 1)\n}\n",
        &json,
    );
    let entries: usize = lj.graph.nodes.iter().map(|nd| nd.shape.size()).sum();
    assert!(entries < 20 * n, "{entries} entries for n = {n}");
    assert!(mvi::graph::dump_graph(&lj.graph).contains("cumsum"));
    let w: Vec<f64> = (0..n).map(|i| ((i * 13) % 29) as f64 / 29.0 - 0.5).collect();
    // by hand: s = running sums of w; log p = Σ log N(w | 0, 1) + Σ log N(y | s, 1)
    let mut s = vec![0.0; n];
    let mut acc = 0.0;
    for i in 0..n {
        acc += w[i];
        s[i] = acc;
    }
    let want: f64 = (0..n)
        .map(|i| log_normal(w[i], 0.0, 1.0) + log_normal(y[i], s[i], 1.0))
        .sum();
    assert_close(value_at(&lj, &w), want, 1e-9);
    // ∂/∂wᵢ = −wᵢ + Σ_{j ≥ i} (yⱼ − sⱼ)
    let wm = DMatrix::from_column_slice(n, 1, &w);
    let grad = lj
        .eval(&lj.theta_init(), &wm, Want::GRAD_W)
        .grad_w
        .expect("asked for");
    let mut tail = 0.0;
    for i in (0..n).rev() {
        tail += y[i] - s[i];
        let want_i = -w[i] + tail;
        assert!(
            (grad[i] - want_i).abs() < 1e-8 * want_i.abs().max(1.0),
            "∂/∂w{i}: {} vs {want_i}",
            grad[i]
        );
    }
}

/// `log_mix(theta, lps)` with one row of mixing weights per observation equals
/// Σₙ log Σₖ θₙₖ e^{lpₙₖ} written out by hand.
#[test]
fn log_mix_with_weights_per_observation_matches_the_sum_by_hand() {
    let src = "data {\n  y: vector[3]\n  W: matrix[3, 2]\n}\nparam {\n  mu: vector[2]\n}\nmodel {\n  target += log_mix(W, append_col(normal_lpdf_rows(y, mu[1]), normal_lpdf_rows(y, mu[2])))\n}\nfn normal_lpdf_rows(y: vector, m: real) -> vector {\n  return -0.5 * (y - m) .* (y - m) - 0.9189385332046727\n}\n";
    let y = [0.3, -1.2, 2.0];
    let w = [[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]];
    let lj = lower(src, &format!(r#"{{"y": {y:?}, "W": {w:?}}}"#));
    let mu = [-0.5, 1.5];
    let want: f64 = (0..3)
        .map(|n| {
            (0..2)
                .map(|k| w[n][k] * log_normal(y[n], mu[k], 1.0).exp())
                .sum::<f64>()
                .ln()
        })
        .sum();
    assert_close(value_at(&lj, &mu), want, TOL);
}

#[test]
fn stans_cholesky_decompose_is_cholesky() {
    // posteriordb's gp_pois_regr, as a Stan user writes it: L = cholesky_decompose(K)
    let data = r#"{"N": 3, "x": [-1.0, 0.5, 2.0], "k": [4, 1, 7]}"#;
    let model = |chol: &str| {
        format!(
            "data {{ N: int\n x: vector[N]\n k: ints[N] }}\n\
             param {{ rho: real<lower=0>\n alpha: real<lower=0>\n f_tilde: vector[N] }}\n\
             let f = {chol}(gp_exp_quad_cov(x, alpha, rho) + diag_matrix(rep_vector(1e-10, N))) * f_tilde\n\
             model {{ rho ~ gamma(25, 4)\n alpha ~ normal(0, 2)\n f_tilde ~ normal(0, 1)\n k ~ poisson_log(f) }}\n"
        )
    };
    let ours = lower(&model("cholesky"), data);
    let stans = lower(&model("cholesky_decompose"), data);
    for w in [[1.5, 0.3, 0.2, -0.4, 1.1], [0.1, -0.2, 1.0, 0.5, -0.7]] {
        let v = value_at(&ours, &w);
        assert!(v.is_finite(), "{v}");
        assert_eq!(value_at(&stans, &w), v);
    }
}
