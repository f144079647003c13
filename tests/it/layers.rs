//! The modules of `src/` import only downward: every `crate::<module>` path (also inside
//! `use crate::{…}` groups, and `super::…` chains that climb to the crate root) outside
//! `#[cfg(test)]` code names a module of the importing module's own layer or of a layer
//! below it, in the order listed under "# Layers" in `src/lib.rs`'s module doc.
//!
//! The test reads the sources, not the compiler's view: it follows the `mod` declarations
//! from `src/lib.rs` (with `#[path]`), blanks comments (doc comments included), string and
//! character literals, drops every `#[cfg(test)]` item by its extent (up to its `;` or its
//! closing brace) and every file that only a `#[cfg(test)] mod …;` declares, and reports each
//! import against the order with its file, line and edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One import of a top-level module by another: where it is written and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Import {
    /// The line (1-based) of the path in its file.
    line: usize,
    /// The top-level module named.
    target: String,
}

/// The layers listed in `lib.rs`'s module doc, bottom first: the modules named as
/// ``[`module`]`` (or ``[`module`](mod@module)``) before the first `:` of each numbered
/// item of the "# Layers" section.
fn documented_layers(lib_rs: &str) -> Vec<Vec<String>> {
    let mut layers: Vec<Vec<String>> = Vec::new();
    let mut in_section = false;
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if let Some(heading) = doc.strip_prefix('#') {
            in_section = heading.trim_start_matches('#').trim() == "Layers";
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        assert_eq!(
            number.parse::<usize>().ok(),
            Some(layers.len() + 1),
            "lib.rs's layers must be numbered 1, 2, 3, … in order: `{doc}`"
        );
        let names_part = rest.split_once(':').map_or(rest, |(names, _)| names);
        let names: Vec<String> = names_part
            .split("[`")
            .skip(1)
            .filter_map(|s| s.split_once("`]").map(|(name, _)| name.to_string()))
            .collect();
        assert!(
            !names.is_empty(),
            "layer {number} of lib.rs names no module: `{doc}`"
        );
        layers.push(names);
    }
    layers
}

/// `text` with comments, string literals and character literals replaced by spaces (line
/// breaks kept), so that offsets and line numbers stay those of the file.
fn mask(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i + 1) == '/' {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && at(i + 1) == '*' {
            let (mut depth, mut k) = (1, i + 2);
            while k < c.len() && depth > 0 {
                if c[k] == '/' && at(k + 1) == '*' {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && at(k + 1) == '/' {
                    depth -= 1;
                    k += 2;
                } else {
                    k += 1;
                }
            }
            blank(&mut out, i, k);
            i = k;
        } else if (c[i] == 'r' || (c[i] == 'b' && at(i + 1) == 'r')) && (i == 0 || !ident(c[i - 1])) && {
            let s = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = (s..c.len()).take_while(|&k| c[k] == '#').count();
            at(s + hashes) == '"'
        } {
            // a raw string: r"…", r#"…"#, br"…"
            let s = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = (s..c.len()).take_while(|&k| c[k] == '#').count();
            let body = s + hashes + 1;
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let end = (body..c.len())
                .find(|&k| c[k..].starts_with(&closing))
                .map_or(c.len(), |k| k + closing.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, k + 1);
            i = k + 1;
        } else if c[i] == '\'' {
            // a character literal ('x', '\n', '\u{…}'), or else a lifetime or label ('a)
            let end = if at(i + 1) == '\\' {
                (i + 2..c.len()).find(|&k| c[k] == '\'').map(|k| k + 1)
            } else if at(i + 2) == '\'' {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// The end (exclusive, in chars) of the item that starts at `from`: after its first `;` or
/// the brace that closes its first `{` at the item's own level; at the closing bracket of
/// whatever encloses it, if that comes first.
fn item_end(c: &[char], from: usize) -> usize {
    let mut depth: i64 = 0;
    let mut k = from;
    // attributes after `#[cfg(test)]` belong to the same item
    loop {
        while k < c.len() && c[k].is_whitespace() {
            k += 1;
        }
        if k < c.len() && c[k] == '#' {
            let close = (k..c.len()).find(|&j| c[j] == ']').unwrap_or(c.len() - 1);
            k = close + 1;
        } else {
            break;
        }
    }
    while k < c.len() {
        match c[k] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            ';' if depth == 0 => return k + 1,
            _ => {}
        }
        if depth < 0 {
            return k;
        }
        k += 1;
    }
    c.len()
}

/// `masked` (see [`mask`]) with every `#[cfg(test)]` item blanked.
fn without_test_items(masked: &str) -> String {
    let c: Vec<char> = masked.chars().collect();
    let mut out = c.clone();
    let pattern: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + pattern.len() <= c.len() {
        if c[i..i + pattern.len()] == pattern[..] {
            let end = item_end(&c, i + pattern.len());
            for ch in out.iter_mut().take(end).skip(i) {
                if *ch != '\n' {
                    *ch = ' ';
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// The `mod name;` declarations left in `code` (no `#[cfg(test)]` ones), with the file a
/// `#[path = "…"]` attribute gives, read from `original` at the same place.
fn module_declarations(code: &str, original: &str) -> Vec<(String, Option<String>)> {
    let c: Vec<char> = code.chars().collect();
    let o: Vec<char> = original.chars().collect();
    let words = |k: usize| -> Option<(String, usize)> {
        let start = (k..c.len()).find(|&j| !c[j].is_whitespace())?;
        let end = (start..c.len())
            .find(|&j| !(c[j].is_alphanumeric() || c[j] == '_'))
            .unwrap_or(c.len());
        Some((c[start..end].iter().collect(), end))
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 < c.len() {
        let starts_word = i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if starts_word && c[i..].starts_with(&['m', 'o', 'd']) && c[i + 3].is_whitespace() {
            if let Some((name, after)) = words(i + 3) {
                let next = (after..c.len()).find(|&j| !c[j].is_whitespace());
                if next.is_some_and(|j| c[j] == ';') {
                    // a `#[path = "…"]` among its own attributes: since the end of the item
                    // before it
                    let start = (0..i)
                        .rev()
                        .find(|&j| matches!(c[j], ';' | '{' | '}'))
                        .map_or(0, |j| j + 1);
                    let before: String = o[start..i].iter().collect();
                    let path = before.rsplit_once("#[path").and_then(|(_, attr)| {
                        let attr = attr.split(']').next()?;
                        let start = attr.find('"')? + 1;
                        let end = attr[start..].find('"')? + start;
                        Some(attr[start..end].to_string())
                    });
                    found.push((name, path));
                }
            }
        }
        i += 1;
    }
    found
}

/// One source file of the library: its path, its top-level module and its code without
/// comments, literals and test items.
struct Source {
    path: PathBuf,
    /// The module path, e.g. `["graph", "lower", "calls"]` (empty for `lib.rs`).
    module: Vec<String>,
    code: String,
}

/// Every file of the library reachable from `lib.rs` through `mod` declarations outside
/// `#[cfg(test)]`.
fn library_sources(src: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut todo = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((path, module)) = todo.pop() {
        let text =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let code = without_test_items(&mask(&text));
        let dir = path.parent().expect("a file in a directory").to_path_buf();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let children_dir = if stem == "lib" || stem == "mod" {
            dir.clone()
        } else {
            dir.join(stem)
        };
        for (name, explicit) in module_declarations(&code, &text) {
            let file = match explicit {
                Some(p) => dir.join(p),
                None => {
                    let flat = children_dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        children_dir.join(&name).join("mod.rs")
                    }
                }
            };
            assert!(
                file.exists(),
                "{}: `mod {name};` has no file {}",
                path.display(),
                file.display()
            );
            let mut child = module.clone();
            child.push(name);
            todo.push((file, child));
        }
        out.push(Source { path, module, code });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The top-level modules that `code` (of a file at module path `module`) names through
/// `crate::name`, `crate::{name, …}` or a `super::` chain that reaches the crate root.
fn imports(code: &str, module: &[String], top_modules: &BTreeSet<String>) -> Vec<Import> {
    let c: Vec<char> = code.chars().collect();
    let line_of = |k: usize| 1 + c[..k].iter().filter(|&&ch| ch == '\n').count();
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let skip_ws = |mut k: usize| {
        while k < c.len() && c[k].is_whitespace() {
            k += 1;
        }
        k
    };
    let word_at = |k: usize| -> (String, usize) {
        let end = (k..c.len()).find(|&j| !is_ident(c[j])).unwrap_or(c.len());
        (c[k..end].iter().collect(), end)
    };
    // after `::` (at `k`): the next segment's name, or each first name of a `{…}` group
    let names_after = |k: usize| -> Vec<(String, usize)> {
        let k = skip_ws(k);
        if k < c.len() && c[k] == '{' {
            let mut names = Vec::new();
            let (mut depth, mut j, mut expect_name) = (0, k, true);
            while j < c.len() {
                match c[j] {
                    '{' => {
                        depth += 1;
                        expect_name = depth == 1;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => expect_name = true,
                    ch if is_ident(ch) && expect_name && depth == 1 => {
                        let (w, end) = word_at(j);
                        names.push((w, j));
                        expect_name = false;
                        j = end;
                        continue;
                    }
                    ch if !ch.is_whitespace() => expect_name = false,
                    _ => {}
                }
                j += 1;
            }
            names
        } else if k < c.len() && is_ident(c[k]) {
            vec![(word_at(k).0, k)]
        } else {
            Vec::new()
        }
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if !is_ident(c[i]) || (i > 0 && (is_ident(c[i - 1]) || c[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let (word, mut end) = word_at(i);
        let mut climbs = 0;
        if word == "super" {
            // `super::super::…`: how far up it climbs
            climbs = 1;
            loop {
                let k = skip_ws(end);
                if !(c.get(k) == Some(&':') && c.get(k + 1) == Some(&':')) {
                    break;
                }
                let n = skip_ws(k + 2);
                let (next, next_end) = word_at(n);
                if next != "super" {
                    break;
                }
                climbs += 1;
                end = next_end;
            }
        }
        let reaches_root = word == "crate" || (word == "super" && climbs == module.len());
        let k = skip_ws(end);
        if reaches_root && c.get(k) == Some(&':') && c.get(k + 1) == Some(&':') {
            for (name, at) in names_after(k + 2) {
                if top_modules.contains(&name) {
                    found.push(Import {
                        line: line_of(at),
                        target: name,
                    });
                }
            }
        }
        i = end.max(i + 1);
    }
    found
}

#[test]
fn every_module_imports_only_its_own_layer_or_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let lib_rs = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let layers = documented_layers(&lib_rs);
    assert!(layers.len() > 1, "src/lib.rs's module doc lists no \"# Layers\"");
    let mut layer_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, names) in layers.iter().enumerate() {
        for name in names {
            assert!(
                layer_of.insert(name.clone(), i + 1).is_none(),
                "`{name}` is in two layers of lib.rs's list"
            );
        }
    }
    let sources = library_sources(&src);
    let top_modules: BTreeSet<String> = sources
        .iter()
        .filter(|s| s.module.len() == 1)
        .map(|s| s.module[0].clone())
        .collect();
    let unlisted: Vec<&String> = top_modules
        .iter()
        .filter(|m| !layer_of.contains_key(*m))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules in no layer of src/lib.rs's \"# Layers\" list: {unlisted:?}; add each to the layer it belongs to"
    );
    let unknown: Vec<&String> = layer_of.keys().filter(|m| !top_modules.contains(*m)).collect();
    assert!(
        unknown.is_empty(),
        "src/lib.rs's layers name modules that do not exist: {unknown:?}"
    );
    let mut against = Vec::new();
    for s in sources.iter().filter(|s| !s.module.is_empty()) {
        let from = &s.module[0];
        for import in imports(&s.code, &s.module, &top_modules) {
            let (lf, lt) = (layer_of[from], layer_of[&import.target]);
            if lt > lf {
                against.push(format!(
                    "{}:{}: {from} (layer {lf}) imports {} (layer {lt})",
                    s.path.strip_prefix(root).unwrap_or(&s.path).display(),
                    import.line,
                    import.target
                ));
            }
        }
    }
    assert!(
        against.is_empty(),
        "{} import(s) against the layers of src/lib.rs (a module may import only its own layer or \
         below; move the shared item down, or hand data up to the caller):\n{}",
        against.len(),
        against.join("\n")
    );
}

#[test]
fn the_scan_sees_paths_and_groups_but_not_comments_strings_or_test_items() {
    let tops: BTreeSet<String> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = r##"//! Uses `crate::f` in a doc comment.
use crate::a::x;
use crate::{b, c::{y, z}};
/* crate::f in a block comment */
fn g<'t>(s: &'t str) -> char {
    let _ = "crate::f in a string";
    let _ = r#"crate::f in a raw string"#;
    let _ = crate::d::call();
    '{'
}
#[cfg(test)]
mod tests {
    use crate::f;
    fn inner() { let _ = '}'; }
}
#[cfg(test)]
#[path = "elsewhere.rs"]
mod more;
fn after() -> usize { super::super::e::N }
"##;
    let code = without_test_items(&mask(text));
    let found: Vec<(usize, String)> = imports(&code, &["m".to_string(), "n".to_string()], &tops)
        .into_iter()
        .map(|i| (i.line, i.target))
        .collect();
    let want: Vec<(usize, String)> = [(2, "a"), (3, "b"), (3, "c"), (8, "d"), (19, "e")]
        .iter()
        .map(|&(l, m)| (l, m.to_string()))
        .collect();
    assert_eq!(found, want);
    assert!(
        module_declarations(&code, text).is_empty(),
        "test modules are not followed"
    );
}

#[test]
fn the_layers_are_read_from_the_numbered_list() {
    let doc = "//! Intro with [`x`].\n//!\n//! # Layers\n//!\n//! 1. [`a`]: the bottom, not [`z`].\n\
               //! 2. [`b`], [`c`](mod@c): next;\n//!    continued.\n//!\n//! # Other\n//! 3. [`q`]: not a layer.\n";
    let want: Vec<Vec<String>> = vec![vec!["a".into()], vec!["b".into(), "c".into()]];
    assert_eq!(documented_layers(doc), want);
}
