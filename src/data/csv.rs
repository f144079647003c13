//! Reading one variable from a CSV file with the `csv` crate: numeric cells,
//! comma-separated, an optional header row (a first line with any non-numeric field), blank
//! lines skipped, a UTF-8 byte order mark ignored. A header with no rows is a table of 0 rows
//! and as many columns as the header names (how pandas writes an empty data frame), so it
//! binds `N = 0`; a file with neither is an error.
//!
//! The file is read as a stream into one `Vec<f64>` (row-major): no text and no span is kept.
//! A diagnostic that needs a cell's place finds it again in the file's text with
//! [`cell_span`] and [`record_span`].

use super::{RawValue, Span};
use std::io::Read;

/// Where in a CSV file a problem is: found again in the text when a diagnostic is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Field `field` (from 0) of the record that starts at byte `record`.
    Cell {
        /// The record's first byte.
        record: u64,
        /// The field, from 0.
        field: usize,
    },
    /// The whole record that starts at byte `record`.
    Record(u64),
    /// The file's start.
    Start,
}

/// A problem in a CSV file, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub place: Place,
    /// What to try.
    pub help: &'static str,
}

const LAYOUT_HELP: &str = "a CSV file holds one variable: numbers separated by commas, one row per \
                           line, after an optional header line";

/// Rows read before the value's size is estimated from the bytes they took.
const ROWS_TO_ESTIMATE: usize = 64;

/// Read a CSV stream into a table `[rows, cols]` (row-major values). `size` (the file's
/// length in bytes, 0 if unknown) sizes the vector of values once, so a large file is not
/// copied while it grows.
///
/// # Errors
/// A non-numeric cell after the header, rows of different lengths, an empty file, or a
/// failed read.
pub fn read_csv<R: Read>(reader: R, size: u64) -> Result<RawValue, CsvError> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader);
    let mut record = ::csv::ByteRecord::new();
    let mut values: Vec<f64> = Vec::new();
    let (mut rows, mut ncols) = (0usize, None::<usize>);
    let mut header_width = None;
    let mut first = true;
    let mut first_start = 0;
    loop {
        let more = rdr.read_byte_record(&mut record).map_err(|e| CsvError {
            message: format!("cannot read the file: {e}"),
            place: Place::Start,
            help: LAYOUT_HELP,
        })?;
        if !more {
            break;
        }
        if is_blank(&record) {
            continue;
        }
        let start = record.position().map_or(0, |p| p.byte());
        if first {
            first = false;
            if record.iter().any(|f| parse_field(f).is_none()) {
                header_width = Some(record.len());
                continue;
            }
        }
        let width = *ncols.get_or_insert(record.len());
        if width != record.len() {
            return Err(CsvError {
                message: format!(
                    "row {} has {} columns, the first row has {width}",
                    rows + 1,
                    record.len()
                ),
                place: Place::Record(start),
                help: LAYOUT_HELP,
            });
        }
        if rows == 0 {
            first_start = start;
        }
        for (j, field) in record.iter().enumerate() {
            let Some(x) = parse_field(field) else {
                return Err(CsvError {
                    message: format!(
                        "`{}` is not a number (row {}, column {})",
                        String::from_utf8_lossy(field.trim_ascii()).trim_matches('"'),
                        rows + 1,
                        j + 1
                    ),
                    place: Place::Cell {
                        record: start,
                        field: j,
                    },
                    help: LAYOUT_HELP,
                });
            };
            values.push(x);
        }
        rows += 1;
        if rows == ROWS_TO_ESTIMATE && size > 0 {
            let used = rdr.position().byte().saturating_sub(first_start).max(1);
            let left = size.saturating_sub(rdr.position().byte());
            let more_rows = (left as f64 / used as f64 * rows as f64 * 1.02) as usize;
            values.reserve(more_rows.saturating_mul(width) + width);
        }
    }
    if rows == 0 && header_width.is_none() {
        return Err(CsvError {
            message: "the file is empty: no header and no rows".into(),
            place: Place::Start,
            help: "for a variable with no entries (N = 0), write the header line alone",
        });
    }
    values.shrink_to_fit();
    Ok(RawValue::table(
        vec![rows, ncols.or(header_width).unwrap_or(0)],
        values,
    ))
}

/// A line with nothing but spaces is skipped, as an empty line is.
fn is_blank(record: &::csv::ByteRecord) -> bool {
    record.len() == 1 && record[0].trim_ascii().is_empty()
}

/// A field as a number: spaces around it are ignored; `nan` and `inf` are numbers (the data
/// checks report them).
fn parse_field(field: &[u8]) -> Option<f64> {
    let f = field.trim_ascii();
    if f.is_empty() {
        return None;
    }
    fast_float2::parse(f).ok()
}

/// The record the `csv` reader placed at byte `start` (its position counts the blank lines
/// before a record, and the byte order mark before the first, into the record), without
/// its line end: where its text starts, and the text.
fn record_text(text: &str, start: u64) -> (usize, &str) {
    let mut start = (start as usize).min(text.len());
    if start == 0 && text.starts_with('\u{feff}') {
        start = 3;
    }
    while text[start..].starts_with(['\n', '\r']) {
        start += 1;
    }
    let line = text[start..].split(['\n', '\r']).next().unwrap_or("");
    (start, line)
}

/// Where the record that starts at byte `start` of `text` stands.
pub fn record_span(text: &str, start: u64) -> Span {
    let (s, line) = record_text(text, start);
    Span::new(s, s + line.len().max(1).min(text.len() - s))
}

/// Where field `field` of the record that starts at byte `start` stands: the field without
/// the spaces around it (one character if it is empty).
pub fn cell_span(text: &str, start: u64, field: usize) -> Span {
    let (s, line) = record_text(text, start);
    let mut pos = s;
    let mut quoted = false;
    let mut field_start = s;
    let mut k = 0;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                if k == field {
                    return trimmed(text, field_start, s + i);
                }
                k += 1;
                field_start = s + i + 1;
            }
            _ => {}
        }
        pos = s + i + c.len_utf8();
    }
    if k == field {
        trimmed(text, field_start, pos.max(field_start))
    } else {
        record_span(text, start)
    }
}

fn trimmed(text: &str, a: usize, b: usize) -> Span {
    let field = &text[a..b];
    let lead = field.len() - field.trim_start().len();
    let len = field.trim().len();
    let start = a + lead;
    Span::new(start, start + len.max(1).min(text.len() - start.min(text.len())))
}

/// Where the number in data row `row`, column `col` (both from 0) of a CSV text stands,
/// found by reading the records again as [`read_csv`] did.
pub fn locate(text: &str, row: usize, col: usize) -> Option<Span> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut record = ::csv::ByteRecord::new();
    let mut first = true;
    let mut k = 0;
    while rdr.read_byte_record(&mut record).ok()? {
        if is_blank(&record) {
            continue;
        }
        if std::mem::take(&mut first) && record.iter().any(|f| parse_field(f).is_none()) {
            continue;
        }
        if k == row {
            let start = record.position().map_or(0, |p| p.byte());
            return Some(cell_span(text, start, col));
        }
        k += 1;
    }
    None
}

/// Read a CSV text (tests and `csv("…")` literals in small programs).
///
/// # Errors
/// As [`read_csv`].
pub fn parse_csv(text: &str) -> Result<RawValue, CsvError> {
    read_csv(text.as_bytes(), text.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_of(text: &str, e: &CsvError) -> Span {
        match e.place {
            Place::Cell { record, field } => cell_span(text, record, field),
            Place::Record(r) => record_span(text, r),
            Place::Start => Span::new(0, 1),
        }
    }

    #[test]
    fn header_row_is_skipped() {
        let t = parse_csv("a,b\n1,2.5\n3,4\n").unwrap();
        assert_eq!(t.dims, vec![2, 2]);
        assert_eq!(t.values, vec![1.0, 2.5, 3.0, 4.0]);
    }

    #[test]
    fn non_numeric_cell_after_header_names_row_and_column_and_is_found_again() {
        let text = "a,b\n1,2\n3, xy \n";
        let e = parse_csv(text).unwrap_err();
        assert!(
            e.message.contains("`xy` is not a number (row 2, column 2)"),
            "{}",
            e.message
        );
        let s = span_of(text, &e);
        assert_eq!(&text[s.start as usize..s.end as usize], "xy");
    }

    #[test]
    fn a_header_without_rows_is_a_table_of_no_rows() {
        let t = parse_csv("a,b,c\n").unwrap();
        assert_eq!(t.dims, vec![0, 3]);
        assert!(t.values.is_empty());
    }

    #[test]
    fn a_byte_order_mark_does_not_make_a_header() {
        let t = parse_csv("\u{feff}1.5\n2.5\n").unwrap();
        assert_eq!(t.dims, vec![2, 1]);
        assert_eq!(t.values, vec![1.5, 2.5]);
    }

    #[test]
    fn blank_lines_and_crlf_are_skipped() {
        let t = parse_csv("x,y\r\n\r\n1,2\r\n  \r\n3,4\r\n\n").unwrap();
        assert_eq!(t.dims, vec![2, 2]);
        assert_eq!(t.values, vec![1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let e = parse_csv("\n \n").unwrap_err();
        assert!(e.message.contains("empty"), "{}", e.message);
    }

    #[test]
    fn ragged_rows_are_an_error_at_the_row() {
        let text = "1,2\n3\n";
        let e = parse_csv(text).unwrap_err();
        assert!(e.message.contains("row 2 has 1 columns"), "{}", e.message);
        assert_eq!(span_of(text, &e), Span::new(4, 5));
    }

    #[test]
    fn a_number_is_found_again_by_row_and_column() {
        let text = "\u{feff}a,b\n\n1, 2\n3,4.5\n";
        let s = locate(text, 1, 1).unwrap();
        assert_eq!(&text[s.start as usize..s.end as usize], "4.5");
        let s = locate(text, 0, 1).unwrap();
        assert_eq!(&text[s.start as usize..s.end as usize], "2");
    }

    #[test]
    fn quoted_numbers_are_numbers() {
        let t = parse_csv("\"1.5\",\"2\"\n").unwrap();
        assert_eq!(t.values, vec![1.5, 2.0]);
    }

    #[test]
    fn a_large_file_is_sized_once() {
        let text: String = (0..1000).map(|i| format!("{i},{}.5\n", i * 2)).collect();
        let t = read_csv(text.as_bytes(), text.len() as u64).unwrap();
        assert_eq!(t.dims, vec![1000, 2]);
        assert!((t.values[1999] - 1998.5).abs() < 1e-12);
    }
}
