//! Syntax errors as data, and their wording.
//!
//! The parser records what went wrong as an [`Error`]; [`Error::to_diagnostic`] turns it into
//! the user-facing [`Diagnostic`] (codes `mvi::syntax::…`). Messages say in words what was
//! expected; rule identifiers of the grammar never reach the user. Every kind of error has
//! a help line: its wording returns one unconditionally.

use miette::NamedSource;

use super::span::Span;
use crate::diagnostic::Diagnostic;

/// One syntax problem; parsing stops at the first.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The text at `span` does not fit the grammar.
    Unexpected {
        /// What stands at the error position (a zero-width span at the end of the file).
        span: Span,
        /// What could have stood there, in words ("`}`", "an expression").
        expected: Vec<&'static str>,
        /// What stands there, in words ("`=`", "end of file").
        found: String,
        /// What to try: the fix of a known mistake, or what may be written there.
        help: String,
        /// A related place (an unclosed bracket) with its label.
        related: Option<(Span, String)>,
    },
    /// Brackets or expressions nested deeper than the parser allows.
    TooDeep {
        /// Where the limit was passed.
        span: Span,
        /// The limit.
        limit: usize,
    },
    /// An integer literal that does not fit in 64 bits.
    IntTooLarge {
        /// The literal.
        span: Span,
    },
    /// A real literal that is infinite as an `f64`.
    RealOutOfRange {
        /// The literal.
        span: Span,
    },
    /// A `/*` without its `*/`.
    UnterminatedComment {
        /// The `/*`.
        span: Span,
    },
    /// A `"` without its closing `"` on the same line.
    UnterminatedString {
        /// The string up to the end of its line.
        span: Span,
    },
    /// `lower`, `upper`, `offset` or `multiplier` given twice in one constraint.
    DuplicateBound {
        /// The second occurrence.
        span: Span,
        /// `lower`, `upper`, `offset` or `multiplier`.
        key: &'static str,
    },
    /// A type with the wrong number of sizes (`vector[N, M]`, `real[3]`).
    SizeCount {
        /// The type.
        span: Span,
        /// The base type as written.
        base: &'static str,
        /// How many sizes it takes.
        takes: usize,
        /// How many were written.
        found: usize,
    },
    /// A vector, matrix or ints declaration without sizes where they cannot be inferred.
    MissingSize {
        /// The type.
        span: Span,
        /// The base type as written.
        base: &'static str,
        /// The block (`param`, `data`, `hyper`).
        block: &'static str,
    },
    /// An array type that has no `.mvi` form yet (`array[N] simplex[K]`, `array[N] matrix[R, C]`).
    UnsupportedArray {
        /// The type.
        span: Span,
        /// The array dimensions and element type as written, e.g. `array[N] simplex`.
        what: String,
    },
    /// `|` in the arguments after `~` (`y ~ normal(y | 0, 1)`).
    BarInTilde {
        /// The `|`.
        span: Span,
    },
    /// `name = dist(...)` in `model`/`predict` where `name` is not a local variable.
    AssignNotTilde {
        /// The `=`.
        span: Span,
        /// The assigned name.
        name: String,
        /// The called function (likely a distribution).
        func: String,
    },
}

impl Error {
    /// The stable code of this kind of error, `mvi::syntax::…`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unexpected { .. } => "mvi::syntax::unexpected",
            Error::TooDeep { .. } => "mvi::syntax::too_deep",
            Error::IntTooLarge { .. } => "mvi::syntax::int_too_large",
            Error::RealOutOfRange { .. } => "mvi::syntax::real_out_of_range",
            Error::UnterminatedComment { .. } => "mvi::syntax::unterminated_comment",
            Error::UnterminatedString { .. } => "mvi::syntax::unterminated_string",
            Error::DuplicateBound { .. } => "mvi::syntax::duplicate_bound",
            Error::SizeCount { .. } => "mvi::syntax::size_count",
            Error::MissingSize { .. } => "mvi::syntax::missing_size",
            Error::UnsupportedArray { .. } => "mvi::syntax::unsupported_array",
            Error::BarInTilde { .. } => "mvi::syntax::bar_in_tilde",
            Error::AssignNotTilde { .. } => "mvi::syntax::assign_not_tilde",
        }
    }

    /// The user-facing diagnostic, pointing into `src` (named `file_name`).
    pub fn to_diagnostic(&self, src: &str, file_name: &str) -> Diagnostic {
        let source = NamedSource::new(file_name, src.to_string());
        let (message, span, label, help) = self.wording();
        let mut d = Diagnostic::error(self.code(), message, source).with_label(span, label);
        if let Error::Unexpected {
            related: Some((at, text)),
            ..
        } = self
        {
            d = d.with_label(*at, text.clone());
        }
        d.with_help(help)
    }

    /// Message, primary span, its label and the help line (every syntax error has one).
    fn wording(&self) -> (String, Span, String, String) {
        match self {
            Error::Unexpected {
                span,
                expected,
                found,
                help,
                ..
            } => (
                format!("expected {}", join_or(expected)),
                *span,
                format!("found {found}"),
                help.clone(),
            ),
            Error::TooDeep { span, limit } => (
                format!("brackets or operators are nested too deeply (more than {limit} levels)"),
                *span,
                "too deep here".into(),
                "split the expression into smaller ones with `let`".into(),
            ),
            Error::IntTooLarge { span } => (
                "integer literal is too large".into(),
                *span,
                "does not fit in a 64-bit integer".into(),
                "write it as a real number, e.g. `1e20`".into(),
            ),
            Error::RealOutOfRange { span } => (
                "real literal is out of range".into(),
                *span,
                "too large for a 64-bit float".into(),
                "the largest finite real is about `1.8e308`; rescale the quantity or write it on the \
                 log scale"
                    .into(),
            ),
            Error::UnterminatedComment { span } => (
                "block comment is never closed".into(),
                *span,
                "this `/*` has no matching `*/`".into(),
                "close the comment with `*/`".into(),
            ),
            Error::UnterminatedString { span } => (
                "string is never closed".into(),
                *span,
                "this string has no closing `\"`".into(),
                "strings end with `\"` on the same line".into(),
            ),
            Error::DuplicateBound { span, key } => (
                format!("`{key}` is given twice"),
                *span,
                "second one here".into(),
                if matches!(*key, "lower" | "upper") {
                    "a constraint has at most one `lower=` and one `upper=`".into()
                } else {
                    "an affine transform has at most one `offset=` and one `multiplier=`".into()
                },
            ),
            Error::SizeCount {
                span,
                base,
                takes,
                found,
            } => size_count_wording(*span, base, *takes, *found),
            Error::MissingSize { span, base, block } => (
                format!("`{base}` in `{block}` needs its size"),
                *span,
                "size missing".into(),
                format!(
                    "write the size in brackets, e.g. `{}`; sizes may be left out only in function \
                     parameters and in declarations that carry a value",
                    example_sizes(base)
                ),
            ),
            Error::UnsupportedArray { span, what } => (
                format!("`{what}` is not supported"),
                *span,
                "this array type".into(),
                "arrays of `real`, `int`, `vector` and `row_vector` are: `array[N] vector[K]` is an \
                 N × K matrix whose row n is element n (`x[n]` a `vector[K]`), `array[N] real` a \
                 `vector[N]`, `array[N] int` an `ints[N]` and `array[N, M] real` a `matrix[N, M]`"
                    .into(),
            ),
            Error::BarInTilde { span } => (
                "a distribution after `~` takes no `|`".into(),
                *span,
                "unexpected `|`".into(),
                "the outcome goes on the left: `y ~ normal(mu, sigma)`".into(),
            ),
            Error::AssignNotTilde { span, name, func } => (
                format!("`{name}` is not a local variable, so `=` cannot assign to it"),
                *span,
                "`=` here".into(),
                format!(
                    "to give `{name}` a distribution write `{name} ~ {func}(…)`; `=` only updates \
                     variables declared with `let`"
                ),
            ),
        }
    }
}

fn size_count_wording(span: Span, base: &str, takes: usize, found: usize) -> (String, Span, String, String) {
    let what = match takes {
        0 => "no size".to_string(),
        1 => "one size".to_string(),
        n => format!("{n} sizes"),
    };
    let help = if takes == 0 {
        "arrays of reals are written `vector[n]`, arrays of integers `ints[n]`".to_string()
    } else {
        format!("write `{}`", example_sizes(base))
    };
    (
        format!("`{base}` takes {what}, but {found} given"),
        span,
        format!("{found} size{} here", if found == 1 { "" } else { "s" }),
        help,
    )
}

fn example_sizes(base: &str) -> &'static str {
    match base {
        "matrix" => "matrix[N, M]",
        "ints" => "ints[N]",
        _ => "vector[N]",
    }
}

/// "a", "a or b", "a, b or c".
fn join_or(items: &[&str]) -> String {
    match items {
        [] => "something else".to_string(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_or_lists_alternatives_in_words() {
        assert_eq!(join_or(&["`}`"]), "`}`");
        assert_eq!(join_or(&["a", "b", "c"]), "a, b or c");
    }

    #[test]
    fn every_kind_of_syntax_error_has_a_label_and_a_help_line() {
        let span = Span::new(0, 1);
        let all = [
            Error::Unexpected {
                span,
                expected: vec!["`}`"],
                found: "the end of the file".into(),
                help: "close the block with `}`".into(),
                related: None,
            },
            Error::TooDeep { span, limit: 100 },
            Error::IntTooLarge { span },
            Error::RealOutOfRange { span },
            Error::UnterminatedComment { span },
            Error::UnterminatedString { span },
            Error::DuplicateBound { span, key: "lower" },
            Error::SizeCount {
                span,
                base: "real",
                takes: 0,
                found: 1,
            },
            Error::MissingSize {
                span,
                base: "vector",
                block: "param",
            },
            Error::UnsupportedArray {
                span,
                what: "array[N] simplex".into(),
            },
            Error::BarInTilde { span },
            Error::AssignNotTilde {
                span,
                name: "y".into(),
                func: "normal".into(),
            },
        ];
        for e in all {
            let d = e.to_diagnostic("x", "m.mvi");
            assert_eq!(d.labels.len(), 1, "{}", e.code());
            let help = d.help.unwrap_or_default();
            assert!(!help.trim().is_empty(), "{} has no help line", e.code());
        }
    }

    #[test]
    fn every_code_is_in_the_syntax_namespace() {
        let e = Error::IntTooLarge {
            span: Span::new(0, 1),
        };
        assert!(e.code().starts_with("mvi::syntax::"));
        let d = e.to_diagnostic("9", "m.mvi");
        assert_eq!(d.code, "mvi::syntax::int_too_large");
        assert!(d.help.is_some());
    }
}
