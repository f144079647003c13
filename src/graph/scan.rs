//! Loops whose graph does not grow: a run of loop iterations that are the same operations
//! (a recursion such as `err[t] = y[t] - nu[t]`) becomes one [`Op::Scan`] node holding the
//! body once, evaluated once per step.
//!
//! Input: a lowered graph and, per `for` statement, the node index where each iteration
//! starts (`compress`). Output: the same log joint with each run of at least
//! [`MIN_STEPS`] congruent iterations replaced by a scan node, so the graph has
//! O(body) nodes instead of O(T · body). Two iterations are congruent when their nodes
//! are the same operations in the same order, each input being a node of the same
//! iteration, the node at the same position of the previous iteration (a *carry*), or the
//! same node before the loop; constants (the step's data, `y[t]`) and the indices of
//! gathers may differ from step to step and are stored per step.
//!
//! A scan's value is the values of its *exported* body nodes (those read after the loop,
//! target terms, declared values) at every step, one step after the other; the nodes that
//! read them gather from it. Evaluation (`forward`, and the reverse sweep in
//! `autodiff::reverse`) runs the body's own operations step by step with the evaluator's
//! code, so values and gradients are those of the unrolled loop, and the adjoints are
//! accumulated in the same order; a body of scalar arithmetic runs instead as a flat
//! program of the same operations (`graph::scan_kernel`, equal to the bit). [`expand`]
//! unrolls the scans again (the single-point tape of `graph::point` compiles the unrolled
//! graph).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::build::{inputs, map_inputs};
use super::eval::{eval_node_into, lift_consts, Arg, Tape};
use super::{Graph, NodeId, Op, Shape};
use crate::autodiff::Scalar;

/// Runs of fewer congruent iterations stay unrolled.
pub const MIN_STEPS: usize = 4;

/// A loop's body stored once and evaluated `steps` times.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// The number of steps.
    pub steps: usize,
    /// The body: node j < `inputs.len()` stands for input j (an `Op::Param { offset: j }`
    /// placeholder, or a copy of the input when it is a constant), then the operations of
    /// one step, whose inputs are body nodes.
    pub body: Graph,
    /// Where each input comes from.
    pub inputs: Vec<ScanInput>,
    /// The body nodes whose operation changes from step to step (constants: the step's data;
    /// gathers: their indices), by body index in increasing order, with the operation at
    /// each step.
    pub varying: Vec<(usize, Vec<Op>)>,
    /// The body nodes whose values make the scan's value: per step, their entries one after
    /// the other (by body index in increasing order).
    pub exports: Vec<usize>,
}

/// Where an input of a scan's body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanInput {
    /// A node of the enclosing graph, the same at every step.
    Outer(NodeId),
    /// The value of body node `node` at the step `init.len()` steps before (the lag: 1 for
    /// `err[t - 1]`, 2 for `err[t - 2]`); at the first steps, before there is one, the
    /// node `init[t]` of the enclosing graph.
    Carry {
        /// The body node carried.
        node: usize,
        /// Its values before the first steps, one per step of the lag.
        init: Vec<NodeId>,
    },
}

impl ScanInput {
    /// The nodes of the enclosing graph read.
    pub fn nodes(&self) -> &[NodeId] {
        match self {
            ScanInput::Outer(id) => std::slice::from_ref(id),
            ScanInput::Carry { init, .. } => init,
        }
    }

    pub(crate) fn map_nodes(&mut self, f: impl Fn(NodeId) -> NodeId) {
        match self {
            ScanInput::Outer(id) => *id = f(*id),
            ScanInput::Carry { init, .. } => init.iter_mut().for_each(|i| *i = f(*i)),
        }
    }

    /// The node of the enclosing graph read at step `t`, if the input reads one then.
    pub fn source(&self, t: usize) -> Option<NodeId> {
        match self {
            ScanInput::Outer(id) => Some(*id),
            ScanInput::Carry { init, .. } => init.get(t).copied(),
        }
    }
}

impl Scan {
    /// Entries of one step's exported values.
    pub fn stride(&self) -> usize {
        self.exports
            .iter()
            .map(|&p| self.body.nodes[p].shape.size())
            .sum()
    }

    /// The offset of each export within a step.
    pub fn export_offsets(&self) -> Vec<usize> {
        let mut at = 0;
        self.exports
            .iter()
            .map(|&p| {
                let o = at;
                at += self.body.nodes[p].shape.size();
                o
            })
            .collect()
    }

    /// The longest lag of a carried input (1 when there is none).
    pub fn max_lag(&self) -> usize {
        self.inputs
            .iter()
            .map(|i| match i {
                ScanInput::Carry { init, .. } => init.len(),
                ScanInput::Outer(_) => 1,
            })
            .max()
            .unwrap_or(1)
    }

    /// The operation of body node `p` at step `t`.
    pub fn op_at(&self, p: usize, t: usize) -> &Op {
        match self.varying.binary_search_by_key(&p, |v| v.0) {
            Ok(i) => &self.varying[i].1[t],
            Err(_) => &self.body.nodes[p].op,
        }
    }

    /// The evaluation work as unrolled nodes: the longest body value, the entries of all
    /// steps' body values, and the number of body nodes times the steps.
    pub fn work(&self) -> (usize, usize, usize) {
        let n_in = self.inputs.len();
        let ops: Vec<usize> = self.body.nodes[n_in..]
            .iter()
            .filter(|n| !matches!(n.op, Op::Const(_)))
            .map(|n| n.shape.size())
            .collect();
        let widest = ops.iter().copied().max().unwrap_or(1);
        let entries: usize = ops.iter().sum();
        (widest, entries * self.steps, ops.len() * self.steps)
    }

    /// Per body node: whether it depends on w, given whether each input's source does. A
    /// carried input depends on w when its first value or the body node carried does.
    pub fn body_batched(&self, outer: impl Fn(NodeId) -> bool) -> Vec<bool> {
        let n_in = self.inputs.len();
        let mut input: Vec<bool> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(j, i)| {
                !matches!(self.body.nodes[j].op, Op::Const(_)) && i.nodes().iter().any(|&n| outer(n))
            })
            .collect();
        loop {
            let mut b = input.clone();
            for p in n_in..self.body.nodes.len() {
                let mut any = false;
                if !matches!(self.body.nodes[p].op, Op::Const(_)) {
                    super::build::each_input(&self.body.nodes[p].op, |i| any |= b[i.0]);
                }
                b.push(any);
            }
            let mut changed = false;
            for (j, i) in self.inputs.iter().enumerate() {
                if let ScanInput::Carry { node, .. } = i {
                    if b[*node] && !input[j] {
                        input[j] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return b;
            }
        }
    }
}

// ------------------------------------------------------------------------------ evaluation

/// The body values of one step (body nodes after the inputs, in order) and the partials
/// its fused likelihoods cached.
pub(crate) struct Step<T> {
    /// The values one after another (one allocation per step, not one per node: a long
    /// recursion keeps every step's values until the reverse sweep); each node's value is
    /// written here directly.
    data: Vec<T>,
    /// Where each body node's value ends in `data` (the same for every step of a pass).
    ends: Arc<[usize]>,
    pub(crate) aux: Vec<Vec<T>>,
}

impl<T: Copy> Step<T> {
    /// The value of body node `n_in + i`.
    pub(crate) fn val(&self, i: usize) -> &[T] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// The number of body nodes after the inputs.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// What the forward pass keeps of a scan for the reverse sweep.
pub(crate) struct Trace<T> {
    /// Per body node: whether it depends on w.
    pub(crate) batched: Vec<bool>,
    /// Every step's values.
    pub(crate) steps: Vec<Step<T>>,
    /// What the reverse sweep needs when the body ran as a flat program
    /// (`scan_kernel`; `steps` is then empty).
    pub(crate) flat: Option<super::scan_kernel::Flat<T>>,
}

/// Set the body's constants (every constant lifted) to their values at step `t`.
pub(crate) fn step_consts<'a, T: Scalar>(scan: &'a Scan, consts: &mut [Cow<'a, [T]>], t: usize) {
    for (p, ops) in &scan.varying {
        if let Op::Const(v) = &ops[t] {
            consts[*p] = T::lift(v);
        }
    }
}

/// The tape of step `t` with the body's inputs filled in (the outer nodes' values, the
/// carried values of earlier steps, or their first values); `prev` holds the last steps
/// evaluated, step t − 1 last. The caller pushes the body nodes' values.
pub(crate) fn step_tape<'a, T: Scalar>(
    outer: &'a Tape<'_, T>,
    scan: &'a Scan,
    consts: &'a [Cow<'a, [T]>],
    batched: &'a [bool],
    prev: &'a [Step<T>],
    t: usize,
) -> Tape<'a, T> {
    let s = outer.s;
    let n_in = scan.inputs.len();
    let nb = scan.body.nodes.len();
    let mut vals = Vec::with_capacity(nb);
    let mut aux = Vec::with_capacity(nb);
    for (j, input) in scan.inputs.iter().enumerate() {
        let v: Cow<'a, [T]> = if matches!(scan.body.nodes[j].op, Op::Const(_)) {
            Cow::Borrowed(&[])
        } else if let Some(id) = input.source(t) {
            fit(outer.arg(id), batched[j], s)
        } else {
            let ScanInput::Carry { node, init } = input else {
                unreachable!("an outer input always has a source")
            };
            let (node, lag) = (*node, init.len());
            if let Op::Const(v) = scan.op_at(node, t - lag) {
                // a carried constant (an earlier step's data)
                let lifted = T::lift(v).into_owned();
                let reps = if batched[j] { s } else { 1 };
                Cow::Owned(lifted.repeat(reps))
            } else {
                let data = prev[prev.len() - lag].val(node - n_in);
                let size = scan.body.nodes[node].shape.size();
                fit(
                    Arg {
                        data,
                        size,
                        batched: batched[node],
                        constant: false,
                    },
                    batched[j],
                    s,
                )
            }
        };
        vals.push(v);
        aux.push(Cow::Borrowed(&[][..]));
    }
    Tape {
        graph: &scan.body,
        s,
        consts,
        vals,
        batched: Cow::Borrowed(batched),
        aux,
        traces: Vec::new(),
    }
}

/// A value as an input that is `batched` (one value per column) or not: borrowed, or
/// repeated for each of the `s` columns when the value is the same for all.
fn fit<'a, T: Copy>(src: Arg<'a, T>, batched: bool, s: usize) -> Cow<'a, [T]> {
    if src.batched || !batched {
        Cow::Borrowed(src.data)
    } else {
        Cow::Owned((0..s).flat_map(|_| src.data.iter().copied()).collect())
    }
}

/// The entries of node `k`'s value that anything reads, when that is known from the graph
/// alone: every reader of `k` is a gather (the HMM's `gamma[N]` after its loop reads 2 of
/// the scan's 2 · (N − 2) entries), so no other entry's value is used and its adjoint stays
/// zero. `None` when something else reads it (or it is an output).
pub(crate) fn gathered_entries(g: &Graph, k: usize) -> Option<Vec<bool>> {
    let id = NodeId(k);
    if g.targets.contains(&id)
        || g.pointwise
            .iter()
            .any(|p| p.loglik == id || p.quantity == Some(id))
    {
        return None;
    }
    let mut read = vec![false; g.nodes[k].shape.size()];
    for node in &g.nodes[k + 1..] {
        match &node.op {
            Op::Gather(a, idx) if *a == id => {
                for &i in idx.iter().filter(|&&i| i != super::GATHER_ZERO) {
                    *read.get_mut(i as usize)? = true;
                }
            }
            op if inputs(op).contains(&id) => return None,
            _ => {}
        }
    }
    Some(read)
}

/// The value of scan node `k` at `cols` columns (the outer tape holds its inputs), and the
/// steps' values when `partials` (for the reverse sweep; otherwise only the last step is
/// kept while evaluating).
pub(crate) fn forward<T: Scalar>(
    outer: &Tape<'_, T>,
    k: usize,
    scan: &Scan,
    cols: usize,
    partials: bool,
) -> (Vec<T>, Trace<T>) {
    let s = outer.s;
    let n_in = scan.inputs.len();
    let batched = scan.body_batched(|id| outer.is_batched(id));
    if cols == s {
        if let Some(program) = super::scan_kernel::Program::of(scan, &batched) {
            let read = gathered_entries(outer.graph, k);
            let (out, flat) = super::scan_kernel::forward(outer, scan, program, read, partials);
            return (
                out,
                Trace {
                    batched,
                    steps: Vec::new(),
                    flat,
                },
            );
        }
    }
    let mut consts = lift_consts::<T>(&scan.body);
    let stride = scan.stride();
    let offsets = scan.export_offsets();
    let size = scan.steps * stride;
    let mut out = vec![T::zero(); size * cols];
    // without partials only the steps a carry may still read are kept
    let keep = scan.max_lag();
    let mut steps: Vec<Step<T>> = Vec::with_capacity(if partials { scan.steps } else { keep });
    let fused = partials
        && scan.body.nodes[n_in..]
            .iter()
            .any(|n| matches!(n.op, Op::LikSum(..) | Op::LikPoint(..)));
    // every step's body values in one buffer of the same layout
    let ends: Arc<[usize]> = scan.body.nodes[n_in..]
        .iter()
        .enumerate()
        .scan(0, |end, (i, node)| {
            if !matches!(node.op, Op::Const(_)) {
                *end += node.shape.size() * if batched[n_in + i] { s } else { 1 };
            }
            Some(*end)
        })
        .collect();
    let total = ends.last().copied().unwrap_or(0);
    for t in 0..scan.steps {
        step_consts(scan, &mut consts, t);
        let mut data = vec![T::zero(); total];
        let aux = {
            let mut tape = step_tape(outer, scan, &consts, &batched, &steps, t);
            let mut rest = &mut data[..];
            for (p, node) in scan.body.nodes.iter().enumerate().skip(n_in) {
                let c = if batched[p] { s } else { 1 };
                let (start, end) = (if p == n_in { 0 } else { ends[p - n_in - 1] }, ends[p - n_in]);
                let (cur, tail) = std::mem::take(&mut rest).split_at_mut(end - start);
                rest = tail;
                let aux = match scan.op_at(p, t) {
                    Op::Const(_) => Vec::new(),
                    op => eval_node_into(&tape, op, node.shape, c, partials, cur),
                };
                tape.vals.push(Cow::Borrowed(cur));
                tape.aux.push(Cow::Owned(aux));
            }
            for (e, &p) in scan.exports.iter().enumerate() {
                let a = tape.arg(NodeId(p));
                if a.size == 1 {
                    let base = t * stride + offsets[e];
                    for c in 0..cols {
                        out[c * size + base] = a.at(0, c);
                    }
                    continue;
                }
                for c in 0..cols {
                    let at = c * size + t * stride + offsets[e];
                    out[at..at + a.size].copy_from_slice(a.col(c));
                }
            }
            // no allocation for a body without fused likelihoods
            if fused {
                tape.aux.drain(n_in..).map(Cow::into_owned).collect()
            } else {
                Vec::new()
            }
        };
        let step = Step {
            data,
            ends: Arc::clone(&ends),
            aux,
        };
        if !partials && steps.len() == keep {
            steps.remove(0);
        }
        steps.push(step);
    }
    if !partials {
        steps.clear();
    }
    (
        out,
        Trace {
            batched,
            steps,
            flat: None,
        },
    )
}

// ----------------------------------------------------------------------------- unrolling

/// The graph with every scan unrolled again: each step's body nodes in turn. What read the
/// scan's value reads the steps' nodes directly (a gather or assemble of it becomes one of
/// them), and nodes that only the scan's value fed are dropped.
pub fn expand(g: &Graph) -> Graph {
    let (out, _) = rebuild(g, |out, scan, map, shape| {
        Some(expand_scan(out, scan, map, shape))
    });
    // the scans' assembled values that nothing reads any more
    super::lower::prune(out, Vec::new(), Vec::new(), Vec::new()).0
}

/// The graph rebuilt node by node, each scan replaced by what `replace` makes of it (its
/// value as a node, and where each entry of that value comes from) or kept when `replace`
/// gives `None`. What read a replaced scan's value reads the entries' sources directly (a
/// gather or assemble of it becomes one of them). Also returns where each node of `g` went.
#[allow(clippy::type_complexity)]
pub(crate) fn rebuild(
    g: &Graph,
    mut replace: impl FnMut(&mut Graph, &Scan, &[NodeId], Shape) -> Option<(NodeId, Vec<(NodeId, u32)>)>,
) -> (Graph, Vec<NodeId>) {
    let mut out = Graph::new(g.dim, g.theta_dim);
    out.unfused = g.unfused;
    let mut map: Vec<NodeId> = Vec::with_capacity(g.nodes.len());
    // per replaced scan node: where each entry of its value comes from
    let mut entries: HashMap<usize, Vec<(NodeId, u32)>> = HashMap::new();
    for (k, node) in g.nodes.iter().enumerate() {
        let from = |id: NodeId, e: u32| match entries.get(&id.0) {
            Some(src) => src[e as usize],
            None => (map[id.0], e),
        };
        let replaced = match &node.op {
            Op::Scan(scan) => replace(&mut out, scan, &map, node.shape),
            _ => None,
        };
        let id = match (&node.op, replaced) {
            (_, Some((id, src))) => {
                entries.insert(k, src);
                id
            }
            (Op::Gather(a, idx), None)
                if entries.contains_key(&a.0) && !idx.contains(&super::GATHER_ZERO) =>
            {
                let pairs: Vec<(NodeId, u32)> = idx.iter().map(|&e| from(*a, e)).collect();
                out.push(assembled(&pairs), node.shape)
            }
            (Op::Assemble(ids, idx), None) if ids.iter().any(|i| entries.contains_key(&i.0)) => {
                let pairs: Vec<(NodeId, u32)> = idx.iter().map(|&(j, e)| from(ids[j as usize], e)).collect();
                out.push(assembled(&pairs), node.shape)
            }
            (op, None) => out.push(map_inputs(op.clone(), |i| map[i.0]), node.shape),
        };
        map.push(id);
    }
    out.targets = g.targets.iter().map(|&t| map[t.0]).collect();
    out.outputs_from(g, |id| map[id.0], |id| Some(map[id.0]));
    (out, map)
}

fn expand_scan(out: &mut Graph, scan: &Scan, map: &[NodeId], shape: Shape) -> (NodeId, Vec<(NodeId, u32)>) {
    let n_in = scan.inputs.len();
    let mut done: Vec<Vec<NodeId>> = Vec::with_capacity(scan.steps);
    let mut src: Vec<(NodeId, u32)> = Vec::with_capacity(shape.size());
    for t in 0..scan.steps {
        let mut cur: Vec<NodeId> = scan
            .inputs
            .iter()
            .map(|i| match (i.source(t), i) {
                (Some(id), _) => map[id.0],
                (None, ScanInput::Carry { node, init }) => done[t - init.len()][*node],
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            })
            .collect();
        for p in n_in..scan.body.nodes.len() {
            let op = map_inputs(scan.op_at(p, t).clone(), |i| cur[i.0]);
            cur.push(out.push(op, scan.body.nodes[p].shape));
        }
        for &p in &scan.exports {
            src.extend((0..scan.body.nodes[p].shape.size() as u32).map(|k| (cur[p], k)));
        }
        done.push(cur);
    }
    let id = out.push(assembled(&src), shape);
    (id, src)
}

// ---------------------------------------------------------------------------- compression

/// The longest lag of a carried value: an iteration may read the nodes of the
/// [`MAX_LAG`] iterations before it (`err[t - 1]`, `y[t - 2]`, …).
pub const MAX_LAG: usize = 16;

/// How many times the whole graph may be rebuilt by compressions (see [`compress`]).
const REBUILDS: usize = 32;

/// Stands for an input from outside the iteration in a [`skeleton`].
const EXT: usize = usize::MAX;

/// Replace each run of at least [`MIN_STEPS`] congruent iterations of a loop by a scan node.
/// `loops`: per `for` statement, the node index where each iteration starts and, last,
/// where the loop ends; `roots`: node ids held outside the graph (declared values),
/// renumbered with it.
pub(crate) fn compress(mut g: Graph, mut loops: Vec<Vec<usize>>, roots: &mut [NodeId]) -> Graph {
    loops.retain(|b| b.len() > MIN_STEPS);
    // outer loops first: a loop inside a compressed iteration is part of the body
    loops.sort_by_key(|b| std::cmp::Reverse(b[b.len() - 1] - b[0]));
    // each compression rebuilds the graph: at most REBUILDS graphs' worth of nodes in all,
    // so that thousands of short loops (one per group of ragged data) stay unrolled rather
    // than cost quadratic time
    let mut budget = REBUILDS * g.nodes.len();
    for i in 0..loops.len() {
        let bounds = std::mem::take(&mut loops[i]);
        if bounds.len() <= MIN_STEPS {
            continue;
        }
        for (k, m, pattern) in runs(&g, &bounds).into_iter().rev() {
            if budget < g.nodes.len() {
                return g;
            }
            budget -= g.nodes.len();
            let (a, b) = (bounds[k], bounds[m + 1]);
            let Some((next, added)) = compress_run(&g, &bounds, k, m, &pattern, roots) else {
                continue;
            };
            g = next;
            let shift = |x: usize| {
                if x <= a {
                    Some(x)
                } else if x >= b {
                    Some(x - (b - a) + added)
                } else {
                    None
                }
            };
            for l in &mut loops[i + 1..] {
                *l = l
                    .iter()
                    .map(|&x| shift(x))
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default();
            }
        }
    }
    g
}

/// Iteration t's nodes with each input from outside the iteration replaced by [`EXT`],
/// constants without their values and gathers without their indices; `None` when an
/// iteration cannot be a scan step.
fn skeleton(g: &Graph, bounds: &[usize], t: usize) -> Option<Vec<(Op, Shape)>> {
    let (s0, s1) = (bounds[t], bounds[t + 1]);
    let code = |x: NodeId| NodeId(if x.0 >= s0 { x.0 - s0 } else { EXT });
    (s0..s1)
        .map(|k| {
            let node = &g.nodes[k];
            let op = match &node.op {
                Op::Scan(_) | Op::Param { .. } | Op::Hyper { .. } => return None,
                Op::Const(_) => Op::Const(Vec::new()),
                Op::Gather(a, _) => Op::Gather(code(*a), Vec::new()),
                Op::Assemble(ids, _) => Op::Assemble(ids.iter().map(|&i| code(i)).collect(), Vec::new()),
                op => map_inputs(op.clone(), code),
            };
            Some((op, node.shape))
        })
        .collect()
}

/// The inputs of iteration t from outside it, in the order of its nodes and their inputs.
fn external(g: &Graph, bounds: &[usize], t: usize) -> Vec<NodeId> {
    let s0 = bounds[t];
    (s0..bounds[t + 1])
        .flat_map(|k| inputs(&g.nodes[k].op))
        .filter(|x| x.0 < s0)
        .collect()
}

/// How an input from outside an iteration relates to the same input of the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Link {
    /// The same node (before the loop, or in an iteration read by all that follow).
    Same,
    /// The node at the same position of the iteration d before (a carry with lag d).
    Lag(usize),
}

/// The iteration holding node x and x's position in it.
fn locate(bounds: &[usize], x: NodeId) -> Option<(usize, usize)> {
    if x.0 < bounds[0] || x.0 >= bounds[bounds.len() - 1] {
        return None;
    }
    let u = bounds.partition_point(|&b| b <= x.0) - 1;
    Some((u, x.0 - bounds[u]))
}

/// The links between the outside inputs of iteration t (`this`) and of iteration t + 1
/// (`next`), slot by slot; `None` when a slot is neither.
fn links(bounds: &[usize], t: usize, this: &[NodeId], next: &[NodeId]) -> Option<Vec<Link>> {
    if this.len() != next.len() {
        return None;
    }
    this.iter()
        .zip(next)
        .map(|(&x, &y)| {
            if x == y {
                return Some(Link::Same);
            }
            let ((u, q), (v, r)) = (locate(bounds, x)?, locate(bounds, y)?);
            (v == u + 1 && q == r && t - u <= MAX_LAG).then_some(Link::Lag(t - u))
        })
        .collect()
}

/// The runs (first and last iteration, and how their outside inputs link from step to
/// step) of at least [`MIN_STEPS`] consecutive congruent, non-empty iterations.
fn runs(g: &Graph, bounds: &[usize]) -> Vec<(usize, usize, Vec<Link>)> {
    let n = bounds.len() - 1;
    let mut out = Vec::new();
    let mut t = 0;
    while t + 1 < n {
        let first = skeleton(g, bounds, t).filter(|s| !s.is_empty());
        let pattern = first
            .as_ref()
            .filter(|sk| skeleton(g, bounds, t + 1).as_ref() == Some(*sk))
            .and_then(|_| links(bounds, t, &external(g, bounds, t), &external(g, bounds, t + 1)));
        let (Some(sk), Some(pattern)) = (first, pattern) else {
            t += 1;
            continue;
        };
        let mut m = t + 1;
        let mut ext = external(g, bounds, m);
        while m + 1 < n && skeleton(g, bounds, m + 1).as_ref() == Some(&sk) {
            let e = external(g, bounds, m + 1);
            if links(bounds, m, &ext, &e).as_ref() != Some(&pattern) {
                break;
            }
            m += 1;
            ext = e;
        }
        if m + 1 - t >= MIN_STEPS {
            out.push((t, m, pattern));
            t = m + 1;
        } else {
            t += 1;
        }
    }
    out
}

/// Iterations k..=m of the loop with these bounds as one scan node, their outside inputs
/// linked by `pattern`: the new graph and the number of nodes that stand where the run's
/// nodes were. `None` when the run cannot be one (a carried value whose first values are
/// missing or of another shape, or nothing read from it).
fn compress_run(
    g: &Graph,
    bounds: &[usize],
    k: usize,
    m: usize,
    pattern: &[Link],
    roots: &mut [NodeId],
) -> Option<(Graph, usize)> {
    let (a, b) = (bounds[k], bounds[m + 1]);
    let l = bounds[k + 1] - a;
    let steps = m + 1 - k;
    // the inputs, from the first iteration's outside inputs: outer nodes and carries
    let mut inputs: Vec<ScanInput> = Vec::new();
    let mut input_of: HashMap<(Link, usize), usize> = HashMap::new();
    let mut slot_input: Vec<usize> = Vec::new();
    for (&x, &link) in external(g, bounds, k).iter().zip(pattern) {
        let key = match link {
            Link::Same => (link, x.0),
            Link::Lag(_) => (link, locate(bounds, x)?.1),
        };
        if let Some(&j) = input_of.get(&key) {
            slot_input.push(j);
            continue;
        }
        inputs.push(match link {
            Link::Same => ScanInput::Outer(x),
            Link::Lag(d) => {
                let q = key.1;
                let shape = g.nodes[a + q].shape;
                let init = (0..d)
                    .map(|s| {
                        let u = k - d + s;
                        let id = bounds[u] + q;
                        (id < bounds[u + 1] && g.nodes[id].shape == shape).then_some(NodeId(id))
                    })
                    .collect::<Option<Vec<_>>>()?;
                ScanInput::Carry { node: q, init }
            }
        });
        input_of.insert(key, inputs.len() - 1);
        slot_input.push(inputs.len() - 1);
    }
    let n_in = inputs.len();
    for i in &mut inputs {
        if let ScanInput::Carry { node, .. } = i {
            *node += n_in;
        }
    }
    let mut body = Graph::new(0, 0);
    for (j, i) in inputs.iter().enumerate() {
        let src = &g.nodes[i.nodes()[0].0];
        match (&src.op, i) {
            (Op::Const(v), ScanInput::Outer(_)) => body.push(Op::Const(v.clone()), src.shape),
            _ => body.push(Op::Param { offset: j }, src.shape),
        };
    }
    // where each node's outside inputs start among the slots (the same in every iteration)
    let mut slot_start = Vec::with_capacity(l);
    let mut count = 0;
    for p in 0..l {
        slot_start.push(count);
        count += super::build::inputs(&g.nodes[a + p].op)
            .iter()
            .filter(|x| x.0 < a)
            .count();
    }
    // step t's nodes in body numbering
    let at_step = |t: usize, p: usize| {
        let base = a + t * l;
        let slot = std::cell::Cell::new(slot_start[p]);
        map_inputs(g.nodes[base + p].op.clone(), |x| {
            NodeId(if x.0 >= base {
                n_in + x.0 - base
            } else {
                let j = slot_input[slot.get()];
                slot.set(slot.get() + 1);
                j
            })
        })
    };
    let mut varying = Vec::new();
    for p in 0..l {
        let template = at_step(0, p);
        if matches!(template, Op::Const(_) | Op::Gather(..) | Op::Assemble(..)) {
            let ops: Vec<Op> = (0..steps).map(|t| at_step(t, p)).collect();
            if ops.iter().any(|o| *o != template) {
                varying.push((n_in + p, ops));
            }
        }
        body.push(template, g.nodes[a + p].shape);
    }
    // what is read from the run after it: the scan exports those body nodes at every step
    let in_run = |x: NodeId| x.0 >= a && x.0 < b;
    let position = |x: NodeId| ((x.0 - a) / l, (x.0 - a) % l);
    let mut exported: BTreeSet<usize> = BTreeSet::new();
    let mut gathered: BTreeSet<NodeId> = BTreeSet::new();
    for node in &g.nodes[b..] {
        match &node.op {
            Op::Assemble(ids, _) | Op::Pack(ids) => {
                exported.extend(ids.iter().filter(|&&x| in_run(x)).map(|&x| position(x).1));
            }
            op => gathered.extend(super::build::inputs(op).into_iter().filter(|&x| in_run(x))),
        }
    }
    let run_targets: Vec<NodeId> = g.targets.iter().copied().filter(|&t| in_run(t)).collect();
    exported.extend(run_targets.iter().map(|&t| position(t).1));
    gathered.extend(
        g.pointwise
            .iter()
            .flat_map(|p| std::iter::once(p.loglik).chain(p.quantity))
            .chain(roots.iter().copied())
            .filter(|&x| in_run(x)),
    );
    exported.extend(gathered.iter().map(|&x| position(x).1));
    if exported.is_empty() {
        return None;
    }
    let simple = simplify(body, inputs, &varying, &exported, a);
    let scan = Scan {
        steps,
        body: simple.body,
        inputs: simple.inputs,
        varying: simple.varying,
        exports: exported.iter().map(|&p| simple.position[p]).collect(),
    };
    let stride = scan.stride();
    let offsets: HashMap<usize, usize> = exported.iter().copied().zip(scan.export_offsets()).collect();
    let flat = |x: NodeId| {
        let (t, p) = position(x);
        t * stride + offsets[&p]
    };
    let entries = |x: NodeId| {
        let f = flat(x) as u32;
        (f..f + g.nodes[x.0].shape.size() as u32).collect::<Vec<u32>>()
    };
    let mut out = Graph::new(g.dim, g.theta_dim);
    out.unfused = g.unfused;
    out.nodes.extend_from_slice(&g.nodes[..a]);
    out.nodes.extend(simple.hoisted);
    let scan_id = out.push(Op::Scan(Box::new(scan)), Shape::Vector(steps * stride));
    let mut gather_of: HashMap<NodeId, NodeId> = HashMap::new();
    for &x in &gathered {
        gather_of.insert(x, out.push(Op::Gather(scan_id, entries(x)), g.nodes[x.0].shape));
    }
    let target_sum = (!run_targets.is_empty()).then(|| {
        let idx = run_targets.iter().flat_map(|&t| entries(t)).collect::<Vec<_>>();
        let terms = out.push(Op::Gather(scan_id, idx), Shape::Vector(run_targets.len()));
        out.push(Op::Sum(terms), Shape::Scalar)
    });
    let added = out.nodes.len() - a;
    let remap = |x: NodeId| {
        if x.0 < a {
            x
        } else if x.0 >= b {
            NodeId(x.0 - (b - a) + added)
        } else {
            gather_of[&x]
        }
    };
    for node in &g.nodes[b..] {
        let op = match &node.op {
            Op::Assemble(ids, idx) if ids.iter().any(|&x| in_run(x)) => {
                let pairs: Vec<(NodeId, u32)> = idx
                    .iter()
                    .map(|&(j, e)| {
                        let x = ids[j as usize];
                        if in_run(x) {
                            (scan_id, flat(x) as u32 + e)
                        } else {
                            (remap(x), e)
                        }
                    })
                    .collect();
                assembled(&pairs)
            }
            Op::Pack(ids) if ids.iter().any(|&x| in_run(x)) => {
                let pairs: Vec<(NodeId, u32)> = ids
                    .iter()
                    .map(|&x| {
                        if in_run(x) {
                            (scan_id, flat(x) as u32)
                        } else {
                            (remap(x), 0)
                        }
                    })
                    .collect();
                assembled(&pairs)
            }
            op => map_inputs(op.clone(), remap),
        };
        out.push(op, node.shape);
    }
    let mut first = true;
    for &t in &g.targets {
        if !in_run(t) {
            out.targets.push(remap(t));
        } else if std::mem::take(&mut first) {
            out.targets.extend(target_sum);
        }
    }
    // the labels of the run's nodes go with them
    out.outputs_from(g, remap, |id| (!in_run(id)).then(|| remap(id)));
    for r in roots.iter_mut() {
        *r = remap(*r);
    }
    Some((out, added))
}

/// A scan body after [`simplify`].
struct Simplified {
    body: Graph,
    inputs: Vec<ScanInput>,
    varying: Vec<(usize, Vec<Op>)>,
    /// Per position of the first iteration, its body node (for the exported positions).
    position: Vec<usize>,
    /// The nodes moved out of the body, to stand right after node `a - 1` of the graph.
    hoisted: Vec<super::Node>,
}

/// The body of a scan (inputs, then one node per position of the first iteration) with
/// common subexpressions merged (the same operation on the same nodes, constants equal at
/// every step), and the operations that are the same at every step (computed from outer
/// nodes and constants alone: `lt[j, k]`, `mu[k]` of an HMM) moved out before the scan and
/// read as inputs. Exported and carried nodes stay in the body. `a`: where the scan's
/// nodes start in the graph (the moved nodes are numbered from there).
fn simplify(
    body: Graph,
    inputs: Vec<ScanInput>,
    varying: &[(usize, Vec<Op>)],
    exported: &BTreeSet<usize>,
    a: usize,
) -> Simplified {
    let n_in = inputs.len();
    let nb = body.nodes.len();
    let vary: HashMap<usize, &Vec<Op>> = varying.iter().map(|(p, ops)| (*p, ops)).collect();
    // common subexpressions: a node is merged into the first with the same key
    let mut canon: Vec<usize> = (0..nb).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for p in n_in..nb {
        let c = &canon;
        let mapped = |op: &Op| map_inputs(op.clone(), |i| NodeId(c[i.0]));
        let node = &body.nodes[p];
        let key = match vary.get(&p) {
            Some(ops) => format!("{:?}{:?}", node.shape, ops.iter().map(mapped).collect::<Vec<_>>()),
            None => format!("{:?}{:?}", node.shape, mapped(&node.op)),
        };
        canon[p] = *seen.entry(key).or_insert(p);
    }
    let mut protect = vec![false; nb];
    for &p in exported {
        protect[canon[n_in + p]] = true;
    }
    for i in &inputs {
        if let ScanInput::Carry { node, .. } = *i {
            protect[canon[node]] = true;
        }
    }
    // hoisted: the same at every step, and reading only outer nodes, constants or hoisted
    let is_const = |p: usize| matches!(body.nodes[p].op, Op::Const(_)) && !vary.contains_key(&p);
    let mut hoist = vec![false; nb];
    for p in n_in..nb {
        let node = &body.nodes[p];
        if canon[p] != p || protect[p] || vary.contains_key(&p) || matches!(node.op, Op::Const(_)) {
            continue;
        }
        let mut ok = true;
        super::build::each_input(&node.op, |i| {
            let i = canon[i.0];
            let outer = i < n_in && matches!(inputs[i], ScanInput::Outer(_));
            ok &= outer || is_const(i) || hoist[i];
        });
        hoist[p] = ok;
    }
    // the moved nodes, in outer numbering (constants they read are moved along)
    let mut hoisted: Vec<super::Node> = Vec::new();
    let mut outer_id: HashMap<usize, NodeId> = HashMap::new();
    for (j, i) in inputs.iter().enumerate() {
        if let ScanInput::Outer(id) = i {
            outer_id.insert(j, *id);
        }
    }
    for p in (n_in..nb).filter(|&p| hoist[p]) {
        for i in super::build::inputs(&body.nodes[p].op) {
            let i = canon[i.0];
            if let std::collections::hash_map::Entry::Vacant(e) = outer_id.entry(i) {
                hoisted.push(body.nodes[i].clone());
                e.insert(NodeId(a + hoisted.len() - 1));
            }
        }
        let op = map_inputs(body.nodes[p].op.clone(), |i| outer_id[&canon[i.0]]);
        hoisted.push(super::Node {
            op,
            shape: body.nodes[p].shape,
        });
        outer_id.insert(p, NodeId(a + hoisted.len() - 1));
    }
    // the new body: the inputs, one more per hoisted node read, then the kept nodes
    let kept: Vec<usize> = (n_in..nb).filter(|&p| canon[p] == p && !hoist[p]).collect();
    // (a varying node reads the same nodes at every step: only its constants or indices change)
    let mut read: Vec<usize> = Vec::new();
    for &p in &kept {
        super::build::each_input(&body.nodes[p].op, |i| {
            let i = canon[i.0];
            if hoist[i] && !read.contains(&i) {
                read.push(i);
            }
        });
    }
    let mut new_id = vec![usize::MAX; nb];
    let mut out = Graph::new(0, 0);
    for (j, node) in body.nodes.iter().enumerate().take(n_in) {
        new_id[j] = out.push(node.op.clone(), node.shape).0;
    }
    let mut new_inputs = inputs;
    for &h in &read {
        let j = new_inputs.len();
        new_id[h] = out.push(Op::Param { offset: j }, body.nodes[h].shape).0;
        new_inputs.push(ScanInput::Outer(outer_id[&h]));
    }
    let renumber = |op: &Op, new_id: &[usize]| map_inputs(op.clone(), |i| NodeId(new_id[canon[i.0]]));
    for &p in &kept {
        let op = renumber(&body.nodes[p].op, &new_id);
        new_id[p] = out.push(op, body.nodes[p].shape).0;
    }
    for i in &mut new_inputs {
        if let ScanInput::Carry { node, .. } = i {
            *node = new_id[canon[*node]];
        }
    }
    let new_varying = kept
        .iter()
        .filter_map(|p| {
            vary.get(p)
                .map(|ops| (new_id[*p], ops.iter().map(|o| renumber(o, &new_id)).collect()))
        })
        .collect();
    let position = (0..nb - n_in).map(|p| new_id[canon[n_in + p]]).collect();
    Simplified {
        body: out,
        inputs: new_inputs,
        varying: new_varying,
        position,
        hoisted,
    }
}

/// The operation whose entry i is entry `pairs[i].1` of node `pairs[i].0`: a gather when
/// every entry comes from one node, else an assemble.
pub(crate) fn assembled(pairs: &[(NodeId, u32)]) -> Op {
    let first = pairs[0].0;
    if pairs.iter().all(|p| p.0 == first) {
        return Op::Gather(first, pairs.iter().map(|p| p.1).collect());
    }
    super::build::assemble_op(pairs)
}
