//! A global allocator that tracks the bytes live on the current thread and their peak,
//! so a check can bound what one decode allocated.
//!
//! The module only defines it; every binary that uses the checks registers it:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;
//! ```
//!
//! Counting is per thread (thread-locals), so tests running in parallel threads do not
//! see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator and keeps per-thread live/peak byte counts.
pub struct Tracking;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grow(by: isize) {
    // `try_with`: the thread-locals may already be gone while a thread shuts down.
    let _ = LIVE.try_with(|live| {
        let v = live.get() + by;
        live.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping uses
// const-initialised thread-locals only, so it never allocates or recurses.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size() as isize);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grow(layout.size() as isize);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        grow(-(layout.size() as isize));
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grow(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns its result with the peak of this thread's live heap bytes above
/// the level at the start (0 if `f` allocated nothing).
pub fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    let outer_peak = PEAK.with(|p| p.replace(start));
    let r = f();
    let peak = PEAK.with(Cell::get);
    // Nested calls: keep the enclosing measurement's peak correct.
    PEAK.with(|p| p.set(outer_peak.max(peak)));
    (r, (peak - start).max(0) as usize)
}

/// Panics unless [`Tracking`] is this binary's global allocator (otherwise every
/// measurement would read 0 and the bounds would hold vacuously).
pub fn assert_tracking() {
    let (v, peak) = peak_during(|| std::hint::black_box(Vec::<u8>::with_capacity(64)));
    drop(v);
    assert!(
        peak >= 64,
        "fuzz_checks::alloc::Tracking is not the global allocator"
    );
}
