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

use crate::error::{BufferTooSmall, DecodeError, DecodeErrorKind};
use alloc::vec::Vec;

mod backing;
mod reader;

#[doc(hidden)]
pub use backing::Backing;
use backing::decode_owned_prefix;
pub(crate) use backing::{decode_owned_then, decode_ref_front};

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
/// `#[derive(Wire)]` writes this impl for you; a hand-written [`Wire`] type also needs one.
/// Its one required method, `to_owned_in(&self, backing: &Backing<'_>) -> Self::Owned`,
/// is hidden from these docs because it is plumbing, not something to call: it lets every
/// field of a message take its variable-length bytes from one shared copy of the decoded
/// input, so decoding an owned message costs at most one allocation. Implement it by
/// calling `to_owned_in` with the same `backing` on each field, in wire order (as the
/// derive does), or, for a type holding raw bytes, with `backing.share(bytes)`; a
/// fixed-size type ignores `backing` and returns a copy of itself.
pub trait WireRef<'a>: Encode + Decode<'a> {
    /// The owned type this borrows from.
    type Owned: Wire;

    /// Makes the owned value. Variable-length data is taken from `backing` when it lies
    /// inside the backing's source bytes (no copy), and copied otherwise. Hidden: see
    /// "Implementing by hand" above.
    #[doc(hidden)]
    fn to_owned_in(&self, backing: &Backing<'_>) -> Self::Owned;

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
