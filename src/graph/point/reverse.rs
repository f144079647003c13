//! The reverse sweep of the single-point path: one instruction at a time, last first, over the
//! adjoint buffer, with the chains' running adjoints in registers.
//!
//! Input: a compiled [`PointEval`], the values of the forward sweep and the fused
//! likelihoods' partials. Output: the adjoints of every node that depends on w, and ∇_w added
//! to `grad`. Each rule is that of `autodiff::reverse` at one column (the same partials, the
//! terms added in the same order), so the gradient is equal to the bit.

use super::{Ins, LinkOp, PointEval};
use crate::autodiff::reverse::{back_cholesky, d_binary, d_special2, d_ternary, d_unary, is_special2};
use crate::autodiff::{gemv, Scalar};
use crate::graph::eval::{argext, broadcast_at, tri_solve_t, Arg};
use crate::graph::{Fun1, Fun2, Graph, NodeId, Op, GATHER_ZERO};

impl PointEval {
    /// One instruction of the reverse sweep.
    #[inline(always)]
    pub(super) fn reverse_ins(
        &self,
        ins: Ins,
        g: &Graph,
        vals: &[f64],
        adj: &mut [f64],
        aux: &[f64],
        grad: &mut [f64],
    ) {
        match ins {
            Ins::Param { out, w: o, n } => {
                let (o, out, n) = (o as usize, out as usize, n as usize);
                for (gi, &a) in grad[o..o + n].iter_mut().zip(&adj[out..out + n]) {
                    *gi += a;
                }
            }
            Ins::Hyper { .. } => {}
            // the partials of `back_binary_fast` at one value: ±1, the other factor,
            // 1/b as a reciprocal, −y/b
            Ins::Add1(o) => {
                let yb = adj[o.out as usize];
                if o.da {
                    adj[o.a as usize] += yb * 1.0;
                }
                if o.db {
                    adj[o.b as usize] += yb * 1.0;
                }
            }
            Ins::Sub1(o) => {
                let yb = adj[o.out as usize];
                if o.da {
                    adj[o.a as usize] += yb * 1.0;
                }
                if o.db {
                    // −ȳ: the same bits as ȳ · (−1)
                    adj[o.b as usize] += -yb;
                }
            }
            Ins::Mul1(o) => {
                let (yb, x, y) = (adj[o.out as usize], vals[o.a as usize], vals[o.b as usize]);
                if o.da {
                    adj[o.a as usize] += yb * y;
                }
                if o.db {
                    adj[o.b as usize] += yb * x;
                }
            }
            Ins::Div1(o) => {
                let (yb, y, v) = (adj[o.out as usize], vals[o.b as usize], vals[o.out as usize]);
                if o.da {
                    adj[o.a as usize] += yb * y.recip();
                }
                if o.db {
                    adj[o.b as usize] += yb * (-v / y);
                }
            }
            Ins::Scalar2 { f, op: o, b_const } => {
                let (a, b, out) = (o.a as usize, o.b as usize, o.out as usize);
                let (x, y, v, yb) = (vals[a], vals[b], vals[out], adj[out]);
                if is_special2(f) {
                    let d = d_special2(f, [x, y], v, [o.da, o.db]);
                    if o.da {
                        adj[a] += yb * d[0];
                    }
                    if o.db {
                        adj[b] += yb * d[1];
                    }
                } else {
                    if o.da {
                        adj[a] += yb * d_binary(f, x, y, v, b_const).0;
                    }
                    if o.db {
                        adj[b] += yb * d_binary(f, x, y, v, b_const).1;
                    }
                }
            }
            Ins::Copy { src, out, n, .. } => {
                // each source entry takes one term: the order of the gather's scatter
                // does not matter
                let (src, out, n) = (src as usize, out as usize, n as usize);
                let (lower, upper) = adj.split_at_mut(out);
                for (x, &y) in lower[src..src + n].iter_mut().zip(&upper[..n]) {
                    *x += y;
                }
            }
            Ins::Chain { from, to, .. } => self.reverse_chain(from as usize, to as usize, vals, adj),
            Ins::Node(k) => self.reverse_node(g, k as usize, vals, adj, aux),
        }
    }

    /// The reverse of a chain, last link first: each link adds its other operand's term to
    /// that operand's slot and hands the running value's term to the link before, in a
    /// register. (In a slot of its own that term would be added to 0, which turns a −0
    /// into +0; the sign of a zero is lost anyway once the term, times the partials below,
    /// is added to a slot, which starts at +0 and so never holds −0.)
    fn reverse_chain(&self, from: usize, to: usize, vals: &[f64], adj: &mut [f64]) {
        let (first, rest) = self.links[from..to].split_first().expect("a chain has a link");
        let mut yb = adj[rest.last().unwrap_or(first).out as usize];
        for l in rest.iter().rev() {
            let (d_acc, d_other) = l.terms(yb, vals[l.head as usize], vals);
            if l.d_other {
                adj[l.other as usize] += d_other;
            }
            if !l.d_acc {
                return;
            }
            yb = d_acc;
        }
        // the first link's operands have slots: the left one's term first
        let (d_acc, d_other) = first.terms(yb, vals[first.head as usize], vals);
        let acc_first = !matches!(first.op, LinkOp::SubR | LinkOp::DivR);
        if acc_first && first.d_acc {
            adj[first.head as usize] += d_acc;
        }
        if first.d_other {
            adj[first.other as usize] += d_other;
        }
        if !acc_first && first.d_acc {
            adj[first.head as usize] += d_acc;
        }
    }

    fn reverse_node(&self, g: &Graph, k: usize, vals: &[f64], adj: &mut [f64], aux: &[f64]) {
        let node = &g.nodes[k];
        let slot = self.slots[k];
        let n = slot.size as usize;
        let (lower, upper) = adj.split_at_mut(slot.off as usize);
        let ybar: &[f64] = &upper[..n];
        let y = self.arg(vals, NodeId(k));
        let get = |id: NodeId| self.arg(vals, id);
        match &node.op {
            Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } | Op::Support { .. } | Op::Rng(_) => {}
            Op::Scan(_) => unreachable!("scans are compiled unrolled"),
            Op::Unary(f, a) => {
                let x = get(*a);
                if !x.batched {
                    return;
                }
                let xbar = &mut lower[self.slots[a.0].range()];
                // the common functions with the partial's formula fixed, so that the loop
                // does not choose it per entry
                match *f {
                    Fun1::Exp => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Exp, x, y)),
                    Fun1::Log => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Log, x, y)),
                    Fun1::Square => {
                        back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Square, x, y))
                    }
                    Fun1::Sqrt => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Sqrt, x, y)),
                    Fun1::Neg => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Neg, x, y)),
                    f => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(f, x, y)),
                }
            }
            Op::Binary(f, a, b) => self.back_binary(*f, *a, *b, vals, y, ybar, lower),
            Op::Ternary(f, ids) => {
                let args = ids.map(get);
                let need = ids.map(|id| self.slots[id.0].batched);
                for (i, &yb) in ybar.iter().enumerate() {
                    let d = d_ternary(*f, broadcast_at(&args, i, 0), y.data[i], need);
                    for q in 0..3 {
                        if need[q] {
                            let iq = if args[q].size == 1 { 0 } else { i };
                            lower[self.slots[ids[q].0].off as usize + iq] += yb * d[q];
                        }
                    }
                }
            }
            Op::MatMul(a, b) => {
                let (aa, bb) = (get(*a), get(*b));
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let kk = aa.size / m.max(1);
                if bb.batched {
                    let bbar = &mut lower[self.slots[b.0].range()];
                    if !(nc == 1 && gemv::gemv_t(m, kk, aa.data, ybar, bbar)) {
                        f64::gemm(true, false, kk, nc, m, aa.data, ybar, bbar);
                    }
                }
                if aa.batched {
                    f64::gemm(
                        false,
                        true,
                        m,
                        kk,
                        nc,
                        ybar,
                        bb.data,
                        &mut lower[self.slots[a.0].range()],
                    );
                }
            }
            Op::Transpose(a) => {
                let (r, c) = (node.shape.rows(), node.shape.cols());
                let xbar = &mut lower[self.slots[a.0].range()];
                for j in 0..c {
                    for i in 0..r {
                        xbar[j + i * c] += ybar[i + j * r];
                    }
                }
            }
            Op::Gather(a, idx) => {
                if !self.slots[a.0].batched {
                    return;
                }
                let xbar = &mut lower[self.slots[a.0].range()];
                for (i, &m) in idx.iter().enumerate() {
                    if m != GATHER_ZERO {
                        xbar[m as usize] += ybar[i];
                    }
                }
            }
            Op::Pack(ids) => {
                for (i, id) in ids.iter().enumerate() {
                    let s = self.slots[id.0];
                    if s.batched {
                        lower[s.off as usize] += ybar[i];
                    }
                }
            }
            Op::Assemble(ids, idx) => {
                for (i, &(j, m)) in idx.iter().enumerate() {
                    let s = self.slots[ids[j as usize].0];
                    if s.batched {
                        lower[s.off as usize + m as usize] += ybar[i];
                    }
                }
            }
            Op::Sum(a) => {
                let xbar = &mut lower[self.slots[a.0].range()];
                for xb in xbar.iter_mut() {
                    *xb += ybar[0] * 1.0;
                }
            }
            Op::LogSumExp(a) => {
                // the batched path's weights exp(xᵢ − y) by the same kernel, on the stack
                // for the short vectors of a recursion's step
                let x = get(*a);
                let mut small = [0.0; 16];
                let mut long = Vec::new();
                let w: &mut [f64] = if x.size <= small.len() {
                    &mut small[..x.size]
                } else {
                    long.resize(x.size, 0.0);
                    &mut long
                };
                crate::graph::eval::lse_weights(x, y, 1, w);
                let xbar = &mut lower[self.slots[a.0].range()];
                for (xb, &wi) in xbar.iter_mut().zip(w.iter()) {
                    *xb += ybar[0] * wi;
                }
            }
            Op::Max(a) | Op::Min(a) => {
                let x = get(*a).data;
                let best = argext(x, matches!(node.op, Op::Max(_)));
                let xbar = &mut lower[self.slots[a.0].range()];
                for (i, xb) in xbar.iter_mut().enumerate() {
                    *xb += ybar[0] * if i == best { 1.0 } else { 0.0 };
                }
            }
            Op::LogSumExpRows(a) => {
                let x = get(*a);
                let rows = node.shape.rows();
                let cols = x.size / rows.max(1);
                // the batched path's weights, by the same kernel
                let mut w = vec![0.0; x.size];
                crate::graph::eval::less_row_values(&mut w, x.data, y.data, rows);
                f64::map_in_place(Fun1::Exp, &mut w);
                let xbar = &mut lower[self.slots[a.0].range()];
                for j in 0..cols {
                    for i in 0..rows {
                        xbar[i + j * rows] += ybar[i] * w[i + j * rows];
                    }
                }
            }
            Op::CumSum(a) => {
                // x̄ᵢ += Σ_{j ≥ i} ȳⱼ, the running sums of ȳ from the end
                let xbar = &mut lower[self.slots[a.0].range()];
                let mut acc = 0.0;
                for i in (0..n).rev() {
                    acc += ybar[i];
                    xbar[i] += acc;
                }
            }
            Op::Cholesky(a) => {
                back_cholesky(y, ybar, &mut lower[self.slots[a.0].range()], node.shape.rows(), 1);
            }
            Op::TriSolve(l, b) => {
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let bbar = tri_solve_t(get(*l).data, ybar, m, nc);
                if self.slots[b.0].batched {
                    for (o, v) in lower[self.slots[b.0].range()].iter_mut().zip(&bbar) {
                        *o += *v;
                    }
                }
                if self.slots[l.0].batched {
                    let lbar = &mut lower[self.slots[l.0].range()];
                    for j in 0..m {
                        for i in j..m {
                            let mut v = 0.0;
                            for q in 0..nc {
                                v += bbar[i + q * m] * y.data[j + q * m];
                            }
                            lbar[i + j * m] -= v;
                        }
                    }
                }
            }
            Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
                let na = ids
                    .iter()
                    .map(|i| self.slots[i.0].size as usize)
                    .max()
                    .unwrap_or(0);
                // ȳ per observation (pointwise), or the sum's one ȳ for every observation
                let pointwise = matches!(node.op, Op::LikPoint(..));
                let yb = |i: usize| if pointwise { ybar[i] } else { ybar[0] };
                let mut part = &aux[self.aux_off[k] as usize..];
                for id in ids {
                    let s = self.slots[id.0];
                    if s.constant {
                        continue;
                    }
                    let (pc, rest) = part.split_at(na);
                    part = rest;
                    if !s.batched {
                        continue;
                    }
                    let xbar = &mut lower[s.range()];
                    if s.size as usize == na {
                        for (i, (o, &p)) in xbar.iter_mut().zip(pc).enumerate() {
                            *o += yb(i) * p;
                        }
                    } else {
                        let total: f64 = pc.iter().enumerate().map(|(i, &p)| yb(i) * p).sum();
                        xbar[0] += total;
                    }
                }
            }
        }
    }

    /// The reverse rule of an elementwise `Fun2` of any sizes (`back_binary` at one column).
    #[allow(clippy::too_many_arguments)]
    fn back_binary(
        &self,
        f: Fun2,
        a: NodeId,
        b: NodeId,
        vals: &[f64],
        y: Arg<'_, f64>,
        ybar: &[f64],
        lower: &mut [f64],
    ) {
        let (aa, bb) = (self.arg(vals, a), self.arg(vals, b));
        let n = y.size;
        let special = is_special2(f);
        if special {
            let args = [aa, bb];
            let need = [aa.batched, bb.batched];
            let offs = [self.slots[a.0].off as usize, self.slots[b.0].off as usize];
            for (i, &yb) in ybar.iter().enumerate() {
                let d = d_special2(f, broadcast_at(&args, i, 0), y.data[i], need);
                for q in 0..2 {
                    if need[q] {
                        let iq = if args[q].size == 1 { 0 } else { i };
                        lower[offs[q] + iq] += yb * d[q];
                    }
                }
            }
            return;
        }
        let arith = matches!(f, Fun2::Add | Fun2::Sub | Fun2::Mul | Fun2::Div);
        let shaped = |x: Arg<'_, f64>| x.size == n || x.size == 1;
        let fast = arith && shaped(aa) && shaped(bb);
        for (target, first) in [(a, true), (b, false)] {
            let slot = self.slots[target.0];
            if !slot.batched {
                continue;
            }
            let out = &mut lower[slot.range()];
            let own = if first { aa } else { bb };
            if fast {
                // `back_binary_fast` at one column: ∂ of an operand of one value summed
                // over the entries, one term at a time
                back_arith(f, first, own.size == n, aa, bb, &y.data[..n], ybar, out);
                continue;
            }
            for (i, &yb) in ybar.iter().enumerate() {
                let ia = if aa.size == 1 { 0 } else { i };
                let ib = if bb.size == 1 { 0 } else { i };
                let (da, db) = d_binary(f, aa.data[ia], bb.data[ib], y.data[i], bb.constant);
                let (idx, d) = if first { (ia, da) } else { (ib, db) };
                out[idx] += yb * d;
            }
        }
    }
}

/// The reverse of y = a ∘ b for `+ − * /` into the adjoint `out` of operand a (`first`)
/// or b, in the form `back_binary_fast` computes it: ȳᵢ times the partial (±1, the other
/// factor, 1/b as a reciprocal, −y/b), added entry by entry when the operand has one entry
/// per value (`full`), else summed into its one value in entry order. One loop per
/// operation and operand shape, so that the partial is not chosen per entry.
#[allow(clippy::too_many_arguments)]
fn back_arith(
    f: Fun2,
    first: bool,
    full: bool,
    a: Arg<'_, f64>,
    b: Arg<'_, f64>,
    y: &[f64],
    ybar: &[f64],
    out: &mut [f64],
) {
    match (f, first) {
        (Fun2::Add, _) | (Fun2::Sub, true) => back_shapes(full, a, b, y, ybar, out, |_, _, _| 1.0),
        (Fun2::Sub, false) => back_shapes(full, a, b, y, ybar, out, |_, _, _| -1.0),
        (Fun2::Mul, true) => back_shapes(full, a, b, y, ybar, out, |_, b, _| b),
        (Fun2::Mul, false) => back_shapes(full, a, b, y, ybar, out, |a, _, _| a),
        (Fun2::Div, true) => back_shapes(full, a, b, y, ybar, out, |_, b, _| b.recip()),
        _ => back_shapes(full, a, b, y, ybar, out, |_, b, y| -y / b),
    }
}

/// [`back_arith`] for one partial `d(a, b, y)`, with the operands of one value read once.
#[inline(always)]
fn back_shapes(
    full: bool,
    a: Arg<'_, f64>,
    b: Arg<'_, f64>,
    y: &[f64],
    ybar: &[f64],
    out: &mut [f64],
    d: impl Fn(f64, f64, f64) -> f64,
) {
    let n = ybar.len();
    match (a.size == 1, b.size == 1) {
        (false, false) => {
            let (a, b) = (&a.data[..n], &b.data[..n]);
            back_terms(full, ybar, out, |i| d(a[i], b[i], y[i]));
        }
        (true, false) => {
            let (a, b) = (a.data[0], &b.data[..n]);
            back_terms(full, ybar, out, |i| d(a, b[i], y[i]));
        }
        (false, true) => {
            let (a, b) = (&a.data[..n], b.data[0]);
            back_terms(full, ybar, out, |i| d(a[i], b, y[i]));
        }
        (true, true) => {
            let (a, b) = (a.data[0], b.data[0]);
            back_terms(full, ybar, out, |i| d(a, b, y[i]));
        }
    }
}

/// `out[i] += ȳᵢ · dᵢ` (`full`), or `out[0] += Σᵢ ȳᵢ · dᵢ` one term at a time.
// an index loop: `d` takes the index (the operands of one value are not slices)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn back_terms(full: bool, ybar: &[f64], out: &mut [f64], d: impl Fn(usize) -> f64) {
    if full {
        let out = &mut out[..ybar.len()];
        for i in 0..ybar.len() {
            out[i] += ybar[i] * d(i);
        }
    } else {
        let mut acc = out[0];
        for (i, &yb) in ybar.iter().enumerate() {
            acc += yb * d(i);
        }
        out[0] = acc;
    }
}

/// `x̄ᵢ += ȳᵢ · d(xᵢ, yᵢ)`: the reverse of an elementwise function.
#[inline(always)]
fn back_unary(xbar: &mut [f64], ybar: &[f64], x: &[f64], y: &[f64], d: impl Fn(f64, f64) -> f64) {
    for ((xb, &yb), (&xv, &yv)) in xbar.iter_mut().zip(ybar).zip(x.iter().zip(y)) {
        *xb += yb * d(xv, yv);
    }
}
