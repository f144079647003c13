//! Laplace on a joint density without a mode, through the real pipeline: eight schools
//! written centred (`tests/fixtures/funnel/eight_schools_centred.mvi`), whose mode search runs
//! into the neck of the funnel (tau → 0 with the school effects collapsed onto mu).
//!
//! Checked: `laplace` and a method that starts from it fail with a diagnostic that says the
//! density has no maximum and names `tau`, its value on the declared scale and what to try;
//! the CLI exits 2 with it; `pmfvb`, `vi_diag` and `vi_full` fall back to a vi_diag start and
//! fit; and a sharp but proper posterior (2000 observations, σ ≈ 10⁻³) is fitted, not flagged.

use std::process::Command;

use crate::common::root;
use mvi::check::{self, TypedModel};
use mvi::data::{add_json_text, DataSet};
use mvi::density::LogDensity;
use mvi::graph::{self, LogJoint};
use mvi::infer::Silent;
use mvi::run::{self, RunInfo};

const CENTRED: &str = "tests/fixtures/funnel/eight_schools_centred.mvi";
const SCHOOLS: &str = "examples/data/eight_schools.json";

fn lower(typed: &TypedModel) -> LogJoint {
    graph::lower_model(typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

fn centred() -> (TypedModel, LogJoint) {
    let data = root().join(SCHOOLS).display().to_string();
    let typed = check::load_model(&root().join(CENTRED), &[data])
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = lower(&typed);
    (typed, joint)
}

/// `run::fit` with `--method <method>`: the diagnostic's message and help line, or the fit's
/// notes.
fn fit(typed: &TypedModel, joint: &LogJoint, method: &str) -> Result<Vec<String>, String> {
    let options = check::infer_options(typed, &[("method".to_string(), method.to_string())])
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    run::fit(joint, &options, &RunInfo::default(), &mut Silent)
        .map(|(post, _)| post.notes)
        .map_err(|d| format!("{}\nhelp: {}", d.message, d.help.unwrap_or_default()))
}

#[test]
fn laplace_on_a_centred_hierarchy_says_there_is_no_mode_and_names_the_scale() {
    let (typed, joint) = centred();
    for method in ["laplace", "mvi_lr"] {
        let text = fit(&typed, &joint, method).expect_err("there is no mode to fit");
        assert!(
            text.contains(&format!("{method} failed: the joint density has no maximum")),
            "{text}"
        );
        assert!(
            text.contains("as `tau` runs off into the neck of a funnel (tau ≈ "),
            "{text}"
        );
        assert!(
            text.contains("as `tau` → 0 the values it scales collapse"),
            "{text}"
        );
        assert!(
            text.contains("`--method pmfvb`") && text.contains("non-centred"),
            "{text}"
        );
        assert!(!text.contains("not negative definite"), "{text}");
    }
}

#[test]
fn the_cli_exits_2_with_the_no_mode_diagnostic() {
    let out = Command::new(env!("CARGO_BIN_EXE_mvi"))
        .args(["run", CENTRED, "--data", SCHOOLS, "--method", "laplace"])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the mvi binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no maximum") && stderr.contains("`tau`"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn pmfvb_falls_back_to_a_vi_diag_start_and_quotes_the_reason() {
    let (typed, joint) = centred();
    let notes = fit(&typed, &joint, "pmfvb").unwrap_or_else(|d| panic!("{d}"));
    let start = notes
        .iter()
        .find(|n| n.starts_with("started from a vi_diag fit, not the Laplace fit"))
        .unwrap_or_else(|| panic!("no fallback note in {notes:?}"));
    assert!(start.contains("no maximum") && start.contains("`tau`"), "{start}");
}

#[test]
fn vi_diag_and_vi_full_fall_back_to_a_vi_diag_start_and_report_no_evidence() {
    let (typed, joint) = centred();
    for method in ["vi_diag", "vi_full"] {
        let options = check::infer_options(&typed, &[("method".to_string(), method.to_string())])
            .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
        let (post, _) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
            .unwrap_or_else(|d| panic!("{method}: {}", d.render_plain(200)));
        let start = post
            .notes
            .iter()
            .find(|n| n.starts_with("started from a vi_diag fit from the initial point"))
            .unwrap_or_else(|| panic!("{method}: no fallback note in {:?}", post.notes));
        assert!(start.contains("no maximum"), "{start}");
        assert!(
            post.log_evidence.is_none(),
            "{method}: no Laplace evidence to report"
        );
        let (elbo, se) = post.fresh_elbo.expect("VI methods report a fresh-draw ELBO");
        assert!(elbo.is_finite() && se.is_finite(), "{method}: {elbo} ± {se}");
        // tau > 0 away from the neck: the fit has a usable spread, not a collapsed one.
        let tau = joint
            .coordinate_names()
            .iter()
            .position(|n| n == "tau")
            .expect("tau is a coordinate");
        let sd = post.cov()[(tau, tau)].sqrt();
        assert!(sd > 0.1, "{method}: sd of log tau {sd}");
    }
}

#[test]
fn a_sharp_proper_posterior_is_fitted_by_laplace() {
    // y_i = 3 + 10⁻³ sin(i), i = 1..2000: the posterior of sigma is ≈ 7·10⁻⁴ ± 1.6·10⁻⁵
    let y: Vec<String> = (1..=2000)
        .map(|i| format!("{}", 3.0 + 1e-3 * f64::from(i).sin()))
        .collect();
    let mut data = DataSet::default();
    add_json_text(&mut data, "sharp.json", format!("{{\"y\": [{}]}}", y.join(", ")))
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let source = "data {\n  y: vector[N]\n}\nparam {\n  mu: real\n  sigma: real<lower=0>\n}\n\
                  model {\n  mu ~ normal(0, 10)\n  sigma ~ half_normal(1)\n  y ~ normal(mu, sigma)\n}\n";
    let typed = check::check_source(source, "sharp.mvi", root(), &data)
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = lower(&typed);
    let options = check::infer_options(&typed, &[("method".to_string(), "laplace".to_string())])
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let (post, report) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(200)));
    assert!(post.converged, "{:?}", post.notes);
    let sigma = report
        .columns
        .iter()
        .position(|c| c == "sigma")
        .expect("a sigma column");
    let mean = report.draws.column(sigma).mean();
    assert!((mean - 7.07e-4).abs() < 2e-5, "sigma ≈ {mean}");
}
