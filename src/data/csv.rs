//! Reading one variable from a CSV file: numeric cells, comma-separated, an optional header
//! row (a first line with any non-numeric field), blank lines skipped.

use super::{Cell, RawValue};
use crate::syntax::span::Span;

/// A problem in a CSV text, with the cell it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
}

/// Parse a CSV text into a table `[rows, cols]` (row-major cells).
///
/// # Errors
/// A non-numeric cell after the header, or rows of different lengths.
pub fn parse_csv(text: &str) -> Result<RawValue, CsvError> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut offset = 0usize;
    let mut first = true;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim().is_empty() {
            continue;
        }
        let fields = split_fields(content, start);
        let parsed: Vec<Option<Cell>> = fields.iter().map(|(f, s)| parse_cell(f, *s)).collect();
        if first && parsed.iter().any(Option::is_none) {
            first = false;
            continue; // header
        }
        first = false;
        let mut row = Vec::with_capacity(parsed.len());
        for (cell, (field, span)) in parsed.into_iter().zip(&fields) {
            match cell {
                Some(c) => row.push(c),
                None => {
                    return Err(CsvError {
                        message: format!(
                            "`{}` is not a number (row {}, column {})",
                            field.trim(),
                            rows.len() + 1,
                            row.len() + 1
                        ),
                        span: *span,
                    })
                }
            }
        }
        if let Some(prev) = rows.first() {
            if prev.len() != row.len() {
                return Err(CsvError {
                    message: format!(
                        "row {} has {} columns, the first row has {}",
                        rows.len() + 1,
                        row.len(),
                        prev.len()
                    ),
                    span: Span::new(start, start + content.len()),
                });
            }
        }
        rows.push(row);
    }
    let ncols = rows.first().map_or(0, Vec::len);
    let nrows = rows.len();
    Ok(RawValue {
        dims: vec![nrows, ncols],
        cells: rows.into_iter().flatten().collect(),
        table: true,
    })
}

fn split_fields(line: &str, line_start: usize) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    let mut pos = line_start;
    for field in line.split(',') {
        let lead = field.len() - field.trim_start().len();
        let trimmed = field.trim();
        let s = pos + lead;
        out.push((
            trimmed.trim_matches('"').to_string(),
            Span::new(s, s + trimmed.len().max(1).min(field.len().max(1))),
        ));
        pos += field.len() + 1;
    }
    out
}

fn parse_cell(field: &str, span: Span) -> Option<Cell> {
    let value: f64 = field.parse().ok()?;
    let is_int = !field.contains(['.', 'e', 'E']) && value.is_finite();
    Some(Cell { value, is_int, span })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_row_is_skipped_and_cells_keep_spans() {
        let t = parse_csv("a,b\n1,2.5\n3,4\n").unwrap();
        assert_eq!(t.dims, vec![2, 2]);
        assert!(t.cells[0].is_int);
        assert!(!t.cells[1].is_int);
        assert_eq!(t.cells[1].span, Span::new(6, 9));
    }

    #[test]
    fn non_numeric_cell_after_header_names_row_and_column() {
        let e = parse_csv("1,2\n3,x\n").unwrap_err();
        assert!(e.message.contains("row 2, column 2"), "{}", e.message);
    }

    #[test]
    fn ragged_rows_are_an_error() {
        assert!(parse_csv("1,2\n3\n").is_err());
    }
}
