//! Binding data entries to `data { }` declarations: shapes, size variables, int-ness and
//! constraints, with diagnostics that point at the offending cell.

use super::{add_csv, BoundData, DataSet, RawEntry, RawValue, Source, Value};
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{BaseType, BinOp, Decl, Expr, ExprKind, UnOp};
use crate::syntax::span::Span;
use miette::NamedSource;
use nalgebra::{DMatrix, DVector};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

mod kinds;

/// 2^53: beyond it not every integer is exactly an `f64`.
const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Looks up a scalar name for [`eval_const_expr`]: its value and whether it is an integer.
pub type ConstEnv<'a> = dyn Fn(&str) -> Option<(f64, bool)> + 'a;

/// Evaluate a size or bound expression made of literals, known scalar names and arithmetic.
///
/// # Errors
/// The span and reason of the first part that is not known at load time.
pub fn eval_const_expr(e: &Expr, env: &ConstEnv) -> Result<(f64, bool), (Span, String)> {
    match &e.kind {
        ExprKind::Int(i) => Ok((*i as f64, true)),
        ExprKind::Real(x) => Ok((*x, false)),
        ExprKind::Name(n) => env(n).ok_or_else(|| (e.span, format!("`{n}` is not known from the data"))),
        ExprKind::Unary(UnOp::Neg, x) => eval_const_expr(x, env).map(|(v, i)| (-v, i)),
        ExprKind::Binary(op, a, b) => {
            let (x, xi) = eval_const_expr(a, env)?;
            let (y, yi) = eval_const_expr(b, env)?;
            const_binary(*op, x, y, xi && yi).ok_or_else(|| {
                (
                    e.span,
                    "this operation is not allowed in a size or bound".to_string(),
                )
            })
        }
        _ => Err((
            e.span,
            "sizes and bounds must be numbers, data names and arithmetic".into(),
        )),
    }
}

fn const_binary(op: BinOp, x: f64, y: f64, both_int: bool) -> Option<(f64, bool)> {
    Some(match op {
        BinOp::Add => (x + y, both_int),
        BinOp::Sub => (x - y, both_int),
        BinOp::Mul | BinOp::ElemMul => (x * y, both_int),
        BinOp::Div | BinOp::ElemDiv if both_int => {
            if y == 0.0 {
                return None;
            }
            ((x / y).trunc(), true)
        }
        BinOp::Div | BinOp::ElemDiv => (x / y, false),
        BinOp::Pow => (x.powf(y), both_int && y >= 0.0),
        BinOp::Mod if both_int && y != 0.0 => (x % y, true),
        _ => return None,
    })
}

struct Binder<'a> {
    set: &'a DataSet,
    model_src: NamedSource<String>,
    model_dir: &'a Path,
    decls: &'a [Decl],
    out: BoundData,
    errors: Vec<Diagnostic>,
}

/// Bind the data files to the declarations of a `data { }` block.
///
/// Scalar declarations are bound first, so a size may name an `int` declared later.
/// `csv("path")` values are read relative to `model_dir`.
///
/// # Errors
/// Every missing or malformed value, shape mismatch, non-integer where an int is declared,
/// and constraint violation.
pub fn bind_data(
    decls: &[Decl],
    set: &DataSet,
    model_src: &NamedSource<String>,
    model_dir: &Path,
) -> Result<BoundData, Vec<Diagnostic>> {
    let mut b = Binder {
        set,
        model_src: model_src.clone(),
        model_dir,
        decls,
        out: BoundData::default(),
        errors: Vec::new(),
    };
    let scalars = decls
        .iter()
        .filter(|d| matches!(d.ty.base, BaseType::Int | BaseType::Real));
    let arrays = decls
        .iter()
        .filter(|d| !matches!(d.ty.base, BaseType::Int | BaseType::Real));
    // A size like `M + 1` may need a variable bound by a later declaration: retry those
    // until no more can be bound.
    let mut pending: Vec<&Decl> = scalars.chain(arrays).collect();
    loop {
        let mut deferred = Vec::new();
        for d in &pending {
            match b.bind_decl(d) {
                Ok(()) => {}
                Err(e) if e.code == "mvi::data::unknown_size" => deferred.push((*d, e)),
                Err(e) => b.errors.push(e),
            }
        }
        if deferred.is_empty() || deferred.len() == pending.len() {
            b.errors.extend(deferred.into_iter().map(|(_, e)| e));
            break;
        }
        pending = deferred.into_iter().map(|(d, _)| d).collect();
    }
    b.list_ignored();
    if b.errors.is_empty() {
        Ok(b.out)
    } else {
        Err(b.errors)
    }
}

impl<'a> Binder<'a> {
    fn model_error(&self, code: &'static str, msg: String, span: Span, label: &str) -> Diagnostic {
        Diagnostic::error(code, msg, self.model_src.clone()).with_label(span, label)
    }

    fn lookup(&self, name: &str) -> Option<(f64, bool)> {
        if let Some(v) = self.out.size(name) {
            return Some((v as f64, true));
        }
        match self.out.get(name)? {
            Value::Int(i) => Some((*i as f64, true)),
            Value::Real(x) => Some((*x, false)),
            _ => None,
        }
    }

    fn entry_for(&self, d: &Decl) -> Result<Cow<'a, RawEntry>, Diagnostic> {
        if let Some(init) = &d.init {
            return self.entry_from_init(d, init);
        }
        let name = &d.name.name;
        let set: &'a DataSet = self.set;
        let Some(entry) = set.find(name) else {
            let files: Vec<&str> = self.set.sources.iter().map(|s| s.name.as_str()).collect();
            let help = if files.is_empty() {
                format!("pass the data with `--data data.json` or `--data {name}=file.csv`")
            } else {
                format!(
                    "none of {} has an entry `{name}`; add it, or pass `--data {name}=file.csv`",
                    files.join(", ")
                )
            };
            // Only entries the model does not declare: `X` is no typo for `N` if both are declared.
            let undeclared = self
                .set
                .entries
                .iter()
                .map(|e| e.name.as_str())
                .filter(|n| !self.decls.iter().any(|d| d.name.name == *n));
            let close = crate::check::error::did_you_mean(name, undeclared);
            let help = match close {
                Some(h) => format!("{h} {help}"),
                None => help,
            };
            return Err(self
                .model_error(
                    "mvi::data::missing_variable",
                    format!("no data for `{name}`"),
                    d.name.span,
                    "declared here",
                )
                .with_help(help));
        };
        if let Some(p) = &entry.problem {
            let message = format!("cannot read `{name}` from `{}`: {}", entry.source.name, p.message);
            let diag = match entry.source.named_source() {
                Some(src) => Diagnostic::error("mvi::data::malformed_value", message, src)
                    .with_label(p.span, p.message.clone()),
                None => self.model_error(
                    "mvi::data::malformed_value",
                    message,
                    d.name.span,
                    "declared here",
                ),
            };
            if let Some(help) = &p.help {
                return Err(diag.with_help(help.clone()));
            }
            return Err(diag.with_help(
                "data values are JSON numbers, arrays of them for vectors and `ints`, and arrays \
                 of rows for matrices; CSV files hold one number per cell",
            ));
        }
        Ok(Cow::Borrowed(entry))
    }

    fn entry_from_init(&self, d: &Decl, init: &Expr) -> Result<Cow<'a, RawEntry>, Diagnostic> {
        if let ExprKind::Call { func, args, .. } = &init.kind {
            if func.name == "csv" {
                let Some(ExprKind::Str(path)) = args.first().map(|a| &a.kind).filter(|_| args.len() == 1)
                else {
                    return Err(self.model_error(
                        "mvi::data::csv_argument",
                        "`csv` takes one string: the file's path".into(),
                        init.span,
                        "here",
                    ));
                };
                let full = self.model_dir.join(path);
                std::fs::File::open(&full).map_err(|e| {
                    self.model_error(
                        "mvi::data::unreadable",
                        format!("cannot read `{}`: {e}", full.display()),
                        init.span,
                        "this file",
                    )
                    .with_help("csv paths are relative to the model file")
                })?;
                let mut local = DataSet::default();
                add_csv(&mut local, &d.name.name, &full)?;
                let entry = local.entries.pop().expect("add_csv adds one entry");
                return Ok(Cow::Owned(entry));
            }
        }
        let value = literal_raw(init).map_err(|(s, m)| {
            self.model_error(
                "mvi::data::unsupported_value",
                format!(
                    "the value of data `{}` must be `csv(\"…\")` or a literal",
                    d.name.name
                ),
                s,
                &m,
            )
        })?;
        let source = Source::text(self.model_src.name(), self.model_src.inner().clone());
        Ok(Cow::Owned(RawEntry {
            name: d.name.name.clone(),
            value,
            source: Arc::new(source),
            span: init.span,
            problem: None,
        }))
    }

    fn bind_decl(&mut self, d: &Decl) -> Result<(), Diagnostic> {
        let entry = self.entry_for(d)?;
        let entry = entry.as_ref();
        let dims = self.expected_dims(d, entry)?;
        self.bind_sizes(d, entry, &dims)?;
        self.check_cells(d, entry, &dims)?;
        self.check_kind(d, entry, &dims)?;
        let value = to_value(d.ty.base, &entry.value, &dims);
        self.out.values.push((d.name.name.clone(), value));
        Ok(())
    }

    /// A problem in a data value, at the number stored at `at` (or the whole value): in the
    /// file's text (read again for a CSV file), or at the declaration for a file without
    /// text (NumPy, Parquet, Arrow, arrays from Python), whose message says the row and column.
    fn data_error(
        &self,
        d: &Decl,
        entry: &RawEntry,
        code: &'static str,
        msg: String,
        at: Option<usize>,
        label: String,
    ) -> Diagnostic {
        match entry.source.read_text() {
            Some(text) => {
                let span = at
                    .and_then(|i| entry.source.span_of(&entry.value, &text, i))
                    .unwrap_or(entry.span);
                let src = NamedSource::new(entry.source.name.clone(), text);
                Diagnostic::error(code, msg, src).with_label(span, label)
            }
            None => self.model_error(code, msg, d.name.span, &label),
        }
    }

    /// The value's dims read as the declared base type: `[]`, `[n]` or `[r, c]`.
    fn expected_dims(&self, d: &Decl, e: &RawEntry) -> Result<Vec<usize>, Diagnostic> {
        let v = &e.value;
        let file = &e.source.name;
        let found = describe_dims(v);
        let want = match d.ty.base {
            BaseType::Int | BaseType::Real if v.values.len() == 1 && (v.dims.is_empty() || v.table) => {
                return Ok(vec![])
            }
            BaseType::Int | BaseType::Real => "a single number",
            BaseType::Vector | BaseType::RowVector | BaseType::Ints if v.dims.len() == 1 => {
                return Ok(v.dims.clone())
            }
            BaseType::Vector | BaseType::RowVector | BaseType::Ints
                if v.table && (v.dims[0] == 1 || v.dims[1] == 1) =>
            {
                return Ok(vec![v.values.len()])
            }
            BaseType::Vector | BaseType::RowVector | BaseType::Ints => {
                "a flat array (one row or one column in CSV)"
            }
            BaseType::Matrix if v.dims.len() == 2 => return Ok(v.dims.clone()),
            // Stan writes a matrix with no rows as `[]`: its column count is the declared one.
            BaseType::Matrix if v.dims == [0] => return self.empty_matrix_dims(d),
            BaseType::Matrix => "a nested array of rows (a table in CSV)",
        };
        Err(self
            .data_error(
                d,
                e,
                "mvi::data::wrong_shape",
                format!(
                    "`{}` in `{file}` is {found}, but it is declared `{}`",
                    d.name.name,
                    base_name(d.ty.base)
                ),
                None,
                format!("expected {want}"),
            )
            .with_help(format!(
                "a `matrix` is written as its rows, `[[1, 2], [3, 4]]`; a `vector` or `ints` as one \
                 array; declare `{}` to match the file, or reshape the value",
                d.name.name
            )))
    }

    /// The dims `[0, K]` of a matrix given as `[]`, with `K` computed from its declaration.
    fn empty_matrix_dims(&self, d: &Decl) -> Result<Vec<usize>, Diagnostic> {
        let Some(cols) = d.ty.sizes.get(1) else {
            return Ok(vec![0, 0]);
        };
        match eval_const_expr(cols, &|n| self.lookup(n)) {
            Ok((k, true)) if k >= 0.0 => Ok(vec![0, k as usize]),
            Ok(_) => Err(self.model_error(
                "mvi::data::size_not_int",
                "a size must be a nonnegative integer".into(),
                cols.span,
                "here",
            )),
            // Deferred like any unknown size: a later declaration may bind it.
            Err((s, m)) => Err(self
                .model_error(
                    "mvi::data::unknown_size",
                    format!("cannot compute the number of columns of `{}`", d.name.name),
                    s,
                    &m,
                )
                .with_help(format!(
                    "`{}` is an empty array `[]`, which has no row to count columns in: \
                     give `{}` in the data",
                    d.name.name,
                    self.snippet(cols.span)
                ))),
        }
    }

    fn bind_sizes(&mut self, d: &Decl, e: &RawEntry, dims: &[usize]) -> Result<(), Diagnostic> {
        let file = e.source.name.clone();
        for (k, (size, &actual)) in d.ty.sizes.iter().zip(dims).enumerate() {
            let what = dim_word(d.ty.base, k);
            if let ExprKind::Name(n) = &size.kind {
                let declared = self.decls.iter().any(|x| &x.name.name == n);
                if !declared && self.lookup(n).is_none() {
                    self.out.sizes.push((n.clone(), actual as i64));
                    continue;
                }
            }
            let expected = match eval_const_expr(size, &|n| self.lookup(n)) {
                Ok((v, true)) => v,
                Ok((_, false)) => {
                    return Err(self.model_error(
                        "mvi::data::size_not_int",
                        "a size must be an integer".into(),
                        size.span,
                        "this is real",
                    ))
                }
                Err((s, m)) => {
                    return Err(self.model_error(
                        "mvi::data::unknown_size",
                        format!("cannot compute this size of `{}`", d.name.name),
                        s,
                        &m,
                    ))
                }
            };
            if (expected - actual as f64).abs() > 0.5 {
                let label = format!("{actual} {what}s here");
                let msg = format!(
                    "`{}` in `{file}` has {actual} {what}s, but its declaration `{}` needs {expected}",
                    d.name.name,
                    self.snippet(d.ty.span),
                    expected = expected as i64
                );
                let origin = self.size_origin(size);
                return Err(self
                    .data_error(d, e, "mvi::data::wrong_size", msg, None, label)
                    .with_help(origin));
            }
        }
        Ok(())
    }

    fn size_origin(&self, size: &Expr) -> String {
        let text = self.snippet(size.span);
        match &size.kind {
            ExprKind::Name(n) if self.out.size(n).is_some() => {
                let by = self.first_binder(n).unwrap_or_default();
                format!(
                    "`{n}` = {} was bound from the shape of `{by}`",
                    self.out.size(n).unwrap_or(0)
                )
            }
            ExprKind::Name(n) => format!(
                "`{n}` = {} is given in the data",
                self.lookup(n).map_or(0.0, |v| v.0)
            ),
            ExprKind::Int(_) => format!("the declaration fixes it at {text}"),
            _ => format!("`{text}` is computed from the data"),
        }
    }

    fn first_binder(&self, size: &str) -> Option<String> {
        self.decls
            .iter()
            .find(|d| {
                d.ty.sizes
                    .iter()
                    .any(|s| matches!(&s.kind, ExprKind::Name(n) if n == size))
                    && self.out.get(&d.name.name).is_some()
            })
            .map(|d| d.name.name.clone())
    }

    fn snippet(&self, span: Span) -> String {
        self.model_src
            .inner()
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
            .to_string()
    }

    fn check_cells(&self, d: &Decl, e: &RawEntry, dims: &[usize]) -> Result<(), Diagnostic> {
        let is_int = matches!(d.ty.base, BaseType::Int | BaseType::Ints);
        let lower = self.bound(&d.ty.lower)?;
        let upper = self.bound(&d.ty.upper)?;
        // one pass over the numbers; the first bad one is reported
        let bad = e.value.values.iter().position(|&x| {
            !x.is_finite()
                || (is_int && (x.fract() != 0.0 || x.abs() > MAX_EXACT_INT))
                || lower.is_some_and(|lo| x < lo)
                || upper.is_some_and(|hi| x > hi)
        });
        match bad {
            Some(i) => Err(self.cell_error(d, e, dims, i, is_int, (lower, upper))),
            None => Ok(()),
        }
    }

    /// The diagnostic for the number stored at `i`, which failed a check of [`Self::check_cells`].
    fn cell_error(
        &self,
        d: &Decl,
        e: &RawEntry,
        dims: &[usize],
        i: usize,
        is_int: bool,
        (lower, upper): (Option<f64>, Option<f64>),
    ) -> Diagnostic {
        let file = &e.source.name;
        let x = e.value.values[i];
        let at = position(dims, e.value.table, e.value.row_major_index(i));
        let name = &d.name.name;
        if x.is_nan() {
            return self
                .data_error(
                    d,
                    e,
                    "mvi::data::missing_value",
                    format!("`{name}` in `{file}` has a missing value{at}"),
                    Some(i),
                    "not a number".into(),
                )
                .with_help(
                    "data may not have missing values: drop or impute the row, or model the \
                     missing values as parameters",
                );
        }
        if x.is_infinite() {
            return self
                .data_error(
                    d,
                    e,
                    "mvi::data::not_finite",
                    format!("`{name}` in `{file}` has an infinite value{at}"),
                    Some(i),
                    "not a finite number".into(),
                )
                .with_help("data must be finite numbers (a number beyond ±1.8e308 overflows to infinity)");
        }
        if is_int && x.fract() != 0.0 {
            let msg = format!(
                "`{name}` is declared `{}` but `{file}` has a non-integer{at}",
                base_name(d.ty.base)
            );
            return self
                .data_error(
                    d,
                    e,
                    "mvi::data::not_int",
                    msg,
                    Some(i),
                    format!("{x} is not an integer"),
                )
                .with_help(format!(
                    "`{name}` holds counts, labels or indices: give whole numbers, or declare it \
                     `vector` (or `real`) if it is a measurement"
                ));
        }
        if is_int && x.abs() > MAX_EXACT_INT {
            return self
                .data_error(
                    d,
                    e,
                    "mvi::data::int_out_of_range",
                    format!("`{name}` in `{file}` has an integer too large{at}"),
                    Some(i),
                    "beyond ±2^53".into(),
                )
                .with_help(
                    "integers in data must be at most 2^53 = 9007199254740992 in magnitude \
                     (larger ones are not exact as numbers); declare it `real` if it is a \
                     measurement",
                );
        }
        let why = match (lower.filter(|lo| x < *lo), upper) {
            (Some(lo), _) => format!("below the lower bound {lo}"),
            (None, Some(hi)) => format!("above the upper bound {hi}"),
            (None, None) => unreachable!("check_cells reports only a number that fails a check"),
        };
        self.constraint_error(d, e, i, x, &at, why)
    }

    fn constraint_error(
        &self,
        d: &Decl,
        e: &RawEntry,
        i: usize,
        x: f64,
        at: &str,
        why: String,
    ) -> Diagnostic {
        let file = &e.source.name;
        let msg = format!(
            "`{}` in `{file}` violates its constraint `{}`{at}",
            d.name.name,
            self.snippet(d.ty.span)
        );
        self.data_error(
            d,
            e,
            "mvi::data::constraint_violated",
            msg,
            Some(i),
            format!("{x} is {why}"),
        )
        .with_help(format!(
            "the data must satisfy the declared bounds, as in Stan: fix the value, or loosen the \
             declaration of `{}`",
            d.name.name
        ))
    }

    fn bound(&self, b: &Option<Expr>) -> Result<Option<f64>, Diagnostic> {
        let Some(b) = b else { return Ok(None) };
        eval_const_expr(b, &|n| self.lookup(n))
            .map(|(v, _)| Some(v))
            .map_err(|(s, m)| {
                self.model_error(
                    "mvi::data::unknown_bound",
                    "cannot compute this bound from the data".into(),
                    s,
                    &m,
                )
            })
    }

    fn list_ignored(&mut self) {
        let declared: Vec<&str> = self.decls.iter().map(|d| d.name.name.as_str()).collect();
        for e in &self.set.entries {
            let line = format!("{} ({})", e.name, e.source.name);
            if !declared.contains(&e.name.as_str()) && !self.out.ignored.contains(&line) {
                self.out.ignored.push(line);
            }
        }
    }
}

fn base_name(b: BaseType) -> &'static str {
    match b {
        BaseType::Int => "int",
        BaseType::Real => "real",
        BaseType::Vector => "vector",
        BaseType::RowVector => "row_vector",
        BaseType::Matrix => "matrix",
        BaseType::Ints => "ints",
    }
}

fn dim_word(b: BaseType, k: usize) -> &'static str {
    match (b, k) {
        (BaseType::Matrix, 0) => "row",
        (BaseType::Matrix, _) => "column",
        _ => "entrie",
    }
}

fn describe_dims(v: &RawValue) -> String {
    match v.dims.as_slice() {
        [] => "a single number".into(),
        [n] => format!("an array of {n}"),
        [r, c] if v.table => format!("a table of {r} rows and {c} columns"),
        [r, c] => format!("a nested array of {r} rows and {c} columns"),
        _ => "a deeper nested array".into(),
    }
}

/// ` (row 3, column 2)` or ` (entry 4)` for cell `i` of a value with `dims`.
fn position(dims: &[usize], table: bool, i: usize) -> String {
    match dims {
        [_, c] if *c > 0 => format!(" at row {}, column {}", i / c + 1, i % c + 1),
        [_] if table => format!(" at entry {} (row or column {} of the file)", i + 1, i + 1),
        [_] => format!(" at entry {}", i + 1),
        _ => String::new(),
    }
}

fn to_value(base: BaseType, raw: &RawValue, dims: &[usize]) -> Value {
    let xs = &raw.values;
    match base {
        BaseType::Int => Value::Int(xs.first().copied().unwrap_or(0.0) as i64),
        BaseType::Real => Value::Real(xs.first().copied().unwrap_or(0.0)),
        BaseType::Vector => Value::Vector(DVector::from_column_slice(xs)),
        // a row vector is held as the 1×n matrix it is in the graph
        BaseType::RowVector => Value::Matrix(DMatrix::from_row_slice(1, xs.len(), xs)),
        BaseType::Ints => Value::Ints(xs.iter().map(|&x| x as i64).collect()),
        BaseType::Matrix if raw.col_major => Value::Matrix(DMatrix::from_column_slice(dims[0], dims[1], xs)),
        BaseType::Matrix => Value::Matrix(DMatrix::from_row_slice(dims[0], dims[1], xs)),
    }
}

/// A literal in the model (`3`, `[1, 2]`, `[[1, 0], [0, 1]]`) as a raw value.
fn literal_raw(e: &Expr) -> Result<RawValue, (Span, String)> {
    let mut values = Vec::new();
    let mut spans = Vec::new();
    let mut push = |x: &Expr| -> Result<(), (Span, String)> {
        let (value, _) = eval_const_expr(x, &|_| None).map_err(|(s, _)| (s, "not a number".to_string()))?;
        values.push(value);
        spans.push(x.span);
        Ok(())
    };
    let dims = match &e.kind {
        ExprKind::Array(items)
            if items.iter().all(|i| matches!(i.kind, ExprKind::Array(_))) && !items.is_empty() =>
        {
            let mut ncols = None;
            for row in items {
                let ExprKind::Array(r) = &row.kind else {
                    unreachable!("checked by the guard above")
                };
                if *ncols.get_or_insert(r.len()) != r.len() {
                    return Err((
                        row.span,
                        "rows of a matrix literal must have equal lengths".into(),
                    ));
                }
                r.iter().try_for_each(&mut push)?;
            }
            vec![items.len(), ncols.unwrap_or(0)]
        }
        ExprKind::Array(items) => {
            items.iter().try_for_each(&mut push)?;
            vec![items.len()]
        }
        _ => {
            push(e)?;
            vec![]
        }
    };
    Ok(RawValue {
        spans,
        ..RawValue::new(dims, values)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::add_json_text;
    use crate::syntax::ast::{Ident, TypeExpr};

    fn sp() -> Span {
        Span::new(0, 1)
    }

    fn name(n: &str) -> Expr {
        Expr {
            kind: ExprKind::Name(n.into()),
            span: sp(),
        }
    }

    fn decl(n: &str, base: BaseType, sizes: Vec<Expr>, lower: Option<Expr>) -> Decl {
        Decl {
            name: Ident {
                name: n.into(),
                span: sp(),
            },
            ty: TypeExpr {
                base,
                lower,
                upper: None,
                offset: None,
                multiplier: None,
                sizes,
                kind: None,
                span: sp(),
            },
            init: None,
            span: sp(),
        }
    }

    fn bind(json: &str, decls: &[Decl]) -> Result<BoundData, Vec<Diagnostic>> {
        let mut set = DataSet::default();
        add_json_text(&mut set, "d.json", json.into()).unwrap();
        bind_data(
            decls,
            &set,
            &NamedSource::new("m.mvi", "x".repeat(10)),
            Path::new("."),
        )
    }

    #[test]
    fn size_variables_are_bound_from_shapes_and_checked_elsewhere() {
        let decls = [
            decl("X", BaseType::Matrix, vec![name("N"), name("Q")], None),
            decl("y", BaseType::Ints, vec![name("N")], None),
        ];
        let b = bind(r#"{"X": [[1,2],[3,4],[5,6]], "y": [0,1,1], "extra": 1}"#, &decls).unwrap();
        assert_eq!(b.size("N"), Some(3));
        assert_eq!(b.size("Q"), Some(2));
        assert_eq!(b.ignored, vec!["extra (d.json)".to_string()]);
        let Some(Value::Matrix(m)) = b.get("X") else {
            panic!()
        };
        assert!((m[(1, 0)] - 3.0).abs() < 1e-12);
    }

    #[test]
    fn inconsistent_size_is_reported_with_the_binding_variable() {
        let decls = [
            decl("X", BaseType::Matrix, vec![name("N"), name("Q")], None),
            decl("y", BaseType::Ints, vec![name("N")], None),
        ];
        let e = bind(r#"{"X": [[1,2],[3,4]], "y": [0,1,1]}"#, &decls).unwrap_err();
        assert!(e[0].message.contains("has 3 entries"), "{}", e[0].message);
        assert!(e[0].help.as_deref().unwrap_or("").contains("`X`"));
    }

    #[test]
    fn declared_int_gives_a_size_and_must_be_integer() {
        let decls = [
            decl("y", BaseType::Vector, vec![name("N")], None),
            decl("N", BaseType::Int, vec![], None),
        ];
        assert!(bind(r#"{"N": 2, "y": [1.5, 2]}"#, &decls).is_ok());
        let e = bind(r#"{"N": 2.5, "y": [1.5, 2]}"#, &decls).unwrap_err();
        assert!(e[0].message.contains("non-integer"));
    }

    #[test]
    fn an_integer_beyond_2_to_the_53_is_an_error_not_saturated() {
        let decls = [decl("g", BaseType::Ints, vec![name("N")], None)];
        let e = bind(r#"{"g": [1, 12345678901234567890]}"#, &decls).unwrap_err();
        assert_eq!(e[0].code, "mvi::data::int_out_of_range");
        assert!(e[0].message.contains("entry 2"), "{}", e[0].message);
    }

    #[test]
    fn constraint_violation_names_the_entry() {
        let one = Expr {
            kind: ExprKind::Int(1),
            span: sp(),
        };
        let decls = [decl("g", BaseType::Ints, vec![name("N")], Some(one))];
        let e = bind(r#"{"g": [1, 2, 0]}"#, &decls).unwrap_err();
        assert!(e[0].message.contains("entry 3"), "{}", e[0].message);
    }

    #[test]
    fn missing_variable_is_reported_at_the_declaration() {
        let decls = [decl("y", BaseType::Vector, vec![name("N")], None)];
        let e = bind(r#"{}"#, &decls).unwrap_err();
        assert!(e[0].message.contains("no data for `y`"));
    }

    #[test]
    fn a_missing_name_is_not_taken_for_another_declared_one() {
        let decls = [
            decl("N", BaseType::Int, vec![], None),
            decl("X", BaseType::Vector, vec![name("N")], None),
        ];
        let e = bind(r#"{"X": [1, 2], "M": 2}"#, &decls).unwrap_err();
        let help = e[0].help.as_deref().unwrap_or("");
        assert!(
            help.contains("did you mean `M`?") && !help.contains("`X`?"),
            "{help}"
        );
    }

    #[test]
    fn an_empty_matrix_takes_its_columns_from_the_declaration() {
        let decls = [
            decl("K", BaseType::Int, vec![], None),
            decl("X", BaseType::Matrix, vec![name("N"), name("K")], None),
        ];
        let b = bind(r#"{"K": 3, "X": []}"#, &decls).unwrap();
        assert_eq!(b.size("N"), Some(0));
        let Some(Value::Matrix(m)) = b.get("X") else {
            panic!("X is a matrix")
        };
        assert_eq!(m.shape(), (0, 3));
    }

    #[test]
    fn a_size_expression_may_use_a_variable_bound_later() {
        let one = Expr {
            kind: ExprKind::Int(1),
            span: sp(),
        };
        let m_plus_1 = Expr {
            kind: ExprKind::Binary(BinOp::Add, Box::new(name("M")), Box::new(one)),
            span: sp(),
        };
        let decls = [
            decl("w0", BaseType::Vector, vec![m_plus_1], None),
            decl("C", BaseType::Vector, vec![name("M")], None),
        ];
        let b = bind(r#"{"w0": [1, 2, 3], "C": [1, 2]}"#, &decls).unwrap();
        assert_eq!(b.size("M"), Some(2));
        assert!(bind(r#"{"w0": [1, 2], "C": [1, 2]}"#, &decls).is_err());
    }

    #[test]
    fn const_expressions_use_integer_division() {
        let e = Expr {
            kind: ExprKind::Binary(
                BinOp::Div,
                Box::new(Expr {
                    kind: ExprKind::Int(7),
                    span: sp(),
                }),
                Box::new(Expr {
                    kind: ExprKind::Int(2),
                    span: sp(),
                }),
            ),
            span: sp(),
        };
        assert_eq!(eval_const_expr(&e, &|_| None), Ok((3.0, true)));
    }
}
