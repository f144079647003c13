//! `mvi sbc` end to end: a calibrated method passes, a miscalibrated one is flagged with
//! how, runs resume to the same bytes, and the bad inputs of the issue are diagnostics.

use crate::common::mvi;

fn model(stem: &str) -> (String, String) {
    (
        format!("tests/data/sbc_models/{stem}.mvi"),
        format!("tests/data/sbc_models/{stem}.json"),
    )
}

fn sbc_json(stem: &str, extra: &[&str]) -> serde_json::Value {
    let (m, d) = model(stem);
    let mut args = vec!["sbc", m.as_str(), "--data", d.as_str(), "--json", "-q"];
    args.extend(extra);
    let out = mvi(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn param<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn laplace_on_a_gaussian_posterior_is_calibrated() {
    let v = sbc_json(
        "normal_mean",
        &["--method", "laplace", "--sims", "300", "--set", "seed=5"],
    );
    assert_eq!(v["done"], 300);
    assert_eq!(v["failed"], 0);
    for name in ["mu", "log_lik"] {
        assert_eq!(param(&v, name)["calibrated"], true, "{name}: {v}");
    }
    assert!(param(&v, "mu")["vsbc"]["p_value"].as_f64().unwrap() > 0.05, "{v}");
}

#[test]
fn laplace_on_a_skewed_poisson_posterior_is_flagged() {
    let v = sbc_json("poisson_few_counts", &["--method", "laplace", "--sims", "200"]);
    let a = param(&v, "a");
    assert_eq!(a["calibrated"], false, "{v}");
    assert!(a["p_value"].as_f64().unwrap() < 0.01, "{a}");
    assert_eq!(a["shape"], "biased high", "{a}");
    // VSBC sees the asymmetry of the Gaussian at the mode too
    assert!(a["vsbc"]["p_value"].as_f64().unwrap() < 0.01, "{a}");
}

#[test]
fn a_resumed_run_gives_the_bytes_of_a_run_in_one_go() {
    let (m, d) = model("normal_mean");
    let dir = std::env::temp_dir().join(format!("mvi-sbc-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (a, b) = (dir.join("a"), dir.join("b"));
    let run = |out: &std::path::Path, sims: &str| {
        let o = mvi(&[
            "sbc",
            &m,
            "--data",
            &d,
            "--method",
            "laplace",
            "--sims",
            sims,
            "-q",
            "--output-dir",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&a, "12");
    run(&a, "30");
    run(&b, "30");
    for f in ["ranks.csv", "simulations.json", "sbc.json", "ecdf_mu.svg"] {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(x == y, "{f} differs");
    }
    let csv = std::fs::read_to_string(a.join("ranks.csv")).unwrap();
    assert_eq!(csv.lines().count(), 31);
    assert!(csv.starts_with("sim,mu,log_lik\n"), "{csv}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each bad input is a diagnostic with a help line and exit code 2.
#[test]
fn bad_inputs_are_diagnostics() {
    let dir = std::env::temp_dir().join(format!("mvi-sbc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flat = dir.join("flat.mvi");
    std::fs::write(
        &flat,
        "data {\n  N: int\n  y: vector[N]\n}\nparam {\n  mu: real\n  sigma: real<lower=0>\n}\nmodel {\n  mu ~ normal(0, 1)\n  y ~ normal(mu, sigma)\n}\n",
    )
    .unwrap();
    let no_x = dir.join("no_x.json");
    std::fs::write(&no_x, r#"{"N": 2, "y": [0, 1]}"#).unwrap();
    let (m, d) = model("normal_mean");
    let (pm, _) = model("poisson_few_counts");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "sbc".into(),
                flat.display().to_string(),
                "--data".into(),
                d.clone(),
            ],
            "`sigma` is not the",
        ),
        (
            vec![
                "sbc".into(),
                m.clone(),
                "--data".into(),
                d.clone(),
                "--sims".into(),
                "0".into(),
            ],
            "--sims 0",
        ),
        (
            vec!["sbc".into(), pm, "--data".into(), no_x.display().to_string()],
            "`x`",
        ),
        (
            vec![
                "sbc".into(),
                m,
                "--data".into(),
                d,
                "--method".into(),
                "nuts".into(),
                "--set".into(),
                "init=nuts".into(),
            ],
            "`init` takes one of",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = mvi(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("help"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
