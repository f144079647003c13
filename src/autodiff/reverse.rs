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
//!
//! This file holds the entry points and the sweep (scans included); each operation's adjoint
//! rule is in `reverse/rules.rs`, the scalar partial derivatives the rules share with
//! `graph::point` and the scan kernel in `reverse/partials.rs`, and ∇_θ through the nodes that
//! do not depend on w in `reverse/theta_grad.rs`.

mod partials;
mod rules;
mod theta_grad;

pub(crate) use partials::{d_binary, d_special2, d_ternary, d_unary, is_special2};
pub(crate) use rules::{back_cholesky, back_unary_batched};
pub use theta_grad::{theta_sweep, value_grad_weighted, weighted_seeds, weighted_supported};

use std::borrow::Cow;

use crate::graph::eval::{forward, lift_consts, theta_frontier, Tape};
use crate::graph::scan::{step_consts, step_tape, Scan, ScanInput};
use crate::graph::{Graph, NodeId, Op};

use super::theta::Tangent;
use super::Scalar;
use rules::backprop;
use theta_grad::{push_frontier, push_matmul};

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

fn scatter_input<T: Scalar>(ybar: &[T], out: &mut [T], d: usize, offset: usize, n: usize, s: usize) {
    for c in 0..s {
        for i in 0..n {
            out[c * d + offset + i] += ybar[i + c * n];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Constraint, Fun1, Shape};
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
