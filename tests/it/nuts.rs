//! `nuts` and `compare --reference` through the real binary on the conjugate example
//! (`examples/linear_regression.mvi`, whose exact posterior is in
//! `examples/data/linear_regression_exact.json`): draws.csv in CmdStan's NUTS layout with
//! R̂ and ESS in fit.json, evaluation counts, the reference table from a draws file and from
//! a NUTS run, and bad input (missing, malformed or mismatched reference files, `chains = 0`,
//! `draws = 0`) exiting 2 with a diagnostic. Runs are short (2 chains, few draws).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{mvi, root};
use serde_json::Value;

const LINREG: &str = "examples/linear_regression.mvi";
const LINREG_DATA: &str = "examples/data/linear_regression.json";
/// A short NUTS run: enough for the checks below, cheap in the default test suite.
const SHORT: [&str; 6] = ["--set", "chains=2", "--set", "warmup=200", "--set", "draws=300"];

/// `mvi compare MODEL --data DATA --methods METHODS --reference REFERENCE -q`, then `extra`.
fn compare(model: &str, data: &str, methods: &str, reference: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "compare",
        model,
        "--data",
        data,
        "--methods",
        methods,
        "--reference",
        reference,
        "-q",
    ];
    args.extend(extra);
    mvi(&args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_ok(o: &Output, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}:\n{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn assert_user_error(o: &Output, what: &str, message: &str) {
    let err = text(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: exit {:?}\n{err}",
        o.status.code()
    );
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
    assert!(err.contains(message), "{what}: no `{message}` in\n{err}");
    assert!(err.contains("help"), "{what}: no help line:\n{err}");
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mvi-nuts-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The exact posterior mean and sd of the conjugate example.
fn exact() -> (Vec<f64>, Vec<f64>) {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("examples/data/linear_regression_exact.json")).unwrap(),
    )
    .unwrap();
    let nums = |k: &str| {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    (nums("post_mean"), nums("post_sd"))
}

#[test]
fn nuts_writes_cmdstan_columns_and_matches_the_exact_posterior() {
    let dir = scratch("run");
    let out = dir.join("out");
    let mut args = vec!["run", LINREG, "--data", LINREG_DATA, "--method", "nuts", "-q"];
    args.extend(SHORT);
    args.extend(["--output-dir", out.to_str().unwrap()]);
    let o = mvi(&args);
    assert_ok(&o, "nuts run");
    let summary = text(&o.stdout);
    assert!(
        summary.contains("ESS_bulk") && summary.contains("evaluations:"),
        "{summary}"
    );
    let csv = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header = rows.next().unwrap();
    assert!(
        header.starts_with("lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,w.1"),
        "{header}"
    );
    let rows: Vec<Vec<f64>> = rows
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 600, "2 chains × 300 draws");
    assert!(rows
        .iter()
        .all(|r| r[3] >= 1.0 && r[4] >= 1.0 && (r[5] == 0.0 || r[5] == 1.0)));
    let fit: Value = serde_json::from_str(&std::fs::read_to_string(out.join("fit.json")).unwrap()).unwrap();
    let mcmc = &fit["mcmc"];
    assert_eq!(mcmc["chains"], 2);
    let (mean, sd) = exact();
    for (d, (m, s)) in mean.iter().zip(&sd).enumerate() {
        let name = format!("w.{}", d + 1);
        let c = &mcmc["convergence"][&name];
        let ess = c["ess_bulk"].as_f64().unwrap();
        assert!(c["rhat"].as_f64().unwrap() < 1.05 && ess > 100.0, "{c}");
        let got = fit["parameters"][&name]["mean"].as_f64().unwrap();
        assert!((got - m).abs() < 5.0 * s / ess.sqrt(), "{name}: {got} vs {m}");
    }
    assert!(fit["evals"]["gradient"].as_u64().unwrap() > 600);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn nuts_is_deterministic_for_a_seed() {
    let run = |seed: &str| {
        let mut args = vec![
            "run",
            LINREG,
            "--data",
            LINREG_DATA,
            "--method",
            "nuts",
            "-q",
            "--json",
        ];
        args.extend(SHORT);
        args.extend(["--set", seed]);
        let o = mvi(&args);
        assert_ok(&o, "nuts --json");
        let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
        (v["parameters"].clone(), v["evals"].clone())
    };
    assert_eq!(run("seed=3"), run("seed=3"));
    assert_ne!(run("seed=3").0, run("seed=4").0);
}

/// A reference file of the exact posterior's draws (independent normals with its means and
/// sds), with Stan's column names and a `lp__` column to be ignored.
fn reference_file(dir: &Path) -> PathBuf {
    let (mean, sd) = exact();
    let mut s = String::from("# exact posterior\nlp__,w[1],w[2],w[3]\n");
    // deterministic normal scores from a fixed grid of quantiles, shuffled by a stride
    let n = 1000;
    for i in 0..n {
        let mut row = vec!["0".to_string()];
        for (d, (m, sdv)) in mean.iter().zip(&sd).enumerate() {
            let k = (i * (7 + 4 * d) + d) % n;
            let z = mvi::posterior::mcmc::probit((k as f64 + 0.5) / n as f64);
            row.push(format!("{}", m + sdv * z));
        }
        s.push_str(&row.join(","));
        s.push('\n');
    }
    let path = dir.join("ref.csv");
    std::fs::write(&path, s).unwrap();
    path
}

#[test]
fn compare_against_a_reference_file_and_a_nuts_run() {
    let dir = scratch("compare");
    let file = reference_file(&dir);
    let o = compare(
        LINREG,
        LINREG_DATA,
        "laplace,vi_diag",
        file.to_str().unwrap(),
        &["--json"],
    );
    assert_ok(&o, "compare --reference file");
    let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    assert_eq!(v["reference"]["draws"], 1000);
    for m in v["methods"].as_array().unwrap() {
        let r = &m["reference"];
        // laplace is exact here: only the sampling noise of 100 draws remains
        assert!(r["w1"].as_f64().unwrap() < 0.1, "{m}");
        assert!(r["mean_err"].as_f64().unwrap() < 0.1, "{m}");
        assert!((r["sd_ratio"].as_f64().unwrap() - 1.0).abs() < 0.1, "{m}");
        assert!(m["evals"]["gradient"].as_u64().is_some(), "{m}");
    }
    let o = compare(LINREG, LINREG_DATA, "laplace", "nuts", &SHORT);
    assert_ok(&o, "compare --reference nuts");
    let out = text(&o.stdout);
    assert!(
        out.contains("reference: nuts (600 draws") && out.contains("W1 to ref"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A simplex, bounds on an earlier parameter and a plain bound: `compare --reference`
/// takes each back to its coordinates through its own transform (it panicked on a
/// constrained type: the names of a simplex's 3 entries against its 2 coordinates).
const CONSTRAINED: &str = "data { y: ints[N] }
param {
  p: simplex[3]
  a: real<lower=0, upper=1>
  b: real<lower=0, upper=1 - a>
  s: real<lower=0>
}
model {
  y ~ categorical(p)
  a ~ beta(2, 5)
  b ~ beta(2, 2)
  s ~ lognormal(a + b, 0.5)
}
";

#[test]
fn compare_against_references_of_constrained_types_and_dependent_bounds() {
    let dir = scratch("constrained");
    let model = dir.join("m.mvi");
    let data = dir.join("d.json");
    std::fs::write(&model, CONSTRAINED).unwrap();
    std::fs::write(&data, r#"{"y": [1, 2, 2, 3, 3, 3, 1, 3, 2, 3]}"#).unwrap();
    let (model, data) = (model.to_str().unwrap(), data.to_str().unwrap());
    let json_short = [&["--json"][..], &SHORT[..]].concat();
    let o = compare(model, data, "laplace,mvi_lr", "nuts", &json_short);
    assert_ok(&o, "compare --reference nuts on a simplex and dependent bounds");
    let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    // the same kind of NUTS run written to draws.csv (CmdStan's layout) and read back
    let out = dir.join("nuts");
    let mut run = vec![
        "run",
        model,
        "--data",
        data,
        "--method",
        "nuts",
        "--output-dir",
        out.to_str().unwrap(),
        "-q",
    ];
    run.extend(SHORT);
    assert_ok(&mvi(&run), "the nuts run");
    let csv = out.join("draws.csv");
    let o = compare(model, data, "laplace,mvi_lr", csv.to_str().unwrap(), &["--json"]);
    assert_ok(&o, "compare --reference draws.csv");
    let from_file: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    for v in [&v, &from_file] {
        for m in v["methods"].as_array().unwrap() {
            let r = &m["reference"];
            assert!(r["w1"].as_f64().unwrap().is_finite(), "{m}");
            // a Gaussian on the unconstrained scale of this small posterior: close, not exact
            assert!(r["mean_err"].as_f64().unwrap() < 0.5, "{m}");
            assert!((0.6..1.6).contains(&r["sd_ratio"].as_f64().unwrap()), "{m}");
        }
    }
    assert_eq!(v["reference"]["draws"], 600);
    assert_eq!(from_file["reference"]["draws"], 600);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_references_and_options_exit_2_with_a_diagnostic() {
    let dir = scratch("bad");
    let against = |reference: &str| compare(LINREG, LINREG_DATA, "laplace", reference, &[]);
    let missing = dir.join("missing.csv");
    assert_user_error(&against(missing.to_str().unwrap()), "missing file", "cannot read");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "w[1],w[2],w[3]\n1,2,x\n").unwrap();
    assert_user_error(
        &against(bad.to_str().unwrap()),
        "malformed file",
        "is not a number",
    );
    std::fs::write(&bad, "w[1],w[2],w[3]\n1,2\n").unwrap();
    assert_user_error(
        &against(bad.to_str().unwrap()),
        "short row",
        "2 values for 3 columns",
    );
    std::fs::write(&bad, "mu,tau\n1,2\n").unwrap();
    assert_user_error(
        &against(bad.to_str().unwrap()),
        "other columns",
        "no column for `w.1`",
    );
    for set in ["chains=0", "draws=0", "target_accept=1.5", "mass_matrix=dense"] {
        let o = mvi(&[
            "run",
            LINREG,
            "--data",
            LINREG_DATA,
            "--method",
            "nuts",
            "--set",
            set,
        ]);
        assert_user_error(&o, set, set.split('=').next().unwrap());
    }
    let _ = std::fs::remove_dir_all(dir);
}
