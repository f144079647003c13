//! Log joints that are sums over the rows of their data, and the graphs of a subset of rows.
//!
//! Input: a [`Graph`]. Output: a [`RowSplit`] when every target term is either *global* (it
//! reads no row of the data) or a *row sum* (a sum over the N observations of terms that
//! each read one row of the data and the parameters), and a diagnosis of the first term that
//! is neither otherwise. With a split, [`RowSplit::slice`] builds the graph of any subset of
//! rows (its targets the row sums over those rows alone) and [`RowSplit::global`] the graph
//! of the global terms, so that
//!
//! log p̃(w) = global(w) + Σ_b slice(rows_b)(w)
//!
//! for any partition of 0..N into blocks rows_b, and global(w) + (N/B)·slice(rows)(w) is an
//! unbiased estimate of log p̃(w) for B rows drawn without replacement. Evaluating by blocks
//! of rows keeps a batched evaluation's buffers (rows × columns) small at any N; minibatch
//! objectives draw their rows here.
//!
//! N is the largest row count of a constant vector or matrix of the graph (the data's rows).
//! A node is *row-wise* when it has N rows and row i depends on row i of the data alone:
//! the data, elementwise functions of row-wise nodes and of scalars, a row-wise matrix times
//! a global one, a global value gathered by a row-wise index, the log-sum-exp of each row.
//! A *row sum* sums a row-wise node (`Sum`, a fused likelihood, a support check); row sums
//! add and subtract, and scale by a global scalar. Anything else that meets a row-wise node
//! (a transpose, a product that sums over rows, a recursion, a row sum added to a global
//! term) ends the split.

use super::build::{each_input, map_inputs};
use super::{Fun1, Fun2, Graph, NodeId, Op, Shape};

/// What a node is to a row split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Reads no row of the data.
    Global,
    /// N rows, row i from row i of the data.
    Row,
    /// A scalar summed over the rows.
    RowSum,
}

/// Why a graph is not a sum over rows: the target term and what stops it.
#[derive(Debug, Clone, PartialEq)]
pub struct NotRows {
    /// Index of the target term in [`Graph::targets`].
    pub target: usize,
    /// What the term does that a sum over rows cannot.
    pub reason: String,
}

/// A graph whose log joint is global terms plus sums over its N data rows.
#[derive(Debug, Clone)]
pub struct RowSplit {
    /// The number of rows N.
    pub n: usize,
    kinds: Vec<Kind>,
    /// Row sums plus a constant (Poisson's −Σ log k! folded into its term): (the node, its
    /// row-sum operand, the constant, +1 or −1 for the constant's sign). A slice keeps the row
    /// sum alone; the global graph adds the constant once.
    shifts: Vec<(usize, NodeId, NodeId, f64)>,
}

/// The rows of a constant: N when it is a vector of N or a matrix of N rows.
fn const_rows(shape: Shape) -> usize {
    match shape {
        Shape::Scalar => 1,
        Shape::Vector(n) | Shape::Matrix(n, _) => n,
    }
}

impl RowSplit {
    /// The split of `g` over its data rows, or why there is none. `Ok(None)` when the graph
    /// has no data with more than one row.
    ///
    /// # Errors
    /// [`NotRows`] naming the first target term that is neither global nor a row sum.
    pub fn of(g: &Graph) -> Result<Option<RowSplit>, NotRows> {
        let n = g
            .nodes
            .iter()
            .filter(|node| matches!(node.op, Op::Const(_)))
            .map(|node| const_rows(node.shape))
            .max()
            .unwrap_or(1);
        if n < 2 {
            return Ok(None);
        }
        // the first node that ends the split, with why, per node (None: fine so far)
        let mut kinds = Vec::with_capacity(g.nodes.len());
        let mut blocked: Vec<Option<String>> = Vec::with_capacity(g.nodes.len());
        for i in 0..g.nodes.len() {
            let (kind, why) = classify(g, &kinds, &blocked, n, NodeId(i));
            kinds.push(kind);
            blocked.push(why);
        }
        for (t, id) in g.targets.iter().enumerate() {
            if let Some(reason) = &blocked[id.0] {
                return Err(NotRows {
                    target: t,
                    reason: reason.clone(),
                });
            }
            if kinds[id.0] == Kind::Row {
                return Err(NotRows {
                    target: t,
                    reason: "the term is not a scalar".into(),
                });
            }
        }
        if !g.targets.iter().any(|t| kinds[t.0] == Kind::RowSum) {
            return Ok(None);
        }
        let shifts = shifts(g, &kinds);
        Ok(Some(RowSplit { n, kinds, shifts }))
    }

    /// The graph of the global terms alone (no row of the data is read).
    pub fn global(&self, g: &Graph) -> Graph {
        let targets: Vec<NodeId> = g
            .targets
            .iter()
            .copied()
            .filter(|t| self.kinds[t.0] == Kind::Global)
            .collect();
        let mut out = self.rebuild(g, &targets, &[]);
        // each constant added to a row sum, once
        for &(_, _, c, sign) in &self.shifts {
            let value = g.const_value(c).map_or(0.0, |v| v[0]);
            let node = out.push(Op::Const(vec![sign * value]), Shape::Scalar);
            out.targets.push(node);
        }
        out
    }

    /// The graph of the row sums over `rows` (0-based, each < N; repeats allowed) alone.
    pub fn slice(&self, g: &Graph, rows: &[u32]) -> Graph {
        let targets: Vec<NodeId> = g
            .targets
            .iter()
            .copied()
            .filter(|t| self.kinds[t.0] == Kind::RowSum)
            .collect();
        self.rebuild(g, &targets, rows)
    }

    /// The ancestors of `targets`, renumbered, with every row-wise node cut to `rows`.
    fn rebuild(&self, g: &Graph, targets: &[NodeId], rows: &[u32]) -> Graph {
        let need = super::eval::ancestors(g, targets);
        let mut out = Graph::new(g.dim, g.theta_dim);
        out.unfused = g.unfused;
        let mut map = vec![NodeId(usize::MAX); g.nodes.len()];
        let b = rows.len();
        for (i, node) in g.nodes.iter().enumerate() {
            if !need[i] {
                continue;
            }
            let row = self.kinds[i] == Kind::Row;
            let shape = match (row, node.shape) {
                (true, Shape::Vector(_)) => Shape::Vector(b),
                (true, Shape::Matrix(_, c)) => Shape::Matrix(b, c),
                (_, s) => s,
            };
            let op = match &node.op {
                Op::Const(v) if row => Op::Const(take_rows(v, self.n, shape.cols(), rows)),
                Op::Gather(src, idx) if row => {
                    Op::Gather(map[src.0], take_rows(idx, self.n, shape.cols(), rows))
                }
                op => map_inputs(op.clone(), |id| map[id.0]),
            };
            map[i] = match self.shifts.iter().find(|sh| sh.0 == i) {
                // the row sum without its constant (the global graph has it)
                Some(&(_, sum, _, _)) => map[sum.0],
                _ => out.push(op, shape),
            };
        }
        out.targets = targets.iter().map(|t| map[t.0]).collect();
        out
    }
}

/// Whether a node is a scalar constant.
fn constant(g: &Graph, id: NodeId) -> bool {
    g.shape(id) == Shape::Scalar && g.const_value(id).is_some()
}

/// The row sums of `g` that add (or subtract) a scalar constant; see [`RowSplit`]'s `shifts`.
fn shifts(g: &Graph, kinds: &[Kind]) -> Vec<(usize, NodeId, NodeId, f64)> {
    let mut out = Vec::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if kinds[i] != Kind::RowSum {
            continue;
        }
        match node.op {
            Op::Binary(Fun2::Add, a, c) if kinds[a.0] == Kind::RowSum && constant(g, c) => {
                out.push((i, a, c, 1.0))
            }
            Op::Binary(Fun2::Add, c, a) if kinds[a.0] == Kind::RowSum && constant(g, c) => {
                out.push((i, a, c, 1.0))
            }
            Op::Binary(Fun2::Sub, a, c) if kinds[a.0] == Kind::RowSum && constant(g, c) => {
                out.push((i, a, c, -1.0))
            }
            _ => {}
        }
    }
    out
}

/// Rows `rows` of a column-major matrix of `n` rows and `cols` columns.
fn take_rows<T: Copy>(v: &[T], n: usize, cols: usize, rows: &[u32]) -> Vec<T> {
    let mut out = Vec::with_capacity(rows.len() * cols);
    for c in 0..cols {
        let col = &v[c * n..(c + 1) * n];
        out.extend(rows.iter().map(|&r| col[r as usize]));
    }
    out
}

/// The kind of node `id`, or why it ends the split.
fn classify(
    g: &Graph,
    kinds: &[Kind],
    blocked: &[Option<String>],
    n: usize,
    id: NodeId,
) -> (Kind, Option<String>) {
    let node = &g.nodes[id.0];
    let mut inherited = None;
    each_input(&node.op, |i| {
        if inherited.is_none() {
            inherited.clone_from(&blocked[i.0]);
        }
    });
    if inherited.is_some() {
        return (Kind::Global, inherited);
    }
    let kind = |i: &NodeId| kinds[i.0];
    let scalar = |i: &NodeId| g.shape(*i) == Shape::Scalar;
    let any = |k: Kind| {
        let mut found = false;
        each_input(&node.op, |i| found |= kinds[i.0] == k);
        found
    };
    let (has_row, has_sum) = (any(Kind::Row), any(Kind::RowSum));
    let fail = |why: &str| (Kind::Global, Some(why.to_string()));
    let rows_of = |s: Shape| match s {
        Shape::Vector(r) | Shape::Matrix(r, _) => r,
        Shape::Scalar => 1,
    };
    if has_sum {
        // row sums combine linearly: ±, and scaling by a global scalar
        return match &node.op {
            Op::Unary(Fun1::Neg, _) => (Kind::RowSum, None),
            Op::Binary(Fun2::Add | Fun2::Sub, a, b)
                if (kind(a) == Kind::RowSum && (kind(b) == Kind::RowSum || constant(g, *b)))
                    || (kind(b) == Kind::RowSum && constant(g, *a)) =>
            {
                (Kind::RowSum, None)
            }
            Op::Binary(Fun2::Mul, a, b)
                if (kind(a) == Kind::RowSum && kind(b) == Kind::Global && scalar(b))
                    || (kind(b) == Kind::RowSum && kind(a) == Kind::Global && scalar(a)) =>
            {
                (Kind::RowSum, None)
            }
            Op::Binary(Fun2::Div, a, b) if kind(a) == Kind::RowSum && kind(b) == Kind::Global && scalar(b) => {
                (Kind::RowSum, None)
            }
            Op::Binary(Fun2::Add | Fun2::Sub, ..) => {
                fail("it adds a term computed once to a sum over the rows (such as a count of rows times a parameter's term)")
            }
            _ => fail("it uses a sum over the rows other than by adding it to the log density"),
        };
    }
    if !has_row {
        return match &node.op {
            Op::Const(_) if rows_of(node.shape) == n && node.shape != Shape::Scalar => (Kind::Row, None),
            Op::Gather(src, idx)
                if kind(src) == Kind::Global
                    && rows_of(node.shape) == n
                    && node.shape != Shape::Scalar
                    && idx.len() == node.shape.size() =>
            {
                // a global value indexed by a data column (a group's effect per row)
                (Kind::Row, None)
            }
            _ => (Kind::Global, None),
        };
    }
    // some input is row-wise: the node is row-wise, a row sum, or the end of the split
    let row_or_scalar = |ids: &[NodeId]| ids.iter().all(|i| kind(i) == Kind::Row || scalar(i));
    match &node.op {
        Op::Unary(_, _) => (Kind::Row, None),
        Op::Binary(_, a, b) if row_or_scalar(&[*a, *b]) => (Kind::Row, None),
        Op::Ternary(_, ids) if row_or_scalar(ids) => (Kind::Row, None),
        Op::Binary(..) | Op::Ternary(..) => {
            fail("it combines the data's rows with a vector that is not indexed by row (a parameter of the same length, say)")
        }
        Op::MatMul(a, b) if kind(a) == Kind::Row && kind(b) == Kind::Global => (Kind::Row, None),
        Op::MatMul(..) => fail("a matrix product sums over the data's rows"),
        Op::LogSumExpRows(_) => (Kind::Row, None),
        Op::Sum(_) | Op::Support { .. } => (Kind::RowSum, None),
        Op::LikSum(_, ids) if row_or_scalar(ids) => (Kind::RowSum, None),
        Op::LikPoint(_, ids) if row_or_scalar(ids) => (Kind::Row, None),
        Op::LikSum(..) | Op::LikPoint(..) => {
            fail("its arguments mix the data's rows with a vector that is not indexed by row")
        }
        Op::Gather(..) | Op::Assemble(..) | Op::Pack(..) => {
            fail("it picks single entries of the data (indexing or a loop over rows); write the statement vectorised")
        }
        Op::Transpose(_) => fail("it transposes a value indexed by the data's rows"),
        Op::Scan(_) => fail("a recursion runs through the rows in order"),
        Op::Rng(_) => fail("a random draw is not part of a log density"),
        Op::CumSum(_) => fail("a running sum runs through the rows in order"),
        Op::LogSumExp(_) | Op::Max(_) | Op::Min(_) => {
            fail("it reduces over the rows other than by a sum (log-sum-exp, max or min)")
        }
        Op::Cholesky(_) | Op::TriSolve(..) => fail("it factors or solves with a matrix of the data's rows"),
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => (Kind::Global, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::density::Want;
    use crate::graph::logjoint::eval_graph;
    use nalgebra::{DMatrix, DVector};

    /// Logistic regression on n rows of d columns, with a normal prior.
    fn logistic(n: usize, d: usize) -> Graph {
        let mut g = Graph::new(d, 0);
        let w = g
            .param_slice(0, Shape::Vector(d), &crate::graph::Constraint::NONE)
            .unwrap();
        let zero = g.scalar(0.0);
        let one = g.scalar(1.0);
        let prior = crate::dist::lpdf(&mut g, "normal", w, &[zero, one]).unwrap();
        g.add_target(prior).unwrap();
        let x: Vec<f64> = (0..n * d).map(|k| ((k * 7919) % 13) as f64 / 6.0 - 1.0).collect();
        let y: Vec<f64> = (0..n).map(|k| ((k * 31) % 2) as f64).collect();
        let xn = g.constant(Shape::Matrix(n, d), x);
        let yn = g.constant(Shape::Vector(n), y);
        let eta = g.matmul(xn, w).unwrap();
        let lik = crate::dist::lpdf(&mut g, "bernoulli_logit", yn, &[eta]).unwrap();
        g.add_target(lik).unwrap();
        g
    }

    fn value(g: &Graph, w: &DMatrix<f64>) -> (DVector<f64>, DMatrix<f64>) {
        let e = eval_graph(g, &DVector::zeros(0), w, Want::GRAD_W);
        (e.values, e.grad_w.unwrap())
    }

    #[test]
    fn global_plus_blocks_is_the_whole() {
        let g = logistic(50, 3);
        let split = RowSplit::of(&g).unwrap().unwrap();
        assert_eq!(split.n, 50);
        let w = DMatrix::from_fn(3, 4, |i, j| (i as f64 - 1.0) * 0.3 + j as f64 * 0.1);
        let (v, gw) = value(&g, &w);
        let (mut v2, mut gw2) = value(&split.global(&g), &w);
        for block in [0..17u32, 17..40, 40..50] {
            let rows: Vec<u32> = block.collect();
            let (vb, gb) = value(&split.slice(&g, &rows), &w);
            v2 += vb;
            gw2 += gb;
        }
        assert!((&v - &v2).amax() < 1e-9, "{v} vs {v2}");
        assert!((gw - gw2).amax() < 1e-9);
    }

    #[test]
    fn a_constant_added_to_a_row_sum_is_counted_once() {
        // Poisson regression: lowering adds −Σ log k! to the fused likelihood's sum
        let (n, d) = (30, 2);
        let mut g = Graph::new(d, 0);
        let w = g
            .param_slice(0, Shape::Vector(d), &crate::graph::Constraint::NONE)
            .unwrap();
        let x: Vec<f64> = (0..n * d).map(|k| ((k * 13) % 7) as f64 / 7.0 - 0.5).collect();
        let y: Vec<f64> = (0..n).map(|k| (k % 4) as f64).collect();
        let xn = g.constant(Shape::Matrix(n, d), x);
        let yn = g.constant(Shape::Vector(n), y);
        let eta = g.matmul(xn, w).unwrap();
        let lik = crate::dist::lpdf(&mut g, "poisson_log", yn, &[eta]).unwrap();
        g.add_target(lik).unwrap();
        let split = RowSplit::of(&g).unwrap().unwrap();
        let w = DMatrix::from_column_slice(2, 2, &[0.3, -0.2, 0.1, 0.4]);
        let (v, gw) = value(&g, &w);
        let (mut v2, mut gw2) = value(&split.global(&g), &w);
        for block in [0..11u32, 11..30] {
            let (vb, gb) = value(&split.slice(&g, &block.collect::<Vec<_>>()), &w);
            v2 += vb;
            gw2 += gb;
        }
        assert!((&v - &v2).amax() < 1e-9, "{v} vs {v2}");
        assert!((gw - gw2).amax() < 1e-9);
    }

    #[test]
    fn a_row_subset_is_those_rows_terms() {
        let g = logistic(20, 2);
        let split = RowSplit::of(&g).unwrap().unwrap();
        let w = DMatrix::from_column_slice(2, 1, &[0.4, -0.7]);
        // rows {3, 3, 8}: the sum of row 3's term twice and row 8's
        let one = |r: u32| value(&split.slice(&g, &[r]), &w).0[0];
        let three = value(&split.slice(&g, &[3, 3, 8]), &w).0[0];
        assert!((three - (2.0 * one(3) + one(8))).abs() < 1e-12);
    }

    #[test]
    fn a_transposed_row_vector_is_not_a_row_sum() {
        let (n, d) = (6, 2);
        let mut g = Graph::new(d, 0);
        let w = g
            .param_slice(0, Shape::Vector(d), &crate::graph::Constraint::NONE)
            .unwrap();
        let x = g.constant(Shape::Matrix(n, d), vec![0.5; n * d]);
        let eta = g.matmul(x, w).unwrap();
        let t = g.transpose(eta);
        let s = g.sum(t);
        g.add_target(s).unwrap();
        let err = RowSplit::of(&g).unwrap_err();
        assert_eq!(err.target, 0);
        assert!(err.reason.contains("transposes"), "{}", err.reason);
    }
}
