//! The single-point tape compiled to machine code (Cranelift): the instructions of
//! [`PointEval`] that are scalar arithmetic (`Add1` … `Div1`, the chains of an unrolled
//! recursion), short copies of parameters and gathers, gathers, packs and assembled values,
//! short elementwise `+ − * /` and `normal` likelihoods with a constant scale become
//! straight-line loads, stores and floating-point operations at fixed offsets of the value
//! and adjoint buffers, with no dispatch per instruction; every other instruction (vector
//! functions, sums, the other likelihoods, functions of two values) is a call back into the
//! interpreter's own code for that one instruction. The arithmetic is the interpreter's,
//! operation for operation and in its order (Cranelift neither reorders nor fuses
//! floating-point operations), so values and gradients are equal to the bit; the tests of
//! `tests/it/point_gradient.rs` check it on every model with both.
//!
//! Compiling costs about 4 µs per instruction (ARMA(1,1) at T = 1600, 22 000 instructions
//! and links: 91 ms) and saves about 1–2 ns per instruction and call, so it pays back after a
//! few thousand calls whatever the graph's size: a graph is compiled once it has been
//! evaluated [`AUTO_AFTER`] times at one point (an optimiser's dozens or hundreds of calls
//! stay interpreted; a sampler's tens of thousands run compiled), or never, or at once
//! ([`set_policy`]; `MVI_POINT_JIT=never|always|auto` in the environment).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};

use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, Type, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use super::{Ins, LinkOp, PointEval};
use crate::dist::HALF_LOG_2PI;
use crate::graph::{Fun1, Fun2, Graph, Lik, NodeId, Op, GATHER_ZERO};

/// Calls at one point after which a graph is compiled under [`Policy::Auto`].
pub const AUTO_AFTER: u32 = 1000;

/// Instructions (tape instructions plus chain links) above which a graph stays interpreted:
/// compiling a very long unrolled recursion would take longer than most runs evaluate it.
const MAX_INSTRUCTIONS: usize = 50_000;

/// Gathers, packs and assembled values of at most this many entries are compiled inline
/// (their interpreted loop looks up each entry's source).
const MAX_INLINE_ENTRIES: usize = 256;

/// Elementwise arithmetic of at most this many entries is compiled inline; longer vectors
/// run the interpreter's loop, which the Rust compiler vectorises.
const MAX_INLINE_ARITH: u32 = 8;

/// Parameters, copies and gathers of at most this many entries are compiled inline; longer
/// ones call the interpreter (a slice copy).
const INLINE_COPY: u32 = 16;

/// When the single-point path compiles a graph to machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// After [`jit_auto_after`](super::jit_auto_after) calls (the default).
    Auto,
    /// Before the first call.
    Always,
    /// Never: always the interpreter.
    Never,
}

/// 0: not read yet; 1 + the policy's index otherwise.
static POLICY: AtomicU8 = AtomicU8::new(0);

/// Choose when graphs are compiled (for the whole process; tests and benchmarks compare the
/// interpreter with the compiled code).
pub fn set_policy(p: Policy) {
    POLICY.store(1 + p as u8, Ordering::Relaxed);
}

/// The policy in force: [`set_policy`]'s, else `MVI_POINT_JIT`'s, else [`Policy::Auto`].
pub fn policy() -> Policy {
    let code = match POLICY.load(Ordering::Relaxed) {
        0 => {
            let p = match std::env::var("MVI_POINT_JIT").as_deref() {
                Ok("never" | "0") => Policy::Never,
                Ok("always" | "1") => Policy::Always,
                _ => Policy::Auto,
            };
            set_policy(p);
            1 + p as u8
        }
        c => c,
    };
    [Policy::Auto, Policy::Always, Policy::Never][usize::from(code - 1)]
}

/// What the compiled code hands to the interpreter's functions: the graph and the buffers of
/// this call (raw, as the compiled code holds them too, but does not touch them during a
/// call out).
pub(super) struct Ctx<'a> {
    pub p: &'a PointEval,
    pub g: &'a Graph,
    pub theta: &'a [f64],
    pub w: &'a [f64],
    pub grad: *mut f64,
    pub vals: *mut f64,
    pub adj: *mut f64,
    pub aux: *mut f64,
    pub tmp: *mut f64,
    pub n_vals: usize,
    pub n_aux: usize,
    pub n_tmp: usize,
}

/// The compiled forward or reverse sweep: (values, adjoints, w, θ, gradient, context).
type Sweep = unsafe extern "C" fn(*mut f64, *mut f64, *const f64, *const f64, *mut f64, *mut u8);

/// A graph's two sweeps in executable memory, freed when the last clone of its
/// [`PointEval`] goes.
pub(super) struct Jit {
    module: Option<JITModule>,
    fwd: Sweep,
    rev: Sweep,
}

// SAFETY: the code is immutable once finalised and reads and writes only the buffers passed
// to it; the module is only touched again to free the memory, in `drop`, when no call can be
// running (a call borrows the `PointEval` that owns this).
unsafe impl Send for Jit {}
unsafe impl Sync for Jit {}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: no pointer into the module outlives `self` (see above).
            unsafe { m.free_memory() };
        }
    }
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Jit")
    }
}

impl Jit {
    /// Run the forward sweep.
    ///
    /// # Safety
    /// `ctx`'s buffers are those of [`PointEval::run`] for the graph this was compiled from.
    pub(super) unsafe fn forward(&self, ctx: &mut Ctx<'_>) {
        unsafe { Self::call(self.fwd, ctx) }
    }

    /// Run the reverse sweep (the adjoints seeded, the gradient zeroed).
    ///
    /// # Safety
    /// As [`Jit::forward`].
    pub(super) unsafe fn reverse(&self, ctx: &mut Ctx<'_>) {
        unsafe { Self::call(self.rev, ctx) }
    }

    /// # Safety
    /// As [`Jit::forward`].
    unsafe fn call(sweep: Sweep, ctx: &mut Ctx<'_>) {
        let (vals, adj, w, theta, grad) = (ctx.vals, ctx.adj, ctx.w.as_ptr(), ctx.theta.as_ptr(), ctx.grad);
        let c: *mut Ctx<'_> = ctx;
        unsafe { sweep(vals, adj, w, theta, grad, c.cast()) }
    }
}

// ------------------------------------------------------------------- calls out of the code

/// # Safety
/// `ctx` points to the [`Ctx`] of the running call.
unsafe fn context<'c>(ctx: *mut u8) -> &'c Ctx<'c> {
    unsafe { &*(ctx as *const Ctx<'c>) }
}

/// Forward instruction `i` by the interpreter.
unsafe extern "C" fn forward_ins(ctx: *mut u8, i: u32) {
    let c = unsafe { context(ctx) };
    // SAFETY: the buffers of this call, with their lengths; nothing else refers to them
    // while the interpreter runs
    let (vals, aux, tmp) = unsafe {
        (
            std::slice::from_raw_parts_mut(c.vals, c.n_vals),
            std::slice::from_raw_parts_mut(c.aux, c.n_aux),
            std::slice::from_raw_parts_mut(c.tmp, c.n_tmp),
        )
    };
    c.p.forward_ins(c.p.ins[i as usize], c.g, c.theta, c.w, vals, aux, tmp);
}

/// Reverse instruction `i` (of the reverse list) by the interpreter.
unsafe extern "C" fn reverse_ins(ctx: *mut u8, i: u32) {
    let c = unsafe { context(ctx) };
    // SAFETY: as in `forward_ins`
    let (vals, adj, aux, grad) = unsafe {
        (
            std::slice::from_raw_parts(c.vals, c.n_vals),
            std::slice::from_raw_parts_mut(c.adj, c.n_vals),
            std::slice::from_raw_parts(c.aux, c.n_aux),
            std::slice::from_raw_parts_mut(c.grad, c.w.len()),
        )
    };
    c.p.reverse_ins(c.p.rev[i as usize], c.g, vals, adj, aux, grad);
}

/// The function of chain link `l` at `x`.
unsafe extern "C" fn unary_link(ctx: *mut u8, l: u32, x: f64) -> f64 {
    let c = unsafe { context(ctx) };
    crate::autodiff::unary_one(c.p.links[l as usize].f, x)
}

/// Its derivative at `x`, with `y` its value.
unsafe extern "C" fn d_unary_link(ctx: *mut u8, l: u32, x: f64, y: f64) -> f64 {
    let c = unsafe { context(ctx) };
    crate::autodiff::reverse::d_unary(c.p.links[l as usize].f, x, y)
}

// ------------------------------------------------------------------------- code generation

/// Compile `p`'s sweeps; `None` when the host has no code generator or the graph is too
/// large (the interpreter runs then).
pub(super) fn compile(p: &PointEval, g: &Graph) -> Option<Jit> {
    if p.ins.len() + p.rev.len() + 2 * p.links.len() > MAX_INSTRUCTIONS
        || p.image.len() >= (i32::MAX / 8) as usize
        || p.dim >= (i32::MAX / 8) as usize
    {
        return None;
    }
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let ptr = module.target_config().pointer_type();
    let mut sig = module.make_signature();
    for _ in 0..6 {
        sig.params.push(AbiParam::new(ptr));
    }
    let mut ids = Vec::new();
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    for (name, forward) in [("mvi_point_forward", true), ("mvi_point_reverse", false)] {
        let id = module.declare_function(name, Linkage::Local, &sig).ok()?;
        ctx.func.signature = sig.clone();
        {
            let b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let mut e = Emit::new(b, ptr, module.isa().default_call_conv());
            if forward {
                e.forward(p, g);
            } else {
                e.reverse(p, g);
            }
            e.b.ins().return_(&[]);
            e.b.finalize(module.isa().frontend_config());
        }
        module.define_function(id, &mut ctx).ok()?;
        module.clear_context(&mut ctx);
        ids.push(id);
    }
    module.finalize_definitions().ok()?;
    // SAFETY: both functions were defined with `Sweep`'s signature (six pointer arguments,
    // no result) in the host's default calling convention, which is `extern "C"`'s
    let (fwd, rev) = unsafe {
        (
            std::mem::transmute::<*const u8, Sweep>(module.get_finalized_function(ids[0])),
            std::mem::transmute::<*const u8, Sweep>(module.get_finalized_function(ids[1])),
        )
    };
    Some(Jit {
        module: Some(module),
        fwd,
        rev,
    })
}

/// An operand of an elementwise node: its offset, and whether it is a single value.
type Operand = (u32, bool);

/// The buffers the code reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Buf {
    Vals,
    Adj,
    W,
    Theta,
    Grad,
}

/// The operation of a scalar arithmetic instruction (`Add1` … `Div1`).
fn scalar_op(ins: Ins) -> Fun2 {
    match ins {
        Ins::Add1(_) => Fun2::Add,
        Ins::Sub1(_) => Fun2::Sub,
        Ins::Mul1(_) => Fun2::Mul,
        _ => Fun2::Div,
    }
}

/// A chain link's arithmetic and whether the running value is its left operand; `None`
/// for a function of one value.
fn link_op(op: LinkOp) -> Option<(Fun2, bool)> {
    Some(match op {
        LinkOp::Add => (Fun2::Add, true),
        LinkOp::SubL => (Fun2::Sub, true),
        LinkOp::SubR => (Fun2::Sub, false),
        LinkOp::Mul => (Fun2::Mul, true),
        LinkOp::DivL => (Fun2::Div, true),
        LinkOp::DivR => (Fun2::Div, false),
        LinkOp::Unary => return None,
    })
}

/// Entry i of an elementwise operand (its single value, or its i-th).
fn entry((off, single): Operand, i: u32) -> u32 {
    off + if single { 0 } else { i }
}

/// A `normal` likelihood compiled inline: its scale is a constant with every entry > 0 (so
/// the support check is decided when compiling), its value depends on w, and it has at most
/// [`MAX_INLINE_ENTRIES`] observations.
struct Normal {
    n: u32,
    /// (offset, single value, constant, depends on w) of x and μ.
    x: (u32, bool, bool, bool),
    mu: (u32, bool, bool, bool),
    sigma: Vec<f64>,
    /// The logs of the scales, as the interpreter uses them.
    log_sigma: Vec<f64>,
}

impl Normal {
    fn of(p: &PointEval, g: &Graph, k: usize) -> Option<Normal> {
        let Op::LikSum(Lik::Normal, ids) = &g.nodes[k].op else {
            return None;
        };
        let sigma = g.const_value(ids[2])?;
        let log_sigma = p.log_sigma[k].as_deref()?;
        let n = ids.iter().map(|i| p.slots[i.0].size).max()?;
        let ok = p.slots[k].batched
            && n as usize <= MAX_INLINE_ENTRIES
            && sigma.iter().all(|&v| v > 0.0)
            && (sigma.len() == 1 || sigma.len() == n as usize);
        let operand = |id: NodeId| {
            let s = p.slots[id.0];
            (s.size == n || s.size == 1).then_some((s.off, s.size == 1 && n > 1, s.constant, s.batched))
        };
        ok.then(|| {
            Some(Normal {
                n,
                x: operand(ids[0])?,
                mu: operand(ids[1])?,
                sigma: sigma.to_vec(),
                log_sigma: log_sigma.to_vec(),
            })
        })?
    }
}

/// The code of one sweep being built.
struct Emit<'f> {
    b: FunctionBuilder<'f>,
    ptr: Type,
    flags: MemFlagsData,
    /// The arguments: values, adjoints, w, θ, gradient, context.
    vals: Value,
    adj: Value,
    w: Value,
    theta: Value,
    grad: Value,
    ctx: Value,
    /// (ctx, index) → (): an instruction by the interpreter.
    sig_ins: SigRef,
    /// (ctx, link, x) → f(x).
    sig_f1: SigRef,
    /// (ctx, link, x, y) → f′(x).
    sig_d1: SigRef,
    /// (x) → f(x): a kernel's one-value form.
    sig_k1: SigRef,
    /// The value each buffer entry holds, as far as this code has read or written it since
    /// the last call out (which may write any buffer): a load of it is that value, not a
    /// load, so a recursion's running values and accumulated adjoints stay in registers
    /// (the stores are still made, for the interpreter's instructions and the other sweep).
    known: HashMap<(Buf, u32), Value>,
}

impl<'f> Emit<'f> {
    fn new(mut b: FunctionBuilder<'f>, ptr: Type, cc: cranelift_codegen::isa::CallConv) -> Self {
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        b.seal_block(block);
        let args = b.block_params(block).to_vec();
        let sig = |params: &[Type], ret: bool| {
            let mut s = Signature::new(cc);
            s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            if ret {
                s.returns.push(AbiParam::new(types::F64));
            }
            s
        };
        let sig_ins = b.import_signature(sig(&[ptr, types::I32], false));
        let sig_f1 = b.import_signature(sig(&[ptr, types::I32, types::F64], true));
        let sig_d1 = b.import_signature(sig(&[ptr, types::I32, types::F64, types::F64], true));
        let sig_k1 = b.import_signature(sig(&[types::F64], true));
        Emit {
            b,
            ptr,
            flags: MemFlagsData::trusted(),
            vals: args[0],
            adj: args[1],
            w: args[2],
            theta: args[3],
            grad: args[4],
            ctx: args[5],
            sig_ins,
            sig_f1,
            sig_d1,
            sig_k1,
            known: HashMap::new(),
        }
    }

    fn base(&self, buf: Buf) -> Value {
        match buf {
            Buf::Vals => self.vals,
            Buf::Adj => self.adj,
            Buf::W => self.w,
            Buf::Theta => self.theta,
            Buf::Grad => self.grad,
        }
    }

    fn load(&mut self, buf: Buf, i: u32) -> Value {
        if let Some(&v) = self.known.get(&(buf, i)) {
            return v;
        }
        let base = self.base(buf);
        let v = self.b.ins().load(types::F64, self.flags, base, (i * 8) as i32);
        self.known.insert((buf, i), v);
        v
    }

    fn store(&mut self, v: Value, buf: Buf, i: u32) {
        let base = self.base(buf);
        self.b.ins().store(self.flags, v, base, (i * 8) as i32);
        self.known.insert((buf, i), v);
    }

    /// buf[i] += v
    fn add_to(&mut self, buf: Buf, i: u32, v: Value) {
        let x = self.load(buf, i);
        let s = self.b.ins().fadd(x, v);
        self.store(s, buf, i);
    }

    /// A call to the interpreter, which may write any buffer: nothing is known after it.
    fn call_ins(&mut self, f: unsafe extern "C" fn(*mut u8, u32), i: usize) {
        self.known.clear();
        let fp = self.b.ins().iconst(self.ptr, f as usize as i64);
        let i = self.b.ins().iconst(types::I32, i as i64);
        let ctx = self.ctx;
        self.b.ins().call_indirect(self.sig_ins, fp, &[ctx, i]);
    }

    fn call_f64(&mut self, sig: SigRef, f: usize, args: &[Value]) -> Value {
        let fp = self.b.ins().iconst(self.ptr, f as i64);
        let call = self.b.ins().call_indirect(sig, fp, args);
        self.b.inst_results(call)[0]
    }

    fn link_index(&mut self, l: usize) -> Value {
        self.b.ins().iconst(types::I32, l as i64)
    }

    /// f(x) of a chain link as `autodiff::unary_one` computes it: `−`, `square` and `sqrt`
    /// as instructions, a function with a SIMD kernel by a direct call of the kernel's
    /// one-value form for this CPU, any other through the interpreter.
    fn unary(&mut self, f: Fun1, li: usize, x: Value) -> Value {
        match f {
            Fun1::Neg => return self.b.ins().fneg(x),
            Fun1::Square => return self.b.ins().fmul(x, x),
            Fun1::Sqrt => return self.b.ins().sqrt(x),
            _ => {}
        }
        if let Some(kernel) = crate::autodiff::kernel_of(f) {
            let fp = crate::autodiff::vmath::one_fn(kernel);
            return self.call_f64(self.sig_k1, fp as *const () as usize, &[x]);
        }
        let (ctx, idx) = (self.ctx, self.link_index(li));
        self.call_f64(self.sig_f1, unary_link as *const () as usize, &[ctx, idx, x])
    }

    /// f′(x), with y = f(x), as `autodiff::reverse::d_unary` computes it: the common
    /// functions' formulas inline, any other through the interpreter.
    fn d_unary(&mut self, f: Fun1, li: usize, x: Value, y: Value) -> Value {
        match f {
            Fun1::Neg => self.b.ins().f64const(-1.0),
            Fun1::Exp => y,
            Fun1::Log => self.recip(x),
            Fun1::Log1p => {
                let one = self.b.ins().f64const(1.0);
                let s = self.b.ins().fadd(one, x);
                self.recip(s)
            }
            Fun1::Sqrt => {
                let s = self.b.ins().fadd(y, y);
                self.recip(s)
            }
            Fun1::Square => self.b.ins().fadd(x, x),
            _ => {
                let (ctx, idx) = (self.ctx, self.link_index(li));
                self.call_f64(self.sig_d1, d_unary_link as *const () as usize, &[ctx, idx, x, y])
            }
        }
    }

    /// 1/x as `f64::recip` computes it.
    fn recip(&mut self, x: Value) -> Value {
        let one = self.b.ins().f64const(1.0);
        self.b.ins().fdiv(one, x)
    }

    /// x ∘ y for `+ − * /`.
    fn binop(&mut self, f: Fun2, x: Value, y: Value) -> Value {
        match f {
            Fun2::Add => self.b.ins().fadd(x, y),
            Fun2::Sub => self.b.ins().fsub(x, y),
            Fun2::Mul => self.b.ins().fmul(x, y),
            _ => self.b.ins().fdiv(x, y),
        }
    }

    /// ȳ times the partial of v = x ∘ y (`+ − * /`, the values at offsets `x`, `y`, `v`)
    /// in its left operand (`first`) or its right one, in the interpreter's form: ±ȳ, ȳ
    /// times the other factor, ȳ · y⁻¹, ȳ · (−v/y) (`back_arith`, `Link::terms`).
    fn arith_term(&mut self, f: Fun2, first: bool, yb: Value, [x, y, v]: [u32; 3]) -> Value {
        match (f, first) {
            (Fun2::Add, _) | (Fun2::Sub, true) => yb,
            (Fun2::Sub, false) => self.b.ins().fneg(yb),
            (Fun2::Mul, true) => {
                let y = self.load(Buf::Vals, y);
                self.b.ins().fmul(yb, y)
            }
            (Fun2::Mul, false) => {
                let x = self.load(Buf::Vals, x);
                self.b.ins().fmul(yb, x)
            }
            (Fun2::Div, true) => {
                let y = self.load(Buf::Vals, y);
                let r = self.recip(y);
                self.b.ins().fmul(yb, r)
            }
            _ => {
                let (y, v) = (self.load(Buf::Vals, y), self.load(Buf::Vals, v));
                let nv = self.b.ins().fneg(v);
                let q = self.b.ins().fdiv(nv, y);
                self.b.ins().fmul(yb, q)
            }
        }
    }

    fn forward(&mut self, p: &PointEval, g: &Graph) {
        let (vals, w, theta) = (Buf::Vals, Buf::W, Buf::Theta);
        for (i, &ins) in p.ins.iter().enumerate() {
            match ins {
                Ins::Param { out, w: o, n } if n <= INLINE_COPY => {
                    for j in 0..n {
                        let v = self.load(w, o + j);
                        self.store(v, vals, out + j);
                    }
                }
                Ins::Hyper { out, t, n } if n <= INLINE_COPY => {
                    for j in 0..n {
                        let v = self.load(theta, t + j);
                        self.store(v, vals, out + j);
                    }
                }
                Ins::Copy { src, out, n, .. } if n <= INLINE_COPY => {
                    for j in 0..n {
                        let v = self.load(vals, src + j);
                        self.store(v, vals, out + j);
                    }
                }
                Ins::Add1(o) | Ins::Sub1(o) | Ins::Mul1(o) | Ins::Div1(o) => {
                    let (x, y) = (self.load(vals, o.a), self.load(vals, o.b));
                    let v = self.binop(scalar_op(ins), x, y);
                    self.store(v, vals, o.out);
                }
                Ins::Chain { from, to, .. } => {
                    let mut acc = self.load(vals, p.links[from as usize].head);
                    for li in from as usize..to as usize {
                        let l = p.links[li];
                        acc = match link_op(l.op) {
                            None => self.unary(l.f, li, acc),
                            Some((f, acc_left)) => {
                                let o = self.load(vals, l.other);
                                let (x, y) = if acc_left { (acc, o) } else { (o, acc) };
                                self.binop(f, x, y)
                            }
                        };
                        self.store(acc, vals, l.out);
                    }
                }
                Ins::Node(k) if self.forward_node(p, g, k as usize) => {}
                _ => self.call_ins(forward_ins, i),
            }
        }
    }

    /// Where each entry of node `k` is read from when `k` is a gather, pack or assembled
    /// value of at most [`MAX_INLINE_ENTRIES`] entries: a buffer offset, or `None` for a
    /// gathered zero.
    fn sources(p: &PointEval, g: &Graph, k: usize) -> Option<Vec<Option<u32>>> {
        let n = p.slots[k].size as usize;
        if n > MAX_INLINE_ENTRIES {
            return None;
        }
        Some(match &g.nodes[k].op {
            Op::Assemble(ids, idx) => idx
                .iter()
                .map(|&(j, m)| Some(p.slots[ids[j as usize].0].off + m))
                .collect(),
            Op::Pack(ids) => ids.iter().map(|id| Some(p.slots[id.0].off)).collect(),
            Op::Gather(a, idx) => idx
                .iter()
                .map(|&m| (m != GATHER_ZERO).then(|| p.slots[a.0].off + m))
                .collect(),
            _ => return None,
        })
    }

    /// Node `k` inline when it is a gather, pack or assemble (the interpreter's loop, entry
    /// by entry) or an elementwise `+ − * /`; false when it is not compiled inline.
    fn forward_node(&mut self, p: &PointEval, g: &Graph, k: usize) -> bool {
        let out = p.slots[k].off;
        if let Some(src) = Self::sources(p, g, k) {
            for (i, m) in src.into_iter().enumerate() {
                let v = match m {
                    Some(m) => self.load(Buf::Vals, m),
                    None => self.b.ins().f64const(0.0),
                };
                self.store(v, Buf::Vals, out + i as u32);
            }
            return true;
        }
        if let Some(lik) = Normal::of(p, g, k) {
            self.normal_forward(&lik, out);
            return true;
        }
        let Some((f, a, b)) = Self::arith(p, g, k) else {
            return false;
        };
        let n = p.slots[k].size;
        for i in 0..n {
            let x = self.load(Buf::Vals, entry(a, i));
            let y = self.load(Buf::Vals, entry(b, i));
            let v = self.binop(f, x, y);
            self.store(v, Buf::Vals, out + i);
        }
        true
    }

    /// An elementwise `+ − * /` node of at most [`MAX_INLINE_ARITH`] entries, each
    /// operand of the node's size or a single value: (f, (offset, single) of a and of b).
    fn arith(p: &PointEval, g: &Graph, k: usize) -> Option<(Fun2, Operand, Operand)> {
        let Op::Binary(f, a, b) = g.nodes[k].op else {
            return None;
        };
        let n = p.slots[k].size;
        let operand = |id: NodeId| {
            let s = p.slots[id.0];
            (s.size == n || s.size == 1).then_some((s.off, s.size == 1))
        };
        let ok = matches!(f, Fun2::Add | Fun2::Sub | Fun2::Mul | Fun2::Div) && n <= MAX_INLINE_ARITH;
        ok.then_some((f, operand(a)?, operand(b)?))
    }

    fn reverse(&mut self, p: &PointEval, g: &Graph) {
        let (adj, grad) = (Buf::Adj, Buf::Grad);
        for (i, &ins) in p.rev.iter().enumerate() {
            match ins {
                Ins::Param { out, w: o, n } if n <= INLINE_COPY => {
                    for j in 0..n {
                        let a = self.load(adj, out + j);
                        self.add_to(grad, o + j, a);
                    }
                }
                Ins::Hyper { .. } => {}
                Ins::Copy { src, out, n, .. } if n <= INLINE_COPY => {
                    for j in 0..n {
                        let a = self.load(adj, out + j);
                        self.add_to(adj, src + j, a);
                    }
                }
                // the interpreter's partials (`PointEval::reverse_ins`), a's term first
                Ins::Add1(o) | Ins::Sub1(o) | Ins::Mul1(o) | Ins::Div1(o) => {
                    let yb = self.load(adj, o.out);
                    for (first, target, wanted) in [(true, o.a, o.da), (false, o.b, o.db)] {
                        if wanted {
                            let t = self.arith_term(scalar_op(ins), first, yb, [o.a, o.b, o.out]);
                            self.add_to(adj, target, t);
                        }
                    }
                }
                Ins::Chain { from, to, .. } => self.reverse_chain(p, from as usize, to as usize),
                Ins::Node(k) if self.reverse_node(p, g, k as usize) => {}
                _ => self.call_ins(reverse_ins, i),
            }
        }
    }

    /// The reverse of a node compiled inline by [`Emit::forward_node`], in the order of
    /// `PointEval::reverse_node` (each adjoint's terms added in the same order).
    fn reverse_node(&mut self, p: &PointEval, g: &Graph, k: usize) -> bool {
        let out = p.slots[k].off;
        if let Some(src) = Self::sources(p, g, k) {
            let reads = match &g.nodes[k].op {
                Op::Assemble(ids, idx) => idx
                    .iter()
                    .map(|&(j, _)| p.slots[ids[j as usize].0].batched)
                    .collect(),
                Op::Pack(ids) => ids.iter().map(|id| p.slots[id.0].batched).collect(),
                Op::Gather(a, _) => vec![p.slots[a.0].batched; src.len()],
                _ => unreachable!("sources are of these three"),
            };
            for (i, (m, batched)) in src.into_iter().zip(reads).enumerate() {
                if let (Some(m), true) = (m, batched) {
                    let yb = self.load(Buf::Adj, out + i as u32);
                    self.add_to(Buf::Adj, m, yb);
                }
            }
            return true;
        }
        if let Some(lik) = Normal::of(p, g, k) {
            self.normal_reverse(&lik, out);
            return true;
        }
        let Some((f, a, b)) = Self::arith(p, g, k) else {
            return false;
        };
        let Op::Binary(_, ida, idb) = g.nodes[k].op else {
            unreachable!("arith is of a binary node")
        };
        let n = p.slots[k].size;
        // `back_arith`: operand a's terms, then b's; an operand of one value sums its terms
        // in entry order before adding them to its adjoint, one of n values adds each term
        for (first, (off, single), id) in [(true, a, ida), (false, b, idb)] {
            if !p.slots[id.0].batched {
                continue;
            }
            let mut sum = if single && n > 1 {
                Some(self.load(Buf::Adj, off))
            } else {
                None
            };
            for i in 0..n {
                let yb = self.load(Buf::Adj, out + i);
                let t = self.arith_term(f, first, yb, [entry(a, i), entry(b, i), out + i]);
                match sum {
                    Some(acc) => sum = Some(self.b.ins().fadd(acc, t)),
                    None => self.add_to(Buf::Adj, off + if single { 0 } else { i }, t),
                }
            }
            if let Some(acc) = sum {
                self.store(acc, Buf::Adj, off);
            }
        }
        true
    }

    /// The terms of link `li` (`Link::terms`): ȳ times the partial in the running value
    /// (`want_acc`) and in the other operand (`want_other`).
    fn terms(
        &mut self,
        p: &PointEval,
        li: usize,
        yb: Value,
        (want_acc, want_other): (bool, bool),
    ) -> (Option<Value>, Option<Value>) {
        let l = p.links[li];
        let Some((f, acc_left)) = link_op(l.op) else {
            let ta = want_acc.then(|| {
                let (x, v) = (self.load(Buf::Vals, l.head), self.load(Buf::Vals, l.out));
                let d = self.d_unary(l.f, li, x, v);
                self.b.ins().fmul(yb, d)
            });
            return (ta, None);
        };
        // the running value is the left operand or the right one
        let at = if acc_left {
            [l.head, l.other, l.out]
        } else {
            [l.other, l.head, l.out]
        };
        let ta = want_acc.then(|| self.arith_term(f, acc_left, yb, at));
        let to = want_other.then(|| self.arith_term(f, !acc_left, yb, at));
        (ta, to)
    }

    /// Σ of `terms` as `Iterator::sum` forms it for f64: from −0, in order.
    fn sum(&mut self, terms: impl IntoIterator<Item = Value>) -> Value {
        let mut acc = self.b.ins().f64const(-0.0);
        for t in terms {
            acc = self.b.ins().fadd(acc, t);
        }
        acc
    }

    /// zᵢ of a normal likelihood: (xᵢ − μᵢ)·σ⁻¹ for one scale, (xᵢ − μᵢ)/σᵢ otherwise (as
    /// `location_scale` forms it).
    fn normal_z(&mut self, lik: &Normal, i: u32) -> Value {
        let x = self.load(Buf::Vals, entry((lik.x.0, lik.x.1), i));
        let m = self.load(Buf::Vals, entry((lik.mu.0, lik.mu.1), i));
        let d = self.b.ins().fsub(x, m);
        if let [sd] = *lik.sigma {
            let inv = self.b.ins().f64const(sd.recip());
            self.b.ins().fmul(d, inv)
        } else {
            let sd = self.b.ins().f64const(lik.sigma[i as usize]);
            self.b.ins().fdiv(d, sd)
        }
    }

    /// The summed log density (`location_scale` with `normal_terms`, at a constant scale).
    fn normal_forward(&mut self, lik: &Normal, out: u32) {
        let mut terms = Vec::with_capacity(lik.n as usize);
        for i in 0..lik.n {
            let z = self.normal_z(lik, i);
            let z2 = self.b.ins().fmul(z, z);
            let half = self.b.ins().f64const(-0.5);
            let q = self.b.ins().fmul(half, z2);
            let t = if let [_] = *lik.sigma {
                let c = self.b.ins().f64const(-HALF_LOG_2PI - lik.log_sigma[0]);
                self.b.ins().fadd(c, q)
            } else {
                let c = self.b.ins().f64const(-HALF_LOG_2PI - 0.0);
                let t = self.b.ins().fadd(c, q);
                let l = self.b.ins().f64const(lik.log_sigma[i as usize]);
                self.b.ins().fsub(t, l)
            };
            terms.push(t);
        }
        let v = self.sum(terms);
        self.store(v, Buf::Vals, out);
    }

    /// Its reverse: the partials of x and μ formed again from the values (the interpreter's
    /// cached ones are the same operations), added as `reverse_node` adds them.
    fn normal_reverse(&mut self, lik: &Normal, out: u32) {
        let yb = self.load(Buf::Adj, out);
        for (operand, is_mu) in [(lik.x, false), (lik.mu, true)] {
            let (off, single, constant, batched) = operand;
            if constant || !batched {
                continue;
            }
            let mut terms = Vec::with_capacity(lik.n as usize);
            for i in 0..lik.n {
                let z = self.normal_z(lik, i);
                // ∂/∂x: −(z·σ⁻¹) for one scale; −(z·1)/σᵢ otherwise; ∂/∂μ its negative
                let dx = if let [sd] = *lik.sigma {
                    let inv = self.b.ins().f64const(sd.recip());
                    let zi = self.b.ins().fmul(z, inv);
                    self.b.ins().fneg(zi)
                } else {
                    let nz = self.b.ins().fneg(z);
                    let sd = self.b.ins().f64const(lik.sigma[i as usize]);
                    self.b.ins().fdiv(nz, sd)
                };
                let d = if is_mu { self.b.ins().fneg(dx) } else { dx };
                terms.push(self.b.ins().fmul(yb, d));
            }
            if !single || lik.n == 1 {
                for (i, t) in terms.into_iter().enumerate() {
                    self.add_to(Buf::Adj, off + i as u32, t);
                }
            } else {
                let total = self.sum(terms);
                self.add_to(Buf::Adj, off, total);
            }
        }
    }

    /// `PointEval::reverse_chain`: last link first, the running value's term in a register.
    fn reverse_chain(&mut self, p: &PointEval, from: usize, to: usize) {
        let adj = Buf::Adj;
        let mut yb = self.load(adj, p.links[to - 1].out);
        for li in (from + 1..to).rev() {
            let l = p.links[li];
            let (ta, to_other) = self.terms(p, li, yb, (l.d_acc, l.d_other));
            if let Some(t) = to_other {
                self.add_to(adj, l.other, t);
            }
            let Some(t) = ta else { return };
            yb = t;
        }
        let first = p.links[from];
        let (ta, to_other) = self.terms(p, from, yb, (first.d_acc, first.d_other));
        let acc_first = !matches!(first.op, LinkOp::SubR | LinkOp::DivR);
        if acc_first {
            if let Some(t) = ta {
                self.add_to(adj, first.head, t);
            }
        }
        if let Some(t) = to_other {
            self.add_to(adj, first.other, t);
        }
        if !acc_first {
            if let Some(t) = ta {
                self.add_to(adj, first.head, t);
            }
        }
    }
}
