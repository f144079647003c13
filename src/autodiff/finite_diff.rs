//! Central finite differences of the value and of the gradient: the independent check the
//! exact modes are compared against (accurate to about 1e-7 relative with step 1e-5 scaled
//! by the coordinate).

use nalgebra::{DMatrix, DVector};

/// The step for coordinate x: h·max(1, |x|).
pub fn step(h: f64, x: f64) -> f64 {
    h * x.abs().max(1.0)
}

/// ∇f at x by central differences of f.
pub fn gradient(f: &dyn Fn(&[f64]) -> f64, x: &[f64], h: f64) -> DVector<f64> {
    let mut xp = x.to_vec();
    DVector::from_iterator(
        x.len(),
        (0..x.len()).map(|i| {
            let e = step(h, x[i]);
            xp[i] = x[i] + e;
            let fp = f(&xp);
            xp[i] = x[i] - e;
            let fm = f(&xp);
            xp[i] = x[i];
            (fp - fm) / (2.0 * e)
        }),
    )
}

/// The Hessian at x by central differences of the gradient g.
pub fn hessian(g: &dyn Fn(&[f64]) -> DVector<f64>, x: &[f64], h: f64) -> DMatrix<f64> {
    let d = x.len();
    let mut out = DMatrix::zeros(d, d);
    let mut xp = x.to_vec();
    for j in 0..d {
        let e = step(h, x[j]);
        xp[j] = x[j] + e;
        let gp = g(&xp);
        xp[j] = x[j] - e;
        let gm = g(&xp);
        xp[j] = x[j];
        out.set_column(j, &((gp - gm) / (2.0 * e)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn central_difference_of_cubic_is_accurate() {
        let f = |x: &[f64]| x[0].powi(3) + x[0] * x[1];
        let g = gradient(&f, &[2.0, 1.0], 1e-5);
        assert_relative_eq!(g[0], 13.0, max_relative = 1e-8);
        assert_relative_eq!(g[1], 2.0, max_relative = 1e-8);
    }
}
