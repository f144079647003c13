//! Stan text → [`Program`]: pest parses `grammar/stan.pest`, then this file builds the AST.
//!
//! Input: the text of a `.stan` file. Output: a [`Program`] whose every node carries the
//! byte [`Span`] of its text, or the first syntax error as a [`Diagnostic`] in Stan's style
//! (line, column, what was expected). Stan's operator precedence is applied here over the
//! flat `term (op term)*` sequences of the grammar. Nothing is resolved: whether a construct
//! can be translated is [`super::translate()`]'s question.

use miette::NamedSource;
use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::{Pair, Pairs};
use pest::Parser as _;

use super::ast::*;
use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;

#[allow(missing_docs)]
mod grammar {
    /// The pest parser generated from `grammar/stan.pest`.
    #[derive(pest_derive::Parser)]
    #[grammar = "grammar/stan.pest"]
    pub struct StanParser;
}

use grammar::Rule;

/// Parse a whole Stan program.
///
/// # Errors
/// The first syntax error (code `mvi::stan::syntax`), or an `#include` (code
/// `mvi::stan::include`), which a single file cannot resolve.
pub fn parse_stan(src: &str, file_name: &str) -> Result<Program, Diagnostic> {
    let source = || NamedSource::new(file_name, src.to_string());
    if let Some(span) = find_include(src) {
        return Err(
            Diagnostic::error("mvi::stan::include", "`#include` is not supported", source())
                .with_label(span, "an include")
                .with_help("paste the included file's text in place of the `#include` line"),
        );
    }
    let mut pairs =
        grammar::StanParser::parse(Rule::program, src).map_err(|e| syntax_error(&e, src, file_name))?;
    let program = pairs.next().expect("pest returns the `program` pair on success");
    Ok(build_program(program))
}

/// The span of the first `#include` at the start of a line outside a block comment.
fn find_include(src: &str) -> Option<Span> {
    let mut in_block = false;
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let start = offset + (line.len() - trimmed.len());
        if !in_block && trimmed.starts_with("#include") {
            let end = start + trimmed.trim_end().len();
            return Some(Span::new(start, end));
        }
        // A rough but safe block-comment tracker: `/*` opens, `*/` closes.
        if let Some(open) = line.rfind("/*") {
            in_block = !line[open..].contains("*/");
        } else if in_block && line.contains("*/") {
            in_block = false;
        }
        offset += line.len();
    }
    None
}

/// Stan's style: "syntax error at line 3, column 10: expected `;`".
fn syntax_error(e: &pest::error::Error<Rule>, src: &str, file_name: &str) -> Diagnostic {
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let (line, col) = line_col(src, pos);
    let expected = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => expected_words(positives),
        ErrorVariant::CustomError { message } => message.clone(),
    };
    // The word or character found there: `data`, `}`.
    let rest = &src[pos..];
    let word_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let len = match rest.chars().next() {
        None => 0,
        Some(_) if word_len > 0 => word_len,
        Some(c) => c.len_utf8(),
    };
    let found = match &rest[..len] {
        "" => "the end of the file".to_string(),
        "\n" => "a newline".to_string(),
        text => format!("`{text}`"),
    };
    let end = pos + len;
    Diagnostic::error(
        "mvi::stan::syntax",
        format!("syntax error at line {line}, column {col}: expected {expected}"),
        NamedSource::new(file_name, src.to_string()),
    )
    .with_label(Span::new(pos, end), format!("found {found}"))
    .with_help("Stan statements end with `;`, and blocks come in Stan's order: functions, data, transformed data, parameters, transformed parameters, model, generated quantities")
}

fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let before = &src[..pos];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// "`;` or an expression": the words for what pest tried at the furthest position.
fn expected_words(rules: &[Rule]) -> String {
    let mut words: Vec<&str> = rules.iter().filter_map(|r| rule_words(*r)).collect();
    words.sort_unstable();
    words.dedup();
    match words.as_slice() {
        [] => "something else".to_string(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn rule_words(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "the end of the program",
        Rule::ident => "a name",
        Rule::lbrace => "`{`",
        Rule::rbrace => "`}`",
        Rule::lparen => "`(`",
        Rule::rparen => "`)`",
        Rule::rbracket => "`]`",
        Rule::semi => "`;`",
        Rule::rangle => "`>`",
        Rule::comma => "`,`",
        Rule::tilde => "`~`",
        Rule::decl_eq => "`=`",
        Rule::functions_block => "`functions`",
        Rule::data_block | Rule::kw_data => "`data`",
        Rule::tdata_block | Rule::tparams_block | Rule::kw_transformed => "`transformed`",
        Rule::params_block | Rule::kw_parameters => "`parameters`",
        Rule::model_block | Rule::kw_model => "`model`",
        Rule::gq_block | Rule::kw_generated => "`generated`",
        Rule::kw_quantities => "`quantities`",
        Rule::fun_def | Rule::return_type => "a function definition",
        Rule::fun_arg | Rule::unsized_type => "an argument type",
        Rule::var_decl | Rule::var_type | Rule::type_name => "a declaration",
        Rule::array_dims => "`array[…]`",
        Rule::constraint => "`<`",
        Rule::bound | Rule::bound_key => "`lower`, `upper`, `offset` or `multiplier`",
        Rule::stmt => "a statement",
        Rule::kw_in => "`in`",
        Rule::kw_else => "`else`",
        Rule::assign_op => "an assignment operator",
        Rule::truncation => "a truncation `T[…]`",
        Rule::range_colon => "`:`",
        Rule::expr | Rule::term | Rule::bound_expr | Rule::index_item | Rule::index_hi => "an expression",
        Rule::binop | Rule::arith_op | Rule::ternary_op => "an operator",
        Rule::cond_bar => "`|`",
        Rule::string => "a string",
        _ => return None,
    })
}

fn span_of(pair: &Pair<'_, Rule>) -> Span {
    Span::new(pair.as_span().start(), pair.as_span().end())
}

fn ident(pair: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: span_of(pair),
    }
}

fn build_program(pair: Pair<'_, Rule>) -> Program {
    let mut p = Program::default();
    for block in pair.into_inner() {
        let span = span_of(&block);
        let rule = block.as_rule();
        let inner = block.into_inner();
        match rule {
            Rule::functions_block => {
                p.functions = inner
                    .filter(|x| x.as_rule() == Rule::fun_def)
                    .map(fun_def)
                    .collect()
            }
            Rule::data_block => p.data = decls(inner),
            Rule::params_block => p.params = decls(inner),
            Rule::tdata_block => p.tdata = stmts(inner),
            Rule::tparams_block => p.tparams = stmts(inner),
            Rule::model_block => {
                p.model = stmts(inner);
                p.model_span = Some(span);
            }
            Rule::gq_block => p.gq = stmts(inner),
            Rule::EOI => {}
            other => unreachable!("grammar/stan.pest: unexpected block {other:?}"),
        }
    }
    p
}

fn decls(pairs: Pairs<'_, Rule>) -> Vec<VarDecl> {
    pairs
        .filter(|x| x.as_rule() == Rule::var_decl)
        .map(var_decl)
        .collect()
}

fn stmts(pairs: Pairs<'_, Rule>) -> Vec<Stmt> {
    pairs.filter(|x| x.as_rule() == Rule::stmt).map(stmt).collect()
}

fn fun_def(pair: Pair<'_, Rule>) -> FunDef {
    let span = span_of(&pair);
    let mut inner = pair.into_inner();
    let ret_pair = inner.next().expect("grammar: a return type");
    let ret_inner = ret_pair.into_inner().next().expect("grammar: void or a type");
    let ret = (ret_inner.as_rule() == Rule::unsized_type).then(|| unsized_type(ret_inner));
    let name = ident(&inner.next().expect("grammar: a function name"));
    let mut args = Vec::new();
    let mut body = None;
    for p in inner {
        match p.as_rule() {
            Rule::fun_arg => {
                let mut parts = p.into_inner().filter(|x| x.as_rule() != Rule::data_qualifier);
                let ty = unsized_type(parts.next().expect("grammar: an argument type"));
                let name = ident(&parts.next().expect("grammar: an argument name"));
                args.push(FunArg { ty, name });
            }
            Rule::block_stmt => body = Some(stmts(p.into_inner())),
            _ => {}
        }
    }
    FunDef {
        ret,
        name,
        args,
        body,
        span,
    }
}

fn unsized_type(pair: Pair<'_, Rule>) -> UnsizedType {
    let span = span_of(&pair);
    let mut base = String::new();
    let mut dims = 0;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::basic_type => base = p.as_str().to_string(),
            Rule::array_dims_unsized => {
                dims = 1 + p.into_inner().filter(|x| x.as_rule() == Rule::comma).count()
            }
            _ => {}
        }
    }
    UnsizedType { base, dims, span }
}

fn var_decl(pair: Pair<'_, Rule>) -> VarDecl {
    let span = span_of(&pair);
    let mut d = VarDecl {
        array_dims: Vec::new(),
        ty: String::new(),
        bounds: Vec::new(),
        sizes: Vec::new(),
        name: Ident {
            name: String::new(),
            span,
        },
        init: None,
        type_span: span,
        span,
    };
    let mut type_start = None;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::array_dims => {
                type_start = Some(p.as_span().start());
                d.array_dims = exprs_of(p);
            }
            Rule::var_type => {
                let s = span_of(&p);
                d.type_span = Span::new(type_start.unwrap_or(s.start as usize), s.end as usize);
                var_type(p, &mut d);
            }
            Rule::ident => d.name = ident(&p),
            Rule::old_dims => d.array_dims = exprs_of(p),
            Rule::expr => d.init = Some(expr(p)),
            _ => {}
        }
    }
    d
}

fn var_type(pair: Pair<'_, Rule>, d: &mut VarDecl) {
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::type_name => d.ty = p.as_str().to_string(),
            Rule::constraint => {
                for b in p.into_inner().filter(|x| x.as_rule() == Rule::bound) {
                    let mut parts = b.into_inner();
                    let key = parts.next().expect("grammar: a bound key").as_str().to_string();
                    let value = parts.next().expect("grammar: a bound value");
                    d.bounds.push((key, climb_pairs(value)));
                }
            }
            Rule::sizes => d.sizes = exprs_of(p),
            _ => {}
        }
    }
}

fn exprs_of(pair: Pair<'_, Rule>) -> Vec<Expr> {
    pair.into_inner()
        .filter(|x| x.as_rule() == Rule::expr)
        .map(expr)
        .collect()
}

fn stmt(pair: Pair<'_, Rule>) -> Stmt {
    let inner = pair
        .into_inner()
        .next()
        .expect("grammar: a statement has one alternative");
    let span = span_of(&inner);
    let rule = inner.as_rule();
    let kind = match rule {
        Rule::var_decl => StmtKind::Decl(var_decl(inner)),
        Rule::block_stmt => StmtKind::Block(stmts(inner.into_inner())),
        Rule::profile_stmt => {
            let block = inner.into_inner().find(|x| x.as_rule() == Rule::block_stmt);
            StmtKind::Block(block.map_or_else(Vec::new, |b| stmts(b.into_inner())))
        }
        Rule::for_stmt => for_stmt(inner),
        Rule::while_stmt => StmtKind::While,
        Rule::if_stmt => if_stmt(inner),
        Rule::break_stmt => StmtKind::Break,
        Rule::continue_stmt => StmtKind::Continue,
        Rule::return_stmt => {
            StmtKind::Return(inner.into_inner().find(|x| x.as_rule() == Rule::expr).map(expr))
        }
        Rule::print_stmt => StmtKind::Print,
        Rule::reject_stmt => StmtKind::Reject,
        Rule::target_stmt | Rule::increment_stmt => {
            let e = inner
                .into_inner()
                .find(|x| x.as_rule() == Rule::expr)
                .expect("grammar: an expression");
            StmtKind::Target(expr(e))
        }
        Rule::assign_stmt => assign_stmt(inner),
        Rule::tilde_stmt => tilde_stmt(inner),
        Rule::call_stmt => StmtKind::Call(call(inner.into_inner().next().expect("grammar: a call"))),
        Rule::empty_stmt => StmtKind::Empty,
        other => unreachable!("grammar/stan.pest: unexpected statement {other:?}"),
    };
    Stmt { kind, span }
}

fn for_stmt(pair: Pair<'_, Rule>) -> StmtKind {
    let mut var = None;
    let mut bounds = Vec::new();
    let mut body = None;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::ident => var = Some(ident(&p)),
            Rule::expr => bounds.push(expr(p)),
            Rule::stmt => body = Some(Box::new(stmt(p))),
            _ => {}
        }
    }
    let mut bounds = bounds.into_iter();
    StmtKind::For {
        var: var.expect("grammar: a loop variable"),
        lo: bounds.next().expect("grammar: a loop range"),
        hi: bounds.next(),
        body: body.expect("grammar: a loop body"),
    }
}

fn if_stmt(pair: Pair<'_, Rule>) -> StmtKind {
    let mut cond = None;
    let mut branches = Vec::new();
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::expr => cond = Some(expr(p)),
            Rule::stmt => branches.push(Box::new(stmt(p))),
            _ => {}
        }
    }
    let mut branches = branches.into_iter();
    StmtKind::If {
        cond: cond.expect("grammar: a condition"),
        then: branches.next().expect("grammar: a branch"),
        els: branches.next(),
    }
}

fn assign_stmt(pair: Pair<'_, Rule>) -> StmtKind {
    let mut inner = pair.into_inner();
    let lv = inner.next().expect("grammar: a left side");
    let lv_span = span_of(&lv);
    let mut lv_parts = lv.into_inner();
    let name = ident(&lv_parts.next().expect("grammar: a variable"));
    let indices = lv_parts.map(index_suffix).collect();
    let op = inner.next().expect("grammar: an operator").as_str().to_string();
    let rhs = expr(inner.next().expect("grammar: a value"));
    StmtKind::Assign {
        lhs: LValue {
            name,
            indices,
            span: lv_span,
        },
        op,
        rhs,
    }
}

fn tilde_stmt(pair: Pair<'_, Rule>) -> StmtKind {
    let mut lhs = None;
    let mut dist = None;
    let mut args = Vec::new();
    let mut trunc = None;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::expr => lhs = Some(expr(p)),
            Rule::ident => dist = Some(ident(&p)),
            Rule::call_args => args = call_args(p).0,
            Rule::truncation => {
                let mut lo = None;
                let mut hi = None;
                for b in p.into_inner() {
                    match b.as_rule() {
                        Rule::trunc_lower => lo = b.into_inner().next().map(expr),
                        Rule::trunc_upper => hi = b.into_inner().next().map(expr),
                        _ => {}
                    }
                }
                trunc = Some((lo, hi));
            }
            _ => {}
        }
    }
    StmtKind::Tilde {
        lhs: lhs.expect("grammar: an outcome"),
        dist: dist.expect("grammar: a distribution"),
        args,
        trunc,
    }
}

fn call_args(pair: Pair<'_, Rule>) -> (Vec<Expr>, bool) {
    let mut bar = false;
    let mut args = Vec::new();
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::expr => args.push(expr(p)),
            Rule::cond_bar => bar = true,
            _ => {}
        }
    }
    (args, bar)
}

fn call(pair: Pair<'_, Rule>) -> Expr {
    let span = span_of(&pair);
    let mut inner = pair.into_inner();
    let name = ident(&inner.next().expect("grammar: a function name"));
    let (args, bar) = inner
        .find(|x| x.as_rule() == Rule::call_args)
        .map_or_else(|| (Vec::new(), false), call_args);
    Expr {
        kind: ExprKind::Call { name, args, bar },
        span,
    }
}

fn index_suffix(pair: Pair<'_, Rule>) -> Vec<Index> {
    pair.into_inner()
        .filter(|x| x.as_rule() == Rule::index_item)
        .map(|item| {
            let p = item.into_inner().next().expect("grammar: an index");
            match p.as_rule() {
                Rule::index_range => {
                    let mut lo = None;
                    let mut hi = None;
                    for part in p.into_inner() {
                        match part.as_rule() {
                            Rule::index_lo => lo = Some(climb_pairs(part)),
                            Rule::index_hi => hi = part.into_inner().next().map(expr),
                            _ => {}
                        }
                    }
                    Index::Range(lo, hi)
                }
                _ => Index::Single(expr(p)),
            }
        })
        .collect()
}

// ---------------------------------------------------------------- expressions

/// One item of a flat expression: an operand or an operator.
enum Item<'a> {
    Term(Pair<'a, Rule>),
    Op(String),
    Ternary(Expr),
}

fn expr(pair: Pair<'_, Rule>) -> Expr {
    climb_pairs(pair)
}

/// Apply Stan's precedence to the flat `term (op term)*` inside `pair`.
fn climb_pairs(pair: Pair<'_, Rule>) -> Expr {
    let items: Vec<Item<'_>> = pair
        .into_inner()
        .map(|p| match p.as_rule() {
            Rule::term => Item::Term(p),
            Rule::ternary_op => {
                let mid = p.into_inner().next().expect("grammar: the middle of `? :`");
                Item::Ternary(expr(mid))
            }
            _ => Item::Op(p.as_str().to_string()),
        })
        .collect();
    let mut climber = Climber { items, pos: 0 };
    climber.climb(0)
}

/// Binding power of a binary operator (higher binds tighter) and whether it is
/// right-associative. The ternary is 1, unary operators sit at 10 (between `.*` and `^`).
fn precedence(op: &str) -> (u8, bool) {
    match op {
        "||" => (2, false),
        "&&" => (3, false),
        "==" | "!=" => (4, false),
        "<" | "<=" | ">" | ">=" => (5, false),
        "+" | "-" => (6, false),
        "*" | "/" | "%" | "%/%" => (7, false),
        "\\" => (8, false),
        ".*" | "./" => (9, false),
        "^" | ".^" => (11, true),
        other => unreachable!("grammar/stan.pest: unknown operator `{other}`"),
    }
}

const TERNARY: u8 = 1;
const UNARY: u8 = 10;

struct Climber<'a> {
    items: Vec<Item<'a>>,
    pos: usize,
}

impl Climber<'_> {
    fn peek_prec(&self) -> Option<(u8, bool)> {
        match self.items.get(self.pos)? {
            Item::Op(op) => Some(precedence(op)),
            Item::Ternary(_) => Some((TERNARY, true)),
            Item::Term(_) => None,
        }
    }

    fn climb(&mut self, min: u8) -> Expr {
        let mut lhs = self.operand();
        while let Some((prec, right)) = self.peek_prec() {
            if prec < min {
                break;
            }
            let item = std::mem::replace(&mut self.items[self.pos], Item::Op(String::new()));
            self.pos += 1;
            let next_min = if right { prec } else { prec + 1 };
            let rhs = self.climb(next_min);
            let span = lhs.span.join(rhs.span);
            let kind = match item {
                Item::Op(op) => ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                Item::Ternary(mid) => ExprKind::Ternary(Box::new(lhs), Box::new(mid), Box::new(rhs)),
                Item::Term(_) => unreachable!("peek_prec saw an operator"),
            };
            lhs = Expr { kind, span };
        }
        lhs
    }

    /// An operand with its prefix operators, which bind looser than `^`: `-x^2` is
    /// `-(x^2)`.
    fn operand(&mut self) -> Expr {
        let item = std::mem::replace(&mut self.items[self.pos], Item::Op(String::new()));
        self.pos += 1;
        let Item::Term(term) = item else {
            unreachable!("grammar/stan.pest: an expression alternates operands and operators")
        };
        let mut prefixes = Vec::new();
        let mut base: Option<Expr> = None;
        for p in term.into_inner() {
            match p.as_rule() {
                Rule::prefix_op => prefixes.push((p.as_str().to_string(), span_of(&p))),
                Rule::transpose => {
                    let e = base.take().expect("grammar: a postfix follows its operand");
                    let span = Span::new(e.span.start as usize, p.as_span().end());
                    base = Some(Expr {
                        kind: ExprKind::Transpose(Box::new(e)),
                        span,
                    });
                }
                Rule::index_suffix => {
                    let e = base.take().expect("grammar: a postfix follows its operand");
                    let span = Span::new(e.span.start as usize, p.as_span().end());
                    base = Some(Expr {
                        kind: ExprKind::Index(Box::new(e), index_suffix(p)),
                        span,
                    });
                }
                _ => base = Some(primary(p)),
            }
        }
        let mut e = base.expect("grammar: a term has a primary");
        if prefixes.is_empty() {
            return e;
        }
        if let Some((prec, _)) = self.peek_prec() {
            if prec > UNARY {
                self.pos += 1;
                let Item::Op(op) = std::mem::replace(&mut self.items[self.pos - 1], Item::Op(String::new()))
                else {
                    unreachable!("only `^` binds tighter than a prefix")
                };
                let rhs = self.climb(prec);
                let span = e.span.join(rhs.span);
                e = Expr {
                    kind: ExprKind::Binary(op, Box::new(e), Box::new(rhs)),
                    span,
                };
            }
        }
        for (op, span) in prefixes.into_iter().rev() {
            let span = span.join(e.span);
            e = Expr {
                kind: ExprKind::Unary(op, Box::new(e)),
                span,
            };
        }
        e
    }
}

fn primary(p: Pair<'_, Rule>) -> Expr {
    let span = span_of(&p);
    let kind = match p.as_rule() {
        Rule::int_lit => ExprKind::Int(p.as_str().to_string()),
        Rule::real_lit => ExprKind::Real(p.as_str().to_string()),
        Rule::imag_lit => ExprKind::Imag,
        Rule::ident => ExprKind::Var(p.as_str().to_string()),
        Rule::call => return call(p),
        Rule::row_vector_lit => ExprKind::RowVec(exprs_of(p)),
        Rule::array_lit => ExprKind::Array(exprs_of(p)),
        Rule::paren => {
            let inner = p
                .into_inner()
                .find(|x| x.as_rule() == Rule::expr)
                .expect("grammar: `( e )`");
            return Expr { span, ..expr(inner) };
        }
        other => unreachable!("grammar/stan.pest: unexpected operand {other:?}"),
    };
    Expr { kind, span }
}

#[cfg(test)]
mod tests;
