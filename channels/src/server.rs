//! Server-side channels: jobs built from a template, the chain tip they build on, and
//! share validation with a typed verdict.
//!
//! # Jobs ([`coinbase_parts`], [`ServerChannel::on_new_template`])
//! A job's coinbase is the template's, with the pool's outputs added, split around the
//! extranonce (SV2-WIRE §3, `NewExtendedMiningJob`):
//!
//! ```text
//! prefix: version | 01 | 32 × 00 | ffffffff | script length | template coinbase_prefix
//!         (extranonce: the channel's prefix, then the miner's bytes)
//! suffix: input sequence | output count | pool outputs | template outputs | locktime
//! ```
//!
//! Serialised without witness (the form whose double SHA-256 is the txid; a block found
//! on it is submitted with its witness: [`submit_solution`], [`solution`]). Where the spec
//! leaves a choice, this crate chooses: the scriptSig is the template's `coinbase_prefix`
//! (its BIP 34 height) then the extranonce and nothing else; the pool's outputs come
//! before the template's (which hold the witness commitment, if any).
//!
//! # Share validation ([`ServerChannel::validate_share`])
//! Checks run in this order, and the first that fails is the verdict:
//! no chain tip → job (unknown, or stale: issued by this channel for an earlier tip or
//! dropped from the recent jobs) → extranonce size → `ntime` (below) → version bits
//! outside the rolling mask → block found (header hash at or below the network target,
//! even if the channel target is harder: a block is never refused) → hash above the
//! channel target → duplicate (of a share that passed) → valid.
//!
//! The header's merkle root is that of the coinbase with the share's extranonce. A
//! standard channel's extranonce is its fixed prefix, so its root is the same for every
//! share of a job: it is computed for the first share of a job and reused while the
//! following shares are for the same job.
//!
//! Duplicates are detected among at least the last [`ServerChannel::dedup_budget`]
//! shares that passed every other check since the chain tip's `prev_hash` last changed,
//! and at most twice as many ([`RecentShares`], which a proxy or a server of its own can
//! use as well); older ones are forgotten (a resubmission would be accepted again). A
//! chain tip with a new `prev_hash` empties that memory (one that repeats the
//! `prev_hash`, e.g. with a new `min_ntime`, keeps it: its headers are the same as
//! before, and a job rebuilt from the same template would let a share accepted on the old
//! job be accepted again).
//!
//! # The `ntime` rule
//! A share's `ntime` must lie in `min_ntime ..= min_ntime + max_ntime_ahead`, where
//! `min_ntime` is its job's ([`Job::min_ntime`]: a custom job's own, otherwise the chain
//! tip's, i.e. the `header_timestamp` of the `SetNewPrevHash` the job is mined on) and
//! `max_ntime_ahead` is [`MAX_NTIME_AHEAD`] (2 hours) unless set with
//! [`ServerChannel::with_max_ntime_ahead`]. Outside it the share is refused with
//! [`ShareError::NtimeTooEarly`] or [`ShareError::NtimeTooLate`] (error code
//! `invalid-share`).
//!
//! The lower bound is the spec's (`SubmitShares.ntime` "MUST be greater than or equal to"
//! the latest `SetNewPrevHash.min_ntime`; a job's own `min_ntime` is the smallest time
//! "available for hashing"). The spec's upper bound is `min_ntime` plus the seconds since
//! the `SetNewPrevHash` arrived, which needs a clock; this crate has none, and bounds
//! `ntime` by what Bitcoin consensus allows a block at the moment the tip arrived
//! (`MAX_FUTURE_BLOCK_TIME`, 2 hours ahead). A server with a clock that wants the spec's
//! exact window sets the bound to the seconds elapsed since the tip arrived
//! ([`ServerChannel::set_max_ntime_ahead`]) before it checks a share.
//!
//! # Custom jobs ([`custom`])
//! [`ServerChannel::on_set_custom_mining_job`] checks a `SetCustomMiningJob` on an
//! extended channel and makes its job active next to the template jobs;
//! [`answer_set_custom_mining_job`] also answers for a channel the server does not have.

mod channel;
pub mod custom;
mod recent;
pub mod solution;

pub use channel::{
    BIP320_VERSION_MASK, ChainTip, CoinbaseOutput, ExtranoncePrefixAllocator, Job, JobError,
    MAX_NTIME_AHEAD, MAX_SCRIPT_SIG_LEN, PrefixesExhausted, RECENT_JOBS, ServerChannel, Share,
    ShareError, ShareOk, VERSION_ROLLING_MASK, coinbase_parts,
};
pub use custom::{CustomJobError, MAX_MERKLE_PATH_LEN, answer_set_custom_mining_job};
pub use recent::RecentShares;
pub use solution::{
    CoinbaseError, WITNESS_COMMITMENT_HEADER, WITNESS_RESERVED_VALUE, coinbase_with_witness,
    submit_solution,
};
