//! Writes the seed corpora of the fuzz targets from the golden vectors:
//! `cargo run --example seed_corpus` (in `fuzz/`) fills `corpus/<target>/`, and adds the
//! saved regression inputs of `tests-data/fuzz/<target>/`.

use std::path::Path;

#[path = "../../codec-sv2/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vectors = fuzz_checks::seeds::vectors(&root.join("../tests-data/sv2-vectors.jsonl"));
    let seeds = fuzz_checks::seeds::seeds(&vectors);
    for (target, name, input) in &seeds {
        let dir = root.join("corpus").join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("seed-{name}")), input)?;
        if *target == "message_decode" {
            // The differential target reads the same input format.
            let dir = root.join("corpus").join("differential");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(format!("seed-{name}")), input)?;
        }
    }
    // The saved regression inputs seed their targets too.
    let mut saved = 0usize;
    for target in [
        "frame_stream",
        "message_decode",
        "roundtrip",
        "pool_ops",
        "differential",
    ] {
        let dir = root.join("corpus").join(target);
        std::fs::create_dir_all(&dir)?;
        let Ok(entries) = std::fs::read_dir(root.join("../tests-data/fuzz").join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                std::fs::copy(&path, dir.join(format!("saved-{name}")))?;
                saved += 1;
            }
        }
    }
    println!(
        "{} seeds from {} vectors, {saved} saved inputs",
        seeds.len(),
        vectors.len()
    );
    Ok(())
}
