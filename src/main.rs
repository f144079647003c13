//! The `mvi` command-line program: parses arguments and hands over to [`mvi::cli`].

use clap::Parser;
use mvi::cli::{execute, install_panic_hook, print_diagnostics, Cli, Failure, EXIT_USER_ERROR};

fn main() {
    mvi::run::tune_allocator();
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USER_ERROR } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    match execute(cli) {
        Ok(()) => {}
        Err(Failure::User(diags)) => {
            print_diagnostics(&diags);
            std::process::exit(EXIT_USER_ERROR);
        }
        Err(Failure::Code(code)) => std::process::exit(code),
    }
}
