//! The checker: AST + bound data → [`TypedModel`], or every diagnostic it can safely collect.
//!
//! Input: a parsed [`Program`] (imports resolved by [`load_model`] or the caller), the bound
//! data. Output: a [`TypedModel`] in which every expression has a concrete [`Shape`] (sizes
//! are numbers bound from the data), a [`Stage`] (data-only, depends on `hyper`, depends on
//! `param`) and, for scalars known at check time, a value. Lowering can rely on: every name
//! resolved (with its [`NameKind`]), every operator resolved ([`TBinOp`]: matrix product vs
//! elementwise), every index in range where it is known, every `for` loop unrolled with its
//! index known, every `if` condition of stage `Const`, and the parameter and hyperparameter
//! layouts precomputed.
//!
//! # User functions
//! A user function (from the model or an imported stdlib file) is checked *per call site*
//! with the concrete argument shapes, and the call becomes [`TExprKind::Inline`]: the
//! arguments bound to the parameter names, the typed body and the typed result. The graph
//! inlines it; no generic function representation is needed. Functions are pure: their body
//! sees only their parameters and its own `let`s, and cannot use `~` or `target`.
//! Recursion is an error. A function of the model file that is never called gets name
//! resolution only (its shapes are only known at a call site).
//!
//! # Scoping decisions
//! Every name is declared once: data, size variables, hypers, params, top-level `let`s and
//! functions share one namespace, and a block-level `let` may not reuse a visible name.
//! Top-level `let`s may use any `data`/`hyper`/`param` (wherever declared) and earlier
//! `let`s. `predict` sees data, hypers, params, top-level `let`s and its own `let`s, never
//! the `model` block's; its `~` takes held-out data on the left. `let` locals may be
//! updated (`acc = acc + x`, `mu[2:N] += …`): an update raises the local's stage and may
//! turn an int local into a real one. `M[1, j]`-style indices and slice bounds must be
//! known at check time (literals, data ints, sizes, loop indices): every `for` loop is
//! unrolled here, with its index known in each copy of the body.

// `Diagnostic` is the project's one user-facing error type and is returned by value by design.
#![allow(clippy::result_large_err)]

mod bounds;
pub mod builtins;
mod checker;
pub mod dists;
pub mod error;
mod exprs;
mod infer;
pub mod infer_keys;
pub mod memory;
mod names;
mod report;
pub mod rng;
pub mod shapes;
mod stmts;
pub mod types;

pub use infer::{infer_options, parse_override};
pub use report::{dump_typed, layout_report};
pub use types::{DistForm, NameKind, Shape, Stage, TBinOp, TExpr, TExprKind, TIndex, TStmt};

use crate::data::BoundData;
use crate::diagnostic::Diagnostic;
use crate::options::InferOptions;
use crate::syntax::ast::{FnDef, Program};
use miette::NamedSource;
use std::path::{Path, PathBuf};

/// How a constrained value is mapped to the unconstrained scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    /// No constraint: x = u.
    Identity,
    /// `<lower=a>`: x = a + exp(u).
    Lower(f64),
    /// `<upper=b>`: x = b − exp(u).
    Upper(f64),
    /// `<lower=a, upper=b>`: x = a + (b − a) · inv_logit(u).
    LowerUpper(f64, f64),
    /// A constrained type (`simplex[K]`, `cov_matrix[K]`, …) with Stan's transform
    /// (`graph::transform`).
    Type(crate::syntax::ast::TypeKind),
    /// Bounds that depend on hypers or earlier params, the same transforms as constant
    /// bounds with the bounds evaluated at the current point, or Stan's affine transform
    /// x = offset + multiplier · u ([`Slot::dependent`]).
    Dependent,
}

impl Transform {
    /// How reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            Transform::Identity => "identity",
            Transform::Lower(_) => "log",
            Transform::Upper(_) => "log (upper)",
            Transform::LowerUpper(..) => "logit-scaled",
            Transform::Type(k) => k.name(),
            Transform::Dependent => "dependent bounds",
        }
    }
}

/// A `param` or `hyper` entry with its place in the flat vector (w for params, θ for hypers).
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Its name.
    pub name: String,
    /// Its concrete shape (`Real`, `Vector`, `Matrix`).
    pub shape: Shape,
    /// The type as written, e.g. `vector<lower=0>[J]`.
    pub declared: String,
    /// The constraint transform.
    pub transform: Transform,
    /// Offset of its first element in the flat vector (0-based); matrices are column-major.
    pub offset: usize,
    /// Number of elements.
    pub len: usize,
    /// The initial value (hypers only), on the constrained scale, column-major.
    pub init: Option<Vec<f64>>,
    /// The initial value's expression (hypers only).
    pub init_expr: Option<TExpr>,
    /// The bounds or the affine transform, for [`Transform::Dependent`].
    pub dependent: Option<DependentBounds>,
}

impl Slot {
    /// How reports name its transform: [`Transform::name`], or `affine` for the affine
    /// transform (`<offset=…, multiplier=…>`).
    pub fn transform_name(&self) -> &'static str {
        if self.dependent.as_ref().is_some_and(DependentBounds::is_affine) {
            "affine"
        } else {
            self.transform.name()
        }
    }
}

/// Bounds that depend on hypers or earlier params (`real<lower=0, upper=1 - alpha1>`), or
/// Stan's affine transform (`vector<offset=mu, multiplier=tau>[J]`), as typed expressions
/// lowered to graph nodes; each is a scalar or has the declared shape. Bounds and the affine
/// transform are never given together.
#[derive(Debug, Clone, PartialEq)]
pub struct DependentBounds {
    /// `lower=`, if written.
    pub lower: Option<TExpr>,
    /// `upper=`, if written.
    pub upper: Option<TExpr>,
    /// `offset=`, if written.
    pub offset: Option<TExpr>,
    /// `multiplier=`, if written.
    pub multiplier: Option<TExpr>,
}

impl DependentBounds {
    /// Whether this is the affine transform rather than bounds.
    pub fn is_affine(&self) -> bool {
        self.offset.is_some() || self.multiplier.is_some()
    }
}

/// A `data` declaration after binding.
#[derive(Debug, Clone, PartialEq)]
pub struct DataDecl {
    /// Its name.
    pub name: String,
    /// Its concrete shape.
    pub shape: Shape,
    /// The type as written.
    pub declared: String,
}

/// A checked model with its data bound: everything lowering needs.
#[derive(Debug, Clone)]
pub struct TypedModel {
    /// The model file's name and text (diagnostic spans in top-level items point here).
    pub source: NamedSource<String>,
    /// Bound data values and size variables.
    pub data: BoundData,
    /// Data declarations in order.
    pub data_decls: Vec<DataDecl>,
    /// Hyperparameters θ in declaration order, with offsets into θ.
    pub hypers: Vec<Slot>,
    /// Total length of θ.
    pub hyper_dim: usize,
    /// Parameters in declaration order, with offsets into the unconstrained vector w.
    pub params: Vec<Slot>,
    /// D, the length of w.
    pub dim: usize,
    /// Top-level `let`s in source order: (name, value).
    pub lets: Vec<(String, TExpr)>,
    /// The `model` block's statements.
    pub model: Vec<TStmt>,
    /// The `predict` block's statements (empty without a block).
    pub predict: Vec<TStmt>,
    /// Whether the model has a `predict` block.
    pub has_predict: bool,
    /// The `generated` block's statements (empty without a block); its top-level `let`s are
    /// the block's outputs, in order.
    pub generated: Vec<TStmt>,
    /// The validated `infer` options of the model file (no defaults filled in).
    pub infer: InferOptions,
    /// The user and stdlib functions available, by name.
    pub functions: Vec<String>,
}

impl TypedModel {
    /// The param slot called `name`.
    pub fn param(&self, name: &str) -> Option<&Slot> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The hyper slot called `name`.
    pub fn hyper(&self, name: &str) -> Option<&Slot> {
        self.hypers.iter().find(|p| p.name == name)
    }
}

/// What [`load_model`] returns: the typed model with its data bound inside
/// ([`TypedModel::data`]).
pub type CheckedModel = TypedModel;

/// A function definition with the file it came from.
#[derive(Debug, Clone)]
pub struct SourceFn {
    /// The definition.
    pub def: FnDef,
    /// Its file (for diagnostics inside its body).
    pub source: NamedSource<String>,
}

/// Read, parse and check a model, loading its data: the single entry point for the CLI,
/// the REPL and the tests.
///
/// `data_args` are the `--data` values (`file.json` or `NAME=file.csv`).
///
/// # Errors
/// Every diagnostic found: unreadable files, syntax errors, data problems, check errors.
pub fn load_model(model_path: &Path, data_args: &[String]) -> Result<TypedModel, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(model_path).map_err(|e| {
        vec![Diagnostic::plain(
            "mvi::check::unreadable_model",
            format!("cannot read model file `{}`: {e}", model_path.display()),
        )
        .with_help("check the path; model files end in `.mvi`")]
    })?;
    let data = crate::data::load_data_args(data_args)?;
    let dir = model_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    check_source(&text, &model_path.display().to_string(), &dir, &data)
}

/// Parse and check a model text with already-read data files; `model_dir` is where imports
/// and `csv("…")` paths are looked up. A `file_name` ending in `.stan` is a Stan program:
/// it is translated to `.mvi` text first ([`crate::stan::translate()`]), and diagnostics about
/// that text point into the `.stan` file.
///
/// # Errors
/// As [`load_model`].
pub fn check_source(
    text: &str,
    file_name: &str,
    model_dir: &Path,
    data: &crate::data::DataSet,
) -> Result<TypedModel, Vec<Diagnostic>> {
    if crate::stan::is_stan_file(file_name) {
        let translation = crate::stan::translate(text, file_name).map_err(|d| vec![d])?;
        return check_mvi_source(&translation.text, file_name, model_dir, data)
            .map_err(|ds| ds.into_iter().map(|d| translation.to_stan(d)).collect());
    }
    check_mvi_source(text, file_name, model_dir, data)
}

fn check_mvi_source(
    text: &str,
    file_name: &str,
    model_dir: &Path,
    data: &crate::data::DataSet,
) -> Result<TypedModel, Vec<Diagnostic>> {
    let program = crate::syntax::parse_program(text, file_name).map_err(|d| vec![d])?;
    let source = NamedSource::new(file_name, text.to_string());
    let fns = resolve_imports(&program, &source, model_dir)?;
    check_program(&program, source, fns, model_dir, data)
}

/// Check a parsed program with its imported functions against the data files.
///
/// # Errors
/// Every diagnostic the checker can safely collect.
pub fn check_program(
    program: &Program,
    source: NamedSource<String>,
    imported: Vec<SourceFn>,
    model_dir: &Path,
    data: &crate::data::DataSet,
) -> Result<TypedModel, Vec<Diagnostic>> {
    checker::Checker::run(program, source, imported, model_dir, data)
}

/// Where `import "name"` is looked for: next to the model (`name` or `name.mvi`), then the
/// crate's `stdlib/`, then `stdlib/` next to the executable.
pub fn import_candidates(name: &str, model_dir: &Path) -> Vec<PathBuf> {
    let file = if name.ends_with(".mvi") {
        name.to_string()
    } else {
        format!("{name}.mvi")
    };
    let mut out = vec![
        model_dir.join(&file),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib").join(&file),
    ];
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        out.push(dir.join("stdlib").join(&file));
    }
    out
}

/// Load every imported file (recursively, each once) and return their functions.
///
/// # Errors
/// An import that cannot be found or parsed, or that holds more than functions and imports.
pub fn resolve_imports(
    program: &Program,
    source: &NamedSource<String>,
    model_dir: &Path,
) -> Result<Vec<SourceFn>, Vec<Diagnostic>> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    let mut errors = Vec::new();
    collect_imports(program, source, model_dir, &mut seen, &mut out, &mut errors, 0);
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn collect_imports(
    program: &Program,
    source: &NamedSource<String>,
    model_dir: &Path,
    seen: &mut Vec<PathBuf>,
    out: &mut Vec<SourceFn>,
    errors: &mut Vec<Diagnostic>,
    depth: usize,
) {
    use crate::syntax::ast::Item;
    for item in &program.items {
        let Item::Import(imp) = item else { continue };
        let candidates = import_candidates(&imp.path, model_dir);
        let Some(path) = candidates.iter().find(|p| p.is_file()) else {
            let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
            errors.push(
                Diagnostic::error(
                    "mvi::check::import_not_found",
                    format!("cannot find import `{}`", imp.path),
                    source.clone(),
                )
                .with_label(imp.span, "imported here")
                .with_help(format!(
                    "looked for `{}` next to the model and in the stdlib directory ({} places)",
                    candidates[0].file_name().and_then(|f| f.to_str()).unwrap_or(""),
                    tried.len()
                )),
            );
            continue;
        };
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&canonical) || depth > 16 {
            continue;
        }
        seen.push(canonical);
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(
                    Diagnostic::error(
                        "mvi::check::import_unreadable",
                        format!("cannot read `{}`: {e}", path.display()),
                        source.clone(),
                    )
                    .with_label(imp.span, "imported here"),
                );
                continue;
            }
        };
        let name = path.display().to_string();
        match crate::syntax::parse_program(&text, &name) {
            Ok(p) => {
                let src = NamedSource::new(name, text);
                for it in &p.items {
                    match it {
                        Item::Fn(f) => out.push(SourceFn {
                            def: f.clone(),
                            source: src.clone(),
                        }),
                        Item::Import(_) => {}
                        other => errors.push(
                            Diagnostic::error(
                                "mvi::check::import_not_library",
                                "an imported file may only hold functions and imports",
                                src.clone(),
                            )
                            .with_label(item_span(other), "not a function"),
                        ),
                    }
                }
                let dir = path
                    .parent()
                    .map_or_else(|| model_dir.to_path_buf(), Path::to_path_buf);
                collect_imports(&p, &src, &dir, seen, out, errors, depth + 1);
            }
            Err(d) => errors.push(d),
        }
    }
}

fn item_span(item: &crate::syntax::ast::Item) -> crate::syntax::span::Span {
    use crate::syntax::ast::Item;
    match item {
        Item::Import(i) => i.span,
        Item::Fn(f) => f.span,
        Item::Data(b) | Item::Hyper(b) | Item::Param(b) => b.span,
        Item::Let(l) => l.span,
        Item::Model(b) | Item::Predict(b) | Item::Generated(b) => b.span,
        Item::Infer(b) => b.span,
    }
}
