//! The synchronisation primitives `raw.rs` is built on: `core`'s atomics and `std`'s
//! thread-local storage, or loom's under `RUSTFLAGS="--cfg loom"`, so that the loom
//! models (`tests/loom.rs`) explore the interleavings of the production code itself
//! rather than of a copy (the approach of tokio's and crossbeam's `loom` shims).

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// `thread_local!` of `std`, or of loom (whose threads are not OS threads, so each needs
/// its own copy of the cache). loom's version has no `const` initialiser.
#[cfg(not(loom))]
macro_rules! cache_thread_local {
    ($(#[$attr:meta])* static $name:ident: $t:ty = $init:expr;) => {
        std::thread_local! { $(#[$attr])* static $name: $t = const { $init }; }
    };
}
#[cfg(loom)]
macro_rules! cache_thread_local {
    ($(#[$attr:meta])* static $name:ident: $t:ty = $init:expr;) => {
        loom::thread_local! { $(#[$attr])* static $name: $t = $init; }
    };
}
pub(crate) use cache_thread_local;
