//! Checking statements (`let`, updates, `~`, `target +=`, `for`, `if`) and inlining user
//! function calls.

use super::checker::{Checker, Ctx, Reported, Sym, R};
use super::dists;
use super::error::did_you_mean;
use super::exprs::describe_kind;
use super::shapes::broadcast;
use super::types::{NameKind, Shape, Stage, TExpr, TExprKind, TStmt};
use super::SourceFn;
use crate::syntax::ast::{BaseType, Expr, ExprKind, Ident, Stmt, Truncation};
use crate::syntax::span::Span;
use std::collections::HashMap;

/// Loops longer than this are refused (they unroll into the graph).
const MAX_LOOP_ITERATIONS: i64 = 1_000_000;

/// Total unrolled iterations allowed in one model (nested loops multiply).
const MAX_UNROLLED: i64 = 5_000_000;

impl Checker {
    /// Check statements in a new scope.
    pub(super) fn stmts(&mut self, stmts: &[Stmt]) -> Vec<TStmt> {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        for s in stmts {
            if let Ok(t) = self.stmt(s) {
                out.extend(t);
            }
        }
        self.scopes.pop();
        out
    }

    fn stmt(&mut self, s: &Stmt) -> R<Option<TStmt>> {
        match s {
            Stmt::Let(l) => self.let_stmt(&l.name, &l.value).map(Some),
            Stmt::Assign {
                target, op, value, ..
            } => self.assign(target, *op, value).map(Some),
            Stmt::Tilde {
                lhs,
                dist,
                args,
                trunc,
                span,
            } => self.tilde(lhs, dist, args, trunc.as_ref(), *span).map(Some),
            Stmt::Target { value, span } => self.target(value, *span).map(Some),
            Stmt::For {
                var, lo, hi, body, ..
            } => self.for_loop(var, lo, hi, body).map(Some),
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => self.if_stmt(cond, then, otherwise),
            Stmt::Return { span, .. } => self.fail(
                "mvi::check::misplaced_return",
                "`return` may only end a function body",
                *span,
                "here",
                "write `return` as the last statement of a `fn` body",
            ),
        }
    }

    /// A name may be declared once in the scopes visible here (and once at top level).
    fn check_new_name(&mut self, name: &Ident) -> R<()> {
        let existing = self.lookup(&name.name).cloned();
        if let Some(sym) = existing {
            let mut d = self
                .diag(
                    "mvi::check::redeclared",
                    format!(
                        "`{}` is already declared (a {})",
                        name.name,
                        describe_kind(sym.kind)
                    ),
                )
                .with_label(name.span, "declared again here");
            if sym.span != Span::default() && (self.ctx == Ctx::Func || matches!(sym.kind, NameKind::Local)) {
                d = d.with_label(sym.span, "first declared here");
            }
            return Err(self.report(
                d.with_help("choose a new name; to update a local, write `name = …` without `let`"),
            ));
        }
        Ok(())
    }

    fn let_stmt(&mut self, name: &Ident, value: &Expr) -> R<TStmt> {
        let v = self.expr(value).inspect_err(|_| {
            self.poisoned.insert(name.name.clone());
        })?;
        self.check_new_name(name)?;
        let sym = Sym {
            kind: NameKind::Local,
            shape: v.shape,
            stage: v.stage,
            value: v.value,
            span: name.span,
            mutable: true,
            loop_index: None,
        };
        self.scopes
            .last_mut()
            .expect("statements are checked inside a scope (Checker::stmts)")
            .insert(name.name.clone(), sym);
        Ok(TStmt::Let {
            name: name.name.clone(),
            value: v,
        })
    }

    fn root_name(e: &Expr) -> Option<(&str, Span)> {
        match &e.kind {
            ExprKind::Name(n) => Some((n.as_str(), e.span)),
            ExprKind::Index(b, _) => Self::root_name(b),
            _ => None,
        }
    }

    fn assign(&mut self, target: &Expr, op: crate::syntax::ast::AssignOp, value: &Expr) -> R<TStmt> {
        let Some((name, span)) = Self::root_name(target) else {
            return self.fail(
                "mvi::check::bad_assignment",
                "only a local variable (possibly indexed) can be assigned",
                target.span,
                "not a variable",
                "assign to a local made with `let` (`x = …`, `x[i] = …`); data and parameters cannot be changed",
            );
        };
        let Some(sym) = self.lookup(name).cloned() else {
            return Err(self.unknown_name(name, span));
        };
        if !sym.mutable {
            let why = match sym.kind {
                NameKind::Data | NameKind::Size => "data are read-only",
                NameKind::Param | NameKind::Hyper => "parameters change only through inference",
                NameKind::Global => "top-level `let`s are fixed definitions",
                NameKind::Local => "loop variables and function arguments cannot be assigned",
            };
            let d = self
                .diag(
                    "mvi::check::assign_read_only",
                    format!("cannot assign to `{name}`: {why}"),
                )
                .with_label(span, format!("a {}", describe_kind(sym.kind)))
                .with_help(format!("make a local copy: `let {name}2 = {name}`"));
            return Err(self.report(d));
        }
        let t = self.expr(target)?;
        let v = self.expr(value)?;
        let fits = broadcast(t.shape, v.shape).is_some_and(|s| s.to_real() == t.shape.to_real());
        if !fits {
            let d = self
                .diag(
                    "mvi::check::shape_mismatch",
                    format!("cannot assign {} to {}", v.shape, t.shape),
                )
                .with_label(v.span, format!("this is {}", v.shape))
                .with_label(t.span, format!("this is {}", t.shape))
                .with_help("the value must have the target's shape, or be a scalar");
            return Err(self.report(d));
        }
        self.update_local(name, &t, &v);
        Ok(TStmt::Assign {
            target: t,
            op,
            value: v,
        })
    }

    /// An update raises the local's stage and may promote it from int to real.
    fn update_local(&mut self, name: &str, t: &TExpr, v: &TExpr) {
        let base = self.fn_base.min(self.scopes.len());
        if let Some(sym) = self.scopes[base..].iter_mut().rev().find_map(|s| s.get_mut(name)) {
            sym.stage = sym.stage.max(v.stage);
            sym.value = None;
            if matches!(t.kind, TExprKind::Name(..)) && sym.shape.is_integer() && !v.shape.is_integer() {
                sym.shape = sym.shape.to_real();
            }
        }
    }

    fn tilde(
        &mut self,
        lhs: &Expr,
        dist: &Ident,
        args: &[Expr],
        trunc: Option<&Truncation>,
        span: Span,
    ) -> R<TStmt> {
        if self.ctx == Ctx::Func {
            return self.fail(
                "mvi::check::impure_function",
                "functions are pure: `~` is not allowed in a function body",
                span,
                "here",
                "return the log density from the function (e.g. `return normal_lpdf(x | mu, sigma)`) and add it in `model` with `target += f(…)`",
            );
        }
        if self.ctx == Ctx::Generated {
            return self.not_in_generated("`~`", span);
        }
        // A name (possibly indexed) must be something a `~` can score; any other expression
        // (`[z1, z2] ~ …`, `a + b ~ …`) is scored like a `let` of it: no Jacobian.
        match Self::root_name(lhs) {
            Some((name, nspan)) => {
                let Some(sym) = self.lookup(name).cloned() else {
                    return Err(self.unknown_name(name, nspan));
                };
                self.check_tilde_target(name, &sym, nspan)?;
            }
            None if self.ctx == Ctx::Predict => {
                return self.fail(
                    "mvi::check::bad_tilde",
                    "in `predict`, the left of `~` must be held-out data, possibly indexed",
                    lhs.span,
                    "not a name",
                    "write `y ~ …` or `y[i] ~ …` with `y` declared in `data`",
                );
            }
            None => {}
        }
        let Some(spec) = dists::lookup(&dist.name) else {
            let names = dists::DISTS.iter().map(|d| d.name);
            let help = did_you_mean(&dist.name, names).unwrap_or_else(|| {
                format!(
                    "known distributions: {}",
                    dists::DISTS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
                )
            });
            let d = self
                .diag(
                    "mvi::check::unknown_distribution",
                    format!("unknown distribution `{}`", dist.name),
                )
                .with_label(dist.span, "not a distribution")
                .with_help(help);
            return Err(self.report(d));
        };
        let l = self.expr(lhs);
        let targs: Vec<R<TExpr>> = args.iter().map(|a| self.expr(a)).collect();
        let l = l?;
        let targs: Vec<TExpr> = targs.into_iter().collect::<R<_>>()?;
        self.check_dist(spec, &l, &targs, span)?;
        let trunc = match trunc {
            Some(t) => Some(self.truncation(spec.name, &l, t)?),
            None => None,
        };
        Ok(TStmt::Tilde {
            lhs: l,
            dist: spec.name.to_string(),
            args: targs,
            trunc,
        })
    }

    /// `T[L, U]`: the family needs CDFs, each bound broadcasts with the outcome, and
    /// constant bounds must leave a non-empty interval.
    fn truncation(
        &mut self,
        dist: &str,
        outcome: &TExpr,
        t: &Truncation,
    ) -> R<(Option<TExpr>, Option<TExpr>)> {
        let Some(spec) = dists::lookup(dist).filter(|s| s.has_cdf()) else {
            let with = dists::WITH_CDF;
            let d = self
                .diag(
                    "mvi::check::bad_truncation",
                    format!("`{dist}` cannot be truncated: it has no CDF here"),
                )
                .with_label(t.span, "truncation")
                .with_help(format!(
                    "truncation `T[L, U]` works for the distributions with `_lcdf` and `_lccdf`: {}",
                    with.join(", ")
                ));
            return Err(self.report(d));
        };
        let lower = t.lower.as_ref().map(|e| self.expr(e)).transpose()?;
        let upper = t.upper.as_ref().map(|e| self.expr(e)).transpose()?;
        for b in lower.iter().chain(&upper) {
            if broadcast(outcome.shape, b.shape).is_none_or(|s| s.len() != outcome.shape.len()) {
                let d = self
                    .diag(
                        "mvi::check::bad_truncation",
                        format!(
                            "a truncation bound must be a scalar or match the outcome ({}), found {}",
                            outcome.shape, b.shape
                        ),
                    )
                    .with_label(b.span, "this bound")
                    .with_help(
                        "give one bound for every entry (a real) or one bound per entry of the outcome",
                    );
                return Err(self.report(d));
            }
        }
        // its CDFs are finite sums over the counts up to the bound (or from it)
        if dist == "beta_binomial" {
            if let Some(b) = lower.iter().chain(&upper).find(|b| b.stage != Stage::Const) {
                let d = self
                    .diag(
                        "mvi::check::bad_truncation",
                        "a truncation bound of `beta_binomial` must be data".to_string(),
                    )
                    .with_label(b.span, "depends on parameters")
                    .with_help(
                        "`beta_binomial` CDFs sum its probabilities up to the bound: use a number or data",
                    );
                return Err(self.report(d));
            }
        }
        let discrete = spec.discrete;
        if let (Some(l), Some(u)) = (&lower, &upper) {
            if let (Some(lv), Some(uv)) = (l.value, u.value) {
                if lv > uv || (lv >= uv && !discrete) {
                    let d = self
                        .diag(
                            "mvi::check::empty_truncation",
                            format!("the truncation T[{lv}, {uv}] leaves no values: its lower bound is not below its upper bound"),
                        )
                        .with_label(l.span, "lower bound")
                        .with_label(u.span, "upper bound")
                        .with_help("write the bounds in order, `T[lower, upper]`; leave one out for a one-sided truncation (`T[0, ]`)");
                    return Err(self.report(d));
                }
            }
        }
        Ok((lower, upper))
    }

    fn check_tilde_target(&mut self, name: &str, sym: &Sym, span: Span) -> R<()> {
        let ok = match self.ctx {
            Ctx::Predict => sym.kind == NameKind::Data,
            _ => sym.loop_index.is_none() && sym.kind != NameKind::Size,
        };
        if ok {
            return Ok(());
        }
        let (msg, help) = if self.ctx == Ctx::Predict {
            (
                format!(
                    "in `predict`, `~` scores held-out data, but `{name}` is a {}",
                    describe_kind(sym.kind)
                ),
                "declare the held-out values in `data` and put them on the left of `~`",
            )
        } else {
            (
                format!(
                    "`{name}` is a {} and cannot be on the left of `~`",
                    describe_kind(sym.kind)
                ),
                "put data, a param or a `let` on the left",
            )
        };
        let d = self
            .diag("mvi::check::bad_tilde", msg)
            .with_label(span, "here")
            .with_help(help);
        Err(self.report(d))
    }

    /// `~` and `target +=` change the log density, which `generated` cannot.
    fn not_in_generated(&mut self, what: &str, span: Span) -> R<TStmt> {
        self.fail(
            "mvi::check::density_in_generated",
            format!("{what} is not allowed in `generated`, which runs after the fit"),
            span,
            "here",
            "`generated` computes quantities from each posterior draw: draw replicated data with \
             `let y_rep = normal_rng(mu, sigma)`, and put `~` and `target +=` in `model`",
        )
    }

    fn target(&mut self, value: &Expr, span: Span) -> R<TStmt> {
        if self.ctx == Ctx::Generated {
            return self.not_in_generated("`target +=`", span);
        }
        if self.ctx == Ctx::Func {
            return self.fail(
                "mvi::check::impure_function",
                "functions are pure: `target +=` is not allowed in a function body",
                span,
                "here",
                "return the value from the function and add it in `model` with `target += f(…)`",
            );
        }
        Ok(TStmt::Target(self.expr(value)?))
    }

    fn loop_bound(&mut self, e: &Expr) -> R<i64> {
        let t = self.expr(e)?;
        match (t.shape, t.value) {
            (Shape::Int, Some(v)) => Ok(v as i64),
            _ => self.fail(
                "mvi::check::loop_bound_not_known",
                "loop bounds must be ints known from the data",
                t.span,
                format!("this is {}", t.shape),
                "loops are unrolled when the graph is built, so their bounds are int data, sizes \
                 or int literals (`for t in 2:T`); a parameter cannot set how many times a loop runs",
            ),
        }
    }

    fn for_loop(&mut self, var: &Ident, lo: &Expr, hi: &Expr, body: &[Stmt]) -> R<TStmt> {
        let lo_v = self.loop_bound(lo);
        let hi_v = self.loop_bound(hi);
        let (lo_v, hi_v) = (lo_v?, hi_v?);
        self.check_new_name(var)?;
        let count = hi_v.saturating_sub(lo_v).saturating_add(1).max(0);
        self.unrolled = self.unrolled.saturating_add(count);
        if count > MAX_LOOP_ITERATIONS || self.unrolled > MAX_UNROLLED {
            return self.fail("mvi::check::loop_too_long", format!("this loop runs {count} times, {} in all with the loops around and before it; loops unroll into the graph", self.unrolled), hi.span, "too many iterations", "write the loop body over whole vectors (one statement for all iterations), or split the data");
        }
        let mut iterations = Vec::new();
        for k in lo_v..=hi_v {
            let before = self.errors.len();
            let mut scope = HashMap::new();
            scope.insert(
                var.name.clone(),
                Sym {
                    kind: NameKind::Local,
                    shape: Shape::Int,
                    stage: Stage::Const,
                    value: Some(k as f64),
                    span: var.span,
                    mutable: false,
                    loop_index: Some(k),
                },
            );
            self.scopes.push(scope);
            let body_t = self.stmts(body);
            self.scopes.pop();
            iterations.push(body_t);
            if self.errors.len() > before {
                return Err(Reported);
            }
        }
        Ok(TStmt::For {
            var: var.name.clone(),
            lo: lo_v,
            hi: hi_v,
            iterations,
        })
    }

    fn if_stmt(&mut self, cond: &Expr, then: &[Stmt], otherwise: &[Stmt]) -> R<Option<TStmt>> {
        let c = self.expr(cond)?;
        self.require_data(&c, "`if` conditions")?;
        if !c.shape.is_scalar() {
            return self.fail(
                "mvi::check::condition_not_scalar",
                format!("a condition must be a scalar, found {}", c.shape),
                c.span,
                "not a scalar",
                "reduce the condition to one value, e.g. with an index or `sum(…)`",
            );
        }
        let (t, o) = match c.value {
            Some(v) if v != 0.0 => (self.stmts(then), Vec::new()),
            Some(_) => (Vec::new(), self.stmts(otherwise)),
            None => (self.stmts(then), self.stmts(otherwise)),
        };
        Ok(Some(TStmt::If {
            cond: c,
            then: t,
            otherwise: o,
        }))
    }

    /// Check a user function at this call site with these argument shapes, and inline it.
    pub(super) fn inline_call(&mut self, f: &SourceFn, args: Vec<TExpr>, span: Span) -> R<TExpr> {
        let def = &f.def;
        let name = def.name.name.clone();
        self.called.insert(name.clone());
        if args.len() != def.params.len() {
            let sig = self.fn_signature(f);
            let d = self
                .diag(
                    "mvi::check::bad_arguments",
                    format!(
                        "`{name}` takes {} argument{}, found {}",
                        def.params.len(),
                        if def.params.len() == 1 { "" } else { "s" },
                        args.len()
                    ),
                )
                .with_label(span, "in this call")
                .with_help(format!("signature: {sig}"));
            return Err(self.report(d));
        }
        if self.call_stack.contains(&name) || self.call_stack.len() > 32 {
            return self.fail(
                "mvi::check::recursion",
                format!("`{name}` calls itself; functions are inlined and cannot recurse"),
                span,
                "recursive call",
                "write the recursion as a `for` loop over a local vector (`x[t] = f(x[t - 1])`), \
                 which costs O(1) per step",
            );
        }
        for ((pname, ty), a) in def.params.iter().zip(&args) {
            if !base_accepts(ty.base, a.shape) {
                let sig = self.fn_signature(f);
                let d = self
                    .diag(
                        "mvi::check::bad_arguments",
                        format!(
                            "argument `{}` of `{name}` must be {}, found {}",
                            pname.name,
                            base_word(ty.base),
                            a.shape
                        ),
                    )
                    .with_label(a.span, format!("this is {}", a.shape))
                    .with_help(format!("signature: {sig}"));
                return Err(self.report(d));
            }
        }
        let saved = (
            std::mem::take(&mut self.scopes),
            self.ctx,
            self.src.clone(),
            self.fn_base,
        );
        self.scopes = vec![HashMap::new()];
        self.fn_base = 0;
        self.ctx = Ctx::Func;
        self.src = f.source.clone();
        self.call_stack.push(name.clone());
        let result = self.fn_body(f, &args);
        self.call_stack.pop();
        (self.scopes, self.ctx, self.src, self.fn_base) = saved;
        let (body, ret) = result?;
        let params = def
            .params
            .iter()
            .map(|(p, _)| p.name.clone())
            .zip(args)
            .collect::<Vec<_>>();
        let stage = ret.stage;
        let (shape, value) = (ret.shape, ret.value);
        Ok(TExpr {
            kind: TExprKind::Inline {
                func: name,
                params,
                body,
                result: Box::new(ret),
            },
            shape,
            stage,
            value,
            span,
        })
    }

    fn fn_body(&mut self, f: &SourceFn, args: &[TExpr]) -> R<(Vec<TStmt>, TExpr)> {
        let def = &f.def;
        for ((p, ty), a) in def.params.iter().zip(args) {
            self.bind_fn_sizes(ty, a.shape)?;
            self.check_new_name(p)?;
            let sym = Sym {
                kind: NameKind::Local,
                shape: a.shape,
                stage: a.stage,
                value: a.value,
                span: p.span,
                mutable: false,
                loop_index: None,
            };
            self.scopes[0].insert(p.name.clone(), sym);
        }
        let (last, init) = match def.body.split_last() {
            Some((Stmt::Return { value, .. }, init)) => (value, init),
            _ => {
                return self.fail(
                    "mvi::check::missing_return",
                    format!("`{}` must end with `return …`", def.name.name),
                    def.span,
                    "no final `return`",
                    "a function's value is its last statement's: end the body with `return <expr>`",
                )
            }
        };
        self.scopes.push(HashMap::new());
        let mut body = Vec::new();
        for s in init {
            if let Ok(t) = self.stmt(s) {
                body.extend(t);
            }
        }
        let ret = self.expr(last);
        self.scopes.pop();
        let ret = ret?;
        if let Some(rt) = &def.ret {
            if !base_accepts(rt.base, ret.shape) {
                return self.fail(
                    "mvi::check::wrong_return_type",
                    format!(
                        "`{}` is declared to return {}, but returns {}",
                        def.name.name,
                        base_word(rt.base),
                        ret.shape
                    ),
                    ret.span,
                    format!("this is {}", ret.shape),
                    "return a value of the declared type, or change the declared return type",
                );
            }
        }
        Ok((body, ret))
    }

    /// A parameter type with named sizes (`x: vector[n]`) binds `n` in the body.
    fn bind_fn_sizes(&mut self, ty: &crate::syntax::ast::TypeExpr, shape: Shape) -> R<()> {
        let dims: Vec<usize> = match shape {
            Shape::Vector(n) | Shape::Ints(n) => vec![n],
            Shape::Matrix(r, c) => vec![r, c],
            _ => vec![],
        };
        for (s, d) in ty.sizes.iter().zip(dims) {
            let ExprKind::Name(n) = &s.kind else { continue };
            match self.scopes[0].get(n).and_then(|sym| sym.value) {
                Some(v) if (v - d as f64).abs() > 0.5 => {
                    return self.fail(
                        "mvi::check::shape_mismatch",
                        format!("size `{n}` is {v} from an earlier argument, but {d} here"),
                        s.span,
                        "sizes disagree",
                        "pass arguments whose sizes agree, as the function's declaration names them",
                    );
                }
                Some(_) => {}
                None => {
                    let sym = Sym {
                        kind: NameKind::Local,
                        shape: Shape::Int,
                        stage: Stage::Const,
                        value: Some(d as f64),
                        span: s.span,
                        mutable: false,
                        loop_index: None,
                    };
                    self.scopes[0].insert(n.clone(), sym);
                }
            }
        }
        Ok(())
    }

    fn fn_signature(&self, f: &SourceFn) -> String {
        let text = f.source.inner();
        let snip = |s: Span| {
            text.get(s.start as usize..s.end as usize)
                .unwrap_or("")
                .to_string()
        };
        let ps: Vec<String> = f
            .def
            .params
            .iter()
            .map(|(p, t)| format!("{}: {}", p.name, snip(t.span)))
            .collect();
        let ret = f
            .def
            .ret
            .as_ref()
            .map(|t| format!(" -> {}", snip(t.span)))
            .unwrap_or_default();
        format!("{}({}){ret}", f.def.name.name, ps.join(", "))
    }
}

fn base_accepts(base: BaseType, s: Shape) -> bool {
    matches!(
        (base, s),
        (BaseType::Int, Shape::Int)
            | (BaseType::Real, Shape::Int | Shape::Real)
            | (BaseType::Vector, Shape::Vector(_) | Shape::Ints(_))
            | (BaseType::RowVector, Shape::RowVector(_))
            | (BaseType::Matrix, Shape::Matrix(..))
            | (BaseType::Ints, Shape::Ints(_))
    )
}

fn base_word(b: BaseType) -> &'static str {
    match b {
        BaseType::Int => "an int",
        BaseType::Real => "a real",
        BaseType::Vector => "a vector",
        BaseType::RowVector => "a row_vector",
        BaseType::Matrix => "a matrix",
        BaseType::Ints => "ints",
    }
}
