//! Typed expressions and statements: the checker's output, read by lowering.
//!
//! Every [`TExpr`] carries its concrete [`Shape`] (sizes are numbers, not names), its
//! [`Stage`] (what it depends on) and, for scalars known at check time, its value.

use crate::syntax::ast::{AssignOp, UnOp};
use crate::syntax::span::Span;
use std::fmt;

/// The concrete shape of a value; sizes are known numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An integer scalar.
    Int,
    /// A real scalar.
    Real,
    /// A column vector of this length.
    Vector(usize),
    /// A row vector of this length (Stan's `row_vector`; a 1×n matrix in the graph).
    RowVector(usize),
    /// A matrix with (rows, cols).
    Matrix(usize, usize),
    /// An integer array of this length.
    Ints(usize),
}

impl Shape {
    /// True for `int` and `real`.
    pub fn is_scalar(self) -> bool {
        matches!(self, Shape::Int | Shape::Real)
    }

    /// True for `int` and `ints[n]`.
    pub fn is_integer(self) -> bool {
        matches!(self, Shape::Int | Shape::Ints(_))
    }

    /// Number of scalar elements.
    pub fn len(self) -> usize {
        match self {
            Shape::Int | Shape::Real => 1,
            Shape::Vector(n) | Shape::RowVector(n) | Shape::Ints(n) => n,
            Shape::Matrix(r, c) => r * c,
        }
    }

    /// True when the value holds no elements.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The same shape with real elements (`ints[n]` → `vector[n]`, `int` → `real`).
    pub fn to_real(self) -> Shape {
        match self {
            Shape::Int => Shape::Real,
            Shape::Ints(n) => Shape::Vector(n),
            other => other,
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Int => write!(f, "int"),
            Shape::Real => write!(f, "real"),
            Shape::Vector(n) => write!(f, "vector[{n}]"),
            Shape::RowVector(n) => write!(f, "row_vector[{n}]"),
            Shape::Matrix(r, c) => write!(f, "matrix[{r}, {c}]"),
            Shape::Ints(n) => write!(f, "ints[{n}]"),
        }
    }
}

/// What a value depends on, ordered: a `Param`-stage value may depend on everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Known from the data alone: lowering may fold it once.
    Const,
    /// Depends on `hyper` values (and maybe data), not on `param`.
    Hyper,
    /// Depends on `param` values.
    Param,
}

/// Where a name used in an expression comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A `data` entry (in [`crate::data::BoundData::values`]).
    Data,
    /// A size variable bound from the data shapes (in [`crate::data::BoundData::sizes`]).
    Size,
    /// A `hyper` value.
    Hyper,
    /// A `param` value.
    Param,
    /// A top-level `let`.
    Global,
    /// A `let` inside `model`, `predict` or an inlined function body.
    Local,
}

/// How a distribution is used in an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistForm {
    /// `dist_lpdf(x | …)` or `dist_lpmf(x | …)`: the log density, summed over elements.
    Lpdf,
    /// `dist_lcdf(x | …)`: the log CDF, summed.
    Lcdf,
    /// `dist_lccdf(x | …)`: the log complementary CDF, summed.
    Lccdf,
}

/// Binary operators after shape resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TBinOp {
    /// Elementwise (or scalar-broadcast) `+`.
    Add,
    /// Elementwise (or scalar-broadcast) `-`.
    Sub,
    /// Product with a scalar on one side, or two scalars.
    ScalarMul,
    /// Matrix product (matrix·matrix, matrix·vector, vectorᵀ·… as written).
    MatMul,
    /// `.*`
    ElemMul,
    /// `/` by a scalar, or `./`.
    ElemDiv,
    /// `^` with a scalar exponent or elementwise.
    Pow,
    /// `%` on integers.
    Mod,
    /// Integer division `/` of two ints (truncating, as in Stan).
    IntDiv,
    /// `<` (data only, 0/1 result).
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&&`
    And,
    /// `||`
    Or,
}

/// A typed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct TExpr {
    /// What it computes.
    pub kind: TExprKind,
    /// Its concrete shape.
    pub shape: Shape,
    /// What it depends on.
    pub stage: Stage,
    /// The value, for scalars known at check time (literals, scalar data, sizes, loop
    /// indices and arithmetic on them).
    pub value: Option<f64>,
    /// Where it was written (in the file named by the enclosing function, if inlined).
    pub span: Span,
}

/// One position of a typed index.
#[derive(Debug, Clone, PartialEq)]
pub enum TIndex {
    /// A single int (1-based).
    At(TExpr),
    /// An inclusive range `lo..=hi`, 1-based, both known at check time.
    Range {
        /// First index.
        lo: usize,
        /// Last index (inclusive); `hi < lo` means empty.
        hi: usize,
    },
    /// A gather by an `ints` array (1-based entries).
    Gather(TExpr),
}

/// Typed expression forms.
#[derive(Debug, Clone, PartialEq)]
pub enum TExprKind {
    /// Integer literal (also an unrolled loop index).
    Int(i64),
    /// Real literal.
    Real(f64),
    /// A named value and where it comes from.
    Name(String, NameKind),
    /// Vector literal: each element a scalar.
    Vector(Vec<TExpr>),
    /// Matrix literal by rows: each element a scalar.
    Matrix(Vec<Vec<TExpr>>),
    /// Prefix operator (`-` elementwise, `!` on data).
    Unary(UnOp, Box<TExpr>),
    /// Infix operator after shape resolution.
    Binary(TBinOp, Box<TExpr>, Box<TExpr>),
    /// Transpose; of a vector it gives a 1×n matrix.
    Transpose(Box<TExpr>),
    /// `cond ? a : b`, `cond` of stage `Const`.
    Ternary(Box<TExpr>, Box<TExpr>, Box<TExpr>),
    /// A built-in function (see `check::builtins`).
    Call(String, Vec<TExpr>),
    /// A distribution's log density, CDF or CCDF summed over elements; `args[0]` the outcome.
    Dist {
        /// The distribution's base name (`normal`).
        dist: String,
        /// Which function of it.
        form: DistForm,
        /// Outcome, then parameters.
        args: Vec<TExpr>,
    },
    /// `dist_rng(args)`: a random draw (the `generated` and `predict` blocks).
    Rng {
        /// The distribution's base name (`normal`).
        dist: String,
        /// Its arguments.
        args: Vec<TExpr>,
    },
    /// A user function call, inlined: the arguments bound to `params`, then `body`, then
    /// `result` (which reads the params and the body's locals). It opens a fresh scope: names
    /// of kind `Local` inside it refer only to its params and its body's `let`s, never to
    /// the caller's locals (functions are pure).
    Inline {
        /// The function's name.
        func: String,
        /// Its parameters with the argument bound to each.
        params: Vec<(String, TExpr)>,
        /// Its statements before `return`.
        body: Vec<TStmt>,
        /// The returned expression.
        result: Box<TExpr>,
    },
    /// Indexing, slicing or gathering.
    Index(Box<TExpr>, Vec<TIndex>),
}

impl TExpr {
    /// Whether this is a distribution function whose outcome is data (`normal_lpdf(y | mu,
    /// sigma)`, `normal_lccdf(c | mu, sigma)` with `y`, `c` data): in `target += …`, a
    /// likelihood term, as `y ~ normal(mu, sigma)` is.
    pub fn scores_data(&self) -> bool {
        matches!(&self.kind, TExprKind::Dist { args, .. }
            if args.first().is_some_and(|x| x.stage == Stage::Const))
    }
}

/// A typed statement.
#[derive(Debug, Clone, PartialEq)]
pub enum TStmt {
    /// `let name = value` (a new local).
    Let {
        /// The new local's name.
        name: String,
        /// Its initial value.
        value: TExpr,
    },
    /// Update of a local (`acc = acc + x`, `mu[2:N] += …`); `target` is a `Name` of kind
    /// `Local`, possibly indexed with known indices.
    Assign {
        /// The local, possibly indexed.
        target: TExpr,
        /// The operator.
        op: AssignOp,
        /// The right-hand side, already broadcastable to the target's shape.
        value: TExpr,
    },
    /// `lhs ~ dist(args)`: adds `dist_lpdf(lhs | args)` to the log joint.
    Tilde {
        /// What is distributed.
        lhs: TExpr,
        /// The distribution's base name.
        dist: String,
        /// Its parameters.
        args: Vec<TExpr>,
        /// `T[lower, upper]`: the bounds of a truncation (either may be absent); `None` for
        /// an untruncated `~`.
        trunc: Option<(Option<TExpr>, Option<TExpr>)>,
    },
    /// `target += value` (value is summed if not scalar).
    Target(TExpr),
    /// An unrolled `for` loop: one checked body per index value `lo..=hi`.
    For {
        /// The loop variable (bound to `TExprKind::Int` inside each body).
        var: String,
        /// First index.
        lo: i64,
        /// Last index (inclusive).
        hi: i64,
        /// `hi - lo + 1` bodies, each checked with the index known.
        iterations: Vec<Vec<TStmt>>,
    },
    /// `if` on a `Const`-stage condition; lowering picks the branch. When the condition's
    /// value is known at check time (`value` is set), only the branch taken is checked and
    /// the other is left empty.
    If {
        /// The condition (scalar, stage `Const`).
        cond: TExpr,
        /// Statements when true.
        then: Vec<TStmt>,
        /// Statements when false.
        otherwise: Vec<TStmt>,
    },
}
