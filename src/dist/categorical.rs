//! `categorical_logit(β)`: categories 1..K; β a vector of logits (for one outcome or an
//! array of outcomes sharing it) or an N×K matrix with one row of logits per observation.
//! `categorical(θ)`: the same with a vector of probabilities θ (a simplex, as in Stan).
//! The outcome must be data (its values pick entries of β).

use crate::graph::{Error, Fun1, Graph, NodeId, Shape};

use super::{non_negative, sums_to_one, with_support, R};

/// The outcome's categories as 1-based integers (`dist` names the family in the error).
pub(crate) fn labels(g: &Graph, y: NodeId, dist: &str) -> Result<Vec<i64>, Error> {
    let v = g
        .const_value(y)
        .ok_or_else(|| Error::Dist(format!("`{dist}` needs a data outcome")))?;
    Ok(v.iter().map(|&x| x as i64).collect())
}

/// log θ\[y\] per observation (−∞ when θ is not a simplex: an entry negative, or a sum other
/// than 1, as Stan rejects it).
pub fn categorical(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let theta = a[0];
    let ys = labels(g, y, "categorical")?;
    let picked = g.gather(theta, &ys)?;
    let picked = if g.shape(y) == Shape::Scalar {
        g.index(picked, 1)?
    } else {
        picked
    };
    let lp = g.unary(Fun1::Log, picked);
    let c = non_negative(g, theta);
    let one = sums_to_one(g, theta);
    with_support(g, lp, &[c, one])
}

/// The class probabilities θ.
pub fn probabilities_simplex(_g: &mut Graph, a: &[NodeId]) -> R {
    Ok(a[0])
}

/// β\[y\] − log_sum_exp(β) per observation.
pub fn categorical_logit(g: &mut Graph, y: NodeId, a: &[NodeId]) -> R {
    let beta = a[0];
    let ys = labels(g, y, "categorical_logit")?;
    match g.shape(beta) {
        Shape::Matrix(n, k) => {
            if ys.len() != n {
                return Err(Error::Dist(format!(
                    "`categorical_logit`: {} outcomes for {n} rows of logits",
                    ys.len()
                )));
            }
            let mut idx = Vec::with_capacity(n);
            for (i, &c) in ys.iter().enumerate() {
                if c < 1 || c as usize > k {
                    return Err(Error::Index { index: c, size: k });
                }
                idx.push((i + (c as usize - 1) * n) as u32);
            }
            let picked = g.gather_flat(beta, idx, Shape::Vector(n))?;
            let lse = g.log_sum_exp_rows(beta);
            g.sub(picked, lse)
        }
        _ => {
            let picked = g.gather(beta, &ys)?;
            let picked = if g.shape(y) == Shape::Scalar {
                g.index(picked, 1)?
            } else {
                picked
            };
            let lse = g.log_sum_exp(beta);
            g.sub(picked, lse)
        }
    }
}

/// Class probabilities: softmax(β), or the row-wise softmax as an N×K matrix.
pub fn probabilities(g: &mut Graph, a: &[NodeId]) -> R {
    let beta = a[0];
    match g.shape(beta) {
        Shape::Matrix(_, k) => {
            let lse = g.log_sum_exp_rows(beta);
            let ones = g.constant(Shape::Matrix(1, k), vec![1.0; k]);
            // an n-vector times a 1×K row of ones: the n×K matrix of row-wise log Σ exp.
            let spread = g.matmul(lse, ones)?;
            let d = g.sub(beta, spread)?;
            Ok(g.unary(crate::graph::Fun1::Exp, d))
        }
        _ => g.softmax(beta),
    }
}
