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
//!
//! This file holds the compiled tape's types and the call; the compilation is in
//! `point/compile.rs`, the forward sweep in `point/forward.rs`, the reverse sweep in
//! `point/reverse.rs`, and the machine code in `point_jit.rs`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::eval::Arg;
use super::{Fun1, Fun2, Graph, NodeId};
use crate::autodiff::reverse::d_unary;

#[path = "point_jit.rs"]
mod jit;

mod compile;
mod forward;
mod reverse;

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
}
