//! A Stratum V2 mining proxy built on `Framed` and [`FrameCodec`].
//!
//! ```text
//!  miners                          proxy                                   pool
//!  ──────                          ─────                                   ────
//!  SetupConnection ───────────▶ answered by the proxy      (its own SetupConnection upstream, once)
//!  OpenStandardMiningChannel ─▶ decoded, new request id ─▶ OpenStandardMiningChannel
//!                                                        ◀─ ….Success (upstream channel id U)
//!  ◀── ….Success (channel D)  ◀─ route U ↔ (miner, D)
//!  SubmitSharesStandard(D) ───▶ frame: id D → U, no decode ─▶ SubmitSharesStandard(U)
//!  ◀── NewMiningJob, SetNewPrevHash, SetTarget, SubmitShares.Success/Error (D)
//!                              ◀─ frame: id U → D, no decode ◀─ … (U)
//! ```
//!
//! * **One upstream connection** for every miner, set up once ([`Proxy::start`]).
//! * **Control messages are decoded** (owned): `SetupConnection` is answered by the proxy
//!   (Mining protocol, version 2, with the flags the pool answered the proxy's own
//!   `SetupConnection`; miners that need work selection, or version rolling when the pool
//!   requires a fixed version, are refused); `OpenStandardMiningChannel` /
//!   `OpenExtendedMiningChannel` get an upstream request id and are forwarded; their
//!   answers are mapped back (see [`routing`]).
//! * **Extensions**: right after its own `SetupConnection`, the proxy asks the pool for
//!   [`ProxyConfig::upstream_extensions`] (`RequestExtensions`, extension 0x0001) and
//!   keeps what the pool grants. A miner's `RequestExtensions` is answered by the proxy
//!   ([`sv2c_channels::extensions::negotiate`]): it can have Worker-Specific Hashrate
//!   Tracking (0x0002) only if the pool granted it, and nothing else. The `user_identity`
//!   TLV rides on `SubmitSharesExtended` frames, which are forwarded byte for byte.
//! * **Everything on a channel is forwarded undecoded**: shares, jobs, prev-hashes,
//!   targets, share results, messages of extensions the proxy does not know. The proxy
//!   reads the channel id from the first 4 payload bytes, rewrites it and forwards the
//!   frame without decoding it (SV2-WIRE §2.2): towards the pool straight from the
//!   miner's read buffer into one block of frames per read, which the upstream writer
//!   encrypts as one batch; towards a miner as a [`Frame`] ([`Frame::set_channel_id`]).
//!   Non-channel frames of unknown extensions are dropped (§2.4).
//! * **One [`BufferPool`]** serves every connection's [`FrameCodec`]; its statistics are
//!   in [`Proxy::pool_stats`].
//! * **Bad peers are cut off, nobody else notices**: garbage, a frame above
//!   [`ProxyConfig::max_downstream_payload`], a first message that is not
//!   `SetupConnection` (or none within [`ProxyConfig::setup_timeout`]), a stream that
//!   ends inside a frame: one log line, the connection and its channels are closed, the
//!   other miners carry on.
//! * **A pool's `Reconnect` is followed**: the proxy tells its miners to reconnect (to
//!   the proxy) and [`supervise`] dials the endpoint the pool named ([`Proxy::redirect`]).
//! * **A pool that stops reading is given up**: a write to it that does not finish within
//!   [`ProxyConfig::write_timeout`] ends the pool connection as its closing would (every
//!   miner is told to reconnect; [`supervise`] redials, and also watches the connection
//!   it dials for a pool that vanished without closing).
//! * **Ordered upstreams** ([`supervise_upstreams`], `mining_proxy --upstream A
//!   --upstream B`): pools in order of preference, each [`Upstream`] with its own
//!   authority key. A dial or setup that fails, a lost connection, or a pool that owes
//!   answers and says nothing for [`Failover::silence`] sends the proxy to the next
//!   one at once; while on a later one it probes the earlier ones and returns to one
//!   that has answered every probe for [`Failover::hold`]. In this (forwarding) mode,
//!   miners are told to `Reconnect` to this proxy on every switch and start over on the
//!   new pool (their connections to the old pool's proxy are closed; nothing of theirs
//!   stays on it); in the aggregating mode they stay connected ([Miners across a
//!   switch](#miners-across-a-switch)). The pool in use is in the metrics
//!   (`sv2c_proxy_upstream_active{upstream}`, `sv2c_proxy_upstream_switches_total`) and
//!   in `/ready` (see the program).
//!
//! * **Noise, per hop**: with [`ProxyConfig::upstream_noise`] the proxy opens the pool
//!   connection with the Noise NX handshake and checks the pool's certificate against
//!   the pool's authority key; with [`ProxyConfig::downstream_noise`] miners must connect
//!   with Noise and are shown the proxy's own certificate. Either hop can stay plain TCP.
//!
//! How bytes become frames is decided in one pair of functions per side,
//! [`upstream_transport`] / [`upstream_noise_transport`] and [`downstream_transport`] /
//! [`downstream_noise_transport`]; the rest of the proxy works on either, plain or
//! encrypted alike.
//!
//! Two modes: by default each miner channel has its own upstream channel, as above;
//! with [`ProxyConfig::aggregate`] every miner channel is served from one upstream
//! channel (below). Not a production proxy: in the default mode it does no share
//! validation and no job translation between channel types.
//!
//! # Aggregating mode
//!
//! With [`ProxyConfig::aggregate`] (`mining_proxy --aggregate`) the proxy is a channel
//! client upstream and a channel server downstream ([`aggregate`]):
//!
//! ```text
//!  miners                             proxy                                    pool
//!  OpenStandard/ExtendedMining… ─▶ answered by the proxy    (at start: OpenExtendedMiningChannel,
//!                                  (sub-prefix S)            min_extranonce_size 12 ─▶ channel U,
//!                                                            prefix P, size n)
//!  ◀─ NewMiningJob (own root) /   ◀─ ClientChannel ◀──────── NewExtendedMiningJob,
//!     NewExtendedMiningJob, SetNewPrevHash, SetTarget         SetNewPrevHash, SetTarget (U)
//!  SubmitShares… ───────────────▶ checked, answered ───────▶ SubmitSharesExtended (U),
//!  ◀─ SubmitShares.Success/Error   locally                   extranonce S ‖ miner's bytes
//! ```
//!
//! * **Upstream**: after `SetupConnection` (and `RequestExtensions`) each proxy (each
//!   [`supervise`] worker) opens one extended channel, `user_identity`
//!   [`ProxyConfig::aggregate_user`], `nominal_hash_rate`
//!   [`ProxyConfig::aggregate_hashrate`], `min_extranonce_size` =
//!   [`SUB_PREFIX_LEN`](aggregate::SUB_PREFIX_LEN) +
//!   [`MINER_EXTRANONCE_LEN`](aggregate::MINER_EXTRANONCE_LEN) (4 + 8), and tracks it
//!   with [`sv2c_channels::client::ClientChannel`]: jobs, chain tip and target.
//! * **Miner channels** are answered by the proxy; each gets the next 4-byte sub-prefix
//!   `S` (a counter) inside the pool's `n` extranonce bytes, and as its target the
//!   upstream channel's or the miner's `max_target` if that is harder (likewise for every
//!   `SetTarget`). A standard channel gets `extranonce_prefix = P ‖ S ‖ zeros` (all `n`
//!   bytes) and `NewMiningJob`s whose merkle root the proxy computes for that
//!   extranonce; an extended channel gets `P ‖ S` and `extranonce_size = n − 4` (a
//!   request for more is refused, `min-extranonce-size-too-large`) and the pool's
//!   `NewExtendedMiningJob`s as they are. `SetNewPrevHash` and `SetTarget` go to every
//!   channel; a channel opened later first gets the jobs and tip the proxy kept. A
//!   sub-prefix is not reused after its channel closes, so no two miners of one
//!   upstream connection ever share one; after 256⁴ channels new ones are refused
//!   (`too-many-channels`).
//! * **Shares are decoded and checked as the pool checks them**, with
//!   [`ClientChannel::check`](sv2c_channels::client::ClientChannel::check), the same
//!   `sv2c-channels` rules a pool built on [`ServerChannel`](sv2c_channels::server::ServerChannel)
//!   applies: the job (unknown: `invalid-job-id`; of an earlier chain tip: `stale-share`),
//!   the extranonce size (full extranonce `S ‖ miner's bytes`), `ntime` within
//!   `min_ntime ..= min_ntime + 2 h` (`invalid-share`), version bits outside the rolling
//!   mask (`invalid-non-rollable-version-bit`), the miner channel's own target (the
//!   harder of the upstream target and its `max_target`: `difficulty-too-low`), and a
//!   share accepted already on the current chain tip (`duplicate-share`: the worker's
//!   Sv2 miners' last 8192 at least, and each SV1 miner's own last 1,024 at least, which
//!   its connection remembers); with 0x0002 granted by the pool, a `user_identity`
//!   TLV longer than 32 bytes or a malformed tail (`invalid-user-identity`, as the pool
//!   refuses it). A refused share goes no further. An accepted share
//!   is sent to the pool as `SubmitSharesExtended` on the proxy's channel with the
//!   proxy's own sequence numbers and extranonce `S ‖ miner's bytes` (a standard
//!   miner's: `S ‖ zeros`); its `user_identity` TLV (extension 0x0002) is forwarded
//!   intact when the pool granted 0x0002.
//! * **Every share gets exactly one answer, in order**: a miner's channel frames of one
//!   read (shares, `CloseChannel`, `UpdateChannel`, known channel or not) reach the
//!   router in one message, in the order sent, so a `CloseChannel` after a share is
//!   handled after that share's answer; a share on a channel the connection does not
//!   own gets `invalid-channel-id`; a frame that does not decode is dropped (as the pool
//!   drops it, and the connection carries on). A channel's consecutive accepted shares get one
//!   `SubmitShares.Success` whose `last_sequence_number` is the last of them and whose
//!   `new_submits_accepted_count` says how many and `new_shares_sum` the sum of their
//!   difficulties (as the pool counts them: `sv2c_channels::acks`), sent before the next answer to that miner and after the run's last share.
//! * **`UpdateChannel`**: an unknown channel (or another miner's) is answered
//!   `UpdateChannel.Error` `invalid-channel-id`, an all-zero `maximum_target`
//!   `max-target-out-of-range`; a lower `maximum_target` makes the channel target
//!   harder when it is below the upstream target, and the miner gets `SetTarget`;
//!   nothing else is answered (`nominal_hash_rate` is not used: the upstream channel has
//!   the proxy's own).
//! * **Acknowledgement policy**: the miner's `Success` means "valid for the work the
//!   proxy last saw, by the pool's own rules". What the proxy cannot know (a new tip
//!   still on its way, a pool restart, a third-party pool's own rules) is bounded: at most
//!   [`ProxyConfig::max_unconfirmed_shares`] (default 1,024) shares are acknowledged to
//!   miners and not yet answered by the pool. Past that, a checked share is still sent
//!   to the pool, but its miner's answer waits for the pool's and is the pool's (success
//!   or its error code), in order behind it; once such an answer has waited
//!   [`ProxyConfig::pool_answer_timeout`] (default 30 s), or
//!   [`MAX_HELD_SHARES`](aggregate::MAX_HELD_SHARES) answers wait for it, the pool is
//!   taken as gone, as a lost connection is (every miner is told to reconnect, or with
//!   several upstreams moved to the next pool: [below](#miners-across-a-switch); the
//!   answers still owed are then `stale-share`). So while the pool is frozen,
//!   miners hear `Success` for at most the bound's worth of shares, then no answer until
//!   the pool answers (each then gets the pool's verdict) or the proxy gives it up. The counts are in [`ProxyStats`] and
//!   the metrics (`sv2c_proxy_shares{state="acknowledged"|"confirmed"|"refused_after_ack"|"left_unconfirmed"}`,
//!   `sv2c_proxy_shares_unconfirmed`).
//! * Shares wait for their check in a queue of [`ProxyConfig::upstream_queue`] reads
//!   (the pool's answers, jobs and the check itself run on one task, the router); a full
//!   queue slows the miners down, as in the default mode. The pool closing the proxy's
//!   channel ends the pool connection as its loss does ([`supervise`] then redials, or
//!   with several upstreams moves the miners to the next pool).
//! * **Stratum V1 miners** ([`sv1`], [`Proxy::start_with_sv1`], [`Sv1Config`]): each SV1
//!   connection is an extended miner channel of this upstream channel, its task talking
//!   to the router as an Sv2 miner's does; with SV1 served, the plain Sv2 listener takes
//!   SV1 miners too (the first bytes decide).
//!
//! # Miners across a switch
//!
//! With several upstreams ([`supervise_upstreams`]) an aggregating proxy keeps its
//! listener, its miners' connections and their channels from one pool connection to the
//! next: they are the proxy's, not the pool's. What lives and dies with a pool
//! connection is the router's *attachment*: the connection's reads, its writer task,
//! and the proxy's extended channel on it (`Aggregate`'s upstream channel id, its
//! [`ClientChannel`](sv2c_channels::client::ClientChannel): prefix `P`, size `n`, target,
//! jobs, and the ledger of shares that pool owes answers for).
//!
//! ```text
//!  supervise_upstreams           router (one task, the whole life of the proxy)      miners
//!  pool A lost ─────────────────▶ detach: A's reads dropped, A's ledger settled ───▶ stale-share
//!  (or: pool A preferred over,   (acknowledged shares stay acknowledged; held          for shares
//!   silent: A still attached)     answers: stale-share); every share now stale-share  until then
//!  dial B, SetupConnection,
//!  RequestExtensions, open the
//!  extended channel (P', n') ───▶ Attach: B's reads, a writer task for B;
//!                                  per miner channel, same id and sub-prefix S:
//!                                  SetExtranoncePrefix P' ‖ S ‖ zeros ──────────────▶ (Sv2, or SV1
//!                                  SetTarget (B's target, or max_target if harder) ──▶ set_extranonce)
//!                                  B's jobs and tip as they come, ids + job_base ────▶
//! ```
//!
//! * **The prefix**: a standard channel's `extranonce_prefix` is the whole extranonce,
//!   `P' ‖ S ‖ zeros` (`|P'| + n'` bytes); an extended channel keeps the
//!   `extranonce_size` it was granted and gets `P' ‖ S ‖ zeros` up to where its own
//!   bytes start. A new pool that leaves an extended channel fewer bytes than it was
//!   granted (`n' − 4` below its `extranonce_size`) cannot take it: that miner is sent
//!   `Reconnect` and disconnected, and opens a new channel on reconnecting.
//! * **Jobs and stale shares**: miners are sent each pool's job ids plus a shift that
//!   changes with every pool connection, so a job of the new pool never has the id of
//!   one of the old pool's, even when both pools number their jobs alike. A share on one
//!   of the old pool's jobs (remembered up to 4,096) is answered `stale-share` and goes
//!   nowhere; between the loss of a pool and the next connection, every share is.
//! * **Extensions**: those of the new pool. A miner's `RequestExtensions` is answered
//!   with what the current pool granted; a `user_identity` TLV (0x0002) rides on a
//!   share only to a pool that granted 0x0002, and is dropped otherwise.
//! * **The old connection**: its reads are dropped at once; its writer writes what was
//!   queued for it (bounded by [`ProxyConfig::write_timeout`]) and closes it. Nothing of a
//!   miner's is left on it. [`ProxyStats::shares_left_unconfirmed`] counts the
//!   acknowledged shares it never answered, so that `shares_acknowledged` =
//!   `shares_confirmed` + `shares_refused_after_ack` + `shares_left_unconfirmed` + the
//!   acknowledged part of `shares_unconfirmed`; [`ProxyStats::upstream_switches_kept`]
//!   counts the moves.
//! * **No pool at all**: once a whole round of upstreams has failed, miners are told to
//!   `Reconnect` and the proxy is shut down, as in the forwarding mode; a new proxy
//!   starts with the next pool that answers.
//!
//! In the forwarding mode a miner channel is the pool's own channel (its id, prefix and
//! jobs): it cannot outlive the pool connection, and miners get `Reconnect` on every
//! switch. A single upstream ([`supervise`]) is redialled with miners told to reconnect,
//! in either mode.
//!
//! [`FrameCodec`]: sv2c_codec::FrameCodec

mod accept;
pub mod aggregate;
mod board;
mod downstream;
mod mailbox;
mod messages;
mod router;
pub mod routing;
mod shared;
pub mod sv1;
mod upstream;
mod writer;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use sv2c_buffer_pool::{BufferPool, PoolStats};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::metrics::{self, Sample};

pub use downstream::{downstream_noise_transport, downstream_transport};
pub(crate) use shared::{Counters, Shared};
pub use shared::{
    DEFAULT_UPSTREAM_EXTENSIONS, MAX_SV1_WORKERS, ProxyConfig, ProxyError, ProxyStats,
    REQUIRES_FIXED_VERSION, REQUIRES_STANDARD_JOBS, REQUIRES_VERSION_ROLLING,
    REQUIRES_WORK_SELECTION, Sv1Config, Sv1WorkerStats,
};
use upstream::endpoint;
pub use upstream::{
    Upstream, request_upstream_extensions, setup_upstream, upstream_noise_transport,
    upstream_transport,
};

/// A running proxy: one upstream connection, a listener for miners.
///
/// ```no_run
/// use sv2c_roles::proxy::{Proxy, ProxyConfig};
/// use tokio::net::{TcpListener, TcpStream};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let upstream = TcpStream::connect("pool.example:3333").await?;
/// let listener = TcpListener::bind("0.0.0.0:34255").await?;
/// let config = ProxyConfig {
///     upstream_host: "pool.example".into(),
///     upstream_port: 3333,
///     // The pool's published authority key: the connection uses Noise and the pool's
///     // certificate must be signed by this key (`None`: plain TCP).
///     upstream_noise: Some("9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh".parse()?),
///     ..Default::default()
/// };
/// let proxy = Proxy::start(upstream, listener, config).await?;
/// proxy.upstream_closed().await; // runs until the pool goes away
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Proxy {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    upstream_done: watch::Receiver<bool>,
    accept_task: JoinHandle<()>,
    /// Where [`switch_to`](Self::switch_to) hands the router a new pool connection.
    attach: mpsc::UnboundedSender<Box<router::Attachment>>,
    router_task: JoinHandle<()>,
    writer_task: router::WriterSlot,
}

impl Proxy {
    /// Sets up the upstream connection on `upstream` (transport, with the Noise handshake
    /// if [`ProxyConfig::upstream_noise`] is set, then `SetupConnection`) and starts
    /// serving miners that connect to `listener`.
    ///
    /// # Errors
    /// The Noise handshake fails ([`ProxyError::Handshake`], e.g. the pool's certificate
    /// is not from the configured authority), the pool refuses or does not answer the
    /// proxy's `SetupConnection`, the connection fails, or the buffer pool cannot be
    /// created.
    pub async fn start<S>(
        upstream: S,
        listener: TcpListener,
        config: ProxyConfig,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with_sv1(upstream, listener, None, config).await
    }

    /// [`start`](Self::start), also serving Stratum V1 miners that connect to `sv1` (see
    /// [`sv1`]); they need the aggregating mode ([`ProxyConfig::aggregate`]).
    ///
    /// # Errors
    /// As [`start`](Self::start); [`ProxyError::Config`] for an SV1 listener without the
    /// aggregating mode.
    pub async fn start_with_sv1<S>(
        upstream: S,
        listener: TcpListener,
        sv1: Option<TcpListener>,
        config: ProxyConfig,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_keeping(upstream, (listener, sv1), config, false).await
    }

    /// [`start_with_sv1`](Self::start_with_sv1); with `keep` (aggregating mode), a lost
    /// pool connection leaves the miners connected until the next one
    /// ([`switch_to`](Self::switch_to)) or the shutdown.
    async fn start_keeping<S>(
        upstream: S,
        listeners: (TcpListener, Option<TcpListener>),
        config: ProxyConfig,
        keep: bool,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        if listeners.1.is_some() && !config.aggregate {
            return Err(ProxyError::Config(
                "SV1 miners are served in the aggregating mode only".into(),
            ));
        }
        let pool = BufferPool::new(config.pool_slots, config.slot_size)?;
        let mut up = upstream::transport(upstream, &pool, &config).await?;
        let local_addr = listeners.0.local_addr()?;
        let success = setup_upstream(&mut up, &pool, &config).await?;
        let (upstream_extensions, early) =
            upstream::request_extensions(&mut up, &pool, &config).await?;
        let mut up = upstream::Replay::new(up, early);
        let aggregate = if config.aggregate {
            Some(aggregate::open_upstream(&mut up, &pool, &config, &upstream_extensions).await?)
        } else {
            None
        };

        let shared = Arc::new(Shared {
            upstream_success_flags: success.flags.into(),
            upstream_extensions: upstream_extensions.into(),
            upstream_name: upstream_name(&config).into(),
            config,
            pool,
            counters: Counters::default(),
            redirect: Default::default(),
            sv1_workers: Default::default(),
            sv1_jobs: Default::default(),
        });
        let (upstream_done_tx, upstream_done) = watch::channel(false);
        let links = router::spawn(up, shared.clone(), upstream_done_tx, aggregate, keep);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let accept_task = tokio::spawn(accept::accept_loop(
            listeners,
            shared.clone(),
            links.router,
            links.to_upstream,
            shutdown_rx,
        ));
        Ok(Proxy {
            local_addr,
            shared,
            shutdown,
            upstream_done,
            accept_task,
            attach: links.attach,
            router_task: links.router_task,
            writer_task: links.writer_task,
        })
    }

    /// Aggregating mode, a proxy started with miners kept: moves its miners to a new
    /// connection to the pool `config` names (`upstream_host`, `upstream_port`, the key
    /// `upstream_noise`), set up here as at the start (transport, `SetupConnection`,
    /// extensions, the proxy's extended channel); the router then re-points every miner
    /// channel to it (see the [module docs](self#miners-across-a-switch)) and leaves the
    /// current connection, if any.
    ///
    /// # Errors
    /// As [`start`](Self::start) for the new connection; the current one (if any) is
    /// kept then. [`ProxyError::Config`] if the proxy is shutting down.
    async fn switch_to<S>(&self, upstream: S, config: &ProxyConfig) -> Result<(), ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        use futures::StreamExt;
        let pool = &self.shared.pool;
        let mut up = upstream::transport(upstream, pool, config).await?;
        let success = setup_upstream(&mut up, pool, config).await?;
        let (extensions, early) = upstream::request_extensions(&mut up, pool, config).await?;
        let mut up = upstream::Replay::new(up, early);
        let aggregate = aggregate::open_upstream(&mut up, pool, config, &extensions).await?;
        let (writer, reader) = up.split::<messages::Upward>();
        let (attached, done) = oneshot::channel();
        let attachment = router::Attachment {
            reader: Box::pin(reader),
            writer: Box::pin(writer),
            aggregate,
            upstream: upstream_name(config),
            success_flags: success.flags,
            extensions,
            attached,
        };
        let shutting_down = || ProxyError::Config("the proxy is shutting down".into());
        self.attach
            .send(Box::new(attachment))
            .map_err(|_| shutting_down())?;
        done.await.map_err(|_| shutting_down())
    }

    /// The address miners connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The proxy's counters now.
    pub fn stats(&self) -> ProxyStats {
        self.shared.counters.snapshot()
    }

    /// A probe that reads this proxy's counters and pool statistics from anywhere, for
    /// as long as it lives (e.g. in a progress printer while [`supervise`] runs).
    pub fn probe(&self) -> impl Fn() -> (ProxyStats, PoolStats) + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || (shared.counters.snapshot(), shared.pool.stats())
    }

    /// A probe that reads this proxy's counters for the [`metrics`]
    /// endpoint, for as long as it lives.
    pub fn metrics_probe(&self) -> impl Fn() -> Sample + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || {
            let c = &shared.counters;
            let b = shared.pool.stats();
            Sample {
                connections_open: c.connections_open.load(Relaxed),
                connections_total: c.connections_accepted.load(Relaxed),
                channels_open: c.channels_open.load(Relaxed),
                shares_accepted: c.shares_accepted.load(Relaxed),
                shares_rejected: c.shares_rejected.counts(),
                frames: vec![
                    ("to_upstream", c.frames_to_upstream.load(Relaxed)),
                    ("to_downstream", c.frames_to_downstream.load(Relaxed)),
                ],
                buffer_pool: Some((b.in_use as u64, b.capacity as u64, b.fallbacks())),
                downstream_handshake_failures: c.handshake_failures.load(Relaxed),
                blocks: None,
                share_acks: shared.config.aggregate.then(|| {
                    [
                        c.shares_acknowledged.load(Relaxed),
                        c.shares_confirmed.load(Relaxed),
                        c.shares_refused_after_ack.load(Relaxed),
                        c.shares_unconfirmed.load(Relaxed),
                        c.shares_left_unconfirmed.load(Relaxed),
                    ]
                }),
                sv1_workers: match shared.sv1_workers.lock() {
                    Ok(w) => w
                        .snapshot()
                        .into_iter()
                        .map(|(name, w)| (name, [w.forwarded, w.local, w.refused]))
                        .collect(),
                    Err(_) => Vec::new(),
                },
            }
        }
    }

    /// A probe that reads this proxy's SV1 shares per worker name (fitted to 32 bytes,
    /// `proxy::sv1`), sorted by name, for as long as it lives.
    pub fn sv1_workers(
        &self,
    ) -> impl Fn() -> Vec<(String, Sv1WorkerStats)> + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || {
            let workers = shared.sv1_workers.lock();
            workers.map(|w| w.snapshot()).unwrap_or_default()
        }
    }

    /// The shared buffer pool's statistics now.
    pub fn pool_stats(&self) -> PoolStats {
        self.shared.pool.stats()
    }

    /// A handle on the shared buffer pool (it stays usable after the proxy shuts down).
    pub fn buffer_pool(&self) -> BufferPool {
        self.shared.pool.clone()
    }

    /// Where the pool asked the proxy to go with `Reconnect` (its `new_host`, empty for
    /// the same host, and `new_port`, 0 for the same port), if it did: the proxy then
    /// ended the pool connection as if it had closed. [`supervise`] dials it next.
    pub fn redirect(&self) -> Option<(String, u16)> {
        self.shared.redirect()
    }

    /// The pool this proxy's connection is to (or was to last), `HOST:PORT` as its
    /// `SetupConnection` names it ([`ProxyConfig::upstream_host`],
    /// [`ProxyConfig::upstream_port`] of the connection's configuration; an IPv6 host in
    /// brackets). An aggregating proxy that [`supervise_upstreams`] moves from pool to
    /// pool names the current one.
    pub fn upstream(&self) -> String {
        self.shared.upstream_name()
    }

    /// Resolves when the upstream connection is gone.
    pub async fn upstream_closed(&self) {
        let mut rx = self.upstream_done.clone();
        loop {
            let done = *rx.borrow_and_update();
            if done || rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Shuts down gracefully and waits until every task is gone (so every frame has been
    /// dropped and its slot returned to the pool): stops accepting, sends every miner
    /// `Reconnect` (empty host, port 0: this same endpoint, spec §3.1) behind what is
    /// queued for it and closes its connection once written, then writes what is queued
    /// for the pool. Miners and the pool get [`ProxyConfig::write_timeout`] each; what is
    /// not written by then is dropped.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.accept_task.await;
        let grace = self.shared.config.write_timeout;
        let writer_task = match self.writer_task.lock() {
            Ok(mut w) => w.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(mut writer_task) = writer_task
            && tokio::time::timeout(grace, &mut writer_task).await.is_err()
        {
            writer_task.abort();
            let _ = writer_task.await;
        }
        self.router_task.abort();
        let _ = self.router_task.await;
    }
}

/// How [`supervise`] redials a pool that went away.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first wait after a failed or lost connection.
    pub initial: Duration,
    /// The wait doubles after each failure up to this.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
        }
    }
}

/// When [`supervise_upstreams`] leaves a pool for the next one, and when it comes back
/// to a more preferred one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failover {
    /// With more than one upstream: a pool that owes the proxy answers (shares sent to it
    /// and not answered) and sends nothing for this long is left as a lost one is.
    pub silence: Duration,
    /// A more preferred pool is returned to once probes of it (a dial, the Noise
    /// handshake if it has a key, and `SetupConnection`, every quarter of this, from 100
    /// ms to 5 s apart) have succeeded for this long with none failing in between.
    pub hold: Duration,
}

impl Default for Failover {
    fn default() -> Self {
        Failover {
            silence: Duration::from_secs(5),
            hold: Duration::from_secs(30),
        }
    }
}

/// Runs a proxy that outlives its pool: connects to `upstream` and serves miners on
/// `listen`; [`supervise_upstreams`] with that one upstream (its authority key
/// [`ProxyConfig::upstream_noise`]).
pub async fn supervise(
    upstream: &str,
    listen: SocketAddr,
    config: ProxyConfig,
    backoff: Backoff,
    on_start: impl FnMut(&Proxy),
    stop: impl std::future::Future<Output = ()>,
) {
    let upstreams = [Upstream {
        address: upstream.to_owned(),
        authority: config.upstream_noise,
    }];
    supervise_upstreams(
        &upstreams,
        listen,
        config,
        backoff,
        Failover::default(),
        on_start,
        stop,
    )
    .await;
}

/// Why [`supervise_upstreams`] ended a pool connection.
enum Ended {
    /// The pool closed it, failed, stopped reading, or sent `Reconnect`.
    Lost,
    /// The pool owed an answer past [`Failover::silence`].
    Silent,
    /// The more preferred upstream of this index answered for [`Failover::hold`].
    Return(usize),
}

/// Runs a proxy that outlives its pools: connects to the first of `upstreams` (in order
/// of preference) that answers and serves miners on `listen`. When that pool goes away,
/// the proxy dials the next upstream at once (after the last, the first); once a whole
/// round has failed it waits with exponential [`Backoff`] and starts again from the
/// first. `on_start` sees the proxy each time it is set up on a pool; its
/// [`Proxy::upstream`] names the pool. Returns when `stop` completes (after shutting the
/// current proxy down). With no upstream it returns at once.
///
/// What miners see on a switch depends on the mode (the [module
/// docs](self#miners-across-a-switch) have the messages):
///
/// * **Aggregating mode ([`ProxyConfig::aggregate`]) with several upstreams**: one
///   [`Proxy`] serves for as long as some pool answers. Its listener, miner connections
///   and channels stay; the new pool connection is set up beside them (transport,
///   `SetupConnection`, extensions, the proxy's extended channel) and handed to the
///   router, which moves every miner channel to it (`SetExtranoncePrefix`, `SetTarget`,
///   then the new pool's jobs) and leaves the old connection. Between the loss of a pool
///   and the next connection, miners stay connected and their shares are answered
///   `stale-share`. Only when a whole round of upstreams has failed are the miners told
///   to `Reconnect` and the proxy shut down (a new one starts with the next pool that
///   answers). Miners do not start over because the proxy serves their channels itself:
///   their channel ids and sub-prefixes are the proxy's, not the pool's, so only the
///   pool's prefix, target and jobs change, and those are what the router sends them.
/// * **Otherwise** (forwarding mode, or a single upstream): every miner is told to
///   `Reconnect` (to the proxy, same address) and disconnected, the proxy stops
///   listening, and it listens again once the next pool answers; the miners,
///   reconnecting, get fresh channels and work. In forwarding mode a miner's channel is
///   the pool's own, with the pool's channel id, prefix and jobs: it cannot outlive the
///   pool connection.
///
/// A pool's `Reconnect` ([`Proxy::redirect`]) is followed: the proxy dials the endpoint it
/// names after [`Backoff::initial`] (an empty host or a port of 0 keeping the current
/// one; the pool's authority key is kept), and from then on redials that one, until a
/// dial there fails: then it is back to the configured upstream it came from.
///
/// The pool is gone when it closes the connection, when a write to it does not finish
/// within [`ProxyConfig::write_timeout`] (it stopped reading), or when the connection
/// goes silent: keep-alive probes after 10 s without traffic, and on Linux at most 30 s
/// of data the pool has not acknowledged (`TCP_USER_TIMEOUT`), so that a pool that
/// vanished without closing is noticed in well under a minute. With more than one
/// upstream, a pool that owes answers and says nothing for [`Failover::silence`] is left
/// too (a stopped process whose kernel still acknowledges the bytes).
///
/// While the proxy is on an upstream other than the first, it probes the more preferred
/// ones; once one has answered every probe for [`Failover::hold`], the proxy moves to
/// that one as above (aggregating: miners kept, moved once the new connection is set up;
/// forwarding: miners get `Reconnect`). The metrics show the upstream in use
/// ([`metrics::upstream_active`]) and count the switches ([`metrics::UPSTREAM_SWITCHES`]).
pub async fn supervise_upstreams(
    upstreams: &[Upstream],
    listen: SocketAddr,
    mut config: ProxyConfig,
    backoff: Backoff,
    failover: Failover,
    mut on_start: impl FnMut(&Proxy),
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    if upstreams.is_empty() {
        return;
    }
    for u in upstreams {
        metrics::upstream_configured(&u.address);
    }
    // Aggregating in front of several pools: one proxy, its miners moved from pool to
    // pool (`kept` holds it between two pool connections).
    let keep = config.aggregate && upstreams.len() > 1;
    let mut kept: Option<Proxy> = None;
    let miners_then = match keep {
        true => "miners stay connected",
        false => "miners told to reconnect",
    };
    // The configured upstream dialled next, and where a pool's `Reconnect` sent the
    // proxy instead (until a dial there fails).
    let mut index = 0;
    let mut redirect: Option<String> = None;
    // Configured upstreams that failed since the last one that answered.
    let mut failed = 0;
    let mut wait = backoff.initial;
    // Whether a pool connection was set up and lost (the next one is a reconnect).
    let mut lost = false;
    // The upstream of the last pool connection set up.
    let mut previous: Option<String> = None;
    loop {
        let upstream = redirect
            .clone()
            .unwrap_or_else(|| upstreams[index].address.clone());
        if let Some((host, port)) = endpoint(&upstream) {
            (config.upstream_host, config.upstream_port) = (host, port);
        }
        config.upstream_noise = upstreams[index].authority;
        let attempt = async {
            let tcp = tokio::net::TcpStream::connect(upstream.as_str()).await?;
            let _ = tcp.set_nodelay(true);
            watch_pool(&tcp)?;
            if let Some(proxy) = &kept {
                // The running proxy moves its miners to this connection.
                return proxy.switch_to(tcp, &config).await.map(|()| None);
            }
            let listener = crate::listen::bind_with(listen, config.reuse_port).await?;
            let sv1 = match config.sv1.listen {
                Some(addr) => Some(crate::listen::bind_with(addr, config.reuse_port).await?),
                None => None,
            };
            Proxy::start_keeping(tcp, (listener, sv1), config.clone(), keep)
                .await
                .map(Some)
        };
        let started = tokio::select! {
            _ = &mut stop => None,
            started = attempt => Some(started),
        };
        let Some(started) = started else {
            if let Some(proxy) = kept.take() {
                proxy.shutdown().await;
            }
            return;
        };
        // How long to wait before the next dial.
        let mut pause = Duration::ZERO;
        match started.map(|new| new.or_else(|| kept.take())) {
            Ok(None) => continue,
            Ok(Some(proxy)) => {
                if lost {
                    metrics::UPSTREAM_RECONNECTS.fetch_add(1, Relaxed);
                }
                if previous.as_ref().is_some_and(|p| *p != upstream) {
                    metrics::UPSTREAM_SWITCHES.fetch_add(1, Relaxed);
                }
                previous = Some(upstream.clone());
                (wait, failed) = (backoff.initial, 0);
                metrics::upstream_active(&upstream, true);
                on_start(&proxy);
                let preferred = &upstreams[..index];
                let several = upstreams.len() > 1;
                let ended = tokio::select! {
                    _ = &mut stop => {
                        proxy.shutdown().await;
                        metrics::upstream_active(&upstream, false);
                        return;
                    }
                    _ = proxy.upstream_closed() => Ended::Lost,
                    _ = pool_silent(&proxy, failover.silence), if several => Ended::Silent,
                    j = preferred_back(preferred, &config, failover.hold), if !preferred.is_empty() => {
                        Ended::Return(j)
                    }
                };
                metrics::upstream_active(&upstream, false);
                let redirected_to = proxy.redirect();
                lost = true;
                match (&ended, &redirected_to) {
                    (Ended::Lost, Some((host, port))) => {
                        let to = redirected(&upstream, host, *port);
                        tracing::warn!("upstream {upstream} redirects to {to}; {miners_then}");
                        redirect = Some(to);
                        // A redirect is not a loss (the reconnects metric counts losses).
                        lost = false;
                        pause = backoff.initial;
                    }
                    (Ended::Lost | Ended::Silent, _) => {
                        match ended {
                            Ended::Silent => tracing::warn!(
                                "upstream {upstream} silent for {:?} with answers owed; {miners_then}",
                                failover.silence
                            ),
                            _ => tracing::warn!("upstream {upstream} lost; {miners_then}"),
                        }
                        redirect = None;
                        if several {
                            // This one counts as failed in the round: the others next.
                            (index, failed) = ((index + 1) % upstreams.len(), 1);
                        } else {
                            pause = wait;
                        }
                    }
                    (Ended::Return(j), _) => {
                        tracing::warn!(
                            "upstream {} answered for {:?}: back to it from {upstream}; {miners_then}",
                            upstreams[*j].address,
                            failover.hold
                        );
                        (index, redirect, lost) = (*j, None, false);
                    }
                }
                if keep {
                    // Its miners wait for the next pool connection (a silent or
                    // preferred-over pool serves them until then).
                    kept = Some(proxy);
                } else {
                    // The shutdown closes the listener first, then gives the miners'
                    // tasks the write timeout to write their Reconnect (the router's, or
                    // the shutdown's own while the pool is still connected) and close:
                    // miners reconnecting meanwhile are refused until the next pool's
                    // proxy listens, rather than holding this one open.
                    proxy.shutdown().await;
                }
            }
            Err(e) => {
                if matches!(e, ProxyError::Handshake(_)) {
                    metrics::UPSTREAM_HANDSHAKE_FAILURES.fetch_add(1, Relaxed);
                }
                if redirect.take().is_some() {
                    tracing::warn!(
                        "upstream {upstream}: {e}; back to the configured upstream {}",
                        upstreams[index].address
                    );
                    pause = wait;
                } else {
                    failed += 1;
                    index = (index + 1) % upstreams.len();
                    if failed >= upstreams.len() {
                        // A whole round failed: wait, then from the first again.
                        (index, failed, pause) = (0, 0, wait);
                        tracing::warn!("upstream {upstream}: {e}; retrying in {wait:?}");
                        if let Some(proxy) = kept.take() {
                            // No pool to move the miners to: they are told to reconnect.
                            tracing::warn!("no upstream answers: miners told to reconnect");
                            proxy.shutdown().await;
                        }
                    } else {
                        tracing::warn!(
                            "upstream {upstream}: {e}; trying {}",
                            upstreams[index].address
                        );
                    }
                }
            }
        }
        if !pause.is_zero() {
            tokio::select! {
                _ = &mut stop => {
                    if let Some(proxy) = kept.take() {
                        proxy.shutdown().await;
                    }
                    return;
                }
                _ = tokio::time::sleep(pause) => {}
            }
            if pause == wait {
                wait = (wait * 2).min(backoff.max);
            }
        }
    }
}

/// Resolves once `proxy`'s pool has owed answers for `silence` without sending a frame:
/// shares sent to it and not answered (forwarded beyond those answered; in aggregating
/// mode, [`ProxyStats::shares_unconfirmed`]), and no frame from it since they were seen
/// owed.
async fn pool_silent(proxy: &Proxy, silence: Duration) {
    let aggregate = proxy.shared.config.aggregate;
    let owed = |s: &ProxyStats| match aggregate {
        true => s.shares_unconfirmed > 0,
        false => s.shares_forwarded > s.shares_accepted.saturating_add(s.shares_rejected),
    };
    let tick = (silence / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut heard = proxy.stats().frames_from_upstream;
    let mut owed_since: Option<tokio::time::Instant> = None;
    loop {
        tokio::time::sleep(tick).await;
        let now = proxy.stats();
        if now.frames_from_upstream != heard || !owed(&now) {
            heard = now.frames_from_upstream;
            owed_since = None;
        } else if owed_since
            .get_or_insert_with(tokio::time::Instant::now)
            .elapsed()
            >= silence
        {
            return;
        }
    }
}

/// Probes `preferred` (in order) until one has answered every probe for `hold`; resolves
/// to its index.
async fn preferred_back(preferred: &[Upstream], config: &ProxyConfig, hold: Duration) -> usize {
    let every = (hold / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut answering_since: Vec<Option<tokio::time::Instant>> = vec![None; preferred.len()];
    loop {
        tokio::time::sleep(every).await;
        for (j, u) in preferred.iter().enumerate() {
            match upstream::probe(u, config).await {
                Ok(()) => {
                    let now = tokio::time::Instant::now();
                    let since = *answering_since[j].get_or_insert(now);
                    tracing::debug!("upstream {} answered a probe", u.address);
                    if now - since >= hold {
                        return j;
                    }
                }
                Err(e) => {
                    tracing::debug!("upstream {}: probe failed: {e}", u.address);
                    answering_since[j] = None;
                }
            }
        }
    }
}

/// `HOST:PORT` of the pool `config` names (`upstream_host`, `upstream_port`; an IPv6
/// host in brackets).
fn upstream_name(config: &ProxyConfig) -> String {
    let (host, port) = (&config.upstream_host, config.upstream_port);
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `HOST:PORT` of a pool's `Reconnect` from the endpoint `current` (`HOST:PORT`): an
/// empty `host` keeps the current host, a `port` of 0 the current port; an IPv6 address
/// is bracketed.
fn redirected(current: &str, host: &str, port: u16) -> String {
    let (current_host, current_port) = current.rsplit_once(':').unwrap_or((current, ""));
    let host = match host {
        "" => current_host.to_owned(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_owned(),
    };
    match port {
        0 => format!("{host}:{current_port}"),
        p => format!("{host}:{p}"),
    }
}

/// How long the pool connection may hold data the pool has not acknowledged (on Linux),
/// or go unanswered to keep-alive probes, before the pool is taken as gone: one that
/// vanished without closing (a power loss, a path that dropped) is noticed within about
/// this long, where a write to it may otherwise wait in the kernel for many minutes.
const POOL_SILENCE_LIMIT: Duration = Duration::from_secs(30);

/// Sets up the dead-pool checks of [`POOL_SILENCE_LIMIT`] on the connection [`supervise`]
/// dials: keep-alive probes after 10 s without traffic (every 5 s on Linux), and
/// `TCP_USER_TIMEOUT`, which also bounds the probes. A pool that is there but stops
/// reading is [`ProxyConfig::write_timeout`]'s.
fn watch_pool(tcp: &tokio::net::TcpStream) -> io::Result<()> {
    let socket = socket2::SockRef::from(tcp);
    let keepalive = socket2::TcpKeepalive::new().with_time(Duration::from_secs(10));
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let keepalive = keepalive.with_interval(Duration::from_secs(5));
    socket.set_tcp_keepalive(&keepalive)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    socket.set_tcp_user_timeout(Some(POOL_SILENCE_LIMIT))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconnect_keeps_what_it_leaves_empty() {
        assert_eq!(redirected("pool.example:3333", "", 0), "pool.example:3333");
        assert_eq!(
            redirected("pool.example:3333", "", 4444),
            "pool.example:4444"
        );
        assert_eq!(
            redirected("pool.example:3333", "10.0.0.2", 0),
            "10.0.0.2:3333"
        );
        assert_eq!(redirected("10.0.0.1:3333", "::1", 5), "[::1]:5");
        assert_eq!(redirected("[::1]:3333", "", 0), "[::1]:3333");
    }

    #[tokio::test]
    async fn the_pool_connection_is_watched_for_silence() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let socket = socket2::SockRef::from(&tcp);
        assert!(!socket.keepalive().unwrap());
        watch_pool(&tcp).unwrap();
        assert!(socket.keepalive().unwrap());
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(10)
        );
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            assert_eq!(
                socket.tcp_keepalive_interval().unwrap(),
                Duration::from_secs(5)
            );
            assert_eq!(socket.tcp_user_timeout().unwrap(), Some(POOL_SILENCE_LIMIT));
        }
    }
}
