//! The benchmark data sets of `../shared/data` (see its README): reading `X.csv`, `y.csv`
//! and the split files, random 70/30 splits for the multiclass sets, and column
//! standardisation with training statistics.
//!
//! Input: a data directory and a set name. Output: a [`Dataset`] (rows × features, 0-based
//! labels) and its splits as 0-based row indices. Every problem is a [`Diagnostic`] that
//! names the file.

use std::path::Path;

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::diagnostic::Diagnostic;

/// The 13 binary Rätsch sets of Tables III/IV, in the paper's order.
pub const BINARY_SETS: &[&str] = &[
    "banana",
    "breast_cancer",
    "diabetis",
    "flare_solar",
    "german",
    "heart",
    "image",
    "ringnorm",
    "splice",
    "thyroid",
    "titanic",
    "twonorm",
    "waveform",
];

/// The multiclass sets of Tables V/VI present in the data directory.
pub const MULTICLASS_SETS: &[&str] = &["ecoli", "crabs", "iris", "soybean", "glass", "vehicle", "balance"];

/// A standard deviation below this is treated as zero: the column is only centred.
pub const MIN_SD: f64 = 1e-12;

/// One data set: inputs (one row per example) and 0-based labels.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Its name (the directory name).
    pub name: String,
    /// N × Q inputs.
    pub x: DMatrix<f64>,
    /// N labels in `0..classes`.
    pub y: Vec<usize>,
    /// Number of classes K (the largest label + 1).
    pub classes: usize,
}

/// One train/test partition as 0-based row indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Training rows.
    pub train: Vec<usize>,
    /// Test rows.
    pub test: Vec<usize>,
}

fn read(path: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::plain(
            "mvi::paper::unreadable_data",
            format!("cannot read `{}`: {e}", path.display()),
        )
        .with_help("point `--data-dir` at the benchmark data directory (the repository's `../shared/data`)")
    })
}

fn bad_file(path: &Path, line: usize, what: &str) -> Diagnostic {
    Diagnostic::plain(
        "mvi::paper::malformed_data",
        format!("`{}` line {}: {what}", path.display(), line + 1),
    )
    .with_help("the benchmark files are comma-separated numbers; see the data directory's README.md")
}

/// Parse a CSV of numbers with one header line.
fn parse_numbers(path: &Path, text: &str) -> Result<Vec<Vec<f64>>, Diagnostic> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let row: Result<Vec<f64>, _> = line.split(',').map(|c| c.trim().parse::<f64>()).collect();
        rows.push(row.map_err(|e| bad_file(path, i, &format!("not a number ({e})")))?);
    }
    Ok(rows)
}

/// Read the set `name` from `dir/name/X.csv` and `y.csv`.
///
/// # Errors
/// A missing or malformed file, ragged rows, or labels that are not non-negative integers.
pub fn load_dataset(dir: &Path, name: &str) -> Result<Dataset, Diagnostic> {
    let xp = dir.join(name).join("X.csv");
    let yp = dir.join(name).join("y.csv");
    let rows = parse_numbers(&xp, &read(&xp)?)?;
    let labels = parse_numbers(&yp, &read(&yp)?)?;
    let q = rows.first().map_or(0, Vec::len);
    if let Some(i) = rows.iter().position(|r| r.len() != q) {
        return Err(bad_file(&xp, i + 1, &format!("expected {q} columns")));
    }
    if labels.len() != rows.len() {
        return Err(bad_file(
            &yp,
            0,
            &format!("{} labels for {} rows of X", labels.len(), rows.len()),
        ));
    }
    let mut y = Vec::with_capacity(labels.len());
    for (i, l) in labels.iter().enumerate() {
        let v = l.first().copied().unwrap_or(f64::NAN);
        if !(v >= 0.0 && v.fract().abs() < 1e-9) {
            return Err(bad_file(&yp, i + 1, "a label must be a non-negative integer"));
        }
        y.push(v as usize);
    }
    let x = DMatrix::from_fn(rows.len(), q, |i, j| rows[i][j]);
    let classes = y.iter().max().map_or(0, |m| m + 1);
    Ok(Dataset {
        name: name.to_string(),
        x,
        y,
        classes,
    })
}

fn parse_index_lines(path: &Path, text: &str, n: usize) -> Result<Vec<Vec<usize>>, Diagnostic> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let idx: Result<Vec<usize>, _> = line.split(',').map(|c| c.trim().parse::<usize>()).collect();
        let idx = idx.map_err(|e| bad_file(path, i, &format!("not a row index ({e})")))?;
        if idx.iter().any(|&k| k >= n) {
            return Err(bad_file(path, i, &format!("a row index is ≥ N = {n}")));
        }
        out.push(idx);
    }
    Ok(out)
}

/// The generated splits of a binary set (`train_idx.csv`, `test_idx.csv`), one per line.
///
/// # Errors
/// A missing or malformed file, or files with different numbers of lines.
pub fn load_splits(dir: &Path, name: &str, n: usize) -> Result<Vec<Split>, Diagnostic> {
    let tp = dir.join(name).join("train_idx.csv");
    let sp = dir.join(name).join("test_idx.csv");
    let train = parse_index_lines(&tp, &read(&tp)?, n)?;
    let test = parse_index_lines(&sp, &read(&sp)?, n)?;
    if train.len() != test.len() {
        return Err(bad_file(
            &sp,
            0,
            &format!("{} test lines for {} training lines", test.len(), train.len()),
        ));
    }
    Ok(train
        .into_iter()
        .zip(test)
        .map(|(train, test)| Split { train, test })
        .collect())
}

/// A random partition of `0..n`: `round(train_fraction · n)` training rows, the rest test,
/// both sorted; the same `seed` gives the same split.
pub fn random_split(n: usize, train_fraction: f64, seed: u64) -> Split {
    let mut rows: Vec<usize> = (0..n).collect();
    rows.shuffle(&mut StdRng::seed_from_u64(seed));
    let n_train = ((n as f64) * train_fraction).round() as usize;
    let mut train = rows[..n_train.min(n)].to_vec();
    let mut test = rows[n_train.min(n)..].to_vec();
    train.sort_unstable();
    test.sort_unstable();
    Split { train, test }
}

/// A seed derived from a set name (the sum of its code points plus `base`), so every set
/// has its own stream and adding a set does not change the others.
pub fn name_seed(name: &str, base: u64) -> u64 {
    base + name.chars().map(|c| c as u64).sum::<u64>()
}

/// The rows `idx` of `x`.
pub fn select_rows(x: &DMatrix<f64>, idx: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(idx.len(), x.ncols(), |i, j| x[(idx[i], j)])
}

/// Column means and standard deviations (divisor n − 1) of a training matrix; a column
/// whose sd is below [`MIN_SD`] gets sd 1, so it is only centred.
#[derive(Debug, Clone, PartialEq)]
pub struct Standardizer {
    /// Column means.
    pub mean: Vec<f64>,
    /// Column standard deviations (1 for constant columns).
    pub sd: Vec<f64>,
}

impl Standardizer {
    /// The statistics of `train`'s columns.
    pub fn fit(train: &DMatrix<f64>) -> Standardizer {
        let n = train.nrows() as f64;
        let mut mean = Vec::with_capacity(train.ncols());
        let mut sd = Vec::with_capacity(train.ncols());
        for col in train.column_iter() {
            let m = col.sum() / n.max(1.0);
            let ss: f64 = col.iter().map(|v| (v - m).powi(2)).sum();
            let s = if n > 1.0 { (ss / (n - 1.0)).sqrt() } else { 0.0 };
            mean.push(m);
            sd.push(if s > MIN_SD { s } else { 1.0 });
        }
        Standardizer { mean, sd }
    }

    /// `x` with the fitted means subtracted and divided by the fitted sds, column by column.
    pub fn apply(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        DMatrix::from_fn(x.nrows(), x.ncols(), |i, j| {
            (x[(i, j)] - self.mean[j]) / self.sd[j]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    #[test]
    fn standardizer_uses_training_statistics_with_n_minus_1() {
        // Column 1: 1, 2, 3 → mean 2, sd 1. Column 2 is constant → centred only.
        let train = DMatrix::from_row_slice(3, 2, &[1.0, 5.0, 2.0, 5.0, 3.0, 5.0]);
        let s = Standardizer::fit(&train);
        assert_abs_diff_eq!(s.mean[0], 2.0, epsilon = 1e-15);
        assert_abs_diff_eq!(s.sd[0], 1.0, epsilon = 1e-15);
        assert_abs_diff_eq!(s.sd[1], 1.0, epsilon = 1e-15);
        let test = DMatrix::from_row_slice(1, 2, &[4.0, 7.0]);
        let z = s.apply(&test);
        assert_abs_diff_eq!(z[(0, 0)], 2.0, epsilon = 1e-15);
        assert_abs_diff_eq!(z[(0, 1)], 2.0, epsilon = 1e-15);
    }

    #[test]
    fn standardizer_gives_unit_sd_on_the_training_data() {
        // Column 1: 0, 2, 4, 10 → mean 4, ss = 16 + 4 + 0 + 36 = 56, sd = √(56/3).
        let train = DMatrix::from_column_slice(4, 1, &[0.0, 2.0, 4.0, 10.0]);
        let s = Standardizer::fit(&train);
        assert_abs_diff_eq!(s.sd[0], (56.0f64 / 3.0).sqrt(), epsilon = 1e-12);
        let z = s.apply(&train);
        let ss: f64 = z.iter().map(|v| v * v).sum();
        assert_abs_diff_eq!(ss / 3.0, 1.0, epsilon = 1e-12);
    }

    #[test]
    fn random_split_is_a_seeded_partition_of_the_rows() {
        let a = random_split(10, 0.7, 3);
        assert_eq!(a.train.len(), 7);
        assert_eq!(a.test.len(), 3);
        let mut all: Vec<usize> = a.train.iter().chain(&a.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(a, random_split(10, 0.7, 3));
        assert_ne!(a, random_split(10, 0.7, 4));
    }

    #[test]
    fn name_seed_matches_the_data_readme() {
        // The README's split seeds are 20240501 + the code-point sum: banana → 20241110.
        assert_eq!(name_seed("banana", 20_240_501), 20_241_110);
    }

    #[test]
    fn index_lines_out_of_range_are_rejected() {
        let e = parse_index_lines(Path::new("t.csv"), "0,1,5\n", 5).unwrap_err();
        assert!(e.to_string().contains("≥ N = 5"), "{e}");
    }
}
