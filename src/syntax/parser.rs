//! `.mvi` text → [`Program`]: pest parses `grammar/mvi.pest`, then this file builds the AST.
//!
//! Input: the source text and its file name. Output: a [`Program`] whose every node carries
//! the byte [`Span`] of its text, or the first syntax error as a [`Diagnostic`]. Operator
//! precedence (Stan's) is applied here, over the flat `term (op term)*` sequences the grammar
//! produces. Nothing is resolved: names may be unknown and shapes may disagree (that is
//! `check`'s work). What the next stage can rely on: sizes are present on every `param`
//! declaration and on `data`/`hyper` declarations without a value; sizes counts match the
//! base type; expressions nest at most [`MAX_EXPR_DEPTH`] deep.

use pest::iterators::Pair;
use pest::Parser as _;

use super::ast::*;
use super::error::Error;
use super::expected::from_pest;
use super::lint::check_assignments;
use super::scan::prescan;
use super::span::Span;
use crate::diagnostic::Diagnostic;

/// How deeply expressions may nest (operators and brackets together).
pub const MAX_EXPR_DEPTH: usize = 200;

#[allow(missing_docs)]
mod grammar {
    /// The pest parser generated from `grammar/mvi.pest`.
    #[derive(pest_derive::Parser)]
    #[grammar = "grammar/mvi.pest"]
    pub struct MviParser;
}

pub(crate) use grammar::Rule;

/// Parse a whole `.mvi` source into its AST.
///
/// `file_name` is only used to label the diagnostic.
///
/// # Errors
/// The first syntax error, as a `Diagnostic` with code `mvi::syntax::…`, the span of the
/// offending text, a message saying what was expected, and a help line where a fix is likely.
// `Diagnostic` is the crate's one user-facing error type; errors are rare, so its size is fine.
#[allow(clippy::result_large_err)]
pub fn parse_program(src: &str, file_name: &str) -> Result<Program, Diagnostic> {
    parse(src).map_err(|e| e.to_diagnostic(src, file_name))
}

/// Parse into an AST, keeping the error as data.
///
/// # Errors
/// The first syntax error.
pub fn parse(src: &str) -> Result<Program, Error> {
    prescan(src)?;
    let mut pairs = grammar::MviParser::parse(Rule::program, src).map_err(|e| from_pest(&e, src))?;
    let program = pairs.next().expect("pest returns the `program` pair on success");
    let program = build_program(program)?;
    check_assignments(&program, src)?;
    Ok(program)
}

/// The span of a pair without the whitespace and comments pest may have consumed after its
/// last token (an optional part that did not match leaves them inside the pair).
fn span_of(pair: &Pair<'_, Rule>) -> Span {
    Span::new(pair.as_span().start(), tight_end(pair))
}

fn tight_end(pair: &Pair<'_, Rule>) -> usize {
    match pair.clone().into_inner().last() {
        Some(last) => tight_end(&last),
        None => pair.as_span().end(),
    }
}

fn ident(pair: Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: span_of(&pair),
    }
}

/// The first inner pair with the given rule.
fn child<'i>(pair: &Pair<'i, Rule>, rule: Rule) -> Option<Pair<'i, Rule>> {
    pair.clone().into_inner().find(|p| p.as_rule() == rule)
}

/// Like [`child`] for children the grammar guarantees.
fn must<'i>(pair: &Pair<'i, Rule>, rule: Rule) -> Pair<'i, Rule> {
    child(pair, rule).expect("required by grammar/mvi.pest")
}

// ------------------------------------------------------------------ items

fn build_program(pair: Pair<'_, Rule>) -> Result<Program, Error> {
    let span = span_of(&pair);
    let mut items = Vec::new();
    for p in pair.into_inner() {
        let item = match p.as_rule() {
            Rule::import => Item::Import(build_import(p)),
            Rule::fn_def => Item::Fn(build_fn(p)?),
            Rule::data_block => Item::Data(build_decl_block(p, "data")?),
            Rule::hyper_block => Item::Hyper(build_decl_block(p, "hyper")?),
            Rule::param_block => Item::Param(build_decl_block(p, "param")?),
            Rule::let_stmt => Item::Let(build_let(p)?),
            Rule::model_block => Item::Model(build_stmt_block(p)?),
            Rule::predict_block => Item::Predict(build_stmt_block(p)?),
            Rule::generated_block => Item::Generated(build_stmt_block(p)?),
            Rule::infer_block => Item::Infer(build_infer(p)?),
            _ => continue,
        };
        items.push(item);
    }
    Ok(Program { items, span })
}

fn build_import(pair: Pair<'_, Rule>) -> Import {
    let s = must(&pair, Rule::string);
    Import {
        path: unquote(s.as_str()),
        span: span_of(&pair),
    }
}

fn unquote(s: &str) -> String {
    s.trim_start_matches('"').trim_end_matches('"').to_string()
}

fn build_fn(pair: Pair<'_, Rule>) -> Result<FnDef, Error> {
    let span = span_of(&pair);
    let mut name = None;
    let mut params = Vec::new();
    let mut ret = None;
    let mut body = Vec::new();
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::ident => name = Some(ident(p)),
            Rule::fn_param => {
                let n = ident(must(&p, Rule::ident));
                let ty = build_type(must(&p, Rule::type_expr), SizeRule::Optional)?;
                params.push((n, ty));
            }
            Rule::fn_ret => {
                ret = Some(Box::new(build_type(
                    must(&p, Rule::type_expr),
                    SizeRule::Optional,
                )?))
            }
            Rule::stmt_body => body = build_body(p)?,
            _ => {}
        }
    }
    Ok(FnDef {
        name: name.expect("required by grammar/mvi.pest"),
        params,
        ret,
        body,
        span,
    })
}

fn build_decl_block(pair: Pair<'_, Rule>, block: &'static str) -> Result<DeclBlock, Error> {
    let span = span_of(&pair);
    let decls = pair
        .into_inner()
        .filter(|p| p.as_rule() == Rule::decl)
        .map(|p| build_decl(p, block))
        .collect::<Result<_, _>>()?;
    Ok(DeclBlock { decls, span })
}

fn build_decl(pair: Pair<'_, Rule>, block: &'static str) -> Result<Decl, Error> {
    let span = span_of(&pair);
    let name = ident(must(&pair, Rule::ident));
    let init = child(&pair, Rule::expr).map(build_expr).transpose()?;
    let rule = match (block, init.is_some()) {
        ("param", _) | (_, false) => SizeRule::Required(block),
        _ => SizeRule::Optional,
    };
    let ty = build_type(must(&pair, Rule::type_expr), rule)?;
    Ok(Decl { name, ty, init, span })
}

fn build_let(pair: Pair<'_, Rule>) -> Result<Let, Error> {
    Ok(Let {
        span: span_of(&pair),
        name: ident(must(&pair, Rule::ident)),
        value: build_expr(must(&pair, Rule::expr))?,
    })
}

fn build_stmt_block(pair: Pair<'_, Rule>) -> Result<StmtBlock, Error> {
    Ok(StmtBlock {
        span: span_of(&pair),
        stmts: build_body(must(&pair, Rule::stmt_body))?,
    })
}

// ------------------------------------------------------------------ types

/// Whether a type must carry its sizes.
#[derive(Clone, Copy)]
enum SizeRule {
    /// Sizes may be left out (function parameters, declarations with a value).
    Optional,
    /// Sizes are required; the block's name is for the message.
    Required(&'static str),
}

fn build_type(pair: Pair<'_, Rule>, rule: SizeRule) -> Result<TypeExpr, Error> {
    let span = span_of(&pair);
    let base_text = must(&pair, Rule::base_type).as_str();
    let kind = TypeKind::by_name(base_text);
    let (base, base_name, takes) = match (base_text, kind) {
        ("int", _) => (BaseType::Int, "int", 0),
        ("real", _) => (BaseType::Real, "real", 0),
        ("vector", _) => (BaseType::Vector, "vector", 1),
        ("row_vector", _) => (BaseType::RowVector, "row_vector", 1),
        ("matrix", _) => (BaseType::Matrix, "matrix", 2),
        (_, Some(k)) if k.is_matrix() => (BaseType::Matrix, k.name(), 1),
        (_, Some(k)) => (BaseType::Vector, k.name(), 1),
        _ => (BaseType::Ints, "ints", 1),
    };
    let [lower, upper, offset, multiplier] = match child(&pair, Rule::constraint) {
        Some(c) => build_constraint(c)?,
        None => Default::default(),
    };
    let mut sizes = match child(&pair, Rule::sizes) {
        Some(s) => s
            .into_inner()
            .filter(|p| p.as_rule() == Rule::nexpr)
            .map(build_expr)
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    // `cholesky_cov[M, N]` (Stan's `cholesky_factor_cov[M, N]`) may give both sizes
    let two_sizes = kind == Some(TypeKind::CholeskyCov) && sizes.len() == 2;
    if !two_sizes {
        check_sizes(span, base_name, takes, sizes.len(), rule)?;
    }
    if base == BaseType::Matrix && takes == 1 && !two_sizes {
        // `cov_matrix[K]` is a `matrix[K, K]`.
        sizes.extend(sizes.first().cloned());
    }
    let mut base = base;
    if let Some(dims) = child(&pair, Rule::array_sizes) {
        let dims: Vec<Expr> = dims
            .into_inner()
            .filter(|p| p.as_rule() == Rule::nexpr)
            .map(build_expr)
            .collect::<Result<_, _>>()?;
        base = array_base(span, base, kind, base_name, &dims, &mut sizes)?;
    }
    Ok(TypeExpr {
        base,
        lower,
        upper,
        offset,
        multiplier,
        sizes,
        kind,
        span,
    })
}

/// Stan's arrays as the types that hold them (the sizes become the array's dimensions, then
/// the element's): `array[N] vector[K]` and `array[N] row_vector[K]` are an N × K matrix
/// whose row n is element n, `array[N] real` a vector, `array[N] int` an `ints`, and
/// `array[N, M] real` an N × M matrix. Others are [`Error::UnsupportedArray`].
fn array_base(
    span: Span,
    base: BaseType,
    kind: Option<TypeKind>,
    base_name: &str,
    dims: &[Expr],
    sizes: &mut Vec<Expr>,
) -> Result<BaseType, Error> {
    let out = match (base, kind, dims.len(), sizes.len()) {
        (BaseType::Vector | BaseType::RowVector, None, 1, 1) => Some(BaseType::Matrix),
        (BaseType::Real, None, 1, 0) => Some(BaseType::Vector),
        (BaseType::Int, None, 1, 0) => Some(BaseType::Ints),
        (BaseType::Real, None, 2, 0) => Some(BaseType::Matrix),
        _ => None,
    };
    let Some(out) = out else {
        let n = if dims.len() == 1 { "N" } else { "N, …" };
        return Err(Error::UnsupportedArray {
            span,
            what: format!("array[{n}] {base_name}"),
        });
    };
    let mut all = dims.to_vec();
    all.append(sizes);
    *sizes = all;
    Ok(out)
}

fn check_sizes(
    span: Span,
    base: &'static str,
    takes: usize,
    found: usize,
    rule: SizeRule,
) -> Result<(), Error> {
    match (found, rule) {
        (0, SizeRule::Required(block)) if takes > 0 => Err(Error::MissingSize { span, base, block }),
        (0, _) => Ok(()),
        (n, _) if n != takes => Err(Error::SizeCount {
            span,
            base,
            takes,
            found: n,
        }),
        _ => Ok(()),
    }
}

/// The keys a constraint may give, in the order [`build_constraint`] returns their values.
const BOUND_KEYS: [&str; 4] = ["lower", "upper", "offset", "multiplier"];

/// `lower=`, `upper=`, `offset=` and `multiplier=`, each if written.
type Bounds = [Option<Expr>; 4];

fn build_constraint(pair: Pair<'_, Rule>) -> Result<Bounds, Error> {
    let mut bounds: Bounds = Default::default();
    for b in pair.into_inner().filter(|p| p.as_rule() == Rule::bound) {
        let key = must(&b, Rule::bound_key).as_str();
        let value = build_expr(must(&b, Rule::bound_expr))?;
        let i = BOUND_KEYS
            .iter()
            .position(|k| *k == key)
            .expect("the grammar's `bound_key` has these four keys");
        if bounds[i].is_some() {
            return Err(Error::DuplicateBound {
                span: span_of(&b),
                key: BOUND_KEYS[i],
            });
        }
        bounds[i] = Some(value);
    }
    Ok(bounds)
}

// ------------------------------------------------------------------ statements

fn build_body(pair: Pair<'_, Rule>) -> Result<Vec<Stmt>, Error> {
    pair.into_inner()
        .filter(|p| p.as_rule() == Rule::stmt)
        .map(build_stmt)
        .collect()
}

fn build_stmt(pair: Pair<'_, Rule>) -> Result<Stmt, Error> {
    let inner = pair
        .into_inner()
        .next()
        .expect("a `stmt` has one inner statement");
    let span = span_of(&inner);
    match inner.as_rule() {
        Rule::let_stmt => Ok(Stmt::Let(build_let(inner)?)),
        Rule::for_stmt => build_for(inner),
        Rule::if_stmt => build_if(inner),
        Rule::return_stmt => Ok(Stmt::Return {
            value: build_expr(must(&inner, Rule::expr))?,
            span,
        }),
        Rule::target_stmt => Ok(Stmt::Target {
            value: build_expr(must(&inner, Rule::expr))?,
            span,
        }),
        Rule::expr_tilde_stmt => {
            let lhs = build_expr(must(&inner, Rule::expr))?;
            build_tilde(lhs, &inner, must(&inner, Rule::dist_call), span)
        }
        _ => build_lvalue_stmt(inner),
    }
}

/// `lhs ~ dist(args) T[…]` from the statement (`stmt`, which holds the truncation) and its
/// distribution call.
fn build_tilde(lhs: Expr, stmt: &Pair<'_, Rule>, call: Pair<'_, Rule>, span: Span) -> Result<Stmt, Error> {
    let dist = ident(must(&call, Rule::dist_name));
    if let Some(bar) = child(&call, Rule::cond_bar) {
        return Err(Error::BarInTilde { span: span_of(&bar) });
    }
    let args = call_args(&call)?;
    let trunc = child(stmt, Rule::truncation).map(build_truncation).transpose()?;
    Ok(Stmt::Tilde {
        lhs,
        dist,
        args,
        trunc,
        span,
    })
}

fn build_for(pair: Pair<'_, Rule>) -> Result<Stmt, Error> {
    let span = span_of(&pair);
    let var = ident(must(&pair, Rule::ident));
    let mut exprs = pair.clone().into_inner().filter(|p| p.as_rule() == Rule::expr);
    let lo = build_expr(exprs.next().expect("`for` has a lower bound"))?;
    let hi = build_expr(exprs.next().expect("`for` has an upper bound"))?;
    let body = build_body(must(&pair, Rule::stmt_body))?;
    Ok(Stmt::For {
        var,
        lo,
        hi,
        body,
        span,
    })
}

fn build_if(pair: Pair<'_, Rule>) -> Result<Stmt, Error> {
    let span = span_of(&pair);
    let cond = build_expr(must(&pair, Rule::expr))?;
    let mut bodies = pair
        .clone()
        .into_inner()
        .filter(|p| p.as_rule() == Rule::stmt_body);
    let then = build_body(bodies.next().expect("`if` has a body"))?;
    let otherwise = match (bodies.next(), child(&pair, Rule::if_stmt)) {
        (Some(b), _) => build_body(b)?,
        (None, Some(nested)) => vec![build_if(nested)?],
        (None, None) => Vec::new(),
    };
    Ok(Stmt::If {
        cond,
        then,
        otherwise,
        span,
    })
}

fn build_lvalue_stmt(pair: Pair<'_, Rule>) -> Result<Stmt, Error> {
    let span = span_of(&pair);
    let target = build_lvalue(must(&pair, Rule::lvalue))?;
    if let Some(call) = child(&pair, Rule::dist_call) {
        return build_tilde(target, &pair, call, span);
    }
    let op = match must(&pair, Rule::assign_op).as_str() {
        "=" => AssignOp::Set,
        "+=" => AssignOp::Add,
        "-=" => AssignOp::Sub,
        "*=" => AssignOp::Mul,
        _ => AssignOp::Div,
    };
    Ok(Stmt::Assign {
        target,
        op,
        value: build_expr(must(&pair, Rule::expr))?,
        span,
    })
}

fn build_truncation(pair: Pair<'_, Rule>) -> Result<Truncation, Error> {
    let bound = |rule| {
        child(&pair, rule)
            .map(|b| build_expr(must(&b, Rule::nexpr)))
            .transpose()
    };
    Ok(Truncation {
        lower: bound(Rule::trunc_lower)?,
        upper: bound(Rule::trunc_upper)?,
        span: span_of(&pair),
    })
}

fn build_lvalue(pair: Pair<'_, Rule>) -> Result<Expr, Error> {
    let mut inner = pair.into_inner();
    let name = inner.next().expect("an lvalue starts with a name");
    let mut e = Expr {
        span: span_of(&name),
        kind: ExprKind::Name(name.as_str().to_string()),
    };
    for suffix in inner {
        e = apply_index(e, suffix, 0)?;
    }
    Ok(e)
}

// ------------------------------------------------------------------ infer

fn build_infer(pair: Pair<'_, Rule>) -> Result<InferBlock, Error> {
    let span = span_of(&pair);
    let entries = pair
        .into_inner()
        .filter(|p| p.as_rule() == Rule::infer_entry)
        .map(|p| {
            let value_pair = must(&p, Rule::infer_value);
            Ok(InferEntry {
                span: span_of(&p),
                key: ident(must(&p, Rule::ident)),
                value_span: span_of(&value_pair),
                value: build_infer_value(value_pair, 0)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(InferBlock { entries, span })
}

fn build_infer_value(pair: Pair<'_, Rule>, depth: usize) -> Result<InferValue, Error> {
    let span = span_of(&pair);
    if depth > MAX_EXPR_DEPTH {
        return Err(too_deep(span));
    }
    let inner = pair.into_inner().next().expect("an infer value has one part");
    match inner.as_rule() {
        Rule::signed_number => match number(&inner)? {
            ExprKind::Int(i) => Ok(InferValue::Int(i)),
            ExprKind::Real(r) => Ok(InferValue::Real(r)),
            _ => unreachable!("number() returns Int or Real"),
        },
        Rule::word => Ok(InferValue::Word(inner.as_str().to_string())),
        _ => inner
            .into_inner()
            .filter(|p| p.as_rule() == Rule::infer_value)
            .map(|p| build_infer_value(p, depth + 1))
            .collect::<Result<_, _>>()
            .map(InferValue::List),
    }
}

// ------------------------------------------------------------------ expressions

fn too_deep(span: Span) -> Error {
    Error::TooDeep {
        span,
        limit: MAX_EXPR_DEPTH,
    }
}

/// An `Int` or `Real` from a `number` or `signed_number` pair.
fn number(pair: &Pair<'_, Rule>) -> Result<ExprKind, Error> {
    let text = pair.as_str();
    let span = span_of(pair);
    if text.contains(['.', 'e', 'E']) {
        let v: f64 = text.parse().map_err(|_| Error::RealOutOfRange { span })?;
        if v.is_finite() {
            Ok(ExprKind::Real(v))
        } else {
            Err(Error::RealOutOfRange { span })
        }
    } else {
        text.parse::<i64>()
            .map(ExprKind::Int)
            .map_err(|_| Error::IntTooLarge { span })
    }
}

/// Build an expression from an `expr`, `nexpr` or `bound_expr` pair.
pub(crate) fn build_expr(pair: Pair<'_, Rule>) -> Result<Expr, Error> {
    build_expr_at(pair, 0).map(|(e, _)| e)
}

/// One element of the flat `term (op term)*` sequence.
enum Tok<'i> {
    Prefix(UnOp, Span),
    Primary(Pair<'i, Rule>),
    Postfix(Pair<'i, Rule>),
    Infix(BinOp, Span),
    Ternary(Pair<'i, Rule>),
}

/// An expression with its height (1 for a leaf), used to bound nesting.
type Built = (Expr, usize);

fn build_expr_at(pair: Pair<'_, Rule>, depth: usize) -> Result<Built, Error> {
    if depth > MAX_EXPR_DEPTH {
        return Err(too_deep(span_of(&pair)));
    }
    let mut toks = flatten(pair).into_iter().peekable();
    let built = pratt(&mut toks, 0, depth)?;
    debug_assert!(toks.peek().is_none(), "the Pratt parser consumes every token");
    Ok(built)
}

fn flatten(pair: Pair<'_, Rule>) -> Vec<Tok<'_>> {
    let mut toks = Vec::new();
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::term => {
                for t in p.into_inner() {
                    toks.push(match t.as_rule() {
                        Rule::prefix_op => {
                            let op = if t.as_str() == "-" { UnOp::Neg } else { UnOp::Not };
                            Tok::Prefix(op, span_of(&t))
                        }
                        Rule::transpose | Rule::index_suffix => Tok::Postfix(t),
                        _ => Tok::Primary(t),
                    });
                }
            }
            Rule::ternary_op => toks.push(Tok::Ternary(p)),
            Rule::binop | Rule::arith_op => toks.push(Tok::Infix(binop(p.as_str()), span_of(&p))),
            _ => {}
        }
    }
    toks
}

fn binop(s: &str) -> BinOp {
    match s {
        "||" => BinOp::Or,
        "&&" => BinOp::And,
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "<=" => BinOp::Le,
        ">=" => BinOp::Ge,
        "<" => BinOp::Lt,
        ">" => BinOp::Gt,
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Mod,
        ".*" => BinOp::ElemMul,
        "./" => BinOp::ElemDiv,
        _ => BinOp::Pow,
    }
}

/// Binding power of prefix operators: looser than `^`, tighter than `.*`.
const PREFIX_BP: u8 = 17;
/// Binding power of the conditional `? :` (loosest, right-associative).
const TERNARY_BP: (u8, u8) = (2, 1);

/// Left and right binding powers, Stan's precedence (higher binds tighter).
fn infix_bp(op: BinOp) -> (u8, u8) {
    match op {
        BinOp::Or => (3, 4),
        BinOp::And => (5, 6),
        BinOp::Eq | BinOp::Ne => (7, 8),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (9, 10),
        BinOp::Add | BinOp::Sub => (11, 12),
        BinOp::Mul | BinOp::Div | BinOp::Mod => (13, 14),
        BinOp::ElemMul | BinOp::ElemDiv => (15, 16),
        BinOp::Pow => (20, 19),
    }
}

type Toks<'i> = std::iter::Peekable<std::vec::IntoIter<Tok<'i>>>;

fn pratt(toks: &mut Toks<'_>, min_bp: u8, depth: usize) -> Result<Built, Error> {
    let (mut lhs, mut height) = pratt_operand(toks, depth)?;
    loop {
        let (l_bp, r_bp) = match toks.peek() {
            Some(Tok::Postfix(_)) => {
                let Some(Tok::Postfix(p)) = toks.next() else {
                    unreachable!("peeked a postfix token")
                };
                (lhs, height) = apply_postfix(lhs, height, p, depth)?;
                continue;
            }
            Some(Tok::Infix(op, _)) => infix_bp(*op),
            Some(Tok::Ternary(_)) => TERNARY_BP,
            _ => break,
        };
        if l_bp < min_bp {
            break;
        }
        let op = toks.next().expect("peeked an operator");
        let (rhs, rh) = pratt(toks, r_bp, depth + 1)?;
        height = height.max(rh) + 1;
        lhs = combine(lhs, op, rhs, depth)?;
        if height > MAX_EXPR_DEPTH {
            return Err(too_deep(lhs.span));
        }
    }
    Ok((lhs, height))
}

fn pratt_operand(toks: &mut Toks<'_>, depth: usize) -> Result<Built, Error> {
    if depth > MAX_EXPR_DEPTH {
        let span = match toks.peek() {
            Some(Tok::Prefix(_, s)) | Some(Tok::Infix(_, s)) => *s,
            Some(Tok::Primary(p)) | Some(Tok::Postfix(p)) | Some(Tok::Ternary(p)) => span_of(p),
            None => Span::default(),
        };
        return Err(too_deep(span));
    }
    match toks.next() {
        Some(Tok::Prefix(op, span)) => {
            let (e, h) = pratt(toks, PREFIX_BP, depth + 1)?;
            let span = span.join(e.span);
            Ok((
                Expr {
                    kind: ExprKind::Unary(op, Box::new(e)),
                    span,
                },
                h + 1,
            ))
        }
        Some(Tok::Primary(p)) => build_primary(p, depth),
        _ => unreachable!("the grammar puts an operand first in every term"),
    }
}

fn combine(lhs: Expr, op: Tok<'_>, rhs: Expr, depth: usize) -> Result<Expr, Error> {
    let span = lhs.span.join(rhs.span);
    let kind = match op {
        Tok::Infix(op, _) => ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
        Tok::Ternary(p) => {
            let (mid, _) = build_expr_at(must(&p, Rule::nexpr), depth + 1)?;
            ExprKind::Ternary(Box::new(lhs), Box::new(mid), Box::new(rhs))
        }
        _ => unreachable!("combine is called with an infix operator"),
    };
    Ok(Expr { kind, span })
}

fn apply_postfix(lhs: Expr, height: usize, p: Pair<'_, Rule>, depth: usize) -> Result<Built, Error> {
    let e = if p.as_rule() == Rule::transpose {
        let span = lhs.span.join(span_of(&p));
        Expr {
            kind: ExprKind::Transpose(Box::new(lhs)),
            span,
        }
    } else {
        apply_index(lhs, p, depth)?
    };
    if height + 1 > MAX_EXPR_DEPTH {
        return Err(too_deep(e.span));
    }
    Ok((e, height + 1))
}

fn apply_index(base: Expr, suffix: Pair<'_, Rule>, depth: usize) -> Result<Expr, Error> {
    let span = base.span.join(span_of(&suffix));
    let indices = suffix
        .into_inner()
        .filter(|p| p.as_rule() == Rule::index_item)
        .map(|item| build_index_item(item, depth + 1))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Expr {
        kind: ExprKind::Index(Box::new(base), indices),
        span,
    })
}

fn build_index_item(item: Pair<'_, Rule>, depth: usize) -> Result<Index, Error> {
    let span = span_of(&item);
    let mut lo = None;
    let mut hi = None;
    let mut seen_colon = false;
    for p in item.into_inner() {
        match p.as_rule() {
            Rule::range_colon => seen_colon = true,
            Rule::nexpr if seen_colon => hi = Some(build_expr_at(p, depth)?.0),
            Rule::nexpr => lo = Some(build_expr_at(p, depth)?.0),
            _ => {}
        }
    }
    if seen_colon {
        Ok(Index::Range { lo, hi, span })
    } else {
        Ok(Index::At(lo.expect("an index without `:` has an expression")))
    }
}

fn build_primary(p: Pair<'_, Rule>, depth: usize) -> Result<Built, Error> {
    let span = span_of(&p);
    let leaf = |kind| Ok((Expr { kind, span }, 1));
    match p.as_rule() {
        Rule::number => leaf(number(&p)?),
        Rule::string => leaf(ExprKind::Str(unquote(p.as_str()))),
        Rule::ident => leaf(ExprKind::Name(p.as_str().to_string())),
        Rule::call => {
            let func = ident(must(&p, Rule::ident));
            let conditional = child(&p, Rule::cond_bar).is_some();
            let (args, h) = nested_exprs(&p, depth)?;
            let kind = ExprKind::Call {
                func,
                args,
                conditional,
            };
            Ok((Expr { kind, span }, h + 1))
        }
        Rule::array => {
            let (items, h) = nested_exprs(&p, depth)?;
            Ok((
                Expr {
                    kind: ExprKind::Array(items),
                    span,
                },
                h + 1,
            ))
        }
        _ => {
            let (inner, h) = build_expr_at(must(&p, Rule::nexpr), depth + 1)?;
            Ok((
                Expr {
                    kind: inner.kind,
                    span,
                },
                h,
            ))
        }
    }
}

/// The `nexpr` children of a call or array, with the largest height among them.
fn nested_exprs(p: &Pair<'_, Rule>, depth: usize) -> Result<(Vec<Expr>, usize), Error> {
    let mut height = 0;
    let mut out = Vec::new();
    for a in p.clone().into_inner().filter(|a| a.as_rule() == Rule::nexpr) {
        let (e, h) = build_expr_at(a, depth + 1)?;
        height = height.max(h);
        out.push(e);
    }
    Ok((out, height))
}

fn call_args(call: &Pair<'_, Rule>) -> Result<Vec<Expr>, Error> {
    Ok(nested_exprs(call, 0)?.0)
}

#[cfg(test)]
mod tests;
