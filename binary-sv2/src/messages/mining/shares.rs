//! Share submission and its answers.

use crate::tlv::{UserIdentity, WithTlvs};
use crate::{B032, Str0255, Wire};

messages! {
    /// `SubmitSharesStandard` (0x1a, channel message): a share found on a standard channel.
    ///
    /// ```
    /// use sv2c_binary::messages::SubmitSharesStandard;
    /// use sv2c_binary::{Encode, Wire};
    /// let share = SubmitSharesStandard {
    ///     channel_id: 1, sequence_number: 2, job_id: 3,
    ///     nonce: 0xdead_beef, ntime: 0x6650_0000, version: 0x2000_0000,
    /// };
    /// let bytes = share.encode_to_vec();
    /// assert_eq!(bytes.len(), 24);
    /// assert_eq!(SubmitSharesStandard::decode_owned(&bytes), Ok(share));
    /// ```
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    // 8-byte aligned so that it is written straight into its `Message` variant (ADR 0004).
    #[repr(align(8))]
    #[sv2(msg_type = 0x1a, channel_msg)]
    pub struct SubmitSharesStandard {
        /// The channel the share was found on.
        pub channel_id: u32,
        /// Per-channel sequence number, used to acknowledge shares in batches.
        pub sequence_number: u32,
        /// The job the share is for.
        pub job_id: u32,
        /// Header nonce.
        pub nonce: u32,
        /// Header ntime.
        pub ntime: u32,
        /// Full header version.
        pub version: u32,
    }

    /// `SubmitSharesExtended` (0x1b, channel message): a share found on an extended channel,
    /// with the extranonce the client rolled.
    ///
    /// Extensions may append TLV fields after `extranonce`; extension 0x0002 appends the
    /// worker's [`UserIdentity`] (see [`with_user_identity`](Self::with_user_identity) and
    /// [`TlvTail::user_identity`](crate::tlv::TlvTail::user_identity)).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x1b, channel_msg)]
    pub struct SubmitSharesExtended {
        /// The channel the share was found on.
        pub channel_id: u32,
        /// Per-channel sequence number.
        pub sequence_number: u32,
        /// The job the share is for.
        pub job_id: u32,
        /// Header nonce.
        pub nonce: u32,
        /// Header ntime.
        pub ntime: u32,
        /// Full header version.
        pub version: u32,
        /// The client's part of the extranonce; its length must be the channel's
        /// `extranonce_size` (a check for the channel logic, not the codec).
        #[sv2(borrow)]
        pub extranonce: B032,
    }
}

impl SubmitSharesExtended {
    /// This share followed by the extension 0x0002 `user_identity` TLV (spec §3.7), ready
    /// to be framed.
    ///
    /// ```
    /// use sv2c_binary::messages::SubmitSharesExtended;
    /// use sv2c_binary::tlv::UserIdentity;
    /// use sv2c_binary::{B032, Encode};
    /// let share = SubmitSharesExtended {
    ///     channel_id: 1, sequence_number: 2, job_id: 3, nonce: 0xdead_beef,
    ///     ntime: 0x6650_0000, version: 0x2000_0000,
    ///     extranonce: B032::try_from([0xaa, 0xbb, 0xcc, 0xdd]).unwrap(),
    /// };
    /// let bytes = share.with_user_identity(&UserIdentity::try_from("Worker_001").unwrap())
    ///     .encode_to_vec();
    /// // The TLV as the reference writes it: type and length little-endian (SV2-WIRE §3.7).
    /// assert_eq!(bytes[29..], [0x02, 0x00, 0x01, 0x0a, 0x00, b'W', b'o', b'r', b'k', b'e',
    ///     b'r', b'_', b'0', b'0', b'1']);
    /// ```
    pub fn with_user_identity(self, user: &UserIdentity) -> WithTlvs<Self> {
        WithTlvs::new(self).with(user.to_tlv().to_buf())
    }
}

messages! {
    /// `SubmitShares.Success` (0x1c, channel message): acknowledges shares up to a sequence
    /// number.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x1c, channel_msg)]
    pub struct SubmitSharesSuccess {
        /// The channel concerned.
        pub channel_id: u32,
        /// Sequence number of the last share acknowledged.
        pub last_sequence_number: u32,
        /// Shares accepted since the previous acknowledgement.
        pub new_submits_accepted_count: u32,
        /// Sum of the difficulty of those shares.
        pub new_shares_sum: u64,
    }

    /// `SubmitShares.Error` (0x1d, channel message): a share was rejected.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x1d, channel_msg)]
    pub struct SubmitSharesError {
        /// The channel concerned.
        pub channel_id: u32,
        /// Sequence number of the rejected share.
        pub sequence_number: u32,
        /// Machine-readable reason, e.g. `stale-share`.
        pub error_code: Str0255,
    }
}
