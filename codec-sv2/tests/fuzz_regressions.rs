//! Replays, on stable Rust, the inputs the `frame_stream` and `pool_ops` fuzz targets
//! saved (`tests-data/fuzz/<target>/`: crashes found while fuzzing, kept as regression
//! inputs) through the very checks the targets run (`tests/fuzz_checks`), and the seed
//! corpora built from the golden vectors, so CI covers the fuzz checks without the
//! fuzzer.

mod fuzz_checks;
// Only its catalog-coverage check is used here.
#[allow(dead_code)]
mod golden;

use fuzz_checks::{frame_stream, message_decode, pool_ops, replay, seeds};

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

#[test]
fn frame_stream_saved_inputs() {
    let n = replay::replay("frame_stream", frame_stream::check_input);
    eprintln!("{n} saved frame_stream inputs");
}

#[test]
fn pool_ops_saved_inputs() {
    let n = replay::replay("pool_ops", pool_ops::check_input);
    eprintln!("{n} saved pool_ops inputs");
}

#[test]
fn seed_corpora_pass_their_checks() {
    let vectors = seeds::vectors(&replay::data_dir().join("sv2-vectors.jsonl"));
    golden::assert_frames_cover_the_catalog(vectors.iter().map(|v| v.frame.as_slice()));
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
