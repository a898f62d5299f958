//! `sv2json`: Stratum V2 frames ⇄ JSON, for anyone debugging Sv2 traffic.
//!
//! ```text
//! sv2json decode [--binary] [FILE]   frames (hex, one per line; or a raw byte stream)
//!                                    → one JSON object per frame
//! sv2json encode [FILE]              JSON objects, one per line → frames as hex
//! sv2json check FILE                 verify a golden-vector file (both directions,
//!                                    owned and borrowed decoding)
//! ```
//!
//! Without FILE, input is read from stdin. Results go to stdout, errors to stderr, one line
//! each naming the input line (or frame). Exit status: 0 if everything succeeded, 1 if any
//! line failed, 2 for usage or I/O errors.
//!
//! Run it from the workspace root:
//! `cargo run --release --example sv2json -- check tests-data/sv2-vectors.jsonl`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::ExitCode;

/// Frames ⇄ JSON and the vector checker, as functions over readers and writers (also
/// used by `examples/tests/sv2json.rs`).
mod convert;

const USAGE: &str = "usage:
  sv2json decode [--binary] [FILE]   frames (hex lines, or a raw stream with --binary) -> JSON lines
  sv2json encode [FILE]              JSON lines -> frames as hex
  sv2json check FILE                 check a golden-vector file; ends with `N passed, M failed`";

fn open(path: Option<&str>) -> io::Result<Box<dyn Read>> {
    match path {
        None | Some("-") => Ok(Box::new(io::stdin().lock())),
        Some(p) => Ok(Box::new(File::open(p)?)),
    }
}

fn run(args: &[String]) -> Result<bool, String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stdout = io::stdout().lock();
    let stderr = io::stderr().lock();
    let io_err = |what: &str, e: io::Error| format!("{what}: {e}");
    match args.as_slice() {
        ["decode", rest @ ..] => {
            let binary = rest.contains(&"--binary");
            let files: Vec<&str> = rest.iter().copied().filter(|a| *a != "--binary").collect();
            if files.len() > 1 || files.iter().any(|f| f.starts_with("--")) {
                return Err(USAGE.into());
            }
            let input = open(files.first().copied()).map_err(|e| io_err("cannot open input", e))?;
            let summary = if binary {
                convert::decode_binary(input, stdout, stderr)
            } else {
                convert::decode_hex_lines(BufReader::new(input), stdout, stderr)
            }
            .map_err(|e| io_err("I/O error", e))?;
            Ok(summary.errors == 0)
        }
        ["encode", rest @ ..] if rest.len() <= 1 => {
            let input = open(rest.first().copied()).map_err(|e| io_err("cannot open input", e))?;
            let summary = convert::encode_lines(BufReader::new(input), stdout, stderr)
                .map_err(|e| io_err("I/O error", e))?;
            Ok(summary.errors == 0)
        }
        ["check", file] => {
            let input: Box<dyn BufRead> = Box::new(BufReader::new(
                open(Some(file)).map_err(|e| io_err(&format!("cannot open {file}"), e))?,
            ));
            let report = convert::check(input, stdout).map_err(|e| io_err("I/O error", e))?;
            Ok(report.success())
        }
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            Ok(true)
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let _ = writeln!(io::stderr(), "sv2json: {e}");
            ExitCode::from(2)
        }
    }
}
