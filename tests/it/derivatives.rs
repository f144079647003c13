//! Three-way derivative agreement on small graphs: every op, every distribution, and random
//! graphs. Reverse-mode gradients vs num-dual forward vs central finite differences;
//! forward-over-reverse H·v vs the all-forward (HyperDual) Hessian times v vs finite
//! differences of the gradient; Hessian symmetry; batched evaluation vs column by column.

use mvi::autodiff::{dual, finite_diff, reverse};
use mvi::dist;
use mvi::graph::eval::{forward, lift_consts};
use mvi::graph::{Constraint, Fun1, Fun2, Fun3, Graph, NodeId, Shape};
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;

/// Exact modes against each other: the same operations in a different order, so only
/// rounding differs (relative to max(1, |value|)).
const EXACT_TOL: f64 = 1e-12;
/// Against central finite differences with step 1e-5: truncation O(h²) ≈ 1e-10 times the
/// third derivative plus cancellation O(ε/h) ≈ 1e-11 times the value; 1e-6 leaves room for
/// the steeper functions (lgamma near 0, exp) without hiding a wrong adjoint rule.
const FD_TOL: f64 = 1e-6;
/// Finite differences of the gradient lose one more order of accuracy than of the value.
const FD_HESS_TOL: f64 = 1e-5;
/// Batched vs column-by-column: the products are blocked differently, so the sums differ in
/// rounding only.
const BATCH_TOL: f64 = 1e-12;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            rel(*x, *y) <= tol,
            "{what}[{i}]: {x} vs {y} (rel {:.2e} > {tol:.0e})",
            rel(*x, *y)
        );
    }
}

fn value(g: &Graph, theta: &[f64], w: &[f64]) -> f64 {
    let consts = lift_consts::<f64>(g);
    forward(g, &consts, theta, w, 1).target_values()[0]
}

fn grad(g: &Graph, theta: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let consts = lift_consts::<f64>(g);
    let r = reverse::value_grad(g, &consts, theta, w, 1);
    (r.grad_w, r.grad_theta)
}

/// Every check on one graph at one point.
fn check_all(g: &Graph, theta: &[f64], w: &[f64]) {
    let v = value(g, theta, w);
    assert!(v.is_finite(), "log density not finite: {v}");
    let (gw, gt) = grad(g, theta, w);
    let fwd = dual::forward_grad(g, theta, w);
    assert_close("reverse vs forward gradient", &gw, fwd.as_slice(), EXACT_TOL);
    let fd = finite_diff::gradient(&|x| value(g, theta, x), w, 1e-5);
    assert_close(
        "reverse vs finite-difference gradient",
        &gw,
        fd.as_slice(),
        FD_TOL,
    );
    let fwd_t = dual::forward_grad_theta(g, theta, w);
    assert_close(
        "reverse vs forward theta gradient",
        &gt,
        fwd_t.as_slice(),
        EXACT_TOL,
    );
    let fd_t = finite_diff::gradient(&|t| value(g, t, w), theta, 1e-5);
    assert_close(
        "reverse vs finite-difference theta gradient",
        &gt,
        fd_t.as_slice(),
        FD_TOL,
    );
    check_second_order(g, theta, w);
    check_batched(g, theta, w);
}

fn check_second_order(g: &Graph, theta: &[f64], w: &[f64]) {
    let d = w.len();
    let v: Vec<f64> = (0..d).map(|i| 1.0 - 0.37 * i as f64).collect();
    let hv = dual::hvp(g, theta, w, &v);
    let h_fwd = dual::hessian_forward(g, theta, w);
    let vv = DVector::from_vec(v.clone());
    assert_close(
        "H·v vs all-forward H v",
        hv.as_slice(),
        (&h_fwd * &vv).as_slice(),
        EXACT_TOL,
    );
    let gradf = |x: &[f64]| DVector::from_vec(grad(g, theta, x).0);
    let h_fd = finite_diff::hessian(&gradf, w, 1e-5);
    assert_close(
        "H·v vs finite-difference H v",
        hv.as_slice(),
        (&h_fd * &vv).as_slice(),
        FD_HESS_TOL,
    );
    let h_raw = dual::hessian_raw(g, theta, w);
    assert_close(
        "Hessian symmetry",
        h_raw.as_slice(),
        h_raw.transpose().as_slice(),
        EXACT_TOL,
    );
    assert_close(
        "forward-over-reverse vs all-forward Hessian",
        h_raw.as_slice(),
        h_fwd.as_slice(),
        EXACT_TOL,
    );
}

fn check_batched(g: &Graph, theta: &[f64], w: &[f64]) {
    let d = w.len();
    let s = 3;
    let mut big = Vec::with_capacity(d * s);
    for c in 0..s {
        big.extend(w.iter().map(|x| x + 0.05 * c as f64));
    }
    let consts = lift_consts::<f64>(g);
    let r = reverse::value_grad(g, &consts, theta, &big, s);
    for c in 0..s {
        let col = &big[c * d..(c + 1) * d];
        let one = reverse::value_grad(g, &consts, theta, col, 1);
        assert_close("batched value", &r.values[c..c + 1], &one.values, BATCH_TOL);
        assert_close(
            "batched gradient",
            &r.grad_w[c * d..(c + 1) * d],
            &one.grad_w,
            BATCH_TOL,
        );
        let p = theta.len();
        assert_close(
            "batched theta gradient",
            &r.grad_theta[c * p..(c + 1) * p],
            &one.grad_theta,
            BATCH_TOL,
        );
    }
    check_weighted(g, theta, &r.grad_theta, &big, s);
}

/// ∇_θ summed over the columns with weights (the adjoints summed before they reach θ)
/// against the per-column ∇_θ summed afterwards: two weight columns, one uneven and signed.
fn check_weighted(g: &Graph, theta: &[f64], per_column: &[f64], w: &[f64], s: usize) {
    let p = theta.len();
    let weights: Vec<f64> = (0..s)
        .map(|_| 1.0 / s as f64)
        .chain((0..s).map(|c| 0.7 - 0.9 * c as f64))
        .collect();
    let consts = lift_consts::<f64>(g);
    let r = reverse::value_grad_weighted(g, &consts, theta, w, s, &weights, 2);
    let mut want = vec![0.0; 2 * p];
    for k in 0..2 {
        for c in 0..s {
            for q in 0..p {
                want[k * p + q] += weights[k * s + c] * per_column[c * p + q];
            }
        }
    }
    assert_close("weighted theta gradient", &r.grad_theta, &want, BATCH_TOL);
    let one = reverse::value_grad(g, &consts, theta, w, s);
    assert_eq!(
        (r.values, r.grad_w),
        (one.values, one.grad_w),
        "the same values and ∇_w"
    );
}

/// A graph over w ∈ R^d (one vector param) and θ ∈ R^1, with the target built by `f`.
fn graph_with(d: usize, f: impl Fn(&mut Graph, NodeId, NodeId) -> NodeId) -> Graph {
    let mut g = Graph::new(d, 1);
    let x = g.param_slice(0, Shape::Vector(d), &Constraint::NONE).unwrap();
    let t = g.hyper_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
    let out = f(&mut g, x, t);
    let out = if g.shape(out) == Shape::Scalar {
        out
    } else {
        g.sum(out)
    };
    g.add_target(out).unwrap();
    g
}

type Build = fn(&mut Graph, NodeId, NodeId) -> NodeId;

fn pos(g: &mut Graph, x: NodeId) -> NodeId {
    g.unary(Fun1::Exp, x)
}

fn unit(g: &mut Graph, x: NodeId) -> NodeId {
    g.unary(Fun1::InvLogit, x)
}

/// One case per op of the builder (d = 4 unless said otherwise).
fn op_cases() -> Vec<(&'static str, Build)> {
    vec![
        ("neg", |g, x, t| {
            let n = g.neg(x);
            g.mul(n, t).unwrap()
        }),
        ("exp", |g, x, _| g.unary(Fun1::Exp, x)),
        ("log", |g, x, _| {
            let p = pos(g, x);
            let q = g.unary(Fun1::Square, p);
            g.unary(Fun1::Log, q)
        }),
        ("log1p", |g, x, _| {
            let p = pos(g, x);
            g.unary(Fun1::Log1p, p)
        }),
        ("expm1", |g, x, _| g.unary(Fun1::Expm1, x)),
        ("sqrt", |g, x, _| {
            let p = pos(g, x);
            g.unary(Fun1::Sqrt, p)
        }),
        ("square", |g, x, t| {
            let a = g.mul(x, t).unwrap();
            g.unary(Fun1::Square, a)
        }),
        ("abs", |g, x, _| {
            let c = g.scalar(3.0);
            let a = g.add_nodes(x, c).unwrap();
            g.unary(Fun1::Abs, a)
        }),
        ("sin", |g, x, _| g.unary(Fun1::Sin, x)),
        ("cos", |g, x, _| g.unary(Fun1::Cos, x)),
        ("tanh", |g, x, _| g.unary(Fun1::Tanh, x)),
        ("atan", |g, x, _| g.unary(Fun1::Atan, x)),
        ("inv_logit", |g, x, _| g.unary(Fun1::InvLogit, x)),
        ("logit", |g, x, _| {
            let u = unit(g, x);
            let l = g.unary(Fun1::Logit, u);
            g.unary(Fun1::Square, l)
        }),
        ("log_inv_logit", |g, x, _| g.unary(Fun1::LogInvLogit, x)),
        ("log1m_inv_logit", |g, x, _| g.unary(Fun1::Log1mInvLogit, x)),
        ("lgamma", |g, x, _| {
            let p = pos(g, x);
            g.unary(Fun1::Lgamma, p)
        }),
        ("log_phi", |g, x, _| g.unary(Fun1::LogPhi, x)),
        ("log_gamma_p_q", |g, x, t| {
            // shapes from w, the argument from θ (broadcast), and the other way round
            let a = pos(g, x);
            let z = g.unary(Fun1::Exp, t);
            let p = g.binary(Fun2::LogGammaP, a, z).unwrap();
            let q = g.binary(Fun2::LogGammaQ, z, a).unwrap();
            g.add_nodes(p, q).unwrap()
        }),
        ("log_student_t_cdf", |g, x, t| {
            let nu = g.unary(Fun1::Exp, t);
            let three = g.scalar(3.0);
            let z = g.mul(three, x).unwrap();
            let a = g.binary(Fun2::LogStudentTCdf, z, nu).unwrap();
            let nu2 = pos(g, x);
            let b = g.binary(Fun2::LogStudentTCdf, t, nu2).unwrap();
            g.add_nodes(a, b).unwrap()
        }),
        ("log_beta_inc", |g, x, t| {
            let u = unit(g, x);
            let a = pos(g, x);
            let b = g.unary(Fun1::Exp, t);
            let p = g.ternary(Fun3::LogBetaInc, [u, a, b]).unwrap();
            let q = g.ternary(Fun3::LogBetaIncC, [u, b, a]).unwrap();
            g.add_nodes(p, q).unwrap()
        }),
        ("add_sub_broadcast", |g, x, t| {
            let a = g.add_nodes(x, t).unwrap();
            let b = g.sub(t, a).unwrap();
            g.mul(a, b).unwrap()
        }),
        ("batched_scalar_broadcast", |g, x, t| {
            // one value per column (a scalar of w) against a vector of w, in both operand
            // positions of + − * /, as in `mu + phi * (h - mu)`: the scalar's adjoint sums
            // over the vector
            let s = g_idx(g, x, 1);
            let a = g.add_nodes(s, x).unwrap();
            let b = g.sub(a, s).unwrap();
            let c = g.mul(s, b).unwrap();
            let d = g.mul(c, s).unwrap();
            let p = pos(g, s);
            let e = g.div(d, p).unwrap();
            let q = pos(g, x);
            let f = g.div(s, q).unwrap();
            let h = g.sub(s, f).unwrap();
            let k = g.mul(h, t).unwrap();
            g.add_nodes(e, k).unwrap()
        }),
        ("div", |g, x, t| {
            let p = pos(g, x);
            let q = g.div(t, p).unwrap();
            g.div(q, p).unwrap()
        }),
        ("pow_real", |g, x, t| {
            let p = pos(g, x);
            let e = g.unary(Fun1::InvLogit, t);
            g.pow(p, e).unwrap()
        }),
        ("pow_int", |g, x, _| {
            let c = g.scalar(3.0);
            g.pow(x, c).unwrap()
        }),
        ("min_max", |g, x, t| {
            let a = g.binary(Fun2::Max, x, t).unwrap();
            let m = g.min(x);
            let mx = g.max(a);
            let mm = g.binary(Fun2::Min, m, mx).unwrap();
            g.mul(mm, t).unwrap()
        }),
        ("matvec_const", |g, x, _| {
            let a = g.constant(
                Shape::Matrix(3, 4),
                (0..12).map(|i| (i as f64 * 0.7).sin()).collect(),
            );
            let y = g.matmul(a, x).unwrap();
            g.unary(Fun1::Square, y)
        }),
        ("matvec_theta_matrix", |g, x, t| {
            // A(θ) · x with A depending on θ only (RBF features with a learned width): its
            // ∇_θ share is pushed forward through the product rather than pulled back
            let c = g.constant(
                Shape::Matrix(3, 4),
                (0..12).map(|i| (i as f64 * 0.7).sin()).collect(),
            );
            let tc = g.mul(t, c).unwrap();
            let a = g.unary(Fun1::Exp, tc);
            let y = g.matmul(a, x).unwrap();
            g.unary(Fun1::Tanh, y)
        }),
        ("theta_matrix_times_param_matrix", |g, x, t| {
            // A(θ) (3×2) times a 2×2 matrix of w, and A also read elementwise with w (not
            // pushed forward then)
            let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), g_idx(g, x, 3), g_idx(g, x, 4)];
            let m = g.pack(Shape::Matrix(2, 2), items).unwrap();
            let c = g.constant(Shape::Matrix(3, 2), vec![1.0, -0.5, 2.0, 0.3, 0.0, 1.5]);
            let tc = g.mul(t, c).unwrap();
            let a = g.unary(Fun1::Sin, tc);
            let am = g.matmul(a, m).unwrap();
            let s1 = g.unary(Fun1::Tanh, am);
            let c2 = g.constant(Shape::Matrix(2, 3), vec![0.2, 1.0, -1.0, 0.4, 0.5, -0.3]);
            let b = g.matmul(m, c2).unwrap();
            let bt = g.transpose(b);
            let e = g.mul(a, bt).unwrap();
            let (u, v) = (g.sum(s1), g.sum(e));
            g.add_nodes(u, v).unwrap()
        }),
        ("matmul_params", |g, x, t| {
            let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), g_idx(g, x, 3), g_idx(g, x, 4)];
            let m = g.pack(Shape::Matrix(2, 2), items).unwrap();
            let mm = g.matmul(m, m).unwrap();
            let tr = g.transpose(m);
            let p = g.times(tr, mm).unwrap();
            let s = g.unary(Fun1::Sin, p);
            g.mul(s, t).unwrap()
        }),
        ("const_times_param_matrix", |g, x, _| {
            let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), g_idx(g, x, 3), g_idx(g, x, 4)];
            let m = g.pack(Shape::Matrix(2, 2), items).unwrap();
            let c = g.constant(Shape::Matrix(3, 2), vec![1.0, -0.5, 2.0, 0.3, 0.0, 1.5]);
            let a = g.matmul(c, m).unwrap();
            let c2 = g.constant(Shape::Matrix(2, 2), vec![0.2, 1.0, -1.0, 0.4]);
            let b = g.matmul(m, c2).unwrap();
            let s1 = g.unary(Fun1::Square, a);
            let s2 = g.unary(Fun1::Tanh, b);
            let (u, v) = (g.sum(s1), g.sum(s2));
            g.add_nodes(u, v).unwrap()
        }),
        ("dot_transpose", |g, x, _| {
            let tx = g.transpose(x);
            let e = g.unary(Fun1::Sin, x);
            g.times(tx, e).unwrap()
        }),
        ("indexing", |g, x, _| {
            let a = g.index(x, 2).unwrap();
            let s = g.slice(x, 2, 4).unwrap();
            let ga = g.gather(x, &[4, 1, 1, 3]).unwrap();
            let e = g.unary(Fun1::Exp, ga);
            let p = g.mul(a, s).unwrap();
            let (u, v) = (g.sum(p), g.sum(e));
            g.add_nodes(u, v).unwrap()
        }),
        ("matrix_blocks", |g, x, _| {
            let x1 = g_idx(g, x, 1);
            let m = g.rep_matrix(x1, 4, 4);
            let d = g.diag_matrix(x);
            let s = g.add_nodes(m, d).unwrap();
            let b = g.block(s, (2, 4), (1, 2)).unwrap();
            let r = g.row(s, 2).unwrap();
            let c = g.col(s, 3).unwrap();
            let i2 = g.index2(s, 4, 4).unwrap();
            let sb = g.unary(Fun1::Sin, b);
            let parts = [g.sum(sb), g.dot(r, c).unwrap(), i2];
            let a1 = g.add_nodes(parts[0], parts[1]).unwrap();
            g.add_nodes(a1, parts[2]).unwrap()
        }),
        ("reductions", |g, x, _| {
            let parts = [
                g.mean(x).unwrap(),
                g.log_sum_exp(x),
                g.sd(x).unwrap(),
                g.variance(x).unwrap(),
            ];
            let sm = g.softmax(x).unwrap();
            let ls = g.log_softmax(x).unwrap();
            let e = g.index(sm, 2).unwrap();
            let f = g.index(ls, 3).unwrap();
            let mut acc = g.add_nodes(e, f).unwrap();
            for p in parts {
                acc = g.add_nodes(acc, p).unwrap();
            }
            acc
        }),
        ("rep_vector_literal", |g, x, t| {
            let r = g.rep_vector(t, 3);
            let items = vec![g_idx(g, x, 1), t, g_idx(g, x, 4)];
            let v = g.pack(Shape::Vector(3), items).unwrap();
            let p = g.mul(r, v).unwrap();
            let s = g.unary(Fun1::Square, p);
            g.sum(s)
        }),
        ("lse_rows", |g, x, t| {
            let items = vec![
                g_idx(g, x, 1),
                g_idx(g, x, 2),
                t,
                g_idx(g, x, 3),
                g_idx(g, x, 4),
                t,
            ];
            let m = g.pack(Shape::Matrix(2, 3), items).unwrap();
            let l = g.log_sum_exp_rows(m);
            let s = g.unary(Fun1::Square, l);
            g.sum(s)
        }),
        ("cholesky_trisolve", |g, x, _| {
            // S = B Bᵀ + I from the parameters, then L = chol(S) and L⁻¹ b.
            let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), g_idx(g, x, 3), g_idx(g, x, 4)];
            let b = g.pack(Shape::Matrix(2, 2), items).unwrap();
            let bt = g.transpose(b);
            let bb = g.matmul(b, bt).unwrap();
            let i = g.constant(Shape::Matrix(2, 2), vec![1.0, 0.0, 0.0, 1.0]);
            let s = g.add_nodes(bb, i).unwrap();
            let l = g.cholesky(s).unwrap();
            let rhs = g.slice(x, 2, 3).unwrap();
            let z = g.tri_solve(l, rhs).unwrap();
            let zz = g.unary(Fun1::Square, z);
            let ll = g.unary(Fun1::Sin, l);
            let (u, v) = (g.sum(zz), g.sum(ll));
            g.add_nodes(u, v).unwrap()
        }),
        ("constraints", |g, x, _| {
            // the transforms' log-Jacobians are in the target too
            let _ = x;
            let a = g
                .param_slice(0, Shape::Vector(2), &Constraint::lower(1.0))
                .unwrap();
            let b = g
                .param_slice(
                    2,
                    Shape::Scalar,
                    &Constraint {
                        lower: None,
                        upper: Some(2.0),
                    },
                )
                .unwrap();
            let c = g
                .param_slice(3, Shape::Scalar, &Constraint::interval(-1.0, 3.0))
                .unwrap();
            let s = g.sum(a);
            let p = g.mul(b, c).unwrap();
            g.add_nodes(s, p).unwrap()
        }),
    ]
}

fn g_idx(g: &mut Graph, x: NodeId, i: i64) -> NodeId {
    g.index(x, i).unwrap()
}

fn point() -> impl Strategy<Value = (Vec<f64>, f64)> {
    (prop::collection::vec(-1.5f64..1.5, 4), 0.2f64..1.5)
}

#[test]
fn every_op_and_distribution_agrees_at_a_fixed_point() {
    let (w, t) = (vec![0.3, -0.8, 1.1, 0.45], 0.7);
    let mut failed = Vec::new();
    for (name, build) in op_cases() {
        let g = graph_with(4, build);
        if std::panic::catch_unwind(|| check_all(&g, &[t], &w)).is_err() {
            failed.push(name);
        }
    }
    for case in dist_cases() {
        let name = case.0;
        let g = dist_graph(case);
        if std::panic::catch_unwind(|| check_all(&g, &[t], &w)).is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_op_agrees_three_ways((w, t) in point()) {
        for (name, build) in op_cases() {
            let g = graph_with(4, build);
            let r = std::panic::catch_unwind(|| check_all(&g, &[t], &w));
            prop_assert!(r.is_ok(), "op `{}` failed at w = {:?}, theta = {}", name, w, t);
        }
    }

    #[test]
    fn every_distribution_agrees_three_ways((w, t) in point()) {
        for case in dist_cases() {
            let name = case.0;
            let g = dist_graph(case);
            let r = std::panic::catch_unwind(|| check_all(&g, &[t], &w));
            prop_assert!(r.is_ok(), "distribution `{}` failed at w = {:?}, theta = {}", name, w, t);
        }
    }

    #[test]
    fn random_graphs_agree_three_ways(ops in prop::collection::vec((0usize..8, 0usize..64, 0usize..64), 1..12), (w, t) in point()) {
        let g = random_graph(&ops);
        let r = std::panic::catch_unwind(|| check_all(&g, &[t], &w));
        prop_assert!(r.is_ok(), "random graph {:?} failed at w = {:?}", ops, w);
    }
}

/// A random graph: each step applies a smooth op to earlier nodes (kept in range with tanh).
fn random_graph(ops: &[(usize, usize, usize)]) -> Graph {
    let mut g = Graph::new(4, 1);
    let x = g.param_slice(0, Shape::Vector(4), &Constraint::NONE).unwrap();
    let t = g.hyper_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
    let mut pool = vec![x, g.index(x, 1).unwrap(), t];
    for &(op, i, j) in ops {
        let (a, b) = (pool[i % pool.len()], pool[j % pool.len()]);
        let (sa, sb) = (g.shape(a), g.shape(b));
        let compatible = sa == sb || sa == Shape::Scalar || sb == Shape::Scalar;
        let n = match op {
            0 if compatible => g.add_nodes(a, b).unwrap(),
            1 if compatible => g.mul(a, b).unwrap(),
            2 => g.unary(Fun1::Tanh, a),
            3 => g.unary(Fun1::Sin, a),
            4 => g.sum(a),
            5 => g.log_sum_exp(a),
            6 if sa == Shape::Vector(4) => {
                let c = g.constant(
                    Shape::Matrix(4, 4),
                    (0..16).map(|k| ((k * 7 % 5) as f64 - 2.0) * 0.3).collect(),
                );
                g.matmul(c, a).unwrap()
            }
            _ => g.unary(Fun1::InvLogit, a),
        };
        pool.push(n);
    }
    let last = *pool.last().expect("the pool starts non-empty");
    let s = g.sum(last);
    let sq = g.unary(Fun1::Square, x);
    let ssq = g.sum(sq);
    let out = g.add_nodes(s, ssq).unwrap();
    g.add_target(out).unwrap();
    g
}

/// (name, argument builders from (w, θ), outcome): outcome `None` means the first parameter
/// vector itself (continuous families), `Some(data)` a data outcome.
type DistCase = (
    &'static str,
    fn(&mut Graph, NodeId, NodeId) -> Vec<NodeId>,
    Option<Vec<f64>>,
    Constraint,
);

fn dist_cases() -> Vec<DistCase> {
    vec![
        (
            "normal",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::NONE,
        ),
        (
            "student_t",
            |g, x, t| vec![pos_idx(g, x, 2), t, pos_idx(g, x, 1)],
            None,
            Constraint::NONE,
        ),
        (
            "cauchy",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::NONE,
        ),
        (
            "laplace",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::NONE,
        ),
        (
            "logistic",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::NONE,
        ),
        (
            "lognormal",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::lower(0.0),
        ),
        ("exponential", |_, _, t| vec![t], None, Constraint::lower(0.0)),
        (
            "gamma",
            |g, x, t| vec![pos_idx(g, x, 1), t],
            None,
            Constraint::lower(0.0),
        ),
        (
            "inv_gamma",
            |g, x, t| vec![pos_idx(g, x, 1), t],
            None,
            Constraint::lower(0.0),
        ),
        (
            "beta",
            |g, x, t| vec![pos_idx(g, x, 1), t],
            None,
            Constraint::interval(0.0, 1.0),
        ),
        ("half_normal", |_, _, t| vec![t], None, Constraint::lower(0.0)),
        ("half_cauchy", |_, _, t| vec![t], None, Constraint::lower(0.0)),
        (
            "uniform",
            |g, _, _| vec![g.scalar(-3.0), g.scalar(5.0)],
            None,
            Constraint::interval(-2.0, 4.0),
        ),
        (
            "multi_normal",
            |g, x, t| {
                let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), t, g_idx(g, x, 4)];
                let b = g.pack(Shape::Matrix(2, 2), items).unwrap();
                let bt = g.transpose(b);
                let bb = g.matmul(b, bt).unwrap();
                let i = g.constant(Shape::Matrix(2, 2), vec![1.0, 0.0, 0.0, 1.0]);
                let sig = g.add_nodes(bb, i).unwrap();
                let items = vec![t, g_idx(g, x, 3)];
                let mu = g.pack(Shape::Vector(2), items).unwrap();
                vec![mu, sig]
            },
            Some(vec![0.5, -1.0, 1.5, 0.2, 0.0, 2.0]),
            Constraint::NONE,
        ),
        (
            "multi_normal_cholesky",
            |g, x, t| {
                let e = g.unary(Fun1::Exp, x);
                let items = vec![g_idx(g, e, 1), g_idx(g, x, 2), g.scalar(0.0), g_idx(g, e, 4)];
                let l = g.pack(Shape::Matrix(2, 2), items).unwrap();
                let items = vec![t, g_idx(g, x, 3)];
                let mu = g.pack(Shape::Vector(2), items).unwrap();
                vec![mu, l]
            },
            Some(vec![0.5, -1.0]),
            Constraint::NONE,
        ),
        (
            "bernoulli",
            |g, x, _| vec![g.unary(Fun1::InvLogit, x)],
            Some(vec![1.0, 0.0, 0.0, 1.0]),
            Constraint::NONE,
        ),
        (
            "bernoulli_logit",
            |g, x, t| vec![g.mul(x, t).unwrap()],
            Some(vec![1.0, 0.0, 0.0, 1.0]),
            Constraint::NONE,
        ),
        (
            "binomial",
            |g, x, _| {
                vec![
                    g.constant(Shape::Vector(4), vec![5.0, 3.0, 7.0, 2.0]),
                    g.unary(Fun1::InvLogit, x),
                ]
            },
            Some(vec![2.0, 0.0, 7.0, 1.0]),
            Constraint::NONE,
        ),
        (
            "binomial_logit",
            |g, x, _| vec![g.constant(Shape::Vector(4), vec![5.0, 3.0, 7.0, 2.0]), x],
            Some(vec![2.0, 0.0, 7.0, 1.0]),
            Constraint::NONE,
        ),
        (
            "poisson",
            |g, x, _| vec![g.unary(Fun1::Exp, x)],
            Some(vec![0.0, 3.0, 1.0, 6.0]),
            Constraint::NONE,
        ),
        (
            "poisson_log",
            |_, x, _| vec![x],
            Some(vec![0.0, 3.0, 1.0, 6.0]),
            Constraint::NONE,
        ),
        (
            "categorical_logit",
            |_, x, _| vec![x],
            Some(vec![2.0, 4.0, 1.0]),
            Constraint::NONE,
        ),
        (
            "categorical_logit_rows",
            |g, x, t| {
                let items = vec![
                    g_idx(g, x, 1),
                    g_idx(g, x, 2),
                    t,
                    g_idx(g, x, 3),
                    g_idx(g, x, 4),
                    t,
                ];
                let m = g.pack(Shape::Matrix(2, 3), items).unwrap();
                vec![m]
            },
            Some(vec![3.0, 1.0]),
            Constraint::NONE,
        ),
    ]
}

fn pos_idx(g: &mut Graph, x: NodeId, i: i64) -> NodeId {
    let v = g.index(x, i).unwrap();
    g.unary(Fun1::Exp, v)
}

/// The graph of one case: the outcome (a constrained parameter vector or data) ~ dist.
fn dist_graph(case: DistCase) -> Graph {
    let (name, args, data, c) = case;
    let dist_name = name.trim_end_matches("_rows");
    let mut g = Graph::new(4, 1);
    let x = g.param_slice(0, Shape::Vector(4), &Constraint::NONE).unwrap();
    let t = g.hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
    let a = args(&mut g, x, t);
    let y = match data {
        Some(v) if dist_name.starts_with("multi_normal") && v.len() == 6 => {
            g.constant(Shape::Matrix(3, 2), v)
        }
        Some(v) => g.constant(Shape::Vector(v.len()), v),
        None => {
            // a second view of w through the family's support transform
            let raw = g.slice(x, 1, 4).unwrap();
            constrain_node(&mut g, raw, &c)
        }
    };
    dist::tilde(&mut g, dist_name, y, &a).unwrap();
    // keep every coordinate identified
    let sq = g.unary(Fun1::Square, x);
    let s = g.sum(sq);
    let h = g.scalar(-0.5);
    let p = g.mul(h, s).unwrap();
    g.add_target(p).unwrap();
    g
}

fn constrain_node(g: &mut Graph, raw: NodeId, c: &Constraint) -> NodeId {
    match (c.lower, c.upper) {
        (None, None) => raw,
        (Some(a), None) => {
            let e = g.unary(Fun1::Exp, raw);
            let k = g.scalar(a);
            g.add_nodes(k, e).unwrap()
        }
        (Some(a), Some(b)) => {
            let p = g.unary(Fun1::InvLogit, raw);
            let w = g.scalar(b - a);
            let s = g.mul(w, p).unwrap();
            let k = g.scalar(a);
            g.add_nodes(k, s).unwrap()
        }
        (None, Some(_)) => unreachable!("not used in these cases"),
    }
}

#[test]
fn lcdf_and_lccdf_agree_three_ways() {
    for name in [
        "normal",
        "cauchy",
        "laplace",
        "logistic",
        "lognormal",
        "exponential",
        "half_normal",
        "half_cauchy",
        "uniform",
    ] {
        for upper in [false, true] {
            let mut g = Graph::new(2, 0);
            let x = g.param_slice(0, Shape::Vector(2), &Constraint::NONE).unwrap();
            let y = g.param_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
            let sigma = g.param_slice(1, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
            let _ = x;
            let args = match name {
                "exponential" | "half_normal" | "half_cauchy" => vec![sigma],
                "uniform" => vec![g.scalar(0.0), g.scalar(10.0)],
                _ => vec![g.scalar(0.4), sigma],
            };
            let lp = dist::lcdf(&mut g, name, y, &args, upper).unwrap();
            g.add_target(lp).unwrap();
            check_all(&g, &[], &[0.3, -0.2]);
        }
    }
}

/// One CDF family with every argument a parameter (w₁ the outcome, w₂ and w₃ shapes or
/// scales through exp) or the hyperparameter θ > 0.
fn cdf_graph(name: &str, upper: bool) -> Graph {
    let mut g = Graph::new(3, 1);
    let w = g.param_slice(0, Shape::Vector(3), &Constraint::NONE).unwrap();
    let th = g.hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
    let raw = g_idx(&mut g, w, 1);
    let (p2, p3) = (pos_idx(&mut g, w, 2), pos_idx(&mut g, w, 3));
    let (y, args) = match name {
        "student_t" => (raw, vec![p2, th, p3]),
        "beta" => (g.unary(Fun1::InvLogit, raw), vec![p2, th]),
        _ => (g.unary(Fun1::Exp, raw), vec![p2, th]),
    };
    let lp = dist::lcdf(&mut g, name, y, &args, upper).unwrap();
    g.add_target(lp).unwrap();
    let sq = g.unary(Fun1::Square, w);
    let s = g.sum(sq);
    let h = g.scalar(-0.5);
    let p = g.mul(h, s).unwrap();
    g.add_target(p).unwrap();
    g
}

#[test]
fn incomplete_gamma_and_beta_cdfs_agree_three_ways_in_every_argument() {
    // the bulk, both sides of the series / continued-fraction switches, and tails
    let points: [(&[f64], f64); 5] = [
        (&[0.3, -0.2, 0.4], 0.7),
        (&[-1.4, 1.2, -0.3], 2.5),
        (&[1.6, 0.1, 0.9], 0.4),
        (&[-3.0, 0.5, -1.0], 1.3),
        (&[2.5, -0.8, 0.2], 3.0),
    ];
    let mut failed = Vec::new();
    for name in ["student_t", "gamma", "inv_gamma", "beta"] {
        for upper in [false, true] {
            let g = cdf_graph(name, upper);
            for (w, t) in points {
                if std::panic::catch_unwind(|| check_all(&g, &[t], w)).is_err() {
                    failed.push(format!("{name} upper={upper} at {w:?}, {t}"));
                }
            }
        }
    }
    assert!(failed.is_empty(), "failed: {failed:#?}");
}

#[test]
fn invalid_parameters_give_minus_infinity_not_nan() {
    use mvi::density::{LogDensity, Want};
    let mut g = Graph::new(1, 0);
    let s = g.param_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
    let y = g.constant(Shape::Vector(2), vec![0.1, -0.3]);
    let zero = g.scalar(0.0);
    dist::tilde(&mut g, "normal", y, &[zero, s]).unwrap();
    let lj = mvi::graph::LogJoint::new(g, vec![], vec![]);
    let w = DMatrix::from_row_slice(1, 3, &[-1.0, 0.0, 1.0]);
    let e = lj.eval(&DVector::zeros(0), &w, Want::GRAD_W);
    assert_eq!(e.values[0], f64::NEG_INFINITY);
    assert_eq!(e.values[1], f64::NEG_INFINITY);
    assert!(e.values[2].is_finite());
    assert!(e.grad_w.unwrap().iter().all(|v| v.is_finite()));
}

/// One likelihood over w ∈ R⁴ and θ ∈ R¹ (θ > 0), built fused or from elementary nodes.
type LikCase = (
    &'static str,
    fn(&mut Graph, NodeId, NodeId) -> (NodeId, Vec<NodeId>),
);

/// The location-scale cases of `dist` (`normal`, `cauchy`): σ from w, μ from θ; μ from w;
/// μ and σ both θ; one σ per observation from w (as stochastic volatility's
/// `y ~ normal(0, exp(h / 2))`) or from θ.
fn location_scale_cases(dist: &'static str) -> Vec<LikCase> {
    vec![
        (dist, |g, x, t| {
            let sd = g.unary(Fun1::Exp, x);
            (
                g.constant(Shape::Vector(4), vec![0.5, -1.0, 2.0, 0.1]),
                vec![t, sd],
            )
        }),
        (dist, |g, x, t| {
            let c = g.constant(Shape::Vector(4), vec![1.0, 0.5, 2.0, 1.5]);
            let sd = g.mul(c, t).unwrap();
            (x, vec![g.scalar(0.2), sd])
        }),
        (dist, |g, x, t| {
            let sd = pos_idx(g, x, 1);
            (x, vec![t, sd])
        }),
        (dist, |g, x, t| {
            (
                g.constant(Shape::Vector(4), vec![0.5, -1.0, 2.0, 0.1]),
                vec![x, t],
            )
        }),
        (dist, |g, _, t| {
            (g.constant(Shape::Vector(2), vec![0.5, -1.0]), vec![t, t])
        }),
    ]
}

fn lik_cases() -> Vec<LikCase> {
    let others: Vec<LikCase> = vec![
        ("bernoulli_logit", |g, x, t| {
            let y = g.constant(Shape::Vector(4), vec![1.0, 0.0, 1.0, 1.0]);
            (y, vec![g.mul(x, t).unwrap()])
        }),
        ("bernoulli_logit", |g, x, _| (g.scalar(0.0), vec![x])),
        ("poisson_log", |g, x, _| {
            (g.constant(Shape::Vector(4), vec![0.0, 3.0, 1.0, 7.0]), vec![x])
        }),
        ("poisson_log", |g, _, t| {
            (g.constant(Shape::Vector(3), vec![2.0, 0.0, 5.0]), vec![t])
        }),
        ("normal", |g, x, _| (x, vec![g.scalar(0.0), g.scalar(2.0)])),
        ("categorical_logit", |g, x, t| {
            // 2 rows × 3 classes of logits from w and θ
            let m = g
                .gather_flat(x, vec![0, 1, 2, 3, 1, 0], Shape::Matrix(2, 3))
                .unwrap();
            let eta = g.mul(m, t).unwrap();
            (g.constant(Shape::Vector(2), vec![3.0, 1.0]), vec![eta])
        }),
    ];
    let mut cases = location_scale_cases("normal");
    cases.extend(location_scale_cases("cauchy"));
    cases.extend(others);
    cases
}

fn lik_graph(case: &LikCase, unfused: bool) -> Graph {
    lik_graph_as(case, unfused, false)
}

/// The likelihood as a summed node (`tilde`) or, with `pointwise`, as per-observation log
/// densities (`predict`'s form) summed by a separate node.
fn lik_graph_as(case: &LikCase, unfused: bool, pointwise: bool) -> Graph {
    let mut g = Graph::new(4, 1);
    g.unfused = unfused;
    let x = g.param_slice(0, Shape::Vector(4), &Constraint::NONE).unwrap();
    let t = g.hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
    let (y, args) = (case.1)(&mut g, x, t);
    if pointwise {
        let p = dist::pointwise(&mut g, case.0, y, &args).unwrap();
        let sum = g.sum(p);
        g.add_target(sum).unwrap();
    } else {
        dist::tilde(&mut g, case.0, y, &args).unwrap();
    }
    let sq = g.unary(Fun1::Square, x);
    let s = g.sum(sq);
    let h = g.scalar(-0.5);
    let p = g.mul(h, s).unwrap();
    g.add_target(p).unwrap();
    g
}

/// The fused graph of `case` (summed, or per observation with `pointwise`) has its fused
/// node, equals the graph of elementary nodes in values, gradients and Hessians, and agrees
/// three ways.
fn check_fused_against_unfused(case: &LikCase, pointwise: bool) {
    let (w, t) = (vec![0.3, -0.8, 1.1, 0.45], 0.7);
    let s = 3;
    let big: Vec<f64> = (0..s)
        .flat_map(|c| w.iter().map(move |x| x - 0.4 * c as f64))
        .collect();
    let (fused, plain) = (
        lik_graph_as(case, false, pointwise),
        lik_graph_as(case, true, pointwise),
    );
    let is_fused = |op: &mvi::graph::Op| match op {
        mvi::graph::Op::LikSum(..) => !pointwise,
        mvi::graph::Op::LikPoint(..) => pointwise,
        _ => false,
    };
    let has = |g: &Graph| g.nodes.iter().any(|n| is_fused(&n.op));
    assert!(has(&fused) && !has(&plain), "{}: fusion switch", case.0);
    let (cf, cp) = (lift_consts::<f64>(&fused), lift_consts::<f64>(&plain));
    let rf = reverse::value_grad(&fused, &cf, &[t], &big, s);
    let rp = reverse::value_grad(&plain, &cp, &[t], &big, s);
    assert_close(case.0, &rf.values, &rp.values, EXACT_TOL);
    assert_close(case.0, &rf.grad_w, &rp.grad_w, EXACT_TOL);
    assert_close(case.0, &rf.grad_theta, &rp.grad_theta, EXACT_TOL);
    let (hf, hp) = (dual::hessian(&fused, &[t], &w), dual::hessian(&plain, &[t], &w));
    assert_close(case.0, hf.as_slice(), hp.as_slice(), EXACT_TOL);
    check_all(&fused, &[t], &w);
}

#[test]
fn fused_likelihoods_equal_the_unfused_graph_and_agree_three_ways() {
    for case in lik_cases() {
        check_fused_against_unfused(&case, false);
    }
}

#[test]
fn pointwise_fused_likelihoods_equal_the_unfused_nodes_and_agree_three_ways() {
    // categorical_logit is fused only summed (its pointwise form keeps elementary nodes)
    for case in lik_cases().into_iter().filter(|c| c.0 != "categorical_logit") {
        check_fused_against_unfused(&case, true);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn fused_likelihoods_agree_three_ways((w, t) in point()) {
        for case in lik_cases() {
            let g = lik_graph(&case, false);
            let r = std::panic::catch_unwind(|| check_all(&g, &[t], &w));
            prop_assert!(r.is_ok(), "fused `{}` failed at w = {:?}, theta = {}", case.0, w, t);
        }
    }
}

/// A case whose builder returns the scalar (or summed) log density over w ∈ R⁴, θ ∈ R¹.
type StanCase = (&'static str, Build);

fn mat(g: &mut Graph, rows: usize, cols: usize, entries: Vec<NodeId>) -> NodeId {
    g.pack(Shape::Matrix(rows, cols), entries).unwrap()
}

/// A lower-triangular 2×2 matrix with a positive diagonal from w (a Cholesky factor).
fn chol2(g: &mut Graph, x: NodeId) -> NodeId {
    let (a, b) = (pos_idx(g, x, 1), g_idx(g, x, 2));
    let (z, c) = (g.scalar(0.0), pos_idx(g, x, 3));
    mat(g, 2, 2, vec![a, b, z, c])
}

/// A symmetric positive definite 2×2 matrix B Bᵀ + I from w.
fn spd2(g: &mut Graph, x: NodeId, t: NodeId) -> NodeId {
    let items = vec![g_idx(g, x, 1), g_idx(g, x, 2), t, g_idx(g, x, 4)];
    let b = mat(g, 2, 2, items);
    let bt = g.transpose(b);
    let bb = g.matmul(b, bt).unwrap();
    let i = g.constant(Shape::Matrix(2, 2), vec![1.0, 0.0, 0.0, 1.0]);
    g.add_nodes(bb, i).unwrap()
}

fn data(g: &mut Graph, v: &[f64]) -> NodeId {
    g.constant(Shape::Vector(v.len()), v.to_vec())
}

fn lp(g: &mut Graph, name: &str, y: NodeId, args: &[NodeId]) -> NodeId {
    dist::lpdf(g, name, y, args).unwrap()
}

fn cdf(g: &mut Graph, name: &str, y: NodeId, args: &[NodeId], upper: bool) -> NodeId {
    dist::lcdf(g, name, y, args, upper).unwrap()
}

fn stan_fn(g: &mut Graph, name: &str, args: &[NodeId], shape: Shape) -> NodeId {
    mvi::graph::lower::stan_function(g, name, args, shape).unwrap()
}

/// Every distribution and function of LANGUAGE.md's second list, with every argument
/// depending on w or θ (θ > 0 at the test points).
fn stan_cases() -> Vec<StanCase> {
    vec![
        ("neg_binomial_2", |g, x, t| {
            let (y, mu) = (data(g, &[0.0, 3.0, 1.0, 6.0]), pos(g, x));
            lp(g, "neg_binomial_2", y, &[mu, t])
        }),
        ("neg_binomial_2_lcdf", |g, x, t| {
            let (y, mu) = (data(g, &[0.0, 3.0, 1.0, 6.0]), pos(g, x));
            cdf(g, "neg_binomial_2", y, &[mu, t], false)
        }),
        ("neg_binomial_2_lccdf", |g, x, t| {
            let (y, mu) = (data(g, &[0.0, 3.0, 1.0, 6.0]), pos(g, x));
            cdf(g, "neg_binomial_2", y, &[mu, t], true)
        }),
        ("neg_binomial_2_log", |g, x, t| {
            let y = data(g, &[0.0, 3.0, 1.0, 6.0]);
            lp(g, "neg_binomial_2_log", y, &[x, t])
        }),
        ("beta_binomial", |g, x, t| {
            let (y, n) = (data(g, &[2.0, 0.0, 7.0, 1.0]), data(g, &[5.0, 3.0, 7.0, 2.0]));
            let a = pos(g, x);
            lp(g, "beta_binomial", y, &[n, a, t])
        }),
        ("poisson_lcdf", |g, x, _| {
            let (y, l) = (data(g, &[0.0, 3.0, 1.0, 6.0]), pos(g, x));
            cdf(g, "poisson", y, &[l], false)
        }),
        ("poisson_lccdf", |g, x, _| {
            let (y, l) = (data(g, &[0.0, 3.0, 1.0, 6.0]), pos(g, x));
            cdf(g, "poisson", y, &[l], true)
        }),
        ("categorical", |g, x, _| {
            let (y, th) = (data(g, &[2.0, 4.0, 1.0]), g.softmax(x).unwrap());
            lp(g, "categorical", y, &[th])
        }),
        ("multinomial", |g, x, _| {
            let (y, th) = (data(g, &[2.0, 0.0, 3.0, 1.0]), g.softmax(x).unwrap());
            lp(g, "multinomial", y, &[th])
        }),
        ("dirichlet", |g, x, t| {
            let th = g.softmax(x).unwrap();
            let e = pos(g, x);
            let a = g.add_nodes(e, t).unwrap();
            lp(g, "dirichlet", th, &[a])
        }),
        ("lkj_corr_cholesky", |g, x, t| {
            let (a, b, c) = (pos_idx(g, x, 1), g_idx(g, x, 2), pos_idx(g, x, 3));
            let (d, z) = (g_idx(g, x, 4), g.scalar(0.0));
            let e = g.unary(Fun1::Exp, t);
            let l = mat(g, 3, 3, vec![a, b, d, z, c, t, z, z, e]);
            lp(g, "lkj_corr_cholesky", l, &[t])
        }),
        ("lkj_corr", |g, x, t| {
            // a correlation matrix, off-diagonal tanh(x₁ t): lkj_corr is −∞ off them
            let x1 = g_idx(g, x, 1);
            let x1t = g.mul(x1, t).unwrap();
            let (r, one) = (g.unary(Fun1::Tanh, x1t), g.scalar(1.0));
            let m = mat(g, 2, 2, vec![one, r, r, one]);
            let eta = pos_idx(g, x, 3);
            lp(g, "lkj_corr", m, &[eta])
        }),
        ("wishart_cholesky", |g, x, t| {
            let lw = chol2(g, x);
            let nu = {
                let v = g_idx(g, x, 4);
                g.add_nodes(t, v)
            }
            .unwrap();
            let nu = g.unary(Fun1::Exp, nu);
            let three = g.scalar(3.0);
            let nu = g.add_nodes(nu, three).unwrap();
            let ls = g.constant(Shape::Matrix(2, 2), vec![1.1, -0.3, 0.0, 0.9]);
            lp(g, "wishart_cholesky", lw, &[nu, ls])
        }),
        ("wishart_cholesky_scale", |g, x, t| {
            let ls = chol2(g, x);
            let nu = {
                let v = g.scalar(2.0);
                g.add_nodes(t, v)
            }
            .unwrap();
            let lw = g.constant(Shape::Matrix(2, 2), vec![1.3, 0.4, 0.0, 0.8]);
            lp(g, "wishart_cholesky", lw, &[nu, ls])
        }),
        ("inv_wishart_cholesky", |g, x, t| {
            let lw = chol2(g, x);
            let nu = {
                let v = g.scalar(2.0);
                g.add_nodes(t, v)
            }
            .unwrap();
            let ls = g.constant(Shape::Matrix(2, 2), vec![1.1, -0.3, 0.0, 0.9]);
            lp(g, "inv_wishart_cholesky", lw, &[nu, ls])
        }),
        ("inv_wishart_cholesky_scale", |g, x, t| {
            let ls = chol2(g, x);
            let nu = {
                let v = g.scalar(2.0);
                g.add_nodes(t, v)
            }
            .unwrap();
            let lw = g.constant(Shape::Matrix(2, 2), vec![1.3, 0.4, 0.0, 0.8]);
            lp(g, "inv_wishart_cholesky", lw, &[nu, ls])
        }),
        ("multi_student_t", |g, x, t| {
            let sig = spd2(g, x, t);
            let items = vec![t, g_idx(g, x, 3)];
            let mu = g.pack(Shape::Vector(2), items).unwrap();
            let nu = pos_idx(g, x, 4);
            let y = g.constant(Shape::Matrix(3, 2), vec![0.5, -1.0, 1.5, 0.2, 0.0, 2.0]);
            lp(g, "multi_student_t", y, &[nu, mu, sig])
        }),
        ("ordered_logistic", |g, x, t| {
            let y = data(g, &[1.0, 2.0, 3.0, 2.0]);
            let (lo, gap) = (g.neg(t), pos_idx(g, x, 1));
            let hi = g.add_nodes(t, gap).unwrap();
            let c = g.pack(Shape::Vector(2), vec![lo, hi]).unwrap();
            lp(g, "ordered_logistic", y, &[x, c])
        }),
        ("ordered_probit", |g, x, t| {
            let y = data(g, &[1.0, 2.0, 3.0, 2.0]);
            let (lo, gap) = (g.neg(t), pos_idx(g, x, 1));
            let hi = g.add_nodes(t, gap).unwrap();
            let c = g.pack(Shape::Vector(2), vec![lo, hi]).unwrap();
            lp(g, "ordered_probit", y, &[x, c])
        }),
        ("truncated_normal", |g, x, t| {
            // a parameter outcome inside bounds that move with w: y = L + (U − L)·σ(x₃)
            let (mu, s) = (g_idx(g, x, 1), pos_idx(g, x, 2));
            let lo = g.neg(t);
            let width = pos_idx(g, x, 4);
            let hi = g.add_nodes(lo, width).unwrap();
            let u = {
                let v = g_idx(g, x, 3);
                g.unary(Fun1::InvLogit, v)
            };
            let wu = g.mul(width, u).unwrap();
            let y = g.add_nodes(lo, wu).unwrap();
            dist::truncated(g, "normal", y, &[mu, s], (Some(lo), Some(hi)), false).unwrap()
        }),
        ("truncated_gamma_data", |g, x, t| {
            let y = data(g, &[0.5, 1.2, 2.9]);
            let a = pos_idx(g, x, 1);
            let lo = g.scalar(0.2);
            let hi = {
                let v = g.scalar(3.0);
                g.add_nodes(t, v)
            }
            .unwrap();
            dist::truncated(g, "gamma", y, &[a, t], (Some(lo), Some(hi)), false).unwrap()
        }),
        ("truncated_poisson", |g, x, _| {
            let y = data(g, &[1.0, 3.0, 2.0, 6.0]);
            let l = pos(g, x);
            let lo = g.scalar(1.0);
            dist::truncated(g, "poisson", y, &[l], (Some(lo), None), false).unwrap()
        }),
        ("log_mix", |g, x, t| {
            let th = g.unary(Fun1::InvLogit, t);
            let (a, b) = (g_idx(g, x, 1), g_idx(g, x, 2));
            stan_fn(g, "log_mix", &[th, a, b], Shape::Scalar)
        }),
        ("log_mix_vector", |g, x, _| {
            let th = g.softmax(x).unwrap();
            let sq = g.unary(Fun1::Square, x);
            let l = g.neg(sq);
            stan_fn(g, "log_mix", &[th, l], Shape::Scalar)
        }),
        ("log_mix_rows", |g, x, t| {
            let th = g.softmax(x).unwrap();
            let items = vec![
                t,
                g_idx(g, x, 1),
                g_idx(g, x, 2),
                g_idx(g, x, 3),
                g_idx(g, x, 4),
                t,
                t,
                g_idx(g, x, 1),
            ];
            let m = mat(g, 2, 4, items);
            stan_fn(g, "log_mix", &[th, m], Shape::Scalar)
        }),
        ("log_mix_weight_rows", |g, x, t| {
            // one row of weights per row of log densities: softmax(x) and softmax(t·x)
            let s1 = g.softmax(x).unwrap();
            let tx = g.mul(x, t).unwrap();
            let s2 = g.softmax(tx).unwrap();
            let w: Vec<NodeId> = (1..=4).flat_map(|k| [g_idx(g, s1, k), g_idx(g, s2, k)]).collect();
            let th = g.pack(Shape::Matrix(2, 4), w).unwrap();
            let sq = g.unary(Fun1::Square, x);
            let l: Vec<NodeId> = (1..=4).flat_map(|k| [g_idx(g, x, k), g_idx(g, sq, k)]).collect();
            let m = g.pack(Shape::Matrix(2, 4), l).unwrap();
            stan_fn(g, "log_mix", &[th, m], Shape::Scalar)
        }),
        ("log_diff_exp", |g, x, t| {
            let a = pos(g, x);
            let b = g.sub(x, a).unwrap();
            let b = g.mul(b, t).unwrap();
            stan_fn(g, "log_diff_exp", &[x, b], Shape::Vector(4))
        }),
        ("log1m_exp", |g, x, _| {
            let n = pos(g, x);
            let n = g.neg(n);
            stan_fn(g, "log1m_exp", &[n], Shape::Vector(4))
        }),
        ("Phi", |g, x, t| {
            let a = g.mul(x, t).unwrap();
            stan_fn(g, "Phi", &[a], Shape::Vector(4))
        }),
        ("Phi_approx", |g, x, _| {
            stan_fn(g, "Phi_approx", &[x], Shape::Vector(4))
        }),
        ("inv_cloglog", |g, x, _| {
            stan_fn(g, "inv_cloglog", &[x], Shape::Vector(4))
        }),
        ("lbeta", |g, x, t| {
            let a = pos(g, x);
            stan_fn(g, "lbeta", &[a, t], Shape::Vector(4))
        }),
        ("lchoose", |g, x, t| {
            let a = pos(g, x);
            let n = g.add_nodes(a, t).unwrap();
            stan_fn(g, "lchoose", &[n, a], Shape::Vector(4))
        }),
        ("cumulative_sum", |g, x, _| {
            let c = stan_fn(g, "cumulative_sum", &[x], Shape::Vector(4));
            g.unary(Fun1::Square, c)
        }),
        ("cumulative_sum_of_w_and_theta", |g, x, t| {
            // the running sums carry both w and θ (the θ path's tangents), squared
            let xt = g.mul(x, t).unwrap();
            let v = g.add_nodes(xt, x).unwrap();
            let c = stan_fn(g, "cumulative_sum", &[v], Shape::Vector(4));
            let s = g.unary(Fun1::Sin, c);
            g.mul(s, c).unwrap()
        }),
        ("head_tail_segment_reverse", |g, x, t| {
            let h = stan_fn(g, "head", &[x, t], Shape::Vector(2));
            let tl = stan_fn(g, "tail", &[x, t], Shape::Vector(2));
            let two = g.scalar(2.0);
            let s = stan_fn(g, "segment", &[x, two, two], Shape::Vector(2));
            let r = stan_fn(g, "reverse", &[x], Shape::Vector(4));
            let hs = g.mul(h, s).unwrap();
            let p = g.mul(hs, tl).unwrap();
            let r2 = g.mul(r, x).unwrap();
            let a = g.sum(p);
            let b = g.sum(r2);
            g.add_nodes(a, b).unwrap()
        }),
        ("dot_self", |g, x, _| stan_fn(g, "dot_self", &[x], Shape::Scalar)),
        ("quad_form", |g, x, t| {
            let a = spd2(g, x, t);
            let b = chol2(g, x);
            let v = g.slice(x, 2, 3).unwrap();
            let q = stan_fn(g, "quad_form", &[a, b], Shape::Matrix(2, 2));
            let qv = stan_fn(g, "quad_form", &[a, v], Shape::Scalar);
            let s = g.sum(q);
            g.add_nodes(s, qv).unwrap()
        }),
        ("diag_pre_post_multiply", |g, x, t| {
            let m = spd2(g, x, t);
            let v = g.slice(x, 1, 2).unwrap();
            let a = stan_fn(g, "diag_pre_multiply", &[v, m], Shape::Matrix(2, 2));
            let b = stan_fn(g, "diag_post_multiply", &[a, v], Shape::Matrix(2, 2));
            g.unary(Fun1::Square, b)
        }),
        ("crossprods", |g, x, t| {
            let items = vec![
                g_idx(g, x, 1),
                g_idx(g, x, 2),
                t,
                g_idx(g, x, 4),
                g_idx(g, x, 3),
                t,
            ];
            let m = mat(g, 2, 3, items);
            let a = stan_fn(g, "multiply_lower_tri_self_transpose", &[m], Shape::Matrix(2, 2));
            let b = stan_fn(g, "tcrossprod", &[m], Shape::Matrix(2, 2));
            let c = stan_fn(g, "crossprod", &[m], Shape::Matrix(3, 3));
            let (sa, sb, sc) = (g.sum(a), g.sum(b), g.sum(c));
            let ab = g.mul(sa, sb).unwrap();
            g.add_nodes(ab, sc).unwrap()
        }),
        ("to_matrix", |g, x, t| {
            let m = stan_fn(g, "to_matrix", &[x], Shape::Matrix(2, 2));
            let mt = g.transpose(m);
            let p = g.matmul(m, mt).unwrap();
            g.mul(p, t).unwrap()
        }),
        ("gp_exp_quad_cov", |g, x, t| {
            let a = pos_idx(g, x, 1);
            let k = stan_fn(g, "gp_exp_quad_cov", &[x, a, t], Shape::Matrix(4, 4));
            let v = g.unary(Fun1::Sin, x);
            let kv = g.matmul(k, v).unwrap();
            g.dot(v, kv).unwrap()
        }),
    ]
}

/// The continuous families of the second list as `~` on a constrained view of w, with
/// their log CDFs (each argument from w or θ).
fn stan_continuous_cases() -> Vec<DistCase> {
    vec![
        (
            "weibull",
            |g, x, t| vec![pos_idx(g, x, 1), t],
            None,
            Constraint::lower(0.0),
        ),
        (
            "gumbel",
            |g, x, t| vec![g_idx(g, x, 1), t],
            None,
            Constraint::NONE,
        ),
        (
            "pareto",
            |g, _, t| {
                vec![
                    {
                        let v = g.scalar(0.1);
                        g.mul(t, v)
                    }
                    .unwrap(),
                    t,
                ]
            },
            None,
            Constraint::lower(0.2),
        ),
        (
            "skew_normal",
            |g, x, t| vec![t, pos_idx(g, x, 1), g_idx(g, x, 2)],
            None,
            Constraint::NONE,
        ),
        (
            "von_mises",
            |g, x, t| vec![g_idx(g, x, 1), t],
            None,
            Constraint::NONE,
        ),
        ("chi_square", |_, _, t| vec![t], None, Constraint::lower(0.0)),
        ("inv_chi_square", |_, _, t| vec![t], None, Constraint::lower(0.0)),
        (
            "scaled_inv_chi_square",
            |g, x, t| vec![t, pos_idx(g, x, 1)],
            None,
            Constraint::lower(0.0),
        ),
        (
            "exp_mod_normal",
            |g, x, t| vec![g_idx(g, x, 1), t, pos_idx(g, x, 2)],
            None,
            Constraint::NONE,
        ),
    ]
}

/// The CDFs of one continuous case: the outcome view as in [`dist_graph`], lcdf + lccdf.
fn stan_cdf_graph(case: &DistCase) -> Option<Graph> {
    let (name, args, _, c) = case;
    dist::lookup(name)?.lcdf?;
    let mut g = Graph::new(4, 1);
    let x = g.param_slice(0, Shape::Vector(4), &Constraint::NONE).unwrap();
    let t = g.hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
    let a = args(&mut g, x, t);
    let raw = g.slice(x, 1, 4).unwrap();
    let y = constrain_node(&mut g, raw, c);
    let lo = dist::lcdf(&mut g, name, y, &a, false).unwrap();
    let hi = dist::lcdf(&mut g, name, y, &a, true).unwrap();
    let s = g.add_nodes(lo, hi).unwrap();
    g.add_target(s).unwrap();
    let sq = g.unary(Fun1::Square, x);
    let ss = g.sum(sq);
    let h = g.scalar(-0.5);
    let p = g.mul(h, ss).unwrap();
    g.add_target(p).unwrap();
    Some(g)
}

/// Two points: the fixed one of the other checks and one with the signs turned.
const STAN_POINTS: [([f64; 4], f64); 2] = [([0.3, -0.8, 1.1, 0.45], 0.7), ([-0.6, 0.4, -1.2, 0.9], 1.3)];

#[test]
fn stan_distributions_and_functions_agree_three_ways() {
    let mut failed = Vec::new();
    for (w, t) in STAN_POINTS {
        for (name, build) in stan_cases() {
            let g = graph_with(4, build);
            if std::panic::catch_unwind(|| check_all(&g, &[t], &w)).is_err() {
                failed.push(name);
            }
        }
        for case in stan_continuous_cases() {
            let name = case.0;
            if let Some(cg) = stan_cdf_graph(&case) {
                if std::panic::catch_unwind(|| check_all(&cg, &[t], &w)).is_err() {
                    failed.push(name);
                }
            }
            let g = dist_graph(case);
            if std::panic::catch_unwind(|| check_all(&g, &[t], &w)).is_err() {
                failed.push(name);
            }
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// c₁ ∘ v + c₀ for constant vectors (c₀ omitted when `None`).
fn affine_vec(g: &mut Graph, v: NodeId, c1: &[f64], c0: Option<&[f64]>) -> NodeId {
    let a = data(g, c1);
    let av = g.mul(a, v).unwrap();
    match c0 {
        Some(c) => {
            let b = data(g, c);
            g.add_nodes(av, b).unwrap()
        }
        None => av,
    }
}

/// The log CDF plus the log complementary CDF of a two-argument special function.
fn both2(g: &mut Graph, f: Fun2, g2: Fun2, a: NodeId, b: NodeId) -> NodeId {
    let l = g.binary(f, a, b).unwrap();
    let u = g.binary(g2, a, b).unwrap();
    let s = g.add_nodes(l, u).unwrap();
    g.sum(s)
}

/// The CDFs of `skew_normal`, `von_mises`, `binomial` and `beta_binomial` in every branch of
/// their algorithms, and truncation by each, every argument depending on w or θ.
fn new_cdf_cases() -> Vec<StanCase> {
    vec![
        ("skew_normal_cdf_tails_and_bulk", |g, x, t| {
            // z < 0 and z > 0 with shapes of both signs, small and large
            let z = affine_vec(g, x, &[0.1; 4], Some(&[-6.0, -0.7, 0.4, 5.0]));
            let ones = data(g, &[1.0; 4]);
            let tv = g.binary(Fun2::Mul, t, ones).unwrap();
            let a = affine_vec(g, tv, &[-8.0, 1.0, -2.0, 40.0], None);
            both2(g, Fun2::LogSkewNormalCdf, Fun2::LogSkewNormalCcdf, z, a)
        }),
        ("skew_normal_cdf_near_zero", |g, x, t| {
            // |z|(1 + |α|) on both sides of the Taylor polynomial's 1e-5
            let z = affine_vec(g, x, &[1e-6, 3e-6, 1e-5, 2e-6], None);
            let ones = data(g, &[1.0; 4]);
            let tv = g.binary(Fun2::Mul, t, ones).unwrap();
            let a = affine_vec(g, tv, &[-3.0, 0.5, 2.0, 0.1], None);
            both2(g, Fun2::LogSkewNormalCdf, Fun2::LogSkewNormalCcdf, z, a)
        }),
        ("truncated_skew_normal", |g, x, t| {
            let y = data(g, &[-0.5, 0.3, 1.2, 2.0]);
            let (xi, om) = (g_idx(g, x, 1), pos_idx(g, x, 2));
            let al = {
                let a = g_idx(g, x, 3);
                let k = g.scalar(2.0);
                g.mul(k, a).unwrap()
            };
            let lo = {
                let one = g.scalar(-0.6);
                g.sub(one, t).unwrap()
            };
            let hi = g.scalar(3.0);
            dist::truncated(g, "skew_normal", y, &[xi, om, al], (Some(lo), Some(hi)), false).unwrap()
        }),
        ("von_mises_cdf_series_blend_and_normal", |g, x, t| {
            // κ in the series (< 49), the blend (49..50) and the normal approximation (≥ 50);
            // outcomes within three sds of μ, where Stan's algorithm (absolute accuracy, by
            // cancellation in the series) keeps the relative accuracy this check needs
            let y = affine_vec(g, x, &[0.1; 4], Some(&[-2.0, 0.3, 0.0, -0.2]));
            let mu = {
                let m = g_idx(g, x, 1);
                let k = g.scalar(0.5);
                g.mul(k, m).unwrap()
            };
            let ones = data(g, &[1.0; 4]);
            let tv = g.binary(Fun2::Mul, t, ones).unwrap();
            let kappa = affine_vec(g, tv, &[1.0, 10.0, 0.5, 80.0], Some(&[0.0, 0.0, 49.3, 0.0]));
            let l = cdf(g, "von_mises", y, &[mu, kappa], false);
            let u = cdf(g, "von_mises", y, &[mu, kappa], true);
            g.add_nodes(l, u).unwrap()
        }),
        ("truncated_von_mises", |g, x, t| {
            let y = data(g, &[-1.0, 0.2, 1.5, 2.8]);
            let (mu, k) = (g_idx(g, x, 1), pos_idx(g, x, 2));
            let lo = g.neg(t);
            let lo = {
                let c = g.scalar(-1.2);
                g.add_nodes(lo, c).unwrap()
            };
            let hi = g.scalar(3.0);
            dist::truncated(g, "von_mises", y, &[mu, k], (Some(lo), Some(hi)), false).unwrap()
        }),
        ("binomial_cdfs", |g, x, _| {
            let k = data(g, &[0.0, 3.0, 9.0, 7.0]);
            let (n, p) = (g.scalar(10.0), g.unary(Fun1::InvLogit, x));
            let l = cdf(g, "binomial", k, &[n, p], false);
            let u = cdf(g, "binomial", k, &[n, p], true);
            g.add_nodes(l, u).unwrap()
        }),
        ("truncated_binomial", |g, x, _| {
            let y = data(g, &[1.0, 3.0, 2.0, 6.0]);
            let (n, p) = (g.scalar(10.0), {
                let v = g_idx(g, x, 1);
                g.unary(Fun1::InvLogit, v)
            });
            let (lo, hi) = (g.scalar(1.0), g.scalar(8.0));
            dist::truncated(g, "binomial", y, &[n, p], (Some(lo), Some(hi)), false).unwrap()
        }),
        ("beta_binomial_cdfs", |g, x, t| {
            let k = data(g, &[0.0, 3.0, 9.0, 7.0]);
            let (n, a) = (g.scalar(10.0), g.unary(Fun1::Exp, x));
            let l = cdf(g, "beta_binomial", k, &[n, a, t], false);
            let u = cdf(g, "beta_binomial", k, &[n, a, t], true);
            g.add_nodes(l, u).unwrap()
        }),
        ("truncated_beta_binomial", |g, x, t| {
            let y = data(g, &[1.0, 3.0, 2.0, 6.0]);
            let (n, a) = (g.scalar(10.0), pos_idx(g, x, 1));
            let (lo, hi) = (g.scalar(1.0), g.scalar(8.0));
            dist::truncated(g, "beta_binomial", y, &[n, a, t], (Some(lo), Some(hi)), false).unwrap()
        }),
    ]
}

#[test]
fn skew_normal_von_mises_and_binomial_cdfs_agree_three_ways() {
    let mut failed = Vec::new();
    for (w, t) in STAN_POINTS {
        for (name, build) in new_cdf_cases() {
            let g = graph_with(4, build);
            if let Err(e) = std::panic::catch_unwind(|| check_all(&g, &[t], &w)) {
                let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
                failed.push(format!("{name} at {w:?}: {msg}"));
            }
        }
    }
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
}

// ------------------------------------------------------------ constrained types

/// Each constrained type of size k as a `param` over w (its log-Jacobian in the target) and
/// as a `hyper` over θ, with the target Σ cᵢ xᵢ + Σ xᵢ tᵢ + log-Jacobian, so every entry of
/// the value, and the θ path, carry a derivative.
fn typed_graph(kind: mvi::graph::transform::TypeKind, k: usize) -> Graph {
    let n = (mvi::graph::transform::entry(kind).free)(k);
    let mut g = Graph::new(n, n);
    let x = g.typed_slice(0, kind, k, false).unwrap();
    let t = g.typed_slice(0, kind, k, true).unwrap();
    let size = g.shape(x).size();
    let c = g.constant(g.shape(x), (0..size).map(|i| 0.4 - 0.17 * i as f64).collect());
    let cx = g.binary(Fun2::Mul, c, x).unwrap();
    let xt = g.binary(Fun2::Mul, x, t).unwrap();
    let s = g.binary(Fun2::Add, cx, xt).unwrap();
    let s = g.sum(s);
    g.add_target(s).unwrap();
    g
}

/// The free coordinates of a constrained type at a point: `raw` repeated.
fn typed_point(kind: mvi::graph::transform::TypeKind, k: usize, raw: &[f64]) -> Vec<f64> {
    let n = (mvi::graph::transform::entry(kind).free)(k);
    raw.iter().cycle().take(n).copied().collect()
}

#[test]
fn every_constrained_type_agrees_three_ways_at_fixed_points() {
    let raw = [0.3, -0.8, 1.1, 0.45, -0.2, 0.9];
    let mut failed = Vec::new();
    for e in mvi::graph::transform::TYPES {
        for k in e.min_size.max(2)..=4 {
            let g = typed_graph(e.kind, k);
            let w = typed_point(e.kind, k, &raw);
            let t: Vec<f64> = w.iter().map(|v| 0.5 - v).collect();
            let ok = std::panic::catch_unwind(|| {
                check_all(&g, &t, &w);
                check_batched(&g, &t, &w);
            });
            if ok.is_err() {
                failed.push(format!("{}[{k}]", e.kind.name()));
            }
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn every_constrained_type_agrees_three_ways(
        t_idx in 0usize..9,
        k in 2usize..=4,
        raw in prop::collection::vec(-1.5f64..1.5, 6),
    ) {
        let e = &mvi::graph::transform::TYPES[t_idx];
        let g = typed_graph(e.kind, k.max(e.min_size));
        let w = typed_point(e.kind, k.max(e.min_size), &raw);
        let t: Vec<f64> = w.iter().map(|v| 0.3 * v - 0.1).collect();
        let r = std::panic::catch_unwind(|| check_all(&g, &t, &w));
        prop_assert!(r.is_ok(), "{}[{}] failed at w = {:?}", e.kind.name(), k, w);
    }
}
