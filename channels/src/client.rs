//! Client side of an extended channel (a proxy or mining firmware): the jobs and target
//! the server sent, the header a miner hashes, and a local check of a share before it is
//! forwarded.
//!
//! Jobs are kept from `NewExtendedMiningJob`: a future job (no `min_ntime`) waits for the
//! `SetNewPrevHash` that names it, which makes it the only active job (every other is
//! dropped); a job with `min_ntime` is active on the current tip at once. At most
//! [`MAX_JOBS`] jobs are kept; the oldest go first.
//!
//! A proxy that serves several miners from one extended channel (each miner's extranonce
//! starts with its own bytes inside the channel's rolling space) replays what it kept to
//! a miner's channel: [`ClientChannel::extended_job`] for an extended channel,
//! [`ClientChannel::standard_job`] (the merkle root for the miner's full extranonce) for
//! a standard one, and [`ClientChannel::prev_hash`].
//!
//! [`ClientChannel::check`] checks a share as strictly as
//! [`ServerChannel::validate_share`](crate::server::ServerChannel::validate_share) does
//! (the same code checks `ntime` and the version bits), against the channel target or a
//! harder one (a miner's own, behind a proxy): job (unknown, or stale: of an earlier chain
//! tip, or dropped from the kept jobs) → extranonce size → `ntime` within
//! `min_ntime ..= min_ntime + max_ntime_ahead` ([`MAX_NTIME_AHEAD`] by default) → version
//! bits outside the rolling mask (a job that allows rolling: [`VERSION_ROLLING_MASK`], as
//! a server of this crate allows; otherwise none) → target. What it cannot know is the
//! server's own policy where it differs (another window, another mask): a proxy counts
//! what the server refuses after all.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use sv2c_binary::U256;
use sv2c_binary::messages::{NewExtendedMiningJob, NewMiningJob, SetNewPrevHash, SetTarget};
use sv2c_binary::{B064K, Seq0255};

use crate::codes;
use crate::pow::{header, meets_target, merkle_root, sha256d};
use crate::rules::{FieldFault, check_fields};
use crate::server::{MAX_NTIME_AHEAD, Share, VERSION_ROLLING_MASK};

/// Jobs a client channel keeps.
pub const MAX_JOBS: usize = 32;

/// Ids of jobs no longer active (an earlier chain tip's, or dropped) that a client channel
/// remembers, to call a share for one of them stale rather than unknown.
pub const RETIRED_JOBS: usize = 64;

/// A job as the client keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClientJob {
    job_id: u32,
    future: bool,
    /// `min_ntime` as announced, or the tip's once `SetNewPrevHash` activated the job.
    min_ntime: Option<u32>,
    version: u32,
    version_rolling_allowed: bool,
    coinbase_prefix: Vec<u8>,
    coinbase_suffix: Vec<u8>,
    merkle_path: Vec<[u8; 32]>,
}

/// Why a share is not worth forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalReject {
    /// No `SetNewPrevHash` yet.
    #[error("no chain tip")]
    NoChainTip,
    /// The job is unknown, dropped, or still a future job.
    #[error("unknown or inactive job")]
    UnknownJob,
    /// The extranonce is not the size the server granted.
    #[error("extranonce of {got} bytes, expected {expected}")]
    BadExtranonceSize {
        /// Bytes given.
        got: usize,
        /// Bytes granted.
        expected: usize,
    },
    /// The header hash is above the channel target.
    #[error("target not met")]
    TargetNotMet,
    /// The job was active on an earlier chain tip, or dropped from the kept jobs.
    #[error("stale share")]
    Stale,
    /// The version differs from the job's outside the bits the miner may roll.
    #[error("version bits outside the rolling mask")]
    VersionBitsOutsideMask,
    /// `ntime` is below the job's `min_ntime`.
    #[error("ntime {ntime} below the job's min_ntime {min_ntime}")]
    NtimeTooEarly {
        /// The share's `ntime`.
        ntime: u32,
        /// The smallest `ntime` allowed.
        min_ntime: u32,
    },
    /// `ntime` is further ahead of the job's `min_ntime` than the channel allows.
    #[error("ntime {ntime} above {max_ntime}")]
    NtimeTooLate {
        /// The share's `ntime`.
        ntime: u32,
        /// The largest `ntime` allowed.
        max_ntime: u32,
    },
}

impl From<FieldFault> for LocalReject {
    fn from(f: FieldFault) -> Self {
        match f {
            FieldFault::NtimeTooEarly { ntime, min_ntime } => {
                LocalReject::NtimeTooEarly { ntime, min_ntime }
            }
            FieldFault::NtimeTooLate { ntime, max_ntime } => {
                LocalReject::NtimeTooLate { ntime, max_ntime }
            }
            FieldFault::VersionBitsOutsideMask => LocalReject::VersionBitsOutsideMask,
        }
    }
}

impl LocalReject {
    /// The `SubmitShares.Error` error code a proxy answers the miner with (the same as
    /// [`ShareError::code`](crate::server::ShareError::code) for the same failure).
    pub fn code(&self) -> &'static str {
        match self {
            LocalReject::NoChainTip | LocalReject::UnknownJob => codes::INVALID_JOB_ID,
            LocalReject::BadExtranonceSize { .. } => codes::BAD_EXTRANONCE_SIZE,
            LocalReject::TargetNotMet => codes::DIFFICULTY_TOO_LOW,
            LocalReject::Stale => codes::STALE_SHARE,
            LocalReject::VersionBitsOutsideMask => codes::INVALID_NON_ROLLABLE_VERSION_BIT,
            LocalReject::NtimeTooEarly { .. } | LocalReject::NtimeTooLate { .. } => {
                codes::INVALID_SHARE
            }
        }
    }
}

/// The chain tip of the last `SetNewPrevHash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tip {
    job_id: u32,
    prev_hash: [u8; 32],
    min_ntime: u32,
    nbits: u32,
}

/// One extended channel as its client sees it.
#[derive(Debug, Clone)]
pub struct ClientChannel {
    extranonce_prefix: Vec<u8>,
    extranonce_size: usize,
    target: U256,
    /// Shared with the channel's clones: a clone (a proxy publishing its jobs to its
    /// miners' tasks) copies no job.
    jobs: VecDeque<Arc<ClientJob>>,
    tip: Option<Tip>,
    /// Ids of jobs no longer active, newest last (at most [`RETIRED_JOBS`]).
    retired: VecDeque<u32>,
    max_ntime_ahead: u32,
}

impl ClientChannel {
    /// A channel from `OpenExtendedMiningChannel.Success`'s fields.
    pub fn new(extranonce_prefix: Vec<u8>, extranonce_size: usize, target: U256) -> Self {
        ClientChannel {
            extranonce_prefix,
            extranonce_size,
            target,
            jobs: VecDeque::new(),
            tip: None,
            retired: VecDeque::new(),
            max_ntime_ahead: MAX_NTIME_AHEAD,
        }
    }

    /// Seconds a share's `ntime` may be ahead of its job's `min_ntime` (default
    /// [`MAX_NTIME_AHEAD`], the same as a [`ServerChannel`](crate::server::ServerChannel)'s).
    pub fn set_max_ntime_ahead(&mut self, seconds: u32) {
        self.max_ntime_ahead = seconds;
    }

    fn retire(&mut self, job_id: u32) {
        if self.retired.len() == RETIRED_JOBS {
            self.retired.pop_front();
        }
        self.retired.push_back(job_id);
    }

    /// The active job `job_id`, or why a share for it is refused.
    fn active_job(&self, job_id: u32) -> Result<&ClientJob, LocalReject> {
        match self.jobs.iter().find(|j| j.job_id == job_id && !j.future) {
            Some(job) => Ok(job),
            None if self.retired.contains(&job_id) => Err(LocalReject::Stale),
            None => Err(LocalReject::UnknownJob),
        }
    }

    /// The channel target.
    pub fn target(&self) -> &U256 {
        &self.target
    }

    /// The extranonce prefix the server granted.
    pub fn extranonce_prefix(&self) -> &[u8] {
        &self.extranonce_prefix
    }

    /// The extranonce bytes the client rolls (after the prefix).
    pub fn extranonce_size(&self) -> usize {
        self.extranonce_size
    }

    /// The ids of the jobs kept, oldest first (after a `SetNewPrevHash`, its job first).
    pub fn job_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.jobs.iter().map(|j| j.job_id)
    }

    /// Job `job_id`'s version and whether it allows version rolling, if it is kept.
    pub fn job_version(&self, job_id: u32) -> Option<(u32, bool)> {
        let job = self.jobs.iter().rev().find(|j| j.job_id == job_id)?;
        Some((job.version, job.version_rolling_allowed))
    }

    /// The job of the current chain tip (the last `SetNewPrevHash`'s), if any.
    pub fn tip_job_id(&self) -> Option<u32> {
        self.tip.map(|t| t.job_id)
    }

    /// The last `SetNewPrevHash`, addressed to `channel_id`.
    pub fn prev_hash(&self, channel_id: u32) -> Option<SetNewPrevHash> {
        self.tip.map(|t| SetNewPrevHash {
            channel_id,
            job_id: t.job_id,
            prev_hash: U256(t.prev_hash),
            min_ntime: t.min_ntime,
            nbits: t.nbits,
        })
    }

    /// Job `job_id` as a `NewExtendedMiningJob` on `channel_id`; with `future`, without
    /// `min_ntime` (for a channel that gets the job before its `SetNewPrevHash`).
    pub fn extended_job(
        &self,
        job_id: u32,
        channel_id: u32,
        future: bool,
    ) -> Option<NewExtendedMiningJob> {
        let job = self.jobs.iter().find(|j| j.job_id == job_id)?;
        let path: Vec<U256> = job.merkle_path.iter().map(|h| U256(*h)).collect();
        Some(NewExtendedMiningJob {
            channel_id,
            job_id,
            min_ntime: if future { None } else { job.min_ntime },
            version: job.version,
            version_rolling_allowed: job.version_rolling_allowed,
            // The parts came from a message of the same types: they fit.
            merkle_path: Seq0255::from_slice(&path).ok()?,
            coinbase_tx_prefix: B064K::try_from(job.coinbase_prefix.clone()).ok()?,
            coinbase_tx_suffix: B064K::try_from(job.coinbase_suffix.clone()).ok()?,
        })
    }

    /// Job `job_id` as a `NewMiningJob` on `channel_id` for a miner whose extranonce is
    /// fixed to `extranonce` (the channel's rolling part, [`extranonce_size`] bytes): the
    /// merkle root of `coinbase_prefix ‖ extranonce_prefix ‖ extranonce ‖ coinbase_suffix`.
    /// With `future`, without `min_ntime`.
    ///
    /// # Errors
    /// [`LocalReject::UnknownJob`] (future jobs included), or
    /// [`LocalReject::BadExtranonceSize`].
    ///
    /// [`extranonce_size`]: Self::extranonce_size
    pub fn standard_job(
        &self,
        job_id: u32,
        channel_id: u32,
        extranonce: &[u8],
        future: bool,
    ) -> Result<NewMiningJob, LocalReject> {
        let job = self
            .jobs
            .iter()
            .find(|j| j.job_id == job_id)
            .ok_or(LocalReject::UnknownJob)?;
        Ok(NewMiningJob {
            channel_id,
            job_id,
            min_ntime: if future { None } else { job.min_ntime },
            version: job.version,
            merkle_root: U256(self.merkle_root(job, extranonce)?),
        })
    }

    fn merkle_root(&self, job: &ClientJob, extranonce: &[u8]) -> Result<[u8; 32], LocalReject> {
        if extranonce.len() != self.extranonce_size {
            return Err(LocalReject::BadExtranonceSize {
                got: extranonce.len(),
                expected: self.extranonce_size,
            });
        }
        let mut coinbase = job.coinbase_prefix.clone();
        coinbase.extend_from_slice(&self.extranonce_prefix);
        coinbase.extend_from_slice(extranonce);
        coinbase.extend_from_slice(&job.coinbase_suffix);
        Ok(merkle_root(sha256d(&coinbase), job.merkle_path.iter()))
    }

    /// `SetTarget`.
    pub fn on_set_target(&mut self, m: &SetTarget) {
        self.target = m.maximum_target;
    }

    /// `NewExtendedMiningJob`.
    pub fn on_new_job(&mut self, m: &NewExtendedMiningJob) {
        // (No `let` chain: the crate builds with Rust 1.85.)
        if self.jobs.len() == MAX_JOBS {
            if let Some(old) = self.jobs.pop_front() {
                self.retire(old.job_id);
            }
        }
        self.jobs.push_back(Arc::new(ClientJob {
            job_id: m.job_id,
            future: m.min_ntime.is_none(),
            min_ntime: m.min_ntime,
            version: m.version,
            version_rolling_allowed: m.version_rolling_allowed,
            coinbase_prefix: m.coinbase_tx_prefix.as_bytes().to_vec(),
            coinbase_suffix: m.coinbase_tx_suffix.as_bytes().to_vec(),
            merkle_path: m.merkle_path.iter().map(|h| h.0).collect(),
        }));
    }

    /// `SetNewPrevHash`: its job becomes the only active one.
    pub fn on_set_new_prev_hash(&mut self, m: &SetNewPrevHash) {
        self.tip = Some(Tip {
            job_id: m.job_id,
            prev_hash: m.prev_hash.0,
            min_ntime: m.min_ntime,
            nbits: m.nbits,
        });
        let retired: Vec<u32> = self
            .jobs
            .iter()
            .filter(|j| j.job_id != m.job_id && !j.future)
            .map(|j| j.job_id)
            .collect();
        for id in retired {
            self.retire(id);
        }
        self.jobs.retain(|j| j.job_id == m.job_id);
        for j in self.jobs.iter_mut() {
            let j = Arc::make_mut(j);
            j.future = false;
            j.min_ntime = Some(m.min_ntime);
        }
    }

    /// The 80-byte header of `job_id` with the miner's `extranonce`, `version`, `ntime`
    /// and `nonce`: what the miner hashes.
    ///
    /// # Errors
    /// [`LocalReject`] other than `TargetNotMet`.
    pub fn header(
        &self,
        job_id: u32,
        extranonce: &[u8],
        version: u32,
        ntime: u32,
        nonce: u32,
    ) -> Result<[u8; 80], LocalReject> {
        let tip = self.tip.ok_or(LocalReject::NoChainTip)?;
        let job = self.active_job(job_id)?;
        let root = self.merkle_root(job, extranonce)?;
        Ok(header(
            version,
            &tip.prev_hash,
            &root,
            ntime,
            tip.nbits,
            nonce,
        ))
    }

    /// Checks a share against the channel target before forwarding it (see
    /// [`check`](Self::check)); returns its header hash.
    ///
    /// # Errors
    /// [`LocalReject`].
    pub fn check_share(
        &self,
        job_id: u32,
        extranonce: &[u8],
        version: u32,
        ntime: u32,
        nonce: u32,
    ) -> Result<[u8; 32], LocalReject> {
        let share = Share {
            job_id,
            nonce,
            ntime,
            version,
            extranonce,
        };
        self.check(&share, &self.target)
    }

    /// Checks a share as a server of this crate would (the [module docs](self) give the
    /// order), with `share.extranonce` the channel's whole rolling part
    /// ([`extranonce_size`](Self::extranonce_size) bytes), against `target` (the
    /// channel's, or a harder one: a miner's own behind a proxy). Returns its header hash.
    ///
    /// # Errors
    /// The first check that fails, as a [`LocalReject`].
    pub fn check(&self, share: &Share<'_>, target: &U256) -> Result<[u8; 32], LocalReject> {
        let (tip, job) = self.check_before_hash(share)?;
        let root = self.merkle_root(job, share.extranonce)?;
        let head = header(
            share.version,
            &tip.prev_hash,
            &root,
            share.ntime,
            tip.nbits,
            share.nonce,
        );
        let hash = sha256d(&head);
        if meets_target(&hash, target) {
            Ok(hash)
        } else {
            Err(LocalReject::TargetNotMet)
        }
    }

    /// Every check of [`check`](Self::check) before the proof of work.
    fn check_before_hash(&self, share: &Share<'_>) -> Result<(Tip, &ClientJob), LocalReject> {
        let tip = self.tip.ok_or(LocalReject::NoChainTip)?;
        let job = self.active_job(share.job_id)?;
        if share.extranonce.len() != self.extranonce_size {
            return Err(LocalReject::BadExtranonceSize {
                got: share.extranonce.len(),
                expected: self.extranonce_size,
            });
        }
        let mask = if job.version_rolling_allowed {
            VERSION_ROLLING_MASK
        } else {
            0
        };
        check_fields(
            job.min_ntime.unwrap_or(tip.min_ntime),
            self.max_ntime_ahead,
            job.version,
            mask,
            share.ntime,
            share.version,
        )?;
        Ok((tip, job))
    }

    /// The chain tip's `prev_hash` (the last `SetNewPrevHash`'s), if any.
    pub fn tip_prev_hash(&self) -> Option<[u8; 32]> {
        self.tip.map(|t| t.prev_hash)
    }

    /// [`check`](Self::check) for a share whose header hash is already known: `hashed`
    /// is what `check` returned for it on a clone of this channel (a proxy's miner task
    /// checks its miner's shares on the jobs the proxy published to it). On the chain tip
    /// the hash was computed on, every check but the hashing runs again on this channel's
    /// state (the job may have gone stale, the target may be harder since): the hash is
    /// not computed again. On another tip the share is checked in full. A job id names
    /// one job of a channel (the server does not reuse them).
    ///
    /// # Errors
    /// The first check that fails, as a [`LocalReject`].
    pub fn check_hashed(
        &self,
        share: &Share<'_>,
        hashed: &Hashed,
        target: &U256,
    ) -> Result<[u8; 32], LocalReject> {
        if self.tip_prev_hash() != Some(hashed.prev_hash) {
            return self.check(share, target);
        }
        self.check_before_hash(share)?;
        if meets_target(&hashed.hash, target) {
            Ok(hashed.hash)
        } else {
            Err(LocalReject::TargetNotMet)
        }
    }
}

/// A share's header hash as [`ClientChannel::check`] returned it, and the chain tip's
/// `prev_hash` it was computed on ([`ClientChannel::tip_prev_hash`]); see
/// [`ClientChannel::check_hashed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hashed {
    /// The header's double SHA-256.
    pub hash: [u8; 32],
    /// The `prev_hash` in the header.
    pub prev_hash: [u8; 32],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pow::target_with_zero_bits;
    use crate::server::{CoinbaseOutput, ServerChannel};
    use sv2c_binary::messages::{NewTemplate, SetNewPrevHashTdp};
    use sv2c_binary::{B064K, B0255, Seq0255};

    /// A future template (id 1) paying 50 to the pool's outputs, with `merkle_path`.
    fn template(merkle_path: &[U256]) -> NewTemplate {
        NewTemplate {
            template_id: 1,
            future_template: true,
            version: 0x2000_0000,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x01, 0x07][..]).unwrap(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: 50,
            coinbase_tx_outputs_count: 0,
            coinbase_tx_outputs: B064K::default(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::from_slice(merkle_path).unwrap(),
        }
    }

    /// A server channel's job and tip, replayed into a client channel: every share the
    /// client finds locally, the server accepts.
    #[test]
    fn shares_checked_locally_are_accepted_by_the_server() {
        let target = target_with_zero_bits(8);
        let mut server = ServerChannel::extended(
            3,
            [5; 6].to_vec(),
            4,
            target,
            VERSION_ROLLING_MASK,
            [CoinbaseOutput {
                value: 50,
                script_pubkey: [0x51].to_vec(),
            }]
            .to_vec(),
        );
        let template = template(&[U256([4; 32])]);
        let job = server.on_new_template(&template).unwrap();
        let job_msg = server.extended_job_message(&job, true).unwrap();
        let prev = server
            .on_set_new_prev_hash(&SetNewPrevHashTdp {
                template_id: 1,
                prev_hash: U256([8; 32]),
                header_timestamp: 1000,
                n_bits: 0x1d00_ffff,
                target: target_with_zero_bits(32),
            })
            .unwrap();

        let mut client = ClientChannel::new([5; 6].to_vec(), 4, target);
        client.on_new_job(&job_msg);
        assert_eq!(
            client.check_share(job.job_id, &[0; 4], 0x2000_0000, 1000, 0),
            Err(LocalReject::NoChainTip)
        );
        client.on_set_new_prev_hash(&prev);
        let mut found = 0;
        for nonce in 0..4096u32 {
            let en = nonce.to_le_bytes();
            let local = client.check_share(job.job_id, &en, 0x2000_0000, 1000, nonce);
            let remote = server.validate_share(&Share {
                job_id: job.job_id,
                nonce,
                ntime: 1000,
                version: 0x2000_0000,
                extranonce: &en,
            });
            assert_eq!(local.is_ok(), remote.is_ok(), "nonce {nonce}");
            found += usize::from(local.is_ok());
        }
        assert!(found > 0);
        assert_eq!(
            client.check_share(job.job_id, &[0; 3], 0x2000_0000, 1000, 0),
            Err(LocalReject::BadExtranonceSize {
                got: 3,
                expected: 4
            })
        );
        assert_eq!(
            client.check_share(99, &[0; 4], 0x2000_0000, 1000, 0),
            Err(LocalReject::UnknownJob)
        );
    }

    /// A hash computed on a clone is taken on the same tip, checked against the current
    /// state (target, stale job, fields), and recomputed on another tip.
    #[test]
    fn a_hash_from_a_clone_is_checked_against_the_current_state() {
        let job = NewExtendedMiningJob {
            channel_id: 1,
            job_id: 7,
            min_ntime: None,
            version: 0x2000_0000,
            version_rolling_allowed: true,
            merkle_path: Seq0255::from_slice(&[]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(vec![0xaa]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(vec![0xcc]).unwrap(),
        };
        let tip = SetNewPrevHash {
            channel_id: 1,
            job_id: 7,
            prev_hash: U256([3; 32]),
            min_ntime: 1000,
            nbits: 0x1d00_ffff,
        };
        let mut client = ClientChannel::new(vec![1, 2], 4, U256([0xff; 32]));
        client.on_new_job(&job);
        client.on_set_new_prev_hash(&tip);
        let copy = client.clone();
        let share = Share {
            job_id: 7,
            nonce: 5,
            ntime: 1000,
            version: 0x2000_0000,
            extranonce: &[0; 4],
        };
        let hash = copy.check(&share, copy.target()).unwrap();
        let hashed = Hashed {
            hash,
            prev_hash: copy.tip_prev_hash().unwrap(),
        };
        let easy = U256([0xff; 32]);
        assert_eq!(client.check_hashed(&share, &hashed, &easy), Ok(hash));
        // Not hashed again: a made-up hash on the same tip is taken as it is.
        let made_up = Hashed {
            hash: [0xff; 32],
            ..hashed
        };
        assert_eq!(
            client.check_hashed(&share, &made_up, &U256([0xfe; 32])),
            Err(LocalReject::TargetNotMet)
        );
        let late = Share {
            ntime: 999,
            ..share
        };
        assert!(client.check_hashed(&late, &hashed, &easy).is_err());
        // A new tip: the job is stale, whatever the hash.
        let mut next = job.clone();
        next.job_id = 8;
        client.on_new_job(&next);
        client.on_set_new_prev_hash(&SetNewPrevHash {
            job_id: 8,
            prev_hash: U256([4; 32]),
            ..tip
        });
        assert_eq!(
            client.check_hashed(&share, &hashed, &easy),
            Err(LocalReject::Stale)
        );
        // On another tip the hash is computed again.
        let on_new = Share { job_id: 8, ..share };
        assert_eq!(
            client.check_hashed(&on_new, &made_up, &easy),
            client.check(&on_new, &easy)
        );
        assert_ne!(client.check(&on_new, &easy), Ok([0xff; 32]));
    }

    /// Every fault a server refuses, the client refuses with the same code: `ntime`
    /// before and past the window, version bits outside the mask, a harder target, a
    /// job of the previous tip.
    #[test]
    fn the_client_refuses_what_the_server_refuses_with_the_same_code() {
        let target = target_with_zero_bits(4);
        let outputs = [CoinbaseOutput {
            value: 50,
            script_pubkey: [0x51].to_vec(),
        }]
        .to_vec();
        let mut server =
            ServerChannel::extended(3, [5; 6].to_vec(), 4, target, VERSION_ROLLING_MASK, outputs);
        let mut client = ClientChannel::new([5; 6].to_vec(), 4, target);
        let tip = |template_id, prev: u8| SetNewPrevHashTdp {
            template_id,
            prev_hash: U256([prev; 32]),
            header_timestamp: 1000,
            n_bits: 0x1d00_ffff,
            target: target_with_zero_bits(32),
        };
        let mut first = template(&[]);
        let job = server.on_new_template(&first).unwrap();
        client.on_new_job(&server.extended_job_message(&job, true).unwrap());
        client.on_set_new_prev_hash(&server.on_set_new_prev_hash(&tip(1, 8)).unwrap());
        let old_job = job.job_id;
        first.template_id = 2;
        let job = server.on_new_template(&first).unwrap();
        client.on_new_job(&server.extended_job_message(&job, true).unwrap());
        client.on_set_new_prev_hash(&server.on_set_new_prev_hash(&tip(2, 9)).unwrap());

        let harder = target_with_zero_bits(12);
        let cases: &[(u32, u32, u32, &U256)] = &[
            (job.job_id, 999, 0x2000_0000, &target),
            (job.job_id, 1000 + MAX_NTIME_AHEAD + 1, 0x2000_0000, &target),
            (job.job_id, u32::MAX, 0x2000_0000, &target),
            (job.job_id, 0, 0x2000_0000, &target),
            (job.job_id, 1000, 0xe000_0000, &target),
            (job.job_id, 1000, 0x2000_0001, &target),
            (old_job, 1000, 0x2000_0000, &target),
            (77, 1000, 0x2000_0000, &target),
        ];
        for &(job_id, ntime, version, t) in cases {
            for nonce in 0..64u32 {
                let en = nonce.to_le_bytes();
                let share = Share {
                    job_id,
                    nonce,
                    ntime,
                    version,
                    extranonce: &en,
                };
                let local = client.check(&share, t).map_err(|e| e.code());
                let remote = server
                    .validate_share(&share)
                    .map(|_| ())
                    .map_err(|e| e.code());
                assert!(
                    local.is_err(),
                    "job {job_id} ntime {ntime} version {version:#x}"
                );
                assert_eq!(local.err(), remote.err(), "job {job_id} ntime {ntime}");
            }
        }
        // A miner's harder target: refused locally where the channel's would pass.
        let mut refused = 0;
        for nonce in 0..4096u32 {
            let en = nonce.to_le_bytes();
            let share = Share {
                job_id: job.job_id,
                nonce,
                ntime: 1000,
                version: 0x2000_0000,
                extranonce: &en,
            };
            let easy = client.check(&share, &target);
            let hard = client.check(&share, &harder);
            if easy.is_ok() && hard.is_err() {
                assert_eq!(hard, Err(LocalReject::TargetNotMet));
                refused += 1;
            }
            assert!(hard.is_err() || easy.is_ok());
        }
        assert!(refused > 0);
    }

    /// A standard channel served from an extended one (a proxy's miner with its own
    /// extranonce bytes `S ‖ zeros`): the `NewMiningJob` carries the merkle root the
    /// pool computes for that full extranonce, and a share found on it is valid on the
    /// pool's extended channel.
    #[test]
    fn a_standard_job_for_a_sub_prefix_matches_the_pools_merkle_root() {
        let target = target_with_zero_bits(6);
        let outputs = [CoinbaseOutput {
            value: 50,
            script_pubkey: [0x51].to_vec(),
        }];
        let upstream_prefix = [5u8; 6];
        let mut extended = ServerChannel::extended(
            3,
            upstream_prefix.to_vec(),
            8,
            target,
            VERSION_ROLLING_MASK,
            outputs.to_vec(),
        );
        let sub_prefix = [0u8, 0, 0, 7];
        let rolled = [sub_prefix, [0; 4]].concat();
        let full = [&upstream_prefix[..], &rolled].concat();
        let standard =
            ServerChannel::standard(4, full, target, VERSION_ROLLING_MASK, outputs.to_vec());
        let template = template(&[U256([4; 32]), U256([9; 32])]);
        let job = extended.on_new_template(&template).unwrap();
        let job_msg = extended.extended_job_message(&job, true).unwrap();
        let tip = SetNewPrevHashTdp {
            template_id: 1,
            prev_hash: U256([8; 32]),
            header_timestamp: 1000,
            n_bits: 0x1d00_ffff,
            target: target_with_zero_bits(32),
        };
        let prev = extended.on_set_new_prev_hash(&tip).unwrap();

        let mut client = ClientChannel::new(upstream_prefix.to_vec(), 8, target);
        client.on_new_job(&job_msg);
        assert_eq!(client.extranonce_prefix(), &upstream_prefix);
        assert_eq!(client.extranonce_size(), 8);
        // Replayed to another channel as it came (future: no min_ntime).
        let replayed = client.extended_job(job.job_id, 9, true).unwrap();
        assert_eq!(
            replayed,
            NewExtendedMiningJob {
                channel_id: 9,
                ..job_msg.clone()
            }
        );
        let mine = client.standard_job(job.job_id, 9, &rolled, true).unwrap();
        assert_eq!(
            mine,
            NewMiningJob {
                channel_id: 9,
                ..standard.standard_job_message(&job, true)
            }
        );
        assert_eq!(
            client.standard_job(job.job_id, 9, &sub_prefix, true),
            Err(LocalReject::BadExtranonceSize {
                got: 4,
                expected: 8
            })
        );
        client.on_set_new_prev_hash(&prev);
        assert_eq!(client.tip_job_id(), Some(job.job_id));
        assert_eq!(
            client.prev_hash(9),
            Some(SetNewPrevHash {
                channel_id: 9,
                ..prev
            })
        );
        let active = client.standard_job(job.job_id, 9, &rolled, false).unwrap();
        assert_eq!(active.min_ntime, Some(1000));

        // A miner hashing headers with the standard job's root finds shares the pool's
        // extended channel accepts with the extranonce `S ‖ zeros`.
        let nonce = (0u32..)
            .find(|&n| {
                let h = header(
                    active.version,
                    &[8; 32],
                    &active.merkle_root.0,
                    1000,
                    0x1d00_ffff,
                    n,
                );
                meets_target(&sha256d(&h), &target)
            })
            .unwrap();
        assert!(
            client
                .check_share(job.job_id, &rolled, active.version, 1000, nonce)
                .is_ok()
        );
        let share = Share {
            job_id: job.job_id,
            nonce,
            ntime: 1000,
            version: active.version,
            extranonce: &rolled,
        };
        assert!(extended.validate_share(&share).is_ok());
    }

    #[test]
    fn local_rejections_use_the_servers_error_codes() {
        use crate::server::ShareError;
        let pairs = [
            (LocalReject::NoChainTip, ShareError::NoChainTip),
            (LocalReject::UnknownJob, ShareError::UnknownJob),
            (
                LocalReject::BadExtranonceSize {
                    got: 1,
                    expected: 2,
                },
                ShareError::BadExtranonceSize {
                    got: 1,
                    expected: 2,
                },
            ),
            (LocalReject::TargetNotMet, ShareError::TargetNotMet),
        ];
        for (local, server) in pairs {
            assert_eq!(local.code(), server.code());
        }
    }
}
