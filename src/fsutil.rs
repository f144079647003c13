//! Writing files atomically.
//!
//! Input: a path and bytes. Output: a file that is either absent, the old version, or
//! complete: it is written to a temporary file in the same directory, flushed to disk, then
//! renamed over the target. An interrupted write leaves no half-written file behind. This
//! module imports nothing from the crate; `run::write_output_dir` writes a fit's results
//! files through it.

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
