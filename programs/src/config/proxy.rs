//! The `mining_proxy` program's options ([`ProxyOptions`]) and what they resolve to
//! ([`ProxySettings`]): the proxy in front of one or more pools, or the demo.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_roles::identity::NoiseIdentity;
use sv2c_roles::listen::default_max_connections_for;
use sv2c_roles::proxy::{
    DEFAULT_UPSTREAM_EXTENSIONS, Failover, ProxyConfig, REQUIRES_VERSION_ROLLING, Upstream,
};

use super::values::{
    ConfigError, bad, default_workers, flags_number, identity, max_connections, positive,
    socket_addr, switch, threads,
};

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
        let mode = match &self.upstream {
            Some(list) => self.proxy_mode(list, &keys, threads)?,
            None => self.demo_mode()?,
        };
        Ok(ProxySettings {
            mode,
            threads,
            metrics,
        })
    }

    /// The proxy in front of the pools `list` (`keys`: their authority keys), with
    /// workers of `threads` threads.
    fn proxy_mode(
        &self,
        list: &[String],
        keys: &[Option<AuthorityPublicKey>],
        threads: Option<usize>,
    ) -> Result<ProxyMode, ConfigError> {
        let (sv1_listen, aggregate_hashrate) = (self.sv1_listen()?, self.aggregate_hashrate()?);
        if self.noise.unwrap_or(false) && keys.iter().all(Option::is_none) {
            return Err(bad(
                "noise",
                "with upstream, the pool's authority key is needed to check that the pool \
                 is the one it claims to be: set authority_key (the base58check public key \
                 the pool operator publishes)",
            ));
        }
        let upstreams = upstreams(list, keys)?;
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
        let downstream = if self.listen_noise() {
            Some(identity(
                self.authority_secret_file.as_deref(),
                self.key_stock,
            )?)
        } else {
            None
        };
        let defaults = ProxyConfig::default();
        Ok(ProxyMode::Proxy {
            upstreams,
            failover,
            listen,
            downstream,
            upstream_flags: self.upstream_flags.unwrap_or(REQUIRES_VERSION_ROLLING),
            max_connections: match self.max_connections {
                Some(n) => max_connections(n)?,
                None => default_max_connections_for(workers),
            },
            workers,
            aggregate: self.aggregate.unwrap_or(false),
            upstream_extensions: self
                .upstream_extensions
                .clone()
                .unwrap_or_else(|| DEFAULT_UPSTREAM_EXTENSIONS.to_vec()),
            max_unconfirmed_shares: within(
                "max_unconfirmed_shares",
                self.max_unconfirmed_shares,
                1_000_000,
                defaults.max_unconfirmed_shares,
            )?,
            max_channels: within(
                "max_channels",
                self.max_channels,
                10_000_000,
                defaults.max_channels,
            )?,
            max_connections_per_address: self
                .max_connections_per_address
                .map(|n| positive("max_connections_per_address", n))
                .transpose()?,
            aggregate_hashrate,
            sv1_listen,
            sv1_pow2_difficulty: self.sv1_pow2_difficulty.unwrap_or(false),
        })
    }

    /// Whether miners connect over Noise: `listen_noise`, or an authority secret given.
    fn listen_noise(&self) -> bool {
        self.listen_noise.unwrap_or(false) || self.authority_secret_file.is_some()
    }

    /// The demo (no `upstream`): the options of the proxy in front of a pool are refused.
    fn demo_mode(&self) -> Result<ProxyMode, ConfigError> {
        if self.listen_noise() {
            return Err(bad(
                "listen_noise",
                "listen_noise and authority_secret_file need upstream",
            ));
        }
        let proxy_only = [
            ("listen", self.listen.is_some()),
            ("workers", self.workers.is_some()),
            ("aggregate", self.aggregate.is_some()),
            ("upstream_extensions", self.upstream_extensions.is_some()),
            (
                "max_unconfirmed_shares",
                self.max_unconfirmed_shares.is_some(),
            ),
            ("max_channels", self.max_channels.is_some()),
            (
                "max_connections_per_address",
                self.max_connections_per_address.is_some(),
            ),
            ("sv1_listen", self.sv1_listen.is_some()),
            ("aggregate_hashrate", self.aggregate_hashrate.is_some()),
            (
                "upstream_silence_timeout",
                self.upstream_silence_timeout.is_some(),
            ),
            ("upstream_return_hold", self.upstream_return_hold.is_some()),
        ];
        if let Some((key, _)) = proxy_only.into_iter().find(|(_, set)| *set) {
            return Err(bad(key, "needs upstream"));
        }
        if self.authority_key.is_some() {
            return Err(bad(
                "authority_key",
                "needs upstream (the demo makes its own keys: use noise)",
            ));
        }
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
        Ok(ProxyMode::Demo {
            miners,
            seconds,
            noise: self.noise.unwrap_or(false),
        })
    }
}

/// `value` of `key`, from 1 to `max`, or `default` when it is not set.
fn within(
    key: &'static str,
    value: Option<usize>,
    max: usize,
    default: usize,
) -> Result<usize, ConfigError> {
    match value {
        Some(n) if !(1..=max).contains(&n) => {
            Err(bad(key, format!("{n}: takes a number from 1 to {max}")))
        }
        Some(n) => Ok(n),
        None => Ok(default),
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
            return Ok(ProxyConfig::default().aggregate_hashrate);
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
