use super::*;

fn parse(src: &str) -> Program {
    parse_stan(src, "m.stan").unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

fn model_expr(src: &str) -> Expr {
    let p = parse(&format!("model {{ target += {src}; }}"));
    match &p.model[0].kind {
        StmtKind::Target(e) => e.clone(),
        other => panic!("not a target statement: {other:?}"),
    }
}

/// The expression with every operator application in parentheses.
fn shape(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(s) | ExprKind::Real(s) | ExprKind::Var(s) => s.clone(),
        ExprKind::Unary(op, x) => format!("({op}{})", shape(x)),
        ExprKind::Binary(op, l, r) => format!("({} {op} {})", shape(l), shape(r)),
        ExprKind::Ternary(c, a, b) => format!("({} ? {} : {})", shape(c), shape(a), shape(b)),
        ExprKind::Transpose(x) => format!("({})'", shape(x)),
        ExprKind::Index(b, i) => format!("{}[{}]", shape(b), i.len()),
        ExprKind::Call { name, args, bar } => {
            let args: Vec<_> = args.iter().map(shape).collect();
            format!(
                "{}({}{})",
                name.name,
                if *bar { "|" } else { "" },
                args.join(", ")
            )
        }
        ExprKind::RowVec(x) | ExprKind::Array(x) => {
            format!("[{}]", x.iter().map(shape).collect::<Vec<_>>().join(", "))
        }
        ExprKind::Imag => "i".into(),
    }
}

#[test]
fn precedence_follows_stan() {
    assert_eq!(shape(&model_expr("-x ^ 2")), "(-(x ^ 2))");
    assert_eq!(shape(&model_expr("a + b * c .* d")), "(a + (b * (c .* d)))");
    assert_eq!(shape(&model_expr("a - b - c")), "((a - b) - c)");
    assert_eq!(shape(&model_expr("a ^ b ^ c")), "(a ^ (b ^ c))");
    assert_eq!(shape(&model_expr("a < b && c || d")), "(((a < b) && c) || d)");
    assert_eq!(shape(&model_expr("c ? a : b ? d : e")), "(c ? a : (b ? d : e))");
    assert_eq!(shape(&model_expr("x' * y")), "((x)' * y)");
    assert_eq!(shape(&model_expr("2 * -x ^ 2 + 1")), "((2 * (-(x ^ 2))) + 1)");
    assert_eq!(shape(&model_expr("a %/% b \\ c")), "(a %/% (b \\ c))");
    assert_eq!(
        shape(&model_expr("normal_lpdf(y | mu, 1)")),
        "normal_lpdf(|y, mu, 1)"
    );
}

#[test]
fn declarations_in_both_array_syntaxes() {
    let p = parse(
        "data { int<lower=0> N; array[N] int<lower=0, upper=1> y; real x[N]; \
         array[N] vector<lower=0>[3] v; cholesky_factor_cov[4, 2] L; }",
    );
    let names: Vec<_> = p
        .data
        .iter()
        .map(|d| (d.name.name.as_str(), d.ty.as_str(), d.array_dims.len()))
        .collect();
    assert_eq!(
        names,
        [
            ("N", "int", 0),
            ("y", "int", 1),
            ("x", "real", 1),
            ("v", "vector", 1),
            ("L", "cholesky_factor_cov", 0)
        ]
    );
    assert_eq!(p.data[1].bounds.len(), 2);
    assert_eq!(p.data[4].sizes.len(), 2);
}

#[test]
fn every_block_and_statement_parses() {
    let p = parse(
        "functions { real f(data array[] real x, vector v) { return sum(x) + sum(v); } }
         data { int N; vector[N] y; }
         transformed data { real m = mean(y); }
         parameters { real<offset=m, multiplier=2> mu; real<lower=0> s; }
         transformed parameters { real mu2 = mu * 2; }
         model {
           /* a block comment */
           # an old comment
           vector[N] r;
           for (n in 1:N) { r[n] = y[n] - mu; }
           if (N > 1) s ~ normal(0, 1) T[0, ]; else { target += 0; }
           while (0) { }
           print(\"mu = \", mu);
           increment_log_prob(-0.5 * dot_self(r));
           r[2:] .*= r[:N-1];
           profile(\"p\") { y ~ normal(mu, s); }
         }
         generated quantities { real y_rep = normal_rng(mu, s); }",
    );
    assert_eq!(p.functions.len(), 1);
    assert_eq!(p.functions[0].args[0].ty.dims, 1);
    assert_eq!(p.params[0].bounds[0].0, "offset");
    assert_eq!(p.model.len(), 8);
    assert!(matches!(p.model[2].kind, StmtKind::If { els: Some(_), .. }));
    assert!(matches!(p.model[3].kind, StmtKind::While));
    assert!(matches!(p.model[5].kind, StmtKind::Target(_)));
    assert_eq!(p.gq.len(), 1);
}

#[test]
fn syntax_error_says_line_column_and_what_was_expected() {
    let d = parse_stan("data {\n  int N\n  vector[N] y;\n}\n", "m.stan").unwrap_err();
    assert_eq!(d.code, "mvi::stan::syntax");
    assert!(
        d.message
            .starts_with("syntax error at line 3, column 3: expected"),
        "{}",
        d.message
    );
    assert!(d.message.contains("`;`"), "{}", d.message);
}

#[test]
fn include_is_a_clear_error() {
    let d = parse_stan("functions {\n#include \"f.stan\"\n}\n", "m.stan").unwrap_err();
    assert_eq!(d.code, "mvi::stan::include");
    let d = parse_stan("/* #include x\n*/ model { }", "m.stan");
    assert!(d.is_ok());
}
