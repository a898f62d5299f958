//! The pool handle and its configuration errors.

use core::fmt;
use std::sync::Arc;

use crate::buf::PoolBufMut;
use crate::raw::{MAX_CAPACITY, RawNewError, RawPool};
use crate::stats::PoolStats;

/// Error returned when a pool cannot be created with the requested shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// More slots were requested than [`BufferPool::MAX_CAPACITY`].
    #[error("pool capacity {requested} exceeds the maximum of {max} slots")]
    CapacityTooLarge {
        /// Requested number of slots.
        requested: usize,
        /// [`BufferPool::MAX_CAPACITY`].
        max: usize,
    },
    /// `capacity * slot_size` (with slots rounded up to 64 bytes) does not
    /// fit in one allocation (`isize::MAX` bytes).
    #[error("pool of {capacity} slots of {slot_size} bytes is too large to allocate")]
    ArenaTooLarge {
        /// Requested number of slots.
        capacity: usize,
        /// Requested slot size in bytes.
        slot_size: usize,
    },
}

/// A fixed-capacity pool of equally sized buffers with heap fallback.
///
/// `capacity` slots of `slot_size` bytes are allocated once, when the pool is
/// created. [`acquire`](Self::acquire) takes a free slot in O(1) without
/// locks, or falls back to a heap buffer (and counts why) when every slot is
/// in use or the length exceeds the slot size. It never blocks and never
/// waits for another thread.
///
/// The handle is cheap to clone (an `Arc`), `Send` and `Sync`. Buffers may
/// outlive every handle: the slots' memory is freed when the last handle and
/// the last buffer are gone, whichever comes last.
///
/// ```
/// use sv2c_buffer_pool::BufferPool;
///
/// let pool = BufferPool::new(2, 1024)?;
/// let a = pool.acquire(100);
/// let b = pool.acquire(2000); // larger than a slot: heap
/// assert!(a.is_pooled() && !b.is_pooled());
/// assert_eq!(pool.stats().fallback_too_large, 1);
/// # Ok::<(), sv2c_buffer_pool::PoolError>(())
/// ```
#[derive(Clone)]
pub struct BufferPool {
    raw: Arc<RawPool>,
}

impl BufferPool {
    /// Default slot size: a full Noise transport message (65 535 bytes) plus
    /// the 6-byte frame header and the 16-byte MAC, rounded up to 64 bytes.
    pub const DEFAULT_SLOT_SIZE: usize = 65_600;

    /// Largest supported number of slots.
    pub const MAX_CAPACITY: usize = MAX_CAPACITY;

    /// Creates a pool of `capacity` slots of `slot_size` bytes each.
    ///
    /// The slots are one zeroed allocation of `capacity * slot_size` bytes
    /// (each slot rounded up to a multiple of 64 bytes); the operating system
    /// usually maps large zeroed allocations lazily, so untouched slots cost
    /// address space, not memory. `capacity` may be 0 (every acquisition then
    /// falls back to the heap, which is handy to compare both paths).
    ///
    /// # Errors
    ///
    /// [`PoolError::CapacityTooLarge`] above [`Self::MAX_CAPACITY`] slots,
    /// [`PoolError::ArenaTooLarge`] if the arena size overflows.
    pub fn new(capacity: usize, slot_size: usize) -> Result<Self, PoolError> {
        let raw = RawPool::new(capacity, slot_size).map_err(|e| match e {
            RawNewError::CapacityTooLarge => PoolError::CapacityTooLarge {
                requested: capacity,
                max: MAX_CAPACITY,
            },
            RawNewError::ArenaTooLarge => PoolError::ArenaTooLarge {
                capacity,
                slot_size,
            },
        })?;
        Ok(Self { raw: Arc::new(raw) })
    }

    /// Creates a pool of `capacity` slots of [`Self::DEFAULT_SLOT_SIZE`].
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_capacity(capacity: usize) -> Result<Self, PoolError> {
        Self::new(capacity, Self::DEFAULT_SLOT_SIZE)
    }

    /// A writable buffer of exactly `len` bytes.
    ///
    /// From a free slot if `len <= slot_size` and one is free, otherwise from
    /// the heap (counted in [`PoolStats::fallback_too_large`] or
    /// [`PoolStats::fallback_exhausted`]). The bytes are initialised but
    /// unspecified for a pooled buffer (see [`PoolBufMut`]); overwrite them
    /// all, or use [`acquire_zeroed`](Self::acquire_zeroed).
    ///
    /// The pooled path allocates nothing: it takes this thread's cached slot
    /// (no atomic read-modify-write) or pops the shared stack (one
    /// compare-and-swap); the heap path is one zeroed allocation of `len`
    /// bytes.
    ///
    /// `len` is not bounded here beyond the slot size: a caller reading
    /// lengths off the wire must enforce its own maximum first (as the codec
    /// does with its maximum frame size), since a heap fallback allocates
    /// `len` bytes and aborts like `Vec` if that fails.
    #[inline]
    pub fn acquire(&self, len: usize) -> PoolBufMut {
        match self.raw.try_acquire(len) {
            Ok(slot) => PoolBufMut::pooled(slot),
            Err(_) => PoolBufMut::heap(len),
        }
    }

    /// Like [`acquire`](Self::acquire), with every byte set to 0.
    ///
    /// Costs a `memset` of `len` bytes on the pooled path.
    #[inline]
    pub fn acquire_zeroed(&self, len: usize) -> PoolBufMut {
        let mut buf = self.acquire(len);
        if buf.is_pooled() {
            buf.fill(0);
        }
        buf
    }

    /// Hands a heap buffer the caller already filled over as a [`PoolBufMut`] of
    /// its length, without copying or allocating, and counts it as a heap
    /// fallback ([`PoolStats::fallback_too_large`] if it exceeds the slot size,
    /// [`PoolStats::fallback_exhausted`] otherwise).
    ///
    /// For data that had to be received before a buffer of its final size could
    /// be justified, e.g. a frame larger than a slot whose announced length is
    /// not trusted until its bytes have arrived.
    ///
    /// ```
    /// use sv2c_buffer_pool::BufferPool;
    /// let pool = BufferPool::new(2, 64)?;
    /// let buf = pool.adopt(vec![7u8; 100]);
    /// assert_eq!((buf.len(), buf.is_pooled()), (100, false));
    /// assert_eq!(pool.stats().fallback_too_large, 1);
    /// # Ok::<(), sv2c_buffer_pool::PoolError>(())
    /// ```
    pub fn adopt(&self, vec: Vec<u8>) -> PoolBufMut {
        self.raw.count_adopted(vec.len());
        PoolBufMut::from_vec(vec)
    }

    /// Returns the free slot this thread keeps in its cache, if any, to its
    /// pool's free list.
    ///
    /// Each thread keeps at most one free slot of the pool it last acquired
    /// from, so that acquiring and releasing on one thread needs no atomic
    /// read-modify-write (see the crate docs). The slot goes back by itself
    /// when the thread exits, next uses another pool, or drops the pool's
    /// last handle; call this when a thread is about to idle for long while
    /// other threads may need every slot, or before comparing
    /// [`stats`](Self::stats) from several threads.
    ///
    /// ```
    /// use sv2c_buffer_pool::BufferPool;
    /// let pool = BufferPool::new(1, 64)?;
    /// drop(pool.acquire(8)); // the slot stays in this thread's cache...
    /// BufferPool::flush_thread_cache(); // ...until now
    /// let other = pool.clone();
    /// let pooled = std::thread::spawn(move || other.acquire(8).is_pooled()).join().unwrap();
    /// assert!(pooled);
    /// # Ok::<(), sv2c_buffer_pool::PoolError>(())
    /// ```
    pub fn flush_thread_cache() {
        crate::raw::flush_thread_cache();
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Size of each slot in bytes: the largest pooled acquisition.
    pub fn slot_size(&self) -> usize {
        self.raw.slot_size()
    }

    /// Current statistics. Cheap (a few atomic loads plus one per slot) and
    /// callable at any time from any thread; see [`PoolStats`] for how
    /// consistent the snapshot is.
    pub fn stats(&self) -> PoolStats {
        PoolStats::from_raw(self.raw.stats())
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stats = self.stats();
        f.debug_struct("BufferPool")
            .field("capacity", &stats.capacity)
            .field("slot_size", &stats.slot_size)
            .field("in_use", &stats.in_use)
            .finish_non_exhaustive()
    }
}
