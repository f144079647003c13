//! The abstract syntax tree of a `.mvi` program, with a byte [`Span`] on every node.
//!
//! The parser produces it; the checker (`check`) resolves names, types and shapes on it.
//! Nothing here is checked yet: names may be unknown and shapes may disagree.

use super::span::Span;

/// A name as written, with where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it stands.
    pub span: Span,
}

/// A whole `.mvi` file: its top-level items in source order.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Items in source order.
    pub items: Vec<Item>,
    /// The whole file.
    pub span: Span,
}

/// One top-level item.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `import "rbf"`
    Import(Import),
    /// `fn f(a: vector, b: real) -> vector { ... }`
    Fn(FnDef),
    /// `data { ... }`
    Data(DeclBlock),
    /// `hyper { ... }`
    Hyper(DeclBlock),
    /// `param { ... }`
    Param(DeclBlock),
    /// top-level `let name = expr`
    Let(Let),
    /// `model { ... }`
    Model(StmtBlock),
    /// `predict { ... }`
    Predict(StmtBlock),
    /// `generated { ... }`
    Generated(StmtBlock),
    /// `infer { key = value ... }`
    Infer(InferBlock),
}

/// `import "name"`: stdlib/name.mvi, or a path relative to the model file.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The string as written, without quotes.
    pub path: String,
    /// The whole statement.
    pub span: Span,
}

/// A user function.
#[derive(Debug, Clone, PartialEq)]
pub struct FnDef {
    /// Its name.
    pub name: Ident,
    /// Parameters with their types (sizes may be left out: `vector`, `matrix`).
    pub params: Vec<(Ident, TypeExpr)>,
    /// Declared return type, if any (boxed: a type with its bounds is large, and most
    /// functions leave it out).
    pub ret: Option<Box<TypeExpr>>,
    /// The body; it ends with a `return`.
    pub body: Vec<Stmt>,
    /// The whole definition.
    pub span: Span,
}

/// A `data`, `hyper` or `param` block.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclBlock {
    /// The declarations in order.
    pub decls: Vec<Decl>,
    /// The whole block, keyword to closing brace.
    pub span: Span,
}

/// `name: type` or `name: type = init`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    /// The declared name.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
    /// Initial value (`hyper`), or a value for data (`csv("X.csv")`, an expression).
    pub init: Option<Expr>,
    /// The whole declaration.
    pub span: Span,
}

/// The base of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseType {
    /// `int`
    Int,
    /// `real`
    Real,
    /// `vector[n]`
    Vector,
    /// `row_vector[n]`: a 1×n row, Stan's `row_vector`.
    RowVector,
    /// `matrix[n, m]`
    Matrix,
    /// `ints[n]`
    Ints,
}

/// A type as written: base, optional `<lower=…, upper=…>` or `<offset=…, multiplier=…>`, and
/// size expressions
/// (none for scalars or where sizes are left out, one for vectors and `ints`, two for matrices).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeExpr {
    /// The base type.
    pub base: BaseType,
    /// `lower=` bound, if written.
    pub lower: Option<Expr>,
    /// `upper=` bound, if written.
    pub upper: Option<Expr>,
    /// `offset=` of Stan's affine transform x = offset + multiplier · u, if written.
    pub offset: Option<Expr>,
    /// `multiplier=` of the affine transform, if written.
    pub multiplier: Option<Expr>,
    /// Size expressions in brackets, if written. A constrained matrix type (`cov_matrix[K]`)
    /// is written with one size and stored with it twice, as `matrix[K, K]`.
    pub sizes: Vec<Expr>,
    /// The constrained type (`simplex[K]` is a `vector[K]` with kind `Simplex`), if any.
    pub kind: Option<TypeKind>,
    /// The whole type.
    pub span: Span,
}

/// A constrained type of Stan's: a `vector` or `matrix` whose values are restricted, with a
/// transform from unconstrained coordinates (`graph::transform` holds one file per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    /// `simplex[K]`: K non-negative entries summing to 1.
    Simplex,
    /// `ordered[K]`: strictly increasing.
    Ordered,
    /// `positive_ordered[K]`: strictly increasing and positive.
    PositiveOrdered,
    /// `unit_vector[K]`: Euclidean norm 1.
    UnitVector,
    /// `sum_to_zero_vector[K]`: entries summing to 0.
    SumToZero,
    /// `cholesky_corr[K]` (Stan's `cholesky_factor_corr`): the lower Cholesky factor of a
    /// correlation matrix.
    CholeskyCorr,
    /// `cholesky_cov[K]` (Stan's `cholesky_factor_cov[K]`): lower triangular with a positive
    /// diagonal.
    CholeskyCov,
    /// `corr_matrix[K]`: symmetric positive definite with a unit diagonal.
    CorrMatrix,
    /// `cov_matrix[K]`: symmetric positive definite.
    CovMatrix,
}

impl TypeKind {
    /// Every kind, in the order of the language reference.
    pub const ALL: [TypeKind; 9] = [
        TypeKind::Simplex,
        TypeKind::Ordered,
        TypeKind::PositiveOrdered,
        TypeKind::UnitVector,
        TypeKind::SumToZero,
        TypeKind::CholeskyCorr,
        TypeKind::CholeskyCov,
        TypeKind::CorrMatrix,
        TypeKind::CovMatrix,
    ];

    /// The type's name as written in `.mvi`.
    pub fn name(self) -> &'static str {
        match self {
            TypeKind::Simplex => "simplex",
            TypeKind::Ordered => "ordered",
            TypeKind::PositiveOrdered => "positive_ordered",
            TypeKind::UnitVector => "unit_vector",
            TypeKind::SumToZero => "sum_to_zero_vector",
            TypeKind::CholeskyCorr => "cholesky_corr",
            TypeKind::CholeskyCov => "cholesky_cov",
            TypeKind::CorrMatrix => "corr_matrix",
            TypeKind::CovMatrix => "cov_matrix",
        }
    }

    /// The kind a type name (or Stan's spelling, `cholesky_factor_corr`) stands for.
    pub fn by_name(name: &str) -> Option<TypeKind> {
        match name {
            "cholesky_factor_corr" => Some(TypeKind::CholeskyCorr),
            "cholesky_factor_cov" => Some(TypeKind::CholeskyCov),
            _ => TypeKind::ALL.into_iter().find(|k| k.name() == name),
        }
    }

    /// Whether its value is a K×K matrix (otherwise a vector of length K).
    pub fn is_matrix(self) -> bool {
        matches!(
            self,
            TypeKind::CholeskyCorr | TypeKind::CholeskyCov | TypeKind::CorrMatrix | TypeKind::CovMatrix
        )
    }
}

/// A block of statements (`model`, `predict`).
#[derive(Debug, Clone, PartialEq)]
pub struct StmtBlock {
    /// Statements in order.
    pub stmts: Vec<Stmt>,
    /// The whole block.
    pub span: Span,
}

/// `let name = value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Let {
    /// The new name.
    pub name: Ident,
    /// Its value.
    pub value: Expr,
    /// The whole statement.
    pub span: Span,
}

/// Stan's truncation `T[L, U]` of a `~` statement: the density renormalised to [L, U].
#[derive(Debug, Clone, PartialEq)]
pub struct Truncation {
    /// The lower bound L, if given.
    pub lower: Option<Expr>,
    /// The upper bound U, if given.
    pub upper: Option<Expr>,
    /// `T[L, U]`.
    pub span: Span,
}

/// A statement in `model`, `predict` or a function body.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `let name = value`
    Let(Let),
    /// `target = value`, `target[i] += value`, ... on a local variable.
    Assign {
        /// The variable, possibly indexed or sliced.
        target: Expr,
        /// `=`, `+=`, `-=`, `*=`, `/=`.
        op: AssignOp,
        /// The right-hand side.
        value: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `lhs ~ dist(args)`
    Tilde {
        /// What is distributed (a name, possibly indexed or sliced).
        lhs: Expr,
        /// The distribution's name.
        dist: Ident,
        /// Its arguments.
        args: Vec<Expr>,
        /// `T[L, U]` after the distribution, when present.
        trunc: Option<Truncation>,
        /// The whole statement.
        span: Span,
    },
    /// `target += value`
    Target {
        /// The increment.
        value: Expr,
        /// The whole statement.
        span: Span,
    },
    /// `for var in lo:hi { body }` (inclusive)
    For {
        /// The loop variable.
        var: Ident,
        /// First value.
        lo: Expr,
        /// Last value (inclusive).
        hi: Expr,
        /// The body.
        body: Vec<Stmt>,
        /// The whole loop.
        span: Span,
    },
    /// `if cond { then } else { otherwise }` on data conditions
    If {
        /// The condition.
        cond: Expr,
        /// Statements when true.
        then: Vec<Stmt>,
        /// Statements when false (`else if` nests another `If` here).
        otherwise: Vec<Stmt>,
        /// The whole statement.
        span: Span,
    },
    /// `return value` (function bodies)
    Return {
        /// The returned value.
        value: Expr,
        /// The whole statement.
        span: Span,
    },
}

/// Assignment operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    /// `=`
    Set,
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=`
    Div,
}

/// An expression with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where it stands.
    pub span: Span,
}

/// Expression forms.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// Integer literal `3`.
    Int(i64),
    /// Real literal `-1.5e-3`, `2.0`.
    Real(f64),
    /// String literal (only as `csv("path")`'s argument and in `import`).
    Str(String),
    /// A name.
    Name(String),
    /// `[a, b, c]`: a vector literal, or, when its elements are themselves bracketed rows,
    /// a matrix literal by rows (`[[1, 0.8], [0.8, 1]]`); the checker decides.
    Array(Vec<Expr>),
    /// Prefix operator.
    Unary(UnOp, Box<Expr>),
    /// Infix operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Postfix `'`.
    Transpose(Box<Expr>),
    /// `cond ? a : b`
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `f(a, b)`; for `dist_lpdf(x | a, b)` the outcome is `args[0]` and `conditional` is true.
    Call {
        /// The function.
        func: Ident,
        /// Arguments in order.
        args: Vec<Expr>,
        /// Written with `|` after the first argument.
        conditional: bool,
    },
    /// `base[i]`, `base[i, j]`, `base[a:b]`, `base[:, j]`, `base[idx]` (gather by `ints`).
    Index(Box<Expr>, Vec<Index>),
}

/// One position inside `[...]` after an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Index {
    /// A single expression: an int (element or row) or an `ints` array (gather).
    At(Expr),
    /// `lo:hi`, `lo:`, `:hi` or `:` (inclusive of both ends).
    Range {
        /// Start (1 when left out).
        lo: Option<Expr>,
        /// End (the length when left out).
        hi: Option<Expr>,
        /// The whole range.
        span: Span,
    },
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `!x` (data conditions)
    Not,
}

/// Infix operators, loosest-binding last in Stan's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `^` (right-associative, binds tighter than unary minus)
    Pow,
    /// `*` (matrix product where shapes say so)
    Mul,
    /// `/`
    Div,
    /// `.*`
    ElemMul,
    /// `./`
    ElemDiv,
    /// `%` (integers)
    Mod,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `<`
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

/// `infer { key = value ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct InferBlock {
    /// Entries in order.
    pub entries: Vec<InferEntry>,
    /// The whole block.
    pub span: Span,
}

/// One `key = value` in `infer`.
#[derive(Debug, Clone, PartialEq)]
pub struct InferEntry {
    /// The key.
    pub key: Ident,
    /// The value (converted to `infer::OptionValue` by the checker).
    pub value: InferValue,
    /// Where the value stands.
    pub value_span: Span,
    /// The whole entry.
    pub span: Span,
}

/// A value in `infer`: a number, a bare word, or nested lists of names (`blocks`).
#[derive(Debug, Clone, PartialEq)]
pub enum InferValue {
    /// An integer (may be negative).
    Int(i64),
    /// A real number.
    Real(f64),
    /// A bare word: a method name, an optimiser name, `true`, `false`.
    Word(String),
    /// `[[a, b], [c]]` or `[a, b]`.
    List(Vec<InferValue>),
}
