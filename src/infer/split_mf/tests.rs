use super::bound::{log_sigmoid, sigmoid, Bound, GaussHermite, Params, Tree};
use super::*;
use crate::density::{Evaluated, Want};
use rand::SeedableRng;

/// log p̃(w) = −½‖w‖² + log σ(cᵀw + 1), c = (3, 1): smooth and skewed.
struct Skewed;

const C: [f64; 2] = [3.0, 1.0];

impl LogDensity for Skewed {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let c = DVector::from_row_slice(&C);
        let mut g = -w.clone();
        let mut values = DVector::zeros(w.ncols());
        for (s, col) in w.column_iter().enumerate() {
            let u = c.dot(&col) + 1.0;
            values[s] = -0.5 * col.norm_squared() + log_sigmoid(u);
            let mut gc = g.column_mut(s);
            gc += &c * sigmoid(-u);
        }
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let c = DVector::from_row_slice(&C);
        let u = c.dot(w) + 1.0;
        -DMatrix::identity(2, 2) - &c * c.transpose() * (sigmoid(u) * sigmoid(-u))
    }
}

fn random_params(tree: &Tree, rng: &mut rand::rngs::StdRng) -> DVector<f64> {
    let n = tree.nodes * 3 + tree.bins() * 4;
    standard_normal(n, 1, rng).column(0) * 0.7
}

#[test]
fn gauss_hermite_matches_a_fine_riemann_sum() {
    let gh = GaussHermite::standard();
    let (mu, sd) = (0.7, 2.5);
    let mut riemann = 0.0;
    let h = 1e-3;
    for i in -10_000..=10_000 {
        let e = i as f64 * h;
        let phi = (-0.5 * e * e).exp() / (2.0 * std::f64::consts::PI).sqrt();
        riemann += h * phi * log_sigmoid(-(mu + sd * e));
    }
    let (v, _, _) = gh.expect_log_sigmoid(mu, sd, -1.0);
    assert!((v - riemann).abs() < 1e-6, "{v} vs {riemann}");
}

#[test]
fn sigmoid_expectation_derivatives_match_finite_differences() {
    let gh = GaussHermite::standard();
    let (mu, sd, h) = (-0.4, 1.3, 1e-6);
    let (_, dmu, dsd) = gh.expect_log_sigmoid(mu, sd, 1.0);
    let f = |m: f64, s: f64| gh.expect_log_sigmoid(m, s, 1.0).0;
    assert!((dmu - (f(mu + h, sd) - f(mu - h, sd)) / (2.0 * h)).abs() < 1e-7);
    assert!((dsd - (f(mu, sd + h) - f(mu, sd - h)) / (2.0 * h)).abs() < 1e-7);
}

#[test]
fn bound_gradient_matches_finite_differences_with_three_bins() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let tree = Tree::root(false).split(0).split(1);
    let z = standard_normal(2, 50, &mut rng);
    let gh = GaussHermite::standard();
    let theta = DVector::zeros(0);
    let b = Bound {
        model: &Skewed,
        tree: &tree,
        z: &z,
        theta0: &theta,
        learn_theta: false,
        gh: &gh,
    };
    let x = random_params(&tree, &mut rng);
    let g = b.eval(&x).grad;
    let h = 1e-6;
    for i in 0..x.len() {
        let mut xp = x.clone();
        xp[i] += h;
        let mut xm = x.clone();
        xm[i] -= h;
        let fd = (b.eval(&xp).value - b.eval(&xm).value) / (2.0 * h);
        assert!(
            (g[i] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "coordinate {i}: {} vs {fd}",
            g[i]
        );
    }
}

#[test]
fn one_bin_bound_is_the_vi_diag_elbo_on_the_same_samples() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let z = standard_normal(2, 64, &mut rng);
    let gh = GaussHermite::standard();
    let theta = DVector::zeros(0);
    let tree = Tree::root(false);
    let b = Bound {
        model: &Skewed,
        tree: &tree,
        z: &z,
        theta0: &theta,
        learn_theta: false,
        gh: &gh,
    };
    let (m, log_s) = (
        DVector::from_vec(vec![0.3, -0.2]),
        DVector::from_vec(vec![-0.5, 0.1]),
    );
    let x = Params {
        a: vec![],
        b: vec![],
        m: vec![m.clone()],
        log_sigma: vec![log_s.clone()],
        lower: vec![DVector::zeros(0)],
        theta: theta.clone(),
    }
    .pack(false);
    // vi_diag's objective (objective::Elbo with the Scaled family, Q = I) on the same Z;
    // its φ = [μ; log σ] is packed exactly like one bin.
    let elbo = crate::infer::objective::Elbo {
        model: &Skewed,
        family: crate::infer::mvi_eig::Scaled {
            q: None,
            z: z.clone(),
        },
        fixed_theta: Some(theta.clone()),
    };
    let (v, g) = elbo.value_grad(&x);
    let ours = b.eval(&x);
    assert!((ours.value - v).abs() < 1e-12, "{} vs {v}", ours.value);
    assert!((ours.grad - g).amax() < 1e-12);
    // and by hand: mean_t log p̃(m + σ ⊙ z_t) + Σ log σ + (D/2) log 2πe.
    let mut w = z.clone();
    for mut col in w.column_iter_mut() {
        let c = &m + col.component_mul(&log_s.map(f64::exp));
        col.copy_from(&c);
    }
    let lp = Skewed.eval(&theta, &w, Want::VALUE).values.mean();
    let by_hand = lp + log_s.sum() + (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
    assert!((ours.value - by_hand).abs() < 1e-12);
}

#[test]
fn growth_never_lowers_the_bound_and_weights_sum_to_one() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let s = SplitMf {
        settings: Settings {
            bins: 3,
            samples: 100,
            ..Settings::default()
        },
    };
    let (post, growth) = s
        .fit_growth(&Skewed, &mut rng, &mut crate::infer::Silent)
        .unwrap();
    assert!(
        growth.bounds.windows(2).all(|w| w[1] >= w[0]),
        "{:?}",
        growth.bounds
    );
    let Approximation::Mixture { weights, components } = &post.approx else {
        panic!("not a mixture")
    };
    assert_eq!(weights.len(), components.len());
    assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert_eq!(weights.len(), growth.bounds.len());
}

#[test]
fn build_reads_its_keys_and_rejects_others() {
    use crate::infer::{InferOption, OptionValue};
    let opts = |entries: Vec<(&str, OptionValue)>| InferOptions {
        entries: entries
            .into_iter()
            .map(|(k, value)| InferOption {
                key: k.to_string(),
                value,
                span: None,
            })
            .collect(),
        source: miette::NamedSource::new("test", String::new()),
    };
    let ok = opts(vec![
        ("bins", OptionValue::Int(3)),
        ("optimizer", OptionValue::Ident("scg".into())),
    ]);
    assert_eq!(build(&ok).unwrap().name(), "split_mf");
    assert!(build(&opts(vec![("optimizer", OptionValue::Ident("adam".into()))])).is_err());
    assert!(build(&opts(vec![("particles", OptionValue::Int(3))])).is_err());
    assert!(build(&opts(vec![("bins", OptionValue::Real(2.5))])).is_err());
}

/// Skewed with a precision hyperparameter: log p̃(w | θ) = −½ e^θ ‖w‖² + (D/2) θ + log σ(cᵀw + 1).
struct WithTheta;

impl LogDensity for WithTheta {
    fn dim(&self) -> usize {
        2
    }
    fn theta_dim(&self) -> usize {
        1
    }
    fn eval(&self, t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let base = Skewed.eval(t, w, Want::GRAD_W);
        let prec = t[0].exp();
        let sq = DMatrix::from_iterator(1, w.ncols(), w.column_iter().map(|c| c.norm_squared()));
        let values = DVector::from_iterator(
            w.ncols(),
            (0..w.ncols()).map(|s| base.values[s] + 0.5 * (1.0 - prec) * sq[s] + t[0]),
        );
        let gw = base.grad_w.expect("asked") + w * (1.0 - prec);
        let gt = sq.map(|v| -0.5 * prec * v + 1.0);
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(gw),
            grad_theta: want.grad_theta.then_some(gt),
        }
    }
    fn hessian(&self, t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        Skewed.hessian(t, w) + DMatrix::identity(2, 2) * (1.0 - t[0].exp())
    }
    fn theta_init(&self) -> DVector<f64> {
        DVector::from_element(1, 0.3)
    }
}

#[test]
fn bound_gradient_in_theta_matches_finite_differences() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let tree = Tree::root(false).split(0);
    let z = standard_normal(2, 40, &mut rng);
    let gh = GaussHermite::standard();
    let theta = WithTheta.theta_init();
    let b = Bound {
        model: &WithTheta,
        tree: &tree,
        z: &z,
        theta0: &theta,
        learn_theta: true,
        gh: &gh,
    };
    let x = Params::unpack(&random_params(&tree, &mut rng), &tree, 2, &theta, false).pack(true);
    let i = x.len() - 1;
    let h = 1e-6;
    let (mut xp, mut xm) = (x.clone(), x.clone());
    xp[i] += h;
    xm[i] -= h;
    let fd = (b.eval(&xp).value - b.eval(&xm).value) / (2.0 * h);
    let g = b.eval(&x).grad[i];
    assert!((g - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{g} vs {fd}");
}

#[test]
fn learn_hyper_moves_theta_past_the_laplace_estimate_and_off_keeps_it() {
    let fit = |learn_hyper| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let settings = Settings {
            bins: 2,
            samples: 100,
            learn_hyper,
            ..Settings::default()
        };
        SplitMf { settings }
            .fit_growth(&WithTheta, &mut rng, &mut crate::infer::Silent)
            .unwrap()
    };
    let common = crate::infer::settings::Common::default();
    let laplace = crate::infer::laplace::fit_laplace(
        &WithTheta,
        &common,
        &mut rand::rngs::StdRng::seed_from_u64(1),
        &mut crate::infer::Silent,
    )
    .unwrap();
    let (on, growth) = fit(true);
    assert!(
        (on.theta[0] - laplace.theta[0]).abs() > 1e-4,
        "θ stayed at Laplace's {}",
        laplace.theta[0]
    );
    assert!(
        growth.bounds.windows(2).all(|w| w[1] >= w[0]),
        "{:?}",
        growth.bounds
    );
    let (off, _) = fit(false);
    assert!((off.theta[0] - 0.3).abs() < 1e-15);
}

/// Keeps every phase name and counts iterations.
#[derive(Default)]
struct Log {
    phases: Vec<String>,
    iterations: usize,
}

impl Observer for Log {
    fn iteration(&mut self, _r: &crate::posterior::IterRecord) -> bool {
        self.iterations += 1;
        true
    }
    fn phase(&mut self, name: &str) {
        self.phases.push(name.to_string());
    }
}

#[test]
fn observer_hears_the_bound_after_every_stage() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let s = SplitMf {
        settings: Settings {
            bins: 2,
            samples: 50,
            ..Settings::default()
        },
    };
    let mut log = Log::default();
    let (post, growth) = s.fit_growth(&Skewed, &mut rng, &mut log).unwrap();
    let reported: Vec<&String> = log.phases.iter().filter(|p| p.contains("bound with")).collect();
    assert_eq!(reported.len(), growth.bounds.len(), "{:?}", log.phases);
    assert!(reported[0].contains(&format!("{:.6}", growth.bounds[0])));
    assert!(log.iterations >= post.trace.len() && !post.trace.is_empty());
}

#[test]
fn full_cov_bound_gradient_matches_finite_differences() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let tree = Tree::root(true).split(0).split(0);
    let z = standard_normal(2, 40, &mut rng);
    let gh = GaussHermite::standard();
    let theta = DVector::zeros(0);
    let b = Bound {
        model: &Skewed,
        tree: &tree,
        z: &z,
        theta0: &theta,
        learn_theta: false,
        gh: &gh,
    };
    let n = tree.leaf_off(2, tree.bins());
    let x = standard_normal(n, 1, &mut rng).column(0) * 0.7;
    let g = b.eval(&x).grad;
    let h = 1e-6;
    for i in 0..n {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += h;
        xm[i] -= h;
        let fd = (b.eval(&xp).value - b.eval(&xm).value) / (2.0 * h);
        assert!(
            (g[i] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "coordinate {i}: {} vs {fd}",
            g[i]
        );
    }
}

#[test]
fn full_cov_one_bin_is_at_least_the_diagonal_bound() {
    let fit = |full_cov| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let settings = Settings {
            bins: 1,
            samples: 200,
            full_cov,
            ..Settings::default()
        };
        SplitMf { settings }
            .fit_growth(&Skewed, &mut rng, &mut crate::infer::Silent)
            .unwrap()
            .1
            .bounds[0]
    };
    let (diag, full) = (fit(false), fit(true));
    assert!(full >= diag - 1e-9, "full {full} < diag {diag}");
}
