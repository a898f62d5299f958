//! Heap allocations per operation, counted by a global allocator that
//! counts per thread (so tests running in parallel do not disturb each
//! other). Checks the allocation table in the crate docs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BufMut;
use sv2c_buffer_pool::{BufferPool, PoolBuf};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static FREES: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get() + size as i64));
}

fn note_free(size: usize) {
    let _ = FREES.try_with(|c| c.set(c.get() + 1));
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get() - size as i64));
}

// SAFETY: forwards every call to `System` unchanged; the counters are
// const-initialised thread locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_free(layout.size());
        note_alloc(new_size);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Debug, PartialEq, Eq)]
struct Counts {
    allocs: u64,
    frees: u64,
}

/// Allocations and frees made by `f` on this thread.
fn count<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    let (a0, f0) = (ALLOCS.with(Cell::get), FREES.with(Cell::get));
    let r = f();
    let (a1, f1) = (ALLOCS.with(Cell::get), FREES.with(Cell::get));
    (
        r,
        Counts {
            allocs: a1 - a0,
            frees: f1 - f0,
        },
    )
}

fn counts(allocs: u64, frees: u64) -> Counts {
    Counts { allocs, frees }
}

/// Acquire, write through `DerefMut` and `BufMut`, freeze, clone, drop.
fn round_trip(pool: &BufferPool, len: usize) -> bool {
    let mut buf = pool.acquire(len);
    buf[..4].copy_from_slice(&[1, 2, 3, 4]);
    buf.put_u32_le(0xA1B2_C3D4);
    let pooled = buf.is_pooled();
    let frozen = buf.freeze();
    let clone = frozen.clone();
    assert_eq!(&clone[..4], &[0xD4, 0xC3, 0xB2, 0xA1]);
    drop(frozen);
    drop(clone);
    pooled
}

#[test]
fn pooled_round_trips_allocate_nothing() {
    let pool = BufferPool::new(8, 4096).expect("pool");
    // Under Miri, 100 round trips: after the first, every one takes the same
    // path (this thread's cached slot), so more only repeat what Miri has
    // already checked; 10 000 took about 2 minutes of Miri's time.
    let round_trips = if cfg!(miri) { 100 } else { 10_000 };
    let (all_pooled, c) = count(|| (0..round_trips).all(|i| round_trip(&pool, 4 + i % 4000)));
    assert!(all_pooled);
    assert_eq!(c, counts(0, 0));

    // Also with several buffers alive at once, and the statistics read.
    let (_, c) = count(|| {
        let held: Vec<PoolBuf> = (0..7).map(|_| pool.acquire(100).freeze()).collect();
        let s = pool.stats();
        assert_eq!(s.in_use, 7);
        held
    });
    // The only allocation is the `Vec` holding them.
    assert_eq!(c, counts(1, 0));
}

#[test]
fn a_fallback_allocates_exactly_its_bytes() {
    let pool = BufferPool::new(1, 64).expect("pool");
    let _held = pool.acquire(64);
    // Exhausted: the `len` bytes, nothing else; the clone of a `Bytes` made
    // from a `Vec` allocates its shared header once.
    let (pooled, c) = count(|| round_trip(&pool, 64));
    assert!(!pooled);
    assert_eq!(c, counts(2, 2));
    let (_, c) = count(|| {
        let mut buf = pool.acquire(64);
        buf.put_slice(&[7; 64]);
        drop(buf.freeze());
    });
    assert_eq!(c, counts(1, 1));
    // Too large: the same.
    let (_, c) = count(|| drop(pool.acquire(65).freeze()));
    assert_eq!(c, counts(1, 1));
    let s = pool.stats();
    assert_eq!((s.fallback_exhausted, s.fallback_too_large), (2, 1));
}

#[test]
fn into_bytes_costs_one_allocation_for_pooled_none_for_heap() {
    let pool = BufferPool::new(1, 64).expect("pool");
    let (_, c) = count(|| {
        let bytes = pool.acquire(10).freeze().into_bytes();
        let slice = bytes.slice(2..);
        drop(bytes);
        drop(slice);
    });
    assert_eq!(c, counts(1, 1));
    assert_eq!(pool.stats().in_use, 0);

    let (_, c) = count(|| drop(pool.acquire(100).freeze().into_bytes()));
    assert_eq!(c, counts(1, 1), "only the fallback's own bytes");
}

#[test]
fn creating_a_pool_allocates_four_times_and_everything_is_freed() {
    let live0 = LIVE_BYTES.with(Cell::get);
    let (pool, c) = count(|| BufferPool::new(4, 1000).expect("pool"));
    assert_eq!(c, counts(4, 0));
    let clone = pool.clone();

    // Buffers outlive the pool: the last buffer frees the arena.
    let a = pool.acquire(10).freeze();
    let b = a.clone();
    let w = pool.acquire(1000);
    drop((pool, clone));
    assert!(LIVE_BYTES.with(Cell::get) > live0, "arena kept alive");
    drop((a, w));
    assert!(LIVE_BYTES.with(Cell::get) > live0, "arena kept alive");
    let (_, c) = count(|| drop(b));
    // The handles' `Arc` went with the handles; the state, the slot
    // metadata and the arena go with the last buffer.
    assert_eq!(c, counts(0, 3), "the last buffer frees the pool");
    assert_eq!(LIVE_BYTES.with(Cell::get), live0);

    // Closing a pool with no buffer out frees it at once.
    let pool = BufferPool::new(2, 10).expect("pool");
    let (_, c) = count(|| drop(pool));
    assert_eq!(c, counts(0, 4));
    assert_eq!(LIVE_BYTES.with(Cell::get), live0);
}
