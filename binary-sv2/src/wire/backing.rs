//! Owned storage for variable-length values: how a borrowed value becomes an owned one.

use crate::error::DecodeError;
use crate::shared::SharedBytes;
use crate::wire::{Decode, Reader, Wire, WireRef};
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
#[doc(hidden)]
pub struct Backing<'s> {
    /// Address of the first source byte (only compared, never dereferenced).
    base: usize,
    source: Source<'s>,
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

/// Decodes an `R` from the front of `bytes`.
///
/// When `R`'s owned type has a fixed length and `bytes` holds at least that many, the value
/// is read from exactly those bytes. The reader then checks its bounds against a constant,
/// and the compiler removes those checks: one length check for the whole value instead of
/// one per field (docs/adr/0001-owned-storage.md). Otherwise (a
/// variable length, or too few bytes, which gets the precise error) this is exactly
/// `R::decode_ref(bytes)`. The result is the same either way: decoding ignores trailing
/// bytes, and every input of a fixed-length type's length decodes ([`Wire::FIXED_LEN`]).
#[inline(always)]
pub(crate) fn decode_ref_front<'a, R: WireRef<'a>>(bytes: &'a [u8]) -> Result<R, DecodeError> {
    if let Some(head) = <R::Owned as Wire>::FIXED_LEN.and_then(|n| bytes.get(..n)) {
        return R::decode_ref(head);
    }
    R::decode_ref(bytes)
}

/// The owned decode of a `T` from the start of `bytes`, handed to `ok` (or the error to
/// `err`), whose result is returned. What the message enums' decoders use instead of
/// `T::decode_owned` (docs/adr/0004-message-enum-layout.md): in a
/// `Result<T, DecodeError>` the error's fields lie over the value's, and the compiler
/// splits the value's words where the error's fields start (after the first byte of
/// a `SharedBytes`' tag word and of its first data word), so a value kept across the
/// out-of-line call for a long value was carried as a byte and seven, and put back
/// together with a dozen shifts and byte moves.
#[inline(always)]
pub(crate) fn decode_owned_then<T: Wire, O>(
    bytes: &[u8],
    ok: impl FnOnce(T) -> O,
    err: impl FnOnce(DecodeError) -> O,
) -> O {
    if T::INLINE {
        // No long value, so no call to keep the value across. Which form is best here is
        // a matter of code generation, measured (ADR 0004): built in `ok`, NewMiningJob's
        // `U256` went through the stack in pieces that a wide load then read back (1.85x
        // the time), and through `T::decode_owned` (this `Result`, mapped) too (1.54x).
        // Through this `Result` it stays in registers, and UpdateChannel's first two
        // fields are read as one word instead of stored as two and loaded as one (0.5x).
        return match decode_owned_prefix::<T>(bytes) {
            Ok((v, _)) => ok(v),
            Err(e) => err(e),
        };
    }
    decode_then_own::<T, O>(
        bytes,
        Backing::lazy,
        |v, backing, _| ok(v.to_owned_in(backing)),
        err,
    )
}

pub(super) fn decode_owned_prefix<T: Wire>(bytes: &[u8]) -> Result<(T, usize), DecodeError> {
    decode_then_own::<T, _>(
        bytes,
        Backing::lazy,
        |v, backing, used| Ok((v.to_owned_in(backing), used)),
        Err,
    )
}

/// Decodes the borrowed form of a `T` from the start of `bytes` (the validation), then
/// hands it to `own` with the backing its long values map into (none when `T` has no
/// variable-length field, else `lazy` of the consumed bytes, copied once on the first long
/// value) and the number of bytes consumed; or the error to `err`. Returns what either
/// returns.
#[inline(always)]
fn decode_then_own<'b, T: Wire, R>(
    bytes: &'b [u8],
    lazy: impl FnOnce(&'b [u8]) -> Backing<'b>,
    own: impl FnOnce(&T::Ref<'b>, &Backing<'b>, usize) -> R,
    err: impl FnOnce(DecodeError) -> R,
) -> R {
    // A fixed-length type is read with one length check, as in `decode_ref_front`. The
    // field-by-field path below keeps its own shape: sharing one helper that returned the
    // value and its length made NewMiningJob's owned decode 23 % slower (ADR 0001).
    if let Some((n, head)) = T::FIXED_LEN.and_then(|n| Some((n, bytes.get(..n)?))) {
        let v = match <T::Ref<'b> as Decode<'b>>::decode_ref(head) {
            Ok(v) => v,
            Err(e) => return err(e),
        };
        let backing = if T::INLINE {
            Backing::none()
        } else {
            lazy(head)
        };
        return own(&v, &backing, n);
    }
    let mut r = Reader::new(bytes);
    let v = match <T::Ref<'b> as Decode<'b>>::decode(&mut r) {
        Ok(v) => v,
        Err(e) => return err(e),
    };
    let used = r.position();
    if T::INLINE {
        own(&v, &Backing::none(), used)
    } else {
        let consumed = bytes.get(..used).unwrap_or(bytes);
        own(&v, &lazy(consumed), used)
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
