//! An opt-in breakdown of where a run spends its time: `MVI_TIMING=1 mvi run …` prints, on
//! stderr, the wall time and call count of every phase (Laplace mode, Hessian, ELBO
//! evaluations, fresh-draw ELBO, predict, …) and counters such as objective evaluations.
//!
//! Input: [`span`] guards and [`count`] calls placed in the pipeline. Output: [`take`] the
//! records gathered since the last call, [`render`] them as a table; nothing here prints
//! (the application does: `term::print_timings`). When the variable is unset (the usual
//! case) a span costs one relaxed load and records nothing. `MVI_TIMING=trace` also shows
//! every iteration of the Laplace and Gaussian-family optimisers (objective, gradient norm),
//! handed to the caller's [`super::Observer::trace_line`].

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One phase or counter: total seconds (0 for pure counters), calls, and summed count.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The phase's name, e.g. `"laplace: hessian"`.
    pub name: &'static str,
    /// Wall time summed over the calls.
    pub seconds: f64,
    /// Number of spans or `count` calls.
    pub calls: usize,
    /// Sum of the counts given to [`count`] (0 for spans).
    pub count: usize,
}

/// Records in order of first appearance, merged by name.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    records: Vec<Record>,
}

impl Timings {
    /// Add `seconds` and `count` to the record `name` (created at the end when new).
    pub fn add(&mut self, name: &'static str, seconds: f64, count: usize) {
        match self.records.iter_mut().find(|r| r.name == name) {
            Some(r) => {
                r.seconds += seconds;
                r.calls += 1;
                r.count += count;
            }
            None => self.records.push(Record {
                name,
                seconds,
                calls: 1,
                count,
            }),
        }
    }

    /// The records.
    pub fn records(&self) -> &[Record] {
        &self.records
    }
}

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
static GLOBAL: Mutex<Timings> = Mutex::new(Timings { records: Vec::new() });

/// Whether `MVI_TIMING=trace`: besides the table, every optimiser iteration is printed.
pub fn trace_enabled() -> bool {
    enabled() && std::env::var_os("MVI_TIMING").is_some_and(|v| v == "trace")
}

/// Whether `MVI_TIMING` is set to something other than `0` or empty.
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var_os("MVI_TIMING").is_some_and(|v| !v.is_empty() && v != "0");
            STATE.store(if on { ON } else { OFF }, Ordering::Relaxed);
            on
        }
    }
}

fn add(name: &'static str, seconds: f64, count: usize) {
    if let Ok(mut t) = GLOBAL.lock() {
        t.add(name, seconds, count);
    }
}

/// A running phase; its wall time is recorded when it is dropped.
#[must_use = "the phase is timed until the guard is dropped"]
pub struct Span {
    name: &'static str,
    start: Option<Instant>,
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(t) = self.start {
            add(self.name, t.elapsed().as_secs_f64(), 0);
        }
    }
}

/// Time the phase `name` until the returned guard is dropped.
pub fn span(name: &'static str) -> Span {
    Span {
        name,
        start: enabled().then(Instant::now),
    }
}

/// Add `n` to the counter `name` (e.g. objective evaluations, points evaluated).
pub fn count(name: &'static str, n: usize) {
    if enabled() {
        add(name, 0.0, n);
    }
}

/// The records gathered since the last call, leaving none behind.
pub fn take() -> Timings {
    GLOBAL
        .lock()
        .map(|mut t| std::mem::take(&mut *t))
        .unwrap_or_default()
}

/// The records as an aligned table: name, milliseconds, calls, ms per call, count.
pub fn render(t: &Timings) -> String {
    let width = t
        .records
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "{:<width$}  {:>10}  {:>7}  {:>9}  {:>10}\n",
        "phase", "ms", "calls", "ms/call", "count"
    );
    for r in &t.records {
        let ms = 1e3 * r.seconds;
        let per = ms / r.calls.max(1) as f64;
        let pad = width - r.name.chars().count();
        out.push_str(&format!(
            "{}{:pad$}  {ms:>10.2}  {:>7}  {per:>9.3}  {:>10}\n",
            r.name, "", r.calls, r.count
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_merge_by_name_in_order_of_first_appearance() {
        let mut t = Timings::default();
        t.add("b", 0.5, 0);
        t.add("a", 0.0, 3);
        t.add("b", 0.25, 0);
        t.add("a", 0.0, 4);
        let r = t.records();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].name, r[0].calls), ("b", 2));
        assert!((r[0].seconds - 0.75).abs() < 1e-15);
        assert_eq!((r[1].name, r[1].calls, r[1].count), ("a", 2, 7));
    }

    #[test]
    fn render_gives_one_aligned_line_per_record() {
        let mut t = Timings::default();
        t.add("laplace: mode", 0.002, 0);
        t.add("elbo evaluations", 0.0, 12);
        let text = render(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("laplace: mode") && lines[1].contains("2.00"));
        assert!(lines[2].trim_end().ends_with("12"));
        assert_eq!(lines[1].find("  ").map(|i| i >= 13), Some(true));
    }
}
