//! One connection of the pool: the Noise handshake, `SetupConnection`, then the loop that
//! reads batches of messages (shares are checked as they are read: [`super::shares`]) and
//! follows the pool's broadcast (new work, timer ticks, shutdown), and the handlers of
//! the messages that are not shares. What the channels decide is in
//! [`super::channel`]; the jobs a connection sends are in [`super::jobs`].
//!
//! An idle connection's memory is its task: the rare steps (the handshake, the setup,
//! answering, jobs) are boxed while they run, so the task keeps only the state of what it
//! waits on between them.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use futures::{Sink, SinkExt, Stream};
use sv2c_binary::Str0255;
use sv2c_binary::messages::{
    Message, MessageRef, OpenMiningChannelError, Reconnect, RequestExtensions, UpdateChannel,
    UpdateChannelError,
};
use sv2c_binary::tlv::TlvTailBuf;
use sv2c_channels::acks::Acks;
use sv2c_channels::codes::INVALID_CHANNEL_ID;
use sv2c_channels::extensions::{Negotiated, WORKER_SPECIFIC_HASHRATE_TRACKING, negotiate};
use sv2c_channels::tailed::{Tailed, TailedRef};
use sv2c_codec::{BatchDecoder, BatchRead, CodecError, Sv2Codec, noise, read_batch};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::codec::Framed;

use super::channel::{self, Channels, Opened};
use super::shares::{self, Inbox, ShareFields, Tally};
use super::state::{Shared, bump};
use super::template::{Broadcast, Work};
use crate::identity::NoiseIdentity;
use crate::setup::{MiningSuccessFlags, answer_mining_setup};

/// Extensions the pool supports (and none it requires).
const SUPPORTED_EXTENSIONS: &[u16] = &[WORKER_SPECIFIC_HASHRATE_TRACKING];
/// The flags of the pool's `SetupConnection.Success`: it requires nothing (version
/// rolling allowed, standard and extended channels served).
const SUCCESS_FLAGS: MiningSuccessFlags = MiningSuccessFlags::empty();

/// Serves one accepted connection until it ends (Noise first, with
/// [`PoolConfig::noise`](super::PoolConfig::noise)).
pub(super) async fn serve<S>(stream: S, shared: Arc<Shared>) -> Result<(), CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let codec = Sv2Codec::for_set().with_max_payload_len(shared.config.max_payload_len);
    let Some(identity) = shared.config.noise.clone() else {
        let framed = Framed::new(stream, codec);
        return serve_on(std::future::ready(Ok(framed)), shared).await;
    };
    let handshake = Box::pin(handshake(stream, identity, codec, shared.clone()));
    serve_on(handshake, shared).await
}

/// The Noise handshake (boxed, as are the connection's other rare steps: the task keeps
/// only the state of what it waits on between them, a connection's memory while idle).
async fn handshake<S>(
    stream: S,
    identity: Arc<NoiseIdentity>,
    codec: Sv2Codec<Tailed<Message>>,
    shared: Arc<Shared>,
) -> Result<Framed<S, noise::NoiseCodec<Sv2Codec<Tailed<Message>>>>, CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let responder = identity.responder();
    let handshake = noise::accept_with(stream, &responder, codec, || identity.ephemeral_key());
    match tokio::time::timeout(shared.config.setup_timeout, handshake).await {
        Ok(Ok(framed)) => Ok(framed),
        Ok(Err(e)) => {
            bump(&shared.counters.handshake_failures);
            Err(e)
        }
        Err(_) => {
            bump(&shared.counters.handshake_failures);
            let e = io::Error::new(io::ErrorKind::TimedOut, "no Noise handshake in time");
            Err(e.into())
        }
    }
}

/// One connection: its framed transport, its channels, and what it last saw of the
/// pool's broadcast.
pub(super) struct Connection<F> {
    pub(super) framed: F,
    pub(super) shared: Arc<Shared>,
    pub(super) channels: Channels,
    pub(super) group_id: u32,
    /// The work the channels' jobs were built on (`None`: none yet).
    pub(super) work: Option<Arc<Work>>,
    /// The job timer's tick it last saw.
    pub(super) ticks: u64,
    /// Whether 0x0002 was negotiated (the `user_identity` TLV is read).
    pub(super) worker_tlv: bool,
    /// Accepted shares not yet added to the pool's counters and ledger.
    pub(super) tally: Tally,
    /// A frame was unfinished at the last job tick, and none has been completed since.
    pub(super) unfinished_at_tick: bool,
}

impl<F> Connection<F> {
    /// A connection, and where the pool announces the next work and timer tick to it (and
    /// its shutdown), subscribed before the work is read so no change falls between.
    pub(super) fn new(framed: F, shared: Arc<Shared>) -> (Self, watch::Receiver<Broadcast>) {
        let group_id = shared.next_id.fetch_add(1, Relaxed);
        let broadcast = shared.broadcast.subscribe();
        let (work, ticks) = {
            let now = broadcast.borrow();
            (now.work.clone(), now.ticks)
        };
        let conn = Connection {
            framed,
            channels: HashMap::new(),
            group_id,
            work,
            ticks,
            shared,
            worker_tlv: false,
            tally: Tally::default(),
            unfinished_at_tick: false,
        };
        (conn, broadcast)
    }

    /// Adds the accepted shares counted since the last call to the pool's counter, and
    /// those its channels counted for their own `user_identity` to the pool's ledger,
    /// under one lock. Called after every batch of shares, before anything else can
    /// change a channel's target, so their work is that of the channel's target now.
    pub(super) fn record_workers(&mut self) {
        let accepted = core::mem::take(&mut self.tally.accepted);
        if accepted > 0 {
            let counter = &self.shared.counters.shares_accepted;
            counter.fetch_add(accepted, Relaxed);
        }
        if self.tally.channels.is_empty() {
            return;
        }
        let now = self.shared.now_secs();
        let mut ledger = self
            .shared
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Taken, not drained: a connection keeps no vector between batches.
        for id in core::mem::take(&mut self.tally.channels) {
            if let Some(c) = self.channels.get_mut(&id) {
                let n = core::mem::take(&mut c.unrecorded);
                let work = n as f64 * sv2c_channels::pow::expected_hashes(c.inner.target());
                ledger.record(&c.user_identity, n, work, now);
            }
        }
    }
}

impl<F> Drop for Connection<F> {
    fn drop(&mut self) {
        self.record_workers();
        channel::close_all(&self.channels, &self.shared);
    }
}

/// What a connection's `Framed` is: plaintext or Noise around `Sv2Codec<Tailed<Message>>`
/// (messages with their TLV tails, for extension 0x0002).
pub(super) trait Conn:
    Stream<Item = Result<Tailed<Message>, CodecError>>
    + Sink<Message, Error = CodecError>
    + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = TailedRef<'a, MessageRef<'a>>>>
    + Unpin
{
}

impl<F> Conn for F where
    F: Stream<Item = Result<Tailed<Message>, CodecError>>
        + Sink<Message, Error = CodecError>
        + BatchRead<Decoder: for<'a> BatchDecoder<Item<'a> = TailedRef<'a, MessageRef<'a>>>>
        + Unpin
{
}

/// Serves the connection `framed` resolves to (after the handshake, if any).
async fn serve_on<F: Conn>(
    framed: impl Future<Output = Result<F, CodecError>>,
    shared: Arc<Shared>,
) -> Result<(), CodecError> {
    // Built in one statement, so that the task keeps no slot for the `Framed` beside the
    // `Connection` for the connection's life.
    let (mut conn, broadcast) = Connection::new(framed.await?, shared);
    // The buffers `Framed::new` made are given back before the first `.await`, so a
    // handshake storm does not hold them all at once: every read goes through
    // `read_batch` (the thread's scratch buffer), every write allocates what it needs.
    conn.framed.release_buffers();
    if !Box::pin(conn.setup()).await? {
        return Ok(());
    }
    if broadcast.borrow().stopping {
        // The pool stopped while this connection was being set up.
        return Box::pin(conn.reconnect()).await;
    }
    let mut inbox = Inbox::default();
    let write_timeout = conn.shared.config.write_timeout;
    // Waits across batches: a batch of shares does not take the connection off the pool's
    // list of waiters and put it back (a lock shared by every connection).
    let mut changed = std::pin::pin!(next_broadcast(broadcast));
    loop {
        let mut received = 0;
        tokio::select! {
            read = read_batch(&mut conn.framed, |m| {
                received += 1;
                let channels = (&mut conn.channels, &mut conn.tally);
                inbox.take(m, &conn.shared, channels, conn.worker_tlv);
            }) => {
                if !conn.batch_read(read, received)? {
                    return Ok(());
                }
                // Boxed, as the rare steps are: the timer's state would otherwise add
                // to every idle connection's task.
                Box::pin(crate::in_time(write_timeout, conn.answer(&mut inbox))).await?;
            }
            (broadcast, now) = &mut changed => {
                let Some(now) = now else {
                    return Ok(()); // the pool is gone
                };
                changed.set(next_broadcast(broadcast));
                if now.stopping {
                    return Box::pin(conn.reconnect()).await;
                }
                conn.check_unfinished(&now)?;
                Box::pin(crate::in_time(write_timeout, conn.tick(now))).await?;
            }
        }
        // Everything was written: an idle connection keeps no write buffer (and
        // `read_batch` left no read buffer).
        conn.framed.release_buffers();
    }
}

/// The next change of what the pool broadcasts (`None`: the pool is gone), with the
/// receiver given back. Owning its receiver, the future can outlive one turn of the
/// connection's loop.
async fn next_broadcast(
    mut broadcast: watch::Receiver<Broadcast>,
) -> (watch::Receiver<Broadcast>, Option<Broadcast>) {
    let now = match broadcast.changed().await {
        Ok(()) => Some(broadcast.borrow_and_update().clone()),
        Err(_) => None,
    };
    (broadcast, now)
}

impl<F: BatchRead> Connection<F> {
    /// A batch of `received` frames was read (its shares checked): counted, and whether
    /// it is to be answered (`false`: the peer closed the connection).
    ///
    /// # Errors
    /// The read failed for good (the bytes cannot be trusted any more).
    fn batch_read(
        &mut self,
        read: Result<Option<usize>, CodecError>,
        received: u64,
    ) -> Result<bool, CodecError> {
        let frames = &self.shared.counters.frames_received;
        frames.fetch_add(received, Relaxed);
        // Counted before any answer is sent.
        self.record_workers();
        let read = match read {
            Ok(read) => read,
            // A frame that does not decode (its bytes consumed) is dropped and costs
            // nothing else: the messages before it are answered, and the connection
            // carries on.
            Err(e) if e.is_recoverable() => {
                tracing::debug!("a frame that does not decode, dropped: {e}");
                Some(0)
            }
            Err(e) => return Err(e),
        };
        if read.is_none() {
            return Ok(false);
        }
        self.unfinished_at_tick = false;
        Ok(true)
    }

    /// On a job tick: a frame unfinished at this tick and the last, none completed
    /// between, closes the connection.
    ///
    /// # Errors
    /// `TimedOut`: such a frame.
    fn check_unfinished(&mut self, now: &Broadcast) -> Result<(), CodecError> {
        if now.ticks == self.ticks {
            return Ok(());
        }
        let unfinished = self.framed.partial_frame_len() > 0;
        if unfinished && self.unfinished_at_tick {
            let why = "a frame unfinished for a job interval";
            return Err(io::Error::new(io::ErrorKind::TimedOut, why).into());
        }
        self.unfinished_at_tick = unfinished;
        Ok(())
    }
}

impl<F: Conn> Connection<F> {
    /// Reads the first batch, which must start with `SetupConnection` (Mining), answers
    /// it, and handles the rest of the batch. `Ok(false)`: the connection is over (closed,
    /// or refused).
    async fn setup(&mut self) -> Result<bool, CodecError> {
        let mut queued = Vec::new();
        let mut first = None;
        let read = read_batch(&mut self.framed, |m| {
            let owned = Tailed {
                message: m.message.to_owned_value(),
                tail: TlvTailBuf::copy_from_slice(m.tail.as_bytes()),
            };
            match first {
                None => first = Some(owned.message),
                Some(_) => queued.push(owned),
            }
        });
        let read = tokio::time::timeout(self.shared.config.setup_timeout, read)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no SetupConnection in time"))?;
        if read?.is_none() {
            return Ok(false);
        }
        self.shared
            .counters
            .frames_received
            .fetch_add(1 + queued.len() as u64, Relaxed);
        let Some(Message::SetupConnection(setup)) = first else {
            return Ok(false);
        };
        match answer_mining_setup(&setup, SUCCESS_FLAGS) {
            Ok(success) => {
                self.framed.feed(success.into()).await?;
                bump(&self.shared.counters.connections);
                for msg in queued {
                    self.on_message(msg).await?;
                }
                SinkExt::<Message>::flush(&mut self.framed).await?;
                self.framed.release_buffers();
                Ok(true)
            }
            Err(refusal) => {
                self.framed.send(refusal.into()).await?;
                Ok(false)
            }
        }
    }

    /// Sends a batch's answers, then handles (and answers) the rest of its messages.
    async fn answer(&mut self, inbox: &mut Inbox) -> Result<(), CodecError> {
        // Taken, not drained: a connection keeps no vector between batches.
        for ((), answer) in core::mem::take(&mut inbox.acks).drain() {
            self.framed.feed(answer.into()).await?;
        }
        for msg in std::mem::take(&mut inbox.queued) {
            Box::pin(self.on_message(msg)).await?;
        }
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    /// Handles a message that is not a share checked as it was read: queued behind
    /// another message in its batch, or a control message.
    async fn on_message(&mut self, msg: Tailed<Message>) -> Result<(), CodecError> {
        let Tailed { message: msg, tail } = msg;
        match msg {
            Message::RequestExtensions(request) => self.on_request_extensions(&request).await,
            Message::OpenStandardMiningChannel(open) => {
                let opened =
                    channel::open_standard(&self.shared, self.channels.len(), &open, self.group_id);
                self.open(open.request_id, opened).await
            }
            Message::OpenExtendedMiningChannel(open) => {
                let opened =
                    channel::open_extended(&self.shared, self.channels.len(), &open, self.group_id);
                self.open(open.request_id, opened).await
            }
            Message::UpdateChannel(update) => self.update_channel(&update).await,
            Message::SetupConnection(_) => {
                let e = io::Error::new(io::ErrorKind::InvalidData, "a second SetupConnection");
                Err(e.into())
            }
            Message::SubmitSharesStandard(_) | Message::SubmitSharesExtended(_) => {
                self.on_queued_share(&Tailed { message: msg, tail }).await
            }
            Message::CloseChannel(close) => {
                channel::close(&mut self.channels, close.channel_id, &self.shared);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `RequestExtensions`: answered with what the pool supports (0x0002, which makes
    /// it read the `user_identity` TLV of shares).
    async fn on_request_extensions(
        &mut self,
        request: &RequestExtensions,
    ) -> Result<(), CodecError> {
        let answer = negotiate(request, SUPPORTED_EXTENSIONS, &[]);
        self.worker_tlv = answer.in_use().contains(&WORKER_SPECIFIC_HASHRATE_TRACKING);
        match answer {
            Negotiated::Success(success) => self.framed.feed(success.into()).await,
            Negotiated::Error { error, .. } => self.framed.feed(error.into()).await,
        }
    }

    /// A share queued behind another message of its batch (see [`Inbox`]): checked,
    /// counted and answered now.
    async fn on_queued_share(&mut self, msg: &Tailed<Message>) -> Result<(), CodecError> {
        let m = msg.message.as_ref();
        let Some(share) = ShareFields::of(&m) else {
            return Ok(());
        };
        let tail = self.worker_tlv.then(|| msg.tail.as_tail());
        let mut acks = Acks::new();
        let channels = (&mut self.channels, &mut self.tally);
        shares::answer(&mut acks, &self.shared, channels, share, tail);
        self.record_workers();
        for ((), answer) in acks.drain() {
            self.framed.feed(answer.into()).await?;
        }
        Ok(())
    }

    /// A channel request decided ([`channel::open_standard`], [`channel::open_extended`]):
    /// refused with `OpenMiningChannel.Error`, or the channel registered (in the place
    /// in the pool's budget it took), its `…Success` sent, then a future job and the
    /// prev-hash that activates it.
    async fn open(
        &mut self,
        request_id: u32,
        opened: Result<Opened, &'static str>,
    ) -> Result<(), CodecError> {
        let (channel_id, channel, success) = match opened {
            Ok(opened) => opened,
            Err(code) => {
                let refusal = OpenMiningChannelError {
                    request_id,
                    error_code: Str0255::from_static_str(code).unwrap_or_default(),
                };
                return self.framed.feed(refusal.into()).await;
            }
        };
        bump(&self.shared.counters.channels_opened);
        // Inserted before anything is sent, so that the place it took in the pool's budget
        // is given back with the connection's channels however it ends.
        self.channels.insert(channel_id, channel);
        self.framed.feed(success).await?;
        let template_id = self.send_job(channel_id, true).await?;
        self.send_prev_hash(channel_id, template_id).await?;
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    /// `UpdateChannel` (see the [pool's docs](super) for the answers):
    /// `UpdateChannel.Error` for a channel this connection does not have or a zero
    /// maximum target, `SetTarget` if the channel's target changed ([`Channel::update`]).
    ///
    /// [`Channel::update`]: super::channel::Channel::update
    async fn update_channel(&mut self, update: &UpdateChannel) -> Result<(), CodecError> {
        let answer = match self.channels.get_mut(&update.channel_id) {
            None => Err(INVALID_CHANNEL_ID),
            Some(channel) => channel.update(update, &self.shared),
        };
        match answer {
            Ok(None) => Ok(()),
            Ok(Some(set_target)) => self.framed.feed(set_target.into()).await,
            Err(code) => {
                let refusal = UpdateChannelError {
                    channel_id: update.channel_id,
                    error_code: Str0255::from_static_str(code).unwrap_or_default(),
                };
                self.framed.feed(refusal.into()).await
            }
        }
    }

    /// The pool is shutting down: the miner is told to come back later, to this same
    /// endpoint.
    async fn reconnect(&mut self) -> Result<(), CodecError> {
        let reconnect = Reconnect {
            new_host: Str0255::default(),
            new_port: 0,
        };
        self.framed.send(reconnect.into()).await?;
        bump(&self.shared.counters.reconnects_sent);
        Ok(())
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;
    use crate::pool::PoolConfig;
    use std::time::Duration;

    /// What an idle Noise connection's task holds is mostly this future: the rare steps
    /// (handshake, setup, jobs, non-share messages) are boxed while they run, and nothing
    /// is kept twice (unboxed, it is over 5 KiB); a regression shows here first.
    #[tokio::test]
    async fn an_idle_connection_task_stays_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let config = PoolConfig {
            noise: Some(
                crate::identity::noise_server_identity(Duration::from_secs(60))
                    .unwrap()
                    .1,
            ),
            ..PoolConfig::default()
        };
        let shared = Arc::new(Shared::new(config, None));
        let task = serve(tcp, shared);
        let size = std::mem::size_of_val(&task);
        println!("the connection future is {size} bytes");
        assert!(size <= 1200, "the connection future is {size} bytes");
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use crate::pool::PoolConfig;
    use sv2c_binary::MessageSet;
    use sv2c_binary::messages::{SubmitSharesStandard, encode_frame, frame_parts};

    /// Once a batch is answered, the connection keeps none of its vectors: a miner
    /// between its shares holds what an idle one does (and its channel's state).
    #[tokio::test]
    async fn an_answered_batch_leaves_no_vector_behind() {
        let (ours, mut theirs) = tokio::io::duplex(4096);
        let shared = Arc::new(Shared::new(PoolConfig::default(), None));
        let (mut conn, _broadcast) =
            Connection::new(Framed::new(ours, Sv2Codec::for_set()), shared);
        let share = Message::from(SubmitSharesStandard {
            channel_id: 7, // not open: answered with an error
            ..SubmitSharesStandard::default()
        });
        let frame = encode_frame(&share).unwrap();
        let (extension, msg_type, payload) = frame_parts(&frame).unwrap();
        let m = Tailed::<Message>::decode_message_ref(extension, msg_type, payload).unwrap();
        let mut inbox = Inbox::default();
        let shared = conn.shared.clone();
        inbox.take(&m, &shared, (&mut conn.channels, &mut conn.tally), false);
        inbox.take(&m, &shared, (&mut conn.channels, &mut conn.tally), false);
        assert!(!inbox.acks.is_empty());
        // As an accepted share of a channel leaves it for `record_workers`.
        conn.tally.channels.push(7);
        conn.record_workers();
        conn.answer(&mut inbox).await.unwrap();
        assert!(inbox.acks.is_empty());
        assert_eq!(conn.tally.channels.capacity(), 0);
        // Both answers reached the miner.
        let refusal = encode_frame(&Message::from(sv2c_binary::messages::SubmitSharesError {
            channel_id: 7,
            sequence_number: 0,
            error_code: Str0255::from_static_str("invalid-channel-id").unwrap(),
        }))
        .unwrap();
        let mut sent = vec![0u8; 2 * refusal.len()];
        tokio::io::AsyncReadExt::read_exact(&mut theirs, &mut sent)
            .await
            .unwrap();
        assert_eq!(sent, [&refusal[..], &refusal[..]].concat());
    }
}
