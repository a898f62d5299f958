//! Per-thread scratch buffers: what a connection reads into and encodes into, so that a
//! connection holds no buffer of its own between reads and writes.
//!
//! A buffer is taken out of its thread-local slot for the duration of one synchronous
//! step (a read and the decoding of what it brought, or one encode) and put back cleared:
//! nothing borrows it across an `.await`, and a nested use (or a use while the thread is
//! being torn down) gets a fresh buffer instead of a panic.

use core::cell::Cell;
use std::thread::LocalKey;

use bytes::BytesMut;

/// Bytes one read of a connection takes at most: room for a few hundred shares.
pub(crate) const READ_LEN: usize = 64 * 1024;

/// A scratch buffer grown past this (by a large frame) is not kept for the next use.
const KEEP: usize = 256 * 1024;

thread_local! {
    /// What [`read_batch`](crate::read_batch) reads into when a connection has nothing
    /// buffered.
    pub(crate) static READ: Cell<BytesMut> = Cell::new(BytesMut::new());
    /// What `NoiseCodec` encodes plaintext frames into before sealing them.
    pub(crate) static ENCODE: Cell<BytesMut> = Cell::new(BytesMut::new());
}

/// Runs `f` with the thread's buffer in `slot` (empty, with whatever capacity it kept),
/// then clears it and puts it back.
pub(crate) fn with<R>(
    slot: &'static LocalKey<Cell<BytesMut>>,
    f: impl FnOnce(&mut BytesMut) -> R,
) -> R {
    let mut buf = slot.try_with(Cell::take).unwrap_or_default();
    let result = f(&mut buf);
    buf.clear();
    if buf.capacity() <= KEEP {
        let _ = slot.try_with(|cell| cell.set(buf));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_comes_back_empty_with_its_capacity() {
        with(&ENCODE, |b| b.extend_from_slice(&[1; 1000]));
        let capacity = with(&ENCODE, |b| {
            assert!(b.is_empty());
            b.capacity()
        });
        assert!(capacity >= 1000);
    }

    #[test]
    fn a_nested_use_gets_its_own_buffer() {
        with(&ENCODE, |outer| {
            outer.extend_from_slice(b"outer");
            with(&ENCODE, |inner| {
                assert!(inner.is_empty());
                inner.extend_from_slice(b"inner");
            });
            assert_eq!(&outer[..], b"outer");
        });
    }

    #[test]
    fn a_large_buffer_is_not_kept() {
        with(&ENCODE, |b| b.reserve(KEEP + 1));
        assert!(with(&ENCODE, |b| b.capacity()) <= KEEP);
    }
}
