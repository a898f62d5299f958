//! Instruction counts of the hot paths, measured with callgrind, checked against a
//! committed baseline.
//!
//! Wall-clock time on a small shared machine moves by tens of percent from run to run;
//! the number of instructions a path executes does not (same binary, same input: same
//! count). This program measures it on the enum path (frame → `Message` → frame) for
//! owned decode, borrowed decode and encode of every message of the catalog
//! (`sv2c_binary::messages::CATALOG`, each with its golden frame), and borrowed decode then
//! `to_owned` and the floor of a selection of them ([`SELECTED`]); for
//! the stream case (`Sv2Codec` owned and borrowed (`decode_all_with`, and `read_batch` on a
//! `FramedRead` over an in-memory reader), and `FrameCodec` + owned decode, over 64 frames
//! per read), and for a pair of owned decodes of different sizes, one after the other.
//! A message added to the catalog, with its golden vector, is measured with no change here.
//!
//! ```text
//! sv2c-icount list                    the cases
//! sv2c-icount run <case> <n>          run one case n times (what callgrind measures)
//! sv2c-icount check [--bless | --bless-new] [--baseline FILE] [--threshold PCT]
//! ```
//!
//! `check` runs every case under `valgrind --tool=callgrind` twice (one process per core
//! at a time), with [`SHORT`] and [`LONG`] iterations (fewer for frames longer than
//! [`FULL_ITERATIONS_UP_TO`]), and takes the difference divided by
//! the extra iterations: start-up and setup (reading the golden vectors) cancel out, what
//! is left is the instructions of one operation (allocation and drop included). It
//! compares them with the baseline (`benches/icount-baseline.txt`) and fails if any case
//! grew by more than the threshold (default [`DEFAULT_THRESHOLD_PCT`] %); a case the
//! baseline lacks is listed as `new` and does not fail. `--bless` measures every case and
//! writes the counts as the baseline instead; `--bless-new` measures only the cases the
//! baseline lacks and adds them, leaving its other lines as they are. See BENCHMARKS.md,
//! "Instruction counts".

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io;
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use sv2c_benches::golden::Golden;
use sv2c_binary::MessageSet;
use sv2c_binary::messages::{
    CATALOG, Message, MessageInfo, MessageOrRaw, MessageRef, encode_frame_into, frame_parts,
};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{BatchDecoder, FrameCodec, Sv2Codec, read_batch};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, FramedRead};

/// Iterations of the short run.
const SHORT: u64 = 2_000;
/// Iterations of the long run.
const LONG: u64 = 12_000;
/// Frames per read in the stream cases.
const STREAM_BATCH: usize = 64;

/// A regression is an increase above this percentage of the baseline. Callgrind counts are
/// exact for a given binary, so the threshold only has to absorb what an unrelated change
/// elsewhere does to code generation (inlining and layout decisions, typically ±1–2 %),
/// while a real regression on these paths (one more copy of the 200-byte `Message`, an
/// allocation, a lost fast path) costs 10 % or more of operations of 100–1,000
/// instructions.
const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// Operations measured for every message of the catalog ([`CATALOG`]): owned decode,
/// borrowed decode and encode.
const CATALOG_OPS: &[&str] = &["owned", "ref", "encode"];

/// Operations measured for the [`SELECTED`] messages only (`keep`: borrowed decode, then
/// `MessageRef::to_owned`, what a borrowed read loop does with a message it keeps; `floor`:
/// the frame copied into a new `Vec` and dropped, the physical floor of an owned decode,
/// for comparison).
const SELECTED_OPS: &[&str] = &["keep", "floor"];

/// The messages of the [`SELECTED_OPS`] cases: the share path, job distribution,
/// connection setup, a long-string error (UpdateChannelError), two short-string messages
/// (SubmitSharesError, CloseChannel), the large Template Distribution / Job Declaration
/// messages, and the two with the owned decodes furthest above the floor's 2x
/// (DeclareMiningJobError, RequestExtensionsError; ADR 0001). A choice, not a coverage
/// list: a new message of the catalog gets its [`CATALOG_OPS`] cases without a row here.
const SELECTED: &[&str] = &[
    "SubmitSharesStandard",
    "SubmitSharesExtended",
    "SubmitSharesSuccess",
    "NewMiningJob",
    "NewExtendedMiningJob",
    "SetNewPrevHash",
    "SetTarget",
    "UpdateChannel",
    "OpenStandardMiningChannel",
    "OpenExtendedMiningChannelSuccess",
    "SetupConnection",
    "UpdateChannelError",
    "SubmitSharesError",
    "CloseChannel",
    "SetExtranoncePrefix",
    "NewTemplate",
    "DeclareMiningJob",
    "RequestTransactionDataSuccess",
    "DeclareMiningJobError",
    "RequestExtensionsError",
];

/// Frames up to this length run [`SHORT`] and [`LONG`] iterations; a longer frame runs
/// proportionally fewer (at least [`MIN_LONG`] in the long run), so that every message case
/// costs callgrind about as much time as a 2 KiB one: the 1 MiB
/// ProvideMissingTransactionsSuccess at 12,000 iterations would take minutes.
const FULL_ITERATIONS_UP_TO: usize = 2048;

/// The fewest iterations of a long run.
const MIN_LONG: u64 = 60;

/// Pairs of types decoded (owned) one after the other in each iteration, each dropped
/// before the next decode. The two payloads are far apart in length, so the allocator
/// serves them from different size classes.
const PAIRS: &[&str] = &["UpdateChannelError+RequestTransactionDataSuccess"];

/// Stream cases: per read of [`STREAM_BATCH`] SubmitSharesStandard frames.
const STREAMS: &[&str] = &[
    "stream/sv2codec",
    "stream/sv2codec_all_with",
    "stream/sv2codec_or_raw",
    "stream/sv2codec_all_with_or_raw",
    "stream/read_batch",
    "stream/read_batch_frames",
    "stream/framecodec",
    "stream/framecodec_owned",
];

/// The name of a catalog entry in case names: its message name, with `-<protocol>`
/// appended when an earlier entry has the same name (Template Distribution's
/// `SetNewPrevHash` is `SetNewPrevHash-template_distribution`; Mining's is
/// `SetNewPrevHash`).
fn label(info: &MessageInfo) -> String {
    if name_is_shared(info) {
        format!("{}-{}", info.name, info.protocol)
    } else {
        info.name.to_owned()
    }
}

/// Whether an entry before `info` in the catalog has its name.
fn name_is_shared(info: &MessageInfo) -> bool {
    CATALOG
        .iter()
        .take_while(|m| *m != info)
        .any(|m| m.name == info.name)
}

/// The catalog entry whose [`label`] is `label`, found without allocating (`run` looks it
/// up before counting; see [`sv2c_benches::golden::frame`]).
fn entry(label: &str) -> Option<&'static MessageInfo> {
    CATALOG.iter().find(|m| {
        if name_is_shared(m) {
            label
                .strip_prefix(m.name)
                .and_then(|rest| rest.strip_prefix('-'))
                == Some(m.protocol.name())
        } else {
            label == m.name
        }
    })
}

fn cases() -> Vec<String> {
    let mut v: Vec<String> = CATALOG
        .iter()
        .flat_map(|m| {
            let label = label(m);
            CATALOG_OPS.iter().map(move |op| format!("{op}/{label}"))
        })
        .collect();
    v.extend(
        SELECTED
            .iter()
            .flat_map(|t| SELECTED_OPS.iter().map(move |op| format!("{op}/{t}"))),
    );
    v.extend(PAIRS.iter().map(|p| format!("owned_pair/{p}")));
    v.extend(STREAMS.iter().map(|s| (*s).to_owned()));
    v
}

/// The short and long iteration counts of `case`: [`SHORT`] and [`LONG`], fewer for a
/// message case whose frame (in `golden`) is longer than [`FULL_ITERATIONS_UP_TO`].
fn iterations(case: &str, golden: &[Golden]) -> Result<(u64, u64), String> {
    let message = case
        .split_once('/')
        .and_then(|(op, label)| (op != "owned_pair" && op != "stream").then_some(label))
        .and_then(entry);
    let Some(info) = message else {
        return Ok((SHORT, LONG));
    };
    let len = golden
        .iter()
        .find(|g| g.protocol == info.protocol.name() && g.name == info.name)
        .ok_or_else(|| format!("no vector for {}/{}", info.protocol, info.name))?
        .frame
        .len();
    if len <= FULL_ITERATIONS_UP_TO {
        return Ok((SHORT, LONG));
    }
    let long = (LONG * FULL_ITERATIONS_UP_TO as u64 / len as u64).max(MIN_LONG);
    Ok((long * SHORT / LONG, long))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for c in cases() {
                println!("{c}");
            }
            ExitCode::SUCCESS
        }
        Some("run") => {
            let (Some(case), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse().ok()))
            else {
                eprintln!("usage: sv2c-icount run <case> <iterations>");
                return ExitCode::FAILURE;
            };
            match run(case, n) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("check") => match check(&args[1..]) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("sv2c-icount: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!(
                "usage: sv2c-icount list | run <case> <n> | check [--bless | --bless-new] [--baseline FILE] [--threshold PCT]"
            );
            ExitCode::FAILURE
        }
    }
}

// ===== the measured operations =====

fn run(case: &str, n: u64) -> Result<(), String> {
    if let Some(stream) = case.strip_prefix("stream/") {
        return run_stream(stream, n);
    }
    let (op, name) = case
        .split_once('/')
        .ok_or_else(|| format!("unknown case {case}"))?;
    if op == "owned_pair" {
        let (a, b) = name
            .split_once('+')
            .ok_or_else(|| format!("unknown case {case}"))?;
        let (a, b) = (
            sv2c_benches::golden::frame(a)?,
            sv2c_benches::golden::frame(b)?,
        );
        return op_owned_pair(&a, &b, n);
    }
    let info = entry(name).ok_or_else(|| format!("{name} is not in the catalog"))?;
    let frame = sv2c_benches::golden::frame_in(info.protocol.name(), info.name)?;
    let frame = frame.as_slice();
    // One function per operation (see `run_stream`).
    match op {
        "owned" => op_owned(frame, n),
        "ref" => op_ref(frame, n),
        "keep" => op_keep(frame, n),
        "floor" => {
            op_floor(frame, n);
            Ok(())
        }
        "encode" => op_encode(name, frame, n),
        _ => Err(format!("unknown operation {op}")),
    }
}

#[inline(never)]
fn op_owned(frame: &[u8], n: u64) -> Result<(), String> {
    for _ in 0..n {
        let (ext, mt, payload) = frame_parts(black_box(frame)).map_err(|e| e.to_string())?;
        let m = Message::decode_message(ext, mt, payload).map_err(|e| e.to_string())?;
        drop(black_box(m));
    }
    Ok(())
}

#[inline(never)]
fn op_owned_pair(a: &[u8], b: &[u8], n: u64) -> Result<(), String> {
    for _ in 0..n {
        for frame in [a, b] {
            let (ext, mt, payload) = frame_parts(black_box(frame)).map_err(|e| e.to_string())?;
            let m = Message::decode_message(ext, mt, payload).map_err(|e| e.to_string())?;
            drop(black_box(m));
        }
    }
    Ok(())
}

#[inline(never)]
fn op_ref(frame: &[u8], n: u64) -> Result<(), String> {
    for _ in 0..n {
        let (ext, mt, payload) = frame_parts(black_box(frame)).map_err(|e| e.to_string())?;
        let m = MessageRef::decode(ext, mt, payload).map_err(|e| e.to_string())?;
        black_box(&m);
    }
    Ok(())
}

/// Borrowed decode, then `to_owned` of the borrowed message, dropped.
#[inline(never)]
fn op_keep(frame: &[u8], n: u64) -> Result<(), String> {
    for _ in 0..n {
        let (ext, mt, payload) = frame_parts(black_box(frame)).map_err(|e| e.to_string())?;
        let m = MessageRef::decode(ext, mt, payload).map_err(|e| e.to_string())?;
        drop(black_box(black_box(&m).to_owned_value()));
    }
    Ok(())
}

#[inline(never)]
fn op_floor(frame: &[u8], n: u64) {
    for _ in 0..n {
        drop(black_box(black_box(frame).to_vec()));
    }
}

#[inline(never)]
fn op_encode(name: &str, frame: &[u8], n: u64) -> Result<(), String> {
    let (ext, mt, payload) = frame_parts(frame).map_err(|e| e.to_string())?;
    let m = Message::decode_message(ext, mt, payload).map_err(|e| e.to_string())?;
    let mut out: Vec<u8> = Vec::with_capacity(frame.len() + 64);
    for _ in 0..n {
        out.clear();
        encode_frame_into(black_box(&m), &mut out).map_err(|e| e.to_string())?;
        black_box(&out);
    }
    // (Some vectors carry a TLV tail, which the owned message does not keep.)
    let (ext, mt, payload) = frame_parts(&out).map_err(|e| e.to_string())?;
    if Message::decode_message(ext, mt, payload).ok().as_ref() != Some(&m) {
        return Err(format!(
            "{name}: the encoded frame does not decode to the message"
        ));
    }
    Ok(())
}

/// `n` reads of [`STREAM_BATCH`] SubmitSharesStandard frames, each decoded. Each case is
/// its own function, so that what the compiler does to one (inlining decisions in a large
/// function) does not move the counts of another.
fn run_stream(which: &str, n: u64) -> Result<(), String> {
    let one = sv2c_benches::golden::frame("SubmitSharesStandard")?;
    let chunk: Vec<u8> = one.repeat(STREAM_BATCH);
    let buf = BytesMut::with_capacity(chunk.len() * 2);
    let decoded = match which {
        "sv2codec" => stream_sv2codec::<Message>(&chunk, buf, n)?,
        "sv2codec_all_with" => stream_sv2codec_all_with::<Message>(&chunk, buf, n)?,
        "sv2codec_all_with_or_raw" => {
            stream_sv2codec_all_with::<MessageOrRaw<Message>>(&chunk, buf, n)?
        }
        "sv2codec_or_raw" => stream_sv2codec::<MessageOrRaw<Message>>(&chunk, buf, n)?,
        "read_batch" => stream_read_batch(&chunk, n, Sv2Codec::<Message>::new())?,
        "read_batch_frames" => stream_read_batch(
            &chunk,
            n,
            FrameCodec::new(BufferPool::new(64, 256).map_err(|e| e.to_string())?),
        )?,
        "framecodec" => stream_framecodec(&chunk, buf, n)?,
        "framecodec_owned" => stream_framecodec_owned(&chunk, buf, n)?,
        _ => return Err(format!("unknown stream case {which}")),
    };
    if decoded != n * STREAM_BATCH as u64 {
        return Err(format!(
            "decoded {decoded} of {} frames",
            n * STREAM_BATCH as u64
        ));
    }
    Ok(())
}

/// `Sv2Codec<M>` with `Decoder::decode`, owned items: `Message` (`stream/sv2codec`), and a
/// proxy's `MessageOrRaw<Message>` (known messages decoded, unknown frames kept raw;
/// `stream/sv2codec_or_raw`). One function per set (monomorphized, never inlined).
#[inline(never)]
fn stream_sv2codec<M: MessageSet>(chunk: &[u8], mut buf: BytesMut, n: u64) -> Result<u64, String> {
    let mut decoded = 0;
    let mut codec = Sv2Codec::<M>::new();
    for _ in 0..n {
        buf.extend_from_slice(black_box(chunk));
        while let Some(m) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            black_box(m);
            decoded += 1;
        }
    }
    Ok(decoded)
}

/// `Sv2Codec<M>::decode_all_with`, borrowed items: `Message` (`stream/sv2codec_all_with`)
/// and a proxy's `MessageOrRaw<Message>` (`stream/sv2codec_all_with_or_raw`). One function
/// per set (monomorphized, never inlined).
#[inline(never)]
fn stream_sv2codec_all_with<M: MessageSet>(
    chunk: &[u8],
    mut buf: BytesMut,
    n: u64,
) -> Result<u64, String> {
    let mut decoded = 0;
    let mut codec = Sv2Codec::<M>::new();
    for _ in 0..n {
        buf.extend_from_slice(black_box(chunk));
        decoded += codec
            .decode_all_with(&mut buf, |m| {
                black_box(m);
            })
            .map_err(|e| e.to_string())? as u64;
    }
    Ok(decoded)
}

/// An in-memory reader: `reads` reads of one whole `chunk` each (the caller's buffer has
/// room for it), then the end of the stream. Always ready.
struct ChunkRepeat<'a> {
    chunk: &'a [u8],
    reads: u64,
}

impl AsyncRead for ChunkRepeat<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.reads > 0 {
            if buf.remaining() < self.chunk.len() {
                return Poll::Ready(Err(io::Error::other("no room for a whole chunk")));
            }
            buf.put_slice(self.chunk);
            self.reads -= 1;
        }
        Poll::Ready(Ok(()))
    }
}

/// `read_batch` on a `FramedRead` around `codec` (`Sv2Codec<Message>`: borrowed messages;
/// `FrameCodec`: borrowed frames, a proxy's forwarding loop): each call reads one chunk and
/// hands out its 64 messages. The reader is always ready, so every call completes in its
/// first poll (a no-op waker, no executor). The harness's own code moves how the compiler
/// builds these loops, with the library unchanged: a second codec here took
/// `stream/read_batch` from 5 141 to 5 348 instructions (whether this function is generic
/// or written twice), and running the callgrind processes side by side in `check` took it
/// to 5 165 and `stream/sv2codec_all_with` from 5 316 to 4 928. Re-bless after such a
/// change, and say so.
#[inline(never)]
fn stream_read_batch<C: BatchDecoder>(chunk: &[u8], n: u64, codec: C) -> Result<u64, String> {
    let reader = ChunkRepeat { chunk, reads: n };
    let mut framed = FramedRead::with_capacity(reader, codec, 2 * chunk.len());
    let mut cx = Context::from_waker(Waker::noop());
    let mut decoded = 0;
    loop {
        let call = pin!(read_batch(&mut framed, |m| {
            black_box(m);
        }));
        match call.poll(&mut cx) {
            Poll::Ready(Ok(Some(k))) => decoded += k as u64,
            Poll::Ready(Ok(None)) => return Ok(decoded),
            Poll::Ready(Err(e)) => return Err(e.to_string()),
            Poll::Pending => return Err("an always-ready reader left read_batch pending".into()),
        }
    }
}

#[inline(never)]
fn stream_framecodec(chunk: &[u8], mut buf: BytesMut, n: u64) -> Result<u64, String> {
    let mut decoded = 0;
    let pool = BufferPool::new(64, 256).map_err(|e| e.to_string())?;
    let mut codec = FrameCodec::new(pool);
    for _ in 0..n {
        buf.extend_from_slice(black_box(chunk));
        while let Some(frame) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            black_box(&frame);
            decoded += 1;
        }
    }
    Ok(decoded)
}

#[inline(never)]
fn stream_framecodec_owned(chunk: &[u8], mut buf: BytesMut, n: u64) -> Result<u64, String> {
    let mut decoded = 0;
    let pool = BufferPool::new(64, 256).map_err(|e| e.to_string())?;
    let mut codec = FrameCodec::new(pool);
    for _ in 0..n {
        buf.extend_from_slice(black_box(chunk));
        while let Some(frame) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            let m: Message = frame.decode().map_err(|e| e.to_string())?;
            black_box(m);
            decoded += 1;
        }
    }
    Ok(decoded)
}

// ===== the check =====

fn check(args: &[String]) -> Result<bool, String> {
    let mut bless = false;
    let mut bless_new = false;
    let mut threshold = DEFAULT_THRESHOLD_PCT;
    let mut baseline = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/icount-baseline.txt"));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bless" => bless = true,
            "--bless-new" => bless_new = true,
            "--threshold" => {
                threshold = it
                    .next()
                    .and_then(|t| t.parse().ok())
                    .ok_or("--threshold needs a number")?;
            }
            "--baseline" => baseline = it.next().ok_or("--baseline needs a path")?.into(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let golden = sv2c_benches::golden::frames()?;
    if bless {
        let measured = measure_all(&exe, &cases(), &golden)?;
        write_baseline(&baseline, &measured)?;
        println!("wrote {} cases to {}", measured.len(), baseline.display());
        return Ok(true);
    }
    let text = std::fs::read_to_string(&baseline)
        .map_err(|e| format!("{}: {e} (write one with --bless)", baseline.display()))?;
    let base: BTreeMap<&str, f64> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (case, n) = l.rsplit_once(' ')?;
            Some((case, n.parse().ok()?))
        })
        .collect();
    if bless_new {
        // Only the cases the baseline lacks are measured; its lines are kept as they are.
        let new: Vec<String> = cases()
            .into_iter()
            .filter(|c| !base.contains_key(c.as_str()))
            .collect();
        let measured = measure_all(&exe, &new, &golden)?;
        let mut all: BTreeMap<String, f64> = base
            .iter()
            .map(|(case, n)| ((*case).to_owned(), *n))
            .collect();
        all.extend(measured);
        write_baseline(&baseline, &all)?;
        println!("added {} cases to {}", new.len(), baseline.display());
        return Ok(true);
    }
    let measured = measure_all(&exe, &cases(), &golden)?;
    let mut ok = true;
    println!(
        "{:<45} {:>12} {:>12} {:>8}",
        "case", "baseline", "now", "change"
    );
    for (case, now) in &measured {
        let Some(&was) = base.get(case.as_str()) else {
            println!("{case:<45} {:>12} {now:>12.1} {:>8}", "-", "new");
            continue;
        };
        let change = (now - was) / was * 100.0;
        let verdict = if change > threshold {
            ok = false;
            "  REGRESSION"
        } else if change < -threshold {
            "  (faster: re-bless)"
        } else {
            ""
        };
        println!("{case:<45} {was:>12.1} {now:>12.1} {change:>+7.1}%{verdict}");
    }
    for case in base.keys().filter(|c| !measured.contains_key(**c)) {
        println!("{case:<45} in the baseline but no longer measured");
    }
    if ok {
        println!("instruction counts within {threshold} % of the baseline");
    } else {
        println!("instruction counts: regression above {threshold} % (see above)");
    }
    Ok(ok)
}

/// Writes `counts` as the baseline file, one `case count` line each, in case order.
fn write_baseline(path: &std::path::Path, counts: &BTreeMap<String, f64>) -> Result<(), String> {
    let mut text = String::from(
        "# Instructions per operation (callgrind), written by `sv2c-icount check --bless`.\n\
         # Stream cases are per read of 64 frames. See BENCHMARKS.md, \"Instruction counts\".\n",
    );
    for (case, n) in counts {
        text.push_str(&format!("{case} {n:.1}\n"));
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Instructions per operation of every case, measured by as many callgrind processes at a
/// time as the machine has cores. Each count is of one process on its own (callgrind
/// simulates the program instruction by instruction), so running them side by side
/// changes only the wall time, not the counts.
fn measure_all(
    exe: &std::path::Path,
    cases: &[String],
    golden: &[Golden],
) -> Result<BTreeMap<String, f64>, String> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results: Vec<Result<Vec<(String, f64)>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(cases.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(case) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (short_n, long_n) = iterations(case, golden)?;
                        let short = callgrind(exe, case, short_n)?;
                        let long = callgrind(exe, case, long_n)?;
                        let per_op = long.saturating_sub(short) as f64 / (long_n - short_n) as f64;
                        done.push((case.clone(), per_op));
                    }
                    Ok(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect()
    });
    let mut measured = BTreeMap::new();
    for r in results {
        measured.extend(r?);
    }
    if measured.len() != cases.len() {
        return Err(format!(
            "measured {} of {} cases",
            measured.len(),
            cases.len()
        ));
    }
    Ok(measured)
}

/// Instructions executed by `exe run <case> <n>` under callgrind.
fn callgrind(exe: &std::path::Path, case: &str, n: u64) -> Result<u64, String> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(["run", case, &n.to_string()])
        .output()
        .map_err(|e| format!("valgrind: {e} (is valgrind installed?)"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{case}: run failed:\n{stderr}"));
    }
    stderr
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("Collected :")?;
            rest.trim().parse().ok()
        })
        .ok_or_else(|| format!("{case}: no 'Collected' line in callgrind's output:\n{stderr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_message_has_its_cases_under_a_label_that_finds_it_again() {
        let cases = cases();
        for m in CATALOG {
            let label = label(m);
            assert_eq!(entry(&label), Some(m), "{label}");
            for op in CATALOG_OPS {
                assert!(cases.contains(&format!("{op}/{label}")), "{op}/{label}");
            }
        }
        assert_eq!(label(&CATALOG[0]), CATALOG[0].name);
        let prev_hashes: Vec<String> = CATALOG
            .iter()
            .filter(|m| m.name == "SetNewPrevHash")
            .map(label)
            .collect();
        assert_eq!(
            prev_hashes,
            ["SetNewPrevHash", "SetNewPrevHash-template_distribution"]
        );
        assert_eq!(entry("SetNewPrevHash-mining"), None);
        assert_eq!(entry("NoSuchMessage"), None);
        let unique: std::collections::BTreeSet<&String> = cases.iter().collect();
        assert_eq!(unique.len(), cases.len(), "case names are unique");
    }

    #[test]
    fn the_selection_names_messages_of_the_catalog() {
        for name in SELECTED {
            assert!(
                entry(name).is_some(),
                "SELECTED names {name}, which is not a message of the catalog"
            );
        }
    }

    #[test]
    fn long_frames_run_fewer_iterations() {
        let golden = sv2c_benches::golden::frames().unwrap();
        assert_eq!(
            iterations("owned/SubmitSharesStandard", &golden),
            Ok((SHORT, LONG))
        );
        assert_eq!(iterations("stream/sv2codec", &golden), Ok((SHORT, LONG)));
        // 32 833 bytes: 12 000 × 2048 / 32 833 = 748 iterations, and a sixth of them.
        assert_eq!(
            iterations("owned/DeclareMiningJob", &golden),
            Ok((124, 748))
        );
        // 1 MiB: the minimum.
        assert_eq!(
            iterations("encode/ProvideMissingTransactionsSuccess", &golden),
            Ok((MIN_LONG / 6, MIN_LONG))
        );
    }
}
