use super::*;
use approx::assert_relative_eq;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

/// y_n ~ N(μ, 1), μ ~ N(0, PRIOR_SD²): the exact posterior and exact LOO predictive are
/// Gaussian.
const PRIOR_SD: f64 = 10.0;

struct Conjugate {
    y: Vec<f64>,
}

impl Conjugate {
    fn new(n: usize, rng: &mut rand::rngs::StdRng) -> Self {
        let y = (0..n).map(|_| 0.7 + z(rng)).collect();
        Conjugate { y }
    }

    /// Posterior mean and variance of μ given the observations except `skip`.
    fn posterior(&self, skip: Option<usize>) -> (f64, f64) {
        let (mut sum, mut count) = (0.0, 0.0);
        for (i, y) in self.y.iter().enumerate() {
            if Some(i) != skip {
                sum += y;
                count += 1.0;
            }
        }
        let precision = 1.0 / (PRIOR_SD * PRIOR_SD) + count;
        (sum / precision, 1.0 / precision)
    }

    /// Σ_n log N(y_n | m_−n, v_−n + 1): the exact elpd_loo.
    fn exact_elpd_loo(&self) -> f64 {
        (0..self.y.len())
            .map(|n| {
                let (m, v) = self.posterior(Some(n));
                normal_lpdf(self.y[n], m, (v + 1.0).sqrt())
            })
            .sum()
    }

    fn log_lik(&self, mu: &[f64]) -> DMatrix<f64> {
        DMatrix::from_fn(mu.len(), self.y.len(), |s, n| normal_lpdf(self.y[n], mu[s], 1.0))
    }

    /// log p̃(μ | y) = log prior + Σ_n log p(y_n | μ).
    fn log_joint(&self, mu: f64) -> f64 {
        normal_lpdf(mu, 0.0, PRIOR_SD) + self.y.iter().map(|y| normal_lpdf(*y, mu, 1.0)).sum::<f64>()
    }
}

fn z(rng: &mut rand::rngs::StdRng) -> f64 {
    StandardNormal.sample(rng)
}

fn normal_lpdf(x: f64, m: f64, sd: f64) -> f64 {
    -0.5 * (2.0 * std::f64::consts::PI).ln() - sd.ln() - 0.5 * ((x - m) / sd).powi(2)
}

fn normal_draws(m: f64, sd: f64, s: usize, rng: &mut rand::rngs::StdRng) -> Vec<f64> {
    (0..s).map(|_| m + sd * z(rng)).collect::<Vec<f64>>()
}

#[test]
fn exact_draws_give_the_analytic_elpd_loo_of_a_conjugate_normal_model() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let model = Conjugate::new(20, &mut rng);
    let (m, v) = model.posterior(None);
    let mu = normal_draws(m, v.sqrt(), 4000, &mut rng);
    let loo = psis_loo(&model.log_lik(&mu), None, 1.0);
    // The Monte Carlo sd of elpd_loo here is 0.015 (30 repetitions with other seeds).
    assert_relative_eq!(loo.elpd_loo, model.exact_elpd_loo(), epsilon = 0.06);
    assert_eq!((loo.n_draws, loo.n_obs, loo.n_high_k), (4000, 20, 0));
    assert!(!loo.corrected && loo.khat_correction.is_none());
    // With one parameter, p_loo is close to 1.
    assert!((loo.p_loo - 1.0).abs() < 0.2, "p_loo {}", loo.p_loo);
    assert_relative_eq!(loo.lppd - loo.p_loo, loo.elpd_loo, epsilon = 1e-9);
}

#[test]
fn the_correction_recovers_loo_from_draws_of_a_wrong_gaussian() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let model = Conjugate::new(20, &mut rng);
    let (m, v) = model.posterior(None);
    let exact = model.exact_elpd_loo();
    // q is shifted by one posterior sd and 1.5 times as wide.
    let (qm, qsd) = (m + v.sqrt(), 1.5 * v.sqrt());
    let mu = normal_draws(qm, qsd, 4000, &mut rng);
    let correction: Vec<f64> = mu
        .iter()
        .map(|w| model.log_joint(*w) - normal_lpdf(*w, qm, qsd))
        .collect();
    let ll = model.log_lik(&mu);
    let corrected = psis_loo(&ll, Some(&correction), 1.0);
    let naive = psis_loo(&ll, None, 1.0);
    // Over 30 repetitions with other seeds: corrected − exact has mean 0.000 and sd 0.025;
    // without the correction the error is −1.78 ± 0.06.
    assert_relative_eq!(corrected.elpd_loo, exact, epsilon = 0.1);
    assert!(
        (naive.elpd_loo - exact).abs() > 1.0,
        "{} vs {exact}",
        naive.elpd_loo
    );
    assert!(corrected.corrected);
    assert!(corrected.khat_correction.is_some_and(|k| k < 0.5));
    // lppd is the posterior's, not q's: it matches the exact-draw lppd.
    let exact_mu = normal_draws(m, v.sqrt(), 4000, &mut rng);
    let reference = psis_loo(&model.log_lik(&exact_mu), None, 1.0);
    assert_relative_eq!(corrected.lppd, reference.lppd, epsilon = 0.05);
    assert_relative_eq!(corrected.p_loo, reference.p_loo, epsilon = 0.1);
}

#[test]
fn a_constant_correction_changes_nothing() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let model = Conjugate::new(8, &mut rng);
    let (m, v) = model.posterior(None);
    let mu = normal_draws(m, v.sqrt(), 1000, &mut rng);
    let ll = model.log_lik(&mu);
    let plain = psis_loo(&ll, None, 1.0);
    let shifted = psis_loo(&ll, Some(&vec![3.5; 1000]), 1.0);
    assert_relative_eq!(plain.elpd_loo, shifted.elpd_loo, epsilon = 1e-10);
    assert_relative_eq!(plain.p_loo, shifted.p_loo, epsilon = 1e-10);
    for (a, b) in plain.pointwise.iter().zip(&shifted.pointwise) {
        assert_relative_eq!(a.khat, b.khat, epsilon = 1e-10);
    }
}

#[test]
fn se_is_the_spread_of_the_pointwise_elpd() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    let model = Conjugate::new(10, &mut rng);
    let (m, v) = model.posterior(None);
    let loo = psis_loo(
        &model.log_lik(&normal_draws(m, v.sqrt(), 500, &mut rng)),
        None,
        1.0,
    );
    let e: Vec<f64> = loo.pointwise.iter().map(|p| p.elpd).collect();
    let mean = e.iter().sum::<f64>() / 10.0;
    let ss: f64 = e.iter().map(|x| (x - mean).powi(2)).sum();
    assert_relative_eq!(loo.se, ss.sqrt(), epsilon = 1e-12);
}

#[test]
fn too_few_draws_give_nan_khat_and_plain_weights() {
    // S = 20: a tail of ⌊20/5⌋ = 4 draws is too short to fit.
    let ll = DMatrix::from_fn(20, 2, |s, n| -0.1 * (s + n) as f64);
    let loo = psis_loo(&ll, None, 1.0);
    assert!(loo.pointwise.iter().all(|p| p.khat.is_nan()));
    assert_eq!(loo.n_high_k, 0);
    // Raw ratios 1 / p: elpd_n is the log harmonic mean of p(y_n | w_s).
    let col: Vec<f64> = ll.column(0).iter().map(|l| -l).collect();
    let harmonic = -(log_sum_exp(&col) - 20f64.ln());
    assert_relative_eq!(loo.pointwise[0].elpd, harmonic, epsilon = 1e-12);
}

#[test]
fn good_k_is_arviz_threshold() {
    assert_relative_eq!(good_k(1000), 1.0 - 1.0 / 3.0);
    assert_relative_eq!(good_k(100), 0.5);
    assert_relative_eq!(good_k(100_000), 0.7);
    assert_relative_eq!(good_k(1), 0.7);
}

#[test]
fn loo_weights_are_normalised_per_observation() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let model = Conjugate::new(5, &mut rng);
    let (m, v) = model.posterior(None);
    let lw = loo_log_weights(
        &model.log_lik(&normal_draws(m, v.sqrt(), 1000, &mut rng)),
        None,
        1.0,
    );
    for col in lw.column_iter() {
        let c: Vec<f64> = col.iter().copied().collect();
        assert_relative_eq!(log_sum_exp(&c), 0.0, epsilon = 1e-12);
    }
}

#[test]
fn a_model_that_predicts_every_point_better_gets_all_the_stacking_weight() {
    let better = vec![-1.0, -2.0, -0.5, -3.0];
    let worse = vec![-1.5, -2.1, -0.9, -3.2];
    let w = stacking_weights(&[worse, better]);
    assert_relative_eq!(w[0], 0.0, epsilon = 1e-12);
    assert_relative_eq!(w[1], 1.0, epsilon = 1e-12);
}

#[test]
fn stacking_splits_weight_by_the_share_of_points_each_model_alone_predicts() {
    // Model k predicts its points with density 1 and the others' with ~0: the objective is
    // m log w_1 + (N − m) log w_2, maximised at w_1 = m / N.
    let n = 10;
    let m = 3;
    let a: Vec<f64> = (0..n).map(|i| if i < m { 0.0 } else { -800.0 }).collect();
    let b: Vec<f64> = (0..n).map(|i| if i < m { -800.0 } else { 0.0 }).collect();
    let w = stacking_weights(&[a, b]);
    assert_relative_eq!(w[0], 0.3, epsilon = 1e-9);
    assert_relative_eq!(w[1], 0.7, epsilon = 1e-9);
}

/// ∂/∂w_k Σ_n log Σ_j w_j exp(e_nj) relative to N: 1 where w_k > 0, ≤ 1 elsewhere.
fn relative_gradient(e: &[Vec<f64>], w: &[f64]) -> Vec<f64> {
    let n = e[0].len();
    let mut g = vec![0.0; e.len()];
    for i in 0..n {
        let mix: f64 = e.iter().zip(w).map(|(ek, wk)| wk * ek[i].exp()).sum();
        for (gk, ek) in g.iter_mut().zip(e) {
            *gk += ek[i].exp() / mix;
        }
    }
    g.iter().map(|v| v / n as f64).collect()
}

#[test]
fn stacking_weights_meet_the_optimality_conditions() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    let mut noise = |scale: f64| scale * z(&mut rng);
    let base: Vec<f64> = (0..200).map(|_| -1.0 + noise(0.5)).collect();
    // Four models: two good ones with independent errors, a poor one, and a copy of the first.
    let m1: Vec<f64> = base.iter().map(|b| b + noise(0.3)).collect();
    let m2: Vec<f64> = base.iter().map(|b| b + noise(0.3)).collect();
    let m3: Vec<f64> = base.iter().map(|b| b - 1.0 + noise(0.3)).collect();
    for e in [
        vec![m1.clone(), m2.clone(), m3.clone()],
        vec![m1.clone(), m2, m3, m1],
    ] {
        let w = stacking_weights(&e);
        assert_relative_eq!(w.iter().sum::<f64>(), 1.0, epsilon = 1e-12);
        assert!(w.iter().all(|v| *v >= 0.0));
        for (wk, gk) in w.iter().zip(relative_gradient(&e, &w)) {
            if *wk > 1e-9 {
                assert_relative_eq!(gk, 1.0, epsilon = 1e-8);
            } else {
                assert!(gk <= 1.0 + 1e-8, "excluded model with gradient {gk}");
            }
        }
    }
}

#[test]
fn stacking_of_one_model_is_weight_one() {
    assert_eq!(stacking_weights(&[vec![-1.0, -2.0]]), vec![1.0]);
    assert!(stacking_weights(&[]).is_empty());
}

fn loo_from(elpd: &[f64], khat: f64, s: usize) -> Loo {
    let pointwise: Vec<PointLoo> = elpd
        .iter()
        .map(|e| PointLoo {
            elpd: *e,
            khat,
            p_loo: 0.5,
        })
        .collect();
    let good = good_k(s);
    Loo {
        elpd_loo: elpd.iter().sum(),
        se: (elpd.len() as f64 * variance(elpd)).sqrt(),
        p_loo: 0.5 * elpd.len() as f64,
        lppd: elpd.iter().sum::<f64>() + 0.5 * elpd.len() as f64,
        n_draws: s,
        n_obs: elpd.len(),
        n_high_k: pointwise.iter().filter(|p| p.khat > good).count(),
        pointwise,
        good_k: good,
        corrected: false,
        khat_correction: None,
    }
}

#[test]
fn compare_ranks_best_first_with_paired_differences() {
    let a = loo_from(&[-1.0, -2.0, -1.5], 0.2, 1000);
    let b = loo_from(&[-0.5, -2.5, -1.0], 0.9, 1000);
    let rows = compare(&[("a".to_string(), &a), ("b".to_string(), &b)]).unwrap();
    assert_eq!(rows[0].name, "b");
    assert_eq!((rows[0].rank, rows[1].rank), (0, 1));
    assert_relative_eq!(rows[0].elpd_diff, 0.0);
    assert_relative_eq!(rows[1].elpd_diff, 0.5, epsilon = 1e-12);
    // d = (0.5, −0.5, 0.5): var = 2/9, dse = √(3 · 2/9).
    assert_relative_eq!(rows[1].dse, (3.0f64 * 2.0 / 9.0).sqrt(), epsilon = 1e-12);
    assert!(rows[0].warning && !rows[1].warning);
    assert_relative_eq!(rows[0].weight + rows[1].weight, 1.0, epsilon = 1e-12);
}

#[test]
fn compare_rejects_models_with_different_observation_counts() {
    let a = loo_from(&[-1.0, -2.0], 0.2, 1000);
    let b = loo_from(&[-1.0, -2.0, -3.0], 0.2, 1000);
    let err = compare(&[("a".to_string(), &a), ("b".to_string(), &b)]).unwrap_err();
    assert!(err.contains("`a` (2)") && err.contains("`b` (3)"), "{err}");
    assert!(compare(&[]).is_err());
}

#[test]
fn loo_pit_weights_replicates_below_and_splits_ties() {
    // Two observations, four draws with weights 0.1, 0.2, 0.3, 0.4.
    let w = [0.1f64, 0.2, 0.3, 0.4];
    let lw = DMatrix::from_fn(4, 2, |s, _| w[s].ln());
    let y_rep = DMatrix::from_column_slice(4, 2, &[0.0, 1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 5.0]);
    let y = [2.5, 2.0];
    let mid = loo_pit_weighted(&y, &y_rep, &lw, None);
    assert_relative_eq!(mid[0], 0.6, epsilon = 1e-12);
    // Below 2: 0.1 + 0.2; equal to 2: 0.3, split at the midpoint.
    assert_relative_eq!(mid[1], 0.45, epsilon = 1e-12);
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let random = loo_pit_weighted(&y, &y_rep, &lw, Some(&mut rng));
    assert_relative_eq!(random[0], 0.6, epsilon = 1e-12);
    assert!(random[1] >= 0.3 && random[1] <= 0.6);
    assert!((random[1] - 0.45).abs() > 1e-9);
}

#[test]
fn loo_pit_of_a_well_specified_model_spreads_over_the_unit_interval() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(18);
    let model = Conjugate::new(200, &mut rng);
    let (m, v) = model.posterior(None);
    let mu = normal_draws(m, v.sqrt(), 1000, &mut rng);
    let y_rep = DMatrix::from_fn(1000, 200, |s, _| mu[s] + z(&mut rng));
    let pit = loo_pit(&model.y, &y_rep, &model.log_lik(&mu), None, 1.0, None);
    let below_half = pit.iter().filter(|p| **p < 0.5).count();
    assert!((70..=130).contains(&below_half), "{below_half} of 200 below 0.5");
    assert!(pit.iter().all(|p| (0.0..=1.0).contains(p)));
}
