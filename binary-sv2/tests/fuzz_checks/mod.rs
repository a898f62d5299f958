//! Checks shared by the fuzz targets and the stable tests that replay their inputs.
//!
//! The fuzz targets (`fuzz/fuzz_targets/*.rs`) include this directory with
//! `#[path = "../../binary-sv2/tests/fuzz_checks/mod.rs"] mod fuzz_checks;`, and
//! `tests/malformed_regressions.rs` includes it as an ordinary test module, so a saved
//! fuzz input is replayed by `cargo test` through exactly the code the fuzzer ran.
//! `codec-sv2/tests/fuzz_checks` reuses `alloc.rs`, `message_decode.rs` and `replay.rs` the
//! same way.
//!
//! Every binary that includes it must register [`alloc::Tracking`] as its global
//! allocator (the checks assert it is).
#![allow(dead_code, unreachable_pub)]

pub mod alloc;
pub mod message_decode;
pub mod replay;
pub mod roundtrip;
