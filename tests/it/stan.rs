//! Stan programs as they are (`src/stan/`): posteriordb's programs translated to `.mvi` have
//! the log density of their hand-written twins, `nuts` on a translated program matches the
//! reference draws, and the CLI translates, runs and reports problems at their place in
//! the `.stan` file.

use std::path::{Path, PathBuf};

use mvi::density::{value_grad, LogDensity};
use mvi::graph::LogJoint;
use nalgebra::DVector;
use rand::{Rng, SeedableRng};

use crate::common::{mvi, root};

/// Two exact evaluations of the same density in different graph shapes: rounding only.
const SAME_DENSITY_TOL: f64 = 1e-8;

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mvi-stan-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a writable temporary directory");
    d
}

fn stan_programs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("tests/stan"))
        .expect("tests/stan exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    out.sort();
    out
}

fn lower(model: &Path, data: &Path) -> LogJoint {
    let typed = mvi::check::load_model(model, &[data.display().to_string()]).unwrap_or_else(|ds| {
        panic!(
            "{} does not check:\n{}",
            model.display(),
            ds.iter().map(|d| d.render_plain(100)).collect::<String>()
        )
    });
    mvi::graph::lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

/// log p̃ at w for both, and the difference of their gradients' largest entry.
fn compare_at(stan: &LogJoint, twin: &LogJoint, w: &DVector<f64>) -> (f64, f64, f64) {
    let (a, ga) = value_grad(stan, &stan.theta0, w);
    let (b, gb) = value_grad(twin, &twin.theta0, w);
    (a, b, (ga - gb).amax())
}

#[test]
fn translated_posteriordb_programs_have_their_twins_log_density() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(44);
    let programs = stan_programs();
    assert!(programs.len() >= 30, "tests/stan holds the programs");
    for program in programs {
        let name = program
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        let folder = root().join("benches/posteriordb").join(name);
        let data = folder.join("data.json");
        let stan = lower(&program, &data);
        let twin = lower(&folder.join("model.mvi"), &data);
        assert_eq!(stan.dim(), twin.dim(), "{name}: dimensions");
        assert_eq!(
            stan.param_blocks(),
            twin.param_blocks(),
            "{name}: parameter layout"
        );
        let w0 = DVector::zeros(stan.dim());
        let (a0, b0, _) = compare_at(&stan, &twin, &w0);
        for _ in 0..3 {
            let w = DVector::from_fn(stan.dim(), |_, _| rng.random_range(-1.0..1.0));
            let (a, b, grad_diff) = compare_at(&stan, &twin, &w);
            let shift = (a - a0) - (b - b0);
            assert!(
                shift.abs() <= SAME_DENSITY_TOL * (1.0 + a.abs()),
                "{name}: log p̃ differs by more than a constant: {a} vs {b} (at 0: {a0} vs {b0})"
            );
            assert!(
                grad_diff <= SAME_DENSITY_TOL * (1.0 + a.abs()),
                "{name}: gradients differ by {grad_diff}"
            );
        }
    }
}

fn column(csv: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    lines
        .map(|l| {
            l.split(',')
                .nth(at)
                .expect("a full row")
                .parse()
                .expect("a number")
        })
        .collect()
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

/// `mvi run model.stan --method nuts` matches posteriordb's reference draws: every marginal
/// mean within 0.1 reference sd and every sd within 10 % (on Stan's unconstrained scale,
/// where the reference summary is given).
#[test]
fn nuts_on_a_translated_program_matches_the_reference_draws() {
    let name = "kidiq-kidscore_momiq";
    let dir = scratch("nuts");
    let out = dir.display().to_string();
    let o = mvi(&[
        "run",
        &format!("tests/stan/{name}.stan"),
        "--data",
        &format!("benches/posteriordb/{name}/data.json"),
        "--method",
        "nuts",
        "--set",
        "seed=3",
        "--quiet",
        "--output-dir",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let draws = std::fs::read_to_string(dir.join("draws.csv")).unwrap();
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("benches/posteriordb/{name}/reference.json"))).unwrap(),
    )
    .unwrap();
    let columns = [("beta.1", false), ("beta.2", false), ("sigma", true)];
    for (i, (col, log)) in columns.iter().enumerate() {
        let mut x = column(&draws, col);
        if *log {
            x.iter_mut().for_each(|v| *v = v.ln());
        }
        let (m, s) = mean_sd(&x);
        let rm = reference["mean"][i].as_f64().unwrap();
        let rs = reference["sd"][i].as_f64().unwrap();
        assert!(
            (m - rm).abs() <= 0.1 * rs,
            "{col}: mean {m} vs reference {rm} (sd {rs})"
        );
        assert!((s - rs).abs() <= 0.1 * rs, "{col}: sd {s} vs reference {rs}");
    }
}

#[test]
fn translate_prints_mvi_text_that_checks() {
    let o = mvi(&[
        "translate",
        "tests/stan/eight_schools-eight_schools_noncentered.stan",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("let theta = theta_trans * tau + mu"), "{text}");
    let dir = scratch("translate");
    let path = dir.join("eight.mvi");
    std::fs::write(&path, &text).unwrap();
    let data = root().join("benches/posteriordb/eight_schools-eight_schools_noncentered/data.json");
    lower(&path, &data);
    let out = dir.join("out.mvi");
    let o = mvi(&[
        "translate",
        "tests/stan/eight_schools-eight_schools_noncentered.stan",
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}

fn stan_file(dir: &Path, text: &str) -> String {
    let path = dir.join("model.stan");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_checker_error_points_into_the_stan_file() {
    let dir = scratch("check_error");
    let model = stan_file(
        &dir,
        "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  target += frobnicate(mu);\n}\n",
    );
    let o = mvi(&["check", &model]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown function `frobnicate`"), "{err}");
    assert!(err.contains("model.stan:6:"), "{err}");
    assert!(err.contains("target += frobnicate(mu);"), "{err}");
    assert!(err.contains("mvi translate"), "{err}");
}

#[test]
fn syntax_errors_and_unsupported_constructs_exit_2_with_their_place() {
    let dir = scratch("syntax");
    let model = stan_file(
        &dir,
        "parameters {\n  real mu\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
    );
    let o = mvi(&["run", &model]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("syntax error at line 3, column 1: expected"),
        "{err}"
    );
    let model = stan_file(
        &dir,
        "parameters {\n  real mu;\n}\nmodel {\n  real s = 0;\n  while (s < 3) s += 1;\n  mu ~ normal(s, 1);\n}\n",
    );
    let o = mvi(&["check", &model]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`while` loops are not supported"), "{err}");
    assert!(err.contains("model.stan:6:3"), "{err}");
}

/// Every `tests/bad/stan_*.stan` holds one problem (its name says which); the snapshot is
/// the first diagnostic, rendered without colour at width 100, pointing into the `.stan` file.
#[test]
fn each_bad_stan_file_gives_its_diagnostic() {
    insta::glob!("../bad", "stan_*.stan", |path| {
        let src = std::fs::read_to_string(path).expect("test file is readable");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        let data = mvi::data::DataSet::default();
        let diags = match mvi::check::check_source(&src, name, root(), &data) {
            Ok(_) => panic!("{name} checked, but it should hold a problem"),
            Err(ds) => ds,
        };
        let d = &diags[0];
        assert_eq!(
            d.source_code.name(),
            name,
            "{name}: the diagnostic points into the .stan file"
        );
        assert_eq!(d.source_code.inner(), &src, "{name}: with the .stan text");
        assert!(!d.labels.is_empty(), "{name}: the diagnostic has no span");
        assert!(d.help.is_some(), "{name}: the diagnostic has no help line");
        insta::assert_snapshot!(d.render_plain(100));
    });
}
