//! `mvi dump graph`: one line per node, stable for snapshots.
//!
//! Input: a [`Graph`]. Output: text such as `%3 = matmul %0 %2 : vector[5]`, constants shown
//! by shape and up to four values, then the target terms and the pointwise outputs.

use std::fmt::Write;

use super::{Graph, Op, Shape};

fn shape_text(s: Shape) -> String {
    match s {
        Shape::Scalar => "real".to_string(),
        Shape::Vector(n) => format!("vector[{n}]"),
        Shape::Matrix(n, m) => format!("matrix[{n}, {m}]"),
    }
}

fn num(x: f64) -> String {
    format!("{x:.6}")
}

/// `LogInvLogit` → `log_inv_logit`, as the function is written in models.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

fn op_text(op: &Op) -> String {
    let ids = |v: &[super::NodeId]| {
        v.iter()
            .map(|i| format!("%{}", i.0))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match op {
        Op::Const(v) => {
            let head: Vec<String> = v.iter().take(4).map(|&x| num(x)).collect();
            let more = if v.len() > 4 { " ..." } else { "" };
            format!("const [{}{more}]", head.join(", "))
        }
        Op::Param { offset } => format!("param w[{offset}..]"),
        Op::Hyper { offset } => format!("hyper theta[{offset}..]"),
        Op::Unary(f, a) => format!("{} %{}", snake(&format!("{f:?}")), a.0),
        Op::Binary(f, a, b) => format!("{} %{} %{}", snake(&format!("{f:?}")), a.0, b.0),
        Op::Ternary(f, v) => format!("{} {}", snake(&format!("{f:?}")), ids(v)),
        Op::MatMul(a, b) => format!("matmul %{} %{}", a.0, b.0),
        Op::Transpose(a) => format!("transpose %{}", a.0),
        Op::Gather(a, idx) => {
            let head: Vec<String> = idx
                .iter()
                .take(6)
                .map(|&k| {
                    if k == super::GATHER_ZERO {
                        "0".into()
                    } else {
                        format!("{k}")
                    }
                })
                .collect();
            let more = if idx.len() > 6 { " ..." } else { "" };
            format!("gather %{} [{}{more}]", a.0, head.join(", "))
        }
        Op::Pack(v) => format!("pack {}", ids(v)),
        Op::Assemble(v, idx) => {
            let head: Vec<String> = idx
                .iter()
                .take(6)
                .map(|&(j, k)| format!("%{}[{k}]", v[j as usize].0))
                .collect();
            let more = if idx.len() > 6 { " ..." } else { "" };
            format!("assemble [{}{more}]", head.join(", "))
        }
        Op::LikSum(l, v) => format!("lik_sum {} {}", l.name(), ids(v)),
        Op::LikPoint(l, v) => format!("lik_point {} {}", l.name(), ids(v)),
        Op::Sum(a) => format!("sum %{}", a.0),
        Op::LogSumExp(a) => format!("log_sum_exp %{}", a.0),
        Op::LogSumExpRows(a) => format!("log_sum_exp_rows %{}", a.0),
        Op::Max(a) => format!("max %{}", a.0),
        Op::Min(a) => format!("min %{}", a.0),
        Op::Cholesky(a) => format!("cholesky %{}", a.0),
        Op::CumSum(a) => format!("cumsum %{}", a.0),
        Op::TriSolve(l, b) => format!("tri_solve %{} %{}", l.0, b.0),
        Op::Support {
            x,
            lower,
            upper,
            strict,
        } => {
            let (o, c) = if *strict { ("(", ")") } else { ("[", "]") };
            format!("support %{} {o}{}, {}{c}", x.0, num(*lower), num(*upper))
        }
        Op::Scan(scan) => scan_text(scan),
        Op::Rng(r) => format!("{}_rng {}", r.dist, ids(&r.ids)),
    }
}

/// A scan: its inputs and exports on the first line, then its body, one node per line
/// (ids local to the body; `input j` is the j-th input, `~` marks an operation whose
/// constants or indices change from step to step, shown at the first step).
fn scan_text(scan: &super::scan::Scan) -> String {
    use super::scan::ScanInput;
    let inputs: Vec<String> = scan
        .inputs
        .iter()
        .map(|i| match i {
            ScanInput::Outer(id) => format!("%{}", id.0),
            ScanInput::Carry { node, init } => {
                let first: Vec<String> = init.iter().map(|i| format!("%{}", i.0)).collect();
                format!("{}→${node}", first.join(" "))
            }
        })
        .collect();
    let exports: Vec<String> = scan.exports.iter().map(|p| format!("${p}")).collect();
    let mut out = format!(
        "scan {} steps, inputs [{}], exports [{}]",
        scan.steps,
        inputs.join(", "),
        exports.join(" ")
    );
    for (p, n) in scan.body.nodes.iter().enumerate() {
        let text = match &n.op {
            Op::Param { offset } => format!("input {offset}"),
            _ if p < scan.inputs.len() => "input (constant)".to_string(),
            _ => op_text(scan.op_at(p, 0)).replace('%', "$"),
        };
        let mark = if scan.varying.iter().any(|v| v.0 == p) {
            " ~"
        } else {
            ""
        };
        let _ = write!(out, "\n    ${p} = {text} : {}{mark}", shape_text(n.shape));
    }
    out
}

/// The graph as text, one node per line, then `target` and `pointwise` lines.
pub fn dump_graph(g: &Graph) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "graph D={} P={} nodes={}", g.dim, g.theta_dim, g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        let name = g
            .label_of(super::NodeId(i))
            .map(|l| format!("  // {l}"))
            .unwrap_or_default();
        let text = op_text(&n.op);
        // a scan's body follows its line
        let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
        let _ = writeln!(out, "%{i} = {head} : {}{name}", shape_text(n.shape));
        if !body.is_empty() {
            let _ = writeln!(out, "{body}");
        }
    }
    let t: Vec<String> = g.targets.iter().map(|i| format!("%{}", i.0)).collect();
    let _ = writeln!(out, "target = {}", t.join(" + "));
    for p in &g.pointwise {
        let q = p
            .quantity
            .map(|q| format!(" quantity %{}", q.0))
            .unwrap_or_default();
        let _ = writeln!(out, "pointwise {} loglik %{}{q}", p.name, p.loglik.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Constraint;

    #[test]
    fn dump_lists_nodes_and_target() {
        let mut g = Graph::new(2, 0);
        let x = g
            .param_slice(0, Shape::Vector(2), &Constraint::lower(0.0))
            .unwrap();
        let s = g.sum(x);
        g.add_target(s).unwrap();
        let text = dump_graph(&g);
        assert!(text.starts_with("graph D=2 P=0"));
        assert!(text.contains("param w[0..] : vector[2]"));
        assert!(text.contains("exp %0"));
        assert!(text.lines().last().unwrap().starts_with("target = "));
    }
}
