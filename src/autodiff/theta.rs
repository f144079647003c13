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

use std::ops::Range;

use crate::graph::eval::{argext, Tape};
use crate::graph::{NodeId, Op, GATHER_ZERO};

use super::reverse::{d_binary, d_ternary, d_unary};
use super::Scalar;
use crate::graph::eval::broadcast_at;

/// Whether every θ-only node has a tangent rule here.
pub fn supported<T: Scalar>(tape: &Tape<'_, T>) -> bool {
    tape.graph.nodes.iter().enumerate().all(|(k, n)| {
        !matches!(n.op, Op::Scan(_))
            && (tape.is_batched(NodeId(k)) || !matches!(n.op, Op::Cholesky(_) | Op::TriSolve(..)))
    })
}

/// dv/dθ of one θ-only node, stored by direction: direction q is zero outside the flat
/// (column-major) indices `spans[q]` and its values on them are kept contiguously.
///
/// Most directions move few entries: an RBF centre coordinate moves one entry of the
/// centres and then one column of every N × M matrix computed from them, so storing and
/// propagating only the spans costs O(N) per centre direction instead of O(N·M). The spans
/// come from the operations' structure (a superset of the non-zeros).
#[derive(Debug, Clone)]
pub struct Tangent<T> {
    /// Per direction, the flat indices outside which the direction is zero; empty for a
    /// node without a tangent (constants, nodes that depend on w).
    pub spans: Vec<Range<usize>>,
    offsets: Vec<usize>,
    data: Vec<T>,
}

impl<T: Scalar> Tangent<T> {
    /// No tangent (a constant, or a node that depends on w).
    fn none() -> Self {
        Tangent {
            spans: Vec::new(),
            offsets: Vec::new(),
            data: Vec::new(),
        }
    }

    /// Zero values on the given spans.
    fn zeros(spans: Vec<Range<usize>>) -> Self {
        let mut offsets = Vec::with_capacity(spans.len());
        let mut total = 0;
        for r in &spans {
            offsets.push(total);
            total += r.len();
        }
        Tangent {
            spans,
            offsets,
            data: vec![T::zero(); total],
        }
    }

    /// From a dense (size × P) column-major block, keeping each direction's non-zero span.
    fn from_dense(dense: &[T], size: usize, p: usize) -> Self {
        let mut t = Tangent::zeros(nonzero_spans(dense, size, p));
        for q in 0..p {
            let r = t.spans[q].clone();
            t.dir_mut(q)
                .copy_from_slice(&dense[q * size + r.start..q * size + r.end]);
        }
        t
    }

    /// Whether the node has no tangent at all (a constant or a node that depends on w).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Direction q's values on its span.
    pub fn dir(&self, q: usize) -> &[T] {
        &self.data[self.offsets[q]..self.offsets[q] + self.spans[q].len()]
    }

    fn dir_mut(&mut self, q: usize) -> &mut [T] {
        let len = self.spans[q].len();
        &mut self.data[self.offsets[q]..self.offsets[q] + len]
    }

    /// Entry i of direction q (0 outside its span, and for a node without a tangent).
    pub fn at(&self, i: usize, q: usize) -> T {
        match self.spans.get(q) {
            Some(r) if r.contains(&i) => self.data[self.offsets[q] + i - r.start],
            _ => T::zero(),
        }
    }

    /// Direction q for reading entry by entry: [`Tangent::at`] with the direction's span and
    /// values looked up once.
    fn view(&self, q: usize) -> View<'_, T> {
        match self.spans.get(q) {
            Some(r) if !r.is_empty() => View {
                start: r.start,
                data: self.dir(q),
            },
            _ => View { start: 0, data: &[] },
        }
    }

    /// Write direction q into `out` (the node's size), zeros outside its span.
    pub fn dense_into(&self, q: usize, out: &mut [T]) {
        out.iter_mut().for_each(|v| *v = T::zero());
        let r = &self.spans[q];
        out[r.clone()].copy_from_slice(self.dir(q));
    }
}

/// One direction of a [`Tangent`]: its values from flat index `start` on, zero elsewhere.
struct View<'a, T> {
    start: usize,
    data: &'a [T],
}

impl<T: Scalar> View<'_, T> {
    /// Entry i (0 outside the span), as [`Tangent::at`].
    #[inline(always)]
    fn at(&self, i: usize) -> T {
        match i.checked_sub(self.start).and_then(|k| self.data.get(k)) {
            Some(&v) => v,
            None => T::zero(),
        }
    }
}

/// The smallest range holding both (an empty range stands for nothing).
fn union(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.clone(),
        (_, true) => a.clone(),
        _ => a.start.min(b.start)..a.end.max(b.end),
    }
}

/// dv/dθ for every θ-only node v; empty for constants and for nodes that depend on w.
pub fn tangents<T: Scalar>(tape: &Tape<'_, T>) -> Vec<Tangent<T>> {
    let g = tape.graph;
    let p = g.theta_dim;
    let mut out: Vec<Tangent<T>> = Vec::with_capacity(g.nodes.len());
    for (k, node) in g.nodes.iter().enumerate() {
        let n = node.shape.size();
        let t = match &node.op {
            _ if tape.is_batched(NodeId(k)) => Tangent::none(),
            Op::Const(_) | Op::Param { .. } => Tangent::none(),
            Op::Hyper { offset } => {
                let spans = (0..p)
                    .map(|q| match q.checked_sub(*offset) {
                        Some(i) if i < n => i..i + 1,
                        _ => 0..0,
                    })
                    .collect();
                let mut t = Tangent::zeros(spans);
                t.data.iter_mut().for_each(|v| *v = T::one());
                t
            }
            op => tangent_op(tape, &out, k, op, n, p),
        };
        out.push(t);
    }
    out
}

/// Per direction q, the range of flat indices outside which direction q of the dense
/// (size × P) block `t` is zero (an empty range when all of it is): exact zeros only,
/// every part of a dual number.
pub fn nonzero_spans<T: Scalar>(t: &[T], size: usize, p: usize) -> Vec<Range<usize>> {
    (0..p)
        .map(|q| {
            let d = &t[q * size..(q + 1) * size];
            match d.iter().position(|v| !v.is_exact_zero()) {
                None => 0..0,
                Some(lo) => {
                    let hi = d.iter().rposition(|v| !v.is_exact_zero()).map_or(lo, |h| h) + 1;
                    lo..hi
                }
            }
        })
        .collect()
}

/// Whether the directions' spans over a node of n entries visit more than n entries in all,
/// so that an elementwise rule's partials are better computed once per entry than once per
/// visit.
fn revisited(spans: &[Range<usize>], n: usize) -> bool {
    spans.iter().map(ExactSizeIterator::len).sum::<usize>() > n
}

/// Entry i of direction q of a node's tangent (0 for constants).
fn at<T: Scalar>(t: &[Tangent<T>], id: NodeId, _size: usize, i: usize, q: usize) -> T {
    t[id.0].at(i, q)
}

/// The span of an operand of an elementwise operation with n outputs: a scalar (size 1)
/// that moves moves every output.
fn spread<T: Scalar>(t: &Tangent<T>, size: usize, n: usize, q: usize) -> Range<usize> {
    match t.spans.get(q) {
        Some(r) if !r.is_empty() => {
            if size == 1 {
                0..n
            } else {
                r.clone()
            }
        }
        _ => 0..0,
    }
}

/// Per input index, the lowest and highest output position that reads it (None when none
/// does), for operations that move entries around (gather, assemble).
fn reach(size: usize, sources: impl Iterator<Item = (usize, usize)>) -> Vec<Option<(usize, usize)>> {
    let mut r: Vec<Option<(usize, usize)>> = vec![None; size];
    for (i, m) in sources {
        r[m] = Some(match r[m] {
            None => (i, i),
            Some((lo, hi)) => (lo.min(i), hi.max(i)),
        });
    }
    r
}

/// The output positions reading the input entries in `span`, as one range.
fn reached(reach: &[Option<(usize, usize)>], span: &Range<usize>) -> Range<usize> {
    let mut out = 0..0;
    for (lo, hi) in reach[span.clone()].iter().flatten() {
        out = union(&out, &(*lo..*hi + 1));
    }
    out
}

fn tangent_op<T: Scalar>(
    tape: &Tape<'_, T>,
    t: &[Tangent<T>],
    k: usize,
    op: &Op,
    n: usize,
    p: usize,
) -> Tangent<T> {
    let y = tape.arg(NodeId(k));
    match op {
        Op::Scan(_) => unreachable!("graphs with scans take ∇_θ by the reverse sweep"),
        Op::Unary(f, a) => {
            let x = tape.arg(*a);
            let ta = &t[a.0];
            let mut out = Tangent::zeros(ta.spans.clone());
            let d = |i: usize| d_unary(*f, x.at(i, 0), y.at(i, 0));
            // each entry's partial once, when the directions visit entries more than once
            // in all (an RBF feature: every centre coordinate's direction one column, r's
            // all of them), else where visited; the same values either way
            let partials: Option<Vec<T>> = revisited(&out.spans, n).then(|| (0..n).map(d).collect());
            for q in 0..p {
                let r = out.spans[q].clone();
                let src = ta.dir(q);
                for (o, (i, s)) in out.dir_mut(q).iter_mut().zip(r.zip(src)) {
                    let di = partials.as_ref().map_or_else(|| d(i), |v| v[i]);
                    *o = di * *s;
                }
            }
            out
        }
        Op::Binary(f, a, b) => {
            let (aa, bb) = (tape.arg(*a), tape.arg(*b));
            let (ta, tb) = (&t[a.0], &t[b.0]);
            let spans = (0..p)
                .map(|q| union(&spread(ta, aa.size, n, q), &spread(tb, bb.size, n, q)))
                .collect();
            let mut out = Tangent::zeros(spans);
            let at = |i: usize| (if aa.size == 1 { 0 } else { i }, if bb.size == 1 { 0 } else { i });
            let d = |i: usize| {
                let (ia, ib) = at(i);
                d_binary(*f, aa.at(ia, 0), bb.at(ib, 0), y.at(i, 0), bb.constant)
            };
            // as for a unary operation: each entry's pair of partials once
            let partials: Option<Vec<(T, T)>> = revisited(&out.spans, n).then(|| (0..n).map(d).collect());
            for q in 0..p {
                let r = out.spans[q].clone();
                let (va, vb) = (ta.view(q), tb.view(q));
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    let (ia, ib) = at(i);
                    let (da, db) = partials.as_ref().map_or_else(|| d(i), |v| v[i]);
                    *o = da * va.at(ia) + db * vb.at(ib);
                }
            }
            out
        }
        Op::Ternary(f, ids) => {
            let args = ids.map(|id| tape.arg(id));
            let spans = (0..p)
                .map(|q| {
                    (0..3).fold(0..0, |acc, j| {
                        union(&acc, &spread(&t[ids[j].0], args[j].size, n, q))
                    })
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let r = out.spans[q].clone();
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    let d = d_ternary(*f, broadcast_at(&args, i, 0), y.at(i, 0), [true; 3]);
                    *o = (0..3)
                        .map(|j| {
                            let ij = if args[j].size == 1 { 0 } else { i };
                            d[j] * t[ids[j].0].at(ij, q)
                        })
                        .sum();
                }
            }
            out
        }
        Op::MatMul(a, b) => tangent_matmul(tape, t, k, *a, *b, p),
        Op::CumSum(a) => {
            let ta = &t[a.0];
            let spans = (0..p)
                .map(|q| match ta.spans.get(q) {
                    Some(r) if !r.is_empty() => r.start..n,
                    _ => 0..0,
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let r = out.spans[q].clone();
                let mut acc = T::zero();
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    acc += ta.at(i, q);
                    *o = acc;
                }
            }
            out
        }
        Op::Transpose(a) => {
            let shape = tape.graph.nodes[k].shape;
            let (r, c) = (shape.rows(), shape.cols());
            // input entry x = j + i·c (row j, column i of the c × r input) is output i + j·r
            let pos = |x: usize| x / c + (x % c) * r;
            let ta = &t[a.0];
            let spans = (0..p)
                .map(|q| match ta.spans.get(q) {
                    Some(s) if !s.is_empty() => {
                        let (lo, hi) = s
                            .clone()
                            .map(pos)
                            .fold((usize::MAX, 0), |(lo, hi), o| (lo.min(o), hi.max(o)));
                        lo..hi + 1
                    }
                    _ => 0..0,
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let (s, lo) = (ta.spans[q].clone(), out.spans[q].start);
                let src = ta.dir(q);
                let dst = out.dir_mut(q);
                for (x, v) in s.zip(src) {
                    dst[pos(x) - lo] = *v;
                }
            }
            out
        }
        Op::Gather(a, idx) => {
            let na = tape.arg(*a).size;
            let ta = &t[a.0];
            let reach = reach(
                na,
                idx.iter()
                    .enumerate()
                    .filter(|(_, &m)| m != GATHER_ZERO)
                    .map(|(i, &m)| (i, m as usize)),
            );
            let spans = (0..p)
                .map(|q| match ta.spans.get(q) {
                    Some(s) if !s.is_empty() => reached(&reach, s),
                    _ => 0..0,
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let r = out.spans[q].clone();
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    let m = idx[i];
                    if m != GATHER_ZERO {
                        *o = ta.at(m as usize, q);
                    }
                }
            }
            out
        }
        Op::Pack(ids) => {
            let spans = (0..p)
                .map(|q| {
                    ids.iter()
                        .enumerate()
                        .filter(|(_, id)| t[id.0].spans.get(q).is_some_and(|r| !r.is_empty()))
                        .fold(0..0, |acc, (i, _)| union(&acc, &(i..i + 1)))
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let r = out.spans[q].clone();
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    *o = t[ids[i].0].at(0, q);
                }
            }
            out
        }
        Op::Assemble(ids, idx) => {
            let reaches: Vec<_> = ids
                .iter()
                .enumerate()
                .map(|(j, &id)| {
                    reach(
                        tape.arg(id).size,
                        idx.iter()
                            .enumerate()
                            .filter(|(_, &(jj, _))| jj as usize == j)
                            .map(|(i, &(_, m))| (i, m as usize)),
                    )
                })
                .collect();
            let spans = (0..p)
                .map(|q| {
                    ids.iter()
                        .zip(&reaches)
                        .fold(0..0, |acc, (id, re)| match t[id.0].spans.get(q) {
                            Some(s) if !s.is_empty() => union(&acc, &reached(re, s)),
                            _ => acc,
                        })
                })
                .collect();
            let mut out = Tangent::zeros(spans);
            for q in 0..p {
                let r = out.spans[q].clone();
                for (o, i) in out.dir_mut(q).iter_mut().zip(r) {
                    let (j, m) = idx[i];
                    *o = t[ids[j as usize].0].at(m as usize, q);
                }
            }
            out
        }
        Op::Sum(a) => reduce_tangent(tape, t, *a, p, |_, _| T::one()),
        Op::LogSumExp(a) => reduce_tangent(tape, t, *a, p, |x, i| (x[i] - y.at(0, 0)).exp()),
        Op::Max(a) => reduce_tangent(tape, t, *a, p, |x, i| {
            if argext(x, true) == i {
                T::one()
            } else {
                T::zero()
            }
        }),
        Op::Min(a) => reduce_tangent(tape, t, *a, p, |x, i| {
            if argext(x, false) == i {
                T::one()
            } else {
                T::zero()
            }
        }),
        Op::LogSumExpRows(a) => {
            let x = tape.arg(*a);
            let cols = x.size / n.max(1);
            let ta = &t[a.0];
            let mut dense = vec![T::zero(); n * p];
            for q in 0..p {
                for j in 0..cols {
                    for i in 0..n {
                        let e = (x.at(i + j * n, 0) - y.at(i, 0)).exp();
                        dense[i + q * n] += e * ta.at(i + j * n, q);
                    }
                }
            }
            Tangent::from_dense(&dense, n, p)
        }
        Op::Support { .. } | Op::Rng(_) => Tangent::zeros(vec![0..0; p]),
        Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
            let mode = crate::graph::eval::fused_output(&tape.graph.nodes[k].op);
            let dense =
                crate::graph::fused::tangent(tape, k, ids, p, mode, |id, size, i, q| at(t, id, size, i, q));
            let size = dense.len() / p.max(1);
            Tangent::from_dense(&dense, size, p)
        }
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } | Op::Cholesky(_) | Op::TriSolve(..) => {
            unreachable!("inputs are handled by `tangents`; Cholesky and solves are excluded by `supported`")
        }
    }
}

/// The tangent of Y = A·B (m × nc, inner size kk) with A or B θ-only: direction q of dA·B
/// takes only the columns j0..j1 of A that q moves (and rows j0..j1 of B) and covers, at
/// most, the rows of Y those columns' span covers; A·dB takes the columns of B that q
/// moves and covers the same columns of Y.
fn tangent_matmul<T: Scalar>(
    tape: &Tape<'_, T>,
    t: &[Tangent<T>],
    k: usize,
    a: NodeId,
    b: NodeId,
    p: usize,
) -> Tangent<T> {
    let shape = tape.graph.nodes[k].shape;
    let (m, nc) = (shape.rows(), shape.cols());
    let (aa, bb) = (tape.arg(a), tape.arg(b));
    let kk = aa.size / m.max(1);
    let (ta, tb) = (&t[a.0], &t[b.0]);
    let cols = |r: &Range<usize>, rows: usize| r.start / rows..(r.end - 1) / rows + 1;
    let span_a = |q: usize| match ta.spans.get(q) {
        Some(r) if !r.is_empty() => {
            let c = cols(r, m);
            let rows = if c.len() == 1 {
                r.start % m..(r.end - 1) % m + 1
            } else {
                0..m
            };
            rows.start..(nc - 1) * m + rows.end
        }
        _ => 0..0,
    };
    let span_b = |q: usize| match tb.spans.get(q) {
        Some(r) if !r.is_empty() => {
            let c = cols(r, kk);
            c.start * m..c.end * m
        }
        _ => 0..0,
    };
    let spans = (0..p).map(|q| union(&span_a(q), &span_b(q))).collect();
    let mut out = Tangent::zeros(spans);
    let (mut left, mut right, mut prod) = (Vec::new(), Vec::new(), Vec::new());
    // whether A is finite (its other terms are then exact zeros), found when first needed
    let a_finite = std::cell::OnceCell::new();
    let one_term_columns = |right: &[T]| {
        T::GEMM_OF_ONE_TERM_IS_ITS_PRODUCT
            && m > 0
            && kk > 0
            && right
                .chunks_exact(kk)
                .all(|c| c.iter().filter(|v| !v.is_exact_zero()).count() <= 1)
            && *a_finite.get_or_init(|| aa.data[..m * kk].iter().all(|v| v.real().is_finite()))
    };
    for q in 0..p {
        let lo = out.spans[q].start;
        if let Some(r) = ta.spans.get(q).filter(|r| !r.is_empty()) {
            // dA[:, c] (m × w) · B[c, :] (w × nc), added on Y's span
            let c = cols(r, m);
            let w = c.len();
            left.clear();
            left.resize(m * w, T::zero());
            left[r.start - c.start * m..r.end - c.start * m].copy_from_slice(ta.dir(q));
            right.clear();
            for j in 0..nc {
                right.extend_from_slice(&bb.data[j * kk + c.start..j * kk + c.end]);
            }
            prod.clear();
            prod.resize(m * nc, T::zero());
            T::gemm(false, false, m, nc, w, &left, &right, &mut prod);
            let dst = out.dir_mut(q);
            for (i, v) in prod.iter().enumerate().skip(lo).take(dst.len()) {
                dst[i - lo] += *v;
            }
        }
        if let Some(r) = tb.spans.get(q).filter(|r| !r.is_empty()) {
            // A (m × kk) · dB[:, c] (kk × w): Y's columns c
            let c = cols(r, kk);
            let w = c.len();
            right.clear();
            right.resize(kk * w, T::zero());
            right[r.start - c.start * kk..r.end - c.start * kk].copy_from_slice(tb.dir(q));
            prod.clear();
            prod.resize(m * w, T::zero());
            if one_term_columns(&right) {
                // a centre coordinate's direction moves one entry of Cᵀ: its column of
                // X·Cᵀ is one column of X times that entry, not a product over all of X
                // (packing X for the kernel once per direction was most of the tangents'
                // time with 60 inputs); the same bits as the product
                for (pc, rc) in prod.chunks_exact_mut(m).zip(right.chunks_exact(kk)) {
                    if let Some((i, &v)) = rc.iter().enumerate().find(|(_, v)| !v.is_exact_zero()) {
                        // (+ 0 as the kernels' sums start from zero: a product of −0 adds +0)
                        for (o, &x) in pc.iter_mut().zip(&aa.data[i * m..(i + 1) * m]) {
                            *o += x * v + T::zero();
                        }
                    }
                }
            } else {
                T::gemm(false, false, m, w, kk, aa.data, &right, &mut prod);
            }
            let dst = out.dir_mut(q);
            let off = c.start * m - lo;
            for (d, v) in dst[off..off + m * w].iter_mut().zip(&prod) {
                *d += *v;
            }
        }
    }
    out
}

/// ẏ = Σᵢ ∂y/∂xᵢ ẋᵢ for a reduction to one scalar (over each direction's span only).
fn reduce_tangent<T: Scalar>(
    tape: &Tape<'_, T>,
    t: &[Tangent<T>],
    a: NodeId,
    p: usize,
    partial: impl Fn(&[T], usize) -> T,
) -> Tangent<T> {
    let x = tape.arg(a);
    let xc = x.col(0);
    let ta = &t[a.0];
    let spans = (0..p)
        .map(|q| match ta.spans.get(q) {
            Some(r) if !r.is_empty() => 0..1,
            _ => 0..0,
        })
        .collect();
    let mut out = Tangent::zeros(spans);
    for q in 0..p {
        if out.spans[q].is_empty() {
            continue;
        }
        let r = ta.spans[q].clone();
        let v = r
            .zip(ta.dir(q))
            .fold(T::zero(), |acc, (i, d)| acc + partial(xc, i) * *d);
        out.dir_mut(q)[0] = v;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::autodiff::Scalar;

    /// What `Scalar::GEMM_OF_ONE_TERM_IS_ITS_PRODUCT` promises for f64, which the centres'
    /// tangents through X·Cᵀ rely on: C += A·B equals C + (A[:, p]·b + 0), to the bit, in
    /// every column of B whose one non-zero entry b sits at row p, and C + 0 in a column
    /// of zeros, through the small-product kernel and through matrixmultiply's (signed
    /// zeros, subnormals and large values in A and C included).
    #[test]
    fn a_product_with_one_term_per_column_is_that_term() {
        const { assert!(<f64 as Scalar>::GEMM_OF_ONE_TERM_IS_ITS_PRODUCT) };
        let special = [0.0, -0.0, 1e-310, -3.5e300, 1.0, -1.0];
        for (m, k, n) in [(7, 3, 2), (5, 1, 4), (1000, 60, 3), (300, 17, 9)] {
            let a: Vec<f64> = (0..m * k)
                .map(|i| match i % 11 {
                    j @ 0..=5 => special[j],
                    _ => (0.37 * i as f64).sin() * 10f64.powi((i % 7) as i32 - 3),
                })
                .collect();
            // column j's non-zero at row (3j) mod k, of either sign; the last column none
            let b: Vec<f64> = (0..k * n)
                .map(|i| {
                    let (p, j) = (i % k, i / k);
                    if j + 1 < n && p == (3 * j) % k {
                        (-1f64).powi(j as i32) * (1.0 + 0.1 * j as f64) * 1e-3f64.powi(j as i32 % 2)
                    } else if j % 2 == 1 {
                        -0.0
                    } else {
                        0.0
                    }
                })
                .collect();
            let c0: Vec<f64> = (0..m * n)
                .map(|i| if i % 3 == 0 { -0.0 } else { 0.25 * i as f64 })
                .collect();
            let mut by_gemm = c0.clone();
            f64::gemm(false, false, m, n, k, &a, &b, &mut by_gemm);
            let mut by_term = c0.clone();
            for j in 0..n {
                let col = &mut by_term[j * m..(j + 1) * m];
                match (0..k).find(|&p| b[p + j * k] != 0.0) {
                    Some(p) => {
                        for (i, o) in col.iter_mut().enumerate() {
                            *o += a[i + p * m] * b[p + j * k] + 0.0;
                        }
                    }
                    // a sum of zeros is +0: −0 in C becomes +0
                    None => col.iter_mut().for_each(|o| *o += 0.0),
                }
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&by_gemm), bits(&by_term), "m = {m}, k = {k}, n = {n}");
        }
    }
}
