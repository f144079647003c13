//! Batched forward evaluation of a [`Graph`], generic over the scalar type.
//!
//! Input: the graph, θ and a D×S block of columns of W. Output: a [`Tape`] holding every
//! node that depends on w as a (size × S) column-major matrix, and every node that does not
//! (constants, θ and nodes computed from θ and data only, such as RBF features with a
//! hyperparameter width) once, without a batch dimension, plus the S target values. `X * w`
//! with X constant (or θ-only) and w batched is one matrix product X·W. Callers split large batches into chunks ([`chunk_cols`]) and run them in
//! parallel; no loop over samples surrounds the graph.

use std::borrow::Cow;

use super::{Fun1, Fun2, Fun3, Graph, NodeId, Op, Shape, GATHER_ZERO};
use crate::autodiff::Scalar;
use crate::autodiff::{incomplete, owen, von_mises_cdf};

/// Batch columns evaluated together; chunks bound memory and are spread over threads.
pub const CHUNK: usize = 256;

/// Entries of a batched node's chunk that stay cache-friendly: 16 384 f64 (128 KiB), so a
/// node, its operands and its adjoint fit in L2 together.
pub const CHUNK_ENTRIES: usize = 16_384;

/// The bookkeeping of one node per chunk, in entries of elementwise work it costs as much as.
const NODE_OVERHEAD_ENTRIES: usize = 64;

/// Entries of all batched nodes of one chunk (per buffer) above which a chunk is not widened
/// for the sake of per-node overhead: 1 Mi f64 (8 MiB), so that a chunk's values and adjoints
/// stay in the shared L3 cache.
const CHUNK_MEMORY: usize = 1 << 20;

/// The fewest columns per chunk for a graph with a scan node: each body operation's
/// bookkeeping is paid once per step and chunk, and the steps' buffers are written and
/// read back in order, so a long recursion may outgrow [`CHUNK_MEMORY`] rather than run a
/// few columns at a time (ARMA(1,1) at T = 12 800, `vi_diag`: 64 columns instead of 11,
/// 7.6 s → 3.9 s).
const SCAN_MIN_COLS: usize = 64;

/// The work done once per chunk may take about 1/this of a chunk's time.
const PER_CHUNK_SHARE: usize = 20;

/// Columns per chunk for `s` columns of graph `g`: 1 for a single point (one chunk, no
/// hand-over to the thread pool); [`chunk_cols`], narrowed so that the batch is split evenly
/// over the pool's threads (at least 8 columns a chunk). `vi_diag`'s first stage on 125
/// draws of the HMM at N = 100 ran on one core: 4.6 µs per column against 2.1 µs at
/// S = 1000; GARCH(1,1)'s (chunks of 104 columns) ran as 104 + 21 columns, 1.25× faster
/// on two threads than on one.
pub fn chunk_for(g: &Graph, s: usize) -> usize {
    if s == 1 {
        return 1;
    }
    spread(chunk_cols(g), s, rayon::current_num_threads().max(1))
}

/// Chunks of at most `chunk` columns for `s` columns, as many as a multiple of `threads`
/// and of equal size, so that each thread gets the same work.
fn spread(chunk: usize, s: usize, threads: usize) -> usize {
    if threads == 1 {
        return chunk;
    }
    let chunks = s.div_ceil(chunk).next_multiple_of(threads);
    s.div_ceil(chunks).max(8).min(chunk)
}

/// Columns per chunk for graph `g`: [`CHUNK`], fewer when its widest batched node is long
/// (so that the chunk's buffers stay in cache, [`CHUNK_ENTRIES`]), but not so few that the
/// nodes evaluated once per chunk (computed from θ, such as RBF features of a learned
/// width) take more than about 1/20 of the time; at least 8.
///
/// On the stochastic volatility example (vectors of 1000 per column, nothing θ-dependent)
/// this is 16 columns instead of 256: a pmfvb sweep evaluates 2000 columns per block, and at
/// 256 columns each node's buffer (2 MB) left the cache.
pub fn chunk_cols(g: &Graph) -> usize {
    let batched = batched_mask(g);
    let (mut widest, mut per_column, mut per_chunk, mut n_batched) = (1, 0, 0, 0);
    let mut fewest = 8;
    for (i, node) in g.nodes.iter().enumerate() {
        let size = g.shape(NodeId(i)).size();
        if let (true, Op::Scan(scan)) = (batched[i], &node.op) {
            // each step of the body is evaluated like nodes of their own
            let (w, entries, nodes) = scan.work();
            widest = widest.max(w);
            per_column += entries;
            n_batched += nodes;
            fewest = SCAN_MIN_COLS;
        } else if batched[i] {
            widest = widest.max(size);
            per_column += size;
            n_batched += 1;
        } else if !matches!(node.op, Op::Const(_)) {
            per_chunk += size;
        }
    }
    let for_cache = CHUNK_ENTRIES / widest;
    let for_overhead = PER_CHUNK_SHARE * per_chunk / per_column.max(1);
    // Many small batched nodes (a recursion unrolled into scalar nodes): each node costs
    // about as much bookkeeping per chunk as 64 entries of work, so chunks widen until that
    // is at most a quarter of the work, while a chunk's buffers stay under CHUNK_MEMORY.
    let for_nodes =
        (4 * NODE_OVERHEAD_ENTRIES * n_batched / per_column.max(1)).min(CHUNK_MEMORY / per_column.max(1));
    for_cache.max(for_overhead).max(for_nodes).clamp(fewest, CHUNK)
}

/// A node's value as an operand: its entries and whether it has a batch dimension.
#[derive(Clone, Copy)]
pub(crate) struct Arg<'a, T> {
    pub data: &'a [T],
    pub size: usize,
    /// One value per batch column (the node depends on w); otherwise one value for all.
    pub batched: bool,
    /// A constant of the graph (data or literal), not merely the same for every column.
    pub constant: bool,
}

impl<'a, T: Copy> Arg<'a, T> {
    /// Entry i of batch column s.
    #[inline]
    pub fn at(&self, i: usize, s: usize) -> T {
        if self.batched {
            self.data[i + s * self.size]
        } else {
            self.data[i]
        }
    }

    /// Batch column s.
    #[inline]
    pub fn col(&self, s: usize) -> &'a [T] {
        if self.batched {
            &self.data[s * self.size..(s + 1) * self.size]
        } else {
            self.data
        }
    }
}

/// The values of every node at S batch columns.
pub struct Tape<'a, T: Scalar> {
    /// The graph evaluated.
    pub graph: &'a Graph,
    /// Number of batch columns.
    pub s: usize,
    pub(crate) consts: &'a [Cow<'a, [T]>],
    /// Per node its value (borrowed only in the tape of one step of a [`Op::Scan`] body,
    /// whose inputs are other nodes' values).
    pub(crate) vals: Vec<Cow<'a, [T]>>,
    /// Per node: whether it depends on w (and so has a batch dimension).
    pub(crate) batched: Cow<'a, [bool]>,
    /// Per node: partial derivatives cached by the forward pass for the reverse sweep (the
    /// fused likelihoods of [`super::fused`]); empty for other nodes.
    pub(crate) aux: Vec<Cow<'a, [T]>>,
    /// The body values of every step of each [`Op::Scan`] node, by node index, kept for the
    /// reverse sweep (empty when the tape is for values only).
    pub(crate) traces: Vec<(usize, super::scan::Trace<T>)>,
}

impl<'a, T: Scalar> Tape<'a, T> {
    /// The value of node `id` as an operand.
    pub(crate) fn arg(&self, id: NodeId) -> Arg<'_, T> {
        let size = self.graph.nodes[id.0].shape.size();
        match &self.graph.nodes[id.0].op {
            Op::Const(_) => Arg {
                data: &self.consts[id.0],
                size,
                batched: false,
                constant: true,
            },
            _ => Arg {
                data: &self.vals[id.0],
                size,
                batched: self.batched[id.0],
                constant: false,
            },
        }
    }

    /// Whether node `id` depends on w (one value per batch column).
    pub fn is_batched(&self, id: NodeId) -> bool {
        self.batched[id.0]
    }

    /// The stored steps of the scan node `k`.
    pub(crate) fn trace(&self, k: usize) -> &super::scan::Trace<T> {
        &self
            .traces
            .iter()
            .find(|(i, _)| *i == k)
            .expect("a scan node evaluated for the reverse sweep keeps its trace")
            .1
    }

    /// Entry i of node `id` at batch column s.
    pub fn value(&self, id: NodeId, i: usize, s: usize) -> T {
        self.arg(id).at(i, s)
    }

    /// The log joint Σ targets at each batch column.
    pub fn target_values(&self) -> Vec<T> {
        let mut out = vec![T::zero(); self.s];
        for &t in &self.graph.targets {
            let a = self.arg(t);
            for (s, o) in out.iter_mut().enumerate() {
                *o += a.at(0, s);
            }
        }
        out
    }
}

/// Every constant of the graph converted to T (borrowed for f64), indexed by node.
pub fn lift_consts<T: Scalar>(graph: &Graph) -> Vec<Cow<'_, [T]>> {
    graph
        .nodes
        .iter()
        .map(|n| match &n.op {
            Op::Const(v) => T::lift(v),
            _ => Cow::Owned(Vec::new()),
        })
        .collect()
}

/// Per node: whether it depends on w. Nodes that do not (constants, θ, and what is computed
/// from them alone) are the same for every batch column and are evaluated once.
pub fn batched_mask(graph: &Graph) -> Vec<bool> {
    let mut out: Vec<bool> = Vec::with_capacity(graph.nodes.len());
    for node in &graph.nodes {
        let b = match &node.op {
            Op::Param { .. } | Op::Rng(_) => true,
            Op::Const(_) | Op::Hyper { .. } => false,
            op => {
                let mut any = false;
                super::build::each_input(op, |i| any |= out[i.0]);
                any
            }
        };
        out.push(b);
    }
    out
}

/// Where ∇_θ leaves the part of the graph that is the same for every column, in one pass
/// over the batched nodes' inputs.
pub struct Frontier {
    /// Per node: it does not depend on w but is read by a node that does, or is a target
    /// term.
    pub nodes: Vec<bool>,
    /// Per node: a frontier node whose ∇_θ share is pushed forward through its consumers
    /// instead of pulled back through an adjoint — one read by the batched part only as the
    /// left factor A of products A·B (RBF features Φ(θ) times the weights), and not a target.
    /// Its adjoint would be one (size × S) block filled by S outer products (N·D·S entries
    /// for Φ); `autodiff::reverse`'s `push_matmul` forms (dA/dθ_q)·B instead, of the
    /// product's own size.
    pub pushed: Vec<bool>,
}

/// The [`Frontier`] of a graph with these batched nodes.
pub fn theta_frontier(graph: &Graph, batched: &[bool]) -> Frontier {
    let n = graph.nodes.len();
    let mut nodes = vec![false; n];
    // read by a batched node other than as the left factor of a product, or a target
    let mut elsewhere = vec![false; n];
    for (k, node) in graph.nodes.iter().enumerate() {
        if batched[k] {
            let left_factor = match node.op {
                Op::MatMul(a, b) if a != b => Some(a),
                _ => None,
            };
            for i in super::build::inputs(&node.op) {
                nodes[i.0] |= !batched[i.0] && !matches!(graph.nodes[i.0].op, Op::Const(_));
                elsewhere[i.0] |= Some(i) != left_factor;
            }
        }
    }
    for t in &graph.targets {
        nodes[t.0] |= !batched[t.0] && !matches!(graph.nodes[t.0].op, Op::Const(_));
        elsewhere[t.0] = true;
    }
    let pushed = nodes.iter().zip(&elsewhere).map(|(f, e)| *f && !e).collect();
    Frontier { nodes, pushed }
}

/// Evaluate every node at the S columns of `w` (D×S column-major) and θ; nodes that do not
/// depend on w are evaluated once. The tape keeps what the reverse sweep needs.
pub fn forward<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
) -> Tape<'a, T> {
    forward_with(graph, consts, theta, w, s, true, None, None)
}

/// [`forward`] of only the nodes marked in `needed` (see [`ancestors`]); the others are
/// left empty and must not be read.
pub fn forward_needed<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
    needed: &[bool],
) -> Tape<'a, T> {
    forward_with(graph, consts, theta, w, s, false, Some(needed), None)
}

/// [`forward`] of the nodes that do not depend on w only, with what their reverse sweep
/// needs (the fused likelihoods' partials): their values are the same at every column.
pub fn forward_theta_only<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
) -> Tape<'a, T> {
    let theta_only: Vec<bool> = batched_mask(graph).iter().map(|b| !b).collect();
    forward_with(graph, consts, theta, &[], 1, true, Some(&theta_only), None)
}

/// Per node: whether it is one of `ids` or one of their inputs, directly or not.
pub fn ancestors(graph: &Graph, ids: &[NodeId]) -> Vec<bool> {
    let mut need = vec![false; graph.nodes.len()];
    for id in ids {
        need[id.0] = true;
    }
    for k in (0..graph.nodes.len()).rev() {
        if need[k] {
            for i in super::build::inputs(&graph.nodes[k].op).iter() {
                need[i.0] = true;
            }
        }
    }
    need
}

/// [`forward`] for values only: the fused likelihoods skip their partial derivatives, so
/// the tape cannot be swept in reverse (`predict`).
pub fn forward_values<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
) -> Tape<'a, T> {
    forward_with(graph, consts, theta, w, s, false, None, None)
}

/// [`forward_values`] of a graph with random draws ([`Op::Rng`]): column c draws from
/// `columns`' generator c, node after node, so a column's values depend only on its own
/// generator, whatever the chunking.
pub fn forward_random<'a>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [f64]>],
    theta: &[f64],
    w: &[f64],
    s: usize,
    columns: &mut super::generate::Columns,
) -> Tape<'a, f64> {
    forward_with(graph, consts, theta, w, s, false, None, Some(columns))
}

#[allow(clippy::too_many_arguments)]
fn forward_with<'a, T: Scalar>(
    graph: &'a Graph,
    consts: &'a [Cow<'a, [T]>],
    theta: &[T],
    w: &[T],
    s: usize,
    partials: bool,
    needed: Option<&[bool]>,
    mut columns: Option<&mut super::generate::Columns>,
) -> Tape<'a, T> {
    let mut tape = Tape {
        graph,
        s,
        consts,
        vals: Vec::with_capacity(graph.nodes.len()),
        batched: Cow::Owned(batched_mask(graph)),
        aux: Vec::with_capacity(graph.nodes.len()),
        traces: Vec::new(),
    };
    for (k, node) in graph.nodes.iter().enumerate() {
        let skip = needed.is_some_and(|n| !n[k]);
        let cols = if tape.batched[k] { s } else { 1 };
        let (v, aux) = match &node.op {
            Op::Const(_) => (Vec::new(), Vec::new()),
            _ if skip => (Vec::new(), Vec::new()),
            Op::Param { offset } => (
                slice_columns(w, graph.dim, *offset, node.shape.size(), s),
                Vec::new(),
            ),
            Op::Hyper { offset } => (theta[*offset..*offset + node.shape.size()].to_vec(), Vec::new()),
            Op::Rng(r) => (
                super::generate::draw_node(&tape, r, node.shape, cols, columns.as_deref_mut()),
                Vec::new(),
            ),
            Op::Scan(scan) => {
                let (v, trace) = super::scan::forward(&tape, k, scan, cols, partials);
                if partials {
                    tape.traces.push((k, trace));
                }
                (v, Vec::new())
            }
            op => eval_node(&tape, op, node.shape, cols, partials),
        };
        tape.vals.push(Cow::Owned(v));
        tape.aux.push(Cow::Owned(aux));
    }
    tape
}

/// The value of an operation on other nodes of `tape` at `cols` columns, and the partial
/// derivatives a fused likelihood caches for the reverse sweep (when `partials`).
pub(crate) fn eval_node<T: Scalar>(
    tape: &Tape<'_, T>,
    op: &Op,
    shape: Shape,
    cols: usize,
    partials: bool,
) -> (Vec<T>, Vec<T>) {
    match op {
        Op::LikSum(lik, ids) | Op::LikPoint(lik, ids) => {
            let mut aux = Vec::new();
            let args: Vec<Arg<T>> = ids.iter().map(|&i| tape.arg(i)).collect();
            let v = super::fused::forward(*lik, &args, cols, partials.then_some(&mut aux), fused_output(op));
            (v, aux)
        }
        op => (eval_op(op, shape, &|id| tape.arg(id), cols), Vec::new()),
    }
}

/// As [`eval_node`], with the value written into `out` (its `shape.size() · cols` entries):
/// a step of a recursion writes its nodes into the step's one buffer. Returns the partials.
pub(crate) fn eval_node_into<T: Scalar>(
    tape: &Tape<'_, T>,
    op: &Op,
    shape: Shape,
    cols: usize,
    partials: bool,
    out: &mut [T],
) -> Vec<T> {
    if matches!(op, Op::LikSum(..) | Op::LikPoint(..)) {
        let (v, aux) = eval_node(tape, op, shape, cols, partials);
        out.copy_from_slice(&v);
        return aux;
    }
    eval_op_into(op, shape, &|id| tape.arg(id), cols, out);
    Vec::new()
}

fn slice_columns<T: Copy>(w: &[T], d: usize, offset: usize, n: usize, s: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n * s);
    for c in 0..s {
        out.extend_from_slice(&w[c * d + offset..c * d + offset + n]);
    }
    out
}

/// The value of one operation at S batch columns, given its operands.
pub(crate) fn eval_op<'b, T: Scalar>(
    op: &Op,
    shape: Shape,
    get: &dyn Fn(NodeId) -> Arg<'b, T>,
    s: usize,
) -> Vec<T> {
    let n = shape.size();
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } | Op::Scan(_) | Op::Rng(_) => {
            unreachable!("inputs, scans and random draws are handled by forward")
        }
        Op::Unary(f, a) => {
            let mut out = get(*a).data.to_vec();
            T::map_in_place(*f, &mut out);
            out
        }
        Op::Binary(..) | Op::Gather(..) | Op::Pack(..) | Op::Assemble(..) => {
            let mut out = Vec::with_capacity(n * s);
            put_values(op, shape, get, s, &mut out);
            out
        }
        Op::LogSumExp(a) => {
            let mut out = vec![T::zero(); s];
            lse_into(get(*a), s, &mut out);
            out
        }
        Op::Ternary(f, ids) => ternary_values(*f, ids.map(get), n, s),
        Op::MatMul(a, b) => matmul_values(get(*a), get(*b), shape, s),
        Op::Transpose(a) => transpose_values(get(*a), shape, s),
        Op::CumSum(a) => {
            let a = get(*a);
            let mut out = Vec::with_capacity(n * s);
            for c in 0..s {
                let mut acc = T::zero();
                out.extend(a.col(c).iter().map(|&v| {
                    acc += v;
                    acc
                }));
            }
            out
        }
        Op::Sum(a) => reduce(get(*a), s, |x| x.iter().copied().sum()),
        Op::LogSumExpRows(a) => lse_rows_values(get(*a), shape.rows(), s),
        Op::Max(a) => reduce(get(*a), s, |x| x[argext(x, true)]),
        Op::Min(a) => reduce(get(*a), s, |x| x[argext(x, false)]),
        Op::Cholesky(a) => {
            let a = get(*a);
            (0..s).flat_map(|c| cholesky(a.col(c), shape.rows())).collect()
        }
        Op::TriSolve(l, b) => {
            let (l, b) = (get(*l), get(*b));
            let m = shape.rows();
            (0..s)
                .flat_map(|c| tri_solve(l.col(c), b.col(c), m, shape.cols()))
                .collect()
        }
        Op::LikSum(lik, ids) | Op::LikPoint(lik, ids) => {
            let args: Vec<Arg<T>> = ids.iter().map(|&i| get(i)).collect();
            super::fused::forward(*lik, &args, s, None, fused_output(op))
        }
        Op::Support {
            x,
            lower,
            upper,
            strict,
        } => {
            let x = get(*x);
            (0..s)
                .map(|c| {
                    let ok = x
                        .col(c)
                        .iter()
                        .all(|v| in_interval(v.real(), *lower, *upper, *strict));
                    T::from(if ok { 0.0 } else { f64::NEG_INFINITY })
                })
                .collect()
        }
    }
}

/// The value of one operation at S batch columns into `out` (n·S entries). The operations
/// a recursion's step is mostly made of write in place; the others are computed by
/// [`eval_op`] and copied.
pub(crate) fn eval_op_into<'b, T: Scalar>(
    op: &Op,
    shape: Shape,
    get: &dyn Fn(NodeId) -> Arg<'b, T>,
    s: usize,
    out: &mut [T],
) {
    match op {
        Op::Unary(f, a) => {
            out.copy_from_slice(get(*a).data);
            T::map_in_place(*f, out);
        }
        Op::Binary(..) | Op::Gather(..) | Op::Pack(..) | Op::Assemble(..) => {
            put_values(op, shape, get, s, &mut Fill(out));
        }
        Op::LogSumExp(a) => lse_into(get(*a), s, out),
        op => out.copy_from_slice(&eval_op(op, shape, get, s)),
    }
}

/// Where an operation's entries go, in order: appended to a vector (a node of the graph)
/// or written over a slice from its start (a node of a recursion's step, in the step's
/// buffer), so that one loop serves both without zeroing a new vector first.
trait Put<T> {
    fn put(&mut self, values: impl ExactSizeIterator<Item = T>);
}

impl<T> Put<T> for Vec<T> {
    #[inline(always)]
    fn put(&mut self, values: impl ExactSizeIterator<Item = T>) {
        self.extend(values);
    }
}

/// The part of a slice not yet written.
struct Fill<'o, T>(&'o mut [T]);

impl<T> Put<T> for Fill<'_, T> {
    #[inline(always)]
    fn put(&mut self, values: impl ExactSizeIterator<Item = T>) {
        let (head, tail) = std::mem::take(&mut self.0).split_at_mut(values.len());
        for (o, v) in head.iter_mut().zip(values) {
            *o = v;
        }
        self.0 = tail;
    }
}

/// The entries of an elementwise operation, gather, pack or assembled value, column by
/// column, into `out`.
fn put_values<'b, T: Scalar>(
    op: &Op,
    shape: Shape,
    get: &dyn Fn(NodeId) -> Arg<'b, T>,
    s: usize,
    out: &mut impl Put<T>,
) {
    let n = shape.size();
    match op {
        Op::Binary(f, a, b) => binary_values(*f, get(*a), get(*b), n, s, out),
        Op::Gather(a, idx) => {
            let a = get(*a);
            for c in 0..s {
                out.put(idx.iter().map(|&k| {
                    if k == GATHER_ZERO {
                        T::zero()
                    } else {
                        a.at(k as usize, c)
                    }
                }));
            }
        }
        Op::Pack(ids) => {
            let args: Vec<Arg<T>> = ids.iter().map(|&i| get(i)).collect();
            for c in 0..s {
                out.put(args.iter().map(|a| a.at(0, c)));
            }
        }
        Op::Assemble(ids, idx) => {
            // per entry its source's data, column stride (0 when not batched) and offset,
            // resolved once rather than per column, each source looked up once
            let sources: Vec<(&[T], usize)> = ids
                .iter()
                .map(|&id| {
                    let a = get(id);
                    (a.data, if a.batched { a.size } else { 0 })
                })
                .collect();
            let src: Vec<(&[T], usize, usize)> = idx
                .iter()
                .map(|&(j, k)| {
                    let (data, stride) = sources[j as usize];
                    (data, stride, k as usize)
                })
                .collect();
            for c in 0..s {
                out.put(src.iter().map(|&(d, stride, k)| d[k + c * stride]));
            }
        }
        _ => unreachable!(
            "put_values is called for elementwise operations, gathers, packs and assembled values"
        ),
    }
}

/// Whether a fused likelihood node sums its observations or keeps them.
pub(crate) fn fused_output(op: &Op) -> super::fused::Output {
    if matches!(op, Op::LikPoint(..)) {
        super::fused::Output::Pointwise
    } else {
        super::fused::Output::Sum
    }
}

fn in_interval(v: f64, lower: f64, upper: f64, strict: bool) -> bool {
    if strict {
        lower < v && v < upper
    } else {
        lower <= v && v <= upper
    }
}

/// One elementwise function.
#[inline]
pub(crate) fn unary<T: Scalar>(f: Fun1, x: T) -> T {
    match f {
        Fun1::Neg => -x,
        Fun1::Exp => x.exp(),
        Fun1::Log => x.ln(),
        Fun1::Log1p => x.ln_1p(),
        Fun1::Expm1 => x.exp_m1(),
        Fun1::Sqrt => x.sqrt(),
        Fun1::Square => x * x,
        Fun1::Abs => {
            if x.real() < 0.0 {
                -x
            } else {
                x
            }
        }
        Fun1::Sin => x.sin(),
        Fun1::Cos => x.cos(),
        Fun1::Tanh => x.tanh(),
        Fun1::Atan => x.atan(),
        Fun1::InvLogit => inv_logit(x),
        Fun1::Logit => (x / (T::one() - x)).ln(),
        Fun1::LogInvLogit => log_inv_logit(x),
        Fun1::Log1mInvLogit => log_inv_logit(-x),
        Fun1::Lgamma => x.lgamma(),
        Fun1::LogPhi => x.log_phi(),
        Fun1::LogBesselI0 => x.log_bessel_i0(),
    }
}

/// 1 / (1 + e^{−x}), without overflow.
pub(crate) fn inv_logit<T: Scalar>(x: T) -> T {
    if x.real() >= 0.0 {
        (T::one() + (-x).exp()).recip()
    } else {
        let e = x.exp();
        e / (T::one() + e)
    }
}

/// log(1 / (1 + e^{−x})), without overflow.
pub(crate) fn log_inv_logit<T: Scalar>(x: T) -> T {
    if x.real() >= 0.0 {
        -((-x).exp().ln_1p_unit())
    } else {
        x - x.exp().ln_1p_unit()
    }
}

/// The exponent of `^` as a small integer when it is a constant integer (so negative bases
/// work and no log of the base is taken).
pub(crate) fn int_exponent<T: Scalar>(b: T, constant: bool) -> Option<i32> {
    let r = b.real();
    (constant && r.fract().abs() < f64::EPSILON && r.abs() <= 64.0).then_some(r as i32)
}

/// One elementwise function of two arguments.
pub(crate) fn binary<T: Scalar>(f: Fun2, a: T, b: T, b_const: bool) -> T {
    match f {
        Fun2::Add => a + b,
        Fun2::Sub => a - b,
        Fun2::Mul => a * b,
        Fun2::Div => a / b,
        Fun2::Pow => match int_exponent(b, b_const) {
            Some(k) => a.powi(k),
            None => a.powd(b),
        },
        Fun2::Min => {
            if b.real() < a.real() {
                b
            } else {
                a
            }
        }
        Fun2::Max => {
            if b.real() > a.real() {
                b
            } else {
                a
            }
        }
        Fun2::LogGammaP => incomplete::log_gamma_p(a, b),
        Fun2::LogGammaQ => incomplete::log_gamma_q(a, b),
        Fun2::LogStudentTCdf => incomplete::log_student_t_cdf(a, b),
        Fun2::LogSkewNormalCdf => owen::log_skew_normal_cdf(a, b),
        Fun2::LogSkewNormalCcdf => owen::log_skew_normal_ccdf(a, b),
        Fun2::Logic(l) => T::from(l.apply(a.real(), b.real())),
    }
}

/// One elementwise function of three arguments.
pub(crate) fn ternary<T: Scalar>(f: Fun3, [x, a, b]: [T; 3]) -> T {
    match f {
        Fun3::LogBetaInc => incomplete::log_beta_inc(x, a, b),
        Fun3::LogBetaIncC => incomplete::log_beta_inc_c(x, a, b),
        Fun3::LogVonMisesCdf => von_mises_cdf::log_von_mises_cdf(x, a, b),
        Fun3::LogVonMisesCcdf => von_mises_cdf::log_von_mises_ccdf(x, a, b),
        Fun3::LogBinomialCdf => incomplete::log_binomial_cdf(x, a, b),
        Fun3::LogBinomialCcdf => incomplete::log_binomial_ccdf(x, a, b),
        Fun3::Select => {
            if x.real() != 0.0 {
                a
            } else {
                b
            }
        }
    }
}

/// Entry i of column c of each argument of an elementwise function (scalars broadcast).
#[inline]
pub(crate) fn broadcast_at<T: Scalar, const N: usize>(args: &[Arg<'_, T>; N], i: usize, c: usize) -> [T; N] {
    std::array::from_fn(|k| args[k].at(if args[k].size == 1 { 0 } else { i }, c))
}

fn ternary_values<T: Scalar>(f: Fun3, args: [Arg<T>; 3], n: usize, s: usize) -> Vec<T> {
    (0..s)
        .flat_map(|c| (0..n).map(move |i| ternary(f, broadcast_at(&args, i, c))))
        .collect()
}

fn binary_values<T: Scalar>(f: Fun2, a: Arg<T>, b: Arg<T>, n: usize, s: usize, out: &mut impl Put<T>) {
    // the arithmetic operators get loops of their own (monomorphised, vectorisable); the
    // others go through `binary`
    match f {
        Fun2::Add => zip_columns(a, b, n, s, out, |x, y| x + y),
        Fun2::Sub => zip_columns(a, b, n, s, out, |x, y| x - y),
        Fun2::Mul => zip_columns(a, b, n, s, out, |x, y| x * y),
        Fun2::Div => zip_columns(a, b, n, s, out, |x, y| x / y),
        _ => zip_columns(a, b, n, s, out, |x, y| binary(f, x, y, b.constant)),
    }
}

/// op(a, b) entrywise over the `s` columns, broadcasting an operand of size one.
#[inline(always)]
fn zip_columns<T: Scalar>(
    a: Arg<T>,
    b: Arg<T>,
    n: usize,
    s: usize,
    out: &mut impl Put<T>,
    op: impl Fn(T, T) -> T,
) {
    if s > 1 && flat_operand(a, n) && flat_operand(b, n) {
        // the S columns side by side are one long column (a scalar node of a recursion is
        // S values): one loop instead of S short ones, the same operation per entry
        let m = n * s;
        match (a.batched, b.batched) {
            (true, true) => out.put(a.data[..m].iter().zip(&b.data[..m]).map(|(&x, &y)| op(x, y))),
            (false, true) => out.put(b.data[..m].iter().map(|&y| op(a.data[0], y))),
            (true, false) => out.put(a.data[..m].iter().map(|&x| op(x, b.data[0]))),
            (false, false) => out.put((0..m).map(|_| op(a.data[0], b.data[0]))),
        }
        return;
    }
    for c in 0..s {
        let (ac, bc) = (a.col(c), b.col(c));
        match (a.size == 1, b.size == 1) {
            (false, false) => out.put(ac[..n].iter().zip(&bc[..n]).map(|(&x, &y)| op(x, y))),
            (true, false) => out.put(bc[..n].iter().map(|&y| op(ac[0], y))),
            (false, true) => out.put(ac[..n].iter().map(|&x| op(x, bc[0]))),
            (true, true) => out.put((0..n).map(|_| op(ac[0], bc[0]))),
        }
    }
}

/// Whether an operand of an elementwise operation with n entries per column can be read
/// over all S columns as one long column: batched with n entries, or one value for all.
#[inline]
pub(crate) fn flat_operand<T>(x: Arg<'_, T>, n: usize) -> bool {
    if x.batched {
        x.size == n
    } else {
        x.size == 1
    }
}

fn matmul_values<T: Scalar>(a: Arg<T>, b: Arg<T>, shape: Shape, s: usize) -> Vec<T> {
    let (m, n) = (shape.rows(), shape.cols());
    let k = a.size / m.max(1); // 0 rows: no inner size to read, nothing to multiply
    let mut out = vec![T::zero(); m * n * s];
    if !a.batched {
        // A constant: B's columns are k × (n·S) side by side, one product for the batch.
        T::gemm(
            false,
            false,
            m,
            n * if b.batched { s } else { 1 },
            k,
            a.data,
            b.data,
            &mut out,
        );
        if !b.batched {
            let first = out[..m * n].to_vec();
            for c in 1..s {
                out[c * m * n..(c + 1) * m * n].copy_from_slice(&first);
            }
        }
        return out;
    }
    for c in 0..s {
        T::gemm(
            false,
            false,
            m,
            n,
            k,
            a.col(c),
            b.col(c),
            &mut out[c * m * n..(c + 1) * m * n],
        );
    }
    out
}

fn transpose_values<T: Scalar>(a: Arg<T>, shape: Shape, s: usize) -> Vec<T> {
    // out is r×c, the argument c×r.
    let (r, c) = (shape.rows(), shape.cols());
    let mut out = Vec::with_capacity(r * c * s);
    for b in 0..s {
        let x = a.col(b);
        for j in 0..c {
            for i in 0..r {
                out.push(x[j + i * c]);
            }
        }
    }
    out
}

fn reduce<T: Scalar>(a: Arg<T>, s: usize, f: impl Fn(&[T]) -> T) -> Vec<T> {
    (0..s).map(|c| f(a.col(c))).collect()
}

/// Index of the largest (or smallest) entry, by real part.
pub(crate) fn argext<T: Scalar>(x: &[T], largest: bool) -> usize {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        let better = if largest {
            v.real() > x[best].real()
        } else {
            v.real() < x[best].real()
        };
        if better {
            best = i;
        }
    }
    best
}

/// log Σ exp of each column's entries, the exponentials and logarithms of all columns in
/// one pass of the scalar type's kernels (SIMD for f64): m + log Σᵢ exp(xᵢ − m) with m the
/// column's largest entry (m itself when it is not finite).
pub(crate) fn lse_into<T: Scalar>(a: Arg<T>, s: usize, out: &mut [T]) {
    lse_into_with(a, s, out, &mut Vec::new());
}

/// [`lse_into`] with its scratch buffer given (a recursion's step reuses one).
pub(crate) fn lse_into_with<T: Scalar>(a: Arg<T>, s: usize, out: &mut [T], z: &mut Vec<T>) {
    let n = a.size;
    let out = &mut out[..s];
    if n == 0 {
        out.fill(T::from(f64::NEG_INFINITY));
        return;
    }
    // the columns side by side (one column when the value is the same for all)
    let x: Cow<[T]> = if a.batched || s == 1 {
        Cow::Borrowed(&a.data[..n * s])
    } else {
        Cow::Owned(a.data[..n].repeat(s))
    };
    if n == 2 && T::EXP_OF_ZERO_IS_ONE {
        lse_sums_two(&x, s, out, z);
    } else {
        lse_sums(&x, n, s, out, z);
    }
    let sums = &mut z[..s];
    T::map_in_place(Fun1::Log, sums);
    for (mc, &l) in out.iter_mut().zip(sums.iter()) {
        if mc.real().is_finite() {
            *mc += l;
        }
    }
}

/// Each column's largest entry m into `out`, and Σᵢ exp(xᵢ − m) into z's first `s` entries
/// (columns of n side by side in `x`).
fn lse_sums<T: Scalar>(x: &[T], n: usize, s: usize, out: &mut [T], z: &mut Vec<T>) {
    z.clear();
    z.resize(n * s, T::zero());
    match n {
        // the sizes a recursion's step has (a few states): loops of a known length
        2 => lse_shift(x, 2, out, z),
        3 => lse_shift(x, 3, out, z),
        4 => lse_shift(x, 4, out, z),
        _ => lse_shift(x, n, out, z),
    }
    T::map_in_place(Fun1::Exp, z);
    match n {
        2 => block_sums(z, 2, s),
        3 => block_sums(z, 3, s),
        4 => block_sums(z, 4, s),
        _ => block_sums(z, n, s),
    }
}

/// [`lse_sums`] of two entries a column, a two-state recursion's step, when exp(0) is
/// exactly one: the larger entry's term is that one, so only the other's exponential is
/// taken, and 1 + e is the two-term sum in either order. The bits are [`lse_sums`]'s.
fn lse_sums_two<T: Scalar>(x: &[T], s: usize, out: &mut [T], z: &mut Vec<T>) {
    z.clear();
    z.resize(s, T::zero());
    for ((o, zc), xc) in out.iter_mut().zip(z.iter_mut()).zip(x.chunks_exact(2)) {
        let best = argext(xc, true);
        *o = xc[best];
        *zc = xc[1 - best] - *o;
    }
    T::map_in_place(Fun1::Exp, z);
    for zc in z.iter_mut() {
        *zc = T::one() + *zc;
    }
}

/// Each column's largest entry into `out` and its entries less it into `z` (columns of n
/// side by side in `x`). Inlined into each call with a literal n, so that the loops over a
/// column are unrolled.
#[inline(always)]
fn lse_shift<T: Scalar>(x: &[T], n: usize, out: &mut [T], z: &mut [T]) {
    for (o, xc) in out.iter_mut().zip(x.chunks_exact(n)) {
        *o = xc[argext(xc, true)];
    }
    for ((zc, xc), &mc) in z.chunks_exact_mut(n).zip(x.chunks_exact(n)).zip(out.iter()) {
        for (zi, &v) in zc.iter_mut().zip(xc) {
            *zi = v - mc;
        }
    }
}

/// z[c] = the sum of z's column c (n entries), for the first `s` columns: column c's block
/// starts at c·n ≥ c, so it is read before it is overwritten. Inlined as [`lse_shift`].
#[inline(always)]
fn block_sums<T: Scalar>(z: &mut [T], n: usize, s: usize) {
    for c in 0..s {
        z[c] = z[c * n..(c + 1) * n].iter().copied().sum();
    }
}

/// exp(xᵢ − y) for each entry of each column of `x` (n × S, or one column for all), y one
/// value per column, into `w` (n·S): the weights of log Σ exp's adjoint, by the scalar
/// type's kernel.
pub(crate) fn lse_weights<T: Scalar>(x: Arg<'_, T>, y: Arg<'_, T>, s: usize, w: &mut [T]) {
    let n = x.size.max(1);
    if x.batched && y.batched && x.size > 0 {
        // the usual case, a recursion's step: every column's block against its own y, in
        // one pass over exact blocks (no per-column slicing of x and y)
        let m = n * s;
        let (w, x, y) = (&mut w[..m], &x.data[..m], &y.data[..s]);
        match n {
            2 => less_column_values(w, x, y, 2),
            3 => less_column_values(w, x, y, 3),
            4 => less_column_values(w, x, y, 4),
            _ => less_column_values(w, x, y, n),
        }
    } else {
        for (c, wc) in w.chunks_mut(n).enumerate().take(s) {
            let yc = y.at(0, c);
            for (wi, &v) in wc.iter_mut().zip(x.col(c)) {
                *wi = v - yc;
            }
        }
    }
    T::map_in_place(Fun1::Exp, w);
}

/// w = x less its column's y, column by column (n entries each). Inlined as [`lse_shift`].
#[inline(always)]
fn less_column_values<T: Scalar>(w: &mut [T], x: &[T], y: &[T], n: usize) {
    for ((wc, xc), &yc) in w.chunks_exact_mut(n).zip(x.chunks_exact(n)).zip(y) {
        for (wi, &v) in wc.iter_mut().zip(xc) {
            *wi = v - yc;
        }
    }
}

/// log Σ exp of each row of each column's rows × cols matrix, the exponentials and
/// logarithms of all columns through the scalar type's kernels (as [`lse_into`]): each
/// row's largest entry m (the first, by real part), m + log Σⱼ exp(xᵢⱼ − m) (m itself when
/// it is not finite).
fn lse_rows_values<T: Scalar>(a: Arg<T>, rows: usize, s: usize) -> Vec<T> {
    let cols = a.size / rows.max(1);
    if cols == 0 {
        return vec![T::from(f64::NEG_INFINITY); rows * s];
    }
    let mut out = vec![T::zero(); rows * s];
    let mut z = vec![T::zero(); a.size * s];
    for ((x, m), zc) in (0..s)
        .map(|c| a.col(c))
        .zip(out.chunks_exact_mut(rows))
        .zip(z.chunks_exact_mut(a.size))
    {
        for (i, mi) in m.iter_mut().enumerate() {
            let best = (1..cols).fold(0, |b, j| {
                if x[i + j * rows].real() > x[i + b * rows].real() {
                    j
                } else {
                    b
                }
            });
            *mi = x[i + best * rows];
        }
        less_row_values(zc, x, m, rows);
    }
    T::map_in_place(Fun1::Exp, &mut z);
    let mut sums: Vec<T> = z
        .chunks_exact(a.size)
        .flat_map(|zc| (0..rows).map(move |i| (0..cols).map(|j| zc[i + j * rows]).sum()))
        .collect();
    T::map_in_place(Fun1::Log, &mut sums);
    for (m, &l) in out.iter_mut().zip(&sums) {
        if m.real().is_finite() {
            *m += l;
        }
    }
    out
}

/// w = x less its row's y, for one rows × cols matrix x (column-major) and y one value per
/// row: the shifted entries of log Σ exp by rows, and the exponents of its adjoint's weights.
pub(crate) fn less_row_values<T: Scalar>(w: &mut [T], x: &[T], y: &[T], rows: usize) {
    for (wc, xc) in w.chunks_exact_mut(rows.max(1)).zip(x.chunks_exact(rows.max(1))) {
        for ((wi, &v), &yi) in wc.iter_mut().zip(xc).zip(y) {
            *wi = v - yi;
        }
    }
}

/// The lower Cholesky factor of the n×n matrix `a` (reading its lower triangle); NaN on the
/// diagonal when `a` is not positive definite.
pub(crate) fn cholesky<T: Scalar>(a: &[T], n: usize) -> Vec<T> {
    let mut l = vec![T::zero(); n * n];
    for j in 0..n {
        let mut d = a[j + j * n];
        for p in 0..j {
            d -= l[j + p * n] * l[j + p * n];
        }
        if d.real() <= 0.0 {
            d = T::from(f64::NAN);
        }
        let djj = d.sqrt();
        l[j + j * n] = djj;
        for i in j + 1..n {
            let mut v = a[i + j * n];
            for p in 0..j {
                v -= l[i + p * n] * l[j + p * n];
            }
            l[i + j * n] = v / djj;
        }
    }
    l
}

/// X = L⁻¹ B for lower-triangular L (m×m) and B (m×n), by forward substitution.
pub(crate) fn tri_solve<T: Scalar>(l: &[T], b: &[T], m: usize, n: usize) -> Vec<T> {
    let mut x = b.to_vec();
    for c in 0..n {
        for i in 0..m {
            let mut v = x[i + c * m];
            for p in 0..i {
                v -= l[i + p * m] * x[p + c * m];
            }
            x[i + c * m] = v / l[i + i * m];
        }
    }
    x
}

/// X = L⁻ᵀ B for lower-triangular L (m×m) and B (m×n), by back substitution.
pub(crate) fn tri_solve_t<T: Scalar>(l: &[T], b: &[T], m: usize, n: usize) -> Vec<T> {
    let mut x = b.to_vec();
    for c in 0..n {
        for i in (0..m).rev() {
            let mut v = x[i + c * m];
            for p in i + 1..m {
                v -= l[p + i * m] * x[p + c * m];
            }
            x[i + c * m] = v / l[i + i * m];
        }
    }
    x
}

/// Evaluate the log joint at the columns of `w` (D×S) in chunks of [`chunk_for`] columns, in
/// parallel; non-finite values become −∞.
pub fn eval_values(graph: &Graph, theta: &[f64], w: &[f64], s: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let consts = lift_consts::<f64>(graph);
    let d = graph.dim;
    let chunk = chunk_for(graph, s);
    let starts: Vec<usize> = (0..s).step_by(chunk).collect();
    let one = |&c0: &usize| {
        let c1 = (c0 + chunk).min(s);
        let tape = forward(graph, &consts, theta, &w[c0 * d..c1 * d], c1 - c0);
        tape.target_values()
    };
    // one chunk (a single point) is evaluated here, without the thread pool
    let parts: Vec<Vec<f64>> = if starts.len() == 1 {
        starts.iter().map(one).collect()
    } else {
        starts.par_iter().map(one).collect()
    };
    parts.into_iter().flatten().map(clean).collect()
}

/// A log-joint value as reported: NaN and +∞ (outside the support, invalid parameters) become −∞.
pub fn clean(v: f64) -> f64 {
    if v.is_nan() || v == f64::INFINITY {
        f64::NEG_INFINITY
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Constraint;

    #[test]
    fn chunks_narrow_for_long_batched_vectors() {
        let mut g = Graph::new(1000, 0);
        let h = g
            .param_slice(0, Shape::Vector(1000), &Constraint::NONE)
            .expect("a vector param");
        let e = g.unary(Fun1::Exp, h);
        g.mul(e, h).expect("same shapes");
        assert_eq!(chunk_cols(&g), CHUNK_ENTRIES / 1000);
        // a scalar model keeps the full chunk
        let mut small = Graph::new(2, 0);
        let a = small
            .param_slice(0, Shape::Scalar, &Constraint::NONE)
            .expect("a scalar param");
        small.unary(Fun1::Exp, a);
        assert_eq!(chunk_cols(&small), CHUNK);
        // and a very long one keeps at least 8 columns
        let mut long = Graph::new(100_000, 0);
        long.param_slice(0, Shape::Vector(100_000), &Constraint::NONE)
            .expect("a vector param");
        assert_eq!(chunk_cols(&long), 8);
    }

    #[test]
    fn two_entry_log_sum_exp_has_the_bits_of_the_general_pass() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let pairs = [
            (0.3, -1.7),
            (-1.7, 0.3),
            (2.5, 2.5),
            (-0.0, 0.0),
            (1e300, -1e300),
            (-745.0, 0.0),
            (f64::NEG_INFINITY, 1.0),
            (1.0, f64::NEG_INFINITY),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
            (inf, 1.0),
            (inf, inf),
            (nan, 1.0),
            (1.0, nan),
            (-3.25, -3.0 + 1e-15),
        ];
        let x: Vec<f64> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        let s = pairs.len();
        let (mut o1, mut o2) = (vec![0.0; s], vec![0.0; s]);
        let (mut z1, mut z2) = (Vec::new(), Vec::new());
        lse_sums_two(&x, s, &mut o1, &mut z1);
        lse_sums(&x, 2, s, &mut o2, &mut z2);
        for c in 0..s {
            assert_eq!(o1[c].to_bits(), o2[c].to_bits(), "largest of {:?}", pairs[c]);
            // the sum is used only when the largest entry is finite
            if o1[c].is_finite() {
                assert_eq!(z1[c].to_bits(), z2[c].to_bits(), "sum of {:?}", pairs[c]);
            }
        }
        // and the whole log_sum_exp, through the public entry
        let mut out = vec![0.0; s];
        let a = Arg {
            data: &x,
            size: 2,
            batched: true,
            constant: false,
        };
        lse_into(a, s, &mut out);
        assert!((out[0] - (0.3 + (1.0 + (-2.0f64).exp()).ln())).abs() < 1e-15);
    }

    #[test]
    fn a_batch_is_split_evenly_over_the_threads() {
        assert_eq!(spread(256, 1000, 2), 250);
        assert_eq!(spread(256, 512, 2), 256);
        assert_eq!(spread(256, 125, 2), 63);
        assert_eq!(spread(104, 125, 2), 63);
        assert_eq!(spread(104, 1000, 2), 100);
        assert_eq!(spread(104, 300, 2), 75);
        assert_eq!(spread(64, 100, 4), 25);
        assert_eq!(spread(256, 10, 2), 8);
        assert_eq!(spread(64, 5, 2), 8);
        assert_eq!(spread(256, 300, 1), 256);
        assert_eq!(spread(16, 20, 8), 8);
    }

    #[test]
    fn only_the_ancestors_of_the_asked_nodes_are_evaluated() {
        let mut g = Graph::new(3, 0);
        let a = g
            .param_slice(0, Shape::Scalar, &Constraint::NONE)
            .expect("a scalar param");
        let sigma = g.unary(Fun1::Exp, a);
        let v = g
            .param_slice(1, Shape::Vector(2), &Constraint::NONE)
            .expect("a vector param");
        let other = g.mul(v, sigma).expect("vector times scalar");
        let need = ancestors(&g, &[sigma]);
        assert!(need[a.0] && need[sigma.0] && !need[v.0] && !need[other.0]);
        let consts = lift_consts::<f64>(&g);
        let w = [0.3, 1.0, 2.0, -0.4, 1.5, 2.5];
        let full = forward(&g, &consts, &[], &w, 2);
        let part = forward_needed(&g, &consts, &[], &w, 2, &need);
        assert_eq!(part.arg(sigma).data, full.arg(sigma).data);
        assert!(part.vals[other.0].is_empty());
    }

    #[test]
    fn chunks_stay_wide_when_theta_work_is_repeated_per_chunk() {
        // 1000-long batched vectors, but 50 000 θ-dependent entries recomputed per chunk
        let mut g = Graph::new(1000, 1);
        let h = g
            .param_slice(0, Shape::Vector(1000), &Constraint::NONE)
            .expect("a vector param");
        let r = g
            .hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0))
            .expect("a scalar hyper");
        let x = g.constant(Shape::Vector(50_000), vec![0.5; 50_000]);
        g.mul(r, x).expect("scalar times vector");
        g.unary(Fun1::Exp, h);
        assert_eq!(chunk_cols(&g), CHUNK);
    }
}
