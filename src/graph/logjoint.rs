//! [`LogJoint`]: a built graph with its parameter and hyperparameter layout, implementing
//! [`LogDensity`] (batched values and gradients in parallel chunks, Hessians and H·v by
//! num-dual), plus constrained values for reports and the `predict` evaluator.
//!
//! Input: graphs built by lowering (the log joint, and optionally the `predict` graph over the
//! same w and θ with registered pointwise outputs). Output: what inference methods and reports
//! need; values outside the support come out as −∞ with a zero gradient, never NaN.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use std::sync::OnceLock;

use super::blocked::{add_evaluated, add_matrix, add_vector, clean_columns, Blocked};
use super::eval::{ancestors, forward_needed, lift_consts, CHUNK};
use super::point::PointEval;
use super::predict::PredictSums;
use super::{Constraint, Graph, NodeId, Shape};
use crate::autodiff::{dual, reverse};
use crate::density::{Evaluated, LogDensity, Want};

/// A declared `param` or `hyper` (or a reported `let`): where it sits and its value node.
#[derive(Debug, Clone)]
pub struct ParamInfo {
    /// The declared name.
    pub name: String,
    /// First coordinate in w (or θ); unused for a `let`.
    pub offset: usize,
    /// Its shape.
    pub shape: Shape,
    /// Its bounds.
    pub constraint: Constraint,
    /// Its transform when it is not given by constant bounds: a constrained type (whose
    /// value has other entries than its coordinates) or bounds that depend on other values.
    pub structure: Option<Structure>,
    /// The node holding its constrained value.
    pub value: NodeId,
}

/// A declared value's transform beyond constant bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structure {
    /// Bounds that depend on hypers or earlier params: which of `lower=` and `upper=` it has.
    Dependent {
        /// Whether it has a lower bound.
        lower: bool,
        /// Whether it has an upper bound.
        upper: bool,
    },
    /// A constrained type (`simplex[K]`, …).
    Type(super::transform::TypeKind),
    /// Stan's affine transform x = offset + multiplier · u (`<offset=…, multiplier=…>`).
    Affine,
}

impl ParamInfo {
    /// The number of its coordinates in w (or θ): the value's entries, or a constrained
    /// type's free coordinates.
    pub fn free_len(&self) -> usize {
        match self.structure {
            Some(Structure::Type(k)) => super::transform::entry(k).free_of(self.shape),
            _ => self.shape.size(),
        }
    }

    /// Whether each value entry is its own coordinate of w, unchanged (no constraint).
    pub fn is_identity(&self) -> bool {
        self.constraint.is_none() && self.structure.is_none()
    }
}

/// The log joint of one model with its data: graph, layout, and the `predict` graph.
#[derive(Debug, Clone)]
pub struct LogJoint {
    /// The log-joint graph.
    pub graph: Graph,
    /// Declared parameters, in declaration order (their coordinates tile w).
    pub params: Vec<ParamInfo>,
    /// Declared hyperparameters (their coordinates tile θ).
    pub hypers: Vec<ParamInfo>,
    /// Top-level `let`s that depend on parameters, reported like parameters.
    pub reported: Vec<ParamInfo>,
    /// θ's initial value on the unconstrained scale.
    pub theta0: DVector<f64>,
    /// The `predict` graph (same w and θ), with pointwise outputs registered.
    pub predict: Option<Graph>,
    /// The `generated` block's graph (same w and θ), its top-level `let`s the outputs.
    pub generated: Option<super::generate::Generated>,
    /// Replicated data for `--predictive` (`y_rep` for each observed `~`), built on request
    /// ([`super::lower::lower_observed`]).
    pub replicates: Option<super::generate::Generated>,
    /// The pointwise log-likelihood of every `~` on data, for LOO (`loo = true`), built on
    /// request.
    pub log_lik: Option<super::generate::Generated>,
    /// The log-joint graph compiled for single-point value + gradient, on first use.
    pub point: PointCache,
    /// The graph's split into global terms and blocks of data rows, when it is a sum over
    /// many rows ([`Blocked`]), found on first use.
    pub blocked: BlockedCache,
}

/// A [`Blocked`] form of a log joint's graph, found on first use. A clone starts empty.
#[derive(Default)]
pub struct BlockedCache(OnceLock<Option<Blocked>>);

impl Clone for BlockedCache {
    fn clone(&self) -> Self {
        BlockedCache::default()
    }
}

impl std::fmt::Debug for BlockedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlockedCache")
    }
}

/// A [`PointEval`] of a log joint's graph, compiled on first use. A clone starts empty (so a
/// cloned model whose graph is then changed compiles its own).
#[derive(Default)]
pub struct PointCache(OnceLock<Option<PointEval>>);

impl Clone for PointCache {
    fn clone(&self) -> Self {
        PointCache::default()
    }
}

impl std::fmt::Debug for PointCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PointCache")
    }
}

impl PointCache {
    /// The compiled form of `g`, compiled now if it is not yet; `None` when the graph has an
    /// operation the single-point path does not take, or changed since it was compiled.
    pub fn get(&self, g: &Graph) -> Option<&PointEval> {
        self.0
            .get_or_init(|| PointEval::compile(g))
            .as_ref()
            .filter(|p| p.fits(g))
    }
}

/// Coordinate names of one declared value: `name`, `name.i` or `name.i.j`; the free
/// coordinates of a constrained type are `name.free.i`.
fn names_of(p: &ParamInfo) -> Vec<String> {
    if let Some(Structure::Type(_)) = p.structure {
        return (1..=p.free_len())
            .map(|i| format!("{}.free.{i}", p.name))
            .collect();
    }
    match p.shape {
        Shape::Scalar => vec![p.name.clone()],
        Shape::Vector(n) => (1..=n).map(|i| format!("{}.{i}", p.name)).collect(),
        Shape::Matrix(r, c) => (1..=c)
            .flat_map(|j| (1..=r).map(move |i| (i, j)))
            .map(|(i, j)| format!("{}.{i}.{j}", p.name))
            .collect(),
    }
}

impl LogJoint {
    /// A log joint from a graph and its layout; θ₀ defaults to zeros.
    pub fn new(graph: Graph, params: Vec<ParamInfo>, hypers: Vec<ParamInfo>) -> LogJoint {
        let p = graph.theta_dim;
        LogJoint {
            graph,
            params,
            hypers,
            reported: Vec::new(),
            theta0: DVector::zeros(p),
            predict: None,
            generated: None,
            replicates: None,
            log_lik: None,
            point: PointCache::default(),
            blocked: BlockedCache::default(),
        }
    }

    /// The graph's split into terms computed once and a sum over its data rows, when it is
    /// one and the parts add up to the whole graph's value at the initial point (checked
    /// once: a lowering that folded a row count into a constant would not).
    pub fn row_split(&self) -> Option<&Blocked> {
        self.blocked
            .0
            .get_or_init(|| {
                let b = Blocked::of(&self.graph)?;
                let w = DMatrix::from_column_slice(self.graph.dim, 1, self.initial_point().as_slice());
                let value = |g: &Graph| eval_graph(g, &self.theta0, &w, Want::VALUE).values[0];
                let whole = value(&self.graph);
                let rows: Vec<u32> = (0..b.split.n as u32).collect();
                let parts = value(&b.global) + value(&b.split.slice(&self.graph, &rows));
                let agree = (whole - parts).abs() <= 1e-9 * (1.0 + whole.abs());
                agree.then_some(b)
            })
            .as_ref()
    }

    /// The graph by blocks of data rows, when it is a sum over at least
    /// [`super::blocked::BLOCKED_FROM`] rows.
    pub fn blocked(&self) -> Option<&Blocked> {
        self.row_split().filter(|b| !b.blocks.is_empty())
    }

    /// Constrained values of every parameter and reported `let` at the columns of W:
    /// (name, entries × S) pairs, in declaration order.
    pub fn constrain(&self, theta: &DVector<f64>, w: &DMatrix<f64>) -> Vec<(String, DMatrix<f64>)> {
        let items: Vec<&ParamInfo> = self.params.iter().chain(&self.reported).collect();
        let ids: Vec<NodeId> = items.iter().map(|p| p.value).collect();
        let blocks = eval_nodes(&self.graph, theta.as_slice(), w, &ids);
        items.iter().map(|p| p.name.clone()).zip(blocks).collect()
    }

    /// The hyperparameters on their constrained scale, one vector (column-major) per `hyper`.
    pub fn constrain_theta(&self, theta: &DVector<f64>) -> Vec<Vec<f64>> {
        let ids: Vec<NodeId> = self.hypers.iter().map(|p| p.value).collect();
        let w = DMatrix::zeros(self.graph.dim, 1);
        eval_nodes(&self.graph, theta.as_slice(), &w, &ids)
            .into_iter()
            .map(|m| m.iter().copied().collect())
            .collect()
    }

    /// The `predict` outputs at the draws W (D×S′), reduced over the draws
    /// ([`super::predict`]).
    ///
    /// Returns `None` when the model has no `predict` block.
    pub fn predict(&self, theta: &DVector<f64>, w: &DMatrix<f64>) -> Option<PredictSums> {
        self.predict_seeded(theta, w, 0, 0)
    }

    /// [`LogJoint::predict`] with the random draws of `predict` (its `_rng` calls) from the
    /// stream `seed`, the columns of `w` being its draws `first, first + 1, …`.
    pub fn predict_seeded(
        &self,
        theta: &DVector<f64>,
        w: &DMatrix<f64>,
        seed: u64,
        first: usize,
    ) -> Option<PredictSums> {
        let g = self.predict.as_ref()?;
        Some(super::predict::predict_sums(g, theta.as_slice(), w, seed, first))
    }
}

/// The values of the given nodes at the columns of W, chunked and in parallel: one
/// (size × S) matrix per node. Only the nodes they depend on are evaluated (not the
/// likelihood, which can be most of the graph's work).
pub fn eval_nodes(g: &Graph, theta: &[f64], w: &DMatrix<f64>, ids: &[NodeId]) -> Vec<DMatrix<f64>> {
    let consts = lift_consts::<f64>(g);
    let needed = ancestors(g, ids);
    let s = w.ncols();
    let d = g.dim;
    let starts: Vec<usize> = (0..s).step_by(CHUNK).collect();
    let parts: Vec<Vec<Vec<f64>>> = starts
        .par_iter()
        .map(|&c0| {
            let c1 = (c0 + CHUNK).min(s);
            let tape = forward_needed(g, &consts, theta, &w.as_slice()[c0 * d..c1 * d], c1 - c0, &needed);
            ids.iter()
                .map(|&id| {
                    let a = tape.arg(id);
                    (0..c1 - c0).flat_map(|c| a.col(c).iter().copied()).collect()
                })
                .collect()
        })
        .collect();
    ids.iter()
        .enumerate()
        .map(|(k, &id)| {
            let n = g.shape(id).size();
            let all: Vec<f64> = parts.iter().flat_map(|p| p[k].iter().copied()).collect();
            DMatrix::from_vec(n, s, all)
        })
        .collect()
}

impl LogDensity for LogJoint {
    fn dim(&self) -> usize {
        self.graph.dim
    }

    fn theta_dim(&self) -> usize {
        self.graph.theta_dim
    }

    fn theta_init(&self) -> DVector<f64> {
        self.theta0.clone()
    }

    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        if let Some(b) = self.blocked() {
            let mut e = b.sum(|g| eval_graph(g, theta, w, want), add_evaluated);
            clean_columns(&mut e);
            return e;
        }
        eval_graph(&self.graph, theta, w, want)
    }

    fn eval_weighted_theta(
        &self,
        theta: &DVector<f64>,
        w: &DMatrix<f64>,
        weights: &DMatrix<f64>,
    ) -> Evaluated {
        if let Some(b) = self.blocked() {
            let mut e = b.sum(|g| eval_graph_weighted(g, theta, w, weights), add_evaluated);
            clean_columns(&mut e);
            return e;
        }
        eval_graph_weighted(&self.graph, theta, w, weights)
    }

    fn value_grad_into(&self, theta: &DVector<f64>, w: &[f64], grad: &mut [f64]) -> f64 {
        if let Some(b) = self.blocked() {
            let one = DMatrix::from_column_slice(w.len(), 1, w);
            let mut e = b.sum(|g| eval_graph(g, theta, &one, Want::GRAD_W), add_evaluated);
            clean_columns(&mut e);
            grad.copy_from_slice(e.grad_w.expect("asked for").as_slice());
            return e.values[0];
        }
        match self.point.get(&self.graph) {
            Some(p) => p.value_grad(&self.graph, theta.as_slice(), w, grad),
            None => {
                let e = self.eval(theta, &DMatrix::from_column_slice(w.len(), 1, w), Want::GRAD_W);
                grad.copy_from_slice(e.grad_w.expect("asked for").as_slice());
                e.values[0]
            }
        }
    }

    fn hessian(&self, theta: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let (t, x) = (theta.as_slice(), w.as_slice());
        match self.blocked() {
            Some(b) => {
                let h = b.sum(|g| dual::hessian_raw(g, t, x), add_matrix);
                (&h + h.transpose()) * 0.5
            }
            None => dual::hessian(&self.graph, t, x),
        }
    }

    fn hvp(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        let (t, x, v) = (theta.as_slice(), w.as_slice(), v.as_slice());
        match self.blocked() {
            Some(b) => b.sum(|g| dual::hvp(g, t, x, v), add_vector),
            None => dual::hvp(&self.graph, t, x, v),
        }
    }

    fn hessian_times(&self, theta: &DVector<f64>, w: &DVector<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
        let (t, x) = (theta.as_slice(), w.as_slice());
        match self.blocked() {
            Some(b) => b.sum(|g| dual::hessian_times(g, t, x, v), add_matrix),
            None => dual::hessian_times(&self.graph, t, x, v),
        }
    }

    fn coordinate_names(&self) -> Vec<String> {
        self.params.iter().flat_map(names_of).collect()
    }

    fn rows(&self) -> Option<usize> {
        self.row_split().map(|b| b.split.n)
    }

    fn eval_rows(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want, rows: &[u32]) -> Evaluated {
        let Some(b) = self.row_split() else {
            return self.eval(theta, w, want);
        };
        let scale = b.split.n as f64 / rows.len().max(1) as f64;
        let mut e = eval_graph(&b.global, theta, w, want);
        let mut part = eval_graph(&b.split.slice(&self.graph, rows), theta, w, want);
        part.values *= scale;
        part.grad_w = part.grad_w.map(|g| g * scale);
        part.grad_theta = part.grad_theta.map(|g| g * scale);
        add_evaluated(&mut e, part);
        clean_columns(&mut e);
        e
    }

    fn coordinate_constraint(&self, i: usize) -> Option<super::Constraint> {
        self.params
            .iter()
            .find(|p| (p.offset..p.offset + p.free_len()).contains(&i))
            .filter(|p| p.structure.is_none())
            .map(|p| p.constraint)
    }

    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        self.params
            .iter()
            .map(|p| (p.name.clone(), p.offset, p.free_len()))
            .collect()
    }

    fn initial_point(&self) -> DVector<f64> {
        let mut w = DVector::zeros(self.graph.dim);
        for p in &self.params {
            if let Some(Structure::Type(k)) = p.structure {
                let u = super::transform::initial_free(k, p.shape);
                w.as_mut_slice()[p.offset..p.offset + u.len()].copy_from_slice(&u);
            }
        }
        w
    }
}

/// Batched value (and gradients) of a graph's log joint at the columns of W, in parallel
/// chunks of [`super::eval::chunk_for`] columns. Columns with a non-finite value get −∞ and a zero gradient.
pub fn eval_graph(g: &Graph, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
    let s = w.ncols();
    let (d, p) = (g.dim, g.theta_dim);
    if !want.grad_w && !want.grad_theta {
        let values = super::eval::eval_values(g, theta.as_slice(), w.as_slice(), s);
        return Evaluated {
            values: DVector::from_vec(values),
            grad_w: None,
            grad_theta: None,
        };
    }
    let consts = lift_consts::<f64>(g);
    // one point (L-BFGS, NUTS) is one chunk: no chunk plan, no hand-over to the thread pool
    let chunk = super::eval::chunk_for(g, s);
    let starts: Vec<usize> = (0..s).step_by(chunk).collect();
    // ∇_θ's tangents depend on θ alone: once for all chunks, not once per chunk
    let tangents = if want.grad_theta && starts.len() > 1 {
        reverse::shared_tangents(g, &consts, theta.as_slice(), w.as_slice())
    } else {
        None
    };
    let one = |&c0: &usize| {
        let c1 = (c0 + chunk).min(s);
        reverse::value_grad_with(
            g,
            &consts,
            theta.as_slice(),
            &w.as_slice()[c0 * d..c1 * d],
            c1 - c0,
            want.grad_theta,
            tangents.as_deref(),
        )
    };
    let parts: Vec<reverse::Grads<f64>> = if starts.len() == 1 {
        starts.iter().map(one).collect()
    } else {
        starts.par_iter().map(one).collect()
    };
    let mut values = Vec::with_capacity(s);
    let mut gw = Vec::with_capacity(d * s);
    let mut gt = Vec::with_capacity(p * s);
    for part in parts {
        values.extend(part.values);
        gw.extend(part.grad_w);
        gt.extend(part.grad_theta);
    }
    for (c, v) in values.iter_mut().enumerate() {
        let bad = !v.is_finite()
            || gw[c * d..(c + 1) * d]
                .iter()
                .chain(&gt[c * p..(c + 1) * p])
                .any(|x| !x.is_finite());
        if bad {
            *v = f64::NEG_INFINITY;
            gw[c * d..(c + 1) * d].iter_mut().for_each(|x| *x = 0.0);
            gt[c * p..(c + 1) * p].iter_mut().for_each(|x| *x = 0.0);
        }
    }
    Evaluated {
        values: DVector::from_vec(values),
        grad_w: want.grad_w.then(|| DMatrix::from_vec(d, s, gw)),
        grad_theta: want.grad_theta.then(|| DMatrix::from_vec(p, s, gt)),
    }
}

/// [`eval_graph`] with ∇_θ as the weighted sums ∇_θ·C of its columns (C: S×R): per chunk
/// of columns the adjoints where the θ-only part meets the batched part, summed over the
/// chunk's columns with the weights ([`reverse::weighted_seeds`]); the chunks' seeds
/// added in order; then one reverse sweep over the θ-only nodes ([`reverse::theta_sweep`]).
/// When some column is not finite (value, ∇_w or the sums), the per-column evaluation is
/// run instead, so that such columns count as in [`eval_graph`] (value −∞, gradient zero).
pub fn eval_graph_weighted(
    g: &Graph,
    theta: &DVector<f64>,
    w: &DMatrix<f64>,
    weights: &DMatrix<f64>,
) -> Evaluated {
    let s = w.ncols();
    let (d, p, r) = (g.dim, g.theta_dim, weights.ncols());
    assert_eq!(weights.nrows(), s, "one weight per column and sum");
    let per_column = || {
        let mut e = eval_graph(g, theta, w, Want::ALL);
        e.grad_theta = e.grad_theta.map(|gt| gt * weights);
        e
    };
    if !reverse::weighted_supported(g) {
        return per_column();
    }
    let consts = lift_consts::<f64>(g);
    let finite = |e: Evaluated| {
        let all = [
            e.values.as_slice(),
            e.grad_w.as_ref().unwrap().as_slice(),
            e.grad_theta.as_ref().unwrap().as_slice(),
        ];
        if all.iter().all(|v| v.iter().all(|x| x.is_finite())) {
            e
        } else {
            per_column()
        }
    };
    let chunk = super::eval::chunk_for(g, s);
    if chunk >= s {
        // one chunk: its own tape holds the θ-only values
        let grads = reverse::value_grad_weighted(
            g,
            &consts,
            theta.as_slice(),
            w.as_slice(),
            s,
            weights.as_slice(),
            r,
        );
        return finite(Evaluated {
            values: DVector::from_vec(grads.values),
            grad_w: Some(DMatrix::from_vec(d, s, grads.grad_w)),
            grad_theta: Some(DMatrix::from_vec(p, r, grads.grad_theta)),
        });
    }
    let starts: Vec<usize> = (0..s).step_by(chunk).collect();
    let one = |&c0: &usize| {
        let c1 = (c0 + chunk).min(s);
        // the chunk's rows of the weights, column-major
        let part: Vec<f64> = (0..r)
            .flat_map(|k| (c0..c1).map(move |c| weights[(c, k)]))
            .collect();
        let tape = super::eval::forward(
            g,
            &consts,
            theta.as_slice(),
            &w.as_slice()[c0 * d..c1 * d],
            c1 - c0,
        );
        let values = tape.target_values();
        let (gw, seeds) = reverse::weighted_seeds(&tape, &part, r);
        (values, gw, seeds)
    };
    let parts: Vec<_> = starts.par_iter().map(one).collect();
    let mut values = Vec::with_capacity(s);
    let mut gw = Vec::with_capacity(d * s);
    let mut seeds: Vec<Vec<f64>> = Vec::new();
    for (v, g_w, sd) in parts {
        values.extend(v);
        gw.extend(g_w);
        if seeds.is_empty() {
            seeds = sd;
            continue;
        }
        for (acc, add) in seeds.iter_mut().zip(sd) {
            acc.iter_mut().zip(&add).for_each(|(o, v)| *o += v);
        }
    }
    if !values.iter().chain(&gw).all(|x| x.is_finite()) {
        return per_column();
    }
    // the θ-only nodes' values, once (they are the same at every column)
    let tape = super::eval::forward_theta_only(g, &consts, theta.as_slice());
    let gt = reverse::theta_sweep(&tape, seeds, r);
    finite(Evaluated {
        values: DVector::from_vec(values),
        grad_w: Some(DMatrix::from_vec(d, s, gw)),
        grad_theta: Some(DMatrix::from_vec(p, r, gt)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist;
    use crate::graph::{diagnose, Tolerances};
    use approx::assert_relative_eq;

    /// σ ~ lognormal(0, 1) (σ > 0 through exp), y ~ normal(μ, σ), μ ~ normal(0, 10).
    fn model() -> LogJoint {
        let mut g = Graph::new(2, 1);
        let mu = g.param_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
        let sigma = g.param_slice(1, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
        let scale = g.hyper_slice(0, Shape::Scalar, &Constraint::lower(0.0)).unwrap();
        let zero = g.scalar(0.0);
        let one = g.scalar(1.0);
        dist::tilde(&mut g, "normal", mu, &[zero, scale]).unwrap();
        dist::tilde(&mut g, "lognormal", sigma, &[zero, one]).unwrap();
        let y = g.constant(Shape::Vector(3), vec![0.5, 1.5, -0.2]);
        dist::tilde(&mut g, "normal", y, &[mu, sigma]).unwrap();
        let params = vec![
            ParamInfo {
                name: "mu".into(),
                offset: 0,
                shape: Shape::Scalar,
                constraint: Constraint::NONE,
                structure: None,
                value: mu,
            },
            ParamInfo {
                name: "sigma".into(),
                offset: 1,
                shape: Shape::Scalar,
                constraint: Constraint::lower(0.0),
                structure: None,
                value: sigma,
            },
        ];
        let mut pg = Graph::new(2, 1);
        let mu_p = pg.param_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
        let beta = pg.constant(Shape::Vector(2), vec![1.0, -2.0]);
        let eta = pg.mul(beta, mu_p).unwrap();
        let yt = pg.constant(Shape::Vector(2), vec![1.0, 0.0]);
        let ll = dist::pointwise(&mut pg, "bernoulli_logit", yt, &[eta]).unwrap();
        let q = dist::quantity(&mut pg, "bernoulli_logit", yt, &[eta]).unwrap();
        pg.add_pointwise("y_test", ll, Some(q));
        let mut lj = LogJoint::new(g, params, vec![]);
        lj.predict = Some(pg);
        lj.theta0 = DVector::from_vec(vec![10f64.ln()]);
        lj
    }

    #[test]
    fn chunked_parallel_evaluation_equals_one_column_at_a_time() {
        let lj = model();
        let s = 2 * CHUNK + 17;
        let w = DMatrix::from_fn(2, s, |i, j| ((i * s + j) as f64 * 0.37).sin());
        let th = lj.theta_init();
        let all = lj.eval(&th, &w, Want::ALL);
        for c in [0, CHUNK - 1, CHUNK, s - 1] {
            let one = lj.eval(&th, &w.columns(c, 1).into_owned(), Want::ALL);
            assert_relative_eq!(all.values[c], one.values[0], max_relative = 1e-12);
            let (ga, go) = (all.grad_w.as_ref().unwrap(), one.grad_w.as_ref().unwrap());
            assert_relative_eq!(
                ga.column(c).into_owned(),
                go.column(0).into_owned(),
                max_relative = 1e-12
            );
        }
        let v = lj.eval(&th, &w, Want::VALUE);
        assert_relative_eq!(v.values, all.values, max_relative = 1e-12);
    }

    #[test]
    fn weighted_theta_gradients_equal_the_per_column_ones_weighted_over_chunks_and_bad_columns() {
        let lj = model();
        let s = 2 * CHUNK + 17;
        let mut w = DMatrix::from_fn(2, s, |i, j| ((i * s + j) as f64 * 0.37).sin());
        let th = DVector::from_vec(vec![0.4]);
        let weights = DMatrix::from_fn(s, 2, |c, k| {
            if k == 0 {
                1.0 / s as f64
            } else {
                (0.11 * c as f64).cos()
            }
        });
        let check = |w: &DMatrix<f64>, exact: bool| {
            let all = lj.eval(&th, w, Want::ALL);
            let want = all.grad_theta.as_ref().unwrap() * &weights;
            let got = lj.eval_weighted_theta(&th, w, &weights);
            let gt = got.grad_theta.as_ref().unwrap();
            assert_eq!(gt.shape(), (1, 2));
            assert!(want.iter().all(|v| v.abs() > 1e-3), "the check is not vacuous");
            if exact {
                assert_eq!(gt, &want);
            } else {
                assert_relative_eq!(gt, &want, max_relative = 1e-12);
            }
            assert_eq!((got.values, got.grad_w), (all.values, all.grad_w));
        };
        check(&w, false);
        // a column outside the support: its value −∞ and gradient zero, as per column
        w[(1, CHUNK + 3)] = f64::NAN;
        check(&w, true);
    }

    #[test]
    fn constrain_reports_values_on_the_declared_scale() {
        let lj = model();
        let w = DMatrix::from_column_slice(2, 2, &[0.3, 0.0, -1.0, 2f64.ln()]);
        let out = lj.constrain(&lj.theta_init(), &w);
        assert_eq!(out[0].0, "mu");
        assert_relative_eq!(out[0].1[(0, 1)], -1.0, epsilon = 1e-15);
        assert_relative_eq!(out[1].1[(0, 0)], 1.0, epsilon = 1e-15);
        assert_relative_eq!(out[1].1[(0, 1)], 2.0, epsilon = 1e-14);
        assert_eq!(lj.coordinate_names(), vec!["mu", "sigma"]);
    }

    #[test]
    fn predict_gives_pointwise_loglik_and_mean_probabilities() {
        let lj = model();
        let w = DMatrix::from_column_slice(2, 2, &[0.5, 0.0, -0.5, 0.0]);
        let p = lj.predict(&lj.theta_init(), &w).unwrap();
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        // draw 0 (μ = 0.5): point 0 (y = 1, η = μ) log σ(0.5), point 1 (y = 0, η = −2μ)
        // log σ(1); draw 1 (μ = −0.5): log σ(−0.5) and log σ(−1)
        let ls = |x: f64| sig(x).ln();
        assert_eq!(p.draws(), 2);
        assert_relative_eq!(p.joint[0], ls(0.5) + ls(1.0), epsilon = 1e-14);
        assert_relative_eq!(p.joint[1], ls(-0.5) + ls(-1.0), epsilon = 1e-14);
        // per point, log Σ over draws of the likelihood: σ(x) + σ(−x) = 1
        assert_eq!(p.pointwise.rows(), 2);
        for v in p.pointwise.values() {
            assert!(v.abs() < 1e-14, "{v}");
        }
        let q = p.quantity_means();
        assert_relative_eq!(q[0].1[0], 0.5 * (sig(0.5) + sig(-0.5)), epsilon = 1e-14);
        assert_relative_eq!(q[0].1[1], 0.5 * (sig(-1.0) + sig(1.0)), epsilon = 1e-14);
    }

    #[test]
    fn diagnose_passes_on_a_smooth_model_and_zero_tolerance_fails() {
        let lj = model();
        let w = DVector::from_vec(vec![0.4, -0.3]);
        let r = diagnose(&lj, &lj.theta_init(), &w, Tolerances::default());
        assert!(r.passed(), "{r}");
        assert!(r.to_string().trim_end().ends_with("PASS"));
        let strict = Tolerances {
            exact: 0.0,
            finite_diff: 0.0,
            symmetry: 0.0,
        };
        let r2 = diagnose(&lj, &lj.theta_init(), &w, strict);
        assert!(!r2.passed());
    }

    #[test]
    fn finite_differences_are_judged_beyond_their_rounding_floor() {
        use crate::graph::diagnose::{fd_floor, fd_rel_err};
        // a partial of 1.9 that only the prior sets, beside log p̃ = −8·10⁹: central
        // differences at 1e-5 are off by 0.01 from rounding alone, not a derivative error
        let a = [1.9, -2.0e10];
        let b = [1.9 + 0.011, -2.0e10 - 1.0];
        let b10 = [1.9 + 0.001, -2.0e10 - 0.1];
        let floor = [fd_floor(8.3e9, 1e-5 * 1.9), fd_floor(8.3e9, 1e-5)];
        assert_eq!(fd_rel_err(&a, &b, &b10, &floor, 1e-5), (0.0, 1));
        // an error above the floor of an ordinary scale, with both steps agreeing, still
        // counts in full
        let ok = [fd_floor(50.0, 1e-5)];
        let (beyond, unresolved) = fd_rel_err(&[1.9], &[1.91], &[1.91 + 1e-8], &ok, 1e-5);
        assert!((beyond - 0.01 / 1.91).abs() < 1e-6, "{beyond}");
        assert_eq!(unresolved, 0);
        // where the two steps disagree, the disagreement is what they cannot tell apart
        let (beyond, unresolved) = fd_rel_err(&[0.1013], &[0.0046], &[0.0953], &ok, 1e-5);
        assert_eq!((beyond, unresolved), (0.0, 1));
    }

    #[test]
    fn diagnose_passes_a_badly_scaled_point_and_says_what_it_cannot_check() {
        let mut set = crate::data::DataSet::default();
        crate::data::add_json_text(&mut set, "d.json", "{}".into()).expect("the data parse");
        let src = "param { a: real\n b: real }\nmodel { a ~ normal(0, 1)\n target += -1e9 * exp(b) }";
        let typed = crate::check::check_source(src, "m.mvi", std::path::Path::new("."), &set)
            .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
        let lj = crate::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
        let w = DVector::from_vec(vec![-1.9, 2.0]);
        let r = diagnose(&lj, &lj.theta_init(), &w, Tolerances::default());
        // a's partial (1.9) is within the rounding of differences of log p̃ ≈ −7.4·10⁹
        assert!(r.grad_err_fd > 1e-5, "{r}");
        assert!(r.passed(), "{r}");
        assert_eq!(r.grad_fd_unresolved, 1, "{r}");
        assert!(r.to_string().contains("1 of 2 partials are below"), "{r}");
    }

    #[test]
    fn the_directional_hessian_check_agrees_like_the_full_one() {
        use crate::graph::diagnose::{directional_hessian_checks, full_hessian_checks};
        let lj = model();
        let (th, w) = (lj.theta_init(), DVector::from_vec(vec![0.4, -0.3]));
        let grad = |x: &[f64]| crate::density::value_grad(&lj, &th, &DVector::from_column_slice(x)).1;
        let g0 = grad(w.as_slice());
        let full = full_hessian_checks(&lj, &th, &w, &grad, &g0, 1e-5);
        let dir = directional_hessian_checks(&lj, &th, &w, &grad, &g0, 1e-5);
        assert_eq!((full.directions, dir.directions), (None, Some(6)));
        for c in [&full, &dir] {
            assert!(
                c.asymmetry <= 1e-12 && c.err_exact <= 1e-12,
                "{}, {}",
                c.asymmetry,
                c.err_exact
            );
            assert!(c.err_fd <= 1e-6 && c.err_fd > 0.0, "{}", c.err_fd);
        }
    }

    #[test]
    fn hessian_times_is_the_hessian_times_each_column() {
        let lj = model();
        let th = lj.theta_init();
        let w = DVector::from_vec(vec![0.2, 0.1]);
        let v = DMatrix::from_column_slice(2, 3, &[1.0, 0.0, 0.3, -2.0, 0.5, 0.5]);
        assert_relative_eq!(
            lj.hessian_times(&th, &w, &v),
            lj.hessian(&th, &w) * &v,
            epsilon = 1e-12
        );
    }

    #[test]
    fn hessian_matches_hvp_columns() {
        let lj = model();
        let th = lj.theta_init();
        let w = DVector::from_vec(vec![0.2, 0.1]);
        let h = lj.hessian(&th, &w);
        let e0 = DVector::from_vec(vec![1.0, 0.0]);
        assert_relative_eq!(
            lj.hvp(&th, &w, &e0),
            h.column(0).into_owned(),
            max_relative = 1e-12
        );
    }
}
