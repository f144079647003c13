//! `draws.csv` in CmdStan's layout, readable by ArviZ's `az.from_cmdstan`.
//!
//! Input: a [`FitReport`]. Output: the file's text: `#` comment lines echoing the mvi
//! version, method, every option with its value, seed and data files (`key = value`, as
//! CmdStan writes its configuration), then the header row `lp__,log_p__,log_q__,<params…>`
//! and one row per draw. Numbers are written in shortest round-trip scientific form, so they
//! read back bit-for-bit; a missing `log_q__` (particles) is `nan`.

use super::FitReport;
use std::fmt::Write;

/// The full text of `draws.csv`.
pub fn render_draws_csv(r: &FitReport) -> String {
    let mut out = comment_header(r);
    out.push_str(&header_row(r));
    out.push('\n');
    for i in 0..r.n_draws() {
        push_row(&mut out, r, i);
    }
    out
}

/// The `#` comment lines that precede the header row.
pub fn comment_header(r: &FitReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# mvi_version = {}", r.version);
    let _ = writeln!(out, "# model = {}", r.model_file);
    let _ = writeln!(out, "# method = {}", r.method);
    for (k, v) in &r.options {
        let _ = writeln!(out, "#   {k} = {v}");
    }
    let _ = writeln!(out, "# seed = {}", r.seed);
    for (i, f) in r.data_files.iter().enumerate() {
        let _ = writeln!(out, "# data_file_{} = {f}", i + 1);
    }
    let _ = writeln!(out, "# num_draws = {}", r.n_draws());
    if let Some(m) = &r.mcmc {
        let _ = writeln!(out, "# chains = {}", m.lengths.len());
        let _ = writeln!(out, "# draws_per_chain = {:?}", m.lengths);
        let _ = writeln!(out, "# num_warmup = {}", m.warmup);
        let _ = writeln!(out, "# (rows: chain 1's draws, then chain 2's, ...)");
    }
    let _ = writeln!(out, "# Elapsed Time: {:.6} seconds (Total)", r.wall_time_s);
    if r.interrupted {
        let _ = writeln!(out, "# interrupted = true");
        let _ = writeln!(
            out,
            "# (the run was stopped by the user; these draws come from an unfinished fit)"
        );
    }
    out
}

/// CmdStan's NUTS sampler columns, in its order.
pub const NUTS_COLUMNS: [&str; 7] = [
    "lp__",
    "accept_stat__",
    "stepsize__",
    "treedepth__",
    "n_leapfrog__",
    "divergent__",
    "energy__",
];

/// The header row: `lp__,log_p__,log_q__` (MCMC: CmdStan's NUTS columns) then the
/// parameter columns.
pub fn header_row(r: &FitReport) -> String {
    let mut cols = if r.mcmc.is_some() {
        NUTS_COLUMNS.to_vec()
    } else {
        vec!["lp__", "log_p__", "log_q__"]
    };
    cols.extend(r.columns.iter().map(String::as_str));
    let mut out = cols.join(",");
    if let Some(ll) = log_lik(r) {
        for j in 1..=ll.ncols() {
            let _ = write!(out, ",log_lik.{j}");
        }
    }
    out
}

/// The pointwise log-likelihood (`loo = true`) as CmdStan's `log_lik` columns after the
/// others, where no output is already called `log_lik`: ArviZ's
/// `from_cmdstan(log_likelihood="log_lik")` reads them.
fn log_lik(r: &FitReport) -> Option<&nalgebra::DMatrix<f64>> {
    let taken = r
        .columns
        .iter()
        .any(|c| c == "log_lik" || c.starts_with("log_lik."));
    r.log_lik.as_ref().filter(|_| !taken).map(|ll| &ll.values)
}

fn push_log_lik(out: &mut String, r: &FitReport, i: usize) {
    if let Some(ll) = log_lik(r) {
        for j in 0..ll.ncols() {
            out.push(',');
            out.push_str(&number(ll[(i, j)]));
        }
    }
}

fn push_row(out: &mut String, r: &FitReport, i: usize) {
    if let Some(st) = r.mcmc.as_ref().and_then(|m| m.stats.get(i)) {
        let cells = [
            number(at(&r.lp, i)),
            number(st.accept_stat),
            number(st.stepsize),
            st.treedepth.to_string(),
            st.n_leapfrog.to_string(),
            u8::from(st.divergent).to_string(),
            number(st.energy),
        ];
        out.push_str(&cells.join(","));
        for j in 0..r.draws.ncols() {
            out.push(',');
            out.push_str(&number(r.draws[(i, j)]));
        }
        push_log_lik(out, r, i);
        out.push('\n');
        return;
    }
    let lq = r.log_q.as_ref().map_or(f64::NAN, |q| at(q, i));
    out.push_str(&number(at(&r.lp, i)));
    out.push(',');
    out.push_str(&number(at(&r.log_p, i)));
    out.push(',');
    out.push_str(&number(lq));
    for j in 0..r.draws.ncols() {
        out.push(',');
        out.push_str(&number(r.draws[(i, j)]));
    }
    push_log_lik(out, r, i);
    out.push('\n');
}

fn at(v: &[f64], i: usize) -> f64 {
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// One value in shortest round-trip form: `1.5e0`, `-2.25e-3`, `nan`, `inf`, `-inf`.
pub fn number(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_exactly() {
        for x in [0.1, -1.0 / 3.0, 1e-300, 6.02e23, 0.0, -0.0] {
            let s = number(x);
            let back: f64 = s.parse().unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{s}");
        }
        assert_eq!(number(f64::NAN), "nan");
        assert_eq!(number(f64::NEG_INFINITY), "-inf");
    }
}
