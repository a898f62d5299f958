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
//! * [`server`]: server-side standard and extended channels: jobs from
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
//! # A pool's share path, step by step
//! A template becomes a job on a channel, a chain tip activates it, a miner's share is
//! checked against it, and the verdicts become the answers the pool sends. Nothing here
//! opens a socket: a server feeds these calls what it reads and sends what they return
//! (the workspace's `pool_in_100_lines` example does that over TCP).
//!
//! ```
//! use sv2c_binary::messages::{NewTemplate, SubmitSharesStandard};
//! use sv2c_binary::{B064K, B0255, Seq0255, U256};
//! use sv2c_channels::acks::{Acks, ShareAnswer};
//! use sv2c_channels::pow::{self, header, merkle_path, merkle_root, sha256d};
//! use sv2c_channels::server::{ChainTip, CoinbaseOutput, ServerChannel, Share, coinbase_parts};
//!
//! // 1. A template, as a Template Provider sends it (`NewTemplate`; made by hand here):
//! //    block 840,000 (its BIP 34 height push), 3.125 BTC to pay out, and the block's
//! //    other transactions, summarised by the coinbase's merkle path.
//! let txids = [[0x11; 32], [0x22; 32], [0x33; 32]];
//! let path: Vec<U256> = merkle_path(&txids).into_iter().map(U256).collect();
//! let template = NewTemplate {
//!     template_id: 1,
//!     future_template: true, // mined once its chain tip arrives
//!     version: 0x2000_0000,
//!     coinbase_tx_version: 2,
//!     coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c][..]).unwrap(),
//!     coinbase_tx_input_sequence: u32::MAX,
//!     coinbase_tx_value_remaining: 312_500_000,
//!     coinbase_tx_outputs_count: 0,
//!     coinbase_tx_outputs: B064K::default(),
//!     coinbase_tx_locktime: 0,
//!     merkle_path: Seq0255::from_slice(&path).unwrap(),
//! };
//!
//! // 2. The pool's payout (an example script) and a standard channel: its extranonce is
//! //    the 4-byte prefix the pool gave it; its target is easy (4 zero bits: about one
//! //    hash in 16 is a share).
//! let payout = CoinbaseOutput { value: 312_500_000, script_pubkey: vec![0x51] };
//! let prefix = vec![0, 0, 0, 1];
//! let target = pow::target_with_zero_bits(4);
//! let mut channel = ServerChannel::standard(1, prefix.clone(), target, 0, vec![payout.clone()]);
//!
//! // Looking for the coinbase? `coinbase_parts` is the job's coinbase split around the
//! // extranonce: prefix | extranonce | suffix, serialised without witness.
//! let (head, tail) = coinbase_parts(&template, &[payout], prefix.len()).unwrap();
//! let coinbase = [&head[..], &prefix, &tail].concat();
//!
//! // 3. The job, and the message that announces it (a future job: no `min_ntime`).
//! let job = channel.on_new_template(&template).unwrap();
//! let new_job = channel.standard_job_message(&job, true);
//! assert_eq!(new_job.min_ntime, None);
//! assert_eq!(new_job.merkle_root.0, merkle_root(sha256d(&coinbase), &merkle_path(&txids)));
//!
//! // 4. The chain tip (a Template Provider's `SetNewPrevHash` would give it too:
//! //    `on_set_new_prev_hash`). It activates the job; the pool sends `prev`.
//! let nbits = 0x1703_4219;
//! let prev = channel
//!     .set_chain_tip(ChainTip {
//!         template_id: 1,
//!         prev_hash: [0x44; 32],
//!         min_ntime: 1_700_000_000,
//!         nbits,
//!         network_target: pow::target_from_nbits(nbits).unwrap(),
//!     })
//!     .unwrap();
//! assert_eq!((prev.channel_id, prev.job_id), (1, job.job_id));
//!
//! // 5. The miner hashes headers from the two messages and sends what meets the target.
//! let hash = |nonce| {
//!     let h = header(new_job.version, &prev.prev_hash.0, &new_job.merkle_root.0,
//!                    prev.min_ntime, prev.nbits, nonce);
//!     sha256d(&h)
//! };
//! let mut nonces = (0u32..).filter(|&n| pow::meets_target(&hash(n), &target));
//! let submit = |sequence_number, nonce| SubmitSharesStandard {
//!     channel_id: 1,
//!     sequence_number,
//!     job_id: new_job.job_id,
//!     nonce,
//!     ntime: prev.min_ntime,
//!     version: new_job.version,
//! };
//! let (first, second) = (nonces.next().unwrap(), nonces.next().unwrap());
//! // One read's shares: two good ones, then the first again.
//! let read = [submit(0, first), submit(1, second), submit(2, first)];
//!
//! // 6. Each share checked, each verdict handed to the coalescer, with the share's work.
//! let work = pow::target_to_difficulty(channel.target());
//! let mut acks = Acks::new();
//! for share in &read {
//!     match channel.validate_share(&Share::from(share)) {
//!         // `ShareOk::BlockFound` carries the header and coinbase to submit the block.
//!         Ok(_) => acks.accepted((), share.channel_id, share.sequence_number, work),
//!         Err(e) => acks.refused((), share.channel_id, share.sequence_number, e.code()),
//!     }
//! }
//!
//! // 7. The answers, in order: one `SubmitShares.Success` for shares 0 and 1, one
//! //    `SubmitShares.Error` for the duplicate.
//! let answers: Vec<ShareAnswer> = acks.drain().map(|((), a)| a).collect();
//! let [ShareAnswer::Success(ok), ShareAnswer::Error(dup)] = &answers[..] else {
//!     panic!("{answers:?}")
//! };
//! assert_eq!((ok.last_sequence_number, ok.new_submits_accepted_count), (1, 2));
//! assert_eq!((dup.sequence_number, dup.error_code.as_bytes()), (2, &b"duplicate-share"[..]));
//! ```
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
