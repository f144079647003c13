//! The `model` block read for what follows a fit: each `~` whose outcome is data gives a
//! replicated draw of that data (`--predictive`'s `y_rep`) or its pointwise log-likelihood
//! (LOO). `~` on parameters and `target +=` are skipped.

use super::{graph_shape, Lowerer};
use crate::check::{NameKind, Stage, TExpr, TExprKind};
use crate::diagnostic::Diagnostic;
use crate::dist;
use crate::graph::{NodeId, Shape};

/// What a `~` on data contributes when the model block is read after a fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A random draw from the same distribution, into `<name>_rep`.
    Replicate,
    /// The log density of each observation.
    LogLik,
}

/// Per observed data variable, what the `~` statements on it gave.
#[derive(Debug, Clone)]
pub(crate) struct ObservedVar {
    /// The data variable's name (or, for an outcome that is not one, the outcome's text).
    pub name: String,
    /// Its shape.
    pub shape: Shape,
    /// [`Reading::Replicate`]: per entry of the data, the replicated entry (`None`: no `~`
    /// draws it). [`Reading::LogLik`]: per observation in statement order, its log density.
    pub entries: Vec<Option<(NodeId, u32)>>,
    /// [`Reading::LogLik`]: the observed outcomes, one per observation (the first entry of
    /// a multivariate outcome's row); [`Reading::Replicate`]: the data variable's values.
    pub observed: Vec<f64>,
}

/// The state of a reading: what it found, and the `~` it could not replicate.
#[derive(Debug, Clone)]
pub(crate) struct Observations {
    pub reading: Reading,
    pub vars: Vec<ObservedVar>,
    /// The text of outcomes that are data but not a data variable, possibly indexed
    /// (`log(y)`), which cannot be replicated.
    pub skipped: Vec<String>,
}

impl Observations {
    pub(crate) fn new(reading: Reading) -> Self {
        Observations {
            reading,
            vars: Vec::new(),
            skipped: Vec::new(),
        }
    }

    fn var(&mut self, name: &str, shape: Shape, size: usize) -> &mut ObservedVar {
        let k = match self.vars.iter().position(|v| v.name == name) {
            Some(k) => k,
            None => {
                self.vars.push(ObservedVar {
                    name: name.to_string(),
                    shape,
                    entries: vec![None; size],
                    observed: Vec::new(),
                });
                self.vars.len() - 1
            }
        };
        &mut self.vars[k]
    }
}

/// The data variable a `~` outcome names, possibly indexed, and its checked shape.
fn data_root(lhs: &TExpr) -> Option<(&str, crate::check::Shape)> {
    match &lhs.kind {
        TExprKind::Name(n, NameKind::Data) => Some((n, lhs.shape)),
        TExprKind::Index(b, _) => match &b.kind {
            TExprKind::Name(n, NameKind::Data) => Some((n, b.shape)),
            _ => None,
        },
        _ => None,
    }
}

impl Lowerer<'_> {
    /// A `~` read after the fit: on data, a replicate or the pointwise log density; on
    /// anything that depends on parameters, nothing.
    pub(crate) fn observed_tilde(
        &mut self,
        lhs: &TExpr,
        name: &str,
        args: &[TExpr],
        trunc: Option<&(Option<TExpr>, Option<TExpr>)>,
    ) -> Result<(), Diagnostic> {
        if lhs.stage != Stage::Const {
            return Ok(());
        }
        let reading = self.observations.as_ref().map(|o| o.reading);
        let x = self.expr(lhs)?;
        let ps = args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>, _>>()?;
        let bounds = match trunc {
            Some((lo, hi)) => (
                lo.as_ref().map(|e| self.expr(e)).transpose()?,
                hi.as_ref().map(|e| self.expr(e)).transpose()?,
            ),
            None => (None, None),
        };
        let text = self.source_text(lhs, name);
        match reading {
            Some(Reading::LogLik) => {
                let ll = match trunc {
                    Some(_) => self.wrap(lhs, |g| dist::truncated(g, name, x, &ps, bounds, true))?,
                    None => self.wrap(lhs, |g| dist::pointwise(g, name, x, &ps))?,
                };
                let n = self.g.shape(ll).size();
                let values = self.g.const_value(x).map(<[f64]>::to_vec).unwrap_or_default();
                let var_name = data_root(lhs).map_or(text, |(n, _)| n.to_string());
                let obs = self.observations.as_mut().expect("a reading is under way");
                let var = obs.var(&var_name, Shape::Vector(0), 0);
                var.entries.extend((0..n as u32).map(|i| Some((ll, i))));
                // one value per observation: the outcome itself, or the first entry of each
                // row of a multivariate one
                var.observed
                    .extend((0..n).map(|i| values.get(i).copied().unwrap_or(f64::NAN)));
                var.shape = Shape::Vector(var.entries.len());
                Ok(())
            }
            Some(Reading::Replicate) => {
                let Some((root, root_shape)) = data_root(lhs) else {
                    let obs = self.observations.as_mut().expect("a reading is under way");
                    obs.skipped.push(text);
                    return Ok(());
                };
                let positions = match &lhs.kind {
                    TExprKind::Index(_, idx) => self.flat_positions(root_shape, idx)?,
                    _ => (0..root_shape.len().max(1) as u32).collect(),
                };
                let rep = self.rng_node(lhs, name, args, ps, bounds)?;
                let size = graph_shape(root_shape).size();
                let data = self.name(root, lhs)?;
                let values = self.g.const_value(data).map(<[f64]>::to_vec).unwrap_or_default();
                let obs = self.observations.as_mut().expect("a reading is under way");
                let var = obs.var(root, graph_shape(root_shape), size);
                var.observed = values;
                for (j, &p) in positions.iter().enumerate() {
                    if let Some(e) = var.entries.get_mut(p as usize) {
                        *e = Some((rep, j as u32));
                    }
                }
                Ok(())
            }
            None => Err(self.internal(self.span(lhs), "a `~` read after the fit with no reading")),
        }
    }
}
