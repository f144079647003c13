//! Prior draws (`mvi run --prior`): the parameters drawn from the prior, ancestrally where
//! the model allows it ([`graph::lower_ancestral`]) and by `nuts` on the prior alone
//! otherwise, then the data replicated at each draw as `--predictive` does.

use std::time::Instant;

use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::{assemble, has_data_tilde, nothing_observed, option_int, RunInfo};
use crate::check::TypedModel;
use crate::density::LogDensity;
use crate::diagnostic::Diagnostic;
use crate::graph::generate::{self, Generated};
use crate::graph::{self, LogJoint};
use crate::infer::{InferOptions, Observer};
use crate::posterior::{Approximation, Posterior};
use crate::report::{cmdstan_names, FitReport};

/// How the prior's parameters are drawn.
#[derive(Debug, Clone)]
pub enum PriorSampler {
    /// Each parameter from its own `~`, in order: exact, independent draws.
    Ancestral(Generated),
    /// `nuts` on the prior alone, for the reason given (a `~` the draws cannot follow).
    Nuts(String),
}

/// The prior of a model: its log joint without the likelihood, and how to draw from it.
#[derive(Debug, Clone)]
pub struct Prior {
    /// The model without its `~` on data and its `target += dist_lpdf(y | …)` on data.
    pub joint: LogJoint,
    /// How its parameters are drawn.
    pub sampler: PriorSampler,
}

impl Prior {
    /// The prior of a checked model.
    ///
    /// # Errors
    /// As [`graph::lower_prior`], and a model with no `~` on data (nothing to replicate).
    pub fn of(typed: &TypedModel) -> Result<Prior, Diagnostic> {
        if !typed.model.iter().any(has_data_tilde) {
            return Err(nothing_observed(typed, "--prior"));
        }
        let joint = graph::lower_prior(typed)?;
        let sampler = match graph::lower_ancestral(typed)? {
            Ok(gen) => PriorSampler::Ancestral(gen),
            Err(why) => PriorSampler::Nuts(why),
        };
        Ok(Prior { joint, sampler })
    }
}

impl PriorSampler {
    /// What a report of these prior draws says about them.
    pub fn note(&self) -> String {
        let how = match self {
            PriorSampler::Ancestral(_) => {
                "ancestral sampling (each parameter drawn from its `~`, in order; the draws are \
                 independent)"
                    .to_string()
            }
            PriorSampler::Nuts(why) => format!(
                "`nuts` on the prior alone (the model without its `~` on data), since they cannot \
                 be drawn ancestrally: {why}"
            ),
        };
        format!("prior draws by {how}; `<name>_rep` are prior predictive draws of the data")
    }
}

/// `draws` ancestral draws of the prior's parameters, D × draws on the unconstrained scale,
/// from the stream of `seed`.
pub fn ancestral_draws(joint: &LogJoint, gen: &Generated, draws: usize, seed: u64) -> DMatrix<f64> {
    let theta = joint.theta_init();
    // the graph reads no coordinate of w: a zero-row matrix gives the number of draws
    let none = DMatrix::zeros(joint.dim(), draws);
    let out = generate::eval_generated(gen, theta.as_slice(), &none, generate::stream_seed(seed, "prior"));
    let names: Vec<String> = joint
        .params
        .iter()
        .flat_map(|p| cmdstan_names(&p.name, &p.shape.dims()))
        .collect();
    crate::reference::unconstrain(joint, &names, &out.by_draw())
        .expect("the ancestral graph outputs every parameter in declaration order")
}

/// Prior draws as a fit's report, labelled as such: `options`' `draws` ancestral draws, or
/// a `nuts` run on `joint` (the prior's log joint, with what [`super::attach_after_fit`]
/// added) when `sampler` says so; `options` must name `nuts`.
///
/// # Errors
/// As [`super::fit`].
pub fn fit_prior(
    joint: &LogJoint,
    sampler: &PriorSampler,
    options: &InferOptions,
    info: &RunInfo,
    obs: &mut dyn Observer,
) -> Result<FitReport, Diagnostic> {
    let mut report = match sampler {
        PriorSampler::Ancestral(gen) => report_ancestral(joint, gen, options, info),
        PriorSampler::Nuts(_) => super::fit(joint, options, info, obs)?.1,
    };
    report.notes.insert(0, sampler.note());
    Ok(report)
}

/// The report of `options`' `draws` ancestral draws of the prior, as a fit's report: the
/// parameters, the top-level `let`s, `generated` and the replicates at each draw.
fn report_ancestral(joint: &LogJoint, gen: &Generated, options: &InferOptions, info: &RunInfo) -> FitReport {
    let start = Instant::now();
    let seed = option_int(options, "seed", 0);
    let n = option_int(options, "draws", 1000).max(1) as usize;
    let w = ancestral_draws(joint, gen, n, seed);
    let post = Posterior {
        method: "prior".to_string(),
        approx: Approximation::Particles(w),
        theta: joint.theta_init(),
        objective: None,
        log_evidence: None,
        trace: Vec::new(),
        iterations: 0,
        converged: true,
        notes: Vec::new(),
        fresh_elbo: None,
        resampling: None,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut report = assemble(joint, options, info, &post, &mut rng, start, false);
    // the options that speak of these draws (the method's own, `nuts`'s, do not)
    report
        .options
        .retain(|(k, _)| matches!(k.as_str(), "seed" | "draws" | "predictive" | "loo"));
    report
        .options
        .insert(0, ("method".to_string(), "prior".to_string()));
    report
}
