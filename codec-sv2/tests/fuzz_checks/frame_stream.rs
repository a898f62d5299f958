//! The `frame_stream` check: a byte stream, cut into chunks, fed to every decoder.
//!
//! Input format: `cap_sel`, `slot_sel`, `n`, then `n % 8 + 1` chunk sizes (one byte
//! each: 0 = an empty read, 255 = everything left, otherwise that many bytes, used in
//! turn until the stream is exhausted), then the stream. `cap_sel` picks the maximum
//! payload from [`CAPS`], `slot_sel` the pool's slot size from [`SLOTS`] and its
//! capacity (`slot_sel / 4 % 3`: 0, 1 or 2 slots).
//!
//! The stream goes to six decoders: the sans-io [`FrameDecoder`] through
//! `decode_from` and through `read_buf`/`advance`, [`FrameCodec`] through `decode` and
//! through `decode_all_with` (borrowed frames), and `Sv2Codec<Message>` through `decode`
//! and through `decode_all_with` (borrowed messages, made owned for the comparison). They
//! must report the same frames (or messages) and the same fatal error in the same order,
//! hold the same unfinished bytes at the end, agree on what end of stream means, return
//! every pool slot, never panic, and allocate in proportion to the bytes received. Every
//! frame also goes through the `message_decode` check.

use bytes::BytesMut;
use sv2c_binary::messages::{Message, MessageOrRaw, RawMessageRef};
use sv2c_binary::{DecodeError, Encode, Frameable};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{CodecError, Frame, FrameCodec, FrameDecoder, Header, MAX_PAYLOAD_LEN, Sv2Codec};
use tokio_util::codec::Decoder;

use super::alloc::{assert_tracking, peak_during};
use super::message_decode;

/// Maximum payload sizes a stream is decoded with.
pub const CAPS: [usize; 8] = [MAX_PAYLOAD_LEN, 0, 4, 24, 100, 1000, 20_000, 70_000];
/// Pool slot sizes (frames above the slot size take the decoder's growing heap path).
pub const SLOTS: [usize; 4] = [8, 64, 256, 4096];

/// A decoded input: decoder settings, chunk sizes and the stream.
#[derive(Debug)]
pub struct Plan<'a> {
    /// Maximum payload length.
    pub cap: usize,
    /// Pool slot size.
    pub slot: usize,
    /// Pool capacity.
    pub capacity: usize,
    /// Chunk sizes, used in turn (`usize::MAX`: the rest).
    pub sizes: Vec<usize>,
    /// The bytes received.
    pub stream: &'a [u8],
}

impl<'a> Plan<'a> {
    /// Parses an input; `None` if it is too short to hold the settings.
    pub fn parse(data: &'a [u8]) -> Option<Self> {
        let (&[cap_sel, slot_sel, n], rest) = data.split_first_chunk::<3>()?;
        let n = usize::from(n % 8) + 1;
        let sizes = rest.get(..n)?;
        let mut sizes: Vec<usize> = sizes
            .iter()
            .map(|&b| if b == 255 { usize::MAX } else { usize::from(b) })
            .collect();
        if sizes.iter().all(|&s| s == 0) {
            sizes = vec![usize::MAX];
        }
        Some(Plan {
            cap: CAPS[usize::from(cap_sel) % CAPS.len()],
            slot: SLOTS[usize::from(slot_sel) % SLOTS.len()],
            capacity: usize::from(slot_sel) / 4 % 3,
            sizes,
            stream: rest.get(n..)?,
        })
    }

    /// The stream cut into chunks.
    pub fn chunks(&self) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut rest = self.stream;
        for &size in self.sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            out.push(chunk);
            rest = tail;
        }
        out
    }

    fn pool(&self) -> BufferPool {
        BufferPool::new(self.capacity, self.slot).expect("small pool")
    }
}

/// Builds a `frame_stream` input: settings, chunk sizes, stream.
pub fn input(cap_sel: u8, slot_sel: u8, sizes: &[u8], stream: &[u8]) -> Vec<u8> {
    assert!((1..=8).contains(&sizes.len()));
    let mut v = vec![cap_sel, slot_sel, (sizes.len() - 1) as u8];
    v.extend_from_slice(sizes);
    v.extend_from_slice(stream);
    v
}

/// Frame-level events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameEvent {
    Frame { header: [u8; 6], digest: u64 },
    TooLarge { len: usize, max: usize },
}

/// Message-level events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MsgEvent {
    /// A message: its header fields and a digest of its encoding.
    Msg {
        ext: u16,
        msg_type: u8,
        digest: u64,
    },
    Unknown {
        header: [u8; 6],
    },
    Decode {
        header: [u8; 6],
        error: DecodeError,
    },
    TooLarge {
        len: usize,
        max: usize,
    },
}

/// What one decoder saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    frames: Vec<FrameEvent>,
    /// Bytes of an unfinished frame at the end; `None` after a fatal error.
    buffered: Option<usize>,
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn msg_event(m: &Message) -> MsgEvent {
    MsgEvent::Msg {
        ext: m.wire_extension_type(),
        msg_type: m.msg_type(),
        digest: fnv(&m.encode_to_vec()),
    }
}

fn too_large(e: &CodecError) -> (usize, usize) {
    match e {
        CodecError::FrameTooLarge { len, max } => (*len, *max),
        other => panic!("a frame decoder failed with {other:?}"),
    }
}

/// The event of a frame from a second decoder (the first one checked the frame itself).
fn frame_event(frame: &Frame) -> FrameEvent {
    FrameEvent::Frame {
        header: frame.header().to_bytes(),
        digest: fnv(frame.payload()),
    }
}

/// Checks one complete frame and returns its events.
fn frame_events(frame: &Frame, plan: &Plan<'_>) -> (FrameEvent, MsgEvent) {
    let header = frame.header();
    let payload = frame.payload();
    assert_eq!(payload.len(), header.msg_length());
    assert!(
        header.msg_length() <= plan.cap,
        "{header:?} above the cap {}",
        plan.cap
    );
    if payload.len() > plan.slot {
        assert!(
            !frame.is_pooled(),
            "{header:?} larger than a slot but pooled"
        );
    }
    let mut wire = header.to_bytes().to_vec();
    wire.extend_from_slice(payload);
    assert_eq!(frame.to_vec(), wire);
    let channel_id = payload.first_chunk::<4>().map(|b| u32::from_le_bytes(*b));
    assert_eq!(
        frame.channel_id(),
        channel_id.filter(|_| header.channel_msg())
    );

    message_decode::check(header.wire_extension_type(), header.msg_type(), payload);
    let msg = match frame.decode::<Message>() {
        Ok(m) => msg_event(&m),
        Err(CodecError::UnknownMessage { header: h }) => MsgEvent::Unknown {
            header: h.to_bytes(),
        },
        Err(CodecError::Decode { header: h, source }) => MsgEvent::Decode {
            header: h.to_bytes(),
            error: source,
        },
        Err(other) => panic!("Frame::decode failed with {other:?}"),
    };
    (frame_event(frame), msg)
}

/// The sans-io decoder through `decode_from`. Also returns the message events of its
/// frames, for comparison with `Sv2Codec`.
fn run_decode_from(
    plan: &Plan<'_>,
    chunks: &[&[u8]],
    pool: &BufferPool,
) -> (Outcome, Vec<MsgEvent>) {
    let mut dec = FrameDecoder::new(pool.clone()).max_payload(plan.cap);
    let mut out = Outcome::default();
    let mut msgs = Vec::new();
    for chunk in chunks {
        let mut input = *chunk;
        loop {
            match dec.decode_from(&mut input) {
                Ok(Some(frame)) => {
                    let (f, m) = frame_events(&frame, plan);
                    out.frames.push(f);
                    msgs.push(m);
                }
                Ok(None) => {
                    assert!(input.is_empty(), "decode_from stopped with input left");
                    break;
                }
                Err(e) => {
                    let (len, max) = too_large(&e);
                    out.frames.push(FrameEvent::TooLarge { len, max });
                    msgs.push(MsgEvent::TooLarge { len, max });
                    // Failed for good: the same error again, nothing to read into.
                    let again = dec
                        .decode_from(&mut &[0u8; 4][..])
                        .expect_err("stays failed");
                    assert_eq!(too_large(&again), (len, max));
                    assert!(dec.read_buf().is_empty());
                    return (out, msgs);
                }
            }
        }
    }
    assert_eq!(dec.is_idle(), dec.buffered() == 0);
    out.buffered = Some(dec.buffered());
    (out, msgs)
}

/// The sans-io decoder through `read_buf`/`advance`, as a socket reader drives it.
fn run_read_buf(plan: &Plan<'_>, chunks: &[&[u8]], pool: &BufferPool) -> Outcome {
    let mut dec = FrameDecoder::new(pool.clone()).max_payload(plan.cap);
    let mut out = Outcome::default();
    for chunk in chunks {
        let mut input = *chunk;
        while !input.is_empty() {
            let buf = dec.read_buf();
            // An empty buffer would make a reader see end of stream.
            assert!(
                !buf.is_empty(),
                "read_buf is empty while the decoder is not failed"
            );
            let n = buf.len().min(input.len());
            buf[..n].copy_from_slice(&input[..n]);
            input = &input[n..];
            match dec.advance(n) {
                Ok(Some(frame)) => out.frames.push(frame_event(&frame)),
                Ok(None) => {}
                Err(e) => {
                    let (len, max) = too_large(&e);
                    out.frames.push(FrameEvent::TooLarge { len, max });
                    assert!(dec.read_buf().is_empty());
                    assert_eq!(
                        too_large(&dec.advance(0).expect_err("stays failed")),
                        (len, max)
                    );
                    return out;
                }
            }
        }
    }
    out.buffered = Some(dec.buffered());
    out
}

/// `FrameCodec`, fed the chunks as `FramedRead` would.
fn run_frame_codec(
    plan: &Plan<'_>,
    chunks: &[&[u8]],
    pool: &BufferPool,
) -> (Outcome, Result<(), CodecError>) {
    let mut codec = FrameCodec::new(pool.clone()).max_payload(plan.cap);
    let mut src = BytesMut::new();
    let mut out = Outcome::default();
    for chunk in chunks {
        src.extend_from_slice(chunk);
        loop {
            let before = src.len();
            match codec.decode(&mut src) {
                Ok(Some(frame)) => {
                    assert_eq!(before - src.len(), frame.header().frame_len());
                    out.frames.push(frame_event(&frame));
                }
                Ok(None) => {
                    assert_eq!(
                        src.len(),
                        before,
                        "FrameCodec consumed bytes without a frame"
                    );
                    break;
                }
                Err(e) => {
                    let (len, max) = too_large(&e);
                    out.frames.push(FrameEvent::TooLarge { len, max });
                    return (out, Ok(()));
                }
            }
        }
    }
    out.buffered = Some(src.len());
    let eof = eof_result(codec.decode_eof(&mut src).map(|f| f.map(|_| ())));
    (out, eof)
}

/// `FrameCodec` through `decode_all_with`, fed the chunks as `read_batch` would: every
/// frame handed out borrowed.
fn run_frame_codec_all_with(plan: &Plan<'_>, chunks: &[&[u8]], pool: &BufferPool) -> Outcome {
    let mut codec = FrameCodec::new(pool.clone()).max_payload(plan.cap);
    let mut src = BytesMut::new();
    let mut out = Outcome::default();
    for chunk in chunks {
        src.extend_from_slice(chunk);
        let handed = codec.decode_all_with(&mut src, |f| {
            out.frames.push(FrameEvent::Frame {
                header: raw_header(f),
                digest: fnv(f.payload),
            });
        });
        if let Err(e) = handed {
            let (len, max) = too_large(&e);
            out.frames.push(FrameEvent::TooLarge { len, max });
            return out;
        }
        assert_no_complete_frame("FrameCodec::decode_all_with", &src, plan.cap);
    }
    out.buffered = Some(src.len());
    out
}

/// The header bytes of a borrowed frame.
fn raw_header(r: &RawMessageRef<'_>) -> [u8; 6] {
    Header::for_message(r)
        .expect("a frame that was read has a valid length")
        .to_bytes()
}

/// After a `decode_all_with` that returned `Ok`, what is left in `src` is not a whole
/// frame within the payload limit `cap`.
fn assert_no_complete_frame(what: &str, src: &[u8], cap: usize) {
    let complete = Header::from_prefix(src)
        .is_some_and(|h| h.msg_length() <= cap && src.len() >= h.frame_len());
    assert!(!complete, "{what} left a complete frame");
}

/// `Sv2Codec<Message>`: recoverable errors are skipped as `FramedRead` would.
fn run_sv2_codec(
    plan: &Plan<'_>,
    chunks: &[&[u8]],
) -> (Vec<MsgEvent>, Option<usize>, Result<(), CodecError>) {
    // `MessageOrRaw<Message>` yields unknown frames as items, one frame per item.
    let mut codec = Sv2Codec::<MessageOrRaw<Message>>::for_set().max_payload(plan.cap);
    let mut src = BytesMut::new();
    let mut msgs = Vec::new();
    for chunk in chunks {
        src.extend_from_slice(chunk);
        loop {
            let before = src.len();
            let header = Header::from_prefix(&src);
            match codec.decode(&mut src) {
                Ok(Some(m)) => {
                    let h = header.expect("a message needs a header");
                    assert_eq!(before - src.len(), h.frame_len());
                    msgs.push(match m {
                        MessageOrRaw::Known(m) => msg_event(&m),
                        MessageOrRaw::Raw(r) => {
                            assert_eq!(r.extension_type, h.wire_extension_type());
                            assert_eq!(r.msg_type, h.msg_type());
                            MsgEvent::Unknown {
                                header: h.to_bytes(),
                            }
                        }
                    });
                }
                Ok(None) => {
                    assert_eq!(
                        src.len(),
                        before,
                        "Sv2Codec consumed bytes without a message"
                    );
                    break;
                }
                Err(e) if e.is_recoverable() => {
                    let h = header.expect("a frame error needs a header");
                    assert_eq!(
                        before - src.len(),
                        h.frame_len(),
                        "{e} did not consume its frame"
                    );
                    msgs.push(recoverable_event(e));
                }
                Err(e) => {
                    let (len, max) = too_large(&e);
                    msgs.push(MsgEvent::TooLarge { len, max });
                    return (msgs, None, Ok(()));
                }
            }
        }
    }
    let (buffered, eof) = end_of_stream(&mut codec, &mut src);
    (msgs, Some(buffered), eof)
}

/// `Sv2Codec<Message>` through `decode_all_with`: every borrowed message is made owned and
/// recorded; a recoverable error is recorded and the next call carries on.
fn run_sv2_codec_all_with(
    plan: &Plan<'_>,
    chunks: &[&[u8]],
) -> (Vec<MsgEvent>, Option<usize>, Result<(), CodecError>) {
    let mut codec = Sv2Codec::<MessageOrRaw<Message>>::for_set().max_payload(plan.cap);
    let mut src = BytesMut::new();
    let mut msgs = Vec::new();
    for chunk in chunks {
        src.extend_from_slice(chunk);
        loop {
            let handed = codec.decode_all_with(&mut src, |m| {
                msgs.push(match m {
                    MessageOrRaw::Known(m) => msg_event(&m.to_owned_value()),
                    MessageOrRaw::Raw(r) => MsgEvent::Unknown {
                        header: raw_header(r),
                    },
                });
            });
            match handed {
                Ok(_) => {
                    assert_no_complete_frame("Sv2Codec::decode_all_with", &src, plan.cap);
                    break;
                }
                Err(e) if e.is_recoverable() => msgs.push(recoverable_event(e)),
                Err(e) => {
                    let (len, max) = too_large(&e);
                    msgs.push(MsgEvent::TooLarge { len, max });
                    return (msgs, None, Ok(()));
                }
            }
        }
    }
    let (buffered, eof) = end_of_stream(&mut codec, &mut src);
    (msgs, Some(buffered), eof)
}

/// The event of a recoverable `Sv2Codec` error.
fn recoverable_event(e: CodecError) -> MsgEvent {
    match e {
        CodecError::UnknownMessage { header } => MsgEvent::Unknown {
            header: header.to_bytes(),
        },
        CodecError::Decode { header, source } => MsgEvent::Decode {
            header: header.to_bytes(),
            error: source,
        },
        other => panic!("unexpected recoverable error {other:?}"),
    }
}

/// What an `Sv2Codec` holds after the stream, and what its `decode_eof` says.
fn end_of_stream(
    codec: &mut Sv2Codec<MessageOrRaw<Message>>,
    src: &mut BytesMut,
) -> (usize, Result<(), CodecError>) {
    let buffered = src.len();
    let eof = eof_result(codec.decode_eof(src).map(|m| m.map(|_| ())));
    (buffered, eof)
}

/// `decode_eof` after the stream: `Ok(())` if it had nothing, the error otherwise.
fn eof_result(r: Result<Option<()>, CodecError>) -> Result<(), CodecError> {
    match r {
        Ok(None) => Ok(()),
        Ok(Some(())) => panic!("decode_eof produced an item the decode loop had not"),
        Err(e) => Err(e),
    }
}

fn assert_eof(what: &str, eof: Result<(), CodecError>, buffered: usize) {
    match eof {
        Ok(()) => assert_eq!(
            buffered, 0,
            "{what}: {buffered} bytes left but EOF is clean"
        ),
        Err(CodecError::TruncatedFrame { buffered: b }) => assert_eq!(b, buffered, "{what}"),
        Err(e) => panic!("{what}: decode_eof failed with {e:?}"),
    }
}

/// Asserts two event lists are equal, naming the first difference.
fn same_events<T: PartialEq + core::fmt::Debug>(what: &str, a: &[T], b: &[T]) {
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "{what}: event {i} differs ({} vs {} events): {:?} vs {:?}",
            a.len(),
            b.len(),
            a.get(i),
            b.get(i)
        );
    }
}

/// Runs the check on a `frame_stream` input.
pub fn check_input(data: &[u8]) {
    assert_tracking();
    let Some(plan) = Plan::parse(data) else {
        return;
    };
    let chunks = plan.chunks();
    let pool = plan.pool();
    // Legitimate peak: buffers that at most double past what was received, the frame
    // being handed over, the owned decode's copy, and the small per-frame event records.
    let budget = 32 * plan.stream.len() + 256 * 1024;

    let ((a, a_msgs), peak_a) = peak_during(|| run_decode_from(&plan, &chunks, &pool));
    let (b, peak_b) = peak_during(|| run_read_buf(&plan, &chunks, &pool));
    let ((c, c_eof), peak_c) = peak_during(|| run_frame_codec(&plan, &chunks, &pool));
    let (f, peak_f) = peak_during(|| run_frame_codec_all_with(&plan, &chunks, &pool));
    let ((d_msgs, d_buffered, d_eof), peak_d) = peak_during(|| run_sv2_codec(&plan, &chunks));
    let ((e_msgs, e_buffered, e_eof), peak_e) =
        peak_during(|| run_sv2_codec_all_with(&plan, &chunks));
    for (what, peak) in [
        ("decode_from", peak_a),
        ("read_buf", peak_b),
        ("FrameCodec", peak_c),
        ("FrameCodec::decode_all_with", peak_f),
        ("Sv2Codec", peak_d),
        ("Sv2Codec::decode_all_with", peak_e),
    ] {
        assert!(
            peak <= budget,
            "{what}: peak {peak} bytes for a {}-byte stream",
            plan.stream.len()
        );
    }

    same_events("decode_from vs read_buf/advance", &a.frames, &b.frames);
    assert_eq!(
        a.buffered, b.buffered,
        "decode_from and read_buf/advance hold different tails"
    );
    same_events("FrameDecoder vs FrameCodec", &a.frames, &c.frames);
    assert_eq!(
        a.buffered, c.buffered,
        "FrameDecoder and FrameCodec hold different tails"
    );
    same_events(
        "FrameCodec::decode vs decode_all_with",
        &c.frames,
        &f.frames,
    );
    assert_eq!(
        c.buffered, f.buffered,
        "FrameCodec's decode and decode_all_with hold different tails"
    );
    same_events("Frame::decode vs Sv2Codec", &a_msgs, &d_msgs);
    assert_eq!(
        a.buffered, d_buffered,
        "FrameDecoder and Sv2Codec hold different tails"
    );
    same_events("Sv2Codec::decode vs decode_all_with", &d_msgs, &e_msgs);
    assert_eq!(
        d_buffered, e_buffered,
        "decode and decode_all_with hold different tails"
    );
    if let Some(buffered) = a.buffered {
        assert_eof("FrameCodec", c_eof, buffered);
        assert_eof("Sv2Codec", d_eof, buffered);
        assert_eof("Sv2Codec::decode_all_with", e_eof, buffered);
    }
    // Every slot came back once the decoders and frames were dropped.
    let stats = pool.stats();
    assert_eq!(stats.in_use, 0, "{stats:?}");
    assert!(stats.high_water <= stats.capacity, "{stats:?}");
}
