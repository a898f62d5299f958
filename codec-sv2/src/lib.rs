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
//!   straight from the read buffer. Nothing stays pinned. The default choice. Frames of
//!   messages outside `M` are skipped (spec §2.4); `Sv2Codec<MessageOrRaw<M>>` yields them
//!   as raw, forwardable items instead (proxies).
//! * [`FrameCodec`]: yields [`Frame`]s whose payloads live in a shared [`BufferPool`]; decode
//!   them borrowed ([`Frame::decode_ref`], zero-copy, slot pinned while the view lives) or
//!   owned, or forward them as they are.
//! * [`FrameDecoder`]: the same frames without tokio: the caller reads straight into the
//!   pool buffers the decoder hands out.
//!
//! # One connection type, flushing, and errors
//! [`Connection`] holds a plain or a Noise `Framed` behind one type, so a server's
//! handler is written once. It also answers two questions a `Framed` of an [`Sv2Codec`]
//! leaves open:
//! * **`flush()`**: on a `Framed<_, Sv2Codec<M>>`, `framed.flush().await` does not compile
//!   (`E0283 type annotations needed … cannot satisfy _: Frameable`), because the codec
//!   encodes every message type and `SinkExt::flush` is generic over the item. Write
//!   `SinkExt::<RawMessage>::flush(&mut framed)`, call the facade's `flush_frames()`
//!   (`sv2c::FramedExt`), or hold a [`Connection`], whose `flush()` and `close()` need no
//!   annotation.
//! * **Which errors end the stream?** [`CodecError::is_recoverable`]: a complete frame
//!   that did not decode is recoverable (skip it and read on); I/O, Noise, size-limit and
//!   truncation errors are not. [`Connection::next_message`] skips the recoverable ones
//!   for you: `while let Some(msg) = conn.next_message().await? { … }`.
//!
//! # Noise
//! With the `noise` feature, `noise::connect` / `noise::accept` run the Noise NX
//! handshake on a stream and return a `Framed` whose `noise::NoiseCodec` wraps either
//! codec above: the same messages or frames come out, encrypted on the wire (spec §4).
//! Switching a connection to Noise is one line:
//!
//! ```text
//! Framed::new(tcp, Sv2Codec::<M>::new())
//! noise::connect(tcp, Initiator::new(authority_key)?, Sv2Codec::<M>::new()).await?
//! ```
//!
//! # Features
//! * `tokio` (default): [`Sv2Codec`] and [`FrameCodec`], and [`read_batch`], the borrowed
//!   read loop over a `Framed` or `FramedRead`.
//! * `noise` (implies `tokio`): the `noise` module — `NoiseCodec`, the
//!   handshake helpers, and re-exports of the `sv2c-noise` keys, certificate and handshake
//!   types, so a proxy needs only this crate. Adds `sv2c-noise` (secp256k1, ring) and
//!   tokio's `io-util`.
//!
//! [`BufferPool`]: sv2c_buffer_pool::BufferPool

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

#[cfg(feature = "noise")]
mod accept_log;
#[cfg(feature = "tokio")]
mod connection;
mod decoder;
mod error;
mod frame;
mod header;
#[cfg(feature = "noise")]
pub mod noise;
#[cfg(feature = "tokio")]
mod read_batch;
#[cfg(feature = "tokio")]
mod scratch;
#[cfg(feature = "tokio")]
mod tokio_codec;

#[cfg(feature = "tokio")]
pub use connection::Connection;
pub use decoder::FrameDecoder;
pub use error::CodecError;
pub use frame::Frame;
pub use header::{Header, MAX_PAYLOAD_LEN, PayloadTooLarge};
#[cfg(feature = "tokio")]
pub use read_batch::{BatchDecoder, BatchRead, read_batch};
#[cfg(feature = "tokio")]
pub use tokio_codec::{FrameCodec, Sv2Codec};

pub use sv2c_binary;
pub use sv2c_buffer_pool;

/// The crate README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
