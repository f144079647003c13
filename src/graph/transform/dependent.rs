//! Bounds that depend on other values (`beta1: real<lower=0, upper=1 - alpha1>`): the same
//! transforms as constant bounds, with the bounds as graph nodes evaluated at the current
//! point. Lower a: x = a + exp(u); upper b: x = b − exp(u); both: x = a + (b − a)·inv_logit(u),
//! with log-Jacobian Σ (u) or Σ (log inv_logit(u) + log(1 − inv_logit(u)) + log(b − a)).
//! A bound may be a scalar or have the value's shape (elementwise bounds). Where b ≤ a at
//! the current point the log-Jacobian is NaN or −∞ and the point is outside the support.

use super::{Error, Fun1, Fun2, Graph, NodeId, Shape};

/// The constrained value of `u` between the bound nodes and its log-Jacobian.
///
/// # Errors
/// [`Error::Shape`] when a bound is neither a scalar nor of `u`'s shape (the checker rules
/// this out).
pub(crate) fn lower_dependent(
    g: &mut Graph,
    u: NodeId,
    lower: Option<NodeId>,
    upper: Option<NodeId>,
) -> Result<(NodeId, Option<NodeId>), Error> {
    match (lower, upper) {
        (None, None) => Ok((u, None)),
        (Some(a), None) => {
            let e = g.unary(Fun1::Exp, u);
            Ok((g.binary(Fun2::Add, a, e)?, Some(g.sum(u))))
        }
        (None, Some(b)) => {
            let e = g.unary(Fun1::Exp, u);
            Ok((g.binary(Fun2::Sub, b, e)?, Some(g.sum(u))))
        }
        (Some(a), Some(b)) => {
            let p = g.unary(Fun1::InvLogit, u);
            let width = g.binary(Fun2::Sub, b, a)?;
            let scaled = g.binary(Fun2::Mul, width, p)?;
            let x = g.binary(Fun2::Add, a, scaled)?;
            let l1 = g.unary(Fun1::LogInvLogit, u);
            let l2 = g.unary(Fun1::Log1mInvLogit, u);
            let both = g.binary(Fun2::Add, l1, l2)?;
            let s = g.sum(both);
            let log_width = g.unary(Fun1::Log, width);
            let n = g.shape(u).size();
            let w = if g.shape(width) == Shape::Scalar && n != 1 {
                let n = g.scalar(n as f64);
                g.binary(Fun2::Mul, n, log_width)?
            } else {
                g.sum(log_width)
            };
            Ok((x, Some(g.binary(Fun2::Add, s, w)?)))
        }
    }
}
