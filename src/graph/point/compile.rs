//! Compiling a [`Graph`] for the single-point path: every node a fixed slot in the value
//! and adjoint buffers, and the nodes as a flat list of instructions.
//!
//! Input: a graph (one with scans is compiled unrolled). Output: a [`PointEval`], or `None`
//! when the graph has an operation this path does not take. The slots of the nodes that do
//! not depend on w come first and their instructions run apart (only when θ changes); the
//! scalar operations of a recursion are joined into chains ([`chains`]). Each node's inputs
//! lie below it in the buffers, and only the slots from `zero_from` on take adjoints.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Bin1, Ins, Link, LinkOp, PointEval, Slot, NEXT_ID};
use crate::autodiff::Scalar;
use crate::graph::eval::batched_mask;
use crate::graph::{Fun1, Fun2, Graph, Lik, Op, GATHER_ZERO};

impl PointEval {
    /// Compile a graph; `None` when it has an operation this path does not take (the
    /// pointwise likelihoods of `predict` graphs): the batched path is used then.
    pub fn compile(g: &Graph) -> Option<PointEval> {
        if !g.nodes.iter().any(|n| matches!(n.op, Op::Scan(_))) {
            return PointEval::compile_unrolled(g);
        }
        let unrolled = crate::graph::scan::expand(g);
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
}

/// Joins consecutive scalar instructions into [`Ins::Chain`]s: an arithmetic (`Add1` …
/// `Div1`) or scalar unary instruction continues the run before it when it reads the
/// previous instruction's result and that result is read nowhere else (no other node, not
/// a target), so the result needs no adjoint slot of its own: the reverse sweep hands it
/// on in a register. A run of one arithmetic instruction stays as it was.
fn chains(g: &Graph, slots: &[Slot], ins: Vec<Ins>, ins_node: &[usize]) -> (Vec<Ins>, Vec<Link>) {
    let mut uses = vec![0u32; g.nodes.len()];
    for node in &g.nodes {
        crate::graph::build::each_input(&node.op, |id| uses[id.0] += 1);
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
