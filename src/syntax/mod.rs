//! Parsing `.mvi` text into an AST with byte spans on every node.

pub mod ast;
pub mod span;
