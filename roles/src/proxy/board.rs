//! The jobs of a proxy worker as its SV1 miners get them, kept once for all of them.
//!
//! Every SV1 miner of a worker mines on the same upstream channel: the same jobs, chain
//! tip and target, the same `coinb1` / `coinb2` (a miner's own bytes are in its
//! `extranonce1`, which is not in them). So the router, which keeps the upstream channel
//! ([`ClientChannel`]), publishes it here after each job, `SetNewPrevHash` and
//! `SetTarget`, with the `mining.notify` line of the newest active job encoded once
//! ([`JobLines`]: every miner is written the same bytes); an SV1
//! connection holds an [`Arc`] of the [`Sv1Jobs`] it last read (replaced at the next
//! job), its own extranonce, target and answers, and no copy of a job. The published
//! channel is a clone of the router's, which shares its jobs with it (a
//! [`ClientChannel`]'s jobs are reference-counted): a pool event copies no job.
//!
//! ```text
//!  pool ─▶ router: ClientChannel::on_new_job / on_set_new_prev_hash / on_set_target
//!                  └─▶ Board::publish: Arc<Sv1Jobs> { channel (clone), notify, tip }
//!  router ─▶ each SV1 connection: the job's frame ─▶ Board::get ─▶ its Arc replaced
//! ```

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use sv2c_binary::U256;
use sv2c_binary::messages::{NewExtendedMiningJob, SetNewPrevHash};
use sv2c_channels::client::ClientChannel;
use sv2c_sv1::{Body, Notify, Sv1Message};

/// `prev_hash` as SV1 sends it: the header's bytes with each 4-byte word reversed.
pub(crate) fn sv1_prevhash(prev_hash: &[u8; 32]) -> [u8; 32] {
    let mut out = *prev_hash;
    for word in out.chunks_exact_mut(4) {
        word.reverse();
    }
    out
}

/// A job's `mining.notify` line, encoded once for every miner of the worker.
#[derive(Debug)]
pub(crate) struct JobLines {
    /// With `clean_jobs` true: the first job a miner gets on a chain tip.
    pub(crate) clean: Bytes,
    /// With `clean_jobs` false.
    pub(crate) more: Bytes,
}

impl JobLines {
    fn new(notify: Notify) -> JobLines {
        let line = |clean_jobs| {
            let n = Notify {
                clean_jobs,
                ..notify.clone()
            };
            let mut buf = BytesMut::new();
            Sv1Message::notification(Body::Notify(n)).encode(&mut buf);
            buf.freeze()
        };
        JobLines {
            clean: line(true),
            more: line(false),
        }
    }
}

/// One published state of the worker's upstream channel (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Sv1Jobs {
    /// The upstream channel: its prefix `P`, jobs, tip and target.
    pub(crate) channel: ClientChannel,
    /// The newest job active on the tip, as `mining.notify` lines.
    pub(crate) notify: Option<Arc<JobLines>>,
    /// How many `SetNewPrevHash` came: a connection that saw fewer is on an older tip.
    pub(crate) tip: u64,
    /// Whether the newest job allows version rolling.
    pub(crate) rolling_allowed: bool,
    /// What is added to the pool's job ids for miners (the aggregate's, per pool
    /// connection): `mining.notify` names job `id + job_base`, and a share's job id less
    /// this is the pool's.
    pub(crate) job_base: u32,
}

impl Default for Sv1Jobs {
    fn default() -> Self {
        Sv1Jobs {
            channel: ClientChannel::new(Vec::new(), 0, U256([0; 32])),
            notify: None,
            tip: 0,
            rolling_allowed: true,
            job_base: 0,
        }
    }
}

/// `job` on the tip `tip`, as `mining.notify` with `ntime`, its id shifted by `job_base`.
fn notify(job: &NewExtendedMiningJob, tip: &SetNewPrevHash, ntime: u32, job_base: u32) -> Notify {
    Notify {
        job_id: format!("{:x}", job.job_id.wrapping_add(job_base)),
        prevhash: sv1_prevhash(&tip.prev_hash.0),
        coinb1: job.coinbase_tx_prefix.as_bytes().to_vec(),
        coinb2: job.coinbase_tx_suffix.as_bytes().to_vec(),
        merkle_branch: job.merkle_path.iter().map(|h| h.0).collect(),
        version: job.version,
        nbits: tip.nbits,
        ntime,
        clean_jobs: false,
    }
}

/// Where a worker's router publishes [`Sv1Jobs`] and its SV1 connections read them.
#[derive(Debug, Default)]
pub(crate) struct Board {
    current: Mutex<Arc<Sv1Jobs>>,
}

impl Board {
    /// The state published last.
    pub(crate) fn get(&self) -> Arc<Sv1Jobs> {
        match self.current.lock() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, jobs: Sv1Jobs) {
        let jobs = Arc::new(jobs);
        match self.current.lock() {
            Ok(mut c) => *c = jobs,
            Err(poisoned) => *poisoned.into_inner() = jobs,
        }
    }

    /// After `channel.on_new_job(m)`: a job active at once (it has `min_ntime`) on a known
    /// tip is the newest `mining.notify`; a future job waits for its `SetNewPrevHash`.
    pub(crate) fn on_job(&self, channel: &ClientChannel, m: &NewExtendedMiningJob) {
        let old = self.get();
        let fresh = match (m.min_ntime, channel.prev_hash(0)) {
            (Some(ntime), Some(tip)) => Some(Arc::new(JobLines::new(notify(
                m,
                &tip,
                ntime,
                old.job_base,
            )))),
            _ => None,
        };
        self.set(Sv1Jobs {
            channel: channel.clone(),
            notify: fresh.or_else(|| old.notify.clone()),
            tip: old.tip,
            rolling_allowed: m.version_rolling_allowed,
            job_base: old.job_base,
        });
    }

    /// After `channel.on_set_new_prev_hash(m)`: the job it names is the newest
    /// `mining.notify` (none if that job is unknown).
    pub(crate) fn on_prev_hash(&self, channel: &ClientChannel, m: &SetNewPrevHash) {
        let old = self.get();
        let job = channel.extended_job(m.job_id, 0, false);
        self.set(Sv1Jobs {
            channel: channel.clone(),
            notify: job
                .as_ref()
                .map(|j| Arc::new(JobLines::new(notify(j, m, m.min_ntime, old.job_base)))),
            tip: old.tip + 1,
            rolling_allowed: job.map_or(old.rolling_allowed, |j| j.version_rolling_allowed),
            job_base: old.job_base,
        });
    }

    /// After `channel.on_set_target(..)`.
    pub(crate) fn on_target(&self, channel: &ClientChannel) {
        let old = self.get();
        self.set(Sv1Jobs {
            channel: channel.clone(),
            notify: old.notify.clone(),
            tip: old.tip,
            rolling_allowed: old.rolling_allowed,
            job_base: old.job_base,
        });
    }

    /// The proxy moved to another pool connection: its upstream channel is `channel`
    /// (no job yet), its job ids are shifted by `job_base`. No job is current until
    /// that pool's first one; the tip count goes on, so every miner's next job starts
    /// clean.
    pub(crate) fn on_switch(&self, channel: &ClientChannel, job_base: u32) {
        let old = self.get();
        self.set(Sv1Jobs {
            channel: channel.clone(),
            notify: None,
            tip: old.tip + 1,
            rolling_allowed: true,
            job_base,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::{B064K, Seq0255};

    fn job(job_id: u32, min_ntime: Option<u32>) -> NewExtendedMiningJob {
        NewExtendedMiningJob {
            channel_id: 1,
            job_id,
            min_ntime,
            version: 0x2000_0000,
            version_rolling_allowed: true,
            merkle_path: Seq0255::from_slice(&[]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(vec![0xaa]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(vec![0xcc]).unwrap(),
        }
    }

    /// A future job is published without a line; its `SetNewPrevHash` makes it the newest
    /// line and a new tip; a job active at once on that tip replaces the line, not the tip.
    #[test]
    fn lines_follow_the_jobs_and_the_tip() {
        let board = Board::default();
        let mut channel = ClientChannel::new(vec![1, 2], 8, U256([0xff; 32]));
        let future = job(5, None);
        channel.on_new_job(&future);
        board.on_job(&channel, &future);
        assert!(board.get().notify.is_none());
        let tip = SetNewPrevHash {
            channel_id: 1,
            job_id: 5,
            prev_hash: U256([3; 32]),
            min_ntime: 100,
            nbits: 0x1d00_ffff,
        };
        channel.on_set_new_prev_hash(&tip);
        board.on_prev_hash(&channel, &tip);
        let jobs = board.get();
        assert_eq!(jobs.tip, 1);
        let lines = jobs.notify.clone().unwrap();
        assert!(String::from_utf8_lossy(&lines.clean).contains(r#"["5","#));
        assert!(String::from_utf8_lossy(&lines.clean).ends_with("true]}\n"));
        assert!(String::from_utf8_lossy(&lines.more).ends_with("false]}\n"));
        let next = job(6, Some(101));
        channel.on_new_job(&next);
        board.on_job(&channel, &next);
        let jobs = board.get();
        assert_eq!(jobs.tip, 1);
        let more = String::from_utf8_lossy(&jobs.notify.as_ref().unwrap().more).into_owned();
        assert!(more.contains(r#"["6","#), "{more}");
        assert_eq!(jobs.channel.job_version(6), Some((0x2000_0000, true)));
    }

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
}
