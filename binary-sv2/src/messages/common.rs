//! Common messages (spec §3.1): connection setup and connection-level notices, shared by
//! every sub-protocol.
//!
//! | msg_type | message | channel_msg |
//! |---|---|---|
//! | 0x00 | [`SetupConnection`] | no |
//! | 0x01 | [`SetupConnectionSuccess`] | no |
//! | 0x02 | [`SetupConnectionError`] | no |
//! | 0x03 | [`ChannelEndpointChanged`] | **yes** |
//! | 0x04 | [`Reconnect`] | no |
//!
//! ```
//! use sv2c_binary::messages::{Protocol, SetupConnection, SetupConnectionRef};
//! use sv2c_binary::{Decode, WireRef};
//!
//! // The spec's example (SV2-WIRE §3.1): Mining, v2..2, flags 0x6, "pool.example":3333.
//! let payload = [
//!     0x00, 0x02, 0x00, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x0c, b'p', b'o', b'o', b'l',
//!     b'.', b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x05, 0x0d, 0x04, b'a', b'c', b'm',
//!     b'e', 0x03, b'h', b'w', b'1', 0x03, b'f', b'w', b'1', 0x00,
//! ];
//! let msg = SetupConnectionRef::decode_ref(&payload).unwrap();
//! assert_eq!(msg.protocol, Protocol::Mining);
//! assert_eq!(msg.endpoint_host.as_str(), Ok("pool.example"));
//! assert_eq!(msg.endpoint_port, 3333);
//! let owned: SetupConnection = msg.to_owned_value();
//! assert_eq!(owned.vendor.as_str(), Ok("acme"));
//! ```

use bytes::BufMut;
use core::fmt;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::{Decode, Encode, Reader, WireRef};
use crate::{Str0255, Wire};

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

impl Wire for Protocol {
    type Ref<'a> = Protocol;
    const INLINE: bool = true;
    // One byte, but not every byte decodes: sequences of it cannot be checked by length.
    const FIXED_LEN: Option<usize> = None;
    #[inline]
    fn to_ref(&self) -> Protocol {
        *self
    }
}

impl<'a> WireRef<'a> for Protocol {
    type Owned = Protocol;
}
impl ToOwnedIn<Protocol> for Protocol {
    #[inline]
    fn to_owned_in(&self, _: &Backing<'_>) -> Protocol {
        *self
    }
}

/// `SetupConnection` (0x00): the first message a client sends on a connection; names the
/// sub-protocol, the version range and the feature flags it wants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[sv2(msg_type = 0x00, name = "SetupConnection")]
pub struct SetupConnection {
    /// The sub-protocol this connection will speak.
    pub protocol: Protocol,
    /// Lowest protocol version the client supports (2 today).
    pub min_version: u16,
    /// Highest protocol version the client supports (2 today).
    pub max_version: u16,
    /// Requested feature flags; their meaning depends on `protocol` (spec §5).
    pub flags: u32,
    /// Host name or IP address the client connected to (ASCII).
    pub endpoint_host: Str0255,
    /// Port the client connected to.
    pub endpoint_port: u16,
    /// Device vendor (maker or firmware); must be set.
    pub vendor: Str0255,
    /// Hardware version; should be set.
    pub hardware_version: Str0255,
    /// Firmware version.
    pub firmware: Str0255,
    /// Device id; empty if the client does not report telemetry.
    pub device_id: Str0255,
}

/// `SetupConnection.Success` (0x01): the server accepts the connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[sv2(msg_type = 0x01, name = "SetupConnectionSuccess")]
pub struct SetupConnectionSuccess {
    /// Protocol version used for the rest of the connection.
    pub used_version: u16,
    /// The server's own feature flags (spec §5).
    pub flags: u32,
}

/// `SetupConnection.Error` (0x02): the server refuses the connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[sv2(msg_type = 0x02, name = "SetupConnectionError")]
pub struct SetupConnectionError {
    /// Requested flags the server does not support; 0 if the failure has another cause.
    pub flags: u32,
    /// Machine-readable reason, e.g. `unsupported-feature-flags`.
    pub error_code: Str0255,
}

/// `ChannelEndpointChanged` (0x03, channel message): the endpoint behind a channel changed,
/// so the receiver resets that channel's extension state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[sv2(msg_type = 0x03, channel_msg, name = "ChannelEndpointChanged")]
pub struct ChannelEndpointChanged {
    /// The channel whose endpoint changed.
    pub channel_id: u32,
}

/// `Reconnect` (0x04): the server asks the client to reconnect, possibly elsewhere. Concerns
/// the connection only; proxies do not pass it downstream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[sv2(msg_type = 0x04, name = "Reconnect")]
pub struct Reconnect {
    /// Host to reconnect to; empty means the current host.
    pub new_host: Str0255,
    /// Port to reconnect to; 0 means the current port.
    pub new_port: u16,
}

pub use super::dispatch::{CommonMessage, CommonMessageRef};
