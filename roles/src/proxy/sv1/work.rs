//! One SV1 miner's part of the aggregated upstream channel: its extranonce, the jobs it
//! is sent as `mining.notify`, the check of its shares, and their answers in order.
//!
//! ```text
//!  upstream channel:  P (pool's prefix) ‖ [ n bytes the proxy gives out ]
//!  a miner channel:   P ‖ S (sub-prefix) ‖ [ m = n − 4 bytes ]
//!  SV1:               extranonce1 = P ‖ S ‖ zeros(m − e),  extranonce2_size = e = min(m, cap)
//!  coinbase           = coinb1 ‖ extranonce1 ‖ extranonce2 ‖ coinb2
//!                     = coinbase_tx_prefix ‖ P ‖ S ‖ (zeros ‖ extranonce2) ‖ coinbase_tx_suffix
//! ```
//!
//! The share's Stratum V2 extranonce (the miner channel's `m` bytes) is the zeros and the
//! miner's `extranonce2`, so the share is checked with [`ClientChannel::check`] exactly as
//! an extended miner channel's is, and forwarded as `SubmitSharesExtended`.

use std::collections::VecDeque;

use sv2c_binary::messages::{
    NewExtendedMiningJob, OpenExtendedMiningChannelSuccess, SetNewPrevHash, SetTarget,
    SubmitSharesExtended,
};
use sv2c_binary::{B032, U256};
use sv2c_channels::client::{ClientChannel, LocalReject};
use sv2c_channels::codes;
use sv2c_channels::pow::meets_target;
use sv2c_channels::server::{RecentShares, Share};
use sv2c_sv1::{Extranonce, Id, Notify, Response, RpcError, Sv1Message};

/// Job versions kept, to rebuild a rolled share's version (as many as a
/// [`ClientChannel`] keeps jobs).
const VERSIONS_KEPT: usize = sv2c_channels::client::MAX_JOBS;

/// Future jobs kept while their `SetNewPrevHash` has not come.
const FUTURE_JOBS: usize = 4;

/// Shares of one miner whose answers are not written yet; while this many wait, the
/// proxy reads no more of the miner's lines.
pub(crate) const MAX_PENDING: usize = 64;

/// Accepted share hashes remembered on the current chain tip, per miner, to refuse a
/// share sent twice.
const DEDUP_BUDGET: usize = 1024;

/// SV1 error codes (the numbers cgminer-derived pools send).
pub(crate) mod errors {
    /// Anything else.
    pub(crate) const OTHER: i64 = 20;
    /// Unknown or stale job.
    pub(crate) const JOB_NOT_FOUND: i64 = 21;
    /// A share sent twice.
    pub(crate) const DUPLICATE: i64 = 22;
    /// Above the miner's target.
    pub(crate) const LOW_DIFFICULTY: i64 = 23;
    /// `mining.submit` for a worker that was not authorized.
    pub(crate) const UNAUTHORIZED: i64 = 24;
    /// `mining.submit` before `mining.subscribe`.
    pub(crate) const NOT_SUBSCRIBED: i64 = 25;
}

/// The SV1 error for a Stratum V2 share error code (the code is its message).
pub(crate) fn sv1_error(code: &str) -> RpcError {
    let number = match code {
        codes::STALE_SHARE | codes::INVALID_JOB_ID => errors::JOB_NOT_FOUND,
        codes::DUPLICATE_SHARE => errors::DUPLICATE,
        codes::DIFFICULTY_TOO_LOW => errors::LOW_DIFFICULTY,
        _ => errors::OTHER,
    };
    RpcError::new(number, code)
}

/// `prev_hash` as SV1 sends it: the header's bytes with each 4-byte word reversed.
pub(crate) fn sv1_prevhash(prev_hash: &[u8; 32]) -> [u8; 32] {
    let mut out = *prev_hash;
    for word in out.chunks_exact_mut(4) {
        word.reverse();
    }
    out
}

/// A share as a miner submitted it, its fields decoded.
#[derive(Debug, Clone)]
pub(crate) struct Submitted {
    pub(crate) job_id: String,
    pub(crate) extranonce2: Extranonce,
    pub(crate) ntime: u32,
    pub(crate) nonce: u32,
    pub(crate) version_bits: Option<u32>,
}

/// What the check of a share decided.
#[derive(Debug)]
pub(crate) enum Checked {
    /// Meets the upstream target: forward it (answered when the router answers).
    Forward(SubmitSharesExtended),
    /// Meets only the miner's own target: answered `true` here, not forwarded.
    Local,
}

/// A share's answer, in the order the shares came.
#[derive(Debug)]
struct Pending {
    id: Id,
    /// The sequence number it was forwarded with.
    sequence: Option<u32>,
    /// `None` while the router has not answered.
    verdict: Option<Result<(), RpcError>>,
}

/// `a` is at or before `b` in sequence-number order (which wraps).
fn at_or_before(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) < 1 << 31
}

/// The miner's part of the upstream channel (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Work {
    channel_id: u32,
    client: ClientChannel,
    extranonce1: Extranonce,
    /// Zeros between the miner channel's prefix and the miner's `extranonce2`.
    pad: usize,
    extranonce2_size: usize,
    /// Job id, version, whether the job allows version rolling.
    versions: VecDeque<(u32, u32, bool)>,
    future: VecDeque<(u32, Notify)>,
    /// SV1 `prevhash`, `nbits`, `min_ntime` of the tip.
    tip: Option<([u8; 32], u32, u32)>,
    last: Option<Notify>,
    seen: RecentShares,
    next_sequence: u32,
    pending: VecDeque<Pending>,
}

impl Work {
    /// The miner channel the router opened (`ok`), with `extranonce2_size` at most `cap`.
    /// `None` if the prefix and the extranonce together pass Stratum V2's 32 bytes (a
    /// pool that granted more than it may).
    pub(crate) fn new(ok: &OpenExtendedMiningChannelSuccess, cap: usize) -> Option<Work> {
        let size = usize::from(ok.extranonce_size);
        if ok.extranonce_prefix.as_slice().len() + size > Extranonce::MAX_LEN {
            return None;
        }
        let extranonce2_size = size.min(cap);
        let pad = size - extranonce2_size;
        let prefix = ok.extranonce_prefix.as_slice();
        let mut e1 = prefix.to_vec();
        e1.resize(prefix.len() + pad, 0);
        Some(Work {
            channel_id: ok.channel_id,
            client: ClientChannel::new(prefix.to_vec(), size, ok.target),
            extranonce1: Extranonce::new(&e1)?,
            pad,
            extranonce2_size,
            versions: VecDeque::new(),
            future: VecDeque::new(),
            tip: None,
            last: None,
            seen: RecentShares::new(DEDUP_BUDGET),
            next_sequence: 0,
            pending: VecDeque::new(),
        })
    }

    /// `extranonce1` as the miner gets it.
    pub(crate) fn extranonce1(&self) -> Extranonce {
        self.extranonce1
    }

    /// The miner's `extranonce2_size`.
    pub(crate) fn extranonce2_size(&self) -> usize {
        self.extranonce2_size
    }

    /// The upstream channel's target (shares meeting it are forwarded).
    pub(crate) fn upstream_target(&self) -> &U256 {
        self.client.target()
    }

    /// The last job sent, to send again.
    pub(crate) fn last_job(&self) -> Option<&Notify> {
        self.last.as_ref()
    }

    /// A job from the pool: the `mining.notify` to send now, if it is active on the tip
    /// (a future job waits for its `SetNewPrevHash`).
    pub(crate) fn on_job(&mut self, m: &NewExtendedMiningJob) -> Option<Notify> {
        self.client.on_new_job(m);
        if self.versions.len() == VERSIONS_KEPT {
            self.versions.pop_front();
        }
        self.versions
            .push_back((m.job_id, m.version, m.version_rolling_allowed));
        let notify = Notify {
            job_id: format!("{:x}", m.job_id),
            coinb1: m.coinbase_tx_prefix.as_bytes().to_vec(),
            coinb2: m.coinbase_tx_suffix.as_bytes().to_vec(),
            merkle_branch: m.merkle_path.iter().map(|h| h.0).collect(),
            version: m.version,
            ..Notify::default()
        };
        match m.min_ntime {
            None => {
                if self.future.len() == FUTURE_JOBS {
                    self.future.pop_front();
                }
                self.future.push_back((m.job_id, notify));
                None
            }
            Some(min_ntime) => {
                let (prevhash, nbits, _) = self.tip?;
                let notify = Notify {
                    prevhash,
                    nbits,
                    ntime: min_ntime,
                    clean_jobs: false,
                    ..notify
                };
                self.last = Some(notify.clone());
                Some(notify)
            }
        }
    }

    /// A new chain tip: the job it names, as a `mining.notify` with `clean_jobs`.
    pub(crate) fn on_prev_hash(&mut self, m: &SetNewPrevHash) -> Option<Notify> {
        self.client.on_set_new_prev_hash(m);
        self.seen.clear();
        let prevhash = sv1_prevhash(&m.prev_hash.0);
        self.tip = Some((prevhash, m.nbits, m.min_ntime));
        let at = self.future.iter().position(|(id, _)| *id == m.job_id)?;
        let (_, job) = self.future.remove(at)?;
        self.future.clear();
        let notify = Notify {
            prevhash,
            nbits: m.nbits,
            ntime: m.min_ntime,
            clean_jobs: true,
            ..job
        };
        self.last = Some(notify.clone());
        Some(notify)
    }

    /// A new upstream target.
    pub(crate) fn on_target(&mut self, m: &SetTarget) {
        self.client.on_set_target(m);
    }

    /// Checks a share as the pool checks it ([`ClientChannel::check`]) against
    /// `miner_target`, then for a duplicate; `version_mask` is the mask the miner
    /// negotiated (0: none): its version is the job's with the miner's `version_bits`
    /// inside the mask (BIP 310). A share that also meets the upstream target is to be
    /// forwarded; the caller records its answer ([`Self::expect`]).
    ///
    /// # Errors
    /// The SV1 error to answer with.
    pub(crate) fn check(
        &mut self,
        share: &Submitted,
        version_mask: u32,
        miner_target: &U256,
    ) -> Result<Checked, RpcError> {
        let job_id =
            u32::from_str_radix(&share.job_id, 16).map_err(|_| sv1_error(codes::INVALID_JOB_ID))?;
        if share.extranonce2.len() != self.extranonce2_size {
            return Err(RpcError::new(errors::OTHER, codes::BAD_EXTRANONCE_SIZE));
        }
        let (job_version, rolling) = self
            .versions
            .iter()
            .rev()
            .find(|(id, _, _)| *id == job_id)
            .map_or((0, false), |&(_, v, r)| (v, r));
        // BIP 310: the job's version outside the negotiated mask, the miner's bits
        // inside it (bits outside it are ignored: a share hashed with them fails); no
        // bits for a job that allows no rolling.
        let version_mask = if rolling { version_mask } else { 0 };
        let version = match share.version_bits {
            None => job_version,
            Some(bits) => (job_version & !version_mask) | (bits & version_mask),
        };
        let mut extranonce = [0u8; 32];
        let size = self.pad + self.extranonce2_size;
        extranonce[self.pad..size].copy_from_slice(share.extranonce2.as_bytes());
        let checked = self.client.check(
            &Share {
                job_id,
                nonce: share.nonce,
                ntime: share.ntime,
                version,
                extranonce: &extranonce[..size],
            },
            miner_target,
        );
        let hash = checked.map_err(|e: LocalReject| sv1_error(e.code()))?;
        if !self.seen.insert(hash) {
            return Err(sv1_error(codes::DUPLICATE_SHARE));
        }
        if !meets_target(&hash, self.client.target()) {
            return Ok(Checked::Local);
        }
        let sequence_number = self.next_sequence;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        Ok(Checked::Forward(SubmitSharesExtended {
            channel_id: self.channel_id,
            sequence_number,
            job_id,
            nonce: share.nonce,
            ntime: share.ntime,
            version,
            extranonce: B032::try_from(&extranonce[..size])
                .map_err(|_| RpcError::new(errors::OTHER, codes::INVALID_SHARE))?,
        }))
    }

    /// Whether [`MAX_PENDING`] answers wait.
    pub(crate) fn is_full(&self) -> bool {
        self.pending.len() >= MAX_PENDING
    }

    /// Records the answer to request `id`: decided now (`Some`), or the router's to the
    /// share forwarded with `sequence`.
    pub(crate) fn expect(
        &mut self,
        id: Id,
        sequence: Option<u32>,
        now: Option<Result<(), RpcError>>,
    ) {
        self.pending.push_back(Pending {
            id,
            sequence,
            verdict: now,
        });
    }

    /// The router accepted every forwarded share up to `last`.
    pub(crate) fn on_success(&mut self, last: u32) {
        for p in &mut self.pending {
            if let (Some(seq), None) = (p.sequence, &p.verdict)
                && at_or_before(seq, last)
            {
                p.verdict = Some(Ok(()));
            }
        }
    }

    /// The router refused the share forwarded with `sequence`.
    pub(crate) fn on_error(&mut self, sequence: u32, code: &str) {
        if let Some(p) = self
            .pending
            .iter_mut()
            .find(|p| p.sequence == Some(sequence) && p.verdict.is_none())
        {
            p.verdict = Some(Err(sv1_error(code)));
        }
    }

    /// The answers that are due, in the order the shares came; returns how many were
    /// `true`.
    pub(crate) fn answers(&mut self, out: &mut Vec<Sv1Message>) -> usize {
        let mut accepted = 0;
        while self.pending.front().is_some_and(|p| p.verdict.is_some()) {
            let Some(Pending {
                id,
                verdict: Some(verdict),
                ..
            }) = self.pending.pop_front()
            else {
                break;
            };
            let response = match verdict {
                Ok(()) => {
                    accepted += 1;
                    Response::ok(true)
                }
                Err(e) => Response::error(e),
            };
            out.push(Sv1Message::response(id, response));
        }
        accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prevhash_words_are_reversed() {
        let mut h = [0u8; 32];
        for (i, b) in h.iter_mut().enumerate() {
            *b = i as u8;
        }
        let s = sv1_prevhash(&h);
        assert_eq!(&s[..8], &[3, 2, 1, 0, 7, 6, 5, 4]);
        assert_eq!(sv1_prevhash(&s), h);
    }

    #[test]
    fn answers_keep_the_order_of_the_shares() {
        let ok = OpenExtendedMiningChannelSuccess {
            request_id: 1,
            channel_id: 2,
            target: U256([0xff; 32]),
            extranonce_size: 12,
            extranonce_prefix: B032::try_from(vec![1, 2, 3, 4]).unwrap(),
            group_channel_id: 1,
        };
        let too_long = OpenExtendedMiningChannelSuccess {
            extranonce_size: 29,
            ..ok.clone()
        };
        assert!(Work::new(&too_long, 8).is_none());
        let mut w = Work::new(&ok, 8).unwrap();
        assert_eq!(w.extranonce1().as_bytes(), &[1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(w.extranonce2_size(), 8);
        w.expect(Id::Num(1), Some(0), None);
        w.expect(Id::Num(2), None, Some(Ok(())));
        w.expect(Id::Num(3), Some(1), None);
        let mut out = Vec::new();
        assert_eq!(w.answers(&mut out), 0);
        w.on_error(1, "stale-share");
        assert_eq!(w.answers(&mut out), 0);
        w.on_success(0);
        assert_eq!(w.answers(&mut out), 2);
        let lines: Vec<String> = out.iter().map(Sv1Message::to_line).collect();
        assert_eq!(lines[0], "{\"id\":1,\"result\":true,\"error\":null}\n");
        assert!(
            lines[2].contains("[21,\"stale-share\",null]"),
            "{}",
            lines[2]
        );
    }
}
