//! Checks shared by the fuzz targets and the stable tests that replay their inputs.
//!
//! The fuzz targets `frame_stream` and `pool_ops` include this directory with
//! `#[path = "../../codec-sv2/tests/fuzz_checks/mod.rs"] mod fuzz_checks;`, and
//! `tests/fuzz_regressions.rs` and `tests/malformed.rs` include it as an ordinary test
//! module, so a saved fuzz input is replayed by `cargo test` through exactly the code the
//! fuzzer ran. The allocation tracker, the per-payload `message_decode` check and the
//! replay helpers are `sv2c-binary`'s (`binary-sv2/tests/fuzz_checks`), included from
//! there, not copied.
//!
//! Every binary that includes it must register [`alloc::Tracking`] as its global
//! allocator (the checks assert it is).
#![allow(dead_code, unreachable_pub)]

#[path = "../../../binary-sv2/tests/fuzz_checks/alloc.rs"]
pub mod alloc;
pub mod frame_stream;
#[path = "../../../binary-sv2/tests/fuzz_checks/message_decode.rs"]
pub mod message_decode;
pub mod pool_ops;
#[path = "../../../binary-sv2/tests/fuzz_checks/replay.rs"]
pub mod replay;
pub mod seeds;
