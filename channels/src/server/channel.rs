//! A server's channel ([`ServerChannel`]) and what it is made of: jobs built from a
//! template, the chain tip, shares and their verdicts. The rules are described in the
//! [`server`](crate::server) module's documentation; custom jobs, in the module
//! beside this one, build on these types.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use sv2c_binary::messages::{
    NewExtendedMiningJob, NewMiningJob, NewTemplate, SetNewPrevHash, SetNewPrevHashTdp,
    SubmitSharesExtended, SubmitSharesExtendedRef, SubmitSharesStandard,
};
use sv2c_binary::{B064K, Seq0255, U256};

use super::recent::RecentShares;

use crate::pow::{header, meets_target, merkle_root, sha256d};
use crate::rules::{FieldFault, check_fields};

/// The version bits BIP 320 leaves to miners (bits 13 to 28).
pub const BIP320_VERSION_MASK: u32 = 0x1fff_e000;

/// The version bits a miner may roll when version rolling is allowed: BIP 323's
/// general-purpose bits (5 to 28), which include BIP 320's.
pub const VERSION_ROLLING_MASK: u32 = 0x1fff_ffe0;

/// Jobs of the current chain tip a channel keeps (older ones become stale).
pub const RECENT_JOBS: usize = 16;

/// The scriptSig of a coinbase is at most 100 bytes (Bitcoin consensus).
pub const MAX_SCRIPT_SIG_LEN: usize = 100;

/// Seconds a share's `ntime` may be ahead of its job's `min_ntime` by default: Bitcoin's
/// `MAX_FUTURE_BLOCK_TIME` (2 hours), see [the `ntime` rule](super#the-ntime-rule).
pub const MAX_NTIME_AHEAD: u32 = 2 * 60 * 60;

/// An output the pool adds to every coinbase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoinbaseOutput {
    /// Satoshis.
    pub value: u64,
    /// The output script.
    pub script_pubkey: Vec<u8>,
}

/// A job could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The pool's outputs spend more than the template leaves.
    #[error("pool outputs total {outputs} sats, the template leaves {remaining}")]
    OutputsExceedValue {
        /// Sum of the pool's outputs.
        outputs: u64,
        /// `coinbase_tx_value_remaining`.
        remaining: u64,
    },
    /// The scriptSig (template prefix + extranonce) is longer than 100 bytes.
    #[error("scriptSig of {0} bytes (at most 100)")]
    ScriptSigTooLong(usize),
    /// A field does not fit its wire type (the coinbase is over 64 KiB, or the merkle
    /// path over 255 entries).
    #[error("job too large for its message")]
    TooLarge,
    /// A non-future template arrived before any chain tip.
    #[error("no chain tip")]
    NoChainTip,
}

/// Appends Bitcoin's CompactSize encoding of `n`.
fn compact_size(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfc => out.push(n as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// The coinbase of `template` with `pool_outputs`, split around an extranonce of
/// `extranonce_len` bytes (see the [module docs](super)).
///
/// # Errors
/// [`JobError::OutputsExceedValue`], [`JobError::ScriptSigTooLong`].
pub fn coinbase_parts(
    template: &NewTemplate,
    pool_outputs: &[CoinbaseOutput],
    extranonce_len: usize,
) -> Result<(Vec<u8>, Vec<u8>), JobError> {
    let outputs: u64 = pool_outputs
        .iter()
        .fold(0u64, |a, o| a.saturating_add(o.value));
    if outputs > template.coinbase_tx_value_remaining {
        return Err(JobError::OutputsExceedValue {
            outputs,
            remaining: template.coinbase_tx_value_remaining,
        });
    }
    let template_outputs = template.coinbase_tx_outputs.as_bytes();
    let count = pool_outputs.len() as u64 + u64::from(template.coinbase_tx_outputs_count);
    let mut outputs = Vec::with_capacity(9 + template_outputs.len());
    compact_size(&mut outputs, count);
    for o in pool_outputs {
        outputs.extend_from_slice(&o.value.to_le_bytes());
        compact_size(&mut outputs, o.script_pubkey.len() as u64);
        outputs.extend_from_slice(&o.script_pubkey);
    }
    outputs.extend_from_slice(template_outputs);
    split_coinbase(
        template.coinbase_tx_version,
        template.coinbase_prefix.as_bytes(),
        extranonce_len,
        template.coinbase_tx_input_sequence,
        &outputs,
        template.coinbase_tx_locktime,
    )
}

/// A coinbase (without witness) split around an extranonce of `extranonce_len` bytes:
/// `outputs` is the serialised output list, count included.
pub(super) fn split_coinbase(
    tx_version: u32,
    script_prefix: &[u8],
    extranonce_len: usize,
    sequence: u32,
    outputs: &[u8],
    locktime: u32,
) -> Result<(Vec<u8>, Vec<u8>), JobError> {
    let script_len = script_prefix.len() + extranonce_len;
    if script_len > MAX_SCRIPT_SIG_LEN {
        return Err(JobError::ScriptSigTooLong(script_len));
    }
    let mut prefix = Vec::with_capacity(42 + script_prefix.len());
    prefix.extend_from_slice(&tx_version.to_le_bytes());
    prefix.push(1);
    prefix.extend_from_slice(&[0u8; 32]);
    prefix.extend_from_slice(&u32::MAX.to_le_bytes());
    compact_size(&mut prefix, script_len as u64);
    prefix.extend_from_slice(script_prefix);
    let mut suffix = Vec::with_capacity(8 + outputs.len());
    suffix.extend_from_slice(&sequence.to_le_bytes());
    suffix.extend_from_slice(outputs);
    suffix.extend_from_slice(&locktime.to_le_bytes());
    Ok((prefix, suffix))
}

/// A job as the channel remembers it.
///
/// Its coinbase parts and merkle path are reference-counted: a clone shares them, so a
/// server that builds a template's job once can give it to every channel with the same
/// pool outputs and extranonce length ([`ServerChannel::install_active_job`],
/// [`ServerChannel::install_future_job`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The job id (per channel, increasing).
    pub job_id: u32,
    /// The template it was built from (0 for a custom job, which has none).
    pub template_id: u64,
    /// The header version the miner starts from.
    pub version: u32,
    /// Coinbase bytes before the extranonce.
    pub coinbase_prefix: Arc<[u8]>,
    /// Coinbase bytes after the extranonce.
    pub coinbase_suffix: Arc<[u8]>,
    /// The merkle path of the coinbase.
    pub merkle_path: Arc<[[u8; 32]]>,
    /// The smallest `ntime` of the job's shares: `None` for the chain tip's (every job built
    /// from a template), `Some` for a job that carries its own (a custom job).
    pub min_ntime: Option<u32>,
}

impl Job {
    /// The coinbase with `extranonce` (the channel's prefix and the miner's bytes).
    pub fn coinbase(&self, extranonce: &[&[u8]]) -> Vec<u8> {
        let mut tx = self.coinbase_prefix.to_vec();
        for part in extranonce {
            tx.extend_from_slice(part);
        }
        tx.extend_from_slice(&self.coinbase_suffix);
        tx
    }
}

/// The chain tip jobs build on (from the Template Distribution `SetNewPrevHash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainTip {
    /// The template whose job the tip activates.
    pub template_id: u64,
    /// Previous block hash, as in the header.
    pub prev_hash: [u8; 32],
    /// Header time the miner starts from.
    pub min_ntime: u32,
    /// Header `nbits`.
    pub nbits: u32,
    /// The network target: a share at or below it is a block.
    pub network_target: U256,
}

/// A share's fields, from either `SubmitShares` message (`Share::from(&submit)`; the
/// channel id and sequence number are the caller's, to find the channel and answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share<'a> {
    /// The job.
    pub job_id: u32,
    /// Header nonce.
    pub nonce: u32,
    /// Header time.
    pub ntime: u32,
    /// Header version.
    pub version: u32,
    /// The miner's extranonce bytes (empty on a standard channel).
    pub extranonce: &'a [u8],
}

impl From<&SubmitSharesStandard> for Share<'_> {
    /// A standard channel's share: no extranonce. (`SubmitSharesStandardRef` is this same
    /// type: its fields are all fixed-size.)
    fn from(s: &SubmitSharesStandard) -> Self {
        Share {
            job_id: s.job_id,
            nonce: s.nonce,
            ntime: s.ntime,
            version: s.version,
            extranonce: &[],
        }
    }
}

impl<'a> From<&'a SubmitSharesExtended> for Share<'a> {
    fn from(s: &'a SubmitSharesExtended) -> Self {
        Share {
            job_id: s.job_id,
            nonce: s.nonce,
            ntime: s.ntime,
            version: s.version,
            extranonce: s.extranonce.as_slice(),
        }
    }
}

impl<'a> From<&SubmitSharesExtendedRef<'a>> for Share<'a> {
    /// The share of a borrowed view: its extranonce borrows the frame, not the view.
    fn from(s: &SubmitSharesExtendedRef<'a>) -> Self {
        Share {
            job_id: s.job_id,
            nonce: s.nonce,
            ntime: s.ntime,
            version: s.version,
            extranonce: s.extranonce.as_bytes(),
        }
    }
}

/// A share that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareOk {
    /// It met the channel target.
    Valid {
        /// The header hash.
        hash: [u8; 32],
    },
    /// It also met the network target: a block, with what is needed to submit it.
    BlockFound {
        /// The header hash.
        hash: [u8; 32],
        /// The template the job was built from (0 for a custom job).
        template_id: u64,
        /// The 80-byte header.
        header: [u8; 80],
        /// The coinbase transaction, serialised without witness (the txid's form);
        /// [`submit_solution`](super::submit_solution) makes the `SubmitSolution` a
        /// Template Provider takes, witness included.
        coinbase: Vec<u8>,
    },
}

/// Why a share was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShareError {
    /// No chain tip yet: no job is active.
    #[error("no chain tip")]
    NoChainTip,
    /// The job id was never issued on this channel (or names a future job).
    #[error("unknown job")]
    UnknownJob,
    /// The job belongs to an earlier chain tip, or left the recent jobs.
    #[error("stale share")]
    Stale,
    /// The extranonce is not the size the channel granted.
    #[error("extranonce of {got} bytes, expected {expected}")]
    BadExtranonceSize {
        /// Bytes received.
        got: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// The version differs from the job's outside the bits the miner may roll.
    #[error("version bits outside the rolling mask")]
    VersionBitsOutsideMask,
    /// The header hash is above the channel target.
    #[error("target not met")]
    TargetNotMet,
    /// The same share was accepted already.
    #[error("duplicate share")]
    Duplicate,
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

impl ShareError {
    /// The `SubmitShares.Error` error code (SV2-WIRE, error codes).
    pub fn code(&self) -> &'static str {
        match self {
            ShareError::NoChainTip | ShareError::UnknownJob => crate::codes::INVALID_JOB_ID,
            ShareError::Stale => crate::codes::STALE_SHARE,
            ShareError::BadExtranonceSize { .. } => crate::codes::BAD_EXTRANONCE_SIZE,
            ShareError::VersionBitsOutsideMask => crate::codes::INVALID_NON_ROLLABLE_VERSION_BIT,
            ShareError::TargetNotMet => crate::codes::DIFFICULTY_TOO_LOW,
            ShareError::Duplicate => crate::codes::DUPLICATE_SHARE,
            // The spec names no code for it; SRI answers `invalid-share` (SV2-WIRE App. B).
            ShareError::NtimeTooEarly { .. } | ShareError::NtimeTooLate { .. } => {
                crate::codes::INVALID_SHARE
            }
        }
    }
}

impl From<FieldFault> for ShareError {
    fn from(f: FieldFault) -> Self {
        match f {
            FieldFault::NtimeTooEarly { ntime, min_ntime } => {
                ShareError::NtimeTooEarly { ntime, min_ntime }
            }
            FieldFault::NtimeTooLate { ntime, max_ntime } => {
                ShareError::NtimeTooLate { ntime, max_ntime }
            }
            FieldFault::VersionBitsOutsideMask => ShareError::VersionBitsOutsideMask,
        }
    }
}

/// A standard or extended channel on the server side (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct ServerChannel {
    // `pub(super)`: the `server` modules see the fields (custom jobs work on them).
    pub(super) channel_id: u32,
    pub(super) extranonce_prefix: Vec<u8>,
    /// `None`: standard channel (the miner sends no extranonce).
    pub(super) rollable: Option<usize>,
    pub(super) target: U256,
    pub(super) version_mask: u32,
    pub(super) pool_outputs: Vec<CoinbaseOutput>,
    pub(super) tip: Option<ChainTip>,
    pub(super) jobs: VecDeque<Job>,
    pub(super) future: BTreeMap<u64, Job>,
    pub(super) next_job_id: u32,
    pub(super) first_job_of_tip: u32,
    /// The hashes of the accepted shares remembered.
    pub(super) seen: RecentShares,
    /// A standard channel's merkle root for the job its last share was for: its
    /// extranonce is the fixed prefix, so the root is the same for every share of a job.
    /// Forgotten whenever the active jobs change.
    pub(super) root_cache: Option<(u32, [u8; 32])>,
    pub(super) max_ntime_ahead: u32,
}

impl ServerChannel {
    /// An extended channel: the miner adds `rollable` extranonce bytes after
    /// `extranonce_prefix`; `version_mask` is the bits it may roll (0: none, or
    /// [`VERSION_ROLLING_MASK`]).
    pub fn extended(
        channel_id: u32,
        extranonce_prefix: Vec<u8>,
        rollable: usize,
        target: U256,
        version_mask: u32,
        pool_outputs: Vec<CoinbaseOutput>,
    ) -> Self {
        Self::new(
            channel_id,
            extranonce_prefix,
            Some(rollable),
            target,
            version_mask,
            pool_outputs,
        )
    }

    /// A standard channel: the whole extranonce is `extranonce_prefix`.
    pub fn standard(
        channel_id: u32,
        extranonce_prefix: Vec<u8>,
        target: U256,
        version_mask: u32,
        pool_outputs: Vec<CoinbaseOutput>,
    ) -> Self {
        Self::new(
            channel_id,
            extranonce_prefix,
            None,
            target,
            version_mask,
            pool_outputs,
        )
    }

    fn new(
        channel_id: u32,
        extranonce_prefix: Vec<u8>,
        rollable: Option<usize>,
        target: U256,
        version_mask: u32,
        pool_outputs: Vec<CoinbaseOutput>,
    ) -> Self {
        ServerChannel {
            channel_id,
            extranonce_prefix,
            rollable,
            target,
            version_mask,
            pool_outputs,
            tip: None,
            jobs: VecDeque::new(),
            future: BTreeMap::new(),
            next_job_id: 1,
            first_job_of_tip: 1,
            seen: RecentShares::new(1024),
            root_cache: None,
            max_ntime_ahead: MAX_NTIME_AHEAD,
        }
    }

    /// Sets how many accepted shares duplicate detection remembers at least (at least 1;
    /// at most twice as many are kept, see the module docs).
    pub fn with_dedup_budget(mut self, budget: usize) -> Self {
        self.seen = RecentShares::new(budget);
        self
    }

    /// How many accepted shares duplicate detection remembers at least.
    pub fn dedup_budget(&self) -> usize {
        self.seen.budget()
    }

    /// Whether this is a standard channel (the miner sends no extranonce).
    pub fn is_standard(&self) -> bool {
        self.rollable.is_none()
    }

    /// Sets how many seconds a share's `ntime` may be ahead of its job's `min_ntime`
    /// (default [`MAX_NTIME_AHEAD`]; see [the `ntime` rule](super#the-ntime-rule)).
    pub fn with_max_ntime_ahead(mut self, seconds: u32) -> Self {
        self.max_ntime_ahead = seconds;
        self
    }

    /// As [`with_max_ntime_ahead`](Self::with_max_ntime_ahead), on a channel in use.
    pub fn set_max_ntime_ahead(&mut self, seconds: u32) {
        self.max_ntime_ahead = seconds;
    }

    /// Seconds a share's `ntime` may be ahead of its job's `min_ntime`.
    pub fn max_ntime_ahead(&self) -> u32 {
        self.max_ntime_ahead
    }

    /// The channel id.
    pub fn channel_id(&self) -> u32 {
        self.channel_id
    }

    /// The channel target.
    pub fn target(&self) -> &U256 {
        &self.target
    }

    /// Sets the channel target (`SetTarget`, vardiff).
    pub fn set_target(&mut self, target: U256) {
        self.target = target;
    }

    /// The chain tip, once known.
    pub fn chain_tip(&self) -> Option<&ChainTip> {
        self.tip.as_ref()
    }

    /// The job `job_id` if shares for it are accepted (active on the current chain tip).
    pub fn job(&self, job_id: u32) -> Option<&Job> {
        self.jobs.iter().find(|j| j.job_id == job_id)
    }

    /// Bytes of extranonce the coinbase holds: the prefix, and on an extended channel the
    /// miner's own.
    pub fn extranonce_len(&self) -> usize {
        self.extranonce_prefix.len() + self.rollable.unwrap_or(0)
    }

    /// Builds the job of a `NewTemplate`. A future template's job waits for its
    /// `SetNewPrevHash`; any other is active on the current tip.
    ///
    /// # Errors
    /// [`JobError`]; no job id is used up then.
    pub fn on_new_template(&mut self, template: &NewTemplate) -> Result<Job, JobError> {
        if !template.future_template && self.tip.is_none() {
            return Err(JobError::NoChainTip);
        }
        let (coinbase_prefix, coinbase_suffix) =
            coinbase_parts(template, &self.pool_outputs, self.extranonce_len())?;
        if coinbase_prefix.len() + self.extranonce_len() + coinbase_suffix.len() > 65_535 {
            return Err(JobError::TooLarge);
        }
        if template.merkle_path.len() > 255 {
            return Err(JobError::TooLarge);
        }
        let merkle_path: Arc<[[u8; 32]]> = template.merkle_path.iter().map(|h| h.0).collect();
        let job = Job {
            job_id: self.next_job_id,
            template_id: template.template_id,
            version: template.version,
            coinbase_prefix: coinbase_prefix.into(),
            coinbase_suffix: coinbase_suffix.into(),
            merkle_path,
            min_ntime: None,
        };
        self.next_job_id = self.next_job_id.wrapping_add(1).max(1);
        if template.future_template {
            self.future.insert(template.template_id, job.clone());
        } else {
            self.push_active(job.clone());
        }
        Ok(job)
    }

    pub(super) fn push_active(&mut self, job: Job) {
        self.root_cache = None;
        if self.jobs.len() == RECENT_JOBS {
            self.jobs.pop_front();
        }
        self.jobs.push_back(job);
    }

    /// A new chain tip (a Template Distribution `SetNewPrevHash`): see
    /// [`set_chain_tip`](Self::set_chain_tip).
    pub fn on_set_new_prev_hash(&mut self, tip: &SetNewPrevHashTdp) -> Option<SetNewPrevHash> {
        self.set_chain_tip(ChainTip {
            template_id: tip.template_id,
            prev_hash: tip.prev_hash.0,
            min_ntime: tip.header_timestamp,
            nbits: tip.n_bits,
            network_target: tip.target,
        })
    }

    /// A new chain tip, from a Template Provider or set directly (`network_target` from
    /// `nbits` with [`pow::target_from_nbits`](crate::pow::target_from_nbits)): the future
    /// job of its template becomes the only active one and its Mining `SetNewPrevHash`,
    /// the message the server sends on this channel, is returned (`None` if this channel
    /// has no future job of that template: then no job is active until the next
    /// `NewTemplate`). Every older job becomes stale, and duplicate detection starts
    /// afresh if `prev_hash` changed.
    pub fn set_chain_tip(&mut self, tip: ChainTip) -> Option<SetNewPrevHash> {
        if self.tip.is_some_and(|t| t.prev_hash != tip.prev_hash) {
            // Given back, not cleared: a channel keeps no memory for shares of an old tip.
            self.seen.release();
        }
        self.tip = Some(tip);
        self.jobs.clear();
        self.root_cache = None;
        self.first_job_of_tip = self.next_job_id;
        let job = self.future.remove(&tip.template_id);
        self.future.clear();
        let job = job?;
        self.first_job_of_tip = job.job_id;
        let message = SetNewPrevHash {
            channel_id: self.channel_id,
            job_id: job.job_id,
            prev_hash: U256(tip.prev_hash),
            min_ntime: tip.min_ntime,
            nbits: tip.nbits,
        };
        self.push_active(job);
        Some(message)
    }

    /// Makes a job built elsewhere (a custom job, or another implementation's) active on
    /// the current chain tip, next to the recent ones. Its `job_id` must not collide with
    /// this channel's own: later ids continue after it.
    pub fn install_active_job(&mut self, job: Job) {
        if job.job_id >= self.next_job_id {
            self.next_job_id = job.job_id.wrapping_add(1).max(1);
        }
        self.push_active(job);
    }

    /// Keeps a job built elsewhere (the same template's job another channel with the same
    /// pool outputs and extranonce length was given, say) as the future job of its
    /// `template_id`, which the `SetNewPrevHash` of that template activates, as
    /// [`on_new_template`](Self::on_new_template) does with a future template's job. Its
    /// `job_id` must not collide with this channel's own: later ids continue after it.
    pub fn install_future_job(&mut self, job: Job) {
        if job.job_id >= self.next_job_id {
            self.next_job_id = job.job_id.wrapping_add(1).max(1);
        }
        self.future.insert(job.template_id, job);
    }

    /// The `NewExtendedMiningJob` announcing `job` (`future`: it waits for a
    /// `SetNewPrevHash`).
    ///
    /// # Errors
    /// [`JobError::TooLarge`] if a part does not fit its wire type.
    pub fn extended_job_message(
        &self,
        job: &Job,
        future: bool,
    ) -> Result<NewExtendedMiningJob, JobError> {
        let path: Vec<U256> = job.merkle_path.iter().map(|h| U256(*h)).collect();
        Ok(NewExtendedMiningJob {
            channel_id: self.channel_id,
            job_id: job.job_id,
            min_ntime: if future {
                None
            } else {
                job.min_ntime.or(self.tip.map(|t| t.min_ntime))
            },
            version: job.version,
            version_rolling_allowed: self.version_mask != 0,
            merkle_path: Seq0255::from_slice(&path).map_err(|_| JobError::TooLarge)?,
            coinbase_tx_prefix: B064K::try_from(job.coinbase_prefix.to_vec())
                .map_err(|_| JobError::TooLarge)?,
            coinbase_tx_suffix: B064K::try_from(job.coinbase_suffix.to_vec())
                .map_err(|_| JobError::TooLarge)?,
        })
    }

    /// The `NewMiningJob` announcing `job` on a standard channel (the merkle root of the
    /// coinbase with the channel's extranonce).
    pub fn standard_job_message(&self, job: &Job, future: bool) -> NewMiningJob {
        let coinbase = job.coinbase(&[&self.extranonce_prefix]);
        NewMiningJob {
            channel_id: self.channel_id,
            job_id: job.job_id,
            min_ntime: if future {
                None
            } else {
                job.min_ntime.or(self.tip.map(|t| t.min_ntime))
            },
            version: job.version,
            merkle_root: U256(merkle_root(sha256d(&coinbase), job.merkle_path.iter())),
        }
    }

    /// Checks a share (see the [module docs](super) for the order of the checks).
    ///
    /// # Errors
    /// The first check that fails, as a [`ShareError`].
    pub fn validate_share(&mut self, share: &Share<'_>) -> Result<ShareOk, ShareError> {
        let tip = self.tip.ok_or(ShareError::NoChainTip)?;
        let Some(job) = self.jobs.iter().find(|j| j.job_id == share.job_id) else {
            let issued = share.job_id < self.next_job_id && share.job_id != 0;
            let pending = self.future.values().any(|j| j.job_id == share.job_id);
            return Err(if issued && !pending {
                ShareError::Stale
            } else {
                ShareError::UnknownJob
            });
        };
        let expected = self.rollable.unwrap_or(0);
        if share.extranonce.len() != expected {
            return Err(ShareError::BadExtranonceSize {
                got: share.extranonce.len(),
                expected,
            });
        }
        check_fields(
            job.min_ntime.unwrap_or(tip.min_ntime),
            self.max_ntime_ahead,
            job.version,
            self.version_mask,
            share.ntime,
            share.version,
        )?;
        let root = match self.root_cache {
            Some((id, root)) if id == job.job_id && self.rollable.is_none() => root,
            _ => {
                let coinbase = job.coinbase(&[&self.extranonce_prefix, share.extranonce]);
                let root = merkle_root(sha256d(&coinbase), job.merkle_path.iter());
                if self.rollable.is_none() {
                    self.root_cache = Some((job.job_id, root));
                }
                root
            }
        };
        let head = header(
            share.version,
            &tip.prev_hash,
            &root,
            share.ntime,
            tip.nbits,
            share.nonce,
        );
        let hash = sha256d(&head);
        let block = meets_target(&hash, &tip.network_target);
        if !block && !meets_target(&hash, &self.target) {
            return Err(ShareError::TargetNotMet);
        }
        if !self.seen.insert(hash) {
            return Err(ShareError::Duplicate);
        }
        if block {
            Ok(ShareOk::BlockFound {
                hash,
                template_id: job.template_id,
                header: head,
                coinbase: job.coinbase(&[&self.extranonce_prefix, share.extranonce]),
            })
        } else {
            Ok(ShareOk::Valid { hash })
        }
    }
}

/// Hands out distinct extranonce prefixes: `fixed` bytes, then a big-endian counter of
/// `counter_len` bytes (1 to 8). Released prefixes are reused.
#[derive(Debug, Clone)]
pub struct ExtranoncePrefixAllocator {
    fixed: Vec<u8>,
    counter_len: usize,
    next: u64,
    free: BTreeSet<u64>,
}

/// Every prefix is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("extranonce prefixes exhausted")]
pub struct PrefixesExhausted;

impl ExtranoncePrefixAllocator {
    /// An allocator of prefixes `fixed` + a counter of `counter_len` bytes (clamped to
    /// 1..=8).
    pub fn new(fixed: Vec<u8>, counter_len: usize) -> Self {
        ExtranoncePrefixAllocator {
            fixed,
            counter_len: counter_len.clamp(1, 8),
            next: 0,
            free: BTreeSet::new(),
        }
    }

    /// Length of every prefix.
    pub fn prefix_len(&self) -> usize {
        self.fixed.len() + self.counter_len
    }

    fn capacity(&self) -> u64 {
        if self.counter_len >= 8 {
            u64::MAX
        } else {
            1u64 << (8 * self.counter_len)
        }
    }

    /// A prefix no other holder has.
    ///
    /// # Errors
    /// [`PrefixesExhausted`] when every counter value is in use.
    pub fn allocate(&mut self) -> Result<Vec<u8>, PrefixesExhausted> {
        let n = match self.free.pop_first() {
            Some(n) => n,
            None if self.next < self.capacity() => {
                self.next += 1;
                self.next - 1
            }
            None => return Err(PrefixesExhausted),
        };
        let mut prefix = self.fixed.clone();
        prefix.extend_from_slice(&n.to_be_bytes()[8 - self.counter_len..]);
        Ok(prefix)
    }

    /// Gives a prefix back (ignored if it is not one of this allocator's in use).
    pub fn release(&mut self, prefix: &[u8]) {
        if prefix.len() != self.prefix_len() || !prefix.starts_with(&self.fixed) {
            return;
        }
        let mut be = [0u8; 8];
        be[8 - self.counter_len..].copy_from_slice(&prefix[self.fixed.len()..]);
        let n = u64::from_be_bytes(be);
        if n < self.next {
            self.free.insert(n);
        }
        // Free values at the top go back to the counter, so that once every prefix is
        // back the set is empty: its nodes, allocated as miners left and spread over the
        // heap, would otherwise keep those pages from going back to the OS.
        while self.next > 0 && self.free.last() == Some(&(self.next - 1)) {
            self.free.pop_last();
            self.next -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pow::target_with_zero_bits;
    use sv2c_binary::B0255;

    /// A template at height 840,000 (BIP 34 push `03 40 d1 0c`) with one template output:
    /// a witness commitment (value 0).
    fn template(id: u64, future: bool) -> NewTemplate {
        let mut commitment = Vec::new();
        commitment.extend_from_slice(&0u64.to_le_bytes());
        commitment.push(38);
        commitment.extend_from_slice(&[0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]);
        commitment.extend_from_slice(&[7u8; 32]);
        NewTemplate {
            template_id: id,
            future_template: future,
            version: 0x2000_0000,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c][..]).unwrap(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: 312_500_000,
            coinbase_tx_outputs_count: 1,
            coinbase_tx_outputs: B064K::try_from(commitment).unwrap(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::from_slice(&[U256([1; 32]), U256([2; 32])]).unwrap(),
        }
    }

    fn tip(id: u64, network_bits: u32) -> SetNewPrevHashTdp {
        SetNewPrevHashTdp {
            template_id: id,
            prev_hash: U256([9; 32]),
            header_timestamp: 1_700_000_000,
            n_bits: 0x1703_0000,
            target: target_with_zero_bits(network_bits),
        }
    }

    fn channel() -> ServerChannel {
        let pool = CoinbaseOutput {
            value: 312_500_000,
            script_pubkey: [0x51].to_vec(),
        };
        ServerChannel::extended(
            5,
            [0xaa; 4].to_vec(),
            4,
            target_with_zero_bits(8),
            VERSION_ROLLING_MASK,
            [pool].to_vec(),
        )
        .with_dedup_budget(4)
    }

    /// The first nonce whose share (at the tip's `min_ntime`) meets `bits` leading zero bits.
    fn mine(c: &ServerChannel, job: &Job, extranonce: &[u8], version: u32, bits: u32) -> u32 {
        mine_at(
            c,
            job,
            extranonce,
            version,
            bits,
            c.chain_tip().unwrap().min_ntime,
        )
    }

    /// The first nonce whose share at `ntime` meets `bits` leading zero bits.
    fn mine_at(
        c: &ServerChannel,
        job: &Job,
        extranonce: &[u8],
        version: u32,
        bits: u32,
        ntime: u32,
    ) -> u32 {
        let t = c.chain_tip().unwrap();
        let coinbase = job.coinbase(&[&c.extranonce_prefix, extranonce]);
        let root = merkle_root(sha256d(&coinbase), job.merkle_path.iter());
        (0u32..)
            .find(|&n| {
                let h = sha256d(&header(version, &t.prev_hash, &root, ntime, t.nbits, n));
                meets_target(&h, &target_with_zero_bits(bits))
            })
            .unwrap()
    }

    fn share(job_id: u32, nonce: u32, version: u32, extranonce: &[u8]) -> Share<'_> {
        Share {
            job_id,
            nonce,
            ntime: 1_700_000_000,
            version,
            extranonce,
        }
    }

    #[test]
    fn coinbase_parses_and_keeps_the_template_value_and_commitment() {
        let t = template(1, true);
        let (prefix, suffix) = coinbase_parts(&t, &channel().pool_outputs, 8).unwrap();
        // version, one input, null prevout, script length = 4 (height) + 8 (extranonce).
        assert_eq!(&prefix[..5], &[2, 0, 0, 0, 1]);
        assert_eq!(prefix[41], 12);
        assert_eq!(&prefix[42..], &[0x03, 0x40, 0xd1, 0x0c]);
        // sequence, 2 outputs: the pool's (all the value), then the commitment.
        assert_eq!(&suffix[..5], &[0xff, 0xff, 0xff, 0xff, 2]);
        assert_eq!(&suffix[5..13], &312_500_000u64.to_le_bytes());
        assert!(
            suffix
                .windows(6)
                .any(|w| w == [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed])
        );
        let too_much = [CoinbaseOutput {
            value: 312_500_001,
            script_pubkey: [0x51].to_vec(),
        }];
        assert!(matches!(
            coinbase_parts(&t, &too_much, 8),
            Err(JobError::OutputsExceedValue { .. })
        ));
        assert_eq!(
            coinbase_parts(&t, &[], 97),
            Err(JobError::ScriptSigTooLong(101))
        );
    }

    /// A job built by one channel and installed in another with the same pool outputs and
    /// extranonce length is the other's own: activated by its template's `SetNewPrevHash`,
    /// shares on it checked, its bytes shared rather than copied.
    #[test]
    fn a_job_installed_from_another_channel_is_activated_and_checked() {
        let mut builder = channel();
        let job = builder.on_new_template(&template(3, true)).unwrap();
        let mut other = ServerChannel::extended(
            6,
            [0xbb; 4].to_vec(),
            4,
            target_with_zero_bits(8),
            VERSION_ROLLING_MASK,
            channel().pool_outputs,
        );
        assert_eq!(other.extranonce_len(), builder.extranonce_len());
        other.install_future_job(job.clone());
        assert!(
            other.job(job.job_id).is_none(),
            "future until its prev-hash"
        );
        let prev = other.on_set_new_prev_hash(&tip(3, 255)).unwrap();
        assert_eq!((prev.channel_id, prev.job_id), (6, job.job_id));
        let active = other.job(job.job_id).unwrap();
        assert!(Arc::ptr_eq(&active.coinbase_prefix, &job.coinbase_prefix));
        assert!(Arc::ptr_eq(&active.merkle_path, &job.merkle_path));
        // Its merkle root is the other channel's (its own extranonce prefix).
        let en = [5u8, 6, 7, 8];
        let v = 0x2000_0000;
        let nonce = mine(&other, &job, &en, v, 8);
        assert!(matches!(
            other.validate_share(&share(job.job_id, nonce, v, &en)),
            Ok(ShareOk::Valid { .. })
        ));
        // Later ids continue after the installed one.
        let next = other.on_new_template(&template(4, false)).unwrap();
        assert!(next.job_id > job.job_id);
    }

    /// A tip set directly does what the Template Distribution `SetNewPrevHash` of the same
    /// values does: the same `SetNewPrevHash` for the channel, the same active job.
    #[test]
    fn a_tip_set_directly_activates_the_future_job() {
        let tdp = tip(1, 255);
        let direct = ChainTip {
            template_id: 1,
            prev_hash: tdp.prev_hash.0,
            min_ntime: tdp.header_timestamp,
            nbits: tdp.n_bits,
            network_target: tdp.target,
        };
        let (mut a, mut b) = (channel(), channel());
        let job = a.on_new_template(&template(1, true)).unwrap();
        b.on_new_template(&template(1, true)).unwrap();
        let sent = a.set_chain_tip(direct).unwrap();
        assert_eq!(Some(sent.clone()), b.on_set_new_prev_hash(&tdp));
        assert_eq!((sent.channel_id, sent.job_id), (5, job.job_id));
        assert_eq!((sent.min_ntime, sent.nbits), (1_700_000_000, 0x1703_0000));
        assert_eq!(a.chain_tip(), Some(&direct));
        assert_eq!(a.job(job.job_id), Some(&job));
        // A tip of another template: nothing to send, no job active, the old one stale.
        assert_eq!(
            a.set_chain_tip(ChainTip {
                template_id: 2,
                ..direct
            }),
            None
        );
        assert!(a.job(job.job_id).is_none());
    }

    /// `Share::from` either `SubmitShares` message (or the borrowed view of one) checks as
    /// the fields written out do.
    #[test]
    fn shares_from_the_submit_messages() {
        let mut c = channel();
        let job = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255)).unwrap();
        let (v, en) = (0x2000_0000, [3u8; 4]);
        let nonce = mine(&c, &job, &en, v, 8);
        let submit = SubmitSharesExtended {
            channel_id: 5,
            sequence_number: 9,
            job_id: job.job_id,
            nonce,
            ntime: 1_700_000_000,
            version: v,
            extranonce: sv2c_binary::B032::try_from(&en[..]).unwrap(),
        };
        assert_eq!(Share::from(&submit), share(job.job_id, nonce, v, &en));
        let bytes = sv2c_binary::Encode::encode_to_vec(&submit);
        let view: SubmitSharesExtendedRef<'_> = sv2c_binary::from_bytes_ref(&bytes).unwrap();
        assert_eq!(Share::from(&view), Share::from(&submit));
        assert!(c.validate_share(&Share::from(&view)).is_ok());
        let standard = SubmitSharesStandard {
            channel_id: 5,
            sequence_number: 10,
            job_id: job.job_id,
            nonce,
            ntime: 1_700_000_000,
            version: v,
        };
        assert_eq!(Share::from(&standard), share(job.job_id, nonce, v, &[]));
        assert_eq!(
            c.validate_share(&Share::from(&standard)),
            Err(ShareError::BadExtranonceSize {
                got: 0,
                expected: 4
            })
        );
    }

    #[test]
    fn every_verdict() {
        let mut c = channel();
        let en = [1u8, 2, 3, 4];
        assert_eq!(
            c.validate_share(&share(1, 0, 0x2000_0000, &en)),
            Err(ShareError::NoChainTip)
        );
        assert_eq!(
            c.on_new_template(&template(1, false)),
            Err(JobError::NoChainTip)
        );
        let job = c.on_new_template(&template(1, true)).unwrap();
        let announce = c.on_set_new_prev_hash(&tip(1, 255)).unwrap();
        assert_eq!(announce.job_id, job.job_id);
        let v = 0x2000_0000;
        let nonce = mine(&c, &job, &en, v, 8);
        let ok = share(job.job_id, nonce, v, &en);
        assert!(matches!(c.validate_share(&ok), Ok(ShareOk::Valid { .. })));
        assert_eq!(c.validate_share(&ok), Err(ShareError::Duplicate));
        assert_eq!(
            c.validate_share(&share(99, nonce, v, &en)),
            Err(ShareError::UnknownJob)
        );
        assert_eq!(
            c.validate_share(&share(job.job_id, nonce, v, &en[..3])),
            Err(ShareError::BadExtranonceSize {
                got: 3,
                expected: 4
            })
        );
        assert_eq!(
            c.validate_share(&share(job.job_id, nonce, v | 1, &en)),
            Err(ShareError::VersionBitsOutsideMask)
        );
        let rolled = v | 0x0000_e0e0;
        let n2 = mine(&c, &job, &en, rolled, 8);
        assert!(
            c.validate_share(&share(job.job_id, n2, rolled, &en))
                .is_ok()
        );
        // A nonce that misses the channel target.
        let coinbase = job.coinbase(&[&c.extranonce_prefix, &en]);
        let root = merkle_root(sha256d(&coinbase), job.merkle_path.iter());
        let t = *c.chain_tip().unwrap();
        let bad = (0u32..)
            .find(|&n| {
                let h = sha256d(&header(v, &t.prev_hash, &root, t.min_ntime, t.nbits, n));
                !meets_target(&h, c.target())
            })
            .unwrap();
        assert_eq!(
            c.validate_share(&share(job.job_id, bad, v, &en)),
            Err(ShareError::TargetNotMet)
        );
        // A new tip: the old job is stale.
        let job2 = c.on_new_template(&template(2, true)).unwrap();
        c.on_set_new_prev_hash(&tip(2, 1)).unwrap();
        assert_eq!(c.validate_share(&ok), Err(ShareError::Stale));
        // An easy network target (1 zero bit): a share meeting 8 bits is a block. (The
        // tip repeats the prev_hash and job2 the coinbase of job: another extranonce, or
        // the header would be that of `ok`, a duplicate.)
        let en2 = [4u8, 3, 2, 1];
        let n3 = mine(&c, &job2, &en2, v, 8);
        match c.validate_share(&share(job2.job_id, n3, v, &en2)) {
            Ok(ShareOk::BlockFound {
                header, coinbase, ..
            }) => {
                assert_eq!(&header[4..36], &[9; 32]);
                assert_eq!(coinbase, job2.coinbase(&[&[0xaa; 4], &en2]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(ShareError::Stale.code(), "stale-share");
    }

    /// The window is `1_700_000_000 ..= 1_700_000_000 + 7200` (the tip's
    /// `header_timestamp`, two hours): every share below meets the channel target, so only
    /// its `ntime` decides.
    #[test]
    fn ntime_must_lie_between_min_ntime_and_two_hours_ahead() {
        let mut c = channel();
        let job = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255)).unwrap();
        let (v, en) = (0x2000_0000, [7u8; 4]);
        let at = |c: &mut ServerChannel, ntime: u32| {
            let nonce = mine_at(c, &job, &en, v, 8, ntime);
            c.validate_share(&Share {
                job_id: job.job_id,
                nonce,
                ntime,
                version: v,
                extranonce: &en,
            })
        };
        assert!(at(&mut c, 1_700_000_000).is_ok());
        assert!(at(&mut c, 1_700_007_200).is_ok());
        assert!(at(&mut c, 1_700_003_000).is_ok());
        let early = at(&mut c, 1_699_999_999);
        assert_eq!(
            early,
            Err(ShareError::NtimeTooEarly {
                ntime: 1_699_999_999,
                min_ntime: 1_700_000_000
            })
        );
        assert_eq!(early.unwrap_err().code(), "invalid-share");
        assert!(matches!(
            at(&mut c, 0),
            Err(ShareError::NtimeTooEarly { .. })
        ));
        let late = at(&mut c, 1_700_007_201);
        assert_eq!(
            late,
            Err(ShareError::NtimeTooLate {
                ntime: 1_700_007_201,
                max_ntime: 1_700_007_200
            })
        );
        assert_eq!(late.unwrap_err().code(), "invalid-share");
        assert!(matches!(
            at(&mut c, u32::MAX),
            Err(ShareError::NtimeTooLate { .. })
        ));
        // A narrower window.
        let mut c = c.with_max_ntime_ahead(60);
        assert!(at(&mut c, 1_700_000_060).is_ok());
        assert!(matches!(
            at(&mut c, 1_700_000_061),
            Err(ShareError::NtimeTooLate { .. })
        ));
        // A job with its own min_ntime (as a custom job has) is bounded by it, not the tip's.
        let own = Job {
            job_id: 50,
            min_ntime: Some(1_700_000_500),
            ..job.clone()
        };
        c.install_active_job(own.clone());
        let nonce = mine_at(&c, &own, &en, v, 8, 1_700_000_400);
        assert_eq!(
            c.validate_share(&Share {
                job_id: 50,
                nonce,
                ntime: 1_700_000_400,
                version: v,
                extranonce: &en,
            }),
            Err(ShareError::NtimeTooEarly {
                ntime: 1_700_000_400,
                min_ntime: 1_700_000_500
            })
        );
        let msg = c.extended_job_message(&own, false).unwrap();
        assert_eq!(msg.min_ntime, Some(1_700_000_500));
    }

    /// Two tips with one `prev_hash` and two jobs from one template: the same header, so
    /// a share accepted on the first job is a duplicate on the second; a new `prev_hash`
    /// starts afresh.
    #[test]
    fn dedup_spans_tips_that_repeat_the_prev_hash() {
        let mut c = channel();
        let job1 = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255)).unwrap();
        let (v, en) = (0x2000_0000, [5u8; 4]);
        let nonce = mine(&c, &job1, &en, v, 8);
        assert!(c.validate_share(&share(job1.job_id, nonce, v, &en)).is_ok());
        let job2 = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255)).unwrap();
        assert_eq!(
            (job2.coinbase_prefix == job1.coinbase_prefix, job2.job_id),
            (true, job1.job_id + 1)
        );
        assert_eq!(
            c.validate_share(&share(job2.job_id, nonce, v, &en)),
            Err(ShareError::Duplicate)
        );
        let job3 = c.on_new_template(&template(1, true)).unwrap();
        let mut other = tip(1, 255);
        other.prev_hash = U256([7; 32]);
        c.on_set_new_prev_hash(&other).unwrap();
        let n3 = mine(&c, &job3, &en, v, 8);
        assert!(c.validate_share(&share(job3.job_id, n3, v, &en)).is_ok());
    }

    /// A standard channel reuses a job's merkle root between shares: shares that alternate
    /// between two jobs are each checked against their own job's root.
    #[test]
    fn standard_shares_alternating_between_jobs_use_their_own_root() {
        let pool = channel().pool_outputs;
        let target = target_with_zero_bits(8);
        let mut c = ServerChannel::standard(6, [0xbb; 8].to_vec(), target, 0, pool);
        let job1 = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255));
        let mut second = template(2, false);
        second.merkle_path = Seq0255::from_slice(&[U256([3; 32])]).unwrap();
        let job2 = c.on_new_template(&second).unwrap();
        let t = *c.chain_tip().unwrap();
        let v = 0x2000_0000;
        let hash = |root: &[u8; 32], n: u32| {
            sha256d(&header(v, &t.prev_hash, root, t.min_ntime, t.nbits, n))
        };
        // The first nonce from `skip` meeting the target with the root the miner was sent
        // for `job`, and the header's hash.
        let mined = |c: &ServerChannel, job: &Job, skip: u32| {
            let root = c.standard_job_message(job, false).merkle_root.0;
            let n = (skip..)
                .find(|&n| meets_target(&hash(&root, n), &target))
                .unwrap();
            (n, hash(&root, n))
        };
        let mut next = 0;
        for job in [&job1, &job2, &job1, &job1, &job2] {
            let (nonce, hash) = mined(&c, job, next);
            next = nonce + 1;
            assert_eq!(
                c.validate_share(&share(job.job_id, nonce, v, &[])),
                Ok(ShareOk::Valid { hash }),
                "job {}",
                job.job_id
            );
        }
        // A nonce found with job 2's root, sent for job 1 (whose root is not the cached
        // one), misses the target (checked on a copy of the header: it would pass with
        // job 1's root only by chance).
        let (nonce, _) = mined(&c, &job2, next);
        let root1 = c.standard_job_message(&job1, false).merkle_root.0;
        if !meets_target(&hash(&root1, nonce), &target) {
            assert_eq!(
                c.validate_share(&share(job1.job_id, nonce, v, &[])),
                Err(ShareError::TargetNotMet)
            );
        }
    }

    #[test]
    fn dedup_remembers_at_least_the_budget_and_forgets_older_generations() {
        let mut c = channel(); // budget 4
        let job = c.on_new_template(&template(1, true)).unwrap();
        c.on_set_new_prev_hash(&tip(1, 255));
        let v = 0x2000_0000;
        let shares: Vec<[u8; 4]> = (0u8..10).map(|i| [i, 0, 0, 0]).collect();
        let nonces: Vec<u32> = shares.iter().map(|e| mine(&c, &job, e, v, 8)).collect();
        let submit = |c: &mut ServerChannel, i: usize| {
            c.validate_share(&share(job.job_id, nonces[i], v, &shares[i]))
        };
        for i in 0..9 {
            assert!(submit(&mut c, i).is_ok(), "share {i}");
            // The last four (or all so far) are always remembered.
            for j in i.saturating_sub(3)..=i {
                assert_eq!(
                    submit(&mut c, j),
                    Err(ShareError::Duplicate),
                    "{j} after {i}"
                );
            }
        }
        // Shares 0-3 were forgotten when 4-7 filled the newer generation; 4-8 are kept.
        assert!(submit(&mut c, 0).is_ok());
        for i in 4..9 {
            assert_eq!(submit(&mut c, i), Err(ShareError::Duplicate), "share {i}");
        }
    }

    #[test]
    fn allocator_hands_out_distinct_prefixes_and_reuses_released_ones() {
        let mut a = ExtranoncePrefixAllocator::new([0xee].to_vec(), 1);
        let all: BTreeSet<Vec<u8>> = (0..256).map(|_| a.allocate().unwrap()).collect();
        assert_eq!(all.len(), 256);
        assert_eq!(a.allocate(), Err(PrefixesExhausted));
        a.release(&[0xee, 0x10]);
        assert_eq!(a.allocate().unwrap(), [0xee, 0x10]);
        assert_eq!(a.prefix_len(), 2);
    }

    /// Once every prefix is back, in any order, the allocator holds no free list (and
    /// starts again from the first prefix); in between, prefixes in use stay distinct.
    #[test]
    fn allocator_keeps_no_free_list_once_every_prefix_is_back() {
        let mut a = ExtranoncePrefixAllocator::new(Vec::new(), 2);
        let mut held: Vec<Vec<u8>> = (0..1000).map(|_| a.allocate().unwrap()).collect();
        // Released in an order that is neither ascending nor descending.
        held.sort_by_key(|p| (u32::from(u16::from_be_bytes([p[0], p[1]])) * 7919) % 1000);
        for p in held.drain(..500) {
            a.release(&p);
        }
        let again: Vec<Vec<u8>> = (0..300).map(|_| a.allocate().unwrap()).collect();
        let in_use: BTreeSet<&Vec<u8>> = held.iter().chain(&again).collect();
        assert_eq!(in_use.len(), 800, "no prefix handed out twice");
        for p in held.iter().chain(&again) {
            a.release(p);
        }
        assert!(a.free.is_empty(), "{} free values kept", a.free.len());
        assert_eq!(a.next, 0);
        assert_eq!(a.allocate().unwrap(), [0, 0]);
    }
}
