//! Lowering statements: `let`, updates of locals (whole or indexed), `~` (into the target, or
//! as a pointwise output in `predict`), `target +=`, unrolled `for` bodies and chosen `if`
//! branches.

use std::collections::HashMap;

use super::{Local, Lowerer};
use crate::check::{TExpr, TExprKind, TStmt};
use crate::diagnostic::Diagnostic;
use crate::dist;
use crate::graph::{Fun2, NodeId, Shape};
use crate::syntax::ast::AssignOp;

impl Lowerer<'_> {
    /// Lower a block's statements in a new scope.
    pub(crate) fn block(&mut self, stmts: &[TStmt]) -> Result<(), Diagnostic> {
        self.scopes.push(HashMap::new());
        let out = self.stmts(stmts);
        self.scopes.pop();
        out
    }

    /// Lower statements in the current scope.
    pub(crate) fn stmts(&mut self, stmts: &[TStmt]) -> Result<(), Diagnostic> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &TStmt) -> Result<(), Diagnostic> {
        let site = match s {
            TStmt::Tilde { lhs, .. } => Some(self.span(lhs)),
            TStmt::Target(e) => Some(self.span(e)),
            _ => None,
        };
        let before = self.g.targets.len();
        self.stmt_terms(s)?;
        if let Some(span) = site {
            let new: Vec<NodeId> = self.g.targets[before..].to_vec();
            self.g.target_sites.extend(new.into_iter().map(|t| (t, span)));
        }
        Ok(())
    }

    fn stmt_terms(&mut self, s: &TStmt) -> Result<(), Diagnostic> {
        if self.ancestral.is_some() && self.ancestral_stmt(s)? {
            return Ok(());
        }
        match s {
            TStmt::Let { name, value } => {
                let v = self.expr(value)?;
                self.g.label(v, name);
                self.bind_local(name, v);
                Ok(())
            }
            TStmt::Assign { target, op, value } => self.assign(target, *op, value),
            TStmt::Tilde { lhs, .. } if self.prior_only && lhs.stage == crate::check::Stage::Const => Ok(()),
            TStmt::Tilde {
                lhs,
                dist,
                args,
                trunc,
            } => self.tilde(lhs, dist, args, trunc.as_ref()),
            // `target += dist_lpdf(y | …)` with data y is an observation, as `y ~ dist(…)`
            TStmt::Target(e) if self.observations.is_some() => match &e.kind {
                TExprKind::Dist {
                    dist,
                    form: crate::check::DistForm::Lpdf,
                    args,
                } if e.scores_data() => self.observed_tilde(&args[0], dist, &args[1..], None),
                _ => Ok(()),
            },
            TStmt::Target(e) if self.prior_only && e.scores_data() => Ok(()),
            TStmt::Target(e) => {
                let v = self.expr(e)?;
                let v = if self.g.shape(v) == crate::graph::Shape::Scalar {
                    v
                } else {
                    self.g.sum(v)
                };
                self.wrap(e, |g| g.add_target(v).map(|()| v)).map(|_| ())
            }
            TStmt::For { iterations, .. } => {
                // where each iteration's nodes start, for `graph::scan::compress`
                let mut bounds = Vec::with_capacity(iterations.len() + 1);
                for body in iterations {
                    bounds.push(self.g.nodes.len());
                    self.block(body)?;
                }
                bounds.push(self.g.nodes.len());
                self.loops.push(bounds);
                Ok(())
            }
            TStmt::If {
                cond,
                then,
                otherwise,
            } if cond.stage != crate::check::Stage::Const => self.select_branches(cond, then, otherwise),
            TStmt::If {
                cond,
                then,
                otherwise,
            } => {
                let branch = if self.condition(cond)? { then } else { otherwise };
                self.block(branch)
            }
        }
    }

    /// `if` on a condition that varies by draw (`generated`): both branches are lowered, and
    /// every local either one changes becomes `cond ? then-value : else-value`, entry by
    /// entry per draw.
    fn select_branches(
        &mut self,
        cond: &TExpr,
        then: &[TStmt],
        otherwise: &[TStmt],
    ) -> Result<(), Diagnostic> {
        let c = self.expr(cond)?;
        let before = self.scopes.clone();
        self.block(then)?;
        let after_then = std::mem::replace(&mut self.scopes, before);
        self.block(otherwise)?;
        let mut merged = std::mem::take(&mut self.scopes);
        for (k, scope) in merged.iter_mut().enumerate() {
            let names: Vec<String> = scope.keys().cloned().collect();
            for name in names {
                let t = after_then[k][&name].clone();
                let o = scope[&name].clone();
                if same_local(&t, &o) {
                    continue;
                }
                let x = self.whole(&t, cond)?;
                let y = self.whole(&o, cond)?;
                let v = self.wrap(cond, |g| g.ternary(crate::graph::Fun3::Select, [c, x, y]))?;
                self.g.label(v, &name);
                scope.insert(name, Local::Node(v));
            }
        }
        self.scopes = merged;
        Ok(())
    }

    /// The node of a local's whole value (assembled when kept entry by entry).
    fn whole(&mut self, l: &Local, at: &TExpr) -> Result<NodeId, Diagnostic> {
        match l {
            Local::Node(v) | Local::Entries { whole: Some(v), .. } => Ok(*v),
            Local::Entries { shape, entries, .. } => {
                let (shape, entries) = (*shape, entries.clone());
                self.wrap(at, |g| g.assemble(shape, &entries))
            }
        }
    }

    fn tilde(
        &mut self,
        lhs: &TExpr,
        name: &str,
        args: &[TExpr],
        trunc: Option<&(Option<TExpr>, Option<TExpr>)>,
    ) -> Result<(), Diagnostic> {
        if self.observations.is_some() {
            return self.observed_tilde(lhs, name, args, trunc);
        }
        let x = self.expr(lhs)?;
        let ps = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        self.check_outcome(name, lhs, x, &ps)?;
        if let Some((lo, hi)) = trunc {
            let lo = lo.as_ref().map(|e| self.expr(e)).transpose()?;
            let hi = hi.as_ref().map(|e| self.expr(e)).transpose()?;
            self.check_within_truncation(lhs, x, lo, hi)?;
            return self.truncated_tilde(lhs, name, x, &ps, (lo, hi));
        }
        if self.predict {
            let label = self.source_text(lhs, name);
            let ll = self.wrap(lhs, |g| dist::pointwise(g, name, x, &ps))?;
            let q = self.wrap(lhs, |g| dist::quantity(g, name, x, &ps))?;
            self.g.add_pointwise(&label, ll, Some(q));
            let observed = observed_outcomes(&self.g, name, x, q);
            self.g.observe_last(observed);
            return Ok(());
        }
        self.wrap(lhs, |g| dist::tilde(g, name, x, &ps).map(|()| x))
            .map(|_| ())
    }

    /// `x ~ dist(args) T[lo, hi]`: the renormalised density into the target, or in `predict`
    /// per observation.
    fn truncated_tilde(
        &mut self,
        lhs: &TExpr,
        name: &str,
        x: NodeId,
        ps: &[NodeId],
        bounds: (Option<NodeId>, Option<NodeId>),
    ) -> Result<(), Diagnostic> {
        if self.predict {
            let label = self.source_text(lhs, name);
            let ll = self.wrap(lhs, |g| dist::truncated(g, name, x, ps, bounds, true))?;
            self.g.add_pointwise(&label, ll, None);
            return Ok(());
        }
        let lp = self.wrap(lhs, |g| dist::truncated(g, name, x, ps, bounds, false))?;
        self.wrap(lhs, |g| g.add_target(lp).map(|()| lp)).map(|_| ())
    }

    /// Data outside constant truncation bounds can never be fitted: a diagnostic at the
    /// outcome.
    fn check_within_truncation(
        &self,
        lhs: &TExpr,
        x: NodeId,
        lo: Option<NodeId>,
        hi: Option<NodeId>,
    ) -> Result<(), Diagnostic> {
        let Some(values) = self.g.const_value(x) else {
            return Ok(());
        };
        let bound = |b: Option<NodeId>, i: usize| {
            b.and_then(|b| self.g.const_value(b))
                .map(|v| if v.len() == 1 { v[0] } else { v[i] })
        };
        for (i, &y) in values.iter().enumerate() {
            let (l, u) = (bound(lo, i), bound(hi, i));
            if l.is_some_and(|l| y < l) || u.is_some_and(|u| y > u) {
                let show = |b: Option<f64>| b.map(|v| v.to_string()).unwrap_or_default();
                return Err(Diagnostic::error(
                    "mvi::lower::outside_truncation",
                    format!(
                        "outcome {y} (entry {}) is outside the truncation T[{}, {}]",
                        i + 1,
                        show(l),
                        show(u)
                    ),
                    self.model.source.clone(),
                )
                .with_label(self.span(lhs), "these data")
                .with_help("a truncated distribution has no density outside its bounds: check the data or widen the bounds"));
            }
        }
        Ok(())
    }

    /// `name = v`, `name[idx] op= v`: a whole update rebinds the local to a new node; an
    /// indexed update replaces only the updated entries of the local's entry list
    /// ([`Local::Entries`]), O(1) per entry, so a loop of T element updates costs O(T).
    fn assign(&mut self, target: &TExpr, op: AssignOp, value: &TExpr) -> Result<(), Diagnostic> {
        let (name, idx, base_shape) = match &target.kind {
            TExprKind::Name(n, _) => (n.clone(), None, target.shape),
            TExprKind::Index(b, idx) => match &b.kind {
                TExprKind::Name(n, _) => (n.clone(), Some(idx.clone()), b.shape),
                _ => {
                    return Err(self.internal(self.span(target), "an update of something other than a local"))
                }
            },
            _ => return Err(self.internal(self.span(target), "an update of something other than a local")),
        };
        let f = match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(Fun2::Add),
            AssignOp::Sub => Some(Fun2::Sub),
            AssignOp::Mul => Some(Fun2::Mul),
            AssignOp::Div => Some(Fun2::Div),
        };
        let Some(idx) = idx else {
            return self.assign_whole(&name, target, f, value);
        };
        let positions = self.flat_positions(base_shape, &idx)?;
        let v = self.expr(value)?;
        let shape = super::graph_shape(base_shape);
        let mut entries = self.entries_of(&name, target, shape)?;
        if let Some(&bad) = positions.iter().find(|&&p| p as usize >= entries.len()) {
            let err = crate::graph::Error::Index {
                index: i64::from(bad) + 1,
                size: entries.len(),
            };
            return Err(self.internal(self.span(target), err));
        }
        let new_part = match f {
            None => v,
            Some(f) => {
                let tshape = super::graph_shape(target.shape);
                let picked: Vec<(NodeId, u32)> = positions.iter().map(|&p| entries[p as usize]).collect();
                let current = self.wrap(target, |g| g.assemble(tshape, &picked))?;
                self.wrap(value, |g| g.binary(f, current, v))?
            }
        };
        let scalar_part = self.g.shape(new_part).size() == 1;
        for (j, &p) in positions.iter().enumerate() {
            entries[p as usize] = (new_part, if scalar_part { 0 } else { j as u32 });
        }
        self.rebind_local(
            &name,
            Local::Entries {
                shape,
                entries,
                whole: None,
            },
        );
        Ok(())
    }

    /// `name = v` or `name op= v` on the whole local.
    fn assign_whole(
        &mut self,
        name: &str,
        target: &TExpr,
        f: Option<Fun2>,
        value: &TExpr,
    ) -> Result<(), Diagnostic> {
        let old = self.name(name, target)?;
        let v = self.expr(value)?;
        let old_shape = self.g.shape(old);
        let new_part = match f {
            None => v,
            Some(f) => self.wrap(value, |g| g.binary(f, old, v))?,
        };
        let updated = if self.g.shape(new_part) == old_shape {
            new_part
        } else {
            // a scalar broadcast over the whole local
            let place = vec![0; old_shape.size()];
            self.wrap(target, |g| g.gather_flat(new_part, place, old_shape))?
        };
        self.g.label(updated, name);
        self.rebind_local(name, Local::Node(updated));
        Ok(())
    }

    /// The entries of the local `name` (of graph shape `shape`): its entry list when it is
    /// kept entry by entry, else every entry of its node.
    fn entries_of(
        &mut self,
        name: &str,
        target: &TExpr,
        shape: Shape,
    ) -> Result<Vec<(NodeId, u32)>, Diagnostic> {
        match self.local_mut(name) {
            Some(Local::Entries { entries, .. }) => Ok(std::mem::take(entries)),
            Some(Local::Node(v)) => {
                let v = *v;
                Ok((0..shape.size() as u32).map(|i| (v, i)).collect())
            }
            None => Err(self.internal(self.span(target), "an update of something other than a local")),
        }
    }
}

/// Whether two values of a local are the same nodes.
fn same_local(a: &Local, b: &Local) -> bool {
    match (a, b) {
        (Local::Node(x), Local::Node(y)) => x == y,
        (Local::Entries { entries: x, .. }, Local::Entries { entries: y, .. }) => x == y,
        _ => false,
    }
}

/// What a `predict` statement's data outcome allows comparing its prediction with.
fn observed_outcomes(
    g: &crate::graph::Graph,
    dist_name: &str,
    x: NodeId,
    q: NodeId,
) -> crate::graph::Observed {
    use crate::dist::registry::Outcome;
    use crate::graph::Observed;
    let (Some(values), Some(entry)) = (g.const_value(x), dist::lookup(dist_name)) else {
        return Observed::Other;
    };
    let ints = || values.iter().map(|v| v.round() as i64).collect::<Vec<i64>>();
    match entry.outcome {
        Outcome::Binary => Observed::Binary(ints()),
        // probabilities of each class are only built for `categorical_logit`
        Outcome::Category if dist_name != "categorical_logit" => Observed::Other,
        Outcome::Category => Observed::Categorical {
            y: ints(),
            k: g.shape(q).cols(),
        },
        Outcome::Count
            if dist_name.starts_with("binomial")
                || dist_name == "beta_binomial"
                || dist_name == "multinomial" =>
        {
            Observed::Other
        }
        Outcome::RealVector => Observed::Other,
        _ => Observed::Continuous(values.to_vec()),
    }
}
