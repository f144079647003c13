use super::*;
use crate::density::Want;
use crate::infer::{OptionValue, Silent};
use crate::posterior::Approximation;
use rand::SeedableRng;

/// log N(w; μ, Λ⁻¹) up to a constant, one block per coordinate.
struct Gauss {
    mu: DVector<f64>,
    prec: DMatrix<f64>,
}

impl LogDensity for Gauss {
    fn dim(&self) -> usize {
        self.mu.len()
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> crate::density::Evaluated {
        let mut c = w.clone();
        for mut col in c.column_iter_mut() {
            col -= &self.mu;
        }
        let g = -(&self.prec * &c);
        let values = DVector::from_iterator(
            w.ncols(),
            c.column_iter().zip(g.column_iter()).map(|(a, b)| 0.5 * a.dot(&b)),
        );
        crate::density::Evaluated {
            values,
            grad_w: want.grad_w.then_some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, _w: &DVector<f64>) -> DMatrix<f64> {
        -self.prec.clone()
    }
    fn param_blocks(&self) -> Vec<(String, usize, usize)> {
        (0..self.dim()).map(|i| (format!("w{i}"), i, 1)).collect()
    }
}

fn target() -> Gauss {
    Gauss {
        mu: DVector::from_vec(vec![1.0, -2.0]),
        prec: DMatrix::from_row_slice(2, 2, &[2.0, 1.2, 1.2, 1.5]),
    }
}

fn options(entries: &[(&str, OptionValue)]) -> InferOptions {
    InferOptions {
        entries: entries
            .iter()
            .map(|(k, v)| crate::infer::InferOption {
                key: k.to_string(),
                value: v.clone(),
                span: None,
            })
            .collect(),
        source: miette::NamedSource::new("test", String::new()),
    }
}

#[test]
fn build_rejects_unknown_keys_and_bad_algorithms() {
    let bad_key = options(&[("particle", OptionValue::Int(10))]);
    assert!(build(&bad_key).is_err());
    let bad_alg = options(&[("algorithm", OptionValue::Int(3))]);
    assert!(build(&bad_alg).is_err());
    let ok = options(&[
        ("algorithm", OptionValue::Int(2)),
        ("step", OptionValue::Real(0.2)),
    ]);
    assert_eq!(build(&ok).unwrap().name(), "pmfvb");
}

#[test]
fn unknown_block_name_is_unsupported() {
    let names = vec![vec!["w0".to_string()], vec!["nope".to_string()]];
    assert!(matches!(
        resolve_blocks(&target(), Some(&names)),
        Err(Error::Unsupported(_))
    ));
    let ok = resolve_blocks(&target(), Some(&[vec!["w1".to_string()]])).unwrap();
    assert_eq!(ok, vec![vec![1], vec![0]]);
}

#[test]
fn metropolis_steps_reach_the_mean_field_optimum_and_grow_the_step() {
    let settings = Settings {
        particles: 1000,
        step: 0.05,
        max_iters: 200,
        metropolis: true,
        ..Settings::default()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let blocks = vec![vec![0], vec![1]];
    let start = Gaussian {
        mean: DVector::from_vec(vec![3.0, 0.0]),
        root: DMatrix::identity(2, 2),
    };
    let model = target();
    let mut run = Run::new(
        &model,
        &settings,
        blocks,
        &start,
        DVector::zeros(0),
        true,
        &mut rng,
    );
    run.sweeps(&mut rng, &mut Silent);
    let (m, c) = (run.x.column_mean(), particle_cov(&run.x));
    assert!((m[0] - 1.0).abs() < 0.1 && (m[1] + 2.0).abs() < 0.1, "{m}");
    for (i, lam) in [2.0, 1.5].iter().enumerate() {
        assert!((c[(i, i)] * lam - 1.0).abs() < 0.15, "var {i} = {}", c[(i, i)]);
    }
    // Each block's target is an exact Gaussian and the curvature preconditioner is
    // exact: every proposal is accepted, so the step grows to its bound.
    assert!(run.steps.iter().all(|h| *h > 1.0), "{:?}", run.steps);
}

#[test]
fn warm_up_hands_its_particles_to_the_full_run() {
    let settings = Settings {
        particles: 400,
        step: 0.05,
        max_iters: 200,
        warmup: Some(true),
        metropolis: true,
        ..Settings::default()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let post = Pmfvb::new(settings)
        .fit(&target(), &mut rng, &mut Silent)
        .unwrap();
    assert!(
        post.notes.iter().any(|n| n.starts_with("warm-up")),
        "{:?}",
        post.notes
    );
    let (m, c) = (post.mean(), post.cov());
    match &post.approx {
        Approximation::Particles(x) => assert_eq!(x.ncols(), 400),
        other => panic!("particles expected, not {other:?}"),
    }
    assert!((m[0] - 1.0).abs() < 0.15 && (m[1] + 2.0).abs() < 0.15, "{m}");
    assert!((c[(0, 0)] * 2.0 - 1.0).abs() < 0.25, "{c}");
}

#[test]
fn curvature_refreshes_read_sparse_block_hessians_off_seed_products() {
    // Coordinate 0 coupled to all others, a chain on coordinates 1..=n (an SV shape).
    let n = 40;
    let prec = DMatrix::from_fn(n + 1, n + 1, |i, j| match (i, j, i.abs_diff(j)) {
        (0, 0, _) => 3.0,
        (0, _, _) | (_, 0, _) => 0.05,
        (_, _, 0) => 4.0 + 0.1 * i as f64,
        (_, _, 1) => -1.0,
        _ => 0.0,
    });
    let model = Gauss {
        mu: DVector::zeros(n + 1),
        prec: prec.clone(),
    };
    let settings = Settings {
        particles: 20,
        ..Settings::default()
    };
    let blocks = vec![vec![0], (1..=n).collect::<Vec<_>>()];
    let start = Gaussian {
        mean: DVector::zeros(n + 1),
        root: DMatrix::identity(n + 1, n + 1),
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let theta = DVector::zeros(0);
    let mut run = Run::new(&model, &settings, blocks.clone(), &start, theta, true, &mut rng);
    let seeds = run
        .seeds
        .as_ref()
        .expect("the first refresh finds the sparse pattern");
    assert_eq!(
        seeds.vectors().ncols(),
        1 + 3,
        "one group for coordinate 0, 3 for the chain"
    );
    let h = run.mean_block_hessian();
    for coords in &blocks {
        for &r in coords {
            for &c in coords {
                assert!((h[(r, c)] + prec[(r, c)]).abs() < 1e-12, "({r}, {c})");
            }
        }
    }
}

fn particle_cov(x: &DMatrix<f64>) -> DMatrix<f64> {
    let mean = x.column_mean();
    let mut c = x.clone();
    for mut col in c.column_iter_mut() {
        col -= &mean;
    }
    &c * c.transpose() / (x.ncols() - 1) as f64
}

#[test]
fn both_algorithms_reach_the_mean_field_optimum_of_a_gaussian() {
    for algorithm in [1, 2] {
        let settings = Settings {
            particles: 1000,
            step: 0.05,
            max_iters: 300,
            algorithm,
            ..Settings::default()
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let post = Pmfvb::new(settings)
            .fit(&target(), &mut rng, &mut Silent)
            .unwrap();
        let (m, c) = (post.mean(), post.cov());
        assert!(
            (m[0] - 1.0).abs() < 0.1 && (m[1] + 2.0).abs() < 0.1,
            "alg {algorithm}: {m}"
        );
        for (i, lam) in [2.0, 1.5].iter().enumerate() {
            let rel = c[(i, i)] * lam - 1.0;
            assert!(rel.abs() < 0.15, "alg {algorithm}: var {i} = {} ", c[(i, i)]);
        }
        assert!(c[(0, 1)].abs() < 0.1, "blocks stay independent: {}", c[(0, 1)]);
    }
}
