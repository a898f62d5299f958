//! The sans-io frame decoder: bytes in, [`Frame`]s out, no runtime needed.

use sv2c_buffer_pool::{BufferPool, PoolBufMut};

use crate::error::CodecError;
use crate::frame::Frame;
use crate::header::{Header, MAX_PAYLOAD_LEN};

/// Smallest step by which the buffer of a large (heap) frame grows.
const GROW_STEP: usize = 16 * 1024;

/// A frame decoder that needs no runtime.
///
/// It reads the 6 header bytes into itself, then hands out the payload buffer, taken from
/// the [`BufferPool`], to be filled **directly** by the caller's reads: no intermediate
/// copy. Two ways to drive it:
///
/// * **Zero-copy**: [`read_buf`](FrameDecoder::read_buf) gives the slice the next bytes
///   belong in (never longer than the current frame still needs, so a read never takes
///   bytes of the next frame); read into it, then report the count with
///   [`advance`](FrameDecoder::advance).
/// * **From a slice**: [`decode_from`](FrameDecoder::decode_from) copies from bytes you
///   already have and leaves what belongs to the next frame in the slice.
///
/// A short read is never taken for a complete frame. Payloads up to the pool's slot size
/// go into a slot (or a counted heap fallback when the pool is exhausted); larger ones grow
/// on the heap as their bytes arrive, so a peer that announces 16 MiB and sends 6 bytes
/// costs memory for about 6 bytes, not 16 MiB. A header above the maximum payload size is
/// refused before anything is allocated, and the decoder then stays failed.
///
/// ```
/// use std::io::Read;
/// use sv2c_buffer_pool::BufferPool;
/// use sv2c_codec::FrameDecoder;
///
/// // Two SetupConnection.Success frames back to back, read in 5-byte pieces.
/// let wire = [0, 0, 1, 6, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 6, 0, 0, 2, 0, 1, 0, 0, 0];
/// let mut stream = &wire[..];
/// let mut dec = FrameDecoder::new(BufferPool::new(4, 256).unwrap());
/// let mut frames = Vec::new();
/// loop {
///     let buf = dec.read_buf();
///     let max = buf.len().min(5);
///     let n = stream.read(&mut buf[..max]).unwrap();
///     if n == 0 { break; }
///     if let Some(frame) = dec.advance(n).unwrap() {
///         frames.push(frame);
///     }
/// }
/// assert_eq!(frames.len(), 2);
/// assert_eq!(frames[1].payload(), [2, 0, 1, 0, 0, 0]);
/// ```
#[derive(Debug)]
pub struct FrameDecoder {
    pool: BufferPool,
    max_payload: usize,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Reading the header.
    Header { buf: [u8; 6], filled: usize },
    /// Reading a payload that fits a slot into its pool buffer.
    Pooled {
        header: Header,
        buf: PoolBufMut,
        filled: usize,
    },
    /// Reading a payload larger than a slot into a heap buffer grown as bytes arrive.
    Growing {
        header: Header,
        buf: Vec<u8>,
        filled: usize,
    },
    /// A fatal error happened; every call repeats it.
    Failed { len: usize, max: usize },
}

impl FrameDecoder {
    /// A decoder taking payload buffers from `pool`, accepting payloads up to the protocol
    /// maximum (2^24 − 1 bytes).
    pub fn new(pool: BufferPool) -> Self {
        FrameDecoder {
            pool,
            max_payload: MAX_PAYLOAD_LEN,
            state: State::Header {
                buf: [0; 6],
                filled: 0,
            },
        }
    }

    /// Sets the largest payload accepted (capped at 2^24 − 1).
    #[must_use]
    pub fn with_max_payload_len(mut self, max: usize) -> Self {
        self.max_payload = max.min(MAX_PAYLOAD_LEN);
        self
    }

    /// Old name of [`with_max_payload_len`](Self::with_max_payload_len).
    #[doc(hidden)]
    #[must_use]
    pub fn max_payload(self, max: usize) -> Self {
        self.with_max_payload_len(max)
    }

    /// The largest payload accepted.
    pub fn max_payload_len(&self) -> usize {
        self.max_payload
    }

    /// The pool payloads come from (its [`stats`](BufferPool::stats) are live).
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// `true` between frames (no byte of an unfinished frame is held).
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Header { filled: 0, .. })
    }

    /// Bytes of the unfinished frame received so far (0 between frames).
    pub fn buffered(&self) -> usize {
        match &self.state {
            State::Header { filled, .. } => *filled,
            State::Pooled { filled, .. } | State::Growing { filled, .. } => Header::SIZE + *filled,
            State::Failed { .. } => 0,
        }
    }

    /// Where the next received bytes go. Never longer than what the current frame still
    /// needs; empty only after a fatal error.
    pub fn read_buf(&mut self) -> &mut [u8] {
        match &mut self.state {
            State::Header { buf, filled } => buf.get_mut(*filled..).unwrap_or_default(),
            State::Pooled { buf, filled, .. } => buf.get_mut(*filled..).unwrap_or_default(),
            State::Growing {
                header,
                buf,
                filled,
            } => {
                // Grow by what has arrived so far (at least GROW_STEP), capped by the
                // announced length: memory stays proportional to the bytes received.
                let total = header.msg_length();
                if buf.len() == *filled && *filled < total {
                    let step = (*filled).max(GROW_STEP).min(total - *filled);
                    buf.resize(*filled + step, 0);
                }
                buf.get_mut(*filled..).unwrap_or_default()
            }
            State::Failed { .. } => &mut [],
        }
    }

    /// Reports that `n` bytes were written at the front of [`read_buf`](Self::read_buf).
    /// Returns the frame they completed, if any. `n` larger than the slice is clamped.
    ///
    /// # Errors
    /// [`CodecError::FrameTooLarge`] when a completed header announces more than the
    /// maximum payload; the decoder is failed from then on.
    pub fn advance(&mut self, n: usize) -> Result<Option<Frame>, CodecError> {
        match &mut self.state {
            State::Header { buf, filled } => {
                *filled = (*filled + n).min(Header::SIZE);
                if *filled < Header::SIZE {
                    return Ok(None);
                }
                let header = Header::parse(*buf);
                self.start_payload(header)
            }
            State::Pooled {
                header,
                buf,
                filled,
            } => {
                *filled = (*filled + n).min(buf.len());
                if *filled < buf.len() {
                    return Ok(None);
                }
                let header = *header;
                match self.reset() {
                    State::Pooled { buf, .. } => Ok(Some(Frame::from_parts(header, buf))),
                    _ => Ok(None),
                }
            }
            State::Growing {
                header,
                buf,
                filled,
            } => {
                *filled = (*filled + n).min(buf.len());
                if *filled < header.msg_length() {
                    return Ok(None);
                }
                let header = *header;
                match self.reset() {
                    State::Growing { buf, .. } => Ok(Some(self.finish_large(header, buf))),
                    _ => Ok(None),
                }
            }
            State::Failed { len, max } => Err(CodecError::FrameTooLarge {
                len: *len,
                max: *max,
            }),
        }
    }

    /// Copies bytes from `input` into the current frame, advancing `input` past them.
    /// Returns a frame as soon as one completes; bytes after it stay in `input` for the
    /// next call. Returns `Ok(None)` once `input` is exhausted without completing a frame.
    ///
    /// # Errors
    /// As [`advance`](Self::advance).
    pub fn decode_from(&mut self, input: &mut &[u8]) -> Result<Option<Frame>, CodecError> {
        if let Some(frame) = self.whole_frame_from(input) {
            return Ok(Some(frame));
        }
        loop {
            let dst = self.read_buf();
            let n = dst.len().min(input.len());
            if let (Some(d), Some(s)) = (dst.get_mut(..n), input.get(..n)) {
                d.copy_from_slice(s);
            }
            *input = input.get(n..).unwrap_or_default();
            if let Some(frame) = self.advance(n)? {
                return Ok(Some(frame));
            }
            if input.is_empty() || n == 0 {
                return Ok(None);
            }
        }
    }

    /// The fast path of [`decode_from`](Self::decode_from): between frames, when `input`
    /// holds a whole frame whose payload is allowed and fits a pool slot, takes the buffer,
    /// copies the payload and returns the frame without stepping through the states. The
    /// result, the pool calls and what is left in `input` are those of the general path;
    /// anything else (a partial frame, an oversized or too-large payload, a decoder in the
    /// middle of a frame or failed) returns `None` with nothing consumed.
    #[inline]
    fn whole_frame_from(&mut self, input: &mut &[u8]) -> Option<Frame> {
        if !self.is_idle() {
            return None;
        }
        let (head, rest) = input.split_first_chunk::<{ Header::SIZE }>()?;
        let header = Header::parse(*head);
        let len = header.msg_length();
        if len > self.max_payload || len > self.pool.slot_size() {
            return None;
        }
        let (payload, after) = rest.split_at_checked(len)?;
        // `acquire(len)` hands out exactly `len` bytes.
        let mut buf = self.pool.acquire(len);
        if let Some(dst) = buf.get_mut(..len) {
            dst.copy_from_slice(payload);
        }
        *input = after;
        Some(Frame::from_parts(header, buf))
    }

    fn start_payload(&mut self, header: Header) -> Result<Option<Frame>, CodecError> {
        let len = header.msg_length();
        if len > self.max_payload {
            self.state = State::Failed {
                len,
                max: self.max_payload,
            };
            return Err(CodecError::FrameTooLarge {
                len,
                max: self.max_payload,
            });
        }
        if len <= self.pool.slot_size() {
            let buf = self.pool.acquire(len);
            if len == 0 {
                self.reset();
                return Ok(Some(Frame::from_parts(header, buf)));
            }
            self.state = State::Pooled {
                header,
                buf,
                filled: 0,
            };
        } else {
            self.state = State::Growing {
                header,
                buf: Vec::new(),
                filled: 0,
            };
        }
        Ok(None)
    }

    /// A large payload, complete on the heap, handed over to the pool without a copy
    /// (counted as a too-large fallback).
    fn finish_large(&self, header: Header, buf: Vec<u8>) -> Frame {
        Frame::from_parts(header, self.pool.adopt(buf))
    }

    fn reset(&mut self) -> State {
        core::mem::replace(
            &mut self.state,
            State::Header {
                buf: [0; 6],
                filled: 0,
            },
        )
    }
}
