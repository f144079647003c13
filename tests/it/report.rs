//! The report layer on a hand-made fit: snapshots of the summary, the compare table, the
//! `draws.csv` header and `fit.json`; round trips of the CSV; plots; atomic output files.
//! Review snapshot changes with `cargo insta review`.

use crate::fixture;

use mvi::fsutil::write_atomic;
use mvi::report::{
    self, csv, render_compare, render_compare_json, render_draws_csv, render_fit_json, render_json,
    render_posterior_svg, render_summary, render_trace_svg, ApproxSummary, Estimate, FitReport,
};
use mvi::run::write_output_dir;
use nalgebra::DMatrix;
use std::fs;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("report-{name}"));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn summary_matches_snapshot() {
    insta::assert_snapshot!(render_summary(&fixture::report("mvi_lr", 400, 7)));
}

#[test]
fn summary_is_identical_for_the_same_report_and_differs_for_another_seed() {
    let a = render_summary(&fixture::report("mvi_lr", 400, 7));
    assert_eq!(a, render_summary(&fixture::report("mvi_lr", 400, 7)));
    assert_ne!(a, render_summary(&fixture::report("mvi_lr", 400, 8)));
}

#[test]
fn summary_warns_on_large_khat_and_interruption() {
    let mut r = fixture::report("vi_diag", 50, 1);
    r.khat = Some(0.93);
    r.interrupted = true;
    let s = render_summary(&r);
    assert!(
        s.contains("k̂ = 0.93 (> 0.7: the approximation is not reliable"),
        "{s}"
    );
    assert!(s.contains("interrupted"), "{s}");
    r.khat = None;
    assert!(render_summary(&r).contains("PSIS k̂: not available"));
}

#[test]
fn summary_table_is_aligned() {
    let s = render_summary(&fixture::report("mvi_lr", 100, 3));
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("parameter"))
        .take(8)
        .collect();
    assert_eq!(rows.len(), 8);
    let width = rows[0].chars().count();
    assert!(rows.iter().all(|r| r.chars().count() == width), "{rows:#?}");
}

fn compare_reports() -> Vec<FitReport> {
    let mut laplace = fixture::report("laplace", 200, 1);
    laplace.elbo_fresh = Some(Estimate {
        value: -13.1,
        se: 0.2,
    });
    laplace.khat = Some(0.81);
    laplace.wall_time_s = 0.01;
    laplace.iterations = 9;
    let mut lr = fixture::report("mvi_lr", 200, 2);
    lr.log_evidence = None;
    lr.khat = Some(0.35);
    if let Some(p) = lr.predict.as_mut() {
        p.test_lpd = -72.6;
    }
    let mut diag = fixture::report("vi_diag", 200, 3);
    diag.log_evidence = None;
    diag.elbo_fresh = Some(Estimate {
        value: -12.9,
        se: 0.1,
    });
    diag.khat = Some(0.55);
    if let Some(p) = diag.predict.as_mut() {
        p.test_lpd = -73.6;
        p.metric = Some(report::PredictMetric::Mse(0.2));
    }
    diag.iterations = 40;
    vec![laplace, lr, diag]
}

#[test]
fn compare_table_matches_snapshot() {
    insta::assert_snapshot!(render_compare(&compare_reports()));
}

#[test]
fn compare_marks_the_best_of_each_column() {
    let v: serde_json::Value = serde_json::from_str(&render_compare_json(&compare_reports())).unwrap();
    let best = &v["best"];
    assert_eq!(best["elbo_fresh"], "mvi_lr");
    assert_eq!(best["log_evidence"], "laplace");
    assert_eq!(best["khat"], "mvi_lr");
    assert_eq!(best["test_lpd"], "mvi_lr");
    assert_eq!(best["error"], "vi_diag");
    assert_eq!(best["wall_time_s"], "laplace");
    assert_eq!(best["iterations"], "laplace");
    assert_eq!(v["methods"].as_array().unwrap().len(), 3);
}

#[test]
fn csv_header_matches_snapshot() {
    let r = fixture::report("mvi_lr", 10, 7);
    let text = render_draws_csv(&r);
    let header: Vec<&str> = text.lines().take_while(|l| !l.starts_with("lp__")).collect();
    let columns = text.lines().find(|l| l.starts_with("lp__")).unwrap();
    insta::assert_snapshot!(format!("{}\n{columns}", header.join("\n")));
}

#[test]
fn csv_rows_read_back_bit_for_bit() {
    let r = fixture::report("mvi_lr", 25, 7);
    let text = render_draws_csv(&r);
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("lp__"))
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 25);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), 3 + 7);
        assert_eq!(row[0].to_bits(), r.lp[i].to_bits());
        assert_eq!(row[2].to_bits(), r.log_q.as_ref().unwrap()[i].to_bits());
        for j in 0..7 {
            assert_eq!(row[3 + j].to_bits(), r.draws[(i, j)].to_bits());
        }
    }
}

#[test]
fn csv_marks_interruption_and_missing_log_q() {
    let mut r = fixture::report("pmfvb", 3, 7);
    r.interrupted = true;
    r.log_q = None;
    let text = render_draws_csv(&r);
    assert!(text.contains("# interrupted = true"));
    let first = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.starts_with("lp__"))
        .unwrap();
    assert_eq!(first.split(',').nth(2), Some("nan"));
    assert_eq!(csv::header_row(&r).split(',').count(), 10);
}

#[test]
fn fit_json_matches_snapshot() {
    insta::assert_snapshot!(render_fit_json(&fixture::report("mvi_lr", 40, 7)));
}

#[test]
fn fit_json_holds_means_trace_and_covariance() {
    let r = fixture::report("mvi_lr", 300, 5);
    let v: serde_json::Value = serde_json::from_str(&render_fit_json(&r)).unwrap();
    let sums = r.column_summaries();
    for (name, s) in r.columns.iter().zip(&sums) {
        let m = v["parameters"][name]["mean"].as_f64().unwrap();
        approx::assert_relative_eq!(m, s.mean, max_relative = 1e-15);
    }
    assert_eq!(v["trace"].as_array().unwrap().len(), 20);
    assert_eq!(v["approximation"]["cov"].as_array().unwrap().len(), 7);
    assert_eq!(v["predict"]["mse"], 0.25);
    assert!(v["predict"]["error_rate"].is_null());
    assert_eq!(v["khat"], 0.42);
}

#[test]
fn json_summary_has_the_summary_but_not_the_trace() {
    let v: serde_json::Value = serde_json::from_str(&render_json(&fixture::report("mvi_lr", 30, 5))).unwrap();
    assert!(v.get("trace").is_none());
    assert_eq!(v["method"], "mvi_lr");
    assert_eq!(v["elbo_fresh"]["se"], 0.05);
    assert_eq!(v["theta"]["tau"], 1.3);
}

#[test]
fn mixture_approximation_lists_its_components_in_fit_json() {
    let mut r = fixture::report("split_mf", 20, 5);
    r.approx = ApproxSummary::Mixture {
        weights: vec![0.5, 0.5],
        means: vec![vec![0.0; 7], vec![1.0; 7]],
        covs: vec![DMatrix::identity(7, 7), DMatrix::identity(7, 7)],
    };
    let v: serde_json::Value = serde_json::from_str(&render_fit_json(&r)).unwrap();
    assert_eq!(v["approximation"]["kind"], "mixture");
    assert_eq!(v["approximation"]["components"].as_array().unwrap().len(), 2);
    assert_eq!(v["approximation"]["mean"][0], 0.5);
    assert!(render_posterior_svg(&r).unwrap().contains("<svg"));
}

#[test]
fn posterior_svg_names_every_parameter_and_draws_ellipses() {
    let r = fixture::report("mvi_lr", 200, 5);
    let svg = render_posterior_svg(&r).unwrap();
    assert!(svg.starts_with("<svg"));
    for c in &r.columns {
        assert!(svg.contains(&format!(">\n{c}\n<")), "missing panel for {c}");
    }
    // Red is only used for q's ellipses.
    assert!(svg.contains("#FF0000"), "no ellipse drawn");
}

#[test]
fn posterior_svg_notes_when_parameters_are_left_out() {
    let mut r = fixture::report("mvi_lr", 20, 5);
    let n = 20;
    r.columns = (1..=n).map(|i| format!("w.{i}")).collect();
    r.unconstrained_index = (0..n).map(Some).collect();
    r.draws = DMatrix::from_fn(20, n, |i, j| (i * j) as f64 / 7.0);
    let svg = render_posterior_svg(&r).unwrap();
    assert!(svg.contains("first 16 of 20 parameters shown"));
    assert!(!svg.contains(">\nw.17\n<"));
}

#[test]
fn trace_svg_draws_the_objective_and_handles_an_empty_trace() {
    let mut r = fixture::report("mvi_lr", 20, 5);
    let svg = render_trace_svg(&r).unwrap();
    assert!(svg.contains("iteration") && svg.contains("<polyline"));
    r.trace.clear();
    assert!(render_trace_svg(&r).unwrap().contains("no iterations recorded"));
}

#[test]
fn output_dir_gets_all_four_files_and_no_temp_files() {
    let d = scratch("outdir");
    let r = fixture::report("mvi_lr", 50, 5);
    write_output_dir(&d.join("fit"), &r, true).unwrap();
    let mut names: Vec<String> = fs::read_dir(d.join("fit"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["draws.csv", "fit.json", "posterior.svg", "trace.svg"]);
    assert_eq!(
        fs::read_to_string(d.join("fit/draws.csv")).unwrap(),
        render_draws_csv(&r)
    );
    write_output_dir(&d.join("noplots"), &r, false).unwrap();
    assert_eq!(fs::read_dir(d.join("noplots")).unwrap().count(), 2);
}

#[test]
fn atomic_write_replaces_content_without_leftovers() {
    let d = scratch("atomic");
    let p = d.join("draws.csv");
    fs::write(&p, "old content that is longer than the new one").unwrap();
    write_atomic(&p, b"new").unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "new");
    assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
}

#[test]
fn a_fit_interrupted_before_any_draw_still_renders_everywhere() {
    let mut r = fixture::report("mvi_lr", 0, 5);
    r.interrupted = true;
    r.trace.clear();
    assert!(render_summary(&r).contains("NaN"));
    assert_eq!(
        render_draws_csv(&r)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count(),
        1
    );
    let v: serde_json::Value = serde_json::from_str(&render_fit_json(&r)).unwrap();
    assert!(v["parameters"]["w.1"]["mean"].is_null());
    assert!(render_posterior_svg(&r).unwrap().contains("no finite draws"));
    assert!(render_trace_svg(&r).is_ok());
}

/// A fit stopped by Ctrl-C is listed but never ranked best (its short time and few
/// iterations are the interruption's, not the method's); one that did not converge is named.
#[test]
fn compare_names_interrupted_and_unconverged_fits_and_ranks_only_finished_ones() {
    let mut reports = compare_reports();
    reports[0].interrupted = true;
    reports[2].converged = false;
    let table = render_compare(&reports);
    assert!(table.contains("interrupted: laplace"), "{table}");
    assert!(table.contains("not converged: vi_diag"), "{table}");
    let v: serde_json::Value = serde_json::from_str(&render_compare_json(&reports)).unwrap();
    assert_eq!(v["best"]["wall_time_s"], "mvi_lr", "{v}");
    assert_eq!(v["best"]["iterations"], "mvi_lr", "{v}");
    assert_eq!(v["methods"][0]["interrupted"], true, "{v}");
}
