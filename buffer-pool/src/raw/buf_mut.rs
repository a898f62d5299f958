//! `BufMut` for [`PoolBufMut`]. `BufMut` is an `unsafe` trait, so its impl lives under the
//! crate's one `unsafe` module. It uses only the buffer's safe methods, and the slot
//! arena (`raw.rs`) does not depend on the buffer types built on it.

use bytes::BufMut;
use bytes::buf::UninitSlice;

use crate::buf::PoolBufMut;

// SAFETY: `chunk_mut` returns the unwritten tail of the buffer, which is
// initialised memory owned by it; `advance_mut` moves the write position by
// at most that tail's length (it panics otherwise), so `remaining_mut` and
// `chunk_mut` stay consistent and never expose bytes outside the buffer.
unsafe impl BufMut for PoolBufMut {
    fn remaining_mut(&self) -> usize {
        self.unwritten_len()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        self.advance_written(cnt);
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        UninitSlice::new(self.unwritten_mut())
    }
}
