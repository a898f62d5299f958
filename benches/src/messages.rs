//! The messages the benchmarks decode and encode, with fixed, typical field values.
//!
//! * [`SeedMsg`]: the shape of the seed experiment (`channel_id`, a `U256` merkle root
//!   and a `B0_64K` coinbase suffix), defined here with the derive, like any user's
//!   extension message. [`SeedMsgLarge`] is the same with a `B0_16M` suffix, for
//!   payloads larger than a pool slot.
//! * Real protocol messages with the sizes of the side-by-side rows
//!   ([`setup_connection`], [`new_extended_mining_job`], [`submit_shares_extended`],
//!   [`set_new_prev_hash`], [`new_template`], [`declare_mining_job`]).

use sv2c_binary::messages::{
    DeclareMiningJob, NewExtendedMiningJob, NewTemplate, SetNewPrevHash, SetupConnection,
    SubmitSharesExtended, encode_frame,
};
use sv2c_binary::{
    B016M, B032, B064K, B0255, Frameable, Protocol, Seq064K, Seq0255, Str0255, U256, Wire,
};

/// The seed experiment's message: a channel id, a merkle root and a coinbase suffix
/// (`B0_64K`). A channel message of an experimental extension.
#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(
    extension_type = 0x4000,
    msg_type = 0x01,
    channel_msg,
    name = "SeedMsg"
)]
pub struct SeedMsg {
    /// Channel id (first field of a channel message).
    pub channel_id: u32,
    /// A 32-byte hash.
    pub merkle_root: U256,
    /// The variable part; its size is the benchmark parameter.
    pub coinbase_suffix: B064K,
}

/// [`SeedMsg`] with a `B0_16M` suffix, for payloads larger than a pool slot (1 MiB).
#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(
    extension_type = 0x4000,
    msg_type = 0x02,
    channel_msg,
    name = "SeedMsgLarge"
)]
pub struct SeedMsgLarge {
    /// Channel id (first field of a channel message).
    pub channel_id: u32,
    /// A 32-byte hash.
    pub merkle_root: U256,
    /// The variable part, up to 2^24 − 1 bytes.
    pub coinbase_suffix: B016M,
}

/// `len` bytes of a fixed, non-constant pattern.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn hash(seed: u8) -> U256 {
    let mut h = [0u8; 32];
    h.copy_from_slice(&pattern(32, seed));
    U256(h)
}

/// A [`SeedMsg`] whose coinbase suffix has `suffix_len` bytes (at most 65 535).
pub fn seed_msg(suffix_len: usize) -> SeedMsg {
    SeedMsg {
        channel_id: 1,
        merkle_root: hash(0x42),
        coinbase_suffix: B064K::try_from(pattern(suffix_len, 0xab)).expect("at most 65 535"),
    }
}

/// A [`SeedMsgLarge`] whose coinbase suffix has `suffix_len` bytes.
pub fn seed_msg_large(suffix_len: usize) -> SeedMsgLarge {
    SeedMsgLarge {
        channel_id: 1,
        merkle_root: hash(0x42),
        coinbase_suffix: B016M::try_from(pattern(suffix_len, 0xab)).expect("below 16 MiB"),
    }
}

/// `SetupConnection` of a mining device, with typical strings.
pub fn setup_connection() -> SetupConnection {
    let s = |v: &str| Str0255::try_from(v).expect("short string");
    SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 0b110,
        endpoint_host: s("stratum.pool.example.org"),
        endpoint_port: 3336,
        vendor: s("Bitmain"),
        hardware_version: s("S21 Pro"),
        firmware: s("braiins-os-2025-01-15-0-a1b2c3d4"),
        device_id: s("rig-0042"),
    }
}

/// `NewExtendedMiningJob` with a 12-hash merkle path, a 64-byte coinbase prefix and a
/// 256-byte coinbase suffix.
pub fn new_extended_mining_job() -> NewExtendedMiningJob {
    let path: Vec<U256> = (0..12).map(hash).collect();
    NewExtendedMiningJob {
        channel_id: 7,
        job_id: 1234,
        min_ntime: Some(0x6650_0000),
        version: 0x2000_0000,
        version_rolling_allowed: true,
        merkle_path: Seq0255::from_slice(&path).expect("12 hashes"),
        coinbase_tx_prefix: B064K::try_from(pattern(64, 1)).expect("64 bytes"),
        coinbase_tx_suffix: B064K::try_from(pattern(256, 2)).expect("256 bytes"),
    }
}

/// `SubmitSharesExtended` with an 8-byte extranonce.
pub fn submit_shares_extended() -> SubmitSharesExtended {
    SubmitSharesExtended {
        channel_id: 7,
        sequence_number: 99,
        job_id: 1234,
        nonce: 0xdead_beef,
        ntime: 0x6650_0000,
        version: 0x2000_0000,
        extranonce: B032::try_from(&pattern(8, 3)[..]).expect("8 bytes"),
    }
}

/// `SetNewPrevHash` of the Mining protocol.
pub fn set_new_prev_hash() -> SetNewPrevHash {
    SetNewPrevHash {
        channel_id: 7,
        job_id: 1235,
        prev_hash: hash(9),
        min_ntime: 0x6650_0010,
        nbits: 0x1703_4219,
    }
}

/// `NewTemplate` with a 12-hash merkle path, a 64-byte coinbase prefix and 47 bytes of
/// coinbase outputs.
pub fn new_template() -> NewTemplate {
    let path: Vec<U256> = (0..12).map(hash).collect();
    NewTemplate {
        template_id: 42,
        future_template: false,
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        coinbase_prefix: B0255::try_from(pattern(64, 4)).expect("64 bytes"),
        coinbase_tx_input_sequence: 0xffff_ffff,
        coinbase_tx_value_remaining: 312_500_000,
        coinbase_tx_outputs_count: 1,
        coinbase_tx_outputs: B064K::try_from(pattern(47, 5)).expect("47 bytes"),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::from_slice(&path).expect("12 hashes"),
    }
}

/// `DeclareMiningJob` with 2000 wtxids, a 32-byte token, a 64-byte coinbase prefix and a
/// 256-byte coinbase suffix.
pub fn declare_mining_job() -> DeclareMiningJob {
    let wtxids: Vec<U256> = (0..2000u32).map(|i| hash(i as u8)).collect();
    DeclareMiningJob {
        request_id: 5,
        mining_job_token: B0255::try_from(pattern(32, 6)).expect("32 bytes"),
        version: 0x2000_0000,
        coinbase_tx_prefix: B064K::try_from(pattern(64, 7)).expect("64 bytes"),
        coinbase_tx_suffix: B064K::try_from(pattern(256, 8)).expect("256 bytes"),
        wtxid_list: Seq064K::from_slice(&wtxids).expect("2000 hashes"),
        excess_data: B064K::default(),
    }
}

/// The whole frame (6-byte header and payload) of a message.
pub fn frame_of<M: Frameable + ?Sized>(msg: &M) -> Vec<u8> {
    encode_frame(msg).expect("below the maximum frame size")
}

/// The payload of a message (no header).
pub fn payload_of<M: Wire>(msg: &M) -> Vec<u8> {
    msg.encode_to_vec()
}
