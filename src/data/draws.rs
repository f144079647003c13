//! Reading a file of posterior draws in CmdStan's CSV layout (`mvi compare --reference
//! draws.csv`).
//!
//! Input: the file's text: optional `#` comment lines, a header row of column names, then
//! one row of numbers per draw (CmdStan's own output, `mvi run`'s draws.csv, or
//! posteriordb's reference draws). Output: a [`DrawsTable`] with the column names and an
//! n_draws × n_columns matrix, or a [`Diagnostic`] pointing at the first bad line.

use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;
use miette::NamedSource;
use nalgebra::DMatrix;
use std::path::Path;

/// Draws read from a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawsTable {
    /// The file's name as given.
    pub file: String,
    /// The header's column names, as written.
    pub columns: Vec<String>,
    /// The values, one row per draw.
    pub values: DMatrix<f64>,
}

/// Read and parse a draws file.
///
/// # Errors
/// A diagnostic when the file cannot be read or is not a draws CSV.
pub fn read_draws_csv(path: &Path) -> Result<DrawsTable, Diagnostic> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::plain("mvi::data::reference_file", format!("cannot read `{name}`: {e}")).with_help(
            "`--reference` takes `nuts` (run NUTS on the model) or a CSV file of draws with a \
             header row of parameter names (CmdStan's output, or `mvi run`'s draws.csv)",
        )
    })?;
    parse_draws_csv(&name, &text)
}

/// Parse the text of a draws file.
///
/// # Errors
/// A diagnostic at the first line that is not a row of as many numbers as the header has
/// names, or when there is no header or no draw.
pub fn parse_draws_csv(name: &str, text: &str) -> Result<DrawsTable, Diagnostic> {
    let src = || NamedSource::new(name, text.to_string());
    let mut lines = lines_with_offsets(text).filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else {
        return Err(Diagnostic::plain(
            "mvi::data::reference_empty",
            format!("`{name}` has no header row"),
        )
        .with_help("a draws file starts with a row of column names (`lp__,mu,theta[1],…`)"));
    };
    let columns: Vec<String> = header
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    let mut values = Vec::new();
    let mut rows = 0;
    for (start, line) in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let span = Span {
            start: start as u32,
            end: (start + line.len()) as u32,
        };
        if cells.len() != columns.len() {
            return Err(Diagnostic::error(
                "mvi::data::reference_row",
                format!(
                    "a row of `{name}` has {} values for {} columns",
                    cells.len(),
                    columns.len()
                ),
                src(),
            )
            .with_label(span, "this row")
            .with_help("every row of a draws file has one value per header column"));
        }
        for c in cells {
            let v: f64 = c.trim().parse().map_err(|_| {
                Diagnostic::error(
                    "mvi::data::reference_value",
                    format!("`{}` in `{name}` is not a number", c.trim()),
                    src(),
                )
                .with_label(span, "in this row")
                .with_help("draws are numbers (`1.5`, `-2e-3`, `nan`, `inf`)")
            })?;
            values.push(v);
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(
            Diagnostic::plain("mvi::data::reference_empty", format!("`{name}` has no draws"))
                .with_help("a draws file has one row of numbers per draw below its header"),
        );
    }
    Ok(DrawsTable {
        file: name.to_string(),
        values: DMatrix::from_row_slice(rows, columns.len(), &values),
        columns,
    })
}

/// The lines of `text` with the byte offset each starts at (line ends `\n` or `\r\n`).
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split_inclusive('\n').map(move |raw| {
        let start = offset;
        offset += raw.len();
        (start, raw.trim_end_matches(['\n', '\r']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cmdstan_file_reads_with_comments_and_stan_names() {
        let t = parse_draws_csv("r.csv", "# comment\nlp__,mu,theta[1]\n-1,0.5,2\n-2,0.25,3\n").unwrap();
        assert_eq!(t.columns, vec!["lp__", "mu", "theta[1]"]);
        assert_eq!(t.values.nrows(), 2);
        assert!((t.values[(1, 1)] - 0.25).abs() < 1e-15);
    }

    #[test]
    fn short_rows_and_words_are_pointed_at() {
        let e = parse_draws_csv("r.csv", "mu,tau\n1,2\n3\n").unwrap_err();
        assert!(e.message.contains("1 values for 2 columns"), "{}", e.message);
        assert_eq!(e.labels.len(), 1);
        let e = parse_draws_csv("r.csv", "mu,tau\n1,x\n").unwrap_err();
        assert!(e.message.contains("`x`"), "{}", e.message);
        assert!(parse_draws_csv("r.csv", "mu,tau\n").is_err());
        assert!(parse_draws_csv("r.csv", "").is_err());
    }
}
