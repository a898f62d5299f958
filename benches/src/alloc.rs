//! A counting global allocator: how many heap allocations, and how many bytes, a piece of
//! code makes.
//!
//! Each benchmark binary installs [`CountingAlloc`] as its `#[global_allocator]` (see
//! [`install_counting_allocator!`](crate::install_counting_allocator)). Counting is off
//! while criterion times code: an allocation then costs one relaxed atomic load more than
//! the system allocator, the same for every implementation measured. [`count`] switches it
//! on around a closure, outside any timed region, and counts only the calling thread's
//! allocations.
//!
//! What is counted: every `alloc`, `alloc_zeroed` and `realloc` call (a `realloc` is an
//! allocation of `new_size` bytes). Frees are not counted: a decode that allocates a
//! temporary and frees it before returning still costs that allocation.
//!
//! The `GlobalAlloc` implementation itself is in the crate's one `unsafe` module (`sys`).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The global allocator of the benchmark binaries: the system allocator, plus counters
/// that [`count`] reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

/// Number of [`count`] calls in progress, on any thread. Zero on the fast path.
static COUNTING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread is inside [`count`].
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// Allocations and bytes counted on this thread.
    static TALLY: Cell<Allocs> = const { Cell::new(Allocs { count: 0, bytes: 0 }) };
}

/// Records one allocation of `bytes` bytes if the current thread is counting. Called by
/// the allocator; never allocates.
#[inline]
pub(crate) fn note(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) == 0 {
        return;
    }
    // `try_with`: during thread teardown the thread-locals may be gone; such allocations
    // are simply not counted. Both cells are const-initialised, so this never allocates.
    if ACTIVE.try_with(Cell::get).unwrap_or(false) {
        let _ = TALLY.try_with(|t| {
            let mut v = t.get();
            v.count += 1;
            v.bytes += bytes as u64;
            t.set(v);
        });
    }
}

/// Heap allocations counted by [`count`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocs {
    /// Number of `alloc`, `alloc_zeroed` and `realloc` calls.
    pub count: u64,
    /// Bytes requested by those calls.
    pub bytes: u64,
}

impl Allocs {
    /// Allocations per operation, when `self` counted `ops` operations.
    pub fn per_op(&self, ops: u64) -> f64 {
        self.count as f64 / ops.max(1) as f64
    }

    /// Bytes per operation, when `self` counted `ops` operations.
    pub fn bytes_per_op(&self, ops: u64) -> f64 {
        self.bytes as f64 / ops.max(1) as f64
    }
}

/// Runs `f` and returns its result with the heap allocations it made on this thread.
///
/// Only meaningful in a binary whose global allocator is [`CountingAlloc`]; elsewhere it
/// always reports zero. Calls must not be nested.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    ACTIVE.with(|a| a.set(true));
    COUNTING.fetch_add(1, Ordering::SeqCst);
    let before = TALLY.with(Cell::get);
    let result = f();
    let after = TALLY.with(Cell::get);
    COUNTING.fetch_sub(1, Ordering::SeqCst);
    ACTIVE.with(|a| a.set(false));
    let allocs = Allocs {
        count: after.count - before.count,
        bytes: after.bytes - before.bytes,
    };
    (result, allocs)
}

/// Installs [`CountingAlloc`] as the global allocator of the binary it is written in.
#[macro_export]
macro_rules! install_counting_allocator {
    () => {
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $crate::alloc::CountingAlloc = $crate::alloc::CountingAlloc;
    };
}
