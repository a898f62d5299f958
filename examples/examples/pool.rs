//! `pool`: the `sv2c-pool` program (`programs/src/pool.rs`) under the name `pool`, a
//! Stratum V2 pool server that checks every share's proof of work.
//!
//! From the workspace root: `cargo run --release --example pool -- --noise`; `-- --help`
//! lists the options (flags, `SV2C_…` environment variables, `--config
//! examples/config/pool.toml`).

fn main() -> std::process::ExitCode {
    sv2c_programs::pool::main("pool")
}
