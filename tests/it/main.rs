//! The integration tests, one crate so that the library is linked once: each module was a
//! test binary of its own (run one with `cargo test --test it <module>::`).

mod affine;
mod arrays;
mod arviz;
mod auto;
mod bad_check;
mod bad_syntax;
mod cdf_models;
mod check;
mod check_fuzz;
mod cli;
mod common;
mod constrained_types;
mod data_files;
mod densities;
mod derivatives;
mod examples;
/// The fit fixture that `arviz` and `report` share (tests/arviz/fixture.rs).
#[path = "../arviz/fixture.rs"]
mod fixture;
mod generated;
mod golden;
mod high_dim;
mod interrupt;
mod laplace_no_mode;
mod layers;
mod loo;
mod loops;
mod lower;
mod methods;
mod methods_examples;
mod mixture_kl;
mod nuts;
mod paper;
mod parse;
mod parse_fuzz;
mod parse_truncated;
mod pmfvb;
mod point_gradient;
mod posteriordb;
mod prior;
mod recovery;
mod repl;
mod report;
mod rng;
mod row_vector;
mod sbc;
mod sbc_run;
mod scale;
mod split_mf;
mod stan;
mod stdlib;
mod transforms;
mod user_sweep;
mod weighted_theta;
