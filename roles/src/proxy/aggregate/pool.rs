//! The pool's side of the proxy's channel: its frames (jobs, chain tip, target, share
//! answers), and the move of every miner channel from one pool connection to the next.

use std::collections::HashSet;

use sv2c_binary::messages::{
    CloseChannel, NewExtendedMiningJob, SetExtranoncePrefix, SetNewPrevHash, SetTarget,
    SubmitSharesError, SubmitSharesSuccess,
};
use sv2c_binary::{B032, MessageType};
use sv2c_channels::codes;
use sv2c_channels::pow::harder;
use sv2c_codec::Frame;

use super::shares::Answers;
use super::{Aggregate, JOB_EPOCH, Kind, MAX_STALE_JOBS, MinerChannel, Out, copy_to, framed};
use crate::proxy::messages::ToDownstream;
use crate::proxy::routing::ConnId;
use crate::proxy::shared::{Counters, Shared};

/// `channel`'s extranonce on an upstream channel of prefix `prefix` and `size` bytes
/// to roll, with sub-prefixes of `sub` bytes: what its shares carry upstream (`S ‖
/// zeros`, `size` bytes) and its new `extranonce_prefix`; `None` if the miner's own
/// bytes do not fit, or the prefix passes 32 bytes.
fn moved_prefix(
    channel: &MinerChannel,
    prefix: &[u8],
    sub: usize,
    size: usize,
) -> Option<(Vec<u8>, B032)> {
    let before_miner = size.checked_sub(channel.miner_size)?;
    if before_miner < sub {
        return None;
    }
    let mut rolled = channel.rolled.get(..sub)?.to_vec();
    rolled.resize(size, 0);
    let miner_prefix = [prefix, &rolled[..before_miner]].concat();
    Some((rolled, B032::try_from(miner_prefix).ok()?))
}

impl Aggregate {
    /// The pool connection is gone, or being left: nothing more comes from it. What it
    /// did not answer is settled as when a pool is lost: a share its miner was told
    /// `Success` for stays acknowledged (counted in
    /// [`ProxyStats::shares_left_unconfirmed`](crate::proxy::ProxyStats::shares_left_unconfirmed)),
    /// one whose answer waited for the pool's is answered `stale-share`. Its jobs (as
    /// miners were sent them) are remembered: shares on them are `stale-share`, as is
    /// every share until the next pool connection ([`Self::attach`]).
    pub(crate) fn detach(&mut self, shared: &Shared, out: &mut Vec<Out>) {
        if !self.attached {
            return;
        }
        self.attached = false;
        let counters = &shared.counters;
        let mut answers = Answers::new(shared, out);
        for unconfirmed in std::mem::take(&mut self.ledger.queue) {
            match unconfirmed.held {
                None => Counters::add(&counters.shares_left_unconfirmed, 1),
                Some((share, _)) => answers.refuse(share, codes::STALE_SHARE),
            }
        }
        self.ledger.acknowledged = 0;
        answers.send_ack();
        self.publish(shared);
        let base = self.job_base;
        self.stale_jobs = self
            .client
            .job_ids()
            .map(|id| id.wrapping_add(base))
            .take(MAX_STALE_JOBS)
            .collect();
        self.seen.clear();
    }

    /// Moves every miner channel to `next`, the proxy's channel on a new pool connection
    /// (detaching from the current one first, [`Self::detach`]): each channel keeps its
    /// id, its sub-prefix `S` and (extended) its `extranonce_size`, and is sent
    /// `SetExtranoncePrefix` (standard: `P' ‖ S ‖ zeros`, the whole extranonce;
    /// extended: `P' ‖ S ‖ zeros` up to where the miner's bytes start) and `SetTarget`
    /// (the new upstream target, or the miner's `max_target` if harder); the new pool's
    /// jobs and tip follow as it sends them, their ids shifted by a new
    /// [`job_base`](Self::job_base). Extensions are the new pool's: a `user_identity` TLV
    /// goes upstream only if it granted 0x0002.
    ///
    /// Returns the connections whose channels cannot be moved (an extended channel that
    /// rolls more bytes than the new pool leaves it, or a prefix past 32 bytes): their
    /// channels are closed here, and the router tells them to reconnect.
    pub(crate) fn attach(
        &mut self,
        next: Aggregate,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) -> Vec<ConnId> {
        self.detach(shared, out);
        self.upstream_channel = next.upstream_channel;
        self.upstream_group = next.upstream_group;
        self.client = next.client;
        self.forward_tlvs = next.forward_tlvs;
        self.next_sequence = 0;
        self.job_base = self.job_base.wrapping_add(JOB_EPOCH);
        self.attached = true;
        shared.sv1_jobs.on_switch(&self.client, self.job_base);
        let size = self.client.extranonce_size();
        let prefix = self.client.extranonce_prefix().to_vec();
        let target = *self.client.target();
        let sub = self.sub_prefix_len;
        // A set: a pool that leaves too few bytes may leave every connection out.
        let mut gone: HashSet<ConnId> = HashSet::new();
        let mut ids: Vec<u32> = self.channels.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(channel) = self.channels.get_mut(&id) else {
                continue;
            };
            if gone.contains(&channel.conn) {
                continue;
            }
            let Some((rolled, extranonce_prefix)) = moved_prefix(channel, &prefix, sub, size)
            else {
                gone.insert(channel.conn);
                continue;
            };
            channel.rolled = rolled;
            let set_prefix = SetExtranoncePrefix {
                channel_id: id,
                extranonce_prefix,
            };
            let set_target = SetTarget {
                channel_id: id,
                maximum_target: harder(&target, &channel.max_target),
            };
            for f in [framed(&set_prefix, shared), framed(&set_target, shared)]
                .into_iter()
                .flatten()
            {
                out.push(Out::Miner(channel.conn, ToDownstream::Frame(f)));
            }
        }
        let mut gone: Vec<ConnId> = gone.into_iter().collect();
        gone.sort_unstable();
        for &conn in &gone {
            self.drop_connection(conn);
        }
        gone
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
        if !h.channel_msg() || !ours || h.extension_id() != 0 {
            Counters::add(&counters.frames_dropped, 1);
            return true;
        }
        match h.msg_type() {
            NewExtendedMiningJob::MSG_TYPE => self.on_new_job(&frame, shared, out),
            SetNewPrevHash::MSG_TYPE => self.on_prev_hash(&frame, shared, out),
            SetTarget::MSG_TYPE => self.on_set_target(&frame, shared, out),
            SubmitSharesSuccess::MSG_TYPE => {
                if let Ok(s) = frame.decode::<SubmitSharesSuccess>() {
                    Counters::add(
                        &counters.shares_accepted,
                        u64::from(s.new_submits_accepted_count),
                    );
                    self.on_answered(s.last_sequence_number, None, shared, out);
                }
            }
            SubmitSharesError::MSG_TYPE => {
                if let Ok(e) = frame.decode::<SubmitSharesError>() {
                    tracing::debug!(
                        "the pool refused share {}: {}",
                        e.sequence_number,
                        String::from_utf8_lossy(e.error_code.as_bytes())
                    );
                    let code = e.error_code.as_bytes();
                    self.on_answered(e.sequence_number, Some(code), shared, out);
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

    /// The pool's `NewExtendedMiningJob`: kept, and sent to every miner channel (an
    /// extended one gets the pool's job, a standard one its own merkle root).
    fn on_new_job(&mut self, frame: &Frame, shared: &Shared, out: &mut Vec<Out>) {
        let Ok(m) = frame.decode::<NewExtendedMiningJob>() else {
            return;
        };
        self.client.on_new_job(&m);
        shared.sv1_jobs.on_job(&self.client, &m);
        let future = m.min_ntime.is_none();
        let shown = m.job_id.wrapping_add(self.job_base);
        // This pool's job now: a share on it is not one of the old pool's.
        self.stale_jobs.remove(&shown);
        for (&id, channel) in &self.channels {
            let job = match channel.kind {
                Kind::Extended => copy_to(frame, id, Some(shown), shared),
                Kind::Standard => self.job_for(channel, m.job_id, id, future, shared),
            };
            if let Some(job) = job {
                out.push(Out::Miner(channel.conn, ToDownstream::Frame(job)));
            }
        }
    }

    /// The pool's `SetNewPrevHash`: the new chain tip, sent to every miner channel.
    fn on_prev_hash(&mut self, frame: &Frame, shared: &Shared, out: &mut Vec<Out>) {
        let Ok(m) = frame.decode::<SetNewPrevHash>() else {
            return;
        };
        self.client.on_set_new_prev_hash(&m);
        shared.sv1_jobs.on_prev_hash(&self.client, &m);
        // Shares on the earlier tip are refused from now on: no duplicates there.
        self.seen.clear();
        let shown = Some(m.job_id.wrapping_add(self.job_base));
        for (&id, channel) in &self.channels {
            if let Some(f) = copy_to(frame, id, shown, shared) {
                out.push(Out::Miner(channel.conn, ToDownstream::Frame(f)));
            }
        }
    }

    /// The pool's `SetTarget`: every miner channel gets the harder of it and its own
    /// `max_target`.
    fn on_set_target(&mut self, frame: &Frame, shared: &Shared, out: &mut Vec<Out>) {
        let Ok(m) = frame.decode::<SetTarget>() else {
            return;
        };
        self.client.on_set_target(&m);
        shared.sv1_jobs.on_target(&self.client);
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

    /// The pool answered shares up to `last` (`error`: it refused that one): the miners
    /// whose answers waited for it get them ([`Self::on_pool_answer`]).
    fn on_answered(
        &mut self,
        last: u32,
        error: Option<&[u8]>,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) {
        let mut answers = Answers::new(shared, out);
        self.on_pool_answer(last, error, &mut answers);
        answers.send_ack();
        self.publish(shared);
    }
}
