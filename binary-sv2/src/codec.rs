//! The traits every wire type implements, and the slice cursor decoding reads from.
//!
//! * [`Encode`]: exact [`encoded_len`](Encode::encoded_len) first, then an infallible
//!   [`encode`](Encode::encode) into any [`BufMut`].
//! * [`Decode`]: reads a value from a [`Reader`] over a byte slice, returning a
//!   [`DecodeError`] that says what, where and in which field.
//! * [`Wire`] links an owned type to its borrowed twin ([`Wire::Ref`]); [`WireRef`] goes back.

use bytes::BufMut;

use crate::error::{BufferTooSmall, DecodeError, DecodeErrorKind};
use crate::shared::SharedBytes;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt;

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

// ===== Reader =====

/// A cursor over the bytes being decoded. Knows its position so errors can report offsets.
///
/// ```
/// use sv2c_binary::Reader;
/// let mut r = Reader::new(&[1, 0, 2, 0, 0]);
/// assert_eq!(r.read_u16("U16").unwrap(), 1);
/// assert_eq!(r.position(), 2);
/// assert!(r.read_u32("U32").is_err()); // only 3 bytes left
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Offset of the next byte to read, from the start of the input.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Number of bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The bytes not read yet (does not advance).
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        // `pos <= data.len()` is an invariant: every advance is checked.
        self.data.get(self.pos..).unwrap_or(&[])
    }

    /// The whole input, read and unread.
    #[inline]
    pub fn input(&self) -> &'a [u8] {
        self.data
    }

    /// Takes the next `n` bytes; `ty` names the wire type for the error.
    ///
    /// # Errors
    /// [`DecodeErrorKind::Truncated`] if fewer than `n` bytes are left (offset = current
    /// position). Nothing is consumed then.
    #[inline]
    pub fn take(&mut self, n: usize, ty: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.data.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(DecodeError::truncated(ty, self.pos, n, self.remaining())),
        }
    }

    /// Takes the next `N` bytes as an array.
    ///
    /// # Errors
    /// As [`take`](Reader::take).
    #[inline]
    pub fn array<const N: usize>(&mut self, ty: &'static str) -> Result<[u8; N], DecodeError> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        match rest.first_chunk::<N>() {
            Some(a) => {
                self.pos += N;
                Ok(*a)
            }
            None => Err(DecodeError::truncated(ty, self.pos, N, rest.len())),
        }
    }

    /// Reads a `U8`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u8(&mut self, ty: &'static str) -> Result<u8, DecodeError> {
        self.array::<1>(ty).map(|[b]| b)
    }

    /// Reads a little-endian `U16`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u16(&mut self, ty: &'static str) -> Result<u16, DecodeError> {
        self.array(ty).map(u16::from_le_bytes)
    }

    /// Reads a little-endian `U24` into the low 24 bits of a `u32`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u24(&mut self, ty: &'static str) -> Result<u32, DecodeError> {
        self.array::<3>(ty)
            .map(|[a, b, c]| u32::from_le_bytes([a, b, c, 0]))
    }

    /// Reads a little-endian `U32`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u32(&mut self, ty: &'static str) -> Result<u32, DecodeError> {
        self.array(ty).map(u32::from_le_bytes)
    }

    /// Reads a little-endian `U64`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u64(&mut self, ty: &'static str) -> Result<u64, DecodeError> {
        self.array(ty).map(u64::from_le_bytes)
    }

    /// Reads a length prefix of `prefix_len` bytes (1, 2 or 3), checks it against `max`
    /// and against the bytes left, and takes that many bytes.
    ///
    /// # Errors
    /// Truncated input or a prefix above `max`; offsets point at the prefix.
    #[inline]
    pub fn length_prefixed(
        &mut self,
        prefix_len: usize,
        max: usize,
        ty: &'static str,
    ) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let len = match prefix_len {
            1 => self.read_u8(ty)? as usize,
            2 => self.read_u16(ty)? as usize,
            _ => self.read_u24(ty)? as usize,
        };
        if len > max {
            self.pos = start;
            return Err(DecodeError::new(
                DecodeErrorKind::TooLong { len, max },
                ty,
                start,
            ));
        }
        match self.take(len, ty) {
            Ok(b) => Ok(b),
            Err(_) => {
                let available = self.data.len() - start;
                self.pos = start;
                Err(DecodeError::truncated(
                    ty,
                    start,
                    prefix_len + len,
                    available,
                ))
            }
        }
    }
}

// ===== Decode =====

/// A value that can be read from Sv2 wire bytes.
///
/// Implemented by the borrowed (`Ref`) types, which point into the input, and by
/// fixed-size types, which are read by value. Owned values with variable-length fields are
/// obtained through [`Wire::decode_owned`] / [`from_bytes`](crate::from_bytes).
pub trait Decode<'a>: Sized {
    /// Reads one value, advancing the reader past it.
    ///
    /// # Errors
    /// Any [`DecodeError`]; on error the reader's position is unspecified.
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError>;
}

// ===== Wire / WireRef =====

/// An owned Sv2 value and its link to a borrowed twin.
///
/// Owned values have no lifetime (`'static`). Fixed-size ones are stored inline; variable-length ones
/// share one backing allocation per decoded message ([`SharedBytes`]).
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
pub trait WireRef<'a>: Encode + Decode<'a> {
    /// The owned type this borrows from.
    type Owned: Wire;

    /// Makes the owned value. Variable-length data is taken from `backing` when it lies
    /// inside the backing's source bytes (no copy), and copied otherwise.
    fn to_owned_in(&self, backing: &Backing<'_>) -> Self::Owned;

    /// Makes the owned value with at most one allocation for all variable-length data (none
    /// when every variable-length value is at most [`SharedBytes::INLINE_CAP`] bytes).
    fn to_owned_value(&self) -> Self::Owned {
        ref_to_owned(self)
    }
}

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
    },
}

/// The state of a [`Source::Lazy`] copy.
#[derive(Default)]
enum LazyCopy {
    /// Not made yet.
    #[default]
    NotYet,
    /// Made; the backing holds one reference.
    Held(Arc<[u8]>),
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
        Backing {
            base: source.as_ptr() as usize,
            source: Source::Lazy {
                bytes: source,
                copy: Cell::new(LazyCopy::NotYet),
            },
        }
    }

    /// The owned equivalent of `sub`: inline when short (and no allocation at all when
    /// empty), else a range of the backing copy when `sub` lies in the source range, else a
    /// fresh copy.
    #[inline]
    pub fn share(&self, sub: &[u8]) -> SharedBytes {
        if sub.is_empty() {
            return SharedBytes::new();
        }
        if sub.len() <= SharedBytes::INLINE_CAP {
            // Only addresses are compared; nothing is dereferenced through them.
            let off = (sub.as_ptr() as usize).wrapping_sub(self.base);
            // When `sub` starts at least `INLINE_CAP` bytes before the end of the source,
            // copy a fixed-size window of the source (`sub` and the bytes after it): a
            // fixed-size copy is a few wide moves, where a copy of `sub.len()` bytes is a
            // `memset` and a `memcpy` call, and narrow stores that stall the moves after.
            if let Some(window) = self
                .source_bytes()
                .get(off..)
                .and_then(<[u8]>::first_chunk::<{ SharedBytes::INLINE_CAP }>)
            {
                return SharedBytes::inline_window(window, sub.len());
            }
            return SharedBytes::copy_from_slice(sub);
        }
        self.share_long(sub)
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
    fn share_long(&self, sub: &[u8]) -> SharedBytes {
        // Only addresses are compared; nothing is dereferenced through them.
        let off = (sub.as_ptr() as usize).wrapping_sub(self.base);
        let within = |len: usize| off <= len && sub.len() <= len - off;
        match &self.source {
            Source::Mirror(shared) if within(shared.len()) => shared.slice(off..off + sub.len()),
            Source::Lazy { bytes, copy } if within(bytes.len()) => {
                let range = off..off + sub.len();
                let buf = match copy.take() {
                    LazyCopy::Held(buf) => buf,
                    LazyCopy::NotYet => Arc::from(*bytes),
                    // Asked again after the last long value (out of order): copy.
                    LazyCopy::Given => {
                        copy.set(LazyCopy::Given);
                        return SharedBytes::copy_from_slice(sub);
                    }
                };
                // Values are asked for in wire order; when fewer than `INLINE_CAP + 1`
                // bytes follow this one, no long value can follow, so this one takes the
                // backing's own reference instead of a new one (saving an atomic increment
                // now and a decrement when the backing is dropped).
                if bytes.len() - range.end <= SharedBytes::INLINE_CAP {
                    copy.set(LazyCopy::Given);
                    SharedBytes::from_arc_range(buf, range)
                } else {
                    let v = SharedBytes::shared_range(&buf, range);
                    copy.set(LazyCopy::Held(buf));
                    v
                }
            }
            _ => SharedBytes::copy_from_slice(sub),
        }
    }
}

fn decode_owned_prefix<T: Wire>(bytes: &[u8]) -> Result<(T, usize), DecodeError> {
    let mut r = Reader::new(bytes);
    let v = <T::Ref<'_> as Decode<'_>>::decode(&mut r)?;
    let used = r.position();
    if T::INLINE {
        Ok((v.to_owned_in(&Backing::none()), used))
    } else {
        let consumed = bytes.get(..used).unwrap_or(bytes);
        Ok((v.to_owned_in(&Backing::lazy(consumed)), used))
    }
}

/// Encoded sizes up to which [`ref_to_owned`] re-encodes on the stack.
const STACK_ENCODE: usize = 256;

/// Ref → owned with at most one allocation: encode into a scratch buffer, decode the
/// borrowed form from it and map every long slice into one shared copy of it. Small values
/// are encoded on the stack and copied to the heap only if a value longer than
/// [`SharedBytes::INLINE_CAP`] needs it; larger ones are encoded straight into the shared
/// buffer. Falls back to per-field copies if the re-decode fails (which would mean `Encode`
/// and `Decode` disagree).
fn ref_to_owned<'a, R: WireRef<'a>>(r: &R) -> R::Owned {
    if <R::Owned as Wire>::INLINE {
        return r.to_owned_in(&Backing::none());
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

// ===== messages =====

/// The header constants of a message, known at compile time (spec §2.1, §3.0).
///
/// Implemented by every derived message, owned and borrowed, by
/// `#[sv2(msg_type = …, extension_type = …, channel_msg)]`.
pub trait MessageType {
    /// The extension that defined the message, **without** the channel bit (0 for core).
    const EXTENSION_TYPE: u16;
    /// The message id within its extension.
    const MSG_TYPE: u8;
    /// Whether the header's `channel_msg` bit (0x8000) is set; the payload then starts
    /// with a `U32` channel id.
    const CHANNEL_MSG: bool;
    /// The message name, e.g. `"SubmitSharesStandard"`.
    const NAME: &'static str;

    /// The header's `extension_type` field: the extension id with the channel bit applied.
    fn wire_extension_type() -> u16 {
        Self::EXTENSION_TYPE | if Self::CHANNEL_MSG { CHANNEL_BIT } else { 0 }
    }
}

/// The `channel_msg` bit of the header's `extension_type` (bit 15; spec §2.1, §7 D1).
pub const CHANNEL_BIT: u16 = 0x8000;

/// An owned message: a [`Wire`] value with header constants.
pub trait Message: Wire + MessageType {}
impl<T: Wire + MessageType> Message for T {}

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
    T::decode(&mut Reader::new(bytes))
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

// ===== message sets =====

/// Something that can be put in a frame: it knows its header fields and encodes its
/// payload. Every derived message (owned or borrowed) is one, and so are the dispatch
/// enums and references to any of them.
pub trait Frameable: Encode {
    /// The header's `extension_type`, **with** the channel bit (0x8000) when it applies.
    fn wire_extension_type(&self) -> u16;
    /// The header's `msg_type`.
    fn msg_type(&self) -> u8;
}

impl<T: Frameable + ?Sized> Frameable for &T {
    #[inline]
    fn wire_extension_type(&self) -> u16 {
        (**self).wire_extension_type()
    }
    #[inline]
    fn msg_type(&self) -> u8 {
        (**self).msg_type()
    }
}

/// Decoding a frame's payload into one of a set of messages failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// No message of the set has this `(extension_type, msg_type)`; `extension_type` is
    /// given without the channel bit.
    #[error("unknown message: extension_type {extension_type:#06x}, msg_type {msg_type:#04x}")]
    UnknownMessage {
        /// The extension id (channel bit masked off).
        extension_type: u16,
        /// The message id.
        msg_type: u8,
    },
    /// The message is known but its payload does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// A set of messages a codec can decode frames into: the protocol's dispatch enums, or a
/// single derived message type (blanket implementation).
///
/// `extension_type` arguments are the header field as received; implementations mask
/// the channel bit off before dispatching (spec §2.4).
pub trait MessageSet: Frameable + Sized + 'static {
    /// The borrowed form, pointing into the payload.
    type Ref<'a>: Frameable;

    /// Every `(extension_type, msg_type)` the set decodes (extension id without the
    /// channel bit). `#[derive(MessageSet)]` checks at compile time that its variants'
    /// lists do not overlap.
    const IDS: &'static [(u16, u8)];

    /// Decodes an owned message from a frame payload (trailing bytes are allowed; they may
    /// be TLVs).
    ///
    /// # Errors
    /// [`DispatchError::UnknownMessage`] if the set has no such message, otherwise the
    /// payload's [`DecodeError`].
    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError>;

    /// Decodes the borrowed form from a frame payload.
    ///
    /// # Errors
    /// As [`decode_message`](MessageSet::decode_message).
    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError>;
}

impl<T: Message + Frameable> MessageSet for T
where
    for<'a> T::Ref<'a>: Frameable,
{
    type Ref<'a> = <T as Wire>::Ref<'a>;

    const IDS: &'static [(u16, u8)] = &[(T::EXTENSION_TYPE, T::MSG_TYPE)];

    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError> {
        check_header::<T>(extension_type, msg_type)?;
        Ok(T::decode_owned(payload)?)
    }

    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError> {
        check_header::<T>(extension_type, msg_type)?;
        Ok(from_bytes_ref(payload)?)
    }
}

fn check_header<T: MessageType>(extension_type: u16, msg_type: u8) -> Result<(), DispatchError> {
    let ext = extension_type & !CHANNEL_BIT;
    if ext == T::EXTENSION_TYPE && msg_type == T::MSG_TYPE {
        Ok(())
    } else {
        Err(DispatchError::UnknownMessage {
            extension_type: ext,
            msg_type,
        })
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
}
