//! Built-in functions: names, signatures (for help lines) and shape rules.
//!
//! Each rule takes the argument shapes (and known scalar values, for sizes such as
//! `rep_vector(x, n)`) and gives the result shape, or a message saying what is wrong.

use super::types::Shape;

/// Elementwise functions: real → real, vector → vector, matrix → matrix.
pub const ELEMENTWISE: &[&str] = &[
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "square",
    "abs",
    "sin",
    "cos",
    "tanh",
    "inv_logit",
    "logit",
    "log_inv_logit",
    "log1m_inv_logit",
    "lgamma",
    "log1m",
    "inv",
    "tan",
    "atan",
    "log1m_exp",
    "Phi",
    "Phi_approx",
    "inv_cloglog",
];

/// Reductions: vector, matrix or ints → real (`sum` of ints is an int).
pub const REDUCTIONS: &[&str] = &["sum", "mean", "sd", "variance", "log_sum_exp", "min", "max"];

/// All other built-in function names with their signatures, as shown in help lines.
pub const SIGNATURES: &[(&str, &str)] = &[
    ("dot", "dot(a: vector[n], b: vector[n]) -> real"),
    ("rows", "rows(x: vector | matrix | ints) -> int"),
    ("cols", "cols(x: matrix) -> int"),
    ("size", "size(x: vector | ints) -> int"),
    ("softmax", "softmax(x: vector[n]) -> vector[n]"),
    ("log_softmax", "log_softmax(x: vector[n]) -> vector[n]"),
    ("rep_vector", "rep_vector(x: real, n: int) -> vector[n]"),
    ("rep_matrix", "rep_matrix(x: real, m: int, n: int) -> matrix[m, n], or rep_matrix(v: vector[m], n: int) -> matrix[m, n]"),
    ("col", "col(x: matrix[m, n], j: int) -> vector[m]"),
    ("row", "row(x: matrix[m, n], i: int) -> vector[n]"),
    ("diag_matrix", "diag_matrix(v: vector[n]) -> matrix[n, n]"),
    ("cholesky", "cholesky(S: matrix[n, n]) -> matrix[n, n]"),
    ("cholesky_decompose", "cholesky_decompose(S: matrix[n, n]) -> matrix[n, n] (Stan's name for `cholesky`)"),
    ("to_vector", "to_vector(x: vector | matrix | ints) -> vector (matrices column-major)"),
    ("append_col", "append_col(a: matrix[m, n] | vector[m], b: matrix[m, k] | vector[m] | real) -> matrix[m, n + k]"),
    ("append_row", "append_row(a: vector[m] | matrix[m, n], b: vector[k] | matrix[k, n] | real) -> vector[m + k] | matrix[m + k, n]"),
    ("pow", "pow(x, y) -> elementwise x ^ y"),
    ("fmin", "fmin(a: real, b: real) -> real"),
    ("fmax", "fmax(a: real, b: real) -> real"),
    ("log_diff_exp", "log_diff_exp(a, b) -> elementwise log(exp(a) - exp(b)), a >= b"),
    ("lbeta", "lbeta(a, b) -> elementwise log B(a, b)"),
    ("lchoose", "lchoose(n, k) -> elementwise log of the binomial coefficient"),
    ("log_mix", "log_mix(theta: real, lp1: real, lp2: real) -> real, or log_mix(theta: vector[K], lps: vector[K] | matrix[N, K]) -> real, or log_mix(theta: matrix[N, K], lps: matrix[N, K]) -> real"),
    ("cumulative_sum", "cumulative_sum(v: vector[n] | ints[n]) -> the same shape"),
    ("head", "head(v: vector[n] | ints[n], m: int) -> the first m entries"),
    ("tail", "tail(v: vector[n] | ints[n], m: int) -> the last m entries"),
    ("segment", "segment(v: vector[n] | ints[n], i: int, m: int) -> the m entries from i"),
    ("reverse", "reverse(v: vector[n] | ints[n]) -> the same shape, reversed"),
    ("dot_self", "dot_self(v: vector[n]) -> real"),
    ("quad_form", "quad_form(A: matrix[n, n], B: matrix[n, m] | vector[n]) -> matrix[m, m] | real (B' A B)"),
    ("diag_pre_multiply", "diag_pre_multiply(v: vector[m], M: matrix[m, n]) -> matrix[m, n]"),
    ("diag_post_multiply", "diag_post_multiply(M: matrix[m, n], v: vector[n]) -> matrix[m, n]"),
    ("multiply_lower_tri_self_transpose", "multiply_lower_tri_self_transpose(M: matrix[m, n]) -> matrix[m, m]"),
    ("tcrossprod", "tcrossprod(M: matrix[m, n]) -> matrix[m, m] (M M')"),
    ("crossprod", "crossprod(M: matrix[m, n]) -> matrix[n, n] (M' M)"),
    ("to_matrix", "to_matrix(v: vector | ints, m: int, n: int) -> matrix[m, n] (column-major), or to_matrix(M: matrix)"),
    ("gp_exp_quad_cov", "gp_exp_quad_cov(x: vector[n] | ints[n], alpha: real, rho: real) -> matrix[n, n]"),
    ("cov_exp_quad", "cov_exp_quad(x: vector[n] | ints[n], alpha: real, rho: real) -> matrix[n, n]"),
];

/// Stan's constants, functions of no arguments: name, value, what it is.
pub const CONSTANTS: &[(&str, f64, &str)] = &[
    ("pi", std::f64::consts::PI, "π"),
    ("e", std::f64::consts::E, "e, the base of the natural logarithm"),
    ("sqrt2", std::f64::consts::SQRT_2, "√2"),
    ("log2", std::f64::consts::LN_2, "log 2"),
    ("log10", std::f64::consts::LN_10, "log 10"),
    ("positive_infinity", f64::INFINITY, "+∞"),
    ("negative_infinity", f64::NEG_INFINITY, "−∞"),
    ("not_a_number", f64::NAN, "NaN"),
    (
        "machine_precision",
        f64::EPSILON,
        "the distance from 1 to the next double, 2⁻⁵²",
    ),
];

/// The value of constant `name()`, if it is one of [`CONSTANTS`].
pub fn constant(name: &str) -> Option<f64> {
    CONSTANTS.iter().find(|(n, _, _)| *n == name).map(|&(_, v, _)| v)
}

/// Whether `name` is a built-in function.
pub fn is_builtin(name: &str) -> bool {
    ELEMENTWISE.contains(&name)
        || REDUCTIONS.contains(&name)
        || SIGNATURES.iter().any(|(n, _)| *n == name)
        || constant(name).is_some()
}

/// All built-in names (for suggestions).
pub fn all_names() -> impl Iterator<Item = &'static str> {
    ELEMENTWISE
        .iter()
        .chain(REDUCTIONS)
        .copied()
        .chain(SIGNATURES.iter().map(|(n, _)| *n))
        .chain(CONSTANTS.iter().map(|(n, _, _)| *n))
}

/// The signature line for `name`.
pub fn signature(name: &str) -> String {
    if ELEMENTWISE.contains(&name) {
        return format!("{name}(x: real | vector | matrix) -> the same shape");
    }
    if REDUCTIONS.contains(&name) {
        return format!("{name}(x: vector | matrix | ints) -> real");
    }
    if let Some((_, _, what)) = CONSTANTS.iter().find(|(n, _, _)| *n == name) {
        return match name {
            "log2" | "log10" => format!(
                "{name}() -> real: {what}; {name}(x: real | vector | matrix) -> the same shape: the base-{} logarithm",
                &name[3..]
            ),
            _ => format!("{name}() -> real: {what}"),
        };
    }
    SIGNATURES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or_else(String::new, |(_, s)| (*s).to_string())
}

/// An argument as the shape rules see it: its shape and its value when known.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    /// The shape.
    pub shape: Shape,
    /// The value, for scalars known at check time.
    pub value: Option<f64>,
}

/// The result shape of built-in `name` on `args`, or what is wrong.
///
/// # Errors
/// A message about the argument count or kinds.
pub fn result_shape(name: &str, args: &[Arg]) -> Result<Shape, String> {
    let shapes: Vec<Shape> = args.iter().map(|a| a.shape).collect();
    if ELEMENTWISE.contains(&name) {
        return match shapes.as_slice() {
            [s] => Ok(s.to_real()),
            _ => Err(format!("`{name}` takes one argument")),
        };
    }
    if REDUCTIONS.contains(&name) {
        return reduction(name, &shapes);
    }
    if constant(name).is_some() {
        return match (name, shapes.as_slice()) {
            (_, []) => Ok(Shape::Real),
            // as in Stan, `log2(x)` and `log10(x)` are the logarithms to those bases
            ("log2" | "log10", [s]) => Ok(s.to_real()),
            _ => Err(format!("`{name}()` is a constant and takes no arguments")),
        };
    }
    match (name, shapes.as_slice()) {
        ("dot", [a, b]) if vec_len(*a).is_some() && vec_len(*a) == vec_len(*b) => Ok(Shape::Real),
        ("rows", [s]) => match s {
            Shape::Vector(_) | Shape::Ints(_) | Shape::Matrix(..) => Ok(Shape::Int),
            _ => Err("`rows` takes a vector, matrix or ints".into()),
        },
        ("size", [Shape::Vector(_) | Shape::Ints(_)]) | ("cols", [Shape::Matrix(..)]) => Ok(Shape::Int),
        ("softmax" | "log_softmax", [Shape::Vector(n)]) => Ok(Shape::Vector(*n)),
        ("rep_vector", [s, _]) if s.is_scalar() => Ok(Shape::Vector(size_arg(&args[1])?)),
        ("rep_matrix", [s, _, _]) if s.is_scalar() => {
            Ok(Shape::Matrix(size_arg(&args[1])?, size_arg(&args[2])?))
        }
        ("rep_matrix", [Shape::Vector(m), _]) => Ok(Shape::Matrix(*m, size_arg(&args[1])?)),
        ("col", [Shape::Matrix(r, _), Shape::Int]) => Ok(Shape::Vector(*r)),
        ("row", [Shape::Matrix(_, c), Shape::Int]) => Ok(Shape::Vector(*c)),
        ("diag_matrix", [Shape::Vector(n)]) => Ok(Shape::Matrix(*n, *n)),
        ("cholesky" | "cholesky_decompose", [Shape::Matrix(r, c)]) if r == c => Ok(Shape::Matrix(*r, *c)),
        ("to_vector", [s]) if !s.is_scalar() => Ok(Shape::Vector(s.len())),
        ("append_col", [a, b]) => append_col(*a, *b),
        ("append_row", [a, b]) => append_row(*a, *b),
        ("pow", [a, b]) => super::shapes::broadcast(*a, *b)
            .map(Shape::to_real)
            .ok_or_else(|| format!("`pow` needs equal shapes or a scalar, found {a} and {b}")),
        ("fmin" | "fmax", [a, b]) if a.is_scalar() && b.is_scalar() => Ok(Shape::Real),
        ("log_diff_exp" | "lbeta" | "lchoose", [a, b]) => super::shapes::broadcast(*a, *b)
            .map(Shape::to_real)
            .ok_or_else(|| format!("`{name}` needs equal shapes or a scalar, found {a} and {b}")),
        ("log_mix", _) => log_mix(&shapes),
        ("cumulative_sum" | "reverse", [s @ (Shape::Vector(_) | Shape::Ints(_))]) => Ok(*s),
        ("head" | "tail" | "segment", _) => segment(name, args),
        ("dot_self", [Shape::Vector(_)]) => Ok(Shape::Real),
        ("quad_form", [Shape::Matrix(n, n2), b]) if n == n2 => match b {
            Shape::Vector(k) if k == n => Ok(Shape::Real),
            Shape::Matrix(k, m) if k == n => Ok(Shape::Matrix(*m, *m)),
            _ => Err(format!("`quad_form` needs B with {n} rows, found {b}")),
        },
        ("diag_pre_multiply", [Shape::Vector(k), Shape::Matrix(m, n)]) if k == m => Ok(Shape::Matrix(*m, *n)),
        ("diag_post_multiply", [Shape::Matrix(m, n), Shape::Vector(k)]) if k == n => {
            Ok(Shape::Matrix(*m, *n))
        }
        ("multiply_lower_tri_self_transpose" | "tcrossprod", [Shape::Matrix(m, _)]) => {
            Ok(Shape::Matrix(*m, *m))
        }
        ("crossprod", [Shape::Matrix(_, n)]) => Ok(Shape::Matrix(*n, *n)),
        ("to_matrix", [m @ Shape::Matrix(..)]) => Ok(*m),
        ("to_matrix", [v @ (Shape::Vector(_) | Shape::Ints(_)), _, _]) => {
            let (m, n) = (size_arg(&args[1])?, size_arg(&args[2])?);
            if m * n == v.len() {
                Ok(Shape::Matrix(m, n))
            } else {
                Err(format!("`to_matrix` cannot fill matrix[{m}, {n}] from {v}"))
            }
        }
        ("gp_exp_quad_cov" | "cov_exp_quad", [Shape::Vector(n) | Shape::Ints(n), a, r])
            if a.is_scalar() && r.is_scalar() =>
        {
            Ok(Shape::Matrix(*n, *n))
        }
        _ => Err(format!(
            "`{name}` cannot take ({})",
            shapes
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn reduction(name: &str, shapes: &[Shape]) -> Result<Shape, String> {
    match shapes {
        [Shape::Ints(_)] if matches!(name, "sum" | "min" | "max") => Ok(Shape::Int),
        [s] if !s.is_scalar() => Ok(Shape::Real),
        [a, b] if matches!(name, "min" | "max" | "log_sum_exp") && a.is_scalar() && b.is_scalar() => {
            Ok(if *a == Shape::Int && *b == Shape::Int && name != "log_sum_exp" {
                Shape::Int
            } else {
                Shape::Real
            })
        }
        _ => Err(format!("`{name}` takes a vector, matrix or ints")),
    }
}

fn log_mix(shapes: &[Shape]) -> Result<Shape, String> {
    match shapes {
        [t, a, b] if t.is_scalar() && a.is_scalar() && b.is_scalar() => Ok(Shape::Real),
        [Shape::Vector(k), Shape::Vector(k2) | Shape::Matrix(_, k2)] if k == k2 => Ok(Shape::Real),
        // one row of mixing weights per observation (row)
        [Shape::Matrix(n, k), Shape::Matrix(n2, k2)] if n == n2 && k == k2 => Ok(Shape::Real),
        [t, l] => Err(format!(
            "`log_mix` needs the log densities to have one entry (or column) per mixing weight, found {t} and {l}"
        )),
        _ => Err("`log_mix` takes (theta, lp1, lp2) or (theta: vector, lps)".into()),
    }
}

/// `head(v, m)`, `tail(v, m)`, `segment(v, i, m)`: m entries of v from a known start.
fn segment(name: &str, args: &[Arg]) -> Result<Shape, String> {
    let n = match args.first().map(|a| a.shape) {
        Some(Shape::Vector(n) | Shape::Ints(n)) => n,
        _ => return Err(format!("`{name}` takes a vector or ints first")),
    };
    let m = match (name, args.len()) {
        ("segment", 3) => {
            let start = match (args[1].shape, args[1].value) {
                (Shape::Int, Some(i)) => i,
                _ => return Err("the start of `segment` must be an int known from the data".into()),
            };
            let m = size_arg(&args[2])?;
            if start < 1.0 || start as usize + m - 1 > n {
                return Err(format!(
                    "`segment` from {start} of {m} entries is outside the {n} entries"
                ));
            }
            m
        }
        ("head" | "tail", 2) => size_arg(&args[1])?,
        _ => return Err(format!("wrong number of arguments to `{name}`")),
    };
    if m > n {
        return Err(format!("`{name}` of {m} entries from a value of {n}"));
    }
    Ok(match args[0].shape {
        Shape::Ints(_) => Shape::Ints(m),
        _ => Shape::Vector(m),
    })
}

fn vec_len(s: Shape) -> Option<usize> {
    match s {
        Shape::Vector(n) | Shape::Ints(n) => Some(n),
        _ => None,
    }
}

fn size_arg(a: &Arg) -> Result<usize, String> {
    match (a.shape, a.value) {
        (Shape::Int, Some(v)) if v > 1e7 => Err(format!("a size of {v} is too large (at most 10000000)")),
        (Shape::Int, Some(v)) if v >= 0.0 => Ok(v as usize),
        (Shape::Int, Some(v)) => Err(format!("a size must not be negative, found {v}")),
        (Shape::Int, None) => Err("a size must be known from the data".into()),
        (s, _) => Err(format!("a size must be an int, found {s}")),
    }
}

fn append_col(a: Shape, b: Shape) -> Result<Shape, String> {
    let cols = |s: Shape| match s {
        Shape::Matrix(r, c) => Some((Some(r), c)),
        Shape::Vector(r) | Shape::Ints(r) => Some((Some(r), 1)),
        Shape::RowVector(_) => None,
        Shape::Real | Shape::Int => Some((None, 1)),
    };
    match (cols(a), cols(b)) {
        (Some((Some(r1), c1)), Some((r2, c2))) if r2.is_none_or(|r2| r2 == r1) => {
            Ok(Shape::Matrix(r1, c1 + c2))
        }
        _ => Err(format!(
            "`append_col` needs the same number of rows, found {a} and {b}"
        )),
    }
}

fn append_row(a: Shape, b: Shape) -> Result<Shape, String> {
    match (a, b) {
        (Shape::Vector(m) | Shape::Ints(m), Shape::Vector(k) | Shape::Ints(k)) => Ok(Shape::Vector(m + k)),
        (Shape::Vector(m), s) | (s, Shape::Vector(m)) if s.is_scalar() => Ok(Shape::Vector(m + 1)),
        (Shape::Matrix(m, n), Shape::Matrix(k, n2)) if n == n2 => Ok(Shape::Matrix(m + k, n)),
        _ => Err(format!(
            "`append_row` needs the same number of columns, found {a} and {b}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(shape: Shape) -> Arg {
        Arg { shape, value: None }
    }

    #[test]
    fn rep_vector_takes_its_size_from_a_known_int() {
        let n = Arg {
            shape: Shape::Int,
            value: Some(4.0),
        };
        assert_eq!(
            result_shape("rep_vector", &[a(Shape::Real), n]),
            Ok(Shape::Vector(4))
        );
        assert!(result_shape("rep_vector", &[a(Shape::Real), a(Shape::Int)]).is_err());
    }

    #[test]
    fn append_col_adds_a_bias_column() {
        assert_eq!(
            result_shape("append_col", &[a(Shape::Matrix(5, 3)), a(Shape::Real)]),
            Ok(Shape::Matrix(5, 4))
        );
        assert!(result_shape("append_col", &[a(Shape::Matrix(5, 3)), a(Shape::Vector(4))]).is_err());
    }

    #[test]
    fn constants_take_no_arguments() {
        assert_eq!(result_shape("pi", &[]), Ok(Shape::Real));
        assert_eq!(constant("pi"), Some(std::f64::consts::PI));
        assert_eq!(constant("log10"), Some(10f64.ln()));
        assert!(constant("not_a_number").is_some_and(f64::is_nan));
        assert!(result_shape("e", &[a(Shape::Real)]).is_err());
        // log2(x), log10(x): Stan's logarithms to those bases
        assert_eq!(result_shape("log2", &[a(Shape::Vector(3))]), Ok(Shape::Vector(3)));
        assert!(result_shape("log10", &[a(Shape::Real), a(Shape::Real)]).is_err());
        assert!(is_builtin("machine_precision") && all_names().any(|n| n == "sqrt2"));
        assert_eq!(signature("pi"), "pi() -> real: π");
    }

    #[test]
    fn elementwise_keeps_shape_and_reductions_give_scalars() {
        assert_eq!(
            result_shape("exp", &[a(Shape::Matrix(2, 3))]),
            Ok(Shape::Matrix(2, 3))
        );
        assert_eq!(result_shape("sum", &[a(Shape::Ints(3))]), Ok(Shape::Int));
        assert_eq!(
            result_shape("log_sum_exp", &[a(Shape::Real), a(Shape::Real)]),
            Ok(Shape::Real)
        );
        assert!(result_shape("dot", &[a(Shape::Vector(2)), a(Shape::Vector(3))]).is_err());
    }
}
