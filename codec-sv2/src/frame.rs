//! [`Frame`]: a header and its payload in a pool buffer.

use core::fmt;

use bytes::BufMut;
use sv2c_binary::{Frameable, MessageSet};
use sv2c_buffer_pool::{BufferPool, PoolBufMut};

use crate::error::CodecError;
use crate::header::Header;

/// One Sv2 frame: a [`Header`] and exactly `msg_length` payload bytes held in a
/// [`BufferPool`] buffer (a slot, or a counted heap fallback).
///
/// A frame is what a proxy routes: it can read and rewrite the channel id in place
/// ([`channel_id`](Frame::channel_id), [`set_channel_id`](Frame::set_channel_id)) and
/// forward the bytes unchanged, whatever the message, including messages of extensions
/// it does not know. When it does need the message, it decodes it borrowed
/// ([`decode_ref`](Frame::decode_ref): zero-copy, the slot stays pinned while the view
/// lives) or owned ([`decode`](Frame::decode): one copy; drop the frame and the slot is
/// free again).
///
/// ```
/// use sv2c_buffer_pool::BufferPool;
/// use sv2c_codec::Frame;
///
/// let pool = BufferPool::new(8, 1024).unwrap();
/// let mut payload = pool.acquire(24);
/// payload.copy_from_slice(&[
///     1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xef, 0xbe, 0xad, 0xde, 0, 0, 0x50, 0x66, 0, 0, 0, 0x20,
/// ]);
/// let mut frame = Frame::new(0x8000, 0x1a, payload).unwrap(); // SubmitSharesStandard
/// assert_eq!(frame.channel_id(), Some(1));
/// frame.set_channel_id(42).unwrap();
/// assert_eq!(&frame.to_vec()[..10], [0x00, 0x80, 0x1a, 24, 0, 0, 42, 0, 0, 0]);
/// ```
pub struct Frame {
    header: Header,
    payload: PoolBufMut,
}

impl Frame {
    /// A frame around `payload`; `msg_length` is the payload's length. `extension_type`
    /// is the wire field (channel bit included).
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] above 2^24 − 1 payload bytes.
    pub fn new(extension_type: u16, msg_type: u8, payload: PoolBufMut) -> Result<Self, CodecError> {
        let header = Header::new(extension_type, msg_type, payload.len())?;
        Ok(Frame { header, payload })
    }

    /// Builds a frame from a header and a payload whose length the caller has checked.
    pub(crate) fn from_parts(header: Header, payload: PoolBufMut) -> Self {
        debug_assert_eq!(header.msg_length(), payload.len());
        Frame { header, payload }
    }

    /// Encodes a message into a buffer from `pool` (one acquisition, no other allocation).
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] if the message encodes to more than 2^24 − 1 bytes.
    pub fn from_message<M: Frameable + ?Sized>(
        msg: &M,
        pool: &BufferPool,
    ) -> Result<Self, CodecError> {
        let header = Header::for_message(msg)?;
        let mut payload = pool.acquire(header.msg_length());
        msg.encode(&mut payload);
        Ok(Frame { header, payload })
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> Header {
        self.header
    }

    /// The payload bytes (`msg_length` of them).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The payload bytes, writable (the length cannot change).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.payload
    }

    /// The header and the payload buffer.
    pub fn into_parts(self) -> (Header, PoolBufMut) {
        (self.header, self.payload)
    }

    /// `true` if the payload lives in a pool slot (not a heap fallback).
    pub fn is_pooled(&self) -> bool {
        self.payload.is_pooled()
    }

    /// The channel id of a channel message: the first 4 payload bytes (spec §2.2), read
    /// without decoding the message. `None` if the channel bit is clear or the payload
    /// is shorter than 4 bytes.
    #[inline]
    pub fn channel_id(&self) -> Option<u32> {
        if !self.header.channel_msg() {
            return None;
        }
        self.payload
            .first_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b))
    }

    /// Rewrites the channel id in place (the proxy fast path: no decode, no re-encode).
    ///
    /// # Errors
    /// [`CodecError::NoChannelId`] if the frame carries no channel id.
    #[inline]
    pub fn set_channel_id(&mut self, channel_id: u32) -> Result<(), CodecError> {
        let header = self.header;
        if !header.channel_msg() {
            return Err(CodecError::NoChannelId { header });
        }
        match self.payload.first_chunk_mut::<4>() {
            Some(b) => {
                *b = channel_id.to_le_bytes();
                Ok(())
            }
            None => Err(CodecError::NoChannelId { header }),
        }
    }

    /// Decodes an owned message (one copy of the payload at most; the frame and its slot
    /// can be dropped right after).
    ///
    /// # Errors
    /// [`CodecError::UnknownMessage`] or [`CodecError::Decode`].
    pub fn decode<M: MessageSet>(&self) -> Result<M, CodecError> {
        // Built in the returned `Result` (see `MessageSet::decode_message_with`).
        M::decode_message_with(
            self.header.wire_extension_type(),
            self.header.msg_type(),
            &self.payload,
            Ok,
            |e| Err(CodecError::from_dispatch(self.header, e)),
        )
    }

    /// Decodes the borrowed form, pointing into the payload: no allocation, no copy. The
    /// pool slot stays pinned while the result lives.
    ///
    /// # Errors
    /// [`CodecError::UnknownMessage`] or [`CodecError::Decode`].
    pub fn decode_ref<M: MessageSet>(&self) -> Result<M::Ref<'_>, CodecError> {
        M::decode_message_ref(
            self.header.wire_extension_type(),
            self.header.msg_type(),
            &self.payload,
        )
        .map_err(|e| CodecError::from_dispatch(self.header, e))
    }

    /// Header plus payload length.
    #[inline]
    pub fn encoded_len(&self) -> usize {
        self.header.frame_len()
    }

    /// Writes header and payload into `buf`.
    pub fn write_to<B: BufMut + ?Sized>(&self, buf: &mut B) {
        buf.put_slice(&self.header.to_bytes());
        buf.put_slice(&self.payload);
    }

    /// Header and payload as a new `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.write_to(&mut v);
        v
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("header", &self.header)
            .field("pooled", &self.payload.is_pooled())
            .finish_non_exhaustive()
    }
}
