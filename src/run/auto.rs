//! `method = auto`: fit the cheapest method first and escalate along
//! [`AUTO_LADDER`] (laplace → mvi_lr → pathfinder → nuts) until a fit passes its gate.
//!
//! The gate of an approximation: the fit succeeded; PSIS k̂ of log p̃ − log q over its draws
//! (for `pathfinder`, of its importance resampling) is at most 0.7; and, for a method that
//! optimises a fixed-sample ELBO, that ELBO does not exceed its fresh-draw estimate by more
//! than 3 standard errors (a fit tuned to its own samples). `nuts`, the last rung, is taken
//! as it is, with its own diagnostics. The report is the accepted fit's, with the ladder.

use std::time::Instant;

use super::{fit, RunInfo};
use crate::check::infer_keys::AUTO_LADDER;
use crate::diagnostic::Diagnostic;
use crate::graph::LogJoint;
use crate::infer::{InferOptions, Observer, OptionValue};
use crate::options::InferOption;
use crate::posterior::{psis, Posterior};
use crate::report::{FitReport, Rung};

/// Why a fit does not pass the gate, or `None` when it does.
fn rejection(r: &FitReport) -> Option<String> {
    let khat = r.resampling.and_then(|s| s.khat).or(r.khat);
    match khat {
        None => return Some("no PSIS k̂ to judge it by".into()),
        Some(k) if k.is_nan() || k > psis::KHAT_OK => {
            return Some(format!("k̂ = {k:.2} > {}", psis::KHAT_OK));
        }
        Some(_) => {}
    }
    if let (Some(train), Some(fresh)) = (r.elbo_train, r.elbo_fresh) {
        if train > fresh.value + 3.0 * fresh.se {
            return Some(format!(
                "ELBO on its fixed samples {train:.2} > fresh-draw {:.2} ± {:.2}",
                fresh.value, fresh.se
            ));
        }
    }
    None
}

/// The options of a run of `method` inside `auto`.
fn with_method(options: &InferOptions, method: &str) -> InferOptions {
    let mut o = options.clone();
    o.entries.push(InferOption {
        key: "method".into(),
        value: OptionValue::Ident(method.into()),
        span: None,
    });
    o
}

/// Fit with `method = auto`: each rung of [`AUTO_LADDER`] in turn, until one passes.
///
/// # Errors
/// The last rung's failure, when every rung failed.
pub fn fit_auto(
    model: &LogJoint,
    options: &InferOptions,
    info: &RunInfo,
    obs: &mut dyn Observer,
) -> Result<(Posterior, FitReport), Diagnostic> {
    let mut ladder: Vec<Rung> = Vec::new();
    for (k, method) in AUTO_LADDER.iter().enumerate() {
        let last = k + 1 == AUTO_LADDER.len();
        // mvi_lr starts from the Laplace fit: where that failed, so would it
        if *method == "mvi_lr" && ladder.first().is_some_and(|r| r.khat.is_none() && !r.accepted) {
            ladder.push(Rung {
                method: (*method).into(),
                khat: None,
                wall_time_s: 0.0,
                accepted: false,
                verdict: "skipped: it starts from the Laplace fit, which failed".into(),
            });
            continue;
        }
        obs.phase(&format!("auto: {method}"));
        let start = Instant::now();
        match fit(model, &with_method(options, method), info, obs) {
            Err(d) if !last => ladder.push(Rung {
                method: (*method).into(),
                khat: None,
                wall_time_s: start.elapsed().as_secs_f64(),
                accepted: false,
                verdict: format!("failed: {}", first_line(&d)),
            }),
            Err(d) => return Err(d),
            Ok((post, mut report)) => {
                let why = if last { None } else { rejection(&report) };
                let khat = report.resampling.and_then(|s| s.khat).or(report.khat);
                ladder.push(Rung {
                    method: (*method).into(),
                    khat,
                    wall_time_s: report.wall_time_s,
                    accepted: why.is_none(),
                    verdict: why.clone().unwrap_or_else(|| {
                        if last {
                            "the last method, taken as it is".into()
                        } else {
                            format!("k̂ ≤ {}", psis::KHAT_OK)
                        }
                    }),
                });
                if why.is_none() {
                    report.notes.insert(0, ladder_note(&ladder));
                    report.wall_time_s = ladder.iter().map(|r| r.wall_time_s).sum();
                    report.ladder = ladder;
                    return Ok((post, report));
                }
            }
        }
    }
    unreachable!("the last rung returns")
}

/// The gist of a method's failure: `laplace failed: the joint density has no maximum`.
fn first_line(d: &Diagnostic) -> String {
    let text = d.to_string();
    let line = text.lines().next().unwrap_or("");
    line.splitn(3, ": ").take(2).collect::<Vec<_>>().join(": ")
}

/// One line on what `auto` tried: `laplace (k̂ = 0.93 > 0.7) → mvi_lr (accepted)`.
pub fn ladder_note(ladder: &[Rung]) -> String {
    let steps: Vec<String> = ladder
        .iter()
        .map(|r| {
            if r.accepted {
                format!("{} (accepted: {}, {:.2} s)", r.method, r.verdict, r.wall_time_s)
            } else {
                format!("{} (rejected: {}, {:.2} s)", r.method, r.verdict, r.wall_time_s)
            }
        })
        .collect();
    format!("method = auto tried {}", steps.join(" → "))
}
