//! The `channels_ops` check: arbitrary bytes drive a server channel through templates,
//! chain tips, custom jobs, target changes and shares, most of them well-formed enough to
//! be accepted (the channel target starts at all `ff`, which every hash meets).
//!
//! Input format: a header of three bytes, then operations of one byte `op` followed by the
//! bytes the operation reads (the input ends early: missing bytes read as zero).
//!
//! * header: `kind` (bits 0-1 both 0: a standard channel, else an extended one;
//!   `kind >> 2` % 9: the extended channel's rollable extranonce bytes), `prefix` (% 9:
//!   extranonce prefix bytes), `mask` (bit 0: version rolling allowed).
//! * `op % 16`: 0-1 a template, 2 a chain tip, 3-8 a share for a recent job, 9 the
//!   resubmission of an accepted share, 10-11 a custom job, 12 a target, 13 a job
//!   installed from elsewhere, 14-15 an extranonce prefix allocated or released. At most
//!   [`MAX_OPS`] operations run.
//!
//! Checked: nothing panics; every refusal has a known error code; a share is accepted at
//! most once while the chain tip keeps its `prev_hash` (the dedup budget exceeds the
//! number of shares an input can submit); an accepted share named a job the channel
//! holds, had the granted extranonce size and an `ntime` in its job's window, and hashes
//! to what its header gives; an accepted custom job is held by the channel; no extranonce
//! prefix is handed out twice while in use; the counts
//! add up (every share is accepted or refused, every acceptance is a new share).
//!
//! Included with `#[path]` by `tests/ops_smoke.rs` and by the fuzz target, so its `pub`
//! items are reached from outside this crate's tests.
#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};

use sv2c_binary::messages::{NewTemplate, SetCustomMiningJob, SetNewPrevHashTdp};
use sv2c_binary::{B064K, B0255, Seq0255, U256};
use sv2c_channels::pow::{header, merkle_root, sha256d, target_with_zero_bits};
use sv2c_channels::server::{
    CoinbaseOutput, ExtranoncePrefixAllocator, Job, MAX_NTIME_AHEAD, ServerChannel, Share, ShareOk,
    VERSION_ROLLING_MASK,
};

/// Operations run per input, at most.
pub const MAX_OPS: usize = 1024;

/// The `min_ntime` of the first chain tips: later ones add a byte's worth of seconds.
const BASE_NTIME: u32 = 1_700_000_000;

/// Every error code a refused share may carry.
const SHARE_CODES: &[&str] = &[
    "invalid-job-id",
    "stale-share",
    "bad-extranonce-size",
    "invalid-non-rollable-version-bit",
    "difficulty-too-low",
    "duplicate-share",
    "invalid-share",
];

/// Every error code a refused custom job may carry.
const CUSTOM_CODES: &[&str] = &[
    "invalid-channel-id",
    "invalid-mining-job-token",
    "stale-chain-tip",
    "invalid-nbits",
    "invalid-min-ntime",
    "invalid-version",
    "invalid-coinbase-prefix",
    "invalid-coinbase-tx-outputs",
    "invalid-merkle-path",
    "invalid-coinbase-tx",
];

/// What one or more inputs did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Shares submitted (new ones and resubmissions).
    pub shares: u64,
    /// Shares accepted as meeting the channel target only.
    pub valid: u64,
    /// Shares accepted as blocks.
    pub blocks: u64,
    /// Of the accepted shares, those for a custom job.
    pub custom_job_shares: u64,
    /// Refused shares, by error code.
    pub refused: BTreeMap<&'static str, u64>,
    /// Custom jobs accepted.
    pub custom_ok: u64,
    /// Custom jobs refused, by error code.
    pub custom_refused: BTreeMap<&'static str, u64>,
    /// Templates that gave a job / that did not.
    pub templates: (u64, u64),
}

impl Counts {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Counts) {
        self.shares += other.shares;
        self.valid += other.valid;
        self.blocks += other.blocks;
        self.custom_job_shares += other.custom_job_shares;
        for (k, v) in &other.refused {
            *self.refused.entry(k).or_default() += v;
        }
        self.custom_ok += other.custom_ok;
        for (k, v) in &other.custom_refused {
            *self.custom_refused.entry(k).or_default() += v;
        }
        self.templates.0 += other.templates.0;
        self.templates.1 += other.templates.1;
    }

    /// Shares refused, all codes.
    pub fn refused_total(&self) -> u64 {
        self.refused.values().sum()
    }
}

/// Reads values from the input, zeros once it is used up.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = usize::from(self.u8()) % (max + 1);
        (0..n).map(|_| self.u8()).collect()
    }
    fn hash(&mut self) -> [u8; 32] {
        // One byte spread over 32: hashes repeat often, as prev hashes do.
        [self.u8(); 32]
    }
}

/// A coinbase prefix: a BIP 34 height push, then up to 8 bytes (one time in 8: something
/// else instead, which custom jobs refuse).
fn coinbase_prefix(b: &mut Input<'_>) -> Vec<u8> {
    let sel = b.u8();
    let mut p = if sel & 0xe0 != 0xe0 {
        vec![0x03, 0x40, 0xd1, sel & 0x0f]
    } else {
        b.bytes(4)
    };
    p.extend(b.bytes(8));
    p
}

/// Serialised outputs without their count, and the count: one to three outputs of a few
/// bytes of script, or (one time in 8) garbage.
fn outputs(b: &mut Input<'_>) -> (u32, Vec<u8>) {
    let sel = b.u8();
    if sel & 0xe0 == 0xe0 {
        return (u32::from(sel & 3), b.bytes(16));
    }
    let n = 1 + sel % 3;
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend_from_slice(&u64::from(b.u8()).to_le_bytes());
        let script = b.bytes(8);
        out.push(script.len() as u8);
        out.extend_from_slice(&script);
    }
    (u32::from(n), out)
}

/// Runs one input; panics if an invariant breaks. Returns what happened.
pub fn check_input(data: &[u8]) -> Counts {
    let mut b = Input(data);
    let kind = b.u8();
    let prefix_len = usize::from(b.u8() % 9);
    let mask = if b.u8() & 1 == 1 {
        VERSION_ROLLING_MASK
    } else {
        0
    };
    let rollable = usize::from(kind >> 2) % 9;
    let pool = vec![CoinbaseOutput {
        value: 1,
        script_pubkey: vec![0x51],
    }];
    let prefix: Vec<u8> = (0..prefix_len as u8).collect();
    let mut channel = if kind & 3 == 0 {
        ServerChannel::standard(1, prefix.clone(), U256([0xff; 32]), mask, pool)
    } else {
        ServerChannel::extended(1, prefix.clone(), rollable, U256([0xff; 32]), mask, pool)
    }
    .with_dedup_budget(4 * MAX_OPS);
    let granted = if channel.is_standard() { 0 } else { rollable };
    let mut allocator = ExtranoncePrefixAllocator::new(vec![0xee], usize::from(kind % 2) + 1);
    let mut live_prefixes: BTreeSet<Vec<u8>> = BTreeSet::new();

    let mut counts = Counts::default();
    // Job ids issued, newest last (templates, custom jobs, installed jobs).
    let mut issued: Vec<u32> = Vec::new();
    let mut custom_ids: BTreeSet<u32> = BTreeSet::new();
    // Accepted shares of the current prev_hash: (job_id, nonce, ntime, version, extranonce).
    type Accepted = (u32, u32, u32, u32, Vec<u8>);
    let mut accepted: Vec<Accepted> = Vec::new();
    let mut accepted_hashes: BTreeSet<[u8; 32]> = BTreeSet::new();

    for _ in 0..MAX_OPS {
        if b.0.is_empty() {
            break;
        }
        let op = match b.u8() % 16 {
            0 | 1 => 0,
            2 => 1,
            3..=8 => 2,
            9 => 4,
            10 | 11 => 5,
            12 => 6,
            13 => 7,
            _ => 8,
        };
        match op {
            0 => {
                let path: Vec<U256> = (0..b.u8() % 4).map(|_| U256(b.hash())).collect();
                let (count, outs) = outputs(&mut b);
                let t = NewTemplate {
                    template_id: u64::from(b.u8() % 4),
                    future_template: b.u8() % 2 == 0,
                    version: 0x2000_0000 | (b.u32() & 0x1fff_ffff),
                    coinbase_tx_version: 2,
                    coinbase_prefix: B0255::try_from(coinbase_prefix(&mut b)).unwrap(),
                    coinbase_tx_input_sequence: u32::MAX,
                    coinbase_tx_value_remaining: u64::from(b.u8()),
                    coinbase_tx_outputs_count: count,
                    coinbase_tx_outputs: B064K::try_from(outs).unwrap(),
                    coinbase_tx_locktime: 0,
                    merkle_path: Seq0255::from_slice(&path).unwrap(),
                };
                match channel.on_new_template(&t) {
                    Ok(job) => {
                        counts.templates.0 += 1;
                        channel
                            .extended_job_message(&job, t.future_template)
                            .unwrap();
                        channel.standard_job_message(&job, t.future_template);
                        issued.push(job.job_id);
                    }
                    Err(_) => counts.templates.1 += 1,
                }
            }
            1 => {
                let prev_hash = b.hash();
                let network_bits = match b.u8() % 4 {
                    0 => 0,  // every share is a block
                    1 => 4,  // one in 16
                    _ => 64, // none
                };
                let tip = SetNewPrevHashTdp {
                    template_id: u64::from(b.u8() % 4),
                    prev_hash: U256(prev_hash),
                    header_timestamp: BASE_NTIME + u32::from(b.u8()),
                    n_bits: 0x1d00_ffff,
                    target: target_with_zero_bits(network_bits),
                };
                if channel.chain_tip().map(|t| t.prev_hash) != Some(prev_hash) {
                    accepted.clear();
                    accepted_hashes.clear();
                }
                if let Some(m) = channel.on_set_new_prev_hash(&tip) {
                    assert_eq!(m.prev_hash.0, prev_hash);
                    assert!(channel.job(m.job_id).is_some());
                }
            }
            2 => {
                let pick = usize::from(b.u8());
                let job_id = match issued.len() {
                    0 => u32::from(b.u8()),
                    n if pick < 224 => issued[n - 1 - pick % n.min(8)],
                    _ => u32::from(b.u8()),
                };
                let held = channel.job(job_id).cloned();
                let min_ntime = held
                    .as_ref()
                    .and_then(|j| j.min_ntime)
                    .or(channel.chain_tip().map(|t| t.min_ntime))
                    .unwrap_or(BASE_NTIME);
                let sel = b.u8();
                let ntime = match sel % 16 {
                    0 => min_ntime.wrapping_sub(1 + u32::from(b.u8())),
                    1 => min_ntime.wrapping_add(MAX_NTIME_AHEAD + 1 + u32::from(b.u8())),
                    2 => min_ntime.wrapping_add(MAX_NTIME_AHEAD),
                    _ => min_ntime.wrapping_add(u32::from(b.u8())),
                };
                let base_version = held.as_ref().map_or(0x2000_0000, |j| j.version);
                let version = match b.u8() % 8 {
                    0 => base_version ^ (1 << (b.u8() % 32)),
                    1 | 2 => base_version ^ (b.u32() & VERSION_ROLLING_MASK),
                    _ => base_version,
                };
                let extranonce: Vec<u8> = match sel >> 6 {
                    0 if granted > 0 => vec![b.u8(); granted - 1],
                    1 => vec![b.u8(); granted + 1],
                    _ => (0..granted).map(|_| b.u8()).collect(),
                };
                let share = Share {
                    job_id,
                    nonce: b.u32(),
                    ntime,
                    version,
                    extranonce: &extranonce,
                };
                submit(
                    &mut channel,
                    &share,
                    held.as_ref(),
                    &prefix,
                    granted,
                    &custom_ids,
                    &mut accepted,
                    &mut accepted_hashes,
                    &mut counts,
                );
            }
            4 => {
                if accepted.is_empty() {
                    continue;
                }
                let (job_id, nonce, ntime, version, extranonce) =
                    accepted[usize::from(b.u8()) % accepted.len()].clone();
                let share = Share {
                    job_id,
                    nonce,
                    ntime,
                    version,
                    extranonce: &extranonce,
                };
                let held = channel.job(job_id).cloned();
                submit(
                    &mut channel,
                    &share,
                    held.as_ref(),
                    &prefix,
                    granted,
                    &custom_ids,
                    &mut accepted,
                    &mut accepted_hashes,
                    &mut counts,
                );
            }
            5 => {
                let tip = channel.chain_tip().copied();
                // At most one of the fields below is made wrong (`fault` 0 to 5), the
                // prefix, outputs and merkle path by their own bytes.
                let fault = b.u8() % 16;
                // The outputs with their count in front, as the message carries them.
                let (count, outs) = outputs(&mut b);
                let outs = [&[count as u8][..], &outs].concat();
                let m = SetCustomMiningJob {
                    channel_id: if fault == 0 { 2 } else { 1 },
                    request_id: b.u32(),
                    token: B0255::try_from(vec![u8::from(fault != 1)]).unwrap(),
                    version: if fault == 2 {
                        b.u32() & 0xdfff_ffff
                    } else {
                        0x2000_0000 | (b.u32() & 0x1fff_ffff)
                    },
                    prev_hash: U256(match (fault, tip) {
                        (3, _) | (_, None) => b.hash(),
                        (_, Some(t)) => t.prev_hash,
                    }),
                    min_ntime: tip.map_or(BASE_NTIME, |t| t.min_ntime)
                        + u32::from(b.u8()) * if fault == 4 { 64 } else { 1 },
                    nbits: match (fault, tip) {
                        (5, _) | (_, None) => b.u32(),
                        (_, Some(t)) => t.nbits,
                    },
                    coinbase_tx_version: 2,
                    coinbase_prefix: B0255::try_from(coinbase_prefix(&mut b)).unwrap(),
                    coinbase_tx_input_n_sequence: b.u32(),
                    coinbase_tx_outputs: B064K::try_from(outs).unwrap(),
                    coinbase_tx_locktime: 0,
                    merkle_path: Seq0255::from_slice(
                        &(0..b.u8() % 18).map(|_| U256(b.hash())).collect::<Vec<_>>(),
                    )
                    .unwrap(),
                };
                // The token check: tokens ending in 0 are refused.
                match channel.on_set_custom_mining_job(&m, |t| t.last() == Some(&1)) {
                    Ok(ok) => {
                        assert_eq!((ok.channel_id, ok.request_id), (1, m.request_id));
                        let job = channel.job(ok.job_id).expect("the custom job is held");
                        assert_eq!(job.min_ntime, Some(m.min_ntime));
                        counts.custom_ok += 1;
                        custom_ids.insert(ok.job_id);
                        issued.push(ok.job_id);
                    }
                    Err(e) => {
                        let code = e.code();
                        assert!(CUSTOM_CODES.contains(&code), "{code}");
                        assert_eq!(e.to_message(&m).error_code.as_str(), Ok(code));
                        *counts.custom_refused.entry(code).or_default() += 1;
                    }
                }
            }
            6 => {
                let bits = match b.u8() % 4 {
                    0 => 250,
                    1 => u32::from(b.u8() % 12),
                    _ => 0,
                };
                channel.set_target(target_with_zero_bits(bits));
            }
            8 => {
                if b.u8() % 2 == 0 {
                    if let Ok(p) = allocator.allocate() {
                        assert!(live_prefixes.insert(p), "a prefix handed out twice");
                    }
                } else if let Some(p) = live_prefixes.iter().nth(usize::from(b.u8())).cloned() {
                    allocator.release(&p);
                    live_prefixes.remove(&p);
                }
            }
            _ => {
                if channel.chain_tip().is_none() {
                    continue;
                }
                let job = Job {
                    job_id: 1000 + u32::from(b.u8()),
                    template_id: 0,
                    version: 0x2000_0000,
                    coinbase_prefix: b.bytes(40).into(),
                    coinbase_suffix: b.bytes(40).into(),
                    merkle_path: (0..b.u8() % 3).map(|_| b.hash()).collect(),
                    min_ntime: None,
                };
                issued.push(job.job_id);
                custom_ids.remove(&job.job_id);
                channel.install_active_job(job);
            }
        }
    }
    assert_eq!(
        counts.shares,
        counts.valid + counts.blocks + counts.refused_total()
    );
    counts
}

/// Submits `share` and checks the verdict against what the driver knows.
#[allow(clippy::too_many_arguments)]
fn submit(
    channel: &mut ServerChannel,
    share: &Share<'_>,
    held: Option<&Job>,
    prefix: &[u8],
    granted: usize,
    custom_ids: &BTreeSet<u32>,
    accepted: &mut Vec<(u32, u32, u32, u32, Vec<u8>)>,
    accepted_hashes: &mut BTreeSet<[u8; 32]>,
    counts: &mut Counts,
) {
    counts.shares += 1;
    let tip = channel.chain_tip().copied();
    match channel.validate_share(share) {
        Ok(ok) => {
            let hash = match &ok {
                ShareOk::Valid { hash } => {
                    counts.valid += 1;
                    *hash
                }
                ShareOk::BlockFound { hash, header, .. } => {
                    counts.blocks += 1;
                    assert_eq!(sha256d(header), *hash);
                    *hash
                }
            };
            let job = held.expect("an accepted share names a job the channel holds");
            let tip = tip.expect("an accepted share has a chain tip");
            assert_eq!(share.extranonce.len(), granted);
            let min = job.min_ntime.unwrap_or(tip.min_ntime);
            assert!(share.ntime >= min && share.ntime - min <= MAX_NTIME_AHEAD);
            // The hash of the header the share implies, computed here.
            let coinbase = job.coinbase(&[prefix, share.extranonce]);
            let root = merkle_root(sha256d(&coinbase), job.merkle_path.iter());
            let head = header(
                share.version,
                &tip.prev_hash,
                &root,
                share.ntime,
                tip.nbits,
                share.nonce,
            );
            assert_eq!(sha256d(&head), hash);
            assert!(
                accepted_hashes.insert(hash),
                "a share was accepted twice on one prev_hash"
            );
            if custom_ids.contains(&share.job_id) {
                counts.custom_job_shares += 1;
            }
            accepted.push((
                share.job_id,
                share.nonce,
                share.ntime,
                share.version,
                share.extranonce.to_vec(),
            ));
        }
        Err(e) => {
            let code = e.code();
            assert!(SHARE_CODES.contains(&code), "{code}");
            *counts.refused.entry(code).or_default() += 1;
        }
    }
}
