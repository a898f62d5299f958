//! The path users run, for every message of the catalog (`CATALOG`): a frame (from the
//! golden vectors, written by the reference implementation) → the `Message` enum, owned
//! and borrowed, and the enum → a frame in a reused buffer; beside the reference
//! implementation's same path (`framing_sv2` header + `parsers_sv2::AnyMessage::try_from` +
//! `into_owned`, and `MessageFrame::from_message` + `encode_into`) and the physical floor
//! of an owned decode (one allocation and copy of the frame, then its drop).
//!
//! Ids: `enum_path/<Type>/<op>`, op one of `ours_owned`, `sri_owned`, `ours_ref`,
//! `sri_ref`, `copy` (the frame copied into a reused buffer: what both borrowed decodes
//! start from, here included in both), `ours_keep` (that copy, the borrowed decode, then
//! `MessageRef::to_owned`: the steps of `sri_owned`), `ours_encode`, `sri_encode`, `floor`. The last
//! vector of each type is used. `cargo bench -p sv2c-benches --bench enum_path` prints an
//! allocation table too (allocations per operation, both sides).
//!
//! Every operation reads its frame from, and copies or encodes it to, one of [`PLACES`]
//! places in turn (the next one each iteration), spread over a 4 KiB page and over the
//! 8-byte offsets of a cache line. Timed at a single address, the same code measured up to
//! 1.4× apart between two builds of this file (a 30-byte `to_vec` at 21 or 29 ns), because
//! of where the frame and its copy happened to lie (the heap's layout differed); a user's
//! frames arrive anywhere in a read buffer, so the times are averages over those places.

use std::hint::black_box;
use std::ops::Range;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use framing_sv2::framing::{EncodableFrame, MessageFrame};
use sv2c_benches::alloc::{CountingAlloc, count};
use sv2c_binary::MessageSet;
use sv2c_binary::messages::{CATALOG, Message, MessageRef, encode_frame_into, frame_parts};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// How many places each operation cycles through (a power of two).
const PLACES: usize = 8;

/// [`PLACES`] copies of a frame in one buffer, copy `k` starting `64 + 520 k` bytes past a
/// multiple of 4 KiB: a different offset in the page for each, and `8k` bytes into a cache
/// line.
struct Placed {
    buf: Vec<u8>,
    spans: [Range<usize>; PLACES],
}

impl Placed {
    fn new(frame: &[u8]) -> Self {
        let stride = frame.len().div_ceil(4096) * 4096 + 4096;
        let spans: [Range<usize>; PLACES] = std::array::from_fn(|k| {
            let start = k * stride + 64 + k * 520;
            start..start + frame.len()
        });
        let mut buf = vec![0u8; PLACES * stride + 4096];
        for span in &spans {
            buf[span.clone()].copy_from_slice(frame);
        }
        Placed { buf, spans }
    }

    fn get(&self, k: usize) -> &[u8] {
        &self.buf[self.spans[k % PLACES].clone()]
    }

    fn get_mut(&mut self, k: usize) -> &mut [u8] {
        &mut self.buf[self.spans[k % PLACES].clone()]
    }
}

/// The place of the next iteration.
fn next(k: &mut usize) -> usize {
    *k = (*k + 1) % PLACES;
    *k
}

fn ours_owned(frame: &[u8]) -> Message {
    let (ext, msg_type, payload) = frame_parts(frame).expect("a frame");
    Message::decode_message(ext, msg_type, payload).expect("we decode the vector")
}

/// The frame at place `k` copied into the scratch place `k`, then decoded borrowed from
/// there: what `ours_ref` times, and `ours_keep` before its `to_owned`.
#[inline(always)]
fn copied_ref<'s>(src: &Placed, scratch: &'s mut Placed, k: usize) -> MessageRef<'s> {
    let scratch = scratch.get_mut(k);
    scratch.copy_from_slice(black_box(src.get(k)));
    let scratch: &'s [u8] = scratch;
    let (ext, msg_type, payload) = frame_parts(scratch).expect("a frame");
    MessageRef::decode(ext, msg_type, payload).expect("decodes")
}

fn sri_header(frame: &[u8]) -> framing_sv2::header::Header {
    framing_sv2::header::Header::from_bytes(&frame[..6]).expect("SRI reads the header")
}

fn sri_owned(frame: &mut [u8]) -> parsers_sv2::AnyMessageOwned {
    let header = sri_header(frame);
    let any = parsers_sv2::AnyMessage::try_from((header, &mut frame[6..]))
        .expect("SRI decodes the vector");
    any.into_owned()
}

fn enum_path(c: &mut Criterion) {
    // `cargo bench pool_lifecycle` at the root: no id here matches, skip the allocation counts.
    if sv2c_benches::report::filtered_to_other_suite("enum_path") {
        return;
    }
    // Every message of the catalog, with its last golden frame. SRI's side needs no list
    // of its own: `AnyMessage` dispatches on the frame's header as ours does.
    let golden = sv2c_benches::golden::frames().expect("golden vectors");
    let frames: Vec<(String, Vec<u8>)> = CATALOG
        .iter()
        .map(|m| {
            let g = golden
                .iter()
                .find(|g| g.protocol == m.protocol.name() && g.name == m.name)
                .unwrap_or_else(|| {
                    panic!(
                        "{}/{} has no golden vector in tests-data/sv2-vectors.jsonl",
                        m.protocol, m.name
                    )
                });
            (g.label.clone(), g.frame.clone())
        })
        .collect();
    let mut allocs = Vec::new();
    for (name, frame) in &frames {
        let mut g = c.benchmark_group(format!("enum_path/{name}"));
        let message = ours_owned(frame);
        let src = Placed::new(frame);
        let mut scratch = Placed::new(frame);
        let mut outs: [Vec<u8>; PLACES] =
            std::array::from_fn(|_| Vec::with_capacity(frame.len() + 64));
        let mut k = 0;

        g.bench_function("ours_owned", |b| {
            b.iter(|| ours_owned(black_box(src.get(next(&mut k)))))
        });
        g.bench_function("sri_owned", |b| {
            b.iter(|| {
                let k = next(&mut k);
                let scratch = scratch.get_mut(k);
                scratch.copy_from_slice(black_box(src.get(k)));
                sri_owned(scratch)
            })
        });
        g.bench_function("ours_ref", |b| {
            b.iter(|| {
                let m = copied_ref(&src, &mut scratch, next(&mut k));
                black_box(&m);
            })
        });
        // What a borrowed read loop does with a message it keeps: the same copy and
        // borrowed decode, then `to_owned` (drop included). Compared with `sri_owned`,
        // which is the same steps on SRI's side (copy, borrowed decode, `into_owned`).
        g.bench_function("ours_keep", |b| {
            b.iter(|| copied_ref(&src, &mut scratch, next(&mut k)).to_owned_value())
        });
        g.bench_function("sri_ref", |b| {
            b.iter(|| {
                let k = next(&mut k);
                let scratch = scratch.get_mut(k);
                scratch.copy_from_slice(black_box(src.get(k)));
                let header = sri_header(scratch);
                let any = parsers_sv2::AnyMessage::try_from((header, &mut scratch[6..]))
                    .expect("SRI decodes");
                black_box(&any);
            })
        });
        g.bench_function("copy", |b| {
            b.iter(|| {
                let k = next(&mut k);
                scratch.get_mut(k).copy_from_slice(black_box(src.get(k)))
            })
        });
        g.bench_function("ours_encode", |b| {
            b.iter(|| {
                let out = &mut outs[next(&mut k)];
                out.clear();
                encode_frame_into(black_box(&message), out).expect("encodes");
            })
        });
        // SRI encodes a message it owns by value: it gets a borrowed one decoded from
        // a buffer of its own (a clone of which costs no allocation).
        let mut sri_buf = frame.clone();
        let header = sri_header(&sri_buf);
        let any = parsers_sv2::AnyMessage::try_from((header, &mut sri_buf[6..])).expect("SRI");
        let (ext, msg_type) = (header.ext_type_without_channel_msg(), header.msg_type());
        let channel = header.channel_msg();
        let sri_len = MessageFrame::from_message(any.clone(), msg_type, ext, channel)
            .expect("fits")
            .encoded_length();
        let mut dsts: [Vec<u8>; PLACES] = std::array::from_fn(|_| vec![0u8; sri_len]);
        g.bench_function("sri_encode", |b| {
            b.iter(|| {
                let f = MessageFrame::from_message(black_box(any.clone()), msg_type, ext, channel)
                    .expect("fits");
                f.encode_into(&mut dsts[next(&mut k)]).expect("encodes");
            })
        });
        g.bench_function("floor", |b| {
            b.iter(|| black_box(src.get(next(&mut k))).to_vec())
        });
        g.finish();

        // Allocations per operation (100 runs each).
        let per = |f: &mut dyn FnMut()| {
            let (_, a) = count(|| {
                for _ in 0..100 {
                    f();
                }
            });
            a.count as f64 / 100.0
        };
        // Owned: one decode and drop, and the same in a loop.
        let ours = per(&mut || {
            drop(ours_owned(frame));
        });
        let ours_loop = per(&mut || drop(ours_owned(frame)));
        let sri = per(&mut || {
            let scratch = scratch.get_mut(0);
            scratch.copy_from_slice(frame);
            drop(sri_owned(scratch));
        });
        let ours_ref = per(&mut || {
            let (ext, msg_type, payload) = frame_parts(frame).expect("a frame");
            drop(MessageRef::decode(ext, msg_type, payload));
        });
        let ours_keep = per(&mut || {
            let (ext, msg_type, payload) = frame_parts(frame).expect("a frame");
            let m = MessageRef::decode(ext, msg_type, payload).expect("decodes");
            drop(m.to_owned_value());
        });
        let ours_enc = per(&mut || {
            let out = &mut outs[0];
            out.clear();
            encode_frame_into(&message, out).expect("encodes");
        });
        allocs.push(format!(
            "{name:<40} owned ours {ours:>4} (in a loop {ours_loop:>4}) sri {sri:>5} | ref ours {ours_ref:>4} | keep ours {ours_keep:>4} | encode ours {ours_enc:>4}"
        ));
    }
    if sv2c_benches::report::is_bench_run() {
        eprintln!("allocations per operation:");
        for line in &allocs {
            eprintln!("  {line}");
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700))
        .sample_size(20)
        .configure_from_args()
}

/// `criterion_group!` makes a public function; it lives here, out of the crate root.
mod harness {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = enum_path
    }
}

criterion_main!(harness::benches);
