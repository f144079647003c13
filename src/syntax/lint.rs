//! Syntactic checks on a parsed program that pest cannot express.
//!
//! In `model` and `predict`, `name = f(...)` where `name` was never declared with `let` in
//! that block is almost always a `~` written as `=`; it is reported here, with that fix.

use super::ast::{AssignOp, Expr, ExprKind, Item, Program, Stmt};
use super::error::Error;
use super::span::Span;

/// Reject `y = dist(...)` in `model`/`predict` when `y` is not a local of that block.
///
/// # Errors
/// [`Error::AssignNotTilde`] for the first such statement.
pub fn check_assignments(program: &Program, src: &str) -> Result<(), Error> {
    for item in &program.items {
        if let Item::Model(b) | Item::Predict(b) = item {
            let mut locals = Vec::new();
            check_stmts(&b.stmts, &mut locals, src)?;
        }
    }
    Ok(())
}

fn check_stmts(stmts: &[Stmt], locals: &mut Vec<String>, src: &str) -> Result<(), Error> {
    let mark = locals.len();
    for s in stmts {
        match s {
            Stmt::Let(l) => locals.push(l.name.name.clone()),
            Stmt::Assign {
                target,
                op: AssignOp::Set,
                value,
                span,
            } => check_one(target, value, *span, locals, src)?,
            Stmt::For { body, .. } => check_stmts(body, locals, src)?,
            Stmt::If { then, otherwise, .. } => {
                check_stmts(then, locals, src)?;
                check_stmts(otherwise, locals, src)?;
            }
            _ => {}
        }
    }
    locals.truncate(mark);
    Ok(())
}

fn check_one(target: &Expr, value: &Expr, stmt: Span, locals: &[String], src: &str) -> Result<(), Error> {
    let (ExprKind::Name(name), ExprKind::Call { func, .. }) = (&target.kind, &value.kind) else {
        return Ok(());
    };
    if locals.iter().any(|l| l == name) {
        return Ok(());
    }
    // The `=` sits between the target and the value.
    let (from, to) = (target.span.end as usize, value.span.start as usize);
    let span = src
        .get(from..to)
        .and_then(|between| between.find('='))
        .map_or(stmt, |i| Span::new(from + i, from + i + 1));
    Err(Error::AssignNotTilde {
        span,
        name: name.clone(),
        func: func.name.clone(),
    })
}
