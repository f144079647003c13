//! The help line of a syntax error when no known mistake matched.
//!
//! Input: the grammar rules pest tried at the error position, the source and what stands
//! there. Output: one help line that says what may be written at that place, with an
//! example, so that every `mvi::syntax::unexpected` diagnostic carries a help line. The
//! rules are looked at in a fixed order, most specific first (a distribution after `~`
//! before "an expression", a statement before "a name").

use super::parser::Rule;

/// A help line for the rules pest expected at `pos`, where `found` stands (in words).
pub fn fallback_help(positives: &[Rule], src: &str, pos: usize, found: &str) -> String {
    let has = |r: Rule| positives.contains(&r);
    let starts_expr = starts_expression(found);
    if let Some(h) = stray_character_help(src, pos, found) {
        return h.into();
    }
    if has(Rule::comma) && starts_expr && (has(Rule::rparen) || has(Rule::rbracket)) {
        return "separate arguments, sizes and list items with `,`, e.g. `normal(0, 1)`".into();
    }
    // Where a top-level item may start, a separator is always possible and says nothing.
    let item_start = has(Rule::kw_data) || has(Rule::program);
    if has(Rule::sep) && starts_expr && !item_start {
        return "put each statement on its own line, or separate them with `;`".into();
    }
    if has(Rule::sep) && found.starts_with('`') && !item_start {
        return format!("end the statement before {found} with a newline or `;`, or remove {found}");
    }
    if let Some(h) = statement_help(positives) {
        return h.into();
    }
    if let Some(h) = declaration_help(positives) {
        return h.into();
    }
    if let Some(h) = bracket_help(positives) {
        return h.into();
    }
    if has(Rule::lbrace) || has(Rule::stmt_body) {
        return brace_help(src, pos);
    }
    if has(Rule::index_item) {
        return "write an index: a number, a name, a range `lo:hi` or `:` for all, e.g. `h[2:T]`".into();
    }
    if has(Rule::expr) || has(Rule::term) || has(Rule::nexpr) || has(Rule::bound_expr) {
        return "write an expression here: a number, a name, a call such as `exp(x)` or a \
                bracketed `( … )`"
            .into();
    }
    if has(Rule::ident) || has(Rule::lvalue) {
        return name_help(src, pos);
    }
    if has(Rule::program) || has(Rule::kw_data) || has(Rule::EOI) {
        return "a model file is a list of blocks and definitions: `data { … }`, `param { … }`, \
                `model { … }`, `let x = …`, `fn f(…) -> real { … }`; remove or move this text"
            .into();
    }
    "compare this line with the examples in `docs/language.md`".into()
}

/// Help for what may follow inside a statement of `model`, `predict` or a function.
fn statement_help(positives: &[Rule]) -> Option<&'static str> {
    let has = |r: Rule| positives.contains(&r);
    Some(if has(Rule::dist_name) || has(Rule::dist_call) {
        "write a distribution with its arguments after `~`, e.g. `mu ~ normal(0, 1)`"
    } else if has(Rule::assign_op) || has(Rule::tilde) {
        "a statement is `name ~ distribution(…)`, e.g. `y ~ normal(mu, sigma)`, or an update of \
         a `let` variable, e.g. `x += 1`"
    } else if has(Rule::plus_eq) {
        "`target` is only incremented: `target += normal_lpdf(y | mu, sigma)`"
    } else if has(Rule::let_eq) {
        "`let` binds a name to a value: `let name = expression`"
    } else if has(Rule::kw_in) {
        "a loop is written `for i in 1:N { … }`"
    } else if has(Rule::range_colon) && !has(Rule::rbracket) {
        "ranges are written `lo:hi`, e.g. `for i in 1:N { … }`"
    } else if has(Rule::kw_if) {
        "`else` is followed by a block in braces or another `if`: `} else { … }`"
    } else if has(Rule::fn_ret) {
        "a function's result type follows `->`: `fn f(x: vector) -> vector { … }`"
    } else if has(Rule::stmt) {
        "write a statement (`y ~ normal(mu, sigma)`, `let x = …`, `for i in 1:N { … }`, \
         `target += …`) or close the block with `}`"
    } else {
        return None;
    })
}

/// Help for declarations (`data`, `hyper`, `param`, function parameters) and `infer` options.
fn declaration_help(positives: &[Rule]) -> Option<&'static str> {
    let has = |r: Rule| positives.contains(&r);
    Some(if has(Rule::decl_colon) {
        "declarations are written `name: type`, e.g. `sigma: real<lower=0>`"
    } else if has(Rule::type_expr) || has(Rule::base_type) {
        "write a type: `int`, `real`, `vector[n]`, `matrix[n, m]` or `ints[n]`, e.g. \
         `sigma: real<lower=0>`"
    } else if has(Rule::bound) || has(Rule::bound_key) {
        "a constraint is `<lower=…>`, `<upper=…>` or both, e.g. `real<lower=0, upper=1>`, or an \
         affine transform `<offset=…, multiplier=…>`"
    } else if has(Rule::rangle) {
        "close the constraint with `>`, e.g. `real<lower=0>`"
    } else if has(Rule::decl) {
        "each line of this block declares `name: type`, e.g. `sigma: real<lower=0>`; close the \
         block with `}`"
    } else if has(Rule::fn_param) {
        "function parameters are written `name: type`, e.g. `fn f(x: vector, s: real) -> real`"
    } else if has(Rule::infer_eq) {
        "`infer` options are written `key = value`, e.g. `method = laplace`"
    } else if has(Rule::infer_value) || has(Rule::infer_list) {
        "give the option a value: a number (`samples = 1000`), a word (`method = laplace`) or a \
         list (`blocks = [[a], [b]]`)"
    } else if has(Rule::infer_entry) {
        "each line of `infer` is an option `key = value`, e.g. `method = laplace`; close the \
         block with `}`"
    } else if positives == [Rule::string] {
        "`import` takes a quoted name, e.g. `import \"rbf\"`"
    } else {
        return None;
    })
}

/// Help when a closing bracket could end what is written.
fn bracket_help(positives: &[Rule]) -> Option<&'static str> {
    let has = |r: Rule| positives.contains(&r);
    Some(if has(Rule::rparen) {
        "close the parentheses with `)`, or continue with an operator or a `,`"
    } else if has(Rule::rbracket) {
        "close the brackets with `]`, or continue with an operator or a `,`"
    } else if has(Rule::rbrace) {
        "close the block with `}`"
    } else {
        return None;
    })
}

/// Help for a character that is almost right: a `/` that was meant to start a comment, a
/// real number without digits after its `.`.
fn stray_character_help(src: &str, pos: usize, found: &str) -> Option<&'static str> {
    let before = src.get(..pos).unwrap_or("");
    let after = src.get(pos + 1..).unwrap_or("");
    let line_ends = after
        .split(['\n', '\r'])
        .next()
        .is_some_and(|l| l.trim().is_empty());
    if found == "`/`" && line_ends {
        return Some("comments start with `//` or `#`; write `//` or remove the `/`");
    }
    if found == "`.`" && before.ends_with(|c: char| c.is_ascii_digit()) {
        return Some("a real number needs digits after its `.`, e.g. `1.0`");
    }
    None
}

/// Keywords whose construct continues with a body in braces.
const BODY_KEYWORDS: [&str; 10] = [
    "data", "hyper", "param", "model", "predict", "infer", "for", "if", "else", "fn",
];

/// Help where a `{` must open a body, naming the construct: the nearest keyword before
/// `pos` that takes a body.
fn brace_help(src: &str, pos: usize) -> String {
    let before = src.get(..pos).unwrap_or("");
    let first = before
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|w| BODY_KEYWORDS.contains(w))
        .unwrap_or("");
    match first {
        "data" | "hyper" | "param" => {
            format!("`{first}` is followed by its declarations in braces: `{first} {{ x: real }}`")
        }
        "model" | "predict" => {
            format!("`{first}` is followed by its statements in braces: `{first} {{ y ~ normal(0, 1) }}`")
        }
        "infer" => "`infer` is followed by its options in braces: `infer { method = laplace }`".into(),
        "for" => "a loop body goes in braces: `for i in 1:N { … }`".into(),
        "if" | "else" => "the branches of `if` go in braces: `if c { … } else { … }`".into(),
        "fn" => "a function body goes in braces: `fn f(x: real) -> real { return x }`".into(),
        _ => "a body goes in braces, e.g. `model { … }` or `for i in 1:N { … }`".into(),
    }
}

/// Help where a name is needed, naming the construct it is for.
fn name_help(src: &str, pos: usize) -> String {
    let before = src.get(..pos).unwrap_or("").trim_end();
    let last = before
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    match last {
        "let" => "name the value, e.g. `let mu = X * w`".into(),
        "for" => "name the loop variable, e.g. `for i in 1:N { … }`".into(),
        "fn" => "name the function, e.g. `fn f(x: real) -> real { … }`".into(),
        _ => "names start with a letter or `_` and use ASCII letters, digits and `_`, e.g. `sigma`".into(),
    }
}

/// Whether `found` (in words, "`x`") could begin an expression: a name, a number or `(`/`[`.
fn starts_expression(found: &str) -> bool {
    let text = found.trim_matches('`');
    found.starts_with('`')
        && text
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '(' || c == '[')
}

/// A note for an error at the end of the file: the innermost bracket still open, which the
/// truncated text also needs to close.
pub fn end_of_file_note(open: char, line: usize) -> String {
    let close = super::scan::closer(open);
    format!("the file ends inside the `{open}` on line {line}, which also needs its `{close}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_distribution_asks_for_one_with_an_example() {
        let h = fallback_help(&[Rule::dist_name], "model { w ~ ", 12, "the end of the file");
        assert!(h.contains("normal(0, 1)"), "{h}");
    }

    #[test]
    fn a_missing_brace_names_the_construct_of_its_line() {
        let h = fallback_help(&[Rule::lbrace], "data", 4, "the end of the file");
        assert!(h.starts_with("`data` is followed"), "{h}");
        let h = fallback_help(&[Rule::stmt_body], "for i in 1:N x", 13, "`x`");
        assert!(h.contains("loop body"), "{h}");
    }

    #[test]
    fn a_loop_without_braces_is_named_as_a_loop_inside_a_block() {
        let h = fallback_help(&[Rule::lbrace, Rule::lparen], "model { for i in 1:N y", 21, "`y`");
        assert!(h.contains("loop body"), "{h}");
    }

    #[test]
    fn a_second_statement_on_a_top_level_let_line_asks_for_a_new_line() {
        let rules = [Rule::binop, Rule::sep, Rule::EOI];
        let h = fallback_help(&rules, "let x = 1 y", 10, "`y`");
        assert!(h.starts_with("put each statement on its own line"), "{h}");
        // where an item may start, a stray word is not a second statement
        let rules = [Rule::sep, Rule::kw_data, Rule::EOI];
        let h = fallback_help(&rules, "xyzzy", 0, "`xyzzy`");
        assert!(h.starts_with("a model file is"), "{h}");
    }

    #[test]
    fn a_missing_name_after_let_shows_a_let() {
        let h = fallback_help(&[Rule::ident], "let", 3, "the end of the file");
        assert!(h.contains("let mu ="), "{h}");
    }

    #[test]
    fn two_arguments_without_a_comma_ask_for_a_comma() {
        let rules = [Rule::binop, Rule::rparen, Rule::cond_bar, Rule::comma];
        let h = fallback_help(&rules, "normal(0 1)", 9, "`1`");
        assert!(h.contains("with `,`"), "{h}");
    }

    #[test]
    fn a_lone_slash_at_the_end_of_a_line_is_read_as_a_broken_comment() {
        let h = fallback_help(
            &[Rule::sep, Rule::rbrace],
            "infer { method = laplace /",
            25,
            "`/`",
        );
        assert!(h.starts_with("comments start with `//`"), "{h}");
    }

    #[test]
    fn a_minus_sign_without_its_number_does_not_mention_import() {
        let rules = [Rule::ident, Rule::number, Rule::string, Rule::expr];
        let h = fallback_help(&rules, "let m = [-", 10, "the end of the file");
        assert!(h.starts_with("write an expression"), "{h}");
    }

    #[test]
    fn the_end_of_file_note_names_the_closer() {
        assert_eq!(
            end_of_file_note('{', 3),
            "the file ends inside the `{` on line 3, which also needs its `}`"
        );
    }
}
