//! Vectorisable `exp` and `ln` for f64, and slice kernels built on them.
//!
//! Input: f64 values or slices. Output: e^x and log x to about one ulp (tested against
//! libm over dense grids and the special values), written without branches or library
//! calls so that loops over slices compile to SIMD code. The slice kernels are compiled
//! three times (AVX-512, AVX2 + FMA, and the baseline target) and pick the widest one the
//! CPU has at run time, so the binary stays portable.
//!
//! Both functions reduce the argument exactly and sum a fixed Taylor polynomial:
//! - e^x: x = n·ln 2 + r with |r| ≤ ½ ln 2 (Cody–Waite: ln 2 split into a 32-bit head,
//!   whose product with n is exact, and a tail); e^r by its Taylor series to r¹³ (truncation
//!   below 2⁻⁵⁷); 2ⁿ applied as two powers of two so that subnormal results round once.
//! - log x: x = 2ᵉ·m with m ∈ [√½, √2), f = m − 1, s = f/(2 + f); log m = 2 atanh s =
//!   2s + s·R(s²), R(z) = Σ 2zᵏ/(2k + 1) to k = 10 (truncation below 2⁻⁵⁸ relative), and
//!   2s is rewritten as f − ½f² + s·½f² so that the leading term f is not rounded.

// Index loops on purpose: iterator adaptors (zip, for_each) are separate functions that the
// target-feature copies of the kernels call instead of inlining, which defeats the SIMD code.
#![allow(clippy::needless_range_loop)]

/// 1.5·2⁵²: adding it rounds a double of magnitude below 2⁵¹ to an integer, kept in the
/// low mantissa bits.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// ln 2 rounded to 32 significant bits (n·LN2_HI is exact for |n| < 2²¹).
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
/// ln 2 − LN2_HI.
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// 1/1!, 1/2!, …, 1/13!: e^r = 1 + r·(1 + r·(1/2 + r·(…))).
const EXP_TAYLOR: [f64; 13] = [
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

/// a·b + c, fused when `F` (the caller runs with the FMA instruction set, so `mul_add` is
/// one instruction rather than a library call).
#[inline(always)]
fn madd<const F: bool>(a: f64, b: f64, c: f64) -> f64 {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// 2^k for an integral k ∈ [−1022, 1023] held in a double.
#[inline(always)]
fn pow2(k: f64) -> f64 {
    // (k + SHIFTER)'s low bits hold k; adding 1023 and shifting makes the exponent field
    let bits = (k + SHIFTER).to_bits().wrapping_sub(SHIFTER.to_bits());
    f64::from_bits(bits.wrapping_add(1023) << 52)
}

/// e^x (see the module header); `F` as in [`madd`].
#[inline(always)]
fn exp_impl<const F: bool>(x: f64) -> f64 {
    let c = &EXP_TAYLOR;
    let xc = x.clamp(-746.0, 710.0);
    let n = (xc * std::f64::consts::LOG2_E + SHIFTER) - SHIFTER;
    let r = madd::<F>(-n, LN2_LO, madd::<F>(-n, LN2_HI, xc));
    // e^r = 1 + (r + r²·P(r)), P(r) = Σₖ c[k+1] rᵏ (k = 0..11) by Estrin's scheme
    let (r2, q) = (r * r, |k: usize| madd::<F>(c[k + 1], r, c[k]));
    let r4 = r2 * r2;
    let lo = madd::<F>(q(3), r2, q(1));
    let mid = madd::<F>(q(7), r2, q(5));
    let hi = madd::<F>(q(11), r2, q(9));
    let p = madd::<F>(madd::<F>(hi, r4, mid), r4, lo);
    let er = 1.0 + madd::<F>(r2, p, r);
    // n = n1 + n2 with both halves in the normal exponent range
    let n1 = (n * 0.5 + SHIFTER) - SHIFTER;
    er * pow2(n1) * pow2(n - n1)
}

/// e^x to about one ulp; +∞ above ln(f64::MAX), 0 below the smallest subnormal, NaN for NaN.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    exp_impl::<false>(x)
}

/// 2/3, 2/5, …, 2/21: the series of 2 atanh(s) = 2s + s·Σ cₖ s²ᵏ.
const LOG_ATANH: [f64; 10] = [
    2.0 / 3.0,
    2.0 / 5.0,
    2.0 / 7.0,
    2.0 / 9.0,
    2.0 / 11.0,
    2.0 / 13.0,
    2.0 / 15.0,
    2.0 / 17.0,
    2.0 / 19.0,
    2.0 / 21.0,
];
const MANTISSA: u64 = (1 << 52) - 1;
/// 2⁵² as bits: or-ing a biased exponent e into the mantissa gives 2⁵² + e.
const TWO52_BITS: u64 = 0x4330_0000_0000_0000;

/// log x (see the module header); `F` as in [`madd`].
#[inline(always)]
fn ln_impl<const F: bool>(x: f64) -> f64 {
    // subnormals: scale into the normal range first
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2⁵⁴
    let bits = xs.to_bits();
    let m = f64::from_bits((bits & MANTISSA) | 1.0f64.to_bits());
    let big = m > std::f64::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    // the biased exponent as a double, exactly: (2⁵² + e_biased) − 2⁵²
    let e_biased = f64::from_bits(TWO52_BITS | (bits >> 52)) - 4_503_599_627_370_496.0;
    let e = e_biased - 1023.0 + if big { 1.0 } else { 0.0 } - if sub { 54.0 } else { 0.0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    // R = z·Q(z), Q(z) = Σₖ c[k] zᵏ (k = 0..9) by Estrin's scheme
    let c = &LOG_ATANH;
    let (z2, q) = (z * z, |k: usize| madd::<F>(c[k + 1], z, c[k]));
    let z4 = z2 * z2;
    let lo = madd::<F>(q(2), z2, q(0));
    let mid = madd::<F>(q(6), z2, q(4));
    let qz = madd::<F>(madd::<F>(q(8), z4, mid), z4, lo);
    let r = qz * z;
    let hfsq = 0.5 * f * f;
    let v = madd::<F>(e, LN2_HI, -((hfsq - madd::<F>(s, hfsq + r, e * LN2_LO)) - f));
    if x > 0.0 && x < f64::INFINITY {
        v
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else {
        f64::NAN
    }
}

/// log x to about one ulp; −∞ at 0, NaN below 0 or for NaN, +∞ at +∞.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    ln_impl::<false>(x)
}

/// log(1 + x) for x > −1 (Goldberg: log u · x/(u − 1) with u = 1 + x rounded, so the
/// rounding of u is corrected to first order): accurate to a few ulps.
#[inline(always)]
fn ln_1p_impl<const F: bool>(x: f64) -> f64 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let v = ln_impl::<F>(u) * (x / d);
    // 1 + x overflows only at x = +∞ (then x/d is NaN); for x ≥ 2⁵³, d = x and v = log x
    if d == 0.0 || x == f64::INFINITY {
        x
    } else {
        v
    }
}

/// log(1 + x) for x > −1, accurate to a few ulps.
#[inline(always)]
pub fn ln_1p(x: f64) -> f64 {
    ln_1p_impl::<false>(x)
}

/// log σ(x) = min(x, 0) − log(1 + e) with e = e^{−|x|} ∈ [0, 1] (so 1 + e cannot
/// overflow: the Goldberg form of [`ln_1p_impl`] without its infinite case).
#[inline(always)]
fn log_sigmoid_impl<const F: bool>(x: f64) -> f64 {
    let e = exp_impl::<F>(-x.abs());
    let u = 1.0 + e;
    let d = u - 1.0;
    let l1p = if d == 0.0 { e } else { ln_impl::<F>(u) * (e / d) };
    x.min(0.0) - l1p
}

/// log σ(x) without overflow.
#[inline(always)]
pub fn log_sigmoid(x: f64) -> f64 {
    log_sigmoid_impl::<false>(x)
}

/// σ(x) = 1/(1 + e^{−x}) without overflow.
#[inline(always)]
fn sigmoid_impl<const F: bool>(x: f64) -> f64 {
    let e = exp_impl::<F>(-x.abs());
    let inv = 1.0 / (1.0 + e);
    if x >= 0.0 {
        inv
    } else {
        e * inv
    }
}

/// σ(x) = 1/(1 + e^{−x}) without overflow.
#[inline(always)]
pub fn sigmoid(x: f64) -> f64 {
    sigmoid_impl::<false>(x)
}

/// Compiles `$generic` (an `#[inline(always)]` function over slices, generic over `F` of
/// [`madd`]) for AVX-512 and AVX2 (both with FMA) and the baseline (without), as `$name`,
/// which dispatches on the running CPU.
macro_rules! dispatch {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $generic:ident) => {
        $(#[$meta])*
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    $generic::<true>($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $generic::<true>($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX-512F and FMA, checked just above.
                    return unsafe { wide($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX2 and FMA, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $generic::<false>($($arg),*)
        }
    };
}

/// An elementwise function of the slice kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Map {
    /// e^x.
    Exp,
    /// log x.
    Ln,
    /// log(1 + x).
    Ln1p,
    /// σ(x).
    Sigmoid,
    /// log σ(x).
    LogSigmoid,
    /// log(1 − σ(x)) = log σ(−x).
    LogOneMinusSigmoid,
}

#[inline(always)]
fn map_in_place_generic<const F: bool>(f: Map, x: &mut [f64]) {
    // index loops, not iterator adaptors: those are separate functions that the
    // target-feature copies would call instead of inlining
    let n = x.len();
    match f {
        Map::Exp => {
            for i in 0..n {
                x[i] = exp_impl::<F>(x[i]);
            }
        }
        Map::Ln => {
            for i in 0..n {
                x[i] = ln_impl::<F>(x[i]);
            }
        }
        Map::Ln1p => {
            for i in 0..n {
                x[i] = ln_1p_impl::<F>(x[i]);
            }
        }
        Map::Sigmoid => {
            for i in 0..n {
                x[i] = sigmoid_impl::<F>(x[i]);
            }
        }
        Map::LogSigmoid => {
            for i in 0..n {
                x[i] = log_sigmoid_impl::<F>(x[i]);
            }
        }
        Map::LogOneMinusSigmoid => {
            for i in 0..n {
                x[i] = log_sigmoid_impl::<F>(-x[i]);
            }
        }
    }
}

dispatch! {
    /// `x[i] ← f(x[i])` for every i.
    pub fn map_in_place(f: Map, x: &mut [f64]) => map_in_place_generic
}

/// `f(x)` of one value, exactly as [`map_in_place`] computes it in a slice: the fused
/// multiply-add is used under the same condition (the CPU has AVX-512F or AVX2, and FMA),
/// and every lane computes the same operations, so the bits are the same; but there is
/// no slice loop to enter (the scalar chains of the single-point path call it).
pub fn map_one(f: Map, x: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "fma")]
        fn fused(f: Map, x: f64) -> f64 {
            let mut v = [x];
            map_in_place_generic::<true>(f, &mut v);
            v[0]
        }
        if (std::arch::is_x86_feature_detected!("avx512f") || std::arch::is_x86_feature_detected!("avx2"))
            && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has FMA, checked just above.
            return unsafe { fused(f, x) };
        }
    }
    let mut v = [x];
    map_in_place_generic::<false>(f, &mut v);
    v[0]
}

/// Whether [`map_one`] and the kernels use the fused multiply-add on this CPU.
fn fused_one() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (std::arch::is_x86_feature_detected!("avx512f") || std::arch::is_x86_feature_detected!("avx2"))
            && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

macro_rules! one_fns {
    ($($m:ident),*) => {
        /// [`map_one`] of `f` as a function of one value, chosen for this CPU when asked (the
        /// same bits as `map_one`): what the single-point path's machine code calls.
        pub fn one_fn(f: Map) -> unsafe extern "C" fn(f64) -> f64 {
            let fused = fused_one();
            match f {
                $(Map::$m => {
                    unsafe extern "C" fn plain(x: f64) -> f64 {
                        let mut v = [x];
                        map_in_place_generic::<false>(Map::$m, &mut v);
                        v[0]
                    }
                    #[cfg(target_arch = "x86_64")]
                    #[target_feature(enable = "fma")]
                    unsafe extern "C" fn with_fma(x: f64) -> f64 {
                        let mut v = [x];
                        map_in_place_generic::<true>(Map::$m, &mut v);
                        v[0]
                    }
                    #[cfg(target_arch = "x86_64")]
                    if fused {
                        return with_fma;
                    }
                    let _ = fused;
                    plain
                })*
            }
        }
    };
}

one_fns!(Exp, Ln, Ln1p, Sigmoid, LogSigmoid, LogOneMinusSigmoid);

/// `out[i] = f(x[i])` for every i (`out` at least as long as `x`).
pub fn map(f: Map, x: &[f64], out: &mut [f64]) {
    let out = &mut out[..x.len()];
    out.copy_from_slice(x);
    map_in_place(f, out);
}

/// Sum with eight independent accumulators (vectorisable; the order differs from a
/// sequential sum only by rounding).
#[inline(always)]
pub fn sum_lanes(x: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let full = x.len() / 8 * 8;
    let mut i = 0;
    while i < full {
        for l in 0..8 {
            acc[l] += x[i + l];
        }
        i += 8;
    }
    let mut tail = 0.0;
    for &v in &x[full..] {
        tail += v;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Entries per block of the column kernels (their scratch lives on the stack).
const BLOCK: usize = 512;

/// The Bernoulli-logit column kernel: with xᵢ = sᵢηᵢ, eᵢ = e^{−|xᵢ|} and uᵢ = 1 + eᵢ
/// rounded, log σ(xᵢ) = min(xᵢ, 0) − log uᵢ − (eᵢ − (uᵢ − 1))/uᵢ to second order in the
/// (exactly computed) rounding of uᵢ. Per block of entries, one loop writes the linear
/// terms, uᵢ and the partials; the logs are then taken of products of 64 consecutive uᵢ ∈
/// [1, 2] per lane (no overflow), one `ln` per 64 entries.
#[inline(always)]
fn bernoulli_block<const F: bool, const D: bool>(y: &[f64], eta: &[f64], d: &mut [f64]) -> f64 {
    let n = y.len().min(eta.len()).min(BLOCK);
    let (mut lin, mut u) = ([0.0f64; BLOCK], [1.0f64; BLOCK]);
    for k in 0..n {
        let (x, s) = if y[k] > 0.5 {
            (eta[k], 1.0)
        } else {
            (-eta[k], -1.0)
        };
        let ex = exp_impl::<F>(-x.abs());
        let uk = 1.0 + ex;
        let inv = 1.0 / uk;
        lin[k] = x.min(0.0) - (ex - (uk - 1.0)) * inv;
        u[k] = uk;
        if D {
            d[k] = s * if x >= 0.0 { ex * inv } else { inv };
        }
    }
    // per-lane products of 64 consecutive u (the unused tail of `u` is 1)
    let mut logs = 0.0;
    for group in u.chunks_exact(8 * 64).take(n.div_ceil(8 * 64)) {
        let mut prod = [1.0f64; 8];
        for j in 0..64 {
            for l in 0..8 {
                prod[l] *= group[8 * j + l];
            }
        }
        for p in prod {
            logs += ln_impl::<F>(p);
        }
    }
    sum_lanes(&lin[..n]) - logs
}

#[inline(always)]
fn bernoulli_logit_generic<const F: bool>(y: &[f64], eta: &[f64], mut d: Option<&mut [f64]>) -> f64 {
    let n = y.len().min(eta.len());
    let mut total = 0.0;
    let mut b0 = 0;
    while b0 < n {
        let b1 = (b0 + BLOCK).min(n);
        let (yb, eb) = (&y[b0..b1], &eta[b0..b1]);
        total += match d.as_deref_mut() {
            Some(d) => bernoulli_block::<F, true>(yb, eb, &mut d[b0..b1]),
            None => bernoulli_block::<F, false>(yb, eb, &mut []),
        };
        b0 = b1;
    }
    total
}

dispatch! {
    /// Σᵢ log σ(sᵢηᵢ) with sᵢ = +1 where yᵢ = 1 and −1 where yᵢ = 0 (`y`, `eta` of one
    /// length), writing the partials sᵢ σ(−sᵢηᵢ) to `d` when given.
    pub fn bernoulli_logit_sum(y: &[f64], eta: &[f64], d: Option<&mut [f64]>) -> f64 => bernoulli_logit_generic
}

#[inline(always)]
fn add_exp_shifted_generic<const F: bool>(x: &[f64], shift: &[f64], acc: &mut [f64]) {
    let n = acc.len().min(x.len()).min(shift.len());
    for i in 0..n {
        let e = exp_impl::<F>(x[i] - shift[i]);
        // a row whose shift is −∞ has seen no finite value: it keeps its sum
        acc[i] += if shift[i] > f64::NEG_INFINITY { e } else { 0.0 };
    }
}

dispatch! {
    /// `acc[i] += e^(x[i] − shift[i])` (nothing where `shift[i]` is −∞): one column of a
    /// row-wise log-sum-exp.
    pub fn add_exp_shifted(x: &[f64], shift: &[f64], acc: &mut [f64]) => add_exp_shifted_generic
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // special values are exact: 0, ±∞, 1
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite doubles of one sign.
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    fn grid(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f64 / n as f64)
    }

    #[test]
    fn exp_is_within_one_ulp_of_libm_on_a_dense_grid() {
        let mut worst = 0;
        for x in grid(-708.0, 709.7, 2_000_003).chain(grid(-1.0, 1.0, 200_001)) {
            worst = worst.max(ulps(exp(x), x.exp()));
        }
        assert!(worst <= 1, "worst error {worst} ulps");
    }

    #[test]
    fn exp_handles_subnormal_results_overflow_and_special_values() {
        for x in grid(-745.1, -708.0, 100_001) {
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 2.0 * 4.9e-324_f64.max(want * 2e-16),
                "{x}: {got} vs {want}"
            );
        }
        assert_eq!(exp(-746.0), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp(709.9), f64::INFINITY);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn ln_is_within_one_ulp_of_libm_across_the_range() {
        let mut worst = 0;
        for x in grid(1e-3, 10.0, 2_000_003)
            .chain(grid(0.9, 1.1, 200_001))
            .chain(grid(-700.0, 700.0, 100_001).map(f64::exp))
        {
            worst = worst.max(ulps(ln(x), x.ln()));
        }
        assert!(worst <= 1, "worst error {worst} ulps");
    }

    #[test]
    fn ln_handles_subnormals_zero_negatives_and_infinity() {
        for x in [4.9e-324, 1e-310, 2.2e-308, f64::MIN_POSITIVE, f64::MAX] {
            assert!(ulps(ln(x), x.ln()) <= 1, "{x}: {} vs {}", ln(x), x.ln());
        }
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(-0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert!(ln(f64::NAN).is_nan());
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn ln_1p_is_accurate_for_tiny_and_large_arguments() {
        for x in grid(-30.0, 30.0, 100_001)
            .map(f64::exp)
            .chain([0.0, 1e-300, f64::MAX])
        {
            let (got, want) = (ln_1p(x), x.ln_1p());
            assert!(ulps(got, want) <= 4, "{x}: {got} vs {want}");
        }
        assert_eq!(ln_1p(f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn sigmoid_and_log_sigmoid_match_the_direct_forms() {
        for x in grid(-40.0, 40.0, 80_001) {
            let want = 1.0 / (1.0 + (-x).exp());
            assert!((sigmoid(x) - want).abs() <= 1e-15 * want, "{x}");
            let lwant = -(-x).exp().ln_1p();
            let lwant = if x < -30.0 { x - x.exp().ln_1p() } else { lwant };
            assert!(
                (log_sigmoid(x) - lwant).abs() <= 1e-15 * lwant.abs().max(1e-300),
                "{x}"
            );
        }
        assert_eq!(log_sigmoid(-800.0), -800.0);
        assert_eq!(sigmoid(-800.0), 0.0);
    }

    #[test]
    fn the_dispatched_map_equals_the_scalar_functions() {
        let x: Vec<f64> = grid(-20.0, 20.0, 1001).collect();
        let mut out = vec![0.0; x.len()];
        for (f, scalar) in [
            (Map::Exp, exp as fn(f64) -> f64),
            (Map::Sigmoid, sigmoid),
            (Map::LogSigmoid, log_sigmoid),
            (Map::LogOneMinusSigmoid, |v: f64| log_sigmoid(-v)),
        ] {
            map(f, &x, &mut out);
            for (o, &v) in out.iter().zip(&x) {
                assert!(ulps(*o, scalar(v)) <= 2, "{f:?} at {v}: {o} vs {}", scalar(v));
            }
        }
        let pos: Vec<f64> = x.iter().map(|v| v.abs() + 1e-3).collect();
        map(Map::Ln, &pos, &mut out);
        for (o, &v) in out.iter().zip(&pos) {
            assert!(ulps(*o, v.ln()) <= 1, "ln {v}");
        }
        map(Map::Ln1p, &pos, &mut out);
        for (o, &v) in out.iter().zip(&pos) {
            assert!(ulps(*o, v.ln_1p()) <= 4, "ln_1p {v}");
        }
    }

    #[test]
    fn bernoulli_logit_sum_matches_the_terms_and_partials() {
        let eta: Vec<f64> = grid(-50.0, 50.0, 999).collect();
        let y: Vec<f64> = (0..eta.len()).map(|i| (i % 3 == 0) as u8 as f64).collect();
        let mut d = vec![0.0; eta.len()];
        let sum = bernoulli_logit_sum(&y, &eta, Some(&mut d));
        let mut want = 0.0;
        for ((&y, &e), &d) in y.iter().zip(&eta).zip(&d) {
            let s = if y > 0.5 { 1.0 } else { -1.0 };
            want += -(-s * e).exp().ln_1p();
            let dw = s / (1.0 + (s * e).exp());
            assert!((d - dw).abs() <= 1e-15 * dw.abs().max(1e-300), "{e}: {d} vs {dw}");
        }
        assert!((sum - want).abs() <= 1e-12 * want.abs(), "{sum} vs {want}");
        let no_d = bernoulli_logit_sum(&y, &eta, None);
        assert!((no_d - sum).abs() <= 1e-12 * sum.abs());
    }

    #[test]
    fn add_exp_shifted_skips_rows_without_a_finite_value() {
        let mut acc = vec![1.0, 2.0];
        add_exp_shifted(&[0.5, f64::NEG_INFINITY], &[0.0, f64::NEG_INFINITY], &mut acc);
        assert!((acc[0] - (1.0 + 0.5f64.exp())).abs() < 1e-15);
        assert_eq!(acc[1], 2.0);
    }
}
