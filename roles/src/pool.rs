//! A small Stratum V2 pool server that checks proof of work: what `cargo run --example
//! pool` runs, and what the interop tests put SRI's `translator_sv2` in front of.
//!
//! It answers `SetupConnection` as [`crate::setup`] does (Mining protocol, version 2, no
//! work selection; `SetupConnection.Success` with flags 0), opens standard and extended channels
//! (each connection's channels are members of one group channel, whose id
//! `OpenStandardMiningChannel.Success`/`OpenExtendedMiningChannel.Success` report), sends
//! every new channel a future job and the `SetNewPrevHash` that activates it, then a new
//! job per channel for every new template, and for every new chain tip a future job and
//! its `SetNewPrevHash`, sent to every channel at once.
//!
//! # Templates and blocks
//!
//! With [`PoolConfig::template_provider`] set, templates and chain tips come from a
//! Template Provider over Template Distribution (a Bitcoin node, or the workspace's
//! `template_provider` example), and every block a miner finds is sent back to it as
//! `SubmitSolution`, coinbase witness included, before the miner is answered: see
//! [`TemplateProviderConfig`] and the `template_provider` module's documentation
//! (`roles/src/pool/template_provider.rs`) for the connection, its loss and the redial.
//! Without it the pool mines a made-up chain (it is not connected to a Bitcoin node): on
//! one pool-wide timer ([`PoolConfig::job_interval`]) a new job per channel, and every
//! [`PoolConfig::jobs_per_prev_hash`] ticks a new previous block hash; its blocks are
//! only logged. Either way the whole value a template leaves is paid to one output,
//! [`PoolConfig::coinbase_output`], before the template's own outputs (its witness
//! commitment). The template sources are in `roles/src/pool/template.rs`.
//!
//! Jobs, chain tips and share checks are those of [`sv2c_channels::server`]: each
//! channel is a [`ServerChannel`] given the job of the current template and its
//! `SetNewPrevHash`. A template's job is built once for every channel with the same
//! extranonce length, the first time one asks for it, and the channels hold that one
//! [`Job`] (its coinbase bytes are reference counted); each standard channel's
//! `NewMiningJob` carries the merkle root of its own prefix. Every share is checked for
//! real: the coinbase is rebuilt around the channel's extranonce prefix and the share's
//! extranonce (once per job on a standard channel, whose extranonce is the prefix),
//! folded into the merkle root, and the header's double SHA-256 compared with the
//! channel's target (and the network's: a block). A share meeting it is acknowledged by
//! `SubmitShares.Success`, one for the consecutive accepted shares of a channel that
//! arrived in one read (its `new_submits_accepted_count` says how many,
//! `last_sequence_number` the last, `new_shares_sum` the sum of their difficulties, as
//! SRI's pools count it: [`sv2c_channels::acks`]); any other gets `SubmitShares.Error` with the spec's
//! code (`invalid-channel-id`, `invalid-job-id`, `stale-share`, `bad-extranonce-size`,
//! `invalid-non-rollable-version-bit`, `difficulty-too-low`, `duplicate-share`).
//!
//! With [`PoolConfig::vardiff`] set, each channel's target follows its share rate
//! ([`sv2c_channels::vardiff`], checked on every job tick, announced with `SetTarget`).
//!
//! With [`PoolConfig::noise`] set, every connection must begin with the Noise NX handshake.
//!
//! # What a miner is answered
//!
//! * `SetupConnection`: see [`crate::setup`]; a refused one is answered with
//!   `SetupConnection.Error` and the connection closed. A second `SetupConnection` closes
//!   the connection.
//! * `OpenStandardMiningChannel` / `OpenExtendedMiningChannel`: `…Success` with the
//!   pool's share target, or the request's `max_target` if that is harder; or
//!   `OpenMiningChannel.Error` with [`MAX_TARGET_OUT_OF_RANGE`] (a `max_target` of zero,
//!   which no share meets: any other, however hard, is honoured),
//!   [`MIN_EXTRANONCE_SIZE_TOO_LARGE`], or [`TOO_MANY_CHANNELS`] (a channel budget is
//!   full: see below).
//! * `UpdateChannel`: `UpdateChannel.Error` with [`INVALID_CHANNEL_ID`] (no such channel
//!   on this connection) or [`MAX_TARGET_OUT_OF_RANGE`] (zero). Otherwise the
//!   `maximum_target` becomes the channel's: its target becomes the pool's (with vardiff,
//!   the controller's) bounded by it, and `SetTarget` is sent if that changed it (always
//!   when the new maximum is harder than the current target, as the spec requires). An
//!   unchanged `maximum_target` changes nothing and is not answered (the spec defines no
//!   success message).
//! * `nominal_hash_rate` (opens and `UpdateChannel`) is not used, whatever its value
//!   (0, negative, infinite, NaN): the pool never sets a target from what a miner claims;
//!   vardiff measures the shares. So no value of it is refused, and none moves a target.
//! * A share on a connection that negotiated extension 0x0002 whose `user_identity` TLV
//!   is longer than 32 bytes, or whose TLV tail is malformed before one (a record running
//!   past the end, 1 to 4 stray bytes), is refused with [`INVALID_USER_IDENTITY`] before
//!   its proof of work is checked (the spec requires the receiver to reject it; the share
//!   is not recorded, so the miner may send it again without the bad TLV). Without
//!   0x0002, the tail is not read.
//!
//! # Budgets
//!
//! * Channels per connection, [`PoolConfig::max_channels_per_connection`], and on the
//!   whole pool, [`PoolConfig::max_channels`]: a request beyond either is refused with
//!   [`TOO_MANY_CHANNELS`] (the spec defines no code for this), counted in
//!   [`PoolStats::channels_refused`]. Honest miners opening channels while the pool's
//!   budget is full get the same refusal, until channels close; the channels they hold
//!   keep being served.
//! * Connections at once, [`PoolConfig::max_connections`], and per peer address,
//!   [`PoolConfig::max_connections_per_address`] (off by default): one beyond is closed on
//!   arrival.
//! * Worker identities, [`PoolConfig::max_workers`]: see "Shutdown and extensions" below.
//!
//! The `pool` program gives memory back to the system once many connections left or many
//! channels closed (`malloc_trim`, `programs/src/memory.rs`).
//!
//! A client that misbehaves costs only its own connection, which is closed: no Noise
//! handshake and `SetupConnection` within [`PoolConfig::setup_timeout`], a frame announcing
//! more than [`PoolConfig::max_payload_len`], a frame left unfinished at two job ticks in a
//! row, or a write to it (answers, jobs) that does not finish within
//! [`PoolConfig::write_timeout`]. None of these keeps a timer per idle connection: the
//! unfinished frame is checked on the job tick every connection wakes for anyway, and the
//! write timeout's timer exists only while a write waits (`tests/pool_hostile.rs`;
//! the budgets: `tests/pool_budgets.rs`; the answers: `tests/pool_answers.rs`).
//!
//! # Shutdown and extensions
//!
//! [`Pool::shutdown`] is graceful: the pool stops listening, sends every set-up connection
//! `Reconnect` (to this same endpoint) behind what it has queued, and closes it.
//!
//! Extensions: the pool answers `RequestExtensions` (0x0001) with
//! [`sv2c_channels::extensions::negotiate`], supporting Worker-Specific Hashrate Tracking
//! (0x0002) and requiring none. On a connection that negotiated 0x0002, each accepted
//! share is counted for the `user_identity` TLV it carries; a share without one (or on
//! a connection without 0x0002) counts for the `user_identity` its channel was opened
//! with. [`Pool::workers`] returns the counts of at most [`PoolConfig::max_workers`]
//! identities, the active ones: when it is full, a new identity takes the place of the
//! least recently seen one if that one was last seen longer than
//! [`PoolConfig::worker_active`] ago, and otherwise its share is summed in
//! [`Pool::workers_overflow`], as are the counts of evicted identities. A stream of
//! made-up names thus overflows instead of pushing out workers that keep submitting.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Sink, SinkExt, Stream};
use sv2c_binary::messages::{
    Message, MessageRef, OpenExtendedMiningChannelSuccess, OpenMiningChannelError,
    OpenStandardMiningChannelSuccess, Reconnect, SetNewPrevHashTdp, SetTarget, UpdateChannel,
    UpdateChannelError,
};
use sv2c_binary::tlv::{TlvTail, TlvTailBuf, UserIdentity};
use sv2c_binary::{B032, Str0255, U256};
use sv2c_channels::acks::Acks;
use sv2c_channels::extensions::{
    Negotiated, WORKER_SPECIFIC_HASHRATE_TRACKING, WorkerStats, negotiate,
};
use sv2c_channels::pow::harder;
use sv2c_channels::server::{
    Job, JobError, ServerChannel, Share, ShareOk, VERSION_ROLLING_MASK, submit_solution,
};
use sv2c_channels::tailed::{Tailed, TailedRef};
use sv2c_channels::vardiff::{Vardiff, VardiffConfig};
use sv2c_codec::noise;

use crate::identity::NoiseIdentity;
use sv2c_codec::{BatchDecoder, BatchRead, CodecError, Sv2Codec, read_batch};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::ToSocketAddrs;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::codec::Framed;

use crate::listen::{self, AddressCap, ConnectionCap};
use crate::metrics::{BlockSample, Rejections, Sample};
use crate::setup::{MiningSuccessFlags, answer_mining_setup};

mod template;
mod template_provider;
mod workers;
use template::{Broadcast, JobCache, MadeUpChain, Work};
pub use template_provider::TemplateProviderConfig;
use template_provider::{SOLUTION_QUEUE, Solution, display_hash};
use workers::Workers;

/// Bytes of extranonce the pool puts before the miner's own (channel-specific).
const EXTRANONCE_PREFIX_LEN: usize = 8;
/// [`PoolConfig::coinbase_output`] by default: `OP_TRUE`, which anyone can spend (a test
/// pool's payout).
pub const DEFAULT_COINBASE_OUTPUT: &[u8] = &[0x51];
/// Extensions the pool supports (and none it requires).
const SUPPORTED_EXTENSIONS: &[u16] = &[WORKER_SPECIFIC_HASHRATE_TRACKING];
/// Worker identities [`Pool::workers`] holds by default ([`PoolConfig::max_workers`]).
pub const MAX_WORKERS: usize = 10_000;
/// The flags of the pool's `SetupConnection.Success`: it requires nothing (version
/// rolling allowed, standard and extended channels served).
const SUCCESS_FLAGS: MiningSuccessFlags = MiningSuccessFlags::empty();
/// A target no hash meets.
const ZERO_TARGET: U256 = U256([0; 32]);

/// The error codes the pool answers with (`too-many-channels` is ours: the spec has none;
/// a channel budget is full, the connection's ([`PoolConfig::max_channels_per_connection`])
/// or the pool's ([`PoolConfig::max_channels`])).
pub use sv2c_channels::codes::{
    INVALID_CHANNEL_ID, INVALID_USER_IDENTITY, MAX_TARGET_OUT_OF_RANGE,
    MIN_EXTRANONCE_SIZE_TOO_LARGE, TOO_MANY_CHANNELS,
};

/// [`PoolConfig::max_channels_per_connection`] by default.
pub const DEFAULT_MAX_CHANNELS_PER_CONNECTION: usize = 32_768;
/// [`PoolConfig::max_channels`] by default.
pub const DEFAULT_MAX_CHANNELS: usize = 200_000;

/// Settings of a [`Pool`].
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// The share target of every channel (or the channel's `max_target` if that is
    /// harder), a little-endian number.
    pub share_target: U256,
    /// The pool's job timer: on the made-up chain every channel gets a new job this
    /// often; with a Template Provider it paces only vardiff and the check of unfinished
    /// frames.
    pub job_interval: Duration,
    /// On the made-up chain, every this many timer ticks the previous block hash changes
    /// instead (not used with a Template Provider).
    pub jobs_per_prev_hash: u32,
    /// The script of the coinbase output the pool adds, which takes the whole value a
    /// template leaves (default [`DEFAULT_COINBASE_OUTPUT`]).
    pub coinbase_output: Vec<u8>,
    /// `Some`: templates and chain tips come from this Template Provider, and blocks are
    /// submitted to it. `None` (the default): the made-up chain.
    pub template_provider: Option<TemplateProviderConfig>,
    /// `Some`: variable difficulty. Each channel starts at `share_target` and a
    /// [`Vardiff`] moves its target toward `shares_per_minute`, checked on every job tick
    /// (`SetTarget` is sent when it moves); the controller's `max_target` is the channel's
    /// own. `None`: every channel keeps `share_target`.
    pub vardiff: Option<VardiffConfig>,
    /// Extranonce bytes left to an extended channel's owner (at least its
    /// `min_extranonce_size` is granted, up to 24).
    pub extranonce_size: u16,
    /// Time a client has to finish the Noise handshake and send `SetupConnection`.
    pub setup_timeout: Duration,
    /// A write to a client (answers, jobs) must finish within this, or the connection is
    /// closed: a client that stops reading cannot hold its task and socket for longer.
    pub write_timeout: Duration,
    /// The largest payload a client may send; a frame announcing more closes the
    /// connection (every message a miner sends a pool is under 2 KiB). Bounds the bytes
    /// of an unfinished frame a connection holds, which it may hold for at most two job
    /// intervals: a frame unfinished at two consecutive job ticks, with no frame
    /// completed between them, closes the connection.
    pub max_payload_len: usize,
    /// Channels one connection may hold open; a request beyond it is refused with
    /// [`TOO_MANY_CHANNELS`]. A miner opens a handful; a forwarding proxy one per miner
    /// behind it. The default, [`DEFAULT_MAX_CHANNELS_PER_CONNECTION`] (32,768), is
    /// twice the 15,000 miners one `mining_proxy` worker is measured with, and one
    /// connection can then hold at most a sixth of the default [`max_channels`].
    ///
    /// [`max_channels`]: Self::max_channels
    pub max_channels_per_connection: usize,
    /// Channels open at once on the whole pool (the real bound on channel memory, about
    /// 1 KiB each); a request beyond it is refused with [`TOO_MANY_CHANNELS`] until
    /// channels close. Default [`DEFAULT_MAX_CHANNELS`] (200,000: about 200 MiB; a dozen
    /// channels for each of 15,000 miners, or several forwarding proxies of thousands of
    /// miners each).
    pub max_channels: usize,
    /// Connections served at once from one IP address; more are closed on arrival.
    /// `None` (the default): no cap, as miners behind one NAT share an address.
    pub max_connections_per_address: Option<usize>,
    /// Worker identities [`Pool::workers`] holds (default [`MAX_WORKERS`]); the least
    /// recently seen idle one makes room for a new one (see the [module docs](self)).
    pub max_workers: usize,
    /// A worker seen within this is active, and is not evicted for a new identity
    /// (default 10 minutes: at vardiff's default rate a worker submits every 6 s).
    pub worker_active: Duration,
    /// `Some`: connections are encrypted (Noise NX, answered with this identity, whose
    /// certificate is renewed before it expires).
    pub noise: Option<Arc<NoiseIdentity>>,
    /// Connections served at once; more are closed on arrival, with one log line when
    /// the cap is reached ([`ConnectionCap`]). Default, and at most:
    /// [`default_max_connections`](crate::listen::default_max_connections), from the
    /// open-files limit.
    pub max_connections: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            share_target: sv2c_channels::pow::target_with_zero_bits(8),
            job_interval: Duration::from_secs(10),
            jobs_per_prev_hash: 6,
            coinbase_output: DEFAULT_COINBASE_OUTPUT.to_vec(),
            template_provider: None,
            vardiff: None,
            extranonce_size: 8,
            setup_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(5),
            max_payload_len: 64 * 1024,
            max_channels_per_connection: DEFAULT_MAX_CHANNELS_PER_CONNECTION,
            max_channels: DEFAULT_MAX_CHANNELS,
            max_connections_per_address: None,
            max_workers: MAX_WORKERS,
            worker_active: Duration::from_secs(600),
            noise: None,
            max_connections: crate::listen::default_max_connections(),
        }
    }
}

/// The pool's counters ([`Pool::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Connections set up (`SetupConnection.Success` sent).
    pub connections: u64,
    /// Connections open now (accepted and not closed).
    pub connections_open: u64,
    /// Channels opened (standard and extended).
    pub channels_opened: u64,
    /// Channels open now.
    pub channels_open: u64,
    /// Channel requests refused with [`TOO_MANY_CHANNELS`].
    pub channels_refused: u64,
    /// Connections closed on arrival for [`PoolConfig::max_connections_per_address`].
    pub connections_refused_per_address: u64,
    /// Shares that met their channel's target.
    pub shares_accepted: u64,
    /// Shares answered with `SubmitShares.Error`.
    pub shares_rejected: u64,
    /// Jobs sent (standard and extended).
    pub jobs_sent: u64,
    /// `SetNewPrevHash` messages sent.
    pub prev_hashes_sent: u64,
    /// Shares that met the network target.
    pub blocks_found: u64,
    /// Blocks sent to the Template Provider (`SubmitSolution`).
    pub blocks_submitted: u64,
    /// Whether the connection to the Template Provider is set up now (`false` without
    /// one).
    pub template_provider_connected: bool,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    connections_accepted: AtomicU64,
    connections_open: AtomicU64,
    handshake_failures: AtomicU64,
    channels_opened: AtomicU64,
    channels_open: AtomicU64,
    channels_refused: AtomicU64,
    connections_refused_per_address: AtomicU64,
    shares_accepted: AtomicU64,
    shares_rejected: Rejections,
    jobs_sent: AtomicU64,
    prev_hashes_sent: AtomicU64,
    reconnects_sent: AtomicU64,
    frames_received: AtomicU64,
    blocks_found: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

#[derive(Debug)]
struct Shared {
    config: PoolConfig,
    counters: Counters,
    next_id: AtomicU32,
    /// Accepted shares and work per `user_identity`.
    workers: Mutex<Workers>,
    /// Connections per peer address.
    addresses: AddressCap,
    /// What every connection follows: the work (template and chain tip), the job timer's
    /// tick and the shutdown. One watch, one wake-up source per idle connection.
    broadcast: Arc<watch::Sender<Broadcast>>,
    /// The Template Provider client's connection and blocks submitted.
    tp_status: Arc<template_provider::Status>,
    /// The origin of the seconds vardiff counts in.
    started: std::time::Instant,
    /// The jobs of the current work, built once for every channel.
    jobs: Mutex<JobCache>,
    /// Blocks for the Template Provider's connection (`None`: no Template Provider).
    solutions: Option<mpsc::Sender<Solution>>,
}

impl Shared {
    /// The pool's shared state; `solutions`: where blocks go, with a Template Provider.
    fn new(config: PoolConfig, solutions: Option<mpsc::Sender<Solution>>) -> Shared {
        // The made-up chain has work from the start; a Template Provider's comes later.
        let work = match config.template_provider {
            None => Some(Arc::new(MadeUpChain::first().work())),
            Some(_) => None,
        };
        Shared {
            counters: Counters::default(),
            next_id: AtomicU32::new(1),
            workers: Mutex::new(Workers::new(
                config.max_workers,
                config.worker_active.as_secs(),
            )),
            addresses: AddressCap::new(config.max_connections_per_address),
            broadcast: Arc::new(watch::Sender::new(Broadcast {
                work,
                ..Broadcast::default()
            })),
            tp_status: Arc::default(),
            started: std::time::Instant::now(),
            jobs: Mutex::new(JobCache::default()),
            solutions,
            config,
        }
    }

    /// The job of `work` for a channel whose coinbase holds `extranonce_len` bytes of
    /// extranonce ([`JobCache::job`]).
    ///
    /// # Errors
    /// The job cannot be built.
    fn job(&self, work: &Work, future: bool, extranonce_len: usize) -> Result<Job, JobError> {
        let mut cache = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        cache.job(work, future, extranonce_len, &self.config.coinbase_output)
    }

    /// A share met the network target: counted, logged and, with a Template Provider,
    /// queued for it as `SubmitSolution` at once.
    fn block_found(&self, channel_id: u32, found: (&[u8; 32], u64, &[u8; 80], &[u8])) {
        let (hash, template_id, header, coinbase) = found;
        bump(&self.counters.blocks_found);
        let shown = display_hash(hash);
        let Some(solutions) = &self.solutions else {
            tracing::info!("share of channel {channel_id} is a block: {shown}");
            return;
        };
        let solution = match submit_solution(template_id, header, coinbase) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("block {shown} of channel {channel_id} cannot be submitted: {e}");
                return;
            }
        };
        match solutions.try_send((*hash, solution)) {
            Ok(()) => tracing::info!(
                "block {shown} found by channel {channel_id} (template {template_id})"
            ),
            Err(e) => tracing::error!(
                "block {shown} of channel {channel_id} not submitted: the queue for the \
                 template provider is {}",
                if matches!(e, mpsc::error::TrySendError::Full(_)) {
                    "full"
                } else {
                    "closed"
                }
            ),
        }
    }

    /// Seconds since the pool started (vardiff's clock).
    fn now_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}

/// A running pool (see the [module docs](self)).
#[derive(Debug)]
pub struct Pool {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Pool {
    /// Listens on `addr` (with a backlog for reconnection storms, [`listen::bind`]) and
    /// serves every connection until [`shutdown`](Self::shutdown).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(addr: impl ToSocketAddrs, config: PoolConfig) -> io::Result<Pool> {
        let listener = listen::bind(addr).await?;
        let addr = listener.local_addr()?;
        let tp = config.template_provider.clone();
        let (solutions, solutions_rx) = match tp {
            Some(_) => {
                let (tx, rx) = mpsc::channel(SOLUTION_QUEUE);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let shared = Arc::new(Shared::new(config, solutions));
        let (shutdown, mut stop) = watch::channel(false);
        if let (Some(tp), Some(rx)) = (tp, solutions_rx) {
            let link = template_provider::Link {
                broadcast: shared.broadcast.clone(),
                status: shared.tp_status.clone(),
                coinbase_output: shared.config.coinbase_output.clone(),
            };
            let client = template_provider::run(link, tp, rx, stop.clone());
            tokio::spawn(client);
        }
        let task = tokio::spawn({
            let shared = shared.clone();
            async move {
                let mut made_up = shared
                    .config
                    .template_provider
                    .is_none()
                    .then(MadeUpChain::first);
                let mut connections = JoinSet::new();
                let mut cap = ConnectionCap::new(shared.config.max_connections);
                let interval = shared.config.job_interval;
                let mut ticker =
                    tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = ticker.tick() => {
                            let every = shared.config.jobs_per_prev_hash;
                            template::on_timer(&shared.broadcast, made_up.as_mut(), every);
                        }
                        Some(_) = connections.join_next(), if !connections.is_empty() => {}
                        accepted = listener.accept() => match accepted {
                            Ok((_, _)) if !cap.admit(connections.len()) => {}
                            Ok((tcp, peer)) => {
                                let Some(slot) = shared.addresses.admit(peer.ip()) else {
                                    let refused = &shared.counters.connections_refused_per_address;
                                    bump(refused);
                                    tracing::debug!("{peer}: closed, its address holds max_connections_per_address");
                                    continue;
                                };
                                let _ = tcp.set_nodelay(true);
                                let shared = shared.clone();
                                bump(&shared.counters.connections_accepted);
                                bump(&shared.counters.connections_open);
                                tracing::debug!("{peer}: connected");
                                connections.spawn(async move {
                                    match serve(tcp, shared.clone()).await {
                                        Ok(()) => tracing::debug!("{peer}: disconnected"),
                                        Err(e) => tracing::debug!("{peer}: {e}; disconnected"),
                                    }
                                    shared.counters.connections_open.fetch_sub(1, Relaxed);
                                    drop(slot);
                                });
                            }
                            Err(e) => {
                                tracing::warn!("accept failed: {e}");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        },
                    }
                }
                drop(listener);
                // Every connection sends `Reconnect` and closes; a peer that does not
                // read gets SHUTDOWN_GRACE.
                shared.broadcast.send_modify(|b| b.stopping = true);
                let drain = async { while connections.join_next().await.is_some() {} };
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, drain).await;
                connections.shutdown().await;
            }
        });
        Ok(Pool {
            addr,
            shared,
            shutdown,
            task,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters now.
    pub fn stats(&self) -> PoolStats {
        let c = &self.shared.counters;
        PoolStats {
            connections: c.connections.load(Relaxed),
            connections_open: c.connections_open.load(Relaxed),
            channels_opened: c.channels_opened.load(Relaxed),
            channels_open: c.channels_open.load(Relaxed),
            channels_refused: c.channels_refused.load(Relaxed),
            connections_refused_per_address: c.connections_refused_per_address.load(Relaxed),
            shares_accepted: c.shares_accepted.load(Relaxed),
            shares_rejected: c.shares_rejected.total(),
            jobs_sent: c.jobs_sent.load(Relaxed),
            prev_hashes_sent: c.prev_hashes_sent.load(Relaxed),
            blocks_found: c.blocks_found.load(Relaxed),
            blocks_submitted: self.shared.tp_status.submitted.load(Relaxed),
            template_provider_connected: self.shared.tp_status.connected.load(Relaxed),
        }
    }

    /// A probe that reads the pool's counters for the [`metrics`](crate::metrics)
    /// endpoint, for as long as it lives.
    pub fn probe(&self) -> impl Fn() -> Sample + Send + Sync + 'static {
        let shared = self.shared.clone();
        let tp = shared.config.template_provider.is_some();
        move || {
            let c = &shared.counters;
            let load = |a: &AtomicU64| a.load(Relaxed);
            let rejected = c.shares_rejected.counts();
            // Every message the pool sends is one of these (refusals of SetupConnection
            // and of channels aside).
            let sent = load(&c.connections)
                + load(&c.channels_opened)
                + load(&c.shares_accepted)
                + rejected.iter().sum::<u64>()
                + load(&c.jobs_sent)
                + load(&c.prev_hashes_sent)
                + load(&c.reconnects_sent);
            Sample {
                connections_open: load(&c.connections_open),
                connections_total: load(&c.connections_accepted),
                channels_open: load(&c.channels_open),
                shares_accepted: load(&c.shares_accepted),
                shares_rejected: rejected,
                frames: vec![("received", load(&c.frames_received)), ("sent", sent)],
                buffer_pool: None,
                downstream_handshake_failures: load(&c.handshake_failures),
                share_acks: None,
                blocks: Some(BlockSample {
                    found: load(&c.blocks_found),
                    submitted: load(&shared.tp_status.submitted),
                    template_provider_connected: tp
                        .then(|| shared.tp_status.connected.load(Relaxed)),
                }),
                sv1_workers: Vec::new(),
            }
        }
    }

    /// Accepted shares and their work (expected hashes) per `user_identity` (text, lossy
    /// UTF-8), ordered by identity (see the [module docs](self) for which identity a
    /// share counts for).
    pub fn workers(&self) -> Vec<(String, WorkerStats)> {
        let ledger = self
            .shared
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        ledger
            .sorted()
            .into_iter()
            .map(|(id, s)| (String::from_utf8_lossy(id).into_owned(), *s))
            .collect()
    }

    /// Accepted shares of the identities [`Pool::workers`] does not hold: evicted ones,
    /// and those that came while it was full of active ones ([`PoolConfig::max_workers`]).
    pub fn workers_overflow(&self) -> WorkerStats {
        let ledger = self
            .shared
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        ledger.overflow()
    }

    /// Identities evicted from [`Pool::workers`] to make room for new ones.
    pub fn workers_evicted(&self) -> u64 {
        let ledger = self
            .shared
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        ledger.evicted()
    }

    /// Stops listening, sends every set-up connection `Reconnect` (empty host, port 0:
    /// this same endpoint, spec §3.1) behind what is queued for it, closes them and waits
    /// for their tasks (at most [`SHUTDOWN_GRACE`], then the rest are dropped).
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// How long [`Pool::shutdown`] waits for connections to say `Reconnect` and close.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

async fn serve<S>(stream: S, shared: Arc<Shared>) -> Result<(), CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let codec = Sv2Codec::for_set().with_max_payload_len(shared.config.max_payload_len);
    let Some(identity) = shared.config.noise.clone() else {
        let framed = Framed::new(stream, codec);
        return serve_on(std::future::ready(Ok(framed)), shared).await;
    };
    let handshake = Box::pin(handshake(stream, identity, codec, shared.clone()));
    serve_on(handshake, shared).await
}

/// The Noise handshake (boxed, as are the connection's other rare steps: the task keeps
/// only the state of what it waits on between them, a connection's memory while idle).
async fn handshake<S>(
    stream: S,
    identity: Arc<NoiseIdentity>,
    codec: Sv2Codec<Tailed<Message>>,
    shared: Arc<Shared>,
) -> Result<Framed<S, noise::NoiseCodec<Sv2Codec<Tailed<Message>>>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let responder = identity.responder();
    let handshake = noise::accept_with(stream, &responder, codec, || identity.ephemeral_key());
    match tokio::time::timeout(shared.config.setup_timeout, handshake).await {
        Ok(Ok(framed)) => Ok(framed),
        Ok(Err(e)) => {
            bump(&shared.counters.handshake_failures);
            Err(e)
        }
        Err(_) => {
            bump(&shared.counters.handshake_failures);
            let e = io::Error::new(io::ErrorKind::TimedOut, "no Noise handshake in time");
            Err(e.into())
        }
    }
}

/// A connection's channels, boxed: the map allocates room for several entries at once, so
/// a connection with one channel would otherwise hold 1.4 KiB of map.
type Channels = HashMap<u32, Box<Channel>>;

#[derive(Debug)]
struct Channel {
    /// Jobs, chain tip and share validation ([`ServerChannel`]).
    inner: ServerChannel,
    /// The `user_identity` the channel was opened with.
    user_identity: Vec<u8>,
    /// The largest target its owner accepts (at the open, or its last `UpdateChannel`).
    max_target: U256,
    /// Its difficulty controller, with [`PoolConfig::vardiff`].
    vardiff: Option<Vardiff>,
    /// Accepted shares counted for `user_identity` and not yet added to the pool's
    /// ledger (done once per batch: [`Connection::record_workers`]).
    unrecorded: u64,
}

struct Connection<F> {
    framed: F,
    shared: Arc<Shared>,
    channels: Channels,
    group_id: u32,
    /// The work the channels' jobs were built on (`None`: none yet).
    work: Option<Arc<Work>>,
    /// The job timer's tick it last saw.
    ticks: u64,
    /// Whether 0x0002 was negotiated (the `user_identity` TLV is read).
    worker_tlv: bool,
    /// Accepted shares not yet added to the pool's counters and ledger.
    tally: Tally,
    /// A frame was unfinished at the last job tick, and none has been completed since.
    unfinished_at_tick: bool,
}

/// What a connection counted in a batch and adds to the pool's shared counters and
/// ledger once, after the batch ([`Connection::record_workers`]): no shared cache line is
/// written per share.
#[derive(Debug, Default)]
struct Tally {
    /// Shares accepted.
    accepted: u64,
    /// The channels with `unrecorded` shares.
    channels: Vec<u32>,
}

impl<F> Connection<F> {
    /// A connection, and where the pool announces the next work and timer tick to it (and
    /// its shutdown), subscribed before the work is read so no change falls between.
    fn new(framed: F, shared: Arc<Shared>) -> (Self, watch::Receiver<Broadcast>) {
        let group_id = shared.next_id.fetch_add(1, Relaxed);
        let broadcast = shared.broadcast.subscribe();
        let (work, ticks) = {
            let now = broadcast.borrow();
            (now.work.clone(), now.ticks)
        };
        let conn = Connection {
            framed,
            channels: HashMap::new(),
            group_id,
            work,
            ticks,
            shared,
            worker_tlv: false,
            tally: Tally::default(),
            unfinished_at_tick: false,
        };
        (conn, broadcast)
    }

    /// Adds the accepted shares counted since the last call to the pool's counter, and
    /// those its channels counted for their own `user_identity` to the pool's ledger,
    /// under one lock. Called after every batch of shares, before anything else can
    /// change a channel's target, so their work is that of the channel's target now.
    fn record_workers(&mut self) {
        let accepted = core::mem::take(&mut self.tally.accepted);
        if accepted > 0 {
            let counter = &self.shared.counters.shares_accepted;
            counter.fetch_add(accepted, Relaxed);
        }
        if self.tally.channels.is_empty() {
            return;
        }
        let now = self.shared.now_secs();
        let mut ledger = self
            .shared
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Taken, not drained: a connection keeps no vector between batches.
        for id in core::mem::take(&mut self.tally.channels) {
            if let Some(c) = self.channels.get_mut(&id) {
                let n = core::mem::take(&mut c.unrecorded);
                let work = n as f64 * sv2c_channels::pow::expected_hashes(c.inner.target());
                ledger.record(&c.user_identity, n, work, now);
            }
        }
    }
}

impl<F> Drop for Connection<F> {
    fn drop(&mut self) {
        self.record_workers();
        let open = self.channels.len() as u64;
        self.shared.counters.channels_open.fetch_sub(open, Relaxed);
    }
}

/// What a connection's `Framed` is: plaintext or Noise around `Sv2Codec<Tailed<Message>>`
/// (messages with their TLV tails, for extension 0x0002).
trait Conn:
    Stream<Item = Result<Tailed<Message>, CodecError>>
    + Sink<Message, Error = CodecError>
    + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = TailedRef<'a, MessageRef<'a>>>>
    + Unpin
{
}

impl<F> Conn for F where
    F: Stream<Item = Result<Tailed<Message>, CodecError>>
        + Sink<Message, Error = CodecError>
        + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = TailedRef<'a, MessageRef<'a>>>>
        + Unpin
{
}

/// Serves the connection `framed` resolves to (after the handshake, if any).
async fn serve_on<F: Conn>(
    framed: impl Future<Output = Result<F, CodecError>>,
    shared: Arc<Shared>,
) -> Result<(), CodecError> {
    // Built in one statement, so that the task keeps no slot for the `Framed` beside the
    // `Connection` for the connection's life.
    let (mut conn, broadcast) = Connection::new(framed.await?, shared);
    // The buffers `Framed::new` made are given back before the first `.await`, so a
    // handshake storm does not hold them all at once: every read goes through
    // `read_batch` (the thread's scratch buffer), every write allocates what it needs.
    conn.framed.release_buffers();
    if !Box::pin(conn.setup()).await? {
        return Ok(());
    }
    if broadcast.borrow().stopping {
        // The pool stopped while this connection was being set up.
        return Box::pin(conn.reconnect()).await;
    }
    let mut inbox = Inbox::default();
    let write_timeout = conn.shared.config.write_timeout;
    // Waits across batches: a batch of shares does not take the connection off the pool's
    // list of waiters and put it back (a lock shared by every connection).
    let mut changed = std::pin::pin!(next_broadcast(broadcast));
    loop {
        let mut received = 0;
        tokio::select! {
            read = read_batch(&mut conn.framed, |m| {
                received += 1;
                let channels = (&mut conn.channels, &mut conn.tally);
                inbox.take(m, &conn.shared, channels, conn.worker_tlv);
            }) => {
                conn.shared.counters.frames_received.fetch_add(received, Relaxed);
                // Counted before any answer is sent.
                conn.record_workers();
                let read = match read {
                    Ok(read) => read,
                    // A frame that does not decode (its bytes consumed) is dropped and
                    // costs nothing else: the messages before it are answered, and the
                    // connection carries on.
                    Err(e) if e.is_recoverable() => {
                        tracing::debug!("a frame that does not decode, dropped: {e}");
                        Some(0)
                    }
                    // Fatal (the bytes cannot be trusted any more): the connection ends.
                    Err(e) => return Err(e),
                };
                if read.is_none() {
                    return Ok(());
                }
                conn.unfinished_at_tick = false;
                // Boxed, as the rare steps are: the timer's state would otherwise add
                // to every idle connection's task.
                Box::pin(crate::in_time(write_timeout, conn.answer(&mut inbox))).await?;
            }
            (broadcast, now) = &mut changed => {
                let Some(now) = now else {
                    return Ok(()); // the pool is gone
                };
                changed.set(next_broadcast(broadcast));
                if now.stopping {
                    return Box::pin(conn.reconnect()).await;
                }
                if now.ticks != conn.ticks {
                    // A frame unfinished at this tick and the last, none completed between.
                    let unfinished = conn.framed.partial_frame_len() > 0;
                    if unfinished && conn.unfinished_at_tick {
                        let why = "a frame unfinished for a job interval";
                        return Err(io::Error::new(io::ErrorKind::TimedOut, why).into());
                    }
                    conn.unfinished_at_tick = unfinished;
                }
                Box::pin(crate::in_time(write_timeout, conn.tick(now))).await?;
            }
        }
        // Everything was written: an idle connection keeps no write buffer (and
        // `read_batch` left no read buffer).
        conn.framed.release_buffers();
    }
}

/// The next change of what the pool broadcasts (`None`: the pool is gone), with the
/// receiver given back. Owning its receiver, the future can outlive one turn of the
/// connection's loop.
async fn next_broadcast(
    mut broadcast: watch::Receiver<Broadcast>,
) -> (watch::Receiver<Broadcast>, Option<Broadcast>) {
    let now = match broadcast.changed().await {
        Ok(()) => Some(broadcast.borrow_and_update().clone()),
        Err(_) => None,
    };
    (broadcast, now)
}

/// What one batch of messages leaves to do.
#[derive(Debug, Default)]
struct Inbox {
    /// Answers to the shares checked as they were handed out, to send in order (one
    /// `SubmitShares.Success` for consecutive accepted shares of a channel).
    acks: Acks<()>,
    /// Every message from the first that is not a share on, owned, in order: for
    /// `on_message`, which may need to send, after the answers.
    queued: Vec<Tailed<Message>>,
}

impl Inbox {
    /// A share (while nothing is queued) is checked and answered here; anything else is
    /// queued.
    fn take(
        &mut self,
        m: &TailedRef<'_, MessageRef<'_>>,
        shared: &Shared,
        (channels, tally): (&mut Channels, &mut Tally),
        worker_tlv: bool,
    ) {
        match ShareFields::of(&m.message) {
            Some(share) if self.queued.is_empty() => {
                let (channel_id, sequence_number) = (share.channel_id, share.sequence_number);
                let tail = worker_tlv.then_some(m.tail);
                match answer_share_with_tail(shared, (channels, tally), share, tail) {
                    Ok(work) => self.acks.accepted((), channel_id, sequence_number, work),
                    Err(code) => self.acks.refused((), channel_id, sequence_number, code),
                }
            }
            _ => self.queued.push(Tailed {
                message: m.message.to_owned_value(),
                tail: TlvTailBuf::copy_from_slice(m.tail.as_bytes()),
            }),
        }
    }
}

/// A share's fields, from either kind of `SubmitShares`.
struct ShareFields<'a> {
    channel_id: u32,
    sequence_number: u32,
    job_id: u32,
    /// Empty for a standard share.
    extranonce: &'a [u8],
    version: u32,
    ntime: u32,
    nonce: u32,
}

impl<'a> ShareFields<'a> {
    /// The share `m` is, if it is one.
    fn of(m: &MessageRef<'a>) -> Option<Self> {
        Some(match m {
            MessageRef::SubmitSharesStandard(s) => ShareFields {
                channel_id: s.channel_id,
                sequence_number: s.sequence_number,
                job_id: s.job_id,
                extranonce: &[],
                version: s.version,
                ntime: s.ntime,
                nonce: s.nonce,
            },
            MessageRef::SubmitSharesExtended(s) => ShareFields {
                channel_id: s.channel_id,
                sequence_number: s.sequence_number,
                job_id: s.job_id,
                extranonce: s.extranonce.as_bytes(),
                version: s.version,
                ntime: s.ntime,
                nonce: s.nonce,
            },
            _ => return None,
        })
    }
}

impl<F: Conn> Connection<F> {
    /// Reads the first batch, which must start with `SetupConnection` (Mining), answers
    /// it, and handles the rest of the batch. `Ok(false)`: the connection is over (closed,
    /// or refused).
    async fn setup(&mut self) -> Result<bool, CodecError> {
        let mut queued = Vec::new();
        let mut first = None;
        let read = read_batch(&mut self.framed, |m| {
            let owned = Tailed {
                message: m.message.to_owned_value(),
                tail: TlvTailBuf::copy_from_slice(m.tail.as_bytes()),
            };
            match first {
                None => first = Some(owned.message),
                Some(_) => queued.push(owned),
            }
        });
        let read = tokio::time::timeout(self.shared.config.setup_timeout, read)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no SetupConnection in time"))?;
        if read?.is_none() {
            return Ok(false);
        }
        self.shared
            .counters
            .frames_received
            .fetch_add(1 + queued.len() as u64, Relaxed);
        let Some(Message::SetupConnection(setup)) = first else {
            return Ok(false);
        };
        match answer_mining_setup(&setup, SUCCESS_FLAGS) {
            Ok(success) => {
                self.framed.feed(success.into()).await?;
                bump(&self.shared.counters.connections);
                for msg in queued {
                    self.on_message(msg).await?;
                }
                SinkExt::<Message>::flush(&mut self.framed).await?;
                self.framed.release_buffers();
                Ok(true)
            }
            Err(refusal) => {
                self.framed.send(refusal.into()).await?;
                Ok(false)
            }
        }
    }

    /// Sends a batch's answers, then handles (and answers) the rest of its messages.
    async fn answer(&mut self, inbox: &mut Inbox) -> Result<(), CodecError> {
        // Taken, not drained: a connection keeps no vector between batches.
        for ((), answer) in core::mem::take(&mut inbox.acks).drain() {
            self.framed.feed(answer.into()).await?;
        }
        for msg in std::mem::take(&mut inbox.queued) {
            Box::pin(self.on_message(msg)).await?;
        }
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    async fn on_message(&mut self, msg: Tailed<Message>) -> Result<(), CodecError> {
        let Tailed { message: msg, tail } = msg;
        match msg {
            Message::RequestExtensions(request) => {
                let answer = negotiate(&request, SUPPORTED_EXTENSIONS, &[]);
                self.worker_tlv = answer.in_use().contains(&WORKER_SPECIFIC_HASHRATE_TRACKING);
                match answer {
                    Negotiated::Success(success) => self.framed.feed(success.into()).await?,
                    Negotiated::Error { error, .. } => self.framed.feed(error.into()).await?,
                }
            }
            Message::OpenStandardMiningChannel(open) => {
                if let Err(code) = self.admit_channel(&open.max_target) {
                    return self.refuse_open(open.request_id, code).await;
                }
                let channel_id = self.shared.next_id.fetch_add(1, Relaxed);
                let prefix = extranonce_prefix(channel_id, EXTRANONCE_PREFIX_LEN + 8);
                let target = harder(&self.shared.config.share_target, &open.max_target);
                let success = OpenStandardMiningChannelSuccess {
                    request_id: open.request_id,
                    channel_id,
                    target,
                    extranonce_prefix: B032::try_from(&prefix[..]).unwrap_or_default(),
                    group_channel_id: self.group_id,
                };
                let user = open.user_identity.as_bytes().to_vec();
                let limits = (target, open.max_target);
                self.open(channel_id, None, prefix, limits, user, success.into())
                    .await?;
            }
            Message::OpenExtendedMiningChannel(open) => {
                let wanted = usize::from(open.min_extranonce_size);
                let size = wanted.max(usize::from(self.shared.config.extranonce_size));
                if size + EXTRANONCE_PREFIX_LEN > 32 {
                    let code = MIN_EXTRANONCE_SIZE_TOO_LARGE;
                    return self.refuse_open(open.request_id, code).await;
                }
                if let Err(code) = self.admit_channel(&open.max_target) {
                    return self.refuse_open(open.request_id, code).await;
                }
                let channel_id = self.shared.next_id.fetch_add(1, Relaxed);
                let prefix = extranonce_prefix(channel_id, EXTRANONCE_PREFIX_LEN);
                let target = harder(&self.shared.config.share_target, &open.max_target);
                let success = OpenExtendedMiningChannelSuccess {
                    request_id: open.request_id,
                    channel_id,
                    target,
                    extranonce_size: size as u16,
                    extranonce_prefix: B032::try_from(&prefix[..]).unwrap_or_default(),
                    group_channel_id: self.group_id,
                };
                let user = open.user_identity.as_bytes().to_vec();
                let limits = (target, open.max_target);
                self.open(channel_id, Some(size), prefix, limits, user, success.into())
                    .await?;
            }
            Message::UpdateChannel(update) => self.update_channel(&update).await?,
            Message::SetupConnection(_) => {
                let e = io::Error::new(io::ErrorKind::InvalidData, "a second SetupConnection");
                return Err(e.into());
            }
            Message::SubmitSharesStandard(_) | Message::SubmitSharesExtended(_) => {
                // A share queued behind another message (see `Inbox`).
                let m = msg.as_ref();
                if let Some(share) = ShareFields::of(&m) {
                    let (channel_id, sequence_number) = (share.channel_id, share.sequence_number);
                    let tail = self.worker_tlv.then(|| tail.as_tail());
                    let channels = (&mut self.channels, &mut self.tally);
                    let mut acks = Acks::new();
                    match answer_share_with_tail(&self.shared, channels, share, tail) {
                        Ok(work) => acks.accepted((), channel_id, sequence_number, work),
                        Err(code) => acks.refused((), channel_id, sequence_number, code),
                    }
                    self.record_workers();
                    for ((), answer) in acks.drain() {
                        self.framed.feed(answer.into()).await?;
                    }
                }
            }
            Message::CloseChannel(close) => {
                let closed = self.channels.remove(&close.channel_id).map_or(0, |_| 1);
                // A long-lived connection (a proxy's) whose channels mostly closed gives
                // back the map's room: allocated as they opened, it would pin pages that
                // malloc_trim cannot give back.
                let (open, room) = (self.channels.len(), self.channels.capacity());
                if room > 64 && open < room / 4 {
                    self.channels.shrink_to(open * 2);
                }
                self.shared
                    .counters
                    .channels_open
                    .fetch_sub(closed, Relaxed);
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether one more channel, whose owner accepts at most `max_target`, may open: the
    /// target is one a share can meet, and both channel budgets have room. `Ok`: a place
    /// in the pool's budget is taken (the channel must be inserted).
    ///
    /// # Errors
    /// The `OpenMiningChannel.Error` code to refuse with.
    fn admit_channel(&mut self, max_target: &U256) -> Result<(), &'static str> {
        if *max_target == ZERO_TARGET {
            return Err(MAX_TARGET_OUT_OF_RANGE);
        }
        let config = &self.shared.config;
        let counters = &self.shared.counters;
        let max = config.max_channels as u64;
        let taken = self.channels.len() < config.max_channels_per_connection
            && counters
                .channels_open
                .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
                .is_ok();
        if !taken {
            bump(&counters.channels_refused);
            return Err(TOO_MANY_CHANNELS);
        }
        Ok(())
    }

    /// Answers a channel request with `OpenMiningChannel.Error`.
    async fn refuse_open(&mut self, request_id: u32, code: &'static str) -> Result<(), CodecError> {
        let refusal = OpenMiningChannelError {
            request_id,
            error_code: Str0255::from_static_str(code).unwrap_or_default(),
        };
        self.framed.feed(refusal.into()).await
    }

    /// `UpdateChannel` (see the [module docs](self) for the answers): the channel's
    /// maximum target is its owner's new one; a target easier than it is lowered to it
    /// and announced with `SetTarget`. The nominal hash rate is not used.
    async fn update_channel(&mut self, update: &UpdateChannel) -> Result<(), CodecError> {
        let refuse = |code: &'static str| UpdateChannelError {
            channel_id: update.channel_id,
            error_code: Str0255::from_static_str(code).unwrap_or_default(),
        };
        let Some(channel) = self.channels.get_mut(&update.channel_id) else {
            return self.framed.feed(refuse(INVALID_CHANNEL_ID).into()).await;
        };
        if update.maximum_target == ZERO_TARGET {
            return self
                .framed
                .feed(refuse(MAX_TARGET_OUT_OF_RANGE).into())
                .await;
        }
        if update.maximum_target == channel.max_target {
            return Ok(()); // a new hash rate only
        }
        channel.max_target = update.maximum_target;
        // Without vardiff the channel's target is the pool's within its maximum, as at
        // the open; with vardiff, the controller's within it, and bounded by it from now.
        let config = &self.shared.config;
        let base = channel
            .vardiff
            .as_ref()
            .map_or(config.share_target, |v| *v.target());
        let target = harder(&base, &update.maximum_target);
        if let Some(vardiff) = config.vardiff {
            let vardiff = VardiffConfig {
                max_target: update.maximum_target,
                ..vardiff
            };
            channel.vardiff = Some(Vardiff::new(vardiff, target, self.shared.now_secs()));
        }
        if target == *channel.inner.target() {
            return Ok(());
        }
        channel.inner.set_target(target);
        let msg = SetTarget {
            channel_id: update.channel_id,
            maximum_target: target,
        };
        self.framed.feed(msg.into()).await
    }

    /// Registers a channel (its target, and the easiest target its owner accepts), whose
    /// place in the pool's budget [`admit_channel`](Self::admit_channel) took, sends
    /// `success` and then a future job and the prev-hash that activates it.
    async fn open(
        &mut self,
        channel_id: u32,
        extranonce_size: Option<usize>,
        extranonce_prefix: Vec<u8>,
        (target, max_target): (U256, U256),
        user_identity: Vec<u8>,
        success: Message,
    ) -> Result<(), CodecError> {
        bump(&self.shared.counters.channels_opened);
        // The channel's jobs are built by `Shared::job` and installed: its own pool outputs
        // (used by `on_new_template`) are never read.
        let output = Vec::new();
        let inner = match extranonce_size {
            None => ServerChannel::standard(
                channel_id,
                extranonce_prefix,
                target,
                VERSION_ROLLING_MASK,
                output,
            ),
            Some(rollable) => ServerChannel::extended(
                channel_id,
                extranonce_prefix,
                rollable,
                target,
                VERSION_ROLLING_MASK,
                output,
            ),
        };
        let vardiff = self.shared.config.vardiff.map(|config| {
            let config = VardiffConfig {
                max_target,
                ..config
            };
            Vardiff::new(config, target, self.shared.now_secs())
        });
        // Inserted before anything is sent, so that the place it took in the pool's budget
        // is given back with the connection's channels however it ends.
        self.channels.insert(
            channel_id,
            Box::new(Channel {
                inner,
                user_identity,
                max_target,
                vardiff,
                unrecorded: 0,
            }),
        );
        self.framed.feed(success).await?;
        let template_id = self.send_job(channel_id, true).await?;
        self.send_prev_hash(channel_id, template_id).await?;
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    /// The pool is shutting down: the miner is told to come back later, to this same
    /// endpoint.
    async fn reconnect(&mut self) -> Result<(), CodecError> {
        let reconnect = Reconnect {
            new_host: Str0255::default(),
            new_port: 0,
        };
        self.framed.send(reconnect.into()).await?;
        bump(&self.shared.counters.reconnects_sent);
        Ok(())
    }

    /// The pool's broadcast changed: on a timer tick vardiff's new targets; on a new
    /// template a new job for every channel, or on a new chain tip future jobs and the
    /// prev-hashes that activate them.
    async fn tick(&mut self, now: Broadcast) -> Result<(), CodecError> {
        let timer = now.ticks != self.ticks;
        self.ticks = now.ticks;
        let (new_work, new_tip) = match (&self.work, &now.work) {
            (_, None) => (false, false),
            (None, Some(_)) => (true, true),
            (Some(old), Some(new)) => (old.generation != new.generation, old.block != new.block),
        };
        if new_work {
            self.work = now.work;
        }
        let ids: Vec<u32> = self.channels.keys().copied().collect();
        let time = self.shared.now_secs();
        for channel_id in ids {
            if timer {
                self.retarget(channel_id, time).await?;
            }
            if new_work {
                let template_id = self.send_job(channel_id, new_tip).await?;
                if new_tip {
                    self.send_prev_hash(channel_id, template_id).await?;
                }
            }
        }
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    /// Vardiff: a new target for the channel if its controller has one due at `now`.
    async fn retarget(&mut self, channel_id: u32, now: u64) -> Result<(), CodecError> {
        let Some(channel) = self.channels.get_mut(&channel_id) else {
            return Ok(());
        };
        let Some(target) = channel.vardiff.as_mut().and_then(|v| v.poll(now)) else {
            return Ok(());
        };
        channel.inner.set_target(target);
        let msg = SetTarget {
            channel_id,
            maximum_target: target,
        };
        self.framed.feed(msg.into()).await
    }

    /// Gives a channel the job of the current work (`future`: for its chain tip, which
    /// [`send_prev_hash`](Self::send_prev_hash) sends next) and queues it; returns its
    /// template id (`None` if there is no job).
    async fn send_job(&mut self, channel_id: u32, future: bool) -> Result<Option<u64>, CodecError> {
        let (Some(channel), Some(work)) = (self.channels.get_mut(&channel_id), &self.work) else {
            return Ok(None);
        };
        let job = match self
            .shared
            .job(work, future, channel.inner.extranonce_len())
        {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!("no job for channel {channel_id}: {e}");
                return Ok(None);
            }
        };
        let template_id = job.template_id;
        let msg: Message = if channel.inner.is_standard() {
            channel.inner.standard_job_message(&job, future).into()
        } else {
            match channel.inner.extended_job_message(&job, future) {
                Ok(m) => m.into(),
                Err(e) => {
                    tracing::warn!("no job for channel {channel_id}: {e}");
                    return Ok(None);
                }
            }
        };
        if future {
            channel.inner.install_future_job(job);
        } else {
            channel.inner.install_active_job(job);
        }
        bump(&self.shared.counters.jobs_sent);
        self.framed.feed(msg).await?;
        Ok(Some(template_id))
    }

    /// Moves a channel to the current work's chain tip, activating the future job of
    /// `template_id` ([`send_job`](Self::send_job)'s; `None`: nothing to activate, the
    /// channel keeps its jobs).
    async fn send_prev_hash(
        &mut self,
        channel_id: u32,
        template_id: Option<u64>,
    ) -> Result<(), CodecError> {
        let (Some(channel), Some(work), Some(template_id)) =
            (self.channels.get_mut(&channel_id), &self.work, template_id)
        else {
            return Ok(());
        };
        let tip = SetNewPrevHashTdp {
            template_id,
            ..work.prev_hash_msg()
        };
        let Some(msg) = channel.inner.on_set_new_prev_hash(&tip) else {
            return Ok(());
        };
        bump(&self.shared.counters.prev_hashes_sent);
        self.framed.feed(msg.into()).await
    }
}

/// Checks a share against its channel ([`ServerChannel::validate_share`]) and returns
/// the channel. `Err` holds the error code to answer with.
fn check<'c>(
    shared: &Shared,
    channels: &'c mut Channels,
    share: &ShareFields<'_>,
) -> Result<&'c mut Channel, &'static str> {
    let channel = channels
        .get_mut(&share.channel_id)
        .ok_or(INVALID_CHANNEL_ID)?;
    let verdict = channel.inner.validate_share(&Share {
        job_id: share.job_id,
        nonce: share.nonce,
        ntime: share.ntime,
        version: share.version,
        extranonce: share.extranonce,
    });
    match verdict {
        Ok(ShareOk::Valid { .. }) => Ok(channel),
        Ok(ShareOk::BlockFound {
            hash,
            template_id,
            header,
            coinbase,
        }) => {
            let found = (&hash, template_id, &header, &coinbase[..]);
            shared.block_found(share.channel_id, found);
            Ok(channel)
        }
        Err(e) => Err(e.code()),
    }
}

/// Checks a share and counts the verdict (an accepted one for `worker`, the share's
/// `user_identity` TLV, or else its channel's identity: in the channel, its id added to
/// `tally`, for [`Connection::record_workers`]); returns the share's work (the difficulty
/// of its channel's target, what its acknowledgement's `new_shares_sum` adds up:
/// [`sv2c_channels::acks`]) or the error code to answer with.
fn answer_share(
    shared: &Shared,
    channels: &mut Channels,
    tally: &mut Tally,
    share: ShareFields<'_>,
    worker: Option<&[u8]>,
) -> Result<f64, &'static str> {
    let channel_id = share.channel_id;
    match check(shared, channels, &share) {
        Ok(channel) => {
            tally.accepted += 1;
            if let Some(vardiff) = &mut channel.vardiff {
                vardiff.on_share();
            }
            if let Some(who) = worker {
                let work = sv2c_channels::pow::expected_hashes(channel.inner.target());
                let now = shared.now_secs();
                let mut ledger = shared.workers.lock().unwrap_or_else(|e| e.into_inner());
                ledger.record(who, 1, work, now);
            } else {
                // Its work is added when it is recorded (the target does not change
                // before that: see `record_workers`).
                if channel.unrecorded == 0 {
                    tally.channels.push(channel_id);
                }
                channel.unrecorded += 1;
            }
            Ok(sv2c_channels::pow::target_to_difficulty(
                channel.inner.target(),
            ))
        }
        Err(code) => Err(refused(shared, code)),
    }
}

/// A share refused with `code`: counted by reason, never logged (a miner below target
/// would flood the log).
fn refused(shared: &Shared, code: &'static str) -> &'static str {
    shared.counters.shares_rejected.count(code.as_bytes());
    code
}

/// Checks a share's `user_identity` TLV, if the connection negotiated 0x0002 (`Ok(None)`
/// otherwise, or without one), and answers the share.
fn answer_share_with_tail(
    shared: &Shared,
    (channels, tally): (&mut Channels, &mut Tally),
    share: ShareFields<'_>,
    tail: Option<TlvTail<'_>>,
) -> Result<f64, &'static str> {
    match tail.map(|t| t.user_identity()).transpose() {
        Ok(worker) => {
            let worker = worker.flatten();
            let worker = worker.as_ref().map(UserIdentity::as_bytes);
            answer_share(shared, channels, tally, share, worker)
        }
        Err(_) => Err(refused(shared, INVALID_USER_IDENTITY)),
    }
}

/// A channel's extranonce prefix: its id, zero-padded to `len` bytes.
fn extranonce_prefix(channel_id: u32, len: usize) -> Vec<u8> {
    let mut prefix = vec![0u8; len];
    prefix[..4].copy_from_slice(&channel_id.to_be_bytes());
    prefix
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// What an idle Noise connection's task holds is mostly this future: the rare steps
    /// (handshake, setup, jobs, non-share messages) are boxed while they run, and nothing
    /// is kept twice (unboxed, it is over 5 KiB); a regression shows here first.
    #[tokio::test]
    async fn an_idle_connection_task_stays_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let config = PoolConfig {
            noise: Some(
                crate::identity::noise_server_identity(Duration::from_secs(60))
                    .unwrap()
                    .1,
            ),
            ..PoolConfig::default()
        };
        let shared = Arc::new(Shared::new(config, None));
        let task = serve(tcp, shared);
        let size = std::mem::size_of_val(&task);
        println!("the connection future is {size} bytes");
        assert!(size <= 1200, "the connection future is {size} bytes");
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use sv2c_binary::MessageSet;
    use sv2c_binary::messages::{SubmitSharesStandard, encode_frame, frame_parts};

    /// Once a batch is answered, the connection keeps none of its vectors: a miner
    /// between its shares holds what an idle one does (and its channel's state).
    #[tokio::test]
    async fn an_answered_batch_leaves_no_vector_behind() {
        let (ours, mut theirs) = tokio::io::duplex(4096);
        let shared = Arc::new(Shared::new(PoolConfig::default(), None));
        let (mut conn, _broadcast) =
            Connection::new(Framed::new(ours, Sv2Codec::for_set()), shared);
        let share = Message::from(SubmitSharesStandard {
            channel_id: 7, // not open: answered with an error
            ..SubmitSharesStandard::default()
        });
        let frame = encode_frame(&share).unwrap();
        let (extension, msg_type, payload) = frame_parts(&frame).unwrap();
        let m = Tailed::<Message>::decode_message_ref(extension, msg_type, payload).unwrap();
        let mut inbox = Inbox::default();
        let shared = conn.shared.clone();
        inbox.take(&m, &shared, (&mut conn.channels, &mut conn.tally), false);
        inbox.take(&m, &shared, (&mut conn.channels, &mut conn.tally), false);
        assert!(!inbox.acks.is_empty());
        // As an accepted share of a channel leaves it for `record_workers`.
        conn.tally.channels.push(7);
        conn.record_workers();
        conn.answer(&mut inbox).await.unwrap();
        assert!(inbox.acks.is_empty());
        assert_eq!(conn.tally.channels.capacity(), 0);
        // Both answers reached the miner.
        let refusal = encode_frame(&Message::from(sv2c_binary::messages::SubmitSharesError {
            channel_id: 7,
            sequence_number: 0,
            error_code: Str0255::from_static_str("invalid-channel-id").unwrap(),
        }))
        .unwrap();
        let mut sent = vec![0u8; 2 * refusal.len()];
        tokio::io::AsyncReadExt::read_exact(&mut theirs, &mut sent)
            .await
            .unwrap();
        assert_eq!(sent, [&refusal[..], &refusal[..]].concat());
    }
}
