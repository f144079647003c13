//! The partial derivatives of the elementwise functions, one scalar at a time: ∂f/∂x of the
//! unary functions, (∂f/∂a, ∂f/∂b) of the binary ones and the partials of the three-argument
//! special functions, each in terms of the arguments and the value y = f(…) already computed.
//!
//! Input: the function, its arguments and y, over any [`Scalar`] (so the same partials serve
//! the batched reverse sweep, the single-point sweep of `graph::point`, the scan kernel and the
//! θ tangents, on `f64` and on dual numbers). Output: the partials; with a `need` mask, only
//! those asked for are computed (the others are 0). The special functions' shape partials are
//! nested-dual passes of their series, exact at every order, so forward-over-reverse stays
//! exact.

use num_dual::Dual;

use crate::autodiff::{incomplete, owen, von_mises_cdf, Scalar};
use crate::graph::eval::{int_exponent, inv_logit};
use crate::graph::{Fun1, Fun2, Fun3};

/// ∂f/∂x in terms of x and y = f(x).
#[inline(always)]
pub(crate) fn d_unary<T: Scalar>(f: Fun1, x: T, y: T) -> T {
    let one = T::one();
    match f {
        Fun1::Neg => -one,
        Fun1::Exp => y,
        Fun1::Log => x.recip(),
        Fun1::Log1p => (one + x).recip(),
        Fun1::Expm1 => y + one,
        Fun1::Sqrt => (y + y).recip(),
        Fun1::Square => x + x,
        Fun1::Abs => {
            if x.real() < 0.0 {
                -one
            } else {
                one
            }
        }
        Fun1::Sin => x.cos(),
        Fun1::Cos => -x.sin(),
        Fun1::Tanh => one - y * y,
        Fun1::Atan => (one + x * x).recip(),
        Fun1::InvLogit => y * (one - y),
        Fun1::Logit => (x * (one - x)).recip(),
        // 1 − σ(x) = σ(−x): one exp and one division, cheaper than expm1 of the stored value
        Fun1::LogInvLogit => inv_logit(-x),
        Fun1::Log1mInvLogit => -inv_logit(x),
        Fun1::Lgamma => x.digamma(),
        Fun1::LogPhi => x.dlog_phi(),
        Fun1::LogBesselI0 => x.bessel_i_ratio(),
    }
}

/// (∂f/∂a, ∂f/∂b) in terms of a, b and y = f(a, b).
pub(crate) fn d_binary<T: Scalar>(f: Fun2, a: T, b: T, y: T, b_const: bool) -> (T, T) {
    let (one, zero) = (T::one(), T::zero());
    match f {
        Fun2::Add => (one, one),
        Fun2::Sub => (one, -one),
        Fun2::Mul => (b, a),
        Fun2::Div => (b.recip(), -y / b),
        Fun2::Pow => match int_exponent(b, b_const) {
            Some(0) => (zero, zero),
            Some(k) => (a.powi(k - 1) * T::from(f64::from(k)), zero),
            None => (b * a.powd(b - one), y * a.ln()),
        },
        Fun2::Min => {
            if b.real() < a.real() {
                (zero, one)
            } else {
                (one, zero)
            }
        }
        Fun2::Max => {
            if b.real() > a.real() {
                (zero, one)
            } else {
                (one, zero)
            }
        }
        Fun2::LogGammaP
        | Fun2::LogGammaQ
        | Fun2::LogStudentTCdf
        | Fun2::LogSkewNormalCdf
        | Fun2::LogSkewNormalCcdf => {
            let [da, db] = d_special2(f, [a, b], y, [true; 2]);
            (da, db)
        }
        Fun2::Logic(_) => (zero, zero),
    }
}

/// Whether `f` is a special function with costly partials ([`d_special2`]).
pub(crate) fn is_special2(f: Fun2) -> bool {
    matches!(
        f,
        Fun2::LogGammaP
            | Fun2::LogGammaQ
            | Fun2::LogStudentTCdf
            | Fun2::LogSkewNormalCdf
            | Fun2::LogSkewNormalCcdf
    )
}

/// The partials of the incomplete-gamma and Student-t CDF ops given y = f(a, b); only those
/// marked in `need` are computed (the others are 0). The outcome's partial is closed form
/// (the density over the CDF, from y); the shape's is one nested-dual pass of the series
/// (exact at every order, so forward-over-reverse stays exact).
pub(crate) fn d_special2<T: Scalar>(f: Fun2, [a, b]: [T; 2], y: T, need: [bool; 2]) -> [T; 2] {
    let pick = |yes: bool, d: &dyn Fn() -> T| if yes { d() } else { T::zero() };
    if matches!(f, Fun2::LogSkewNormalCdf | Fun2::LogSkewNormalCcdf) {
        // (z, α): both by nested-dual passes of the quadrature
        let g: fn([Dual<T>; 2]) -> Dual<T> = if f == Fun2::LogSkewNormalCcdf {
            |v| owen::log_skew_normal_ccdf(v[0], v[1])
        } else {
            |v| owen::log_skew_normal_cdf(v[0], v[1])
        };
        return [
            pick(need[0], &|| incomplete::partial(g, [a, b], 0)),
            pick(need[1], &|| incomplete::partial(g, [a, b], 1)),
        ];
    }
    if f == Fun2::LogStudentTCdf {
        // (t, ν)
        return [
            pick(need[0], &|| incomplete::dlog_student_t_cdf_dt(a, b, y)),
            pick(need[1], &|| {
                incomplete::partial(|v| incomplete::log_student_t_cdf(v[0], v[1]), [a, b], 1)
            }),
        ];
    }
    // (a, x) of log P or log Q
    let upper = f == Fun2::LogGammaQ;
    let g: fn([Dual<T>; 2]) -> Dual<T> = if upper {
        |v| incomplete::log_gamma_q(v[0], v[1])
    } else {
        |v| incomplete::log_gamma_p(v[0], v[1])
    };
    [
        pick(need[0], &|| incomplete::partial(g, [a, b], 0)),
        pick(need[1], &|| incomplete::dlog_gamma_dx(a, b, y, upper)),
    ]
}

/// The partials of a function of three arguments at `args` given y = f(args); only those
/// marked in `need` are computed (the others are 0). As [`d_special2`]: x in closed form,
/// the shapes by nested-dual passes.
pub(crate) fn d_ternary<T: Scalar>(f: Fun3, args: [T; 3], y: T, need: [bool; 3]) -> [T; 3] {
    if f == Fun3::Select {
        let taken = args[0].real() != 0.0;
        let one = |yes: bool| if yes { T::one() } else { T::zero() };
        return [T::zero(), one(need[1] && taken), one(need[2] && !taken)];
    }
    let g: fn([Dual<T>; 3]) -> Dual<T> = match f {
        Fun3::LogBetaInc => |v| incomplete::log_beta_inc(v[0], v[1], v[2]),
        Fun3::LogBetaIncC => |v| incomplete::log_beta_inc_c(v[0], v[1], v[2]),
        Fun3::LogVonMisesCdf => |v| von_mises_cdf::log_von_mises_cdf(v[0], v[1], v[2]),
        Fun3::LogVonMisesCcdf => |v| von_mises_cdf::log_von_mises_ccdf(v[0], v[1], v[2]),
        Fun3::LogBinomialCdf => |v| incomplete::log_binomial_cdf(v[0], v[1], v[2]),
        Fun3::LogBinomialCcdf => |v| incomplete::log_binomial_ccdf(v[0], v[1], v[2]),
        Fun3::Select => unreachable!("handled above"),
    };
    let beta = matches!(f, Fun3::LogBetaInc | Fun3::LogBetaIncC);
    std::array::from_fn(|i| match i {
        _ if !need[i] => T::zero(),
        0 if beta => incomplete::dlog_beta_inc_dx(args[0], args[1], args[2], y, f == Fun3::LogBetaIncC),
        _ => incomplete::partial(g, args, i),
    })
}
