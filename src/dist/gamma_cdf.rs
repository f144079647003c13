//! The log CDFs of `gamma(α, β)` (shape, rate) and `inv_gamma(α, β)` (shape, scale), through
//! the log regularised incomplete gamma functions: P(X ≤ x) = P(α, βx) for the gamma and
//! Q(α, β/x) for the inverse gamma (1/X is gamma with rate β). Both CDFs are defined at
//! x = 0 (log CDF −∞, log complementary CDF 0); negative x is outside the support (−∞).

use super::{non_negative, positive, with_support, R};
use crate::graph::{Fun2, Graph, NodeId};

/// log P(α, βx) (`upper = false`) or log Q(α, βx), with the support checks.
fn gamma_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], upper: bool) -> R {
    let (al, be) = (a[0], a[1]);
    let bx = g.mul(be, x)?;
    let f = if upper { Fun2::LogGammaQ } else { Fun2::LogGammaP };
    let lp = g.binary(f, al, bx)?;
    let (c1, c2, c3) = (positive(g, al), positive(g, be), non_negative(g, x));
    with_support(g, lp, &[c1, c2, c3])
}

/// log P(α, βx).
pub fn gamma_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    gamma_cdf(g, x, a, false)
}

/// log Q(α, βx).
pub fn gamma_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    gamma_cdf(g, x, a, true)
}

/// log Q(α, β/x) (`upper = false`, the CDF) or log P(α, β/x), with the support checks.
fn inv_gamma_cdf(g: &mut Graph, x: NodeId, a: &[NodeId], upper: bool) -> R {
    let (al, be) = (a[0], a[1]);
    let bx = g.div(be, x)?;
    let f = if upper { Fun2::LogGammaP } else { Fun2::LogGammaQ };
    let lp = g.binary(f, al, bx)?;
    let (c1, c2, c3) = (positive(g, al), positive(g, be), non_negative(g, x));
    with_support(g, lp, &[c1, c2, c3])
}

/// log Q(α, β/x).
pub fn inv_gamma_lcdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    inv_gamma_cdf(g, x, a, false)
}

/// log P(α, β/x).
pub fn inv_gamma_lccdf(g: &mut Graph, x: NodeId, a: &[NodeId]) -> R {
    inv_gamma_cdf(g, x, a, true)
}
