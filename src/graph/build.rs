//! The builder API lowering calls: one method per language construct. Operations whose
//! inputs are all constant are evaluated at once (constant folding), so data-only
//! expressions are stored once and never batched.

use super::eval::{eval_op, Arg};
use super::transform::{lower_transform, Constraint};
use super::{Error, Fun1, Fun2, Fun3, Graph, NodeId, Op, Shape, GATHER_ZERO};

/// The inputs an operation reads.
pub(crate) fn inputs(op: &Op) -> Vec<NodeId> {
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => vec![],
        Op::Unary(_, a)
        | Op::Transpose(a)
        | Op::Gather(a, _)
        | Op::Sum(a)
        | Op::CumSum(a)
        | Op::LogSumExp(a)
        | Op::LogSumExpRows(a)
        | Op::Max(a)
        | Op::Min(a)
        | Op::Cholesky(a) => vec![*a],
        Op::Support { x, .. } => vec![*x],
        Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::TriSolve(a, b) => vec![*a, *b],
        Op::Pack(ids) | Op::Assemble(ids, _) | Op::LikSum(_, ids) | Op::LikPoint(_, ids) => ids.clone(),
        Op::Ternary(_, ids) => ids.to_vec(),
        Op::Rng(r) => r.ids.clone(),
        Op::Scan(scan) => scan
            .inputs
            .iter()
            .flat_map(|i| i.nodes().iter().copied())
            .collect(),
    }
}

/// The [`Op::Assemble`] whose entry i is entry `entries[i].1` of node `entries[i].0`.
pub(crate) fn assemble_op(entries: &[(NodeId, u32)]) -> Op {
    let mut srcs: Vec<NodeId> = Vec::new();
    let mut slot: std::collections::HashMap<NodeId, u32> = std::collections::HashMap::new();
    let idx = entries
        .iter()
        .map(|&(id, k)| {
            let j = *slot.entry(id).or_insert_with(|| {
                srcs.push(id);
                (srcs.len() - 1) as u32
            });
            (j, k)
        })
        .collect();
    Op::Assemble(srcs, idx)
}

/// An operation with each input replaced by `f(input)`.
pub(crate) fn map_inputs(op: Op, f: impl Fn(NodeId) -> NodeId) -> Op {
    let all = |ids: Vec<NodeId>| ids.into_iter().map(&f).collect::<Vec<_>>();
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => op,
        Op::Unary(g, a) => Op::Unary(g, f(a)),
        Op::Binary(g, a, b) => Op::Binary(g, f(a), f(b)),
        Op::Ternary(g, ids) => Op::Ternary(g, ids.map(&f)),
        Op::MatMul(a, b) => Op::MatMul(f(a), f(b)),
        Op::Transpose(a) => Op::Transpose(f(a)),
        Op::Gather(a, idx) => Op::Gather(f(a), idx),
        Op::Pack(ids) => Op::Pack(all(ids)),
        Op::Assemble(ids, idx) => Op::Assemble(all(ids), idx),
        Op::LikSum(l, ids) => Op::LikSum(l, all(ids)),
        Op::LikPoint(l, ids) => Op::LikPoint(l, all(ids)),
        Op::Rng(mut r) => {
            r.ids = all(std::mem::take(&mut r.ids));
            Op::Rng(r)
        }
        Op::Sum(a) => Op::Sum(f(a)),
        Op::LogSumExp(a) => Op::LogSumExp(f(a)),
        Op::LogSumExpRows(a) => Op::LogSumExpRows(f(a)),
        Op::Max(a) => Op::Max(f(a)),
        Op::Min(a) => Op::Min(f(a)),
        Op::Cholesky(a) => Op::Cholesky(f(a)),
        Op::CumSum(a) => Op::CumSum(f(a)),
        Op::TriSolve(a, b) => Op::TriSolve(f(a), f(b)),
        Op::Support {
            x,
            lower,
            upper,
            strict,
        } => Op::Support {
            x: f(x),
            lower,
            upper,
            strict,
        },
        Op::Scan(mut scan) => {
            for i in &mut scan.inputs {
                i.map_nodes(&f);
            }
            Op::Scan(scan)
        }
    }
}

/// Call `f` on each input of an operation (as [`inputs`], without allocating: the
/// evaluator walks every node's inputs on each call).
pub(crate) fn each_input(op: &Op, mut f: impl FnMut(NodeId)) {
    match op {
        Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } => {}
        Op::Unary(_, a)
        | Op::Transpose(a)
        | Op::Gather(a, _)
        | Op::Sum(a)
        | Op::CumSum(a)
        | Op::LogSumExp(a)
        | Op::LogSumExpRows(a)
        | Op::Max(a)
        | Op::Min(a)
        | Op::Cholesky(a) => f(*a),
        Op::Support { x, .. } => f(*x),
        Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::TriSolve(a, b) => {
            f(*a);
            f(*b);
        }
        Op::Pack(ids) | Op::Assemble(ids, _) | Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
            ids.iter().copied().for_each(f)
        }
        Op::Ternary(_, ids) => ids.iter().copied().for_each(f),
        Op::Rng(r) => r.ids.iter().copied().for_each(f),
        Op::Scan(scan) => scan
            .inputs
            .iter()
            .flat_map(|i| i.nodes().iter().copied())
            .for_each(f),
    }
}

fn shape_err(op: &'static str, left: Shape, right: Shape) -> Error {
    Error::Shape { op, left, right }
}

impl Graph {
    /// Add a node, evaluating it now when every input is constant.
    pub(crate) fn add(&mut self, op: Op, shape: Shape) -> NodeId {
        let ins = inputs(&op);
        let all_const = ins.iter().all(|i| matches!(self.nodes[i.0].op, Op::Const(_)));
        if all_const && !matches!(op, Op::Param { .. } | Op::Hyper { .. } | Op::Const(_)) {
            let get = |id: NodeId| -> Arg<'_, f64> {
                match &self.nodes[id.0].op {
                    Op::Const(v) => Arg {
                        data: v,
                        size: v.len(),
                        batched: false,
                        constant: true,
                    },
                    _ => unreachable!("all inputs were checked to be constant"),
                }
            };
            let v = eval_op::<f64>(&op, shape, &get, 1);
            return self.push(Op::Const(v), shape);
        }
        self.push(op, shape)
    }

    /// A constant (data or literal), column-major.
    ///
    /// # Panics
    /// When `values` does not have `shape.size()` entries (a bug in the caller).
    pub fn constant(&mut self, shape: Shape, values: Vec<f64>) -> NodeId {
        assert_eq!(values.len(), shape.size(), "constant values must fill the shape");
        self.push(Op::Const(values), shape)
    }

    /// A scalar constant.
    pub fn scalar(&mut self, v: f64) -> NodeId {
        self.push(Op::Const(vec![v]), Shape::Scalar)
    }

    /// A `param` slice w[offset ..] of the given shape, constrained; the log-Jacobian of the
    /// transform is added to the target. Returns the constrained value.
    ///
    /// # Errors
    /// Never for valid shapes; [`Error::Shape`] signals a bug in the transform.
    pub fn param_slice(&mut self, offset: usize, shape: Shape, c: &Constraint) -> Result<NodeId, Error> {
        let u = self.push(Op::Param { offset }, shape);
        let (x, lj) = lower_transform(self, u, c)?;
        if let Some(lj) = lj {
            self.add_target(lj)?;
        }
        Ok(x)
    }

    /// A `hyper` slice θ[offset ..], constrained without a Jacobian.
    ///
    /// # Errors
    /// Never for valid shapes; [`Error::Shape`] signals a bug in the transform.
    pub fn hyper_slice(&mut self, offset: usize, shape: Shape, c: &Constraint) -> Result<NodeId, Error> {
        let u = self.push(Op::Hyper { offset }, shape);
        Ok(lower_transform(self, u, c)?.0)
    }

    /// An elementwise function.
    pub fn unary(&mut self, f: Fun1, a: NodeId) -> NodeId {
        let s = self.shape(a);
        self.add(Op::Unary(f, a), s)
    }

    /// An elementwise function of two arguments; a scalar broadcasts over the other.
    ///
    /// # Errors
    /// [`Error::Shape`] when neither is a scalar and the shapes differ.
    pub fn binary(&mut self, f: Fun2, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        let (sa, sb) = (self.shape(a), self.shape(b));
        if let Some(same) = self.identity_operand(f, a, b) {
            return Ok(same);
        }
        let shape = if sa.size() == 1 && sa == Shape::Scalar {
            sb
        } else if sb == Shape::Scalar || sa == sb {
            sa
        } else {
            return Err(shape_err("an elementwise operation", sa, sb));
        };
        Ok(self.add(Op::Binary(f, a, b), shape))
    }

    /// An elementwise function of three arguments; scalars broadcast over the others.
    ///
    /// # Errors
    /// [`Error::Shape`] when two non-scalar arguments have different shapes.
    pub fn ternary(&mut self, f: Fun3, args: [NodeId; 3]) -> Result<NodeId, Error> {
        let mut shape = Shape::Scalar;
        for &a in &args {
            let sa = self.shape(a);
            if sa == Shape::Scalar {
                continue;
            }
            if shape != Shape::Scalar && shape != sa {
                return Err(shape_err("an elementwise operation", shape, sa));
            }
            shape = sa;
        }
        Ok(self.add(Op::Ternary(f, args), shape))
    }

    /// A random draw ([`Op::Rng`]) of the given shape; never folded, even with constant
    /// arguments (each draw differs).
    pub fn rng(&mut self, draw: super::RngDraw, shape: Shape) -> NodeId {
        self.push(Op::Rng(Box::new(draw)), shape)
    }

    /// The operand that `f(a, b)` equals when the other is a scalar constant identity
    /// (`x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1`), so no node is added.
    #[allow(clippy::float_cmp)] // exact identities only: any other constant keeps its node
    fn identity_operand(&self, f: Fun2, a: NodeId, b: NodeId) -> Option<NodeId> {
        let is = |id: NodeId, v: f64| {
            self.shape(id) == Shape::Scalar && self.const_value(id).is_some_and(|c| c[0] == v)
        };
        match f {
            Fun2::Add if is(a, 0.0) => Some(b),
            Fun2::Add | Fun2::Sub if is(b, 0.0) => Some(a),
            Fun2::Mul if is(a, 1.0) => Some(b),
            Fun2::Mul | Fun2::Div if is(b, 1.0) => Some(a),
            _ => None,
        }
    }

    /// `a + b`.
    ///
    /// # Errors
    /// As [`Graph::binary`].
    pub fn add_nodes(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        self.binary(Fun2::Add, a, b)
    }

    /// `a - b`.
    ///
    /// # Errors
    /// As [`Graph::binary`].
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        self.binary(Fun2::Sub, a, b)
    }

    /// `a .* b`.
    ///
    /// # Errors
    /// As [`Graph::binary`].
    pub fn mul(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        self.binary(Fun2::Mul, a, b)
    }

    /// `a ./ b` (and `/` by a scalar).
    ///
    /// # Errors
    /// As [`Graph::binary`].
    pub fn div(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        self.binary(Fun2::Div, a, b)
    }

    /// `a ^ b`, elementwise.
    ///
    /// # Errors
    /// As [`Graph::binary`].
    pub fn pow(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        self.binary(Fun2::Pow, a, b)
    }

    /// Unary minus.
    pub fn neg(&mut self, a: NodeId) -> NodeId {
        self.unary(Fun1::Neg, a)
    }

    /// `a * b`: scalar times anything, matrix × vector, matrix × matrix, vᵀ·v.
    ///
    /// # Errors
    /// [`Error::Shape`] when the inner dimensions differ.
    pub fn times(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        if self.shape(a) == Shape::Scalar || self.shape(b) == Shape::Scalar {
            return self.binary(Fun2::Mul, a, b);
        }
        self.matmul(a, b)
    }

    /// The matrix product (a vector is an n×1 matrix; a transposed vector is 1×n).
    ///
    /// # Errors
    /// [`Error::Shape`] when the inner dimensions differ.
    pub fn matmul(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        let (sa, sb) = (self.shape(a), self.shape(b));
        if sa.cols() != sb.rows() {
            return Err(shape_err("a matrix product", sa, sb));
        }
        let shape = match (sa, sb) {
            (Shape::Matrix(1, _), Shape::Vector(_)) => Shape::Scalar,
            (_, Shape::Vector(_)) => Shape::Vector(sa.rows()),
            _ => Shape::Matrix(sa.rows(), sb.cols()),
        };
        Ok(self.add(Op::MatMul(a, b), shape))
    }

    /// `a'`: a vector becomes a 1×n matrix, an n×1 matrix a vector.
    pub fn transpose(&mut self, a: NodeId) -> NodeId {
        let s = self.shape(a);
        let shape = match s {
            Shape::Scalar => return a,
            _ if s.rows() == 1 => Shape::Vector(s.cols()),
            _ => Shape::Matrix(s.cols(), s.rows()),
        };
        self.add(Op::Transpose(a), shape)
    }

    /// Entries of `a` by 0-based flat column-major index ([`GATHER_ZERO`] gives 0).
    ///
    /// # Errors
    /// [`Error::Index`] when an index is outside `a`.
    pub fn gather_flat(&mut self, a: NodeId, idx: Vec<u32>, shape: Shape) -> Result<NodeId, Error> {
        let size = self.shape(a).size();
        if let Some(&bad) = idx.iter().find(|&&k| k != GATHER_ZERO && k as usize >= size) {
            return Err(Error::Index {
                index: i64::from(bad) + 1,
                size,
            });
        }
        Ok(self.add(Op::Gather(a, idx), shape))
    }

    fn check_1based(i: i64, n: usize) -> Result<u32, Error> {
        if i < 1 || i as usize > n {
            return Err(Error::Index { index: i, size: n });
        }
        Ok((i - 1) as u32)
    }

    /// `v[i]` (1-based) of a vector, or entry i of a scalar-sized value.
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn index(&mut self, a: NodeId, i: i64) -> Result<NodeId, Error> {
        let k = Self::check_1based(i, self.shape(a).size())?;
        self.gather_flat(a, vec![k], Shape::Scalar)
    }

    /// `M[i, j]` (1-based).
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn index2(&mut self, a: NodeId, i: i64, j: i64) -> Result<NodeId, Error> {
        let s = self.shape(a);
        let (r, c) = (Self::check_1based(i, s.rows())?, Self::check_1based(j, s.cols())?);
        self.gather_flat(a, vec![r + c * s.rows() as u32], Shape::Scalar)
    }

    /// `v[lo:hi]` (1-based, inclusive) of a vector.
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn slice(&mut self, a: NodeId, lo: i64, hi: i64) -> Result<NodeId, Error> {
        let n = self.shape(a).size();
        let ids: Vec<i64> = (lo..=hi).collect();
        let idx = ids
            .iter()
            .map(|&i| Self::check_1based(i, n))
            .collect::<Result<Vec<_>, _>>()?;
        let len = idx.len();
        self.gather_flat(a, idx, Shape::Vector(len))
    }

    /// `v[idx]`: gather by a 1-based integer array (`theta[school]`).
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn gather(&mut self, a: NodeId, idx: &[i64]) -> Result<NodeId, Error> {
        let n = self.shape(a).size();
        let idx = idx
            .iter()
            .map(|&i| Self::check_1based(i, n))
            .collect::<Result<Vec<_>, _>>()?;
        let len = idx.len();
        self.gather_flat(a, idx, Shape::Vector(len))
    }

    /// `M[r0:r1, c0:c1]` (1-based, inclusive); also `M[:, a:b]` and `M[a:b, :]`.
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn block(&mut self, a: NodeId, rows: (i64, i64), cols: (i64, i64)) -> Result<NodeId, Error> {
        let s = self.shape(a);
        let mut idx = Vec::new();
        for j in cols.0..=cols.1 {
            let c = Self::check_1based(j, s.cols())?;
            for i in rows.0..=rows.1 {
                let r = Self::check_1based(i, s.rows())?;
                idx.push(r + c * s.rows() as u32);
            }
        }
        let (nr, nc) = (
            (rows.1 - rows.0 + 1).max(0) as usize,
            (cols.1 - cols.0 + 1).max(0) as usize,
        );
        self.gather_flat(a, idx, Shape::Matrix(nr, nc))
    }

    /// `M[i]`: row i of a matrix, as a vector (also `row(M, i)`).
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn row(&mut self, a: NodeId, i: i64) -> Result<NodeId, Error> {
        let s = self.shape(a);
        let r = Self::check_1based(i, s.rows())?;
        let idx = (0..s.cols() as u32).map(|c| r + c * s.rows() as u32).collect();
        self.gather_flat(a, idx, Shape::Vector(s.cols()))
    }

    /// `col(M, j)`: column j as a vector.
    ///
    /// # Errors
    /// [`Error::Index`] out of range.
    pub fn col(&mut self, a: NodeId, j: i64) -> Result<NodeId, Error> {
        let s = self.shape(a);
        let c = Self::check_1based(j, s.cols())?;
        let idx = (0..s.rows() as u32).map(|r| r + c * s.rows() as u32).collect();
        self.gather_flat(a, idx, Shape::Vector(s.rows()))
    }

    /// A vector or matrix literal from scalar nodes, given column-major.
    ///
    /// # Errors
    /// [`Error::Shape`] when an entry is not a scalar or the count is wrong.
    pub fn pack(&mut self, shape: Shape, entries: Vec<NodeId>) -> Result<NodeId, Error> {
        if let Some(&bad) = entries.iter().find(|&&e| self.shape(e) != Shape::Scalar) {
            return Err(shape_err("a literal entry", self.shape(bad), Shape::Scalar));
        }
        if entries.len() != shape.size() {
            return Err(shape_err("a literal", Shape::Vector(entries.len()), shape));
        }
        Ok(self.add(Op::Pack(entries), shape))
    }

    /// A value of `shape` whose entry i is entry `entries[i].1` (flat, column-major) of node
    /// `entries[i].0`: one gather when every entry comes from one node, the node itself when
    /// that gather is the identity, else an [`Op::Assemble`].
    ///
    /// # Errors
    /// [`Error::Shape`] when the count is wrong; [`Error::Index`] when a position is outside
    /// its node.
    pub fn assemble(&mut self, shape: Shape, entries: &[(NodeId, u32)]) -> Result<NodeId, Error> {
        if entries.len() != shape.size() {
            return Err(shape_err(
                "an assembled value",
                Shape::Vector(entries.len()),
                shape,
            ));
        }
        if let Some(&(bad, k)) = entries
            .iter()
            .find(|(id, k)| *k as usize >= self.shape(*id).size())
        {
            return Err(Error::Index {
                index: i64::from(k) + 1,
                size: self.shape(bad).size(),
            });
        }
        let first = entries.first().map(|e| e.0);
        if let Some(src) = first.filter(|&f| entries.iter().all(|e| e.0 == f)) {
            let identity =
                self.shape(src) == shape && entries.iter().enumerate().all(|(i, e)| e.1 as usize == i);
            if identity {
                return Ok(src);
            }
            if self.shape(src) == Shape::Scalar {
                return Ok(self.add(Op::Gather(src, vec![0; entries.len()]), shape));
            }
            return Ok(self.add(Op::Gather(src, entries.iter().map(|e| e.1).collect()), shape));
        }
        Ok(self.add(assemble_op(entries), shape))
    }

    /// `sum(x)`.
    pub fn sum(&mut self, a: NodeId) -> NodeId {
        if self.shape(a) == Shape::Scalar {
            return a;
        }
        self.add(Op::Sum(a), Shape::Scalar)
    }

    /// `mean(x)`.
    ///
    /// # Errors
    /// Never for valid shapes.
    pub fn mean(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let n = self.shape(a).size() as f64;
        let s = self.sum(a);
        let k = self.scalar(1.0 / n);
        self.mul(k, s)
    }

    /// `dot(a, b)`.
    ///
    /// # Errors
    /// [`Error::Shape`] when the lengths differ.
    pub fn dot(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, Error> {
        let p = self.mul(a, b)?;
        Ok(self.sum(p))
    }

    /// `log_sum_exp(x)`.
    pub fn log_sum_exp(&mut self, a: NodeId) -> NodeId {
        self.add(Op::LogSumExp(a), Shape::Scalar)
    }

    /// The running sums of a vector, `cumulative_sum(x)` (a scalar is its own).
    pub fn cumsum(&mut self, a: NodeId) -> NodeId {
        let s = self.shape(a);
        if s == Shape::Scalar {
            return a;
        }
        self.add(Op::CumSum(a), s)
    }

    /// log Σ exp over each row of a matrix.
    pub fn log_sum_exp_rows(&mut self, a: NodeId) -> NodeId {
        let n = self.shape(a).rows();
        self.add(Op::LogSumExpRows(a), Shape::Vector(n))
    }

    /// `log_softmax(x) = x − log_sum_exp(x)`.
    ///
    /// # Errors
    /// Never for valid shapes.
    pub fn log_softmax(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let l = self.log_sum_exp(a);
        self.sub(a, l)
    }

    /// `softmax(x)`.
    ///
    /// # Errors
    /// Never for valid shapes.
    pub fn softmax(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let l = self.log_softmax(a)?;
        Ok(self.unary(Fun1::Exp, l))
    }

    /// `max(x)` of a vector or matrix, or `max(a, b)` elementwise via [`Graph::binary`].
    pub fn max(&mut self, a: NodeId) -> NodeId {
        self.add(Op::Max(a), Shape::Scalar)
    }

    /// `min(x)` of a vector or matrix.
    pub fn min(&mut self, a: NodeId) -> NodeId {
        self.add(Op::Min(a), Shape::Scalar)
    }

    /// `variance(x)`, with the n − 1 denominator as in Stan.
    ///
    /// # Errors
    /// Never for valid shapes.
    pub fn variance(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let n = self.shape(a).size() as f64;
        let m = self.mean(a)?;
        let d = self.sub(a, m)?;
        let sq = self.unary(Fun1::Square, d);
        let ss = self.sum(sq);
        let k = self.scalar(1.0 / (n - 1.0));
        self.mul(k, ss)
    }

    /// `sd(x)`.
    ///
    /// # Errors
    /// Never for valid shapes.
    pub fn sd(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let v = self.variance(a)?;
        Ok(self.unary(Fun1::Sqrt, v))
    }

    /// `rep_vector(x, n)`: a scalar repeated, or a vector as is when n matches.
    pub fn rep_vector(&mut self, x: NodeId, n: usize) -> NodeId {
        self.add(Op::Gather(x, vec![0; n]), Shape::Vector(n))
    }

    /// `rep_matrix(x, m, n)` of a scalar.
    pub fn rep_matrix(&mut self, x: NodeId, m: usize, n: usize) -> NodeId {
        self.add(Op::Gather(x, vec![0; m * n]), Shape::Matrix(m, n))
    }

    /// `diag_matrix(v)`.
    pub fn diag_matrix(&mut self, v: NodeId) -> NodeId {
        let n = self.shape(v).size();
        let mut idx = vec![GATHER_ZERO; n * n];
        for i in 0..n {
            idx[i + i * n] = i as u32;
        }
        self.add(Op::Gather(v, idx), Shape::Matrix(n, n))
    }

    /// `cholesky(S)` of a symmetric positive definite matrix.
    ///
    /// # Errors
    /// [`Error::Shape`] when the matrix is not square.
    pub fn cholesky(&mut self, a: NodeId) -> Result<NodeId, Error> {
        let s = self.shape(a);
        if s.rows() != s.cols() {
            return Err(shape_err("cholesky", s, s));
        }
        Ok(self.add(Op::Cholesky(a), Shape::Matrix(s.rows(), s.rows())))
    }

    /// L⁻¹ b for a lower-triangular L and a vector or matrix b.
    ///
    /// # Errors
    /// [`Error::Shape`] when the sizes differ.
    pub fn tri_solve(&mut self, l: NodeId, b: NodeId) -> Result<NodeId, Error> {
        let (sl, sb) = (self.shape(l), self.shape(b));
        if sl.rows() != sl.cols() || sl.cols() != sb.rows() {
            return Err(shape_err("a triangular solve", sl, sb));
        }
        Ok(self.add(Op::TriSolve(l, b), sb))
    }

    /// The summed log density of a fused likelihood (operands as [`super::Lik`] lists them,
    /// each of one size or one value); constant-folded when every operand is constant.
    pub fn lik_sum(&mut self, lik: super::Lik, args: &[NodeId]) -> NodeId {
        self.add(Op::LikSum(lik, args.to_vec()), Shape::Scalar)
    }

    /// The per-observation log densities of a fused likelihood (a vector of the largest
    /// operand's size), for `predict`.
    pub fn lik_point(&mut self, lik: super::Lik, args: &[NodeId]) -> NodeId {
        let n = args.iter().map(|&a| self.shape(a).size()).max().unwrap_or(1);
        self.add(Op::LikPoint(lik, args.to_vec()), Shape::Vector(n))
    }

    /// 0 when every entry of x lies in the interval, −∞ otherwise.
    pub fn support(&mut self, x: NodeId, lower: f64, upper: f64, strict: bool) -> NodeId {
        self.add(
            Op::Support {
                x,
                lower,
                upper,
                strict,
            },
            Shape::Scalar,
        )
    }

    /// `rows(x)`, `cols(x)` as constants.
    pub fn rows_cols(&mut self, a: NodeId) -> (NodeId, NodeId) {
        let s = self.shape(a);
        (self.scalar(s.rows() as f64), self.scalar(s.cols() as f64))
    }

    /// A built-in function of LANGUAGE.md by name, for lowering.
    ///
    /// Integer arguments (sizes of `rep_vector`, indices of `col`/`row`) must be constant
    /// nodes.
    ///
    /// # Errors
    /// [`Error::Dist`] for an unknown name or wrong argument count; shape errors as the ops.
    pub fn call(&mut self, name: &str, args: &[NodeId]) -> Result<NodeId, Error> {
        if let Some(f) = fun1_by_name(name) {
            let [a] = expect_args::<1>(name, args)?;
            return Ok(self.unary(f, a));
        }
        let int_arg = |g: &Graph, id: NodeId| -> Result<i64, Error> {
            g.const_value(id)
                .and_then(|v| v.first().copied())
                .map(|v| v as i64)
                .ok_or_else(|| Error::Dist(format!("`{name}` needs a constant integer argument")))
        };
        match (name, args.len()) {
            ("sum", 1) => Ok(self.sum(args[0])),
            ("mean", 1) => self.mean(args[0]),
            ("dot", 2) => self.dot(args[0], args[1]),
            ("rows", 1) => Ok(self.rows_cols(args[0]).0),
            ("cols", 1) => Ok(self.rows_cols(args[0]).1),
            ("log_sum_exp", 1) => Ok(self.log_sum_exp(args[0])),
            ("log_sum_exp", 2) => {
                let p = self.pack(Shape::Vector(2), args.to_vec())?;
                Ok(self.log_sum_exp(p))
            }
            ("softmax", 1) => self.softmax(args[0]),
            ("log_softmax", 1) => self.log_softmax(args[0]),
            ("rep_vector", 2) => {
                let n = int_arg(self, args[1])?;
                Ok(self.rep_vector(args[0], n.max(0) as usize))
            }
            ("rep_matrix", 3) => {
                let (m, n) = (int_arg(self, args[1])?, int_arg(self, args[2])?);
                Ok(self.rep_matrix(args[0], m.max(0) as usize, n.max(0) as usize))
            }
            ("col", 2) => {
                let j = int_arg(self, args[1])?;
                self.col(args[0], j)
            }
            ("row", 2) => {
                let i = int_arg(self, args[1])?;
                self.row(args[0], i)
            }
            ("diag_matrix", 1) => Ok(self.diag_matrix(args[0])),
            ("cholesky" | "cholesky_decompose", 1) => self.cholesky(args[0]),
            ("sd", 1) => self.sd(args[0]),
            ("variance", 1) => self.variance(args[0]),
            ("min", 1) => Ok(self.min(args[0])),
            ("max", 1) => Ok(self.max(args[0])),
            ("min", 2) => self.binary(Fun2::Min, args[0], args[1]),
            ("max", 2) => self.binary(Fun2::Max, args[0], args[1]),
            _ => Err(Error::Dist(format!(
                "unknown function `{name}` with {} arguments",
                args.len()
            ))),
        }
    }
}

fn expect_args<const N: usize>(name: &str, args: &[NodeId]) -> Result<[NodeId; N], Error> {
    args.try_into()
        .map_err(|_| Error::Dist(format!("`{name}` takes {N} argument(s), got {}", args.len())))
}

/// The elementwise built-in of that name.
pub fn fun1_by_name(name: &str) -> Option<Fun1> {
    Some(match name {
        "exp" => Fun1::Exp,
        "log" => Fun1::Log,
        "log1p" => Fun1::Log1p,
        "expm1" => Fun1::Expm1,
        "sqrt" => Fun1::Sqrt,
        "square" => Fun1::Square,
        "abs" => Fun1::Abs,
        "sin" => Fun1::Sin,
        "cos" => Fun1::Cos,
        "tanh" => Fun1::Tanh,
        "inv_logit" => Fun1::InvLogit,
        "logit" => Fun1::Logit,
        "log_inv_logit" => Fun1::LogInvLogit,
        "log1m_inv_logit" => Fun1::Log1mInvLogit,
        "lgamma" => Fun1::Lgamma,
        _ => return None,
    })
}
