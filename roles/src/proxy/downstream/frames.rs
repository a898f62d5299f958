//! What a miner's frames do: forwarded on the fast path, handed to the router in
//! order (aggregating), opened as channels, or answered by the proxy.

use futures::Sink;
use sv2c_binary::messages::{
    CloseChannel, OpenExtendedMiningChannel, OpenMiningChannelError, OpenStandardMiningChannel,
    RawMessageRef, RequestExtensions, SetupConnection, SubmitSharesError, SubmitSharesExtended,
    SubmitSharesStandard, UpdateChannel, UpdateChannelError,
};
use sv2c_binary::{CHANNEL_BIT, MessageType, Str0255};
use sv2c_channels::codes;
use sv2c_channels::extensions::{Negotiated, negotiate};
use sv2c_codec::{CodecError, Frame};

use super::{Downstream, DownstreamError};
use crate::proxy::messages::{OpenRequest, RouterCmd, ToUpstream};
use crate::proxy::routing::RETIRED_PER_CONNECTION;
use crate::proxy::shared::Counters;
impl Downstream {
    /// One frame from the miner.
    pub(super) async fn on_frame<F>(
        &mut self,
        framed: &mut F,
        frame: Frame,
    ) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        let h = frame.header();
        let counters = &self.shared.counters;
        if h.channel_msg() {
            return self.on_channel_frame(framed, frame).await;
        }
        match (h.extension_id(), h.msg_type()) {
            (0, OpenStandardMiningChannel::MSG_TYPE | OpenExtendedMiningChannel::MSG_TYPE) => {
                let request = if h.msg_type() == OpenStandardMiningChannel::MSG_TYPE {
                    frame.decode().map(OpenRequest::Standard)
                } else {
                    frame.decode().map(OpenRequest::Extended)
                };
                drop(frame);
                let Ok(request) = request else {
                    // Dropped, as a pool drops it; the connection carries on.
                    Counters::add(&counters.frames_dropped, 1);
                    return Ok(());
                };
                if self.may_open(framed, request.request_id()).await? {
                    self.open(request)?;
                }
            }
            (0, SetupConnection::MSG_TYPE) => {
                return Err(DownstreamError::Protocol("second SetupConnection".into()));
            }
            (RequestExtensions::EXTENSION_TYPE, RequestExtensions::MSG_TYPE) => {
                // Only what the pool granted (see the module docs of `proxy`).
                let Ok(m) = frame.decode::<RequestExtensions>() else {
                    // Dropped, as a pool drops it; the connection carries on.
                    Counters::add(&counters.frames_dropped, 1);
                    return Ok(());
                };
                drop(frame);
                match negotiate(&m, &self.shared.upstream_extensions(), &[]) {
                    Negotiated::Success(answer) => self.send(framed, &answer).await?,
                    Negotiated::Error { error, .. } => self.send(framed, &error).await?,
                }
            }
            // Anything else that is not on a channel is for the proxy, which has no use
            // for it; unknown extensions are dropped silently (SV2-WIRE §2.4).
            _ => Counters::add(&counters.frames_dropped, 1),
        }
        Ok(())
    }

    /// A frame on a channel: aggregating, every one goes to the router in order; else a
    /// frame on one of the miner's channels is forwarded, and one on an unknown channel
    /// dropped ([`on_unknown_channel`](Self::on_unknown_channel)).
    async fn on_channel_frame<F>(
        &mut self,
        framed: &mut F,
        frame: Frame,
    ) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        let h = frame.header();
        let Some(channel) = frame.channel_id() else {
            // Too short to name a channel: dropped, as a pool drops a frame that does
            // not decode; the connection carries on.
            Counters::add(&self.shared.counters.frames_dropped, 1);
            return Ok(());
        };
        if self.shared.config.aggregate {
            // Everything on a channel goes to the router in the order it came, known
            // channel or not: the router checks ownership and answers each share,
            // close and update in order ([`Aggregate::on_channel_frames`]).
            if (h.extension_id(), h.msg_type()) == (0, CloseChannel::MSG_TYPE) {
                self.channels.remove(&channel);
            }
            self.channel_frames.push(frame);
            return Ok(());
        }
        if !self.channels.contains_key(&channel) {
            return self.on_unknown_channel(framed, channel, frame).await;
        }
        // Forwarded (the read loop forwards such frames before they reach here).
        self.forward_now(&RawMessageRef {
            extension_type: h.wire_extension_type(),
            msg_type: h.msg_type(),
            payload: frame.payload(),
        });
        Ok(())
    }

    /// Forwarding: a frame on a channel the miner does not have is dropped; a share is
    /// answered `SubmitShares.Error`, an `UpdateChannel` `UpdateChannel.Error`
    /// (`invalid-channel-id` both).
    async fn on_unknown_channel<F>(
        &mut self,
        framed: &mut F,
        channel: u32,
        frame: Frame,
    ) -> Result<(), DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        let h = frame.header();
        let counters = &self.shared.counters;
        let is_share = h.extension_id() == 0
            && matches!(
                h.msg_type(),
                SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE
            );
        Counters::add(&counters.frames_dropped, 1);
        if is_share {
            // Tell the miner; the sequence number follows the channel id in both
            // share messages.
            let sequence_number = frame
                .payload()
                .get(4..8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_le_bytes);
            let code = codes::INVALID_CHANNEL_ID;
            counters.shares_rejected.count(code.as_bytes());
            let error = SubmitSharesError {
                channel_id: channel,
                sequence_number,
                error_code: Str0255::from_static_str(code).unwrap_or_default(),
            };
            self.send(framed, &error).await?;
        } else if (h.extension_id(), h.msg_type()) == (0, UpdateChannel::MSG_TYPE) {
            // As the pool answers it (and the aggregating proxy).
            let error = UpdateChannelError {
                channel_id: channel,
                error_code: Str0255::from_static_str(codes::INVALID_CHANNEL_ID).unwrap_or_default(),
            };
            self.send(framed, &error).await?;
        }
        Ok(())
    }

    /// The forwarding fast path, for each frame as the read hands it out: a message on
    /// one of this miner's channels (a share, or any other channel message, including
    /// those of unknown extensions) is appended to `forwarded` with its channel id
    /// rewritten, never decoded. Returns `false` for anything else, and always when
    /// aggregating; [`on_frame`](Self::on_frame) handles those.
    pub(super) fn forward_now(&mut self, m: &RawMessageRef<'_>) -> bool {
        if m.extension_type & CHANNEL_BIT == 0 || self.shared.config.aggregate {
            return false;
        }
        let Some(channel) = m.payload.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)) else {
            return false;
        };
        let is_share = m.extension_type & !CHANNEL_BIT == 0
            && matches!(
                m.msg_type,
                SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE
            );
        let upstream_channel = match self.channels.get(&channel) {
            Some(&up) => up,
            // A share on a channel closed in this read or just before: the pool answers
            // it after the shares before it (the router keeps the route for answers).
            None if is_share => match self.closed.iter().find(|(d, _)| *d == channel) {
                Some(&(_, up)) => up,
                None => return false,
            },
            None => return false,
        };
        let counters = &self.shared.counters;
        if m.payload.len() > self.shared.config.max_upstream_payload {
            Counters::add(&counters.frames_dropped, 1);
            return true;
        }
        match (m.extension_type & !CHANNEL_BIT, m.msg_type) {
            (0, SubmitSharesStandard::MSG_TYPE | SubmitSharesExtended::MSG_TYPE) => {
                Counters::add(&counters.shares_forwarded, 1);
            }
            (0, CloseChannel::MSG_TYPE) => {
                if self.channels.remove(&channel).is_none() {
                    // Closed already: nothing more goes upstream.
                    Counters::add(&counters.frames_dropped, 1);
                    return true;
                }
                if self.closed.len() == RETIRED_PER_CONNECTION {
                    self.closed.pop_front();
                }
                self.closed.push_back((channel, upstream_channel));
                let _ = self.router.send(RouterCmd::Closed {
                    conn: self.conn,
                    upstream_channel,
                });
            }
            _ => {}
        }
        self.forwarded
            .push(m.extension_type, m.msg_type, upstream_channel, m.payload);
        true
    }

    /// Hands what the last read forwards to the upstream side, in one message: a full
    /// queue makes this miner wait (the miners slow down, not the pool connection).
    pub(super) async fn forward(&mut self) -> Result<(), DownstreamError> {
        let sent = match &self.to_upstream {
            ToUpstream::Writer(tx) if !self.forwarded.is_empty() => {
                tx.send(std::mem::take(&mut self.forwarded)).await.is_ok()
            }
            ToUpstream::Router(tx) if !self.channel_frames.is_empty() => {
                let frames = std::mem::take(&mut self.channel_frames);
                tx.send((self.conn, frames.into())).await.is_ok()
            }
            _ => true,
        };
        if sent {
            Ok(())
        } else {
            Err(DownstreamError::Dropped)
        }
    }

    /// Checks the channel limit; refuses the request if it is reached.
    async fn may_open<F>(
        &mut self,
        framed: &mut F,
        request_id: u32,
    ) -> Result<bool, DownstreamError>
    where
        F: Sink<Frame, Error = CodecError> + Unpin,
    {
        if self.channels.len() + self.opening < self.shared.config.max_channels_per_connection {
            return Ok(true);
        }
        let refusal = OpenMiningChannelError {
            request_id,
            error_code: Str0255::from_static_str(codes::TOO_MANY_CHANNELS).unwrap_or_default(),
        };
        self.send(framed, &refusal).await?;
        Ok(false)
    }

    fn open(&mut self, request: OpenRequest) -> Result<(), DownstreamError> {
        self.opening += 1;
        self.router
            .send(RouterCmd::Open {
                conn: self.conn,
                request,
            })
            .map_err(|_| DownstreamError::Dropped)
    }
}
