//! Built-in distributions: exact log densities with every normalising constant, vectorised
//! and broadcast as in Stan, built from the graph's differentiable operations (so their
//! gradients and Hessians come from the ops' adjoint rules).
//!
//! Input: a graph, the outcome node and the argument nodes. Output: a node with the
//! per-observation log densities (−∞ outside the support or for invalid parameters), their
//! sum for `~` and `_lpdf`, `_lcdf`/`_lccdf` for continuous families, the per-observation
//! predictive quantity for reports, and [`check_outcome`] for data at binding time.
//! One file per family; [`registry`] is the name table.

pub mod bernoulli;
pub mod beta;
pub mod beta_binomial;
pub mod binomial;
pub mod categorical;
pub mod chi_square;
pub mod dirichlet;
pub mod exp_mod_normal;
pub mod exponential;
pub mod gamma_cdf;
pub mod gumbel;
pub mod laplace;
pub mod lkj;
pub mod logistic;
pub mod multi_normal;
pub mod multinomial;
pub mod neg_binomial;
pub mod normal;
pub mod ordered;
pub mod pareto;
pub mod poisson;
pub mod registry;
pub mod rng;
pub mod skew_normal;
pub mod student_t;
pub mod uniform;
pub mod von_mises;
pub mod weibull;
pub mod wishart;

pub use registry::{lookup, Entry, Outcome, DISTRIBUTIONS};

use crate::graph::{Error, Fun1, Fun2, Graph, NodeId, Shape};

/// A node or a shape problem.
pub type R = Result<NodeId, Error>;

/// ½ log 2π.
pub(crate) const HALF_LOG_2PI: f64 = 0.918_938_533_204_672_8;

/// (x − μ) / σ.
pub(crate) fn z_score(g: &mut Graph, x: NodeId, mu: NodeId, sigma: NodeId) -> R {
    let d = g.sub(x, mu)?;
    g.div(d, sigma)
}

/// 0 when every entry of x is > 0, −∞ otherwise.
pub(crate) fn positive(g: &mut Graph, x: NodeId) -> NodeId {
    g.support(x, 0.0, f64::INFINITY, true)
}

/// 0 when every entry of x is ≥ 0, −∞ otherwise.
pub(crate) fn non_negative(g: &mut Graph, x: NodeId) -> NodeId {
    g.support(x, 0.0, f64::INFINITY, false)
}

/// 0 when the entries of x sum to 1 (within Stan's tolerance, as a simplex must), −∞
/// otherwise; the entries' signs are checked apart.
pub(crate) fn sums_to_one(g: &mut Graph, x: NodeId) -> NodeId {
    let tol = crate::graph::transform::TOLERANCE;
    let s = g.sum(x);
    g.support(s, 1.0 - tol, 1.0 + tol, false)
}

/// lp plus the support checks (each 0 or −∞), broadcast.
pub(crate) fn with_support(g: &mut Graph, lp: NodeId, checks: &[NodeId]) -> R {
    let mut out = lp;
    for &c in checks {
        out = g.add_nodes(out, c)?;
    }
    Ok(out)
}

/// a + b·c with a constant a.
pub(crate) fn affine(g: &mut Graph, a: f64, b: f64, x: NodeId) -> R {
    let bk = g.scalar(b);
    let bx = g.mul(bk, x)?;
    let ak = g.scalar(a);
    g.add_nodes(ak, bx)
}

/// f(x) for an elementwise function.
pub(crate) fn f1(g: &mut Graph, f: Fun1, x: NodeId) -> NodeId {
    g.unary(f, x)
}

/// Σ terms (each broadcast).
pub(crate) fn sum_all(g: &mut Graph, terms: &[NodeId]) -> R {
    let mut out = terms[0];
    for &t in &terms[1..] {
        out = g.binary(Fun2::Add, out, t)?;
    }
    Ok(out)
}

/// log(1 − eˣ) = log(−expm1(x)) for x ≤ 0 (−∞ at 0).
pub fn log1m_exp(g: &mut Graph, x: NodeId) -> NodeId {
    let e = f1(g, Fun1::Expm1, x);
    let n = g.neg(e);
    f1(g, Fun1::Log, n)
}

/// log(eᵃ − eᵇ) = a + log(1 − e^{b − a}) for a ≥ b.
pub fn log_diff_exp(g: &mut Graph, a: NodeId, b: NodeId) -> R {
    let d = g.sub(b, a)?;
    let l = log1m_exp(g, d);
    g.add_nodes(a, l)
}

/// log(eᵃ + eᵇ) = a − log σ(a − b): smooth, and finite for any finite a and b.
pub fn log_add_exp(g: &mut Graph, a: NodeId, b: NodeId) -> R {
    let d = g.sub(a, b)?;
    let l = f1(g, Fun1::LogInvLogit, d);
    g.sub(a, l)
}

/// log B(a, b) = lgamma(a) + lgamma(b) − lgamma(a + b).
pub fn lbeta(g: &mut Graph, a: NodeId, b: NodeId) -> R {
    let ab = g.add_nodes(a, b)?;
    let (la, lb, lab) = (
        f1(g, Fun1::Lgamma, a),
        f1(g, Fun1::Lgamma, b),
        f1(g, Fun1::Lgamma, ab),
    );
    let s = g.add_nodes(la, lb)?;
    g.sub(s, lab)
}

/// log C(n, k) = lgamma(n + 1) − lgamma(k + 1) − lgamma(n − k + 1).
pub fn lchoose(g: &mut Graph, n: NodeId, k: NodeId) -> R {
    let one = g.scalar(1.0);
    let nk = g.sub(n, k)?;
    let (n1, k1, nk1) = (g.add_nodes(n, one)?, g.add_nodes(k, one)?, g.add_nodes(nk, one)?);
    let (a, b, c) = (
        f1(g, Fun1::Lgamma, n1),
        f1(g, Fun1::Lgamma, k1),
        f1(g, Fun1::Lgamma, nk1),
    );
    let ab = g.sub(a, b)?;
    g.sub(ab, c)
}

/// The diagonal of a square matrix as a vector.
pub(crate) fn diagonal(g: &mut Graph, m: NodeId) -> R {
    let n = g.shape(m).rows();
    let idx = (0..n).map(|i| (i + i * n) as u32).collect();
    g.gather_flat(m, idx, Shape::Vector(n))
}

fn entry(dist: &str) -> Result<&'static Entry, Error> {
    lookup(dist).ok_or_else(|| Error::Dist(format!("unknown distribution `{dist}`")))
}

fn check_arity(e: &Entry, args: &[NodeId]) -> Result<(), Error> {
    if args.len() != e.nargs {
        return Err(Error::Dist(format!(
            "`{}` takes {} argument(s), got {}",
            e.name,
            e.nargs,
            args.len()
        )));
    }
    Ok(())
}

/// The per-observation log densities of `x ~ dist(args)`: a node shaped like the broadcast
/// of outcome and arguments (one entry per row for matrix outcomes of `multi_normal*` and
/// `categorical_logit`).
///
/// # Errors
/// [`Error::Dist`] for an unknown name or wrong argument count; shape errors otherwise.
pub fn pointwise(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId]) -> R {
    let e = entry(dist)?;
    check_arity(e, args)?;
    if !g.unfused {
        if let Some(id) = fused_lik(g, dist, x, args, false) {
            return Ok(id);
        }
    }
    (e.lpdf)(g, x, args)
}

/// `dist_lpdf(x | args)`: the summed log density (a scalar node).
///
/// # Errors
/// As [`pointwise`].
pub fn lpdf(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId]) -> R {
    if !g.unfused {
        check_arity(entry(dist)?, args)?;
        if let Some(id) = fused_lik(g, dist, x, args, true) {
            return Ok(id);
        }
    }
    let p = pointwise(g, dist, x, args)?;
    Ok(g.sum(p))
}

/// Whether two operands broadcast elementwise (as [`Graph::binary`] allows): one is a
/// scalar or the shapes agree.
fn broadcasts(g: &Graph, a: NodeId, b: NodeId) -> bool {
    let (sa, sb) = (g.shape(a), g.shape(b));
    sa == Shape::Scalar || sb == Shape::Scalar || sa == sb
}

/// Whether the operands broadcast together: every one is a scalar or has the one shape
/// of the others that are not.
fn all_broadcast(g: &Graph, ids: &[NodeId]) -> bool {
    let mut shapes = ids.iter().map(|&id| g.shape(id)).filter(|&s| s != Shape::Scalar);
    match shapes.next() {
        Some(first) => shapes.all(|s| s == first),
        None => true,
    }
}

/// The log density as one fused node, for the families and argument shapes that have one:
/// summed ([`Op::LikSum`](crate::graph::Op::LikSum)) when `sum`, else per observation
/// ([`Op::LikPoint`](crate::graph::Op::LikPoint)); `None` otherwise (the caller builds the
/// elementary nodes). Equal to the unfused nodes up to rounding (tests/it/derivatives.rs).
fn fused_lik(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId], sum: bool) -> Option<NodeId> {
    use crate::graph::Lik;
    // An empty outcome or argument (N = 0 observations): the fused kernels count
    // observations as the largest operand, which is 1 with scalar arguments, so leave empty
    // operands to the elementary nodes, which sum to 0 over no entries.
    if std::iter::once(x)
        .chain(args.iter().copied())
        .any(|id| g.shape(id).size() == 0)
    {
        return None;
    }
    let data = g.const_value(x);
    let node = |g: &mut Graph, lik: Lik, a: &[NodeId]| {
        if sum {
            g.lik_sum(lik, a)
        } else {
            g.lik_point(lik, a)
        }
    };
    match dist {
        "bernoulli_logit" if broadcasts(g, x, args[0]) => {
            #[allow(clippy::float_cmp)] // labels are exactly 0 or 1 (else: unfused, checked at binding)
            let labels = data?.iter().all(|&v| v == 0.0 || v == 1.0);
            labels.then(|| node(g, Lik::BernoulliLogit, &[x, args[0]]))
        }
        "poisson_log" if broadcasts(g, x, args[0]) => {
            let k = data?.to_vec();
            let n = g.shape(x).size().max(g.shape(args[0]).size());
            // −log k!, a constant: broadcast over the observations as the unfused nodes do
            let lf: Vec<f64> = (0..n)
                .map(|i| -crate::autodiff::special::lgamma(k[if k.len() == 1 { 0 } else { i }] + 1.0))
                .collect();
            let main = node(g, Lik::PoissonLog, &[x, args[0]]);
            let c = if sum {
                g.scalar(lf.iter().sum())
            } else {
                g.constant(g.shape(main), lf)
            };
            g.add_nodes(main, c).ok()
        }
        "categorical_logit" if sum => {
            // labels 1..K of N rows against an N×K matrix of logits (else: unfused, which
            // also reports bad labels)
            let Shape::Matrix(n, k) = g.shape(args[0]) else {
                return None;
            };
            let ok = data?.len() == n
                && data?
                    .iter()
                    .all(|&v| v >= 1.0 && v <= k as f64 && v.fract() == 0.0);
            ok.then(|| node(g, Lik::CategoricalLogit, &[x, args[0]]))
        }
        "normal" if all_broadcast(g, &[x, args[0], args[1]]) => {
            Some(node(g, Lik::Normal, &[x, args[0], args[1]]))
        }
        "cauchy" if all_broadcast(g, &[x, args[0], args[1]]) => {
            Some(node(g, Lik::Cauchy, &[x, args[0], args[1]]))
        }
        _ => None,
    }
}

/// `x ~ dist(args)`: add the summed log density to the target.
///
/// # Errors
/// As [`pointwise`].
pub fn tilde(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId]) -> Result<(), Error> {
    let lp = lpdf(g, dist, x, args)?;
    g.add_target(lp)
}

/// `dist_lcdf(x | args)` (`upper = false`) or `dist_lccdf` (`upper = true`), summed.
///
/// # Errors
/// [`Error::Dist`] when the family has no CDF here.
pub fn lcdf(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId], upper: bool) -> R {
    let e = entry(dist)?;
    check_arity(e, args)?;
    let f = if upper { e.lccdf } else { e.lcdf };
    let f = f.ok_or_else(|| {
        Error::Dist(format!(
            "`{dist}` has no {} here",
            if upper { "lccdf" } else { "lcdf" }
        ))
    })?;
    let p = f(g, x, args)?;
    Ok(g.sum(p))
}

/// The per-observation predictive quantity (probability for bernoulli/binomial, class
/// probabilities as an N×K matrix for categorical_logit, else the mean or location),
/// broadcast to the outcome's length.
///
/// # Errors
/// As [`pointwise`].
pub fn quantity(g: &mut Graph, dist: &str, x: NodeId, args: &[NodeId]) -> R {
    let e = entry(dist)?;
    check_arity(e, args)?;
    let q = (e.quantity)(g, args)?;
    let (sx, sq) = (g.shape(x), g.shape(q));
    let elementwise = !matches!(e.outcome, Outcome::Category | Outcome::RealVector);
    if elementwise && sx != sq && sq == Shape::Scalar {
        let zeros = g.constant(sx, vec![0.0; sx.size()]);
        return g.add_nodes(q, zeros);
    }
    Ok(q)
}

/// Check data outcomes against the family's support, for a diagnostic at data-binding time
/// (e.g. a label 2 for `bernoulli_logit`).
///
/// # Errors
/// A message naming the first offending value and the support.
pub fn check_outcome(dist: &str, values: &[f64]) -> Result<(), String> {
    let e = lookup(dist).ok_or_else(|| format!("unknown distribution `{dist}`"))?;
    let (ok, support): (fn(f64) -> bool, &str) = match e.outcome {
        Outcome::Real | Outcome::RealVector => (|v| v.is_finite(), "finite real numbers"),
        Outcome::Positive => (|v| v > 0.0 && v.is_finite(), "positive numbers"),
        Outcome::NonNegative => (|v| v >= 0.0 && v.is_finite(), "non-negative numbers"),
        Outcome::Unit => (|v| v > 0.0 && v < 1.0, "numbers strictly between 0 and 1"),
        Outcome::Any => (|v| v.is_finite(), "finite real numbers"),
        Outcome::Binary => (|v| v.fract() == 0.0 && (0.0..=1.0).contains(&v), "0 or 1"),
        Outcome::Count => (|v| v >= 0.0 && v.fract() == 0.0, "non-negative integers"),
        Outcome::Category => (|v| v >= 1.0 && v.fract() == 0.0, "categories 1, 2, ..., K"),
    };
    match values.iter().position(|&v| !ok(v)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "`{dist}` outcome {} (entry {}) is outside its support: expected {support}",
            values[i],
            i + 1
        )),
    }
}

/// log(eᵃ − eᵇ) with the difference b − a kept below −1e-300, so a cancelled difference
/// (both log CDFs rounded to the same value) gives a large negative number with finite
/// derivatives instead of −∞ and NaN adjoints.
fn log_diff_exp_guarded(g: &mut Graph, a: NodeId, b: NodeId) -> R {
    let d = g.sub(b, a)?;
    let cap = g.scalar(-1e-300);
    let d = g.binary(Fun2::Min, d, cap)?;
    let l = log1m_exp(g, d);
    g.add_nodes(a, l)
}

/// log P(L ≤ X ≤ U) of `dist(args)` for the bounds given (a scalar, or one per observation):
/// −lccdf/−lcdf alone, and for both bounds the larger (the one not lost to cancellation) of
/// log(F(U) − F(L)) and log(S(L) − S(U)), S = 1 − F. For counts P(X ≥ L) = S(L − 1).
///
/// # Errors
/// [`Error::Dist`] when the family has no CDFs.
pub fn log_truncation_mass(
    g: &mut Graph,
    dist: &str,
    args: &[NodeId],
    lower: Option<NodeId>,
    upper: Option<NodeId>,
) -> Result<Option<NodeId>, Error> {
    let e = entry(dist)?;
    check_arity(e, args)?;
    let (Some(lcdf), Some(lccdf)) = (e.lcdf, e.lccdf) else {
        return Err(Error::Dist(format!("`{dist}` has no CDF to truncate with")));
    };
    let discrete = matches!(e.outcome, Outcome::Count | Outcome::Binary | Outcome::Category);
    let lower = match lower {
        Some(l) if discrete => Some(affine(g, -1.0, 1.0, l)?),
        l => l,
    };
    Ok(Some(match (lower, upper) {
        (None, None) => return Ok(None),
        (Some(l), None) => lccdf(g, l, args)?,
        (None, Some(u)) => lcdf(g, u, args)?,
        (Some(l), Some(u)) => {
            let (fu, fl) = (lcdf(g, u, args)?, lcdf(g, l, args)?);
            let below = log_diff_exp_guarded(g, fu, fl)?;
            let (sl, su) = (lccdf(g, l, args)?, lccdf(g, u, args)?);
            let above = log_diff_exp_guarded(g, sl, su)?;
            g.binary(Fun2::Max, below, above)?
        }
    }))
}

/// `x ~ dist(args) T[lower, upper]`: the log density renormalised to the bounds, −∞ for an
/// outcome outside them; summed (a scalar) or per observation (`pointwise`).
///
/// # Errors
/// As [`pointwise`] and [`log_truncation_mass`].
pub fn truncated(
    g: &mut Graph,
    dist: &str,
    x: NodeId,
    args: &[NodeId],
    bounds: (Option<NodeId>, Option<NodeId>),
    pointwise_out: bool,
) -> R {
    let (lower, upper) = bounds;
    let mass = log_truncation_mass(g, dist, args, lower, upper)?;
    let mut checks = Vec::new();
    if let Some(l) = lower {
        let d = g.sub(x, l)?;
        checks.push(non_negative(g, d));
    }
    if let Some(u) = upper {
        let d = g.sub(u, x)?;
        checks.push(non_negative(g, d));
    }
    let lp = if pointwise_out {
        let p = pointwise(g, dist, x, args)?;
        match mass {
            Some(m) => g.sub(p, m)?,
            None => p,
        }
    } else {
        let s = lpdf(g, dist, x, args)?;
        match mass {
            Some(m) if g.shape(m) == Shape::Scalar => {
                // one mass per observation: as many as the broadcast outcome has entries
                let n = std::iter::once(x)
                    .chain(args.iter().copied())
                    .map(|id| g.shape(id).size())
                    .max()
                    .unwrap_or(1);
                let k = g.scalar(n as f64);
                let nm = g.mul(k, m)?;
                g.sub(s, nm)?
            }
            Some(m) => {
                let sm = g.sum(m);
                g.sub(s, sm)?
            }
            None => s,
        }
    };
    with_support(g, lp, &checks)
}
