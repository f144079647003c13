//! The shapes of `name_rng(args)` calls (Stan's `_rng` functions, for `generated`).
//!
//! Input: a distribution of [`DISTS`](super::dists::DISTS) and each argument's shape, with its
//! value when it is a constant known at check time. Output: the shape of one draw, or the
//! culprit argument and a message. The arguments are the distribution's, in Stan's order and
//! vectorisation, except `multinomial_rng(theta, N)`, which takes the number of trials, and
//! `lkj_corr_rng(K, eta)` / `lkj_corr_cholesky_rng(K, eta)`, which take the size K (a
//! constant). What `dist::rng::draw` can rely on: the argument count, the int-only arguments
//! being ints, and every argument having the shape its family needs for this result.
//!
//! - Univariate families: all arguments scalars give a scalar (`int` for discrete families,
//!   `real` otherwise); else every non-scalar argument has one shape (`vector[n]` and
//!   `ints[n]` agree) and the result has it, one draw per entry with the scalars broadcast.
//!   A discrete family cannot give a matrix (there is no int matrix type).
//! - `multi_normal_rng(mu, Sigma)`, `multi_normal_cholesky_rng(mu, L)`,
//!   `multi_student_t_rng(nu, mu, Sigma)`: `vector[K]`, or `matrix[N, K]` (one draw per row)
//!   when `mu` is a `matrix[N, K]`; a scalar `mu` is shared by the K entries.
//! - `dirichlet_rng(alpha: vector[K])` → `vector[K]`; `categorical_rng(theta: vector[K])` →
//!   `int`; `categorical_logit_rng(beta)` → `int` for a `vector[K]`, `ints[N]` for a
//!   `matrix[N, K]`; `multinomial_rng(theta: vector[K], N: int)` → `ints[K]`.
//! - `lkj_corr_rng(K, eta)`, `lkj_corr_cholesky_rng(K, eta)`, `wishart_cholesky_rng(nu, L_S)`,
//!   `inv_wishart_cholesky_rng(nu, L_S)` → `matrix[K, K]`.
//! - `ordered_logistic_rng(eta, c)`, `ordered_probit_rng(eta, c)` → `int` for a real `eta`,
//!   `ints[N]` for a `vector[N]`.

use super::dists::{DistSpec, Family, Support};
use super::types::Shape;

/// An argument's shape and, when it is a constant known at check time, its value.
pub type RngArgShape = (Shape, Option<f64>);

/// The parameter names of `name_rng`, in order (the distribution's, except for
/// `multinomial_rng` and the LKJ families).
pub fn rng_params(spec: &DistSpec) -> Vec<&'static str> {
    match spec.family {
        Family::Multinomial => vec!["theta", "N"],
        Family::Lkj => vec!["K", "eta"],
        _ => spec.params.iter().map(|(n, _)| *n).collect(),
    }
}

/// The result shape of `name_rng(args)` given each argument's shape and, when known at check
/// time, its constant value (ints such as K of `lkj_corr_rng` are needed to size the result).
///
/// # Errors
/// `(index of the culprit argument, 0-based, or usize::MAX for a count problem, message)`:
/// a wrong argument count, a real where an int is needed, shapes that disagree, a matrix
/// for a discrete univariate family, or an LKJ size that is not a constant positive int.
pub fn rng_shape(spec: &DistSpec, args: &[RngArgShape]) -> Result<Shape, (usize, String)> {
    let params = rng_params(spec);
    if args.len() != params.len() {
        return Err((
            usize::MAX,
            format!(
                "`{}_rng` takes {} argument{} ({}), found {}",
                spec.name,
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                params.join(", "),
                args.len()
            ),
        ));
    }
    let shapes: Vec<Shape> = args.iter().map(|a| a.0).collect();
    match spec.family {
        Family::Univariate => univariate(spec, &shapes),
        Family::MultiNormal if spec.name == "multi_student_t" => {
            scalar(spec, 0, shapes[0])?;
            multi_normal(spec, &shapes[1..]).map_err(|(i, m)| (i + 1, m))
        }
        Family::MultiNormal => multi_normal(spec, &shapes),
        Family::Dirichlet => vector(spec, 0, shapes[0]).map(Shape::Vector),
        Family::CategoricalSimplex => vector(spec, 0, shapes[0]).map(|_| Shape::Int),
        Family::Categorical => categorical_logit(shapes[0]),
        Family::Multinomial => {
            let k = vector(spec, 0, shapes[0])?;
            int(spec, 1, shapes[1])?;
            Ok(Shape::Ints(k))
        }
        Family::Lkj => lkj(spec, args),
        Family::Wishart => {
            scalar(spec, 0, shapes[0])?;
            match shapes[1] {
                Shape::Matrix(r, c) if r == c => Ok(Shape::Matrix(r, r)),
                s => Err((
                    1,
                    format!("`L_S` of `{}_rng` must be a square matrix, found {s}", spec.name),
                )),
            }
        }
        Family::Ordinal => ordinal(spec, &shapes),
    }
}

/// The `_rng` signature for help lines, e.g. "normal_rng(mu: real or vector, sigma: real or
/// vector) -> real, or a vector of the arguments' length".
pub fn rng_signature(spec: &DistSpec) -> String {
    let n = spec.name;
    match spec.family {
        Family::Univariate => {
            let ps: Vec<String> = spec
                .params
                .iter()
                .map(|(p, s)| match s {
                    Support::Int => format!("{p}: int or ints"),
                    _ => format!("{p}: real or vector"),
                })
                .collect();
            let (one, many) = if spec.discrete {
                ("int", "ints of the arguments' length")
            } else {
                ("real", "a vector (or matrix) of the arguments' shape")
            };
            format!("{n}_rng({}) -> {one}, or {many}", ps.join(", "))
        }
        Family::MultiNormal => {
            let nu = if n == "multi_student_t" { "nu: real > 0, " } else { "" };
            let m = spec.params[spec.params.len() - 1].0;
            format!("{n}_rng({nu}mu: vector[K], {m}: matrix[K, K]) -> vector[K]; or mu: matrix[N, K] -> matrix[N, K] (one draw per row)")
        }
        Family::Dirichlet => "dirichlet_rng(alpha: vector[K] > 0) -> vector[K] (a simplex)".to_string(),
        Family::CategoricalSimplex => "categorical_rng(theta: vector[K], a simplex) -> int in 1..K".to_string(),
        Family::Categorical => "categorical_logit_rng(beta: vector[K]) -> int in 1..K; or beta: matrix[N, K] -> ints[N] (one row of logits per draw)".to_string(),
        Family::Multinomial => "multinomial_rng(theta: vector[K], a simplex, N: int) -> ints[K] (counts summing to N)".to_string(),
        Family::Lkj if n == "lkj_corr" => "lkj_corr_rng(K: int, a constant, eta: real > 0) -> matrix[K, K] (a correlation matrix)".to_string(),
        Family::Lkj => "lkj_corr_cholesky_rng(K: int, a constant, eta: real > 0) -> matrix[K, K] (the Cholesky factor of a correlation matrix)".to_string(),
        Family::Wishart => format!("{n}_rng(nu: real > K - 1, L_S: matrix[K, K], a Cholesky factor) -> matrix[K, K] (a Cholesky factor)"),
        Family::Ordinal => format!("{n}_rng(eta: real, c: vector[K - 1], increasing) -> int in 1..K; or eta: vector[N] -> ints[N]"),
    }
}

fn scalar(spec: &DistSpec, i: usize, s: Shape) -> Result<(), (usize, String)> {
    if s.is_scalar() {
        return Ok(());
    }
    let p = rng_params(spec)[i];
    Err((
        i,
        format!("`{p}` of `{}_rng` must be a real, found {s}", spec.name),
    ))
}

fn int(spec: &DistSpec, i: usize, s: Shape) -> Result<(), (usize, String)> {
    if s == Shape::Int {
        return Ok(());
    }
    let p = rng_params(spec)[i];
    Err((
        i,
        format!("`{p}` of `{}_rng` must be an int, found {s}", spec.name),
    ))
}

/// The length K of an argument that must be a `vector[K]` (or `ints[K]`).
fn vector(spec: &DistSpec, i: usize, s: Shape) -> Result<usize, (usize, String)> {
    match s {
        Shape::Vector(k) | Shape::Ints(k) => Ok(k),
        s => {
            let p = rng_params(spec)[i];
            Err((
                i,
                format!("`{p}` of `{}_rng` must be a vector, found {s}", spec.name),
            ))
        }
    }
}

fn univariate(spec: &DistSpec, shapes: &[Shape]) -> Result<Shape, (usize, String)> {
    for (i, ((p, support), s)) in spec.params.iter().zip(shapes).enumerate() {
        if *support == Support::Int && !s.is_integer() {
            return Err((
                i,
                format!("`{p}` of `{}_rng` must be an int or ints, found {s}", spec.name),
            ));
        }
    }
    let mut common: Option<(usize, Shape)> = None;
    for (i, s) in shapes.iter().enumerate() {
        if s.is_scalar() {
            continue;
        }
        let c = s.to_real();
        match common {
            None => common = Some((i, c)),
            Some((j, f)) if f != c => {
                let (pi, pj) = (spec.params[i].0, spec.params[j].0);
                return Err((i, format!("`{pi}` is {s}, but `{pj}` is {}: the non-scalar arguments of `{}_rng` must have one shape", shapes[j], spec.name)));
            }
            _ => {}
        }
    }
    match (common, spec.discrete) {
        (None, true) => Ok(Shape::Int),
        (None, false) => Ok(Shape::Real),
        (Some((_, Shape::Vector(n))), true) => Ok(Shape::Ints(n)),
        (Some((i, Shape::Matrix(r, c))), true) => Err((
            i,
            format!("`{}_rng` draws integers, and there is no int matrix: found `{}` of matrix[{r}, {c}]; pass a vector (e.g. `to_vector`)", spec.name, spec.params[i].0),
        )),
        (Some((_, s)), _) => Ok(s),
    }
}

fn multi_normal(spec: &DistSpec, shapes: &[Shape]) -> Result<Shape, (usize, String)> {
    let m = spec.params[spec.params.len() - 1].0;
    let k = match shapes[1] {
        Shape::Matrix(r, c) if r == c => r,
        s => {
            return Err((
                1,
                format!("`{m}` of `{}_rng` must be a square matrix, found {s}", spec.name),
            ))
        }
    };
    match shapes[0] {
        s if s.is_scalar() => Ok(Shape::Vector(k)),
        Shape::Vector(n) | Shape::Ints(n) if n == k => Ok(Shape::Vector(k)),
        Shape::Matrix(n, c) if c == k => Ok(Shape::Matrix(n, k)),
        s => Err((
            0,
            format!("`mu` of `{}_rng` must be vector[{k}] or a matrix with {k} columns (one draw per row) to match `{m}` (matrix[{k}, {k}]), found {s}", spec.name),
        )),
    }
}

fn categorical_logit(beta: Shape) -> Result<Shape, (usize, String)> {
    match beta {
        Shape::Vector(_) | Shape::Ints(_) => Ok(Shape::Int),
        Shape::Matrix(n, _) => Ok(Shape::Ints(n)),
        s => Err((0, format!("`beta` of `categorical_logit_rng` must be a vector of logits or a matrix with one row of logits per draw, found {s}"))),
    }
}

fn lkj(spec: &DistSpec, args: &[RngArgShape]) -> Result<Shape, (usize, String)> {
    int(spec, 0, args[0].0)?;
    let Some(k) = args[0].1 else {
        return Err((0, format!("the size `K` of `{}_rng` must be known when the model is checked (a literal, a size or int data)", spec.name)));
    };
    if !k.is_finite() || k < 1.0 || k.fract().abs() > 0.0 {
        return Err((
            0,
            format!(
                "the size `K` of `{}_rng` must be a positive int, found {k}",
                spec.name
            ),
        ));
    }
    scalar(spec, 1, args[1].0)?;
    let k = k as usize;
    Ok(Shape::Matrix(k, k))
}

fn ordinal(spec: &DistSpec, shapes: &[Shape]) -> Result<Shape, (usize, String)> {
    let out = match shapes[0] {
        s if s.is_scalar() => Shape::Int,
        Shape::Vector(n) | Shape::Ints(n) => Shape::Ints(n),
        s => {
            return Err((
                0,
                format!(
                    "`eta` of `{}_rng` must be a real or a vector (one per draw), found {s}",
                    spec.name
                ),
            ))
        }
    };
    match shapes[1] {
        Shape::Vector(k) if k >= 1 => Ok(out),
        s => Err((
            1,
            format!(
                "the cutpoints `c` of `{}_rng` must be a vector of at least one entry, found {s}",
                spec.name
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::dists::{lookup, DISTS};
    use Shape::{Int, Ints, Matrix, Real, Vector};

    fn shape(name: &str, args: &[Shape]) -> Result<Shape, (usize, String)> {
        let a: Vec<RngArgShape> = args.iter().map(|&s| (s, None)).collect();
        rng_shape(lookup(name).unwrap(), &a)
    }

    #[test]
    fn univariate_scalars_give_a_scalar_of_the_family_type() {
        assert_eq!(shape("normal", &[Real, Real]), Ok(Real));
        assert_eq!(shape("student_t", &[Int, Real, Real]), Ok(Real));
        assert_eq!(shape("poisson_log", &[Real]), Ok(Int));
        assert_eq!(shape("binomial", &[Int, Real]), Ok(Int));
    }

    #[test]
    fn univariate_containers_give_their_common_shape() {
        assert_eq!(shape("normal", &[Vector(3), Real]), Ok(Vector(3)));
        assert_eq!(shape("normal", &[Ints(3), Vector(3)]), Ok(Vector(3)));
        assert_eq!(
            shape("exp_mod_normal", &[Matrix(2, 3), Real, Matrix(2, 3)]),
            Ok(Matrix(2, 3))
        );
        assert_eq!(shape("binomial", &[Ints(4), Vector(4)]), Ok(Ints(4)));
        assert_eq!(shape("neg_binomial_2_log", &[Vector(5), Real]), Ok(Ints(5)));
    }

    #[test]
    fn univariate_disagreeing_shapes_name_the_second_argument() {
        let (i, m) = shape("normal", &[Vector(3), Vector(2)]).unwrap_err();
        assert_eq!(i, 1);
        assert!(m.contains("one shape"), "{m}");
        assert_eq!(shape("gamma", &[Vector(3), Matrix(3, 1)]).unwrap_err().0, 1);
    }

    #[test]
    fn discrete_families_reject_matrices_and_real_counts() {
        assert_eq!(shape("poisson", &[Matrix(2, 2)]).unwrap_err().0, 0);
        let (i, m) = shape("binomial", &[Real, Real]).unwrap_err();
        assert_eq!(i, 0);
        assert!(m.contains("`N`"), "{m}");
        assert_eq!(shape("beta_binomial", &[Vector(2), Real, Real]).unwrap_err().0, 0);
    }

    #[test]
    fn wrong_argument_counts_are_count_errors() {
        let (i, m) = shape("normal", &[Real]).unwrap_err();
        assert_eq!(i, usize::MAX);
        assert!(m.contains("takes 2 arguments"), "{m}");
        assert_eq!(shape("multinomial", &[Vector(3)]).unwrap_err().0, usize::MAX);
    }

    #[test]
    fn multi_normal_gives_a_vector_or_one_row_per_draw() {
        for name in ["multi_normal", "multi_normal_cholesky"] {
            assert_eq!(shape(name, &[Vector(3), Matrix(3, 3)]), Ok(Vector(3)));
            assert_eq!(shape(name, &[Matrix(5, 3), Matrix(3, 3)]), Ok(Matrix(5, 3)));
            assert_eq!(shape(name, &[Real, Matrix(2, 2)]), Ok(Vector(2)));
            assert_eq!(shape(name, &[Vector(2), Matrix(3, 3)]).unwrap_err().0, 0);
            assert_eq!(shape(name, &[Vector(2), Matrix(2, 3)]).unwrap_err().0, 1);
        }
        let t = "multi_student_t";
        assert_eq!(shape(t, &[Real, Vector(2), Matrix(2, 2)]), Ok(Vector(2)));
        assert_eq!(shape(t, &[Real, Matrix(4, 2), Matrix(2, 2)]), Ok(Matrix(4, 2)));
        assert_eq!(shape(t, &[Vector(2), Vector(2), Matrix(2, 2)]).unwrap_err().0, 0);
        assert_eq!(shape(t, &[Real, Vector(3), Matrix(2, 2)]).unwrap_err().0, 1);
    }

    #[test]
    fn simplex_families_follow_the_vector_length() {
        assert_eq!(shape("dirichlet", &[Vector(4)]), Ok(Vector(4)));
        assert_eq!(shape("dirichlet", &[Real]).unwrap_err().0, 0);
        assert_eq!(shape("categorical", &[Vector(4)]), Ok(Int));
        assert_eq!(shape("categorical", &[Matrix(2, 4)]).unwrap_err().0, 0);
        assert_eq!(shape("categorical_logit", &[Vector(4)]), Ok(Int));
        assert_eq!(shape("categorical_logit", &[Matrix(7, 4)]), Ok(Ints(7)));
        assert_eq!(shape("categorical_logit", &[Real]).unwrap_err().0, 0);
        assert_eq!(shape("multinomial", &[Vector(3), Int]), Ok(Ints(3)));
        assert_eq!(shape("multinomial", &[Vector(3), Real]).unwrap_err().0, 1);
    }

    #[test]
    fn lkj_needs_a_constant_positive_size() {
        let spec = lookup("lkj_corr_cholesky").unwrap();
        assert_eq!(
            rng_shape(spec, &[(Int, Some(3.0)), (Real, None)]),
            Ok(Matrix(3, 3))
        );
        let (i, m) = rng_shape(spec, &[(Int, None), (Real, None)]).unwrap_err();
        assert_eq!(i, 0);
        assert!(m.contains("known when the model is checked"), "{m}");
        assert_eq!(
            rng_shape(spec, &[(Int, Some(0.0)), (Real, None)]).unwrap_err().0,
            0
        );
        assert_eq!(
            rng_shape(spec, &[(Real, Some(2.0)), (Real, None)]).unwrap_err().0,
            0
        );
        let corr = lookup("lkj_corr").unwrap();
        assert_eq!(
            rng_shape(corr, &[(Int, Some(2.0)), (Vector(2), None)])
                .unwrap_err()
                .0,
            1
        );
    }

    #[test]
    fn wishart_gives_the_scale_factors_shape() {
        for name in ["wishart_cholesky", "inv_wishart_cholesky"] {
            assert_eq!(shape(name, &[Real, Matrix(3, 3)]), Ok(Matrix(3, 3)));
            assert_eq!(shape(name, &[Real, Matrix(3, 2)]).unwrap_err().0, 1);
            assert_eq!(shape(name, &[Vector(3), Matrix(3, 3)]).unwrap_err().0, 0);
        }
    }

    #[test]
    fn ordinal_gives_one_int_per_eta() {
        for name in ["ordered_logistic", "ordered_probit"] {
            assert_eq!(shape(name, &[Real, Vector(3)]), Ok(Int));
            assert_eq!(shape(name, &[Vector(6), Vector(3)]), Ok(Ints(6)));
            assert_eq!(shape(name, &[Matrix(2, 2), Vector(3)]).unwrap_err().0, 0);
            assert_eq!(shape(name, &[Real, Vector(0)]).unwrap_err().0, 1);
        }
    }

    #[test]
    fn every_distribution_has_an_rng_signature_naming_it() {
        for spec in DISTS {
            let s = rng_signature(spec);
            assert!(s.starts_with(&format!("{}_rng(", spec.name)), "{s}");
            assert!(s.contains("->"), "{s}");
        }
    }
}
