//! What the servers count for the programs' metrics: share rejections by reason
//! ([`Rejections`]), the pool connections of the proxy's supervisor (the `UPSTREAM_*`
//! counters and [`upstream_active`]), and the [`Sample`] a running server's counters are
//! read into.
//!
//! The servers count with relaxed atomics as they run (one increment per event, nothing
//! else on the share path). The programs (`sv2c-programs`) read them into a [`Sample`]
//! per server and worker, sum the samples ([`Sample::add`], [`Sample::add_counters`]) and
//! serve them over HTTP (`sv2c_programs::metrics`, which lists the metric names). The `UPSTREAM_*` counters and
//! the upstreams' gauges count for the whole process.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use sv2c_channels::codes;

/// The share rejection reasons the roles count apart (`SubmitShares.Error` codes); any
/// other code is counted as `other`.
pub const REJECT_REASONS: [&str; 10] = [
    codes::INVALID_CHANNEL_ID,
    codes::STALE_SHARE,
    codes::BAD_EXTRANONCE_SIZE,
    codes::DIFFICULTY_TOO_LOW,
    codes::INVALID_JOB_ID,
    codes::DUPLICATE_SHARE,
    codes::INVALID_SHARE,
    codes::INVALID_NON_ROLLABLE_VERSION_BIT,
    codes::INVALID_USER_IDENTITY,
    "other",
];

/// Share rejections by reason: one relaxed atomic per [`REJECT_REASONS`] entry.
#[derive(Debug, Default)]
pub struct Rejections([AtomicU64; REJECT_REASONS.len()]);

impl Rejections {
    /// Counts one rejection with the error code `code`.
    pub fn count(&self, code: &[u8]) {
        let i = REJECT_REASONS
            .iter()
            .position(|r| r.as_bytes() == code)
            .unwrap_or(REJECT_REASONS.len() - 1);
        self.0[i].fetch_add(1, Relaxed);
    }

    /// Counts of every reason, in [`REJECT_REASONS`] order.
    pub fn counts(&self) -> [u64; REJECT_REASONS.len()] {
        std::array::from_fn(|i| self.0[i].load(Relaxed))
    }

    /// The sum of every reason.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }
}

/// Times [`supervise`](crate::proxy::supervise) set the pool connection up again after
/// losing it (in this process).
pub static UPSTREAM_RECONNECTS: AtomicU64 = AtomicU64::new(0);

/// Failed Noise handshakes with the pool in [`supervise`](crate::proxy::supervise) (in
/// this process).
pub static UPSTREAM_HANDSHAKE_FAILURES: AtomicU64 = AtomicU64::new(0);

/// Times [`supervise_upstreams`](crate::proxy::supervise_upstreams) set a pool connection
/// up on another upstream than the one before it (in this process).
pub static UPSTREAM_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// The configured upstreams (`HOST:PORT`) and how many workers' pool connections are on
/// each now, in the order they were first named.
static UPSTREAMS: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

/// Names a configured upstream (shown at 0 in `sv2c_proxy_upstream_active` until a
/// worker's pool connection is on it).
pub fn upstream_configured(address: &str) {
    let mut all = UPSTREAMS.lock().unwrap_or_else(PoisonError::into_inner);
    if !all.iter().any(|(a, _)| a == address) {
        all.push((address.to_owned(), 0));
    }
}

/// A worker's pool connection is set up on `address` (`active`) or gone from it.
pub fn upstream_active(address: &str, active: bool) {
    upstream_configured(address);
    let mut all = UPSTREAMS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, n)) = all.iter_mut().find(|(a, _)| a == address) {
        *n = if active {
            n.saturating_add(1)
        } else {
            n.saturating_sub(1)
        };
    }
}

/// The upstreams some worker's pool connection is on now, in configured order.
pub fn active_upstreams() -> Vec<String> {
    let all = UPSTREAMS.lock().unwrap_or_else(PoisonError::into_inner);
    all.iter()
        .filter(|(_, n)| *n > 0)
        .map(|(a, _)| a.clone())
        .collect()
}

/// Every configured upstream (`HOST:PORT`, in the order first named) with the number of
/// workers whose pool connection is on it now.
pub fn upstream_workers() -> Vec<(String, u64)> {
    UPSTREAMS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// What one scrape shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// Client connections open now.
    pub connections_open: u64,
    /// Client connections accepted so far.
    pub connections_total: u64,
    /// Channels open now.
    pub channels_open: u64,
    /// Shares accepted.
    pub shares_accepted: u64,
    /// Shares rejected, by reason ([`REJECT_REASONS`] order).
    pub shares_rejected: [u64; REJECT_REASONS.len()],
    /// Frames per direction: `(direction, count)`.
    pub frames: Vec<(&'static str, u64)>,
    /// The buffer pool's slots in use, its slots and its fallbacks (heap allocations),
    /// for a role that has one.
    pub buffer_pool: Option<(u64, u64, u64)>,
    /// Failed Noise handshakes of clients.
    pub downstream_handshake_failures: u64,
    /// An aggregating proxy's shares acknowledged to miners before the pool answered,
    /// of those confirmed by the pool and refused by it, the shares the pool has not
    /// answered yet (a gauge), and the acknowledged shares a pool the proxy left never
    /// answered.
    pub share_acks: Option<[u64; 5]>,
    /// A proxy's SV1 shares per worker name: forwarded to the pool, answered locally,
    /// refused by its check.
    pub sv1_workers: Vec<(String, [u64; 3])>,
    /// A pool's blocks, and its Template Provider connection.
    pub blocks: Option<BlockSample>,
}

/// A pool's blocks ([`Sample::blocks`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockSample {
    /// Shares that met the network target.
    pub found: u64,
    /// Blocks sent to the Template Provider.
    pub submitted: u64,
    /// Whether the Template Provider connection is set up (`None`: the pool has none).
    pub template_provider_connected: Option<bool>,
}

impl Sample {
    /// Adds the counters (not the gauges) of `other` to this one.
    pub fn add_counters(&mut self, other: &Sample) {
        self.connections_total += other.connections_total;
        self.shares_accepted += other.shares_accepted;
        for (a, b) in self.shares_rejected.iter_mut().zip(other.shares_rejected) {
            *a += b;
        }
        for &(dir, n) in &other.frames {
            match self.frames.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, m)) => *m += n,
                None => self.frames.push((dir, n)),
            }
        }
        if let Some((_, _, fallbacks)) = other.buffer_pool {
            let mine = self.buffer_pool.get_or_insert((0, 0, 0));
            mine.2 += fallbacks;
        }
        self.downstream_handshake_failures += other.downstream_handshake_failures;
        if let Some(theirs) = other.share_acks {
            let mine = self.share_acks.get_or_insert([0; 5]);
            // All but the gauge (3).
            for i in [0, 1, 2, 4] {
                mine[i] += theirs[i];
            }
        }
        if let Some(theirs) = other.blocks {
            let mine = self.blocks.get_or_insert_with(BlockSample::default);
            mine.found += theirs.found;
            mine.submitted += theirs.submitted;
        }
        for (name, theirs) in &other.sv1_workers {
            match self.sv1_workers.iter_mut().find(|(n, _)| n == name) {
                Some((_, mine)) => {
                    for (a, b) in mine.iter_mut().zip(theirs) {
                        *a += b;
                    }
                }
                None => self.sv1_workers.push((name.clone(), *theirs)),
            }
        }
    }

    /// Adds the counters and the gauges of `other` to this one (two workers' samples).
    pub fn add(&mut self, other: &Sample) {
        self.add_counters(other);
        self.connections_open += other.connections_open;
        self.channels_open += other.channels_open;
        if let Some((in_use, slots, _)) = other.buffer_pool {
            let mine = self.buffer_pool.get_or_insert((0, 0, 0));
            mine.0 += in_use;
            mine.1 += slots;
        }
        if let Some(theirs) = other.share_acks {
            self.share_acks.get_or_insert([0; 5])[3] += theirs[3];
        }
        if let Some(connected) = other.blocks.and_then(|b| b.template_provider_connected) {
            let mine = self.blocks.get_or_insert_with(BlockSample::default);
            let before = mine.template_provider_connected.unwrap_or(false);
            mine.template_provider_connected = Some(before || connected);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_are_counted_by_reason() {
        let r = Rejections::default();
        r.count(b"stale-share");
        r.count(b"stale-share");
        r.count(b"difficulty-too-low");
        r.count(b"something-else");
        assert_eq!(r.counts(), [0, 2, 0, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(r.total(), 4);
    }
}
