//! The `channels_ops` fuzz driver (`tests/fuzz_checks/channels_ops.rs`, also the cargo-fuzz
//! target `fuzz/fuzz_targets/channels_ops.rs`) on fixed-seed pseudo-random inputs: a
//! stable smoke test of job, custom-job and share handling that reaches every outcome,
//! acceptance included, and prints the count of each. It also replays every input the
//! fuzzer saved under `tests-data/fuzz/channels_ops/`.

#[path = "fuzz_checks/channels_ops.rs"]
mod channels_ops;

use channels_ops::{Counts, check_input};

/// Inputs of up to 4 KiB from a xorshift generator.
fn inputs(n: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n).map(move |_| {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let len = (next() % 4096) as usize;
        (0..len).map(|_| next() as u8).collect()
    })
}

#[test]
fn random_operations_reach_every_outcome() {
    let mut total = Counts::default();
    for input in inputs(3_000) {
        total.add(&check_input(&input));
    }
    eprintln!("shares submitted: {}", total.shares);
    eprintln!("  accepted (valid): {}", total.valid);
    eprintln!("  accepted (block): {}", total.blocks);
    eprintln!("  accepted for a custom job: {}", total.custom_job_shares);
    for (code, n) in &total.refused {
        eprintln!("  refused {code}: {n}");
    }
    eprintln!(
        "templates: {} gave a job, {} refused",
        total.templates.0, total.templates.1
    );
    eprintln!("custom jobs accepted: {}", total.custom_ok);
    for (code, n) in &total.custom_refused {
        eprintln!("  custom job refused {code}: {n}");
    }
    // Acceptance is reached, as blocks and as plain shares, for custom jobs too.
    assert!(total.valid > 0 && total.blocks > 0 && total.custom_job_shares > 0);
    assert!(total.custom_ok > 0);
    // So is every refusal a share can get.
    for code in [
        "invalid-job-id",
        "stale-share",
        "bad-extranonce-size",
        "invalid-non-rollable-version-bit",
        "difficulty-too-low",
        "duplicate-share",
        "invalid-share",
    ] {
        assert!(total.refused.get(code).is_some_and(|&n| n > 0), "{code}");
    }
}

/// Every saved input replays through the check. The folder holds the fuzzer's finds and a
/// sample of its corpus (`tests-data/fuzz/README.md`); a missing or empty folder fails, so
/// the test cannot pass without replaying anything, and the inputs together must reach
/// accepted shares.
#[test]
fn saved_fuzz_inputs_replay() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-data/fuzz/channels_ops");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("saved channels_ops inputs, {}: {e}", dir.display()));
    let (mut n, mut total) = (0, Counts::default());
    for entry in entries {
        let path = entry.unwrap().path();
        total.add(&check_input(&std::fs::read(&path).unwrap()));
        n += 1;
    }
    eprintln!(
        "{n} saved inputs: {} shares, {} accepted, {} refused; {} custom jobs accepted",
        total.shares,
        total.valid + total.blocks,
        total.refused_total(),
        total.custom_ok
    );
    assert!(n > 0, "no saved input in {}", dir.display());
    assert!(
        total.valid + total.blocks > 0,
        "no saved input has a share accepted"
    );
}
