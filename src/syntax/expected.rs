//! Turning a pest error into an [`Error`] that says in words what was expected.
//!
//! pest reports the grammar rules it tried at the furthest position. Each rule maps to a
//! phrase ("`}`", "an expression", "a distribution"); rules that only continue what came
//! before (postfix indexing, transposes) are left out. A few common mistakes get a help
//! line: an unclosed bracket, `=` where a declaration needs `:`, `:` in `infer`, a type on a
//! `let`, a misspelt block keyword.

use pest::error::{ErrorVariant, InputLocation};

use super::error::Error;
use super::help::{end_of_file_note, fallback_help};
use super::parser::Rule;
use super::scan::{closer, innermost_unclosed, unclosed_before};
use super::span::Span;

/// The words for "a top-level item".
const ITEM: &str =
    "a top-level item: `import`, `fn`, `data`, `hyper`, `param`, `let`, `model`, `predict`, `generated` or `infer`";
/// Type names, which start a Stan-style declaration `real x;`.
const TYPES: [&str; 5] = ["int", "real", "vector", "matrix", "ints"];
/// Reserved words, which cannot be names.
const RESERVED: [&str; 21] = [
    "let",
    "fn",
    "for",
    "in",
    "if",
    "else",
    "return",
    "import",
    "target",
    "data",
    "hyper",
    "param",
    "model",
    "predict",
    "generated",
    "infer",
    "ints",
    "int",
    "real",
    "vector",
    "matrix",
];
/// Keywords that may start a top-level item, for "did you mean".
const ITEM_KEYWORDS: [&str; 10] = [
    "import",
    "fn",
    "data",
    "hyper",
    "param",
    "let",
    "model",
    "predict",
    "generated",
    "infer",
];

/// Convert pest's error at the furthest position into an [`Error`].
pub fn from_pest(e: &pest::error::Error<Rule>, src: &str) -> Error {
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let positives = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => {
            // pest's own call or stack limit.
            return Error::TooDeep {
                span: Span::new(pos, pos),
                limit: super::scan::MAX_NESTING,
            };
        }
    };
    let (found_span, found) = found_at(src, pos);
    let expected = phrases(&positives);
    let (help, related) = help_for(&positives, src, pos, &found);
    let help = help.unwrap_or_else(|| fallback_help(&positives, src, pos, &found));
    let (help, related) = match related {
        None if found == "the end of the file" => note_unclosed_at_end(src, help),
        _ => (help, related),
    };
    Error::Unexpected {
        span: found_span,
        expected,
        found,
        help,
        related,
    }
}

/// At the end of a truncated file, point at the innermost bracket still open and say so in
/// the help line.
fn note_unclosed_at_end(src: &str, help: String) -> (String, Option<(Span, String)>) {
    match innermost_unclosed(src) {
        Some((open, at)) => {
            let line = src[..at.start as usize].matches('\n').count() + 1;
            let help = format!("{help}; {}", end_of_file_note(open, line));
            (help, Some((at, format!("this `{open}` is not closed"))))
        }
        None => (help, None),
    }
}

/// The phrase for one rule, or `None` for rules that are never worth mentioning.
fn phrase(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        sep => "the end of the statement (a newline or `;`)",
        EOI => "the end of the file",
        ident | lvalue => "a name",
        dist_name | dist_call => "a distribution",
        word => "a word",
        kw_import | kw_fn | kw_data | kw_hyper | kw_param | kw_model | kw_predict | kw_generated
        | kw_infer | import | fn_def | data_block | hyper_block | param_block | model_block
        | predict_block | generated_block | infer_block => ITEM,
        kw_let => "`let`",
        kw_for => "`for`",
        kw_in => "`in`",
        kw_if => "`if`",
        kw_else => "`else`",
        kw_return => "`return`",
        kw_target => "`target`",
        lbrace | stmt_body => "`{`",
        rbrace => "`}`",
        lparen => "`(`",
        rparen => "`)`",
        rbracket => "`]`",
        rangle => "`>`",
        comma => "`,`",
        decl_colon | range_colon => "`:`",
        decl_eq | let_eq | infer_eq => "`=`",
        tilde => "`~`",
        trunc_lower | trunc_upper => "a bound",
        plus_eq => "`+=`",
        cond_bar => "`|`",
        number | signed_number => "a number",
        string => "a string",
        fn_param => "a parameter (`name: type`)",
        fn_ret => "`->`",
        decl => "a declaration (`name: type`)",
        stmt | let_stmt | for_stmt | if_stmt | return_stmt | target_stmt | lvalue_stmt | expr_tilde_stmt => {
            "a statement"
        }
        infer_entry => "an option (`key = value`)",
        infer_value | infer_list => "a value (a number, a word or a list)",
        type_expr | base_type | array_sizes => "a type (`int`, `real`, `vector`, `matrix` or `ints`)",
        constraint => "`<`",
        bound | bound_key => "`lower=`, `upper=`, `offset=` or `multiplier=`",
        sizes => "`[`",
        assign_op => "`~` or an assignment (`=`, `+=`, `-=`, `*=`, `/=`)",
        expr | nexpr | bound_expr | term | prefix_op | call | array | paren => "an expression",
        binop | arith_op | ternary_op => "an operator",
        index_item => "an index",
        program => ITEM,
        transpose | index_suffix | WHITESPACE | COMMENT | ident_char | keyword | ident_chars | decl_body
        | truncation | trunc_t | tilde_rest | assign_rest | postfix | infix | arith_chars | primary
        | call_args => return None,
        block_item | line_item => ITEM,
    })
}

/// Phrases for all the rules, deduplicated, in a stable order.
fn phrases(positives: &[Rule]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let top_level = positives.contains(&Rule::kw_data) || positives.contains(&Rule::program);
    for &r in positives {
        // At the top level, the separators and end of file add nothing to "an item".
        if top_level && matches!(r, Rule::sep | Rule::EOI | Rule::kw_let) {
            continue;
        }
        if let Some(p) = phrase(r) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    // `~` is folded into the assignment phrase when both are possible.
    if out.contains(&phrase(Rule::assign_op).unwrap_or_default()) {
        out.retain(|p| *p != "`~`");
    }
    // A separator adds nothing where something new may start.
    const STARTS: [&str; 4] = [
        "a name",
        "a statement",
        "a declaration (`name: type`)",
        "an option (`key = value`)",
    ];
    if out.iter().any(|p| STARTS.contains(p)) {
        out.retain(|p| *p != phrase(Rule::sep).unwrap_or_default());
    }
    // "the end of the file" is implied by "the end of the statement".
    if out.contains(&phrase(Rule::sep).unwrap_or_default()) {
        out.retain(|p| *p != phrase(Rule::EOI).unwrap_or_default());
    }
    // "an operator" goes first: it continues what is already written.
    out.sort_by_key(|p| *p != "an operator");
    out
}

/// The text at `pos`, in words, with its span.
fn found_at(src: &str, pos: usize) -> (Span, String) {
    let rest = src.get(pos..).unwrap_or("");
    let Some(c) = rest.chars().next() else {
        return (end_of_file_span(src), "the end of the file".into());
    };
    if c == '\n' || c == '\r' {
        return (Span::new(pos, pos + 1), "the end of the line".into());
    }
    let len = if c.is_alphanumeric() || c == '_' {
        rest.find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '.'))
            .unwrap_or(rest.len())
    } else {
        const TWO: [&str; 12] = [
            "+=", "-=", "*=", "/=", "==", "!=", "<=", ">=", "&&", "||", "->", ".*",
        ];
        if TWO.iter().any(|t| rest.starts_with(t)) {
            2
        } else {
            c.len_utf8()
        }
    };
    let text = &rest[..len];
    (Span::new(pos, pos + len), format!("`{text}`"))
}

/// The last visible character, where "found the end of the file" is shown (a label after
/// the last line would not be drawn).
fn end_of_file_span(src: &str) -> Span {
    match src.trim_end().char_indices().last() {
        Some((i, c)) => Span::new(i, i + c.len_utf8()),
        None => Span::new(0, 0),
    }
}

type Help = (Option<String>, Option<(Span, String)>);

/// A help line and a related span for common mistakes.
fn help_for(positives: &[Rule], src: &str, pos: usize, found: &str) -> Help {
    if let Some(h) = unclosed_bracket_help(positives, src, pos, found) {
        return h;
    }
    let has = |r| positives.contains(&r);
    let word = found.trim_matches('`');
    let top_level = has(Rule::kw_data) || has(Rule::program);
    let help = if has(Rule::ident) && !word.is_empty() && !word.is_ascii() {
        Some("names use ASCII letters, digits and `_`, e.g. `sigma`".into())
    } else if found == "`,`" && has(Rule::sep) {
        Some("statements and entries are separated by a newline or `;`, not `,`".into())
    } else if top_level && found == "`}`" {
        Some("this `}` has no matching `{`".into())
    } else if has(Rule::ident) && TYPES.contains(&word) {
        Some("declarations are written `name: type`, e.g. `sigma: real<lower=0>`".into())
    } else if has(Rule::ident) && RESERVED.contains(&word) {
        Some(format!(
            "`{word}` is a reserved word and cannot be used as a name"
        ))
    } else if top_level && rest_of_line(src, pos).contains(['~', '=']) {
        Some("statements go inside a block, e.g. `model { y ~ normal(0, 1) }`".into())
    } else if has(Rule::decl_colon) && (found == "`=`" || found.starts_with("`<`")) {
        Some("declarations are written `name: type`, e.g. `alpha: real<lower=0> = 1.0`".into())
    } else if has(Rule::decl_colon) && found.starts_with('`') && is_word(found) {
        Some("declarations are written `name: type`, e.g. `sigma: real<lower=0>`".into())
    } else if has(Rule::infer_eq) && found == "`:`" {
        Some("`infer` options are written `key = value`, e.g. `method = laplace`".into())
    } else if has(Rule::let_eq) && found == "`:`" {
        Some("`let` takes no type: write `let name = value`".into())
    } else if has(Rule::range_colon) && found.starts_with("`.") {
        Some("ranges are written `lo:hi`, e.g. `for i in 1:N`".into())
    } else if has(Rule::lparen) && has_only(positives, &[Rule::lparen]) {
        Some("a distribution takes its arguments in parentheses, e.g. `normal(0, 1)`".into())
    } else if (has(Rule::base_type) || has(Rule::array_sizes) || has(Rule::type_expr)) && is_word(found) {
        Some("types are `int`, `real`, `vector[n]`, `matrix[n, m]` and `ints[n]`".into())
    } else if has(Rule::kw_data) && is_word(found) {
        did_you_mean(found)
    } else if has(Rule::tilde) && found == "`=`" {
        Some("to give a variable a distribution write `y ~ normal(mu, sigma)`".into())
    } else {
        None
    };
    (help, None)
}

fn has_only(positives: &[Rule], allowed: &[Rule]) -> bool {
    positives.iter().all(|r| allowed.contains(r))
}

fn is_word(found: &str) -> bool {
    found
        .trim_matches('`')
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn rest_of_line(src: &str, pos: usize) -> &str {
    let rest = src.get(pos..).unwrap_or("");
    rest.split(['\n', '\r']).next().unwrap_or("")
}

/// Point at an unclosed bracket when the error is likely its missing closer: at the end of
/// the file; a `(` or `[` whose error is on a later line; a `{` met where a block cannot
/// start (the previous block is still open).
fn unclosed_bracket_help(positives: &[Rule], src: &str, pos: usize, found: &str) -> Option<Help> {
    let at_end = found == "the end of the file";
    let line_of = |p: usize| src[..p.min(src.len())].matches('\n').count();
    for (rule, open) in [(Rule::rparen, '('), (Rule::rbracket, '[')] {
        let Some(at) = positives
            .contains(&rule)
            .then(|| unclosed_before(src, pos, open))
            .flatten()
        else {
            continue;
        };
        if at_end || line_of(at.start as usize) < line_of(pos) {
            return unclosed_help(src, at, open, found);
        }
    }
    let starts_item = ITEM_KEYWORDS.iter().any(|k| found == format!("`{k}`"));
    if (at_end || starts_item) && positives.contains(&Rule::rbrace) || found == "`{`" {
        let at = unclosed_before(src, pos, '{')?;
        return unclosed_help(src, at, '{', found);
    }
    None
}

fn unclosed_help(src: &str, at: Span, open: char, found: &str) -> Option<Help> {
    let line = src[..at.start as usize].matches('\n').count() + 1;
    let close = closer(open);
    let help = if found == "the end of the file" {
        format!("add the missing `{close}` for the `{open}` on line {line}")
    } else {
        format!("the `{open}` on line {line} may be missing its `{close}`")
    };
    Some((Some(help), Some((at, format!("this `{open}` is not closed")))))
}

fn did_you_mean(found: &str) -> Option<String> {
    let word = found.trim_matches('`');
    if let Some(help) = stan_block(word) {
        return Some(help.to_string());
    }
    ITEM_KEYWORDS
        .iter()
        .map(|k| (edit_distance(word, k), k))
        .min()
        .filter(|(d, k)| *d <= 1 || (*d == 2 && word.len() >= 4 && k.len() >= 4))
        .map(|(_, k)| format!("did you mean `{k}`?"))
}

/// The mvi form of a Stan block keyword (the first word of `transformed data`,
/// `generated quantities`, …), which are too far from ours for the edit distance.
fn stan_block(word: &str) -> Option<&'static str> {
    Some(match word {
        "parameters" => "did you mean `param`? (Stan's `parameters` block is `param` in mvi)",
        "transformed" => {
            "Stan's `transformed data` and `transformed parameters` are top-level `let`s in mvi \
             (`let theta = mu + tau * z`)"
        }
        "generated" => {
            "Stan's `generated quantities` has no block in mvi: held-out likelihoods go in \
             `predict { … }`, derived quantities in top-level `let`s"
        }
        "functions" => "functions are written one by one at the top level: `fn f(x: real) -> real { … }`",
        _ => return None,
    })
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("modle", "model"), 2);
        assert_eq!(edit_distance("parm", "param"), 1);
        assert_eq!(edit_distance("", "fn"), 2);
    }

    #[test]
    fn stan_block_keywords_are_translated() {
        let help = did_you_mean("`parameters`").expect("a help for Stan's block");
        assert!(help.contains("`param`"), "{help}");
        let help = did_you_mean("`generated`").expect("a help for Stan's block");
        assert!(help.contains("predict"), "{help}");
        assert_eq!(did_you_mean("`modle`").as_deref(), Some("did you mean `model`?"));
    }

    #[test]
    fn found_describes_words_operators_and_end_of_file() {
        assert_eq!(found_at("a += b", 2).1, "`+=`");
        assert_eq!(found_at("a sigma2 b", 2).1, "`sigma2`");
        assert_eq!(found_at("abc", 3).1, "the end of the file");
        assert_eq!(found_at("a\nb", 1).1, "the end of the line");
    }

    #[test]
    fn every_rule_has_words_or_is_deliberately_silent() {
        let p = phrases(&[Rule::rbrace, Rule::binop, Rule::transpose, Rule::comma]);
        assert_eq!(p, vec!["an operator", "`}`", "`,`"]);
    }
}
