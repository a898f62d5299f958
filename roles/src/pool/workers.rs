//! The pool's worker ledger: accepted shares and work per `user_identity`, for a bounded
//! number of identities that keeps the active ones.
//!
//! Each identity remembers when it was last seen (a share counted for it). When the
//! ledger is full, a share of an identity it does not hold evicts the least recently
//! seen one if that one has been idle for at least the ledger's `active` time (its
//! counts are added to the overflow sum); otherwise the share itself is added to the
//! overflow sum. So a stream of made-up names cannot push out a worker that keeps
//! submitting: while every held identity is active, the new names are what overflows;
//! once workers go quiet, newcomers take their places, least recently seen first. No
//! share goes uncounted: the held identities' counts plus the overflow sum are every
//! accepted share.
//!
//! Cost: a share of a held identity is one hash lookup, and once per second of the
//! pool's clock also a move in the recency order (a `BTreeMap`); the names are stored
//! once, shared by both tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sv2c_channels::extensions::WorkerStats;

/// When an identity was last seen: the second, and a sequence number that orders the
/// identities seen in one second.
type Seen = (u64, u64);

#[derive(Debug)]
struct Worker {
    stats: WorkerStats,
    seen: Seen,
}

/// Accepted shares and work per identity (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Workers {
    max: usize,
    /// An identity seen within this many seconds is not evicted.
    active_secs: u64,
    by_name: HashMap<Arc<[u8]>, Worker>,
    by_seen: BTreeMap<Seen, Arc<[u8]>>,
    next_seq: u64,
    overflow: WorkerStats,
    evicted: u64,
}

fn add(stats: &mut WorkerStats, shares: u64, work: f64) {
    stats.shares_accepted += shares;
    stats.work += work;
}

impl Workers {
    /// A ledger of at most `max` identities, each kept while seen within `active_secs`.
    pub(crate) fn new(max: usize, active_secs: u64) -> Self {
        Workers {
            max,
            active_secs,
            by_name: HashMap::new(),
            by_seen: BTreeMap::new(),
            next_seq: 0,
            overflow: WorkerStats::default(),
            evicted: 0,
        }
    }

    fn stamp(&mut self, now: u64) -> Seen {
        self.next_seq += 1;
        (now, self.next_seq)
    }

    /// Counts `shares` accepted shares of `name`, worth `work` expected hashes in all, at
    /// `now` (seconds of the pool's clock).
    pub(crate) fn record(&mut self, name: &[u8], shares: u64, work: f64, now: u64) {
        if let Some(worker) = self.by_name.get_mut(name) {
            add(&mut worker.stats, shares, work);
            if worker.seen.0 != now {
                let old = worker.seen;
                self.next_seq += 1;
                worker.seen = (now, self.next_seq);
                if let Some(key) = self.by_seen.remove(&old) {
                    self.by_seen.insert(worker.seen, key);
                }
            }
            return;
        }
        if self.by_name.len() >= self.max && !self.evict_idle(now) {
            add(&mut self.overflow, shares, work);
            return;
        }
        let seen = self.stamp(now);
        let key: Arc<[u8]> = Arc::from(name);
        let mut stats = WorkerStats::default();
        add(&mut stats, shares, work);
        self.by_seen.insert(seen, key.clone());
        self.by_name.insert(key, Worker { stats, seen });
    }

    /// Evicts the least recently seen identity if it is idle at `now`; whether it did.
    fn evict_idle(&mut self, now: u64) -> bool {
        let Some(entry) = self.by_seen.first_entry() else {
            return false;
        };
        if now.saturating_sub(entry.key().0) < self.active_secs {
            return false;
        }
        let key = entry.remove();
        if let Some(worker) = self.by_name.remove(&key) {
            add(
                &mut self.overflow,
                worker.stats.shares_accepted,
                worker.stats.work,
            );
        }
        self.evicted += 1;
        true
    }

    /// The identities held and their counts, ordered by name.
    pub(crate) fn sorted(&self) -> Vec<(&[u8], &WorkerStats)> {
        let mut all: Vec<_> = self
            .by_name
            .iter()
            .map(|(k, w)| (&k[..], &w.stats))
            .collect();
        all.sort_unstable_by_key(|&(k, _)| k);
        all
    }

    /// Shares of identities not held: those that came while the ledger was full of
    /// active ones, and those of evicted identities.
    pub(crate) fn overflow(&self) -> WorkerStats {
        self.overflow
    }

    /// Identities evicted so far.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(w: &Workers, name: &[u8]) -> Option<u64> {
        w.by_name.get(name).map(|w| w.stats.shares_accepted)
    }

    #[test]
    fn a_stream_of_new_names_does_not_push_out_active_workers() {
        let mut w = Workers::new(3, 60);
        w.record(b"honest", 1, 1.0, 0);
        for i in 0..10_000u32 {
            let now = u64::from(i / 200);
            w.record(format!("made-up {i}").as_bytes(), 1, 1.0, now);
            if i % 500 == 0 {
                w.record(b"honest", 1, 1.0, now);
            }
        }
        assert_eq!(shares(&w, b"honest"), Some(21));
        // Two made-up names got the free places; the rest overflowed, and nothing was
        // evicted while they were all active.
        assert_eq!(w.by_name.len(), 3);
        assert_eq!(w.overflow().shares_accepted, 10_000 - 2);
        assert_eq!(w.evicted(), 0);
        let total: u64 = w.sorted().iter().map(|(_, s)| s.shares_accepted).sum();
        assert_eq!(total + w.overflow().shares_accepted, 10_021);
    }

    #[test]
    fn the_least_recently_seen_idle_worker_makes_room() {
        let mut w = Workers::new(2, 60);
        w.record(b"a", 5, 5.0, 0);
        w.record(b"b", 1, 1.0, 10);
        w.record(b"a", 1, 1.0, 30); // a is now the most recent
        // At 75, b (seen at 10) is idle, a (seen at 30) is not.
        w.record(b"c", 1, 1.0, 75);
        assert_eq!(shares(&w, b"b"), None);
        assert_eq!(shares(&w, b"a"), Some(6));
        assert_eq!(w.overflow().shares_accepted, 1);
        assert_eq!(w.evicted(), 1);
        // Nothing idle at 76: d overflows.
        w.record(b"d", 1, 1.0, 76);
        assert_eq!(shares(&w, b"d"), None);
        assert_eq!(w.overflow().shares_accepted, 2);
        // In one second, the order is the order of arrival.
        let names: Vec<_> = w.sorted().iter().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(names, [b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(w.by_seen.len(), 2);
    }

    #[test]
    fn a_ledger_of_none_counts_everything_as_overflow() {
        let mut w = Workers::new(0, 0);
        w.record(b"a", 2, 3.0, 0);
        assert_eq!(w.overflow().shares_accepted, 2);
        assert!(w.sorted().is_empty());
    }
}
