//! The `pool` program's options ([`PoolOptions`]) and what they resolve to
//! ([`PoolSettings`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use sv2c_channels::pow::target_with_zero_bits;
use sv2c_channels::vardiff::VardiffConfig;
use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_roles::pool::{PoolConfig, TemplateProviderConfig};

use super::values::{
    ConfigError, bad, host_port, identity, max_connections, positive, socket_addr, switch, threads,
};

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
        let mut pool = self.pool_config()?;
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

    /// The pool's settings of these options, its Noise identity aside.
    fn pool_config(&self) -> Result<PoolConfig, ConfigError> {
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
        Ok(pool)
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
