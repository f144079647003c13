//! Recognising a log p̃ with no maximum: where the mode search ran off to.
//!
//! Input: the point where a mode search stopped, with the Hessian there, when the curvature at
//! that point is unusable. Output: the coordinates that ran off towards the edge of their range
//! while log p̃ kept rising ([`runaway_coordinates`], empty when none did), and the
//! [`NoMode`] report that [`Error::NoMode`](crate::infer::Error::NoMode) carries, with its
//! message and its help line. A proper mode, however sharp, is never flagged.

use nalgebra::{DMatrix, DVector};

use crate::density::{value_grad, LogDensity};

/// How far out on the unconstrained scale a coordinate must be before the mode search is
/// said to have run off with it: |w_i| ≥ 12, i.e. a log-transformed scale below e⁻¹² ≈ 6·10⁻⁶
/// (or above e¹² ≈ 1.6·10⁵) times its unit. On the stochastic volatility example the search
/// stops at log σ = −31.7, on eight schools written centred at log τ = −35.6, and on
/// `z[1:3] ~ normal(0, sigma)` at log σ = −708.7 (the last value before σ underflows).
pub const RUNAWAY_EXTENT: f64 = 12.0;

/// The least rise of log p̃ per unit of the coordinate, further out, for it to count as running
/// off. In a funnel the rise is about the number of values the scale collapses, less one
/// (measured: 2, 7 and 920 on the three cases above); a sup that is only approached, as with
/// a separable logistic regression, rises by far less than this, and at a mode it is 0.
pub const RUNAWAY_SLOPE: f64 = 0.25;

/// A coordinate of w that the mode search drove towards the edge of its range while log p̃
/// kept rising: the scale of a funnel.
#[derive(Debug, Clone, PartialEq)]
pub struct Runaway {
    /// The coordinate's name (from [`LogDensity::coordinate_names`]).
    pub name: String,
    /// Its index in w.
    pub index: usize,
    /// Its value on the unconstrained scale where the search stopped.
    pub unconstrained: f64,
    /// ∂ log p̃ / ∂w_i there, signed outwards (positive: log p̃ still rises further out).
    pub slope: f64,
    /// Its value on the declared scale, when the model knows the transform
    /// ([`LogDensity::coordinate_constraint`]).
    pub constrained: Option<f64>,
    /// The value it approaches on the declared scale (a bound, or ±∞), when known.
    pub limit: Option<f64>,
}

/// Where the mode search went when log p̃ has no maximum
/// ([`Error::NoMode`](crate::infer::Error::NoMode)).
#[derive(Debug, Clone, PartialEq)]
pub struct NoMode {
    /// log p̃ where the search stopped.
    pub log_p: f64,
    /// log p̃ at the initial point.
    pub log_p_start: f64,
    /// Iterations of the mode search.
    pub iterations: usize,
    /// The coordinates that ran off, outermost first (never empty).
    pub runaway: Vec<Runaway>,
}

/// How many runaway coordinates a message names.
const NAMED_RUNAWAYS: usize = 3;

impl Runaway {
    /// `sigma ≈ 1.77e-14, -31.7 unconstrained` when the declared value is known, else
    /// `sigma = -31.7 unconstrained`.
    fn value_text(&self) -> String {
        match self.constrained {
            Some(v) => format!("{} ≈ {v:.2e}, {:.1} unconstrained", self.name, self.unconstrained),
            None => format!("{} = {:.1} unconstrained", self.name, self.unconstrained),
        }
    }

    /// `→ 0` when the limit is known, else a description.
    fn limit_text(&self) -> String {
        match self.limit {
            Some(l) if l.is_infinite() && l > 0.0 => "→ ∞".to_string(),
            Some(l) if l.is_infinite() => "→ −∞".to_string(),
            Some(l) => format!("→ {l}"),
            None => "runs to the edge of its range".to_string(),
        }
    }
}

impl NoMode {
    /// The runaway coordinates as "`s.1`, `s.2`, `s.3` and 2 more", and the values of those
    /// named as "s.1 ≈ …; s.2 ≈ …; s.3 ≈ …".
    fn names_and_values(&self) -> (String, String) {
        let named = &self.runaway[..self.runaway.len().min(NAMED_RUNAWAYS)];
        let mut names = named
            .iter()
            .map(|r| format!("`{}`", r.name))
            .collect::<Vec<_>>()
            .join(", ");
        let more = self.runaway.len() - named.len();
        if more > 0 {
            names.push_str(&format!(" and {more} more"));
        }
        let values = named
            .iter()
            .map(Runaway::value_text)
            .collect::<Vec<_>>()
            .join("; ");
        (names, values)
    }

    /// What to try, for the diagnostic's help line.
    pub fn help(&self) -> String {
        let first = &self.runaway[0];
        let name = &first.name;
        let base = name.split('.').next().unwrap_or(name);
        format!(
            "a funnel: as `{name}` {} the values it scales collapse together and log p̃ grows \
             without bound, so there is no mode for laplace or the MVI methods to start from. \
             Try `--method pmfvb` or `--method vi_diag` (they start from a vi_diag fit from the \
             initial point when there is no mode), or write the model non-centred where it allows (`x = m + {base} * z` with \
             `z ~ normal(0, 1)` instead of `x ~ normal(m, {base})`). A prior on `{base}` that \
             vanishes at the edge makes a mode, but one in the neck of the funnel, not a useful fit",
            first.limit_text()
        )
    }
}

impl std::fmt::Display for NoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (names, values) = self.names_and_values();
        let verb = if self.runaway.len() == 1 { "runs" } else { "run" };
        write!(
            f,
            "the joint density has no maximum: the mode search raised log p̃ from {:.4e} to \
             {:.4e} in {} iterations, and it still rises as {names} {verb} off into the neck of a \
             funnel ({values})",
            self.log_p_start, self.log_p, self.iterations,
        )
    }
}

/// The coordinates the mode search ran off with, if the end point `x` (H the Hessian there)
/// looks like the neck of a funnel: a coordinate i with |x_i| ≥ [`RUNAWAY_EXTENT`] along
/// which log p̃ still rises outwards by at least [`RUNAWAY_SLOPE`] per unit, while the
/// values it scales have collapsed: some other coordinate's curvature −H_jj is at least
/// e^{|x_i|/2} (it grows like σ⁻² = e^{2|log σ|} in a funnel), or H is not finite there.
/// Called only when the curvature at the end point is unusable, so a proper mode (however
/// sharp) is never flagged. Empty when nothing ran off.
pub fn runaway_coordinates(
    model: &dyn LogDensity,
    theta: &DVector<f64>,
    x: &DVector<f64>,
    h: &DMatrix<f64>,
) -> Vec<Runaway> {
    let (value, g) = value_grad(model, theta, x);
    if !value.is_finite() {
        return Vec::new();
    }
    let names = model.coordinate_names();
    let h_finite = h.iter().all(|v| v.is_finite());
    let collapsed = |i: usize| {
        let need = (0.5 * x[i].abs()).exp();
        !h_finite || (0..x.len()).any(|j| j != i && -h[(j, j)] >= need)
    };
    let mut out: Vec<Runaway> = (0..x.len())
        .filter(|&i| x[i].abs() >= RUNAWAY_EXTENT)
        .filter(|&i| g[i] * x[i].signum() >= RUNAWAY_SLOPE)
        .filter(|&i| collapsed(i))
        .map(|i| {
            let declared = model.coordinate_constraint(i);
            Runaway {
                name: names.get(i).cloned().unwrap_or_else(|| format!("w.{}", i + 1)),
                index: i,
                unconstrained: x[i],
                slope: g[i] * x[i].signum(),
                constrained: declared.map(|c| c.constrain(x[i])),
                limit: declared.map(|c| edge(c, x[i] < 0.0)),
            }
        })
        .collect();
    out.sort_by(|a, b| b.unconstrained.abs().total_cmp(&a.unconstrained.abs()));
    out
}

/// The value a coordinate with bounds `c` approaches on its declared scale as its
/// unconstrained value runs to −∞ (`towards_minus`) or +∞: a bound, or ±∞.
fn edge(c: crate::graph::Constraint, towards_minus: bool) -> f64 {
    match (c.lower, c.upper, towards_minus) {
        (Some(a), _, true) => a,
        (None, Some(b), true) | (Some(_), Some(b), false) => b,
        (None, Some(_), false) | (None, None, true) => f64::NEG_INFINITY,
        (_, None, false) => f64::INFINITY,
    }
}
