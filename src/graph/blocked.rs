//! Batched evaluation by blocks of data rows, for log joints that are sums over many rows.
//!
//! Input: a graph with a [`RowSplit`] and at least [`BLOCKED_FROM`] rows. Output: the same
//! values and derivatives as the whole graph's (to rounding: the row sums are added block by
//! block), with buffers of [`BLOCK_ROWS`] rows × a chunk of columns instead of N × a chunk,
//! so that a batched evaluation at N = 10⁶ rows stays in cache and its memory does not grow
//! with N. Each block's graph is cut from the whole when it is evaluated (its rows of the
//! data copied: O(rows × columns of data), small beside the block's work at a batch of
//! columns). Blocks run in parallel, in groups whose results are added in row order, so the
//! sums do not depend on the thread count. The blocks' graphs are cut once and kept: the data
//! are then held twice (once in the whole graph, which reports and `predict` read), but a
//! single point's gradient, which L-BFGS and NUTS call, costs no copying.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::rows::RowSplit;
use super::Graph;
use crate::density::Evaluated;

/// Row counts from which batched evaluations go by blocks of rows (and below which every
/// result is the whole graph's, bit for bit).
pub const BLOCKED_FROM: usize = 100_000;

/// Rows per block: a block's vector at 8 batch columns is 32 768 entries (256 KiB).
pub const BLOCK_ROWS: usize = 4096;

/// Blocks evaluated in parallel before their results are added.
const GROUP: usize = 16;

/// A log joint's global terms and its row split, ready for evaluation by blocks.
#[derive(Debug, Clone)]
pub struct Blocked {
    /// The split over the data rows.
    pub split: RowSplit,
    /// The graph of the global terms.
    pub global: Graph,
    /// The graphs of the row sums over each block of [`BLOCK_ROWS`] rows, in row order;
    /// none below [`BLOCKED_FROM`] rows (the whole graph is evaluated then).
    pub blocks: Vec<Graph>,
}

impl Blocked {
    /// The split of `g` when it is a sum over rows, with its blocks when there are at least
    /// [`BLOCKED_FROM`] rows.
    pub fn of(g: &Graph) -> Option<Blocked> {
        let split = RowSplit::of(g).ok().flatten()?;
        let starts: Vec<usize> = if split.n < BLOCKED_FROM {
            Vec::new()
        } else {
            (0..split.n).step_by(BLOCK_ROWS).collect()
        };
        let blocks = starts
            .par_iter()
            .map(|&r0| {
                let rows: Vec<u32> = (r0..(r0 + BLOCK_ROWS).min(split.n)).map(|r| r as u32).collect();
                split.slice(g, &rows)
            })
            .collect();
        Some(Blocked {
            global: split.global(g),
            split,
            blocks,
        })
    }

    /// `f` of the global graph plus `f` of every block's graph, added in row order.
    pub fn sum<R: Send>(&self, f: impl Fn(&Graph) -> R + Sync, add: impl Fn(&mut R, R)) -> R {
        let mut total = f(&self.global);
        for group in self.blocks.chunks(GROUP) {
            let parts: Vec<R> = group.par_iter().map(&f).collect();
            for p in parts {
                add(&mut total, p);
            }
        }
        total
    }
}

/// Add one evaluation's values and gradients into another's.
pub fn add_evaluated(total: &mut Evaluated, part: Evaluated) {
    total.values += part.values;
    add_opt(&mut total.grad_w, part.grad_w);
    add_opt(&mut total.grad_theta, part.grad_theta);
}

fn add_opt(total: &mut Option<DMatrix<f64>>, part: Option<DMatrix<f64>>) {
    if let (Some(t), Some(p)) = (total.as_mut(), part) {
        *t += p;
    }
}

/// Columns whose value is not finite get −∞ and a zero gradient, as a whole-graph
/// evaluation gives them.
pub fn clean_columns(e: &mut Evaluated) {
    for c in 0..e.values.len() {
        let bad = !e.values[c].is_finite()
            || e.grad_w
                .as_ref()
                .is_some_and(|g| g.column(c).iter().any(|x| !x.is_finite()))
            || e.grad_theta
                .as_ref()
                .is_some_and(|g| g.ncols() == e.values.len() && g.column(c).iter().any(|x| !x.is_finite()));
        if bad {
            e.values[c] = f64::NEG_INFINITY;
            if let Some(g) = e.grad_w.as_mut() {
                g.column_mut(c).fill(0.0);
            }
            if let Some(g) = e.grad_theta.as_mut().filter(|g| g.ncols() == e.values.len()) {
                g.column_mut(c).fill(0.0);
            }
        }
    }
}

/// A vector sum for [`Blocked::sum`].
pub fn add_vector(total: &mut DVector<f64>, part: DVector<f64>) {
    *total += part;
}

/// A matrix sum for [`Blocked::sum`].
pub fn add_matrix(total: &mut DMatrix<f64>, part: DMatrix<f64>) {
    *total += part;
}
