//! SVG plots: `posterior.svg` (marginal densities and pair plots with q's 70 % ellipse) and
//! `trace.svg` (objective and gradient norm per iteration).
//!
//! Input: a [`FitReport`]. Output: the SVG document as a `String`, drawn with plotters'
//! SVG backend (text is left to the viewer's sans-serif font). Deterministic: the same report
//! gives the same bytes.

use super::{quantile_sorted, FitReport};
use nalgebra::DMatrix;
use plotters::coord::Shift;
use plotters::prelude::*;

/// At most this many marginal panels; a note in the title says when some are left out.
pub const MAX_MARGINALS: usize = 16;
/// Panels per row.
const GRID_COLS: usize = 4;
/// Size of one panel in pixels.
const PANEL: (u32, u32) = (260, 190);
/// At most this many draws are drawn as points in a pair panel (evenly thinned).
const MAX_POINTS: usize = 1500;
/// At most this many draws enter a kernel density estimate (evenly thinned).
const MAX_KDE_DRAWS: usize = 4000;
/// Mass of q inside the drawn ellipse.
const ELLIPSE_MASS: f64 = 0.7;

/// A plot could not be drawn (a plotters backend error, reported as text).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not draw the plot: {0}")]
pub struct PlotError(String);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(super) fn err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError(e.to_string())
}

/// `posterior.svg` with the default pairs (see [`default_pairs`]).
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn render_posterior_svg(r: &FitReport) -> Result<String, PlotError> {
    render_posterior_svg_pairs(r, &default_pairs(r))
}

/// The pairs drawn by default: among the first three columns that are identity-transformed
/// unconstrained coordinates, every pair (so q's ellipse can be overlaid); when fewer than
/// two such columns exist, pairs of the first three columns without ellipses.
pub fn default_pairs(r: &FitReport) -> Vec<(usize, usize)> {
    let eligible: Vec<usize> = (0..r.columns.len())
        .filter(|&j| r.unconstrained_index.get(j).copied().flatten().is_some())
        .take(3)
        .collect();
    let pool: Vec<usize> = if eligible.len() >= 2 {
        eligible
    } else {
        (0..r.columns.len().min(3)).collect()
    };
    let mut pairs = Vec::new();
    for a in 0..pool.len() {
        for b in a + 1..pool.len() {
            pairs.push((pool[a], pool[b]));
        }
    }
    pairs
}

/// `posterior.svg`: a grid of marginal densities (at most [`MAX_MARGINALS`]) and one row of
/// pair panels for `pairs` (column indices): the draws as points and, where both columns
/// are unconstrained coordinates, q's 70 % ellipse per Gaussian component.
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn render_posterior_svg_pairs(r: &FitReport, pairs: &[(usize, usize)]) -> Result<String, PlotError> {
    let n_marg = r.columns.len().min(MAX_MARGINALS);
    let marg_rows = n_marg.div_ceil(GRID_COLS);
    let pairs = &pairs[..pairs.len().min(GRID_COLS)];
    let pair_rows = usize::from(!pairs.is_empty());
    let width = PANEL.0 * GRID_COLS as u32;
    let height = 40 + PANEL.1 * (marg_rows + pair_rows).max(1) as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = posterior_title(r, n_marg);
        let root = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
        let (marg_area, pair_area) = root.split_vertically(PANEL.1 * marg_rows as u32);
        if n_marg > 0 {
            let cells = marg_area.split_evenly((marg_rows, GRID_COLS));
            for (j, cell) in cells.iter().enumerate().take(n_marg) {
                draw_marginal(cell, &r.columns[j], column(&r.draws, j))?;
            }
        }
        if pair_rows > 0 {
            let cells = pair_area.split_evenly((1, GRID_COLS));
            for (cell, &(a, b)) in cells.iter().zip(pairs) {
                draw_pair(cell, r, a, b)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

fn posterior_title(r: &FitReport, shown: usize) -> String {
    let mut t = format!("{} · {} · {} draws", r.model_file, r.method, r.n_draws());
    if shown < r.columns.len() {
        t.push_str(&format!(
            " (first {shown} of {} parameters shown)",
            r.columns.len()
        ));
    }
    t
}

fn column(d: &DMatrix<f64>, j: usize) -> Vec<f64> {
    d.column(j).iter().copied().filter(|v| v.is_finite()).collect()
}

/// Every k-th element so that at most `max` remain.
pub(super) fn thin<T: Copy>(x: &[T], max: usize) -> Vec<T> {
    let step = x.len().div_ceil(max.max(1)).max(1);
    x.iter().step_by(step).copied().collect()
}

fn draw_marginal(area: &Area, name: &str, x: Vec<f64>) -> Result<(), PlotError> {
    let Some(curve) = kde(&thin(&x, MAX_KDE_DRAWS), 128) else {
        return area
            .draw_text(
                &format!("{name}: no finite draws"),
                &("sans-serif", 12).into_text_style(area),
                (10, 20),
            )
            .map_err(err);
    };
    let (lo, hi) = (curve[0].0, curve[curve.len() - 1].0);
    let ymax = curve.iter().map(|p| p.1).fold(0.0, f64::max) * 1.08;
    let mut chart = ChartBuilder::on(area)
        .caption(name, ("sans-serif", 17))
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(8)
        .build_cartesian_2d(lo..hi, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .y_labels(0)
        .x_labels(4)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(AreaSeries::new(curve, 0.0, BLUE.mix(0.25)).border_style(BLUE))
        .map_err(err)?;
    Ok(())
}

/// A Gaussian kernel density estimate on `n` grid points spanning the data ± 3 bandwidths,
/// bandwidth by Silverman's rule; `None` for no data.
pub fn kde(x: &[f64], n: usize) -> Option<Vec<(f64, f64)>> {
    if x.is_empty() || n < 2 {
        return None;
    }
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let len = s.len() as f64;
    let mean = s.iter().sum::<f64>() / len;
    let sd = (s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / len).sqrt();
    let iqr = quantile_sorted(&s, 0.75) - quantile_sorted(&s, 0.25);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    let mut h = 0.9 * spread * len.powf(-0.2);
    if h <= 0.0 || !h.is_finite() {
        h = 1e-3 * (mean.abs() + 1.0);
    }
    let (lo, hi) = (s[0] - 3.0 * h, s[s.len() - 1] + 3.0 * h);
    let norm = 1.0 / (len * h * (2.0 * std::f64::consts::PI).sqrt());
    Some(
        (0..n)
            .map(|i| {
                let g = lo + (hi - lo) * i as f64 / (n - 1) as f64;
                let d: f64 = s.iter().map(|v| (-0.5 * ((g - v) / h).powi(2)).exp()).sum();
                (g, d * norm)
            })
            .collect(),
    )
}

fn draw_pair(area: &Area, r: &FitReport, a: usize, b: usize) -> Result<(), PlotError> {
    let pts: Vec<(f64, f64)> = (0..r.n_draws())
        .map(|i| (r.draws[(i, a)], r.draws[(i, b)]))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let pts = thin(&pts, MAX_POINTS);
    let ellipses = pair_ellipses(r, a, b);
    let all = pts.iter().chain(ellipses.iter().flatten());
    let (xr, yr) = ranges(all);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} vs {}", r.columns[b], r.columns[a]),
            ("sans-serif", 17),
        )
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(4)
        .y_labels(4)
        .x_desc(r.columns[a].as_str())
        .y_desc(r.columns[b].as_str())
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 1, BLUE.mix(0.35).filled())))
        .map_err(err)?;
    for e in ellipses {
        chart
            .draw_series(LineSeries::new(e, RED.stroke_width(2)))
            .map_err(err)?;
    }
    Ok(())
}

/// Plot ranges covering `pts` with a 5 % margin (a unit range around a single value).
fn ranges<'a>(pts: impl Iterator<Item = &'a (f64, f64)>) -> ((f64, f64), (f64, f64)) {
    let mut x = (f64::INFINITY, f64::NEG_INFINITY);
    let mut y = (f64::INFINITY, f64::NEG_INFINITY);
    for &(px, py) in pts {
        x = (x.0.min(px), x.1.max(px));
        y = (y.0.min(py), y.1.max(py));
    }
    (pad(x), pad(y))
}

fn pad((lo, hi): (f64, f64)) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let w = hi - lo;
    if w <= 0.0 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo - 0.05 * w, hi + 0.05 * w)
}

/// The 70 % ellipse of each Gaussian component of q projected on columns (a, b), when both
/// columns are identity-transformed unconstrained coordinates.
fn pair_ellipses(r: &FitReport, a: usize, b: usize) -> Vec<Vec<(f64, f64)>> {
    let idx = |j: usize| r.unconstrained_index.get(j).copied().flatten();
    let (Some(i), Some(k)) = (idx(a), idx(b)) else {
        return Vec::new();
    };
    r.approx
        .components()
        .into_iter()
        .filter_map(|(_, mean, cov)| {
            if i >= mean.len() || k >= mean.len() {
                return None;
            }
            let c = [cov[(i, i)], cov[(i, k)], cov[(k, k)]];
            ellipse((mean[i], mean[k]), c, ELLIPSE_MASS, 96)
        })
        .collect()
}

/// Points on the ellipse of a 2-D Gaussian with mean `m` and covariance [[c0, c1], [c1, c2]]
/// that contains probability `mass`: m + L (ρ cos t, ρ sin t) with L Lᵀ = Σ and
/// ρ² = −2 log(1 − mass). `None` if Σ is not positive definite.
pub fn ellipse(m: (f64, f64), c: [f64; 3], mass: f64, n: usize) -> Option<Vec<(f64, f64)>> {
    if c[0] <= 0.0 || !c.iter().all(|v| v.is_finite()) {
        return None;
    }
    let l11 = c[0].sqrt();
    let l21 = c[1] / l11;
    let d = c[2] - l21 * l21;
    if d <= 0.0 {
        return None;
    }
    let l22 = d.sqrt();
    let rho = (-2.0 * (1.0 - mass).ln()).sqrt();
    Some(
        (0..=n)
            .map(|i| {
                let t = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
                let (u, v) = (rho * t.cos(), rho * t.sin());
                (m.0 + l11 * u, m.1 + l21 * u + l22 * v)
            })
            .collect(),
    )
}

/// `trace.svg`: the objective per iteration (left) and log10 of the gradient norm (right),
/// iterations of all phases in the order recorded.
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn render_trace_svg(r: &FitReport) -> Result<String, PlotError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (2 * 420, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = format!("{} · {} · objective trace", r.model_file, r.method);
        let root = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
        let (left, right) = root.split_horizontally(420);
        // x is the position in the trace, so phases that restart their count (laplace,
        // then the VI method) follow one another instead of overlapping.
        let step = |i: usize| (i + 1) as f64;
        let obj: Vec<(f64, f64)> = r
            .trace
            .iter()
            .enumerate()
            .map(|(i, t)| (step(i), t.objective))
            .filter(|p| p.1.is_finite())
            .collect();
        let grad: Vec<(f64, f64)> = r
            .trace
            .iter()
            .enumerate()
            .filter(|(_, t)| t.grad_norm > 0.0 && t.grad_norm.is_finite())
            .map(|(i, t)| (step(i), t.grad_norm.log10()))
            .collect();
        draw_line_panel(&left, "objective", &obj)?;
        draw_line_panel(&right, "log10 ‖gradient‖", &grad)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

fn draw_line_panel(area: &Area, label: &str, pts: &[(f64, f64)]) -> Result<(), PlotError> {
    if pts.is_empty() {
        return area
            .draw_text(
                &format!("{label}: no iterations recorded"),
                &("sans-serif", 14).into_text_style(area),
                (20, 40),
            )
            .map_err(err);
    }
    let (xr, yr) = ranges(pts.iter());
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(label)
        .x_labels(6)
        .y_labels(6)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(pts.iter().copied(), BLUE.stroke_width(2)))
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn kde_integrates_to_about_one() {
        let x: Vec<f64> = (0..200).map(|i| (i as f64 / 199.0 - 0.5) * 4.0).collect();
        let c = kde(&x, 400).unwrap();
        let dx = c[1].0 - c[0].0;
        let area: f64 = c.iter().map(|p| p.1).sum::<f64>() * dx;
        assert_relative_eq!(area, 1.0, epsilon = 1e-2);
    }

    #[test]
    fn ellipse_of_unit_gaussian_is_a_circle_with_the_right_radius() {
        let e = ellipse((1.0, -1.0), [1.0, 0.0, 1.0], 0.7, 16).unwrap();
        let r2 = -2.0 * 0.3f64.ln();
        for (x, y) in e {
            assert_relative_eq!((x - 1.0).powi(2) + (y + 1.0).powi(2), r2, epsilon = 1e-12);
        }
    }

    #[test]
    fn ellipse_points_have_the_same_mahalanobis_radius() {
        let c = [2.0, 0.8, 1.0];
        let e = ellipse((0.0, 0.0), c, 0.7, 32).unwrap();
        let det = c[0] * c[2] - c[1] * c[1];
        let r2 = -2.0 * 0.3f64.ln();
        for (x, y) in e {
            let m = (c[2] * x * x - 2.0 * c[1] * x * y + c[0] * y * y) / det;
            assert_relative_eq!(m, r2, epsilon = 1e-10);
        }
        assert!(ellipse((0.0, 0.0), [1.0, 2.0, 1.0], 0.7, 8).is_none());
    }

    #[test]
    fn thinning_keeps_at_most_max_elements() {
        let x: Vec<usize> = (0..1001).collect();
        assert!(thin(&x, 100).len() <= 100);
        assert_eq!(thin(&x[..5], 100).len(), 5);
    }
}
