//! The only module of the crate that contains `unsafe` code.
//!
//! It owns the slot arena and the lock-free free list, and hands out three
//! handle types whose *safe* methods are sound for any use:
//!
//! * [`RawPool`]: one owning reference to the shared pool state. Dropping it
//!   closes the pool (no more acquisitions); the state is freed once the pool
//!   is closed and every slot is back on the free list.
//! * [`SlotMut`]: exclusive access to one slot (`&mut [u8]` of a length fixed
//!   at acquisition and checked against the slot size).
//! * [`SlotShared`]: shared, reference-counted read access to one slot.
//!
//! # The free list
//!
//! Free slots form a Treiber stack of slot indices. The whole pool state that
//! changes on the hot path lives in one `AtomicU64`, the *head word*:
//!
//! ```text
//!  63                31  30  29          15 14           0
//! +--------------------+---+--------------+--------------+
//! | tag (33 bits)      | C | free (15)    | top (15)     |
//! +--------------------+---+--------------+--------------+
//! ```
//!
//! * `top`: index of the first free slot, or [`NIL`] when none is free;
//! * `free`: number of slots on the stack, so `in_use = capacity - free` is
//!   read without a counter of its own;
//! * `C`: the pool is closed (its last [`RawPool`] is gone);
//! * `tag`: incremented by every pop. Every sequence of changes that brings
//!   `top` and `free` back to an earlier value contains a pop, so the tag
//!   changes and a stale compare-and-swap fails (the ABA problem). A stale
//!   CAS could only succeed after exactly 2^33 pops happened between one
//!   thread's load of the head and its CAS.
//!
//! An acquisition is one successful CAS (pop), a release is one successful
//! CAS (push). Because `free` and `C` share the word with the stack, exactly
//! one party observes the transition to "closed and every slot free": either
//! the closing `RawPool` or the release of the last slot. That party frees
//! the shared state, so buffers may outlive every pool handle, and no
//! per-buffer reference count on the pool is needed.
//!
//! # The per-thread cache
//!
//! Each thread keeps at most one free slot of its own, outside the free
//! list, so that a buffer acquired and released on the same thread (the
//! common case: decode, handle, drop) costs no read-modify-write at all.
//! The cache is a thread-local [`CacheState`]:
//!
//! * `Idle`: nothing cached;
//! * `Affine(pool)`: the thread last acquired from `pool` (the address is
//!   only compared, never dereferenced);
//! * `Holding(pool, index)`: slot `index` of `pool` is free and owned by the
//!   cache. It is *not* on the free list and the head word counts it as not
//!   free, so the pool's state stays alive while it is cached.
//!
//! An acquisition takes the cached slot when it belongs to the same pool
//! (otherwise it pushes a foreign cached slot back to its own pool first)
//! and marks the thread affine to the pool. A release keeps the slot when
//! the thread is affine to its pool and the pool is open, swapping out (and
//! pushing back) an older cached slot of the same pool so the most recent,
//! cache-warm slot is the one kept. A thread that only drops buffers
//! acquired elsewhere is never affine, so it never keeps a slot another
//! thread may need. Cached slots return to the free list when the thread
//! exits (the cache's destructor), when the thread next uses another pool,
//! when the pool's last handle is dropped on this thread, or on
//! `flush_thread_cache`. At most one slot per thread is parked this way.
//!
//! # Memory ordering
//!
//! A push is a `Release` (`AcqRel`) CAS and a pop an `Acquire` CAS on the
//! head word, and every change of the head word is a read-modify-write, so
//! all accesses a previous holder made to a slot's bytes happen before the
//! next holder's accesses. Shared handles count references like `Arc`:
//! `Relaxed` increments, `Release` decrements, and the last owner performs
//! an `Acquire` load of the count (which reads its own decrement, or 1) before releasing
//! the slot. A slot kept in a thread's cache is reused by the same thread,
//! so its accesses are ordered by program order.

use core::cell::Cell;
use core::ptr::NonNull;
use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, cache_thread_local};

mod buf_mut;

/// Largest number of slots a pool may have (the free-list index has 15 bits).
pub(crate) const MAX_CAPACITY: usize = 0x7FFF;

/// `top` value meaning "no free slot".
const NIL: u64 = 0x7FFF;
const TOP_MASK: u64 = 0x7FFF;
const FREE_SHIFT: u32 = 15;
const FREE_MASK: u64 = 0x7FFF;
const CLOSED: u64 = 1 << 30;
const TAG_SHIFT: u32 = 31;
const TAG_ONE: u64 = 1 << TAG_SHIFT;

/// Slot strides are rounded up to this, so slots start on cache lines.
const SLOT_ALIGN: usize = 64;

/// Same bound as `Arc`: more references than this means a leak loop.
const MAX_REFS: usize = isize::MAX as usize;

fn top(word: u64) -> u64 {
    word & TOP_MASK
}

fn free_count(word: u64) -> usize {
    // Lossless: the value has 15 bits.
    ((word >> FREE_SHIFT) & FREE_MASK) as usize
}

fn is_closed(word: u64) -> bool {
    word & CLOSED != 0
}

/// `word` with `top` and `free` replaced; `C` and the tag are kept.
fn with_top_free(word: u64, new_top: u64, free: usize) -> u64 {
    let keep = word & !(TOP_MASK | (FREE_MASK << FREE_SHIFT));
    // `free <= MAX_CAPACITY` always holds: callers only move it by one
    // inside `0..=capacity`.
    keep | (new_top & TOP_MASK) | (((free as u64) & FREE_MASK) << FREE_SHIFT)
}

/// Why an acquisition could not be served from a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Every slot was in use.
    Exhausted,
    /// The requested length exceeds the slot size.
    TooLarge,
}

/// Per-slot metadata. Aligned to a cache line so that slots held by
/// different threads do not share one.
#[repr(align(64))]
#[derive(Debug)]
struct SlotMeta {
    /// Number of live handles (`SlotMut` counts as one); 0 while the slot is
    /// free (on the free list or in a thread's cache), which is what
    /// `stats().in_use` counts.
    refs: AtomicUsize,
    /// Next free slot while this one is on the free list.
    next: AtomicU32,
    /// Times this slot was handed out. Written only by the slot's current
    /// holder (a plain load + store, no read-modify-write), read by stats.
    acquired: AtomicU64,
}

/// Fallback counters and the high-water mark, off the head word's line.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Counters {
    /// Set when the last pool handle is dropped; read (not written) on every
    /// release that could keep its slot in the thread cache, so it lives on
    /// this read-mostly line rather than in the head word.
    closed_hint: AtomicBool,
    high_water: AtomicUsize,
    exhausted: AtomicU64,
    too_large: AtomicU64,
}

/// State shared by all handles of one pool. Lives in a `Box` leaked by
/// [`RawPool::new`] and freed by whoever observes the pool closed with every
/// slot free (see the module docs).
#[derive(Debug)]
struct Shared {
    /// The head word; on its own cache line (the struct is 64-aligned and
    /// this is its first field, `Counters` starts a new line).
    head: AtomicU64,
    counters: Counters,
    meta: Box<[SlotMeta]>,
    /// Start of slot 0: the first 64-byte aligned address of the allocation,
    /// followed by `capacity * stride` zeroed bytes.
    arena: NonNull<u8>,
    /// The allocation the arena lies in, and its layout.
    alloc: NonNull<u8>,
    alloc_layout: Layout,
    capacity: usize,
    slot_size: usize,
    stride: usize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: `alloc` was returned by `alloc_zeroed(alloc_layout)` in
        // `RawPool::new` and is deallocated only here, once. `Shared` is
        // dropped only after every slot handle is gone, so no slice into the
        // arena is alive.
        unsafe { dealloc(self.alloc.as_ptr(), self.alloc_layout) };
    }
}

/// Snapshot of the raw counters, read with `Relaxed` loads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawStats {
    pub(crate) capacity: usize,
    pub(crate) slot_size: usize,
    pub(crate) in_use: usize,
    pub(crate) high_water: usize,
    pub(crate) pooled: u64,
    pub(crate) exhausted: u64,
    pub(crate) too_large: u64,
}

/// Error of [`RawPool::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawNewError {
    CapacityTooLarge,
    ArenaTooLarge,
}

/// One owning reference to a pool. Not `Clone`: the crate wraps it in an
/// `Arc` and the pool closes when that `Arc` is dropped.
#[derive(Debug)]
pub(crate) struct RawPool {
    shared: NonNull<Shared>,
}

// SAFETY: `Shared` is only touched through atomics, immutable fields and the
// arena, whose slots are accessed according to the ownership protocol of the
// free list (exclusive for `SlotMut`, read-only for `SlotShared`). Moving the
// handle to another thread or using it from several threads at once is
// therefore sound, like `Arc<T>` with `T: Send + Sync`.
unsafe impl Send for RawPool {}
// SAFETY: see the `Send` impl; `&RawPool` only allows acquisitions and
// relaxed reads of counters, both of which are thread-safe.
unsafe impl Sync for RawPool {}

impl RawPool {
    /// Allocates the arena (zeroed) and the metadata, all slots free.
    pub(crate) fn new(capacity: usize, slot_size: usize) -> Result<Self, RawNewError> {
        if capacity > MAX_CAPACITY {
            return Err(RawNewError::CapacityTooLarge);
        }
        let stride = slot_size
            .checked_next_multiple_of(SLOT_ALIGN)
            .ok_or(RawNewError::ArenaTooLarge)?;
        // `SLOT_ALIGN` spare bytes to align slot 0 by hand: asking the
        // allocator for 64-byte alignment would make the system allocator
        // `memset` the whole arena instead of using `calloc`, whose large
        // allocations are lazily zeroed pages that cost no memory until used.
        let total = stride
            .checked_mul(capacity)
            .and_then(|t| t.checked_add(SLOT_ALIGN))
            .ok_or(RawNewError::ArenaTooLarge)?;
        let alloc_layout =
            Layout::from_size_align(total, 1).map_err(|_| RawNewError::ArenaTooLarge)?;
        // SAFETY: `alloc_layout` has a non-zero size (at least `SLOT_ALIGN`).
        let ptr = unsafe { alloc_zeroed(alloc_layout) };
        let Some(alloc) = NonNull::new(ptr) else {
            handle_alloc_error(alloc_layout)
        };
        // Bytes up to the next multiple of `SLOT_ALIGN`: `< SLOT_ALIGN`.
        let offset = alloc.as_ptr().addr().wrapping_neg() % SLOT_ALIGN;
        // SAFETY: `offset < SLOT_ALIGN`, so the result stays inside the
        // allocation of `capacity * stride + SLOT_ALIGN` bytes.
        let arena = unsafe { alloc.add(offset) };

        // Free list: 0 -> 1 -> ... -> capacity-1 -> NIL, so the first
        // acquisitions take the lowest slots.
        let meta: Box<[SlotMeta]> = (0..capacity)
            .map(|i| {
                let next = if i + 1 < capacity {
                    i + 1
                } else {
                    NIL as usize
                };
                SlotMeta {
                    refs: AtomicUsize::new(0),
                    // Lossless: `next <= MAX_CAPACITY < 2^15`.
                    next: AtomicU32::new(next as u32),
                    acquired: AtomicU64::new(0),
                }
            })
            .collect();
        let first = if capacity == 0 { NIL } else { 0 };
        let head = with_top_free(0, first, capacity);

        let shared = Box::new(Shared {
            head: AtomicU64::new(head),
            counters: Counters::default(),
            meta,
            arena,
            alloc,
            alloc_layout,
            capacity,
            slot_size,
            stride,
        });
        Ok(Self {
            shared: NonNull::from(Box::leak(shared)),
        })
    }

    fn shared(&self) -> &Shared {
        // SAFETY: `Shared` is freed only after the pool is closed, and the
        // pool closes in `RawPool::drop`; while `self` exists it is alive.
        unsafe { self.shared.as_ref() }
    }

    /// Slot size in bytes.
    pub(crate) fn slot_size(&self) -> usize {
        self.shared().slot_size
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.shared().capacity
    }

    /// Counts a heap buffer of `len` bytes handed to the pool's users without
    /// going through a slot (see `BufferPool::adopt`).
    pub(crate) fn count_adopted(&self, len: usize) {
        let shared = self.shared();
        let counter = if len > shared.slot_size {
            &shared.counters.too_large
        } else {
            &shared.counters.exhausted
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes a free slot for `len` bytes, or says why it cannot (and counts
    /// the miss). Never blocks; retries only when another thread's CAS won.
    #[inline]
    pub(crate) fn try_acquire(&self, len: usize) -> Result<SlotMut, Miss> {
        let shared = self.shared();
        if len > shared.slot_size {
            shared.counters.too_large.fetch_add(1, Ordering::Relaxed);
            return Err(Miss::TooLarge);
        }
        match take_cached(self.shared) {
            Some(index) => Ok(self.hand_out(index, len)),
            None => self.pop_free(len),
        }
    }

    /// The free-list half of [`try_acquire`](Self::try_acquire), kept out
    /// of line so that the cached path inlines into the caller.
    #[inline(never)]
    fn pop_free(&self, len: usize) -> Result<SlotMut, Miss> {
        let shared = self.shared();
        let mut cur = shared.head.load(Ordering::Acquire);
        let (index, in_use) = loop {
            let index = top(cur);
            // `index` is NIL or < capacity; `get` makes the NIL case (and any
            // impossible out-of-range value) an ordinary miss.
            let Some(meta) = shared.meta.get(index as usize) else {
                shared.counters.exhausted.fetch_add(1, Ordering::Relaxed);
                return Err(Miss::Exhausted);
            };
            let next = u64::from(meta.next.load(Ordering::Relaxed));
            let free = free_count(cur).saturating_sub(1);
            let new = with_top_free(cur, next, free).wrapping_add(TAG_ONE);
            match shared
                .head
                .compare_exchange_weak(cur, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => break (index, shared.capacity - free),
                Err(actual) => cur = actual,
            }
        };

        // Slots off the free list: in use, or parked in some thread's cache.
        // That bounds `in_use` from above at every instant, and only a pop
        // from the free list raises it, so the mark never falls below the
        // true peak (see `PoolStats::high_water`).
        let counters = &shared.counters;
        if in_use > counters.high_water.load(Ordering::Relaxed) {
            counters.high_water.fetch_max(in_use, Ordering::Relaxed);
        }
        // `index < capacity` (it was on the free list): lossless.
        Ok(self.hand_out(index as usize, len))
    }

    /// Builds the exclusive handle for slot `index`, which the caller just
    /// took off the free list or out of this thread's cache.
    #[inline]
    fn hand_out(&self, index: usize, len: usize) -> SlotMut {
        let shared = self.shared();
        // The slot is ours alone until released: plain stores suffice.
        let meta = &shared.meta[index];
        meta.refs.store(1, Ordering::Relaxed);
        let n = meta.acquired.load(Ordering::Relaxed);
        meta.acquired.store(n.wrapping_add(1), Ordering::Relaxed);

        // `index < capacity` and `len <= slot_size <= stride`, so
        // `index * stride + len <= capacity * stride`, the arena size; no
        // overflow (checked in `new`).
        let offset = index * shared.stride;
        // SAFETY: `offset + len <= capacity * stride`, so the slot lies
        // inside the arena, which lies inside the allocation.
        let data = unsafe { shared.arena.add(offset) };
        SlotMut {
            slot: SlotRef {
                shared: self.shared,
                data,
                len,
                index,
            },
        }
    }

    /// Reads all counters with `Relaxed` loads (see the crate's stats docs).
    pub(crate) fn stats(&self) -> RawStats {
        let shared = self.shared();
        let (pooled, in_use) = shared
            .meta
            .iter()
            .fold((0u64, 0usize), |(pooled, in_use), m| {
                let held = m.refs.load(Ordering::Relaxed) != 0;
                (
                    pooled.wrapping_add(m.acquired.load(Ordering::Relaxed)),
                    in_use + usize::from(held),
                )
            });
        RawStats {
            capacity: shared.capacity,
            slot_size: shared.slot_size,
            in_use,
            high_water: shared.counters.high_water.load(Ordering::Relaxed),
            pooled,
            exhausted: shared.counters.exhausted.load(Ordering::Relaxed),
            too_large: shared.counters.too_large.load(Ordering::Relaxed),
        }
    }
}

impl Drop for RawPool {
    fn drop(&mut self) {
        let ptr = self.shared;
        let capacity = self.shared().capacity;
        // Stop threads from parking this pool's slots in their caches, and
        // return the one this thread parked, if any, so that a pool used
        // and dropped on one thread is freed right here. (Another thread may
        // have checked the hint just before and park one slot anyway; it
        // returns it on its next use of a pool or when it exits.)
        self.shared()
            .counters
            .closed_hint
            .store(true, Ordering::Relaxed);
        if let Some(index) = forget_pool(ptr) {
            // SAFETY: the cache owned slot `index` of this pool exclusively
            // and gave it up; the pool is alive (we are its last handle).
            unsafe { push_free(ptr, index) };
        }
        // `AcqRel`: acquire every release's slot accesses in case we free.
        let old = self.shared().head.fetch_or(CLOSED, Ordering::AcqRel);
        if free_count(old) == capacity {
            // SAFETY: we observed "closed and every slot free" (our fetch_or
            // made the pool closed, so nobody saw this state before us), no
            // other `RawPool` exists (the crate holds exactly one, in an
            // `Arc`, and this is its drop) and no slot handle exists, so no
            // one else can reach `Shared`. It came from `Box::leak` in `new`.
            drop(unsafe { Box::from_raw(ptr.as_ptr()) });
        }
    }
}

/// What every slot handle holds. Not a handle itself (no `Drop`).
#[derive(Debug)]
struct SlotRef {
    shared: NonNull<Shared>,
    /// First byte of the slot.
    data: NonNull<u8>,
    /// Length fixed at acquisition, `<= slot_size`.
    len: usize,
    /// Slot index, `< capacity`. A `usize` (not `u32`) so that moving a
    /// handle is whole-word loads and stores: a 4-byte store read back by an
    /// 8-byte load defeats store forwarding and cost ~6 ns per round trip.
    index: usize,
}

impl SlotRef {
    /// A second `SlotRef` to the same slot. Not `Clone`: callers pair it with
    /// a reference count (a clone) or give up the original (a freeze).
    #[inline]
    fn alias(&self) -> SlotRef {
        SlotRef {
            shared: self.shared,
            data: self.data,
            len: self.len,
            index: self.index,
        }
    }

    #[inline]
    fn meta(&self) -> &SlotMeta {
        // SAFETY: a slot handle exists, so its slot is not free, so the pool
        // has not seen "every slot free" and `Shared` is alive.
        let shared = unsafe { self.shared.as_ref() };
        // In range: `index < capacity` by construction in `try_acquire`.
        &shared.meta[self.index]
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        // SAFETY: `data..data+len` lies inside the arena (checked in
        // `try_acquire`), the arena is initialised (allocated zeroed, only
        // ever written with initialised bytes) and alive (see `meta`), and
        // no `&mut` to it exists: a `SlotMut` hands out `&mut` only through
        // `&mut self`, and a `SlotShared` never does.
        unsafe { core::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// Gives the slot back: to this thread's cache if the thread is affine
    /// to the pool (see the module docs), else to the free list, which frees
    /// the pool state if this was the last slot of a closed pool. The handle
    /// must not touch the slot afterwards (callers only call this from
    /// `Drop`, as the last handle of the slot).
    #[inline]
    fn release(&self) {
        let ptr = self.shared;
        // For `stats().in_use`; ordered before any later holder by the
        // free-list CAS, or by program order through the cache.
        self.meta().refs.store(0, Ordering::Relaxed);
        if let Some(index) = keep_or_pass(ptr, self.index) {
            // SAFETY: slot `index` of the pool at `ptr` is free and owned by
            // nobody else: it is either this handle's slot (the last handle,
            // being dropped) or one the cache just gave up, and that pool is
            // alive because the slot is not on its free list yet.
            unsafe { push_free(ptr, index) };
        }
    }
}

/// Pushes slot `index` of the pool at `ptr` on the free list, and frees the
/// pool state if that makes a closed pool's slots all free.
///
/// # Safety
///
/// The slot must be off the free list, and the caller its only owner: no
/// handle to it exists and no cache holds it. (That keeps the pool state
/// alive until the push.) Neither the slot nor `*ptr` may be touched
/// afterwards.
unsafe fn push_free(ptr: NonNull<Shared>, index: usize) {
    // SAFETY: the slot is not free, so the pool has not seen "every slot
    // free" and `Shared` is alive; the reference is not used after the CAS
    // below, after which another thread may free `Shared`.
    let shared = unsafe { ptr.as_ref() };
    let capacity = shared.capacity;
    let meta = &shared.meta[index];
    // Lossless: `index < capacity <= MAX_CAPACITY < 2^15`.
    let index = index as u64;
    let mut cur = shared.head.load(Ordering::Relaxed);
    let new = loop {
        meta.next.store(
            // Lossless: `top` has 15 bits.
            top(cur) as u32,
            Ordering::Relaxed,
        );
        let free = (free_count(cur) + 1).min(capacity);
        let new = with_top_free(cur, index, free);
        match shared
            .head
            .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => break new,
            Err(actual) => cur = actual,
        }
    };
    if is_closed(new) && free_count(new) == capacity {
        // SAFETY: our CAS produced "closed and every slot free", which
        // happens exactly once: no pool handle is left (closed) and no slot
        // handle or cached slot is left (all free), so nobody else can reach
        // `Shared`; `AcqRel` ordered all their accesses before ours. It came
        // from `Box::leak` in `RawPool::new`.
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
    }
}

/// What a thread's cache holds (see "The per-thread cache" in the module
/// docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CacheState {
    /// Nothing cached, no affinity.
    Idle,
    /// The thread last acquired from this pool. Only compared with live
    /// pools' addresses, never dereferenced (the pool may be gone).
    Affine(*const Shared),
    /// Free slot `index` of this pool, owned by the cache: off the free list,
    /// so the pool state is alive while it is here.
    Holding(NonNull<Shared>, usize),
}

/// The thread-local cache; its destructor returns a held slot when the
/// thread exits.
struct ThreadCache(Cell<CacheState>);

impl Drop for ThreadCache {
    fn drop(&mut self) {
        if let CacheState::Holding(ptr, index) = self.0.replace(CacheState::Idle) {
            // SAFETY: the cache owned the slot exclusively and gave it up.
            unsafe { push_free(ptr, index) };
        }
    }
}

cache_thread_local! {
    static CACHE: ThreadCache = ThreadCache(Cell::new(CacheState::Idle));
}

/// Acquisition side: takes this thread's cached slot if it belongs to the
/// pool at `ptr` (a live pool: the caller holds a handle), and makes the
/// thread affine to that pool. A cached slot of another pool goes back to
/// its own pool. `None` when there is nothing to take, including while the
/// thread is exiting.
#[inline]
fn take_cached(ptr: NonNull<Shared>) -> Option<usize> {
    let (mine, foreign) = CACHE
        .try_with(|cache| {
            let state = cache.0.replace(CacheState::Affine(ptr.as_ptr()));
            match state {
                // Equal addresses mean the same pool: a held slot keeps its
                // pool alive, so its address cannot have been reused.
                CacheState::Holding(p, index) if p == ptr => (Some(index), None),
                CacheState::Holding(p, index) => (None, Some((p, index))),
                CacheState::Idle | CacheState::Affine(_) => (None, None),
            }
        })
        .unwrap_or((None, None));
    if let Some((p, index)) = foreign {
        // SAFETY: the cache owned that slot exclusively and gave it up.
        unsafe { push_free(p, index) };
    }
    mine
}

/// Release side, for the last handle of slot `index` of the (live) pool at
/// `ptr`: keeps the slot in this thread's cache if the thread is affine to
/// the pool and the pool is open. Returns the slot the caller must push on
/// the free list of the pool at `ptr`: this one, or the older slot of the
/// same pool it displaced from the cache, or `None`.
#[inline]
fn keep_or_pass(ptr: NonNull<Shared>, index: usize) -> Option<usize> {
    let (pass, foreign) = CACHE
        .try_with(|cache| match cache.0.get() {
            CacheState::Affine(p) if p == ptr.as_ptr().cast_const() && !closed_hint(ptr) => {
                cache.0.set(CacheState::Holding(ptr, index));
                (None, None)
            }
            CacheState::Holding(p, old) if p == ptr && !closed_hint(ptr) => {
                // Keep the most recently used (cache-warm) slot.
                cache.0.set(CacheState::Holding(ptr, index));
                (Some(old), None)
            }
            CacheState::Holding(p, old) if closed_hint(p) => {
                // Do not let a cached slot pin a closed pool any longer (this
                // pool or another one).
                cache.0.set(CacheState::Idle);
                (Some(index), Some((p, old)))
            }
            CacheState::Idle | CacheState::Affine(_) | CacheState::Holding(..) => {
                (Some(index), None)
            }
        })
        .unwrap_or((Some(index), None));
    if let Some((p, old)) = foreign {
        // SAFETY: the cache owned that slot exclusively and gave it up. If
        // `p` is our pool, it cannot be freed by this push: our own slot is
        // not free yet.
        unsafe { push_free(p, old) };
    }
    pass
}

/// Whether the pool at `ptr` (alive: the caller holds one of its slots) has
/// been closed, as far as this thread can tell cheaply.
#[inline]
fn closed_hint(ptr: NonNull<Shared>) -> bool {
    // SAFETY: the caller holds a slot of this pool, which keeps it alive.
    let shared = unsafe { ptr.as_ref() };
    shared.counters.closed_hint.load(Ordering::Relaxed)
}

/// Pool side, when the last handle of the pool at `ptr` is dropped: clears
/// this thread's affinity to it and returns the slot the cache held for it.
fn forget_pool(ptr: NonNull<Shared>) -> Option<usize> {
    CACHE
        .try_with(|cache| match cache.0.get() {
            CacheState::Holding(p, index) if p == ptr => {
                cache.0.set(CacheState::Idle);
                Some(index)
            }
            CacheState::Affine(p) if p == ptr.as_ptr().cast_const() => {
                cache.0.set(CacheState::Idle);
                None
            }
            _ => None,
        })
        .ok()
        .flatten()
}

/// Returns the slot this thread's cache holds, if any, to its pool.
pub(crate) fn flush_thread_cache() {
    let held = CACHE
        .try_with(|cache| match cache.0.get() {
            CacheState::Holding(p, index) => {
                cache.0.set(CacheState::Idle);
                Some((p, index))
            }
            CacheState::Idle | CacheState::Affine(_) => None,
        })
        .ok()
        .flatten();
    if let Some((p, index)) = held {
        // SAFETY: the cache owned the slot exclusively and gave it up.
        unsafe { push_free(p, index) };
    }
}

/// Exclusive handle to one slot; released on drop.
#[derive(Debug)]
pub(crate) struct SlotMut {
    slot: SlotRef,
}

// SAFETY: the handle is the only access path to its slot's bytes; the
// shared state it points to is thread-safe (see `RawPool`).
unsafe impl Send for SlotMut {}
// SAFETY: `&SlotMut` only gives `&[u8]` of its own slot.
unsafe impl Sync for SlotMut {}

impl SlotMut {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slot.len
    }

    pub(crate) fn index(&self) -> usize {
        self.slot.index
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.slot.as_slice()
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `SlotRef::as_slice`; in addition this handle is the
        // only one for the slot (it was popped from the free list and only
        // becomes shared through `freeze`, which consumes it), and the
        // returned borrow is tied to `&mut self`.
        unsafe { core::slice::from_raw_parts_mut(self.slot.data.as_ptr(), self.slot.len) }
    }

    /// Turns exclusive access into shared access (the count is already 1).
    #[inline]
    pub(crate) fn freeze(self) -> SlotShared {
        let this = core::mem::ManuallyDrop::new(self);
        SlotShared {
            slot: this.slot.alias(),
        }
    }
}

impl Drop for SlotMut {
    #[inline]
    fn drop(&mut self) {
        self.slot.release();
    }
}

/// Shared, reference-counted handle to one slot.
#[derive(Debug)]
pub(crate) struct SlotShared {
    slot: SlotRef,
}

// SAFETY: the bytes are only read through shared handles, the count is
// atomic, and the last handle (on whichever thread) releases the slot.
unsafe impl Send for SlotShared {}
// SAFETY: `&SlotShared` only gives `&[u8]`.
unsafe impl Sync for SlotShared {}

impl SlotShared {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slot.len
    }

    pub(crate) fn index(&self) -> usize {
        self.slot.index
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.slot.as_slice()
    }
}

impl Clone for SlotShared {
    fn clone(&self) -> Self {
        let old = self.slot.meta().refs.fetch_add(1, Ordering::Relaxed);
        if old > MAX_REFS {
            // Only reachable by leaking billions of clones; continuing could
            // wrap the count and free a slot still in use.
            std::process::abort();
        }
        Self {
            slot: self.slot.alias(),
        }
    }
}

impl Drop for SlotShared {
    #[inline]
    fn drop(&mut self) {
        let refs = &self.slot.meta().refs;
        // Fast path: a count of 1 means this is the only handle (nobody else
        // can clone it), so no decrement is needed; `Acquire` pairs with the
        // `Release` decrements of handles dropped before.
        if refs.load(Ordering::Acquire) != 1 {
            if refs.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            // Synchronise with every earlier `Release` decrement before the slot is
            // reused: an `Acquire` load of the count our decrement just wrote (it is in
            // the release sequence of each of them). Equivalent to an `Acquire` fence,
            // which `std::sync::Arc` uses, but ThreadSanitizer does not model fences
            // and reported the next holder's writes as racing with this handle's
            // reads; `Arc` itself switches to this load under ThreadSanitizer. On x86
            // it is a plain load.
            let _ = refs.load(Ordering::Acquire);
        }
        self.slot.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_word_fields_round_trip() {
        let w = with_top_free(0, 0x1234, 0x7FFF) | CLOSED;
        assert_eq!(top(w), 0x1234);
        assert_eq!(free_count(w), 0x7FFF);
        assert!(is_closed(w));
        let w2 = with_top_free(w.wrapping_add(TAG_ONE), NIL, 3);
        assert_eq!(top(w2), NIL);
        assert_eq!(free_count(w2), 3);
        assert!(is_closed(w2));
        assert_eq!(w2 >> TAG_SHIFT, 1);
    }

    #[test]
    fn tag_wraps_without_touching_other_fields() {
        let w = with_top_free(u64::MAX, 5, 7);
        let w2 = w.wrapping_add(TAG_ONE);
        assert_eq!(w2 >> TAG_SHIFT, 0);
        assert_eq!(top(w2), 5);
        assert_eq!(free_count(w2), 7);
        assert!(is_closed(w2));
    }

    #[test]
    fn capacity_limit_is_enforced() {
        assert_eq!(
            RawPool::new(MAX_CAPACITY + 1, 8).err(),
            Some(RawNewError::CapacityTooLarge)
        );
        assert_eq!(
            RawPool::new(2, usize::MAX).err(),
            Some(RawNewError::ArenaTooLarge)
        );
        let pool = RawPool::new(MAX_CAPACITY, 0).expect("zero-sized slots");
        assert_eq!(pool.capacity(), MAX_CAPACITY);
    }

    #[test]
    fn free_list_hands_out_every_slot_once_then_misses() {
        let pool = RawPool::new(4, 16).expect("small pool");
        let slots: Vec<SlotMut> = (0..4)
            .map(|_| pool.try_acquire(16).expect("free slot"))
            .collect();
        let mut idx: Vec<usize> = slots.iter().map(SlotMut::index).collect();
        idx.sort_unstable();
        assert_eq!(idx, [0, 1, 2, 3]);
        assert_eq!(pool.try_acquire(1).err(), Some(Miss::Exhausted));
        assert_eq!(pool.try_acquire(17).err(), Some(Miss::TooLarge));
        assert_eq!(pool.stats().in_use, 4);
        drop(slots);
        assert_eq!(pool.stats().in_use, 0);
        // LIFO: a `Vec` drops its elements in order, so slot 3 was released
        // last and comes back first.
        let again = pool.try_acquire(1).expect("free slot");
        assert_eq!(again.index(), 3);
    }

    #[test]
    fn slots_do_not_overlap() {
        let pool = RawPool::new(3, 100).expect("small pool");
        let mut a = pool.try_acquire(100).expect("slot");
        let mut b = pool.try_acquire(100).expect("slot");
        a.as_mut_slice().fill(0xAA);
        b.as_mut_slice().fill(0xBB);
        assert!(a.as_slice().iter().all(|&x| x == 0xAA));
        assert!(b.as_slice().iter().all(|&x| x == 0xBB));
    }

    #[test]
    fn shared_clones_release_once() {
        let pool = RawPool::new(1, 8).expect("small pool");
        let shared = pool.try_acquire(8).expect("slot").freeze();
        let clones: Vec<SlotShared> = (0..5).map(|_| shared.clone()).collect();
        drop(shared);
        assert_eq!(pool.stats().in_use, 1);
        drop(clones);
        assert_eq!(pool.stats().in_use, 0);
        assert!(pool.try_acquire(8).is_ok());
    }

    #[test]
    fn closed_pool_state_outlives_pool_and_is_freed_by_last_slot() {
        let pool = RawPool::new(2, 32).expect("small pool");
        let mut a = pool.try_acquire(32).expect("slot");
        a.as_mut_slice().fill(7);
        let b = a.freeze();
        let c = b.clone();
        drop(pool);
        assert!(c.as_slice().iter().all(|&x| x == 7));
        drop(b);
        assert!(c.as_slice().iter().all(|&x| x == 7));
        drop(c); // frees the state; valgrind/leak checks confirm
    }
}
