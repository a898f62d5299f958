//! Wire encoding of values: the traits every Sv2 data type and derived message
//! implements, and the slice cursor decoding reads from.
//!
//! * [`Encode`]: exact [`encoded_len`](Encode::encoded_len) first, then an infallible
//!   [`encode`](Encode::encode) into any [`BufMut`].
//! * [`Decode`]: reads a value from a [`Reader`] over a byte slice, returning a
//!   [`DecodeError`] that says what, where and in which field.
//! * [`Wire`] links an owned type to its borrowed twin ([`Wire::Ref`]); [`WireRef`] goes back.
//! * [`from_bytes`], [`from_bytes_ref`], [`from_bytes_ref_with_rest`]: one-call decoding.
//!
//! Message identity (header constants, dispatch) is one layer up, in
//! [`dispatch`](crate::dispatch).

use bytes::BufMut;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{BufferTooSmall, DecodeError, DecodeErrorKind};
use alloc::vec::Vec;

mod reader;

pub use reader::Reader;

// ===== Encode =====

/// A value that can be written in Sv2 wire format.
///
/// [`encoded_len`](Encode::encoded_len) is exact, so a caller can reserve once and the
/// write never reallocates. Encoding cannot fail: every bound was checked when the value was
/// built.
///
/// ```
/// use sv2c_binary::{Encode, U24};
/// let v = U24::try_from(0x0a0b0c_u32).unwrap();
/// assert_eq!(v.encoded_len(), 3);
/// let mut out = Vec::new();
/// v.encode(&mut out);
/// assert_eq!(out, [0x0c, 0x0b, 0x0a]); // little-endian
/// ```
pub trait Encode {
    /// Exact number of bytes [`encode`](Encode::encode) writes.
    fn encoded_len(&self) -> usize;

    /// Writes the value into `buf`.
    ///
    /// # Panics
    /// Only if `buf` cannot grow and has fewer than [`encoded_len`](Encode::encoded_len) bytes
    /// of room (`BufMut` for `&mut [u8]` panics then). Growable buffers (`Vec<u8>`,
    /// `BytesMut`) never panic; for a fixed slice use
    /// [`encode_to_slice`](Encode::encode_to_slice), which checks first.
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B);

    /// Encodes into a new `Vec` of exactly the right capacity.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }

    /// Encodes into the front of `out`, returning how many bytes were written.
    ///
    /// # Errors
    /// [`BufferTooSmall`] if `out` is shorter than [`encoded_len`](Encode::encoded_len);
    /// nothing is written then.
    fn encode_to_slice(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let needed = self.encoded_len();
        match out.get_mut(..needed) {
            Some(mut dst) => {
                self.encode(&mut dst);
                Ok(needed)
            }
            None => Err(BufferTooSmall {
                needed,
                available: out.len(),
            }),
        }
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    #[inline]
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }
    #[inline]
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        (**self).encode(buf)
    }
}

// ===== Decode =====

/// A value that can be read from Sv2 wire bytes.
///
/// Implemented by the borrowed (`Ref`) types, which point into the input, and by
/// fixed-size types, which are read by value. Owned values with variable-length fields are
/// obtained through [`Wire::decode_owned`] / [`from_bytes`].
pub trait Decode<'a>: Sized {
    /// Reads one value, advancing the reader past it.
    ///
    /// # Errors
    /// Any [`DecodeError`]; on error the reader's position is unspecified.
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError>;

    /// Decodes one value from the front of `bytes` (trailing bytes are ignored). For a
    /// borrowed type the value points into `bytes`: no allocation, no copy. The owned
    /// counterpart is [`Wire::decode_owned`].
    ///
    /// ```
    /// use sv2c_binary::{Decode, Str0255Ref};
    /// let s = Str0255Ref::decode_ref(&[2, b'h', b'i']).unwrap();
    /// assert_eq!(s.as_str(), Ok("hi"));
    /// ```
    ///
    /// # Errors
    /// Any [`DecodeError`].
    #[inline]
    fn decode_ref(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        Self::decode(&mut Reader::new(bytes))
    }
}

// ===== Wire / WireRef =====

/// An owned Sv2 value and its link to a borrowed twin.
///
/// Owned values have no lifetime (`'static`). Fixed-size ones are stored inline; variable-length ones
/// share one backing allocation per decoded message ([`SharedBytes`](crate::SharedBytes)).
pub trait Wire: Encode + Sized + 'static {
    /// The borrowed form. For fixed-size types it is the type itself.
    type Ref<'a>: WireRef<'a, Owned = Self>;

    /// `true` if owned values never point into a shared backing buffer, so decoding one
    /// allocates nothing.
    const INLINE: bool;

    /// `Some(n)` if every value encodes to exactly `n` bytes **and** every `n`-byte input
    /// decodes successfully (so a sequence of them can be checked by length alone).
    const FIXED_LEN: Option<usize>;

    /// The borrowed view of this value (no allocation, no copy of variable-length data).
    fn to_ref(&self) -> Self::Ref<'_>;

    /// Decodes an owned value from the front of `bytes`.
    ///
    /// Costs **one** allocation if the type has variable-length fields (the consumed bytes
    /// are copied once and every field becomes a slice of that copy) and **none** if it is
    /// [`INLINE`](Wire::INLINE). Trailing bytes are ignored (they may be TLVs, see the spec
    /// §3.6); use [`decode_owned_exact`](Wire::decode_owned_exact) to reject them.
    ///
    /// # Errors
    /// Any [`DecodeError`]; nothing is allocated before the input has been validated.
    fn decode_owned(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_owned_prefix(bytes).map(|(v, _)| v)
    }

    /// As [`decode_owned`](Wire::decode_owned), but bytes left over are an error
    /// ([`DecodeErrorKind::TrailingBytes`]).
    ///
    /// # Errors
    /// Any [`DecodeError`].
    fn decode_owned_exact(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (v, used) = decode_owned_prefix::<Self>(bytes)?;
        match bytes.len() - used {
            0 => Ok(v),
            len => Err(DecodeError::new(
                DecodeErrorKind::TrailingBytes { len },
                "payload",
                used,
            )),
        }
    }
}

/// The borrowed twin of a [`Wire`] type.
///
/// Go back to the owned form with [`to_owned_value`](WireRef::to_owned_value).
///
/// # Implementing by hand
/// `#[derive(Wire)]` writes this impl for you; a hand-written [`Wire`] type also needs one,
/// and one of the hidden supertrait `sv2c_binary::__private::ToOwnedIn<Self::Owned>`,
/// which makes the owned value. That trait is plumbing, not something to call: its one
/// method, `to_owned_in(&self, backing: &Backing<'_>) -> Owned`, lets every field of a
/// message take its variable-length bytes from one shared copy of the decoded input, so
/// decoding an owned message costs at most one allocation. Implement it by calling
/// `to_owned_in` with the same `backing` on each field, in wire order (as the derive
/// does), or, for a type holding raw bytes, with `backing.share(bytes)`; a fixed-size type
/// ignores `backing` and returns a copy of itself.
///
/// ```
/// use sv2c_binary::__private::{Backing, ToOwnedIn};
/// use sv2c_binary::{Decode, DecodeError, Encode, Reader, Str0255, Str0255Ref, Wire, WireRef};
///
/// /// An owned name and its borrowed twin, written by hand.
/// #[derive(Debug, PartialEq)]
/// struct Name(Str0255);
/// struct NameRef<'a>(Str0255Ref<'a>);
///
/// impl Encode for Name {
///     fn encoded_len(&self) -> usize { self.0.encoded_len() }
///     fn encode<B: bytes::BufMut + ?Sized>(&self, buf: &mut B) { self.0.encode(buf) }
/// }
/// impl Encode for NameRef<'_> {
///     fn encoded_len(&self) -> usize { self.0.encoded_len() }
///     fn encode<B: bytes::BufMut + ?Sized>(&self, buf: &mut B) { self.0.encode(buf) }
/// }
/// impl<'a> Decode<'a> for NameRef<'a> {
///     fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
///         Str0255Ref::decode(r).map(NameRef)
///     }
/// }
/// impl Wire for Name {
///     type Ref<'a> = NameRef<'a>;
///     const INLINE: bool = false;
///     const FIXED_LEN: Option<usize> = None;
///     fn to_ref(&self) -> NameRef<'_> { NameRef(self.0.to_ref()) }
/// }
/// impl<'a> WireRef<'a> for NameRef<'a> {
///     type Owned = Name;
/// }
/// impl ToOwnedIn<Name> for NameRef<'_> {
///     fn to_owned_in(&self, backing: &Backing<'_>) -> Name {
///         Name(self.0.to_owned_in(backing))
///     }
/// }
///
/// let owned = Name::decode_owned(&[2, b'h', b'i']).unwrap();
/// assert_eq!(owned.0.as_str(), Ok("hi"));
/// assert_eq!(owned.to_ref().to_owned_value(), owned);
/// ```
pub trait WireRef<'a>: Encode + Decode<'a> + ToOwnedIn<<Self as WireRef<'a>>::Owned> {
    /// The owned type this borrows from.
    type Owned: Wire;

    /// Makes the owned value: no allocation for values of at most
    /// [`SharedBytes::INLINE_CAP`](crate::SharedBytes::INLINE_CAP) bytes (stored inline),
    /// one copy of its own for each longer one.
    fn to_owned_value(&self) -> Self::Owned {
        self.to_owned_in(&Backing::none())
    }
}

// ===== convenience =====

/// Decodes an owned value from the front of `bytes` (trailing bytes are ignored).
/// See [`Wire::decode_owned`].
///
/// # Errors
/// Any [`DecodeError`].
pub fn from_bytes<T: Wire>(bytes: &[u8]) -> Result<T, DecodeError> {
    T::decode_owned(bytes)
}

/// Decodes a borrowed value from the front of `bytes` (no allocation, no copy).
///
/// # Errors
/// Any [`DecodeError`].
pub fn from_bytes_ref<'a, T: Decode<'a>>(bytes: &'a [u8]) -> Result<T, DecodeError> {
    T::decode_ref(bytes)
}

/// Decodes a borrowed value and returns it with the bytes left after it (e.g. a TLV tail).
///
/// # Errors
/// Any [`DecodeError`].
pub fn from_bytes_ref_with_rest<'a, T: Decode<'a>>(
    bytes: &'a [u8],
) -> Result<(T, &'a [u8]), DecodeError> {
    let mut r = Reader::new(bytes);
    let v = T::decode(&mut r)?;
    Ok((v, r.rest()))
}

// ===== owned decoding =====

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
/// `T::decode_owned`, so that a value with long fields is never in a `Result` whose error
/// lies over its words (docs/adr/0004-message-enum-layout.md).
#[inline(always)]
pub(crate) fn decode_owned_then<T: Wire, O>(
    bytes: &[u8],
    ok: impl FnOnce(T) -> O,
    err: impl FnOnce(DecodeError) -> O,
) -> O {
    if T::INLINE {
        // No long value, so no call to keep the value across: through this `Result` the
        // value stays in registers (ADR 0004 compares the forms).
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

fn decode_owned_prefix<T: Wire>(bytes: &[u8]) -> Result<(T, usize), DecodeError> {
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
    // A fixed-length type is read with one length check, as in `decode_ref_front`; the
    // field-by-field path below keeps its own shape on purpose (ADR 0001).
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
