//! Every bad model and data file in `tests/bad/` (`check_*.mvi`, `data_*.mvi`) gives
//! diagnostics, never a model and never a panic; the rendered diagnostics are snapshots.
//!
//! Data for `tests/bad/S.mvi` is `tests/bad/S.json` if it exists, plus every
//! `tests/bad/S.VAR.csv` (or `.npy`) as `--data VAR=tests/bad/S.VAR.csv`, plus each line
//! of `tests/bad/S.args` as a `--data` argument (tables: `t.parquet`, `X=t.parquet:a,b`).

use std::path::{Path, PathBuf};

fn relative(path: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

fn data_args(model: &Path) -> Vec<String> {
    let stem = model
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_string();
    let dir = model.parent().unwrap();
    let mut args = Vec::new();
    let json = dir.join(format!("{stem}.json"));
    if json.is_file() {
        args.push(relative(&json).display().to_string());
    }
    let mut csvs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv" || e == "npy"))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&format!("{stem}."))
        })
        .collect();
    csvs.sort();
    for csv in csvs {
        let name = csv.file_name().unwrap().to_str().unwrap();
        let var = name
            .trim_start_matches(&format!("{stem}."))
            .trim_end_matches(".csv")
            .trim_end_matches(".npy");
        args.push(format!("{var}={}", relative(&csv).display()));
    }
    if let Ok(lines) = std::fs::read_to_string(dir.join(format!("{stem}.args"))) {
        args.extend(lines.lines().filter(|l| !l.trim().is_empty()).map(str::to_string));
    }
    args
}

fn render(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::set_current_dir(root).unwrap();
    let model = relative(path);
    match mvi::check::load_model(&model, &data_args(path)) {
        Ok(_) => panic!("{} checked clean but should fail", model.display()),
        Err(diags) => {
            assert!(!diags.is_empty());
            for d in &diags {
                assert!(
                    !d.labels.is_empty() || d.code.contains("unreadable"),
                    "{} gives a diagnostic without a span: {}",
                    model.display(),
                    d.message
                );
                // every diagnostic says what to do about it
                assert!(
                    d.help.as_ref().is_some_and(|h| !h.trim().is_empty()),
                    "{} gives a diagnostic without a help line: {}",
                    model.display(),
                    d.message
                );
            }
            diags
                .iter()
                .map(|d| d.render_plain(100))
                .collect::<Vec<_>>()
                .join("\n")
        }
    }
}

#[test]
fn bad_check_models_give_diagnostics() {
    insta::glob!("../bad", "check_*.mvi", |path| {
        insta::assert_snapshot!(render(path));
    });
}

#[test]
fn bad_data_gives_diagnostics() {
    insta::glob!("../bad", "data_*.mvi", |path| {
        insta::assert_snapshot!(render(path));
    });
}
