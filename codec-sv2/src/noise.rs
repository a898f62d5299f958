//! Noise-encrypted connections (SV2-WIRE §4): [`NoiseCodec`] wraps a plaintext codec
//! ([`Sv2Codec`], [`FrameCodec`] or any other `tokio_util` codec over Sv2 frames), and
//! [`connect`] / [`accept`] run the handshake on a stream and hand back a ready
//! [`Framed`].
//!
//! Switching a connection to Noise changes one line; the `Framed` yields and accepts the
//! same items as before:
//!
//! ```text
//! let framed = Framed::new(tcp, Sv2Codec::<Message>::new());                                  // plain
//! let framed = noise::connect(tcp, Initiator::new(authority_key)?, Sv2Codec::<Message>::new()).await?; // client
//! let framed = noise::accept(tcp, &responder, Sv2Codec::<Message>::new()).await?;            // server
//! ```
//!
//! A complete client and server over an in-memory pipe:
//!
//! ```
//! use std::time::Duration;
//!
//! use futures::{SinkExt, StreamExt};
//! use sv2c_binary::Wire;
//! use sv2c_codec::Sv2Codec;
//! use sv2c_codec::noise::{self, AuthorityKeypair, Initiator, Responder, StaticKeypair};
//!
//! #[derive(Debug, Clone, PartialEq, Wire)]
//! #[sv2(msg_type = 0x1a, channel_msg)]
//! struct Share {
//!     channel_id: u32,
//!     nonce: u32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! // The pool's authority certifies the server's static key for a day.
//! let authority = AuthorityKeypair::generate()?;
//! let now = noise::unix_time_now();
//! let responder =
//!     Responder::from_authority(StaticKeypair::generate()?, &authority, now, now + 86_400)?;
//! let authority_key = authority.public_key(); // what the client is configured with
//!
//! let (client_io, server_io) = tokio::io::duplex(64 * 1024); // or two TcpStreams
//!
//! let server = tokio::spawn(async move {
//!     let mut framed = noise::accept(server_io, &responder, Sv2Codec::<Share>::for_set()).await?;
//!     while let Some(share) = framed.next().await {
//!         let mut share = share?;
//!         share.nonce += 1;
//!         framed.send(share).await?;
//!     }
//!     Ok::<_, sv2c_codec::CodecError>(())
//! });
//!
//! // Was: let mut framed = Framed::new(client_io, Sv2Codec::<Share>::for_set());
//! let handshake = noise::connect(client_io, Initiator::new(authority_key)?, Sv2Codec::<Share>::for_set());
//! let mut framed = tokio::time::timeout(Duration::from_secs(10), handshake).await??;
//!
//! framed.send(Share { channel_id: 7, nonce: 41 }).await?;
//! let echo = framed.next().await.expect("an answer")?;
//! assert_eq!(echo, Share { channel_id: 7, nonce: 42 });
//!
//! drop(framed); // closes the pipe; the server's stream ends
//! server.await??;
//! # Ok(())
//! # }
//! ```
//!
//! A server that runs longer than a certificate is valid, or that must survive every miner
//! coming back at once, keeps a [`NoiseIdentity`]: certificates renewed while it runs and
//! ephemeral keys made ahead; [`NoiseIdentity::accept`] replaces [`accept`].
//!
//! # Before and after the handshake
//!
//! A [`NoiseCodec`] can only be built from a [`Transport`], the value a completed handshake
//! produces; there is no way to encrypt or decrypt a frame before the handshake is over.
//! [`connect`] and [`accept`] drive the two handshake messages (64 bytes from the client,
//! 234 bytes from the server, raw, no Sv2 header) with `read_exact` / `write_all`. They
//! have no timeout of their own: wrap them in `tokio::time::timeout`, as above, so a
//! silent peer cannot hold a connection slot forever. The client checks the server's
//! certificate against the authority key at the current system time
//! ([`unix_time_now`], ±10 s of slack).
//!
//! # Frames on the wire
//!
//! Every plaintext frame (6-byte header + payload of L bytes) becomes a 22-byte encrypted
//! header followed by the payload in AEAD chunks of at most 65 519 bytes plus a 16-byte tag
//! each: [`wire_len`]`(L) = 22 + L + 16·⌈L/65519⌉` bytes (SV2-WIRE §4.8).
//!
//! # Errors
//!
//! Every Noise failure is a [`CodecError::Noise`], never a panic, and none is
//! [recoverable](CodecError::is_recoverable): a frame that fails authentication, a decrypted
//! header announcing more than the inner codec's maximum payload (refused before any payload
//! byte is buffered), a stream that ends inside an encrypted frame, a handshake that fails
//! (wrong authority, expired certificate, corrupted act 2). A peer that closes during the
//! handshake is a [`CodecError::Io`] of kind `UnexpectedEof`. The inner codec's own
//! recoverable errors (unknown message, undecodable payload) stay recoverable: the
//! encrypted frame was authenticated and consumed.

use core::fmt;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder, Framed};

pub use sv2c_noise;
pub use sv2c_noise::{
    ACT1_LEN, ACT2_LEN, Act2Part, AuthorityKeypair, AuthorityPublicKey, Certificate, EphemeralKey,
    Initiator, NoiseDecryptor, NoiseEncryptor, NoiseError, Responder, StaticKeypair, Transport,
    unix_time_now, wire_len,
};

mod identity;

pub use identity::{KEY_STOCK_QUIET, NoiseIdentity};

use crate::accept_log;
use crate::error::CodecError;
use crate::header::{Header, MAX_PAYLOAD_LEN};
use crate::tokio_codec::{FrameCodec, Sv2Codec, read_room};

/// The decrypt assembly buffer keeps its allocation up to this size; a larger one (left
/// by a large frame) is released after use so idle connections stay small.
const BUFFER_KEEP: usize = 256 * 1024;

// ===== PayloadLimit =====

/// A plaintext codec's maximum payload, which [`NoiseCodec`] also enforces on the
/// ciphertext side: an encrypted header announcing more is refused as soon as it is
/// authenticated, before any payload ciphertext is buffered.
///
/// Implemented for [`Sv2Codec`] and [`FrameCodec`]. For another codec, implement it (the
/// default is the protocol maximum, 2^24 − 1 bytes):
///
/// ```
/// # use bytes::BytesMut;
/// # use sv2c_codec::CodecError;
/// # use tokio_util::codec::Decoder;
/// struct RawFrames; // yields whole plaintext frames as bytes
/// # impl Decoder for RawFrames {
/// #     type Item = BytesMut;
/// #     type Error = CodecError;
/// #     fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
/// #         Ok((!src.is_empty()).then(|| src.split()))
/// #     }
/// # }
/// use sv2c_codec::noise::PayloadLimit;
///
/// impl PayloadLimit for RawFrames {
///     fn max_payload_len(&self) -> usize {
///         1 << 20
///     }
/// }
/// assert_eq!(RawFrames.max_payload_len(), 1 << 20);
/// ```
pub trait PayloadLimit {
    /// The largest payload the codec accepts.
    fn max_payload_len(&self) -> usize {
        MAX_PAYLOAD_LEN
    }
}

impl<M> PayloadLimit for Sv2Codec<M> {
    fn max_payload_len(&self) -> usize {
        Sv2Codec::max_payload_len(self)
    }
}

impl PayloadLimit for FrameCodec {
    fn max_payload_len(&self) -> usize {
        FrameCodec::max_payload_len(self)
    }
}

// ===== NoiseCodec =====

/// A `tokio_util` codec that encrypts and decrypts Sv2 frames around an inner plaintext
/// codec `C`, yielding and accepting exactly what `C` does.
///
/// * **Decoding**: ciphertext from the `Framed` read buffer goes to the
///   [`NoiseDecryptor`] ([`NoiseDecryptor::decrypt_into`]), which copies it into a reused
///   assembly buffer and authenticates and decrypts each chunk in place there. Each
///   complete plaintext frame is handed, without another copy (the buffers are swapped),
///   to `C`'s decoder. One encrypted frame is exactly one plaintext frame. Read with
///   [`read_batch`](crate::read_batch), the codec gives both buffers' allocations back at
///   the end of every batch that leaves them empty: an idle connection holds none.
/// * **Encoding**: `C` encodes the item into the thread's scratch buffer, and the frame is
///   encrypted from there into the write buffer, with exactly [`wire_len`] bytes reserved.
///
/// Read with `next()` (buffers kept between frames, frames up to 256 KiB, the `Framed`
/// buffers drained between frames), neither direction makes a heap allocation per frame
/// beyond whatever `C` itself allocates ([`FrameCodec`] takes its payloads from a pool;
/// `Sv2Codec` allocates only for messages with variable-size fields); read with
/// `read_batch`, a batch makes at most two (the buffers it gives back).
///
/// Build one with [`connect`] or [`accept`], or with [`NoiseCodec::new`] from a
/// [`Transport`] if you run the handshake yourself. The decryptor is limited to `C`'s
/// [`PayloadLimit`].
///
/// The codec's error type is `C`'s, which must convert from [`NoiseError`] ([`CodecError`]
/// does: [`CodecError::Noise`]).
pub struct NoiseCodec<C> {
    inner: C,
    encryptor: NoiseEncryptor,
    decryptor: NoiseDecryptor,
    /// Where the decryptor assembles the frame in progress (empty between frames).
    assembly: BytesMut,
    /// Decrypted frames not yet consumed by `inner`'s decoder.
    plaintext: BytesMut,
    handshake_hash: [u8; 32],
    /// On the client only, so boxed: a server's connection keeps 8 bytes for it.
    server: Option<Box<ServerPeer>>,
}

/// What the client learnt of the server it connected to.
#[derive(Debug, Clone, Copy)]
struct ServerPeer {
    certificate: Option<Certificate>,
    static_key: [u8; 32],
}

impl<C: PayloadLimit> NoiseCodec<C> {
    /// Wraps `inner` with the keys of a completed handshake.
    pub fn new(transport: Transport, inner: C) -> Self {
        let handshake_hash = *transport.handshake_hash();
        let server = transport.server_static_key().map(|static_key| {
            Box::new(ServerPeer {
                certificate: transport.server_certificate().copied(),
                static_key,
            })
        });
        let (encryptor, mut decryptor) = transport.split();
        decryptor.set_max_payload_len(inner.max_payload_len().min(MAX_PAYLOAD_LEN));
        NoiseCodec {
            inner,
            encryptor,
            decryptor,
            assembly: BytesMut::new(),
            plaintext: BytesMut::new(),
            handshake_hash,
            server,
        }
    }
}

impl<C> NoiseCodec<C> {
    /// The inner plaintext codec.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The inner plaintext codec, mutably. The ciphertext-side payload limit was taken
    /// from it at construction and does not follow later changes.
    pub fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    /// The largest payload the decryptor accepts.
    pub fn max_payload_len(&self) -> usize {
        self.decryptor.max_payload_len()
    }

    /// The final handshake hash, identical on both ends (usable for channel binding).
    pub fn handshake_hash(&self) -> &[u8; 32] {
        &self.handshake_hash
    }

    /// On the client: the certificate the server presented (verified against the
    /// authority key unless the initiator was unauthenticated). `None` on the server.
    pub fn server_certificate(&self) -> Option<&Certificate> {
        self.server.as_ref()?.certificate.as_ref()
    }

    /// On the client: the server's static key (x-only). `None` on the server.
    pub fn server_static_key(&self) -> Option<[u8; 32]> {
        self.server.as_ref().map(|s| s.static_key)
    }

    /// Hands the frame just completed in `assembly` to the plaintext buffer. When that is
    /// empty (the usual case: the inner decoder consumed the previous frame) the two
    /// buffers swap, so the frame is not copied and both allocations are kept for reuse;
    /// otherwise the frame is appended.
    fn push_plaintext(&mut self) {
        if self.plaintext.is_empty() {
            core::mem::swap(&mut self.plaintext, &mut self.assembly);
        } else {
            self.plaintext.extend_from_slice(&self.assembly);
        }
        self.assembly.clear();
        // A large frame's allocation is not kept once the connection is back to small ones.
        if self.assembly.capacity() > BUFFER_KEEP {
            self.assembly = BytesMut::new();
        }
    }

    /// Feeds `src` to the decryptor, advancing it by what was consumed. Returns `true` when
    /// a frame was completed and moved to the plaintext buffer. Returns `false` when all
    /// of `src` went into the decryptor without completing one; `src` then has room
    /// reserved for more of the frame ([`read_room`]).
    fn decrypt_step(&mut self, src: &mut BytesMut) -> Result<bool, NoiseError> {
        let mut input: &[u8] = src;
        let result = self.decryptor.decrypt_into(&mut input, &mut self.assembly);
        let consumed = src.len() - input.len();
        src.advance(consumed);
        if result?.is_some() {
            self.push_plaintext();
            Ok(true)
        } else {
            // The frame's bytes so far are in `assembly` (its plaintext, about as many).
            src.reserve(read_room(
                self.decryptor.bytes_needed(),
                self.assembly.len(),
            ));
            Ok(false)
        }
    }

    /// Encrypts the frames `inner` wrote into `frames`, appending them to `dst`.
    fn seal(
        encryptor: &mut NoiseEncryptor,
        frames: &[u8],
        dst: &mut BytesMut,
    ) -> Result<(), NoiseError> {
        let mut rest = frames;
        while !rest.is_empty() {
            let Some((header, tail)) = rest.split_first_chunk::<{ Header::SIZE }>() else {
                return Err(NoiseError::FrameTooShort(rest.len()));
            };
            let announced = Header::parse(*header).msg_length();
            let Some((payload, after)) = tail.split_at_checked(announced) else {
                return Err(NoiseError::FrameLengthMismatch {
                    announced,
                    actual: tail.len(),
                });
            };
            encryptor.encrypt_parts(header, payload, dst)?;
            rest = after;
        }
        Ok(())
    }
}

impl<C: crate::BatchDecoder> NoiseCodec<C> {
    /// The inner codec's `decode_all_with` over the encrypted stream
    /// ([`Sv2Codec::decode_all_with`], [`FrameCodec::decode_all_with`](crate::FrameCodec::decode_all_with)):
    /// decrypts every complete frame in `src` (a partial one stays in the decryptor until
    /// the rest arrives), then hands each message or frame to `f` borrowed, in order, and
    /// returns how many it was given.
    ///
    /// Errors are the inner codec's. A frame that fails to decrypt is
    /// [`CodecError::Noise`] (fatal), returned after the messages decrypted before it were
    /// handed to `f`.
    ///
    /// # Errors
    /// As above.
    pub fn decode_all_with<F>(&mut self, src: &mut BytesMut, f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b C::Item<'a>),
    {
        // The batch's plaintext in one allocation: the first frame is decrypted into
        // room for all of `src` (whose plaintext is shorter) and becomes the plaintext
        // buffer, which every later frame is appended to.
        self.assembly.reserve(src.len());
        let decrypted = loop {
            match self.decrypt_step(src) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        let handed = self.inner.decode_batch(&mut self.plaintext, f);
        // Between batches the connection keeps no buffer it does not need.
        if self.plaintext.is_empty() {
            self.plaintext = BytesMut::new();
        }
        if self.assembly.is_empty() {
            self.assembly = BytesMut::new();
        }
        let handed = handed?;
        decrypted?;
        Ok(handed)
    }
}

impl<C> crate::read_batch::Sealed for NoiseCodec<C> {}

impl<C: crate::BatchDecoder> crate::BatchDecoder for NoiseCodec<C> {
    type Item<'a> = C::Item<'a>;

    #[inline]
    fn decode_batch<F>(&mut self, src: &mut BytesMut, f: F) -> Result<usize, CodecError>
    where
        F: for<'a, 'b> FnMut(&'b C::Item<'a>),
    {
        self.decode_all_with(src, f)
    }

    fn finish_batch(&mut self, _src: &BytesMut) -> Result<(), CodecError> {
        // Every byte of `src` went into the decryptor; a frame left there is truncated.
        self.decryptor.finish()?;
        self.inner.finish_batch(&self.plaintext)
    }

    fn held(&self) -> usize {
        self.decryptor.buffered() + self.plaintext.len()
    }
}

impl<C> Decoder for NoiseCodec<C>
where
    C: Decoder,
    C::Error: From<NoiseError>,
{
    type Item = C::Item;
    type Error = C::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<C::Item>, C::Error> {
        loop {
            if !self.plaintext.is_empty() {
                if let Some(item) = self.inner.decode(&mut self.plaintext)? {
                    return Ok(Some(item));
                }
            }
            if !self.decrypt_step(src)? {
                return Ok(None);
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<C::Item>, C::Error> {
        if let Some(item) = self.decode(src)? {
            return Ok(Some(item));
        }
        // A stream that stops inside an encrypted frame is a typed error.
        self.decryptor.finish()?;
        if self.plaintext.is_empty() {
            Ok(None)
        } else {
            self.inner.decode_eof(&mut self.plaintext)
        }
    }
}

impl<T, C> Encoder<T> for NoiseCodec<C>
where
    C: Encoder<T>,
    C::Error: From<NoiseError>,
{
    type Error = C::Error;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), C::Error> {
        let (inner, encryptor) = (&mut self.inner, &mut self.encryptor);
        crate::scratch::with(&crate::scratch::ENCODE, |frames| {
            inner.encode(item, frames)?;
            Self::seal(encryptor, frames, dst).map_err(C::Error::from)
        })
    }
}

impl<C: fmt::Debug> fmt::Debug for NoiseCodec<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoiseCodec")
            .field("inner", &self.inner)
            .field("encryptor", &self.encryptor)
            .field("decryptor", &self.decryptor)
            .field("plaintext_buffered", &self.plaintext.len())
            .finish_non_exhaustive()
    }
}

// ===== handshake =====

/// Client side: runs the Noise handshake on `stream` as the initiator and returns a
/// [`Framed`] that encrypts and decrypts around `inner`.
///
/// Sends act 1 (64 bytes), reads act 2 (exactly 234 bytes, nothing more is read from the
/// stream), and checks the server's certificate at the current time ([`unix_time_now`]).
/// No timeout: wrap the future in `tokio::time::timeout`.
///
/// # Errors
///
/// [`CodecError::Io`] if the stream fails or ends before act 2 is complete (kind
/// `UnexpectedEof`); [`CodecError::Noise`] if act 2 does not authenticate or the
/// certificate is not valid for the initiator's authority key. Close the stream on any
/// error.
pub async fn connect<S, C>(
    mut stream: S,
    initiator: Initiator,
    inner: C,
) -> Result<Framed<S, NoiseCodec<C>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: PayloadLimit,
{
    let (act1, waiting) = initiator.step_1();
    stream.write_all(&act1).await?;
    stream.flush().await?;
    let mut act2 = [0u8; ACT2_LEN];
    stream.read_exact(&mut act2).await?;
    let transport = waiting.step_2(&act2, unix_time_now())?;
    Ok(Framed::new(stream, NoiseCodec::new(transport, inner)))
}

/// Server side: answers the Noise handshake on `stream` as the responder and returns a
/// [`Framed`] that encrypts and decrypts around `inner`.
///
/// Reads act 1 (exactly 64 bytes) and sends act 2 (234 bytes) carrying the responder's
/// static key and certificate. One [`Responder`] serves any number of connections. No
/// timeout: wrap the future in `tokio::time::timeout`.
///
/// # Errors
///
/// [`CodecError::Io`] if the stream fails or ends before act 1 is complete (kind
/// `UnexpectedEof`); [`CodecError::PlaintextPeer`] if the client sent a plaintext
/// `SetupConnection` (it does not speak Noise: the responder gives up as soon as the
/// whole frame is in, rather than wait for 64 bytes that never come);
/// [`CodecError::Noise`] if no ephemeral key can be drawn.
///
/// # Logging
/// A failed handshake is logged with `tracing` at `info` (target `sv2c_codec::accept_log`),
/// naming the reason (`plaintext`, `closed`, `io`, `noise`): at most one line per reason
/// every 10 s, with the number of failures held back since the previous line, so a
/// storm of bad connections writes a few lines, not one per connection.
pub async fn accept<S, C>(
    stream: S,
    responder: &Responder,
    inner: C,
) -> Result<Framed<S, NoiseCodec<C>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: PayloadLimit,
{
    accept_with(stream, responder, inner, EphemeralKey::generate).await
}

/// [`accept`] with the responder's ephemeral key from `ephemeral`, called once act 1 has
/// arrived: a server that makes fresh keys ahead of time (while idle, for a handshake
/// storm) hands them out here. Every key must be fresh and used once.
///
/// # Errors
///
/// As [`accept`]; an error from `ephemeral` is returned as [`CodecError::Noise`].
pub async fn accept_with<S, C, K>(
    mut stream: S,
    responder: &Responder,
    inner: C,
    ephemeral: K,
) -> Result<Framed<S, NoiseCodec<C>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: PayloadLimit,
    K: FnOnce() -> Result<EphemeralKey, NoiseError>,
{
    match respond(&mut stream, responder, ephemeral).await {
        Ok(transport) => Ok(Framed::new(stream, NoiseCodec::new(transport, inner))),
        Err(e) => {
            accept_log::handshake_failed(&e);
            Err(e)
        }
    }
}

impl NoiseIdentity {
    /// [`accept`](accept) with this identity: the current certificate (renewed
    /// first if due) and an ephemeral key from the stock.
    ///
    /// # Errors
    /// As [`accept`](accept).
    pub async fn accept<S, C>(
        &self,
        stream: S,
        inner: C,
    ) -> Result<Framed<S, NoiseCodec<C>>, CodecError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
        C: PayloadLimit,
    {
        let responder = self.responder();
        accept_with(stream, &responder, inner, || self.ephemeral_key()).await
    }
}

/// The responder's side of the handshake: act 1 in, act 2 out.
async fn respond<S, K>(
    stream: &mut S,
    responder: &Responder,
    ephemeral: K,
) -> Result<Transport, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    K: FnOnce() -> Result<EphemeralKey, NoiseError>,
{
    let act1 = read_act1(stream).await?;
    let (act2, transport) = responder.step_with_ephemeral(&act1, ephemeral()?)?;
    stream.write_all(&act2).await?;
    stream.flush().await?;
    Ok(transport)
}

/// Reads act 1 (exactly 64 bytes, nothing more), giving up early on a client that sent
/// a whole plaintext `SetupConnection` instead and waits for an answer.
async fn read_act1<S: AsyncRead + Unpin>(stream: &mut S) -> Result<[u8; ACT1_LEN], CodecError> {
    let mut act1 = [0u8; ACT1_LEN];
    let mut got = 0;
    while got < ACT1_LEN {
        let n = stream.read(&mut act1[got..]).await?;
        got += n;
        let plaintext = accept_log::looks_like_plaintext_setup(&act1[..got]);
        let whole_frame = Header::from_prefix(&act1[..got]).is_some_and(|h| h.frame_len() == got);
        if plaintext && (n == 0 || whole_frame || got == ACT1_LEN) {
            return Err(CodecError::PlaintextPeer { received: got });
        }
        if n == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
    }
    Ok(act1)
}
