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
//! an extended miner channel's is, and forwarded as `SubmitSharesExtended`. The jobs are
//! the worker's, shared by all its SV1 miners ([`Sv1Jobs`]): the check runs on the upstream
//! channel's [`ClientChannel`] with the extranonce after `P` (`S ‖ zeros ‖ extranonce2`).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use sv2c_binary::messages::{OpenExtendedMiningChannelSuccess, SubmitSharesExtended};
use sv2c_binary::{B032, U256};
#[cfg(doc)]
use sv2c_channels::client::ClientChannel;
use sv2c_channels::client::{Hashed, LocalReject};
use sv2c_channels::codes;
use sv2c_channels::pow::meets_target;
use sv2c_channels::server::{RecentShares, Share};
use sv2c_sv1::{Extranonce, Id, Response, RpcError, Sv1Message};

use crate::proxy::board::{JobLines, Sv1Jobs};

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
    /// Meets the upstream target: forward it (answered when the router answers), with
    /// its hash for the router ([`ClientChannel::check_hashed`]).
    Forward(SubmitSharesExtended, Hashed),
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
    /// `P ‖ S ‖ zeros`.
    extranonce1: Extranonce,
    /// Zeros between the miner channel's prefix and the miner's `extranonce2`.
    pad: usize,
    extranonce2_size: usize,
    /// The worker's jobs as last read (shared with its other SV1 miners).
    jobs: Arc<Sv1Jobs>,
    /// The jobs of the pool the proxy left last ([`Self::set_prefix`]): shares on them
    /// are `stale-share`.
    left: Option<Arc<Sv1Jobs>>,
    /// The tip count ([`Sv1Jobs::tip`]) of the last job sent.
    sent_tip: u64,
    /// The last job sent (the worker's, not a copy).
    sent: Option<Arc<JobLines>>,
    seen_tip: u64,
    seen: RecentShares,
    next_sequence: u32,
    pending: VecDeque<Pending>,
}

impl Work {
    /// The miner channel the router opened (`ok`), with `extranonce2_size` at most `cap`,
    /// on the worker's jobs `jobs`. `None` if the prefix and the extranonce together pass
    /// Stratum V2's 32 bytes (a pool that granted more than it may).
    pub(crate) fn new(
        ok: &OpenExtendedMiningChannelSuccess,
        cap: usize,
        jobs: Arc<Sv1Jobs>,
    ) -> Option<Work> {
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
            extranonce1: Extranonce::new(&e1)?,
            pad,
            extranonce2_size,
            seen_tip: jobs.tip,
            jobs,
            left: None,
            sent_tip: 0,
            sent: None,
            seen: RecentShares::new(DEDUP_BUDGET),
            next_sequence: 0,
            pending: VecDeque::new(),
        })
    }

    /// The router moved the miner's channel to another pool connection, whose jobs are
    /// `jobs` (published before the move): its prefix is now `prefix` (the new pool's
    /// prefix, the miner's sub-prefix, zeros), its `extranonce2_size` stays, and shares
    /// on the jobs it had are `stale-share`. Returns `false` if the prefix and the
    /// extranonce together pass Stratum V2's 32 bytes; nothing changes then.
    pub(crate) fn set_prefix(&mut self, prefix: &[u8], jobs: Arc<Sv1Jobs>) -> bool {
        let mut e1 = prefix.to_vec();
        e1.resize(prefix.len() + self.pad, 0);
        if e1.len() + self.extranonce2_size > Extranonce::MAX_LEN {
            return false;
        }
        let Some(extranonce1) = Extranonce::new(&e1) else {
            return false;
        };
        self.extranonce1 = extranonce1;
        // Shares on the earlier pool's jobs are refused from now on.
        self.seen.clear();
        self.left = Some(std::mem::replace(&mut self.jobs, jobs));
        // No job of the new pool yet: none to send again.
        self.sent = None;
        true
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
        self.jobs.channel.target()
    }

    /// The last job sent, to send again (`clean_jobs` false).
    pub(crate) fn last_job(&self) -> Option<Bytes> {
        self.sent.as_ref().map(|s| s.more.clone())
    }

    /// The worker's jobs as published now (after a job, a tip or a target from the pool):
    /// the `mining.notify` line to send, if its newest job was not sent yet (`clean_jobs`
    /// for the first job on a tip).
    pub(crate) fn on_jobs(&mut self, jobs: Arc<Sv1Jobs>) -> Option<Bytes> {
        if jobs.tip != self.seen_tip {
            // Shares on the earlier tip are refused from now on: no duplicates there.
            self.seen.clear();
            self.seen_tip = jobs.tip;
        }
        let newest = jobs.notify.clone();
        let tip = jobs.tip;
        self.jobs = jobs;
        let newest = newest?;
        if self.sent.as_ref().is_some_and(|s| Arc::ptr_eq(s, &newest)) {
            return None;
        }
        let line = if self.sent_tip == tip {
            newest.more.clone()
        } else {
            newest.clean.clone()
        };
        self.sent = Some(newest);
        self.sent_tip = tip;
        Some(line)
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
        // The id the miner was sent; the pool's is `job_base` less (the router checks
        // the one it was sent against the jobs of pools the proxy left).
        let shown =
            u32::from_str_radix(&share.job_id, 16).map_err(|_| sv1_error(codes::INVALID_JOB_ID))?;
        let job_id = shown.wrapping_sub(self.jobs.job_base);
        if share.extranonce2.len() != self.extranonce2_size {
            return Err(RpcError::new(errors::OTHER, codes::BAD_EXTRANONCE_SIZE));
        }
        let channel = &self.jobs.channel;
        if channel.job_version(job_id).is_none()
            && self.left.as_ref().is_some_and(|left| {
                let theirs = shown.wrapping_sub(left.job_base);
                left.channel.job_version(theirs).is_some()
            })
        {
            return Err(sv1_error(codes::STALE_SHARE));
        }
        let version = self.version(job_id, share, version_mask);
        // P ‖ S ‖ zeros ‖ extranonce2; the upstream channel rolls what follows P.
        let e1 = self.extranonce1.as_bytes();
        let end = e1.len() + self.extranonce2_size;
        let mut full = [0u8; Extranonce::MAX_LEN];
        full[..e1.len()].copy_from_slice(e1);
        full[e1.len()..end].copy_from_slice(share.extranonce2.as_bytes());
        let upstream_part = full
            .get(channel.extranonce_prefix().len()..end)
            .ok_or_else(|| RpcError::new(errors::OTHER, codes::INVALID_SHARE))?;
        let checked = channel.check(
            &Share {
                job_id,
                nonce: share.nonce,
                ntime: share.ntime,
                version,
                extranonce: upstream_part,
            },
            miner_target,
        );
        let hash = checked.map_err(|e: LocalReject| sv1_error(e.code()))?;
        if !self.seen.insert(hash) {
            return Err(sv1_error(codes::DUPLICATE_SHARE));
        }
        if !meets_target(&hash, channel.target()) {
            return Ok(Checked::Local);
        }
        let hashed = Hashed {
            hash,
            prev_hash: channel
                .tip_prev_hash()
                .ok_or_else(|| RpcError::new(errors::OTHER, codes::INVALID_SHARE))?,
        };
        let sequence_number = self.next_sequence;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        // The miner channel's part: zeros ‖ extranonce2.
        let miner_part = &full[e1.len() - self.pad..end];
        Ok(Checked::Forward(
            SubmitSharesExtended {
                channel_id: self.channel_id,
                sequence_number,
                job_id: shown,
                nonce: share.nonce,
                ntime: share.ntime,
                version,
                extranonce: B032::try_from(miner_part)
                    .map_err(|_| RpcError::new(errors::OTHER, codes::INVALID_SHARE))?,
            },
            hashed,
        ))
    }

    /// The version of `share` on job `job_id` (BIP 310): the job's version outside the
    /// negotiated `version_mask`, the miner's bits inside it (bits outside it are
    /// ignored: a share hashed with them fails); no bits for a job that allows no
    /// rolling.
    fn version(&self, job_id: u32, share: &Submitted, version_mask: u32) -> u32 {
        let (job_version, rolling) = self.jobs.channel.job_version(job_id).unwrap_or((0, false));
        let version_mask = if rolling { version_mask } else { 0 };
        match share.version_bits {
            None => job_version,
            Some(bits) => (job_version & !version_mask) | (bits & version_mask),
        }
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
        assert!(Work::new(&too_long, 8, Default::default()).is_none());
        let mut w = Work::new(&ok, 8, Default::default()).unwrap();
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
