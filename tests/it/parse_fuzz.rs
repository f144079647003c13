//! Property test: random text and mangled copies of valid models never make the parser panic,
//! and each syntax error of a mangled model points inside the source and has a help line.

use crate::common;

use mvi::syntax::parse_program;
use proptest::prelude::*;

/// Valid models to mangle: the LANGUAGE.md example and small variations.
const SEEDS: [&str; 5] = [
    "import \"rbf\"\ndata {\n  X: matrix[N, Q]\n  y: ints[N]\n}\nhyper {\n  alpha: real<lower=0> = 1.0\n}\nlet Phi = rbf_features(X, C, r)\nparam {\n  w: vector[M + 1]\n}\nmodel {\n  w ~ normal(0, 1 / sqrt(alpha))\n  y ~ bernoulli_logit(Phi * w)\n}\ninfer {\n  method = mvi_lr\n  blocks = [[w], [a, b]]\n}\n",
    "fn f(a: vector, b: real) -> vector {\n  let t = a .* a'; return t[1:2, :] ^ -b\n}\nmodel {\n  for i in 1:N { if x[i] > 0 { target += normal_lpdf(y[i] | 0, 1) } else { mu[i] += 1 } }\n}\n",
    "param { s: real<lower=0, upper=1> }\nmodel { s ~ beta(2, 2); target += c ? -s^2 : log(s) /* c */ }\npredict { y ~ normal([1, 2.5, -1e-3], [[1, 0], [0, 1]]) } # end\n",
    "model {\n  mu ~ normal(0, 1) T[-1, 2 * a]\n  s ~ gamma(2, 1) T[, 5]; k ~ poisson(3) T[1, ]\n  y[1:N] ~ weibull(a, b) T[0, ]\n}\n",
    "data { w: simplex[K] }\nparam {\n  a: real<lower=0, upper=1>\n  b: real<lower=0, upper=1 - a>\n  mu: ordered[2]\n  c: vector<lower=mu[1]>[2]\n  p: positive_ordered[K]\n  u: unit_vector[3]\n  z: sum_to_zero_vector[K]\n  L: cholesky_corr[3]\n  M: cholesky_factor_cov[2]\n  R: corr_matrix[2]\n  S: cov_matrix[K + 1]\n}\nmodel { target += sum(w) }\n",
];

/// Tokens worth inserting: the language's punctuation and keywords.
const TOKENS: [&str; 30] = [
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ";",
    "\n",
    "~",
    "=",
    "+=",
    ":",
    "|",
    "'",
    "^",
    "-",
    "let ",
    "for ",
    "if ",
    "else ",
    "\"",
    "/*",
    "99999999999999999999",
    "T[",
    " T[, ]",
    "simplex",
    "cov_matrix[",
    "<lower=",
    "ordered",
];

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    InsertChar(usize, char),
    InsertToken(usize, usize),
    Swap(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<char>()).prop_map(|(i, c)| Edit::InsertChar(i, c)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Edit::InsertToken(i, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::Swap(i, j)),
    ]
}

fn apply(src: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for e in edits {
        let n = chars.len().max(1);
        match *e {
            Edit::Delete(i) if !chars.is_empty() => {
                chars.remove(i % n);
            }
            Edit::InsertChar(i, c) => chars.insert(i % (n + 1).min(chars.len() + 1), c),
            Edit::InsertToken(i, t) => {
                let at = i % (chars.len() + 1);
                for (k, c) in TOKENS[t].chars().enumerate() {
                    chars.insert(at + k, c);
                }
            }
            Edit::Swap(i, j) if !chars.is_empty() => chars.swap(i % n, j % n),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Split into tokens: runs of name characters, runs of spaces, or single other characters.
fn tokens(src: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            0
        } else if c == ' ' {
            1
        } else {
            2
        }
    };
    for c in src.chars() {
        match out.last_mut() {
            Some(last) if class(c) != 2 && last.chars().last().map(class) == Some(class(c)) => last.push(c),
            _ => out.push(c.to_string()),
        }
    }
    out
}

/// Delete, duplicate or swap whole tokens.
fn mangle_tokens(src: &str, ops: &[(u8, usize, usize)]) -> String {
    let mut toks = tokens(src);
    for &(kind, i, j) in ops {
        if toks.is_empty() {
            break;
        }
        let (i, j) = (i % toks.len(), j % toks.len());
        match kind % 3 {
            0 => {
                toks.remove(i);
            }
            1 => {
                let t = toks[i].clone();
                toks.insert(j, t);
            }
            _ => toks.swap(i, j),
        }
    }
    toks.concat()
}

/// The shipped examples, read at test time (empty if the directory is missing).
fn example_sources() -> Vec<String> {
    common::mvi_files("examples")
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_text_never_panics(src in "\\PC{0,200}") {
        let _ = parse_program(&src, "random.mvi");
    }

    #[test]
    fn random_punctuation_soup_never_panics(src in "[a-z0-9(){}\\[\\],;:~=+*/^'.|<>!?\" \n-]{0,120}") {
        let _ = parse_program(&src, "soup.mvi");
    }

    #[test]
    fn mangled_valid_models_never_panic(seed in 0..SEEDS.len(), edits in prop::collection::vec(edit(), 1..8)) {
        let src = apply(SEEDS[seed], &edits);
        if let Err(d) = parse_program(&src, "mangled.mvi") {
            // Rendering must not panic either, and every diagnostic points somewhere inside
            // the source and says what to do.
            prop_assert!(!d.labels.is_empty());
            prop_assert!(d.labels.iter().all(|l| l.offset() + l.len() <= src.len()));
            prop_assert!(d.help.as_deref().is_some_and(|h| !h.trim().is_empty()), "{}", d.message);
            let _ = d.render_plain(100);
        }
    }

    #[test]
    fn token_shuffled_models_never_panic(
        seed in 0..SEEDS.len() + 16,
        ops in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..6),
    ) {
        let examples = example_sources();
        let src = match seed.checked_sub(SEEDS.len()) {
            Some(k) if !examples.is_empty() => examples[k % examples.len()].clone(),
            _ => SEEDS[seed % SEEDS.len()].to_string(),
        };
        let mangled = mangle_tokens(&src, &ops);
        if let Err(d) = parse_program(&mangled, "shuffled.mvi") {
            prop_assert!(!d.labels.is_empty());
            prop_assert!(d.labels.iter().all(|l| l.offset() + l.len() <= mangled.len()));
            prop_assert!(d.help.as_deref().is_some_and(|h| !h.trim().is_empty()), "{}", d.message);
            let _ = d.render_plain(100);
        }
    }
}

#[test]
fn tokens_rejoin_to_the_original_text() {
    let src = "y ~ normal(mu, 1.5)  // c\n";
    assert_eq!(tokens(src).concat(), src);
    assert!(tokens(src).contains(&"normal".to_string()));
}

#[test]
fn the_seed_models_are_valid() {
    for s in SEEDS {
        if let Err(d) = parse_program(s, "seed.mvi") {
            panic!("{}", d.render_plain(100));
        }
    }
}
