//! Fused likelihood nodes ([`Op::LikSum`](super::Op::LikSum)): the summed log density of
//! `bernoulli_logit`, `poisson_log` and `normal` (one σ) in one pass over the observations.
//!
//! Input: the operands of a [`Lik`] node (the outcome first), each with one entry per
//! observation or one value for all. Output: the sum per batch column and, in the same pass,
//! each observation's partial derivative with respect to every operand that is not a
//! constant (the "aux" blocks of the tape, n × S each), so the reverse sweep is one
//! multiply-add per entry. Everything is generic over [`Scalar`], so forward-over-reverse H·v
//! (`Dual64`) and the all-forward reference (`HyperDual64`) run the same code; f64 takes the
//! fast log σ of [`Scalar::log_sigmoid_d`].

use super::eval::{Arg, Tape};
use super::{Lik, NodeId};
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

/// The summed log density at each of `s` columns; with `aux`, also the per-observation
/// partials (one n × s block per non-constant operand, in operand order).
pub(crate) fn forward<T: Scalar>(
    lik: Lik,
    args: &[Arg<'_, T>],
    s: usize,
    aux: Option<&mut Vec<T>>,
) -> Vec<T> {
    let n = obs_count(args);
    let blocks = args.iter().filter(|a| !a.constant).count();
    let mut aux = aux.map(|v| {
        v.clear();
        v.resize(blocks * n * s, T::zero());
        v.as_mut_slice()
    });
    match lik {
        Lik::BernoulliLogit => {
            let [y, eta] = two(args);
            bernoulli_logit(y, eta, n, s, aux.as_deref_mut())
        }
        Lik::PoissonLog => {
            let [k, alpha] = two(args);
            let parts = aux.as_deref_mut().filter(|_| !alpha.constant);
            run(k, alpha, n, s, parts, |k, a| {
                let e = a.exp();
                (k * a - e, k - e)
            })
        }
        Lik::Normal => normal(args, n, s, aux),
    }
}

fn two<'a, 'b, T>(args: &'b [Arg<'a, T>]) -> [Arg<'a, T>; 2]
where
    Arg<'a, T>: Copy,
{
    [args[0], args[1]]
}

/// Σ f(y, x) over the observations of each column for a constant outcome y, writing ∂f/∂x
/// to `parts` (n × s) when given.
fn run<T: Scalar>(
    y: Arg<'_, T>,
    x: Arg<'_, T>,
    n: usize,
    s: usize,
    mut parts: Option<&mut [T]>,
    f: impl Fn(T, T) -> (T, T),
) -> Vec<T> {
    let mut out = Vec::with_capacity(s);
    for c in 0..s {
        let (yc, xc) = (y.col(c), x.col(c));
        let mut sum = T::zero();
        match parts.as_deref_mut() {
            Some(p) => {
                let pc = &mut p[c * n..(c + 1) * n];
                for (i, d) in pc.iter_mut().enumerate() {
                    let (v, dv) = f(pick(yc, i), pick(xc, i));
                    sum += v;
                    *d = dv;
                }
            }
            None => {
                for i in 0..n {
                    sum += f(pick(yc, i), pick(xc, i)).0;
                }
            }
        }
        out.push(sum);
    }
    out
}

/// log σ((2y − 1)η) and its η-partial (2y − 1) σ(−(2y − 1)η).
fn bernoulli_logit<T: Scalar>(
    y: Arg<'_, T>,
    eta: Arg<'_, T>,
    n: usize,
    s: usize,
    aux: Option<&mut [T]>,
) -> Vec<T> {
    let mut parts = aux.filter(|_| !eta.constant);
    if y.size == n && eta.size == n {
        return (0..s)
            .map(|c| {
                let d = parts.as_deref_mut().map(|p| &mut p[c * n..(c + 1) * n]);
                T::bernoulli_logit_col(y.col(c), eta.col(c), d)
            })
            .collect();
    }
    run(y, eta, n, s, parts, |y, e| {
        if y.real() > 0.5 {
            e.log_sigmoid_d()
        } else {
            let (v, d) = (-e).log_sigmoid_d();
            (v, -d)
        }
    })
}

/// −½z² − log σ − ½ log 2π with z = (x − μ)/σ; partials −z/σ, z/σ, (z² − 1)/σ.
fn normal<T: Scalar>(args: &[Arg<'_, T>], n: usize, s: usize, mut aux: Option<&mut [T]>) -> Vec<T> {
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
    let (half, c0) = (T::from(-0.5), T::from(-HALF_LOG_2PI));
    let mut out = Vec::with_capacity(s);
    for c in 0..s {
        let sd = sigma.at(0, c);
        // σ ≤ 0 or NaN: outside the support, as the unfused `support` check
        if sd.real().partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            out.push(T::from(f64::NEG_INFINITY));
            continue;
        }
        let (ls, inv) = (sd.ln(), sd.recip());
        let (xc, mc) = (x.col(c), mu.col(c));
        let mut sum = T::zero();
        for i in 0..n {
            let z = (pick(xc, i) - pick(mc, i)) * inv;
            sum += (c0 + half * (z * z)) - ls;
            if let Some(a) = aux.as_deref_mut() {
                let dz = z * inv;
                let partial = [-dz, dz, (z * z - T::one()) * inv];
                for (j, p) in partial.into_iter().enumerate() {
                    if let Some(off) = slot[j] {
                        a[off + i + c * n] = p;
                    }
                }
            }
        }
        out.push(sum);
    }
    out
}

/// Reverse rule: x̄ += ȳ · ∂/∂x per observation (summed over observations for an operand
/// with one value), from the partials cached by the forward pass.
pub(crate) fn backprop<T: Scalar>(
    tape: &Tape<'_, T>,
    k: usize,
    ids: &[NodeId],
    ybar: &[T],
    adj: &mut [Vec<T>],
) {
    let args: Vec<Arg<'_, T>> = ids.iter().map(|&i| tape.arg(i)).collect();
    let n = obs_count(&args);
    let s = tape.s;
    // a node that does not depend on w cached its partials for one column
    let cols = if tape.is_batched(NodeId(k)) { s } else { 1 };
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
        for (c, &yb) in ybar.iter().enumerate().take(s) {
            let pc = &part[(c % cols) * n..(c % cols + 1) * n];
            if a.size == n {
                for (o, &p) in xbar[c * n..(c + 1) * n].iter_mut().zip(pc) {
                    *o += yb * p;
                }
            } else {
                let total: T = pc.iter().copied().sum();
                xbar[c] += yb * total;
            }
        }
    }
}

/// The tangent of a node that does not depend on w: ẏ_q = Σ_x Σ_i ∂f/∂x_i · ẋ_{i,q}, with
/// `tangent(id, i, q)` the operand's tangent entries.
pub(crate) fn tangent<T: Scalar>(
    tape: &Tape<'_, T>,
    k: usize,
    ids: &[NodeId],
    p: usize,
    tangent: impl Fn(NodeId, usize, usize, usize) -> T,
) -> Vec<T> {
    let args: Vec<Arg<'_, T>> = ids.iter().map(|&i| tape.arg(i)).collect();
    let n = obs_count(&args);
    let aux = &tape.aux[k];
    let mut out = vec![T::zero(); p];
    let mut block = 0;
    for (a, &id) in args.iter().zip(ids) {
        if a.constant {
            continue;
        }
        let part = &aux[block * n..(block + 1) * n];
        block += 1;
        for (i, &d) in part.iter().enumerate() {
            let ia = if a.size == 1 { 0 } else { i };
            for (q, o) in out.iter_mut().enumerate() {
                *o += d * tangent(id, a.size, ia, q);
            }
        }
    }
    out
}
