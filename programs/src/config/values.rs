//! The checks every program's options share: the one-line [`ConfigError`], addresses,
//! thread and connection counts, switches and the Noise identity.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_roles::identity::{DEFAULT_KEY_STOCK, NoiseIdentity, load_or_generate_identity};

/// Validity of a server role's Noise certificate (a day; restart to renew).
pub const IDENTITY_VALIDITY: Duration = Duration::from_secs(24 * 3600);

/// A configuration that cannot be used. Its `Display` is one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The command line itself is wrong (clap's refusal, in one line: an unknown argument,
    /// a flag without its value or given twice, a value of the wrong type).
    Usage(String),
    /// The configuration file cannot be read or is not valid TOML for this program.
    File {
        /// The file.
        path: PathBuf,
        /// Where and what: `line N (`text`): problem`, or the read error.
        problem: String,
    },
    /// A key has a value that cannot be used.
    Value {
        /// The key, as in the file (its flag is `--` and the key with `-` for `_`, its
        /// environment variable `SV2C_` and the key in capitals).
        key: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Usage(e) => write!(f, "{e} (--help shows the usage)"),
            ConfigError::File { path, problem } => {
                write!(f, "configuration file {}: {problem}", path.display())
            }
            ConfigError::Value { key, problem } => {
                let (flag, env) = (key.replace('_', "-"), key.to_uppercase());
                write!(f, "{key} (--{flag}, SV2C_{env}): {problem}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

pub(super) fn bad(key: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        key,
        problem: problem.into(),
    }
}

/// The values of a switch (`--noise`: alone `true`; `--noise=false`, or `SV2C_NOISE=0`,
/// turns off what the file turns on): true, false, yes, no, on, off, 1 or 0.
pub(super) fn switch() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}

/// `--upstream-flags`: a number, decimal or `0x` hex.
pub(super) fn flags_number(v: &str) -> Result<u32, String> {
    match v.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => v.parse(),
    }
    .map_err(|_| format!("{v:?} is not a number"))
}

/// `HOST:PORT` with a port number, resolved now (a host name must resolve).
pub(super) fn host_port(key: &'static str, v: &str) -> Result<String, ConfigError> {
    match v.to_socket_addrs() {
        Ok(addrs) if addrs.len() > 0 => Ok(v.to_owned()),
        Ok(_) => Err(bad(key, format!("{v:?} resolves to no address"))),
        Err(e) => Err(bad(key, format!("{v:?} is not a HOST:PORT address ({e})"))),
    }
}

/// `IP:PORT`.
pub(super) fn socket_addr(key: &'static str, v: &str) -> Result<SocketAddr, ConfigError> {
    v.parse()
        .map_err(|e| bad(key, format!("{v:?} is not an IP:PORT address ({e})")))
}

/// A runtime's worker threads: 1 to 256.
pub(super) fn threads(n: Option<usize>) -> Result<Option<usize>, ConfigError> {
    match n {
        Some(n) if !(1..=256).contains(&n) => {
            Err(bad("threads", format!("{n}: takes a number from 1 to 256")))
        }
        t => Ok(t),
    }
}

/// The proxy's workers when none are configured: one per core for workers of `threads`
/// threads (at least 1, at most 256), so that every core runs one runtime thread.
pub fn default_workers(threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cores / threads.max(1)).clamp(1, 256)
}

/// A connection cap: at least 1.
pub(super) fn max_connections(n: usize) -> Result<usize, ConfigError> {
    positive("max_connections", n)
}

/// A budget that must admit something: at least 1.
pub(super) fn positive(key: &'static str, n: usize) -> Result<usize, ConfigError> {
    if n == 0 {
        return Err(bad(key, "takes a positive number"));
    }
    Ok(n)
}

pub(super) fn identity(
    key_file: Option<&Path>,
    key_stock: Option<usize>,
) -> Result<(AuthorityPublicKey, Arc<NoiseIdentity>), ConfigError> {
    let key_stock = match key_stock {
        Some(n) if n > 1_000_000 => {
            return Err(bad("key_stock", format!("{n}: takes 0 to 1000000 keys")));
        }
        n => n.unwrap_or(DEFAULT_KEY_STOCK),
    };
    let (key, identity) = load_or_generate_identity(key_file, IDENTITY_VALIDITY)
        .map_err(|e| bad("authority_secret_file", e))?;
    let identity = identity.with_key_stock(key_stock).map_err(|e| {
        bad(
            "key_stock",
            format!("cannot start the thread that makes the keys: {e}"),
        )
    })?;
    Ok((key, Arc::new(identity)))
}
