//! Miners' shares: checked as the pool checks them, answered in order, forwarded; the
//! ledger of those the pool has not answered.

use std::time::{Duration, Instant};

use sv2c_binary::messages::{
    CloseChannel, SetTarget, SubmitSharesExtended, SubmitSharesStandard, UpdateChannel,
    UpdateChannelError,
};
use sv2c_binary::{B032, Frameable, MessageType, U256};
use sv2c_channels::acks::{Acks, ShareAnswer};
use sv2c_channels::client::{Hashed, LocalReject};
use sv2c_channels::codes;
use sv2c_channels::pow::{harder, target_to_difficulty};
use sv2c_channels::server::{Share, ShareError};
use sv2c_channels::tailed::Tailed;
use sv2c_codec::{CodecError, Frame};

use super::{Aggregate, Kind, MAX_HELD_SHARES, MinerChannel, Out, Unconfirmed, error_code, framed};
use crate::proxy::messages::{MinerInput, ToDownstream};
use crate::proxy::routing::ConnId;
use crate::proxy::shared::{Counters, Shared};

/// The answers to the shares of one read ([`Aggregate::on_channel_frames`]), coalesced by
/// [`Acks`]: a channel's consecutive accepted shares get one `SubmitShares.Success`
/// (`new_shares_sum`: the sum of their difficulties), queued before any other answer and
/// after the run's last share.
pub(super) struct Answers<'a> {
    shared: &'a Shared,
    out: &'a mut Vec<Out>,
    acks: Acks<ConnId>,
}

impl<'a> Answers<'a> {
    /// No answers yet; they go to `out`.
    pub(super) fn new(shared: &'a Shared, out: &'a mut Vec<Out>) -> Self {
        Answers {
            shared,
            out,
            acks: Acks::new(),
        }
    }

    /// Queues `msg` for `conn` after the share answers before it.
    pub(super) fn push<M: Frameable>(&mut self, conn: ConnId, msg: &M) {
        self.send_ack();
        if let Some(f) = framed(msg, self.shared) {
            self.out.push(Out::Miner(conn, ToDownstream::Frame(f)));
        }
    }

    /// Queues the share answers so far, the open acknowledgement included.
    pub(super) fn send_ack(&mut self) {
        for (conn, answer) in self.acks.drain() {
            let f = match answer {
                ShareAnswer::Success(ok) => framed(&ok, self.shared),
                ShareAnswer::Error(e) => framed(&e, self.shared),
            };
            if let Some(f) = f {
                self.out.push(Out::Miner(conn, ToDownstream::Frame(f)));
            }
        }
    }

    /// Answers a share (`conn`, `channel_id`, `sequence_number`) with
    /// `SubmitShares.Error`, after the acknowledgement of the shares before it.
    pub(super) fn refuse(
        &mut self,
        (conn, channel_id, sequence_number): (ConnId, u32, u32),
        code: &str,
    ) {
        self.shared.counters.shares_rejected.count(code.as_bytes());
        self.acks.refused(conn, channel_id, sequence_number, code);
    }

    /// Counts an accepted share of `work` (its channel target's difficulty) into the open
    /// acknowledgement, or opens one if that is for another channel.
    pub(super) fn accepted(
        &mut self,
        (conn, channel_id, sequence_number): (ConnId, u32, u32),
        work: f64,
    ) {
        self.acks.accepted(conn, channel_id, sequence_number, work);
    }
}

/// `a` is at or before `b` in sequence-number order (which wraps).
fn at_or_before(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) < 1 << 31
}

impl Aggregate {
    /// The channel frames of one read of connection `conn`, in order: shares (see
    /// [`Self::on_share`]), `CloseChannel` and `UpdateChannel` are handled here, in the
    /// order the miner sent them, so that every share gets exactly one answer whatever
    /// follows it; anything else on a channel is dropped. A channel's consecutive
    /// accepted shares are acknowledged with one `SubmitShares.Success`
    /// (`new_submits_accepted_count` says how many, `new_shares_sum` the sum of their
    /// difficulties, as the pool counts it), queued before any other answer and after the run's last share.
    ///
    /// An SV1 miner's share ([`MinerInput::Sv1Share`]) comes with the hash its task
    /// computed: checked the same way, without hashing it again.
    pub(crate) fn on_channel_frames(
        &mut self,
        conn: ConnId,
        input: MinerInput,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) {
        let mut answers = Answers::new(shared, out);
        let now = Instant::now();
        let frames = match input {
            MinerInput::Frames(frames) => frames,
            MinerInput::Sv1Share(frame, hashed) => {
                self.on_share(conn, frame, Some(&hashed), &mut answers, now);
                answers.send_ack();
                return self.publish(shared);
            }
        };
        for frame in frames {
            let h = frame.header();
            match (h.extension_id(), h.msg_type()) {
                (0, SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE) => {
                    self.on_share(conn, frame, None, &mut answers, now);
                }
                (0, CloseChannel::MSG_TYPE) => {
                    if let Some(channel_id) = frame.channel_id() {
                        self.close(conn, channel_id);
                    }
                }
                (0, UpdateChannel::MSG_TYPE) => self.on_update_channel(conn, &frame, &mut answers),
                _ => Counters::add(&shared.counters.frames_dropped, 1),
            }
        }
        answers.send_ack();
        self.publish(shared);
    }

    /// `UpdateChannel` on a miner channel: an unknown channel (or another connection's)
    /// is answered `UpdateChannel.Error` `invalid-channel-id`, an all-zero
    /// `maximum_target` `max-target-out-of-range`; otherwise the channel keeps the
    /// harder of its `max_target` and the new one, and a channel target that becomes
    /// harder is sent as `SetTarget`. `nominal_hash_rate` is not used (the proxy's
    /// upstream channel has its own); no other answer is sent.
    fn on_update_channel(&mut self, conn: ConnId, frame: &Frame, answers: &mut Answers<'_>) {
        let Ok(m) = frame.decode::<UpdateChannel>() else {
            Counters::add(&answers.shared.counters.frames_dropped, 1);
            return;
        };
        let refuse = |code: &str| UpdateChannelError {
            channel_id: m.channel_id,
            error_code: error_code(code),
        };
        let upstream_target = *self.client.target();
        let Some(channel) = self
            .channels
            .get_mut(&m.channel_id)
            .filter(|c| c.conn == conn)
        else {
            return answers.push(conn, &refuse(codes::INVALID_CHANNEL_ID));
        };
        if m.maximum_target == U256([0; 32]) {
            return answers.push(conn, &refuse(codes::MAX_TARGET_OUT_OF_RANGE));
        }
        let before = harder(&upstream_target, &channel.max_target);
        channel.max_target = harder(&channel.max_target, &m.maximum_target);
        let after = harder(&upstream_target, &channel.max_target);
        if after != before {
            let set = SetTarget {
                channel_id: m.channel_id,
                maximum_target: after,
            };
            answers.push(conn, &set);
        }
    }

    /// A share from connection `conn`: checked as the pool checks it
    /// ([`ClientChannel::check`]: job, stale job, extranonce size, `ntime` window,
    /// version bits, the miner channel's own target), then for a duplicate, answered,
    /// and forwarded. An acceptance waits in `answers` until the run's last share or
    /// another answer, unless the pool has too many shares unconfirmed: then the
    /// miner's answer waits for the pool's ([`Ledger`]). With `hashed` (an SV1 miner's
    /// share, hashed by its task), the hash is not computed again
    /// ([`ClientChannel::check_hashed`]).
    fn on_share(
        &mut self,
        conn: ConnId,
        frame: Frame,
        hashed: Option<&Hashed>,
        answers: &mut Answers<'_>,
        now: Instant,
    ) {
        let channel_id = frame.channel_id().unwrap_or_default();
        // A frame that does not decode is not a share: dropped and counted, as the pool
        // drops it.
        let Ok(mut tailed) = decode_share(frame) else {
            Counters::add(&answers.shared.counters.frames_dropped, 1);
            return;
        };
        let share = &mut tailed.message;
        let refused = (conn, channel_id, share.sequence_number);
        let Some(channel) = self.channels.get(&channel_id).filter(|c| c.conn == conn) else {
            return answers.refuse(refused, codes::INVALID_CHANNEL_ID);
        };
        // A job of a pool the proxy left (or, between two pool connections, of the one
        // it lost): never sent to the new pool.
        if !self.attached || self.stale_jobs.contains(&share.job_id) {
            return answers.refuse(refused, codes::STALE_SHARE);
        }
        share.job_id = share.job_id.wrapping_sub(self.job_base);
        // The pool reads the TLV it granted (0x0002) and refuses a share whose
        // `user_identity` it cannot read: so does the proxy, before the proof of work.
        if self.forward_tlvs
            && sv2c_binary::tlv::TlvTail::new(tailed.tail.as_bytes())
                .user_identity()
                .is_err()
        {
            return answers.refuse(refused, codes::INVALID_USER_IDENTITY);
        }
        let (hash, extranonce, work) = match self.check(channel, &tailed.message, hashed) {
            Ok(checked) => checked,
            Err(code) => return answers.refuse(refused, code),
        };
        // An SV1 miner's connection (`hashed`) remembered its own shares on this tip
        // already, more of them than this table keeps per miner.
        if hashed.is_none() && !self.seen.insert(hash) {
            return answers.refuse(refused, ShareError::Duplicate.code());
        }
        let Ok(extranonce) = B032::try_from(extranonce) else {
            return answers.refuse(refused, codes::INVALID_SHARE);
        };
        self.forward(tailed, extranonce, (refused, work), answers, now);
    }

    /// `share` (its job id the pool's) checked on `channel` against the harder of the
    /// upstream target and the channel's `max_target`: its hash, its full extranonce
    /// (`S ‖ miner's bytes`) and its work (that target's difficulty), or the error code
    /// it is refused with.
    fn check(
        &self,
        channel: &MinerChannel,
        share: &SubmitSharesExtended,
        hashed: Option<&Hashed>,
    ) -> Result<([u8; 32], Vec<u8>, f64), &'static str> {
        let size = self.client.extranonce_size();
        let extranonce = match channel.kind {
            Kind::Standard => channel.rolled.clone(),
            Kind::Extended => [
                channel
                    .rolled
                    .get(..size.saturating_sub(channel.miner_size))
                    .unwrap_or_default(),
                share.extranonce.as_slice(),
            ]
            .concat(),
        };
        let target = harder(self.client.target(), &channel.max_target);
        let work = target_to_difficulty(&target);
        let checked = {
            let share = Share {
                job_id: share.job_id,
                nonce: share.nonce,
                ntime: share.ntime,
                version: share.version,
                extranonce: &extranonce,
            };
            match hashed {
                Some(hashed) => self.client.check_hashed(&share, hashed, &target),
                None => self.client.check(&share, &target),
            }
        };
        match checked {
            Ok(hash) => Ok((hash, extranonce, work)),
            Err(e) => {
                let e = match e {
                    // Sizes as the miner's channel sees them.
                    LocalReject::BadExtranonceSize { .. } => LocalReject::BadExtranonceSize {
                        got: share.extranonce.as_slice().len(),
                        expected: channel.miner_size,
                    },
                    e => e,
                };
                let (sequence_number, channel_id) = (share.sequence_number, share.channel_id);
                tracing::debug!("share {sequence_number} on channel {channel_id} refused: {e}");
                Err(e.code())
            }
        }
    }

    /// Sends a checked share to the pool on the proxy's channel (its own sequence number,
    /// `extranonce`, the `user_identity` TLV if the pool granted 0x0002) and enters it in
    /// the [`Ledger`](super::Ledger): the miner (`refused`: connection, channel, sequence
    /// number) is answered now, or, past [`ProxyConfig::max_unconfirmed_shares`], when
    /// the pool answers.
    ///
    /// [`ProxyConfig::max_unconfirmed_shares`]: crate::proxy::ProxyConfig::max_unconfirmed_shares
    fn forward(
        &mut self,
        tailed: Tailed<SubmitSharesExtended>,
        extranonce: B032,
        (refused, work): ((ConnId, u32, u32), f64),
        answers: &mut Answers<'_>,
        now: Instant,
    ) {
        let shared = answers.shared;
        let counters = &shared.counters;
        let Tailed {
            message: mut share,
            tail,
        } = tailed;
        let upstream_sequence = self.next_sequence;
        share.channel_id = self.upstream_channel;
        share.sequence_number = upstream_sequence;
        share.extranonce = extranonce;
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
        let Some(forwarded) = forwarded else {
            return answers.refuse(refused, codes::INVALID_SHARE);
        };
        self.next_sequence = self.next_sequence.wrapping_add(1);
        Counters::add(&counters.shares_forwarded, 1);
        answers.out.push(Out::Upstream(forwarded));
        let max = shared.config.max_unconfirmed_shares;
        let held = self.ledger.queue.len() > self.ledger.acknowledged;
        let hold = held || self.ledger.acknowledged >= max;
        self.ledger.queue.push_back(Unconfirmed {
            sequence_number: upstream_sequence,
            sent: now,
            held: hold.then_some((refused, work)),
        });
        if hold {
            // Answered when the pool answers ([`Self::on_pool_answer`]).
            answers.send_ack();
        } else {
            self.ledger.acknowledged += 1;
            Counters::add(&counters.shares_acknowledged, 1);
            answers.accepted(refused, work);
        }
    }

    /// The pool answered shares the proxy sent: `SubmitShares.Success` covers every
    /// share up to `last` (`error` is `None`); `SubmitShares.Error` the one with
    /// sequence number `last`. A share the miner was told `Success` for is counted
    /// confirmed or refused after acknowledgement; a held one gets the pool's answer.
    pub(super) fn on_pool_answer(
        &mut self,
        last: u32,
        error: Option<&[u8]>,
        answers: &mut Answers<'_>,
    ) {
        let counters = &answers.shared.counters;
        match error {
            None => {
                while let Some(first) = self.ledger.queue.front() {
                    if !at_or_before(first.sequence_number, last) {
                        break;
                    }
                    let Some(first) = self.ledger.queue.pop_front() else {
                        break;
                    };
                    match first.held {
                        None => {
                            self.ledger.acknowledged -= 1;
                            Counters::add(&counters.shares_confirmed, 1);
                        }
                        Some((share, work)) => answers.accepted(share, work),
                    }
                }
            }
            Some(code) => {
                let Some(at) = self
                    .ledger
                    .queue
                    .iter()
                    .position(|u| u.sequence_number == last)
                else {
                    counters.shares_rejected.count(code);
                    return;
                };
                let Some(refused) = self.ledger.queue.remove(at) else {
                    return;
                };
                match refused.held {
                    None => {
                        self.ledger.acknowledged -= 1;
                        Counters::add(&counters.shares_refused_after_ack, 1);
                        counters.shares_rejected.count(code);
                    }
                    Some((miner, _)) => {
                        answers.refuse(miner, &String::from_utf8_lossy(code));
                    }
                }
            }
        }
    }

    /// Whether a miner's answer has waited for the pool's for longer than `limit`, or
    /// [`MAX_HELD_SHARES`] do: the router then takes the pool as gone. (Shares the proxy
    /// acknowledged may wait longer: a pool may answer only every so many shares.)
    pub(crate) fn pool_is_silent(&self, now: Instant, limit: Duration) -> bool {
        let held = self.ledger.queue.len() - self.ledger.acknowledged;
        // Acknowledged shares come first in the queue: once one is held, every later one
        // is, until none is.
        held >= MAX_HELD_SHARES
            || self
                .ledger
                .queue
                .get(self.ledger.acknowledged)
                .is_some_and(|u| now.saturating_duration_since(u.sent) > limit)
    }
}

/// A share frame (`SubmitSharesStandard`, or `SubmitSharesExtended` with its TLV tail)
/// decoded as an extended share; a standard share's extranonce is empty.
fn decode_share(frame: Frame) -> Result<Tailed<SubmitSharesExtended>, CodecError> {
    if frame.header().msg_type() == SubmitSharesStandard::MSG_TYPE {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sequence numbers compare across the wrap.
    #[test]
    fn sequence_numbers_wrap() {
        assert!(at_or_before(5, 5));
        assert!(at_or_before(u32::MAX, 0));
        assert!(!at_or_before(0, u32::MAX));
        assert!(!at_or_before(6, 5));
    }
}
