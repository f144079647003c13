//! The value nodes of declared `hyper`s and `param`s: constant bounds
//! ([`Graph::param_slice`]), constrained types ([`Graph::typed_slice`]) and bounds that
//! depend on hypers or earlier params (lowered to nodes, then the same transforms); and the
//! initial θ of a constrained or dependently bounded hyper.

use nalgebra::{DMatrix, DVector};

use super::{constraint_of, graph_shape, Lowerer};
use crate::check::{Slot, Transform};
use crate::diagnostic::Diagnostic;
use crate::graph::logjoint::{eval_nodes, Structure};
use crate::graph::transform::{entry, lower_affine, lower_dependent};
use crate::graph::{Constraint, NodeId, Op};
use crate::syntax::span::Span;

/// What a slot's transform is beyond constant bounds.
pub(super) fn structure(s: &Slot) -> Option<Structure> {
    match s.transform {
        Transform::Type(k) => Some(Structure::Type(k)),
        Transform::Dependent if s.dependent.as_ref().is_some_and(|b| b.is_affine()) => {
            Some(Structure::Affine)
        }
        Transform::Dependent => {
            let b = s.dependent.as_ref();
            Some(Structure::Dependent {
                lower: b.is_some_and(|b| b.lower.is_some()),
                upper: b.is_some_and(|b| b.upper.is_some()),
            })
        }
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The constrained value node of a slot; a `param`'s log-Jacobian is added to the target.
    pub(super) fn slot_value(&mut self, s: &Slot, hyper: bool) -> Result<NodeId, Diagnostic> {
        let shape = graph_shape(s.shape);
        let r = match s.transform {
            Transform::Type(kind) => self.g.typed_slice_of(s.offset, kind, shape, hyper),
            Transform::Dependent => return self.dependent_value(s, hyper),
            t if hyper => self.g.hyper_slice(s.offset, shape, &constraint_of(t)),
            t => self.g.param_slice(s.offset, shape, &constraint_of(t)),
        };
        r.map_err(|e| self.internal(Span::default(), e))
    }

    /// The bound nodes of a slot with dependent bounds (lower, upper), or its offset and
    /// multiplier nodes for the affine transform.
    fn bound_nodes(&mut self, s: &Slot) -> Result<(Option<NodeId>, Option<NodeId>), Diagnostic> {
        let b = s
            .dependent
            .clone()
            .expect("check::bounds gives Transform::Dependent its bounds");
        let (first, second) = if b.is_affine() {
            (&b.offset, &b.multiplier)
        } else {
            (&b.lower, &b.upper)
        };
        let first = first.as_ref().map(|e| self.expr(e)).transpose()?;
        let second = second.as_ref().map(|e| self.expr(e)).transpose()?;
        Ok((first, second))
    }

    /// Whether a slot's transform is the affine one (`offset=`, `multiplier=`).
    fn is_affine(s: &Slot) -> bool {
        s.dependent.as_ref().is_some_and(|b| b.is_affine())
    }

    fn dependent_value(&mut self, s: &Slot, hyper: bool) -> Result<NodeId, Diagnostic> {
        let (first, second) = self.bound_nodes(s)?;
        let op = if hyper {
            Op::Hyper { offset: s.offset }
        } else {
            Op::Param { offset: s.offset }
        };
        let u = self.g.push(op, graph_shape(s.shape));
        let built = if Self::is_affine(s) {
            lower_affine(&mut self.g, u, first, second)
        } else {
            lower_dependent(&mut self.g, u, first, second)
        };
        let (x, lj) = built.map_err(|e| self.internal(Span::default(), e))?;
        if let (Some(lj), false) = (lj, hyper) {
            self.g
                .add_target(lj)
                .map_err(|e| self.internal(Span::default(), e))?;
        }
        Ok(x)
    }

    /// θ for a hyper of a constrained type or with dependent bounds, from its initial value
    /// (constrained, column-major; one number stands for every entry). Dependent bounds are
    /// evaluated at the initial values of the hypers declared before it.
    pub(super) fn structured_theta0(
        &mut self,
        h: &Slot,
        init: &[f64],
        theta: &mut DVector<f64>,
    ) -> Result<(), Diagnostic> {
        let n = h.shape.len();
        let x: Vec<f64> = (0..n)
            .map(|i| if init.len() == 1 { init[0] } else { init[i] })
            .collect();
        let u = match h.transform {
            Transform::Type(kind) => self.typed_theta0(h, kind, &x)?,
            _ => self.dependent_theta0(h, &x, theta)?,
        };
        theta.as_mut_slice()[h.offset..h.offset + u.len()].copy_from_slice(&u);
        Ok(())
    }

    fn typed_theta0(
        &self,
        h: &Slot,
        kind: crate::syntax::ast::TypeKind,
        x: &[f64],
    ) -> Result<Vec<f64>, Diagnostic> {
        let e = entry(kind);
        let k = graph_shape(h.shape);
        let u = match e.validate_of(x, k) {
            Ok(()) => Some(e.unconstrain_of(x, k)).filter(|u| u.iter().all(|v| v.is_finite())),
            Err(_) => None,
        };
        u.ok_or_else(|| {
            let why = e.validate_of(x, k).err().map_or_else(
                || "it is on the boundary, where the transform has no preimage".to_string(),
                |i| i.reason,
            );
            self.bad_init(
                h,
                format!(
                    "the initial value of `{}` is not a valid `{}`: {why}",
                    h.name,
                    kind.name()
                ),
            )
            .with_help(
                "a hyper starts strictly inside its type's values (e.g. a `simplex[K]` at \
                     rep_vector(1.0 / K, K))",
            )
        })
    }

    fn dependent_theta0(
        &mut self,
        h: &Slot,
        x: &[f64],
        theta: &DVector<f64>,
    ) -> Result<Vec<f64>, Diagnostic> {
        let (lower, upper) = self.bound_nodes(h)?;
        let ids: Vec<NodeId> = lower.iter().chain(upper.iter()).copied().collect();
        let w = DMatrix::zeros(self.g.dim, 1);
        let vals = eval_nodes(&self.g, theta.as_slice(), &w, &ids);
        let mut vals = vals.into_iter();
        let lo = lower.map(|_| vals.next().expect("one value per bound"));
        let hi = upper.map(|_| vals.next().expect("one value per bound"));
        let at = |m: &Option<DMatrix<f64>>, i: usize| m.as_ref().map(|m| m[i.min(m.len() - 1)]);
        if Self::is_affine(h) {
            return self.affine_theta0(h, x, |i| (at(&lo, i), at(&hi, i)));
        }
        let mut u = Vec::with_capacity(x.len());
        for (i, &xi) in x.iter().enumerate() {
            let c = Constraint {
                lower: at(&lo, i),
                upper: at(&hi, i),
            };
            let ok = c.lower.is_none_or(|a| xi > a) && c.upper.is_none_or(|b| xi < b);
            if !ok {
                let range = format!(
                    "({}, {})",
                    c.lower.map_or("-∞".into(), |a| a.to_string()),
                    c.upper.map_or("∞".into(), |b| b.to_string())
                );
                return Err(self
                    .bad_init(
                        h,
                        format!(
                            "the initial value {xi} of `{}` is outside its bounds {range}",
                            h.name
                        ),
                    )
                    .with_help(
                        "its bounds are computed from the initial values of the hypers declared \
                         before it; start it strictly inside them",
                    ));
            }
            u.push(c.unconstrain(xi));
        }
        Ok(u)
    }

    /// u = (x − offset) / multiplier for each entry, given entry i's offset and multiplier.
    fn affine_theta0(
        &self,
        h: &Slot,
        x: &[f64],
        at: impl Fn(usize) -> (Option<f64>, Option<f64>),
    ) -> Result<Vec<f64>, Diagnostic> {
        let mut u = Vec::with_capacity(x.len());
        for (i, &xi) in x.iter().enumerate() {
            let (offset, multiplier) = at(i);
            let (a, m) = (offset.unwrap_or(0.0), multiplier.unwrap_or(1.0));
            if m.is_nan() || m <= 0.0 {
                return Err(self
                    .bad_init(
                        h,
                        format!(
                            "the multiplier of `{}` is {m} at the initial values, not positive",
                            h.name
                        ),
                    )
                    .with_help(
                        "its multiplier is computed from the initial values of the hypers \
                         declared before it, and must be > 0 there",
                    ));
            }
            u.push((xi - a) / m);
        }
        Ok(u)
    }

    fn bad_init(&self, h: &Slot, msg: String) -> Diagnostic {
        let span = h.init_expr.as_ref().map_or(Span::default(), |e| e.span);
        Diagnostic::error(
            "mvi::check::init_violates_constraint",
            msg,
            self.model.source.clone(),
        )
        .with_label(span, "this value")
    }
}
