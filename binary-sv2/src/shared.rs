//! [`SharedBytes`]: the storage behind owned variable-length values.

use alloc::sync::Arc;
use alloc::vec::Vec;
use bytes::Bytes;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::{Deref, Range};

/// Immutable, cheaply cloneable bytes: a static slice, a range of a reference-counted
/// buffer, or a [`bytes::Bytes`].
///
/// Owned messages keep their variable-length fields here. A decode copies the consumed
/// payload **once** into an `Arc<[u8]>` (a single allocation, counters and data together)
/// and every field is a range of it; cloning a field is a reference-count increment.
///
/// Why not slices of one `Bytes`: a `Bytes` made from a `Vec` allocates a second, shared
/// header the first time it is sliced, so a message would cost two allocations. Values
/// that already live in a `Bytes` are kept as they are ([`From<Bytes>`]), and
/// [`into_bytes`](SharedBytes::into_bytes) hands any value to `bytes`-based code without
/// copying the data.
///
/// ```
/// use sv2c_binary::SharedBytes;
/// let all = SharedBytes::copy_from_slice(b"hello world");
/// let word = all.slice(6..11);
/// assert_eq!(&word[..], b"world");
/// assert_eq!(SharedBytes::from_static(b"world"), word); // compared by content
/// ```
#[derive(Clone)]
pub struct SharedBytes(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static [u8]),
    Shared { buf: Arc<[u8]>, range: Range<usize> },
    Bytes(Bytes),
}

impl SharedBytes {
    /// Empty; no allocation.
    #[inline]
    pub const fn new() -> Self {
        SharedBytes(Repr::Static(&[]))
    }

    /// Wraps a static slice; no allocation.
    #[inline]
    pub const fn from_static(bytes: &'static [u8]) -> Self {
        SharedBytes(Repr::Static(bytes))
    }

    /// Copies `bytes` into one new allocation (none if empty).
    pub fn copy_from_slice(bytes: &[u8]) -> Self {
        if bytes.is_empty() {
            return Self::new();
        }
        let len = bytes.len();
        SharedBytes(Repr::Shared {
            buf: Arc::from(bytes),
            range: 0..len,
        })
    }

    /// A new buffer of `len` bytes filled by `fill` (one allocation; none if `len` is 0).
    pub(crate) fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        if len == 0 {
            return Self::new();
        }
        // `RepeatN` has an exact length, so the standard library allocates the `Arc` once,
        // at its final size (the allocation tests check this).
        let mut buf: Arc<[u8]> = core::iter::repeat_n(0u8, len).collect();
        if let Some(dst) = Arc::get_mut(&mut buf) {
            fill(dst);
        }
        SharedBytes(Repr::Shared { buf, range: 0..len })
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Shared { buf, range } => buf.get(range.clone()).unwrap_or(&[]),
            Repr::Bytes(b) => b,
        }
    }

    /// Number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Static(s) => s.len(),
            Repr::Shared { range, .. } => range.len(),
            Repr::Bytes(b) => b.len(),
        }
    }

    /// `true` if there are no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A sub-range sharing the same storage (no allocation, no copy).
    ///
    /// A range outside `0..len()` is clamped to it, so this never panics.
    #[inline]
    pub fn slice(&self, range: Range<usize>) -> Self {
        let len = self.len();
        let end = range.end.min(len);
        let start = range.start.min(end);
        if start == end {
            return Self::new();
        }
        match &self.0 {
            Repr::Static(s) => SharedBytes(Repr::Static(s.get(start..end).unwrap_or(&[]))),
            Repr::Shared { buf, range: r } => SharedBytes(Repr::Shared {
                buf: buf.clone(),
                range: r.start + start..r.start + end,
            }),
            Repr::Bytes(b) => SharedBytes(Repr::Bytes(b.slice(start..end))),
        }
    }

    /// Converts to a [`Bytes`] without copying the data (a static or `Bytes` value converts
    /// for free; a shared range costs one small allocation for the `Bytes` owner).
    pub fn into_bytes(self) -> Bytes {
        match self.0 {
            Repr::Static(s) => Bytes::from_static(s),
            Repr::Bytes(b) => b,
            Repr::Shared { buf, range } => Bytes::from_owner(ArcRange { buf, range }),
        }
    }

    /// Copies the bytes into a new `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

/// Owner handed to [`Bytes::from_owner`].
struct ArcRange {
    buf: Arc<[u8]>,
    range: Range<usize>,
}

impl AsRef<[u8]> for ArcRange {
    fn as_ref(&self) -> &[u8] {
        self.buf.get(self.range.clone()).unwrap_or(&[])
    }
}

impl Default for SharedBytes {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for SharedBytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Bytes> for SharedBytes {
    fn from(b: Bytes) -> Self {
        SharedBytes(Repr::Bytes(b))
    }
}

impl From<Vec<u8>> for SharedBytes {
    /// Takes the vector without copying.
    fn from(v: Vec<u8>) -> Self {
        if v.is_empty() {
            return Self::new();
        }
        SharedBytes(Repr::Bytes(Bytes::from(v)))
    }
}

impl From<SharedBytes> for Bytes {
    fn from(s: SharedBytes) -> Bytes {
        s.into_bytes()
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SharedBytes {}

impl PartialEq<[u8]> for SharedBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialOrd for SharedBytes {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for SharedBytes {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for SharedBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::types::fmt_hex(self.as_slice(), f)
    }
}
