//! The one user-facing error type.
//!
//! Every problem in a user's model, data or command becomes a [`Diagnostic`]: a message, a
//! primary span with a label, optional secondary labels, a help line and the source text it
//! points into. The CLI renders it with miette and exits with code 2; the REPL prints it and
//! returns to the prompt. Phases record their problems as data in their own error enums and
//! convert them here only when reporting.

use std::fmt;

use miette::{LabeledSpan, NamedSource, Severity, SourceCode};

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
        Some(&self.source_code)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
}
