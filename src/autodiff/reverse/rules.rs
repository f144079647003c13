//! The adjoint rules of the reverse sweep: for one node k of a forward tape and its adjoint ȳ,
//! what it adds to the adjoints of its inputs ([`backprop`]), one rule per operation, batched
//! over the S columns.
//!
//! Input: the tape, the node, ȳ (size × S) and the adjoints of the earlier nodes. Output:
//! those adjoints, incremented. An input whose adjoint buffer is empty (a constant, or a node
//! the sweep leaves out) gets nothing. Operands shared by all columns (values of nodes that do
//! not depend on w) are read once and their partials computed once; the slice-wise fast paths
//! accumulate the same expressions in the same order as the per-entry ones, so both give the
//! same result to the bit.

use crate::autodiff::Scalar;
use crate::graph::eval::{
    argext, broadcast_at, flat_operand, less_row_values, lse_weights, tri_solve_t, Arg, Tape,
};
use crate::graph::{Fun1, Fun2, NodeId, Op, GATHER_ZERO};

use super::partials::{d_binary, d_special2, d_ternary, d_unary, is_special2};

/// Add node k's contribution to its inputs' adjoints.
pub(super) fn backprop<T: Scalar>(tape: &Tape<'_, T>, k: usize, op: &Op, ybar: &[T], adj: &mut [Vec<T>]) {
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
        Op::Support { .. } | Op::Rng(_) => {}
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
