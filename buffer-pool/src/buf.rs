//! The buffer types handed out by [`BufferPool`](crate::BufferPool).

use core::fmt;
use core::ops::{Deref, DerefMut};

use bytes::Bytes;

use crate::raw::{SlotMut, SlotShared};

/// Where the bytes of a writable buffer live.
enum MutStorage {
    Pooled(SlotMut),
    /// Heap fallback: exactly `len` zeroed bytes (`len == capacity`, so the
    /// conversion into `Bytes` on freeze does not reallocate).
    Heap(Vec<u8>),
}

/// A writable buffer of a fixed length, from a pool slot or (fallback) the
/// heap.
///
/// It dereferences to `&mut [u8]` of exactly [`len`](Self::len) bytes and
/// implements [`bytes::BufMut`], which writes from the start of the buffer
/// forward (a write position separate from the length; writing more than
/// [`BufMut::remaining_mut`](bytes::BufMut::remaining_mut) bytes panics, as
/// for any `BufMut`). [`freeze`](Self::freeze) turns it into a shareable
/// [`PoolBuf`] of the same `len` bytes.
///
/// Dropping it without freezing returns its slot to the pool.
///
/// # Contents
///
/// A buffer from [`BufferPool::acquire`](crate::BufferPool::acquire) holds
/// initialised but unspecified bytes: zeros, or what an earlier holder of the
/// same slot wrote. Use [`acquire_zeroed`](crate::BufferPool::acquire_zeroed)
/// when the buffer will not be fully overwritten. Heap fallbacks are always
/// zeroed.
pub struct PoolBufMut {
    storage: MutStorage,
    /// `BufMut` write position, `<= len`.
    written: usize,
}

impl PoolBufMut {
    pub(crate) fn pooled(slot: SlotMut) -> Self {
        Self {
            storage: MutStorage::Pooled(slot),
            written: 0,
        }
    }

    pub(crate) fn from_vec(vec: Vec<u8>) -> Self {
        Self {
            storage: MutStorage::Heap(vec),
            written: 0,
        }
    }

    pub(crate) fn heap(len: usize) -> Self {
        Self {
            storage: MutStorage::Heap(vec![0; len]),
            written: 0,
        }
    }

    /// Length in bytes, as requested at acquisition (pooled or not).
    #[inline]
    pub fn len(&self) -> usize {
        match &self.storage {
            MutStorage::Pooled(slot) => slot.len(),
            MutStorage::Heap(vec) => vec.len(),
        }
    }

    /// `true` if the length is 0.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` if the bytes live in a pool slot, `false` for a heap fallback.
    #[inline]
    pub fn is_pooled(&self) -> bool {
        matches!(self.storage, MutStorage::Pooled(_))
    }

    /// Number of bytes written through [`bytes::BufMut`] so far.
    #[inline]
    pub fn written(&self) -> usize {
        self.written
    }

    /// Makes the buffer immutable and cheaply cloneable, without copying or
    /// allocating. All [`len`](Self::len) bytes are kept, however many were
    /// written through `BufMut`.
    #[inline]
    pub fn freeze(self) -> PoolBuf {
        let storage = match self.storage {
            MutStorage::Pooled(slot) => FrozenStorage::Pooled(slot.freeze()),
            MutStorage::Heap(vec) => FrozenStorage::Heap(Bytes::from(vec)),
        };
        PoolBuf { storage }
    }

    pub(crate) fn unwritten_len(&self) -> usize {
        self.len() - self.written
    }

    pub(crate) fn unwritten_mut(&mut self) -> &mut [u8] {
        let written = self.written;
        // `written <= len` is an invariant, so this never falls back.
        self.as_mut().get_mut(written..).unwrap_or_default()
    }

    pub(crate) fn advance_written(&mut self, cnt: usize) {
        let remaining = self.unwritten_len();
        assert!(
            cnt <= remaining,
            "advance_mut({cnt}) past the end of the buffer ({remaining} bytes remaining)"
        );
        self.written += cnt;
    }
}

impl Deref for PoolBufMut {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.storage {
            MutStorage::Pooled(slot) => slot.as_slice(),
            MutStorage::Heap(vec) => vec,
        }
    }
}

impl DerefMut for PoolBufMut {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.storage {
            MutStorage::Pooled(slot) => slot.as_mut_slice(),
            MutStorage::Heap(vec) => vec,
        }
    }
}

impl AsRef<[u8]> for PoolBufMut {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for PoolBufMut {
    #[inline]
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for PoolBufMut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PoolBufMut");
        d.field("len", &self.len()).field("written", &self.written);
        match &self.storage {
            MutStorage::Pooled(slot) => d.field("slot", &slot.index()),
            MutStorage::Heap(_) => d.field("slot", &"heap"),
        };
        d.finish()
    }
}

/// Where the bytes of a frozen buffer live.
#[derive(Clone)]
enum FrozenStorage {
    Pooled(SlotShared),
    Heap(Bytes),
}

/// An immutable buffer from a pool slot or the heap; cheap to clone.
///
/// Clones share the bytes. A pooled slot goes back to its pool when the last
/// clone is dropped, on whatever thread that happens, even if every
/// [`BufferPool`](crate::BufferPool) handle is gone by then.
///
/// Cloning a pooled buffer is one atomic increment and allocates nothing.
/// Cloning a heap fallback is a [`Bytes`] clone (the first clone of a
/// `Bytes` made from a `Vec` allocates its shared header once).
/// [`into_bytes`](Self::into_bytes) converts without copying the payload.
#[derive(Clone)]
pub struct PoolBuf {
    storage: FrozenStorage,
}

impl PoolBuf {
    /// Length in bytes, as requested at acquisition (pooled or not).
    #[inline]
    pub fn len(&self) -> usize {
        match &self.storage {
            FrozenStorage::Pooled(slot) => slot.len(),
            FrozenStorage::Heap(bytes) => bytes.len(),
        }
    }

    /// `true` if the length is 0.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` if the bytes live in a pool slot, `false` for a heap fallback.
    #[inline]
    pub fn is_pooled(&self) -> bool {
        matches!(self.storage, FrozenStorage::Pooled(_))
    }

    /// Converts into [`Bytes`] without copying the payload.
    ///
    /// A heap fallback already is a `Bytes` and converts for free. A pooled
    /// buffer becomes the owner of a `Bytes` ([`Bytes::from_owner`]), which
    /// costs one small heap allocation for the `Bytes` bookkeeping; the slot
    /// stays pinned until the last `Bytes` clone or slice is dropped.
    pub fn into_bytes(self) -> Bytes {
        match self.storage {
            FrozenStorage::Heap(bytes) => bytes,
            FrozenStorage::Pooled(_) => Bytes::from_owner(self),
        }
    }
}

impl From<PoolBuf> for Bytes {
    fn from(buf: PoolBuf) -> Self {
        buf.into_bytes()
    }
}

impl Deref for PoolBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.storage {
            FrozenStorage::Pooled(slot) => slot.as_slice(),
            FrozenStorage::Heap(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for PoolBuf {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for PoolBuf {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for PoolBuf {}

impl PartialEq<[u8]> for PoolBuf {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl fmt::Debug for PoolBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PoolBuf");
        d.field("len", &self.len());
        match &self.storage {
            FrozenStorage::Pooled(slot) => d.field("slot", &slot.index()),
            FrozenStorage::Heap(_) => d.field("slot", &"heap"),
        };
        d.finish()
    }
}
