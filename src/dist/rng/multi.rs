//! Draws of the multivariate and simplex families: multi_normal (Σ = L Lᵀ by Cholesky),
//! multi_normal_cholesky, multi_student_t (a normal over √(χ²_ν/ν)), dirichlet (normalised
//! gammas, in log space), categorical and categorical_logit (inverse CDF of the class
//! probabilities), multinomial (sequential binomials), ordered_logistic and ordered_probit
//! (a latent η + ε cut at the cutpoints), lkj_corr_cholesky (Stan's C-vine of canonical
//! partial correlations), lkj_corr (L Lᵀ of it), wishart_cholesky (Bartlett) and
//! inv_wishart_cholesky (the Cholesky factor of the inverse of a Wishart(ν, S⁻¹) draw).
//!
//! Input and output as [`super::draw`]; matrices are column-major.

use super::{binomial, open01, std_normal, RngArg};
use nalgebra::DMatrix;
use rand::RngCore;
use rand_distr::{Beta, ChiSquared, Distribution, Gamma};

/// Stan's tolerance for a simplex's sum and a matrix's symmetry.
const TOLERANCE: f64 = 1e-8;

/// Draw a multivariate family's `name_rng(args)` into `out`.
pub(super) fn draw(
    name: &str,
    args: &[RngArg<'_>],
    out: &mut [f64],
    rng: &mut dyn RngCore,
) -> Result<(), String> {
    match name {
        "multi_normal" | "multi_normal_cholesky" => {
            arity(name, args, 2)?;
            let l = if name == "multi_normal" {
                cholesky_of_cov(name, "Sigma", args[1])?
            } else {
                lower_factor(name, "L", args[1], false)?
            };
            multi_normal(name, args[0], &l, None, out, rng)
        }
        "multi_student_t" => {
            arity(name, args, 3)?;
            let nu = scalar(name, "nu", args[0])?;
            if nu.is_nan() || nu <= 0.0 {
                return Err(format!("{name}_rng: nu is {nu}, but must be positive"));
            }
            let l = cholesky_of_cov(name, "Sigma", args[2])?;
            multi_normal(name, args[1], &l, Some(nu), out, rng)
        }
        "dirichlet" => {
            arity(name, args, 1)?;
            dirichlet(args[0].values, out, rng)
        }
        "categorical" => {
            arity(name, args, 1)?;
            let theta = simplex(name, args[0].values)?;
            one_out(name, out)?;
            out[0] = pick(theta, 1.0, rng);
            Ok(())
        }
        "categorical_logit" => {
            arity(name, args, 1)?;
            categorical_logit(args[0], out, rng)
        }
        "multinomial" => {
            arity(name, args, 2)?;
            multinomial(args[0].values, args[1], out, rng)
        }
        "lkj_corr_cholesky" | "lkj_corr" => {
            arity(name, args, 2)?;
            lkj(name, args, out, rng)
        }
        "wishart_cholesky" | "inv_wishart_cholesky" => {
            arity(name, args, 2)?;
            wishart(name, args, out, rng)
        }
        "ordered_logistic" | "ordered_probit" => {
            arity(name, args, 2)?;
            ordinal(name, args, out, rng)
        }
        _ => Err(format!("`{name}_rng` is not a distribution's random draw")),
    }
}

fn arity(name: &str, args: &[RngArg<'_>], n: usize) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!("{name}_rng: takes {n} arguments, found {}", args.len()))
    }
}

fn one_out(name: &str, out: &[f64]) -> Result<(), String> {
    if out.len() == 1 {
        Ok(())
    } else {
        Err(format!(
            "{name}_rng: draws one int, but the result has {} entries",
            out.len()
        ))
    }
}

fn scalar(name: &str, pname: &str, a: RngArg<'_>) -> Result<f64, String> {
    match a.values {
        [v] => Ok(*v),
        v => Err(format!(
            "{name}_rng: {pname} must be one number, found {} entries",
            v.len()
        )),
    }
}

fn matrix(name: &str, pname: &str, a: RngArg<'_>) -> Result<DMatrix<f64>, String> {
    if a.rows != a.cols || a.values.len() != a.rows * a.cols {
        return Err(format!(
            "{name}_rng: {pname} must be a square matrix, found {} × {}",
            a.rows, a.cols
        ));
    }
    if let Some(v) = a.values.iter().find(|v| !v.is_finite()) {
        return Err(format!(
            "{name}_rng: {pname} has an entry {v}, but its entries must be finite"
        ));
    }
    Ok(DMatrix::from_column_slice(a.rows, a.cols, a.values))
}

/// The lower triangle of a factor argument, with its diagonal positive when `positive`.
fn lower_factor(name: &str, pname: &str, a: RngArg<'_>, positive: bool) -> Result<DMatrix<f64>, String> {
    let m = matrix(name, pname, a)?.lower_triangle();
    if positive {
        if let Some(d) = m.diagonal().iter().find(|&&d| d <= 0.0) {
            return Err(format!(
                "{name}_rng: {pname} has a diagonal entry {d}, but must be a Cholesky factor (positive diagonal)"
            ));
        }
    }
    Ok(m)
}

/// L with Σ = L Lᵀ, for a symmetric positive definite Σ.
fn cholesky_of_cov(name: &str, pname: &str, a: RngArg<'_>) -> Result<DMatrix<f64>, String> {
    let s = matrix(name, pname, a)?;
    let k = s.nrows();
    for j in 0..k {
        for i in j + 1..k {
            if (s[(i, j)] - s[(j, i)]).abs() > TOLERANCE {
                return Err(format!(
                    "{name}_rng: {pname} is not symmetric: entry [{}, {}] is {} but [{}, {}] is {}",
                    i + 1,
                    j + 1,
                    s[(i, j)],
                    j + 1,
                    i + 1,
                    s[(j, i)]
                ));
            }
        }
    }
    nalgebra::Cholesky::new(s)
        .map(|c| c.l())
        .ok_or_else(|| format!("{name}_rng: {pname} is not positive definite"))
}

/// μ + L z (over √(χ²_ν/ν) when `nu` is given), one draw per row of a matrix μ.
fn multi_normal(
    name: &str,
    mu: RngArg<'_>,
    l: &DMatrix<f64>,
    nu: Option<f64>,
    out: &mut [f64],
    rng: &mut dyn RngCore,
) -> Result<(), String> {
    let k = l.nrows();
    if let Some(v) = mu.values.iter().find(|v| !v.is_finite()) {
        return Err(format!("{name}_rng: mu has an entry {v}, but must be finite"));
    }
    let n = out.len().checked_div(k).unwrap_or(0);
    let fits = n * k == out.len()
        && match mu.values.len() {
            1 => true,
            len if len == k => n == 1,
            len => len == n * k && mu.rows == n,
        };
    if !fits {
        return Err(format!(
            "{name}_rng: mu has {} × {} entries, which does not fit a result of {} entries with {k} columns",
            mu.rows,
            mu.cols,
            out.len()
        ));
    }
    let chi = nu
        .map(|nu| ChiSquared::new(nu).map_err(|e| format!("{name}_rng: {e}")))
        .transpose()?;
    let mut z = nalgebra::DVector::zeros(k);
    for r in 0..n {
        z.iter_mut().for_each(|v| *v = std_normal(rng));
        let scale = chi.as_ref().map_or(1.0, |c| {
            (nu.expect("chi is built from nu") / c.sample(rng)).sqrt()
        });
        let x = l * &z;
        for j in 0..k {
            let m = match mu.values.len() {
                1 => mu.values[0],
                len if len == k && n == 1 => mu.values[j],
                _ => mu.values[r + n * j],
            };
            out[r + n * j] = m + scale * x[j];
        }
    }
    Ok(())
}

/// x = softmax(log g) with log gₖ = log Gamma(αₖ + 1) + log(U)/αₖ: normalised Gamma(αₖ)
/// draws, without underflow at small α.
fn dirichlet(alpha: &[f64], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    if out.len() != alpha.len() {
        return Err(format!(
            "dirichlet_rng: alpha has {} entries, but the result has {}",
            alpha.len(),
            out.len()
        ));
    }
    for (o, &a) in out.iter_mut().zip(alpha) {
        if !(a.is_finite() && a > 0.0) {
            return Err(format!(
                "dirichlet_rng: alpha has an entry {a}, but must be positive and finite"
            ));
        }
        let g = Gamma::new(a + 1.0, 1.0)
            .map_err(|e| format!("dirichlet_rng: {e}"))?
            .sample(rng);
        *o = g.ln() + open01(rng).ln() / a;
    }
    softmax_in_place(out);
    Ok(())
}

fn softmax_in_place(x: &mut [f64]) {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    x.iter_mut().for_each(|v| *v = (*v - m).exp());
    let s: f64 = x.iter().sum();
    x.iter_mut().for_each(|v| *v /= s);
}

/// θ after checking it is a simplex (entries ≥ 0, sum within 1e-8 of 1).
fn simplex<'a>(name: &str, theta: &'a [f64]) -> Result<&'a [f64], String> {
    if let Some(t) = theta.iter().find(|&&t| !(t >= 0.0 && t.is_finite())) {
        return Err(format!(
            "{name}_rng: theta has an entry {t}, but must be a simplex (entries in [0, 1])"
        ));
    }
    let s: f64 = theta.iter().sum();
    if theta.is_empty() || (s - 1.0).abs() > TOLERANCE {
        return Err(format!(
            "{name}_rng: theta sums to {s}, but must be a simplex (sum 1)"
        ));
    }
    Ok(theta)
}

/// A category 1..K drawn with probabilities ∝ w (total `total`).
fn pick(w: &[f64], total: f64, rng: &mut dyn RngCore) -> f64 {
    let u = open01(rng) * total;
    let mut acc = 0.0;
    for (k, &p) in w.iter().enumerate() {
        acc += p;
        if u < acc {
            return (k + 1) as f64;
        }
    }
    // u rounded above the cumulative sum: the last category with positive weight
    (w.iter().rposition(|&p| p > 0.0).unwrap_or(0) + 1) as f64
}

/// One category per draw from softmax(β): β a vector (one draw) or a matrix with one row of
/// logits per draw.
fn categorical_logit(beta: RngArg<'_>, out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let name = "categorical_logit";
    if let Some(b) = beta.values.iter().find(|b| !b.is_finite()) {
        return Err(format!("{name}_rng: beta has an entry {b}, but must be finite"));
    }
    let (n, k) = if beta.cols == 1 && out.len() == 1 {
        (1, beta.values.len())
    } else {
        (beta.rows, beta.cols)
    };
    if n != out.len() || n * k != beta.values.len() || k == 0 {
        return Err(format!(
            "{name}_rng: beta is {} × {}, which does not give {} draws",
            beta.rows,
            beta.cols,
            out.len()
        ));
    }
    let mut w = vec![0.0; k];
    for (r, o) in out.iter_mut().enumerate() {
        for (j, v) in w.iter_mut().enumerate() {
            *v = beta.values[r + n * j];
        }
        softmax_in_place(&mut w);
        *o = pick(&w, 1.0, rng);
    }
    Ok(())
}

/// Counts of N trials over the categories, by sequential binomials: x₁ ~ Binomial(N, θ₁),
/// x₂ ~ Binomial(N − x₁, θ₂/(1 − θ₁)), …
fn multinomial(theta: &[f64], n: RngArg<'_>, out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let name = "multinomial";
    let theta = simplex(name, theta)?;
    let trials = scalar(name, "N", n)?;
    if !(trials.is_finite() && trials >= 0.0 && trials.fract() == 0.0) {
        return Err(format!(
            "{name}_rng: N is {trials}, but must be a non-negative integer"
        ));
    }
    if out.len() != theta.len() {
        return Err(format!(
            "{name}_rng: theta has {} entries, but the result has {}",
            theta.len(),
            out.len()
        ));
    }
    let (mut left, mut mass) = (trials, 1.0);
    for (o, &t) in out.iter_mut().zip(theta) {
        let p = if mass > 0.0 { (t / mass).min(1.0) } else { 1.0 };
        let x = if left > 0.0 { binomial(left, p, rng)? } else { 0.0 };
        *o = x;
        left -= x;
        mass -= t;
    }
    // rounding of the remaining mass: any trials left go to the last category
    if let Some(last) = out.last_mut() {
        *last += left;
    }
    Ok(())
}

/// Stan's lkj_corr_cholesky_rng: canonical partial correlations of level i (i = 0..K−2)
/// drawn as 2·Beta(β, β) − 1 with β = η + (K − 2 − i)/2, then the C-vine to L: row j has
/// L[j, i] = πᵢⱼ √(1 − Σ_{m<i} L[j, m]²) and a unit norm.
fn lkj(name: &str, args: &[RngArg<'_>], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let kf = scalar(name, "K", args[0])?;
    let eta = scalar(name, "eta", args[1])?;
    if !(kf.is_finite() && kf >= 1.0 && kf.fract() == 0.0) {
        return Err(format!("{name}_rng: K is {kf}, but must be a positive integer"));
    }
    if !(eta.is_finite() && eta > 0.0) {
        return Err(format!(
            "{name}_rng: eta is {eta}, but must be positive and finite"
        ));
    }
    let k = kf as usize;
    if out.len() != k * k {
        return Err(format!(
            "{name}_rng: K is {k}, but the result has {} entries",
            out.len()
        ));
    }
    let mut l = DMatrix::<f64>::zeros(k, k);
    // partial correlations level by level, as Stan draws them
    for i in 0..k.saturating_sub(1) {
        let b = eta + (k - 2 - i) as f64 / 2.0;
        let beta = Beta::new(b, b).map_err(|e| format!("{name}_rng: {e}"))?;
        for j in i + 1..k {
            let pc = 2.0 * beta.sample(rng) - 1.0;
            let used: f64 = (0..i).map(|m| l[(j, m)] * l[(j, m)]).sum();
            l[(j, i)] = pc * (1.0 - used).max(0.0).sqrt();
        }
    }
    for j in 0..k {
        let used: f64 = (0..j).map(|m| l[(j, m)] * l[(j, m)]).sum();
        l[(j, j)] = (1.0 - used).max(0.0).sqrt();
    }
    let res = if name == "lkj_corr" {
        let mut r = &l * l.transpose();
        for j in 0..k {
            r[(j, j)] = 1.0;
            for i in j + 1..k {
                r[(j, i)] = r[(i, j)];
            }
        }
        r
    } else {
        l
    };
    out.copy_from_slice(res.as_slice());
    Ok(())
}

/// The Bartlett factor A: lower triangular, Aᵢᵢ = √χ²_{ν − i} (i = 0..K−1), N(0, 1) below.
fn bartlett(name: &str, nu: f64, k: usize, rng: &mut dyn RngCore) -> Result<DMatrix<f64>, String> {
    let mut a = DMatrix::<f64>::zeros(k, k);
    for i in 0..k {
        let chi = ChiSquared::new(nu - i as f64).map_err(|e| format!("{name}_rng: {e}"))?;
        a[(i, i)] = chi.sample(rng).sqrt();
        for j in 0..i {
            a[(i, j)] = std_normal(rng);
        }
    }
    Ok(a)
}

/// wishart_cholesky: L_S A (the Cholesky factor of W = L_S A Aᵀ L_Sᵀ ~ Wishart(ν, S)).
/// inv_wishart_cholesky: X = C Cᵀ with C = L_S A⁻ᵀ is the inverse of Y = L_S⁻ᵀ A Aᵀ L_S⁻¹ ~
/// Wishart(ν, S⁻¹), so X ~ InvWishart(ν, S); its Cholesky factor is Rᵀ of the QR of Cᵀ, with
/// the signs making the diagonal positive.
fn wishart(name: &str, args: &[RngArg<'_>], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let nu = scalar(name, "nu", args[0])?;
    let ls = lower_factor(name, "L_S", args[1], true)?;
    let k = ls.nrows();
    if !(nu.is_finite() && nu > k as f64 - 1.0) {
        return Err(format!(
            "{name}_rng: nu is {nu}, but must be finite and greater than K - 1 = {}",
            k as f64 - 1.0
        ));
    }
    if out.len() != k * k {
        return Err(format!(
            "{name}_rng: L_S is {k} × {k}, but the result has {} entries",
            out.len()
        ));
    }
    let a = bartlett(name, nu, k, rng)?;
    let res = if name == "wishart_cholesky" {
        &ls * a
    } else {
        let a_inv = a
            .solve_lower_triangular(&DMatrix::identity(k, k))
            .ok_or_else(|| format!("{name}_rng: the Bartlett factor is singular"))?;
        let ct = a_inv * ls.transpose();
        let r = ct.qr().r();
        let mut l = r.transpose();
        for j in 0..k {
            if l[(j, j)] < 0.0 {
                l.column_mut(j).neg_mut();
            }
        }
        l
    };
    out.copy_from_slice(res.as_slice());
    Ok(())
}

/// 1 + #{k : cₖ < η + ε}, ε logistic (ordered_logistic) or standard normal (ordered_probit).
fn ordinal(name: &str, args: &[RngArg<'_>], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let (eta, c) = (args[0], args[1].values);
    if c.is_empty() {
        return Err(format!("{name}_rng: c must have at least one cutpoint"));
    }
    if let Some(v) = c.iter().find(|v| !v.is_finite()) {
        return Err(format!(
            "{name}_rng: c has an entry {v}, but its entries must be finite"
        ));
    }
    if let Some(i) = c.windows(2).position(|w| w[1] <= w[0]) {
        return Err(format!(
            "{name}_rng: c is not increasing: entry {} is {} and entry {} is {}",
            i + 1,
            c[i],
            i + 2,
            c[i + 1]
        ));
    }
    if eta.values.len() != 1 && eta.values.len() != out.len() {
        return Err(format!(
            "{name}_rng: eta has {} entries, but the result has {}",
            eta.values.len(),
            out.len()
        ));
    }
    for (i, o) in out.iter_mut().enumerate() {
        let e = eta.at(i);
        if !e.is_finite() {
            return Err(format!("{name}_rng: eta is {e}, but must be finite"));
        }
        let noise = if name == "ordered_logistic" {
            let u = open01(rng);
            (u / (1.0 - u)).ln()
        } else {
            std_normal(rng)
        };
        let latent = e + noise;
        *o = 1.0 + c.iter().filter(|&&ck| ck < latent).count() as f64;
    }
    Ok(())
}
