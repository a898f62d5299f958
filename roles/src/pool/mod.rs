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
//! channel is a [`ServerChannel`](sv2c_channels::server::ServerChannel) given the job of the current template and its
//! `SetNewPrevHash`. A template's job is built once for every channel with the same
//! extranonce length, the first time one asks for it, and the channels hold that one
//! [`Job`](sv2c_channels::server::Job) (its coinbase bytes are reference counted); each standard channel's
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
//!
//! # Layout
//!
//! This module is the [`Pool`] facade: it binds, starts the job timer and the Template
//! Provider client, and hands its listener to the servers' accept loop (`server.rs`,
//! shared with the proxy). Beside it, in `roles/src/pool/`:
//!
//! * `config.rs`: [`PoolConfig`] and its defaults;
//! * `state.rs`: what every connection shares (counters, worker ledger, the broadcast of
//!   work, ticks and shutdown, the job cache, where blocks go);
//! * `connection.rs`: one connection, from the Noise handshake and `SetupConnection` to
//!   its read loop, and the handlers of the messages that are not shares;
//! * `channel.rs`: what a channel decision is (budgets, opening, `UpdateChannel`,
//!   `CloseChannel`), without I/O;
//! * `shares.rs`: shares checked as their batch is read, counted, and acknowledged;
//! * `jobs.rs`: the jobs, targets and chain tips a connection sends as the work moves;
//! * `template.rs` and `template_provider.rs`: where the work comes from;
//! * `workers.rs`: the bounded per-worker ledger.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use sv2c_channels::extensions::WorkerStats;
use tokio::net::ToSocketAddrs;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::listen::{self, AddressCap, ConnectionCap, Counted};
use crate::metrics::{BlockSample, Sample};
use crate::server::{self, Accepted, Admission};

mod channel;
mod config;
mod connection;
mod jobs;
mod shares;
mod state;
mod template;
mod template_provider;
mod workers;

pub use config::{
    DEFAULT_COINBASE_OUTPUT, DEFAULT_MAX_CHANNELS, DEFAULT_MAX_CHANNELS_PER_CONNECTION,
    MAX_WORKERS, PoolConfig,
};
pub use template_provider::TemplateProviderConfig;

use state::{Shared, bump};
use template::MadeUpChain;
use template_provider::SOLUTION_QUEUE;

/// The error codes the pool answers with (`too-many-channels` is ours: the spec has none;
/// a channel budget is full, the connection's ([`PoolConfig::max_channels_per_connection`])
/// or the pool's ([`PoolConfig::max_channels`])).
pub use sv2c_channels::codes::{
    INVALID_CHANNEL_ID, INVALID_USER_IDENTITY, MAX_TARGET_OUT_OF_RANGE,
    MIN_EXTRANONCE_SIZE_TOO_LARGE, TOO_MANY_CHANNELS,
};

/// How long [`Pool::shutdown`] waits for connections to say `Reconnect` and close.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

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
        let (shutdown, stop) = watch::channel(false);
        if let (Some(tp), Some(rx)) = (tp, solutions_rx) {
            let link = template_provider::Link {
                broadcast: shared.broadcast.clone(),
                status: shared.tp_status.clone(),
                coinbase_output: shared.config.coinbase_output.clone(),
            };
            let client = template_provider::run(link, tp, rx, stop.clone());
            tokio::spawn(client);
        }
        tokio::spawn(job_timer(shared.clone(), stop.clone()));
        let config = &shared.config;
        let admission = Admission {
            cap: ConnectionCap::new(config.max_connections),
            counted: Counted::new(None),
            addresses: AddressCap::new(config.max_connections_per_address),
        };
        let connections = Connections(shared.clone());
        let listeners = (listener, None);
        let serving = server::accept_loop(listeners, admission, connections, stop, SHUTDOWN_GRACE);
        let task = tokio::spawn(serving);
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

/// The pool's side of the server core's accept loop: one task per connection.
struct Connections(Arc<Shared>);

impl server::Server for Connections {
    fn refused_per_address(&self, _peer: SocketAddr) {
        bump(&self.0.counters.connections_refused_per_address);
    }

    fn serve(&mut self, tasks: &mut JoinSet<()>, accepted: Accepted) {
        let Accepted {
            tcp, peer, slot, ..
        } = accepted;
        let shared = self.0.clone();
        bump(&shared.counters.connections_accepted);
        bump(&shared.counters.connections_open);
        tracing::debug!("{peer}: connected");
        // The connection's future is made inside the task's block, not awaited from
        // outside it: the task holds it once.
        tasks.spawn(async move {
            match connection::serve(tcp, shared.clone()).await {
                Ok(()) => tracing::debug!("{peer}: disconnected"),
                Err(e) => tracing::debug!("{peer}: {e}; disconnected"),
            }
            shared.counters.connections_open.fetch_sub(1, Relaxed);
            drop(slot);
        });
    }

    fn stop(self) {
        // Every connection sends `Reconnect` and closes; a peer that does not read gets
        // SHUTDOWN_GRACE.
        self.0.broadcast.send_modify(|b| b.stopping = true);
    }
}

/// The pool's job timer, until shutdown: on the made-up chain it moves the chain; every
/// tick is broadcast (vardiff, the check of unfinished frames).
async fn job_timer(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let config = &shared.config;
    let mut made_up = config.template_provider.is_none().then(MadeUpChain::first);
    let interval = config.job_interval;
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = ticker.tick() => {
                let every = config.jobs_per_prev_hash;
                template::on_timer(&shared.broadcast, made_up.as_mut(), every);
            }
        }
    }
}
