//! Reading tables from Parquet files (the `parquet` crate) and Arrow IPC files (`.arrow`,
//! `.feather`, `.ipc`; the `arrow-ipc` crate).
//!
//! Three ways to bind a table (the `--data` argument after `=`, or alone):
//! - `table.parquet`: each column is the value of the data variable of its name (a vector or
//!   `ints` of one entry per row);
//! - `X=table.parquet`: the whole table is the value of `X` (a matrix, in the file's column
//!   order; a table of one column may stand for a vector);
//! - `X=table.parquet:a,b,c`: the named columns, in that order, are the value of `X`
//!   (`y=table.parquet:label` for one column).
//!
//! Columns of floats, integers and booleans (as 0/1) are read, batch by batch, into one
//! `Vec<f64>` stored column by column. A column with nulls or of another type (strings,
//! dates, nested values), or a named column the file lacks, gives an entry with a problem
//! (reported at the declaration, only if the model declares it); a file that is not a
//! Parquet or Arrow file is an error.

use super::{unreadable, DataSet, Problem, RawValue};
use crate::diagnostic::Diagnostic;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, SchemaRef};
use std::fs::File;
use std::path::Path;

/// File name endings read as tables.
const TABLE_EXTENSIONS: &[&str] = &["parquet", "pq", "arrow", "feather", "ipc"];

/// Rows read at a time.
const BATCH_ROWS: usize = 1 << 16;

/// Split `path[:a,b,c]` when `path` ends in a table extension: the path and the named
/// columns, if any.
pub fn split_columns(spec: &str) -> Option<(&str, Option<Vec<String>>)> {
    if is_table(spec) {
        return Some((spec, None));
    }
    let (path, cols) = spec.rsplit_once(':')?;
    is_table(path).then(|| {
        let names = cols.split(',').map(|c| c.trim().to_string()).collect();
        (path, Some(names))
    })
}

fn is_table(path: &str) -> bool {
    let ext = Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or("");
    TABLE_EXTENSIONS.iter().any(|t| ext.eq_ignore_ascii_case(t))
}

fn is_parquet(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ext.eq_ignore_ascii_case("parquet") || ext.eq_ignore_ascii_case("pq")
}

/// A column as numbers, or what is wrong with it and what to try.
type Column = Result<Vec<f64>, (String, String)>;

/// Add a table file: each column under its own name (`name` is `None`), or the whole table
/// or the named `columns` as the value of `name`.
///
/// # Errors
/// The file cannot be opened, or is not a Parquet or Arrow IPC file.
pub fn add_table(
    set: &mut DataSet,
    name: Option<&str>,
    path: &Path,
    columns: Option<&[String]>,
) -> Result<(), Diagnostic> {
    let file_name = path.display().to_string();
    let file = File::open(path).map_err(|e| unreadable(path, e))?;
    let (schema, batches) = open(path, file).map_err(|e| not_a_table(path, &e))?;
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let wanted: Vec<String> = match (name, columns) {
        (Some(_), Some(cols)) => cols.to_vec(),
        _ => names.clone(),
    };
    let present: Vec<&String> = wanted.iter().filter(|c| names.contains(c)).collect();
    let (rows, cols) = read_columns(batches, &present).map_err(|e| not_a_table(path, &e))?;
    let source = set.binary_source(&file_name);
    let Some(name) = name else {
        for (col, data) in present.iter().zip(cols) {
            let i = set.push(&source, col, RawValue::new(vec![rows], vec![]));
            match data {
                Ok(values) => set.entries[i].value.values = values,
                Err((m, h)) => set.entries[i].problem = Some(Problem::new(m, h)),
            }
        }
        return Ok(());
    };
    let i = set.push(&source, name, RawValue::new(vec![], vec![]));
    if let Some(missing) = wanted.iter().find(|c| !names.contains(c)) {
        set.entries[i].problem = Some(missing_column(missing, &names, &file_name));
        return Ok(());
    }
    match matrix(rows, &wanted, &present, cols) {
        Ok(value) => set.entries[i].value = value,
        Err((m, h)) => set.entries[i].problem = Some(Problem::new(m, h)),
    }
    Ok(())
}

/// The columns `wanted` (each read once, in `present`) as one table stored column by column.
fn matrix(
    rows: usize,
    wanted: &[String],
    present: &[&String],
    cols: Vec<Column>,
) -> Result<RawValue, (String, String)> {
    let mut by_name: Vec<(&String, Option<Vec<f64>>)> = Vec::new();
    for (c, data) in present.iter().zip(cols) {
        by_name.push((c, Some(data?)));
    }
    let mut values = Vec::with_capacity(rows * wanted.len());
    for w in wanted {
        let k = by_name
            .iter()
            .position(|(c, _)| *c == w)
            .expect("every wanted column is present");
        // a column named twice is copied twice; otherwise each is freed once copied
        let twice = wanted.iter().filter(|x| *x == w).count() > 1;
        match (twice, &mut by_name[k].1) {
            (true, Some(col)) => values.extend_from_slice(col),
            (false, slot) => values.extend(slot.take().expect("each column is taken once")),
            (true, None) => unreachable!("a column named twice is never taken"),
        }
    }
    Ok(RawValue {
        col_major: true,
        table: true,
        ..RawValue::new(vec![rows, wanted.len()], values)
    })
}

fn missing_column(missing: &str, names: &[String], file: &str) -> Problem {
    let close = crate::check::error::did_you_mean(missing, names.iter().map(String::as_str));
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let help = format!("`{file}` has the columns {list}");
    Problem::new(
        format!("`{file}` has no column `{missing}`"),
        match close {
            Some(c) => format!("{c} {help}"),
            None => help,
        },
    )
}

fn not_a_table(path: &Path, e: &str) -> Diagnostic {
    let kind = if is_parquet(path) {
        "a Parquet"
    } else {
        "an Arrow IPC"
    };
    Diagnostic::plain(
        "mvi::data::unreadable_table",
        format!("cannot read `{}` as {kind} file: {e}", path.display()),
    )
    .with_help(
        "the file is damaged or of another format: write it again (pandas: `df.to_parquet(path)` \
         or `df.to_feather(path)`), and name Parquet files `.parquet`, Arrow IPC files `.arrow`, \
         `.feather` or `.ipc`",
    )
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>>>;

/// The file's schema and its record batches.
fn open(path: &Path, file: File) -> Result<(SchemaRef, Batches), String> {
    if is_parquet(path) {
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| e.to_string())?
            .with_batch_size(BATCH_ROWS);
        let schema = builder.schema().clone();
        let reader = builder.build().map_err(|e| e.to_string())?;
        return Ok((schema, Box::new(reader)));
    }
    match arrow_ipc::reader::FileReader::try_new_buffered(file, None) {
        Ok(r) => Ok((r.schema(), Box::new(r))),
        // the stream format (`.arrows`, `pyarrow.ipc.new_stream`) has no footer
        Err(file_error) => {
            let file = File::open(path).map_err(|e| e.to_string())?;
            let r = arrow_ipc::reader::StreamReader::try_new_buffered(file, None)
                .map_err(|_| file_error.to_string())?;
            Ok((r.schema(), Box::new(r)))
        }
    }
}

/// Read the columns `present` from every batch: the number of rows and each column.
///
/// # Errors
/// A batch that cannot be read (a damaged file).
fn read_columns(batches: Batches, present: &[&String]) -> Result<(usize, Vec<Column>), String> {
    let mut cols: Vec<Column> = present.iter().map(|_| Ok(Vec::new())).collect();
    let mut rows = 0;
    for batch in batches {
        let batch = batch.map_err(|e| e.to_string())?;
        for (name, col) in present.iter().zip(&mut cols) {
            let Ok(out) = col else { continue };
            let array = batch.column_by_name(name).expect("the column is in the schema");
            if let Err(e) = append(name, array, rows, out) {
                *col = Err(e);
            }
        }
        rows += batch.num_rows();
    }
    Ok((rows, cols))
}

/// Append an Arrow array's numbers to `out`; `before` rows were read before it.
fn append(name: &str, a: &ArrayRef, before: usize, out: &mut Vec<f64>) -> Result<(), (String, String)> {
    if a.null_count() > 0 {
        let first = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
        return Err((
            format!(
                "column `{name}` has missing values (nulls), the first at row {}",
                before + first + 1
            ),
            "data may not have missing values: drop or impute those rows first (pandas: \
             `df.dropna()`)"
                .to_string(),
        ));
    }
    match a.data_type() {
        DataType::Float64 => out.extend_from_slice(a.as_primitive::<Float64Type>().values()),
        DataType::Float32 => out.extend(
            a.as_primitive::<Float32Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::Int64 => out.extend(a.as_primitive::<Int64Type>().values().iter().map(|&x| x as f64)),
        DataType::Int32 => out.extend(
            a.as_primitive::<Int32Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::Int16 => out.extend(
            a.as_primitive::<Int16Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::Int8 => out.extend(
            a.as_primitive::<Int8Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::UInt64 => out.extend(a.as_primitive::<UInt64Type>().values().iter().map(|&x| x as f64)),
        DataType::UInt32 => out.extend(
            a.as_primitive::<UInt32Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::UInt16 => out.extend(
            a.as_primitive::<UInt16Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::UInt8 => out.extend(
            a.as_primitive::<UInt8Type>()
                .values()
                .iter()
                .map(|&x| f64::from(x)),
        ),
        DataType::Boolean => out.extend(a.as_boolean().values().iter().map(|b| f64::from(u8::from(b)))),
        other => {
            let what = match other {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Dictionary(..) => {
                    "strings".to_string()
                }
                t => format!("values of type {t}"),
            };
            return Err((
                format!("column `{name}` holds {what}, not numbers"),
                "data are real numbers, integers or booleans: convert the column first (pandas: \
                 `pd.to_numeric(df[col])`, or category codes for labels)"
                    .to_string(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_split_only_after_a_table_file() {
        assert_eq!(split_columns("t.parquet"), Some(("t.parquet", None)));
        let (p, c) = split_columns("d/t.feather:x1, x2").unwrap();
        assert_eq!(p, "d/t.feather");
        assert_eq!(c.unwrap(), vec!["x1".to_string(), "x2".to_string()]);
        assert_eq!(split_columns("X.csv"), None);
        assert_eq!(split_columns("C:/data/X.csv"), None);
    }
}
