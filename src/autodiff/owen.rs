//! The log CDF of the standard skew normal, log F(z; α) with F(z; α) = Φ(z) − 2 T(z, α)
//! (T is Owen's T function), behind `skew_normal_lcdf` and `skew_normal_lccdf`.
//!
//! Input: values of any dual number type over f64, as in [`super::incomplete`]. Output: the
//! function at that type, so its derivatives in z and α (value, gradient, Hessian) come from
//! differentiating the quadrature itself in forward mode.
//!
//! Owen's integral T(h, a) = 1/(2π) ∫₀^a e^{−h²(1+x²)/2} / (1 + x²) dx, with x = tan θ and
//! T(h, ∞) = Φ(−|h|)/2, gives F as integrals of positive terms only, so neither tail is lost
//! to the cancellation of Φ(z) − 2T(z, α) (which in the lower tail with α > 0 subtracts two
//! numbers far larger than F):
//!
//! - z < 0: F = (1/π) ∫_{atan α}^{π/2} exp(−z² / (2 cos²θ)) dθ, in log space relative to the
//!   integrand's largest value (so F ≈ 1e-300 is as accurate as F ≈ 0.3);
//! - z > 0: F = (1/π) [atan2(1, α) + ∫_{−atan α}^{π/2} (1 − exp(−z² / (2 cos²θ))) dθ];
//! - |z|(1 + |α|) < 1e-5: the cubic Taylor polynomial at z = 0 (the integrals are even in z,
//!   so their z-derivative at 0 would be lost; the polynomial's error is ≈ 1e-21);
//!
//! and log(1 − F(z; α)) = log F(−z; −α). The integrand is even in θ, so an interval that
//! contains 0 is split there, and each piece runs from 0 or from its peak. Each piece is
//! integrated by 20-point Gauss–Legendre on panels that double in width away from both ends,
//! starting at the scale on which the integrand changes there (its decay from the peak, and
//! |z| next to π/2, where exp(−z²/(2cos²θ)) falls to 0); the panels cover the whole interval,
//! so the quadrature's derivative in each end is the integrand there, as the exact one.
//! Accuracy against mpmath: about 1e-14 relative in F, tails included (tests below and in
//! `tests/it/densities.rs`).

use std::f64::consts::{FRAC_PI_2, PI};
use std::sync::OnceLock;

use super::incomplete::Real;

/// The number of Gauss–Legendre points per panel.
const GL_POINTS: usize = 20;

/// The nodes and weights of the 20-point Gauss–Legendre rule, by Newton's method on the
/// Legendre polynomial P₂₀ (to rounding), computed once.
fn gauss_legendre() -> &'static [(f64, f64); GL_POINTS] {
    static RULE: OnceLock<[(f64, f64); GL_POINTS]> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = GL_POINTS;
        let mut rule = [(0.0, 0.0); GL_POINTS];
        for (i, slot) in rule.iter_mut().enumerate() {
            // Tricomi's first guess of the i-th root, then Newton on P_n
            let mut x = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let kf = k as f64;
                    let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let step = p1 / dp;
                x -= step;
                if step.abs() < 1e-16 {
                    break;
                }
            }
            *slot = (x, 2.0 / ((1.0 - x * x) * dp * dp));
        }
        rule
    })
}

/// The most panels on one side of an interval (the scales are ≥ 1e-5/8 of π/2, so 20
/// doublings always reach the middle).
const MAX_PANELS: usize = 40;

/// ∫₀^L f(δ) dδ by Gauss–Legendre on panels that double in width from each end: from 0 with
/// first width `s_lo`, from L with first width `s_hi`, meeting at L/2.
fn integrate<D: Real>(len: D, s_lo: f64, s_hi: f64, f: impl Fn(D) -> D) -> D {
    let rule = gauss_legendre();
    let l = len.re();
    let mut total = D::zero();
    let mut panel = |lo: D, hi: D| {
        let half = (hi - lo) * 0.5;
        let mid = (hi + lo) * 0.5;
        for &(t, w) in rule {
            total += f(mid + half * t) * half * w;
        }
    };
    let half = len * 0.5;
    // offsets from each end, below L/2
    let offsets = |s: f64| {
        let mut o = vec![0.0];
        let mut w = s.max(l * 1e-12);
        while o.len() < MAX_PANELS && o[o.len() - 1] + w < 0.5 * l {
            o.push(o[o.len() - 1] + w);
            w *= 2.0;
        }
        o
    };
    let lo = offsets(s_lo);
    for p in lo.windows(2) {
        panel(D::from(p[0]), D::from(p[1]));
    }
    panel(D::from(lo[lo.len() - 1]), half);
    let hi = offsets(s_hi);
    for p in hi.windows(2) {
        panel(len - p[1], len - p[0]);
    }
    panel(half, len - hi[hi.len() - 1]);
    total
}

/// exp(x), 0 below the smallest normal exponent (so derivative parts stay 0, not 0·∞).
fn exp_or_zero<D: Real>(x: D) -> D {
    if x.re() < -745.0 {
        D::zero()
    } else {
        x.exp()
    }
}

/// ∫ₐᵇ exp(−z²/2 · (tan²θ − tan²a)) dθ for 0 ≤ a ≤ b ≤ π/2 and z ≠ 0: the integral of
/// exp(−z²/(2cos²θ)) relative to its largest value, at θ = a.
fn lower_piece<D: Real>(z2: D, a: D, b: D) -> D {
    let (ra, rz2) = (a.re(), z2.re());
    let (ta, ca) = (a.tan(), a.cos());
    // the exponent's slope and curvature at a set the first panel there
    let sec2 = 1.0 / (ra.cos() * ra.cos());
    let slope = rz2 * ra.tan() * sec2;
    let curve = rz2.sqrt() * sec2;
    let s_lo = (1.0 / slope).min(1.0 / curve).min(1.0) / 8.0;
    // next to π/2 the integrand falls to 0 over cos θ ≈ |z|
    let s_hi = (FRAC_PI_2 - b.re()).max(rz2.sqrt()).min(1.0) / 8.0;
    integrate(b - a, s_lo, s_hi, |d: D| {
        let th = a + d;
        let tc = th.cos();
        // tan θ − tan a = sin(θ − a)/(cos θ cos a), without cancellation
        let diff = d.sin() / (tc * ca);
        exp_or_zero(-(z2 * 0.5) * diff * (diff + ta + ta))
    })
}

/// ∫ₐᵇ (1 − exp(−z²/(2cos²θ))) dθ for 0 ≤ a ≤ b ≤ π/2 and z ≠ 0.
fn upper_piece<D: Real>(z2: D, a: D, b: D) -> D {
    let rz2 = z2.re();
    let s_lo = (1.0 / rz2.sqrt()).min(1.0) / 8.0;
    let s_hi = (FRAC_PI_2 - b.re()).max(rz2.sqrt()).min(1.0) / 8.0;
    integrate(b - a, s_lo, s_hi, |d: D| {
        let c = (a + d).cos();
        -(-(z2 * 0.5) / (c * c)).exp_m1()
    })
}

/// π/2 − atan α = atan2(1, α), without cancellation for large α.
fn atan2_one<D: Real>(alpha: D) -> D {
    if alpha.re() > 0.0 {
        alpha.recip().atan()
    } else {
        -alpha.atan() + FRAC_PI_2
    }
}

/// log F(z; α) for z < 0.
fn log_cdf_lower<D: Real>(z: D, alpha: D) -> D {
    let z2 = z * z;
    let th = alpha.atan();
    let half_pi = D::from(FRAC_PI_2);
    if th.re() >= 0.0 {
        let peak = -(z2 * 0.5) / (th.cos() * th.cos());
        peak + lower_piece(z2, th, half_pi).ln() - PI.ln()
    } else {
        let zero = D::zero();
        let s = lower_piece(z2, zero, -th) + lower_piece(z2, zero, half_pi);
        -(z2 * 0.5) + s.ln() - PI.ln()
    }
}

/// log F(z; α) for z > 0.
fn log_cdf_upper<D: Real>(z: D, alpha: D) -> D {
    let z2 = z * z;
    let lo = -alpha.atan();
    let half_pi = D::from(FRAC_PI_2);
    let zero = D::zero();
    let body = if lo.re() >= 0.0 {
        upper_piece(z2, lo, half_pi)
    } else {
        upper_piece(z2, zero, -lo) + upper_piece(z2, zero, half_pi)
    };
    ((atan2_one(alpha) + body) / PI).ln()
}

/// log F(z; α) of the standard skew normal (location 0, scale 1, shape α): the log CDF of
/// `skew_normal(ξ, ω, α)` at ξ + ω z. −∞ for NaN arguments.
pub fn log_skew_normal_cdf<D: Real>(z: D, alpha: D) -> D {
    let (rz, ra) = (z.re(), alpha.re());
    if rz.is_nan() || ra.is_nan() || rz == f64::NEG_INFINITY {
        return D::from(f64::NEG_INFINITY);
    }
    if rz == f64::INFINITY {
        return D::zero();
    }
    if rz.abs() * (1.0 + ra.abs()) < 1e-5 {
        // F(0) = atan2(1, α)/π; F' = 2φ(z)Φ(αz): φ(0), then α/π, then −φ(0)
        let phi0 = 1.0 / (2.0 * PI).sqrt();
        let z2 = z * z;
        let f = atan2_one(alpha) / PI + z * phi0 + alpha * z2 / (2.0 * PI) - z2 * z * (phi0 / 6.0);
        return f.ln();
    }
    if rz < 0.0 {
        log_cdf_lower(z, alpha)
    } else {
        log_cdf_upper(z, alpha)
    }
}

/// log(1 − F(z; α)) = log F(−z; −α).
pub fn log_skew_normal_ccdf<D: Real>(z: D, alpha: D) -> D {
    log_skew_normal_cdf(-z, -alpha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn gauss_legendre_integrates_polynomials_of_degree_39_exactly() {
        let rule = gauss_legendre();
        for k in 0..40 {
            let got: f64 = rule.iter().map(|&(t, w)| w * t.powi(k)).sum();
            let want = if k % 2 == 1 { 0.0 } else { 2.0 / (k as f64 + 1.0) };
            assert_relative_eq!(got, want, epsilon = 1e-14);
        }
    }

    #[test]
    fn shape_zero_is_the_normal_cdf() {
        for &z in &[-30.0, -5.0, -1.0, -1e-7, 0.0, 1e-3, 0.4, 2.0, 8.0] {
            let want = crate::autodiff::special::log_phi(z);
            assert_relative_eq!(log_skew_normal_cdf(z, 0.0), want, max_relative = 1e-13);
        }
    }

    #[test]
    fn cdf_and_ccdf_sum_to_one() {
        for &(z, a) in &[(-1.3, 2.0), (0.7, -2.0), (0.2, 40.0), (-0.05, -7.0), (3.0, 0.5)] {
            let (l, u): (f64, f64) = (log_skew_normal_cdf(z, a), log_skew_normal_ccdf(z, a));
            assert_relative_eq!(l.exp() + u.exp(), 1.0, epsilon = 1e-14);
        }
    }

    #[test]
    fn taylor_branch_agrees_with_the_integrals_where_it_is_used() {
        for &a in &[-3.0, 0.0, 2.0] {
            let z = 0.9e-5 / (1.0 + f64::abs(a));
            let below: f64 = log_skew_normal_cdf(-z, a);
            let above: f64 = log_skew_normal_cdf(z, a);
            assert_relative_eq!(below, log_cdf_lower(-z, a), max_relative = 1e-12);
            assert_relative_eq!(above, log_cdf_upper(z, a), max_relative = 1e-12);
        }
    }

    #[test]
    fn taylor_branch_joins_the_integrals() {
        for &a in &[-3.0, 0.0, 2.0] {
            let z = 1.0001e-5 / (1.0 + f64::abs(a));
            // d/dz log F at 0: F′(0) = 2 φ(0) Φ(0) = φ(0), F(0) = 1/2 − arctan(α)/π
            let slope = (0.5 / std::f64::consts::PI).sqrt() / (0.5 - f64::atan(a) / std::f64::consts::PI);
            for s in [-1.0, 1.0] {
                let (z_in, z_out) = (s * z * 0.9999, s * z * 1.0001);
                let inside: f64 = log_skew_normal_cdf(z_in, a);
                let outside: f64 = log_skew_normal_cdf(z_out, a);
                // the smooth change across the gap is slope·Δz (~1e-9); a jump between the
                // branches would show in what is left (the curvature term is ~1e-14)
                let jump = (outside - inside) - slope * (z_out - z_in);
                assert!(jump.abs() < 1e-12, "{a} {s}: {inside} {outside}, jump {jump:e}");
            }
        }
    }
}
