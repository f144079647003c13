//! One draw of a univariate family truncated to [lo, hi] (Stan's `T[L, U]`).
//!
//! Where the family has a CDF (every continuous family but von_mises; poisson, binomial and
//! neg_binomial_2 with their log forms), the draw inverts it: with F the CDF and S = 1 − F,
//! u ~ U(0, 1) and p = F(lo) + u (F(hi) − F(lo)), the draw is F⁻¹(p), found by bisection on
//! log F (or on −log S, the same equation written with S, when F(lo) > ½ so that the upper
//! tail keeps its precision). Everything is in log space, so an interval far in a tail (a
//! normal truncated to [10, ∞)) works. For counts the draw is the smallest k in [⌈lo⌉, ⌊hi⌋]
//! with F(k) ≥ p. The other families draw until a value falls in the interval, at most
//! [`MAX_TRIES`] times.

use super::{open01, Uni};
use crate::autodiff::incomplete::{
    log_beta_inc, log_beta_inc_c, log_binomial_ccdf, log_binomial_cdf, log_gamma_p, log_gamma_q,
    log_student_t_cdf,
};
use crate::autodiff::owen::{log_skew_normal_ccdf, log_skew_normal_cdf};
use crate::autodiff::special::log_phi;
use rand::RngCore;
use std::f64::consts::{LN_2, PI};

/// The most draws rejection sampling makes before it reports too little mass.
pub const MAX_TRIES: usize = 100_000;

const NEG_INF: f64 = f64::NEG_INFINITY;

/// One draw of `u(p)` truncated to [lo, hi] (lo ≤ hi, arguments checked).
pub(super) fn draw_one(u: Uni, p: &[f64], lo: f64, hi: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    if log_cdfs(u, p, 0.0).is_none() {
        return rejection(u, p, lo, hi, rng);
    }
    if u.discrete() {
        count_inverse(u, p, lo, hi, rng)
    } else {
        continuous_inverse(u, p, lo, hi, rng)
    }
}

fn no_mass(u: Uni, lo: f64, hi: f64) -> String {
    format!(
        "{}_rng: the truncation interval [{lo}, {hi}] has no probability mass under the distribution",
        u.name()
    )
}

fn rejection(u: Uni, p: &[f64], lo: f64, hi: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    for _ in 0..MAX_TRIES {
        let x = u.sample(p, rng)?;
        if x >= lo && x <= hi {
            return Ok(x);
        }
    }
    Err(format!(
        "{}_rng: the truncation interval [{lo}, {hi}] has too little mass: no draw fell in it in {MAX_TRIES} tries",
        u.name()
    ))
}

/// (log F, log S, log of the interval's mass, whether to work with S) at the interval's ends
/// (F(−∞) = 0, S(∞) = 0).
fn ends(f: impl Fn(f64) -> (f64, f64), lo: f64, hi: f64) -> (f64, f64, f64, bool) {
    let (lfl, lsl) = if lo == NEG_INF { (NEG_INF, 0.0) } else { f(lo) };
    let (lfh, lsh) = if hi == f64::INFINITY {
        (0.0, NEG_INF)
    } else {
        f(hi)
    };
    let upper = lsl < -LN_2;
    if upper {
        (lsh, lsl, log_diff_exp(lsl, lsh), true)
    } else {
        (lfl, lfh, log_diff_exp(lfh, lfl), false)
    }
}

/// The target of the inverse CDF: log(F(lo) + u·mass) on log F, or −log(S(hi) + u·mass) on
/// −log S (both increasing in x); `start` is log F(lo) or log S(hi).
fn target(start: f64, lmass: f64, upper: bool, rng: &mut dyn RngCore) -> f64 {
    let t = log_add_exp(start, open01(rng).ln() + lmass);
    if upper {
        -t
    } else {
        t
    }
}

fn continuous_inverse(u: Uni, p: &[f64], lo: f64, hi: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    let f = |x: f64| log_cdfs(u, p, x).expect("checked in draw_one");
    let (start, _, lmass, upper) = ends(f, lo, hi);
    if lmass.is_nan() || lmass == NEG_INF {
        return Err(no_mass(u, lo, hi));
    }
    let t = target(start, lmass, upper, rng);
    let g = |x: f64| {
        let (lf, ls) = f(x);
        if upper {
            -ls
        } else {
            lf
        }
    };
    let (s0, s1) = support(u, p);
    let x = solve(g, t, lo.max(s0), hi.min(s1));
    Ok(x.clamp(lo, hi))
}

fn count_inverse(u: Uni, p: &[f64], lo: f64, hi: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    let f = |k: f64| log_cdfs(u, p, k).expect("checked in draw_one");
    let (s0, s1) = support(u, p);
    let (kl, kh) = (lo.ceil().max(s0), hi.floor().min(s1));
    if kl > kh {
        return Err(no_mass(u, lo, hi));
    }
    let (start, _, lmass, upper) = ends(f, kl - 1.0, kh);
    if lmass.is_nan() || lmass == NEG_INF {
        return Err(no_mass(u, lo, hi));
    }
    let t = target(start, lmass, upper, rng);
    let g = |k: f64| {
        let (lf, ls) = f(k);
        if upper {
            -ls
        } else {
            lf
        }
    };
    // the smallest k in [kl, kh] with g(k) ≥ t: g(kl − 1) < t ≤ g(kh)
    let (mut a, mut b) = (kl - 1.0, kh);
    let mut w = 1.0;
    while b == f64::INFINITY {
        let k = kl + w;
        if g(k) >= t || k >= 9.0e15 {
            b = k;
        } else {
            a = k;
        }
        w *= 2.0;
    }
    while b - a > 1.0 {
        let m = a + ((b - a) / 2.0).floor();
        if g(m) >= t {
            b = m;
        } else {
            a = m;
        }
    }
    Ok(b)
}

/// The x in [a, b] with g(x) = t for an increasing g, by bisection (geometric while the
/// bracket spans orders of magnitude on one side of 0) to adjacent floats; infinite ends are
/// first replaced by doubling steps.
fn solve(g: impl Fn(f64) -> f64, t: f64, mut a: f64, mut b: f64) -> f64 {
    let mut w = 1.0;
    while a == NEG_INF {
        let x = ((if b.is_finite() { b.min(0.0) } else { 0.0 }) - w).max(-f64::MAX);
        if g(x) <= t || x <= -f64::MAX {
            a = x;
        } else {
            b = x;
        }
        w *= 2.0;
    }
    w = 1.0;
    while b == f64::INFINITY {
        let x = (a.max(0.0) + w).min(f64::MAX);
        if g(x) >= t || x >= f64::MAX {
            b = x;
        } else {
            a = x;
        }
        w *= 2.0;
    }
    for _ in 0..2200 {
        let m = if a > 0.0 && b > 4.0 * a {
            (a * b).sqrt()
        } else if b < 0.0 && a < 4.0 * b {
            -(a * b).sqrt()
        } else {
            a + 0.5 * (b - a)
        };
        if m <= a || m >= b {
            break;
        }
        if g(m) < t {
            a = m;
        } else {
            b = m;
        }
    }
    a + 0.5 * (b - a)
}

/// The interval outside which the family has no mass.
fn support(u: Uni, p: &[f64]) -> (f64, f64) {
    use Uni::*;
    match u {
        Lognormal | Exponential | Gamma | InvGamma | HalfNormal | HalfCauchy | Weibull | ChiSquare
        | InvChiSquare | ScaledInvChiSquare | Poisson | PoissonLog | NegBinomial2 | NegBinomial2Log => {
            (0.0, f64::INFINITY)
        }
        Beta => (0.0, 1.0),
        Uniform => (p[0], p[1]),
        Pareto => (p[0], f64::INFINITY),
        Binomial | BinomialLogit | BetaBinomial => (0.0, p[0]),
        Bernoulli | BernoulliLogit => (0.0, 1.0),
        _ => (NEG_INF, f64::INFINITY),
    }
}

/// (log F(x), log S(x)) with F the CDF and S = 1 − F (for counts F(k) = P(X ≤ k) and
/// S(k) = P(X > k)), for the families that have them here; None otherwise.
pub(crate) fn log_cdfs(u: Uni, p: &[f64], x: f64) -> Option<(f64, f64)> {
    use Uni::*;
    let below = (NEG_INF, 0.0);
    Some(match u {
        Normal => normal((x - p[0]) / p[1]),
        StudentT => {
            let z = (x - p[1]) / p[2];
            (log_student_t_cdf(z, p[0]), log_student_t_cdf(-z, p[0]))
        }
        Cauchy => cauchy((x - p[0]) / p[1]),
        Laplace => {
            let z = (x - p[0]) / p[1];
            if z < 0.0 {
                (z - LN_2, (-0.5 * z.exp()).ln_1p())
            } else {
                ((-0.5 * (-z).exp()).ln_1p(), -z - LN_2)
            }
        }
        Logistic => {
            let z = (x - p[0]) / p[1];
            (-softplus(-z), -softplus(z))
        }
        Lognormal if x <= 0.0 => below,
        Lognormal => normal((x.ln() - p[0]) / p[1]),
        Exponential if x <= 0.0 => below,
        Exponential => (log1m_exp(-p[0] * x), -p[0] * x),
        Gamma => gamma(p[0], p[1], x),
        InvGamma => inv_gamma(p[0], p[1], x),
        ChiSquare => gamma(0.5 * p[0], 0.5, x),
        InvChiSquare => inv_gamma(0.5 * p[0], 0.5, x),
        ScaledInvChiSquare => inv_gamma(0.5 * p[0], 0.5 * p[0] * p[1] * p[1], x),
        Beta if x <= 0.0 => below,
        Beta if x >= 1.0 => (0.0, NEG_INF),
        Beta => (log_beta_inc(x, p[0], p[1]), log_beta_inc_c(x, p[0], p[1])),
        HalfNormal if x <= 0.0 => below,
        HalfNormal => {
            let ls = LN_2 + log_phi(-x / p[0]);
            (log1m_exp(ls), ls)
        }
        HalfCauchy if x <= 0.0 => below,
        HalfCauchy => {
            let t = x / p[0];
            ((2.0 * t.atan() / PI).ln(), (2.0 * 1f64.atan2(t) / PI).ln())
        }
        Uniform if x <= p[0] => below,
        Uniform if x >= p[1] => (0.0, NEG_INF),
        Uniform => (
            ((x - p[0]) / (p[1] - p[0])).ln(),
            ((p[1] - x) / (p[1] - p[0])).ln(),
        ),
        Weibull if x <= 0.0 => below,
        Weibull => {
            let t = (x / p[1]).powf(p[0]);
            (log1m_exp(-t), -t)
        }
        Gumbel => {
            let lf = -(-(x - p[0]) / p[1]).exp();
            (lf, log1m_exp(lf))
        }
        Pareto if x <= p[0] => below,
        Pareto => {
            let ls = p[1] * (p[0] / x).ln();
            (log1m_exp(ls), ls)
        }
        SkewNormal => {
            let z = (x - p[0]) / p[1];
            (log_skew_normal_cdf(z, p[2]), log_skew_normal_ccdf(z, p[2]))
        }
        ExpModNormal => exp_mod_normal(p, x),
        Poisson => poisson(p[0], x),
        PoissonLog => poisson(p[0].exp(), x),
        NegBinomial2 => neg_binomial_2(p[0], p[1], x),
        NegBinomial2Log => neg_binomial_2(p[0].exp(), p[1], x),
        Binomial => (log_binomial_cdf(x, p[0], p[1]), log_binomial_ccdf(x, p[0], p[1])),
        BinomialLogit => {
            let theta = super::inv_logit(p[1]);
            (
                log_binomial_cdf(x, p[0], theta),
                log_binomial_ccdf(x, p[0], theta),
            )
        }
        VonMises | Bernoulli | BernoulliLogit | BetaBinomial => return None,
    })
}

fn normal(z: f64) -> (f64, f64) {
    (log_phi(z), log_phi(-z))
}

/// F(z) = ½ + atan(z)/π = atan2(1, −z)/π, accurate in both tails.
fn cauchy(z: f64) -> (f64, f64) {
    ((1f64.atan2(-z) / PI).ln(), (1f64.atan2(z) / PI).ln())
}

/// Gamma with shape α and rate β.
fn gamma(alpha: f64, beta: f64, x: f64) -> (f64, f64) {
    if x <= 0.0 {
        return (NEG_INF, 0.0);
    }
    (log_gamma_p(alpha, beta * x), log_gamma_q(alpha, beta * x))
}

/// Inverse gamma with shape α and scale β: P(X ≤ x) = Q(α, β/x).
fn inv_gamma(alpha: f64, beta: f64, x: f64) -> (f64, f64) {
    if x <= 0.0 {
        return (NEG_INF, 0.0);
    }
    (log_gamma_q(alpha, beta / x), log_gamma_p(alpha, beta / x))
}

/// F = Φ(u) − e^v Φ(u − λσ), S = Φ(−u) + e^v Φ(u − λσ) with u = (x − μ)/σ and
/// v = −λ(x − μ) + ½λ²σ².
fn exp_mod_normal(p: &[f64], x: f64) -> (f64, f64) {
    let (mu, sigma, lambda) = (p[0], p[1], p[2]);
    let u = (x - mu) / sigma;
    let w = -lambda * (x - mu) + 0.5 * (lambda * sigma).powi(2) + log_phi(u - lambda * sigma);
    (log_diff_exp(log_phi(u), w), log_add_exp(log_phi(-u), w))
}

/// P(X ≤ k) = Q(k + 1, λ), P(X > k) = P(k + 1, λ).
fn poisson(lambda: f64, k: f64) -> (f64, f64) {
    if k < 0.0 {
        return (NEG_INF, 0.0);
    }
    if lambda <= 0.0 {
        return (0.0, NEG_INF);
    }
    (log_gamma_q(k + 1.0, lambda), log_gamma_p(k + 1.0, lambda))
}

/// P(X ≤ k) = I_q(φ, k + 1) with q = φ/(μ + φ).
fn neg_binomial_2(mu: f64, phi: f64, k: f64) -> (f64, f64) {
    if k < 0.0 {
        return (NEG_INF, 0.0);
    }
    let q = phi / (mu + phi);
    (log_beta_inc(q, phi, k + 1.0), log_beta_inc_c(q, phi, k + 1.0))
}

/// log(1 + eʸ).
fn softplus(y: f64) -> f64 {
    y.max(0.0) + (-y.abs()).exp().ln_1p()
}

/// log(1 − eˡ) for l ≤ 0.
pub(crate) fn log1m_exp(l: f64) -> f64 {
    if l > -LN_2 {
        (-l.exp_m1()).ln()
    } else {
        (-l.exp()).ln_1p()
    }
}

/// log(eᵃ + eᵇ).
pub(crate) fn log_add_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == NEG_INF {
        return NEG_INF;
    }
    m + (-(a - b).abs()).exp().ln_1p()
}

/// log(eᵃ − eᵇ), −∞ when b ≥ a.
pub(crate) fn log_diff_exp(a: f64, b: f64) -> f64 {
    if b >= a {
        return NEG_INF;
    }
    if b == NEG_INF {
        return a;
    }
    a + log1m_exp(b - a)
}
