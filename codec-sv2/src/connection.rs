//! [`Connection`]: one type for a plain or a Noise connection.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_sink::Sink;
use sv2c_binary::messages::RawMessage;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Decoder, Encoder, Framed};

use crate::error::CodecError;
use crate::read_batch::{BatchDecoder, BatchRead, read_batch};
use crate::tokio_codec::Sv2Codec;

#[cfg(feature = "noise")]
use crate::noise::NoiseCodec;

/// A connection a server or client holds whether its peer speaks plain TCP or Noise: a
/// `Framed` over the codec `C` ([`Sv2Codec`] by default), or over `NoiseCodec<C>`.
///
/// It is a [`Stream`] of `Result<C::Item, CodecError>` and a [`Sink`] of whatever `C`
/// encodes, as the `Framed` it holds, and adds what a `Framed` of an [`Sv2Codec`] lacks:
/// * [`flush`](Self::flush) and [`close`](Self::close) need no type annotation (on a
///   `Framed`, `framed.flush()` fails with `E0283 type annotations needed`, because the
///   codec encodes every message type);
/// * [`next_message`](Self::next_message) skips errors after which the stream is still
///   usable ([`CodecError::is_recoverable`]) and returns only those that end it.
///
/// Build one with `From` (`Connection::from(framed)`, `noise::accept(..).await?.into()`),
/// or match on it to reach the `Framed`. The borrowed read loop works through it too
/// ([`read_batch`](Self::read_batch), [`partial_frame_len`](Self::partial_frame_len),
/// [`release_buffers`](Self::release_buffers)).
///
/// ```
/// use sv2c_binary::messages::{Message, MiningSetupFlags, Protocol, SetupConnection};
/// use sv2c_codec::{Connection, Sv2Codec};
/// use tokio_util::codec::Framed;
/// use futures::SinkExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sv2c_codec::CodecError> {
/// let (a, b) = tokio::io::duplex(4096);
/// // Plain here; `noise::connect(..).await?.into()` gives the same type.
/// let mut client: Connection<_> = Framed::new(a, Sv2Codec::<Message>::new()).into();
/// let mut server: Connection<_> = Framed::new(b, Sv2Codec::<Message>::new()).into();
///
/// client.feed(SetupConnection {
///     protocol: Protocol::Mining,
///     min_version: 2,
///     max_version: 2,
///     flags: MiningSetupFlags::REQUIRES_VERSION_ROLLING.bits(),
///     ..Default::default()
/// }).await?;
/// client.flush().await?; // no turbofish
///
/// // Recoverable errors (a frame that does not decode) are skipped; `?` ends the loop on
/// // errors that end the stream.
/// while let Some(msg) = server.next_message().await? {
///     if let Message::SetupConnection(setup) = msg {
///         assert!(setup.mining_flags().unwrap().contains(MiningSetupFlags::REQUIRES_VERSION_ROLLING));
///         break;
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
// The Noise arm is larger (its cipher state); a plain connection carries those few
// hundred bytes unused rather than every Noise read and write going through a `Box`:
// servers run Noise, and that is the arm on the hot path.
#[allow(clippy::large_enum_variant)]
pub enum Connection<S, C = Sv2Codec> {
    /// Frames in the clear.
    Plain(Framed<S, C>),
    /// Frames encrypted with Noise (feature `noise`).
    #[cfg(feature = "noise")]
    Noise(Framed<S, NoiseCodec<C>>),
}

impl<S, C> From<Framed<S, C>> for Connection<S, C> {
    fn from(f: Framed<S, C>) -> Self {
        Connection::Plain(f)
    }
}

#[cfg(feature = "noise")]
impl<S, C> From<Framed<S, NoiseCodec<C>>> for Connection<S, C> {
    fn from(f: Framed<S, NoiseCodec<C>>) -> Self {
        Connection::Noise(f)
    }
}

/// Runs `$body` with `$f` bound to the `Framed` of either arm.
macro_rules! either {
    ($conn:expr, $f:ident => $body:expr) => {
        match $conn {
            Connection::Plain($f) => $body,
            #[cfg(feature = "noise")]
            Connection::Noise($f) => $body,
        }
    };
}

impl<S, C> Connection<S, C> {
    /// Whether the frames are encrypted with Noise.
    pub fn is_noise(&self) -> bool {
        !matches!(self, Connection::Plain(_))
    }

    /// The underlying stream (a `TcpStream`, …).
    pub fn get_ref(&self) -> &S {
        either!(self, f => f.get_ref())
    }

    /// The underlying stream, mutably. Reading or writing it directly corrupts the frame
    /// stream.
    pub fn get_mut(&mut self) -> &mut S {
        either!(self, f => f.get_mut())
    }
}

impl<S, C> Connection<S, C>
where
    S: AsyncWrite + Unpin,
    C: Encoder<RawMessage, Error = CodecError>,
{
    /// Writes out every buffered frame. Unlike `SinkExt::flush` on a `Framed`, it needs
    /// no item type.
    ///
    /// # Errors
    /// [`CodecError::Io`] if the stream fails.
    pub async fn flush(&mut self) -> Result<(), CodecError> {
        poll_fn(|cx| Sink::<RawMessage>::poll_flush(Pin::new(&mut *self), cx)).await
    }

    /// Writes out every buffered frame and shuts the writing half down.
    ///
    /// # Errors
    /// [`CodecError::Io`] if the stream fails.
    pub async fn close(&mut self) -> Result<(), CodecError> {
        poll_fn(|cx| Sink::<RawMessage>::poll_close(Pin::new(&mut *self), cx)).await
    }

    /// [`flush`](Self::flush), under the name the facade's `FramedExt` gives it on a
    /// `Framed`.
    ///
    /// # Errors
    /// As [`flush`](Self::flush).
    pub async fn flush_frames(&mut self) -> Result<(), CodecError> {
        self.flush().await
    }

    /// [`close`](Self::close), under the name the facade's `FramedExt` gives it on a
    /// `Framed`.
    ///
    /// # Errors
    /// As [`close`](Self::close).
    pub async fn close_frames(&mut self) -> Result<(), CodecError> {
        self.close().await
    }
}

impl<S, C> Connection<S, C>
where
    S: AsyncRead + Unpin,
    C: Decoder<Error = CodecError>,
{
    /// The next item, skipping errors after which the stream is still usable (a complete
    /// frame that did not decode: [`CodecError::is_recoverable`]). `Ok(None)` when the
    /// peer closed the connection.
    ///
    /// # Errors
    /// Only errors that end the stream (I/O, a frame above the size limit, a stream
    /// ending inside a frame, a Noise failure): close the connection.
    pub async fn next_message(&mut self) -> Result<Option<C::Item>, CodecError> {
        self.next_message_with(|_| {}).await
    }

    /// [`next_message`](Self::next_message), handing each skipped error to `on_skip`
    /// (to count or log it).
    ///
    /// # Errors
    /// As [`next_message`](Self::next_message).
    pub async fn next_message_with(
        &mut self,
        mut on_skip: impl FnMut(CodecError),
    ) -> Result<Option<C::Item>, CodecError> {
        // tokio-util's `Framed` yields an error, then `None` once, then carries on with
        // the next frame: that one `None` is not the end of the stream.
        let mut after_error = false;
        loop {
            match poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await {
                None if after_error => after_error = false,
                None => return Ok(None),
                Some(Ok(item)) => return Ok(Some(item)),
                Some(Err(e)) if e.is_recoverable() => {
                    on_skip(e);
                    after_error = true;
                }
                Some(Err(e)) => return Err(e),
            }
        }
    }
}

impl<S, C> Connection<S, C>
where
    S: AsyncRead + Unpin,
    C: BatchDecoder,
{
    /// [`read_batch`](crate::read_batch) on either kind of connection: hands every
    /// message of one read to `f`, borrowed. `Ok(None)` at the end of the stream.
    ///
    /// # Errors
    /// As [`read_batch`](crate::read_batch).
    pub async fn read_batch<F>(&mut self, f: F) -> Result<Option<usize>, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b C::Item<'a>),
    {
        either!(self, framed => read_batch(framed, f).await)
    }

    /// [`BatchRead::partial_frame_len`]: the bytes of a frame the peer has not finished.
    pub fn partial_frame_len(&self) -> usize {
        either!(self, f => f.partial_frame_len())
    }

    /// [`BatchRead::release_buffers`]: gives back the read and write buffers' allocations
    /// where they hold nothing.
    pub fn release_buffers(&mut self) {
        either!(self, f => f.release_buffers())
    }
}

impl<S, C> Stream for Connection<S, C>
where
    S: AsyncRead + Unpin,
    C: Decoder<Error = CodecError>,
{
    type Item = Result<C::Item, CodecError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        either!(self.get_mut(), f => Pin::new(f).poll_next(cx))
    }
}

impl<S, C, I> Sink<I> for Connection<S, C>
where
    S: AsyncWrite + Unpin,
    C: Encoder<I, Error = CodecError>,
{
    type Error = CodecError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        either!(self.get_mut(), f => Sink::<I>::poll_ready(Pin::new(f), cx))
    }

    fn start_send(self: Pin<&mut Self>, item: I) -> Result<(), CodecError> {
        either!(self.get_mut(), f => Pin::new(f).start_send(item))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        either!(self.get_mut(), f => Sink::<I>::poll_flush(Pin::new(f), cx))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), CodecError>> {
        either!(self.get_mut(), f => Sink::<I>::poll_close(Pin::new(f), cx))
    }
}
