//! Replays, on stable Rust, the inputs the `message_decode` and `roundtrip` fuzz targets
//! saved (`tests-data/fuzz/<target>/`: crashes found while fuzzing, kept as regression
//! inputs) through the very checks the targets run (`tests/fuzz_checks`), plus every
//! golden vector and a deterministic stream of pseudo-random inputs, so CI covers the
//! fuzz checks without the fuzzer.

mod common;
mod fuzz_checks;

use std::collections::BTreeSet;
use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use fuzz_checks::{message_decode, replay, roundtrip};
use sv2c_binary::messages::{CATALOG, Message, frame_parts};
use sv2c_binary::{Frameable, MessageSet};

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

#[test]
fn message_decode_saved_inputs() {
    let n = replay::replay("message_decode", message_decode::check_input);
    eprintln!("{n} saved message_decode inputs");
}

#[test]
fn roundtrip_saved_inputs() {
    let n = replay::replay("roundtrip", roundtrip::check_input);
    eprintln!("{n} saved roundtrip inputs");
}

fn frames(path: &Path) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(path).expect("vectors");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            hex::decode(v["frame_hex"].as_str().expect("frame_hex")).expect("hex")
        })
        .collect()
}

#[test]
fn every_vector_passes_the_message_decode_and_roundtrip_checks() {
    let frames = frames(&replay::data_dir().join("sv2-vectors.jsonl"));
    common::assert_frames_cover_the_catalog(frames.iter().map(Vec::as_slice));
    for frame in &frames {
        let (ext, msg_type, payload) = frame_parts(frame).expect("a whole frame");
        message_decode::check_input(&message_decode::input(ext, msg_type, payload));
        let msg = Message::decode_message(ext, msg_type, payload).expect("a valid vector");
        roundtrip::check(&msg);
    }
}

/// xorshift64*: deterministic pseudo-random inputs.
fn pseudo_random_inputs(count: usize, max_len: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut state = 0x0dd_b1a5_e5ba_d5e7_u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    (0..count).map(move |_| {
        let len = (next() % max_len as u64) as usize;
        (0..len).map(|_| next() as u8).collect()
    })
}

#[test]
fn arbitrary_messages_of_every_type_round_trip() {
    let mut built = BTreeSet::new();
    for input in pseudo_random_inputs(3000, 600) {
        if let Ok(msg) = Message::arbitrary_take_rest(Unstructured::new(&input)) {
            built.insert((msg.extension_type(), msg.msg_type()));
        }
        roundtrip::check_input(&input);
    }
    assert_eq!(
        built.len(),
        CATALOG.len(),
        "message types built: {built:x?}"
    );
}

#[test]
fn pseudo_random_payloads_pass_the_message_decode_check() {
    for (i, mut input) in pseudo_random_inputs(3000, 300).enumerate() {
        // Half of them under a catalog message's header, to get past dispatch.
        if i % 2 == 0 && input.len() >= 3 {
            let info = CATALOG[i / 2 % CATALOG.len()];
            input[..2].copy_from_slice(&info.wire_extension_type().to_le_bytes());
            input[2] = info.msg_type;
        }
        message_decode::check_input(&input);
    }
}
