//! Name resolution for user functions that are never called: their shapes are unknown
//! (they are checked per call site), but every name they read must be a parameter, one of
//! their `let`s or loop variables, and every call a known function.

use super::builtins;
use super::checker::Checker;
use super::dists;
use super::error::did_you_mean;
use super::SourceFn;
use crate::syntax::ast::{Expr, ExprKind, Index, Stmt};
use crate::syntax::span::Span;

impl Checker {
    /// Resolve the names of an uncalled function's body.
    pub(super) fn check_uncalled_fn(&mut self, f: &SourceFn) {
        let mut scope: Vec<String> = f.def.params.iter().map(|(p, _)| p.name.clone()).collect();
        for (_, ty) in &f.def.params {
            for s in &ty.sizes {
                if let ExprKind::Name(n) = &s.kind {
                    scope.push(n.clone());
                }
            }
        }
        let saved = self.src.clone();
        self.src = f.source.clone();
        self.names_in_stmts(&f.def.body, &mut scope);
        self.src = saved;
    }

    fn names_in_stmts(&mut self, stmts: &[Stmt], scope: &mut Vec<String>) {
        let depth = scope.len();
        for s in stmts {
            match s {
                Stmt::Let(l) => {
                    self.names_in_expr(&l.value, scope);
                    scope.push(l.name.name.clone());
                }
                Stmt::Assign { target, value, .. } => {
                    self.names_in_expr(target, scope);
                    self.names_in_expr(value, scope);
                }
                Stmt::Return { value, .. } | Stmt::Target { value, .. } => self.names_in_expr(value, scope),
                Stmt::Tilde { lhs, args, trunc, .. } => {
                    self.names_in_expr(lhs, scope);
                    args.iter().for_each(|a| self.names_in_expr(a, scope));
                    let bounds = trunc.iter().flat_map(|t| t.lower.iter().chain(&t.upper));
                    bounds.for_each(|b| self.names_in_expr(b, scope));
                }
                Stmt::For {
                    var, lo, hi, body, ..
                } => {
                    self.names_in_expr(lo, scope);
                    self.names_in_expr(hi, scope);
                    scope.push(var.name.clone());
                    self.names_in_stmts(body, scope);
                    scope.pop();
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                    ..
                } => {
                    self.names_in_expr(cond, scope);
                    self.names_in_stmts(then, scope);
                    self.names_in_stmts(otherwise, scope);
                }
            }
        }
        scope.truncate(depth);
    }

    fn names_in_expr(&mut self, e: &Expr, scope: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(n) if !scope.contains(n) => self.unresolved(n, e.span, scope),
            ExprKind::Array(xs) => xs.iter().for_each(|x| self.names_in_expr(x, scope)),
            ExprKind::Unary(_, x) | ExprKind::Transpose(x) => self.names_in_expr(x, scope),
            ExprKind::Binary(_, a, b) => {
                self.names_in_expr(a, scope);
                self.names_in_expr(b, scope);
            }
            ExprKind::Ternary(c, a, b) => {
                for x in [c, a, b] {
                    self.names_in_expr(x, scope);
                }
            }
            ExprKind::Call { func, args, .. } => {
                let known = builtins::is_builtin(&func.name)
                    || self.fns.iter().any(|f| f.def.name.name == func.name)
                    || dists::split_form(&func.name).is_some_and(|(b, _, _)| dists::lookup(b).is_some());
                if !known {
                    let d = self
                        .diag(
                            "mvi::check::unknown_function",
                            format!("unknown function `{}`", func.name),
                        )
                        .with_label(func.span, "not defined");
                    self.errors.push(d);
                }
                args.iter().for_each(|a| self.names_in_expr(a, scope));
            }
            ExprKind::Index(b, idx) => {
                self.names_in_expr(b, scope);
                for i in idx {
                    match i {
                        Index::At(x) => self.names_in_expr(x, scope),
                        Index::Range { lo, hi, .. } => {
                            for x in [lo, hi].into_iter().flatten() {
                                self.names_in_expr(x, scope);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn unresolved(&mut self, n: &str, span: Span, scope: &[String]) {
        let msg = if self.globals.contains_key(n) {
            format!("a function may not read `{n}`: it is not one of its arguments")
        } else {
            format!("unknown name `{n}`")
        };
        let mut d = self
            .diag("mvi::check::unknown_name", msg)
            .with_label(span, "not an argument or local of this function");
        if let Some(h) = did_you_mean(n, scope.iter().map(String::as_str)) {
            d = d.with_help(h);
        }
        self.errors.push(d);
    }
}
