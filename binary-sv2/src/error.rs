//! Error types: decoding untrusted bytes, building bounded values, encoding into a slice.

use core::fmt;

/// What went wrong while decoding. Carried by [`DecodeError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended inside a value: `needed` bytes were required at the offset,
    /// only `available` were left.
    Truncated {
        /// Bytes the value (or its next part) needs.
        needed: usize,
        /// Bytes that were left in the input.
        available: usize,
    },
    /// A length or count prefix is larger than the type allows (e.g. a `B0_32` prefix of 33).
    TooLong {
        /// The length read from the wire.
        len: usize,
        /// The largest length the type allows.
        max: usize,
    },
    /// An `OPTION[T]` count that is neither 0 nor 1.
    InvalidOptionCount {
        /// The count byte read from the wire.
        count: u8,
    },
    /// A value outside the set the field allows (e.g. `SetupConnection.protocol` = 3).
    InvalidValue {
        /// The value read from the wire.
        value: u64,
    },
    /// Bytes were left after the value, and the caller asked for an exact decode.
    TrailingBytes {
        /// How many bytes were left over.
        len: usize,
    },
}

/// Decoding failed: what, where (byte offset from the start of the input) and in which field.
///
/// Decoding never panics and never allocates on the error path; this value is small and `Copy`.
///
/// ```
/// use sv2c_binary::{Str0255Ref, Decode, Reader};
/// // A STR0_255 announcing 5 bytes, with only 2 present.
/// let err = Str0255Ref::decode(&mut Reader::new(&[5, b'a', b'b'])).unwrap_err();
/// assert_eq!(err.offset(), 0);
/// assert_eq!(err.to_string(), "STR0_255 at byte 0: needs 6 bytes, 3 available");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    kind: DecodeErrorKind,
    offset: usize,
    ty: &'static str,
    field: &'static str,
}

impl DecodeError {
    /// A new error of `kind` for a value of wire type `ty` starting at `offset`.
    #[cold]
    pub fn new(kind: DecodeErrorKind, ty: &'static str, offset: usize) -> Self {
        DecodeError {
            kind,
            offset,
            ty,
            field: "",
        }
    }

    /// Shorthand for a [`DecodeErrorKind::Truncated`] error.
    #[cold]
    pub fn truncated(ty: &'static str, offset: usize, needed: usize, available: usize) -> Self {
        Self::new(DecodeErrorKind::Truncated { needed, available }, ty, offset)
    }

    /// Names the field the error happened in (`"Message.field"`), unless an inner field
    /// was already named. Used by the derive; cheap, and only called on the error path.
    #[cold]
    #[must_use]
    pub fn in_field(mut self, field: &'static str) -> Self {
        if self.field.is_empty() {
            self.field = field;
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// Byte offset, from the start of the decoded input, where the failing value starts.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Wire type of the failing value, e.g. `"B0_32"`.
    pub fn wire_type(&self) -> &'static str {
        self.ty
    }

    /// The field (`"Message.field"`) the failing value belongs to, or `""` if unknown.
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{} at byte {}: ", self.ty, self.offset)?;
        match self.kind {
            DecodeErrorKind::Truncated { needed, available } => {
                write!(f, "needs {needed} bytes, {available} available")
            }
            DecodeErrorKind::TooLong { len, max } => {
                write!(f, "length {len} exceeds the maximum {max}")
            }
            DecodeErrorKind::InvalidOptionCount { count } => {
                write!(f, "OPTION count {count}, must be 0 or 1")
            }
            DecodeErrorKind::InvalidValue { value } => write!(f, "value {value} is not allowed"),
            DecodeErrorKind::TrailingBytes { len } => {
                write!(f, "{len} bytes left over after the value")
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// A value does not fit its wire type (e.g. 33 bytes for a `B0_32`, a `U24` above 2^24 − 1).
///
/// Returned by the `TryFrom` constructors, so that encoding can never fail later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{ty}: {what} {actual} exceeds the maximum {max}")]
pub struct LengthError {
    /// The wire type, e.g. `"B0_32"`.
    pub ty: &'static str,
    /// `"length"`, `"count"` or `"value"`.
    pub what: &'static str,
    /// The rejected length, count or value.
    pub actual: u64,
    /// The largest allowed.
    pub max: u64,
}

impl LengthError {
    /// `Ok` if `actual` is at most `max`, else the error for the `what` of a `ty`.
    pub(crate) fn check(
        ty: &'static str,
        what: &'static str,
        actual: usize,
        max: usize,
    ) -> Result<(), Self> {
        if actual <= max {
            return Ok(());
        }
        Err(LengthError {
            ty,
            what,
            actual: actual as u64,
            max: max as u64,
        })
    }
}

/// The output slice of [`Encode::encode_to_slice`](crate::Encode::encode_to_slice) is too short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("output buffer too small: {needed} bytes needed, {available} available")]
pub struct BufferTooSmall {
    /// Bytes the encoding needs.
    pub needed: usize,
    /// Bytes the slice has.
    pub available: usize,
}
