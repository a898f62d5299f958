//! The forwarding mode's routing: each miner channel has its own upstream channel, its
//! frames forwarded with the channel id rewritten; opens and closes kept in the
//! [`ChannelMap`](crate::proxy::routing::ChannelMap).

use std::sync::atomic::Ordering::Relaxed;

use sv2c_binary::messages::{
    CloseChannel, OpenExtendedMiningChannelSuccess, OpenMiningChannelError,
    OpenStandardMiningChannelSuccess, SetGroupChannel, SubmitSharesError, SubmitSharesSuccess,
};
use sv2c_binary::{Frameable, MessageType};
use sv2c_codec::Frame;

use super::Router;
use crate::proxy::mailbox;
use crate::proxy::messages::{RouterCmd, ToDownstream};
use crate::proxy::routing::{ConnId, DOWNSTREAM_GROUP_ID};
use crate::proxy::shared::Counters;

/// An open request's Success from the pool (`$m`, either kind): the channel recorded, the
/// Success renumbered for the miner (its request and channel ids, the proxy's group).
macro_rules! opened {
    ($router:ident, $frame:ident, $m:ident) => {
        match $frame.decode::<$m>() {
            Ok(m) => $router.on_opened(
                m.request_id,
                m.channel_id,
                m.group_channel_id,
                move |request_id, channel_id| $m {
                    request_id,
                    channel_id,
                    group_channel_id: DOWNSTREAM_GROUP_ID,
                    ..m
                },
            ),
            Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
        }
    };
}

impl Router {
    /// [`on_command`](Self::on_command) in the forwarding mode: an open request goes to
    /// the pool under an upstream request id.
    pub(super) fn on_forward_command(&mut self, cmd: RouterCmd) {
        match cmd {
            RouterCmd::Register { conn, tx } => self.map.add_connection(conn, tx),
            RouterCmd::Open { conn, request } => {
                let downstream_request = request.request_id();
                let Some(id) = self.map.begin_open(conn, downstream_request) else {
                    return;
                };
                let frame = request.into_upstream(id, &self.shared.pool);
                match frame {
                    Ok(frame) => self.to_upstream(frame),
                    Err(e) => tracing::debug!(
                        "downstream #{conn}: open request {downstream_request} not forwarded: {e}"
                    ),
                }
            }
            RouterCmd::Closed {
                conn,
                upstream_channel,
            } => {
                if self.map.owner(upstream_channel) == Some(conn) {
                    self.map.retire_channel(upstream_channel);
                }
            }
            RouterCmd::Gone { conn } => self.drop_connection(conn),
            RouterCmd::Shutdown | RouterCmd::WriteFailed { .. } => {}
        }
    }

    /// [`on_upstream_frame`](Self::on_upstream_frame) when every miner channel has its
    /// own upstream channel.
    pub(super) fn forward_upstream_frame(&mut self, frame: Frame) {
        let h = frame.header();
        let counters = &self.shared.counters;
        if h.channel_msg() {
            return self.forward_channel_frame(frame);
        }
        if h.extension_id() != 0 {
            // Unknown extension, not a channel message: meant for the proxy, which
            // ignores it (SV2-WIRE §2.4).
            Counters::add(&counters.frames_dropped, 1);
            return;
        }
        match h.msg_type() {
            OpenStandardMiningChannelSuccess::MSG_TYPE => {
                opened!(self, frame, OpenStandardMiningChannelSuccess)
            }
            OpenExtendedMiningChannelSuccess::MSG_TYPE => {
                opened!(self, frame, OpenExtendedMiningChannelSuccess)
            }
            OpenMiningChannelError::MSG_TYPE => match frame.decode::<OpenMiningChannelError>() {
                Ok(m) => self.on_open_refused(m),
                Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
            },
            SetGroupChannel::MSG_TYPE => match frame.decode::<SetGroupChannel>() {
                Ok(m) => self.map.set_group(m.group_channel_id, m.channel_ids.iter()),
                Err(e) => tracing::warn!("upstream sent a bad message: {e}"),
            },
            _ => Counters::add(&counters.frames_dropped, 1),
        }
    }

    /// A frame on a channel from the pool: share answers are counted, a `CloseChannel`
    /// closes the miner's channel, and the frame goes on to its miner (or to every
    /// member of a group).
    fn forward_channel_frame(&mut self, mut frame: Frame) {
        let h = frame.header();
        let counters = &self.shared.counters;
        let Some(upstream_channel) = frame.channel_id() else {
            Counters::add(&counters.frames_dropped, 1);
            return;
        };
        let mut answer = false;
        if h.extension_id() == 0 {
            answer = matches!(
                h.msg_type(),
                SubmitSharesSuccess::MSG_TYPE | SubmitSharesError::MSG_TYPE
            );
            match h.msg_type() {
                SubmitSharesSuccess::MSG_TYPE => {
                    // Fixed-size message: decoding it owned allocates nothing.
                    if let Ok(s) = frame.decode::<SubmitSharesSuccess>() {
                        Counters::add(
                            &counters.shares_accepted,
                            u64::from(s.new_submits_accepted_count),
                        );
                    }
                }
                SubmitSharesError::MSG_TYPE => {
                    // channel id, sequence number, then the error code (STR0_255).
                    let p = frame.payload();
                    let code = p
                        .get(8)
                        .and_then(|&n| p.get(9..9 + usize::from(n)))
                        .unwrap_or_default();
                    counters.shares_rejected.count(code);
                }
                CloseChannel::MSG_TYPE => {
                    let closed = self.map.close_channel(upstream_channel);
                    let open = self.map.channel_count() as u64;
                    counters.channels_open.store(open, Relaxed);
                    if let Some((conn, downstream_channel)) = closed {
                        let _ = frame.set_channel_id(downstream_channel);
                        self.deliver(
                            conn,
                            ToDownstream::Closed {
                                downstream_channel,
                                frame,
                            },
                        );
                    }
                    return;
                }
                _ => {}
            }
        }
        self.route_channel_frame(upstream_channel, answer, frame);
    }

    /// The fast path: rewrite the channel id in place, pass the frame on. Answers to
    /// shares (`answer`) also reach a channel the miner closed since; a frame addressed
    /// to an upstream group goes to each member channel.
    fn route_channel_frame(&mut self, upstream_channel: u32, answer: bool, mut frame: Frame) {
        let route = match self.map.route(upstream_channel) {
            None if answer => self.map.retired_route(upstream_channel),
            route => route,
        };
        if let Some((tx, downstream_channel)) = route {
            let _ = frame.set_channel_id(downstream_channel);
            match tx.try_send(Box::new(ToDownstream::Frame(frame))) {
                Ok(()) => {}
                Err(mailbox::TrySendError::Full(_)) => {
                    if let Some(conn) = self.map.owner(upstream_channel) {
                        self.deliver_failed(conn);
                    }
                }
                Err(mailbox::TrySendError::Closed(_)) => {}
            }
        } else if let Some(targets) = self.map.group(upstream_channel).map(|members| {
            members
                .filter_map(|m| Some((self.map.owner(m)?, self.map.route(m)?.1)))
                .collect::<Vec<(ConnId, u32)>>()
        }) {
            // Addressed to an upstream group: one copy per member channel.
            let h = frame.header();
            for (conn, downstream_channel) in targets {
                let mut payload = self.shared.pool.acquire(frame.payload().len());
                payload.copy_from_slice(frame.payload());
                if let Ok(mut copy) = Frame::new(h.wire_extension_type(), h.msg_type(), payload) {
                    let _ = copy.set_channel_id(downstream_channel);
                    self.deliver(conn, ToDownstream::Frame(copy));
                }
            }
        } else {
            Counters::add(&self.shared.counters.frames_dropped, 1);
        }
    }

    /// The pool refused a channel: the miner that asked gets the refusal, under its own
    /// request id.
    fn on_open_refused(&mut self, mut m: OpenMiningChannelError) {
        let Some(refused) = self.map.fail_open(m.request_id) else {
            return;
        };
        let conn = refused.conn;
        m.request_id = refused.downstream_request_id;
        if let Ok(reply) = Frame::from_message(&m, &self.shared.pool) {
            self.deliver(conn, ToDownstream::Refused { reply });
        }
    }

    /// The pool opened a channel: record the route and answer the miner with `reply`
    /// built from (downstream request id, downstream channel id).
    fn on_opened<M: Frameable>(
        &mut self,
        upstream_request: u32,
        upstream_channel: u32,
        upstream_group: u32,
        reply: impl FnOnce(u32, u32) -> M,
    ) {
        let Some(opened) =
            self.map
                .complete_open(upstream_request, upstream_channel, upstream_group)
        else {
            // Nobody waits for this channel any more.
            self.close_upstream(upstream_channel);
            return;
        };
        let (conn, downstream_channel) = (opened.conn, opened.downstream_channel_id);
        let msg = reply(opened.downstream_request_id, downstream_channel);
        Counters::add(&self.shared.counters.channels_opened, 1);
        let open = self.map.channel_count() as u64;
        self.shared.counters.channels_open.store(open, Relaxed);
        match Frame::from_message(&msg, &self.shared.pool) {
            Ok(reply) => self.deliver(
                conn,
                ToDownstream::Opened {
                    downstream_channel,
                    upstream_channel,
                    reply,
                },
            ),
            Err(e) => tracing::debug!("downstream #{conn}: cannot answer open request: {e}"),
        }
    }
}
