use super::mode::{find_mode, newton_polish};
use super::theta::INNER_TOL;
use super::*;
use crate::density::{Evaluated, Want};
use crate::infer::optim;
use crate::infer::Silent;

/// log p̃(w) = −½ (w − m)ᵀ A (w − m), A = Q diag(λ) Qᵀ with λ from 1 to 10⁶ and Q a
/// rotation (products of Givens rotations), m = (1, 2, …, D) / D.
struct IllConditioned {
    a: DMatrix<f64>,
    m: DVector<f64>,
}

impl IllConditioned {
    fn new(d: usize, stretch: f64) -> Self {
        let mut q = DMatrix::<f64>::identity(d, d);
        for i in 0..d - 1 {
            let (c, s) = (0.8f64, 0.6f64);
            let mut g = DMatrix::<f64>::identity(d, d);
            g[(i, i)] = c;
            g[(i + 1, i + 1)] = c;
            g[(i, i + 1)] = -s;
            g[(i + 1, i)] = s;
            q = g * q;
        }
        let lambda = DVector::from_fn(d, |i, _| {
            10f64.powf(6.0 * i as f64 / (d - 1) as f64) * if i % 2 == 0 { stretch } else { 1.0 }
        });
        IllConditioned {
            a: &q * DMatrix::from_diagonal(&lambda) * q.transpose(),
            m: DVector::from_fn(d, |i, _| (i + 1) as f64 / d as f64),
        }
    }
}

impl LogDensity for IllConditioned {
    fn dim(&self) -> usize {
        self.m.len()
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let r = w - &self.m * DMatrix::from_element(1, w.ncols(), 1.0);
        let g = -(&self.a * &r);
        let values = DVector::from_iterator(
            w.ncols(),
            (0..w.ncols()).map(|s| 0.5 * r.column(s).dot(&g.column(s))),
        );
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        -&self.a
    }
}

#[test]
fn an_inner_mode_search_in_the_coordinates_of_a_nearby_mode_takes_far_fewer_steps() {
    let d = 20;
    let model = IllConditioned::new(d, 1.0);
    // C from a nearby posterior: every other curvature 1.5 times larger
    let nearby = IllConditioned::new(d, 1.5);
    let (c, _) = curvature(&nearby, &DVector::zeros(0), &DVector::zeros(d)).expect("positive definite");
    let opts = optim::Options {
        rel_tol: INNER_TOL,
        ..optim::Options::default()
    };
    let theta = DVector::zeros(0);
    let plain = find_mode(&model, &theta, DVector::zeros(d), None, &opts, &mut Silent);
    let scaled = find_mode(&model, &theta, DVector::zeros(d), Some(&c), &opts, &mut Silent);
    assert!(scaled.converged, "{scaled:?}");
    assert!(
        (&scaled.x - &model.m).amax() < 1e-6,
        "mode {} against {}",
        scaled.x,
        model.m
    );
    assert!(
        5 * scaled.iterations < plain.iterations,
        "iterations: in C's coordinates {}, in w's {}",
        scaled.iterations,
        plain.iterations
    );
}

/// log p̃(w) = −w₁² + w₂²: a saddle at the origin, where the mode search starts, and no
/// mode (log p̃ is unbounded along w₂, so escaping the saddle cannot help).
struct Saddle;
impl LogDensity for Saddle {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        let values = DVector::from_iterator(w.ncols(), w.column_iter().map(|c| -c[0] * c[0] + c[1] * c[1]));
        let mut g = w.clone();
        g.row_mut(0).scale_mut(-2.0);
        g.row_mut(1).scale_mut(2.0);
        Evaluated {
            values,
            grad_w: Some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_row_slice(2, 2, &[-2.0, 0.0, 0.0, 2.0])
    }
}

/// log p̃(w) = −w₁²/2 − (w₂² − 1)²: modes at (0, ±1) and a saddle at the origin, where
/// the mode search starts and where its gradient is zero.
struct DoubleWell;
impl LogDensity for DoubleWell {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        let values = DVector::from_iterator(
            w.ncols(),
            w.column_iter()
                .map(|c| -0.5 * c[0] * c[0] - (c[1] * c[1] - 1.0).powi(2)),
        );
        let mut g = w.clone();
        for mut c in g.column_iter_mut() {
            c[0] = -c[0];
            c[1] = -4.0 * c[1] * (c[1] * c[1] - 1.0);
        }
        Evaluated {
            values,
            grad_w: Some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_row_slice(2, 2, &[-1.0, 0.0, 0.0, 4.0 - 12.0 * w[1] * w[1]])
    }
}

#[test]
fn a_mode_search_that_stops_at_a_saddle_is_restarted_beside_it() {
    let fit = fit_laplace(&DoubleWell, &Common::default(), &mut rng(), &mut Silent).unwrap();
    assert!(fit.mode[0].abs() < 1e-8, "mode {}", fit.mode);
    assert!((fit.mode[1].abs() - 1.0).abs() < 1e-8, "mode {}", fit.mode);
    assert!(fit.log_p.abs() < 1e-12);
    // −H = diag(1, 8), so Σ = diag(1, 1/8)
    let cov = fit.cov();
    assert!((cov[(0, 0)] - 1.0).abs() < 1e-8 && (cov[(1, 1)] - 0.125).abs() < 1e-8);
    assert!(
        fit.notes.iter().any(|n| n.contains("saddle point")),
        "notes: {:?}",
        fit.notes
    );
}

/// log p̃(w) = w − eʷ (a Poisson log-likelihood in log λ with one count of 1): mode at 0,
/// curvature −eʷ. A Newton step from w = −1 lands at e − 2 ≈ 0.718: log p̃ rises
/// (−1.368 → −1.332) but |∇| grows (0.632 → 1.05).
struct LogRate;
impl LogDensity for LogRate {
    fn dim(&self) -> usize {
        1
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        columnwise(w, |c| (c[0] - c[0].exp(), [1.0 - c[0].exp()]))
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_element(1, 1, -w[0].exp())
    }
}

#[test]
fn the_newton_polish_continues_while_log_p_rises_even_if_the_gradient_grows() {
    let theta = DVector::zeros(0);
    let x = DVector::from_element(1, -1.0);
    let (value, g) = value_grad(&LogRate, &theta, &x);
    let start = Outcome {
        x,
        value,
        grad_norm: g.norm(),
        iterations: 0,
        converged: true,
        interrupted: false,
    };
    let (out, h) = newton_polish(&LogRate, &theta, start);
    // the Hessian handed back for the curvature is the one at the polished mode
    let h = h.expect("the last Newton step was declined, at the mode");
    assert_eq!(h, LogRate.hessian(&theta, &out.x));
    assert!(out.x[0].abs() < 1e-6, "polished to {}", out.x[0]);
    assert!((out.value + 1.0).abs() < 1e-12, "log p̃ {}", out.value);
    assert!(out.grad_norm < 1e-6, "gradient norm {}", out.grad_norm);
}

/// An outcome at `w` on [`LogRate`], converged or stopped at the iteration limit.
fn log_rate_at(w: f64, converged: bool) -> Outcome {
    let x = DVector::from_element(1, w);
    let (value, g) = value_grad(&LogRate, &DVector::zeros(0), &x);
    Outcome {
        x,
        value,
        grad_norm: g.norm(),
        iterations: 1000,
        converged,
        interrupted: false,
    }
}

#[test]
fn a_mode_search_stopped_at_its_limit_is_finished_by_damped_newton() {
    // from w = −5 the full Newton step (+147) overshoots into log p̃ ≈ −e¹⁴²: the polish
    // of a converged search declines it and stays, the rescue halves it down to the mode
    let theta = DVector::zeros(0);
    let (kept, _) = newton_polish(&LogRate, &theta, log_rate_at(-5.0, true));
    assert_eq!(
        kept.x,
        DVector::from_element(1, -5.0),
        "the overshooting step is declined"
    );
    let (out, h) = newton_polish(&LogRate, &theta, log_rate_at(-5.0, false));
    assert!(out.converged, "{out:?}");
    assert!(out.x[0].abs() < 1e-6, "finished at {}", out.x[0]);
    assert!((out.value + 1.0).abs() < 1e-12, "log p̃ {}", out.value);
    assert!(
        out.iterations > 1000,
        "the Newton steps count: {}",
        out.iterations
    );
    assert_eq!(h, Some(LogRate.hessian(&theta, &out.x)), "H at the mode");
}

/// log p̃(w) = −log(1 + w²): one mode at 0, not concave where |w| > 1; started at w = 4.
struct Cauchy;
impl LogDensity for Cauchy {
    fn dim(&self) -> usize {
        1
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        columnwise(w, |c| {
            let w = c[0];
            (-(1.0 + w * w).ln(), [-2.0 * w / (1.0 + w * w)])
        })
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let w2 = w[0] * w[0];
        DMatrix::from_element(1, 1, -2.0 * (1.0 - w2) / ((1.0 + w2) * (1.0 + w2)))
    }
    fn initial_point(&self) -> DVector<f64> {
        DVector::from_element(1, 4.0)
    }
}

#[test]
fn a_search_stopped_where_log_p_is_not_concave_is_finished_not_taken_for_a_saddle() {
    let theta = DVector::zeros(0);
    let at = |converged| {
        let x = DVector::from_element(1, 4.0);
        let (value, g) = value_grad(&Cauchy, &theta, &x);
        Outcome {
            x,
            value,
            grad_norm: g.norm(),
            iterations: 1,
            converged,
            interrupted: false,
        }
    };
    // H(4) > 0: there is no Newton step; the polish of a converged search stays
    let (kept, _) = newton_polish(&Cauchy, &theta, at(true));
    assert_eq!(kept.x, DVector::from_element(1, 4.0));
    let (out, _) = newton_polish(&Cauchy, &theta, at(false));
    assert!(out.converged, "{out:?}");
    assert!(out.x[0].abs() < 1e-6, "finished at {}", out.x[0]);
    // the whole fit: no saddle, no second maximum, the one mode
    for max_iters in [1, 2] {
        let common = Common {
            max_iters,
            ..Common::default()
        };
        let fit = fit_laplace(&Cauchy, &common, &mut rng(), &mut Silent).unwrap();
        assert!(fit.converged, "notes: {:?}", fit.notes);
        assert!(fit.mode[0].abs() < 1e-6, "mode {}", fit.mode);
        assert!(fit.notes.is_empty(), "{:?}", fit.notes);
    }
}

/// [`LogRate`] started at w = −5, far left of its mode.
struct LogRateFromLeft;
impl LogDensity for LogRateFromLeft {
    fn dim(&self) -> usize {
        1
    }
    fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        LogRate.eval(t, w, want)
    }
    fn hessian(&self, t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        LogRate.hessian(t, w)
    }
    fn initial_point(&self) -> DVector<f64> {
        DVector::from_element(1, -5.0)
    }
}

#[test]
fn a_laplace_fit_whose_search_hits_max_iters_reports_the_mode_not_a_warning() {
    let common = Common {
        max_iters: 1,
        ..Common::default()
    };
    let fit = fit_laplace(&LogRateFromLeft, &common, &mut rng(), &mut Silent).unwrap();
    assert!(fit.converged, "notes: {:?}", fit.notes);
    assert!(fit.mode[0].abs() < 1e-6, "mode {}", fit.mode);
    assert!(
        !fit.notes.iter().any(|n| n.contains("not converged")),
        "{:?}",
        fit.notes
    );
}

#[test]
fn the_newton_polish_leaves_an_exact_mode_alone() {
    let theta = DVector::zeros(0);
    let x = DVector::from_element(1, 0.0);
    let start = Outcome {
        x: x.clone(),
        value: -1.0,
        grad_norm: 0.0,
        iterations: 0,
        converged: true,
        interrupted: false,
    };
    let (out, h) = newton_polish(&LogRate, &theta, start);
    assert_eq!(out.x, x);
    assert_eq!(h, Some(LogRate.hessian(&theta, &x)), "H at the unmoved mode");
}

#[test]
fn positive_curvature_is_an_error_that_names_the_eigenvalue() {
    let err = fit_laplace(&Saddle, &Common::default(), &mut rng(), &mut Silent).unwrap_err();
    match err {
        Error::NotNegativeDefinite { max_eig, .. } => assert!((max_eig - 2.0).abs() < 1e-12),
        e => panic!("unexpected {e}"),
    }
    assert!(err.to_string().contains("2.000e0"));
}

fn rng() -> rand::rngs::StdRng {
    <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1)
}

/// log p̃(w) = −(w² − 1)² + 0.3 w: modes near w = −1 (log p̃ ≈ −0.3) and w = +1
/// (≈ +0.3); the search starts at −0.5, where the gradient points to the lower one.
struct TiltedWell;

impl LogDensity for TiltedWell {
    fn dim(&self) -> usize {
        1
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        columnwise(w, |c| {
            let x = c[0];
            (-(x * x - 1.0).powi(2) + 0.3 * x, [-4.0 * x * (x * x - 1.0) + 0.3])
        })
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_element(1, 1, 4.0 - 12.0 * w[0] * w[0])
    }
    fn initial_point(&self) -> DVector<f64> {
        DVector::from_element(1, -0.5)
    }
}

#[test]
fn restarts_keep_the_highest_mode_and_say_so() {
    let first = fit_laplace(&TiltedWell, &Common::default(), &mut rng(), &mut Silent).unwrap();
    assert!(first.mode[0] < -0.9 && first.notes.is_empty(), "{first:?}");
    let common = Common {
        restarts: 10,
        ..Common::default()
    };
    let best = fit_laplace(&TiltedWell, &common, &mut rng(), &mut Silent).unwrap();
    assert!(best.mode[0] > 0.9, "mode {}", best.mode);
    assert!(best.log_p > first.log_p + 0.5, "{} {}", best.log_p, first.log_p);
    // C and the evidence are those of the mode reported: −H = 12 w² − 4 there
    let neg_h = 12.0 * best.mode[0] * best.mode[0] - 4.0;
    assert!((best.chol[(0, 0)] - neg_h.powf(-0.5)).abs() < 1e-10);
    assert!(
        best.notes.iter().any(|n| n.contains("higher mode")),
        "{:?}",
        best.notes
    );
    // a restart that finds nothing better changes nothing but the note
    let again = fit_laplace(&DoubleWell, &common, &mut rng(), &mut Silent).unwrap();
    assert!(again.log_p.abs() < 1e-12 && again.notes.iter().any(|n| n.contains("none of 10")));
}

/// Counts iterations and asks to stop once `limit` have been seen.
struct StopAfter {
    seen: usize,
    limit: usize,
}

impl Observer for StopAfter {
    fn iteration(&mut self, _record: &IterRecord) -> bool {
        self.seen += 1;
        self.seen <= self.limit
    }
}

#[test]
fn an_interrupt_during_the_restarts_keeps_the_best_mode_so_far() {
    let mut count = StopAfter {
        seen: 0,
        limit: usize::MAX,
    };
    let first = fit_laplace(&TiltedWell, &Common::default(), &mut rng(), &mut count).unwrap();
    let common = Common {
        restarts: 10,
        ..Common::default()
    };
    // the first search runs to its end, the first restart's first iteration is refused
    let mut stop = StopAfter {
        seen: 0,
        limit: count.seen,
    };
    let fit = fit_laplace(&TiltedWell, &common, &mut rng(), &mut stop).unwrap();
    assert_eq!(fit.mode, first.mode);
    assert!(
        fit.notes.iter().any(|n| n.contains("interrupted after 0 of 10")),
        "{:?}",
        fit.notes
    );
}

/// Value and gradient at every column of `w`, one column at a time.
fn columnwise<G: AsRef<[f64]>>(w: &DMatrix<f64>, f: impl Fn(&[f64]) -> (f64, G)) -> Evaluated {
    let mut g = DMatrix::zeros(w.nrows(), w.ncols());
    let mut values = DVector::zeros(w.ncols());
    for (s, col) in w.column_iter().enumerate() {
        let (v, gs) = f(col.as_slice());
        values[s] = v;
        g.column_mut(s).copy_from_slice(gs.as_ref());
    }
    Evaluated {
        values,
        grad_w: Some(g),
        grad_theta: None,
    }
}

/// Neal's funnel as a joint density: w = (u, z₁, …, z_K) with σ = e^u,
/// z_k ~ N(0, σ), σ ~ half-normal(10), the log-Jacobian u included:
/// log p̃ = −(K − 1) u − Σ z_k² e^{−2u}/2 − e^{2u}/200. Unbounded above as u → −∞ with
/// z = 0; the search starts at z ≠ 0 so that the z have to collapse first.
struct Funnel {
    k: usize,
}

impl Funnel {
    fn value_grad_at(&self, c: &[f64]) -> (f64, Vec<f64>) {
        let u = c[0];
        let prec = (-2.0 * u).exp();
        let ss: f64 = c[1..].iter().map(|z| z * z).sum();
        let km1 = self.k as f64 - 1.0;
        let value = -km1 * u - 0.5 * ss * prec - (2.0 * u).exp() / 200.0;
        let mut g = vec![-km1 + ss * prec - (2.0 * u).exp() / 100.0];
        g.extend(c[1..].iter().map(|z| -z * prec));
        if value.is_finite() {
            (value, g)
        } else {
            (f64::NEG_INFINITY, vec![0.0; c.len()])
        }
    }
}

impl LogDensity for Funnel {
    fn dim(&self) -> usize {
        self.k + 1
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        columnwise(w, |c| self.value_grad_at(c))
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let u = w[0];
        let prec = (-2.0 * u).exp();
        let ss: f64 = w.rows(1, self.k).iter().map(|z| z * z).sum();
        let mut h = DMatrix::from_diagonal_element(self.k + 1, self.k + 1, -prec);
        h[(0, 0)] = -2.0 * ss * prec - (2.0 * u).exp() / 50.0;
        for i in 1..=self.k {
            h[(0, i)] = 2.0 * w[i] * prec;
            h[(i, 0)] = h[(0, i)];
        }
        h
    }
    fn initial_point(&self) -> DVector<f64> {
        DVector::from_fn(self.k + 1, |i, _| if i == 0 { 0.0 } else { 1.0 - 0.3 * i as f64 })
    }
    fn coordinate_names(&self) -> Vec<String> {
        let mut names = vec!["sigma".to_string()];
        names.extend((1..=self.k).map(|i| format!("z.{i}")));
        names
    }
}

/// y_i ~ N(mu, σ) for n data points with sample mean 3 and sample sd `s`, a flat prior on
/// mu and σ = e^u with its log-Jacobian: log p̃ = −(n − 1) u − n (s² + (mu − 3)²) e^{−2u}/2.
/// A proper, sharp posterior with its mode at u = log s + ½ log(n/(n − 1)).
struct Sharp {
    n: f64,
    s: f64,
}

impl Sharp {
    fn value_grad_at(&self, c: &[f64]) -> (f64, [f64; 2]) {
        let (mu, u) = (c[0], c[1]);
        let prec = (-2.0 * u).exp();
        let ss = self.n * (self.s * self.s + (mu - 3.0).powi(2));
        let value = -(self.n - 1.0) * u - 0.5 * ss * prec;
        let g = [-self.n * (mu - 3.0) * prec, -(self.n - 1.0) + ss * prec];
        if value.is_finite() {
            (value, g)
        } else {
            (f64::NEG_INFINITY, [0.0; 2])
        }
    }
}

impl LogDensity for Sharp {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, _want: Want) -> Evaluated {
        columnwise(w, |c| self.value_grad_at(c))
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let (mu, u) = (w[0], w[1]);
        let prec = (-2.0 * u).exp();
        let ss = self.n * (self.s * self.s + (mu - 3.0).powi(2));
        let cross = 2.0 * self.n * (mu - 3.0) * prec;
        DMatrix::from_row_slice(2, 2, &[-self.n * prec, cross, cross, -2.0 * ss * prec])
    }
    fn coordinate_names(&self) -> Vec<String> {
        vec!["mu".into(), "sigma".into()]
    }
}

fn no_mode(err: Error) -> NoMode {
    match err {
        Error::NoMode(m) => *m,
        e => panic!("expected NoMode, got {e}"),
    }
}

#[test]
fn a_funnel_is_reported_as_having_no_mode_naming_its_scale() {
    for k in [2, 3, 8] {
        let err = fit_laplace(&Funnel { k }, &Common::default(), &mut rng(), &mut Silent).unwrap_err();
        let text = err.to_string();
        let m = no_mode(err);
        assert_eq!(m.runaway.len(), 1, "K = {k}: {text}");
        let r = &m.runaway[0];
        assert_eq!((r.name.as_str(), r.index), ("sigma", 0), "K = {k}");
        assert!(r.unconstrained <= -RUNAWAY_EXTENT, "K = {k}: {text}");
        // the outward slope is K − 1 less what the not quite collapsed z pull back
        let km1 = k as f64 - 1.0;
        assert!(
            r.slope > 0.5 * km1 && r.slope < km1 + 1e-9,
            "K = {k}: slope {}",
            r.slope
        );
        assert!(m.log_p > m.log_p_start, "K = {k}: {text}");
        assert!(text.contains("no maximum") && text.contains("`sigma`"), "{text}");
        assert!(m.help().contains("`--method pmfvb`"), "{}", m.help());
    }
}

#[test]
fn the_message_gives_the_declared_value_and_limit_when_known() {
    let mut m =
        no_mode(fit_laplace(&Funnel { k: 3 }, &Common::default(), &mut rng(), &mut Silent).unwrap_err());
    let u = m.runaway[0].unconstrained;
    let bare = m.to_string();
    assert!(
        bare.contains(&format!("(sigma = {u:.1} unconstrained)")),
        "{bare}"
    );
    m.runaway[0].constrained = Some(u.exp());
    m.runaway[0].limit = Some(0.0);
    let text = m.to_string();
    assert!(
        text.contains(&format!("(sigma ≈ {:.2e}, {u:.1} unconstrained)", u.exp())),
        "{text}"
    );
    assert!(m.help().starts_with("a funnel: as `sigma` → 0 "), "{}", m.help());
}

#[test]
fn several_runaways_are_named_up_to_three_then_counted() {
    let runaway = (1..=5)
        .map(|i| Runaway {
            name: format!("s.{i}"),
            index: i - 1,
            unconstrained: -20.0 - i as f64,
            slope: 3.0,
            constrained: None,
            limit: None,
        })
        .collect();
    let m = NoMode {
        log_p: 100.0,
        log_p_start: -5.0,
        iterations: 42,
        runaway,
    };
    let text = m.to_string();
    assert!(
        text.contains("as `s.1`, `s.2`, `s.3` and 2 more run off into the neck of a funnel"),
        "{text}"
    );
    assert!(
        text.ends_with("(s.1 = -21.0 unconstrained; s.2 = -22.0 unconstrained; s.3 = -23.0 unconstrained)"),
        "{text}"
    );
    assert!(
        text.contains("from -5.0000e0 to 1.0000e2 in 42 iterations"),
        "{text}"
    );
    assert!(
        m.help().contains("as `s.1` runs to the edge of its range"),
        "{}",
        m.help()
    );
}

#[test]
fn a_sharp_proper_posterior_is_fitted_not_flagged() {
    let sharp = Sharp { n: 1e5, s: 1e-3 };
    let fit = fit_laplace(&sharp, &Common::default(), &mut rng(), &mut Silent).unwrap();
    let u = (1e-3f64).ln() + 0.5 * (1e5f64 / (1e5 - 1.0)).ln();
    assert!(
        (fit.mode[0] - 3.0).abs() < 1e-9 && (fit.mode[1] - u).abs() < 1e-8,
        "{}",
        fit.mode
    );
}

#[test]
fn a_proper_mode_at_an_extreme_scale_is_not_called_a_funnel() {
    // σ ≈ 1e-7: log σ ≈ −16 is past RUNAWAY_EXTENT and −H's condition number (≈ 5e13)
    // fails the curvature test, but log p̃ does not rise further out: a mode, not a funnel
    let sharp = Sharp { n: 100.0, s: 1e-7 };
    match fit_laplace(&sharp, &Common::default(), &mut rng(), &mut Silent) {
        Err(Error::NotNegativeDefinite { .. }) => {}
        Err(e) => panic!("unexpected {e}"),
        Ok(fit) => panic!("the curvature test should fail, mode {}", fit.mode),
    }
    let x = DVector::from_vec(vec![3.0, (1e-7f64).ln() + 0.5 * (100f64 / 99.0).ln()]);
    let h = sharp.hessian(&DVector::zeros(0), &x);
    assert!(runaway_coordinates(&sharp, &DVector::zeros(0), &x, &h).is_empty());
}

#[test]
fn build_rejects_samples_for_laplace() {
    use crate::infer::{InferOption, OptionValue};
    let o = InferOptions {
        entries: vec![InferOption {
            key: "samples".into(),
            value: OptionValue::Int(10),
            span: None,
        }],
        source: miette::NamedSource::new("m", String::new()),
    };
    assert!(build(&o).is_err());
}
