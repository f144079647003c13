//! Constraint transforms from ℝ to a parameter's support and their log-Jacobians (Stan's:
//! lower bound `a + exp(u)`, upper bound `b − exp(u)`, both `a + (b − a)·inv_logit(u)`).
//!
//! Input: an unconstrained slice node. Output: the constrained value node and, for `param`,
//! the log |dx/du| node added to the target; `hyper` values get no Jacobian.

use super::{Error, Fun1, Fun2, Graph, NodeId};

/// Bounds of a `real` or `vector` declaration (numbers: lowering evaluates data bounds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Constraint {
    /// `<lower=a>`.
    pub lower: Option<f64>,
    /// `<upper=b>`.
    pub upper: Option<f64>,
}

impl Constraint {
    /// No bounds.
    pub const NONE: Constraint = Constraint {
        lower: None,
        upper: None,
    };

    /// `<lower=a>`.
    pub fn lower(a: f64) -> Constraint {
        Constraint {
            lower: Some(a),
            upper: None,
        }
    }

    /// `<lower=a, upper=b>`.
    pub fn interval(a: f64, b: f64) -> Constraint {
        Constraint {
            lower: Some(a),
            upper: Some(b),
        }
    }

    /// The constrained value of an unconstrained number u (f64, for reports).
    pub fn constrain(&self, u: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => u,
            (Some(a), None) => a + u.exp(),
            (None, Some(b)) => b - u.exp(),
            (Some(a), Some(b)) => a + (b - a) / (1.0 + (-u).exp()),
        }
    }

    /// The unconstrained number u of a constrained value x (for initial values of `hyper`).
    pub fn unconstrain(&self, x: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => x,
            (Some(a), None) => (x - a).ln(),
            (None, Some(b)) => (b - x).ln(),
            (Some(a), Some(b)) => {
                let p = (x - a) / (b - a);
                (p / (1.0 - p)).ln()
            }
        }
    }

    /// Whether any bound is present.
    pub fn is_none(&self) -> bool {
        self.lower.is_none() && self.upper.is_none()
    }
}

/// The constrained value of `u` and the log-Jacobian (a scalar node; `None` without bounds).
pub(crate) fn lower_transform(
    g: &mut Graph,
    u: NodeId,
    c: &Constraint,
) -> Result<(NodeId, Option<NodeId>), Error> {
    match (c.lower, c.upper) {
        (None, None) => Ok((u, None)),
        (Some(a), None) => {
            let e = g.unary(Fun1::Exp, u);
            let a = g.scalar(a);
            let x = g.binary(Fun2::Add, a, e)?;
            Ok((x, Some(g.sum(u))))
        }
        (None, Some(b)) => {
            let e = g.unary(Fun1::Exp, u);
            let b = g.scalar(b);
            let x = g.binary(Fun2::Sub, b, e)?;
            Ok((x, Some(g.sum(u))))
        }
        (Some(a), Some(b)) => {
            let p = g.unary(Fun1::InvLogit, u);
            let width = g.scalar(b - a);
            let scaled = g.binary(Fun2::Mul, width, p)?;
            let a_node = g.scalar(a);
            let x = g.binary(Fun2::Add, a_node, scaled)?;
            let l1 = g.unary(Fun1::LogInvLogit, u);
            let l2 = g.unary(Fun1::Log1mInvLogit, u);
            let both = g.binary(Fun2::Add, l1, l2)?;
            let s = g.sum(both);
            let n = g.scalar(g.shape(u).size() as f64 * (b - a).ln());
            Ok((x, Some(g.binary(Fun2::Add, s, n)?)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn unconstrain_inverts_constrain() {
        for c in [
            Constraint::NONE,
            Constraint::lower(1.5),
            Constraint::interval(-1.0, 3.0),
            Constraint {
                lower: None,
                upper: Some(2.0),
            },
        ] {
            for &u in &[-2.0, 0.0, 0.7] {
                assert_relative_eq!(c.unconstrain(c.constrain(u)), u, epsilon = 1e-12);
            }
        }
    }
}
