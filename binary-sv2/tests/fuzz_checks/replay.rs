//! Replay of the inputs a fuzz target saved (`tests-data/fuzz/<target>/`) through its
//! check, for the stable regression tests of both crates.

use std::path::PathBuf;

/// The repository's `tests-data` directory. Every crate that includes this file (the
/// library crates' tests, the fuzz workspace) sits one level below the repository root.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data")
}

/// The saved inputs of one fuzz target, sorted by file name (`*.md` notes skipped).
pub fn saved_inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
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

/// Runs `check` on every saved input of `target` and returns how many there were;
/// panics if there are none (a missing directory must not pass silently).
pub fn replay(target: &str, check: fn(&[u8])) -> usize {
    let inputs = saved_inputs(target);
    for (path, bytes) in &inputs {
        eprintln!("replaying {}", path.display());
        check(bytes);
    }
    assert!(!inputs.is_empty(), "no saved inputs for {target}");
    inputs.len()
}
