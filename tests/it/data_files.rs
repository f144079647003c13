//! Data from NumPy `.npy` files, Parquet and Arrow (Feather) tables, as pandas and NumPy
//! write them (`tests/data/make_table_fixtures.py`), bind to the same values as JSON and
//! CSV; bad files exit 2 with a diagnostic.

use crate::common::{mvi, root};
use mvi::data::{load_data_args, Value};
use nalgebra::DMatrix;

const MODEL: &str = "data {\n  X: matrix[N, D]\n  y: ints[N]\n}\nparam {\n  w: vector[D]\n}\nmodel {\n  w ~ normal(0, 1)\n  y ~ bernoulli_logit(X * w)\n}\n";

/// The columns x1, x2 of tests/data/table.*, as a matrix.
fn expected_x() -> DMatrix<f64> {
    DMatrix::from_row_slice(4, 2, &[0.5, 1.0, -1.25, 0.0, 2.0, -2.5, 3.5, 4.0])
}

/// Bind `MODEL` (or `model`) with these `--data` arguments, run from the repository root.
fn bind(model: &str, args: &[&str]) -> Result<mvi::data::BoundData, Vec<mvi::diagnostic::Diagnostic>> {
    std::env::set_current_dir(root()).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let set = load_data_args(&args)?;
    mvi::check::check_source(model, "m.mvi", root(), &set).map(|t| t.data)
}

fn matrix(b: &mvi::data::BoundData, name: &str) -> DMatrix<f64> {
    match b.get(name) {
        Some(Value::Matrix(m)) => m.clone(),
        other => panic!("`{name}` is {other:?}"),
    }
}

#[test]
fn npy_parquet_and_feather_give_the_same_matrix_and_labels() {
    let cases: [&[&str]; 5] = [
        &["X=tests/data/X.npy", "y=tests/data/y.npy"],
        &["X=tests/data/X_fortran.npy", "y=tests/data/table.parquet:y"],
        &["X=tests/data/table.parquet:x1,x2", "y=tests/data/table.parquet:y"],
        &[
            "X=tests/data/table_zstd.parquet:x1,x2",
            "y=tests/data/table_zstd.parquet:y",
        ],
        &["X=tests/data/table.feather:x1,x2", "y=tests/data/table.feather:y"],
    ];
    for args in cases {
        let b = bind(MODEL, args).unwrap_or_else(|d| panic!("{args:?}: {}", d[0].render_plain(100)));
        assert_eq!(matrix(&b, "X"), expected_x(), "{args:?}");
        assert_eq!(b.get("y"), Some(&Value::Ints(vec![1, 0, 1, 1])), "{args:?}");
        assert_eq!((b.size("N"), b.size("D")), (Some(4), Some(2)), "{args:?}");
    }
}

#[test]
fn a_table_binds_its_columns_by_name_and_lists_the_rest_as_ignored() {
    let model = "data {\n  x1: vector[N]\n  y: ints[N]\n  flag: ints[N]\n}\nparam {\n  w: real\n}\nmodel {\n  w ~ normal(0, 1)\n  y ~ bernoulli_logit(w * x1)\n}\n";
    let b = bind(model, &["tests/data/table.parquet"]).unwrap();
    match b.get("x1") {
        Some(Value::Vector(v)) => assert_eq!(v.as_slice(), &[0.5, -1.25, 2.0, 3.5]),
        other => panic!("x1 is {other:?}"),
    }
    assert_eq!(b.get("flag"), Some(&Value::Ints(vec![1, 0, 1, 0])));
    assert_eq!(b.ignored, vec!["x2 (tests/data/table.parquet)".to_string()]);
}

#[test]
fn a_whole_table_is_a_matrix_of_its_columns_in_order() {
    let model = "data {\n  T: matrix[N, K]\n}\nparam {\n  w: real\n}\nmodel {\n  w ~ normal(0, 1)\n}\n";
    let b = bind(model, &["T=tests/data/table.feather"]).unwrap();
    let t = matrix(&b, "T");
    assert_eq!(t.shape(), (4, 4));
    assert_eq!(t.column(2).as_slice(), &[1.0, 0.0, 1.0, 1.0]);
    assert_eq!(t.column(3).as_slice(), &[1.0, 0.0, 1.0, 0.0]);
}

#[test]
fn a_float_column_of_whole_numbers_binds_to_ints_and_a_fraction_does_not() {
    let model = "data {\n  x2: ints[N]\n}\nparam {\n  w: real\n}\nmodel {\n  w ~ normal(0, 1)\n}\n";
    let e = bind(model, &["tests/data/table.parquet"]).unwrap_err();
    assert_eq!(e[0].code, "mvi::data::not_int");
    assert!(e[0].message.contains("entry 3"), "{}", e[0].message);
    assert!(
        e[0].render_plain(100).contains("x2: ints[N]"),
        "{}",
        e[0].render_plain(100)
    );
}

#[test]
fn bad_table_and_array_files_exit_2_with_a_help_line() {
    let cases = [
        ("tests/bad/data_parquet_corrupt.parquet", "as a Parquet file"),
        ("X=tests/data/table.parquet:x1,nope", "has no column"),
        ("X=tests/bad/data_npy_complex.X.npy", "complex numbers"),
        ("X=tests/data/no_such.npy", "cannot read data file"),
    ];
    for (arg, message) in cases {
        let o = mvi(&["check", "tests/bad/data_npy_complex.mvi", "--data", arg]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{arg}: {err}");
        assert!(!err.contains("panicked"), "{arg}: {err}");
        assert!(err.contains(message), "{arg}: no `{message}` in {err}");
        assert!(err.contains("help:"), "{arg}: no help line in {err}");
    }
}
