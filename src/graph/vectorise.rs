//! Loops whose iterations do not depend on each other, as vector operations over the steps.
//!
//! A per-observation loop written as in Stan, `for n in 1:N { y[n] ~ normal(alpha[g[n]] +
//! beta * x[n], sigma) }`, becomes a scan (`graph::scan`) with no carried value: every step
//! reads only nodes from before the loop and its own data. Evaluated step by step it pays
//! the scan's bookkeeping per step and operation (about five times the vectorised form,
//! `y ~ normal(alpha[g] + beta * x, sigma)`). Such a scan whose body is scalar operations
//! is rewritten here into that vectorised form: each body operation becomes one operation
//! on a vector of one entry per step, a step's data (`y[n]`, `x[n]`) the vector of all
//! steps' values, a step's gather (`alpha[g[n]]`) one gather with every step's index, and a
//! one-observation likelihood (`~` of a scalar, `normal_lpdf(y[n] | …)`) the pointwise
//! likelihood over the steps, and a per-step `log_sum_exp([a, b])` the rows' log Σ exp of
//! a steps × 2 matrix. Operations that are the same at every step stay scalars.
//! The scan's value, each step's exported scalars, is read from those vectors.
//!
//! Input: the graph after `scan::compress`. Output: the same log joint with each such scan
//! replaced. Values are the same operations on the same numbers; the gradient's sums over
//! the steps run in another order (the vector rules add entries first to last, the scan's
//! reverse sweep last to first), so they can differ in the last bits. Scans with carried
//! values (recursions), vector-valued body operations or other operations are kept.

use std::collections::HashMap;

use super::build::map_inputs;
use super::scan::{assembled, rebuild, Scan, ScanInput};
use super::{Fun2, Graph, NodeId, Op, Shape, GATHER_ZERO};

/// The graph with every scan of independent scalar steps replaced by vector operations, and
/// `roots` (node ids held outside the graph) moved with it; `None` when there is no such
/// scan. The replaced scans' leftovers are for the caller to prune.
pub(crate) fn vectorise(g: &Graph, roots: &mut [NodeId]) -> Option<Graph> {
    if !g
        .nodes
        .iter()
        .any(|n| matches!(&n.op, Op::Scan(s) if independent(s)))
    {
        return None;
    }
    let (mut out, map) = rebuild(g, |out, scan, map, shape| {
        independent(scan).then(|| over_steps(out, scan, map, shape))
    });
    for r in roots.iter_mut() {
        *r = map[r.0];
    }
    sum_likelihoods(&mut out, roots);
    Some(out)
}

/// A vectorised loop's target term, the sum of every entry of a pointwise likelihood (the
/// loop's `~` per observation, summed by the graph), as the summed likelihood itself, with
/// its kernels for sums (`y ~ normal(mu, sigma)` as written with vectors). The pointwise
/// node and the gather of it are left for the caller to prune when nothing else reads them.
fn sum_likelihoods(g: &mut Graph, roots: &[NodeId]) {
    let held = |i: NodeId| {
        roots.contains(&i)
            || g.targets.contains(&i)
            || g.pointwise.iter().any(|p| p.loglik == i || p.quantity == Some(i))
    };
    // readers among the nodes still needed (the replaced scans' values are not)
    let mut live: Vec<bool> = (0..g.nodes.len()).map(|k| held(NodeId(k))).collect();
    let mut readers = vec![0usize; g.nodes.len()];
    for k in (0..g.nodes.len()).rev() {
        if live[k] {
            for i in super::build::inputs(&g.nodes[k].op) {
                live[i.0] = true;
                readers[i.0] += 1;
            }
        }
    }
    for k in 0..g.nodes.len() {
        let Op::Sum(a) = g.nodes[k].op else { continue };
        let Op::Gather(l, idx) = &g.nodes[a.0].op else {
            continue;
        };
        let Op::LikPoint(lik, ids) = &g.nodes[l.0].op else {
            continue;
        };
        let whole =
            idx.len() == g.nodes[l.0].shape.size() && idx.iter().enumerate().all(|(i, &m)| m as usize == i);
        if whole && readers[a.0] == 1 && readers[l.0] == 1 && !held(a) && !held(*l) {
            g.nodes[k].op = Op::LikSum(*lik, ids.clone());
        }
    }
}

/// Per body node: whether its value changes from step to step (its operation does, or one
/// of its operands); the inputs do not.
fn per_step(scan: &Scan) -> Vec<bool> {
    let body = &scan.body;
    let n_in = scan.inputs.len();
    let mut varies = vec![false; body.nodes.len()];
    for p in n_in..body.nodes.len() {
        varies[p] = scan.varying.iter().any(|(q, _)| *q == p)
            || super::build::inputs(&body.nodes[p].op)
                .iter()
                .any(|i| varies[i.0]);
    }
    varies
}

/// The body's products of a step's own data row with a vector that is the same at every
/// step (`dot(X[n], beta)` is `sum(X[n] .* beta)`): per such `*` node, the body indices of
/// the row (a constant that changes per step) and of the vector.
fn data_dots(scan: &Scan, varies: &[bool]) -> HashMap<usize, (usize, usize)> {
    let body = &scan.body;
    let size = |i: usize| body.nodes[i].shape.size();
    let row = |i: NodeId| varies[i.0] && matches!(body.nodes[i.0].op, Op::Const(_));
    let mut out = HashMap::new();
    for p in scan.inputs.len()..body.nodes.len() {
        if let Op::Binary(Fun2::Mul, a, b) = body.nodes[p].op {
            let pair = if row(a) && !varies[b.0] {
                Some((a.0, b.0))
            } else if row(b) && !varies[a.0] {
                Some((b.0, a.0))
            } else {
                None
            };
            // (a scalar row is an ordinary elementwise product)
            if let Some((c, v)) =
                pair.filter(|&(c, v)| size(c) > 1 && size(c) == size(v) && size(p) == size(c))
            {
                out.insert(p, (c, v));
            }
        }
    }
    out
}

/// Whether the steps of `scan` are independent scalar computations this module rewrites:
/// no carried value, every body operation of one value, each a constant, an elementwise
/// function, a gather of one entry (of a node the same at every step, or of a one-value
/// node), a likelihood of one observation (every operand one value), or the log Σ exp of a
/// vector of such values (`log_sum_exp([a, b])`, a mixture's per-observation term), or the
/// dot product of a step's data row with a vector the same at every step.
fn independent(scan: &Scan) -> bool {
    if scan.inputs.iter().any(|i| matches!(i, ScanInput::Carry { .. })) {
        return false;
    }
    let body = &scan.body;
    let n_in = scan.inputs.len();
    let varies = per_step(scan);
    let one = |i: &NodeId| body.nodes[i.0].shape.size() == 1;
    let gather_ok =
        |a: &NodeId, idx: &[u32]| matches!(idx, [k] if *k != GATHER_ZERO) && (!varies[a.0] || one(a));
    // node p is read only by nodes q with `ok(q)`, and is not exported
    let read_only_by = |p: usize, ok: &dyn Fn(usize) -> bool| {
        (p + 1..body.nodes.len())
            .all(|q| !super::build::inputs(&body.nodes[q].op).contains(&NodeId(p)) || ok(q))
            && !scan.exports.contains(&p)
    };
    // a step's vector of scalars (`[a, b]`) is read only by a log Σ exp of it
    let packed = |p: usize| matches!(&body.nodes[p].op, Op::Pack(ids) if ids.iter().all(one));
    let is_lse = |q: usize| matches!(body.nodes[q].op, Op::LogSumExp(_));
    // a step's data row times a vector, read only by its sum (`dot(X[n], beta)`)
    let dots = data_dots(scan, &varies);
    let is_sum = |q: usize| matches!(body.nodes[q].op, Op::Sum(_));
    let body_ok = (n_in..body.nodes.len()).all(|p| match &body.nodes[p].op {
        Op::Pack(_) => packed(p) && read_only_by(p, &is_lse),
        Op::LogSumExp(a) => packed(a.0),
        Op::Binary(..) if dots.contains_key(&p) => read_only_by(p, &is_sum),
        Op::Sum(a) => dots.contains_key(&a.0),
        Op::Const(_) if !one(&NodeId(p)) => {
            varies[p] && read_only_by(p, &|q| dots.get(&q).is_some_and(|&(c, _)| c == p))
        }
        op => {
            body.nodes[p].shape.size() == 1
                && match op {
                    Op::Const(_) | Op::Unary(..) | Op::Binary(..) | Op::Ternary(..) => true,
                    Op::Gather(a, idx) => gather_ok(a, idx),
                    Op::LikSum(_, ids) => ids.iter().all(one),
                    _ => false,
                }
        }
    });
    // a step's own constant is one value, and a step's own gather reads a node that is the
    // same at every step
    let varying_ok = scan.varying.iter().all(|(p, ops)| {
        ops.iter().all(|op| match op {
            Op::Const(v) => v.len() == body.nodes[*p].shape.size(),
            Op::Gather(a, idx) => matches!(idx.as_slice(), [k] if *k != GATHER_ZERO) && !varies[a.0],
            _ => false,
        })
    });
    body_ok && varying_ok
}

/// The nodes of `scan`'s steps as vector operations over the steps, pushed onto `out`
/// (`map`: where the enclosing graph's nodes went); returns the scan's value as a node of
/// `shape` and where each of its entries comes from.
fn over_steps(out: &mut Graph, scan: &Scan, map: &[NodeId], shape: Shape) -> (NodeId, Vec<(NodeId, u32)>) {
    let steps = scan.steps;
    let all = Shape::Vector(steps);
    let varies = per_step(scan);
    let dots = data_dots(scan, &varies);
    // per body node: the node of `out` holding its value (one entry per step when it varies)
    let mut v: Vec<NodeId> = scan
        .inputs
        .iter()
        .map(|i| match i {
            ScanInput::Outer(id) => map[id.0],
            ScanInput::Carry { .. } => unreachable!("a scan with a carried value is kept"),
        })
        .collect();
    for p in v.len()..scan.body.nodes.len() {
        let node = &scan.body.nodes[p];
        let id = if !varies[p] {
            out.push(map_inputs(node.op.clone(), |i| v[i.0]), node.shape)
        } else {
            match scan.op_at(p, 0) {
                Op::Const(_) => {
                    // step t's k values as row t of a steps × k matrix (column-major)
                    let k = node.shape.size();
                    let values = (0..k).flat_map(|j| {
                        (0..steps).map(move |t| match scan.op_at(p, t) {
                            Op::Const(c) => c[j],
                            _ => unreachable!("a varying constant is a constant at every step"),
                        })
                    });
                    let shape = if k == 1 { all } else { Shape::Matrix(steps, k) };
                    out.push(Op::Const(values.collect()), shape)
                }
                // a data row times a vector: only its sum is read, below
                Op::Binary(..) if dots.contains_key(&p) => v[dots[&p].0],
                // the sums of every step's row times the vector: the data matrix times it
                Op::Sum(a) if dots.contains_key(&a.0) => {
                    let (c, b) = dots[&a.0];
                    out.push(Op::MatMul(v[c], v[b]), all)
                }
                Op::Gather(a, _) if !varies[a.0] => {
                    let idx = (0..steps).map(|t| match scan.op_at(p, t) {
                        Op::Gather(_, idx) => idx[0],
                        _ => unreachable!("a varying gather is a gather at every step"),
                    });
                    out.push(Op::Gather(v[a.0], idx.collect()), all)
                }
                // the one entry of a value that varies: that value
                Op::Gather(a, _) => v[a.0],
                Op::LikSum(lik, ids) => {
                    out.push(Op::LikPoint(*lik, ids.iter().map(|i| v[i.0]).collect()), all)
                }
                // a step's [a, b, …] as row t of a steps × k matrix (column i: the i-th
                // scalar at every step), and its log Σ exp as the rows' log Σ exp
                Op::Pack(ids) => {
                    let pairs: Vec<(NodeId, u32)> = ids
                        .iter()
                        .flat_map(|i| {
                            let (node, varies) = (v[i.0], varies[i.0]);
                            (0..steps).map(move |t| (node, if varies { t as u32 } else { 0 }))
                        })
                        .collect();
                    out.push(assembled(&pairs), Shape::Matrix(steps, ids.len()))
                }
                Op::LogSumExp(a) => out.push(Op::LogSumExpRows(v[a.0]), all),
                op => out.push(map_inputs(op.clone(), |i| v[i.0]), all),
            }
        };
        v.push(id);
    }
    let src: Vec<(NodeId, u32)> = (0..steps)
        .flat_map(|t| {
            let (v, varies) = (&v, &varies);
            scan.exports
                .iter()
                .map(move |&p| (v[p], if varies[p] { t as u32 } else { 0 }))
        })
        .collect();
    (out.push(assembled(&src), shape), src)
}
