//! The summary printed by `mvi run`, as plain text or as one JSON object (`--json`).
//!
//! Input: a [`FitReport`]. Output: a `String` with fixed-precision numbers, so the same
//! report always renders to the same bytes (snapshot tests rely on this).

use super::{json, FitReport, PredictMetric};
use crate::posterior::psis::Resampling;
use std::fmt::Write;

/// k̂ above this means the approximation is not reliable (Stan's PSIS reading).
pub const KHAT_THRESHOLD: f64 = 0.7;

/// The text summary: header, per-parameter table, ELBOs, evidence, θ, predict, k̂, notes.
pub fn render_summary(r: &FitReport) -> String {
    let mut out = String::new();
    header(&mut out, r);
    out.push('\n');
    out.push_str(&parameter_table(r));
    out.push('\n');
    quantities(&mut out, r);
    if let Some(p) = &r.predict {
        predict_lines(&mut out, p);
    }
    let run = KhatContext {
        method: &r.method,
        laplace_ok: r.log_evidence.is_some(),
        dim: r.dim,
    };
    out.push_str(&khat_line(r.khat, &run));
    out.push('\n');
    if let Some(s) = &r.resampling {
        let _ = writeln!(out, "{}", resampling_line(s));
    }
    notes(&mut out, r);
    out
}

fn header(out: &mut String, r: &FitReport) {
    let s = r.samples.map_or(String::new(), |s| format!("   S = {s}"));
    let status = if r.interrupted {
        "interrupted"
    } else if r.converged {
        "converged"
    } else {
        "not converged"
    };
    let _ = writeln!(out, "mvi {} · {} · {}", r.version, r.method, r.model_file);
    let _ = writeln!(
        out,
        "D = {}{}   iterations = {}   time = {:.3} s   {}",
        r.dim, s, r.iterations, r.wall_time_s, status
    );
    let data = if r.data_files.is_empty() {
        "none".to_string()
    } else {
        r.data_files.join(", ")
    };
    let _ = writeln!(
        out,
        "seed = {}   draws = {}   data: {}",
        r.seed,
        r.n_draws(),
        data
    );
    if !r.options.is_empty() {
        let opts: Vec<String> = r.options.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(out, "options: {}", opts.join(", "));
    }
    // a report assembled by hand (not by `run::fit`) has no counts
    if r.evals.density > 0 {
        let _ = writeln!(out, "{}", evals_line(&r.evals));
    }
    if let Some(m) = &r.mcmc {
        let _ = writeln!(out, "{}", mcmc_line(m));
    }
}

/// The cost line: evaluations per point, as the Pathfinder paper counts them.
pub fn evals_line(e: &crate::density::Evals) -> String {
    let mut s = format!(
        "evaluations: {} log density ({} with gradient)",
        e.density, e.gradient
    );
    if e.hessian > 0 {
        let _ = write!(s, ", {} Hessians", e.hessian);
    }
    if e.hvp > 0 {
        let _ = write!(s, ", {} Hessian-vector products", e.hvp);
    }
    s
}

/// The sampler line: chains, draws, divergences, tree-depth hits, step size, E-BFMI.
fn mcmc_line(m: &super::mcmc::McmcReport) -> String {
    let total: usize = m.lengths.iter().sum();
    let step = m.stats.iter().map(|s| s.stepsize).sum::<f64>() / total.max(1) as f64;
    let ebfmi = m
        .ebfmi
        .iter()
        .copied()
        .filter(|e| e.is_finite())
        .fold(f64::NAN, f64::min);
    format!(
        "chains = {} × {} draws (warm-up {})   divergences = {}   max_depth hits = {}   \
         step size = {}   min E-BFMI = {}   max R̂ = {}",
        m.lengths.len(),
        m.lengths.iter().max().copied().unwrap_or(0),
        m.warmup,
        m.divergences,
        m.depth_hits,
        num(step),
        num(ebfmi),
        num(m.max_rhat())
    )
}

/// The per-parameter table with aligned columns: name, mean, sd, 5%, 50%, 95%.
pub fn parameter_table(r: &FitReport) -> String {
    let sums = r.column_summaries();
    let width = r
        .columns
        .iter()
        .map(|c| c.chars().count())
        .chain(std::iter::once("parameter".len()))
        .max()
        .unwrap_or(9);
    let mut out = String::new();
    let _ = write!(
        out,
        "{:<width$}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}",
        "parameter", "mean", "sd", "5%", "50%", "95%"
    );
    if r.mcmc.is_some() {
        let _ = write!(out, "  {:>7}  {:>8}  {:>8}", "R̂", "ESS_bulk", "ESS_tail");
    }
    out.push('\n');
    for (j, (name, s)) in r.columns.iter().zip(&sums).enumerate() {
        let _ = write!(
            out,
            "{:<width$}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}",
            name,
            num(s.mean),
            num(s.sd),
            num(s.q5),
            num(s.q50),
            num(s.q95)
        );
        if let Some(c) = r.mcmc.as_ref().and_then(|m| m.convergence.get(j)) {
            let _ = write!(out, "  {:>7.3}  {:>8.0}  {:>8.0}", c.rhat, c.ess_bulk, c.ess_tail);
        }
        out.push('\n');
    }
    out
}

fn quantities(out: &mut String, r: &FitReport) {
    if let Some(e) = r.elbo_train {
        let _ = writeln!(out, "ELBO (fixed samples)  {}", num(e));
    }
    if let Some(e) = r.elbo_fresh {
        let _ = writeln!(out, "ELBO (fresh draws)    {} ± {}", num(e.value), num(e.se));
    }
    if let Some(e) = r.log_evidence {
        let _ = writeln!(out, "Laplace log evidence  {}", num(e));
    }
    if !r.theta.is_empty() {
        let t: Vec<String> = r
            .theta
            .iter()
            .map(|(k, v)| format!("{k} = {}", num(*v)))
            .collect();
        let _ = writeln!(out, "θ: {}", t.join(", "));
    }
}

fn predict_lines(out: &mut String, p: &super::PredictReport) {
    let _ = writeln!(
        out,
        "predict (N_test = {}, S' = {}): test LPD {} ({} per point), lppd {} ({} per point)",
        p.n_test,
        p.draws,
        num(p.test_lpd),
        num(p.test_lpd_per_point()),
        num(p.lppd),
        num(p.lppd_per_point())
    );
    match p.metric {
        Some(PredictMetric::ErrorRate(e)) => {
            let _ = writeln!(out, "  error rate {}", num(e));
        }
        Some(PredictMetric::Mse(e)) => {
            let _ = writeln!(out, "  MSE {}", num(e));
        }
        None => {}
    }
}

/// Stan's reading of PSIS k̂: ≤ 0.7 usable; above that not reliable, with advice that fits
/// the run: a richer Gaussian that can run on the model, else a non-Gaussian method.
pub fn khat_line(khat: Option<f64>, run: &KhatContext<'_>) -> String {
    match khat {
        None => "PSIS k̂: not available".to_string(),
        Some(k) if k.is_nan() => {
            "PSIS k̂: not available (the importance ratios give no finite estimate)".to_string()
        }
        Some(k) if k <= KHAT_THRESHOLD => {
            format!("PSIS k̂ = {k:.2} (≤ 0.7: the approximation is usable)")
        }
        Some(k) => format!(
            "PSIS k̂ = {k:.2} (> 0.7: the approximation is not reliable; {})",
            khat_advice(run)
        ),
    }
}

/// What the k̂ advice needs to know about a run.
#[derive(Debug, Clone, Copy)]
pub struct KhatContext<'a> {
    /// Registry name of the method.
    pub method: &'a str,
    /// Whether the Laplace fit succeeded (the MVI family cannot run without it).
    pub laplace_ok: bool,
    /// Dimension D: `vi_full` fits D(D + 1)/2 scale entries, too many beyond
    /// [`VI_FULL_MAX_DIM`].
    pub dim: usize,
}

/// Largest D for which a high k̂ suggests `vi_full` (the guide's "a few hundred").
pub const VI_FULL_MAX_DIM: usize = 300;

/// What to try after a k̂ above 0.7: a richer Gaussian that can run on this model, else a
/// method that is not Gaussian, or a reparameterisation.
fn khat_advice(run: &KhatContext<'_>) -> String {
    let full = run.dim <= VI_FULL_MAX_DIM;
    let reparam = "or reparameterise the model (e.g. a non-centred hierarchy)";
    match run.method {
        "laplace" | "mvi_mu" | "mvi_eig" | "vi_diag" if run.laplace_ok => {
            let richer = if full { "mvi_lr or vi_full" } else { "mvi_lr" };
            format!("try a richer method such as {richer}, or check the model")
        }
        "laplace" | "mvi_mu" | "mvi_eig" | "mvi_lr" | "vi_diag" if !run.laplace_ok => {
            let other = if full { "vi_full or pmfvb" } else { "pmfvb" };
            format!("the Laplace fit failed, so the MVI methods cannot run: try {other}, {reparam}")
        }
        "mvi_lr" | "vi_full" => {
            format!("no Gaussian fits this posterior well: try split_mf or pmfvb, {reparam}")
        }
        "split_mf" => format!("try more bins (`bins`) or pmfvb, {reparam}"),
        _ => format!("try another method, {reparam}"),
    }
}

/// The summary line on a PSIS resampling step: pool, k̂, ESS, and that the draws shown are
/// the resampled ones.
pub fn resampling_line(r: &Resampling) -> String {
    let khat = r
        .khat
        .map_or("not available (too few draws)".to_string(), |k| format!("{k:.2}"));
    if r.resampled {
        format!(
            "draws: Pareto-smoothed importance resampling of {} draws of q: k̂ = {khat}, \
             importance-sampling ESS = {:.0}; the draws and the table above are the resampled ones",
            r.pool, r.ess
        )
    } else {
        format!(
            "draws: the {} pooled draws as drawn (not resampled): k̂ = {khat}, \
             importance-sampling ESS = {:.0}",
            r.pool, r.ess
        )
    }
}

/// The warning for a resampling step whose k̂ exceeds 0.7.
pub fn resampling_warning(r: &Resampling) -> String {
    format!(
        "importance resampling with k̂ = {:.2} > 0.7: q misses posterior mass, and resampling \
         cannot restore it (it reweights q's draws; it cannot create draws where q has none). \
         Treat tails and uncertainty with care and try a method whose k̂ is lower (`mvi compare`)",
        r.khat.unwrap_or(f64::NAN)
    )
}

fn notes(out: &mut String, r: &FitReport) {
    if r.interrupted {
        let _ = writeln!(out, "warning: interrupted by the user; results are partial");
    }
    for n in &r.notes {
        let _ = writeln!(out, "warning: {n}");
    }
}

/// A number at fixed precision: 4 decimals in [1e-3, 1e6), otherwise 3-digit scientific.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = x.abs();
    if a == 0.0 || (1e-3..1e6).contains(&a) {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

/// The summary as one JSON object (for `--json`): method, D, S, iterations, timing,
/// convergence, per-parameter summaries, mean and covariance, ELBOs, evidence, θ, predict,
/// k̂ and notes. Pretty-printed, keys in a fixed order.
pub fn render_json(r: &FitReport) -> String {
    let v = json::summary_value(r);
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_use_fixed_or_scientific_precision() {
        assert_eq!(num(1.23456), "1.2346");
        assert_eq!(num(-0.5), "-0.5000");
        assert_eq!(num(0.0), "0.0000");
        assert_eq!(num(1.5e-5), "1.500e-5");
        assert_eq!(num(2.5e7), "2.500e7");
        assert_eq!(num(f64::NAN), "NaN");
        assert_eq!(num(f64::NEG_INFINITY), "-inf");
    }

    fn run(method: &str, laplace_ok: bool, dim: usize) -> KhatContext<'_> {
        KhatContext {
            method,
            laplace_ok,
            dim,
        }
    }

    #[test]
    fn khat_reading_follows_stan_threshold() {
        let r = run("laplace", true, 3);
        assert!(khat_line(Some(0.3), &r).contains("usable"));
        assert!(khat_line(Some(0.7), &r).contains("usable"));
        assert!(khat_line(Some(0.71), &r).contains("not reliable"));
        assert!(khat_line(None, &r).contains("not available"));
    }

    #[test]
    fn khat_advice_names_only_methods_that_can_run() {
        let line = |m, ok, d| khat_line(Some(1.2), &run(m, ok, d));
        assert!(line("vi_diag", true, 10).contains("mvi_lr or vi_full"));
        // after a failed Laplace fit the MVI family cannot run: not suggested
        let failed = line("vi_diag", false, 10);
        assert!(failed.contains("vi_full or pmfvb") && !failed.contains("mvi_lr"));
        // the richest Gaussians point away from Gaussians
        for m in ["mvi_lr", "vi_full"] {
            let l = line(m, true, 10);
            assert!(l.contains("split_mf or pmfvb") && !l.contains("mvi_lr or"), "{l}");
        }
        assert!(line("split_mf", false, 10).contains("bins"));
    }

    #[test]
    fn khat_advice_leaves_out_vi_full_in_high_dimension() {
        let d = VI_FULL_MAX_DIM + 1;
        let line = |m, ok| khat_line(Some(1.2), &run(m, ok, d));
        assert!(!line("vi_diag", true).contains("vi_full") && line("vi_diag", true).contains("mvi_lr"));
        assert!(!line("vi_diag", false).contains("vi_full") && line("vi_diag", false).contains("pmfvb"));
    }
}
