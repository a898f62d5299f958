//! [`SharedBuf`]: an immutable, reference-counted byte buffer whose last owner frees it
//! without an atomic read-modify-write when it is the only owner
//! (docs/adr/0015-shared-buffer-freed-without-atomic.md).
//!
//! One allocation holds a [`BufHeader`] (one atomic counter and the room) followed by the
//! bytes. The bytes are written once, before the buffer is shared, and never again; so the
//! only shared mutable state is the counter.
//!
//! Why not `triomphe::Arc<[u8]>` (what this replaces, ADR 0012): its drop always makes a
//! locked decrement. An owned message's long values are nearly always held by that one
//! message when it is dropped, and on x86 the locked operation also waits for the store
//! buffer to drain, right after the decoder has written the copy and the message. Here the
//! drop first reads the counter; when it is 1, no other owner exists and none can appear
//! (a new owner is made only by cloning an existing one), so the buffer is freed with no
//! write to the counter at all.
//!
//! The last owner does not free the allocation at once: with `std`, it parks it in a
//! one-slot per-thread cache, and the next buffer this thread makes takes it if it fits
//! ([`cache`], docs/adr/0016-one-parked-allocation-per-thread.md), so that a loop of decodes
//! and drops makes no call to the allocator.
//!
//! This module, `handoff` (ADR 0017) and `short_put` (ADR 0018) hold the crate's only
//! `unsafe` code. This one is covered by the unit tests below (run under Miri in CI) and by
//! three loom models of concurrent drops (`--cfg loom`).

use alloc::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use core::fmt;
use core::mem::MaybeUninit;
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
    /// How many bytes the allocation has room for after the header (at least the length
    /// of any buffer using it; more when a parked allocation was reused).
    cap: usize,
    /// Under loom: stands for the bytes, so that the model checks every read of them
    /// happens before the free (a read is `with`, the free `with_mut`).
    #[cfg(loom)]
    bytes: loom::cell::UnsafeCell<()>,
}

/// Appends byte strings to a buffer being built ([`SharedBuf::build_packed`]), in its
/// memory as allocated, without zero-filling it first. Hidden plumbing for
/// [`WireRef::pack_long_values`](crate::WireRef::pack_long_values).
#[doc(hidden)]
pub struct Packer<'o> {
    /// The buffer's bytes; `out[..at]` are written.
    out: &'o mut [MaybeUninit<u8>],
    at: usize,
}

impl Packer<'_> {
    /// Appends `bytes`; `None`, with nothing written, if they do not fit in what is left.
    #[inline]
    pub fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.at.checked_add(bytes.len())?;
        for (slot, &b) in self.out.get_mut(self.at..end)?.iter_mut().zip(bytes) {
            slot.write(b);
        }
        self.at = end;
        Some(())
    }
}

impl fmt::Debug for Packer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packer")
            .field("len", &self.out.len())
            .field("written", &self.at)
            .finish()
    }
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

    /// The layout of an allocation with room for `cap` bytes.
    #[inline]
    fn layout(cap: usize) -> Layout {
        Self::OFFSET
            .checked_add(cap)
            .and_then(|size| Layout::from_size_align(size, core::mem::align_of::<BufHeader>()).ok())
            .unwrap_or_else(|| too_long(cap))
    }

    /// A buffer of `len` bytes, written by `fill` (which is given them zeroed).
    pub(crate) fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let header = Self::allocate(len);
        // SAFETY: `allocate` returned an allocation with room for at least `len` bytes at
        // `OFFSET`, not in use by anything else: writing `len` zeroes there is in bounds,
        // and afterwards they are initialised, so the slice is valid; nothing else refers
        // to them while `fill` runs.
        let bytes = unsafe {
            let data = header.as_ptr().cast::<u8>().add(Self::OFFSET);
            data.write_bytes(0, len);
            core::slice::from_raw_parts_mut(data, len)
        };
        fill(bytes);
        SharedBuf { ptr: header, len }
    }

    /// A buffer of `len` bytes written end to end by `fill` through a [`Packer`], with no
    /// zero-filling first; the bytes `fill` did not write are zeroed afterwards. Also
    /// returns whether `fill` wrote all `len` bytes.
    pub(crate) fn build_packed(len: usize, fill: impl FnOnce(&mut Packer<'_>)) -> (Self, bool) {
        let header = Self::allocate(len);
        // SAFETY: `allocate` returned an allocation with room for at least `len` bytes at
        // `OFFSET`, not in use by anything else; viewing them as `MaybeUninit<u8>` claims
        // nothing about their contents, and nothing else refers to them while the slice
        // lives.
        let out = unsafe {
            let data = header.as_ptr().cast::<u8>().add(Self::OFFSET);
            core::slice::from_raw_parts_mut(data.cast::<MaybeUninit<u8>>(), len)
        };
        let mut packer = Packer { out, at: 0 };
        fill(&mut packer);
        let Packer { out, at } = packer;
        // `out[..at]` was written by `Packer::put` (the only code that moves `at`); the
        // rest is zeroed here, so every byte of the buffer is initialised from now on.
        for b in out.get_mut(at..).unwrap_or_default() {
            b.write(0);
        }
        (SharedBuf { ptr: header, len }, at == len)
    }

    /// A copy of `bytes` in one allocation of its own.
    pub(crate) fn copy_from_slice(bytes: &[u8]) -> Self {
        let len = bytes.len();
        let header = Self::allocate(len);
        // SAFETY: the allocation has room for at least `len` bytes at `OFFSET`, not in use
        // by anything else, and they cannot overlap `bytes` (which a live borrow keeps
        // alive, while the allocation was either new or parked with no owner).
        unsafe {
            let data = header.as_ptr().cast::<u8>().add(Self::OFFSET);
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, len);
        }
        SharedBuf { ptr: header, len }
    }

    /// An allocation with room for at least `len` bytes and its counter at 1: the one
    /// this thread parked last if it fits (see [`cache`]), else a new one. The bytes (at
    /// `OFFSET`) are uninitialised as far as the caller knows.
    #[inline]
    fn allocate(len: usize) -> NonNull<BufHeader> {
        #[cfg(all(feature = "std", not(loom)))]
        if let Some(header) = cache::take(len) {
            // SAFETY: a parked allocation has no owner and an initialised header
            // (`cache::take`); this thread now has it alone. Its counter was left at 1 (the
            // last owner was alone) or 0 (the last of several); this buffer is its owner.
            unsafe { header.as_ref().count.store(1, Ordering::Relaxed) };
            return header;
        }
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
                cap: len,
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

    /// Gives the allocation back: parks it in this thread's cache, or frees it. Only
    /// called by the last owner.
    #[inline]
    fn free(&mut self) {
        #[cfg(loom)]
        self.header().bytes.with_mut(|_| ());
        #[cfg(all(feature = "std", not(loom)))]
        let header = match cache::park(self.ptr) {
            None => return,
            Some(other) => other,
        };
        #[cfg(not(all(feature = "std", not(loom))))]
        let header = self.ptr;
        // SAFETY: `header` has no owner left (this was the last one, the caller checked
        // the counter; or it was parked, which took it from its last owner) and was made
        // by `allocate`.
        unsafe { release(header) }
    }
}

/// Drops the header of an allocation made by [`SharedBuf::allocate`] and returns it to
/// the allocator.
///
/// # Safety
///
/// No [`SharedBuf`] refers to `header` any more, nothing else reads it, and it is not
/// parked.
unsafe fn release(header: NonNull<BufHeader>) {
    // SAFETY: the caller's contract: the header is initialised and nothing else uses it.
    let cap = unsafe { (*header.as_ptr()).cap };
    // SAFETY: `allocate` made this allocation with this layout (`cap` never changes),
    // which was valid then.
    let layout = unsafe {
        Layout::from_size_align_unchecked(
            SharedBuf::OFFSET + cap,
            core::mem::align_of::<BufHeader>(),
        )
    };
    // SAFETY: the header was written in `allocate` and is dropped once here, then the
    // allocation is returned with the layout it was made with.
    unsafe {
        core::ptr::drop_in_place(header.as_ptr());
        dealloc(header.as_ptr().cast::<u8>(), layout);
    }
}

impl SharedBuf {
    /// [`clone`](Clone::clone) without the atomic read-modify-write: the counter is read,
    /// then written one higher (docs/adr/0022-clones-counted-before-the-message-leaves.md).
    ///
    /// For the copy a decode has just made. A locked increment on x86 waits until every
    /// earlier store has left the store buffer, and right after the `memcpy` of the frame
    /// into this buffer those are many: measured, the owned decodes that hand out two or
    /// more references to the copy took 5 to 24 % less time with this.
    ///
    /// # Safety
    ///
    /// No other thread may clone or drop a `SharedBuf` of this allocation while this runs:
    /// every owner of it must be on this thread (none sent or shared elsewhere yet).
    /// Otherwise that thread's change to the counter could be lost, and the buffer freed
    /// while in use.
    #[inline]
    pub(crate) unsafe fn clone_local(&self) -> Self {
        let count = &self.header().count;
        // Relaxed: the caller guarantees no other thread touches the counter meanwhile,
        // and whatever later hands an owner to another thread synchronises with it.
        let old = count.load(Ordering::Relaxed);
        if old > MAX_COUNT {
            abort();
        }
        count.store(old + 1, Ordering::Relaxed);
        SharedBuf {
            ptr: self.ptr,
            len: self.len,
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

/// How much more room than twice the length asked a parked allocation may have and still
/// be reused (see [`fits`]), so that short values can share rooms.
#[cfg(all(feature = "std", not(loom)))]
const SLACK: usize = 64;

/// The largest room (bytes after the header) of an allocation that may be parked: at most
/// this much, plus the header, stays allocated per thread between messages.
#[cfg(all(feature = "std", not(loom)))]
const MAX_PARKED: usize = 4096;

/// Whether an allocation with room `cap` may serve a buffer of `len` bytes: it has the
/// room, and no more than about twice what is asked, so that a short value never pins a
/// much larger allocation for as long as its message lives.
#[cfg(all(feature = "std", not(loom)))]
#[inline]
fn fits(cap: usize, len: usize) -> bool {
    len <= cap && cap <= 2 * len + SLACK
}

/// The per-thread cache of one free allocation
/// (docs/adr/0016-one-parked-allocation-per-thread.md).
///
/// A decoded message is usually dropped on the thread that decoded the next one. The
/// last owner of a buffer parks its allocation here instead of freeing it, and the next
/// buffer made on this thread takes it if it [`fits`], so a decode-and-drop loop makes no
/// call to the allocator. One allocation per thread at most, of at most [`MAX_PARKED`]
/// bytes; the newest one parked wins (the one it displaces is freed), and the thread's
/// exit frees it. Without `std` (no thread-locals) and under loom (whose models check
/// the counter, not this) every allocation is freed at once.
#[cfg(all(feature = "std", not(loom)))]
mod cache {
    use super::{BufHeader, MAX_PARKED, fits, release};
    use core::cell::Cell;
    use core::ptr::NonNull;

    /// This thread's parked allocation: no [`super::SharedBuf`] refers to it.
    struct Parked(Cell<Option<NonNull<BufHeader>>>);

    impl Parked {
        /// Frees the parked allocation, if any.
        fn empty(&self) {
            if let Some(header) = self.0.take() {
                // SAFETY: a parked allocation has no owner and is no longer parked.
                unsafe { release(header) }
            }
        }
    }

    impl Drop for Parked {
        fn drop(&mut self) {
            self.empty();
        }
    }

    std::thread_local! {
        static PARKED: Parked = const { Parked(Cell::new(None)) };
    }

    /// The parked allocation, unparked, if it fits `len` bytes.
    #[inline]
    pub(super) fn take(len: usize) -> Option<NonNull<BufHeader>> {
        PARKED
            .try_with(|p| {
                let header = p.0.get()?;
                // SAFETY: a parked header is initialised and only this thread's cache
                // refers to it.
                let cap = unsafe { (*header.as_ptr()).cap };
                if fits(cap, len) {
                    p.0.set(None);
                    Some(header)
                } else {
                    None
                }
            })
            .ok()
            .flatten()
    }

    /// Frees this thread's parked allocation, if any.
    pub(super) fn flush() {
        // Nothing to do once the thread's cache is gone (the thread is exiting).
        let _ = PARKED.try_with(Parked::empty);
    }

    /// Parks `header`, which has no owner left. Returns the allocation the caller must
    /// free: the one this displaced, or `header` itself when it is too large to park or
    /// the thread's cache is gone (the thread is exiting).
    #[inline]
    pub(super) fn park(header: NonNull<BufHeader>) -> Option<NonNull<BufHeader>> {
        // SAFETY: the caller's contract: the header is initialised, and its last owner is
        // the caller.
        let cap = unsafe { (*header.as_ptr()).cap };
        if cap > MAX_PARKED {
            return Some(header);
        }
        PARKED
            .try_with(|p| p.0.replace(Some(header)))
            .unwrap_or(Some(header))
    }
}

/// Frees the allocation this thread keeps for the next owned value it decodes, if any.
///
/// An owned message copies its values longer than [`SharedBytes::INLINE_CAP`] bytes into one
/// allocation of its own. When the last value sharing it is dropped, the thread keeps
/// that allocation (at most one per thread, of at most 4 KiB) and gives it to the next one
/// it needs, if it is long enough and no more than about twice as long: a loop that
/// decodes, handles and drops messages makes no call to the allocator for them
/// (docs/adr/0016-one-parked-allocation-per-thread.md). The thread's exit frees it.
///
/// Call this on a thread that will decode nothing for a long time, to give the memory
/// back now, or before counting allocations, to start from none kept. Without the `std`
/// feature nothing is kept, and there is no such function.
///
/// ```
/// use sv2c_binary::MessageSet;
/// use sv2c_binary::messages::Message;
///
/// // An UpdateChannelError (mining, type 0x17) whose error code is 40 bytes long: too
/// // long to be stored inline, so the owned message copies it.
/// let mut payload = vec![1, 0, 0, 0, 40];
/// payload.extend_from_slice(&[b'x'; 40]);
/// let message = Message::decode_message(0, 0x17, &payload)?;
/// assert!(matches!(&message, Message::UpdateChannelError(m) if m.error_code.len() == 40));
/// drop(message); // this thread keeps the copy's allocation
/// sv2c_binary::flush_thread_cache(); // and now gives it back
/// # Ok::<(), sv2c_binary::DispatchError>(())
/// ```
///
/// [`SharedBytes::INLINE_CAP`]: crate::SharedBytes::INLINE_CAP
#[cfg(all(feature = "std", not(loom)))]
pub fn flush_thread_cache() {
    cache::flush();
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

    /// `build_packed` hands out uninitialised memory: what `put` wrote is there, in order,
    /// what it did not write reads as zeroes (Miri checks no uninitialised byte is read),
    /// and a `put` that does not fit writes nothing.
    #[test]
    fn build_packed_writes_what_was_put_and_zeroes_the_rest() {
        let (buf, full) = SharedBuf::build_packed(10, |p| {
            assert_eq!(p.put(&[1, 2, 3]), Some(()));
            assert_eq!(p.put(&[4; 8]), None, "8 more do not fit in 7");
            assert_eq!(p.put(&[]), Some(()));
            assert_eq!(p.put(&[5, 6]), Some(()));
        });
        assert!(!full);
        assert_eq!(&buf[..], &[1, 2, 3, 5, 6, 0, 0, 0, 0, 0]);
        let (buf, full) = SharedBuf::build_packed(5, |p| {
            assert_eq!(p.put(&[9; 2]), Some(()));
            assert_eq!(p.put(&[8; 3]), Some(()));
            assert_eq!(p.put(&[7]), None);
        });
        assert!(full);
        assert_eq!(&buf[..], &[9, 9, 8, 8, 8]);
        assert!(buf.is_unique());
        // Nothing put at all: all zeroes; and an empty buffer is full at once.
        let (buf, full) = SharedBuf::build_packed(64, |_| {});
        assert!(!full);
        assert!(buf.iter().all(|&b| b == 0));
        let (buf, full) = SharedBuf::build_packed(0, |p| assert_eq!(p.put(&[1]), None));
        assert!(full && buf.is_empty());
        // A parked allocation (with old bytes in it) is reused the same way.
        drop(SharedBuf::copy_from_slice(&[0xaa; 100]));
        let (buf, _) = SharedBuf::build_packed(90, |p| {
            p.put(&[1; 30]);
        });
        assert!(buf[..30].iter().all(|&b| b == 1) && buf[30..].iter().all(|&b| b == 0));
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
    fn local_clones_count_like_clones_and_may_leave_the_thread_afterwards() {
        let a = SharedBuf::copy_from_slice(b"one copy, three owners counted without a lock");
        // SAFETY: `a` was just made here; no owner of it is on another thread.
        let b = unsafe { a.clone_local() };
        // SAFETY: as above: `a` and `b` are both on this thread.
        let c = unsafe { b.clone_local() };
        assert_eq!(a.header().count.load(Ordering::Relaxed), 3);
        assert_eq!(a.as_slice().as_ptr(), c.as_slice().as_ptr());
        // Once counted, owners go anywhere: two are dropped on other threads (Miri reports
        // a use after free or a leak if the count were wrong).
        let handles = [b, c].map(|owner| {
            std::thread::spawn(move || {
                assert_eq!(&owner[..], b"one copy, three owners counted without a lock");
            })
        });
        for h in handles {
            h.join().unwrap();
        }
        assert!(a.is_unique());
        drop(a);
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

    /// A SetupConnection with four 40-byte strings (long values, shared from one copy when
    /// decoded) and one short one, and its payload.
    #[cfg(feature = "std")]
    fn setup_with_four_long_strings() -> (crate::messages::common::SetupConnection, Vec<u8>) {
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
        (sent, payload)
    }

    #[cfg(feature = "std")]
    #[test]
    fn a_decoded_message_shares_one_copy_across_clones_and_threads() {
        // The path users run: an owned decode whose long strings are ranges of one shared
        // copy of the payload (`Backing`), that message cloned to another thread, both
        // dropped, in both orders.
        use crate::messages::common::SetupConnection;
        let (sent, payload) = setup_with_four_long_strings();
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

    #[cfg(feature = "std")]
    #[test]
    fn a_message_decoded_through_the_enum_counts_its_copy_without_locks_and_may_leave() {
        // The enum's dispatch decodes with `Backing::lazy_local` (ADR 0022): the message's
        // four long strings take their references to the one copy with `clone_local`.
        // Then the message goes to another thread and is dropped there or sent back and
        // dropped here, while a clone of it stays here (Miri reports a leak or a use after
        // free if a reference was miscounted).
        use crate::MessageSet;
        use crate::messages::Message;
        let (sent, payload) = setup_with_four_long_strings();
        for drop_there_first in [true, false] {
            let got = Message::decode_message(0, 0, &payload).expect("decodes");
            let kept = got.clone();
            let t = std::thread::spawn(move || {
                let Message::SetupConnection(m) = &got else {
                    panic!("not a SetupConnection: {got:?}")
                };
                assert_eq!(m.device_id.as_bytes(), [b'd'; 40]);
                if drop_there_first {
                    drop(got);
                    None
                } else {
                    Some(got)
                }
            });
            let back = t.join().expect("the other thread");
            assert_eq!(kept, Message::from(sent.clone()));
            drop(kept);
            drop(back);
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn fits_bounds_the_room_a_value_may_pin() {
        assert!(fits(64, 33));
        assert!(fits(64, 0));
        assert!(fits(64, 64));
        assert!(!fits(64, 65));
        assert!(fits(320, 300));
        assert!(fits(128, 40));
        assert!(
            !fits(320, 100),
            "a 320-byte room is not pinned by 100 bytes"
        );
    }

    /// The address of a buffer's allocation.
    #[cfg(feature = "std")]
    fn allocation(buf: &SharedBuf) -> usize {
        buf.ptr.as_ptr() as usize
    }

    #[cfg(feature = "std")]
    #[test]
    fn the_last_owner_parks_and_the_next_buffer_of_a_similar_length_reuses() {
        // Runs on a thread of its own, so that no other test's buffers are parked in its
        // cache.
        std::thread::spawn(|| {
            let a = SharedBuf::copy_from_slice(&[1u8; 120]);
            let first = allocation(&a);
            drop(a);
            // A 120-byte room serves 100 bytes: the parked allocation is taken, with its
            // counter back at 1 and the new bytes in it.
            let b = SharedBuf::copy_from_slice(&[2u8; 100]);
            assert_eq!(allocation(&b), first);
            assert!(b.is_unique());
            assert_eq!(&b[..], &[2u8; 100][..]);
            // Shared, then dropped by the clone last: the release path parks it too.
            let c = b.clone();
            drop(b);
            drop(c);
            let d = SharedBuf::build(90, |bytes| {
                assert!(
                    bytes.iter().all(|&x| x == 0),
                    "a reused room is zeroed for fill"
                );
                bytes[0] = 3;
            });
            assert_eq!(allocation(&d), first);
            assert_eq!(d[0], 3);
            assert_eq!(d.len(), 90);
            drop(d);
            // Too small a room for 200 bytes, and too large for 10: a new allocation each
            // time (the parked one stays until something newer displaces it).
            let e = SharedBuf::copy_from_slice(&[4u8; 200]);
            assert_ne!(allocation(&e), first);
            let f = SharedBuf::copy_from_slice(&[5u8; 10]);
            assert_ne!(allocation(&f), first);
            assert_eq!(&f[..], &[5u8; 10][..]);
            drop(f);
            drop(e);
            // The thread's exit frees what is parked (Miri reports a leak otherwise).
        })
        .join()
        .expect("the test thread");
    }

    #[cfg(feature = "std")]
    #[test]
    fn an_allocation_over_the_limit_is_freed_not_parked() {
        std::thread::spawn(|| {
            let small = SharedBuf::copy_from_slice(&[9u8; 40]);
            let parked = allocation(&small);
            drop(small);
            // Had the large one been parked, it would have displaced (freed) the small one,
            // and the next small buffer could not find it.
            let big = SharedBuf::copy_from_slice(&[7u8; MAX_PARKED + 1]);
            assert_eq!(&big[..], &[7u8; MAX_PARKED + 1][..]);
            drop(big);
            let again = SharedBuf::copy_from_slice(&[1u8; 40]);
            assert_eq!(allocation(&again), parked);
        })
        .join()
        .expect("the test thread");
    }

    #[cfg(feature = "std")]
    #[test]
    fn a_buffer_dropped_on_another_thread_is_parked_there() {
        let buf = SharedBuf::copy_from_slice(&[6u8; 50]);
        let at = allocation(&buf);
        std::thread::spawn(move || {
            drop(buf);
            // This thread parked it and takes it back for a buffer of its own.
            let again = SharedBuf::copy_from_slice(&[1u8; 40]);
            assert_eq!(allocation(&again), at);
            assert_eq!(&again[..], &[1u8; 40][..]);
        })
        .join()
        .expect("the other thread");
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
    fn loom_local_clones_then_owners_on_three_threads() {
        // ADR 0022: owners counted with `clone_local` while all are on this thread, then
        // two of them dropped on other threads concurrently with the third here.
        loom::model(|| {
            let a = SharedBuf::copy_from_slice(b"0123456789");
            // SAFETY: `a` was just made on this thread and has no other owner.
            let b = unsafe { a.clone_local() };
            // SAFETY: both owners are on this thread.
            let c = unsafe { a.clone_local() };
            let tb = thread::spawn(move || {
                assert_eq!(b[0], b'0');
                drop(b);
            });
            let tc = thread::spawn(move || {
                assert_eq!(c[5], b'5');
                drop(c);
            });
            assert_eq!(a[9], b'9');
            drop(a);
            tb.join().expect("the second owner");
            tc.join().expect("the third owner");
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
