//! The MVI paper's Fig. 1 comparison through the real pipeline: `examples/mixture_2d.mvi`
//! (a 2-D mixture of two correlated Gaussians) is fitted by laplace, mvi_mu, mvi_eig and
//! mvi_lr with `run::fit`, and KL(q‖p) is computed numerically on a grid. The richer the
//! family, the closer q: laplace > mvi_mu > mvi_eig > mvi_lr.
//!
//! p is the model's own log density (the lowered graph) normalised numerically on the grid;
//! q's density is `Posterior::log_q`. The values are recorded in `docs/results.md`; print
//! them with `cargo test --test it -- --nocapture mixture_kl::`.

use crate::common::root;
use mvi::check;
use mvi::density::{LogDensity, Want};
use mvi::graph::{self, LogJoint};
use mvi::infer::Silent;
use mvi::posterior::{log_sum_exp, Posterior};
use mvi::run::{self, RunInfo};
use nalgebra::DMatrix;

/// The grid: [−GRID_HALF_WIDTH, GRID_HALF_WIDTH]² with GRID_N midpoints per side. Both
/// components and every fitted q put less than 1e-9 of their mass outside ±8.
const GRID_HALF_WIDTH: f64 = 8.0;
const GRID_N: usize = 400;

/// Grid points evaluated per batch.
const CHUNK: usize = 20_000;

/// Methods in the paper's order, from the poorest fit to the best.
const ORDER: [&str; 4] = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr"];

fn load() -> (check::TypedModel, LogJoint) {
    let typed = check::load_model(&root().join("examples/mixture_2d.mvi"), &[])
        .unwrap_or_else(|ds| panic!("{}", ds.iter().map(|d| d.render_plain(100)).collect::<String>()));
    let joint = graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    (typed, joint)
}

fn fit(typed: &check::TypedModel, joint: &LogJoint, method: &str) -> Posterior {
    let options = check::infer_options(typed, &[("method".into(), method.into())])
        .unwrap_or_else(|d| panic!("{method}: {}", d.render_plain(100)));
    run::fit(joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{method}: {}", d.render_plain(100)))
        .0
}

/// The grid's midpoints as the columns of a 2 × GRID_N² matrix, and the cell area.
fn grid() -> (DMatrix<f64>, f64) {
    let h = 2.0 * GRID_HALF_WIDTH / GRID_N as f64;
    let at = |i: usize| -GRID_HALF_WIDTH + (i as f64 + 0.5) * h;
    let pts = DMatrix::from_fn(2, GRID_N * GRID_N, |r, c| {
        if r == 0 {
            at(c / GRID_N)
        } else {
            at(c % GRID_N)
        }
    });
    (pts, h * h)
}

/// `f` applied to the grid in column chunks, concatenated.
fn over_grid(pts: &DMatrix<f64>, f: impl Fn(&DMatrix<f64>) -> Vec<f64>) -> Vec<f64> {
    let mut out = Vec::with_capacity(pts.ncols());
    let mut c0 = 0;
    while c0 < pts.ncols() {
        let n = CHUNK.min(pts.ncols() - c0);
        out.extend(f(&pts.columns(c0, n).into_owned()));
        c0 += n;
    }
    out
}

/// log p on the grid: the model's log p̃ minus its numerical log normaliser.
fn log_p_on_grid(
    joint: &LogJoint,
    theta: &nalgebra::DVector<f64>,
    pts: &DMatrix<f64>,
    area: f64,
) -> Vec<f64> {
    let lp = over_grid(pts, |w| {
        joint.eval(theta, w, Want::VALUE).values.iter().copied().collect()
    });
    let log_z = log_sum_exp(&lp) + area.ln();
    lp.into_iter().map(|v| v - log_z).collect()
}

/// KL(q‖p) = Σ q (log q − log p) · area over the grid, with q renormalised on the grid.
fn kl_on_grid(post: &Posterior, log_p: &[f64], pts: &DMatrix<f64>, area: f64) -> f64 {
    let log_q = over_grid(pts, |w| {
        post.log_q(w)
            .expect("Gaussian methods have a density")
            .iter()
            .copied()
            .collect()
    });
    let log_zq = log_sum_exp(&log_q) + area.ln();
    assert!(log_zq.abs() < 1e-6, "q has mass {} on the grid", log_zq.exp());
    log_q
        .iter()
        .zip(log_p)
        .map(|(lq, lp)| {
            let lq = lq - log_zq;
            lq.exp() * (lq - lp)
        })
        .sum::<f64>()
        * area
}

#[test]
fn mixture_kl_falls_in_the_papers_fig_1_order() {
    let (typed, joint) = load();
    let (pts, area) = grid();
    let posts: Vec<Posterior> = ORDER.iter().map(|m| fit(&typed, &joint, m)).collect();
    let log_p = log_p_on_grid(&joint, &posts[0].theta, &pts, area);
    let kls: Vec<f64> = posts.iter().map(|q| kl_on_grid(q, &log_p, &pts, area)).collect();
    for (m, kl) in ORDER.iter().zip(&kls) {
        eprintln!("KL(q‖p) {m:8} {kl:.4}");
        assert!(kl.is_finite() && *kl > 0.0, "{m}: KL {kl}");
    }
    for k in 1..ORDER.len() {
        assert!(
            kls[k - 1] > kls[k],
            "expected KL {} > {}: {:?}",
            ORDER[k - 1],
            ORDER[k],
            ORDER.iter().zip(&kls).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_model_density_is_normalised_as_its_comment_says() {
    let (_, joint) = load();
    let (pts, area) = grid();
    let theta = nalgebra::DVector::zeros(0);
    let lp = over_grid(&pts, |w| {
        joint
            .eval(&theta, w, Want::VALUE)
            .values
            .iter()
            .copied()
            .collect()
    });
    let log_z = log_sum_exp(&lp) + area.ln();
    assert!(log_z.abs() < 1e-6, "∫ p = {}", log_z.exp());
}

#[test]
fn mvi_lr_fresh_elbo_is_minus_its_grid_kl() {
    // p is normalised, so ELBO = −KL(q‖p): the pipeline's fresh ELBO must agree with the
    // grid KL within its Monte Carlo error.
    let (typed, joint) = load();
    let (pts, area) = grid();
    let options = check::infer_options(&typed, &[]).expect("the example's own options");
    let (post, report) = run::fit(&joint, &options, &RunInfo::default(), &mut Silent).expect("mvi_lr fits");
    let log_p = log_p_on_grid(&joint, &post.theta, &pts, area);
    let kl = kl_on_grid(&post, &log_p, &pts, area);
    let e = report.elbo_fresh.expect("a fresh ELBO");
    assert!(
        (e.value + kl).abs() < 4.0 * e.se,
        "fresh ELBO {} ± {} vs −KL {}",
        e.value,
        e.se,
        -kl
    );
}
