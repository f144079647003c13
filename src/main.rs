//! The `mvi` command-line program.

fn main() {}
