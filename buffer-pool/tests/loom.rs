//! loom models of the pool's concurrency core: the tagged free list in one `AtomicU64`,
//! the per-slot reference counts, the closing protocol and the one-slot thread cache.
//!
//! Built only with `RUSTFLAGS="--cfg loom"`: `src/sync.rs` then gives `raw.rs` loom's
//! atomics and thread-locals, so loom runs the production code and explores its
//! interleavings (every order in which the threads' atomic operations can happen, and the
//! values a weaker-than-`SeqCst` load may return, up to the preemption bound). Run with
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p sv2c-buffer-pool --test loom --release
//! ```
//!
//! What each model proves, for every interleaving explored:
//! * `acquire_release_race`: two threads acquiring and releasing on a pool of two slots
//!   (a third acquisition falling back to the heap) never hold the same slot at once (each
//!   writes its mark, yields, and must read its own mark back), and every slot is free
//!   again afterwards;
//! * `shared_slot_dropped_on_two_threads`: a frozen buffer cloned to another thread and
//!   dropped on both sides concurrently is released exactly once (the slot is then handed
//!   out again, and the count is 0);
//! * `pool_dropped_while_another_thread_releases`: the last pool handle dropped while
//!   another thread drops the last buffer frees the shared state exactly once, whichever
//!   side is last (a double free or a use after free would crash the model; Miri and
//!   valgrind check the same paths for memory errors);
//! * `thread_cache_hand_back`: a slot parked in an exiting thread's cache goes back to
//!   the free list (the cache's destructor), racing with acquisitions on another thread,
//!   and no slot is lost (the model waits for the exiting thread's destructors, which
//!   loom, unlike std, may run after `join` returns).
//!
//! The models count their iterations (interleavings explored) and print them.
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use loom::thread;
use sv2c_buffer_pool::{BufferPool, PoolBuf};

const SLOT: usize = 64;

/// Runs `f` as a loom model and prints how many interleavings loom explored.
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let before = RUNS.load(Ordering::Relaxed);
    loom::model(move || {
        RUNS.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "{name}: {} interleavings",
        RUNS.load(Ordering::Relaxed) - before
    );
}

/// Writes `mark` over the buffer, lets other threads run, and checks it is still there.
fn hold(pool: &BufferPool, mark: u8) {
    let mut buf = pool.acquire(SLOT);
    buf.fill(mark);
    thread::yield_now();
    assert!(buf.iter().all(|&b| b == mark), "slot handed out twice");
}

#[test]
fn acquire_release_race() {
    model("acquire_release_race", || {
        let pool = BufferPool::new(2, SLOT).unwrap();
        let other = pool.clone();
        let t = thread::spawn(move || {
            hold(&other, 1);
            hold(&other, 2);
        });
        hold(&pool, 3);
        // Two slots, up to three buffers held at once: one comes from the heap.
        let a = pool.acquire(SLOT);
        let b = pool.acquire(SLOT);
        drop((a, b));
        t.join().unwrap();
        BufferPool::flush_thread_cache();
        assert_eq!(pool.stats().in_use, 0, "{:?}", pool.stats());
    });
}

#[test]
fn shared_slot_dropped_on_two_threads() {
    model("shared_slot_dropped_on_two_threads", || {
        let pool = BufferPool::new(1, SLOT).unwrap();
        let mut buf = pool.acquire(SLOT);
        assert!(buf.is_pooled());
        buf.fill(7);
        let shared: PoolBuf = buf.freeze();
        let clone = shared.clone();
        let t = thread::spawn(move || {
            assert!(clone.iter().all(|&b| b == 7));
            drop(clone);
        });
        drop(shared);
        t.join().unwrap();
        BufferPool::flush_thread_cache();
        assert_eq!(pool.stats().in_use, 0);
        // Released exactly once: the one slot is free and handed out again.
        assert!(pool.acquire(SLOT).is_pooled());
    });
}

#[test]
fn pool_dropped_while_another_thread_releases() {
    model("pool_dropped_while_another_thread_releases", || {
        let pool = BufferPool::new(2, SLOT).unwrap();
        let first = pool.acquire(SLOT).freeze();
        let kept = first.clone();
        let second = pool.acquire(SLOT);
        let t = thread::spawn(move || {
            drop(second);
            drop(first);
        });
        // The pool closes while the other thread releases; the last clone goes after.
        drop(pool);
        drop(kept);
        t.join().unwrap();
    });
}

#[test]
fn thread_cache_hand_back() {
    model("thread_cache_hand_back", || {
        let pool = BufferPool::new(1, SLOT).unwrap();
        let other = pool.clone();
        let t = thread::spawn(move || {
            // Acquire and release on this thread: the slot is parked in its cache, and
            // goes back to the free list when the thread exits.
            drop(other.acquire(SLOT));
        });
        // Meanwhile: either the slot (if free) or a heap fallback.
        drop(pool.acquire(SLOT));
        t.join().unwrap();
        BufferPool::flush_thread_cache();
        assert_eq!(pool.stats().in_use, 0, "{:?}", pool.stats());
        // loom lets `join` return before the thread's thread-local destructors have run
        // (std does not), so the slot may still be parked in the exiting thread's cache:
        // let that thread finish, then the slot must be back on the free list.
        let again = loop {
            let buf = pool.acquire(SLOT);
            if buf.is_pooled() {
                break buf;
            }
            drop(buf);
            thread::yield_now();
        };
        assert!(again.is_pooled());
    });
}
