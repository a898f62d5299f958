//! Fuzz target `roundtrip`: see `binary-sv2/tests/fuzz_checks/roundtrip.rs` for the input format and
//! what is checked. Crashes found here are saved under `tests-data/fuzz/roundtrip/`, which
//! `binary-sv2/tests/malformed_regressions.rs` replays on stable Rust.
#![no_main]

#[path = "../../binary-sv2/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::roundtrip::check_input(data));
