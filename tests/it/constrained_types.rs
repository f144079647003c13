//! Whole-pipeline use of Stan's constrained types and of bounds that depend on earlier
//! params: models check, lower and pass `diagnose` (reverse vs num-dual vs finite
//! differences); laplace finds modes known in closed form or from an independent 1-D
//! search (a simplex under a Dirichlet written with `target +=`, an ordered pair under
//! normal priors, the correlation of a `cholesky_corr` under an LKJ-like prior and a
//! bivariate normal likelihood); every output draw satisfies its constraint; a hyper of a
//! constrained type or with dependent bounds starts at its initial value.

use crate::common::{load, root};
use mvi::check::{self, check_source};
use mvi::data::{add_json_text, DataSet};
use mvi::density::{LogDensity, Want};
use mvi::graph::transform::{entry, TypeKind};
use mvi::graph::{self, LogJoint, Tolerances};
use mvi::infer::Silent;
use mvi::posterior::Approximation;
use mvi::run::{self, RunInfo};
use nalgebra::{DMatrix, DVector};

/// The fit of a model with its `infer` block: the mean of q on the unconstrained scale (for
/// laplace, the mode), and the run's report.
fn fit(typed: &check::TypedModel, joint: &LogJoint) -> (DVector<f64>, mvi::report::FitReport) {
    let options = check::infer_options(typed, &[]).unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let (post, report) = run::fit(joint, &options, &RunInfo::default(), &mut Silent)
        .unwrap_or_else(|d| panic!("{}", d.render_plain(100)));
    let Approximation::Gaussian(q) = &post.approx else {
        panic!("laplace and vi_diag give a Gaussian")
    };
    (q.mean.clone(), report)
}

/// The constrained value of param `name` at w.
fn value_of(joint: &LogJoint, name: &str, w: &DVector<f64>) -> Vec<f64> {
    let m = DMatrix::from_column_slice(w.len(), 1, w.as_slice());
    let out = joint.constrain(&joint.theta_init(), &m);
    let (_, v) = out
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("a declared param");
    v.as_slice().to_vec()
}

const EVERY_TYPE: &str = r"
data {
  N: int
}
hyper {
  w0: simplex[3] = [0.2, 0.3, 0.5]
  lo: real = -1.0
  hi: real<lower=lo> = 2.0
}
param {
  theta: simplex[4]
  mu: ordered[3]
  pos: positive_ordered[2]
  dir: unit_vector[3]
  z: sum_to_zero_vector[3]
  L: cholesky_corr[3]
  Lc: cholesky_cov[2]
  R: corr_matrix[3]
  S: cov_matrix[2]
  a: real<lower=0, upper=1>
  b: real<lower=0, upper=1 - a>
  c: vector<lower=mu[1], upper=mu[3] + pos[2]>[2]
  d: real<lower=lo, upper=hi>
}
model {
  target += dirichlet_like(theta)
  mu ~ normal(0, 2)
  pos ~ normal(1, 1)
  z ~ normal(0, 1)
  target += 2 * log(L[2, 2]) + 2 * log(L[3, 3]) - 0.5 * sum(Lc .* Lc)
  target += -0.5 * sum(R .* R) - 0.5 * sum(S .* S) + sum(w0 .* theta[1:3])
  target += dir[1] + N * (log(a) + log(b)) - sum(c .* c) - d * d
}
fn dirichlet_like(x: vector) -> real {
  return sum(log(x))
}
infer {
  method = vi_diag
  samples = 200
  learn_hyper = false
}
";

#[test]
fn a_model_with_every_type_and_dependent_bounds_agrees_three_ways() {
    let (_, joint) = load(EVERY_TYPE, r#"{"N": 3}"#);
    let theta = joint.theta_init();
    let d = joint.dim();
    assert_eq!(d, 3 + 3 + 2 + 3 + 2 + 3 + 3 + 3 + 3 + 1 + 1 + 2 + 1);
    let start = joint.initial_point();
    for shift in [0.0, 0.37, -0.61] {
        let w = DVector::from_fn(d, |i, _| start[i] + shift * ((i % 5) as f64 - 2.0) / 2.0);
        let r = graph::diagnose(&joint, &theta, &w, Tolerances::default());
        assert!(r.passed(), "diagnose fails at shift {shift}: {r:?}");
    }
}

#[test]
fn every_output_draw_satisfies_its_constraint() {
    // vi_diag, not laplace: with a unit vector the density of the free coordinates peaks at
    // u = 0 (Stan's −½‖u‖² with a likelihood that sees only the direction), where the
    // direction is undefined, so the model has no Laplace approximation.
    let (typed, joint) = load(EVERY_TYPE, r#"{"N": 3}"#);
    let (_, report) = fit(&typed, &joint);
    let draws = &report.draws;
    assert!(draws.nrows() >= 100);
    let column = |name: &str| {
        report
            .columns
            .iter()
            .position(|c| c == name || c.starts_with(&format!("{name}.")))
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let checks: [(&str, TypeKind, usize); 9] = [
        ("theta", TypeKind::Simplex, 4),
        ("mu", TypeKind::Ordered, 3),
        ("pos", TypeKind::PositiveOrdered, 2),
        ("dir", TypeKind::UnitVector, 3),
        ("z", TypeKind::SumToZero, 3),
        ("L", TypeKind::CholeskyCorr, 3),
        ("Lc", TypeKind::CholeskyCov, 2),
        ("R", TypeKind::CorrMatrix, 3),
        ("S", TypeKind::CovMatrix, 2),
    ];
    for s in 0..draws.nrows() {
        for &(name, kind, k) in &checks {
            let n = if kind.is_matrix() { k * k } else { k };
            let j = column(name);
            let x: Vec<f64> = (j..j + n).map(|c| draws[(s, c)]).collect();
            assert_eq!(
                (entry(kind).validate)(&x, k),
                Ok(()),
                "draw {s} of `{name}`: {x:?}"
            );
        }
        let (a, b, d) = (
            draws[(s, column("a"))],
            draws[(s, column("b"))],
            draws[(s, column("d"))],
        );
        assert!(a > 0.0 && b > 0.0 && a + b < 1.0, "draw {s}: a = {a}, b = {b}");
        assert!(d > -1.0 && d < 2.0);
        let (mu1, mu3, pos2) = (
            draws[(s, column("mu"))],
            draws[(s, column("mu") + 2)],
            draws[(s, column("pos") + 1)],
        );
        for i in 0..2 {
            let c = draws[(s, column("c") + i)];
            assert!(
                c > mu1 && c < mu3 + pos2,
                "draw {s}: c = {c} outside ({mu1}, {})",
                mu3 + pos2
            );
        }
    }
    // Stan's column names, matrices column-major
    assert!(report.columns.iter().any(|c| c == "L.2.1"));
    assert_eq!(report.columns[column("S") + 1], "S.2.1");
}

#[test]
fn hypers_of_a_constrained_type_or_with_dependent_bounds_start_at_their_initial_values() {
    let (_, joint) = load(EVERY_TYPE, r#"{"N": 3}"#);
    let values = joint.constrain_theta(&joint.theta_init());
    let expect = [vec![0.2, 0.3, 0.5], vec![-1.0], vec![2.0]];
    for (v, e) in values.iter().zip(&expect) {
        for (a, b) in v.iter().zip(e) {
            assert!((a - b).abs() < 1e-12, "{v:?} vs {e:?}");
        }
    }
}

#[test]
fn reference_draws_of_every_type_and_dependent_bound_map_back_to_their_coordinates() {
    // `mvi compare --reference` reads constrained columns: a simplex's K columns for its
    // K − 1 coordinates once indexed past the end of w, and dependent bounds were ignored.
    let one_sided =
        "param {\n  a: real\n  b: real<lower=2 * a>\n  c: vector<upper=a>[2]\n}\nmodel {\n  target += 0\n}\n";
    for (src, json) in [(EVERY_TYPE, r#"{"N": 3}"#), (one_sided, "{}")] {
        reference_round_trip(src, json);
    }
}

/// Constrained values of w at a few points, written as a reference table with Stan's column
/// names, come back as the same values and (but for a unit vector) the same w.
fn reference_round_trip(src: &str, json: &str) {
    let (_, joint) = load(src, json);
    let (d, n, theta) = (joint.dim(), 6, joint.theta_init());
    let start = joint.initial_point();
    let w = DMatrix::from_fn(d, n, |i, s| start[i] + ((i * 7 + s * 3) % 11) as f64 / 11.0 - 0.5);
    let values = joint.constrain(&theta, &w);
    let (mut columns, mut entries) = (Vec::new(), Vec::new());
    for p in &joint.params {
        let v = &values
            .iter()
            .find(|(name, _)| *name == p.name)
            .expect("a param")
            .1;
        let dims = p.shape.dims();
        for (k, name) in mvi::report::cmdstan_names(&p.name, &dims).into_iter().enumerate() {
            columns
                .push(name.replacen('.', "[", 1).replace('.', ",") + if dims.is_empty() { "" } else { "]" });
            entries.push(v.row(k).iter().copied().collect::<Vec<f64>>());
        }
    }
    let table = mvi::data::draws::DrawsTable {
        file: "ref.csv".to_string(),
        values: DMatrix::from_fn(n, columns.len(), |s, j| entries[j][s]),
        columns,
    };
    let reference = mvi::reference::Reference::from_table(&joint, &table)
        .unwrap_or_else(|e| panic!("{}", e.render_plain(100)));
    let back = joint.constrain(&theta, &reference.draws);
    for ((name, a), (_, b)) in values.iter().zip(&back) {
        for (x, y) in a.iter().zip(b.iter()) {
            assert!(
                (x - y).abs() < 1e-9 * (1.0 + x.abs()),
                "`{name}`: {x} came back as {y}"
            );
        }
    }
    // the coordinates themselves, but for the unit vector's (u and c·u give one direction)
    for p in joint.params.iter().filter(|p| p.name != "dir") {
        for i in p.offset..p.offset + p.free_len() {
            for s in 0..n {
                let (x, y) = (w[(i, s)], reference.draws[(i, s)]);
                assert!(
                    (x - y).abs() < 1e-8,
                    "`{}` coordinate {i}: {x} came back as {y}",
                    p.name
                );
            }
        }
    }
}

#[test]
fn dependent_bounds_add_the_jacobian_at_the_bounds_current_value() {
    let src = "param {\n  a: real<lower=0, upper=1>\n  b: real<lower=0, upper=1 - a>\n}\nmodel {\n  target += 0\n}\n";
    let (_, joint) = load(src, "{}");
    let u = [0.4, -0.9];
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let a = sig(u[0]);
    let lj = |v: f64| sig(v).ln() + (1.0 - sig(v)).ln();
    let expected = lj(u[0]) + lj(u[1]) + (1.0 - a).ln();
    let m = DMatrix::from_column_slice(2, 1, &u);
    let got = joint.eval(&joint.theta_init(), &m, Want::VALUE).values[0];
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    let b = value_of(&joint, "b", &DVector::from_column_slice(&u))[0];
    assert!((b - (1.0 - a) * sig(u[1])).abs() < 1e-15);
}

#[test]
fn a_simplex_under_a_dirichlet_has_its_laplace_mode_at_alpha_over_its_sum() {
    // p(θ) ∝ Π θᵢ^(αᵢ − 1); with the log-Jacobian ½ log K + Σ log θᵢ the density of the free
    // coordinates is ∝ Π θᵢ^αᵢ, whose mode is θ = α / Σα (without the Jacobian it would be
    // (α − 1) / (Σα − K)).
    let src = "data {\n  alpha: vector[K]\n}\nparam {\n  theta: simplex[K]\n}\nmodel {\n  target += sum((alpha - 1) .* log(theta))\n}\ninfer { method = laplace }\n";
    let alpha = [2.0, 5.0, 3.5, 1.5];
    let (typed, joint) = load(src, &format!(r#"{{"alpha": {alpha:?}}}"#));
    let (mode, _) = fit(&typed, &joint);
    let theta = value_of(&joint, "theta", &mode);
    let total: f64 = alpha.iter().sum();
    for (t, a) in theta.iter().zip(alpha) {
        assert!((t - a / total).abs() < 1e-6, "{theta:?}");
    }
}

#[test]
fn an_ordered_pair_under_normal_priors_has_its_mode_at_minus_and_plus_one_over_root_two() {
    // −½x₁² − ½x₂² + log(x₂ − x₁) (the Jacobian of exp(u₂)) peaks at x = (−1/√2, 1/√2).
    let src = "param {\n  mu: ordered[2]\n}\nmodel {\n  mu ~ normal(0, 1)\n}\ninfer { method = laplace }\n";
    let (typed, joint) = load(src, "{}");
    let (mode, _) = fit(&typed, &joint);
    let mu = value_of(&joint, "mu", &mode);
    let r = std::f64::consts::FRAC_1_SQRT_2;
    assert!((mu[0] + r).abs() < 1e-6 && (mu[1] - r).abs() < 1e-6, "{mu:?}");
}

/// 24 bivariate points with sample correlation about 0.6.
fn correlated_points() -> Vec<[f64; 2]> {
    (0..24)
        .map(|i| {
            let s = (i as f64 * 0.7).sin() * 1.3;
            let t = (i as f64 * 1.9).cos();
            [s, 0.6 * s + 0.8 * t]
        })
        .collect()
}

#[test]
fn a_cholesky_corr_posterior_mode_matches_an_independent_one_dimensional_search() {
    // y_n ~ N(0, Ω), Ω = L Lᵀ with L: cholesky_corr[2], and 2 log L₂₂ (LKJ with η = 2).
    // On the free coordinate u (ρ = tanh u) the log posterior is, by hand,
    // Σₙ log N(yₙ | 0, Ω(ρ)) + log(1 − ρ²) [prior] + log(1 − ρ²) [Jacobian].
    let src = "data {\n  y: matrix[N, 2]\n}\nparam {\n  L: cholesky_corr[2]\n}\nmodel {\n  target += 2 * log(L[2, 2])\n  y ~ multi_normal_cholesky([0, 0], L)\n}\ninfer { method = laplace }\n";
    let pts = correlated_points();
    let rows: Vec<String> = pts.iter().map(|p| format!("[{}, {}]", p[0], p[1])).collect();
    let (typed, joint) = load(src, &format!(r#"{{"y": [{}]}}"#, rows.join(", ")));
    let (mode, _) = fit(&typed, &joint);
    let rho = value_of(&joint, "L", &mode)[1];
    let log_post = |u: f64| {
        let r = u.tanh();
        let det = 1.0 - r * r;
        let lik: f64 = pts
            .iter()
            .map(|p| -0.5 * det.ln() - (p[0] * p[0] - 2.0 * r * p[0] * p[1] + p[1] * p[1]) / (2.0 * det))
            .sum();
        lik + 2.0 * det.ln()
    };
    // golden-section search for the maximum on u ∈ (−4, 4)
    let (mut lo, mut hi) = (-4.0f64, 4.0f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..200 {
        let (x1, x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
        if log_post(x1) > log_post(x2) {
            hi = x2;
        } else {
            lo = x1;
        }
    }
    let expected = (0.5 * (lo + hi)).tanh();
    assert!(expected > 0.3, "the data are correlated: {expected}");
    assert!(
        (rho - expected).abs() < 1e-6,
        "laplace mode ρ = {rho}, search {expected}"
    );
}

#[test]
fn a_hyper_whose_initial_value_is_not_of_its_type_or_outside_its_bounds_is_a_diagnostic() {
    let cases = [
        (
            "hyper {\n  P: simplex[3] = [0.5, 0.5, 0.5]\n}\n",
            "is not a valid `simplex`",
        ),
        (
            "hyper {\n  lo: real = 0.0\n  hi: real<lower=lo> = -1.0\n}\n",
            "outside its bounds",
        ),
    ];
    for (hyper, want) in cases {
        let src = format!("{hyper}param {{\n  x: real\n}}\nmodel {{\n  x ~ normal(0, 1)\n}}\n");
        let mut set = DataSet::default();
        add_json_text(&mut set, "data.json", "{}".into()).unwrap();
        let typed = check_source(&src, "model.mvi", root(), &set)
            .unwrap_or_else(|d| panic!("{}", d[0].render_plain(100)));
        let d = graph::lower_model(&typed).expect_err("the initial value is invalid");
        assert!(d.message.contains(want), "{}", d.render_plain(100));
        assert!(!d.labels.is_empty() && d.help.is_some());
    }
}

/// ∫ exp(log p̃(w)) dw over a box, by the midpoint rule on an n-point grid per axis,
/// evaluated as one batch.
fn integrate(joint: &LogJoint, ranges: &[(f64, f64)], n: usize) -> f64 {
    let d = ranges.len();
    let total = n.pow(d as u32);
    let steps: Vec<f64> = ranges.iter().map(|(a, b)| (b - a) / n as f64).collect();
    let w = DMatrix::from_fn(d, total, |i, c| {
        let k = (c / n.pow(i as u32)) % n;
        ranges[i].0 + (k as f64 + 0.5) * steps[i]
    });
    let values = joint.eval(&joint.theta_init(), &w, Want::VALUE).values;
    let volume: f64 = steps.iter().product();
    values.iter().map(|v| v.exp()).sum::<f64>() * volume
}

/// A model's param block and model body, the integration box of its free coordinates, and
/// the grid points per axis.
type PriorCase = (&'static str, Vec<(f64, f64)>, usize);

/// A normalised prior on a constrained type integrates to 1 over the free coordinates only
/// if the log-Jacobian is exact, constant included (½ log K for the simplex): each prior is
/// a proper density of the value's free entries (the first K − 1 of a simplex, the strict
/// lower triangle of a correlation factor, the lower triangle of a Cholesky factor).
#[test]
fn normalised_priors_on_constrained_types_integrate_to_one_over_the_free_coordinates() {
    let cases: [PriorCase; 5] = [
        (
            "theta: simplex[3]\n}\nmodel {\n  theta ~ dirichlet([2, 3, 4])",
            vec![(-9.0, 9.0); 2],
            400,
        ),
        (
            "L: cholesky_corr[2]\n}\nmodel {\n  L ~ lkj_corr_cholesky(2)",
            vec![(-8.0, 8.0)],
            2000,
        ),
        (
            "R: corr_matrix[2]\n}\nmodel {\n  R ~ lkj_corr(1.5)",
            vec![(-8.0, 8.0)],
            2000,
        ),
        (
            "L: cholesky_corr[3]\n}\nmodel {\n  L ~ lkj_corr_cholesky(3)",
            vec![(-6.0, 6.0); 3],
            64,
        ),
        (
            "L: cholesky_cov[2]\n}\nmodel {\n  L ~ wishart_cholesky(5, [[1, 0], [0.5, 1]])",
            vec![(-5.0, 2.5), (-6.0, 6.0), (-5.0, 2.5)],
            72,
        ),
    ];
    let ordered: [PriorCase; 2] = [
        // Π N(xᵢ | 0, 1) over x₁ < x₂ has mass 1/2, and so has Π Exp(xᵢ | 1) over 0 < x₁ < x₂
        (
            "mu: ordered[2]\n}\nmodel {\n  mu ~ normal(0, 1)",
            vec![(-9.0, 9.0), (-30.0, 3.0)],
            600,
        ),
        (
            "r: positive_ordered[2]\n}\nmodel {\n  r ~ exponential(1)",
            vec![(-30.0, 4.0); 2],
            600,
        ),
    ];
    for (body, ranges, n) in ordered {
        let src = format!("param {{\n  {body}\n}}\n");
        let (_, joint) = load(&src, "{}");
        let mass = integrate(&joint, &ranges, n);
        assert!(
            (mass - 0.5).abs() < 1e-5,
            "{body}: the prior integrates to {mass}, not 1/2"
        );
    }
    for (body, ranges, n) in cases {
        let src = format!("param {{\n  {body}\n}}\n");
        let (_, joint) = load(&src, "{}");
        let mass = integrate(&joint, &ranges, n);
        // the midpoint rule on these smooth, fast-decaying integrands is accurate to ~1e-10;
        // the Wishart's box cuts ~2e-6 of its mass
        assert!(
            (mass - 1.0).abs() < 1e-5,
            "{body}: the prior integrates to {mass}"
        );
    }
}

/// `cholesky_factor_cov[M, N]` (M > N) end to end: a 4×2 factor under independent standard
/// normals on its entries (and the log-Jacobian, so each diagonal entry l has density
/// ∝ l e^{−l²/2} on the unconstrained scale, highest at l = 1) has M·N − N(N − 1)/2 = 7 free
/// coordinates, passes `diagnose`, and laplace finds the mode [[1, 0], [0, 1], [0, 0],
/// [0, 0]]; as data, its value is checked when it is read.
#[test]
fn two_size_cholesky_factor_cov_fits_and_checks_its_data() {
    let src = "param {\n  L: cholesky_factor_cov[4, 2]\n}\nmodel {\n  target += -0.5 * sum(L .* L)\n}\ninfer {\n  method = laplace\n}\n";
    let (typed, joint) = load(src, "{}");
    assert_eq!(joint.dim(), 7);
    for shift in [0.0, 0.4, -0.7] {
        let w = DVector::from_fn(7, |i, _| shift * ((i % 3) as f64 - 1.0));
        let r = graph::diagnose(&joint, &joint.theta_init(), &w, Tolerances::default());
        assert!(r.passed(), "diagnose fails at shift {shift}: {r:?}");
    }
    let (mode, _) = fit(&typed, &joint);
    let l = value_of(&joint, "L", &mode);
    let want = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
    for (a, b) in l.iter().zip(want) {
        assert!((a - b).abs() < 1e-5, "mode {l:?}, want {want:?}");
    }
    // data: a valid 3×2 factor binds; one with an entry above the diagonal is a diagnostic
    let data_src = "data {\n  B: cholesky_factor_cov[3, 2]\n}\nparam {\n  m: real\n}\nmodel {\n  m ~ normal(sum(B), 1)\n}\n";
    let mut set = DataSet::default();
    add_json_text(
        &mut set,
        "data.json",
        r#"{"B": [[1.0, 0.0], [0.5, 2.0], [-1.0, 0.3]]}"#.into(),
    )
    .unwrap();
    assert!(check_source(data_src, "model.mvi", root(), &set).is_ok());
    let mut bad = DataSet::default();
    add_json_text(
        &mut bad,
        "data.json",
        r#"{"B": [[1.0, 0.4], [0.5, 2.0], [-1.0, 0.3]]}"#.into(),
    )
    .unwrap();
    let err = check_source(data_src, "model.mvi", root(), &bad).expect_err("an entry above the diagonal");
    assert_eq!(
        err[0].code,
        "mvi::data::not_of_type",
        "{}",
        err[0].render_plain(100)
    );
}

#[test]
fn laplace_on_a_unit_vector_says_its_fit_does_not_describe_the_direction() {
    let src = "data { X: matrix[N, 2] }\nparam {\n  u: unit_vector[2]\n  r: real<lower=0>\n}\nmodel {\n  \
               r ~ normal(0, 5)\n  X[:, 1] ~ normal(r * u[1], 1)\n  X[:, 2] ~ normal(r * u[2], 1)\n}\n\
               infer { method = METHOD; seed = 1 }\n";
    let json = r#"{"X": [[1.4, 2.6], [2.1, 2.2], [1.6, 2.9], [2.0, 1.9], [1.7, 2.5], [2.2, 2.8]]}"#;
    let note = "`u` is a unit_vector: its coordinates have no useful mode";
    for (method, warned) in [("laplace", true), ("vi_full", false)] {
        let (typed, joint) = load(&src.replace("METHOD", method), json);
        let (_, report) = fit(&typed, &joint);
        assert_eq!(
            report.notes.iter().any(|n| n.contains(note)),
            warned,
            "{method}: {:?}",
            report.notes
        );
    }
}
