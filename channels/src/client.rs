//! Client side of an extended channel (a proxy or mining firmware): the jobs and target
//! the server sent, the header a miner hashes, and a local check of a share before it is
//! forwarded.
//!
//! Jobs are kept from `NewExtendedMiningJob`: a future job (no `min_ntime`) waits for the
//! `SetNewPrevHash` that names it, which makes it the only active job (every other is
//! dropped); a job with `min_ntime` is active on the current tip at once. At most
//! [`MAX_JOBS`] jobs are kept; the oldest go first.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use sv2c_binary::U256;
use sv2c_binary::messages::{NewExtendedMiningJob, SetNewPrevHash, SetTarget};

use crate::pow::{header, meets_target, merkle_root, sha256d};

/// Jobs a client channel keeps.
pub const MAX_JOBS: usize = 32;

/// A job as the client keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClientJob {
    job_id: u32,
    future: bool,
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
}

/// The chain tip of the last `SetNewPrevHash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tip {
    prev_hash: [u8; 32],
    nbits: u32,
}

/// One extended channel as its client sees it.
#[derive(Debug, Clone)]
pub struct ClientChannel {
    extranonce_prefix: Vec<u8>,
    extranonce_size: usize,
    target: U256,
    jobs: VecDeque<ClientJob>,
    tip: Option<Tip>,
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
        }
    }

    /// The channel target.
    pub fn target(&self) -> &U256 {
        &self.target
    }

    /// `SetTarget`.
    pub fn on_set_target(&mut self, m: &SetTarget) {
        self.target = m.maximum_target;
    }

    /// `NewExtendedMiningJob`.
    pub fn on_new_job(&mut self, m: &NewExtendedMiningJob) {
        if self.jobs.len() == MAX_JOBS {
            self.jobs.pop_front();
        }
        self.jobs.push_back(ClientJob {
            job_id: m.job_id,
            future: m.min_ntime.is_none(),
            coinbase_prefix: m.coinbase_tx_prefix.as_bytes().to_vec(),
            coinbase_suffix: m.coinbase_tx_suffix.as_bytes().to_vec(),
            merkle_path: m.merkle_path.iter().map(|h| h.0).collect(),
        });
    }

    /// `SetNewPrevHash`: its job becomes the only active one.
    pub fn on_set_new_prev_hash(&mut self, m: &SetNewPrevHash) {
        self.tip = Some(Tip {
            prev_hash: m.prev_hash.0,
            nbits: m.nbits,
        });
        self.jobs.retain(|j| j.job_id == m.job_id);
        for j in self.jobs.iter_mut() {
            j.future = false;
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
        let job = self
            .jobs
            .iter()
            .find(|j| j.job_id == job_id && !j.future)
            .ok_or(LocalReject::UnknownJob)?;
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
        let root = merkle_root(sha256d(&coinbase), job.merkle_path.iter());
        Ok(header(
            version,
            &tip.prev_hash,
            &root,
            ntime,
            tip.nbits,
            nonce,
        ))
    }

    /// Checks a share before forwarding it; returns its header hash.
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
        let hash = sha256d(&self.header(job_id, extranonce, version, ntime, nonce)?);
        if meets_target(&hash, &self.target) {
            Ok(hash)
        } else {
            Err(LocalReject::TargetNotMet)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pow::target_with_zero_bits;
    use crate::server::{CoinbaseOutput, ServerChannel, Share, VERSION_ROLLING_MASK};
    use sv2c_binary::messages::{NewTemplate, SetNewPrevHashTdp};
    use sv2c_binary::{B064K, B0255, Seq0255};

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
        let template = NewTemplate {
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
            merkle_path: Seq0255::from_slice(&[U256([4; 32])]).unwrap(),
        };
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
}
