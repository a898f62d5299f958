//! `tokio_util::codec` implementations: [`Sv2Codec`] (owned messages) and [`FrameCodec`]
//! (pooled frames).

use core::marker::PhantomData;

use bytes::{Buf, BufMut, BytesMut};
use sv2c_binary::messages::{Message, RawMessage, RawMessageRef};
use sv2c_binary::{DispatchError, Frameable, MessageSet};
use sv2c_buffer_pool::BufferPool;
use tokio_util::codec::{Decoder, Encoder};

use crate::error::CodecError;
use crate::frame::Frame;
use crate::header::{Header, MAX_PAYLOAD_LEN};

/// Room reserved ahead of an incomplete frame's bytes, at most: `missing` bytes still to
/// come, after `received` bytes of the frame. Never more than has arrived, or 1 KiB while
/// fewer have (most messages are smaller): a peer that announces 16 MiB and sends 6 bytes
/// gets 1 KiB of room, and a large frame's buffer doubles with each read.
pub(crate) fn read_room(missing: usize, received: usize) -> usize {
    const SMALL: usize = 1024;
    missing.min(received.max(SMALL))
}

/// Checks the header at the front of `src` and reports whether the whole frame is there.
/// While it is not, reserves room for more ([`read_room`]).
#[inline]
fn complete_frame(src: &mut BytesMut, max_payload: usize) -> Result<Option<Header>, CodecError> {
    let Some(header) = Header::from_prefix(src) else {
        src.reserve(Header::SIZE - src.len());
        return Ok(None);
    };
    let len = header.msg_length();
    if len > max_payload {
        return Err(CodecError::FrameTooLarge {
            len,
            max: max_payload,
        });
    }
    let frame_len = header.frame_len();
    if src.len() < frame_len {
        src.reserve(read_room(frame_len - src.len(), src.len()));
        return Ok(None);
    }
    Ok(Some(header))
}

/// The header of the frame at the front of `frame` (checked already by
/// [`complete_frame`]), for an error about that frame. The decoding loops read it again
/// from the buffer instead of keeping the one they checked: kept for the error path, it was
/// packed into one register for every frame (`sv2c-icount` `stream/read_batch` 4 511 ->
/// 4 122 instructions per 64 frames).
#[cold]
fn header_of(frame: &[u8]) -> Header {
    Header::parse(*frame.first_chunk().unwrap_or(&[0; Header::SIZE]))
}

/// Writes a message as a frame straight into `dst`: exact size reserved once, header and
/// payload written in place, no intermediate buffer.
#[inline]
fn encode_message<T: Frameable>(
    item: &T,
    dst: &mut BytesMut,
    max_payload: usize,
) -> Result<(), CodecError> {
    item.put_frame(dst, |header, dst: &mut BytesMut| {
        if header.msg_length() > max_payload {
            return Err(CodecError::FrameTooLarge {
                len: header.msg_length(),
                max: max_payload,
            });
        }
        dst.reserve(header.frame_len());
        dst.put_slice(&header.to_bytes());
        Ok(())
    })
}

// ===== Sv2Codec =====

/// The codec a mining proxy or pool needs: `Framed<TcpStream, Sv2Codec<M>>` yields owned
/// messages of the set `M` and sends anything [`Frameable`] (messages by value or by
/// reference).
///
/// Messages are decoded straight from the framed read buffer once their whole frame is
/// there: no pool slot is used and nothing stays pinned (owned decode of a `Message`: no
/// allocation for fixed-size messages or when every variable-length value is short, one
/// for the shared copy of long values, and one more for the box of the five large, rare
/// variants, see `sv2c_binary::messages::Message`).
///
/// A read loop of your own can skip the owned messages: [`decode_all_with`] hands every
/// buffered message to a closure, borrowed from the read buffer and by reference, and is
/// the fastest way to read a connection (about a fifth of the time per share of
/// [`decode`](Decoder::decode) in the stream benchmark); [`decode_with`] does the same one
/// frame per call. On a `Framed` or `FramedRead`, [`read_batch`](crate::read_batch) does
/// the reads around `decode_all_with`, in place of `next()`.
///
/// [`decode_all_with`]: Sv2Codec::decode_all_with
/// [`decode_with`]: Sv2Codec::decode_with
///
/// **`framed.flush()` does not compile** (`E0283 type annotations needed … cannot satisfy
/// _: Frameable`): the codec encodes any `Frameable`, so `SinkExt::flush` cannot tell
/// which `Sink<Item>` is meant. Write `SinkExt::<RawMessage>::flush(&mut framed)` (any
/// item type flushes every buffered frame), use the facade crate's `flush_frames()` and
/// `close_frames()` (`sv2c::prelude::FramedExt`), or hold a [`Connection`](crate::Connection),
/// whose `flush()` and `close()` take no annotation. `send(msg)` infers the item.
///
/// # Unknown frames, errors and the stream
/// A complete frame whose `(extension_type, msg_type)` the set `M` does not know is
/// **skipped silently** and counted ([`skipped_frames`](Sv2Codec::skipped_frames)), as spec
/// §2.4 asks of an endpoint, so the connection stays open and a `while let Some(msg)` loop
/// carries on with the next frame. A proxy that must forward such frames uses
/// `Sv2Codec<MessageOrRaw<M>>`: unknown frames then come out as
/// [`MessageOrRaw::Raw`](sv2c_binary::messages::MessageOrRaw::Raw) items, ready to send on.
///
/// A frame of a **known** message whose payload does not decode is a protocol violation by
/// the peer and is returned as [`CodecError::Decode`]. Its frame has been consumed, so the
/// error is [recoverable](CodecError::is_recoverable): tokio-util's `Framed` yields the
/// error, then `None` once, and resumes with the next frame if polled again. A frame above
/// [`max_payload_len`](Sv2Codec::max_payload_len) or a stream ending inside a frame is
/// fatal. See `docs/adr/0003-unknown-frames.md`.
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use sv2c_binary::messages::{Message, SetupConnectionSuccess};
/// use sv2c_codec::Sv2Codec;
/// use tokio_util::codec::Framed;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sv2c_codec::CodecError> {
/// let (client, server) = tokio::io::duplex(1024);
/// let mut server = Framed::new(server, Sv2Codec::<Message>::new()); // all Sv2 messages
/// let mut client = Framed::new(client, Sv2Codec::<Message>::new());
/// server.send(SetupConnectionSuccess { used_version: 2, flags: 0 }).await?;
/// match client.next().await.transpose()? {
///     Some(Message::SetupConnectionSuccess(m)) => assert_eq!(m.used_version, 2),
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Sv2Codec<M = Message> {
    max_payload: usize,
    skipped: u64,
    _set: PhantomData<fn() -> M>,
}

impl<M> Sv2Codec<M> {
    /// A codec for the message set `M`, accepting payloads up to the protocol maximum
    /// (2^24 − 1 bytes): `Sv2Codec::<Message>::new()` for every message of the protocol,
    /// `Sv2Codec::<MyProtocol>::new()` for a derived set. Where the item type is not
    /// otherwise fixed, name the set (defaults of type parameters do not apply to
    /// expressions).
    pub fn new() -> Self {
        Self::for_set()
    }

    /// Same as [`new`](Self::new).
    pub fn for_set() -> Self {
        Sv2Codec {
            max_payload: MAX_PAYLOAD_LEN,
            skipped: 0,
            _set: PhantomData,
        }
    }

    /// Sets the largest payload accepted or sent (capped at 2^24 − 1).
    #[must_use]
    pub fn with_max_payload_len(mut self, max: usize) -> Self {
        self.max_payload = max.min(MAX_PAYLOAD_LEN);
        self
    }

    /// Old name of [`with_max_payload_len`](Self::with_max_payload_len).
    #[doc(hidden)]
    #[must_use]
    pub fn max_payload(self, max: usize) -> Self {
        self.with_max_payload_len(max)
    }

    /// The largest payload accepted or sent.
    pub fn max_payload_len(&self) -> usize {
        self.max_payload
    }

    /// Total: complete frames of messages outside the set skipped since the codec was
    /// made (spec §2.4).
    pub fn skipped_frames(&self) -> u64 {
        self.skipped
    }
}

impl<M: MessageSet> Sv2Codec<M> {
    /// Decodes **every** complete frame buffered in `src` as a borrowed message
    /// (`M::Ref`: [`MessageRef`](sv2c_binary::messages::MessageRef) for [`Message`]),
    /// hands each to `f` by reference, in order, then consumes them all at once. Returns
    /// how many messages `f` was given; a partial frame at the end stays in `src` (room is
    /// reserved for the rest, as [`decode`](Decoder::decode) does).
    ///
    /// This is the hot path for a read loop of your own (read into a `BytesMut`, call this,
    /// read again). Each message points into `src` (no allocation, no copy of long values)
    /// and is read where it was decoded: it is never moved. Moving the owned
    /// [`Message`] enum out of [`decode`](Decoder::decode), through its `Result` and
    /// `Option` and into the caller, costs more than decoding a small message
    /// (BENCHMARKS.md, stream suite: a share decodes in about a fifth of the time this
    /// way). `tokio_util`'s `FramedRead` only calls `decode`; on a `Framed` or
    /// `FramedRead`, [`read_batch`](crate::read_batch) does the reads around this method.
    /// Call `to_owned()` in `f` on the messages that must outlive the buffer.
    ///
    /// Frames of messages outside `M` are skipped and counted
    /// ([`skipped_frames`](Self::skipped_frames)). A payload that does not decode stops the
    /// batch with [`CodecError::Decode`]: the messages before it were handed to `f`, and
    /// it and they are consumed, so the error is recoverable and the next call carries on
    /// after it. A frame above [`max_payload_len`](Self::max_payload_len) stops it with
    /// [`CodecError::FrameTooLarge`] (fatal), with the frames before it consumed. At the
    /// end of the stream, bytes left in `src` are a truncated frame.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use sv2c_binary::messages::{encode_frame, Message, MessageRef, SubmitSharesStandard};
    /// use sv2c_codec::Sv2Codec;
    ///
    /// let share = |seq| SubmitSharesStandard { channel_id: 1, sequence_number: seq,
    ///     job_id: 2, nonce: 3, ntime: 4, version: 5 };
    /// let mut buf = BytesMut::new();
    /// for seq in 0..3 {
    ///     buf.extend_from_slice(&encode_frame(&share(seq)).unwrap());
    /// }
    /// buf.extend_from_slice(&encode_frame(&share(3)).unwrap()[..10]); // part of a frame
    ///
    /// let mut codec = Sv2Codec::<Message>::new();
    /// let mut seqs = Vec::new();
    /// let n = codec.decode_all_with(&mut buf, |m| {
    ///     if let MessageRef::SubmitSharesStandard(s) = m {
    ///         seqs.push(s.sequence_number);
    ///     }
    /// })?;
    /// assert_eq!((n, seqs), (3, vec![0, 1, 2]));
    /// assert_eq!(buf.len(), 10); // waits for the rest of its frame
    /// # Ok::<(), sv2c_codec::CodecError>(())
    /// ```
    ///
    /// # Errors
    /// [`CodecError::Decode`] (recoverable) or [`CodecError::FrameTooLarge`] (fatal), as
    /// above.
    pub fn decode_all_with<F>(&mut self, src: &mut BytesMut, mut f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b M::Ref<'a>),
    {
        // Frames are read from a slice at `at`, and `src` is advanced once at the end: one
        // `BytesMut` update per batch instead of one per frame.
        let mut at = 0;
        let mut handed = 0;
        let stopped = loop {
            let rest = src.get(at..).unwrap_or_default();
            let Some(header) = Header::from_prefix(rest) else {
                break None;
            };
            let len = header.msg_length();
            if len > self.max_payload {
                break Some(CodecError::FrameTooLarge {
                    len,
                    max: self.max_payload,
                });
            }
            let Some(payload) = rest.get(Header::SIZE..header.frame_len()) else {
                break None;
            };
            at += header.frame_len();
            // Matched by reference: the message stays where it was decoded. Matched by
            // value, it was first copied out of the `Result` (stream suite: 18.1 against
            // 13.5 ns per share). Decoded with `decode_message_ref_with`, which builds it in
            // place without the hand-over of `decode_message_ref` (ADR 0004): it is never
            // moved here.
            let decoded = M::decode_message_ref_with(
                header.wire_extension_type(),
                header.msg_type(),
                payload,
                Ok,
                Err,
            );
            match &decoded {
                Ok(m) => {
                    f(m);
                    handed += 1;
                }
                Err(DispatchError::Decode(source)) => {
                    break Some(CodecError::Decode {
                        header: header_of(rest),
                        source: *source,
                    });
                }
                // Not a message of this set: discarded silently (spec §2.4).
                Err(_) => self.skipped += 1,
            }
        };
        src.advance(at);
        match stopped {
            Some(e) => Err(e),
            None => {
                // Reserves room for the partial frame, if any (its header was checked).
                complete_frame(src, self.max_payload)?;
                Ok(handed)
            }
        }
    }

    /// Decodes the **next** complete frame of `src` as a borrowed message, hands it to `f`
    /// by reference, then consumes the frame and returns what `f` returned; `Ok(None)`
    /// while no whole frame is buffered.
    ///
    /// One frame at a time, for a loop that acts between messages (an `.await` on what
    /// `f` returned, say); otherwise [`decode_all_with`](Self::decode_all_with) is faster,
    /// and its documentation says what the borrowed form saves. Unknown frames, errors and
    /// the end of the stream are as for [`decode`](Decoder::decode).
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use sv2c_binary::messages::{encode_frame, Message, MessageRef, SubmitSharesStandard};
    /// use sv2c_codec::Sv2Codec;
    ///
    /// let share = SubmitSharesStandard { channel_id: 1, sequence_number: 7, job_id: 2,
    ///     nonce: 3, ntime: 4, version: 5 };
    /// let mut buf = BytesMut::from(&encode_frame(&share).unwrap()[..]);
    /// let mut codec = Sv2Codec::<Message>::new();
    /// let seq = codec.decode_with(&mut buf, |m| match m {
    ///     MessageRef::SubmitSharesStandard(s) => Some(s.sequence_number),
    ///     _ => None,
    /// })?;
    /// assert_eq!(seq, Some(Some(7)));
    /// assert_eq!(codec.decode_with(&mut buf, |_| ())?, None); // nothing buffered
    /// # Ok::<(), sv2c_codec::CodecError>(())
    /// ```
    ///
    /// # Errors
    /// As [`decode`](Decoder::decode).
    #[inline]
    pub fn decode_with<R, F>(&mut self, src: &mut BytesMut, f: F) -> Result<Option<R>, CodecError>
    where
        F: for<'a, 'b> FnOnce(&'b M::Ref<'a>) -> R,
    {
        let mut f = f;
        loop {
            match self.decode_one_with(src, f)? {
                Step::Done(r) => return Ok(Some(r)),
                Step::Waiting => return Ok(None),
                // An unknown frame was skipped: on to the next one, `f` still unused.
                Step::Skipped(unused) => f = unused,
            }
        }
    }

    /// One frame of [`decode_with`](Self::decode_with): `f` comes back unused when the
    /// frame was skipped, so that the loop can offer it the next one.
    #[inline]
    fn decode_one_with<R, F>(&mut self, src: &mut BytesMut, f: F) -> Result<Step<R, F>, CodecError>
    where
        F: for<'a, 'b> FnOnce(&'b M::Ref<'a>) -> R,
    {
        let Some(header) = complete_frame(src, self.max_payload)? else {
            return Ok(Step::Waiting);
        };
        let frame_len = header.frame_len();
        let decoded = M::decode_message_ref_with(
            header.wire_extension_type(),
            header.msg_type(),
            src.get(Header::SIZE..frame_len).unwrap_or_default(),
            Ok,
            Err,
        );
        // By reference, as in `decode_all_with`. `f`'s result cannot borrow the buffer,
        // so the frame can be consumed once the message is dropped.
        let step = match &decoded {
            Ok(m) => Ok(Step::Done(f(m))),
            Err(DispatchError::Decode(source)) => Err(CodecError::Decode {
                header: header_of(src),
                source: *source,
            }),
            // Not a message of this set: discarded silently (spec §2.4).
            Err(_) => {
                self.skipped += 1;
                Ok(Step::Skipped(f))
            }
        };
        drop(decoded);
        src.advance(frame_len);
        step
    }
}

/// What one frame of [`Sv2Codec::decode_with`] came to.
enum Step<R, F> {
    /// The message was handed to the closure, which returned this.
    Done(R),
    /// No whole frame is buffered.
    Waiting,
    /// The frame was of a message outside the set and was skipped; the closure is unused.
    Skipped(F),
}

impl<M> Default for Sv2Codec<M> {
    fn default() -> Self {
        Self::for_set()
    }
}

impl<M> Clone for Sv2Codec<M> {
    fn clone(&self) -> Self {
        Sv2Codec {
            max_payload: self.max_payload,
            skipped: 0,
            _set: PhantomData,
        }
    }
}

impl<M: MessageSet> Decoder for Sv2Codec<M> {
    type Item = M;
    type Error = CodecError;

    #[inline]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<M>, CodecError> {
        loop {
            let Some(header) = complete_frame(src, self.max_payload)? else {
                return Ok(None);
            };
            let frame_len = header.frame_len();
            let mut unknown = false;
            let frame: &[u8] = src;
            // Built where this function returns it (see `decode_message_with`).
            let result = M::decode_message_with(
                header.wire_extension_type(),
                header.msg_type(),
                frame.get(Header::SIZE..frame_len).unwrap_or_default(),
                |m| Ok(Some(m)),
                |e| match e {
                    DispatchError::Decode(source) => Err(CodecError::Decode {
                        header: header_of(frame),
                        source,
                    }),
                    // Not a message of this set: discarded silently (spec §2.4).
                    _ => {
                        unknown = true;
                        Ok(None)
                    }
                },
            );
            src.advance(frame_len);
            if !unknown {
                return result;
            }
            self.skipped += 1;
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<M>, CodecError> {
        match self.decode(src)? {
            Some(m) => Ok(Some(m)),
            None if src.is_empty() => Ok(None),
            None => Err(CodecError::TruncatedFrame {
                buffered: src.len(),
            }),
        }
    }
}

impl<M, T: Frameable> Encoder<T> for Sv2Codec<M> {
    type Error = CodecError;

    #[inline]
    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), CodecError> {
        encode_message(&item, dst, self.max_payload)
    }
}

// ===== FrameCodec =====

/// A frame-level codec: `Decoder<Item = Frame>` with payloads from a fixed-capacity
/// [`BufferPool`], and `Encoder<Frame>`.
///
/// For proxies that route or forward frames by header (rewriting the channel id in
/// place, passing unknown extensions through intact) and for the borrowed
/// ([`Frame::decode_ref`]) path. The pool can be shared by many connections; its
/// statistics show the slots in use and the heap fallbacks.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    pool: BufferPool,
    max_payload: usize,
}

impl FrameCodec {
    /// A codec taking payload buffers from `pool`, accepting payloads up to 2^24 − 1.
    pub fn new(pool: BufferPool) -> Self {
        FrameCodec {
            pool,
            max_payload: MAX_PAYLOAD_LEN,
        }
    }

    /// Sets the largest payload accepted or sent (capped at 2^24 − 1).
    #[must_use]
    pub fn with_max_payload_len(mut self, max: usize) -> Self {
        self.max_payload = max.min(MAX_PAYLOAD_LEN);
        self
    }

    /// Old name of [`with_max_payload_len`](Self::with_max_payload_len).
    #[doc(hidden)]
    #[must_use]
    pub fn max_payload(self, max: usize) -> Self {
        self.with_max_payload_len(max)
    }

    /// The largest payload accepted or sent.
    pub fn max_payload_len(&self) -> usize {
        self.max_payload
    }

    /// The pool payloads come from.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// Hands **every** complete frame buffered in `src` to `f`, borrowed from `src` as a
    /// [`RawMessageRef`] (the header's extension type, with its channel bit, the message
    /// type and the payload), in order, then consumes them all at once. Returns how many
    /// frames `f` was given; a partial frame at the end stays in `src` (room is reserved
    /// for the rest, as [`decode`](Decoder::decode) does).
    ///
    /// The borrowed read loop for a proxy: no payload is copied into the pool, and `f`
    /// forwards what it wants by writing it where it goes (a `RawMessageRef` is
    /// [`Frameable`]: [`encode_frame_into`](sv2c_binary::messages::encode_frame_into) or
    /// an upstream `Framed`'s `write_buffer_mut()`), decodes it
    /// ([`MessageSet::decode_message_ref`] with its fields), or keeps it
    /// (`to_owned()`). On a `Framed` or `FramedRead`, [`read_batch`](crate::read_batch)
    /// does the reads around this method.
    ///
    /// A frame above [`max_payload_len`](Self::max_payload_len) stops the batch with
    /// [`CodecError::FrameTooLarge`] (fatal), with the frames before it handed out and
    /// consumed. At the end of the stream, bytes left in `src` are a truncated frame.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use sv2c_binary::messages::{encode_frame, encode_frame_into, SubmitSharesStandard};
    /// use sv2c_buffer_pool::BufferPool;
    /// use sv2c_codec::FrameCodec;
    ///
    /// let share = |channel_id| SubmitSharesStandard { channel_id, sequence_number: 0,
    ///     job_id: 2, nonce: 3, ntime: 4, version: 5 };
    /// let mut buf = BytesMut::new();
    /// for channel in 1..=3 {
    ///     buf.extend_from_slice(&encode_frame(&share(channel)).unwrap());
    /// }
    ///
    /// // Forward the frames of channel 2, byte for byte, into an upstream buffer.
    /// let mut codec = FrameCodec::new(BufferPool::new(8, 256).unwrap());
    /// let mut upstream = BytesMut::new();
    /// let n = codec.decode_all_with(&mut buf, |frame| {
    ///     if frame.channel_id() == Some(2) {
    ///         encode_frame_into(frame, &mut upstream).unwrap();
    ///     }
    /// })?;
    /// assert_eq!(n, 3);
    /// assert_eq!(&upstream[..], &encode_frame(&share(2)).unwrap()[..]);
    /// assert!(buf.is_empty());
    /// # Ok::<(), sv2c_codec::CodecError>(())
    /// ```
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] (fatal), as above.
    pub fn decode_all_with<F>(&mut self, src: &mut BytesMut, mut f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b RawMessageRef<'a>),
    {
        // The loop of `Sv2Codec::decode_all_with` without its decode. The two are not one
        // generic walk over frames: each of the four shapes of that tried (a closure per
        // frame returning a `Result`, an `Option` of the error or a `ControlFlow`, or a
        // loop ending with a small enum) cost the share stream 4 to 11 instructions per
        // frame (callgrind `stream/read_batch`: 5 141 -> 5 387..5 837 per 64 frames;
        // docs/adr/0011-borrowed-read-loops.md).
        let mut at = 0;
        let mut handed = 0;
        let too_large = loop {
            let rest = src.get(at..).unwrap_or_default();
            let Some(header) = Header::from_prefix(rest) else {
                break None;
            };
            let len = header.msg_length();
            if len > self.max_payload {
                break Some(len);
            }
            let Some(payload) = rest.get(Header::SIZE..header.frame_len()) else {
                break None;
            };
            at += header.frame_len();
            f(&RawMessageRef::new(
                header.wire_extension_type(),
                header.msg_type(),
                payload,
            ));
            handed += 1;
        };
        src.advance(at);
        if let Some(len) = too_large {
            return Err(CodecError::FrameTooLarge {
                len,
                max: self.max_payload,
            });
        }
        // Reserves room for the partial frame, if any (its header was checked).
        complete_frame(src, self.max_payload)?;
        Ok(handed)
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = CodecError;

    #[inline]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        let Some(header) = complete_frame(src, self.max_payload)? else {
            return Ok(None);
        };
        let mut payload = self.pool.acquire(header.msg_length());
        payload.copy_from_slice(
            src.get(Header::SIZE..header.frame_len())
                .unwrap_or_default(),
        );
        src.advance(header.frame_len());
        Ok(Some(Frame::from_parts(header, payload)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        match self.decode(src)? {
            Some(f) => Ok(Some(f)),
            None if src.is_empty() => Ok(None),
            None => Err(CodecError::TruncatedFrame {
                buffered: src.len(),
            }),
        }
    }
}

impl Encoder<Frame> for FrameCodec {
    type Error = CodecError;

    #[inline]
    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.encode(&frame, dst)
    }
}

impl Encoder<&Frame> for FrameCodec {
    type Error = CodecError;

    #[inline]
    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), CodecError> {
        if frame.header().msg_length() > self.max_payload {
            return Err(CodecError::FrameTooLarge {
                len: frame.header().msg_length(),
                max: self.max_payload,
            });
        }
        dst.reserve(frame.encoded_len());
        frame.write_to(dst);
        Ok(())
    }
}

/// Sends a raw message (e.g. one received as [`MessageOrRaw::Raw`]) as a frame: what a
/// proxy forwards. With it, a `Framed<_, FrameCodec>` is a `Sink<RawMessage>`, which is
/// what the facade's `FramedExt::flush_frames` needs.
///
/// [`MessageOrRaw::Raw`]: sv2c_binary::messages::MessageOrRaw::Raw
impl Encoder<RawMessage> for FrameCodec {
    type Error = CodecError;

    #[inline]
    fn encode(&mut self, item: RawMessage, dst: &mut BytesMut) -> Result<(), CodecError> {
        encode_message(&item, dst, self.max_payload)
    }
}
