//! Replays, on stable Rust, the inputs the `frame_stream` and `pool_ops` fuzz targets
//! saved (`tests-data/fuzz/<target>/`: crashes found while fuzzing, kept as regression
//! inputs) through the very checks the targets run (`tests/fuzz_checks`), and the seed
//! corpora built from the golden vectors, so CI covers the fuzz checks without the
//! fuzzer.

mod fuzz_checks;

use std::path::PathBuf;

use fuzz_checks::{frame_stream, message_decode, pool_ops, seeds};

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data")
}

/// The saved inputs of one fuzz target, by file name.
fn saved_inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = data_dir().join("fuzz").join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("directory entry").path())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.retain(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let inputs = saved_inputs(target);
    for (path, bytes) in &inputs {
        eprintln!("replaying {}", path.display());
        check(bytes);
    }
    assert!(!inputs.is_empty(), "no saved inputs for {target}");
    inputs.len()
}

#[test]
fn frame_stream_saved_inputs() {
    let n = replay("frame_stream", frame_stream::check_input);
    eprintln!("{n} saved frame_stream inputs");
}

#[test]
fn pool_ops_saved_inputs() {
    let n = replay("pool_ops", pool_ops::check_input);
    eprintln!("{n} saved pool_ops inputs");
}

#[test]
fn seed_corpora_pass_their_checks() {
    let vectors = seeds::vectors(&data_dir().join("sv2-vectors.jsonl"));
    assert_eq!(vectors.len(), 289);
    let seeds = seeds::seeds(&vectors);
    let mut per_target = std::collections::BTreeMap::<&str, usize>::new();
    for (target, name, input) in &seeds {
        let check: fn(&[u8]) = match *target {
            "frame_stream" => frame_stream::check_input,
            "pool_ops" => pool_ops::check_input,
            "message_decode" => message_decode::check_input,
            // Replayed by sv2c-binary's tests, which have the `arbitrary` feature.
            "roundtrip" => continue,
            other => panic!("seed {name} for unknown target {other}"),
        };
        check(input);
        *per_target.entry(target).or_default() += 1;
    }
    eprintln!("seeds checked: {per_target:?}");
    assert!(per_target.values().all(|&n| n > 0) && per_target.len() == 3);
}
