//! Reading one variable from a CSV file: numeric cells, comma-separated, an optional header
//! row (a first line with any non-numeric field), blank lines skipped. A header with no rows
//! is a table of 0 rows and as many columns as the header names (how pandas writes an empty
//! data frame), so it binds `N = 0`; a file with neither is an error.

use super::{Cell, RawValue};
use crate::syntax::span::Span;

/// A problem in a CSV text, with the cell it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
    /// What to try.
    pub help: &'static str,
}

const LAYOUT_HELP: &str = "a CSV file holds one variable: numbers separated by commas, one row per \
                           line, after an optional header line";

/// Parse a CSV text into a table `[rows, cols]` (row-major cells).
///
/// # Errors
/// A non-numeric cell after the header, or rows of different lengths.
pub fn parse_csv(text: &str) -> Result<RawValue, CsvError> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    // a UTF-8 byte order mark would make the first cell non-numeric, so a file without a
    // header would lose its first row to a header it does not have
    let mut offset = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut first = true;
    let mut header_width = None;
    for line in text[offset..].split_inclusive('\n') {
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
            header_width = Some(fields.len());
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
                        help: LAYOUT_HELP,
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
                    help: LAYOUT_HELP,
                });
            }
        }
        rows.push(row);
    }
    if rows.is_empty() && header_width.is_none() {
        return Err(CsvError {
            message: "the file is empty: no header and no rows".into(),
            span: Span::new(0, text.len().min(1)),
            help: "for a variable with no entries (N = 0), write the header line alone",
        });
    }
    let ncols = rows.first().map_or(header_width.unwrap_or(0), Vec::len);
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
    fn a_header_without_rows_is_a_table_of_no_rows() {
        let t = parse_csv("a,b,c\n").unwrap();
        assert_eq!(t.dims, vec![0, 3]);
        assert!(t.cells.is_empty());
    }

    #[test]
    fn a_byte_order_mark_does_not_make_a_header() {
        let t = parse_csv("\u{feff}1.5\n2.5\n").unwrap();
        assert_eq!(t.dims, vec![2, 1]);
        assert_eq!(t.cells[0].span, Span::new(3, 6));
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let e = parse_csv("\n \n").unwrap_err();
        assert!(e.message.contains("empty"), "{}", e.message);
    }

    #[test]
    fn ragged_rows_are_an_error() {
        assert!(parse_csv("1,2\n3\n").is_err());
    }
}
