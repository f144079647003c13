//! Checking expressions: names, operators, indexing, calls (built-in, distribution, user).

use super::builtins::{self, Arg};
use super::checker::{Checker, Ctx, Sym, R};
use super::dists::{self, DistSpec, Support};
use super::error::did_you_mean;
use super::shapes::{broadcast, matmul};
use super::types::{DistForm, NameKind, Shape, Stage, TBinOp, TExpr, TExprKind, TIndex};
use crate::data::Value;
use crate::syntax::ast::{BinOp, Expr, ExprKind, Ident, Index, UnOp};
use crate::syntax::span::Span;

fn texpr(kind: TExprKind, shape: Shape, stage: Stage, value: Option<f64>, span: Span) -> TExpr {
    TExpr {
        kind,
        shape,
        stage,
        value,
        span,
    }
}

impl Checker {
    /// Check one expression.
    pub(super) fn expr(&mut self, e: &Expr) -> R<TExpr> {
        match &e.kind {
            ExprKind::Int(i) => Ok(texpr(
                TExprKind::Int(*i),
                Shape::Int,
                Stage::Const,
                Some(*i as f64),
                e.span,
            )),
            ExprKind::Real(x) => Ok(texpr(
                TExprKind::Real(*x),
                Shape::Real,
                Stage::Const,
                Some(*x),
                e.span,
            )),
            ExprKind::Str(_) => self.fail(
                "mvi::check::unexpected_string",
                "a string is only allowed in `import` and `csv(\"…\")`",
                e.span,
                "string here",
                "remove the quotes, or read a file into a data declaration with `= csv(\"file.csv\")`",
            ),
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Array(items) => self.array(items, e.span),
            ExprKind::Unary(op, x) => self.unary(*op, x, e.span),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, e.span),
            ExprKind::Transpose(x) => self.transpose(x, e.span),
            ExprKind::Ternary(c, a, b) => self.ternary(c, a, b, e.span),
            ExprKind::Call {
                func,
                args,
                conditional,
            } => self.call(func, args, *conditional, e.span),
            ExprKind::Index(base, idx) => self.index(base, idx, e.span),
        }
    }

    /// Look a name up where the current context can see it.
    pub(super) fn lookup(&self, n: &str) -> Option<&Sym> {
        let local = self.scopes[self.fn_base.min(self.scopes.len())..]
            .iter()
            .rev()
            .find_map(|s| s.get(n));
        if self.ctx == Ctx::Func {
            return local;
        }
        local.or_else(|| self.globals.get(n))
    }

    /// Every name the current context can see (for suggestions).
    pub(super) fn visible_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.scopes[self.fn_base.min(self.scopes.len())..]
            .iter()
            .flat_map(|s| s.keys().cloned())
            .collect();
        if self.ctx != Ctx::Func {
            names.extend(self.globals.keys().cloned());
        }
        names.sort();
        names
    }

    fn name(&mut self, n: &str, span: Span) -> R<TExpr> {
        let Some(sym) = self.lookup(n).cloned() else {
            return Err(self.unknown_name(n, span));
        };
        if self.ctx == Ctx::Decl && !matches!(sym.kind, NameKind::Data | NameKind::Size) {
            return self.fail(
                "mvi::check::not_data",
                format!("`{n}` is not data: sizes and initial values may only use data"),
                span,
                format!("a {}", kind_word(sym.kind)),
                "use data, literals and functions of them here; parameters and hyperparameters are only known during inference",
            );
        }
        if let Some(k) = sym.loop_index {
            return Ok(texpr(
                TExprKind::Int(k),
                Shape::Int,
                Stage::Const,
                Some(k as f64),
                span,
            ));
        }
        Ok(texpr(
            TExprKind::Name(n.to_string(), sym.kind),
            sym.shape,
            sym.stage,
            sym.value,
            span,
        ))
    }

    pub(super) fn unknown_name(&mut self, n: &str, span: Span) -> super::checker::Reported {
        if self.poisoned.contains(n) {
            return super::checker::Reported;
        }
        if self.ctx == Ctx::Func && self.globals.contains_key(n) {
            let f = self.call_stack.last().cloned().unwrap_or_default();
            let d = self
                .diag(
                    "mvi::check::impure_function",
                    format!("function `{f}` reads `{n}`, which is not one of its arguments"),
                )
                .with_label(span, "outside the function")
                .with_help(format!("functions are pure: pass `{n}` as an argument"));
            return self.report(d);
        }
        if matches!(self.ctx, Ctx::Decl | Ctx::Bound) && self.top_let_names.contains(n) {
            let d = self
                .diag(
                    "mvi::check::let_in_declaration",
                    format!("`{n}` is a top-level `let`, which a declaration cannot use"),
                )
                .with_label(span, "a top-level `let`")
                .with_help(format!(
                    "sizes, bounds and initial values are worked out before any `let`: write \
                     the expression of `{n}` here in its place (bounds may use data, hypers and \
                     earlier params, e.g. `<lower=mean(y)>`)"
                ));
            return self.report(d);
        }
        if matches!(self.ctx, Ctx::Predict | Ctx::Generated) && self.model_let_names.contains(n) {
            let block = if self.ctx == Ctx::Predict {
                "predict"
            } else {
                "generated"
            };
            let d = self
                .diag(
                    "mvi::check::model_let_in_predict",
                    format!("`{n}` is a `let` of the `model` block, which `{block}` cannot see"),
                )
                .with_label(span, "a `let` of `model`")
                .with_help(format!(
                    "make `{n}` a top-level `let` (then both blocks see it, and it is reported \
                     with the parameters), or repeat its `let` in `{block}`"
                ));
            return self.report(d);
        }
        let names = self.visible_names();
        let mut d = self
            .diag("mvi::check::unknown_name", format!("unknown name `{n}`"))
            .with_label(span, "not declared");
        if let Some(h) = did_you_mean(n, names.iter().map(String::as_str)) {
            d = d.with_help(h);
        } else {
            d = d.with_help("declare it in `data`, `hyper`, `param` or with `let`");
        }
        self.report(d)
    }

    fn array(&mut self, items: &[Expr], span: Span) -> R<TExpr> {
        let nested = !items.is_empty() && items.iter().all(|i| matches!(i.kind, ExprKind::Array(_)));
        if nested {
            return self.matrix_literal(items, span);
        }
        let mut elems = Vec::new();
        let mut bad = false;
        for it in items {
            match self.expr(it) {
                Ok(t) if t.shape.is_scalar() => elems.push(t),
                Ok(t) => {
                    let d = self
                        .diag(
                            "mvi::check::literal_element",
                            format!("a vector literal holds scalars, this is {}", t.shape),
                        )
                        .with_label(t.span, "not a scalar");
                    self.report(d);
                    bad = true;
                }
                Err(_) => bad = true,
            }
        }
        if bad {
            return Err(super::checker::Reported);
        }
        let stage = elems.iter().map(|e| e.stage).max().unwrap_or(Stage::Const);
        Ok(texpr(
            TExprKind::Vector(elems.clone()),
            Shape::Vector(elems.len()),
            stage,
            None,
            span,
        ))
    }

    fn matrix_literal(&mut self, rows: &[Expr], span: Span) -> R<TExpr> {
        let mut out = Vec::new();
        let mut ncols = None;
        for r in rows {
            let t = self.expr(r)?;
            let TExprKind::Vector(elems) = t.kind else {
                return self.fail(
                    "mvi::check::literal_element",
                    "rows of a matrix literal must be lists of scalars",
                    r.span,
                    "this row",
                    "write a matrix literal as rows of numbers, e.g. `[[1, 2], [3, 4]]`",
                );
            };
            if *ncols.get_or_insert(elems.len()) != elems.len() {
                return self.fail(
                    "mvi::check::ragged_matrix",
                    format!(
                        "this row has {} entries, the first row has {}",
                        elems.len(),
                        ncols.unwrap_or(0)
                    ),
                    r.span,
                    "row of a different length",
                    "give every row of the matrix literal the same number of entries",
                );
            }
            out.push(elems);
        }
        let stage = out
            .iter()
            .flatten()
            .map(|e| e.stage)
            .max()
            .unwrap_or(Stage::Const);
        Ok(texpr(
            TExprKind::Matrix(out),
            Shape::Matrix(rows.len(), ncols.unwrap_or(0)),
            stage,
            None,
            span,
        ))
    }

    fn unary(&mut self, op: UnOp, x: &Expr, span: Span) -> R<TExpr> {
        let t = self.expr(x)?;
        match op {
            UnOp::Neg => {
                let (shape, stage, value) = (t.shape, t.stage, t.value.map(|v| -v));
                Ok(texpr(
                    TExprKind::Unary(op, Box::new(t)),
                    shape,
                    stage,
                    value,
                    span,
                ))
            }
            UnOp::Not => {
                self.require_data(&t, "`!`")?;
                let t_stage = t.stage;
                let shape = if t.shape.is_scalar() { Shape::Int } else { t.shape };
                let value = t.value.map(|v| if v == 0.0 { 1.0 } else { 0.0 });
                Ok(texpr(
                    TExprKind::Unary(op, Box::new(t)),
                    shape,
                    t_stage,
                    value,
                    span,
                ))
            }
        }
    }

    pub(super) fn require_data(&mut self, t: &TExpr, what: &str) -> R<()> {
        // `generated` runs per draw, where a branch may depend on anything
        if t.stage == Stage::Const || self.per_draw() {
            return Ok(());
        }
        let on = if t.stage == Stage::Param {
            "a param"
        } else {
            "a hyper"
        };
        self.fail(
            "mvi::check::condition_not_data",
            format!("{what} may only be used on data"),
            t.span,
            format!("this depends on {on}"),
            "the graph is built once, so a branch cannot depend on a parameter's value: write both \
             cases as one smooth expression (a mixture with `log_mix`, a switch with \
             `inv_logit`), or compare data only",
        )
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, span: Span) -> R<TExpr> {
        let ta = self.expr(a);
        let tb = self.expr(b);
        let (ta, tb) = (ta?, tb?);
        let stage = ta.stage.max(tb.stage);
        let (top, shape) =
            match op {
                BinOp::Add | BinOp::Sub | BinOp::ElemMul | BinOp::ElemDiv | BinOp::Pow => {
                    self.elementwise(op, &ta, &tb)?
                }
                BinOp::Mul => self.product(&ta, &tb)?,
                BinOp::Div => self.division(&ta, &tb)?,
                BinOp::Mod if ta.shape == Shape::Int && tb.shape == Shape::Int => (TBinOp::Mod, Shape::Int),
                BinOp::Mod => return self.fail(
                    "mvi::check::mod_not_int",
                    format!("`%` takes two ints, found {} and {}", ta.shape, tb.shape),
                    span,
                    "here",
                    "`%` is the remainder of two ints; use int data, literals or loop indices on both sides",
                ),
                _ => return self.comparison(op, ta, tb, span),
            };
        let value = match (ta.value, tb.value) {
            (Some(x), Some(y)) => fold(top, x, y),
            _ => None,
        };
        Ok(texpr(
            TExprKind::Binary(top, Box::new(ta), Box::new(tb)),
            shape,
            stage,
            value,
            span,
        ))
    }

    fn mismatch(&mut self, what: &str, a: &TExpr, b: &TExpr, help: &str) -> super::checker::Reported {
        let d = self
            .diag(
                "mvi::check::shape_mismatch",
                format!("{what}: {} and {}", a.shape, b.shape),
            )
            .with_label(a.span, format!("this is {}", a.shape))
            .with_label(b.span, format!("this is {}", b.shape))
            .with_help(help.to_string());
        self.report(d)
    }

    fn elementwise(&mut self, op: BinOp, a: &TExpr, b: &TExpr) -> R<(TBinOp, Shape)> {
        let (top, word) = match op {
            BinOp::Add => (TBinOp::Add, "cannot add"),
            BinOp::Sub => (TBinOp::Sub, "cannot subtract"),
            BinOp::ElemMul => (TBinOp::ElemMul, "cannot multiply elementwise"),
            BinOp::ElemDiv => (TBinOp::ElemDiv, "cannot divide elementwise"),
            _ => (TBinOp::Pow, "cannot raise to a power"),
        };
        match broadcast(a.shape, b.shape) {
            Some(s) if top == TBinOp::Pow || top == TBinOp::ElemDiv => Ok((top, s.to_real())),
            Some(s) => Ok((top, s)),
            None => {
                let crossed = matches!(
                    (a.shape, b.shape),
                    (Shape::RowVector(_), Shape::Vector(_) | Shape::Ints(_))
                        | (Shape::Vector(_) | Shape::Ints(_), Shape::RowVector(_))
                );
                let help = if crossed {
                    "a row_vector and a vector differ in orientation: transpose one of them (`r'` \
                     is a vector, `v'` a row)"
                } else {
                    "elementwise operations need equal shapes, or a scalar on one side"
                };
                Err(self.mismatch(&format!("{word} values of different shapes"), a, b, help))
            }
        }
    }

    fn product(&mut self, a: &TExpr, b: &TExpr) -> R<(TBinOp, Shape)> {
        if a.shape.is_scalar() || b.shape.is_scalar() {
            let s =
                broadcast(a.shape, b.shape).expect("a scalar broadcasts over any shape (shapes::broadcast)");
            return Ok((TBinOp::ScalarMul, s));
        }
        let left_t = matches!(&a.kind, TExprKind::Transpose(x) if matches!(x.shape, Shape::Vector(_) | Shape::Ints(_)));
        match matmul(a.shape, b.shape, left_t) {
            Some(s) => Ok((TBinOp::MatMul, s)),
            None => {
                // `A * Y[t]'` as in Stan, where a matrix row is a row_vector
                let right_t =
                    matches!(&b.kind, TExprKind::Transpose(x) if matches!(x.shape, Shape::Vector(_)));
                let help = match (a.shape, b.shape) {
                    (Shape::Matrix(_, k), Shape::Matrix(1, n)) if right_t && k == n => "a vector is a column in mvi, \
                        and so is a row taken from a matrix (`Y[t]`, unlike Stan's row_vector): drop the `'` to \
                        multiply by it"
                        .to_string(),
                    (Shape::Vector(_) | Shape::Ints(_), Shape::Vector(_) | Shape::Ints(_)) => "for an elementwise product use `.*`; for a dot product `dot(a, b)` or `a' * b`".to_string(),
                    (Shape::RowVector(_), Shape::RowVector(_)) => "for an elementwise product use `.*`; for a dot product transpose the right one (`a * b'`)".to_string(),
                    (Shape::Matrix(..), Shape::RowVector(_)) => "a matrix multiplies a column `vector`: transpose the row (`A * r'`), or put it on the left (`r * A`)".to_string(),
                    _ => "in `A * B` the columns of `A` must equal the rows of `B`; use `.*` for an elementwise product".to_string(),
                };
                Err(self.mismatch("matrix product of incompatible shapes", a, b, &help))
            }
        }
    }

    fn division(&mut self, a: &TExpr, b: &TExpr) -> R<(TBinOp, Shape)> {
        if a.shape == Shape::Int && b.shape == Shape::Int {
            return Ok((TBinOp::IntDiv, Shape::Int));
        }
        if b.shape.is_scalar() || a.shape.is_scalar() {
            let s =
                broadcast(a.shape, b.shape).expect("a scalar broadcasts over any shape (shapes::broadcast)");
            return Ok((TBinOp::ElemDiv, s.to_real()));
        }
        Err(self.mismatch(
            "`/` needs a scalar on one side",
            a,
            b,
            "use `./` for elementwise division",
        ))
    }

    fn comparison(&mut self, op: BinOp, ta: TExpr, tb: TExpr, span: Span) -> R<TExpr> {
        let ra = self.require_data(&ta, "comparisons and logical operators");
        let rb = self.require_data(&tb, "comparisons and logical operators");
        ra?;
        rb?;
        let top = match op {
            BinOp::Lt => TBinOp::Lt,
            BinOp::Le => TBinOp::Le,
            BinOp::Gt => TBinOp::Gt,
            BinOp::Ge => TBinOp::Ge,
            BinOp::Eq => TBinOp::Eq,
            BinOp::Ne => TBinOp::Ne,
            BinOp::And => TBinOp::And,
            _ => TBinOp::Or,
        };
        let Some(s) = broadcast(ta.shape, tb.shape) else {
            return Err(self.mismatch(
                "cannot compare values of different shapes",
                &ta,
                &tb,
                "compare equal shapes, or against a scalar",
            ));
        };
        let shape = match s {
            Shape::Int | Shape::Real => Shape::Int,
            Shape::Vector(n) | Shape::Ints(n) => Shape::Ints(n),
            m => m,
        };
        let value = match (ta.value, tb.value) {
            (Some(x), Some(y)) => fold(top, x, y),
            _ => None,
        };
        let (ta_stage, tb_stage) = (ta.stage, tb.stage);
        Ok(texpr(
            TExprKind::Binary(top, Box::new(ta), Box::new(tb)),
            shape,
            ta_stage.max(tb_stage),
            value,
            span,
        ))
    }

    fn transpose(&mut self, x: &Expr, span: Span) -> R<TExpr> {
        let t = self.expr(x)?;
        let shape = match t.shape {
            Shape::Vector(n) | Shape::Ints(n) => Shape::Matrix(1, n),
            Shape::RowVector(n) => Shape::Vector(n),
            Shape::Matrix(r, c) => Shape::Matrix(c, r),
            s => {
                return self.fail(
                    "mvi::check::transpose_scalar",
                    format!("cannot transpose a {s}"),
                    span,
                    "a scalar",
                    "remove the `'`: a scalar is its own transpose",
                )
            }
        };
        let stage = t.stage;
        Ok(texpr(TExprKind::Transpose(Box::new(t)), shape, stage, None, span))
    }

    fn ternary(&mut self, c: &Expr, a: &Expr, b: &Expr, span: Span) -> R<TExpr> {
        let tc = self.expr(c)?;
        self.require_data(&tc, "`? :` conditions")?;
        if !tc.shape.is_scalar() {
            return self.fail(
                "mvi::check::condition_not_scalar",
                format!("a condition must be a scalar, found {}", tc.shape),
                tc.span,
                "not a scalar",
                "reduce the condition to one value, e.g. with an index or `sum(…)`",
            );
        }
        let ta = self.expr(a)?;
        let tb = self.expr(b)?;
        let shape = match (ta.shape, tb.shape) {
            (x, y) if x == y => x,
            (x, y) if x.is_scalar() && y.is_scalar() => Shape::Real,
            (x, y) if x.to_real() == y.to_real() => x.to_real(),
            _ => {
                return Err(self.mismatch(
                    "the branches of `? :` have different shapes",
                    &ta,
                    &tb,
                    "both branches must have the same shape",
                ))
            }
        };
        let value = match tc.value {
            Some(v) if v != 0.0 => ta.value,
            Some(_) => tb.value,
            None => None,
        };
        let stage = tc.stage.max(ta.stage).max(tb.stage);
        Ok(texpr(
            TExprKind::Ternary(Box::new(tc), Box::new(ta), Box::new(tb)),
            shape,
            stage,
            value,
            span,
        ))
    }

    fn args(&mut self, args: &[Expr]) -> R<Vec<TExpr>> {
        let checked: Vec<R<TExpr>> = args.iter().map(|a| self.expr(a)).collect();
        checked.into_iter().collect()
    }

    fn call(&mut self, func: &Ident, args: &[Expr], conditional: bool, span: Span) -> R<TExpr> {
        let name = func.name.as_str();
        if let Some(spec) = name.strip_suffix("_rng").and_then(dists::lookup) {
            return self.rng_call(spec, func, args, conditional, span);
        }
        if let Some((base, form, suffix)) = dists::split_form(name) {
            if let Some(spec) = dists::lookup(base) {
                if !conditional && args.len() > 1 && spec.forms().contains(&suffix) {
                    return self.fail(
                        "mvi::check::density_call_without_bar",
                        format!("`{name}` separates the outcome from the parameters with `|`"),
                        args[0].span,
                        "the outcome, then `|`",
                        format!("write `{name}(x | …)`, as in Stan, e.g. `normal_lpdf(y | mu, sigma)`"),
                    );
                }
                return self.dist_call(spec, form, suffix, func, args, span);
            }
        }
        if conditional {
            let help = match name
                .strip_suffix("_lupdf")
                .or_else(|| name.strip_suffix("_lupmf"))
            {
                Some(base) => format!(
                    "mvi keeps every normalising constant and has no `_lupdf`/`_lupmf`: write \
                     `{base}_{}`",
                    if name.ends_with("_lupdf") { "lpdf" } else { "lpmf" }
                ),
                None => "a call with `|` is a distribution function, e.g. `normal_lpdf(y | mu, \
                         sigma)`; see the distributions in docs/language.md"
                    .to_string(),
            };
            return self.fail(
                "mvi::check::unknown_distribution",
                format!("`{name}` is not a distribution function"),
                func.span,
                "not a `dist_lpdf`",
                help,
            );
        }
        if name == "csv" {
            return self.fail(
                "mvi::check::csv_outside_data",
                "`csv(\"…\")` may only give the value of a `data` declaration",
                span,
                "here",
                "declare `name: vector[N] = csv(\"file.csv\")` in `data` and use `name` here",
            );
        }
        if builtins::is_builtin(name) {
            let targs = self.args(args)?;
            return self.builtin(func, targs, span);
        }
        if let Some(f) = self.fns.iter().find(|f| f.def.name.name == name).cloned() {
            let targs = self.args(args)?;
            return self.inline_call(&f, targs, span);
        }
        if dists::lookup(name).is_some() {
            let d = self
                .diag(
                    "mvi::check::distribution_as_function",
                    format!("`{name}` is a distribution, not a function"),
                )
                .with_label(func.span, "here")
                .with_help(format!("write `x ~ {name}(…)` or `{name}_lpdf(x | …)`"));
            return Err(self.report(d));
        }
        let mut candidates: Vec<String> = builtins::all_names().map(String::from).collect();
        candidates.extend(self.fns.iter().map(|f| f.def.name.name.clone()));
        for d in dists::DISTS {
            for s in d.forms() {
                candidates.push(format!("{}{s}", d.name));
            }
        }
        let help = did_you_mean(name, candidates.iter().map(String::as_str)).unwrap_or_else(|| {
            "built-in functions are listed in docs/language.md; `import` a stdlib file for more".into()
        });
        let d = self
            .diag(
                "mvi::check::unknown_function",
                format!("unknown function `{name}`"),
            )
            .with_label(func.span, "not defined")
            .with_help(help);
        Err(self.report(d))
    }

    /// `dist_rng(args)`: a random draw, in `generated` and `predict` only.
    fn rng_call(
        &mut self,
        spec: &DistSpec,
        func: &Ident,
        args: &[Expr],
        conditional: bool,
        span: Span,
    ) -> R<TExpr> {
        if !self.rng_allowed() {
            return self.fail(
                "mvi::check::rng_outside_generated",
                format!(
                    "`{}` draws at random, which only `generated` and `predict` may do",
                    func.name
                ),
                func.span,
                "a random draw",
                "the log density must be a function of the parameters alone: move the draw into a \
                 `generated { … }` block (run once per posterior draw), or use `~` to give the \
                 model a distribution",
            );
        }
        if conditional {
            return self.fail(
                "mvi::check::bad_arguments",
                format!(
                    "`{}` takes the distribution's arguments, with no outcome and no `|`",
                    func.name
                ),
                span,
                "here",
                format!("signature: {}", super::rng::rng_signature(spec)),
            );
        }
        let targs = self.args(args)?;
        let shapes: Vec<(Shape, Option<f64>)> = targs.iter().map(|t| (t.shape, t.value)).collect();
        let shape = match super::rng::rng_shape(spec, &shapes) {
            Ok(s) => s,
            Err((i, msg)) => {
                let at = targs.get(i).map_or(span, |t| t.span);
                let d = self
                    .diag("mvi::check::bad_arguments", msg)
                    .with_label(at, "here")
                    .with_help(format!("signature: {}", super::rng::rng_signature(spec)));
                return Err(self.report(d));
            }
        };
        Ok(texpr(
            TExprKind::Rng {
                dist: spec.name.to_string(),
                args: targs,
            },
            shape,
            Stage::Param,
            None,
            span,
        ))
    }

    fn builtin(&mut self, func: &Ident, targs: Vec<TExpr>, span: Span) -> R<TExpr> {
        let name = func.name.as_str();
        let bargs: Vec<Arg> = targs
            .iter()
            .map(|t| Arg {
                shape: t.shape,
                value: t.value,
            })
            .collect();
        let shape = match builtins::result_shape(name, &bargs) {
            Ok(s) => s,
            Err(msg) => {
                let d = self
                    .diag("mvi::check::bad_arguments", msg)
                    .with_label(span, "in this call")
                    .with_help(format!("signature: {}", builtins::signature(name)));
                return Err(self.report(d));
            }
        };
        let value = fold_builtin(name, &targs);
        let stage = if matches!(name, "rows" | "cols" | "size") {
            Stage::Const
        } else {
            targs.iter().map(|t| t.stage).max().unwrap_or(Stage::Const)
        };
        if matches!(name, "col" | "row") {
            self.check_col_row(name, &targs)?;
        }
        Ok(texpr(
            TExprKind::Call(name.to_string(), targs),
            shape,
            stage,
            value,
            span,
        ))
    }

    fn check_col_row(&mut self, name: &str, targs: &[TExpr]) -> R<()> {
        let (Shape::Matrix(r, c), Some(i)) = (targs[0].shape, targs[1].value) else {
            return Ok(());
        };
        let n = if name == "col" { c } else { r };
        if i < 1.0 || i > n as f64 {
            return self.fail(
                "mvi::check::index_out_of_range",
                format!("`{name}` index {i} is out of range 1..{n}"),
                targs[1].span,
                "out of range",
                "indices start at 1 (as in Stan) and end at the length; check the size the data bind",
            );
        }
        Ok(())
    }

    fn dist_call(
        &mut self,
        spec: &DistSpec,
        form: DistForm,
        suffix: &str,
        func: &Ident,
        args: &[Expr],
        span: Span,
    ) -> R<TExpr> {
        if !spec.forms().contains(&suffix) {
            let valid: Vec<String> = spec
                .forms()
                .iter()
                .map(|s| format!("`{}{s}`", spec.name))
                .collect();
            let d = self
                .diag(
                    "mvi::check::wrong_dist_form",
                    format!("`{}` does not exist", func.name),
                )
                .with_label(func.span, "no such form")
                .with_help(format!("`{}` has {}", spec.name, valid.join(", ")));
            return Err(self.report(d));
        }
        let targs = self.args(args)?;
        if targs.is_empty() {
            let d = self
                .diag(
                    "mvi::check::bad_arguments",
                    format!("`{}` needs the outcome first: `{}(x | …)`", func.name, func.name),
                )
                .with_label(span, "no arguments")
                .with_help(format!("signature: {}", spec.signature()));
            return Err(self.report(d));
        }
        self.check_dist(spec, &targs[0], &targs[1..], span)?;
        let stage = targs.iter().map(|t| t.stage).max().unwrap_or(Stage::Const);
        Ok(texpr(
            TExprKind::Dist {
                dist: spec.name.to_string(),
                form,
                args: targs,
            },
            Shape::Real,
            stage,
            None,
            span,
        ))
    }

    /// Check a distribution's outcome and arguments (used by `~` and `dist_lpdf`).
    pub(super) fn check_dist(
        &mut self,
        spec: &DistSpec,
        outcome: &TExpr,
        args: &[TExpr],
        span: Span,
    ) -> R<()> {
        if let Err((i, msg)) =
            spec.check_shapes(outcome.shape, &args.iter().map(|a| a.shape).collect::<Vec<_>>())
        {
            let at = match i {
                0 => outcome.span,
                k if k <= args.len() => args[k - 1].span,
                _ => span,
            };
            let d = self
                .diag("mvi::check::bad_distribution_arguments", msg)
                .with_label(at, "here")
                .with_help(format!("signature: {}", spec.signature()));
            return Err(self.report(d));
        }
        self.check_declared_kinds(spec.name, outcome, args)?;
        for ((pname, support), a) in spec.params.iter().zip(args) {
            let Some(v) = a.value else { continue };
            let bad = match support {
                Support::Positive => v <= 0.0,
                Support::Unit => !(0.0..=1.0).contains(&v),
                Support::Int if v < 0.0 => true,
                _ => false,
            };
            if bad {
                let want = match support {
                    Support::Positive => "positive",
                    Support::Unit => "in [0, 1]",
                    _ => "non-negative",
                };
                return self.fail(
                    "mvi::check::invalid_distribution_argument",
                    format!("`{pname}` of `{}` must be {want}, found {v}", spec.name),
                    a.span,
                    "invalid value",
                    format!("signature: {}", spec.signature()),
                );
            }
        }
        Ok(())
    }

    /// A value passed by name where its declared type cannot be what the distribution
    /// needs ([`NEEDS`]): a full matrix for a Cholesky factor or the other way round (the
    /// density of the other form, wrong or −∞ at every point), or a `param`/`hyper` that is
    /// not declared a simplex or ordered where one must be (−∞ at the start, as Stan rejects
    /// it when run).
    fn check_declared_kinds(&mut self, dist: &str, outcome: &TExpr, args: &[TExpr]) -> R<()> {
        for &(_, at, needs) in NEEDS.iter().filter(|(d, _, _)| *d == dist) {
            let Some(e) = (if at == 0 { Some(outcome) } else { args.get(at - 1) }) else {
                continue;
            };
            let TExprKind::Name(n, name_kind) = &e.kind else {
                continue;
            };
            let declared = self.declared_kinds.get(n).copied();
            if !needs.violated_by(declared, *name_kind) {
                continue;
            }
            let as_declared = declared.map_or("a plain vector".to_string(), |k| format!("`{}`", k.name()));
            return self.fail(
                "mvi::check::wrong_constrained_type",
                format!(
                    "`{n}` is declared {as_declared}, but `{dist}` needs {} here",
                    needs.what()
                ),
                e.span,
                format!("declared {as_declared}"),
                needs.help(dist, n),
            );
        }
        Ok(())
    }

    fn index(&mut self, base: &Expr, idx: &[Index], span: Span) -> R<TExpr> {
        let tb = self.expr(base)?;
        let dims: Vec<usize> = match tb.shape {
            Shape::Vector(n) | Shape::RowVector(n) | Shape::Ints(n) => vec![n],
            Shape::Matrix(r, c) => vec![r, c],
            s => {
                return self.fail(
                    "mvi::check::index_scalar",
                    format!("cannot index a {s}"),
                    tb.span,
                    "a scalar",
                    "remove the index: a scalar has no entries",
                )
            }
        };
        if idx.len() > dims.len() {
            return self.fail(
                "mvi::check::too_many_indices",
                format!(
                    "{} takes at most {} ind{}, found {}",
                    tb.shape,
                    dims.len(),
                    if dims.len() == 1 { "ex" } else { "ices" },
                    idx.len()
                ),
                span,
                "too many indices",
                "a vector takes one index (`v[i]`), a matrix one or two (`M[i]` is row i, `M[i, j]` an entry)",
            );
        }
        let mut tidx = Vec::new();
        let mut kept = Vec::new();
        let mut stage = tb.stage;
        for (i, d) in idx.iter().zip(&dims) {
            let (t, keep) = self.one_index(i, *d)?;
            if let TIndex::At(e) | TIndex::Gather(e) = &t {
                stage = stage.max(e.stage);
            }
            if let Some(k) = keep {
                kept.push(k);
            }
            tidx.push(t);
        }
        let shape = indexed_shape(tb.shape, idx.len(), &kept);
        let value = self.indexed_value(&tb, &tidx);
        Ok(texpr(
            TExprKind::Index(Box::new(tb), tidx),
            shape,
            stage,
            value,
            span,
        ))
    }

    /// One index position against a dimension of length `n`; the kept length, if any.
    fn one_index(&mut self, i: &Index, n: usize) -> R<(TIndex, Option<usize>)> {
        match i {
            Index::At(e) => {
                let t = self.expr(e)?;
                if t.stage != Stage::Const {
                    return self.fail(
                        "mvi::check::index_not_data",
                        "an index must be known from the data",
                        t.span,
                        "depends on a hyper or param",
                        "indices are fixed when the graph is built: use `int` data, sizes or loop \
                         indices; to select by a parameter, weight the candidates instead (e.g. \
                         `log_sum_exp` over them, as Stan marginalises a discrete unknown)",
                    );
                }
                match t.shape {
                    Shape::Int => {
                        if let Some(v) = t.value.filter(|v| *v < 1.0 || *v > n as f64) {
                            return self.fail(
                                "mvi::check::index_out_of_range",
                                format!("index {v} is out of range 1..{n}"),
                                t.span,
                                "out of range",
                                "indices start at 1 (as in Stan) and end at the length; check the size the data bind",
                            );
                        }
                        Ok((TIndex::At(t), None))
                    }
                    Shape::Ints(k) => {
                        self.check_gather(&t, n)?;
                        Ok((TIndex::Gather(t), Some(k)))
                    }
                    s => self.fail(
                        "mvi::check::index_not_int",
                        format!("an index must be an int or ints, found {s}"),
                        t.span,
                        "not an int",
                        "index with an int, an array of ints, or a slice `a:b`",
                    ),
                }
            }
            Index::Range { lo, hi, span } => {
                let lo_v = match lo {
                    Some(e) => self.range_end(e)?,
                    None => 1,
                };
                let hi_v = match hi {
                    Some(e) => self.range_end(e)?,
                    None => n as i64,
                };
                if lo_v < 1 || hi_v > n as i64 || hi_v < lo_v.saturating_sub(1) {
                    return self.fail(
                        "mvi::check::index_out_of_range",
                        format!("slice {lo_v}:{hi_v} is out of range 1..{n}"),
                        *span,
                        "out of range",
                        "indices start at 1 (as in Stan) and end at the length; check the size the data bind",
                    );
                }
                let len = (hi_v - lo_v + 1) as usize;
                Ok((
                    TIndex::Range {
                        lo: lo_v as usize,
                        hi: hi_v as usize,
                    },
                    Some(len),
                ))
            }
        }
    }

    fn range_end(&mut self, e: &Expr) -> R<i64> {
        let t = self.expr(e)?;
        match (t.shape, t.value) {
            (Shape::Int, Some(v)) => Ok(v as i64),
            _ => self.fail(
                "mvi::check::slice_not_known",
                "slice bounds must be ints known from the data",
                t.span,
                format!("this is {}", t.shape),
                "write slice bounds with data ints, literals or loop indices, e.g. `y[2:N]`",
            ),
        }
    }

    fn check_gather(&mut self, t: &TExpr, n: usize) -> R<()> {
        let TExprKind::Name(name, NameKind::Data) = &t.kind else {
            return Ok(());
        };
        let Some(Value::Ints(xs)) = self.data.get(name) else {
            return Ok(());
        };
        if let Some((pos, bad)) = xs.iter().enumerate().find(|(_, v)| **v < 1 || **v > n as i64) {
            return self.fail(
                "mvi::check::index_out_of_range",
                format!(
                    "`{name}` holds {bad} at entry {}, out of range 1..{n} for this gather",
                    pos + 1
                ),
                t.span,
                "indices out of range",
                format!("group and category indices run from 1 to {n}: recode `{name}` (0-based codes need `+ 1`)"),
            );
        }
        Ok(())
    }

    fn indexed_value(&self, base: &TExpr, idx: &[TIndex]) -> Option<f64> {
        let TExprKind::Name(n, NameKind::Data) = &base.kind else {
            return None;
        };
        let at = |i: &TIndex| match i {
            TIndex::At(e) => e.value.map(|v| v as usize - 1),
            _ => None,
        };
        let v = self.data.get(n)?;
        match (v, idx) {
            (Value::Vector(_) | Value::Ints(_), [i]) => v.element(at(i)?),
            (Value::Matrix(m), [i, j]) => m.get((at(i)?, at(j)?)).copied(),
            _ => None,
        }
    }
}

fn indexed_shape(base: Shape, nidx: usize, kept: &[usize]) -> Shape {
    match (base, nidx, kept) {
        (Shape::Ints(_), 1, []) => Shape::Int,
        (Shape::Ints(_), 1, [k]) => Shape::Ints(*k),
        (Shape::Vector(_), 1, []) => Shape::Real,
        (Shape::Vector(_), 1, [k]) => Shape::Vector(*k),
        (Shape::RowVector(_), 1, []) => Shape::Real,
        (Shape::RowVector(_), 1, [k]) => Shape::RowVector(*k),
        (Shape::Matrix(_, c), 1, []) => Shape::Vector(c),
        (Shape::Matrix(_, c), 1, [k]) => Shape::Matrix(*k, c),
        (Shape::Matrix(..), 2, []) => Shape::Real,
        (Shape::Matrix(..), 2, [k]) => Shape::Vector(*k),
        (Shape::Matrix(..), 2, [r, c]) => Shape::Matrix(*r, *c),
        _ => unreachable!("index counts are checked against the base shape in Checker::index"),
    }
}

fn fold(op: TBinOp, x: f64, y: f64) -> Option<f64> {
    let b = |c: bool| Some(if c { 1.0 } else { 0.0 });
    match op {
        TBinOp::Add => Some(x + y),
        TBinOp::Sub => Some(x - y),
        TBinOp::ScalarMul | TBinOp::ElemMul | TBinOp::MatMul => Some(x * y),
        TBinOp::ElemDiv => Some(x / y),
        TBinOp::IntDiv => (y != 0.0).then(|| (x / y).trunc()),
        TBinOp::Pow => Some(x.powf(y)),
        TBinOp::Mod => (y != 0.0).then(|| x % y),
        TBinOp::Lt => b(x < y),
        TBinOp::Le => b(x <= y),
        TBinOp::Gt => b(x > y),
        TBinOp::Ge => b(x >= y),
        TBinOp::Eq => b((x - y).abs() < f64::EPSILON * x.abs().max(1.0)),
        TBinOp::Ne => b((x - y).abs() >= f64::EPSILON * x.abs().max(1.0)),
        TBinOp::And => b(x != 0.0 && y != 0.0),
        TBinOp::Or => b(x != 0.0 || y != 0.0),
    }
}

fn fold_builtin(name: &str, args: &[TExpr]) -> Option<f64> {
    match (name, args) {
        ("rows", [a]) => Some(match a.shape {
            Shape::Matrix(r, _) => r,
            s => s.len(),
        } as f64),
        ("cols", [a]) => match a.shape {
            Shape::Matrix(_, c) => Some(c as f64),
            _ => None,
        },
        ("size", [a]) => Some(a.shape.len() as f64),
        ("exp", [a]) => a.value.map(f64::exp),
        ("log", [a]) => a.value.map(f64::ln),
        ("sqrt", [a]) => a.value.map(f64::sqrt),
        ("square", [a]) => a.value.map(|v| v * v),
        ("abs", [a]) => a.value.map(f64::abs),
        ("min" | "fmin", [a, b]) => Some(a.value?.min(b.value?)),
        ("max" | "fmax", [a, b]) => Some(a.value?.max(b.value?)),
        (_, []) => builtins::constant(name),
        // as the graph computes them
        ("log2" | "log10", [a]) => Some(a.value?.ln() / builtins::constant(name)?),
        _ => None,
    }
}

fn kind_word(k: NameKind) -> &'static str {
    match k {
        NameKind::Data => "data value",
        NameKind::Size => "size",
        NameKind::Hyper => "hyper",
        NameKind::Param => "param",
        NameKind::Global => "top-level let",
        NameKind::Local => "local",
    }
}

pub(super) fn describe_kind(k: NameKind) -> &'static str {
    kind_word(k)
}

/// What a distribution needs of a value it is given by name.
#[derive(Debug, Clone, Copy)]
enum Needs {
    /// A Cholesky factor (`cholesky_corr`, `cholesky_cov`), not a full matrix.
    Factor,
    /// A full (symmetric) matrix, not its Cholesky factor.
    Full,
    /// A simplex: a `param` or `hyper` must be declared one.
    Simplex,
    /// Increasing cutpoints: a `param` or `hyper` must be declared `ordered`.
    Ordered,
}

/// (distribution, 0 for the outcome or the argument's position from 1, what it needs).
const NEEDS: &[(&str, usize, Needs)] = &[
    ("lkj_corr_cholesky", 0, Needs::Factor),
    ("lkj_corr", 0, Needs::Full),
    ("wishart_cholesky", 0, Needs::Factor),
    ("wishart_cholesky", 2, Needs::Factor),
    ("inv_wishart_cholesky", 0, Needs::Factor),
    ("inv_wishart_cholesky", 2, Needs::Factor),
    ("multi_normal_cholesky", 2, Needs::Factor),
    ("multi_normal", 2, Needs::Full),
    ("multi_student_t", 3, Needs::Full),
    ("dirichlet", 0, Needs::Simplex),
    ("categorical", 1, Needs::Simplex),
    ("multinomial", 1, Needs::Simplex),
    ("ordered_logistic", 2, Needs::Ordered),
    ("ordered_probit", 2, Needs::Ordered),
];

impl Needs {
    fn violated_by(self, declared: Option<crate::syntax::ast::TypeKind>, name: NameKind) -> bool {
        use crate::syntax::ast::TypeKind as T;
        let estimated = matches!(name, NameKind::Param | NameKind::Hyper);
        match self {
            Needs::Factor => matches!(declared, Some(T::CorrMatrix | T::CovMatrix)),
            Needs::Full => matches!(declared, Some(T::CholeskyCorr | T::CholeskyCov)),
            Needs::Simplex => estimated && declared != Some(T::Simplex),
            Needs::Ordered => estimated && !matches!(declared, Some(T::Ordered | T::PositiveOrdered)),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Needs::Factor => "a Cholesky factor",
            Needs::Full => "a full matrix, not a Cholesky factor",
            Needs::Simplex => "a simplex",
            Needs::Ordered => "increasing cutpoints",
        }
    }

    fn help(self, dist: &str, n: &str) -> String {
        match (self, dist) {
            (_, "lkj_corr") => format!("write `{n} ~ lkj_corr_cholesky(eta)`, as in Stan"),
            (_, "lkj_corr_cholesky") => format!("write `{n} ~ lkj_corr(eta)`, as in Stan"),
            (Needs::Factor, "multi_normal_cholesky") => format!(
                "write `multi_normal(mu, {n})` for a covariance matrix, or declare a \
                 `cholesky_cov[K]` and pass it here"
            ),
            (Needs::Factor, _) => format!(
                "`{dist}` takes and scores Cholesky factors: declare `{n}: cholesky_cov[K]` (the \
                 matrix is then `multiply_lower_tri_self_transpose({n})`)"
            ),
            (Needs::Full, _) => format!(
                "pass the matrix, `multiply_lower_tri_self_transpose({n})`, or use \
                 `multi_normal_cholesky(mu, {n})` for a Cholesky factor"
            ),
            (Needs::Simplex, _) => format!(
                "declare `{n}: simplex[K]`, as in Stan: a vector that is not one has no \
                 `{dist}` density (−∞, so the fit cannot start)"
            ),
            (Needs::Ordered, _) => format!(
                "declare `{n}: ordered[K - 1]`, as in Stan: cutpoints that are not increasing have \
                 no `{dist}` probability (−∞, so the fit cannot start)"
            ),
        }
    }
}
