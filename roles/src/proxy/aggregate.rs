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

use std::collections::HashMap;

use futures::{Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    CloseChannel, NewExtendedMiningJob, OpenExtendedMiningChannel,
    OpenExtendedMiningChannelSuccess, OpenMiningChannelError, OpenStandardMiningChannelSuccess,
    SetNewPrevHash, SetTarget, SubmitSharesError, SubmitSharesExtended, SubmitSharesStandard,
    SubmitSharesSuccess,
};
use sv2c_binary::{B032, Frameable, MessageType, Str0255, U256};
use sv2c_buffer_pool::BufferPool;
use sv2c_channels::client::{ClientChannel, LocalReject};
use sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING;
use sv2c_channels::pow::harder;
use sv2c_channels::server::{ExtranoncePrefixAllocator, RecentShares};
use sv2c_channels::tailed::Tailed;
use sv2c_codec::{CodecError, Frame};

use super::routing::{ConnId, DOWNSTREAM_GROUP_ID, FIRST_DOWNSTREAM_CHANNEL_ID};
use super::upstream::{OpenRequest, ToDownstream};
use super::{Counters, ProxyConfig, ProxyError, Shared};

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

/// The request id of the proxy's one `OpenExtendedMiningChannel`.
const UPSTREAM_REQUEST_ID: u32 = 1;

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
    /// The miner's `max_target`: its channel target is the harder of this and the
    /// upstream target.
    max_target: U256,
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
}

/// The answers to the shares of one read ([`Aggregate::on_shares`]): a channel's
/// consecutive accepted shares wait in `ack` and get one `SubmitShares.Success`, queued
/// before any other answer and after the read's last share.
struct Answers<'a> {
    shared: &'a Shared,
    out: &'a mut Vec<Out>,
    ack: Option<(ConnId, SubmitSharesSuccess)>,
}

impl Answers<'_> {
    /// Queues the pending acknowledgement, if any.
    fn send_ack(&mut self) {
        if let Some((conn, ok)) = self.ack.take()
            && let Some(f) = framed(&ok, self.shared)
        {
            self.out.push(Out::Miner(conn, ToDownstream::Frame(f)));
        }
    }

    /// Answers a share (`conn`, `channel_id`, `sequence_number`) with
    /// `SubmitShares.Error`, after the acknowledgement of the shares before it.
    fn refuse(&mut self, (conn, channel_id, sequence_number): (ConnId, u32, u32), code: &str) {
        self.send_ack();
        self.shared.counters.shares_rejected.count(code.as_bytes());
        let e = SubmitSharesError {
            channel_id,
            sequence_number,
            error_code: error_code(code),
        };
        if let Some(f) = framed(&e, self.shared) {
            self.out.push(Out::Miner(conn, ToDownstream::Frame(f)));
        }
    }

    /// Counts an accepted share into the pending acknowledgement, which is queued first
    /// if it is for another channel.
    fn accepted(&mut self, conn: ConnId, channel_id: u32, sequence_number: u32) {
        if let Some((c, ok)) = &mut self.ack
            && *c == conn
            && ok.channel_id == channel_id
        {
            ok.last_sequence_number = sequence_number;
            ok.new_submits_accepted_count += 1;
            ok.new_shares_sum += 1;
            return;
        }
        self.send_ack();
        let ok = SubmitSharesSuccess {
            channel_id,
            last_sequence_number: sequence_number,
            new_submits_accepted_count: 1,
            new_shares_sum: 1,
        };
        self.ack = Some((conn, ok));
    }
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
    match (h.extension_type(), h.msg_type()) {
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

/// A copy of `frame` addressed to `channel_id`.
fn copy_to(frame: &Frame, channel_id: u32, shared: &Shared) -> Option<Frame> {
    let h = frame.header();
    let mut payload = shared.pool.acquire(frame.payload().len());
    payload.copy_from_slice(frame.payload());
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
        }
    }

    /// Miner channels open now.
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// A miner asks for a channel: answered here, then sent the jobs and tip kept.
    pub(crate) fn open(
        &mut self,
        conn: ConnId,
        request: OpenRequest,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) {
        let (request_id, kind, min_size, max_target) = match &request {
            OpenRequest::Standard(m) => (m.request_id, Kind::Standard, 0, m.max_target),
            OpenRequest::Extended(m) => (
                m.request_id,
                Kind::Extended,
                usize::from(m.min_extranonce_size),
                m.max_target,
            ),
        };
        let size = self.client.extranonce_size();
        let refuse = |code: &str, out: &mut Vec<Out>| {
            let e = OpenMiningChannelError {
                request_id,
                error_code: error_code(code),
            };
            if let Some(reply) = framed(&e, shared) {
                out.push(Out::Miner(conn, ToDownstream::Refused { reply }));
            }
        };
        if min_size > size - self.sub_prefix_len {
            return refuse("min-extranonce-size-too-large", out);
        }
        let Ok(sub_prefix) = self.sub_prefixes.allocate() else {
            return refuse("too-many-channels", out);
        };
        let channel_id = self.next_channel;
        self.next_channel = self
            .next_channel
            .wrapping_add(1)
            .max(FIRST_DOWNSTREAM_CHANNEL_ID);
        let mut rolled = sub_prefix.clone();
        rolled.resize(size, 0);
        let prefix = match kind {
            Kind::Standard => [self.client.extranonce_prefix(), &rolled].concat(),
            Kind::Extended => [self.client.extranonce_prefix(), &sub_prefix].concat(),
        };
        let Ok(extranonce_prefix) = B032::try_from(prefix) else {
            return refuse("min-extranonce-size-too-large", out);
        };
        let target = harder(self.client.target(), &max_target);
        let reply = match kind {
            Kind::Standard => framed(
                &OpenStandardMiningChannelSuccess {
                    request_id,
                    channel_id,
                    target,
                    extranonce_prefix,
                    group_channel_id: DOWNSTREAM_GROUP_ID,
                },
                shared,
            ),
            Kind::Extended => framed(
                &OpenExtendedMiningChannelSuccess {
                    request_id,
                    channel_id,
                    target,
                    extranonce_size: (size - self.sub_prefix_len) as u16,
                    extranonce_prefix,
                    group_channel_id: DOWNSTREAM_GROUP_ID,
                },
                shared,
            ),
        };
        let Some(reply) = reply else {
            return refuse("internal-error", out);
        };
        out.push(Out::Miner(
            conn,
            ToDownstream::Opened {
                downstream_channel: channel_id,
                upstream_channel: channel_id,
                reply,
            },
        ));
        let channel = MinerChannel {
            conn,
            kind,
            rolled,
            max_target,
        };
        // What the pool sent so far: the tip's job (as a future job), the tip, then the
        // later jobs as they came.
        let tip = self.client.tip_job_id();
        for id in self.client.job_ids() {
            let future = Some(id) == tip;
            if let Some(job) = self.job_for(&channel, id, channel_id, future, shared) {
                out.push(Out::Miner(conn, ToDownstream::Frame(job)));
            }
            if future
                && let Some(f) = self
                    .client
                    .prev_hash(channel_id)
                    .and_then(|m| framed(&m, shared))
            {
                out.push(Out::Miner(conn, ToDownstream::Frame(f)));
            }
        }
        self.channels.insert(channel_id, channel);
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
        match channel.kind {
            Kind::Extended => framed(
                &self.client.extended_job(job_id, channel_id, future)?,
                shared,
            ),
            Kind::Standard => framed(
                &self
                    .client
                    .standard_job(job_id, channel_id, &channel.rolled, future)
                    .ok()?,
                shared,
            ),
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
    }

    /// A frame from the pool. Returns `false` if the pool closed the proxy's channel
    /// (the proxy then stops serving, as when the connection is lost).
    pub(crate) fn on_upstream_frame(
        &mut self,
        frame: Frame,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) -> bool {
        let h = frame.header();
        let counters = &shared.counters;
        let ours = frame
            .channel_id()
            .is_some_and(|c| c == self.upstream_channel || c == self.upstream_group);
        if !h.channel_msg() || !ours || h.extension_type() != 0 {
            Counters::add(&counters.frames_dropped, 1);
            return true;
        }
        match h.msg_type() {
            NewExtendedMiningJob::MSG_TYPE => {
                let Ok(m) = frame.decode::<NewExtendedMiningJob>() else {
                    return true;
                };
                self.client.on_new_job(&m);
                let future = m.min_ntime.is_none();
                for (&id, channel) in &self.channels {
                    let job = match channel.kind {
                        Kind::Extended => copy_to(&frame, id, shared),
                        Kind::Standard => self.job_for(channel, m.job_id, id, future, shared),
                    };
                    if let Some(job) = job {
                        out.push(Out::Miner(channel.conn, ToDownstream::Frame(job)));
                    }
                }
            }
            SetNewPrevHash::MSG_TYPE => {
                let Ok(m) = frame.decode::<SetNewPrevHash>() else {
                    return true;
                };
                self.client.on_set_new_prev_hash(&m);
                // Shares on the earlier tip are refused from now on: no duplicates there.
                self.seen.clear();
                for (&id, channel) in &self.channels {
                    if let Some(f) = copy_to(&frame, id, shared) {
                        out.push(Out::Miner(channel.conn, ToDownstream::Frame(f)));
                    }
                }
            }
            SetTarget::MSG_TYPE => {
                let Ok(m) = frame.decode::<SetTarget>() else {
                    return true;
                };
                self.client.on_set_target(&m);
                for (&id, channel) in &self.channels {
                    let m = SetTarget {
                        channel_id: id,
                        maximum_target: harder(&m.maximum_target, &channel.max_target),
                    };
                    if let Some(f) = framed(&m, shared) {
                        out.push(Out::Miner(channel.conn, ToDownstream::Frame(f)));
                    }
                }
            }
            SubmitSharesSuccess::MSG_TYPE => {
                if let Ok(s) = frame.decode::<SubmitSharesSuccess>() {
                    Counters::add(
                        &counters.shares_accepted,
                        u64::from(s.new_submits_accepted_count),
                    );
                }
            }
            SubmitSharesError::MSG_TYPE => {
                if let Ok(e) = frame.decode::<SubmitSharesError>() {
                    tracing::debug!(
                        "the pool refused share {}: {}",
                        e.sequence_number,
                        String::from_utf8_lossy(e.error_code.as_bytes())
                    );
                    counters.shares_rejected.count(e.error_code.as_bytes());
                }
            }
            CloseChannel::MSG_TYPE => {
                tracing::warn!("the pool closed the proxy's channel");
                return false;
            }
            _ => Counters::add(&counters.frames_dropped, 1),
        }
        true
    }

    /// The shares of one read of a miner, in order (see [`Self::on_share`]). A channel's
    /// consecutive accepted shares are acknowledged with one `SubmitShares.Success`
    /// (`new_submits_accepted_count` says how many, as the spec allows).
    pub(crate) fn on_shares(&mut self, frames: Vec<Frame>, shared: &Shared, out: &mut Vec<Out>) {
        let mut answers = Answers {
            shared,
            out,
            ack: None,
        };
        for frame in frames {
            self.on_share(frame, &mut answers);
        }
        answers.send_ack();
    }

    /// A share from a miner (on a channel it owns: its connection checked that): checked
    /// with the upstream channel, answered, and forwarded if it meets the target. An
    /// acceptance waits in `answers` until the read's last share or another answer.
    fn on_share(&mut self, frame: Frame, answers: &mut Answers<'_>) {
        let shared = answers.shared;
        let counters = &shared.counters;
        let channel_id = frame.channel_id().unwrap_or_default();
        let Some(conn) = self.channels.get(&channel_id).map(|c| c.conn) else {
            // Closed while the share was queued.
            Counters::add(&counters.frames_dropped, 1);
            return;
        };
        let standard = frame.header().msg_type() == SubmitSharesStandard::MSG_TYPE;
        let decoded = if standard {
            frame.decode::<SubmitSharesStandard>().map(|m| {
                let share = SubmitSharesExtended {
                    channel_id: m.channel_id,
                    sequence_number: m.sequence_number,
                    job_id: m.job_id,
                    nonce: m.nonce,
                    ntime: m.ntime,
                    version: m.version,
                    extranonce: B032::default(),
                };
                Tailed {
                    message: share,
                    tail: Default::default(),
                }
            })
        } else {
            frame.decode::<Tailed<SubmitSharesExtended>>()
        };
        drop(frame);
        let Ok(Tailed {
            message: mut share,
            tail,
        }) = decoded
        else {
            Counters::add(&counters.frames_dropped, 1);
            return;
        };
        let sequence_number = share.sequence_number;
        let refused = (conn, channel_id, sequence_number);
        let Some(channel) = self.channels.get(&channel_id).filter(|c| c.conn == conn) else {
            return answers.refuse(refused, "invalid-channel-id");
        };
        let extranonce = match channel.kind {
            Kind::Standard => channel.rolled.clone(),
            Kind::Extended => [
                &channel.rolled[..self.sub_prefix_len],
                share.extranonce.as_slice(),
            ]
            .concat(),
        };
        let checked = self.client.check_share(
            share.job_id,
            &extranonce,
            share.version,
            share.ntime,
            share.nonce,
        );
        let hash = match checked {
            Ok(hash) => hash,
            Err(e) => {
                let e = match e {
                    // Sizes as the miner's channel sees them.
                    LocalReject::BadExtranonceSize { .. } => LocalReject::BadExtranonceSize {
                        got: share.extranonce.as_slice().len(),
                        expected: self.client.extranonce_size() - self.sub_prefix_len,
                    },
                    e => e,
                };
                tracing::debug!("share {sequence_number} on channel {channel_id} refused: {e}");
                return answers.refuse(refused, e.code());
            }
        };
        if !self.seen.insert(hash) {
            return answers.refuse(refused, "duplicate-share");
        }
        answers.accepted(conn, channel_id, sequence_number);
        let Ok(extranonce) = B032::try_from(extranonce) else {
            return;
        };
        share.channel_id = self.upstream_channel;
        share.sequence_number = self.next_sequence;
        share.extranonce = extranonce;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        let forwarded = if self.forward_tlvs && !tail.as_bytes().is_empty() {
            framed(
                &Tailed {
                    message: share,
                    tail,
                },
                shared,
            )
        } else {
            framed(&share, shared)
        };
        if let Some(f) = forwarded {
            Counters::add(&counters.shares_forwarded, 1);
            answers.out.push(Out::Upstream(f));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::messages::OpenStandardMiningChannel;

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
}
