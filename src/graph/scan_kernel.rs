//! The scans whose body is scalar arithmetic, run as a flat program: ARMA's
//! `err[t] = y[t] - (mu + phi * y[t - 1] + theta * err[t - 1])`, GARCH's
//! `sigma[t] = sqrt(alpha0 + alpha1 * square(y[t - 1] - mu) + beta1 * square(sigma[t - 1]))`,
//! the HMM forward algorithm's `gamma[t, k] = log_sum_exp(acc)`.
//!
//! Input: a [`Scan`] whose body nodes are all one value per column (constants, elementwise
//! functions, the arithmetic binary operators, one-observation likelihoods, an entry of an
//! outer vector per step), but for vectors of packed scalars that only `log_sum_exp`
//! reads, every operation depending on w; the enclosing tape; for the reverse sweep, the
//! adjoint of the scan's value. Output: the scan's value, the carried values of every step
//! for the reverse sweep, and the adjoints added to the inputs' nodes.
//!
//! The general evaluator (`scan::forward`, `autodiff::reverse::back_scan`) builds a tape
//! per step: a vector of operand views, the partials slot of every node, one allocation for
//! the step's values and, in the reverse sweep, the adjoint buffers of every node, and keeps
//! every step's values. For a scalar body that bookkeeping and memory traffic cost about as
//! much as the arithmetic (GARCH(1,1) at T = 1000: 18 ns per step and column for the
//! body's eight operations). Here a step's values live in one buffer, a body node's S values
//! side by side, only the carried values of every step are kept (the reverse sweep computes
//! a step's other values again), and the adjoints of the steps a carry reaches are in a ring
//! of buffers allocated once. Every value and adjoint is computed by the same expression, in
//! the same order, as the general evaluator, so the results are the same to the bit (tests
//! below compare the two).

use super::eval::{binary, unary, Arg, Tape};
use super::fused::{self, Output};
use super::scan::{Scan, ScanInput};
use super::{Fun1, Fun2, Lik, Op, GATHER_ZERO};
use crate::autodiff::reverse::{back_unary_batched, d_binary, d_unary, is_special2};
use crate::autodiff::Scalar;
use crate::dist::HALF_LOG_2PI;

/// What a body node is in the flat program.
#[derive(Debug, Clone, PartialEq)]
enum Instr {
    /// Input j of the body (an outer node, or a carried value).
    Input,
    /// A constant, possibly a different one at each step (the step's data).
    Const,
    /// An elementwise function of an earlier body node.
    Unary(Fun1, usize),
    /// `+`, `−`, `*`, `/`, `pow`, `fmin`, `fmax` of two earlier body nodes.
    Binary(Fun2, usize, usize),
    /// Scalars packed into a vector (an HMM's `[acc₁, acc₂]`), entry by entry.
    Assemble(Vec<usize>),
    /// One entry of an input read from the enclosing graph, at an index that changes from
    /// step to step (`e1[t]` of a vector computed before the loop).
    Gather(usize),
    /// `log_sum_exp` of an assembled vector.
    Lse(usize),
    /// A fused likelihood of one observation (`normal_lpdf(y[t] | mu[k], 1)`).
    Lik(Lik, Vec<usize>),
}

/// The most operands of a likelihood in a flat program.
const MAX_LIK_ARGS: usize = 3;

/// A scalar scan body as a flat program.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    instrs: Vec<Instr>,
    /// Per body node: where its values start among the operations' (in entries per
    /// column: a node of n entries takes n · S values), if it is an operation.
    slot: Vec<Option<usize>>,
    /// Per body node: its entries per column.
    size: Vec<usize>,
    /// The operations' entries per column.
    width: usize,
    /// The longest lag of a carry.
    lag: usize,
    /// Per body node: its place among the carried nodes (their values are kept for every
    /// step), if carried.
    carry: Vec<Option<usize>>,
    /// The number of carried nodes.
    n_carried: usize,
    /// Per body node: whether it depends on w.
    batched: Vec<bool>,
}

/// One operand at one step: S values side by side, or one value for every column.
#[derive(Clone, Copy)]
enum Val<'a, T> {
    Cols(&'a [T]),
    One(T),
}

impl<T: Copy> Val<'_, T> {
    #[inline(always)]
    fn at(&self, c: usize) -> T {
        match self {
            Val::Cols(v) => v[c],
            Val::One(v) => *v,
        }
    }
}

impl Program {
    /// The flat program of `scan`, given which body nodes depend on w; `None` when the body
    /// is not scalar arithmetic (with `log_sum_exp` of assembled scalars and one-observation
    /// likelihoods) on values that all depend on w (the general evaluator runs it).
    pub(crate) fn of(scan: &Scan, batched: &[bool]) -> Option<Program> {
        #[cfg(test)]
        if tests::GENERAL_ONLY.with(std::cell::Cell::get) {
            return None;
        }
        let body = &scan.body;
        let n_in = scan.inputs.len();
        let size: Vec<usize> = body.nodes.iter().map(|n| n.shape.size()).collect();
        let scalar = |q: usize| size[q] == 1;
        if !scan.exports.iter().all(|&p| scalar(p)) {
            return None;
        }
        // only constants and gathers may change from step to step
        if scan
            .varying
            .iter()
            .any(|(p, _)| !matches!(body.nodes[*p].op, Op::Const(_) | Op::Gather(..)))
        {
            return None;
        }
        for (j, input) in scan.inputs.iter().enumerate() {
            if let ScanInput::Carry { node, .. } = input {
                let carried_op = !matches!(body.nodes[*node].op, Op::Const(_)) && *node >= n_in;
                if !carried_op || !batched[*node] || !batched[j] || size[*node] != 1 {
                    return None;
                }
            }
        }
        let mut instrs: Vec<Instr> = Vec::with_capacity(body.nodes.len());
        let mut slot = Vec::with_capacity(body.nodes.len());
        let mut width = 0;
        for (p, node) in body.nodes.iter().enumerate() {
            // operations on scalars, but log_sum_exp of an assembled vector
            let all_scalar = |ids: &[usize]| ids.iter().all(|&q| scalar(q));
            let instr = match &node.op {
                Op::Const(_) => Instr::Const,
                _ if p < n_in => Instr::Input,
                Op::Unary(f, a) if all_scalar(&[p, a.0]) => Instr::Unary(*f, a.0),
                Op::Binary(f, a, b) if !is_special2(*f) && all_scalar(&[p, a.0, b.0]) => {
                    Instr::Binary(*f, a.0, b.0)
                }
                Op::Assemble(ids, idx) if idx.iter().all(|&(j, e)| e == 0 && scalar(ids[j as usize].0)) => {
                    Instr::Assemble(idx.iter().map(|&(j, _)| ids[j as usize].0).collect())
                }
                Op::Pack(ids) if ids.iter().all(|i| scalar(i.0)) => {
                    Instr::Assemble(ids.iter().map(|i| i.0).collect())
                }
                Op::Gather(a, idx)
                    if scalar(p)
                        && idx.len() == 1
                        && instrs[a.0] == Instr::Input
                        && matches!(scan.inputs[a.0], ScanInput::Outer(_)) =>
                {
                    Instr::Gather(a.0)
                }
                Op::LogSumExp(a) if scalar(p) && matches!(instrs[a.0], Instr::Assemble(_)) => Instr::Lse(a.0),
                Op::LikSum(
                    lik @ (Lik::Normal | Lik::Cauchy | Lik::BernoulliLogit | Lik::PoissonLog),
                    ids,
                ) if scalar(p)
                    && ids.len() <= MAX_LIK_ARGS
                    && all_scalar(&ids.iter().map(|i| i.0).collect::<Vec<_>>()) =>
                {
                    Instr::Lik(*lik, ids.iter().map(|i| i.0).collect())
                }
                _ => return None,
            };
            let op = !matches!(instr, Instr::Input | Instr::Const);
            if op && !batched[p] {
                return None;
            }
            slot.push(op.then(|| {
                width += size[p];
                width - size[p]
            }));
            instrs.push(instr);
        }
        let mut carry = vec![None; body.nodes.len()];
        let mut n_carried = 0;
        for input in &scan.inputs {
            if let ScanInput::Carry { node, .. } = input {
                if carry[*node].is_none() {
                    carry[*node] = Some(n_carried);
                    n_carried += 1;
                }
            }
        }
        Some(Program {
            instrs,
            slot,
            size,
            width,
            lag: scan.max_lag(),
            carry,
            n_carried,
            batched: batched.to_vec(),
        })
    }
}

/// What the forward pass of a scan run by a [`Program`] keeps for the reverse sweep: the
/// carried nodes' values of every step (step t's at `carried[t · n_carried · S ..]`). The
/// reverse sweep computes each step's other values again from them: GARCH(1,1)'s eight
/// operations per step kept for 1000 steps are 6.4 MB per 100 columns, which the reverse
/// sweep read back from memory; one carried value per step fits in the cache.
pub(crate) struct Flat<T> {
    pub(crate) program: Program,
    carried: Vec<T>,
    /// The entries of the scan's value anything reads, when only gathers read it
    /// ([`super::scan::gathered_entries`]); the others are left at zero, and so is their
    /// adjoint.
    read: Option<Vec<bool>>,
}

/// The constants of the body at step `t` (one value each; other nodes' entries unused).
fn consts_at<T: Scalar>(scan: &Scan, consts: &mut [T], t: usize) {
    for (p, ops) in &scan.varying {
        if let Op::Const(v) = &ops[t] {
            consts[*p] = T::lift(v)[0];
        }
    }
}

/// The constants' first values.
fn first_consts<T: Scalar>(scan: &Scan) -> Vec<T> {
    scan.body
        .nodes
        .iter()
        .map(|n| match &n.op {
            Op::Const(v) => T::lift(v)[0],
            _ => T::zero(),
        })
        .collect()
}

/// A value as an operand: S values side by side, or one value for all columns.
fn outer_val<'a, T: Scalar>(a: Arg<'a, T>, s: usize) -> Val<'a, T> {
    if a.batched {
        Val::Cols(&a.data[..s])
    } else {
        Val::One(a.data[0])
    }
}

/// Where the operands of step `t` come from: the enclosing tape, the step's constants, the
/// operations of this step evaluated so far (`done`), and the stored steps before it.
struct Operands<'a, 'b, T: Scalar> {
    outer: &'b Tape<'a, T>,
    scan: &'b Scan,
    program: &'b Program,
    consts: &'b [T],
    s: usize,
    t: usize,
}

impl<'a, 'b, T: Scalar> Operands<'a, 'b, T> {
    /// The index gather node `p` reads at this step; `None` for the index that gives 0.
    #[inline(always)]
    fn gathered(&self, p: usize) -> Option<usize> {
        match self.scan.op_at(p, self.t) {
            Op::Gather(_, idx) => (idx[0] != GATHER_ZERO).then_some(idx[0] as usize),
            _ => unreachable!("a gather at every step"),
        }
    }

    /// Body node `q`'s value at step `t`; `this` holds this step's operations evaluated so
    /// far, `earlier(t')` the carried values of an earlier step.
    #[inline(always)]
    fn get<'c, 'd: 'c>(&self, q: usize, this: &'c [T], earlier: &impl Fn(usize) -> &'d [T]) -> Val<'c, T>
    where
        'b: 'c,
    {
        let s = self.s;
        match &self.program.instrs[q] {
            Instr::Const => Val::One(self.consts[q]),
            Instr::Input => match (self.scan.inputs[q].source(self.t), &self.scan.inputs[q]) {
                (Some(id), _) => outer_val(self.outer.arg(id), s),
                (None, ScanInput::Carry { node, init }) => {
                    let k = self.program.carry[*node].expect("a carried node has a place");
                    Val::Cols(&earlier(self.t - init.len())[k * s..(k + 1) * s])
                }
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            },
            _ => {
                let k = self.program.slot[q].expect("an operation has a slot");
                Val::Cols(&this[k * s..(k + self.program.size[q]) * s])
            }
        }
    }
}

/// `out` = f(a, b) entrywise over the S columns.
#[inline(always)]
fn zip<T: Scalar>(a: Val<'_, T>, b: Val<'_, T>, out: &mut [T], op: impl Fn(T, T) -> T) {
    match (a, b) {
        (Val::Cols(x), Val::Cols(y)) => out
            .iter_mut()
            .zip(x.iter().zip(y))
            .for_each(|(o, (&x, &y))| *o = op(x, y)),
        (Val::One(x), Val::Cols(y)) => out.iter_mut().zip(y).for_each(|(o, &y)| *o = op(x, y)),
        (Val::Cols(x), Val::One(y)) => out.iter_mut().zip(x).for_each(|(o, &x)| *o = op(x, y)),
        (Val::One(x), Val::One(y)) => out.iter_mut().for_each(|o| *o = op(x, y)),
    }
}

/// Step `t`'s operations into `cur` (by slot), the carried values of the steps before it
/// read through `earlier`; with `aux` (one buffer per body node), the likelihoods' partials
/// for the reverse sweep; with `kept` (the step's carried values, when it runs again for
/// the reverse sweep), the carried nodes are copied from there, not computed again (an
/// HMM's carried values are its `log_sum_exp`s).
#[inline(always)]
fn run_step<'d, T: Scalar>(
    ops: &Operands<'_, '_, T>,
    cur: &mut [T],
    earlier: &impl Fn(usize) -> &'d [T],
    mut aux: Option<&mut [Vec<T>]>,
    kept: Option<&[T]>,
    scratch: &mut Vec<T>,
) {
    let (program, s) = (ops.program, ops.s);
    for p in ops.scan.inputs.len()..program.instrs.len() {
        let Some(k) = program.slot[p] else { continue };
        let (this, rest) = cur.split_at_mut(k * s);
        let y = &mut rest[..program.size[p] * s];
        // (a carried likelihood is computed again: the reverse sweep needs its partials)
        if let (Some(kept), Some(c), false) = (
            kept,
            program.carry[p],
            matches!(program.instrs[p], Instr::Lik(..)),
        ) {
            y.copy_from_slice(&kept[c * s..(c + 1) * s]);
            continue;
        }
        match &program.instrs[p] {
            Instr::Unary(f, a) => {
                match ops.get(*a, this, earlier) {
                    Val::Cols(x) => y.copy_from_slice(x),
                    Val::One(x) => y.fill(x),
                }
                // the cheap functions inline (compiled for the wider vector units below), by
                // the formula `Scalar::map_in_place` uses for them, so the same bits
                match f {
                    Fun1::Square => y.iter_mut().for_each(|v| *v = unary(Fun1::Square, *v)),
                    Fun1::Sqrt => y.iter_mut().for_each(|v| *v = unary(Fun1::Sqrt, *v)),
                    Fun1::Neg => y.iter_mut().for_each(|v| *v = unary(Fun1::Neg, *v)),
                    f => T::map_in_place(*f, y),
                }
            }
            Instr::Binary(f, a, b) => {
                let (va, vb) = (ops.get(*a, this, earlier), ops.get(*b, this, earlier));
                match f {
                    Fun2::Add => zip(va, vb, y, |x, y| x + y),
                    Fun2::Sub => zip(va, vb, y, |x, y| x - y),
                    Fun2::Mul => zip(va, vb, y, |x, y| x * y),
                    Fun2::Div => zip(va, vb, y, |x, y| x / y),
                    &f => {
                        let b_const = program.instrs[*b] == Instr::Const;
                        zip(va, vb, y, |x, y| binary(f, x, y, b_const))
                    }
                }
            }
            Instr::Assemble(ids) => {
                // entry by entry: entry i of every column side by side (see `lse_planar`)
                for (&q, entries) in ids.iter().zip(y.chunks_exact_mut(s)) {
                    match ops.get(q, this, earlier) {
                        Val::Cols(v) => entries.copy_from_slice(v),
                        Val::One(x) => entries.fill(x),
                    }
                }
            }
            &Instr::Gather(a) => match ops.gathered(p) {
                None => y.fill(T::zero()),
                Some(k) => {
                    let id = ops.scan.inputs[a]
                        .source(ops.t)
                        .expect("a gathered input is an outer node");
                    let x = ops.outer.arg(id);
                    if x.batched {
                        for (c, o) in y.iter_mut().enumerate() {
                            *o = x.data[k + c * x.size];
                        }
                    } else {
                        y.fill(x.data[k]);
                    }
                }
            },
            &Instr::Lse(a) => {
                let Val::Cols(x) = ops.get(a, this, earlier) else {
                    unreachable!("an assembled vector is an operation")
                };
                lse_planar(x, program.size[a], s, y, scratch);
            }
            Instr::Lik(lik, ids) => {
                // (at most three operands: arrays, not vectors, as this runs per step)
                let mut vals = [Val::One(T::zero()); MAX_LIK_ARGS];
                for (v, &q) in vals.iter_mut().zip(ids) {
                    *v = ops.get(q, this, earlier);
                }
                // as the general evaluator's step tape: an input that depends on w has S
                // values, repeated when its source has one
                let mut repeated: [Vec<T>; MAX_LIK_ARGS] = Default::default();
                for ((r, v), &q) in repeated.iter_mut().zip(&vals).zip(ids) {
                    if let Val::One(x) = v {
                        if program.batched[q] {
                            *r = vec![*x; s];
                        }
                    }
                }
                let none = Arg {
                    data: &[][..],
                    size: 0,
                    batched: false,
                    constant: true,
                };
                let mut args = [none; MAX_LIK_ARGS];
                for (a, ((&q, v), r)) in args.iter_mut().zip(ids.iter().zip(&vals).zip(&repeated)) {
                    *a = {
                        let constant = program.instrs[q] == Instr::Const;
                        match (v, r.is_empty()) {
                            (_, false) => Arg {
                                data: r,
                                size: 1,
                                batched: true,
                                constant,
                            },
                            (Val::Cols(c), true) => Arg {
                                data: c,
                                size: 1,
                                batched: true,
                                constant,
                            },
                            (Val::One(x), true) => Arg {
                                data: std::slice::from_ref(x),
                                size: 1,
                                batched: false,
                                constant,
                            },
                        }
                    };
                }
                let partials = aux.as_deref_mut().map(|a| &mut a[p]);
                if *lik == Lik::Normal && !args[2].batched {
                    normal_one_per_column(&args[..3], y, partials);
                } else {
                    let v = fused::forward(*lik, &args[..ids.len()], s, partials, Output::Sum);
                    y.copy_from_slice(&v[..s]);
                }
            }
            Instr::Input | Instr::Const => unreachable!("only operations have slots"),
        }
    }
}

/// log Σ exp of each column's n entries into `y` (S values), the entries of the assembled
/// vector `x` stored entry by entry: entry i of column c at `x[i · S + c]`. Each value is
/// the same operations in the same order as `eval::lse_into_with` on the entries stored
/// column by column (m the first largest entry by real part, m + log Σᵢ exp(xᵢ − m) when m
/// is finite, with the two-entry pass of one exponential where exp(0) is exactly one), so
/// the same bits; but every loop runs over the columns, with unit stride, instead of over
/// a column's few entries (the HMM's forward and reverse sweeps moved entries one at a
/// time between the interleaved vector and the scalars it packs).
#[inline(always)]
fn lse_planar<T: Scalar>(x: &[T], n: usize, s: usize, y: &mut [T], z: &mut Vec<T>) {
    let y = &mut y[..s];
    if n == 0 {
        y.fill(T::from(f64::NEG_INFINITY));
        return;
    }
    z.clear();
    if n == 2 && T::EXP_OF_ZERO_IS_ONE {
        // the larger entry (the first on a tie or NaN) and the other less it
        z.resize(s, T::zero());
        let (x0, x1) = x[..2 * s].split_at(s);
        for (((m, zc), &a), &b) in y.iter_mut().zip(z.iter_mut()).zip(x0).zip(x1) {
            let (hi, lo) = if b.real() > a.real() { (b, a) } else { (a, b) };
            *m = hi;
            *zc = lo - hi;
        }
        T::map_in_place(Fun1::Exp, z);
        for zc in z.iter_mut() {
            *zc = T::one() + *zc;
        }
    } else {
        z.resize(n * s, T::zero());
        y.copy_from_slice(&x[..s]);
        for xi in x[s..n * s].chunks_exact(s) {
            for (m, &v) in y.iter_mut().zip(xi) {
                if v.real() > m.real() {
                    *m = v;
                }
            }
        }
        for (zi, xi) in z.chunks_exact_mut(s).zip(x.chunks_exact(s)) {
            for ((o, &v), &m) in zi.iter_mut().zip(xi).zip(y.iter()) {
                *o = v - m;
            }
        }
        T::map_in_place(Fun1::Exp, z);
        // each column's sum in entry order, into the first entry's place (read before it
        // is written)
        for c in 0..s {
            z[c] = (0..n).map(|i| z[i * s + c]).sum();
        }
    }
    let sums = &mut z[..s];
    T::map_in_place(Fun1::Log, sums);
    for (m, &l) in y.iter_mut().zip(sums.iter()) {
        if m.real().is_finite() {
            *m += l;
        }
    }
}

/// The reverse rule of [`lse_planar`]: `xbar` (entry by entry, as `x`) += ȳ_c · exp(xᵢ − y_c)
/// for each entry i of column c, the weights exp(xᵢ − y) into `w` first, each product and sum
/// as `eval::lse_weights` and `reverse::add_scaled_columns` form them.
#[inline(always)]
fn lse_planar_back<T: Scalar>(x: &[T], y: &[T], ybar: &[T], w: &mut Vec<T>, xbar: &mut [T]) {
    let s = ybar.len();
    w.clear();
    w.extend_from_slice(x);
    for wi in w.chunks_exact_mut(s) {
        for (v, &yc) in wi.iter_mut().zip(y) {
            *v -= yc;
        }
    }
    T::map_in_place(Fun1::Exp, w);
    for (xi, wi) in xbar.chunks_exact_mut(s).zip(w.chunks_exact(s)) {
        for ((o, &wv), &g) in xi.iter_mut().zip(wi).zip(ybar) {
            *o += g * wv;
        }
    }
}

/// `normal_lpdf(x | mu, sigma)` of one observation per column with one σ for all columns
/// (an HMM's `normal_lpdf(y[t] | mu[k], 1)`) into `y`, and with `partials` the blocks of
/// ∂/∂x, ∂/∂μ and ∂/∂σ of the operands that are not constants (S each). The arithmetic of
/// `fused::forward` for this case (its `one_per_column`: z = (x − μ)·(1/σ), the terms
/// −½ log 2π − log σ − ½z², partials −z/σ, z/σ, (z² − 1)/σ), without its buffers, which a
/// recursion's step paid for at every step.
#[inline(always)]
fn normal_one_per_column<'a, T: Scalar>(args: &[Arg<'a, T>], y: &mut [T], partials: Option<&mut Vec<T>>) {
    let s = y.len();
    let [x, mu, sigma] = [args[0], args[1], args[2]];
    let sd = sigma.data[0];
    let blocks = args.iter().filter(|a| !a.constant).count();
    let partials = partials.map(|v| {
        v.clear();
        v.resize(blocks * s, T::zero());
        v.as_mut_slice()
    });
    if sd.real().partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        // outside the support, as the general code: −∞, partials left at zero
        y.fill(T::from(f64::NEG_INFINITY));
        return;
    }
    let (ls, inv) = (sd.ln(), sd.recip());
    let c = T::from(-HALF_LOG_2PI) - ls;
    let half = T::from(-0.5);
    // z = (x − μ)·(1/σ) into y first, each case its own loop (so that each vectorises)
    zip(outer_val(x, s), outer_val(mu, s), y, |a, b| (a - b) * inv);
    if let Some(part) = partials {
        // each non-constant operand's block in turn: x, then μ, then σ
        let mut blocks = part.chunks_exact_mut(s);
        if !x.constant {
            let dx = blocks.next().expect("a block per operand");
            dx.iter_mut().zip(y.iter()).for_each(|(d, &z)| *d = -(z * inv));
        }
        if !mu.constant {
            let dmu = blocks.next().expect("a block per operand");
            dmu.iter_mut()
                .zip(y.iter())
                .for_each(|(d, &z)| *d = -(-(z * inv)));
        }
        if !sigma.constant {
            let ds = blocks.next().expect("a block per operand");
            ds.iter_mut()
                .zip(y.iter())
                .for_each(|(d, &z)| *d = (z * z - T::one()) * inv);
        }
    }
    for v in y.iter_mut() {
        let z = *v;
        *v = std::iter::once(c + half * (z * z)).sum();
    }
}

avx2_dispatch! {
    /// The value of the scan at its S columns (`s × steps · stride`, column by column; only
    /// the entries in `read` when it is given, the others zero), and the carried values of
    /// every step when `partials` (otherwise only those a carry still reads are kept).
    fn forward(
        outer: &Tape<'_, T>,
        scan: &Scan,
        program: Program,
        read: Option<Vec<bool>>,
        partials: bool
    ) -> (Vec<T>, Option<Flat<T>>) => forward_impl
}

#[inline(always)]
fn forward_impl<T: Scalar>(
    outer: &Tape<'_, T>,
    scan: &Scan,
    program: Program,
    read: Option<Vec<bool>>,
    partials: bool,
) -> (Vec<T>, Option<Flat<T>>) {
    let s = outer.s;
    let mut cur = vec![T::zero(); program.width * s];
    let mut scratch = Vec::new();
    let block = program.n_carried * s;
    // without partials a ring of the last lag + 1 steps
    let kept = if partials { scan.steps } else { program.lag + 1 };
    let at = |t: usize| (t % kept) * block;
    let mut carried = vec![T::zero(); kept * block];
    let mut consts = first_consts::<T>(scan);
    let stride = scan.stride();
    let offsets = scan.export_offsets();
    let size = scan.steps * stride;
    let mut out = vec![T::zero(); size * s];
    for t in 0..scan.steps {
        consts_at(scan, &mut consts, t);
        let start = at(t);
        let (lo, rest) = carried.split_at_mut(start);
        let (mine, hi) = rest.split_at_mut(block);
        let (lo, hi): (&[T], &[T]) = (lo, hi);
        let earlier = |u: usize| {
            let e = at(u);
            if e < start {
                &lo[e..e + block]
            } else {
                &hi[e - start - block..e - start]
            }
        };
        let ops = Operands {
            outer,
            scan,
            program: &program,
            consts: &consts,
            s,
            t,
        };
        run_step(&ops, &mut cur, &earlier, None, None, &mut scratch);
        for (p, c) in program.carry.iter().enumerate() {
            if let (Some(c), Some(k)) = (c, program.slot[p]) {
                mine[c * s..(c + 1) * s].copy_from_slice(&cur[k * s..(k + 1) * s]);
            }
        }
        for (e, &p) in scan.exports.iter().enumerate() {
            let v = ops.get(p, &cur, &earlier);
            let base = t * stride + offsets[e];
            // (each entry is one value per column, `size` apart: an entry no one reads, most
            // of an HMM's, is not written)
            if read.as_ref().is_some_and(|r| !r[base]) {
                continue;
            }
            for c in 0..s {
                out[c * size + base] = v.at(c);
            }
        }
    }
    let flat = partials.then_some(Flat {
        program,
        carried,
        read,
    });
    (out, flat)
}

avx2_dispatch! {
    /// The reverse sweep of a scan run by [`forward`] with partials: adds the adjoints of the
    /// scan's inputs to `adj` (the enclosing graph's adjoints, `S` per scalar node) given the
    /// adjoint `ybar` of its value. As `autodiff::reverse::back_scan`: each step from the
    /// last, a step's inputs adding straight into the adjoints of the nodes they read, the
    /// exported nodes' adjoints starting from `ybar`'s share.
    fn backward(
        outer: &Tape<'_, T>,
        scan: &Scan,
        flat: &Flat<T>,
        batched: &[bool],
        ybar: &[T],
        adj: &mut [Vec<T>],
        want_theta: bool
    ) => backward_impl
}

#[inline(always)]
fn backward_impl<T: Scalar>(
    outer: &Tape<'_, T>,
    scan: &Scan,
    flat: &Flat<T>,
    batched: &[bool],
    ybar: &[T],
    adj: &mut [Vec<T>],
    want_theta: bool,
) {
    let s = outer.s;
    let program = &flat.program;
    let read = flat.read.as_deref();
    let body = &scan.body;
    let (n_in, nb) = (scan.inputs.len(), body.nodes.len());
    let block = program.n_carried * s;
    let stride = scan.stride();
    let offsets = scan.export_offsets();
    let size = scan.steps * stride;
    let mut values = vec![T::zero(); program.width * s];
    let mut aux: Vec<Vec<T>> = vec![Vec::new(); nb];
    let mut weights: Vec<T> = Vec::new();
    let mut scratch = Vec::new();
    let wanted = |p: usize| program.instrs[p] != Instr::Const && (want_theta || batched[p]);
    // the adjoints of the steps a carry reaches, step t in ring[t % ring.len()]
    let lag = program.lag;
    let mut ring: Vec<Vec<Vec<T>>> = (0..=lag)
        .map(|_| {
            (0..nb)
                .map(|p| {
                    if p >= n_in && wanted(p) {
                        vec![T::zero(); program.size[p] * s]
                    } else {
                        Vec::new()
                    }
                })
                .collect()
        })
        .collect();
    let r = ring.len();
    // step t's adjoints: zero, the exported nodes' from ybar
    let start_step = |adjs: &mut Vec<Vec<T>>, t: usize| {
        for a in adjs.iter_mut().skip(n_in) {
            a.fill(T::zero());
        }
        for (e, &p) in scan.exports.iter().enumerate() {
            if adjs[p].is_empty() {
                continue;
            }
            let base = t * stride + offsets[e];
            // (an entry no reader gives an adjoint adds its zeros: +0 to +0, skipped; the
            // strided reads of all the columns' entries were most of an HMM step's
            // bookkeeping)
            if read.is_some_and(|r| !r[base]) {
                continue;
            }
            for (c, o) in adjs[p].iter_mut().enumerate() {
                *o += ybar[c * size + base];
            }
        }
    };
    let mut consts = first_consts::<T>(scan);
    let mut borrowed = vec![false; n_in];
    let mut started = scan.steps;
    for t in (0..scan.steps).rev() {
        // the steps this one's carries add to, started before it is swept
        while started > t - lag.min(t) {
            started -= 1;
            start_step(&mut ring[started % r], started);
        }
        // each input's adjoint is the buffer it adds to (a scratch one when that is not kept)
        for (j, input) in scan.inputs.iter().enumerate() {
            if program.instrs[j] == Instr::Const {
                continue;
            }
            let taken = match (input.source(t), input) {
                (Some(id), _) => std::mem::take(&mut adj[id.0]),
                (None, ScanInput::Carry { node, init }) => {
                    std::mem::take(&mut ring[(t - init.len()) % r][*node])
                }
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            };
            // an input whose node keeps no adjoint adds nothing (the general sweep adds
            // into a scratch buffer and drops it)
            borrowed[j] = !taken.is_empty();
            ring[t % r][j] = taken;
        }
        consts_at(scan, &mut consts, t);
        let earlier = |u: usize| &flat.carried[u * block..(u + 1) * block];
        let ops = Operands {
            outer,
            scan,
            program,
            consts: &consts,
            s,
            t,
        };
        // the step's values again, from the carried values before it
        run_step(
            &ops,
            &mut values,
            &earlier,
            Some(&mut aux),
            Some(earlier(t)),
            &mut scratch,
        );
        let values = &values[..];
        let cur = &mut ring[t % r];
        for p in (n_in..nb).rev() {
            let (lower, upper) = cur.split_at_mut(p);
            let yb = &upper[0];
            let Some(k) = program.slot[p] else { continue };
            if yb.is_empty() {
                continue;
            }
            let y = &values[k * s..(k + program.size[p]) * s];
            match &program.instrs[p] {
                &Instr::Unary(f, a) => {
                    if lower[a].is_empty() {
                        continue;
                    }
                    let x = ops.get(a, values, &earlier);
                    back_unary(f, x, y, yb, &mut lower[a]);
                }
                &Instr::Binary(f, a, b) => {
                    let (va, vb) = (ops.get(a, values, &earlier), ops.get(b, values, &earlier));
                    let b_const = program.instrs[b] == Instr::Const;
                    for (target, first) in [(a, true), (b, false)] {
                        if lower[target].is_empty() {
                            continue;
                        }
                        back_binary(f, first, va, vb, y, b_const, yb, &mut lower[target]);
                    }
                }
                Instr::Assemble(ids) => {
                    // entry by entry, each over the columns, as the general reverse rule
                    for (&q, g) in ids.iter().zip(yb.chunks_exact(s)) {
                        for (o, &g) in lower[q].iter_mut().zip(g) {
                            *o += g;
                        }
                    }
                }
                &Instr::Gather(a) => {
                    if let Some(k) = ops.gathered(p) {
                        let na = program.size[a];
                        for (c, &g) in yb.iter().enumerate() {
                            if let Some(o) = lower[a].get_mut(k + c * na) {
                                *o += g;
                            }
                        }
                    }
                }
                &Instr::Lse(a) => {
                    let n = program.size[a];
                    let x = &values[program.slot[a].expect("an operation has a slot") * s..][..n * s];
                    lse_planar_back(x, y, yb, &mut weights, &mut lower[a]);
                }
                Instr::Lik(_, ids) => {
                    // the partials of each operand that is not a constant, one block each
                    let mut block = 0;
                    for &q in ids {
                        if program.instrs[q] == Instr::Const {
                            continue;
                        }
                        let part = &aux[p][block * s..(block + 1) * s];
                        block += 1;
                        for ((o, &g), &d) in lower[q].iter_mut().zip(yb).zip(part) {
                            *o += g * d;
                        }
                    }
                }
                Instr::Input | Instr::Const => unreachable!("only operations have slots"),
            }
        }
        for (j, input) in scan.inputs.iter().enumerate() {
            if program.instrs[j] == Instr::Const || !borrowed[j] {
                continue;
            }
            let back = std::mem::take(&mut ring[t % r][j]);
            match (input.source(t), input) {
                (Some(id), _) => adj[id.0] = back,
                (None, ScanInput::Carry { node, init }) => ring[(t - init.len()) % r][*node] = back,
                (None, ScanInput::Outer(_)) => unreachable!("an outer input always has a source"),
            }
        }
    }
}

/// x̄ += ȳ · f'(x) over the S columns, the common functions' partial fixed outside the loop.
#[inline(always)]
fn back_unary<T: Scalar>(f: Fun1, x: Val<'_, T>, y: &[T], yb: &[T], xbar: &mut [T]) {
    #[inline(always)]
    fn run<T: Scalar>(x: Val<'_, T>, y: &[T], yb: &[T], xbar: &mut [T], d: impl Fn(T, T) -> T) {
        match x {
            Val::Cols(x) => back_unary_batched(xbar, yb, x, y, d),
            Val::One(x) => {
                for ((o, &b), &y) in xbar.iter_mut().zip(yb).zip(y) {
                    *o += b * d(x, y);
                }
            }
        }
    }
    match f {
        Fun1::Exp => run(x, y, yb, xbar, |x, y| d_unary(Fun1::Exp, x, y)),
        Fun1::Log => run(x, y, yb, xbar, |x, y| d_unary(Fun1::Log, x, y)),
        Fun1::Sqrt => run(x, y, yb, xbar, |x, y| d_unary(Fun1::Sqrt, x, y)),
        Fun1::Square => run(x, y, yb, xbar, |x, y| d_unary(Fun1::Square, x, y)),
        Fun1::Neg => run(x, y, yb, xbar, |x, y| d_unary(Fun1::Neg, x, y)),
        f => run(x, y, yb, xbar, |x, y| d_unary(f, x, y)),
    }
}

/// The adjoint of one operand of y = f(a, b): out += ȳ · ∂y/∂a (`first`) or ∂y/∂b.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn back_binary<T: Scalar>(
    f: Fun2,
    first: bool,
    a: Val<'_, T>,
    b: Val<'_, T>,
    y: &[T],
    b_const: bool,
    yb: &[T],
    out: &mut [T],
) {
    let one = T::one();
    match (f, first) {
        (Fun2::Add, _) | (Fun2::Sub, true) => out.iter_mut().zip(yb).for_each(|(o, &g)| *o += g * one),
        (Fun2::Sub, false) => {
            let m = -one;
            out.iter_mut().zip(yb).for_each(|(o, &g)| *o += g * m);
        }
        (Fun2::Mul, _) => match if first { b } else { a } {
            Val::Cols(v) => {
                for ((o, &g), &d) in out.iter_mut().zip(yb).zip(v) {
                    *o += g * d;
                }
            }
            Val::One(d) => out.iter_mut().zip(yb).for_each(|(o, &g)| *o += g * d),
        },
        (Fun2::Div, true) => match b {
            Val::Cols(v) => {
                for ((o, &g), &d) in out.iter_mut().zip(yb).zip(v) {
                    *o += g * d.recip();
                }
            }
            Val::One(d) => {
                // black_box keeps the division in this arm: hoisted above the match (as the
                // optimiser did), it divided by whatever bits a `Val::Cols` holds there, a
                // subnormal as often as not, whose microcode assist cost ~10 % of the sweep
                let d = std::hint::black_box(d).recip();
                out.iter_mut().zip(yb).for_each(|(o, &g)| *o += g * d);
            }
        },
        (Fun2::Div, false) => {
            for (c, (o, &g)) in out.iter_mut().zip(yb).enumerate() {
                *o += g * (-y[c] / b.at(c));
            }
        }
        _ => {
            for (c, (o, &g)) in out.iter_mut().zip(yb).enumerate() {
                let (da, db) = d_binary(f, a.at(c), b.at(c), y[c], b_const);
                *o += g * if first { da } else { db };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::autodiff::reverse::value_grad;
    use crate::graph::eval::{batched_mask, forward_values, lift_consts};
    use crate::graph::LogJoint;

    thread_local! {
        /// Every scan by the general evaluator (to compare the flat program with it).
        pub(super) static GENERAL_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    fn lower(src: &str, data: serde_json::Value) -> LogJoint {
        let mut set = crate::data::DataSet::default();
        crate::data::add_json_text(&mut set, "d.json", data.to_string()).expect("the data parse");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let typed = crate::check::check_source(src, "m.mvi", root, &set)
            .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
        crate::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
    }

    fn series(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (0.7 * i as f64).sin() * 1.5 + 0.3 * f64::from(i % 5 == 0))
            .collect()
    }

    /// The models' scan nodes, with their bodies' batched marks.
    fn flat_programs(lj: &LogJoint) -> Vec<Option<Program>> {
        let batched = batched_mask(&lj.graph);
        lj.graph
            .nodes
            .iter()
            .filter_map(|n| match &n.op {
                Op::Scan(scan) => Some(Program::of(scan, &scan.body_batched(|id| batched[id.0]))),
                _ => None,
            })
            .collect()
    }

    const LAG2: &str = "data { y: vector[T] }\n\
        param { a: real<lower=0, upper=1>\n b: real\n s: real<lower=0> }\n\
        model { a ~ beta(2, 2)\n b ~ normal(0, 1)\n s ~ half_normal(1)\n\
        let h = rep_vector(0, T)\n h[1] = y[1]\n h[2] = y[2] / s\n\
        for t in 3:T { h[t] = a * h[t - 1] + exp(-b * h[t - 2]) / (1 + pow(h[t - 1], 2)) - fmax(y[t], b) }\n\
        y ~ normal(h, s) }";

    const HYPER: &str = "data { y: vector[T] }\n\
        hyper { rho: real<lower=0, upper=1> = 0.4 }\n\
        param { m: real\n s: real<lower=0> }\n\
        model { m ~ normal(0, 1)\n s ~ half_normal(1)\n\
        let h = rep_vector(0, T)\n h[1] = y[1]\n\
        for t in 2:T { h[t] = rho * h[t - 1] + m * y[t] }\n\
        y ~ normal(h, s) }";

    /// A parameter vector read step by step (a gather whose index changes per step).
    const GATHER: &str = "data { y: vector[T] }\n\
        param { x: vector[T]\n s: real<lower=0> }\n\
        model { x ~ normal(0, 1)\n s ~ half_normal(1)\n\
        let h = rep_vector(0, T)\n h[1] = x[1]\n\
        for t in 2:T { h[t] = 0.5 * h[t - 1] + x[t] }\n\
        y ~ normal(h, s) }";

    /// Likelihoods inside the loop: a `hyper` scale, a carried location, counts.
    const LIKS: &str = "data { y: vector[T]\n k: ints[T] }\n\
        hyper { tau: real<lower=0> = 0.7 }\n\
        param { rho: real\n s: real<lower=0> }\n\
        model { rho ~ normal(0, 1)\n s ~ half_normal(1)\n\
        let h = rep_vector(0, T)\n h[1] = y[1]\n\
        for t in 2:T { h[t] = rho * h[t - 1] + 0.1 * y[t]\n y[t] ~ normal(h[t - 1], s)\n\
        target += cauchy_lpdf(h[t] | 0, tau)\n k[t] ~ poisson_log(h[t] / 4)\n\
        target += bernoulli_logit_lpmf(k[t] > 2 | h[t]) } }";

    const VECTOR: &str = "data { y: vector[T] }\n\
        param { a: vector[2]\n s: real<lower=0> }\n\
        model { a ~ normal(0, 1)\n s ~ half_normal(1)\n let v = rep_vector(0, 2)\n\
        for t in 1:T { v = a .* v + [y[t], 1] }\n\
        target += normal_lpdf(sum(v) | 0, s) }";

    /// A three-state HMM: `log_sum_exp` of three assembled entries per state and step (the
    /// general pass of `lse_planar`, not the two-entry one).
    const HMM3: &str = "data { y: vector[T] }\n\
        param { mu: vector[3]\n p: real<lower=0, upper=1> }\n\
        model { mu ~ normal(0, 3)\n p ~ beta(2, 2)\n\
        let a = log(p)\n let b = log1m(p) - log(2)\n\
        let lt = [[a, b, b], [b, a, b], [b, b, a]]\n\
        let gamma = rep_matrix(0, T, 3)\n let acc = rep_vector(0, 3)\n\
        for k in 1:3 { gamma[1, k] = normal_lpdf(y[1] | mu[k], 1) }\n\
        for t in 2:T { for k in 1:3 {\n\
        for j in 1:3 { acc[j] = gamma[t - 1, j] + lt[j, k] + normal_lpdf(y[t] | mu[k], 1) }\n\
        gamma[t, k] = log_sum_exp(acc) } }\n\
        target += log_sum_exp(gamma[T]) }";

    /// A likelihood's value carried to the next step.
    const CARRIED_LIK: &str = "data { y: vector[T] }\n param { m: real }\n\
        model { m ~ normal(0, 1)\n let ll = rep_vector(0, T)\n ll[1] = m\n\
        for t in 2:T { ll[t] = normal_lpdf(y[t] | m + 0.01 * ll[t - 1], 1) }\n\
        target += sum(ll) }";

    fn models() -> Vec<(&'static str, LogJoint)> {
        let y = series(30);
        let read = |f: &str| {
            std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("benches/loops")
                    .join(f),
            )
            .expect("the bench model")
        };
        vec![
            (
                "arma",
                lower(&read("arma11.mvi"), serde_json::json!({"T": 30, "y": y})),
            ),
            (
                "garch",
                lower(
                    &read("garch11.mvi"),
                    serde_json::json!({"T": 30, "y": y, "sigma1": 1.0}),
                ),
            ),
            ("lag 2", lower(LAG2, serde_json::json!({"T": 30, "y": y}))),
            ("hyper", lower(HYPER, serde_json::json!({"T": 30, "y": y}))),
            ("gather", lower(GATHER, serde_json::json!({"T": 30, "y": y}))),
            (
                "carried likelihood",
                lower(CARRIED_LIK, serde_json::json!({"T": 30, "y": y})),
            ),
            (
                "hmm",
                lower(&read("hmm.mvi"), serde_json::json!({"N": 30, "y": y})),
            ),
            ("hmm, 3 states", lower(HMM3, serde_json::json!({"T": 30, "y": y}))),
            (
                // Stan's HMM of posteriordb: packed scalars, emissions gathered per step
                "hmm_drive",
                {
                    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("benches/posteriordb/bball_drive_event_0-hmm_drive_0");
                    let text = |f: &str| std::fs::read_to_string(dir.join(f)).expect("the posteriordb model");
                    let data: serde_json::Value = serde_json::from_str(&text("data.json")).expect("its data");
                    lower(&text("model.mvi"), data)
                },
            ),
            (
                "likelihoods",
                lower(
                    LIKS,
                    serde_json::json!({"T": 30, "y": y, "k": (0..30).map(|i| 2 + i % 3).collect::<Vec<_>>()}),
                ),
            ),
        ]
    }

    #[test]
    fn scalar_recursions_run_as_flat_programs_and_others_do_not() {
        for (name, lj) in models() {
            let programs = flat_programs(&lj);
            assert!(!programs.is_empty(), "{name}: no scan");
            assert!(programs.iter().all(Option::is_some), "{name}: not a flat program");
        }
        // a vector carried from step to step
        let lj = lower(VECTOR, serde_json::json!({"T": 30, "y": series(30)}));
        let programs = flat_programs(&lj);
        assert!(
            !programs.is_empty() && programs.iter().all(Option::is_none),
            "a vector carry"
        );
    }

    #[test]
    fn only_the_entries_gathered_after_the_loop_are_read() {
        let scan_of = |lj: &LogJoint| {
            lj.graph
                .nodes
                .iter()
                .position(|n| matches!(n.op, Op::Scan(_)))
                .expect("a scan")
        };
        // the HMM reads gamma[N] after its loop: the last step's two entries
        let y = series(30);
        let hmm = models()
            .into_iter()
            .find(|(n, _)| *n == "hmm")
            .expect("the HMM")
            .1;
        let k = scan_of(&hmm);
        let read = crate::graph::scan::gathered_entries(&hmm.graph, k).expect("read by gathers only");
        let n = read.len();
        assert_eq!(n, 2 * 28);
        assert_eq!(
            read.iter()
                .enumerate()
                .filter(|(_, &r)| r)
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            vec![n - 2, n - 1]
        );
        // the lag-2 recursion's `y ~ normal(h, s)` reads all of it
        let lag2 = lower(LAG2, serde_json::json!({"T": 30, "y": y}));
        assert_eq!(
            crate::graph::scan::gathered_entries(&lag2.graph, scan_of(&lag2)),
            None
        );
    }

    /// Values, ∇_w and ∇_θ (value_grad) and values alone (forward_values) at `s` columns.
    fn evaluate(lj: &LogJoint, s: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let g = &lj.graph;
        let consts = lift_consts::<f64>(g);
        let theta: Vec<f64> = (0..g.theta_dim).map(|i| 0.2 - 0.1 * i as f64).collect();
        let w: Vec<f64> = (0..g.dim * s).map(|i| 0.4 * (0.37 * i as f64).sin()).collect();
        let grads = value_grad(g, &consts, &theta, &w, s);
        let tape = forward_values(g, &consts, &theta, &w, s);
        (grads.values, grads.grad_w, grads.grad_theta, tape.target_values())
    }

    #[test]
    fn the_flat_program_gives_the_general_evaluators_values_and_gradients_to_the_bit() {
        for (name, lj) in models() {
            for s in [1, 7, 13] {
                let flat = evaluate(&lj, s);
                GENERAL_ONLY.with(|g| g.set(true));
                let general = evaluate(&lj, s);
                GENERAL_ONLY.with(|g| g.set(false));
                assert!(flat.0.iter().all(|v| v.is_finite()), "{name}: {:?}", flat.0);
                assert_eq!(flat, general, "{name}, S = {s}");
                if lj.graph.theta_dim > 0 {
                    assert!(flat.2.iter().any(|&v| v != 0.0), "{name}: ∇_θ taken");
                }
            }
        }
    }
}
