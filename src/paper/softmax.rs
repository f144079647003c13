//! Tables V/VI: multiclass softmax regression on the multiclass sets, with the model of
//! `examples/softmax_iris.mvi` (which standardises the inputs itself with the training
//! means and sds, centring constant columns only).
//!
//! Per set, `plan.multiclass_splits` seeded random 70/30 splits. Under `fixed-centres`
//! (the protocol before issue 22) the model is a softmax on the standardised inputs, per
//! split `laplace` with α learned from α = 1, then the VI methods from Laplace's α. Under
//! `learned-centres` (the paper's) it is a softmax on RBF features,
//! `examples/softmax_rbf_iris.mvi`, with the search of Tables III/IV ([`logistic::search`]:
//! k-means centres of the standardised training inputs for M ∈ {10, 20, 30}, (r, α) ~ U(0,
//! 1), 10 θ iterations of Laplace each), the best θ starting `laplace` and then the VI
//! methods from Laplace's θ, centres included. Under `fixed-centres-rbf` it is the RBF
//! model with the centres fixed at k-means (`softmax_rbf_fixed.mvi`) after the search of
//! `fixed-centres`. Under `fixed-centres-select` the Laplace evidence chooses per split
//! between the softmax on the inputs and that on RBF features (`run_split_select`).

use serde_json::{json, Value};

use nalgebra::DMatrix;

use super::data::{self, Dataset, Split, Standardizer};
use super::fit::{labels_json, matrix_json, Problem};
use super::store::Record;
use super::{logistic, Ctx, Flow, PaperArgs, Protocol, Table};
use crate::diagnostic::Diagnostic;

/// The model of `fixed-centres`: the project's softmax example, used as it is.
pub const MODEL: &str = include_str!("../../examples/softmax_iris.mvi");
/// The model of `learned-centres`: softmax on RBF features with learned centres.
pub const MODEL_RBF: &str = include_str!("../../examples/softmax_rbf_iris.mvi");
/// The model of `fixed-centres-rbf`: softmax on RBF features, centres fixed at k-means.
pub const MODEL_RBF_FIXED: &str = include_str!("softmax_rbf_fixed.mvi");
/// Fraction of the rows used for training.
pub const TRAIN_FRACTION: f64 = 0.7;
/// Base of the split seeds (per set: plus the code-point sum of its name, times 1000, plus
/// the split index).
pub const SPLIT_SEED: u64 = 20_240_501;

/// The seeded random 70/30 split `i` of a set with `n` rows.
pub fn split(set: &str, i: usize, n: usize) -> Split {
    data::random_split(
        n,
        TRAIN_FRACTION,
        data::name_seed(set, SPLIT_SEED) * 1000 + i as u64,
    )
}

fn model_data(ds: &Dataset, s: &Split) -> Value {
    json!({
        "K": ds.classes,
        "X": matrix_json(&data::select_rows(&ds.x, &s.train)),
        "y": labels_json(&s.train.iter().map(|&i| ds.y[i]).collect::<Vec<_>>(), true),
        "X_test": matrix_json(&data::select_rows(&ds.x, &s.test)),
        "y_test": labels_json(&s.test.iter().map(|&i| ds.y[i]).collect::<Vec<_>>(), true),
    })
}

fn model_data_rbf(ds: &Dataset, s: &Split, c: &DMatrix<f64>) -> Value {
    let mut v = model_data(ds, s);
    v["C"] = matrix_json(c);
    v
}

/// The model of the RBF features under the run's protocol: learned centres under
/// `learned-centres`, fixed ones otherwise.
fn rbf_model(ctx: &Ctx) -> (&'static str, &'static str) {
    if ctx.plan.protocol.learns_centres() {
        (MODEL_RBF, "softmax_rbf_iris.mvi")
    } else {
        (MODEL_RBF_FIXED, "softmax_rbf_fixed.mvi")
    }
}

/// The split's search over (M, r, α) on RBF features ([`logistic::search`]), stored as
/// `search`; the stored one when there is one. `None` when interrupted.
fn search_rbf(
    ctx: &mut Ctx,
    set: &str,
    i: usize,
    ds: &Dataset,
    s: &Split,
    xs: &DMatrix<f64>,
) -> Result<Option<Record>, Diagnostic> {
    if let Some(r) = ctx.store.get(Table::V.name(), set, i, "search") {
        return Ok(Some(r.clone()));
    }
    let data = |c: &DMatrix<f64>| model_data_rbf(ds, s, c);
    let Some(r) = logistic::search(ctx, Table::V, set, i, xs, rbf_model(ctx), &data)? else {
        return Ok(None);
    };
    ctx.save(r.clone())?;
    Ok(Some(r))
}

/// The problem on RBF features with the search's M (its centres at k-means), and M.
fn problem_rbf(
    ctx: &Ctx,
    set: &str,
    i: usize,
    ds: &Dataset,
    s: &Split,
    xs: &DMatrix<f64>,
    search: &Record,
) -> Result<(Problem, usize), Diagnostic> {
    let m = search
        .centres
        .unwrap_or(logistic::CENTRES[logistic::CENTRES.len() - 1]);
    let c = logistic::centres(xs, set, i, m);
    let (text, file) = rbf_model(ctx);
    Ok((Problem::new(text, file, &model_data_rbf(ds, s, &c))?, m))
}

/// The standardised training inputs of a split, where the RBF centres are placed.
fn standardised_train(ds: &Dataset, s: &Split) -> DMatrix<f64> {
    let x = data::select_rows(&ds.x, &s.train);
    Standardizer::fit(&x).apply(&x)
}

/// One split on RBF features (`learned-centres`, `fixed-centres-rbf`): the search (stored as `search`), then the methods.
fn run_split_rbf(ctx: &mut Ctx, set: &str, i: usize, ds: &Dataset, s: &Split) -> Result<Flow, Diagnostic> {
    let xs = standardised_train(ds, s);
    let Some(search) = search_rbf(ctx, set, i, ds, s, &xs)? else {
        return Ok(Flow::Stop);
    };
    if search.failed.is_some() {
        return Ok(Flow::Continue);
    }
    let (mut problem, m) = problem_rbf(ctx, set, i, ds, s, &xs, &search)?;
    ctx.fit_methods(Table::V, set, i, &mut problem, &search.theta, Some(m))
}

/// The start of α for the softmax on the inputs.
fn inputs_start() -> [(String, f64); 1] {
    [("alpha".to_string(), 1.0)]
}

/// A `laplace` record's log evidence when the fit succeeded and it is finite.
fn evidence(r: &Record) -> Option<f64> {
    r.log_evidence.filter(|v| r.failed.is_none() && v.is_finite())
}

/// Whether the RBF features win the choice by evidence: only when their log evidence is
/// finite and higher than the inputs' (a tie, or neither finite, keeps the inputs).
fn rbf_wins(inputs: Option<f64>, rbf: Option<f64>) -> bool {
    rbf.is_some() && rbf > inputs
}

/// One split under `fixed-centres-select`: the search on RBF features, `laplace` on the
/// inputs and on the search's RBF features, then the methods on the features with the higher
/// log evidence (the inputs on a tie, or when neither is finite). The choice is stored
/// first, as `select`: `centres` the chosen features' M (`None`: the inputs), its log
/// evidence, both evidences in its note, and as `seconds` the other `laplace` fit's time;
/// then the chosen `laplace` record. A resumed split reads the choice from `select`.
fn run_split_select(ctx: &mut Ctx, set: &str, i: usize, ds: &Dataset, s: &Split) -> Result<Flow, Diagnostic> {
    let xs = standardised_train(ds, s);
    let Some(search) = search_rbf(ctx, set, i, ds, s, &xs)? else {
        return Ok(Flow::Stop);
    };
    let mut rbf = match search.failed {
        None => Some(problem_rbf(ctx, set, i, ds, s, &xs, &search)?),
        Some(_) => None,
    };
    let mut inputs = Problem::new(MODEL, "softmax_iris.mvi", &model_data(ds, s))?;
    let chosen = match ctx.store.get(Table::V.name(), set, i, "select") {
        Some(sel) => sel.centres,
        None => {
            let Some(on_inputs) =
                ctx.fit_method(Table::V, set, i, "laplace", &mut inputs, &inputs_start(), None)?
            else {
                return Ok(Flow::Stop);
            };
            let on_rbf = match &mut rbf {
                Some((problem, m)) => {
                    let Some(r) =
                        ctx.fit_method(Table::V, set, i, "laplace", problem, &search.theta, Some(*m))?
                    else {
                        return Ok(Flow::Stop);
                    };
                    Some(r)
                }
                None => None,
            };
            let (ev_inputs, ev_rbf) = (evidence(&on_inputs), on_rbf.as_ref().and_then(evidence));
            let show = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v:.3}"));
            let mut sel = Record::new(Table::V.name(), set, i, "select");
            sel.notes.push(format!(
                "log evidence: inputs {}, RBF features (M = {}) {}",
                show(ev_inputs),
                search.centres.map_or("none".to_string(), |m| m.to_string()),
                show(ev_rbf)
            ));
            let (chosen, other) = match on_rbf {
                Some(r) if rbf_wins(ev_inputs, ev_rbf) => (r, Some(on_inputs)),
                r => (on_inputs, r),
            };
            sel.centres = chosen.centres;
            sel.log_evidence = evidence(&chosen);
            sel.seconds = other.map_or(0.0, |o| o.seconds);
            let centres = sel.centres;
            ctx.save(sel)?;
            ctx.save(chosen)?;
            centres
        }
    };
    match (chosen, rbf) {
        (Some(m), Some((mut problem, _))) => {
            ctx.fit_methods(Table::V, set, i, &mut problem, &search.theta, Some(m))
        }
        _ => ctx.fit_methods(Table::V, set, i, &mut inputs, &inputs_start(), None),
    }
}

/// Run Tables V/VI for every selected multiclass set.
///
/// # Errors
/// Unreadable data or an unwritable store.
pub fn run_table(ctx: &mut Ctx, args: &PaperArgs) -> Result<Flow, Diagnostic> {
    for set in data::MULTICLASS_SETS.iter().filter(|s| super::selected(args, s)) {
        let ds = data::load_dataset(&ctx.data_dir, set)?;
        for i in 0..ctx.plan.multiclass_splits {
            let protocol = ctx.plan.protocol;
            let extra: &[&str] = match protocol {
                Protocol::FixedCentres => &[],
                Protocol::FixedCentresSelect => &["search", "select"],
                Protocol::LearnedCentres | Protocol::FixedCentresRbf => &["search"],
            };
            if !ctx.split_done(Table::V, set, i, extra) {
                let s = split(set, i, ds.x.nrows());
                let flow = match protocol {
                    Protocol::FixedCentres => {
                        let mut problem = Problem::new(MODEL, "softmax_iris.mvi", &model_data(&ds, &s))?;
                        ctx.fit_methods(Table::V, set, i, &mut problem, &inputs_start(), None)?
                    }
                    Protocol::FixedCentresSelect => run_split_select(ctx, set, i, &ds, &s)?,
                    Protocol::LearnedCentres | Protocol::FixedCentresRbf => {
                        run_split_rbf(ctx, set, i, &ds, &s)?
                    }
                };
                if flow == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            ctx.unit_done();
        }
    }
    Ok(Flow::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rbf_features_win_only_with_a_finite_higher_evidence() {
        assert!(rbf_wins(Some(-120.0), Some(-100.0)));
        assert!(rbf_wins(None, Some(-100.0)));
        assert!(!rbf_wins(Some(-100.0), Some(-120.0)));
        assert!(!rbf_wins(Some(-100.0), Some(-100.0)));
        assert!(!rbf_wins(Some(-100.0), None));
        assert!(!rbf_wins(None, None));
        let failed = Record {
            failed: Some("no mode".into()),
            log_evidence: Some(-1.0),
            ..Record::new("V", "iris", 0, "laplace")
        };
        assert_eq!(evidence(&failed), None);
        let infinite = Record {
            log_evidence: Some(f64::NEG_INFINITY),
            ..Record::new("V", "iris", 0, "laplace")
        };
        assert_eq!(evidence(&infinite), None);
    }

    #[test]
    fn splits_are_seventy_thirty_and_differ_between_indices() {
        let a = split("iris", 0, 150);
        assert_eq!((a.train.len(), a.test.len()), (105, 45));
        assert_eq!(a, split("iris", 0, 150));
        assert_ne!(a, split("iris", 1, 150));
        assert_ne!(a, split("glass", 0, 150));
    }
}
