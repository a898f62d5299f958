//! `cargo bench -p sv2c-benches --bench stream`: a stream of 1 000 000 `SubmitSharesStandard`
//! frames (30 bytes each: header `00 80 1a 18 00 00` and 24 payload bytes, every field
//! varying with the frame's index) decoded from 64 KiB chunks, the way a pool reads shares
//! off a connection (issue #13, item 1).
//!
//! Cases (ids `stream/<mode>/<case>`):
//! * `trivial`: a hand-written `tokio_util::codec::Decoder` that checks the payload length
//!   is 24 and reads six little-endian `u32`s into a plain struct, nothing else: the ceiling;
//! * `sv2codec`: `sv2c_codec::Sv2Codec<Message>`, yielding owned `Message`s;
//! * `sv2codec_all_with`: `Sv2Codec::<Message>::decode_all_with`, which hands every
//!   buffered message to a closure by reference, as a borrowed `MessageRef` into the read
//!   buffer, instead of returning owned `Message`s. In `framed` mode: `sv2c_codec::read_batch`
//!   on the `FramedRead`, which does the reads and then calls `decode_all_with`
//!   (`FramedRead`'s own `next()` only calls `decode`);
//! * `sv2codec_with` (direct only): `Sv2Codec::<Message>::decode_with`, the same one frame
//!   per call;
//! * `sv2codec_or_raw`: `Sv2Codec<MessageOrRaw<Message>>`, a proxy's codec (known messages
//!   decoded, unknown frames kept raw for forwarding), yielding owned items;
//! * `sv2codec_or_raw_read_batch` (framed only): `read_batch` on a
//!   `FramedRead<_, Sv2Codec<MessageOrRaw<Message>>>`, the proxy's set borrowed;
//! * `frames`: `sv2c_codec::FrameCodec`, frames only (payload copied into a pool slot);
//! * `frames_read_batch` (framed only): `read_batch` on a `FramedRead<_, FrameCodec>`, each
//!   frame handed to the closure by reference as a `RawMessageRef` into the read buffer
//!   (no pool slot, no copy of the payload): a proxy's forwarding loop;
//! * `frames_decode`: `FrameCodec`, then `Frame::decode::<Message>()` of each frame (owned);
//! * `sri` (direct only): the reference implementation's loop, as its own example writes it:
//!   `codec_sv2::Decoder::writable()` filled with exactly the bytes it asks for (header,
//!   then payload), `next_frame()`, then `parsers_sv2::AnyMessage::try_from((header,
//!   payload))` and `into_owned()`. SRI has no `tokio_util` codec, so no `framed` row.
//! * `noise`: the same shares encrypted, as a pool receives them from a client over the
//!   Noise transport (100 000 frames under `cargo bench`: decryption dominates):
//!   `NoiseCodec<Sv2Codec<Message>>` just after a handshake, reading what our initiator
//!   encrypted;
//! * `noise_read_batch` (framed only): the same encrypted stream through `read_batch` on
//!   a `FramedRead<_, NoiseCodec<Sv2Codec<Message>>>`, borrowed messages;
//! * `sri_noise` (direct only): SRI's responder state after a handshake with our initiator,
//!   read the way its callers read (`NoiseDecoder::writable()` filled with exactly what it
//!   asks for, `next_transport_frame`), then `AnyMessage::try_from` and `into_owned()`.
//!
//! The handshake and the encryption of the stream happen before each timed iteration, out
//! of the timed region (a decryptor's nonce only moves forward, so each iteration needs a
//! fresh connection).
//!
//! Modes: `direct` extends a reused `BytesMut` with the next 64 KiB chunk, then calls
//! `decode` until it returns `None`; `framed` runs the codec inside `tokio_util`'s
//! `FramedRead` (64 KiB read buffer) over an in-memory reader that hands out at most
//! 64 KiB per read, polled by `futures::executor::block_on` on the benchmark thread.
//!
//! Every case is first run once and must yield exactly N messages, each with the field
//! values of the frame its sequence number names, and the sequence numbers must add up to
//! the expected sum, so that no case can measure a loop that decodes nothing. In the timed
//! runs each item is passed to `black_box` by reference, then dropped. A filter on the
//! command line (`-- stream/direct`) limits the checks and counts to the cases it selects.
//! Time is the benchmark thread's CPU time (`sv2c_benches::clock`); each iteration decodes
//! the whole stream. Under `cargo bench` the suite prints a table: messages per second
//! (criterion's median sample), the ratio to `trivial` in the same mode and run, and heap
//! allocations per message (counting allocator, one extra run), and writes it to
//! `<target>/sv2c-bench-reports/stream.{csv,md}`. Under `cargo test --benches` the stream
//! has 10 000 frames and nothing is printed.

use std::cell::RefCell;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use codec_sv2::{Decoded, Decrypted, Handshake, TransportDecryptState};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use sv2c_benches::alloc::count;
use sv2c_benches::clock::BenchClock;
use sv2c_benches::report::{
    Table, criterion_config, emit, filtered_to_other_suite, filters, is_bench_run,
};
use sv2c_binary::messages::{Message, MessageOrRaw, RawMessageRef};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{
    AuthorityKeypair, Initiator, NoiseCodec, NoiseEncryptor, Responder, StaticKeypair,
    unix_time_now,
};
use sv2c_codec::{BatchDecoder, CodecError, Frame, FrameCodec, Sv2Codec, read_batch};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, FramedRead};

sv2c_benches::install_counting_allocator!();

const BENCH: &str = "stream";

/// Frames in the stream under `cargo bench`.
const FULL_N: usize = 1_000_000;

/// Frames in the encrypted stream under `cargo bench`: decrypting costs about 1 µs per
/// frame here and several in SRI, so the Noise cases take fewer.
const NOISE_FULL_N: usize = 100_000;

/// Frames in the stream under `cargo test --benches` (each case runs a handful of times).
const TEST_N: usize = 10_000;

/// Bytes per chunk handed to a decoder, and at most per read of the in-memory reader.
const CHUNK: usize = 64 * 1024;

/// Criterion samples per case.
const SAMPLES: usize = 10;

/// `SubmitSharesStandard` on a channel: extension type 0x8000 (channel bit), type 0x1a,
/// payload length 24.
const HEADER: [u8; 6] = [0x00, 0x80, 0x1a, 0x18, 0x00, 0x00];

/// Header plus payload.
const FRAME_LEN: usize = 30;

/// The fields of frame `i`: `[channel_id, sequence_number, job_id, nonce, ntime, version]`.
fn fields(i: usize) -> [u32; 6] {
    let i = i as u32;
    [
        1 + i % 8,
        i,
        i / 1000,
        i.wrapping_mul(0x9e37_79b9),
        0x6650_0000 + i / 100,
        0x2000_0000 | ((i & 0xffff) << 13),
    ]
}

/// `n` frames back to back.
fn stream_bytes(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * FRAME_LEN);
    for i in 0..n {
        out.extend_from_slice(&HEADER);
        for f in fields(i) {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    out
}

/// What the checked run of each case must find: the sum of all sequence numbers.
fn expected_sum(n: usize) -> u64 {
    (0..n as u64).sum()
}

// ===== (a) the ceiling =====

/// A share as the trivial decoder returns it.
#[derive(Debug, Clone, Copy)]
struct Share {
    channel_id: u32,
    sequence_number: u32,
    job_id: u32,
    nonce: u32,
    ntime: u32,
    version: u32,
}

/// Reads a header, requires a 24-byte payload, reads six `u32`s. No other check.
#[derive(Debug, Default)]
struct TrivialDecoder;

impl Decoder for TrivialDecoder {
    type Item = Share;
    type Error = io::Error;

    #[inline]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Share>, io::Error> {
        let Some(header) = src.first_chunk::<6>() else {
            return Ok(None);
        };
        if u32::from_le_bytes([header[3], header[4], header[5], 0]) != 24 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "payload is not 24 bytes",
            ));
        }
        let Some(frame) = src.first_chunk::<FRAME_LEN>() else {
            return Ok(None);
        };
        let at = |i: usize| {
            let start = 6 + 4 * i;
            u32::from_le_bytes([
                frame[start],
                frame[start + 1],
                frame[start + 2],
                frame[start + 3],
            ])
        };
        let share = Share {
            channel_id: at(0),
            sequence_number: at(1),
            job_id: at(2),
            nonce: at(3),
            ntime: at(4),
            version: at(5),
        };
        src.advance(FRAME_LEN);
        Ok(Some(share))
    }
}

// ===== drivers =====

/// Feeds `data` to `codec` in 64 KiB chunks through a reused buffer, calling `each` for
/// every item; returns how many items there were and the sum of what `each` returned.
#[inline]
fn run_direct<D: Decoder>(
    codec: &mut D,
    data: &[u8],
    buf: &mut BytesMut,
    mut each: impl FnMut(D::Item) -> u64,
) -> (usize, u64)
where
    D::Error: std::fmt::Debug,
{
    buf.clear();
    let (mut n, mut sum) = (0, 0);
    for chunk in data.chunks(CHUNK) {
        buf.extend_from_slice(chunk);
        while let Some(item) = codec.decode(buf).expect("a valid stream") {
            sum += each(item);
            n += 1;
        }
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    (n, sum)
}

/// [`run_direct`] with `Sv2Codec::<Message>::decode_all_with`: each message is handed to
/// the closure by reference, as a `MessageRef` into `buf`. With `check`, the closure adds
/// up the shares' sequence numbers (after checking their fields); otherwise it shows each
/// message to `black_box`.
#[inline]
fn run_direct_all_with(data: &[u8], buf: &mut BytesMut, check: bool) -> (usize, u64) {
    let mut codec = Sv2Codec::<Message>::new();
    buf.clear();
    let (mut n, mut sum) = (0, 0);
    for chunk in data.chunks(CHUNK) {
        buf.extend_from_slice(chunk);
        n += codec
            .decode_all_with(buf, |m| {
                if check {
                    sum += share_seq(m.to_owned_value());
                } else {
                    black_box(m);
                }
            })
            .expect("a valid stream");
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    (n, sum)
}

/// [`run_direct_all_with`] one frame per call: `Sv2Codec::<Message>::decode_with` until
/// `None`.
#[inline]
fn run_direct_with(data: &[u8], buf: &mut BytesMut, check: bool) -> (usize, u64) {
    let mut codec = Sv2Codec::<Message>::new();
    buf.clear();
    let (mut n, mut sum) = (0, 0);
    for chunk in data.chunks(CHUNK) {
        buf.extend_from_slice(chunk);
        while let Some(seq) = codec
            .decode_with(buf, |m| {
                if check {
                    share_seq(m.to_owned_value())
                } else {
                    black_box(m);
                    0
                }
            })
            .expect("a valid stream")
        {
            sum += seq;
            n += 1;
        }
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    (n, sum)
}

/// An in-memory `AsyncRead` that hands out at most [`CHUNK`] bytes per read, always ready.
#[derive(Debug)]
struct ChunkReader<'a> {
    data: &'a [u8],
}

impl AsyncRead for ChunkReader<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = CHUNK.min(buf.remaining()).min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

/// Runs `codec` inside `FramedRead` over `data` (64 KiB read buffer, reads of at most
/// 64 KiB), calling `each` for every item.
#[inline]
fn run_framed<D: Decoder>(
    codec: D,
    data: &[u8],
    mut each: impl FnMut(D::Item) -> u64,
) -> (usize, u64)
where
    D::Error: std::fmt::Debug,
{
    futures::executor::block_on(async {
        let mut framed = FramedRead::with_capacity(ChunkReader { data }, codec, CHUNK);
        let (mut n, mut sum) = (0, 0);
        while let Some(item) = framed.next().await {
            sum += each(item.expect("a valid stream"));
            n += 1;
        }
        (n, sum)
    })
}

/// [`run_framed`] with `read_batch` on the `FramedRead` (around `Sv2Codec<Message>`,
/// `NoiseCodec<Sv2Codec<Message>>` or `FrameCodec`): each message or frame is handed to the
/// closure by reference, as in [`run_direct_all_with`]. With `check`, `seq` gives each
/// one's sequence number, after checking its fields.
#[inline]
fn run_framed_read_batch<C>(
    codec: C,
    data: &[u8],
    check: bool,
    seq: impl for<'a, 'b> Fn(&'b C::Item<'a>) -> u64,
) -> (usize, u64)
where
    C: BatchDecoder,
{
    futures::executor::block_on(async {
        let mut framed = FramedRead::with_capacity(ChunkReader { data }, codec, CHUNK);
        let (mut n, mut sum) = (0, 0);
        while let Some(k) = read_batch(&mut framed, |m| {
            if check {
                sum += seq(m);
            } else {
                black_box(m);
            }
        })
        .await
        .expect("a valid stream")
        {
            n += k;
        }
        (n, sum)
    })
}

/// The chunks of a stream, handed out the way a reader of a socket fills SRI's decoders:
/// `read_exact(decoder.writable())`.
struct ChunkFeed<'a> {
    chunks: std::slice::Chunks<'a, u8>,
    current: &'a [u8],
}

impl<'a> ChunkFeed<'a> {
    fn new(data: &'a [u8]) -> Self {
        ChunkFeed {
            chunks: data.chunks(CHUNK),
            current: &[],
        }
    }

    /// Fills `writable` exactly; `false` at the end of the stream (which must not fall
    /// inside a frame).
    fn fill(&mut self, writable: &mut [u8]) -> bool {
        let mut filled = 0;
        while filled < writable.len() {
            if self.current.is_empty() {
                match self.chunks.next() {
                    Some(c) => self.current = c,
                    None => break,
                }
            }
            let k = (writable.len() - filled).min(self.current.len());
            writable[filled..filled + k].copy_from_slice(&self.current[..k]);
            filled += k;
            self.current = &self.current[k..];
        }
        if filled < writable.len() {
            assert_eq!(filled, 0, "the stream ends inside a frame");
            return false;
        }
        true
    }
}

/// SRI's dispatch of one frame: `AnyMessage::try_from((header, payload))`, then owned.
fn sri_message(frame: &mut codec_sv2::SerializedFrame) -> parsers_sv2::AnyMessageOwned {
    let header = frame.header();
    parsers_sv2::AnyMessage::try_from((header, frame.payload()))
        .expect("SRI parses the message")
        .into_owned()
}

/// The reference implementation's read loop: fill exactly `writable()` from the chunks,
/// `next_frame()`, and on a frame parse it into `AnyMessage` and make it owned.
#[inline]
fn run_sri(data: &[u8], mut each: impl FnMut(parsers_sv2::AnyMessageOwned) -> u64) -> (usize, u64) {
    let mut decoder = codec_sv2::Decoder::new();
    let mut feed = ChunkFeed::new(data);
    let (mut n, mut sum) = (0, 0);
    while feed.fill(decoder.writable()) {
        if let Decoded::Frame(mut frame) = decoder.next_frame().expect("SRI reads the frame") {
            sum += each(sri_message(&mut frame));
            n += 1;
        }
    }
    (n, sum)
}

/// SRI's encrypted read loop: fill exactly `writable()` from the chunks,
/// `next_transport_frame()`, and on a frame parse it into `AnyMessage` and make it owned.
#[inline]
fn run_sri_noise(
    data: &[u8],
    mut rx: TransportDecryptState,
    mut each: impl FnMut(parsers_sv2::AnyMessageOwned) -> u64,
) -> (usize, u64) {
    let mut decoder = codec_sv2::NoiseDecoder::new();
    let mut feed = ChunkFeed::new(data);
    let (mut n, mut sum) = (0, 0);
    while feed.fill(decoder.writable()) {
        match decoder
            .next_transport_frame(rx)
            .expect("SRI decrypts the frame")
        {
            Decrypted::Frame(mut frame, next) => {
                rx = next;
                sum += each(sri_message(&mut frame));
                n += 1;
            }
            Decrypted::Incomplete(_, next) => rx = next,
        }
    }
    (n, sum)
}

// ===== Noise connections =====

/// What every encrypted case's handshake uses: our responder (its certificate signed once)
/// and the authority that signed it, from whose keys SRI's responder is built too.
struct Keys {
    authority: AuthorityKeypair,
    responder: Responder,
}

impl Keys {
    fn new() -> Self {
        let authority = AuthorityKeypair::generate().expect("an authority key");
        let now = unix_time_now();
        let responder = Responder::from_authority(
            StaticKeypair::generate().expect("a static key"),
            &authority,
            now.saturating_sub(60),
            now + 86_400,
        )
        .expect("a responder");
        Keys {
            authority,
            responder,
        }
    }

    fn initiator(&self) -> Initiator {
        Initiator::new(self.authority.public_key()).expect("an initiator")
    }
}

/// `plaintext` (whole frames) encrypted frame by frame by `tx`, as a client sends them.
fn encrypt_stream(tx: &mut NoiseEncryptor, plaintext: &[u8]) -> Vec<u8> {
    let mut wire = BytesMut::new();
    for frame in plaintext.chunks(FRAME_LEN) {
        tx.encrypt_frame(frame, &mut wire).expect("encrypts");
    }
    wire.to_vec()
}

/// What a timed run starts from, made before the timed region.
enum Prepared {
    /// A plaintext case: nothing.
    Plain,
    /// Our pool side, just after the handshake.
    Ours(Box<NoiseCodec<Sv2Codec<Message>>>),
    /// SRI's pool side, just after the handshake.
    Sri(TransportDecryptState),
}

/// A fresh connection for an encrypted `case` and `plaintext` encrypted by our initiator
/// for it (what its decoder reads); nothing for a plaintext case, which reads `plaintext`.
fn prepare(case: Case, plaintext: &[u8], keys: &Keys) -> (Prepared, Option<Vec<u8>>) {
    match case {
        Case::Noise | Case::NoiseReadBatch => {
            let (act1, waiting) = keys.initiator().step_1();
            let (act2, server) = keys.responder.step(&act1).expect("act 2");
            let client = waiting
                .step_2(&act2, unix_time_now())
                .expect("act 2 verifies");
            let (mut tx, _) = client.split();
            let wire = encrypt_stream(&mut tx, plaintext);
            let codec = NoiseCodec::new(server, Sv2Codec::<Message>::new());
            (Prepared::Ours(Box::new(codec)), Some(wire))
        }
        Case::SriNoise => {
            let public = keys.authority.public_key().to_bytes();
            let secret = keys.authority.to_secret_bytes();
            let responder = noise_sv2::Responder::from_authority_kp(
                &public,
                &secret,
                Duration::from_secs(86_400),
            )
            .expect("SRI's responder");
            let (act1, waiting) = keys.initiator().step_1();
            let (act2, server) = Handshake::responder(responder)
                .step_1(act1)
                .expect("SRI answers act 1");
            let client = waiting
                .step_2(act2.payload(), unix_time_now())
                .expect("SRI's act 2 verifies");
            let (mut tx, _) = client.split();
            let wire = encrypt_stream(&mut tx, plaintext);
            let (_, rx) = server.split();
            (Prepared::Sri(rx), Some(wire))
        }
        _ => (Prepared::Plain, None),
    }
}

// ===== the cases =====

/// How a case reads the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Direct,
    Framed,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Framed => "framed",
        }
    }
}

/// What is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Trivial,
    Sv2Codec,
    Sv2CodecAllWith,
    Sv2CodecWith,
    Sv2CodecOrRaw,
    Sv2CodecOrRawReadBatch,
    Frames,
    FramesReadBatch,
    FramesDecode,
    Sri,
    Noise,
    NoiseReadBatch,
    SriNoise,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Trivial => "trivial",
            Case::Sv2Codec => "sv2codec",
            Case::Sv2CodecAllWith => "sv2codec_all_with",
            Case::Sv2CodecWith => "sv2codec_with",
            Case::Sv2CodecOrRaw => "sv2codec_or_raw",
            Case::Sv2CodecOrRawReadBatch => "sv2codec_or_raw_read_batch",
            Case::Frames => "frames",
            Case::FramesReadBatch => "frames_read_batch",
            Case::FramesDecode => "frames_decode",
            Case::Sri => "sri",
            Case::Noise => "noise",
            Case::NoiseReadBatch => "noise_read_batch",
            Case::SriNoise => "sri_noise",
        }
    }

    /// Whether the case reads the encrypted stream.
    fn encrypted(self) -> bool {
        matches!(self, Case::Noise | Case::NoiseReadBatch | Case::SriNoise)
    }

    /// The reference implementation's case on the same transport, compared with in the
    /// table.
    fn sri_twin(self) -> Option<Case> {
        match self {
            Case::Sv2Codec => Some(Case::Sri),
            Case::Noise => Some(Case::SriNoise),
            _ => None,
        }
    }

    fn label(self, mode: Mode) -> &'static str {
        match self {
            Case::Trivial => "(a) trivial Decoder",
            Case::Sv2Codec => "(b) Sv2Codec<Message>",
            Case::Sv2CodecAllWith if mode == Mode::Framed => {
                "(b') read_batch on FramedRead<_, Sv2Codec>, borrowed"
            }
            Case::Sv2CodecAllWith => "(b') Sv2Codec::decode_all_with, borrowed",
            Case::Sv2CodecWith => "(b'') Sv2Codec::decode_with, borrowed, one frame per call",
            Case::Sv2CodecOrRaw => "(g) Sv2Codec<MessageOrRaw<Message>>, a proxy's codec",
            Case::Sv2CodecOrRawReadBatch => {
                "(g') read_batch on FramedRead<_, Sv2Codec<MessageOrRaw<Message>>>, borrowed"
            }
            Case::Frames => "(c) FrameCodec, frames only",
            Case::FramesReadBatch => {
                "(c'') read_batch on FramedRead<_, FrameCodec>, borrowed frames"
            }
            Case::FramesDecode => "(c') FrameCodec + Frame::decode::<Message>",
            Case::Sri => "(d) SRI Decoder + AnyMessage + into_owned",
            Case::Noise => "(e) NoiseCodec<Sv2Codec<Message>>, encrypted",
            Case::NoiseReadBatch => {
                "(e') read_batch on FramedRead<_, NoiseCodec<Sv2Codec>>, encrypted"
            }
            Case::SriNoise => "(f) SRI NoiseDecoder + AnyMessage + into_owned, encrypted",
        }
    }
}

const CASES: [(Mode, Case); 20] = [
    (Mode::Direct, Case::Trivial),
    (Mode::Direct, Case::Sv2Codec),
    (Mode::Direct, Case::Sv2CodecAllWith),
    (Mode::Direct, Case::Sv2CodecWith),
    (Mode::Direct, Case::Sv2CodecOrRaw),
    (Mode::Direct, Case::Frames),
    (Mode::Direct, Case::FramesDecode),
    (Mode::Direct, Case::Sri),
    (Mode::Direct, Case::Noise),
    (Mode::Direct, Case::SriNoise),
    (Mode::Framed, Case::Trivial),
    (Mode::Framed, Case::Sv2Codec),
    (Mode::Framed, Case::Sv2CodecAllWith),
    (Mode::Framed, Case::Sv2CodecOrRaw),
    (Mode::Framed, Case::Sv2CodecOrRawReadBatch),
    (Mode::Framed, Case::Frames),
    (Mode::Framed, Case::FramesReadBatch),
    (Mode::Framed, Case::FramesDecode),
    (Mode::Framed, Case::Noise),
    (Mode::Framed, Case::NoiseReadBatch),
];

/// Checks that `got` are the fields of the frame its sequence number names; returns that
/// sequence number.
fn checked(got: [u32; 6]) -> u64 {
    let seq = got[1];
    assert_eq!(got, fields(seq as usize), "frame {seq} decoded wrong");
    u64::from(seq)
}

fn trivial_seq(s: Share) -> u64 {
    checked([
        s.channel_id,
        s.sequence_number,
        s.job_id,
        s.nonce,
        s.ntime,
        s.version,
    ])
}

fn share_seq(m: Message) -> u64 {
    match m {
        Message::SubmitSharesStandard(s) => checked([
            s.channel_id,
            s.sequence_number,
            s.job_id,
            s.nonce,
            s.ntime,
            s.version,
        ]),
        other => panic!("not a share: {other:?}"),
    }
}

fn frame_seq(f: &Frame) -> u64 {
    assert_eq!(f.header().msg_type(), 0x1a);
    payload_seq(f.payload())
}

fn raw_seq(f: &RawMessageRef<'_>) -> u64 {
    assert_eq!(f.msg_type, 0x1a);
    payload_seq(f.payload)
}

/// The sequence number of a share's payload, after checking its fields.
fn payload_seq(payload: &[u8]) -> u64 {
    let mut got = [0u32; 6];
    for (v, b) in got.iter_mut().zip(payload.chunks_exact(4)) {
        *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    checked(got)
}

fn sri_seq(m: parsers_sv2::AnyMessageOwned) -> u64 {
    match m {
        parsers_sv2::AnyMessageOwned::Mining(parsers_sv2::MiningOwned::SubmitSharesStandard(s)) => {
            checked([
                s.channel_id,
                s.sequence_number,
                s.job_id,
                s.nonce,
                s.ntime,
                s.version,
            ])
        }
        other => panic!("not a share: {other:?}"),
    }
}

/// Decodes the whole stream once (`data`; the encrypted cases start from `prepared`). With
/// `check`, each item's sequence number is added up (the checked run); otherwise each item
/// is only shown to `black_box` by reference (the timed runs: a reference, so that a
/// `Message` is not copied once more for it).
fn run_case(
    mode: Mode,
    case: Case,
    data: &[u8],
    pool: &BufferPool,
    prepared: Prepared,
    check: bool,
) -> (usize, u64) {
    let mut buf = BytesMut::with_capacity(2 * CHUNK);
    // What each case does with an item (these closures only borrow `check`: they are `Copy`).
    let each_share = |s: Share| {
        if check {
            trivial_seq(s)
        } else {
            black_box(&s);
            0
        }
    };
    let each_message = |m: Message| {
        if check {
            share_seq(m)
        } else {
            black_box(&m);
            drop(m);
            0
        }
    };
    let each_frame = |f: Frame| {
        if check {
            frame_seq(&f)
        } else {
            black_box(&f);
            drop(f);
            0
        }
    };
    let each_frame_decoded = |f: Frame| {
        let m = f.decode::<Message>().expect("a share");
        drop(f);
        each_message(m)
    };
    let each_sri = |m: parsers_sv2::AnyMessageOwned| {
        if check {
            sri_seq(m)
        } else {
            black_box(&m);
            drop(m);
            0
        }
    };
    let each_known = |m: MessageOrRaw<Message>| match m {
        MessageOrRaw::Known(m) => each_message(m),
        MessageOrRaw::Raw(r) => panic!("not a share: {r:?}"),
    };
    let frames = || FrameCodec::new(pool.clone());
    match (mode, case, prepared) {
        (Mode::Direct, Case::Trivial, _) => {
            run_direct(&mut TrivialDecoder, data, &mut buf, each_share)
        }
        (Mode::Direct, Case::Sv2Codec, _) => run_direct(
            &mut Sv2Codec::<Message>::new(),
            data,
            &mut buf,
            each_message,
        ),
        (Mode::Direct, Case::Sv2CodecAllWith, _) => run_direct_all_with(data, &mut buf, check),
        (Mode::Direct, Case::Sv2CodecWith, _) => run_direct_with(data, &mut buf, check),
        (Mode::Direct, Case::Sv2CodecOrRaw, _) => run_direct(
            &mut Sv2Codec::<MessageOrRaw<Message>>::new(),
            data,
            &mut buf,
            each_known,
        ),
        (Mode::Direct, Case::Frames, _) => run_direct(&mut frames(), data, &mut buf, each_frame),
        (Mode::Direct, Case::FramesDecode, _) => {
            run_direct(&mut frames(), data, &mut buf, each_frame_decoded)
        }
        (Mode::Direct, Case::Sri, _) => run_sri(data, each_sri),
        (Mode::Direct, Case::Noise, Prepared::Ours(mut codec)) => {
            run_direct(&mut *codec, data, &mut buf, each_message)
        }
        (Mode::Direct, Case::SriNoise, Prepared::Sri(rx)) => run_sri_noise(data, rx, each_sri),
        (Mode::Framed, Case::Trivial, _) => run_framed(TrivialDecoder, data, each_share),
        (Mode::Framed, Case::Sv2Codec, _) => {
            run_framed(Sv2Codec::<Message>::new(), data, each_message)
        }
        (Mode::Framed, Case::Sv2CodecOrRaw, _) => {
            run_framed(Sv2Codec::<MessageOrRaw<Message>>::new(), data, each_known)
        }
        (Mode::Framed, Case::Frames, _) => run_framed(frames(), data, each_frame),
        (Mode::Framed, Case::FramesDecode, _) => run_framed(frames(), data, each_frame_decoded),
        (Mode::Framed, Case::Noise, Prepared::Ours(codec)) => {
            run_framed(*codec, data, each_message)
        }
        (Mode::Framed, Case::NoiseReadBatch, Prepared::Ours(codec)) => {
            run_framed_read_batch(*codec, data, check, |m| share_seq(m.to_owned_value()))
        }
        (Mode::Framed, Case::FramesReadBatch, _) => {
            run_framed_read_batch(frames(), data, check, raw_seq)
        }
        (Mode::Direct, Case::FramesReadBatch | Case::Sv2CodecOrRawReadBatch, _) => {
            unreachable!("read_batch reads a FramedRead")
        }
        (Mode::Direct, Case::NoiseReadBatch, _) => {
            unreachable!("read_batch reads a FramedRead")
        }
        (Mode::Framed, Case::Sv2CodecOrRawReadBatch, _) => run_framed_read_batch(
            Sv2Codec::<MessageOrRaw<Message>>::new(),
            data,
            check,
            |m| match m {
                MessageOrRaw::Known(m) => share_seq(m.to_owned_value()),
                MessageOrRaw::Raw(r) => panic!("not a share: {r:?}"),
            },
        ),
        (Mode::Framed, Case::Sv2CodecAllWith, _) => {
            run_framed_read_batch(Sv2Codec::<Message>::new(), data, check, |m| {
                share_seq(m.to_owned_value())
            })
        }
        (Mode::Framed, Case::Sv2CodecWith, _) => {
            unreachable!("read_batch is the framed form of the borrowed loop")
        }
        (Mode::Framed, Case::Sri | Case::SriNoise, _) => {
            unreachable!("SRI has no tokio_util codec")
        }
        (_, Case::Noise | Case::NoiseReadBatch | Case::SriNoise, _) => {
            unreachable!("{}/{}: not prepared for it", mode.name(), case.name())
        }
    }
}

/// One measured case: its criterion samples `(iterations, time)` in order.
struct Measured {
    mode: Mode,
    case: Case,
    /// Messages in the stream the case read.
    n: usize,
    samples: Vec<(u64, Duration)>,
    allocs_per_msg: f64,
}

impl Measured {
    /// Messages per second of criterion's median sample (the last [`SAMPLES`] samples
    /// recorded are the measurement; those before are the warm-up).
    fn median_msgs_per_s(&self) -> Option<f64> {
        let n = self.n;
        if self.samples.len() < SAMPLES {
            return None;
        }
        let mut per_iter: Vec<f64> = self.samples[self.samples.len() - SAMPLES..]
            .iter()
            .map(|(iters, d)| d.as_secs_f64() / *iters as f64)
            .collect();
        per_iter.sort_by(f64::total_cmp);
        let mid = per_iter.len() / 2;
        let median = if per_iter.len().is_multiple_of(2) {
            (per_iter[mid - 1] + per_iter[mid]) / 2.0
        } else {
            per_iter[mid]
        };
        Some(n as f64 / median)
    }
}

fn stream(c: &mut Criterion<BenchClock>) {
    if filtered_to_other_suite(BENCH) {
        return;
    }
    let (full_n, noise_n) = if is_bench_run() {
        (FULL_N, NOISE_FULL_N)
    } else {
        (TEST_N, TEST_N)
    };
    let all = stream_bytes(full_n.max(noise_n));
    let pool = BufferPool::with_capacity(64).expect("a small pool");
    let clock = BenchClock::from_env();
    let keys = Keys::new();

    // The checks and allocation counts (a few runs of the stream each) only for the cases
    // the command line's filter selects.
    let filters = filters();
    let mut results = Vec::new();
    for (mode, case) in CASES {
        let id = format!("{BENCH}/{}/{}", mode.name(), case.name());
        if !filters.is_empty() && !filters.iter().any(|f| id.contains(f.as_str())) {
            continue;
        }
        let n = if case.encrypted() { noise_n } else { full_n };
        let plaintext = &all[..n * FRAME_LEN];
        // The checked run: exactly n messages, the right ones.
        let (prepared, wire) = prepare(case, plaintext, &keys);
        let data = wire.as_deref().unwrap_or(plaintext);
        let (count_n, sum) = run_case(mode, case, data, &pool, prepared, true);
        assert_eq!(
            count_n,
            n,
            "{}/{} decoded {count_n} of {n}",
            mode.name(),
            case.name()
        );
        assert_eq!(
            sum,
            expected_sum(n),
            "{}/{}: wrong messages",
            mode.name(),
            case.name()
        );
        // Allocations: one more run, counted.
        let (prepared, wire) = prepare(case, plaintext, &keys);
        let data = wire.as_deref().unwrap_or(plaintext);
        let ((count_a, _), allocs) = count(|| run_case(mode, case, data, &pool, prepared, false));
        assert_eq!(count_a, n);

        let samples = RefCell::new(Vec::new());
        let mut g = c.benchmark_group(format!("{BENCH}/{}", mode.name()));
        g.sample_size(SAMPLES)
            .sampling_mode(SamplingMode::Flat)
            .throughput(Throughput::Elements(n as u64));
        g.bench_function(case.name(), |b| {
            b.iter_custom(|iters| {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    // Outside the timed region: the handshake and the encryption.
                    let (prepared, wire) = prepare(case, plaintext, &keys);
                    let data = wire.as_deref().unwrap_or(plaintext);
                    let start = clock.now();
                    black_box(run_case(
                        mode,
                        case,
                        black_box(data),
                        &pool,
                        prepared,
                        false,
                    ));
                    t += clock.since(start);
                }
                samples.borrow_mut().push((iters, t));
                t
            })
        });
        g.finish();
        results.push(Measured {
            mode,
            case,
            n,
            samples: samples.into_inner(),
            allocs_per_msg: allocs.per_op(n as u64),
        });
    }

    if is_bench_run() {
        print_table(&results, full_n, noise_n);
    }
}

fn print_table(results: &[Measured], full_n: usize, noise_n: usize) {
    let mut table = Table::new(&[
        "mode",
        "case",
        "msgs/s (median)",
        "ns/msg",
        "vs trivial",
        "vs SRI, same transport",
        "allocs/msg",
    ]);
    let rate_of = |mode: Mode, case: Case| {
        results
            .iter()
            .find(|t| t.mode == mode && t.case == case)
            .and_then(Measured::median_msgs_per_s)
    };
    for r in results {
        let trivial = rate_of(r.mode, Case::Trivial).filter(|_| !r.case.encrypted());
        let sri = r.case.sri_twin().and_then(|twin| rate_of(r.mode, twin));
        let rate = r.median_msgs_per_s();
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
        table.push(vec![
            r.mode.name().to_owned(),
            r.case.label(r.mode).to_owned(),
            cell(rate.map(|v| format!("{:.1} M", v / 1e6))),
            cell(rate.map(|v| format!("{:.2}", 1e9 / v))),
            cell(rate.zip(trivial).map(|(v, t)| format!("{:.2}x", v / t))),
            cell(rate.zip(sri).map(|(v, t)| format!("{:.1}x", v / t))),
            format!("{:.3}", r.allocs_per_msg),
        ]);
    }
    // What each item costs to move through `decode` and `FramedRead`'s `poll_next`.
    println!(
        "item sizes (bytes): Share {}, Message {}, Frame {}, Result<Option<Message>, CodecError> {}, \
         Option<Result<Message, CodecError>> {}",
        size_of::<Share>(),
        size_of::<Message>(),
        size_of::<Frame>(),
        size_of::<Result<Option<Message>, CodecError>>(),
        size_of::<Option<Result<Message, CodecError>>>(),
    );
    emit(
        &table,
        BENCH,
        &format!(
            "stream: {full_n} SubmitSharesStandard frames ({noise_n} encrypted) in 64 KiB chunks \
             (ratios: to trivial in the same mode, plaintext only; to SRI on the same transport)"
        ),
    );
}

fn config() -> Criterion<BenchClock> {
    criterion_config(BENCH)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args()
}

/// `criterion_group!` makes a public function; it lives here, out of the crate root.
mod harness {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = stream
    }
}

criterion_main!(harness::benches);
