//! Extensions Negotiation (extension 0x0001) as a server answers it, and the per-worker
//! accounting of Worker-Specific Hashrate Tracking (extension 0x0002).
//!
//! # Negotiation policy ([`negotiate`])
//! The client sends `RequestExtensions` right after `SetupConnection.Success`
//! (SV2-WIRE §3.5). The server answers:
//! * `RequestExtensions.Error` when the client did not request an extension the server
//!   requires (listed in `required_extensions`; the server should then close the
//!   connection), or when it supports none of a non-empty request (all of them listed in
//!   `unsupported_extensions`);
//! * otherwise `RequestExtensions.Success` listing the requested extensions the server
//!   supports, in the order requested, each once. Those are the extensions in use on the
//!   connection; requested ones that are missing from the list are not.
//!
//! # Worker accounting ([`WorkerLedger`])
//! Once 0x0002 is in use, every `SubmitSharesExtended` carries the miner's
//! `user_identity` TLV (SV2-WIRE §3.7). The ledger counts accepted shares and their work
//! (expected hashes, [`expected_hashes`](crate::pow::expected_hashes) of the target the
//! share met) per identity, with a bound on the number of identities it remembers.

use alloc::vec::Vec;

use hashbrown::HashMap;
use sv2c_binary::Seq064K;
use sv2c_binary::messages::{RequestExtensions, RequestExtensionsError, RequestExtensionsSuccess};

pub use sv2c_binary::messages::extensions::{
    EXTENSIONS_NEGOTIATION, WORKER_SPECIFIC_HASHRATE_TRACKING,
};

/// What a server answers to `RequestExtensions` ([`negotiate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Negotiated {
    /// The extensions in `supported_extensions` are in use on the connection.
    Success(RequestExtensionsSuccess),
    /// No extension is in use. `close` is true when the client left out an extension the
    /// server requires: the server should close the connection after sending the error.
    Error {
        /// The answer to send.
        error: RequestExtensionsError,
        /// Whether the server should close the connection.
        close: bool,
    },
}

impl Negotiated {
    /// The extensions in use after this answer (empty after an error).
    pub fn in_use(&self) -> Vec<u16> {
        match self {
            Negotiated::Success(s) => s.supported_extensions.to_vec(),
            Negotiated::Error { .. } => Vec::new(),
        }
    }
}

/// A list of extension ids as a `SEQ0_64K[U16]`. The lists built here are at most as long
/// as a received sequence or the server's own list, so they always fit; a longer server
/// list is cut at 65,535 entries.
fn seq(ids: Vec<u16>) -> Seq064K<u16> {
    let n = ids.len().min(usize::from(u16::MAX));
    Seq064K::from_slice(&ids[..n]).unwrap_or_default()
}

/// The server's answer to `request`, given the extensions it `supported` and those it
/// `required` (see the [module docs](self) for the policy).
///
/// ```
/// use sv2c_binary::Seq064K;
/// use sv2c_binary::messages::RequestExtensions;
/// use sv2c_channels::extensions::{negotiate, Negotiated};
///
/// let request = RequestExtensions {
///     request_id: 7,
///     requested_extensions: Seq064K::from_slice(&[0x0002, 0x0009]).unwrap(),
/// };
/// let answer = negotiate(&request, &[0x0002], &[]);
/// assert_eq!(answer.in_use(), [0x0002]);
/// let Negotiated::Success(success) = answer else { unreachable!() };
/// assert_eq!(success.request_id, 7);
/// ```
pub fn negotiate(request: &RequestExtensions, supported: &[u16], required: &[u16]) -> Negotiated {
    let requested = request.requested_extensions.to_vec();
    let mut granted: Vec<u16> = Vec::new();
    let mut unsupported: Vec<u16> = Vec::new();
    for &id in &requested {
        let list = if supported.contains(&id) {
            &mut granted
        } else {
            &mut unsupported
        };
        if !list.contains(&id) {
            list.push(id);
        }
    }
    let missing: Vec<u16> = required
        .iter()
        .copied()
        .filter(|id| !requested.contains(id))
        .collect();
    if !missing.is_empty() || (granted.is_empty() && !requested.is_empty()) {
        let close = !missing.is_empty();
        return Negotiated::Error {
            error: RequestExtensionsError {
                request_id: request.request_id,
                unsupported_extensions: seq(unsupported),
                required_extensions: seq(missing),
            },
            close,
        };
    }
    Negotiated::Success(RequestExtensionsSuccess {
        request_id: request.request_id,
        supported_extensions: seq(granted),
    })
}

/// One worker's accepted shares ([`WorkerLedger`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Shares accepted.
    pub shares_accepted: u64,
    /// Work of those shares: the sum of their expected hashes.
    pub work: f64,
}

/// Accepted shares and work per `user_identity`, for at most `max_workers` identities.
///
/// When the bound is reached, shares of identities not seen before are added to
/// [`overflow`](Self::overflow) instead: the memory a peer can make the ledger use is
/// bounded, and no share goes uncounted. A share's identity is found by hashing it
/// (one probe of the table, whatever the number of identities).
#[derive(Debug, Clone, Default)]
pub struct WorkerLedger {
    workers: HashMap<Vec<u8>, WorkerStats>,
    overflow: WorkerStats,
    max_workers: usize,
}

impl WorkerLedger {
    /// An empty ledger remembering at most `max_workers` identities.
    pub fn new(max_workers: usize) -> Self {
        WorkerLedger {
            workers: HashMap::new(),
            overflow: WorkerStats::default(),
            max_workers,
        }
    }

    /// Counts an accepted share of `user_identity` worth `work` expected hashes.
    pub fn record(&mut self, user_identity: &[u8], work: f64) {
        self.record_many(user_identity, 1, work);
    }

    /// Counts `shares` accepted shares of `user_identity` worth `work` expected hashes in
    /// all: what a server tallied locally, added under one lock.
    pub fn record_many(&mut self, user_identity: &[u8], shares: u64, work: f64) {
        let add = |stats: &mut WorkerStats, work: f64| {
            stats.shares_accepted += shares;
            stats.work += work;
        };
        // A known identity (nearly every share) is found without copying it.
        if let Some(stats) = self.workers.get_mut(user_identity) {
            return add(stats, work);
        }
        if self.workers.len() < self.max_workers {
            add(
                self.workers.entry(user_identity.to_vec()).or_default(),
                work,
            );
        } else {
            add(&mut self.overflow, work);
        }
    }

    /// The identities and their counts, ordered by identity bytes (sorted for the call).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &WorkerStats)> {
        let mut all: Vec<(&[u8], &WorkerStats)> = self
            .workers
            .iter()
            .map(|(k, v)| (k.as_slice(), v))
            .collect();
        all.sort_unstable_by_key(|&(k, _)| k);
        all.into_iter()
    }

    /// The counts of one identity.
    pub fn get(&self, user_identity: &[u8]) -> Option<&WorkerStats> {
        self.workers.get(user_identity)
    }

    /// Shares of identities beyond the bound.
    pub fn overflow(&self) -> &WorkerStats {
        &self.overflow
    }

    /// Identities remembered.
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    /// Whether no identity is remembered.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ids: &[u16]) -> RequestExtensions {
        RequestExtensions {
            request_id: 3,
            requested_extensions: Seq064K::from_slice(ids).unwrap(),
        }
    }

    #[test]
    fn success_lists_the_supported_subset_once_in_request_order() {
        let answer = negotiate(&request(&[9, 2, 2, 1]), &[1, 2], &[]);
        assert_eq!(answer.in_use(), [2, 1]);
        assert!(matches!(answer, Negotiated::Success(s) if s.request_id == 3));
    }

    #[test]
    fn nothing_supported_is_an_error_without_close() {
        let answer = negotiate(&request(&[2]), &[], &[]);
        let Negotiated::Error { error, close } = answer else {
            panic!("{answer:?}")
        };
        assert_eq!(error.unsupported_extensions.to_vec(), [2]);
        assert!(error.required_extensions.is_empty());
        assert!(!close);
    }

    #[test]
    fn a_missing_required_extension_is_an_error_with_close() {
        let answer = negotiate(&request(&[5]), &[2, 5], &[2]);
        let Negotiated::Error { error, close } = answer else {
            panic!("{answer:?}")
        };
        assert_eq!(error.required_extensions.to_vec(), [2]);
        assert!(error.unsupported_extensions.is_empty());
        assert!(close);
    }

    #[test]
    fn an_empty_request_succeeds_with_nothing_in_use() {
        let answer = negotiate(&request(&[]), &[2], &[]);
        assert!(matches!(answer, Negotiated::Success(_)));
        assert!(answer.in_use().is_empty());
    }

    #[test]
    fn ledger_is_bounded_and_counts_everything() {
        let mut ledger = WorkerLedger::new(2);
        ledger.record(b"a", 1.0);
        ledger.record(b"b", 2.0);
        ledger.record(b"a", 1.0);
        ledger.record(b"c", 4.0);
        ledger.record(b"d", 8.0);
        ledger.record_many(b"a", 3, 6.0);
        ledger.record_many(b"e", 5, 16.0);
        assert_eq!(ledger.len(), 2);
        let a = ledger.get(b"a").unwrap();
        assert_eq!((a.shares_accepted, a.work), (5, 8.0));
        assert_eq!(ledger.overflow().shares_accepted, 7);
        assert_eq!(ledger.overflow().work, 28.0);
        assert!(ledger.get(b"c").is_none());
    }

    #[test]
    fn ledger_lists_identities_in_byte_order() {
        let mut ledger = WorkerLedger::new(100);
        let ids: Vec<Vec<u8>> = (0..50u8).rev().map(|i| vec![b'w', i % 7, i]).collect();
        for (n, id) in ids.iter().enumerate() {
            ledger.record_many(id, n as u64 + 1, 1.0);
        }
        let listed: Vec<&[u8]> = ledger.iter().map(|(id, _)| id).collect();
        let mut expected: Vec<&[u8]> = ids.iter().map(Vec::as_slice).collect();
        expected.sort();
        assert_eq!(listed, expected);
        // Each with its own count.
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(ledger.get(id).unwrap().shares_accepted, n as u64 + 1);
        }
    }
}
