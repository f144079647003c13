//! Whole-method tests on hand-written densities with known answers: conjugate linear
//! regression (exact posterior and evidence), a 2-D two-Gaussian mixture (KL(q‖p) on a grid),
//! hyperparameter learning, determinism, and the MVI paper's Cauchy regression (ignored).

use mvi::density::{Evaluated, LogDensity, Want};
use mvi::infer::objective::MeanPreconditioned;
use mvi::infer::registry::{self, METHODS};
use mvi::infer::{InferOption, InferOptions, Method, OptionValue, Silent};
use mvi::posterior::{standard_normal, Posterior};
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LN_2PI: f64 = 1.837_877_066_409_345_3;

fn options(method: &str, extra: &[(&str, OptionValue)]) -> InferOptions {
    let mut entries = vec![InferOption {
        key: "method".into(),
        value: OptionValue::Ident(method.into()),
        span: None,
    }];
    for (k, v) in extra {
        entries.push(InferOption {
            key: (*k).into(),
            value: v.clone(),
            span: None,
        });
    }
    InferOptions {
        entries,
        source: miette::NamedSource::new("test", String::new()),
    }
}

fn fit(model: &dyn LogDensity, method: &str, extra: &[(&str, OptionValue)], seed: u64) -> Posterior {
    let m: Box<dyn Method> = registry::build(&options(method, extra)).expect("valid options");
    let mut rng = StdRng::seed_from_u64(seed);
    m.fit(model, &mut rng, &mut Silent).expect("fit succeeds")
}

/// y = X w + ε, ε ~ N(0, σ² I), w ~ N(0, α⁻¹ I); θ = log α when `learn_alpha`.
struct LinReg {
    x: DMatrix<f64>,
    y: DVector<f64>,
    sigma2: f64,
    alpha: f64,
    learn_alpha: bool,
}

impl LinReg {
    fn new(n: usize, d: usize, seed: u64, learn_alpha: bool) -> LinReg {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = DMatrix::from_fn(
            n,
            d,
            |_, j| if j == 0 { 1.0 } else { rng.random_range(-2.0..2.0) },
        );
        let w_true = DVector::from_fn(d, |i, _| 0.5 * (i as f64) - 0.7);
        let noise = standard_normal(n, 1, &mut rng).column(0).into_owned();
        let sigma2: f64 = 0.8;
        let y = &x * w_true + noise * sigma2.sqrt();
        LinReg {
            x,
            y,
            sigma2,
            alpha: 0.5,
            learn_alpha,
        }
    }

    fn alpha_of(&self, theta: &DVector<f64>) -> f64 {
        if self.learn_alpha {
            theta[0].exp()
        } else {
            self.alpha
        }
    }

    /// The exact posterior precision A and mean m at α.
    fn exact(&self, alpha: f64) -> (DMatrix<f64>, DVector<f64>) {
        let d = self.x.ncols();
        let a = self.x.tr_mul(&self.x) / self.sigma2 + DMatrix::identity(d, d) * alpha;
        let m = a
            .clone()
            .cholesky()
            .unwrap()
            .solve(&(self.x.tr_mul(&self.y) / self.sigma2));
        (a, m)
    }

    /// log N(y; 0, σ² I + X Xᵀ / α).
    fn log_evidence(&self, alpha: f64) -> f64 {
        let n = self.y.len();
        let c = DMatrix::identity(n, n) * self.sigma2 + &self.x * self.x.transpose() / alpha;
        let ch = c.cholesky().unwrap();
        let log_det = 2.0 * ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
        -0.5 * self.y.dot(&ch.solve(&self.y)) - 0.5 * log_det - 0.5 * n as f64 * LN_2PI
    }
}

impl LogDensity for LinReg {
    fn dim(&self) -> usize {
        self.x.ncols()
    }
    fn theta_dim(&self) -> usize {
        usize::from(self.learn_alpha)
    }
    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let alpha = self.alpha_of(theta);
        let (n, d) = (self.y.len() as f64, self.dim() as f64);
        let mut r = &self.x * w;
        for mut c in r.column_iter_mut() {
            c -= &self.y;
        }
        let c0 = -0.5 * n * (LN_2PI + self.sigma2.ln()) + 0.5 * d * (alpha.ln() - LN_2PI);
        let values = DVector::from_fn(w.ncols(), |s, _| {
            -0.5 * r.column(s).norm_squared() / self.sigma2 - 0.5 * alpha * w.column(s).norm_squared() + c0
        });
        let grad_w = want.grad_w.then(|| -self.x.tr_mul(&r) / self.sigma2 - w * alpha);
        let grad_theta = (want.grad_theta && self.learn_alpha).then(|| {
            DMatrix::from_fn(1, w.ncols(), |_, s| {
                -0.5 * alpha * w.column(s).norm_squared() + 0.5 * d
            })
        });
        Evaluated {
            values,
            grad_w,
            grad_theta,
        }
    }
    fn hessian(&self, theta: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        let d = self.dim();
        -(self.x.tr_mul(&self.x) / self.sigma2 + DMatrix::identity(d, d) * self.alpha_of(theta))
    }
}

const VI_METHODS: &[&str] = &["mvi_mu", "mvi_eig", "mvi_lr", "vi_diag", "vi_full"];

#[test]
fn laplace_is_exact_for_conjugate_linear_regression() {
    let model = LinReg::new(40, 4, 1, false);
    let post = fit(&model, "laplace", &[], 0);
    let (a, m) = model.exact(model.alpha);
    let cov = a.try_inverse().unwrap();
    assert!((post.mean() - &m).amax() < 1e-8, "{} vs {}", post.mean(), m);
    assert!((post.cov() - cov).amax() < 1e-8);
    let z = model.log_evidence(model.alpha);
    assert!((post.log_evidence.unwrap() - z).abs() < 1e-8);
}

#[test]
fn every_vi_method_recovers_the_exact_mean_and_bounds_the_evidence() {
    let model = LinReg::new(40, 4, 2, false);
    let (a, m) = model.exact(model.alpha);
    let sd = a.try_inverse().unwrap().diagonal().map(f64::sqrt);
    let log_z = model.log_evidence(model.alpha);
    let s: f64 = 1000.0;
    for method in VI_METHODS {
        let post = fit(&model, method, &[], 3);
        // The fixed-sample optimum is off by about sd · z̄ with z̄ ~ N(0, 1/S).
        for d in 0..m.len() {
            let err = (post.mean()[d] - m[d]).abs();
            assert!(
                err < 5.0 * sd[d] / s.sqrt(),
                "{method}: coordinate {d} off by {err}"
            );
        }
        let (fresh, se) = post.fresh_elbo.unwrap();
        assert!(
            fresh <= log_z + 3.0 * se,
            "{method}: fresh ELBO {fresh} ± {se} above log Z {log_z}"
        );
        assert!(post.converged, "{method}: {:?}", post.notes);
    }
}

#[test]
fn full_rank_families_reach_the_exact_log_evidence() {
    let model = LinReg::new(40, 4, 4, false);
    let log_z = model.log_evidence(model.alpha);
    for method in ["vi_full", "mvi_lr"] {
        let post = fit(&model, method, &[], 5);
        let (fresh, _) = post.fresh_elbo.unwrap();
        assert!(
            (fresh - log_z).abs() < 0.05,
            "{method}: fresh ELBO {fresh} vs log Z {log_z}"
        );
    }
}

#[test]
fn scg_and_lbfgs_agree_on_the_elbo() {
    let model = LinReg::new(30, 3, 6, false);
    let scg = fit(
        &model,
        "mvi_lr",
        &[("optimizer", OptionValue::Ident("scg".into()))],
        1,
    );
    let lbfgs = fit(&model, "mvi_lr", &[], 1);
    let (a, b) = (scg.objective.unwrap(), lbfgs.objective.unwrap());
    assert!((a - b).abs() < 1e-4, "scg {a} vs lbfgs {b}");
}

#[test]
fn laplace_learns_the_evidence_maximising_prior_precision() {
    let model = LinReg::new(40, 4, 7, true);
    let post = fit(&model, "laplace", &[], 0);
    let alpha = post.theta[0].exp();
    // Stationarity of log Z(α): D/(2α) − ½‖m‖² − ½ tr A⁻¹ = 0 (MacKay's fixed point).
    let (a, m) = model.exact(alpha);
    let cond = alpha * (m.norm_squared() + a.try_inverse().unwrap().trace());
    assert!(
        (cond - 4.0).abs() < 1e-3,
        "α = {alpha}: α(‖m‖² + tr A⁻¹) = {cond}, want 4"
    );
}

#[test]
fn vi_full_learns_nearly_the_same_prior_precision_on_the_elbo() {
    let model = LinReg::new(40, 4, 7, true);
    let alpha_lap = fit(&model, "laplace", &[], 0).theta[0].exp();
    let post = fit(&model, "vi_full", &[], 2);
    let alpha = post.theta[0].exp();
    assert!(
        (alpha / alpha_lap - 1.0).abs() < 0.05,
        "vi_full α {alpha} vs evidence α {alpha_lap}"
    );
    let fixed = fit(
        &model,
        "vi_full",
        &[("learn_hyper", OptionValue::Ident("false".into()))],
        2,
    );
    assert!(
        (fixed.theta[0]).abs() < 1e-15,
        "learn_hyper = false keeps θ at its initial value"
    );
}

/// Records the phases a method announces.
struct Phases(Vec<String>);

impl mvi::infer::Observer for Phases {
    fn iteration(&mut self, _record: &mvi::posterior::IterRecord) -> bool {
        true
    }
    fn phase(&mut self, name: &str) {
        self.0.push(name.to_string());
    }
}

#[test]
fn laplace_hyper_given_skips_the_evidence_search_but_still_learns_theta_on_the_elbo() {
    let model = LinReg::new(40, 4, 7, true);
    let phases = |extra: &[(&str, OptionValue)]| {
        let m = registry::build(&options("vi_full", extra)).expect("valid options");
        let mut obs = Phases(Vec::new());
        let post = m
            .fit(&model, &mut StdRng::seed_from_u64(2), &mut obs)
            .expect("fits");
        (post, obs.0)
    };
    let (searched, with_search) = phases(&[]);
    let (given, without) = phases(&[("laplace_hyper", OptionValue::Ident("given".into()))]);
    let search = "laplace: hyperparameters";
    assert!(with_search.iter().any(|p| p == search), "{with_search:?}");
    assert!(!without.iter().any(|p| p == search), "{without:?}");
    let (a, b) = (searched.theta[0].exp(), given.theta[0].exp());
    assert!(
        (a / b - 1.0).abs() < 1e-3,
        "ELBO α: after a search {a}, from the given θ {b}"
    );
    assert!(
        given.theta[0].abs() > 0.1,
        "θ moved from its initial value 0: {}",
        given.theta[0]
    );
}

#[test]
fn same_seed_gives_identical_fits_and_different_seeds_differ() {
    let model = LinReg::new(30, 3, 8, false);
    for method in VI_METHODS {
        let a = fit(&model, method, &[("samples", OptionValue::Int(200))], 11);
        let b = fit(&model, method, &[("samples", OptionValue::Int(200))], 11);
        let c = fit(&model, method, &[("samples", OptionValue::Int(200))], 12);
        assert_eq!(a.mean().as_slice(), b.mean().as_slice(), "{method}");
        assert_eq!(
            a.objective.map(f64::to_bits),
            b.objective.map(f64::to_bits),
            "{method}"
        );
        assert_ne!(a.mean().as_slice(), c.mean().as_slice(), "{method}");
        let mut r1 = StdRng::seed_from_u64(3);
        let mut r2 = StdRng::seed_from_u64(4);
        assert_ne!(a.draw(5, &mut r1), a.draw(5, &mut r2));
    }
}

#[test]
fn nuts_samples_the_exact_conjugate_posterior_and_repeats_for_a_seed() {
    let model = LinReg::new(40, 4, 9, false);
    let (a, m) = model.exact(model.alpha);
    let cov = a.try_inverse().unwrap();
    let short = [
        ("chains", OptionValue::Int(2)),
        ("warmup", OptionValue::Int(200)),
        ("draws", OptionValue::Int(500)),
    ];
    let post = fit(&model, "nuts", &short, 1);
    let (mean, c) = (post.mean(), post.cov());
    for d in 0..4 {
        let sd = cov[(d, d)].sqrt();
        // 1000 draws with ESS of several hundred: the mean within 0.25 sd, the sd within 15 %
        assert!(
            (mean[d] - m[d]).abs() < 0.25 * sd,
            "mean[{d}] {} vs {}",
            mean[d],
            m[d]
        );
        assert!(
            (c[(d, d)].sqrt() / sd - 1.0).abs() < 0.15,
            "sd[{d}] {} vs {sd}",
            c[(d, d)].sqrt()
        );
    }
    let again = fit(&model, "nuts", &short, 1);
    assert_eq!(post.mean().as_slice(), again.mean().as_slice());
    assert_ne!(
        post.mean().as_slice(),
        fit(&model, "nuts", &short, 2).mean().as_slice()
    );
}

#[test]
fn every_registered_method_rejects_an_unknown_key() {
    for m in METHODS {
        let err = registry::build(&options(m.name, &[("smaples", OptionValue::Int(3))])).err();
        assert!(err.is_some_and(|e| e.message.contains("smaples")), "{}", m.name);
    }
}

/// p(w) = 0.5 N(w; (−1.5, 0), [[1, 0.6], [0.6, 1]]) + 0.5 N(w; (1.5, 0.5), [[0.8, −0.3], [−0.3, 0.6]]).
/// (The paper's eq. 14 parameters are not reproduced here; these are the stand-in.)
struct Mixture {
    means: [DVector<f64>; 2],
    precisions: [DMatrix<f64>; 2],
    log_norms: [f64; 2],
}

impl Mixture {
    fn new() -> Mixture {
        let covs = [
            DMatrix::from_row_slice(2, 2, &[1.0, 0.6, 0.6, 1.0]),
            DMatrix::from_row_slice(2, 2, &[0.8, -0.3, -0.3, 0.6]),
        ];
        let log_norms = covs
            .clone()
            .map(|c: DMatrix<f64>| 0.5f64.ln() - LN_2PI - 0.5 * c.determinant().ln());
        Mixture {
            means: [
                DVector::from_vec(vec![-1.5, 0.0]),
                DVector::from_vec(vec![1.5, 0.5]),
            ],
            precisions: covs.map(|c| c.try_inverse().unwrap()),
            log_norms,
        }
    }

    /// Per component: log(π_k N_k(w)) and ∇ of log N_k.
    fn parts(&self, w: &DVector<f64>) -> [(f64, DVector<f64>); 2] {
        [0, 1].map(|k| {
            let c = w - &self.means[k];
            let pc = &self.precisions[k] * &c;
            (self.log_norms[k] - 0.5 * c.dot(&pc), -pc)
        })
    }

    fn log_p(&self, w: &DVector<f64>) -> (f64, DVector<f64>, [f64; 2]) {
        let [(l0, g0), (l1, g1)] = self.parts(w);
        let m = l0.max(l1);
        let lp = m + ((l0 - m).exp() + (l1 - m).exp()).ln();
        let r = [(l0 - lp).exp(), (l1 - lp).exp()];
        (lp, g0 * r[0] + g1 * r[1], r)
    }
}

impl LogDensity for Mixture {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        let mut values = DVector::zeros(w.ncols());
        let mut grad = DMatrix::zeros(2, w.ncols());
        for s in 0..w.ncols() {
            let (lp, g, _) = self.log_p(&w.column(s).into_owned());
            values[s] = lp;
            grad.set_column(s, &g);
        }
        Evaluated {
            values,
            grad_w: Some(grad),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        // ∇² log Σ_k π_k N_k = Σ_k r_k (−P_k + g_k g_kᵀ) − ḡ ḡᵀ.
        let parts = self.parts(w);
        let (_, gbar, r) = self.log_p(w);
        let mut h = -&gbar * gbar.transpose();
        for k in 0..2 {
            h += (-&self.precisions[k] + &parts[k].1 * parts[k].1.transpose()) * r[k];
        }
        h
    }
}

/// KL(q‖p) = ∫ q (log q − log p) by the midpoint rule on [−8, 8]².
fn kl_on_grid(post: &Posterior, p: &Mixture) -> f64 {
    let (lo, h, n) = (-8.0, 0.02, 800);
    let mut pts = DMatrix::zeros(2, n * n);
    for i in 0..n {
        for j in 0..n {
            pts[(0, i * n + j)] = lo + (i as f64 + 0.5) * h;
            pts[(1, i * n + j)] = lo + (j as f64 + 0.5) * h;
        }
    }
    let log_q = post.log_q(&pts).unwrap();
    let log_p = p.eval(&DVector::zeros(0), &pts, Want::VALUE).values;
    log_q
        .iter()
        .zip(log_p.iter())
        .map(|(lq, lp)| if lq.is_finite() { lq.exp() * (lq - lp) } else { 0.0 })
        .sum::<f64>()
        * h
        * h
}

#[test]
fn mixture_kl_falls_in_the_papers_order() {
    let p = Mixture::new();
    let kls: Vec<(String, f64)> = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr"]
        .iter()
        .map(|m| (m.to_string(), kl_on_grid(&fit(&p, m, &[], 1), &p)))
        .collect();
    eprintln!("KL(q‖p) on the mixture: {kls:?}");
    for w in kls.windows(2) {
        assert!(w[0].1 > w[1].1, "expected KL {} > {}: {kls:?}", w[0].0, w[1].0);
    }
}

#[test]
fn psis_khat_trusts_exact_laplace_and_flags_laplace_on_a_mixture() {
    use mvi::posterior::psis::{posterior_khat, KHAT_OK};
    let model = LinReg::new(40, 4, 1, false);
    let post = fit(&model, "laplace", &[], 0);
    let mut rng = StdRng::seed_from_u64(9);
    let k_exact = posterior_khat(&model, &post, 4000, &mut rng).unwrap();
    assert!(k_exact < 0.3, "k̂ = {k_exact}");
    let p = Mixture::new();
    let post = fit(&p, "laplace", &[], 0);
    let k_mix = posterior_khat(&p, &post, 4000, &mut rng).unwrap();
    assert!(k_mix > KHAT_OK, "k̂ = {k_mix}");
}

/// Data sets of the Table II test: many enough that the medians are stable (over 20 sets the
/// orderings of adjacent methods change from block to block: 0.005–0.02 separate them).
const TABLE_TWO_SETS: u64 = 100;

/// Median over [`TABLE_TWO_SETS`] generated data sets of the per-point test LPD (eq. 13, then
/// the pointwise lppd) of each of [`TABLE_TWO`]'s methods on the MVI paper's §V-B Cauchy
/// regression; prints them and on how many sets vi_diag scores below mvi_eig.
fn cauchy_table_two_medians() -> (Vec<f64>, Vec<f64>) {
    let mut per_method: Vec<Vec<(f64, f64)>> = vec![Vec::new(); TABLE_TWO.len()];
    for set in 0..TABLE_TWO_SETS {
        let (train, test) = (cauchy_data(50, 1000 + set), cauchy_data(1000, 5000 + set));
        for (k, m) in TABLE_TWO.iter().enumerate() {
            let post = fit(&train, m, &[], set);
            per_method[k].push(test_lpd_per_point(&post, &test, 10_000, set));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        0.5 * (v[(n - 1) / 2] + v[n / 2])
    };
    let column = |pick: fn(&(f64, f64)) -> f64| -> Vec<f64> {
        per_method
            .iter()
            .map(|v| median(v.iter().map(pick).collect()))
            .collect()
    };
    let (eq13, pointwise) = (column(|p| p.0), column(|p| p.1));
    let paper = [-0.818, -0.771, -0.722, -0.726, -0.736];
    for (k, m) in TABLE_TWO.iter().enumerate() {
        eprintln!(
            "{m:8} median test LPD per point: eq. 13 {:.3} (paper {:.3}), pointwise lppd {:.3}",
            eq13[k], paper[k], pointwise[k]
        );
    }
    let below = per_method[4]
        .iter()
        .zip(&per_method[2])
        .filter(|(d, e)| d.0 < e.0)
        .count();
    eprintln!("vi_diag below mvi_eig on {below} of {TABLE_TWO_SETS} sets");
    (eq13, pointwise)
}

/// The methods of the paper's Table II, in its column order.
const TABLE_TWO: [&str; 5] = ["laplace", "mvi_mu", "mvi_eig", "mvi_lr", "vi_diag"];

/// The MVI paper's §V-B Cauchy regression (Table II): the construction of `mvi bench paper`
/// (Student-t₃ noise of scale 0.17, γ = 0.1; docs/results.md says why) on 100 data sets of this
/// file's own generator, α learned, 10⁴ test draws. Every clause of Table II: median eq. 13
/// per point laplace < mvi_mu < mvi_eig ≈ mvi_lr (within 0.02), vi_diag below mvi_eig. Slow:
/// run with `cargo test --release --test it -- --ignored methods::follows_table_two --nocapture`.
///
/// Measured (2026-11-21, 268 s in release on a shared machine): laplace −0.185 < mvi_mu −0.171
/// < mvi_eig −0.159 ≈ mvi_lr −0.162, vi_diag −0.176 (below mvi_eig on 67 of 100 sets); paper
/// −0.818, −0.771, −0.722, −0.726, −0.736. With the peer notes' uniform noise, used until
/// 43ab2ac (2026-11-21), vi_diag tied with mvi_eig (docs/history/results-2026.md, Table II).
#[test]
#[ignore]
fn cauchy_regression_median_test_lpd_follows_table_two() {
    let (m, _) = cauchy_table_two_medians();
    assert!(m[0] < m[1] && m[1] < m[2], "laplace < mvi_mu < mvi_eig: {m:?}");
    assert!((m[2] - m[3]).abs() < 0.02, "mvi_eig ≈ mvi_lr: {m:?}");
    assert!(m[4] < m[2], "vi_diag < mvi_eig: {m:?}");
}

/// y ~ Cauchy(X w, γ = 0.1), w ~ N(0, α⁻¹ I), θ = log α learned.
struct Cauchy {
    x: DMatrix<f64>,
    y: DVector<f64>,
}

const GAMMA: f64 = 0.1;

/// x ~ U[−10, 10], y = 0.3 x sin(0.7 x) − 0.03 x² + 0.17 t₃ (Student-t noise with 3 degrees of
/// freedom, as `mvi bench paper`'s Table II); features 1 and 15 RBFs.
fn cauchy_data(n: usize, seed: u64) -> Cauchy {
    let mut rng = StdRng::seed_from_u64(seed);
    let t3 = rand_distr::StudentT::new(3.0).expect("3 degrees of freedom are valid");
    let xs: Vec<f64> = (0..n).map(|_| rng.random_range(-10.0..10.0)).collect();
    let y = DVector::from_fn(n, |i, _| {
        let x = xs[i];
        0.3 * x * (0.7 * x).sin() - 0.03 * x * x + 0.17 * rng.sample(t3)
    });
    let x = DMatrix::from_fn(n, 16, |i, j| {
        if j == 0 {
            1.0
        } else {
            let c = -10.0 + 20.0 * (j - 1) as f64 / 14.0;
            (-(xs[i] - c).powi(2) / (2.0 * 1.5 * 1.5)).exp()
        }
    });
    Cauchy { x, y }
}

impl Cauchy {
    /// log p(y_n | w_s) for all n, s (N×S).
    fn log_lik(&self, w: &DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
        let mut r = &self.x * w;
        for mut c in r.column_iter_mut() {
            c.zip_apply(&self.y, |f, y| *f = y - *f);
        }
        let ll = r.map(|v| -(std::f64::consts::PI * GAMMA).ln() - (v * v / (GAMMA * GAMMA)).ln_1p());
        let dll = r.map(|v| 2.0 * v / (GAMMA * GAMMA + v * v));
        (ll, dll)
    }
}

impl LogDensity for Cauchy {
    fn dim(&self) -> usize {
        self.x.ncols()
    }
    fn theta_dim(&self) -> usize {
        1
    }
    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        let alpha = theta[0].exp();
        let d = self.dim() as f64;
        let (ll, dll) = self.log_lik(w);
        let prior = |s: usize| -0.5 * alpha * w.column(s).norm_squared() + 0.5 * d * (alpha.ln() - LN_2PI);
        let values = DVector::from_fn(w.ncols(), |s, _| ll.column(s).sum() + prior(s));
        let grad_w = self.x.tr_mul(&dll) - w * alpha;
        let grad_theta = DMatrix::from_fn(1, w.ncols(), |_, s| {
            -0.5 * alpha * w.column(s).norm_squared() + 0.5 * d
        });
        Evaluated {
            values,
            grad_w: Some(grad_w),
            grad_theta: Some(grad_theta),
        }
    }
    fn hessian(&self, theta: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let r = &self.y - &self.x * w;
        let g2 = GAMMA * GAMMA;
        let h = r.map(|v| 2.0 * (v * v - g2) / (g2 + v * v).powi(2));
        let mut xh = self.x.clone();
        for (i, mut row) in xh.row_iter_mut().enumerate() {
            row *= h[i];
        }
        let d = self.dim();
        self.x.tr_mul(&xh) - DMatrix::identity(d, d) * theta[0].exp()
    }
}

/// Per test point: the paper's eq. 13, log (1/S′) Σ_s exp(Σ_n log p(y_n | w_s)) / N, and the
/// pointwise lppd Σ_n log (1/S′) Σ_s p(y_n | w_s) / N.
fn test_lpd_per_point(post: &Posterior, test: &Cauchy, draws: usize, seed: u64) -> (f64, f64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let w = post.draw(draws, &mut rng);
    let (ll, _) = test.log_lik(&w);
    let n = test.y.len() as f64;
    let log_s = (draws as f64).ln();
    let totals: Vec<f64> = ll.column_iter().map(|c| c.sum()).collect();
    let joint = (mvi::posterior::log_sum_exp(&totals) - log_s) / n;
    let pointwise = ll
        .row_iter()
        .map(|r| mvi::posterior::log_sum_exp(&r.iter().copied().collect::<Vec<_>>()) - log_s)
        .sum::<f64>()
        / n;
    (joint, pointwise)
}

/// log p̃(w | θ) = −Σ_d log cosh(w_d + 0.3 w_{d+1}) − ½ e^θ ‖w‖² + (D/2) θ: non-Gaussian, with θ.
struct LogCosh;

impl LogDensity for LogCosh {
    fn dim(&self) -> usize {
        3
    }
    fn theta_dim(&self) -> usize {
        1
    }
    fn eval(&self, theta: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        let a = theta[0].exp();
        let mut values = DVector::zeros(w.ncols());
        let mut g = DMatrix::zeros(3, w.ncols());
        let mut gt = DMatrix::zeros(1, w.ncols());
        for s in 0..w.ncols() {
            let c = w.column(s);
            let mut v = -0.5 * a * c.norm_squared() + 1.5 * theta[0];
            for d in 0..3 {
                let u = c[d] + 0.3 * c[(d + 1) % 3];
                v -= u.cosh().ln();
                g[(d, s)] -= u.tanh();
                g[((d + 1) % 3, s)] -= 0.3 * u.tanh();
            }
            for d in 0..3 {
                g[(d, s)] -= a * c[d];
            }
            values[s] = v;
            gt[(0, s)] = -0.5 * a * c.norm_squared() + 1.5;
        }
        Evaluated {
            values,
            grad_w: Some(g),
            grad_theta: Some(gt),
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        unreachable!("not used by the gradient check")
    }
}

fn check_gradient<F: mvi::infer::objective::Family>(family: F, phi: DVector<f64>, what: &str) {
    let elbo = mvi::infer::objective::Elbo {
        model: &LogCosh,
        family,
        fixed_theta: None,
    };
    let x = elbo.pack(&phi, &DVector::from_element(1, 0.2));
    let (_, g) = elbo.value_grad(&x);
    for i in 0..x.len() {
        let h = 1e-6;
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += h;
        xm[i] -= h;
        let fd = (elbo.value_grad(&xp).0 - elbo.value_grad(&xm).0) / (2.0 * h);
        assert!(
            (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
            "{what}: ∂/∂x[{i}] = {} vs {fd}",
            g[i]
        );
    }
}

#[test]
fn every_family_gradient_matches_finite_differences() {
    use mvi::infer::{mvi_eig::Scaled, mvi_lr::LowRank, mvi_mu::MeanOnly, vi_full::Triangular};
    let mut rng = StdRng::seed_from_u64(1);
    let z = standard_normal(3, 50, &mut rng);
    let c = DMatrix::from_row_slice(3, 3, &[0.9, 0.0, 0.0, 0.2, 0.7, 0.0, -0.1, 0.3, 0.5]);
    let q = c.clone().qr().q();
    let rand_vec = |n: usize, rng: &mut StdRng| standard_normal(n, 1, rng).column(0).into_owned() * 0.3;
    check_gradient(MeanOnly::new(c.clone(), &z), rand_vec(3, &mut rng), "mvi_mu");
    let phi = rand_vec(6, &mut rng);
    check_gradient(
        Scaled {
            q: Some(q),
            z: z.clone(),
        },
        phi.clone(),
        "mvi_eig",
    );
    check_gradient(
        Scaled {
            q: None,
            z: z.clone(),
        },
        phi,
        "vi_diag",
    );
    check_gradient(
        LowRank::new(c.clone(), &z, 2),
        rand_vec(3 + 12, &mut rng),
        "mvi_lr",
    );
    let tri = Triangular {
        z: z.clone(),
        base: None,
    };
    let phi = tri.pack(&rand_vec(3, &mut rng), &c);
    check_gradient(tri, phi, "vi_full");
    let based = Triangular {
        z: z.clone(),
        base: Some(c.clone()),
    };
    let t = DMatrix::from_row_slice(3, 3, &[1.1, 0.0, 0.0, -0.3, 0.8, 0.0, 0.2, 0.4, 1.3]);
    let phi = based.pack(&rand_vec(3, &mut rng), &t);
    check_gradient(based, phi, "vi_full, whitened");
    let mu0 = rand_vec(3, &mut rng);
    check_gradient(
        MeanPreconditioned::new(LowRank::new(c.clone(), &z, 1), c.clone(), mu0),
        rand_vec(3 + 6, &mut rng),
        "mvi_lr, mean preconditioned",
    );
}

#[test]
fn mean_preconditioning_maps_coordinates_both_ways() {
    use mvi::infer::mvi_mu::MeanOnly;
    let mut rng = StdRng::seed_from_u64(2);
    let z = standard_normal(3, 20, &mut rng);
    let c = DMatrix::from_row_slice(3, 3, &[0.9, 0.0, 0.0, 0.2, 0.7, 0.0, -0.1, 0.3, 0.5]);
    let mu0 = DVector::from_vec(vec![1.0, -2.0, 0.5]);
    let pre = MeanPreconditioned::new(MeanOnly::new(c.clone(), &z), c.clone(), mu0.clone());
    let psi = DVector::from_vec(vec![0.3, -0.1, 0.7]);
    let phi = pre.to_inner(&psi);
    assert!((&phi - (&mu0 + &c * &psi)).norm() < 1e-14);
    assert!((pre.from_inner(&phi) - psi).norm() < 1e-14);
    assert!(pre.from_inner(&mu0).norm() < 1e-14);
}

/// Over-fitting remedy: vi_full on a D = 12 conjugate regression with only S = 16 fixed
/// draws is tuned to them (training ELBO above the fresh one by > 3 se). With
/// `grow_samples` (the default when `samples` is not given) S doubles until the two agree
/// (or 8·S), and the fresh ELBO is higher than the fixed-S fit's, with a note; with an
/// explicit S nothing changes.
#[test]
fn growing_samples_remedies_over_fitting() {
    use mvi::infer::vi::ViSettings;
    use mvi::infer::vi_full::ViFull;
    let model = LinReg::new(30, 12, 4, false);
    let fit_with = |grow: bool| {
        let m = ViFull {
            settings: ViSettings {
                samples: 16,
                grow_samples: grow,
                ..ViSettings::default()
            },
        };
        m.fit(&model, &mut StdRng::seed_from_u64(2), &mut Silent)
            .expect("vi_full fits")
    };
    let (fixed, grown) = (fit_with(false), fit_with(true));
    let fresh = |p: &Posterior| p.fresh_elbo.expect("a fresh ELBO");
    let (f, se) = fresh(&fixed);
    assert!(
        fixed.objective.unwrap() > f + 3.0 * se,
        "not over-fitted: {:?}",
        fixed.notes
    );
    assert!(
        grown.notes.iter().any(|n| n.contains("re-optimised with S = 32")),
        "{:?}",
        grown.notes
    );
    assert!(fresh(&grown).0 > f + se, "{:?} vs {:?}", fresh(&grown), (f, se));
}
