//! Lowering statements: `let`, updates of locals (whole or indexed), `~` (into the target, or
//! as a pointwise output in `predict`), `target +=`, unrolled `for` bodies and chosen `if`
//! branches.

use std::collections::HashMap;

use super::Lowerer;
use crate::check::{TExpr, TExprKind, TStmt};
use crate::diagnostic::Diagnostic;
use crate::dist;
use crate::graph::{Fun2, NodeId, GATHER_ZERO};
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
        match s {
            TStmt::Let { name, value } => {
                let v = self.expr(value)?;
                self.g.label(v, name);
                self.bind_local(name, v);
                Ok(())
            }
            TStmt::Assign { target, op, value } => self.assign(target, *op, value),
            TStmt::Tilde { lhs, dist, args } => self.tilde(lhs, dist, args),
            TStmt::Target(e) => {
                let v = self.expr(e)?;
                let v = if self.g.shape(v) == crate::graph::Shape::Scalar {
                    v
                } else {
                    self.g.sum(v)
                };
                self.wrap(e, |g| g.add_target(v).map(|()| v)).map(|_| ())
            }
            TStmt::For { iterations, .. } => iterations.iter().try_for_each(|body| self.block(body)),
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

    fn tilde(&mut self, lhs: &TExpr, name: &str, args: &[TExpr]) -> Result<(), Diagnostic> {
        let x = self.expr(lhs)?;
        let ps = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        self.check_outcome(name, lhs, x, &ps)?;
        if self.predict {
            let label = self
                .model
                .source
                .inner()
                .get(lhs.span.start as usize..lhs.span.end as usize)
                .unwrap_or(name)
                .to_string();
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

    /// `name = v`, `name[idx] op= v`: the local gets a new node; an indexed update keeps the
    /// other entries (a gather of the old value with zeros at the updated places, plus the
    /// new values gathered into those places).
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
        let old = self.name(&name, target)?;
        let v = self.expr(value)?;
        let old_shape = self.g.shape(old);
        let positions: Vec<u32> = match &idx {
            Some(i) => self.flat_positions(base_shape, i)?,
            None => (0..old_shape.size() as u32).collect(),
        };
        let tshape = super::graph_shape(target.shape);
        let f = match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(Fun2::Add),
            AssignOp::Sub => Some(Fun2::Sub),
            AssignOp::Mul => Some(Fun2::Mul),
            AssignOp::Div => Some(Fun2::Div),
        };
        let new_part = match f {
            None => v,
            Some(f) => {
                let current = if idx.is_none() {
                    old
                } else {
                    self.wrap(target, |g| g.gather_flat(old, positions.clone(), tshape))?
                };
                self.wrap(value, |g| g.binary(f, current, v))?
            }
        };
        if idx.is_none() && self.g.shape(new_part) == old_shape {
            self.g.label(new_part, &name);
            self.rebind_local(&name, new_part);
            return Ok(());
        }
        let scalar_part = self.g.shape(new_part).size() == 1;
        let mut keep: Vec<u32> = (0..old_shape.size() as u32).collect();
        let mut place = vec![GATHER_ZERO; old_shape.size()];
        for (j, &p) in positions.iter().enumerate() {
            keep[p as usize] = GATHER_ZERO;
            place[p as usize] = if scalar_part { 0 } else { j as u32 };
        }
        let updated = if keep.iter().all(|&k| k == GATHER_ZERO) {
            self.wrap(target, |g| g.gather_flat(new_part, place, old_shape))?
        } else {
            let kept = self.wrap(target, |g| g.gather_flat(old, keep, old_shape))?;
            let placed = self.wrap(target, |g| g.gather_flat(new_part, place, old_shape))?;
            self.wrap(target, |g| g.add_nodes(kept, placed))?
        };
        self.g.label(updated, &name);
        self.rebind_local(&name, updated);
        Ok(())
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
