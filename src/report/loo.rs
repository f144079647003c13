//! PSIS-LOO reports: the `az.loo` and `az.compare` tables as text, and two SVG pictures, a
//! posterior predictive check and the LOO-PIT ECDF difference.
//!
//! Input: a [`Loo`] or [`CompareRow`]s from `posterior::loo`, or observed values with their
//! replicates (S × N, rows = draws) and LOO-PIT values. Output: strings. Deterministic (fixed
//! precision, no randomness): the same input gives the same bytes. The tables follow ArviZ's
//! layout so that numbers can be compared by eye with `az.loo(…)` and `az.compare(…)`.

use std::fmt::Write as _;

use nalgebra::DMatrix;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::quantile_sorted;
use super::svg::{err, kde, thin, PlotError};
use crate::posterior::loo::{CompareRow, Loo};

/// At most this many replicated data sets are drawn in a posterior predictive check.
pub const MAX_REPLICATES: usize = 50;
/// Grid points of each kernel density estimate.
const KDE_POINTS: usize = 128;
/// At most this many bins in a rootogram; wider count ranges share bins.
const MAX_BINS: usize = 80;
/// Picture size in pixels.
const SIZE: (u32, u32) = (640, 420);
/// Kolmogorov's c(α) for α = 0.05: √(log(2/α)/2), the Dvoretzky–Kiefer–Wolfowitz bound.
const KS_95: f64 = 1.358_098_6;

/// The `az.loo` table: draws and observations, elpd_loo with its standard error, p_loo,
/// and the counts of observations per k̂ range (good ≤ good_k < bad ≤ 1 < very bad), with a
/// warning naming how many observations have k̂ > good_k.
pub fn render_loo(loo: &Loo) -> String {
    let mut out = format!(
        "Computed from {} posterior samples and {} observations log-likelihood matrix.\n",
        loo.n_draws, loo.n_obs
    );
    if loo.corrected {
        out.push_str("Posterior approximation correction used");
        if let Some(k) = loo.khat_correction {
            let _ = write!(out, " (k̂ of log p̃ − log q: {k:.2})");
        }
        out.push_str(".\n");
    }
    let _ = writeln!(out, "\n         Estimate       SE");
    let _ = writeln!(out, "elpd_loo {:8.2}  {:7.2}", loo.elpd_loo, loo.se);
    let _ = writeln!(out, "p_loo    {:8.2}        -", loo.p_loo);
    if loo.n_high_k > 0 {
        let _ = writeln!(
            out,
            "\nWarning: {} of {} observations have Pareto k̂ > {:.2}: their elpd estimates are \
             unreliable (the model may be sensitive to them, or misspecified).",
            loo.n_high_k, loo.n_obs, loo.good_k
        );
    }
    out.push_str(&khat_table(loo));
    out
}

fn khat_table(loo: &Loo) -> String {
    let k: Vec<f64> = loo.pointwise.iter().map(|p| p.khat).collect();
    let good = k.iter().filter(|v| **v <= loo.good_k).count();
    let bad = k.iter().filter(|v| **v > loo.good_k && **v <= 1.0).count();
    let very_bad = k.iter().filter(|v| **v > 1.0).count();
    let none = k.iter().filter(|v| v.is_nan()).count();
    let width = [good, bad, very_bad, none]
        .iter()
        .map(|c| c.to_string().len())
        .max()
        .unwrap_or(1)
        .max(4);
    let pct = |c: usize| 100.0 * c as f64 / loo.n_obs.max(1) as f64;
    let g = loo.good_k;
    let mut out = String::from("------\n\nPareto k diagnostic values:\n");
    let _ = writeln!(out, "                         {:>width$} {:>6}", "Count", "Pct.");
    let _ = writeln!(
        out,
        "(-Inf, {g:.2}]   (good)     {good:width$} {:6.1}%",
        pct(good)
    );
    let _ = writeln!(out, "   ({g:.2}, 1]   (bad)      {bad:width$} {:6.1}%", pct(bad));
    let _ = writeln!(
        out,
        "    (1, Inf)   (very bad) {very_bad:width$} {:6.1}%",
        pct(very_bad)
    );
    if none > 0 {
        let _ = writeln!(out, "   (too few draws to fit) {none:width$} {:6.1}%", pct(none));
    }
    out
}

/// The `az.compare` table, one row per model, best first: rank, elpd_loo, p_loo, elpd_diff,
/// weight, se, dse and warning (k̂ > good_k for some observation).
pub fn render_comparison(rows: &[CompareRow]) -> String {
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = format!(
        "{:name_w$}  rank  elpd_loo    p_loo  elpd_diff  weight      se     dse  warning\n",
        "model"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:name_w$}  {:4}  {:8.2}  {:7.2}  {:9.2}  {:6.2}  {:6.2}  {:6.2}  {}",
            r.name, r.rank, r.elpd_loo, r.p_loo, r.elpd_diff, r.weight, r.se, r.dse, r.warning
        );
    }
    out
}

/// A posterior predictive check of `y` (N observations) against replicates `y_rep`
/// (S × N): for continuous data, the kernel density of y (thick) over those of up to
/// [`MAX_REPLICATES`] replicated data sets (thin, evenly thinned rows of `y_rep`); for
/// counts (`discrete`), a hanging rootogram: bars of √(observed frequency) hanging from
/// the curve of √(expected frequency), the expectation averaged over the replicates, so a
/// bar that misses the zero line marks a count the model over- or under-predicts.
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn ppc_svg(y: &[f64], y_rep: &DMatrix<f64>, discrete: bool, title: &str) -> Result<String, PlotError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
        if discrete {
            draw_rootogram(&root, y, y_rep)?;
        } else {
            draw_densities(&root, y, y_rep)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn finite(x: impl Iterator<Item = f64>) -> Vec<f64> {
    x.filter(|v| v.is_finite()).collect()
}

fn draw_densities(area: &Area, y: &[f64], y_rep: &DMatrix<f64>) -> Result<(), PlotError> {
    let rows: Vec<usize> = thin(&(0..y_rep.nrows()).collect::<Vec<_>>(), MAX_REPLICATES);
    let reps: Vec<Vec<(f64, f64)>> = rows
        .iter()
        .filter_map(|&s| kde(&finite(y_rep.row(s).iter().copied()), KDE_POINTS))
        .collect();
    let Some(obs) = kde(&finite(y.iter().copied()), KDE_POINTS) else {
        return note(area, "no finite observations");
    };
    let all = reps.iter().flatten().chain(&obs);
    let (mut xr, mut ymax) = ((f64::INFINITY, f64::NEG_INFINITY), 0.0f64);
    for &(x, d) in all {
        xr = (xr.0.min(x), xr.1.max(x));
        ymax = ymax.max(d);
    }
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(xr.0..xr.1, 0.0..ymax * 1.05)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("y")
        .y_desc("density")
        .x_labels(6)
        .y_labels(5)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, curve) in reps.into_iter().enumerate() {
        let series = chart
            .draw_series(LineSeries::new(curve, BLUE.mix(0.25).stroke_width(1)))
            .map_err(err)?;
        if i == 0 {
            series
                .label("replicated")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE.mix(0.4)));
        }
    }
    chart
        .draw_series(LineSeries::new(obs, BLACK.stroke_width(3)))
        .map_err(err)?
        .label("observed")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(3)));
    legend(&mut chart)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), PlotError> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)
}

fn note(area: &Area, text: &str) -> Result<(), PlotError> {
    area.draw_text(text, &("sans-serif", 14).into_text_style(area), (20, 40))
        .map_err(err)
}

/// Rootogram bins: counts from `lo` in steps of `width`, `n` of them.
struct Bins {
    lo: i64,
    width: i64,
    n: usize,
}

impl Bins {
    /// Bins covering the observations and the replicates up to their 99.5 % quantile.
    fn new(y: &[f64], rep: &[f64]) -> Option<Bins> {
        let mut all: Vec<f64> = y.iter().chain(rep).copied().filter(|v| v.is_finite()).collect();
        if all.is_empty() {
            return None;
        }
        all.sort_by(f64::total_cmp);
        let y_hi = y
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let y_lo = y
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
        let lo = quantile_sorted(&all, 0.005).min(y_lo).round() as i64;
        let hi = quantile_sorted(&all, 0.995).max(y_hi).round() as i64;
        let span = (hi - lo + 1).max(1) as usize;
        let width = span.div_ceil(MAX_BINS).max(1);
        Some(Bins {
            lo,
            width: width as i64,
            n: span.div_ceil(width),
        })
    }

    fn index(&self, v: f64) -> Option<usize> {
        let b = (v.round() as i64 - self.lo).div_euclid(self.width);
        usize::try_from(b).ok().filter(|b| *b < self.n)
    }

    /// The count at the centre of bin `b`.
    fn centre(&self, b: usize) -> f64 {
        (self.lo + b as i64 * self.width) as f64 + 0.5 * (self.width - 1) as f64
    }
}

/// Observed and expected frequencies per bin: (observed, mean over replicate rows).
fn frequencies(bins: &Bins, y: &[f64], y_rep: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
    let mut observed = vec![0.0; bins.n];
    for b in y.iter().filter_map(|v| bins.index(*v)) {
        observed[b] += 1.0;
    }
    let mut expected = vec![0.0; bins.n];
    for b in y_rep.iter().filter_map(|v| bins.index(*v)) {
        expected[b] += 1.0;
    }
    let s = y_rep.nrows().max(1) as f64;
    (observed, expected.iter().map(|e| e / s).collect())
}

fn draw_rootogram(area: &Area, y: &[f64], y_rep: &DMatrix<f64>) -> Result<(), PlotError> {
    let Some(bins) = Bins::new(y, y_rep.as_slice()) else {
        return note(area, "no finite observations");
    };
    let (observed, expected) = frequencies(&bins, y, y_rep);
    let root_e: Vec<f64> = expected.iter().map(|e| e.sqrt()).collect();
    let bottoms: Vec<f64> = root_e.iter().zip(&observed).map(|(e, o)| e - o.sqrt()).collect();
    let top = root_e.iter().copied().fold(0.0, f64::max).max(1.0) * 1.08;
    let bottom = bottoms.iter().copied().fold(0.0, f64::min) - 0.05 * top;
    let half = 0.45 * bins.width as f64;
    let (x0, x1) = (bins.centre(0) - 1.5 * half, bins.centre(bins.n - 1) + 1.5 * half);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, bottom..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("count")
        .y_desc("√frequency")
        .x_labels(8)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(5)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series((0..bins.n).map(|b| {
            let c = bins.centre(b);
            Rectangle::new(
                [(c - half, bottoms[b]), (c + half, root_e[b])],
                BLUE.mix(0.3).filled(),
            )
        }))
        .map_err(err)?
        .label("observed (hanging)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BLUE.mix(0.3).filled()));
    chart
        .draw_series(LineSeries::new([(x0, 0.0), (x1, 0.0)], BLACK.mix(0.6)))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            (0..bins.n).map(|b| (bins.centre(b), root_e[b])),
            RED.stroke_width(2),
        ))
        .map_err(err)?
        .label("expected (replicates)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
    legend(&mut chart)
}

/// The LOO-PIT check: the ECDF of the PIT values minus the uniform CDF, F̂(u) − u, with a
/// simultaneous 95 % band for N uniform values: ±c/√N with c = √(log 40 / 2) ≈ 1.358 (the
/// Dvoretzky–Kiefer–Wolfowitz bound, conservative at every N; clipped to F ∈ [0, 1]). A
/// curve leaving the band says the PIT values are not uniform: ∪-shaped (below then above)
/// for an overdispersed predictive distribution, ∩-shaped for an underdispersed one, and
/// mostly above or below for a biased one. ArviZ's band (Säilynoja et al. 2022) is narrower
/// near 0 and 1; this one is the same width everywhere.
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn loo_pit_svg(pit: &[f64], title: &str) -> Result<String, PlotError> {
    let mut u = finite(pit.iter().copied());
    u.sort_by(f64::total_cmp);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
        if u.is_empty() {
            note(&root, "no LOO-PIT values")?;
        } else {
            draw_ecdf_difference(&root, &u)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// The step function F̂(u) − u of sorted values in [0, 1], as the corners of its steps.
fn ecdf_difference(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len() as f64;
    let mut pts = vec![(0.0, 0.0)];
    for (i, &v) in sorted.iter().enumerate() {
        let v = v.clamp(0.0, 1.0);
        pts.push((v, i as f64 / n - v));
        pts.push((v, (i + 1) as f64 / n - v));
    }
    pts.push((1.0, 0.0));
    pts
}

fn draw_ecdf_difference(area: &Area, sorted: &[f64]) -> Result<(), PlotError> {
    let eps = KS_95 / (sorted.len() as f64).sqrt();
    let curve = ecdf_difference(sorted);
    let grid: Vec<f64> = (0..=200).map(|i| i as f64 / 200.0).collect();
    let upper: Vec<(f64, f64)> = grid.iter().map(|&u| (u, eps.min(1.0 - u))).collect();
    let lower: Vec<(f64, f64)> = grid.iter().map(|&u| (u, (-eps).max(-u))).collect();
    let reach = curve.iter().map(|p| p.1.abs()).fold(eps, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..1.0, -reach..reach)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("LOO-PIT value")
        .y_desc("ECDF − uniform")
        .x_labels(6)
        .y_labels(5)
        // + 0.0 turns −0 into 0, so the zero line is labelled "0.00".
        .y_label_formatter(&|v| format!("{:.2}", v + 0.0))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    let band: Vec<(f64, f64)> = upper.iter().chain(lower.iter().rev()).copied().collect();
    chart
        .draw_series(std::iter::once(Polygon::new(band, BLUE.mix(0.15).filled())))
        .map_err(err)?
        .label("95 % simultaneous band (uniform)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BLUE.mix(0.15).filled()));
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 0.0)], BLACK.mix(0.4)))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(curve, BLACK.stroke_width(2)))
        .map_err(err)?
        .label("LOO-PIT ECDF difference")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(2)));
    legend(&mut chart)
}

#[cfg(test)]
mod tests;
