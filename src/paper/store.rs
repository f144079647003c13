//! The resumable results store of `mvi bench paper`: one JSON object per line in
//! `results.jsonl`, one line per finished (table, set, split, method).
//!
//! Input: [`Record`]s as they finish. Output: the file, and on the next run the records
//! already there, so that finished work is skipped. Each record is written with one
//! `write` call and synced; a line cut short by an interruption (no final newline, or not
//! valid JSON) is cut off when the store is opened, so the file never holds a corrupt
//! record that later lines would follow.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The store's file name inside `--out`.
pub const FILE_NAME: &str = "results.jsonl";

/// One finished fit (or the hyperparameter search of a split, method `search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `II`, `III` or `V` (Table III holds IV's error rates, V holds VI's).
    pub table: String,
    /// The data set.
    pub set: String,
    /// 0-based split (or generated data set) index.
    pub split: usize,
    /// The method, or `search` for the (M, r, α) search of the logistic protocol, or
    /// `select` for `fixed-centres-select`'s choice of features (`centres`: the chosen M,
    /// `None` for the inputs; `seconds`: the time of the `laplace` fit not chosen).
    pub method: String,
    /// The test LPD of eq. 13 divided by the number of test points.
    pub lpd: Option<f64>,
    /// The pointwise lppd divided by the number of test points.
    pub lppd: Option<f64>,
    /// Test error rate (classifiers).
    pub error: Option<f64>,
    /// Test mean squared error (regression).
    pub mse: Option<f64>,
    /// Fresh-draw ELBO.
    pub elbo: Option<f64>,
    /// Laplace log evidence (laplace and the search).
    pub log_evidence: Option<f64>,
    /// Hyperparameters (name, constrained value): the learned ones, or the search's best start.
    pub theta: Vec<(String, f64)>,
    /// Number of RBF centres M (logistic protocol).
    pub centres: Option<usize>,
    /// Wall time of this step in seconds.
    pub seconds: f64,
    /// Iterations of the method's main optimisation (absent in stores from before they
    /// were kept, as are the three fields below).
    #[serde(default)]
    pub iterations: Option<usize>,
    /// Whether that optimisation met its stopping rule before `max_iters`.
    #[serde(default)]
    pub converged: Option<bool>,
    /// Dimension D, and the fixed samples S asked for (a note says when S grew against
    /// over-fitting).
    #[serde(default)]
    pub dim_samples: Option<(usize, Option<usize>)>,
    /// The fit's notes (not converged, S grown, PSIS k̂ …), as the summary prints them.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why the fit failed, when it did (kept so that it is not retried on every run).
    pub failed: Option<String>,
}

impl Record {
    /// A record with only its key and time filled in.
    pub fn new(table: &str, set: &str, split: usize, method: &str) -> Record {
        Record {
            table: table.to_string(),
            set: set.to_string(),
            split,
            method: method.to_string(),
            lpd: None,
            lppd: None,
            error: None,
            mse: None,
            elbo: None,
            log_evidence: None,
            theta: Vec::new(),
            centres: None,
            seconds: 0.0,
            iterations: None,
            converged: None,
            dim_samples: None,
            notes: Vec::new(),
            failed: None,
        }
    }

    /// The record's key.
    pub fn key(&self) -> Key {
        (
            self.table.clone(),
            self.set.clone(),
            self.split,
            self.method.clone(),
        )
    }

    /// A hyperparameter's value by name.
    pub fn theta_value(&self, name: &str) -> Option<f64> {
        self.theta.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// (table, set, split, method).
pub type Key = (String, String, usize, String);

/// The open store: the records on disk and the file to append to.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    records: Vec<Record>,
    index: HashMap<Key, usize>,
}

impl Store {
    /// Open (or create) `dir/results.jsonl`, read its complete records and cut off a final
    /// line left incomplete by an interruption.
    ///
    /// # Errors
    /// An I/O error creating the directory or reading or truncating the file.
    pub fn open(dir: &Path) -> io::Result<Store> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let (records, good_len) = parse_complete(&text);
        if good_len < text.len() {
            OpenOptions::new()
                .write(true)
                .open(&path)?
                .set_len(good_len as u64)?;
        }
        let mut store = Store {
            path,
            records: Vec::new(),
            index: HashMap::new(),
        };
        for r in records {
            store.remember(r);
        }
        Ok(store)
    }

    fn remember(&mut self, r: Record) {
        let key = r.key();
        match self.index.get(&key) {
            Some(&i) => self.records[i] = r,
            None => {
                self.index.insert(key, self.records.len());
                self.records.push(r);
            }
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The finished record with this key, if any.
    pub fn get(&self, table: &str, set: &str, split: usize, method: &str) -> Option<&Record> {
        let key = (table.to_string(), set.to_string(), split, method.to_string());
        self.index.get(&key).map(|&i| &self.records[i])
    }

    /// Whether this key is finished.
    pub fn contains(&self, table: &str, set: &str, split: usize, method: &str) -> bool {
        self.get(table, set, split, method).is_some()
    }

    /// Every record, in the order first written.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Append `r` as one line (a single write, then fsync) and remember it.
    ///
    /// # Errors
    /// An I/O error opening, writing or syncing the file.
    pub fn append(&mut self, r: Record) -> io::Result<()> {
        let mut line = serde_json::to_string(&r).map_err(io::Error::other)?;
        line.push('\n');
        let mut f: File = OpenOptions::new().create(true).append(true).open(&self.path)?;
        f.write_all(line.as_bytes())?;
        f.sync_data()?;
        self.remember(r);
        Ok(())
    }
}

/// The records of every complete line (newline-terminated, valid JSON) up to the first bad
/// one, and the byte length of that good prefix.
fn parse_complete(text: &str) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut good = 0;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        match serde_json::from_str::<Record>(line.trim_end()) {
            Ok(r) => out.push(r),
            Err(_) if line.trim().is_empty() => {}
            Err(_) => break,
        }
        good += line.len();
    }
    (out, good)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mvi-paper-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn rec(split: usize, method: &str, lpd: f64) -> Record {
        let mut r = Record::new("III", "thyroid", split, method);
        r.lpd = Some(lpd);
        r
    }

    #[test]
    fn records_survive_reopening_and_are_found_by_key() {
        let d = scratch("reopen");
        let mut s = Store::open(&d).unwrap();
        s.append(rec(0, "laplace", -0.5)).unwrap();
        s.append(rec(0, "mvi_lr", -0.4)).unwrap();
        let s = Store::open(&d).unwrap();
        assert_eq!(s.records().len(), 2);
        assert!(s.contains("III", "thyroid", 0, "mvi_lr"));
        assert!(!s.contains("III", "thyroid", 1, "mvi_lr"));
        assert_eq!(
            s.get("III", "thyroid", 0, "laplace").and_then(|r| r.lpd),
            Some(-0.5)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_line_cut_short_is_dropped_and_truncated_before_the_next_append() {
        let d = scratch("cut");
        let mut s = Store::open(&d).unwrap();
        s.append(rec(0, "laplace", -0.5)).unwrap();
        // An interrupted write: half a record, no newline.
        let mut f = OpenOptions::new().append(true).open(d.join(FILE_NAME)).unwrap();
        f.write_all(b"{\"table\":\"III\",\"set\":\"thy").unwrap();
        drop(f);
        let mut s = Store::open(&d).unwrap();
        assert_eq!(s.records().len(), 1);
        s.append(rec(1, "laplace", -0.7)).unwrap();
        let text = std::fs::read_to_string(d.join(FILE_NAME)).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.lines().all(|l| serde_json::from_str::<Record>(l).is_ok()),
            "{text}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_record_from_before_the_convergence_fields_still_reads() {
        let old = r#"{"table":"V","set":"crabs","split":0,"method":"vi_diag","lpd":-1.4,"lppd":-1.4,"error":0.8,"mse":null,"elbo":-230.8,"log_evidence":-104.8,"theta":[["alpha",7e-7]],"centres":20,"seconds":3.7,"failed":null}"#;
        let r: Record = serde_json::from_str(old).unwrap();
        assert_eq!((r.iterations, r.converged, r.dim_samples), (None, None, None));
        assert!(r.notes.is_empty());
    }

    #[test]
    fn a_later_record_with_the_same_key_replaces_the_earlier() {
        let d = scratch("replace");
        let mut s = Store::open(&d).unwrap();
        s.append(rec(0, "laplace", -0.5)).unwrap();
        s.append(rec(0, "laplace", -0.3)).unwrap();
        let s = Store::open(&d).unwrap();
        assert_eq!(s.records().len(), 1);
        assert_eq!(s.records()[0].lpd, Some(-0.3));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
