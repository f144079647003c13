//! Parsing `.mvi` text into an AST with byte spans on every node.

pub mod ast;
pub mod span;
/// TEMP stub
pub fn parse_program(_src: &str, _file: &str) -> Result<ast::Program, crate::diagnostic::Diagnostic> { unimplemented!() }
