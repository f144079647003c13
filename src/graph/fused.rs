//! Fused likelihood nodes ([`Op::LikSum`](super::Op::LikSum)): the summed log density of
//! `bernoulli_logit`, `poisson_log`, `normal` and `cauchy` (one σ, or one per observation)
//! in one pass over the observations.
//!
//! Input: the operands of a [`Lik`] node (the outcome first), each with one entry per
//! observation or one value for all. Output: the sum per batch column and, in the same pass,
//! each observation's partial derivative with respect to every operand that is not a
//! constant (the "aux" blocks of the tape, n × S each), so the reverse sweep is one
//! multiply-add per entry. Everything is generic over [`Scalar`], so forward-over-reverse H·v
//! (`Dual64`) and the all-forward reference (`HyperDual64`) run the same code; f64 takes the
//! SIMD kernels of [`crate::autodiff::vmath`] through [`Scalar::bernoulli_logit_col`] and
//! [`Scalar::map_in_place`].

use super::eval::{Arg, Tape};
use super::{Fun1, Lik, NodeId};
use crate::autodiff::Scalar;
use crate::dist::HALF_LOG_2PI;

/// The number of observations: the largest operand size.
pub(crate) fn obs_count<T>(args: &[Arg<'_, T>]) -> usize {
    args.iter().map(|a| a.size).max().unwrap_or(0)
}

/// Entry i of an operand's column, broadcasting a single value.
#[inline(always)]
fn pick<T: Copy>(x: &[T], i: usize) -> T {
    if x.len() == 1 {
        x[0]
    } else {
        x[i]
    }
}

/// What a fused node returns per column: the summed log density ([`Op::LikSum`]) or every
/// observation's log density ([`Op::LikPoint`], n values per column, for `predict`).
///
/// [`Op::LikSum`]: super::Op::LikSum
/// [`Op::LikPoint`]: super::Op::LikPoint
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// One value per column.
    Sum,
    /// n values per column.
    Pointwise,
}

/// Collects each column's per-observation values as [`Output`] asks.
struct Collect<T> {
    out: Vec<T>,
    mode: Output,
}

impl<T: Scalar> Collect<T> {
    fn new(mode: Output, n: usize, s: usize) -> Self {
        let cap = if mode == Output::Sum { s } else { n * s };
        Collect {
            out: Vec::with_capacity(cap),
            mode,
        }
    }

    fn column(&mut self, values: &[T]) {
        match self.mode {
            Output::Sum => self.out.push(values.iter().copied().sum()),
            Output::Pointwise => self.out.extend_from_slice(values),
        }
    }

    /// A column outside the support: −∞ (each observation, or the sum).
    fn impossible(&mut self, n: usize) {
        let k = if self.mode == Output::Sum { 1 } else { n };
        self.out
            .extend(std::iter::repeat_n(T::from(f64::NEG_INFINITY), k));
    }
}

avx2_dispatch! {
    /// The log density at each of `s` columns, summed or per observation; with `aux`, also
    /// the per-observation partials (one n × s block per non-constant operand, in operand
    /// order). Its loops over the observations (a softmax's max, shifts, sums and partials)
    /// are compiled for AVX2 too, as the flat programs' are: a categorical likelihood of
    /// RBF features, `fixed-centres-rbf`'s vehicle split, spent 30 % of its time here in
    /// two-lane code.
    fn forward(lik: Lik, args: &[Arg<'_, T>], s: usize, aux: Option<&mut Vec<T>>, mode: Output) -> Vec<T> => forward_impl
}

#[inline(always)]
fn forward_impl<T: Scalar>(
    lik: Lik,
    args: &[Arg<'_, T>],
    s: usize,
    aux: Option<&mut Vec<T>>,
    mode: Output,
) -> Vec<T> {
    let n = obs_count(args);
    let blocks = args.iter().filter(|a| !a.constant).count();
    let mut aux = aux.map(|v| {
        v.clear();
        v.resize(blocks * n * s, T::zero());
        v.as_mut_slice()
    });
    let mut out = Collect::new(mode, n, s);
    match lik {
        Lik::BernoulliLogit => {
            let [y, eta] = two(args);
            let parts = aux.as_deref_mut().filter(|_| !eta.constant);
            if y.size == n && eta.size == n {
                if mode == Output::Sum {
                    return bernoulli_logit_sums(y, eta, n, s, parts);
                }
                let mut parts = parts;
                let mut values = vec![T::zero(); n];
                for c in 0..s {
                    let d = parts.as_deref_mut().map(|p| &mut p[c * n..(c + 1) * n]);
                    T::bernoulli_logit_point(y.col(c), eta.col(c), &mut values, d);
                    out.column(&values);
                }
                return out.out;
            }
            run(y, eta, n, s, parts, &mut out, T::bernoulli_logit_d);
        }
        Lik::PoissonLog => {
            let [k, alpha] = two(args);
            let parts = aux.as_deref_mut().filter(|_| !alpha.constant);
            run(k, alpha, n, s, parts, &mut out, |k, a| {
                let e = a.exp();
                (k * a - e, k - e)
            });
        }
        Lik::CategoricalLogit => categorical_logit(args, s, aux, &mut out),
        Lik::Normal | Lik::Cauchy => {
            let terms: Terms<T> = if lik == Lik::Normal {
                normal_terms
            } else {
                cauchy_terms
            };
            if n == 1 && s > 1 && !args[2].batched {
                return one_per_column(args, s, aux, mode, terms);
            }
            location_scale(args, n, s, aux, &mut out, terms);
        }
    }
    out.out
}

/// A location-scale likelihood of one observation per column with a scale that is the same
/// in every column (a step of a recursion, `normal_lpdf(y[t] | mu[k], 1)`): the S columns
/// as one column of S observations, so that the scale's log and reciprocal are computed
/// once and each pass runs over S entries instead of one per column. Each entry's arithmetic
/// is that of its own column, and the partials land where the column's would (entry c of
/// each block), so values and gradients are unchanged.
fn one_per_column<T: Scalar>(
    args: &[Arg<'_, T>],
    s: usize,
    aux: Option<&mut [T]>,
    mode: Output,
    terms: Terms<T>,
) -> Vec<T> {
    let flat: Vec<Arg<'_, T>> = args
        .iter()
        .map(|a| if a.batched { Arg { size: s, ..*a } } else { *a })
        .collect();
    let mut out = Collect::new(Output::Pointwise, s, 1);
    location_scale(&flat, s, 1, aux, &mut out, terms);
    if mode == Output::Sum {
        // each column's sum of its one term
        out.out.iter_mut().for_each(|v| *v = std::iter::once(*v).sum());
    }
    out.out
}

fn two<'a, 'b, T>(args: &'b [Arg<'a, T>]) -> [Arg<'a, T>; 2]
where
    Arg<'a, T>: Copy,
{
    [args[0], args[1]]
}

/// f(y, x) over the observations of each column for a constant outcome y, collected into
/// `out`, writing ∂f/∂x to `parts` (n × s) when given.
fn run<T: Scalar>(
    y: Arg<'_, T>,
    x: Arg<'_, T>,
    n: usize,
    s: usize,
    mut parts: Option<&mut [T]>,
    out: &mut Collect<T>,
    f: impl Fn(T, T) -> (T, T),
) {
    let mut values = vec![T::zero(); n];
    for c in 0..s {
        let (yc, xc) = (y.col(c), x.col(c));
        match parts.as_deref_mut() {
            Some(p) => {
                let pc = &mut p[c * n..(c + 1) * n];
                for (i, (v, d)) in values.iter_mut().zip(pc.iter_mut()).enumerate() {
                    (*v, *d) = f(pick(yc, i), pick(xc, i));
                }
            }
            None => {
                for (i, v) in values.iter_mut().enumerate() {
                    *v = f(pick(yc, i), pick(xc, i)).0;
                }
            }
        }
        out.column(&values);
    }
}

/// Σ log σ((2y − 1)η) per column through [`Scalar::bernoulli_logit_col`] (f64: the SIMD
/// kernel), with the η-partials (2y − 1) σ(−(2y − 1)η) when asked.
fn bernoulli_logit_sums<T: Scalar>(
    y: Arg<'_, T>,
    eta: Arg<'_, T>,
    n: usize,
    s: usize,
    mut parts: Option<&mut [T]>,
) -> Vec<T> {
    (0..s)
        .map(|c| {
            let d = parts.as_deref_mut().map(|p| &mut p[c * n..(c + 1) * n]);
            T::bernoulli_logit_col(y.col(c), eta.col(c), d)
        })
        .collect()
}

/// η_{i,yᵢ} − log Σ_k e^{η_ik} per row i of the N×K logits (column-major) of each column,
/// by the max-shifted sum; partials 1[k = yᵢ] − softmax_ik (N·K per column). The
/// exponentials come from [`Scalar::map_in_place`] over the whole N×K block. Inlined into
/// [`forward`]'s AVX2 copy.
#[inline(always)]
fn categorical_logit<T: Scalar>(
    args: &[Arg<'_, T>],
    s: usize,
    mut aux: Option<&mut [T]>,
    out: &mut Collect<T>,
) {
    let [y, eta] = two(args);
    let n = y.size;
    let nk = eta.size;
    let labels: Vec<usize> = y.col(0).iter().map(|v| v.real() as usize - 1).collect();
    let (mut e, mut max, mut sum) = (vec![T::zero(); nk], vec![T::zero(); n], vec![T::zero(); n]);
    let mut values = vec![T::zero(); n];
    for c in 0..s {
        let ec = eta.col(c);
        max.copy_from_slice(&ec[..n]);
        for col in ec.chunks_exact(n).skip(1) {
            for (m, &v) in max.iter_mut().zip(col) {
                if v.real() > m.real() {
                    *m = v;
                }
            }
        }
        for (dst, src) in e.chunks_exact_mut(n).zip(ec.chunks_exact(n)) {
            for ((d, &v), &m) in dst.iter_mut().zip(src).zip(&max) {
                *d = v - m;
            }
        }
        T::map_in_place(Fun1::Exp, &mut e);
        sum.iter_mut().for_each(|v| *v = T::zero());
        for col in e.chunks_exact(n) {
            for (t, &v) in sum.iter_mut().zip(col) {
                *t += v;
            }
        }
        values.copy_from_slice(&sum);
        T::map_in_place(Fun1::Log, &mut values);
        for (i, v) in values.iter_mut().enumerate() {
            *v = ec[i + labels[i] * n] - max[i] - *v;
        }
        out.column(&values);
        if let Some(a) = aux.as_deref_mut().filter(|_| !eta.constant) {
            let pc = &mut a[c * nk..(c + 1) * nk];
            for (pk, ek) in pc.chunks_exact_mut(n).zip(e.chunks_exact(n)) {
                for ((p, &v), &t) in pk.iter_mut().zip(ek).zip(&sum) {
                    *p = -(v / t);
                }
            }
            for (i, &l) in labels.iter().enumerate() {
                pc[i + l * n] += T::one();
            }
        }
    }
}

/// A location-scale family's terms at one column: given z = (x − μ)/σ for every
/// observation, log σ and 1/σ, overwrites `z` with each observation's log density and,
/// when `partials`, writes ∂/∂x (= −∂/∂μ) to `dx` and ∂/∂σ to `ds`.
type Terms<T> = fn(z: &mut [T], log_sigma: T, inv_sigma: T, partials: bool, dx: &mut [T], ds: &mut [T]);

/// −½z² − log σ − ½ log 2π; partials −z/σ (x), z/σ (μ), (z² − 1)/σ (σ).
fn normal_terms<T: Scalar>(z: &mut [T], ls: T, inv: T, partials: bool, dx: &mut [T], ds: &mut [T]) {
    let c = T::from(-HALF_LOG_2PI) - ls;
    let half = T::from(-0.5);
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        if partials {
            *dx = -(*z * inv);
            *ds = (z2 - T::one()) * inv;
        }
        *z = c + half * z2;
    }
}

/// −log π − log σ − log(1 + z²); partials −2z/(σ(1 + z²)) (x), the negative (μ),
/// (z² − 1)/(σ(1 + z²)) (σ). The logs come from [`Scalar::map_in_place`] over the column,
/// as log u of u = 1 + z² rounded rather than log1p(z²): the term is added to −log π − log σ,
/// so u's rounding (below 1.2·10⁻¹⁶ absolute) is lost anyway, and log skips log1p's
/// correction (a division per entry, about 7 % of a Cauchy `mvi run` with `predict`).
fn cauchy_terms<T: Scalar>(z: &mut [T], ls: T, inv: T, partials: bool, dx: &mut [T], ds: &mut [T]) {
    let c = T::from(-std::f64::consts::PI.ln()) - ls;
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        if partials {
            let r = inv / (T::one() + z2);
            *dx = -(*z * r) * T::from(2.0);
            *ds = (z2 - T::one()) * r;
        }
        *z = T::one() + z2;
    }
    T::map_in_place(Fun1::Log, z);
    for v in z.iter_mut() {
        *v = c - *v;
    }
}

/// A location-scale family (arguments [x, μ, σ], σ one value or one per observation): −∞
/// where some σ ≤ 0 (or NaN), as the unfused support check; partials ∂x, −∂x (μ) and ∂σ
/// in the aux blocks of the non-constant operands. With one σ per observation the terms
/// are those of σ = 1 at zᵢ = (xᵢ − μᵢ)/σᵢ, then log f(x | μ, σᵢ) = log f₀(zᵢ) − log σᵢ
/// and both partials (∂/∂x, ∂/∂σ) are divided by σᵢ, as for every location-scale family.
fn location_scale<T: Scalar>(
    args: &[Arg<'_, T>],
    n: usize,
    s: usize,
    mut aux: Option<&mut [T]>,
    out: &mut Collect<T>,
    terms: Terms<T>,
) {
    let [x, mu, sigma] = [args[0], args[1], args[2]];
    // aux block of each non-constant operand
    let mut slot = [None; 3];
    let mut b = 0;
    for (j, a) in [x, mu, sigma].iter().enumerate() {
        if !a.constant {
            slot[j] = Some(b * n * s);
            b += 1;
        }
    }
    let partials = aux.is_some();
    // z, ∂x and ∂σ of one column, in one allocation
    let mut buf = vec![T::zero(); 3 * n];
    let (z, rest) = buf.split_at_mut(n);
    let (dx, ds) = rest.split_at_mut(n);
    // log σ of every column at once (one call of the kernel, not one per column: a few
    // observations per column, as a step of a recursion has, made the calls the cost)
    let log_sigma: Vec<T> = if sigma.size == 1 {
        Vec::new()
    } else {
        let mut v = sigma.data[..if sigma.batched { n * s } else { n }].to_vec();
        T::map_in_place(Fun1::Log, &mut v);
        v
    };
    for c in 0..s {
        let sc = sigma.col(c);
        if sc
            .iter()
            .any(|v| v.real().partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
        {
            out.impossible(n);
            continue;
        }
        differences(z, x.col(c), mu.col(c));
        if let [sd] = *sc {
            let (ls, inv) = (sd.ln(), sd.recip());
            z.iter_mut().for_each(|z| *z *= inv);
            terms(z, ls, inv, partials, dx, ds);
        } else {
            z.iter_mut().zip(sc).for_each(|(z, &sd)| *z /= sd);
            terms(z, T::zero(), T::one(), partials, dx, ds);
            let ls = if sigma.batched {
                &log_sigma[c * n..(c + 1) * n]
            } else {
                &log_sigma[..]
            };
            for (v, &l) in z.iter_mut().zip(ls) {
                *v -= l;
            }
            if partials {
                for ((dx, ds), &sd) in dx.iter_mut().zip(ds.iter_mut()).zip(sc) {
                    *dx /= sd;
                    *ds /= sd;
                }
            }
        }
        out.column(z);
        if let Some(a) = aux.as_deref_mut() {
            let col = |j: usize| slot[j].map(|off| off + c * n);
            if let Some(o) = col(0) {
                a[o..o + n].copy_from_slice(dx);
            }
            if let Some(o) = col(1) {
                for (p, &d) in a[o..o + n].iter_mut().zip(dx.iter()) {
                    *p = -d;
                }
            }
            if let Some(o) = col(2) {
                a[o..o + n].copy_from_slice(ds);
            }
        }
    }
}

/// z ← x − μ per observation, a single x or μ broadcast (each case its own loop).
fn differences<T: Scalar>(z: &mut [T], x: &[T], mu: &[T]) {
    match (x, mu) {
        ([a], [b]) => z.fill(*a - *b),
        ([a], _) => z.iter_mut().zip(mu).for_each(|(z, &b)| *z = *a - b),
        (_, [b]) => z.iter_mut().zip(x).for_each(|(z, &a)| *z = a - *b),
        _ => z
            .iter_mut()
            .zip(x.iter().zip(mu))
            .for_each(|(z, (&a, &b))| *z = a - b),
    }
}

/// Reverse rule: x̄ += ȳ · ∂/∂x per observation (summed over observations for an operand
/// with one value), from the partials cached by the forward pass; ȳ has one entry per
/// column ([`Output::Sum`]) or per observation and column ([`Output::Pointwise`]).
pub(crate) fn backprop<T: Scalar>(
    tape: &Tape<'_, T>,
    k: usize,
    ids: &[NodeId],
    ybar: &[T],
    adj: &mut [Vec<T>],
    mode: Output,
) {
    let args: Vec<Arg<'_, T>> = ids.iter().map(|&i| tape.arg(i)).collect();
    let n = obs_count(&args);
    let s = tape.s;
    // a node that does not depend on w cached its partials for one column
    let cols = if tape.is_batched(NodeId(k)) { s } else { 1 };
    let yb = |i: usize, c: usize| match mode {
        Output::Sum => ybar[c],
        Output::Pointwise => ybar[i + c * n],
    };
    let aux = &tape.aux[k];
    let mut block = 0;
    for (a, id) in args.iter().zip(ids) {
        if a.constant {
            continue;
        }
        let part = &aux[block * n * cols..(block + 1) * n * cols];
        block += 1;
        let xbar = &mut adj[id.0];
        if xbar.is_empty() {
            continue;
        }
        let ycols = if mode == Output::Sum {
            ybar.len()
        } else {
            ybar.len() / n.max(1)
        };
        if n == 1 && cols == s {
            // one observation per column: column c's one term, without a loop per column
            let m = s.min(ycols);
            for ((o, &p), &y) in xbar[..m].iter_mut().zip(&part[..m]).zip(&ybar[..m]) {
                *o += y * p;
            }
            continue;
        }
        for c in 0..s.min(ycols) {
            let pc = &part[(c % cols) * n..(c % cols + 1) * n];
            match (mode, a.size == n) {
                (Output::Sum, true) => {
                    let y = ybar[c];
                    for (o, &p) in xbar[c * n..(c + 1) * n].iter_mut().zip(pc) {
                        *o += y * p;
                    }
                }
                (Output::Pointwise, true) => {
                    let yc = &ybar[c * n..(c + 1) * n];
                    for ((o, &p), &y) in xbar[c * n..(c + 1) * n].iter_mut().zip(pc).zip(yc) {
                        *o += y * p;
                    }
                }
                (_, false) => {
                    let total: T = pc.iter().enumerate().map(|(i, &p)| yb(i, c) * p).sum();
                    xbar[c] += total;
                }
            }
        }
    }
}

/// The tangent of a node that does not depend on w: ẏ_q = Σ_x Σ_i ∂f/∂x_i · ẋ_{i,q}
/// ([`Output::Sum`]) or ẏ_{i,q} = Σ_x ∂f/∂x_i · ẋ_{i,q} ([`Output::Pointwise`], entry
/// i + q·n), with `tangent(id, size, i, q)` the operand's tangent entries.
pub(crate) fn tangent<T: Scalar>(
    tape: &Tape<'_, T>,
    k: usize,
    ids: &[NodeId],
    p: usize,
    mode: Output,
    tangent: impl Fn(NodeId, usize, usize, usize) -> T,
) -> Vec<T> {
    let args: Vec<Arg<'_, T>> = ids.iter().map(|&i| tape.arg(i)).collect();
    let n = obs_count(&args);
    let aux = &tape.aux[k];
    let mut out = vec![T::zero(); if mode == Output::Sum { p } else { n * p }];
    let mut block = 0;
    for (a, &id) in args.iter().zip(ids) {
        if a.constant {
            continue;
        }
        let part = &aux[block * n..(block + 1) * n];
        block += 1;
        for (i, &d) in part.iter().enumerate() {
            let ia = if a.size == 1 { 0 } else { i };
            for q in 0..p {
                let o = if mode == Output::Sum { q } else { i + q * n };
                out[o] += d * tangent(id, a.size, ia, q);
            }
        }
    }
    out
}
