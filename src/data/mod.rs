//! Loading data files and binding them to a model's `data { }` block.
//!
//! Input: the `--data` arguments (`data.json`, or `NAME=file.csv`), the model's data
//! declarations and its directory (for `csv("path")` values). Output: [`BoundData`], every
//! declared value with its concrete shape, the size variables bound from the shapes, and the
//! names of ignored entries. Every value has been checked against its declaration: shape,
//! int-ness and declared constraints. Files are read here and nowhere else in the library.
//!
//! Layout conventions: JSON is Stan's (nested arrays, a matrix row by row); a CSV file holds
//! one variable (a single column or a single row for a vector or `ints`, a table for a
//! matrix; an optional header row).

// `Diagnostic` is the project's one user-facing error type and is returned by value by design.
#![allow(clippy::result_large_err)]

pub mod csv;
pub mod draws;
pub mod json;

use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;
use json::Json;
use miette::NamedSource;
use nalgebra::{DMatrix, DVector};
use std::path::{Path, PathBuf};

/// A bound data value, in the form lowering reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `int`
    Int(i64),
    /// `real`
    Real(f64),
    /// `vector[n]`
    Vector(DVector<f64>),
    /// `matrix[n, m]`
    Matrix(DMatrix<f64>),
    /// `ints[n]`
    Ints(Vec<i64>),
}

impl Value {
    /// The value as a real scalar, if it is one.
    pub fn as_scalar(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(x) => Some(*x),
            _ => None,
        }
    }

    /// Element `i` (0-based, column-major for matrices) as a real.
    pub fn element(&self, i: usize) -> Option<f64> {
        match self {
            Value::Int(_) | Value::Real(_) => (i == 0).then(|| self.as_scalar()).flatten(),
            Value::Vector(v) => v.get(i).copied(),
            Value::Matrix(m) => m.as_slice().get(i).copied(),
            Value::Ints(v) => v.get(i).map(|&k| k as f64),
        }
    }
}

/// All data of a run, bound to the model's declarations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundData {
    /// Each declared data name with its value, in declaration order.
    pub values: Vec<(String, Value)>,
    /// Size variables bound from data shapes (`N` in `matrix[N, Q]`), in binding order.
    pub sizes: Vec<(String, i64)>,
    /// Entries in the data files that the model does not declare, as `name (file)`.
    pub ignored: Vec<String>,
}

impl BoundData {
    /// The value of a data name.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The value of a size variable.
    pub fn size(&self, name: &str) -> Option<i64> {
        self.sizes.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// One number in a data file, with where it stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Its value.
    pub value: f64,
    /// Written as an integer.
    pub is_int: bool,
    /// Where it stands in its file.
    pub span: Span,
}

/// A value as read from a file, before it meets its declaration: dims and row-major cells.
#[derive(Debug, Clone, PartialEq)]
pub struct RawValue {
    /// `[]` scalar, `[n]` array, `[r, c]` nested array or table.
    pub dims: Vec<usize>,
    /// Cells in row-major order.
    pub cells: Vec<Cell>,
    /// Read from a CSV table (a single row or column may stand for a vector).
    pub table: bool,
}

/// One entry of a data file.
#[derive(Debug, Clone)]
pub struct RawEntry {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: RawValue,
    /// Which source (index into [`DataSet::sources`]).
    pub source: usize,
    /// Where the whole value (or its key) stands.
    pub span: Span,
    /// Why the value could not be read (reported only if the model declares the name).
    pub problem: Option<(Span, String)>,
}

/// Data files as read, before binding.
#[derive(Debug, Clone, Default)]
pub struct DataSet {
    /// The files' names and texts.
    pub sources: Vec<(String, String)>,
    /// Their entries; a later entry with the same name wins.
    pub entries: Vec<RawEntry>,
}

impl DataSet {
    /// A diagnostic source for file `i`.
    pub fn named_source(&self, i: usize) -> NamedSource<String> {
        let (n, t) = &self.sources[i];
        NamedSource::new(n.clone(), t.clone())
    }

    fn find(&self, name: &str) -> Option<&RawEntry> {
        self.entries.iter().rev().find(|e| e.name == name)
    }
}

/// Read the `--data` arguments: `file.json` or `NAME=file.csv` (relative to the current directory).
///
/// # Errors
/// A file that cannot be read or parsed.
pub fn load_data_args(args: &[String]) -> Result<DataSet, Vec<Diagnostic>> {
    let mut set = DataSet::default();
    let mut errors = Vec::new();
    for arg in args {
        let result = match arg.split_once('=') {
            Some((name, path)) if is_identifier(name) => add_csv(&mut set, name, Path::new(path)),
            _ if arg.to_ascii_lowercase().ends_with(".csv") => {
                let stem = Path::new(arg).file_stem().and_then(|s| s.to_str()).unwrap_or("X");
                Err(Diagnostic::plain(
                    "mvi::data::csv_without_name",
                    format!("`{arg}` is a CSV file but no variable is named for it"),
                )
                .with_help(format!(
                    "a CSV file holds one variable: pass `--data {stem}={arg}`"
                )))
            }
            _ => add_json(&mut set, Path::new(arg)),
        };
        if let Err(d) = result {
            errors.push(d);
        }
    }
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn read_file(path: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::plain(
            "mvi::data::unreadable",
            format!("cannot read data file `{}`: {e}", path.display()),
        )
        .with_help("check the path; relative paths are taken from the current directory")
    })
}

/// Add a Stan-style JSON file's entries to `set`.
///
/// # Errors
/// The file cannot be read, is not JSON, is not an object, or holds a value that is not a
/// number or a (nested) array of numbers.
pub fn add_json(set: &mut DataSet, path: &Path) -> Result<(), Diagnostic> {
    let text = read_file(path)?;
    add_json_text(set, &path.display().to_string(), text)
}

/// Add a JSON text's entries to `set` under the file name `name`.
///
/// # Errors
/// As [`add_json`].
pub fn add_json_text(set: &mut DataSet, name: &str, text: String) -> Result<(), Diagnostic> {
    let src = NamedSource::new(name, text.clone());
    let json = json::parse_json(&text).map_err(|e| {
        Diagnostic::error(
            "mvi::data::malformed_json",
            format!("malformed JSON in `{name}`: {}", e.message),
            src.clone(),
        )
        .with_label(e.span, e.message.clone())
        .with_help(
            "data files are Stan-style JSON: one object mapping each name to a number or a \
             (nested) array of numbers",
        )
    })?;
    let Json::Object(items, _) = json else {
        return Err(Diagnostic::error(
            "mvi::data::not_an_object",
            format!("`{name}` must hold a JSON object"),
            src,
        )
        .with_label(json.span(), "expected `{ \"name\": value, ... }`"));
    };
    let index = set.sources.len();
    for (key, kspan, value) in items {
        let span = entry_span(&text, kspan, value.span());
        match json_to_raw(&value) {
            Ok(raw) => set.entries.push(RawEntry {
                name: key,
                value: raw,
                source: index,
                span,
                problem: None,
            }),
            // A value we cannot read is only an error if the model declares it.
            Err(problem) => set.entries.push(RawEntry {
                name: key,
                value: RawValue {
                    dims: vec![],
                    cells: vec![],
                    table: false,
                },
                source: index,
                span,
                problem: Some(problem),
            }),
        }
    }
    set.sources.push((name.to_string(), text));
    Ok(())
}

/// Longest value a diagnostic underlines whole; a longer one is marked by its key and its
/// first character, so a snippet never prints a whole matrix.
const LONGEST_MARKED_VALUE: usize = 60;

/// Where an entry stands: `"key": value` when the value is short and on one line, else
/// `"key": [`.
fn entry_span(text: &str, key: Span, value: Span) -> Span {
    let whole = key.join(value);
    let long = value.end - value.start > LONGEST_MARKED_VALUE as u32
        || text
            .get(whole.start as usize..whole.end as usize)
            .is_some_and(|t| t.contains('\n'));
    if long {
        key.join(Span::new(value.start as usize, value.start as usize + 1))
    } else {
        whole
    }
}

fn json_to_raw(v: &Json) -> Result<RawValue, (Span, String)> {
    match v {
        Json::Number { value, is_int, span } => Ok(RawValue {
            dims: vec![],
            cells: vec![Cell {
                value: *value,
                is_int: *is_int,
                span: *span,
            }],
            table: false,
        }),
        Json::Array(items, _) => {
            // no nested array: a vector, so a non-number entry is reported where it is
            if !items.iter().any(|i| matches!(i, Json::Array(..))) {
                let cells = items.iter().map(number_cell).collect::<Result<Vec<_>, _>>()?;
                return Ok(RawValue {
                    dims: vec![cells.len()],
                    cells,
                    table: false,
                });
            }
            let mut cells = Vec::new();
            let mut ncols = None;
            for row in items {
                let Json::Array(r, rspan) = row else {
                    return Err((row.span(), "expected a row (an array of numbers)".into()));
                };
                if *ncols.get_or_insert(r.len()) != r.len() {
                    return Err((
                        *rspan,
                        format!(
                            "this row has {} entries, the first has {}",
                            r.len(),
                            ncols.unwrap_or(0)
                        ),
                    ));
                }
                for x in r {
                    cells.push(number_cell(x)?);
                }
            }
            Ok(RawValue {
                dims: vec![items.len(), ncols.unwrap_or(0)],
                cells,
                table: false,
            })
        }
        Json::Object(_, span) => Err((*span, "expected a number or an array, found an object".into())),
        Json::Other(what, span) => Err((*span, format!("expected a number, found {what}"))),
    }
}

fn number_cell(v: &Json) -> Result<Cell, (Span, String)> {
    match v {
        Json::Number { value, is_int, span } => Ok(Cell {
            value: *value,
            is_int: *is_int,
            span: *span,
        }),
        Json::Other(what, span) => Err((*span, format!("expected a number, found {what}"))),
        other => Err((other.span(), "expected a number".into())),
    }
}

/// Add one CSV file as the value of `name`.
///
/// # Errors
/// The file cannot be read or holds a non-numeric cell or ragged rows.
pub fn add_csv(set: &mut DataSet, name: &str, path: &Path) -> Result<(), Diagnostic> {
    let text = read_file(path)?;
    add_csv_text(set, name, &path.display().to_string(), text).map(|_| ())
}

/// Add a CSV text as the value of `name`, under the file name `file`; returns the entry index.
///
/// # Errors
/// As [`add_csv`].
pub fn add_csv_text(set: &mut DataSet, name: &str, file: &str, text: String) -> Result<usize, Diagnostic> {
    let raw = csv::parse_csv(&text).map_err(|e| {
        Diagnostic::error(
            "mvi::data::malformed_csv",
            if text.trim().is_empty() {
                // no line for a label to point at
                format!("malformed CSV for `{name}` in `{file}`: {}", e.message)
            } else {
                format!("malformed CSV for `{name}` in `{file}`")
            },
            NamedSource::new(file, text.clone()),
        )
        .with_label(e.span, e.message)
        .with_help(e.help)
    })?;
    let index = set.sources.len();
    let span = Span::new(0, text.len().min(1));
    set.sources.push((file.to_string(), text));
    set.entries.push(RawEntry {
        name: name.to_string(),
        value: raw,
        source: index,
        span,
        problem: None,
    });
    Ok(set.entries.len() - 1)
}

mod bind;
pub use bind::{bind_data, eval_const_expr, ConstEnv};

/// Resolve a `csv("path")` value's path against the model's directory.
pub fn resolve_relative(model_dir: &Path, path: &str) -> PathBuf {
    model_dir.join(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matrix_is_read_row_major() {
        let mut set = DataSet::default();
        add_json_text(&mut set, "d.json", r#"{"X": [[1, 2, 3], [4, 5, 6]]}"#.into()).unwrap();
        let e = &set.entries[0];
        assert_eq!(e.value.dims, vec![2, 3]);
        assert!((e.value.cells[1].value - 2.0).abs() < 1e-12);
    }

    #[test]
    fn json_ragged_matrix_is_kept_as_unreadable_entry() {
        let mut set = DataSet::default();
        add_json_text(&mut set, "d.json", r#"{"X": [[1, 2], [3]]}"#.into()).unwrap();
        assert!(set.entries[0].problem.is_some());
    }

    #[test]
    fn non_object_json_is_an_error() {
        let mut set = DataSet::default();
        assert!(add_json_text(&mut set, "d.json", "[1, 2]".into()).is_err());
    }

    #[test]
    fn missing_file_is_a_diagnostic() {
        let e = load_data_args(&["/definitely/not/here.json".into()]).unwrap_err();
        assert!(e[0].message.contains("cannot read"));
    }

    #[test]
    fn a_csv_file_without_a_name_is_explained() {
        let e = load_data_args(&["X_train.csv".into()]).unwrap_err();
        assert_eq!(e[0].code, "mvi::data::csv_without_name");
        assert!(e[0].help.as_deref().unwrap_or("").contains("X_train=X_train.csv"));
    }

    #[test]
    fn identifier_detection_separates_csv_arguments() {
        assert!(is_identifier("X_test"));
        assert!(!is_identifier("C:/x"));
        assert!(!is_identifier("1a"));
    }
}
