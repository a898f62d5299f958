//! Custom jobs (`SetCustomMiningJob`, SV2-WIRE §3.2 0x22): a client that selects its own
//! transactions declares a job on an extended channel, and the channel then accepts
//! shares for it like for any other job.
//!
//! # Checks
//! [`ServerChannel::on_set_custom_mining_job`] checks, in this order, and answers the
//! first failure with its error code (the spec names none; these are the codes SRI
//! answers with, SV2-WIRE Appendix B):
//!
//! | check | error | code |
//! |---|---|---|
//! | the message names this channel, an extended one | [`InvalidChannelId`](CustomJobError::InvalidChannelId) | `invalid-channel-id` |
//! | the caller's check accepts `mining_job_token` | [`InvalidMiningJobToken`](CustomJobError::InvalidMiningJobToken) | `invalid-mining-job-token` |
//! | `prev_hash` is the channel's chain tip's | [`StaleChainTip`](CustomJobError::StaleChainTip) | `stale-chain-tip` |
//! | `nbits` is the chain tip's | [`InvalidNbits`](CustomJobError::InvalidNbits) | `invalid-nbits` |
//! | `min_ntime` is in the tip's window (the channel's [`ntime` rule](super#the-ntime-rule)) | [`InvalidMinNtime`](CustomJobError::InvalidMinNtime) | `invalid-min-ntime` |
//! | `version`'s top three bits are `001` (BIP 9 / BIP 320) | [`InvalidVersion`](CustomJobError::InvalidVersion) | `invalid-version` |
//! | `coinbase_prefix` starts with a BIP 34 height push, and with the extranonce makes a scriptSig of 2 to 100 bytes (consensus) | [`InvalidCoinbasePrefix`](CustomJobError::InvalidCoinbasePrefix) | `invalid-coinbase-prefix` |
//! | `coinbase_tx_outputs` is a CompactSize count of at least one output, then exactly that many outputs, worth at most 21 million BTC | [`InvalidCoinbaseOutputs`](CustomJobError::InvalidCoinbaseOutputs) | `invalid-coinbase-tx-outputs` |
//! | `merkle_path` has at most [`MAX_MERKLE_PATH_LEN`] hashes | [`InvalidMerklePath`](CustomJobError::InvalidMerklePath) | `invalid-merkle-path` |
//! | the coinbase fits `NewExtendedMiningJob` (64 KiB) | [`InvalidCoinbaseTx`](CustomJobError::InvalidCoinbaseTx) | `invalid-coinbase-tx` |
//!
//! What only the job's declaration can tell (that its outputs pay the pool, that its
//! transactions are those declared) is the token's business: the caller's check gets the
//! token and can compare the message with what the Job Declaration Server accepted.
//!
//! The spec's "up to 8 bytes" for `coinbase_prefix` is not enforced: SRI's job declarator
//! client puts a pool tag after the height, and the 100-byte scriptSig is what consensus
//! bounds.
//!
//! # The job
//! Its coinbase is split as a template's (see [the module docs](super)): version, one
//! input with a null prevout, scriptSig = `coinbase_prefix` then the extranonce (the
//! channel's prefix, then the miner's bytes), `coinbase_tx_input_nSequence`,
//! `coinbase_tx_outputs` as sent, `coinbase_tx_locktime`; serialised without witness. It
//! gets the next job id of the channel, [`Job::min_ntime`] `Some(min_ntime)` and
//! [`Job::template_id`] 0, and joins the channel's recent jobs (the others stay valid).

use sv2c_binary::Str0255;
use sv2c_binary::messages::{
    SetCustomMiningJob, SetCustomMiningJobError, SetCustomMiningJobSuccess,
};

use crate::codes::{
    INVALID_CHANNEL_ID, INVALID_COINBASE_PREFIX, INVALID_COINBASE_TX, INVALID_COINBASE_TX_OUTPUTS,
    INVALID_MERKLE_PATH, INVALID_MIN_NTIME, INVALID_MINING_JOB_TOKEN, INVALID_NBITS,
    INVALID_VERSION, STALE_CHAIN_TIP,
};

use super::channel::{Job, JobError, MAX_SCRIPT_SIG_LEN, ServerChannel, split_coinbase};

/// The longest merkle path a block can have: a block of at most 4,000,000 weight units
/// holds at most 16,666 transactions besides the coinbase (the smallest is 60 bytes, 240
/// weight units), and 16,667 leaves need 15 levels.
pub const MAX_MERKLE_PATH_LEN: usize = 15;

/// The most satoshis that can exist (21 million BTC), Bitcoin's `MAX_MONEY`.
const MAX_MONEY: u64 = 21_000_000 * 100_000_000;

/// Why a `SetCustomMiningJob` was refused (see [the checks](self#checks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CustomJobError {
    /// No such channel, or not an extended one.
    #[error("no extended channel of that id")]
    InvalidChannelId,
    /// The caller's check refused the token.
    #[error("mining job token refused")]
    InvalidMiningJobToken,
    /// `prev_hash` is not the chain tip's (or there is no chain tip).
    #[error("prev_hash is not the current chain tip")]
    StaleChainTip,
    /// `nbits` is not the chain tip's.
    #[error("nbits is not the chain tip's")]
    InvalidNbits,
    /// `min_ntime` is below the chain tip's, or further ahead of it than the channel's
    /// `ntime` window.
    #[error("min_ntime outside the chain tip's window")]
    InvalidMinNtime,
    /// `version`'s top three bits are not `001`.
    #[error("version's top bits are not 001")]
    InvalidVersion,
    /// `coinbase_prefix` does not start with a height push, or the scriptSig is outside
    /// 2 to 100 bytes.
    #[error("invalid coinbase prefix")]
    InvalidCoinbasePrefix,
    /// `coinbase_tx_outputs` is not a list of at least one output (or is worth more than
    /// all bitcoin).
    #[error("invalid coinbase outputs")]
    InvalidCoinbaseOutputs,
    /// `merkle_path` is longer than [`MAX_MERKLE_PATH_LEN`].
    #[error("merkle path of {0} hashes")]
    InvalidMerklePath(usize),
    /// The coinbase does not fit a `NewExtendedMiningJob`.
    #[error("coinbase too large")]
    InvalidCoinbaseTx,
}

impl CustomJobError {
    /// The `SetCustomMiningJob.Error` error code.
    pub fn code(&self) -> &'static str {
        match self {
            CustomJobError::InvalidChannelId => INVALID_CHANNEL_ID,
            CustomJobError::InvalidMiningJobToken => INVALID_MINING_JOB_TOKEN,
            CustomJobError::StaleChainTip => STALE_CHAIN_TIP,
            CustomJobError::InvalidNbits => INVALID_NBITS,
            CustomJobError::InvalidMinNtime => INVALID_MIN_NTIME,
            CustomJobError::InvalidVersion => INVALID_VERSION,
            CustomJobError::InvalidCoinbasePrefix => INVALID_COINBASE_PREFIX,
            CustomJobError::InvalidCoinbaseOutputs => INVALID_COINBASE_TX_OUTPUTS,
            CustomJobError::InvalidMerklePath(_) => INVALID_MERKLE_PATH,
            CustomJobError::InvalidCoinbaseTx => INVALID_COINBASE_TX,
        }
    }

    /// The `SetCustomMiningJob.Error` answering `request` with this error.
    pub fn to_message(&self, request: &SetCustomMiningJob) -> SetCustomMiningJobError {
        SetCustomMiningJobError {
            channel_id: request.channel_id,
            request_id: request.request_id,
            // Every code is far shorter than 255 bytes.
            error_code: Str0255::from_static_str(self.code()).unwrap_or_default(),
        }
    }
}

/// Answers a `SetCustomMiningJob` addressed to `channel` (`None`: the server has no
/// channel of that id): `SetCustomMiningJob.Success` with the new job's id, or
/// `SetCustomMiningJob.Error` with the code of the first failed check.
/// `token_ok` is the caller's check of `mining_job_token`.
///
/// ```
/// use sv2c_binary::messages::SetCustomMiningJob;
/// use sv2c_channels::server::answer_set_custom_mining_job;
///
/// let request = SetCustomMiningJob { channel_id: 9, request_id: 4, ..Default::default() };
/// let error = answer_set_custom_mining_job(None, &request, |_| true).unwrap_err();
/// assert_eq!((error.request_id, error.error_code.as_str()), (4, Ok("invalid-channel-id")));
/// ```
///
/// # Errors
/// The `SetCustomMiningJob.Error` to send.
pub fn answer_set_custom_mining_job(
    channel: Option<&mut ServerChannel>,
    request: &SetCustomMiningJob,
    token_ok: impl FnOnce(&[u8]) -> bool,
) -> Result<SetCustomMiningJobSuccess, SetCustomMiningJobError> {
    let Some(channel) = channel else {
        return Err(CustomJobError::InvalidChannelId.to_message(request));
    };
    channel
        .on_set_custom_mining_job(request, token_ok)
        .map_err(|e| e.to_message(request))
}

/// Whether `prefix` starts with a BIP 34 height: a push of 1 to 5 bytes that the prefix
/// holds, or `OP_1` to `OP_16` (heights 1 to 16).
fn starts_with_height(prefix: &[u8]) -> bool {
    match prefix.first() {
        Some(&n @ 1..=5) => prefix.len() > usize::from(n),
        Some(0x51..=0x60) => true,
        _ => false,
    }
}

/// Reads a CompactSize from the front of `bytes`.
pub(super) fn read_compact_size(bytes: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = bytes.split_first()?;
    let width = match first {
        0xfd => 2,
        0xfe => 4,
        0xff => 8,
        n => {
            *bytes = rest;
            return Some(u64::from(n));
        }
    };
    let (value, rest) = rest.split_at_checked(width)?;
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(value);
    *bytes = rest;
    Some(u64::from_le_bytes(le))
}

/// Whether `bytes` is a CompactSize count of at least one output, then exactly that many
/// outputs (value, CompactSize script length, script), worth at most [`MAX_MONEY`].
fn valid_outputs(mut bytes: &[u8]) -> bool {
    let Some(count) = read_compact_size(&mut bytes) else {
        return false;
    };
    if count == 0 {
        return false;
    }
    let mut total = 0u64;
    for _ in 0..count {
        let Some((value, rest)) = bytes.split_at_checked(8) else {
            return false;
        };
        let mut le = [0u8; 8];
        le.copy_from_slice(value);
        total = total.saturating_add(u64::from_le_bytes(le));
        bytes = rest;
        let Some(len) = read_compact_size(&mut bytes) else {
            return false;
        };
        let Some(rest) = usize::try_from(len).ok().and_then(|len| bytes.get(len..)) else {
            return false;
        };
        bytes = rest;
    }
    bytes.is_empty() && total <= MAX_MONEY
}

impl ServerChannel {
    /// Checks a `SetCustomMiningJob` (see [the checks](self#checks)) and makes its job
    /// active: shares for it are then validated like any other job's. `token_ok` is the
    /// caller's check of `mining_job_token`.
    ///
    /// # Errors
    /// The first check that fails, as a [`CustomJobError`]; the channel is unchanged then.
    pub fn on_set_custom_mining_job(
        &mut self,
        m: &SetCustomMiningJob,
        token_ok: impl FnOnce(&[u8]) -> bool,
    ) -> Result<SetCustomMiningJobSuccess, CustomJobError> {
        if m.channel_id != self.channel_id || self.rollable.is_none() {
            return Err(CustomJobError::InvalidChannelId);
        }
        if !token_ok(m.token.as_bytes()) {
            return Err(CustomJobError::InvalidMiningJobToken);
        }
        let tip = match self.tip {
            Some(tip) if tip.prev_hash == m.prev_hash.0 => tip,
            _ => return Err(CustomJobError::StaleChainTip),
        };
        if m.nbits != tip.nbits {
            return Err(CustomJobError::InvalidNbits);
        }
        if m.min_ntime < tip.min_ntime
            || m.min_ntime > tip.min_ntime.saturating_add(self.max_ntime_ahead)
        {
            return Err(CustomJobError::InvalidMinNtime);
        }
        if m.version >> 29 != 0b001 {
            return Err(CustomJobError::InvalidVersion);
        }
        let script_prefix = m.coinbase_prefix.as_bytes();
        let script_len = script_prefix.len() + self.extranonce_len();
        if !starts_with_height(script_prefix) || !(2..=MAX_SCRIPT_SIG_LEN).contains(&script_len) {
            return Err(CustomJobError::InvalidCoinbasePrefix);
        }
        let outputs = m.coinbase_tx_outputs.as_bytes();
        if !valid_outputs(outputs) {
            return Err(CustomJobError::InvalidCoinbaseOutputs);
        }
        if m.merkle_path.len() > MAX_MERKLE_PATH_LEN {
            return Err(CustomJobError::InvalidMerklePath(m.merkle_path.len()));
        }
        let (coinbase_prefix, coinbase_suffix) = split_coinbase(
            m.coinbase_tx_version,
            script_prefix,
            self.extranonce_len(),
            m.coinbase_tx_input_n_sequence,
            outputs,
            m.coinbase_tx_locktime,
        )
        .map_err(|_: JobError| CustomJobError::InvalidCoinbasePrefix)?;
        if coinbase_prefix.len() > 65_535 || coinbase_suffix.len() > 65_535 {
            return Err(CustomJobError::InvalidCoinbaseTx);
        }
        let job = Job {
            job_id: self.next_job_id,
            template_id: 0,
            version: m.version,
            coinbase_prefix: coinbase_prefix.into(),
            coinbase_suffix: coinbase_suffix.into(),
            merkle_path: m.merkle_path.iter().map(|h| h.0).collect(),
            min_ntime: Some(m.min_ntime),
        };
        self.next_job_id = self.next_job_id.wrapping_add(1).max(1);
        let job_id = job.job_id;
        self.push_active(job);
        Ok(SetCustomMiningJobSuccess {
            channel_id: self.channel_id,
            request_id: m.request_id,
            job_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pow::{header, meets_target, merkle_root, sha256d, target_with_zero_bits};
    use crate::server::{CoinbaseOutput, Share, ShareError, VERSION_ROLLING_MASK};
    use alloc::vec::Vec;
    use sv2c_binary::messages::{NewTemplate, SetNewPrevHashTdp};
    use sv2c_binary::{B064K, B0255, Seq0255, U256};

    const TIP_NTIME: u32 = 1_700_000_000;
    const NBITS: u32 = 0x1703_0000;

    /// An extended channel (prefix `aa aa aa aa`, 4 rollable bytes, 8-bit target) on the
    /// tip `prev_hash = 09 × 32`, `min_ntime = TIP_NTIME`.
    fn channel() -> ServerChannel {
        let mut c = ServerChannel::extended(
            5,
            [0xaa; 4].to_vec(),
            4,
            target_with_zero_bits(8),
            VERSION_ROLLING_MASK,
            [CoinbaseOutput {
                value: 1,
                script_pubkey: [0x51].to_vec(),
            }]
            .to_vec(),
        );
        let template = NewTemplate {
            template_id: 1,
            future_template: true,
            version: 0x2000_0000,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x01, 0x07][..]).unwrap(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: 1,
            coinbase_tx_outputs_count: 0,
            coinbase_tx_outputs: B064K::default(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::default(),
        };
        c.on_new_template(&template).unwrap();
        c.on_set_new_prev_hash(&SetNewPrevHashTdp {
            template_id: 1,
            prev_hash: U256([9; 32]),
            header_timestamp: TIP_NTIME,
            n_bits: NBITS,
            target: target_with_zero_bits(64),
        })
        .unwrap();
        c
    }

    /// One P2WPKH output of 3.125 BTC, serialised by hand: count, value, script.
    fn outputs() -> Vec<u8> {
        let mut o = [1u8].to_vec();
        o.extend_from_slice(&312_500_000u64.to_le_bytes());
        o.extend_from_slice(&[22, 0x00, 0x14]);
        o.extend_from_slice(&[0x42; 20]);
        o
    }

    fn request() -> SetCustomMiningJob {
        SetCustomMiningJob {
            channel_id: 5,
            request_id: 77,
            token: B0255::try_from(&b"token-1"[..]).unwrap(),
            version: 0x2000_0000,
            prev_hash: U256([9; 32]),
            min_ntime: TIP_NTIME + 30,
            nbits: NBITS,
            coinbase_tx_version: 2,
            // Height 840,000 then a 2-byte tag.
            coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c, 0xbe, 0xef][..]).unwrap(),
            coinbase_tx_input_n_sequence: 0xffff_fffe,
            coinbase_tx_outputs: B064K::try_from(outputs()).unwrap(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::from_slice(&[U256([3; 32]), U256([4; 32])]).unwrap(),
        }
    }

    /// The coinbase the request describes with extranonce `aa aa aa aa` + `en`, laid out
    /// field by field.
    fn expected_coinbase(en: &[u8; 4]) -> Vec<u8> {
        let mut tx = [2u8, 0, 0, 0, 1].to_vec();
        tx.extend_from_slice(&[0; 32]);
        tx.extend_from_slice(&[0xff; 4]);
        tx.push(14); // 6 bytes of prefix + 8 of extranonce
        tx.extend_from_slice(&[0x03, 0x40, 0xd1, 0x0c, 0xbe, 0xef, 0xaa, 0xaa, 0xaa, 0xaa]);
        tx.extend_from_slice(en);
        tx.extend_from_slice(&[0xfe, 0xff, 0xff, 0xff]);
        tx.extend_from_slice(&outputs());
        tx.extend_from_slice(&[0; 4]);
        tx
    }

    /// A nonce whose header (custom job, `en`, `ntime`) meets 8 zero bits.
    fn mine(en: &[u8; 4], ntime: u32) -> u32 {
        let root = merkle_root(sha256d(&expected_coinbase(en)), [&[3; 32], &[4; 32]]);
        (0u32..)
            .find(|&n| {
                let h = header(0x2000_0000, &[9; 32], &root, ntime, NBITS, n);
                meets_target(&sha256d(&h), &target_with_zero_bits(8))
            })
            .unwrap()
    }

    #[test]
    fn an_accepted_custom_job_takes_shares_on_its_own_coinbase_and_min_ntime() {
        let mut c = channel();
        let ok = c
            .on_set_custom_mining_job(&request(), |t| t == b"token-1")
            .unwrap();
        // Job 1 went to the template; the custom job is the next.
        assert_eq!((ok.channel_id, ok.request_id, ok.job_id), (5, 77, 2));
        let job = c.job(2).unwrap().clone();
        assert_eq!(
            job.coinbase(&[&[0xaa; 4], &[1, 2, 3, 4]]),
            expected_coinbase(&[1, 2, 3, 4])
        );
        assert_eq!(job.min_ntime, Some(TIP_NTIME + 30));
        let announce = c.extended_job_message(&job, false).unwrap();
        assert_eq!(announce.min_ntime, Some(TIP_NTIME + 30));

        let en = [1, 2, 3, 4];
        let at = |ntime| Share {
            job_id: 2,
            nonce: mine(&en, ntime),
            ntime,
            version: 0x2000_0000,
            extranonce: &en,
        };
        assert!(c.validate_share(&at(TIP_NTIME + 30)).is_ok());
        assert_eq!(
            c.validate_share(&at(TIP_NTIME + 30)),
            Err(ShareError::Duplicate)
        );
        // The tip allows TIP_NTIME, this job does not.
        assert!(matches!(
            c.validate_share(&at(TIP_NTIME)),
            Err(ShareError::NtimeTooEarly { min_ntime, .. }) if min_ntime == TIP_NTIME + 30
        ));
        // The template's job stays valid next to it.
        assert!(c.job(1).is_some());
        // A new tip makes it stale.
        c.on_set_new_prev_hash(&SetNewPrevHashTdp {
            template_id: 9,
            prev_hash: U256([8; 32]),
            header_timestamp: TIP_NTIME + 600,
            n_bits: NBITS,
            target: target_with_zero_bits(64),
        });
        assert_eq!(
            c.validate_share(&at(TIP_NTIME + 31)),
            Err(ShareError::Stale)
        );
    }

    #[test]
    fn every_refusal_has_its_code_and_leaves_the_channel_unchanged() {
        type Edit = fn(&mut SetCustomMiningJob);
        let cases: &[(Edit, &str)] = &[
            (|m| m.channel_id = 6, "invalid-channel-id"),
            (
                |m| m.token = B0255::try_from(&b"other"[..]).unwrap(),
                "invalid-mining-job-token",
            ),
            (|m| m.prev_hash = U256([8; 32]), "stale-chain-tip"),
            (|m| m.nbits = NBITS + 1, "invalid-nbits"),
            (|m| m.min_ntime = TIP_NTIME - 1, "invalid-min-ntime"),
            (|m| m.min_ntime = TIP_NTIME + 7201, "invalid-min-ntime"),
            (|m| m.version = 0x4000_0000, "invalid-version"),
            (|m| m.version = 1, "invalid-version"),
            (
                |m| m.coinbase_prefix = B0255::default(),
                "invalid-coinbase-prefix",
            ),
            // A push of 3 bytes with 2 present.
            (
                |m| m.coinbase_prefix = B0255::try_from(&[0x03, 0x40, 0xd1][..]).unwrap(),
                "invalid-coinbase-prefix",
            ),
            // Not a push.
            (
                |m| m.coinbase_prefix = B0255::try_from(&[0x6a, 0x00][..]).unwrap(),
                "invalid-coinbase-prefix",
            ),
            // 93 bytes + 8 of extranonce: a scriptSig of 101 bytes.
            (
                |m| {
                    let mut p = [0x03, 0x40, 0xd1, 0x0c].to_vec();
                    p.resize(93, 0);
                    m.coinbase_prefix = B0255::try_from(p).unwrap();
                },
                "invalid-coinbase-prefix",
            ),
            (
                |m| m.coinbase_tx_outputs = B064K::default(),
                "invalid-coinbase-tx-outputs",
            ),
            // A count of zero.
            (
                |m| m.coinbase_tx_outputs = B064K::try_from(&[0u8][..]).unwrap(),
                "invalid-coinbase-tx-outputs",
            ),
            // One byte short, one byte extra, two outputs announced and one present.
            (
                |m| {
                    let o = outputs();
                    m.coinbase_tx_outputs = B064K::try_from(&o[..o.len() - 1]).unwrap();
                },
                "invalid-coinbase-tx-outputs",
            ),
            (
                |m| {
                    let mut o = outputs();
                    o.push(0);
                    m.coinbase_tx_outputs = B064K::try_from(o).unwrap();
                },
                "invalid-coinbase-tx-outputs",
            ),
            (
                |m| {
                    let mut o = outputs();
                    o[0] = 2;
                    m.coinbase_tx_outputs = B064K::try_from(o).unwrap();
                },
                "invalid-coinbase-tx-outputs",
            ),
            // 21,000,001 BTC.
            (
                |m| {
                    let mut o = outputs();
                    o[1..9].copy_from_slice(&2_100_000_100_000_000u64.to_le_bytes());
                    m.coinbase_tx_outputs = B064K::try_from(o).unwrap();
                },
                "invalid-coinbase-tx-outputs",
            ),
            (
                |m| m.merkle_path = Seq0255::from_slice(&[U256([1; 32]); 16]).unwrap(),
                "invalid-merkle-path",
            ),
        ];
        for (i, (edit, code)) in cases.iter().enumerate() {
            let mut c = channel();
            let mut m = request();
            edit(&mut m);
            let e = c
                .on_set_custom_mining_job(&m, |t| t == b"token-1")
                .unwrap_err();
            assert_eq!(e.code(), *code, "case {i}: {e:?}");
            let msg = e.to_message(&m);
            assert_eq!((msg.channel_id, msg.request_id), (m.channel_id, 77));
            assert_eq!(msg.error_code.as_str(), Ok(*code));
            // Nothing changed: the next valid request gets the next id.
            assert!(c.job(2).is_none());
            let ok = c.on_set_custom_mining_job(&request(), |_| true).unwrap();
            assert_eq!(ok.job_id, 2, "case {i}");
        }
        // The edges of what is accepted.
        for edit in [
            (|m: &mut SetCustomMiningJob| m.min_ntime = TIP_NTIME) as Edit,
            |m| m.min_ntime = TIP_NTIME + 7200,
            |m| m.version = 0x3fff_ffff,
            |m| m.merkle_path = Seq0255::from_slice(&[U256([1; 32]); 15]).unwrap(),
            |m| m.merkle_path = Seq0255::default(),
            // Height 1 as OP_1, then one byte: a 10-byte scriptSig.
            |m| m.coinbase_prefix = B0255::try_from(&[0x51, 0x00][..]).unwrap(),
            // 92 bytes + 8 of extranonce: 100.
            |m| {
                let mut p = [0x03, 0x40, 0xd1, 0x0c].to_vec();
                p.resize(92, 0);
                m.coinbase_prefix = B0255::try_from(p).unwrap();
            },
            // Two outputs, the second's script length as a 3-byte CompactSize (fd 03 00).
            |m| {
                let mut o = outputs();
                o[0] = 2;
                o.extend_from_slice(&0u64.to_le_bytes());
                o.extend_from_slice(&[0xfd, 3, 0, 0x6a, 0x01, 0x00]);
                m.coinbase_tx_outputs = B064K::try_from(o).unwrap();
            },
        ] {
            let mut m = request();
            edit(&mut m);
            assert!(
                channel().on_set_custom_mining_job(&m, |_| true).is_ok(),
                "{m:?}"
            );
        }
    }

    #[test]
    fn only_an_existing_extended_channel_takes_custom_jobs() {
        let mut standard =
            ServerChannel::standard(5, [0; 8].to_vec(), U256([0xff; 32]), 0, Vec::new());
        assert_eq!(
            standard.on_set_custom_mining_job(&request(), |_| true),
            Err(CustomJobError::InvalidChannelId)
        );
        let e = answer_set_custom_mining_job(None, &request(), |_| true).unwrap_err();
        assert_eq!(e.error_code.as_str(), Ok("invalid-channel-id"));
        let mut c = channel();
        let ok = answer_set_custom_mining_job(Some(&mut c), &request(), |_| true).unwrap();
        assert_eq!(ok.job_id, 2);
        // The token check sees the token.
        let mut seen = Vec::new();
        let e = answer_set_custom_mining_job(Some(&mut c), &request(), |t| {
            seen.extend_from_slice(t);
            false
        })
        .unwrap_err();
        assert_eq!(e.error_code.as_str(), Ok("invalid-mining-job-token"));
        assert_eq!(seen, b"token-1");
    }
}
