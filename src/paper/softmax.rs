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
//! methods from Laplace's θ, centres included.

use serde_json::{json, Value};

use nalgebra::DMatrix;

use super::data::{self, Dataset, Split, Standardizer};
use super::fit::{labels_json, matrix_json, Problem};
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

/// One split on RBF features (`learned-centres`, `fixed-centres-rbf`): the search (stored as `search`), then the methods.
fn run_split_rbf(ctx: &mut Ctx, set: &str, i: usize, ds: &Dataset, s: &Split) -> Result<Flow, Diagnostic> {
    let x = data::select_rows(&ds.x, &s.train);
    let xs = Standardizer::fit(&x).apply(&x);
    let model = if ctx.plan.protocol.learns_centres() {
        (MODEL_RBF, "softmax_rbf_iris.mvi")
    } else {
        (MODEL_RBF_FIXED, "softmax_rbf_fixed.mvi")
    };
    let rec = match ctx.store.get(Table::V.name(), set, i, "search") {
        Some(r) => r.clone(),
        None => {
            let data = |c: &DMatrix<f64>| model_data_rbf(ds, s, c);
            let Some(r) = logistic::search(ctx, Table::V, set, i, &xs, model, &data)? else {
                return Ok(Flow::Stop);
            };
            ctx.save(r.clone())?;
            r
        }
    };
    if rec.failed.is_some() {
        return Ok(Flow::Continue);
    }
    let m = rec
        .centres
        .unwrap_or(logistic::CENTRES[logistic::CENTRES.len() - 1]);
    let c = logistic::centres(&xs, set, i, m);
    let mut problem = Problem::new(model.0, model.1, &model_data_rbf(ds, s, &c))?;
    ctx.fit_methods(Table::V, set, i, &mut problem, &rec.theta, Some(m))
}

/// Run Tables V/VI for every selected multiclass set.
///
/// # Errors
/// Unreadable data or an unwritable store.
pub fn run_table(ctx: &mut Ctx, args: &PaperArgs) -> Result<Flow, Diagnostic> {
    for set in data::MULTICLASS_SETS.iter().filter(|s| super::selected(args, s)) {
        let ds = data::load_dataset(&ctx.data_dir, set)?;
        for i in 0..ctx.plan.multiclass_splits {
            let rbf = ctx.plan.protocol != Protocol::FixedCentres;
            let extra: &[&str] = if rbf { &["search"] } else { &[] };
            if !ctx.split_done(Table::V, set, i, extra) {
                let s = split(set, i, ds.x.nrows());
                let flow = if rbf {
                    run_split_rbf(ctx, set, i, &ds, &s)?
                } else {
                    let mut problem = Problem::new(MODEL, "softmax_iris.mvi", &model_data(&ds, &s))?;
                    let start = [("alpha".to_string(), 1.0)];
                    ctx.fit_methods(Table::V, set, i, &mut problem, &start, None)?
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
    fn splits_are_seventy_thirty_and_differ_between_indices() {
        let a = split("iris", 0, 150);
        assert_eq!((a.train.len(), a.test.len()), (105, 45));
        assert_eq!(a, split("iris", 0, 150));
        assert_ne!(a, split("iris", 1, 150));
        assert_ne!(a, split("glass", 0, 150));
    }
}
