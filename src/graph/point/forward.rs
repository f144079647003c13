//! The forward sweep of the single-point path: one instruction at a time over the value
//! buffer, the rarer operations by the batched evaluator's code at one column.
//!
//! Input: a compiled [`PointEval`], θ, w and the thread's buffers. Output: every node's value
//! in its slot, and the fused likelihoods' partials in the aux buffer for the reverse sweep.
//! The formulas and kernels are those of the batched path at S = 1 (the fused `normal` and
//! `cauchy` sums of [`location_scale`] are `fused::location_scale` with its partials), so the
//! values are equal to the bit.

use super::{Ins, PointEval};
use crate::autodiff::{gemv, Scalar};
use crate::dist::HALF_LOG_2PI;
use crate::graph::eval::{binary, eval_op, fused_output, Arg};
use crate::graph::fused;
use crate::graph::{Fun1, Fun2, Graph, Lik, NodeId, Op, GATHER_ZERO};

impl PointEval {
    /// One instruction of the forward sweep.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn forward_ins(
        &self,
        ins: Ins,
        g: &Graph,
        theta: &[f64],
        w: &[f64],
        vals: &mut [f64],
        aux: &mut [f64],
        tmp: &mut [f64],
    ) {
        match ins {
            Ins::Param { out, w: o, n } => {
                let (o, out, n) = (o as usize, out as usize, n as usize);
                vals[out..out + n].copy_from_slice(&w[o..o + n]);
            }
            Ins::Hyper { out, t, n } => {
                let (t, out, n) = (t as usize, out as usize, n as usize);
                vals[out..out + n].copy_from_slice(&theta[t..t + n]);
            }
            Ins::Add1(o) => vals[o.out as usize] = vals[o.a as usize] + vals[o.b as usize],
            Ins::Sub1(o) => vals[o.out as usize] = vals[o.a as usize] - vals[o.b as usize],
            Ins::Mul1(o) => vals[o.out as usize] = vals[o.a as usize] * vals[o.b as usize],
            Ins::Div1(o) => vals[o.out as usize] = vals[o.a as usize] / vals[o.b as usize],
            Ins::Scalar2 { f, op: o, b_const } => {
                vals[o.out as usize] = binary(f, vals[o.a as usize], vals[o.b as usize], b_const);
            }
            Ins::Copy { src, out, n, .. } => {
                let (src, out, n) = (src as usize, out as usize, n as usize);
                vals.copy_within(src..src + n, out);
            }
            Ins::Chain { from, to, .. } => {
                let links = &self.links[from as usize..to as usize];
                let mut acc = vals[links[0].head as usize];
                for l in links {
                    acc = l.apply(acc, vals);
                    vals[l.out as usize] = acc;
                }
            }
            Ins::Node(k) => self.forward_node(g, k as usize, vals, aux, tmp),
        }
    }

    fn forward_node(&self, g: &Graph, k: usize, vals: &mut [f64], aux: &mut [f64], tmp: &mut [f64]) {
        let node = &g.nodes[k];
        let slot = self.slots[k];
        let n = slot.size as usize;
        let (lower, upper) = vals.split_at_mut(slot.off as usize);
        let out = &mut upper[..n];
        let lower: &[f64] = lower;
        let get = |id: NodeId| self.arg(lower, id);
        match &node.op {
            Op::Unary(f, a) => {
                out.copy_from_slice(get(*a).data);
                f64::map_in_place(*f, out);
            }
            Op::Binary(f, a, b) => {
                let (a, b) = (get(*a), get(*b));
                let f = *f;
                match f {
                    Fun2::Add => zip_into(a, b, out, |x, y| x + y),
                    Fun2::Sub => zip_into(a, b, out, |x, y| x - y),
                    Fun2::Mul => zip_into(a, b, out, |x, y| x * y),
                    Fun2::Div => zip_into(a, b, out, |x, y| x / y),
                    _ => zip_into(a, b, out, |x, y| binary(f, x, y, b.constant)),
                }
            }
            Op::Gather(a, idx) => {
                let a = get(*a).data;
                for (o, &m) in out.iter_mut().zip(idx) {
                    *o = if m == GATHER_ZERO { 0.0 } else { a[m as usize] };
                }
            }
            Op::Pack(ids) => {
                for (o, id) in out.iter_mut().zip(ids) {
                    *o = lower[self.slots[id.0].off as usize];
                }
            }
            Op::Assemble(ids, idx) => {
                for (o, &(j, m)) in out.iter_mut().zip(idx) {
                    *o = lower[self.slots[ids[j as usize].0].off as usize + m as usize];
                }
            }
            Op::Sum(a) => out[0] = get(*a).data.iter().copied().sum(),
            Op::Support {
                x,
                lower: lo,
                upper: hi,
                strict,
            } => {
                let inside = |v: f64| {
                    if *strict {
                        *lo < v && v < *hi
                    } else {
                        *lo <= v && v <= *hi
                    }
                };
                out[0] = if get(*x).data.iter().all(|&v| inside(v)) {
                    0.0
                } else {
                    f64::NEG_INFINITY
                };
            }
            Op::MatMul(a, b) => {
                let (a, b) = (get(*a), get(*b));
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let kk = a.size / m.max(1);
                out.iter_mut().for_each(|x| *x = 0.0);
                // one column: in place, dgemm's arithmetic without packing the matrix
                if !(nc == 1 && gemv::gemv_n(m, kk, a.data, b.data, out)) {
                    f64::gemm(false, false, m, nc, kk, a.data, b.data, out);
                }
            }
            Op::LikSum(lik @ (Lik::Normal | Lik::Cauchy), ids) if slot.batched => {
                let args = [get(ids[0]), get(ids[1]), get(ids[2])];
                let terms: Terms = if *lik == Lik::Normal {
                    normal_terms
                } else {
                    cauchy_terms
                };
                let na = fused::obs_count(&args);
                let blocks = args.iter().filter(|a| !a.constant).count();
                let a0 = self.aux_off[k] as usize;
                let logs = self.log_sigma[k].as_deref();
                out[0] = location_scale(args, terms, logs, &mut aux[a0..a0 + blocks * na], tmp);
            }
            Op::LikSum(lik, ids) | Op::LikPoint(lik, ids) => {
                let args: Vec<Arg<f64>> = ids.iter().map(|&i| get(i)).collect();
                let mut part = Vec::new();
                let v = fused::forward(*lik, &args, 1, Some(&mut part), fused_output(&node.op));
                let a0 = self.aux_off[k] as usize;
                aux[a0..a0 + part.len()].copy_from_slice(&part);
                out.copy_from_slice(&v);
            }
            op => {
                let v = eval_op(op, node.shape, &get, 1);
                out.copy_from_slice(&v);
            }
        }
    }
}

/// op(a, b) entrywise into `out`, broadcasting an operand of one value (`zip_columns` at
/// one column).
#[inline(always)]
fn zip_into(a: Arg<'_, f64>, b: Arg<'_, f64>, out: &mut [f64], op: impl Fn(f64, f64) -> f64) {
    let n = out.len();
    match (a.size == 1, b.size == 1) {
        (false, false) => out
            .iter_mut()
            .zip(a.data[..n].iter().zip(&b.data[..n]))
            .for_each(|(o, (&x, &y))| *o = op(x, y)),
        (true, false) => out
            .iter_mut()
            .zip(&b.data[..n])
            .for_each(|(o, &y)| *o = op(a.data[0], y)),
        (false, true) => out
            .iter_mut()
            .zip(&a.data[..n])
            .for_each(|(o, &x)| *o = op(x, b.data[0])),
        (true, true) => out.iter_mut().for_each(|o| *o = op(a.data[0], b.data[0])),
    }
}

type Terms = fn(z: &mut [f64], log_sigma: f64, inv_sigma: f64, dx: &mut [f64], ds: &mut [f64]);

/// `fused::normal_terms` with partials.
fn normal_terms(z: &mut [f64], ls: f64, inv: f64, dx: &mut [f64], ds: &mut [f64]) {
    let c = -HALF_LOG_2PI - ls;
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        *dx = -(*z * inv);
        *ds = (z2 - 1.0) * inv;
        *z = c + -0.5 * z2;
    }
}

/// `fused::cauchy_terms` with partials.
fn cauchy_terms(z: &mut [f64], ls: f64, inv: f64, dx: &mut [f64], ds: &mut [f64]) {
    let c = -std::f64::consts::PI.ln() - ls;
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        let r = inv / (1.0 + z2);
        *dx = -(*z * r) * 2.0;
        *ds = (z2 - 1.0) * r;
        *z = 1.0 + z2;
    }
    f64::map_in_place(Fun1::Log, z);
    for v in z.iter_mut() {
        *v = c - *v;
    }
}

/// `fused::location_scale` at one column, with the partials, on scratch buffers: the summed
/// log density, the partials of the non-constant operands written to `aux` in operand order.
fn location_scale(
    args: [Arg<'_, f64>; 3],
    terms: Terms,
    log_sigma: Option<&[f64]>,
    aux: &mut [f64],
    tmp: &mut [f64],
) -> f64 {
    let [x, mu, sigma] = args;
    let n = fused::obs_count(&args);
    let sc = sigma.data;
    // every scale > 0 (a NaN fails), without a branch per entry
    if !sc.iter().fold(true, |ok, &v| ok & (v > 0.0)) {
        // the partials are not read: the value is −∞ and so is the gradient's check
        return f64::NEG_INFINITY;
    }
    let (z, rest) = tmp.split_at_mut(n);
    let (dx, rest) = rest.split_at_mut(n);
    let (ds, rest) = rest.split_at_mut(n);
    let ls = &mut rest[..n];
    match (x.data, mu.data) {
        ([a], [b]) => z.fill(*a - *b),
        ([a], m) => z.iter_mut().zip(m).for_each(|(z, &b)| *z = *a - b),
        (xs, [b]) => z.iter_mut().zip(xs).for_each(|(z, &a)| *z = a - *b),
        (xs, m) => z
            .iter_mut()
            .zip(xs.iter().zip(m))
            .for_each(|(z, (&a, &b))| *z = a - b),
    }
    if let [sd] = *sc {
        let ls = match log_sigma {
            Some([l]) => *l,
            _ => sd.ln(),
        };
        let inv = sd.recip();
        z.iter_mut().for_each(|z| *z *= inv);
        terms(z, ls, inv, dx, ds);
    } else {
        z.iter_mut().zip(sc).for_each(|(z, &sd)| *z /= sd);
        terms(z, 0.0, 1.0, dx, ds);
        let logs = match log_sigma {
            Some(logs) => logs,
            None => {
                ls.copy_from_slice(sc);
                f64::map_in_place(Fun1::Log, ls);
                ls
            }
        };
        for (v, &l) in z.iter_mut().zip(logs) {
            *v -= l;
        }
        // only the partials that are kept (each a division per observation)
        if !(x.constant && mu.constant) {
            dx.iter_mut().zip(sc).for_each(|(d, &sd)| *d /= sd);
        }
        if !sigma.constant {
            ds.iter_mut().zip(sc).for_each(|(d, &sd)| *d /= sd);
        }
    }
    let value: f64 = z.iter().copied().sum();
    let mut b = 0;
    for (j, a) in args.iter().enumerate() {
        if a.constant {
            continue;
        }
        let block = &mut aux[b * n..(b + 1) * n];
        b += 1;
        match j {
            0 => block.copy_from_slice(dx),
            1 => block.iter_mut().zip(dx.iter()).for_each(|(p, &d)| *p = -d),
            _ => block.copy_from_slice(ds),
        }
    }
    value
}
