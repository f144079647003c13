//! Reading one variable from a NumPy `.npy` file with the `npyz` crate: a 0-d array is a
//! scalar, a 1-d array a vector or `ints`, a 2-d array a table (a matrix, or a vector when it
//! has one row or one column), as a CSV file would be. Floats, integers and booleans (as
//! 0/1) are read; C and Fortran order are both kept without a copy. A file of another
//! dtype (complex, strings, objects, dates) or of more than two dims is kept as an entry
//! that cannot be read, reported (at the declaration) only if the model declares it.

use super::{unreadable, DataSet, Problem, RawValue};
use crate::diagnostic::Diagnostic;
use npyz::{DType, Deserialize, NpyFile, Order, TypeChar};
use std::io::Read;
use std::path::Path;

/// Add the array in the `.npy` file at `path` as the value of `name`.
///
/// # Errors
/// The file cannot be opened. A file that is not a `.npy` file, or holds an array mvi cannot
/// read, gives an entry with a problem instead.
pub fn add_npy(set: &mut DataSet, name: &str, path: &Path) -> Result<(), Diagnostic> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let source = set.binary_source(&path.display().to_string());
    let i = set.push(&source, name, RawValue::new(vec![], vec![]));
    match read_npy(std::io::BufReader::with_capacity(1 << 16, file)) {
        Ok(value) => set.entries[i].value = value,
        Err((message, help)) => set.entries[i].problem = Some(Problem::new(message, help)),
    }
    Ok(())
}

/// Read a `.npy` stream: the array, or what is wrong with it and what to try.
///
/// # Errors
/// Not a `.npy` file, a dtype that is not a number, or more than two dims.
pub fn read_npy<R: Read>(reader: R) -> Result<RawValue, (String, String)> {
    let npy = NpyFile::new(reader).map_err(|e| {
        (
            format!("not a NumPy `.npy` file ({e})"),
            "write the array with `numpy.save(\"X.npy\", X)`".to_string(),
        )
    })?;
    let dims: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    if dims.len() > 2 {
        return Err((
            format!(
                "the array has {} dims (shape {dims:?}); mvi data have at most 2",
                dims.len()
            ),
            "save a matrix as a 2-d array (`X.reshape(n, -1)`), or one `.npy` file per slice".to_string(),
        ));
    }
    let col_major = npy.order() == Order::Fortran && dims.len() == 2;
    let DType::Plain(ty) = npy.dtype() else {
        return Err(dtype_error(&npy.dtype().descr()));
    };
    let descr = ty.to_string();
    let bytes = ty.size_field();
    let values = match (ty.type_char(), bytes) {
        (TypeChar::Float, 8) => npy.into_vec::<f64>(),
        (TypeChar::Float, 4) => convert(npy, |x: f32| f64::from(x)),
        (TypeChar::Int, 8) => convert(npy, |x: i64| x as f64),
        (TypeChar::Int, 4) => convert(npy, |x: i32| f64::from(x)),
        (TypeChar::Int, 2) => convert(npy, |x: i16| f64::from(x)),
        (TypeChar::Int, 1) => convert(npy, |x: i8| f64::from(x)),
        (TypeChar::Uint, 8) => convert(npy, |x: u64| x as f64),
        (TypeChar::Uint, 4) => convert(npy, |x: u32| f64::from(x)),
        (TypeChar::Uint, 2) => convert(npy, |x: u16| f64::from(x)),
        (TypeChar::Uint, 1) => convert(npy, |x: u8| f64::from(x)),
        (TypeChar::Bool, 1) => convert(npy, |x: bool| f64::from(u8::from(x))),
        _ => return Err(dtype_error(&descr)),
    }
    .map_err(|e| {
        (
            format!(
                "the file ends before its {} numbers ({e})",
                dims.iter().product::<usize>()
            ),
            "the file is cut short: write it again with `numpy.save`".to_string(),
        )
    })?;
    Ok(RawValue {
        col_major,
        table: dims.len() == 2,
        ..RawValue::new(dims, values)
    })
}

fn convert<T: Deserialize, R: Read>(npy: NpyFile<R>, f: impl Fn(T) -> f64) -> std::io::Result<Vec<f64>> {
    let reader = npy.data::<T>().map_err(std::io::Error::other)?;
    reader.map(|x| x.map(&f)).collect()
}

fn dtype_error(descr: &str) -> (String, String) {
    let what = match descr.trim_start_matches(['<', '>', '|', '=']).chars().next() {
        Some('c') => "complex numbers",
        Some('U' | 'S') => "strings",
        Some('O') => "Python objects",
        Some('M' | 'm') => "dates or times",
        _ => "values that are not numbers",
    };
    (
        format!("the array holds {what} (dtype `{descr}`)"),
        "data are real numbers, integers or booleans: convert it first, e.g. \
         `numpy.save(\"X.npy\", X.astype(float))`"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_bytes(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn f8(xs: &[f64]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_c_order_matrix_is_read_row_major() {
        let b = npy_bytes("<f8", false, "(2, 3)", &f8(&[1., 2., 3., 4., 5., 6.]));
        let v = read_npy(&b[..]).unwrap();
        assert_eq!(v.dims, vec![2, 3]);
        assert!(!v.col_major && v.table);
        assert_eq!(v.values, vec![1., 2., 3., 4., 5., 6.]);
    }

    #[test]
    fn a_fortran_order_matrix_is_kept_column_major() {
        let b = npy_bytes("<f8", true, "(2, 3)", &f8(&[1., 4., 2., 5., 3., 6.]));
        let v = read_npy(&b[..]).unwrap();
        assert!(v.col_major);
        assert_eq!(v.row_major_index(1), 3);
    }

    #[test]
    fn integers_and_booleans_are_numbers() {
        let ints: Vec<u8> = [3i32, -1].iter().flat_map(|x| x.to_le_bytes()).collect();
        let v = read_npy(&npy_bytes("<i4", false, "(2,)", &ints)[..]).unwrap();
        assert_eq!(v.values, vec![3., -1.]);
        let v = read_npy(&npy_bytes("|b1", false, "(2,)", &[1, 0])[..]).unwrap();
        assert_eq!(v.values, vec![1., 0.]);
    }

    #[test]
    fn complex_strings_and_three_dims_are_refused() {
        let e = read_npy(&npy_bytes("<c16", false, "(1,)", &[0; 16])[..]).unwrap_err();
        assert!(e.0.contains("complex"), "{}", e.0);
        let e = read_npy(&npy_bytes("<U3", false, "(1,)", &[0; 12])[..]).unwrap_err();
        assert!(e.0.contains("strings"), "{}", e.0);
        let e = read_npy(&npy_bytes("<f8", false, "(1, 1, 1)", &f8(&[1.]))[..]).unwrap_err();
        assert!(e.0.contains("3 dims"), "{}", e.0);
    }

    #[test]
    fn a_file_cut_short_or_not_npy_is_refused() {
        let e = read_npy(&npy_bytes("<f8", false, "(3,)", &f8(&[1.]))[..]).unwrap_err();
        assert!(e.0.contains("ends before"), "{}", e.0);
        let e = read_npy(&b"1,2,3\n"[..]).unwrap_err();
        assert!(e.0.contains("not a NumPy"), "{}", e.0);
    }
}
