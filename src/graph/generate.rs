//! Quantities generated per posterior draw: the `generated` block, `--predictive`'s
//! replicated data and the pointwise log-likelihoods of LOO.
//!
//! Input: a [`Generated`] graph (same w and θ as the log joint, with random draws
//! [`Op::Rng`](super::Op::Rng) and selections for branches on draws) and a D×S block of draws. Output: per
//! output its values at every draw ([`GeneratedDraws`]), and per distribution the draws whose
//! arguments were invalid (their values are NaN). Draw s uses its own generator, seeded from
//! the run's seed and s alone, and the graph's random nodes draw from it in node order: the
//! values do not depend on how the draws are chunked over threads, and the fit's own random
//! stream is never touched, so adding a `generated` block does not change a fit.

use std::borrow::Cow;
use std::collections::BTreeMap;

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

use super::eval::{forward_random, lift_consts, Tape, CHUNK};
use super::{Graph, NodeId, RngDraw, Shape};
use crate::autodiff::Scalar;
use crate::dist::rng::{self as draws, RngArg};

/// A graph of per-draw outputs.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The graph (over the log joint's w and θ).
    pub graph: Graph,
    /// The outputs in order.
    pub outputs: Vec<Output>,
    /// What the report should say about how the graph was built (a `~` not replicated).
    pub notes: Vec<String>,
}

/// One output of a [`Generated`] graph: a column (or columns) of draws.csv.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The name (`y_rep`).
    pub name: String,
    /// Its shape.
    pub shape: Shape,
    /// The node holding its value.
    pub value: NodeId,
    /// For a pointwise log-likelihood, the observed values it scores, one per observation
    /// (ArviZ's `observed_data`); for a replicate, the data it replicates.
    pub observed: Option<Vec<f64>>,
}

/// The outputs of a [`Generated`] graph at S draws.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedDraws {
    /// Per output, its values: entries × S, column-major entries.
    pub values: Vec<DMatrix<f64>>,
    /// Per distribution (`normal`), how many draws had invalid arguments and the first
    /// message.
    pub failures: BTreeMap<&'static str, (usize, String)>,
}

impl GeneratedDraws {
    /// Every output's entries side by side, one row per draw (draws × Σ output sizes), in
    /// output order: the layout of draws.csv's columns.
    pub fn by_draw(&self) -> DMatrix<f64> {
        let s = self.values.first().map_or(0, DMatrix::ncols);
        let n = self.values.iter().map(DMatrix::nrows).sum();
        let mut out = DMatrix::zeros(s, n);
        let mut c = 0;
        for v in &self.values {
            out.columns_mut(c, v.nrows()).copy_from(&v.transpose());
            c += v.nrows();
        }
        out
    }

    /// One note per distribution whose `_rng` failed at some draws.
    pub fn notes(&self) -> Vec<String> {
        self.failures
            .iter()
            .map(|(d, (n, msg))| {
                format!(
                    "{d}_rng failed at {n} draw{} (its values are NaN there): {msg}",
                    plural(*n)
                )
            })
            .collect()
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The random generators of a chunk of draws, one per column, and the failures seen.
pub struct Columns {
    rngs: Vec<StdRng>,
    failures: BTreeMap<&'static str, (usize, String)>,
}

impl Columns {
    /// The generators of draws `first .. first + n` for the stream `seed`.
    pub fn new(seed: u64, first: usize, n: usize) -> Self {
        Columns {
            rngs: (first..first + n)
                .map(|s| StdRng::seed_from_u64(column_seed(seed, s)))
                .collect(),
            failures: BTreeMap::new(),
        }
    }
}

/// The seed of draw `s`'s generator: SplitMix64 of the stream seed and s, so neighbouring
/// draws get unrelated generators.
fn column_seed(seed: u64, s: usize) -> u64 {
    let mut z = seed ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generated stream's seed for a run seeded with `seed`: apart from the fit's stream.
pub fn stream_seed(seed: u64, purpose: &str) -> u64 {
    purpose.bytes().fold(column_seed(seed, 0x0067_656e), |h, b| {
        column_seed(h, usize::from(b))
    })
}

/// The value of a random node at `cols` columns: each column draws with its own generator;
/// invalid arguments give NaN and are counted. Without generators (a graph with random
/// draws evaluated for values or derivatives, which lowering never asks for) the values are
/// NaN.
pub(crate) fn draw_node<T: Scalar>(
    tape: &Tape<'_, T>,
    r: &RngDraw,
    shape: Shape,
    cols: usize,
    columns: Option<&mut Columns>,
) -> Vec<T> {
    let n = shape.size();
    let mut out = vec![f64::NAN; n * cols];
    if let Some(columns) = columns {
        let args: Vec<(Vec<f64>, usize, usize, bool)> = r
            .ids
            .iter()
            .map(|&id| {
                let a = tape.arg(id);
                let s = tape.graph.nodes[id.0].shape;
                let vals: Vec<f64> = a.data.iter().map(|v| v.real()).collect();
                (vals, s.rows(), s.cols(), a.batched)
            })
            .collect();
        let nargs = r.args().len();
        for (c, col) in out.chunks_exact_mut(n).enumerate() {
            let at = |k: usize| {
                let (v, rows, cs, batched) = &args[k];
                let size = rows * cs;
                let values = if *batched {
                    &v[c * size..(c + 1) * size]
                } else {
                    &v[..]
                };
                RngArg {
                    values,
                    rows: *rows,
                    cols: *cs,
                }
            };
            let a: Vec<RngArg> = (0..nargs).map(at).collect();
            let rng = &mut columns.rngs[c];
            let mut draw_into = |out: &mut [f64]| {
                if r.lower || r.upper {
                    let lo = r.lower.then(|| at(nargs));
                    let hi = r.upper.then(|| at(r.ids.len() - 1));
                    draws::draw_truncated(r.dist, &a, lo, hi, out, rng)
                } else {
                    draws::draw(r.dist, &a, out, rng)
                }
            };
            let result = if r.each == n {
                draw_into(col)
            } else {
                repeated(col, shape, r.each, &mut draw_into)
            };
            if let Err(msg) = result {
                col.fill(f64::NAN);
                let e = columns.failures.entry(r.dist).or_insert((0, msg));
                e.0 += 1;
            }
        }
    }
    out.into_iter().map(T::from).collect()
}

/// Fill `col` (a value of `shape`) by calls that draw `each` entries: the rows of a
/// matrix of `each` columns, or consecutive entries.
fn repeated(
    col: &mut [f64],
    shape: Shape,
    each: usize,
    draw: &mut dyn FnMut(&mut [f64]) -> Result<(), String>,
) -> Result<(), String> {
    let mut one = vec![0.0; each];
    let rows = shape.rows();
    let by_row = matches!(shape, Shape::Matrix(_, k) if k == each);
    for i in 0..col.len() / each {
        draw(&mut one)?;
        for (j, &v) in one.iter().enumerate() {
            let at = if by_row { i + j * rows } else { i * each + j };
            col[at] = v;
        }
    }
    Ok(())
}

/// Evaluate the outputs of `gen` at the columns of `w` (D×S) and θ, drawing with the
/// stream `seed`; chunks of draws run in parallel and are merged in draw order.
pub fn eval_generated(gen: &Generated, theta: &[f64], w: &DMatrix<f64>, seed: u64) -> GeneratedDraws {
    let g = &gen.graph;
    let s = w.ncols();
    let consts: Vec<Cow<'_, [f64]>> = lift_consts(g);
    let starts: Vec<usize> = (0..s).step_by(CHUNK).collect();
    let chunks: Vec<(Vec<DMatrix<f64>>, Columns)> = starts
        .par_iter()
        .map(|&c0| {
            let cols = CHUNK.min(s - c0);
            let block = w.columns(c0, cols).into_owned();
            let mut columns = Columns::new(seed, c0, cols);
            let tape = forward_random(g, &consts, theta, block.as_slice(), cols, &mut columns);
            let values = gen
                .outputs
                .iter()
                .map(|o| {
                    let n = o.shape.size();
                    DMatrix::from_fn(n, cols, |i, c| tape.value(o.value, i, c))
                })
                .collect();
            (values, columns)
        })
        .collect();
    let mut values: Vec<DMatrix<f64>> = gen
        .outputs
        .iter()
        .map(|o| DMatrix::zeros(o.shape.size(), s))
        .collect();
    let mut failures: BTreeMap<&'static str, (usize, String)> = BTreeMap::new();
    for (&c0, (vals, columns)) in starts.iter().zip(chunks) {
        for (all, v) in values.iter_mut().zip(vals) {
            all.columns_mut(c0, v.ncols()).copy_from(&v);
        }
        for (d, (n, msg)) in columns.failures {
            failures.entry(d).or_insert((0, msg)).0 += n;
        }
    }
    GeneratedDraws { values, failures }
}
