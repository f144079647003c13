//! Every `tests/bad/syntax_*.mvi` holds one syntax mistake (its name says which); the snapshot
//! is the rendered diagnostic, without colour, at width 100.

use mvi::syntax::parse_program;

#[test]
fn each_bad_syntax_file_gives_its_diagnostic() {
    insta::glob!("../bad", "syntax_*.mvi", |path| {
        let src = std::fs::read_to_string(path).expect("test file is readable");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        let diag = match parse_program(&src, name) {
            Ok(_) => panic!("{name} parsed, but it should hold a syntax mistake"),
            Err(d) => d,
        };
        assert!(
            diag.code.starts_with("mvi::syntax::"),
            "{name}: code {}",
            diag.code
        );
        assert!(!diag.labels.is_empty(), "{name}: the diagnostic has no span");
        insta::assert_snapshot!(diag.render_plain(100));
    });
}

#[test]
fn there_are_at_least_twenty_bad_syntax_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let n = std::fs::read_dir(dir)
        .expect("tests/bad exists")
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("syntax_") && n.ends_with(".mvi")
        })
        .count();
    assert!(n >= 20, "only {n} bad syntax files");
}
