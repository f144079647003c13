//! The constraint of a `param` or `hyper` declaration: a constrained type (`simplex[K]`,
//! `cov_matrix[K]`, …; sized by `constrained`, built by `graph::transform`), constant bounds,
//! bounds that depend on hypers and earlier params (`real<lower=0, upper=1 - alpha1>`), or
//! Stan's affine transform (`vector<offset=mu, multiplier=tau>[J]`).
//!
//! What lowering can rely on: a constrained type has K at least its minimum and no bounds;
//! a dependent bound, offset or multiplier is a scalar or has the declared shape, and reads
//! only data, hypers declared before it (for a hyper) or hypers and params declared before it
//! (for a param); an affine transform has no bounds, and a constant multiplier is positive.

use super::checker::{Checker, Ctx, R};
use super::types::{Shape, TExpr};
use super::{DependentBounds, Transform};
use crate::constrained::entry;
use crate::syntax::ast::{Decl, Expr, ExprKind, Index, TypeKind};
use crate::syntax::span::Span;

/// A declaration's transform, its dependent bounds (for [`Transform::Dependent`]) and the
/// number of unconstrained coordinates it takes.
pub(super) type DeclTransform = (Transform, Option<DependentBounds>, usize);

impl Checker {
    /// The transform of declaration `d` of shape `shape`; `later` holds the names of the
    /// hypers and params declared after it.
    pub(super) fn decl_transform(&mut self, d: &Decl, shape: Shape, later: &[String]) -> R<DeclTransform> {
        if let Some(kind) = d.ty.kind {
            return self.typed_transform(d, kind, shape);
        }
        if d.ty.offset.is_some() || d.ty.multiplier.is_some() {
            return self.affine_transform(d, shape, later);
        }
        for b in [&d.ty.lower, &d.ty.upper].into_iter().flatten() {
            self.bound_order(d, b, later, "bound")?;
        }
        let lower = self.bound_expr(d, &d.ty.lower, shape)?;
        let upper = self.bound_expr(d, &d.ty.upper, shape)?;
        let known = |b: &Option<TExpr>| b.as_ref().map(|e| e.value.filter(|_| e.shape.is_scalar()));
        let transform = match (known(&lower), known(&upper)) {
            (None, None) => Transform::Identity,
            (Some(Some(a)), None) => Transform::Lower(a),
            (None, Some(Some(b))) => Transform::Upper(b),
            (Some(Some(a)), Some(Some(b))) if a < b => Transform::LowerUpper(a, b),
            (Some(Some(a)), Some(Some(b))) => {
                return self.fail(
                    "mvi::check::empty_interval",
                    format!(
                        "the bounds of `{}` leave no room: lower {a} ≥ upper {b}",
                        d.name.name
                    ),
                    d.ty.span,
                    "these bounds",
                    "the lower bound must be below the upper one: swap them if they are in the \
                     wrong order",
                )
            }
            _ => {
                let bounds = DependentBounds {
                    lower,
                    upper,
                    offset: None,
                    multiplier: None,
                };
                return Ok((Transform::Dependent, Some(bounds), shape.len()));
            }
        };
        Ok((transform, None, shape.len()))
    }

    /// Stan's affine transform x = offset + multiplier · u; either may be left out (offset 0,
    /// multiplier 1). Stan does not combine it with bounds, and neither do we.
    fn affine_transform(&mut self, d: &Decl, shape: Shape, later: &[String]) -> R<DeclTransform> {
        if let Some(b) = d.ty.lower.as_ref().or(d.ty.upper.as_ref()) {
            let diag = self
                .diag(
                    "mvi::check::bounds_with_affine",
                    format!("`{}` has both bounds and an offset or multiplier", d.name.name),
                )
                .with_label(b.span, "this bound")
                .with_help(
                    "as in Stan, a declaration takes `<lower=…, upper=…>` or `<offset=…, multiplier=…>`, \
                     not both: keep the bounds, or keep the affine transform and bound the value \
                     it is computed from",
                );
            return Err(self.report(diag));
        }
        let keys = [(&d.ty.offset, "offset"), (&d.ty.multiplier, "multiplier")];
        for (b, what) in keys {
            if let Some(b) = b {
                self.bound_order(d, b, later, what)?;
            }
        }
        let offset = self.bound_expr(d, &d.ty.offset, shape)?;
        let multiplier = self.bound_expr(d, &d.ty.multiplier, shape)?;
        if let (Some(m), Some(e)) = (&multiplier, &d.ty.multiplier) {
            if let Some(v) = m.value.filter(|v| m.shape.is_scalar() && *v <= 0.0) {
                return self.fail(
                    "mvi::check::multiplier_not_positive",
                    format!("the multiplier of `{}` is {v}, not positive", d.name.name),
                    e.span,
                    "this multiplier",
                    "the multiplier scales the unconstrained value (x = offset + multiplier · u) and \
                     must be > 0, as in Stan",
                );
            }
        }
        let affine = DependentBounds {
            lower: None,
            upper: None,
            offset,
            multiplier,
        };
        Ok((Transform::Dependent, Some(affine), shape.len()))
    }

    fn typed_transform(&mut self, d: &Decl, kind: TypeKind, shape: Shape) -> R<DeclTransform> {
        let name = kind.name();
        let written = [&d.ty.lower, &d.ty.upper, &d.ty.offset, &d.ty.multiplier];
        if let Some(b) = written.into_iter().flatten().next() {
            let d = self
                .diag(
                    "mvi::check::bounds_on_constrained_type",
                    format!("a `{name}` takes no bounds"),
                )
                .with_label(b.span, "this bound")
                .with_help(format!(
                    "the type itself constrains the values of a `{name}`; remove `<…>`"
                ));
            return Err(self.report(d));
        }
        let e = entry(kind);
        let (k, cols) = match shape {
            Shape::Vector(k) => (k, 1),
            Shape::Matrix(k, n) => (k, n),
            _ => unreachable!("the parser gives a constrained type a vector or matrix base"),
        };
        if kind.is_matrix() && cols > k {
            let d = self
                .diag(
                    "mvi::check::type_too_wide",
                    format!("`{name}[{k}, {cols}]` has more columns than rows"),
                )
                .with_label(d.ty.span, format!("{k} rows, {cols} columns"))
                .with_help(format!(
                    "a `{name}[M, N]` is M×N with M ≥ N (Stan's `cholesky_factor_cov[M, N]`): \
                     swap the sizes, or use one size for a square factor"
                ));
            return Err(self.report(d));
        }
        if k < e.min_size {
            let d = self
                .diag(
                    "mvi::check::type_too_small",
                    format!(
                        "`{name}[{k}]` has no valid values: a `{name}` needs a size of at least {}",
                        e.min_size
                    ),
                )
                .with_label(d.ty.span, format!("size {k}"))
                .with_help(type_help(kind));
            return Err(self.report(d));
        }
        let graph_shape = if kind.is_matrix() {
            crate::constrained::Shape::Matrix(k, cols)
        } else {
            crate::constrained::Shape::Vector(k)
        };
        Ok((Transform::Type(kind), None, e.free_of(graph_shape)))
    }

    /// A bound (or offset, or multiplier: `what`) that names the declared value itself or a
    /// hyper or param declared after it.
    fn bound_order(&mut self, d: &Decl, b: &Expr, later: &[String], what: &str) -> R<()> {
        let mut names = Vec::new();
        names_in(b, &mut names);
        let me = &d.name.name;
        if let Some((_, span)) = names.iter().find(|(n, _)| n == me) {
            let diag = self
                .diag(
                    "mvi::check::bound_refers_to_itself",
                    format!("the {what} of `{me}` depends on `{me}` itself"),
                )
                .with_label(*span, "the value being bounded")
                .with_label(d.name.span, "declared here")
                .with_help(format!(
                    "a {what} is computed before the value it {}: use data, hypers, or params \
                     declared earlier",
                    if what == "bound" { "bounds" } else { "transforms" }
                ));
            return Err(self.report(diag));
        }
        if let Some((n, span)) = names.iter().find(|(n, _)| later.contains(n)) {
            let diag = self
                .diag(
                    "mvi::check::bound_refers_to_later",
                    format!("the {what} of `{me}` depends on `{n}`, which is declared after it"),
                )
                .with_label(*span, format!("`{n}` is declared later"))
                .with_label(d.name.span, format!("`{me}` is declared here"))
                .with_help(format!(
                    "{what}s may use data, hypers, and params declared before them (hypers come \
                     before params): declare `{n}` before `{me}`"
                ));
            return Err(self.report(diag));
        }
        Ok(())
    }

    /// A bound as a typed expression: a scalar or of the declared shape; it may read data,
    /// hypers and the params declared so far. One that is data but not known as a number
    /// here (`lower=min(y)`) is lowered like a dependent bound, to a constant node.
    fn bound_expr(&mut self, d: &Decl, b: &Option<Expr>, shape: Shape) -> R<Option<TExpr>> {
        let Some(b) = b else { return Ok(None) };
        self.ctx = Ctx::Bound;
        let e = self.expr(b);
        self.ctx = Ctx::Decl;
        let e = e?;
        let fits = e.shape.is_scalar() || e.shape.to_real() == shape.to_real();
        if !fits {
            let diag = self
                .diag(
                    "mvi::check::bound_shape",
                    format!(
                        "a bound of `{}` must be a scalar or a {shape} like it, this is {}",
                        d.name.name, e.shape
                    ),
                )
                .with_label(b.span, format!("this is {}", e.shape))
                .with_help(
                    "a bound applies to every entry (a scalar) or entry by entry (a value of the \
                     declared shape); index or slice it to fit, e.g. `lower=mu[1]`",
                );
            return Err(self.report(diag));
        }
        Ok(Some(e))
    }
}

/// What a constrained type holds, for help lines.
fn type_help(kind: TypeKind) -> String {
    let what = match kind {
        TypeKind::Simplex => "`simplex[K]` holds K probabilities summing to 1, so K ≥ 1",
        TypeKind::Ordered | TypeKind::PositiveOrdered => "an ordered vector holds K ≥ 1 increasing values",
        TypeKind::UnitVector => "`unit_vector[K]` holds a direction in K ≥ 2 dimensions",
        TypeKind::SumToZero => "`sum_to_zero_vector[K]` holds K ≥ 1 values summing to 0",
        _ => "a K×K matrix type needs K ≥ 1",
    };
    format!("{what}; check the size expression")
}

/// The names an expression reads, with their spans.
fn names_in(e: &Expr, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Str(_) => {}
        ExprKind::Name(n) => out.push((n.clone(), e.span)),
        ExprKind::Array(xs) => xs.iter().for_each(|x| names_in(x, out)),
        ExprKind::Unary(_, a) | ExprKind::Transpose(a) => names_in(a, out),
        ExprKind::Binary(_, a, b) => {
            names_in(a, out);
            names_in(b, out);
        }
        ExprKind::Ternary(a, b, c) => [a, b, c].into_iter().for_each(|x| names_in(x, out)),
        ExprKind::Call { args, .. } => args.iter().for_each(|x| names_in(x, out)),
        ExprKind::Index(base, idx) => {
            names_in(base, out);
            for i in idx {
                match i {
                    Index::At(x) => names_in(x, out),
                    Index::Range { lo, hi, .. } => {
                        lo.iter().chain(hi.iter()).for_each(|x| names_in(x, out));
                    }
                }
            }
        }
    }
}
