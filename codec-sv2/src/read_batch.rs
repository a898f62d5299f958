//! [`read_batch`]: the borrowed read loop ([`Sv2Codec::decode_all_with`]) over a tokio-util
//! `Framed` or `FramedRead`, so that a connection handler gets the fast path without
//! writing the reads itself.

use core::future::poll_fn;
use core::task::{Context, Poll};
use std::io;
use std::pin::Pin;

use bytes::BytesMut;
use sv2c_binary::MessageSet;
use sv2c_binary::messages::RawMessageRef;
use tokio::io::AsyncRead;
use tokio_util::codec::{Framed, FramedRead};

use crate::error::CodecError;
use crate::scratch;
use crate::tokio_codec::{FrameCodec, Sv2Codec};

mod sealed {
    /// Only this crate implements [`BatchDecoder`](super::BatchDecoder) and
    /// [`BatchRead`](super::BatchRead).
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// A codec that can hand out everything buffered, borrowed: [`Sv2Codec<M>`] (messages),
/// [`FrameCodec`] (frames) and, with the `noise` feature, `NoiseCodec` around either. What
/// [`read_batch`] reads with.
pub trait BatchDecoder: Sealed {
    /// What the codec hands out, borrowed from the read buffer: `M::Ref<'a>` for
    /// `Sv2Codec<M>` ([`MessageRef`](sv2c_binary::messages::MessageRef) for `Message`),
    /// [`RawMessageRef`] for `FrameCodec`.
    type Item<'a>;

    /// The codec's `decode_all_with`.
    #[doc(hidden)]
    fn decode_batch<F>(&mut self, src: &mut BytesMut, f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b Self::Item<'a>);

    /// At the end of the stream, after `decode_batch` took every complete frame: an error
    /// if a frame was left unfinished.
    #[doc(hidden)]
    fn finish_batch(&mut self, src: &BytesMut) -> Result<(), CodecError>;

    /// Received bytes the codec holds itself, not yet handed out (a `NoiseCodec`'s frame
    /// in progress); the plaintext codecs keep theirs in the reader's buffer.
    #[doc(hidden)]
    fn held(&self) -> usize {
        0
    }
}

/// What is left in the buffer at the end of a plaintext stream: a truncated frame, unless
/// it is nothing.
fn plaintext_end(src: &BytesMut) -> Result<(), CodecError> {
    if src.is_empty() {
        Ok(())
    } else {
        Err(CodecError::TruncatedFrame {
            buffered: src.len(),
        })
    }
}

impl<M> Sealed for Sv2Codec<M> {}

impl<M: MessageSet> BatchDecoder for Sv2Codec<M> {
    type Item<'a> = M::Ref<'a>;

    #[inline]
    fn decode_batch<F>(&mut self, src: &mut BytesMut, f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b M::Ref<'a>),
    {
        self.decode_all_with(src, f)
    }

    fn finish_batch(&mut self, src: &BytesMut) -> Result<(), CodecError> {
        plaintext_end(src)
    }
}

impl Sealed for FrameCodec {}

impl BatchDecoder for FrameCodec {
    type Item<'a> = RawMessageRef<'a>;

    #[inline]
    fn decode_batch<F>(&mut self, src: &mut BytesMut, f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b RawMessageRef<'a>),
    {
        self.decode_all_with(src, f)
    }

    fn finish_batch(&mut self, src: &BytesMut) -> Result<(), CodecError> {
        plaintext_end(src)
    }
}

/// A framed reader [`read_batch`] reads from: tokio-util's `Framed` or `FramedRead` around
/// a [`BatchDecoder`], over any `AsyncRead + Unpin`.
pub trait BatchRead: Sealed {
    /// The codec inside.
    type Decoder: BatchDecoder;

    /// The codec.
    #[doc(hidden)]
    fn batch_decoder(&mut self) -> &mut Self::Decoder;

    /// The read buffer.
    #[doc(hidden)]
    fn batch_buffer(&mut self) -> &mut BytesMut;

    /// Bytes received and not yet handed out: between batches of [`read_batch`], what the
    /// peer has sent of a frame it has not finished (in the read buffer, or inside a
    /// `NoiseCodec`), 0 on a frame boundary. What a server's partial-frame timeout
    /// watches: a peer that stops in the middle of a frame, or trickles one.
    fn partial_frame_len(&self) -> usize;

    /// One read of the underlying stream into `buf`'s spare capacity.
    #[doc(hidden)]
    fn batch_poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>>;

    /// Gives back the read and write buffers' allocations where they hold nothing (no
    /// unfinished frame, nothing unsent): call it after a flush. tokio-util's `Framed`
    /// otherwise keeps 8 KiB of each from `Framed::new`, and the largest a connection ever
    /// needed, for as long as the connection lives. [`read_batch`] reads into a per-thread
    /// scratch buffer and leaves the read buffer without an allocation after every batch
    /// that ends on a frame boundary; the next write, or a `next()`, allocates what it
    /// needs (`next()` grows the read buffer from empty). For a `FramedRead`, only the
    /// read buffer.
    fn release_buffers(&mut self) {
        let buf = self.batch_buffer();
        if buf.is_empty() && buf.capacity() > 0 {
            *buf = BytesMut::new();
        }
    }
}

/// `BatchRead` for tokio-util's framed readers, whose codec accessors are named `$codec`
/// and `$codec_ref`.
macro_rules! batch_read {
    ($($framed:ident, $codec:ident, $codec_ref:ident;)*) => {$(
        impl<T, C> Sealed for $framed<T, C> {}

        impl<T: AsyncRead + Unpin, C: BatchDecoder> BatchRead for $framed<T, C> {
            type Decoder = C;

            fn batch_decoder(&mut self) -> &mut C {
                self.$codec()
            }

            fn batch_buffer(&mut self) -> &mut BytesMut {
                self.read_buffer_mut()
            }

            fn partial_frame_len(&self) -> usize {
                self.read_buffer().len() + self.$codec_ref().held()
            }

            fn batch_poll_read(
                &mut self,
                cx: &mut Context<'_>,
                buf: &mut BytesMut,
            ) -> Poll<io::Result<usize>> {
                tokio_util::io::poll_read_buf(Pin::new(self.get_mut()), cx, buf)
            }

            fn release_buffers(&mut self) {
                let buf = self.read_buffer_mut();
                if buf.is_empty() && buf.capacity() > 0 {
                    *buf = BytesMut::new();
                }
                ReleaseWrite::release_write(self)
            }
        }
    )*};
}

batch_read! {
    Framed, codec_mut, codec;
    FramedRead, decoder_mut, decoder;
}

/// The write half of `BatchRead::release_buffers`: a `Framed`'s write buffer (a
/// `FramedRead` has none).
trait ReleaseWrite {
    fn release_write(&mut self) {}
}

impl<T, C> ReleaseWrite for FramedRead<T, C> {}

impl<T, C> ReleaseWrite for Framed<T, C> {
    fn release_write(&mut self) {
        let buf = self.write_buffer_mut();
        if buf.is_empty() && buf.capacity() > 0 {
            *buf = BytesMut::new();
        }
    }
}

/// What `S` hands out, borrowed (`MessageRef` for `Sv2Codec<Message>`, `RawMessageRef` for
/// `FrameCodec`).
type ItemOf<'a, S> = <<S as BatchRead>::Decoder as BatchDecoder>::Item<'a>;

/// Waits for messages on `framed`, then hands every complete one to `f`, borrowed from the
/// read buffer, and returns how many it handed out: `Ok(Some(n))` with `n ≥ 1`, or
/// `Ok(None)` once the stream has ended cleanly. What `f` gets is the codec's
/// [`BatchDecoder::Item`]: `&MessageRef` for `Sv2Codec<Message>`, `&RawMessageRef` (every
/// frame, as received) for [`FrameCodec`], the same through `NoiseCodec`.
///
/// This is [`Sv2Codec::decode_all_with`] (or [`FrameCodec::decode_all_with`]) with the
/// reads done for you: the fast way to read a connection (in the stream benchmark, over an
/// in-memory reader, 6.9× the shares per second of `FramedRead`'s `next()`; no `Message`
/// is built or moved, no frame is copied into the pool). It works on the `Framed` or
/// `FramedRead` you already have, and can be mixed with their `next()`: frames already
/// buffered are handed out before anything more is read.
///
/// - `Sv2Codec`: frames of messages the set does not know are skipped and counted, as by
///   `next()`; the call only returns once it has handed out at least one message.
/// - `Sv2Codec`: a known message whose payload does not decode returns
///   [`CodecError::Decode`] after the messages before it were handed to `f`. Its frame has
///   been consumed: the error is [recoverable](CodecError::is_recoverable), and the next
///   call carries on. (Carry on with `read_batch`: complete frames after the bad one may
///   still be buffered, and `next()` may wait for more bytes before looking at them.)
/// - An oversized frame ([`CodecError::FrameTooLarge`]), a frame that fails to decrypt, an
///   I/O error, or a stream ending inside a frame ([`CodecError::TruncatedFrame`], or the
///   Noise codec's truncation error) is fatal: close the connection.
///
/// **Cancel-safe.** Everything in progress lives in `framed` (its buffer and codec), and a
/// call that hands out messages returns in the same poll, so a call dropped before it
/// completes loses nothing: `tokio::time::timeout(idle, read_batch(..))` is how to cut
/// off a silent peer, and `read_batch` can be a branch of `tokio::select!`.
///
/// `f` cannot `.await`; collect what needs answering (or encode the answers into a buffer)
/// and write after the call returns, as below. A proxy forwards frames the same way: `f`
/// writes each one into the upstream `Framed`'s `write_buffer_mut()` with
/// [`encode_frame_into`](sv2c_binary::messages::encode_frame_into), and the loop flushes
/// once per batch (the test `codec-sv2/tests/read_batch_frames.rs` has that loop).
///
/// # Errors
/// As above.
///
/// # Example
/// A pool's share loop: every batch of shares is acknowledged with one
/// `SubmitSharesSuccess`.
///
/// ```
/// use futures::SinkExt;
/// use sv2c_binary::messages::{Message, MessageRef, SubmitSharesStandard, SubmitSharesSuccess};
/// use sv2c_codec::{CodecError, Sv2Codec, read_batch};
/// use tokio_util::codec::{FramedRead, FramedWrite};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), CodecError> {
/// let (pool_side, miner_side) = tokio::io::duplex(64 * 1024);
/// let (rx, tx) = tokio::io::split(pool_side);
/// let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new());
/// let mut writer = FramedWrite::new(tx, Sv2Codec::<Message>::new());
///
/// let mut miner = FramedWrite::new(miner_side, Sv2Codec::<Message>::new());
/// for seq in 0..100 {
///     let share = SubmitSharesStandard {
///         channel_id: 1, sequence_number: seq, job_id: 7, nonce: seq, ntime: 0, version: 0,
///     };
///     miner.feed(share).await?;
/// }
/// // The miner hangs up after its shares (`close` needs the item type spelled out).
/// SinkExt::<SubmitSharesStandard>::close(&mut miner).await?;
///
/// let mut acked = 0;
/// loop {
///     let mut shares = 0;
///     let mut last_seq = 0;
///     let read = read_batch(&mut reader, |m| {
///         if let MessageRef::SubmitSharesStandard(s) = m {
///             shares += 1;
///             last_seq = s.sequence_number;
///         }
///     });
///     let Some(_) = tokio::time::timeout(std::time::Duration::from_secs(30), read)
///         .await
///         .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??
///     else {
///         break; // the peer closed the connection
///     };
///     if shares > 0 {
///         writer.send(SubmitSharesSuccess {
///             channel_id: 1,
///             last_sequence_number: last_seq,
///             new_submits_accepted_count: shares,
///             new_shares_sum: u64::from(shares),
///         })
///         .await?;
///         acked += shares;
///     }
/// }
/// assert_eq!(acked, 100);
/// # Ok(())
/// # }
/// ```
pub async fn read_batch<S, F>(framed: &mut S, mut f: F) -> Result<Option<usize>, CodecError>
where
    S: BatchRead,
    F: for<'a, 'b> FnMut(&'b ItemOf<'a, S>),
{
    poll_fn(|cx| {
        // The buffer is taken out for the codec and the read, which both need `framed`,
        // and put back before the poll returns, whatever it returns: nothing is held
        // across a suspension.
        let mut buf = core::mem::take(framed.batch_buffer());
        let result = poll_batch(framed, cx, &mut buf, &mut f);
        *framed.batch_buffer() = buf;
        result
    })
    .await
}

/// One poll of [`read_batch`]: hand out what is buffered, else read, until there are
/// messages, the stream ends, or the read would block.
///
/// `buf` (the framed reader's own buffer) only keeps what must outlive the poll: a partial
/// frame. Reads go into the thread's scratch buffer (after a copy of that partial frame),
/// every complete frame is handed out from there, and only the bytes of an unfinished
/// frame are copied back to `buf`. An empty `buf` has its allocation given back, so an
/// idle connection holds none.
fn poll_batch<S, F>(
    framed: &mut S,
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
    f: &mut F,
) -> Poll<Result<Option<usize>, CodecError>>
where
    S: BatchRead,
    F: for<'a, 'b> FnMut(&'b ItemOf<'a, S>),
{
    loop {
        if !buf.is_empty() {
            // Complete frames left by `next()` or after a recoverable error come first.
            let handed = framed.batch_decoder().decode_batch(buf, &mut *f)?;
            if handed > 0 {
                if buf.is_empty() {
                    *buf = BytesMut::new();
                }
                return Poll::Ready(Ok(Some(handed)));
            }
        }
        let step = if buf.len() > PARTIAL_COPY_MAX {
            // The rest of a large frame is read where it is (the codec reserved room).
            buf.reserve(1);
            match framed.batch_poll_read(cx, buf) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
                Poll::Ready(Ok(0)) => Poll::Ready(Ok(None)),
                Poll::Ready(Ok(_)) => Poll::Ready(Ok(Some(0))),
            }
        } else {
            scratch::with(&scratch::READ, |scratch| {
                read_into_scratch(framed, cx, scratch, buf, f)
            })
        };
        match step {
            Poll::Ready(Ok(Some(0))) => {}
            Poll::Ready(Ok(None)) => {
                framed.batch_decoder().finish_batch(buf)?;
                return Poll::Ready(Ok(None));
            }
            other => {
                if buf.is_empty() && buf.capacity() > 0 {
                    *buf = BytesMut::new();
                }
                return other;
            }
        }
    }
}

/// A partial frame up to this size is copied in front of the next read into the scratch
/// buffer (so that one read brings many frames); a larger one is completed in place.
const PARTIAL_COPY_MAX: usize = 4096;

/// What a read step returns: `Ok(None)` the stream ended, `Ok(Some(0))` bytes arrived but
/// no complete message (read again), `Ok(Some(n))` `n` messages were handed out.
type Step = Poll<Result<Option<usize>, CodecError>>;

/// One read into `scratch`, after a copy of the partial frame in `buf`; the complete
/// frames are handed to `f`, and what is left (a partial frame, or the frames after a
/// recoverable error) goes back to `buf`.
fn read_into_scratch<S, F>(
    framed: &mut S,
    cx: &mut Context<'_>,
    scratch: &mut BytesMut,
    buf: &mut BytesMut,
    f: &mut F,
) -> Step
where
    S: BatchRead,
    F: for<'a, 'b> FnMut(&'b ItemOf<'a, S>),
{
    scratch.reserve(buf.len() + scratch::READ_LEN);
    if !buf.is_empty() {
        scratch.extend_from_slice(buf);
    }
    match framed.batch_poll_read(cx, scratch) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
        Poll::Ready(Ok(0)) => Poll::Ready(Ok(None)),
        Poll::Ready(Ok(_)) => {
            let handed = framed.batch_decoder().decode_batch(scratch, &mut *f);
            // `buf`'s bytes were copied in front of the read: it now keeps only what the
            // codec left, allocating what that holds (the codec reserves the rest of a
            // partial frame when it looks at it again).
            buf.clear();
            if !scratch.is_empty() {
                *buf = BytesMut::from(&scratch[..]);
            }
            Poll::Ready(handed.map(Some))
        }
    }
}
