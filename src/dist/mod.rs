//! Built-in distributions.
