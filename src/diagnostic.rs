//! The one user-facing error type.
//!
//! Every problem in a user's model, data or command becomes a [`Diagnostic`]: a message, a
//! primary span with a label, optional secondary labels, a help line and the source text it
//! points into. The CLI renders it with miette and exits with code 2; the REPL prints it and
//! returns to the prompt. Phases record their problems as data in their own error enums and
//! convert them here only when reporting.

use std::fmt;

use miette::{
    LabeledSpan, MietteError, MietteSpanContents, NamedSource, Severity, SourceCode, SourceSpan, SpanContents,
};

use crate::syntax::span::Span;

/// A problem in a model, its data or a command, shown with where it is and what to try.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Diagnostic {
    /// Stable machine-readable code, e.g. `mvi::check::unknown_name`.
    pub code: &'static str,
    /// Error, or Warning for lints.
    pub severity: Severity,
    /// Lowercase message without a final period, names in backticks.
    pub message: String,
    /// Labelled spans into `source`; the first is the primary location.
    pub labels: Vec<LabeledSpan>,
    /// What to try; shown as miette's help line.
    pub help: Option<String>,
    /// The text the labels point into (a model file, a data file, or a command line).
    pub source_code: NamedSource<String>,
}

impl Diagnostic {
    /// An error with no location yet; add labels with [`Diagnostic::with_label`].
    pub fn error(code: &'static str, message: impl Into<String>, source: NamedSource<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            labels: Vec::new(),
            help: None,
            source_code: source,
        }
    }

    /// An error about something outside any file (a command-line option, a missing file).
    pub fn plain(code: &'static str, message: impl Into<String>) -> Self {
        Self::error(code, message, NamedSource::new("<command line>", String::new()))
    }

    /// Add a labelled span; the first one added is the primary location.
    pub fn with_label(mut self, span: Span, label: impl Into<String>) -> Self {
        self.labels.push(LabeledSpan::new_with_span(
            Some(label.into()),
            (span.start as usize, (span.end - span.start) as usize),
        ));
        self
    }

    /// Set the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Turn this into a warning.
    pub fn warning(mut self) -> Self {
        self.severity = Severity::Warning;
        self
    }

    /// Render without colour at a fixed width, as the snapshot tests and non-terminals see it.
    pub fn render_plain(&self, width: usize) -> String {
        let handler = miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_width(width);
        let mut out = String::new();
        handler
            .render_report(&mut out, self)
            .expect("writing to a String cannot fail");
        out
    }
}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        // `self` reads the source through a window, so a long line is not printed whole.
        Some(self)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().map(|l| self.clip_label(l))))
        }
    }
}

impl Diagnostic {
    /// A label on one long line, cut to end inside the window its snippet shows (a label
    /// running past the window would be drawn as a multi-line one, without its text).
    fn clip_label(&self, l: &LabeledSpan) -> LabeledSpan {
        let text = self.source_code.inner();
        let (start, len) = (l.offset(), l.len());
        let Some(marked) = text.get(start..start + len) else {
            return l.clone();
        };
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let most = SNIPPET_WIDTH - SNIPPET_LEAD;
        if marked.contains('\n') || line_end - line_start <= SNIPPET_LONGEST_LINE || len <= most {
            return l.clone();
        }
        let end = floor_char_boundary(text, start + most);
        LabeledSpan::new(l.label().map(str::to_string), start, end - start)
    }
}

/// The longest line a snippet shows whole, in bytes: a minified data file is one line, and
/// printing it whole would bury the message.
const SNIPPET_LONGEST_LINE: usize = 240;

/// How much of a longer line a snippet shows, in bytes.
const SNIPPET_WIDTH: usize = 100;

/// How much of a longer line a snippet shows before the start of its label, in bytes.
const SNIPPET_LEAD: usize = 30;

/// The source as snippets see it: lines up to 240 bytes whole with their context lines, a
/// longer line (a minified data file) as a window of 100 bytes of it around the label. Offsets, line and column numbers
/// are those of the whole file, so labels and the `file:line:column` header stay right.
impl SourceCode for Diagnostic {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let full = self
            .source_code
            .read_span(span, context_lines_before, context_lines_after)?;
        let longest = full
            .data()
            .split(|&b| b == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0);
        if longest <= SNIPPET_LONGEST_LINE {
            return Ok(full);
        }
        let lead = if context_lines_before == 0 {
            0
        } else {
            SNIPPET_LEAD
        };
        Ok(Box::new(line_window(
            self.source_code.name(),
            self.source_code.inner(),
            span.offset(),
            lead,
        )))
    }
}

/// Up to [`SNIPPET_WIDTH`] bytes of the line holding byte `offset`, from `lead` bytes
/// before it (within the line, on character boundaries).
fn line_window<'a>(name: &str, text: &'a str, offset: usize, lead: usize) -> MietteSpanContents<'a> {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..]
        .find(['\n', '\r'])
        .map_or(text.len(), |i| offset + i);
    let start = floor_char_boundary(text, offset.saturating_sub(lead).max(line_start));
    let mut end = (start + SNIPPET_WIDTH).min(line_end);
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let line = text[..start].matches('\n').count();
    MietteSpanContents::new_named(
        name.to_string(),
        &text.as_bytes()[start..end],
        (start, end - start).into(),
        line,
        start - line_start,
        1,
    )
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minified(len: usize, at: usize) -> (String, Diagnostic) {
        let mut text = "{\"x\": [".to_string();
        while text.len() < len {
            text.push_str("1.25, ");
        }
        text.push_str("1]}");
        let d = Diagnostic::error("mvi::test", "bad", NamedSource::new("d.json", text.clone()))
            .with_label(Span::new(at, at + 4), "this one");
        (text, d)
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_label() {
        let (text, d) = minified(100_000, 50_003);
        let out = d.render_plain(100);
        assert!(out.len() < 1_000, "{} bytes:\n{out}", out.len());
        assert!(out.contains("this one"), "{out}");
        // the header still names the label's true line and column
        assert!(out.contains("d.json:1:50004"), "{out}");
        assert!(text.len() > 100_000);
    }

    #[test]
    fn a_label_longer_than_the_window_is_cut_at_its_edge() {
        let (_, d) = minified(100_000, 50_003);
        let d = Diagnostic {
            labels: Vec::new(),
            ..d
        }
        .with_label(Span::new(50_003, 60_000), "a long row");
        let out = d.render_plain(100);
        assert!(out.len() < 1_000 && out.contains("a long row"), "{out}");
    }

    #[test]
    fn a_label_at_the_start_of_a_long_line_is_shown() {
        let (_, d) = minified(10_000, 0);
        let out = d.render_plain(100);
        assert!(out.len() < 1_000 && out.contains("d.json:1:1"), "{out}");
    }

    #[test]
    fn short_lines_keep_their_context() {
        let text = "a\nbb\nccc\n".to_string();
        let d = Diagnostic::error("mvi::test", "bad", NamedSource::new("m.mvi", text))
            .with_label(Span::new(2, 4), "here");
        let out = d.render_plain(100);
        assert!(out.contains("1 │ a") && out.contains("3 │ ccc"), "{out}");
        assert!(out.contains("m.mvi:2:1"), "{out}");
    }

    #[test]
    fn a_window_never_splits_a_character() {
        let text = "é".repeat(300);
        let d = Diagnostic::error("mvi::test", "bad", NamedSource::new("u.json", text))
            .with_label(Span::new(101, 103), "odd offset");
        assert!(d.render_plain(100).contains("odd offset"));
    }
}
