//! ∇_θ through the nodes that do not depend on w: by the θ-only nodes' forward tangents at the
//! frontier where they meet the batched part, or, when only weighted sums of ∇_θ's columns
//! are wanted, by one unbatched reverse sweep of the θ-only nodes seeded with the adjoints
//! summed over the columns.
//!
//! Input: a forward tape and the adjoints of the reverse sweep over the batched nodes (and for
//! the weighted form the weights C, S×R). Output: ∇_θ per column (P×S), added to by
//! [`push_frontier`] and [`push_matmul`], or ∇_θ·C (P×R) from [`value_grad_weighted`],
//! [`weighted_seeds`] and [`theta_sweep`]. The product Y = A·B of a θ-only A with a batched B
//! is taken through in one matrix product, not per column; the weighted form's cost does not
//! grow with P.

use std::borrow::Cow;

use crate::autodiff::theta::Tangent;
use crate::autodiff::Scalar;
use crate::graph::eval::{forward, Tape};
use crate::graph::{Graph, NodeId, Op};

use super::rules::backprop;
use super::{reverse_shared, scatter_input, Grads, Sweep};

/// Values, ∇_w per column and ∇_θ as the weighted sums of its columns, ∇_θ·C for the
/// weights C (S×R, column-major): `grad_theta` is P×R. What a method that uses ∇_θ only
/// through such sums (the mean over the draws) needs, at the price of one reverse sweep
/// over the θ-only nodes, unbatched, instead of P forward tangents and a product per
/// direction (see [`weighted_seeds`]).
pub fn value_grad_weighted<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
    weights: &[T],
    r: usize,
) -> Grads<T> {
    let tape = forward(graph, consts, theta, w, s);
    let values = tape.target_values();
    if !weighted_supported(graph) {
        let (grad_w, gt) = reverse_shared(&tape, true, None);
        let grad_theta = weigh_columns(&gt, graph.theta_dim, s, weights, r);
        return Grads {
            values,
            grad_w,
            grad_theta,
        };
    }
    let (grad_w, seeds) = weighted_seeds(&tape, weights, r);
    Grads {
        values,
        grad_w,
        grad_theta: theta_sweep(&tape, seeds, r),
    }
}

/// Whether [`weighted_seeds`] and [`theta_sweep`] apply: θ is not empty and no scan is
/// among the nodes that do not depend on w.
pub fn weighted_supported(graph: &Graph) -> bool {
    let batched = crate::graph::eval::batched_mask(graph);
    graph.theta_dim > 0
        && !graph
            .nodes
            .iter()
            .zip(&batched)
            .any(|(n, &b)| matches!(n.op, Op::Scan(_)) && !b)
}

/// ∇_w (D×S) and the seeds of ∇_θ·C for the weights C (S×R): per θ-only node, its adjoint
/// summed over the columns with each column of weights (size × R; empty for the nodes no
/// column reaches directly). [`theta_sweep`] takes them to θ; the seeds of chunks of
/// columns add.
///
/// The nodes that do not depend on w have one value for all columns, so the weighted sum
/// of ∇_θ over the columns is ∇_θ of Σ_s c_s log p̃(w_s) with those nodes' adjoints summed
/// over the columns first: where the θ-only part meets the batched part (the frontier of
/// `graph::eval::theta_frontier`), each node's adjoint becomes Σ_s c_s V̄_s, and a θ-only
/// left factor A of a product Y = A·B gets Σ_s c_s Ȳ_s B_sᵀ, one matrix product over all
/// the columns instead of the (size × S) block of outer products. Its cost does not grow
/// with P: with the RBF centres learned (P = 2 + M·Q) the tangents cost P forward sweeps of
/// the θ-only part and the pushed product M·Q + M columns of Φ, where this is one product
/// the size of Φ·W. Needs [`weighted_supported`].
pub fn weighted_seeds<T: Scalar>(tape: &Tape<'_, T>, weights: &[T], r: usize) -> (Vec<T>, Vec<Vec<T>>) {
    let g = tape.graph;
    let s = tape.s;
    assert_eq!(weights.len(), s * r, "weights are S × R");
    let sweep = Sweep::swept(tape, true, true);
    let products: Vec<_> = sweep.pushed_products(tape).collect();
    let Sweep {
        adj,
        frontier,
        pushed,
        gw,
        ..
    } = sweep;
    let mut seeds: Vec<Vec<T>> = vec![Vec::new(); g.nodes.len()];
    for k in 0..g.nodes.len() {
        if frontier[k] && !pushed[k] && !adj[k].is_empty() {
            seeds[k] = weigh_columns(&adj[k], g.nodes[k].shape.size(), s, weights, r);
        }
    }
    for (c, a, b) in products {
        if seeds[a.0].is_empty() {
            seeds[a.0] = vec![T::zero(); g.nodes[a.0].shape.size() * r];
        }
        left_factor_adjoint(tape, c, b, &adj[c], weights, r, &mut seeds[a.0]);
    }
    (gw, seeds)
}

/// ∇_θ·C (P×R) from the seeds of [`weighted_seeds`]: one reverse sweep over the θ-only
/// nodes of `tape` (any tape of the graph at this θ: those nodes' values do not depend on
/// the columns) per column of weights. The sweep runs on a one-column view in which every
/// node counts as batched — at one column the two layouts are the same — so every rule
/// takes its slice-wise path, not the per-entry one for values shared by the columns.
pub fn theta_sweep<T: Scalar>(tape: &Tape<'_, T>, mut seeds: Vec<Vec<T>>, r: usize) -> Vec<T> {
    let g = tape.graph;
    let p = g.theta_dim;
    let view = Tape {
        graph: g,
        s: 1,
        consts: tape.consts,
        vals: tape.vals.iter().map(|v| Cow::Borrowed(&**v)).collect(),
        batched: Cow::Owned(vec![true; g.nodes.len()]),
        aux: tape.aux.iter().map(|v| Cow::Borrowed(&**v)).collect(),
        traces: Vec::new(),
    };
    let mut gt = vec![T::zero(); p * r];
    for rr in 0..r {
        // column rr of every seed, and zeros for every other θ-only node
        let mut adj: Vec<Vec<T>> = g
            .nodes
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let size = n.shape.size();
                match n.op {
                    Op::Const(_) => Vec::new(),
                    _ if tape.is_batched(NodeId(k)) => Vec::new(),
                    _ if seeds[k].is_empty() => vec![T::zero(); size],
                    _ if r == 1 => std::mem::take(&mut seeds[k]),
                    _ => seeds[k][rr * size..(rr + 1) * size].to_vec(),
                }
            })
            .collect();
        let out = &mut gt[rr * p..(rr + 1) * p];
        for k in (0..g.nodes.len()).rev() {
            let (lower, upper) = adj.split_at_mut(k);
            let ybar = &upper[0];
            if ybar.is_empty() {
                continue;
            }
            match &g.nodes[k].op {
                Op::Const(_) | Op::Param { .. } => {}
                Op::Hyper { offset } => scatter_input(ybar, out, p, *offset, g.nodes[k].shape.size(), 1),
                Op::Scan(_) => unreachable!("weighted_supported: no θ-only scan"),
                op => backprop(&view, k, op, ybar, lower),
            }
        }
    }
    gt
}

/// X·C for X (n × S) and C (S × R), column-major: each column of X weighted and summed.
fn weigh_columns<T: Scalar>(x: &[T], n: usize, s: usize, weights: &[T], r: usize) -> Vec<T> {
    let mut out = vec![T::zero(); n * r];
    for rr in 0..r {
        let o = &mut out[rr * n..(rr + 1) * n];
        for col in 0..s {
            let c = weights[rr * s + col];
            if c == T::zero() {
                continue;
            }
            for (o, &v) in o.iter_mut().zip(&x[col * n..(col + 1) * n]) {
                *o += c * v;
            }
        }
    }
    out
}

/// Ā (m × k per weight column) += Σ_s c_s Ȳ_s B_sᵀ for the product Y = A·B at node `c`
/// (A θ-only, B batched, Ȳ its adjoint): with the S blocks c_s Ȳ_s side by side (m × n·S)
/// and B's S blocks side by side (k × n·S, as B is stored), one product.
fn left_factor_adjoint<T: Scalar>(
    tape: &Tape<'_, T>,
    c: usize,
    b: NodeId,
    ybar: &[T],
    weights: &[T],
    r: usize,
    abar: &mut [T],
) {
    let s = tape.s;
    let shape = tape.graph.nodes[c].shape;
    let (m, n) = (shape.rows(), shape.cols());
    let bb = tape.arg(b);
    debug_assert!(
        bb.batched,
        "the right factor of a batched product with a θ-only left one"
    );
    let k = bb.size / n.max(1);
    let block = m * n;
    let mut scaled = vec![T::zero(); block * s];
    for rr in 0..r {
        // only the columns from the first to the last with a weight (a split_mf bin's mean
        // weighs its own block of columns)
        let wr = &weights[rr * s..(rr + 1) * s];
        let Some(lo) = wr.iter().position(|w| *w != T::zero()) else {
            continue;
        };
        let hi = s - wr.iter().rev().position(|w| *w != T::zero()).unwrap_or(0);
        for col in lo..hi {
            let (o, y) = (
                &mut scaled[(col - lo) * block..(col - lo + 1) * block],
                &ybar[col * block..(col + 1) * block],
            );
            o.iter_mut().zip(y).for_each(|(o, &y)| *o = wr[col] * y);
        }
        T::gemm(
            false,
            true,
            m,
            k,
            n * (hi - lo),
            &scaled,
            &bb.data[lo * k * n..hi * k * n],
            &mut abar[rr * m * k..(rr + 1) * m * k],
        );
    }
}

/// ∇_θ (P×S) += J_kᵀ V̄_k for a frontier node with tangent J_k (size × P) and adjoint V̄_k
/// (size × S): per direction, dot products over the span it moves only.
pub(super) fn push_frontier<T: Scalar>(tk: &Tangent<T>, size: usize, vbar: &[T], s: usize, gt: &mut [T]) {
    let p = tk.spans.len();
    for (q, span) in tk.spans.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        let d = tk.dir(q);
        for col in 0..s {
            let v = &vbar[col * size + span.start..col * size + span.end];
            gt[col * p + q] += d.iter().zip(v).fold(T::zero(), |acc, (a, b)| acc + *a * *b);
        }
    }
}

/// ∇_θ of the product Y = A·B (node `c`, B batched, A θ-only with tangent `ta`): column s
/// gains Σ_ij Ȳ_ij ((dA/dθ_q) B_s)_ij = Σ_jl (dA_qᵀ Ȳ_s)_jl (B_s)_jl for every direction q
/// in which A moves. Only the columns j0..j1 of A that direction q moves take part: with
/// those columns of every direction stacked side by side into one m × Σ_q w_q matrix D,
/// G = Dᵀ · Ȳ is one product (Σ w_q × m)·(m × n·S) with the S blocks of Ȳ side by side,
/// and direction q's gain is its w_q rows of G dotted with rows j0..j1 of each B_s. A
/// direction that moves w of A's k columns costs m·w·n·S instead of m·k·n·S (an RBF centre
/// moves one column of Φ, the width all of them), and Ȳ is packed for the product once,
/// not once per direction (with one row per direction the packing dominated the product).
pub(super) fn push_matmul<T: Scalar>(
    tape: &Tape<'_, T>,
    ta: &Tangent<T>,
    c: usize,
    b: NodeId,
    ybar: &[T],
    gt: &mut [T],
) {
    let (s, p) = (tape.s, tape.graph.theta_dim);
    let shape = tape.graph.nodes[c].shape;
    let (m, n) = (shape.rows(), shape.cols());
    let bb = tape.arg(b);
    let k = bb.size / n.max(1);
    // (direction, first column, columns, first row of G)
    let mut dirs = Vec::new();
    let mut rows = 0;
    for (q, span) in ta.spans.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        let (j0, j1) = (span.start / m, (span.end - 1) / m + 1);
        dirs.push((q, j0, j1 - j0, rows));
        rows += j1 - j0;
    }
    if rows == 0 {
        return;
    }
    let mut da = vec![T::zero(); m * rows];
    for &(q, j0, _, r0) in &dirs {
        let span = &ta.spans[q];
        let at = r0 * m + (span.start - j0 * m);
        da[at..at + span.len()].copy_from_slice(ta.dir(q));
    }
    let mut g = vec![T::zero(); rows * n * s];
    T::gemm(true, false, rows, n * s, m, &da, ybar, &mut g);
    for &(q, j0, w, r0) in &dirs {
        for col in 0..s {
            let mut dot = T::zero();
            for l in 0..n {
                let gl = &g[(col * n + l) * rows + r0..(col * n + l) * rows + r0 + w];
                let bl = &bb.data[(col * n + l) * k + j0..(col * n + l) * k + j0 + w];
                dot = gl.iter().zip(bl).fold(dot, |acc, (x, y)| acc + *x * *y);
            }
            gt[col * p + q] += dot;
        }
    }
}

/// The dense form of [`push_matmul`] (every column of A in every direction): the reference
/// the span-restricted product is tested against.
#[cfg(test)]
fn push_matmul_dense<T: Scalar>(
    tape: &Tape<'_, T>,
    ta: &Tangent<T>,
    c: usize,
    b: NodeId,
    ybar: &[T],
    gt: &mut [T],
) {
    let (s, p) = (tape.s, tape.graph.theta_dim);
    let shape = tape.graph.nodes[c].shape;
    let (m, n) = (shape.rows(), shape.cols());
    let bb = tape.arg(b);
    let k = bb.size / n.max(1);
    let mut prod = vec![T::zero(); m * n * s];
    let mut da = vec![T::zero(); m * k];
    for q in 0..p {
        ta.dense_into(q, &mut da);
        prod.iter_mut().for_each(|v| *v = T::zero());
        T::gemm(false, false, m, n * s, k, &da, bb.data, &mut prod);
        for col in 0..s {
            let block = col * m * n..(col + 1) * m * n;
            let dot = ybar[block.clone()]
                .iter()
                .zip(&prod[block])
                .fold(T::zero(), |acc, (y, d)| acc + *y * *d);
            gt[col * p + q] += dot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autodiff::reverse::{shared_tangents, value_grad, value_grad_with};
    use crate::graph::eval::{lift_consts, theta_frontier};
    use approx::assert_relative_eq;

    /// The softmax on RBF features with learned centres (examples/softmax_rbf_iris.mvi; N = 12,
    /// Q = 2, M = 3, K = 3, so P = 2 + 6 and Φ is 12 × 4): a centre coordinate moves one
    /// column of Φ, so its span is one column wide; the span-restricted θ-gradient through
    /// Φ·W equals the dense product's to rounding, and the whole ∇_θ (tangents, frontier and
    /// pushed products) equals central differences of the values.
    #[test]
    fn theta_gradient_through_learned_centres_uses_one_column_per_centre_and_matches_the_dense_product() {
        let x: Vec<[f64; 2]> = (0..12)
            .map(|i| {
                let t = f64::from(i) * 0.9;
                [t.sin() * 1.2, (1.3 * t).cos()]
            })
            .collect();
        let y: Vec<i32> = (0..12).map(|i| 1 + i % 3).collect();
        let data = serde_json::json!({
            "K": 3, "X": x, "y": y,
            "C": [[0.5, 0.4], [-0.7, 0.2], [0.1, -0.8]],
            "X_test": [[0.1, 0.2]], "y_test": [1],
        });
        let mut set = crate::data::DataSet::default();
        crate::data::add_json_text(&mut set, "d.json", data.to_string()).expect("the data parse");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let text = include_str!("../../../examples/softmax_rbf_iris.mvi");
        let typed = crate::check::check_source(text, "softmax_rbf_iris.mvi", &dir, &set)
            .unwrap_or_else(|_| panic!("the example checks"));
        let lj = crate::graph::lower_model(&typed).expect("the example lowers");
        let g = &lj.graph;
        let (d, p, s) = (g.dim, g.theta_dim, 3);
        assert_eq!((d, p), (12, 8));
        let consts = lift_consts::<f64>(g);
        let theta: Vec<f64> = [-0.3, 0.2, 0.45, -0.6, 0.25, 0.55, 0.05, -0.85].to_vec();
        let w: Vec<f64> = (0..d * s).map(|i| (0.37 * i as f64).sin()).collect();
        let tape = forward(g, &consts, &theta, &w, s);
        assert!(crate::autodiff::theta::supported(&tape));
        let frontier = theta_frontier(g, &tape.batched);
        let tangents = crate::autodiff::theta::tangents(&tape);
        let products: Vec<(usize, NodeId, NodeId)> = g
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(c, n)| match n.op {
                Op::MatMul(a, b) if frontier.pushed[a.0] && tape.is_batched(NodeId(c)) => Some((c, a, b)),
                _ => None,
            })
            .collect();
        assert_eq!(products.len(), 1, "Φ·W is the one pushed product");
        let (c, a, b) = products[0];
        let (m, k) = (g.nodes[a.0].shape.rows(), g.nodes[a.0].shape.cols());
        assert_eq!((m, k), (12, 4));
        let spans = &tangents[a.0].spans;
        let widths: Vec<usize> = spans
            .iter()
            .map(|r| {
                if r.is_empty() {
                    0
                } else {
                    (r.end - 1) / m + 1 - r.start / m
                }
            })
            .collect();
        // α moves nothing in Φ, r every RBF column (not the bias), each centre coordinate one
        assert_eq!(widths, vec![0, 3, 1, 1, 1, 1, 1, 1]);
        let ybar: Vec<f64> = (0..g.nodes[c].shape.size() * s)
            .map(|i| (0.61 * i as f64).cos())
            .collect();
        let (mut sparse, mut dense) = (vec![0.0; p * s], vec![0.0; p * s]);
        push_matmul(&tape, &tangents[a.0], c, b, &ybar, &mut sparse);
        push_matmul_dense(&tape, &tangents[a.0], c, b, &ybar, &mut dense);
        for (x, y) in sparse.iter().zip(&dense) {
            assert_relative_eq!(*x, *y, epsilon = 1e-12, max_relative = 1e-12);
        }
        assert!(dense.iter().any(|v| v.abs() > 1e-3), "the check is not vacuous");
        let r = value_grad(g, &consts, &theta, &w, s);
        // the tangents shared between the chunks of an evaluation (computed at one column)
        // give the per-chunk result to the bit
        let shared = shared_tangents(g, &consts, &theta, &w[d..]).expect("by tangents");
        let r_shared = value_grad_with(g, &consts, &theta, &w, s, true, Some(&shared));
        assert_eq!(r.grad_theta, r_shared.grad_theta);
        assert_eq!(
            (r.values.clone(), r.grad_w.clone()),
            (r_shared.values, r_shared.grad_w)
        );
        // the weighted sums of ∇_θ's columns, the adjoints summed before the θ-only part
        // (Φ's adjoint one product over the columns) against the per-column ∇_θ summed
        let weights = [0.5, -1.25, 2.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
        let rw = value_grad_weighted(g, &consts, &theta, &w, s, &weights, 2);
        for k in 0..2 {
            for q in 0..p {
                let want: f64 = (0..s)
                    .map(|col| weights[k * s + col] * r.grad_theta[col * p + q])
                    .sum();
                assert_relative_eq!(
                    rw.grad_theta[k * p + q],
                    want,
                    epsilon = 1e-12,
                    max_relative = 1e-12
                );
            }
        }
        assert_eq!((&rw.values, &rw.grad_w), (&r.values, &r.grad_w));
        let h = 1e-6;
        for q in 0..p {
            let (mut up, mut down) = (theta.clone(), theta.clone());
            up[q] += h;
            down[q] -= h;
            let (vu, vd) = (
                value_grad(g, &consts, &up, &w, s).values,
                value_grad(g, &consts, &down, &w, s).values,
            );
            for col in 0..s {
                let fd = (vu[col] - vd[col]) / (2.0 * h);
                assert_relative_eq!(r.grad_theta[col * p + q], fd, epsilon = 1e-6, max_relative = 1e-6);
            }
        }
    }
}
