//! A live progress line on stderr (the demo's), and number formatting.
//!
//! When stderr is a terminal, the progress line is redrawn in place (`\r`); otherwise
//! every progress line is a line of its own, so that CI output stays readable. Log lines
//! go through `tracing` ([`logging`](crate::logging)).

use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// `1234567` as `1 234 567` (thin grouping that reads the same in every locale).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1 000");
        assert_eq!(grouped(1_234_567), "1 234 567");
        assert_eq!(grouped(u64::MAX), "18 446 744 073 709 551 615");
    }
}
