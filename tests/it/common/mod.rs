//! Helpers shared by several test files (`mod common;` in each).

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
