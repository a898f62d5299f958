//! Replays, on stable Rust, the `differential` fuzz target's check (our decoder against
//! the reference implementation's, `tests/fuzz_checks/differential.rs`) over the inputs it
//! saved (`tests-data/fuzz/differential/`), every golden vector, and a deterministic stream
//! of mutated vectors, so a disagreement the fuzzer once found stays fixed and CI covers
//! the check without the fuzzer.

#[path = "fuzz_checks/differential.rs"]
mod differential;

use std::path::Path;

fn vectors() -> Vec<(u16, u8, Vec<u8>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-data/sv2-vectors.jsonl");
    let text = std::fs::read_to_string(path).expect("vectors");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            let frame = hex::decode(v["frame_hex"].as_str().expect("frame_hex")).expect("hex");
            (
                u16::from_le_bytes([frame[0], frame[1]]),
                frame[2],
                frame[6..].to_vec(),
            )
        })
        .collect()
}

/// Every saved input agrees. The folder holds the fuzzer's finds and a sample of its
/// corpus (`tests-data/fuzz/README.md`); a missing or empty folder fails, so the test
/// cannot pass without replaying anything, and the inputs must include frames both
/// decoders accept as well as frames both reject.
#[test]
fn saved_inputs_agree() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-data/fuzz/differential");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("saved differential inputs, {}: {e}", dir.display()));
    let (mut n, mut accepted) = (0, 0);
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let input = std::fs::read(&path).expect("saved input");
        differential::check_input(&input);
        if let Some((&[e0, e1, msg_type], payload)) = input.split_first_chunk::<3>() {
            let ext = u16::from_le_bytes([e0, e1]);
            accepted +=
                usize::from(differential::reference_reencode(ext, msg_type, payload).is_some());
        }
        n += 1;
    }
    eprintln!("{n} saved differential inputs, {accepted} accepted by both decoders");
    assert!(n > 0, "no saved input in {}", dir.display());
    assert!(
        accepted > 0 && accepted < n,
        "{accepted} of {n} accepted: want both outcomes"
    );
}

#[test]
fn golden_vectors_agree() {
    let v = vectors();
    assert!(v.len() >= 44, "{} vectors", v.len());
    for (ext, msg_type, payload) in &v {
        differential::check(*ext, *msg_type, payload);
    }
}

#[test]
fn mutated_vectors_agree() {
    // A fixed pseudo-random stream (xorshift): each vector with bytes changed, cut or
    // appended, and its header bits changed.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cases = 0;
    for (ext, msg_type, payload) in vectors() {
        for _ in 0..300 {
            let mut p = payload.clone();
            let (mut e, mut t) = (ext, msg_type);
            for _ in 0..(next() % 4) {
                match next() % 6 {
                    0 | 1 if !p.is_empty() => {
                        let i = (next() as usize) % p.len();
                        p[i] = next() as u8;
                    }
                    2 if !p.is_empty() => p.truncate((next() as usize) % p.len()),
                    3 => p.push(next() as u8),
                    4 => e ^= 0x8000,
                    _ => t = t.wrapping_add((next() % 3) as u8),
                }
            }
            differential::check(e, t, &p);
            cases += 1;
        }
    }
    eprintln!("{cases} mutated frames agree");
}
