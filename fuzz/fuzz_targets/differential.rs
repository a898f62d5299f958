//! Fuzz target `differential`: any frame payload through our decoder and the reference
//! implementation's (`parsers_sv2` 0.6 / `framing_sv2` 8 / `binary_sv2` 7); they must
//! agree on accept/reject and on the re-encoding. See
//! `binary-sv2/tests/fuzz_checks/differential.rs` for the input format and the check;
//! inputs saved under `tests-data/fuzz/differential/` replay in `cargo test`
//! (`binary-sv2/tests/differential_regressions.rs`).
#![no_main]

#[path = "../../binary-sv2/tests/fuzz_checks/differential.rs"]
mod differential;

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::check_input(data));
