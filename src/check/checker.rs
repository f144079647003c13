//! The checker's state and its top-level pass over declarations, lets and blocks.

use super::types::{NameKind, Shape, Stage, TExpr, TExprKind};
use super::{DataDecl, Slot, SourceFn, Transform, TypedModel};
use crate::data::{BoundData, DataSet, Value};
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{BaseType, Decl, Item, Program, TypeExpr};
use crate::syntax::span::Span;
use miette::NamedSource;
use std::collections::HashMap;
use std::path::Path;

/// Marker: the problem has been recorded in `Checker::errors`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reported;

/// Result of a checking step whose errors are already recorded.
pub(super) type R<T> = Result<T, Reported>;

/// Where the checker is, which decides what may be read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    /// Sizes, bounds and initial values of declarations: data only.
    Decl,
    /// The bounds of a `hyper` or `param`: data, hypers and the params declared before it.
    Bound,
    /// A top-level `let`.
    TopLet,
    /// The `model` block.
    Model,
    /// The `predict` block.
    Predict,
    /// The `generated` block: per draw, with random draws and branches on parameters.
    Generated,
    /// A user function body.
    Func,
}

/// A name in scope.
#[derive(Debug, Clone)]
pub(super) struct Sym {
    pub kind: NameKind,
    pub shape: Shape,
    pub stage: Stage,
    pub value: Option<f64>,
    pub span: Span,
    pub mutable: bool,
    /// The current index of a loop variable.
    pub loop_index: Option<i64>,
}

pub(super) struct Checker {
    pub src: NamedSource<String>,
    pub model_src: NamedSource<String>,
    pub data: BoundData,
    pub fns: Vec<SourceFn>,
    pub globals: HashMap<String, Sym>,
    pub scopes: Vec<HashMap<String, Sym>>,
    /// In a function body, lookups see only `scopes[fn_base..]`.
    pub fn_base: usize,
    pub ctx: Ctx,
    /// The statement block being checked (`model`, `predict`, `generated`), kept while a
    /// function called from it is inlined; `Decl` outside them.
    pub block: Ctx,
    pub errors: Vec<Diagnostic>,
    pub call_stack: Vec<String>,
    /// Names whose declaration failed: using them reports nothing more.
    pub poisoned: std::collections::HashSet<String>,
    /// Loop iterations unrolled so far.
    pub unrolled: i64,
    /// Functions called at least once (checked at their call sites).
    pub called: std::collections::HashSet<String>,
    /// The names of the top-level `let`s, which declarations (checked first) cannot see.
    pub top_let_names: std::collections::HashSet<String>,
    /// The constrained type of each `data`, `hyper` and `param` declared with one.
    pub declared_kinds: HashMap<String, crate::syntax::ast::TypeKind>,
    /// The names of the `model` block's own `let`s, which `predict` cannot see.
    pub model_let_names: std::collections::HashSet<String>,
}

impl Checker {
    pub(super) fn run(
        program: &Program,
        source: NamedSource<String>,
        imported: Vec<SourceFn>,
        model_dir: &Path,
        dataset: &DataSet,
    ) -> Result<TypedModel, Vec<Diagnostic>> {
        let data_decls: Vec<Decl> = program
            .items
            .iter()
            .filter_map(|i| {
                if let Item::Data(b) = i {
                    Some(b.decls.clone())
                } else {
                    None
                }
            })
            .flatten()
            .collect();
        let mut c = Checker {
            src: source.clone(),
            model_src: source.clone(),
            data: BoundData::default(),
            fns: Vec::new(),
            globals: HashMap::new(),
            scopes: Vec::new(),
            fn_base: 0,
            ctx: Ctx::Decl,
            block: Ctx::Decl,
            errors: Vec::new(),
            call_stack: Vec::new(),
            poisoned: std::collections::HashSet::new(),
            unrolled: 0,
            called: std::collections::HashSet::new(),
            top_let_names: program
                .items
                .iter()
                .filter_map(|i| match i {
                    Item::Let(l) => Some(l.name.name.clone()),
                    _ => None,
                })
                .collect(),
            declared_kinds: program
                .items
                .iter()
                .filter_map(|i| match i {
                    Item::Data(b) | Item::Hyper(b) | Item::Param(b) => Some(&b.decls),
                    _ => None,
                })
                .flatten()
                .filter_map(|d| d.ty.kind.map(|k| (d.name.name.clone(), k)))
                .collect(),
            model_let_names: program
                .items
                .iter()
                .filter_map(|i| match i {
                    Item::Model(b) => Some(&b.stmts),
                    _ => None,
                })
                .flatten()
                .filter_map(|s| match s {
                    crate::syntax::ast::Stmt::Let(l) => Some(l.name.name.clone()),
                    _ => None,
                })
                .collect(),
        };
        c.collect_fns(program, imported);
        c.check_duplicate_decls(program);
        match crate::data::bind_data(&data_decls, dataset, &source, model_dir) {
            Ok(d) => c.data = d,
            Err(es) => {
                c.errors.extend(es);
                return Err(dedupe(c.errors));
            }
        }
        let data_out = c.declare_data(&data_decls);
        let hypers = c.declare_slots(program, true);
        let params = c.declare_slots(program, false);
        let lets = c.top_lets(program);
        let model = c.stmt_block(program, Ctx::Model);
        let predict = c.stmt_block(program, Ctx::Predict);
        let generated = c.stmt_block(program, Ctx::Generated);
        let uncalled: Vec<SourceFn> = c
            .fns
            .iter()
            .filter(|f| !c.called.contains(&f.def.name.name) && f.source.name() == c.model_src.name())
            .cloned()
            .collect();
        for f in &uncalled {
            c.check_uncalled_fn(f);
        }
        let has_predict = program.items.iter().any(|i| matches!(i, Item::Predict(_)));
        let param_names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
        let (infer, infer_errors) = super::infer::check_infer_block(program, &source, &param_names);
        c.errors.extend(infer_errors);
        if !program.items.iter().any(|i| matches!(i, Item::Model(_))) && c.errors.is_empty() {
            c.errors.push(
                Diagnostic::error(
                    "mvi::check::no_model",
                    "the program has no `model` block",
                    source.clone(),
                )
                .with_label(program.span, "in this file")
                .with_help("add `model { … }` with at least one `~` statement"),
            );
        }
        if !c.errors.is_empty() {
            return Err(dedupe(c.errors));
        }
        let dim = params.iter().map(|p| p.len).sum();
        let hyper_dim = hypers.iter().map(|p| p.len).sum();
        let functions = c.fns.iter().map(|f| f.def.name.name.clone()).collect();
        Ok(TypedModel {
            source,
            data: c.data,
            data_decls: data_out,
            hypers,
            hyper_dim,
            params,
            dim,
            lets,
            model,
            predict,
            has_predict,
            generated,
            infer,
            functions,
        })
    }

    /// Whether statements run once per posterior draw (the `generated` block and the
    /// functions it calls), so branches may depend on parameters and random draws.
    pub(super) fn per_draw(&self) -> bool {
        self.block == Ctx::Generated
    }

    /// Whether `dist_rng` may be called here: in `generated`, `predict` and the functions
    /// they call (functions are checked where they are called).
    pub(super) fn rng_allowed(&self) -> bool {
        matches!(self.block, Ctx::Generated | Ctx::Predict)
    }

    pub(super) fn diag(&self, code: &'static str, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(code, msg, self.src.clone())
    }

    pub(super) fn report(&mut self, d: Diagnostic) -> Reported {
        self.errors.push(d);
        Reported
    }

    /// An error at `span` with its label and a help line saying what to do (every check
    /// diagnostic has one; `tests/it/bad_check.rs` asserts it).
    pub(super) fn fail<T>(
        &mut self,
        code: &'static str,
        msg: impl Into<String>,
        span: Span,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> R<T> {
        let d = self.diag(code, msg).with_label(span, label).with_help(help);
        Err(self.report(d))
    }

    fn collect_fns(&mut self, program: &Program, imported: Vec<SourceFn>) {
        let own = program.items.iter().filter_map(|i| {
            if let Item::Fn(f) = i {
                Some(SourceFn {
                    def: f.clone(),
                    source: self.model_src.clone(),
                })
            } else {
                None
            }
        });
        for f in imported.into_iter().chain(own) {
            let name = f.def.name.name.clone();
            let clash = if super::builtins::is_builtin(&name) {
                Some("a built-in function".to_string())
            } else if super::dists::lookup(&name).is_some()
                || super::dists::split_form(&name).is_some_and(|(b, _, _)| super::dists::lookup(b).is_some())
            {
                Some("a distribution".to_string())
            } else {
                self.fns
                    .iter()
                    .find(|g| g.def.name.name == name)
                    .map(|g| format!("a function defined in `{}`", g.source.name()))
            };
            // a constrained type or bounds on a function's parameter would be ignored: the
            // value is checked where it is declared, as in Stan, whose functions take base types
            for (p, ty) in &f.def.params {
                let affine = ty.offset.is_some() || ty.multiplier.is_some();
                if ty.kind.is_some() || ty.lower.is_some() || ty.upper.is_some() || affine {
                    let d = Diagnostic::error(
                        "mvi::check::constrained_fn_param",
                        format!(
                            "`{}` of `{name}` has a constrained type, which a function parameter cannot have",
                            p.name
                        ),
                        f.source.clone(),
                    )
                    .with_label(ty.span, "a constrained type")
                    .with_help(
                        "function parameters take the base types `real`, `int`, `vector`, `ints` \
                         and `matrix` (as in Stan); constraints belong where the value is declared \
                         (`param`, `hyper`, `data`)",
                    );
                    self.errors.push(d);
                }
            }
            if let Some(what) = clash {
                let d = Diagnostic::error(
                    "mvi::check::redeclared",
                    format!("`{name}` is already {what}"),
                    f.source.clone(),
                )
                .with_label(f.def.name.span, "redeclared here")
                .with_help("rename the function");
                self.errors.push(d);
                continue;
            }
            self.fns.push(f);
        }
    }

    /// Every name declared at top level (data, hyper, param, let) at most once.
    fn check_duplicate_decls(&mut self, program: &Program) {
        let mut seen: HashMap<String, Span> = HashMap::new();
        for item in &program.items {
            let names: Vec<(String, Span)> = match item {
                Item::Data(b) | Item::Hyper(b) | Item::Param(b) => b
                    .decls
                    .iter()
                    .map(|d| (d.name.name.clone(), d.name.span))
                    .collect(),
                Item::Let(l) => vec![(l.name.name.clone(), l.name.span)],
                _ => vec![],
            };
            for (n, span) in names {
                if let Some(first) = seen.get(&n) {
                    let d = self
                        .diag("mvi::check::redeclared", format!("`{n}` is declared twice"))
                        .with_label(span, "declared again here")
                        .with_label(*first, "first declared here")
                        .with_help("every name is declared once; rename one of them");
                    self.errors.push(d);
                } else if self.fns.iter().any(|f| f.def.name.name == n) {
                    let d = self
                        .diag(
                            "mvi::check::redeclared",
                            format!("`{n}` is already the name of a function"),
                        )
                        .with_label(span, "declared here");
                    self.errors.push(d);
                } else {
                    seen.insert(n, span);
                }
            }
        }
    }

    fn declare_data(&mut self, decls: &[Decl]) -> Vec<DataDecl> {
        for (n, v) in self.data.sizes.clone() {
            let span = decls
                .iter()
                .flat_map(|d| &d.ty.sizes)
                .find(|s| matches!(&s.kind, crate::syntax::ast::ExprKind::Name(x) if *x == n))
                .map_or(Span::default(), |s| s.span);
            self.globals.insert(
                n,
                Sym {
                    kind: NameKind::Size,
                    shape: Shape::Int,
                    stage: Stage::Const,
                    value: Some(v as f64),
                    span,
                    mutable: false,
                    loop_index: None,
                },
            );
        }
        let mut out = Vec::new();
        for d in decls {
            let Some(v) = self.data.get(&d.name.name) else {
                continue;
            };
            let shape = match (d.ty.base, value_shape(v)) {
                // held as a 1×n matrix (data::bind)
                (crate::syntax::ast::BaseType::RowVector, Shape::Matrix(1, n)) => Shape::RowVector(n),
                (_, s) => s,
            };
            let value = v.as_scalar();
            self.globals.insert(
                d.name.name.clone(),
                Sym {
                    kind: NameKind::Data,
                    shape,
                    stage: Stage::Const,
                    value,
                    span: d.name.span,
                    mutable: false,
                    loop_index: None,
                },
            );
            out.push(DataDecl {
                name: d.name.name.clone(),
                shape,
                declared: self.snippet(d.ty.span),
            });
        }
        out
    }

    /// A declaration that reuses the name of a size variable bound from the data.
    fn size_clash(&mut self, name: &str, span: Span) {
        let Some(sym) = self.globals.get(name).filter(|s| s.kind == NameKind::Size) else {
            return;
        };
        let first = sym.span;
        let d = self
            .diag(
                "mvi::check::redeclared",
                format!("`{name}` is already a size variable bound from the data"),
            )
            .with_label(span, "declared again here")
            .with_label(first, "size variable here")
            .with_help("rename the size or the declaration");
        self.errors.push(d);
        self.poisoned.insert(name.to_string());
    }

    pub(super) fn snippet(&self, span: Span) -> String {
        self.src
            .inner()
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
            .to_string()
    }

    fn declare_slots(&mut self, program: &Program, hyper: bool) -> Vec<Slot> {
        let decls: Vec<Decl> = program
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Hyper(b) if hyper => Some(b.decls.clone()),
                Item::Param(b) if !hyper => Some(b.decls.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        let mut slots = Vec::new();
        let mut offset = 0;
        // Hypers come before params: a bound may only read what is declared before it.
        let mut later: Vec<String> = program
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Hyper(b) => Some(&b.decls),
                Item::Param(b) => Some(&b.decls),
                _ => None,
            })
            .flatten()
            .map(|d| d.name.name.clone())
            .filter(|n| !self.globals.contains_key(n))
            .collect();
        for d in &decls {
            later.retain(|n| n != &d.name.name);
            if self.globals.contains_key(&d.name.name) {
                self.size_clash(&d.name.name, d.name.span);
                continue; // other clashes are reported by check_duplicate_decls
            }
            let Ok(slot) = self.slot(d, hyper, offset, &later) else {
                self.poisoned.insert(d.name.name.clone());
                continue;
            };
            offset += slot.len;
            let kind = if hyper { NameKind::Hyper } else { NameKind::Param };
            let stage = if hyper { Stage::Hyper } else { Stage::Param };
            self.globals.insert(
                d.name.name.clone(),
                Sym {
                    kind,
                    shape: slot.shape,
                    stage,
                    value: None,
                    span: d.name.span,
                    mutable: false,
                    loop_index: None,
                },
            );
            slots.push(slot);
        }
        slots
    }

    fn slot(&mut self, d: &Decl, hyper: bool, offset: usize, later: &[String]) -> R<Slot> {
        self.ctx = Ctx::Decl;
        let block = if hyper { "hyper" } else { "param" };
        let shape = self.decl_shape(&d.ty, block)?;
        let (transform, dependent, len) = self.decl_transform(d, shape, later)?;
        let (init, init_expr) = if hyper {
            self.hyper_init(d, shape, transform)?
        } else {
            self.no_init(d)?
        };
        Ok(Slot {
            name: d.name.name.clone(),
            shape,
            declared: self.snippet(d.ty.span),
            transform,
            offset,
            len,
            init,
            init_expr,
            dependent,
        })
    }

    fn no_init(&mut self, d: &Decl) -> R<(Option<Vec<f64>>, Option<TExpr>)> {
        match &d.init {
            Some(e) => self.fail(
                "mvi::check::param_with_value",
                format!("param `{}` cannot have a value", d.name.name),
                e.span,
                "remove this",
                "a `param` is what inference finds: remove `= …`, or declare a fixed value as `data` or a `let`",
            ),
            None => Ok((None, None)),
        }
    }

    fn hyper_init(
        &mut self,
        d: &Decl,
        shape: Shape,
        transform: Transform,
    ) -> R<(Option<Vec<f64>>, Option<TExpr>)> {
        let Some(init) = &d.init else {
            return self.fail(
                "mvi::check::hyper_without_init",
                format!("hyper `{}` needs an initial value", d.name.name),
                d.span,
                "no `= value`",
                format!(
                    "a hyper is a point estimate that starts from its initial value: write \
                     `{}: … = value` (a number, or an expression of data)",
                    d.name.name
                ),
            );
        };
        let e = self.expr(init)?;
        if shape.len() > MAX_SIZE {
            return self.fail(
                "mvi::check::size_too_large",
                format!(
                    "`{}` would hold {} values (at most {MAX_SIZE})",
                    d.name.name,
                    shape.len()
                ),
                d.ty.span,
                "too large",
                format!("check the sizes and the data they come from; a declaration holds at most {MAX_SIZE} values"),
            );
        }
        if e.stage != Stage::Const {
            return self.fail(
                "mvi::check::init_not_data",
                "an initial value may only use data",
                e.span,
                "this depends on a hyper or param",
                "an initial value is computed before inference: use data, literals and functions of them",
            );
        }
        if e.shape.to_real() != shape && !e.shape.is_scalar() {
            return self.fail(
                "mvi::check::shape_mismatch",
                format!(
                    "the initial value of `{}` is {}, but it is declared {shape}",
                    d.name.name, e.shape
                ),
                e.span,
                format!("this is {}", e.shape),
                "give an initial value of the declared shape, e.g. `rep_vector(0, N)` for a `vector[N]`",
            );
        }
        let values = self
            .const_values(&e)
            .map(|v| if v.len() == 1 { vec![v[0]; shape.len()] } else { v });
        if let Some(vs) = &values {
            if let Some(bad) = vs.iter().find(|x| !transform_contains(transform, **x)) {
                let d = self
                    .diag(
                        "mvi::check::init_violates_constraint",
                        format!(
                            "the initial value {bad} of `{}` is outside its constraint",
                            d.name.name
                        ),
                    )
                    .with_label(e.span, "this value")
                    .with_help(
                        "a hyperparameter starts strictly inside its bounds (its transform maps \
                         the open interval onto the real line): e.g. `<lower=0>` needs a value \
                         above 0",
                    );
                return Err(self.report(d));
            }
        }
        Ok((values, Some(e)))
    }

    /// The values of a data-only expression, column-major, when they are known now.
    pub(super) fn const_values(&self, e: &TExpr) -> Option<Vec<f64>> {
        if let Some(v) = e.value {
            return Some(vec![v]);
        }
        match &e.kind {
            TExprKind::Vector(xs) => xs.iter().map(|x| x.value).collect(),
            TExprKind::Matrix(rows) => {
                let ncols = rows.first().map_or(0, Vec::len);
                (0..ncols)
                    .flat_map(|j| rows.iter().map(move |r| r.get(j).and_then(|x| x.value)))
                    .collect()
            }
            TExprKind::Call(f, args) if f == "rep_vector" || f == "rep_matrix" => {
                let x = args.first()?.value?;
                Some(vec![x; e.shape.len()])
            }
            TExprKind::Name(n, NameKind::Data) => {
                let v = self.data.get(n)?;
                (0..e.shape.len()).map(|i| v.element(i)).collect()
            }
            _ => None,
        }
    }

    /// The concrete shape of a declared type; sizes must be known ints.
    pub(super) fn decl_shape(&mut self, ty: &TypeExpr, block: &str) -> R<Shape> {
        let want = match ty.base {
            BaseType::Int | BaseType::Ints if block != "fn" => {
                let d = self
                    .diag(
                        "mvi::check::integer_param",
                        format!("a {block} must be real, vector or matrix"),
                    )
                    .with_label(ty.span, "integer type here")
                    .with_help(
                        "the methods approximate a density over real numbers, so there are no \
                         discrete unknowns: declare it `real`, or marginalise the discrete \
                         variable out with `target += log_sum_exp(…)` as in Stan",
                    );
                return Err(self.report(d));
            }
            BaseType::Int | BaseType::Real => 0,
            BaseType::Vector | BaseType::RowVector | BaseType::Ints => 1,
            BaseType::Matrix => 2,
        };
        if ty.sizes.len() != want {
            let msg = if ty.sizes.is_empty() {
                format!("a {block} needs its sizes written out")
            } else {
                format!(
                    "this type takes {want} size{}, found {}",
                    if want == 1 { "" } else { "s" },
                    ty.sizes.len()
                )
            };
            return self.fail(
                "mvi::check::missing_size",
                msg,
                ty.span,
                "here",
                "write the sizes in brackets after the type, e.g. `vector[N]` or `matrix[N, K]`",
            );
        }
        let mut sizes = Vec::new();
        for s in &ty.sizes {
            sizes.push(self.size_value(s)?);
        }
        Ok(match ty.base {
            BaseType::Int => Shape::Int,
            BaseType::Real => Shape::Real,
            BaseType::Vector => Shape::Vector(sizes[0]),
            BaseType::RowVector => Shape::RowVector(sizes[0]),
            BaseType::Ints => Shape::Ints(sizes[0]),
            BaseType::Matrix => Shape::Matrix(sizes[0], sizes[1]),
        })
    }

    pub(super) fn size_value(&mut self, s: &crate::syntax::ast::Expr) -> R<usize> {
        let e = self.expr(s)?;
        match (e.shape, e.value) {
            (Shape::Int, Some(v)) if v > MAX_SIZE as f64 => self.fail(
                "mvi::check::size_too_large",
                format!("a size of {v} is too large (at most {MAX_SIZE})"),
                s.span,
                "too large",
                format!("check the size and the data it comes from; a size is at most {MAX_SIZE}"),
            ),
            (Shape::Int, Some(v)) if v >= 0.0 => Ok(v as usize),
            (Shape::Int, Some(v)) => self.fail(
                "mvi::check::negative_size",
                format!("a size must not be negative, this is {v}"),
                s.span,
                "negative",
                "a size counts entries: check the data value or the expression it comes from",
            ),
            (Shape::Int, None) => self.fail(
                "mvi::check::unknown_size",
                "a size must be known from the data",
                s.span,
                "not known before inference",
                "use a data `int` (or an expression of data ints and literals) for the size",
            ),
            (sh, _) => self.fail(
                "mvi::check::size_not_int",
                format!("a size must be an int, found {sh}"),
                s.span,
                "not an int",
                "declare the data the size comes from as `int`, or write an integer literal",
            ),
        }
    }

    fn top_lets(&mut self, program: &Program) -> Vec<(String, TExpr)> {
        let mut out = Vec::new();
        for item in &program.items {
            let Item::Let(l) = item else { continue };
            self.ctx = Ctx::TopLet;
            let Ok(e) = self.expr(&l.value) else {
                self.poisoned.insert(l.name.name.clone());
                continue;
            };
            if self.globals.contains_key(&l.name.name) {
                self.size_clash(&l.name.name, l.name.span);
                continue;
            }
            self.globals.insert(
                l.name.name.clone(),
                Sym {
                    kind: NameKind::Global,
                    shape: e.shape,
                    stage: e.stage,
                    value: e.value,
                    span: l.name.span,
                    mutable: false,
                    loop_index: None,
                },
            );
            out.push((l.name.name.clone(), e));
        }
        out
    }

    fn stmt_block(&mut self, program: &Program, ctx: Ctx) -> Vec<super::types::TStmt> {
        let mut out = Vec::new();
        for item in &program.items {
            match (item, ctx) {
                (Item::Model(b), Ctx::Model)
                | (Item::Predict(b), Ctx::Predict)
                | (Item::Generated(b), Ctx::Generated) => {
                    self.ctx = ctx;
                    self.block = ctx;
                    self.scopes = vec![HashMap::new()];
                    out.extend(self.stmts(&b.stmts));
                    self.scopes.clear();
                    self.block = Ctx::Decl;
                }
                _ => {}
            }
        }
        out
    }
}

/// The largest size a declared type may have.
pub(super) const MAX_SIZE: usize = 10_000_000;

pub(super) fn transform_contains(t: Transform, x: f64) -> bool {
    match t {
        Transform::Identity => true,
        Transform::Lower(a) => x > a,
        Transform::Upper(b) => x < b,
        Transform::LowerUpper(a, b) => x > a && x < b,
        // Checked on the whole value (constrained types) or when lowering (dependent bounds).
        Transform::Type(_) | Transform::Dependent => true,
    }
}

pub(super) fn value_shape(v: &Value) -> Shape {
    match v {
        Value::Int(_) => Shape::Int,
        Value::Real(_) => Shape::Real,
        Value::Vector(x) => Shape::Vector(x.len()),
        Value::Matrix(m) => Shape::Matrix(m.nrows(), m.ncols()),
        Value::Ints(x) => Shape::Ints(x.len()),
    }
}

/// Remove repeated diagnostics (a function body checked at several call sites).
fn dedupe(errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for e in errors {
        let same = out.iter().any(|o| {
            o.code == e.code
                && o.message == e.message
                && o.labels == e.labels
                && o.source_code.name() == e.source_code.name()
        });
        if !same {
            out.push(e);
        }
    }
    out
}
