//! The shapes of `dist_rng` calls (a temporary subset: univariate families).

use super::dists::{DistSpec, Family};
use super::types::Shape;

/// The result shape of `name_rng(args)`.
///
/// # Errors
/// (culprit index, message).
pub fn rng_shape(spec: &DistSpec, args: &[(Shape, Option<f64>)]) -> Result<Shape, (usize, String)> {
    if spec.family != Family::Univariate || args.len() != spec.params.len() {
        return Err((usize::MAX, format!("`{}_rng` is not available", spec.name)));
    }
    let mut shape = if spec.discrete { Shape::Int } else { Shape::Real };
    for (s, _) in args {
        if !s.is_scalar() {
            shape = match (spec.discrete, s) {
                (true, _) => Shape::Ints(s.len()),
                (false, Shape::Matrix(r, c)) => Shape::Matrix(*r, *c),
                (false, _) => Shape::Vector(s.len()),
            };
        }
    }
    Ok(shape)
}

/// The signature for help lines.
pub fn rng_signature(spec: &DistSpec) -> String {
    format!("{}_rng(…)", spec.name)
}
