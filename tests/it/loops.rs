//! Loops and recursions: element and slice assignment of locals (vectors and matrices, in
//! `model`, `fn` bodies and `predict`) against the vectorised form (values, gradients and
//! Hessians), derivatives of recursions three ways (`graph::diagnose`), and the graph of a
//! recursion growing linearly in its length (checked on the graph's structure, not by
//! timing).

use crate::common::root;
use mvi::check::check_source;
use mvi::data::{add_json_text, DataSet};
use mvi::density::{LogDensity, Want};
use mvi::graph::{diagnose, lower_model, LogJoint, Tolerances};
use nalgebra::{DMatrix, DVector};

/// The same log joint built in a different order: only rounding differs.
const SAME_TOL: f64 = 1e-10;

fn lower(src: &str, json: &str) -> LogJoint {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", json.to_string()).unwrap();
    let typed = check_source(src, "model.mvi", root(), &set)
        .unwrap_or_else(|ds| panic!("{}", ds[0].render_plain(100)));
    lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

/// A simulated ARMA(1,1) series of length t (mu = 0.5, phi = 0.6, theta = 0.3, sigma = 1),
/// from a fixed linear congruential stream (no rng crate needed for a test series).
fn arma_json(t: usize) -> String {
    let mut state: u64 = 12345;
    let mut unif = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let (mut y0, mut e0) = (0.0, 0.0);
    let mut y = Vec::with_capacity(t);
    for _ in 0..t {
        // a sum of 12 uniforms minus 6: close enough to N(0, 1) for test data
        let e: f64 = (0..12).map(|_| unif()).sum::<f64>() - 6.0;
        let v = 0.5 + 0.6 * y0 + 0.3 * e0 + e;
        y.push(v);
        (y0, e0) = (v, e);
    }
    serde_json::json!({ "T": t, "y": y }).to_string()
}

fn arma_src() -> String {
    std::fs::read_to_string(root().join("benches/loops/arma11.mvi")).unwrap()
}

/// Value and gradient at each column of `w` for every model; all must agree.
fn assert_same_log_joint(models: &[&LogJoint], points: &[Vec<f64>]) {
    let d = models[0].dim();
    let theta = models[0].theta_init();
    let w = DMatrix::from_fn(d, points.len(), |i, j| points[j][i]);
    let first = models[0].eval(&theta, &w, Want::GRAD_W);
    for m in &models[1..] {
        let e = m.eval(&theta, &w, Want::GRAD_W);
        for s in 0..points.len() {
            let rel = |a: f64, b: f64| (a - b).abs() / a.abs().max(b.abs()).max(1.0);
            assert!(
                rel(first.values[s], e.values[s]) < SAME_TOL,
                "value {} vs {}",
                first.values[s],
                e.values[s]
            );
            let (g0, g1) = (first.grad_w.as_ref().unwrap(), e.grad_w.as_ref().unwrap());
            for i in 0..d {
                assert!(
                    rel(g0[(i, s)], g1[(i, s)]) < SAME_TOL,
                    "gradient {i}: {} vs {}",
                    g0[(i, s)],
                    g1[(i, s)]
                );
            }
        }
        let p = DVector::from_vec(points[0].clone());
        let (h0, h1) = (models[0].hessian(&theta, &p), m.hessian(&theta, &p));
        assert!((h0 - h1).abs().max() < SAME_TOL * 100.0, "Hessians differ");
    }
}

#[test]
fn element_assignment_in_a_loop_equals_the_vectorised_model() {
    let data = r#"{"N": 6, "y": [0.3, -1.2, 0.8, 2.1, -0.4, 0.9], "x": [1.0, 0.5, -0.3, 1.4, 0.2, -1.1]}"#;
    let head = "data { y: vector[N]\n x: vector[N] }\nparam { a: real\n b: real\n s: real<lower=0> }\n";
    let vectorised = format!("{head}model {{ a ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n y ~ normal(a + b * x, s) }}");
    let by_entry = format!(
        "{head}model {{ a ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n let mu = rep_vector(0, N)\n for n in 1:N {{ mu[n] = a + b * x[n] }}\n y ~ normal(mu, s) }}"
    );
    // slices, compound updates and reads of single entries of an updated local
    let by_slice = format!(
        "{head}model {{ a ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n let mu = rep_vector(0, N)\n mu[1:3] = b * x[1:3]\n mu[4:N] = b * x[4:N]\n mu += a\n let r = rep_vector(0, N)\n for n in 1:N {{ r[n] = y[n] - mu[n] }}\n r ~ normal(0, s) }}"
    );
    let compound = format!(
        "{head}model {{ a ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n let mu = rep_vector(1, N)\n for n in 1:N {{ mu[n] *= b * x[n]\n mu[n] += a }}\n y ~ normal(mu, s) }}"
    );
    let in_fn = format!(
        "fn means(a: real, b: real, x: vector) -> vector {{\n let m = x\n for n in 1:3 {{ m[n] = a + b * x[n] }}\n m[4:6] = a + b * x[4:6]\n return m }}\n{head}model {{ a ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n y ~ normal(means(a, b, x), s) }}"
    );
    let models: Vec<LogJoint> = [&vectorised, &by_entry, &by_slice, &compound, &in_fn]
        .iter()
        .map(|s| lower(s, data))
        .collect();
    let refs: Vec<&LogJoint> = models.iter().collect();
    assert_same_log_joint(&refs, &[vec![0.3, -0.7, 0.2], vec![-1.0, 0.4, -0.5]]);
}

#[test]
fn matrix_entries_rows_and_columns_assigned_in_loops_equal_the_vectorised_model() {
    let data = r#"{"N": 4, "K": 3, "X": [[1.0, 0.5, -0.3], [0.2, -1.1, 0.7], [0.9, 0.4, 0.1], [-0.6, 0.3, 1.2]], "y": [0.5, -0.2, 1.1, 0.3]}"#;
    let head = "data { X: matrix[N, K]\n y: vector[N] }\nparam { beta: vector[K] }\n";
    let vectorised = format!("{head}model {{ beta ~ normal(0, 1)\n y ~ normal(X * beta, 1) }}");
    // M holds X .* beta' built entry by entry, by columns and by rows
    let entries = format!(
        "{head}model {{ beta ~ normal(0, 1)\n let M = rep_matrix(0, N, K)\n for n in 1:N {{ for k in 1:K {{ M[n, k] = X[n, k] * beta[k] }} }}\n y ~ normal(M * rep_vector(1, K), 1) }}"
    );
    let columns = format!(
        "{head}model {{ beta ~ normal(0, 1)\n let M = rep_matrix(0, N, K)\n for k in 1:K {{ M[:, k] = X[:, k] * beta[k] }}\n y ~ normal(M * rep_vector(1, K), 1) }}"
    );
    let rows = format!(
        "{head}model {{ beta ~ normal(0, 1)\n let M = rep_matrix(0, N, K)\n for n in 1:N {{ M[n] = X[n] .* beta }}\n let mu = rep_vector(0, N)\n for n in 1:N {{ mu[n] = sum(M[n]) }}\n y ~ normal(mu, 1) }}"
    );
    let models: Vec<LogJoint> = [&vectorised, &entries, &columns, &rows]
        .iter()
        .map(|s| lower(s, data))
        .collect();
    let refs: Vec<&LogJoint> = models.iter().collect();
    assert_same_log_joint(&refs, &[vec![0.3, -0.7, 0.2], vec![-1.0, 0.4, 1.5]]);
}

#[test]
fn recursions_pass_the_three_way_derivative_checks() {
    let arma = lower(&arma_src(), &arma_json(30));
    // a two-state HMM forward algorithm: gamma[t, k] = log_sum_exp(acc) in a nested loop
    let hmm_src = "data { y: vector[N] }\nparam { mu: vector[2]\n s: real<lower=0>\n p: vector<lower=0, upper=1>[2] }\n\
        model { mu ~ normal(0, 3)\n s ~ half_normal(2)\n let lt = [[log(p[1]), log1m(p[1])], [log1m(p[2]), log(p[2])]]\n\
        let gamma = rep_matrix(0, N, 2)\n for k in 1:2 { gamma[1, k] = normal_lpdf(y[1] | mu[k], s) - log(2) }\n\
        for t in 2:N { for k in 1:2 { let acc = rep_vector(0, 2)\n for j in 1:2 { acc[j] = gamma[t - 1, j] + lt[j, k] + normal_lpdf(y[t] | mu[k], s) }\n gamma[t, k] = log_sum_exp(acc) } }\n\
        target += log_sum_exp(gamma[N]) }";
    let hmm = lower(
        hmm_src,
        r#"{"N": 12, "y": [0.1, 0.3, -0.2, 2.9, 3.2, 3.1, 0.2, -0.1, 3.3, 2.8, 0.0, 0.4]}"#,
    );
    for (name, lj) in [("arma", &arma), ("hmm", &hmm)] {
        let theta = lj.theta_init();
        for seed in 0..3 {
            let w = DVector::from_fn(lj.dim(), |i, _| {
                (((i + 3 * seed) * 7919 % 97) as f64 / 97.0 - 0.5) * 1.5
            });
            let r = diagnose(lj, &theta, &w, Tolerances::default());
            assert!(
                r.passed(),
                "{name} at {w}: grad {:.2e} / {:.2e}, hess {:.2e} / {:.2e}",
                r.grad_err_exact,
                r.grad_err_fd,
                r.hess_err_exact,
                r.hess_err_fd
            );
        }
    }
}

/// Σ over nodes of their entries: O(T) for a recursion written with element assignment
/// (each update is O(1)); a copy of the whole vector per update would make it O(T²).
fn total_entries(lj: &LogJoint) -> usize {
    lj.graph.nodes.iter().map(|n| n.shape.size()).sum()
}

#[test]
fn a_recursion_lowers_to_a_graph_linear_in_its_length() {
    let src = arma_src();
    let small = lower(&src, &arma_json(10));
    let large = lower(&src, &arma_json(1000));
    let per_step_nodes = (large.graph.nodes.len() - small.graph.nodes.len()) as f64 / 990.0;
    let per_step_entries = (total_entries(&large) - total_entries(&small)) as f64 / 990.0;
    // 5 arithmetic nodes and 2 constants per step, and the data (T entries) and err (T) read whole
    assert!(per_step_nodes <= 8.0, "{per_step_nodes} nodes per step");
    assert!(per_step_entries <= 12.0, "{per_step_entries} entries per step");
}

#[test]
fn a_recursion_in_predict_gives_the_model_block_log_likelihood() {
    let mut src = arma_src().replace("infer {", "predict {\n  let nu = rep_vector(0, T)\n  let err = rep_vector(0, T)\n  nu[1] = mu + phi * mu\n  err[1] = y[1] - nu[1]\n  for t in 2:T {\n    nu[t] = mu + phi * y[t - 1] + theta * err[t - 1]\n    err[t] = y[t] - nu[t]\n  }\n  y ~ normal(nu, sigma)\n}\n\ninfer {");
    src = src.replace("method = vi_diag", "method = laplace");
    let lj = lower(&src, &arma_json(20));
    let predict = lj.predict.as_ref().expect("the model has a predict block");
    assert_eq!(predict.pointwise.len(), 1);
    // the pointwise log-likelihood summed equals the likelihood term of the log joint
    let w = [0.4, 0.5, 0.2, 0.1];
    let theta = lj.theta_init();
    let lp = lj
        .eval(&theta, &DMatrix::from_column_slice(4, 1, &w), Want::VALUE)
        .values[0];
    let consts = mvi::graph::eval::lift_consts::<f64>(predict);
    let tape = mvi::graph::eval::forward_values(predict, &consts, &[], &w, 1);
    let ll: f64 = (0..20)
        .map(|i| tape.value(predict.pointwise[0].loglik, i, 0))
        .sum();
    let sigma = w[3].exp();
    let half_cauchy = (2.0 / (std::f64::consts::PI * 5.0)).ln() - (1.0 + (sigma / 5.0).powi(2)).ln();
    let norm = |x: f64, s: f64| -0.5 * (x / s).powi(2) - s.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln();
    let priors = norm(w[0], 10.0) + norm(w[1], 2.0) + norm(w[2], 2.0) + half_cauchy + w[3];
    assert!((lp - priors - ll).abs() < 1e-9, "{lp} vs {}", priors + ll);
}

/// The number of scan nodes of a graph.
fn scans(g: &mvi::graph::Graph) -> usize {
    g.nodes
        .iter()
        .filter(|n| matches!(n.op, mvi::graph::Op::Scan(_)))
        .count()
}

/// The same log joint with every scan unrolled again (`graph::scan::expand`).
fn unrolled(lj: &LogJoint) -> LogJoint {
    let mut u = lj.clone();
    u.graph = mvi::graph::scan::expand(&lj.graph);
    u.predict = lj.predict.as_ref().map(mvi::graph::scan::expand);
    u
}

/// Points around the initial point, deterministic.
fn points_near(lj: &LogJoint, n: usize) -> Vec<Vec<f64>> {
    let c = lj.initial_point();
    (0..n)
        .map(|s| {
            (0..lj.dim())
                .map(|i| c[i] + (((i + 7 * s) * 7919 % 97) as f64 / 97.0 - 0.5) * 0.8)
                .collect()
        })
        .collect()
}

#[test]
fn a_long_recursion_is_one_scan_node_whatever_its_length() {
    let src = arma_src();
    let small = lower(&src, &arma_json(12));
    let large = lower(&src, &arma_json(2000));
    assert_eq!(scans(&large.graph), 1);
    // the same graph for 12 and 2000 steps: the loop's body is stored once
    assert_eq!(small.graph.nodes.len(), large.graph.nodes.len());
    let expanded = mvi::graph::scan::expand(&large.graph);
    assert!(
        expanded.nodes.len() > 2000 * 5,
        "{} nodes unrolled",
        expanded.nodes.len()
    );
    assert_eq!(scans(&expanded), 0);
}

#[test]
fn scans_give_the_unrolled_log_joint_gradients_and_hessians() {
    let read = |f: &str| std::fs::read_to_string(root().join("benches/loops").join(f)).unwrap();
    let series: Vec<f64> = (0..40)
        .map(|i| ((i as f64) * 0.7).sin() * 2.0 + 3.0 * f64::from(i % 7 < 3))
        .collect();
    let y = serde_json::to_string(&series).unwrap();
    // a recursion on a hyperparameter, targets inside the loop, a matrix row carried
    let ar_hyper = AR_HYPER;
    let rows = "data { y: vector[T] }\nparam { a: vector[2]\n s: real<lower=0> }\n\
        model { a ~ normal(0, 1)\n s ~ half_normal(1)\n let m = rep_matrix(0, T, 2)\n let v = rep_vector(0, 2)\n\
        m[1, 1] = y[1]\n m[1, 2] = -y[1]\n\
        for t in 2:T { v = a .* v + [y[t], 1]\n m[t, 1] = a[1] * m[t - 1, 1] + v[2]\n m[t, 2] = a[2] * m[t - 1, 2] + y[t] }\n\
        target += normal_lpdf(m[T, 1] | 0, s) + normal_lpdf(m[T, 2] | 0, s) + normal_lpdf(sum(v) | 0, s) }";
    let models = [
        ("arma", lower(&arma_src(), &arma_json(30))),
        (
            "garch",
            lower(
                &read("garch11.mvi"),
                &format!(r#"{{"T": 40, "y": {y}, "sigma1": 1.0}}"#),
            ),
        ),
        (
            "hmm",
            lower(&read("hmm.mvi"), &format!(r#"{{"N": 40, "y": {y}}}"#)),
        ),
        ("ar_hyper", lower(ar_hyper, &format!(r#"{{"T": 40, "y": {y}}}"#))),
        ("rows", lower(rows, &format!(r#"{{"T": 40, "y": {y}}}"#))),
        ("ragged", lower(RAGGED, &ragged_json(40))),
    ];
    for (name, lj) in &models {
        assert!(scans(&lj.graph) >= 1, "{name}: no scan");
        let u = unrolled(lj);
        let points = points_near(lj, 3);
        assert_same_log_joint(&[lj, &u], &points);
        // ∇_θ too, and the single-point path (compiled unrolled) against the batched one
        assert_same_theta_gradient_and_point(name, &[lj, &u], &points);
    }
}

/// ∇_θ of `models[0]` equal to `models[1]`'s at `points`, and its single-point value and
/// gradient equal to its batched ones at the first point.
fn assert_same_theta_gradient_and_point(name: &str, models: &[&LogJoint; 2], points: &[Vec<f64>]) {
    let [lj, other] = *models;
    let theta = lj.theta_init();
    let w = DMatrix::from_fn(lj.dim(), points.len(), |i, j| points[j][i]);
    let (a, b) = (lj.eval(&theta, &w, Want::ALL), other.eval(&theta, &w, Want::ALL));
    let (ta, tb) = (a.grad_theta.unwrap(), b.grad_theta.unwrap());
    assert!(
        (&ta - &tb).abs().max() <= SAME_TOL * ta.abs().max().max(1.0),
        "{name}: ∇θ {ta} vs {tb}"
    );
    let mut g = vec![0.0; lj.dim()];
    let v = lj.value_grad_into(&theta, &points[0], &mut g);
    assert!(
        (v - a.values[0]).abs() < SAME_TOL * v.abs().max(1.0),
        "{name}: point value"
    );
    let gw = a.grad_w.unwrap();
    for (i, gi) in g.iter().enumerate() {
        assert!(
            (gi - gw[(i, 0)]).abs() < SAME_TOL * gi.abs().max(1.0),
            "{name}: point gradient {i}"
        );
    }
}

/// A recursion on a hyperparameter (a local carried from step to step) with a target term
/// inside the loop.
const AR_HYPER: &str = "data { y: vector[T] }\nhyper { rho: real<lower=0, upper=1> = 0.5 }\n\
    param { x: vector[T]\n s: real<lower=0> }\n\
    model { s ~ half_normal(1)\n x ~ normal(0, 1)\n let h = rep_vector(0, T)\n h[1] = x[1]\n\
    y[1] ~ normal(h[1], s)\n\
    for t in 2:T { h[t] = rho * h[t - 1] + x[t]\n y[t] ~ normal(h[t], s) } }";

#[test]
fn scans_pass_the_three_way_derivative_checks_with_a_hyperparameter() {
    let lj = lower(
        AR_HYPER,
        r#"{"T": 12, "y": [0.1, 0.3, -0.2, 2.9, 3.2, 3.1, 0.2, -0.1, 3.3, 2.8, 0.0, 0.4]}"#,
    );
    assert_eq!(scans(&lj.graph), 1);
    let theta = lj.theta_init();
    let w = DVector::from_fn(lj.dim(), |i, _| ((i * 7919 % 97) as f64 / 97.0 - 0.5) * 1.5);
    let r = diagnose(&lj, &theta, &w, Tolerances::default());
    assert!(
        r.passed(),
        "grad {:.2e} / {:.2e}",
        r.grad_err_exact,
        r.grad_err_fd
    );
}

#[test]
fn a_recursion_with_lag_two_is_one_scan_with_the_model_s_log_density() {
    // e[t] reads e[t - 2]: a carry two steps back, from two first values
    let src = "data { y: vector[T] }\nparam { phi1: real\n phi2: real\n s: real<lower=0> }\n\
        model { phi1 ~ normal(0, 1)\n phi2 ~ normal(0, 1)\n s ~ half_normal(1)\n let e = rep_vector(0, T)\n\
        e[1] = y[1]\n e[2] = y[2] - phi1 * y[1]\n\
        for t in 3:T { e[t] = y[t] - phi1 * y[t - 1] - phi2 * y[t - 2] + 0.1 * e[t - 2] }\n\
        e ~ normal(0, s) }";
    let y: Vec<f64> = (0..60)
        .map(|i| ((i as f64) * 0.9).sin() + 0.3 * ((i * i) as f64 * 0.1).cos())
        .collect();
    let lj = lower(src, &serde_json::json!({ "T": 60, "y": &y }).to_string());
    let short = lower(src, &serde_json::json!({ "T": 20, "y": &y[..20] }).to_string());
    assert_eq!(scans(&lj.graph), 1);
    assert_eq!(
        lj.graph.nodes.len(),
        short.graph.nodes.len(),
        "the graph grows with T"
    );
    let (phi1, phi2, u) = (0.4, -0.2, 0.1_f64);
    let s = u.exp();
    let mut e = vec![0.0; 60];
    e[0] = y[0];
    e[1] = y[1] - phi1 * y[0];
    for t in 2..60 {
        e[t] = y[t] - phi1 * y[t - 1] - phi2 * y[t - 2] + 0.1 * e[t - 2];
    }
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    let norm = |x: f64, sd: f64| -0.5 * (x / sd).powi(2) - sd.ln() - half_log_2pi;
    let expected = norm(phi1, 1.0)
        + norm(phi2, 1.0)
        + norm(s, 1.0)
        + 2f64.ln()
        + u
        + e.iter().map(|&x| norm(x, s)).sum::<f64>();
    let w = DMatrix::from_column_slice(3, 1, &[phi1, phi2, u]);
    let got = lj.eval(&lj.theta_init(), &w, Want::VALUE).values[0];
    assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    let u = unrolled(&lj);
    assert_same_log_joint(&[&lj, &u], &points_near(&lj, 3));
    let r = diagnose(
        &lj,
        &lj.theta_init(),
        &DVector::from_vec(vec![phi1, phi2, 0.1]),
        Tolerances::default(),
    );
    assert!(
        r.passed(),
        "grad {:.2e} / {:.2e}",
        r.grad_err_exact,
        r.grad_err_fd
    );
}

/// A short recursion per group of ragged data: many small loops, each its own scan until
/// the lowering's budget of graph rebuilds is spent (the rest stay unrolled).
const RAGGED: &str =
    "data { y: vector[N]\n len: ints[G]\n start: ints[G] }\nparam { mu: real\n s: real<lower=0> }\n\
    model { mu ~ normal(0, 1)\n s ~ half_normal(1)\n\
    for g in 1:G { let acc = rep_vector(0, len[g])\n acc[1] = y[start[g]] - mu\n\
    for j in 2:len[g] { acc[j] = 0.5 * acc[j - 1] + y[start[g] + j - 1] - mu }\n acc ~ normal(0, s) } }";

fn ragged_json(groups: usize) -> String {
    let lens: Vec<usize> = (0..groups).map(|g| 5 + g % 4).collect();
    let mut start = Vec::new();
    let mut at = 1;
    for l in &lens {
        start.push(at);
        at += l;
    }
    let y: Vec<f64> = (0..at - 1).map(|i| ((i as f64) * 0.37).sin()).collect();
    serde_json::json!({ "N": at - 1, "G": groups, "y": y, "len": lens, "start": start }).to_string()
}

#[test]
fn thousands_of_short_loops_lower_quickly_and_stay_the_same_log_joint() {
    // 3000 groups: the first loops become scans, the rest stay unrolled (no quadratic time)
    let lj = lower(RAGGED, &ragged_json(3000));
    let n = scans(&lj.graph);
    assert!((1..3000).contains(&n), "{n} scans");
    let u = unrolled(&lj);
    assert_same_log_joint(&[&lj, &u], &points_near(&lj, 2));
}

/// Loops whose steps do not depend on each other, each against the same model written with
/// vectors: `(loop, vectorised)` model texts over the same data and parameters.
const INDEPENDENT_LOOPS: [(&str, &str); 4] = [
    // per observation, a gather through an index (a varying intercept) and `~`
    (
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         for n in 1:N { y[n] ~ normal(alpha[g[n]] + b * x[n], s) } }",
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         y ~ normal(alpha[g] + b * x, s) }",
    ),
    // a parameter vector read at t and t - 1 (no local carried: the steps are independent),
    // with a hyperparameter
    (
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         for j in 2:J { alpha[j] ~ normal(rho * alpha[j - 1], 1) }\n\
         for n in 1:N { target += normal_lpdf(y[n] | exp(b) * x[n], s) } }",
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         alpha[2:J] ~ normal(rho * alpha[1:(J - 1)], 1)\n\
         target += normal_lpdf(y | exp(b) * x, s) }",
    ),
    // a Bernoulli outcome per observation
    (
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         for n in 1:N { z[n] ~ bernoulli_logit(alpha[g[n]] + b * x[n]) } }",
        "model { mu ~ normal(0, 1)\n tau ~ half_normal(1)\n alpha ~ normal(mu, tau)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         z ~ bernoulli_logit(alpha[g] + b * x) }",
    ),
    // a data row dotted with a parameter vector, either way round (`X * c` vectorised)
    (
        "model { c ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         for n in 1:N { z[n] ~ bernoulli_logit(b + dot(X[n], c))\n y[n] ~ normal(dot(c, X[n]), s) } }",
        "model { c ~ normal(0, 1)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
         z ~ bernoulli_logit(b + X * c)\n y ~ normal(X * c, s) }",
    ),
];

fn independent_loop_data(n: usize) -> String {
    let x: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).sin() * 1.5).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| x[i] * 0.8 + ((i * 7 % 11) as f64 / 11.0 - 0.5))
        .collect();
    let g: Vec<usize> = (0..n).map(|i| i * 5 % 6 + 1).collect();
    let z: Vec<usize> = (0..n).map(|i| usize::from(y[i] > 0.2)).collect();
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..3).map(|j| ((i * 3 + j) as f64 * 0.61).cos()).collect())
        .collect();
    serde_json::json!({ "N": n, "J": 6, "x": x, "y": y, "g": g, "z": z, "X": rows }).to_string()
}

#[test]
fn independent_loop_steps_become_vector_operations_with_the_vectorised_log_joint() {
    let head = "data { N: int\n J: int\n x: vector[N]\n y: vector[N]\n g: ints[N]\n z: ints[N]\n X: matrix[N, 3] }\n\
        hyper { rho: real<lower=0, upper=1> = 0.5 }\n\
        param { mu: real\n tau: real<lower=0>\n alpha: vector[J]\n b: real\n s: real<lower=0>\n c: vector[3] }\n";
    for (i, (by_loop, by_vector)) in INDEPENDENT_LOOPS.iter().enumerate() {
        let lj = lower(&format!("{head}{by_loop}"), &independent_loop_data(40));
        let vectorised = lower(&format!("{head}{by_vector}"), &independent_loop_data(40));
        // no scan is left, and the graph does not grow with the loop
        assert_eq!(scans(&lj.graph), 0, "model {i}: a scan is left");
        // a loop of one likelihood term: its terms summed by one fused node, as written with
        // vectors (model 3's two terms per step are summed in the loop's order instead)
        let pointwise = lj
            .graph
            .nodes
            .iter()
            .filter(|n| matches!(n.op, mvi::graph::Op::LikPoint(..)));
        assert_eq!(
            pointwise.count(),
            if i == 3 { 2 } else { 0 },
            "model {i}: pointwise likelihoods"
        );
        let longer = lower(&format!("{head}{by_loop}"), &independent_loop_data(80));
        assert_eq!(
            lj.graph.nodes.len(),
            longer.graph.nodes.len(),
            "model {i}: the graph grows"
        );
        let points = points_near(&lj, 3);
        assert_same_log_joint(&[&lj, &vectorised], &points);
        // ∇θ (rho), and the single-point path against the batched one
        assert_same_theta_gradient_and_point(&format!("model {i}"), &[&lj, &vectorised], &points);
        assert_derivatives_agree(&format!("model {i}"), &lj, &points[2]);
    }
}

/// The three-way derivative check (reverse mode, num-dual, finite differences) at `point`.
fn assert_derivatives_agree(name: &str, lj: &LogJoint, point: &[f64]) {
    let r = diagnose(
        lj,
        &lj.theta_init(),
        &DVector::from_column_slice(point),
        Tolerances::default(),
    );
    assert!(
        r.passed(),
        "{name}: derivatives {:.2e} / {:.2e}",
        r.grad_err_exact,
        r.grad_err_fd
    );
}

#[test]
fn a_mixture_written_with_a_loop_is_vector_operations_with_the_vectorised_log_joint() {
    // one log_sum_exp([…, …]) per observation: a steps × 2 matrix and its rows' log Σ exp
    let by_loop = std::fs::read_to_string(root().join("benches/loops/mixture.mvi")).unwrap();
    let by_vector = "data { y: vector[N] }\n\
        param { lambda: real<lower=0, upper=1>\n mu: vector[2]\n sigma: vector<lower=0>[2] }\n\
        model { mu ~ normal(0, 5)\n sigma ~ half_normal(2)\n\
        let lp1 = -0.5 * square((y - mu[1]) / sigma[1]) - log(sigma[1]) - 0.5 * log(2 * pi())\n\
        let lp2 = -0.5 * square((y - mu[2]) / sigma[2]) - log(sigma[2]) - 0.5 * log(2 * pi())\n\
        target += log_mix([lambda, 1 - lambda], append_col(lp1, lp2)) }";
    let y: Vec<f64> = (0..60).map(|i| ((i as f64) * 1.3).sin() * 3.0).collect();
    let data = |n: usize| serde_json::json!({ "N": n, "y": &y[..n] }).to_string();
    let lj = lower(&by_loop, &data(40));
    assert_eq!(scans(&lj.graph), 0, "a scan is left");
    assert_eq!(
        lj.graph.nodes.len(),
        lower(&by_loop, &data(60)).graph.nodes.len(),
        "the graph grows"
    );
    let vectorised = lower(by_vector, &data(40));
    let points = points_near(&lj, 3);
    assert_same_log_joint(&[&lj, &vectorised], &points);
    assert_derivatives_agree("mixture", &lj, &points[1]);
}
