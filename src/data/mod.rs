//! Loading data files and binding them to a model's `data { }` block.
//!
//! Input: the `--data` arguments (`data.json`, `NAME=file.csv`, `NAME=file.npy`, Parquet and
//! Arrow IPC tables), arrays added with [`DataSet::add_array`], the model's data
//! declarations and its directory (for `csv("path")` values). Output: [`BoundData`], every
//! declared value with its concrete shape, the size variables bound from the shapes, and the
//! names of ignored entries. Every value has been checked against its declaration: shape,
//! int-ness and declared constraints. Files are read here and nowhere else in the library.
//!
//! Layout conventions: JSON is Stan's (nested arrays, a matrix row by row); a CSV or `.npy`
//! file holds one variable (a single column or a single row for a vector or `ints`, a table
//! for a matrix; a CSV file has an optional header row); a table file binds each column by
//! its name, or a matrix from its columns (see [`table`]).
//!
//! Numbers are stored as one `Vec<f64>` per value, 8 bytes each. Only JSON and model literals
//! keep their text and a span per number; a diagnostic about a CSV number reads the file
//! again to find it, and one about a number in a file without text (NumPy, Parquet, Arrow,
//! an array from Python) points at the declaration and says the row and column.

// `Diagnostic` is the project's one user-facing error type and is returned by value by design.
#![allow(clippy::result_large_err)]

pub mod csv;
pub mod draws;
pub mod json;
pub mod npy;
pub mod table;

use crate::diagnostic::Diagnostic;
use crate::syntax::span::Span;
use json::Json;
use miette::NamedSource;
use nalgebra::{DMatrix, DVector};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// A value as read from a file, before it meets its declaration: dims and the numbers,
/// stored as one `Vec<f64>` (8 bytes a number; no span per number).
#[derive(Debug, Clone, PartialEq)]
pub struct RawValue {
    /// `[]` scalar, `[n]` array, `[r, c]` nested array or table.
    pub dims: Vec<usize>,
    /// The numbers, row by row (or column by column when `col_major`).
    pub values: Vec<f64>,
    /// `values` hold a table column by column (Parquet, Arrow, Fortran-order `.npy`).
    pub col_major: bool,
    /// Read from a table (a single row or column may stand for a vector).
    pub table: bool,
    /// Where each number stands in its source's text, in the order of `values`: kept only
    /// for JSON and model literals. A CSV number is found again by reading the file.
    pub spans: Vec<Span>,
}

impl RawValue {
    /// A value without spans, row by row.
    pub fn new(dims: Vec<usize>, values: Vec<f64>) -> Self {
        RawValue {
            dims,
            values,
            col_major: false,
            table: false,
            spans: Vec::new(),
        }
    }

    /// A table `[rows, cols]` given row by row.
    pub fn table(dims: Vec<usize>, values: Vec<f64>) -> Self {
        RawValue {
            table: true,
            ..RawValue::new(dims, values)
        }
    }

    /// An entry with no value (it could not be read).
    fn empty() -> Self {
        RawValue::new(vec![], vec![])
    }

    fn shape(&self) -> (usize, usize) {
        match self.dims.as_slice() {
            [r, c] => (*r, *c),
            _ => (self.values.len(), 1),
        }
    }

    /// The row-major index of the number stored at `i`.
    pub fn row_major_index(&self, i: usize) -> usize {
        let (r, c) = self.shape();
        if self.col_major && r > 0 {
            (i % r) * c + i / r
        } else {
            i
        }
    }

    /// Where the number at column-major index `i` is stored.
    pub fn storage_of_col_major(&self, i: usize) -> usize {
        let (r, c) = self.shape();
        if self.col_major || self.dims.len() < 2 || c == 0 {
            i
        } else {
            (i % r) * c + i / r
        }
    }
}

/// Where a data entry came from: a file's name, and how to find a number in it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The file's name as given (or `<data>`).
    pub name: String,
    /// The text, kept for JSON and for model literals.
    text: Option<String>,
    /// The file, read again when a diagnostic needs its text (CSV).
    path: Option<PathBuf>,
    /// A CSV text: numbers are found again by reading its records.
    csv: bool,
}

impl Source {
    /// A source whose text is kept (JSON, a model's literals).
    pub fn text(name: &str, text: String) -> Self {
        Source {
            name: name.to_string(),
            text: Some(text),
            path: None,
            csv: false,
        }
    }

    /// A source without text (NumPy, Parquet and Arrow files, arrays from Python):
    /// diagnostics point at the declaration and say the row and column.
    pub fn binary(name: &str) -> Self {
        Source {
            name: name.to_string(),
            text: None,
            path: None,
            csv: false,
        }
    }

    fn csv_file(name: &str, path: &Path) -> Self {
        Source {
            name: name.to_string(),
            text: None,
            path: Some(path.to_path_buf()),
            csv: true,
        }
    }

    /// The source's text: kept, or read again from its file; `None` for binary sources.
    pub fn read_text(&self) -> Option<String> {
        if let Some(t) = &self.text {
            return Some(t.clone());
        }
        let bytes = std::fs::read(self.path.as_ref()?).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A diagnostic source for this file, if it has a text.
    pub fn named_source(&self) -> Option<NamedSource<String>> {
        self.read_text().map(|t| NamedSource::new(self.name.clone(), t))
    }

    /// Where the number stored at `i` of `value` stands in `text`.
    pub fn span_of(&self, value: &RawValue, text: &str, i: usize) -> Option<Span> {
        if let Some(s) = value.spans.get(i) {
            return Some(*s);
        }
        if !self.csv {
            return None;
        }
        let k = value.row_major_index(i);
        let cols = value.dims.get(1).copied().unwrap_or(1).max(1);
        csv::locate(text, k / cols, k % cols)
    }
}

/// One entry of a data file.
#[derive(Debug, Clone)]
pub struct RawEntry {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: RawValue,
    /// Which file it came from.
    pub source: Arc<Source>,
    /// Where the whole value (or its key) stands in the source's text.
    pub span: Span,
    /// Why the value could not be read (reported only if the model declares the name).
    pub problem: Option<Problem>,
}

/// Why an entry's value could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Where, in the source's text (unused for a source without text).
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// What to try, if more is known than for any data value.
    pub help: Option<String>,
}

impl Problem {
    /// A problem in a file without text, with what to try.
    pub fn new(message: String, help: String) -> Self {
        Problem {
            span: Span::new(0, 0),
            message,
            help: Some(help),
        }
    }
}

/// Data files as read, before binding.
#[derive(Debug, Clone, Default)]
pub struct DataSet {
    /// The files, in the order given.
    pub sources: Vec<Arc<Source>>,
    /// Their entries; a later entry with the same name wins.
    pub entries: Vec<RawEntry>,
}

impl DataSet {
    fn find(&self, name: &str) -> Option<&RawEntry> {
        self.entries.iter().rev().find(|e| e.name == name)
    }

    fn push(&mut self, source: &Arc<Source>, name: &str, value: RawValue) -> usize {
        self.entries.push(RawEntry {
            name: name.to_string(),
            value,
            source: source.clone(),
            span: Span::new(0, 1),
            problem: None,
        });
        self.entries.len() - 1
    }

    /// Add an array of numbers (an array from Python, say) as the value of `name`: `dims`
    /// is `[]` for a scalar, `[n]` for a vector or `ints`, `[rows, cols]` for a matrix, and
    /// `values` hold the numbers row by row. Its problems are reported with the row and
    /// column, pointing at the declaration, under the file name `file`.
    ///
    /// # Errors
    /// More than two dims, or `values` not of the dims' size.
    pub fn add_array(
        &mut self,
        file: &str,
        name: &str,
        dims: Vec<usize>,
        values: Vec<f64>,
    ) -> Result<(), Diagnostic> {
        let size: usize = dims.iter().product();
        if dims.len() > 2 || size != values.len() {
            return Err(Diagnostic::plain(
                "mvi::data::array_shape",
                format!(
                    "data `{name}` has shape {dims:?} ({} numbers given): mvi data have at most two dims",
                    values.len()
                ),
            )
            .with_help("pass a scalar, a 1-D array (vector or `ints`) or a 2-D array (matrix)"));
        }
        let source = self.binary_source(file);
        self.push(&source, name, RawValue::new(dims, values));
        Ok(())
    }

    /// The source named `file` without text, shared by the entries added from it.
    fn binary_source(&mut self, file: &str) -> Arc<Source> {
        if let Some(s) = self
            .sources
            .iter()
            .find(|s| s.name == file && s.text.is_none() && !s.csv)
        {
            return s.clone();
        }
        let s = Arc::new(Source::binary(file));
        self.sources.push(s.clone());
        s
    }
}

/// Read the `--data` arguments: `file.json`, `NAME=file.csv`, `NAME=file.npy`,
/// `table.parquet` (each column binds the variable of its name), `NAME=table.parquet`
/// (the whole table) or `NAME=table.parquet:a,b` (the named columns, in that order); Arrow
/// IPC files (`.arrow`, `.feather`, `.ipc`) like Parquet. Paths are relative to the current
/// directory.
///
/// # Errors
/// A file that cannot be read or parsed.
pub fn load_data_args(args: &[String]) -> Result<DataSet, Vec<Diagnostic>> {
    let mut set = DataSet::default();
    let mut errors = Vec::new();
    for arg in args {
        if let Err(d) = add_data_arg(&mut set, arg) {
            errors.push(d);
        }
    }
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

fn add_data_arg(set: &mut DataSet, arg: &str) -> Result<(), Diagnostic> {
    if let Some((name, spec)) = arg.split_once('=').filter(|(n, _)| is_identifier(n)) {
        if let Some((path, columns)) = table::split_columns(spec) {
            return table::add_table(set, Some(name), Path::new(path), columns.as_deref());
        }
        if has_extension(spec, "npy") {
            return npy::add_npy(set, name, Path::new(spec));
        }
        return add_csv(set, name, Path::new(spec));
    }
    if table::split_columns(arg).is_some_and(|(_, cols)| cols.is_none()) {
        return table::add_table(set, None, Path::new(arg), None);
    }
    for ext in ["csv", "npy"] {
        if has_extension(arg, ext) {
            let stem = Path::new(arg).file_stem().and_then(|s| s.to_str()).unwrap_or("X");
            let kind = if ext == "csv" { "a CSV" } else { "a NumPy" };
            return Err(Diagnostic::plain(
                if ext == "csv" {
                    "mvi::data::csv_without_name"
                } else {
                    "mvi::data::npy_without_name"
                },
                format!("`{arg}` is {kind} file but no variable is named for it"),
            )
            .with_help(format!(
                "{kind} file holds one variable: pass `--data {stem}={arg}`"
            )));
        }
    }
    if table::split_columns(arg).is_some() {
        return Err(Diagnostic::plain(
            "mvi::data::columns_without_name",
            format!("`{arg}` picks columns but names no variable for them"),
        )
        .with_help(format!("name the matrix they make: `--data X={arg}`")));
    }
    add_json(set, Path::new(arg))
}

fn has_extension(path: &str, ext: &str) -> bool {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::plain(
        "mvi::data::unreadable",
        format!("cannot read data file `{}`: {e}", path.display()),
    )
    .with_help("check the path; relative paths are taken from the current directory")
}

fn read_file(path: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(path).map_err(|e| unreadable(path, e))
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
    let spans: Vec<Span> = items
        .iter()
        .map(|(_, kspan, value)| entry_span(&text, *kspan, value.span()))
        .collect();
    let source = Arc::new(Source::text(name, text));
    for ((key, _, value), span) in items.into_iter().zip(spans) {
        // A value we cannot read is only an error if the model declares it.
        let (value, problem) = match json_to_raw(&value) {
            Ok(raw) => (raw, None),
            Err((span, message)) => (
                RawValue::empty(),
                Some(Problem {
                    span,
                    message,
                    help: None,
                }),
            ),
        };
        set.entries.push(RawEntry {
            name: key,
            value,
            source: source.clone(),
            span,
            problem,
        });
    }
    set.sources.push(source);
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
    let mut values = Vec::new();
    let mut spans = Vec::new();
    let mut push = |x: &Json| -> Result<(), (Span, String)> {
        let (value, span) = number(x)?;
        values.push(value);
        spans.push(span);
        Ok(())
    };
    let dims = match v {
        Json::Number { .. } => {
            push(v)?;
            vec![]
        }
        // no nested array: a vector, so a non-number entry is reported where it is
        Json::Array(items, _) if !items.iter().any(|i| matches!(i, Json::Array(..))) => {
            items.iter().try_for_each(&mut push)?;
            vec![items.len()]
        }
        Json::Array(items, _) => {
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
                r.iter().try_for_each(&mut push)?;
            }
            vec![items.len(), ncols.unwrap_or(0)]
        }
        Json::Object(_, span) => {
            return Err((*span, "expected a number or an array, found an object".into()))
        }
        Json::Other(what, span) => return Err((*span, format!("expected a number, found {what}"))),
    };
    Ok(RawValue {
        spans,
        ..RawValue::new(dims, values)
    })
}

fn number(v: &Json) -> Result<(f64, Span), (Span, String)> {
    match v {
        Json::Number { value, span, .. } => Ok((*value, *span)),
        Json::Other(what, span) => Err((*span, format!("expected a number, found {what}"))),
        other => Err((other.span(), "expected a number".into())),
    }
}

/// Add one CSV file as the value of `name`, read as a stream: the file's text is not kept.
///
/// # Errors
/// The file cannot be read or holds a non-numeric cell or ragged rows.
pub fn add_csv(set: &mut DataSet, name: &str, path: &Path) -> Result<(), Diagnostic> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let size = file.metadata().map_or(0, |m| m.len());
    let source = Arc::new(Source::csv_file(&path.display().to_string(), path));
    let raw = csv::read_csv(std::io::BufReader::with_capacity(1 << 16, file), size)
        .map_err(|e| csv_error(name, &source, &source.read_text().unwrap_or_default(), e))?;
    set.sources.push(source.clone());
    let i = set.push(&source, name, raw);
    set.entries[i].span = Span::new(0, usize::from(size > 0));
    Ok(())
}

/// Add a CSV text as the value of `name`, under the file name `file`; returns the entry index.
///
/// # Errors
/// As [`add_csv`].
pub fn add_csv_text(set: &mut DataSet, name: &str, file: &str, text: String) -> Result<usize, Diagnostic> {
    let source = Source {
        csv: true,
        ..Source::text(file, text)
    };
    let text = source.text.as_deref().unwrap_or_default();
    let raw = csv::parse_csv(text).map_err(|e| csv_error(name, &source, text, e))?;
    let empty = text.is_empty();
    let source = Arc::new(source);
    set.sources.push(source.clone());
    let i = set.push(&source, name, raw);
    set.entries[i].span = Span::new(0, usize::from(!empty));
    Ok(i)
}

fn csv_error(name: &str, source: &Source, text: &str, e: csv::CsvError) -> Diagnostic {
    let file = &source.name;
    let span = match e.place {
        csv::Place::Cell { record, field } => csv::cell_span(text, record, field),
        csv::Place::Record(r) => csv::record_span(text, r),
        csv::Place::Start => Span::new(0, text.len().min(1)),
    };
    Diagnostic::error(
        "mvi::data::malformed_csv",
        if text.trim().is_empty() {
            // no line for a label to point at
            format!("malformed CSV for `{name}` in `{file}`: {}", e.message)
        } else {
            format!("malformed CSV for `{name}` in `{file}`")
        },
        NamedSource::new(file.clone(), text.to_string()),
    )
    .with_label(span, e.message)
    .with_help(e.help)
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
        assert!((e.value.values[1] - 2.0).abs() < 1e-12);
        assert_eq!(e.value.spans.len(), 6);
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
