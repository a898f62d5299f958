//! [`SharedBuf`]: an immutable, reference-counted byte buffer whose last owner frees it
//! without an atomic read-modify-write when it is the only owner
//! (docs/adr/0015-shared-buffer-freed-without-atomic.md).
//!
//! One allocation holds a [`BufHeader`] (one atomic counter) followed by the bytes. The
//! bytes are written once, before the buffer is shared, and never again; so the only
//! shared mutable state is the counter.
//!
//! Why not `triomphe::Arc<[u8]>` (what this replaces, ADR 0012): its drop always makes a
//! locked decrement. An owned message's long values are nearly always held by that one
//! message when it is dropped, and on x86 the locked operation also waits for the store
//! buffer to drain, right after the decoder has written the copy and the message. Here the
//! drop first reads the counter; when it is 1, no other owner exists and none can appear
//! (a new owner is made only by cloning an existing one), so the buffer is freed with no
//! write to the counter at all.
//!
//! This is the only `unsafe` code of the crate. It is covered by the unit tests below
//! (run under Miri in CI) and by three loom models of concurrent drops (`--cfg loom`).

use alloc::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;

#[cfg(not(loom))]
use core::sync::atomic::{AtomicUsize, Ordering, fence};
#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering, fence};

/// What precedes the bytes in the allocation.
struct BufHeader {
    /// Number of [`SharedBuf`] values pointing at this allocation.
    count: AtomicUsize,
    /// Under loom: stands for the bytes, so that the model checks every read of them
    /// happens before the free (a read is `with`, the free `with_mut`).
    #[cfg(loom)]
    bytes: loom::cell::UnsafeCell<()>,
}

/// A reference count past this is treated as a leak of clones (as `std::sync::Arc`
/// does): the process aborts rather than let the counter wrap and free a buffer still in
/// use.
const MAX_COUNT: usize = isize::MAX as usize;

/// An immutable byte buffer shared by reference counting; see the module docs.
///
/// Two words: the allocation and the length. Every buffer, even an empty one, has its
/// allocation (callers make empty values without one, see `SharedBytes`), so that no
/// access tests for a missing one.
pub(crate) struct SharedBuf {
    /// The allocation: a `BufHeader`, then `len` bytes.
    ptr: NonNull<BufHeader>,
    len: usize,
}

// SAFETY: the bytes are never written after construction, and the counter is atomic: a
// `SharedBuf` may be sent to, and shared with, any thread, like an `Arc<[u8]>`.
unsafe impl Send for SharedBuf {}
// SAFETY: as above; `&SharedBuf` only reads the bytes, `clone` only increments the counter
// atomically.
unsafe impl Sync for SharedBuf {}

impl SharedBuf {
    /// Offset of the bytes in the allocation, after the header (the bytes' alignment is 1).
    const OFFSET: usize = core::mem::size_of::<BufHeader>();

    /// The layout of an allocation holding `len` bytes.
    #[inline]
    fn layout(len: usize) -> Layout {
        Self::OFFSET
            .checked_add(len)
            .and_then(|size| Layout::from_size_align(size, core::mem::align_of::<BufHeader>()).ok())
            .unwrap_or_else(|| too_long(len))
    }

    /// A buffer of `len` bytes, written by `fill` (which is given them zeroed).
    pub(crate) fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let header = Self::allocate(len);
        // SAFETY: `allocate` returned an allocation of `OFFSET + len` bytes with the bytes
        // at `OFFSET` not yet in use: writing `len` zeroes there is in bounds, and
        // afterwards they are initialised, so the slice is valid; nothing else refers to
        // them while `fill` runs.
        let bytes = unsafe {
            let data = header.as_ptr().cast::<u8>().add(Self::OFFSET);
            data.write_bytes(0, len);
            core::slice::from_raw_parts_mut(data, len)
        };
        fill(bytes);
        SharedBuf { ptr: header, len }
    }

    /// A copy of `bytes` in one new allocation.
    pub(crate) fn copy_from_slice(bytes: &[u8]) -> Self {
        let len = bytes.len();
        let header = Self::allocate(len);
        // SAFETY: the allocation has `OFFSET + len` bytes, the bytes at `OFFSET` are not in
        // use, and they cannot overlap `bytes` (a new allocation).
        unsafe {
            let data = header.as_ptr().cast::<u8>().add(Self::OFFSET);
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, len);
        }
        SharedBuf { ptr: header, len }
    }

    /// A new allocation for `len` bytes with its counter at 1; the bytes (at `OFFSET`) are
    /// uninitialised.
    #[inline]
    fn allocate(len: usize) -> NonNull<BufHeader> {
        let layout = Self::layout(len);
        // SAFETY: the layout's size is not zero (it holds the header).
        let raw = unsafe { alloc(layout) };
        let Some(header) = NonNull::new(raw.cast::<BufHeader>()) else {
            handle_alloc_error(layout);
        };
        // SAFETY: the allocation is suitably aligned and large enough for a `BufHeader` at
        // its start (the layout begins with one); nothing else refers to it yet.
        unsafe {
            header.as_ptr().write(BufHeader {
                count: AtomicUsize::new(1),
                #[cfg(loom)]
                bytes: loom::cell::UnsafeCell::new(()),
            });
        }
        header
    }

    /// The header, while this value keeps the allocation alive.
    #[inline]
    fn header(&self) -> &BufHeader {
        // SAFETY: `ptr` points at an initialised `BufHeader` for as long as any `SharedBuf`
        // for it exists, and this one does for the borrow's lifetime.
        unsafe { self.ptr.as_ref() }
    }

    /// The bytes.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        #[cfg(loom)]
        self.header().bytes.with(|_| ());
        // SAFETY: the allocation holds `len` initialised bytes at `OFFSET` (written before
        // the value was made and never again), alive while `self` is.
        unsafe {
            core::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>().add(Self::OFFSET), self.len)
        }
    }

    /// `true` when no other `SharedBuf` shares the allocation.
    #[cfg(all(test, not(loom)))]
    fn is_unique(&self) -> bool {
        self.header().count.load(Ordering::Acquire) == 1
    }

    /// Frees the allocation. Only called by the last owner.
    #[inline]
    fn free(&mut self) {
        #[cfg(loom)]
        self.header().bytes.with_mut(|_| ());
        // SAFETY: `allocate` made this allocation with exactly this layout (`len` never
        // changes), which was valid then.
        let layout = unsafe {
            Layout::from_size_align_unchecked(
                Self::OFFSET + self.len,
                core::mem::align_of::<BufHeader>(),
            )
        };
        // SAFETY: this is the last owner (the caller checked the counter), so nothing else
        // reads the header or the bytes; the header was written in `allocate` and is
        // dropped once here, then the allocation is returned with the layout it was made
        // with.
        unsafe {
            core::ptr::drop_in_place(self.ptr.as_ptr());
            dealloc(self.ptr.as_ptr().cast::<u8>(), layout);
        }
    }
}

impl Clone for SharedBuf {
    #[inline]
    fn clone(&self) -> Self {
        // Relaxed, as for `Arc`: a new owner is made from an existing one, which keeps the
        // buffer alive meanwhile; nothing is published through this increment.
        let old = self.header().count.fetch_add(1, Ordering::Relaxed);
        if old > MAX_COUNT {
            abort();
        }
        SharedBuf {
            ptr: self.ptr,
            len: self.len,
        }
    }
}

impl Drop for SharedBuf {
    #[inline]
    fn drop(&mut self) {
        let h = self.header();
        // Read first. At 1 this is the only owner: no other `SharedBuf` exists and none can
        // be made (making one needs an owner to clone), so the buffer is freed without
        // writing the counter. The acquire load pairs with the release decrements of the
        // owners dropped before, on any thread, so their reads of the bytes happen before
        // the free.
        if h.count.load(Ordering::Acquire) != 1 {
            // Shared: give up this reference. The release publishes this owner's reads to
            // whichever owner frees; that one's acquire fence (or acquire load above) pairs
            // with it.
            if h.count.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            fence(Ordering::Acquire);
        }
        self.free();
    }
}

impl Deref for SharedBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for SharedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuf").field("len", &self.len).finish()
    }
}

/// A length whose allocation size would overflow `isize`: no slice is that long, so only a
/// caller's arithmetic error gets here.
#[cold]
fn too_long(len: usize) -> ! {
    panic!("SharedBuf: {len} bytes is more than an allocation can hold")
}

/// Aborts the process (a leak of `isize::MAX` clones).
#[cold]
fn abort() -> ! {
    #[cfg(feature = "std")]
    std::process::abort();
    // Without std there is no abort; a panic inside a panic aborts.
    #[cfg(not(feature = "std"))]
    {
        struct PanicOnDrop;
        impl Drop for PanicOnDrop {
            fn drop(&mut self) {
                panic!("SharedBuf: reference count overflow");
            }
        }
        let _guard = PanicOnDrop;
        panic!("SharedBuf: reference count overflow");
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn a_copy_holds_the_bytes_and_is_unique() {
        let data: Vec<u8> = (0..=255).collect();
        let buf = SharedBuf::copy_from_slice(&data);
        assert_eq!(&buf[..], &data[..]);
        assert!(buf.is_unique());
    }

    #[test]
    fn build_gives_fill_zeroed_bytes_of_the_length_asked() {
        let buf = SharedBuf::build(40, |b| {
            assert_eq!(b.len(), 40);
            assert!(b.iter().all(|&x| x == 0));
            b[3] = 7;
            b[39] = 9;
        });
        let mut expected = [0u8; 40];
        expected[3] = 7;
        expected[39] = 9;
        assert_eq!(&buf[..], &expected[..]);
    }

    #[test]
    fn an_empty_buffer_has_no_bytes() {
        assert!(SharedBuf::copy_from_slice(&[]).is_empty());
        assert!(SharedBuf::build(0, |b| assert!(b.is_empty())).is_empty());
    }

    #[test]
    fn clones_share_the_bytes_and_the_last_drop_frees() {
        let a = SharedBuf::copy_from_slice(b"shared by three owners, dropped in any order");
        let b = a.clone();
        let c = b.clone();
        assert_eq!(a.as_slice().as_ptr(), c.as_slice().as_ptr());
        assert!(!a.is_unique());
        drop(b);
        assert!(!a.is_unique());
        drop(a);
        // The survivor is the only owner again: its drop takes the path without an atomic
        // decrement (Miri reports a leak or a use after free if either path is wrong).
        assert!(c.is_unique());
        assert_eq!(&c[..], b"shared by three owners, dropped in any order");
        drop(c);
    }

    #[test]
    fn the_shared_path_frees_once_when_the_last_clone_goes() {
        // Dropped in creation order, so the last owner to drop took the counter from 2 to
        // 1 with the others still alive at each step.
        let owners: Vec<SharedBuf> = {
            let first = SharedBuf::copy_from_slice(&[5u8; 100]);
            (0..8).map(|_| first.clone()).collect()
        };
        for o in owners {
            assert_eq!(&o[..], &[5u8; 100][..]);
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn owners_on_several_threads_read_then_drop() {
        // Each thread reads the bytes and drops its clone while the others do the same; the
        // last drop (on whichever thread) frees. Under Miri this checks that the reads
        // happen before the free (data races) and that the buffer is freed exactly once.
        for round in 0..4u8 {
            let buf = SharedBuf::copy_from_slice(&[round; 64]);
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let mine = buf.clone();
                    std::thread::spawn(move || {
                        let sum: u32 = mine.iter().map(|&x| u32::from(x)).sum();
                        assert_eq!(sum, 64 * u32::from(round));
                        drop(mine);
                    })
                })
                .collect();
            drop(buf);
            for h in handles {
                h.join().expect("a reader thread");
            }
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn a_decoded_message_shares_one_copy_across_clones_and_threads() {
        // The path users run: an owned decode whose long strings are ranges of one shared
        // copy of the payload (`Backing`), that message cloned to another thread, both
        // dropped, in both orders.
        use crate::messages::common::SetupConnection;
        use crate::{Encode, Protocol, Str0255};
        let long = |c: char| Str0255::try_from(std::iter::repeat_n(c, 40).collect::<String>());
        let sent = SetupConnection {
            protocol: Protocol::Mining,
            min_version: 2,
            max_version: 2,
            flags: 1,
            endpoint_host: long('h').expect("40 bytes"),
            endpoint_port: 3333,
            vendor: long('v').expect("40 bytes"),
            hardware_version: Str0255::try_from("short").expect("5 bytes"),
            firmware: long('f').expect("40 bytes"),
            device_id: long('d').expect("40 bytes"),
        };
        let mut payload = Vec::new();
        sent.encode(&mut payload);
        for drop_original_first in [true, false] {
            let got: SetupConnection = crate::from_bytes(&payload).expect("decodes");
            let copy = got.clone();
            let t = std::thread::spawn(move || {
                assert_eq!(copy.vendor.as_bytes(), [b'v'; 40]);
                copy
            });
            if drop_original_first {
                assert_eq!(got, sent);
                drop(got);
                let copy = t.join().expect("the other thread");
                assert_eq!(copy, sent);
            } else {
                let copy = t.join().expect("the other thread");
                drop(copy);
                assert_eq!(got, sent);
            }
        }
    }

    #[test]
    fn debug_shows_the_length_only() {
        let buf = SharedBuf::copy_from_slice(&[1, 2, 3]);
        assert_eq!(alloc::format!("{buf:?}"), "SharedBuf { len: 3 }");
    }
}

/// loom models: `RUSTFLAGS="--cfg loom" cargo test -p sv2c-binary --lib --release loom`.
/// The header's `bytes` cell stands for the data, so loom reports a read of the bytes that
/// does not happen before the free.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::thread;

    #[test]
    fn loom_two_owners_drop_concurrently() {
        loom::model(|| {
            let a = SharedBuf::copy_from_slice(b"0123456789");
            let b = a.clone();
            let t = thread::spawn(move || {
                assert_eq!(b[0], b'0');
                drop(b);
            });
            assert_eq!(a[9], b'9');
            drop(a);
            t.join().expect("the other owner");
        });
    }

    #[test]
    fn loom_a_clone_made_on_another_thread() {
        loom::model(|| {
            let a = SharedBuf::copy_from_slice(b"abc");
            let b = a.clone();
            let t = thread::spawn(move || {
                let c = b.clone();
                drop(b);
                assert_eq!(&c[..], b"abc");
                drop(c);
            });
            assert_eq!(&a[..], b"abc");
            drop(a);
            t.join().expect("the other owner");
        });
    }

    #[test]
    fn loom_three_owners() {
        loom::model(|| {
            let a = SharedBuf::copy_from_slice(b"xyz");
            let b = a.clone();
            let c = a.clone();
            let t1 = thread::spawn(move || {
                assert_eq!(b[1], b'y');
                drop(b);
            });
            let t2 = thread::spawn(move || {
                assert_eq!(c[2], b'z');
                drop(c);
            });
            assert_eq!(a[0], b'x');
            drop(a);
            t1.join().expect("owner 1");
            t2.join().expect("owner 2");
        });
    }
}
