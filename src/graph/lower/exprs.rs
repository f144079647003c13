//! Lowering typed expressions to graph nodes: names, literals, operators, indexing, ternaries
//! and inlined user functions (built-in calls and distributions are in `calls.rs`).

use std::collections::HashMap;

use super::{graph_shape, Lowerer};
use crate::check::Shape as TShape;
use crate::check::{TBinOp, TExpr, TExprKind, TIndex};
use crate::diagnostic::Diagnostic;
use crate::graph::{Fun2, Fun3, Logic, NodeId, Shape};
use crate::syntax::ast::UnOp;

type R = Result<NodeId, Diagnostic>;

impl Lowerer<'_> {
    /// Lower one expression.
    pub(crate) fn expr(&mut self, e: &TExpr) -> R {
        match &e.kind {
            TExprKind::Int(i) => Ok(self.g.scalar(*i as f64)),
            TExprKind::Real(x) => Ok(self.g.scalar(*x)),
            TExprKind::Name(n, _) => self.name(n, e),
            TExprKind::Vector(items) => {
                let ids = items
                    .iter()
                    .map(|x| self.expr(x))
                    .collect::<Result<Vec<_>, _>>()?;
                self.wrap(e, |g| g.pack(Shape::Vector(ids.len()), ids.clone()))
            }
            TExprKind::Matrix(rows) => self.matrix_literal(e, rows),
            TExprKind::Unary(UnOp::Neg, x) => {
                let a = self.expr(x)?;
                Ok(self.g.neg(a))
            }
            TExprKind::Unary(UnOp::Not, x) if x.stage != crate::check::Stage::Const => {
                // varies by draw (`generated`): x == 0
                let a = self.expr(x)?;
                let zero = self.g.scalar(0.0);
                self.wrap(e, |g| g.binary(Fun2::Logic(Logic::Eq), a, zero))
            }
            TExprKind::Unary(UnOp::Not, x) => {
                let v = self.const_values(x)?;
                let out = v.iter().map(|&x| if x == 0.0 { 1.0 } else { 0.0 }).collect();
                Ok(self.g.constant(graph_shape(e.shape), out))
            }
            TExprKind::Binary(op, a, b) => self.binary(e, *op, a, b),
            TExprKind::Transpose(x) => {
                let a = self.expr(x)?;
                Ok(self.g.transpose(a))
            }
            TExprKind::Ternary(c, a, b) if c.stage != crate::check::Stage::Const => {
                // varies by draw (`generated`): both branches, one taken per draw
                let (c, x, y) = (self.expr(c)?, self.expr(a)?, self.expr(b)?);
                self.wrap(e, |g| g.ternary(Fun3::Select, [c, x, y]))
            }
            TExprKind::Ternary(c, a, b) => {
                let cond = self.condition(c)?;
                self.expr(if cond { a } else { b })
            }
            TExprKind::Rng { dist, args } => self.rng(e, dist, args),
            TExprKind::Call(name, args) => self.call(e, name, args),
            TExprKind::Dist { dist, form, args } => self.dist_expr(e, dist, *form, args),
            TExprKind::Inline {
                params, body, result, ..
            } => self.inline(e, params, body, result),
            TExprKind::Index(base, idx) => self.index(e, base, idx),
        }
    }

    /// Run a builder call, turning a graph error into a diagnostic at `e`.
    pub(crate) fn wrap(
        &mut self,
        e: &TExpr,
        f: impl FnOnce(&mut crate::graph::Graph) -> Result<NodeId, crate::graph::Error>,
    ) -> R {
        let span = self.span(e);
        f(&mut self.g).map_err(|err| self.internal(span, err))
    }

    /// A data condition (`if`, `? :`) as a bool.
    pub(crate) fn condition(&mut self, c: &TExpr) -> Result<bool, Diagnostic> {
        if let Some(v) = c.value {
            return Ok(v != 0.0);
        }
        Ok(self.const_values(c)?.first().is_some_and(|&v| v != 0.0))
    }

    fn matrix_literal(&mut self, e: &TExpr, rows: &[Vec<TExpr>]) -> R {
        let (r, c) = (rows.len(), rows.first().map_or(0, Vec::len));
        let mut ids = vec![NodeId(0); r * c];
        for (i, row) in rows.iter().enumerate() {
            for (j, x) in row.iter().enumerate() {
                ids[i + j * r] = self.expr(x)?;
            }
        }
        self.wrap(e, |g| g.pack(Shape::Matrix(r, c), ids))
    }

    fn binary(&mut self, e: &TExpr, op: TBinOp, a: &TExpr, b: &TExpr) -> R {
        let (x, y) = (self.expr(a)?, self.expr(b)?);
        let f = match op {
            TBinOp::Add => Fun2::Add,
            TBinOp::Sub => Fun2::Sub,
            TBinOp::ScalarMul | TBinOp::ElemMul => Fun2::Mul,
            TBinOp::ElemDiv => Fun2::Div,
            TBinOp::Pow => Fun2::Pow,
            TBinOp::MatMul => return self.wrap(e, |g| g.matmul(x, y)),
            _ => return self.const_binary(e, op, x, y),
        };
        self.wrap(e, |g| g.binary(f, x, y))
    }

    /// Integer and logical operators: on data evaluated here, elementwise with broadcasting;
    /// on values that vary by draw (`generated`), a [`Fun2::Logic`] node.
    fn const_binary(&mut self, e: &TExpr, op: TBinOp, x: NodeId, y: NodeId) -> R {
        let span = self.span(e);
        let l = match op {
            TBinOp::Mod => Logic::Mod,
            TBinOp::IntDiv => Logic::IntDiv,
            TBinOp::Lt => Logic::Lt,
            TBinOp::Le => Logic::Le,
            TBinOp::Gt => Logic::Gt,
            TBinOp::Ge => Logic::Ge,
            TBinOp::Eq => Logic::Eq,
            TBinOp::Ne => Logic::Ne,
            TBinOp::And => Logic::And,
            TBinOp::Or => Logic::Or,
            _ => return Err(self.internal(span, "an arithmetic operator taken for a logical one")),
        };
        let (Some(a), Some(b)) = (
            self.g.const_value(x).map(<[f64]>::to_vec),
            self.g.const_value(y).map(<[f64]>::to_vec),
        ) else {
            return self.wrap(e, |g| g.binary(Fun2::Logic(l), x, y));
        };
        let n = a.len().max(b.len());
        let pick = |v: &[f64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
        let out: Vec<f64> = (0..n).map(|i| l.apply(pick(&a, i), pick(&b, i))).collect();
        let shape = graph_shape(e.shape);
        if out.len() != shape.size() {
            return Err(self.internal(span, "operand sizes do not match"));
        }
        Ok(self.g.constant(shape, out))
    }

    fn inline(
        &mut self,
        e: &TExpr,
        params: &[(String, TExpr)],
        body: &[crate::check::TStmt],
        result: &TExpr,
    ) -> R {
        let mut scope = HashMap::new();
        for (name, arg) in params {
            scope.insert(name.clone(), super::Local::Node(self.expr(arg)?));
        }
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![scope]);
        let saved_site = self.call_site;
        self.call_site = Some(self.call_site.unwrap_or(e.span));
        let out = self.stmts(body).and_then(|()| self.expr(result));
        self.scopes = saved_scopes;
        self.call_site = saved_site;
        out
    }

    /// `x[i]`, `x[a:b]`, `x[idx]`, `M[i, j]`, `M[:, a:b]`, ...: one gather.
    fn index(&mut self, e: &TExpr, base: &TExpr, idx: &[TIndex]) -> R {
        if let TExprKind::Name(n, _) = &base.kind {
            if self.local_entries(n).is_some() {
                // a local kept entry by entry: the selected entries only, O(1) each
                let flat = self.flat_positions(base.shape, idx)?;
                let entries = self.local_entries(n).expect("checked just above");
                let picked: Option<Vec<(NodeId, u32)>> =
                    flat.iter().map(|&p| entries.get(p as usize).copied()).collect();
                let size = entries.len();
                let Some(picked) = picked else {
                    let bad = flat.iter().find(|&&p| p as usize >= size).copied().unwrap_or(0);
                    let err = crate::graph::Error::Index {
                        index: i64::from(bad) + 1,
                        size,
                    };
                    return Err(self.internal(self.span(e), err));
                };
                let shape = graph_shape(e.shape);
                return self.wrap(e, |g| g.assemble(shape, &picked));
            }
        }
        let b = self.expr(base)?;
        let flat = self.flat_positions(base.shape, idx)?;
        let shape = graph_shape(e.shape);
        self.wrap(e, |g| g.gather_flat(b, flat, shape))
    }

    /// The 0-based column-major positions an index selects, in the order of the result.
    pub(crate) fn flat_positions(&mut self, base: TShape, idx: &[TIndex]) -> Result<Vec<u32>, Diagnostic> {
        let (rows, cols) = match base {
            TShape::Matrix(r, c) => (r, c),
            s => (s.len(), 1),
        };
        let rs = match idx.first() {
            Some(i) => self.positions(i)?,
            None => (0..rows).collect(),
        };
        let cs = match (base, idx.get(1)) {
            (TShape::Matrix(..), Some(i)) => self.positions(i)?,
            _ => (0..cols).collect(),
        };
        let mut out = Vec::with_capacity(rs.len() * cs.len());
        for &c in &cs {
            for &r in &rs {
                out.push((r + c * rows) as u32);
            }
        }
        Ok(out)
    }

    /// The 0-based positions of one index along its dimension.
    fn positions(&mut self, i: &TIndex) -> Result<Vec<usize>, Diagnostic> {
        Ok(match i {
            TIndex::At(e) => {
                let v = match e.value {
                    Some(v) => v,
                    None => self.const_values(e)?.first().copied().unwrap_or(0.0),
                };
                vec![(v as usize).saturating_sub(1)]
            }
            TIndex::Range { lo, hi } => (*lo..=*hi).map(|k| k - 1).collect(),
            TIndex::Gather(e) => self
                .const_values(e)?
                .iter()
                .map(|&v| (v as usize).saturating_sub(1))
                .collect(),
        })
    }
}
