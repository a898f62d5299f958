//! Runs the small example programs, which check their own output with `assert!`s, so that
//! `cargo test` keeps them working. (The `mining_proxy` example's parts are tested in
//! `roles/tests/mining_proxy.rs`, with the roles they run.)

#[path = "../examples/custom_message.rs"]
#[allow(dead_code, unreachable_pub)]
mod custom_message;

#[path = "../examples/ref_vs_owned.rs"]
#[allow(dead_code, unreachable_pub)]
mod ref_vs_owned;

#[test]
fn custom_message_example_runs() {
    custom_message::main().unwrap();
}

#[test]
fn ref_vs_owned_example_runs() {
    ref_vs_owned::main().unwrap();
}
