//! `predict` as a streaming reduction over posterior draws.
//!
//! Input: the `predict` graph (same w and θ as the log joint, pointwise outputs registered)
//! and a D×S′ block of draws. Output: [`PredictSums`], everything the report needs and
//! nothing of size test points × draws: per draw the summed held-out log-likelihood (for
//! the joint test LPD, eq. 13 of the MVI paper), per test point a running log-sum-exp over
//! the draws (the pointwise lppd) and the sum of the predictive quantity (probabilities or
//! locations, for error rate and MSE). Blocks of [`CHUNK`] draws are evaluated and reduced
//! in parallel and merged in draw order, so the result does not depend on the thread count.

use std::borrow::Cow;

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::eval::{clean, forward_random, lift_consts, Tape, CHUNK};
use super::{Graph, NodeId, Observed, Op};
use crate::autodiff::vmath;

/// log Σ_s exp(x_is) per row i, accumulated over blocks of columns (draws): a running
/// maximum and a sum scaled by it per row.
#[derive(Debug, Clone, Default)]
pub struct RowLogSumExp {
    max: Vec<f64>,
    sum: Vec<f64>,
}

impl RowLogSumExp {
    /// Number of rows seen.
    pub fn rows(&self) -> usize {
        self.max.len()
    }

    /// Fold in a rows × cols block (column-major).
    pub fn add_block(&mut self, x: &[f64], rows: usize) {
        if rows == 0 {
            return;
        }
        if self.max.is_empty() {
            self.max = vec![f64::NEG_INFINITY; rows];
            self.sum = vec![0.0; rows];
        }
        let mut block = Self {
            max: self.max.clone(),
            sum: vec![0.0; rows],
        };
        for col in x.chunks_exact(rows) {
            for (m, &v) in block.max.iter_mut().zip(col) {
                *m = m.max(v);
            }
        }
        for col in x.chunks_exact(rows) {
            vmath::add_exp_shifted(col, &block.max, &mut block.sum);
        }
        self.merge(&block);
    }

    /// Combine with the sums of other columns of the same rows.
    pub fn merge(&mut self, other: &Self) {
        if other.max.is_empty() {
            return;
        }
        if self.max.is_empty() {
            *self = other.clone();
            return;
        }
        for (((m, s), &mo), &so) in self
            .max
            .iter_mut()
            .zip(&mut self.sum)
            .zip(&other.max)
            .zip(&other.sum)
        {
            let top = m.max(mo);
            if top.is_finite() {
                let scale = |m: f64, s: f64| if s > 0.0 { s * (m - top).exp() } else { s };
                *s = scale(*m, *s) + scale(mo, so);
            } else {
                *s += so;
            }
            *m = top;
        }
    }

    /// log Σ exp per row (−∞ for a row with no finite value; NaN when a NaN was seen).
    pub fn values(&self) -> Vec<f64> {
        self.max
            .iter()
            .zip(&self.sum)
            .map(|(m, s)| if m.is_finite() { m + s.ln() } else { *m })
            .collect()
    }
}

/// The `predict` outputs reduced over a set of draws.
#[derive(Debug, Clone, Default)]
pub struct PredictSums {
    /// Per draw, in draw order: the held-out log-likelihood summed over all test points.
    pub joint: Vec<f64>,
    /// Per test point (all pointwise outputs stacked): log Σ over draws of its likelihood.
    pub pointwise: RowLogSumExp,
    /// Per pointwise output with a quantity: its name and the quantity (probability, class
    /// probabilities or location) summed over the draws, flattened column-major.
    pub quantities: Vec<(String, Vec<f64>)>,
    /// The observed outcomes of each pointwise output with a quantity, in the same order.
    pub observed: Vec<Observed>,
}

impl PredictSums {
    /// Number of draws folded in.
    pub fn draws(&self) -> usize {
        self.joint.len()
    }

    /// Fold in the sums of later draws.
    pub fn merge(&mut self, other: Self) {
        if self.joint.is_empty() && self.quantities.is_empty() {
            *self = other;
            return;
        }
        self.joint.extend(other.joint);
        self.pointwise.merge(&other.pointwise);
        for ((_, acc), (_, v)) in self.quantities.iter_mut().zip(other.quantities) {
            for (a, x) in acc.iter_mut().zip(v) {
                *a += x;
            }
        }
    }

    /// The quantities averaged over the draws.
    pub fn quantity_means(&self) -> Vec<(String, Vec<f64>)> {
        let n = self.draws().max(1) as f64;
        self.quantities
            .iter()
            .map(|(name, v)| (name.clone(), v.iter().map(|x| x / n).collect()))
            .collect()
    }
}

/// The `predict` sums of graph `g` at the draws W (D×S′). Its random draws (`_rng` in
/// `predict`) come from the stream `seed`, draw j of W being draw `first + j` of the stream
/// ([`super::generate::Columns`]).
pub fn predict_sums(g: &Graph, theta: &[f64], w: &DMatrix<f64>, seed: u64, first: usize) -> PredictSums {
    let consts = lift_consts::<f64>(g);
    let (d, s) = (g.dim, w.ncols());
    let starts: Vec<usize> = (0..s).step_by(CHUNK).collect();
    let parts: Vec<PredictSums> = starts
        .par_iter()
        .map(|&c0| {
            let c1 = (c0 + CHUNK).min(s);
            let cols = c1 - c0;
            let mut draws = super::generate::Columns::new(seed, first + c0, cols);
            let mut tape = forward_random(g, &consts, theta, &w.as_slice()[c0 * d..c1 * d], cols, &mut draws);
            // the log-likelihoods are moved out of the tape (they are reduced in place)
            let lls: Vec<(usize, Vec<f64>)> = g
                .pointwise
                .iter()
                .map(|p| {
                    let id = p.loglik;
                    let batched = tape.is_batched(id) && !matches!(g.nodes[id.0].op, Op::Const(_));
                    let v = if batched {
                        std::mem::take(&mut tape.vals[id.0]).into_owned()
                    } else {
                        columns(&tape, id, cols).into_owned()
                    };
                    (g.shape(id).size(), v)
                })
                .collect();
            reduce_block(g, cols, lls, |id| columns(&tape, id, cols))
        })
        .collect();
    let mut out = PredictSums::default();
    for p in parts {
        out.merge(p);
    }
    out
}

/// Node `id`'s values at `cols` columns (size × cols): borrowed when it has a batch
/// dimension, else its one value repeated.
fn columns<'t>(tape: &'t Tape<'_, f64>, id: NodeId, cols: usize) -> Cow<'t, [f64]> {
    let a = tape.arg(id);
    if a.batched {
        Cow::Borrowed(a.data)
    } else {
        Cow::Owned((0..cols).flat_map(|c| a.col(c).iter().copied()).collect())
    }
}

/// The sums over one block of `cols` draws, given each node's values (size × cols).
fn reduce_block<'v>(
    g: &Graph,
    cols: usize,
    lls: Vec<(usize, Vec<f64>)>,
    value: impl Fn(NodeId) -> Cow<'v, [f64]>,
) -> PredictSums {
    // the pointwise log-likelihoods of all outputs stacked per column, cleaned (NaN and +∞,
    // outside the support, are −∞); one output is used as it is
    let rows: usize = lls.iter().map(|(n, _)| n).sum();
    let mut stacked = if lls.len() == 1 {
        lls.into_iter().next().map(|(_, v)| v).unwrap_or_default()
    } else {
        let mut stacked = Vec::with_capacity(rows * cols);
        for c in 0..cols {
            for (n, v) in &lls {
                stacked.extend_from_slice(&v[c * n..(c + 1) * n]);
            }
        }
        stacked
    };
    for v in &mut stacked {
        *v = clean(*v);
    }
    // no held-out points (`y_test` empty): each draw's held-out log-likelihood is 0
    let joint = if rows == 0 {
        vec![0.0; cols]
    } else {
        stacked.chunks_exact(rows).map(vmath::sum_lanes).collect()
    };
    let mut pointwise = RowLogSumExp::default();
    pointwise.add_block(&stacked, rows);
    let mut quantities = Vec::new();
    let mut observed = Vec::new();
    for p in &g.pointwise {
        if let Some(q) = p.quantity {
            let n = g.shape(q).size();
            let mut sum = vec![0.0; n];
            for col in value(q).chunks_exact(n.max(1)) {
                for (a, x) in sum.iter_mut().zip(col) {
                    *a += x;
                }
            }
            quantities.push((p.name.clone(), sum));
            observed.push(p.observed.clone());
        }
    }
    PredictSums {
        joint,
        pointwise,
        quantities,
        observed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posterior::log_sum_exp;

    #[test]
    fn row_log_sum_exp_over_blocks_equals_the_direct_sum() {
        let x = DMatrix::from_fn(3, 7, |i, j| -((i * 7 + j) as f64).sin() * 40.0 - i as f64 * 300.0);
        let mut acc = RowLogSumExp::default();
        for (c0, n) in [(0, 2), (2, 4), (6, 1)] {
            acc.add_block(x.columns(c0, n).into_owned().as_slice(), 3);
        }
        for (i, got) in acc.values().iter().enumerate() {
            let row: Vec<f64> = x.row(i).iter().copied().collect();
            let want = log_sum_exp(&row);
            assert!(
                (got - want).abs() < 1e-12 * want.abs().max(1.0),
                "row {i}: {got} vs {want}"
            );
        }
        assert_eq!(acc.rows(), 3);
    }

    #[test]
    fn merging_partial_sums_equals_one_pass() {
        let x = DMatrix::from_fn(4, 9, |i, j| ((i + 3 * j) as f64).cos() * 30.0 - 5.0 * i as f64);
        let mut one = RowLogSumExp::default();
        one.add_block(x.as_slice(), 4);
        let (mut a, mut b) = (RowLogSumExp::default(), RowLogSumExp::default());
        a.add_block(x.columns(0, 5).into_owned().as_slice(), 4);
        b.add_block(x.columns(5, 4).into_owned().as_slice(), 4);
        a.merge(&b);
        for (u, v) in one.values().iter().zip(a.values()) {
            assert!((u - v).abs() < 1e-12 * u.abs().max(1.0), "{u} vs {v}");
        }
    }

    #[test]
    fn row_log_sum_exp_keeps_minus_infinity_for_impossible_rows() {
        let x = [f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY, f64::NEG_INFINITY];
        let mut acc = RowLogSumExp::default();
        acc.add_block(&x, 2);
        let v = acc.values();
        assert!(v[0].is_infinite() && v[0] < 0.0, "{}", v[0]);
        assert!(v[1].abs() < 1e-15);
    }
}
