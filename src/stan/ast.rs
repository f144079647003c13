//! The AST of a Stan program, as parsed by [`super::parser`]: every node keeps the byte
//! [`Span`] of its text in the `.stan` file, so that the translation can point back at it.

use crate::syntax::span::Span;

/// A whole Stan program: its blocks, each possibly empty.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// `functions { … }`.
    pub functions: Vec<FunDef>,
    /// `data { … }`.
    pub data: Vec<VarDecl>,
    /// `transformed data { … }`.
    pub tdata: Vec<Stmt>,
    /// `parameters { … }`.
    pub params: Vec<VarDecl>,
    /// `transformed parameters { … }`.
    pub tparams: Vec<Stmt>,
    /// `model { … }`.
    pub model: Vec<Stmt>,
    /// `generated quantities { … }`.
    pub gq: Vec<Stmt>,
    /// The span of the `model` block, when there is one.
    pub model_span: Option<Span>,
}

/// A name with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

/// A user function: `real f(real x, data vector y) { … }`.
#[derive(Debug, Clone)]
pub struct FunDef {
    /// The return type; `None` for `void`.
    pub ret: Option<UnsizedType>,
    /// The function's name.
    pub name: Ident,
    /// The arguments.
    pub args: Vec<FunArg>,
    /// The body; `None` for a forward declaration `real f(real x);`.
    pub body: Option<Vec<Stmt>>,
    /// The whole definition.
    pub span: Span,
}

/// A type without sizes, in a function signature: `array[] real`, `matrix`.
#[derive(Debug, Clone)]
pub struct UnsizedType {
    /// `int`, `real`, `complex`, `vector`, `row_vector` or `matrix`.
    pub base: String,
    /// The number of array dimensions (0 for none).
    pub dims: usize,
    /// Where it is.
    pub span: Span,
}

/// A function argument: `data array[] real x`.
#[derive(Debug, Clone)]
pub struct FunArg {
    /// Its type.
    pub ty: UnsizedType,
    /// Its name.
    pub name: Ident,
}

/// A declaration: `array[N] vector<lower=0>[K] x = e;` (or the old `real x[N];`).
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// The array dimensions, from `array[…]` or after the name; empty for a non-array.
    pub array_dims: Vec<Expr>,
    /// The type's name: `real`, `vector`, `simplex`, `cholesky_factor_cov`, …
    pub ty: String,
    /// The bounds, in the order written: `("lower", e)`, `("offset", e)`, …
    pub bounds: Vec<(String, Expr)>,
    /// The type's sizes: `[K]`, `[M, N]`.
    pub sizes: Vec<Expr>,
    /// The declared name.
    pub name: Ident,
    /// The value, when the declaration has one.
    pub init: Option<Expr>,
    /// The span of the type (with its array dimensions, bounds and sizes).
    pub type_span: Span,
    /// The whole declaration.
    pub span: Span,
}

/// A statement with its span.
#[derive(Debug, Clone)]
pub struct Stmt {
    /// What the statement is.
    pub kind: StmtKind,
    /// Where it is.
    pub span: Span,
}

/// The kinds of statement.
#[derive(Debug, Clone)]
pub enum StmtKind {
    /// A local declaration.
    Decl(VarDecl),
    /// `{ … }`, also the body of `profile("…") { … }`.
    Block(Vec<Stmt>),
    /// `for (i in lo:hi) body`; `hi` is `None` for a foreach loop `for (x in xs)`.
    For {
        /// The loop variable.
        var: Ident,
        /// The first value, or the container of a foreach loop.
        lo: Expr,
        /// The last value.
        hi: Option<Expr>,
        /// The body.
        body: Box<Stmt>,
    },
    /// `while (cond) body`.
    While,
    /// `if (cond) then else els`.
    If {
        /// The condition.
        cond: Expr,
        /// The branch taken when it is nonzero.
        then: Box<Stmt>,
        /// The other branch.
        els: Option<Box<Stmt>>,
    },
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `return e;` or `return;`.
    Return(Option<Expr>),
    /// `print(…);`
    Print,
    /// `reject(…);` or `fatal_error(…);`.
    Reject,
    /// `target += e;` (and the old `increment_log_prob(e);`).
    Target(Expr),
    /// `lhs op rhs;` with `op` one of `=`, `+=`, `-=`, `*=`, `/=`, `.*=`, `./=`, `<-`.
    Assign {
        /// The variable assigned, possibly indexed.
        lhs: LValue,
        /// The operator as written.
        op: String,
        /// The value.
        rhs: Expr,
    },
    /// `lhs ~ dist(args) T[lo, hi];`
    Tilde {
        /// The outcome.
        lhs: Expr,
        /// The distribution's name.
        dist: Ident,
        /// Its arguments.
        args: Vec<Expr>,
        /// The truncation, when there is one: its lower and upper bounds.
        trunc: Option<(Option<Expr>, Option<Expr>)>,
    },
    /// `f(x);`, a call for its effect.
    Call(Expr),
    /// `;`
    Empty,
}

/// The left of an assignment: `mu[n]`, `L[2:K, 1]`.
#[derive(Debug, Clone)]
pub struct LValue {
    /// The variable.
    pub name: Ident,
    /// Each `[…]` after it, in order.
    pub indices: Vec<Vec<Index>>,
    /// The whole left side.
    pub span: Span,
}

/// One index inside `[…]`.
#[derive(Debug, Clone)]
pub enum Index {
    /// A single index or a multi-index (an integer array): `i`, `idx`.
    Single(Expr),
    /// A range `lo:hi`, either end optional.
    Range(Option<Expr>, Option<Expr>),
}

/// An expression with its span.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What the expression is.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
}

/// The kinds of expression.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An integer literal as written.
    Int(String),
    /// A real literal as written (`1.`, `.5`, `2e3`).
    Real(String),
    /// An imaginary literal (`2i`).
    Imag,
    /// A variable.
    Var(String),
    /// A call `f(a, b)`; `bar` when the first argument is followed by `|`.
    Call {
        /// The function's name.
        name: Ident,
        /// The arguments.
        args: Vec<Expr>,
        /// Written as `f(a | b, …)`.
        bar: bool,
    },
    /// A prefix operator (`-`, `!`, `+`) applied to an operand.
    Unary(String, Box<Expr>),
    /// A binary operator as written (`+`, `.*`, `%/%`, `\`, `.^`, …).
    Binary(String, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Indexing `e[…]`.
    Index(Box<Expr>, Vec<Index>),
    /// Transpose `e'`.
    Transpose(Box<Expr>),
    /// A row-vector literal `[a, b]` (a matrix when its entries are row vectors).
    RowVec(Vec<Expr>),
    /// An array literal `{a, b}`.
    Array(Vec<Expr>),
}
