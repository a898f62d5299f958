//! The downstream side: one task per miner connection. The task (transport, setup, the
//! read loop, writes to the miner) is here; what the miner's frames do is in `frames`.

mod frames;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use futures::{Sink, SinkExt, Stream};
use sv2c_binary::messages::RawMessageRef;
use sv2c_binary::messages::SetupConnection;
use sv2c_binary::{Frameable, MessageType};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{self, NoiseCodec};

use crate::identity::NoiseIdentity;
use crate::listen::AddressSlot;
use crate::setup::{MiningSuccessFlags, answer_mining_setup};
use sv2c_codec::{BatchDecoder, BatchRead, CodecError, Frame, FrameCodec, read_batch};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant, Sleep};
use tokio_util::codec::Framed;

use super::mailbox;
use super::messages::{Forwarded, RouterCmd, ToDownstream, ToUpstream};
use super::routing::ConnId;
use super::shared::{Counters, Shared};

/// Most frames written to a miner between two flushes.
const WRITE_BATCH: usize = 256;

/// A connection keeps the list of one read's frames while it is at most this long.
const BATCH_KEEP: usize = 64;

/// A frame handed out by `read_batch`, copied into a slot of `pool` (what `FrameCodec`'s
/// `next()` does).
fn pooled(pool: &BufferPool, m: &RawMessageRef<'_>) -> Result<Frame, CodecError> {
    let mut payload = pool.acquire(m.payload.len());
    payload.copy_from_slice(m.payload);
    Frame::new(m.extension_type, m.msg_type, payload)
}

/// Turns an accepted miner connection into a plain frame transport: `Framed` +
/// [`FrameCodec`] on the shared pool, refusing payloads above `max_payload`
/// ([`downstream_noise_transport`] is the encrypted one).
///
/// # Errors
/// None for the plain transport; the signature matches the encrypted one.
pub async fn downstream_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
) -> Result<Framed<S, FrameCodec>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Ok(Framed::new(
        stream,
        FrameCodec::new(pool.clone()).max_payload(max_payload),
    ))
}

/// Turns an accepted miner connection into an encrypted frame transport: answers the
/// miner's Noise NX handshake as `identity` (the proxy's static key and certificate, an
/// ephemeral key from its stock) and returns a `Framed` with the same [`FrameCodec`]
/// inside a [`NoiseCodec`]. No timeout of its own: the caller bounds it.
///
/// # Errors
/// The miner closes the connection or fails before its first handshake message is
/// complete, or no ephemeral key can be drawn.
pub async fn downstream_noise_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
    identity: &NoiseIdentity,
) -> Result<Framed<S, NoiseCodec<FrameCodec>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let codec = FrameCodec::new(pool.clone()).max_payload(max_payload);
    let responder = identity.responder();
    noise::accept_with(stream, &responder, codec, || identity.ephemeral_key()).await
}

/// Why a miner connection was closed by the proxy.
#[derive(Debug)]
pub(crate) enum DownstreamError {
    /// Framing or I/O: garbage, an oversize frame, a stream ending inside a frame, a reset.
    Codec(CodecError),
    /// No `SetupConnection` in time.
    SetupTimeout,
    /// No Noise handshake in time.
    HandshakeTimeout,
    /// The miner broke the protocol.
    Protocol(String),
    /// The proxy can no longer serve it (upstream gone, or the miner stopped reading).
    Dropped,
    /// A write to the miner did not finish within the write timeout (it stopped reading).
    WriteTimeout,
    /// No complete frame from the miner within the idle timeout.
    Idle,
    /// A frame began arriving and was not complete within the partial-frame timeout.
    PartialFrame(usize),
}

impl fmt::Display for DownstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DownstreamError::Codec(e) => e.fmt(f),
            DownstreamError::SetupTimeout => f.write_str("no SetupConnection in time"),
            DownstreamError::HandshakeTimeout => f.write_str("no Noise handshake in time"),
            DownstreamError::Protocol(e) => f.write_str(e),
            DownstreamError::Dropped => {
                f.write_str("closed by the proxy (upstream gone, or this miner's queue was full)")
            }
            DownstreamError::WriteTimeout => {
                f.write_str("not reading: a write did not finish within the write timeout")
            }
            DownstreamError::Idle => f.write_str("no frame within the idle timeout"),
            DownstreamError::PartialFrame(n) => write!(
                f,
                "{n} bytes of an incomplete frame held past the partial-frame timeout"
            ),
        }
    }
}

impl From<CodecError> for DownstreamError {
    fn from(e: CodecError) -> Self {
        DownstreamError::Codec(e)
    }
}

/// Serves one miner from accept to close, then tells the router it is gone; `place`, the
/// connection's place under its address's cap, is given back at the end.
pub(crate) async fn run(
    (tcp, peer, place): (TcpStream, SocketAddr, AddressSlot),
    conn: ConnId,
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<RouterCmd>,
    to_upstream: ToUpstream,
) {
    let _place = place;
    let counters = &shared.counters;
    Counters::add(&counters.connections_open, 1);
    if shared.config.log_connections {
        tracing::debug!("downstream #{conn} ({peer}): connected");
    }
    let mut connection = Downstream {
        conn,
        shared: shared.clone(),
        router: router.clone(),
        to_upstream,
        forwarded: Forwarded::default(),
        channel_frames: Vec::new(),
        channels: HashMap::new(),
        closed: VecDeque::new(),
        opening: 0,
    };
    let (pool, max_payload) = (&shared.pool, shared.config.max_downstream_payload);
    // `serve` awaits the transport itself, so that the task keeps no second slot for the
    // `Framed` for the connection's life; the handshake is boxed (its state is not kept
    // once it is done).
    let result = match &shared.config.downstream_noise {
        None => {
            let framed = async { Ok(downstream_transport(tcp, pool, max_payload).await?) };
            connection.serve(framed).await
        }
        Some(identity) => {
            let handshake = async {
                let handshake = downstream_noise_transport(tcp, pool, max_payload, identity);
                match tokio::time::timeout(shared.config.setup_timeout, handshake).await {
                    Ok(Ok(framed)) => Ok(framed),
                    Ok(Err(e)) => {
                        Counters::add(&counters.handshake_failures, 1);
                        Err(e.into())
                    }
                    Err(_) => {
                        Counters::add(&counters.handshake_failures, 1);
                        Err(DownstreamError::HandshakeTimeout)
                    }
                }
            };
            connection.serve(Box::pin(handshake)).await
        }
    };
    let _ = router.send(RouterCmd::Gone { conn });
    counters.connections_open.fetch_sub(1, Relaxed);
    match result {
        Ok(()) if shared.config.log_connections => {
            tracing::debug!("downstream #{conn} ({peer}): disconnected");
        }
        Ok(()) => {}
        Err(e) => {
            Counters::add(&counters.connections_failed, 1);
            tracing::debug!("downstream #{conn} ({peer}): {e}; disconnected");
        }
    }
}

/// One miner connection's state.
struct Downstream {
    conn: ConnId,
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<RouterCmd>,
    to_upstream: ToUpstream,
    /// What one read forwards to the pool, handed to the writer in one message once the
    /// read's frames are handled.
    forwarded: Forwarded,
    /// Aggregating: the channel frames of one read (shares, `CloseChannel`,
    /// `UpdateChannel`), handed to the router in one message, in order.
    channel_frames: Vec<Frame>,
    /// Downstream channel id → upstream channel id (the share fast path).
    channels: HashMap<u32, u32>,
    /// Forwarding: the channels this miner closed last (downstream, upstream id), oldest
    /// first, at most [`RETIRED_PER_CONNECTION`]: a share on one still goes to the pool,
    /// which answers it (`invalid-channel-id`) after the shares before it.
    closed: VecDeque<(u32, u32)>,
    /// Open requests sent to the router and not answered yet.
    opening: usize,
}

/// A miner connection's one timer, set to the earlier of the idle and the partial-frame
/// deadline. A read does not move it (a busy miner's timer fires once per idle timeout,
/// finds a later frame and is set again); only a frame's first bytes bring it forward.
struct Deadlines {
    /// [`ProxyConfig::idle_timeout`](super::ProxyConfig::idle_timeout).
    idle: Duration,
    /// [`ProxyConfig::partial_frame_timeout`](super::ProxyConfig::partial_frame_timeout).
    partial: Duration,
    /// When the last read handed out frames.
    last_frame: Instant,
    /// Since when bytes of an unfinished frame are buffered.
    partial_since: Option<Instant>,
}

impl Deadlines {
    /// The deadlines of a connection set up now.
    fn new(shared: &Shared) -> Self {
        Deadlines {
            idle: shared.config.idle_timeout,
            partial: shared.config.partial_frame_timeout,
            last_frame: Instant::now(),
            partial_since: None,
        }
    }

    /// A read handed out frames.
    fn on_frames(&mut self) {
        self.last_frame = Instant::now();
        self.partial_since = None;
    }

    /// After a read: `buffered` bytes of an unfinished frame, none before, start the
    /// partial-frame deadline, and bring `check` forward to it if it is earlier.
    fn on_partial(&mut self, buffered: usize, check: Pin<&mut Sleep>) {
        if self.partial_since.is_none() && buffered > 0 {
            let now = Instant::now();
            self.partial_since = Some(now);
            if now + self.partial < check.deadline() {
                check.reset(now + self.partial);
            }
        }
    }

    /// `check` fired: the connection's end if a deadline has passed (`buffered`: the
    /// bytes of the unfinished frame), or `check` set to the next one.
    fn on_timer(&self, buffered: usize, check: Pin<&mut Sleep>) -> Result<(), DownstreamError> {
        let now = Instant::now();
        if now >= self.last_frame + self.idle {
            return Err(DownstreamError::Idle);
        }
        let mut next = self.last_frame + self.idle;
        if let Some(since) = self.partial_since {
            if now >= since + self.partial {
                return Err(DownstreamError::PartialFrame(buffered));
            }
            next = next.min(since + self.partial);
        }
        check.reset(next);
        Ok(())
    }
}

impl Downstream {
    async fn serve<F>(
        &mut self,
        transport: impl Future<Output = Result<F, DownstreamError>>,
    ) -> Result<(), DownstreamError>
    where
        F: Stream<Item = Result<Frame, CodecError>>
            + Sink<Frame, Error = CodecError>
            + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = RawMessageRef<'a>>>
            + Unpin,
    {
        let mut framed = transport.await?;
        // `Framed::new`'s 8 KiB read and write buffers are given back before the first
        // `.await` (reads go through `read_batch`'s scratch buffer): a handshake storm
        // does not hold them all at once, and an idle miner holds neither.
        framed.release_buffers();
        let Some(after_setup) = Box::pin(self.setup(&mut framed)).await? else {
            return Ok(());
        };
        framed.release_buffers();
        let write_timeout = self.shared.config.write_timeout;
        let mut deadlines = Deadlines::new(&self.shared);
        let check = tokio::time::sleep_until(deadlines.last_frame + deadlines.idle);
        tokio::pin!(check);
        let mut rx = self.register()?;
        // Frames that came in the same read as `SetupConnection`.
        if !after_setup.is_empty() {
            self.on_frames(&mut framed, after_setup).await?;
        }
        // Frames of one read that are not forwarded as they are handed out, copied into
        // pool slots.
        let mut batch: Vec<Result<Frame, CodecError>> = Vec::new();
        let pool = self.shared.pool.clone();
        loop {
            tokio::select! {
                out = rx.recv() => {
                    let Some(out) = out else {
                        return Err(DownstreamError::Dropped);
                    };
                    // A miner that stops reading blocks this write: the timeout ends the
                    // connection, which drops its queue and frees its pool slots.
                    tokio::time::timeout(write_timeout, self.write_out(&mut framed, out, &mut rx))
                        .await
                        .map_err(|_| DownstreamError::WriteTimeout)??;
                }
                // `read_batch` returns once it has handed out frames; this also returns
                // `Some(0)` when bytes of an unfinished frame arrive and none were
                // buffered before, so that the partial-frame deadline starts then.
                read = std::future::poll_fn(|cx| {
                    let read = {
                        let read = read_batch(&mut framed, |m| {
                            if !self.forward_now(m) {
                                batch.push(pooled(&pool, m));
                            }
                        });
                        std::pin::pin!(read).poll(cx)
                    };
                    let unfinished = framed.partial_frame_len() > 0;
                    if read.is_pending() && deadlines.partial_since.is_none() && unfinished {
                        return std::task::Poll::Ready(Ok(Some(0)));
                    }
                    read
                }) => {
                    let Some(n) = read? else {
                        return Ok(());
                    };
                    if n > 0 {
                        deadlines.on_frames();
                        self.on_frames(&mut framed, batch.drain(..)).await?;
                        if batch.capacity() > BATCH_KEEP {
                            batch = Vec::new();
                        }
                    }
                    deadlines.on_partial(framed.partial_frame_len(), check.as_mut());
                },
                () = &mut check => deadlines.on_timer(framed.partial_frame_len(), check.as_mut())?,
            }
            framed.release_buffers();
        }
    }

    /// Gives the router this connection's queue; returns its receiving end.
    fn register(&self) -> Result<mailbox::Receiver<Box<ToDownstream>>, DownstreamError> {
        let (tx, rx) = mailbox::channel(self.shared.config.downstream_queue);
        self.router
            .send(RouterCmd::Register {
                conn: self.conn,
                tx,
            })
            .map_err(|_| DownstreamError::Dropped)?;
        Ok(rx)
    }

    /// Handles the frames of one read in order, then hands the pool what they forward
    /// and flushes the answers.
    async fn on_frames<F>(
        &mut self,
        framed: &mut F,
        frames: impl IntoIterator<Item = Result<Frame, CodecError>>,
    ) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        for frame in frames {
            self.on_frame(framed, frame?).await?;
        }
        self.forward().await?;
        SinkExt::<Frame>::flush(framed).await?;
        Ok(())
    }

    /// Waits for `SetupConnection` (read with `read_batch`, like every other frame) and
    /// answers it. Returns the frames that came after it in the same read, or `None` if
    /// the miner left first.
    #[allow(clippy::type_complexity)]
    async fn setup<F>(
        &mut self,
        framed: &mut F,
    ) -> Result<Option<Vec<Result<Frame, CodecError>>>, DownstreamError>
    where
        F: Sink<Frame, Error = CodecError>
            + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = RawMessageRef<'a>>>
            + Unpin,
    {
        let pool = self.shared.pool.clone();
        let mut batch = Vec::new();
        let read = read_batch(framed, |m| batch.push(pooled(&pool, m)));
        let read = tokio::time::timeout(self.shared.config.setup_timeout, read)
            .await
            .map_err(|_| DownstreamError::SetupTimeout)?;
        if read?.is_none() {
            return Ok(None);
        }
        let mut frames = batch.into_iter();
        let Some(frame) = frames.next() else {
            return Ok(None);
        };
        let frame = frame?;
        let h = frame.header();
        if (h.extension_id(), h.msg_type()) != (0, SetupConnection::MSG_TYPE) {
            return Err(DownstreamError::Protocol(format!(
                "first message is not SetupConnection: {h:?}"
            )));
        }
        let setup = frame.decode::<SetupConnection>()?;
        drop(frame);
        // The pool's answer applies to every miner behind the proxy.
        let pool_flags =
            MiningSuccessFlags::from_bits_retain(self.shared.upstream_success_flags.load(Relaxed));
        match answer_mining_setup(&setup, pool_flags) {
            Ok(success) => self.send(framed, &success).await?,
            Err(e) => {
                let code = String::from_utf8_lossy(e.error_code.as_bytes()).into_owned();
                self.send(framed, &e).await?;
                return Err(DownstreamError::Protocol(format!(
                    "SetupConnection refused: {code}"
                )));
            }
        }
        Ok(Some(frames.collect()))
    }

    /// Writes one message the proxy itself produces.
    async fn send<F, M>(&self, framed: &mut F, msg: &M) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
        M: Frameable,
    {
        framed
            .send(Frame::from_message(msg, &self.shared.pool)?)
            .await?;
        Counters::add(&self.shared.counters.frames_to_downstream, 1);
        Ok(())
    }

    /// Writes what the router queued for this miner, batching whatever else is queued.
    async fn write_out<F>(
        &mut self,
        framed: &mut F,
        first: Box<ToDownstream>,
        rx: &mut mailbox::Receiver<Box<ToDownstream>>,
    ) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        let mut next = Some(first);
        let mut n = 0u64;
        while let Some(out) = next.take() {
            let frame = match *out {
                ToDownstream::Frame(f) => f,
                ToDownstream::Opened {
                    downstream_channel,
                    upstream_channel,
                    reply,
                } => {
                    self.opening = self.opening.saturating_sub(1);
                    self.channels.insert(downstream_channel, upstream_channel);
                    reply
                }
                ToDownstream::Refused { reply } => {
                    self.opening = self.opening.saturating_sub(1);
                    reply
                }
                ToDownstream::Closed {
                    downstream_channel,
                    frame,
                } => {
                    self.channels.remove(&downstream_channel);
                    frame
                }
            };
            framed.feed(frame).await?;
            n += 1;
            if (n as usize) < WRITE_BATCH {
                next = rx.try_recv();
            }
        }
        framed.flush().await?;
        Counters::add(&self.shared.counters.frames_to_downstream, n);
        Ok(())
    }
}
