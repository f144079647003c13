//! The single-point value + gradient (the path L-BFGS, Pathfinder and NUTS take): a graph
//! compiled once into a flat instruction list over one preallocated buffer of values and
//! one of adjoints, with no batch dimension.
//!
//! Input: a [`Graph`]. Output: [`PointEval`], whose [`PointEval::value_grad`] gives
//! log p̃(w | θ) and ∇_w at one point. Every node has a fixed place in the value buffer
//! (constants are copied in once, when a thread's buffer changes owner) and the same place
//! in the adjoint buffer, so a call allocates nothing for the common operations: scalar and
//! elementwise arithmetic, elementwise functions, gathers, packs, assembled locals, sums and
//! the fused `normal`/`cauchy` likelihoods run on slices of the two buffers. A run of
//! scalar operations each reading the previous one's result (a step of an unrolled
//! recursion) is one instruction, a chain, whose running value and adjoint stay in
//! registers. The rarer operations reuse the batched evaluator's code for one column.
//!
//! The arithmetic is that of the batched path at S = 1 ([`super::eval`] and
//! [`crate::autodiff::reverse`]): the same formulas, the same SIMD kernels and the adjoints
//! accumulated in the same order, so values and gradients are equal to the bit (the tests
//! check it on every example and posteriordb model of the repository).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::eval::{argext, batched_mask, binary, broadcast_at, eval_op, fused_output, tri_solve_t, Arg};
use super::fused;
use super::{Fun1, Fun2, Graph, Lik, NodeId, Op, GATHER_ZERO};
use crate::autodiff::reverse::{back_cholesky, d_binary, d_special2, d_ternary, d_unary, is_special2};
use crate::autodiff::{gemv, Scalar};
use crate::dist::HALF_LOG_2PI;

#[path = "point_jit.rs"]
mod jit;

pub use jit::{policy as jit_policy, set_policy as set_jit_policy, Policy as JitPolicy};

/// Calls at one point after which a graph's tape is compiled to machine code under
/// [`JitPolicy::Auto`].
pub fn jit_auto_after() -> u32 {
    jit::AUTO_AFTER
}

/// Where a node's value lives in the buffers.
#[derive(Debug, Clone, Copy)]
struct Slot {
    off: u32,
    size: u32,
    /// Depends on w (and so has an adjoint).
    batched: bool,
    constant: bool,
}

impl Slot {
    #[inline(always)]
    fn range(self) -> std::ops::Range<usize> {
        self.off as usize..(self.off + self.size) as usize
    }
}

/// The operands of a binary operation on single values: offsets, and whether each operand
/// takes an adjoint.
#[derive(Debug, Clone, Copy)]
struct Bin1 {
    a: u32,
    b: u32,
    out: u32,
    da: bool,
    db: bool,
}

/// One step of the compiled tape.
#[derive(Debug, Clone, Copy)]
enum Ins {
    /// w[w .. w + n] into the node at `out`.
    Param {
        out: u32,
        w: u32,
        n: u32,
    },
    /// θ[t .. t + n] into the node at `out`.
    Hyper {
        out: u32,
        t: u32,
        n: u32,
    },
    /// `+`, `−`, `*`, `/` of two single values (the nodes of an unrolled recursion).
    Add1(Bin1),
    Sub1(Bin1),
    Mul1(Bin1),
    Div1(Bin1),
    /// Any other function of two single values.
    Scalar2 {
        f: Fun2,
        op: Bin1,
        b_const: bool,
    },
    /// `n` consecutive entries from `src` into `out` (a gather of a contiguous range:
    /// `h[2:T]`, `h[1]`); `d`: the source takes an adjoint.
    Copy {
        src: u32,
        out: u32,
        n: u32,
        d: bool,
    },
    /// A run of scalar operations, each but the first taking the previous one's result
    /// as an operand (`links[from..to]`): the running value stays in a register instead of
    /// a store and a load per node, and the reverse sweep passes its adjoint down the run
    /// the same way.
    Chain {
        from: u32,
        to: u32,
        /// The last link's result depends on w.
        batched: bool,
    },
    /// Any other node, by its index in the graph.
    Node(u32),
}

/// What one link of a [`Ins::Chain`] computes from the running value `acc` and the other
/// operand `o` (`L`: `acc` is the left operand, `R`: the right one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LinkOp {
    Add,
    SubL,
    SubR,
    Mul,
    DivL,
    DivR,
    /// The link's `f`.
    Unary,
}

/// One scalar operation of a chain: the running value (for the first link, the value at
/// `head`) combined with the value at `other` (binary operations) into `out`.
#[derive(Debug, Clone, Copy)]
struct Link {
    op: LinkOp,
    f: Fun1,
    /// Where the running value is stored (for the first link: read from).
    head: u32,
    other: u32,
    out: u32,
    /// Whether the running value and the other operand take adjoints.
    d_acc: bool,
    d_other: bool,
}

impl Link {
    /// The link's value (the batched path's formula for its node at one value; `+` and `*`
    /// give the same bits in either operand order).
    #[inline(always)]
    fn apply(&self, acc: f64, vals: &[f64]) -> f64 {
        if self.op <= LinkOp::Mul {
            // the four cheap ones computed and one kept, without a jump per link (the
            // links of a recursion alternate between a few operations)
            let o = vals[self.other as usize];
            let (sum, left, right, prod) = (acc + o, acc - o, o - acc, acc * o);
            return match self.op {
                LinkOp::Add => sum,
                LinkOp::SubL => left,
                LinkOp::SubR => right,
                _ => prod,
            };
        }
        match self.op {
            LinkOp::DivL => acc / vals[self.other as usize],
            LinkOp::DivR => vals[self.other as usize] / acc,
            _ => crate::autodiff::unary_one(self.f, acc),
        }
    }

    /// ȳ times the partials of the link's value in the running value and in the other
    /// operand, in the form the reverse of `Add1` … `Div1` and of a unary node compute
    /// them: ȳ · (±1) (ȳ · (−1) and −ȳ differ at most in the sign of a NaN, which is
    /// reported as −∞ either way), ȳ times the other factor, ȳ/b as ȳ · b⁻¹, ȳ · (−v/b),
    /// ȳ · f′. `acc` is the running value, `v` the link's value.
    #[inline(always)]
    fn terms(&self, yb: f64, acc: f64, vals: &[f64]) -> (f64, f64) {
        if self.op <= LinkOp::Mul {
            let o = vals[self.other as usize];
            let k = self.op as usize;
            let (fa, fo) = ([1.0, 1.0, -1.0, o][k], [1.0, -1.0, 1.0, acc][k]);
            return (yb * fa, yb * fo);
        }
        let v = vals[self.out as usize];
        match self.op {
            LinkOp::DivL => {
                let o = vals[self.other as usize];
                (yb * o.recip(), yb * (-v / o))
            }
            LinkOp::DivR => (yb * (-v / acc), yb * acc.recip()),
            _ => (yb * d_unary(self.f, acc, v), 0.0),
        }
    }
}

/// Buffers of one thread, kept between calls: the values (constants in place for the
/// compiled graph `owner`), the adjoints, and the fused likelihoods' partials.
#[derive(Default)]
struct Scratch {
    owner: u64,
    /// The θ whose θ-only values `vals` holds (compared bit by bit), if any.
    theta_at: Option<Vec<f64>>,
    vals: Vec<f64>,
    adj: Vec<f64>,
    aux: Vec<f64>,
    tmp: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Identifies a compiled graph, so a thread's buffers know whose constants they hold.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A graph compiled for single-point value + gradient ([module docs](self)).
#[derive(Debug, Clone)]
pub struct PointEval {
    id: u64,
    dim: usize,
    /// The value buffer's initial contents: every constant in its slot.
    image: Vec<f64>,
    slots: Vec<Slot>,
    /// The instructions of the nodes that depend on w, in order (θ-only nodes come first,
    /// from `theta_ins`, which no instruction here writes).
    ins: Vec<Ins>,
    /// The instructions of the nodes that depend on θ alone (RBF features of a learned
    /// width and centres): run only when θ differs from the θ the thread's buffers hold,
    /// so a mode search at fixed θ computes them once, not at every point.
    theta_ins: Vec<Ins>,
    /// The links of the [`Ins::Chain`] instructions.
    links: Vec<Link>,
    /// Where the slots of the nodes that depend on w start: the adjoints from there on
    /// (the only ones the reverse sweep writes) are zeroed before each sweep.
    zero_from: u32,
    /// The instructions of the nodes that depend on w, last first: the reverse sweep.
    rev: Vec<Ins>,
    targets: Vec<u32>,
    /// Per node: where its fused likelihood partials start in the aux buffer.
    aux_off: Vec<u32>,
    aux_len: usize,
    /// The longest fused likelihood (scratch for its per-observation terms).
    tmp_len: usize,
    /// Per fused `normal`/`cauchy` node with a constant vector of scales: their logs,
    /// computed once by the kernel the batched path calls on every evaluation.
    log_sigma: Vec<Option<Box<[f64]>>>,
    /// The graph's size when compiled (a graph changed since is compiled again).
    fingerprint: (usize, usize),
    /// The graph compiled, when it is not the caller's: a graph with scans is compiled
    /// unrolled ([`super::scan::expand`]), one instruction per step's node.
    unrolled: Option<Box<Graph>>,
    /// The tape as machine code, once compiled (shared by clones).
    jit: Arc<JitState>,
}

/// Calls so far and the machine code of one compiled tape ([`jit`]).
#[derive(Debug, Default)]
struct JitState {
    calls: AtomicU32,
    code: OnceLock<Option<jit::Jit>>,
}

impl PointEval {
    /// Compile a graph; `None` when it has an operation this path does not take (the
    /// pointwise likelihoods of `predict` graphs): the batched path is used then.
    pub fn compile(g: &Graph) -> Option<PointEval> {
        if !g.nodes.iter().any(|n| matches!(n.op, Op::Scan(_))) {
            return PointEval::compile_unrolled(g);
        }
        let unrolled = super::scan::expand(g);
        let mut p = PointEval::compile_unrolled(&unrolled)?;
        p.fingerprint = (g.nodes.len(), g.targets.len());
        p.unrolled = Some(Box::new(unrolled));
        Some(p)
    }

    fn compile_unrolled(g: &Graph) -> Option<PointEval> {
        let batched = batched_mask(g);
        // the nodes that do not depend on w first, then those that do (each group in graph
        // order, so every node's inputs lie below it): the adjoints the reverse sweep
        // writes are one range at the end, zeroed in one go
        let mut slots = Vec::with_capacity(g.nodes.len());
        for (k, node) in g.nodes.iter().enumerate() {
            slots.push(Slot {
                off: 0,
                size: u32::try_from(node.shape.size()).ok()?,
                batched: batched[k],
                constant: matches!(node.op, Op::Const(_)),
            });
        }
        let mut off = 0u32;
        for group in [false, true] {
            for slot in slots.iter_mut().filter(|s| s.batched == group) {
                slot.off = off;
                off = off.checked_add(slot.size)?;
            }
        }
        let zero_from = slots.iter().filter(|s| !s.batched).map(|s| s.size).sum::<u32>();
        let mut image = vec![0.0; off as usize];
        let (mut aux_off, mut aux_len, mut tmp_len) = (vec![0u32; g.nodes.len()], 0usize, 0usize);
        let mut log_sigma: Vec<Option<Box<[f64]>>> = vec![None; g.nodes.len()];
        let mut ins = Vec::with_capacity(g.nodes.len());
        // the node of each instruction (for the chains)
        let mut ins_node = Vec::with_capacity(g.nodes.len());
        for (k, node) in g.nodes.iter().enumerate() {
            let out = slots[k].off;
            if !matches!(node.op, Op::Const(_)) {
                ins_node.push(k);
            }
            match &node.op {
                Op::Const(v) => image[slots[k].range()].copy_from_slice(v),
                Op::Param { offset } => ins.push(Ins::Param {
                    out,
                    w: u32::try_from(*offset).ok()?,
                    n: slots[k].size,
                }),
                Op::Hyper { offset } => ins.push(Ins::Hyper {
                    out,
                    t: u32::try_from(*offset).ok()?,
                    n: slots[k].size,
                }),
                Op::Binary(f, a, b) if slots[k].size == 1 && slots[a.0].size == 1 && slots[b.0].size == 1 => {
                    let op = Bin1 {
                        a: slots[a.0].off,
                        b: slots[b.0].off,
                        out,
                        da: slots[a.0].batched,
                        db: slots[b.0].batched,
                    };
                    ins.push(match f {
                        Fun2::Add => Ins::Add1(op),
                        Fun2::Sub => Ins::Sub1(op),
                        Fun2::Mul => Ins::Mul1(op),
                        Fun2::Div => Ins::Div1(op),
                        _ => Ins::Scalar2 {
                            f: *f,
                            op,
                            b_const: slots[b.0].constant,
                        },
                    });
                }
                Op::Gather(a, idx)
                    if idx
                        .iter()
                        .enumerate()
                        .all(|(i, &m)| m != GATHER_ZERO && m as usize == idx[0] as usize + i) =>
                {
                    ins.push(Ins::Copy {
                        src: slots[a.0].off + idx.first().copied().unwrap_or(0),
                        out,
                        n: slots[k].size,
                        d: slots[a.0].batched,
                    });
                }
                Op::LikSum(lik, ids) | Op::LikPoint(lik, ids) => {
                    let n = ids.iter().map(|i| slots[i.0].size as usize).max().unwrap_or(0);
                    let blocks = ids.iter().filter(|i| !slots[i.0].constant).count();
                    aux_off[k] = u32::try_from(aux_len).ok()?;
                    aux_len += blocks * n;
                    tmp_len = tmp_len.max(n);
                    // (the summed form's fast path for a constant scale)
                    let scale = match lik {
                        Lik::Normal | Lik::Cauchy if matches!(node.op, Op::LikSum(..)) => {
                            ids.get(2).and_then(|&i| g.const_value(i))
                        }
                        _ => None,
                    };
                    if let Some(sd) = scale {
                        // as the kernel computes them: `ln` for one scale, the SIMD `log`
                        // kernel for a vector of scales
                        let logs = if let [v] = *sd {
                            vec![v.ln()]
                        } else {
                            let mut logs = sd.to_vec();
                            f64::map_in_place(Fun1::Log, &mut logs);
                            logs
                        };
                        log_sigma[k] = Some(logs.into_boxed_slice());
                    }
                    ins.push(Ins::Node(k as u32));
                }
                _ => ins.push(Ins::Node(k as u32)),
            }
        }
        let (ins, links) = chains(g, &slots, ins, &ins_node);
        // whether an instruction's output depends on w
        let on_w = |i: &Ins| match *i {
            Ins::Param { .. } => true,
            Ins::Hyper { .. } => false,
            Ins::Add1(o) | Ins::Sub1(o) | Ins::Mul1(o) | Ins::Div1(o) | Ins::Scalar2 { op: o, .. } => {
                o.da || o.db
            }
            Ins::Chain { batched, .. } => batched,
            Ins::Copy { d, .. } => d,
            Ins::Node(k) => slots[k as usize].batched,
        };
        let (ins, theta_ins): (Vec<Ins>, Vec<Ins>) = ins.into_iter().partition(on_w);
        let rev = ins.iter().rev().copied().collect();
        Some(PointEval {
            theta_ins,
            rev,
            zero_from,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            dim: g.dim,
            image,
            slots,
            ins,
            links,
            targets: g.targets.iter().map(|t| t.0 as u32).collect(),
            aux_off,
            aux_len,
            tmp_len,
            log_sigma,
            fingerprint: (g.nodes.len(), g.targets.len()),
            unrolled: None,
            jit: Arc::default(),
        })
    }

    /// Whether this was compiled from a graph of `g`'s size (a cheap staleness check).
    pub fn fits(&self, g: &Graph) -> bool {
        self.fingerprint == (g.nodes.len(), g.targets.len()) && self.dim == g.dim
    }

    /// log p̃(w | θ) with ∇_w written to `grad` (length D), as the batched path gives it at
    /// one column: a non-finite value or gradient comes back as −∞ with a zero gradient.
    pub fn value_grad(&self, g: &Graph, theta: &[f64], w: &[f64], grad: &mut [f64]) -> f64 {
        let g = self.unrolled.as_deref().unwrap_or(g);
        self.run_on_scratch(g, theta, w, grad, self.machine_code(g))
    }

    /// [`PointEval::value_grad`] by the tape's machine code, compiled now if it is not yet,
    /// whatever the [policy](jit_policy); `None` when it cannot be compiled (no code
    /// generator for this host, or a graph too large). For tests and benchmarks.
    pub fn value_grad_compiled(&self, g: &Graph, theta: &[f64], w: &[f64], grad: &mut [f64]) -> Option<f64> {
        let g = self.unrolled.as_deref().unwrap_or(g);
        let code = self.compiled(g)?;
        Some(self.run_on_scratch(g, theta, w, grad, Some(code)))
    }

    /// [`PointEval::run`] on this thread's buffers.
    fn run_on_scratch(
        &self,
        g: &Graph,
        theta: &[f64],
        w: &[f64],
        grad: &mut [f64],
        code: Option<&jit::Jit>,
    ) -> f64 {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut s) => self.run(g, theta, w, grad, &mut s, code),
            // re-entered on this thread (never expected): buffers of its own
            Err(_) => self.run(g, theta, w, grad, &mut Scratch::default(), code),
        })
    }

    /// The tape's machine code, compiled now if it is not yet.
    fn compiled(&self, g: &Graph) -> Option<&jit::Jit> {
        self.jit.code.get_or_init(|| jit::compile(self, g)).as_ref()
    }

    /// Whether the tape has been compiled to machine code.
    pub fn is_compiled(&self) -> bool {
        matches!(self.jit.code.get(), Some(Some(_)))
    }

    fn run(
        &self,
        g: &Graph,
        theta: &[f64],
        w: &[f64],
        grad: &mut [f64],
        s: &mut Scratch,
        code: Option<&jit::Jit>,
    ) -> f64 {
        if s.owner != self.id {
            s.vals.clear();
            s.vals.extend_from_slice(&self.image);
            s.adj.clear();
            s.adj.resize(self.image.len(), 0.0);
            s.aux.resize(self.aux_len, 0.0);
            s.tmp.resize(4 * self.tmp_len, 0.0);
            s.owner = self.id;
            s.theta_at = None;
        }
        let same_theta = s.theta_at.as_deref().is_some_and(|t| {
            t.len() == theta.len() && t.iter().zip(theta).all(|(a, b)| a.to_bits() == b.to_bits())
        });
        let Scratch {
            vals,
            adj,
            aux,
            tmp,
            theta_at,
            ..
        } = s;
        if !same_theta {
            for &ins in &self.theta_ins {
                self.forward_ins(ins, g, theta, w, vals, aux, tmp);
            }
            *theta_at = Some(theta.to_vec());
        }
        // the buffers as the machine code takes them (made afresh for each sweep, after the
        // slices' own uses)
        let ctx = |vals: &mut Vec<f64>,
                   adj: &mut Vec<f64>,
                   aux: &mut Vec<f64>,
                   tmp: &mut Vec<f64>,
                   grad: &mut [f64]| {
            jit::Ctx {
                p: self,
                g,
                theta,
                w,
                grad: grad.as_mut_ptr(),
                n_vals: vals.len(),
                n_aux: aux.len(),
                n_tmp: tmp.len(),
                vals: vals.as_mut_ptr(),
                adj: adj.as_mut_ptr(),
                aux: aux.as_mut_ptr(),
                tmp: tmp.as_mut_ptr(),
            }
        };
        match code {
            // SAFETY: the buffers of this call for the graph the code was compiled from
            Some(code) => unsafe { code.forward(&mut ctx(vals, adj, aux, tmp, grad)) },
            None => {
                for &ins in &self.ins {
                    self.forward_ins(ins, g, theta, w, vals, aux, tmp);
                }
            }
        }
        let mut value = 0.0;
        for &t in &self.targets {
            value += vals[self.slots[t as usize].off as usize];
        }
        // only the slots of nodes that depend on w are ever written in the reverse sweep
        adj[self.zero_from as usize..].fill(0.0);
        grad.iter_mut().for_each(|x| *x = 0.0);
        for &t in &self.targets {
            let slot = self.slots[t as usize];
            if slot.batched {
                adj[slot.off as usize] += 1.0;
            }
        }
        match code {
            // SAFETY: as above
            Some(code) => unsafe { code.reverse(&mut ctx(vals, adj, aux, tmp, grad)) },
            None => {
                for &ins in &self.rev {
                    self.reverse_ins(ins, g, vals, adj, aux, grad);
                }
            }
        }
        if !value.is_finite() || grad.iter().any(|x| !x.is_finite()) {
            grad.iter_mut().for_each(|x| *x = 0.0);
            return f64::NEG_INFINITY;
        }
        value
    }

    /// The tape's machine code when the policy ([`jit::policy`]) says to use it: compiled
    /// now if it is due and not yet compiled.
    fn machine_code(&self, g: &Graph) -> Option<&jit::Jit> {
        let due = match jit::policy() {
            JitPolicy::Never => false,
            JitPolicy::Always => true,
            JitPolicy::Auto => {
                self.jit.code.get().is_some()
                    || self.jit.calls.fetch_add(1, Ordering::Relaxed) + 1 >= jit::AUTO_AFTER
            }
        };
        if !due {
            return None;
        }
        self.compiled(g)
    }

    #[inline(always)]
    fn arg<'v>(&self, vals: &'v [f64], id: NodeId) -> Arg<'v, f64> {
        let slot = self.slots[id.0];
        Arg {
            data: &vals[slot.range()],
            size: slot.size as usize,
            batched: slot.batched,
            constant: slot.constant,
        }
    }

    /// One instruction of the forward sweep.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn forward_ins(
        &self,
        ins: Ins,
        g: &Graph,
        theta: &[f64],
        w: &[f64],
        vals: &mut [f64],
        aux: &mut [f64],
        tmp: &mut [f64],
    ) {
        match ins {
            Ins::Param { out, w: o, n } => {
                let (o, out, n) = (o as usize, out as usize, n as usize);
                vals[out..out + n].copy_from_slice(&w[o..o + n]);
            }
            Ins::Hyper { out, t, n } => {
                let (t, out, n) = (t as usize, out as usize, n as usize);
                vals[out..out + n].copy_from_slice(&theta[t..t + n]);
            }
            Ins::Add1(o) => vals[o.out as usize] = vals[o.a as usize] + vals[o.b as usize],
            Ins::Sub1(o) => vals[o.out as usize] = vals[o.a as usize] - vals[o.b as usize],
            Ins::Mul1(o) => vals[o.out as usize] = vals[o.a as usize] * vals[o.b as usize],
            Ins::Div1(o) => vals[o.out as usize] = vals[o.a as usize] / vals[o.b as usize],
            Ins::Scalar2 { f, op: o, b_const } => {
                vals[o.out as usize] = binary(f, vals[o.a as usize], vals[o.b as usize], b_const);
            }
            Ins::Copy { src, out, n, .. } => {
                let (src, out, n) = (src as usize, out as usize, n as usize);
                vals.copy_within(src..src + n, out);
            }
            Ins::Chain { from, to, .. } => {
                let links = &self.links[from as usize..to as usize];
                let mut acc = vals[links[0].head as usize];
                for l in links {
                    acc = l.apply(acc, vals);
                    vals[l.out as usize] = acc;
                }
            }
            Ins::Node(k) => self.forward_node(g, k as usize, vals, aux, tmp),
        }
    }

    fn forward_node(&self, g: &Graph, k: usize, vals: &mut [f64], aux: &mut [f64], tmp: &mut [f64]) {
        let node = &g.nodes[k];
        let slot = self.slots[k];
        let n = slot.size as usize;
        let (lower, upper) = vals.split_at_mut(slot.off as usize);
        let out = &mut upper[..n];
        let lower: &[f64] = lower;
        let get = |id: NodeId| self.arg(lower, id);
        match &node.op {
            Op::Unary(f, a) => {
                out.copy_from_slice(get(*a).data);
                f64::map_in_place(*f, out);
            }
            Op::Binary(f, a, b) => {
                let (a, b) = (get(*a), get(*b));
                let f = *f;
                match f {
                    Fun2::Add => zip_into(a, b, out, |x, y| x + y),
                    Fun2::Sub => zip_into(a, b, out, |x, y| x - y),
                    Fun2::Mul => zip_into(a, b, out, |x, y| x * y),
                    Fun2::Div => zip_into(a, b, out, |x, y| x / y),
                    _ => zip_into(a, b, out, |x, y| binary(f, x, y, b.constant)),
                }
            }
            Op::Gather(a, idx) => {
                let a = get(*a).data;
                for (o, &m) in out.iter_mut().zip(idx) {
                    *o = if m == GATHER_ZERO { 0.0 } else { a[m as usize] };
                }
            }
            Op::Pack(ids) => {
                for (o, id) in out.iter_mut().zip(ids) {
                    *o = lower[self.slots[id.0].off as usize];
                }
            }
            Op::Assemble(ids, idx) => {
                for (o, &(j, m)) in out.iter_mut().zip(idx) {
                    *o = lower[self.slots[ids[j as usize].0].off as usize + m as usize];
                }
            }
            Op::Sum(a) => out[0] = get(*a).data.iter().copied().sum(),
            Op::Support {
                x,
                lower: lo,
                upper: hi,
                strict,
            } => {
                let inside = |v: f64| {
                    if *strict {
                        *lo < v && v < *hi
                    } else {
                        *lo <= v && v <= *hi
                    }
                };
                out[0] = if get(*x).data.iter().all(|&v| inside(v)) {
                    0.0
                } else {
                    f64::NEG_INFINITY
                };
            }
            Op::MatMul(a, b) => {
                let (a, b) = (get(*a), get(*b));
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let kk = a.size / m.max(1);
                out.iter_mut().for_each(|x| *x = 0.0);
                // one column: in place, dgemm's arithmetic without packing the matrix
                if !(nc == 1 && gemv::gemv_n(m, kk, a.data, b.data, out)) {
                    f64::gemm(false, false, m, nc, kk, a.data, b.data, out);
                }
            }
            Op::LikSum(lik @ (Lik::Normal | Lik::Cauchy), ids) if slot.batched => {
                let args = [get(ids[0]), get(ids[1]), get(ids[2])];
                let terms: Terms = if *lik == Lik::Normal {
                    normal_terms
                } else {
                    cauchy_terms
                };
                let na = fused::obs_count(&args);
                let blocks = args.iter().filter(|a| !a.constant).count();
                let a0 = self.aux_off[k] as usize;
                let logs = self.log_sigma[k].as_deref();
                out[0] = location_scale(args, terms, logs, &mut aux[a0..a0 + blocks * na], tmp);
            }
            Op::LikSum(lik, ids) | Op::LikPoint(lik, ids) => {
                let args: Vec<Arg<f64>> = ids.iter().map(|&i| get(i)).collect();
                let mut part = Vec::new();
                let v = fused::forward(*lik, &args, 1, Some(&mut part), fused_output(&node.op));
                let a0 = self.aux_off[k] as usize;
                aux[a0..a0 + part.len()].copy_from_slice(&part);
                out.copy_from_slice(&v);
            }
            op => {
                let v = eval_op(op, node.shape, &get, 1);
                out.copy_from_slice(&v);
            }
        }
    }

    /// One instruction of the reverse sweep.
    #[inline(always)]
    fn reverse_ins(&self, ins: Ins, g: &Graph, vals: &[f64], adj: &mut [f64], aux: &[f64], grad: &mut [f64]) {
        match ins {
            Ins::Param { out, w: o, n } => {
                let (o, out, n) = (o as usize, out as usize, n as usize);
                for (gi, &a) in grad[o..o + n].iter_mut().zip(&adj[out..out + n]) {
                    *gi += a;
                }
            }
            Ins::Hyper { .. } => {}
            // the partials of `back_binary_fast` at one value: ±1, the other factor,
            // 1/b as a reciprocal, −y/b
            Ins::Add1(o) => {
                let yb = adj[o.out as usize];
                if o.da {
                    adj[o.a as usize] += yb * 1.0;
                }
                if o.db {
                    adj[o.b as usize] += yb * 1.0;
                }
            }
            Ins::Sub1(o) => {
                let yb = adj[o.out as usize];
                if o.da {
                    adj[o.a as usize] += yb * 1.0;
                }
                if o.db {
                    // −ȳ: the same bits as ȳ · (−1)
                    adj[o.b as usize] += -yb;
                }
            }
            Ins::Mul1(o) => {
                let (yb, x, y) = (adj[o.out as usize], vals[o.a as usize], vals[o.b as usize]);
                if o.da {
                    adj[o.a as usize] += yb * y;
                }
                if o.db {
                    adj[o.b as usize] += yb * x;
                }
            }
            Ins::Div1(o) => {
                let (yb, y, v) = (adj[o.out as usize], vals[o.b as usize], vals[o.out as usize]);
                if o.da {
                    adj[o.a as usize] += yb * y.recip();
                }
                if o.db {
                    adj[o.b as usize] += yb * (-v / y);
                }
            }
            Ins::Scalar2 { f, op: o, b_const } => {
                let (a, b, out) = (o.a as usize, o.b as usize, o.out as usize);
                let (x, y, v, yb) = (vals[a], vals[b], vals[out], adj[out]);
                if is_special2(f) {
                    let d = d_special2(f, [x, y], v, [o.da, o.db]);
                    if o.da {
                        adj[a] += yb * d[0];
                    }
                    if o.db {
                        adj[b] += yb * d[1];
                    }
                } else {
                    if o.da {
                        adj[a] += yb * d_binary(f, x, y, v, b_const).0;
                    }
                    if o.db {
                        adj[b] += yb * d_binary(f, x, y, v, b_const).1;
                    }
                }
            }
            Ins::Copy { src, out, n, .. } => {
                // each source entry takes one term: the order of the gather's scatter
                // does not matter
                let (src, out, n) = (src as usize, out as usize, n as usize);
                let (lower, upper) = adj.split_at_mut(out);
                for (x, &y) in lower[src..src + n].iter_mut().zip(&upper[..n]) {
                    *x += y;
                }
            }
            Ins::Chain { from, to, .. } => self.reverse_chain(from as usize, to as usize, vals, adj),
            Ins::Node(k) => self.reverse_node(g, k as usize, vals, adj, aux),
        }
    }

    /// The reverse of a chain, last link first: each link adds its other operand's term to
    /// that operand's slot and hands the running value's term to the link before, in a
    /// register. (In a slot of its own that term would be added to 0, which turns a −0
    /// into +0; the sign of a zero is lost anyway once the term, times the partials below,
    /// is added to a slot, which starts at +0 and so never holds −0.)
    fn reverse_chain(&self, from: usize, to: usize, vals: &[f64], adj: &mut [f64]) {
        let (first, rest) = self.links[from..to].split_first().expect("a chain has a link");
        let mut yb = adj[rest.last().unwrap_or(first).out as usize];
        for l in rest.iter().rev() {
            let (d_acc, d_other) = l.terms(yb, vals[l.head as usize], vals);
            if l.d_other {
                adj[l.other as usize] += d_other;
            }
            if !l.d_acc {
                return;
            }
            yb = d_acc;
        }
        // the first link's operands have slots: the left one's term first
        let (d_acc, d_other) = first.terms(yb, vals[first.head as usize], vals);
        let acc_first = !matches!(first.op, LinkOp::SubR | LinkOp::DivR);
        if acc_first && first.d_acc {
            adj[first.head as usize] += d_acc;
        }
        if first.d_other {
            adj[first.other as usize] += d_other;
        }
        if !acc_first && first.d_acc {
            adj[first.head as usize] += d_acc;
        }
    }

    fn reverse_node(&self, g: &Graph, k: usize, vals: &[f64], adj: &mut [f64], aux: &[f64]) {
        let node = &g.nodes[k];
        let slot = self.slots[k];
        let n = slot.size as usize;
        let (lower, upper) = adj.split_at_mut(slot.off as usize);
        let ybar: &[f64] = &upper[..n];
        let y = self.arg(vals, NodeId(k));
        let get = |id: NodeId| self.arg(vals, id);
        match &node.op {
            Op::Const(_) | Op::Param { .. } | Op::Hyper { .. } | Op::Support { .. } => {}
            Op::Scan(_) => unreachable!("scans are compiled unrolled"),
            Op::Unary(f, a) => {
                let x = get(*a);
                if !x.batched {
                    return;
                }
                let xbar = &mut lower[self.slots[a.0].range()];
                // the common functions with the partial's formula fixed, so that the loop
                // does not choose it per entry
                match *f {
                    Fun1::Exp => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Exp, x, y)),
                    Fun1::Log => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Log, x, y)),
                    Fun1::Square => {
                        back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Square, x, y))
                    }
                    Fun1::Sqrt => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Sqrt, x, y)),
                    Fun1::Neg => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(Fun1::Neg, x, y)),
                    f => back_unary(xbar, ybar, x.data, y.data, |x, y| d_unary(f, x, y)),
                }
            }
            Op::Binary(f, a, b) => self.back_binary(*f, *a, *b, vals, y, ybar, lower),
            Op::Ternary(f, ids) => {
                let args = ids.map(get);
                let need = ids.map(|id| self.slots[id.0].batched);
                for (i, &yb) in ybar.iter().enumerate() {
                    let d = d_ternary(*f, broadcast_at(&args, i, 0), y.data[i], need);
                    for q in 0..3 {
                        if need[q] {
                            let iq = if args[q].size == 1 { 0 } else { i };
                            lower[self.slots[ids[q].0].off as usize + iq] += yb * d[q];
                        }
                    }
                }
            }
            Op::MatMul(a, b) => {
                let (aa, bb) = (get(*a), get(*b));
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let kk = aa.size / m.max(1);
                if bb.batched {
                    let bbar = &mut lower[self.slots[b.0].range()];
                    if !(nc == 1 && gemv::gemv_t(m, kk, aa.data, ybar, bbar)) {
                        f64::gemm(true, false, kk, nc, m, aa.data, ybar, bbar);
                    }
                }
                if aa.batched {
                    f64::gemm(
                        false,
                        true,
                        m,
                        kk,
                        nc,
                        ybar,
                        bb.data,
                        &mut lower[self.slots[a.0].range()],
                    );
                }
            }
            Op::Transpose(a) => {
                let (r, c) = (node.shape.rows(), node.shape.cols());
                let xbar = &mut lower[self.slots[a.0].range()];
                for j in 0..c {
                    for i in 0..r {
                        xbar[j + i * c] += ybar[i + j * r];
                    }
                }
            }
            Op::Gather(a, idx) => {
                if !self.slots[a.0].batched {
                    return;
                }
                let xbar = &mut lower[self.slots[a.0].range()];
                for (i, &m) in idx.iter().enumerate() {
                    if m != GATHER_ZERO {
                        xbar[m as usize] += ybar[i];
                    }
                }
            }
            Op::Pack(ids) => {
                for (i, id) in ids.iter().enumerate() {
                    let s = self.slots[id.0];
                    if s.batched {
                        lower[s.off as usize] += ybar[i];
                    }
                }
            }
            Op::Assemble(ids, idx) => {
                for (i, &(j, m)) in idx.iter().enumerate() {
                    let s = self.slots[ids[j as usize].0];
                    if s.batched {
                        lower[s.off as usize + m as usize] += ybar[i];
                    }
                }
            }
            Op::Sum(a) => {
                let xbar = &mut lower[self.slots[a.0].range()];
                for xb in xbar.iter_mut() {
                    *xb += ybar[0] * 1.0;
                }
            }
            Op::LogSumExp(a) => {
                // the batched path's weights exp(xᵢ − y) by the same kernel, on the stack
                // for the short vectors of a recursion's step
                let x = get(*a);
                let mut small = [0.0; 16];
                let mut long = Vec::new();
                let w: &mut [f64] = if x.size <= small.len() {
                    &mut small[..x.size]
                } else {
                    long.resize(x.size, 0.0);
                    &mut long
                };
                super::eval::lse_weights(x, y, 1, w);
                let xbar = &mut lower[self.slots[a.0].range()];
                for (xb, &wi) in xbar.iter_mut().zip(w.iter()) {
                    *xb += ybar[0] * wi;
                }
            }
            Op::Max(a) | Op::Min(a) => {
                let x = get(*a).data;
                let best = argext(x, matches!(node.op, Op::Max(_)));
                let xbar = &mut lower[self.slots[a.0].range()];
                for (i, xb) in xbar.iter_mut().enumerate() {
                    *xb += ybar[0] * if i == best { 1.0 } else { 0.0 };
                }
            }
            Op::LogSumExpRows(a) => {
                let x = get(*a);
                let rows = node.shape.rows();
                let cols = x.size / rows.max(1);
                // the batched path's weights, by the same kernel
                let mut w = vec![0.0; x.size];
                super::eval::less_row_values(&mut w, x.data, y.data, rows);
                f64::map_in_place(Fun1::Exp, &mut w);
                let xbar = &mut lower[self.slots[a.0].range()];
                for j in 0..cols {
                    for i in 0..rows {
                        xbar[i + j * rows] += ybar[i] * w[i + j * rows];
                    }
                }
            }
            Op::CumSum(a) => {
                // x̄ᵢ += Σ_{j ≥ i} ȳⱼ, the running sums of ȳ from the end
                let xbar = &mut lower[self.slots[a.0].range()];
                let mut acc = 0.0;
                for i in (0..n).rev() {
                    acc += ybar[i];
                    xbar[i] += acc;
                }
            }
            Op::Cholesky(a) => {
                back_cholesky(y, ybar, &mut lower[self.slots[a.0].range()], node.shape.rows(), 1);
            }
            Op::TriSolve(l, b) => {
                let (m, nc) = (node.shape.rows(), node.shape.cols());
                let bbar = tri_solve_t(get(*l).data, ybar, m, nc);
                if self.slots[b.0].batched {
                    for (o, v) in lower[self.slots[b.0].range()].iter_mut().zip(&bbar) {
                        *o += *v;
                    }
                }
                if self.slots[l.0].batched {
                    let lbar = &mut lower[self.slots[l.0].range()];
                    for j in 0..m {
                        for i in j..m {
                            let mut v = 0.0;
                            for q in 0..nc {
                                v += bbar[i + q * m] * y.data[j + q * m];
                            }
                            lbar[i + j * m] -= v;
                        }
                    }
                }
            }
            Op::LikSum(_, ids) | Op::LikPoint(_, ids) => {
                let na = ids
                    .iter()
                    .map(|i| self.slots[i.0].size as usize)
                    .max()
                    .unwrap_or(0);
                // ȳ per observation (pointwise), or the sum's one ȳ for every observation
                let pointwise = matches!(node.op, Op::LikPoint(..));
                let yb = |i: usize| if pointwise { ybar[i] } else { ybar[0] };
                let mut part = &aux[self.aux_off[k] as usize..];
                for id in ids {
                    let s = self.slots[id.0];
                    if s.constant {
                        continue;
                    }
                    let (pc, rest) = part.split_at(na);
                    part = rest;
                    if !s.batched {
                        continue;
                    }
                    let xbar = &mut lower[s.range()];
                    if s.size as usize == na {
                        for (i, (o, &p)) in xbar.iter_mut().zip(pc).enumerate() {
                            *o += yb(i) * p;
                        }
                    } else {
                        let total: f64 = pc.iter().enumerate().map(|(i, &p)| yb(i) * p).sum();
                        xbar[0] += total;
                    }
                }
            }
        }
    }

    /// The reverse rule of an elementwise `Fun2` of any sizes (`back_binary` at one column).
    #[allow(clippy::too_many_arguments)]
    fn back_binary(
        &self,
        f: Fun2,
        a: NodeId,
        b: NodeId,
        vals: &[f64],
        y: Arg<'_, f64>,
        ybar: &[f64],
        lower: &mut [f64],
    ) {
        let (aa, bb) = (self.arg(vals, a), self.arg(vals, b));
        let n = y.size;
        let special = is_special2(f);
        if special {
            let args = [aa, bb];
            let need = [aa.batched, bb.batched];
            let offs = [self.slots[a.0].off as usize, self.slots[b.0].off as usize];
            for (i, &yb) in ybar.iter().enumerate() {
                let d = d_special2(f, broadcast_at(&args, i, 0), y.data[i], need);
                for q in 0..2 {
                    if need[q] {
                        let iq = if args[q].size == 1 { 0 } else { i };
                        lower[offs[q] + iq] += yb * d[q];
                    }
                }
            }
            return;
        }
        let arith = matches!(f, Fun2::Add | Fun2::Sub | Fun2::Mul | Fun2::Div);
        let shaped = |x: Arg<'_, f64>| x.size == n || x.size == 1;
        let fast = arith && shaped(aa) && shaped(bb);
        for (target, first) in [(a, true), (b, false)] {
            let slot = self.slots[target.0];
            if !slot.batched {
                continue;
            }
            let out = &mut lower[slot.range()];
            let own = if first { aa } else { bb };
            if fast {
                // `back_binary_fast` at one column: ∂ of an operand of one value summed
                // over the entries, one term at a time
                back_arith(f, first, own.size == n, aa, bb, &y.data[..n], ybar, out);
                continue;
            }
            for (i, &yb) in ybar.iter().enumerate() {
                let ia = if aa.size == 1 { 0 } else { i };
                let ib = if bb.size == 1 { 0 } else { i };
                let (da, db) = d_binary(f, aa.data[ia], bb.data[ib], y.data[i], bb.constant);
                let (idx, d) = if first { (ia, da) } else { (ib, db) };
                out[idx] += yb * d;
            }
        }
    }
}

/// The reverse of y = a ∘ b for `+ − * /` into the adjoint `out` of operand a (`first`)
/// or b, in the form `back_binary_fast` computes it: ȳᵢ times the partial (±1, the other
/// factor, 1/b as a reciprocal, −y/b), added entry by entry when the operand has one entry
/// per value (`full`), else summed into its one value in entry order. One loop per
/// operation and operand shape, so that the partial is not chosen per entry.
#[allow(clippy::too_many_arguments)]
fn back_arith(
    f: Fun2,
    first: bool,
    full: bool,
    a: Arg<'_, f64>,
    b: Arg<'_, f64>,
    y: &[f64],
    ybar: &[f64],
    out: &mut [f64],
) {
    match (f, first) {
        (Fun2::Add, _) | (Fun2::Sub, true) => back_shapes(full, a, b, y, ybar, out, |_, _, _| 1.0),
        (Fun2::Sub, false) => back_shapes(full, a, b, y, ybar, out, |_, _, _| -1.0),
        (Fun2::Mul, true) => back_shapes(full, a, b, y, ybar, out, |_, b, _| b),
        (Fun2::Mul, false) => back_shapes(full, a, b, y, ybar, out, |a, _, _| a),
        (Fun2::Div, true) => back_shapes(full, a, b, y, ybar, out, |_, b, _| b.recip()),
        _ => back_shapes(full, a, b, y, ybar, out, |_, b, y| -y / b),
    }
}

/// [`back_arith`] for one partial `d(a, b, y)`, with the operands of one value read once.
#[inline(always)]
fn back_shapes(
    full: bool,
    a: Arg<'_, f64>,
    b: Arg<'_, f64>,
    y: &[f64],
    ybar: &[f64],
    out: &mut [f64],
    d: impl Fn(f64, f64, f64) -> f64,
) {
    let n = ybar.len();
    match (a.size == 1, b.size == 1) {
        (false, false) => {
            let (a, b) = (&a.data[..n], &b.data[..n]);
            back_terms(full, ybar, out, |i| d(a[i], b[i], y[i]));
        }
        (true, false) => {
            let (a, b) = (a.data[0], &b.data[..n]);
            back_terms(full, ybar, out, |i| d(a, b[i], y[i]));
        }
        (false, true) => {
            let (a, b) = (&a.data[..n], b.data[0]);
            back_terms(full, ybar, out, |i| d(a[i], b, y[i]));
        }
        (true, true) => {
            let (a, b) = (a.data[0], b.data[0]);
            back_terms(full, ybar, out, |i| d(a, b, y[i]));
        }
    }
}

/// `out[i] += ȳᵢ · dᵢ` (`full`), or `out[0] += Σᵢ ȳᵢ · dᵢ` one term at a time.
// an index loop: `d` takes the index (the operands of one value are not slices)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn back_terms(full: bool, ybar: &[f64], out: &mut [f64], d: impl Fn(usize) -> f64) {
    if full {
        let out = &mut out[..ybar.len()];
        for i in 0..ybar.len() {
            out[i] += ybar[i] * d(i);
        }
    } else {
        let mut acc = out[0];
        for (i, &yb) in ybar.iter().enumerate() {
            acc += yb * d(i);
        }
        out[0] = acc;
    }
}

/// Joins consecutive scalar instructions into [`Ins::Chain`]s: an arithmetic (`Add1` …
/// `Div1`) or scalar unary instruction continues the run before it when it reads the
/// previous instruction's result and that result is read nowhere else (no other node, not
/// a target), so the result needs no adjoint slot of its own: the reverse sweep hands it
/// on in a register. A run of one arithmetic instruction stays as it was.
fn chains(g: &Graph, slots: &[Slot], ins: Vec<Ins>, ins_node: &[usize]) -> (Vec<Ins>, Vec<Link>) {
    let mut uses = vec![0u32; g.nodes.len()];
    for node in &g.nodes {
        super::build::each_input(&node.op, |id| uses[id.0] += 1);
    }
    for t in &g.targets {
        uses[t.0] += 1;
    }
    // the instruction as the first link of a chain
    let link_of = |i: &Ins| -> Option<Link> {
        let (op, o) = match *i {
            Ins::Add1(o) => (LinkOp::Add, o),
            Ins::Sub1(o) => (LinkOp::SubL, o),
            Ins::Mul1(o) => (LinkOp::Mul, o),
            Ins::Div1(o) => (LinkOp::DivL, o),
            Ins::Node(k) => {
                let k = k as usize;
                return match g.nodes[k].op {
                    Op::Unary(f, a) if slots[k].size == 1 && slots[a.0].size == 1 => Some(Link {
                        op: LinkOp::Unary,
                        f,
                        head: slots[a.0].off,
                        other: 0,
                        out: slots[k].off,
                        d_acc: slots[a.0].batched,
                        d_other: false,
                    }),
                    _ => None,
                };
            }
            _ => return None,
        };
        Some(Link {
            op,
            f: Fun1::Neg,
            head: o.a,
            other: o.b,
            out: o.out,
            d_acc: o.da,
            d_other: o.db,
        })
    };
    let (mut out, mut links) = (Vec::with_capacity(ins.len()), Vec::new());
    let mut i = 0;
    while i < ins.len() {
        let Some(first) = link_of(&ins[i]) else {
            out.push(ins[i]);
            i += 1;
            continue;
        };
        let from = links.len();
        links.push(first);
        let mut j = i + 1;
        while j < ins.len() && uses[ins_node[j - 1]] == 1 {
            let prev = links[links.len() - 1].out;
            let Some(mut l) = link_of(&ins[j]) else { break };
            // the running value as the left operand (or the only one), or the right
            let left = l.head == prev;
            let right = l.op != LinkOp::Unary && l.other == prev;
            if left == right {
                break;
            }
            if right {
                (l.other, l.d_other, l.d_acc) = (l.head, l.d_acc, l.d_other);
                l.op = match l.op {
                    LinkOp::SubL => LinkOp::SubR,
                    LinkOp::DivL => LinkOp::DivR,
                    op => op,
                };
            }
            l.head = prev;
            links.push(l);
            j += 1;
        }
        if j == i + 1 && first.op != LinkOp::Unary {
            links.pop();
            out.push(ins[i]);
        } else {
            out.push(Ins::Chain {
                from: from as u32,
                to: links.len() as u32,
                batched: slots[ins_node[j - 1]].batched,
            });
        }
        i = j;
    }
    (out, links)
}

/// `x̄ᵢ += ȳᵢ · d(xᵢ, yᵢ)`: the reverse of an elementwise function.
#[inline(always)]
fn back_unary(xbar: &mut [f64], ybar: &[f64], x: &[f64], y: &[f64], d: impl Fn(f64, f64) -> f64) {
    for ((xb, &yb), (&xv, &yv)) in xbar.iter_mut().zip(ybar).zip(x.iter().zip(y)) {
        *xb += yb * d(xv, yv);
    }
}

/// op(a, b) entrywise into `out`, broadcasting an operand of one value (`zip_columns` at
/// one column).
#[inline(always)]
fn zip_into(a: Arg<'_, f64>, b: Arg<'_, f64>, out: &mut [f64], op: impl Fn(f64, f64) -> f64) {
    let n = out.len();
    match (a.size == 1, b.size == 1) {
        (false, false) => out
            .iter_mut()
            .zip(a.data[..n].iter().zip(&b.data[..n]))
            .for_each(|(o, (&x, &y))| *o = op(x, y)),
        (true, false) => out
            .iter_mut()
            .zip(&b.data[..n])
            .for_each(|(o, &y)| *o = op(a.data[0], y)),
        (false, true) => out
            .iter_mut()
            .zip(&a.data[..n])
            .for_each(|(o, &x)| *o = op(x, b.data[0])),
        (true, true) => out.iter_mut().for_each(|o| *o = op(a.data[0], b.data[0])),
    }
}

type Terms = fn(z: &mut [f64], log_sigma: f64, inv_sigma: f64, dx: &mut [f64], ds: &mut [f64]);

/// `fused::normal_terms` with partials.
fn normal_terms(z: &mut [f64], ls: f64, inv: f64, dx: &mut [f64], ds: &mut [f64]) {
    let c = -HALF_LOG_2PI - ls;
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        *dx = -(*z * inv);
        *ds = (z2 - 1.0) * inv;
        *z = c + -0.5 * z2;
    }
}

/// `fused::cauchy_terms` with partials.
fn cauchy_terms(z: &mut [f64], ls: f64, inv: f64, dx: &mut [f64], ds: &mut [f64]) {
    let c = -std::f64::consts::PI.ln() - ls;
    for ((z, dx), ds) in z.iter_mut().zip(dx.iter_mut()).zip(ds.iter_mut()) {
        let z2 = *z * *z;
        let r = inv / (1.0 + z2);
        *dx = -(*z * r) * 2.0;
        *ds = (z2 - 1.0) * r;
        *z = 1.0 + z2;
    }
    f64::map_in_place(Fun1::Log, z);
    for v in z.iter_mut() {
        *v = c - *v;
    }
}

/// `fused::location_scale` at one column, with the partials, on scratch buffers: the summed
/// log density, the partials of the non-constant operands written to `aux` in operand order.
fn location_scale(
    args: [Arg<'_, f64>; 3],
    terms: Terms,
    log_sigma: Option<&[f64]>,
    aux: &mut [f64],
    tmp: &mut [f64],
) -> f64 {
    let [x, mu, sigma] = args;
    let n = fused::obs_count(&args);
    let sc = sigma.data;
    // every scale > 0 (a NaN fails), without a branch per entry
    if !sc.iter().fold(true, |ok, &v| ok & (v > 0.0)) {
        // the partials are not read: the value is −∞ and so is the gradient's check
        return f64::NEG_INFINITY;
    }
    let (z, rest) = tmp.split_at_mut(n);
    let (dx, rest) = rest.split_at_mut(n);
    let (ds, rest) = rest.split_at_mut(n);
    let ls = &mut rest[..n];
    match (x.data, mu.data) {
        ([a], [b]) => z.fill(*a - *b),
        ([a], m) => z.iter_mut().zip(m).for_each(|(z, &b)| *z = *a - b),
        (xs, [b]) => z.iter_mut().zip(xs).for_each(|(z, &a)| *z = a - *b),
        (xs, m) => z
            .iter_mut()
            .zip(xs.iter().zip(m))
            .for_each(|(z, (&a, &b))| *z = a - b),
    }
    if let [sd] = *sc {
        let ls = match log_sigma {
            Some([l]) => *l,
            _ => sd.ln(),
        };
        let inv = sd.recip();
        z.iter_mut().for_each(|z| *z *= inv);
        terms(z, ls, inv, dx, ds);
    } else {
        z.iter_mut().zip(sc).for_each(|(z, &sd)| *z /= sd);
        terms(z, 0.0, 1.0, dx, ds);
        let logs = match log_sigma {
            Some(logs) => logs,
            None => {
                ls.copy_from_slice(sc);
                f64::map_in_place(Fun1::Log, ls);
                ls
            }
        };
        for (v, &l) in z.iter_mut().zip(logs) {
            *v -= l;
        }
        // only the partials that are kept (each a division per observation)
        if !(x.constant && mu.constant) {
            dx.iter_mut().zip(sc).for_each(|(d, &sd)| *d /= sd);
        }
        if !sigma.constant {
            ds.iter_mut().zip(sc).for_each(|(d, &sd)| *d /= sd);
        }
    }
    let value: f64 = z.iter().copied().sum();
    let mut b = 0;
    for (j, a) in args.iter().enumerate() {
        if a.constant {
            continue;
        }
        let block = &mut aux[b * n..(b + 1) * n];
        b += 1;
        match j {
            0 => block.copy_from_slice(dx),
            1 => block.iter_mut().zip(dx.iter()).for_each(|(p, &d)| *p = -d),
            _ => block.copy_from_slice(ds),
        }
    }
    value
}
