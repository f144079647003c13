use super::*;
use crate::posterior::loo::PointLoo;
use approx::assert_relative_eq;

fn small_loo(khat: &[f64]) -> Loo {
    let pointwise: Vec<PointLoo> = khat
        .iter()
        .map(|k| PointLoo {
            elpd: -2.0,
            khat: *k,
            p_loo: 0.25,
        })
        .collect();
    Loo {
        elpd_loo: -2.0 * khat.len() as f64,
        se: 1.234,
        p_loo: 0.25 * khat.len() as f64,
        lppd: -1.75 * khat.len() as f64,
        n_draws: 1000,
        n_obs: khat.len(),
        n_high_k: khat.iter().filter(|k| **k > 2.0 / 3.0).count(),
        pointwise,
        good_k: 2.0 / 3.0,
        corrected: false,
        khat_correction: None,
    }
}

#[test]
fn loo_table_has_arviz_layout_and_counts_khat_ranges() {
    let text = render_loo(&small_loo(&[0.1, 0.5, 0.8, 1.2]));
    let expected = "\
Computed from 1000 posterior samples and 4 observations log-likelihood matrix.

         Estimate       SE
elpd_loo    -8.00     1.23
p_loo        1.00        -

Warning: 2 of 4 observations have Pareto k̂ > 0.67: their elpd estimates are unreliable \
(the model may be sensitive to them, or misspecified).
------

Pareto k diagnostic values:
                         Count   Pct.
(-Inf, 0.67]   (good)        2   50.0%
   (0.67, 1]   (bad)         1   25.0%
    (1, Inf)   (very bad)    1   25.0%
";
    assert_eq!(text, expected);
}

#[test]
fn loo_table_says_when_a_correction_was_used_and_when_khat_could_not_be_fitted() {
    let mut loo = small_loo(&[0.1, f64::NAN]);
    loo.corrected = true;
    loo.khat_correction = Some(0.42);
    let text = render_loo(&loo);
    assert!(text.contains("Posterior approximation correction used (k̂ of log p̃ − log q: 0.42)."));
    assert!(text.contains("(too few draws to fit)    1   50.0%"), "{text}");
    assert!(!text.contains("Warning"));
}

#[test]
fn comparison_table_lists_models_best_first() {
    let row = |name: &str, rank, elpd, diff, weight, warning| CompareRow {
        name: name.to_string(),
        rank,
        elpd_loo: elpd,
        p_loo: 3.5,
        elpd_diff: diff,
        se: 14.0,
        dse: if rank == 0 { 0.0 } else { 4.25 },
        weight,
        warning,
    };
    let text = render_comparison(&[
        row("interaction", 0, -1872.5286, 0.0, 0.84, false),
        row("momiq", 1, -1878.5093, 5.9807, 0.16, true),
    ]);
    let expected = "\
model        rank  elpd_loo    p_loo  elpd_diff  weight      se     dse  warning
interaction     0  -1872.53     3.50       0.00    0.84   14.00    0.00  false
momiq           1  -1878.51     3.50       5.98    0.16   14.00    4.25  true
";
    assert_eq!(text, expected);
}

#[test]
fn rootogram_frequencies_average_the_replicates() {
    let y = [0.0, 1.0, 1.0, 3.0];
    // Two replicated data sets.
    let y_rep = DMatrix::from_row_slice(2, 4, &[0.0, 0.0, 1.0, 2.0, 1.0, 1.0, 1.0, 3.0]);
    let bins = Bins::new(&y, y_rep.as_slice()).unwrap();
    assert_eq!((bins.lo, bins.width, bins.n), (0, 1, 4));
    let (observed, expected) = frequencies(&bins, &y, &y_rep);
    assert_eq!(observed, vec![1.0, 2.0, 0.0, 1.0]);
    assert_eq!(expected, vec![1.0, 2.0, 0.5, 0.5]);
}

#[test]
fn wide_count_ranges_share_bins() {
    let y: Vec<f64> = (0..500).map(f64::from).collect();
    let bins = Bins::new(&y, &[]).unwrap();
    assert!(bins.n <= MAX_BINS);
    assert_eq!(bins.index(0.0), Some(0));
    assert_eq!(bins.index(499.0), Some(bins.n - 1));
    assert_eq!(bins.index(-1.0), None);
}

#[test]
fn ecdf_difference_runs_from_zero_to_zero_with_the_ks_statistic_as_largest_gap() {
    let u = [0.1, 0.2, 0.25, 0.9];
    let pts = ecdf_difference(&u);
    assert_eq!(pts.first(), Some(&(0.0, 0.0)));
    assert_eq!(pts.last(), Some(&(1.0, 0.0)));
    // Largest |F̂(u) − u|: at 0.25, 3/4 − 0.25 = 0.5.
    let d = pts.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
    assert_relative_eq!(d, 0.5, epsilon = 1e-12);
}

#[test]
fn ppc_draws_the_observed_density_over_at_most_fifty_replicates() {
    let y: Vec<f64> = (0..30).map(|i| (i as f64 * 0.37).sin()).collect();
    let y_rep = DMatrix::from_fn(200, 30, |s, n| ((s * 31 + n) as f64 * 0.11).sin());
    let svg = ppc_svg(&y, &y_rep, false, "ppc · test").unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("ppc · test"));
    // One thin translucent line per drawn replicate (200 rows thinned to 50), and the
    // observed density in a thick line (plus its legend sample).
    assert_eq!(
        svg.matches(r##"opacity="0.25" stroke="#0000FF""##).count(),
        MAX_REPLICATES
    );
    assert_eq!(svg.matches(r##"stroke="#000000" stroke-width="3""##).count(), 2);
    let counts = ppc_svg(
        &[0.0, 2.0, 2.0],
        &DMatrix::from_element(10, 3, 1.0),
        true,
        "counts",
    )
    .unwrap();
    assert!(counts.contains("<rect") && counts.contains("counts"));
}

#[test]
fn loo_pit_picture_draws_with_and_without_values() {
    let pit: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
    let svg = loo_pit_svg(&pit, "LOO-PIT").unwrap();
    assert!(svg.contains("<polygon") && svg.contains("LOO-PIT"));
    assert!(loo_pit_svg(&[], "empty").unwrap().contains("no LOO-PIT values"));
}
