//! Accuracy against gold-standard posteriors: the 34 posteriordb posteriors of
//! `benches/posteriordb/` (Stan models translated to `.mvi`, posteriordb's data unchanged)
//! are parsed, checked, lowered and fitted through `run::fit`, and the fitted q is compared
//! on Stan's unconstrained scale with the moments of posteriordb's 10 000 NUTS reference
//! draws (`<posterior>/reference.json`, written by `benches/posteriordb/make_reference.py`).
//!
//! For each posterior, `laplace` and `mvi_lr` are fitted, and `vi_full` where D ≤ 30 (all
//! twelve; eight schools is the exception for Laplace and mvi_lr, below): every coordinate's
//! mean must lie within a tolerance measured in reference sds, and every sd ratio q/reference
//! within a band. The tolerances are what a *correct* Gaussian approximation of that posterior
//! must achieve, not what mvi happens to reach:
//!
//! - **VI (`mvi_lr`, `vi_full`)** minimise KL(q‖p) over Gaussians. On these near-Gaussian
//!   posteriors (|skewness| < 0.25 in every coordinate but eight schools' log tau) the
//!   optimum's mean is within a few hundredths of a reference sd of the true mean, and its
//!   sds are at most a few per cent below the true ones (KL(q‖p) under-disperses along
//!   directions where p has heavier-than-Gaussian tails, as the Student-t marginals of
//!   regression coefficients with an unknown sigma do). Both sides carry noise: the
//!   reference moments from 10 000 autocorrelated draws (about 0.01–0.02 sd), and the VI
//!   objective's fixed sample (S = 1000 draws) adds O(1/√S) to the mean and the sds. Hence
//!   `VI`: mean within 0.2 sd, sd ratio in [0.85, 1.10].
//! - **Laplace** is centred at the mode of the joint density on the unconstrained scale,
//!   not at the mean. With flat or weak priors and an unknown sigma this shifts log sigma
//!   by about ½ log((N − 1)/(N − p)) + 1/(2(N − p)), where p is the number of
//!   coefficients: a known bias that is a sizeable fraction of log sigma's sd when N is small
//!   relative to p (mesquite: N = 46, p = 7, about 0.75 sd; blr: about 0.35 sd; kilpisjarvi:
//!   about 0.2 sd); and its covariance, −H⁻¹ at the mode, uses the mode's (smaller) sigma, so the
//!   coefficients' sds come out low by about √((N − p)/(N − 1)). `laplace_tol` states each
//!   posterior's tolerance from these figures.
//! - **Eight schools** is hierarchical with a skewed log tau (skewness −1.39): no Gaussian
//!   matches it, and Laplace's mode in log tau sits 2.2 sds above the mean (its sds of the
//!   theta_trans are 0.4–0.6 of the reference). Laplace is therefore not compared
//!   coordinate by coordinate there, and neither is mvi_lr, which is bound to Laplace's
//!   Cholesky factor plus a rank-1 update (its own test says what it must achieve);
//!   vi_full is, with log tau allowed a wider band (its KL(q‖p)-optimal Gaussian is
//!   narrower than the skewed marginal: sd ratio about 0.65).
//!
//! The 22 further posteriors (the shared extract's `more/`, issue 17) are checked the same
//! way, with the cost split to keep the default suite cheap: Laplace on the 19 regressions
//! runs by default (`more_regressions_laplace_matches_the_reference`, about a second), and
//! the VI methods on them, the two hidden-Markov models and the Gaussian process are
//! `#[ignore]`d (a minute or more in the test profile):
//!
//! ```sh
//! cargo test --release --test it -- --ignored posteriordb::
//! ```
//!
//! - **hmm_drive_0/1** are fitted with the model's `restarts = 20` (the search from 0 stops
//!   at a local mode 60 nats below the one NUTS explores). hmm_drive_0's coordinate
//!   log(lambda[2] − lambda[1]) is skewed (−2.2), so Laplace's sds are allowed down to 0.75
//!   of the reference.
//! - **gp_pois_regr** has no Gaussian that meets `VI`: log rho, log alpha and f_tilde[1]
//!   are bent around one another (f[1] ≈ alpha f_tilde[1]), and the KL(q‖p)-optimal
//!   Gaussian (vi_full, mvi_lr with rank 13) has their sds at 0.4–0.5 of the reference,
//!   while Laplace's mode is 1.3 sds from the mean in log alpha. Its test states what the
//!   Gaussian optimum does reach.
//!
//! `vi_diag` on kilpisjarvi (alpha and beta correlated with |ρ| = 0.99999) documents the
//! known mean-field variance collapse: its marginal sds of alpha and beta are far *below*
//! the reference (the KL(q‖p) optimum of a diagonal Gaussian has variances 1/(Σ⁻¹)ᵢᵢ,
//! which is (1 − ρ²) times the marginal variance, a factor of about 0.005 in sd).
//!
//! Runtime: every fit uses the methods' defaults (S = 1000 draws in the VI objective; with
//! S = 200 the fixed-sample noise alone moves some sd ratios by 10–15 %), seed 1. The whole
//! file takes about 20 s in the test profile on 2 shared cores (17 s measured).

use std::path::{Path, PathBuf};

use mvi::check::{self, TypedModel};
use mvi::graph::{self, LogJoint, ParamInfo};
use mvi::infer::Silent;
use mvi::posterior::{Approximation, Posterior};
use mvi::report::mcmc::McmcReport;
use mvi::report::FitReport;
use mvi::run::{self, RunInfo};
use nalgebra::{DMatrix, DVector};
use serde_json::Value;

/// A tolerance: |mean − reference mean| ≤ `mean_sd` reference sds, and
/// `sd_lo` ≤ sd / reference sd ≤ `sd_hi`, for every coordinate.
#[derive(Debug, Clone, Copy)]
struct Tol {
    mean_sd: f64,
    sd_lo: f64,
    sd_hi: f64,
}

/// What a KL(q‖p)-optimal Gaussian must reach on a near-Gaussian posterior (module doc).
const VI: Tol = Tol {
    mean_sd: 0.2,
    sd_lo: 0.85,
    sd_hi: 1.10,
};

/// The reference moments of one posterior on the unconstrained scale.
struct Reference {
    names: Vec<String>,
    mean: DVector<f64>,
    sd: DVector<f64>,
    cov: DMatrix<f64>,
}

fn folder(posterior: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/posteriordb")
        .join(posterior)
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array of numbers")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn reference(posterior: &str) -> Reference {
    let path = folder(posterior).join("reference.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("reference.json is valid JSON");
    let names = v["names"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n.as_str().expect("a name").to_string())
        .collect::<Vec<_>>();
    let rows: Vec<Vec<f64>> = v["cov"]
        .as_array()
        .expect("cov rows")
        .iter()
        .map(numbers)
        .collect();
    let d = names.len();
    Reference {
        mean: DVector::from_vec(numbers(&v["mean"])),
        sd: DVector::from_vec(numbers(&v["sd"])),
        cov: DMatrix::from_fn(d, d, |i, j| rows[i][j]),
        names,
    }
}

fn load(posterior: &str) -> (TypedModel, LogJoint) {
    let dir = folder(posterior);
    let typed = check::load_model(
        &dir.join("model.mvi"),
        &[dir.join("data.json").display().to_string()],
    )
    .unwrap_or_else(|ds| {
        panic!(
            "{posterior} does not check:\n{}",
            ds.iter().map(|d| d.render_plain(100)).collect::<String>()
        )
    });
    let joint = graph::lower_model(&typed).unwrap_or_else(|d| panic!("{posterior}: {}", d.render_plain(100)));
    (typed, joint)
}

/// Stan's names of the unconstrained coordinates of one parameter (`beta[1]`, `sigma`).
fn stan_names(p: &ParamInfo) -> Vec<String> {
    match p.shape {
        graph::Shape::Scalar => vec![p.name.clone()],
        graph::Shape::Vector(n) => (1..=n).map(|i| format!("{}[{i}]", p.name)).collect(),
        graph::Shape::Matrix(r, c) => (1..=c)
            .flat_map(|j| (1..=r).map(move |i| format!("{}[{i},{j}]", p.name)))
            .collect(),
    }
}

fn fit(typed: &TypedModel, joint: &LogJoint, method: &str) -> Posterior {
    fit_with_report(typed, joint, method).0
}

fn fit_with_report(typed: &TypedModel, joint: &LogJoint, method: &str) -> (Posterior, FitReport) {
    fit_with(typed, joint, &[("method", method), ("seed", "1")])
}

/// A fit with the given `infer` options (`method` among them).
fn fit_with(typed: &TypedModel, joint: &LogJoint, options: &[(&str, &str)]) -> (Posterior, FitReport) {
    let opts: Vec<(String, String)> = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let options =
        check::infer_options(typed, &opts).unwrap_or_else(|d| panic!("{options:?}: {}", d.render_plain(100)));
    run::fit(joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{:?}: {}", opts, d.render_plain(100)))
}

/// Per coordinate: (mean error in reference sds, sd ratio q / reference).
fn marginals(post: &Posterior, r: &Reference) -> Vec<(f64, f64)> {
    let (mean, cov) = (post.mean(), post.cov());
    (0..r.mean.len())
        .map(|i| {
            (
                (mean[i] - r.mean[i]) / r.sd[i],
                cov[(i, i)].max(0.0).sqrt() / r.sd[i],
            )
        })
        .collect()
}

/// Every coordinate not in `skip` within `tol`; the failures listed by name.
fn assert_within(posterior: &str, method: &str, post: &Posterior, r: &Reference, tol: Tol, skip: &[&str]) {
    let bad: Vec<String> = marginals(post, r)
        .iter()
        .zip(&r.names)
        .filter(|(_, name)| !skip.contains(&name.as_str()))
        .filter(|((z, ratio), _)| z.abs() > tol.mean_sd || *ratio < tol.sd_lo || *ratio > tol.sd_hi)
        .map(|((z, ratio), name)| format!("{name}: mean error {z:+.3} sd, sd ratio {ratio:.3}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{posterior} {method} outside {tol:?}:\n  {}",
        bad.join("\n  ")
    );
}

/// Laplace's tolerance on each posterior (module doc: the mode-vs-mean shift of log sigma and
/// the coefficients' sds at the mode's sigma), or `None` where Laplace is not compared.
fn laplace_tol(posterior: &str) -> Option<Tol> {
    let tol = |mean_sd, sd_lo| Tol {
        mean_sd,
        sd_lo,
        sd_hi: 1.05,
    };
    match posterior {
        // hierarchical, skewed log tau: no coordinate-wise comparison (module doc)
        "eight_schools-eight_schools_noncentered" => None,
        // N = 46, p = 7 (or 6), flat priors: log sigma's shift ≈ 0.75 (0.65) sd, sds ≈ √(39/45)
        // ≈ 0.93 low
        "mesquite-logmesquite_logvas"
        | "mesquite-logmesquite"
        | "mesquite-mesquite"
        | "mesquite-logmesquite_logvash" => Some(tol(1.0, 0.85)),
        // skewed coordinates (hmm_drive_0: log(lambda[2] - lambda[1]), skewness -2.2): the
        // mode's curvature is narrower than the marginal spread
        "bball_drive_event_0-hmm_drive_0" | "bball_drive_event_1-hmm_drive_1" => Some(tol(0.4, 0.75)),
        // N = 100, p = 5: log sigma's shift ≈ 0.35 sd
        "sblrc-blr" | "sblri-blr" => Some(tol(0.5, 0.9)),
        // N = 62, p = 2 with an informative prior on beta: log sigma's shift ≈ 0.2 sd, which
        // moves alpha and beta through the prior's weight; sds ≈ 0.93 of the reference
        "kilpisjarvi_mod-kilpisjarvi" => Some(tol(0.4, 0.88)),
        // N from 200 to 5000 with p ≤ 25: the shift is at most ≈ 0.35 sd
        _ => Some(tol(0.4, 0.9)),
    }
}

/// The coordinates exempt from the VI comparison, with the wider band they get instead.
fn vi_exempt(posterior: &str) -> (&'static [&'static str], Tol) {
    match posterior {
        // log tau: skewness −1.39; KL(q‖p) puts a narrower Gaussian nearer the mode
        "eight_schools-eight_schools_noncentered" => (
            &["tau"],
            Tol {
                mean_sd: 0.5,
                sd_lo: 0.6,
                sd_hi: 1.1,
            },
        ),
        _ => (&[], VI),
    }
}

/// The methods compared coordinate by coordinate with `VI`: `mvi_lr` (except on eight
/// schools, see `eight_schools_mvi_lr_improves_on_laplace_within_its_family`) and `vi_full`
/// where D ≤ 30.
fn vi_methods(posterior: &str, dim: usize) -> Vec<&'static str> {
    let mut methods = Vec::new();
    if posterior != "eight_schools-eight_schools_noncentered" {
        methods.push("mvi_lr");
    }
    if dim <= 30 {
        methods.push("vi_full");
    }
    methods
}

/// The model, its lowering and the reference, after checking that mvi's coordinates are
/// Stan's.
fn load_checked(posterior: &str) -> (TypedModel, LogJoint, Reference) {
    let (typed, joint) = load(posterior);
    let r = reference(posterior);
    let names: Vec<String> = joint.params.iter().flat_map(stan_names).collect();
    assert_eq!(names, r.names, "{posterior}: mvi's coordinates are not Stan's");
    assert!(
        r.cov.iter().all(|c| c.is_finite()),
        "{posterior}: reference covariance"
    );
    (typed, joint, r)
}

/// Laplace within `laplace_tol` (where it is compared).
fn check_laplace(posterior: &str, typed: &TypedModel, joint: &LogJoint, r: &Reference) {
    if let Some(tol) = laplace_tol(posterior) {
        let post = fit(typed, joint, "laplace");
        assert_within(posterior, "laplace", &post, r, tol, &[]);
    }
}

/// The whole check of one posterior: layout, laplace, mvi_lr, vi_full.
fn check_posterior(posterior: &str) {
    let (typed, joint, r) = load_checked(posterior);
    check_laplace(posterior, &typed, &joint, &r);
    check_vi(posterior, &typed, &joint, &r);
}

/// mvi_lr and vi_full (`vi_methods`) within `VI`, with `vi_exempt`'s exceptions.
fn check_vi(posterior: &str, typed: &TypedModel, joint: &LogJoint, r: &Reference) {
    let (exempt, wide) = vi_exempt(posterior);
    for m in vi_methods(posterior, typed.dim) {
        let post = fit(typed, joint, m);
        assert_within(posterior, m, &post, r, VI, exempt);
        if !exempt.is_empty() {
            let only: Vec<&str> = r
                .names
                .iter()
                .map(String::as_str)
                .filter(|n| !exempt.contains(n))
                .collect();
            assert_within(posterior, m, &post, r, wide, &only);
        }
    }
}

#[test]
fn eight_schools_noncentered_vi_full_matches_the_reference() {
    check_posterior("eight_schools-eight_schools_noncentered");
}

/// mvi_lr's q is N(m, (L + u vᵀ)(L + u vᵀ)ᵀ) with L the Laplace Cholesky factor and a
/// rank-1 update: on eight schools Laplace's sds of the eight theta_trans are 0.4–0.6 of the
/// reference, and one rank-1 direction cannot widen all eight, so mvi_lr cannot reach the
/// full-Gaussian optimum there (vi_full and mvi_eig do). What it must do is improve on its
/// Laplace start: a higher fresh-draw ELBO, beyond both standard errors, no mean further
/// from the reference than Laplace's, and log tau's error (Laplace's is 2.2 sd) at least
/// halved.
#[test]
fn eight_schools_mvi_lr_improves_on_laplace_within_its_family() {
    let posterior = "eight_schools-eight_schools_noncentered";
    let (typed, joint) = load(posterior);
    let r = reference(posterior);
    let (laplace, laplace_report) = fit_with_report(&typed, &joint, "laplace");
    let (lr, lr_report) = fit_with_report(&typed, &joint, "mvi_lr");
    let fresh = |r: &FitReport| r.elbo_fresh.map(|e| (e.value, e.se)).expect("a fresh-draw ELBO");
    let ((el, sel), (em, sem)) = (fresh(&laplace_report), fresh(&lr_report));
    assert!(
        em - el > 3.0 * (sel + sem),
        "mvi_lr ELBO {em:.3} ± {sem:.3} vs laplace {el:.3} ± {sel:.3}"
    );
    let (ml, mm) = (marginals(&laplace, &r), marginals(&lr, &r));
    for ((name, (zl, _)), (zm, _)) in r.names.iter().zip(&ml).zip(&mm) {
        assert!(
            zm.abs() <= zl.abs() + 0.05,
            "{name}: mvi_lr {zm:+.3} sd, laplace {zl:+.3} sd"
        );
    }
    let tau = r.names.len() - 1;
    assert!(
        mm[tau].0.abs() <= 0.5 * ml[tau].0.abs(),
        "log tau: mvi_lr {:+.3} sd, laplace {:+.3} sd",
        mm[tau].0,
        ml[tau].0
    );
}

#[test]
fn blr_with_correlated_predictors_matches_the_reference() {
    check_posterior("sblrc-blr");
}

#[test]
fn blr_with_independent_predictors_matches_the_reference() {
    check_posterior("sblri-blr");
}

#[test]
fn kidscore_momiq_matches_the_reference() {
    check_posterior("kidiq-kidscore_momiq");
}

#[test]
fn kidscore_interaction_matches_the_reference() {
    check_posterior("kidiq-kidscore_interaction");
}

#[test]
fn kidscore_interaction_z_matches_the_reference() {
    check_posterior("kidiq_with_mom_work-kidscore_interaction_z");
}

#[test]
fn logearn_interaction_z_matches_the_reference() {
    check_posterior("earnings-logearn_interaction_z");
}

#[test]
fn logmesquite_logvas_matches_the_reference() {
    check_posterior("mesquite-logmesquite_logvas");
}

#[test]
fn kilpisjarvi_matches_the_reference() {
    check_posterior("kilpisjarvi_mod-kilpisjarvi");
}

#[test]
fn nes_matches_the_reference() {
    check_posterior("nes2000-nes");
}

#[test]
fn ark_matches_the_reference() {
    check_posterior("arK-arK");
}

#[test]
fn diamonds_matches_the_reference() {
    check_posterior("diamonds-diamonds");
}

/// The 19 regressions of the shared extract's `more/` (issue 17): earnings, kidiq, mesquite
/// and nes variants, in the style of the suite's own.
const MORE_REGRESSIONS: [&str; 19] = [
    "earnings-earn_height",
    "earnings-logearn_height",
    "earnings-logearn_height_male",
    "earnings-logearn_interaction",
    "earnings-logearn_logheight_male",
    "kidiq-kidscore_momhs",
    "kidiq_with_mom_work-kidscore_interaction_c",
    "kidiq_with_mom_work-kidscore_interaction_c2",
    "kidiq_with_mom_work-kidscore_mom_work",
    "mesquite-logmesquite",
    "mesquite-logmesquite_logvash",
    "mesquite-logmesquite_logvolume",
    "mesquite-mesquite",
    "nes1972-nes",
    "nes1976-nes",
    "nes1984-nes",
    "nes1988-nes",
    "nes1992-nes",
    "nes1996-nes",
];

#[test]
fn more_regressions_laplace_matches_the_reference() {
    for posterior in MORE_REGRESSIONS {
        let (typed, joint, r) = load_checked(posterior);
        check_laplace(posterior, &typed, &joint, &r);
    }
}

/// `cargo test --release --test it -- --ignored posteriordb::more_regressions_vi`
#[test]
#[ignore = "mvi_lr and vi_full on 19 posteriors: about 20 s in release"]
fn more_regressions_vi_matches_the_reference() {
    for posterior in MORE_REGRESSIONS {
        let (typed, joint, r) = load_checked(posterior);
        check_vi(posterior, &typed, &joint, &r);
    }
}

/// `cargo test --release --test it -- --ignored posteriordb::hmm_drive_0`
#[test]
#[ignore = "a forward recursion over 416 steps with 20 restarts: about 20 s in release"]
fn hmm_drive_0_matches_the_reference() {
    check_posterior("bball_drive_event_0-hmm_drive_0");
}

/// `cargo test --release --test it -- --ignored posteriordb::hmm_drive_1`
#[test]
#[ignore = "a forward recursion over 416 steps with 20 restarts: about 25 s in release"]
fn hmm_drive_1_matches_the_reference() {
    check_posterior("bball_drive_event_1-hmm_drive_1");
}

/// gp_pois_regr (module doc): no Gaussian meets `VI`. What the KL(q‖p)-optimal Gaussian
/// (vi_full) does reach: every mean within `VI`'s 0.2 sd, the sds of f_tilde[2..11] within
/// [0.75, 1.10] of the reference, and those of log rho, log alpha and f_tilde[1], the
/// coordinates bent around one another, between 0.3 and 0.6 (under-dispersed, as KL(q‖p)
/// is along a curved ridge; 0.39–0.45 measured). Laplace's mean of log alpha is 1.3 sds
/// off (the mode of a skewed joint), and the test checks that it is more than 0.6.
///
/// `cargo test --release --test it -- --ignored posteriordb::gp_pois_regr`
#[test]
#[ignore = "vi_full on a 13-dimensional latent GP: a few seconds in release"]
fn gp_pois_regr_gaussian_optimum_under_disperses_along_the_ridge() {
    let posterior = "gp_pois_regr-gp_pois_regr";
    let (typed, joint, r) = load_checked(posterior);
    let bent = ["rho", "alpha", "f_tilde[1]"];
    let post = fit(&typed, &joint, "vi_full");
    for ((z, ratio), name) in marginals(&post, &r).into_iter().zip(&r.names) {
        assert!(z.abs() <= VI.mean_sd, "{name}: vi_full's mean is {z:+.3} sd off");
        let (lo, hi) = if bent.contains(&name.as_str()) {
            (0.3, 0.6)
        } else {
            (0.75, VI.sd_hi)
        };
        assert!(
            (lo..=hi).contains(&ratio),
            "{name}: vi_full's sd ratio {ratio:.3} outside [{lo}, {hi}]"
        );
    }
    let laplace = fit(&typed, &joint, "laplace");
    let (z_alpha, _) = marginals(&laplace, &r)[1];
    assert!(
        z_alpha > 0.6,
        "log alpha: Laplace's mode is expected well above the mean, got {z_alpha:+.3} sd"
    );
}

#[test]
fn mean_field_collapses_along_kilpisjarvis_correlated_coordinates() {
    let posterior = "kilpisjarvi_mod-kilpisjarvi";
    let (typed, joint) = load(posterior);
    let r = reference(posterior);
    let post = fit(&typed, &joint, "vi_diag");
    let m = marginals(&post, &r);
    // the mean-field optimum's sd is √(1/(Σ⁻¹)ᵢᵢ) = √(1 − R²ᵢ) sd, with R²ᵢ the squared
    // multiple correlation of coordinate i with the others in the reference covariance
    let prec = r
        .cov
        .clone()
        .try_inverse()
        .expect("the reference covariance is invertible");
    for (i, name) in r.names.iter().enumerate().take(2) {
        let optimum = (1.0 / prec[(i, i)]).sqrt() / r.sd[i];
        let (_, ratio) = m[i];
        assert!(
            optimum < 0.05,
            "{name}: the reference correlation should make mean-field collapse"
        );
        assert!(
            ratio < 0.1,
            "{name}: vi_diag's sd ratio {ratio:.3} is not collapsed (optimum {optimum:.4})"
        );
        assert!(
            ratio > 0.2 * optimum && ratio < 5.0 * optimum,
            "{name}: vi_diag's sd ratio {ratio:.4} is not near the mean-field optimum {optimum:.4}"
        );
    }
    // log sigma is nearly uncorrelated with alpha and beta: no collapse there
    let (_, ratio) = m[2];
    assert!(ratio > 0.8 && ratio < 1.1, "log sigma's sd ratio {ratio:.3}");
}

/// Pathfinder's L-BFGS paths from U(−2, 2) fall onto kilpisjarvi's alpha–beta ridge near
/// their starting alpha, about 60 (two reference sds) from the mode. With Stan's L-BFGS
/// (scalar initial inverse Hessian, CmdStan's relative-gradient test) every path stopped
/// there (0 of 40 in docs/results.md): the test's gᵀHg uses an H that has only seen the
/// steep direction. With the defaults (the diagonal α as the initial inverse Hessian, the
/// relative-gradient test off) most single paths, and the four-path default on every seed
/// tried, reach the mode.
#[test]
fn pathfinder_follows_kilpisjarvis_ridge_to_the_mode() {
    let posterior = "kilpisjarvi_mod-kilpisjarvi";
    let (typed, joint) = load(posterior);
    let r = reference(posterior);
    let alpha_error = |extra: &[(&str, &str)], seed: &str| {
        let mut options = vec![("method", "pathfinder"), ("seed", seed)];
        options.extend_from_slice(extra);
        let (post, _) = fit_with(&typed, &joint, &options);
        marginals(&post, &r)[0].0.abs()
    };
    let seeds: Vec<String> = (1..=10).map(|s| s.to_string()).collect();
    let reached = |extra: &[(&str, &str)]| seeds.iter().filter(|s| alpha_error(extra, s) < 0.5).count();
    let single = reached(&[("num_paths", "1")]);
    let stan = reached(&[
        ("num_paths", "1"),
        ("lbfgs_init", "scalar"),
        ("tol_rel_grad", "2.22e-9"),
    ]);
    assert!(single >= 7, "{single} of 10 single paths reach the mode");
    assert!(
        stan <= 2,
        "{stan} of 10 single paths with Stan's L-BFGS reach the mode"
    );
    for seed in &seeds[..3] {
        let err = alpha_error(&[], seed);
        assert!(
            err < 0.3,
            "seed {seed}: 4-path alpha mean {err:.2} reference sds off"
        );
    }
}

/// split_mf's first stage is vi_diag's objective, so it must reach vi_diag's optimum. On
/// sblrc (coefficient sds about 0.001 next to log sigma's 0.07, predictors correlated at
/// 0.82) its L-BFGS in the raw coordinates stopped on the relative-change rule 3 nats
/// below it (−199.5 against −196.7), the coefficients' sds still at the start's marginal
/// sds, and log sigma's mean 1.4 reference sds off, worse than a point mass under W1. It
/// now optimises in coordinates scaled by the start's sds.
#[test]
fn split_mf_reaches_the_mean_field_optimum_on_badly_scaled_coordinates() {
    let posterior = "sblrc-blr";
    let (typed, joint) = load(posterior);
    let r = reference(posterior);
    let vi = fit(&typed, &joint, "vi_diag");
    let split = fit(&typed, &joint, "split_mf");
    let (a, b) = (
        vi.objective.expect("vi_diag has an ELBO"),
        split.objective.expect("split_mf has a bound"),
    );
    assert!(
        b > a - 0.1,
        "split_mf's bound {b:.3} is below vi_diag's ELBO {a:.3}"
    );
    for (i, (err, ratio)) in marginals(&split, &r).into_iter().enumerate() {
        let name = &r.names[i];
        assert!(
            err.abs() < 0.25,
            "{name}: split_mf's mean is {err:.2} reference sds off"
        );
        let (_, vi_ratio) = marginals(&vi, &r)[i];
        assert!(
            (ratio / vi_ratio - 1.0).abs() < 0.15,
            "{name}: split_mf's sd ratio {ratio:.3} against vi_diag's {vi_ratio:.3}"
        );
    }
}

/// A [`LogDensity`](mvi::density::LogDensity) that counts the points it evaluates: values,
/// gradients (per column of a batch) and Hessians (or Hessian products, per vector).
struct Counting<'a> {
    inner: &'a LogJoint,
    values: std::sync::atomic::AtomicUsize,
    grads: std::sync::atomic::AtomicUsize,
    hessians: std::sync::atomic::AtomicUsize,
}

impl mvi::density::LogDensity for Counting<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn theta_dim(&self) -> usize {
        self.inner.theta_dim()
    }
    fn theta_init(&self) -> DVector<f64> {
        self.inner.theta_init()
    }
    fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: mvi::density::Want) -> mvi::density::Evaluated {
        use std::sync::atomic::Ordering::Relaxed;
        let counter = if want.grad_w { &self.grads } else { &self.values };
        counter.fetch_add(w.ncols(), Relaxed);
        self.inner.eval(t, w, want)
    }
    fn hessian(&self, t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        self.hessians.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.hessian(t, w)
    }
    fn hvp(&self, t: &DVector<f64>, w: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        self.hessians.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.hvp(t, w, v)
    }
    fn hessian_times(&self, t: &DVector<f64>, w: &DVector<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
        self.hessians.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.hessian_times(t, w, v)
    }
    fn initial_point(&self) -> DVector<f64> {
        self.inner.initial_point()
    }
    fn coordinate_names(&self) -> Vec<String> {
        self.inner.coordinate_names()
    }
    fn coordinate_constraint(&self, i: usize) -> Option<graph::Constraint> {
        self.inner.coordinate_constraint(i)
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        self.inner.param_blocks()
    }
}

/// The evaluations each method's fit uses (seed 1; the report's draws are not counted), for
/// docs/results.md until the run reports its own counts. A gradient evaluation also gives
/// the value; "values" are evaluations without a gradient; a Hessian counts one (a Hessian
/// product with K vectors, one).
///
/// `cargo test --test it -- --ignored posteriordb::evaluation_counts --nocapture`
#[test]
#[ignore = "prints a table for docs/results.md"]
fn evaluation_counts() {
    use mvi::infer::registry;
    use std::sync::atomic::Ordering::Relaxed;
    let methods: [(&str, &[(&str, &str)]); 4] = [
        ("laplace", &[]),
        ("mvi_lr", &[]),
        ("pathfinder", &[]),
        ("pathfinder", &[("num_paths", "1")]),
    ];
    let mut names: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/posteriordb"))
            .expect("the suite")
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("model.mvi").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
    names.sort();
    println!("| posterior | laplace | mvi_lr | pathfinder | pathfinder (1 path) |");
    println!("|---|---|---|---|---|");
    for name in &names {
        let (typed, joint) = load(name);
        let mut row = vec![name.clone()];
        for (method, extra) in methods {
            let mut opts = vec![
                ("method".to_string(), method.to_string()),
                ("seed".into(), "1".into()),
            ];
            opts.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let options = check::infer_options(&typed, &opts).expect("valid options");
            let m = registry::build(&options).expect("builds");
            let counting = Counting {
                inner: &joint,
                values: 0.into(),
                grads: 0.into(),
                hessians: 0.into(),
            };
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1);
            let ok = m.fit(&counting, &mut rng, &mut Silent).is_ok();
            row.push(format!(
                "{} / {} / {}{}",
                counting.grads.load(Relaxed),
                counting.values.load(Relaxed),
                counting.hessians.load(Relaxed),
                if ok { "" } else { " (failed)" }
            ));
        }
        println!("| {} |", row.join(" | "));
    }
}

/// `nuts` (4 chains × 1000 + 1000, seed 1) with `extra` settings on `posterior`: R̂ ≤ 1.01
/// on every unconstrained coordinate, and every mean within 0.15 reference sd and sd ratio
/// in [0.9, 1.1] (Monte Carlo error at ESS ≳ 400 is about 0.05 sd).
fn check_nuts(posterior: &str, extra: &[(&str, &str)]) {
    let (typed, joint, r) = load_checked(posterior);
    let mut opts = vec![
        ("method".to_string(), "nuts".to_string()),
        ("seed".to_string(), "1".to_string()),
    ];
    opts.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let options = check::infer_options(&typed, &opts).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let (post, _) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("nuts: {}", d.render_plain(100)));
    let Approximation::Draws(chains) = &post.approx else {
        panic!("nuts gives draws")
    };
    let rhat = McmcReport::new(chains, &chains.draws.transpose()).max_rhat();
    assert!(rhat <= 1.01, "{posterior}: largest R̂ {rhat}");
    let tol = Tol {
        mean_sd: 0.15,
        sd_lo: 0.9,
        sd_hi: 1.1,
    };
    assert_within(posterior, "nuts", &post, &r, tol, &[]);
}

/// kilpisjarvi's alpha and beta are correlated at −0.99999: with the diagonal mass matrix
/// every draw runs to `max_depth` and R̂ ends at 1.011; the low-rank mass matrix samples it
/// with 30× fewer gradients.
/// `cargo test --release --test it -- --ignored posteriordb::nuts_low_rank`
#[test]
#[ignore = "4 NUTS chains of 2000 iterations: a few seconds in release, a minute in the test profile"]
fn nuts_low_rank_samples_kilpisjarvi() {
    check_nuts("kilpisjarvi_mod-kilpisjarvi", &[("mass_matrix", "low_rank")]);
}

/// diamonds' 24 polynomial terms leave a posterior correlation matrix with condition number
/// about 2.7e5: with the diagonal mass matrix the draws run to `max_depth` (as the Stan
/// reference's did) and the run takes many minutes; the low-rank mass matrix samples it with
/// no max-depth hit in about 71 000 gradients.
/// `cargo test --release --test it -- --ignored posteriordb::nuts_low_rank`
#[test]
#[ignore = "4 NUTS chains of 2000 iterations on N = 5000: about 20 s in release, minutes in the test profile"]
fn nuts_low_rank_samples_diamonds() {
    check_nuts("diamonds-diamonds", &[("mass_matrix", "low_rank")]);
}
