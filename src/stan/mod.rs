//! Stan programs as they are: a `.stan` file → `.mvi` text, with a map back to the `.stan`.
//!
//! Input: the text of a Stan program (Stan 2.3x syntax, and the older array and `<-`
//! forms). [`parser`] parses it with a grammar of its own (`grammar/stan.pest`) into an AST
//! with spans; [`translate`](mod@translate) writes the `.mvi` text, which then goes through
//! the `.mvi` parser, checker and lowering unchanged. Output: a [`Translation`], whose
//! [`SourceMap`] turns a diagnostic about the `.mvi` text into one about the `.stan` file.
//!
//! What the next stage can rely on: the text is what a user would write by hand (no `infer`
//! block: the settings come from the command line); a construct with no `.mvi` counterpart
//! is a diagnostic pointing at it in the `.stan` file and naming it, never a different model.

pub mod ast;
pub mod parser;
pub mod translate;

use miette::{LabeledSpan, NamedSource};

use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;

pub use parser::parse_stan;

/// Whether `file_name` names a Stan program (ends in `.stan`).
pub fn is_stan_file(file_name: &str) -> bool {
    file_name.ends_with(".stan")
}

/// A Stan program translated to `.mvi` text.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The `.mvi` text.
    pub text: String,
    /// Where each piece of `text` came from in the `.stan` file.
    pub map: SourceMap,
    /// The `.stan` file, for diagnostics.
    pub stan: NamedSource<String>,
}

/// Spans of the `.mvi` text, each with the `.stan` span it was translated from.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// `(mvi start, mvi end, stan span)`, in the order written (outer pieces before inner).
    entries: Vec<(u32, u32, Span)>,
}

impl SourceMap {
    /// Record that `mvi_start..mvi_end` of the `.mvi` text came from `stan`.
    pub fn push(&mut self, mvi_start: usize, mvi_end: usize, stan: Span) {
        self.entries.push((mvi_start as u32, mvi_end as u32, stan));
    }

    /// The `.stan` span of the smallest translated piece that contains `mvi` (or, failing
    /// that, contains its start).
    pub fn to_stan(&self, mvi: Span) -> Option<Span> {
        let smallest = |contains: &dyn Fn(&(u32, u32, Span)) -> bool| {
            self.entries
                .iter()
                .filter(|e| contains(e))
                .min_by_key(|(s, e, _)| e - s)
                .map(|(_, _, stan)| *stan)
        };
        smallest(&|(s, e, _)| *s <= mvi.start && mvi.end <= *e)
            .or_else(|| smallest(&|(s, e, _)| *s <= mvi.start && mvi.start < *e))
    }
}

/// Parse a Stan program and translate it to `.mvi` text.
///
/// # Errors
/// A syntax error in the Stan program, or the first construct the translation does not
/// support, as a diagnostic pointing into the `.stan` file.
pub fn translate(src: &str, file_name: &str) -> Result<Translation, Diagnostic> {
    let program = parse_stan(src, file_name)?;
    let stan = NamedSource::new(file_name, src.to_string());
    let (text, map) = translate::translate_program(&program).map_err(|e| e.to_diagnostic(stan.clone()))?;
    Ok(Translation { text, map, stan })
}

impl Translation {
    /// Point a diagnostic about the translated `.mvi` text at the `.stan` file instead: each
    /// label moves to the `.stan` text it was translated from, and the help says how to see
    /// the `.mvi` text. A diagnostic about another file (a data file) is returned unchanged.
    pub fn to_stan(&self, mut d: Diagnostic) -> Diagnostic {
        if d.source_code.name() != self.stan.name() || d.source_code.inner() != &self.text {
            return d;
        }
        d.labels = d
            .labels
            .iter()
            .filter_map(|l| {
                let mvi = Span::new(l.offset(), l.offset() + l.len());
                let stan = self.map.to_stan(mvi)?;
                Some(LabeledSpan::new_with_span(
                    l.label().map(str::to_string),
                    (stan.start as usize, (stan.end - stan.start) as usize),
                ))
            })
            .collect();
        d.source_code = self.stan.clone();
        let see = format!(
            "the Stan program was translated to `.mvi`; `mvi translate {}` prints that text",
            self.stan.name()
        );
        d.help = Some(match d.help.take() {
            Some(h) => format!("{h}\n{see}"),
            None => see,
        });
        d
    }
}

#[cfg(test)]
mod tests;
