//! The split mean-field bound and its gradient, for a fixed tree of soft bins.
//!
//! Input: the tree (each leaf's root-to-leaf path of (hyperplane, sign)), the packed
//! parameter vector (hyperplanes aⱼ, bⱼ; per bin m_k and log σ_k with v_k = σ_k²; θ when
//! learned) and fixed standard-normal samples Z (D×S, shared by all bins). Output:
//! log Σ_k exp(L_k), its gradient, and every L_k, with
//! L_k = Σ_{(j,±) on the path} E_qk[log σ(±(aⱼᵀw + bⱼ))] + mean_t log p̃(m_k + σ_k ⊙ z_t)
//!       + Σ_d log σ_kd + (D/2) log 2πe.
//! The sigmoid expectations are 1-D Gauss–Hermite integrals over u = aᵀw + b ~
//! N(aᵀm + b, Σ_d a_d² v_d); log p̃ is evaluated in one batched call over bins × samples.

use crate::density::{Evaluated, LogDensity, Want};
use crate::infer::objective::entropy_constant;
use crate::posterior::log_sum_exp;
use nalgebra::{DMatrix, DVector};

/// Gauss–Hermite nodes used for every sigmoid expectation.
const GH_NODES: usize = 40;
/// Added to Σ a_d² v_d so the standard deviation of u is never zero (a = 0 is allowed).
const VAR_FLOOR: f64 = 1e-12;

/// A binary tree of soft bins: each leaf's path of (internal node, sign ±1).
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// Internal nodes (hyperplanes).
    pub nodes: usize,
    /// Per leaf, its path from the root.
    pub paths: Vec<Vec<(usize, f64)>>,
    /// Whether each bin has a full (lower-triangular) covariance root.
    pub full_cov: bool,
}

impl Tree {
    /// One bin, no hyperplanes.
    pub fn root(full_cov: bool) -> Self {
        Tree {
            nodes: 0,
            paths: vec![vec![]],
            full_cov,
        }
    }

    /// Strictly-lower root entries per bin: D(D−1)/2 with `full_cov`, else 0.
    pub fn n_lower(&self, d: usize) -> usize {
        if self.full_cov {
            d * (d - 1) / 2
        } else {
            0
        }
    }

    /// Offset of bin k's block [m_k, log σ_k, lower_k] in the packed vector.
    pub fn leaf_off(&self, d: usize, k: usize) -> usize {
        self.nodes * (d + 1) + k * (2 * d + self.n_lower(d))
    }

    /// Split leaf k with a new hyperplane: k keeps the `+` side, a new last leaf the `−` side.
    pub fn split(&self, k: usize) -> Tree {
        let mut t = self.clone();
        let j = t.nodes;
        t.nodes += 1;
        let mut minus = t.paths[k].clone();
        minus.push((j, -1.0));
        t.paths[k].push((j, 1.0));
        t.paths.push(minus);
        t
    }

    /// Number of bins K.
    pub fn bins(&self) -> usize {
        self.paths.len()
    }
}

/// The parameters unpacked.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// Hyperplane normals aⱼ.
    pub a: Vec<DVector<f64>>,
    /// Hyperplane offsets bⱼ.
    pub b: Vec<f64>,
    /// Bin means m_k.
    pub m: Vec<DVector<f64>>,
    /// Bin log standard deviations log σ_k (the log diagonal of the root L_k).
    pub log_sigma: Vec<DVector<f64>>,
    /// Strictly-lower entries of L_k, row by row (empty without `full_cov`).
    pub lower: Vec<DVector<f64>>,
    /// Hyperparameters θ (packed only when learned).
    pub theta: DVector<f64>,
}

impl Params {
    /// Pack into one vector: [a₁ b₁ … | m₁ log σ₁ … | θ if `with_theta`].
    pub fn pack(&self, with_theta: bool) -> DVector<f64> {
        let mut v = Vec::new();
        for (a, b) in self.a.iter().zip(&self.b) {
            v.extend(a.iter());
            v.push(*b);
        }
        for ((m, s), l) in self.m.iter().zip(&self.log_sigma).zip(&self.lower) {
            v.extend(m.iter());
            v.extend(s.iter());
            v.extend(l.iter());
        }
        if with_theta {
            v.extend(self.theta.iter());
        }
        DVector::from_vec(v)
    }

    /// Unpack a vector laid out by [`Params::pack`]; θ is `theta0` when not packed.
    pub fn unpack(
        x: &DVector<f64>,
        tree: &Tree,
        d: usize,
        theta0: &DVector<f64>,
        with_theta: bool,
    ) -> Params {
        let node = |j: usize| j * (d + 1);
        let leaf = |k: usize| tree.leaf_off(d, k);
        let theta_off = leaf(tree.bins());
        let nl = tree.n_lower(d);
        Params {
            a: (0..tree.nodes).map(|j| x.rows(node(j), d).into_owned()).collect(),
            b: (0..tree.nodes).map(|j| x[node(j) + d]).collect(),
            m: (0..tree.bins())
                .map(|k| x.rows(leaf(k), d).into_owned())
                .collect(),
            log_sigma: (0..tree.bins())
                .map(|k| x.rows(leaf(k) + d, d).into_owned())
                .collect(),
            lower: (0..tree.bins())
                .map(|k| x.rows(leaf(k) + 2 * d, nl).into_owned())
                .collect(),
            theta: if with_theta {
                x.rows(theta_off, theta0.len()).into_owned()
            } else {
                theta0.clone()
            },
        }
    }
}

impl Params {
    /// The root L_k = diag(σ_k) + strictly-lower entries (full_cov only).
    pub fn root(&self, k: usize) -> DMatrix<f64> {
        let d = self.m[k].len();
        let mut l = DMatrix::from_diagonal(&self.log_sigma[k].map(f64::exp));
        for (idx, (i, j)) in lower_indices(d).enumerate().take(self.lower[k].len()) {
            l[(i, j)] = self.lower[k][idx];
        }
        l
    }
}

/// The strictly-lower positions (i, j), i > j, row by row.
pub(crate) fn lower_indices(d: usize) -> impl Iterator<Item = (usize, usize)> {
    (1..d).flat_map(|i| (0..i).map(move |j| (i, j)))
}

/// The bound for one tree on fixed samples.
pub(crate) struct Bound<'a> {
    pub model: &'a dyn LogDensity,
    pub tree: &'a Tree,
    /// Fixed standard-normal samples, D×S.
    pub z: &'a DMatrix<f64>,
    pub theta0: &'a DVector<f64>,
    pub learn_theta: bool,
    pub gh: &'a GaussHermite,
}

/// Value, gradient and the per-bin L_k.
pub(crate) struct BoundValue {
    pub value: f64,
    pub grad: DVector<f64>,
    pub per_bin: Vec<f64>,
}

impl Bound<'_> {
    /// log Σ_k exp(L_k) and its gradient at the packed parameters x.
    pub fn eval(&self, x: &DVector<f64>) -> BoundValue {
        let d = self.z.nrows();
        let p = Params::unpack(x, self.tree, d, self.theta0, self.learn_theta);
        let (lk, grads) = self.per_bin(&p, x.len());
        let value = log_sum_exp(&lk);
        let mut grad = DVector::zeros(x.len());
        if value.is_finite() {
            for (l, g) in lk.iter().zip(&grads) {
                grad += g * (l - value).exp();
            }
        }
        BoundValue {
            value,
            grad,
            per_bin: lk,
        }
    }

    /// Every L_k with its gradient with respect to the packed vector.
    fn per_bin(&self, p: &Params, n: usize) -> (Vec<f64>, Vec<DVector<f64>>) {
        let (d, s, kk) = (self.z.nrows(), self.z.ncols(), self.tree.bins());
        let sigma: Vec<DVector<f64>> = p.log_sigma.iter().map(|l| l.map(f64::exp)).collect();
        let roots: Vec<Option<DMatrix<f64>>> =
            (0..kk).map(|k| self.tree.full_cov.then(|| p.root(k))).collect();
        let mut w = DMatrix::zeros(d, kk * s);
        for (k, sig) in sigma.iter().enumerate() {
            let lz = roots[k].as_ref().map(|l| l * self.z);
            for t in 0..s {
                let col = match &lz {
                    Some(lz) => &p.m[k] + lz.column(t),
                    None => &p.m[k] + sig.component_mul(&self.z.column(t)),
                };
                w.set_column(k * s + t, &col);
            }
        }
        let e = if self.learn_theta {
            // bin k's ∇_θ is the mean of ∇_θ over its S columns
            let means = DMatrix::from_fn(kk * s, kk, |c, k| if c / s == k { 1.0 / s as f64 } else { 0.0 });
            self.model.eval_weighted_theta(&p.theta, &w, &means)
        } else {
            self.model.eval(&p.theta, &w, Want::GRAD_W)
        };
        sigma
            .iter()
            .enumerate()
            .map(|(k, sig)| self.one_bin(p, sig, roots[k].as_ref(), k, &e, n))
            .unzip()
    }

    /// L_k and its gradient, from the batched evaluation `e` (bin k owns columns k·S.., and
    /// column k of its ∇_θ sums, the mean over them).
    fn one_bin(
        &self,
        p: &Params,
        sigma: &DVector<f64>,
        root: Option<&DMatrix<f64>>,
        k: usize,
        e: &Evaluated,
        n: usize,
    ) -> (f64, DVector<f64>) {
        let (d, s) = (self.z.nrows(), self.z.ncols());
        let leaf = self.tree.leaf_off(d, k);
        let mut g = DVector::zeros(n);
        let mut l = e.values.rows(k * s, s).sum() / s as f64 + p.log_sigma[k].sum() + entropy_constant(d);
        let gk = e.grad_w.as_ref().expect("asked for ∇_w").columns(k * s, s);
        g.rows_mut(leaf, d).copy_from(&(gk.column_sum() / s as f64));
        if root.is_some() {
            // ∂/∂L = G Zᵀ / S; the diagonal through σ = exp(log σ), plus 1 from the entropy.
            let gzt = gk * self.z.transpose() / s as f64;
            for i in 0..d {
                g[leaf + d + i] = gzt[(i, i)] * sigma[i] + 1.0;
            }
            for (idx, (i, j)) in lower_indices(d).enumerate() {
                g[leaf + 2 * d + idx] = gzt[(i, j)];
            }
        } else {
            let gz = gk.component_mul(self.z).column_sum() / s as f64;
            g.rows_mut(leaf + d, d)
                .copy_from(&(gz.component_mul(sigma).add_scalar(1.0)));
        }
        if self.learn_theta {
            let gt = e.grad_theta.as_ref().expect("asked for ∇_θ");
            let theta_off = self.tree.leaf_off(d, self.tree.bins());
            g.rows_mut(theta_off, p.theta.len()).copy_from(&gt.column(k));
        }
        for &(j, sign) in &self.tree.paths[k] {
            l += self.sigmoid_term(p, sigma, root, k, (j, sign), &mut g);
        }
        if !l.is_finite() {
            l = f64::NEG_INFINITY;
        }
        (l, g)
    }

    /// E_qk[log σ(sign (aⱼᵀw + bⱼ))], adding its gradient into `g`. With v = L_kᵀ a
    /// (a ⊙ σ for a diagonal root), u has sd ‖v‖ and ∂sd/∂a = L v / sd,
    /// ∂sd/∂L_ij = a_i v_j / sd.
    fn sigmoid_term(
        &self,
        p: &Params,
        sigma: &DVector<f64>,
        root: Option<&DMatrix<f64>>,
        k: usize,
        (j, sign): (usize, f64),
        g: &mut DVector<f64>,
    ) -> f64 {
        let d = self.z.nrows();
        let a = &p.a[j];
        let v = match root {
            Some(l) => l.tr_mul(a),
            None => a.component_mul(sigma),
        };
        let lv = match root {
            Some(l) => l * &v,
            None => v.component_mul(sigma),
        };
        let sd = (v.norm_squared() + VAR_FLOOR).sqrt();
        let mu = a.dot(&p.m[k]) + p.b[j];
        let (val, d_mu, d_sd) = self.gh.expect_log_sigmoid(mu, sd, sign);
        let c = d_sd / sd;
        let node = j * (d + 1);
        let leaf = self.tree.leaf_off(d, k);
        let mut ga = g.rows_mut(node, d);
        ga += &p.m[k] * d_mu + lv * c;
        g[node + d] += d_mu;
        let mut gm = g.rows_mut(leaf, d);
        gm += a * d_mu;
        let mut gs = g.rows_mut(leaf + d, d);
        gs += a.component_mul(&v).component_mul(sigma) * c;
        if root.is_some() {
            for (idx, (r, q)) in lower_indices(d).enumerate() {
                g[leaf + 2 * d + idx] += a[r] * v[q] * c;
            }
        }
        val
    }
}

/// Gauss–Hermite nodes and weights for E[f(ε)], ε ~ N(0, 1).
pub(crate) struct GaussHermite {
    /// Nodes ε_q = √2 x_q.
    pub eps: Vec<f64>,
    /// Weights ω_q / √π, summing to 1.
    pub weights: Vec<f64>,
}

impl GaussHermite {
    /// The `n`-point rule, by the Golub–Welsch eigenvalue method.
    pub fn new(n: usize) -> Self {
        let mut j = DMatrix::zeros(n, n);
        for i in 1..n {
            let off = (i as f64 / 2.0).sqrt();
            j[(i, i - 1)] = off;
            j[(i - 1, i)] = off;
        }
        let eig = j.symmetric_eigen();
        let eps = eig
            .eigenvalues
            .iter()
            .map(|x| x * std::f64::consts::SQRT_2)
            .collect();
        let weights = (0..n).map(|q| eig.eigenvectors[(0, q)].powi(2)).collect();
        GaussHermite { eps, weights }
    }

    /// The default rule.
    pub fn standard() -> Self {
        Self::new(GH_NODES)
    }

    /// E[log σ(sign·u)] for u ~ N(mu, sd²), with its derivatives in mu and sd.
    pub fn expect_log_sigmoid(&self, mu: f64, sd: f64, sign: f64) -> (f64, f64, f64) {
        let (mut v, mut dmu, mut dsd) = (0.0, 0.0, 0.0);
        for (e, w) in self.eps.iter().zip(&self.weights) {
            let u = sign * (mu + sd * e);
            let f1 = sign * sigmoid(-u);
            v += w * log_sigmoid(u);
            dmu += w * f1;
            dsd += w * f1 * e;
        }
        (v, dmu, dsd)
    }
}

/// log σ(x), stable for large |x|.
pub(crate) fn log_sigmoid(x: f64) -> f64 {
    -((-x).max(0.0) + (-x.abs()).exp().ln_1p())
}

/// σ(x) = 1 / (1 + e^{−x}), stable for large |x|.
pub(crate) fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}
