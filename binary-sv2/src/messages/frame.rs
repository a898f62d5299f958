//! Minimal frame helpers (spec §2.1): split a 6-byte header and payload, and put a
//! message into a frame. The streaming codec lives in `sv2c-codec`.

use alloc::vec::Vec;
use bytes::BufMut;

use super::raw::RawMessageRef;
use crate::Frameable;
use crate::error::{DecodeError, DecodeErrorKind, LengthError};
pub use crate::header::{HEADER_LEN, MAX_PAYLOAD_LEN};
use crate::header::{Header, PayloadTooLarge};

/// Splits the first frame off `bytes`: its header fields and payload (as a
/// [`RawMessageRef`], `extension_type` with the channel bit) and the bytes after it.
///
/// # Errors
/// [`DecodeErrorKind::Truncated`] if `bytes` is shorter than the header or than the
/// payload the header announces.
///
/// ```
/// use sv2c_binary::messages::split_frame;
/// let stream = [0x00, 0x00, 0x01, 0x06, 0x00, 0x00, 2, 0, 0, 0, 0, 0, 0xff];
/// let (frame, rest) = split_frame(&stream).unwrap();
/// assert_eq!((frame.extension_type, frame.msg_type, frame.payload.len()), (0, 1, 6));
/// assert_eq!(rest, [0xff]);
/// ```
pub fn split_frame(bytes: &[u8]) -> Result<(RawMessageRef<'_>, &[u8]), DecodeError> {
    let Some((header, rest)) = bytes.split_first_chunk::<HEADER_LEN>() else {
        return Err(DecodeError::truncated(
            "FRAME_HEADER",
            0,
            HEADER_LEN,
            bytes.len(),
        ));
    };
    let header = Header::parse(*header);
    let len = header.msg_length();
    if rest.len() < len {
        return Err(DecodeError::truncated(
            "FRAME_PAYLOAD",
            HEADER_LEN,
            len,
            rest.len(),
        ));
    }
    let (payload, rest) = rest.split_at(len);
    let frame = RawMessageRef::new(header.wire_extension_type(), header.msg_type(), payload);
    Ok((frame, rest))
}

/// Splits exactly one frame into `(extension_type, msg_type, payload)`;
/// `extension_type` is the header field as is (channel bit included).
///
/// # Errors
/// [`DecodeErrorKind::Truncated`] as [`split_frame`], and
/// [`DecodeErrorKind::TrailingBytes`] if bytes follow the payload.
///
/// ```
/// use sv2c_binary::messages::{frame_parts, Message};
/// use sv2c_binary::MessageSet;
/// let frame = [0x00, 0x80, 0x03, 0x04, 0x00, 0x00, 9, 0, 0, 0]; // ChannelEndpointChanged
/// let (ext, msg_type, payload) = frame_parts(&frame).unwrap();
/// let msg = Message::decode_message(ext, msg_type, payload).unwrap();
/// assert_eq!(msg.name(), "ChannelEndpointChanged");
/// ```
pub fn frame_parts(frame: &[u8]) -> Result<(u16, u8, &[u8]), DecodeError> {
    let (f, rest) = split_frame(frame)?;
    if !rest.is_empty() {
        return Err(DecodeError::new(
            DecodeErrorKind::TrailingBytes { len: rest.len() },
            "FRAME",
            HEADER_LEN + f.payload.len(),
        ));
    }
    Ok((f.extension_type, f.msg_type, f.payload))
}

/// Writes `msg` as a frame into `buf`: header (extension type with the channel bit as the
/// message defines it, msg_type, msg_length) and payload.
///
/// # Errors
/// [`LengthError`] if the payload is longer than [`MAX_PAYLOAD_LEN`]; nothing is written.
pub fn encode_frame_into<M, B>(msg: &M, buf: &mut B) -> Result<(), LengthError>
where
    M: Frameable + ?Sized,
    B: BufMut + ?Sized,
{
    msg.put_frame(buf, |header, buf: &mut B| {
        buf.put_slice(&header.to_bytes());
        Ok::<(), PayloadTooLarge>(())
    })
    .map_err(|e| LengthError {
        ty: "U24",
        what: "msg_length",
        actual: e.len as u64,
        max: e.max as u64,
    })
}

/// Encodes `msg` as a complete frame (header + payload) into a new `Vec`.
///
/// # Errors
/// [`LengthError`] if the payload is longer than [`MAX_PAYLOAD_LEN`].
///
/// ```
/// use sv2c_binary::messages::{encode_frame, SetupConnectionSuccess};
/// let frame = encode_frame(&SetupConnectionSuccess { used_version: 2, flags: 0 }).unwrap();
/// assert_eq!(frame, [0x00, 0x00, 0x01, 0x06, 0x00, 0x00, 0x02, 0x00, 0, 0, 0, 0]);
/// ```
pub fn encode_frame<M: Frameable + ?Sized>(msg: &M) -> Result<Vec<u8>, LengthError> {
    let mut out = Vec::with_capacity(HEADER_LEN + msg.encoded_len());
    encode_frame_into(msg, &mut out)?;
    Ok(out)
}
