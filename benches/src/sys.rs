//! The crate's only `unsafe` code, for the two things the benchmarks need from below the
//! standard library: a global allocator that counts ([`CountingAlloc`]) and the calling
//! thread's CPU clock ([`thread_cpu_time`]).

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::time::Duration;

use crate::alloc::{CountingAlloc, note};

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the bookkeeping in `note` neither allocates nor unwinds.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's `layout` is passed on as received.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's `layout` is passed on as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (every allocation goes through it) with
        // this `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` and `layout` describe a live `System` allocation, as the caller
        // guarantees; `new_size` is passed on as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// CPU time consumed so far by the calling thread (user and system), from
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`. `None` if the clock is unavailable.
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, which is
    // all `clock_gettime` requires; it does not keep the pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}
