//! A live progress line on stderr (the demo's), and numbers as the programs print them.
//!
//! When stderr is a terminal, the progress line is redrawn in place (`\r`); otherwise
//! every progress line is a line of its own, so that CI output stays readable. Log lines
//! go through `tracing` ([`logging`](crate::logging)). Numbers are grouped by thousands
//! as in the demo's report ([`grouped`], the test kit's).

use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

pub use sv2c_roles::demo::grouped;

/// Set while a progress line without a newline is on the terminal.
static PROGRESS_SHOWN: AtomicBool = AtomicBool::new(false);

/// Whether stderr is a terminal (checked once).
pub fn stderr_is_terminal() -> bool {
    static TTY: OnceLock<bool> = OnceLock::new();
    *TTY.get_or_init(|| io::stderr().is_terminal())
}

/// Shows `line` as the live progress line: redrawn in place on a terminal, a line of its
/// own otherwise.
pub fn progress(line: &str) {
    if stderr_is_terminal() {
        eprint!("\r\x1b[2K{line}");
        let _ = io::stderr().flush();
        PROGRESS_SHOWN.store(true, Ordering::Relaxed);
    } else {
        eprintln!("{line}");
    }
}

/// Ends the progress line (moves to a new line if one is being shown).
pub fn end_progress() {
    if PROGRESS_SHOWN.swap(false, Ordering::Relaxed) {
        eprintln!();
    }
}
