//! Matrix–vector products for the single-point path, equal to the bit to what
//! matrixmultiply's `dgemm` computes for the same product with one column.
//!
//! A product with one column (`X * w` at one point, and its reverse `Xᵀ ȳ`) through `dgemm`
//! packs the whole matrix into the kernel's panels on every call: for a 5000 × 24 design
//! matrix that copy costs about as much as the product, twice per gradient. These read the
//! matrix in place. They reproduce `dgemm`'s arithmetic exactly, so that the single-point
//! path stays equal to the batched path to the bit (`tests/it/point_gradient.rs`): with FMA
//! (every x86-64 CPU with AVX2), `dgemm`'s kernels form each entry of the product as one
//! chain of fused multiply-adds over the inner index, starting from zero, in blocks of
//! [`KC`] inner indices, and add each block's chain to C (`C ← C + AB` with β = 1). Without
//! FMA (other CPUs) the functions decline and the caller uses `dgemm`.

/// matrixmultiply's inner-dimension block for `dgemm` (`D_KC`).
pub const KC: usize = 256;

/// `out[i] += Σ_p a[i + p·m] x[p]` (A is m × k, column-major), as `dgemm(m, k, 1)` with
/// β = 1. Returns false, leaving `out` untouched, when the CPU has no FMA.
pub fn gemv_n(m: usize, k: usize, a: &[f64], x: &[f64], out: &mut [f64]) -> bool {
    assert!(
        a.len() >= m * k && x.len() >= k && out.len() >= m,
        "gemv operand sizes"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_fma() {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { gemv_n_fma(m, k, a, x, out) };
            return true;
        }
    }
    false
}

/// `out[p] += Σ_i a[i + p·m] y[i]` (Aᵀ y, A m × k column-major), as
/// `dgemm` of Aᵀ (k × m) by y with β = 1. Returns false, leaving `out` untouched, when the
/// CPU has no FMA.
pub fn gemv_t(m: usize, k: usize, a: &[f64], y: &[f64], out: &mut [f64]) -> bool {
    assert!(
        a.len() >= m * k && y.len() >= m && out.len() >= k,
        "gemv operand sizes"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_fma() {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { gemv_t_fma(m, k, a, y, out) };
            return true;
        }
    }
    false
}

/// Products with at most this many multiply-adds (m·n·k) go to [`small_gemm`].
pub const SMALL_GEMM: usize = 2048;

/// `C += op(A) op(B)` (C m × n column-major, op(A) m × k, op(B) k × n, each operand
/// transposed when its flag is set) for a product of at most [`SMALL_GEMM`] multiply-adds
/// and k ≤ [`KC`], as `dgemm` computes it (one fused multiply-add chain per entry from zero,
/// then added to C) but without its packing buffers, which cost more than a small product
/// (a 2 × 2 matrix times a vector per step and column of a recursion). Returns false,
/// leaving `c` untouched, for larger products or a CPU without FMA.
#[allow(clippy::too_many_arguments)]
pub fn small_gemm(
    ta: bool,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
) -> bool {
    if m * n * k > SMALL_GEMM || k > KC {
        return false;
    }
    assert!(
        a.len() >= m * k && b.len() >= k * n && c.len() >= m * n,
        "gemm operand sizes"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_fma() {
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { small_gemm_fma(ta, tb, m, n, k, a, b, c) };
            return true;
        }
    }
    false
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn small_gemm_fma(ta: bool, tb: bool, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    // op(A)[i, p] = a[i·rsa + p·csa], op(B)[p, j] = b[p·rsb + j·csb]
    let (rsa, csa) = if ta { (k, 1) } else { (1, m) };
    let (rsb, csb) = if tb { (n, 1) } else { (1, k) };
    for j in 0..n {
        for i in 0..m {
            let mut s = 0.0f64;
            for p in 0..k {
                s = a[i * rsa + p * csa].mul_add(b[p * rsb + j * csb], s);
            }
            c[i + j * m] += s;
        }
    }
}

/// matrixmultiply takes an FMA kernel (AVX-512 or AVX2 + FMA) exactly when the CPU has
/// AVX2 and FMA (every AVX-512 CPU has both).
#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// No FMA kernels off x86-64: the callers use `dgemm`.
#[cfg(not(target_arch = "x86_64"))]
fn has_fma() -> bool {
    false
}

/// Rows in chunks of 64, so that a block's partial sums stay in a stack array.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemv_n_fma(m: usize, k: usize, a: &[f64], x: &[f64], out: &mut [f64]) {
    const ROWS: usize = 64;
    let mut i0 = 0;
    while i0 < m {
        let rows = ROWS.min(m - i0);
        let mut p0 = 0;
        while p0 < k {
            let mut acc = [0.0f64; ROWS];
            for p in p0..(p0 + KC).min(k) {
                let col = &a[p * m + i0..p * m + i0 + rows];
                let xp = x[p];
                for (s, &v) in acc[..rows].iter_mut().zip(col) {
                    *s = v.mul_add(xp, *s);
                }
            }
            for (o, s) in out[i0..i0 + rows].iter_mut().zip(&acc[..rows]) {
                *o += *s;
            }
            p0 += KC;
        }
        i0 += ROWS;
    }
}

/// Eight columns at a time, so that eight independent chains keep the FMA units busy.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemv_t_fma(m: usize, k: usize, a: &[f64], y: &[f64], out: &mut [f64]) {
    const COLS: usize = 8;
    let mut p = 0;
    while p + COLS <= k {
        let cols: [&[f64]; COLS] = std::array::from_fn(|j| &a[(p + j) * m..(p + j + 1) * m]);
        let mut i0 = 0;
        while i0 < m {
            let mut acc = [0.0f64; COLS];
            for i in i0..(i0 + KC).min(m) {
                let yi = y[i];
                for (s, col) in acc.iter_mut().zip(&cols) {
                    *s = col[i].mul_add(yi, *s);
                }
            }
            for (o, s) in out[p..p + COLS].iter_mut().zip(&acc) {
                *o += *s;
            }
            i0 += KC;
        }
        p += COLS;
    }
    for q in p..k {
        let col = &a[q * m..(q + 1) * m];
        let mut i0 = 0;
        while i0 < m {
            let mut s = 0.0f64;
            for i in i0..(i0 + KC).min(m) {
                s = col[i].mul_add(y[i], s);
            }
            out[q] += s;
            i0 += KC;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autodiff::Scalar;

    /// Deterministic values of mixed signs and magnitudes.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 10f64.powi((s % 7) as i32 - 3)
            })
            .collect()
    }

    /// Small products equal dgemm's to the bit, every transpose, up to the size limit.
    #[test]
    fn small_products_equal_dgemm_to_the_bit() {
        for &(m, n, k) in &[
            (1, 1, 1),
            (2, 1, 2),
            (2, 2, 2),
            (3, 5, 4),
            (10, 10, 10),
            (1, 7, 256),
            (16, 8, 16),
        ] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = values(m * k, (m * 31 + k) as u64);
                let b = values(k * n, (n * 17 + k) as u64);
                let c0 = values(m * n, 9);
                let mut want = c0.clone();
                crate::autodiff::dgemm(ta, tb, m, n, k, &a, &b, &mut want);
                let mut got = c0.clone();
                if !small_gemm(ta, tb, m, n, k, &a, &b, &mut got) {
                    assert!(m * n * k > SMALL_GEMM || !has_fma(), "{m} × {n} × {k} declined");
                    continue;
                }
                assert!(
                    want.iter().zip(&got).all(|(w, g)| w.to_bits() == g.to_bits()),
                    "{m} × {n} × {k}, transposes {ta} {tb}"
                );
            }
        }
        let mut c = [0.0];
        assert!(
            !small_gemm(false, false, 1, 1, 300, &[0.0; 300], &[0.0; 300], &mut c),
            "k > KC"
        );
    }

    /// Both products equal dgemm's to the bit, across the block and chunk boundaries
    /// (inner dimensions below, at and above KC; row and column counts off the chunk sizes).
    #[test]
    fn matrix_vector_products_equal_dgemm_to_the_bit() {
        for &(m, k) in &[
            (1, 1),
            (7, 3),
            (64, 24),
            (65, 9),
            (300, 17),
            (5000, 24),
            (3, 700),
            (513, 257),
        ] {
            let a = values(m * k, (m * 31 + k) as u64);
            let x = values(k, 5);
            let y = values(m, 6);
            let c0 = values(m.max(k), 7);
            let mut want = c0[..m].to_vec();
            f64::gemm(false, false, m, 1, k, &a, &x, &mut want);
            let mut got = c0[..m].to_vec();
            if !gemv_n(m, k, &a, &x, &mut got) {
                return; // no FMA on this CPU: the callers use dgemm
            }
            assert!(
                want.iter().zip(&got).all(|(w, g)| w.to_bits() == g.to_bits()),
                "A x, {m} × {k}"
            );
            let mut want = c0[..k].to_vec();
            f64::gemm(true, false, k, 1, m, &a, &y, &mut want);
            let mut got = c0[..k].to_vec();
            assert!(gemv_t(m, k, &a, &y, &mut got));
            assert!(
                want.iter().zip(&got).all(|(w, g)| w.to_bits() == g.to_bits()),
                "Aᵀ y, {m} × {k}"
            );
        }
    }
}
