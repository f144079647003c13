//! Random draws `name_rng(args)` of every built-in distribution (Stan's `_rng` functions, for
//! `generated`), and of the univariate ones truncated to an interval (`T[L, U]`).
//!
//! Input: the base name (`"normal"`), the arguments at one draw as column-major values with
//! their rows × cols ([`RngArg`]), an output slice of the result's size (the shape
//! `check::rng::rng_shape` gave) and the caller's random number generator. Output: the draw
//! written column-major into the slice (integers as f64), or a message like Stan's naming the
//! argument outside its domain (`normal_rng: sigma is -1, but must be positive and finite`),
//! which the caller turns into NaN and a counted warning. Parametrisations are those of
//! `docs/language.md` (Stan's): gamma's β is a rate, inv_gamma's β a scale, neg_binomial_2's
//! φ the dispersion (variance μ + μ²/φ).
//!
//! Univariate families draw each entry with its arguments broadcast (an argument holds one
//! value or one per entry); rand_distr's samplers are used where they exist, the rest are
//! built from them (laplace = difference of exponentials, neg_binomial_2 = Poisson(Gamma),
//! beta_binomial = Binomial(Beta), inv_gamma = 1/Gamma, von_mises by Best and Fisher, …).
//! The multivariate families live in `rng/multi.rs`, truncation in `rng/truncated.rs`.

mod multi;
mod truncated;

use rand::distr::Open01;
use rand::RngCore;
use rand_distr::{
    Beta, Binomial, Cauchy, ChiSquared, Distribution, Exp1, Gamma, Gumbel, Pareto, Poisson, SkewNormal,
    StandardNormal, StudentT, Weibull,
};
use std::f64::consts::PI;

/// One argument of a `_rng` call at one draw: its entries column-major, with rows × cols (a
/// scalar is 1×1, `vector[n]` n×1, matrix r×c; ints are f64 holding integers).
#[derive(Debug, Clone, Copy)]
pub struct RngArg<'a> {
    /// The entries, column-major.
    pub values: &'a [f64],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
}

impl<'a> RngArg<'a> {
    /// A scalar argument (1×1).
    pub fn scalar(value: &'a f64) -> Self {
        RngArg {
            values: std::slice::from_ref(value),
            rows: 1,
            cols: 1,
        }
    }

    /// A vector argument (n×1).
    pub fn vector(values: &'a [f64]) -> Self {
        RngArg {
            values,
            rows: values.len(),
            cols: 1,
        }
    }

    /// An r×c matrix argument, column-major.
    pub fn matrix(values: &'a [f64], rows: usize, cols: usize) -> Self {
        RngArg { values, rows, cols }
    }

    /// Entry i with a scalar broadcast.
    fn at(&self, i: usize) -> f64 {
        if self.values.len() == 1 {
            self.values[0]
        } else {
            self.values[i]
        }
    }
}

/// Stan's limit on a Poisson rate (poisson_rng, neg_binomial_2_rng): 2³⁰.
pub const POISSON_MAX_RATE: f64 = 1_073_741_824.0;

/// Draw `name_rng(args)` once (`name` is the base name, e.g. "normal"), writing the result's
/// entries column-major into `out` (its length is the size of the shape
/// `check::rng::rng_shape` gave; integer results are written as f64 integers). Univariate
/// families draw each entry with its broadcast arguments.
///
/// # Errors
/// An argument outside its domain, with a message like Stan's: "normal_rng: sigma is -1, but
/// must be positive and finite" (the caller turns it into NaN and a counted warning); an
/// unknown name, a wrong argument count or argument sizes that do not fit `out`.
pub fn draw(name: &str, args: &[RngArg<'_>], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    if let Some(u) = Uni::from_name(name) {
        return draw_univariate(u, args, out, rng);
    }
    multi::draw(name, args, out, rng)
}

/// As [`draw`] for a univariate family truncated to [lo, hi] (either end may be None), Stan's
/// `T[L, U]`: draws from the truncated law by inverting its CDF (numerically, in log space,
/// so far tails work) where the family has one, and otherwise by rejection with a bounded
/// number of tries. `lo`/`hi` are broadcast like the arguments (one value or one per entry).
///
/// # Errors
/// As [`draw`]; also lo > hi, an interval with no mass under the distribution, and (by
/// rejection) an interval with too little mass to be hit in the tries allowed.
pub fn draw_truncated(
    name: &str,
    args: &[RngArg<'_>],
    lo: Option<RngArg<'_>>,
    hi: Option<RngArg<'_>>,
    out: &mut [f64],
    rng: &mut dyn RngCore,
) -> Result<(), String> {
    let u = Uni::from_name(name)
        .ok_or_else(|| format!("{name}_rng: only univariate distributions can be truncated"))?;
    check_sizes(name, args, u.params().len(), out.len())?;
    for (b, which) in [(lo, "lower bound"), (hi, "upper bound")] {
        if let Some(b) = b {
            if b.values.len() != 1 && b.values.len() != out.len() {
                return Err(format!(
                    "{name}_rng: the {which} has {} entries, but the result has {}",
                    b.values.len(),
                    out.len()
                ));
            }
        }
    }
    let mut p = [0.0; 3];
    for (i, o) in out.iter_mut().enumerate() {
        let p = params_at(&mut p, args, i);
        u.check(p)?;
        let l = lo.map_or(f64::NEG_INFINITY, |b| b.at(i));
        let h = hi.map_or(f64::INFINITY, |b| b.at(i));
        if l.is_nan() || h.is_nan() || l > h {
            return Err(format!("{name}_rng: the truncation interval [{l}, {h}] is empty"));
        }
        *o = truncated::draw_one(u, p, l, h, rng)?;
    }
    Ok(())
}

fn check_sizes(name: &str, args: &[RngArg<'_>], nparams: usize, n: usize) -> Result<(), String> {
    if args.len() != nparams {
        return Err(format!(
            "{name}_rng: takes {nparams} arguments, found {}",
            args.len()
        ));
    }
    for (j, a) in args.iter().enumerate() {
        if a.values.len() != 1 && a.values.len() != n {
            return Err(format!(
                "{name}_rng: argument {} has {} entries, but the result has {n}",
                j + 1,
                a.values.len()
            ));
        }
    }
    Ok(())
}

/// The arguments' entries at draw i, broadcast, in the first `args.len()` slots of `buf`.
fn params_at<'b>(buf: &'b mut [f64; 3], args: &[RngArg<'_>], i: usize) -> &'b [f64] {
    for (b, a) in buf.iter_mut().zip(args) {
        *b = a.at(i);
    }
    &buf[..args.len()]
}

fn draw_univariate(
    u: Uni,
    args: &[RngArg<'_>],
    out: &mut [f64],
    rng: &mut dyn RngCore,
) -> Result<(), String> {
    check_sizes(u.name(), args, u.params().len(), out.len())?;
    let mut p = [0.0; 3];
    for (i, o) in out.iter_mut().enumerate() {
        let p = params_at(&mut p, args, i);
        u.check(p)?;
        *o = u.sample(p, rng)?;
    }
    Ok(())
}

/// The domain an argument must lie in.
#[derive(Debug, Clone, Copy)]
enum Domain {
    Finite,
    Positive,
    NonNegative,
    Unit,
    Count,
    /// Not NaN (a log rate, −∞ allowed).
    NotNan,
}

impl Domain {
    fn holds(self, v: f64) -> bool {
        match self {
            Domain::Finite => v.is_finite(),
            Domain::Positive => v.is_finite() && v > 0.0,
            Domain::NonNegative => v.is_finite() && v >= 0.0,
            Domain::Unit => (0.0..=1.0).contains(&v),
            Domain::Count => v.is_finite() && v >= 0.0 && v.fract() == 0.0,
            Domain::NotNan => !v.is_nan(),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Domain::Finite => "finite",
            Domain::Positive => "positive and finite",
            Domain::NonNegative => "non-negative and finite",
            Domain::Unit => "in [0, 1]",
            Domain::Count => "a non-negative integer",
            Domain::NotNan => "a number (not NaN)",
        }
    }
}

/// A univariate family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Uni {
    Normal,
    StudentT,
    Cauchy,
    Laplace,
    Logistic,
    Lognormal,
    Exponential,
    Gamma,
    InvGamma,
    Beta,
    HalfNormal,
    HalfCauchy,
    Uniform,
    Bernoulli,
    BernoulliLogit,
    Binomial,
    BinomialLogit,
    Poisson,
    PoissonLog,
    NegBinomial2,
    NegBinomial2Log,
    BetaBinomial,
    Weibull,
    Gumbel,
    Pareto,
    SkewNormal,
    VonMises,
    ChiSquare,
    InvChiSquare,
    ScaledInvChiSquare,
    ExpModNormal,
}

use Domain::{Count, Finite, NonNegative, NotNan, Positive, Unit};

/// A family's parameter names with their domains, in order.
type Params = &'static [(&'static str, Domain)];

/// Every univariate family: name, tag, parameters with their domains.
const UNIVARIATE: &[(&str, Uni, Params)] = &[
    ("normal", Uni::Normal, &[("mu", Finite), ("sigma", Positive)]),
    (
        "student_t",
        Uni::StudentT,
        &[("nu", Positive), ("mu", Finite), ("sigma", Positive)],
    ),
    ("cauchy", Uni::Cauchy, &[("mu", Finite), ("sigma", Positive)]),
    ("laplace", Uni::Laplace, &[("mu", Finite), ("b", Positive)]),
    ("logistic", Uni::Logistic, &[("mu", Finite), ("s", Positive)]),
    (
        "lognormal",
        Uni::Lognormal,
        &[("mu", Finite), ("sigma", Positive)],
    ),
    ("exponential", Uni::Exponential, &[("lambda", Positive)]),
    ("gamma", Uni::Gamma, &[("alpha", Positive), ("beta", Positive)]),
    (
        "inv_gamma",
        Uni::InvGamma,
        &[("alpha", Positive), ("beta", Positive)],
    ),
    ("beta", Uni::Beta, &[("a", Positive), ("b", Positive)]),
    ("half_normal", Uni::HalfNormal, &[("sigma", Positive)]),
    ("half_cauchy", Uni::HalfCauchy, &[("sigma", Positive)]),
    ("uniform", Uni::Uniform, &[("lower", Finite), ("upper", Finite)]),
    ("bernoulli", Uni::Bernoulli, &[("theta", Unit)]),
    ("bernoulli_logit", Uni::BernoulliLogit, &[("alpha", NotNan)]),
    ("binomial", Uni::Binomial, &[("N", Count), ("theta", Unit)]),
    (
        "binomial_logit",
        Uni::BinomialLogit,
        &[("N", Count), ("alpha", NotNan)],
    ),
    ("poisson", Uni::Poisson, &[("lambda", NonNegative)]),
    ("poisson_log", Uni::PoissonLog, &[("alpha", NotNan)]),
    (
        "neg_binomial_2",
        Uni::NegBinomial2,
        &[("mu", Positive), ("phi", Positive)],
    ),
    (
        "neg_binomial_2_log",
        Uni::NegBinomial2Log,
        &[("eta", Finite), ("phi", Positive)],
    ),
    (
        "beta_binomial",
        Uni::BetaBinomial,
        &[("N", Count), ("alpha", Positive), ("beta", Positive)],
    ),
    (
        "weibull",
        Uni::Weibull,
        &[("alpha", Positive), ("sigma", Positive)],
    ),
    ("gumbel", Uni::Gumbel, &[("mu", Finite), ("beta", Positive)]),
    ("pareto", Uni::Pareto, &[("y_min", Positive), ("alpha", Positive)]),
    (
        "skew_normal",
        Uni::SkewNormal,
        &[("xi", Finite), ("omega", Positive), ("alpha", Finite)],
    ),
    (
        "von_mises",
        Uni::VonMises,
        &[("mu", Finite), ("kappa", NonNegative)],
    ),
    ("chi_square", Uni::ChiSquare, &[("nu", Positive)]),
    ("inv_chi_square", Uni::InvChiSquare, &[("nu", Positive)]),
    (
        "scaled_inv_chi_square",
        Uni::ScaledInvChiSquare,
        &[("nu", Positive), ("s", Positive)],
    ),
    (
        "exp_mod_normal",
        Uni::ExpModNormal,
        &[("mu", Finite), ("sigma", Positive), ("lambda", Positive)],
    ),
];

/// A uniform draw in (0, 1).
pub(crate) fn open01(rng: &mut dyn RngCore) -> f64 {
    Open01.sample(rng)
}

/// A standard normal draw.
pub(crate) fn std_normal(rng: &mut dyn RngCore) -> f64 {
    StandardNormal.sample(rng)
}

/// inv_logit(x) = 1 / (1 + e^{−x}).
fn inv_logit(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

fn sampler_error(name: &str, e: impl std::fmt::Display) -> String {
    format!("{name}_rng: {e}")
}

impl Uni {
    /// The family called `name`, if univariate.
    pub(crate) fn from_name(name: &str) -> Option<Uni> {
        UNIVARIATE.iter().find(|r| r.0 == name).map(|r| r.1)
    }

    fn row(self) -> &'static (&'static str, Uni, Params) {
        UNIVARIATE
            .iter()
            .find(|r| r.1 == self)
            .expect("every Uni has a row in UNIVARIATE")
    }

    /// The base name.
    pub(crate) fn name(self) -> &'static str {
        self.row().0
    }

    fn params(self) -> Params {
        self.row().2
    }

    /// Whether draws are integers.
    pub(crate) fn discrete(self) -> bool {
        use Uni::*;
        matches!(
            self,
            Bernoulli
                | BernoulliLogit
                | Binomial
                | BinomialLogit
                | Poisson
                | PoissonLog
                | NegBinomial2
                | NegBinomial2Log
                | BetaBinomial
        )
    }

    /// Check the arguments of one draw against their domains.
    fn check(self, p: &[f64]) -> Result<(), String> {
        let name = self.name();
        for (&(pname, d), &v) in self.params().iter().zip(p) {
            if !d.holds(v) {
                return Err(format!(
                    "{name}_rng: {pname} is {v}, but must be {}",
                    d.describe()
                ));
            }
        }
        match self {
            Uni::Uniform if p[1] <= p[0] => Err(format!(
                "{name}_rng: upper is {}, but must be greater than lower ({})",
                p[1], p[0]
            )),
            Uni::Poisson if p[0] >= POISSON_MAX_RATE => Err(format!(
                "{name}_rng: lambda is {}, but must be less than 2^30",
                p[0]
            )),
            Uni::PoissonLog if p[0].exp() >= POISSON_MAX_RATE => Err(format!(
                "{name}_rng: exp(alpha) is {}, but must be less than 2^30",
                p[0].exp()
            )),
            _ => Ok(()),
        }
    }

    /// One draw with checked arguments.
    pub(crate) fn sample(self, p: &[f64], rng: &mut dyn RngCore) -> Result<f64, String> {
        let name = self.name();
        Ok(match self {
            Uni::Normal => p[0] + p[1] * std_normal(rng),
            Uni::StudentT => {
                let t: f64 = StudentT::new(p[0])
                    .map_err(|e| sampler_error(name, e))?
                    .sample(rng);
                p[1] + p[2] * t
            }
            Uni::Cauchy => Cauchy::new(p[0], p[1])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::Laplace => {
                let (a, b): (f64, f64) = (Exp1.sample(rng), Exp1.sample(rng));
                p[0] + p[1] * (a - b)
            }
            Uni::Logistic => {
                let u = open01(rng);
                p[0] + p[1] * (u / (1.0 - u)).ln()
            }
            Uni::Lognormal => (p[0] + p[1] * std_normal(rng)).exp(),
            Uni::Exponential => {
                let e: f64 = Exp1.sample(rng);
                e / p[0]
            }
            Uni::Gamma => Gamma::new(p[0], 1.0 / p[1])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::InvGamma => {
                p[1] / Gamma::new(p[0], 1.0)
                    .map_err(|e| sampler_error(name, e))?
                    .sample(rng)
            }
            Uni::Beta => Beta::new(p[0], p[1])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::HalfNormal => (p[0] * std_normal(rng)).abs(),
            Uni::HalfCauchy => Cauchy::new(0.0, p[0])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng)
                .abs(),
            Uni::Uniform => p[0] + (p[1] - p[0]) * open01(rng),
            Uni::Bernoulli => f64::from(u8::from(open01(rng) < p[0])),
            Uni::BernoulliLogit => f64::from(u8::from(open01(rng) < inv_logit(p[0]))),
            Uni::Binomial => binomial(p[0], p[1], rng)?,
            Uni::BinomialLogit => binomial(p[0], inv_logit(p[1]), rng)?,
            Uni::Poisson => poisson(name, p[0], rng)?,
            Uni::PoissonLog => poisson(name, p[0].exp(), rng)?,
            Uni::NegBinomial2 => neg_binomial_2(name, p[0], p[1], rng)?,
            Uni::NegBinomial2Log => neg_binomial_2(name, p[0].exp(), p[1], rng)?,
            Uni::BetaBinomial => {
                let theta = Beta::new(p[1], p[2])
                    .map_err(|e| sampler_error(name, e))?
                    .sample(rng);
                binomial(p[0], theta, rng)?
            }
            Uni::Weibull => Weibull::new(p[1], p[0])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::Gumbel => Gumbel::new(p[0], p[1])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::Pareto => Pareto::new(p[0], p[1])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::SkewNormal => SkewNormal::new(p[0], p[1], p[2])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::VonMises => von_mises(p[0], p[1], rng),
            Uni::ChiSquare => ChiSquared::new(p[0])
                .map_err(|e| sampler_error(name, e))?
                .sample(rng),
            Uni::InvChiSquare => {
                1.0 / ChiSquared::new(p[0])
                    .map_err(|e| sampler_error(name, e))?
                    .sample(rng)
            }
            Uni::ScaledInvChiSquare => {
                p[0] * p[1] * p[1]
                    / ChiSquared::new(p[0])
                        .map_err(|e| sampler_error(name, e))?
                        .sample(rng)
            }
            Uni::ExpModNormal => {
                let e: f64 = Exp1.sample(rng);
                p[0] + p[1] * std_normal(rng) + e / p[2]
            }
        })
    }
}

/// Binomial(n, θ) with n a checked count.
pub(crate) fn binomial(n: f64, theta: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    let b = Binomial::new(n as u64, theta.clamp(0.0, 1.0)).map_err(|e| sampler_error("binomial", e))?;
    Ok(b.sample(rng) as f64)
}

/// Poisson(λ) for 0 ≤ λ < 2³⁰ (0 draws 0).
fn poisson(name: &str, lambda: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    if lambda >= POISSON_MAX_RATE {
        return Err(format!(
            "{name}_rng: the Poisson rate is {lambda}, but must be less than 2^30"
        ));
    }
    if lambda <= 0.0 {
        return Ok(0.0);
    }
    Ok(Poisson::new(lambda)
        .map_err(|e| sampler_error(name, e))?
        .sample(rng))
}

/// neg_binomial_2(μ, φ) as Poisson(λ) with λ ~ Gamma(φ, rate φ/μ) (mean μ, variance μ + μ²/φ).
fn neg_binomial_2(name: &str, mu: f64, phi: f64, rng: &mut dyn RngCore) -> Result<f64, String> {
    let lambda = Gamma::new(phi, mu / phi)
        .map_err(|e| sampler_error(name, e))?
        .sample(rng);
    poisson(name, lambda, rng)
}

/// von_mises(μ, κ) by Best and Fisher (1979), as Stan: a value in [m − π, m + π] with
/// m = μ mod 2π in [0, 2π), uniform for κ below 1.4e-8.
fn von_mises(mu: f64, kappa: f64, rng: &mut dyn RngCore) -> f64 {
    let m = mu.rem_euclid(2.0 * PI);
    if kappa < 1.4e-8 {
        return m + PI * (2.0 * open01(rng) - 1.0);
    }
    // ρ = (τ − √(2τ)) / 2κ with τ = 1 + √(1 + 4κ²), written without cancellation at small κ
    let root = (1.0 + 4.0 * kappa * kappa).sqrt();
    let tau = 1.0 + root;
    let tau_m2 = 4.0 * kappa * kappa / (root + 1.0);
    let rho = tau * tau_m2 / (tau + (2.0 * tau).sqrt()) / (2.0 * kappa);
    let r = (1.0 + rho * rho) / (2.0 * rho);
    let w = loop {
        let z = (PI * open01(rng)).cos();
        let f = (1.0 + r * z) / (r + z);
        let c = kappa * (r - f);
        let u2 = open01(rng);
        if c * (2.0 - c) > u2 || (c / u2).ln() + 1.0 - c >= 0.0 {
            break f;
        }
    };
    let sign = if open01(rng) < 0.5 { -1.0 } else { 1.0 };
    m + sign * w.clamp(-1.0, 1.0).acos()
}

#[cfg(test)]
mod tests;
