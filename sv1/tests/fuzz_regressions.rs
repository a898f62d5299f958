//! The `sv1_decode` fuzz target's check (`tests/fuzz_checks/sv1_decode.rs`) on stable
//! Rust: over the firmware corpus as one stream, and over mutations of it from a fixed
//! seed, so that `cargo test` covers the check without the fuzzer.

#[path = "fuzz_checks/sv1_decode.rs"]
mod sv1_decode;

const CORPUS: &[u8] = include_bytes!("data/firmware-lines.txt");

/// xorshift64: the mutations are the same on every run.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn the_corpus_as_a_stream() {
    for (max, chunk) in [(255, 255), (0, 0), (3, 17), (40, 1)] {
        let mut input = vec![max, chunk];
        input.extend_from_slice(CORPUS);
        sv1_decode::check_input(&input);
    }
}

#[test]
fn mutated_corpus_lines() {
    let lines: Vec<&[u8]> = CORPUS
        .split(|&b| b == b'\n')
        .filter(|l| l.first() == Some(&b'{'))
        .collect();
    let mut state = 0x5eed_u64;
    for _ in 0..3000 {
        let mut line = lines[next(&mut state) as usize % lines.len()].to_vec();
        for _ in 0..1 + next(&mut state) % 4 {
            let at = next(&mut state) as usize % line.len();
            let bytes = b"{}[]\",:0aZ\\\n\r 9.-e";
            let byte = bytes[next(&mut state) as usize % bytes.len()];
            match next(&mut state) % 3 {
                0 => line[at] = byte,
                1 => line.insert(at, byte),
                _ => {
                    line.remove(at);
                }
            }
            if line.is_empty() {
                line.push(b'{');
            }
        }
        let mut input = vec![next(&mut state) as u8, next(&mut state) as u8];
        input.extend_from_slice(&line);
        sv1_decode::check_input(&input);
    }
}

/// Inputs the fuzzer found, each once a failure of the check.
#[test]
fn saved_inputs() {
    // A line of blanks longer than the limit (16), then a short line: read whole, the
    // blank line was skipped; read 10 bytes at a time, it was reported as too long
    // before its newline came.
    let blank_too_long: &[u8] = b"\x00\x09\t\t       \t\t\t                 \n\n      -";
    sv1_decode::check_input(blank_too_long);
}
