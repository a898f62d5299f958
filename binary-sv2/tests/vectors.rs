//! Runs every golden vector (tests-data/sv2-vectors.jsonl, frames written by the reference
//! implementation) through both directions and both decode paths:
//!
//! * frame → header fields, owned decode and borrowed (`Ref`) decode, which must agree;
//! * owned message → JSON, which must equal the vector's `fields` (and `tlvs`);
//! * the vector's `fields` (and `tlvs`) → owned message → frame, which must equal the
//!   vector's bytes exactly.

#![cfg(feature = "serde")]

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use sv2c_binary::messages::{CATALOG, Message, MessageRef, encode_frame, frame_parts};
use sv2c_binary::tlv::{TlvBuf, WithTlvs};
use sv2c_binary::{Encode, Frameable, MessageSet};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data/sv2-vectors.jsonl")
}

/// JSON equality, except that two non-integer numbers are equal when they are the same
/// f32 (F32 fields).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => (x as f32).to_bits() == (y as f32).to_bits(),
                    _ => false,
                }
            } else {
                x == y
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("missing key {key:?}"))
}

fn check_vector(v: &Value) -> Result<(), String> {
    let frame_hex = field(v, "frame_hex")?
        .as_str()
        .ok_or("frame_hex is not a string")?;
    let frame = hex::decode(frame_hex).map_err(|e| format!("frame_hex: {e}"))?;
    let (ext, msg_type, payload) = frame_parts(&frame).map_err(|e| format!("frame: {e}"))?;

    // Header fields as the vector states them.
    let want_ext = field(v, "extension_type")?.as_u64();
    let want_type = field(v, "msg_type")?.as_u64();
    let want_ch = field(v, "channel_msg")?.as_bool();
    if want_ext != Some(u64::from(ext & 0x7fff))
        || want_type != Some(u64::from(msg_type))
        || want_ch != Some(ext & 0x8000 != 0)
    {
        return Err(format!(
            "header {ext:#06x}/{msg_type:#04x} disagrees with the vector"
        ));
    }

    // Decode: owned and borrowed.
    let owned = Message::decode_message(ext, msg_type, payload)
        .map_err(|e| format!("owned decode: {e}"))?;
    let (borrowed, tail) = MessageRef::decode_with_tail(ext, msg_type, payload)
        .map_err(|e| format!("borrowed decode: {e}"))?;
    let (owned2, tail_buf) = Message::decode_with_tail(ext, msg_type, payload)
        .map_err(|e| format!("owned decode with tail: {e}"))?;
    if owned2 != owned || tail_buf.as_bytes() != tail.as_bytes() {
        return Err("decode_with_tail disagrees with decode_message".into());
    }
    if borrowed.to_owned_value() != owned || owned.as_ref() != borrowed {
        return Err("owned and borrowed decodes differ".into());
    }
    let want_name = field(v, "name")?.as_str();
    let want_protocol = field(v, "protocol")?.as_str();
    for info in [owned.info(), borrowed.info()] {
        let ok = Some(info.name) == want_name
            && Some(info.protocol.name()) == want_protocol
            && Some(u64::from(info.extension_type)) == want_ext
            && Some(u64::from(info.msg_type)) == want_type
            && Some(info.channel_msg) == want_ch;
        if !ok {
            return Err(format!("catalog entry {info:?} disagrees with the vector"));
        }
    }
    if (owned.wire_extension_type(), owned.msg_type()) != (ext, msg_type)
        || (borrowed.wire_extension_type(), borrowed.msg_type()) != (ext, msg_type)
    {
        return Err("Frameable header fields differ from the frame".into());
    }
    let base_len = payload.len() - tail.len();
    if owned.encoded_len() != base_len || borrowed.encode_to_vec() != payload[..base_len] {
        return Err("borrowed re-encode differs from the payload".into());
    }

    // Decoded → JSON.
    let json = serde_json::to_value(&owned).map_err(|e| format!("serialize: {e}"))?;
    let want_fields = field(v, "fields")?;
    if !json_eq(&json, want_fields) {
        return Err(format!(
            "fields differ:\n  ours:   {json}\n  vector: {want_fields}"
        ));
    }
    let tlvs = tail.to_bufs().map_err(|e| format!("TLV tail: {e}"))?;
    match v.get("tlvs") {
        Some(want) => {
            let ours = serde_json::to_value(&tlvs).map_err(|e| format!("serialize TLVs: {e}"))?;
            if &ours != want {
                return Err(format!("tlvs differ: ours {ours}, vector {want}"));
            }
            let user = tail
                .user_identity()
                .map_err(|e| format!("user_identity: {e}"))?;
            let want_user = want
                .get(0)
                .and_then(|t| t.get("value"))
                .and_then(Value::as_str)
                .map(hex::decode);
            match (user, want_user) {
                (Some(u), Some(Ok(w))) if u.as_bytes() == w => {}
                _ => return Err("user_identity helper disagrees with the TLV".into()),
            }
        }
        None if !tail.is_empty() => return Err("unexpected bytes after the message".into()),
        None => {}
    }

    // JSON → encoded, byte for byte.
    let from_json = Message::deserialize_fields(ext, msg_type, want_fields)
        .map_err(|e| format!("deserialize: {e}"))?;
    let want_tlvs: Vec<TlvBuf> = match v.get("tlvs") {
        Some(t) => Vec::<TlvBuf>::deserialize(t).map_err(|e| format!("tlvs: {e}"))?,
        None => Vec::new(),
    };
    let mut out = WithTlvs::new(from_json);
    for t in want_tlvs {
        out.push(t);
    }
    let encoded = encode_frame(&out).map_err(|e| format!("encode: {e}"))?;
    if encoded != frame {
        return Err("re-encoded frame differs from frame_hex".into());
    }
    Ok(())
}

#[test]
fn every_vector_round_trips_both_ways_and_both_paths() {
    let text = std::fs::read_to_string(vectors_path()).expect("tests-data/sv2-vectors.jsonl");
    let mut passed = 0usize;
    let mut failures = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let result = serde_json::from_str::<Value>(line)
            .map_err(|e| format!("bad JSON: {e}"))
            .and_then(|v| {
                names.insert(format!(
                    "{}/{}",
                    v["protocol"].as_str().unwrap_or("?"),
                    v["name"].as_str().unwrap_or("?")
                ));
                check_vector(&v)
            });
        match result {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("line {}: {e}", i + 1)),
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    println!("{passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} vectors failed", failures.len());
    // Each vector decoded to its catalog entry (above); every entry has vectors.
    for m in CATALOG {
        let name = format!("{}/{}", m.protocol, m.name);
        assert!(
            names.contains(&name),
            "{name} is in CATALOG but has no vector in tests-data/sv2-vectors.jsonl"
        );
    }
}

/// The check above is not vacuous: a vector whose fields, bytes or header were altered is
/// reported.
#[test]
fn altered_vectors_are_reported() {
    let text = std::fs::read_to_string(vectors_path()).expect("tests-data/sv2-vectors.jsonl");
    let line = text
        .lines()
        .find(|l| l.contains("\"name\":\"NewExtendedMiningJob\""))
        .expect("a NewExtendedMiningJob vector");
    let good: Value = serde_json::from_str(line).unwrap();
    assert_eq!(check_vector(&good), Ok(()));

    let mut bad_field = good.clone();
    bad_field["fields"]["job_id"] = Value::from(good["fields"]["job_id"].as_u64().unwrap() ^ 1);
    assert!(
        check_vector(&bad_field)
            .unwrap_err()
            .contains("fields differ")
    );

    let mut bad_bytes = good.clone();
    let mut frame = hex::decode(good["frame_hex"].as_str().unwrap()).unwrap();
    frame[10] ^= 0x01; // inside job_id
    bad_bytes["frame_hex"] = Value::from(hex::encode(&frame));
    assert!(check_vector(&bad_bytes).is_err());

    let mut bad_header = good.clone();
    bad_header["channel_msg"] = Value::from(false);
    assert!(check_vector(&bad_header).unwrap_err().contains("header"));

    let mut bad_name = good;
    bad_name["name"] = Value::from("NewMiningJob");
    assert!(
        check_vector(&bad_name)
            .unwrap_err()
            .contains("catalog entry")
    );
}
