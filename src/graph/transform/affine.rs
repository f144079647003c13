//! Stan's affine transform (`theta: vector<offset=mu, multiplier=tau>[J]`): x = offset +
//! multiplier · u, with log-Jacobian Σ log multiplier over the entries (K · log m for a scalar
//! multiplier of a K-entry value). Offset and multiplier are graph nodes, evaluated at the
//! current point like dependent bounds, each a scalar or of the value's shape. Where the
//! multiplier is ≤ 0 at the current point its logarithm is NaN or −∞, and the point is
//! outside the support, as for bounds that leave no room.

use super::{Error, Fun1, Fun2, Graph, NodeId, Shape};

/// The value offset + multiplier · u and its log-Jacobian (`None` without a multiplier).
///
/// # Errors
/// [`Error::Shape`] when the offset or multiplier is neither a scalar nor of `u`'s shape (the
/// checker rules this out).
pub(crate) fn lower_affine(
    g: &mut Graph,
    u: NodeId,
    offset: Option<NodeId>,
    multiplier: Option<NodeId>,
) -> Result<(NodeId, Option<NodeId>), Error> {
    let (scaled, lj) = match multiplier {
        None => (u, None),
        Some(m) => {
            let scaled = g.binary(Fun2::Mul, m, u)?;
            let log_m = g.unary(Fun1::Log, m);
            let n = g.shape(u).size();
            let lj = if g.shape(m) == Shape::Scalar && n != 1 {
                let n = g.scalar(n as f64);
                g.binary(Fun2::Mul, n, log_m)?
            } else {
                g.sum(log_m)
            };
            (scaled, Some(lj))
        }
    };
    let x = match offset {
        None => scaled,
        Some(a) => g.binary(Fun2::Add, a, scaled)?,
    };
    Ok((x, lj))
}
