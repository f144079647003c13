//! Good models check clean: every example with its data (the `mvi check` layout report is a
//! snapshot), and behaviours of the checker on small inline models.

use crate::common::root;
use mvi::check::{check_source, dump_typed, infer_options, layout_report, Shape, Stage, TypedModel};
use mvi::data::{add_json_text, DataSet};
use std::path::Path;

fn check_example(path: &Path) -> TypedModel {
    std::env::set_current_dir(root()).unwrap();
    let stem = path.file_stem().unwrap().to_str().unwrap();
    let data = root().join("examples/data").join(format!("{stem}.json"));
    let args: Vec<String> = if data.is_file() {
        vec![format!("examples/data/{stem}.json")]
    } else {
        vec![]
    };
    let rel = path.strip_prefix(root()).unwrap();
    match mvi::check::load_model(rel, &args) {
        Ok(m) => m,
        Err(ds) => panic!(
            "{} does not check:\n{}",
            rel.display(),
            ds.iter().map(|d| d.render_plain(100)).collect::<String>()
        ),
    }
}

#[test]
fn every_example_checks_clean_and_its_layout_is_stable() {
    insta::glob!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples"),
        "*.mvi",
        |path| {
            let m = check_example(path);
            insta::assert_snapshot!(layout_report(&m));
        }
    );
}

fn check(src: &str, json: &str) -> Result<TypedModel, Vec<mvi::diagnostic::Diagnostic>> {
    let mut set = DataSet::default();
    add_json_text(&mut set, "data.json", json.to_string()).unwrap();
    check_source(src, "model.mvi", root(), &set)
}

const LOGISTIC: &str = "import \"rbf\"
data {
  X: matrix[N, Q]
  y: ints[N]
  C: matrix[M, Q]
}
hyper {
  alpha: real<lower=0> = 1.0
  r: real<lower=0> = 1.0
}
let Phi = rbf_features(X, C, r)
param {
  w: vector[M + 1]
}
model {
  w ~ normal(0, 1 / sqrt(alpha))
  y ~ bernoulli_logit(Phi * w)
}
infer {
  method = mvi_lr
  samples = 100
}
";

const LOGISTIC_DATA: &str =
    r#"{"X": [[0, 1], [1, 0], [1, 1]], "y": [0, 1, 1], "C": [[0, 0], [1, 1]], "unused": 3}"#;

#[test]
fn sizes_are_bound_from_data_and_layout_is_computed() {
    let m = check(LOGISTIC, LOGISTIC_DATA).unwrap();
    assert_eq!(m.dim, 3);
    assert_eq!(m.params[0].shape, Shape::Vector(3));
    assert_eq!(m.hyper_dim, 2);
    assert_eq!(m.data.size("N"), Some(3));
    assert_eq!(m.data.ignored, vec!["unused (data.json)".to_string()]);
}

#[test]
fn lets_carry_their_stage() {
    let m = check(LOGISTIC, LOGISTIC_DATA).unwrap();
    let (name, phi) = &m.lets[0];
    assert_eq!(name, "Phi");
    assert_eq!(phi.shape, Shape::Matrix(3, 3));
    assert_eq!(phi.stage, Stage::Hyper);
}

#[test]
fn layout_report_lists_transforms_slices_and_ignored_entries() {
    let m = check(LOGISTIC, LOGISTIC_DATA).unwrap();
    let r = layout_report(&m);
    assert!(r.contains("w  vector[3]"), "{r}");
    assert!(r.contains("1..3"), "{r}");
    assert!(r.contains("alpha"), "{r}");
    assert!(r.contains("log"), "{r}");
    assert!(r.contains("rank = 1  (default)"), "{r}");
    assert!(r.contains("unused (data.json)"), "{r}");
}

#[test]
fn dump_typed_marks_names_and_matrix_products() {
    let m = check(LOGISTIC, LOGISTIC_DATA).unwrap();
    let d = dump_typed(&m);
    assert!(d.contains("(matmul Phi:let w:param)"), "{d}");
    assert!(d.contains("inline rbf_features"), "{d}");
}

#[test]
fn command_line_overrides_are_validated_against_the_final_method() {
    let m = check(LOGISTIC, LOGISTIC_DATA).unwrap();
    let ok = infer_options(
        &m,
        &[
            ("method".into(), "mvi_eig".into()),
            ("samples".into(), "50".into()),
        ],
    )
    .unwrap();
    assert!(ok
        .entries
        .iter()
        .any(|e| e.key == "samples" && e.value == mvi::infer::OptionValue::Int(50)));
    // `rank` (from the file) does not apply to mvi_eig? It was not set; set it now.
    let err = infer_options(
        &m,
        &[("method".into(), "laplace".into()), ("bins".into(), "3".into())],
    )
    .unwrap_err();
    assert_eq!(err.code, "mvi::check::key_not_for_method");
    let err = infer_options(&m, &[("samples".into(), "many".into())]).unwrap_err();
    assert!(err.render_plain(100).contains("--set samples=many"));
}

#[test]
fn loops_unroll_with_known_indices_and_slices() {
    let src = "data {
  y: vector[T]
}
param {
  h: vector[T]
}
model {
  h[1] ~ normal(0, 1)
  for t in 2:T {
    h[t] ~ normal(h[t - 1], 1)
  }
  let mu = rep_vector(0.0, T)
  mu[2:T] += h[1:T-1]
  y ~ normal(mu, 1)
}
";
    let m = check(src, r#"{"y": [1, 2, 3, 4]}"#).unwrap();
    let loop_stmt = m.model.iter().find_map(|s| {
        if let mvi::check::TStmt::For { iterations, .. } = s {
            Some(iterations.len())
        } else {
            None
        }
    });
    assert_eq!(loop_stmt, Some(3));
}

#[test]
fn gather_by_ints_and_data_conditions_are_allowed() {
    let src = "data {
  J: int<lower=1>
  g: ints<lower=1, upper=J>[N]
  y: vector[N]
}
param {
  theta: vector[J]
}
model {
  theta ~ normal(0, 1)
  y ~ normal(theta[g], 1)
  for n in 1:N {
    if y[n] > 0 {
      target += 0.0
    }
  }
}
";
    assert!(check(src, r#"{"J": 2, "g": [1, 2, 2], "y": [0.5, -1, 2]}"#).is_ok());
    let errs = check(src, r#"{"J": 2, "g": [1, 3, 2], "y": [0.5, -1, 2]}"#).unwrap_err();
    assert_eq!(errs[0].code, "mvi::data::constraint_violated");
}

#[test]
fn every_error_is_collected_not_only_the_first() {
    let src = "param {
  w: real
}
model {
  w ~ normal(a, 1)
  w ~ normal(0, b)
}
";
    let errs = check(src, "{}").unwrap_err();
    assert_eq!(errs.len(), 2);
}

#[test]
fn shape_mismatch_labels_both_operands() {
    let src = "param {
  a: vector[2]
  b: vector[3]
}
model {
  target += sum(a + b)
}
";
    let errs = check(src, "{}").unwrap_err();
    assert_eq!(errs[0].labels.len(), 2);
    assert!(errs[0].message.contains("vector[2] and vector[3]"));
}

/// A fresh directory under the system temp dir for one test.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mvi-check-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn csv_data_binds_by_argument_and_by_csv_value_relative_to_the_model() {
    let dir = temp_dir("csv");
    std::fs::write(dir.join("X.csv"), "a,b\n1,2\n3,4\n5,6\n").unwrap();
    std::fs::write(dir.join("y.csv"), "0.5\n1.5\n2.5\n").unwrap();
    std::fs::write(
        dir.join("m.mvi"),
        "data {\n  X: matrix = csv(\"X.csv\")\n  y: vector[N]\n}\nparam {\n  w: vector[2]\n}\nmodel {\n  w ~ normal(0, 1)\n  y ~ normal(X * w, 1)\n}\n",
    )
    .unwrap();
    let y_arg = format!("y={}", dir.join("y.csv").display());
    let m = mvi::check::load_model(&dir.join("m.mvi"), &[y_arg]).unwrap();
    let Some(mvi::data::Value::Matrix(x)) = m.data.get("X") else {
        panic!("X is not a matrix")
    };
    assert_eq!((x.nrows(), x.ncols()), (3, 2));
    assert!((x[(2, 1)] - 6.0).abs() < 1e-12);
    assert_eq!(m.data.size("N"), Some(3));
    std::fs::remove_dir_all(&dir).expect("scratch directory removed");
}

#[test]
fn a_single_csv_row_binds_a_vector() {
    let dir = temp_dir("row");
    std::fs::write(dir.join("y.csv"), "1, 2, 3, 4\n").unwrap();
    std::fs::write(
        dir.join("m.mvi"),
        "data {\n  y: vector[N]\n}\nparam {\n  mu: real\n}\nmodel {\n  y ~ normal(mu, 1)\n}\n",
    )
    .unwrap();
    let m = mvi::check::load_model(
        &dir.join("m.mvi"),
        &[format!("y={}", dir.join("y.csv").display())],
    )
    .unwrap();
    assert_eq!(m.data.size("N"), Some(4));
    std::fs::remove_dir_all(&dir).expect("scratch directory removed");
}

#[test]
fn dump_typed_of_eight_schools_is_stable() {
    let m = check_example(&root().join("examples/eight_schools.mvi"));
    insta::assert_snapshot!(dump_typed(&m));
}

#[test]
fn stdlib_design_functions_check_with_concrete_shapes() {
    let src = "import \"design\"
data {
  X: matrix[N, Q]
}
let Xb = add_bias(X)
let s = row_sums(X)
let m = col_means(X)
let o = ones(N)
param {
  w: vector[Q + 1]
}
model {
  w ~ normal(0, 1)
  target += sum(Xb * w) + sum(s) + sum(m) + sum(o)
}
";
    let m = check(src, r#"{"X": [[1, 2], [3, 4], [5, 6]]}"#).unwrap();
    let shapes: Vec<Shape> = m.lets.iter().map(|(_, e)| e.shape).collect();
    assert_eq!(
        shapes,
        vec![
            Shape::Matrix(3, 3),
            Shape::Vector(3),
            Shape::Vector(2),
            Shape::Vector(3)
        ]
    );
    assert!(m.lets.iter().all(|(_, e)| e.stage == Stage::Const));
}

#[test]
fn lpdf_forms_and_truncation_cdfs_check() {
    let src = "param {
  w: vector[2]
  s: real<lower=0>
}
model {
  target += normal_lpdf(w | 0, 1) + normal_lccdf(0 | 0, s) + poisson_lpmf(3 | exp(w[1]))
  s ~ half_normal(1)
}
";
    assert!(check(src, "{}").is_ok());
}

/// Constructs of LANGUAGE.md, each in a small model that must check clean.
const CONSTRUCTS: &[(&str, &str, &str)] = &[
    (
        "row-vector product, matrix rows and slices",
        "data {\n  X: matrix[N, Q]\n  y: vector[N]\n}\nparam {\n  beta: vector[Q]\n  s: real<lower=0>\n}\nmodel {\n  beta ~ normal(0, 1)\n  s ~ exponential(1)\n  for n in 1:N {\n    y[n] ~ normal(X[n]' * beta, s)\n  }\n  target += sum(X[:, 1:2] * beta[1:2]) * 0 + sum(X[2:N, :] * beta) * 0\n}\n",
        r#"{"X": [[1, 2, 3], [4, 5, 6]], "y": [1, 2]}"#,
    ),
    (
        "autoregression with local updates",
        "data {\n  K: int<lower=1>\n  y: vector[N]\n}\nparam {\n  alpha: real\n  beta: vector[K]\n  sigma: real<lower=0>\n}\nmodel {\n  let mu = rep_vector(alpha, N)\n  for k in 1:K {\n    mu[k+1:N] += beta[k] * y[1:N-k]\n  }\n  y[K+1:N] ~ normal(mu[K+1:N], sigma)\n  alpha ~ normal(0, 1)\n  beta ~ normal(0, 1)\n  sigma ~ half_normal(1)\n}\n",
        r#"{"K": 2, "y": [1, 2, 3, 4, 5]}"#,
    ),
    (
        "comparisons and ternaries on data, accumulators",
        "data {\n  y: vector[N]\n}\nlet pos = y > 0\nparam {\n  mu: real\n}\nmodel {\n  let acc = 0\n  for n in 1:N {\n    acc = acc + (y[n] > 0 ? 1.0 : 0.5) * mu\n  }\n  target += -square(acc) + sum(pos .* y) * 0\n  mu ~ student_t(3, 0, 1)\n}\n",
        r#"{"y": [1, -2, 3]}"#,
    ),
    (
        "binomial, categorical with one logit vector, hyper matrix from data",
        "data {\n  n: ints[N]\n  trials: ints[N]\n  c: ints[N]\n  Q: int\n}\nhyper {\n  S: matrix[Q, Q] = diag_matrix(rep_vector(1.0, Q))\n}\nparam {\n  theta: real<lower=0, upper=1>\n  logits: vector[3]\n  z: vector[Q]\n}\nmodel {\n  n ~ binomial(trials, theta)\n  c ~ categorical_logit(logits)\n  logits ~ normal(0, 1)\n  z ~ multi_normal(rep_vector(0.0, Q), S)\n  theta ~ beta(2, 2)\n}\n",
        r#"{"n": [1, 2], "trials": [3, 4], "c": [1, 3], "Q": 2}"#,
    ),
    (
        "sizes from rows() and cols(), truncated prior, matrix param",
        "data {\n  X: matrix[N, Q]\n}\nparam {\n  W: matrix[cols(X), 2]\n  s: real<lower=0>\n}\nmodel {\n  W ~ normal(0, s)\n  s ~ normal(0, 1)\n  target += -normal_lccdf(0 | 0, 1)\n  target += sum(X * W) * 0\n}\n",
        r#"{"X": [[1, 2, 3]]}"#,
    ),
];

#[test]
fn language_constructs_check_clean() {
    for (what, src, data) in CONSTRUCTS {
        if let Err(ds) = check(src, data) {
            panic!(
                "{what}:\n{}",
                ds.iter().map(|d| d.render_plain(100)).collect::<String>()
            );
        }
    }
}

#[test]
fn expressions_near_the_parser_nesting_limit_check_without_overflow() {
    let chain = vec!["w"; 190].join(" + ");
    let calls = format!("{}w{}", "exp(".repeat(95), ")".repeat(95));
    let src = format!("param {{\n  w: real\n}}\nmodel {{\n  w ~ normal(0, 1)\n  target += {chain}\n  target += {calls}\n}}\n");
    // On a 2 MiB stack, the default size of a spawned thread.
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || check(&src, "{}").is_ok())
        .unwrap();
    assert!(handle.join().unwrap());
}
