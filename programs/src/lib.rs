//! The sv2c server programs, `sv2c-pool` and `sv2c-proxy` (`cargo install --path
//! programs`): each owns its command line, logging, signals, metrics endpoint and memory
//! trimming, and runs a server of `sv2c-roles`. The `pool` and `mining_proxy` examples run
//! the same code under their own names.
//!
//! * [`pool`]: the pool that checks proof of work.
//! * [`proxy`]: the mining proxy in front of a pool, or its demo.
//! * [`config`]: their options, from flags, `SV2C_…` environment variables and a TOML
//!   file, in that order of precedence; `--help` lists them.
//! * [`metrics`]: the HTTP endpoint, `/metrics` (Prometheus), `/health` and `/ready`.
//! * [`logging`]: log lines on stderr, filtered by `RUST_LOG`.
//! * [`console`]: the demo's progress line.

use std::process::ExitCode;
use std::sync::OnceLock;

use crate::config::{CommandLine, ConfigError};
use clap::{CommandFactory, FromArgMatches};
use serde::Deserialize;

pub mod config;
pub mod console;
pub mod logging;
mod memory;
pub mod metrics;
pub mod pool;
pub mod proxy;

/// The program's name in its messages, set once by [`options`].
static NAME: OnceLock<&'static str> = OnceLock::new();

/// The program's name (`sv2c-pool`, `pool`, …) that starts its messages.
fn name() -> &'static str {
    NAME.get().copied().unwrap_or("sv2c")
}

/// Reads the command line (flags, else environment variables) of the program `name` and
/// its `--config` file, merged by `overlay`.
///
/// `--help` and `--version` are printed here: `Err(0)`. A command line clap refuses (an
/// unknown flag, a flag given twice, a value of the wrong type) or a file that cannot be
/// read is one line on stderr: `Err(2)`, as for a value `resolve` refuses.
fn options<T>(
    name: &'static str,
    about: &'static str,
    after_help: &'static str,
    overlay: impl FnOnce(T, T) -> T,
) -> Result<T, ExitCode>
where
    T: clap::Args + for<'de> Deserialize<'de> + Default,
{
    let _ = NAME.set(name);
    let command = CommandLine::<T>::command()
        .name(name)
        .bin_name(name)
        .version(env!("CARGO_PKG_VERSION"))
        .about(about)
        .after_help(after_help);
    let line = command
        .try_get_matches()
        .and_then(|matches| CommandLine::<T>::from_arg_matches(&matches));
    let line = match line {
        Ok(line) => line,
        Err(e) if !e.use_stderr() => {
            // --help or --version.
            let _ = e.print();
            return Err(ExitCode::SUCCESS);
        }
        Err(e) => {
            eprintln!("{name}: {}", ConfigError::Usage(one_line(&e)));
            return Err(ExitCode::from(2));
        }
    };
    line.merge(overlay).map_err(|e| {
        eprintln!("{name}: {e}");
        ExitCode::from(2)
    })
}

/// clap's message without its `error: ` and the usage lines after it, but with its tip
/// (`a similar argument exists: '--listen-noise'`) if it gives one.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    match text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("tip: "))
    {
        Some(tip) => format!("{first}; {tip}"),
        None => first.to_owned(),
    }
}
