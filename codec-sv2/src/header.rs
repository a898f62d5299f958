//! The 6-byte frame header (spec §2.1).

use core::fmt;

use sv2c_binary::{CHANNEL_BIT, Frameable};

use crate::error::CodecError;

/// The largest payload a frame can carry: 2^24 − 1 bytes (`msg_length` is a `U24`).
pub const MAX_PAYLOAD_LEN: usize = (1 << 24) - 1;

/// A frame header: `extension_type` (with the channel bit), `msg_type`, `msg_length`.
///
/// ```text
///  byte  0      1      2          3      4      5
///       +------+------+----------+------+------+------+
///       | extension_type | msg_type |     msg_length     |
///       |   U16 LE       |    U8    |      U24 LE        |
///       +------+------+----------+------+------+------+
///              ^ bit 7 of byte 1 = bit 15 of extension_type = channel_msg
/// ```
///
/// Every 6-byte string is a valid header, so parsing cannot fail.
///
/// ```
/// use sv2c_codec::Header;
/// // SubmitSharesStandard: channel message 0x1a with a 24-byte payload (spec §2.1).
/// let h = Header::parse([0x00, 0x80, 0x1a, 0x18, 0x00, 0x00]);
/// assert!(h.channel_msg());
/// assert_eq!((h.extension_type(), h.msg_type(), h.msg_length()), (0, 0x1a, 24));
/// assert_eq!(h.to_bytes(), [0x00, 0x80, 0x1a, 0x18, 0x00, 0x00]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    extension_type: u16,
    msg_type: u8,
    msg_length: u32,
}

impl Header {
    /// Size of a header on the wire.
    pub const SIZE: usize = 6;

    /// A header for a payload of `msg_length` bytes. `extension_type` is the wire field:
    /// include [`CHANNEL_BIT`] for channel messages.
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] if `msg_length` exceeds [`MAX_PAYLOAD_LEN`].
    pub fn new(extension_type: u16, msg_type: u8, msg_length: usize) -> Result<Self, CodecError> {
        if msg_length > MAX_PAYLOAD_LEN {
            return Err(CodecError::FrameTooLarge {
                len: msg_length,
                max: MAX_PAYLOAD_LEN,
            });
        }
        Ok(Header {
            extension_type,
            msg_type,
            msg_length: msg_length as u32,
        })
    }

    /// The header for a message: its extension type, channel bit and msg type, with
    /// `msg_length` = its encoded length.
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] if the message encodes to more than 2^24 − 1 bytes.
    pub fn for_message<M: Frameable + ?Sized>(msg: &M) -> Result<Self, CodecError> {
        Self::new(msg.wire_extension_type(), msg.msg_type(), msg.encoded_len())
    }

    /// Reads a header from its 6 bytes.
    #[inline]
    pub const fn parse(b: [u8; 6]) -> Self {
        Header {
            extension_type: u16::from_le_bytes([b[0], b[1]]),
            msg_type: b[2],
            msg_length: u32::from_le_bytes([b[3], b[4], b[5], 0]),
        }
    }

    /// Reads a header from the front of `bytes`, if there are at least 6.
    #[inline]
    pub fn from_prefix(bytes: &[u8]) -> Option<Self> {
        bytes.first_chunk::<6>().map(|b| Self::parse(*b))
    }

    /// The 6 wire bytes.
    #[inline]
    pub const fn to_bytes(&self) -> [u8; 6] {
        let [e0, e1] = self.extension_type.to_le_bytes();
        let [l0, l1, l2, _] = self.msg_length.to_le_bytes();
        [e0, e1, self.msg_type, l0, l1, l2]
    }

    /// The extension id, **without** the channel bit (what dispatch uses, spec §2.4).
    #[inline]
    pub const fn extension_type(&self) -> u16 {
        self.extension_type & !CHANNEL_BIT
    }

    /// The `extension_type` field as on the wire, channel bit included.
    #[inline]
    pub const fn wire_extension_type(&self) -> u16 {
        self.extension_type
    }

    /// Whether the channel bit is set: the payload then starts with a `U32` channel id.
    #[inline]
    pub const fn channel_msg(&self) -> bool {
        self.extension_type & CHANNEL_BIT != 0
    }

    /// The message id within its extension.
    #[inline]
    pub const fn msg_type(&self) -> u8 {
        self.msg_type
    }

    /// Payload length in bytes (excluding the header).
    #[inline]
    pub const fn msg_length(&self) -> usize {
        self.msg_length as usize
    }

    /// Header plus payload length.
    #[inline]
    pub const fn frame_len(&self) -> usize {
        Self::SIZE + self.msg_length as usize
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field(
                "extension_type",
                &format_args!("{:#06x}", self.extension_type()),
            )
            .field("channel_msg", &self.channel_msg())
            .field("msg_type", &format_args!("{:#04x}", self.msg_type))
            .field("msg_length", &self.msg_length)
            .finish()
    }
}
