//! Stratum V2 channel logic on the [`sv2c_binary`] messages, sans-io: no sockets, no
//! clocks, no tasks. A pool or proxy feeds it messages and acts on what it returns.
//!
//! * [`extensions`]: Extensions Negotiation (0x0001) as a server answers it, and the
//!   per-worker accounting of Worker-Specific Hashrate Tracking (0x0002).
//! * [`tailed`]: a message set that keeps each message's TLV tail, for servers that
//!   read through `Sv2Codec` and need extension 0x0002's `user_identity`.
//! * [`pow`]: double SHA-256, the coinbase's merkle path from a block's txids and the
//!   merkle root from a coinbase and that path, the 80-byte header a share implies,
//!   target comparison, compact `nbits` to target and back, and conversions between
//!   targets, difficulty, expected work and hashrate.
//! * [`server`]: server-side standard, extended and group channels: jobs from
//!   `NewTemplate` and the pool's coinbase outputs, chain tips, share validation with
//!   typed verdicts mapped to the spec's error codes (including the `ntime` window),
//!   custom jobs (`SetCustomMiningJob`), and an extranonce prefix allocator.
//! * [`acks`]: the answers to a read's shares, coalesced: one `SubmitShares.Success` per
//!   run of a channel's accepted shares (`new_shares_sum` = their difficulty), one
//!   `SubmitShares.Error` per refused share, in order.
//! * [`client`]: the client side of an extended channel: jobs, target, the header a
//!   miner hashes and a local share check before forwarding.
//! * [`codes`]: the `error_code` strings, one constant each.
//! * [`vardiff`]: a sans-io difficulty controller with a documented algorithm.
//!
//! `no_std` with `alloc`; the `std` feature (default) only forwards to the dependencies.
//!
//! `channels/diff-tests` (unpublished) checks this crate against SRI's `channels_sv2`
//! 8.0.0: `cargo test -p sv2c-channels-diff -- --nocapture`.

#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

extern crate alloc;

pub mod acks;
pub mod client;
pub mod codes;
pub mod extensions;
pub mod pow;
mod rules;
pub mod server;
pub mod tailed;
pub mod vardiff;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
