//! split_mf on 2-D targets whose log Z is known by quadrature: the bound stays below log Z
//! and growing from one to four bins closes at least 40 % of the gap.

use mvi::density::{Evaluated, LogDensity, Want};
use mvi::infer::split_mf::{Settings, SplitMf};
use mvi::infer::Silent;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// A 2-D target given by its log density and gradient at one point.
trait Target2: Sync {
    fn log_f(&self, x: [f64; 2]) -> f64;
    fn grad(&self, x: [f64; 2]) -> [f64; 2];
}

/// Adapts a [`Target2`] to `LogDensity` (Hessian by central differences of the gradient).
struct Dens<T>(T);

impl<T: Target2> LogDensity for Dens<T> {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&self, _t: &DVector<f64>, w: &DMatrix<f64>, want: Want) -> Evaluated {
        let mut g = DMatrix::zeros(2, w.ncols());
        let values = DVector::from_iterator(
            w.ncols(),
            w.column_iter().enumerate().map(|(s, c)| {
                let x = [c[0], c[1]];
                let gr = self.0.grad(x);
                g[(0, s)] = gr[0];
                g[(1, s)] = gr[1];
                self.0.log_f(x)
            }),
        );
        Evaluated {
            values,
            grad_w: want.grad_w.then_some(g),
            grad_theta: None,
        }
    }
    fn hessian(&self, _t: &DVector<f64>, w: &DVector<f64>) -> DMatrix<f64> {
        let h = 1e-5;
        let mut out = DMatrix::zeros(2, 2);
        for j in 0..2 {
            let (mut p, mut m) = ([w[0], w[1]], [w[0], w[1]]);
            p[j] += h;
            m[j] -= h;
            let (gp, gm) = (self.0.grad(p), self.0.grad(m));
            for i in 0..2 {
                out[(i, j)] = (gp[i] - gm[i]) / (2.0 * h);
            }
        }
        (&out + out.transpose()) * 0.5
    }
}

fn log_sigmoid(x: f64) -> f64 {
    -((-x).max(0.0) + (-x.abs()).exp().ln_1p())
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// 0.5·N(w; (−1.5, 0), [[1, 0.6], [0.6, 1]]) + 0.5·N(w; (1.5, 0.5), [[0.8, −0.3], [−0.3, 0.6]]).
struct TwoGaussians;

/// (mean, precision, log normaliser) of each component.
fn components() -> [([f64; 2], [[f64; 2]; 2], f64); 2] {
    let comp = |mu: [f64; 2], c: [[f64; 2]; 2]| {
        let det = c[0][0] * c[1][1] - c[0][1] * c[1][0];
        let prec = [[c[1][1] / det, -c[0][1] / det], [-c[1][0] / det, c[0][0] / det]];
        (mu, prec, -(2.0 * std::f64::consts::PI).ln() - 0.5 * det.ln())
    };
    [
        comp([-1.5, 0.0], [[1.0, 0.6], [0.6, 1.0]]),
        comp([1.5, 0.5], [[0.8, -0.3], [-0.3, 0.6]]),
    ]
}

/// Per component: log(0.5 N) and the gradient of log N.
fn parts(x: [f64; 2]) -> [(f64, [f64; 2]); 2] {
    components().map(|(mu, p, c)| {
        let d = [x[0] - mu[0], x[1] - mu[1]];
        let pd = [p[0][0] * d[0] + p[0][1] * d[1], p[1][0] * d[0] + p[1][1] * d[1]];
        (
            0.5f64.ln() + c - 0.5 * (d[0] * pd[0] + d[1] * pd[1]),
            [-pd[0], -pd[1]],
        )
    })
}

impl Target2 for TwoGaussians {
    fn log_f(&self, x: [f64; 2]) -> f64 {
        let [(a, _), (b, _)] = parts(x);
        a.max(b) + (-(a - b).abs()).exp().ln_1p()
    }
    fn grad(&self, x: [f64; 2]) -> [f64; 2] {
        let [(a, ga), (b, gb)] = parts(x);
        let r = sigmoid(a - b);
        [r * ga[0] + (1.0 - r) * gb[0], r * ga[1] + (1.0 - r) * gb[1]]
    }
}

/// Split VI's f(x) = N(x; 0, I)·σ(20x₁ + 4)·σ(20x₂ − 10x₁ + 4) (Bouchard & Zoeter, Fig. 4).
struct SplitViTarget;

impl Target2 for SplitViTarget {
    fn log_f(&self, x: [f64; 2]) -> f64 {
        -(2.0 * std::f64::consts::PI).ln() - 0.5 * (x[0] * x[0] + x[1] * x[1])
            + log_sigmoid(20.0 * x[0] + 4.0)
            + log_sigmoid(20.0 * x[1] - 10.0 * x[0] + 4.0)
    }
    fn grad(&self, x: [f64; 2]) -> [f64; 2] {
        let (s1, s2) = (
            sigmoid(-(20.0 * x[0] + 4.0)),
            sigmoid(-(20.0 * x[1] - 10.0 * x[0] + 4.0)),
        );
        [-x[0] + 20.0 * s1 - 10.0 * s2, -x[1] + 20.0 * s2]
    }
}

/// log ∫ f by the midpoint rule on [−8, 8]² with step 0.01 (f is negligible outside).
fn log_z<T: Target2>(t: &T) -> f64 {
    let (h, n) = (0.01, 1600);
    let vals: Vec<f64> = (0..n * n)
        .map(|i| {
            t.log_f([
                -8.0 + h * ((i / n) as f64 + 0.5),
                -8.0 + h * ((i % n) as f64 + 0.5),
            ])
        })
        .collect();
    let m = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + (vals.iter().map(|v| (v - m).exp()).sum::<f64>() * h * h).ln()
}

/// Slack for the fitted bound above log Z: the fixed-sample value is optimistic by O(1/√S).
const MC_SLACK: f64 = 0.05;

fn check_gap_shrinks<T: Target2>(target: T, seed: u64, full_cov: bool) {
    let lz = log_z(&target);
    let method = SplitMf {
        settings: Settings {
            bins: 4,
            samples: 400,
            full_cov,
            ..Settings::default()
        },
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (post, growth) = method.fit_growth(&Dens(target), &mut rng, &mut Silent).unwrap();
    let b = &growth.bounds;
    eprintln!(
        "log Z {lz:.4}, bounds {b:?}, fresh {:.4}, notes {:?}",
        growth.fresh_bound, post.notes
    );
    assert_eq!(b.len(), 4, "all four bins accepted: {:?}", post.notes);
    assert!(b.windows(2).all(|w| w[1] >= w[0]), "bound fell: {b:?}");
    assert!(
        b.iter().all(|v| *v <= lz + MC_SLACK),
        "bound above log Z {lz}: {b:?}"
    );
    assert!(
        growth.fresh_bound <= lz + MC_SLACK,
        "fresh bound {} above log Z {lz}",
        growth.fresh_bound
    );
    let (gap1, gap4) = (lz - b[0], lz - b[3]);
    assert!(
        gap4 <= 0.6 * gap1,
        "gap {gap1:.4} → {gap4:.4} shrank by less than 40 %"
    );
}

#[test]
fn split_mf_closes_the_gap_on_a_two_gaussian_mixture() {
    check_gap_shrinks(TwoGaussians, 11, false);
}

#[test]
fn split_mf_closes_the_gap_on_the_split_vi_target() {
    check_gap_shrinks(SplitViTarget, 12, false);
}

#[test]
fn split_mf_with_full_covariance_bins_closes_the_gap_on_the_split_vi_target() {
    check_gap_shrinks(SplitViTarget, 13, true);
}

#[test]
fn quadrature_gives_log_z_zero_for_a_normalised_mixture() {
    assert!(log_z(&TwoGaussians).abs() < 1e-6);
}

/// Benchmark, not a check: split_mf time per bin count on split VI's target (S = 200).
/// Run: `cargo test --release --test it -- --ignored --nocapture split_mf::bench`
#[test]
#[ignore]
fn bench_split_mf_per_bin_count() {
    for full_cov in [false, true] {
        for bins in 1..=4 {
            let settings = Settings {
                bins,
                full_cov,
                ..Settings::default()
            };
            let mut rng = rand::rngs::StdRng::seed_from_u64(1);
            let t0 = std::time::Instant::now();
            let (post, growth) = SplitMf { settings }
                .fit_growth(&Dens(SplitViTarget), &mut rng, &mut Silent)
                .unwrap();
            println!(
                "split_mf full_cov = {full_cov}, bins = {bins}: {:.3} s (all stages), {} optimiser iterations, bound {:.4}",
                t0.elapsed().as_secs_f64(),
                post.trace.len(),
                growth.bounds.last().unwrap()
            );
        }
    }
}

/// Prints each growth phase with the time since the start and the optimiser iterations
/// so far (seen with `--nocapture`).
struct StageClock {
    start: std::time::Instant,
    iters: usize,
}

impl mvi::infer::Observer for StageClock {
    fn iteration(&mut self, record: &mvi::posterior::IterRecord) -> bool {
        self.iters += 1;
        if self.iters.is_multiple_of(25) {
            println!(
                "{:>9.2} s  {:>5} iterations  bound {:.6}",
                self.start.elapsed().as_secs_f64(),
                self.iters,
                record.objective
            );
        }
        true
    }
    fn phase(&mut self, name: &str) {
        println!(
            "{:>9.2} s  {:>5} iterations  {name}",
            self.start.elapsed().as_secs_f64(),
            self.iters
        );
    }
}

/// Benchmark, not a check: split_mf on the banana example (D = 31, N = 400, θ learned,
/// S = 1000, bins = 4 as the defaults), with the time and optimiser iterations at every
/// growth stage, the bound every 25 iterations, and the Monte-Carlo standard error of the
/// fitted mixture's ELBO (the scale below which the bound's last digits do not matter).
/// Measured 2026-11-21, release, load average ~2: 20 s in all (Laplace 4.6 s; the final
/// 4-bin stage 152 iterations, 11.4 s), bounds −149.661, −149.268, −149.252, −148.674.
/// Run: `cargo test --release --test it -- --ignored --nocapture --test-threads=1 split_mf::bench_split_mf_banana`
#[test]
#[ignore]
fn bench_split_mf_banana() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let data = dir.join("data/logistic_rbf_banana.json");
    let typed = mvi::check::load_model(
        &dir.join("logistic_rbf_banana.mvi"),
        &[data.display().to_string()],
    )
    .unwrap_or_else(|e| panic!("the banana example loads: {e:?}"));
    let model = mvi::graph::lower_model(&typed).expect("the banana example lowers");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut clock = StageClock {
        start: std::time::Instant::now(),
        iters: 0,
    };
    let (post, growth) = SplitMf::default()
        .fit_growth(&model, &mut rng, &mut clock)
        .unwrap();
    println!(
        "split_mf banana: {:.2} s in all, {} optimiser iterations, bounds {:?}, converged {}",
        clock.start.elapsed().as_secs_f64(),
        post.trace.len(),
        growth.bounds,
        post.converged
    );
    println!("notes: {:?}", post.notes);
    // The Monte-Carlo scale of the result: the standard error of a 1000-draw ELBO
    // estimate of the fitted mixture, sd(log p̃ − log q) / √1000.
    let w = post.draw(4000, &mut rng);
    let log_p = model.eval(&post.theta, &w, Want::VALUE).values;
    let log_q = post.log_q(&w).expect("a mixture has a density");
    let r: Vec<f64> = log_p.iter().zip(log_q.iter()).map(|(p, q)| p - q).collect();
    let mean = r.iter().sum::<f64>() / r.len() as f64;
    let sd = (r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (r.len() - 1) as f64).sqrt();
    println!(
        "mixture ELBO on 4000 fresh draws {mean:.4}; standard error of a 1000-draw estimate {:.4}",
        sd / 1000f64.sqrt()
    );
}
