//! Validating `infer` options against the table in `infer_keys`, from the model's `infer`
//! block and from command-line overrides (`--method`, `--set key=value`).

use super::error::did_you_mean;
use super::infer_keys::{key_spec_for, keys_for, KeySpec, ValueKind, KEYS, METHODS};
use super::TypedModel;
use crate::diagnostic::Diagnostic;
use crate::options::{InferOption, InferOptions, OptionValue};
use crate::syntax::ast::{InferValue, Item, Program};
use crate::syntax::span::Span;
use miette::NamedSource;

/// One entry to validate, with the text its spans point into.
struct Entry<'a> {
    key: String,
    key_span: Span,
    value: Result<OptionValue, String>,
    value_span: Span,
    src: &'a NamedSource<String>,
}

fn convert(v: &InferValue) -> Result<OptionValue, String> {
    match v {
        InferValue::Int(i) => Ok(OptionValue::Int(*i)),
        InferValue::Real(x) => Ok(OptionValue::Real(*x)),
        InferValue::Word(w) => Ok(OptionValue::Ident(w.clone())),
        InferValue::List(items) => {
            let mut blocks = Vec::new();
            for it in items {
                match it {
                    InferValue::Word(w) => blocks.push(vec![w.clone()]),
                    InferValue::List(inner) => {
                        let names: Option<Vec<String>> = inner
                            .iter()
                            .map(|x| {
                                if let InferValue::Word(w) = x {
                                    Some(w.clone())
                                } else {
                                    None
                                }
                            })
                            .collect();
                        blocks.push(names.ok_or("a block lists parameter names")?);
                    }
                    _ => return Err("a block lists parameter names".into()),
                }
            }
            Ok(OptionValue::Blocks(blocks))
        }
    }
}

/// Check the model's `infer` block(s); returns the options (as written) and any problems.
pub(super) fn check_infer_block(
    program: &Program,
    src: &NamedSource<String>,
    params: &[String],
) -> (InferOptions, Vec<Diagnostic>) {
    let mut entries = Vec::new();
    for item in &program.items {
        let Item::Infer(b) = item else { continue };
        for e in &b.entries {
            entries.push(Entry {
                key: e.key.name.clone(),
                key_span: e.key.span,
                value: convert(&e.value),
                value_span: e.value_span,
                src,
            });
        }
    }
    let mut errors = duplicate_keys(&entries);
    errors.extend(validate(&entries, params));
    let options = entries
        .into_iter()
        .filter_map(|e| {
            Some(InferOption {
                key: e.key,
                value: e.value.ok()?,
                span: Some(e.value_span),
            })
        })
        .collect();
    (
        InferOptions {
            entries: options,
            source: src.clone(),
        },
        errors,
    )
}

fn duplicate_keys(entries: &[Entry]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(first) = entries[..i].iter().find(|f| f.key == e.key) {
            out.push(
                Diagnostic::error(
                    "mvi::check::duplicate_infer_key",
                    format!("`{}` is set twice", e.key),
                    e.src.clone(),
                )
                .with_label(e.key_span, "set again here")
                .with_label(first.key_span, "first set here"),
            );
        }
    }
    out
}

/// The method the entries choose (the last `method`), if it is a known one.
fn chosen_method(entries: &[Entry]) -> Option<String> {
    match entries.iter().rev().find(|e| e.key == "method").map(|e| &e.value) {
        None => Some("laplace".into()),
        Some(Ok(OptionValue::Ident(m))) if METHODS.contains(&m.as_str()) => Some(m.clone()),
        Some(_) => None,
    }
}

fn validate(entries: &[Entry], params: &[String]) -> Vec<Diagnostic> {
    let method = chosen_method(entries);
    let mut errors = Vec::new();
    for e in entries {
        if let Err(d) = validate_entry(e, method.as_deref(), params) {
            errors.push(d);
        }
    }
    errors
}

/// The help line of a bad value: what the key takes and its default.
fn value_help(spec: &KeySpec) -> String {
    match spec.default {
        Some(d) => format!(
            "`{}` takes {}; its default is {d}",
            spec.key,
            spec.kind.describe()
        ),
        None => format!("`{}` takes {}", spec.key, spec.kind.describe()),
    }
}

fn validate_entry(e: &Entry, method: Option<&str>, params: &[String]) -> Result<(), Diagnostic> {
    let err = |code, msg: String| Diagnostic::error(code, msg, e.src.clone());
    let Some(spec) = key_spec_for(&e.key, method) else {
        let valid = method.map_or_else(|| KEYS.iter().map(|k| k.key).collect(), keys_for);
        let mut help = format!(
            "valid keys{}: {}",
            method.map(|m| format!(" for `{m}`")).unwrap_or_default(),
            valid.join(", ")
        );
        if let Some(h) = did_you_mean(&e.key, KEYS.iter().map(|k| k.key)) {
            help = format!("{h} {help}");
        }
        return Err(err(
            "mvi::check::unknown_infer_key",
            format!("unknown `infer` key `{}`", e.key),
        )
        .with_label(e.key_span, "unknown key")
        .with_help(help));
    };
    let value = match &e.value {
        Ok(v) => v,
        Err(m) => {
            return Err(err(
                "mvi::check::bad_infer_value",
                format!("`{}` expects {}", e.key, spec.kind.describe()),
            )
            .with_label(e.value_span, m.clone())
            .with_help(value_help(spec)))
        }
    };
    if spec.kind == ValueKind::Method {
        return check_method_value(e, value);
    }
    if let Some(m) = method.filter(|m| !spec.methods.includes(m)) {
        let users: Vec<&str> = METHODS
            .iter()
            .copied()
            .filter(|x| spec.methods.includes(x))
            .collect();
        return Err(err(
            "mvi::check::key_not_for_method",
            format!("`{}` does not apply to method `{m}`", e.key),
        )
        .with_label(e.key_span, format!("not a `{m}` option"))
        .with_help(format!(
            "`{}` is used by {}; valid keys for `{m}`: {}{}",
            e.key,
            users.join(", "),
            keys_for(m).join(", "),
            if m == "auto" {
                format!(
                    " (`auto` takes the options that every method it may try takes: {})",
                    crate::check::infer_keys::AUTO_LADDER.join(", ")
                )
            } else {
                String::new()
            }
        )));
    }
    if !spec.kind.accepts(value) {
        return Err(err(
            "mvi::check::bad_infer_value",
            format!(
                "`{}` expects {}, found {}",
                e.key,
                spec.kind.describe(),
                show(value)
            ),
        )
        .with_label(e.value_span, "this value")
        .with_help(value_help(spec)));
    }
    if let OptionValue::Blocks(blocks) = value {
        for n in blocks.iter().flatten() {
            if !params.contains(n) {
                let help = did_you_mean(n, params.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("params: {}", params.join(", ")));
                return Err(err(
                    "mvi::check::unknown_block_param",
                    format!("`blocks` names `{n}`, which is not a param"),
                )
                .with_label(e.value_span, "in this list")
                .with_help(help));
            }
        }
    }
    Ok(())
}

fn check_method_value(e: &Entry, value: &OptionValue) -> Result<(), Diagnostic> {
    if ValueKind::Method.accepts(value) {
        return Ok(());
    }
    let found = show(value);
    let mut help = format!("known methods: {}", METHODS.join(", "));
    if let OptionValue::Ident(w) = value {
        if let Some(h) = did_you_mean(w, METHODS.iter().copied()) {
            help = format!("{h} {help}");
        }
    }
    Err(Diagnostic::error(
        "mvi::check::unknown_method",
        format!("unknown inference method {found}"),
        e.src.clone(),
    )
    .with_label(e.value_span, "not a method")
    .with_help(help))
}

fn show(v: &OptionValue) -> String {
    match v {
        OptionValue::Int(i) => format!("`{i}`"),
        OptionValue::Real(x) => format!("`{x:?}`"),
        OptionValue::Ident(w) => format!("`{w}`"),
        OptionValue::Blocks(b) => format!(
            "a list of {} block{}",
            b.len(),
            if b.len() == 1 { "" } else { "s" }
        ),
    }
}

/// Parse a command-line value: an integer, a real, a word, or `[[a, b], [c]]` / `[a, b]`.
pub fn parse_override(text: &str) -> OptionValue {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return OptionValue::Int(i);
    }
    if let Ok(x) = t.parse::<f64>() {
        return OptionValue::Real(x);
    }
    if t.starts_with('[') {
        let inner = t.trim_start_matches('[').trim_end_matches(']');
        let nested = t.starts_with("[[");
        let groups: Vec<Vec<String>> = if nested {
            inner
                .split("],")
                .map(|g| {
                    g.split(',')
                        .map(|s| {
                            s.trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace())
                                .to_string()
                        })
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .collect()
        } else {
            inner
                .split(',')
                .map(|s| vec![s.trim().to_string()])
                .filter(|g| !g[0].is_empty())
                .collect()
        };
        return OptionValue::Blocks(groups);
    }
    OptionValue::Ident(t.to_string())
}

/// The run's options: the model's `infer` block with command-line overrides applied, in
/// order (`("method", "mvi_eig")` for `--method`, `(key, value)` for `--set key=value`).
/// Everything is validated against the method finally chosen; problems in an override
/// point into a rendering of the command line (`--method … --set …`).
///
/// # Errors
/// The first invalid key or value.
pub fn infer_options(model: &TypedModel, overrides: &[(String, String)]) -> Result<InferOptions, Diagnostic> {
    let mut cmdline = String::new();
    let mut spans = Vec::new();
    for (k, v) in overrides {
        if !cmdline.is_empty() {
            cmdline.push(' ');
        }
        let key_start;
        if k == "method" {
            cmdline.push_str("--method ");
            key_start = cmdline.len() - "method ".len();
        } else {
            cmdline.push_str("--set ");
            key_start = cmdline.len();
            cmdline.push_str(k);
            cmdline.push('=');
        }
        let vstart = cmdline.len();
        cmdline.push_str(v);
        spans.push((
            Span::new(key_start, key_start + k.len()),
            Span::new(vstart, cmdline.len()),
        ));
    }
    let cmd_src = NamedSource::new("<command line>", cmdline);
    let model_src = &model.infer.source;
    let mut entries: Vec<Entry> = model
        .infer
        .entries
        .iter()
        .map(|o| {
            let span = o.span.unwrap_or_default();
            Entry {
                key: o.key.clone(),
                key_span: span,
                value: Ok(o.value.clone()),
                value_span: span,
                src: model_src,
            }
        })
        .collect();
    // `--method` chooses another method than the model's: the model's options that do not
    // apply to it (e.g. `rank` of `mvi_lr` when running `laplace`) are left out, as the
    // model's author wrote them for their own method.
    if let Some((_, m)) = overrides.iter().rev().find(|(k, _)| k == "method") {
        entries.retain(|e| {
            crate::check::infer_keys::key_spec_for(&e.key, Some(m)).is_none_or(|s| s.methods.includes(m))
        });
    }
    for ((k, v), (ks, vs)) in overrides.iter().zip(&spans) {
        entries.push(Entry {
            key: k.clone(),
            key_span: *ks,
            value: Ok(parse_override(v)),
            value_span: *vs,
            src: &cmd_src,
        });
    }
    let params: Vec<String> = model.params.iter().map(|p| p.name.clone()).collect();
    if let Some(d) = validate(&entries, &params).into_iter().next() {
        return Err(d);
    }
    let mut options: Vec<InferOption> = Vec::new();
    for e in entries {
        let value = e.value.expect("override values always parse (parse_override)");
        options.retain(|o| o.key != e.key);
        let span = std::ptr::eq(e.src, model_src).then_some(e.value_span);
        options.push(InferOption {
            key: e.key,
            value,
            span,
        });
    }
    Ok(InferOptions {
        entries: options,
        source: model_src.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_numbers_words_and_blocks() {
        assert_eq!(parse_override("500"), OptionValue::Int(500));
        assert_eq!(parse_override("0.5"), OptionValue::Real(0.5));
        assert_eq!(parse_override("mvi_eig"), OptionValue::Ident("mvi_eig".into()));
        assert_eq!(
            parse_override("[[w], [a, b]]"),
            OptionValue::Blocks(vec![vec!["w".into()], vec!["a".into(), "b".into()]])
        );
        assert_eq!(
            parse_override("[w, b]"),
            OptionValue::Blocks(vec![vec!["w".into()], vec!["b".into()]])
        );
    }

    fn entry<'a>(key: &str, value: OptionValue, src: &'a NamedSource<String>) -> Entry<'a> {
        Entry {
            key: key.into(),
            key_span: Span::new(0, 1),
            value: Ok(value),
            value_span: Span::new(0, 1),
            src,
        }
    }

    #[test]
    fn rank_is_rejected_for_laplace_and_accepted_for_mvi_lr() {
        let src = NamedSource::new("x", "x".to_string());
        let bad = validate(&[entry("rank", OptionValue::Int(2), &src)], &[]);
        assert_eq!(bad[0].code, "mvi::check::key_not_for_method");
        let good = validate(
            &[
                entry("method", OptionValue::Ident("mvi_lr".into()), &src),
                entry("rank", OptionValue::Int(2), &src),
            ],
            &[],
        );
        assert!(good.is_empty());
    }

    #[test]
    fn unknown_method_suggests_the_closest() {
        let src = NamedSource::new("x", "x".to_string());
        let e = validate(
            &[entry("method", OptionValue::Ident("mvi_eigg".into()), &src)],
            &[],
        );
        assert!(e[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("did you mean `mvi_eig`"));
    }
}
