//! Fuzz target `frame_stream`: see `codec-sv2/tests/fuzz_checks/frame_stream.rs` for the input format and
//! what is checked. Crashes found here are saved under `tests-data/fuzz/frame_stream/`, which
//! `codec-sv2/tests/fuzz_regressions.rs` replays on stable Rust.
#![no_main]

#[path = "../../codec-sv2/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::frame_stream::check_input(data));
