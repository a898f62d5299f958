//! The router: one task that owns the channel map, dispatches the pool's frames to
//! miners and the miners' commands, and moves an aggregating proxy's miners from one pool
//! connection to the next.

mod forward;

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use futures::{Sink, Stream, StreamExt};
use sv2c_binary::messages::{CloseChannel, Reconnect};
use sv2c_binary::{MessageType, Str0255};
use sv2c_codec::{CodecError, Frame};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::aggregate::{Aggregate, Out};
use super::mailbox;
use super::messages::{MinerInput, RouterCmd, ToDownstream, ToUpstream, Upward};
use super::routing::{ChannelMap, ConnId};
use super::shared::{Counters, Shared};
use super::writer::{UpstreamWriter, write_upstream};

/// The reading half of a pool connection, as the router holds it (it swaps it for the
/// next pool's when miners are kept across pools).
pub(crate) type UpstreamReader = Pin<Box<dyn Stream<Item = Result<Frame, CodecError>> + Send>>;

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

    /// A miner connection's command (its queue, an open request, a closed channel, its
    /// end), as the mode handles it.
    fn on_command(&mut self, cmd: RouterCmd) {
        if self.aggregate.is_some() {
            return self.on_aggregate_command(cmd);
        }
        self.on_forward_command(cmd)
    }

    /// [`on_command`](Self::on_command) in aggregating mode.
    fn on_aggregate_command(&mut self, cmd: RouterCmd) {
        match cmd {
            RouterCmd::Register { conn, tx } => self.map.add_connection(conn, tx),
            RouterCmd::Open { conn, request } => {
                self.aggregating(|a, shared, out| a.open(conn, request, shared, out));
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
    }

    /// Runs an aggregating event on the state ([`Aggregate`]) and delivers what it
    /// produced; `None` when not aggregating.
    fn aggregating<R>(
        &mut self,
        event: impl FnOnce(&mut Aggregate, &Shared, &mut Vec<Out>) -> R,
    ) -> Option<R> {
        let aggregate = self.aggregate.as_mut()?;
        let mut out = std::mem::take(&mut self.out);
        let result = event(aggregate, &self.shared, &mut out);
        self.deliver_all(&mut out);
        self.out = out;
        Some(result)
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
        self.aggregating(|a, shared, out| a.detach(shared, out));
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
        let Some(router) = self.router.upgrade().filter(|_| self.aggregate.is_some()) else {
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
        let next = a.aggregate;
        let gone = self.aggregating(|current, shared, out| current.attach(next, shared, out));
        for conn in gone.unwrap_or_default() {
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
        self.aggregating(|a, shared, out| a.on_channel_frames(conn, input, shared, out));
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

    /// Forgets a connection and closes its channels upstream.
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
        if self.aggregate.is_none() {
            self.forward_upstream_frame(frame);
            return true;
        }
        let go_on = self.aggregating(|a, shared, out| a.on_upstream_frame(frame, shared, out));
        go_on.unwrap_or(true)
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

    /// A miner's queue is full: it does not read. Disconnect it.
    fn deliver_failed(&mut self, conn: ConnId) {
        tracing::debug!(
            "downstream #{conn}: not reading ({} frames queued), disconnected",
            self.shared.config.downstream_queue
        );
        self.drop_connection(conn);
    }
}
