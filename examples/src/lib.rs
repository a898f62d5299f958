//! Example programs of the sv2c workspace (see `examples/`). The library holds only the
//! workspace README's code blocks, compiled and run as doctests of the facade they use
//! (`cargo test -p sv2c-examples --doc`), so that they stay out of the published `sv2c`
//! package.

/// The workspace README's code blocks.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
