//! Stratum V2 in one import.
//!
//! `sv2c` re-exports what a pool, proxy or miner author needs from the workspace's crates
//! and from `bytes`, `tokio-util` and `futures`, so one dependency and one `use` suffice.
//! Each crate is also reachable whole under its own name:
//!
//! | module | crate | what |
//! |---|---|---|
//! | [`binary`] (and the crate root) | `sv2c-binary` | data types, `Encode`/`Decode`, every message, typed `SetupConnection` flags, the frame `Header` |
//! | [`codec`] | `sv2c-codec` | framing, `Sv2Codec`/`FrameCodec` for `Framed`, [`Connection`] (plain or Noise), `read_batch` |
//! | [`noise`] (feature `noise`, default) | `sv2c-codec` over `sv2c-noise` | the Noise NX handshake (`connect`, `accept`), keys and certificates, `NoiseIdentity` for servers |
//! | [`buffer_pool`] | `sv2c-buffer-pool` | the fixed-capacity pool of frame buffers |
//! | [`channels`] | `sv2c-channels` | channel logic, sans-io: jobs, share checks, vardiff, extensions |
//! | `sv1` (feature `sv1`) | `sv2c-sv1` | Stratum V1 messages and the `Sv1Codec` |
//! | [`Wire`](derive@Wire), [`MessageSet`](derive@MessageSet) | `sv2c-derive` | the derives for messages and message sets of your own |
//!
//!
//! ```
//! use sv2c::prelude::*;
//!
//! /// An extension message of your own: the derives work through this crate, no attribute
//! /// needed.
//! #[derive(Debug, Clone, PartialEq, Wire)]
//! #[sv2(extension_type = 0x4a11, msg_type = 0x02)]
//! pub struct WorkerReport {
//!     pub worker: Str0255,
//!     pub shares: u32,
//! }
//!
//! /// The standard messages and yours on one connection.
//! #[derive(Debug, Clone, PartialEq, MessageSet)]
//! pub enum MyProtocol {
//!     Std(Message),
//!     Report(WorkerReport),
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (a, b) = tokio::io::duplex(4096);
//! let mut miner = Framed::new(a, Sv2Codec::<MyProtocol>::new());
//! let mut pool = Framed::new(b, Sv2Codec::<MyProtocol>::new());
//! miner.send(SetupConnection {
//!     protocol: Protocol::Mining,
//!     min_version: 2,
//!     max_version: 2,
//!     flags: MiningSetupFlags::REQUIRES_VERSION_ROLLING.bits(),
//!     vendor: "acme".parse()?,
//!     ..Default::default()
//! }).await?;
//! miner.send(WorkerReport { worker: "rig-1".parse()?, shares: 3 }).await?;
//! miner.flush_frames().await?;
//!
//! let Some(MyProtocol::Std(Message::SetupConnection(setup))) = pool.next().await.transpose()? else {
//!     panic!("expected SetupConnection");
//! };
//! assert_eq!(setup.vendor.to_string(), "acme");
//! // A pool that supports version rolling and nothing else refuses the rest by name.
//! let refused = setup.mining_flags().unwrap().unsupported(MiningSetupFlags::REQUIRES_VERSION_ROLLING);
//! assert!(refused.is_empty());
//! let Some(MyProtocol::Report(report)) = pool.next().await.transpose()? else {
//!     panic!("expected WorkerReport");
//! };
//! assert_eq!(report.shares, 3);
//! # Ok(())
//! # }
//! ```
//!
//! # What is where
//! * The crate root is `sv2c-binary`'s root (data types, `Encode`/`Decode`/`Wire`, the
//!   [`messages`] catalog), where [`Message`] is the dispatch enum of every message
//!   (the bound "an owned message type" is [`OwnedMessage`]), plus the codecs
//!   ([`Sv2Codec`], [`FrameCodec`], [`FrameDecoder`], [`Frame`]), [`read_batch`] (the
//!   borrowed read loop over a `Framed`), [`Connection`] (a plain or Noise connection
//!   behind one type), the [`BufferPool`], [`noise`] (feature `noise`, on by default) and
//!   [`FramedExt`].
//! * `sv1` (feature `sv1`, off by default): Stratum V1 messages and codec, `sv2c-sv1`.
//! * [`prelude`]: everything above a connection handler uses, including `Framed`,
//!   `SinkExt`/`StreamExt` and `BufMut`.
//! * The derives [`Wire`](derive@Wire) and [`MessageSet`](derive@MessageSet) as
//!   re-exported here emit `::sv2c` paths, so a crate depending only on `sv2c` needs no
//!   `#[sv2(crate = ...)]`.
//!
//! # Unknown messages
//! `Sv2Codec<M>` skips frames whose message `M` does not know (spec §2.4, counted by
//! `skipped_frames()`); `Sv2Codec<MessageOrRaw<M>>` yields them as raw, forwardable items
//! instead (for proxies). See the codec's docs and `docs/adr/0003-unknown-frames.md`.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

use futures::sink::{Close, Flush};
use futures::{Sink, SinkExt};

pub use sv2c_binary::*;

/// The dispatch enum of every message of the protocol (spec §3).
pub use sv2c_binary::messages::Message;

/// Derives [`Wire`](trait@Wire) for a struct: see `sv2c_binary::Wire` for the attributes.
/// Generated code names this crate (`::sv2c`).
pub use sv2c_derive::__WireFacade as Wire;

/// Derives [`MessageSet`](trait@MessageSet) for an enum of message sets and messages: see
/// `sv2c_binary::MessageSet`'s derive. Generated code names this crate (`::sv2c`).
pub use sv2c_derive::__MessageSetFacade as MessageSet;

pub use sv2c_buffer_pool::{BufferPool, PoolBuf, PoolBufMut, PoolError, PoolStats};
#[cfg(feature = "noise")]
pub use sv2c_codec::noise;
pub use sv2c_codec::{
    BatchDecoder, BatchRead, CodecError, Connection, Frame, FrameCodec, FrameDecoder, Header,
    MAX_PAYLOAD_LEN, Sv2Codec, read_batch,
};

/// The binary crate (`sv2c-binary`), with its module layout ([`binary::wire`],
/// [`binary::dispatch`], …).
pub use sv2c_binary as binary;
/// The buffer pool crate (`sv2c-buffer-pool`).
pub use sv2c_buffer_pool as buffer_pool;
/// Channel logic, sans-io: extensions, jobs, share validation (the `sv2c-channels` crate).
pub use sv2c_channels as channels;
/// The framing crate (`sv2c-codec`).
pub use sv2c_codec as codec;
/// Stratum V1: typed messages, `SubmitRef` and the `Sv1Codec` (the `sv2c-sv1` crate;
/// feature `sv1`).
#[cfg(feature = "sv1")]
pub use sv2c_sv1 as sv1;

/// Flushing and closing a `Framed` whose codec encodes many item types.
///
/// [`Sv2Codec`] encodes any [`Frameable`], so `framed.flush()` cannot infer which
/// `Sink<Item>` is meant: it fails with `E0283 type annotations needed … cannot satisfy
/// _: Frameable` (an ambiguity the compiler reports before any trait's diagnostic can
/// help). Call `framed.flush_frames()` instead, or hold a [`Connection`], whose own
/// `flush()` needs no annotation. These methods pick an item type for you; flushing writes
/// every buffered frame whatever its type.
/// Implemented for any sink of [`RawMessage`](messages::RawMessage): `Framed` over `FrameCodec`,
/// `Sv2Codec<M>` or `NoiseCodec<Sv2Codec<M>>`.
pub trait FramedExt: Sink<messages::RawMessage> + Unpin + Sized {
    /// Writes out every buffered frame.
    fn flush_frames(&mut self) -> Flush<'_, Self, messages::RawMessage> {
        SinkExt::<messages::RawMessage>::flush(self)
    }

    /// Writes out every buffered frame and shuts the writing half down.
    fn close_frames(&mut self) -> Close<'_, Self, messages::RawMessage> {
        SinkExt::<messages::RawMessage>::close(self)
    }
}

impl<S: Sink<messages::RawMessage> + Unpin> FramedExt for S {}

/// Everything a connection handler uses: `use sv2c::prelude::*;`.
///
/// Every message and dispatch enum ([`messages`]), the data types, the
/// traits and derives, the codecs, [`Connection`] and [`read_batch`], `Framed`, `Sink`/`Stream` and
/// `SinkExt`/`StreamExt`, [`FramedExt`], and `bytes`' `BufMut`, `Bytes`, `BytesMut`.
pub mod prelude {
    pub use crate::messages::*;

    #[cfg(feature = "noise")]
    pub use crate::noise;
    pub use crate::{
        B016M, B032, B064K, B0255, BufferPool, CodecError, Connection, Decode, Encode, Frame,
        FrameCodec, Frameable, FramedExt, Message, MessageSet, MessageType, PubKey, Seq064K,
        Seq0255, Signature, Str0255, Sv2Codec, U24, U256, Wire, WireRef, read_batch,
    };

    pub use bytes::{BufMut, Bytes, BytesMut};
    pub use futures::{Sink, SinkExt, Stream, StreamExt};
    pub use tokio_util::codec::Framed;
}

/// The crate README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
