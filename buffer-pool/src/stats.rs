//! Pool statistics.

use crate::raw::RawStats;

/// A snapshot of a pool's counters, from [`BufferPool::stats`](crate::BufferPool::stats).
///
/// | field | kind |
/// |---|---|
/// | `capacity`, `slot_size` | configuration |
/// | `in_use` | **current**: goes up and down |
/// | `high_water` | **peak** since the pool was made |
/// | `pooled`, `fallback_exhausted`, `fallback_too_large` ([`fallbacks`](Self::fallbacks), [`acquisitions`](Self::acquisitions)) | **totals** since the pool was made: never go down; a rate is the difference of two snapshots |
///
/// # Consistency
///
/// Each field is read with `Relaxed` atomic loads (`in_use` and `pooled`
/// one per slot), so a snapshot taken while other threads acquire and
/// release buffers is not a single instant: fields may disagree by the
/// operations in flight during the call. `in_use` lies between the number
/// of slots held during the whole call and the number held at some point
/// during it; the counters (`high_water`, `pooled`, the fallbacks) never go
/// backwards from one snapshot to the next. Once the other threads'
/// operations are ordered before the call (they were joined, or handed
/// their buffers over through a channel or mutex), the snapshot is exact
/// and these hold:
///
/// * `in_use` is the number of slots held by live buffers (a frozen buffer
///   and all its clones hold one slot); a free slot parked in a thread's
///   cache (see [`BufferPool::flush_thread_cache`](crate::BufferPool::flush_thread_cache))
///   is not in use;
/// * `in_use <= high_water <= capacity`;
/// * `pooled + fallbacks()` is the number of acquisitions so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Number of slots.
    pub capacity: usize,
    /// Size of each slot in bytes.
    pub slot_size: usize,
    /// Current: slots held by live buffers now.
    pub in_use: usize,
    /// Peak: largest number of slots ever off the shared free list: in use, or
    /// free but parked in a thread's cache (at most one per thread). Equal
    /// to the largest `in_use` ever reached when one thread uses the pool;
    /// never below it.
    pub high_water: usize,
    /// Total: acquisitions served from a slot since the pool was made.
    pub pooled: u64,
    /// Total: acquisitions served from the heap because every slot was in use or
    /// parked in another thread's cache.
    pub fallback_exhausted: u64,
    /// Total: acquisitions served from the heap because the length exceeded the
    /// slot size (counted even when the pool was also exhausted).
    pub fallback_too_large: u64,
}

impl PoolStats {
    pub(crate) fn from_raw(raw: RawStats) -> Self {
        Self {
            capacity: raw.capacity,
            slot_size: raw.slot_size,
            in_use: raw.in_use,
            high_water: raw.high_water,
            pooled: raw.pooled,
            fallback_exhausted: raw.exhausted,
            fallback_too_large: raw.too_large,
        }
    }

    /// Total: all heap fallbacks since the pool was made, whatever the reason.
    pub fn fallbacks(&self) -> u64 {
        self.fallback_exhausted
            .wrapping_add(self.fallback_too_large)
    }

    /// Total: all acquisitions since the pool was made, pooled or not.
    pub fn acquisitions(&self) -> u64 {
        self.pooled.wrapping_add(self.fallbacks())
    }
}
