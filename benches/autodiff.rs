//! Benchmarks of the log-joint engine, with the ratios measured in the same run:
//!
//! 1. batched value + gradient, logistic regression N = 1000, D = 50, S = 1000, against the
//!    two plain gemms X·W and Xᵀ·G alone (target ≤ 3×), one thread vs all threads, and its
//!    peak memory (target ≤ 200 MB, by a counting global allocator);
//! 2. the full Hessian at D = 100 against one single-point gradient (target ≤ 4·D×);
//! 3. value + gradient per point for an eight-schools graph (D = 10) and a
//!    stochastic-volatility graph (latent AR(1) unrolled, T = 100, D = 103), evaluations/s;
//! 4. what ∇_θ adds to a batched value + ∇_w on the README's banana model (RBF width and
//!    prior precision learned);
//! 5. batched value + gradient at N = 10⁶ rows, D = 10, S = 32 (by blocks of rows) against
//!    the two gemms of the same shapes (target ≤ 3×), its peak memory beside the data's, and
//!    one point's gradient and the Hessian there (what Laplace costs per step).
//!
//! Run: `cargo bench --bench autodiff` (ratios print first, then criterion's timings);
//! `cargo bench --bench autodiff -- --ratios-only` prints the ratios only (the flag is read
//! here, before criterion parses the arguments: cargo already passes `--bench` itself, so
//! criterion's own flags cannot select "no benchmark"). Times are the minimum of repeated
//! runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use criterion::Criterion;
use mvi::density::{LogDensity, Want};
use mvi::dist;
use mvi::graph::{Constraint, Fun1, Graph, LogJoint, ParamInfo, Shape};
use nalgebra::{DMatrix, DVector};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A deterministic pseudo-random number in (−1, 1).
fn noise(i: usize) -> f64 {
    ((i as f64 * 12.9898).sin() * 43_758.545_3).fract()
}

fn info(name: &str, offset: usize, shape: Shape, value: mvi::graph::NodeId) -> ParamInfo {
    ParamInfo {
        name: name.into(),
        offset,
        shape,
        constraint: Constraint::NONE,
        structure: None,
        value,
    }
}

/// y ~ bernoulli_logit(X w), w ~ normal(0, 1); returns the model and X. `unfused` builds the
/// likelihoods from elementary nodes instead of fused `lik_sum` nodes (for comparison).
fn logistic(n: usize, d: usize, unfused: bool) -> (LogJoint, DMatrix<f64>) {
    let x = DMatrix::from_fn(n, d, |i, j| noise(i * d + j));
    let y: Vec<f64> = (0..n)
        .map(|i| if noise(7 * i + 3) > 0.0 { 1.0 } else { 0.0 })
        .collect();
    let mut g = Graph::new(d, 0);
    g.unfused = unfused;
    let w = g
        .param_slice(0, Shape::Vector(d), &Constraint::NONE)
        .expect("valid");
    let (zero, one) = (g.scalar(0.0), g.scalar(1.0));
    dist::tilde(&mut g, "normal", w, &[zero, one]).expect("valid");
    let xn = g.constant(Shape::Matrix(n, d), x.as_slice().to_vec());
    let eta = g.matmul(xn, w).expect("valid");
    let yn = g.constant(Shape::Vector(n), y);
    dist::tilde(&mut g, "bernoulli_logit", yn, &[eta]).expect("valid");
    (
        LogJoint::new(g, vec![info("w", 0, Shape::Vector(d), w)], vec![]),
        x,
    )
}

/// Eight schools, non-centred: D = 10.
fn eight_schools() -> LogJoint {
    let y = vec![28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
    let sigma = vec![15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];
    let mut g = Graph::new(10, 0);
    let mu = g.param_slice(0, Shape::Scalar, &Constraint::NONE).expect("valid");
    let tau = g
        .param_slice(1, Shape::Scalar, &Constraint::lower(0.0))
        .expect("valid");
    let th = g
        .param_slice(2, Shape::Vector(8), &Constraint::NONE)
        .expect("valid");
    let (zero, one, five) = (g.scalar(0.0), g.scalar(1.0), g.scalar(5.0));
    dist::tilde(&mut g, "normal", mu, &[zero, five]).expect("valid");
    dist::tilde(&mut g, "half_cauchy", tau, &[five]).expect("valid");
    dist::tilde(&mut g, "normal", th, &[zero, one]).expect("valid");
    let s = g.mul(tau, th).expect("valid");
    let m = g.add_nodes(mu, s).expect("valid");
    let (yn, sn) = (
        g.constant(Shape::Vector(8), y),
        g.constant(Shape::Vector(8), sigma),
    );
    dist::tilde(&mut g, "normal", yn, &[m, sn]).expect("valid");
    LogJoint::new(
        g,
        vec![
            info("mu", 0, Shape::Scalar, mu),
            info("tau", 1, Shape::Scalar, tau),
            info("theta", 2, Shape::Vector(8), th),
        ],
        vec![],
    )
}

/// Stochastic volatility with the AR(1) latent unrolled as a loop would lower: D = T + 3.
fn stochastic_volatility(t: usize) -> LogJoint {
    let mut g = Graph::new(t + 3, 0);
    let mu = g.param_slice(0, Shape::Scalar, &Constraint::NONE).expect("valid");
    let phi = g
        .param_slice(1, Shape::Scalar, &Constraint::interval(-1.0, 1.0))
        .expect("valid");
    let sigma = g
        .param_slice(2, Shape::Scalar, &Constraint::lower(0.0))
        .expect("valid");
    let hs = g
        .param_slice(3, Shape::Vector(t), &Constraint::NONE)
        .expect("valid");
    let (zero, one, ten) = (g.scalar(0.0), g.scalar(1.0), g.scalar(10.0));
    dist::tilde(&mut g, "cauchy", mu, &[zero, ten]).expect("valid");
    dist::tilde(&mut g, "half_cauchy", sigma, &[one]).expect("valid");
    dist::tilde(&mut g, "normal", hs, &[zero, one]).expect("valid");
    let phi2 = g.unary(Fun1::Square, phi);
    let one_m = g.sub(one, phi2).expect("valid");
    let sd0 = g.unary(Fun1::Sqrt, one_m);
    let h1s = g.index(hs, 1).expect("valid");
    let sc = g.div(sigma, sd0).expect("valid");
    let e1 = g.mul(sc, h1s).expect("valid");
    let mut h = vec![g.add_nodes(mu, e1).expect("valid")];
    for k in 2..=t {
        let prev = h[k - 2];
        let c = g.sub(prev, mu).expect("valid");
        let ar = g.mul(phi, c).expect("valid");
        let hk = g.index(hs, k as i64).expect("valid");
        let e = g.mul(sigma, hk).expect("valid");
        let a = g.add_nodes(mu, ar).expect("valid");
        h.push(g.add_nodes(a, e).expect("valid"));
    }
    let hv = g.pack(Shape::Vector(t), h).expect("valid");
    let half = g.scalar(0.5);
    let hh = g.mul(half, hv).expect("valid");
    let scale = g.unary(Fun1::Exp, hh);
    let y = g.constant(Shape::Vector(t), (0..t).map(|i| 0.3 * noise(i)).collect());
    dist::tilde(&mut g, "normal", y, &[zero, scale]).expect("valid");
    LogJoint::new(g, vec![info("h_std", 3, Shape::Vector(t), hs)], vec![])
}

/// Shortest wall time of `reps` runs of f, in seconds: on a shared machine the minimum is
/// the repeatable figure (other load only ever adds time), for the ratios' both sides alike.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn draws(d: usize, s: usize) -> DMatrix<f64> {
    DMatrix::from_fn(d, s, |i, j| 0.1 * noise(i * s + j + 11))
}

fn ratios() {
    let (lj, x) = logistic(1000, 50, false);
    let th = DVector::zeros(0);
    let w = draws(50, 1000);
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    let t_all = time(9, || {
        black_box(lj.eval(&th, &w, Want::GRAD_W));
    });
    let t_one = one_thread.install(|| {
        time(9, || {
            black_box(lj.eval(&th, &w, Want::GRAD_W));
        })
    });
    let g = DMatrix::from_fn(1000, 1000, |i, j| noise(i + 1000 * j));
    let t_gemm_all = time(9, || {
        black_box(&x * &w);
        black_box(x.transpose() * &g);
    });
    let t_gemm_one = one_thread.install(|| {
        time(9, || {
            black_box(&x * &w);
            black_box(x.transpose() * &g);
        })
    });
    println!(
        "logistic N=1000 D=50 S=1000 value+grad: all threads {:.2} ms, one thread {:.2} ms",
        t_all * 1e3,
        t_one * 1e3
    );
    println!(
        "  two plain gemms X·W, Xᵀ·G: {:.2} ms (nalgebra → matrixmultiply, best of one and all threads)",
        t_gemm_one.min(t_gemm_all) * 1e3
    );
    println!(
        "  ratio value+grad / gemms: all threads {:.2}x, one thread {:.2}x (target ≤ 3x)",
        t_all / t_gemm_one.min(t_gemm_all),
        t_one / t_gemm_one.min(t_gemm_all)
    );
    let (plain, _) = logistic(1000, 50, true);
    let t_plain = one_thread.install(|| {
        time(9, || {
            black_box(plain.eval(&th, &w, Want::GRAD_W));
        })
    });
    println!(
        "  without fused likelihood nodes: one thread {:.2} ms, ratio {:.2}x",
        t_plain * 1e3,
        t_plain / t_gemm_one.min(t_gemm_all)
    );
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    black_box(lj.eval(&th, &w, Want::GRAD_W));
    let peak = PEAK.load(Ordering::Relaxed) - base;
    println!(
        "  peak extra memory of one evaluation: {:.1} MB (target ≤ 200 MB)",
        peak as f64 / 1e6
    );

    let (lj100, _) = logistic(1000, 100, false);
    let w1 = DVector::from_fn(100, |i, _| 0.1 * noise(i));
    let th0 = DVector::zeros(0);
    let t_grad = time(21, || {
        black_box(mvi::density::value_grad(&lj100, &th0, &w1));
    });
    let t_hess = time(5, || {
        black_box(lj100.hessian(&th0, &w1));
    });
    println!(
        "logistic D=100 N=1000: gradient {:.3} ms, full Hessian {:.2} ms, ratio {:.1}x (target ≤ 4·D = 400x)",
        t_grad * 1e3,
        t_hess * 1e3,
        t_hess / t_grad
    );

    rbf_theta_gradient();

    for (name, lj) in [
        ("eight schools D=10", eight_schools()),
        ("stochastic volatility T=100 D=103", stochastic_volatility(100)),
    ] {
        let d = lj.dim();
        let w1 = DVector::from_fn(d, |i, _| 0.1 * noise(i));
        let t1 = time(51, || {
            black_box(mvi::density::value_grad(&lj, &th0, &w1));
        });
        let wb = draws(d, 1000);
        let tb = time(9, || {
            black_box(lj.eval(&th0, &wb, Want::GRAD_W));
        });
        println!(
            "{name}: value+grad single point {:.1} µs ({:.0} evals/s); batched S=1000 {:.1} µs per point ({:.0} evals/s); {} nodes",
            t1 * 1e6,
            1.0 / t1,
            tb * 1e3,
            1000.0 / tb,
            lj.graph.nodes.len()
        );
    }
}

/// The README's banana model (RBF features Φ(r) with the width r and the prior precision α
/// learned, N = 400, D = 31), and the same with the 30 centres learned too
/// (`examples/logistic_rbf_centres.mvi`, P = 62): what ∇_θ adds to a batched value + ∇_w at
/// S = 1000, per column (`Want::ALL`, by tangents) and as the mean over the columns
/// (`eval_weighted_theta`, what the methods call).
fn rbf_theta_gradient() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (model, data, what) in [
        ("logistic_rbf_banana", "logistic_rbf_banana", "α, r learned"),
        (
            "logistic_rbf_centres",
            "logistic_rbf_centres",
            "α, r and 30 centres learned",
        ),
    ] {
        let data = root.join(format!("examples/data/{data}.json"));
        let typed = mvi::check::load_model(
            &root.join(format!("examples/{model}.mvi")),
            &[data.display().to_string()],
        )
        .expect("the example checks");
        let lj = mvi::graph::lower_model(&typed).expect("the example lowers");
        let th = lj.theta0.clone();
        let w = draws(lj.dim(), 1000);
        let mean = DMatrix::from_element(1000, 1, 1e-3);
        let t_w = time(9, || {
            black_box(lj.eval(&th, &w, Want::GRAD_W));
        });
        let t_all = time(9, || {
            black_box(lj.eval(&th, &w, Want::ALL));
        });
        let t_mean = time(9, || {
            black_box(lj.eval_weighted_theta(&th, &w, &mean));
        });
        println!(
            "{model} N=400 D=31 S=1000 ({what}): value+∇w {:.2} ms; + ∇θ per column {:.2} ms (ratio {:.2}x); + mean ∇θ {:.2} ms (ratio {:.2}x)",
            t_w * 1e3,
            t_all * 1e3,
            t_all / t_w,
            t_mean * 1e3,
            t_mean / t_w
        );
    }
}

/// Item 5: the logistic log joint at a million rows.
fn big_n() {
    let (n, d, s) = (1_000_000, 10, 32);
    let (lj, x) = logistic(n, d, false);
    let th = DVector::zeros(0);
    let w = draws(d, s);
    assert!(lj.blocked().is_some(), "a million rows go by blocks");
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    black_box(lj.eval(&th, &w, Want::GRAD_W));
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let t_eval = time(5, || {
        black_box(lj.eval(&th, &w, Want::GRAD_W));
    });
    let g = DMatrix::from_fn(n, s, |i, j| noise(i + n * j));
    let t_gemm = time(5, || {
        black_box(&x * &w);
        black_box(x.transpose() * &g);
    });
    println!(
        "logistic N=10^6 D={d} S={s} value+grad by blocks of rows: {:.1} ms; two gemms X·W, Xᵀ·G {:.1} ms; ratio {:.2}x (target ≤ 3x)",
        t_eval * 1e3,
        t_gemm * 1e3,
        t_eval / t_gemm
    );
    println!(
        "  peak extra memory of one evaluation: {:.1} MB (the data: {:.0} MB; an N × S buffer would be {:.0} MB)",
        peak as f64 / 1e6,
        (8 * n * (d + 1)) as f64 / 1e6,
        (8 * n * s) as f64 / 1e6
    );
    let p = DVector::from_fn(d, |i, _| 0.1 * noise(i));
    let t_grad = time(5, || {
        black_box(mvi::density::value_grad(&lj, &th, &p));
    });
    let t_hess = time(3, || {
        black_box(lj.hessian(&th, &p));
    });
    println!(
        "  one point: value+grad {:.1} ms, full Hessian {:.1} ms (Laplace: a few dozen gradients and two Hessians)",
        t_grad * 1e3,
        t_hess * 1e3
    );
}

fn benches(c: &mut Criterion) {
    let (lj, _) = logistic(1000, 50, false);
    let th = DVector::zeros(0);
    let w = draws(50, 1000);
    c.bench_function("logistic_value_grad_S1000", |b| {
        b.iter(|| black_box(lj.eval(&th, &w, Want::GRAD_W)))
    });
    let w1 = DVector::from_fn(50, |i, _| 0.1 * noise(i));
    c.bench_function("logistic_hvp_D50", |b| {
        b.iter(|| black_box(lj.hvp(&th, &w1, &w1)))
    });
    let es = eight_schools();
    let w10 = DVector::from_fn(10, |i, _| 0.1 * noise(i));
    c.bench_function("eight_schools_value_grad", |b| {
        b.iter(|| black_box(mvi::density::value_grad(&es, &th, &w10)))
    });
    let sv = stochastic_volatility(100);
    let w103 = DVector::from_fn(103, |i, _| 0.1 * noise(i));
    c.bench_function("sv_value_grad", |b| {
        b.iter(|| black_box(mvi::density::value_grad(&sv, &th, &w103)))
    });
}

/// The harness's own flag: print the ratios and skip criterion's timings.
const RATIOS_ONLY: &str = "--ratios-only";

fn main() {
    ratios();
    big_n();
    if std::env::args().any(|a| a == RATIOS_ONLY) {
        return;
    }
    let mut c = Criterion::default().configure_from_args().sample_size(10);
    benches(&mut c);
    c.final_summary();
}
