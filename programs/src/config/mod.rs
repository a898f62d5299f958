//! The configuration of the pool and proxy programs (`sv2c-pool` and `sv2c-proxy`, run by
//! the `pool` and `mining_proxy` examples too): a TOML file (`--config FILE`), environment
//! variables and command-line flags, one name for each setting (`job_interval` in the
//! file, `SV2C_JOB_INTERVAL`, `--job-interval`); a flag overrides the environment, which
//! overrides the file.
//!
//! All three are read into one options struct per program ([`PoolOptions`],
//! [`ProxyOptions`]), whose fields define the file's keys (serde) and the flags and
//! variables (`clap`, with their `--help`): every field optional, unknown keys refused.
//! [`PoolOptions::resolve`] and [`ProxyOptions::resolve`] then check every value and load
//! the Noise keys, before anything starts; a problem is one [`ConfigError`] whose message
//! is one line naming the key (and its flag) and what is wrong with it.
//!
//! The options of each program are in their own module (`pool`, `proxy`), the checks
//! they share in `values`; the tests, in `tests.rs`, parse command lines and files as
//! the programs do.

use std::path::{Path, PathBuf};

use serde::Deserialize;

mod pool;
mod proxy;
mod values;

pub use pool::{NETWORKS, PoolOptions, PoolSettings, coinbase_output};
pub use proxy::{ProxyMode, ProxyOptions, ProxySettings};
pub use values::{ConfigError, IDENTITY_VALIDITY, default_workers};

/// Reads a TOML file into `T` (unknown keys refused by `T`'s `deny_unknown_fields`).
///
/// # Errors
/// The file cannot be read, is not TOML, or has a key `T` does not know or a value of the
/// wrong type: [`ConfigError::File`] with the line.
pub fn load_file<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConfigError> {
    let file_error = |problem: String| ConfigError::File {
        path: path.to_owned(),
        problem,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| file_error(format!("cannot read: {e}")))?;
    toml::from_str(&text).map_err(|e| {
        let message = e.message().replace('\n', " ");
        match e.span() {
            Some(span) => {
                let start = span.start.min(text.len());
                let line_no = text[..start].matches('\n').count() + 1;
                let line = text.lines().nth(line_no - 1).unwrap_or("").trim();
                file_error(format!("line {line_no} (`{line}`): {message}"))
            }
            None => file_error(message),
        }
    })
}

/// A program's command line: `--config FILE` and the options, each from its flag or, when
/// the flag is absent, from its environment variable (`SV2C_` and the key in capitals:
/// `SV2C_LISTEN`). The program gives the command its name, version and texts
/// (`clap::CommandFactory::command`); [`CommandLine::merge`] lays it over the file.
#[derive(Debug, clap::Parser)]
pub struct CommandLine<T: clap::Args> {
    /// A TOML file with these options (keys as the flags, with _ for -; unknown keys are
    /// refused). A flag overrides its environment variable, which overrides the file.
    #[arg(long, env = "SV2C_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The options the flags and environment variables set.
    #[command(flatten)]
    pub flags: T,
}

impl<T: clap::Args + for<'de> Deserialize<'de> + Default> CommandLine<T> {
    /// The options of the `--config` file (none without it), with `overlay` laying the
    /// flags' and environment's over them: flag > environment > file (`resolve` then
    /// gives the defaults).
    ///
    /// # Errors
    /// As [`load_file`].
    pub fn merge(self, overlay: impl FnOnce(T, T) -> T) -> Result<T, ConfigError> {
        let file = match &self.config {
            Some(path) => load_file::<T>(path)?,
            None => T::default(),
        };
        Ok(overlay(file, self.flags))
    }
}

#[cfg(test)]
mod tests;
