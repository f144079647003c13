//! The name table of the built-in distributions: one row per family, with its arguments,
//! outcome support, log density, CDFs and predictive quantity.

use super::{
    bernoulli, beta, beta_binomial, binomial, categorical, chi_square, dirichlet, exp_mod_normal,
    exponential, gamma_cdf, gumbel, laplace, lkj, logistic, multi_normal, multinomial, neg_binomial, normal,
    ordered, pareto, poisson, skew_normal, student_t, uniform, von_mises, weibull, wishart, R,
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
    cdfs(
        row(
            "binomial",
            2,
            Outcome::Count,
            binomial::binomial,
            binomial::probability,
        ),
        binomial::binomial_lcdf,
        binomial::binomial_lccdf,
    ),
    row(
        "binomial_logit",
        2,
        Outcome::Count,
        binomial::binomial_logit,
        binomial::probability_logit,
    ),
    cdfs(
        row("poisson", 1, Outcome::Count, poisson::poisson, poisson::mean),
        poisson::poisson_lcdf,
        poisson::poisson_lccdf,
    ),
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
    // the families real models reach for next (LANGUAGE.md's second list)
    cdfs(
        row(
            "neg_binomial_2",
            2,
            Outcome::Count,
            neg_binomial::neg_binomial_2,
            neg_binomial::mean,
        ),
        neg_binomial::neg_binomial_2_lcdf,
        neg_binomial::neg_binomial_2_lccdf,
    ),
    row(
        "neg_binomial_2_log",
        2,
        Outcome::Count,
        neg_binomial::neg_binomial_2_log,
        neg_binomial::mean_log,
    ),
    cdfs(
        row(
            "beta_binomial",
            3,
            Outcome::Count,
            beta_binomial::beta_binomial,
            beta_binomial::mean,
        ),
        beta_binomial::beta_binomial_lcdf,
        beta_binomial::beta_binomial_lccdf,
    ),
    row(
        "categorical",
        1,
        Outcome::Category,
        categorical::categorical,
        categorical::probabilities_simplex,
    ),
    row(
        "multinomial",
        1,
        Outcome::Count,
        multinomial::multinomial,
        multinomial::probabilities,
    ),
    row(
        "dirichlet",
        1,
        Outcome::RealVector,
        dirichlet::dirichlet,
        dirichlet::mean,
    ),
    row(
        "lkj_corr_cholesky",
        1,
        Outcome::RealVector,
        lkj::lkj_corr_cholesky,
        lkj::shape,
    ),
    row("lkj_corr", 1, Outcome::RealVector, lkj::lkj_corr, lkj::shape),
    cdfs(
        row(
            "weibull",
            2,
            Outcome::NonNegative,
            weibull::weibull,
            weibull::mean,
        ),
        weibull::weibull_lcdf,
        weibull::weibull_lccdf,
    ),
    cdfs(
        row("gumbel", 2, Outcome::Real, gumbel::gumbel, gumbel::mean),
        gumbel::gumbel_lcdf,
        gumbel::gumbel_lccdf,
    ),
    cdfs(
        row("pareto", 2, Outcome::Positive, pareto::pareto, pareto::mean),
        pareto::pareto_lcdf,
        pareto::pareto_lccdf,
    ),
    cdfs(
        row(
            "skew_normal",
            3,
            Outcome::Real,
            skew_normal::skew_normal,
            skew_normal::mean,
        ),
        skew_normal::skew_normal_lcdf,
        skew_normal::skew_normal_lccdf,
    ),
    cdfs(
        row(
            "von_mises",
            2,
            Outcome::Real,
            von_mises::von_mises,
            normal::location,
        ),
        von_mises::von_mises_lcdf,
        von_mises::von_mises_lccdf,
    ),
    cdfs(
        row(
            "chi_square",
            1,
            Outcome::Positive,
            chi_square::chi_square,
            chi_square::mean,
        ),
        chi_square::chi_square_lcdf,
        chi_square::chi_square_lccdf,
    ),
    cdfs(
        row(
            "inv_chi_square",
            1,
            Outcome::Positive,
            chi_square::inv_chi_square,
            chi_square::inv_mean,
        ),
        chi_square::inv_chi_square_lcdf,
        chi_square::inv_chi_square_lccdf,
    ),
    cdfs(
        row(
            "scaled_inv_chi_square",
            2,
            Outcome::Positive,
            chi_square::scaled_inv_chi_square,
            chi_square::scaled_mean,
        ),
        chi_square::scaled_inv_chi_square_lcdf,
        chi_square::scaled_inv_chi_square_lccdf,
    ),
    cdfs(
        row(
            "exp_mod_normal",
            3,
            Outcome::Real,
            exp_mod_normal::exp_mod_normal,
            exp_mod_normal::mean,
        ),
        exp_mod_normal::exp_mod_normal_lcdf,
        exp_mod_normal::exp_mod_normal_lccdf,
    ),
    row(
        "ordered_logistic",
        2,
        Outcome::Category,
        ordered::ordered_logistic,
        ordered::location,
    ),
    row(
        "ordered_probit",
        2,
        Outcome::Category,
        ordered::ordered_probit,
        ordered::location,
    ),
    row(
        "wishart_cholesky",
        2,
        Outcome::RealVector,
        wishart::wishart_cholesky,
        wishart::dof,
    ),
    row(
        "inv_wishart_cholesky",
        2,
        Outcome::RealVector,
        wishart::inv_wishart_cholesky,
        wishart::dof,
    ),
    row(
        "multi_student_t",
        3,
        Outcome::RealVector,
        multi_normal::multi_student_t,
        multi_normal::location_t,
    ),
];

/// The family of that name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    DISTRIBUTIONS.iter().find(|e| e.name == name)
}
