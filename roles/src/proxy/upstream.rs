//! The upstream side: the connection to the pool, its setup, the router that dispatches
//! the pool's frames to miners, and the writer that batches frames to the pool.

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    CloseChannel, OpenExtendedMiningChannelSuccess, OpenMiningChannelError,
    OpenStandardMiningChannelSuccess, Reconnect, RequestExtensions, RequestExtensionsError,
    RequestExtensionsSuccess, SetGroupChannel, SetupConnection, SetupConnectionError,
    SetupConnectionSuccess, SubmitSharesError, SubmitSharesSuccess,
};
use sv2c_binary::{Frameable, MessageType, Protocol, Seq064K, Str0255};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator, NoiseCodec};
use sv2c_codec::{CodecError, Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

use super::aggregate::{Aggregate, Out};
use super::mailbox;
use super::messages::{
    Forwarded, MinerInput, OpenRequest, RouterCmd, ToDownstream, ToUpstream, Upward,
};
use super::routing::{ChannelMap, ConnId, DOWNSTREAM_GROUP_ID};
use super::shared::{Counters, ProxyConfig, ProxyError, Shared};

/// Most frames written to the pool between two flushes.
const WRITE_BATCH: usize = 256;

/// Turns the upstream byte stream into a plain frame transport: `Framed` +
/// [`FrameCodec`] on the shared pool ([`upstream_noise_transport`] is the encrypted one).
///
/// # Errors
/// None for the plain transport; the signature matches the encrypted one.
pub async fn upstream_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
) -> Result<Framed<S, FrameCodec>, ProxyError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Ok(Framed::new(
        stream,
        FrameCodec::new(pool.clone()).max_payload(max_payload),
    ))
}

/// Turns the upstream byte stream into an encrypted frame transport: runs the Noise NX
/// handshake as the initiator, checks that the pool's certificate is signed by
/// `authority` and valid now, and returns a `Framed` with the same [`FrameCodec`] inside
/// a [`NoiseCodec`].
///
/// # Errors
/// [`ProxyError::Handshake`]: the certificate does not verify (wrong authority key,
/// expired), the pool closes the connection or sends no valid answer within `timeout`
/// (e.g. it does not speak Noise).
pub async fn upstream_noise_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
    authority: AuthorityPublicKey,
    timeout: Duration,
) -> Result<Framed<S, NoiseCodec<FrameCodec>>, ProxyError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let initiator = Initiator::new(authority).map_err(|e| ProxyError::Handshake(e.into()))?;
    let codec = FrameCodec::new(pool.clone()).max_payload(max_payload);
    match tokio::time::timeout(timeout, noise::connect(stream, initiator, codec)).await {
        Ok(Ok(framed)) => Ok(framed),
        Ok(Err(e)) => Err(ProxyError::Handshake(e)),
        Err(_) => Err(ProxyError::Handshake(CodecError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no handshake answer within {timeout:?}"),
        )))),
    }
}

/// One pool of the ordered list [`supervise_upstreams`](super::supervise_upstreams) works through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The pool, `HOST:PORT` (an IPv6 host in brackets).
    pub address: String,
    /// The pool's authority key: its connection uses Noise NX and its certificate must be
    /// signed by this key (`None`: plain TCP).
    pub authority: Option<sv2c_codec::noise::AuthorityPublicKey>,
}

/// The host and port of `HOST:PORT` (the host without IPv6 brackets).
pub(super) fn endpoint(address: &str) -> Option<(String, u16)> {
    let (host, port) = address.rsplit_once(':')?;
    Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
}

/// Whether `upstream` answers as a pool the proxy could use: a dial, the Noise handshake
/// if it has an authority key, and `SetupConnection` answered with success, all within
/// [`ProxyConfig::upstream_setup_timeout`]; the connection is then closed.
///
/// # Errors
/// What [`Proxy::start`](super::Proxy::start) would meet: the dial fails, the handshake
/// fails, the pool refuses or does not answer in time.
pub(crate) async fn probe(upstream: &Upstream, config: &ProxyConfig) -> Result<(), ProxyError> {
    let limit = config.upstream_setup_timeout;
    let mut config = config.clone();
    if let Some((host, port)) = endpoint(&upstream.address) {
        (config.upstream_host, config.upstream_port) = (host, port);
    }
    let pool = BufferPool::new(4, config.slot_size)?;
    let dial = tokio::net::TcpStream::connect(upstream.address.as_str());
    let tcp = match tokio::time::timeout(limit, dial).await {
        Ok(tcp) => tcp?,
        Err(_) => {
            let late = format!("no connection within {limit:?}");
            return Err(io::Error::new(io::ErrorKind::TimedOut, late).into());
        }
    };
    let max = config.max_upstream_payload;
    match upstream.authority {
        None => {
            let mut up = upstream_transport(tcp, &pool, max).await?;
            setup_upstream(&mut up, &pool, &config).await?;
        }
        Some(key) => {
            let mut up = upstream_noise_transport(tcp, &pool, max, key, limit).await?;
            setup_upstream(&mut up, &pool, &config).await?;
        }
    }
    Ok(())
}

/// Sends the proxy's `SetupConnection` (Mining, version 2, [`ProxyConfig::upstream_flags`])
/// and waits for the pool's answer.
///
/// # Errors
/// [`ProxyError::Upstream`] if the pool answers `SetupConnection.Error` or anything else,
/// [`ProxyError::UpstreamTimeout`] after [`ProxyConfig::upstream_setup_timeout`], or the
/// connection's error.
pub async fn setup_upstream<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<SetupConnectionSuccess, ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    let text = |s: &str| Str0255::try_from(s).map_err(|e| ProxyError::Upstream(e.to_string()));
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: config.upstream_flags,
        endpoint_host: text(&config.upstream_host)?,
        endpoint_port: config.upstream_port,
        vendor: text("sv2c")?,
        hardware_version: text("sv2c-roles proxy")?,
        firmware: text(env!("CARGO_PKG_VERSION"))?,
        device_id: text("")?,
    };
    framed.send(Frame::from_message(&setup, pool)?).await?;
    let answer = tokio::time::timeout(config.upstream_setup_timeout, framed.next())
        .await
        .map_err(|_| ProxyError::UpstreamTimeout)?;
    let frame = match answer {
        Some(frame) => frame?,
        None => return Err(ProxyError::Upstream("closed during setup".into())),
    };
    let h = frame.header();
    match (h.extension_id(), h.msg_type()) {
        (0, SetupConnectionSuccess::MSG_TYPE) => Ok(frame.decode::<SetupConnectionSuccess>()?),
        (0, SetupConnectionError::MSG_TYPE) => {
            let e = frame.decode::<SetupConnectionError>()?;
            Err(ProxyError::Upstream(format!(
                "SetupConnection refused: {} (flags {:#x})",
                String::from_utf8_lossy(e.error_code.as_bytes()),
                e.flags
            )))
        }
        _ => Err(ProxyError::Upstream(format!(
            "expected SetupConnection.Success, got {:?}",
            h
        ))),
    }
}

/// Extensions the proxy passes on to miners when the pool grants them: 0x0002 only, whose
/// TLV the proxy forwards untouched inside the share frames.
const PASSED_ON: &[u16] = &[sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING];

/// Asks the pool for [`ProxyConfig::upstream_extensions`] (`RequestExtensions`, right
/// after `SetupConnection.Success`) and returns those granted that the proxy can pass on
/// to miners. Nothing is asked if the list is empty; a pool that answers with
/// `RequestExtensions.Error`, or not within [`ProxyConfig::extensions_timeout`], grants
/// nothing.
///
/// # Errors
/// [`ProxyError::Upstream`] if the pool answers anything else or closes, or the
/// connection's error.
pub async fn request_upstream_extensions<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<Vec<u16>, ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    match request_extensions(framed, pool, config).await? {
        (granted, None) => Ok(granted),
        (_, Some(frame)) => Err(ProxyError::Upstream(format!(
            "expected RequestExtensions.Success or .Error, got {:?}",
            frame.header()
        ))),
    }
}

/// [`request_upstream_extensions`], where a pool that answers with anything else (it
/// ignored the request, as the spec allows, and sent e.g. `Reconnect`) grants nothing:
/// that frame is returned, to be handled as if it came next ([`Replay`]).
pub(crate) async fn request_extensions<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<(Vec<u16>, Option<Frame>), ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    if config.upstream_extensions.is_empty() {
        return Ok((Vec::new(), None));
    }
    let request = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&config.upstream_extensions)
            .map_err(|e| ProxyError::Upstream(e.to_string()))?,
    };
    framed.send(Frame::from_message(&request, pool)?).await?;
    let Ok(answer) = tokio::time::timeout(config.extensions_timeout, framed.next()).await else {
        tracing::warn!("the pool did not answer RequestExtensions: no extensions");
        return Ok((Vec::new(), None));
    };
    let frame = match answer {
        Some(frame) => frame?,
        None => return Err(ProxyError::Upstream("closed during setup".into())),
    };
    let h = frame.header();
    match (h.extension_id(), h.msg_type()) {
        (RequestExtensionsSuccess::EXTENSION_TYPE, RequestExtensionsSuccess::MSG_TYPE) => {
            let granted = frame.decode::<RequestExtensionsSuccess>()?;
            let granted = granted
                .supported_extensions
                .to_vec()
                .into_iter()
                .filter(|id| PASSED_ON.contains(id) && config.upstream_extensions.contains(id))
                .collect();
            Ok((granted, None))
        }
        (RequestExtensionsError::EXTENSION_TYPE, RequestExtensionsError::MSG_TYPE) => {
            let e = frame.decode::<RequestExtensionsError>()?;
            tracing::warn!(
                "the pool refused extensions {:?} (it requires {:?})",
                e.unsupported_extensions.to_vec(),
                e.required_extensions.to_vec()
            );
            Ok((Vec::new(), None))
        }
        _ => {
            tracing::warn!("the pool answered RequestExtensions with {h:?}: no extensions");
            Ok((Vec::new(), Some(frame)))
        }
    }
}

/// The pool connection with a frame that came early (before the answer the proxy waited
/// for) put back in front of what the pool sends next.
pub(crate) struct Replay<F> {
    early: Option<Frame>,
    inner: F,
}

impl<F> Replay<F> {
    pub(crate) fn new(inner: F, early: Option<Frame>) -> Self {
        Replay { early, inner }
    }
}

impl<F> Stream for Replay<F>
where
    F: Stream<Item = Result<Frame, CodecError>> + Unpin,
{
    type Item = Result<Frame, CodecError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Some(frame) = self.early.take() {
            return std::task::Poll::Ready(Some(Ok(frame)));
        }
        std::pin::Pin::new(&mut self.inner).poll_next(cx)
    }
}

impl<T, F> Sink<T> for Replay<F>
where
    F: Sink<T, Error = CodecError> + Unpin,
{
    type Error = CodecError;

    fn poll_ready(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_ready(cx)
    }

    fn start_send(mut self: std::pin::Pin<&mut Self>, item: T) -> Result<(), CodecError> {
        std::pin::Pin::new(&mut self.inner).start_send(item)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_close(cx)
    }
}

/// The reading half of a pool connection, as the router holds it (it swaps it for the
/// next pool's when miners are kept across pools).
pub(crate) type UpstreamReader = Pin<Box<dyn Stream<Item = Result<Frame, CodecError>> + Send>>;

/// The writing half of a pool connection, as a writer task holds it.
pub(crate) type UpstreamWriter = Pin<Box<dyn Sink<Upward, Error = CodecError> + Send>>;

/// The writer task of the current pool connection (replaced with it).
pub(crate) type WriterSlot = Arc<Mutex<Option<JoinHandle<()>>>>;

/// A new pool connection for a running aggregating proxy (sent on [`Links::attach`]):
/// set up, extensions asked, the proxy's extended channel open on it.
pub(crate) struct Attachment {
    pub(crate) reader: UpstreamReader,
    pub(crate) writer: UpstreamWriter,
    /// The proxy's channel on it (its jobs follow on `reader`).
    pub(crate) aggregate: Aggregate,
    /// The pool, `HOST:PORT`.
    pub(crate) upstream: String,
    /// Its `SetupConnection.Success` flags.
    pub(crate) success_flags: u32,
    /// The extensions it granted that miners may have.
    pub(crate) extensions: Vec<u16>,
    /// Told once the router uses the new connection.
    pub(crate) attached: oneshot::Sender<()>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

/// Handles to the upstream tasks.
pub(crate) struct Links {
    pub(crate) router: mpsc::UnboundedSender<RouterCmd>,
    /// Aggregating mode, miners kept across pools: the router moves to each new pool
    /// connection sent here.
    pub(crate) attach: mpsc::UnboundedSender<Box<Attachment>>,
    pub(crate) to_upstream: ToUpstream,
    pub(crate) router_task: JoinHandle<()>,
    pub(crate) writer_task: WriterSlot,
}

/// Splits the set-up upstream connection into a router task (reads) and a writer task;
/// with `aggregate`, the router serves every miner channel from that upstream channel.
/// With `keep` (aggregating only), a lost pool connection does not end the router: its
/// miners stay connected and wait for the next one ([`Links::attach`]).
pub(crate) fn spawn<F>(
    framed: F,
    shared: Arc<Shared>,
    done: watch::Sender<bool>,
    aggregate: Option<Aggregate>,
    keep: bool,
) -> Links
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Upward, Error = CodecError> + Send + 'static,
{
    let (sink, stream) = framed.split::<Upward>();
    let stream: UpstreamReader = Box::pin(stream);
    let keep = keep && aggregate.is_some();
    let (router, commands) = mpsc::unbounded_channel();
    let (attach, attachments) = mpsc::unbounded_channel();
    let (forwarded, data) = mpsc::channel(shared.config.upstream_queue.max(1));
    let mut to_upstream = ToUpstream::Writer(forwarded);
    // Aggregating: the miners' shares go to the router, which checks them, through a
    // queue of the same bound (the writer's data queue stays unused).
    let mut shares = None;
    if let Some(aggregate) = &aggregate {
        aggregate.publish_channel(&shared);
        let (tx, rx) = mpsc::channel(shared.config.upstream_queue.max(1));
        to_upstream = ToUpstream::Router(tx);
        shares = Some(rx);
    }
    let (control_tx, control) = mpsc::unbounded_channel();
    let writer_task = tokio::spawn(write_upstream(
        sink,
        data,
        control,
        shared.clone(),
        router.clone(),
        0,
    ));
    let writer_task = Arc::new(Mutex::new(Some(writer_task)));
    let router_task = tokio::spawn({
        let (router, writer) = (router.downgrade(), writer_task.clone());
        async move {
            let mut router = Router {
                map: ChannelMap::new(),
                shared: shared.clone(),
                control: control_tx,
                aggregate,
                out: Vec::new(),
                keep,
                generation: 0,
                router,
                writer,
                done,
            };
            let shutting_down = router.run(stream, commands, attachments, shares).await;
            router.tell_miners_to_reconnect();
            if shutting_down {
                // The pool is still there: the writer gets what is queued for it out.
                return;
            }
            shared.counters.upstream_closed.store(true, Relaxed);
            let _ = router.done.send(true);
            // Dropping the router drops every miner's queue: their tasks close the
            // connections.
        }
    });
    Links {
        router,
        attach,
        to_upstream,
        router_task,
        writer_task,
    }
}

/// Writes frames to the pool: control frames (from the router) first, then what the
/// miners' reads forward, flushing once per batch. Once the queues are empty the writer
/// yields once before it flushes, so that the miners the runtime has ready, or finds
/// ready when it next polls its sockets, add their reads to the batch: under load one
/// write carries several miners' shares instead of one read's.
///
/// A batch's write must finish within [`ProxyConfig::write_timeout`]: a pool that stops
/// reading (or a path to it that lost it) fills the socket's buffer, and the proxy then
/// tells the router the pool is gone ([`RouterCmd::WriteFailed`]) rather than holding every
/// miner's shares.
///
/// `generation` names the pool connection in [`RouterCmd::WriteFailed`]: the writer of a
/// connection the router left already may still be writing what was queued for it.
async fn write_upstream<K>(
    mut sink: K,
    mut data: mpsc::Receiver<Forwarded>,
    mut control: mpsc::UnboundedReceiver<Frame>,
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<RouterCmd>,
    generation: u64,
) where
    K: Sink<Upward, Error = CodecError> + Unpin,
{
    let limit = shared.config.write_timeout;
    let result: Result<(), CodecError> = async {
        loop {
            let (first, mut n) = tokio::select! {
                biased;
                Some(f) = control.recv() => (Upward::Frame(f), 1),
                Some(f) = data.recv() => {
                    let n = f.frames;
                    (Upward::Forwarded(f), n)
                }
                else => return Ok(()),
            };
            let write = async {
                sink.feed(first).await?;
                let mut yielded = false;
                while n < WRITE_BATCH {
                    if let Ok(f) = control.try_recv() {
                        sink.feed(Upward::Frame(f)).await?;
                        n += 1;
                    } else if let Ok(f) = data.try_recv() {
                        n += f.frames;
                        sink.feed(Upward::Forwarded(f)).await?;
                    } else if !yielded {
                        yielded = true;
                        tokio::task::yield_now().await;
                    } else {
                        break;
                    }
                }
                sink.flush().await
            };
            crate::in_time(limit, write).await?;
            Counters::add(&shared.counters.frames_to_upstream, n as u64);
        }
    }
    .await;
    if let Err(e) = result {
        tracing::warn!("upstream write failed: {e}");
        let _ = router.send(RouterCmd::WriteFailed { generation });
    }
}

/// `Reconnect` to this same endpoint (empty host, port 0: spec §3.1).
fn reconnect_here() -> Reconnect {
    Reconnect {
        new_host: Str0255::default(),
        new_port: 0,
    }
}

/// Owns the channel map; dispatches the pool's frames and the miners' commands.
struct Router {
    map: ChannelMap<mailbox::Sender<Box<ToDownstream>>>,
    shared: Arc<Shared>,
    control: mpsc::UnboundedSender<Frame>,
    /// `Some` in aggregating mode ([`ProxyConfig::aggregate`]).
    aggregate: Option<Aggregate>,
    /// What an aggregating event produced, delivered right after (kept to reuse).
    out: Vec<Out>,
    /// Aggregating with several upstreams: a lost pool connection leaves the miners
    /// connected, waiting for the next one.
    keep: bool,
    /// Pool connections attached before the current one.
    generation: u64,
    /// The router's own command queue, for the writers of later pool connections.
    router: mpsc::WeakUnboundedSender<RouterCmd>,
    /// Where the current writer task's handle is kept (for [`Proxy::shutdown`](super::Proxy::shutdown)).
    writer: WriterSlot,
    /// Whether the pool connection is gone ([`Proxy::upstream_closed`](super::Proxy::upstream_closed)).
    done: watch::Sender<bool>,
}

impl Router {
    /// Runs until the pool connection ends (`false`) or the proxy shuts down (`true`).
    /// `shares`: the miners' shares, in aggregating mode.
    /// With [`keep`](Self::keep), a lost pool connection is left ([`Self::detach`]) and
    /// the router goes on, until the next one comes on `attachments`.
    async fn run(
        &mut self,
        stream: UpstreamReader,
        mut commands: mpsc::UnboundedReceiver<RouterCmd>,
        mut attachments: mpsc::UnboundedReceiver<Box<Attachment>>,
        mut shares: Option<mpsc::Receiver<(ConnId, MinerInput)>>,
    ) -> bool {
        let mut stream = Some(stream);
        // Aggregating: how often the pool's unanswered shares are looked at.
        let mut silence = tokio::time::interval(std::time::Duration::from_secs(1));
        silence.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                frame = async { stream.as_mut()?.next().await }, if stream.is_some() => {
                    let gone = match frame {
                        Some(Ok(frame)) => !self.on_upstream_frame(frame),
                        Some(Err(e)) => {
                            tracing::warn!("upstream connection failed: {e}");
                            true
                        }
                        None => {
                            tracing::warn!("upstream connection closed");
                            true
                        }
                    };
                    if gone && !self.detach(&mut stream) {
                        return false;
                    }
                },
                Some((conn, input)) = async { shares.as_mut()?.recv().await }, if shares.is_some() => {
                    self.on_channel_frames(conn, input);
                }
                _ = silence.tick(), if self.aggregate.is_some() && stream.is_some() => {
                    if self.pool_is_silent() && !self.detach(&mut stream) {
                        return false;
                    }
                }
                Some(cmd) = commands.recv() => {
                    match cmd {
                        RouterCmd::Shutdown => return true,
                        RouterCmd::WriteFailed { generation } => {
                            if generation == self.generation
                                && stream.is_some()
                                && !self.detach(&mut stream)
                            {
                                return false;
                            }
                            continue;
                        }
                        cmd => self.on_command(cmd),
                    }
                    self.count_channels();
                }
                Some(attachment) = attachments.recv() => {
                    self.attach(*attachment, &mut stream);
                    self.count_channels();
                }
            }
        }
    }

    fn on_command(&mut self, cmd: RouterCmd) {
        if self.aggregate.is_some() {
            return self.on_aggregate_command(cmd);
        }
        match cmd {
            RouterCmd::Register { conn, tx } => self.map.add_connection(conn, tx),
            RouterCmd::Open { conn, request } => {
                let (downstream_request, frame) = match request {
                    OpenRequest::Standard(mut m) => {
                        let Some(id) = self.map.begin_open(conn, m.request_id) else {
                            return;
                        };
                        let downstream_request = m.request_id;
                        m.request_id = id;
                        (
                            downstream_request,
                            Frame::from_message(&m, &self.shared.pool),
                        )
                    }
                    OpenRequest::Extended(mut m) => {
                        let Some(id) = self.map.begin_open(conn, m.request_id) else {
                            return;
                        };
                        let downstream_request = m.request_id;
                        m.request_id = id;
                        (
                            downstream_request,
                            Frame::from_message(&m, &self.shared.pool),
                        )
                    }
                };
                match frame {
                    Ok(frame) => self.to_upstream(frame),
                    Err(e) => tracing::debug!(
                        "downstream #{conn}: open request {downstream_request} not forwarded: {e}"
                    ),
                }
            }
            RouterCmd::Closed {
                conn,
                upstream_channel,
            } => {
                if self.map.owner(upstream_channel) == Some(conn) {
                    self.map.retire_channel(upstream_channel);
                }
            }
            RouterCmd::Gone { conn } => self.drop_connection(conn),
            RouterCmd::Shutdown | RouterCmd::WriteFailed { .. } => {}
        }
    }

    /// [`on_command`](Self::on_command) in aggregating mode.
    fn on_aggregate_command(&mut self, cmd: RouterCmd) {
        let mut out = std::mem::take(&mut self.out);
        match cmd {
            RouterCmd::Register { conn, tx } => self.map.add_connection(conn, tx),
            RouterCmd::Open { conn, request } => {
                if let Some(a) = self.aggregate.as_mut() {
                    a.open(conn, request, &self.shared, &mut out);
                }
            }
            RouterCmd::Closed {
                conn,
                upstream_channel,
            } => {
                if let Some(a) = self.aggregate.as_mut() {
                    a.close(conn, upstream_channel);
                }
            }
            RouterCmd::Gone { conn } => self.drop_connection(conn),
            RouterCmd::Shutdown | RouterCmd::WriteFailed { .. } => {}
        }
        self.deliver_all(&mut out);
        self.out = out;
    }

    /// The pool connection is gone (closed, failed, silent, or it sent `Reconnect` or
    /// closed the proxy's channel). Without [`keep`](Self::keep): returns `false`, the
    /// router ends. With it: the connection is dropped (its writer ends once what is
    /// queued for it is written or fails), what the pool owes is settled
    /// ([`Aggregate::detach`]), the proxy counts as without a pool, and the miners stay
    /// connected, waiting for the next pool connection; returns `true`.
    fn detach(&mut self, stream: &mut Option<UpstreamReader>) -> bool {
        if !self.keep {
            return false;
        }
        *stream = None;
        // Frames for the pool from now on go nowhere until the next connection.
        self.control = mpsc::unbounded_channel().0;
        if let Some(aggregate) = self.aggregate.as_mut() {
            let mut out = std::mem::take(&mut self.out);
            aggregate.detach(&self.shared, &mut out);
            self.deliver_all(&mut out);
            self.out = out;
        }
        tracing::warn!("upstream gone: miners stay connected until the next pool connection");
        self.shared.counters.upstream_closed.store(true, Relaxed);
        let _ = self.done.send(true);
        true
    }

    /// Publishes how many miner channels are open.
    fn count_channels(&self) {
        let open = match &self.aggregate {
            None => self.map.channel_count(),
            Some(a) => a.channel_count(),
        };
        self.shared
            .counters
            .channels_open
            .store(open as u64, Relaxed);
    }

    /// A new pool connection (from [`Links::attach`]): its writer task is started, its
    /// reads replace the current ones (the current connection, if any, is dropped once
    /// its writer has written what was queued for it), and every miner channel is moved
    /// to the proxy's channel on it ([`Aggregate::attach`]); miners whose channels cannot
    /// be moved are told to `Reconnect` and disconnected.
    fn attach(&mut self, a: Attachment, stream: &mut Option<UpstreamReader>) {
        let (Some(router), Some(aggregate)) = (self.router.upgrade(), self.aggregate.as_mut())
        else {
            return;
        };
        self.generation += 1;
        let (control_tx, control) = mpsc::unbounded_channel();
        // The writer's queue of forwarded reads is not used when aggregating.
        let data = mpsc::channel(1).1;
        let writer = tokio::spawn(write_upstream(
            a.writer,
            data,
            control,
            self.shared.clone(),
            router,
            self.generation,
        ));
        self.control = control_tx;
        match self.writer.lock() {
            Ok(mut slot) => *slot = Some(writer),
            Err(poisoned) => *poisoned.into_inner() = Some(writer),
        }
        *stream = Some(a.reader);
        self.shared
            .set_upstream(a.upstream, a.success_flags, a.extensions);
        let mut out = std::mem::take(&mut self.out);
        let gone = aggregate.attach(a.aggregate, &self.shared, &mut out);
        self.deliver_all(&mut out);
        self.out = out;
        for conn in gone {
            tracing::debug!(
                "downstream #{conn}: its channel does not fit the new pool's extranonce; told to reconnect"
            );
            if let Ok(frame) = Frame::from_message(&reconnect_here(), &self.shared.pool) {
                self.deliver(conn, ToDownstream::Frame(frame));
            }
            self.drop_connection(conn);
        }
        let counters = &self.shared.counters;
        counters.upstream_closed.store(false, Relaxed);
        Counters::add(&counters.upstream_switches_kept, 1);
        let _ = self.done.send(false);
        let _ = a.attached.send(());
    }

    /// A miner's channel frames of one read, or an SV1 miner's share (aggregating mode).
    fn on_channel_frames(&mut self, conn: ConnId, input: MinerInput) {
        let Some(aggregate) = self.aggregate.as_mut() else {
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        aggregate.on_channel_frames(conn, input, &self.shared, &mut out);
        self.deliver_all(&mut out);
        self.out = out;
    }

    /// Aggregating mode: the pool left a share unanswered for
    /// [`ProxyConfig::pool_answer_timeout`](super::ProxyConfig::pool_answer_timeout), or
    /// too many miners' answers wait for it; it is taken as gone.
    fn pool_is_silent(&self) -> bool {
        let config = &self.shared.config;
        let silent = self.aggregate.as_ref().is_some_and(|a| {
            a.pool_is_silent(std::time::Instant::now(), config.pool_answer_timeout)
        });
        if silent {
            tracing::warn!(
                "the pool left a share unanswered for {:?}, or {} miners' answers wait for it: \
                 taken as gone",
                config.pool_answer_timeout,
                super::aggregate::MAX_HELD_SHARES
            );
        }
        silent
    }

    /// Delivers what an aggregating event produced.
    fn deliver_all(&mut self, out: &mut Vec<Out>) {
        for o in out.drain(..) {
            match o {
                Out::Miner(conn, msg) => {
                    if matches!(msg, ToDownstream::Opened { .. }) {
                        Counters::add(&self.shared.counters.channels_opened, 1);
                    }
                    self.deliver(conn, msg);
                }
                Out::Upstream(frame) => self.to_upstream(frame),
            }
        }
    }

    /// Forgets a connection and closes its channels upstream.
    /// The pool is gone: every miner gets `Reconnect` with an empty host and port 0
    /// ("to this same endpoint", spec §3.1) behind what is already queued for it, and its
    /// connection then closes (the router's queues are dropped). Miners come back once
    /// the proxy has a pool again ([`supervise`](super::supervise)).
    fn tell_miners_to_reconnect(&mut self) {
        let reconnect = reconnect_here();
        for handle in self.map.handles() {
            if let Ok(frame) = Frame::from_message(&reconnect, &self.shared.pool) {
                let _ = handle.try_send(Box::new(ToDownstream::Frame(frame)));
            }
        }
    }

    fn drop_connection(&mut self, conn: ConnId) {
        if let Some(aggregate) = self.aggregate.as_mut() {
            aggregate.drop_connection(conn);
        }
        for upstream_channel in self.map.remove_connection(conn) {
            self.close_upstream(upstream_channel);
        }
    }

    fn close_upstream(&self, upstream_channel: u32) {
        let close = CloseChannel {
            channel_id: upstream_channel,
            reason_code: Str0255::from_static_str("downstream-disconnected").unwrap_or_default(),
        };
        if let Ok(frame) = Frame::from_message(&close, &self.shared.pool) {
            self.to_upstream(frame);
        }
    }

    fn to_upstream(&self, frame: Frame) {
        // The writer only stops when the upstream connection is gone; the router sees
        // that too and stops.
        let _ = self.control.send(frame);
    }

    /// Queues `msg` for a miner without waiting; a miner whose queue is full is not
    /// reading and is disconnected.
    fn deliver(&mut self, conn: ConnId, msg: ToDownstream) {
        let Some(tx) = self.map.handle(conn) else {
            return;
        };
        match tx.try_send(Box::new(msg)) {
            Ok(()) => {}
            Err(mailbox::TrySendError::Full(_)) => self.deliver_failed(conn),
            // The connection task is ending; it sends `Gone` itself.
            Err(mailbox::TrySendError::Closed(_)) => {}
        }
    }

    /// One frame from the pool; `false` if the proxy can no longer serve (the pool sent
    /// `Reconnect`; aggregating mode: the pool closed the proxy's channel).
    fn on_upstream_frame(&mut self, frame: Frame) -> bool {
        Counters::add(&self.shared.counters.frames_from_upstream, 1);
        let h = frame.header();
        if !h.channel_msg() && (h.extension_id(), h.msg_type()) == (0, Reconnect::MSG_TYPE) {
            return !self.on_reconnect(&frame);
        }
        if let Some(aggregate) = self.aggregate.as_mut() {
            let mut out = std::mem::take(&mut self.out);
            let go_on = aggregate.on_upstream_frame(frame, &self.shared, &mut out);
            self.deliver_all(&mut out);
            self.out = out;
            return go_on;
        }
        self.forward_upstream_frame(frame);
        true
    }

    /// The pool's `Reconnect` (for the proxy's own connection: not passed on, spec
    /// §3.1): records where it points ([`Proxy::redirect`](super::Proxy::redirect)) and
    /// returns `true`, so that the connection ends as if the pool had closed it (miners
    /// are told to reconnect to the proxy, which dials the new endpoint).
    fn on_reconnect(&mut self, frame: &Frame) -> bool {
        match frame.decode::<Reconnect>() {
            Ok(m) => {
                let host = String::from_utf8_lossy(m.new_host.as_bytes()).into_owned();
                tracing::info!(
                    "upstream asked to reconnect to {host:?} port {}",
                    m.new_port
                );
                // The connection ends here: there is no second `Reconnect` to record.
                self.shared.set_redirect((host, m.new_port));
                true
            }
            Err(e) => {
                tracing::warn!("upstream sent a bad message: {e}");
                false
            }
        }
    }

    /// [`on_upstream_frame`](Self::on_upstream_frame) when every miner channel has its
    /// own upstream channel.
    fn forward_upstream_frame(&mut self, mut frame: Frame) {
        let h = frame.header();
        let counters = &self.shared.counters;
        if h.channel_msg() {
            let Some(upstream_channel) = frame.channel_id() else {
                Counters::add(&counters.frames_dropped, 1);
                return;
            };
            let mut answer = false;
            if h.extension_id() == 0 {
                answer = matches!(
                    h.msg_type(),
                    SubmitSharesSuccess::MSG_TYPE | SubmitSharesError::MSG_TYPE
                );
                match h.msg_type() {
                    SubmitSharesSuccess::MSG_TYPE => {
                        // Fixed-size message: decoding it owned allocates nothing.
                        if let Ok(s) = frame.decode::<SubmitSharesSuccess>() {
                            Counters::add(
                                &counters.shares_accepted,
                                u64::from(s.new_submits_accepted_count),
                            );
                        }
                    }
                    SubmitSharesError::MSG_TYPE => {
                        // channel id, sequence number, then the error code (STR0_255).
                        let p = frame.payload();
                        let code = p
                            .get(8)
                            .and_then(|&n| p.get(9..9 + usize::from(n)))
                            .unwrap_or_default();
                        counters.shares_rejected.count(code);
                    }
                    CloseChannel::MSG_TYPE => {
                        let closed = self.map.close_channel(upstream_channel);
                        let open = self.map.channel_count() as u64;
                        counters.channels_open.store(open, Relaxed);
                        if let Some((conn, downstream_channel)) = closed {
                            let _ = frame.set_channel_id(downstream_channel);
                            self.deliver(
                                conn,
                                ToDownstream::Closed {
                                    downstream_channel,
                                    frame,
                                },
                            );
                        }
                        return;
                    }
                    _ => {}
                }
            }
            // The fast path: rewrite the channel id in place, pass the frame on. Answers to
            // shares also reach a channel the miner closed since.
            let route = match self.map.route(upstream_channel) {
                None if answer => self.map.retired_route(upstream_channel),
                route => route,
            };
            if let Some((tx, downstream_channel)) = route {
                let _ = frame.set_channel_id(downstream_channel);
                match tx.try_send(Box::new(ToDownstream::Frame(frame))) {
                    Ok(()) => {}
                    Err(mailbox::TrySendError::Full(_)) => {
                        if let Some(conn) = self.map.owner(upstream_channel) {
                            self.deliver_failed(conn);
                        }
                    }
                    Err(mailbox::TrySendError::Closed(_)) => {}
                }
            } else if let Some(targets) = self.map.group(upstream_channel).map(|members| {
                members
                    .filter_map(|m| Some((self.map.owner(m)?, self.map.route(m)?.1)))
                    .collect::<Vec<(ConnId, u32)>>()
            }) {
                // Addressed to an upstream group: one copy per member channel.
                for (conn, downstream_channel) in targets {
                    let mut payload = self.shared.pool.acquire(frame.payload().len());
                    payload.copy_from_slice(frame.payload());
                    if let Ok(mut copy) = Frame::new(h.wire_extension_type(), h.msg_type(), payload)
                    {
                        let _ = copy.set_channel_id(downstream_channel);
                        self.deliver(conn, ToDownstream::Frame(copy));
                    }
                }
            } else {
                Counters::add(&counters.frames_dropped, 1);
            }
            return;
        }
        if h.extension_id() != 0 {
            // Unknown extension, not a channel message: meant for the proxy, which
            // ignores it (SV2-WIRE §2.4).
            Counters::add(&counters.frames_dropped, 1);
            return;
        }
        match h.msg_type() {
            OpenStandardMiningChannelSuccess::MSG_TYPE => {
                match frame.decode::<OpenStandardMiningChannelSuccess>() {
                    Ok(m) => self.on_opened(
                        m.request_id,
                        m.channel_id,
                        m.group_channel_id,
                        move |r, c| OpenStandardMiningChannelSuccess {
                            request_id: r,
                            channel_id: c,
                            group_channel_id: DOWNSTREAM_GROUP_ID,
                            ..m
                        },
                    ),
                    Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
                }
            }
            OpenExtendedMiningChannelSuccess::MSG_TYPE => {
                match frame.decode::<OpenExtendedMiningChannelSuccess>() {
                    Ok(m) => self.on_opened(
                        m.request_id,
                        m.channel_id,
                        m.group_channel_id,
                        move |r, c| OpenExtendedMiningChannelSuccess {
                            request_id: r,
                            channel_id: c,
                            group_channel_id: DOWNSTREAM_GROUP_ID,
                            ..m
                        },
                    ),
                    Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
                }
            }
            OpenMiningChannelError::MSG_TYPE => match frame.decode::<OpenMiningChannelError>() {
                Ok(mut m) => {
                    let Some(refused) = self.map.fail_open(m.request_id) else {
                        return;
                    };
                    let conn = refused.conn;
                    m.request_id = refused.downstream_request_id;
                    if let Ok(reply) = Frame::from_message(&m, &self.shared.pool) {
                        self.deliver(conn, ToDownstream::Refused { reply });
                    }
                }
                Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
            },
            SetGroupChannel::MSG_TYPE => match frame.decode::<SetGroupChannel>() {
                Ok(m) => self.map.set_group(m.group_channel_id, m.channel_ids.iter()),
                Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
            },
            _ => Counters::add(&counters.frames_dropped, 1),
        }
    }

    /// A miner's queue is full: it does not read. Disconnect it.
    fn deliver_failed(&mut self, conn: ConnId) {
        tracing::debug!(
            "downstream #{conn}: not reading ({} frames queued), disconnected",
            self.shared.config.downstream_queue
        );
        self.drop_connection(conn);
    }

    /// The pool opened a channel: record the route and answer the miner with `reply`
    /// built from (downstream request id, downstream channel id).
    fn on_opened<M: Frameable>(
        &mut self,
        upstream_request: u32,
        upstream_channel: u32,
        upstream_group: u32,
        reply: impl FnOnce(u32, u32) -> M,
    ) {
        let Some(opened) =
            self.map
                .complete_open(upstream_request, upstream_channel, upstream_group)
        else {
            // Nobody waits for this channel any more.
            self.close_upstream(upstream_channel);
            return;
        };
        let (conn, downstream_channel) = (opened.conn, opened.downstream_channel_id);
        let msg = reply(opened.downstream_request_id, downstream_channel);
        Counters::add(&self.shared.counters.channels_opened, 1);
        let open = self.map.channel_count() as u64;
        self.shared.counters.channels_open.store(open, Relaxed);
        match Frame::from_message(&msg, &self.shared.pool) {
            Ok(reply) => self.deliver(
                conn,
                ToDownstream::Opened {
                    downstream_channel,
                    upstream_channel,
                    reply,
                },
            ),
            Err(e) => tracing::debug!("downstream #{conn}: cannot answer open request: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::messages::SubmitSharesStandard;
    use tokio_util::bytes::BytesMut;
    use tokio_util::codec::{Decoder, Encoder};

    #[test]
    fn forwarded_frames_reach_the_wire_intact_but_for_the_channel_id() {
        let pool = BufferPool::new(4, 256).unwrap();
        let share = SubmitSharesStandard {
            channel_id: 7,
            sequence_number: 9,
            job_id: 3,
            nonce: 0xdead_beef,
            ntime: 1_700_000_000,
            version: 0x2000_0000,
        };
        let frame = Frame::from_message(&share, &pool).unwrap();
        let h = frame.header();
        // A channel message of an unknown extension, and a payload too short for a
        // channel id.
        let unknown = [7, 0, 0, 0, 1, 2, 3];
        let mut forwarded = Forwarded::default();
        assert!(forwarded.push(h.wire_extension_type(), h.msg_type(), 42, frame.payload()));
        assert!(forwarded.push(0x8000 | 0x4001, 5, 43, &unknown));
        assert!(!forwarded.push(0x8000 | 0x4001, 5, 43, &unknown[..3]));
        assert_eq!(forwarded.frames, 2);

        let mut codec = FrameCodec::new(pool.clone());
        let mut wire = BytesMut::new();
        codec
            .encode(Upward::Forwarded(forwarded), &mut wire)
            .unwrap();
        let first = codec.decode(&mut wire).unwrap().unwrap();
        assert_eq!(
            first.decode::<SubmitSharesStandard>().unwrap(),
            SubmitSharesStandard {
                channel_id: 42,
                ..share
            }
        );
        let second = codec.decode(&mut wire).unwrap().unwrap();
        assert_eq!(
            (
                second.header().wire_extension_type(),
                second.header().msg_type()
            ),
            (0x8000 | 0x4001, 5)
        );
        assert_eq!(second.payload(), [43, 0, 0, 0, 1, 2, 3]);
        assert!(wire.is_empty());
    }

    /// A sink that records how many frames each flush carried.
    struct Flushes {
        pending: usize,
        flushed: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Sink<Upward> for Flushes {
        type Error = CodecError;

        fn poll_ready(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn start_send(mut self: std::pin::Pin<&mut Self>, item: Upward) -> Result<(), CodecError> {
            self.pending += match item {
                Upward::Frame(_) => 1,
                Upward::Forwarded(f) => f.frames,
            };
            Ok(())
        }

        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            let n = std::mem::take(&mut self.pending);
            if n > 0 {
                self.flushed.lock().unwrap().push(n);
            }
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_close(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            self.poll_flush(cx)
        }
    }

    /// Miners whose reads become ready while the writer has a batch join it: the writer,
    /// woken by the first read, yields before it flushes, and the runtime polls its
    /// sockets meanwhile. A read that comes after that write gets a write of its own.
    #[test]
    fn reads_ready_at_the_next_poll_share_the_upstream_write() {
        use std::io::Write;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let flushed = Arc::new(std::sync::Mutex::new(Vec::new()));
        runtime.block_on(async {
            let (data_tx, data) = mpsc::channel(16);
            let (control_tx, control) = mpsc::unbounded_channel();
            let (router, _router_rx) = mpsc::unbounded_channel();
            let shared = Arc::new(Shared::for_tests());
            let sink = Flushes {
                pending: 0,
                flushed: flushed.clone(),
            };
            let writer = tokio::spawn(write_upstream(sink, data, control, shared, router, 0));
            let read = |channel| {
                let mut f = Forwarded::default();
                assert!(f.push(0, 0x1a, channel, &[0; 24]));
                f
            };
            // Two miners waiting for their sockets, as the proxy's do.
            let mut peers = Vec::new();
            let mut miners = Vec::new();
            for i in 1..=2u32 {
                let (mine, peer) = std::os::unix::net::UnixStream::pair().unwrap();
                mine.set_nonblocking(true).unwrap();
                let mine = tokio::net::UnixStream::from_std(mine).unwrap();
                let (tx, f) = (data_tx.clone(), read(i));
                miners.push(tokio::spawn(async move {
                    mine.readable().await.unwrap();
                    tx.send(f).await.is_ok()
                }));
                peers.push(peer);
            }
            tokio::task::yield_now().await;
            // Their data arrives as a third miner's read reaches the writer.
            for peer in &mut peers {
                peer.write_all(b"x").unwrap();
            }
            data_tx.send(read(0)).await.unwrap();
            for m in miners {
                assert!(m.await.unwrap());
            }
            while flushed.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
            data_tx.send(read(9)).await.unwrap();
            drop((data_tx, control_tx));
            writer.await.unwrap();
        });
        assert_eq!(*flushed.lock().unwrap(), [3, 1]);
    }
}
