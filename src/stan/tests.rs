use super::*;

fn mvi(src: &str) -> String {
    translate(src, "m.stan")
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
        .text
}

#[test]
fn declare_then_assign_becomes_one_let() {
    let text = mvi(
        "data { int<lower=0> J; array[J] real y; array[J] real<lower=0> sigma; }
         parameters { vector[J] eta; real mu; real<lower=0> tau; }
         transformed parameters { vector[J] theta; theta = eta * tau + mu; }
         model { eta ~ normal(0, 1); y ~ normal(theta, sigma); }",
    );
    assert!(
        text.contains("  J: int<lower=0>\n  y: vector[J]\n  sigma: vector<lower=0>[J]\n"),
        "{text}"
    );
    assert!(text.contains("\nlet theta = eta * tau + mu\n"), "{text}");
    assert!(!text.contains("generated"), "{text}");
}

#[test]
fn loops_in_transformed_parameters_run_in_model_and_generated() {
    let text = mvi("data { int N; } parameters { real a; }
         transformed parameters { vector[N] m; for (n in 1:N) m[n] = a * n; }
         model { a ~ normal(0, 1); }");
    assert!(
        text.contains("model {\n  let m = rep_vector(0.0, N)\n  for n in 1:N {\n    m[n] = a * n\n  }\n"),
        "{text}"
    );
    assert!(
        text.contains("generated {\n  let m = rep_vector(0.0, N)\n"),
        "{text}"
    );
}

#[test]
fn expressions_keep_their_meaning() {
    let text = mvi("parameters { real x; vector[2] v; } model { target += -(x + 1) ^ 2 + [1, 2] * v + (x > 0 ? 1. : .5) + normal_log(x, 0, 1) + double_exponential_lpdf(x | 0, 1) + normal_lupdf(x | 0, 1); v ~ std_normal(); }");
    assert!(
        text.contains("target += -(x + 1) ^ 2 + [1, 2]' * v + (x > 0 ? 1.0 : 0.5) + normal_lpdf(x | 0, 1) + laplace_lpdf(x | 0, 1) + normal_lpdf(x | 0, 1)"),
        "{text}"
    );
    assert!(text.contains("v ~ normal(0, 1)"), "{text}");
}

#[test]
fn user_densities_are_called_as_functions() {
    let text = mvi(
        "functions { real foo_lpdf(real y, real m) { return -square(y - m); } }
         parameters { real x; } model { x ~ foo(1); target += foo_lpdf(x | 2) + foo_lupdf(x | 3); }",
    );
    assert!(
        text.contains("fn foo_lpdf(y: real, m: real) -> real {\n  return -square(y - m)\n}"),
        "{text}"
    );
    assert!(text.contains("target += foo_lpdf(x, 1)"), "{text}");
    assert!(
        text.contains("target += foo_lpdf(x, 2) + foo_lpdf(x, 3)"),
        "{text}"
    );
}

#[test]
fn unsupported_constructs_are_named_at_their_place() {
    let src = "parameters { real x; } model { real s = 0; while (s < 1) s += 1; x ~ normal(0, 1); }";
    let d = translate(src, "m.stan").unwrap_err();
    assert_eq!(d.code, "mvi::stan::unsupported");
    assert!(d.message.contains("`while` loops"), "{}", d.message);
    let at = d.labels[0].offset();
    assert!(src[at..].starts_with("while"), "{}", &src[at..]);
}

#[test]
fn source_map_finds_the_stan_statement() {
    let src = "parameters { real x; }\nmodel {\n  x ~ normal(0, 1);\n}\n";
    let t = translate(src, "m.stan").unwrap();
    let at = t.text.find("normal").unwrap();
    let stan = t.map.to_stan(Span::new(at, at + 6)).unwrap();
    assert_eq!(&src[stan.start as usize..stan.end as usize], "normal");
    let at = t.text.find("x ~").unwrap();
    let stan = t.map.to_stan(Span::new(at, at + 3)).unwrap();
    assert_eq!(&src[stan.start as usize..stan.end as usize], "x ~ normal(0, 1);");
}

#[test]
fn glms_and_stacked_rows_become_mvi_forms() {
    let text = mvi(
        "data { int N; array[N] int y; vector[N] a; vector[N] b; }
         transformed data { matrix[N, 2] x = [a', b']'; matrix[2, N] xt = [a', b']; }
         parameters { real alpha; vector[2] beta; }
         model { y ~ bernoulli_logit_glm(x, alpha, beta); target += poisson_log_glm_lpmf(y | x, alpha, beta); }",
    );
    assert!(text.contains("let x = append_col(a, b)\n"), "{text}");
    assert!(text.contains("let xt = append_row(a', b')\n"), "{text}");
    assert!(text.contains("y ~ bernoulli_logit(alpha + x * beta)"), "{text}");
    assert!(
        text.contains("target += poisson_log_lpmf(y | alpha + x * beta)"),
        "{text}"
    );
}

#[test]
fn transformed_data_statements_that_can_be_lets_are_hoisted() {
    let text = mvi("data { int K; matrix[3, K] X; }
         transformed data { int Kc = K - 1; matrix[3, Kc] Xc; for (i in 2:K) Xc[:, i - 1] = X[:, i]; }
         parameters { vector[Kc] b; }
         model { b ~ normal(0, 1); target += sum(Xc * b); }");
    assert!(text.contains("\nlet Kc = K - 1\n"), "{text}");
    assert!(
        text.contains(
            "fn tdata_Xc(K: int, Kc: int, X: matrix) -> matrix {\n  let Xc = rep_matrix(0.0, 3, Kc)\n  \
             for i in 2:K {\n    Xc[:, i - 1] = X[:, i]\n  }\n  return Xc\n}\nlet Xc = tdata_Xc(K, Kc, X)\n"
        ),
        "{text}"
    );
    assert!(text.contains("param {\n  b: vector[(K - 1)]\n}"), "{text}");
    assert!(text.contains("model {\n  b ~ normal(0, 1)\n"), "{text}");
}

#[test]
fn integer_lets_are_written_out_in_parameter_sizes() {
    let text = mvi("data { int K; } transformed data { int Kc = K - 1; }
         parameters { vector[Kc] b; } model { b ~ normal(0, 1); }");
    assert!(text.contains("  b: vector[(K - 1)]\n"), "{text}");
}

#[test]
fn integer_arrays_stay_integer() {
    let text = mvi(
        "data { int N; } parameters { real p; }
         model { p ~ normal(0, 1); }
         generated quantities { array[N] int z; array[N] int o = rep_array(1, N); for (n in 1:N) z[n] = o[n] / 2; }",
    );
    assert!(text.contains("let z = (rep_vector(0.0, N) == 1)\n"), "{text}");
    assert!(
        text.contains("let o = (1 * (rep_vector(0.0, N) == 0))\n"),
        "{text}"
    );
}

#[test]
fn integer_division_is_mvi_integer_division() {
    let text = mvi("data { int N; } parameters { vector[N %/% 2] h; } model { h ~ normal(0, 1); }");
    assert!(text.contains("h: vector[N / 2]"), "{text}");
}
