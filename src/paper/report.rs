//! The Markdown report of `mvi bench paper`: Tables II–VI from the results store.
//!
//! Input: the [`Store`] and what the run was ([`Meta`]). Output: Markdown text. Per row and
//! method: median over splits ± half the interquartile range; the best method by median is
//! bold; a method marked † is significantly worse than the best (paper §IV-B: exact sign
//! test p < 0.05 over the paired splits and a bootstrap 95 % interval of the paired median
//! difference that excludes 0).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::stats::{median, quantile, Comparison};
use super::store::{Record, Store};
use super::{data, Plan, Table, METHODS};

/// What the run was, for the report's header.
#[derive(Debug, Clone)]
pub struct Meta {
    /// The sizes used.
    pub plan: Plan,
    /// `--quick`.
    pub quick: bool,
    /// The tables run.
    pub tables: Vec<Table>,
    /// `--only`.
    pub only: Vec<String>,
    /// Wall time of this invocation.
    pub wall_s: f64,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
    /// The number of classes K of each classification set (Tables III–VI) whose data could
    /// be read: an LPD below −log K, that of giving every class 1/K, is marked ‡.
    pub classes: BTreeMap<String, usize>,
}

/// Table II's numbers from the paper (issue 4), per method.
pub const PAPER_TABLE_II: &[(&str, f64)] = &[
    ("laplace", -0.818),
    ("mvi_mu", -0.771),
    ("mvi_eig", -0.722),
    ("mvi_lr", -0.726),
    ("vi_diag", -0.736),
];

/// Which number of a record a table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Test LPD per point (higher is better).
    Lpd,
    /// Test error rate (lower is better).
    Error,
}

impl Metric {
    fn of(self, r: &Record) -> Option<f64> {
        match self {
            Metric::Lpd => r.lpd,
            Metric::Error => r.error,
        }
        .filter(|v| v.is_finite())
    }

    fn higher_is_better(self) -> bool {
        self == Metric::Lpd
    }

    fn format(self, v: f64) -> String {
        match self {
            Metric::Lpd => format!("{v:.3}"),
            Metric::Error => format!("{:.1}", 100.0 * v),
        }
    }
}

/// One row of a table: per method, split → value; and the failures.
#[derive(Debug, Default)]
pub struct Row {
    /// method → (split → value).
    pub values: BTreeMap<String, BTreeMap<usize, f64>>,
    /// Failed fits per method.
    pub failed: BTreeMap<String, usize>,
}

/// The rows of `table` for `metric`, one per set, in `sets` order.
pub fn rows(store: &Store, table: Table, sets: &[&str], metric: Metric) -> Vec<(String, Row)> {
    let mut out: Vec<(String, Row)> = Vec::new();
    for set in sets {
        let mut row = Row::default();
        for r in store
            .records()
            .iter()
            .filter(|r| r.table == table.name() && r.set == *set)
        {
            if !METHODS.contains(&r.method.as_str()) {
                continue;
            }
            if r.failed.is_some() {
                *row.failed.entry(r.method.clone()).or_default() += 1;
            } else if let Some(v) = metric.of(r) {
                row.values.entry(r.method.clone()).or_default().insert(r.split, v);
            }
        }
        if !row.values.is_empty() || !row.failed.is_empty() {
            out.push(((*set).to_string(), row));
        }
    }
    out
}

/// The best method of a row by median (ties to the earlier column).
pub fn best_method(row: &Row, metric: Metric) -> Option<&'static str> {
    let mut best: Option<(&'static str, f64)> = None;
    for m in METHODS {
        let Some(v) = row.values.get(*m) else { continue };
        let med = median(&v.values().copied().collect::<Vec<_>>());
        let better = match best {
            None => true,
            Some((_, b)) if metric.higher_is_better() => med > b,
            Some((_, b)) => med < b,
        };
        if better {
            best = Some((m, med));
        }
    }
    best.map(|(m, _)| m)
}

/// The best method against `other` over the splits both have.
pub fn compare(row: &Row, best: &str, other: &str, metric: Metric, seed: u64) -> Option<Comparison> {
    let b = row.values.get(best)?;
    let o = row.values.get(other)?;
    let (bv, ov): (Vec<f64>, Vec<f64>) = b.iter().filter_map(|(s, v)| o.get(s).map(|w| (*v, *w))).unzip();
    (!bv.is_empty()).then(|| Comparison::new(&bv, &ov, metric.higher_is_better(), seed))
}

/// The mark of an LPD below that of giving each of the K classes 1/K.
const BELOW_CHANCE: &str = "‡";

/// The footnote under a table with [`BELOW_CHANCE`] marks.
const BELOW_CHANCE_NOTE: &str = "‡: median test LPD below −log K, that of giving each of the K classes \
     probability 1/K without looking at the inputs: the fit is degenerate, not an approximation \
     worth comparing.\n";

/// What the footnote adds under `learned-centres`.
const BELOW_CHANCE_LEARNED: &str =
    "Under `learned-centres` the Laplace evidence over the centres can drive α \
     towards 0; the fixed centres do not (docs/results.md, \"Learned against fixed centres, \
     split by split\").\n";

/// An LPD table, with the learned-centres sentence under its ‡ footnote.
fn lpd_table(rows: &[(String, Row)], meta: &Meta) -> String {
    let mut t = render_table(rows, Metric::Lpd, None, &meta.classes);
    if meta.plan.protocol == super::Protocol::LearnedCentres && t.contains(BELOW_CHANCE) {
        t.push_str(BELOW_CHANCE_LEARNED);
    }
    t
}

/// −log K for `set` when it is a classification set of K classes and `metric` is the LPD.
fn chance_lpd(set: &str, metric: Metric, classes: &BTreeMap<String, usize>) -> Option<f64> {
    let k = *classes.get(set)?;
    (metric == Metric::Lpd && k >= 2).then(|| -(k as f64).ln())
}

fn cell(row: &Row, method: &str, best: Option<&str>, metric: Metric, chance: Option<f64>) -> String {
    let Some(v) = row.values.get(method) else {
        return "–".to_string();
    };
    let vals: Vec<f64> = v.values().copied().collect();
    let (mid, spread) = (
        median(&vals),
        0.5 * (quantile(&vals, 0.75) - quantile(&vals, 0.25)),
    );
    let mut text = format!("{} ± {}", metric.format(mid), metric.format(spread));
    if chance.is_some_and(|c| mid < c) {
        text = format!("{text} {BELOW_CHANCE}");
    }
    match best {
        Some(b) if b == method => format!("**{text}**"),
        Some(b) => match compare(row, b, method, metric, 7) {
            Some(c) if c.significant() => format!("{text} †"),
            _ => text,
        },
        None => text,
    }
}

fn splits_cell(row: &Row) -> String {
    let n = row.values.values().map(BTreeMap::len).max().unwrap_or(0);
    let failed: usize = row.failed.values().sum();
    if failed > 0 {
        let which: Vec<String> = row.failed.iter().map(|(m, k)| format!("{m} {k}")).collect();
        format!("{n} (failed: {})", which.join(", "))
    } else {
        n.to_string()
    }
}

/// Render one table as Markdown; `paper` adds a row of the paper's numbers; `classes` (K
/// per set) marks LPDs below −log K, with a footnote.
pub fn render_table(
    rows: &[(String, Row)],
    metric: Metric,
    paper: Option<&[(&str, f64)]>,
    classes: &BTreeMap<String, usize>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| data set | splits | {} |", METHODS.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(METHODS.len()));
    let mut below = false;
    for (set, row) in rows {
        let best = best_method(row, metric);
        let chance = chance_lpd(set, metric, classes);
        let cells: Vec<String> = METHODS
            .iter()
            .map(|m| cell(row, m, best, metric, chance))
            .collect();
        below |= cells.iter().any(|c| c.contains(BELOW_CHANCE));
        let _ = writeln!(s, "| {set} | {} | {} |", splits_cell(row), cells.join(" | "));
    }
    if let Some(p) = paper {
        let cells: Vec<String> = METHODS
            .iter()
            .map(|m| {
                p.iter()
                    .find(|(k, _)| k == m)
                    .map_or("–".to_string(), |(_, v)| format!("{v:.3}"))
            })
            .collect();
        let _ = writeln!(s, "| paper (Table II) | 100 | {} |", cells.join(" | "));
    }
    if below {
        s.push('\n');
        s.push_str(BELOW_CHANCE_NOTE);
    }
    s
}

/// How often the best MVI variant beats laplace and vi_diag on the median, and how often
/// an MVI variant is the row's best.
pub fn mvi_summary(rows: &[(String, Row)], metric: Metric) -> String {
    let med = |row: &Row, m: &str| {
        row.values
            .get(m)
            .map(|v| median(&v.values().copied().collect::<Vec<_>>()))
    };
    let better = |a: f64, b: f64| if metric.higher_is_better() { a > b } else { a < b };
    let mut beats = 0;
    let mut best_mvi = 0;
    for (_, row) in rows {
        let lr_eig: Vec<f64> = ["mvi_lr", "mvi_eig"].iter().filter_map(|m| med(row, m)).collect();
        let top = lr_eig
            .iter()
            .copied()
            .reduce(|a, b| if better(a, b) { a } else { b });
        if let Some(t) = top {
            let others: Vec<f64> = ["laplace", "vi_diag"]
                .iter()
                .filter_map(|m| med(row, m))
                .collect();
            if others.iter().all(|o| better(t, *o)) {
                beats += 1;
            }
        }
        if best_method(row, metric).is_some_and(|b| b.starts_with("mvi_")) {
            best_mvi += 1;
        }
    }
    format!(
        "mvi_lr or mvi_eig beats both laplace and vi_diag on the median in {beats} of {} rows; \
         an MVI variant is the row's best in {best_mvi} of {} rows.\n",
        rows.len(),
        rows.len()
    )
}

fn seconds_of(store: &Store, table: Table) -> f64 {
    store
        .records()
        .iter()
        .filter(|r| r.table == table.name())
        .map(|r| r.seconds)
        .sum::<f64>()
        .max(0.0) // an empty sum is −0.0
}

fn header(meta: &Meta, store: &Store) -> String {
    let p = meta.plan;
    let mut s = String::from("# MVI paper benchmark (`mvi bench paper`)\n\n");
    let _ = writeln!(
        s,
        "Protocol: {}, `{}` (RBF centres {}); splits per binary set ≤ {}, per multiclass set {}, Cauchy data sets {}; \
         (r, α) pairs per M {}; S = {} fixed samples; {} test draws.{}\n",
        if meta.quick { "`--quick`" } else { "full" },
        p.protocol.name(),
        match p.protocol {
            super::Protocol::LearnedCentres => "learned with r and α",
            super::Protocol::FixedCentres
            | super::Protocol::FixedCentresRbf
            | super::Protocol::FixedCentresSelect => "fixed at k-means",
        },
        p.binary_splits,
        p.multiclass_splits,
        p.cauchy_sets,
        p.pairs,
        p.samples,
        p.test_draws,
        if meta.only.is_empty() {
            String::new()
        } else {
            format!(" Sets: {}.", meta.only.join(", "))
        }
    );
    let _ =
        writeln!(
        s,
        "Time: this invocation {:.0} s wall{}; fit time in the store (all invocations): Table II {:.0} s, \
         Tables III/IV {:.0} s (search included), Tables V/VI {:.0} s.\n",
        meta.wall_s,
        if meta.interrupted { " (interrupted: the tables are partial)" } else { "" },
        seconds_of(store, Table::II),
        seconds_of(store, Table::III),
        seconds_of(store, Table::V),
    );
    s.push_str(
        "Cells: median over splits ± half the interquartile range. **Bold**: the row's best \
         method by median. †: significantly worse than the best (exact sign test p < 0.05 over \
         the paired splits, and the bootstrap 95 % interval of the paired median difference \
         excludes 0). LPD: the paper's eq. 13 divided by the number of test points (higher is \
         better). Error: test error rate in % (lower is better).\n\n",
    );
    s
}

/// Under `fixed-centres-select`, per multiclass set, how many splits the Laplace evidence
/// put on RBF features and how many on the inputs (from the `select` records); empty when
/// there are none.
pub fn features_chosen(store: &Store, sets: &[&str]) -> String {
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in store
        .records()
        .iter()
        .filter(|r| r.table == Table::V.name() && r.method == "select")
    {
        if let Some(&set) = sets.iter().find(|s| **s == r.set) {
            let c = counts.entry(set).or_default();
            match r.centres {
                Some(_) => c.0 += 1,
                None => c.1 += 1,
            }
        }
    }
    if counts.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = sets
        .iter()
        .filter_map(|s| {
            counts
                .get(s)
                .map(|(rbf, inputs)| format!("{s} {rbf} RBF / {inputs} inputs"))
        })
        .collect();
    format!(
        "Features chosen per split by the Laplace evidence (`fixed-centres-select`, splits on RBF \
         features / on the inputs): {}.\n\n",
        parts.join(", ")
    )
}

/// The whole report.
pub fn render(store: &Store, meta: &Meta) -> String {
    let mut s = header(meta, store);
    let binary: Vec<&str> = data::BINARY_SETS.to_vec();
    let multi: Vec<&str> = data::MULTICLASS_SETS.to_vec();
    for table in &meta.tables {
        match table {
            Table::II => {
                let r = rows(store, Table::II, &["cauchy"], Metric::Lpd);
                s.push_str("## Table II: Cauchy regression, test LPD per point\n\n");
                s.push_str(&render_table(
                    &r,
                    Metric::Lpd,
                    Some(PAPER_TABLE_II),
                    &meta.classes,
                ));
                s.push('\n');
            }
            Table::III => {
                let r = rows(store, Table::III, &binary, Metric::Lpd);
                s.push_str("## Table III: logistic regression with RBF features, test LPD per point\n\n");
                s.push_str(&lpd_table(&r, meta));
                s.push('\n');
                s.push_str(&mvi_summary(&r, Metric::Lpd));
                s.push('\n');
                let e = rows(store, Table::III, &binary, Metric::Error);
                s.push_str("## Table IV: logistic regression with RBF features, test error (%)\n\n");
                s.push_str(&render_table(&e, Metric::Error, None, &meta.classes));
                s.push('\n');
            }
            Table::V => {
                let r = rows(store, Table::V, &multi, Metric::Lpd);
                s.push_str("## Table V: multiclass softmax regression, test LPD per point\n\n");
                s.push_str(&lpd_table(&r, meta));
                s.push('\n');
                s.push_str(&mvi_summary(&r, Metric::Lpd));
                s.push('\n');
                s.push_str(&features_chosen(store, &multi));
                let e = rows(store, Table::V, &multi, Metric::Error);
                s.push_str("## Table VI: multiclass softmax regression, test error (%)\n\n");
                s.push_str(&render_table(&e, Metric::Error, None, &meta.classes));
                s.push('\n');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[(&str, &[f64])]) -> Row {
        let mut r = Row::default();
        for (m, v) in values {
            r.values
                .insert((*m).to_string(), v.iter().copied().enumerate().collect());
        }
        r
    }

    #[test]
    fn the_features_chosen_are_counted_per_set_in_the_tables_order() {
        let dir = std::env::temp_dir().join(format!("mvi-paper-report-{}-features", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut store = Store::open(&dir).expect("a scratch store");
        assert_eq!(features_chosen(&store, &["ecoli"]), "");
        for (set, split, centres) in [
            ("vehicle", 0, None),
            ("ecoli", 0, Some(30)),
            ("ecoli", 1, None),
            ("ecoli", 2, Some(20)),
        ] {
            let mut r = Record::new("V", set, split, "select");
            r.centres = centres;
            store.append(r).expect("appended");
        }
        store
            .append(Record::new("V", "ecoli", 3, "laplace"))
            .expect("appended");
        let text = features_chosen(&store, &["ecoli", "vehicle", "iris"]);
        assert!(
            text.contains("ecoli 2 RBF / 1 inputs, vehicle 0 RBF / 1 inputs."),
            "{text}"
        );
        assert!(!text.contains("iris"), "{text}");
        std::fs::remove_dir_all(&dir).expect("scratch store removed");
    }

    #[test]
    fn best_is_by_median_in_the_metric_direction() {
        let r = row(&[("laplace", &[-1.0, -1.0, -5.0]), ("mvi_lr", &[-0.9, -3.0, -3.0])]);
        assert_eq!(best_method(&r, Metric::Lpd), Some("laplace"));
        assert_eq!(best_method(&r, Metric::Error), Some("mvi_lr"));
    }

    #[test]
    fn a_consistently_worse_method_is_marked_and_a_tie_is_not() {
        let better: Vec<f64> = (0..12).map(|i| -0.5 + 0.01 * i as f64).collect();
        let worse: Vec<f64> = better.iter().map(|v| v - 0.1).collect();
        let r = row(&[("laplace", &worse), ("mvi_lr", &better), ("vi_diag", &better)]);
        let t = render_table(&[("banana".into(), r)], Metric::Lpd, None, &BTreeMap::new());
        let line = t.lines().nth(2).unwrap();
        assert!(line.contains("†"), "{line}");
        assert_eq!(line.matches('†').count(), 1, "{line}");
        assert!(line.contains("**"), "{line}");
        assert!(line.starts_with("| banana | 12 |"), "{line}");
    }

    #[test]
    fn summary_counts_rows_where_mvi_lr_beats_both_baselines() {
        let r1 = row(&[("laplace", &[-1.0]), ("vi_diag", &[-1.1]), ("mvi_lr", &[-0.9])]);
        let r2 = row(&[("laplace", &[-0.8]), ("vi_diag", &[-1.1]), ("mvi_lr", &[-0.9])]);
        let s = mvi_summary(&[("a".into(), r1), ("b".into(), r2)], Metric::Lpd);
        assert!(s.contains("in 1 of 2 rows"), "{s}");
    }

    #[test]
    fn an_lpd_below_that_of_guessing_is_marked_with_a_footnote() {
        // heart under learned-centres (docs/results.md): laplace −34 per point
        let r = row(&[("laplace", &[-34.0]), ("mvi_lr", &[-0.688])]);
        let classes: BTreeMap<String, usize> = [("heart".to_string(), 2)].into_iter().collect();
        let t = render_table(&[("heart".into(), r)], Metric::Lpd, None, &classes);
        let line = t.lines().nth(2).unwrap();
        assert!(line.contains("-34.000 ± 0.000 ‡"), "{line}");
        assert!(!line.contains("-0.688 ± 0.000 ‡"), "−0.688 > −log 2: {line}");
        assert!(t.contains("‡: median test LPD below −log K"), "{t}");
        // no K (Table II's regression), no mark and no footnote
        let r = row(&[("laplace", &[-34.0])]);
        let t = render_table(&[("cauchy".into(), r)], Metric::Lpd, None, &classes);
        assert!(!t.contains('‡'), "{t}");
    }
}
