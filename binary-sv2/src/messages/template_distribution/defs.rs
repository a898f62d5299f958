//! The template Distribution messages' definitions, in wire order ([`super`] re-exports them).

use crate::{B016M, B064K, B0255, Seq064K, Seq0255, Str0255, U256, Wire};

messages! {
    /// `CoinbaseOutputConstraints` (0x70): how much room the client needs in the coinbase for
    /// its own outputs.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x70)]
    pub struct CoinbaseOutputConstraints {
        /// Bytes the client's additional outputs may take.
        pub coinbase_output_max_additional_size: u32,
        /// Sigops the client's additional outputs may use.
        pub coinbase_output_max_additional_sigops: u16,
    }

    /// `NewTemplate` (0x71): a block template.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x71)]
    pub struct NewTemplate {
        /// Id of the template, echoed in later messages.
        pub template_id: u64,
        /// `true` if the template is for a future block (activated by a later
        /// [`SetNewPrevHash`]).
        pub future_template: bool,
        /// Block header version.
        pub version: u32,
        /// Coinbase transaction version.
        pub coinbase_tx_version: u32,
        /// Start of the coinbase input script (up to 8 bytes by rule).
        pub coinbase_prefix: B0255,
        /// Coinbase input nSequence.
        pub coinbase_tx_input_sequence: u32,
        /// Value (satoshis) left for the client's outputs.
        pub coinbase_tx_value_remaining: u64,
        /// Number of outputs in `coinbase_tx_outputs`.
        pub coinbase_tx_outputs_count: u32,
        /// Serialized outputs the coinbase must contain, **without** a count prefix.
        pub coinbase_tx_outputs: B064K,
        /// Coinbase lock time.
        pub coinbase_tx_locktime: u32,
        /// Merkle path of the coinbase.
        pub merkle_path: Seq0255<U256>,
    }

    /// `SetNewPrevHash` (0x72, Template Distribution): a new chain tip; the named template
    /// becomes current. (The Mining message of the same name is
    /// [`mining::SetNewPrevHash`](crate::messages::mining::SetNewPrevHash).)
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x72)]
    pub struct SetNewPrevHash {
        /// The template that becomes current.
        pub template_id: u64,
        /// Hash of the new previous block.
        #[sv2(borrow)]
        pub prev_hash: U256,
        /// Block header timestamp.
        pub header_timestamp: u32,
        /// Block header nbits (spec name `nBits`).
        pub n_bits: u32,
        /// Network target, as a little-endian integer.
        #[sv2(borrow)]
        pub target: U256,
    }

    /// `RequestTransactionData` (0x73): the client asks for a template's transactions.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x73)]
    pub struct RequestTransactionData {
        /// The template concerned.
        pub template_id: u64,
    }

    /// `RequestTransactionData.Success` (0x74): a template's transactions.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x74)]
    pub struct RequestTransactionDataSuccess {
        /// The template concerned.
        pub template_id: u64,
        /// Reserved for future use.
        pub excess_data: B064K,
        /// Full serialized transactions, coinbase excluded.
        pub transaction_list: Seq064K<B016M>,
    }

    /// `RequestTransactionData.Error` (0x75): the transactions cannot be provided.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x75)]
    pub struct RequestTransactionDataError {
        /// The template concerned.
        pub template_id: u64,
        /// Machine-readable reason, e.g. `template-id-not-found`.
        pub error_code: Str0255,
    }

    /// `SubmitSolution` (0x76): the client found a block on a template.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x76)]
    pub struct SubmitSolution {
        /// The template the block was built on.
        pub template_id: u64,
        /// Header version.
        pub version: u32,
        /// Header timestamp.
        pub header_timestamp: u32,
        /// Header nonce.
        pub header_nonce: u32,
        /// The full coinbase transaction (segwit fields kept).
        pub coinbase_tx: B064K,
    }
}
