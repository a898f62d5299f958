//! The configuration of the pool and proxy programs (`sv2c-pool` and `sv2c-proxy`, run by
//! the `pool` and `mining_proxy` examples too): a TOML file (`--config FILE`), environment
//! variables and command-line flags, one name for each setting (`job_interval` in the
//! file, `SV2C_JOB_INTERVAL`, `--job-interval`); a flag overrides the environment, which
//! overrides the file.
//!
//! All three are read into one options struct per program ([`PoolOptions`],
//! [`ProxyOptions`]), whose fields define the file's keys (serde) and the flags and
//! variables (`clap`, with their `--help`): every field optional, unknown keys refused. [`PoolOptions::resolve`]
//! and [`ProxyOptions::resolve`] then check every value and load the Noise keys, before
//! anything starts; a problem is one [`ConfigError`] whose message is one line naming the
//! key (and its flag) and what is wrong with it.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use sv2c_codec::noise::AuthorityPublicKey;

use crate::identity::NoiseIdentity;

use crate::identity::{DEFAULT_KEY_STOCK, load_or_generate_identity};
use crate::pool::{PoolConfig, TemplateProviderConfig};
use crate::proxy::{Failover, REQUIRES_VERSION_ROLLING, Upstream};
use sv2c_channels::pow::target_with_zero_bits;
use sv2c_channels::vardiff::VardiffConfig;

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

fn bad(key: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        key,
        problem: problem.into(),
    }
}

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

/// The values of a switch (`--noise`: alone `true`; `--noise=false`, or `SV2C_NOISE=0`,
/// turns off what the file turns on): true, false, yes, no, on, off, 1 or 0.
fn switch() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}

/// `--upstream-flags`: a number, decimal or `0x` hex.
fn flags_number(v: &str) -> Result<u32, String> {
    match v.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => v.parse(),
    }
    .map_err(|_| format!("{v:?} is not a number"))
}

/// `HOST:PORT` with a port number, resolved now (a host name must resolve).
fn host_port(key: &'static str, v: &str) -> Result<String, ConfigError> {
    match v.to_socket_addrs() {
        Ok(addrs) if addrs.len() > 0 => Ok(v.to_owned()),
        Ok(_) => Err(bad(key, format!("{v:?} resolves to no address"))),
        Err(e) => Err(bad(key, format!("{v:?} is not a HOST:PORT address ({e})"))),
    }
}

/// `IP:PORT`.
fn socket_addr(key: &'static str, v: &str) -> Result<SocketAddr, ConfigError> {
    v.parse()
        .map_err(|e| bad(key, format!("{v:?} is not an IP:PORT address ({e})")))
}

/// A runtime's worker threads: 1 to 256.
fn threads(n: Option<usize>) -> Result<Option<usize>, ConfigError> {
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
fn max_connections(n: usize) -> Result<usize, ConfigError> {
    positive("max_connections", n)
}

/// A budget that must admit something: at least 1.
fn positive(key: &'static str, n: usize) -> Result<usize, ConfigError> {
    if n == 0 {
        return Err(bad(key, "takes a positive number"));
    }
    Ok(n)
}

fn identity(
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

/// The `pool` program's options: the keys of its file, its flags (`--` and the key with
/// `-` for `_`) and environment variables (`SV2C_` and the key in capitals). Each field's
/// text is the flag's `--help`.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct PoolOptions {
    /// HOST:PORT to listen on (default 127.0.0.1:34254).
    #[arg(long, env = "SV2C_LISTEN", value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Clients must use Noise NX; the authority public key is printed at start.
    #[arg(long, env = "SV2C_NOISE", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = switch())]
    pub noise: Option<bool>,
    /// The authority secret (64 hex digits; implies noise). Without it the secret is
    /// made up at start.
    #[arg(long, env = "SV2C_AUTHORITY_SECRET_FILE", value_name = "FILE")]
    pub authority_secret_file: Option<PathBuf>,
    /// Leading zero bits a share's hash needs (0 to 255, default 8).
    #[arg(long, env = "SV2C_DIFFICULTY_BITS", value_name = "N")]
    pub difficulty_bits: Option<u32>,
    /// Seconds between jobs (0.01 to 86400, default 10; with a Template Provider, between
    /// vardiff checks).
    #[arg(
        long,
        env = "SV2C_JOB_INTERVAL",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub job_interval: Option<f64>,
    /// Jobs per made-up block (default 6).
    #[arg(long, env = "SV2C_JOBS_PER_PREV_HASH", value_name = "N")]
    pub jobs_per_prev_hash: Option<u32>,
    /// Variable difficulty: each channel's target is moved toward this many shares a
    /// minute with SetTarget (0.1 to 6000; off by default: every channel keeps
    /// difficulty_bits).
    #[arg(
        long,
        env = "SV2C_SHARES_PER_MINUTE",
        value_name = "R",
        allow_negative_numbers = true
    )]
    pub shares_per_minute: Option<f64>,
    /// Connections served at once (default, and at most: the open-files limit less 64).
    ///
    /// More are closed on arrival, with one log line when the cap is reached.
    #[arg(long, env = "SV2C_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// Connections served at once from one IP address (default: no cap; miners behind
    /// one NAT share an address).
    #[arg(long, env = "SV2C_MAX_CONNECTIONS_PER_ADDRESS", value_name = "N")]
    pub max_connections_per_address: Option<usize>,
    /// Channels open at once on the whole pool (default 200000, about 200 MiB).
    ///
    /// A channel beyond this or max_channels_per_connection is refused with
    /// too-many-channels until channels close.
    #[arg(long, env = "SV2C_MAX_CHANNELS", value_name = "N")]
    pub max_channels: Option<usize>,
    /// Channels one connection may hold open (default 32768: a forwarding proxy opens
    /// one per miner).
    #[arg(long, env = "SV2C_MAX_CHANNELS_PER_CONNECTION", value_name = "N")]
    pub max_channels_per_connection: Option<usize>,
    /// Worker identities (user_identity) counted apart (default 10000).
    ///
    /// When full, the least recently seen identity idle for worker_active seconds makes
    /// room, else the share is counted in the overflow sum.
    #[arg(long, env = "SV2C_MAX_WORKERS", value_name = "N")]
    pub max_workers: Option<usize>,
    /// Seconds a worker stays active after its last share: not evicted for a new
    /// identity (1 to 86400, default 600).
    #[arg(long, env = "SV2C_WORKER_ACTIVE", value_name = "SECONDS")]
    pub worker_active: Option<u64>,
    /// IP:PORT of the Prometheus endpoint: /metrics, /health and /ready (with a
    /// Template Provider, 503 while the pool is not connected to it). None by default.
    #[arg(long, env = "SV2C_METRICS", value_name = "IP:PORT")]
    pub metrics: Option<String>,
    /// Tokio runtime worker threads (1 to 256; default: one per core).
    #[arg(long, env = "SV2C_THREADS", value_name = "N")]
    pub threads: Option<usize>,
    /// With noise: ephemeral keys made ahead while no client is connecting, so that a
    /// reconnection storm spends less on each handshake (0 to 1000000, default 16384,
    /// 96 bytes each).
    #[arg(long, env = "SV2C_KEY_STOCK", value_name = "N")]
    pub key_stock: Option<usize>,
    /// HOST:PORT of a Template Provider: templates and chain tips come from it and
    /// blocks found go to it (default: none, a made-up chain).
    ///
    /// Losing it, miners keep their jobs and the pool dials again (0.5 s, doubling to
    /// 10 s).
    #[arg(long, env = "SV2C_TEMPLATE_PROVIDER", value_name = "HOST:PORT")]
    pub template_provider: Option<String>,
    /// The Template Provider's authority public key (base58check): its connection uses
    /// Noise NX (without it: plain TCP). Needs template_provider.
    #[arg(long, env = "SV2C_TP_AUTHORITY_KEY", value_name = "KEY")]
    pub tp_authority_key: Option<String>,
    /// Where the coinbase pays the whole block reward: an address of network, or hex:
    /// and an output script (default hex:51, OP_TRUE, which anyone can spend).
    #[arg(long, env = "SV2C_COINBASE_OUTPUT", value_name = "ADDRESS|hex:SCRIPT")]
    pub coinbase_output: Option<String>,
    /// The network coinbase_output's address must be of: bitcoin, testnet, testnet4,
    /// signet or regtest (default bitcoin).
    #[arg(long, env = "SV2C_NETWORK", value_name = "NETWORK")]
    pub network: Option<String>,
}

/// The networks `network` takes.
pub const NETWORKS: &str = "bitcoin, testnet, testnet4, signet or regtest";

/// The output script of `coinbase_output` ([`PoolOptions::coinbase_output`]) on `network`.
///
/// # Errors
/// Not an address of `network` nor `hex:` and a script of 1 to 10,000 bytes.
pub fn coinbase_output(value: &str, network: &str) -> Result<Vec<u8>, ConfigError> {
    let key = "coinbase_output";
    let network: bitcoin::Network = network
        .parse()
        .map_err(|_| bad("network", format!("{network:?}: takes {NETWORKS}")))?;
    if let Some(script) = value.strip_prefix("hex:") {
        let script = hex::decode(script).map_err(|e| {
            bad(
                key,
                format!("{value:?}: the script after hex: is not hex ({e})"),
            )
        })?;
        if !(1..=10_000).contains(&script.len()) {
            return Err(bad(key, format!("{value:?}: a script of 1 to 10000 bytes")));
        }
        return Ok(script);
    }
    let address: bitcoin::Address<bitcoin::address::NetworkUnchecked> =
        value.parse().map_err(|e| {
            bad(
                key,
                format!("{value:?} is not an address, nor hex:SCRIPT ({e})"),
            )
        })?;
    if !address.is_valid_for_network(network) {
        return Err(bad(
            key,
            format!("{value:?} is not an address of network {network} (set network)"),
        ));
    }
    Ok(address.assume_checked().script_pubkey().into_bytes())
}

/// A checked `pool` configuration, ready to start.
#[derive(Debug)]
pub struct PoolSettings {
    /// Where to listen.
    pub listen: String,
    /// The authority public key clients must be given, when Noise is on.
    pub authority: Option<AuthorityPublicKey>,
    /// The pool's configuration (with its Noise responder when Noise is on).
    pub pool: PoolConfig,
    /// The Prometheus endpoint.
    pub metrics: Option<SocketAddr>,
    /// Runtime worker threads (`None`: one per core).
    pub threads: Option<usize>,
}

impl PoolOptions {
    /// The file's options with every option `flags` sets replacing the file's.
    pub fn overlay(self, flags: PoolOptions) -> PoolOptions {
        PoolOptions {
            listen: flags.listen.or(self.listen),
            noise: flags.noise.or(self.noise),
            authority_secret_file: flags.authority_secret_file.or(self.authority_secret_file),
            difficulty_bits: flags.difficulty_bits.or(self.difficulty_bits),
            job_interval: flags.job_interval.or(self.job_interval),
            jobs_per_prev_hash: flags.jobs_per_prev_hash.or(self.jobs_per_prev_hash),
            shares_per_minute: flags.shares_per_minute.or(self.shares_per_minute),
            max_connections: flags.max_connections.or(self.max_connections),
            max_connections_per_address: flags
                .max_connections_per_address
                .or(self.max_connections_per_address),
            max_channels: flags.max_channels.or(self.max_channels),
            max_channels_per_connection: flags
                .max_channels_per_connection
                .or(self.max_channels_per_connection),
            max_workers: flags.max_workers.or(self.max_workers),
            worker_active: flags.worker_active.or(self.worker_active),
            metrics: flags.metrics.or(self.metrics),
            threads: flags.threads.or(self.threads),
            key_stock: flags.key_stock.or(self.key_stock),
            template_provider: flags.template_provider.or(self.template_provider),
            tp_authority_key: flags.tp_authority_key.or(self.tp_authority_key),
            coinbase_output: flags.coinbase_output.or(self.coinbase_output),
            network: flags.network.or(self.network),
        }
    }

    /// Checks every value and loads (or generates) the Noise identity.
    ///
    /// # Errors
    /// The first value that cannot be used, naming its key.
    pub fn resolve(self) -> Result<PoolSettings, ConfigError> {
        let threads = threads(self.threads)?;
        let listen = host_port(
            "listen",
            self.listen.as_deref().unwrap_or("127.0.0.1:34254"),
        )?;
        let metrics = self
            .metrics
            .as_deref()
            .map(|m| socket_addr("metrics", m))
            .transpose()?;
        let mut pool = PoolConfig::default();
        if let Some(bits) = self.difficulty_bits {
            if bits > 255 {
                return Err(bad(
                    "difficulty_bits",
                    format!("{bits}: takes a number from 0 to 255"),
                ));
            }
            pool.share_target = target_with_zero_bits(bits);
        }
        if let Some(s) = self.job_interval {
            if !(s.is_finite() && (0.01..=86_400.0).contains(&s)) {
                return Err(bad(
                    "job_interval",
                    format!("{s}: takes seconds from 0.01 to 86400"),
                ));
            }
            pool.job_interval = Duration::from_secs_f64(s);
        }
        if let Some(n) = self.jobs_per_prev_hash {
            if n == 0 {
                return Err(bad("jobs_per_prev_hash", "takes a positive number"));
            }
            pool.jobs_per_prev_hash = n;
        }
        if let Some(r) = self.shares_per_minute {
            if !(r.is_finite() && (0.1..=6000.0).contains(&r)) {
                return Err(bad(
                    "shares_per_minute",
                    format!("{r}: takes shares per minute from 0.1 to 6000"),
                ));
            }
            pool.vardiff = Some(VardiffConfig {
                shares_per_minute: r,
                ..VardiffConfig::default()
            });
        }
        if let Some(n) = self.max_connections {
            pool.max_connections = max_connections(n)?;
        }
        if let Some(n) = self.max_connections_per_address {
            pool.max_connections_per_address = Some(positive("max_connections_per_address", n)?);
        }
        if let Some(n) = self.max_channels {
            pool.max_channels = positive("max_channels", n)?;
        }
        if let Some(n) = self.max_channels_per_connection {
            pool.max_channels_per_connection = positive("max_channels_per_connection", n)?;
        }
        if let Some(n) = self.max_workers {
            pool.max_workers = n;
        }
        if let Some(s) = self.worker_active {
            if !(1..=86_400).contains(&s) {
                return Err(bad(
                    "worker_active",
                    format!("{s}: takes seconds from 1 to 86400"),
                ));
            }
            pool.worker_active = Duration::from_secs(s);
        }
        let network = self.network.as_deref().unwrap_or("bitcoin");
        match &self.coinbase_output {
            Some(output) => pool.coinbase_output = coinbase_output(output, network)?,
            None if network.parse::<bitcoin::Network>().is_err() => {
                return Err(bad("network", format!("{network:?}: takes {NETWORKS}")));
            }
            None => {}
        }
        pool.template_provider = template_provider(
            self.template_provider.as_deref(),
            self.tp_authority_key.as_deref(),
        )?;
        let noise = self.noise.unwrap_or(false) || self.authority_secret_file.is_some();
        let authority = if noise {
            let (key, responder) = identity(self.authority_secret_file.as_deref(), self.key_stock)?;
            pool.noise = Some(responder);
            Some(key)
        } else {
            None
        };
        Ok(PoolSettings {
            listen,
            authority,
            pool,
            metrics,
            threads,
        })
    }
}

/// The pool's Template Provider: `HOST:PORT` (resolved now) and its authority key.
fn template_provider(
    address: Option<&str>,
    key: Option<&str>,
) -> Result<Option<TemplateProviderConfig>, ConfigError> {
    let authority_key = key
        .map(|k| {
            k.parse::<AuthorityPublicKey>()
                .map_err(|e| bad("tp_authority_key", format!("{k:?}: {e}")))
        })
        .transpose()?;
    match address {
        None if authority_key.is_some() => Err(bad("tp_authority_key", "needs template_provider")),
        None => Ok(None),
        Some(address) => Ok(Some(TemplateProviderConfig {
            address: host_port("template_provider", address)?,
            authority_key,
        })),
    }
}

/// The `mining_proxy` program's options: the keys of its file, its flags (`--` and the key
/// with `-` for `_`) and environment variables (`SV2C_` and the key in capitals). Without
/// `upstream` it runs the demo. Each field's text is the flag's `--help`.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ProxyOptions {
    /// Demo: simulated miners (1 to 10000, default 4).
    #[arg(long, env = "SV2C_MINERS", value_name = "N")]
    pub miners: Option<usize>,
    /// Demo: seconds to run (default 3).
    #[arg(
        long,
        env = "SV2C_SECONDS",
        value_name = "S",
        allow_negative_numbers = true
    )]
    pub seconds: Option<f64>,
    /// Demo: both hops use Noise NX, with an authority made up for the pool and one for
    /// the proxy. With upstream: needs authority_key.
    #[arg(long, env = "SV2C_NOISE", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = switch())]
    pub noise: Option<bool>,
    /// Tokio runtime worker threads of each worker (1 to 256; default 1, the fastest per
    /// share: docs/proxy-concurrency.md).
    #[arg(long, env = "SV2C_THREADS", value_name = "N")]
    pub threads: Option<usize>,
    /// The pool, HOST:PORT: run the proxy in front of it until Ctrl-C or SIGTERM
    /// (without it: the demo). Repeat it (or separate with commas) for pools in order of
    /// preference; in the file, `upstream` or `upstreams`, a string or a list.
    ///
    /// If the pool goes away, miners are sent Reconnect and the proxy dials the next
    /// upstream at once (after the last, the first); once all have failed it waits
    /// with backoff (100 ms doubling to 10 s) and starts again from the first. On a
    /// later upstream it probes the earlier ones and goes back to one that has answered
    /// for upstream_return_hold.
    #[arg(
        long,
        env = "SV2C_UPSTREAM",
        value_name = "HOST:PORT",
        value_delimiter = ','
    )]
    #[serde(default, alias = "upstreams", deserialize_with = "one_or_many")]
    pub upstream: Option<Vec<String>>,
    /// IP:PORT miners connect to (default 127.0.0.1:34255).
    #[arg(long, env = "SV2C_LISTEN", value_name = "IP:PORT")]
    pub listen: Option<String>,
    /// The pool's authority public key (base58check): the pool hop uses Noise NX and the
    /// pool's certificate must be signed by it (without it: plain TCP).
    ///
    /// With several upstreams: one key for all of them, or one per upstream in the same
    /// order (repeated, or separated by commas; `none` for a plain-TCP one). In the file,
    /// `authority_key` or `authority_keys`, a string or a list.
    #[arg(
        long,
        env = "SV2C_AUTHORITY_KEY",
        value_name = "KEY",
        value_delimiter = ','
    )]
    #[serde(default, alias = "authority_keys", deserialize_with = "one_or_many")]
    pub authority_key: Option<Vec<String>>,
    /// Miners must connect with Noise NX; the proxy's authority public key is printed at
    /// start.
    #[arg(long, env = "SV2C_LISTEN_NOISE", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = switch())]
    pub listen_noise: Option<bool>,
    /// The proxy's authority secret (64 hex digits; implies listen_noise). Without it
    /// the secret is made up at start.
    #[arg(long, env = "SV2C_AUTHORITY_SECRET_FILE", value_name = "FILE")]
    pub authority_secret_file: Option<PathBuf>,
    /// SetupConnection flags toward the pool (default 0x4, REQUIRES_VERSION_ROLLING;
    /// never set 0x1 when miners open extended channels).
    #[arg(long, env = "SV2C_UPSTREAM_FLAGS", value_name = "N", value_parser = flags_number)]
    pub upstream_flags: Option<u32>,
    /// Miners served at once by all workers together (default, and at most: the
    /// open-files limit less 64, and 4 for each worker after the first).
    ///
    /// More are closed on arrival, with one log line when the cap is reached.
    #[arg(long, env = "SV2C_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// Independent proxies in the process (1 to 256; default: one per core, or one per
    /// threads cores), each with its own runtime and pool connection.
    ///
    /// All listen on listen (SO_REUSEPORT: the kernel spreads miners over them): every
    /// core is used without shares crossing cores (docs/proxy-concurrency.md).
    #[arg(long, env = "SV2C_WORKERS", value_name = "N")]
    pub workers: Option<usize>,
    /// IP:PORT of the Prometheus endpoint: /metrics, /health and /ready (503 while no
    /// worker has its pool connection). None by default.
    #[arg(long, env = "SV2C_METRICS", value_name = "IP:PORT")]
    pub metrics: Option<String>,
    /// With upstream: aggregating mode, one extended channel to the pool per worker
    /// instead of one per miner channel.
    ///
    /// The proxy answers miners' channels itself (each gets its own part of the pool's
    /// extranonce), checks their shares against the pool's target, acknowledges the good
    /// ones and forwards them on its channel.
    #[arg(long, env = "SV2C_AGGREGATE", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = switch())]
    pub aggregate: Option<bool>,
    /// With listen_noise: ephemeral keys made ahead while no miner is connecting, so
    /// that a reconnection storm spends less on each handshake (0 to 1000000, default
    /// 16384, 96 bytes each).
    #[arg(long, env = "SV2C_KEY_STOCK", value_name = "N")]
    pub key_stock: Option<usize>,
    /// Extensions asked of the pool and granted to miners when the pool grants them
    /// (default 2, Worker-Specific Hashrate Tracking): numbers separated by commas, or
    /// none. In the file, a list (`[2]`, or `[]` for none).
    ///
    /// A pool that does not answer within 2 s grants none.
    #[arg(long, env = "SV2C_UPSTREAM_EXTENSIONS", value_name = "LIST",
          value_parser = extension_list)]
    pub upstream_extensions: Option<std::vec::Vec<u16>>,
    /// With aggregate: shares acknowledged to miners before the pool answered them (1
    /// to 1000000, default 1024).
    ///
    /// Past it miners' answers wait for the pool's; with 65536 waiting, or one waiting
    /// 30 s, the pool is taken as gone.
    #[arg(long, env = "SV2C_MAX_UNCONFIRMED_SHARES", value_name = "N")]
    pub max_unconfirmed_shares: Option<usize>,
    /// With aggregate: miner channels served at once by each worker, all connections
    /// together (1 to 10000000, default 200000); more are refused too-many-channels.
    #[arg(long, env = "SV2C_MAX_CHANNELS", value_name = "N")]
    pub max_channels: Option<usize>,
    /// Miner connections served at once from one IP address, all workers together
    /// (default: no cap); one more is closed on arrival.
    #[arg(long, env = "SV2C_MAX_CONNECTIONS_PER_ADDRESS", value_name = "N")]
    pub max_connections_per_address: Option<usize>,
    /// With aggregate: the hashrate (H/s) each worker announces for its channel to the
    /// pool, which sets the channel's first target from it (default 1e12).
    #[arg(
        long,
        env = "SV2C_AGGREGATE_HASHRATE",
        value_name = "H/S",
        allow_negative_numbers = true
    )]
    pub aggregate_hashrate: Option<f64>,
    /// With aggregate: IP:PORT Stratum V1 miners connect to (none by default).
    ///
    /// Each is a part of its worker's extended channel (extranonce2_size at most 8), its
    /// shares checked as the pool checks them; the authorized name is the share's
    /// user_identity (names over 32 bytes are cut to 23 bytes, ~ and 8 hex digits of a
    /// hash). See docs/sv1-miners.md.
    #[arg(long, env = "SV2C_SV1_LISTEN", value_name = "IP:PORT")]
    pub sv1_listen: Option<String>,
    /// With sv1_listen: SV1 difficulties are integer powers of two.
    #[arg(long, env = "SV2C_SV1_POW2_DIFFICULTY", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = switch())]
    pub sv1_pow2_difficulty: Option<bool>,
    /// With several upstreams: seconds a pool may owe answers (shares sent to it and
    /// not answered yet) without sending anything before the proxy leaves it for the next (0.1
    /// to 3600, default 5).
    #[arg(
        long,
        env = "SV2C_UPSTREAM_SILENCE_TIMEOUT",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub upstream_silence_timeout: Option<f64>,
    /// With several upstreams: seconds a more preferred pool must answer every probe (a
    /// dial and SetupConnection, every quarter of it, 0.1 to 5 s apart) before the proxy
    /// goes back to it (0 to 86400, default 30).
    #[arg(
        long,
        env = "SV2C_UPSTREAM_RETURN_HOLD",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub upstream_return_hold: Option<f64>,
}

/// A key of the file that takes one string or a list of them.
fn one_or_many<'de, D>(d: D) -> Result<Option<Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(Some(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    }))
}

/// `--upstream-extensions`: `none`, or extension numbers (decimal or `0x` hex) separated by
/// commas.
fn extension_list(v: &str) -> Result<Vec<u16>, String> {
    let v = v.trim();
    if v.is_empty() || v == "none" {
        return Ok(Vec::new());
    }
    v.split(',')
        .map(|item| {
            let item = item.trim();
            let parsed = match item.strip_prefix("0x").or_else(|| item.strip_prefix("0X")) {
                Some(hex) => u16::from_str_radix(hex, 16).ok(),
                None => item.parse().ok(),
            };
            parsed.ok_or_else(|| format!("{item:?} is not an extension number (0 to 0xffff)"))
        })
        .collect()
}

/// What a checked `mining_proxy` configuration runs.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per process
pub enum ProxyMode {
    /// The in-process demo.
    Demo {
        /// Simulated miners.
        miners: usize,
        /// How long.
        seconds: f64,
        /// Both hops over Noise.
        noise: bool,
    },
    /// The proxy in front of a pool.
    Proxy {
        /// The pools, in order of preference, each with its authority key (Noise on its
        /// hop).
        upstreams: Vec<Upstream>,
        /// When to leave a pool and when to come back to a preferred one.
        failover: Failover,
        /// Where miners connect.
        listen: SocketAddr,
        /// The proxy's own authority public key and responder (Noise on the miner hop).
        downstream: Option<(AuthorityPublicKey, Arc<NoiseIdentity>)>,
        /// `SetupConnection` flags toward the pool.
        upstream_flags: u32,
        /// Miner connections served at once (all workers together).
        max_connections: usize,
        /// Independent proxies sharing the listen address.
        workers: usize,
        /// Aggregating mode.
        aggregate: bool,
        /// Extensions asked of the pool.
        upstream_extensions: Vec<u16>,
        /// Aggregating: shares acknowledged before the pool answered them, at most.
        max_unconfirmed_shares: usize,
        /// Aggregating: miner channels served at once.
        max_channels: usize,
        /// Miner connections served at once per IP address (`None`: no cap).
        max_connections_per_address: Option<usize>,
        /// Aggregating: the hashrate announced for each worker's channel.
        aggregate_hashrate: f32,
        /// Aggregating: where Stratum V1 miners connect.
        sv1_listen: Option<SocketAddr>,
        /// SV1 difficulties in powers of two.
        sv1_pow2_difficulty: bool,
    },
}

/// A checked `mining_proxy` configuration.
#[derive(Debug)]
pub struct ProxySettings {
    /// What to run.
    pub mode: ProxyMode,
    /// Runtime worker threads (`None`: 1).
    pub threads: Option<usize>,
    /// The Prometheus endpoint.
    pub metrics: Option<SocketAddr>,
}

impl ProxyOptions {
    /// The file's options with every option `flags` sets replacing the file's.
    pub fn overlay(self, flags: ProxyOptions) -> ProxyOptions {
        ProxyOptions {
            miners: flags.miners.or(self.miners),
            seconds: flags.seconds.or(self.seconds),
            noise: flags.noise.or(self.noise),
            threads: flags.threads.or(self.threads),
            upstream: flags.upstream.or(self.upstream),
            listen: flags.listen.or(self.listen),
            authority_key: flags.authority_key.or(self.authority_key),
            listen_noise: flags.listen_noise.or(self.listen_noise),
            authority_secret_file: flags.authority_secret_file.or(self.authority_secret_file),
            upstream_flags: flags.upstream_flags.or(self.upstream_flags),
            max_connections: flags.max_connections.or(self.max_connections),
            workers: flags.workers.or(self.workers),
            key_stock: flags.key_stock.or(self.key_stock),
            metrics: flags.metrics.or(self.metrics),
            aggregate: flags.aggregate.or(self.aggregate),
            upstream_extensions: flags.upstream_extensions.or(self.upstream_extensions),
            max_unconfirmed_shares: flags.max_unconfirmed_shares.or(self.max_unconfirmed_shares),
            max_channels: flags.max_channels.or(self.max_channels),
            max_connections_per_address: flags
                .max_connections_per_address
                .or(self.max_connections_per_address),
            aggregate_hashrate: flags.aggregate_hashrate.or(self.aggregate_hashrate),
            sv1_listen: flags.sv1_listen.or(self.sv1_listen),
            sv1_pow2_difficulty: flags.sv1_pow2_difficulty.or(self.sv1_pow2_difficulty),
            upstream_silence_timeout: flags
                .upstream_silence_timeout
                .or(self.upstream_silence_timeout),
            upstream_return_hold: flags.upstream_return_hold.or(self.upstream_return_hold),
        }
    }

    /// Checks every value, decides the mode and loads (or generates) the Noise identity.
    ///
    /// # Errors
    /// The first value that cannot be used, naming its key, or options that do not go
    /// together.
    pub fn resolve(self) -> Result<ProxySettings, ConfigError> {
        let threads = threads(self.threads)?;
        let metrics = self
            .metrics
            .as_deref()
            .map(|m| socket_addr("metrics", m))
            .transpose()?;
        let keys = self.authority_keys()?;
        let noise = self.noise.unwrap_or(false);
        let listen_noise =
            self.listen_noise.unwrap_or(false) || self.authority_secret_file.is_some();
        let (sv1_listen, aggregate_hashrate) = match self.upstream {
            Some(_) => (self.sv1_listen()?, self.aggregate_hashrate()?),
            None => (None, 0.0),
        };
        let mode = match self.upstream {
            Some(_) if noise && keys.iter().all(Option::is_none) => {
                return Err(bad(
                    "noise",
                    "with upstream, the pool's authority key is needed to check that the pool \
                     is the one it claims to be: set authority_key (the base58check public key \
                     the pool operator publishes)",
                ));
            }
            Some(ref list) => {
                let upstreams = upstreams(list, &keys)?;
                let failover = self.failover()?;
                let listen = socket_addr(
                    "listen",
                    self.listen.as_deref().unwrap_or("127.0.0.1:34255"),
                )?;
                let workers = match self.workers {
                    Some(n) if !(1..=256).contains(&n) => {
                        return Err(bad("workers", format!("{n}: takes a number from 1 to 256")));
                    }
                    Some(n) => n,
                    None => default_workers(threads.unwrap_or(1)),
                };
                let downstream = if listen_noise {
                    Some(identity(
                        self.authority_secret_file.as_deref(),
                        self.key_stock,
                    )?)
                } else {
                    None
                };
                ProxyMode::Proxy {
                    upstreams,
                    failover,
                    listen,
                    downstream,
                    upstream_flags: self.upstream_flags.unwrap_or(REQUIRES_VERSION_ROLLING),
                    max_connections: match self.max_connections {
                        Some(n) => max_connections(n)?,
                        None => crate::listen::default_max_connections_for(workers),
                    },
                    workers,
                    aggregate: self.aggregate.unwrap_or(false),
                    upstream_extensions: self
                        .upstream_extensions
                        .unwrap_or_else(|| crate::proxy::DEFAULT_UPSTREAM_EXTENSIONS.to_vec()),
                    max_unconfirmed_shares: match self.max_unconfirmed_shares {
                        Some(n) if !(1..=1_000_000).contains(&n) => {
                            return Err(bad(
                                "max_unconfirmed_shares",
                                format!("{n}: takes a number from 1 to 1000000"),
                            ));
                        }
                        Some(n) => n,
                        None => crate::proxy::ProxyConfig::default().max_unconfirmed_shares,
                    },
                    max_channels: match self.max_channels {
                        Some(n) if !(1..=10_000_000).contains(&n) => {
                            return Err(bad(
                                "max_channels",
                                format!("{n}: takes a number from 1 to 10000000"),
                            ));
                        }
                        Some(n) => n,
                        None => crate::proxy::ProxyConfig::default().max_channels,
                    },
                    max_connections_per_address: self
                        .max_connections_per_address
                        .map(|n| positive("max_connections_per_address", n))
                        .transpose()?,
                    aggregate_hashrate,
                    sv1_listen,
                    sv1_pow2_difficulty: self.sv1_pow2_difficulty.unwrap_or(false),
                }
            }
            None if listen_noise => {
                return Err(bad(
                    "listen_noise",
                    "listen_noise and authority_secret_file need upstream",
                ));
            }
            None if self.listen.is_some() => {
                return Err(bad("listen", "needs upstream"));
            }
            None if self.workers.is_some() => {
                return Err(bad("workers", "needs upstream"));
            }
            None if self.aggregate.is_some() => {
                return Err(bad("aggregate", "needs upstream"));
            }
            None if self.upstream_extensions.is_some() => {
                return Err(bad("upstream_extensions", "needs upstream"));
            }
            None if self.max_unconfirmed_shares.is_some() => {
                return Err(bad("max_unconfirmed_shares", "needs upstream"));
            }
            None if self.max_channels.is_some() => {
                return Err(bad("max_channels", "needs upstream"));
            }
            None if self.max_connections_per_address.is_some() => {
                return Err(bad("max_connections_per_address", "needs upstream"));
            }
            None if self.sv1_listen.is_some() => {
                return Err(bad("sv1_listen", "needs upstream"));
            }
            None if self.aggregate_hashrate.is_some() => {
                return Err(bad("aggregate_hashrate", "needs upstream"));
            }
            None if self.upstream_silence_timeout.is_some() => {
                return Err(bad("upstream_silence_timeout", "needs upstream"));
            }
            None if self.upstream_return_hold.is_some() => {
                return Err(bad("upstream_return_hold", "needs upstream"));
            }
            None if self.authority_key.is_some() => {
                return Err(bad(
                    "authority_key",
                    "needs upstream (the demo makes its own keys: use noise)",
                ));
            }
            None => {
                let miners = self.miners.unwrap_or(4);
                if !(1..=10_000).contains(&miners) {
                    return Err(bad(
                        "miners",
                        format!("{miners}: takes a number from 1 to 10000"),
                    ));
                }
                let seconds = self.seconds.unwrap_or(3.0);
                if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
                    return Err(bad(
                        "seconds",
                        format!("{seconds}: takes a positive number of seconds"),
                    ));
                }
                ProxyMode::Demo {
                    miners,
                    seconds,
                    noise,
                }
            }
        };
        Ok(ProxySettings {
            mode,
            threads,
            metrics,
        })
    }
}

/// The checked `upstream` list paired with its `authority_key`s: none (plain TCP), one
/// for every upstream, or one per upstream in the same order.
fn upstreams(
    list: &[String],
    keys: &[Option<AuthorityPublicKey>],
) -> Result<Vec<Upstream>, ConfigError> {
    if list.is_empty() {
        return Err(bad("upstream", "an empty list: name at least one pool"));
    }
    if keys.len() > 1 && keys.len() != list.len() {
        return Err(bad(
            "authority_key",
            format!(
                "{} keys for {} upstreams: give one key for all, or one per upstream in the \
                 same order (none for a plain-TCP one)",
                keys.len(),
                list.len()
            ),
        ));
    }
    let mut upstreams: Vec<Upstream> = Vec::with_capacity(list.len());
    for (i, address) in list.iter().enumerate() {
        let address = address.trim();
        let Some((host, _)) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
        else {
            return Err(bad("upstream", format!("{address:?} is not HOST:PORT")));
        };
        if host.is_empty() {
            return Err(bad("upstream", format!("{address:?} has no host")));
        }
        if upstreams.iter().any(|u| u.address == address) {
            return Err(bad("upstream", format!("{address:?} is named twice")));
        }
        upstreams.push(Upstream {
            address: address.to_owned(),
            authority: match keys.len() {
                0 => None,
                1 => keys[0],
                _ => keys[i],
            },
        });
    }
    Ok(upstreams)
}

impl ProxyOptions {
    /// `authority_key`, each parsed (`none`: plain TCP for that upstream).
    fn authority_keys(&self) -> Result<Vec<Option<AuthorityPublicKey>>, ConfigError> {
        let Some(keys) = &self.authority_key else {
            return Ok(Vec::new());
        };
        keys.iter()
            .map(|key| match key.trim() {
                "none" => Ok(None),
                key => key
                    .parse::<AuthorityPublicKey>()
                    .map(Some)
                    .map_err(|e| bad("authority_key", format!("{key:?}: {e}"))),
            })
            .collect()
    }

    /// `upstream_silence_timeout` and `upstream_return_hold`, checked, with their
    /// defaults.
    fn failover(&self) -> Result<Failover, ConfigError> {
        let mut failover = Failover::default();
        if let Some(s) = self.upstream_silence_timeout {
            if !(s.is_finite() && (0.1..=3600.0).contains(&s)) {
                return Err(bad(
                    "upstream_silence_timeout",
                    format!("{s}: takes seconds from 0.1 to 3600"),
                ));
            }
            failover.silence = Duration::from_secs_f64(s);
        }
        if let Some(s) = self.upstream_return_hold {
            if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) {
                return Err(bad(
                    "upstream_return_hold",
                    format!("{s}: takes seconds from 0 to 86400"),
                ));
            }
            failover.hold = Duration::from_secs_f64(s);
        }
        Ok(failover)
    }

    /// `aggregate_hashrate`, checked: a positive number of H/s, with `aggregate`.
    fn aggregate_hashrate(&self) -> Result<f32, ConfigError> {
        let Some(h) = self.aggregate_hashrate else {
            return Ok(crate::proxy::ProxyConfig::default().aggregate_hashrate);
        };
        if !self.aggregate.unwrap_or(false) {
            return Err(bad("aggregate_hashrate", "needs aggregate"));
        }
        if !(h.is_finite() && h > 0.0 && h <= f64::from(f32::MAX)) {
            return Err(bad(
                "aggregate_hashrate",
                format!("{h}: takes a positive number of hashes per second"),
            ));
        }
        Ok(h as f32)
    }

    /// `sv1_listen`, checked: an `IP:PORT`, with `aggregate` (SV1 miners are served from
    /// the aggregated channel); `sv1_pow2_difficulty` needs it.
    fn sv1_listen(&self) -> Result<Option<SocketAddr>, ConfigError> {
        let Some(addr) = self.sv1_listen.as_deref() else {
            if self.sv1_pow2_difficulty.is_some() {
                return Err(bad("sv1_pow2_difficulty", "needs sv1_listen"));
            }
            return Ok(None);
        };
        let addr = socket_addr("sv1_listen", addr)?;
        if !self.aggregate.unwrap_or(false) {
            return Err(bad(
                "sv1_listen",
                "needs aggregate (SV1 miners are served from the aggregated extended channel)",
            ));
        }
        Ok(Some(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line `s` (flags and their values separated by spaces), parsed as the
    /// programs parse theirs.
    fn parse_line<T: clap::Args + clap::FromArgMatches>(
        s: &str,
    ) -> Result<CommandLine<T>, clap::Error> {
        use clap::Parser;
        CommandLine::try_parse_from(std::iter::once("test").chain(s.split_whitespace()))
    }

    fn repo_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/config")
            .join(name)
    }

    #[test]
    fn the_example_files_load_and_resolve() {
        let pool: PoolOptions = load_file(&repo_file("pool.toml")).unwrap();
        assert_eq!(pool.listen.as_deref(), Some("127.0.0.1:34254"));
        let settings = pool.resolve().unwrap();
        assert_eq!(settings.pool.job_interval, Duration::from_secs(10));
        assert!(settings.metrics.is_some());
        let proxy: ProxyOptions = load_file(&repo_file("proxy.toml")).unwrap();
        let settings = proxy.resolve().unwrap();
        assert!(matches!(
            settings.mode,
            ProxyMode::Proxy { ref upstreams, upstream_flags: 4, .. }
                if upstreams[..] == [Upstream { address: "127.0.0.1:34254".into(), authority: None }]
        ));
    }

    #[test]
    fn aggregate_is_a_proxy_flag_that_needs_upstream() {
        let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1 --aggregate").unwrap();
        let settings = line.flags.resolve().unwrap();
        assert!(matches!(
            settings.mode,
            ProxyMode::Proxy {
                aggregate: true,
                ..
            }
        ));
        let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1").unwrap();
        let settings = line.flags.resolve().unwrap();
        assert!(matches!(
            settings.mode,
            ProxyMode::Proxy {
                aggregate: false,
                ..
            }
        ));
        let line = parse_line::<ProxyOptions>("--aggregate").unwrap();
        assert!(matches!(
            line.flags.resolve(),
            Err(ConfigError::Value {
                key: "aggregate",
                ..
            })
        ));
    }

    /// `sv1_listen` is a flag and a key; it needs `upstream` and `aggregate`, and
    /// `sv1_pow2_difficulty` needs it. Each error names its key.
    #[test]
    fn sv1_listen_needs_the_aggregating_proxy() {
        let resolve = |line: &str| parse_line::<ProxyOptions>(line).unwrap().flags.resolve();
        let ok = resolve(
            "--upstream 127.0.0.1:1 --aggregate --sv1-listen 127.0.0.1:3333 --sv1-pow2-difficulty",
        )
        .unwrap();
        assert!(matches!(
            ok.mode,
            ProxyMode::Proxy {
                sv1_listen: Some(a),
                sv1_pow2_difficulty: true,
                ..
            } if a.port() == 3333
        ));
        let key = |r: Result<ProxySettings, ConfigError>| match r {
            Err(ConfigError::Value { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            key(resolve(
                "--upstream 127.0.0.1:1 --sv1-listen 127.0.0.1:3333"
            )),
            "sv1_listen"
        );
        assert_eq!(
            key(resolve(
                "--upstream 127.0.0.1:1 --aggregate --sv1-listen nowhere"
            )),
            "sv1_listen"
        );
        assert_eq!(key(resolve("--sv1-listen 127.0.0.1:3333")), "sv1_listen");
        assert_eq!(
            key(resolve(
                "--upstream 127.0.0.1:1 --aggregate --sv1-pow2-difficulty"
            )),
            "sv1_pow2_difficulty"
        );
        let file: ProxyOptions =
            toml::from_str("sv1_listen = \"0.0.0.0:3333\"\nsv1_pow2_difficulty = true").unwrap();
        assert_eq!(file.sv1_listen.as_deref(), Some("0.0.0.0:3333"));
    }

    /// `aggregate_hashrate` is a flag and a key, a positive number, with `aggregate`;
    /// 1e12 without it.
    #[test]
    fn aggregate_hashrate_is_checked() {
        let resolve = |line: &str| parse_line::<ProxyOptions>(line).unwrap().flags.resolve();
        let hashrate = |line: &str| match resolve(line) {
            Ok(ProxySettings {
                mode:
                    ProxyMode::Proxy {
                        aggregate_hashrate, ..
                    },
                ..
            }) => Ok(aggregate_hashrate),
            Ok(other) => panic!("{other:?}"),
            Err(ConfigError::Value { key, .. }) => Err(key),
            Err(other) => panic!("{other:?}"),
        };
        assert_eq!(hashrate("--upstream 127.0.0.1:1 --aggregate"), Ok(1e12));
        assert_eq!(
            hashrate("--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 50"),
            Ok(50.0)
        );
        for bad in [
            "--upstream 127.0.0.1:1 --aggregate-hashrate 50",
            "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 0",
            "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate -3",
            "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 1e60",
            "--aggregate-hashrate 50",
        ] {
            assert_eq!(hashrate(bad), Err("aggregate_hashrate"), "{bad}");
        }
        let file: ProxyOptions = toml::from_str("aggregate_hashrate = 2.5e15").unwrap();
        assert_eq!(file.aggregate_hashrate, Some(2.5e15));
    }

    /// The proxy's share and channel bounds and its extensions come from flags (and the
    /// file), with their defaults, and need `upstream`.
    #[test]
    fn the_proxy_bounds_and_extensions_are_flags() {
        let mode = |line: &str| {
            let line = parse_line::<ProxyOptions>(line).unwrap();
            match line.flags.resolve().unwrap().mode {
                ProxyMode::Proxy {
                    upstream_extensions,
                    max_unconfirmed_shares,
                    max_channels,
                    ..
                } => (upstream_extensions, max_unconfirmed_shares, max_channels),
                ProxyMode::Demo { .. } => panic!("a proxy expected"),
            }
        };
        assert_eq!(mode("--upstream 127.0.0.1:1"), (vec![2], 1024, 200_000));
        assert_eq!(
            mode(
                "--upstream 127.0.0.1:1 --upstream-extensions none --max-unconfirmed-shares 8 \
                 --max-channels 50"
            ),
            (vec![], 8, 50)
        );
        assert_eq!(
            mode("--upstream 127.0.0.1:1 --upstream-extensions 0x2,2").0,
            vec![2, 2]
        );
        for (line, key) in [
            ("--max-channels 5", "max_channels"),
            ("--upstream-extensions 2", "upstream_extensions"),
            ("--upstream 127.0.0.1:1 --max-channels 0", "max_channels"),
            (
                "--upstream 127.0.0.1:1 --max-unconfirmed-shares 0",
                "max_unconfirmed_shares",
            ),
            (
                "--upstream 127.0.0.1:1 --max-connections-per-address 0",
                "max_connections_per_address",
            ),
            (
                "--max-connections-per-address 4",
                "max_connections_per_address",
            ),
        ] {
            let line = parse_line::<ProxyOptions>(line).unwrap();
            assert!(
                matches!(line.flags.resolve(), Err(ConfigError::Value { key: k, .. }) if k == key),
                "{key}"
            );
        }
        assert!(parse_line::<ProxyOptions>("--upstream-extensions x").is_err());
    }

    /// `--upstream` repeats (or takes a comma-separated list), in order of preference;
    /// `--authority-key` is one key for all or one per upstream in the same order; the
    /// file takes `upstream`/`upstreams` and `authority_key`/`authority_keys`, a string
    /// or a list; the failover timeouts are flags with their defaults.
    #[test]
    fn upstreams_are_ordered_and_paired_with_their_keys() {
        const KEY: &str = "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh";
        let key: AuthorityPublicKey = KEY.parse().unwrap();
        let proxy = |options: ProxyOptions| match options.resolve().unwrap().mode {
            ProxyMode::Proxy {
                upstreams,
                failover,
                ..
            } => (upstreams, failover),
            ProxyMode::Demo { .. } => panic!("a proxy expected"),
        };
        let line = |l: &str| parse_line::<ProxyOptions>(l).unwrap().flags;
        let up = |address: &str, authority| Upstream {
            address: address.into(),
            authority,
        };
        let (upstreams, failover) = proxy(line("--upstream 127.0.0.1:1"));
        assert_eq!(upstreams, [up("127.0.0.1:1", None)]);
        assert_eq!(failover, Failover::default());
        let (upstreams, _) = proxy(line(&format!(
            "--upstream 127.0.0.1:1 --upstream [::1]:2 --authority-key {KEY}"
        )));
        assert_eq!(
            upstreams,
            [up("127.0.0.1:1", Some(key)), up("[::1]:2", Some(key))]
        );
        let (upstreams, failover) = proxy(line(&format!(
            "--upstream 127.0.0.1:1,127.0.0.1:2 --authority-key none --authority-key {KEY} \
             --upstream-silence-timeout 0.5 --upstream-return-hold 2"
        )));
        assert_eq!(
            upstreams,
            [up("127.0.0.1:1", None), up("127.0.0.1:2", Some(key))]
        );
        assert_eq!(
            failover,
            Failover {
                silence: Duration::from_millis(500),
                hold: Duration::from_secs(2)
            }
        );
        for text in [
            format!("upstreams = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nauthority_key = \"{KEY}\""),
            format!(
                "upstream = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nauthority_keys = [\"{KEY}\", \"{KEY}\"]"
            ),
        ] {
            let file: ProxyOptions = toml::from_str(&text).unwrap();
            let (upstreams, _) = proxy(file);
            assert_eq!(
                upstreams,
                [up("127.0.0.1:1", Some(key)), up("127.0.0.1:2", Some(key))],
                "{text}"
            );
        }
        // A flag replaces the file's whole list.
        let file: ProxyOptions = toml::from_str("upstream = \"127.0.0.1:1\"").unwrap();
        let (upstreams, _) = proxy(file.overlay(line("--upstream 127.0.0.1:2")));
        assert_eq!(upstreams, [up("127.0.0.1:2", None)]);
        for (l, bad_key) in [
            (
                format!(
                    "--upstream 127.0.0.1:1 --upstream 127.0.0.1:2 --upstream 127.0.0.1:3 --authority-key {KEY},{KEY}"
                ),
                "authority_key",
            ),
            (
                "--upstream 127.0.0.1:1 --upstream 127.0.0.1:1".to_owned(),
                "upstream",
            ),
            (
                "--upstream 127.0.0.1:1 --upstream nowhere".to_owned(),
                "upstream",
            ),
            (
                "--upstream 127.0.0.1:1 --upstream 127.0.0.1:2 --authority-key none --noise"
                    .to_owned(),
                "noise",
            ),
            (
                "--upstream 127.0.0.1:1 --upstream-silence-timeout 0".to_owned(),
                "upstream_silence_timeout",
            ),
            (
                "--upstream 127.0.0.1:1 --upstream-return-hold -1".to_owned(),
                "upstream_return_hold",
            ),
            (
                "--upstream-return-hold 1".to_owned(),
                "upstream_return_hold",
            ),
        ] {
            let e = line(&l).resolve().unwrap_err();
            assert!(
                matches!(e, ConfigError::Value { key, .. } if key == bad_key),
                "{l}: {e}"
            );
        }
        let empty: ProxyOptions = toml::from_str("upstreams = []").unwrap();
        assert!(empty.resolve().is_err());
    }

    #[test]
    fn the_proxy_runs_a_worker_per_core_unless_told() {
        let workers = |line: &str| {
            let line = parse_line::<ProxyOptions>(line).unwrap();
            match line.flags.resolve().unwrap().mode {
                ProxyMode::Proxy { workers, .. } => workers,
                ProxyMode::Demo { .. } => unreachable!("a proxy was configured"),
            }
        };
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(workers("--upstream 127.0.0.1:1"), cores.min(256));
        assert_eq!(workers("--upstream 127.0.0.1:1 --workers 3"), 3);
        // Workers of more threads: one runtime thread per core, at least one worker.
        assert_eq!(
            workers("--upstream 127.0.0.1:1 --threads 2"),
            (cores / 2).max(1)
        );
        assert_eq!(default_workers(1024), 1);
    }

    /// A flag that takes one value, given twice, is an error (`--upstream` takes several);
    /// a switch alone is `true`,
    /// and `--noise=false` turns off the file's `noise = true`.
    #[test]
    fn a_flag_given_twice_is_an_error_and_a_switch_can_be_turned_off() {
        for line in [
            "--listen 127.0.0.1:1 --listen 127.0.0.1:2",
            "--noise --noise",
            "--config a.toml --config b.toml",
        ] {
            let e = parse_line::<PoolOptions>(line).unwrap_err().to_string();
            assert!(e.contains("cannot be used multiple times"), "{line}: {e}");
        }
        let e = parse_line::<ProxyOptions>("--listen 127.0.0.1:1 --listen 127.0.0.1:2");
        assert!(e.is_err());
        // But for `--upstream`, which names pools in order of preference.
        let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1 --upstream 127.0.0.1:2");
        assert_eq!(line.unwrap().flags.upstream.unwrap().len(), 2);
        let file: PoolOptions = toml::from_str("noise = true").unwrap();
        let off = parse_line::<PoolOptions>("--noise=false").unwrap().flags;
        assert_eq!(file.overlay(off).noise, Some(false));
        assert_eq!(
            parse_line::<PoolOptions>("--noise").unwrap().flags.noise,
            Some(true)
        );
        assert_eq!(parse_line::<PoolOptions>("").unwrap().flags.noise, None);
        // A switch's value follows `=`: the next word is not taken as its value.
        assert!(parse_line::<PoolOptions>("--noise true").is_err());
        let flags = parse_line::<ProxyOptions>("--upstream-flags 0x6")
            .unwrap()
            .flags;
        assert_eq!(flags.upstream_flags, Some(6));
    }

    #[test]
    fn flags_override_the_file() {
        let file: PoolOptions =
            toml::from_str("difficulty_bits = 12\nlisten = \"127.0.0.1:1\"").unwrap();
        let line = parse_line::<PoolOptions>("--difficulty-bits 3 --noise").unwrap();
        let merged = file.overlay(line.flags);
        assert_eq!(merged.difficulty_bits, Some(3));
        assert_eq!(merged.listen.as_deref(), Some("127.0.0.1:1"));
        assert_eq!(merged.noise, Some(true));
    }

    #[test]
    fn errors_name_the_key() {
        let e = toml::from_str::<PoolOptions>("listen = \"x\"\nbogus = 1\n").unwrap_err();
        assert!(e.message().contains("unknown field `bogus`"), "{e}");
        let e = PoolOptions {
            listen: Some("nowhere".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("listen (--listen, SV2C_LISTEN): \"nowhere\""),
            "{e}"
        );
        let e = ProxyOptions {
            upstream: Some(vec!["127.0.0.1:1".into()]),
            authority_key: Some(vec!["not-a-key".into()]),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("authority_key (--authority-key, SV2C_AUTHORITY_KEY): \"not-a-key\""),
            "{e}"
        );
    }

    #[test]
    fn pool_threads_are_one_to_256() {
        let line = parse_line::<PoolOptions>("--threads 1").unwrap();
        assert_eq!(line.flags.resolve().unwrap().threads, Some(1));
        assert_eq!(PoolOptions::default().resolve().unwrap().threads, None);
        for bad in ["0", "257"] {
            let line = parse_line::<PoolOptions>(&format!("--threads {bad}")).unwrap();
            let e = line.flags.resolve().unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("threads (--threads, SV2C_THREADS)"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_key_stock_is_zero_to_a_million_keys() {
        let stock = |line: &str| {
            let line = parse_line::<PoolOptions>(line).unwrap();
            let pool = line.flags.resolve().unwrap().pool;
            pool.noise.unwrap().keys_in_stock()
        };
        assert_eq!(stock("--noise --key-stock 0"), 0);
        // The stock's thread fills it in the background.
        let line = parse_line::<PoolOptions>("--noise --key-stock 3").unwrap();
        let identity = line.flags.resolve().unwrap().pool.noise.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while identity.keys_in_stock() < 3 {
            assert!(std::time::Instant::now() < deadline, "no stock made");
            std::thread::sleep(Duration::from_millis(5));
        }
        for line in [
            "--noise --key-stock 1000001",
            "--upstream 127.0.0.1:1 --listen-noise --key-stock 1000001",
        ] {
            let e = if line.starts_with("--noise") {
                let line = parse_line::<PoolOptions>(line).unwrap();
                line.flags.resolve().map(|_| ()).unwrap_err()
            } else {
                let line = parse_line::<ProxyOptions>(line).unwrap();
                line.flags.resolve().map(|_| ()).unwrap_err()
            };
            assert!(
                e.to_string()
                    .starts_with("key_stock (--key-stock, SV2C_KEY_STOCK)"),
                "{e}"
            );
        }
    }

    #[test]
    fn shares_per_minute_turns_vardiff_on_within_its_range() {
        let line = parse_line::<PoolOptions>("--shares-per-minute 20").unwrap();
        let pool = line.flags.resolve().unwrap().pool;
        assert_eq!(pool.vardiff.map(|v| v.shares_per_minute), Some(20.0));
        assert_eq!(PoolOptions::default().resolve().unwrap().pool.vardiff, None);
        for bad in ["0", "-3", "7000", "NaN"] {
            let line = parse_line::<PoolOptions>(&format!("--shares-per-minute {bad}"));
            let e = line.unwrap().flags.resolve().unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("shares_per_minute (--shares-per-minute, SV2C_SHARES_PER_MINUTE)"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_pool_budgets_come_from_flags_and_file_and_must_admit_something() {
        let file: PoolOptions = toml::from_str(
            "max_channels = 500\nmax_channels_per_connection = 50\n\
             max_connections_per_address = 4\nmax_workers = 7\n",
        )
        .unwrap();
        let line =
            parse_line::<PoolOptions>("--max-channels 600 --max-workers 0 --worker-active 60")
                .unwrap();
        let pool = file.overlay(line.flags).resolve().unwrap().pool;
        assert_eq!(
            (
                pool.max_channels,
                pool.max_channels_per_connection,
                pool.max_connections_per_address,
                pool.max_workers
            ),
            (600, 50, Some(4), 0)
        );
        assert_eq!(pool.worker_active, Duration::from_secs(60));
        let line = parse_line::<PoolOptions>("--worker-active 0").unwrap();
        let e = line.flags.resolve().unwrap_err();
        assert_eq!(
            e.to_string(),
            "worker_active (--worker-active, SV2C_WORKER_ACTIVE): 0: takes seconds from 1 to 86400"
        );
        let defaults = PoolOptions::default().resolve().unwrap().pool;
        assert_eq!(defaults.max_channels, crate::pool::DEFAULT_MAX_CHANNELS);
        assert_eq!(defaults.max_connections_per_address, None);
        for flag in [
            "max-channels",
            "max-channels-per-connection",
            "max-connections-per-address",
        ] {
            let line = parse_line::<PoolOptions>(&format!("--{flag} 0")).unwrap();
            let e = line.flags.resolve().unwrap_err();
            let key = flag.replace('-', "_");
            assert_eq!(
                e.to_string(),
                format!(
                    "{key} (--{flag}, SV2C_{}): takes a positive number",
                    key.to_uppercase()
                )
            );
        }
    }

    /// The payout: an address of the network (mainnet by default), or `hex:` and a script;
    /// anything else names its key. Without it, `OP_TRUE`.
    #[test]
    fn the_coinbase_output_is_an_address_of_the_network_or_a_script() {
        let output = |line: &str| {
            let line = parse_line::<PoolOptions>(line).unwrap();
            line.flags.resolve().map(|s| s.pool.coinbase_output)
        };
        let program = [
            &[0x00, 0x14][..],
            &hex::decode("751e76e8199196d454941c45d1b3a323f1433bd6").unwrap(),
        ]
        .concat();
        assert_eq!(output("").unwrap(), [0x51]);
        assert_eq!(
            output("--coinbase-output bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4").unwrap(),
            program
        );
        assert_eq!(
            output(
                "--coinbase-output tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx --network testnet4"
            )
            .unwrap(),
            program
        );
        let regtest = bitcoin::Address::p2wsh(
            bitcoin::Script::from_bytes(&[0x51]),
            bitcoin::Network::Regtest,
        );
        let line = format!("--coinbase-output {regtest} --network regtest");
        assert_eq!(output(&line).unwrap(), regtest.script_pubkey().into_bytes());
        assert_eq!(
            output("--coinbase-output hex:0014aa").unwrap(),
            [0x00, 0x14, 0xaa]
        );
        for (line, starts) in [
            (
                "--coinbase-output tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",
                "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT): \"tb1q",
            ),
            (
                "--coinbase-output bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5",
                "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT): \"bc1q",
            ),
            (
                "--coinbase-output hex:zz",
                "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT)",
            ),
            (
                "--coinbase-output hex:",
                "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT)",
            ),
            (
                "--network mainnet",
                "network (--network, SV2C_NETWORK): \"mainnet\"",
            ),
            (
                "--coinbase-output hex:51 --network x",
                "network (--network, SV2C_NETWORK)",
            ),
        ] {
            let e = output(line).unwrap_err().to_string();
            assert!(e.starts_with(starts), "{line}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn the_template_provider_and_its_key() {
        let tp = |line: &str| {
            let line = parse_line::<PoolOptions>(line).unwrap();
            line.flags.resolve().map(|s| s.pool.template_provider)
        };
        assert_eq!(tp("").unwrap(), None);
        let plain = tp("--template-provider 127.0.0.1:8442").unwrap().unwrap();
        assert_eq!(
            (plain.address.as_str(), plain.authority_key),
            ("127.0.0.1:8442", None)
        );
        let key = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
        let noise = tp(&format!(
            "--template-provider 127.0.0.1:8442 --tp-authority-key {key}"
        ));
        assert_eq!(
            noise.unwrap().unwrap().authority_key.unwrap().to_string(),
            key
        );
        let e = tp(&format!("--tp-authority-key {key}"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "tp_authority_key (--tp-authority-key, SV2C_TP_AUTHORITY_KEY): needs template_provider"
        );
        let e = tp("--template-provider 127.0.0.1:1 --tp-authority-key x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("tp_authority_key (--tp-authority-key, SV2C_TP_AUTHORITY_KEY): \"x\""),
            "{e}"
        );
        let e = tp("--template-provider nowhere").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("template_provider (--template-provider, SV2C_TEMPLATE_PROVIDER)"),
            "{e}"
        );
        let file: PoolOptions = toml::from_str(
            "template_provider = \"127.0.0.1:1\"\ncoinbase_output = \"hex:51\"\nnetwork = \"regtest\"\n",
        )
        .unwrap();
        let pool = file.resolve().unwrap().pool;
        assert_eq!(pool.template_provider.unwrap().address, "127.0.0.1:1");
    }
}
