//! Unit tests of the parser: precedence, spans, statements and error wording.

use super::*;

/// Parse `src` as the value of a top-level `let` and return the value's dump.
fn expr_dump(src: &str) -> String {
    let p = parse(&format!("let x = {src}\n")).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    let Item::Let(l) = &p.items[0] else {
        panic!("expected a let")
    };
    compact(&l.value)
}

/// A one-line, fully parenthesised form of an expression, for precedence tests.
fn compact(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Real(r) => format!("{r:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Name(n) => n.clone(),
        ExprKind::Array(items) => format!("[{}]", list(items)),
        ExprKind::Unary(op, x) => format!("({}{})", if *op == UnOp::Neg { "-" } else { "!" }, compact(x)),
        ExprKind::Binary(op, a, b) => {
            format!(
                "({} {} {})",
                compact(a),
                crate::syntax::dump::binop_symbol(*op),
                compact(b)
            )
        }
        ExprKind::Transpose(x) => format!("({}')", compact(x)),
        ExprKind::Ternary(c, a, b) => format!("({} ? {} : {})", compact(c), compact(a), compact(b)),
        ExprKind::Call {
            func,
            args,
            conditional,
        } => {
            if *conditional {
                format!("{}({} | {})", func.name, compact(&args[0]), list(&args[1..]))
            } else {
                format!("{}({})", func.name, list(args))
            }
        }
        ExprKind::Index(base, idx) => {
            let parts: Vec<String> = idx
                .iter()
                .map(|i| match i {
                    Index::At(e) => compact(e),
                    Index::Range { lo, hi, .. } => format!(
                        "{}:{}",
                        lo.as_ref().map(compact).unwrap_or_default(),
                        hi.as_ref().map(compact).unwrap_or_default()
                    ),
                })
                .collect();
            format!("{}[{}]", compact(base), parts.join(", "))
        }
    }
}

fn list(items: &[Expr]) -> String {
    items.iter().map(compact).collect::<Vec<_>>().join(", ")
}

#[test]
fn power_binds_tighter_than_unary_minus() {
    assert_eq!(expr_dump("-a^2"), "(-(a ^ 2))");
    assert_eq!(expr_dump("-a * b"), "((-a) * b)");
    assert_eq!(expr_dump("2^-1"), "(2 ^ (-1))");
}

#[test]
fn power_is_right_associative() {
    assert_eq!(expr_dump("a^b^c"), "(a ^ (b ^ c))");
}

#[test]
fn transpose_binds_tightest() {
    assert_eq!(expr_dump("a * b'"), "(a * (b'))");
    assert_eq!(expr_dump("-x'"), "(-(x'))");
    assert_eq!(expr_dump("X[1]'"), "(X[1]')");
}

#[test]
fn elementwise_binds_tighter_than_product_as_in_stan() {
    assert_eq!(expr_dump("x .* y + z"), "((x .* y) + z)");
    assert_eq!(expr_dump("X * w .* z"), "(X * (w .* z))");
    assert_eq!(expr_dump("a ./ b * c"), "((a ./ b) * c)");
}

#[test]
fn arithmetic_is_left_associative() {
    assert_eq!(expr_dump("a - b - c"), "((a - b) - c)");
    assert_eq!(expr_dump("a / b * c % d"), "(((a / b) * c) % d)");
}

#[test]
fn conditional_is_loosest_and_right_associative() {
    assert_eq!(expr_dump("a ? b : c ? d : e"), "(a ? b : (c ? d : e))");
    assert_eq!(expr_dump("a || b && c ? 1 : 2"), "((a || (b && c)) ? 1 : 2)");
}

#[test]
fn comparisons_sit_between_logic_and_arithmetic() {
    assert_eq!(expr_dump("a + 1 < b == c"), "(((a + 1) < b) == c)");
    assert_eq!(expr_dump("!a && b"), "((!a) && b)");
}

#[test]
fn indexing_and_slicing_forms() {
    assert_eq!(expr_dump("M[i, j]"), "M[i, j]");
    assert_eq!(expr_dump("M[:, a:b]"), "M[:, a:b]");
    assert_eq!(expr_dump("M[a:b, :]"), "M[a:b, :]");
    assert_eq!(expr_dump("v[k+1:N]"), "v[(k + 1):N]");
    assert_eq!(expr_dump("v[2:]"), "v[2:]");
    assert_eq!(expr_dump("theta[school]"), "theta[school]");
}

#[test]
fn literals_and_calls() {
    assert_eq!(expr_dump("[1, 2.5, -1]"), "[1, 2.5, (-1)]");
    assert_eq!(expr_dump("[[1, 0.8], [0.8, 1]]"), "[[1, 0.8], [0.8, 1]]");
    assert_eq!(expr_dump("-1.5e-3"), "(-0.0015)");
    assert_eq!(expr_dump("normal_lpdf(y | mu, 2)"), "normal_lpdf(y | mu, 2)");
    assert_eq!(expr_dump("f()"), "f()");
    assert_eq!(expr_dump("csv(\"X.csv\")"), "csv(\"X.csv\")");
}

#[test]
fn newlines_inside_brackets_and_after_operators_continue_the_expression() {
    assert_eq!(expr_dump("f(a,\n  b\n)"), "f(a, b)");
    assert_eq!(expr_dump("(a\n + b)"), "(a + b)");
    assert_eq!(expr_dump("a +\n b"), "(a + b)");
    assert_eq!(expr_dump("[1,\n 2,\n]"), "[1, 2]");
}

#[test]
fn spans_point_at_the_text() {
    let src = "let x = (a + b) * c'\n";
    let p = parse(src).unwrap();
    let Item::Let(l) = &p.items[0] else { panic!() };
    let text = |s: Span| &src[s.start as usize..s.end as usize];
    assert_eq!(text(l.value.span), "(a + b) * c'");
    let ExprKind::Binary(_, a, b) = &l.value.kind else {
        panic!()
    };
    assert_eq!(text(a.span), "(a + b)");
    assert_eq!(text(b.span), "c'");
    assert_eq!(text(l.span), "let x = (a + b) * c'");
}

#[test]
fn integer_overflow_is_an_error_not_a_panic() {
    assert!(matches!(
        parse("let x = 99999999999999999999\n"),
        Err(Error::IntTooLarge { .. })
    ));
    assert!(matches!(
        parse("let x = 1e999\n"),
        Err(Error::RealOutOfRange { .. })
    ));
}

#[test]
fn long_operator_chains_are_bounded() {
    let src = format!("let x = {}1\n", "-".repeat(5000));
    assert!(matches!(parse(&src), Err(Error::TooDeep { .. })));
    let src = format!("let x = 1{}\n", " ^ 1".repeat(5000));
    assert!(matches!(parse(&src), Err(Error::TooDeep { .. })));
    let src = format!("let x = 1{}\n", " + 1".repeat(5000));
    assert!(matches!(parse(&src), Err(Error::TooDeep { .. })));
}

#[test]
fn sizes_are_required_where_they_cannot_be_inferred() {
    assert!(matches!(
        parse("param { w: vector }"),
        Err(Error::MissingSize { .. })
    ));
    assert!(parse("data { X: matrix = csv(\"X.csv\") }").is_ok());
    assert!(parse("fn f(a: vector) -> vector { return a }").is_ok());
    assert!(matches!(
        parse("param { w: vector[N, M] }"),
        Err(Error::SizeCount { .. })
    ));
    assert!(matches!(
        parse("data { n: real[3] }"),
        Err(Error::SizeCount { .. })
    ));
}

#[test]
fn else_may_start_the_next_line_and_crlf_ends_statements() {
    let src = "model {\r\n  if a {\r\n    x ~ normal(0, 1)\r\n  }\r\n  else {\r\n    x ~ normal(0, 2)\r\n  }\r\n  y ~ normal(0, 1) // done\r\n}\r\n";
    let p = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let Item::Model(m) = &p.items[0] else { panic!() };
    assert_eq!(m.stmts.len(), 2);
    let Stmt::If { otherwise, .. } = &m.stmts[0] else {
        panic!()
    };
    assert_eq!(otherwise.len(), 1);
}

#[test]
fn reserved_words_are_not_names_but_target_still_increments() {
    assert!(parse("let for = 1\n").is_err());
    assert!(parse("param { model: real }").is_err());
    let p = parse("model { target += 1 }").unwrap();
    let Item::Model(m) = &p.items[0] else { panic!() };
    assert!(matches!(m.stmts[0], Stmt::Target { .. }));
}

#[test]
fn assigning_a_call_to_a_non_local_in_model_suggests_tilde() {
    match parse("model {\n  y = normal(0, 1)\n}") {
        Err(Error::AssignNotTilde { name, func, span }) => {
            assert_eq!((name.as_str(), func.as_str()), ("y", "normal"));
            assert_eq!((span.start, span.end), (12, 13));
        }
        other => panic!("{other:?}"),
    }
    assert!(parse("model {\n  let mu = f(1)\n  mu = g(mu)\n}").is_ok());
}

#[test]
fn tilde_lhs_may_be_sliced() {
    let p = parse("model { y[K + 1:N] ~ normal(mu, sigma) }").unwrap();
    let Item::Model(m) = &p.items[0] else { panic!() };
    let Stmt::Tilde { lhs, .. } = &m.stmts[0] else {
        panic!()
    };
    assert_eq!(compact(lhs), "y[(K + 1):N]");
}

#[test]
fn opening_braces_may_stand_on_their_own_line() {
    let src = "fn f(a: real) -> real\n{\n  if a > 0\n  {\n    return a\n  }\n  else\n  {\n    return -a\n  }\n}\nmodel\n{\n  for i in 1:N\n  {\n    x[i] ~ normal(0, 1)\n  }\n}\n";
    let p = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(p.items.len(), 2);
}

#[test]
fn empty_and_comment_only_files_are_empty_programs() {
    assert!(parse("").unwrap().items.is_empty());
    assert!(parse("// nothing\n/* at */ # all").unwrap().items.is_empty());
}
