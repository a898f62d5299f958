//! The job Declaration messages' definitions, in wire order ([`super`] re-exports them).

use crate::{B016M, B032, B064K, B0255, Seq064K, Str0255, U256, Wire};

messages! {
    /// `AllocateMiningJobToken` (0x50): the JDC asks for a token to declare a job with.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x50)]
    pub struct AllocateMiningJobToken {
        /// Who is asking: any bytes, UTF-8 recommended. Comes **before** `request_id`.
        pub user_identifier: Str0255,
        /// Client-chosen id, echoed in the reply.
        pub request_id: u32,
    }

    /// `AllocateMiningJobToken.Success` (0x51): a token and the pool's coinbase outputs.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x51)]
    pub struct AllocateMiningJobTokenSuccess {
        /// The request being answered.
        pub request_id: u32,
        /// Token to declare a job with.
        pub mining_job_token: B0255,
        /// Outputs the coinbase must contain, CompactSize-prefixed; the first pays the pool
        /// (spec name `coinbase_tx_outputs`).
        pub coinbase_outputs: B064K,
    }

    /// `ProvideMissingTransactions` (0x55): the JDS asks for transactions of a declared job it
    /// does not know.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x55)]
    pub struct ProvideMissingTransactions {
        /// Id of the `DeclareMiningJob` concerned.
        pub request_id: u32,
        /// 0-based positions in that job's `wtxid_list`.
        pub unknown_tx_position_list: Seq064K<u16>,
    }

    /// `ProvideMissingTransactions.Success` (0x56): the JDC sends the transactions asked for.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x56)]
    pub struct ProvideMissingTransactionsSuccess {
        /// The request being answered.
        pub request_id: u32,
        /// Full serialized transactions, in the order asked for.
        pub transaction_list: Seq064K<B016M>,
    }

    /// `DeclareMiningJob` (0x57): the JDC declares the job it will mine.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x57)]
    pub struct DeclareMiningJob {
        /// Client-chosen id, echoed in the reply.
        pub request_id: u32,
        /// Token obtained with `AllocateMiningJobToken`.
        pub mining_job_token: B0255,
        /// Block header version.
        pub version: u32,
        /// Coinbase bytes before the extranonce (segwit fields kept).
        pub coinbase_tx_prefix: B064K,
        /// Coinbase bytes after the extranonce (segwit fields kept).
        pub coinbase_tx_suffix: B064K,
        /// Witness txids of the block's transactions, coinbase excluded.
        pub wtxid_list: Seq064K<U256>,
        /// Reserved for future use.
        pub excess_data: B064K,
    }

    /// `DeclareMiningJob.Success` (0x58): the job is accepted.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x58)]
    pub struct DeclareMiningJobSuccess {
        /// The request being answered.
        pub request_id: u32,
        /// Token to use in `SetCustomMiningJob` for this job.
        pub new_mining_job_token: B0255,
    }

    /// `DeclareMiningJob.Error` (0x59): the job is refused.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x59)]
    pub struct DeclareMiningJobError {
        /// The request being answered.
        pub request_id: u32,
        /// Machine-readable reason, e.g. `invalid-mining-job-token`.
        pub error_code: Str0255,
        /// Extra details, format depending on the error.
        pub error_details: B064K,
    }

    /// `PushSolution` (0x60): the JDC reports a block it found, so the JDS can propagate it.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    // 8-byte aligned so that it is written straight into its `Message` variant (ADR 0004).
    #[repr(align(8))]
    #[sv2(msg_type = 0x60)]
    pub struct PushSolution {
        /// The full extranonce.
        #[sv2(borrow)]
        pub extranonce: B032,
        /// Previous block hash.
        #[sv2(borrow)]
        pub prev_hash: U256,
        /// Header nonce.
        pub nonce: u32,
        /// Header ntime.
        pub ntime: u32,
        /// Header nbits.
        pub nbits: u32,
        /// Header version.
        pub version: u32,
    }
}
