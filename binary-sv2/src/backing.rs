//! Owned storage for variable-length values: how a borrowed value becomes an owned one.
//!
//! Plumbing that generated code reaches through `sv2c_binary::__private` (the derive's
//! conversions, and hand-written borrowed types): nothing here is part of the documented
//! API.

use crate::shared::SharedBytes;
use bytes::Bytes;
use core::cell::OnceCell;
use core::fmt;

/// Where an owned value being built from a borrowed one finds its variable-length bytes.
///
/// Values of at most [`SharedBytes::INLINE_CAP`] bytes are always stored inline (no
/// allocation, no reference count). Longer ones are mapped by their address: a slice that
/// lies inside the backing's source bytes becomes the same range of one shared copy of
/// those bytes; a slice from elsewhere is copied on its own.
///
/// In a decode ([`Backing::lazy`]) the borrowed value points into the input. A long value
/// after which no other long value can follow (at most `INLINE_CAP` bytes remain) and that
/// is the first one is copied on its own: one allocation of just its bytes. Otherwise the
/// source bytes from that value on are copied once into a [`Bytes`] and each long value is
/// a slice of it (the copy's first slice allocates `bytes`' shared header).
#[derive(Debug)]
pub struct Backing<'s> {
    /// Address of the first source byte (only compared, never dereferenced).
    base: usize,
    source: Source<'s>,
}

/// The conversion of a borrowed value into its owned form `O`, taking variable-length bytes
/// from `backing` (a supertrait of [`WireRef`](crate::WireRef), with `O` its `Owned`).
///
/// Implement it by calling `to_owned_in` with the same `backing` on each field, in wire
/// order, or, for a type holding raw bytes, with `backing.share(bytes)`; a fixed-size type
/// ignores `backing` and returns a copy of itself.
pub trait ToOwnedIn<O> {
    /// Makes the owned value. Variable-length data is taken from `backing` when it lies
    /// inside the backing's source bytes (no copy), and copied otherwise.
    fn to_owned_in(&self, backing: &Backing<'_>) -> O;
}

/// What a [`Backing`] maps long slices into.
enum Source<'s> {
    /// Nothing: long slices are copied one by one.
    None,
    /// An existing copy of the source bytes.
    Mirror(&'s SharedBytes),
    /// The source bytes themselves; `copy` holds `bytes[start..]` once a long value made it.
    Lazy {
        bytes: &'s [u8],
        copy: OnceCell<(usize, Bytes)>,
    },
}

impl fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::None => f.write_str("None"),
            Source::Mirror(shared) => f.debug_tuple("Mirror").field(shared).finish(),
            Source::Lazy { bytes, .. } => {
                f.debug_struct("Lazy").field("len", &bytes.len()).finish()
            }
        }
    }
}

impl<'s> Backing<'s> {
    /// No backing buffer: every long variable-length slice is copied into its own
    /// allocation (short and fixed-size values need none).
    pub fn none() -> Self {
        Backing {
            base: 0,
            source: Source::None,
        }
    }

    /// `shared` holds a copy of the bytes that started at `source`'s address.
    pub fn mirror(source: &[u8], shared: &'s SharedBytes) -> Self {
        Backing {
            base: source.as_ptr() as usize,
            source: Source::Mirror(shared),
        }
    }

    /// Slices of `source` longer than [`SharedBytes::INLINE_CAP`] become ranges of one
    /// shared copy of `source`, made (one allocation) when the first of them is asked for.
    ///
    /// Slices are expected in source order (as a derived conversion asks for them): a long
    /// slice before the start of the copy is copied on its own (correct, but one more
    /// allocation).
    pub fn lazy(source: &'s [u8]) -> Self {
        Backing {
            base: source.as_ptr() as usize,
            source: Source::Lazy {
                bytes: source,
                copy: OnceCell::new(),
            },
        }
    }

    /// The owned equivalent of `sub`: inline when short (and no allocation at all when
    /// empty), else a range of the backing copy when `sub` lies in the source range, else a
    /// fresh copy.
    // Always inlined: out of line, the value came back through memory and the decoder's
    // reload of it waited on the narrower stores that had just written it.
    #[inline(always)]
    pub fn share(&self, sub: &[u8]) -> SharedBytes {
        if sub.is_empty() {
            return SharedBytes::new();
        }
        if sub.len() <= SharedBytes::INLINE_CAP {
            // Only addresses are compared; nothing is dereferenced through them.
            let off = (sub.as_ptr() as usize).wrapping_sub(self.base);
            // When `sub` starts at least `INLINE_CAP` bytes before the end of the source,
            // copy a fixed-size window of the source (`sub` and the bytes after it): a
            // fixed-size copy is a few wide moves.
            if let Some(window) = self
                .source_bytes()
                .get(off..)
                .and_then(<[u8]>::first_chunk::<{ SharedBytes::INLINE_CAP }>)
            {
                return SharedBytes::inline_window(window, sub.len());
            }
            // Otherwise built in registers, word by word, with no `memset`/`memcpy` call,
            // and stored once where the message is (`SharedBytes::inline` is inlined here;
            // `copy_from_slice` is not). Measured: short-string messages −20 to −30 % on the
            // enum path (docs/adr/0004-message-enum-layout.md).
            if let Some(v) = SharedBytes::inline(sub) {
                return v;
            }
            return SharedBytes::copy_from_slice(sub);
        }
        // The long value comes back as its parts and is assembled here, so that this
        // function's result is never the out-of-line call's return slot: were it, the
        // result would live in memory on every path, and the inline path above would write
        // its tag and length there byte by byte, then the caller read them back as one
        // word (a load that waits for the narrower stores; measured: short-string
        // messages 20-29 % slower on the enum path, docs/adr/0001-owned-storage.md).
        SharedBytes::from(self.share_long(sub))
    }

    /// The source bytes (their copy for a mirror; none for [`Backing::none`]).
    #[inline]
    fn source_bytes(&self) -> &[u8] {
        match &self.source {
            Source::None => &[],
            Source::Mirror(shared) => shared.as_slice(),
            Source::Lazy { bytes, .. } => bytes,
        }
    }

    /// [`share`](Self::share) for a value longer than [`SharedBytes::INLINE_CAP`].
    #[inline(never)]
    fn share_long(&self, sub: &[u8]) -> Bytes {
        // Only addresses are compared; nothing is dereferenced through them.
        let off = (sub.as_ptr() as usize).wrapping_sub(self.base);
        let within = |len: usize| off <= len && sub.len() <= len - off;
        match &self.source {
            Source::Mirror(shared) if within(shared.len()) => {
                shared.slice(off..off + sub.len()).into_bytes()
            }
            Source::Lazy { bytes, copy } if within(bytes.len()) => {
                let end = off + sub.len();
                // The first long value, and no other can follow it: its own copy.
                if copy.get().is_none() && bytes.len() - end <= SharedBytes::INLINE_CAP {
                    return Bytes::copy_from_slice(sub);
                }
                let (start, all) = copy
                    .get_or_init(|| (off, Bytes::copy_from_slice(bytes.get(off..).unwrap_or(&[]))));
                match off.checked_sub(*start) {
                    Some(at) => all.slice(at..at + sub.len()),
                    None => Bytes::copy_from_slice(sub),
                }
            }
            _ => Bytes::copy_from_slice(sub),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_made(b: &Backing<'_>) -> Option<(usize, usize)> {
        match &b.source {
            Source::Lazy { copy, .. } => copy.get().map(|(start, all)| (*start, all.len())),
            _ => None,
        }
    }

    #[test]
    fn lazy_backing_copies_the_source_once_on_the_first_long_slice() {
        let cap = SharedBytes::INLINE_CAP;
        let src: Vec<u8> = (0..100u8).collect();
        let b = Backing::lazy(&src);
        assert_eq!(b.share(&src[..0]).as_slice(), &[] as &[u8]);
        assert_eq!(b.share(&src[10..10 + cap]).as_slice(), &src[10..10 + cap]);
        assert_eq!(b.share(&src[99..]).as_slice(), &src[99..]);
        assert_eq!(copy_made(&b), None, "short slices need no copy");

        assert_eq!(b.share(&src[5..6 + cap]).as_slice(), &src[5..6 + cap]);
        assert_eq!(
            copy_made(&b),
            Some((5, 95)),
            "the source from the first long value on"
        );
        assert_eq!(b.share(&src[50..]).as_slice(), &src[50..]);
        // Out of order (before the copy) and from elsewhere: copied on their own.
        assert_eq!(b.share(&src[..]).as_slice(), &src[..]);
        let other = [7u8; 64];
        assert_eq!(b.share(&other).as_slice(), &other[..]);
    }

    #[test]
    fn a_lone_long_value_at_the_end_is_copied_on_its_own() {
        let cap = SharedBytes::INLINE_CAP;
        let src: Vec<u8> = (0..100u8).collect();
        let b = Backing::lazy(&src);
        let v = b.share(&src[20..100 - cap]);
        assert_eq!(v.as_slice(), &src[20..100 - cap]);
        assert_eq!(copy_made(&b), None);
    }

    #[test]
    fn mirror_and_none_backings_give_the_same_bytes() {
        let src: Vec<u8> = (0..90u8).collect();
        let shared = SharedBytes::copy_from_slice(&src);
        let mirror = Backing::mirror(&src, &shared);
        let none = Backing::none();
        for (s, e) in [(0, 0), (0, 1), (3, 41), (0, 90), (52, 90)] {
            let want = &src[s..e];
            assert_eq!(mirror.share(want).as_slice(), want);
            assert_eq!(none.share(want).as_slice(), want);
        }
    }

    /// A long value comes back from the out-of-line path as parts (`LongParts`) and is
    /// put together again in `share`: the bytes must be right and, for a mirror, still
    /// point into the mirrored value's storage, whatever form that value has.
    #[test]
    fn long_values_share_the_mirrored_storage_in_every_form() {
        let cap = SharedBytes::INLINE_CAP;
        // The same bytes in a static (not a leaked `Vec`, which Miri reports as a leak).
        static STATIC: [u8; 120] = {
            let mut a = [0u8; 120];
            let mut i = 0;
            while i < a.len() {
                a[i] = (i as u8).wrapping_mul(31);
                i += 1;
            }
            a
        };
        let src: Vec<u8> = (0..120u8).map(|i| i.wrapping_mul(31)).collect();
        let leaked: &'static [u8] = &STATIC;
        assert_eq!(leaked, &src[..]);
        let mut padded = vec![0xee; 5];
        padded.extend_from_slice(&src);
        let forms = [
            SharedBytes::from_static(leaked),
            SharedBytes::copy_from_slice(&src),
            SharedBytes::from(src.clone()),
            SharedBytes::from(bytes::Bytes::copy_from_slice(&src)),
            SharedBytes::copy_from_slice(&padded).slice(5..5 + src.len()),
        ];
        for shared in &forms {
            let mirror = Backing::mirror(&src, shared);
            for (s, e) in [(0, cap + 1), (3, 41), (0, 120), (119 - cap, 120), (60, 100)] {
                let v = mirror.share(&src[s..e]);
                assert_eq!(v.as_slice(), &src[s..e], "{s}..{e} of {shared:?}");
                assert_eq!(v.len(), e - s);
                assert_eq!(
                    v.as_slice().as_ptr(),
                    shared.as_slice()[s..].as_ptr(),
                    "{s}..{e}: not a range of the mirrored value"
                );
            }
        }
        // Short values are inline copies, not ranges of the mirrored value.
        let shared = &forms[1];
        let v = Backing::mirror(&src, shared).share(&src[7..7 + cap]);
        assert_eq!(v.as_slice(), &src[7..7 + cap]);
        assert_ne!(v.as_slice().as_ptr(), shared.as_slice()[7..].as_ptr());
    }

    #[test]
    fn long_values_of_a_lazy_backing_are_ranges_of_its_one_copy() {
        let cap = SharedBytes::INLINE_CAP;
        let src: Vec<u8> = (0..200u8).collect();
        let b = Backing::lazy(&src);
        let first = b.share(&src[2..2 + cap + 1]);
        let second = b.share(&src[100..150]);
        let last = b.share(&src[180..]);
        assert_eq!(first.as_slice(), &src[2..3 + cap]);
        assert_eq!(second.as_slice(), &src[100..150]);
        assert_eq!(last.as_slice(), &src[180..]);
        // One copy: the three values lie at the same distances apart as in the source.
        let base = first.as_slice().as_ptr() as usize - 2;
        assert_eq!(second.as_slice().as_ptr() as usize - base, 100);
        assert_ne!(
            first.as_slice().as_ptr(),
            src[2..].as_ptr(),
            "a copy, not the source"
        );
        drop(b);
        // The values outlive the backing (they hold the copy).
        assert_eq!(last.as_slice(), &src[180..]);
        assert_eq!(first.clone().as_slice(), &src[2..3 + cap]);
    }
}
