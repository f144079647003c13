//! Syntax errors always say where and what to do: every example model cut short at each
//! token boundary, and a set of hand-written mistakes, give a `mvi::syntax::…` diagnostic
//! with a span inside the source and a non-empty help line, never a panic.

use crate::common;

use mvi::diagnostic::Diagnostic;
use mvi::syntax::parse_program;

/// The shipped examples with their file names.
fn examples() -> Vec<(String, String)> {
    let files = common::mvi_files("examples");
    assert!(!files.is_empty(), "examples/ is part of the repository");
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// Byte offsets where one token ends and the next begins (name characters, spaces and
/// single other characters are the tokens), plus the end of the text.
fn token_boundaries(src: &str) -> Vec<usize> {
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            0
        } else if c.is_whitespace() {
            1
        } else {
            2
        }
    };
    let mut cuts = Vec::new();
    let mut prev: Option<u8> = None;
    for (i, c) in src.char_indices() {
        let k = class(c);
        if prev != Some(k) || k == 2 {
            cuts.push(i);
        }
        prev = Some(k);
    }
    cuts.push(src.len());
    cuts
}

/// What makes a syntax diagnostic usable: its code, a primary span inside the source and a
/// help line. Returns the problem in words.
fn defect(d: &Diagnostic, len: usize) -> Option<String> {
    if !d.code.starts_with("mvi::syntax::") {
        return Some(format!("code {} is not a syntax code", d.code));
    }
    let Some(primary) = d.labels.first() else {
        return Some("no span".into());
    };
    if d.labels.iter().any(|l| l.offset() + l.len() > len) {
        return Some(format!(
            "span {}+{} outside the source",
            primary.offset(),
            primary.len()
        ));
    }
    match &d.help {
        Some(h) if !h.trim().is_empty() => None,
        _ => Some(format!("no help line for `{}`", d.message)),
    }
}

#[test]
fn every_truncated_example_gets_a_located_error_with_help() {
    let mut failures = Vec::new();
    let mut errors = 0;
    for (name, src) in examples() {
        for cut in token_boundaries(&src) {
            let text = &src[..cut];
            let Err(d) = parse_program(text, &name) else {
                continue;
            };
            errors += 1;
            // Rendering must not panic either (miette reads the spans).
            assert!(!d.render_plain(100).is_empty());
            if let Some(why) = defect(&d, text.len()) {
                let tail: String = text
                    .chars()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                failures.push(format!("{name} cut at byte {cut} (…{tail:?}): {why}"));
            }
        }
    }
    assert!(errors > 1000, "only {errors} truncations failed to parse");
    assert!(
        failures.is_empty(),
        "{} defects:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Parse `src`, expecting a syntax error; returns it.
fn error_of(src: &str) -> Diagnostic {
    let d = parse_program(src, "m.mvi").expect_err("the source has a syntax error");
    assert_eq!(defect(&d, src.len()), None, "{}", d.render_plain(100));
    d
}

fn primary_text<'a>(d: &Diagnostic, src: &'a str) -> &'a str {
    let l = d.labels.first().expect("checked by `defect`");
    &src[l.offset()..l.offset() + l.len()]
}

#[test]
fn an_unclosed_brace_at_the_end_points_at_the_brace() {
    let src = "param {\n  w: real\n}\nmodel {\n  w ~ normal(0, 1)\n";
    let d = error_of(src);
    assert_eq!(d.message, "expected `}` or a statement");
    assert_eq!(
        d.help.as_deref(),
        Some("add the missing `}` for the `{` on line 4")
    );
    assert_eq!(d.labels[1].offset(), src.find("model {").unwrap() + 6);
}

#[test]
fn an_unclosed_paren_names_its_line() {
    let src = "param {\n  w: real\n}\nmodel {\n  w ~ normal(0, 1\n}\n";
    let d = error_of(src);
    assert_eq!(
        d.help.as_deref(),
        Some("the `(` on line 5 may be missing its `)`")
    );
    assert_eq!(d.labels[1].label(), Some("this `(` is not closed"));
}

#[test]
fn an_unclosed_index_bracket_on_one_line_asks_to_close_it() {
    let src = "param {\n  w: vector[2]\n}\nmodel {\n  w[1 ~ normal(0, 1)\n}\n";
    let d = error_of(src);
    assert_eq!(primary_text(&d, src), "~");
    assert_eq!(
        d.help.as_deref(),
        Some("close the brackets with `]`, or continue with an operator or a `,`")
    );
}

#[test]
fn a_dangling_tilde_asks_for_a_distribution_and_the_open_block() {
    let src = "param {\n  w: real\n}\nmodel {\n  w ~";
    let d = error_of(src);
    assert_eq!(d.message, "expected a distribution");
    assert_eq!(
        d.help.as_deref(),
        Some(
            "write a distribution with its arguments after `~`, e.g. `mu ~ normal(0, 1)`; the \
             file ends inside the `{` on line 4, which also needs its `}`"
        )
    );
    assert_eq!(d.labels[1].label(), Some("this `{` is not closed"));
}

#[test]
fn an_infer_key_without_equals_shows_the_key_value_form() {
    let src = "infer {\n  method laplace\n}\n";
    let d = error_of(src);
    assert_eq!(d.message, "expected `=`");
    assert_eq!(primary_text(&d, src), "laplace");
    assert_eq!(
        d.help.as_deref(),
        Some("`infer` options are written `key = value`, e.g. `method = laplace`")
    );
}

#[test]
fn a_stray_closing_brace_has_no_match() {
    let src = "param {\n  w: real\n}\n}\n";
    let d = error_of(src);
    assert_eq!(primary_text(&d, src), "}");
    assert_eq!(d.help.as_deref(), Some("this `}` has no matching `{`"));
}

#[test]
fn a_block_keyword_without_braces_shows_the_block_form() {
    let d = error_of("param w: real\n");
    assert_eq!(d.message, "expected `{`");
    assert_eq!(
        d.help.as_deref(),
        Some("`param` is followed by its declarations in braces: `param { x: real }`")
    );
}

#[test]
fn a_let_without_a_value_asks_for_an_expression() {
    let src = "let x =\n";
    let d = error_of(src);
    assert_eq!(d.message, "expected an expression");
    assert!(d.help.as_deref().unwrap().starts_with("write an expression here"));
}

#[test]
fn a_real_without_digits_after_the_point_asks_for_them() {
    let src = "hyper {\n  a: real = 1.\n}\n";
    let d = error_of(src);
    assert_eq!(
        d.help.as_deref(),
        Some("a real number needs digits after its `.`, e.g. `1.0`")
    );
}

#[test]
fn a_real_literal_out_of_range_says_how_large_a_real_may_be() {
    let d = error_of("let huge = 1e400\n");
    assert_eq!(d.code, "mvi::syntax::real_out_of_range");
    assert!(d.help.as_deref().unwrap().contains("1.8e308"));
}

#[test]
fn an_empty_file_parses_and_whitespace_only_parses() {
    assert!(parse_program("", "m.mvi").is_ok());
    assert!(parse_program("\n  \n", "m.mvi").is_ok());
}

#[test]
fn common_slips_get_the_help_for_their_construct() {
    let cases = [
        ("let x = 1 y\n", "put each statement on its own line"),
        ("let x = 1 )\n", "end the statement before `)`"),
        (
            "model { for i in 1:3 y ~ normal(0, 1) }\n",
            "a loop body goes in braces",
        ),
        (
            "data { X: matrix[N M] }\n",
            "separate arguments, sizes and list items with `,`",
        ),
        ("model { target = 1 }\n", "`target` is only incremented"),
        ("import rbf\n", "`import` takes a quoted name"),
        ("param { s: real<lower=0 }\n", "close the constraint with `>`"),
        ("model { let = 3 }\n", "name the value"),
    ];
    for (src, help) in cases {
        let d = error_of(src);
        let got = d.help.as_deref().unwrap_or("");
        assert!(got.starts_with(help), "{src:?}: {got}");
    }
}
