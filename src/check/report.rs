//! Text reports of a checked model: the parameter layout for `mvi check`, and a stable
//! dump of the typed model for `mvi dump typed` and snapshots.

use super::infer_keys::{keys_for, KEYS};
use super::types::{NameKind, TBinOp, TExpr, TExprKind, TIndex, TStmt};
use super::{Slot, Transform, TypedModel};
use crate::options::OptionValue;
use crate::syntax::ast::{AssignOp, UnOp};
use std::fmt::Write;

/// The `mvi check` report: data shapes and sizes, every param with its type, constraint,
/// transform and 1-based slice of w, D, the hyperparameters with initial values, the method
/// with its options (defaults filled in) and the ignored data entries.
pub fn layout_report(model: &TypedModel) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "model {}", model.source.name());
    data_section(model, &mut out);
    let _ = writeln!(out, "\nparams (D = {})", model.dim);
    let rows: Vec<[String; 5]> = model.params.iter().map(|p| slot_row(p, true)).collect();
    table(&rows, &mut out);
    let _ = writeln!(out, "\nhyper (dim θ = {})", model.hyper_dim);
    let rows: Vec<[String; 5]> = model.hypers.iter().map(|p| slot_row(p, false)).collect();
    table(&rows, &mut out);
    infer_section(model, &mut out);
    if !model.data.ignored.is_empty() {
        let _ = writeln!(out, "\nignored data entries: {}", model.data.ignored.join(", "));
    }
    out
}

fn data_section(model: &TypedModel, out: &mut String) {
    if !model.data.sizes.is_empty() {
        let sizes: Vec<String> = model
            .data
            .sizes
            .iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        let _ = writeln!(out, "sizes: {}", sizes.join(", "));
    }
    let _ = writeln!(out, "data:");
    if model.data_decls.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    for d in &model.data_decls {
        match model.data.get(&d.name).and_then(crate::data::Value::as_scalar) {
            Some(v) => {
                let _ = writeln!(out, "  {}  {} = {}", d.name, d.shape, fmt_num(v));
            }
            None => {
                let _ = writeln!(out, "  {}  {}", d.name, d.shape);
            }
        }
    }
}

fn slot_row(p: &Slot, is_param: bool) -> [String; 5] {
    let constraint = match p.transform {
        Transform::Identity => "—".to_string(),
        Transform::Lower(a) => format!("<lower={a}>"),
        Transform::Upper(b) => format!("<upper={b}>"),
        Transform::LowerUpper(a, b) => format!("<lower={a}, upper={b}>"),
        Transform::Type(k) => k.name().to_string(),
        // The bounds as written (a bound has no `>`: comparisons are not allowed in it).
        Transform::Dependent => match (p.declared.find('<'), p.declared.find('>')) {
            (Some(a), Some(b)) if a < b => p.declared[a..=b].split_whitespace().collect::<Vec<_>>().join(" "),
            _ => "dependent".to_string(),
        },
    };
    let last = if is_param {
        if p.len == 0 {
            "(empty)".to_string()
        } else {
            format!("{}..{}", p.offset + 1, p.offset + p.len)
        }
    } else {
        match &p.init {
            Some(v) if v.len() == 1 => format!("init {}", fmt_num(v[0])),
            Some(v) if v.len() <= 6 => format!(
                "init [{}]",
                v.iter().map(|x| fmt_num(*x)).collect::<Vec<_>>().join(", ")
            ),
            Some(v) => format!("init [{}, … {} values]", fmt_num(v[0]), v.len()),
            None => "init (computed from data)".to_string(),
        }
    };
    let shape = p.shape.to_string();
    let declared = strip_constraint(&p.declared);
    let ty = if declared.is_empty() || declared == shape {
        shape
    } else {
        format!("{shape} ({declared})")
    };
    [
        p.name.clone(),
        ty,
        constraint,
        p.transform_name().to_string(),
        last,
    ]
}

/// `vector<lower=0>[M + 1]` → `vector[M + 1]`.
fn strip_constraint(declared: &str) -> String {
    match (declared.find('<'), declared.find('>')) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &declared[..a], &declared[b + 1..])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        _ => declared.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.6}").trim_end_matches('0').to_string()
    }
}

fn table(rows: &[[String; 5]], out: &mut String) {
    if rows.is_empty() {
        let _ = writeln!(out, "  (none)");
        return;
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::from(" ");
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            line.push(' ');
            line.push_str(cell);
            if i < 4 {
                line.push_str(&" ".repeat(pad + 1));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

fn show_value(v: &OptionValue) -> String {
    match v {
        OptionValue::Int(i) => i.to_string(),
        OptionValue::Real(x) => x.to_string(),
        OptionValue::Ident(w) => w.clone(),
        OptionValue::Blocks(b) => format!(
            "[{}]",
            b.iter()
                .map(|g| format!("[{}]", g.join(", ")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn infer_section(model: &TypedModel, out: &mut String) {
    let given = |k: &str| {
        model
            .infer
            .entries
            .iter()
            .rev()
            .find(|o| o.key == k)
            .map(|o| show_value(&o.value))
    };
    let method = given("method").unwrap_or_else(|| "laplace".into());
    let _ = writeln!(out, "\nmethod {method}");
    for key in keys_for(&method) {
        if key == "method" {
            continue;
        }
        let spec = KEYS
            .iter()
            .find(|k| k.key == key)
            .expect("keys_for returns keys of KEYS");
        let (value, note) = match (given(key), crate::check::infer_keys::default_for(spec, &method)) {
            (Some(v), _) => (v, ""),
            (None, Some(d)) => (d.to_string(), "  (default)"),
            (None, None) if key == "blocks" => (
                format!(
                    "[{}]",
                    model
                        .params
                        .iter()
                        .map(|p| format!("[{}]", p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "  (default)",
            ),
            // a switch that is off unless given (`predictive`, `loo`)
            (None, None) if matches!(key, "predictive" | "loo") => continue,
            (None, None) => ("—".into(), ""),
        };
        let _ = writeln!(out, "  {key} = {value}{note}");
    }
}

/// A stable text dump of the typed model: declarations with shapes, then every statement
/// with each expression's shape and stage (`@const`, `@hyper`, `@param`). A `for` loop shows
/// its first iteration and its count.
pub fn dump_typed(model: &TypedModel) -> String {
    let mut out = String::new();
    for (n, v) in &model.data.sizes {
        let _ = writeln!(out, "size {n} = {v}");
    }
    for d in &model.data_decls {
        let _ = writeln!(out, "data {}: {}", d.name, d.shape);
    }
    for h in &model.hypers {
        let init = h.init_expr.as_ref().map(expr).unwrap_or_default();
        let _ = writeln!(
            out,
            "hyper {}: {} {} θ[{}..{}] = {init}",
            h.name,
            h.shape,
            h.transform_name(),
            h.offset,
            h.offset + h.len
        );
    }
    for p in &model.params {
        let _ = writeln!(
            out,
            "param {}: {} {} w[{}..{}]",
            p.name,
            p.shape,
            p.transform_name(),
            p.offset,
            p.offset + p.len
        );
    }
    for (n, e) in &model.lets {
        let _ = writeln!(out, "let {n}: {} @{} = {}", e.shape, stage(e), expr(e));
    }
    let _ = writeln!(out, "model {{");
    stmts(&model.model, 1, &mut out);
    let _ = writeln!(out, "}}");
    if model.has_predict {
        let _ = writeln!(out, "predict {{");
        stmts(&model.predict, 1, &mut out);
        let _ = writeln!(out, "}}");
    }
    if !model.generated.is_empty() {
        let _ = writeln!(out, "generated {{");
        stmts(&model.generated, 1, &mut out);
        let _ = writeln!(out, "}}");
    }
    out
}

fn stage(e: &TExpr) -> &'static str {
    match e.stage {
        super::Stage::Const => "const",
        super::Stage::Hyper => "hyper",
        super::Stage::Param => "param",
    }
}

fn stmts(ss: &[TStmt], depth: usize, out: &mut String) {
    let ind = "  ".repeat(depth);
    for s in ss {
        match s {
            TStmt::Let { name, value } => {
                let _ = writeln!(
                    out,
                    "{ind}let {name}: {} @{} = {}",
                    value.shape,
                    stage(value),
                    expr(value)
                );
            }
            TStmt::Assign { target, op, value } => {
                let op = match op {
                    AssignOp::Set => "=",
                    AssignOp::Add => "+=",
                    AssignOp::Sub => "-=",
                    AssignOp::Mul => "*=",
                    AssignOp::Div => "/=",
                };
                let _ = writeln!(
                    out,
                    "{ind}{} {op} {}: {} @{}",
                    expr(target),
                    expr(value),
                    value.shape,
                    stage(value)
                );
            }
            TStmt::Tilde {
                lhs,
                dist,
                args,
                trunc,
            } => {
                let a: Vec<String> = args.iter().map(|x| format!("{}: {}", expr(x), x.shape)).collect();
                let t = match trunc {
                    Some((l, u)) => format!(
                        " T[{}, {}]",
                        l.as_ref().map(expr).unwrap_or_default(),
                        u.as_ref().map(expr).unwrap_or_default()
                    ),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "{ind}{}: {} ~ {dist}({}){t}",
                    expr(lhs),
                    lhs.shape,
                    a.join(", ")
                );
            }
            TStmt::Target(v) => {
                let _ = writeln!(out, "{ind}target += {}: {} @{}", expr(v), v.shape, stage(v));
            }
            TStmt::For {
                var,
                lo,
                hi,
                iterations,
            } => {
                let _ = writeln!(
                    out,
                    "{ind}for {var} in {lo}:{hi} ({} iterations; first shown) {{",
                    iterations.len()
                );
                if let Some(first) = iterations.first() {
                    stmts(first, depth + 1, out);
                }
                let _ = writeln!(out, "{ind}}}");
            }
            TStmt::If {
                cond,
                then,
                otherwise,
            } => {
                let _ = writeln!(out, "{ind}if {} {{", expr(cond));
                stmts(then, depth + 1, out);
                let _ = writeln!(out, "{ind}}} else {{");
                stmts(otherwise, depth + 1, out);
                let _ = writeln!(out, "{ind}}}");
            }
        }
    }
}

fn binop(op: TBinOp) -> &'static str {
    match op {
        TBinOp::Add => "+",
        TBinOp::Sub => "-",
        TBinOp::ScalarMul => "*",
        TBinOp::MatMul => "matmul",
        TBinOp::ElemMul => ".*",
        TBinOp::ElemDiv => "./",
        TBinOp::Pow => "^",
        TBinOp::Mod => "%",
        TBinOp::IntDiv => "intdiv",
        TBinOp::Lt => "<",
        TBinOp::Le => "<=",
        TBinOp::Gt => ">",
        TBinOp::Ge => ">=",
        TBinOp::Eq => "==",
        TBinOp::Ne => "!=",
        TBinOp::And => "&&",
        TBinOp::Or => "||",
    }
}

/// One expression as an s-expression (names tagged with their kind).
fn expr(e: &TExpr) -> String {
    match &e.kind {
        TExprKind::Int(i) => i.to_string(),
        TExprKind::Real(x) => format!("{x:?}"),
        TExprKind::Name(n, k) => {
            let tag = match k {
                NameKind::Data => "data",
                NameKind::Size => "size",
                NameKind::Hyper => "hyper",
                NameKind::Param => "param",
                NameKind::Global => "let",
                NameKind::Local => "local",
            };
            format!("{n}:{tag}")
        }
        TExprKind::Vector(xs) => format!("[{}]", xs.iter().map(expr).collect::<Vec<_>>().join(", ")),
        TExprKind::Matrix(rows) => format!(
            "[{}]",
            rows.iter()
                .map(|r| format!("[{}]", r.iter().map(expr).collect::<Vec<_>>().join(", ")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        TExprKind::Unary(UnOp::Neg, x) => format!("(neg {})", expr(x)),
        TExprKind::Unary(UnOp::Not, x) => format!("(not {})", expr(x)),
        TExprKind::Binary(op, a, b) => format!("({} {} {})", binop(*op), expr(a), expr(b)),
        TExprKind::Transpose(x) => format!("(transpose {})", expr(x)),
        TExprKind::Ternary(c, a, b) => format!("(if {} {} {})", expr(c), expr(a), expr(b)),
        TExprKind::Call(f, args) => format!("({f} {})", args.iter().map(expr).collect::<Vec<_>>().join(" ")),
        TExprKind::Rng { dist, args } => format!(
            "({dist}_rng {})",
            args.iter().map(expr).collect::<Vec<_>>().join(" ")
        ),
        TExprKind::Dist { dist, form, args } => format!(
            "({dist}_{} {})",
            format!("{form:?}").to_lowercase(),
            args.iter().map(expr).collect::<Vec<_>>().join(" ")
        ),
        TExprKind::Inline {
            func,
            params,
            body,
            result,
        } => {
            let ps: Vec<String> = params.iter().map(|(n, a)| format!("{n}={}", expr(a))).collect();
            let mut b = String::new();
            stmts(body, 0, &mut b);
            let b = b.lines().collect::<Vec<_>>().join("; ");
            format!(
                "(inline {func} [{}] {{{b}}} {}): {}",
                ps.join(", "),
                expr(result),
                e.shape
            )
        }
        TExprKind::Index(b, idx) => {
            let is: Vec<String> = idx
                .iter()
                .map(|i| match i {
                    TIndex::At(x) | TIndex::Gather(x) => expr(x),
                    TIndex::Range { lo, hi } => format!("{lo}:{hi}"),
                })
                .collect();
            format!("{}[{}]", expr(b), is.join(", "))
        }
    }
}
