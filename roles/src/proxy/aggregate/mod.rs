//! The aggregating mode ([`ProxyConfig::aggregate`]): one extended channel to the pool,
//! every miner channel served from it.
//!
//! ```text
//!  upstream channel (granted by the pool):  P (prefix) ‖ [ n bytes the proxy rolls ]
//!  a miner's channel:                       P ‖ S (SUB_PREFIX_LEN bytes) ‖ [ n − SUB_PREFIX_LEN ]
//!    standard:  extranonce_prefix = P ‖ S ‖ zeros             (the miner rolls nothing)
//!    extended:  extranonce_prefix = P ‖ S, extranonce_size = n − SUB_PREFIX_LEN
//! ```
//!
//! The [`proxy` module docs](super#aggregating-mode) describe the mode and its share
//! acknowledgement policy.
//!
//! The state lives in the router task (it owns the upstream reads): the upstream
//! [`ClientChannel`] (jobs, tip, target), the miner channels and their sub-prefixes.
//! Each event returns what to send to miners and to the pool; the router delivers it.
//! Here: that state and the proxy's channel opened on a pool; in `open`, a miner's
//! channel opened; in `shares`, its shares checked, answered and forwarded; in `pool`,
//! the pool's frames and the move to another pool connection.

mod open;
mod pool;
mod shares;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use futures::{Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    OpenExtendedMiningChannel, OpenExtendedMiningChannelSuccess, OpenMiningChannelError,
    SetNewPrevHash,
};
use sv2c_binary::{Frameable, MessageType, Str0255, U256};
use sv2c_buffer_pool::BufferPool;
use sv2c_channels::client::ClientChannel;
use sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING;
use sv2c_channels::server::{ExtranoncePrefixAllocator, RecentShares};
use sv2c_codec::{CodecError, Frame};

use super::messages::ToDownstream;
use super::routing::{ConnId, FIRST_DOWNSTREAM_CHANNEL_ID};
use super::shared::{ProxyConfig, ProxyError, Shared};

/// Bytes of the upstream extranonce that tell the proxy's miner channels apart: at most
/// 256^4 channels on one upstream connection.
pub const SUB_PREFIX_LEN: usize = 4;

/// Extranonce bytes the proxy asks the pool to leave to an extended miner channel (the
/// upstream `min_extranonce_size` is [`SUB_PREFIX_LEN`] plus this): SRI's
/// `translator_sv2` asks for 6.
pub const MINER_EXTRANONCE_LEN: usize = 8;

/// Header hashes of accepted shares remembered at least (on the current chain tip, at
/// most twice as many: [`RecentShares`]) to answer a share submitted twice with
/// `duplicate-share` instead of forwarding it.
const DEDUP_BUDGET: usize = 8192;

/// Shares whose miners' answers wait for the pool's (past
/// [`ProxyConfig::max_unconfirmed_shares`]) at most: one more and the pool is taken as
/// gone. 24 bytes each: 1.5 MiB at most.
pub const MAX_HELD_SHARES: usize = 65_536;

/// The request id of the proxy's one `OpenExtendedMiningChannel`.
const UPSTREAM_REQUEST_ID: u32 = 1;

/// What is added to the job-id shift ([`Aggregate::job_base`]) at each move to another
/// pool connection: two pools numbering their jobs alike (from 1, say) give miners
/// different ids, so a share for the old pool's job is never taken for the new one's.
const JOB_EPOCH: u32 = 0x9e37_79b9;

/// Job ids of pools the proxy left, remembered at most (to answer their shares
/// `stale-share`).
const MAX_STALE_JOBS: usize = 4096;

/// What an event asks the router to do.
#[derive(Debug)]
pub(crate) enum Out {
    /// Queue for a miner.
    Miner(ConnId, ToDownstream),
    /// Write to the pool.
    Upstream(Frame),
}

/// Whether a miner channel is standard or extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Standard,
    Extended,
}

/// One miner channel.
#[derive(Debug)]
struct MinerChannel {
    conn: ConnId,
    kind: Kind,
    /// `S`, then zeros up to the upstream extranonce size: what a standard channel's
    /// shares carry upstream, and the bytes an extended channel's shares start with.
    rolled: Vec<u8>,
    /// The extranonce bytes the miner rolls (`extranonce_size` of an extended channel,
    /// kept across pool connections; 0 for a standard one).
    miner_size: usize,
    /// The miner's `max_target`: its channel target is the harder of this and the
    /// upstream target.
    max_target: U256,
}

/// A share sent to the pool and not answered by it yet.
#[derive(Debug)]
struct Unconfirmed {
    /// The proxy's sequence number on the upstream channel.
    sequence_number: u32,
    /// When it was sent.
    sent: Instant,
    /// `None`: the miner was told `Success` already. `Some`: the miner's answer waits
    /// for the pool's (connection, miner channel, miner's sequence number; the share's
    /// work).
    held: Option<((ConnId, u32, u32), f64)>,
}

/// The shares the proxy sent to the pool and the pool has not answered
/// ([`ProxyConfig::max_unconfirmed_shares`], see the `proxy` module docs'
/// acknowledgement policy).
#[derive(Debug, Default)]
struct Ledger {
    queue: VecDeque<Unconfirmed>,
    /// Entries of `queue` whose miner was answered already.
    acknowledged: usize,
}

/// The aggregated state (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Aggregate {
    upstream_channel: u32,
    upstream_group: u32,
    client: ClientChannel,
    /// Bytes of a sub-prefix ([`SUB_PREFIX_LEN`]; fewer in tests).
    sub_prefix_len: usize,
    /// Sub-prefixes `S`: a big-endian counter of `sub_prefix_len` bytes, never given
    /// back (see the `proxy` module docs).
    sub_prefixes: ExtranoncePrefixAllocator,
    channels: HashMap<u32, MinerChannel>,
    next_channel: u32,
    next_sequence: u32,
    /// The pool granted 0x0002: an extended share's `user_identity` TLV goes upstream.
    forward_tlvs: bool,
    /// Hashes of the shares accepted on the current chain tip.
    seen: RecentShares,
    /// Shares the pool has not answered yet.
    ledger: Ledger,
    /// Added to the pool's job ids in what miners are sent (changes with each pool
    /// connection, [`JOB_EPOCH`]); a share's job id less this is the pool's.
    job_base: u32,
    /// Job ids (as miners were sent them) of the pool connection the proxy left last:
    /// shares on them are answered `stale-share`.
    stale_jobs: HashSet<u32>,
    /// Whether a pool connection serves the channel now (`false` between the loss of one
    /// and the next: every share is then `stale-share`).
    attached: bool,
}

/// Opens the proxy's extended channel on the set-up upstream connection and waits for
/// the pool's answer (within [`ProxyConfig::upstream_setup_timeout`]).
///
/// # Errors
/// [`ProxyError::Upstream`] if the pool refuses the channel, grants fewer than
/// [`SUB_PREFIX_LEN`] + 1 extranonce bytes, answers something else or closes;
/// [`ProxyError::UpstreamTimeout`]; the connection's error.
pub(crate) async fn open_upstream<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
    upstream_extensions: &[u16],
) -> Result<Aggregate, ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    let open = OpenExtendedMiningChannel {
        request_id: UPSTREAM_REQUEST_ID,
        user_identity: Str0255::try_from(config.aggregate_user.as_str())
            .map_err(|e| ProxyError::Upstream(e.to_string()))?,
        nominal_hash_rate: config.aggregate_hashrate,
        max_target: U256([0xff; 32]),
        min_extranonce_size: (SUB_PREFIX_LEN + MINER_EXTRANONCE_LEN) as u16,
    };
    framed.send(Frame::from_message(&open, pool)?).await?;
    let answer = tokio::time::timeout(config.upstream_setup_timeout, framed.next())
        .await
        .map_err(|_| ProxyError::UpstreamTimeout)?;
    let frame = match answer {
        Some(frame) => frame?,
        None => {
            return Err(ProxyError::Upstream(
                "closed while opening the channel".into(),
            ));
        }
    };
    let h = frame.header();
    match (h.extension_id(), h.msg_type()) {
        (0, OpenExtendedMiningChannelSuccess::MSG_TYPE) => {
            let ok = frame.decode::<OpenExtendedMiningChannelSuccess>()?;
            let size = usize::from(ok.extranonce_size);
            if size <= SUB_PREFIX_LEN {
                return Err(ProxyError::Upstream(format!(
                    "the pool granted {size} extranonce bytes; aggregating needs more than \
                     {SUB_PREFIX_LEN}"
                )));
            }
            tracing::debug!(
                "aggregating on upstream channel {} ({} prefix bytes, {size} to roll)",
                ok.channel_id,
                ok.extranonce_prefix.as_slice().len()
            );
            Ok(Aggregate::new(
                &ok,
                SUB_PREFIX_LEN,
                upstream_extensions.contains(&WORKER_SPECIFIC_HASHRATE_TRACKING),
            ))
        }
        (0, OpenMiningChannelError::MSG_TYPE) => {
            let e = frame.decode::<OpenMiningChannelError>()?;
            Err(ProxyError::Upstream(format!(
                "OpenExtendedMiningChannel refused: {}",
                String::from_utf8_lossy(e.error_code.as_bytes())
            )))
        }
        _ => Err(ProxyError::Upstream(format!(
            "expected OpenExtendedMiningChannel.Success, got {h:?}"
        ))),
    }
}

/// `msg` framed on the shared pool, or `None` (logged) if it does not fit.
fn framed<M: Frameable>(msg: &M, shared: &Shared) -> Option<Frame> {
    match Frame::from_message(msg, &shared.pool) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::debug!("aggregate: cannot frame a message: {e}");
            None
        }
    }
}

/// A copy of `frame` addressed to `channel_id`, with `job_id` in place of the job id
/// that follows the channel id (`NewExtendedMiningJob`, `SetNewPrevHash`) if given.
fn copy_to(frame: &Frame, channel_id: u32, job_id: Option<u32>, shared: &Shared) -> Option<Frame> {
    let h = frame.header();
    let mut payload = shared.pool.acquire(frame.payload().len());
    payload.copy_from_slice(frame.payload());
    if let Some(job_id) = job_id {
        payload
            .get_mut(4..8)?
            .copy_from_slice(&job_id.to_le_bytes());
    }
    let mut copy = Frame::new(h.wire_extension_type(), h.msg_type(), payload).ok()?;
    copy.set_channel_id(channel_id).ok()?;
    Some(copy)
}

fn error_code(code: &str) -> Str0255 {
    Str0255::try_from(code).unwrap_or_default()
}

impl Aggregate {
    /// The state for the pool's answer `ok` (which granted more than `sub_prefix_len`
    /// extranonce bytes), with sub-prefixes of `sub_prefix_len` bytes.
    fn new(
        ok: &OpenExtendedMiningChannelSuccess,
        sub_prefix_len: usize,
        forward_tlvs: bool,
    ) -> Aggregate {
        Aggregate {
            upstream_channel: ok.channel_id,
            upstream_group: ok.group_channel_id,
            client: ClientChannel::new(
                ok.extranonce_prefix.as_slice().to_vec(),
                usize::from(ok.extranonce_size),
                ok.target,
            ),
            sub_prefix_len,
            sub_prefixes: ExtranoncePrefixAllocator::new(Vec::new(), sub_prefix_len),
            channels: HashMap::new(),
            next_channel: FIRST_DOWNSTREAM_CHANNEL_ID,
            next_sequence: 0,
            forward_tlvs,
            seen: RecentShares::new(DEDUP_BUDGET),
            ledger: Ledger::default(),
            job_base: 0,
            stale_jobs: HashSet::new(),
            attached: true,
        }
    }

    /// Publishes the upstream channel to the worker's SV1 miners, before its first job:
    /// a miner that subscribes now takes its target from it.
    pub(crate) fn publish_channel(&self, shared: &Shared) {
        shared.sv1_jobs.on_target(&self.client);
    }

    /// Miner channels open now.
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Job `job_id` as `channel` gets it.
    fn job_for(
        &self,
        channel: &MinerChannel,
        job_id: u32,
        channel_id: u32,
        future: bool,
        shared: &Shared,
    ) -> Option<Frame> {
        let shown = job_id.wrapping_add(self.job_base);
        match channel.kind {
            Kind::Extended => {
                let mut job = self.client.extended_job(job_id, channel_id, future)?;
                job.job_id = shown;
                framed(&job, shared)
            }
            Kind::Standard => {
                let mut job = self
                    .client
                    .standard_job(job_id, channel_id, &channel.rolled, future)
                    .ok()?;
                job.job_id = shown;
                framed(&job, shared)
            }
        }
    }

    /// `m` with the job id miners were sent.
    fn shown(&self, m: SetNewPrevHash) -> SetNewPrevHash {
        SetNewPrevHash {
            job_id: m.job_id.wrapping_add(self.job_base),
            ..m
        }
    }

    /// A miner closed `channel_id`. Its sub-prefix is not reused.
    pub(crate) fn close(&mut self, conn: ConnId, channel_id: u32) {
        if self
            .channels
            .get(&channel_id)
            .is_some_and(|c| c.conn == conn)
        {
            self.channels.remove(&channel_id);
        }
    }

    /// A miner's connection is gone: its channels close.
    pub(crate) fn drop_connection(&mut self, conn: ConnId) {
        self.channels.retain(|_, c| c.conn != conn);
        super::shared::shrink_if_sparse(&mut self.channels);
    }

    /// Publishes the unconfirmed count.
    fn publish(&self, shared: &Shared) {
        shared.counters.shares_unconfirmed.store(
            self.ledger.queue.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sv2c_binary::B032;
    use sv2c_binary::messages::{
        NewExtendedMiningJob, OpenStandardMiningChannel, OpenStandardMiningChannelSuccess,
        SetTarget, SubmitSharesError, SubmitSharesExtended, SubmitSharesStandard,
        SubmitSharesSuccess,
    };
    use sv2c_channels::tailed::Tailed;

    use super::shares::Answers;
    use super::*;
    use crate::proxy::messages::{MinerInput, OpenRequest};

    /// An upstream channel with prefix `[1, 2]` and 4 bytes to roll, sub-prefixes of 1
    /// byte (256 of them).
    fn aggregate() -> Aggregate {
        let ok = OpenExtendedMiningChannelSuccess {
            request_id: UPSTREAM_REQUEST_ID,
            channel_id: 5,
            target: U256([0xff; 32]),
            extranonce_size: 4,
            extranonce_prefix: B032::try_from(vec![1, 2]).unwrap(),
            group_channel_id: 1,
        };
        Aggregate::new(&ok, 1, false)
    }

    fn standard(request_id: u32) -> OpenRequest {
        OpenRequest::Standard(OpenStandardMiningChannel {
            request_id,
            user_identity: Str0255::default(),
            nominal_hash_rate: 1.0,
            max_target: U256([0xff; 32]),
        })
    }

    fn extended(request_id: u32, min_extranonce_size: u16) -> OpenRequest {
        OpenRequest::Extended(OpenExtendedMiningChannel {
            request_id,
            user_identity: Str0255::default(),
            nominal_hash_rate: 1.0,
            max_target: U256([0xff; 32]),
            min_extranonce_size,
        })
    }

    /// The answer to one open request: `Ok(prefix)` or `Err(error code)`.
    fn answer(out: &mut Vec<Out>) -> Result<(Vec<u8>, Option<u16>), String> {
        let first = out.drain(..).next().expect("an answer");
        match first {
            Out::Miner(
                _,
                ToDownstream::Opened {
                    reply,
                    downstream_channel,
                    upstream_channel,
                },
            ) => {
                assert_eq!(downstream_channel, upstream_channel);
                if let Ok(m) = reply.decode::<OpenStandardMiningChannelSuccess>() {
                    assert_eq!(m.channel_id, downstream_channel);
                    Ok((m.extranonce_prefix.as_slice().to_vec(), None))
                } else {
                    let m = reply.decode::<OpenExtendedMiningChannelSuccess>().unwrap();
                    Ok((
                        m.extranonce_prefix.as_slice().to_vec(),
                        Some(m.extranonce_size),
                    ))
                }
            }
            Out::Miner(_, ToDownstream::Refused { reply }) => {
                let e = reply.decode::<OpenMiningChannelError>().unwrap();
                Err(String::from_utf8_lossy(e.error_code.as_bytes()).into_owned())
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Every miner channel gets its own sub-prefix inside the upstream extranonce; after
    /// 256^k channels (k = 1 here) new ones are refused, and a closed channel's
    /// sub-prefix is not handed out again.
    #[test]
    fn sub_prefixes_are_distinct_and_bounded() {
        let shared = Shared::for_tests();
        let mut a = aggregate();
        let mut out = Vec::new();

        a.open(1, extended(0, 4), &shared, &mut out);
        assert_eq!(
            answer(&mut out),
            Err("min-extranonce-size-too-large".into())
        );
        a.open(1, extended(1, 3), &shared, &mut out);
        assert_eq!(answer(&mut out), Ok((vec![1, 2, 0], Some(3))));
        for n in 1..=255u8 {
            a.open(2, standard(u32::from(n)), &shared, &mut out);
            assert_eq!(answer(&mut out), Ok((vec![1, 2, n, 0, 0, 0], None)));
            // No job yet: nothing else is sent.
            assert!(out.is_empty());
        }
        assert_eq!(a.channel_count(), 256);
        a.open(2, standard(256), &shared, &mut out);
        assert_eq!(answer(&mut out), Err("too-many-channels".into()));
        a.drop_connection(2);
        assert_eq!(a.channel_count(), 1);
        a.open(3, standard(0), &shared, &mut out);
        assert_eq!(answer(&mut out), Err("too-many-channels".into()));
    }

    /// The pool's answers settle the ledger: an acknowledged share is counted confirmed
    /// or refused after acknowledgement, a held one gets the pool's verdict, in order; a
    /// held answer that waited past the limit makes the pool silent.
    #[test]
    fn the_ledger_counts_and_answers_what_the_pool_answers() {
        let shared = Shared::for_tests();
        let mut a = aggregate();
        let now = Instant::now();
        let held = [
            (10, None),
            (11, None),
            (12, Some(((7, 2, 5), 1.0))),
            (13, Some(((7, 2, 6), 1.0))),
        ];
        for (sequence_number, held) in held {
            a.ledger.queue.push_back(Unconfirmed {
                sequence_number,
                sent: now,
                held,
            });
            a.ledger.acknowledged += usize::from(held.is_none());
        }
        let limit = Duration::from_secs(30);
        assert!(!a.pool_is_silent(now + limit, limit));
        assert!(a.pool_is_silent(now + limit + Duration::from_secs(1), limit));

        let mut out = Vec::new();
        let mut answers = Answers::new(&shared, &mut out);
        a.on_pool_answer(11, Some(b"stale-share"), &mut answers);
        // Covers 10 (acknowledged: confirmed) and 12 (held: the miner's share 5).
        a.on_pool_answer(12, None, &mut answers);
        a.on_pool_answer(13, Some(b"difficulty-too-low"), &mut answers);
        answers.send_ack();
        let got: Vec<String> = out
            .drain(..)
            .map(|o| match o {
                Out::Miner(7, ToDownstream::Frame(f)) => {
                    if let Ok(s) = f.decode::<SubmitSharesSuccess>() {
                        format!(
                            "ok {} {} x{}",
                            s.channel_id, s.last_sequence_number, s.new_submits_accepted_count
                        )
                    } else {
                        let e = f.decode::<SubmitSharesError>().unwrap();
                        let code = String::from_utf8_lossy(e.error_code.as_bytes()).into_owned();
                        format!("error {} {} {code}", e.channel_id, e.sequence_number)
                    }
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(got, ["ok 2 5 x1", "error 2 6 difficulty-too-low"]);
        let c = &shared.counters;
        use std::sync::atomic::Ordering::Relaxed;
        assert_eq!(c.shares_confirmed.load(Relaxed), 1);
        assert_eq!(c.shares_refused_after_ack.load(Relaxed), 1);
        assert!(a.ledger.queue.is_empty());
        assert_eq!(a.ledger.acknowledged, 0);
        assert!(!a.pool_is_silent(now + limit * 10, limit));
    }

    /// The proxy-wide budget holds across connections; a closed channel makes room.
    #[test]
    fn the_channel_budget_holds_across_connections() {
        let mut shared = Shared::for_tests();
        shared.config.max_channels = 3;
        let mut a = aggregate();
        let mut out = Vec::new();
        for (conn, request) in [(1, 1), (2, 2), (3, 3)] {
            a.open(conn, standard(request), &shared, &mut out);
            assert!(answer(&mut out).is_ok());
        }
        a.open(4, standard(4), &shared, &mut out);
        assert_eq!(answer(&mut out), Err("too-many-channels".into()));
        a.drop_connection(2);
        a.open(4, standard(5), &shared, &mut out);
        assert!(answer(&mut out).is_ok());
    }

    /// The proxy's channel on another pool: prefix `prefix`, `size` bytes to roll,
    /// upstream channel `channel_id`, the easiest target but for its lowest byte (0x7f,
    /// to tell it apart); 0x0002 granted if `tlvs`.
    fn next_pool(prefix: &[u8], size: u16, channel_id: u32, tlvs: bool) -> Aggregate {
        let mut target = [0xff; 32];
        target[0] = 0x7f;
        let ok = OpenExtendedMiningChannelSuccess {
            request_id: UPSTREAM_REQUEST_ID,
            channel_id,
            target: U256(target),
            extranonce_size: size,
            extranonce_prefix: B032::try_from(prefix.to_vec()).unwrap(),
            group_channel_id: channel_id + 100,
        };
        Aggregate::new(&ok, 1, tlvs)
    }

    /// The pool's job `job_id` (a future one) and the tip that makes it active, on
    /// upstream channel `channel`.
    fn pool_job(channel: u32, job_id: u32, shared: &Shared) -> [Frame; 2] {
        use sv2c_binary::{B064K, Seq0255};
        let job = NewExtendedMiningJob {
            channel_id: channel,
            job_id,
            min_ntime: None,
            version: 0x2000_0000,
            version_rolling_allowed: true,
            merkle_path: Seq0255::from_slice(&[]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(vec![0xaa; 4]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(vec![0xcc; 4]).unwrap(),
        };
        let tip = SetNewPrevHash {
            channel_id: channel,
            job_id,
            prev_hash: U256([3; 32]),
            min_ntime: 1_700_000_000,
            nbits: 0x207f_ffff,
        };
        [
            Frame::from_message(&job, &shared.pool).unwrap(),
            Frame::from_message(&tip, &shared.pool).unwrap(),
        ]
    }

    /// A standard miner's share on channel `channel_id`.
    fn standard_share(
        channel_id: u32,
        sequence_number: u32,
        job_id: u32,
        shared: &Shared,
    ) -> MinerInput {
        let share = SubmitSharesStandard {
            channel_id,
            sequence_number,
            job_id,
            nonce: sequence_number,
            ntime: 1_700_000_000,
            version: 0x2000_0000,
        };
        MinerInput::Frames(vec![Frame::from_message(&share, &shared.pool).unwrap()])
    }

    /// What an event produced, one line per message.
    fn summary(out: &mut Vec<Out>) -> Vec<String> {
        use sv2c_binary::messages::{NewMiningJob, Reconnect, SetExtranoncePrefix};
        out.drain(..)
            .map(|o| {
                let (to, f) = match o {
                    Out::Upstream(f) => ("up".to_owned(), f),
                    Out::Miner(c, ToDownstream::Frame(f)) => (format!("conn {c}"), f),
                    other => return format!("{other:?}"),
                };
                let what = match f.header().msg_type() {
                    SubmitSharesExtended::MSG_TYPE => {
                        let t = f.decode::<Tailed<SubmitSharesExtended>>().unwrap();
                        let m = t.message;
                        format!(
                            "share ch {} seq {} job {} extranonce {:?} tail {}",
                            m.channel_id,
                            m.sequence_number,
                            m.job_id,
                            m.extranonce.as_slice(),
                            t.tail.as_bytes().len()
                        )
                    }
                    SetExtranoncePrefix::MSG_TYPE => {
                        let m = f.decode::<SetExtranoncePrefix>().unwrap();
                        format!(
                            "prefix ch {} {:?}",
                            m.channel_id,
                            m.extranonce_prefix.as_slice()
                        )
                    }
                    SetTarget::MSG_TYPE => {
                        let m = f.decode::<SetTarget>().unwrap();
                        format!("target ch {} {:#x}", m.channel_id, m.maximum_target.0[0])
                    }
                    NewMiningJob::MSG_TYPE => {
                        let m = f.decode::<NewMiningJob>().unwrap();
                        format!("job ch {} id {:#x}", m.channel_id, m.job_id)
                    }
                    SetNewPrevHash::MSG_TYPE => {
                        let m = f.decode::<SetNewPrevHash>().unwrap();
                        format!("tip ch {} id {:#x}", m.channel_id, m.job_id)
                    }
                    SubmitSharesSuccess::MSG_TYPE => {
                        let m = f.decode::<SubmitSharesSuccess>().unwrap();
                        format!("ok ch {} last {}", m.channel_id, m.last_sequence_number)
                    }
                    SubmitSharesError::MSG_TYPE => {
                        let m = f.decode::<SubmitSharesError>().unwrap();
                        let code = String::from_utf8_lossy(m.error_code.as_bytes()).into_owned();
                        format!("error ch {} seq {} {code}", m.channel_id, m.sequence_number)
                    }
                    Reconnect::MSG_TYPE => "reconnect".to_owned(),
                    t => format!("message {t:#x}"),
                };
                format!("{to}: {what}")
            })
            .collect()
    }

    /// On a new pool connection every channel keeps its id and sub-prefix and gets
    /// `SetExtranoncePrefix` (the new pool's prefix, its sub-prefix, zeros up to the
    /// miner's own bytes, whose count stays) and `SetTarget`; an extended channel that
    /// rolls more bytes than the new pool leaves it cannot move (its connection is
    /// returned, its channels closed). What the old pool did not answer is settled: an
    /// acknowledged share stays acknowledged and is counted left, a held one is answered
    /// `stale-share`.
    #[test]
    fn a_switch_moves_every_channel_to_the_new_pool() {
        let shared = Shared::for_tests();
        let mut a = aggregate();
        let mut out = Vec::new();
        let (x, s) = (FIRST_DOWNSTREAM_CHANNEL_ID, FIRST_DOWNSTREAM_CHANNEL_ID + 1);
        a.open(1, extended(1, 0), &shared, &mut out);
        assert_eq!(answer(&mut out), Ok((vec![1, 2, 0], Some(3))));
        a.open(2, standard(2), &shared, &mut out);
        assert_eq!(answer(&mut out), Ok((vec![1, 2, 1, 0, 0, 0], None)));
        let now = Instant::now();
        for (sequence_number, held) in [(10, None), (11, Some(((2, s, 5), 1.0)))] {
            a.ledger.queue.push_back(Unconfirmed {
                sequence_number,
                sent: now,
                held,
            });
        }
        a.ledger.acknowledged = 1;

        // 6 bytes to roll on the new pool: the extended miner keeps its 3, after its
        // sub-prefix and 2 zeros.
        let gone = a.attach(next_pool(&[7, 7, 7], 6, 9, false), &shared, &mut out);
        assert!(gone.is_empty());
        assert_eq!(
            summary(&mut out),
            [
                format!("conn 2: error ch {s} seq 5 stale-share"),
                format!("conn 1: prefix ch {x} [7, 7, 7, 0, 0, 0]"),
                format!("conn 1: target ch {x} 0x7f"),
                format!("conn 2: prefix ch {s} [7, 7, 7, 1, 0, 0, 0, 0, 0]"),
                format!("conn 2: target ch {s} 0x7f"),
            ]
        );
        use std::sync::atomic::Ordering::Relaxed;
        assert_eq!(shared.counters.shares_left_unconfirmed.load(Relaxed), 1);
        assert!(a.ledger.queue.is_empty());
        assert_eq!(a.ledger.acknowledged, 0);

        // 3 bytes: no room for the extended miner's 3 after its sub-prefix.
        let gone = a.attach(next_pool(&[8], 3, 10, false), &shared, &mut out);
        assert_eq!(gone, [1]);
        assert_eq!(
            summary(&mut out),
            [
                format!("conn 2: prefix ch {s} [8, 1, 0, 0]"),
                format!("conn 2: target ch {s} 0x7f"),
            ]
        );
        assert_eq!(a.channel_count(), 1);
    }

    /// A share on a job of the pool the proxy left is answered `stale-share` and never
    /// sent to the new pool, even when the new pool numbers its jobs alike (miners see
    /// the new pool's job ids shifted); so is every share between a lost pool and the
    /// next. A share on the new pool's job goes to it, on its channel, with its job id.
    #[test]
    fn shares_on_the_old_pools_jobs_are_stale_and_stay_here() {
        let shared = Shared::for_tests();
        let mut a = aggregate();
        let mut out = Vec::new();
        let c = FIRST_DOWNSTREAM_CHANNEL_ID;
        a.open(2, standard(1), &shared, &mut out);
        assert!(answer(&mut out).is_ok());
        for f in pool_job(5, 1, &shared) {
            assert!(a.on_upstream_frame(f, &shared, &mut out));
        }
        assert_eq!(
            summary(&mut out),
            [
                format!("conn 2: job ch {c} id 0x1"),
                format!("conn 2: tip ch {c} id 0x1")
            ]
        );
        a.on_channel_frames(2, standard_share(c, 0, 1, &shared), &shared, &mut out);
        assert_eq!(
            summary(&mut out),
            [
                "up: share ch 5 seq 0 job 1 extranonce [0, 0, 0, 0] tail 0".to_owned(),
                format!("conn 2: ok ch {c} last 0"),
            ]
        );

        assert!(
            a.attach(next_pool(&[7], 4, 9, false), &shared, &mut out)
                .is_empty()
        );
        out.clear();
        a.on_channel_frames(2, standard_share(c, 1, 1, &shared), &shared, &mut out);
        assert_eq!(
            summary(&mut out),
            [format!("conn 2: error ch {c} seq 1 stale-share")]
        );
        // The new pool's job 1 is not the old pool's job 1.
        for f in pool_job(9, 1, &shared) {
            assert!(a.on_upstream_frame(f, &shared, &mut out));
        }
        let shown = 1u32.wrapping_add(JOB_EPOCH);
        assert_eq!(
            summary(&mut out),
            [
                format!("conn 2: job ch {c} id {shown:#x}"),
                format!("conn 2: tip ch {c} id {shown:#x}"),
            ]
        );
        a.on_channel_frames(2, standard_share(c, 2, 1, &shared), &shared, &mut out);
        assert_eq!(
            summary(&mut out),
            [format!("conn 2: error ch {c} seq 2 stale-share")]
        );
        a.on_channel_frames(2, standard_share(c, 3, shown, &shared), &shared, &mut out);
        assert_eq!(
            summary(&mut out),
            [
                "up: share ch 9 seq 0 job 1 extranonce [0, 0, 0, 0] tail 0".to_owned(),
                format!("conn 2: ok ch {c} last 3"),
            ]
        );

        // The pool lost: nothing goes anywhere until the next one.
        a.detach(&shared, &mut out);
        assert!(out.is_empty());
        a.on_channel_frames(2, standard_share(c, 4, shown, &shared), &shared, &mut out);
        assert_eq!(
            summary(&mut out),
            [format!("conn 2: error ch {c} seq 4 stale-share")]
        );
    }

    /// Extensions are the new pool's: a miner's `user_identity` TLV rides on its share
    /// to a pool that granted 0x0002, and not to one that did not.
    #[test]
    fn a_tlv_goes_only_to_a_pool_that_granted_it() {
        use sv2c_binary::tlv::{UserIdentity, WithTlvs};
        let shared = Shared::for_tests();
        let mut a = next_pool(&[1, 2], 4, 5, true);
        let mut out = Vec::new();
        let c = FIRST_DOWNSTREAM_CHANNEL_ID;
        a.open(1, extended(1, 0), &shared, &mut out);
        assert_eq!(answer(&mut out), Ok((vec![1, 2, 0], Some(3))));
        let share = |sequence_number, job_id| {
            let mut m = WithTlvs::new(SubmitSharesExtended {
                channel_id: c,
                sequence_number,
                job_id,
                nonce: sequence_number,
                ntime: 1_700_000_000,
                version: 0x2000_0000,
                extranonce: B032::try_from(vec![4, 5, 6]).unwrap(),
            });
            m.push(UserIdentity::new(b"w1").unwrap().to_tlv().to_buf());
            MinerInput::Frames(vec![Frame::from_message(&m, &shared.pool).unwrap()])
        };
        for f in pool_job(5, 1, &shared) {
            assert!(a.on_upstream_frame(f, &shared, &mut out));
        }
        out.clear();
        a.on_channel_frames(1, share(0, 1), &shared, &mut out);
        assert_eq!(
            summary(&mut out)[0],
            "up: share ch 5 seq 0 job 1 extranonce [0, 4, 5, 6] tail 7"
        );

        assert!(
            a.attach(next_pool(&[7], 4, 9, false), &shared, &mut out)
                .is_empty()
        );
        for f in pool_job(9, 1, &shared) {
            assert!(a.on_upstream_frame(f, &shared, &mut out));
        }
        out.clear();
        let shown = 1u32.wrapping_add(JOB_EPOCH);
        a.on_channel_frames(1, share(1, shown), &shared, &mut out);
        assert_eq!(
            summary(&mut out)[0],
            "up: share ch 9 seq 0 job 1 extranonce [0, 4, 5, 6] tail 0"
        );
    }
}
