//! Lowering: a checked [`TypedModel`] with its bound data → a [`LogJoint`].
//!
//! Input: the typed model (every name resolved, shapes concrete, loops unrolled, `if`
//! conditions on data). Output: the log-joint graph over w and θ — data as constants (created
//! on first use), data-only subexpressions folded to constants by the builder, `hyper` and
//! `param` slots as transform nodes (log-Jacobians for params only), top-level and block
//! `let`s, inlined user functions, updated locals, every `~` and `target +=` summed into the
//! target — plus, when the model has a `predict` block, a second graph over the same w and θ
//! with one pointwise output per `~` statement.
//!
//! What the next stage can rely on: every parameter has a transform to ℝ and its log-Jacobian
//! node; `params` tile w in declaration order; top-level `let`s that depend on a param are
//! `reported`; data outcomes of every `~` and `_lpmf` have been checked against the family's
//! support (a [`Diagnostic`] pointing at the outcome otherwise).

// `Diagnostic` is the project's one user-facing error type and is returned by value by design.
#![allow(clippy::result_large_err)]

mod ancestral;
pub use ancestral::lower_ancestral;
mod calls;
mod exprs;
pub mod observed;
pub use observed::Reading;
mod slots;
mod stan_fns;
pub use stan_fns::stan_function;
mod stmts;

use std::collections::HashMap;

use nalgebra::DVector;

use super::generate::{Generated, Output};
use super::{Constraint, Graph, LogJoint, NodeId, ParamInfo, Shape};
use crate::check::Shape as TShape;
use crate::check::{Slot, Stage, TExpr, TStmt, Transform, TypedModel};
use crate::data::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;

/// Lower a checked model to its log joint (and its `predict` graph).
///
/// # Errors
/// A data outcome outside its distribution's support (e.g. a label 2 for
/// `bernoulli_logit`), with the span of the outcome and a help line; an internal shape
/// problem the checker should have ruled out, pointing at the expression.
pub fn lower_model(model: &TypedModel) -> Result<LogJoint, Diagnostic> {
    lower_joint(model, false)
}

/// The prior alone as a log joint: [`lower_model`] without the `~` statements on data and
/// the `target += dist_lpdf(y | …)` whose outcome is data (the likelihood), for prior
/// predictive draws (`mvi run --prior`).
///
/// # Errors
/// As [`lower_model`].
pub fn lower_prior(model: &TypedModel) -> Result<LogJoint, Diagnostic> {
    lower_joint(model, true)
}

fn lower_joint(model: &TypedModel, prior_only: bool) -> Result<LogJoint, Diagnostic> {
    let mut main = Lowerer::new(model, false);
    main.prior_only = prior_only;
    let (params, hypers) = main.declare_slots()?;
    main.lower_lets()?;
    let reported = main.reported_lets();
    main.block(&model.model)?;
    let theta0 = main.theta0()?;
    let predict = if model.has_predict {
        let mut p = Lowerer::new(model, true);
        p.declare_slots()?;
        p.lower_lets()?;
        p.block(&model.predict)?;
        Some((p.g, p.loops))
    } else {
        None
    };
    let (graph, params, hypers, reported) = finish(main.g, main.loops, params, hypers, reported);
    let predict = predict.map(|(g, loops)| finish(g, loops, Vec::new(), Vec::new(), Vec::new()).0);
    let mut lj = LogJoint::new(graph, params, hypers);
    lj.reported = reported;
    lj.theta0 = theta0;
    lj.predict = predict;
    lj.generated = lower_generated(model)?;
    Ok(lj)
}

/// The `generated` block as a graph over the log joint's w and θ, its top-level `let`s the
/// outputs in order; `None` without a block.
///
/// # Errors
/// As [`lower_model`].
pub fn lower_generated(model: &TypedModel) -> Result<Option<Generated>, Diagnostic> {
    if model.generated.is_empty() {
        return Ok(None);
    }
    let mut l = Lowerer::new(model, false);
    l.declare_slots()?;
    l.lower_lets()?;
    l.scopes.push(HashMap::new());
    l.stmts(&model.generated)?;
    let mut outputs = Vec::new();
    let k = l.scopes.len() - 1;
    for s in &model.generated {
        if let TStmt::Let { name, value } = s {
            let v = l.read_local(k, name, value)?;
            outputs.push((name.clone(), v));
        }
    }
    Ok(Some(finish_generated(l.g, outputs)))
}

/// The `model` block read after a fit: for each data variable on the left of a `~`, its
/// replicate `<name>_rep` (shaped as the data; entries no `~` draws are NaN) or its pointwise
/// log-likelihoods `<name>` (one per observation, in statement order); with the outcomes that
/// could not be replicated (`log(y) ~ …`), as written.
///
/// # Errors
/// As [`lower_model`], and a family with no pointwise density for its outcome.
pub fn lower_observed(model: &TypedModel, reading: Reading) -> Result<(Generated, Vec<String>), Diagnostic> {
    let mut l = Lowerer::new(model, false);
    l.observations = Some(observed::Observations::new(reading));
    l.declare_slots()?;
    l.lower_lets()?;
    l.block(&model.model)?;
    let obs = l.observations.take().expect("set above");
    let nan = l.g.scalar(f64::NAN);
    let mut outputs = Vec::new();
    let mut observed = Vec::new();
    for var in obs.vars {
        observed.push(var.observed.clone());
        let entries: Vec<(NodeId, u32)> = var.entries.iter().map(|e| e.unwrap_or((nan, 0))).collect();
        let shape = match reading {
            Reading::Replicate => var.shape,
            Reading::LogLik => Shape::Vector(entries.len()),
        };
        let name = match reading {
            Reading::Replicate => format!("{}_rep", var.name),
            Reading::LogLik => var.name,
        };
        let v =
            l.g.assemble(shape, &entries)
                .map_err(|e| l.internal(crate::syntax::span::Span::default(), e))?;
        outputs.push((name, v));
    }
    let mut gen = finish_generated(l.g, outputs);
    for (o, values) in gen.outputs.iter_mut().zip(observed) {
        o.observed = Some(values);
    }
    Ok((gen, obs.skipped))
}

/// A graph of per-draw outputs with only what they need: the log joint's target terms
/// (log-Jacobians of the parameters) dropped.
fn finish_generated(mut g: Graph, outputs: Vec<(String, NodeId)>) -> Generated {
    g.targets.clear();
    g.target_sites.clear();
    let reported = outputs
        .into_iter()
        .map(|(name, value)| ParamInfo {
            name,
            offset: 0,
            shape: g.shape(value),
            constraint: Constraint::NONE,
            structure: None,
            value,
        })
        .collect();
    let (graph, _, _, reported) = prune(g, Vec::new(), Vec::new(), reported);
    Generated {
        graph,
        outputs: reported
            .into_iter()
            .map(|p| Output {
                name: p.name,
                shape: p.shape,
                value: p.value,
                observed: None,
            })
            .collect(),
        notes: Vec::new(),
    }
}

/// The graph shape of a checked shape (ints are real vectors, int scalars real scalars).
pub fn graph_shape(s: TShape) -> Shape {
    match s {
        TShape::Int | TShape::Real => Shape::Scalar,
        TShape::Vector(n) | TShape::Ints(n) => Shape::Vector(n),
        TShape::Matrix(r, c) => Shape::Matrix(r, c),
    }
}

/// The bounds of a transform.
pub fn constraint_of(t: Transform) -> Constraint {
    match t {
        Transform::Identity => Constraint::NONE,
        Transform::Lower(a) => Constraint::lower(a),
        Transform::Upper(b) => Constraint {
            lower: None,
            upper: Some(b),
        },
        Transform::LowerUpper(a, b) => Constraint::interval(a, b),
        // Their transforms are built by `slots.rs`, not from constant bounds.
        Transform::Type(_) | Transform::Dependent => Constraint::NONE,
    }
}

/// A local's current value. A local updated entry by entry (`err[t] = y[t] - nu[t]` in a
/// loop, `mu[a:b] = …`, `M[i, j] = …`) keeps its entries, each an entry of some node, so an
/// update costs O(1) per updated entry, a read of single entries or slices returns those
/// entries' nodes (O(1) per entry) and only a read of the whole value builds one node
/// ([`Graph::assemble`], O(n)), cached until the next update. A recursion over T steps thus
/// lowers to O(T) nodes of O(1) size instead of T copies of the whole vector.
#[derive(Debug, Clone)]
pub(crate) enum Local {
    /// The value is this node.
    Node(NodeId),
    /// The value's entries, column-major: entry i is entry `entries[i].1` of node
    /// `entries[i].0`; `whole` is the assembled node once one was built.
    Entries {
        shape: Shape,
        entries: Vec<(NodeId, u32)>,
        whole: Option<NodeId>,
    },
}

/// The lowering state for one graph.
pub(crate) struct Lowerer<'m> {
    pub(crate) model: &'m TypedModel,
    pub(crate) g: Graph,
    /// Data, sizes, hypers, params and top-level lets by name.
    globals: HashMap<String, NodeId>,
    /// Local scopes, innermost last; an inlined function body starts a fresh stack.
    pub(crate) scopes: Vec<HashMap<String, Local>>,
    /// Building the `predict` graph: `~` registers pointwise outputs.
    pub(crate) predict: bool,
    /// The call site of the outermost inlined function being lowered (spans inside a
    /// function body point into its own file).
    pub(crate) call_site: Option<Span>,
    /// Per `for` statement lowered: the node where each iteration starts, then the end.
    pub(crate) loops: Vec<Vec<usize>>,
    /// Reading the `model` block after a fit (replicates or pointwise log-likelihoods):
    /// what its `~` on data gave.
    pub(crate) observations: Option<observed::Observations>,
    /// Lowering the prior alone: the likelihood's statements are left out.
    pub(crate) prior_only: bool,
    /// Drawing the prior ancestrally: parameters are draws of their `~`, not slots of w.
    pub(crate) ancestral: Option<ancestral::Draws>,
}

impl<'m> Lowerer<'m> {
    fn new(model: &'m TypedModel, predict: bool) -> Self {
        Lowerer {
            model,
            g: Graph::new(model.dim, model.hyper_dim),
            globals: HashMap::new(),
            scopes: vec![HashMap::new()],
            predict,
            call_site: None,
            loops: Vec::new(),
            observations: None,
            prior_only: false,
            ancestral: None,
        }
    }

    /// A span in the model file: the expression's own, or the call site inside a function.
    pub(crate) fn span(&self, e: &TExpr) -> Span {
        self.call_site.unwrap_or(e.span)
    }

    /// The text of `e` as written in the model file (`fallback` where it is not there).
    pub(crate) fn source_text(&self, e: &TExpr, fallback: &str) -> String {
        self.model
            .source
            .inner()
            .get(e.span.start as usize..e.span.end as usize)
            .unwrap_or(fallback)
            .to_string()
    }

    /// An internal problem (a shape the checker should have rejected) at `span`.
    pub(crate) fn internal(&self, span: Span, err: impl std::fmt::Display) -> Diagnostic {
        Diagnostic::error(
            "mvi::lower::internal",
            format!("cannot build the log-joint graph: {err}"),
            self.model.source.clone(),
        )
        .with_label(span, "while lowering this")
        .with_help("this is a bug in mvi's checker or lowering; please report it with the model")
    }

    fn declare_slots(&mut self) -> Result<(Vec<ParamInfo>, Vec<ParamInfo>), Diagnostic> {
        let mut hypers = Vec::new();
        for h in &self.model.hypers {
            let c = constraint_of(h.transform);
            let v = self.slot_value(h, true)?;
            self.g.label(v, &h.name);
            self.globals.insert(h.name.clone(), v);
            hypers.push(info(h, c, v));
        }
        let mut params = Vec::new();
        if self.ancestral.is_some() {
            return Ok((params, hypers));
        }
        for p in &self.model.params {
            let c = constraint_of(p.transform);
            let v = self.slot_value(p, false)?;
            self.g.label(v, &p.name);
            self.globals.insert(p.name.clone(), v);
            params.push(info(p, c, v));
        }
        Ok((params, hypers))
    }

    fn lower_lets(&mut self) -> Result<(), Diagnostic> {
        for (name, e) in &self.model.lets {
            // drawing ancestrally, a `let` on parameters is built when first read
            if self.ancestral.is_some() && e.stage == Stage::Param {
                continue;
            }
            let v = self.expr(e)?;
            self.g.label(v, name);
            self.globals.insert(name.clone(), v);
        }
        Ok(())
    }

    /// Top-level lets that depend on a param, reported like parameters.
    fn reported_lets(&self) -> Vec<ParamInfo> {
        self.model
            .lets
            .iter()
            .filter(|(_, e)| e.stage == Stage::Param)
            .map(|(name, e)| ParamInfo {
                name: name.clone(),
                offset: 0,
                shape: graph_shape(e.shape),
                constraint: Constraint::NONE,
                structure: None,
                value: self.globals[name],
            })
            .collect()
    }

    /// θ₀ on the unconstrained scale from the hypers' initial values.
    fn theta0(&mut self) -> Result<DVector<f64>, Diagnostic> {
        let mut theta = DVector::zeros(self.model.hyper_dim);
        for h in &self.model.hypers {
            let init = match (&h.init, &h.init_expr) {
                (Some(v), _) => v.clone(),
                (None, Some(e)) => self.const_values(e)?,
                (None, None) => continue,
            };
            if matches!(h.transform, Transform::Type(_) | Transform::Dependent) {
                self.structured_theta0(h, &init, &mut theta)?;
                continue;
            }
            let c = constraint_of(h.transform);
            for i in 0..h.len {
                let x = if init.len() == 1 { init[0] } else { init[i] };
                theta[h.offset + i] = c.unconstrain(x);
            }
        }
        Ok(theta)
    }

    /// The node of a name visible here.
    pub(crate) fn name(&mut self, name: &str, e: &TExpr) -> Result<NodeId, Diagnostic> {
        if let Some(k) = self.scopes.iter().rposition(|s| s.contains_key(name)) {
            return self.read_local(k, name, e);
        }
        if let Some(v) = self.globals.get(name) {
            return Ok(*v);
        }
        if self.ancestral.is_some() {
            if self.model.params.iter().any(|p| p.name == name) {
                let why = if self.model.model.iter().any(|s| ancestral::draws(s, name)) {
                    format!("`{name}` is read before all of it is drawn by a `~`")
                } else {
                    format!(
                        "`{name}` is not the outcome of a `~` (its prior is flat, or given by `target +=`)"
                    )
                };
                return Err(self.not_ancestral(why));
            }
            if let Some(v) = self.ancestral_let(name) {
                return v;
            }
        }
        let node = self
            .data_node(name)
            .ok_or_else(|| self.internal(self.span(e), format!("`{name}` has no value")))?;
        self.g.label(node, name);
        self.globals.insert(name.to_string(), node);
        Ok(node)
    }

    /// A data value or size variable as a constant node.
    fn data_node(&mut self, name: &str) -> Option<NodeId> {
        let data = &self.model.data;
        if let Some(v) = data.get(name) {
            let (shape, values) = match v {
                Value::Int(i) => (Shape::Scalar, vec![*i as f64]),
                Value::Real(x) => (Shape::Scalar, vec![*x]),
                Value::Vector(v) => (Shape::Vector(v.len()), v.as_slice().to_vec()),
                Value::Matrix(m) => (Shape::Matrix(m.nrows(), m.ncols()), m.as_slice().to_vec()),
                Value::Ints(v) => (Shape::Vector(v.len()), v.iter().map(|&k| k as f64).collect()),
            };
            return Some(self.g.constant(shape, values));
        }
        data.size(name).map(|n| self.g.scalar(n as f64))
    }

    /// The values of an expression that must be data-only (conditions, indices, sizes).
    pub(crate) fn const_values(&mut self, e: &TExpr) -> Result<Vec<f64>, Diagnostic> {
        let node = self.expr(e)?;
        self.g.const_value(node).map(<[f64]>::to_vec).ok_or_else(|| {
            self.internal(
                self.span(e),
                "a value the checker marked as data depends on a parameter",
            )
        })
    }

    /// The whole value of the local `name` of scope `k`, assembled from its entries if it
    /// was updated entry by entry (then cached until the next update).
    fn read_local(&mut self, k: usize, name: &str, e: &TExpr) -> Result<NodeId, Diagnostic> {
        let (shape, entries) = match &self.scopes[k][name] {
            Local::Node(v) | Local::Entries { whole: Some(v), .. } => return Ok(*v),
            Local::Entries { shape, entries, .. } => (*shape, entries),
        };
        let span = self.span(e);
        let v = self
            .g
            .assemble(shape, entries)
            .map_err(|err| self.internal(span, err))?;
        self.g.label(v, name);
        if let Some(Local::Entries { whole, .. }) = self.scopes[k].get_mut(name) {
            *whole = Some(v);
        }
        Ok(v)
    }

    /// The entries of a local kept entry by entry ([`Local::Entries`]), if `name` is one.
    pub(crate) fn local_entries(&self, name: &str) -> Option<&[(NodeId, u32)]> {
        match self.scopes.iter().rev().find_map(|s| s.get(name))? {
            Local::Entries { entries, .. } => Some(entries),
            Local::Node(_) => None,
        }
    }

    /// The local `name` where it was declared, or None for any other name.
    pub(crate) fn local_mut(&mut self, name: &str) -> Option<&mut Local> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    /// Bind a new local in the innermost scope.
    pub(crate) fn bind_local(&mut self, name: &str, node: NodeId) {
        self.scopes
            .last_mut()
            .expect("the scope stack always holds one scope")
            .insert(name.to_string(), Local::Node(node));
    }

    /// Rebind an existing local where it was declared (after an update).
    pub(crate) fn rebind_local(&mut self, name: &str, value: Local) {
        match self.scopes.iter_mut().rev().find(|s| s.contains_key(name)) {
            Some(scope) => {
                scope.insert(name.to_string(), value);
            }
            None => {
                self.scopes
                    .last_mut()
                    .expect("the scope stack always holds one scope")
                    .insert(name.to_string(), value);
            }
        }
    }
}

/// [`prune`], then each run of identical loop iterations as one scan node
/// ([`super::scan::compress`]), and a scan of independent scalar steps as vector
/// operations over the steps ([`super::vectorise`]).
fn finish(
    g: Graph,
    loops: Vec<Vec<usize>>,
    params: Vec<ParamInfo>,
    hypers: Vec<ParamInfo>,
    reported: Vec<ParamInfo>,
) -> (Graph, Vec<ParamInfo>, Vec<ParamInfo>, Vec<ParamInfo>) {
    // a loop boundary moves to the number of kept nodes before it
    let mut before = Vec::with_capacity(g.nodes.len() + 1);
    let live = live_nodes(&g, params.iter().chain(&hypers).chain(&reported).map(|p| p.value));
    // (the loop bounds need the kept nodes before `prune_live` renumbers them)
    let mut count = 0;
    for &l in &live {
        before.push(count);
        count += usize::from(l);
    }
    before.push(count);
    let loops = loops
        .into_iter()
        .map(|b| b.into_iter().map(|x| before[x]).collect())
        .collect();
    let (g, mut params, mut hypers, mut reported) = prune_live(g, &live, params, hypers, reported);
    let mut roots: Vec<NodeId> = params
        .iter()
        .chain(&hypers)
        .chain(&reported)
        .map(|p| p.value)
        .collect();
    let g = super::scan::compress(g, loops, &mut roots);
    let vectorised = super::vectorise::vectorise(&g, &mut roots);
    for (p, r) in params
        .iter_mut()
        .chain(&mut hypers)
        .chain(&mut reported)
        .zip(roots)
    {
        p.value = r;
    }
    match vectorised {
        // the replaced scans' leftovers go
        Some(g) => prune(g, params, hypers, reported),
        None => (g, params, hypers, reported),
    }
}

/// Per node: whether [`prune`] keeps it (a target term, a pointwise output, one of
/// `roots`, or an input of a kept node).
fn live_nodes(g: &Graph, roots: impl Iterator<Item = NodeId>) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let outputs = g.targets.iter().copied().chain(
        g.pointwise
            .iter()
            .flat_map(|p| std::iter::once(p.loglik).chain(p.quantity)),
    );
    for id in outputs.chain(roots) {
        live[id.0] = true;
    }
    for k in (0..g.nodes.len()).rev() {
        if live[k] {
            for i in super::build::inputs(&g.nodes[k].op) {
                live[i.0] = true;
            }
        }
    }
    live
}

/// Drop the nodes nothing needs (constants left over from folding, unused lets): a node is
/// kept when it is a target term, a pointwise output, a declared value, or an input of a kept
/// node. Node ids are renumbered in order, so the graph stays topologically sorted.
pub(super) fn prune(
    g: Graph,
    params: Vec<ParamInfo>,
    hypers: Vec<ParamInfo>,
    reported: Vec<ParamInfo>,
) -> (Graph, Vec<ParamInfo>, Vec<ParamInfo>, Vec<ParamInfo>) {
    let live = live_nodes(&g, params.iter().chain(&hypers).chain(&reported).map(|p| p.value));
    prune_live(g, &live, params, hypers, reported)
}

/// [`prune`] with the nodes to keep given ([`live_nodes`]).
fn prune_live(
    g: Graph,
    live: &[bool],
    params: Vec<ParamInfo>,
    hypers: Vec<ParamInfo>,
    reported: Vec<ParamInfo>,
) -> (Graph, Vec<ParamInfo>, Vec<ParamInfo>, Vec<ParamInfo>) {
    let mut map = vec![NodeId(usize::MAX); g.nodes.len()];
    let mut out = Graph::new(g.dim, g.theta_dim);
    out.unfused = g.unfused;
    let mut g = g;
    for (k, node) in std::mem::take(&mut g.nodes).into_iter().enumerate() {
        if live[k] {
            map[k] = out.push(remap(node.op, &map), node.shape);
        }
    }
    let m = |id: NodeId| map[id.0];
    out.targets = g.targets.iter().map(|&t| m(t)).collect();
    out.outputs_from(&g, m, |id| live[id.0].then(|| m(id)));
    let fix = |v: Vec<ParamInfo>| {
        v.into_iter()
            .map(|p| ParamInfo {
                value: m(p.value),
                ..p
            })
            .collect::<Vec<_>>()
    };
    (out, fix(params), fix(hypers), fix(reported))
}

/// An operation with its inputs renumbered.
fn remap(op: super::Op, map: &[NodeId]) -> super::Op {
    super::build::map_inputs(op, |id| map[id.0])
}

fn info(s: &Slot, c: Constraint, v: NodeId) -> ParamInfo {
    ParamInfo {
        name: s.name.clone(),
        offset: s.offset,
        shape: graph_shape(s.shape),
        constraint: c,
        structure: slots::structure(s),
        value: v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Op;

    #[test]
    fn transforms_map_to_their_bounds() {
        assert_eq!(constraint_of(Transform::Identity), Constraint::NONE);
        assert_eq!(constraint_of(Transform::Lower(1.0)), Constraint::lower(1.0));
        assert_eq!(constraint_of(Transform::Upper(2.0)).upper, Some(2.0));
        assert_eq!(
            constraint_of(Transform::LowerUpper(-1.0, 1.0)),
            Constraint::interval(-1.0, 1.0)
        );
        assert_eq!(graph_shape(TShape::Ints(4)), Shape::Vector(4));
        assert_eq!(graph_shape(TShape::Int), Shape::Scalar);
    }

    #[test]
    fn prune_drops_unused_nodes_and_renumbers_inputs() {
        let mut g = Graph::new(1, 0);
        let x = g.param_slice(0, Shape::Scalar, &Constraint::NONE).unwrap();
        let _unused = g.scalar(7.0);
        let e = g.unary(crate::graph::Fun1::Exp, x);
        g.label(e, "e");
        g.add_target(e).unwrap();
        let p = ParamInfo {
            name: "x".into(),
            offset: 0,
            shape: Shape::Scalar,
            constraint: Constraint::NONE,
            structure: None,
            value: x,
        };
        let (pruned, params, _, _) = prune(g, vec![p], Vec::new(), Vec::new());
        assert_eq!(pruned.nodes.len(), 2);
        assert!(matches!(pruned.nodes[1].op, Op::Unary(_, NodeId(0))));
        assert_eq!(pruned.targets, vec![NodeId(1)]);
        assert_eq!(params[0].value, NodeId(0));
        assert_eq!(pruned.label_of(NodeId(1)), Some("e"));
    }
}
