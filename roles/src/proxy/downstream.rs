//! The downstream side: one task per miner connection.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use futures::{Sink, SinkExt, Stream};
use sv2c_binary::messages::RawMessageRef;
use sv2c_binary::messages::{
    CloseChannel, OpenExtendedMiningChannel, OpenMiningChannelError, OpenStandardMiningChannel,
    RequestExtensions, SetupConnection, SubmitSharesError, SubmitSharesExtended,
    SubmitSharesStandard, UpdateChannel, UpdateChannelError,
};
use sv2c_binary::{CHANNEL_BIT, Frameable, MessageType, Str0255};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{self, NoiseCodec};

use crate::identity::NoiseIdentity;
use crate::listen::AddressSlot;
use crate::setup::{MiningSuccessFlags, answer_mining_setup};
use sv2c_codec::{BatchDecoder, BatchRead, CodecError, Frame, FrameCodec, read_batch};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::Framed;

use super::messages::{Forwarded, OpenRequest, RouterCmd, ToDownstream, ToUpstream};
use super::routing::{ConnId, RETIRED_PER_CONNECTION};
use super::shared::{Counters, Shared};
use sv2c_channels::codes;
use sv2c_channels::extensions::{Negotiated, negotiate};

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
        let config = &self.shared.config;
        let (write_timeout, idle_timeout, partial_timeout) = (
            config.write_timeout,
            config.idle_timeout,
            config.partial_frame_timeout,
        );
        // One timer, set to the earlier of the idle and the partial-frame deadline. A read
        // does not move it (a busy miner's timer fires once per idle timeout, finds a
        // later frame and is set again); only a frame's first bytes bring it forward.
        let mut last_frame = Instant::now();
        let mut partial_since: Option<Instant> = None;
        let check = tokio::time::sleep_until(last_frame + idle_timeout);
        tokio::pin!(check);
        let (tx, mut rx) = super::mailbox::channel(self.shared.config.downstream_queue);
        self.router
            .send(RouterCmd::Register {
                conn: self.conn,
                tx,
            })
            .map_err(|_| DownstreamError::Dropped)?;
        // Frames that came in the same read as `SetupConnection`.
        if !after_setup.is_empty() {
            for frame in after_setup {
                self.on_frame(&mut framed, frame?).await?;
            }
            self.forward().await?;
            SinkExt::<Frame>::flush(&mut framed).await?;
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
                    if read.is_pending() && partial_since.is_none() && unfinished {
                        return std::task::Poll::Ready(Ok(Some(0)));
                    }
                    read
                }) => {
                    let Some(n) = read? else {
                        return Ok(());
                    };
                    if n > 0 {
                        last_frame = Instant::now();
                        partial_since = None;
                        for frame in batch.drain(..) {
                            self.on_frame(&mut framed, frame?).await?;
                        }
                        if batch.capacity() > BATCH_KEEP {
                            batch = Vec::new();
                        }
                        self.forward().await?;
                        SinkExt::<Frame>::flush(&mut framed).await?;
                    }
                    if partial_since.is_none() && framed.partial_frame_len() > 0 {
                        let now = Instant::now();
                        partial_since = Some(now);
                        if now + partial_timeout < check.deadline() {
                            check.as_mut().reset(now + partial_timeout);
                        }
                    }
                },
                () = &mut check => {
                    let now = Instant::now();
                    if now >= last_frame + idle_timeout {
                        return Err(DownstreamError::Idle);
                    }
                    let mut next = last_frame + idle_timeout;
                    if let Some(since) = partial_since {
                        let buffered = framed.partial_frame_len();
                        if now >= since + partial_timeout {
                            return Err(DownstreamError::PartialFrame(buffered));
                        }
                        next = next.min(since + partial_timeout);
                    }
                    check.as_mut().reset(next);
                }
            }
            framed.release_buffers();
        }
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
        rx: &mut super::mailbox::Receiver<Box<ToDownstream>>,
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

    /// One frame from the miner.
    async fn on_frame<F>(&mut self, framed: &mut F, frame: Frame) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        let h = frame.header();
        let counters = &self.shared.counters;
        if h.channel_msg() {
            let Some(channel) = frame.channel_id() else {
                // Too short to name a channel: dropped, as a pool drops a frame that does
                // not decode; the connection carries on.
                Counters::add(&counters.frames_dropped, 1);
                return Ok(());
            };
            if self.shared.config.aggregate {
                // Everything on a channel goes to the router in the order it came, known
                // channel or not: the router checks ownership and answers each share,
                // close and update in order ([`Aggregate::on_channel_frames`]).
                if (h.extension_id(), h.msg_type()) == (0, CloseChannel::MSG_TYPE) {
                    self.channels.remove(&channel);
                }
                self.channel_frames.push(frame);
                return Ok(());
            }
            let is_share = h.extension_id() == 0
                && matches!(
                    h.msg_type(),
                    SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE
                );
            if !self.channels.contains_key(&channel) {
                Counters::add(&counters.frames_dropped, 1);
                if is_share {
                    // Tell the miner; the sequence number follows the channel id in both
                    // share messages.
                    let sequence_number = frame
                        .payload()
                        .get(4..8)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u32::from_le_bytes);
                    let code = codes::INVALID_CHANNEL_ID;
                    counters.shares_rejected.count(code.as_bytes());
                    let error = SubmitSharesError {
                        channel_id: channel,
                        sequence_number,
                        error_code: Str0255::from_static_str(code).unwrap_or_default(),
                    };
                    self.send(framed, &error).await?;
                } else if (h.extension_id(), h.msg_type()) == (0, UpdateChannel::MSG_TYPE) {
                    // As the pool answers it (and the aggregating proxy).
                    let error = UpdateChannelError {
                        channel_id: channel,
                        error_code: Str0255::from_static_str(codes::INVALID_CHANNEL_ID)
                            .unwrap_or_default(),
                    };
                    self.send(framed, &error).await?;
                }
                return Ok(());
            }
            // Forwarded (the read loop forwards such frames before they reach here).
            self.forward_now(&RawMessageRef {
                extension_type: h.wire_extension_type(),
                msg_type: h.msg_type(),
                payload: frame.payload(),
            });
            return Ok(());
        }
        match (h.extension_id(), h.msg_type()) {
            (0, OpenStandardMiningChannel::MSG_TYPE) => {
                let Ok(m) = frame.decode::<OpenStandardMiningChannel>() else {
                    // Dropped, as a pool drops it; the connection carries on.
                    Counters::add(&counters.frames_dropped, 1);
                    return Ok(());
                };
                drop(frame);
                if self.may_open(framed, m.request_id).await? {
                    self.open(OpenRequest::Standard(m))?;
                }
            }
            (0, OpenExtendedMiningChannel::MSG_TYPE) => {
                let Ok(m) = frame.decode::<OpenExtendedMiningChannel>() else {
                    // Dropped, as a pool drops it; the connection carries on.
                    Counters::add(&counters.frames_dropped, 1);
                    return Ok(());
                };
                drop(frame);
                if self.may_open(framed, m.request_id).await? {
                    self.open(OpenRequest::Extended(m))?;
                }
            }
            (0, SetupConnection::MSG_TYPE) => {
                return Err(DownstreamError::Protocol("second SetupConnection".into()));
            }
            (RequestExtensions::EXTENSION_TYPE, RequestExtensions::MSG_TYPE) => {
                // Only what the pool granted (see the module docs of `proxy`).
                let Ok(m) = frame.decode::<RequestExtensions>() else {
                    // Dropped, as a pool drops it; the connection carries on.
                    Counters::add(&counters.frames_dropped, 1);
                    return Ok(());
                };
                drop(frame);
                match negotiate(&m, &self.shared.upstream_extensions(), &[]) {
                    Negotiated::Success(answer) => self.send(framed, &answer).await?,
                    Negotiated::Error { error, .. } => self.send(framed, &error).await?,
                }
            }
            // Anything else that is not on a channel is for the proxy, which has no use
            // for it; unknown extensions are dropped silently (SV2-WIRE §2.4).
            _ => Counters::add(&counters.frames_dropped, 1),
        }
        Ok(())
    }

    /// The forwarding fast path, for each frame as the read hands it out: a message on
    /// one of this miner's channels (a share, or any other channel message, including
    /// those of unknown extensions) is appended to `forwarded` with its channel id
    /// rewritten, never decoded. Returns `false` for anything else, and always when
    /// aggregating; [`on_frame`](Self::on_frame) handles those.
    fn forward_now(&mut self, m: &RawMessageRef<'_>) -> bool {
        if m.extension_type & CHANNEL_BIT == 0 || self.shared.config.aggregate {
            return false;
        }
        let Some(channel) = m.payload.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)) else {
            return false;
        };
        let is_share = m.extension_type & !CHANNEL_BIT == 0
            && matches!(
                m.msg_type,
                SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE
            );
        let upstream_channel = match self.channels.get(&channel) {
            Some(&up) => up,
            // A share on a channel closed in this read or just before: the pool answers
            // it after the shares before it (the router keeps the route for answers).
            None if is_share => match self.closed.iter().find(|(d, _)| *d == channel) {
                Some(&(_, up)) => up,
                None => return false,
            },
            None => return false,
        };
        let counters = &self.shared.counters;
        if m.payload.len() > self.shared.config.max_upstream_payload {
            Counters::add(&counters.frames_dropped, 1);
            return true;
        }
        match (m.extension_type & !CHANNEL_BIT, m.msg_type) {
            (0, SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE) => {
                Counters::add(&counters.shares_forwarded, 1);
            }
            (0, CloseChannel::MSG_TYPE) => {
                if self.channels.remove(&channel).is_none() {
                    // Closed already: nothing more goes upstream.
                    Counters::add(&counters.frames_dropped, 1);
                    return true;
                }
                if self.closed.len() == RETIRED_PER_CONNECTION {
                    self.closed.pop_front();
                }
                self.closed.push_back((channel, upstream_channel));
                let _ = self.router.send(RouterCmd::Closed {
                    conn: self.conn,
                    upstream_channel,
                });
            }
            _ => {}
        }
        self.forwarded
            .push(m.extension_type, m.msg_type, upstream_channel, m.payload);
        true
    }

    /// Hands what the last read forwards to the upstream side, in one message: a full
    /// queue makes this miner wait (the miners slow down, not the pool connection).
    async fn forward(&mut self) -> Result<(), DownstreamError> {
        let sent = match &self.to_upstream {
            ToUpstream::Writer(tx) if !self.forwarded.is_empty() => {
                tx.send(std::mem::take(&mut self.forwarded)).await.is_ok()
            }
            ToUpstream::Router(tx) if !self.channel_frames.is_empty() => {
                let frames = std::mem::take(&mut self.channel_frames);
                tx.send((self.conn, frames.into())).await.is_ok()
            }
            _ => true,
        };
        if sent {
            Ok(())
        } else {
            Err(DownstreamError::Dropped)
        }
    }

    /// Checks the channel limit; refuses the request if it is reached.
    async fn may_open<F>(
        &mut self,
        framed: &mut F,
        request_id: u32,
    ) -> Result<bool, DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        if self.channels.len() + self.opening < self.shared.config.max_channels_per_connection {
            return Ok(true);
        }
        let refusal = OpenMiningChannelError {
            request_id,
            error_code: Str0255::from_static_str(codes::TOO_MANY_CHANNELS).unwrap_or_default(),
        };
        self.send(framed, &refusal).await?;
        Ok(false)
    }

    fn open(&mut self, request: OpenRequest) -> Result<(), DownstreamError> {
        self.opening += 1;
        self.router
            .send(RouterCmd::Open {
                conn: self.conn,
                request,
            })
            .map_err(|_| DownstreamError::Dropped)
    }
}
