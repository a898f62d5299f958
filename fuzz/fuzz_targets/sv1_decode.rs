//! Fuzz target `sv1_decode`: Stratum V1 lines through `sv2c-sv1`'s codec. See
//! `sv1/tests/fuzz_checks/sv1_decode.rs` for the input format and what is checked;
//! `sv1/tests/fuzz_regressions.rs` runs the same check on stable Rust.
#![no_main]

#[path = "../../sv1/tests/fuzz_checks/sv1_decode.rs"]
mod sv1_decode;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sv1_decode::check_input(data));
