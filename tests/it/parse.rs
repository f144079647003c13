//! Whole-file parsing: a model using every construct, spans, and every shipped `.mvi` file.

use crate::common;

use mvi::syntax::ast::*;
use mvi::syntax::{dump_ast, parse_program};

const EVERYTHING: &str = r#"// every construct of the language
import "rbf"   # a hash comment
/* a block
   comment */
fn shift(a: vector, b: real) -> vector {
  let t = a + b; return t
}

data {
  X: matrix[N, Q]
  y: ints[N]
  K: int<lower=1>
  Z: matrix = csv("Z.csv")
}

hyper {
  alpha: real<lower=0> = 1.0
  m: vector[Q] = rep_vector(0, Q)
  S: matrix<lower=-1, upper=1>[Q, Q] = diag_matrix(rep_vector(1, Q))
}

let Phi = shift(X[:, 1:Q], alpha)

param {
  w: vector[Q + 1]
  sigma: real<lower=0>
}

model {
  let mu = rep_vector(0, N)
  mu[2:N] += w[1] * Phi[1:N - 1, 1]
  for i in 1:K {
    if i == 1 { target += normal_lpdf(w[i] | 0, 1) } else if i > 2 {
      w[i] ~ normal(0, sigma)
    } else {
      mu[i] *= 2
    }
  }
  sigma ~ half_normal(1)
  y ~ bernoulli_logit(
    X * w[1:Q]
      + mu
  )
  target += -w[1]^2 / 2 + (K > 1 ? 1 : 0)
}

predict {
  y ~ bernoulli_logit(X * w[1:Q])
}

infer {
  method = pmfvb; seed = -3
  tol = 1e-6
  blocks = [[w, sigma], [alpha]]
  learn_hyper = false
}
"#;

fn parse_everything() -> Program {
    parse_program(EVERYTHING, "everything.mvi").unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

fn text(s: mvi::syntax::span::Span) -> &'static str {
    &EVERYTHING[s.start as usize..s.end as usize]
}

#[test]
fn a_model_with_every_construct_parses_into_items_in_order() {
    let p = parse_everything();
    let kinds: Vec<&str> = p
        .items
        .iter()
        .map(|i| match i {
            Item::Import(_) => "import",
            Item::Fn(_) => "fn",
            Item::Data(_) => "data",
            Item::Hyper(_) => "hyper",
            Item::Param(_) => "param",
            Item::Let(_) => "let",
            Item::Model(_) => "model",
            Item::Predict(_) => "predict",
            Item::Generated(_) => "generated",
            Item::Infer(_) => "infer",
        })
        .collect();
    assert_eq!(
        kinds,
        ["import", "fn", "data", "hyper", "let", "param", "model", "predict", "infer"]
    );
}

#[test]
fn declarations_keep_types_constraints_sizes_and_values() {
    let p = parse_everything();
    let Item::Data(data) = &p.items[2] else { panic!() };
    assert_eq!(data.decls.len(), 4);
    let z = &data.decls[3];
    assert_eq!(z.ty.base, BaseType::Matrix);
    assert!(z.ty.sizes.is_empty());
    assert_eq!(text(z.init.as_ref().unwrap().span), "csv(\"Z.csv\")");
    let Item::Hyper(hyper) = &p.items[3] else { panic!() };
    let s = &hyper.decls[2];
    assert_eq!(text(s.ty.span), "matrix<lower=-1, upper=1>[Q, Q]");
    assert_eq!(text(s.ty.lower.as_ref().unwrap().span), "-1");
    assert_eq!(s.ty.sizes.len(), 2);
    let Item::Param(param) = &p.items[5] else { panic!() };
    assert_eq!(text(param.decls[0].ty.sizes[0].span), "Q + 1");
    assert_eq!(text(param.decls[1].span), "sigma: real<lower=0>");
}

#[test]
fn model_statements_have_the_right_shapes_and_spans() {
    let p = parse_everything();
    let Item::Model(m) = &p.items[6] else { panic!() };
    assert_eq!(m.stmts.len(), 6);
    let Stmt::Assign { target, op, .. } = &m.stmts[1] else {
        panic!("{:?}", m.stmts[1])
    };
    assert_eq!(*op, AssignOp::Add);
    assert_eq!(text(target.span), "mu[2:N]");
    let Stmt::For { body, lo, hi, .. } = &m.stmts[2] else {
        panic!()
    };
    assert_eq!((text(lo.span), text(hi.span)), ("1", "K"));
    let Stmt::If { then, otherwise, .. } = &body[0] else {
        panic!()
    };
    let Stmt::Target { value, .. } = &then[0] else {
        panic!()
    };
    let ExprKind::Call {
        conditional, args, ..
    } = &value.kind
    else {
        panic!()
    };
    assert!(*conditional);
    assert_eq!(text(args[0].span), "w[i]");
    // `else if` nests another `If` as the only statement of `otherwise`.
    let [Stmt::If { otherwise: last, .. }] = otherwise.as_slice() else {
        panic!()
    };
    assert!(matches!(
        last[0],
        Stmt::Assign {
            op: AssignOp::Mul,
            ..
        }
    ));
    let Stmt::Tilde {
        lhs,
        dist,
        args,
        trunc,
        span,
        ..
    } = &m.stmts[4]
    else {
        panic!()
    };
    assert!(trunc.is_none());
    assert_eq!((text(lhs.span), dist.name.as_str()), ("y", "bernoulli_logit"));
    assert!(text(*span).starts_with("y ~ bernoulli_logit(") && text(*span).ends_with(')'));
    assert!(matches!(args[0].kind, ExprKind::Binary(BinOp::Add, _, _)));
}

#[test]
fn unary_minus_applies_after_power_in_a_statement() {
    let p = parse_everything();
    let Item::Model(m) = &p.items[6] else { panic!() };
    let Stmt::Target { value, .. } = &m.stmts[5] else {
        panic!()
    };
    let ExprKind::Binary(BinOp::Add, lhs, rhs) = &value.kind else {
        panic!()
    };
    let ExprKind::Binary(BinOp::Div, num, _) = &lhs.kind else {
        panic!()
    };
    let ExprKind::Unary(UnOp::Neg, pow) = &num.kind else {
        panic!()
    };
    assert!(matches!(pow.kind, ExprKind::Binary(BinOp::Pow, _, _)));
    assert_eq!(text(pow.span), "w[1]^2");
    assert!(matches!(rhs.kind, ExprKind::Ternary(..)));
    assert_eq!(text(rhs.span), "(K > 1 ? 1 : 0)");
}

#[test]
fn infer_values_include_negative_ints_reals_words_and_nested_lists() {
    let p = parse_everything();
    let Item::Infer(inf) = &p.items[8] else { panic!() };
    let values: Vec<&InferValue> = inf.entries.iter().map(|e| &e.value).collect();
    assert_eq!(values[0], &InferValue::Word("pmfvb".into()));
    assert_eq!(values[1], &InferValue::Int(-3));
    assert!(matches!(values[2], InferValue::Real(r) if (r - 1e-6).abs() < 1e-18));
    let w = |s: &str| InferValue::Word(s.into());
    assert_eq!(
        values[3],
        &InferValue::List(vec![
            InferValue::List(vec![w("w"), w("sigma")]),
            InferValue::List(vec![w("alpha")])
        ])
    );
    assert_eq!(text(inf.entries[3].value_span), "[[w, sigma], [alpha]]");
}

#[test]
fn dump_of_the_full_model_is_stable() {
    insta::assert_snapshot!(dump_ast(&parse_everything()));
}

/// Every `.mvi` file under `dir` (relative to the crate root), sorted.

#[test]
fn every_example_and_stdlib_file_parses() {
    let files: Vec<_> = common::mvi_files("examples")
        .into_iter()
        .chain(common::mvi_files("stdlib"))
        .collect();
    assert!(!files.is_empty(), "no examples found");
    for path in files {
        let src = std::fs::read_to_string(&path).expect("readable");
        if let Err(d) = parse_program(&src, &path.display().to_string()) {
            panic!("{}", d.render_plain(100));
        }
    }
}

#[test]
fn semicolons_and_newlines_both_end_statements() {
    let a = parse_program("model { a ~ normal(0, 1); b ~ normal(0, 1) }", "a.mvi").unwrap();
    let b = parse_program("model {\n a ~ normal(0, 1)\n b ~ normal(0, 1)\n}", "b.mvi").unwrap();
    let count = |p: &Program| match &p.items[0] {
        Item::Model(m) => m.stmts.len(),
        _ => 0,
    };
    assert_eq!((count(&a), count(&b)), (2, 2));
}

#[test]
fn ten_thousand_open_parens_give_a_diagnostic_not_a_crash() {
    let src = "(".repeat(10_000);
    let d = parse_program(&src, "deep.mvi").unwrap_err();
    assert_eq!(d.code, "mvi::syntax::too_deep");
    let src = format!("let x = {}1{}\n", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        parse_program(&src, "deep.mvi").unwrap_err().code,
        "mvi::syntax::too_deep"
    );
}

#[test]
fn nesting_just_under_the_limit_still_parses_and_dumps() {
    let calls = format!("let x = {}1{}\n", "f(".repeat(99), ")".repeat(99));
    let loops = format!(
        "model {{\n{}x ~ normal(0, 1)\n{}}}\n",
        "for i in 1:N {\n".repeat(98),
        "}\n".repeat(98)
    );
    let mixed = format!("let x = {}1{}\n", "[-(".repeat(49), ")]".repeat(49));
    for src in [calls, loops, mixed] {
        let p = parse_program(&src, "ok.mvi").unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
        assert!(dump_ast(&p).lines().count() > 49);
    }
}

#[test]
fn truncation_bounds_are_optional_and_keep_their_spans() {
    let src =
        "model {\n  a ~ normal(0, 1) T[-1, 2 * b]\n  c ~ gamma(2, 1) T[, 5]\n  k ~ poisson(3) T[1, ]\n}\n";
    let p = mvi::syntax::parse_program(src, "t.mvi").unwrap();
    let Item::Model(m) = &p.items[0] else { panic!() };
    let bounds: Vec<(Option<&str>, Option<&str>, &str)> = m
        .stmts
        .iter()
        .map(|s| {
            let Stmt::Tilde { trunc: Some(t), .. } = s else {
                panic!("a truncated `~`")
            };
            let at = |e: &Option<mvi::syntax::ast::Expr>| {
                e.as_ref()
                    .map(|e| &src[e.span.start as usize..e.span.end as usize])
            };
            (
                at(&t.lower),
                at(&t.upper),
                &src[t.span.start as usize..t.span.end as usize],
            )
        })
        .collect();
    assert_eq!(
        bounds,
        vec![
            (Some("-1"), Some("2 * b"), "T[-1, 2 * b]"),
            (None, Some("5"), "T[, 5]"),
            (Some("1"), None, "T[1, ]"),
        ]
    );
}
