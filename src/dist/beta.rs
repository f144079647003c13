//! `beta(a, b)` on 0 < x < 1, with its log CDFs through the log regularised incomplete beta
//! function.

use super::{f1, positive, sum_all, with_support, R};
use crate::graph::{Fun1, Fun3, Graph, NodeId};

/// lgamma(a + b) − lgamma(a) − lgamma(b) + (a − 1) log x + (b − 1) log1p(−x).
pub fn beta(g: &mut Graph, x: NodeId, args: &[NodeId]) -> R {
    let (a, b) = (args[0], args[1]);
    let ab = g.add_nodes(a, b)?;
    let l_ab = f1(g, Fun1::Lgamma, ab);
    let la = f1(g, Fun1::Lgamma, a);
    let lb = f1(g, Fun1::Lgamma, b);
    let one = g.scalar(1.0);
    let am1 = g.sub(a, one)?;
    let bm1 = g.sub(b, one)?;
    let lx = f1(g, Fun1::Log, x);
    let nx = g.neg(x);
    let l1mx = f1(g, Fun1::Log1p, nx);
    let t1 = g.mul(am1, lx)?;
    let t2 = g.mul(bm1, l1mx)?;
    let (nla, nlb) = (g.neg(la), g.neg(lb));
    let lp = sum_all(g, &[l_ab, nla, nlb, t1, t2])?;
    let c1 = positive(g, a);
    let c2 = positive(g, b);
    let c3 = g.support(x, 0.0, 1.0, true);
    with_support(g, lp, &[c1, c2, c3])
}

/// log I_x(a, b) (`upper = false`) or log(1 − I_x(a, b)), with the support checks.
fn beta_cdf(g: &mut Graph, x: NodeId, args: &[NodeId], upper: bool) -> R {
    let f = if upper {
        Fun3::LogBetaIncC
    } else {
        Fun3::LogBetaInc
    };
    let lp = g.ternary(f, [x, args[0], args[1]])?;
    let c1 = positive(g, args[0]);
    let c2 = positive(g, args[1]);
    // the CDFs are defined at the ends: I_0 = 0 and I_1 = 1
    let c3 = g.support(x, 0.0, 1.0, false);
    with_support(g, lp, &[c1, c2, c3])
}

/// log I_x(a, b), the regularised incomplete beta function.
pub fn beta_lcdf(g: &mut Graph, x: NodeId, args: &[NodeId]) -> R {
    beta_cdf(g, x, args, false)
}

/// log(1 − I_x(a, b)).
pub fn beta_lccdf(g: &mut Graph, x: NodeId, args: &[NodeId]) -> R {
    beta_cdf(g, x, args, true)
}

/// a / (a + b).
pub fn mean(g: &mut Graph, args: &[NodeId]) -> R {
    let ab = g.add_nodes(args[0], args[1])?;
    g.div(args[0], ab)
}
