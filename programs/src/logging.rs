//! Log lines through `tracing`, filtered by `RUST_LOG`.
//!
//! The servers (`sv2c_roles`) log with `tracing` macros: upstream and listener events at
//! `info`/`warn`, every miner connection's start and end (and why it ended) at `debug`,
//! nothing per share at any level (shares are counted, see [`metrics`](crate::metrics)).
//! A program calls [`init`] once; `RUST_LOG` (e.g. `RUST_LOG=debug`,
//! `RUST_LOG=sv2c_roles=debug`) overrides the default level, `info`.

use tracing_subscriber::EnvFilter;

/// Installs the process's log subscriber: human-readable lines on stderr, filtered by
/// `RUST_LOG` or, when it is unset or does not parse, by `default` (e.g. `"info"`).
/// A second call does nothing.
pub fn init(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(crate::console::stderr_is_terminal())
        .try_init();
}
