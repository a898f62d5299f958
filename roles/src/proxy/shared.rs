//! What the proxy's tasks share: its configuration, counters and errors. A leaf module:
//! the connection tasks, the router and the proxy itself all name it, and it names none
//! of them.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use sv2c_buffer_pool::{BufferPool, PoolError};
use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_codec::{CodecError, MAX_PAYLOAD_LEN};

use crate::identity::NoiseIdentity;
use crate::metrics::Rejections;
use sv2c_binary::messages::{MiningSetupFlags, MiningSuccessFlags};

/// `SetupConnection` flag (Mining): the client handles only standard jobs, as a plain
/// `u32` ([`MiningSetupFlags`] typed).
pub const REQUIRES_STANDARD_JOBS: u32 = MiningSetupFlags::REQUIRES_STANDARD_JOBS.bits();
/// `SetupConnection` flag (Mining): the client will send `SetCustomMiningJob`.
pub const REQUIRES_WORK_SELECTION: u32 = MiningSetupFlags::REQUIRES_WORK_SELECTION.bits();
/// `SetupConnection` flag (Mining): the server must allow version rolling.
pub const REQUIRES_VERSION_ROLLING: u32 = MiningSetupFlags::REQUIRES_VERSION_ROLLING.bits();
/// `SetupConnection.Success` flag (Mining): the server accepts no change to the version
/// ([`MiningSuccessFlags`] typed).
pub const REQUIRES_FIXED_VERSION: u32 = MiningSuccessFlags::REQUIRES_FIXED_VERSION.bits();

/// The extensions a proxy asks its pool for by default: Worker-Specific Hashrate Tracking
/// (0x0002), the one the proxy passes on to miners.
pub const DEFAULT_UPSTREAM_EXTENSIONS: &[u16] =
    &[sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING];

/// Settings of a [`Proxy`](super::Proxy).
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Slots in the shared buffer pool.
    pub pool_slots: usize,
    /// Size of each slot in bytes; larger frames are served from the heap (and counted).
    pub slot_size: usize,
    /// Largest frame payload accepted from a miner; a larger header ends the connection.
    pub max_downstream_payload: usize,
    /// Largest frame payload accepted from the pool, and sent to it: a miner's channel
    /// frame above it is dropped (counted in [`ProxyStats::frames_dropped`]).
    pub max_upstream_payload: usize,
    /// Time a new miner has to send `SetupConnection`.
    pub setup_timeout: Duration,
    /// Time the pool has to answer the proxy's `SetupConnection`.
    pub upstream_setup_timeout: Duration,
    /// Channels (open or being opened) allowed per miner connection.
    pub max_channels_per_connection: usize,
    /// Aggregating mode: miner channels served at once by this proxy, all connections
    /// together (a forwarding proxy's channels are the pool's, which bounds them). A
    /// request past it is refused `too-many-channels`. Default: 200,000 (as the pool's
    /// `max_channels`: a dozen channels for each of 15,000 miners; about 1.8 KiB each,
    /// 350 MiB at most).
    pub max_channels: usize,
    /// Miner connections served at once; more are closed on arrival, with one log line
    /// when the cap is reached ([`ConnectionCap`](crate::listen::ConnectionCap)).
    /// Default, and at most: [`default_max_connections`](crate::listen::default_max_connections),
    /// from the open-files limit (with a [`connection_count`](Self::connection_count) for
    /// several servers, less each further server's own files:
    /// [`ConnectionCap::shared`](crate::listen::ConnectionCap::shared)).
    pub max_connections: usize,
    /// Counts this proxy's miners together with those of the other proxies given a clone
    /// of the same count, so that [`max_connections`](Self::max_connections) caps them
    /// together (the workers of one process share its open-files limit). `None` (the
    /// default): the proxy's own miners only.
    pub connection_count: Option<crate::listen::ConnectionCount>,
    /// Miner connections served at once per IP address: one more is closed on arrival
    /// (counted in [`ProxyStats::connections_refused_per_address`]). Clones share the
    /// count, so the workers of one process given clones of one config cap an address
    /// together. No cap by default (many miners behind one NAT are ordinary); the
    /// `mining_proxy` program's `--max-connections-per-address` sets it.
    pub address_cap: crate::listen::AddressCap,
    /// Listen with `SO_REUSEPORT` ([`listen::bind_with`](crate::listen::bind_with)), so
    /// that several proxies of one process (workers, one per core) share the miners'
    /// address. Used by [`supervise`](super::supervise); off by default.
    pub reuse_port: bool,
    /// Frames queued for one miner; a miner that lets its queue fill up is disconnected.
    pub downstream_queue: usize,
    /// Messages queued for the pool, each the frames one read of a miner forwards; a full
    /// queue slows the miners down. In aggregating mode, the shares queued for the
    /// proxy's check, one read's worth per message.
    pub upstream_queue: usize,
    /// A write to a miner (a batch of queued frames) must finish within this, or the
    /// miner is disconnected: a miner that stops reading cannot hold its socket, its
    /// queue or its pool slots for longer. A write to the pool likewise, or the pool is
    /// treated as gone, as when it closes.
    pub write_timeout: Duration,
    /// A miner that sends no complete frame for this long after `SetupConnection` is
    /// disconnected (mining devices submit shares or at least update channels far more
    /// often).
    pub idle_timeout: Duration,
    /// A frame whose first bytes arrived must be complete within this, or the miner is
    /// disconnected: a peer cannot hold a large half-received frame (up to
    /// [`max_downstream_payload`](Self::max_downstream_payload) bytes of read buffer)
    /// for long, nor trickle bytes to keep a connection open.
    pub partial_frame_timeout: Duration,
    /// Flags of the proxy's `SetupConnection` to the pool. The default,
    /// [`REQUIRES_VERSION_ROLLING`] alone, says what the proxy does: it forwards both
    /// standard and extended channels, so it must not claim `REQUIRES_STANDARD_JOBS` (a
    /// pool may then refuse extended channels, as SRI's pool does), and most mining
    /// devices roll the version bits.
    pub upstream_flags: u32,
    /// `endpoint_host` of the proxy's `SetupConnection` (the pool's name or address).
    pub upstream_host: String,
    /// `endpoint_port` of the proxy's `SetupConnection`.
    pub upstream_port: u16,
    /// Log every connection and disconnection, not only errors (at `debug` level, like
    /// the errors: shown with `RUST_LOG=debug`).
    pub log_connections: bool,
    /// `Some`: the pool connection is encrypted (Noise NX, the proxy is the initiator) and
    /// the pool's certificate must be signed by this authority key and valid now; the
    /// handshake is bounded by [`upstream_setup_timeout`](Self::upstream_setup_timeout).
    /// `None` (the default): plain TCP.
    pub upstream_noise: Option<AuthorityPublicKey>,
    /// `Some`: every miner must open its connection with the Noise NX handshake, answered
    /// with this identity (the proxy's static key and a certificate from the proxy's
    /// authority, renewed before it expires); a miner that does not finish it within
    /// [`setup_timeout`](Self::setup_timeout) is disconnected. `None` (the default):
    /// plain TCP.
    pub downstream_noise: Option<Arc<NoiseIdentity>>,
    /// Extensions the proxy asks the pool for after `SetupConnection` (extension 0x0001).
    /// The default, [`DEFAULT_UPSTREAM_EXTENSIONS`] (`[0x0002]`), lets miners use
    /// Worker-Specific Hashrate Tracking when the pool grants it; empty: the proxy sends
    /// no `RequestExtensions`, and miners get none. A pool that does not answer within
    /// [`extensions_timeout`](Self::extensions_timeout) (the spec lets a server ignore
    /// the request) grants nothing, and the proxy carries on.
    pub upstream_extensions: Vec<u16>,
    /// Time the pool has to answer `RequestExtensions` before the proxy carries on
    /// without extensions. Default: 2 s.
    pub extensions_timeout: Duration,
    /// Aggregating mode: shares the proxy answers `SubmitShares.Success` itself while the
    /// pool has not answered them yet. Past this, miners' answers wait for the pool's
    /// (and are the pool's), up to [`MAX_HELD_SHARES`](super::aggregate::MAX_HELD_SHARES).
    /// Default: 1,024 (at 3,000 shares a second, a third of a second of the pool's
    /// answers, several times a healthy pool's round trip).
    pub max_unconfirmed_shares: usize,
    /// Aggregating mode: a miner's answer that waits this long for the pool's (past
    /// [`max_unconfirmed_shares`](Self::max_unconfirmed_shares)) makes the proxy take
    /// the pool as gone, as when the pool closes (its miners are told to reconnect, or
    /// with several upstreams moved to the next pool: see the [module
    /// docs](super#miners-across-a-switch)).
    /// Shares acknowledged already may stay unanswered longer (a pool may acknowledge
    /// only every so many shares). Default: 30 s.
    pub pool_answer_timeout: Duration,
    /// Aggregating mode (see the [module docs](super#aggregating-mode)): the proxy opens
    /// one extended channel to the pool and serves every miner channel from it, checking
    /// shares itself. `false` (the default): one upstream channel per miner channel.
    pub aggregate: bool,
    /// `user_identity` of the proxy's upstream channel in aggregating mode.
    pub aggregate_user: String,
    /// `nominal_hash_rate` (h/s) of the proxy's upstream channel in aggregating mode: the
    /// miners' hashrate together. A pool that sets the channel target from it (SRI's
    /// pool does) gives every miner a target for this rate. Default: 1e12 (1 TH/s).
    pub aggregate_hashrate: f32,
    /// Stratum V1 miners ([`Sv1Config`]), served in aggregating mode only.
    pub sv1: Sv1Config,
}

/// How the proxy serves Stratum V1 miners (see the `proxy::sv1` docs): each gets a part
/// of the aggregated upstream channel's extranonce, its own difficulty, and its shares
/// checked as the pool checks them.
#[derive(Debug, Clone)]
pub struct Sv1Config {
    /// Where SV1 miners connect (`None`, the default: no SV1 listener). Used by
    /// [`supervise`](super::supervise); [`Proxy::start_with_sv1`](super::Proxy::start_with_sv1)
    /// takes the listener itself.
    pub listen: Option<std::net::SocketAddr>,
    /// The largest `extranonce2_size` given to a miner; the rest of the miner's part of
    /// the extranonce is zeros at the end of its `extranonce1`. Default 8: WhatsMiner
    /// firmware fails above 8.
    pub max_extranonce2_size: usize,
    /// Shares per minute each miner's difficulty aims at (vardiff). Default 10.
    pub shares_per_minute: f64,
    /// Difficulties sent with `mining.set_difficulty` are integer powers of two (rounded
    /// down: a little easier), for firmware that mishandles fractional ones. Default off.
    pub pow2_difficulty: bool,
    /// A miner that was sent no job for this long gets the current one again (firmware
    /// reconnects after a minute or two without work). Default 30 s.
    pub job_refresh: Duration,
    /// The longest line accepted from a miner; a longer one is an invalid line.
    /// Default 4,096 bytes.
    pub max_line_len: usize,
}

impl Default for Sv1Config {
    fn default() -> Self {
        Sv1Config {
            listen: None,
            max_extranonce2_size: 8,
            shares_per_minute: 10.0,
            pow2_difficulty: false,
            job_refresh: Duration::from_secs(30),
            max_line_len: 4096,
        }
    }
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            pool_slots: 64,
            slot_size: 4096,
            max_downstream_payload: 64 * 1024,
            max_upstream_payload: MAX_PAYLOAD_LEN,
            setup_timeout: Duration::from_secs(10),
            upstream_setup_timeout: Duration::from_secs(10),
            max_channels_per_connection: 32,
            max_channels: 200_000,
            max_connections: crate::listen::default_max_connections(),
            connection_count: None,
            address_cap: crate::listen::AddressCap::default(),
            reuse_port: false,
            downstream_queue: 1024,
            write_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(300),
            partial_frame_timeout: Duration::from_secs(10),
            upstream_queue: 32,
            upstream_flags: REQUIRES_VERSION_ROLLING,
            upstream_host: String::new(),
            upstream_port: 0,
            log_connections: false,
            upstream_noise: None,
            downstream_noise: None,
            upstream_extensions: DEFAULT_UPSTREAM_EXTENSIONS.to_vec(),
            extensions_timeout: Duration::from_secs(2),
            max_unconfirmed_shares: 1024,
            pool_answer_timeout: Duration::from_secs(30),
            aggregate: false,
            aggregate_user: "sv2c-proxy".into(),
            aggregate_hashrate: 1e12,
            sv1: Sv1Config::default(),
        }
    }
}

/// Why the proxy could not start, or why it stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProxyError {
    /// A socket failed.
    Io(io::Error),
    /// The upstream connection failed at the framing level.
    Codec(CodecError),
    /// The upstream Noise handshake failed: the pool's certificate is not signed by the
    /// configured authority key or is not valid now, the pool does not speak Noise, or it
    /// did not answer in time.
    Handshake(CodecError),
    /// The buffer pool could not be created with the configured shape.
    Pool(PoolError),
    /// The pool did not accept the proxy's `SetupConnection`, or answered something else.
    Upstream(String),
    /// The pool did not answer `SetupConnection` in time.
    UpstreamTimeout,
    /// The configuration cannot be served (SV1 miners without the aggregating mode).
    Config(String),
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyError::Io(e) => write!(f, "I/O error: {e}"),
            ProxyError::Codec(e) => write!(f, "upstream framing error: {e}"),
            ProxyError::Handshake(e) => write!(f, "upstream Noise handshake failed: {e}"),
            ProxyError::Pool(e) => write!(f, "buffer pool: {e}"),
            ProxyError::Upstream(e) => write!(f, "upstream: {e}"),
            ProxyError::UpstreamTimeout => f.write_str("upstream did not answer SetupConnection"),
            ProxyError::Config(e) => write!(f, "configuration: {e}"),
        }
    }
}

impl std::error::Error for ProxyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProxyError::Io(e) => Some(e),
            ProxyError::Codec(e) | ProxyError::Handshake(e) => Some(e),
            ProxyError::Pool(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for ProxyError {
    fn from(e: io::Error) -> Self {
        ProxyError::Io(e)
    }
}

impl From<CodecError> for ProxyError {
    fn from(e: CodecError) -> Self {
        ProxyError::Codec(e)
    }
}

impl From<PoolError> for ProxyError {
    fn from(e: PoolError) -> Self {
        ProxyError::Pool(e)
    }
}

/// Gives back most of `map`'s room once it holds less than a quarter of what it has room
/// for: a map that grew under a flood of channels would otherwise keep its peak's
/// allocation (and its pages, which the allocator cannot give back) after the flood.
pub(crate) fn shrink_if_sparse<K: Eq + std::hash::Hash, V>(
    map: &mut std::collections::HashMap<K, V>,
) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

/// Counters shared by the proxy's tasks (relaxed atomics: monotone, read any time).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections_accepted: AtomicU64,
    pub(crate) connections_open: AtomicU64,
    pub(crate) connections_failed: AtomicU64,
    pub(crate) connections_refused_per_address: AtomicU64,
    pub(crate) frames_to_upstream: AtomicU64,
    pub(crate) frames_to_downstream: AtomicU64,
    pub(crate) frames_from_upstream: AtomicU64,
    pub(crate) shares_forwarded: AtomicU64,
    pub(crate) shares_accepted: AtomicU64,
    pub(crate) shares_rejected: Rejections,
    pub(crate) channels_open: AtomicU64,
    pub(crate) handshake_failures: AtomicU64,
    pub(crate) channels_opened: AtomicU64,
    pub(crate) frames_dropped: AtomicU64,
    pub(crate) upstream_closed: AtomicBool,
    pub(crate) shares_acknowledged: AtomicU64,
    pub(crate) shares_confirmed: AtomicU64,
    pub(crate) shares_refused_after_ack: AtomicU64,
    pub(crate) shares_unconfirmed: AtomicU64,
    pub(crate) shares_left_unconfirmed: AtomicU64,
    pub(crate) upstream_switches_kept: AtomicU64,
    pub(crate) sv1_connections: AtomicU64,
    pub(crate) sv1_shares_local: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

/// A snapshot of the proxy's counters ([`Proxy::stats`](super::Proxy::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyStats {
    /// Miner connections accepted so far.
    pub connections_accepted: u64,
    /// Miner connections open now.
    pub connections_open: u64,
    /// Miner connections closed because of an error (bad bytes, timeout, protocol).
    pub connections_failed: u64,
    /// Miner connections closed on arrival for [`ProxyConfig::address_cap`].
    pub connections_refused_per_address: u64,
    /// Frames written to the pool.
    pub frames_to_upstream: u64,
    /// Frames written to miners.
    pub frames_to_downstream: u64,
    /// Frames read from the pool.
    pub frames_from_upstream: u64,
    /// Share frames forwarded upstream (not decoded; in aggregating mode, the shares that
    /// passed the proxy's check).
    pub shares_forwarded: u64,
    /// Sum of `new_submits_accepted_count` of the pool's `SubmitShares.Success` messages
    /// (relayed to miners, or in aggregating mode counted only).
    pub shares_accepted: u64,
    /// `SubmitShares.Error` messages of the pool (relayed to miners, or in aggregating
    /// mode counted only), and those the proxy sends itself: shares on unknown channels,
    /// and in aggregating mode shares its check refuses.
    pub shares_rejected: u64,
    /// Miner channels opened (in aggregating mode, all on the proxy's one upstream
    /// channel).
    pub channels_opened: u64,
    /// Miner channels open now.
    pub channels_open: u64,
    /// Frames dropped: unknown channel, unknown non-channel extension, unexpected message.
    pub frames_dropped: u64,
    /// The upstream connection is gone: the proxy no longer serves anyone, or (in
    /// aggregating mode with several upstreams) its miners wait for the next pool
    /// connection.
    pub upstream_closed: bool,
    /// Aggregating mode: shares the proxy answered `SubmitShares.Success` before the
    /// pool answered them (see the acknowledgement policy in the [module docs](super)).
    pub shares_acknowledged: u64,
    /// Aggregating mode: of those, shares the pool then accepted.
    pub shares_confirmed: u64,
    /// Aggregating mode: of those, shares the pool then refused (the miner was told
    /// `Success`; the pool's code is counted in [`shares_rejected`](Self::shares_rejected)).
    pub shares_refused_after_ack: u64,
    /// Aggregating mode: shares sent to the pool and not answered by it yet.
    pub shares_unconfirmed: u64,
    /// Aggregating mode: shares the proxy answered `SubmitShares.Success` and sent to a
    /// pool it then left (lost, or switched away from) before that pool answered them:
    /// they stay acknowledged and are never confirmed. So `shares_acknowledged` =
    /// `shares_confirmed` + `shares_refused_after_ack` + `shares_left_unconfirmed` + the
    /// acknowledged part of `shares_unconfirmed`.
    pub shares_left_unconfirmed: u64,
    /// Aggregating mode with several upstreams: pool connections the proxy moved its
    /// miners to without disconnecting them ([`supervise_upstreams`](super::supervise_upstreams)).
    pub upstream_switches_kept: u64,
    /// Stratum V1 miner connections accepted so far (also in
    /// [`connections_accepted`](Self::connections_accepted)).
    pub sv1_connections: u64,
    /// SV1 shares that met the miner's own target but not the pool's: answered `true` by
    /// the proxy and not forwarded.
    pub sv1_shares_local: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> ProxyStats {
        ProxyStats {
            connections_accepted: self.connections_accepted.load(Relaxed),
            connections_open: self.connections_open.load(Relaxed),
            connections_failed: self.connections_failed.load(Relaxed),
            connections_refused_per_address: self.connections_refused_per_address.load(Relaxed),
            frames_to_upstream: self.frames_to_upstream.load(Relaxed),
            frames_to_downstream: self.frames_to_downstream.load(Relaxed),
            frames_from_upstream: self.frames_from_upstream.load(Relaxed),
            shares_forwarded: self.shares_forwarded.load(Relaxed),
            shares_accepted: self.shares_accepted.load(Relaxed),
            shares_rejected: self.shares_rejected.total(),
            channels_opened: self.channels_opened.load(Relaxed),
            channels_open: self.channels_open.load(Relaxed),
            frames_dropped: self.frames_dropped.load(Relaxed),
            upstream_closed: self.upstream_closed.load(Relaxed),
            shares_acknowledged: self.shares_acknowledged.load(Relaxed),
            shares_confirmed: self.shares_confirmed.load(Relaxed),
            shares_refused_after_ack: self.shares_refused_after_ack.load(Relaxed),
            shares_unconfirmed: self.shares_unconfirmed.load(Relaxed),
            shares_left_unconfirmed: self.shares_left_unconfirmed.load(Relaxed),
            upstream_switches_kept: self.upstream_switches_kept.load(Relaxed),
            sv1_connections: self.sv1_connections.load(Relaxed),
            sv1_shares_local: self.sv1_shares_local.load(Relaxed),
        }
    }
}

/// What every connection task shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: ProxyConfig,
    /// The flags of the current pool's `SetupConnection.Success`, passed on to miners.
    pub(crate) upstream_success_flags: AtomicU32,
    /// Extensions the current pool granted (`RequestExtensions.Success`) that miners may
    /// have.
    pub(crate) upstream_extensions: RwLock<Vec<u16>>,
    /// The current pool, `HOST:PORT` ([`Proxy::upstream`](super::Proxy::upstream)).
    pub(crate) upstream_name: Mutex<String>,
    pub(crate) pool: BufferPool,
    pub(crate) counters: Counters,
    /// Where the current pool's `Reconnect` sent the proxy (host, port as sent), if it
    /// did.
    pub(crate) redirect: Mutex<Option<(String, u16)>>,
    /// SV1 shares per worker name.
    pub(crate) sv1_workers: std::sync::Mutex<Sv1Workers>,
    /// The jobs every SV1 miner of this worker mines on, published by the router.
    pub(crate) sv1_jobs: super::board::Board,
}

/// SV1 worker names a proxy counts apart ([`Proxy::sv1_workers`](super::Proxy::sv1_workers));
/// shares of further names are counted under `(others)`.
pub const MAX_SV1_WORKERS: usize = 10_000;

/// One SV1 worker's shares at the proxy ([`Proxy::sv1_workers`](super::Proxy::sv1_workers)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sv1WorkerStats {
    /// Shares that met the pool's target, sent to the pool.
    pub forwarded: u64,
    /// Shares that met only the miner's own target, answered `true` by the proxy.
    pub local: u64,
    /// Shares the proxy's check refused.
    pub refused: u64,
}

/// One SV1 worker's counters, shared by every connection that authorized its name: a
/// share is counted without a lock.
#[derive(Debug, Default)]
pub(crate) struct Sv1WorkerCounts {
    pub(crate) forwarded: AtomicU64,
    pub(crate) local: AtomicU64,
    pub(crate) refused: AtomicU64,
}

impl Sv1WorkerCounts {
    fn stats(&self) -> Sv1WorkerStats {
        Sv1WorkerStats {
            forwarded: self.forwarded.load(Relaxed),
            local: self.local.load(Relaxed),
            refused: self.refused.load(Relaxed),
        }
    }
}

/// SV1 shares per worker identity (the name as fitted to 32 bytes), at most
/// [`MAX_SV1_WORKERS`] names.
#[derive(Debug, Default)]
pub(crate) struct Sv1Workers {
    counts: std::collections::HashMap<String, Arc<Sv1WorkerCounts>>,
}

impl Sv1Workers {
    /// Where the shares of names past [`MAX_SV1_WORKERS`] are counted.
    pub(crate) const OTHERS: &'static str = "(others)";

    /// The counters of `worker` (of [`OTHERS`](Self::OTHERS) once [`MAX_SV1_WORKERS`]
    /// names are counted), for a connection that authorized it.
    pub(crate) fn counts(&mut self, worker: &str) -> Arc<Sv1WorkerCounts> {
        if let Some(counts) = self.counts.get(worker) {
            return counts.clone();
        }
        let key = if self.counts.len() < MAX_SV1_WORKERS {
            worker
        } else {
            Self::OTHERS
        };
        self.counts.entry(key.to_owned()).or_default().clone()
    }

    /// Every worker's counts, by name.
    pub(crate) fn snapshot(&self) -> Vec<(String, Sv1WorkerStats)> {
        let mut all: Vec<_> = self
            .counts
            .iter()
            .map(|(k, v)| (k.clone(), v.stats()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

impl Shared {
    /// The extensions the current pool granted that miners may have.
    pub(crate) fn upstream_extensions(&self) -> Vec<u16> {
        match self.upstream_extensions.read() {
            Ok(e) => e.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Records what a new pool connection (`upstream`, `HOST:PORT`) answered: its
    /// `SetupConnection.Success` flags and the extensions it granted; forgets the last
    /// pool's `Reconnect`.
    pub(crate) fn set_upstream(&self, upstream: String, flags: u32, extensions: Vec<u16>) {
        self.upstream_success_flags.store(flags, Relaxed);
        match self.upstream_extensions.write() {
            Ok(mut e) => *e = extensions,
            Err(poisoned) => *poisoned.into_inner() = extensions,
        }
        match self.upstream_name.lock() {
            Ok(mut n) => *n = upstream,
            Err(poisoned) => *poisoned.into_inner() = upstream,
        }
        match self.redirect.lock() {
            Ok(mut r) => *r = None,
            Err(poisoned) => *poisoned.into_inner() = None,
        }
    }

    /// Where the current pool's `Reconnect` pointed, if it sent one.
    pub(crate) fn redirect(&self) -> Option<(String, u16)> {
        match self.redirect.lock() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Records the current pool's `Reconnect` (the first one counts).
    pub(crate) fn set_redirect(&self, to: (String, u16)) {
        let mut r = match self.redirect.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        r.get_or_insert(to);
    }

    /// The current pool, `HOST:PORT`.
    pub(crate) fn upstream_name(&self) -> String {
        match self.upstream_name.lock() {
            Ok(n) => n.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[cfg(test)]
impl Shared {
    /// A proxy's shared state with the default configuration and a small buffer pool,
    /// for the modules' unit tests.
    pub(crate) fn for_tests() -> Shared {
        Shared {
            config: ProxyConfig::default(),
            upstream_success_flags: AtomicU32::new(0),
            upstream_extensions: RwLock::new(Vec::new()),
            upstream_name: Mutex::new(String::new()),
            pool: BufferPool::new(4, 512).unwrap(),
            counters: Counters::default(),
            redirect: Mutex::new(None),
            sv1_workers: Default::default(),
            sv1_jobs: Default::default(),
        }
    }
}
