//! Tables V/VI: multiclass softmax regression on the multiclass sets, with the model of
//! `examples/softmax_iris.mvi` (which standardises the inputs itself with the training
//! means and sds, centring constant columns only).
//!
//! Per set, `plan.multiclass_splits` seeded random 70/30 splits; per split `laplace` with
//! α learned from α = 1, then the VI methods from Laplace's α.

use serde_json::{json, Value};

use super::data::{self, Dataset, Split};
use super::fit::{labels_json, matrix_json, Problem};
use super::{Ctx, Flow, PaperArgs, Table};
use crate::diagnostic::Diagnostic;

/// The model: the project's softmax example, used as it is.
pub const MODEL: &str = include_str!("../../examples/softmax_iris.mvi");
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

/// Run Tables V/VI for every selected multiclass set.
///
/// # Errors
/// Unreadable data or an unwritable store.
pub fn run_table(ctx: &mut Ctx, args: &PaperArgs) -> Result<Flow, Diagnostic> {
    for set in data::MULTICLASS_SETS.iter().filter(|s| super::selected(args, s)) {
        let ds = data::load_dataset(&ctx.data_dir, set)?;
        for i in 0..ctx.plan.multiclass_splits {
            if !ctx.split_done(Table::V, set, i, &[]) {
                let s = split(set, i, ds.x.nrows());
                let mut problem = Problem::new(MODEL, "softmax_iris.mvi", &model_data(&ds, &s))?;
                let start = [("alpha".to_string(), 1.0)];
                if ctx.fit_methods(Table::V, set, i, &mut problem, &start, None)? == Flow::Stop {
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
