//! A stable, indented text form of the AST, with spans as `@start..end`.
//!
//! Input: a [`Program`]. Output: one node per line, children indented by two spaces, a role
//! prefix (`lhs:`, `arg:`, `size:`) where a node has several kinds of children. Used by
//! `mvi dump ast` and by snapshot tests, so the format only changes on purpose.

use std::fmt::Write as _;

use super::ast::*;
use super::span::Span;

/// Print the whole program as an indented tree.
pub fn dump_ast(p: &Program) -> String {
    let mut d = Dumper::default();
    d.line(0, "", "Program", p.span);
    for item in &p.items {
        d.item(1, item);
    }
    d.out
}

/// The symbol of an infix operator as written.
pub fn binop_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Pow => "^",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::ElemMul => ".*",
        BinOp::ElemDiv => "./",
        BinOp::Mod => "%",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::And => "&&",
        BinOp::Or => "||",
    }
}

fn assign_symbol(op: AssignOp) -> &'static str {
    match op {
        AssignOp::Set => "=",
        AssignOp::Add => "+=",
        AssignOp::Sub => "-=",
        AssignOp::Mul => "*=",
        AssignOp::Div => "/=",
    }
}

fn base_name(b: BaseType) -> &'static str {
    match b {
        BaseType::Int => "int",
        BaseType::Real => "real",
        BaseType::Vector => "vector",
        BaseType::RowVector => "row_vector",
        BaseType::Matrix => "matrix",
        BaseType::Ints => "ints",
    }
}

#[derive(Default)]
struct Dumper {
    out: String,
}

impl Dumper {
    fn line(&mut self, depth: usize, role: &str, text: &str, span: Span) {
        let pad = "  ".repeat(depth);
        let role = if role.is_empty() {
            String::new()
        } else {
            format!("{role}: ")
        };
        let _ = writeln!(self.out, "{pad}{role}{text} @{}..{}", span.start, span.end);
    }

    /// A line without a node of its own (`then:`), grouping what follows.
    fn heading(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{}{text}", "  ".repeat(depth));
    }

    fn item(&mut self, depth: usize, item: &Item) {
        match item {
            Item::Import(i) => self.line(depth, "", &format!("Import {:?}", i.path), i.span),
            Item::Fn(f) => self.fn_def(depth, f),
            Item::Data(b) => self.decl_block(depth, "Data", b),
            Item::Hyper(b) => self.decl_block(depth, "Hyper", b),
            Item::Param(b) => self.decl_block(depth, "Param", b),
            Item::Let(l) => self.let_(depth, l),
            Item::Model(b) => self.stmt_block(depth, "Model", b),
            Item::Predict(b) => self.stmt_block(depth, "Predict", b),
            Item::Generated(b) => self.stmt_block(depth, "Generated", b),
            Item::Infer(b) => self.infer(depth, b),
        }
    }

    fn fn_def(&mut self, depth: usize, f: &FnDef) {
        self.line(depth, "", &format!("Fn {}", f.name.name), f.span);
        for (name, ty) in &f.params {
            self.line(depth + 1, "param", &name.name, name.span);
            self.ty(depth + 2, "type", ty);
        }
        if let Some(r) = &f.ret {
            self.ty(depth + 1, "returns", r);
        }
        self.stmts(depth + 1, &f.body);
    }

    fn decl_block(&mut self, depth: usize, kw: &str, b: &DeclBlock) {
        self.line(depth, "", kw, b.span);
        for d in &b.decls {
            self.line(depth + 1, "", &format!("Decl {}", d.name.name), d.span);
            self.ty(depth + 2, "type", &d.ty);
            if let Some(init) = &d.init {
                self.expr(depth + 2, "init", init);
            }
        }
    }

    fn ty(&mut self, depth: usize, role: &str, t: &TypeExpr) {
        self.line(
            depth,
            role,
            t.kind.map_or_else(|| base_name(t.base), |k| k.name()),
            t.span,
        );
        if let Some(l) = &t.lower {
            self.expr(depth + 1, "lower", l);
        }
        if let Some(u) = &t.upper {
            self.expr(depth + 1, "upper", u);
        }
        if let Some(o) = &t.offset {
            self.expr(depth + 1, "offset", o);
        }
        if let Some(m) = &t.multiplier {
            self.expr(depth + 1, "multiplier", m);
        }
        for s in &t.sizes {
            self.expr(depth + 1, "size", s);
        }
    }

    fn let_(&mut self, depth: usize, l: &Let) {
        self.line(depth, "", &format!("Let {}", l.name.name), l.span);
        self.expr(depth + 1, "value", &l.value);
    }

    fn stmt_block(&mut self, depth: usize, kw: &str, b: &StmtBlock) {
        self.line(depth, "", kw, b.span);
        self.stmts(depth + 1, &b.stmts);
    }

    fn stmts(&mut self, depth: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(depth, s);
        }
    }

    fn stmt(&mut self, depth: usize, s: &Stmt) {
        match s {
            Stmt::Let(l) => self.let_(depth, l),
            Stmt::Assign {
                target,
                op,
                value,
                span,
            } => {
                self.line(depth, "", &format!("Assign {}", assign_symbol(*op)), *span);
                self.expr(depth + 1, "target", target);
                self.expr(depth + 1, "value", value);
            }
            Stmt::Tilde {
                lhs,
                dist,
                args,
                trunc,
                span,
            } => {
                self.line(depth, "", "Tilde", *span);
                self.expr(depth + 1, "lhs", lhs);
                self.line(depth + 1, "dist", &dist.name, dist.span);
                for a in args {
                    self.expr(depth + 1, "arg", a);
                }
                if let Some(t) = trunc {
                    self.line(depth + 1, "", "Truncation", t.span);
                    if let Some(l) = &t.lower {
                        self.expr(depth + 2, "lower", l);
                    }
                    if let Some(u) = &t.upper {
                        self.expr(depth + 2, "upper", u);
                    }
                }
            }
            Stmt::Target { value, span } => {
                self.line(depth, "", "Target +=", *span);
                self.expr(depth + 1, "value", value);
            }
            Stmt::For {
                var,
                lo,
                hi,
                body,
                span,
            } => {
                self.line(depth, "", &format!("For {}", var.name), *span);
                self.expr(depth + 1, "lo", lo);
                self.expr(depth + 1, "hi", hi);
                self.stmts(depth + 1, body);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
                span,
            } => self.if_(depth, cond, then, otherwise, *span),
            Stmt::Return { value, span } => {
                self.line(depth, "", "Return", *span);
                self.expr(depth + 1, "value", value);
            }
        }
    }

    fn if_(&mut self, depth: usize, cond: &Expr, then: &[Stmt], otherwise: &[Stmt], span: Span) {
        self.line(depth, "", "If", span);
        self.expr(depth + 1, "cond", cond);
        self.heading(depth + 1, "then:");
        self.stmts(depth + 2, then);
        if !otherwise.is_empty() {
            self.heading(depth + 1, "else:");
            self.stmts(depth + 2, otherwise);
        }
    }

    fn infer(&mut self, depth: usize, b: &InferBlock) {
        self.line(depth, "", "Infer", b.span);
        for e in &b.entries {
            self.line(
                depth + 1,
                "",
                &format!("{} = {}", e.key.name, infer_value(&e.value)),
                e.span,
            );
        }
    }

    fn expr(&mut self, depth: usize, role: &str, e: &Expr) {
        match &e.kind {
            ExprKind::Int(i) => self.line(depth, role, &format!("Int {i}"), e.span),
            ExprKind::Real(r) => self.line(depth, role, &format!("Real {r:?}"), e.span),
            ExprKind::Str(s) => self.line(depth, role, &format!("Str {s:?}"), e.span),
            ExprKind::Name(n) => self.line(depth, role, &format!("Name {n}"), e.span),
            ExprKind::Array(items) => {
                self.line(depth, role, &format!("Array ({} items)", items.len()), e.span);
                for it in items {
                    self.expr(depth + 1, "", it);
                }
            }
            ExprKind::Unary(op, x) => {
                let sym = if *op == UnOp::Neg { "-" } else { "!" };
                self.line(depth, role, &format!("Unary {sym}"), e.span);
                self.expr(depth + 1, "", x);
            }
            ExprKind::Binary(op, a, b) => {
                self.line(depth, role, &format!("Binary {}", binop_symbol(*op)), e.span);
                self.expr(depth + 1, "", a);
                self.expr(depth + 1, "", b);
            }
            ExprKind::Transpose(x) => {
                self.line(depth, role, "Transpose", e.span);
                self.expr(depth + 1, "", x);
            }
            ExprKind::Ternary(c, a, b) => {
                self.line(depth, role, "Ternary", e.span);
                self.expr(depth + 1, "cond", c);
                self.expr(depth + 1, "then", a);
                self.expr(depth + 1, "else", b);
            }
            ExprKind::Call {
                func,
                args,
                conditional,
            } => {
                let bar = if *conditional { " (conditional)" } else { "" };
                self.line(depth, role, &format!("Call {}{bar}", func.name), e.span);
                for a in args {
                    self.expr(depth + 1, "arg", a);
                }
            }
            ExprKind::Index(base, idx) => {
                self.line(depth, role, "Index", e.span);
                self.expr(depth + 1, "base", base);
                for i in idx {
                    self.index(depth + 1, i);
                }
            }
        }
    }

    fn index(&mut self, depth: usize, i: &Index) {
        match i {
            Index::At(e) => self.expr(depth, "at", e),
            Index::Range { lo, hi, span } => {
                self.line(depth, "", "Range", *span);
                if let Some(lo) = lo {
                    self.expr(depth + 1, "lo", lo);
                }
                if let Some(hi) = hi {
                    self.expr(depth + 1, "hi", hi);
                }
            }
        }
    }
}

fn infer_value(v: &InferValue) -> String {
    match v {
        InferValue::Int(i) => i.to_string(),
        InferValue::Real(r) => format!("{r:?}"),
        InferValue::Word(w) => w.clone(),
        InferValue::List(items) => {
            let inner: Vec<String> = items.iter().map(infer_value).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_program;

    #[test]
    fn dump_shows_nodes_with_spans_and_indentation() {
        let p = parse_program("model {\n  y ~ normal(mu, 1)\n}\n", "m.mvi").unwrap();
        let d = dump_ast(&p);
        let expected = "\
Program @0..30
  Model @0..29
    Tilde @10..27
      lhs: Name y @10..11
      dist: normal @14..20
      arg: Name mu @21..23
      arg: Int 1 @25..26
";
        assert_eq!(d, expected);
    }

    #[test]
    fn infer_lists_print_nested() {
        let p = parse_program("infer { blocks = [[a, b], [c]]; tol = 1e-6 }", "m.mvi").unwrap();
        let d = dump_ast(&p);
        assert!(d.contains("blocks = [[a, b], [c]]"), "{d}");
        assert!(d.contains("tol = 1e-6"), "{d}");
    }
}
