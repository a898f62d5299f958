//! Stratum V2 framing: the [`Header`], pooled [`Frame`]s, a sans-io [`FrameDecoder`], and
//! `tokio_util` codecs that yield owned messages ([`Sv2Codec`]) or pooled frames
//! ([`FrameCodec`]).
//!
//! A frame is a 6-byte header and `msg_length` payload bytes (spec §2):
//!
//! ```text
//! +-----------------+----------+-----------------+---------------------------+
//! | extension_type  | msg_type | msg_length      | payload (msg_length bytes)|
//! | U16 LE, bit 15 = channel_msg | U8 | U24 LE   | message fields, then TLVs |
//! +-----------------+----------+-----------------+---------------------------+
//! ```
//!
//! With `channel_msg` set, the first 4 payload bytes are the channel id, which a proxy
//! can read and rewrite without decoding the message ([`Frame::channel_id`],
//! [`Frame::set_channel_id`]).
//!
//! # Which decoder?
//! * [`Sv2Codec<M>`]: `Framed<TcpStream, Sv2Codec<Message>>` yields owned messages decoded
//!   straight from the read buffer. Nothing stays pinned. The default choice.
//! * [`FrameCodec`]: yields [`Frame`]s whose payloads live in a shared [`BufferPool`]; decode
//!   them borrowed ([`Frame::decode_ref`], zero-copy, slot pinned while the view lives) or
//!   owned, or forward them as they are.
//! * [`FrameDecoder`]: the same frames without tokio: the caller reads straight into the
//!   pool buffers the decoder hands out.
//!
//! # Features
//! * `tokio` (default): [`Sv2Codec`] and [`FrameCodec`].
//!
//! [`BufferPool`]: sv2c_buffer_pool::BufferPool

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod decoder;
mod error;
mod frame;
mod header;
#[cfg(feature = "tokio")]
mod tokio_codec;

pub use decoder::FrameDecoder;
pub use error::CodecError;
pub use frame::Frame;
pub use header::{Header, MAX_PAYLOAD_LEN};
#[cfg(feature = "tokio")]
pub use tokio_codec::{FrameCodec, Sv2Codec};

pub use sv2c_binary;
pub use sv2c_buffer_pool;
