//! Seed inputs for the fuzz targets, built from the golden vectors
//! (`tests-data/sv2-vectors.jsonl`). `fuzz/examples/seed_corpus.rs` writes them to
//! `fuzz/corpus/<target>/`; `tests/fuzz_regressions.rs` runs every one through its check.

use std::path::Path;

use super::frame_stream;
use super::message_decode;
use super::pool_ops::{self, Op};

/// Frames above this size are left out of the seeds (they would slow every execution).
pub const MAX_SEED_FRAME: usize = 4096;

/// One golden vector.
#[derive(Debug, Clone)]
pub struct Vector {
    /// Message name.
    pub name: String,
    /// Vector case (`random-0`, `max`, ...).
    pub case: String,
    /// The whole frame.
    pub frame: Vec<u8>,
}

fn string_field(line: &str, key: &str) -> String {
    let key = format!("\"{key}\":\"");
    let start = line.find(&key).expect("key present") + key.len();
    let end = start + line[start..].find('"').expect("closing quote");
    line[start..end].to_owned()
}

fn unhex(s: &str) -> Vec<u8> {
    s.as_bytes()
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).expect("ascii"), 16).expect("hex"))
        .collect()
}

/// Reads every vector of the JSON-lines file at `path`.
pub fn vectors(path: &Path) -> Vec<Vector> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| Vector {
            name: string_field(line, "name"),
            case: string_field(line, "case"),
            frame: unhex(&string_field(line, "frame_hex")),
        })
        .collect()
}

/// `(target, file name, input)` for every seed.
pub fn seeds(vectors: &[Vector]) -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    let small: Vec<&Vector> = vectors
        .iter()
        .filter(|v| v.frame.len() <= MAX_SEED_FRAME)
        .collect();
    for v in &small {
        let (header, payload) = v.frame.split_at(6);
        let id = format!("{}-{:02x}-{}", v.name, header[2], v.case);
        let ext = u16::from_le_bytes([header[0], header[1]]);
        out.push((
            "message_decode",
            id.clone(),
            message_decode::input(ext, header[2], payload),
        ));
        out.push(("roundtrip", id.clone(), payload.to_vec()));
        // The frame alone, whole, with the protocol maximum and 256-byte slots.
        out.push((
            "frame_stream",
            id,
            frame_stream::input(0, 2, &[255], &v.frame),
        ));
    }
    // The small frames back to back, packed into streams of at most MAX_SEED_FRAME
    // bytes, under every cap and slot size, in several chunkings.
    let mut streams: Vec<Vec<u8>> = vec![Vec::new()];
    for v in &small {
        if streams
            .last()
            .is_some_and(|s| s.len() + v.frame.len() > MAX_SEED_FRAME)
        {
            streams.push(Vec::new());
        }
        if let Some(s) = streams.last_mut() {
            s.extend_from_slice(&v.frame);
        }
    }
    let chunkings: [&[u8]; 4] = [
        &[255],
        &[1],
        &[5, 0, 17, 200],
        &[6, 3, 250, 2, 64, 1, 0, 90],
    ];
    let mut k = 0usize;
    for cap_sel in 0..frame_stream::CAPS.len() as u8 {
        for (c, sizes) in chunkings.iter().enumerate() {
            let slot_sel = (cap_sel + c as u8) % 12;
            let stream = &streams[k % streams.len()];
            out.push((
                "frame_stream",
                format!(
                    "stream{}-cap{cap_sel}-slot{slot_sel}-chunks{c}",
                    k % streams.len()
                ),
                frame_stream::input(cap_sel, slot_sel, sizes, stream),
            ));
            k += 1;
        }
    }
    // Pool operations: a busy single-thread cycle, a cross-thread hand-over, and the pool
    // handle dropped while buffers live.
    let cycle: Vec<(u8, Op, u8)> = (0..64u8)
        .flat_map(|i| {
            [
                (i % 2, Op::Acquire, i.wrapping_mul(37)),
                (i % 2, Op::Freeze, i),
                (i % 2, Op::Clone, i),
                (i % 2, Op::Send, i),
                (1 - i % 2, Op::IntoBytes, i),
                (1 - i % 2, Op::Drop, i.wrapping_mul(3)),
                (i % 2, Op::AcquireZeroed, 255 - i),
                (i % 2, Op::Write, i),
                (1 - i % 2, Op::ClonePool, i),
                (1 - i % 2, Op::DropPool, i),
            ]
        })
        .collect();
    for (capacity_sel, shape_sel) in [(4, 0), (1, 1), (0, 2), (8, 3), (3, 0x82)] {
        out.push((
            "pool_ops",
            format!("cycle-cap{capacity_sel}-shape{shape_sel}"),
            pool_ops::input(capacity_sel, shape_sel, &cycle),
        ));
    }
    out
}
