//! Reverse accumulation over a forward [`Tape`]: one sweep from the targets back to w and θ,
//! batched over the S columns, each operation's adjoint rule written once, generic over the
//! scalar (so running it on `Dual64` values gives forward-over-reverse H·v).
//!
//! Input: a graph, θ, W (D×S). Output: [`Grads`] — the S values, ∇_w (D×S) and ∇_θ (P×S).
//! Cost: one forward sweep and one reverse sweep of about the same price.

use std::borrow::Cow;

use crate::graph::eval::{argext, forward, int_exponent, inv_logit, tri_solve_t, Tape};
use crate::graph::{Fun1, Fun2, Graph, NodeId, Op, GATHER_ZERO};

use super::Scalar;

/// Values and gradients at S batch columns.
#[derive(Debug, Clone)]
pub struct Grads<T> {
    /// log p̃ per column.
    pub values: Vec<T>,
    /// ∇_w, D×S column-major.
    pub grad_w: Vec<T>,
    /// ∇_θ, P×S column-major.
    pub grad_theta: Vec<T>,
}

/// Value and gradient of the log joint at the S columns of `w` (D×S) by one forward and one
/// reverse sweep.
pub fn value_grad<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
) -> Grads<T> {
    let tape = forward(graph, consts, theta, w, s);
    let values = tape.target_values();
    let (grad_w, grad_theta) = reverse(&tape);
    Grads {
        values,
        grad_w,
        grad_theta,
    }
}

/// The reverse sweep: adjoints of w and θ given a forward tape, with output adjoint 1.
pub fn reverse<T: Scalar>(tape: &Tape<'_, T>) -> (Vec<T>, Vec<T>) {
    let g = tape.graph;
    let s = tape.s;
    let mut adj: Vec<Vec<T>> = g
        .nodes
        .iter()
        .map(|n| match n.op {
            Op::Const(_) => Vec::new(),
            _ => vec![T::zero(); n.shape.size() * s],
        })
        .collect();
    for &t in &g.targets {
        for v in adj[t.0].iter_mut() {
            *v += T::one();
        }
    }
    let mut gw = vec![T::zero(); g.dim * s];
    let mut gt = vec![T::zero(); g.theta_dim * s];
    for k in (0..g.nodes.len()).rev() {
        let (lower, upper) = adj.split_at_mut(k);
        let ybar = &upper[0];
        if ybar.is_empty() {
            continue;
        }
        let size = g.nodes[k].shape.size();
        match &g.nodes[k].op {
            Op::Const(_) => {}
            Op::Param { offset } => scatter_input(ybar, &mut gw, g.dim, *offset, size, s),
            Op::Hyper { offset } => scatter_input(ybar, &mut gt, g.theta_dim, *offset, size, s),
            op => backprop(tape, k, op, ybar, lower),
        }
    }
    (gw, gt)
}

fn scatter_input<T: Scalar>(ybar: &[T], out: &mut [T], d: usize, offset: usize, n: usize, s: usize) {
    for c in 0..s {
        for i in 0..n {
            out[c * d + offset + i] += ybar[i + c * n];
        }
    }
}

/// Add node k's contribution to its inputs' adjoints.
fn backprop<T: Scalar>(tape: &Tape<'_, T>, k: usize, op: &Op, ybar: &[T], adj: &mut [Vec<T>]) {
    let s = tape.s;
    let y = &tape.vals[k];
    let shape = tape.graph.nodes[k].shape;
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => {}
        Op::Unary(f, a) => {
            let x = tape.arg(*a);
            let xbar = &mut adj[a.0];
            for j in 0..y.len() {
                xbar[j] += ybar[j] * d_unary(*f, x.data[j], y[j]);
            }
        }
        Op::Binary(f, a, b) => back_binary(tape, *f, *a, *b, y, ybar, adj),
        Op::MatMul(a, b) => back_matmul(tape, *a, *b, shape.rows(), shape.cols(), ybar, adj),
        Op::Transpose(a) => {
            let (r, c) = (shape.rows(), shape.cols());
            let xbar = &mut adj[a.0];
            for b in 0..s {
                for j in 0..c {
                    for i in 0..r {
                        xbar[b * r * c + j + i * c] += ybar[b * r * c + i + j * r];
                    }
                }
            }
        }
        Op::Gather(a, idx) => {
            let na = tape.arg(*a).size;
            let n = idx.len();
            let xbar = &mut adj[a.0];
            if xbar.is_empty() {
                return;
            }
            for c in 0..s {
                for (i, &m) in idx.iter().enumerate() {
                    if m != GATHER_ZERO {
                        xbar[m as usize + c * na] += ybar[i + c * n];
                    }
                }
            }
        }
        Op::Pack(ids) => {
            let n = ids.len();
            for (i, id) in ids.iter().enumerate() {
                let xbar = &mut adj[id.0];
                if xbar.is_empty() {
                    continue;
                }
                for c in 0..s {
                    xbar[c] += ybar[i + c * n];
                }
            }
        }
        Op::Sum(a) => back_reduce(tape, *a, ybar, adj, |_, _, _| T::one()),
        Op::LogSumExp(a) => back_reduce(tape, *a, ybar, adj, |x, i, c| (x[i] - y[c]).exp()),
        Op::Max(a) => back_reduce(tape, *a, ybar, adj, |x, i, _| pick(argext(x, true) == i)),
        Op::Min(a) => back_reduce(tape, *a, ybar, adj, |x, i, _| pick(argext(x, false) == i)),
        Op::LogSumExpRows(a) => {
            let x = tape.arg(*a);
            let rows = shape.rows();
            let cols = x.size / rows.max(1);
            let xbar = &mut adj[a.0];
            for c in 0..s {
                for j in 0..cols {
                    for i in 0..rows {
                        let e = (x.at(i + j * rows, c) - y[i + c * rows]).exp();
                        xbar[i + j * rows + c * x.size] += ybar[i + c * rows] * e;
                    }
                }
            }
        }
        Op::Cholesky(a) => back_cholesky(y, ybar, &mut adj[a.0], shape.rows(), s),
        Op::TriSolve(l, b) => back_tri_solve(tape, *l, *b, y, ybar, adj, shape.rows(), shape.cols()),
        Op::Support { .. } => {}
    }
}

fn pick<T: Scalar>(yes: bool) -> T {
    if yes {
        T::one()
    } else {
        T::zero()
    }
}

/// Adjoint of a reduction to one scalar per column: x̄ᵢ += ȳ · ∂y/∂xᵢ.
fn back_reduce<T: Scalar>(
    tape: &Tape<'_, T>,
    a: NodeId,
    ybar: &[T],
    adj: &mut [Vec<T>],
    partial: impl Fn(&[T], usize, usize) -> T,
) {
    let x = tape.arg(a);
    let xbar = &mut adj[a.0];
    for c in 0..tape.s {
        let xc = x.col(c);
        for i in 0..x.size {
            xbar[i + c * x.size] += ybar[c] * partial(xc, i, c);
        }
    }
}

/// ∂f/∂x in terms of x and y = f(x).
fn d_unary<T: Scalar>(f: Fun1, x: T, y: T) -> T {
    let one = T::one();
    match f {
        Fun1::Neg => -one,
        Fun1::Exp => y,
        Fun1::Log => x.recip(),
        Fun1::Log1p => (one + x).recip(),
        Fun1::Expm1 => y + one,
        Fun1::Sqrt => (y + y).recip(),
        Fun1::Square => x + x,
        Fun1::Abs => {
            if x.real() < 0.0 {
                -one
            } else {
                one
            }
        }
        Fun1::Sin => x.cos(),
        Fun1::Cos => -x.sin(),
        Fun1::Tanh => one - y * y,
        Fun1::Atan => (one + x * x).recip(),
        Fun1::InvLogit => y * (one - y),
        Fun1::Logit => (x * (one - x)).recip(),
        // 1 − σ(x) = −expm1(log σ(x)): one expm1 of the stored value, no division
        Fun1::LogInvLogit => -y.exp_m1(),
        Fun1::Log1mInvLogit => -inv_logit(x),
        Fun1::Lgamma => x.digamma(),
        Fun1::LogPhi => x.dlog_phi(),
    }
}

/// (∂f/∂a, ∂f/∂b) in terms of a, b and y = f(a, b).
fn d_binary<T: Scalar>(f: Fun2, a: T, b: T, y: T, b_const: bool) -> (T, T) {
    let (one, zero) = (T::one(), T::zero());
    match f {
        Fun2::Add => (one, one),
        Fun2::Sub => (one, -one),
        Fun2::Mul => (b, a),
        Fun2::Div => (b.recip(), -y / b),
        Fun2::Pow => match int_exponent(b, b_const) {
            Some(0) => (zero, zero),
            Some(k) => (a.powi(k - 1) * T::from(f64::from(k)), zero),
            None => (b * a.powd(b - one), y * a.ln()),
        },
        Fun2::Min => {
            if b.real() < a.real() {
                (zero, one)
            } else {
                (one, zero)
            }
        }
        Fun2::Max => {
            if b.real() > a.real() {
                (zero, one)
            } else {
                (one, zero)
            }
        }
    }
}

fn back_binary<T: Scalar>(
    tape: &Tape<'_, T>,
    f: Fun2,
    a: NodeId,
    b: NodeId,
    y: &[T],
    ybar: &[T],
    adj: &mut [Vec<T>],
) {
    let (aa, bb) = (tape.arg(a), tape.arg(b));
    let n = y.len() / tape.s;
    // one pass per operand that needs an adjoint (constants need none), so the common
    // constant-times-batched case computes each partial once
    for (target, first) in [(a, true), (b, false)] {
        if adj[target.0].is_empty() {
            continue;
        }
        let size = if first { aa.size } else { bb.size };
        let out = &mut adj[target.0];
        for c in 0..tape.s {
            for i in 0..n {
                let ia = if aa.size == 1 { 0 } else { i };
                let ib = if bb.size == 1 { 0 } else { i };
                let (da, db) = d_binary(f, aa.at(ia, c), bb.at(ib, c), y[i + c * n], !bb.batched);
                let (k, d) = if first { (ia, da) } else { (ib, db) };
                out[k + c * size] += ybar[i + c * n] * d;
            }
        }
    }
}

/// C = A·B: Ā += C̄ Bᵀ, B̄ += Aᵀ C̄ (one product over the batch when A is constant).
#[allow(clippy::too_many_arguments)]
fn back_matmul<T: Scalar>(
    tape: &Tape<'_, T>,
    a: NodeId,
    b: NodeId,
    m: usize,
    n: usize,
    ybar: &[T],
    adj: &mut [Vec<T>],
) {
    let (aa, bb) = (tape.arg(a), tape.arg(b));
    let k = aa.size / m;
    let s = tape.s;
    if !adj[b.0].is_empty() {
        if aa.batched {
            for c in 0..s {
                let out = &mut adj[b.0][c * k * n..(c + 1) * k * n];
                T::gemm(
                    true,
                    false,
                    k,
                    n,
                    m,
                    aa.col(c),
                    &ybar[c * m * n..(c + 1) * m * n],
                    out,
                );
            }
        } else {
            T::gemm(true, false, k, n * s, m, aa.data, ybar, &mut adj[b.0]);
        }
    }
    if !adj[a.0].is_empty() {
        for c in 0..s {
            let out = &mut adj[a.0][c * m * k..(c + 1) * m * k];
            T::gemm(
                false,
                true,
                m,
                k,
                n,
                &ybar[c * m * n..(c + 1) * m * n],
                bb.col(c),
                out,
            );
        }
    }
}

/// Adjoint of the Cholesky factor (input treated as symmetric):
/// Ā = ½(S + Sᵀ), S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, Φ = lower triangle with the diagonal halved.
fn back_cholesky<T: Scalar>(y: &[T], ybar: &[T], abar: &mut [T], n: usize, s: usize) {
    if abar.is_empty() {
        return;
    }
    let nn = n * n;
    for c in 0..s {
        let l = &y[c * nn..(c + 1) * nn];
        let mut lbar = ybar[c * nn..(c + 1) * nn].to_vec();
        for j in 0..n {
            for i in 0..j {
                lbar[i + j * n] = T::zero();
            }
        }
        let mut p = vec![T::zero(); nn];
        T::gemm(true, false, n, n, n, l, &lbar, &mut p);
        for j in 0..n {
            p[j + j * n] *= T::from(0.5);
            for i in 0..j {
                p[i + j * n] = T::zero();
            }
        }
        // S = L⁻ᵀ P L⁻¹ = L⁻ᵀ (L⁻ᵀ Pᵀ)ᵀ
        let q = tri_solve_t(l, &transpose(&p, n), n, n);
        let sm = tri_solve_t(l, &transpose(&q, n), n, n);
        for j in 0..n {
            for i in 0..n {
                abar[c * nn + i + j * n] += T::from(0.5) * (sm[i + j * n] + sm[j + i * n]);
            }
        }
    }
}

fn transpose<T: Scalar>(x: &[T], n: usize) -> Vec<T> {
    let mut out = vec![T::zero(); n * n];
    for j in 0..n {
        for i in 0..n {
            out[j + i * n] = x[i + j * n];
        }
    }
    out
}

/// X = L⁻¹B: B̄ += L⁻ᵀ X̄, L̄ −= tril(L⁻ᵀ X̄ Xᵀ).
#[allow(clippy::too_many_arguments)]
fn back_tri_solve<T: Scalar>(
    tape: &Tape<'_, T>,
    l: NodeId,
    b: NodeId,
    x: &[T],
    xbar: &[T],
    adj: &mut [Vec<T>],
    m: usize,
    n: usize,
) {
    let la = tape.arg(l);
    for c in 0..tape.s {
        let bbar = tri_solve_t(la.col(c), &xbar[c * m * n..(c + 1) * m * n], m, n);
        if !adj[b.0].is_empty() {
            for (o, v) in adj[b.0][c * m * n..(c + 1) * m * n].iter_mut().zip(&bbar) {
                *o += *v;
            }
        }
        if !adj[l.0].is_empty() {
            let xc = &x[c * m * n..(c + 1) * m * n];
            for j in 0..m {
                for i in j..m {
                    let mut v = T::zero();
                    for q in 0..n {
                        v += bbar[i + q * m] * xc[j + q * m];
                    }
                    adj[l.0][c * m * m + i + j * m] -= v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::eval::lift_consts;
    use crate::graph::{Constraint, Shape};
    use approx::assert_relative_eq;

    #[test]
    fn gradient_of_quadratic_is_linear() {
        let mut g = Graph::new(3, 0);
        let x = g.param_slice(0, Shape::Vector(3), &Constraint::NONE).unwrap();
        let sq = g.unary(Fun1::Square, x);
        let s = g.sum(sq);
        g.add_target(s).unwrap();
        let consts = lift_consts::<f64>(&g);
        let r = value_grad(&g, &consts, &[], &[1.0, -2.0, 0.5, 3.0, 0.0, 1.0], 2);
        assert_relative_eq!(r.values[0], 5.25, epsilon = 1e-14);
        assert_relative_eq!(r.grad_w[1], -4.0, epsilon = 1e-14);
        assert_relative_eq!(r.grad_w[3], 6.0, epsilon = 1e-14);
    }
}
