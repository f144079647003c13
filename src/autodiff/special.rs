//! Special functions on f64 with their derivatives: lgamma and its derivatives (digamma,
//! trigamma, tetragamma) and log Φ (the log standard normal CDF).
//!
//! Input: finite f64 values. Output: f64 values accurate to about 1e-14 relative, used by
//! [`super::Scalar`] to build the special functions on dual numbers via the chain rule.

use std::f64::consts::PI;

/// Lanczos coefficients (g = 7, n = 9).
pub(crate) const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// log |Γ(x)| by the Lanczos approximation, with the reflection formula below 0.5.
pub fn lgamma(x: f64) -> f64 {
    if x < 0.5 {
        return (PI / (PI * x).sin()).abs().ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = LANCZOS[0];
    let t = x + 7.5;
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Shift x up to at least 16 by the recurrence, returning the shifted x and the terms
/// Σ 1/(x+i)^k the recurrence subtracts, for k = 1, 2, 3.
fn shift(mut x: f64) -> (f64, [f64; 3]) {
    let mut acc = [0.0; 3];
    while x < 16.0 {
        acc[0] += 1.0 / x;
        acc[1] += 1.0 / (x * x);
        acc[2] += 1.0 / (x * x * x);
        x += 1.0;
    }
    (x, acc)
}

/// ψ(x) = d/dx log Γ(x), by recurrence and the asymptotic series.
pub fn digamma(x: f64) -> f64 {
    if x <= 0.0 && x.fract() == 0.0 {
        return f64::NAN;
    }
    if x < 0.0 {
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let (y, acc) = shift(x);
    let r = 1.0 / (y * y);
    let series = r * (1.0 / 12.0 - r * (1.0 / 120.0 - r * (1.0 / 252.0 - r * (1.0 / 240.0 - r / 132.0))));
    y.ln() - 0.5 / y - series - acc[0]
}

/// ψ₁(x) = d²/dx² log Γ(x) for x > 0.
pub fn trigamma(x: f64) -> f64 {
    let (y, acc) = shift(x);
    let r = 1.0 / (y * y);
    let series = 1.0 / y
        + r / 2.0
        + r / y * (1.0 / 6.0 - r * (1.0 / 30.0 - r * (1.0 / 42.0 - r * (1.0 / 30.0 - r * 5.0 / 66.0))));
    series + acc[1]
}

/// ψ₂(x) = d³/dx³ log Γ(x) for x > 0.
pub fn tetragamma(x: f64) -> f64 {
    let (y, acc) = shift(x);
    let r = 1.0 / (y * y);
    let series = -r - r / y - r * r * (0.5 - r * (1.0 / 6.0 - r * (1.0 / 6.0 - r * (0.3 - r * 5.0 / 6.0))));
    series - 2.0 * acc[2]
}

/// erf(x) for |x| < 3 by the positive-term series e^{-x²} Σ 2ⁿ x^{2n+1} / (1·3···(2n+1)).
fn erf_series(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0;
    while term.abs() > 1e-17 * sum.abs() {
        n += 1.0;
        term *= 2.0 * x * x / (2.0 * n + 1.0);
        sum += term;
    }
    2.0 / PI.sqrt() * (-x * x).exp() * sum
}

/// log erfc(z) for z ≥ 2 by the continued fraction (modified Lentz), in log space.
fn log_erfc_cf(z: f64) -> f64 {
    // erfc(z) = e^{-z²}/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))
    let tiny = 1e-300;
    let mut f = z;
    let mut c = z;
    let mut d = 0.0;
    for k in 1..200 {
        let a = k as f64 / 2.0;
        d = z + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = z + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    -z * z - 0.5 * PI.ln() - f.ln()
}

/// log erfc(z), accurate in both tails.
pub fn log_erfc(z: f64) -> f64 {
    if z >= 2.0 {
        log_erfc_cf(z)
    } else if z > -3.0 {
        (1.0 - erf_series(z)).ln()
    } else {
        (2.0 - log_erfc_cf(-z).exp()).ln()
    }
}

/// log Φ(x), the log of the standard normal CDF.
pub fn log_phi(x: f64) -> f64 {
    log_erfc(-x / std::f64::consts::SQRT_2) - std::f64::consts::LN_2
}

/// d/dx log Φ(x) = φ(x)/Φ(x), computed in log space so it stays finite in the lower tail.
pub fn dlog_phi(x: f64) -> f64 {
    (-0.5 * x * x - 0.5 * (2.0 * PI).ln() - log_phi(x)).exp()
}

/// (log I₀(x), I₁(x)/I₀(x)) for x ≥ 0: the modified Bessel functions of the first kind by
/// their power series up to x = 50 (all terms positive, so no cancellation), and above by
/// the asymptotic expansion e^x/√(2πx) · Σ ..., whose terms still fall fast there.
pub fn log_bessel_i0_ratio(x: f64) -> (f64, f64) {
    let x = x.abs();
    if x <= 50.0 {
        let q = 0.25 * x * x;
        let (mut t0, mut s0, mut t1, mut s1) = (1.0, 1.0, 0.5 * x, 0.5 * x);
        let mut k = 0.0;
        while t0 > 1e-17 * s0 {
            k += 1.0;
            t0 *= q / (k * k);
            t1 *= q / (k * (k + 1.0));
            s0 += t0;
            s1 += t1;
        }
        (s0.ln(), s1 / s0)
    } else {
        // I_ν(x) ≈ e^x/√(2πx) Σ_k (−1)^k a_k(ν)/x^k, a_k = Π_{j≤k} (4ν² − (2j − 1)²)/(8j)
        let series = |nu2: f64| {
            let (mut term, mut sum) = (1.0, 1.0);
            for j in 1..30 {
                let j = j as f64;
                term *= -(nu2 - (2.0 * j - 1.0).powi(2)) / (8.0 * j * x);
                sum += term;
                if term.abs() < 1e-17 {
                    break;
                }
            }
            sum
        };
        let (s0, s1) = (series(0.0), series(4.0));
        (x - 0.5 * (2.0 * PI * x).ln() + s0.ln(), s1 / s0)
    }
}

/// r(x) = I₁(x)/I₀(x) and its first two derivatives: r' = 1 − r/x − r²,
/// r'' = −r'/x + r/x² − 2 r r' (limits 1/2 and 0 at x = 0).
pub fn bessel_ratio_derivs(x: f64) -> (f64, f64, f64) {
    let (_, r) = log_bessel_i0_ratio(x);
    if x.abs() < 1e-4 {
        // r = x/2 − x³/16 + …
        return (r, 0.5 - 3.0 * x * x / 16.0, -3.0 * x / 8.0);
    }
    let d1 = 1.0 - r / x - r * r;
    let d2 = -d1 / x + r / (x * x) - 2.0 * r * d1;
    (r, d1, d2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn lgamma_matches_factorials() {
        assert_relative_eq!(lgamma(5.0), 24f64.ln(), max_relative = 1e-14);
        assert_relative_eq!(lgamma(0.5), PI.sqrt().ln(), max_relative = 1e-14);
        assert_relative_eq!(
            lgamma(101.0),
            (1..=100).map(|k| (k as f64).ln()).sum::<f64>(),
            max_relative = 1e-13
        );
    }

    #[test]
    fn polygammas_are_derivatives_of_each_other() {
        for &x in &[0.3, 1.0, 2.7, 9.5, 40.0] {
            let h = 1e-5;
            assert_relative_eq!(
                digamma(x),
                (lgamma(x + h) - lgamma(x - h)) / (2.0 * h),
                max_relative = 1e-7
            );
            assert_relative_eq!(
                trigamma(x),
                (digamma(x + h) - digamma(x - h)) / (2.0 * h),
                max_relative = 1e-7
            );
            assert_relative_eq!(
                tetragamma(x),
                (trigamma(x + h) - trigamma(x - h)) / (2.0 * h),
                max_relative = 1e-6
            );
        }
        // ψ(1) = −γ (Euler–Mascheroni), ψ₁(1) = π²/6.
        assert_relative_eq!(digamma(1.0), -0.577_215_664_901_532_9, max_relative = 1e-14);
        assert_relative_eq!(trigamma(1.0), PI * PI / 6.0, max_relative = 1e-14);
    }

    #[test]
    fn bessel_i0_matches_known_values_and_its_derivatives() {
        // I₀(1) = 1.2660658777520082, I₁(1) = 0.5651591039924851 (Abramowitz & Stegun 9.8)
        let (l, r) = log_bessel_i0_ratio(1.0);
        assert_relative_eq!(l, 1.266_065_877_752_008_2f64.ln(), max_relative = 1e-14);
        assert_relative_eq!(
            r,
            0.565_159_103_992_485_1 / 1.266_065_877_752_008_2,
            max_relative = 1e-14
        );
        // both sides of the switch at 50 agree with each other's derivative
        let h = 1e-5;
        for &x in &[0.3, 2.0, 49.9, 50.1, 300.0] {
            let (lp, lm) = (log_bessel_i0_ratio(x + h).0, log_bessel_i0_ratio(x - h).0);
            assert_relative_eq!(
                log_bessel_i0_ratio(x).1,
                (lp - lm) / (2.0 * h),
                max_relative = 1e-7
            );
            let (r, d1, d2) = bessel_ratio_derivs(x);
            let (rp, rm) = (bessel_ratio_derivs(x + h), bessel_ratio_derivs(x - h));
            assert_relative_eq!(
                d1,
                (rp.0 - rm.0) / (2.0 * h),
                max_relative = 1e-6,
                epsilon = 1e-12
            );
            assert_relative_eq!(
                d2,
                (rp.1 - rm.1) / (2.0 * h),
                max_relative = 1e-5,
                epsilon = 1e-12
            );
            let _ = r;
        }
    }

    #[test]
    fn log_phi_matches_known_values() {
        assert_relative_eq!(log_phi(0.0), 0.5f64.ln(), max_relative = 1e-15);
        // Φ(1.96) = 0.9750021048517795 (closed-form tables)
        assert_relative_eq!(
            log_phi(1.96),
            0.975_002_104_851_779_5f64.ln(),
            max_relative = 1e-13
        );
        // asymptotic: log Φ(x) ≈ −x²/2 − log(−x) − log √(2π) for x → −∞
        let x: f64 = -40.0;
        let asym = -0.5 * x * x - (-x).ln() - 0.5 * (2.0 * PI).ln();
        assert_relative_eq!(log_phi(x), asym, max_relative = 1e-6);
        let h = 1e-6;
        for &x in &[-10.0, -1.0, 0.3, 2.5] {
            assert_relative_eq!(
                dlog_phi(x),
                (log_phi(x + h) - log_phi(x - h)) / (2.0 * h),
                max_relative = 1e-6
            );
        }
    }
}
