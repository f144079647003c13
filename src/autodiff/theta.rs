//! ∇_θ per batch column through the nodes that do not depend on w, without a per-column
//! reverse sweep over them.
//!
//! Nodes computed from θ and data alone (RBF features with a hyperparameter width, a prior
//! scale) have one value for all columns, so the map from their adjoint at column c to
//! ∇_θ at column c is the same linear map Jᵀ for every column. With P (the length of θ)
//! small, the Jacobians J_v = dv/dθ of these nodes are computed once by forward tangents (P
//! directions, unbatched), and ∇_θ = Σ_v J_vᵀ V̄ over the "frontier" nodes v — the θ-only
//! nodes read by a node that depends on w, or added to the target — with V̄ (size × S) their
//! adjoints from the batched part of the reverse sweep: one product per frontier node.
//!
//! Input: a forward [`Tape`]. Output: the tangents of every θ-only node. Graphs whose θ-only
//! part holds an operation without a tangent rule here (Cholesky, triangular solves) use
//! the per-column reverse sweep instead ([`supported`]).

use crate::graph::eval::{argext, Tape};
use crate::graph::{NodeId, Op, GATHER_ZERO};

use super::reverse::{d_binary, d_ternary, d_unary};
use super::Scalar;
use crate::graph::eval::broadcast_at;

/// Whether every θ-only node has a tangent rule here.
pub fn supported<T: Scalar>(tape: &Tape<'_, T>) -> bool {
    tape.graph
        .nodes
        .iter()
        .enumerate()
        .all(|(k, n)| tape.is_batched(NodeId(k)) || !matches!(n.op, Op::Cholesky(_) | Op::TriSolve(..)))
}

/// dv/dθ for every θ-only node v, as a (size × P) column-major block; empty for constants
/// and for nodes that depend on w.
pub fn tangents<T: Scalar>(tape: &Tape<'_, T>) -> Vec<Vec<T>> {
    let g = tape.graph;
    let p = g.theta_dim;
    let mut out: Vec<Vec<T>> = Vec::with_capacity(g.nodes.len());
    for (k, node) in g.nodes.iter().enumerate() {
        let n = node.shape.size();
        let t = match &node.op {
            _ if tape.is_batched(NodeId(k)) => Vec::new(),
            Op::Const(_) | Op::Param { .. } => Vec::new(),
            Op::Hyper { offset } => {
                let mut t = vec![T::zero(); n * p];
                for i in 0..n {
                    t[i + (offset + i) * n] = T::one();
                }
                t
            }
            op => tangent_op(tape, &out, k, op, n, p),
        };
        out.push(t);
    }
    out
}

/// Entry i of direction q of a node's tangent (0 for constants).
fn at<T: Scalar>(t: &[Vec<T>], id: NodeId, size: usize, i: usize, q: usize) -> T {
    let v = &t[id.0];
    if v.is_empty() {
        T::zero()
    } else {
        v[i + q * size]
    }
}

fn tangent_op<T: Scalar>(tape: &Tape<'_, T>, t: &[Vec<T>], k: usize, op: &Op, n: usize, p: usize) -> Vec<T> {
    let y = tape.arg(NodeId(k));
    let mut out = vec![T::zero(); n * p];
    match op {
        Op::Unary(f, a) => {
            let x = tape.arg(*a);
            for i in 0..n {
                let d = d_unary(*f, x.at(i, 0), y.at(i, 0));
                for q in 0..p {
                    out[i + q * n] = d * at(t, *a, n, i, q);
                }
            }
        }
        Op::Binary(f, a, b) => {
            let (aa, bb) = (tape.arg(*a), tape.arg(*b));
            for i in 0..n {
                let (ia, ib) = (if aa.size == 1 { 0 } else { i }, if bb.size == 1 { 0 } else { i });
                let (da, db) = d_binary(*f, aa.at(ia, 0), bb.at(ib, 0), y.at(i, 0), bb.constant);
                for q in 0..p {
                    out[i + q * n] = da * at(t, *a, aa.size, ia, q) + db * at(t, *b, bb.size, ib, q);
                }
            }
        }
        Op::Ternary(f, ids) => {
            let args = ids.map(|id| tape.arg(id));
            for i in 0..n {
                let d = d_ternary(*f, broadcast_at(&args, i, 0), y.at(i, 0), [true; 3]);
                for q in 0..p {
                    out[i + q * n] = (0..3)
                        .map(|j| {
                            let ij = if args[j].size == 1 { 0 } else { i };
                            d[j] * at(t, ids[j], args[j].size, ij, q)
                        })
                        .sum();
                }
            }
        }
        Op::MatMul(a, b) => {
            let shape = tape.graph.nodes[k].shape;
            let (m, nc) = (shape.rows(), shape.cols());
            let (aa, bb) = (tape.arg(*a), tape.arg(*b));
            let kk = aa.size / m.max(1);
            for q in 0..p {
                let block = &mut out[q * n..(q + 1) * n];
                if !t[a.0].is_empty() {
                    T::gemm(
                        false,
                        false,
                        m,
                        nc,
                        kk,
                        &t[a.0][q * aa.size..(q + 1) * aa.size],
                        bb.data,
                        block,
                    );
                }
                if !t[b.0].is_empty() {
                    T::gemm(
                        false,
                        false,
                        m,
                        nc,
                        kk,
                        aa.data,
                        &t[b.0][q * bb.size..(q + 1) * bb.size],
                        block,
                    );
                }
            }
        }
        Op::CumSum(a) => {
            for q in 0..p {
                let mut acc = T::zero();
                for i in 0..n {
                    acc += at(t, *a, n, i, q);
                    out[i + q * n] = acc;
                }
            }
        }
        Op::Transpose(a) => {
            let shape = tape.graph.nodes[k].shape;
            let (r, c) = (shape.rows(), shape.cols());
            for q in 0..p {
                for j in 0..c {
                    for i in 0..r {
                        out[i + j * r + q * n] = at(t, *a, n, j + i * c, q);
                    }
                }
            }
        }
        Op::Gather(a, idx) => {
            let na = tape.arg(*a).size;
            for q in 0..p {
                for (i, &m) in idx.iter().enumerate() {
                    if m != GATHER_ZERO {
                        out[i + q * n] = at(t, *a, na, m as usize, q);
                    }
                }
            }
        }
        Op::Pack(ids) => {
            for q in 0..p {
                for (i, id) in ids.iter().enumerate() {
                    out[i + q * n] = at(t, *id, 1, 0, q);
                }
            }
        }
        Op::Assemble(ids, idx) => {
            let sizes: Vec<usize> = ids.iter().map(|&i| tape.arg(i).size).collect();
            for q in 0..p {
                for (i, &(j, m)) in idx.iter().enumerate() {
                    let j = j as usize;
                    out[i + q * n] = at(t, ids[j], sizes[j], m as usize, q);
                }
            }
        }
        Op::Sum(a) => reduce_tangent(tape, t, *a, p, &mut out, |_, _| T::one()),
        Op::LogSumExp(a) => reduce_tangent(tape, t, *a, p, &mut out, |x, i| (x[i] - y.at(0, 0)).exp()),
        Op::Max(a) => reduce_tangent(tape, t, *a, p, &mut out, |x, i| {
            if argext(x, true) == i {
                T::one()
            } else {
                T::zero()
            }
        }),
        Op::Min(a) => reduce_tangent(tape, t, *a, p, &mut out, |x, i| {
            if argext(x, false) == i {
                T::one()
            } else {
                T::zero()
            }
        }),
        Op::LogSumExpRows(a) => {
            let x = tape.arg(*a);
            let cols = x.size / n.max(1);
            for q in 0..p {
                for j in 0..cols {
                    for i in 0..n {
                        let e = (x.at(i + j * n, 0) - y.at(i, 0)).exp();
                        out[i + q * n] += e * at(t, *a, x.size, i + j * n, q);
                    }
                }
            }
        }
        Op::Support { .. } => {}
        Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
            let mode = crate::graph::eval::fused_output(&tape.graph.nodes[k].op);
            out = crate::graph::fused::tangent(tape, k, ids, p, mode, |id, size, i, q| at(t, id, size, i, q));
        }
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } | Op::Cholesky(_) | Op::TriSolve(..) => {
            unreachable!("inputs are handled by `tangents`; Cholesky and solves are excluded by `supported`")
        }
    }
    out
}

/// ẏ = Σᵢ ∂y/∂xᵢ ẋᵢ for a reduction to one scalar.
fn reduce_tangent<T: Scalar>(
    tape: &Tape<'_, T>,
    t: &[Vec<T>],
    a: NodeId,
    p: usize,
    out: &mut [T],
    partial: impl Fn(&[T], usize) -> T,
) {
    let x = tape.arg(a);
    let xc = x.col(0);
    for i in 0..x.size {
        let d = partial(xc, i);
        for (q, o) in out.iter_mut().enumerate().take(p) {
            *o += d * at(t, a, x.size, i, q);
        }
    }
}
