//! An in-process mock pool: enough of a Stratum V2 pool server to drive the proxy demo.
//!
//! It answers `SetupConnection` (Mining), opens standard channels (fresh channel ids
//! from 1000 up, so that the proxy's id rewriting is visible), sends each new channel a
//! future `NewMiningJob`, the `SetNewPrevHash` that activates it and a `SetTarget`, sends
//! every channel a new job every [`MockPoolConfig::job_interval`], and answers shares:
//! a share on a known channel for one of the channel's recent jobs is accepted, anything
//! else gets `SubmitShares.Error`. Accepted shares are acknowledged in batches: one
//! `SubmitShares.Success` per [`MockPoolConfig::success_batch`] shares of a channel, and
//! one for the rest whenever the pool has read everything that arrived. No proof of work
//! is checked (the miners are simulated).
//!
//! The pool speaks owned messages: `Framed<_, Sv2Codec<Message>>`, inside a `NoiseCodec`
//! when [`MockPoolConfig::noise`] is set (every connection must then start with the Noise
//! NX handshake). Every count in [`MockPoolStats`] is exact, so a test can compare it
//! with what the miners saw.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use futures::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    Message, NewMiningJob, OpenMiningChannelError, OpenStandardMiningChannelSuccess,
    SetNewPrevHash, SetTarget, SetupConnectionError, SetupConnectionSuccess, SubmitSharesError,
    SubmitSharesStandard, SubmitSharesSuccess,
};
use sv2c_binary::{B032, Protocol, Str0255, U256};
use sv2c_codec::noise;

use crate::identity::NoiseIdentity;
use sv2c_channels::codes;
use sv2c_channels::extensions::{Negotiated, negotiate};
use sv2c_codec::{CodecError, Sv2Codec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::codec::Framed;

/// Header version of every job.
pub const JOB_VERSION: u32 = 0x2000_0000;
/// `min_ntime` of the first prev-hash.
pub const FIRST_NTIME: u32 = 0x6650_0000;
/// Jobs of a channel that shares may still name.
const RECENT_JOBS: usize = 8;
/// Time a client has to send its first Noise handshake message.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of a [`MockPool`].
#[derive(Debug, Clone)]
pub struct MockPoolConfig {
    /// A `SubmitShares.Success` goes out after this many accepted shares of a channel
    /// (and whenever the pool has caught up with its input).
    pub success_batch: u32,
    /// Every channel gets a new job this often.
    pub job_interval: Duration,
    /// The first channel id handed out.
    pub first_channel_id: u32,
    /// `Some`: every connection is encrypted, the pool answering the Noise NX handshake
    /// with this identity (its static key and the certificate its authority signed).
    /// `None` (the default): plain TCP.
    pub noise: Option<Arc<NoiseIdentity>>,
}

impl Default for MockPoolConfig {
    fn default() -> Self {
        MockPoolConfig {
            success_batch: 64,
            job_interval: Duration::from_secs(1),
            first_channel_id: 1000,
            noise: None,
        }
    }
}

/// The mock pool's counters ([`MockPool::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MockPoolStats {
    /// Connections accepted (the proxy's).
    pub connections: u64,
    /// Noise handshakes completed (0 unless [`MockPoolConfig::noise`] is set).
    pub noise_handshakes: u64,
    /// Channels opened.
    pub channels_opened: u64,
    /// Channels closed by the client (`CloseChannel`).
    pub channels_closed: u64,
    /// Shares accepted.
    pub shares_accepted: u64,
    /// Shares rejected with `SubmitShares.Error`.
    pub shares_rejected: u64,
    /// Sum of `new_submits_accepted_count` over the `SubmitShares.Success` sent.
    pub shares_acknowledged: u64,
    /// `SubmitShares.Success` messages sent.
    pub success_messages: u64,
    /// `NewMiningJob` messages sent.
    pub jobs_sent: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    noise_handshakes: AtomicU64,
    channels_opened: AtomicU64,
    channels_closed: AtomicU64,
    shares_accepted: AtomicU64,
    shares_rejected: AtomicU64,
    shares_acknowledged: AtomicU64,
    success_messages: AtomicU64,
    jobs_sent: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    config: MockPoolConfig,
    counters: Counters,
    next_id: AtomicU32,
}

/// A running mock pool (see the [module docs](self)).
#[derive(Debug)]
pub struct MockPool {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl MockPool {
    /// Listens on `addr` and serves every connection until [`shutdown`](Self::shutdown).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(addr: impl ToSocketAddrs, config: MockPoolConfig) -> io::Result<MockPool> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            next_id: AtomicU32::new(config.first_channel_id),
            config,
            counters: Counters::default(),
        });
        let (shutdown, mut stop) = watch::channel(false);
        let task = tokio::spawn({
            let shared = shared.clone();
            async move {
                let mut connections = JoinSet::new();
                loop {
                    tokio::select! {
                        _ = stop.changed() => break,
                        Some(_) = connections.join_next(), if !connections.is_empty() => {}
                        accepted = listener.accept() => match accepted {
                            Ok((tcp, peer)) => {
                                let _ = tcp.set_nodelay(true);
                                let shared = shared.clone();
                                connections.spawn(async move {
                                    if let Err(e) = serve(tcp, shared).await {
                                        tracing::debug!("{peer}: {e}");
                                    }
                                });
                            }
                            Err(e) => {
                                tracing::warn!("accept failed: {e}");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        },
                    }
                }
                connections.shutdown().await;
            }
        });
        Ok(MockPool {
            addr,
            shared,
            shutdown,
            task,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters now.
    pub fn stats(&self) -> MockPoolStats {
        let c = &self.shared.counters;
        MockPoolStats {
            connections: c.connections.load(Relaxed),
            noise_handshakes: c.noise_handshakes.load(Relaxed),
            channels_opened: c.channels_opened.load(Relaxed),
            channels_closed: c.channels_closed.load(Relaxed),
            shares_accepted: c.shares_accepted.load(Relaxed),
            shares_rejected: c.shares_rejected.load(Relaxed),
            shares_acknowledged: c.shares_acknowledged.load(Relaxed),
            success_messages: c.success_messages.load(Relaxed),
            jobs_sent: c.jobs_sent.load(Relaxed),
        }
    }

    /// Stops listening, closes every connection and waits for its tasks.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// One channel's state.
#[derive(Debug)]
struct Channel {
    recent_jobs: VecDeque<u32>,
    next_job: u32,
    ntime: u32,
    unacknowledged: u32,
    last_sequence_number: u32,
}

impl Channel {
    fn new_job(&mut self) -> u32 {
        let id = self.next_job;
        self.next_job = self.next_job.wrapping_add(1);
        if self.recent_jobs.len() == RECENT_JOBS {
            self.recent_jobs.pop_front();
        }
        self.recent_jobs.push_back(id);
        id
    }
}

/// A share target of difficulty 1 in Sv2's little-endian U256 layout (informational:
/// nothing checks proof of work here).
fn target() -> U256 {
    let mut t = [0u8; 32];
    t[26..28].copy_from_slice(&[0xff, 0xff]);
    U256(t)
}

/// A merkle root that differs per channel and job.
fn merkle_root(channel: u32, job: u32) -> U256 {
    let mut r = [0u8; 32];
    r[..4].copy_from_slice(&channel.to_le_bytes());
    r[4..8].copy_from_slice(&job.to_le_bytes());
    r[8..].fill(0x5a);
    U256(r)
}

/// Serves one connection (a proxy or a miner) until it closes, after the Noise
/// handshake if the pool is configured with one.
async fn serve<S>(stream: S, shared: Arc<Shared>) -> Result<(), CodecError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(responder) = shared.config.noise.as_ref().map(|n| n.responder()) else {
        return serve_on(Framed::new(stream, Sv2Codec::<Message>::new()), shared).await;
    };
    let handshake = noise::accept(stream, &responder, Sv2Codec::<Message>::new());
    let framed = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no Noise handshake in time"))??;
    Counters::bump(&shared.counters.noise_handshakes, 1);
    serve_on(framed, shared).await
}

/// Serves one connection on its (plain or encrypted) transport until it closes.
async fn serve_on<F>(framed: F, shared: Arc<Shared>) -> Result<(), CodecError>
where
    F: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    let mut conn = Connection {
        framed,
        shared: shared.clone(),
        channels: HashMap::new(),
        group_id: shared.next_id.fetch_add(1, Relaxed),
    };
    Counters::bump(&shared.counters.connections, 1);
    if !conn.setup().await? {
        return Ok(());
    }
    let mut jobs = tokio::time::interval_at(
        tokio::time::Instant::now() + shared.config.job_interval,
        shared.config.job_interval,
    );
    loop {
        tokio::select! {
            item = conn.framed.next() => {
                let Some(msg) = item else { return Ok(()) };
                conn.on_message(msg?).await?;
                // Take everything that already arrived before answering in bulk.
                for _ in 0..4096 {
                    match conn.framed.next().now_or_never() {
                        Some(Some(msg)) => conn.on_message(msg?).await?,
                        Some(None) => {
                            conn.acknowledge_all().await?;
                            SinkExt::<Message>::flush(&mut conn.framed).await?;
                            return Ok(());
                        }
                        None => break,
                    }
                }
                conn.acknowledge_all().await?;
                SinkExt::<Message>::flush(&mut conn.framed).await?;
            }
            _ = jobs.tick() => {
                conn.new_jobs().await?;
                SinkExt::<Message>::flush(&mut conn.framed).await?;
            }
        }
    }
}

impl Counters {
    fn bump(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

struct Connection<F> {
    framed: F,
    shared: Arc<Shared>,
    channels: HashMap<u32, Channel>,
    group_id: u32,
}

impl<F> Connection<F>
where
    F: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    /// Queues a message (written at the next flush).
    async fn feed(&mut self, msg: impl Into<Message>) -> Result<(), CodecError> {
        self.framed.feed(msg.into()).await
    }

    /// Answers `SetupConnection`. `Ok(false)`: closed or refused.
    async fn setup(&mut self) -> Result<bool, CodecError> {
        match self.framed.next().await.transpose()? {
            Some(Message::SetupConnection(s)) if s.protocol == Protocol::Mining => {
                self.framed
                    .send(
                        SetupConnectionSuccess {
                            used_version: 2,
                            flags: 0,
                        }
                        .into(),
                    )
                    .await?;
                Ok(true)
            }
            Some(Message::SetupConnection(_)) => {
                self.framed
                    .send(
                        SetupConnectionError {
                            flags: 0,
                            error_code: Str0255::from_static_str(codes::UNSUPPORTED_PROTOCOL)
                                .unwrap_or_default(),
                        }
                        .into(),
                    )
                    .await?;
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    async fn on_message(&mut self, msg: Message) -> Result<(), CodecError> {
        match msg {
            Message::SubmitSharesStandard(share) => self.on_share(share).await?,
            Message::OpenStandardMiningChannel(open) => {
                let channel_id = self.shared.next_id.fetch_add(1, Relaxed);
                let mut channel = Channel {
                    recent_jobs: VecDeque::with_capacity(RECENT_JOBS),
                    next_job: 1,
                    ntime: FIRST_NTIME,
                    unacknowledged: 0,
                    last_sequence_number: 0,
                };
                let job_id = channel.new_job();
                self.channels.insert(channel_id, channel);
                Counters::bump(&self.shared.counters.channels_opened, 1);
                self.feed(OpenStandardMiningChannelSuccess {
                    request_id: open.request_id,
                    channel_id,
                    target: target(),
                    extranonce_prefix: B032::try_from(channel_id.to_le_bytes()).unwrap_or_default(),
                    group_channel_id: self.group_id,
                })
                .await?;
                // A future job, the prev-hash that activates it, the channel's target.
                self.feed(NewMiningJob {
                    channel_id,
                    job_id,
                    min_ntime: None,
                    version: JOB_VERSION,
                    merkle_root: merkle_root(channel_id, job_id),
                })
                .await?;
                Counters::bump(&self.shared.counters.jobs_sent, 1);
                self.feed(SetNewPrevHash {
                    channel_id,
                    job_id,
                    prev_hash: U256([0x11; 32]),
                    min_ntime: FIRST_NTIME,
                    nbits: 0x1703_0ecd,
                })
                .await?;
                self.feed(SetTarget {
                    channel_id,
                    maximum_target: target(),
                })
                .await?;
            }
            Message::OpenExtendedMiningChannel(open) => {
                self.feed(OpenMiningChannelError {
                    request_id: open.request_id,
                    error_code: Str0255::from_static_str("extended-channels-not-supported")
                        .unwrap_or_default(),
                })
                .await?;
            }
            Message::SubmitSharesExtended(share) => {
                self.reject(
                    share.channel_id,
                    share.sequence_number,
                    codes::INVALID_CHANNEL_ID,
                )
                .await?;
            }
            Message::RequestExtensions(request) => {
                // It supports none: the proxy then carries on without waiting.
                match negotiate(&request, &[], &[]) {
                    Negotiated::Success(success) => self.feed(success).await?,
                    Negotiated::Error { error, .. } => self.feed(error).await?,
                }
            }
            Message::CloseChannel(close) => {
                if let Some(mut channel) = self.channels.remove(&close.channel_id) {
                    // Acknowledge what was accepted before the close.
                    self.acknowledge(close.channel_id, &mut channel).await?;
                    Counters::bump(&self.shared.counters.channels_closed, 1);
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn on_share(&mut self, share: SubmitSharesStandard) -> Result<(), CodecError> {
        let batch = self.shared.config.success_batch.max(1);
        let Some(channel) = self.channels.get_mut(&share.channel_id) else {
            return self
                .reject(
                    share.channel_id,
                    share.sequence_number,
                    codes::INVALID_CHANNEL_ID,
                )
                .await;
        };
        if !channel.recent_jobs.contains(&share.job_id) {
            return self
                .reject(
                    share.channel_id,
                    share.sequence_number,
                    codes::INVALID_JOB_ID,
                )
                .await;
        }
        channel.unacknowledged += 1;
        channel.last_sequence_number = share.sequence_number;
        Counters::bump(&self.shared.counters.shares_accepted, 1);
        if channel.unacknowledged >= batch {
            let msg = Self::success(share.channel_id, channel);
            self.send_success(msg).await?;
        }
        Ok(())
    }

    fn success(channel_id: u32, channel: &mut Channel) -> SubmitSharesSuccess {
        let count = std::mem::take(&mut channel.unacknowledged);
        SubmitSharesSuccess {
            channel_id,
            last_sequence_number: channel.last_sequence_number,
            new_submits_accepted_count: count,
            // Every share counts as difficulty 1 here.
            new_shares_sum: u64::from(count),
        }
    }

    async fn send_success(&mut self, msg: SubmitSharesSuccess) -> Result<(), CodecError> {
        let c = &self.shared.counters;
        Counters::bump(&c.success_messages, 1);
        Counters::bump(
            &c.shares_acknowledged,
            u64::from(msg.new_submits_accepted_count),
        );
        self.feed(msg).await
    }

    async fn acknowledge(
        &mut self,
        channel_id: u32,
        channel: &mut Channel,
    ) -> Result<(), CodecError> {
        if channel.unacknowledged > 0 {
            let msg = Self::success(channel_id, channel);
            self.send_success(msg).await?;
        }
        Ok(())
    }

    /// One `SubmitShares.Success` per channel with unacknowledged shares.
    async fn acknowledge_all(&mut self) -> Result<(), CodecError> {
        let pending: Vec<SubmitSharesSuccess> = self
            .channels
            .iter_mut()
            .filter(|(_, c)| c.unacknowledged > 0)
            .map(|(&id, c)| Self::success(id, c))
            .collect();
        for msg in pending {
            self.send_success(msg).await?;
        }
        Ok(())
    }

    async fn reject(
        &mut self,
        channel_id: u32,
        sequence_number: u32,
        code: &'static str,
    ) -> Result<(), CodecError> {
        Counters::bump(&self.shared.counters.shares_rejected, 1);
        self.feed(SubmitSharesError {
            channel_id,
            sequence_number,
            error_code: Str0255::from_static_str(code).unwrap_or_default(),
        })
        .await
    }

    /// A new job (active at once: `min_ntime` set) for every channel.
    async fn new_jobs(&mut self) -> Result<(), CodecError> {
        let jobs: Vec<NewMiningJob> = self
            .channels
            .iter_mut()
            .map(|(&channel_id, c)| {
                let job_id = c.new_job();
                c.ntime = c.ntime.wrapping_add(1);
                NewMiningJob {
                    channel_id,
                    job_id,
                    min_ntime: Some(c.ntime),
                    version: JOB_VERSION,
                    merkle_root: merkle_root(channel_id, job_id),
                }
            })
            .collect();
        for job in jobs {
            Counters::bump(&self.shared.counters.jobs_sent, 1);
            self.feed(job).await?;
        }
        Ok(())
    }
}
