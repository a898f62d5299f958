//! Group channels (SV2-WIRE §3.2 `SetGroupChannel`, spec §5.2.3): standard channels of
//! one connection grouped under a `group_channel_id`, so that one `NewExtendedMiningJob`
//! and one `SetNewPrevHash` addressed to the group reach all of them.
//!
//! A [`GroupChannel`] owns its member [`ServerChannel`]s (standard channels whose
//! extranonce prefixes all have the same length, as the spec requires: the group's job
//! has one scriptSig length). Each template gives one job, with one job id, that every
//! member holds; the server announces it either once to the group
//! ([`GroupChannel::extended_job_message`], for a proxy that derives the standard jobs
//! itself) or as one `NewMiningJob` per member ([`GroupChannel::standard_job_messages`]),
//! whose merkle root is that of the group job's coinbase with the member's extranonce
//! prefix. Shares arrive on a member's channel id and are checked by that member
//! ([`GroupChannel::channel_mut`], then [`ServerChannel::validate_share`]).
//!
//! A channel that joins the group takes the group's chain tip and jobs in place of its
//! own (its earlier jobs are stale from then on); job ids continue after the highest id
//! any member or the group has used, so no id is reused on a channel.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use sv2c_binary::messages::{
    NewExtendedMiningJob, NewMiningJob, NewTemplate, SetGroupChannel, SetNewPrevHash,
    SetNewPrevHashTdp,
};
use sv2c_binary::{Seq064K, U256};

use super::channel::{ChainTip, CoinbaseOutput, Job, JobError, ServerChannel};

/// A channel could not join a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// Only standard channels join a group here.
    #[error("not a standard channel")]
    NotStandard,
    /// The channel's extranonce prefix is not the group's length.
    #[error("extranonce prefix of {got} bytes, the group's is {expected}")]
    ExtranonceSizeMismatch {
        /// The channel's prefix length.
        got: usize,
        /// The group's.
        expected: usize,
    },
    /// The channel id is already a member's, or the group's own.
    #[error("channel id {0} already in use")]
    DuplicateChannelId(u32),
}

/// A group of standard channels (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct GroupChannel {
    /// Builds the group's jobs: a standard channel with the group's id and a zero prefix
    /// of the members' length, holding the group's tip and jobs.
    jobs: ServerChannel,
    members: BTreeMap<u32, ServerChannel>,
}

impl GroupChannel {
    /// An empty group whose members have extranonce prefixes of `extranonce_len` bytes;
    /// `version_mask` and `pool_outputs` are those of its jobs (as for
    /// [`ServerChannel::standard`]).
    pub fn new(
        group_channel_id: u32,
        extranonce_len: usize,
        version_mask: u32,
        pool_outputs: Vec<CoinbaseOutput>,
    ) -> Self {
        GroupChannel {
            jobs: ServerChannel::standard(
                group_channel_id,
                alloc::vec![0; extranonce_len],
                U256([0xff; 32]),
                version_mask,
                pool_outputs,
            ),
            members: BTreeMap::new(),
        }
    }

    /// The group channel id.
    pub fn group_channel_id(&self) -> u32 {
        self.jobs.channel_id
    }

    /// The members' extranonce prefix length.
    pub fn extranonce_len(&self) -> usize {
        self.jobs.extranonce_prefix.len()
    }

    /// The chain tip, once known.
    pub fn chain_tip(&self) -> Option<&ChainTip> {
        self.jobs.chain_tip()
    }

    /// Adds a standard channel: it takes the group's chain tip and jobs in place of its
    /// own (see the [module docs](self)).
    ///
    /// # Errors
    /// [`GroupError`]; the group is unchanged then.
    pub fn add_channel(&mut self, mut channel: ServerChannel) -> Result<(), GroupError> {
        let id = channel.channel_id;
        if !channel.is_standard() {
            return Err(GroupError::NotStandard);
        }
        if channel.extranonce_prefix.len() != self.extranonce_len() {
            return Err(GroupError::ExtranonceSizeMismatch {
                got: channel.extranonce_prefix.len(),
                expected: self.extranonce_len(),
            });
        }
        if id == self.group_channel_id() || self.members.contains_key(&id) {
            return Err(GroupError::DuplicateChannelId(id));
        }
        // Later group jobs get ids past every id this channel has used.
        if channel.next_job_id > self.jobs.next_job_id {
            self.jobs.next_job_id = channel.next_job_id;
        }
        channel.tip = self.jobs.tip;
        channel.jobs = self.jobs.jobs.clone();
        channel.future = self.jobs.future.clone();
        channel.next_job_id = self.jobs.next_job_id;
        channel.first_job_of_tip = self.jobs.first_job_of_tip;
        channel.seen.clear();
        channel.root_cache = None;
        self.members.insert(id, channel);
        Ok(())
    }

    /// Takes a member out of the group (`CloseChannel`, or a move to another group).
    pub fn remove_channel(&mut self, channel_id: u32) -> Option<ServerChannel> {
        self.members.remove(&channel_id)
    }

    /// A member.
    pub fn channel(&self, channel_id: u32) -> Option<&ServerChannel> {
        self.members.get(&channel_id)
    }

    /// A member, to check its shares or set its target.
    pub fn channel_mut(&mut self, channel_id: u32) -> Option<&mut ServerChannel> {
        self.members.get_mut(&channel_id)
    }

    /// The members' channel ids, ascending.
    pub fn channel_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.keys().copied()
    }

    /// `SetTarget` to the group: every member's target.
    pub fn set_target(&mut self, target: U256) {
        for member in self.members.values_mut() {
            member.set_target(target);
        }
    }

    /// The `SetGroupChannel` listing the members.
    ///
    /// # Errors
    /// [`JobError::TooLarge`] with more than 65,535 members.
    pub fn set_group_channel_message(&self) -> Result<SetGroupChannel, JobError> {
        let ids: Vec<u32> = self.channel_ids().collect();
        Ok(SetGroupChannel {
            group_channel_id: self.group_channel_id(),
            channel_ids: Seq064K::from_slice(&ids).map_err(|_| JobError::TooLarge)?,
        })
    }

    /// Builds the group's job of a `NewTemplate` and gives it to every member (as
    /// [`ServerChannel::on_new_template`]: a future template's job waits for its
    /// `SetNewPrevHash`).
    ///
    /// # Errors
    /// [`JobError`]; no member changes then.
    pub fn on_new_template(&mut self, template: &NewTemplate) -> Result<Job, JobError> {
        let job = self.jobs.on_new_template(template)?;
        for member in self.members.values_mut() {
            member.next_job_id = self.jobs.next_job_id;
            if template.future_template {
                member.future.insert(template.template_id, job.clone());
            } else {
                member.push_active(job.clone());
            }
        }
        Ok(job)
    }

    /// Makes a job built elsewhere (an upstream's group job that a proxy relays, say)
    /// active for every member on the current chain tip, as
    /// [`ServerChannel::install_active_job`]; later ids continue after it.
    pub fn install_active_job(&mut self, job: Job) {
        self.jobs.install_active_job(job.clone());
        for member in self.members.values_mut() {
            member.install_active_job(job.clone());
            member.next_job_id = self.jobs.next_job_id;
        }
    }

    /// A new chain tip for every member; returns the group's `SetNewPrevHash` (`None` if
    /// the group has no future job of that template), as
    /// [`ServerChannel::on_set_new_prev_hash`].
    pub fn on_set_new_prev_hash(&mut self, tip: &SetNewPrevHashTdp) -> Option<SetNewPrevHash> {
        for member in self.members.values_mut() {
            member.on_set_new_prev_hash(tip);
        }
        self.jobs.on_set_new_prev_hash(tip)
    }

    /// As [`on_set_new_prev_hash`](Self::on_set_new_prev_hash), with a tip set directly
    /// ([`ServerChannel::set_chain_tip`]).
    pub fn set_chain_tip(&mut self, tip: ChainTip) -> Option<SetNewPrevHash> {
        for member in self.members.values_mut() {
            member.set_chain_tip(tip);
        }
        self.jobs.set_chain_tip(tip)
    }

    /// The `NewExtendedMiningJob` announcing `job` to the whole group (its `channel_id`
    /// is the group's).
    ///
    /// # Errors
    /// [`JobError::TooLarge`] if a part does not fit its wire type.
    pub fn extended_job_message(
        &self,
        job: &Job,
        future: bool,
    ) -> Result<NewExtendedMiningJob, JobError> {
        self.jobs.extended_job_message(job, future)
    }

    /// One `NewMiningJob` per member, ascending by channel id, each with the merkle root
    /// of `job`'s coinbase holding that member's extranonce prefix.
    pub fn standard_job_messages(&self, job: &Job, future: bool) -> Vec<NewMiningJob> {
        self.members
            .values()
            .map(|m| m.standard_job_message(job, future))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientChannel;
    use crate::pow::{header, meets_target, merkle_root, sha256d, target_with_zero_bits};
    use crate::server::{BIP320_VERSION_MASK, Share, ShareError, ShareOk};
    use sv2c_binary::{B064K, B0255, Seq0255};

    const NTIME: u32 = 1_700_000_000;
    const NBITS: u32 = 0x1703_0000;

    fn template(id: u64, future: bool) -> NewTemplate {
        NewTemplate {
            template_id: id,
            future_template: future,
            version: 0x2000_0000,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c][..]).unwrap(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: 100,
            coinbase_tx_outputs_count: 0,
            coinbase_tx_outputs: B064K::default(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::from_slice(&[U256([1; 32]), U256([2; 32])]).unwrap(),
        }
    }

    fn tip(id: u64, prev: u8) -> SetNewPrevHashTdp {
        SetNewPrevHashTdp {
            template_id: id,
            prev_hash: U256([prev; 32]),
            header_timestamp: NTIME,
            n_bits: NBITS,
            target: target_with_zero_bits(64),
        }
    }

    fn member(id: u32, prefix: [u8; 6]) -> ServerChannel {
        ServerChannel::standard(
            id,
            prefix.to_vec(),
            target_with_zero_bits(8),
            BIP320_VERSION_MASK,
            Vec::new(),
        )
    }

    fn group() -> GroupChannel {
        let pool = [CoinbaseOutput {
            value: 100,
            script_pubkey: [0x51].to_vec(),
        }];
        let mut g = GroupChannel::new(100, 6, BIP320_VERSION_MASK, pool.to_vec());
        for (id, p) in [(3, [1u8; 6]), (1, [2; 6]), (2, [3; 6])] {
            g.add_channel(member(id, p)).unwrap();
        }
        g
    }

    /// What a proxy does with the group's job for a standard channel of `prefix`
    /// (spec §5.1.2.1): the client side of a channel with that prefix and no rollable
    /// bytes; the header it builds holds the merkle root.
    fn derived_root(
        ext: &NewExtendedMiningJob,
        prev: &SetNewPrevHash,
        prefix: [u8; 6],
    ) -> [u8; 32] {
        let mut client = ClientChannel::new(prefix.to_vec(), 0, U256([0xff; 32]));
        client.on_new_job(ext);
        client.on_set_new_prev_hash(prev);
        let h = client
            .header(ext.job_id, &[], ext.version, NTIME, 0)
            .unwrap();
        h[36..68].try_into().unwrap()
    }

    /// A nonce whose header (root, NTIME, prev) meets `hit` and misses every `miss`.
    fn mine(prev: u8, root: &[u8; 32], others: &[[u8; 32]]) -> u32 {
        let t = target_with_zero_bits(8);
        let hash = |r: &[u8; 32], n| sha256d(&header(0x2000_0000, &[prev; 32], r, NTIME, NBITS, n));
        (0u32..)
            .find(|&n| {
                meets_target(&hash(root, n), &t)
                    && others.iter().all(|o| !meets_target(&hash(o, n), &t))
            })
            .unwrap()
    }

    /// A tip set directly moves the group and every member as the Template Distribution
    /// `SetNewPrevHash` of the same values does.
    #[test]
    fn a_tip_set_directly_reaches_every_member() {
        let (mut a, mut b) = (group(), group());
        let job = a.on_new_template(&template(1, true)).unwrap();
        b.on_new_template(&template(1, true)).unwrap();
        let t = tip(1, 9);
        let direct = ChainTip {
            template_id: 1,
            prev_hash: t.prev_hash.0,
            min_ntime: t.header_timestamp,
            nbits: t.n_bits,
            network_target: t.target,
        };
        let sent = a.set_chain_tip(direct);
        assert_eq!(sent, b.on_set_new_prev_hash(&t));
        assert_eq!(
            sent.map(|p| (p.channel_id, p.job_id)),
            Some((100, job.job_id))
        );
        for id in [1, 2, 3] {
            let member = a.channel(id).unwrap();
            assert_eq!(member.chain_tip(), Some(&direct));
            assert!(member.job(job.job_id).is_some());
        }
    }

    #[test]
    fn one_job_for_the_group_and_a_root_per_member() {
        let mut g = group();
        let set = g.set_group_channel_message().unwrap();
        assert_eq!(set.group_channel_id, 100);
        assert_eq!(set.channel_ids.iter().collect::<Vec<_>>(), [1, 2, 3]);

        let job = g.on_new_template(&template(1, true)).unwrap();
        let ext = g.extended_job_message(&job, true).unwrap();
        assert_eq!((ext.channel_id, ext.min_ntime), (100, None));
        let prev = g.on_set_new_prev_hash(&tip(1, 9)).unwrap();
        assert_eq!((prev.channel_id, prev.job_id), (100, job.job_id));

        let std = g.standard_job_messages(&job, true);
        assert_eq!(
            std.iter().map(|m| m.channel_id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let prefixes = [[2u8; 6], [3; 6], [1; 6]];
        let roots: Vec<[u8; 32]> = std.iter().map(|m| m.merkle_root.0).collect();
        for (m, p) in std.iter().zip(prefixes) {
            assert_eq!(m.job_id, job.job_id);
            assert_eq!(m.merkle_root.0, derived_root(&ext, &prev, p));
        }
        // Three prefixes, three roots.
        assert!(roots[0] != roots[1] && roots[1] != roots[2] && roots[0] != roots[2]);

        // A share mined on channel 2's root is valid there, and only there.
        let nonce = mine(9, &roots[1], &[roots[0], roots[2]]);
        let share = Share {
            job_id: job.job_id,
            nonce,
            ntime: NTIME,
            version: 0x2000_0000,
            extranonce: &[],
        };
        assert!(matches!(
            g.channel_mut(2).unwrap().validate_share(&share),
            Ok(ShareOk::Valid { .. })
        ));
        for other in [1, 3] {
            assert_eq!(
                g.channel_mut(other).unwrap().validate_share(&share),
                Err(ShareError::TargetNotMet)
            );
        }

        // A new tip: the old job is stale on every member, the new one valid.
        let job2 = g.on_new_template(&template(2, true)).unwrap();
        g.on_set_new_prev_hash(&tip(2, 8)).unwrap();
        assert_eq!(
            g.channel_mut(2).unwrap().validate_share(&share),
            Err(ShareError::Stale)
        );
        let root = g.standard_job_messages(&job2, false)[0].merkle_root.0;
        let n = mine(8, &root, &[]);
        let share2 = Share {
            job_id: job2.job_id,
            nonce: n,
            ntime: NTIME,
            version: 0x2000_0000,
            extranonce: &[],
        };
        assert!(g.channel_mut(1).unwrap().validate_share(&share2).is_ok());
        // A job active at once reaches every member too.
        let job3 = g.on_new_template(&template(3, false)).unwrap();
        let ext3 = g.extended_job_message(&job3, false).unwrap();
        assert_eq!(ext3.min_ntime, Some(NTIME));
        for id in [1, 2, 3] {
            assert!(g.channel(id).unwrap().job(job3.job_id).is_some());
        }
    }

    /// A channel that checked shares on its own job 1 joins a group whose job 1 is another
    /// job: its shares are checked against the group job's root, not the one it used before.
    #[test]
    fn a_joining_channel_forgets_the_roots_of_its_own_jobs() {
        let mut g = group();
        let mut own = template(1, true);
        own.merkle_path = Seq0255::from_slice(&[U256([5; 32])]).unwrap();
        let mut late = member(8, [8; 6]);
        let own_job = late.on_new_template(&own).unwrap();
        late.on_set_new_prev_hash(&tip(1, 9)).unwrap();
        let own_root = merkle_root(
            sha256d(&own_job.coinbase(&[&[8; 6]])),
            own_job.merkle_path.iter(),
        );
        let job = g.on_new_template(&template(1, true)).unwrap();
        let ext = g.extended_job_message(&job, true).unwrap();
        let prev = g.on_set_new_prev_hash(&tip(1, 9)).unwrap();
        assert_eq!(own_job.job_id, job.job_id);
        let root = derived_root(&ext, &prev, [8; 6]);
        assert_ne!(root, own_root);
        let share = |nonce| Share {
            job_id: job.job_id,
            nonce,
            ntime: NTIME,
            version: 0x2000_0000,
            extranonce: &[],
        };
        // A share on its own job: its root is what the channel remembers.
        let nonce = mine(9, &own_root, &[]);
        assert!(late.validate_share(&share(nonce)).is_ok());
        g.add_channel(late).unwrap();
        let nonce = mine(9, &root, &[own_root]);
        assert!(matches!(
            g.channel_mut(8).unwrap().validate_share(&share(nonce)),
            Ok(ShareOk::Valid { .. })
        ));
    }

    #[test]
    fn joining_checks_the_channel_and_hands_it_the_group_jobs() {
        let mut g = group();
        g.add_channel(member(4, [0; 6])).unwrap();
        assert_eq!(
            g.add_channel(member(4, [9; 6])),
            Err(GroupError::DuplicateChannelId(4))
        );
        assert_eq!(
            g.add_channel(member(100, [5; 6])),
            Err(GroupError::DuplicateChannelId(100))
        );
        let short = ServerChannel::standard(5, [0; 5].to_vec(), U256([0xff; 32]), 0, Vec::new());
        assert_eq!(
            g.add_channel(short),
            Err(GroupError::ExtranonceSizeMismatch {
                got: 5,
                expected: 6
            })
        );
        let extended =
            ServerChannel::extended(6, [0; 6].to_vec(), 4, U256([0xff; 32]), 0, Vec::new());
        assert_eq!(g.add_channel(extended), Err(GroupError::NotStandard));

        let job = g.on_new_template(&template(1, true)).unwrap();
        g.on_set_new_prev_hash(&tip(1, 9)).unwrap();
        // A channel that had issued jobs up to id 40 on its own joins.
        let mut late = member(7, [7; 6]);
        late.install_active_job(Job {
            job_id: 40,
            ..job.clone()
        });
        g.add_channel(late).unwrap();
        let joined = g.channel(7).unwrap();
        assert_eq!(joined.chain_tip(), g.chain_tip());
        assert!(joined.job(job.job_id).is_some());
        // Its own job 40 is gone: stale.
        let old = Share {
            job_id: 40,
            nonce: 0,
            ntime: NTIME,
            version: 0x2000_0000,
            extranonce: &[],
        };
        assert_eq!(
            g.channel_mut(7).unwrap().validate_share(&old),
            Err(ShareError::Stale)
        );
        // The next group job's id is past 40 on every member.
        let next = g.on_new_template(&template(2, false)).unwrap();
        assert_eq!(next.job_id, 41);
        g.set_target(target_with_zero_bits(20));
        assert_eq!(g.channel(1).unwrap().target(), &target_with_zero_bits(20));
        assert!(g.remove_channel(7).is_some());
        assert_eq!(g.channel_ids().collect::<Vec<_>>(), [1, 2, 3, 4]);
    }
}
