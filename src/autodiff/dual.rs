//! Second order with num-dual: Hessian–vector products by forward-over-reverse (`Dual64`
//! inputs w + εv through the forward and reverse sweeps give ∇ + ε H v), the full Hessian as
//! D such products in one batched pass, and an independent all-forward reference (`Dual64`
//! gradients, `HyperDual64` Hessian entries) through the generic evaluator.
//!
//! Input: a graph, θ and one point w. Output: H·v, H (D×D, symmetrised), or the forward-mode
//! gradient. The forward-over-reverse results agree with the all-forward ones to rounding.

use nalgebra::{DMatrix, DVector};
use num_dual::{Dual64, HyperDual64};

use super::reverse::value_grad_with;
use crate::graph::eval::{forward, lift_consts};
use crate::graph::Graph;

fn lift_point<T: super::Scalar>(x: &[f64]) -> Vec<T> {
    x.iter().map(|&v| T::from(v)).collect()
}

/// H·v at w by forward-over-reverse: one forward and one reverse sweep in `Dual64`.
pub fn hvp(graph: &Graph, theta: &[f64], w: &[f64], v: &[f64]) -> DVector<f64> {
    let consts = lift_consts::<Dual64>(graph);
    let wd: Vec<Dual64> = w.iter().zip(v).map(|(&x, &e)| Dual64::new(x, e)).collect();
    let g = value_grad_with(graph, &consts, &lift_point(theta), &wd, 1, false, None);
    DVector::from_iterator(w.len(), g.grad_w.iter().map(|x| x.eps))
}

/// The full Hessian at w, symmetrised (the two triangles of [`hessian_raw`] agree to
/// rounding).
pub fn hessian(graph: &Graph, theta: &[f64], w: &[f64]) -> DMatrix<f64> {
    let h = hessian_raw(graph, theta, w);
    (&h + h.transpose()) * 0.5
}

/// The Hessian at w as computed: the D products H·eⱼ as the D batch columns of one
/// forward-over-reverse pass (in parallel chunks), not symmetrised.
pub fn hessian_raw(graph: &Graph, theta: &[f64], w: &[f64]) -> DMatrix<f64> {
    let d = w.len();
    hessian_times(graph, theta, w, &DMatrix::identity(d, d))
}

/// H·V at w for the K columns of V (D×K): the K products H·vⱼ as the batch columns of one
/// forward-over-reverse pass (in parallel chunks of columns).
pub fn hessian_times(graph: &Graph, theta: &[f64], w: &[f64], v: &DMatrix<f64>) -> DMatrix<f64> {
    let (d, k) = (w.len(), v.ncols());
    if d == 0 || k == 0 {
        return DMatrix::zeros(d, k);
    }
    let consts = lift_consts::<Dual64>(graph);
    let th = lift_point::<Dual64>(theta);
    let chunk = crate::graph::eval::CHUNK.min(k);
    let starts: Vec<usize> = (0..k).step_by(chunk).collect();
    use rayon::prelude::*;
    let parts: Vec<Vec<f64>> = starts
        .par_iter()
        .map(|&j0| {
            let j1 = (j0 + chunk).min(k);
            let mut wd = Vec::with_capacity(d * (j1 - j0));
            for j in j0..j1 {
                wd.extend(w.iter().zip(v.column(j).iter()).map(|(&x, &e)| Dual64::new(x, e)));
            }
            let g = value_grad_with(graph, &consts, &th, &wd, j1 - j0, false, None);
            g.grad_w.iter().map(|x| x.eps).collect()
        })
        .collect();
    DMatrix::from_iterator(d, k, parts.into_iter().flatten())
}

/// The gradient at w by forward mode: D passes with `Dual64` (batched as D columns).
pub fn forward_grad(graph: &Graph, theta: &[f64], w: &[f64]) -> DVector<f64> {
    let d = w.len();
    let consts = lift_consts::<Dual64>(graph);
    let mut wd = Vec::with_capacity(d * d);
    for j in 0..d {
        wd.extend(
            w.iter()
                .enumerate()
                .map(|(i, &x)| Dual64::new(x, if i == j { 1.0 } else { 0.0 })),
        );
    }
    let tape = forward(graph, &consts, &lift_point(theta), &wd, d);
    DVector::from_iterator(d, tape.target_values().iter().map(|x| x.eps))
}

/// The gradient w.r.t. θ by forward mode (reference for the reverse ∇_θ).
pub fn forward_grad_theta(graph: &Graph, theta: &[f64], w: &[f64]) -> DVector<f64> {
    let p = theta.len();
    let consts = lift_consts::<Dual64>(graph);
    let wd = lift_point::<Dual64>(w);
    (0..p)
        .map(|j| {
            let th: Vec<Dual64> = theta
                .iter()
                .enumerate()
                .map(|(i, &x)| Dual64::new(x, if i == j { 1.0 } else { 0.0 }))
                .collect();
            forward(graph, &consts, &th, &wd, 1).target_values()[0].eps
        })
        .collect::<Vec<_>>()
        .into()
}

/// The full Hessian by the all-forward path: one `HyperDual64` pass per entry of the upper
/// triangle (batched as columns). The reference the tests compare forward-over-reverse with.
pub fn hessian_forward(graph: &Graph, theta: &[f64], w: &[f64]) -> DMatrix<f64> {
    let d = w.len();
    let consts = lift_consts::<HyperDual64>(graph);
    let pairs: Vec<(usize, usize)> = (0..d).flat_map(|i| (i..d).map(move |j| (i, j))).collect();
    let mut wd = Vec::with_capacity(d * pairs.len());
    for &(i, j) in &pairs {
        wd.extend(w.iter().enumerate().map(|(k, &x)| {
            HyperDual64::new(
                x,
                if k == i { 1.0 } else { 0.0 },
                if k == j { 1.0 } else { 0.0 },
                0.0,
            )
        }));
    }
    let tape = forward(graph, &consts, &lift_point(theta), &wd, pairs.len());
    let vals = tape.target_values();
    let mut h = DMatrix::zeros(d, d);
    for (&(i, j), v) in pairs.iter().zip(&vals) {
        h[(i, j)] = v.eps1eps2;
        h[(j, i)] = v.eps1eps2;
    }
    h
}

/// The second directional derivatives uᵀ H v for every pair of `dirs` (the (i, j) entry is
/// dirsᵢᵀ H dirsⱼ) by the all-forward path: one `HyperDual64` column per pair of the upper
/// triangle. The reference for forward-over-reverse when D is too large for a full Hessian.
pub fn directional_hessian_forward(
    graph: &Graph,
    theta: &[f64],
    w: &[f64],
    dirs: &[DVector<f64>],
) -> DMatrix<f64> {
    let k = dirs.len();
    let consts = lift_consts::<HyperDual64>(graph);
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i..k).map(move |j| (i, j))).collect();
    let mut wd = Vec::with_capacity(w.len() * pairs.len());
    for &(i, j) in &pairs {
        wd.extend(
            w.iter()
                .enumerate()
                .map(|(c, &x)| HyperDual64::new(x, dirs[i][c], dirs[j][c], 0.0)),
        );
    }
    let tape = forward(graph, &consts, &lift_point(theta), &wd, pairs.len());
    let vals = tape.target_values();
    let mut m = DMatrix::zeros(k, k);
    for (&(i, j), v) in pairs.iter().zip(&vals) {
        m[(i, j)] = v.eps1eps2;
        m[(j, i)] = v.eps1eps2;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Constraint, Fun1, Shape};
    use approx::assert_relative_eq;

    fn cubic_graph() -> Graph {
        // f(x, y) = x² y + sin(x) + exp(y)
        let mut g = Graph::new(2, 0);
        let w = g.param_slice(0, Shape::Vector(2), &Constraint::NONE).unwrap();
        let x = g.index(w, 1).unwrap();
        let y = g.index(w, 2).unwrap();
        let x2 = g.unary(Fun1::Square, x);
        let a = g.mul(x2, y).unwrap();
        let b = g.unary(Fun1::Sin, x);
        let c = g.unary(Fun1::Exp, y);
        let ab = g.add_nodes(a, b).unwrap();
        let t = g.add_nodes(ab, c).unwrap();
        g.add_target(t).unwrap();
        g
    }

    #[test]
    fn hessian_of_known_function_is_exact() {
        let g = cubic_graph();
        let (x, y) = (0.7, -0.3);
        let h = hessian(&g, &[], &[x, y]);
        let want = [[2.0 * y - x.sin(), 2.0 * x], [2.0 * x, y.exp()]];
        for i in 0..2 {
            for j in 0..2 {
                assert_relative_eq!(h[(i, j)], want[i][j], epsilon = 1e-13);
            }
        }
        let hf = hessian_forward(&g, &[], &[x, y]);
        assert_relative_eq!(h, hf, epsilon = 1e-13);
        let v = hvp(&g, &[], &[x, y], &[1.0, 2.0]);
        assert_relative_eq!(v, &h * DVector::from_vec(vec![1.0, 2.0]), epsilon = 1e-13);
    }

    #[test]
    fn directional_second_derivatives_are_the_hessian_between_directions() {
        let g = cubic_graph();
        let w = [0.7, -0.3];
        let h = hessian(&g, &[], &w);
        let dirs = [
            DVector::from_vec(vec![1.0, 2.0]),
            DVector::from_vec(vec![-0.5, 0.25]),
        ];
        let m = directional_hessian_forward(&g, &[], &w, &dirs);
        for i in 0..2 {
            for j in 0..2 {
                let want = dirs[i].dot(&(&h * &dirs[j]));
                assert_relative_eq!(m[(i, j)], want, epsilon = 1e-13);
            }
        }
    }
}
