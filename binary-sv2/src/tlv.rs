//! TLV fields (spec §3.6–3.7): how extensions append optional fields to existing messages.
//!
//! A message's payload may continue after its last field with TLV records:
//!
//! ```text
//! extension_type U16 LE | field_type U8 | length U16 LE | value (length bytes)
//! ```
//!
//! Type and length are **little-endian**, as the reference implementation writes them (the
//! spec's own example prints them big-endian; SV2-WIRE §7 D2). Decoding a message never
//! rejects these bytes: the dispatch enums' `decode_with_tail` functions return them as a
//! [`TlvTail`] (borrowed) or [`TlvTailBuf`] (owned), and [`TlvTail::iter`] walks them.
//! [`WithTlvs`] appends TLVs when encoding. Extension 0x0002's `user_identity` field
//! (appended to `SubmitSharesExtended`) has a typed helper, [`UserIdentity`].
//!
//! # Scanning rules
//! * A value that runs past the end of the payload is an error
//!   ([`DecodeErrorKind::Truncated`]).
//! * **1 to 4 bytes left over** (too few for a 5-byte TLV header) are also reported as a
//!   `Truncated` error, as the last item of the iteration. The reference implementation
//!   stops quietly there instead; to behave the same, stop at the first error
//!   (`tail.iter().map_while(Result::ok)`). Reporting it lets a strict receiver notice a
//!   malformed tail rather than lose bytes silently.
//! * After an error the iteration ends. TLVs of extensions that were not negotiated are
//!   yielded like the others: filtering them is the caller's decision
//!   ([`TlvTail::find`], [`TlvTail::user_identity`]).
//!
//! ```
//! use sv2c_binary::messages::{frame_parts, MessageRef};
//! use sv2c_binary::tlv::UserIdentity;
//!
//! // SV2-WIRE §3.7: SubmitSharesExtended + the user_identity TLV "Worker_001".
//! let frame = [
//!     0x00, 0x80, 0x1b, 0x2c, 0x00, 0x00, // header: channel msg 0x1b, 44 bytes
//!     1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xef, 0xbe, 0xad, 0xde, 0, 0, 0x50, 0x66,
//!     0, 0, 0, 0x20, 4, 0xaa, 0xbb, 0xcc, 0xdd, // the message's fields
//!     0x02, 0x00, 0x01, 0x0a, 0x00, b'W', b'o', b'r', b'k', b'e', b'r', b'_', b'0', b'0', b'1',
//! ];
//! let (ext, msg_type, payload) = frame_parts(&frame).unwrap();
//! let (msg, tail) = MessageRef::decode_with_tail(ext, msg_type, payload).unwrap();
//! assert_eq!(msg.name(), "SubmitSharesExtended");
//!
//! let tlvs: Vec<_> = tail.iter().collect::<Result<_, _>>().unwrap();
//! assert_eq!((tlvs[0].extension_type(), tlvs[0].field_type()), (0x0002, 0x01));
//! let user = tail.user_identity().unwrap().unwrap();
//! assert_eq!(user.as_str(), Ok("Worker_001"));
//! assert_eq!(user, UserIdentity::try_from("Worker_001").unwrap());
//! ```

use alloc::vec::Vec;
use bytes::BufMut;
use core::fmt;

use crate::error::{DecodeError, DecodeErrorKind, LengthError};
use crate::shared::SharedBytes;
use crate::types::B032;
use crate::{Decode, Encode, Frameable, Reader};

/// Size of a TLV header: type (U16 extension + U8 field) and U16 length.
pub const TLV_HEADER_LEN: usize = 5;

/// Largest TLV value (the length is a U16).
pub const MAX_TLV_VALUE_LEN: usize = 65_535;

const TY: &str = "TLV";

/// One TLV record, borrowed (the value points into the payload).
///
/// Built by [`new`](Tlv::new), which checks the value length, so that encoding cannot
/// fail.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tlv<'a> {
    extension_type: u16,
    field_type: u8,
    value: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// A record of `extension_type`/`field_type` holding `value`.
    ///
    /// # Errors
    /// [`LengthError`] if `value` is longer than [`MAX_TLV_VALUE_LEN`].
    pub fn new(extension_type: u16, field_type: u8, value: &'a [u8]) -> Result<Self, LengthError> {
        LengthError::check(TY, "length", value.len(), MAX_TLV_VALUE_LEN)?;
        Ok(Tlv {
            extension_type,
            field_type,
            value,
        })
    }

    /// The extension that defines the field.
    pub fn extension_type(&self) -> u16 {
        self.extension_type
    }

    /// The field id within that extension.
    pub fn field_type(&self) -> u8 {
        self.field_type
    }

    /// The value bytes.
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// The owned form (the value is copied).
    pub fn to_buf(&self) -> TlvBuf {
        TlvBuf {
            extension_type: self.extension_type,
            field_type: self.field_type,
            value: SharedBytes::copy_from_slice(self.value),
        }
    }
}

impl<'a> Decode<'a> for Tlv<'a> {
    /// Reads one record.
    ///
    /// # Errors
    /// [`DecodeErrorKind::Truncated`] if the header or the value is incomplete.
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let start = r.position();
        let header: [u8; TLV_HEADER_LEN] = r.array(TY)?;
        let [e0, e1, field_type, l0, l1] = header;
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        let value = r.take(len, TY).map_err(|_| {
            DecodeError::truncated(
                TY,
                start,
                TLV_HEADER_LEN + len,
                r.remaining() + TLV_HEADER_LEN,
            )
        })?;
        Ok(Tlv {
            extension_type: u16::from_le_bytes([e0, e1]),
            field_type,
            value,
        })
    }
}

impl Encode for Tlv<'_> {
    fn encoded_len(&self) -> usize {
        TLV_HEADER_LEN + self.value.len()
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        buf.put_u16_le(self.extension_type);
        buf.put_u8(self.field_type);
        // The value length was checked when the record was built.
        buf.put_u16_le(self.value.len() as u16);
        buf.put_slice(self.value);
    }
}

impl fmt::Debug for Tlv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tlv")
            .field(
                "extension_type",
                &format_args!("{:#06x}", self.extension_type),
            )
            .field("field_type", &format_args!("{:#04x}", self.field_type))
            .field("value", &HexDebug(self.value))
            .finish()
    }
}

struct HexDebug<'a>(&'a [u8]);

impl fmt::Debug for HexDebug<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::shared::fmt_hex(self.0, f)
    }
}

/// One TLV record, owned (the value is a [`SharedBytes`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TlvBuf {
    extension_type: u16,
    field_type: u8,
    value: SharedBytes,
}

impl TlvBuf {
    /// A record holding a copy of `value`.
    ///
    /// # Errors
    /// [`LengthError`] if `value` is longer than [`MAX_TLV_VALUE_LEN`].
    pub fn new(extension_type: u16, field_type: u8, value: &[u8]) -> Result<Self, LengthError> {
        Tlv::new(extension_type, field_type, value).map(|t| t.to_buf())
    }

    /// A record holding `value` without copying it.
    ///
    /// # Errors
    /// [`LengthError`] if `value` is longer than [`MAX_TLV_VALUE_LEN`].
    pub fn from_shared(
        extension_type: u16,
        field_type: u8,
        value: SharedBytes,
    ) -> Result<Self, LengthError> {
        LengthError::check(TY, "length", value.len(), MAX_TLV_VALUE_LEN)?;
        Ok(TlvBuf {
            extension_type,
            field_type,
            value,
        })
    }

    /// The borrowed view.
    pub fn as_tlv(&self) -> Tlv<'_> {
        Tlv {
            extension_type: self.extension_type,
            field_type: self.field_type,
            value: self.value.as_slice(),
        }
    }

    /// The extension that defines the field.
    pub fn extension_type(&self) -> u16 {
        self.extension_type
    }

    /// The field id within that extension.
    pub fn field_type(&self) -> u8 {
        self.field_type
    }

    /// The value bytes.
    pub fn value(&self) -> &[u8] {
        self.value.as_slice()
    }
}

impl Encode for TlvBuf {
    fn encoded_len(&self) -> usize {
        self.as_tlv().encoded_len()
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        self.as_tlv().encode(buf)
    }
}

impl fmt::Debug for TlvBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_tlv(), f)
    }
}

impl From<Tlv<'_>> for TlvBuf {
    fn from(t: Tlv<'_>) -> Self {
        t.to_buf()
    }
}

/// Iterator over the TLV records of a tail; see the [module docs](self) for the rules.
/// Error offsets count from the start of the tail.
#[derive(Debug, Clone)]
pub struct TlvIter<'a> {
    reader: Reader<'a>,
    done: bool,
}

impl<'a> Iterator for TlvIter<'a> {
    type Item = Result<Tlv<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.reader.remaining() == 0 {
            return None;
        }
        let item = Tlv::decode(&mut self.reader);
        self.done = item.is_err();
        Some(item)
    }
}

impl core::iter::FusedIterator for TlvIter<'_> {}

/// The bytes after a message's last field, borrowed: zero or more TLV records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TlvTail<'a>(&'a [u8]);

impl<'a> TlvTail<'a> {
    /// A tail over `bytes` (nothing is checked until it is iterated).
    pub fn new(bytes: &'a [u8]) -> Self {
        TlvTail(bytes)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// `true` if the message had no bytes after its last field.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates over the records (see the [module docs](self) for the rules).
    pub fn iter(&self) -> TlvIter<'a> {
        TlvIter {
            reader: Reader::new(self.0),
            done: false,
        }
    }

    /// The first record of `extension_type`/`field_type`.
    ///
    /// # Errors
    /// A malformed record met before it was found.
    pub fn find(
        &self,
        extension_type: u16,
        field_type: u8,
    ) -> Result<Option<Tlv<'a>>, DecodeError> {
        for tlv in self.iter() {
            let tlv = tlv?;
            if tlv.extension_type == extension_type && tlv.field_type == field_type {
                return Ok(Some(tlv));
            }
        }
        Ok(None)
    }

    /// The extension 0x0002 `user_identity` field, if the tail has one.
    ///
    /// # Errors
    /// A malformed record met before it, or a `user_identity` longer than 32 bytes
    /// ([`DecodeErrorKind::TooLong`]; the spec requires receivers to reject it).
    pub fn user_identity(&self) -> Result<Option<UserIdentity>, DecodeError> {
        self.find(UserIdentity::EXTENSION_TYPE, UserIdentity::FIELD_TYPE)?
            .map(|t| UserIdentity::from_tlv(&t))
            .transpose()
    }

    /// Every record, owned.
    ///
    /// # Errors
    /// The first malformed record.
    pub fn to_bufs(&self) -> Result<Vec<TlvBuf>, DecodeError> {
        self.iter().map(|t| t.map(|t| t.to_buf())).collect()
    }
}

impl<'a> IntoIterator for TlvTail<'a> {
    type Item = Result<Tlv<'a>, DecodeError>;
    type IntoIter = TlvIter<'a>;
    fn into_iter(self) -> TlvIter<'a> {
        self.iter()
    }
}

/// The bytes after a message's last field, owned (see [`TlvTail`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TlvTailBuf(SharedBytes);

impl TlvTailBuf {
    /// A tail holding a copy of `bytes` (no allocation if empty).
    pub fn copy_from_slice(bytes: &[u8]) -> Self {
        TlvTailBuf(SharedBytes::copy_from_slice(bytes))
    }

    /// The borrowed view, to iterate or search.
    pub fn as_tail(&self) -> TlvTail<'_> {
        TlvTail(self.0.as_slice())
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_slice()
    }

    /// `true` if the message had no bytes after its last field.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<SharedBytes> for TlvTailBuf {
    fn from(b: SharedBytes) -> Self {
        TlvTailBuf(b)
    }
}

/// Decodes the borrowed form of a single message type from a payload, and returns the
/// bytes after its last field as a [`TlvTail`].
///
/// # Errors
/// The message's [`DecodeError`]; the tail is not examined.
pub fn decode_with_tail<'a, T: Decode<'a>>(
    payload: &'a [u8],
) -> Result<(T, TlvTail<'a>), DecodeError> {
    crate::from_bytes_ref_with_rest(payload).map(|(m, rest)| (m, TlvTail(rest)))
}

/// Extension 0x0002 (worker-specific hashrate tracking), field 0x01: the worker name that
/// a client appends to every `SubmitSharesExtended` once the extension is negotiated.
///
/// At most 32 bytes; the spec describes it as UTF-8 but, like the reference, only the
/// length is enforced ([`as_str`](Self::as_str) checks the text on demand).
///
/// ```
/// use sv2c_binary::tlv::UserIdentity;
/// use sv2c_binary::Encode;
/// let user = UserIdentity::try_from("Worker_001").unwrap();
/// assert_eq!(user.to_tlv().encode_to_vec()[..5], [0x02, 0x00, 0x01, 0x0a, 0x00]);
/// assert!(UserIdentity::try_from("x".repeat(33).as_str()).is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UserIdentity(B032);

impl UserIdentity {
    /// The extension that defines the field.
    pub const EXTENSION_TYPE: u16 = 0x0002;
    /// The field id within that extension.
    pub const FIELD_TYPE: u8 = 0x01;
    /// Largest length in bytes.
    pub const MAX_LEN: usize = 32;

    /// A user identity holding a copy of `bytes`.
    ///
    /// # Errors
    /// [`LengthError`] if longer than [`MAX_LEN`](Self::MAX_LEN).
    pub fn new(bytes: &[u8]) -> Result<Self, LengthError> {
        B032::try_from(bytes)
            .map(UserIdentity)
            .map_err(|e| LengthError {
                ty: "user_identity",
                ..e
            })
    }

    /// Reads the field from its TLV record.
    ///
    /// # Errors
    /// [`DecodeErrorKind::InvalidValue`] if the record is not extension 0x0002 field 0x01
    /// (the value is `extension_type << 8 | field_type`), [`DecodeErrorKind::TooLong`] if
    /// the value is longer than 32 bytes.
    pub fn from_tlv(tlv: &Tlv<'_>) -> Result<Self, DecodeError> {
        if tlv.extension_type != Self::EXTENSION_TYPE || tlv.field_type != Self::FIELD_TYPE {
            let value = (u64::from(tlv.extension_type) << 8) | u64::from(tlv.field_type);
            return Err(DecodeError::new(
                DecodeErrorKind::InvalidValue { value },
                TY,
                0,
            ));
        }
        Self::new(tlv.value).map_err(|_| {
            DecodeError::new(
                DecodeErrorKind::TooLong {
                    len: tlv.value.len(),
                    max: Self::MAX_LEN,
                },
                "user_identity",
                TLV_HEADER_LEN,
            )
        })
    }

    /// The TLV record carrying this value.
    pub fn to_tlv(&self) -> Tlv<'_> {
        Tlv {
            extension_type: Self::EXTENSION_TYPE,
            field_type: Self::FIELD_TYPE,
            value: self.0.as_slice(),
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_slice()
    }

    /// The text, if it is valid UTF-8.
    ///
    /// # Errors
    /// The UTF-8 error if it is not.
    pub fn as_str(&self) -> Result<&str, core::str::Utf8Error> {
        core::str::from_utf8(self.0.as_slice())
    }
}

impl TryFrom<&str> for UserIdentity {
    type Error = LengthError;
    fn try_from(s: &str) -> Result<Self, LengthError> {
        Self::new(s.as_bytes())
    }
}

impl TryFrom<&[u8]> for UserIdentity {
    type Error = LengthError;
    fn try_from(b: &[u8]) -> Result<Self, LengthError> {
        Self::new(b)
    }
}

impl fmt::Debug for UserIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UserIdentity(")?;
        crate::shared::fmt_text(self.0.as_slice(), f)?;
        f.write_str(")")
    }
}

/// A message followed by TLV records, ready to encode or frame: the payload is the
/// message's fields, then the records.
///
/// Records added with [`with`](Self::with)/[`push`](Self::push) are kept ordered by
/// extension id (records of one extension stay in the order added), as the spec asks
/// senders to write them.
#[derive(Debug, Clone, PartialEq)]
pub struct WithTlvs<M> {
    /// The message.
    pub message: M,
    /// The records appended after it.
    pub tlvs: Vec<TlvBuf>,
}

impl<M> WithTlvs<M> {
    /// `message` with no records yet.
    pub fn new(message: M) -> Self {
        WithTlvs {
            message,
            tlvs: Vec::new(),
        }
    }

    /// Adds a record (builder style).
    #[must_use]
    pub fn with(mut self, tlv: TlvBuf) -> Self {
        self.push(tlv);
        self
    }

    /// Adds a record after the others of the same or lower extension id.
    pub fn push(&mut self, tlv: TlvBuf) {
        let at = self
            .tlvs
            .partition_point(|t| t.extension_type <= tlv.extension_type);
        self.tlvs.insert(at, tlv);
    }
}

impl<M: Encode> Encode for WithTlvs<M> {
    fn encoded_len(&self) -> usize {
        self.message.encoded_len() + self.tlvs.iter().map(Encode::encoded_len).sum::<usize>()
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        self.message.encode(buf);
        for t in &self.tlvs {
            t.encode(buf);
        }
    }
}

impl<M: Frameable> Frameable for WithTlvs<M> {
    fn wire_extension_type(&self) -> u16 {
        self.message.wire_extension_type()
    }
    fn msg_type(&self) -> u8 {
        self.message.msg_type()
    }
}
