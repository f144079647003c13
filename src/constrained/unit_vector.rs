//! `unit_vector[K]`: Euclidean norm 1, from K free coordinates (Stan's
//! `unit_vector_constrain`): x = u / ‖u‖, with −½ ‖u‖² added to the target. The map is not
//! one-to-one (every u on a ray gives the same x); the term is not a Jacobian but gives
//! ‖u‖ a χ_K law, so the posterior over u is proper, exactly as in Stan. Its inverse picks
//! the point of the ray on the unit sphere, u = x, so inverse(transform(u)) = u holds for
//! ‖u‖ = 1. u = 0 has no direction: the initial point of a model with a unit vector puts
//! its coordinates at 1/√K (see `LogJoint::initial_point`).

use super::{Invalid, TypeEntry, TypeKind, TOLERANCE};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::UnitVector,
    min_size: 2,
    free: |k| k,
    constrain,
    unconstrain: |x, _| x.to_vec(),
    log_jacobian: |u, _| -0.5 * u.iter().map(|v| v * v).sum::<f64>(),
    validate,
    two_size: None,
};

fn constrain(u: &[f64], _k: usize) -> Vec<f64> {
    let r = u.iter().map(|v| v * v).sum::<f64>().sqrt();
    u.iter().map(|v| v / r).collect()
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    let ss: f64 = x.iter().map(|v| v * v).sum();
    if (ss - 1.0).abs() > TOLERANCE {
        return Err(Invalid::whole(format!("its squared norm is {ss}, not 1")));
    }
    Ok(())
}
