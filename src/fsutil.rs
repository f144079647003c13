//! Writing result files atomically.
//!
//! Input: bytes (or a [`FitReport`] rendered by [`crate::report`]). Output: files that are
//! either absent, the old version, or complete: each is written to a temporary file in the
//! same directory, flushed to disk, then renamed over the target. An interrupted write
//! leaves no half-written file behind.

use crate::report::{self, FitReport};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `path` atomically: temp file in the same directory, fsync, rename.
///
/// The temporary file is named `.<name>.tmp.<pid>.<n>` and is removed if any step fails.
///
/// # Errors
/// Any I/O error from creating, writing, syncing or renaming; `path` is then unchanged.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path)?;
    let result = write_then_rename(&tmp, path, bytes);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a file path", path.display()),
        )
    })?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(".{}.tmp.{}.{n}", name.to_string_lossy(), std::process::id());
    Ok(path.with_file_name(tmp_name))
}

fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(tmp, path)?;
    sync_dir(path);
    Ok(())
}

/// Best effort: make the rename itself durable by syncing the directory (Unix only).
fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Write `draws.csv` and `fit.json` (and, when `plots`, `posterior.svg` and `trace.svg`)
/// into `dir`, creating it if needed; each file atomically.
///
/// # Errors
/// An I/O error from creating the directory or writing a file, or a plot that could not be
/// drawn (as [`io::ErrorKind::Other`]). Files written before the failure stay complete.
pub fn write_output_dir(dir: &Path, report: &FitReport, plots: bool) -> io::Result<()> {
    let pairs = plots.then(|| report::svg::default_pairs(report));
    write_output_dir_with_pairs(dir, report, pairs.as_deref())
}

/// As [`write_output_dir`], with the pair plots of `posterior.svg` drawn for the given
/// column pairs; `None` writes no plots.
///
/// # Errors
/// As [`write_output_dir`].
pub fn write_output_dir_with_pairs(
    dir: &Path,
    report: &FitReport,
    pairs: Option<&[(usize, usize)]>,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    write_named(dir, "draws.csv", report::render_draws_csv(report).as_bytes())?;
    write_named(dir, "fit.json", report::render_fit_json(report).as_bytes())?;
    if let Some(pairs) = pairs {
        let posterior = report::svg::render_posterior_svg_pairs(report, pairs).map_err(io::Error::other)?;
        write_named(dir, "posterior.svg", posterior.as_bytes())?;
        let trace = report::render_trace_svg(report).map_err(io::Error::other)?;
        write_named(dir, "trace.svg", trace.as_bytes())?;
    }
    Ok(())
}

/// The files [`write_output_dir`] writes.
pub const OUTPUT_FILES: [&str; 4] = ["draws.csv", "fit.json", "posterior.svg", "trace.svg"];

/// [`write_atomic`] of `dir/name`, with the file's name in the error.
fn write_named(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_atomic(&dir.join(name), bytes).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mvi-fsutil-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn write_atomic_replaces_content_and_leaves_no_temp_file() {
        let d = scratch("replace");
        let p = d.join("out.txt");
        write_atomic(&p, b"first version, longer").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.txt")]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn write_atomic_into_missing_directory_fails_without_leftovers() {
        let d = scratch("missing");
        let p = d.join("no_such_dir").join("out.txt");
        assert!(write_atomic(&p, b"x").is_err());
        assert!(!p.exists());
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_path_without_file_name_is_rejected() {
        let e = write_atomic(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
