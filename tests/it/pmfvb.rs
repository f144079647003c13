//! pmfvb against exact answers: the mean-field optimum of a correlated Gaussian, and a
//! NUTS reference for Bayesian logistic regression (tests/fixtures/pmfvb_logistic/).

use mvi::density::{Evaluated, LogDensity, Want};
use mvi::infer::pmfvb::{Pmfvb, Settings};
use mvi::infer::{Method, Silent};
use mvi::posterior::Posterior;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// log N(w; μ, Λ⁻¹) up to a constant; parameters `a`, `b`, `c`, one coordinate each.
struct Gauss3 {
    mu: DVector<f64>,
    prec: DMatrix<f64>,
}

fn gauss3() -> Gauss3 {
    Gauss3 {
        mu: DVector::from_vec(vec![0.5, -1.0, 2.0]),
        prec: DMatrix::from_row_slice(3, 3, &[2.0, 0.8, 0.5, 0.8, 1.5, -0.6, 0.5, -0.6, 1.0]),
    }
}

impl LogDensity for Gauss3 {
    fn dim(&self) -> usize {
        3
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let mut c = w.clone();
        for mut col in c.column_iter_mut() {
            col -= &self.mu;
        }
        let g = -(&self.prec * &c);
        let values = DVector::from_iterator(
            w.ncols(),
            c.column_iter().zip(g.column_iter()).map(|(a, b)| 0.5 * a.dot(&b)),
        );
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        -self.prec.clone()
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i, 1))
            .collect()
    }
}

fn fit(model: &dyn LogDensity, settings: Settings, seed: u64) -> Posterior {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    Pmfvb::new(settings).fit(model, &mut rng, &mut Silent).unwrap()
}

/// Relative tolerance on particle variances: P = 2000 particles give a relative standard
/// error of √(2/P) ≈ 3 %, plus the O(h) bias of the unadjusted Langevin step.
const VAR_TOL: f64 = 0.12;

#[test]
fn pmfvb_finds_the_mean_field_optimum_with_one_block_per_parameter() {
    let t = gauss3();
    let post = fit(
        &t,
        Settings {
            particles: 2000,
            step: 0.05,
            ..Settings::default()
        },
        1,
    );
    let (m, c) = (post.mean(), post.cov());
    for i in 0..3 {
        assert!((m[i] - t.mu[i]).abs() < 0.08, "mean {i}: {} vs {}", m[i], t.mu[i]);
        let rel = c[(i, i)] * t.prec[(i, i)] - 1.0;
        assert!(
            rel.abs() < VAR_TOL,
            "var {i}: {} vs {}",
            c[(i, i)],
            1.0 / t.prec[(i, i)]
        );
    }
    assert!(post.converged, "{:?}", post.notes);
}

#[test]
fn pmfvb_keeps_the_correlation_inside_a_named_block() {
    let t = gauss3();
    let blocks = Some(vec![
        vec!["a".to_string(), "b".to_string()],
        vec!["c".to_string()],
    ]);
    let post = fit(
        &t,
        Settings {
            blocks,
            particles: 2000,
            step: 0.05,
            ..Settings::default()
        },
        2,
    );
    let c = post.cov();
    // Optimum: q(a, b) = N(μ_ab, (Λ_ab,ab)⁻¹), q(c) = N(μ_c, 1/Λ_cc).
    let sub = t.prec.view((0, 0), (2, 2)).into_owned().try_inverse().unwrap();
    for (i, j) in [(0, 0), (1, 1), (0, 1)] {
        assert!(
            (c[(i, j)] - sub[(i, j)]).abs() < VAR_TOL * sub[(i, i)],
            "cov ({i},{j}): {} vs {}",
            c[(i, j)],
            sub[(i, j)]
        );
    }
    assert!((c[(2, 2)] * t.prec[(2, 2)] - 1.0).abs() < VAR_TOL);
    assert!(
        c[(0, 2)].abs() < 0.05 && c[(1, 2)].abs() < 0.05,
        "blocks independent"
    );
}

/// Bayesian logistic regression y ~ Bernoulli(σ(Xβ)), β ~ N(0, prior_var·I); one parameter `beta`.
pub struct Logistic {
    x: DMatrix<f64>,
    y: DVector<f64>,
    prior_var: f64,
}

fn fixture(name: &str) -> serde_json::Value {
    let path = format!(
        "{}/tests/fixtures/pmfvb_logistic/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// The data set of tests/fixtures/pmfvb_logistic/data.json.
pub fn logistic() -> Logistic {
    let data = fixture("data.json");
    let rows: Vec<Vec<f64>> = data["X"].as_array().unwrap().iter().map(floats).collect();
    let x = DMatrix::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j]);
    Logistic {
        x,
        y: DVector::from_vec(floats(&data["y"])),
        prior_var: data["prior_var"].as_f64().unwrap(),
    }
}

fn sigmoid(u: f64) -> f64 {
    1.0 / (1.0 + (-u).exp())
}

impl LogDensity for Logistic {
    fn dim(&self) -> usize {
        self.x.ncols()
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let eta = &self.x * w; // N×S
        let mut resid = eta.clone();
        let mut values = DVector::zeros(w.ncols());
        for s in 0..w.ncols() {
            let mut v = -0.5 * w.column(s).norm_squared() / self.prior_var;
            for n in 0..self.x.nrows() {
                let u = eta[(n, s)];
                // log σ(u) if y = 1, log σ(−u) if y = 0, stably: y u − log(1 + e^u).
                v += self.y[n] * u - (u.max(0.0) + (-u.abs()).exp().ln_1p());
                resid[(n, s)] = self.y[n] - sigmoid(u);
            }
            values[s] = v;
        }
        let grad = want
            .grad_w
            .then(|| self.x.transpose() * resid - w / self.prior_var);
        Evaluated {
            values,
            grad_w: grad,
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let eta = &self.x * w;
        let wts = eta.map(|u| sigmoid(u) * sigmoid(-u));
        let xw = DMatrix::from_fn(self.x.nrows(), self.x.ncols(), |i, j| self.x[(i, j)] * wts[i]);
        -(self.x.transpose() * xw) - DMatrix::identity(self.dim(), self.dim()) / self.prior_var
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        vec![("beta".to_string(), 0, self.dim())]
    }
}

fn check_against_nuts(post: &Posterior, sd_tol: f64) {
    let nuts = fixture("nuts.json");
    let (mean, sd) = (floats(&nuts["mean"]), floats(&nuts["sd"]));
    let (m, c) = (post.mean(), post.cov());
    for i in 0..mean.len() {
        let s = c[(i, i)].sqrt();
        eprintln!(
            "beta{i}: mean {:.3} vs {:.3}, sd {s:.3} vs {:.3}",
            m[i], mean[i], sd[i]
        );
        assert!(
            (m[i] - mean[i]).abs() < 0.2 * sd[i],
            "mean {i}: {} vs NUTS {}",
            m[i],
            mean[i]
        );
        assert!((s / sd[i] - 1.0).abs() < sd_tol, "sd {i}: {s} vs NUTS {}", sd[i]);
    }
}

#[test]
fn pmfvb_marginals_match_nuts_on_logistic_regression() {
    let post = fit(
        &logistic(),
        Settings {
            particles: 1000,
            ..Settings::default()
        },
        3,
    );
    check_against_nuts(&post, 0.12);
}

#[test]
fn pmfvb_algorithm_two_marginals_match_nuts_on_logistic_regression() {
    let post = fit(
        &logistic(),
        Settings {
            particles: 1000,
            algorithm: 2,
            ..Settings::default()
        },
        4,
    );
    check_against_nuts(&post, 0.15);
}

/// Benchmark, not a check: time per sweep and to convergence on the logistic data.
/// Run: `cargo test --release --test it -- --ignored --nocapture pmfvb::bench`
#[test]
#[ignore]
fn bench_pmfvb_logistic() {
    let model = logistic();
    // Per-coefficient blocks need a density that declares five parameters.
    let per_coef = PerCoefficient(logistic());
    let runs: [(&dyn LogDensity, &str); 2] =
        [(&model, "one block `beta`"), (&per_coef, "five blocks, m = 10")];
    for (model, label) in runs {
        let blocks = None;
        let t0 = std::time::Instant::now();
        let post = fit(
            model,
            Settings {
                blocks,
                ..Settings::default()
            },
            5,
        );
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "pmfvb logistic ({label}), P = 200: {} sweeps, {:.3} s total, {:.3} ms/sweep, converged {}",
            post.iterations,
            dt,
            1e3 * dt / post.iterations as f64,
            post.converged
        );
    }
}

/// The logistic model with one declared parameter per coefficient (mean-field blocks).
struct PerCoefficient(Logistic);

impl LogDensity for PerCoefficient {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        self.0.eval(t, w, want)
    }
    fn hessian(&self, t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        self.0.hessian(t, w)
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        (0..self.dim())
            .map(|i| (format!("beta{}", i + 1), i, 1))
            .collect()
    }
}

/// The model `dir/model` with data `dir/data` (relative to the crate), lowered and ready
/// to fit, with its `infer` options overridden by `overrides`.
fn load(
    dir: &str,
    model: &str,
    data: &str,
    overrides: &[(&str, &str)],
) -> (mvi::graph::LogJoint, mvi::infer::InferOptions) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let typed = mvi::check::load_model(&dir.join(model), &[dir.join(data).display().to_string()])
        .unwrap_or_else(|e| panic!("{model} loads: {e:?}"));
    let lowered = mvi::graph::lower_model(&typed).unwrap_or_else(|e| panic!("{model} lowers: {e:?}"));
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let options = mvi::check::infer_options(&typed, &overrides).expect("valid options");
    (lowered, options)
}

/// The stochastic volatility example (`examples/stochastic_volatility.mvi`), lowered and
/// ready to fit, with its `infer` options overridden by `overrides`.
fn sv_example(overrides: &[(&str, &str)]) -> (mvi::graph::LogJoint, mvi::infer::InferOptions) {
    load(
        "examples",
        "stochastic_volatility.mvi",
        "data/stochastic_volatility.json",
        overrides,
    )
}

/// The data-generating values of the SV example: μ, φ, σ and the simulated h.
fn sv_truth() -> (f64, f64, f64, Vec<f64>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/data/stochastic_volatility_truth.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let num = |k: &str| v[k].as_f64().unwrap();
    (num("mu"), num("phi"), num("sigma"), floats(&v["h"]))
}

/// Posterior mean and sd of each constrained parameter entry, by name (over the
/// particles, or 4000 draws of another approximation).
fn constrained_summary(model: &mvi::graph::LogJoint, post: &Posterior) -> Vec<(String, Vec<f64>, Vec<f64>)> {
    let w = match &post.approx {
        mvi::posterior::Approximation::Particles(x) => x.clone(),
        _ => post.draw(4000, &mut rand::rngs::StdRng::seed_from_u64(7)),
    };
    model
        .constrain(&post.theta, &w)
        .into_iter()
        .map(|(name, block)| {
            let n = block.ncols() as f64;
            let mean: Vec<f64> = block.row_iter().map(|r| r.sum() / n).collect();
            let sd = block
                .row_iter()
                .zip(&mean)
                .map(|(r, m)| (r.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
                .collect();
            (name, mean, sd)
        })
        .collect()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Prints each phase with the time since the start (seen with `--nocapture`).
struct PhaseTimer(std::time::Instant);

impl mvi::infer::Observer for PhaseTimer {
    fn iteration(&mut self, record: &mvi::posterior::IterRecord) -> bool {
        if record.iter.is_multiple_of(50) {
            eprintln!(
                "{:>8.2?} iter {} objective {:.3}",
                self.0.elapsed(),
                record.iter,
                record.objective
            );
        }
        true
    }
    fn phase(&mut self, name: &str) {
        eprintln!("{:>8.2?} {name}", self.0.elapsed());
    }
}

/// The NUTS reference of the SV example (tests/fixtures/pmfvb_sv/nuts.json, made by
/// `make_fixture.py` beside it): (mean, sd) of mu, phi, sigma and the posterior mean of h.
fn sv_nuts() -> (Vec<(String, f64, f64)>, Vec<f64>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmfvb_sv/nuts.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let stats = ["mu", "phi", "sigma"]
        .iter()
        .map(|n| {
            let s = &v[*n];
            (
                n.to_string(),
                s["mean"].as_f64().unwrap(),
                s["sd"].as_f64().unwrap(),
            )
        })
        .collect();
    (stats, floats(&v["h_mean"]))
}

/// Fit the SV example with pmfvb (blocks [[mu, phi, sigma], [h]] from its `infer` block)
/// and check the posterior means against the data-generating values and against NUTS.
fn check_sv_recovers_truth(overrides: &[(&str, &str)]) {
    let (model, options) = sv_example(overrides);
    let method = mvi::infer::registry::build(&options).expect("the example's options build");
    assert_eq!(method.name(), "pmfvb");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let start = std::time::Instant::now();
    let mut timer = PhaseTimer(start);
    let post = method.fit(&model, &mut rng, &mut timer).expect("pmfvb fits SV");
    eprintln!(
        "SV pmfvb: {} sweeps in {:.2?}; notes {:?}",
        post.iterations,
        start.elapsed(),
        post.notes
    );
    let summary = constrained_summary(&model, &post);
    let get = |n: &str| summary.iter().find(|(name, _, _)| name == n).unwrap();
    let (mu, phi, sigma, h) = sv_truth();
    let (nuts, nuts_h) = sv_nuts();
    for ((name, nuts_mean, nuts_sd), truth) in nuts.iter().zip([mu, phi, sigma]) {
        let (_, m, s) = get(name);
        eprintln!(
            "{name}: mean {:.3} sd {:.3}; NUTS {nuts_mean:.3} ± {nuts_sd:.3}; truth {truth}",
            m[0], s[0]
        );
        // The data pin the parameters down to within a few posterior sds of the truth
        // (NUTS: all within 1.5 sds), and a mean-field fit should land within one exact
        // posterior sd of the exact posterior mean.
        assert!(
            (m[0] - truth).abs() < 3.0 * nuts_sd,
            "{name}: mean {} vs truth {truth} (NUTS sd {nuts_sd})",
            m[0]
        );
        assert!(
            (m[0] - nuts_mean).abs() < *nuts_sd,
            "{name}: mean {} vs NUTS {nuts_mean} ± {nuts_sd}",
            m[0]
        );
        assert!(s[0] > 0.0 && s[0].is_finite(), "{name}: sd {}", s[0]);
    }
    let (_, h_mean, _) = get("h");
    let (r_true, r_nuts) = (correlation(h_mean, &h), correlation(h_mean, &nuts_h));
    eprintln!("corr(E[h], h_true) = {r_true:.3}, corr(E[h], E_NUTS[h]) = {r_nuts:.3}");
    // NUTS's own E[h] has r = 0.85 with the simulated h.
    assert!(
        r_true > 0.75,
        "posterior mean of h correlates with the true h: r = {r_true}"
    );
    assert!(r_nuts > 0.95, "posterior mean of h matches NUTS's: r = {r_nuts}");
}

/// The SV example (T = 1000, D = 1003) as written (P = 200 particles, m = 10), with up to
/// 3000 sweeps: the vi_diag fallback start (the model has no proper mode), a warm-up of 50
/// particles with m = 2 (550–750 Metropolis-adjusted sweeps to its stopping rule), then
/// the full run (125–175 sweeps). Measured 2026-11-21 (release, load average 4–5): μ
/// −0.991 ± 0.168, φ 0.936 ± 0.013, σ 0.326 ± 0.008 against NUTS's −0.990 ± 0.188,
/// 0.937 ± 0.020, 0.322 ± 0.051; corr(E[h], E_NUTS[h]) = 0.999; 5.5–10.6 min in all. The
/// mean-field sds of φ and σ are smaller than NUTS's, as expected of mean-field VB; the
/// means are checked. Run:
/// `cargo test --release --test it -- --ignored --nocapture pmfvb::stochastic_volatility_truth`
#[test]
#[ignore]
fn pmfvb_recovers_the_stochastic_volatility_truth() {
    check_sv_recovers_truth(&[("max_iters", "3000")]);
}

/// Fast variant of the test above: the SV example (T = 1000) with its blocks
/// [[mu, phi, sigma], [h]] from the vi_diag fallback start, 25 warm-up and 25 full sweeps
/// (m = 4) with finite particles. μ lies within one exact posterior sd of NUTS's mean, E[h]
/// follows NUTS's E[h] and the simulated h (NUTS's own E[h] has r = 0.85 with the
/// simulated h), and φ and σ have moved from the fully factorised start (φ ≈ 0.17,
/// σ ≈ 0.96) towards NUTS's 0.94 and 0.32 (they get there in the ignored test). About 40 s
/// in the test profile on an idle machine.
#[test]
fn pmfvb_fits_the_stochastic_volatility_example_from_the_fallback_start() {
    let (model, options) = sv_example(&[("max_iters", "25"), ("subset", "4")]);
    let method = mvi::infer::registry::build(&options).expect("the example's options build");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let post = method.fit(&model, &mut rng, &mut Silent).expect("pmfvb fits SV");
    assert!(
        post.notes.iter().any(|n| n.contains("vi_diag")),
        "the Laplace start fails on SV, so the fallback is used: {:?}",
        post.notes
    );
    let summary = constrained_summary(&model, &post);
    assert!(summary
        .iter()
        .all(|(_, m, s)| m.iter().chain(s).all(|v| v.is_finite())));
    let get = |n: &str| summary.iter().find(|(name, _, _)| name == n).unwrap();
    let (_, _, _, h) = sv_truth();
    let (nuts, nuts_h) = sv_nuts();
    let (_, nuts_mu, nuts_sd) = &nuts[0];
    let (_, m, s) = get("mu");
    eprintln!(
        "mu: mean {:.3} sd {:.3}; NUTS {nuts_mu:.3} ± {nuts_sd:.3}",
        m[0], s[0]
    );
    assert!(
        (m[0] - nuts_mu).abs() < *nuts_sd,
        "mu: {} vs NUTS {nuts_mu}",
        m[0]
    );
    let (phi, sigma) = (get("phi").1[0], get("sigma").1[0]);
    eprintln!("phi {phi:.3}, sigma {sigma:.3}");
    // Measured: φ 0.54, σ 0.915 (from φ ≈ 0.17, σ ≈ 0.96 at the start; with unadjusted
    // steps of h = 0.1 and no warm-up, 25 sweeps left φ 0.172, σ 0.965).
    assert!(
        phi > 0.4 && sigma < 0.95,
        "no progress from the start: phi {phi}, sigma {sigma}"
    );
    assert!(
        post.notes.iter().any(|n| n.starts_with("warm-up")),
        "{:?}",
        post.notes
    );
    let (r_true, r_nuts) = (correlation(&get("h").1, &h), correlation(&get("h").1, &nuts_h));
    eprintln!("corr(E[h], h_true) = {r_true:.3}, corr(E[h], E_NUTS[h]) = {r_nuts:.3}");
    assert!(
        r_true > 0.4,
        "posterior mean of h correlates with the true h: r = {r_true}"
    );
    assert!(
        r_nuts > 0.5,
        "posterior mean of h correlates with NUTS's: r = {r_nuts}"
    );
}

/// The non-centred hierarchy of the user sweep (`tests/fixtures/sweep/hier_groups.mvi`:
/// μ, σ_a, z[4], σ; one block per parameter), loaded with `overrides` on its options.
fn hier_groups(overrides: &[(&str, &str)]) -> (mvi::graph::LogJoint, mvi::infer::InferOptions) {
    load(
        "tests/fixtures/sweep",
        "hier_groups.mvi",
        "hier_groups.json",
        overrides,
    )
}

/// The Laplace start of this hierarchy is far wider than the mean-field fixed point (σ_a
/// 2.9 ± 1.4 against about 1.1 ± 0.08), so a few particles start in a block's tail, where
/// the curvature of log σ_a grows and the block's adapted step (at its bound of 8, with
/// acceptance near 0.9 in the bulk) overshoots: with one step per block those particles
/// were rejected for ever, and σ_a came out anywhere from 1.03 to 2.08 and σ's sd up to
/// 0.47 depending on P and the seed (bound estimates −40.6 to −44.1). Per-particle step
/// factors bring them in. The reference is the Gaussian mean-field optimum (`vi_diag`,
/// σ_a 1.10, σ 0.45 ± 0.05, ELBO −40.5): a particle mean-field family can only do better,
/// and on this nearly Gaussian posterior lands within sampling noise of it.
#[test]
fn pmfvb_on_a_non_centred_hierarchy_agrees_with_mean_field_vi_for_any_seed_and_p() {
    let vi = {
        let (model, options) = hier_groups(&[("method", "vi_diag")]);
        let method = mvi::infer::registry::build(&options).expect("vi_diag builds");
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let post = method.fit(&model, &mut rng, &mut Silent).expect("vi_diag fits");
        (
            constrained_summary(&model, &post),
            post.objective.expect("vi_diag has an ELBO"),
        )
    };
    let get = |s: &[(String, Vec<f64>, Vec<f64>)], n: &str| {
        let (_, m, sd) = s.iter().find(|(name, _, _)| name == n).expect("a parameter");
        (m[0], sd[0])
    };
    // the configurations that went wrong with one step per block
    for (particles, seed) in [("100", 1), ("200", 1)] {
        let (model, options) = hier_groups(&[("method", "pmfvb"), ("particles", particles)]);
        let post = fit_with(&model, &options, seed);
        let s = constrained_summary(&model, &post);
        let (sa, sa_vi) = (get(&s, "sigma_a"), get(&vi.0, "sigma_a"));
        let (sig, sig_vi) = (get(&s, "sigma"), get(&vi.0, "sigma"));
        let bound = post.objective.expect("pmfvb has a bound estimate");
        let at = format!("P = {particles}, seed {seed}: σ_a {sa:?}, σ {sig:?}, bound {bound}");
        assert!((sa.0 - sa_vi.0).abs() < 0.15, "{at}; vi_diag σ_a {sa_vi:?}");
        assert!((sig.0 - sig_vi.0).abs() < 0.05, "{at}; vi_diag σ {sig_vi:?}");
        assert!(sig.1 < 1.5 * sig_vi.1, "a tail of stuck σ particles: {at}");
        assert!((bound - vi.1).abs() < 0.6, "{at}; vi_diag ELBO {}", vi.1);
    }
}

fn fit_with(model: &mvi::graph::LogJoint, options: &mvi::infer::InferOptions, seed: u64) -> Posterior {
    let method = mvi::infer::registry::build(options).expect("the options build");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    method
        .fit(model, &mut rng, &mut Silent)
        .expect("pmfvb fits the hierarchy")
}

/// Issue 21's target: mean (1, −2, 0.5), covariance [[2, 1.2, 0.3], [1.2, 1.5, −0.4],
/// [0.3, −0.4, 1]], three scalar parameters (pmfvb's default blocks are mean-field).
fn issue21_target() -> Gauss3 {
    let cov = DMatrix::from_row_slice(3, 3, &[2.0, 1.2, 0.3, 1.2, 1.5, -0.4, 0.3, -0.4, 1.0]);
    Gauss3 {
        mu: DVector::from_vec(vec![1.0, -2.0, 0.5]),
        prec: cov.try_inverse().expect("positive definite"),
    }
}

/// Particle variances × Λᵢᵢ (1 at the mean-field optimum) of a default fit with P particles.
fn variance_ratios(settings: Settings, seed: u64) -> (Vec<f64>, Posterior) {
    let t = issue21_target();
    let post = fit(&t, settings, seed);
    let c = post.cov();
    ((0..3).map(|i| c[(i, i)] * t.prec[(i, i)]).collect(), post)
}

/// Issue 21 item 1: with the default subset m = 10 the particle variances on the
/// correlated target must be within 5 % of the mean-field optimum (ratio 1) on every seed,
/// with 300 particles, and the means within 0.05. Before the control variate and the
/// stratified proposal noise they were 0.99–1.29 (seeds 1–10, median 1.14).
fn check_default_variances(seeds: std::ops::RangeInclusive<u64>) {
    for seed in seeds {
        let settings = Settings {
            particles: 300,
            ..Settings::default()
        };
        let (r, post) = variance_ratios(settings, seed);
        assert!(
            r.iter().all(|v| (0.95..=1.05).contains(v)),
            "seed {seed}: ratios {r:?}"
        );
        let mean = post.mean();
        let mu = issue21_target().mu;
        assert!((&mean - &mu).amax() < 0.05, "seed {seed}: mean {mean} vs {mu}");
    }
}

#[test]
fn pmfvb_default_subset_gives_unbiased_variances_on_a_correlated_gaussian() {
    check_default_variances(1..=3);
}

/// The same over seeds 1–10, and the bias with the control variate off (stratified noise
/// alone: 1.02–1.19, median 1.12; before issue 21, with independent noise, 0.99–1.29).
/// Run:
/// `cargo test --test it -- --ignored --nocapture pmfvb::pmfvb_default_variances_over_ten_seeds`
#[test]
#[ignore]
fn pmfvb_default_variances_over_ten_seeds() {
    check_default_variances(1..=10);
    let mut ratios = Vec::new();
    for seed in 1..=10 {
        let settings = Settings {
            particles: 300,
            control_variate: false,
            ..Settings::default()
        };
        let (r, _) = variance_ratios(settings, seed);
        println!("control variate off, seed {seed}: ratios {r:.3?}");
        ratios.extend(r);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    assert!(
        median > 1.05,
        "without the control variate the subset noise inflates the variances: median {median}"
    );
}
