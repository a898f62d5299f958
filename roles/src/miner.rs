//! A simulated miner: sets up a connection, opens one standard channel, waits for an
//! active job, then submits `SubmitSharesStandard` as fast as the pool acknowledges them
//! for a fixed time, and reports what it sent and what came back.
//!
//! Shares are pipelined: up to [`MinerConfig::window`] shares are in flight (sent and not
//! yet acknowledged by `SubmitShares.Success` or refused by `SubmitShares.Error`); they
//! are queued with `feed` and written with one `flush`. No hashing is done: the nonces
//! are a counter.
//!
//! The miner speaks owned messages: `Framed<_, Sv2Codec<Message>>`, inside a `NoiseCodec`
//! when [`MinerConfig::noise`] is set.

use std::fmt;
use std::time::Duration;

use futures::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    Message, OpenStandardMiningChannel, SetupConnection, SubmitSharesStandard,
};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator, NoiseError};
use sv2c_codec::{CodecError, Sv2Codec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::codec::Framed;

use crate::proxy::{REQUIRES_STANDARD_JOBS, REQUIRES_VERSION_ROLLING};

/// Settings of one simulated miner.
#[derive(Debug, Clone)]
pub struct MinerConfig {
    /// `user_identity` of the channel.
    pub user: String,
    /// How long to submit shares.
    pub duration: Duration,
    /// Shares in flight at most.
    pub window: u32,
    /// After `duration`, how long to wait for the last acknowledgements.
    pub drain_timeout: Duration,
    /// How long to wait for each setup answer (Noise handshake, connection, channel,
    /// first job).
    pub setup_timeout: Duration,
    /// `Some`: connect with the Noise NX handshake and require a server certificate
    /// signed by this authority key. `None` (the default): plain TCP.
    pub noise: Option<AuthorityPublicKey>,
}

impl Default for MinerConfig {
    fn default() -> Self {
        MinerConfig {
            user: "miner".into(),
            duration: Duration::from_secs(3),
            window: 256,
            drain_timeout: Duration::from_secs(5),
            setup_timeout: Duration::from_secs(5),
            noise: None,
        }
    }
}

/// What one miner did and saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MinerReport {
    /// The `user_identity` it mined as.
    pub user: String,
    /// Its channel id, as the proxy gave it.
    pub channel_id: u32,
    /// Shares sent.
    pub shares_submitted: u64,
    /// Sum of `new_submits_accepted_count` over the `SubmitShares.Success` received.
    pub shares_accepted: u64,
    /// `SubmitShares.Error` received.
    pub shares_rejected: u64,
    /// `SubmitShares.Success` messages received.
    pub success_messages: u64,
    /// `NewMiningJob` received.
    pub jobs: u64,
    /// `SetNewPrevHash` received.
    pub prev_hashes: u64,
    /// `SetTarget` received.
    pub targets: u64,
    /// Channel messages that named a channel id other than this miner's.
    pub misrouted: u64,
    /// Every share was answered before the drain timeout.
    pub complete: bool,
}

/// Why a miner stopped early.
#[derive(Debug)]
#[non_exhaustive]
pub enum MinerError {
    /// The connection failed.
    Codec(CodecError),
    /// The connection closed.
    Closed,
    /// Setup did not finish in time.
    Timeout(&'static str),
    /// The server refused or answered something unexpected.
    Protocol(String),
}

impl fmt::Display for MinerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MinerError::Codec(e) => write!(f, "connection failed: {e}"),
            MinerError::Closed => f.write_str("connection closed by the server"),
            MinerError::Timeout(what) => write!(f, "timed out waiting for {what}"),
            MinerError::Protocol(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for MinerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MinerError::Codec(e) => Some(e),
            _ => None,
        }
    }
}

impl From<NoiseError> for MinerError {
    fn from(e: NoiseError) -> Self {
        MinerError::Codec(e.into())
    }
}

impl From<CodecError> for MinerError {
    fn from(e: CodecError) -> Self {
        MinerError::Codec(e)
    }
}

/// The job shares are submitted for.
#[derive(Debug, Clone, Copy)]
struct Job {
    id: u32,
    version: u32,
    ntime: u32,
}

struct Miner<F> {
    framed: F,
    report: MinerReport,
    /// Future jobs by id, waiting for their `SetNewPrevHash`.
    future_jobs: Vec<(u32, u32)>,
    active: Option<Job>,
    ntime: u32,
}

/// Runs one miner on `stream` (connected to a proxy or a pool), after the Noise
/// handshake if [`MinerConfig::noise`] is set, and reports.
///
/// # Errors
/// The handshake fails (e.g. a certificate from another authority), the connection
/// fails or closes, or the server refuses the setup or the channel.
pub async fn run_miner<S>(stream: S, config: MinerConfig) -> Result<MinerReport, MinerError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(authority) = config.noise else {
        return run_miner_on(Framed::new(stream, Sv2Codec::<Message>::new()), config).await;
    };
    let handshake = noise::connect(
        stream,
        Initiator::new(authority)?,
        Sv2Codec::<Message>::new(),
    );
    let framed = tokio::time::timeout(config.setup_timeout, handshake)
        .await
        .map_err(|_| MinerError::Timeout("the Noise handshake"))??;
    run_miner_on(framed, config).await
}

/// Runs one miner on its (plain or encrypted) transport.
async fn run_miner_on<F>(framed: F, config: MinerConfig) -> Result<MinerReport, MinerError>
where
    F: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    let mut miner = Miner {
        framed,
        report: MinerReport {
            user: config.user.clone(),
            ..MinerReport::default()
        },
        future_jobs: Vec::new(),
        active: None,
        ntime: 0,
    };
    miner.setup(&config).await?;
    miner.mine(&config).await?;
    miner.close(&config).await;
    Ok(miner.report)
}

impl<F> Miner<F>
where
    F: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    async fn next(&mut self, deadline: Instant, what: &'static str) -> Result<Message, MinerError> {
        match tokio::time::timeout_at(deadline, self.framed.next()).await {
            Err(_) => Err(MinerError::Timeout(what)),
            Ok(None) => Err(MinerError::Closed),
            Ok(Some(msg)) => Ok(msg?),
        }
    }

    async fn setup(&mut self, config: &MinerConfig) -> Result<(), MinerError> {
        let text = |s: &str| Str0255::try_from(s).map_err(|e| MinerError::Protocol(e.to_string()));
        self.framed
            .send(
                SetupConnection {
                    protocol: Protocol::Mining,
                    min_version: 2,
                    max_version: 2,
                    flags: REQUIRES_STANDARD_JOBS | REQUIRES_VERSION_ROLLING,
                    endpoint_host: text("127.0.0.1")?,
                    endpoint_port: 0,
                    vendor: text("sv2c-roles miner")?,
                    hardware_version: text("simulated")?,
                    firmware: text(env!("CARGO_PKG_VERSION"))?,
                    device_id: text(&config.user)?,
                }
                .into(),
            )
            .await?;
        let deadline = Instant::now() + config.setup_timeout;
        match self.next(deadline, "SetupConnection.Success").await? {
            Message::SetupConnectionSuccess(_) => {}
            other => {
                return Err(MinerError::Protocol(format!(
                    "SetupConnection answered with {other:?}"
                )));
            }
        }
        self.framed
            .send(
                OpenStandardMiningChannel {
                    request_id: 1,
                    user_identity: text(&config.user)?,
                    nominal_hash_rate: 100e12,
                    max_target: U256([0xff; 32]),
                }
                .into(),
            )
            .await?;
        let deadline = Instant::now() + config.setup_timeout;
        loop {
            match self
                .next(deadline, "OpenStandardMiningChannel.Success")
                .await?
            {
                Message::OpenStandardMiningChannelSuccess(m) if m.request_id == 1 => {
                    self.report.channel_id = m.channel_id;
                    break;
                }
                Message::OpenMiningChannelError(e) => {
                    return Err(MinerError::Protocol(format!(
                        "channel refused: {}",
                        String::from_utf8_lossy(e.error_code.as_bytes())
                    )));
                }
                other => self.on_message(other),
            }
        }
        while self.active.is_none() {
            let msg = self.next(deadline, "an active job").await?;
            self.on_message(msg);
        }
        Ok(())
    }

    fn on_message(&mut self, msg: Message) {
        let r = &mut self.report;
        if msg.channel_msg() {
            let channel = match &msg {
                Message::NewMiningJob(m) => Some(m.channel_id),
                Message::SetNewPrevHash(m) => Some(m.channel_id),
                Message::SetTarget(m) => Some(m.channel_id),
                Message::SubmitSharesSuccess(m) => Some(m.channel_id),
                Message::SubmitSharesError(m) => Some(m.channel_id),
                _ => None,
            };
            if channel.is_some_and(|c| c != r.channel_id) {
                r.misrouted += 1;
                return;
            }
        }
        match msg {
            Message::NewMiningJob(job) => {
                r.jobs += 1;
                match job.min_ntime {
                    Some(ntime) => {
                        self.ntime = ntime;
                        self.active = Some(Job {
                            id: job.job_id,
                            version: job.version,
                            ntime,
                        });
                    }
                    None => self.future_jobs.push((job.job_id, job.version)),
                }
            }
            Message::SetNewPrevHash(p) => {
                r.prev_hashes += 1;
                self.ntime = p.min_ntime;
                if let Some(i) = self.future_jobs.iter().position(|&(id, _)| id == p.job_id) {
                    let (id, version) = self.future_jobs.swap_remove(i);
                    self.active = Some(Job {
                        id,
                        version,
                        ntime: p.min_ntime,
                    });
                }
                self.future_jobs.clear();
            }
            Message::SetTarget(_) => r.targets += 1,
            Message::SubmitSharesSuccess(s) => {
                r.success_messages += 1;
                r.shares_accepted += u64::from(s.new_submits_accepted_count);
            }
            Message::SubmitSharesError(_) => r.shares_rejected += 1,
            _ => {}
        }
    }

    /// Ends the connection the way a well-behaved miner does: shuts down its sending side
    /// and reads what is still in flight (a new job, say) until the server closes, for at
    /// most [`MinerConfig::drain_timeout`]. Dropping the socket with unread bytes in it
    /// would make the kernel reset the connection, and the server would see an error
    /// instead of a clean disconnect. Errors here change nothing in the report.
    async fn close(&mut self, config: &MinerConfig) {
        let deadline = Instant::now() + config.drain_timeout;
        if tokio::time::timeout_at(deadline, SinkExt::<Message>::close(&mut self.framed))
            .await
            .is_err()
        {
            return;
        }
        while let Ok(Some(Ok(_))) = tokio::time::timeout_at(deadline, self.framed.next()).await {}
    }

    fn in_flight(&self) -> u64 {
        let r = &self.report;
        r.shares_submitted
            .saturating_sub(r.shares_accepted + r.shares_rejected)
    }

    async fn mine(&mut self, config: &MinerConfig) -> Result<(), MinerError> {
        let stop = Instant::now() + config.duration;
        let give_up = stop + config.drain_timeout;
        let mut nonce = 0u32;
        loop {
            let submitting = Instant::now() < stop;
            if !submitting && self.in_flight() == 0 {
                self.report.complete = true;
                return Ok(());
            }
            if submitting && let Some(job) = self.active {
                let room = u64::from(config.window).saturating_sub(self.in_flight());
                for _ in 0..room {
                    let share = SubmitSharesStandard {
                        channel_id: self.report.channel_id,
                        sequence_number: self.report.shares_submitted as u32,
                        job_id: job.id,
                        nonce,
                        ntime: job.ntime.max(self.ntime),
                        version: job.version,
                    };
                    nonce = nonce.wrapping_add(1);
                    self.framed.feed(share.into()).await?;
                    self.report.shares_submitted += 1;
                }
                if room > 0 {
                    SinkExt::<Message>::flush(&mut self.framed).await?;
                }
            }
            // Wait for at least one answer, then take whatever else has arrived.
            let deadline = if submitting { stop } else { give_up };
            match tokio::time::timeout_at(deadline, self.framed.next()).await {
                Err(_) if submitting => continue,
                Err(_) => return Ok(()), // gave up: `complete` stays false
                Ok(None) => return Err(MinerError::Closed),
                Ok(Some(msg)) => self.on_message(msg?),
            }
            while let Some(item) = self.framed.next().now_or_never() {
                match item {
                    Some(msg) => self.on_message(msg?),
                    None => return Err(MinerError::Closed),
                }
            }
        }
    }
}
