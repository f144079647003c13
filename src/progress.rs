//! The progress line of a running fit, and Ctrl-C handling.
//!
//! Input: per-iteration records from a method through [`crate::infer::Observer`]. Output: an
//! indicatif spinner on stderr (phase, iteration, objective, gradient norm) that appears
//! only once a fit has run for about a second, never when stderr is not a terminal or the
//! user asked for quiet; the recorded objective trace; and a `false` from
//! [`Observer::iteration`] once the shared interrupt flag is set, which makes the method stop
//! and return what it has.

use crate::infer::Observer;
use crate::posterior::IterRecord;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Fits shorter than this never show a progress line.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// An [`Observer`] that shows progress on stderr, records the trace and honours Ctrl-C.
pub struct Progress {
    enabled: bool,
    delay: Duration,
    start: Instant,
    bar: Option<ProgressBar>,
    phase: String,
    interrupt: Arc<AtomicBool>,
    interrupted: bool,
    trace: Vec<IterRecord>,
}

impl Progress {
    /// A progress observer for the terminal: shown after [`SHOW_AFTER`] when stderr is a
    /// terminal and `quiet` is false. The run stops once `interrupt` becomes true (the CLI
    /// sets it from its Ctrl-C handler).
    pub fn new(quiet: bool, interrupt: Arc<AtomicBool>) -> Self {
        let enabled = !quiet && std::io::stderr().is_terminal();
        Self::with_settings(enabled, SHOW_AFTER, interrupt)
    }

    /// A progress observer with explicit settings: whether a bar may be shown at all and
    /// after how long. The bar draws to stderr (indicatif hides it if that is not a
    /// terminal).
    pub fn with_settings(enabled: bool, delay: Duration, interrupt: Arc<AtomicBool>) -> Self {
        Progress {
            enabled,
            delay,
            start: Instant::now(),
            bar: None,
            phase: String::new(),
            interrupt,
            interrupted: false,
            trace: Vec::new(),
        }
    }

    /// Whether the progress line has been created (the fit ran past the delay and display
    /// is enabled).
    pub fn is_shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Whether the run was asked to stop through the interrupt flag.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The iterations recorded so far, in order (all phases).
    pub fn trace(&self) -> &[IterRecord] {
        &self.trace
    }

    /// Remove the progress line and return the recorded trace.
    pub fn finish(mut self) -> Vec<IterRecord> {
        self.clear();
        std::mem::take(&mut self.trace)
    }

    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Create the bar once the delay has passed, when enabled.
    fn bar(&mut self) -> Option<&ProgressBar> {
        if self.bar.is_none() && self.enabled && self.start.elapsed() >= self.delay {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            self.bar = Some(bar);
        }
        self.bar.as_ref()
    }
}

/// The text of the progress line.
pub fn progress_message(phase: &str, r: &IterRecord) -> String {
    let phase = if phase.is_empty() {
        String::new()
    } else {
        format!("{phase}: ")
    };
    format!(
        "{phase}iteration {}  objective {:.6e}  |grad| {:.3e}",
        r.iter, r.objective, r.grad_norm
    )
}

impl Observer for Progress {
    fn iteration(&mut self, record: &IterRecord) -> bool {
        self.trace.push(*record);
        if self.interrupt.load(Ordering::Relaxed) {
            self.interrupted = true;
            return false;
        }
        let msg = progress_message(&self.phase, record);
        if let Some(bar) = self.bar() {
            bar.set_message(msg);
        }
        true
    }

    fn phase(&mut self, name: &str) {
        self.phase = name.to_string();
        let msg = format!("{name}: starting");
        if crate::infer::timing::trace_enabled() {
            // `MVI_TIMING=trace`: the iterations that follow belong to this phase
            crate::term::err_out(&format!("phase {name}\n"));
        }
        if let Some(bar) = self.bar() {
            bar.set_message(msg);
        }
    }

    fn trace_line(&mut self, line: &str) {
        crate::term::err_out(line);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(iter: usize) -> IterRecord {
        IterRecord {
            iter,
            objective: -1.5 * iter as f64,
            grad_norm: 0.5,
        }
    }

    #[test]
    fn records_every_iteration_in_order() {
        let mut p = Progress::with_settings(false, SHOW_AFTER, Arc::new(AtomicBool::new(false)));
        for i in 1..=3 {
            assert!(p.iteration(&rec(i)));
        }
        let t = p.finish();
        assert_eq!(t.iter().map(|r| r.iter).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn interrupt_flag_stops_the_run() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut p = Progress::with_settings(false, SHOW_AFTER, flag.clone());
        assert!(p.iteration(&rec(1)));
        flag.store(true, Ordering::Relaxed);
        assert!(!p.iteration(&rec(2)));
        assert!(p.interrupted());
        assert_eq!(p.trace().len(), 2);
    }

    #[test]
    fn bar_appears_only_after_the_delay_and_never_when_disabled() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut slow = Progress::with_settings(true, Duration::from_secs(3600), flag.clone());
        slow.iteration(&rec(1));
        assert!(!slow.is_shown());
        let mut now = Progress::with_settings(true, Duration::ZERO, flag.clone());
        now.iteration(&rec(1));
        assert!(now.is_shown());
        let mut off = Progress::with_settings(false, Duration::ZERO, flag);
        off.phase("laplace");
        off.iteration(&rec(1));
        assert!(!off.is_shown());
    }

    #[test]
    fn quiet_never_shows_a_bar() {
        let mut p = Progress::new(true, Arc::new(AtomicBool::new(false)));
        p.iteration(&rec(1));
        assert!(!p.is_shown());
    }

    #[test]
    fn message_names_phase_iteration_objective_and_gradient() {
        let m = progress_message("mvi_lr", &rec(7));
        assert!(m.starts_with("mvi_lr: iteration 7"), "{m}");
        assert!(m.contains("-1.050000e1") && m.contains("5.000e-1"), "{m}");
    }
}
