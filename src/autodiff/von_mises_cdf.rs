//! The CDF of `von_mises(μ, κ)` on [−π, π], by Stan's algorithm (`von_mises_cdf`, after
//! SciPy's `von_mises_cdf`): the centred CDF C(x) on [−π, π] is the series of
//! Hill (1977) for κ < 49, the normal approximation Φ(b sin(x/2)) with
//! b = √(2/π) e^κ / I₀(κ) for κ ≥ 50, and their linear blend in between; the CDF at x of
//! location μ is C(x − μ) − C(−π − μ) with both arguments wrapped into [−π, π] (so the
//! support is [−π, π] whatever μ is, as in Stan). Stan's accuracy claim is 12 decimal
//! digits, absolute: the far tails (F below ~1e-10) lose relative accuracy, and where the
//! series rounds below 0 the log CDF is −∞.
//!
//! Input: values of any dual number type over f64, as in [`super::incomplete`]; derivatives
//! in x, μ and κ come from differentiating the series in forward mode. The complementary
//! CDF is the CDF of the reflection, 1 − F(x; μ, κ) = F(−x; −μ, κ), so its upper tail
//! keeps its relative accuracy. Outside [−π, π] the CDF is 0 (below) or 1 (above); κ < 0 or
//! a NaN gives −∞.

use std::f64::consts::{FRAC_1_SQRT_2, PI, TAU};

use super::incomplete::{log_gamma_q, Real};

/// The number of terms of Stan's series (`von_mises_cdf_series`).
fn terms(kappa: f64) -> i32 {
    (28.0 + 0.5 * kappa - 100.0 / (kappa + 5.0) + 1.0) as i32
}

/// Stan's series for κ < 49, as the CDF on [−π, π] directly: with cₙ = I_n(κ)/I₀(κ) (the
/// products of Stan's ratios R, from its backward recursion, written R = κ/(2n + κR) so
/// that κ = 0 needs no division by κ), the centred CDF is
/// C(t) = ½ + t/2π + (1/π) Σ cₙ sin(nt)/n, and F(x) = C(x − μ) − C(−π − μ) (+ 1 across the
/// wrap) = (x + π)/2π + (2/π) Σ cₙ cos(n(x − 2μ − π)/2) sin(n(x + π)/2)/n. The same
/// truncated series as Stan's, without its difference of two values of C near 1 (so
/// derivatives keep their accuracy away from the mode).
fn series_cdf<D: Real>(x: D, mu: D, kappa: D) -> D {
    let p = terms(kappa.re());
    let mut ratios = Vec::with_capacity(p.max(1) as usize);
    let mut r = D::zero();
    for n in (1..p).rev() {
        r = kappa / (kappa * r + 2.0 * f64::from(n));
        ratios.push(r);
    }
    let half_sum = (x + PI) * 0.5;
    let half_diff = (x - mu * 2.0 - PI) * 0.5;
    let mut c = D::one();
    let mut v = D::zero();
    for (n, &rn) in (1..p).zip(ratios.iter().rev()) {
        let nf = f64::from(n);
        c *= rn;
        v += c * (half_diff * nf).cos() * (half_sum * nf).sin() / nf;
    }
    (x + PI) / TAU + v * (2.0 / PI)
}

/// Φ(z), the standard normal CDF: ½ + ½ erf(z/√2) by the series
/// erf(t) = 2/√π e^{−t²} Σ 2ⁿ t^{2n+1} / (2n+1)!! for |z| < 3 (all terms positive), the
/// incomplete gamma function Q(½, z²/2) beyond.
fn phi<D: Real>(z: D) -> D {
    let rz = z.re();
    if rz.abs() >= 3.0 {
        let q = log_gamma_q(D::from(0.5), z * z * 0.5).exp() * 0.5;
        return if rz < 0.0 { q } else { -q + 1.0 };
    }
    let t = z * FRAC_1_SQRT_2;
    let t2 = t * t;
    let mut term = t;
    let mut sum = t;
    for n in 1..200 {
        term = term * t2 * 2.0 / (2.0 * f64::from(n) + 1.0);
        sum += term;
        if term.re().abs() < 1e-17 * sum.re().abs() {
            break;
        }
    }
    let erf = sum * (-t2).exp() * (2.0 / PI.sqrt());
    erf * 0.5 + 0.5
}

/// Stan's normal approximation of the centred CDF for large κ (`von_mises_cdf_normalapprox`):
/// Φ(b sin(x/2)) with b = √(2/π) e^κ / I₀(κ) = 2√κ / S(κ), where S is the asymptotic series
/// of I₀(κ) √(2πκ) e^{−κ} = Σ_k ((2k − 1)!!)² / (k! (8κ)^k), summed to rounding (κ ≥ 49).
fn normal_approx<D: Real>(x: D, kappa: D) -> D {
    let mut term = D::one();
    let mut s = D::one();
    for k in 1..40 {
        let kf = f64::from(k);
        term = term * ((2.0 * kf - 1.0) * (2.0 * kf - 1.0) / (8.0 * kf)) / kappa;
        s += term;
        if term.re().abs() < 1e-17 {
            break;
        }
    }
    let b = kappa.sqrt() * 2.0 / s;
    phi(b * (x * 0.5).sin())
}

/// x wrapped into [−π, π) by a whole number of turns.
fn wrap<D: Real>(x: D) -> D {
    let shifted = x + PI;
    shifted - (shifted.re() / TAU).floor() * TAU - PI
}

/// Stan's normal approximation as the CDF on [−π, π]: C(x₂) − C(b) (+ 1 across the wrap)
/// with x₂ = x − μ and b = −π − μ wrapped into [−π, π] (Stan's `cut` and `bound_val`).
fn normal_cdf<D: Real>(x: D, mu: D, kappa: D) -> D {
    let x2 = wrap(x - mu);
    let mu2 = wrap(mu);
    let (cut, bound) = if mu2.re() < 0.0 {
        (mu2 + PI, -mu2 - PI)
    } else {
        (mu2 - PI, -mu2 + PI)
    };
    let f = normal_approx(x2, kappa) - normal_approx(bound, kappa);
    if x.re() <= cut.re() {
        f
    } else {
        f + 1.0
    }
}

/// F(x; μ, κ) on [−π, π], Stan's `von_mises_cdf` for one observation: the series below
/// κ = 49, the normal approximation from 50, their linear blend in between (F is linear in
/// Stan's centred CDF, so blending F is blending it); clamped to [0, 1].
fn cdf<D: Real>(x: D, mu: D, kappa: D) -> D {
    let k = kappa.re();
    let f = if k < 49.0 {
        series_cdf(x, mu, kappa)
    } else if k < 50.0 {
        series_cdf(x, mu, D::from(49.0)) * (-kappa + 50.0) + normal_cdf(x, mu, D::from(50.0)) * (kappa - 49.0)
    } else {
        normal_cdf(x, mu, kappa)
    };
    if f.re() < 0.0 {
        D::zero()
    } else if f.re() > 1.0 {
        D::one()
    } else {
        f
    }
}

/// log F(x; μ, κ), the log CDF of `von_mises(μ, κ)` on [−π, π].
pub fn log_von_mises_cdf<D: Real>(x: D, mu: D, kappa: D) -> D {
    let (rx, rm, rk) = (x.re(), mu.re(), kappa.re());
    if rx.is_nan() || !rm.is_finite() || rk.is_nan() || rk < 0.0 || rx < -PI {
        return D::from(f64::NEG_INFINITY);
    }
    if rx >= PI {
        return D::zero();
    }
    cdf(x, mu, kappa).ln()
}

/// log(1 − F(x; μ, κ)) = log F(−x; −μ, κ).
pub fn log_von_mises_ccdf<D: Real>(x: D, mu: D, kappa: D) -> D {
    log_von_mises_cdf(-x, -mu, kappa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn phi_matches_log_phi_on_both_sides_of_the_switch() {
        for &z in &[-8.0, -3.0, -2.999, -1.0, 0.0, 0.5, 2.999, 3.0, 6.0] {
            let want = crate::autodiff::special::log_phi(z).exp();
            assert_relative_eq!(phi(z), want, max_relative = 1e-14);
        }
    }

    #[test]
    fn shape_zero_is_uniform_on_the_circle() {
        for &(x, mu) in &[(-3.0, 0.0), (0.5, 1.0), (2.0, -2.5)] {
            let f: f64 = log_von_mises_cdf(x, mu, 0.0);
            assert_relative_eq!(f.exp(), (x + PI) / TAU, max_relative = 1e-14);
        }
    }

    #[test]
    fn cdf_and_ccdf_sum_to_one() {
        for &(x, mu, k) in &[
            (-1.0, 0.3, 2.0),
            (2.5, -2.0, 10.0),
            (0.1, 0.0, 80.0),
            (1.0, 3.0, 49.5),
        ] {
            let (l, u): (f64, f64) = (log_von_mises_cdf(x, mu, k), log_von_mises_ccdf(x, mu, k));
            assert_relative_eq!(l.exp() + u.exp(), 1.0, epsilon = 1e-13);
        }
    }
}
