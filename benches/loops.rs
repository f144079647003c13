//! Issue 18's benchmark: loops and recursions, with the ratios printed from one run.
//!
//! 1. single-point value + gradient (the path L-BFGS and NUTS use, `value_grad_into`)
//!    against hand-written Rust log densities and gradients of the same models: eight
//!    schools (examples/eight_schools.mvi), stochastic volatility (the example at T = 100 and 1000)
//!    and ARMA(1,1) (benches/loops/arma11.mvi, T = 200); target ≤ 3×. The ratio is that of
//!    the tape's machine code (what a sampler's calls run once a graph has been evaluated
//!    `graph::point::jit_auto_after()` times); the interpreter, which runs the first calls
//!    and an optimiser's, and the batched path at one column (what the call cost before
//!    `graph::point`) are timed beside. With the
//!    environment variable `LOOPS_PROFILE_POINT=<name prefix>` only that model's point path
//!    runs, for 5 s (for `perf record`);
//! 2. whole `mvi run` processes (release binary, wall time and peak RSS from
//!    `/usr/bin/time`): ARMA(1,1) with `vi_diag` at T = 200, 1600 and 12 800 (targets:
//!    time(1600)/time(200) ≤ 10, peak memory at 1600 ≤ 500 MB), and `laplace`, `vi_diag`
//!    and `mvi_lr` on GARCH(1,1) (T = 1000), the HMM forward algorithm (N = 100 and 1000)
//!    and the loop-written mixture (N = 1000).
//!
//! The NumPyro side (the same models with `jax.lax.scan`) is `benches/loops_vs_numpyro.py`.
//!
//! Run: `cargo bench --bench loops` (builds the release binary first); `cargo bench --bench
//! loops -- --single-points` runs part 1 only. Data are simulated
//! here (seeded) into target/bench-loops/.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use mvi::density::{value_grad, LogDensity};
use mvi::graph::{lower_model, LogJoint};
use nalgebra::DVector;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn out_dir() -> PathBuf {
    let d = root().join("target/bench-loops");
    std::fs::create_dir_all(&d).expect("target/ is writable");
    d
}

fn write_json(name: &str, v: serde_json::Value) -> PathBuf {
    let p = out_dir().join(name);
    std::fs::write(&p, v.to_string()).expect("target/ is writable");
    p
}

/// ARMA(1,1): mu = 0.5, phi = 0.6, theta = 0.3, sigma = 1.
fn arma_data(t: usize) -> PathBuf {
    let mut rng = StdRng::seed_from_u64(18);
    let n = Normal::new(0.0, 1.0).expect("valid");
    let (mut y0, mut e0) = (0.0, 0.0);
    let y: Vec<f64> = (0..t)
        .map(|_| {
            let e = n.sample(&mut rng);
            let v = 0.5 + 0.6 * y0 + 0.3 * e0 + e;
            (y0, e0) = (v, e);
            v
        })
        .collect();
    write_json(&format!("arma_{t}.json"), serde_json::json!({"T": t, "y": y}))
}

/// GARCH(1,1): mu = 0.1, alpha0 = 0.2, alpha1 = 0.3, beta1 = 0.5.
fn garch_data(t: usize) -> PathBuf {
    let mut rng = StdRng::seed_from_u64(19);
    let n = Normal::new(0.0, 1.0).expect("valid");
    let sigma1 = 1.0;
    let (mut s, mut y) = (sigma1, Vec::with_capacity(t));
    for i in 0..t {
        if i > 0 {
            let prev: f64 = y[i - 1] - 0.1;
            s = (0.2 + 0.3 * prev * prev + 0.5 * s * s).sqrt();
        }
        y.push(0.1 + s * n.sample(&mut rng));
    }
    write_json(
        &format!("garch_{t}.json"),
        serde_json::json!({"T": t, "y": y, "sigma1": sigma1}),
    )
}

/// Two-state HMM: stay probabilities 0.9 and 0.8, means 3 and 10, unit noise.
fn hmm_data(n_obs: usize) -> PathBuf {
    let mut rng = StdRng::seed_from_u64(20);
    let n = Normal::new(0.0, 1.0).expect("valid");
    let u = rand_distr::Uniform::new(0.0, 1.0).expect("valid");
    let (mut z, mut y) = (0usize, Vec::with_capacity(n_obs));
    for _ in 0..n_obs {
        let stay = if z == 0 { 0.9 } else { 0.8 };
        if u.sample(&mut rng) > stay {
            z = 1 - z;
        }
        y.push([3.0, 10.0][z] + n.sample(&mut rng));
    }
    write_json(
        &format!("hmm_{n_obs}.json"),
        serde_json::json!({"N": n_obs, "y": y}),
    )
}

/// Two-component mixture: lambda = 0.3, mu = (−2, 2), sigma = (1, 0.7).
fn mixture_data(n_obs: usize) -> PathBuf {
    let mut rng = StdRng::seed_from_u64(21);
    let n = Normal::new(0.0, 1.0).expect("valid");
    let u = rand_distr::Uniform::new(0.0, 1.0).expect("valid");
    let y: Vec<f64> = (0..n_obs)
        .map(|_| {
            if u.sample(&mut rng) < 0.3 {
                -2.0 + n.sample(&mut rng)
            } else {
                2.0 + 0.7 * n.sample(&mut rng)
            }
        })
        .collect();
    write_json(
        &format!("mixture_{n_obs}.json"),
        serde_json::json!({"N": n_obs, "y": y}),
    )
}

fn load(model: &Path, data: &Path) -> LogJoint {
    let typed = mvi::check::load_model(model, &[data.display().to_string()])
        .unwrap_or_else(|ds| panic!("{}", ds[0].render_plain(100)));
    lower_model(&typed).unwrap_or_else(|d| panic!("{}", d.render_plain(100)))
}

/// Seconds per call of `f`: the minimum over 200 rounds of about 0.5 ms each (short, so
/// that on a loaded machine many run without being descheduled), but at most `reps` calls
/// per round.
fn per_call(reps: usize, mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    for _ in 0..10 {
        f();
    }
    let one = t0.elapsed().as_secs_f64() / 10.0;
    let n = ((5e-4 / one.max(1e-9)) as usize).clamp(1, reps.max(1));
    (0..200)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..n {
                f();
            }
            t0.elapsed().as_secs_f64() / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

// ------------------------------------------------------------------ hand-written densities

/// Eight schools, non-centred: w = (theta_trans[8], mu, log tau). Returns log p̃ up to a
/// constant and writes ∇ into `g`.
fn eight_schools(w: &[f64], y: &[f64], sigma: &[f64], g: &mut [f64]) -> f64 {
    let (mu, u) = (w[8], w[9]);
    let tau = u.exp();
    let mut lp = -0.5 * mu * mu / 25.0 - (1.0 + tau * tau / 25.0).ln() + u;
    let (mut dmu, mut dtau) = (-mu / 25.0, -2.0 * tau / 25.0 / (1.0 + tau * tau / 25.0));
    for j in 0..8 {
        let tt = w[j];
        let r = (y[j] - mu - tau * tt) / sigma[j];
        lp += -0.5 * tt * tt - 0.5 * r * r;
        let rs = r / sigma[j];
        g[j] = -tt + tau * rs;
        dmu += rs;
        dtau += rs * tt;
    }
    g[8] = dmu;
    g[9] = dtau * tau + 1.0;
    lp
}

/// Stochastic volatility: w = (mu, logit((phi + 1)/2), log sigma, h[T]).
fn stochastic_volatility(w: &[f64], y: &[f64], g: &mut [f64]) -> f64 {
    let t_len = y.len();
    let (mu, up, us) = (w[0], w[1], w[2]);
    let s = 1.0 / (1.0 + (-up).exp());
    let phi = 2.0 * s - 1.0;
    let sigma = us.exp();
    let h = &w[3..];
    // priors and Jacobians: mu ~ N(0, 10), s ~ Beta(20, 1.5) (+ log 2 s (1 − s) − log 2),
    // sigma ~ half-N(1) (+ u)
    let mut lp = -0.5 * mu * mu / 100.0 + 19.0 * s.ln() + 0.5 * (1.0 - s).ln();
    lp += s.ln() + (1.0 - s).ln() - 0.5 * sigma * sigma + us;
    let mut dmu = -mu / 100.0;
    let mut ds = 19.0 / s - 0.5 / (1.0 - s) + 1.0 / s - 1.0 / (1.0 - s);
    let mut dsigma = -sigma;
    let mut dphi = 0.0;
    // h[1] ~ N(mu, sigma / sqrt(1 − phi²))
    let v1 = sigma * sigma / (1.0 - phi * phi);
    let z1 = h[0] - mu;
    lp += -0.5 * z1 * z1 / v1 - 0.5 * v1.ln();
    g[3] = -z1 / v1;
    dmu += z1 / v1;
    // d/dv1 of (−½ z²/v − ½ log v) = ½ z²/v² − ½/v; v1 = σ²/(1 − φ²)
    let dv1 = 0.5 * z1 * z1 / (v1 * v1) - 0.5 / v1;
    dsigma += dv1 * 2.0 * sigma / (1.0 - phi * phi);
    dphi += dv1 * sigma * sigma * 2.0 * phi / ((1.0 - phi * phi) * (1.0 - phi * phi));
    let inv_s2 = 1.0 / (sigma * sigma);
    let mut ss = 0.0;
    for t in 1..t_len {
        let hp = h[t - 1] - mu;
        let r = h[t] - mu - phi * hp;
        ss += r * r;
        let dr = -r * inv_s2;
        g[3 + t] = dr;
        g[3 + t - 1] -= dr * phi;
        dmu -= dr * (1.0 - phi);
        dphi -= dr * hp;
    }
    lp += -0.5 * ss * inv_s2 - (t_len - 1) as f64 * us;
    dsigma += ss / (sigma * sigma * sigma) - (t_len - 1) as f64 / sigma;
    for t in 0..t_len {
        let e = (-h[t]).exp();
        lp += -0.5 * y[t] * y[t] * e - 0.5 * h[t];
        g[3 + t] += 0.5 * y[t] * y[t] * e - 0.5;
    }
    ds += dphi * 2.0;
    g[0] = dmu;
    g[1] = ds * s * (1.0 - s);
    g[2] = dsigma * sigma + 1.0;
    lp
}

/// ARMA(1,1): w = (mu, phi, theta, log sigma); `err` is scratch of length T.
fn arma11(w: &[f64], y: &[f64], err: &mut [f64], g: &mut [f64]) -> f64 {
    let (mu, phi, theta, us) = (w[0], w[1], w[2], w[3]);
    let sigma = us.exp();
    let t_len = y.len();
    err[0] = y[0] - (mu + phi * mu);
    for t in 1..t_len {
        err[t] = y[t] - (mu + phi * y[t - 1] + theta * err[t - 1]);
    }
    let ss: f64 = err.iter().map(|e| e * e).sum();
    let q = 1.0 + sigma * sigma / 25.0;
    let lp = -0.5 * mu * mu / 100.0 - 0.125 * (phi * phi + theta * theta) - q.ln() + us
        - 0.5 * ss / (sigma * sigma)
        - t_len as f64 * us;
    // reverse sweep: ebar_t = −err_t/σ² − theta · ebar_{t+1}
    let (mut dmu, mut dphi, mut dtheta) = (-mu / 100.0, -0.25 * phi, -0.25 * theta);
    let inv_s2 = 1.0 / (sigma * sigma);
    let mut ebar_next = 0.0;
    for t in (1..t_len).rev() {
        let ebar = -err[t] * inv_s2 - theta * ebar_next;
        dmu -= ebar;
        dphi -= ebar * y[t - 1];
        dtheta -= ebar * err[t - 1];
        ebar_next = ebar;
    }
    let ebar1 = -err[0] * inv_s2 - theta * ebar_next;
    dmu -= ebar1 * (1.0 + phi);
    dphi -= ebar1 * mu;
    g[0] = dmu;
    g[1] = dphi;
    g[2] = dtheta;
    g[3] = (ss / (sigma * sigma * sigma) - t_len as f64 / sigma - 2.0 * sigma / 25.0 / q) * sigma + 1.0;
    lp
}

fn vec_of(v: &serde_json::Value, key: &str) -> Vec<f64> {
    v[key]
        .as_array()
        .expect("a numeric array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// One single-point comparison: checks the hand-written gradient against mvi's at `w`
/// (and that the values differ by a constant, i.e. the same density), then times both.
fn single_point(
    name: &str,
    lj: &LogJoint,
    w: &DVector<f64>,
    hand: &mut dyn FnMut(&[f64], &mut [f64]) -> f64,
) {
    let theta = lj.theta_init();
    let (v_mvi, g_mvi) = value_grad(lj, &theta, w);
    let mut g = vec![0.0; w.len()];
    let v_hand = hand(w.as_slice(), &mut g);
    let w2 = w.map(|x| x * 0.9 + 0.01);
    let (v_mvi2, _) = value_grad(lj, &theta, &w2);
    let v_hand2 = hand(w2.as_slice(), &mut vec![0.0; w.len()]);
    let gerr = g
        .iter()
        .zip(g_mvi.iter())
        .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
        .fold(0.0, f64::max);
    let const_drift = ((v_mvi - v_hand) - (v_mvi2 - v_hand2)).abs();
    assert!(
        gerr < 1e-8 && const_drift < 1e-7,
        "{name}: hand-written density differs (grad {gerr:.1e}, value {const_drift:.1e})"
    );
    if let Ok(only) = std::env::var("LOOPS_PROFILE_POINT") {
        // for a profiler: only the point path of the named model, for a few seconds
        if name.starts_with(only.as_str()) {
            let t0 = Instant::now();
            while t0.elapsed().as_secs_f64() < 5.0 {
                black_box(value_grad(lj, &theta, black_box(w)));
            }
        }
        return;
    }
    let reps = (200_000 / w.len()).max(20);
    // as NUTS calls it: the gradient into the caller's buffer, by the tape's machine code
    // (what a sampler's calls run after the first thousand) and by the interpreter
    let mut grad = vec![0.0; w.len()];
    let point = lj
        .point
        .get(&lj.graph)
        .expect("the single-point path compiles this graph");
    let compiled = point
        .value_grad_compiled(&lj.graph, theta.as_slice(), w.as_slice(), &mut grad)
        .is_some();
    let t_mvi = per_call(reps, || {
        black_box(point.value_grad_compiled(&lj.graph, theta.as_slice(), black_box(w.as_slice()), &mut grad));
    });
    mvi::graph::point::set_jit_policy(mvi::graph::point::JitPolicy::Never);
    let t_interp = per_call(reps, || {
        black_box(lj.value_grad_into(&theta, black_box(w.as_slice()), &mut grad));
    });
    mvi::graph::point::set_jit_policy(mvi::graph::point::JitPolicy::Auto);
    let t_hand = per_call(reps, || {
        black_box(hand(black_box(w.as_slice()), &mut g));
    });
    // the batched path at one column: what value_grad ran before the compiled point path
    let w1 = nalgebra::DMatrix::from_column_slice(w.len(), 1, w.as_slice());
    let t_batch = per_call(reps, || {
        black_box(lj.eval(&theta, black_box(&w1), mvi::density::Want::GRAD_W));
    });
    assert!(compiled, "{name}: the tape does not compile to machine code");
    println!(
        "{name:<28} D = {:>4}  mvi {:>9.2} µs   hand-written {:>8.2} µs   ratio {:>6.1}×  (target ≤ 3×)   interpreted {:>9.2} µs ({:.1}×)   batch of one {:>9.2} µs",
        w.len(),
        t_mvi * 1e6,
        t_hand * 1e6,
        t_mvi / t_hand,
        t_interp * 1e6,
        t_interp / t_hand,
        t_batch * 1e6
    );
}

fn single_points() {
    println!("== single-point value + gradient (LogDensity::value_grad_into) vs hand-written Rust");
    let es = root().join("examples/data/eight_schools.json");
    let lj = load(&root().join("examples/eight_schools.mvi"), &es);
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&es).unwrap()).unwrap();
    let (y, sigma) = (vec_of(&d, "y"), vec_of(&d, "sigma"));
    let w = DVector::from_fn(10, |i, _| ((i * 37 % 11) as f64 / 11.0 - 0.5) * 1.5);
    single_point("eight schools", &lj, &w, &mut |w, g| {
        eight_schools(w, &y, &sigma, g)
    });

    // the example's returns (T = 1000), and their first 100 as a short series
    let sv = root().join("examples/data/stochastic_volatility.json");
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sv).unwrap()).unwrap();
    let y_all = vec_of(&d, "y");
    let short = write_json("sv_100.json", serde_json::json!({"T": 100, "y": &y_all[..100]}));
    for (data, y) in [(short, y_all[..100].to_vec()), (sv, y_all.clone())] {
        let lj = load(&root().join("examples/stochastic_volatility.mvi"), &data);
        let w = DVector::from_fn(lj.dim(), |i, _| {
            if i < 3 {
                [-1.0, 2.5, -1.2][i]
            } else {
                -1.0 + 0.3 * ((i as f64) * 0.1).sin()
            }
        });
        single_point(
            &format!("stochastic volatility T={}", y.len()),
            &lj,
            &w,
            &mut |w, g| stochastic_volatility(w, &y, g),
        );
    }

    let ad = arma_data(200);
    let lj = load(&root().join("benches/loops/arma11.mvi"), &ad);
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ad).unwrap()).unwrap();
    let y = vec_of(&d, "y");
    let mut err = vec![0.0; y.len()];
    let w = DVector::from_vec(vec![0.4, 0.55, 0.25, 0.05]);
    single_point("ARMA(1,1) T=200", &lj, &w, &mut |w, g| arma11(w, &y, &mut err, g));
}

/// One `mvi run` process: (wall s, peak RSS MB, fresh ELBO).
fn run_mvi(model: &Path, data: &Path, method: &str) -> (f64, f64, f64) {
    let bin = root().join("target/release/mvi");
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%e %M"])
        .arg(&bin)
        .args(["run", "--json", "-q", "--method", method])
        .arg(model)
        .arg("--data")
        .arg(data)
        .output()
        .expect("/usr/bin/time and target/release/mvi run");
    assert!(
        out.status.success(),
        "mvi run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().expect("time prints a line");
    let mut it = last.split_whitespace();
    let wall: f64 = it.next().and_then(|x| x.parse().ok()).expect("wall seconds");
    let kb: f64 = it.next().and_then(|x| x.parse().ok()).expect("peak KB");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json output");
    let e = &v["elbo_fresh"]["value"];
    let elbo = e
        .as_f64()
        .or_else(|| e.as_str().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN);
    (wall, kb / 1024.0, elbo)
}

fn fits() {
    println!("\n== whole `mvi run` processes (wall time, peak RSS, fresh-draw ELBO)");
    let arma = root().join("benches/loops/arma11.mvi");
    let mut base = None;
    for t in [200, 1600, 12_800] {
        let (wall, mb, elbo) = run_mvi(&arma, &arma_data(t), "vi_diag");
        let ratio = base.map_or(String::new(), |b: f64| {
            format!("  time / time(T=200) = {:.1}", wall / b)
        });
        base = base.or(Some(wall));
        println!("ARMA(1,1) vi_diag T={t:<6} {wall:>7.2} s  {mb:>7.1} MB  ELBO {elbo:>12.3}{ratio}");
    }
    let cases: Vec<(&str, &str, PathBuf)> = vec![
        ("ARMA(1,1) T=200", "arma11", arma_data(200)),
        ("GARCH(1,1) T=1000", "garch11", garch_data(1000)),
        ("HMM N=100", "hmm", hmm_data(100)),
        ("HMM N=1000", "hmm", hmm_data(1000)),
        ("mixture N=1000 (loop)", "mixture", mixture_data(1000)),
    ];
    for (label, stem, data) in cases {
        let model = root().join(format!("benches/loops/{stem}.mvi"));
        for method in ["laplace", "vi_diag", "mvi_lr"] {
            let (wall, mb, elbo) = run_mvi(&model, &data, method);
            println!("{label:<22} {method:<8} {wall:>7.2} s  {mb:>7.1} MB  ELBO {elbo:>12.3}");
        }
    }
}

/// The harness's own flag: only the single-point comparisons (no release binary, no fits).
const SINGLE_POINTS_ONLY: &str = "--single-points";

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::args().any(|a| a == SINGLE_POINTS_ONLY) {
        single_points();
        return;
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--bin", "mvi"])
        .status();
    assert!(built.is_ok_and(|s| s.success()), "cargo build --release");
    single_points();
    fits();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.trim());
}
