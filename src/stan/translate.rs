//! A Stan [`Program`] → `.mvi` text and a [`SourceMap`] back to the `.stan` spans.
//!
//! The mapping is docs/language.md's "Coming from Stan" table: `data` declarations become
//! `data { name: type }` (a real array `vector[N]`, an integer array `ints[N]`),
//! `transformed data` and `transformed parameters` top-level `let`s, `parameters` `param`,
//! `model` `model` and `generated quantities` `generated`. A declaration without a value
//! that a later `x = e;` gives its value becomes `let x = e` there; otherwise it starts from
//! zeros of its shape and is updated entry by entry, as `.mvi` locals are. The statements of
//! `transformed data` that cannot be top-level `let`s (loops, branches, entry updates) run in
//! a function per variable, called by a top-level `let`; those of `transformed parameters`
//! run at the start of `model`, and again in `generated` so that the transformed parameters
//! are still reported. A construct with no `.mvi` counterpart is an [`Unsupported`] naming
//! it.

use std::collections::{HashMap, HashSet};

use miette::NamedSource;

use super::ast::*;
use super::SourceMap;
use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;

/// A construct the translation cannot express in `.mvi`.
#[derive(Debug, Clone)]
pub struct Unsupported {
    /// Where it is in the `.stan` file.
    pub span: Span,
    /// What it is, e.g. "`while` loops".
    pub what: String,
    /// What to do instead.
    pub help: String,
}

impl Unsupported {
    fn new(span: Span, what: impl Into<String>, help: impl Into<String>) -> Self {
        Unsupported {
            span,
            what: what.into(),
            help: help.into(),
        }
    }

    /// The diagnostic, pointing into the `.stan` file.
    pub fn to_diagnostic(&self, stan: NamedSource<String>) -> Diagnostic {
        Diagnostic::error(
            "mvi::stan::unsupported",
            format!("{} not supported when running Stan programs", self.what),
            stan,
        )
        .with_label(self.span, "not supported")
        .with_help(self.help.clone())
    }
}

type R<T> = Result<T, Unsupported>;

/// Translate a parsed Stan program to `.mvi` text.
///
/// # Errors
/// The first construct that has no `.mvi` counterpart.
pub fn translate_program(p: &Program) -> R<(String, SourceMap)> {
    let mut t = Tr {
        out: String::new(),
        map: SourceMap::default(),
        indent: 0,
        user_fns: p.functions.iter().map(|f| f.name.name.clone()).collect(),
        int_lets: HashMap::new(),
        in_decl_type: false,
        types: HashMap::new(),
    };
    t.program(p)?;
    Ok((t.out, t.map))
}

/// Where statements are written: what they may contain differs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ctx {
    /// Top-level `let`s (transformed data and parameters with only declarations).
    Top,
    /// The `model` block.
    Model,
    /// The `generated` block.
    Generated,
    /// A function body.
    Fn,
}

/// `.mvi` reserved words that Stan allows as names; such a name gets a trailing `_`.
const MVI_RESERVED: [&str; 11] = [
    "let",
    "fn",
    "import",
    "data",
    "hyper",
    "param",
    "model",
    "predict",
    "generated",
    "infer",
    "ints",
];

/// The distribution families `.mvi` knows, by Stan's names, for the old `_log` suffix.
const FAMILIES: [&str; 45] = [
    "bernoulli",
    "bernoulli_logit",
    "beta",
    "beta_binomial",
    "binomial",
    "binomial_logit",
    "categorical",
    "categorical_logit",
    "cauchy",
    "chi_square",
    "dirichlet",
    "double_exponential",
    "exp_mod_normal",
    "exponential",
    "gamma",
    "gumbel",
    "inv_chi_square",
    "inv_gamma",
    "inv_wishart_cholesky",
    "lkj_corr",
    "lkj_corr_cholesky",
    "logistic",
    "lognormal",
    "multi_normal",
    "multi_normal_cholesky",
    "multi_student_t",
    "multinomial",
    "neg_binomial_2",
    "neg_binomial_2_log",
    "normal",
    "ordered_logistic",
    "ordered_probit",
    "pareto",
    "poisson",
    "poisson_log",
    "scaled_inv_chi_square",
    "skew_normal",
    "student_t",
    "uniform",
    "von_mises",
    "weibull",
    "wishart_cholesky",
    "std_normal",
    "half_normal",
    "half_cauchy",
];

/// Binding power of `.mvi`'s operators (Stan's), for parentheses.
const P_TERNARY: u8 = 1;
const P_UNARY: u8 = 10;
const P_POSTFIX: u8 = 12;
const P_ATOM: u8 = 13;

fn binary_precedence(op: &str) -> (u8, bool) {
    match op {
        "||" => (2, false),
        "&&" => (3, false),
        "==" | "!=" => (4, false),
        "<" | "<=" | ">" | ">=" => (5, false),
        "+" | "-" => (6, false),
        "*" | "/" | "%" | "%/%" => (7, false),
        "\\" => (8, false),
        ".*" | "./" => (9, false),
        _ => (11, true),
    }
}

fn mvi_name(name: &str) -> String {
    if MVI_RESERVED.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

struct Tr {
    out: String,
    map: SourceMap,
    indent: usize,
    user_fns: HashSet<String>,
    /// Integer top-level `let`s of transformed data, by name: a declaration's sizes and
    /// bounds cannot use a top-level `let`, so there they are written out.
    int_lets: HashMap<String, Expr>,
    /// Whether the text being written is a declaration's sizes or bounds.
    in_decl_type: bool,
    /// The `.mvi` argument type (`vector`, `ints`, …) of each data name and top-level `let`
    /// of transformed data, for the functions that compute the rest of transformed data.
    types: HashMap<String, String>,
}

impl Tr {
    fn w(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn line_start(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    fn program(&mut self, p: &Program) -> R<()> {
        for f in &p.functions {
            self.fun_def(f)?;
        }
        self.data_block(&p.data)?;
        for d in &p.data {
            if let Some(ty) = decl_unsized(d) {
                self.types.insert(d.name.name.clone(), ty);
            }
        }
        let (td_top, td_rest) = hoist(fold_items(&p.tdata));
        self.top_lets(&td_top)?;
        for item in &td_top {
            if let Item::Let(d, value, _) = item {
                if let Some(ty) = decl_unsized(d) {
                    self.types.insert(d.name.name.clone(), ty);
                }
                if d.ty == "int" && d.array_dims.is_empty() {
                    self.int_lets.insert(d.name.name.clone(), (*value).clone());
                }
            }
        }
        self.tdata_functions(&td_rest)?;
        self.param_block(&p.params)?;
        let (tp_top, tp_rest) = hoist(fold_items(&p.tparams));
        self.top_lets(&tp_top)?;
        self.w("model {\n");
        self.indent = 1;
        self.items(&tp_rest, Ctx::Model)?;
        self.stmts(&p.model, Ctx::Model)?;
        self.indent = 0;
        self.w("}\n");
        if p.gq.is_empty() && tp_rest.is_empty() {
            return Ok(());
        }
        self.w("\ngenerated {\n");
        self.indent = 1;
        self.items(&tp_rest, Ctx::Generated)?;
        self.stmts(&p.gq, Ctx::Generated)?;
        self.indent = 0;
        self.w("}\n");
        Ok(())
    }

    /// The statements of `transformed data` that cannot be top-level `let`s (loops,
    /// branches, entry updates) run in one function per variable they declare, which takes
    /// the data it reads and returns that variable: `let Xc = tdata_Xc(X, K, N)`. The data
    /// are then computed once, before the parameters, as Stan computes them.
    fn tdata_functions(&mut self, rest: &[Item<'_>]) -> R<()> {
        if rest.is_empty() {
            return Ok(());
        }
        let mut reads = HashSet::new();
        rest.iter().for_each(|i| item_names(i, &mut reads));
        let declared_inside = declared_names(rest);
        let mut args: Vec<String> = reads
            .into_iter()
            .filter(|n| !declared_inside.contains(n))
            .collect();
        args.sort();
        let mut typed_args = Vec::new();
        for name in &args {
            let Some(ty) = self.types.get(name) else {
                let span = first_mention(rest, name).unwrap_or_default();
                return Err(Unsupported::new(
                    span,
                    format!("`transformed data` statements that read `{name}` (an array of vectors or matrices) are"),
                    "compute the value in the data file",
                ));
            };
            typed_args.push(format!("{}: {ty}", mvi_name(name)));
        }
        let call_args: Vec<String> = args.iter().map(|n| mvi_name(n)).collect();
        for item in rest {
            let (Item::Let(d, ..) | Item::Zeros(d)) = item else {
                continue;
            };
            let Some(ty) = decl_unsized(d) else {
                return Err(Unsupported::new(
                    d.span,
                    "arrays of vectors or matrices computed in `transformed data` statements are",
                    "compute the value in the data file",
                ));
            };
            let name = mvi_name(&d.name.name);
            let start = self.out.len();
            self.w(&format!(
                "fn tdata_{name}({}) -> {ty} {{\n",
                typed_args.join(", ")
            ));
            self.indent = 1;
            self.items(rest, Ctx::Fn)?;
            self.w(&format!("  return {name}\n}}\n"));
            self.indent = 0;
            self.map.push(start, self.out.len(), d.span);
            let start = self.out.len();
            self.w(&format!("let {name} = tdata_{name}({})", call_args.join(", ")));
            self.map.push(start, self.out.len(), d.span);
            self.w("\n\n");
            self.types.insert(d.name.name.clone(), ty);
        }
        Ok(())
    }

    fn top_lets(&mut self, items: &[Item<'_>]) -> R<()> {
        if items.is_empty() {
            return Ok(());
        }
        self.items(items, Ctx::Top)?;
        self.w("\n");
        Ok(())
    }

    fn data_block(&mut self, decls: &[VarDecl]) -> R<()> {
        if decls.is_empty() {
            return Ok(());
        }
        self.w("data {\n");
        for d in decls {
            self.block_decl(d, "data")?;
        }
        self.w("}\n\n");
        Ok(())
    }

    fn param_block(&mut self, decls: &[VarDecl]) -> R<()> {
        if decls.is_empty() {
            return Ok(());
        }
        self.w("param {\n");
        for d in decls {
            if d.ty == "int" {
                return Err(Unsupported::new(
                    d.type_span,
                    "integer parameters are",
                    "Stan does not allow them either; marginalise the discrete parameter out",
                ));
            }
            self.block_decl(d, "parameters")?;
        }
        self.w("}\n\n");
        Ok(())
    }

    /// `  name: type` in `data` or `param`.
    fn block_decl(&mut self, d: &VarDecl, block: &str) -> R<()> {
        if let Some(init) = &d.init {
            return Err(Unsupported::new(
                init.span,
                format!("a value in a `{block}` declaration is"),
                "Stan does not allow it either; move it to `transformed data`",
            ));
        }
        let start = self.out.len();
        self.w("  ");
        self.w(&mvi_name(&d.name.name));
        self.w(": ");
        self.decl_type(d)?;
        self.map.push(start, self.out.len(), d.span);
        self.w("\n");
        Ok(())
    }

    /// The `.mvi` type of a sized declaration: `vector<lower=0>[N]`, `ints[N]`,
    /// `array[N] simplex[K]`.
    fn decl_type(&mut self, d: &VarDecl) -> R<()> {
        self.in_decl_type = true;
        let written = self.decl_type_inner(d);
        self.in_decl_type = false;
        written
    }

    fn decl_type_inner(&mut self, d: &VarDecl) -> R<()> {
        let start = self.out.len();
        let dims = &d.array_dims;
        match (d.ty.as_str(), dims.len()) {
            ("complex", _) => {
                return Err(Unsupported::new(d.type_span, "complex numbers are", "write the real and imaginary parts as two reals"))
            }
            ("int", 0) | ("real", 0) => {
                self.w(&d.ty);
                self.bounds(&d.bounds)?;
            }
            ("int", 1) => {
                self.w("ints");
                self.bounds(&d.bounds)?;
                self.sizes(dims)?;
            }
            ("int", _) => {
                return Err(Unsupported::new(
                    d.type_span,
                    "integer arrays of more than one dimension are",
                    "flatten the array to one dimension (`array[M * T] int`) and index it as `y[(i - 1) * T + j]`",
                ))
            }
            ("real", 1) => {
                self.w("vector");
                self.bounds(&d.bounds)?;
                self.sizes(dims)?;
            }
            ("real", 2) => {
                self.w("matrix");
                self.bounds(&d.bounds)?;
                self.sizes(dims)?;
            }
            (_, n) if n > 1 || n == 1 && d.ty == "real" => {
                return Err(Unsupported::new(
                    d.type_span,
                    "arrays of more than two dimensions are",
                    "flatten the array to fewer dimensions",
                ))
            }
            (ty, n) => {
                if n == 1 {
                    self.w("array");
                    self.sizes(dims)?;
                    self.w(" ");
                }
                self.w(ty);
                self.bounds(&d.bounds)?;
                if !d.sizes.is_empty() {
                    self.sizes(&d.sizes)?;
                }
            }
        }
        self.map.push(start, self.out.len(), d.type_span);
        Ok(())
    }

    fn bounds(&mut self, bounds: &[(String, Expr)]) -> R<()> {
        if bounds.is_empty() {
            return Ok(());
        }
        self.w("<");
        for (i, (key, e)) in bounds.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.w(key);
            self.w("=");
            // A bound stops at `>`: comparisons inside it need parentheses.
            self.expr(e, 6)?;
        }
        self.w(">");
        Ok(())
    }

    fn sizes(&mut self, sizes: &[Expr]) -> R<()> {
        self.w("[");
        for (i, e) in sizes.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.expr(e, 0)?;
        }
        self.w("]");
        Ok(())
    }

    // ------------------------------------------------------------ functions

    fn fun_def(&mut self, f: &FunDef) -> R<()> {
        let Some(body) = &f.body else {
            return Ok(());
        };
        let Some(ret) = &f.ret else {
            return Err(Unsupported::new(
                f.name.span,
                "functions returning `void` are",
                "`.mvi` functions are pure and return a value; write the statements where the function is called",
            ));
        };
        if f.name.name.ends_with("_lp") {
            return Err(Unsupported::new(
                f.name.span,
                "`_lp` functions (which add to `target`) are",
                "return the log density instead and add it with `target +=` where the function is called",
            ));
        }
        let start = self.out.len();
        self.w("fn ");
        self.w(&mvi_name(&f.name.name));
        self.w("(");
        for (i, a) in f.args.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.w(&mvi_name(&a.name.name));
            self.w(": ");
            let ty = unsized_type(&a.ty)?;
            self.w(&ty);
        }
        self.w(") -> ");
        let ty = unsized_type(ret)?;
        self.w(&ty);
        self.w(" {\n");
        self.indent = 1;
        let (last, rest) = body.split_last().ok_or_else(|| {
            Unsupported::new(
                f.span,
                "a function without a `return` is",
                "end the body with `return e;`",
            )
        })?;
        let StmtKind::Return(Some(value)) = &last.kind else {
            return Err(Unsupported::new(
                last.span,
                "a function whose last statement is not `return e;` is",
                "compute the result into a local and return it at the end: `.mvi` functions have one `return`, last",
            ));
        };
        self.stmts(rest, Ctx::Fn)?;
        self.line_start();
        let s = self.out.len();
        self.w("return ");
        self.expr(value, 0)?;
        self.map.push(s, self.out.len(), last.span);
        self.w("\n");
        self.indent = 0;
        self.w("}\n");
        self.map.push(start, self.out.len(), f.span);
        self.w("\n");
        Ok(())
    }

    // ------------------------------------------------------------ statements

    fn stmts(&mut self, list: &[Stmt], ctx: Ctx) -> R<()> {
        self.items(&fold_items(list), ctx)
    }

    fn items(&mut self, items: &[Item<'_>], ctx: Ctx) -> R<()> {
        for item in items {
            match item {
                Item::Let(d, value, span) => self.let_line(d, value, *span)?,
                Item::Zeros(d) => self.default_let(d)?,
                Item::Stmt(s) => self.stmt(s, ctx)?,
            }
        }
        Ok(())
    }

    /// `let x = e` for a declaration given its value by `e`.
    fn let_line(&mut self, d: &VarDecl, value: &Expr, span: Span) -> R<()> {
        self.line_start();
        let start = self.out.len();
        self.w("let ");
        self.w(&mvi_name(&d.name.name));
        self.w(" = ");
        match &value.kind {
            ExprKind::Int(digits) if d.ty == "real" && d.array_dims.is_empty() => {
                let s = self.out.len();
                self.w(digits);
                self.w(".0");
                self.map.push(s, self.out.len(), value.span);
            }
            _ => self.expr(value, 0)?,
        }
        self.map.push(start, self.out.len(), span);
        self.w("\n");
        Ok(())
    }

    /// `let x = <zeros of its shape>` for a declaration whose entries are set later.
    fn default_let(&mut self, d: &VarDecl) -> R<()> {
        self.line_start();
        let start = self.out.len();
        self.w("let ");
        self.w(&mvi_name(&d.name.name));
        self.w(" = ");
        self.zeros(d)?;
        self.map.push(start, self.out.len(), d.span);
        self.w("\n");
        Ok(())
    }

    fn zeros(&mut self, d: &VarDecl) -> R<()> {
        let arr = &d.array_dims;
        let sz = &d.sizes;
        let vector_like = matches!(
            d.ty.as_str(),
            "vector" | "simplex" | "ordered" | "positive_ordered" | "unit_vector" | "sum_to_zero_vector"
        );
        match (d.ty.as_str(), arr.len()) {
            ("int", 0) => self.w("0"),
            ("real", 0) => self.w("0.0"),
            // An `ints` array of zeros: a comparison of vectors is one.
            ("int", 1) => {
                self.w("(");
                self.call_with("rep_vector(0.0", &[&arr[0]])?;
                self.w(" == 1)");
            }
            ("real", 1) => self.call_with("rep_vector(0.0", &[&arr[0]])?,
            ("int" | "real", 2) => self.call_with("rep_matrix(0.0", &[&arr[0], &arr[1]])?,
            (_, 0) if vector_like => self.call_with("rep_vector(0.0", &[&sz[0]])?,
            ("row_vector", 0) => self.call_with("rep_row_vector(0.0", &[&sz[0]])?,
            ("matrix" | "cholesky_factor_cov", 0) if sz.len() == 2 => {
                self.call_with("rep_matrix(0.0", &[&sz[0], &sz[1]])?
            }
            ("matrix" | "cholesky_factor_cov" | "cov_matrix" | "corr_matrix" | "cholesky_factor_corr", 0) => {
                self.call_with("rep_matrix(0.0", &[&sz[0], &sz[0]])?
            }
            _ => {
                return Err(Unsupported::new(
                    d.span,
                    "a local array of vectors or matrices declared without a value is",
                    "give it its value in the declaration",
                ))
            }
        }
        Ok(())
    }

    fn call_with(&mut self, head: &str, args: &[&Expr]) -> R<()> {
        self.w(head);
        for a in args {
            self.w(", ");
            self.expr(a, 0)?;
        }
        self.w(")");
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, ctx: Ctx) -> R<()> {
        match &s.kind {
            StmtKind::Decl(_) => unreachable!("fold_items turns every declaration into an item of its own"),
            StmtKind::Block(list) => self.stmts(list, ctx),
            StmtKind::Empty | StmtKind::Print => Ok(()),
            StmtKind::For { var, lo, hi, body } => self.for_stmt(s, var, lo, hi.as_ref(), body, ctx),
            StmtKind::If { cond, then, els } => {
                self.line_start();
                self.if_stmt(s.span, cond, then, els.as_deref(), ctx)
            }
            StmtKind::Assign { lhs, op, rhs } => self.assign(s.span, lhs, op, rhs),
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                trunc,
            } => self.tilde(s.span, lhs, dist, args, trunc.as_ref(), ctx),
            StmtKind::Target(e) => {
                if ctx != Ctx::Model {
                    return Err(Unsupported::new(
                        s.span,
                        "`target +=` outside the `model` block is",
                        "move it to `model`",
                    ));
                }
                self.line_start();
                let start = self.out.len();
                self.w("target += ");
                self.expr(e, 0)?;
                self.map.push(start, self.out.len(), s.span);
                self.w("\n");
                Ok(())
            }
            StmtKind::While => Err(Unsupported::new(
                s.span,
                "`while` loops are",
                "write the loop as a `for` loop over a range known from the data",
            )),
            StmtKind::Break | StmtKind::Continue => Err(Unsupported::new(
                s.span,
                "`break` and `continue` are",
                "put the rest of the loop body in an `if`",
            )),
            StmtKind::Return(_) => Err(Unsupported::new(
                s.span,
                "a `return` before the end of a function is",
                "compute the result into a local and return it at the end",
            )),
            StmtKind::Reject => Err(Unsupported::new(
                s.span,
                "`reject` and `fatal_error` are",
                "a parameter region the model rejects can be given `target += negative_infinity()`",
            )),
            StmtKind::Call(_) => Err(Unsupported::new(
                s.span,
                "calls of functions without a value (`f(x);`) are",
                "call the function where its value is used",
            )),
        }
    }

    fn for_stmt(
        &mut self,
        s: &Stmt,
        var: &Ident,
        lo: &Expr,
        hi: Option<&Expr>,
        body: &Stmt,
        ctx: Ctx,
    ) -> R<()> {
        let Some(hi) = hi else {
            return Err(Unsupported::new(
                s.span,
                "loops over the elements of a container (`for (x in xs)`) are",
                "loop over the indices: `for (i in 1:size(xs))`",
            ));
        };
        self.line_start();
        let start = self.out.len();
        self.w("for ");
        self.w(&mvi_name(&var.name));
        self.w(" in ");
        self.expr(lo, 6)?;
        self.w(":");
        self.expr(hi, 6)?;
        self.map.push(start, self.out.len(), s.span);
        self.w(" {\n");
        self.body(body, ctx)?;
        self.line_start();
        self.w("}\n");
        Ok(())
    }

    fn body(&mut self, body: &Stmt, ctx: Ctx) -> R<()> {
        self.indent += 1;
        match &body.kind {
            StmtKind::Block(list) => self.stmts(list, ctx)?,
            _ => self.stmts(std::slice::from_ref(body), ctx)?,
        }
        self.indent -= 1;
        Ok(())
    }

    fn if_stmt(&mut self, span: Span, cond: &Expr, then: &Stmt, els: Option<&Stmt>, ctx: Ctx) -> R<()> {
        let start = self.out.len();
        self.w("if ");
        self.expr(cond, 0)?;
        self.map.push(start, self.out.len(), span);
        self.w(" {\n");
        self.body(then, ctx)?;
        self.line_start();
        self.w("}");
        if let Some(els) = els {
            self.w(" else ");
            if let StmtKind::If {
                cond,
                then,
                els: next,
            } = &els.kind
            {
                return self.if_stmt(els.span, cond, then, next.as_deref(), ctx);
            }
            self.w("{\n");
            self.body(els, ctx)?;
            self.line_start();
            self.w("}");
        }
        self.w("\n");
        Ok(())
    }

    fn assign(&mut self, span: Span, lhs: &LValue, op: &str, rhs: &Expr) -> R<()> {
        self.line_start();
        let start = self.out.len();
        let s = self.out.len();
        self.w(&mvi_name(&lhs.name.name));
        for idx in &lhs.indices {
            self.indices(idx)?;
        }
        self.map.push(s, self.out.len(), lhs.span);
        let lhs_text = self.out[s..].to_string();
        match op {
            ".*=" | "./=" => {
                self.w(" = ");
                self.w(&lhs_text);
                self.w(if op == ".*=" { " .* " } else { " ./ " });
                self.expr(rhs, 10)?;
            }
            "<-" => {
                self.w(" = ");
                self.expr(rhs, 0)?;
            }
            _ => {
                self.w(" ");
                self.w(op);
                self.w(" ");
                self.expr(rhs, 0)?;
            }
        }
        self.map.push(start, self.out.len(), span);
        self.w("\n");
        Ok(())
    }

    fn tilde(
        &mut self,
        span: Span,
        lhs: &Expr,
        dist: &Ident,
        args: &[Expr],
        trunc: Option<&(Option<Expr>, Option<Expr>)>,
        ctx: Ctx,
    ) -> R<()> {
        if ctx != Ctx::Model {
            return Err(Unsupported::new(
                span,
                "`~` outside the `model` block is",
                "move it to `model`",
            ));
        }
        self.line_start();
        let start = self.out.len();
        let user = ["_lpdf", "_lpmf"]
            .iter()
            .map(|suffix| format!("{}{suffix}", dist.name))
            .find(|f| self.user_fns.contains(f));
        if let Some(f) = user {
            if trunc.is_some() {
                return Err(Unsupported::new(
                    span,
                    "truncating a user-defined distribution is",
                    "write its normalising term with `target +=`",
                ));
            }
            self.w("target += ");
            self.w(&mvi_name(&f));
            self.w("(");
            self.expr(lhs, 0)?;
            for a in args {
                self.w(", ");
                self.expr(a, 0)?;
            }
            self.w(")");
        } else {
            self.expr(lhs, 0)?;
            self.w(" ~ ");
            let d = self.out.len();
            match dist.name.as_str() {
                "std_normal" => self.w("normal(0, 1"),
                name if glm_family(name).is_some() && args.len() >= 3 => {
                    self.w(glm_family(name).expect("checked in the guard"));
                    self.w("(");
                    self.args(&glm_args(args))?;
                }
                name => {
                    self.w(family_name(name));
                    self.w("(");
                    self.args(args)?;
                }
            }
            self.w(")");
            self.map.push(d, self.out.len(), dist.span);
            if let Some((lo, hi)) = trunc {
                self.w(" T[");
                if let Some(lo) = lo {
                    self.expr(lo, 0)?;
                }
                self.w(", ");
                if let Some(hi) = hi {
                    self.expr(hi, 0)?;
                }
                self.w("]");
            }
        }
        self.map.push(start, self.out.len(), span);
        self.w("\n");
        Ok(())
    }

    fn args(&mut self, args: &[Expr]) -> R<()> {
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.expr(a, 0)?;
        }
        Ok(())
    }

    fn indices(&mut self, idx: &[Index]) -> R<()> {
        self.w("[");
        for (i, item) in idx.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            match item {
                Index::Single(e) => self.expr(e, 0)?,
                Index::Range(lo, hi) => {
                    if let Some(lo) = lo {
                        self.expr(lo, 6)?;
                    }
                    self.w(":");
                    if let Some(hi) = hi {
                        self.expr(hi, 6)?;
                    }
                }
            }
        }
        self.w("]");
        Ok(())
    }

    // ------------------------------------------------------------ expressions

    /// Write `e`, in parentheses when it binds looser than `min`.
    fn expr(&mut self, e: &Expr, min: u8) -> R<()> {
        let prec = expr_precedence(e);
        let paren = prec < min;
        if paren {
            self.w("(");
        }
        let start = self.out.len();
        self.expr_inner(e)?;
        self.map.push(start, self.out.len(), e.span);
        if paren {
            self.w(")");
        }
        Ok(())
    }

    fn expr_inner(&mut self, e: &Expr) -> R<()> {
        match &e.kind {
            ExprKind::Int(s) => self.w(s),
            ExprKind::Real(s) => self.w(&real_literal(s)),
            ExprKind::Imag => {
                return Err(Unsupported::new(
                    e.span,
                    "complex numbers are",
                    "write the real and imaginary parts as two reals",
                ))
            }
            ExprKind::Var(name) => match self.int_lets.get(name).filter(|_| self.in_decl_type) {
                Some(value) => {
                    let value = value.clone();
                    self.expr(&value, P_ATOM)?;
                }
                None => self.w(&mvi_name(name)),
            },
            ExprKind::Call { name, args, bar } => self.call(e.span, name, args, *bar)?,
            ExprKind::Unary(op, x) => {
                if op != "+" {
                    self.w(op);
                }
                let min = if matches!(x.kind, ExprKind::Unary(..)) {
                    P_UNARY + 1
                } else {
                    P_UNARY
                };
                self.expr(x, min)?;
            }
            ExprKind::Binary(op, l, r) => self.binary(e.span, op, l, r)?,
            ExprKind::Ternary(c, a, b) => {
                self.expr(c, P_TERNARY + 1)?;
                self.w(" ? ");
                self.expr(a, 0)?;
                self.w(" : ");
                self.expr(b, P_TERNARY)?;
            }
            ExprKind::Index(base, idx) => {
                self.expr(base, P_POSTFIX)?;
                self.indices(idx)?;
            }
            ExprKind::Transpose(x) => match &x.kind {
                // `[a', b']'` has the columns a and b.
                ExprKind::RowVec(items) if all_transposed(items) => self.stack("append_col", items)?,
                // `[a, b]'` is Stan's column vector, `.mvi`'s `[a, b]`.
                ExprKind::RowVec(items) if !is_matrix_literal(items) => self.list(items)?,
                _ => {
                    self.expr(x, P_POSTFIX)?;
                    self.w("'");
                }
            },
            // `[a', b']` has the rows a' and b'.
            ExprKind::RowVec(items) if all_transposed(items) => {
                let rows: Vec<Expr> = items.to_vec();
                self.w("append_row(");
                self.stack_rows(&rows)?;
                self.w(")");
            }
            ExprKind::RowVec(items) => {
                self.list(items)?;
                if !is_matrix_literal(items) {
                    self.w("'");
                }
            }
            ExprKind::Array(items) => self.list(items)?,
        }
        Ok(())
    }

    /// `append_col(append_col(a, b), c)` of the vectors inside `[a', b', c']`.
    fn stack(&mut self, f: &str, items: &[Expr]) -> R<()> {
        let inner: Vec<&Expr> = items
            .iter()
            .map(|x| match &x.kind {
                ExprKind::Transpose(v) => &**v,
                _ => x,
            })
            .collect();
        if let [only] = inner[..] {
            // `[v']'` is the one-column matrix of v.
            self.w("to_matrix(");
            self.expr(only, 0)?;
            self.w(", rows(");
            self.expr(only, 0)?;
            self.w("), 1)");
            return Ok(());
        }
        for _ in 1..inner.len() {
            self.w(f);
            self.w("(");
        }
        self.expr(inner[0], 0)?;
        for v in &inner[1..] {
            self.w(", ");
            self.expr(v, 0)?;
            self.w(")");
        }
        Ok(())
    }

    /// The arguments of `append_row(…)` for the rows `[a', b', c']`, nested two at a time.
    fn stack_rows(&mut self, rows: &[Expr]) -> R<()> {
        match rows {
            [] => Ok(()),
            [one] => self.expr(one, 0),
            [first, rest @ ..] if rest.len() == 1 => {
                self.expr(first, 0)?;
                self.w(", ");
                self.expr(&rest[0], 0)
            }
            [init @ .., last] => {
                self.w("append_row(");
                self.stack_rows(init)?;
                self.w("), ");
                self.expr(last, 0)
            }
        }
    }

    /// Stan's `rep_array(x, n)`: an `ints` array for an integer literal x (as Stan's
    /// `array[n] int`), a vector otherwise.
    fn rep_array(&mut self, x: &Expr, n: &Expr) -> R<()> {
        let int = match &x.kind {
            ExprKind::Int(_) => true,
            ExprKind::Unary(op, v) => op == "-" && matches!(v.kind, ExprKind::Int(_)),
            _ => false,
        };
        if int {
            self.w("(");
            self.expr(x, P_UNARY)?;
            self.w(" * (rep_vector(0.0, ");
            self.expr(n, 0)?;
            self.w(") == 0))");
        } else {
            self.w("rep_vector(");
            self.expr(x, 0)?;
            self.w(", ");
            self.expr(n, 0)?;
            self.w(")");
        }
        Ok(())
    }

    fn list(&mut self, items: &[Expr]) -> R<()> {
        self.w("[");
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            match &x.kind {
                // A row of a matrix literal is written without its transpose.
                ExprKind::RowVec(row) => {
                    let s = self.out.len();
                    self.list(row)?;
                    self.map.push(s, self.out.len(), x.span);
                }
                _ => self.expr(x, 0)?,
            }
        }
        self.w("]");
        Ok(())
    }

    fn binary(&mut self, span: Span, op: &str, l: &Expr, r: &Expr) -> R<()> {
        let op = match op {
            ".^" => "^",
            // Stan's `%/%` takes two integers, and `.mvi`'s `/` of two integers is integer
            // division (as Stan's `/` is).
            "%/%" => "/",
            "\\" => {
                return Err(Unsupported::new(
                    span,
                    "matrix left division `\\` is",
                    "solve with the Cholesky factor, or precompute the inverse in the data",
                ))
            }
            other => other,
        };
        let (prec, right) = binary_precedence(op);
        self.expr(l, if right { prec + 1 } else { prec })?;
        self.w(" ");
        self.w(op);
        self.w(" ");
        self.expr(r, if right { prec } else { prec + 1 })?;
        Ok(())
    }

    fn call(&mut self, span: Span, name: &Ident, args: &[Expr], bar: bool) -> R<()> {
        let n = name.name.as_str();
        let user = [("_lupdf", "_lpdf"), ("_lupmf", "_lpmf")]
            .iter()
            .find_map(|(u, l)| Some(format!("{}{l}", n.strip_suffix(u)?)))
            .filter(|f| self.user_fns.contains(f));
        let n = user.as_deref().unwrap_or(n);
        if self.user_fns.contains(n) {
            self.w(&mvi_name(n));
            self.w("(");
            self.args(args)?;
            self.w(")");
            return Ok(());
        }
        match n {
            "if_else" if args.len() == 3 => {
                let e = Expr {
                    kind: ExprKind::Ternary(
                        Box::new(args[0].clone()),
                        Box::new(args[1].clone()),
                        Box::new(args[2].clone()),
                    ),
                    span,
                };
                return self.expr(&e, P_ATOM);
            }
            "get_lp" | "target" => {
                return Err(Unsupported::new(
                    span,
                    "reading the log density (`target()`) is",
                    "keep the terms in a local and add it with `target +=`",
                ))
            }
            // Stan's `rep_matrix(rv, m)` repeats a row vector as rows.
            "rep_matrix" if args.len() == 2 && matches!(args[0].kind, ExprKind::Transpose(_)) => {
                let ExprKind::Transpose(v) = &args[0].kind else {
                    unreachable!("matched above")
                };
                self.w("rep_matrix(");
                self.expr(v, 0)?;
                self.w(", ");
                self.expr(&args[1], 0)?;
                self.w(")'");
                return Ok(());
            }
            "rep_array" if args.len() == 2 => return self.rep_array(&args[0], &args[1]),
            "rep_array" if args.len() == 3 => {
                self.w("rep_matrix(");
                self.args(args)?;
                self.w(")");
                return Ok(());
            }
            "std_normal_lpdf" if args.len() == 1 => {
                self.w("normal_lpdf(");
                self.expr(&args[0], 0)?;
                self.w(" | 0, 1)");
                return Ok(());
            }
            "std_normal_rng" if args.is_empty() => {
                self.w("normal_rng(0, 1)");
                return Ok(());
            }
            _ => {}
        }
        if let Some((family, suffix)) = glm_density(n) {
            if bar && args.len() >= 4 {
                let mut rewritten = vec![args[0].clone()];
                rewritten.extend(glm_args(&args[1..]));
                self.w(family);
                self.w(suffix);
                self.w("(");
                self.expr(&rewritten[0], 0)?;
                self.w(" | ");
                self.args(&rewritten[1..])?;
                self.w(")");
                return Ok(());
            }
        }
        let (fname, density) = function_name(n);
        self.w(&fname);
        self.w("(");
        let bar = bar || density && !args.is_empty();
        for (i, a) in args.iter().enumerate() {
            if i == 1 && bar {
                self.w(" | ");
            } else if i > 0 {
                self.w(", ");
            }
            self.expr(a, 0)?;
        }
        self.w(")");
        Ok(())
    }
}

/// A `.mvi` type for a function argument or return type.
fn unsized_type(t: &UnsizedType) -> R<String> {
    Ok(match (t.base.as_str(), t.dims) {
        ("int", 0) => "int".into(),
        ("int", 1) => "ints".into(),
        ("real", 0) => "real".into(),
        ("real", 1) | ("vector", 0) => "vector".into(),
        ("real", 2) | ("matrix", 0) => "matrix".into(),
        ("row_vector", 0) => "row_vector".into(),
        _ => {
            return Err(Unsupported::new(
                t.span,
                format!("function arguments and results of type `{}` are", type_text(t)),
                "pass the entries as a vector or matrix",
            ))
        }
    })
}

fn type_text(t: &UnsizedType) -> String {
    if t.dims == 0 {
        t.base.clone()
    } else {
        format!("array[{}] {}", ",".repeat(t.dims - 1), t.base)
    }
}

/// The family of a Stan GLM distribution: `bernoulli_logit_glm` → `bernoulli_logit`.
fn glm_family(stan: &str) -> Option<&'static str> {
    Some(match stan {
        "bernoulli_logit_glm" => "bernoulli_logit",
        "poisson_log_glm" => "poisson_log",
        "normal_id_glm" => "normal",
        "neg_binomial_2_log_glm" => "neg_binomial_2_log",
        _ => return None,
    })
}

/// `bernoulli_logit_glm_lpmf` → (`bernoulli_logit`, `_lpmf`).
fn glm_density(stan: &str) -> Option<(&'static str, &'static str)> {
    ["_lpmf", "_lpdf"]
        .into_iter()
        .find_map(|suffix| Some((glm_family(stan.strip_suffix(suffix)?)?, suffix)))
}

/// A GLM's arguments `(x, alpha, beta, rest…)` as its family's `(alpha + x * beta, rest…)`.
fn glm_args(args: &[Expr]) -> Vec<Expr> {
    let (x, alpha, beta) = (&args[0], &args[1], &args[2]);
    let product = Expr {
        kind: ExprKind::Binary("*".into(), Box::new(x.clone()), Box::new(beta.clone())),
        span: x.span.join(beta.span),
    };
    let linear = Expr {
        kind: ExprKind::Binary("+".into(), Box::new(alpha.clone()), Box::new(product)),
        span: x.span.join(beta.span),
    };
    std::iter::once(linear).chain(args[3..].iter().cloned()).collect()
}

fn all_transposed(items: &[Expr]) -> bool {
    !items.is_empty() && items.iter().all(|x| matches!(x.kind, ExprKind::Transpose(_)))
}

/// `.mvi`'s name for a distribution family.
fn family_name(stan: &str) -> &str {
    match stan {
        "double_exponential" => "laplace",
        other => other,
    }
}

/// `.mvi`'s name for a Stan function, and whether it is a density written the old way
/// (`normal_log(y, mu, sigma)`), whose first argument then needs a `|`.
fn function_name(stan: &str) -> (String, bool) {
    for (old, new) in [("_ccdf_log", "_lccdf"), ("_cdf_log", "_lcdf"), ("_log", "_lpdf")] {
        if let Some(family) = stan.strip_suffix(old) {
            if FAMILIES.contains(&family) {
                let new = if new == "_lpdf" && is_discrete(family) {
                    "_lpmf"
                } else {
                    new
                };
                return (format!("{}{new}", family_name(family)), true);
            }
        }
    }
    // `_lupdf` drops constants that do not depend on the parameters: the posterior is the
    // same with `_lpdf`.
    for (unnormalised, normalised) in [("_lupdf", "_lpdf"), ("_lupmf", "_lpmf")] {
        if let Some(family) = stan.strip_suffix(unnormalised) {
            return (format!("{}{normalised}", family_name(family)), false);
        }
    }
    for suffix in ["_lpdf", "_lpmf", "_lcdf", "_lccdf", "_rng", "_cdf"] {
        if let Some(family) = stan.strip_suffix(suffix) {
            if family == "double_exponential" {
                return (format!("laplace{suffix}"), false);
            }
        }
    }
    let name = match stan {
        "fabs" => "abs",
        "dot_product" => "dot",
        "binomial_coefficient_log" => "lchoose",
        other => other,
    };
    (mvi_name(name), false)
}

fn is_discrete(family: &str) -> bool {
    matches!(
        family,
        "bernoulli"
            | "bernoulli_logit"
            | "binomial"
            | "binomial_logit"
            | "beta_binomial"
            | "categorical"
            | "categorical_logit"
            | "multinomial"
            | "neg_binomial_2"
            | "neg_binomial_2_log"
            | "ordered_logistic"
            | "ordered_probit"
            | "poisson"
            | "poisson_log"
    )
}

/// A Stan real literal as `.mvi` writes it: `1.` → `1.0`, `.5` → `0.5`, `1.e3` → `1.0e3`.
fn real_literal(s: &str) -> String {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let mut m = mantissa.to_string();
    if m.starts_with('.') {
        m.insert(0, '0');
    }
    if m.ends_with('.') {
        m.push('0');
    }
    format!("{m}{exponent}")
}

fn is_matrix_literal(items: &[Expr]) -> bool {
    !items.is_empty() && items.iter().all(|x| matches!(x.kind, ExprKind::RowVec(_)))
}

fn expr_precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Ternary(..) => P_TERNARY,
        ExprKind::Binary(op, ..) => binary_precedence(if op == ".^" { "^" } else { op }).0,
        ExprKind::Unary(op, _) if op != "+" => P_UNARY,
        ExprKind::Unary(_, x) => expr_precedence(x),
        ExprKind::Index(..) | ExprKind::Transpose(_) => P_POSTFIX,
        ExprKind::RowVec(items) if !is_matrix_literal(items) && !all_transposed(items) => P_POSTFIX,
        _ => P_ATOM,
    }
}

/// A statement to write, with declarations resolved: a declaration given its value by a
/// later `x = e;` is one `let` there.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    /// `let x = e` (from `T x = e;`, or `T x; … x = e;`), with the span to map it to.
    Let(&'a VarDecl, &'a Expr, Span),
    /// `let x = zeros` for a declaration whose entries are set later.
    Zeros(&'a VarDecl),
    /// Any other statement.
    Stmt(&'a Stmt),
}

fn fold_items(list: &[Stmt]) -> Vec<Item<'_>> {
    let mut folded: Vec<(usize, &VarDecl)> = Vec::new();
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        if let Some(pos) = folded.iter().position(|(j, _)| *j == i) {
            let (_, d) = folded.swap_remove(pos);
            let StmtKind::Assign { rhs, .. } = &s.kind else {
                unreachable!("fold_target returns an assignment")
            };
            out.push(Item::Let(d, rhs, s.span));
            continue;
        }
        match &s.kind {
            StmtKind::Decl(d) => match (&d.init, fold_target(list, i, &d.name.name)) {
                (Some(init), _) => out.push(Item::Let(d, init, s.span)),
                (None, Some(j)) => folded.push((j, d)),
                (None, None) => out.push(Item::Zeros(d)),
            },
            _ => out.push(Item::Stmt(s)),
        }
    }
    out
}

/// Split the items of `transformed data` or `transformed parameters` into those that can be
/// top-level `let`s (a value that reads no name set by a statement left behind, and a name
/// nothing else assigns) and the rest, which run as statements.
fn hoist(items: Vec<Item<'_>>) -> (Vec<Item<'_>>, Vec<Item<'_>>) {
    let mut blocked = HashSet::new();
    let mut assigned = HashMap::new();
    for item in &items {
        if let Item::Stmt(s) = item {
            let mut set = HashSet::new();
            stmt_defs(s, &mut set);
            for name in set {
                *assigned.entry(name).or_insert(0) += 1;
            }
        }
    }
    let (mut top, mut rest) = (Vec::new(), Vec::new());
    for item in items {
        let hoistable = match item {
            Item::Let(d, value, _) => {
                let mut reads = HashSet::new();
                expr_names(value, &mut reads);
                reads.is_disjoint(&blocked) && !assigned.contains_key(&d.name.name)
            }
            _ => false,
        };
        if hoistable {
            top.push(item);
        } else {
            let mut defs = HashSet::new();
            item_defs(&item, &mut defs);
            blocked.extend(defs);
            rest.push(item);
        }
    }
    (top, rest)
}

/// Names the items declare (at any depth), and their loop variables.
fn declared_names(items: &[Item<'_>]) -> HashSet<String> {
    fn walk(s: &Stmt, out: &mut HashSet<String>) {
        match &s.kind {
            StmtKind::Decl(d) => {
                out.insert(d.name.name.clone());
            }
            StmtKind::Block(list) => list.iter().for_each(|s| walk(s, out)),
            StmtKind::For { var, body, .. } => {
                out.insert(var.name.clone());
                walk(body, out);
            }
            StmtKind::If { then, els, .. } => {
                walk(then, out);
                els.iter().for_each(|s| walk(s, out));
            }
            _ => {}
        }
    }
    let mut out = HashSet::new();
    for item in items {
        match item {
            Item::Let(d, ..) | Item::Zeros(d) => {
                out.insert(d.name.name.clone());
            }
            Item::Stmt(s) => walk(s, &mut out),
        }
    }
    out
}

/// The span of the first item that mentions `name`.
fn first_mention(items: &[Item<'_>], name: &str) -> Option<Span> {
    items.iter().find_map(|item| {
        let mut names = HashSet::new();
        item_names(item, &mut names);
        let span = match item {
            Item::Let(_, _, span) => *span,
            Item::Zeros(d) => d.span,
            Item::Stmt(s) => s.span,
        };
        names.contains(name).then_some(span)
    })
}

/// The `.mvi` type of a declaration without its sizes, as a function argument takes it:
/// `vector` for `array[N] real`, `ints` for `array[N] int`; `None` for arrays of vectors.
fn decl_unsized(d: &VarDecl) -> Option<String> {
    let vector_like = matches!(
        d.ty.as_str(),
        "vector" | "simplex" | "ordered" | "positive_ordered" | "unit_vector" | "sum_to_zero_vector"
    );
    Some(
        match (d.ty.as_str(), d.array_dims.len()) {
            ("int", 0) => "int",
            ("int", 1) => "ints",
            ("real", 0) => "real",
            ("real", 1) => "vector",
            ("real", 2) => "matrix",
            (_, 0) if vector_like => "vector",
            ("row_vector", 0) => "row_vector",
            ("matrix" | "cholesky_factor_cov" | "cholesky_factor_corr" | "cov_matrix" | "corr_matrix", 0) => {
                "matrix"
            }
            _ => return None,
        }
        .to_string(),
    )
}

fn item_defs(item: &Item<'_>, out: &mut HashSet<String>) {
    match item {
        Item::Let(d, ..) | Item::Zeros(d) => {
            out.insert(d.name.name.clone());
        }
        Item::Stmt(s) => stmt_defs(s, out),
    }
}

fn item_names(item: &Item<'_>, out: &mut HashSet<String>) {
    match item {
        Item::Let(d, value, _) => {
            out.insert(d.name.name.clone());
            expr_names(value, out);
        }
        Item::Zeros(d) => {
            out.insert(d.name.name.clone());
            d.array_dims
                .iter()
                .chain(&d.sizes)
                .for_each(|e| expr_names(e, out));
        }
        Item::Stmt(s) => stmt_names(s, out),
    }
}

/// Names a statement declares or assigns (at any depth).
fn stmt_defs(s: &Stmt, out: &mut HashSet<String>) {
    match &s.kind {
        StmtKind::Decl(d) => {
            out.insert(d.name.name.clone());
        }
        StmtKind::Assign { lhs, .. } => {
            out.insert(lhs.name.name.clone());
        }
        StmtKind::Block(list) => list.iter().for_each(|s| stmt_defs(s, out)),
        StmtKind::For { body, .. } => stmt_defs(body, out),
        StmtKind::If { then, els, .. } => {
            stmt_defs(then, out);
            els.iter().for_each(|s| stmt_defs(s, out));
        }
        _ => {}
    }
}

/// The index of the statement after `i` that gives the declared `name` its value with
/// `name = e;`, when that is the first statement after the declaration to mention `name`.
fn fold_target(list: &[Stmt], i: usize, name: &str) -> Option<usize> {
    for (j, s) in list.iter().enumerate().skip(i + 1) {
        let mut names = HashSet::new();
        stmt_names(s, &mut names);
        if !names.contains(name) {
            continue;
        }
        return match &s.kind {
            StmtKind::Assign { lhs, op, rhs }
                if lhs.name.name == name && lhs.indices.is_empty() && (op == "=" || op == "<-") =>
            {
                let mut in_rhs = HashSet::new();
                expr_names(rhs, &mut in_rhs);
                (!in_rhs.contains(name)).then_some(j)
            }
            _ => None,
        };
    }
    None
}

fn stmt_names(s: &Stmt, out: &mut HashSet<String>) {
    match &s.kind {
        StmtKind::Decl(d) => {
            out.insert(d.name.name.clone());
            for e in d
                .array_dims
                .iter()
                .chain(&d.sizes)
                .chain(d.bounds.iter().map(|(_, e)| e))
                .chain(&d.init)
            {
                expr_names(e, out);
            }
        }
        StmtKind::Block(list) => list.iter().for_each(|s| stmt_names(s, out)),
        StmtKind::For { var, lo, hi, body } => {
            out.insert(var.name.clone());
            expr_names(lo, out);
            hi.iter().for_each(|e| expr_names(e, out));
            stmt_names(body, out);
        }
        StmtKind::If { cond, then, els } => {
            expr_names(cond, out);
            stmt_names(then, out);
            els.iter().for_each(|s| stmt_names(s, out));
        }
        StmtKind::Return(e) => e.iter().for_each(|e| expr_names(e, out)),
        StmtKind::Target(e) | StmtKind::Call(e) => expr_names(e, out),
        StmtKind::Assign { lhs, rhs, .. } => {
            out.insert(lhs.name.name.clone());
            for idx in lhs.indices.iter().flatten() {
                index_names(idx, out);
            }
            expr_names(rhs, out);
        }
        StmtKind::Tilde { lhs, args, trunc, .. } => {
            expr_names(lhs, out);
            args.iter().for_each(|e| expr_names(e, out));
            if let Some((lo, hi)) = trunc {
                lo.iter().chain(hi).for_each(|e| expr_names(e, out));
            }
        }
        StmtKind::While
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Print
        | StmtKind::Reject
        | StmtKind::Empty => {}
    }
}

fn index_names(idx: &Index, out: &mut HashSet<String>) {
    match idx {
        Index::Single(e) => expr_names(e, out),
        Index::Range(lo, hi) => lo.iter().chain(hi).for_each(|e| expr_names(e, out)),
    }
}

fn expr_names(e: &Expr, out: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Var(n) => {
            out.insert(n.clone());
        }
        ExprKind::Call { args, .. } | ExprKind::RowVec(args) | ExprKind::Array(args) => {
            args.iter().for_each(|a| expr_names(a, out));
        }
        ExprKind::Unary(_, x) | ExprKind::Transpose(x) => expr_names(x, out),
        ExprKind::Binary(_, l, r) => {
            expr_names(l, out);
            expr_names(r, out);
        }
        ExprKind::Ternary(c, a, b) => {
            expr_names(c, out);
            expr_names(a, out);
            expr_names(b, out);
        }
        ExprKind::Index(base, idx) => {
            expr_names(base, out);
            idx.iter().for_each(|i| index_names(i, out));
        }
        ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Imag => {}
    }
}
