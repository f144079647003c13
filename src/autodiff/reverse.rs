//! Reverse accumulation over a forward [`Tape`]: one sweep from the targets back to w and θ,
//! batched over the S columns, each operation's adjoint rule written once, generic over the
//! scalar (so running it on `Dual64` values gives forward-over-reverse H·v).
//!
//! Input: a graph, θ, W (D×S). Output: [`Grads`] — the S values, ∇_w (D×S) and ∇_θ (P×S).
//! Cost: one forward sweep and one reverse sweep of about the same price. Adjoints always
//! carry the batch dimension (∇_θ is per column), while values of nodes that do not depend on
//! w are stored once; without ∇_θ those nodes get no adjoint at all. When only weighted sums
//! of ∇_θ's columns are wanted (what the methods use), [`weighted_seeds`] sums the adjoints
//! over the columns where they reach those nodes and [`theta_sweep`] takes the sums to θ.

use std::borrow::Cow;

use num_dual::Dual;

use crate::graph::eval::{
    argext, broadcast_at, flat_operand, forward, int_exponent, inv_logit, theta_frontier, tri_solve_t, Arg,
    Tape,
};
use crate::graph::eval::{less_row_values, lift_consts, lse_weights};
use crate::graph::scan::{step_consts, step_tape, Scan, ScanInput};
use crate::graph::{Fun1, Fun2, Fun3, Graph, NodeId, Op, GATHER_ZERO};

use super::{incomplete, owen, von_mises_cdf};

use super::theta::Tangent;
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
/// reverse sweep; ∇_θ per column included.
pub fn value_grad<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
) -> Grads<T> {
    value_grad_with(graph, consts, theta, w, s, true, None)
}

/// As [`value_grad`]; with `want_theta = false` the nodes that do not depend on w are skipped
/// in the reverse sweep and ∇_θ comes back as zeros. `tangents`: the θ-only nodes'
/// tangents at this θ from [`shared_tangents`], when the caller evaluates several chunks of
/// columns at the same θ (computed here otherwise).
pub fn value_grad_with<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
    want_theta: bool,
    tangents: Option<&[Tangent<T>]>,
) -> Grads<T> {
    let tape = forward(graph, consts, theta, w, s);
    let values = tape.target_values();
    let (grad_w, grad_theta) = reverse_shared(&tape, want_theta, tangents);
    Grads {
        values,
        grad_w,
        grad_theta,
    }
}

/// The reverse sweep: adjoints of w and θ given a forward tape, with output adjoint 1.
pub fn reverse<T: Scalar>(tape: &Tape<'_, T>) -> (Vec<T>, Vec<T>) {
    reverse_with(tape, true)
}

/// The tangents of the θ-only nodes at θ (`autodiff::theta`), computed once for a batched
/// evaluation whose columns are split into chunks: they depend on θ alone, and at P
/// directions they cost about P forward sweeps of the θ-only nodes (RBF features of learned
/// centres: P = 2 + M·Q), which every chunk would otherwise repeat. `w` is any one column
/// (the θ-only nodes do not read it). `None` when ∇_θ is not taken by tangents here.
pub fn shared_tangents<T: Scalar>(
    graph: &Graph,
    consts: &[Cow<'_, [T]>],
    theta: &[T],
    w: &[T],
) -> Option<Vec<Tangent<T>>> {
    if graph.theta_dim == 0 {
        return None;
    }
    let tape = forward(graph, consts, theta, &w[..graph.dim], 1);
    super::theta::supported(&tape).then(|| super::theta::tangents(&tape))
}

/// The reverse sweep; `want_theta = false` leaves out every node that does not depend on w
/// (∇_θ is then zero).
pub fn reverse_with<T: Scalar>(tape: &Tape<'_, T>, want_theta: bool) -> (Vec<T>, Vec<T>) {
    reverse_shared(tape, want_theta, None)
}

/// [`reverse_with`] with the θ-only nodes' tangents given (see [`shared_tangents`]).
fn reverse_shared<T: Scalar>(
    tape: &Tape<'_, T>,
    want_theta: bool,
    given: Option<&[Tangent<T>]>,
) -> (Vec<T>, Vec<T>) {
    let g = tape.graph;
    let s = tape.s;
    // With ∇_θ by tangents, the θ-only nodes need adjoints only where they meet the batched
    // part (see `autodiff::theta`).
    let by_tangents = want_theta && g.theta_dim > 0 && super::theta::supported(tape);
    let sweep = Sweep::swept(tape, want_theta, by_tangents);
    let products: Vec<_> = sweep.pushed_products(tape).collect();
    let Sweep {
        adj,
        frontier,
        pushed,
        gw,
        mut gt,
    } = sweep;
    if by_tangents {
        let owned;
        let tangents = match given {
            Some(t) => t,
            None => {
                owned = super::theta::tangents(tape);
                &owned[..]
            }
        };
        for (k, vbar) in adj.iter().enumerate() {
            if frontier[k] && !pushed[k] && !tangents[k].is_empty() {
                push_frontier(&tangents[k], g.nodes[k].shape.size(), vbar, s, &mut gt);
            }
        }
        for (c, a, b) in products {
            push_matmul(tape, &tangents[a.0], c, b, &adj[c], &mut gt);
        }
    }
    (gw, gt)
}

/// The reverse sweep over the nodes that depend on w, and with `want_theta` the others
/// (unless `by_tangents`, which leaves them to the tangents or to the weighted sweep: only
/// the frontier nodes not pushed then get adjoints, per column).
struct Sweep<T> {
    adj: Vec<Vec<T>>,
    frontier: Vec<bool>,
    pushed: Vec<bool>,
    gw: Vec<T>,
    gt: Vec<T>,
}

impl<T: Scalar> Sweep<T> {
    /// The sweep, run.
    fn swept(tape: &Tape<'_, T>, want_theta: bool, by_tangents: bool) -> Self {
        let mut sweep = Sweep::new(tape, want_theta, by_tangents);
        sweep.run(tape, want_theta);
        sweep
    }

    /// The products Y = A·B (node c) of the batched part whose θ-only left factor A is
    /// pushed (see `graph::eval::Frontier::pushed`), as (c, A, B); none without the
    /// frontier.
    fn pushed_products<'g>(
        &'g self,
        tape: &'g Tape<'_, T>,
    ) -> impl Iterator<Item = (usize, NodeId, NodeId)> + 'g {
        tape.graph
            .nodes
            .iter()
            .enumerate()
            .filter_map(move |(c, node)| match node.op {
                Op::MatMul(a, b) if self.pushed.get(a.0) == Some(&true) && tape.is_batched(NodeId(c)) => {
                    Some((c, a, b))
                }
                _ => None,
            })
    }

    fn new(tape: &Tape<'_, T>, want_theta: bool, by_tangents: bool) -> Self {
        let g = tape.graph;
        let s = tape.s;
        let (frontier, pushed) = if by_tangents {
            let f = theta_frontier(g, &tape.batched);
            (f.nodes, f.pushed)
        } else {
            (Vec::new(), Vec::new())
        };
        let mut adj: Vec<Vec<T>> = g
            .nodes
            .iter()
            .enumerate()
            .map(|(k, n)| match n.op {
                Op::Const(_) => Vec::new(),
                _ if !want_theta && !tape.is_batched(NodeId(k)) => Vec::new(),
                _ if by_tangents && !tape.is_batched(NodeId(k)) && (!frontier[k] || pushed[k]) => Vec::new(),
                _ => vec![T::zero(); n.shape.size() * s],
            })
            .collect();
        for &t in &g.targets {
            for v in adj[t.0].iter_mut() {
                *v += T::one();
            }
        }
        Sweep {
            adj,
            frontier,
            pushed,
            gw: vec![T::zero(); g.dim * s],
            gt: vec![T::zero(); g.theta_dim * s],
        }
    }

    fn run(&mut self, tape: &Tape<'_, T>, want_theta: bool) {
        let g = tape.graph;
        let s = tape.s;
        let by_tangents = !self.frontier.is_empty();
        for k in (0..g.nodes.len()).rev() {
            let (lower, upper) = self.adj.split_at_mut(k);
            let ybar = &upper[0];
            if ybar.is_empty() || (by_tangents && !tape.is_batched(NodeId(k))) {
                continue;
            }
            let size = g.nodes[k].shape.size();
            match &g.nodes[k].op {
                Op::Const(_) => {}
                Op::Param { offset } => scatter_input(ybar, &mut self.gw, g.dim, *offset, size, s),
                Op::Hyper { offset } => scatter_input(ybar, &mut self.gt, g.theta_dim, *offset, size, s),
                Op::Scan(scan) => back_scan(tape, k, scan, ybar, lower, want_theta),
                op => backprop(tape, k, op, ybar, lower),
            }
        }
    }
}

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

/// The reverse sweep of scan node `k` with adjoint `ybar`: the steps from the last to the
/// first, each the body's own reverse rules on that step's values. A step's inputs add
/// straight into the adjoints of the nodes they read (the outer nodes', or the previous
/// step's carried node's), and the exported nodes' adjoints start from `ybar`'s share
/// before the next step adds to them, so every adjoint is summed in the order of the
/// unrolled loop.
fn back_scan<T: Scalar>(
    tape: &Tape<'_, T>,
    k: usize,
    scan: &Scan,
    ybar: &[T],
    adj: &mut [Vec<T>],
    want_theta: bool,
) {
    let s = tape.s;
    let trace = tape.trace(k);
    if let Some(flat) = &trace.flat {
        return crate::graph::scan_kernel::backward(tape, scan, flat, &trace.batched, ybar, adj, want_theta);
    }
    let body = &scan.body;
    let (n_in, nb) = (scan.inputs.len(), body.nodes.len());
    let stride = scan.stride();
    let offsets = scan.export_offsets();
    let size = scan.steps * stride;
    let mut consts = lift_consts::<T>(body);
    let wanted = |p: usize| !matches!(body.nodes[p].op, Op::Const(_)) && (want_theta || trace.batched[p]);
    // the adjoints of step t's body nodes, the exported ones started at ybar's share; the
    // buffers of the steps done are reused (`spare`)
    let fresh = |t: usize, spare: &mut Vec<Vec<T>>| -> Vec<Vec<T>> {
        let mut v: Vec<Vec<T>> = (0..nb)
            .map(|p| {
                if p >= n_in && wanted(p) {
                    let mut buf = spare.pop().unwrap_or_default();
                    buf.clear();
                    buf.resize(body.nodes[p].shape.size() * s, T::zero());
                    buf
                } else {
                    Vec::new()
                }
            })
            .collect();
        for (e, &p) in scan.exports.iter().enumerate() {
            let n = body.nodes[p].shape.size();
            if v[p].is_empty() {
                continue;
            }
            if n == 1 {
                // a scalar per step: no loop per column
                let base = t * stride + offsets[e];
                for (c, o) in v[p].iter_mut().enumerate() {
                    *o += ybar[c * size + base];
                }
                continue;
            }
            for c in 0..s {
                let at = c * size + t * stride + offsets[e];
                for (o, &y) in v[p][c * n..(c + 1) * n].iter_mut().zip(&ybar[at..at + n]) {
                    *o += y;
                }
            }
        }
        v
    };
    // the adjoints of the steps a carry adds to, step t − 1 first
    let lag = scan.max_lag();
    let mut earlier: std::collections::VecDeque<Vec<Vec<T>>> = std::collections::VecDeque::new();
    let mut spare = Vec::new();
    let mut cur = fresh(scan.steps - 1, &mut spare);
    let mut borrowed = vec![false; n_in];
    for t in (0..scan.steps).rev() {
        while earlier.len() < lag.min(t) {
            earlier.push_back(fresh(t - 1 - earlier.len(), &mut spare));
        }
        // each input's adjoint is the buffer it adds to (a scratch one when that is not kept)
        for (j, input) in scan.inputs.iter().enumerate() {
            let source = match (input.source(t), input) {
                (Some(id), _) => &mut adj[id.0],
                (None, ScanInput::Carry { node, init }) => &mut earlier[init.len() - 1][*node],
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            };
            cur[j] = std::mem::take(source);
            borrowed[j] = !cur[j].is_empty();
            if !borrowed[j] && wanted(j) {
                cur[j] = vec![T::zero(); body.nodes[j].shape.size() * s];
            }
        }
        {
            step_consts(scan, &mut consts, t);
            let mut bt = step_tape(tape, scan, &consts, &trace.batched, &trace.steps[..t], t);
            let step = &trace.steps[t];
            for i in 0..step.len() {
                bt.vals.push(Cow::Borrowed(step.val(i)));
                bt.aux.push(Cow::Borrowed(step.aux.get(i).map_or(&[][..], |a| a)));
            }
            for p in (n_in..nb).rev() {
                let (lower, upper) = cur.split_at_mut(p);
                if upper[0].is_empty() {
                    continue;
                }
                match scan.op_at(p, t) {
                    Op::Const(_) => {}
                    op => backprop(&bt, p, op, &upper[0], lower),
                }
            }
        }
        for (j, input) in scan.inputs.iter().enumerate() {
            if !borrowed[j] {
                continue;
            }
            let back = std::mem::take(&mut cur[j]);
            match (input.source(t), input) {
                (Some(id), _) => adj[id.0] = back,
                (None, ScanInput::Carry { node, init }) => earlier[init.len() - 1][*node] = back,
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            }
        }
        if let Some(next) = earlier.pop_front() {
            let done = std::mem::replace(&mut cur, next);
            spare.extend(done.into_iter().filter(|b| b.capacity() > 0));
        }
    }
}

/// ∇_θ (P×S) += J_kᵀ V̄_k for a frontier node with tangent J_k (size × P) and adjoint V̄_k
/// (size × S): per direction, dot products over the span it moves only.
fn push_frontier<T: Scalar>(tk: &Tangent<T>, size: usize, vbar: &[T], s: usize, gt: &mut [T]) {
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
fn push_matmul<T: Scalar>(
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
    let y = tape.arg(NodeId(k));
    let shape = tape.graph.nodes[k].shape;
    let n = shape.size();
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => {}
        Op::Scan(_) => unreachable!("scans are swept by back_scan"),
        Op::Unary(f, a) => {
            let x = tape.arg(*a);
            let xbar = &mut adj[a.0];
            if !x.batched {
                // The same value in every column: the derivative once, then scaled per column.
                let d: Vec<T> = (0..n).map(|i| d_unary(*f, x.at(i, 0), y.at(i, 0))).collect();
                for c in 0..s {
                    for i in 0..n {
                        xbar[i + c * n] += ybar[i + c * n] * d[i];
                    }
                }
                return;
            }
            // x and y = f(x) both batched, n × S side by side: one pass over the slices, with
            // the common functions' partial fixed outside the loop (not chosen per entry)
            match *f {
                Fun1::Exp => back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Exp, x, y)),
                Fun1::Log => back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Log, x, y)),
                Fun1::Sqrt => {
                    back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Sqrt, x, y))
                }
                Fun1::Square => {
                    back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Square, x, y))
                }
                Fun1::Neg => back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Neg, x, y)),
                f => back_unary_batched(xbar, ybar, x.data, y.data, |x, y| d_unary(f, x, y)),
            }
        }
        Op::Binary(f, a, b) => back_binary(tape, *f, *a, *b, y, ybar, adj),
        Op::Ternary(f, ids) => {
            back_elementwise(tape, *ids, y, ybar, adj, |x, v, need| d_ternary(*f, x, v, need))
        }
        Op::MatMul(a, b) => back_matmul(tape, *a, *b, shape.rows(), shape.cols(), ybar, adj),
        Op::CumSum(a) => {
            // x̄ᵢ += Σ_{j ≥ i} ȳⱼ: the running sums of ȳ from the end
            let n = shape.size();
            let xbar = &mut adj[a.0];
            for b in 0..s {
                let mut acc = T::zero();
                for i in (0..n).rev() {
                    acc += ybar[b * n + i];
                    xbar[b * n + i] += acc;
                }
            }
        }
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
        Op::Assemble(ids, idx) => {
            // entry by entry, each over the columns: an adjoint entry still receives its
            // terms in the order of the entries, as a loop over columns outside would give
            let sizes: Vec<usize> = ids.iter().map(|&i| tape.arg(i).size).collect();
            for (i, &(j, m)) in idx.iter().enumerate() {
                let xbar = &mut adj[ids[j as usize].0];
                if xbar.is_empty() {
                    continue;
                }
                let size = sizes[j as usize];
                let (m, yb) = (m as usize, &ybar[i..]);
                for c in 0..s {
                    xbar[m + c * size] += yb[c * n];
                }
            }
        }
        Op::Sum(a) => back_reduce(tape, *a, ybar, adj, |_, _, _| T::one()),
        Op::LogSumExp(a) => {
            let x = tape.arg(*a);
            let n = x.size;
            let mut w = vec![T::zero(); n * s];
            lse_weights(x, y, s, &mut w);
            let xbar = &mut adj[a.0];
            match n {
                0 => {}
                2 => add_scaled_columns(xbar, &w, &ybar[..s], 2),
                3 => add_scaled_columns(xbar, &w, &ybar[..s], 3),
                4 => add_scaled_columns(xbar, &w, &ybar[..s], 4),
                _ => add_scaled_columns(xbar, &w, &ybar[..s], n),
            }
        }
        Op::Max(a) => back_reduce(tape, *a, ybar, adj, |x, i, _| pick(argext(x, true) == i)),
        Op::Min(a) => back_reduce(tape, *a, ybar, adj, |x, i, _| pick(argext(x, false) == i)),
        Op::LogSumExpRows(a) => {
            let x = tape.arg(*a);
            let rows = shape.rows();
            let cols = x.size / rows.max(1);
            // the weights exp(xᵢⱼ − yᵢ) of every column through the kernel, as the forward
            let mut w = vec![T::zero(); x.size * s];
            for (c, wc) in w.chunks_exact_mut(x.size.max(1)).enumerate().take(s) {
                less_row_values(wc, x.col(c), y.col(c), rows);
            }
            T::map_in_place(Fun1::Exp, &mut w);
            let xbar = &mut adj[a.0];
            for c in 0..s {
                for j in 0..cols {
                    for i in 0..rows {
                        let at = i + j * rows + c * x.size;
                        xbar[at] += ybar[i + c * rows] * w[at];
                    }
                }
            }
        }
        Op::Cholesky(a) => back_cholesky(y, ybar, &mut adj[a.0], shape.rows(), s),
        Op::TriSolve(l, b) => back_tri_solve(tape, *l, *b, y, ybar, adj, shape.rows(), shape.cols()),
        Op::Support { .. } => {}
        Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
            let mode = crate::graph::eval::fused_output(&tape.graph.nodes[k].op);
            crate::graph::fused::backprop(tape, k, ids, ybar, adj, mode);
        }
    }
}

/// x̄ += ȳ_c · w column by column (n entries each, ȳ one value per column); inlined into
/// calls with a literal n, so that the loop over a column is unrolled.
#[inline(always)]
pub(crate) fn add_scaled_columns<T: Scalar>(xbar: &mut [T], w: &[T], ybar: &[T], n: usize) {
    for ((xc, wc), &yb) in xbar.chunks_exact_mut(n).zip(w.chunks_exact(n)).zip(ybar) {
        for (xi, &wi) in xc.iter_mut().zip(wc) {
            *xi += yb * wi;
        }
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
#[inline(always)]
pub(crate) fn d_unary<T: Scalar>(f: Fun1, x: T, y: T) -> T {
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
        // 1 − σ(x) = σ(−x): one exp and one division, cheaper than expm1 of the stored value
        Fun1::LogInvLogit => inv_logit(-x),
        Fun1::Log1mInvLogit => -inv_logit(x),
        Fun1::Lgamma => x.digamma(),
        Fun1::LogPhi => x.dlog_phi(),
        Fun1::LogBesselI0 => x.bessel_i_ratio(),
    }
}

/// `x̄ᵢ += ȳᵢ · d(xᵢ, yᵢ)` over the batched entries of a unary node.
#[inline(always)]
pub(crate) fn back_unary_batched<T: Scalar>(
    xbar: &mut [T],
    ybar: &[T],
    x: &[T],
    y: &[T],
    d: impl Fn(T, T) -> T,
) {
    for ((xb, &yb), (&xv, &yv)) in xbar.iter_mut().zip(ybar).zip(x.iter().zip(y)) {
        *xb += yb * d(xv, yv);
    }
}

/// (∂f/∂a, ∂f/∂b) in terms of a, b and y = f(a, b).
pub(crate) fn d_binary<T: Scalar>(f: Fun2, a: T, b: T, y: T, b_const: bool) -> (T, T) {
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
        Fun2::LogGammaP
        | Fun2::LogGammaQ
        | Fun2::LogStudentTCdf
        | Fun2::LogSkewNormalCdf
        | Fun2::LogSkewNormalCcdf => {
            let [da, db] = d_special2(f, [a, b], y, [true; 2]);
            (da, db)
        }
    }
}

/// Whether `f` is a special function with costly partials ([`d_special2`]).
pub(crate) fn is_special2(f: Fun2) -> bool {
    matches!(
        f,
        Fun2::LogGammaP
            | Fun2::LogGammaQ
            | Fun2::LogStudentTCdf
            | Fun2::LogSkewNormalCdf
            | Fun2::LogSkewNormalCcdf
    )
}

/// The partials of the incomplete-gamma and Student-t CDF ops given y = f(a, b); only those
/// marked in `need` are computed (the others are 0). The outcome's partial is closed form
/// (the density over the CDF, from y); the shape's is one nested-dual pass of the series
/// (exact at every order, so forward-over-reverse stays exact).
pub(crate) fn d_special2<T: Scalar>(f: Fun2, [a, b]: [T; 2], y: T, need: [bool; 2]) -> [T; 2] {
    let pick = |yes: bool, d: &dyn Fn() -> T| if yes { d() } else { T::zero() };
    if matches!(f, Fun2::LogSkewNormalCdf | Fun2::LogSkewNormalCcdf) {
        // (z, α): both by nested-dual passes of the quadrature
        let g: fn([Dual<T>; 2]) -> Dual<T> = if f == Fun2::LogSkewNormalCcdf {
            |v| owen::log_skew_normal_ccdf(v[0], v[1])
        } else {
            |v| owen::log_skew_normal_cdf(v[0], v[1])
        };
        return [
            pick(need[0], &|| incomplete::partial(g, [a, b], 0)),
            pick(need[1], &|| incomplete::partial(g, [a, b], 1)),
        ];
    }
    if f == Fun2::LogStudentTCdf {
        // (t, ν)
        return [
            pick(need[0], &|| incomplete::dlog_student_t_cdf_dt(a, b, y)),
            pick(need[1], &|| {
                incomplete::partial(|v| incomplete::log_student_t_cdf(v[0], v[1]), [a, b], 1)
            }),
        ];
    }
    // (a, x) of log P or log Q
    let upper = f == Fun2::LogGammaQ;
    let g: fn([Dual<T>; 2]) -> Dual<T> = if upper {
        |v| incomplete::log_gamma_q(v[0], v[1])
    } else {
        |v| incomplete::log_gamma_p(v[0], v[1])
    };
    [
        pick(need[0], &|| incomplete::partial(g, [a, b], 0)),
        pick(need[1], &|| incomplete::dlog_gamma_dx(a, b, y, upper)),
    ]
}

/// The partials of a function of three arguments at `args` given y = f(args); only those
/// marked in `need` are computed (the others are 0). As [`d_special2`]: x in closed form,
/// the shapes by nested-dual passes.
pub(crate) fn d_ternary<T: Scalar>(f: Fun3, args: [T; 3], y: T, need: [bool; 3]) -> [T; 3] {
    let g: fn([Dual<T>; 3]) -> Dual<T> = match f {
        Fun3::LogBetaInc => |v| incomplete::log_beta_inc(v[0], v[1], v[2]),
        Fun3::LogBetaIncC => |v| incomplete::log_beta_inc_c(v[0], v[1], v[2]),
        Fun3::LogVonMisesCdf => |v| von_mises_cdf::log_von_mises_cdf(v[0], v[1], v[2]),
        Fun3::LogVonMisesCcdf => |v| von_mises_cdf::log_von_mises_ccdf(v[0], v[1], v[2]),
        Fun3::LogBinomialCdf => |v| incomplete::log_binomial_cdf(v[0], v[1], v[2]),
        Fun3::LogBinomialCcdf => |v| incomplete::log_binomial_ccdf(v[0], v[1], v[2]),
    };
    let beta = matches!(f, Fun3::LogBetaInc | Fun3::LogBetaIncC);
    std::array::from_fn(|i| match i {
        _ if !need[i] => T::zero(),
        0 if beta => incomplete::dlog_beta_inc_dx(args[0], args[1], args[2], y, f == Fun3::LogBetaIncC),
        _ => incomplete::partial(g, args, i),
    })
}

/// Adjoint of an elementwise function of N arguments whose partials `partials(args, y,
/// need)` gives (scalars broadcast, so their adjoints sum over the entries); each partial is
/// computed once per entry, and only for the arguments that need an adjoint.
fn back_elementwise<T: Scalar, const N: usize>(
    tape: &Tape<'_, T>,
    ids: [NodeId; N],
    y: Arg<'_, T>,
    ybar: &[T],
    adj: &mut [Vec<T>],
    partials: impl Fn([T; N], T, [bool; N]) -> [T; N],
) {
    let args = ids.map(|id| tape.arg(id));
    let need = ids.map(|id| !adj[id.0].is_empty());
    let n = y.size;
    for c in 0..tape.s {
        for i in 0..n {
            let d = partials(broadcast_at(&args, i, c), y.at(i, c), need);
            for k in 0..N {
                if need[k] {
                    let ik = if args[k].size == 1 { 0 } else { i };
                    adj[ids[k].0][ik + c * args[k].size] += ybar[i + c * n] * d[k];
                }
            }
        }
    }
}

fn back_binary<T: Scalar>(
    tape: &Tape<'_, T>,
    f: Fun2,
    a: NodeId,
    b: NodeId,
    y: Arg<'_, T>,
    ybar: &[T],
    adj: &mut [Vec<T>],
) {
    if is_special2(f) {
        return back_elementwise(tape, [a, b], y, ybar, adj, |x, v, need| d_special2(f, x, v, need));
    }
    let (aa, bb) = (tape.arg(a), tape.arg(b));
    let n = y.size;
    if back_binary_fast(f, aa, bb, y, ybar, a, b, adj) {
        return;
    }
    // Neither operand depends on w: the partials are the same in every column.
    let fixed: Option<Vec<(T, T)>> = (!aa.batched && !bb.batched).then(|| {
        (0..n)
            .map(|i| {
                let (ia, ib) = (if aa.size == 1 { 0 } else { i }, if bb.size == 1 { 0 } else { i });
                d_binary(f, aa.at(ia, 0), bb.at(ib, 0), y.at(i, 0), bb.constant)
            })
            .collect()
    });
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
                let (da, db) = match &fixed {
                    Some(p) => p[i],
                    None => d_binary(f, aa.at(ia, c), bb.at(ib, c), y.at(i, c), bb.constant),
                };
                let (k, d) = if first { (ia, da) } else { (ib, db) };
                out[k + c * size] += ybar[i + c * n] * d;
            }
        }
    }
}

/// The common cases of `+`, `−`, `*` and `/` column by column over slices, without a call
/// per entry: every operand that needs an adjoint is batched, of the result's size or one
/// value per column (a broadcast scalar such as `mu + phi * (h - mu)`, whose adjoint sums
/// over the column), and every operand is of the result's size or one value. Each partial
/// is the expression of [`d_binary`], accumulated in the same order, so the result is the
/// same to the bit. Returns false (nothing done) otherwise.
#[allow(clippy::too_many_arguments)]
fn back_binary_fast<T: Scalar>(
    f: Fun2,
    aa: Arg<'_, T>,
    bb: Arg<'_, T>,
    y: Arg<'_, T>,
    ybar: &[T],
    a: NodeId,
    b: NodeId,
    adj: &mut [Vec<T>],
) -> bool {
    let n = y.size;
    if !matches!(f, Fun2::Add | Fun2::Sub | Fun2::Mul | Fun2::Div) || !y.batched {
        return false;
    }
    let shaped = |arg: Arg<'_, T>| arg.size == n || arg.size == 1;
    let fits = |arg: Arg<'_, T>, id: NodeId| adj[id.0].is_empty() || arg.batched;
    if !(shaped(aa) && shaped(bb) && fits(aa, a) && fits(bb, b)) {
        return false;
    }
    let s = ybar.len() / n.max(1);
    if s > 1 && flat_operand(aa, n) && flat_operand(bb, n) {
        // the S columns side by side as one long column (scalar nodes of a recursion)
        let m = n * s;
        fn long<T: Scalar>(x: Arg<'_, T>, m: usize) -> Column<'_, T> {
            if x.batched {
                Column::Slice(&x.data[..m])
            } else {
                Column::One(x.data[0])
            }
        }
        let (ca, cb, cy) = (long(aa, m), long(bb, m), Column::Slice(&y.data[..m]));
        for (target, first) in [(a, true), (b, false)] {
            if !adj[target.0].is_empty() {
                Partial::new(f, first, ca, cb, cy).add_into(ybar, &mut adj[target.0][..m]);
            }
        }
        return true;
    }
    for (target, first) in [(a, true), (b, false)] {
        if adj[target.0].is_empty() {
            continue;
        }
        let arg = if first { aa } else { bb };
        let out = &mut adj[target.0];
        for c in 0..s {
            let yb = &ybar[c * n..(c + 1) * n];
            let part = Partial::new(f, first, Column::of(aa, c), Column::of(bb, c), Column::of(y, c));
            if arg.size == n {
                part.add_into(yb, &mut out[c * n..(c + 1) * n]);
            } else {
                out[c] = part.sum_into(yb, out[c]);
            }
        }
    }
    true
}

/// One column of an operand: n values, or one value for all entries.
#[derive(Clone, Copy)]
enum Column<'a, T> {
    Slice(&'a [T]),
    One(T),
}

impl<'a, T: Scalar> Column<'a, T> {
    fn of(arg: Arg<'a, T>, c: usize) -> Self {
        let col = arg.col(c);
        if arg.size == 1 {
            Column::One(col[0])
        } else {
            Column::Slice(col)
        }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> T {
        match self {
            Column::Slice(v) => v[i],
            Column::One(v) => *v,
        }
    }
}

/// The partial of y = a ∘ b with respect to one operand, over one column.
enum Partial<'a, T> {
    /// The same partial for every entry (±1 for `+`/`−`, a scalar factor of `*`, 1/b of
    /// `/` with one b).
    Same(T),
    /// The other operand's entries (`*`).
    Times(&'a [T]),
    /// 1/bᵢ (∂/∂a of `/`).
    Recip(&'a [T]),
    /// −yᵢ/bᵢ (∂/∂b of `/`).
    NegRatio(&'a [T], Column<'a, T>),
}

impl<'a, T: Scalar> Partial<'a, T> {
    fn new(f: Fun2, first: bool, a: Column<'a, T>, b: Column<'a, T>, y: Column<'a, T>) -> Self {
        let one = T::one();
        match (f, first) {
            (Fun2::Add, _) | (Fun2::Sub, true) => Partial::Same(one),
            (Fun2::Sub, false) => Partial::Same(-one),
            (Fun2::Mul, _) => match if first { b } else { a } {
                Column::Slice(v) => Partial::Times(v),
                Column::One(v) => Partial::Same(v),
            },
            (Fun2::Div, true) => match b {
                Column::Slice(v) => Partial::Recip(v),
                Column::One(v) => Partial::Same(v.recip()),
            },
            (_, _) => match y {
                Column::Slice(yv) => Partial::NegRatio(yv, b),
                // y has the result's size; one value means n = 1
                Column::One(yv) => Partial::Same(-yv / b.at(0)),
            },
        }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> T {
        match self {
            Partial::Same(v) => *v,
            Partial::Times(v) => v[i],
            Partial::Recip(v) => v[i].recip(),
            Partial::NegRatio(y, b) => -y[i] / b.at(i),
        }
    }

    /// out_i += ȳ_i · ∂_i.
    fn add_into(&self, ybar: &[T], out: &mut [T]) {
        match self {
            Partial::Same(d) => out.iter_mut().zip(ybar).for_each(|(o, &yb)| *o += yb * *d),
            Partial::Times(v) => {
                for ((o, &yb), &d) in out.iter_mut().zip(ybar).zip(*v) {
                    *o += yb * d;
                }
            }
            _ => {
                for (i, (o, &yb)) in out.iter_mut().zip(ybar).enumerate() {
                    *o += yb * self.at(i);
                }
            }
        }
    }

    /// acc + Σ_i ȳ_i · ∂_i, added one term at a time.
    fn sum_into(&self, ybar: &[T], mut acc: T) -> T {
        for (i, &yb) in ybar.iter().enumerate() {
            acc += yb * self.at(i);
        }
        acc
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
    let k = aa.size / m.max(1);
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
pub(crate) fn back_cholesky<T: Scalar>(y: Arg<'_, T>, ybar: &[T], abar: &mut [T], n: usize, s: usize) {
    if abar.is_empty() {
        return;
    }
    let nn = n * n;
    for c in 0..s {
        let l = y.col(c);
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
    x: Arg<'_, T>,
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
            let xc = x.col(c);
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
    fn theta_only_nodes_are_evaluated_once_and_keep_per_column_theta_gradients() {
        // f(w, θ) = Σ (exp(θ) ⊙ v)ᵀ w with v = [1, 2]: the left factor depends on θ only.
        let mut g = Graph::new(2, 1);
        let w = g.param_slice(0, Shape::Vector(2), &Constraint::NONE).unwrap();
        let t = g.hyper_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
        let e = g.unary(Fun1::Exp, t);
        let v = g.constant(Shape::Vector(2), vec![1.0, 2.0]);
        let ev = g.mul(e, v).unwrap();
        let sq = g.unary(Fun1::Square, ev);
        let p = g.mul(sq, w).unwrap();
        let s = g.sum(p);
        g.add_target(s).unwrap();
        let consts = lift_consts::<f64>(&g);
        let theta = [0.3];
        let ws = [1.0, -1.0, 0.5, 2.0, -0.2, 0.0];
        let tape = forward(&g, &consts, &theta, &ws, 3);
        assert!(!tape.is_batched(sq) && tape.is_batched(p));
        assert_eq!(tape.vals[sq.0].len(), 2, "a θ-only node is stored once");
        let r = value_grad(&g, &consts, &theta, &ws, 3);
        let k = (2.0 * theta[0]).exp();
        for c in 0..3 {
            let (w1, w2) = (ws[2 * c], ws[2 * c + 1]);
            assert_relative_eq!(r.values[c], k * (w1 + 4.0 * w2), epsilon = 1e-12);
            assert_relative_eq!(r.grad_theta[c], 2.0 * k * (w1 + 4.0 * w2), epsilon = 1e-12);
            assert_relative_eq!(r.grad_w[2 * c + 1], 4.0 * k, epsilon = 1e-12);
        }
        let no_theta = value_grad_with(&g, &consts, &theta, &ws, 3, false, None);
        assert_eq!(no_theta.grad_w, r.grad_w);
        assert!(no_theta.grad_theta.iter().all(|x| x.abs() < f64::MIN_POSITIVE));
    }

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
        let text = include_str!("../../examples/softmax_rbf_iris.mvi");
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
        assert!(super::super::theta::supported(&tape));
        let frontier = theta_frontier(g, &tape.batched);
        let tangents = super::super::theta::tangents(&tape);
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
