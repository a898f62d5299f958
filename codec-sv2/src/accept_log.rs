//! What a Noise responder logs when a handshake fails: one `info` line per reason per
//! [`INTERVAL`], with the number of failures not logged since the last line, so that a
//! storm of bad connections costs a few lines, not one per connection.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::CodecError;
use crate::header::Header;

/// At most one line per reason in this interval.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

/// The largest `SetupConnection` payload: protocol, two versions, flags, five `STR0_255`
/// and a port.
const MAX_SETUP_CONNECTION: usize = 1 + 2 + 2 + 4 + 5 * 256 + 2;

/// Whether `bytes`, the start of what a peer sent where Noise act 1 belongs, read as a
/// plaintext `SetupConnection` frame: a client that does not speak Noise. A header of
/// extension 0 / msg_type 0 with a plausible length, then (as far as received) a protocol
/// id and version 2. Random act-1 bytes look like this about once in 2^60.
pub(crate) fn looks_like_plaintext_setup(bytes: &[u8]) -> bool {
    let Some(h) = Header::from_prefix(bytes) else {
        return false;
    };
    let body = &bytes[Header::SIZE..];
    h.wire_extension_type() == 0
        && h.msg_type() == 0
        && (16..=MAX_SETUP_CONNECTION).contains(&h.msg_length())
        && body.first().is_none_or(|&p| p <= 2)
        && body.get(1..3).is_none_or(|v| v == [2, 0])
}

/// Why a responder's handshake failed, one rate limit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Plaintext,
    Closed,
    Io,
    Noise,
}

impl Reason {
    fn of(e: &CodecError) -> Self {
        match e {
            CodecError::PlaintextPeer { .. } => Reason::Plaintext,
            CodecError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => Reason::Closed,
            CodecError::Io(_) => Reason::Io,
            _ => Reason::Noise,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Reason::Plaintext => {
                "the peer sent a plaintext SetupConnection: a client without Noise (or pointed at the wrong port)"
            }
            Reason::Closed => "the peer closed the connection before Noise act 1 was complete",
            Reason::Io => "reading act 1 or writing act 2 failed",
            Reason::Noise => "the handshake itself failed",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Reason::Plaintext => "plaintext",
            Reason::Closed => "closed",
            Reason::Io => "io",
            Reason::Noise => "noise",
        }
    }
}

/// One reason's limit: when the next line may be written, and how many were held back.
#[derive(Debug)]
pub(crate) struct RateLimit {
    /// Milliseconds (since [`now_ms`]'s start) before which no line is written.
    next_ms: AtomicU64,
    suppressed: AtomicU64,
}

impl RateLimit {
    pub(crate) const fn new() -> Self {
        RateLimit {
            next_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(failures held back since the last line)` if a line may be written at
    /// `now_ms`; one caller wins when several race.
    pub(crate) fn check(&self, now_ms: u64, interval: Duration) -> Option<u64> {
        let next = self.next_ms.load(Ordering::Relaxed);
        let until = now_ms.saturating_add(interval.as_millis() as u64);
        if now_ms >= next
            && self
                .next_ms
                .compare_exchange(next, until, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

/// Milliseconds since the first call.
fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

static LIMITS: [RateLimit; 4] = [
    RateLimit::new(),
    RateLimit::new(),
    RateLimit::new(),
    RateLimit::new(),
];

/// Logs a responder's failed handshake at `info`, within the rate limit of its reason.
pub(crate) fn handshake_failed(e: &CodecError) {
    let reason = Reason::of(e);
    let Some(suppressed) = LIMITS[reason as usize].check(now_ms(), INTERVAL) else {
        return;
    };
    tracing::info!(
        reason = reason.name(),
        suppressed,
        error = %e,
        "Noise handshake failed: {} (logged at most once per {} s per reason; `suppressed`: failures since the last line)",
        reason.describe(),
        INTERVAL.as_secs(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_counting_the_rest() {
        let limit = RateLimit::new();
        let ten = Duration::from_secs(10);
        assert_eq!(limit.check(0, ten), Some(0));
        assert_eq!(limit.check(1, ten), None);
        assert_eq!(limit.check(9_999, ten), None);
        assert_eq!(limit.check(10_000, ten), Some(2));
        assert_eq!(limit.check(10_001, ten), None);
    }

    #[test]
    fn a_plaintext_setup_connection_is_recognised_and_random_bytes_are_not() {
        // The spec's SetupConnection example (SV2-WIRE §3.1): header, then Mining, v2..2.
        let plain = [
            0x00, 0x00, 0x00, 0x26, 0x00, 0x00, 0x00, 0x02, 0x00, 0x02, 0x00,
        ];
        assert!(looks_like_plaintext_setup(&plain));
        assert!(looks_like_plaintext_setup(&plain[..6]));
        assert!(!looks_like_plaintext_setup(&plain[..5]));
        let mut other = plain;
        other[7] = 3; // min_version 3
        assert!(!looks_like_plaintext_setup(&other));
        assert!(!looks_like_plaintext_setup(&[0x5a; 64]));
    }
}
