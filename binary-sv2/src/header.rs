//! The 6-byte frame header (spec §2.1), defined once for every crate of the workspace:
//! the frame helpers here, the streaming codec (`sv2c-codec`) and the Noise transport
//! (`sv2c-noise`) all read and write headers through [`Header`]. No I/O.

use core::fmt;

/// The `channel_msg` bit of the header's `extension_type` (bit 15; spec §2.1, §7 D1).
pub const CHANNEL_BIT: u16 = 0x8000;

/// Size of the frame header: `extension_type` U16, `msg_type` U8, `msg_length` U24.
pub const HEADER_LEN: usize = 6;

/// Largest payload a frame can announce (`msg_length` is a U24): 2^24 − 1 bytes.
pub const MAX_PAYLOAD_LEN: usize = (1 << 24) - 1;

/// A payload too long for a frame: its length does not fit the U24 `msg_length`, or
/// exceeds a smaller configured limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("frame payload of {len} bytes exceeds the limit of {max} bytes")]
pub struct PayloadTooLarge {
    /// The announced (or attempted) payload length.
    pub len: usize,
    /// The limit it exceeds.
    pub max: usize,
}

/// A frame header: `extension_type` (with the channel bit), `msg_type`, `msg_length`.
///
/// Names follow the wire: the `extension_type` field is the 16 bits as sent, channel bit
/// included ([`wire_extension_type`](Self::wire_extension_type), as
/// [`RawMessage::extension_type`](crate::messages::RawMessage::extension_type)); the
/// extension id is that field without the channel bit ([`extension_id`](Self::extension_id),
/// as [`RawMessage::extension_id`](crate::messages::RawMessage::extension_id)). `Debug`
/// shows ids in hex.
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
/// use sv2c_binary::Header;
/// // SubmitSharesStandard: channel message 0x1a with a 24-byte payload (spec §2.1).
/// let h = Header::parse([0x00, 0x80, 0x1a, 0x18, 0x00, 0x00]);
/// assert!(h.channel_msg());
/// assert_eq!((h.extension_id(), h.msg_type(), h.msg_length()), (0, 0x1a, 24));
/// assert_eq!(h.wire_extension_type(), 0x8000);
/// assert_eq!(
///     format!("{h:?}"),
///     "Header { extension_id: 0x0000, channel_msg: true, msg_type: 0x1a, msg_length: 24 }",
/// );
/// assert_eq!(h.to_bytes(), [0x00, 0x80, 0x1a, 0x18, 0x00, 0x00]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    extension_type: u16,
    msg_type: u8,
    msg_length: u32,
}

impl Header {
    /// Size of a header on the wire (= [`HEADER_LEN`]).
    pub const SIZE: usize = HEADER_LEN;

    /// A header for a payload of `msg_length` bytes. `extension_type` is the wire field:
    /// include [`CHANNEL_BIT`] for channel messages.
    ///
    /// # Errors
    /// [`PayloadTooLarge`] if `msg_length` exceeds [`MAX_PAYLOAD_LEN`].
    ///
    /// ```
    /// use sv2c_binary::{Header, MAX_PAYLOAD_LEN};
    /// assert_eq!(Header::new(0, 1, 6).unwrap().to_bytes(), [0, 0, 1, 6, 0, 0]);
    /// assert!(Header::new(0, 1, MAX_PAYLOAD_LEN).is_ok());
    /// assert_eq!(Header::new(0, 1, MAX_PAYLOAD_LEN + 1).unwrap_err().len, MAX_PAYLOAD_LEN + 1);
    /// ```
    pub fn new(
        extension_type: u16,
        msg_type: u8,
        msg_length: usize,
    ) -> Result<Self, PayloadTooLarge> {
        if msg_length > MAX_PAYLOAD_LEN {
            return Err(PayloadTooLarge {
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

    /// Reads a header from its 6 bytes.
    #[inline]
    pub const fn parse(b: [u8; HEADER_LEN]) -> Self {
        Header {
            extension_type: u16::from_le_bytes([b[0], b[1]]),
            msg_type: b[2],
            msg_length: u32::from_le_bytes([b[3], b[4], b[5], 0]),
        }
    }

    /// Reads a header from the front of `bytes`, if there are at least 6.
    #[inline]
    pub fn from_prefix(bytes: &[u8]) -> Option<Self> {
        bytes.first_chunk::<HEADER_LEN>().map(|b| Self::parse(*b))
    }

    /// The 6 wire bytes.
    #[inline]
    pub const fn to_bytes(&self) -> [u8; HEADER_LEN] {
        // Assembled as one word, the compiler writes the header with fewer, wider stores
        // than one per byte field (docs/adr/0014-generated-codecs.md).
        let word = self.extension_type as u64
            | (self.msg_type as u64) << 16
            | (self.msg_length as u64) << 24;
        let [b0, b1, b2, b3, b4, b5, _, _] = word.to_le_bytes();
        [b0, b1, b2, b3, b4, b5]
    }

    /// The extension id: the `extension_type` field **without** the channel bit (what
    /// dispatch uses, spec §2.4).
    #[inline]
    pub const fn extension_id(&self) -> u16 {
        self.extension_type & !CHANNEL_BIT
    }

    /// The extension id, without the channel bit.
    #[deprecated(
        note = "renamed `extension_id` (without the channel bit); `wire_extension_type` is the field with it, as `RawMessage::extension_type`"
    )]
    #[inline]
    pub const fn extension_type(&self) -> u16 {
        self.extension_id()
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
        HEADER_LEN + self.msg_length as usize
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field(
                "extension_id",
                &format_args!("{:#06x}", self.extension_id()),
            )
            .field("channel_msg", &self.channel_msg())
            .field("msg_type", &format_args!("{:#04x}", self.msg_type))
            .field("msg_length", &self.msg_length)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_through_the_wire_bytes() {
        let bytes = [0x01, 0x80, 0x7f, 0xff, 0xff, 0xff];
        let h = Header::parse(bytes);
        assert_eq!(h.wire_extension_type(), 0x8001);
        assert_eq!(h.extension_id(), 0x0001);
        #[allow(deprecated)]
        let old_name = h.extension_type();
        assert_eq!(
            old_name,
            h.extension_id(),
            "the deprecated name keeps its meaning"
        );
        assert!(h.channel_msg());
        assert_eq!(h.msg_type(), 0x7f);
        assert_eq!(h.msg_length(), MAX_PAYLOAD_LEN);
        assert_eq!(h.frame_len(), MAX_PAYLOAD_LEN + 6);
        assert_eq!(h.to_bytes(), bytes);
        assert_eq!(Header::from_prefix(&[1, 2, 3, 4, 5]), None);
        assert_eq!(
            Header::from_prefix(&[1, 0, 2, 3, 0, 0, 9])
                .unwrap()
                .msg_length(),
            3
        );
    }
}
