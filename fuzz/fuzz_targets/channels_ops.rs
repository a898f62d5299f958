//! Fuzz target `channels_ops`: see `channels/tests/fuzz_checks/channels_ops.rs` for the
//! input format and what is checked. `channels/tests/ops_smoke.rs` runs the same check on
//! stable Rust over fixed-seed inputs; a crash found here can be replayed by calling
//! `check_input` on it there.
#![no_main]

#[path = "../../channels/tests/fuzz_checks/channels_ops.rs"]
mod channels_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    channels_ops::check_input(data);
});
