//! The log-joint graph: a tape of typed nodes in topological order over one flat
//! unconstrained parameter vector w ∈ R^D and the hyperparameters θ ∈ R^P.
//!
//! Input: calls to the builder API ([`Graph::param_slice`], [`Graph::binary`], ...) made by
//! lowering (or tests). Output: a [`Graph`] whose nodes only refer to earlier nodes, whose
//! constants are folded at build time, and whose targets sum to log p̃(w | θ). Every
//! parameter built with [`Graph::param_slice`] has a transform to ℝ and its log-Jacobian node.
//! Node values are column-major; a batch of S points stores a node as a (size × S) matrix.

/// Defines `$name`, which runs `$imp` (an `#[inline(always)]` function of the same
/// arguments) compiled a second time for AVX2 when the CPU has it, chosen at run time.
/// Without fused multiply-adds the wider copy computes the same bits.
macro_rules! avx2_dispatch {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:ident) => {
        $(#[$meta])*
        pub(crate) fn $name<T: Scalar>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                #[target_feature(enable = "avx2")]
                fn wide<T: Scalar>($($arg: $ty),*) $(-> $ret)? {
                    $imp($($arg),*)
                }
                // SAFETY: the CPU has AVX2, checked just above.
                return unsafe { wide($($arg),*) };
            }
            $imp($($arg),*)
        }
    };
}

pub mod blocked;
mod build;
pub mod diagnose;
pub mod dump;
pub mod eval;
pub(crate) mod fused;
pub mod generate;
pub mod logjoint;
pub mod lower;
pub mod point;
pub mod predict;
pub mod rows;
pub mod scan;
pub(crate) mod scan_kernel;
pub mod transform;
mod vectorise;

pub use crate::constrained::Shape;
pub use build::fun1_by_name;
pub use diagnose::{diagnose, DiagnoseReport, Tolerances};
pub use dump::dump_graph;
pub use logjoint::{LogJoint, ParamInfo};
pub use lower::{lower_ancestral, lower_model, lower_observed, lower_prior, Reading};
pub use transform::Constraint;

/// Index of a node in its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

/// Elementwise functions of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Fun1 {
    Neg,
    Exp,
    Log,
    Log1p,
    Expm1,
    Sqrt,
    Square,
    Abs,
    Sin,
    Cos,
    Tanh,
    Atan,
    InvLogit,
    Logit,
    LogInvLogit,
    Log1mInvLogit,
    Lgamma,
    LogPhi,
    /// log I₀(x), the log modified Bessel function of order 0 (`von_mises`).
    LogBesselI0,
}

/// Elementwise functions of two arguments (a scalar argument broadcasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Fun2 {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Min,
    Max,
    /// log P(a, x), the log regularised lower incomplete gamma function (a first).
    LogGammaP,
    /// log Q(a, x) = log(1 − P(a, x)) (a first).
    LogGammaQ,
    /// log F(t) of the standard Student-t with ν degrees of freedom (t first).
    LogStudentTCdf,
    /// log F(z; α) of the standard skew normal (z first), through Owen's T function.
    LogSkewNormalCdf,
    /// log(1 − F(z; α)) of the standard skew normal (z first).
    LogSkewNormalCcdf,
    /// A comparison, logical or integer operator on values that vary by draw (the
    /// `generated` block); its derivative is 0.
    Logic(Logic),
}

/// The operators of [`Fun2::Logic`]: comparisons and logical operators give 0 or 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Logic {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    /// Stan's `%` (the remainder, with the dividend's sign).
    Mod,
    /// Stan's `%/%` (integer division, rounded toward 0).
    IntDiv,
}

impl Logic {
    /// The operator applied to two values.
    pub fn apply(self, p: f64, q: f64) -> f64 {
        let bool01 = |c: bool| if c { 1.0 } else { 0.0 };
        match self {
            Logic::Mod => p % q,
            Logic::IntDiv => (p / q).trunc(),
            Logic::Lt => bool01(p < q),
            Logic::Le => bool01(p <= q),
            Logic::Gt => bool01(p > q),
            Logic::Ge => bool01(p >= q),
            Logic::Eq => bool01((p - q).abs() <= f64::EPSILON * p.abs().max(1.0)),
            Logic::Ne => bool01((p - q).abs() > f64::EPSILON * p.abs().max(1.0)),
            Logic::And => bool01(p != 0.0 && q != 0.0),
            Logic::Or => bool01(p != 0.0 || q != 0.0),
        }
    }
}

/// Elementwise functions of three arguments (a scalar argument broadcasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fun3 {
    /// log I_x(a, b), the log regularised incomplete beta function, of (x, a, b).
    LogBetaInc,
    /// log(1 − I_x(a, b)), of (x, a, b).
    LogBetaIncC,
    /// log F(x; μ, κ) of `von_mises` on [−π, π], of (x, μ, κ).
    LogVonMisesCdf,
    /// log(1 − F(x; μ, κ)) of `von_mises` on [−π, π], of (x, μ, κ).
    LogVonMisesCcdf,
    /// log P(K ≤ k) of K ~ binomial(n, p), of (k, n, p).
    LogBinomialCdf,
    /// log P(K > k) of K ~ binomial(n, p), of (k, n, p).
    LogBinomialCcdf,
    /// `c ? a : b` entry by entry, of (c, a, b), for a condition that varies by draw (the
    /// `generated` block); the derivative flows to the branch taken.
    Select,
}

/// A likelihood whose summed log density is one fused node ([`Op::LikSum`]): one pass over
/// the observations computes the sum and caches each observation's partial derivatives for
/// the reverse sweep, instead of a chain of elementwise nodes with one buffer each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lik {
    /// Σ log σ((2y − 1) η): arguments [y (data, 0/1), η].
    BernoulliLogit,
    /// Σ (k α − e^α): arguments [k (data), α]; the constant −Σ log k! is a separate term.
    PoissonLog,
    /// Σ (−½ z² − log σ − ½ log 2π) with z = (x − μ)/σ: arguments [x, μ, σ], σ one value
    /// (−∞ when σ ≤ 0).
    Normal,
    /// Σ (−log π − log σ − log(1 + z²)) with z = (x − μ)/σ: arguments [x, μ, σ], σ one
    /// value (−∞ when σ ≤ 0).
    Cauchy,
    /// Σ_i (η_{i,yᵢ} − log Σ_k e^{η_ik}): arguments [y (data, labels 1..K, N entries),
    /// η (N×K logits)]; its partials are N·K per column (one per logit).
    CategoricalLogit,
}

impl Lik {
    /// The name shown by `mvi dump graph`.
    pub fn name(self) -> &'static str {
        match self {
            Lik::BernoulliLogit => "bernoulli_logit",
            Lik::PoissonLog => "poisson_log",
            Lik::Normal => "normal",
            Lik::Cauchy => "cauchy",
            Lik::CategoricalLogit => "categorical_logit",
        }
    }
}

/// What a node computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A constant (data, literal, or a folded data-only expression), stored once.
    Const(Vec<f64>),
    /// w[offset .. offset + size], reshaped.
    Param {
        /// First coordinate in w.
        offset: usize,
    },
    /// θ[offset .. offset + size], reshaped (the same for every batch column).
    Hyper {
        /// First coordinate in θ.
        offset: usize,
    },
    /// An elementwise function.
    Unary(Fun1, NodeId),
    /// An elementwise function of two arguments with scalar broadcasting.
    Binary(Fun2, NodeId, NodeId),
    /// An elementwise function of three arguments with scalar broadcasting.
    Ternary(Fun3, [NodeId; 3]),
    /// The matrix product.
    MatMul(NodeId, NodeId),
    /// The transpose.
    Transpose(NodeId),
    /// Entries of the argument by flat column-major index; [`GATHER_ZERO`] gives 0.
    Gather(NodeId, Vec<u32>),
    /// Scalars packed into a vector or matrix (column-major order).
    Pack(Vec<NodeId>),
    /// Entries taken from several nodes (column-major order): entry i is entry `idx[i].1`
    /// (flat, column-major) of node `srcs[idx[i].0]`. Lowering builds it when a local that
    /// was updated entry by entry in a loop (`err[t] = y[t] - nu[t]`) is read whole, so
    /// each update costs O(1) and the read O(n) (see `graph::lower::Local`).
    Assemble(Vec<NodeId>, Vec<(u32, u32)>),
    /// Sum of all entries.
    Sum(NodeId),
    /// The running sums of a vector (x₁, x₁ + x₂, …): O(n) in value and adjoint.
    CumSum(NodeId),
    /// log Σ exp of all entries.
    LogSumExp(NodeId),
    /// log Σ exp of each row of a matrix: a vector.
    LogSumExpRows(NodeId),
    /// Largest entry.
    Max(NodeId),
    /// Smallest entry.
    Min(NodeId),
    /// The lower Cholesky factor of a symmetric positive definite matrix.
    Cholesky(NodeId),
    /// L⁻¹ B for a lower-triangular L.
    TriSolve(NodeId, NodeId),
    /// 0 when every entry lies in the interval, −∞ otherwise (support checks).
    Support {
        /// The checked node.
        x: NodeId,
        /// Lower end (−∞ for none).
        lower: f64,
        /// Upper end (+∞ for none).
        upper: f64,
        /// Whether the ends are excluded.
        strict: bool,
    },
    /// The summed log density of a likelihood over all observations, fused (see [`Lik`]);
    /// each argument has one entry per observation or one value for all.
    LikSum(Lik, Vec<NodeId>),
    /// The log density of a likelihood at each observation, fused (a vector with one entry
    /// per observation; `predict`'s pointwise log-likelihoods), arguments as [`Op::LikSum`].
    LikPoint(Lik, Vec<NodeId>),
    /// A random draw `dist_rng(args)` (the `generated` block), one per batch column; it has
    /// no derivative and is evaluated only by [`generate`].
    Rng(Box<RngDraw>),
    /// A loop whose iterations are the same operations (a recursion), its body stored once
    /// and evaluated once per step (see [`scan`]); the value is the exported body values of
    /// every step.
    Scan(Box<scan::Scan>),
}

/// A random draw node ([`Op::Rng`]): the distribution, its arguments and, for a truncated
/// `~` replicated by `--predictive`, the truncation bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct RngDraw {
    /// The distribution's base name (`normal`).
    pub dist: &'static str,
    /// The arguments, then the lower bound if `lower`, then the upper bound if `upper`.
    pub ids: Vec<NodeId>,
    /// Whether a lower truncation bound follows the arguments.
    pub lower: bool,
    /// Whether an upper truncation bound ends `ids`.
    pub upper: bool,
    /// Entries one call draws: the node's size, or less when a replicate repeats the call
    /// (`y ~ categorical(theta)` on `ints[N]` draws N times; `Y ~ multi_normal(mu, Sigma)`
    /// on a `matrix[N, K]` draws each of its N rows).
    pub each: usize,
}

impl RngDraw {
    /// The distribution's arguments (without bounds).
    pub fn args(&self) -> &[NodeId] {
        &self.ids[..self.ids.len() - usize::from(self.lower) - usize::from(self.upper)]
    }
}

/// The index in a [`Op::Gather`] list that stands for the value 0.
pub const GATHER_ZERO: u32 = u32::MAX;

/// One node: what it computes and the shape of its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The operation.
    pub op: Op,
    /// The shape of the value per batch column.
    pub shape: Shape,
}

/// A per-observation output registered for `predict`.
#[derive(Debug, Clone, PartialEq)]
pub struct PointwiseOutput {
    /// The outcome's name (for reports).
    pub name: String,
    /// Per-observation log-likelihood (a vector or scalar node).
    pub loglik: NodeId,
    /// Per-observation predictive quantity (probability, class probabilities as an N×K
    /// matrix, or location), when the distribution has one.
    pub quantity: Option<NodeId>,
    /// The observed outcomes, for error rates and mean squared errors.
    pub observed: Observed,
}

/// The observed outcomes of a `predict` statement, by the kind of prediction they allow.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// 0/1 labels (`bernoulli*`): the quantity is P(y = 1).
    Binary(Vec<i64>),
    /// Categories 1..K (`categorical_logit`): the quantity is an N×K matrix of probabilities.
    Categorical {
        /// The labels, 1-based.
        y: Vec<i64>,
        /// The number of categories K.
        k: usize,
    },
    /// Real-valued (or count) outcomes whose quantity is a location: MSE applies.
    Continuous(Vec<f64>),
    /// Nothing to compare (multivariate outcomes, binomial counts).
    Other,
}

/// A problem building the graph: a bug in lowering (the checker rules these out) or in a
/// test.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Operand shapes do not fit the operation.
    #[error("shape mismatch in {op}: {left:?} and {right:?}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// First operand's shape.
        left: Shape,
        /// Second operand's shape.
        right: Shape,
    },
    /// An index outside the value.
    #[error("index {index} out of range for a value with {size} entries")]
    Index {
        /// The 1-based index.
        index: i64,
        /// The number of entries.
        size: usize,
    },
    /// A distribution was given the wrong arguments.
    #[error("{0}")]
    Dist(String),
}

/// The log-joint graph: nodes in topological order, the target terms and the outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// The nodes; each refers only to earlier ones.
    pub nodes: Vec<Node>,
    /// Scalar nodes whose sum is the log joint.
    pub targets: Vec<NodeId>,
    /// Per-observation outputs for `predict`.
    pub pointwise: Vec<PointwiseOutput>,
    /// D, the length of w.
    pub dim: usize,
    /// P, the length of θ.
    pub theta_dim: usize,
    /// Names from the model for some nodes (`let`s, params, data), for `dump_graph`.
    pub labels: Vec<(NodeId, String)>,
    /// The statement each target term comes from (`~` or `target +=`), where lowering knows
    /// it, for diagnostics about a term ([`rows::NotRows`]).
    pub target_sites: Vec<(NodeId, crate::syntax::span::Span)>,
    /// Build likelihoods from elementary nodes only, without [`Op::LikSum`] (tests compare
    /// the two; off by default).
    pub unfused: bool,
}

impl Graph {
    /// An empty graph over w ∈ R^dim and θ ∈ R^theta_dim.
    pub fn new(dim: usize, theta_dim: usize) -> Graph {
        Graph {
            dim,
            theta_dim,
            ..Graph::default()
        }
    }

    /// The shape of a node.
    pub fn shape(&self, id: NodeId) -> Shape {
        self.nodes[id.0].shape
    }

    /// The value of a constant node, if it is one.
    pub fn const_value(&self, id: NodeId) -> Option<&[f64]> {
        match &self.nodes[id.0].op {
            Op::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Add a scalar node to the log joint (`~` statements and `target +=`).
    ///
    /// # Errors
    /// [`Error::Shape`] when the node is not a scalar.
    pub fn add_target(&mut self, node: NodeId) -> Result<(), Error> {
        let s = self.shape(node);
        if s != Shape::Scalar {
            return Err(Error::Shape {
                op: "add_target",
                left: s,
                right: Shape::Scalar,
            });
        }
        self.targets.push(node);
        Ok(())
    }

    /// Register a per-observation log-likelihood (and predictive quantity) for `predict`.
    pub fn add_pointwise(&mut self, name: &str, loglik: NodeId, quantity: Option<NodeId>) {
        self.pointwise.push(PointwiseOutput {
            name: name.to_string(),
            loglik,
            quantity,
            observed: Observed::Other,
        });
    }

    /// Record the observed outcomes of the last pointwise output.
    pub fn observe_last(&mut self, observed: Observed) {
        if let Some(p) = self.pointwise.last_mut() {
            p.observed = observed;
        }
    }

    /// Name a node after the model value it holds (shown by `dump_graph`); a node keeps its
    /// first name.
    pub fn label(&mut self, id: NodeId, name: &str) {
        // Pushed unconditionally ([`Graph::label_of`] finds the first): a check for an
        // existing name would cost O(labels) per `let` in an unrolled loop.
        if self.labels.last().is_none_or(|(n, _)| *n != id) {
            self.labels.push((id, name.to_string()));
        }
    }

    /// The statement a target term comes from, when lowering recorded it.
    pub fn target_site(&self, target: NodeId) -> Option<crate::syntax::span::Span> {
        self.target_sites
            .iter()
            .find(|(n, _)| *n == target)
            .map(|(_, s)| *s)
    }

    /// The model name of a node, if it has one.
    pub fn label_of(&self, id: NodeId) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| *n == id)
            .map(|(_, s)| s.as_str())
    }

    /// Take the pointwise outputs and labels of `from`, renumbered: a pointwise node `i`
    /// becomes `pointwise(i)`, a label's node `label(i)` (`None` drops the label).
    pub(crate) fn outputs_from(
        &mut self,
        from: &Graph,
        pointwise: impl Fn(NodeId) -> NodeId,
        label: impl Fn(NodeId) -> Option<NodeId>,
    ) {
        self.pointwise = from
            .pointwise
            .iter()
            .map(|p| PointwiseOutput {
                loglik: pointwise(p.loglik),
                quantity: p.quantity.map(&pointwise),
                ..p.clone()
            })
            .collect();
        self.labels = from
            .labels
            .iter()
            .filter_map(|(id, l)| label(*id).map(|n| (n, l.clone())))
            .collect();
        self.target_sites = from
            .target_sites
            .iter()
            .filter_map(|&(id, span)| label(id).map(|n| (n, span)))
            .collect();
    }

    pub(crate) fn push(&mut self, op: Op, shape: Shape) -> NodeId {
        self.nodes.push(Node { op, shape });
        NodeId(self.nodes.len() - 1)
    }
}
