use super::*;
use crate::density::Evaluated;
use crate::infer::{InferOption, OptionValue, Silent};
use miette::NamedSource;

/// log p̃(w) = −½ (w − m)ᵀ A (w − m): a correlated Gaussian with known mean and covariance.
struct Gauss {
    mean: DVector<f64>,
    precision: DMatrix<f64>,
}

impl Gauss {
    /// D-dimensional, sds from 0.5 to 3 and correlation 0.6 between neighbours.
    fn new(d: usize) -> Gauss {
        let sd = DVector::from_fn(d, |i, _| 0.5 + 2.5 * i as f64 / (d.max(2) - 1) as f64);
        let cov = DMatrix::from_fn(d, d, |i, j| {
            let rho: f64 = if i == j {
                1.0
            } else {
                0.6f64.powi((i as i32 - j as i32).abs())
            };
            rho * sd[i] * sd[j]
        });
        Gauss {
            mean: DVector::from_fn(d, |i, _| i as f64 - 1.0),
            precision: cov.try_inverse().expect("positive definite"),
        }
    }

    fn cov(&self) -> DMatrix<f64> {
        self.precision.clone().try_inverse().expect("positive definite")
    }
}

impl LogDensity for Gauss {
    fn dim(&self) -> usize {
        self.mean.len()
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let mut c = w.clone();
        for mut col in c.column_iter_mut() {
            col -= &self.mean;
        }
        let ac = &self.precision * &c;
        let values = DVector::from_iterator(
            w.ncols(),
            (0..w.ncols()).map(|s| -0.5 * c.column(s).dot(&ac.column(s))),
        );
        Evaluated {
            values,
            grad_w: want.grad_w.then(|| -ac),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        -self.precision.clone()
    }
}

/// An equal mixture of two unit Gaussians at (−3, 0) and (3, 0): two modes.
struct Bimodal;

impl LogDensity for Bimodal {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let n = w.ncols();
        let mut values = DVector::zeros(n);
        let mut grad = DMatrix::zeros(2, n);
        for s in 0..n {
            let (x, y) = (w[(0, s)], w[(1, s)]);
            let a = -0.5 * ((x + 3.0).powi(2) + y * y);
            let b = -0.5 * ((x - 3.0).powi(2) + y * y);
            let m = a.max(b);
            let (pa, pb) = ((a - m).exp(), (b - m).exp());
            values[s] = m + (pa + pb).ln();
            let (ra, rb) = (pa / (pa + pb), pb / (pa + pb));
            grad[(0, s)] = -ra * (x + 3.0) - rb * (x - 3.0);
            grad[(1, s)] = -y;
        }
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(grad),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        unreachable!("pathfinder uses gradients only")
    }
}

fn options(entries: &[(&str, OptionValue)]) -> InferOptions {
    InferOptions {
        entries: entries
            .iter()
            .map(|(k, v)| InferOption {
                key: (*k).into(),
                value: v.clone(),
                span: None,
            })
            .collect(),
        source: NamedSource::new("m", String::new()),
    }
}

fn fit(model: &dyn LogDensity, entries: &[(&str, OptionValue)], seed: u64) -> Posterior {
    let method = build(&options(entries)).expect("valid options");
    let mut rng = StdRng::seed_from_u64(seed);
    method.fit(model, &mut rng, &mut Silent).expect("pathfinder fits")
}

fn sample_moments(w: &DMatrix<f64>) -> (DVector<f64>, DMatrix<f64>) {
    let m = w.column_mean();
    let mut c = w.clone();
    for mut col in c.column_iter_mut() {
        col -= &m;
    }
    let cov = &c * c.transpose() / (w.ncols() - 1) as f64;
    (m, cov)
}

/// KL(q ‖ p) between Gaussians N(m_q, Σ_q) and N(m_p, Σ_p).
fn kl(mq: &DVector<f64>, sq: &DMatrix<f64>, mp: &DVector<f64>, sp: &DMatrix<f64>) -> f64 {
    let d = mq.len() as f64;
    let sp_inv = sp.clone().try_inverse().unwrap();
    let dm = mp - mq;
    0.5 * ((&sp_inv * sq).trace() + dm.dot(&(&sp_inv * &dm)) - d + (sp.determinant() / sq.determinant()).ln())
}

#[test]
fn single_path_is_near_exact_for_a_gaussian_target() {
    // D = 4 ≤ 2J: the dense branch. BFGS pairs from a quadratic carry its curvature, so the
    // best iterate's Gaussian is close to the target (not exact: the steps are not
    // conjugate and the iterate is picked on a 25-draw ELBO).
    let model = Gauss::new(4);
    let exact = model.cov();
    for seed in 1..=5 {
        let post = fit(&model, &[("num_paths", OptionValue::Int(1))], seed);
        assert!(matches!(post.approx, Approximation::Gaussian(_)));
        let sd = exact.diagonal().map(f64::sqrt);
        for i in 0..4 {
            assert!(
                (post.mean()[i] - model.mean[i]).abs() < 0.01 * sd[i],
                "seed {seed}: mean {i}"
            );
        }
        let kl = kl(&post.mean(), &post.cov(), &model.mean, &exact);
        // Measured 0.005–0.14 over these seeds; the last iterates reach KL ≈ 0.01, but the
        // iterate is picked on a 25-draw ELBO estimate (its noise is the spread here).
        assert!(kl < 0.2, "seed {seed}: KL(q ‖ p) = {kl}");
    }
}

#[test]
fn multi_path_resamples_to_the_gaussian_target_and_reports_khat() {
    let model = Gauss::new(3);
    let post = fit(&model, &[], 2);
    let Approximation::Particles(w) = &post.approx else {
        panic!("multi-path gives draws")
    };
    assert_eq!(w.ncols(), 1000);
    let r = post.resampling.expect("multi-path reports its resampling");
    assert_eq!(r.pool, 4000);
    assert!(r.khat.is_some_and(|k| k < 0.5), "{r:?}");
    assert!(r.ess > 1000.0, "{r:?}");
    let (m, cov) = sample_moments(w);
    let exact = model.cov();
    for i in 0..3 {
        let sd = exact[(i, i)].sqrt();
        assert!(
            (m[i] - model.mean[i]).abs() < 5.0 * sd / 1000f64.sqrt(),
            "mean {i}"
        );
        assert!((cov[(i, i)].sqrt() / sd - 1.0).abs() < 0.1, "sd {i}");
    }
}

#[test]
fn the_factored_draws_have_the_compact_bfgs_covariance() {
    // D = 12 > 2J: the thin-QR branch must give Σ = diag(α) + β γ βᵀ and its log det.
    let (d, j) = (12, 3);
    let mut rng = StdRng::seed_from_u64(3);
    let mut hist = History::new(d, j);
    let a = DMatrix::from_fn(d, d, |r, c| if r == c { 1.0 + r as f64 } else { 0.1 });
    for _ in 0..4 {
        let s = standard_normal(d, 1, &mut rng).column(0).into_owned();
        let y = &a * &s;
        hist.push(s, y);
    }
    assert_eq!(hist.s.len(), j);
    let x = DVector::zeros(d);
    let g = DVector::from_element(d, 0.3);
    let local = hist.approximation(&x, &g).expect("positive definite");
    assert!(local.q.is_some(), "the low-rank branch");
    let root = local.gaussian().root;
    let sigma = &root * root.transpose();
    // The compact form built independently: H = diag(α) + β γ βᵀ via the BFGS recursion.
    let mut h = DMatrix::from_diagonal(&hist.alpha);
    for (s, y) in hist.s.iter().zip(&hist.y) {
        let rho = 1.0 / y.dot(s);
        let v = DMatrix::identity(d, d) - s * y.transpose() * rho;
        h = &v * h * v.transpose() + s * s.transpose() * rho;
    }
    assert!(
        (&sigma - &h).amax() < 1e-9 * h.amax(),
        "Σ differs from the BFGS inverse Hessian"
    );
    assert!((local.log_det - h.determinant().ln()).abs() < 1e-9);
    assert!((&local.mean - (&x - &h * &g)).amax() < 1e-9);
}

#[test]
fn the_diagonal_initialised_direction_is_the_approximations_mean_shift() {
    // With `lbfgs_init = diagonal` the L-BFGS step direction −H g is the local Gaussian's
    // mean minus the iterate; with Stan's scalar start it is not (α differs from sᵀy/yᵀy).
    let (d, j) = (6, 3);
    let mut rng = StdRng::seed_from_u64(5);
    let mut hist = History::new(d, j);
    let a = DMatrix::from_fn(d, d, |r, c| if r == c { 10f64.powi(r as i32 - 2) } else { 0.01 });
    for _ in 0..5 {
        let s = standard_normal(d, 1, &mut rng).column(0).into_owned();
        let y = &a * &s;
        hist.push(s, y);
    }
    let x = DVector::from_element(d, 0.5);
    let g = DVector::from_fn(d, |i, _| 1.0 - 0.3 * i as f64);
    let local = hist.approximation(&x, &g).expect("positive definite");
    let shift = &local.mean - &x;
    let diagonal = hist.direction(&g, true);
    assert!(
        (&diagonal - &shift).amax() < 1e-9 * shift.amax(),
        "{diagonal} vs {shift}"
    );
    let scalar = hist.direction(&g, false);
    assert!((&scalar - &shift).amax() > 1e-3 * shift.amax());
    assert!(diagonal.dot(&g) < 0.0 && scalar.dot(&g) < 0.0, "both descend");
}

#[test]
fn lbfgs_keys_default_to_the_diagonal_start_without_the_relative_gradient_test() {
    let default = Settings::default();
    assert!(default.diagonal_init);
    assert!(default.tol_rel_grad == 0.0, "the relative-gradient test is off");
    let stan = build(&options(&[
        ("lbfgs_init", OptionValue::Ident("scalar".into())),
        ("tol_rel_grad", OptionValue::Real(2.22e-9)),
    ]));
    assert!(stan.is_ok(), "CmdStan's rule is accepted");
    for (key, value) in [
        ("lbfgs_init", OptionValue::Ident("identity".into())),
        ("tol_rel_grad", OptionValue::Real(-1.0)),
    ] {
        let err = build(&options(&[(key, value)])).err().expect("rejected");
        assert!(err.message.contains(key), "{}", err.message);
    }
}

#[test]
fn one_seed_gives_identical_draws() {
    let model = Gauss::new(3);
    let a = fit(&model, &[], 7);
    let b = fit(&model, &[], 7);
    let c = fit(&model, &[], 8);
    let draws = |p: &Posterior| match &p.approx {
        Approximation::Particles(w) => w.clone(),
        _ => panic!("draws"),
    };
    assert_eq!(draws(&a), draws(&b));
    assert_ne!(draws(&a), draws(&c));
}

#[test]
fn multi_path_on_a_bimodal_target_reports_khat() {
    let post = fit(&Bimodal, &[], 4);
    let r = post.resampling.expect("resampling");
    assert!(r.khat.is_some(), "{r:?}");
    let Approximation::Particles(w) = &post.approx else {
        panic!("draws")
    };
    assert!(w.iter().all(|v| v.is_finite()));
    assert!(
        post.notes.iter().any(|n| n.contains("4 paths")),
        "{:?}",
        post.notes
    );
}

#[test]
fn zero_counts_are_rejected_at_the_key() {
    for key in ["num_paths", "num_draws", "history_size", "num_elbo_draws"] {
        let err = build(&options(&[(key, OptionValue::Int(0))]))
            .err()
            .expect("rejected");
        assert!(err.message.contains(key), "{}", err.message);
    }
    assert!(build(&options(&[("optimizer", OptionValue::Ident("scg".into()))])).is_err());
}
