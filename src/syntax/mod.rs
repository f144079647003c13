//! Parsing `.mvi` text into an AST with byte spans on every node.
//!
//! Input: source text. Output: a [`ast::Program`] or the first syntax error as a
//! [`crate::diagnostic::Diagnostic`] (codes `mvi::syntax::…`). [`dump_ast`] prints the tree
//! for `mvi dump ast` and snapshots.

pub mod ast;
pub mod dump;
pub mod error;
mod expected;
mod help;
mod lint;
pub mod parser;
mod scan;
pub mod span;

pub use dump::dump_ast;
pub use parser::parse_program;
