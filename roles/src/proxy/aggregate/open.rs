//! A miner's channel opened on the proxy's: checked, answered, sent the work kept.

use sv2c_binary::messages::{
    OpenExtendedMiningChannelSuccess, OpenMiningChannelError, OpenStandardMiningChannelSuccess,
};
use sv2c_binary::{B032, U256};
use sv2c_channels::codes;
use sv2c_channels::pow::harder;
use sv2c_codec::Frame;

use super::{Aggregate, Kind, MinerChannel, Out, error_code, framed};
use crate::proxy::messages::{OpenRequest, ToDownstream};
use crate::proxy::routing::{ConnId, DOWNSTREAM_GROUP_ID, FIRST_DOWNSTREAM_CHANNEL_ID};
use crate::proxy::shared::Shared;

impl Aggregate {
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
            return refuse(codes::MIN_EXTRANONCE_SIZE_TOO_LARGE, out);
        }
        if self.channels.len() >= shared.config.max_channels {
            return refuse(codes::TOO_MANY_CHANNELS, out);
        }
        let Ok(sub_prefix) = self.sub_prefixes.allocate() else {
            return refuse(codes::TOO_MANY_CHANNELS, out);
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
            return refuse(codes::MIN_EXTRANONCE_SIZE_TOO_LARGE, out);
        };
        let target = harder(self.client.target(), &max_target);
        let opened = (request_id, channel_id, target, extranonce_prefix);
        let Some(reply) = self.success(kind, opened, shared) else {
            return refuse(codes::INTERNAL_ERROR, out);
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
            miner_size: match kind {
                Kind::Standard => 0,
                Kind::Extended => size - self.sub_prefix_len,
            },
            max_target,
        };
        self.send_work_kept(&channel, channel_id, shared, out);
        self.channels.insert(channel_id, channel);
    }

    /// The `Open…MiningChannel.Success` of a `kind` channel (request id, channel id,
    /// target, `extranonce_prefix`), framed; an extended one gets the extranonce bytes
    /// the sub-prefix leaves.
    fn success(
        &self,
        kind: Kind,
        (request_id, channel_id, target, extranonce_prefix): (u32, u32, U256, B032),
        shared: &Shared,
    ) -> Option<Frame> {
        match kind {
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
                    extranonce_size: (self.client.extranonce_size() - self.sub_prefix_len) as u16,
                    extranonce_prefix,
                    group_channel_id: DOWNSTREAM_GROUP_ID,
                },
                shared,
            ),
        }
    }

    /// What the pool sent so far, for a new channel: the tip's job (as a future job), the
    /// tip, then the later jobs as they came.
    fn send_work_kept(
        &self,
        channel: &MinerChannel,
        channel_id: u32,
        shared: &Shared,
        out: &mut Vec<Out>,
    ) {
        let conn = channel.conn;
        let tip = self.client.tip_job_id();
        for id in self.client.job_ids() {
            let future = Some(id) == tip;
            if let Some(job) = self.job_for(channel, id, channel_id, future, shared) {
                out.push(Out::Miner(conn, ToDownstream::Frame(job)));
            }
            if future
                && let Some(f) = self
                    .client
                    .prev_hash(channel_id)
                    .and_then(|m| framed(&self.shown(m), shared))
            {
                out.push(Out::Miner(conn, ToDownstream::Frame(f)));
            }
        }
    }
}
