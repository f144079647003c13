//! `beta_binomial(N, α, β)`: counts 0..N of N trials with a beta(α, β) success probability;
//! its log CDFs as the finite sums of the pmf, in log space.

use super::{lbeta, lchoose, non_negative, positive, sum_all, with_support, R};
use crate::autodiff::special::lgamma;
use crate::graph::{Error, Graph, NodeId, Shape};

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

/// log P(K ≤ k) (`upper = false`) or log P(K > k) as log Σ_j pmf(j) over j = 0..=min(k, N)
/// or j = k + 1..=N: one row of terms per observation, each log C(N, j) +
/// log B(j + α, N − j + β), reduced by log-sum-exp and less log B(α, β). An empty sum
/// (k < 0, or k ≥ N for the upper tail) is −∞. k and N must be data (whole numbers, as
/// counts are); α and β are one value or one per observation.
fn beta_binomial_cdf(g: &mut Graph, k: NodeId, a: &[NodeId], upper: bool) -> R {
    let (trials, al, be) = (a[0], a[1], a[2]);
    let need_data = || Error::Dist("the `beta_binomial` CDFs need data counts and trials".into());
    let kv = g.const_value(k).ok_or_else(need_data)?.to_vec();
    let nv = g.const_value(trials).ok_or_else(need_data)?.to_vec();
    let sizes = [kv.len(), nv.len(), g.shape(al).size(), g.shape(be).size()];
    let n_obs = sizes.into_iter().max().unwrap_or(1);
    if let Some(&bad) = sizes.iter().find(|&&s| s != 1 && s != n_obs) {
        return Err(Error::Shape {
            op: "beta_binomial_lcdf",
            left: Shape::Vector(n_obs),
            right: Shape::Vector(bad),
        });
    }
    let at = |v: &[f64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    // the j of each observation's terms (empty ranges stay empty)
    let ranges: Vec<(i64, i64)> = (0..n_obs)
        .map(|i| {
            let (kk, nn) = (at(&kv, i).floor() as i64, at(&nv, i) as i64);
            if upper {
                ((kk + 1).max(0), nn)
            } else {
                (0, kk.min(nn))
            }
        })
        .collect();
    let width = ranges
        .iter()
        .map(|&(lo, hi)| (hi - lo + 1).max(1) as usize)
        .max()
        .unwrap_or(1);
    // padding repeats the row's first term under a −∞ mask; an empty row keeps j = 0 and is
    // set to −∞ after the reduction (so its adjoints stay finite)
    let (mut j, mut n, mut mask) = (Vec::new(), Vec::new(), Vec::new());
    for c in 0..width {
        for (i, &(lo, hi)) in ranges.iter().enumerate() {
            let first = if lo <= hi { lo } else { 0 };
            let jj = lo + c as i64;
            let inside = jj <= hi;
            j.push(if inside { jj } else { first } as f64);
            n.push(at(&nv, i));
            mask.push(if inside || lo > hi { 0.0 } else { f64::NEG_INFINITY });
        }
    }
    let shape = Shape::Matrix(n_obs, width);
    let choose: Vec<f64> = j
        .iter()
        .zip(&n)
        .map(|(&jj, &nn)| lgamma(nn + 1.0) - lgamma(jj + 1.0) - lgamma(nn - jj + 1.0))
        .collect();
    let spread = |g: &mut Graph, x: NodeId| -> R {
        if g.shape(x).size() == 1 {
            return Ok(x);
        }
        let idx = (0..width).flat_map(|_| 0..n_obs as u32).collect();
        g.gather_flat(x, idx, shape)
    };
    let (am, bm) = (spread(g, al)?, spread(g, be)?);
    let jn = g.constant(shape, j.clone());
    let rest = g.constant(shape, j.iter().zip(&n).map(|(&jj, &nn)| nn - jj).collect());
    let ja = g.add_nodes(jn, am)?;
    let rb = g.add_nodes(rest, bm)?;
    let b1 = lbeta(g, ja, rb)?;
    let c = g.constant(shape, choose);
    let m = g.constant(shape, mask);
    let terms = sum_all(g, &[b1, c, m])?;
    let rows = g.log_sum_exp_rows(terms);
    let empty: Vec<f64> = ranges
        .iter()
        .map(|&(lo, hi)| if lo > hi { f64::NEG_INFINITY } else { 0.0 })
        .collect();
    let e = g.constant(Shape::Vector(n_obs), empty);
    let rows = g.add_nodes(rows, e)?;
    let all_scalar = [k, trials, al, be].iter().all(|&id| g.shape(id) == Shape::Scalar);
    let rows = if all_scalar {
        g.gather_flat(rows, vec![0], Shape::Scalar)?
    } else {
        rows
    };
    let b0 = lbeta(g, al, be)?;
    let lp = g.sub(rows, b0)?;
    let (c1, c2) = (positive(g, al), positive(g, be));
    with_support(g, lp, &[c1, c2])
}

/// log P(K ≤ k).
pub fn beta_binomial_lcdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    beta_binomial_cdf(g, k, a, false)
}

/// log P(K > k).
pub fn beta_binomial_lccdf(g: &mut Graph, k: NodeId, a: &[NodeId]) -> R {
    beta_binomial_cdf(g, k, a, true)
}
