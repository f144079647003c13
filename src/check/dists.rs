//! The distributions of LANGUAGE.md with their signatures and Stan's vectorisation rules.

use super::types::{DistForm, Shape};

/// The support a parameter (or outcome) must lie in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Any real.
    Real,
    /// > 0.
    Positive,
    /// In [0, 1].
    Unit,
    /// An integer (count, trials).
    Int,
}

/// How a distribution's arguments are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Univariate, vectorised elementwise over the outcome and every argument.
    Univariate,
    /// `multi_normal(mu, Sigma)` / `multi_normal_cholesky(mu, L)`: vector outcome, or a
    /// matrix with one outcome per row.
    MultiNormal,
    /// `categorical_logit(beta)`: int with vector logits, or `ints[N]` with a `matrix[N, K]` (or one vector).
    Categorical,
    /// `categorical(theta)`: int or `ints[N]` with one `vector[K]` of probabilities.
    CategoricalSimplex,
    /// `multinomial(theta)`: `ints[K]` counts with a `vector[K]`.
    Multinomial,
    /// `dirichlet(alpha)`: a `vector[K]` outcome with a `vector[K]`.
    Dirichlet,
    /// `lkj_corr(eta)`, `lkj_corr_cholesky(eta)`: a square matrix with a real.
    Lkj,
    /// `wishart_cholesky(nu, L_S)`, `inv_wishart_cholesky(nu, L_S)`: square matrices of one
    /// size with a real.
    Wishart,
    /// `ordered_logistic(eta, c)`, `ordered_probit(eta, c)`: int or `ints[N]`, `eta` a real or
    /// `vector[N]`, `c` a `vector[K - 1]`.
    Ordinal,
}

/// One distribution.
#[derive(Debug, Clone, Copy)]
pub struct DistSpec {
    /// Base name.
    pub name: &'static str,
    /// Parameter names and supports, in order.
    pub params: &'static [(&'static str, Support)],
    /// Int outcomes (`_lpmf`).
    pub discrete: bool,
    /// Argument shaping.
    pub family: Family,
}

use Support::{Int, Positive, Real, Unit};

const fn multi(
    name: &'static str,
    params: &'static [(&'static str, Support)],
    discrete: bool,
    family: Family,
) -> DistSpec {
    DistSpec {
        name,
        params,
        discrete,
        family,
    }
}

const fn uni(name: &'static str, params: &'static [(&'static str, Support)], discrete: bool) -> DistSpec {
    DistSpec {
        name,
        params,
        discrete,
        family: Family::Univariate,
    }
}

/// Every distribution.
pub const DISTS: &[DistSpec] = &[
    uni("normal", &[("mu", Real), ("sigma", Positive)], false),
    uni(
        "student_t",
        &[("nu", Positive), ("mu", Real), ("sigma", Positive)],
        false,
    ),
    uni("cauchy", &[("mu", Real), ("sigma", Positive)], false),
    uni("laplace", &[("mu", Real), ("b", Positive)], false),
    uni("logistic", &[("mu", Real), ("s", Positive)], false),
    uni("lognormal", &[("mu", Real), ("sigma", Positive)], false),
    uni("exponential", &[("lambda", Positive)], false),
    uni("gamma", &[("alpha", Positive), ("beta", Positive)], false),
    uni("inv_gamma", &[("alpha", Positive), ("beta", Positive)], false),
    uni("beta", &[("a", Positive), ("b", Positive)], false),
    uni("half_normal", &[("sigma", Positive)], false),
    uni("half_cauchy", &[("sigma", Positive)], false),
    uni("uniform", &[("lower", Real), ("upper", Real)], false),
    DistSpec {
        name: "multi_normal",
        params: &[("mu", Real), ("Sigma", Real)],
        discrete: false,
        family: Family::MultiNormal,
    },
    DistSpec {
        name: "multi_normal_cholesky",
        params: &[("mu", Real), ("L", Real)],
        discrete: false,
        family: Family::MultiNormal,
    },
    uni("bernoulli", &[("theta", Unit)], true),
    uni("bernoulli_logit", &[("alpha", Real)], true),
    uni("binomial", &[("N", Int), ("theta", Unit)], true),
    uni("binomial_logit", &[("N", Int), ("alpha", Real)], true),
    uni("poisson", &[("lambda", Positive)], true),
    uni("poisson_log", &[("alpha", Real)], true),
    DistSpec {
        name: "categorical_logit",
        params: &[("beta", Real)],
        discrete: true,
        family: Family::Categorical,
    },
    uni("neg_binomial_2", &[("mu", Positive), ("phi", Positive)], true),
    uni("neg_binomial_2_log", &[("eta", Real), ("phi", Positive)], true),
    uni(
        "beta_binomial",
        &[("N", Int), ("alpha", Positive), ("beta", Positive)],
        true,
    ),
    multi(
        "categorical",
        &[("theta", Real)],
        true,
        Family::CategoricalSimplex,
    ),
    multi("multinomial", &[("theta", Real)], true, Family::Multinomial),
    multi("dirichlet", &[("alpha", Real)], false, Family::Dirichlet),
    multi("lkj_corr_cholesky", &[("eta", Positive)], false, Family::Lkj),
    multi("lkj_corr", &[("eta", Positive)], false, Family::Lkj),
    uni("weibull", &[("alpha", Positive), ("sigma", Positive)], false),
    uni("gumbel", &[("mu", Real), ("beta", Positive)], false),
    uni("pareto", &[("y_min", Positive), ("alpha", Positive)], false),
    uni(
        "skew_normal",
        &[("xi", Real), ("omega", Positive), ("alpha", Real)],
        false,
    ),
    uni("von_mises", &[("mu", Real), ("kappa", Positive)], false),
    uni("chi_square", &[("nu", Positive)], false),
    uni("inv_chi_square", &[("nu", Positive)], false),
    uni(
        "scaled_inv_chi_square",
        &[("nu", Positive), ("s", Positive)],
        false,
    ),
    uni(
        "exp_mod_normal",
        &[("mu", Real), ("sigma", Positive), ("lambda", Positive)],
        false,
    ),
    multi(
        "ordered_logistic",
        &[("eta", Real), ("c", Real)],
        true,
        Family::Ordinal,
    ),
    multi(
        "ordered_probit",
        &[("eta", Real), ("c", Real)],
        true,
        Family::Ordinal,
    ),
    multi(
        "wishart_cholesky",
        &[("nu", Positive), ("L_S", Real)],
        false,
        Family::Wishart,
    ),
    multi(
        "inv_wishart_cholesky",
        &[("nu", Positive), ("L_S", Real)],
        false,
        Family::Wishart,
    ),
    multi(
        "multi_student_t",
        &[("nu", Positive), ("mu", Real), ("Sigma", Real)],
        false,
        Family::MultiNormal,
    ),
];

/// The distributions with `_lcdf` and `_lccdf` (so `T[L, U]` truncation), in the order of
/// [`DISTS`]: the families whose CDFs `dist::DISTRIBUTIONS` provides (a test keeps the two
/// in step).
pub const WITH_CDF: &[&str] = &[
    "normal",
    "student_t",
    "cauchy",
    "laplace",
    "logistic",
    "lognormal",
    "exponential",
    "gamma",
    "inv_gamma",
    "beta",
    "half_normal",
    "half_cauchy",
    "uniform",
    "binomial",
    "poisson",
    "neg_binomial_2",
    "beta_binomial",
    "weibull",
    "gumbel",
    "pareto",
    "skew_normal",
    "von_mises",
    "chi_square",
    "inv_chi_square",
    "scaled_inv_chi_square",
    "exp_mod_normal",
];

/// The distribution called `name`.
pub fn lookup(name: &str) -> Option<&'static DistSpec> {
    DISTS.iter().find(|d| d.name == name)
}

/// Split `normal_lpdf` into (`normal`, `Lpdf`, the suffix as written).
pub fn split_form(func: &str) -> Option<(&str, DistForm, &'static str)> {
    for (suffix, form) in [
        ("_lpdf", DistForm::Lpdf),
        ("_lpmf", DistForm::Lpdf),
        ("_lcdf", DistForm::Lcdf),
        ("_lccdf", DistForm::Lccdf),
    ] {
        if let Some(base) = func.strip_suffix(suffix) {
            let s: &'static str = suffix;
            return Some((base, form, s));
        }
    }
    None
}

impl DistSpec {
    /// `normal(mu: real, sigma: real>0)` as shown in help lines.
    pub fn signature(&self) -> String {
        let n = self.name;
        match self.family {
            Family::MultiNormal if n == "multi_student_t" => return format!("{n}(nu: real > 0, mu: vector[n], Sigma: matrix[n, n]) for an outcome of vector[n], or a matrix with one draw per row"),
            Family::MultiNormal => return format!("{}({}: vector[n], {}: matrix[n, n]) for an outcome of vector[n], or a matrix with one draw per row", self.name, self.params[0].0, self.params[1].0),
            Family::Categorical => return "categorical_logit(beta: vector[K]) for an outcome int in 1..K or ints[N]; or beta: matrix[N, K] (one row of logits per outcome) for ints[N]".to_string(),
            Family::CategoricalSimplex => return "categorical(theta: vector[K], a simplex) for an outcome int in 1..K or ints[N]".to_string(),
            Family::Multinomial => return "multinomial(theta: vector[K], a simplex) for an outcome of ints[K] (counts)".to_string(),
            Family::Dirichlet => return "dirichlet(alpha: vector[K] > 0) for an outcome of vector[K] (a simplex)".to_string(),
            Family::Lkj if n == "lkj_corr" => return "lkj_corr(eta: real > 0) for an outcome of matrix[K, K] (a correlation matrix)".to_string(),
            Family::Lkj => return "lkj_corr_cholesky(eta: real > 0) for an outcome of matrix[K, K] (the Cholesky factor of a correlation matrix)".to_string(),
            Family::Wishart => return format!("{n}(nu: real > K - 1, L_S: matrix[K, K]) for an outcome of matrix[K, K] (a Cholesky factor)"),
            Family::Ordinal => return format!("{n}(eta: real or vector[N], c: vector[K - 1], increasing) for an outcome int in 1..K or ints[N]"),
            Family::Univariate => {}
        }
        let ps: Vec<String> = self
            .params
            .iter()
            .map(|(n, s)| match s {
                Real => format!("{n}: real"),
                Positive => format!("{n}: real > 0"),
                Unit => format!("{n}: real in [0, 1]"),
                Int => format!("{n}: int"),
            })
            .collect();
        let outcome = if self.discrete {
            "int or ints"
        } else {
            "real, vector or matrix"
        };
        let extra = "; arguments are scalars or match the outcome's shape";
        format!(
            "{}({}) for an outcome of {outcome}{extra}",
            self.name,
            ps.join(", ")
        )
    }

    /// Whether the family has `_lcdf` and `_lccdf` ([`WITH_CDF`]).
    pub fn has_cdf(&self) -> bool {
        WITH_CDF.contains(&self.name)
    }

    /// The valid function suffixes.
    pub fn forms(&self) -> &'static [&'static str] {
        // The CDFs exist where the density library provides them.
        let has_cdf = self.has_cdf();
        match (self.discrete, self.family) {
            (true, Family::Univariate) if has_cdf => &["_lpmf", "_lcdf", "_lccdf"],
            (true, _) => &["_lpmf"],
            (false, Family::Univariate) if has_cdf => &["_lpdf", "_lcdf", "_lccdf"],
            (false, _) => &["_lpdf"],
        }
    }

    /// Check the outcome and argument shapes; on error, the index of the culprit (0 = the
    /// outcome) and a message.
    ///
    /// # Errors
    /// Wrong argument count, an int-only argument that is real, or shapes that disagree.
    pub fn check_shapes(&self, outcome: Shape, args: &[Shape]) -> Result<(), (usize, String)> {
        if args.len() != self.params.len() {
            return Err((
                usize::MAX,
                format!(
                    "`{}` takes {} argument{}, found {}",
                    self.name,
                    self.params.len(),
                    if self.params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        if self.discrete && !outcome.is_integer() {
            return Err((
                0,
                format!(
                    "`{}` is a distribution over integers, but the outcome is {outcome}",
                    self.name
                ),
            ));
        }
        for (i, ((pname, support), s)) in self.params.iter().zip(args).enumerate() {
            if *support == Int && !s.is_integer() {
                return Err((
                    i + 1,
                    format!("`{pname}` of `{}` must be an int or ints, found {s}", self.name),
                ));
            }
        }
        match self.family {
            Family::Univariate => univariate(outcome, args),
            Family::MultiNormal if self.name == "multi_student_t" => {
                if !args[0].is_scalar() {
                    return Err((1, format!("`nu` must be a real, found {}", args[0])));
                }
                multi_normal(outcome, &args[1..]).map_err(|(i, m)| (i + usize::from(i > 0), m))
            }
            Family::MultiNormal => multi_normal(outcome, args),
            Family::Categorical => categorical(outcome, args[0]),
            Family::CategoricalSimplex => simplex_categorical(outcome, args[0]),
            Family::Multinomial | Family::Dirichlet => same_vector(self.name, outcome, args[0]),
            Family::Lkj => lkj(self.name, outcome, args[0]),
            Family::Wishart => wishart(self.name, outcome, args),
            Family::Ordinal => ordinal(outcome, args),
        }
    }
}

fn container(s: Shape) -> Option<Shape> {
    match s {
        Shape::Int | Shape::Real => None,
        Shape::Ints(n) | Shape::Vector(n) => Some(Shape::Vector(n)),
        m => Some(m),
    }
}

fn univariate(outcome: Shape, args: &[Shape]) -> Result<(), (usize, String)> {
    let mut first: Option<(usize, Shape)> = container(outcome).map(|c| (0, c));
    for (i, s) in args.iter().enumerate() {
        let Some(c) = container(*s) else { continue };
        match first {
            None => first = Some((i + 1, c)),
            Some((j, f)) if f != c => {
                let what = if j == 0 {
                    "the outcome".to_string()
                } else {
                    format!("argument {j}")
                };
                return Err((i + 1, format!("argument {} is {s}, but {what} is {f}", i + 1)));
            }
            _ => {}
        }
    }
    Ok(())
}

fn multi_normal(outcome: Shape, args: &[Shape]) -> Result<(), (usize, String)> {
    let n = match outcome {
        Shape::Vector(n) | Shape::Matrix(_, n) => n,
        s => {
            return Err((
                0,
                format!("the outcome must be a vector or a matrix of row vectors, found {s}"),
            ))
        }
    };
    if args[0].to_real() != Shape::Vector(n) && !args[0].is_scalar() {
        return Err((
            1,
            format!(
                "the mean must be vector[{n}] to match the outcome, found {}",
                args[0]
            ),
        ));
    }
    if args[1] != Shape::Matrix(n, n) {
        return Err((
            2,
            format!(
                "the matrix must be matrix[{n}, {n}] to match the outcome, found {}",
                args[1]
            ),
        ));
    }
    Ok(())
}

fn categorical(outcome: Shape, beta: Shape) -> Result<(), (usize, String)> {
    match (outcome, beta) {
        (Shape::Int, Shape::Vector(_)) | (Shape::Ints(_), Shape::Vector(_)) => Ok(()),
        (Shape::Ints(n), Shape::Matrix(r, _)) if n == r => Ok(()),
        (Shape::Ints(n), Shape::Matrix(r, _)) => Err((
            1,
            format!("the logits need one row per outcome: {n} outcomes but {r} rows"),
        )),
        (o, b) => Err((
            1,
            format!("`categorical_logit` cannot take logits of {b} for an outcome of {o}"),
        )),
    }
}

fn simplex_categorical(outcome: Shape, theta: Shape) -> Result<(), (usize, String)> {
    match theta {
        Shape::Vector(_) if matches!(outcome, Shape::Int | Shape::Ints(_)) => Ok(()),
        _ => Err((
            1,
            format!("`categorical` takes one vector of probabilities, found {theta}"),
        )),
    }
}

fn same_vector(name: &str, outcome: Shape, arg: Shape) -> Result<(), (usize, String)> {
    let k = match (name, outcome) {
        ("multinomial", Shape::Ints(k)) | ("dirichlet", Shape::Vector(k)) => k,
        (_, o) => {
            let want = if name == "multinomial" {
                "ints[K] (counts)"
            } else {
                "vector[K] (a simplex)"
            };
            return Err((0, format!("the outcome of `{name}` must be {want}, found {o}")));
        }
    };
    if arg.to_real() != Shape::Vector(k) {
        return Err((
            1,
            format!("the argument must be vector[{k}] to match the outcome, found {arg}"),
        ));
    }
    Ok(())
}

fn square(s: Shape) -> Option<usize> {
    match s {
        Shape::Matrix(r, c) if r == c => Some(r),
        _ => None,
    }
}

fn lkj(name: &str, outcome: Shape, eta: Shape) -> Result<(), (usize, String)> {
    if square(outcome).is_none() {
        let what = if name == "lkj_corr" {
            "a correlation matrix"
        } else {
            "the Cholesky factor of a correlation matrix"
        };
        return Err((
            0,
            format!("the outcome of `{name}` must be a square matrix ({what}), found {outcome}"),
        ));
    }
    if !eta.is_scalar() {
        return Err((1, format!("`eta` must be a real, found {eta}")));
    }
    Ok(())
}

fn wishart(name: &str, outcome: Shape, args: &[Shape]) -> Result<(), (usize, String)> {
    let Some(k) = square(outcome) else {
        return Err((
            0,
            format!("the outcome of `{name}` must be a square matrix (a Cholesky factor), found {outcome}"),
        ));
    };
    if !args[0].is_scalar() {
        return Err((1, format!("`nu` must be a real, found {}", args[0])));
    }
    if args[1] != Shape::Matrix(k, k) {
        return Err((
            2,
            format!(
                "`L_S` must be matrix[{k}, {k}] to match the outcome, found {}",
                args[1]
            ),
        ));
    }
    Ok(())
}

fn ordinal(outcome: Shape, args: &[Shape]) -> Result<(), (usize, String)> {
    match (outcome, args[0]) {
        (_, e) if e.is_scalar() => {}
        (Shape::Ints(n), e) if e.to_real() == Shape::Vector(n) => {}
        (o, e) => {
            return Err((
                1,
                format!("`eta` must be a real or have one entry per outcome ({o}), found {e}"),
            ))
        }
    }
    match args[1] {
        Shape::Vector(k) if k >= 1 => Ok(()),
        c => Err((
            2,
            format!("the cutpoints `c` must be a vector of at least one entry, found {c}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_vectorises_over_matching_vectors_and_scalars() {
        let n = lookup("normal").unwrap();
        assert!(n
            .check_shapes(Shape::Vector(3), &[Shape::Real, Shape::Vector(3)])
            .is_ok());
        assert_eq!(
            n.check_shapes(Shape::Vector(3), &[Shape::Vector(2), Shape::Real])
                .unwrap_err()
                .0,
            1
        );
    }

    #[test]
    fn discrete_distributions_need_int_outcomes() {
        let b = lookup("bernoulli_logit").unwrap();
        assert!(b.check_shapes(Shape::Ints(4), &[Shape::Vector(4)]).is_ok());
        assert_eq!(
            b.check_shapes(Shape::Vector(4), &[Shape::Vector(4)])
                .unwrap_err()
                .0,
            0
        );
    }

    #[test]
    fn multi_normal_needs_a_square_matching_matrix() {
        let m = lookup("multi_normal").unwrap();
        assert!(m
            .check_shapes(Shape::Vector(2), &[Shape::Vector(2), Shape::Matrix(2, 2)])
            .is_ok());
        assert!(m
            .check_shapes(Shape::Vector(2), &[Shape::Vector(2), Shape::Matrix(3, 3)])
            .is_err());
    }

    #[test]
    fn the_families_with_cdfs_are_those_of_the_density_table() {
        let with: Vec<&str> = crate::dist::DISTRIBUTIONS
            .iter()
            .filter(|e| e.lcdf.is_some() && e.lccdf.is_some())
            .map(|e| e.name)
            .collect();
        assert_eq!(with, WITH_CDF);
        for e in crate::dist::DISTRIBUTIONS {
            let spec = lookup(e.name).unwrap_or_else(|| panic!("`{}` has no signature", e.name));
            assert_eq!(e.lcdf.is_some(), spec.has_cdf(), "{}", e.name);
            assert_eq!(e.lccdf.is_some(), spec.has_cdf(), "{}", e.name);
            let discrete = matches!(
                e.outcome,
                crate::dist::Outcome::Count | crate::dist::Outcome::Binary | crate::dist::Outcome::Category
            );
            assert_eq!(discrete, spec.discrete, "{}", e.name);
        }
    }

    #[test]
    fn suffixes_split_into_forms() {
        assert_eq!(
            split_form("normal_lcdf").map(|(b, f, _)| (b, f)),
            Some(("normal", DistForm::Lcdf))
        );
        assert!(split_form("normal").is_none());
    }
}
