//! The pool's Template Distribution client: its templates and chain tips come from a
//! Template Provider (a Bitcoin node serving Template Distribution, or the workspace's
//! `template_provider` example), and its blocks go back to it.
//!
//! One connection, plain TCP or Noise NX ([`TemplateProviderConfig::authority_key`]):
//! `SetupConnection` (Template Distribution, version 2, no flags), then
//! `CoinbaseOutputConstraints` for the pool's output (its serialised size, and its legacy
//! sigops counted in weight units: four each). Then:
//!
//! * a future `NewTemplate` is kept (the last [`KEPT_FUTURE_TEMPLATES`]) until the
//!   `SetNewPrevHash` that names it: that pair is a new chain tip, sent to every channel
//!   as a future job and the `SetNewPrevHash` that activates it;
//! * a `NewTemplate` that is not future is a new template on the current tip: every
//!   channel gets its job at once;
//! * a template the pool cannot build a job from (its coinbase prefix leaves no room for
//!   the extranonce, it pays out more than it holds, its coinbase is over 64 KiB, its
//!   outputs are not as many whole outputs as it says) and a
//!   `SetNewPrevHash` naming no template kept are logged and ignored: channels keep
//!   their jobs;
//! * a block a channel finds ([`ShareOk::BlockFound`](sv2c_channels::server::ShareOk))
//!   is queued for this connection as it is checked, before the miner is answered, and
//!   sent as `SubmitSolution` with the coinbase's witness
//!   ([`submit_solution`](sv2c_channels::server::submit_solution)), logged with the
//!   block hash and counted ([`PoolStats::blocks_submitted`](super::PoolStats)). Blocks
//!   found while the connection is down wait for the next one (at most
//!   [`SOLUTION_QUEUE`]).
//!
//! When the connection fails or closes, miners keep their last job, and the pool dials
//! again after 0.5 s, doubling the wait on every failure up to 10 s (back to 0.5 s once a
//! connection is set up). [`PoolStats::template_provider_connected`](super::PoolStats)
//! says whether it is set up now; each loss and each new connection is one log line. A
//! frame that does not decode is logged and dropped; nothing the Template Provider sends
//! can stop the pool.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{
    CoinbaseOutputConstraints, Message, NewTemplate, SetNewPrevHashTdp, SetupConnection,
    SubmitSolution,
};
use sv2c_binary::{Protocol, Str0255};
use sv2c_channels::server::{JobError, coinbase_parts, coinbase_with_witness};
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator};
use sv2c_codec::{CodecError, Connection, Sv2Codec};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_util::codec::Framed;

use super::template::{Broadcast, Work, pool_outputs};

/// Future templates kept until the `SetNewPrevHash` that names one.
pub(super) const KEPT_FUTURE_TEMPLATES: usize = 8;
/// Blocks queued for the Template Provider at most (blocks are rare: a full queue means
/// the Template Provider has been gone for long).
pub(super) const SOLUTION_QUEUE: usize = 64;
/// The first wait before dialling again, doubled on every failure up to [`MAX_BACKOFF`].
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before dialling again.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long the connection, the Noise handshake and `SetupConnection.Success` may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest extranonce a template must leave room for in the coinbase's scriptSig:
/// an extended channel's, the pool's prefix and the miner's bytes, 32 in all at most.
const MAX_EXTRANONCE_LEN: usize = 32;

/// Where the pool's templates come from ([`PoolConfig::template_provider`]).
///
/// [`PoolConfig::template_provider`]: super::PoolConfig::template_provider
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateProviderConfig {
    /// `HOST:PORT` of the Template Provider.
    pub address: String,
    /// `Some`: the connection uses Noise NX, and the Template Provider's certificate must
    /// be signed by this authority. `None`: plain TCP.
    pub authority_key: Option<AuthorityPublicKey>,
}

/// What the pool reads of the client ([`PoolStats`](super::PoolStats)).
#[derive(Debug, Default)]
pub(super) struct Status {
    /// Whether the connection is set up now.
    pub(super) connected: AtomicBool,
    /// `SubmitSolution` messages written to the Template Provider.
    pub(super) submitted: AtomicU64,
}

/// What the client works with: where it puts the work every connection follows, where
/// its status goes, and the pool's output script.
#[derive(Debug)]
pub(super) struct Link {
    /// The pool's broadcast.
    pub(super) broadcast: Arc<watch::Sender<Broadcast>>,
    /// Read by the pool's stats and metrics.
    pub(super) status: Arc<Status>,
    /// The script of the pool's output ([`PoolConfig::coinbase_output`](super::PoolConfig)).
    pub(super) coinbase_output: Vec<u8>,
}

/// A block for the Template Provider: its hash (for the log) and its `SubmitSolution`.
pub(super) type Solution = ([u8; 32], SubmitSolution);

/// A block hash as block explorers and nodes show it (byte-reversed hex).
pub(super) fn display_hash(hash: &[u8; 32]) -> String {
    let mut reversed = *hash;
    reversed.reverse();
    hex::encode(reversed)
}

/// Keeps a connection to the Template Provider until `stop` is set: see the [module
/// docs](self).
pub(super) async fn run(
    link: Link,
    config: TemplateProviderConfig,
    mut solutions: mpsc::Receiver<Solution>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut client = Client {
        link,
        futures: VecDeque::new(),
        counts: (0, 0),
    };
    loop {
        let session = client.session(&config, &mut solutions);
        let (set_up, result) = tokio::select! {
            _ = stop.changed() => return,
            ended = session => ended,
        };
        client.link.status.connected.store(false, Relaxed);
        let reason = match result {
            Ok(()) => "closed by the Template Provider".to_owned(),
            Err(e) => e.to_string(),
        };
        if set_up {
            backoff = FIRST_BACKOFF;
        }
        tracing::warn!(
            "template provider {}: {reason}; miners keep their jobs, dialling again in {backoff:?}",
            config.address
        );
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// What the client keeps across connections.
struct Client {
    link: Link,
    /// Future templates waiting for their `SetNewPrevHash`, newest last.
    futures: VecDeque<NewTemplate>,
    /// The last work's generation and block counts ([`Work`]).
    counts: (u64, u64),
}

/// Why a session ended (`Ok`: the Template Provider closed the connection).
type Ended = Result<(), CodecError>;

/// The connection to the Template Provider, plain or Noise.
type Conn = Connection<TcpStream, Sv2Codec<Message>>;

fn timed_out(what: &str) -> CodecError {
    io::Error::new(io::ErrorKind::TimedOut, format!("no {what} in time")).into()
}

impl Client {
    /// One connection, from the dial to its end: whether it was set up, and why it ended.
    async fn session(
        &mut self,
        config: &TemplateProviderConfig,
        solutions: &mut mpsc::Receiver<Solution>,
    ) -> (bool, Ended) {
        let connect = tokio::time::timeout(SETUP_TIMEOUT, TcpStream::connect(&config.address));
        let tcp = match connect.await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => return (false, Err(e.into())),
            Err(_) => return (false, Err(timed_out("connection"))),
        };
        let _ = tcp.set_nodelay(true);
        let codec = Sv2Codec::<Message>::new();
        let conn: Conn = match config.authority_key {
            None => Framed::new(tcp, codec).into(),
            Some(key) => {
                let handshake = async { noise::connect(tcp, Initiator::new(key)?, codec).await };
                match tokio::time::timeout(SETUP_TIMEOUT, handshake).await {
                    Ok(Ok(framed)) => framed.into(),
                    Ok(Err(e)) => return (false, Err(e)),
                    Err(_) => return (false, Err(timed_out("Noise handshake"))),
                }
            }
        };
        self.serve(conn, config, solutions).await
    }

    async fn serve(
        &mut self,
        mut conn: Conn,
        config: &TemplateProviderConfig,
        solutions: &mut mpsc::Receiver<Solution>,
    ) -> (bool, Ended) {
        if let Err(e) = self.set_up(&mut conn, config).await {
            return (false, Err(e));
        }
        self.link.status.connected.store(true, Relaxed);
        tracing::info!("template provider {}: connected", config.address);
        let dropped = |e: CodecError| {
            tracing::warn!("template provider: a frame that does not decode, dropped: {e}");
        };
        loop {
            tokio::select! {
                msg = conn.next_message_with(dropped) => match msg {
                    Ok(None) => return (true, Ok(())),
                    Ok(Some(msg)) => self.on_message(msg),
                    Err(e) => return (true, Err(e)),
                },
                Some((hash, solution)) = solutions.recv() => {
                    let template_id = solution.template_id;
                    if let Err(e) = conn.send(Message::from(solution)).await {
                        return (true, Err(e));
                    }
                    self.link.status.submitted.fetch_add(1, Relaxed);
                    tracing::info!(
                        "block {} submitted to the template provider (template {template_id})",
                        display_hash(&hash)
                    );
                }
            }
        }
    }

    /// `SetupConnection` and its answer, then the pool's coinbase constraints.
    async fn set_up(&self, conn: &mut Conn, config: &TemplateProviderConfig) -> Ended {
        let (host, port) = match config.address.rsplit_once(':') {
            Some((h, p)) => (h.trim_matches(['[', ']']), p.parse().unwrap_or(0)),
            None => (config.address.as_str(), 0),
        };
        let text = |s: &str| Str0255::try_from(s).unwrap_or_default();
        let setup = SetupConnection {
            protocol: Protocol::TemplateDistribution,
            min_version: 2,
            max_version: 2,
            flags: 0,
            endpoint_host: text(host),
            endpoint_port: port,
            vendor: text("sv2c pool"),
            hardware_version: text(""),
            firmware: text(env!("CARGO_PKG_VERSION")),
            device_id: text(""),
        };
        conn.send(Message::from(setup)).await?;
        let answer = tokio::time::timeout(SETUP_TIMEOUT, conn.next_message())
            .await
            .map_err(|_| timed_out("SetupConnection answer"))?;
        match answer? {
            Some(Message::SetupConnectionSuccess(_)) => {}
            Some(Message::SetupConnectionError(e)) => {
                let why = format!(
                    "SetupConnection refused: {}",
                    String::from_utf8_lossy(e.error_code.as_bytes())
                );
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, why).into());
            }
            Some(other) => {
                let why = format!("SetupConnection answered with {}", other.name());
                return Err(io::Error::new(io::ErrorKind::InvalidData, why).into());
            }
            None => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
        }
        let constraints = coinbase_constraints(&self.link.coinbase_output);
        conn.send(Message::from(constraints)).await
    }

    fn on_message(&mut self, msg: Message) {
        match msg {
            Message::NewTemplate(template) => self.on_new_template(*template),
            Message::SetNewPrevHashTdp(tip) => self.on_set_new_prev_hash(&tip),
            other => tracing::debug!("template provider: {} ignored", other.name()),
        }
    }

    fn on_new_template(&mut self, template: NewTemplate) {
        if let Err(e) = self.check(&template) {
            tracing::warn!(
                "template provider: template {} ignored, no job can be built from it: {e}",
                template.template_id
            );
            return;
        }
        if template.future_template {
            if self.futures.len() == KEPT_FUTURE_TEMPLATES {
                self.futures.pop_front();
            }
            self.futures.push_back(template);
            return;
        }
        let current = self.link.broadcast.borrow().work.clone();
        let Some(current) = current else {
            tracing::debug!("template provider: a template before any tip, ignored");
            return;
        };
        let (generation, block) = self.counts;
        let tip = current.prev_hash_msg();
        self.publish(Work::new((generation + 1, block), &tip, template));
    }

    fn on_set_new_prev_hash(&mut self, tip: &SetNewPrevHashTdp) {
        let found = self
            .futures
            .iter()
            .position(|t| t.template_id == tip.template_id)
            .and_then(|i| self.futures.remove(i));
        let Some(template) = found else {
            tracing::warn!(
                "template provider: SetNewPrevHash for template {}, which it did not send \
                 as a future template: ignored",
                tip.template_id
            );
            return;
        };
        self.futures.clear();
        let (generation, block) = self.counts;
        self.publish(Work::new((generation + 1, block + 1), tip, template));
    }

    /// Every connection's channels move to `work`.
    fn publish(&mut self, work: Work) {
        self.counts = (work.generation, work.block);
        tracing::debug!(
            "template provider: template {} on {}",
            work.template.template_id,
            display_hash(&work.prev_hash)
        );
        let work = Arc::new(work);
        self.link.broadcast.send_modify(|b| b.work = Some(work));
    }

    /// Whether every channel's job can be built from `template`, and its coinbase is one
    /// transaction (the template's outputs are as many as it says) that can be submitted.
    fn check(&self, template: &NewTemplate) -> Result<(), String> {
        let outputs = pool_outputs(template, &self.link.coinbase_output);
        let len = MAX_EXTRANONCE_LEN;
        let (prefix, suffix) =
            coinbase_parts(template, &outputs, len).map_err(|e| e.to_string())?;
        if prefix.len() + len + suffix.len() > usize::from(u16::MAX) {
            return Err(JobError::TooLarge.to_string());
        }
        let coinbase = [&prefix[..], &[0; MAX_EXTRANONCE_LEN], &suffix[..]].concat();
        match coinbase_with_witness(&coinbase) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("its coinbase outputs: {e}")),
        }
    }
}

/// `CoinbaseOutputConstraints` for one output paying to `script`: its serialised size
/// (value, script length, script) and its legacy sigops in weight units (four each).
pub(super) fn coinbase_constraints(script: &[u8]) -> CoinbaseOutputConstraints {
    let length_prefix = match script.len() {
        0..=0xfc => 1,
        0xfd..=0xffff => 3,
        _ => 5,
    };
    let size = 8 + length_prefix + script.len();
    let sigops = bitcoin::Script::from_bytes(script).count_sigops_legacy() * 4;
    CoinbaseOutputConstraints {
        coinbase_output_max_additional_size: u32::try_from(size).unwrap_or(u32::MAX),
        coinbase_output_max_additional_sigops: u16::try_from(sigops).unwrap_or(u16::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_count_the_output_and_its_sigops() {
        // P2WPKH: 8 + 1 + 22 bytes, no legacy sigop.
        let p2wpkh = [&[0x00, 0x14][..], &[0x42; 20]].concat();
        let c = coinbase_constraints(&p2wpkh);
        assert_eq!(
            (
                c.coinbase_output_max_additional_size,
                c.coinbase_output_max_additional_sigops
            ),
            (31, 0)
        );
        // P2PKH: OP_CHECKSIG is one legacy sigop, four weight units.
        let p2pkh = [&[0x76, 0xa9, 0x14][..], &[0x42; 20], &[0x88, 0xac]].concat();
        let c = coinbase_constraints(&p2pkh);
        assert_eq!(
            (
                c.coinbase_output_max_additional_size,
                c.coinbase_output_max_additional_sigops
            ),
            (34, 4)
        );
        assert_eq!(
            coinbase_constraints(&[0x51]).coinbase_output_max_additional_size,
            10
        );
    }

    #[test]
    fn block_hashes_show_byte_reversed() {
        let mut hash = [0u8; 32];
        hash[0] = 0xab;
        assert!(display_hash(&hash).ends_with("ab"));
        assert!(display_hash(&hash).starts_with("00"));
    }
}
