//! Mutated valid models through parse + check never panic.

use mvi::check::check_source;
use mvi::data::{add_json_text, DataSet};
use proptest::prelude::*;
use std::path::Path;

const SOURCES: &[&str] = &[
    include_str!("../../examples/eight_schools.mvi"),
    include_str!("../../examples/mixture_2d.mvi"),
    include_str!("../../examples/stochastic_volatility.mvi"),
    include_str!("../../examples/softmax_iris.mvi"),
    // truncation and the second list's distributions and functions
    "data {\n  J: int\n  y: vector[J]\n  sigma: vector[J]\n}\nparam {\n  mu: real\n  tau: real<lower=0>\n  c: vector[2]\n}\nmodel {\n  mu ~ normal(0, 5) T[-10, 10]\n  tau ~ weibull(2, 1) T[, 5]\n  y ~ normal(mu, sigma) T[-3, ]\n  c ~ gumbel(0, 1)\n  target += log_mix(0.5, normal_lpdf(mu | 0, 1), normal_lpdf(mu | 1, 2))\n}\n",
    CONSTRAINED,
    NEW_CDFS,
];

/// The CDFs of skew_normal, von_mises, binomial and beta_binomial in truncations, a
/// two-size Cholesky factor, and log_mix with weights per observation.
const NEW_CDFS: &str = "data {\n  k: ints[3]\n  a: vector[3]\n  W: matrix[3, 2]\n}\nparam {\n  p: real<lower=0, upper=1>\n  xi: real\n  L: cholesky_factor_cov[3, 2]\n}\nmodel {\n  k ~ binomial(12, p) T[1, 10]\n  k ~ beta_binomial(12, 2, 3) T[, 9]\n  a ~ von_mises(xi, 2) T[-2, 2.5]\n  xi ~ skew_normal(0, 1, 3) T[-1, ]\n  target += log_mix(W, L) + skew_normal_lccdf(xi | 0, 1, 2) + von_mises_lcdf(xi | 0, 1)\n}\n";

/// Every constrained type, and bounds that depend on hypers and earlier params.
const CONSTRAINED: &str = "data {\n  y: vector[N]\n  w: simplex[3]\n}\nhyper {\n  lo: real = -1.0\n  P: simplex[2] = [0.5, 0.5]\n}\nparam {\n  theta: simplex[3]\n  mu: ordered[2]\n  pos: positive_ordered[2]\n  u: unit_vector[2]\n  z: sum_to_zero_vector[3]\n  L: cholesky_corr[2]\n  Lc: cholesky_cov[2]\n  R: corr_matrix[2]\n  S: cov_matrix[2]\n  a: real<lower=0, upper=1>\n  b: real<lower=lo, upper=1 - a>\n  c: vector<lower=mu[1]>[2]\n}\nmodel {\n  y ~ normal(theta[1] * mu[2] + z[1], S[1, 1])\n  target += sum(log(theta)) + L[2, 1] + R[1, 2] + Lc[2, 2] + u[1] + a + b + sum(c) + P[1] + sum(w) + pos[2]\n}\n";

const DATA: &str = r#"{"J": 3, "y": [1, -2, 0.5], "sigma": [1, 2, 1], "K": 2, "X": [[1, 2], [0, 1], [2, 2]], "X_test": [[1, 1]], "y_test": [2], "N": 3, "T": 3, "w": [0.2, 0.3, 0.5], "k": [1, 4, 9], "a": [-1.5, 0.2, 2.1], "W": [[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]}"#;

const TOKENS: &[&str] = &[
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    "~",
    "*",
    "'",
    ".*",
    "1",
    "0",
    "-1",
    "N",
    "w",
    "y",
    ":",
    ",",
    "+",
    "normal",
    "x",
    "[1:2]",
    "[0]",
    "?",
    "if",
    "for",
    "let",
    "\n",
    "<lower=0>",
    "matrix[2, 2]",
    "ints[3]",
    "sum(",
    "rows(X)",
    " T[",
    " T[0, ]",
    " T[, 1]",
    "lkj_corr_cholesky",
    "neg_binomial_2",
    "simplex[3]",
    "cov_matrix[2]",
    "ordered[0]",
    "<lower=a>",
    "<upper=1 - a>",
    "<lower=theta[1]>",
    "cholesky_factor_cov[2, 3]",
    "cholesky_cov[3, 2]",
    " T[-1, 1]",
    "skew_normal",
    "von_mises",
    "beta_binomial",
];

fn mutate(src: &str, edits: &[(usize, usize, usize)]) -> String {
    let mut s: Vec<char> = src.chars().collect();
    for &(kind, pos, tok) in edits {
        if s.is_empty() {
            break;
        }
        let p = pos % s.len();
        match kind % 3 {
            0 => {
                let end = (p + 1 + tok % 8).min(s.len());
                s.drain(p..end);
            }
            1 => {
                let t: Vec<char> = TOKENS[tok % TOKENS.len()].chars().collect();
                s.splice(p..p, t);
            }
            _ => {
                let t: Vec<char> = TOKENS[tok % TOKENS.len()].chars().collect();
                let end = (p + t.len()).min(s.len());
                s.splice(p..end, t);
            }
        }
    }
    s.into_iter().collect()
}

const WORDS: &[&str] = &[
    "1",
    "0",
    "-1",
    "2.5",
    "3",
    "N",
    "J",
    "T",
    "K",
    "w",
    "y",
    "mu",
    "sigma",
    "tau",
    "h",
    "X",
    "W",
    "b",
    "theta",
    "alpha",
    "normal",
    "poisson",
    "cauchy",
    "vector",
    "matrix",
    "real",
    "int",
    "ints",
    "sum",
    "rows",
    "exp",
    "param",
    "data",
    "hyper",
    "model",
    "predict",
    "weibull",
    "ordered_logistic",
    "dirichlet",
    "log_mix",
    "T",
    "simplex",
    "ordered",
    "positive_ordered",
    "unit_vector",
    "sum_to_zero_vector",
    "cholesky_corr",
    "cholesky_cov",
    "corr_matrix",
    "cov_matrix",
    "cholesky_factor_corr",
    "lower",
    "upper",
    "lo",
    "a",
    "c",
];

/// Replace whole words (identifiers, numbers) by other words: the result usually still
/// parses, so it exercises the checker rather than the parser.
fn swap_words(src: &str, swaps: &[(usize, usize)]) -> String {
    let mut words: Vec<(usize, usize)> = Vec::new();
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            words.push((start, i));
        } else {
            i += 1;
        }
    }
    let mut chosen: Vec<(usize, usize, &str)> = swaps
        .iter()
        .filter(|_| !words.is_empty())
        .map(|&(w, r)| {
            let (a, b) = words[w % words.len()];
            (a, b, WORDS[r % WORDS.len()])
        })
        .collect();
    chosen.sort_by_key(|x| std::cmp::Reverse(x.0));
    chosen.dedup_by(|x, y| x.0 == y.0);
    let mut out = src.to_string();
    for (a, b, w) in chosen {
        out.replace_range(a..b, w);
    }
    out
}

#[test]
fn the_new_cdfs_source_checks_and_lowers() {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", DATA.to_string()).unwrap();
    let typed = check_source(NEW_CDFS, "fuzz.mvi", Path::new(env!("CARGO_MANIFEST_DIR")), &set)
        .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
    mvi::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
}

#[test]
fn the_constrained_types_source_checks_and_lowers() {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", DATA.to_string()).unwrap();
    let typed = check_source(
        CONSTRAINED,
        "fuzz.mvi",
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &set,
    )
    .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
    mvi::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_models_never_panic(which in 0..SOURCES.len(), edits in proptest::collection::vec((0usize..3, 0usize..10_000, 0usize..100), 1..6)) {
        let src = mutate(SOURCES[which], &edits);
        let mut set = DataSet::default();
        add_json_text(&mut set, "data.json", DATA.to_string()).unwrap();
        let _ = check_source(&src, "fuzz.mvi", Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").as_path(), &set);
    }

    #[test]
    fn models_with_swapped_words_never_panic(which in 0..SOURCES.len(), swaps in proptest::collection::vec((0usize..10_000, 0usize..100), 1..4)) {
        let src = swap_words(SOURCES[which], &swaps);
        let mut set = DataSet::default();
        add_json_text(&mut set, "data.json", DATA.to_string()).unwrap();
        let checked = check_source(&src, "fuzz.mvi", Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").as_path(), &set);
        if let Ok(typed) = checked {
            // what checks clean also lowers without a panic (types, sizes and bounds swapped)
            let _ = mvi::graph::lower_model(&typed);
        }
    }

    #[test]
    fn random_csv_never_panics(text in "[0-9.,\n a-z-]{0,60}") {
        let mut set = DataSet::default();
        let _ = mvi::data::add_csv_text(&mut set, "X", "X.csv", text);
    }

    #[test]
    fn random_json_never_panics(text in "[\\[\\]{}0-9.,:\"a-z -]{0,60}") {
        let mut set = DataSet::default();
        let _ = add_json_text(&mut set, "data.json", text);
    }
}
