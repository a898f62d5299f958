//! Owned storage for variable-length values: how a borrowed value becomes an owned one
//! with at most one allocation.
//!
//! This is plumbing between the wire types and the derive. It is public only because the
//! derive's generated [`WireRef::to_owned_in`] implementations (and a hand-written
//! [`WireRef`]) name [`Backing`]; it is hidden from the docs for that reason.

use crate::error::DecodeError;
use crate::shared::{LongParts, SharedBytes};
use crate::shared_buf::{Packer, SharedBuf};
use crate::wire::{Decode, Reader, Wire, WireRef};
use alloc::boxed::Box;
use core::cell::Cell;
use core::fmt;
use core::mem::ManuallyDrop;

/// Where an owned value being built from a borrowed one finds its variable-length bytes.
///
/// Values of at most [`SharedBytes::INLINE_CAP`] bytes are always stored inline (no
/// allocation, no reference count). Longer ones are mapped by their address: a slice that
/// lies inside the backing's source bytes becomes the same range of one shared copy of
/// those bytes; a slice from elsewhere is copied on its own.
///
/// In a decode ([`Backing::lazy`]) the borrowed value points into the input, and the
/// shared copy of the consumed bytes is made only when the first long value asks for it:
/// a message whose variable-length values are all short decodes with no allocation.
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
    /// The source bytes themselves, copied once on the first long slice.
    Lazy {
        bytes: &'s [u8],
        copy: Cell<LazyCopy>,
        /// Every value handed out stays on this thread while values are being asked for
        /// ([`Backing::lazy_local`]): the copy's counter is raised without a locked
        /// instruction.
        local: bool,
    },
    /// The long values themselves, one after the other in the order they are asked for
    /// ([`WireRef::pack_long_values`]); `next` is where the next one starts.
    /// The backing holds one reference to the copy until it gives it to the last value
    /// (the one that ends at `len`). Not dropped with the backing: [`ref_to_owned`], which
    /// makes every packed backing, drops what is left by [`Backing::into_packed_rest`]. Were
    /// it dropped with the backing, `Backing`'s drop grew and was no longer inlined: every
    /// decode, which drops a `Backing::none()` or a lazy one, made a call for it (+175
    /// instructions for a borrowed SubmitSharesStandard, `sv2c-icount`).
    Packed {
        buf: Cell<Option<ManuallyDrop<SharedBuf>>>,
        len: usize,
        next: Cell<usize>,
    },
}

/// The state of a [`Source::Lazy`] copy.
#[derive(Default)]
enum LazyCopy {
    /// Not made yet.
    #[default]
    NotYet,
    /// Made; the backing holds one reference.
    Held(SharedBuf),
    /// Made, and the backing's own reference was handed to the last long value.
    Given,
}

impl fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::None => f.write_str("None"),
            Source::Mirror(shared) => f.debug_tuple("Mirror").field(shared).finish(),
            Source::Lazy { bytes, .. } => {
                f.debug_struct("Lazy").field("len", &bytes.len()).finish()
            }
            Source::Packed { len, next, .. } => f
                .debug_struct("Packed")
                .field("len", len)
                .field("next", &next.get())
                .finish(),
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
    /// slice with at most `INLINE_CAP` bytes after it takes the backing's own reference to
    /// the copy, and a long slice asked for after that one is copied on its own (correct,
    /// but one more allocation).
    pub fn lazy(source: &'s [u8]) -> Self {
        Self::lazy_counted(source, false)
    }

    /// The long values of one conversion, packed one after the other in `packed` in the
    /// order the conversion asks for them ([`WireRef::pack_long_values`]): each becomes the
    /// next range of `packed`, whatever its address. A long value that does not fit in what
    /// is left is copied on its own.
    fn packed(buf: SharedBuf) -> Self {
        Backing {
            base: 0,
            source: Source::Packed {
                len: buf.len(),
                buf: Cell::new(Some(ManuallyDrop::new(buf))),
                next: Cell::new(0),
            },
        }
    }

    /// The reference to a packed copy that no value took (when the last long value was not
    /// asked for), for the caller to drop; `None` for any other backing.
    fn into_packed_rest(self) -> Option<SharedBuf> {
        match self.source {
            Source::Packed { buf, .. } => buf.take().map(ManuallyDrop::into_inner),
            _ => None,
        }
    }

    /// A lazy backing over `source`; `local` as in [`Source::Lazy`].
    fn lazy_counted(source: &'s [u8], local: bool) -> Self {
        Backing {
            base: source.as_ptr() as usize,
            source: Source::Lazy {
                bytes: source,
                copy: Cell::new(LazyCopy::NotYet),
                local,
            },
        }
    }

    /// [`lazy`](Self::lazy), for a conversion known to keep what it gets on this thread:
    /// the references to the copy are counted with plain reads and writes of its counter
    /// instead of locked increments (`SharedBuf::clone_local`,
    /// docs/adr/0001-owned-storage.md).
    ///
    /// # Safety
    ///
    /// Until the last call to [`share`](Self::share) on this backing has returned, no value
    /// it returned (nor a clone of one) may be sent to, shared with, or dropped on another
    /// thread. The message types of this crate, whose conversions are the derive's over this
    /// crate's field types, keep that (`KeepsSharesLocal`).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn lazy_local(source: &'s [u8]) -> Self {
        Self::lazy_counted(source, true)
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
        SharedBytes::from_long(self.share_long(sub))
    }

    /// The source bytes (their copy for a mirror; none for [`Backing::none`]).
    #[inline]
    fn source_bytes(&self) -> &[u8] {
        match &self.source {
            Source::None => &[],
            Source::Mirror(shared) => shared.as_slice(),
            Source::Lazy { bytes, .. } => bytes,
            Source::Packed { .. } => &[],
        }
    }

    /// [`share`](Self::share) for a value longer than [`SharedBytes::INLINE_CAP`].
    #[inline(never)]
    #[allow(unsafe_code)]
    fn share_long(&self, sub: &[u8]) -> LongParts {
        // Only addresses are compared; nothing is dereferenced through them.
        let off = (sub.as_ptr() as usize).wrapping_sub(self.base);
        let within = |len: usize| off <= len && sub.len() <= len - off;
        match &self.source {
            Source::Mirror(shared) if within(shared.len()) => shared
                .slice(off..off + sub.len())
                .into_long()
                .unwrap_or_else(|| long_copy(sub)),
            Source::Lazy { bytes, copy, local } if within(bytes.len()) => {
                let range = off..off + sub.len();
                let buf = match copy.take() {
                    LazyCopy::Held(buf) => buf,
                    LazyCopy::NotYet => SharedBuf::copy_from_slice(bytes),
                    // Asked again after the last long value (out of order): copy.
                    LazyCopy::Given => {
                        copy.set(LazyCopy::Given);
                        return long_copy(sub);
                    }
                };
                // Values are asked for in wire order; when fewer than `INLINE_CAP + 1`
                // bytes follow this one, no long value can follow, so this one takes the
                // backing's own reference instead of a new one (saving an atomic increment
                // now and a decrement when the backing is dropped).
                if bytes.len() - range.end <= SharedBytes::INLINE_CAP {
                    copy.set(LazyCopy::Given);
                    LongParts::Shared(buf, range)
                } else {
                    let v = if *local {
                        // SAFETY: a `local` backing is made only by `lazy_local`, whose
                        // caller keeps every value handed out on this thread while values
                        // are asked for; the copy is this backing's own and every other
                        // owner of it is such a value, so no other thread can reach the
                        // counter now.
                        LongParts::Shared(unsafe { buf.clone_local() }, range)
                    } else {
                        LongParts::Shared(buf.clone(), range)
                    };
                    copy.set(LazyCopy::Held(buf));
                    v
                }
            }
            Source::Packed { buf, len, next } => {
                let start = next.get();
                let end = start.saturating_add(sub.len());
                match buf.take() {
                    Some(copy) if end <= *len => {
                        next.set(end);
                        if end == *len {
                            // The last one: it takes the backing's own reference.
                            LongParts::Shared(ManuallyDrop::into_inner(copy), start..end)
                        } else {
                            let v = LongParts::Shared(SharedBuf::clone(&copy), start..end);
                            buf.set(Some(copy));
                            v
                        }
                    }
                    other => {
                        buf.set(other);
                        long_copy(sub)
                    }
                }
            }
            _ => long_copy(sub),
        }
    }
}

/// What [`WireRef::long_len`] is for one variable-length value's bytes: their length when
/// they are long (stored as a range of a shared copy), else 0.
#[inline]
pub(crate) fn long_len_of(bytes: &[u8]) -> usize {
    if bytes.len() > SharedBytes::INLINE_CAP {
        bytes.len()
    } else {
        0
    }
}

/// What [`WireRef::pack_long_values`] does for one variable-length value's bytes: appended
/// to `out` when they are long.
#[inline]
pub(crate) fn pack_long(bytes: &[u8], out: &mut Packer<'_>) -> Option<()> {
    if bytes.len() <= SharedBytes::INLINE_CAP {
        return Some(());
    }
    out.put(bytes)
}

/// A copy of `bytes` in one new allocation, as parts.
fn long_copy(bytes: &[u8]) -> LongParts {
    LongParts::Shared(SharedBuf::copy_from_slice(bytes), 0..bytes.len())
}

/// Decodes an `R` from the front of `bytes`.
///
/// When `R`'s owned type has a fixed length and `bytes` holds at least that many, the value
/// is read from exactly those bytes. The reader then checks its bounds against a constant,
/// and the compiler removes those checks: one length check for the whole value instead of
/// one per field (docs/adr/0014-generated-codecs.md). Otherwise (a
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

/// [`Wire::decode_owned`] into a new box, with the value built in the box: the input is
/// validated first (its borrowed form decoded), then the box is allocated and the owned
/// value written into it, instead of built on the stack and copied in (`Box::new`), a
/// copy whose wide loads waited on the narrow stores that had just built the value
/// (docs/adr/0001-owned-storage.md). The box goes to `ok`, an error to `err`, and
/// what either returns is returned: no `Result<Box<T>, DecodeError>` is built (see
/// [`decode_owned_then`]). For the boxed variants of the message enums; nothing is
/// allocated before the input has been validated.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn decode_owned_boxed_then<T: BuiltInPlace, O>(
    bytes: &[u8],
    ok: impl FnOnce(Box<T>) -> O,
    err: impl FnOnce(DecodeError) -> O,
) -> O {
    decode_then_own::<T, O>(
        bytes,
        // SAFETY: `T: BuiltInPlace`, so `T: KeepsSharesLocal`: its conversion keeps what
        // it gets from the backing on this thread.
        |source| unsafe { Backing::lazy_local(source) },
        |v, backing, _| {
            // Each field is written into the box as it is made (ADR 0004): built on the
            // stack and moved in, the value was copied with a `memcpy` call, and kept
            // across the long values' calls in pieces that wider loads then waited on.
            let mut b = Box::<T>::new_uninit();
            v.to_owned_uninit(backing, &mut b);
            // SAFETY: `T: BuiltInPlace`, so `to_owned_uninit` has initialised `*b`.
            ok(unsafe { b.assume_init() })
        },
        err,
    )
}

/// A type whose borrowed form's [`WireRef::to_owned_uninit`] always initialises `out`:
/// the derive's (it writes every field) or the trait's default (it writes the whole value).
/// The boxed variants of the message enums are built in their box through it.
///
/// # Safety
/// Implement only for a type whose `Ref`'s `to_owned_uninit` leaves `out` initialised
/// whenever it returns; [`decode_owned_boxed_then`] assumes it.
#[allow(unsafe_code)]
pub(crate) unsafe trait BuiltInPlace: KeepsSharesLocal {}

/// A type whose borrowed form's [`WireRef::to_owned_in`] and
/// [`WireRef::to_owned_uninit`] keep every value they get from the [`Backing`] on the
/// calling thread until they return (they only put them into the value being built):
/// the message types of this crate, whose conversions are the derive's over this crate's
/// field types. Their decodes count the references to the shared copy without locked
/// instructions ([`Backing::lazy_local`],
/// docs/adr/0001-owned-storage.md).
///
/// # Safety
/// Implement only for a type whose `Ref`'s conversions, and everything they call, neither
/// send nor share with another thread, nor drop or clone there, any value obtained from
/// the backing before they return.
#[allow(unsafe_code)]
pub(crate) unsafe trait KeepsSharesLocal: Wire {}

/// The owned decode of a `T` from the start of `bytes`, handed to `ok` (or the error to
/// `err`), whose result is returned. What the message enums' decoders use instead of
/// `T::decode_owned` (docs/adr/0001-owned-storage.md): in a
/// `Result<T, DecodeError>` the error's fields lie over the value's, and the compiler
/// splits the value's words where the error's fields start (after the first byte of
/// a `SharedBytes`' tag word and of its first data word), so a value kept across the
/// out-of-line call for a long value was carried as a byte and seven, and put back
/// together with a dozen shifts and byte moves.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn decode_owned_then<T: KeepsSharesLocal, O>(
    bytes: &[u8],
    ok: impl FnOnce(T) -> O,
    err: impl FnOnce(DecodeError) -> O,
) -> O {
    if T::INLINE {
        // No long value, so no call to keep the value across. Which form is best here is
        // a matter of code generation, measured (ADR 0001): built in `ok`, NewMiningJob's
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
        // SAFETY: `T: KeepsSharesLocal`: its conversion keeps what it gets from the
        // backing on this thread.
        |source| unsafe { Backing::lazy_local(source) },
        |v, backing, _| ok(v.to_owned_decoded(backing)),
        err,
    )
}

pub(super) fn decode_owned_prefix<T: Wire>(bytes: &[u8]) -> Result<(T, usize), DecodeError> {
    decode_then_own::<T, _>(
        bytes,
        Backing::lazy,
        |v, backing, used| Ok((v.to_owned_decoded(backing), used)),
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
    // value and its length made NewMiningJob's owned decode 23 % slower (ADR 0014).
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

/// Encoded sizes up to which [`ref_to_owned`] re-encodes on the stack.
const STACK_ENCODE: usize = 256;

/// Ref → owned with at most one allocation: field by field when at most one value is long
/// ([`WireRef::long_values`]). With more, and a type that can pack them
/// ([`WireRef::long_len`], [`WireRef::pack_long_values`]: every derived type of this
/// crate's field types), the long values are copied end to end into one shared buffer and
/// each becomes the next range of it (docs/adr/0001-owned-storage.md).
/// Otherwise: encode into a scratch buffer, decode the borrowed form from it and map every
/// long slice into one shared copy of it. Small values are encoded on the stack and copied
/// to the heap only if a value longer than [`SharedBytes::INLINE_CAP`] needs it; larger ones
/// are encoded straight into the shared buffer. Falls back to per-field copies if the
/// re-decode fails (which would mean `Encode` and `Decode` disagree).
pub(super) fn ref_to_owned<'a, R: WireRef<'a>>(r: &R) -> R::Owned {
    // With no backing, each long value is copied into an allocation of its own: with at
    // most one, that is the one allocation, of just that value's bytes, and the value is
    // converted field by field without being encoded and decoded again.
    if <R::Owned as Wire>::INLINE || r.long_values() <= 1 {
        return r.to_owned_in(&Backing::none());
    }
    // With several, the long values are copied one after the other into one allocation of
    // just their bytes, and the value is converted field by field, each long value taking
    // the next range of that copy.
    let long_len = r.long_len();
    if long_len != usize::MAX {
        let mut packed_all = false;
        let (packed, full) = SharedBuf::build_packed(long_len, |out| {
            packed_all = r.pack_long_values(out).is_some();
        });
        if packed_all && full {
            let backing = Backing::packed(packed);
            let v = r.to_owned_in(&backing);
            drop(backing.into_packed_rest());
            return v;
        }
    }
    let len = r.encoded_len();
    let mut stack = [0u8; STACK_ENCODE];
    if let Some(mut scratch) = stack.get_mut(..len) {
        r.encode(&mut scratch);
        if scratch.is_empty() {
            let bytes = stack.get(..len).unwrap_or(&[]);
            if let Ok(v) =
                <<R::Owned as Wire>::Ref<'_> as Decode<'_>>::decode(&mut Reader::new(bytes))
            {
                return v.to_owned_in(&Backing::lazy(bytes));
            }
        }
        return r.to_owned_in(&Backing::none());
    }
    let shared = SharedBytes::build(len, |mut buf| r.encode(&mut buf));
    let bytes = shared.as_slice();
    match <<R::Owned as Wire>::Ref<'_> as Decode<'_>>::decode(&mut Reader::new(bytes)) {
        Ok(v) => v.to_owned_in(&Backing::mirror(bytes, &shared)),
        Err(_) => r.to_owned_in(&Backing::none()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_made(b: &Backing<'_>) -> Option<usize> {
        match &b.source {
            Source::Lazy { copy, .. } => {
                let state = copy.take();
                let made = match &state {
                    LazyCopy::NotYet => None,
                    LazyCopy::Held(buf) => Some(buf.len()),
                    LazyCopy::Given => Some(usize::MAX),
                };
                copy.set(state);
                made
            }
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
        assert_eq!(copy_made(&b), Some(100), "the whole source, once");
        // The last long value (fewer than `cap + 1` bytes after it) takes the backing's
        // reference; a long value asked for after that is still right, as its own copy.
        assert_eq!(b.share(&src[50..]).as_slice(), &src[50..]);
        assert_eq!(copy_made(&b), Some(usize::MAX));
        assert_eq!(b.share(&src[..]).as_slice(), &src[..]);
        assert_eq!(b.share(&src[1..]).as_slice(), &src[1..]);

        // A long slice from elsewhere is copied on its own.
        let other = [7u8; 64];
        assert_eq!(b.share(&other).as_slice(), &other[..]);
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

    /// A packed backing hands out its copy's ranges in turn, whatever the slices' addresses;
    /// the value that ends the copy takes the backing's own reference; a long value that
    /// does not fit in what is left (asked for out of turn) is copied on its own.
    #[test]
    fn long_values_of_a_packed_backing_are_its_ranges_in_turn() {
        let cap = SharedBytes::INLINE_CAP;
        let a: Vec<u8> = (0..40u8).collect();
        let b: Vec<u8> = (100..160u8).collect();
        let packed = SharedBuf::copy_from_slice(&[&a[..], &b[..]].concat());
        let base = packed.as_slice().as_ptr() as usize;
        let backing = Backing::packed(packed);
        // Short values are inline and take no range.
        assert_eq!(backing.share(&b[..cap]).as_slice(), &b[..cap]);
        let first = backing.share(&a);
        assert_eq!(first.as_slice(), &a[..]);
        assert_eq!(first.as_slice().as_ptr() as usize, base);
        let second = backing.share(&b);
        assert_eq!(second.as_slice(), &b[..]);
        assert_eq!(second.as_slice().as_ptr() as usize, base + a.len());
        // Nothing left: a further long value is its own copy.
        let extra = backing.share(&b[..cap + 1]);
        assert_eq!(extra.as_slice(), &b[..cap + 1]);
        assert!(
            backing.into_packed_rest().is_none(),
            "given to the last value"
        );
        assert_eq!(second.as_slice(), &b[..], "the copy outlives the backing");
        // Too long for what is left: copied, and the next value still gets its range.
        let packed = SharedBuf::copy_from_slice(&[&a[..], &b[..]].concat());
        let base = packed.as_slice().as_ptr() as usize;
        let backing = Backing::packed(packed);
        let too_long: Vec<u8> = (0..120u8).collect();
        assert_eq!(backing.share(&too_long).as_slice(), &too_long[..]);
        let first = backing.share(&a);
        assert_eq!(first.as_slice().as_ptr() as usize, base);
        // The last value was never asked for: the backing's reference comes back.
        let rest = backing.into_packed_rest().expect("still held");
        assert_eq!(rest.len(), a.len() + b.len());
        drop(rest);
        assert_eq!(first.as_slice(), &a[..]);
    }

    /// A message with three long values, kept from its borrowed form: the three are packed
    /// into one copy (run under Miri in CI with the packer's `unsafe`).
    #[test]
    fn to_owned_packs_a_messages_long_values_into_one_copy() {
        use crate::messages::NewExtendedMiningJob;
        use crate::{B064K, Encode, Seq0255, U256};
        let job = NewExtendedMiningJob {
            channel_id: 1,
            job_id: 2,
            min_ntime: Some(3),
            version: 4,
            version_rolling_allowed: true,
            merkle_path: Seq0255::from_slice(&[U256([5; 32]), U256([6; 32])]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(alloc::vec![7; 40]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(alloc::vec![8; 33]).unwrap(),
        };
        let bytes = job.encode_to_vec();
        let r = <NewExtendedMiningJob as Wire>::Ref::decode(&mut Reader::new(&bytes)).unwrap();
        assert_eq!((r.long_values(), r.long_len()), (3, 64 + 40 + 33));
        let kept = r.to_owned_value();
        assert_eq!(kept, job);
        let at = |v: &[u8]| v.as_ptr() as usize;
        let base = at(kept.merkle_path.encoded_elements());
        assert_eq!(at(kept.coinbase_tx_prefix.as_bytes()), base + 64);
        assert_eq!(at(kept.coinbase_tx_suffix.as_bytes()), base + 64 + 40);
        // The kept message owns its bytes: the frame may go.
        drop(bytes);
        assert_eq!(kept.clone(), job);
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

    /// Decodes `v`'s encoding through the in-place boxed path and checks it against `v`
    /// and the by-value decode; a truncated encoding must give the same error both ways.
    fn in_place_round_trip<T: BuiltInPlace + PartialEq + fmt::Debug>(v: &T) {
        let bytes = crate::Encode::encode_to_vec(v);
        let boxed = decode_owned_boxed_then::<T, _>(&bytes, Ok, Err).expect("decodes");
        assert_eq!(*boxed, *v);
        assert_eq!(T::decode_owned(&bytes).expect("decodes"), *v);
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            let short = &bytes[..cut];
            let got = decode_owned_boxed_then::<T, _>(short, Ok, Err).map(|b| *b);
            assert_eq!(got, T::decode_owned(short), "cut at {cut}");
            assert!(got.is_err());
        }
    }

    /// Byte values of `len` bytes, each differing from its neighbours.
    fn filled(len: usize, seed: u8) -> alloc::vec::Vec<u8> {
        (0..len)
            .map(|i| seed.wrapping_add(i as u8).wrapping_mul(31))
            .collect()
    }

    #[test]
    fn in_place_boxed_decode_writes_every_field_of_every_boxed_message() {
        use crate::messages::{Protocol, common, job_declaration, mining, template_distribution};
        use crate::{B064K, B0255, Seq064K, Seq0255, Str0255, U256};
        // Empty, inline, the longest inline and long values in every variable field.
        for len in [
            0usize,
            5,
            SharedBytes::INLINE_CAP,
            SharedBytes::INLINE_CAP + 1,
            200,
        ] {
            let text: alloc::string::String =
                (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let s = |t: &str| Str0255::try_from(t).expect("short enough");
            let b255 = |seed| B0255::try_from(&filled(len, seed)[..]).expect("short enough");
            let b64k = |seed| B064K::try_from(&filled(len * 3, seed)[..]).expect("short enough");
            let hashes: alloc::vec::Vec<U256> =
                (0..len % 7).map(|i| U256([i as u8 + 1; 32])).collect();
            in_place_round_trip(&common::SetupConnection {
                protocol: Protocol::JobDeclaration,
                min_version: 2,
                max_version: 3,
                flags: 0x0102_0304,
                endpoint_host: s(&text),
                endpoint_port: 3336,
                vendor: s("vendor"),
                hardware_version: s(&text[..len / 2]),
                firmware: s(""),
                device_id: s(&text),
            });
            in_place_round_trip(&mining::NewExtendedMiningJob {
                channel_id: 1,
                job_id: 2,
                min_ntime: (len % 2 == 0).then_some(77),
                version: 0x2000_0000,
                version_rolling_allowed: true,
                merkle_path: Seq0255::from_slice(&hashes).expect("short enough"),
                coinbase_tx_prefix: b64k(1),
                coinbase_tx_suffix: b64k(2),
            });
            in_place_round_trip(&mining::SetCustomMiningJob {
                channel_id: 3,
                request_id: 4,
                token: b255(3),
                version: 5,
                prev_hash: U256([9; 32]),
                min_ntime: 6,
                nbits: 7,
                coinbase_tx_version: 2,
                coinbase_prefix: b255(4),
                coinbase_tx_input_n_sequence: 8,
                coinbase_tx_outputs: b64k(5),
                coinbase_tx_locktime: 9,
                merkle_path: Seq0255::from_slice(&hashes).expect("short enough"),
            });
            in_place_round_trip(&job_declaration::DeclareMiningJob {
                request_id: 10,
                mining_job_token: b255(6),
                version: 11,
                coinbase_tx_prefix: b64k(7),
                coinbase_tx_suffix: b64k(8),
                wtxid_list: Seq064K::from_slice(&hashes).expect("short enough"),
                excess_data: b64k(9),
            });
            in_place_round_trip(&template_distribution::NewTemplate {
                template_id: 12,
                future_template: len % 2 == 1,
                version: 13,
                coinbase_tx_version: 2,
                coinbase_prefix: b255(10),
                coinbase_tx_input_sequence: 14,
                coinbase_tx_value_remaining: 15,
                coinbase_tx_outputs_count: 1,
                coinbase_tx_outputs: b64k(11),
                coinbase_tx_locktime: 16,
                merkle_path: Seq0255::from_slice(&hashes).expect("short enough"),
            });
        }
    }
}
