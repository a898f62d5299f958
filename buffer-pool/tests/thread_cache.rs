//! The per-thread slot cache: which thread keeps a free slot, when it gives
//! it back, and that a pool whose slot sits in some thread's cache is still
//! freed (exactly once) when that cache lets go.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::thread;

use sv2c_buffer_pool::BufferPool;

/// Counts frees of each tracked arena size (one size per test, so tests
/// running in parallel do not see each other's pools).
struct ArenaFrees;

const TRACKED: [usize; 5] = [
    arena_bytes(1, 100_032),
    arena_bytes(1, 100_096),
    arena_bytes(1, 100_160),
    arena_bytes(1, 100_224),
    arena_bytes(2, 100_288),
];
static FREED: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// Size of the arena allocation of a pool of `capacity` slots of
/// `slot_size` bytes (a multiple of 64 here): the slots plus 64 bytes used
/// to align them.
const fn arena_bytes(capacity: usize, slot_size: usize) -> usize {
    capacity * slot_size + 64
}

fn freed(which: usize) -> usize {
    FREED[which].load(Ordering::SeqCst)
}

// SAFETY: forwards every call to `System` unchanged; counting touches only
// static atomics.
unsafe impl GlobalAlloc for ArenaFrees {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(i) = TRACKED.iter().position(|&n| n == layout.size()) {
            FREED[i].fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: ArenaFrees = ArenaFrees;

fn pooled_elsewhere(pool: &BufferPool) -> bool {
    let pool = pool.clone();
    thread::spawn(move || pool.acquire(8).is_pooled())
        .join()
        .expect("thread")
}

#[test]
fn a_thread_keeps_its_last_slot_until_it_flushes() {
    let pool = BufferPool::new(1, 64).expect("pool");
    drop(pool.acquire(8));
    let s = pool.stats();
    assert_eq!((s.in_use, s.pooled, s.high_water), (0, 1, 1));

    // The one slot is parked in this thread's cache: another thread
    // finds none free and falls back to the heap (and it is counted).
    assert!(!pooled_elsewhere(&pool));
    assert_eq!(pool.stats().fallback_exhausted, 1);

    // This thread gets it back without touching the free list.
    let again = pool.acquire(8);
    assert!(again.is_pooled());
    assert_eq!(pool.stats().in_use, 1);
    drop(again);

    BufferPool::flush_thread_cache();
    assert!(pooled_elsewhere(&pool));
    let s = pool.stats();
    assert_eq!((s.in_use, s.pooled, s.fallback_exhausted), (0, 3, 1));
}

#[test]
fn a_thread_that_only_drops_buffers_keeps_none() {
    let pool = BufferPool::new(2, 64).expect("pool");
    let bufs = vec![pool.acquire(8).freeze(), pool.acquire(8).freeze()];
    let (done_tx, done_rx) = channel();
    let (exit_tx, exit_rx) = channel::<()>();
    let dropper = thread::spawn(move || {
        drop(bufs);
        done_tx.send(()).expect("main waits");
        // Stay alive: a cached slot would only come back at thread exit.
        exit_rx.recv().expect("main says when");
    });
    done_rx.recv().expect("dropper ran");
    let again = [pool.acquire(8), pool.acquire(8)];
    assert!(again.iter().all(|b| b.is_pooled()));
    assert_eq!(pool.stats().fallback_exhausted, 0);
    exit_tx.send(()).expect("dropper waits");
    dropper.join().expect("dropper");
}

#[test]
fn thread_exit_returns_the_cached_slot() {
    let pool = BufferPool::new(1, 64).expect("pool");
    let worker = pool.clone();
    thread::spawn(move || {
        drop(worker.acquire(8));
        assert_eq!(worker.stats().in_use, 0);
    })
    .join()
    .expect("worker");
    let buf = pool.acquire(8);
    assert!(buf.is_pooled(), "the exiting thread gave its slot back");
}

#[test]
fn using_another_pool_returns_the_cached_slot() {
    let first = BufferPool::new(1, 64).expect("pool");
    let second = BufferPool::new(1, 64).expect("pool");
    let (first2, second2) = (first.clone(), second.clone());
    let (tx, rx) = channel();
    let (exit_tx, exit_rx) = channel::<()>();
    let worker = thread::spawn(move || {
        drop(first2.acquire(8)); // parks first's slot
        drop(second2.acquire(8)); // returns it, parks second's
        tx.send(()).expect("main waits");
        exit_rx.recv().expect("main says when");
    });
    rx.recv().expect("worker ran");
    assert!(first.acquire(8).is_pooled());
    assert!(!second.acquire(8).is_pooled(), "still parked in the worker");
    exit_tx.send(()).expect("worker waits");
    worker.join().expect("worker");
    assert!(second.acquire(8).is_pooled());
}

#[test]
fn a_pool_dropped_on_the_caching_thread_is_freed_at_once() {
    let pool = BufferPool::new(1, 100_032).expect("pool");
    drop(pool.acquire(8).freeze());
    assert_eq!(freed(0), 0);
    drop(pool);
    assert_eq!(freed(0), 1);
}

/// Runs `before` on a new thread with a handle of `pool`, which the thread
/// then drops; then this thread drops the last handle (closing the pool),
/// and `after` runs on the other thread with what `before` returned.
fn close_while_thread_holds<T>(
    pool: BufferPool,
    before: impl FnOnce(&BufferPool) -> T + Send + 'static,
    after: impl FnOnce(T) + Send + 'static,
) {
    let (ready_tx, ready_rx) = channel();
    let (closed_tx, closed_rx) = channel::<()>();
    let worker_pool = pool.clone();
    let worker = thread::spawn(move || {
        let state = before(&worker_pool);
        drop(worker_pool);
        ready_tx.send(()).expect("main waits");
        closed_rx.recv().expect("main closed the pool");
        after(state);
    });
    ready_rx.recv().expect("worker ready");
    drop(pool);
    closed_tx.send(()).expect("worker waits");
    worker.join().expect("worker");
}

#[test]
fn a_pool_dropped_elsewhere_is_freed_when_the_cache_lets_go() {
    let pool = BufferPool::new(1, 100_096).expect("pool");
    let other = BufferPool::new(1, 64).expect("pool");
    close_while_thread_holds(
        pool,
        |pool| drop(pool.acquire(8)), // parked in the worker's cache
        move |()| {
            // Closed and every slot free except the parked one: not freed yet.
            assert_eq!(freed(1), 0);
            // Any use of another pool lets the parked slot go, which frees it.
            drop(other.acquire(8));
            assert_eq!(freed(1), 1);
        },
    );
    assert_eq!(freed(1), 1, "freed exactly once");
}

#[test]
fn thread_exit_frees_a_pool_it_was_the_last_to_hold() {
    let pool = BufferPool::new(1, 100_160).expect("pool");
    close_while_thread_holds(
        pool,
        |pool| drop(pool.acquire(8)),
        |()| {
            assert_eq!(freed(2), 0);
        },
    );
    assert_eq!(freed(2), 1, "the worker's cache freed it at thread exit");
}

#[test]
fn a_closed_pool_slot_is_not_parked() {
    let pool = BufferPool::new(1, 100_224).expect("pool");
    close_while_thread_holds(
        pool,
        |pool| pool.acquire(8), // the worker is now affine to the pool
        |buf| {
            assert_eq!(freed(3), 0);
            drop(buf); // the pool is closed: straight to its free list, which frees it
            assert_eq!(freed(3), 1);
        },
    );
}

#[test]
fn a_release_into_a_closed_pool_also_lets_its_parked_slot_go() {
    let pool = BufferPool::new(2, 100_288).expect("pool");
    close_while_thread_holds(
        pool,
        |pool| {
            let (a, b) = (pool.acquire(8), pool.acquire(8));
            drop(a); // parked
            b
        },
        |b| {
            assert_eq!(freed(4), 0);
            drop(b); // closed: both this slot and the parked one go back
            assert_eq!(freed(4), 1);
        },
    );
}

#[test]
fn shared_clones_dropped_across_threads_park_on_the_last_one() {
    let pool = BufferPool::new(2, 64).expect("pool");
    let frozen = pool.acquire(8).freeze();
    let clones: Vec<_> = (0..4).map(|_| frozen.clone()).collect();
    thread::spawn(move || drop(clones)).join().expect("thread");
    assert_eq!(
        pool.stats().in_use,
        1,
        "this thread's handle still holds it"
    );
    drop(frozen); // last handle, on the acquiring thread: parked
    assert_eq!(pool.stats().in_use, 0);
    let both = [pool.acquire(8), pool.acquire(8)];
    assert!(both.iter().all(|b| b.is_pooled()));
}
