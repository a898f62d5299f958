//! Custom jobs: a client that selects its own work declares it on a channel.

use crate::{B064K, B0255, Seq0255, Str0255, U256, Wire};

messages! {
    /// `SetCustomMiningJob` (0x22, channel message): a client that selects its own transactions
    /// (REQUIRES_WORK_SELECTION) declares a job on an extended or group channel.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    // 8-byte aligned so that it is written straight into its `Message` variant (ADR 0004).
    #[repr(align(8))]
    #[sv2(msg_type = 0x22, channel_msg)]
    pub struct SetCustomMiningJob {
        /// Extended or group channel.
        pub channel_id: u32,
        /// Client-chosen id, echoed in the reply.
        pub request_id: u32,
        /// Token from the job declaration (spec name `mining_job_token`).
        pub token: B0255,
        /// Block header version.
        pub version: u32,
        /// Previous block hash. In [`SetCustomMiningJobRef`] a `&[u8; 32]` into the frame
        /// (`#[sv2(borrow)]`), which keeps every `MessageRef` small.
        #[sv2(borrow)]
        pub prev_hash: U256,
        /// Smallest ntime allowed.
        pub min_ntime: u32,
        /// Block header nbits.
        pub nbits: u32,
        /// Coinbase transaction version.
        pub coinbase_tx_version: u32,
        /// Start of the coinbase input script (up to 8 bytes by rule).
        pub coinbase_prefix: B0255,
        /// Coinbase input nSequence (spec name `coinbase_tx_input_nSequence`).
        pub coinbase_tx_input_n_sequence: u32,
        /// Coinbase outputs, serialized with a CompactSize count.
        pub coinbase_tx_outputs: B064K,
        /// Coinbase lock time.
        pub coinbase_tx_locktime: u32,
        /// Merkle path of the coinbase.
        pub merkle_path: Seq0255<U256>,
    }

    /// `SetCustomMiningJob.Success` (0x23, channel message): the custom job was accepted and
    /// given a job id.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    // 8-byte aligned so that it is written straight into its `Message` variant (ADR 0004).
    #[repr(align(8))]
    #[sv2(msg_type = 0x23, channel_msg)]
    pub struct SetCustomMiningJobSuccess {
        /// The channel concerned.
        pub channel_id: u32,
        /// The request being answered.
        pub request_id: u32,
        /// Job id to use in shares for this job.
        pub job_id: u32,
    }

    /// `SetCustomMiningJob.Error` (0x24, channel message): the custom job was refused.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x24, channel_msg)]
    pub struct SetCustomMiningJobError {
        /// The channel concerned.
        pub channel_id: u32,
        /// The request being answered.
        pub request_id: u32,
        /// Machine-readable reason, e.g. `invalid-mining-job-token`.
        pub error_code: Str0255,
    }
}
