//! Unit tests of the parser: precedence, spans, statements and error wording.

use super::*;
use crate::syntax::dump::dump_ast;

/// Parse `src` as the value of a top-level `let` and return its dump.
fn expr_dump(src: &str) -> String {
    let p = parse(&format!("let x = {src}\n")).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    dump_ast(&p)
}

#[test]
fn debug_dump_language_example() {
    let src = std::fs::read_to_string("/tmp/mvi_syn/lang.mvi").unwrap();
    match parse_program(&src, "lang.mvi") {
        Ok(p) => println!("{}", dump_ast(&p)),
        Err(d) => panic!("{}", d.render_plain(100)),
    }
}
