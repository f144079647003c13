//! PSIS-LOO, compare and LOO-PIT against ArviZ (arviz_stats 0.8) on posteriordb reference
//! draws. The fixtures in tests/data/loo/ come from `benches/loo_fixtures.py` (its doc says
//! how to rerun it): S = 1000 draws and reff = 1 on both sides.

use std::path::Path;

use approx::assert_relative_eq;
use mvi::posterior::loo::{self, Loo};
use nalgebra::DMatrix;
use serde_json::Value;

/// PSIS-LOO is deterministic arithmetic on the same inputs as ArviZ; only summation order
/// and libm rounding differ, far below this.
const ARVIZ_TOL: f64 = 1e-6;
/// ArviZ's stacking weights come from scipy's SLSQP at its default tolerance, ~5e-5 from
/// the optimum on kidiq; ours are the optimum to ~1e-10.
const STACKING_TOL: f64 = 2e-4;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/loo")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A list of rows (one per draw) as an S × N matrix.
fn rows(v: &Value) -> DMatrix<f64> {
    let r: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(floats).collect();
    DMatrix::from_fn(r.len(), r[0].len(), |i, j| r[i][j])
}

fn assert_matches_arviz(ours: &Loo, arviz: &Value) {
    assert_relative_eq!(
        ours.elpd_loo,
        arviz["elpd_loo"].as_f64().unwrap(),
        epsilon = ARVIZ_TOL
    );
    assert_relative_eq!(ours.se, arviz["se"].as_f64().unwrap(), epsilon = ARVIZ_TOL);
    assert_relative_eq!(ours.good_k, arviz["good_k"].as_f64().unwrap(), epsilon = 1e-12);
    assert_eq!(ours.warning(), arviz["warning"].as_bool().unwrap());
    let elpd_i = floats(&arviz["elpd_i"]);
    let khat = floats(&arviz["pareto_k"]);
    assert_eq!(ours.pointwise.len(), khat.len());
    for (n, p) in ours.pointwise.iter().enumerate() {
        assert_relative_eq!(p.elpd, elpd_i[n], epsilon = ARVIZ_TOL);
        assert_relative_eq!(p.khat, khat[n], epsilon = ARVIZ_TOL);
    }
}

fn assert_loo_matches_arviz(ours: &Loo, arviz: &Value) {
    assert_matches_arviz(ours, arviz);
    assert_relative_eq!(ours.p_loo, arviz["p_loo"].as_f64().unwrap(), epsilon = ARVIZ_TOL);
}

#[test]
fn eight_schools_loo_equals_arviz() {
    let f = fixture("eight_schools.json");
    let loo = loo::psis_loo(&rows(&f["log_lik"]), None, 1.0);
    assert_loo_matches_arviz(&loo, &f["loo"]);
    assert_eq!((loo.n_draws, loo.n_obs), (1000, 8));
}

#[test]
fn gp_poisson_loo_equals_arviz_including_high_khat() {
    let f = fixture("gp_pois_regr.json");
    let loo = loo::psis_loo(&rows(&f["log_lik"]), None, 1.0);
    assert_loo_matches_arviz(&loo, &f["loo"]);
    assert!(loo.n_high_k > 0);
    insta::assert_snapshot!(mvi::report::loo::render_loo(&loo));
}

/// log N(y_n | X_n β_s, σ_s), μ summed over the columns of X in order (as the fixture script).
fn kidiq_log_lik(y: &[f64], model: &Value) -> DMatrix<f64> {
    let x: Vec<Vec<f64>> = model["x"].as_array().unwrap().iter().map(floats).collect();
    let beta = rows(&model["beta"]);
    let sigma = floats(&model["sigma"]);
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    DMatrix::from_fn(sigma.len(), y.len(), |s, n| {
        let mut mu = 0.0;
        for (p, col) in x.iter().enumerate() {
            mu += beta[(s, p)] * col[n];
        }
        let z = (y[n] - mu) / sigma[s];
        -half_log_2pi - sigma[s].ln() - 0.5 * z * z
    })
}

fn kidiq_loos(f: &Value) -> Vec<(String, Loo)> {
    let y = floats(&f["y"]);
    f["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let name = m["name"].as_str().unwrap().to_string();
            (name, loo::psis_loo(&kidiq_log_lik(&y, m), None, 1.0))
        })
        .collect()
}

#[test]
fn kidiq_regressions_loo_equals_arviz() {
    let f = fixture("kidiq.json");
    for ((name, loo), m) in kidiq_loos(&f).iter().zip(f["models"].as_array().unwrap()) {
        assert_eq!(name, m["name"].as_str().unwrap());
        assert_loo_matches_arviz(loo, &m["loo"]);
        assert_eq!(loo.n_obs, 434);
    }
}

#[test]
fn kidiq_comparison_equals_arviz_compare() {
    let f = fixture("kidiq.json");
    let loos = kidiq_loos(&f);
    let models: Vec<(String, &Loo)> = loos.iter().map(|(n, l)| (n.clone(), l)).collect();
    let rows = loo::compare(&models).unwrap();
    let arviz = f["compare"].as_array().unwrap();
    assert_eq!(rows.len(), arviz.len());
    for (ours, theirs) in rows.iter().zip(arviz) {
        assert_eq!(ours.name, theirs["name"].as_str().unwrap());
        assert_eq!(ours.rank as u64, theirs["rank"].as_u64().unwrap());
        assert_eq!(ours.warning, theirs["warning"].as_bool().unwrap());
        let num = |key: &str| theirs[key].as_f64().unwrap();
        assert_relative_eq!(ours.elpd_loo, num("elpd_loo"), epsilon = ARVIZ_TOL);
        assert_relative_eq!(ours.p_loo, num("p_loo"), epsilon = ARVIZ_TOL);
        assert_relative_eq!(ours.elpd_diff, num("elpd_diff"), epsilon = ARVIZ_TOL);
        assert_relative_eq!(ours.se, num("se"), epsilon = ARVIZ_TOL);
        assert_relative_eq!(ours.dse, num("dse"), epsilon = ARVIZ_TOL);
        assert_relative_eq!(ours.weight, num("weight"), epsilon = STACKING_TOL);
    }
    insta::assert_snapshot!(mvi::report::loo::render_comparison(&rows));
}

#[test]
fn comparison_of_models_with_different_data_is_an_error() {
    let f = fixture("kidiq.json");
    let kidiq = kidiq_loos(&f);
    let eight = fixture("eight_schools.json");
    let schools = loo::psis_loo(&rows(&eight["log_lik"]), None, 1.0);
    let err = loo::compare(&[("kidiq".into(), &kidiq[0].1), ("schools".into(), &schools)]);
    assert!(err.is_err());
}

#[test]
fn corrected_eight_schools_elpd_and_khat_equal_arviz_approximate_posterior() {
    // ArviZ's loo_approximate_posterior takes lppd from the raw draws, so p_loo differs on
    // purpose (see posterior::loo); elpd_n, se and k̂_n are the same computation.
    let f = fixture("eight_schools.json");
    let correction = floats(&f["log_correction"]);
    let loo = loo::psis_loo(&rows(&f["log_lik"]), Some(&correction), 1.0);
    assert_matches_arviz(&loo, &f["loo_corrected"]);
    assert!(loo.corrected);
}

#[test]
fn continuous_loo_pit_equals_arviz() {
    let f = fixture("eight_schools.json");
    let pit = loo::loo_pit(
        &floats(&f["y"]),
        &rows(&f["y_rep"]),
        &rows(&f["log_lik"]),
        None,
        1.0,
        None,
    );
    for (ours, theirs) in pit.iter().zip(floats(&f["loo_pit"])) {
        assert_relative_eq!(*ours, theirs, epsilon = ARVIZ_TOL);
    }
}

#[test]
fn discrete_loo_pit_with_midpoint_ties_equals_arviz() {
    let f = fixture("gp_pois_regr.json");
    let pit = loo::loo_pit(
        &floats(&f["y"]),
        &rows(&f["y_rep"]),
        &rows(&f["log_lik"]),
        None,
        1.0,
        None,
    );
    for (ours, theirs) in pit.iter().zip(floats(&f["loo_pit_midpoint"])) {
        assert_relative_eq!(*ours, theirs, epsilon = ARVIZ_TOL);
    }
}

#[test]
fn pictures_of_the_fixtures_draw() {
    let schools = fixture("eight_schools.json");
    let gp = fixture("gp_pois_regr.json");
    let ppc = mvi::report::loo::ppc_svg(
        &floats(&schools["y"]),
        &rows(&schools["y_rep"]),
        false,
        "eight schools",
    );
    let root = mvi::report::loo::ppc_svg(&floats(&gp["y"]), &rows(&gp["y_rep"]), true, "gp_pois_regr");
    let pit = mvi::report::loo::loo_pit_svg(&floats(&schools["loo_pit"]), "eight schools LOO-PIT");
    for (name, svg) in [("ppc", ppc), ("rootogram", root), ("pit", pit)] {
        let svg = svg.unwrap();
        if let Ok(dir) = std::env::var("MVI_LOO_SVG_DIR") {
            std::fs::write(Path::new(&dir).join(format!("{name}.svg")), &svg).unwrap();
        }
        assert!(svg.starts_with("<svg"));
    }
}
