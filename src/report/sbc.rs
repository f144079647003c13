//! Simulation-based calibration reports: the per-parameter summary as text and JSON,
//! `ranks.csv`, and an ECDF-difference picture per parameter.
//!
//! Input: [`SbcSummary`]s and [`SbcParam`]s from `posterior::sbc`. Output: strings, except
//! [`write_ranks_csv`], which writes `ranks.csv` atomically through `fsutil` so that a run
//! stopped part-way (Ctrl-C) leaves the ranks of every finished simulation readable.
//! Deterministic: the same input gives the same bytes.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde_json::{json, Map, Value};

use super::svg::{err, PlotError};
use crate::posterior::sbc::{EcdfTest, SbcParam, SbcSummary, Shape, LEVEL};

/// Picture size in pixels.
const SIZE: (u32, u32) = (640, 420);

/// The word the summary uses for how a parameter is miscalibrated ("-" when calibrated);
/// the rule is [`EcdfTest::shape`]'s.
pub fn shape_word(shape: Option<Shape>) -> &'static str {
    match shape {
        None => "-",
        Some(Shape::TooNarrow) => "too narrow",
        Some(Shape::TooWide) => "too wide",
        Some(Shape::BiasedHigh) => "biased high",
        Some(Shape::BiasedLow) => "biased low",
    }
}

/// A p-value at three decimals, or "<0.001".
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

/// The summary table: per parameter N, L, K, the ECDF test's p-value, whether the ranks are
/// calibrated (the ECDF inside the simultaneous 95 % band) and how they are off; VSBC's KS
/// statistic and p-value when some parameter has them. A last line counts the flagged
/// parameters.
pub fn render_sbc_summary(rows: &[SbcSummary]) -> String {
    let name_w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let vsbc = rows.iter().any(|r| r.vsbc.is_some());
    let mut out = format!(
        "SBC: ECDF-difference test of the ranks, {:.0} % simultaneous band (Säilynoja et al. 2022)\n\n",
        100.0 * LEVEL
    );
    let _ = write!(
        out,
        "{:name_w$}  {:>5}  {:>5}  {:>5}  {:>7}  calibrated  {:<11}",
        "parameter", "N", "L", "K", "p_value", "how"
    );
    if vsbc {
        out.push_str("  vsbc_D  vsbc_p");
    }
    out = out.trim_end().to_string() + "\n";
    for r in rows {
        let t = &r.ecdf;
        let mut line = format!(
            "{:name_w$}  {:>5}  {:>5}  {:>5}  {:>7}  {:<10}  {:<11}",
            r.name,
            t.n,
            t.l,
            t.k,
            p_text(t.p_value),
            if t.calibrated { "yes" } else { "no" },
            shape_word(t.shape())
        );
        if let Some(v) = &r.vsbc {
            let _ = write!(line, "  {:6.3}  {:>6}", v.statistic, p_text(v.p_value));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let flagged = rows.iter().filter(|r| !r.ecdf.calibrated).count();
    let _ = writeln!(
        out,
        "\n{flagged} of {} parameters miscalibrated (ECDF outside the band, p ≤ {:.2}).",
        rows.len(),
        1.0 - LEVEL
    );
    out
}

/// JSON has no NaN or infinity: those become `null`.
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The SBC object: `level` and `parameters`, a list of `{name, calibrated, p_value, shape,
/// n, l, k, gamma, vsbc}` (`shape` null when calibrated; `vsbc` `{statistic, p_value}` or
/// null). The driver may add keys (model, method, seed) before printing.
pub fn sbc_value(rows: &[SbcSummary]) -> Value {
    let params: Vec<Value> = rows
        .iter()
        .map(|r| {
            let t = &r.ecdf;
            let shape = t.shape().map_or(Value::Null, |s| json!(shape_word(Some(s))));
            json!({
                "name": r.name,
                "calibrated": t.calibrated,
                "p_value": num(t.p_value),
                "shape": shape,
                "n": t.n,
                "l": t.l,
                "k": t.k,
                "gamma": num(t.gamma),
                "vsbc": r.vsbc.map_or(Value::Null, |v| json!({
                    "statistic": num(v.statistic),
                    "p_value": num(v.p_value),
                })),
            })
        })
        .collect();
    let mut m = Map::new();
    m.insert("level".into(), json!(LEVEL));
    m.insert("parameters".into(), Value::Array(params));
    Value::Object(m)
}

/// [`sbc_value`] pretty-printed.
pub fn render_sbc_json(rows: &[SbcSummary]) -> String {
    serde_json::to_string_pretty(&sbc_value(rows)).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// `ranks.csv`: a header `sim,<name>,…`, then one row per simulation (numbered from 1) with
/// one rank per parameter.
///
/// # Panics
/// If the parameters do not all have the same number of ranks (one per simulation, from the
/// driver).
pub fn render_ranks_csv(params: &[SbcParam]) -> String {
    let sims = params.first().map_or(0, |p| p.ranks.len());
    assert!(
        params.iter().all(|p| p.ranks.len() == sims),
        "every parameter has one rank per simulation"
    );
    let mut out = String::from("sim");
    for p in params {
        out.push(',');
        out.push_str(&p.name);
    }
    out.push('\n');
    for s in 0..sims {
        let _ = write!(out, "{}", s + 1);
        for p in params {
            let _ = write!(out, ",{}", p.ranks[s]);
        }
        out.push('\n');
    }
    out
}

/// Write [`render_ranks_csv`] to `path` atomically (temporary file, then rename).
///
/// # Errors
/// Any I/O error; `path` is then unchanged.
///
/// # Panics
/// As [`render_ranks_csv`].
pub fn write_ranks_csv(path: &Path, params: &[SbcParam]) -> io::Result<()> {
    crate::fsutil::write_atomic(path, render_ranks_csv(params).as_bytes())
}

/// The ECDF-difference picture of one parameter: F̂(z) − z of its scaled ranks at the
/// evaluation points (black), the simultaneous 95 % band shaded, and the zero line. A curve
/// leaving the band is a miscalibration: up then down for posteriors too narrow, down then
/// up for too wide, above or below throughout for biased ones.
///
/// # Errors
/// A [`PlotError`] if plotters fails to draw.
pub fn ecdf_svg(test: &EcdfTest, title: &str) -> Result<String, PlotError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
        draw_ecdf(&root, test)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// (0, 0), the values at the evaluation points, (1, 0).
fn with_ends(z: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    std::iter::once((0.0, 0.0))
        .chain(z.iter().copied().zip(y.iter().copied()))
        .chain(std::iter::once((1.0, 0.0)))
        .collect()
}

fn draw_ecdf(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, t: &EcdfTest) -> Result<(), PlotError> {
    let curve = with_ends(&t.z, &t.diff);
    let upper = with_ends(&t.z, &t.upper);
    let lower = with_ends(&t.z, &t.lower);
    let reach = curve
        .iter()
        .chain(&upper)
        .chain(&lower)
        .map(|p| p.1.abs())
        .fold(0.01, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..1.0, -reach..reach)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("fractional rank")
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
        .label(format!("{:.0} % simultaneous band", 100.0 * LEVEL))
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BLUE.mix(0.15).filled()));
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 0.0)], BLACK.mix(0.4)))
        .map_err(err)?;
    let colour = if t.calibrated { BLACK } else { RED };
    chart
        .draw_series(LineSeries::new(curve, colour.stroke_width(2)))
        .map_err(err)?
        .label(format!(
            "ECDF difference, N = {}, L = {} (p = {})",
            t.n,
            t.l,
            p_text(t.p_value)
        ))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posterior::sbc::{ecdf_test, summarize};

    fn params() -> Vec<SbcParam> {
        let uniform: Vec<usize> = (0..100).map(|i| i % 20).collect();
        let low: Vec<usize> = (0..100).map(|i| (i % 20) / 3).collect();
        vec![
            SbcParam {
                name: "mu".into(),
                ranks: uniform,
                l: 19,
                vsbc_p: None,
            },
            SbcParam {
                name: "tau".into(),
                ranks: low,
                l: 19,
                vsbc_p: Some(
                    (0..100)
                        .map(|i| (f64::from(i) + 0.5) / 100.0)
                        .map(|p| p * p)
                        .collect(),
                ),
            },
        ]
    }

    #[test]
    fn summary_flags_the_miscalibrated_parameter_and_says_how() {
        let rows = summarize(&params()).unwrap();
        let text = render_sbc_summary(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].starts_with("parameter") && lines[2].ends_with("vsbc_D  vsbc_p"),
            "{text}"
        );
        assert!(lines[3].starts_with("mu") && lines[3].contains(" yes "), "{text}");
        assert!(lines[3].trim_end().ends_with('-'), "{text}");
        assert!(lines[4].starts_with("tau") && lines[4].contains(" no "), "{text}");
        assert!(
            lines[4].contains("biased high") && lines[4].contains("<0.001"),
            "{text}"
        );
        assert!(text.ends_with("1 of 2 parameters miscalibrated (ECDF outside the band, p ≤ 0.05).\n"));
    }

    #[test]
    fn json_lists_parameters_with_verdict_and_p_value() {
        let rows = summarize(&params()).unwrap();
        let v: Value = serde_json::from_str(&render_sbc_json(&rows)).unwrap();
        let p = v["parameters"].as_array().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0]["name"], "mu");
        assert_eq!(p[0]["calibrated"], true);
        assert!(p[0]["shape"].is_null() && p[0]["vsbc"].is_null());
        assert_eq!(p[1]["calibrated"], false);
        assert_eq!(p[1]["shape"], "biased high");
        assert!(p[1]["p_value"].as_f64().unwrap() < 0.001);
        assert!(p[1]["vsbc"]["p_value"].as_f64().unwrap() < 0.001);
        assert_eq!(
            (p[1]["n"].as_u64(), p[1]["l"].as_u64(), p[1]["k"].as_u64()),
            (Some(100), Some(19), Some(20))
        );
    }

    #[test]
    fn ranks_csv_has_one_row_per_simulation_and_is_written_atomically() {
        let ps = params();
        let csv = render_ranks_csv(&ps);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 101);
        assert_eq!(lines[0], "sim,mu,tau");
        assert_eq!(lines[1], "1,0,0");
        assert_eq!(lines[20], "20,19,6");
        let dir = std::env::temp_dir().join(format!("mvi-sbc-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ranks.csv");
        write_ranks_csv(&path, &ps).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), csv);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ecdf_picture_shades_the_band_and_colours_a_miscalibrated_curve() {
        let ok = ecdf_test(&(0..100).map(|i| i % 20).collect::<Vec<_>>(), 19).unwrap();
        let svg = ecdf_svg(&ok, "mu").unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<polygon") && svg.contains("mu"));
        assert!(svg.contains("95 % simultaneous band") && !svg.contains(r##"stroke="#FF0000""##));
        let bad = ecdf_test(&(0..100).map(|i| (i % 20) / 3).collect::<Vec<_>>(), 19).unwrap();
        assert!(ecdf_svg(&bad, "tau").unwrap().contains(r##"stroke="#FF0000""##));
    }
}
