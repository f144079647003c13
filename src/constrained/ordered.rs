//! `ordered[K]`: a strictly increasing vector, from K free coordinates (Stan's
//! `ordered_constrain`): x₁ = u₁, xₖ = xₖ₋₁ + exp(uₖ). Inverse: u₁ = x₁,
//! uₖ = log(xₖ − xₖ₋₁). Log-Jacobian: Σₖ₌₂ uₖ (the map is triangular).

use super::{
    cumsum, pick, Error, Fun1, Fun2, Graph, Invalid, Lowered, NodeId, Shape, TypeEntry, TypeKind, GATHER_ZERO,
};

/// The table row.
pub(super) const ENTRY: TypeEntry = TypeEntry {
    kind: TypeKind::Ordered,
    min_size: 1,
    free: |k| k,
    lower,
    constrain,
    unconstrain,
    log_jacobian: |u, _| u.iter().skip(1).sum(),
    validate,
    two_size: None,
};

fn constrain(u: &[f64], _k: usize) -> Vec<f64> {
    let mut x = Vec::with_capacity(u.len());
    for (i, &v) in u.iter().enumerate() {
        x.push(if i == 0 { v } else { x[i - 1] + v.exp() });
    }
    x
}

fn unconstrain(x: &[f64], _k: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| if i == 0 { x[0] } else { (x[i] - x[i - 1]).ln() })
        .collect()
}

fn lower(g: &mut Graph, u: NodeId, k: usize) -> Result<Lowered, Error> {
    if k == 1 {
        return Ok((u, None));
    }
    // v = (u₁, exp(u₂), …, exp(u_K)), then x = running sums of v.
    let rest = pick(g, u, 1..k)?;
    let e = g.unary(Fun1::Exp, rest);
    let mut first = vec![GATHER_ZERO; k];
    first[0] = 0;
    let head = g.gather_flat(u, first, Shape::Vector(k))?;
    let tail = g.gather_flat(
        e,
        std::iter::once(GATHER_ZERO).chain(0..k as u32 - 1).collect(),
        Shape::Vector(k),
    )?;
    let v = g.binary(Fun2::Add, head, tail)?;
    Ok((cumsum(g, v, k)?, Some(g.sum(rest))))
}

/// Strictly increasing.
pub(super) fn check_increasing(x: &[f64]) -> Result<(), Invalid> {
    for i in 1..x.len() {
        if x[i].partial_cmp(&x[i - 1]) != Some(std::cmp::Ordering::Greater) {
            return Err(Invalid::at(
                i,
                format!(
                    "it is not increasing: entry {} is {}, entry {} is {}",
                    i,
                    x[i - 1],
                    i + 1,
                    x[i]
                ),
            ));
        }
    }
    Ok(())
}

fn validate(x: &[f64], _k: usize) -> Result<(), Invalid> {
    check_increasing(x)
}
