//! The three ways of turning received frames into messages that `pool_lifecycle` compares.
//!
//! Every strategy is handed one whole frame (header and payload) as received bytes and
//! returns what the application keeps. Each copies the frame's bytes exactly once, as the
//! socket read would:
//!
//! | strategy | path | what is kept | pool slot |
//! |---|---|---|---|
//! | [`ZcHold`] | bytes → [`FrameDecoder`] (copy into a pool buffer) → [`Frame::decode_ref`] | the [`Frame`] | pinned while kept |
//! | [`OwnedRelease`] | bytes → [`FrameDecoder`] (copy into a pool buffer) → [`Frame::decode`] | the owned message | released at once |
//! | [`OwnedDirect`] | bytes → read buffer (`BytesMut`) → [`Sv2Codec`] owned decode | the owned message | none |
//!
//! [`ZcHold`] decodes the borrowed (`Ref`) message, lets the caller's code see it (through
//! [`black_box`]) and then keeps the frame: the `Ref` cannot be stored next to the frame it
//! borrows from, so an application holding "a Ref message" holds its frame and decodes the
//! `Ref` again (no allocation, no copy) whenever it reads it. What pins the slot is the
//! frame, and that is what is kept.

use std::hint::black_box;
use std::marker::PhantomData;

use bytes::BytesMut;
use sv2c_binary::MessageSet;
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{Frame, FrameDecoder, Sv2Codec};
use tokio_util::codec::Decoder;

/// Slots in the benchmark pools (the seed experiment's pool had 8).
pub const POOL_CAPACITY: usize = 8;

/// A fresh pool of [`POOL_CAPACITY`] slots of the default size.
pub fn new_pool() -> BufferPool {
    BufferPool::with_capacity(POOL_CAPACITY).expect("a valid pool shape")
}

/// One way of decoding frames into messages the application keeps.
pub trait Strategy {
    /// What the application keeps per message.
    type Held;

    /// The name used in benchmark ids and reports.
    const NAME: &'static str;

    /// Decodes `frame` (one whole frame: header and payload) into what is kept.
    ///
    /// # Panics
    /// If `frame` is not one valid frame of the benchmarked message (benchmark inputs are
    /// built by the benchmark, so this is a bug in it).
    fn decode_one(&mut self, frame: &[u8]) -> Self::Held;

    /// The pool this strategy takes buffers from, if any.
    fn pool(&self) -> Option<&BufferPool>;
}

/// Borrowed decode from a pooled frame; the frame (and its slot) is kept.
#[derive(Debug)]
pub struct ZcHold<M> {
    decoder: FrameDecoder,
    _set: PhantomData<fn() -> M>,
}

impl<M> ZcHold<M> {
    /// With a fresh pool of [`POOL_CAPACITY`] slots.
    pub fn new() -> Self {
        Self::with_pool(new_pool())
    }

    /// With buffers from `pool`.
    pub fn with_pool(pool: BufferPool) -> Self {
        ZcHold {
            decoder: FrameDecoder::new(pool),
            _set: PhantomData,
        }
    }
}

impl<M> Default for ZcHold<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads one frame with `decoder`.
#[inline]
fn read_frame(decoder: &mut FrameDecoder, frame: &[u8]) -> Frame {
    let mut input = frame;
    decoder
        .decode_from(&mut input)
        .expect("a valid frame")
        .expect("a whole frame")
}

impl<M: MessageSet> Strategy for ZcHold<M> {
    type Held = Frame;
    const NAME: &'static str = "zc_hold";

    #[inline]
    fn decode_one(&mut self, frame: &[u8]) -> Frame {
        let frame = read_frame(&mut self.decoder, frame);
        {
            let msg = frame.decode_ref::<M>().expect("a valid payload");
            black_box(&msg);
        }
        frame
    }

    fn pool(&self) -> Option<&BufferPool> {
        Some(self.decoder.pool())
    }
}

/// Owned decode from a pooled frame; the frame is dropped at once.
#[derive(Debug)]
pub struct OwnedRelease<M> {
    decoder: FrameDecoder,
    _set: PhantomData<fn() -> M>,
}

impl<M> OwnedRelease<M> {
    /// With a fresh pool of [`POOL_CAPACITY`] slots.
    pub fn new() -> Self {
        Self::with_pool(new_pool())
    }

    /// With buffers from `pool`.
    pub fn with_pool(pool: BufferPool) -> Self {
        OwnedRelease {
            decoder: FrameDecoder::new(pool),
            _set: PhantomData,
        }
    }
}

impl<M> Default for OwnedRelease<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: MessageSet> Strategy for OwnedRelease<M> {
    type Held = M;
    const NAME: &'static str = "owned_release";

    #[inline]
    fn decode_one(&mut self, frame: &[u8]) -> M {
        let frame = read_frame(&mut self.decoder, frame);
        frame.decode::<M>().expect("a valid payload")
    }

    fn pool(&self) -> Option<&BufferPool> {
        Some(self.decoder.pool())
    }
}

/// Owned decode straight from the read buffer, as [`Sv2Codec`] does; no pool.
#[derive(Debug)]
pub struct OwnedDirect<M> {
    codec: Sv2Codec<M>,
    read_buf: BytesMut,
}

impl<M> OwnedDirect<M> {
    /// With a read buffer of 64 KiB (grown on demand, then reused).
    pub fn new() -> Self {
        OwnedDirect {
            codec: Sv2Codec::for_set(),
            read_buf: BytesMut::with_capacity(64 * 1024),
        }
    }
}

impl<M> Default for OwnedDirect<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: MessageSet> Strategy for OwnedDirect<M> {
    type Held = M;
    const NAME: &'static str = "owned_direct";

    #[inline]
    fn decode_one(&mut self, frame: &[u8]) -> M {
        // The socket read: the frame's bytes land in the codec's read buffer.
        self.read_buf.extend_from_slice(frame);
        self.codec
            .decode(&mut self.read_buf)
            .expect("a valid frame")
            .expect("a whole frame")
    }

    fn pool(&self) -> Option<&BufferPool> {
        None
    }
}

/// A strategy and what it keeps: one independent "connection" of a benchmark.
///
/// The kept items are dropped before the strategy (fields drop in declaration order):
/// a pool that waits for its buffers when dropped (as the reference implementation's
/// `buffer_sv2::BufferPool` does) would otherwise wait forever.
#[derive(Debug)]
pub struct Lane<S: Strategy> {
    /// What the application keeps.
    pub held: Vec<S::Held>,
    /// The strategy (with its own pool, if it has one).
    pub strategy: S,
}

impl<S: Strategy> Lane<S> {
    /// A lane keeping nothing yet, with room for `capacity` kept items.
    pub fn new(strategy: S, capacity: usize) -> Self {
        Lane {
            held: Vec::with_capacity(capacity),
            strategy,
        }
    }

    /// Decodes `frame` `n` times and keeps the results.
    pub fn hold(&mut self, frame: &[u8], n: usize) {
        for _ in 0..n {
            let item = self.strategy.decode_one(frame);
            self.held.push(item);
        }
    }

    /// Drops everything kept (releasing pinned slots).
    pub fn release(&mut self) {
        self.held.clear();
    }
}
