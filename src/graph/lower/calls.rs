//! Lowering built-in function calls (`check::builtins` names → graph operations) and the
//! distribution forms (`~`, `_lpdf`/`_lpmf`, `_lcdf`, `_lccdf`), with the data-outcome check.

use super::{graph_shape, Lowerer};
use crate::check::{DistForm, TExpr};
use crate::diagnostic::Diagnostic;
use crate::dist::{self, Outcome};
use crate::graph::{Fun1, Fun2, Graph, NodeId, Shape, GATHER_ZERO};

type R = Result<NodeId, Diagnostic>;

impl Lowerer<'_> {
    /// A built-in function call.
    pub(crate) fn call(&mut self, e: &TExpr, name: &str, args: &[TExpr]) -> R {
        if matches!(name, "rows" | "cols" | "size") {
            let n = match (name, args[0].shape) {
                ("cols", crate::check::Shape::Matrix(_, c)) => c,
                ("rows" | "size", crate::check::Shape::Matrix(r, _)) => r,
                (_, s) => s.len(),
            };
            return Ok(self.g.scalar(n as f64));
        }
        if let Some(v) = crate::check::builtins::constant(name) {
            if let [x] = args {
                // `log2(x)`, `log10(x)`: log x / log 2 (log 10)
                let x = self.expr(x)?;
                let l = self.g.unary(crate::graph::Fun1::Log, x);
                let base = self.g.scalar(v);
                return self.wrap(e, |g| g.div(l, base));
            }
            // `pi()`, `e()`, …
            return Ok(self.g.scalar(v));
        }
        let ids = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        let shape = graph_shape(e.shape);
        self.wrap(e, |g| builtin(g, name, &ids, shape))
    }

    /// `dist_rng(args)`: a random draw of the call's shape ([`crate::graph::Op::Rng`]).
    pub(crate) fn rng(&mut self, e: &TExpr, dist: &str, args: &[TExpr]) -> R {
        let ids = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        let Some(spec) = crate::check::dists::lookup(dist) else {
            return Err(self.internal(self.span(e), format!("`{dist}` is not a distribution")));
        };
        let draw = crate::graph::RngDraw {
            dist: spec.name,
            ids,
            lower: false,
            upper: false,
            each: graph_shape(e.shape).size(),
        };
        Ok(self.g.rng(draw, graph_shape(e.shape)))
    }

    /// `dist_lpdf(x | …)`, `dist_lcdf`, `dist_lccdf`: the summed value.
    pub(crate) fn dist_expr(&mut self, e: &TExpr, name: &str, form: DistForm, args: &[TExpr]) -> R {
        let x = self.expr(&args[0])?;
        let ps = args[1..]
            .iter()
            .map(|a| self.expr(a))
            .collect::<Result<Vec<_>, _>>()?;
        if form == DistForm::Lpdf {
            // a CDF is defined (0 or 1) outside the support: only densities are checked
            self.check_outcome(name, &args[0], x, &ps)?;
        }
        self.wrap(e, |g| match form {
            DistForm::Lpdf => dist::lpdf(g, name, x, &ps),
            DistForm::Lcdf => dist::lcdf(g, name, x, &ps, false),
            DistForm::Lccdf => dist::lcdf(g, name, x, &ps, true),
        })
    }

    /// A data outcome outside the family's support is the user's problem: a diagnostic at the
    /// outcome.
    pub(crate) fn check_outcome(
        &self,
        name: &str,
        outcome: &TExpr,
        x: NodeId,
        params: &[NodeId],
    ) -> Result<(), Diagnostic> {
        let Some(values) = self.g.const_value(x) else {
            return Ok(());
        };
        let Some(entry) = dist::lookup(name) else {
            return Ok(());
        };
        // Discrete data, and continuous data of a family with a fixed support (x > 0, x ≥ 0,
        // 0 < x < 1): outside it the log density is −∞ for every parameter value, so the
        // model could never be fitted. Real outcomes (every number is in the support, and
        // data are finite) and `uniform` (its support moves with its arguments) are not.
        if matches!(entry.outcome, Outcome::Real | Outcome::RealVector | Outcome::Any) {
            return Ok(());
        }
        let checked =
            dist::check_outcome(name, values).and_then(|()| self.check_categories(name, values, params));
        let Err(msg) = checked else { return Ok(()) };
        let help = match entry.outcome {
            Outcome::Binary => format!("`{name}` takes labels 0 and 1; recode the data (e.g. labels 1/2 as 0/1)"),
            Outcome::Count if name.starts_with("binomial") || name == "beta_binomial" => {
                format!("`{name}` takes counts 0, 1, ..., N of its N trials; check the counts and the trials")
            }
            Outcome::Count => format!("`{name}` takes counts 0, 1, 2, …; check the data for negative or fractional values"),
            Outcome::Positive => format!("`{name}` has density only at x > 0; check the data for zeros and negative values, or shift them"),
            Outcome::NonNegative => format!("`{name}` has density only at x ≥ 0; check the data for negative values"),
            Outcome::Unit => format!(
                "`{name}` has density only strictly between 0 and 1; squeeze proportions of exactly 0 or 1 inwards (e.g. (y·(N − 1) + 0.5) / N)"
            ),
            _ if name.starts_with("ordered_") => format!("`{name}` takes categories 1..K as in Stan (K − 1 the number of cutpoints); recode 0-based labels by adding 1"),
            _ if name == "categorical" => format!("`{name}` takes categories 1..K as in Stan (K the length of the probability vector); recode 0-based labels by adding 1"),
            _ => format!("`{name}` takes categories 1..K as in Stan (K the number of logits); recode 0-based labels by adding 1"),
        };
        Err(Diagnostic::error(
            "mvi::lower::outcome_out_of_support",
            msg,
            self.model.source.clone(),
        )
        .with_label(self.span(outcome), "these data")
        .with_help(help))
    }
}

impl Lowerer<'_> {
    /// Categories must also be at most K, the number of logits (columns of a matrix), and
    /// binomial counts at most their (data) number of trials.
    fn check_categories(&self, name: &str, values: &[f64], params: &[NodeId]) -> Result<(), String> {
        if matches!(name, "binomial" | "binomial_logit" | "beta_binomial") {
            return self.check_trials(name, values, params);
        }
        let size = |i: usize| params.get(i).map(|&p| self.g.shape(p));
        let k = match name {
            "categorical_logit" => match size(0) {
                Some(Shape::Matrix(_, k)) => k,
                Some(s) => s.size(),
                None => return Ok(()),
            },
            "categorical" => size(0).map_or(0, Shape::size),
            "ordered_logistic" | "ordered_probit" => size(1).map_or(0, Shape::size) + 1,
            _ => return Ok(()),
        };
        match values.iter().position(|&v| v > k as f64) {
            None => Ok(()),
            Some(i) => Err(format!(
                "`{name}` outcome {} (entry {}) is outside its support: expected categories 1, 2, ..., {k}",
                values[i],
                i + 1
            )),
        }
    }
}

impl Lowerer<'_> {
    fn check_trials(&self, name: &str, values: &[f64], params: &[NodeId]) -> Result<(), String> {
        let Some(trials) = params.first().and_then(|&n| self.g.const_value(n)) else {
            return Ok(());
        };
        let at = |i: usize| if trials.len() == 1 { trials[0] } else { trials[i] };
        match values.iter().enumerate().position(|(i, &y)| y > at(i)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "`{name}` outcome {} (entry {}) is more than its {} trials",
                values[i],
                i + 1,
                at(i)
            )),
        }
    }
}

/// The graph operation(s) of a built-in function; `shape` is the checked result shape.
fn builtin(g: &mut Graph, name: &str, a: &[NodeId], shape: Shape) -> Result<NodeId, crate::graph::Error> {
    match (name, a) {
        ("log1m", [x]) => {
            let n = g.neg(*x);
            Ok(g.unary(Fun1::Log1p, n))
        }
        ("inv", [x]) => {
            let one = g.scalar(1.0);
            g.div(one, *x)
        }
        ("tan", [x]) => {
            let (s, c) = (g.unary(Fun1::Sin, *x), g.unary(Fun1::Cos, *x));
            g.div(s, c)
        }
        ("atan", [x]) => Ok(g.unary(Fun1::Atan, *x)),
        ("pow", [x, y]) => g.binary(Fun2::Pow, *x, *y),
        ("fmin", [x, y]) => g.binary(Fun2::Min, *x, *y),
        ("fmax", [x, y]) => g.binary(Fun2::Max, *x, *y),
        ("to_vector", [x]) => {
            let n = g.shape(*x).size();
            g.gather_flat(*x, (0..n as u32).collect(), Shape::Vector(n))
        }
        ("rep_vector", [x, _]) if g.shape(*x) != Shape::Scalar => Ok(*x),
        ("rep_matrix", [v, _]) => {
            let (m, n) = (shape.rows(), shape.cols());
            let idx = (0..n).flat_map(|_| 0..m as u32).collect();
            g.gather_flat(*v, idx, shape)
        }
        ("append_col" | "append_row", [x, y]) => concat(g, name == "append_col", *x, *y, shape),
        ("sum", [x]) if g.shape(*x) == Shape::Scalar => Ok(*x),
        _ => super::stan_fns::stan_function(g, name, a, shape),
    }
}

/// `append_col` / `append_row`: each part gathered into the result's layout (zeros
/// elsewhere), then added.
fn concat(
    g: &mut Graph,
    by_col: bool,
    x: NodeId,
    y: NodeId,
    shape: Shape,
) -> Result<NodeId, crate::graph::Error> {
    let (rows, cols) = (shape.rows(), shape.cols());
    let (sx, sy) = (g.shape(x), g.shape(y));
    let mut ix = vec![GATHER_ZERO; rows * cols];
    let mut iy = vec![GATHER_ZERO; rows * cols];
    for c in 0..cols {
        for r in 0..rows {
            let k = r + c * rows;
            if by_col {
                if c < sx.cols() {
                    ix[k] = (r + c * sx.rows()) as u32;
                } else {
                    let cy = c - sx.cols();
                    iy[k] = if sy == Shape::Scalar {
                        0
                    } else {
                        (r + cy * rows) as u32
                    };
                }
            } else if r < sx.rows() {
                ix[k] = (r + c * sx.rows()) as u32;
            } else {
                let (ry, ny) = (r - sx.rows(), sy.rows());
                iy[k] = if sy == Shape::Scalar {
                    0
                } else {
                    (ry + c * ny) as u32
                };
            }
        }
    }
    let gx = g.gather_flat(x, ix, shape)?;
    let gy = g.gather_flat(y, iy, shape)?;
    g.add_nodes(gx, gy)
}
