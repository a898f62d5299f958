//! Jobs: standard and extended mining jobs, and the new previous block hash that
//! activates them.

use crate::{B064K, Seq0255, U256, Wire};

messages! {
    /// `NewMiningJob` (0x15, channel message): a job for a standard channel, with the merkle
    /// root already computed.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    // 8-byte aligned so that it is written straight into its `Message` variant (ADR 0004).
    #[repr(align(8))]
    #[sv2(msg_type = 0x15, channel_msg)]
    pub struct NewMiningJob {
        /// A standard channel.
        pub channel_id: u32,
        /// Id of this job within the channel.
        pub job_id: u32,
        /// Smallest ntime allowed; absent for a future job, activated by a later
        /// [`SetNewPrevHash`].
        pub min_ntime: Option<u32>,
        /// Block header version.
        pub version: u32,
        /// Merkle root for the block header.
        pub merkle_root: U256,
    }

    /// `NewExtendedMiningJob` (0x1f, channel message): a job for an extended or group channel;
    /// the client builds the coinbase and merkle root itself.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x1f, channel_msg)]
    pub struct NewExtendedMiningJob {
        /// An extended channel, or a group (the job then goes to every channel in it).
        pub channel_id: u32,
        /// Id of this job within the channel.
        pub job_id: u32,
        /// Smallest ntime allowed; absent for a future job.
        pub min_ntime: Option<u32>,
        /// Block header version.
        pub version: u32,
        /// Whether the client may roll the version bits.
        pub version_rolling_allowed: bool,
        /// Merkle path from the coinbase to the root, deepest node first.
        pub merkle_path: Seq0255<U256>,
        /// Coinbase transaction bytes before the extranonce (segwit fields removed).
        pub coinbase_tx_prefix: B064K,
        /// Coinbase transaction bytes after the extranonce (segwit fields removed).
        pub coinbase_tx_suffix: B064K,
    }

    /// `SetNewPrevHash` (0x20, channel message, Mining protocol): a new block was found; the
    /// named future job becomes active. (The Template Distribution message of the same name
    /// is [`template_distribution::SetNewPrevHash`](crate::messages::template_distribution::SetNewPrevHash).)
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x20, channel_msg)]
    // 8-byte aligned for the same reason as `UpdateChannel` (docs/adr/0004-message-enum-layout.md).
    #[repr(align(8))]
    pub struct SetNewPrevHash {
        /// Channel or group.
        pub channel_id: u32,
        /// A future job sent earlier, now active.
        pub job_id: u32,
        /// Hash of the previous block.
        #[sv2(borrow)]
        pub prev_hash: U256,
        /// Smallest ntime allowed (a plain U32 here, not an OPTION).
        pub min_ntime: u32,
        /// Block header nbits.
        pub nbits: u32,
    }
}
