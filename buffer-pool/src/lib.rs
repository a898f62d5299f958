//! A fixed-capacity, lock-free pool of frame buffers with a counted heap
//! fallback.
//!
//! A [`BufferPool`] owns `capacity` slots of `slot_size` bytes, allocated
//! once. [`BufferPool::acquire`] hands out a writable [`PoolBufMut`] of
//! exactly the requested length; [`PoolBufMut::freeze`] turns it into an
//! immutable, cheaply cloneable [`PoolBuf`]; the last clone to be dropped,
//! on any thread, returns the slot. When no slot is free, or the length
//! exceeds the slot size, the buffer comes from the heap instead and the
//! pool counts why ([`BufferPool::stats`]). Nothing ever blocks or waits.
//!
//! ```
//! use bytes::BufMut;
//! use sv2c_buffer_pool::BufferPool;
//!
//! let pool = BufferPool::new(8, 4096)?;
//!
//! // Decode side: a buffer of exactly the payload length...
//! let mut payload = pool.acquire(5);
//! payload.copy_from_slice(b"hello"); // ...e.g. filled by a socket read
//! let frame = payload.freeze();
//!
//! // Encode side: write through `BufMut`.
//! let mut out = pool.acquire(6);
//! out.put_u16_le(0x0102);
//! out.put_u32_le(7);
//! let out = out.freeze();
//! assert_eq!(&out[..], &[2, 1, 7, 0, 0, 0]);
//!
//! // Frozen buffers are cheap to clone and may be dropped on any thread.
//! let view = frame.clone();
//! std::thread::spawn(move || assert_eq!(&view[..], b"hello"))
//!     .join()
//!     .unwrap();
//! assert_eq!(pool.stats().in_use, 2);
//!
//! // `Bytes` without copying the payload; the slot stays pinned until the
//! // last `Bytes` is gone.
//! let bytes = frame.into_bytes();
//! drop(out);
//! assert_eq!(pool.stats().in_use, 1);
//! drop(bytes);
//! assert_eq!(pool.stats().in_use, 0);
//!
//! // More frames than slots: the pool keeps working and says so.
//! let held: Vec<_> = (0..10).map(|_| pool.acquire(64)).collect();
//! assert_eq!(held.iter().filter(|b| b.is_pooled()).count(), 8);
//! assert_eq!(pool.stats().fallback_exhausted, 2);
//! assert_eq!(pool.stats().high_water, 8);
//! # Ok::<(), sv2c_buffer_pool::PoolError>(())
//! ```
//!
//! # Design
//!
//! ## Slots, free list and ownership
//!
//! The slots are one zeroed allocation (the *arena*), each slot rounded up
//! to a multiple of 64 bytes. Free slots form a Treiber stack of slot
//! indices whose head, the number of free slots, a "closed" flag and an ABA
//! tag share one `AtomicU64`. Acquiring pops the stack with one
//! compare-and-swap; releasing pushes with one. A CAS that loses to another
//! thread is retried at once with the value it read (lock-free, never a
//! wait for another thread to make progress); the stack is LIFO, so the
//! most recently released, cache-warm slot is reused first.
//!
//! A [`PoolBufMut`] is the only handle to its slot, so it may hand out
//! `&mut [u8]`. Freezing keeps the slot and starts a reference count stored
//! in the slot's metadata, set to 1 at acquisition: freezing allocates
//! nothing, cloning is one atomic increment, and dropping the last handle
//! gives the slot back. Dropping a handle whose count reads 1 skips the
//! decrement (nobody else can clone it).
//!
//! ## The per-thread cache
//!
//! Each thread keeps at most one free slot outside the shared stack: the
//! last slot it released of the pool it last acquired from. Its next
//! acquisition from that pool takes it back without any atomic
//! read-modify-write, so a buffer acquired, frozen and dropped on one thread
//! (a decoder handing a frame to a handler on the same task) costs a few
//! plain loads and stores: about 4 ns, less than a `malloc`/`free` pair.
//! A thread only keeps a slot of a pool it acquires from: one that merely
//! drops buffers acquired elsewhere pushes them straight back.
//!
//! The price is that a free slot can sit in a thread's cache while another
//! thread needs it (at most one slot per thread; the other thread then falls
//! back to the heap, counted as exhausted). The slot goes back to the shared
//! stack when its thread exits, next acquires from or releases into another
//! pool, drops the pool's last handle, or calls
//! [`BufferPool::flush_thread_cache`]. A pool whose last handle is dropped
//! on another thread while a slot of it is cached stays allocated until that
//! thread lets the slot go in one of these ways.
//!
//! ## Buffers outliving the pool
//!
//! Buffers do not hold a reference count on the pool (that would be two more
//! atomic operations per buffer). Instead, dropping the last `BufferPool`
//! handle sets the "closed" flag in the head word, and whoever observes
//! "closed and every slot free" frees the arena, either the last handle or
//! the release of the last slot. Both updates are on the same word, so
//! exactly one party sees that state. Dropping the pool never waits for
//! buffers; reading a buffer after its pool is gone is fine.
//!
//! ## Why `unsafe`, and where
//!
//! All `unsafe` code is in one private module, `raw`, with a `// SAFETY:`
//! comment on every block; the rest of the crate is `#![deny(unsafe_code)]`.
//! A pool without `unsafe` is possible: a `crossbeam_queue::ArrayQueue` of
//! `Arc`-wrapped boxed slots, taken on acquire and pushed back on drop, with
//! `Arc::get_mut` to write and a `Weak` to find the pool on release (a strong
//! reference from slot to pool would be a cycle). Its round trip takes five
//! or six atomic read-modify-writes (queue pop, a counter, `get_mut` when
//! writing, `Weak::upgrade`, the drop of the upgraded `Arc`, queue push)
//! instead of two, and on the machine the benchmarks ran on each costs about
//! 5 ns. `benches/pool.rs` keeps that design as a baseline
//! (`safe_arc_queue`): about 40 ns per round trip, against about 4 ns for
//! this pool on one thread (per-thread cache) and about 20 ns across threads
//! (numbers and commands in the crate README).
//!
//! The tests exercise the `unsafe` code with a proptest state machine, a
//! cross-thread stress test and a counting allocator, and the project's CI
//! runs the test binaries under valgrind's memcheck.
//!
//! ## Contents of a fresh buffer
//!
//! Uninitialised memory is never exposed: the arena is allocated zeroed and
//! only ever written with initialised bytes. Zeroing every acquisition,
//! however, costs a `memset` of the length (about 0.5 µs for 64 KiB), which is
//! wasted when the caller overwrites the buffer anyway, as a socket read or
//! an encoder does. So [`BufferPool::acquire`] leaves a pooled buffer's
//! bytes as the previous holder of the slot left them, and
//! [`BufferPool::acquire_zeroed`] zeroes them. Heap fallbacks are always
//! zeroed (a `calloc`).
//!
//! ## Allocations
//!
//! Creating a pool allocates four times (state, slot metadata, arena, the
//! handle's `Arc`). After that:
//!
//! | operation | heap allocations |
//! |---|---|
//! | pooled acquire, write, freeze, clone, drop | 0 |
//! | heap fallback: acquire, write, freeze, drop | 1 (the `len` bytes) |
//! | first clone of a frozen heap fallback | 1 (the `Bytes` shared header) |
//! | [`PoolBuf::into_bytes`] of a pooled buffer | 1 (the `Bytes` owner box) |
//! | [`PoolBuf::into_bytes`] of a heap fallback | 0 |
//!
//! `tests/alloc_count.rs` checks this table with a counting allocator.
//!
//! # Statistics
//!
//! [`BufferPool::stats`] returns a [`PoolStats`]: capacity, slot size, slots
//! in use, high-water mark of slots in use, pooled acquisitions, and heap
//! fallbacks split by reason (exhausted or too large). `in_use` counts the
//! slots whose reference count is not zero, so it costs no counter of its
//! own. Pooled
//! acquisitions are counted per slot by the slot's current holder (a plain
//! store, not a read-modify-write) and summed when read. The high-water mark
//! is raised on pops from the shared stack, to the number of slots off it
//! (in use or cached), and written only when it grows. The fallback counters are atomic
//! increments on the (already slow) heap path. Reads are `Relaxed`; see
//! [`PoolStats`] for what a snapshot taken under concurrency guarantees.
//!
//! # Limits
//!
//! * At most [`BufferPool::MAX_CAPACITY`] (32 767) slots: the head word
//!   holds a 15-bit slot index.
//! * The ABA tag has 33 bits: a stale CAS could only succeed if one thread
//!   stalled between two adjacent instructions while others performed
//!   exactly a multiple of 2^33 (8.6 billion) acquisitions.

#![deny(unsafe_code)]

mod buf;
mod pool;
#[allow(unsafe_code)]
mod raw;
mod stats;
mod sync;

pub use buf::{PoolBuf, PoolBufMut};
pub use pool::{BufferPool, PoolError};
pub use stats::PoolStats;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        assert_send_sync::<BufferPool>();
        assert_send_sync::<PoolBufMut>();
        assert_send_sync::<PoolBuf>();
    }
}

/// The crate README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
