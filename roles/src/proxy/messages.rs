//! What the proxy's tasks send each other: the miners' connection tasks, the router (the
//! pool connection's reads, the channel map, the aggregating state) and the writer to
//! the pool.

use sv2c_binary::Header;
use sv2c_binary::messages::{OpenExtendedMiningChannel, OpenStandardMiningChannel};
use sv2c_buffer_pool::BufferPool;
use sv2c_channels::client::Hashed;
use sv2c_codec::{CodecError, Frame, FrameCodec};
use tokio::sync::mpsc;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Encoder;

use super::routing::ConnId;

/// What the router (the owner of the [`ChannelMap`](super::routing::ChannelMap)) is told by the connection tasks.
#[derive(Debug)]
pub(crate) enum RouterCmd {
    /// A miner finished `SetupConnection`; frames for it go to `tx`.
    Register {
        conn: ConnId,
        tx: super::mailbox::Sender<Box<ToDownstream>>,
    },
    /// A miner asks for a channel.
    Open { conn: ConnId, request: OpenRequest },
    /// A miner closed one of its channels (the `CloseChannel` frame is already on its way
    /// upstream).
    Closed { conn: ConnId, upstream_channel: u32 },
    /// A miner's connection is gone.
    Gone { conn: ConnId },
    /// The proxy shuts down: tell every miner to reconnect, then stop (dropping every
    /// miner's queue, which closes its connection once written).
    Shutdown,
    /// The writer of pool connection `generation` (the router's count of pool
    /// connections) could not write to the pool (an error, or a write that did not finish
    /// within [`ProxyConfig::write_timeout`](super::ProxyConfig::write_timeout)): the
    /// pool is treated as gone, if it is still the current one.
    WriteFailed { generation: u64 },
}

/// A miner's open request (decoded, owned).
#[derive(Debug)]
pub(crate) enum OpenRequest {
    Standard(OpenStandardMiningChannel),
    Extended(OpenExtendedMiningChannel),
}

impl OpenRequest {
    /// The miner's `request_id`.
    pub(crate) fn request_id(&self) -> u32 {
        match self {
            OpenRequest::Standard(m) => m.request_id,
            OpenRequest::Extended(m) => m.request_id,
        }
    }

    /// The request as the pool is sent it: under `request_id`, encoded.
    pub(crate) fn into_upstream(
        mut self,
        request_id: u32,
        pool: &BufferPool,
    ) -> Result<Frame, CodecError> {
        match &mut self {
            OpenRequest::Standard(m) => m.request_id = request_id,
            OpenRequest::Extended(m) => m.request_id = request_id,
        }
        match &self {
            OpenRequest::Standard(m) => Frame::from_message(m, pool),
            OpenRequest::Extended(m) => Frame::from_message(m, pool),
        }
    }
}

/// What a miner's connection task receives (boxed: a miner's queue allocates its slots
/// in blocks of 32, so a small element keeps an idle miner's queue small).
#[derive(Debug)]
pub(crate) enum ToDownstream {
    /// A frame to write, channel id already rewritten.
    Frame(Frame),
    /// A channel opened: remember `downstream_channel → upstream_channel`, then write
    /// `reply` (the open request's Success).
    Opened {
        downstream_channel: u32,
        upstream_channel: u32,
        reply: Frame,
    },
    /// The open request was refused: write `reply`.
    Refused { reply: Frame },
    /// The pool closed a channel: forget it, then write `frame` (the `CloseChannel`).
    Closed {
        downstream_channel: u32,
        frame: Frame,
    },
}

/// What one miner's read forwards to the pool: its frames back to back as they go on the
/// wire in plaintext, channel ids already rewritten, copied once out of the read's buffer.
/// The writer hands them to the upstream codec in one call (the Noise codec seals them
/// frame by frame), so a forwarded share costs no pool slot, allocation or codec call of
/// its own.
#[derive(Debug, Default)]
pub(crate) struct Forwarded {
    bytes: Vec<u8>,
    pub(crate) frames: usize,
}

impl Forwarded {
    /// Appends a frame with `channel` in place of the payload's leading channel id. The
    /// caller checks the payload against the upstream limit; a payload shorter than a
    /// channel id or longer than the protocol allows is not appended (`false`).
    pub(crate) fn push(
        &mut self,
        wire_extension_type: u16,
        msg_type: u8,
        channel: u32,
        payload: &[u8],
    ) -> bool {
        let (Ok(header), Some(rest)) = (
            Header::new(wire_extension_type, msg_type, payload.len()),
            payload.get(4..),
        ) else {
            return false;
        };
        self.bytes.reserve(Header::SIZE + payload.len());
        self.bytes.extend_from_slice(&header.to_bytes());
        self.bytes.extend_from_slice(&channel.to_le_bytes());
        self.bytes.extend_from_slice(rest);
        self.frames += 1;
        true
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frames == 0
    }
}

/// What the writer sends to the pool: a frame of the proxy's own (the router's control
/// frames) or what one miner's read forwards.
#[derive(Debug)]
pub(crate) enum Upward {
    Frame(Frame),
    Forwarded(Forwarded),
}

impl Encoder<Upward> for FrameCodec {
    type Error = CodecError;

    fn encode(&mut self, item: Upward, dst: &mut BytesMut) -> Result<(), CodecError> {
        match item {
            Upward::Frame(frame) => self.encode(frame, dst),
            Upward::Forwarded(f) => {
                dst.extend_from_slice(&f.bytes);
                Ok(())
            }
        }
    }
}

/// Where a miner's task sends what one read forwards: the writer (each miner channel has
/// its own upstream channel), or the router, which checks and answers the shares
/// (aggregating).
#[derive(Debug, Clone)]
pub(crate) enum ToUpstream {
    Writer(mpsc::Sender<Forwarded>),
    Router(mpsc::Sender<(ConnId, MinerInput)>),
}

/// What a miner's task hands the router (aggregating).
#[derive(Debug)]
pub(crate) enum MinerInput {
    /// An Sv2 miner's channel frames of one read.
    Frames(Vec<Frame>),
    /// An SV1 miner's share, a `SubmitSharesExtended` frame on its miner channel, that
    /// its task checked already and found to meet the upstream target: the router checks
    /// it against its own state with the hash the task computed
    /// ([`ClientChannel::check_hashed`](sv2c_channels::client::ClientChannel::check_hashed)).
    Sv1Share(Frame, Hashed),
}

impl From<Vec<Frame>> for MinerInput {
    fn from(frames: Vec<Frame>) -> MinerInput {
        MinerInput::Frames(frames)
    }
}
