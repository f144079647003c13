//! The prior by ancestral sampling: the `model` block read as a generative program, each
//! parameter drawn from its own `~` once everything that `~` reads has been drawn.
//!
//! Input: a checked model. Output: a graph of `Op::Rng` draws whose outputs are the
//! parameters' values (constrained scale, declaration order), or why the prior cannot be
//! drawn that way (then `mvi run --prior` samples the prior with `nuts`).
//!
//! The draws are exact draws of the prior the log joint defines when every parameter entry
//! is the outcome of exactly one `~` on parameters, whose arguments read only data, hypers
//! and parameters already drawn, and there is no other term on parameters (`target +=`).
//! A parameter with constant bounds is drawn from its `~` truncated to them (Stan's density
//! on a bounded parameter is its family restricted to the bounds); one with bounds that
//! depend on other parameters is not (the restriction would reweight those parameters).
//! A constrained type is drawn only from the family defined on it (`simplex` from
//! `dirichlet`, `cholesky_corr` from `lkj_corr_cholesky`, `corr_matrix` from `lkj_corr`,
//! `cov_matrix` from `wishart` or `inv_wishart`).

use std::collections::HashMap;

use super::{finish_generated, graph_shape, Lowerer};
use crate::check::{NameKind, Stage, TExpr, TExprKind, TStmt, Transform, TypedModel};
use crate::diagnostic::Diagnostic;
use crate::graph::generate::Generated;
use crate::graph::{NodeId, RngDraw};
use crate::syntax::ast::TypeKind;

/// What ancestral sampling has drawn so far, and why it stopped if it did.
#[derive(Debug, Default)]
pub(crate) struct Draws {
    /// Per parameter, the node and entry of each of its entries drawn so far (column-major).
    entries: HashMap<String, Vec<Option<(NodeId, u32)>>>,
    /// Why the prior cannot be drawn ancestrally, once found.
    why: Option<String>,
}

/// The prior's parameters drawn ancestrally: a graph whose outputs are the parameters in
/// declaration order; `Ok(Err(why))` when the model's prior is not of that form.
///
/// # Errors
/// As [`super::lower_model`].
pub fn lower_ancestral(model: &TypedModel) -> Result<Result<Generated, String>, Diagnostic> {
    let mut l = Lowerer::new(model, false);
    l.ancestral = Some(Draws::default());
    let lowered = l
        .declare_slots()
        .and_then(|_| l.lower_lets())
        .and_then(|()| l.block(&model.model));
    let why = l.ancestral.as_mut().and_then(|a| a.why.take());
    match (lowered, why) {
        (_, Some(why)) => return Ok(Err(why)),
        (Err(d), None) => return Err(d),
        (Ok(()), None) => {}
    }
    let mut outputs = Vec::new();
    for p in &model.params {
        match l.globals.get(&p.name) {
            Some(&v) => outputs.push((p.name.clone(), v)),
            None => {
                let partly = l
                    .ancestral
                    .as_ref()
                    .is_some_and(|a| a.entries.contains_key(&p.name));
                return Ok(Err(if partly {
                    format!("some entries of `{}` are not the outcome of a `~`", p.name)
                } else {
                    format!(
                        "`{}` is not the outcome of a `~` (its prior is flat, or given by `target +=`)",
                        p.name
                    )
                }));
            }
        }
    }
    Ok(Ok(finish_generated(l.g, outputs)))
}

/// Whether `s` has a `~` whose outcome is the parameter `name` or one of its entries.
pub(crate) fn draws(s: &TStmt, name: &str) -> bool {
    match s {
        TStmt::Tilde { lhs, .. } => match &lhs.kind {
            TExprKind::Name(n, NameKind::Param) => n == name,
            TExprKind::Index(b, _) => matches!(&b.kind, TExprKind::Name(n, NameKind::Param) if n == name),
            _ => false,
        },
        TStmt::For { iterations, .. } => iterations.iter().flatten().any(|s| draws(s, name)),
        TStmt::If { then, otherwise, .. } => then.iter().chain(otherwise).any(|s| draws(s, name)),
        _ => false,
    }
}

/// The family a constrained type may be drawn from.
fn draws_type(kind: TypeKind, dist: &str) -> bool {
    matches!(
        (kind, dist),
        (TypeKind::Simplex, "dirichlet")
            | (TypeKind::CholeskyCorr, "lkj_corr_cholesky")
            | (TypeKind::CorrMatrix, "lkj_corr")
            | (TypeKind::CovMatrix, "wishart" | "inv_wishart")
    )
}

impl Lowerer<'_> {
    /// Stop ancestral sampling: record why and return an error that unwinds the lowering.
    pub(crate) fn not_ancestral(&mut self, why: String) -> Diagnostic {
        if let Some(a) = self.ancestral.as_mut() {
            a.why.get_or_insert(why);
        }
        Diagnostic::plain(
            "mvi::prior::not_ancestral",
            "the prior cannot be drawn ancestrally",
        )
    }

    /// The value of a top-level `let` on parameters, built when first read (the parameters it
    /// reads must have been drawn by then).
    pub(crate) fn ancestral_let(&mut self, name: &str) -> Option<Result<NodeId, Diagnostic>> {
        let (_, e) = self.model.lets.iter().find(|(n, _)| n == name)?;
        let scopes = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        let call_site = self.call_site.take();
        let v = self.expr(e);
        self.scopes = scopes;
        self.call_site = call_site;
        Some(v.inspect(|&v| {
            self.g.label(v, name);
            self.globals.insert(name.to_string(), v);
        }))
    }

    /// A statement of `model` read as a draw: a `~` on a parameter draws it, a `~` or
    /// `target +=` on data (the likelihood) is left out, any other term stops the reading.
    pub(crate) fn ancestral_stmt(&mut self, s: &TStmt) -> Result<bool, Diagnostic> {
        match s {
            TStmt::Tilde { lhs, .. } if lhs.stage != Stage::Param => Ok(true),
            TStmt::Tilde {
                lhs,
                dist,
                args,
                trunc,
            } => {
                if trunc.is_some() {
                    return Err(
                        self.not_ancestral(format!("`{}` has a truncated `~`", self.source_text(lhs, dist)))
                    );
                }
                self.ancestral_draw(lhs, dist, args)?;
                Ok(true)
            }
            TStmt::Target(e) if e.stage != Stage::Param || e.scores_data() => Ok(true),
            TStmt::Target(e) => {
                let text = self.source_text(e, "…");
                Err(self.not_ancestral(format!("`target += {text}` adds a term on parameters")))
            }
            _ => Ok(false),
        }
    }

    /// `p ~ dist(args)` or `p[i] ~ dist(args)` on a parameter not drawn yet.
    fn ancestral_draw(&mut self, lhs: &TExpr, dist: &str, args: &[TExpr]) -> Result<(), Diagnostic> {
        let text = self.source_text(lhs, dist);
        let (name, index) = match &lhs.kind {
            TExprKind::Name(n, NameKind::Param) => (n, None),
            TExprKind::Index(b, idx) => match &b.kind {
                TExprKind::Name(n, NameKind::Param) => (n, Some((b.shape, idx))),
                _ => {
                    return Err(
                        self.not_ancestral(format!("`{text} ~ …` is a `~` on an expression of parameters"))
                    )
                }
            },
            _ => {
                return Err(
                    self.not_ancestral(format!("`{text} ~ …` is a `~` on an expression of parameters"))
                )
            }
        };
        let slot = self
            .model
            .params
            .iter()
            .find(|p| p.name == *name)
            .expect("a name of kind Param is a declared parameter");
        let (lower, upper) = match slot.transform {
            Transform::Identity => (None, None),
            Transform::Lower(a) => (Some(a), None),
            Transform::Upper(b) => (None, Some(b)),
            Transform::LowerUpper(a, b) => (Some(a), Some(b)),
            Transform::Type(kind) if index.is_none() && draws_type(kind, dist) => (None, None),
            Transform::Type(kind) => {
                return Err(self.not_ancestral(format!(
                    "`{name}` is a `{}` drawn by `{text} ~ {dist}(…)`, not from a family on that type",
                    kind.name()
                )))
            }
            _ => return Err(self.not_ancestral(format!("the bounds of `{name}` depend on other parameters"))),
        };
        let bounded = lower.is_some() || upper.is_some();
        if bounded && !crate::check::dists::lookup(dist).is_some_and(|s| s.has_cdf()) {
            return Err(self.not_ancestral(format!(
                "`{name}` is bounded and `{dist}` has no CDF to draw it within its bounds"
            )));
        }
        let size = graph_shape(slot.shape).size();
        let positions: Vec<u32> = match index {
            Some((shape, idx)) => self.flat_positions(shape, idx)?,
            None => (0..size as u32).collect(),
        };
        let taken = self
            .ancestral
            .as_ref()
            .and_then(|a| a.entries.get(name.as_str()))
            .is_some_and(|e| positions.iter().any(|&p| e[p as usize].is_some()));
        if taken {
            return Err(self.not_ancestral(format!("`{text}` is the outcome of more than one `~`")));
        }
        let ps = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        let bounds = (lower.map(|a| self.g.scalar(a)), upper.map(|b| self.g.scalar(b)));
        let v = self.rng_node(lhs, dist, args, ps, bounds)?;
        let state = self.ancestral.as_mut().expect("an ancestral reading");
        let entries = state
            .entries
            .entry(name.clone())
            .or_insert_with(|| vec![None; size]);
        for (j, &p) in positions.iter().enumerate() {
            entries[p as usize] = Some((v, j as u32));
        }
        if entries.iter().all(Option::is_some) {
            let entries: Vec<(NodeId, u32)> = entries.iter().map(|e| e.expect("all drawn")).collect();
            let shape = graph_shape(slot.shape);
            let whole = self.wrap(lhs, |g| g.assemble(shape, &entries))?;
            self.g.label(whole, name);
            self.globals.insert(name.clone(), whole);
        }
        Ok(())
    }

    /// A draw of `dist(args)` shaped as the outcome `lhs` (repeating the call where one draw
    /// is a row of the outcome), truncated to `bounds` where given: the node of a replicate
    /// and of an ancestral draw.
    pub(crate) fn rng_node(
        &mut self,
        lhs: &TExpr,
        dist: &str,
        args: &[TExpr],
        ps: Vec<NodeId>,
        bounds: (Option<NodeId>, Option<NodeId>),
    ) -> Result<NodeId, Diagnostic> {
        let shape = graph_shape(lhs.shape);
        let Some(spec) = crate::check::dists::lookup(dist) else {
            return Err(self.internal(self.span(lhs), format!("`{dist}` is not a distribution")));
        };
        // one call's result: the outcome's shape, or one draw of a family whose outcome
        // repeats (a row of a matrix, an entry of `ints[N]`)
        let arg_shapes: Vec<(crate::check::Shape, Option<f64>)> =
            args.iter().map(|a| (a.shape, a.value)).collect();
        let each = crate::check::rng::rng_shape(spec, &arg_shapes)
            .map_or(shape.size(), |s| graph_shape(s).size())
            .min(shape.size());
        if each == 0 || !shape.size().is_multiple_of(each) {
            return Err(self.internal(self.span(lhs), "a draw that does not tile its outcome"));
        }
        let mut ids = ps;
        ids.extend(bounds.0);
        ids.extend(bounds.1);
        let draw = RngDraw {
            dist: spec.name,
            ids,
            lower: bounds.0.is_some(),
            upper: bounds.1.is_some(),
            each,
        };
        Ok(self.g.rng(draw, shape))
    }
}
