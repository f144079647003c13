//! The name table of the built-in distributions: one row per family, with its arguments,
//! outcome support, log density, CDFs and predictive quantity.

use super::{
    bernoulli, beta, binomial, categorical, exponential, gamma_cdf, laplace, logistic, multi_normal, normal,
    poisson, student_t, uniform, R,
};
use crate::graph::{Graph, NodeId};

/// The support of a distribution's outcome (for [`super::check_outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Any real number.
    Real,
    /// x > 0.
    Positive,
    /// x ≥ 0.
    NonNegative,
    /// 0 < x < 1.
    Unit,
    /// Real, checked against its arguments at evaluation (`uniform`).
    Any,
    /// A real vector (or each row of a matrix).
    RealVector,
    /// 0 or 1.
    Binary,
    /// 0, 1, 2, ...
    Count,
    /// 1, ..., K.
    Category,
}

/// Builds a per-observation node from the outcome and the arguments.
pub type DensityFn = fn(&mut Graph, NodeId, &[NodeId]) -> R;
/// Builds the predictive quantity from the arguments.
pub type QuantityFn = fn(&mut Graph, &[NodeId]) -> R;

/// One distribution family.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The name used in `~` and as the prefix of `_lpdf`.
    pub name: &'static str,
    /// Number of arguments after the outcome.
    pub nargs: usize,
    /// The outcome's support.
    pub outcome: Outcome,
    /// Per-observation log density (pmf for discrete families).
    pub lpdf: DensityFn,
    /// Per-observation log CDF, when available.
    pub lcdf: Option<DensityFn>,
    /// Per-observation log complementary CDF, when available.
    pub lccdf: Option<DensityFn>,
    /// The predictive quantity for reports.
    pub quantity: QuantityFn,
}

const fn row(
    name: &'static str,
    nargs: usize,
    outcome: Outcome,
    lpdf: DensityFn,
    quantity: QuantityFn,
) -> Entry {
    Entry {
        name,
        nargs,
        outcome,
        lpdf,
        lcdf: None,
        lccdf: None,
        quantity,
    }
}

const fn cdfs(e: Entry, lcdf: DensityFn, lccdf: DensityFn) -> Entry {
    Entry {
        lcdf: Some(lcdf),
        lccdf: Some(lccdf),
        ..e
    }
}

/// Every built-in distribution, in LANGUAGE.md's order.
pub const DISTRIBUTIONS: &[Entry] = &[
    cdfs(
        row("normal", 2, Outcome::Real, normal::normal, normal::location),
        normal::normal_lcdf,
        normal::normal_lccdf,
    ),
    cdfs(
        row(
            "student_t",
            3,
            Outcome::Real,
            student_t::student_t,
            student_t::location,
        ),
        student_t::student_t_lcdf,
        student_t::student_t_lccdf,
    ),
    cdfs(
        row("cauchy", 2, Outcome::Real, student_t::cauchy, normal::location),
        student_t::cauchy_lcdf,
        student_t::cauchy_lccdf,
    ),
    cdfs(
        row("laplace", 2, Outcome::Real, laplace::laplace, normal::location),
        laplace::laplace_lcdf,
        laplace::laplace_lccdf,
    ),
    cdfs(
        row("logistic", 2, Outcome::Real, logistic::logistic, normal::location),
        logistic::logistic_lcdf,
        logistic::logistic_lccdf,
    ),
    cdfs(
        row(
            "lognormal",
            2,
            Outcome::Positive,
            normal::lognormal,
            normal::lognormal_mean,
        ),
        normal::lognormal_lcdf,
        normal::lognormal_lccdf,
    ),
    cdfs(
        row(
            "exponential",
            1,
            Outcome::NonNegative,
            exponential::exponential,
            exponential::exponential_mean,
        ),
        exponential::exponential_lcdf,
        exponential::exponential_lccdf,
    ),
    cdfs(
        row(
            "gamma",
            2,
            Outcome::Positive,
            exponential::gamma,
            exponential::gamma_mean,
        ),
        gamma_cdf::gamma_lcdf,
        gamma_cdf::gamma_lccdf,
    ),
    cdfs(
        row(
            "inv_gamma",
            2,
            Outcome::Positive,
            exponential::inv_gamma,
            exponential::inv_gamma_location,
        ),
        gamma_cdf::inv_gamma_lcdf,
        gamma_cdf::inv_gamma_lccdf,
    ),
    cdfs(
        row("beta", 2, Outcome::Unit, beta::beta, beta::mean),
        beta::beta_lcdf,
        beta::beta_lccdf,
    ),
    cdfs(
        row(
            "half_normal",
            1,
            Outcome::NonNegative,
            normal::half_normal,
            normal::half_normal_mean,
        ),
        normal::half_normal_lcdf,
        normal::half_normal_lccdf,
    ),
    cdfs(
        row(
            "half_cauchy",
            1,
            Outcome::NonNegative,
            student_t::half_cauchy,
            student_t::half_cauchy_median,
        ),
        student_t::half_cauchy_lcdf,
        student_t::half_cauchy_lccdf,
    ),
    cdfs(
        row("uniform", 2, Outcome::Any, uniform::uniform, uniform::mean),
        uniform::uniform_lcdf,
        uniform::uniform_lccdf,
    ),
    row(
        "multi_normal",
        2,
        Outcome::RealVector,
        multi_normal::multi_normal,
        multi_normal::location,
    ),
    row(
        "multi_normal_cholesky",
        2,
        Outcome::RealVector,
        multi_normal::multi_normal_cholesky,
        multi_normal::location,
    ),
    row(
        "bernoulli",
        1,
        Outcome::Binary,
        bernoulli::bernoulli,
        bernoulli::probability,
    ),
    row(
        "bernoulli_logit",
        1,
        Outcome::Binary,
        bernoulli::bernoulli_logit,
        bernoulli::probability_logit,
    ),
    row(
        "binomial",
        2,
        Outcome::Count,
        binomial::binomial,
        binomial::probability,
    ),
    row(
        "binomial_logit",
        2,
        Outcome::Count,
        binomial::binomial_logit,
        binomial::probability_logit,
    ),
    row("poisson", 1, Outcome::Count, poisson::poisson, poisson::mean),
    row(
        "poisson_log",
        1,
        Outcome::Count,
        poisson::poisson_log,
        poisson::mean_log,
    ),
    row(
        "categorical_logit",
        1,
        Outcome::Category,
        categorical::categorical_logit,
        categorical::probabilities,
    ),
];

/// The family of that name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    DISTRIBUTIONS.iter().find(|e| e.name == name)
}
