//! Every example lowers and evaluates: `examples/*.mvi` with its data (`examples/data/<stem>.json`
//! when present, see `examples/README.md`) loads, lowers to a finite log p̃ at w = 0 and at a
//! few random points, and passes `graph::diagnose` (reverse vs num-dual vs finite differences,
//! Hessian symmetry) — `mvi diagnose` on every example. `dump_graph` of two small examples is
//! a snapshot.

use std::path::{Path, PathBuf};

use crate::common::root;
use mvi::density::{LogDensity, Want};
use mvi::graph::{diagnose, dump_graph, lower_model, LogJoint, Tolerances};
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};

fn data_args(path: &Path) -> Vec<String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("example files have a name");
    let data = root().join("examples/data").join(format!("{stem}.json"));
    if data.is_file() {
        vec![data.display().to_string()]
    } else {
        vec![]
    }
}

fn lower_example(path: &Path) -> LogJoint {
    let model = match mvi::check::load_model(path, &data_args(path)) {
        Ok(m) => m,
        Err(ds) => panic!(
            "{} does not check:\n{}",
            path.display(),
            ds.iter().map(|d| d.render_plain(100)).collect::<String>()
        ),
    };
    match lower_model(&model) {
        Ok(lj) => lj,
        Err(d) => panic!("{} does not lower:\n{}", path.display(), d.render_plain(100)),
    }
}

fn examples() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("the examples directory exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mvi"))
        .collect();
    out.sort();
    out
}

/// Random unconstrained points near the centre of every transform.
fn random_points(d: usize, s: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    DMatrix::from_fn(d, s, |_, _| rng.random_range(-0.5..0.5))
}

#[test]
fn there_are_examples_to_check() {
    assert!(
        examples().len() >= 8,
        "expected the eight examples of examples/README.md"
    );
}

#[test]
fn every_example_evaluates_to_a_finite_log_density() {
    for path in examples() {
        let lj = lower_example(&path);
        let theta = lj.theta_init();
        let d = lj.dim();
        let mut w = random_points(d, 4, 7);
        w.column_mut(0).fill(0.0);
        let e = lj.eval(&theta, &w, Want::ALL);
        for (c, v) in e.values.iter().enumerate() {
            assert!(v.is_finite(), "{}: log p̃ at column {c} is {v}", path.display());
        }
        let gw = e.grad_w.expect("asked for ∇_w");
        assert!(
            gw.iter().all(|x| x.is_finite()),
            "{}: non-finite gradient",
            path.display()
        );
        assert_eq!(
            lj.coordinate_names().len(),
            d,
            "{}: one name per coordinate",
            path.display()
        );
        let blocks: usize = lj.param_blocks().iter().map(|b| b.2).sum();
        assert_eq!(blocks, d, "{}: the param blocks tile w", path.display());
    }
}

#[test]
fn every_example_passes_diagnose() {
    for path in examples() {
        let lj = lower_example(&path);
        let theta = lj.theta_init();
        let w: DVector<f64> = random_points(lj.dim(), 1, 11).column(0).into_owned();
        let report = diagnose(&lj, &theta, &w, Tolerances::default());
        assert!(report.passed(), "{}:\n{report}", path.display());
    }
}

#[test]
fn every_example_with_predict_gives_pointwise_log_likelihoods() {
    for path in examples() {
        let lj = lower_example(&path);
        let Some(g) = &lj.predict else { continue };
        assert!(
            !g.pointwise.is_empty(),
            "{}: predict without outputs",
            path.display()
        );
        let w = random_points(lj.dim(), 3, 5);
        let p = lj
            .predict(&lj.theta_init(), &w)
            .expect("the model has a predict block");
        assert_eq!(p.draws(), 3);
        assert!(
            p.joint.iter().chain(&p.pointwise.values()).all(|x| x.is_finite()),
            "{}: non-finite test log-likelihood",
            path.display()
        );
        assert!(!p.quantities.is_empty());
    }
}

#[test]
fn dump_of_small_examples_is_stable() {
    for name in ["eight_schools", "mixture_2d"] {
        let lj = lower_example(&root().join(format!("examples/{name}.mvi")));
        insta::assert_snapshot!(name, dump_graph(&lj.graph));
    }
}

#[test]
fn banana_features_are_one_theta_only_product_with_the_weights() {
    let lj = lower_example(&root().join("examples/logistic_rbf_banana.mvi"));
    let text = dump_graph(&lj.graph);
    let matmuls: Vec<&str> = text.lines().filter(|l| l.contains(" matmul ")).collect();
    // Phi * w: one product of the (hyper-dependent) feature matrix with the batched weights.
    assert!(matmuls.iter().any(|l| l.ends_with(": vector[400]")), "{text}");
    let phi = text
        .lines()
        .find(|l| l.ends_with("// Phi"))
        .expect("Phi is labelled");
    assert!(phi.contains("matrix[400, 31]"), "{phi}");
}
