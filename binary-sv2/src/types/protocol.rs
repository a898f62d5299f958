//! [`Protocol`]: the sub-protocol a connection is set up for, a one-byte wire type.

use bytes::BufMut;
use core::fmt;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::wire::{Decode, Encode, Reader, Wire, WireRef};

/// The sub-protocol a connection is set up for (`SetupConnection.protocol`, spec §5).
///
/// On the wire it is a `U8`; only 0, 1 and 2 are defined, and decoding any other byte fails
/// with [`DecodeErrorKind::InvalidValue`] (the reference implementation rejects them too).
/// In JSON it is the number.
///
/// ```
/// use sv2c_binary::{Protocol, DecodeErrorKind, Encode, from_bytes_ref};
/// assert_eq!(from_bytes_ref::<Protocol>(&[2]), Ok(Protocol::TemplateDistribution));
/// assert_eq!(Protocol::JobDeclaration.encode_to_vec(), [1]);
/// let err = from_bytes_ref::<Protocol>(&[3]).unwrap_err();
/// assert_eq!(err.kind(), DecodeErrorKind::InvalidValue { value: 3 });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Protocol {
    /// 0: the Mining protocol (the default).
    #[default]
    Mining = 0,
    /// 1: the Job Declaration protocol.
    JobDeclaration = 1,
    /// 2: the Template Distribution protocol.
    TemplateDistribution = 2,
}

impl Protocol {
    /// The wire value.
    #[inline]
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The protocol with this wire value, if it is one.
    #[inline]
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Protocol::Mining),
            1 => Some(Protocol::JobDeclaration),
            2 => Some(Protocol::TemplateDistribution),
            _ => None,
        }
    }
}

/// A byte that is not a protocol id (0, 1 or 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not a protocol id (0 = Mining, 1 = Job Declaration, 2 = Template Distribution)")]
pub struct UnknownProtocol(pub u8);

impl TryFrom<u8> for Protocol {
    type Error = UnknownProtocol;
    fn try_from(v: u8) -> Result<Self, UnknownProtocol> {
        Protocol::from_u8(v).ok_or(UnknownProtocol(v))
    }
}

impl From<Protocol> for u8 {
    fn from(p: Protocol) -> u8 {
        p.as_u8()
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Mining => "Mining",
            Protocol::JobDeclaration => "JobDeclaration",
            Protocol::TemplateDistribution => "TemplateDistribution",
        })
    }
}

impl Encode for Protocol {
    #[inline]
    fn encoded_len(&self) -> usize {
        1
    }
    #[inline]
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        buf.put_u8(self.as_u8())
    }
}

impl<'a> Decode<'a> for Protocol {
    #[inline]
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let start = r.position();
        let v = r.read_u8("PROTOCOL")?;
        Protocol::from_u8(v).ok_or_else(|| {
            DecodeError::new(
                DecodeErrorKind::InvalidValue { value: v.into() },
                "PROTOCOL",
                start,
            )
        })
    }
}

// One byte, but not every byte decodes: sequences of it cannot be checked by length.
self_ref_wire!(Protocol, None);
