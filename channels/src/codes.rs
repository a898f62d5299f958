//! The `error_code` strings servers answer with, one constant each, so that a pool, a
//! proxy and a user's own server answer a miner the same way. The spec lists codes per
//! message; where it names none this crate uses SRI's (SV2-WIRE, Appendix B), and the few
//! of this crate's own are marked so.

/// `SetupConnection.Error`: the `protocol` field names a protocol the server does not
/// serve.
pub const UNSUPPORTED_PROTOCOL: &str = "unsupported-protocol";
/// `SetupConnection.Error`: no protocol version in `min_version ..= max_version` is one
/// the server speaks.
pub const PROTOCOL_VERSION_MISMATCH: &str = "protocol-version-mismatch";
/// `SetupConnection.Error`: a `REQUIRES_…` flag the server cannot honour (named in
/// `flags`).
pub const UNSUPPORTED_FEATURE_FLAGS: &str = "unsupported-feature-flags";
/// `OpenMiningChannel.Error`: the server cannot leave that many extranonce bytes.
pub const MIN_EXTRANONCE_SIZE_TOO_LARGE: &str = "min-extranonce-size-too-large";
/// `OpenMiningChannel.Error`, `UpdateChannel.Error`: a `max_target` the server cannot
/// honour.
pub const MAX_TARGET_OUT_OF_RANGE: &str = "max-target-out-of-range";
/// `OpenMiningChannel.Error`: a channel budget (per connection or server-wide) is
/// exhausted. This crate's own: the spec names none.
pub const TOO_MANY_CHANNELS: &str = "too-many-channels";
/// `UpdateChannel.Error`, `SubmitShares.Error`, `SetCustomMiningJob.Error`: no such
/// channel on this connection.
pub const INVALID_CHANNEL_ID: &str = "invalid-channel-id";
/// `SubmitShares.Error`: a share that cannot be checked (it does not decode), or whose
/// `ntime` is outside the allowed window.
pub const INVALID_SHARE: &str = "invalid-share";
/// `SubmitShares.Error`: the share's `user_identity` TLV (extension 0x0002) is longer
/// than 32 bytes, or the TLV tail is malformed before it.
pub const INVALID_USER_IDENTITY: &str = "invalid-user-identity";
/// `SubmitShares.Error`: the job was issued for an earlier chain tip.
pub const STALE_SHARE: &str = "stale-share";
/// `SubmitShares.Error`: the job was never issued on this channel.
pub const INVALID_JOB_ID: &str = "invalid-job-id";
/// `SubmitShares.Error`: the header hash is above the channel target.
pub const DIFFICULTY_TOO_LOW: &str = "difficulty-too-low";
/// `SubmitShares.Error`: the same share was accepted already.
pub const DUPLICATE_SHARE: &str = "duplicate-share";
/// `SubmitShares.Error`: the extranonce is not the size the channel granted.
pub const BAD_EXTRANONCE_SIZE: &str = "bad-extranonce-size";
/// `SubmitShares.Error`: version bits changed outside the rolling mask.
pub const INVALID_NON_ROLLABLE_VERSION_BIT: &str = "invalid-non-rollable-version-bit";
/// Any `.Error`: the server failed on its side.
pub const INTERNAL_ERROR: &str = "internal-error";
/// `SetCustomMiningJob.Error`: the server refused the mining job token.
pub const INVALID_MINING_JOB_TOKEN: &str = "invalid-mining-job-token";
/// `SetCustomMiningJob.Error`: the job's previous block hash is not the current tip.
pub const STALE_CHAIN_TIP: &str = "stale-chain-tip";
/// `SetCustomMiningJob.Error`: the job's `nbits` is not the current tip's.
pub const INVALID_NBITS: &str = "invalid-nbits";
/// `SetCustomMiningJob.Error`: the job's `min_ntime` is below the tip's, or further
/// ahead of it than the channel's `ntime` window.
pub const INVALID_MIN_NTIME: &str = "invalid-min-ntime";
/// `SetCustomMiningJob.Error`: the job's version's top three bits are not `001`.
pub const INVALID_VERSION: &str = "invalid-version";
/// `SetCustomMiningJob.Error`: the coinbase prefix does not start with a height push, or
/// its scriptSig is outside 2 to 100 bytes.
pub const INVALID_COINBASE_PREFIX: &str = "invalid-coinbase-prefix";
/// `SetCustomMiningJob.Error`: the coinbase outputs are not a list of at least one
/// output, or are worth more than all bitcoin.
pub const INVALID_COINBASE_TX_OUTPUTS: &str = "invalid-coinbase-tx-outputs";
/// `SetCustomMiningJob.Error`: the merkle path is longer than
/// [`MAX_MERKLE_PATH_LEN`](crate::server::MAX_MERKLE_PATH_LEN).
pub const INVALID_MERKLE_PATH: &str = "invalid-merkle-path";
/// `SetCustomMiningJob.Error`: the coinbase does not fit a `NewExtendedMiningJob`.
pub const INVALID_COINBASE_TX: &str = "invalid-coinbase-tx";
