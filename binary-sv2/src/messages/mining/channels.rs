//! Opening, updating and closing channels; extranonce prefixes, targets and groups.

use crate::{B032, Seq064K, Str0255, U256, Wire};

messages! {
    /// `OpenStandardMiningChannel` (0x10): asks for a standard channel (header-only mining).
    #[derive(Debug, Clone, Default, PartialEq, Wire)]
    #[sv2(msg_type = 0x10)]
    pub struct OpenStandardMiningChannel {
        /// Client-chosen id, unique per connection, echoed in the reply.
        pub request_id: u32,
        /// Who is mining: any bytes, UTF-8 recommended.
        pub user_identity: Str0255,
        /// Expected hash rate in hashes per second (0.0 from a proxy with no devices yet).
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::f32_field"))]
        pub nominal_hash_rate: f32,
        /// Largest target the device(s) accept.
        #[sv2(borrow)]
        pub max_target: U256,
    }

    /// `OpenStandardMiningChannel.Success` (0x11): the standard channel is open.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x11)]
    pub struct OpenStandardMiningChannelSuccess {
        /// The request being answered.
        pub request_id: u32,
        /// Id of the new channel.
        pub channel_id: u32,
        /// Initial target.
        #[sv2(borrow)]
        pub target: U256,
        /// Extranonce prefix assigned to the channel.
        #[sv2(borrow)]
        pub extranonce_prefix: B032,
        /// Group channel the new channel belongs to.
        pub group_channel_id: u32,
    }

    /// `OpenMiningChannel.Error` (0x12): answers either open request with a refusal.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x12)]
    pub struct OpenMiningChannelError {
        /// The request being answered.
        pub request_id: u32,
        /// Machine-readable reason, e.g. `unknown-user`.
        pub error_code: Str0255,
    }

    /// `OpenExtendedMiningChannel` (0x13): asks for an extended channel (the client rolls part
    /// of the extranonce and builds its own merkle root).
    #[derive(Debug, Clone, Default, PartialEq, Wire)]
    #[sv2(msg_type = 0x13)]
    pub struct OpenExtendedMiningChannel {
        /// Client-chosen id, unique per connection, echoed in the reply.
        pub request_id: u32,
        /// Who is mining: any bytes, UTF-8 recommended.
        pub user_identity: Str0255,
        /// Expected hash rate in hashes per second.
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::f32_field"))]
        pub nominal_hash_rate: f32,
        /// Largest target the device(s) accept.
        #[sv2(borrow)]
        pub max_target: U256,
        /// Smallest extranonce space (bytes) the client needs to roll.
        pub min_extranonce_size: u16,
    }

    /// `OpenExtendedMiningChannel.Success` (0x14): the extended channel is open.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x14)]
    pub struct OpenExtendedMiningChannelSuccess {
        /// The request being answered.
        pub request_id: u32,
        /// Id of the new channel.
        pub channel_id: u32,
        /// Initial target.
        #[sv2(borrow)]
        pub target: U256,
        /// Extranonce bytes the client may roll (comes before the prefix on the wire).
        pub extranonce_size: u16,
        /// Extranonce prefix assigned to the channel.
        #[sv2(borrow)]
        pub extranonce_prefix: B032,
        /// Group channel the new channel belongs to.
        pub group_channel_id: u32,
    }

    /// `UpdateChannel` (0x16, channel message): the client reports a new hash rate or maximum
    /// target.
    #[derive(Debug, Clone, Default, PartialEq, Wire)]
    #[sv2(msg_type = 0x16, channel_msg)]
    // 8-byte aligned: with the borrowed target below, the owned decode copies the target from
    // the frame, and only at an 8-byte aligned place does the compiler write it in whole words
    // instead of through byte-granular stack copies (docs/adr/0004-message-enum-layout.md).
    #[repr(align(8))]
    pub struct UpdateChannel {
        /// The channel being updated.
        pub channel_id: u32,
        /// New expected hash rate in hashes per second.
        #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::f32_field"))]
        pub nominal_hash_rate: f32,
        /// New largest acceptable target. In [`UpdateChannelRef`] a `&[u8; 32]` into the frame
        /// (`#[sv2(borrow)]`, ADR 0007 and 0008).
        #[sv2(borrow)]
        pub maximum_target: U256,
    }

    /// `UpdateChannel.Error` (0x17, channel message): the update was refused.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x17, channel_msg)]
    pub struct UpdateChannelError {
        /// The channel the update was for.
        pub channel_id: u32,
        /// Machine-readable reason, e.g. `invalid-channel-id`.
        pub error_code: Str0255,
    }

    /// `CloseChannel` (0x18, channel message): either side closes a channel (a group id closes
    /// every channel in the group).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x18, channel_msg)]
    pub struct CloseChannel {
        /// The channel (or group) being closed.
        pub channel_id: u32,
        /// Why; printable ASCII without control characters.
        pub reason_code: Str0255,
    }

    /// `SetExtranoncePrefix` (0x19, channel message): the server changes a channel's
    /// extranonce prefix.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x19, channel_msg)]
    pub struct SetExtranoncePrefix {
        /// The channel concerned.
        pub channel_id: u32,
        /// The new prefix. In [`SetExtranoncePrefixRef`] a slice of the frame
        /// (`#[sv2(borrow)]`, a [`B032Ref`](crate::B032Ref)), not a 33-byte inline copy.
        #[sv2(borrow)]
        pub extranonce_prefix: B032,
    }

    /// `SetTarget` (0x21, channel message): the server changes a channel's maximum target.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x21, channel_msg)]
    // 8-byte aligned for the same reason as `UpdateChannel` (ADR 0004).
    #[repr(align(8))]
    pub struct SetTarget {
        /// The channel (or group) concerned.
        pub channel_id: u32,
        /// The new largest target a share may meet. In [`SetTargetRef`] a `&[u8; 32]` into the
        /// frame (`#[sv2(borrow)]`, ADR 0007).
        #[sv2(borrow)]
        pub maximum_target: U256,
    }

    /// `SetGroupChannel` (0x25): the server puts channels into a group. Not a channel
    /// message: the group id is not routed like a channel id.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x25)]
    pub struct SetGroupChannel {
        /// The group.
        pub group_channel_id: u32,
        /// The channels that are now members of it.
        pub channel_ids: Seq064K<u32>,
    }
}
