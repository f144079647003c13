//! `von_mises(μ, κ)` (location μ, concentration κ), a density on any interval of length 2π
//! (y real, as in Stan); its log CDFs on [−π, π] by Stan's algorithm
//! ([`crate::autodiff::von_mises_cdf`]).

use super::{f1, non_negative, with_support, R};
use crate::graph::{Fun1, Fun3, Graph, NodeId};

/// κ cos(y − μ) − log 2π − log I₀(κ).
pub fn von_mises(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let (mu, kappa) = (a[0], a[1]);
    let d = g.sub(y, mu)?;
    let c = f1(g, Fun1::Cos, d);
    let kc = g.mul(kappa, c)?;
    let li = f1(g, Fun1::LogBesselI0, kappa);
    let t = g.sub(kc, li)?;
    let lp = super::affine(g, -(2.0 * std::f64::consts::PI).ln(), 1.0, t)?;
    // κ = 0 is the uniform density on the circle, as in Stan
    let c1 = non_negative(g, kappa);
    with_support(g, lp, &[c1])
}

/// log F(y) (`upper = false`) or log(1 − F(y)) on [−π, π], with κ ≥ 0.
fn von_mises_cdf(g: &mut Graph, y: NodeId, a: &[NodeId], upper: bool) -> R {
    let f = if upper {
        Fun3::LogVonMisesCcdf
    } else {
        Fun3::LogVonMisesCdf
    };
    let lp = g.ternary(f, [y, a[0], a[1]])?;
    let c = non_negative(g, a[1]);
    with_support(g, lp, &[c])
}

/// log P(Y ≤ y) for Y on [−π, π].
pub fn von_mises_lcdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    von_mises_cdf(g, y, a, false)
}

/// log P(Y > y) for Y on [−π, π].
pub fn von_mises_lccdf(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    von_mises_cdf(g, y, a, true)
}
