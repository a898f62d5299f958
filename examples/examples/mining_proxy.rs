//! `mining_proxy`: the `sv2c-proxy` program (`programs/src/proxy.rs`) under the name
//! `mining_proxy`, a Stratum V2 mining proxy, or without `--upstream` its demo (mock
//! pool, proxy and simulated miners on loopback).
//!
//! From the workspace root: `cargo run --release --example mining_proxy [-- --noise]`;
//! `-- --help` lists the options (flags, `SV2C_…` environment variables, `--config
//! examples/config/proxy.toml`).

fn main() -> std::process::ExitCode {
    sv2c_programs::proxy::main("mining_proxy")
}
