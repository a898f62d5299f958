//! [`SharedBytes`]: the storage behind owned variable-length values.

use alloc::vec::Vec;
use bytes::{BufMut, Bytes};
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::{Deref, Range};

/// Immutable, cheaply cloneable bytes: a static slice, a short value stored inline, or a
/// [`bytes::Bytes`].
///
/// Owned messages keep their variable-length fields here. Values of at most
/// [`INLINE_CAP`](SharedBytes::INLINE_CAP) bytes are stored inside the `SharedBytes`
/// itself: no allocation and no reference count, and a clone is a copy of the struct.
/// Longer values are [`Bytes`]: a decode copies them once and each long value of a message
/// is a slice of that copy; cloning one is a reference-count increment.
///
/// Equality, ordering and hashing look only at the bytes, never at how they are stored.
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
    /// `data[..len]`, with `len <= INLINE_CAP` (the constructors ensure it; the accessors
    /// clamp anyway). `data[len..]` is unspecified and never read.
    Inline {
        len: u8,
        data: InlineData,
    },
    Bytes(Bytes),
}

/// Inline storage: whole 8-byte words at an 8-byte aligned offset (after the tag and the
/// length). A short value is built in registers and written once with word-sized stores
/// where the message is, instead of being copied byte-granular into a stack array and read
/// back across those stores (docs/adr/0004-message-enum-layout.md: the bytes were at offset
/// 2, and the decoder's copies of them waited on the store buffer).
#[derive(Clone, Copy)]
#[repr(align(8))]
struct InlineData([u8; SharedBytes::INLINE_CAP]);

impl InlineData {
    /// `bytes` (at most `INLINE_CAP` long, else cut), built with no call
    /// ([`short_words`]).
    #[inline]
    fn copy_short(bytes: &[u8]) -> Self {
        InlineData(short_words(bytes))
    }
}

/// The first 32 bytes of `bytes` (all of them if shorter) in a zero-padded array, built in
/// registers with no `memset`/`memcpy` call: whole 8-byte words first, then the last
/// partial word taken from the last 8 bytes and shifted into place; values under 8 bytes
/// from two overlapping 4-byte reads, or up to three single bytes. The bytes after the
/// value are zero. Used for `SharedBytes`' inline storage, so that a short value is
/// written once, in whole words, where the message is built (ADR 0004).
#[inline]
pub(crate) fn short_words(bytes: &[u8]) -> [u8; 32] {
    let bytes = bytes.get(..32).unwrap_or(bytes);
    let len = bytes.len();
    // The 8 bytes at `at`, or 0 where there are not 8 (not reached: the callers below only
    // ask for words that lie inside `bytes`).
    let word = |at: usize| {
        bytes
            .get(at..)
            .and_then(<[u8]>::first_chunk::<8>)
            .map_or(0, |w| u64::from_le_bytes(*w))
    };
    let mut w = [0u64; 4];
    if let Some(last) = bytes.last_chunk::<8>() {
        // At least 8 bytes: the whole words, then the last partial one from the last 8
        // bytes (which end where the value ends), shifted past the bytes already stored.
        let last = u64::from_le_bytes(*last);
        let (full, rem) = (len / 8, len % 8);
        w[0] = word(0);
        if full >= 2 {
            w[1] = word(8);
        }
        if full >= 3 {
            w[2] = word(16);
        }
        if full >= 4 {
            w[3] = word(24);
        }
        if let Some(slot) = w.get_mut(full).filter(|_| rem != 0) {
            *slot = last >> (8 * (8 - rem));
        }
    } else if let (Some(lo), Some(hi)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        // 4 to 7 bytes: two reads that overlap on identical bytes.
        w[0] = u64::from(u32::from_le_bytes(*lo))
            | u64::from(u32::from_le_bytes(*hi)) << (8 * (len - 4));
    } else if len > 0 {
        // 1 to 3 bytes.
        let at = |i: usize| u64::from(bytes.get(i).copied().unwrap_or(0)) << (8 * i);
        w[0] = at(0) | at(len / 2) | at(len - 1);
    }
    let mut data = [0u8; 32];
    for (d, w) in data.chunks_exact_mut(8).zip(w) {
        d.copy_from_slice(&w.to_le_bytes());
    }
    data
}

// `short_words` fills exactly the inline storage.
const _: () = assert!(SharedBytes::INLINE_CAP == 32);

// The inline variant (tag, length and data) fits in the space the largest other variant
// already needed, so inline storage does not make `SharedBytes` bigger.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(
    core::mem::size_of::<SharedBytes>()
        == core::mem::size_of::<Bytes>() + core::mem::size_of::<usize>()
);

impl SharedBytes {
    /// The longest value stored inline, with no allocation and no reference count
    /// (32 bytes: four whole words, in the size `SharedBytes` has anyway on 64-bit
    /// targets).
    pub const INLINE_CAP: usize = 32;

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

    /// `bytes` stored inline if they are at most [`INLINE_CAP`](Self::INLINE_CAP) long
    /// (no allocation); `None` if they are longer.
    #[inline]
    pub(crate) fn inline(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > Self::INLINE_CAP {
            return None;
        }
        let len = u8::try_from(bytes.len()).ok()?;
        Some(SharedBytes(Repr::Inline {
            len,
            data: InlineData::copy_short(bytes),
        }))
    }

    /// The first `len` bytes of `window` stored inline (no allocation). `len` is clamped
    /// to [`INLINE_CAP`](Self::INLINE_CAP). The rest of the window is kept in the unused
    /// part of the inline storage, where nothing ever reads it: copying the whole
    /// fixed-size window is cheaper than copying `len` bytes and zeroing the rest.
    #[inline]
    pub(crate) fn inline_window(window: &[u8; Self::INLINE_CAP], len: usize) -> Self {
        let len = len.min(Self::INLINE_CAP);
        SharedBytes(Repr::Inline {
            len: u8::try_from(len).unwrap_or(0),
            data: InlineData(*window),
        })
    }

    /// A copy of `bytes`: stored inline when at most [`INLINE_CAP`](Self::INLINE_CAP)
    /// bytes long (no allocation), in one new allocation otherwise.
    pub fn copy_from_slice(bytes: &[u8]) -> Self {
        if bytes.is_empty() {
            return Self::new();
        }
        if let Some(v) = Self::inline(bytes) {
            return v;
        }
        SharedBytes(Repr::Bytes(Bytes::copy_from_slice(bytes)))
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Inline { len, data } => data.0.get(..usize::from(*len)).unwrap_or(&[]),
            Repr::Bytes(b) => b,
        }
    }

    /// Writes the value's length (its `PREFIX` low bytes, little-endian), then the value,
    /// as the length-prefixed types encode it: through
    /// [`put_short`](crate::raw_copy::put_short) (no `memcpy` call) when the value is
    /// short and the buffer has room. An inline value is known to be short.
    #[inline(always)]
    pub(crate) fn put_prefixed<const PREFIX: usize, B: BufMut + ?Sized>(&self, buf: &mut B) {
        use crate::raw_copy::{SHORT_MAX, put_prefixed};
        if let Repr::Inline { len, data } = &self.0 {
            let bytes = data.0.get(..usize::from(*len)).unwrap_or(&[]);
            put_prefixed::<PREFIX, { Self::INLINE_CAP }, B>(buf, bytes);
        } else {
            put_prefixed::<PREFIX, SHORT_MAX, B>(buf, self.as_slice());
        }
    }

    /// Number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Static(s) => s.len(),
            Repr::Inline { len, .. } => usize::from(*len).min(Self::INLINE_CAP),
            Repr::Bytes(b) => b.len(),
        }
    }

    /// `true` if there are no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A sub-range sharing the same storage (no allocation; an inline value's sub-range is
    /// a copy of at most [`INLINE_CAP`](Self::INLINE_CAP) bytes).
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
            // A sub-range of an inline value is never longer than it, so it is inline too.
            Repr::Inline { .. } => self
                .as_slice()
                .get(start..end)
                .and_then(Self::inline)
                .unwrap_or_default(),
            Repr::Bytes(b) => SharedBytes(Repr::Bytes(b.slice(start..end))),
        }
    }

    /// Converts to a [`Bytes`]. A static or `Bytes` value converts for free; an inline value
    /// (at most [`INLINE_CAP`](Self::INLINE_CAP) bytes) is copied into one new allocation.
    pub fn into_bytes(self) -> Bytes {
        match self.0 {
            Repr::Static(s) => Bytes::from_static(s),
            Repr::Inline { .. } => Bytes::copy_from_slice(self.as_slice()),
            Repr::Bytes(b) => b,
        }
    }

    /// Copies the bytes into a new `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
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
        fmt_hex(self.as_slice(), f)
    }
}

/// Writes bytes as lowercase hex.
pub(crate) fn fmt_hex(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

/// Writes bytes as a quoted string if they are UTF-8, as `0x…` hex otherwise.
pub(crate) fn fmt_text(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match core::str::from_utf8(bytes) {
        Ok(s) => fmt::Debug::fmt(s, f),
        Err(_) => {
            f.write_str("0x")?;
            fmt_hex(bytes, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use core::hash::BuildHasher;
    use proptest::prelude::*;
    use std::collections::hash_map::RandomState;

    const CAP: usize = SharedBytes::INLINE_CAP;

    #[test]
    fn short_values_are_copied_exactly_at_every_length() {
        // Distinct bytes, so that a byte taken from the wrong place or shifted by the
        // wrong amount shows; every length of every path (1–3, 4–7, whole words, whole
        // words plus a partial one, the capacity).
        let src: Vec<u8> = (1..=CAP as u8 + 8).map(|i| i.wrapping_mul(37)).collect();
        for start in 0..8 {
            for len in 0..=CAP {
                let value = &src[start..start + len];
                let copy = SharedBytes::copy_from_slice(value);
                assert_eq!(copy.as_slice(), value, "len {len} from offset {start}");
                assert_eq!(kind(&copy), if len == 0 { "static" } else { "inline" });
            }
        }
        assert_eq!(
            kind(&SharedBytes::copy_from_slice(&src[..CAP + 1])),
            "bytes"
        );
    }

    fn kind(b: &SharedBytes) -> &'static str {
        match b.0 {
            Repr::Static(_) => "static",
            Repr::Inline { .. } => "inline",
            Repr::Bytes(_) => "bytes",
        }
    }

    /// The same bytes in every representation that can hold them.
    fn forms(data: &[u8]) -> Vec<SharedBytes> {
        let leaked: &'static [u8] = Vec::leak(data.to_vec());
        let mut padded = vec![0xee; 3];
        padded.extend_from_slice(data);
        padded.push(0xee);
        let mut out = vec![
            SharedBytes::from_static(leaked),
            SharedBytes::copy_from_slice(data),
            SharedBytes::from(data.to_vec()),
            SharedBytes::from(Bytes::copy_from_slice(data)),
            // A range of a longer shared buffer.
            SharedBytes::copy_from_slice(&padded).slice(3..3 + data.len()),
        ];
        out.extend(SharedBytes::inline(data));
        out
    }

    #[test]
    fn size_did_not_grow() {
        assert_eq!(
            core::mem::size_of::<SharedBytes>(),
            core::mem::size_of::<Bytes>() + core::mem::size_of::<usize>()
        );
        #[cfg(target_pointer_width = "64")]
        assert_eq!((core::mem::size_of::<SharedBytes>(), CAP), (40, 32));
    }

    #[test]
    fn representation_at_boundary_lengths() {
        let kinds = [0, 1, CAP, CAP + 1].map(|n| {
            let data: Vec<u8> = (0..n as u8).collect();
            let copy = SharedBytes::copy_from_slice(&data);
            assert_eq!(copy.as_slice(), &data[..]);
            assert_eq!(copy.len(), n);
            assert_eq!(copy.is_empty(), n == 0);
            (kind(&copy), SharedBytes::inline(&data).map(|b| kind(&b)))
        });
        assert_eq!(
            kinds,
            [
                ("static", Some("inline")),
                ("inline", Some("inline")),
                ("inline", Some("inline")),
                ("bytes", None),
            ]
        );
        assert!(SharedBytes::inline(&[0; 255]).is_none());
        assert!(SharedBytes::inline(&[0; 256]).is_none());
    }

    #[test]
    fn inline_values_behave_like_the_other_forms_at_boundary_lengths() {
        let hasher = RandomState::new();
        for n in [0, 1, CAP, CAP + 1] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let all = forms(&data);
            for a in &all {
                assert_eq!(a.as_slice(), &data[..], "{} of {n} bytes", kind(a));
                assert_eq!(a.len(), n);
                assert_eq!(&a.clone().into_bytes()[..], &data[..]);
                assert_eq!(&Bytes::from(a.clone())[..], &data[..]);
                assert_eq!(a.to_vec(), data);
                assert_eq!(a.clone(), *a);
                for b in &all {
                    assert_eq!(a, b, "{} vs {}", kind(a), kind(b));
                    assert_eq!(a.cmp(b), core::cmp::Ordering::Equal);
                    assert_eq!(hasher.hash_one(a), hasher.hash_one(b));
                }
                for (s, e) in [(0, n), (0, 1), (1, n), (n / 2, n), (0, 0), (n, n + 5)] {
                    let want = data.get(s.min(n)..e.min(n)).unwrap_or(&[]);
                    let sub = a.slice(s..e);
                    assert_eq!(sub.as_slice(), want, "{}[{s}..{e}] of {n}", kind(a));
                    assert_eq!(&sub.into_bytes()[..], want);
                }
            }
        }
    }

    #[test]
    fn sub_ranges_of_inline_values_stay_inline() {
        let data: Vec<u8> = (1..=CAP as u8).collect();
        let v = SharedBytes::copy_from_slice(&data);
        let sub = v.slice(5..9);
        assert_eq!((kind(&sub), sub.as_slice()), ("inline", &data[5..9]));
        // Empty and out-of-range slices are the static empty value.
        assert_eq!(kind(&v.slice(3..3)), "static");
        assert_eq!(kind(&v.slice(CAP + 1..CAP + 4)), "static");
        assert!(v.slice(CAP + 1..CAP + 4).is_empty());
        // Clamped at the end.
        assert_eq!(v.slice(CAP - 2..CAP + 10).as_slice(), &data[CAP - 2..]);
    }

    #[test]
    fn debug_shows_the_bytes_whatever_the_storage() {
        for n in [1, CAP, CAP + 1] {
            let data = vec![0xab; n];
            let want = alloc::format!("{:?}", SharedBytes::from(data.clone()));
            for f in forms(&data) {
                assert_eq!(alloc::format!("{f:?}"), want, "{}", kind(&f));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_form_agrees(
            data in proptest::collection::vec(any::<u8>(), 0..=2 * CAP),
            other in proptest::collection::vec(any::<u8>(), 0..=2 * CAP),
            start in 0usize..=2 * CAP + 2,
            end in 0usize..=2 * CAP + 2,
        ) {
            let n = data.len();
            let want = data.get(start.min(end.min(n))..end.min(n)).unwrap_or(&[]);
            let others = forms(&other);
            for a in forms(&data) {
                prop_assert_eq!(a.as_slice(), &data[..]);
                prop_assert_eq!(&a.clone().into_bytes()[..], &data[..]);
                let sub = a.slice(start..end);
                prop_assert_eq!(sub.as_slice(), want);
                prop_assert_eq!(sub.len(), want.len());
                prop_assert_eq!(&sub.into_bytes()[..], want);
                for b in &others {
                    prop_assert_eq!(a == *b, data == other);
                    prop_assert_eq!(a.cmp(b), data.cmp(&other));
                }
            }
        }
    }
}
