//! Helpers shared by the test modules (`use crate::common::…`).

use std::path::{Path, PathBuf};

/// The `.mvi` files directly in the repository's directory `dir` (e.g. `examples`,
/// `stdlib`), sorted by path; empty when the directory cannot be read.
pub fn mvi_files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mvi"))
        .collect();
    files.sort();
    files
}

/// The repository's root (the crate's manifest directory).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Run `mvi` with `args` from the repository's root, without colour.
pub fn mvi(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the mvi binary runs")
}

/// Check `src` with the data in `json` and lower it; a problem fails the test with its
/// diagnostic.
pub fn load(src: &str, json: &str) -> (mvi::check::TypedModel, mvi::graph::LogJoint) {
    let mut set = mvi::data::DataSet::default();
    mvi::data::add_json_text(&mut set, "data.json", json.to_string()).expect("the test's JSON is valid");
    let typed = mvi::check::check_source(src, "model.mvi", root(), &set)
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = mvi::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    (typed, joint)
}

/// The draws of the report's column `name`.
pub fn column(r: &mvi::report::FitReport, name: &str) -> Vec<f64> {
    let j = r
        .columns
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", r.columns));
    r.draws.column(j).iter().copied().collect()
}

/// The mean and the (n − 1) variance of `x`.
pub fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (m, x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0))
}
