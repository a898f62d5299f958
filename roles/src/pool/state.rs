//! What every connection of the pool shares: its settings, counters, worker ledger, the
//! broadcast of work, timer ticks and shutdown, the job cache, and where blocks go.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use sv2c_channels::server::{ExtranoncePrefixAllocator, Job, JobError, submit_solution};
use tokio::sync::{mpsc, watch};

use super::config::PoolConfig;
use super::template::{Broadcast, JobCache, MadeUpChain, Work};
use super::template_provider::{self, Solution, display_hash};
use super::workers::Workers;
use crate::metrics::Rejections;

/// The pool's counters, shared by its connections ([`Pool::stats`](super::Pool::stats)).
#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Connections set up (`SetupConnection.Success` sent).
    pub(super) connections: AtomicU64,
    pub(super) connections_accepted: AtomicU64,
    pub(super) connections_open: AtomicU64,
    pub(super) handshake_failures: AtomicU64,
    pub(super) channels_opened: AtomicU64,
    pub(super) channels_open: AtomicU64,
    pub(super) channels_refused: AtomicU64,
    pub(super) connections_refused_per_address: AtomicU64,
    pub(super) shares_accepted: AtomicU64,
    pub(super) shares_rejected: Rejections,
    pub(super) jobs_sent: AtomicU64,
    pub(super) prev_hashes_sent: AtomicU64,
    pub(super) reconnects_sent: AtomicU64,
    pub(super) frames_received: AtomicU64,
    pub(super) blocks_found: AtomicU64,
}

/// Bytes of extranonce the pool puts before the miner's own (the channel's prefix).
pub(super) const EXTRANONCE_PREFIX_LEN: usize = 8;

/// One more.
pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

/// The pool's state every connection holds a reference to.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) config: PoolConfig,
    pub(super) counters: Counters,
    pub(super) next_id: AtomicU32,
    /// The extranonce prefixes of the open channels: [`EXTRANONCE_PREFIX_LEN`] bytes of
    /// counter, given back when a channel closes.
    pub(super) prefixes: Mutex<ExtranoncePrefixAllocator>,
    /// Accepted shares and work per `user_identity`.
    pub(super) workers: Mutex<Workers>,
    /// What every connection follows: the work (template and chain tip), the job timer's
    /// tick and the shutdown. One watch, one wake-up source per idle connection.
    pub(super) broadcast: Arc<watch::Sender<Broadcast>>,
    /// The Template Provider client's connection and blocks submitted.
    pub(super) tp_status: Arc<template_provider::Status>,
    /// The origin of the seconds vardiff counts in.
    pub(super) started: std::time::Instant,
    /// The jobs of the current work, built once for every channel.
    pub(super) jobs: Mutex<JobCache>,
    /// Blocks for the Template Provider's connection (`None`: no Template Provider).
    pub(super) solutions: Option<mpsc::Sender<Solution>>,
}

impl Shared {
    /// The pool's shared state; `solutions`: where blocks go, with a Template Provider.
    pub(super) fn new(config: PoolConfig, solutions: Option<mpsc::Sender<Solution>>) -> Shared {
        // The made-up chain has work from the start; a Template Provider's comes later.
        let work = match config.template_provider {
            None => Some(Arc::new(MadeUpChain::first().work())),
            Some(_) => None,
        };
        Shared {
            counters: Counters::default(),
            next_id: AtomicU32::new(1),
            prefixes: Mutex::new(ExtranoncePrefixAllocator::new(
                Vec::new(),
                EXTRANONCE_PREFIX_LEN,
            )),
            workers: Mutex::new(Workers::new(
                config.max_workers,
                config.worker_active.as_secs(),
            )),
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
    pub(super) fn job(
        &self,
        work: &Work,
        future: bool,
        extranonce_len: usize,
    ) -> Result<Job, JobError> {
        let mut cache = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        cache.job(work, future, extranonce_len, &self.config.coinbase_output)
    }

    /// A share met the network target: counted, logged and, with a Template Provider,
    /// queued for it as `SubmitSolution` at once.
    pub(super) fn block_found(&self, channel_id: u32, found: (&[u8; 32], u64, &[u8; 80], &[u8])) {
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
    pub(super) fn now_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}
