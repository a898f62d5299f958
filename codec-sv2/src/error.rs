//! The codec's error type.

use std::io;

use sv2c_binary::{DecodeError, DispatchError, Header, PayloadTooLarge};

/// Errors from framing, decoding and encoding.
///
/// [`is_recoverable`](CodecError::is_recoverable) tells whether the byte stream is still
/// usable: a recoverable error concerned one complete frame, which the decoder has
/// already consumed, so the next call decodes the next frame. A read loop skips those and
/// stops at the others. On a bare `Framed`, mind that tokio-util yields `None` once
/// after *any* error, so a `while let Some(item) = framed.next().await` loop ends there
/// even when the error was recoverable; [`Connection::next_message`](crate::Connection::next_message)
/// reads on past it:
///
/// ```
/// # use sv2c_binary::messages::Message;
/// # use sv2c_codec::{CodecError, Connection, Sv2Codec};
/// # use tokio_util::codec::Framed;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), CodecError> {
/// # let (peer, stream) = tokio::io::duplex(64);
/// # drop(peer);
/// let mut conn: Connection<_> = Framed::new(stream, Sv2Codec::<Message>::new()).into();
/// let mut skipped = 0;
/// // Recoverable errors (a frame that did not decode, already consumed) are handed to the
/// // closure; `?` returns those that end the stream (close the connection then).
/// while let Some(msg) = conn.next_message_with(|_e| skipped += 1).await? {
///     println!("{}", msg.name());
/// }
/// # assert_eq!(skipped, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
// Aligned to 16 bytes, as `Message` is: inside the items the codec and `FramedRead` hand
// out (`Result<Option<Message>, CodecError>`, `Poll<Option<Result<Message, CodecError>>>`)
// the error then starts on a 16-byte boundary, and `FramedRead`'s moves of an item take
// half the time (docs/adr/0004-message-enum-layout.md).
#[repr(align(16))]
pub enum CodecError {
    /// A header announced a payload larger than the configured maximum. The stream is not
    /// usable: the payload was not read, so there is no next frame boundary.
    #[error("frame payload of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge {
        /// The announced (or attempted) payload length.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A complete frame carried a message outside the message set asked for
    /// ([`Frame::decode`](crate::Frame::decode) / `decode_ref`). Recoverable: the frame was
    /// consumed. `Sv2Codec` does not return it: it skips such frames (spec §2.4, see
    /// `Sv2Codec::skipped_frames`).
    #[error("unknown message in frame {header:?}")]
    UnknownMessage {
        /// The frame's header.
        header: Header,
    },
    /// A complete frame's payload does not decode as the message its header names.
    /// Recoverable: the frame was consumed.
    #[error("undecodable payload in frame {header:?}: {source}")]
    Decode {
        /// The frame's header.
        header: Header,
        /// What failed, where.
        #[source]
        source: DecodeError,
    },
    /// A channel-id operation on a frame without a channel id (channel bit clear, or a
    /// payload shorter than 4 bytes).
    #[error("frame {header:?} carries no channel id")]
    NoChannelId {
        /// The frame's header.
        header: Header,
    },
    /// The stream ended in the middle of a frame.
    #[error("stream ended inside a frame ({buffered} bytes of it received)")]
    TruncatedFrame {
        /// Bytes of the unfinished frame that had arrived.
        buffered: usize,
    },
    /// An I/O error from the underlying stream. Not recoverable.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The Noise layer failed: a handshake error (wrong authority, bad certificate,
    /// corrupted act 2), or a transport error (a frame that fails authentication, a
    /// decrypted header above the maximum payload, a stream ending inside an encrypted
    /// frame). Not recoverable: close the connection.
    #[cfg(feature = "noise")]
    #[error("noise: {0}")]
    Noise(#[from] sv2c_noise::NoiseError),
    /// A Noise responder received a plaintext `SetupConnection` where the handshake's act 1
    /// belongs: the client does not speak Noise (or was pointed at the wrong port). Not
    /// recoverable: close the connection.
    #[cfg(feature = "noise")]
    #[error(
        "the peer sent a plaintext SetupConnection ({received} bytes) instead of Noise act 1: a client without Noise?"
    )]
    PlaintextPeer {
        /// Bytes received before the responder gave up.
        received: usize,
    },
}

/// A payload too long for a frame is [`CodecError::FrameTooLarge`], with the same numbers.
impl From<PayloadTooLarge> for CodecError {
    fn from(e: PayloadTooLarge) -> Self {
        CodecError::FrameTooLarge {
            len: e.len,
            max: e.max,
        }
    }
}

impl CodecError {
    /// `true` if the stream is still usable after this error: the offending frame was
    /// complete and has been consumed.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            CodecError::UnknownMessage { .. }
                | CodecError::Decode { .. }
                | CodecError::NoChannelId { .. }
        )
    }

    pub(crate) fn from_dispatch(header: Header, e: DispatchError) -> Self {
        match e {
            DispatchError::Decode(source) => CodecError::Decode { header, source },
            _ => CodecError::UnknownMessage { header },
        }
    }
}
