//! Stan's constrained types (`graph::transform::TYPES`): for each type and random free
//! coordinates u, the graph's value and log-Jacobian equal the plain `f64` implementation
//! (Stan's loops), the value passes the type's own data check, the inverse gives u back,
//! and the log-Jacobian equals log |det J| computed by central differences.
//!
//! J is the Jacobian of the map from u to the value's free entries: the first K − 1 entries
//! of a simplex or sum-to-zero vector, the lower triangle of a Cholesky factor of a
//! covariance matrix or of a covariance matrix, the strict lower triangle of a Cholesky
//! factor of a correlation matrix or of a correlation matrix, and every entry of an ordered
//! vector. Two documented exceptions: `sum_to_zero_vector` adds 0 (as Stan; against the
//! first K − 1 entries |det J| is the constant 1/√K, checked here), and `unit_vector`
//! adds Stan's −½‖u‖², which is not a Jacobian (the map is many-to-one); its inverse is
//! checked on the unit sphere.

use mvi::autodiff::finite_diff;
use mvi::graph::logjoint::eval_nodes;
use mvi::graph::transform::{entry, lower_type, value_shape, TypeKind, TYPES};
use mvi::graph::{Graph, Op, Shape};
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;

/// Graph vs `f64` loops: the same maths in a different order, rounding only.
const EXACT_TOL: f64 = 1e-10;
/// log |det J| by central differences with step 1e-6: truncation ~1e-12 times the third
/// derivative, cancellation ~1e-10 per entry; the determinant of up to 10×10 keeps ~1e-7.
const FD_TOL: f64 = 1e-6;

/// The value's free entries (column-major indices) whose Jacobian the log-Jacobian is.
fn free_entries(kind: TypeKind, k: usize) -> Vec<usize> {
    match kind {
        TypeKind::Simplex | TypeKind::SumToZero => (0..k - 1).collect(),
        TypeKind::Ordered | TypeKind::PositiveOrdered | TypeKind::UnitVector => (0..k).collect(),
        TypeKind::CholeskyCov | TypeKind::CovMatrix => {
            (0..k).flat_map(|i| (0..=i).map(move |j| i + j * k)).collect()
        }
        TypeKind::CholeskyCorr | TypeKind::CorrMatrix => {
            (1..k).flat_map(|i| (0..i).map(move |j| i + j * k)).collect()
        }
    }
}

/// The graph's value and log-Jacobian at u.
fn graph_eval(kind: TypeKind, k: usize, u: &[f64]) -> (Vec<f64>, f64) {
    let n = u.len();
    let mut g = Graph::new(n, 0);
    let w = g.nodes.len();
    g.nodes.push(mvi::graph::Node {
        op: Op::Param { offset: 0 },
        shape: Shape::Vector(n),
    });
    let (x, lj) = lower_type(&mut g, mvi::graph::NodeId(w), kind, k).unwrap();
    assert_eq!(g.shape(x), value_shape(kind, k));
    let lj = lj.unwrap_or_else(|| g.scalar(0.0));
    let wm = DMatrix::from_column_slice(n, 1, u);
    let out = eval_nodes(&g, &[], &wm, &[x, lj]);
    (out[0].as_slice().to_vec(), out[1][0])
}

fn log_abs_det(m: &DMatrix<f64>) -> f64 {
    m.clone().lu().determinant().abs().ln()
}

/// Every property of one type at u.
fn check(kind: TypeKind, k: usize, u: &[f64]) {
    let e = entry(kind);
    let name = kind.name();
    let x = (e.constrain)(u, k);
    let (gx, glj) = graph_eval(kind, k, u);
    for (a, b) in x.iter().zip(&gx) {
        assert!(
            (a - b).abs() <= EXACT_TOL,
            "{name}[{k}]: graph value {b} vs loop {a}"
        );
    }
    let lj = (e.log_jacobian)(u, k);
    assert!(
        (lj - glj).abs() <= EXACT_TOL * lj.abs().max(1.0),
        "{name}[{k}]: graph log-Jacobian {glj} vs {lj}"
    );
    assert_eq!(
        (e.validate)(&x, k),
        Ok(()),
        "{name}[{k}]: its own value fails its check"
    );
    let back = (e.unconstrain)(&x, k);
    let want: Vec<f64> = if kind == TypeKind::UnitVector {
        x.clone()
    } else {
        u.to_vec()
    };
    for (a, b) in back.iter().zip(&want) {
        assert!(
            (a - b).abs() <= 1e-8 * b.abs().max(1.0),
            "{name}[{k}]: inverse gives {a}, not {b}"
        );
    }
    if kind == TypeKind::UnitVector {
        return;
    }
    let rows = free_entries(kind, k);
    assert_eq!(rows.len(), u.len(), "{name}: as many free entries as coordinates");
    let mut jac = DMatrix::zeros(u.len(), u.len());
    for (r, &row) in rows.iter().enumerate() {
        let f = |v: &[f64]| (e.constrain)(v, k)[row];
        let gr = finite_diff::gradient(&f, u, 1e-6);
        jac.set_row(r, &gr.transpose());
    }
    let numeric = log_abs_det(&jac);
    let expected = if kind == TypeKind::SumToZero {
        lj - 0.5 * (k as f64).ln()
    } else {
        lj
    };
    assert!(
        (numeric - expected).abs() <= FD_TOL * numeric.abs().max(1.0),
        "{name}[{k}]: log-Jacobian {expected} vs log |det J| {numeric}"
    );
}

fn free_point(kind: TypeKind, k: usize, raw: &[f64]) -> Vec<f64> {
    let n = (entry(kind).free)(k);
    raw.iter().cycle().take(n).copied().collect()
}

#[test]
fn every_type_matches_its_loops_inverse_and_jacobian_at_fixed_points() {
    let raw = [0.3, -1.1, 0.7, 1.9, -0.4, 0.05, -2.2, 0.9, 1.3, -0.6];
    for e in TYPES {
        for k in e.min_size.max(1)..=5 {
            if (e.free)(k) == 0 {
                continue;
            }
            check(e.kind, k, &free_point(e.kind, k, &raw));
            check(
                e.kind,
                k,
                &vec![0.0; (e.free)(k)]
                    .iter()
                    .map(|v| v + 0.01)
                    .collect::<Vec<_>>(),
            );
        }
    }
}

#[test]
fn zero_free_coordinates_give_an_interior_value() {
    for e in TYPES {
        for k in e.min_size.max(1)..=4 {
            let n = (e.free)(k);
            let mut u = vec![0.0; n];
            if e.kind == TypeKind::UnitVector {
                u = vec![1.0 / (k as f64).sqrt(); k];
            }
            let x = (e.constrain)(&u, k);
            assert_eq!((e.validate)(&x, k), Ok(()), "{}[{k}] at u = 0", e.kind.name());
            assert!(x.iter().all(|v| v.is_finite()));
        }
    }
}

#[test]
fn sum_to_zero_basis_is_orthonormal_and_orthogonal_to_one() {
    for k in 2..=6 {
        let cols: Vec<DVector<f64>> = (0..k - 1)
            .map(|j| {
                let mut e = vec![0.0; k - 1];
                e[j] = 1.0;
                DVector::from_vec((entry(TypeKind::SumToZero).constrain)(&e, k))
            })
            .collect();
        for (a, ca) in cols.iter().enumerate() {
            assert!(ca.sum().abs() < 1e-14);
            for (b, cb) in cols.iter().enumerate() {
                let want = if a == b { 1.0 } else { 0.0 };
                assert!((ca.dot(cb) - want).abs() < 1e-14);
            }
        }
    }
}

fn kinds() -> impl Strategy<Value = (TypeKind, usize, Vec<f64>)> {
    (
        0..TYPES.len(),
        2usize..=5,
        prop::collection::vec(-2.0f64..2.0, 15),
    )
        .prop_map(|(t, k, raw)| {
            let e = &TYPES[t];
            let k = k.max(e.min_size);
            let u = free_point(e.kind, k, &raw);
            (e.kind, k, u)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_type_round_trips_and_its_log_jacobian_is_log_det_j((kind, k, u) in kinds()) {
        check(kind, k, &u);
    }
}

/// `cholesky_cov[M, N]` (Stan's `cholesky_factor_cov[M, N]`, M > N) at free coordinates u:
/// the graph's M×N value and log-Jacobian equal the loops, the value is lower trapezoidal
/// with a positive diagonal and passes its own check, the inverse gives u back, the free
/// coordinates fill it row by row as Stan's do, and the log-Jacobian is log |det J| of the
/// map from u to the trapezoid's entries.
fn check_two_size(m: usize, n: usize, u: &[f64]) {
    use mvi::graph::transform::lower_type_of;
    let e = entry(TypeKind::CholeskyCov);
    let shape = Shape::Matrix(m, n);
    assert_eq!(e.free_of(shape), n * (n + 1) / 2 + (m - n) * n);
    assert_eq!(u.len(), e.free_of(shape));
    let x = e.constrain_of(u, shape);
    // Stan's order: row by row, the diagonal as its log, the rows past N full
    let mut p = 0;
    for i in 0..m {
        for j in 0..n {
            let v = x[i + j * m];
            if j > i {
                assert_eq!(v, 0.0, "[{m}, {n}] entry ({i}, {j}) above the diagonal");
                continue;
            }
            let want = if i == j { u[p].exp() } else { u[p] };
            assert!(
                (v - want).abs() < 1e-15,
                "[{m}, {n}] entry ({i}, {j}): {v} vs {want}"
            );
            p += 1;
        }
    }
    let mut g = Graph::new(u.len(), 0);
    let w = g.nodes.len();
    g.nodes.push(mvi::graph::Node {
        op: Op::Param { offset: 0 },
        shape: Shape::Vector(u.len()),
    });
    let (xn, lj) = lower_type_of(&mut g, mvi::graph::NodeId(w), TypeKind::CholeskyCov, shape).unwrap();
    assert_eq!(g.shape(xn), shape);
    let lj = lj.unwrap();
    let out = eval_nodes(&g, &[], &DMatrix::from_column_slice(u.len(), 1, u), &[xn, lj]);
    for (a, b) in x.iter().zip(out[0].as_slice()) {
        assert!((a - b).abs() <= EXACT_TOL, "[{m}, {n}]: graph {b} vs loop {a}");
    }
    let ljv = e.log_jacobian_of(u, shape);
    assert!((ljv - out[1][0]).abs() <= EXACT_TOL * ljv.abs().max(1.0));
    assert_eq!(e.validate_of(&x, shape), Ok(()));
    for (a, b) in e.unconstrain_of(&x, shape).iter().zip(u) {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs().max(1.0),
            "[{m}, {n}]: inverse {a} vs {b}"
        );
    }
    let rows: Vec<usize> = (0..m)
        .flat_map(|i| (0..=i.min(n - 1)).map(move |j| i + j * m))
        .collect();
    let mut jac = DMatrix::zeros(u.len(), u.len());
    for (r, &row) in rows.iter().enumerate() {
        let f = |v: &[f64]| e.constrain_of(v, shape)[row];
        jac.set_row(r, &finite_diff::gradient(&f, u, 1e-6).transpose());
    }
    let numeric = log_abs_det(&jac);
    assert!(
        (numeric - ljv).abs() <= FD_TOL * numeric.abs().max(1.0),
        "[{m}, {n}]: log-Jacobian {ljv} vs log |det J| {numeric}"
    );
}

#[test]
fn two_size_cholesky_cov_matches_its_loops_inverse_and_jacobian() {
    let raw = [0.3, -1.1, 0.7, 1.9, -0.4, 0.05, -2.2, 0.9, 1.3, -0.6];
    for (m, n) in [(2, 1), (3, 1), (4, 2), (5, 3), (3, 3)] {
        let k = n * (n + 1) / 2 + (m - n) * n;
        let u: Vec<f64> = raw.iter().cycle().take(k).copied().collect();
        check_two_size(m, n, &u);
    }
    // a value with an entry above the diagonal, or a diagonal entry ≤ 0, is refused
    let e = entry(TypeKind::CholeskyCov);
    let shape = Shape::Matrix(3, 2);
    let good = e.constrain_of(&[0.1, 0.2, -0.3, 0.4, 0.5], shape);
    let mut above = good.clone();
    above[3] = 0.5; // (0, 1)
    assert_eq!(e.validate_of(&above, shape).unwrap_err().entry, Some(3));
    let mut negative = good;
    negative[4] = -1.0; // (1, 1)
    assert_eq!(e.validate_of(&negative, shape).unwrap_err().entry, Some(4));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn two_size_cholesky_cov_round_trips_with_its_jacobian(
        (m, n) in (1usize..6).prop_flat_map(|n| (n..7usize, Just(n))),
        raw in prop::collection::vec(-2.0f64..2.0, 30),
    ) {
        let k = n * (n + 1) / 2 + (m - n) * n;
        check_two_size(m, n, &raw[..k]);
    }
}
