//! Every golden vector, cut short at many points, decodes to a typed `Truncated` error and
//! never panics: every cut of payloads up to 256 bytes, and for longer ones the first and
//! last 48 cuts, 64 evenly spread cuts, and the cuts around each field start met on the way
//! (the offset a failing decode reports is the start of the field it was reading).
//!
//! The two vectors with a TLV tail stay valid messages when the cut falls inside the tail;
//! then the message must decode and the cut tail must report its truncation.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use sv2c_binary::messages::{Message, MessageRef, frame_parts, split_frame};
use sv2c_binary::{DecodeErrorKind, DispatchError, MessageSet};

fn vectors() -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data/sv2-vectors.jsonl");
    let text = std::fs::read_to_string(path).expect("tests-data/sv2-vectors.jsonl");
    text.lines()
        .map(|line| {
            let key = "\"frame_hex\":\"";
            let start = line.find(key).expect("frame_hex") + key.len();
            let end = start + line[start..].find('"').expect("closing quote");
            hex::decode(&line[start..end]).expect("hex")
        })
        .collect()
}

fn assert_truncated(r: Result<impl Sized, DispatchError>, what: &str) -> usize {
    match r {
        Err(DispatchError::Decode(e)) => {
            assert!(
                matches!(e.kind(), DecodeErrorKind::Truncated { .. }),
                "{what}: expected Truncated, got {e}"
            );
            e.offset()
        }
        Err(e) => panic!("{what}: expected a decode error, got {e}"),
        Ok(_) => panic!("{what}: a truncated payload decoded"),
    }
}

/// Checks one cut; returns the offset of the field the decode stopped in, if it failed.
fn check_cut(ext: u16, msg_type: u8, payload: &[u8], base_len: usize, cut: usize) -> Option<usize> {
    let part = &payload[..cut];
    let what = format!(
        "msg {ext:#06x}/{msg_type:#04x} cut at {cut}/{}",
        payload.len()
    );
    if cut < base_len {
        let off = assert_truncated(Message::decode_message(ext, msg_type, part), &what);
        let off_ref = assert_truncated(MessageRef::decode(ext, msg_type, part), &what);
        assert_eq!(
            off, off_ref,
            "{what}: owned and borrowed disagree on the offset"
        );
        assert!(off <= cut, "{what}: offset {off} is past the cut");
        Some(off)
    } else {
        // The cut is inside the TLV tail: the message is complete.
        let (m, tail) = MessageRef::decode_with_tail(ext, msg_type, part)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(m, MessageRef::decode(ext, msg_type, payload).unwrap());
        let items: Vec<_> = tail.iter().collect();
        if cut == payload.len() || cut == base_len {
            assert!(
                items.iter().all(Result::is_ok),
                "{what}: complete tail must parse"
            );
        } else {
            let last = items.last().expect("a non-empty tail yields an item");
            let err = last.as_ref().expect_err("a cut TLV must be reported");
            assert!(
                matches!(err.kind(), DecodeErrorKind::Truncated { .. }),
                "{what}: {err}"
            );
        }
        None
    }
}

#[test]
fn every_vector_truncated_gives_a_typed_error() {
    let vectors = vectors();
    common::assert_frames_cover_the_catalog(vectors.iter().map(Vec::as_slice));
    let mut cuts_checked = 0usize;
    for frame in &vectors {
        let (ext, msg_type, payload) = frame_parts(frame).unwrap();
        let (_, tail) = MessageRef::decode_with_tail(ext, msg_type, payload).unwrap();
        let base_len = payload.len() - tail.len();
        let len = payload.len();

        let mut cuts: BTreeSet<usize> = if len <= 256 {
            (0..len).collect()
        } else {
            let ends = (0..48).chain(len - 48..len);
            let spread = (0..64).map(|i| i * len / 64);
            ends.chain(spread).collect()
        };
        // Also cut around every field start the decoder reports.
        let mut extra = BTreeSet::new();
        for &cut in &cuts {
            if let Some(off) = check_cut(ext, msg_type, payload, base_len, cut) {
                for c in [
                    off.saturating_sub(1),
                    off,
                    off + 1,
                    off + 2,
                    off + 3,
                    off + 4,
                ] {
                    if c < len && !cuts.contains(&c) {
                        extra.insert(c);
                    }
                }
            }
        }
        for &cut in &extra {
            check_cut(ext, msg_type, payload, base_len, cut);
        }
        cuts.extend(extra);
        cuts_checked += cuts.len();

        // The whole frame, cut short, is a truncated frame.
        for cut in [0, 1, 5, 6, frame.len() / 2, frame.len() - 1] {
            let e = frame_parts(&frame[..cut]).unwrap_err();
            assert!(matches!(e.kind(), DecodeErrorKind::Truncated { .. }));
            assert!(split_frame(&frame[..cut]).is_err());
        }
    }
    println!("{cuts_checked} cut points checked");
    assert!(cuts_checked > 15_000);
}
