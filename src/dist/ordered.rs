//! `ordered_logistic(η, c)` and `ordered_probit(η, c)`: categories 1..K from a latent
//! η + ε cut at the increasing cutpoints c (K − 1 of them), ε logistic or standard normal:
//! P(y = k) = F(η − c_{k−1}) − F(η − c_k) with c₀ = −∞, c_K = +∞. η is one value or one
//! per observation; the outcome must be data (its values pick the cutpoints).

use super::categorical::labels;
use super::{f1, log_diff_exp, with_support, R};
use crate::graph::{Error, Fun1, Graph, NodeId, Shape, GATHER_ZERO};

/// The link's log F and log(1 − F).
#[derive(Clone, Copy)]
enum Link {
    Logistic,
    Probit,
}

impl Link {
    fn log_cdf(self, g: &mut Graph, x: NodeId) -> NodeId {
        match self {
            Link::Logistic => f1(g, Fun1::LogInvLogit, x),
            Link::Probit => f1(g, Fun1::LogPhi, x),
        }
    }

    fn log_ccdf(self, g: &mut Graph, x: NodeId) -> NodeId {
        match self {
            Link::Logistic => f1(g, Fun1::Log1mInvLogit, x),
            Link::Probit => {
                let n = g.neg(x);
                f1(g, Fun1::LogPhi, n)
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Link::Logistic => "ordered_logistic",
            Link::Probit => "ordered_probit",
        }
    }
}

/// η at the given (0-based) observations, as a vector.
fn eta_at(g: &mut Graph, eta: NodeId, obs: &[usize]) -> R {
    let idx = obs
        .iter()
        .map(|&i| {
            if g.shape(eta) == Shape::Scalar {
                0
            } else {
                i as u32
            }
        })
        .collect();
    g.gather_flat(eta, idx, Shape::Vector(obs.len()))
}

/// η − c at the observations, c the cutpoint (0-based) each one uses.
fn gap(g: &mut Graph, eta: NodeId, c: NodeId, obs: &[usize], cut: &[usize]) -> R {
    let e = eta_at(g, eta, obs)?;
    let cs = g.gather_flat(
        c,
        cut.iter().map(|&k| k as u32).collect(),
        Shape::Vector(cut.len()),
    )?;
    g.sub(e, cs)
}

/// A group's values placed at its observations in an n-vector (zeros elsewhere).
fn scatter(g: &mut Graph, v: NodeId, obs: &[usize], n: usize) -> R {
    let mut idx = vec![GATHER_ZERO; n];
    for (j, &i) in obs.iter().enumerate() {
        idx[i] = j as u32;
    }
    g.gather_flat(v, idx, Shape::Vector(n))
}

/// 0 when the cutpoints increase strictly, −∞ otherwise.
fn increasing(g: &mut Graph, c: NodeId) -> R {
    let m = g.shape(c).size();
    if m < 2 {
        return Ok(g.scalar(0.0));
    }
    let hi = g.gather_flat(c, (1..m as u32).collect(), Shape::Vector(m - 1))?;
    let lo = g.gather_flat(c, (0..m as u32 - 1).collect(), Shape::Vector(m - 1))?;
    let d = g.sub(hi, lo)?;
    Ok(g.support(d, 0.0, f64::INFINITY, true))
}

fn ordinal(g: &mut Graph, y: NodeId, a: &[NodeId], link: Link) -> R {
    let (eta, c) = (a[0], a[1]);
    let ys = labels(g, y, link.name())?;
    let k = g.shape(c).size() + 1;
    if let Some(&bad) = ys.iter().find(|&&v| v < 1 || v as usize > k) {
        return Err(Error::Index { index: bad, size: k });
    }
    let n = ys.len();
    let (mut first, mut last, mut middle) = (vec![], vec![], vec![]);
    for (i, &v) in ys.iter().enumerate() {
        match v as usize {
            1 => first.push(i),
            v if v == k => last.push(i),
            _ => middle.push(i),
        }
    }
    let mut parts = vec![];
    if !first.is_empty() {
        // P(y = 1) = 1 − F(η − c₁)
        let b = gap(g, eta, c, &first, &vec![0; first.len()])?;
        let lp = link.log_ccdf(g, b);
        parts.push(scatter(g, lp, &first, n)?);
    }
    if !last.is_empty() {
        // P(y = K) = F(η − c_{K−1})
        let a = gap(g, eta, c, &last, &vec![k - 2; last.len()])?;
        let lp = link.log_cdf(g, a);
        parts.push(scatter(g, lp, &last, n)?);
    }
    if !middle.is_empty() {
        let lo: Vec<usize> = middle.iter().map(|&i| ys[i] as usize - 2).collect();
        let hi: Vec<usize> = middle.iter().map(|&i| ys[i] as usize - 1).collect();
        let a = gap(g, eta, c, &middle, &lo)?;
        let b = gap(g, eta, c, &middle, &hi)?;
        let (fa, fb) = (link.log_cdf(g, a), link.log_cdf(g, b));
        let lp = log_diff_exp(g, fa, fb)?;
        parts.push(scatter(g, lp, &middle, n)?);
    }
    let mut lp = parts[0];
    for &p in &parts[1..] {
        lp = g.add_nodes(lp, p)?;
    }
    if g.shape(y) == Shape::Scalar {
        lp = g.index(lp, 1)?;
    }
    let ok = increasing(g, c)?;
    with_support(g, lp, &[ok])
}

/// log P(y | η, c) with the logistic link.
pub fn ordered_logistic(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    ordinal(g, y, a, Link::Logistic)
}

/// log P(y | η, c) with the probit link.
pub fn ordered_probit(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    ordinal(g, y, a, Link::Probit)
}

/// The latent location η.
pub fn location(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}
