//! A fit's results files in an output directory: `draws.csv`, `fit.json` and the plots,
//! rendered by [`crate::report`] and each written atomically by [`crate::fsutil`].

use std::fs;
use std::io;
use std::path::Path;

use crate::fsutil::write_atomic;
use crate::report::{self, FitReport};

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
        for r in &report.replicated {
            let n = r.observed.len();
            let y_rep = report.draws.columns(r.first_column, n).into_owned();
            let title = format!("posterior predictive check: {}", r.name);
            let svg =
                report::loo::ppc_svg(&r.observed, &y_rep, r.discrete(), &title).map_err(io::Error::other)?;
            write_named(dir, &format!("ppc_{}.svg", r.name), svg.as_bytes())?;
        }
    }
    Ok(())
}

/// The files [`write_output_dir`] writes.
pub const OUTPUT_FILES: [&str; 4] = ["draws.csv", "fit.json", "posterior.svg", "trace.svg"];

/// [`write_atomic`] of `dir/name`, with the file's name in the error.
fn write_named(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_atomic(&dir.join(name), bytes).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))
}
