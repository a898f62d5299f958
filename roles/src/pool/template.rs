//! Where the pool's jobs come from: the template and chain tip every channel mines on
//! ([`Work`]), given by one of two template sources:
//!
//! * the made-up chain ([`MadeUpChain`]), moved by the pool's job timer: a new job every
//!   tick, a new block every [`PoolConfig::jobs_per_prev_hash`](super::PoolConfig)
//!   ticks, a template with a BIP 34 height, no transactions and 3.125 BTC to pay out;
//! * a Template Provider ([`super::template_provider`]): its `NewTemplate` and
//!   `SetNewPrevHash` messages, the job timer then only paces vardiff and the check of
//!   unfinished frames.
//!
//! Connections follow the source through the pool's [`Broadcast`]: a [`Work`] with a new
//! [`Work::block`] is a new chain tip (a future job and `SetNewPrevHash` for every
//! channel), one with only a new [`Work::generation`] a new template on the same tip (a
//! job active at once). Each work's jobs are built once per extranonce length
//! ([`JobCache`]) and shared by every channel that has that length.

use std::sync::Arc;

use sv2c_binary::messages::{NewTemplate, SetNewPrevHashTdp};
use sv2c_binary::{B064K, B0255, Seq0255, U256};
use sv2c_channels::pow::difficulty_to_target;
use sv2c_channels::server::{CoinbaseOutput, Job, JobError, coinbase_parts};
use tokio::sync::watch;

use sv2c_channels::pow::sha256d;

/// Header version of every made-up job (BIP 9 top bits).
const JOB_VERSION: u32 = 0x2000_0000;
/// `nbits` of every made-up job (difficulty 1).
const NBITS: u32 = 0x1d00_ffff;
/// The first block time of the made-up chain.
const FIRST_NTIME: u32 = 0x6650_0000;
/// The value a made-up template leaves to the pool: 3.125 BTC.
pub(super) const MADE_UP_VALUE: u64 = 312_500_000;

/// A template and the chain tip it is mined on: what every channel's jobs are built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Work {
    /// Counts every new work (a template, or a tip): the jobs built from it are cached
    /// under it.
    pub(super) generation: u64,
    /// Counts chain tips: a change is a new block, announced with `SetNewPrevHash`.
    pub(super) block: u64,
    /// The previous block hash, as in the header.
    pub(super) prev_hash: [u8; 32],
    /// The tip's header time (the jobs' `min_ntime`).
    pub(super) ntime: u32,
    /// Header `nbits`.
    pub(super) nbits: u32,
    /// A share whose hash meets it is a block.
    pub(super) network_target: U256,
    /// The template (its `future_template` flag is not used: a job is future or not by
    /// how a connection sends it).
    pub(super) template: NewTemplate,
    /// The template's merkle path, shared by every job built from it.
    pub(super) merkle_path: Arc<[[u8; 32]]>,
}

impl Work {
    /// The work of `template` on a chain tip.
    pub(super) fn new(
        (generation, block): (u64, u64),
        tip: &SetNewPrevHashTdp,
        template: NewTemplate,
    ) -> Work {
        let merkle_path = template.merkle_path.iter().map(|h| h.0).collect();
        Work {
            generation,
            block,
            prev_hash: tip.prev_hash.0,
            ntime: tip.header_timestamp,
            nbits: tip.n_bits,
            network_target: tip.target,
            template,
            merkle_path,
        }
    }

    /// The Template Distribution `SetNewPrevHash` of this work's tip, for its template.
    pub(super) fn prev_hash_msg(&self) -> SetNewPrevHashTdp {
        SetNewPrevHashTdp {
            template_id: self.template.template_id,
            prev_hash: U256(self.prev_hash),
            header_timestamp: self.ntime,
            n_bits: self.nbits,
            target: self.network_target,
        }
    }
}

/// What the pool tells every connection at once: one watch, one wake-up source per idle
/// connection.
#[derive(Debug, Clone, Default)]
pub(super) struct Broadcast {
    /// What channels mine on (`None`: nothing yet, a Template Provider has not sent any).
    pub(super) work: Option<Arc<Work>>,
    /// The job timer's ticks (vardiff and the unfinished-frame check run on each).
    pub(super) ticks: u64,
    /// Set once, when the pool stops: connections say `Reconnect` and close.
    pub(super) stopping: bool,
}

/// The made-up chain: a tip that moves on the pool's job timer (the pool without a
/// Template Provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MadeUpChain {
    prev_hash: [u8; 32],
    ntime: u32,
    height: u32,
    /// Timer ticks so far.
    ticks: u64,
    /// Blocks so far.
    blocks: u64,
}

impl MadeUpChain {
    pub(super) fn first() -> MadeUpChain {
        MadeUpChain {
            prev_hash: sha256d(b"sv2c pool"),
            ntime: FIRST_NTIME,
            height: 840_000,
            ticks: 0,
            blocks: 0,
        }
    }

    /// One tick of the job timer: a new job's time, or every `jobs_per_prev_hash` ticks
    /// the next block.
    pub(super) fn advance(&mut self, jobs_per_prev_hash: u32) {
        self.ticks += 1;
        if self
            .ticks
            .is_multiple_of(u64::from(jobs_per_prev_hash.max(1)))
        {
            self.prev_hash = sha256d(&self.prev_hash);
            self.height += 1;
            self.ntime += 600;
            self.blocks += 1;
        } else {
            self.ntime += 1;
        }
    }

    /// The work of the tip now: template id and generation are the tick count (from 1).
    pub(super) fn work(&self) -> Work {
        let generation = self.ticks + 1;
        let tip = SetNewPrevHashTdp {
            template_id: generation,
            prev_hash: U256(self.prev_hash),
            header_timestamp: self.ntime,
            n_bits: NBITS,
            target: difficulty_to_target(1.0),
        };
        Work::new((generation, self.blocks), &tip, self.template(generation))
    }

    /// A BIP 34 height, no transactions, the whole value left to the pool's output.
    fn template(&self, template_id: u64) -> NewTemplate {
        let h = self.height;
        NewTemplate {
            template_id,
            future_template: true,
            version: JOB_VERSION,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x03, h as u8, (h >> 8) as u8, (h >> 16) as u8][..])
                .unwrap_or_default(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: MADE_UP_VALUE,
            coinbase_tx_outputs_count: 0,
            coinbase_tx_outputs: B064K::default(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::default(),
        }
    }
}

/// A tick of the pool's job timer: the made-up chain (if it is the source) moves on, and
/// every connection is woken.
pub(super) fn on_timer(
    broadcast: &watch::Sender<Broadcast>,
    made_up: Option<&mut MadeUpChain>,
    jobs_per_prev_hash: u32,
) {
    let work = made_up.map(|chain| {
        chain.advance(jobs_per_prev_hash);
        Arc::new(chain.work())
    });
    broadcast.send_modify(|b| {
        b.ticks += 1;
        if let Some(work) = work {
            b.work = Some(work);
        }
    });
}

/// The pool's coinbase outputs for `template`: the whole value it leaves to `script`.
pub(super) fn pool_outputs(template: &NewTemplate, script: &[u8]) -> Vec<CoinbaseOutput> {
    vec![CoinbaseOutput {
        value: template.coinbase_tx_value_remaining,
        script_pubkey: script.to_vec(),
    }]
}

/// The jobs built from one [`Work`], shared by the channels with the same extranonce
/// length.
#[derive(Debug)]
pub(super) struct JobCache {
    /// The work ([`Work::generation`]) the jobs are for.
    generation: u64,
    /// Whether a future job, the extranonce length, the job.
    jobs: Vec<(bool, usize, Job)>,
    /// Job ids are pool-wide, so a channel's jobs have increasing ids.
    next_job_id: u32,
}

impl Default for JobCache {
    fn default() -> Self {
        JobCache {
            generation: 0,
            jobs: Vec::new(),
            next_job_id: 1,
        }
    }
}

impl JobCache {
    /// The job of `work` (`future`: for a channel's `SetNewPrevHash` of it) for a channel
    /// whose coinbase holds `extranonce_len` bytes of extranonce, paying `outputs`: built
    /// by the first channel that asks, the same `Job` (its bytes shared) for the others.
    ///
    /// # Errors
    /// The job cannot be built ([`coinbase_parts`]).
    pub(super) fn job(
        &mut self,
        work: &Work,
        future: bool,
        extranonce_len: usize,
        script: &[u8],
    ) -> Result<Job, JobError> {
        if work.generation > self.generation {
            self.generation = work.generation;
            self.jobs.clear();
        }
        let current = work.generation == self.generation;
        let found = self
            .jobs
            .iter()
            .find(|(f, len, _)| *f == future && *len == extranonce_len);
        if let (true, Some((_, _, job))) = (current, found) {
            return Ok(job.clone());
        }
        let template = &work.template;
        let outputs = pool_outputs(template, script);
        let (prefix, suffix) = coinbase_parts(template, &outputs, extranonce_len)?;
        if prefix.len() + extranonce_len + suffix.len() > usize::from(u16::MAX) {
            return Err(JobError::TooLarge);
        }
        let job = Job {
            job_id: self.next_job_id,
            template_id: template.template_id,
            version: template.version,
            coinbase_prefix: prefix.into(),
            coinbase_suffix: suffix.into(),
            merkle_path: work.merkle_path.clone(),
            min_ntime: None,
        };
        self.next_job_id = self.next_job_id.wrapping_add(1).max(1);
        // A connection still on an older work (a channel opened as it changed) gets a
        // job of its own.
        if current {
            self.jobs.push((future, extranonce_len, job.clone()));
        }
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP_TRUE: &[u8] = &[0x51];

    /// The channels of every connection get a work's job from one build: equal jobs
    /// whose coinbase bytes are one allocation. Another extranonce length, the future job,
    /// the next work each get their own, with increasing job ids; the template id is the
    /// work's.
    #[test]
    fn channels_on_one_work_share_its_job() {
        let mut cache = JobCache::default();
        let mut chain = MadeUpChain::first();
        let work = chain.work();
        let a = cache.job(&work, false, 8, OP_TRUE).unwrap();
        let b = cache.job(&work, false, 8, OP_TRUE).unwrap();
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&a.coinbase_prefix, &b.coinbase_prefix));
        assert!(Arc::ptr_eq(&a.coinbase_suffix, &b.coinbase_suffix));

        let extended = cache.job(&work, false, 12, OP_TRUE).unwrap();
        let future = cache.job(&work, true, 8, OP_TRUE).unwrap();
        // The scriptSig length (byte 41) counts the extranonce.
        assert_eq!(extended.coinbase_prefix[41], a.coinbase_prefix[41] + 4);
        assert_eq!(future.coinbase_prefix, a.coinbase_prefix);
        let ids = [a.job_id, extended.job_id, future.job_id];
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert!(
            [a.template_id, extended.template_id, future.template_id]
                .iter()
                .all(|&t| t == work.template.template_id)
        );

        chain.advance(6);
        let next = chain.work();
        assert!(next.template.template_id > work.template.template_id);
        let c = cache.job(&next, false, 8, OP_TRUE).unwrap();
        assert!(c.job_id > future.job_id);
        assert!(!Arc::ptr_eq(&c.coinbase_prefix, &a.coinbase_prefix));
        // A connection still on the older work gets a job of its own, and the cache keeps
        // the newer one's.
        let late = cache.job(&work, false, 8, OP_TRUE).unwrap();
        assert!(late.job_id > c.job_id && !Arc::ptr_eq(&late.coinbase_prefix, &a.coinbase_prefix));
        let again = cache.job(&next, false, 8, OP_TRUE).unwrap();
        assert!(Arc::ptr_eq(&again.coinbase_prefix, &c.coinbase_prefix));
    }

    /// A new block every `jobs_per_prev_hash` ticks: a new tip, height and time; between,
    /// a new generation on the same tip.
    #[test]
    fn the_made_up_chain_moves_on_the_timer() {
        let mut chain = MadeUpChain::first();
        let first = chain.work();
        chain.advance(2);
        let second = chain.work();
        assert_eq!(
            (second.block, second.prev_hash),
            (first.block, first.prev_hash)
        );
        assert_eq!(second.generation, first.generation + 1);
        chain.advance(2);
        let third = chain.work();
        assert_eq!(third.block, first.block + 1);
        assert_ne!(third.prev_hash, first.prev_hash);
        assert_eq!(third.ntime, first.ntime + 1 + 600);
        assert_eq!(
            third.template.coinbase_prefix.as_bytes()[1..3],
            [0x41, 0xd1]
        );
        assert_eq!(
            third.prev_hash_msg().template_id,
            third.template.template_id
        );
    }
}
