//! `beta_binomial(N, α, β)`: counts 0..N of N trials with a beta(α, β) success probability.

use super::{lbeta, lchoose, non_negative, positive, sum_all, with_support, R};
use crate::graph::{Graph, NodeId};

/// log C(N, n) + log B(n + α, N − n + β) − log B(α, β).
pub fn beta_binomial(g: &mut Graph, n: NodeId, a: &[NodeId]) -> R {
    let (trials, al, be) = (a[0], a[1], a[2]);
    let c = lchoose(g, trials, n)?;
    let na = g.add_nodes(n, al)?;
    let rest = g.sub(trials, n)?;
    let rb = g.add_nodes(rest, be)?;
    let b1 = lbeta(g, na, rb)?;
    let b0 = lbeta(g, al, be)?;
    let b0 = g.neg(b0);
    let lp = sum_all(g, &[c, b1, b0])?;
    let (c1, c2, c3, c4) = (
        positive(g, al),
        positive(g, be),
        non_negative(g, n),
        non_negative(g, rest),
    );
    with_support(g, lp, &[c1, c2, c3, c4])
}

/// The mean N α / (α + β).
pub fn mean(g: &mut Graph, a: &[NodeId]) -> R {
    let ab = g.add_nodes(a[1], a[2])?;
    let p = g.div(a[1], ab)?;
    g.mul(a[0], p)
}
