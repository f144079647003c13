//! The Stan functions of LANGUAGE.md's second list (`log_mix`, `log_diff_exp`, `Phi`,
//! `cumulative_sum`, `quad_form`, `gp_exp_quad_cov`, ...) as compositions of graph
//! operations, so their adjoints and dual-number forms come from the operations' own rules.
//! Shapes were checked in `check::builtins`; `shape` is the checked result shape.

use crate::dist;
use crate::graph::{Error, Fun1, Graph, NodeId, Shape, GATHER_ZERO};

type R = Result<NodeId, Error>;

/// The Stan function `name` on `a` (shapes as `check::builtins` allows, `shape` the result's),
/// or [`Graph::call`] for the basic built-ins.
///
/// # Errors
/// Shape errors of the operations, or [`Error::Dist`] for an unknown name.
pub fn stan_function(g: &mut Graph, name: &str, a: &[NodeId], shape: Shape) -> R {
    match (name, a) {
        ("log1m_exp", [x]) => Ok(dist::log1m_exp(g, *x)),
        ("Phi", [x]) => {
            let l = g.unary(Fun1::LogPhi, *x);
            Ok(g.unary(Fun1::Exp, l))
        }
        ("Phi_approx", [x]) => phi_approx(g, *x),
        ("inv_cloglog", [x]) => {
            // 1 − exp(−eˣ) = −expm1(−eˣ)
            let e = g.unary(Fun1::Exp, *x);
            let n = g.neg(e);
            let m = g.unary(Fun1::Expm1, n);
            Ok(g.neg(m))
        }
        ("log_diff_exp", [x, y]) => dist::log_diff_exp(g, *x, *y),
        ("lbeta", [x, y]) => dist::lbeta(g, *x, *y),
        ("lchoose", [x, y]) => dist::lchoose(g, *x, *y),
        ("log_mix", [t, l1, l2]) => {
            let lt = g.unary(Fun1::Log, *t);
            let nt = g.neg(*t);
            let l1mt = g.unary(Fun1::Log1p, nt);
            let a = g.add_nodes(lt, *l1)?;
            let b = g.add_nodes(l1mt, *l2)?;
            dist::log_add_exp(g, a, b)
        }
        ("log_mix", [t, lps]) => log_mix(g, *t, *lps),
        ("cumulative_sum", [x]) => Ok(g.cumsum(*x)),
        ("head", [x, _]) => pick(g, *x, 0, shape),
        ("tail", [x, _]) => {
            let start = g.shape(*x).size() - shape.size();
            pick(g, *x, start, shape)
        }
        ("segment", [x, i, _]) => {
            let i = g.const_value(*i).map_or(1.0, |v| v[0]) as usize;
            pick(g, *x, i - 1, shape)
        }
        ("reverse", [x]) => {
            let n = g.shape(*x).size() as u32;
            g.gather_flat(*x, (0..n).rev().collect(), shape)
        }
        ("dot_self", [x]) => {
            let s = g.unary(Fun1::Square, *x);
            Ok(g.sum(s))
        }
        ("quad_form", [m, b]) => {
            let mb = g.matmul(*m, *b)?;
            if shape == Shape::Scalar {
                return g.dot(*b, mb);
            }
            let bt = g.transpose(*b);
            g.matmul(bt, mb)
        }
        ("diag_pre_multiply", [v, m]) => {
            let n = g.shape(*m).cols();
            let ones = g.constant(Shape::Matrix(1, n), vec![1.0; n]);
            let spread = g.matmul(*v, ones)?;
            g.mul(spread, *m)
        }
        ("diag_post_multiply", [m, v]) => {
            let r = g.shape(*m).rows();
            let ones = g.constant(Shape::Matrix(r, 1), vec![1.0; r]);
            let vt = g.transpose(*v);
            let spread = g.matmul(ones, vt)?;
            g.mul(*m, spread)
        }
        ("multiply_lower_tri_self_transpose", [m]) => {
            let (r, c) = (g.shape(*m).rows(), g.shape(*m).cols());
            let idx = (0..r * c)
                .map(|k| if k % r >= k / r { k as u32 } else { GATHER_ZERO })
                .collect();
            let l = g.gather_flat(*m, idx, Shape::Matrix(r, c))?;
            let lt = g.transpose(l);
            g.matmul(l, lt)
        }
        ("tcrossprod", [m]) => {
            let mt = g.transpose(*m);
            g.matmul(*m, mt)
        }
        ("crossprod", [m]) => {
            let mt = g.transpose(*m);
            g.matmul(mt, *m)
        }
        ("to_matrix", [x, ..]) => {
            let n = g.shape(*x).size() as u32;
            g.gather_flat(*x, (0..n).collect(), shape)
        }
        ("gp_exp_quad_cov" | "cov_exp_quad", [x, alpha, rho]) => gp_exp_quad_cov(g, *x, *alpha, *rho),
        _ => g.call(name, a),
    }
}

/// Stan's logistic approximation of Φ: inv_logit(0.07056 x³ + 1.5976 x).
fn phi_approx(g: &mut Graph, x: NodeId) -> R {
    let x2 = g.unary(Fun1::Square, x);
    let c = g.scalar(0.07056);
    let cx2 = g.mul(c, x2)?;
    let k = g.scalar(1.5976);
    let inner = g.add_nodes(cx2, k)?;
    let t = g.mul(inner, x)?;
    Ok(g.unary(Fun1::InvLogit, t))
}

/// log Σₖ θₖ exp(lpₖ) for a vector of log densities, or that summed over the rows of an
/// N×K matrix (Stan's array-of-vectors form).
fn log_mix(g: &mut Graph, theta: NodeId, lps: NodeId) -> R {
    let lt = g.unary(Fun1::Log, theta);
    match g.shape(lps) {
        Shape::Matrix(..) if g.shape(theta) == g.shape(lps) => {
            // one row of weights per row of log densities
            let s = g.add_nodes(lt, lps)?;
            let rows = g.log_sum_exp_rows(s);
            Ok(g.sum(rows))
        }
        Shape::Matrix(n, _) => {
            let ones = g.constant(Shape::Matrix(n, 1), vec![1.0; n]);
            let ltt = g.transpose(lt);
            let spread = g.matmul(ones, ltt)?;
            let s = g.add_nodes(spread, lps)?;
            let rows = g.log_sum_exp_rows(s);
            Ok(g.sum(rows))
        }
        _ => {
            let s = g.add_nodes(lt, lps)?;
            Ok(g.log_sum_exp(s))
        }
    }
}

/// Entries start .. start + len of x.
fn pick(g: &mut Graph, x: NodeId, start: usize, shape: Shape) -> R {
    let idx = (start..start + shape.size()).map(|i| i as u32).collect();
    g.gather_flat(x, idx, shape)
}

/// K[i, j] = α² exp(−(xᵢ − xⱼ)² / (2ρ²)).
fn gp_exp_quad_cov(g: &mut Graph, x: NodeId, alpha: NodeId, rho: NodeId) -> R {
    let n = g.shape(x).size();
    let sq = Shape::Matrix(n, n);
    let xi = g.gather_flat(x, (0..n * n).map(|k| (k % n) as u32).collect(), sq)?;
    let xj = g.gather_flat(x, (0..n * n).map(|k| (k / n) as u32).collect(), sq)?;
    let d = g.sub(xi, xj)?;
    let d2 = g.unary(Fun1::Square, d);
    let r2 = g.unary(Fun1::Square, rho);
    let h = g.scalar(-0.5);
    let s = g.div(h, r2)?;
    let e = g.mul(s, d2)?;
    let k = g.unary(Fun1::Exp, e);
    let a2 = g.unary(Fun1::Square, alpha);
    g.mul(a2, k)
}
