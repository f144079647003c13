//! Derivatives of the log-joint graph: the scalar trait the evaluator is generic over,
//! reverse mode ([`reverse`]), second order with num-dual ([`dual`]) and central finite
//! differences ([`finite_diff`]).
//!
//! Input: a [`crate::graph::Graph`]. Output: values, gradients w.r.t. w and θ, Hessian–vector
//! products and Hessians. Everything downstream can rely on the three modes agreeing (tests in
//! `tests/it/derivatives.rs`).

pub mod dual;
pub mod finite_diff;
pub mod gemv;
pub mod incomplete;
pub mod numeric;
pub mod owen;
pub mod reverse;
pub mod special;
pub mod theta;
pub mod vmath;
pub mod von_mises_cdf;

use std::borrow::Cow;

use num_dual::{Dual64, DualNum, HyperDual64};

/// The scalar type the evaluator and the reverse sweep run on: f64, or a dual number.
///
/// `apply` builds a special function from its value and first two derivatives at the real
/// part (the chain rule num-dual keeps private); `gemm` is overridden for f64 by nalgebra's
/// matrix product, dual types use the generic loop.
pub trait Scalar: DualNum<Primitive = f64> + Copy + Send + Sync + 'static {
    /// The real part.
    fn real(self) -> f64 {
        self.re()
    }

    /// f(self) for a function with value f0, first derivative f1 and second derivative f2
    /// at the real part.
    fn apply(self, f0: f64, f1: f64, f2: f64) -> Self;

    /// Whether every part is zero (`==` on dual numbers compares only the real part).
    fn is_exact_zero(self) -> bool;

    /// Whether [`Scalar::map_in_place`]'s exponential of an exact zero is exactly one, so
    /// that a kernel may write the one instead of computing it (true for f64; the dual
    /// types keep their derivative parts, so they say no).
    const EXP_OF_ZERO_IS_ONE: bool = false;

    /// Whether [`Scalar::gemm`]'s C += A·B is exactly C + (A[:, p]·b + 0) in a column of B
    /// whose one non-zero entry is b, at row p (and C + 0 in a column of zeros), when A is
    /// finite: each entry's sum over k has exact zeros for its other terms, which add
    /// nothing to it (true for f64, whose kernels start every sum from zero, with or
    /// without fused multiply-adds; the dual types multiply parts in separate products, so
    /// they say no).
    const GEMM_OF_ONE_TERM_IS_ITS_PRODUCT: bool = false;

    /// Constants converted to this scalar type (borrowed for f64).
    fn lift(c: &[f64]) -> Cow<'_, [Self]> {
        Cow::Owned(c.iter().map(|&x| Self::from(x)).collect())
    }

    /// C (m×n) += op(A) · op(B), column-major; A is m×k (k×m when `ta`), B is k×n (n×k when
    /// `tb`).
    #[allow(clippy::too_many_arguments)]
    fn gemm(ta: bool, tb: bool, m: usize, n: usize, k: usize, a: &[Self], b: &[Self], c: &mut [Self]) {
        for j in 0..n {
            for p in 0..k {
                let bv = if tb { b[j + p * n] } else { b[p + j * k] };
                for i in 0..m {
                    let av = if ta { a[p + i * k] } else { a[i + p * m] };
                    c[i + j * m] += av * bv;
                }
            }
        }
    }

    /// log Γ(x).
    fn lgamma(self) -> Self {
        let x = self.real();
        self.apply(special::lgamma(x), special::digamma(x), special::trigamma(x))
    }

    /// ψ(x), the derivative of log Γ.
    fn digamma(self) -> Self {
        let x = self.real();
        self.apply(special::digamma(x), special::trigamma(x), special::tetragamma(x))
    }

    /// log Φ(x), the log standard normal CDF.
    fn log_phi(self) -> Self {
        let x = self.real();
        let r = special::dlog_phi(x);
        self.apply(special::log_phi(x), r, -r * (x + r))
    }

    /// log I₀(x), the log modified Bessel function of the first kind of order 0.
    fn log_bessel_i0(self) -> Self {
        let (r, d1, _) = special::bessel_ratio_derivs(self.real());
        self.apply(special::log_bessel_i0_ratio(self.real()).0, r, d1)
    }

    /// I₁(x)/I₀(x), the derivative of log I₀.
    fn bessel_i_ratio(self) -> Self {
        let (r, d1, d2) = special::bessel_ratio_derivs(self.real());
        self.apply(r, d1, d2)
    }

    /// log(1 + x) for x ∈ [0, 1], the tail of log σ(x). [`DualNum::ln_1p`] by default; f64
    /// uses a cheaper form of the same accuracy.
    fn ln_1p_unit(self) -> Self {
        self.ln_1p()
    }

    /// (log σ(x), σ(−x)): the log-sigmoid and its derivative, for the fused
    /// `bernoulli_logit` likelihood. f64 overrides it with one `exp`, one `ln` and one
    /// division.
    fn log_sigmoid_d(self) -> (Self, Self) {
        (
            crate::graph::eval::log_inv_logit(self),
            crate::graph::eval::inv_logit(-self),
        )
    }

    /// Σᵢ log σ(sᵢηᵢ) over one column of the fused `bernoulli_logit` (sᵢ = +1 where
    /// yᵢ = 1, −1 where yᵢ = 0; `y` and `eta` of one length), writing the partials
    /// ∂/∂ηᵢ = sᵢ σ(−sᵢηᵢ) to `d` when given. f64 overrides it with one `exp` per entry.
    fn bernoulli_logit_col(y: &[Self], eta: &[Self], d: Option<&mut [Self]>) -> Self {
        let mut values = vec![Self::zero(); y.len()];
        Self::bernoulli_logit_point(y, eta, &mut values, d);
        values.into_iter().sum()
    }

    /// `out`ᵢ = log σ(sᵢηᵢ) (sᵢ = +1 where yᵢ = 1, −1 where yᵢ = 0): one column of the
    /// per-observation `bernoulli_logit` log-likelihood, with the partials sᵢ σ(−sᵢηᵢ) in
    /// `d` when given. f64 overrides it with the SIMD kernels of [`vmath`].
    fn bernoulli_logit_point(y: &[Self], eta: &[Self], out: &mut [Self], d: Option<&mut [Self]>) {
        match d {
            Some(d) => {
                for (((o, d), &y), &e) in out.iter_mut().zip(d).zip(y).zip(eta) {
                    (*o, *d) = Self::bernoulli_logit_d(y, e);
                }
            }
            None => {
                for ((o, &y), &e) in out.iter_mut().zip(y).zip(eta) {
                    *o = Self::bernoulli_logit_d(y, e).0;
                }
            }
        }
    }

    /// (log σ(sη), s σ(−sη)) with s = +1 for y = 1 and −1 for y = 0: one observation's
    /// `bernoulli_logit` log-likelihood and its η-partial.
    fn bernoulli_logit_d(y: Self, eta: Self) -> (Self, Self) {
        if y.real() > 0.5 {
            eta.log_sigmoid_d()
        } else {
            let (v, d) = (-eta).log_sigmoid_d();
            (v, -d)
        }
    }

    /// x ← f(x) for every entry (one node of the forward sweep, or a pass inside a fused
    /// likelihood). f64 overrides it with the SIMD kernels of [`vmath`] for exp, log, log1p
    /// and the logistic functions.
    fn map_in_place(f: crate::graph::Fun1, x: &mut [Self]) {
        for v in x {
            *v = crate::graph::eval::unary(f, *v);
        }
    }

    /// φ(x)/Φ(x), the derivative of log Φ.
    fn dlog_phi(self) -> Self {
        let x = self.real();
        let r = special::dlog_phi(x);
        let d1 = -r * (x + r);
        // d/dx of −r(x + r) = −r'(x + r) − r(1 + r')
        let d2 = -d1 * (x + r) - r * (1.0 + d1);
        self.apply(r, d1, d2)
    }
}

/// The SIMD kernel that computes `f` on f64 slices, for the functions that have one.
pub(crate) fn kernel_of(f: crate::graph::Fun1) -> Option<vmath::Map> {
    use crate::graph::Fun1;
    Some(match f {
        Fun1::Exp => vmath::Map::Exp,
        Fun1::Log => vmath::Map::Ln,
        Fun1::Log1p => vmath::Map::Ln1p,
        Fun1::InvLogit => vmath::Map::Sigmoid,
        Fun1::LogInvLogit => vmath::Map::LogSigmoid,
        Fun1::Log1mInvLogit => vmath::Map::LogOneMinusSigmoid,
        _ => return None,
    })
}

/// `f(x)` of one value with exactly the bits `Scalar::map_in_place` gives it in a slice
/// (the same kernel, with the same choice of fused multiply-add), without the slice loop.
pub(crate) fn unary_one(f: crate::graph::Fun1, x: f64) -> f64 {
    match kernel_of(f) {
        Some(kernel) => vmath::map_one(kernel, x),
        None => crate::graph::eval::unary(f, x),
    }
}

impl Scalar for f64 {
    /// `vmath`'s exp of 0 reduces to n = 0, r = 0 and 1 + 0 (a unit test says so).
    const EXP_OF_ZERO_IS_ONE: bool = true;
    /// matrixmultiply's kernels and `gemv::small_gemm` add the k terms of an entry to
    /// accumulators that start at zero; a sum's exact zeros leave its one other term as it
    /// is, whatever the order (a unit test in `autodiff::theta` compares).
    const GEMM_OF_ONE_TERM_IS_ITS_PRODUCT: bool = true;

    fn apply(self, f0: f64, _f1: f64, _f2: f64) -> Self {
        f0
    }

    fn is_exact_zero(self) -> bool {
        self == 0.0
    }

    /// Goldberg's form log(u)·x/(u − 1) with u = 1 + x rounded: accurate to a few ulps, and
    /// one `ln` and one division cost a fraction of libm's `log1p` (the largest single cost
    /// of logistic models, which take it once per observation and draw).
    fn ln_1p_unit(self) -> Self {
        let u = 1.0 + self;
        let d = u - 1.0;
        if d <= 0.0 {
            self
        } else {
            u.ln() * (self / d)
        }
    }

    fn lift(c: &[f64]) -> Cow<'_, [Self]> {
        Cow::Borrowed(c)
    }

    /// [`vmath::bernoulli_logit_sum`]: e^{−|ηᵢ|} by the SIMD exp, the logs of 1 + e^{−|ηᵢ|}
    /// taken of products of 64 entries, the column sum exact to about N·ε absolute (as a
    /// plain sum of N terms of size one) and the partials exact to rounding.
    fn bernoulli_logit_col(y: &[f64], eta: &[f64], d: Option<&mut [f64]>) -> f64 {
        vmath::bernoulli_logit_sum(y, eta, d)
    }

    fn bernoulli_logit_point(y: &[f64], eta: &[f64], out: &mut [f64], d: Option<&mut [f64]>) {
        for ((o, &y), &e) in out.iter_mut().zip(y).zip(eta) {
            *o = if y > 0.5 { e } else { -e };
        }
        if let Some(d) = d {
            // sᵢ σ(−xᵢ) with xᵢ = sᵢηᵢ
            for (d, &x) in d.iter_mut().zip(out.iter()) {
                *d = -x;
            }
            vmath::map_in_place(vmath::Map::Sigmoid, d);
            for (d, &y) in d.iter_mut().zip(y) {
                *d = if y > 0.5 { *d } else { -*d };
            }
        }
        vmath::map_in_place(vmath::Map::LogSigmoid, out);
    }

    fn map_in_place(f: crate::graph::Fun1, x: &mut [f64]) {
        use crate::graph::eval::unary;
        use crate::graph::Fun1;
        let Some(kernel) = kernel_of(f) else {
            // the cheap functions with the formula fixed outside the loop (`unary` chosen
            // per entry cost as much as the arithmetic); the same formulas, so the same bits
            match f {
                Fun1::Neg => x.iter_mut().for_each(|v| *v = unary(Fun1::Neg, *v)),
                Fun1::Sqrt => x.iter_mut().for_each(|v| *v = unary(Fun1::Sqrt, *v)),
                Fun1::Square => x.iter_mut().for_each(|v| *v = unary(Fun1::Square, *v)),
                Fun1::Abs => x.iter_mut().for_each(|v| *v = unary(Fun1::Abs, *v)),
                f => x.iter_mut().for_each(|v| *v = unary(f, *v)),
            }
            return;
        };
        vmath::map_in_place(kernel, x);
    }

    /// With e = e^{−|x|} ∈ (0, 1]: log σ(x) = min(x, 0) − log(1 + e), and σ(−x) is e/(1 + e)
    /// for x ≥ 0, 1/(1 + e) otherwise.
    #[inline]
    fn log_sigmoid_d(self) -> (Self, Self) {
        let e = (-self.abs()).exp();
        let one_e = 1.0 + e;
        let v = self.min(0.0) - e.ln_1p_unit();
        let d = if self >= 0.0 { e / one_e } else { 1.0 / one_e };
        (v, d)
    }

    /// A small product as dgemm's own FMA chains ([`gemv::small_gemm`]), otherwise one call
    /// of matrixmultiply's dgemm (`autodiff::dgemm`).
    fn gemm(ta: bool, tb: bool, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        if m == 0 || n == 0 || k == 0 {
            return;
        }
        if gemv::small_gemm(ta, tb, m, n, k, a, b, c) {
            return;
        }
        dgemm(ta, tb, m, n, k, a, b, c);
    }
}

/// `C += op(A) op(B)` by one call of matrixmultiply's dgemm (sizes as [`Scalar::gemm`]): the
/// transposes are passed as strides, so neither operand is copied.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dgemm(ta: bool, tb: bool, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(
        a.len() >= m * k && b.len() >= k * n && c.len() >= m * n,
        "gemm operand sizes"
    );
    // op(A)[i, p] = a[i·rsa + p·csa], op(B)[p, j] = b[p·rsb + j·csb], C[i, j] = c[i + j·m]
    let (rsa, csa) = if ta { (k, 1) } else { (1, m) };
    let (rsb, csb) = if tb { (n, 1) } else { (1, k) };
    // SAFETY: the slices hold at least m·k, k·n and m·n entries (asserted above) and the
    // strides address exactly those column-major (or transposed) layouts; `c` is
    // exclusively borrowed.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            1.0,
            c.as_mut_ptr(),
            1,
            m as isize,
        );
    }
}

impl Scalar for Dual64 {
    fn apply(self, f0: f64, f1: f64, _f2: f64) -> Self {
        Dual64::new(f0, self.eps * f1)
    }

    fn is_exact_zero(self) -> bool {
        self.re == 0.0 && self.eps == 0.0
    }

    /// (A + εA′)(B + εB′) = AB + ε(AB′ + A′B): up to three f64 products by nalgebra's gemm
    /// (the Hessian's forward-over-reverse pass runs its data products this way).
    fn gemm(ta: bool, tb: bool, m: usize, n: usize, k: usize, a: &[Self], b: &[Self], c: &mut [Self]) {
        let split = |x: &[Dual64]| -> (Vec<f64>, Option<Vec<f64>>) {
            let re = x.iter().map(|v| v.re).collect();
            let has_eps = x.iter().any(|v| v.eps != 0.0);
            (re, has_eps.then(|| x.iter().map(|v| v.eps).collect()))
        };
        let (are, aeps) = split(a);
        let (bre, beps) = split(b);
        let mut cre = vec![0.0; m * n];
        let mut ceps = vec![0.0; m * n];
        f64::gemm(ta, tb, m, n, k, &are, &bre, &mut cre);
        if let Some(be) = &beps {
            f64::gemm(ta, tb, m, n, k, &are, be, &mut ceps);
        }
        if let Some(ae) = &aeps {
            f64::gemm(ta, tb, m, n, k, ae, &bre, &mut ceps);
        }
        for ((cv, r), e) in c.iter_mut().zip(&cre).zip(&ceps) {
            cv.re += r;
            cv.eps += e;
        }
    }
}

impl Scalar for HyperDual64 {
    fn apply(self, f0: f64, f1: f64, f2: f64) -> Self {
        HyperDual64::new(
            f0,
            self.eps1 * f1,
            self.eps2 * f1,
            self.eps1eps2 * f1 + self.eps1 * self.eps2 * f2,
        )
    }

    fn is_exact_zero(self) -> bool {
        self.re == 0.0 && self.eps1 == 0.0 && self.eps2 == 0.0 && self.eps1eps2 == 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn f64_exp_of_zero_is_exactly_one() {
        // what `EXP_OF_ZERO_IS_ONE` promises, in slices of every length the SIMD kernel
        // splits differently, and in the single-value path
        const { assert!(<f64 as Scalar>::EXP_OF_ZERO_IS_ONE) };
        for n in [1, 3, 4, 8, 13] {
            let mut z = vec![0.0; n];
            f64::map_in_place(crate::graph::Fun1::Exp, &mut z);
            assert!(z.iter().all(|&v| v.to_bits() == 1f64.to_bits()), "{z:?}");
        }
        assert_eq!(unary_one(crate::graph::Fun1::Exp, 0.0).to_bits(), 1f64.to_bits());
    }

    #[test]
    fn f64_gemm_matches_generic_loop() {
        let a: Vec<f64> = (0..6).map(|i| i as f64 * 0.5 - 1.0).collect();
        let b: Vec<f64> = (0..6).map(|i| (i as f64).sin()).collect();
        for &(ta, tb) in &[(false, false), (true, false), (false, true), (true, true)] {
            let mut c1 = vec![0.0; 4];
            let mut c2 = vec![Dual64::from(0.0); 4];
            f64::gemm(ta, tb, 2, 2, 3, &a, &b, &mut c1);
            let ad: Vec<Dual64> = a.iter().map(|&x| Dual64::from(x)).collect();
            let bd: Vec<Dual64> = b.iter().map(|&x| Dual64::from(x)).collect();
            Dual64::gemm(ta, tb, 2, 2, 3, &ad, &bd, &mut c2);
            for (x, y) in c1.iter().zip(&c2) {
                assert_relative_eq!(*x, y.re, epsilon = 1e-14);
            }
        }
    }

    /// log σ(x) = min(x, 0) − log1p(e^{−|x|}) and σ(−x) by libm, entry by entry.
    fn log_sigmoid_reference(x: f64) -> (f64, f64) {
        let e = (-x.abs()).exp();
        let d = if x >= 0.0 { e / (1.0 + e) } else { 1.0 / (1.0 + e) };
        (x.min(0.0) - e.ln_1p(), d)
    }

    #[test]
    fn f64_bernoulli_logit_column_matches_libm_over_a_dense_grid() {
        // logits from −800 to 800, dense near 0, including the tails where e^{−|x|} underflows
        let eta: Vec<f64> = (-4000..=4000)
            .map(|i| {
                let t = f64::from(i) / 1000.0;
                t.signum() * (t.abs().powi(3) * 12.5 + t.abs() * 0.01)
            })
            .collect();
        let y: Vec<f64> = (0..eta.len()).map(|i| (i % 3 == 0) as u8 as f64).collect();
        let mut d = vec![0.0; eta.len()];
        let sum = f64::bernoulli_logit_col(&y, &eta, Some(&mut d));
        let mut want = 0.0;
        for (i, (&yi, &e)) in y.iter().zip(&eta).enumerate() {
            let s = if yi > 0.5 { 1.0 } else { -1.0 };
            let (v, dv) = log_sigmoid_reference(s * e);
            want += v;
            assert_relative_eq!(d[i], s * dv, max_relative = 4.0 * f64::EPSILON);
        }
        let n = eta.len() as f64;
        assert!(
            (sum - want).abs() <= n * f64::EPSILON * want.abs().max(1.0),
            "{sum} vs {want}"
        );
        let no_d = f64::bernoulli_logit_col(&y, &eta, None);
        assert_relative_eq!(no_d, sum, max_relative = 1e-15);
        // the generic (per-entry) path agrees with the block-product path
        let dual: Vec<Dual64> = eta.iter().map(|&x| Dual64::from(x)).collect();
        let yd: Vec<Dual64> = y.iter().map(|&x| Dual64::from(x)).collect();
        let generic = Dual64::bernoulli_logit_col(&yd, &dual, None);
        assert!((generic.re - sum).abs() <= n * f64::EPSILON * want.abs().max(1.0));
    }

    #[test]
    fn f64_bernoulli_logit_column_keeps_tiny_terms() {
        // well-separated data: every term is about −e^{−40}; a product of the uᵢ alone would
        // round them all to 0
        let eta = vec![40.0; 100];
        let y = vec![1.0; 100];
        let sum = f64::bernoulli_logit_col(&y, &eta, None);
        assert_relative_eq!(sum, -100.0 * (-40f64).exp(), max_relative = 1e-14);
    }

    #[test]
    fn hyperdual_lgamma_has_trigamma_as_second_derivative() {
        let x = HyperDual64::new(2.5, 1.0, 1.0, 0.0);
        let y = x.lgamma();
        assert_relative_eq!(y.eps1, special::digamma(2.5), epsilon = 1e-14);
        assert_relative_eq!(y.eps1eps2, special::trigamma(2.5), epsilon = 1e-14);
    }
}
