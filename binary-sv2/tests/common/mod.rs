//! Messages used by several test files, defined here with the derive (the real catalog
//! lives in the crate; these exercise the derive on every kind of field).
#![allow(dead_code, missing_docs, unreachable_pub)]

use sv2c_binary::{B016M, B032, B064K, B0255, Seq064K, Seq0255, Str0255, U24, U256, Wire};

/// Same layout as the spec's SubmitSharesStandard (§3.2, 0x1a): fixed-size only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Wire)]
#[sv2(msg_type = 0x1a, channel_msg)]
pub struct Shares {
    pub channel_id: u32,
    pub sequence_number: u32,
    pub job_id: u32,
    pub nonce: u32,
    pub ntime: u32,
    pub version: u32,
}

/// Same layout as SubmitSharesExtended (0x1b): fixed-size fields plus an inline B0_32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Wire)]
#[sv2(msg_type = 0x1b, channel_msg)]
pub struct SharesExt {
    pub channel_id: u32,
    pub sequence_number: u32,
    pub job_id: u32,
    pub nonce: u32,
    pub ntime: u32,
    pub version: u32,
    pub extranonce: B032,
}

/// Every kind of field at once.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4002, msg_type = 0x07)]
pub struct Kitchen {
    pub flag: bool,
    pub small: u8,
    pub port: u16,
    pub len24: U24,
    pub id: u32,
    pub total: u64,
    pub rate: f32,
    pub hash: U256,
    pub prefix: B032,
    pub name: Str0255,
    pub token: B0255,
    pub script: B064K,
    pub blob: B016M,
    pub maybe: Option<u32>,
    pub maybe_name: Option<Str0255>,
    pub path: Seq0255<U256>,
    pub positions: Seq064K<u16>,
    pub ids: Seq064K<u32>,
    pub txs: Seq064K<B016M>,
    pub names: Seq0255<Str0255>,
}

/// A composite (non-message) type used as a field of another derived struct.
#[derive(Debug, Clone, PartialEq, Wire)]
pub struct Output {
    pub value: u64,
    pub script: B064K,
}

/// Uses a user-defined `Wire` type as a field and in a sequence.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4003, msg_type = 0x01)]
pub struct Payout {
    pub request_id: u32,
    pub first: Output,
    pub rest: Seq064K<Output>,
}

/// Panics unless every message of the catalog has a frame among `frames` (whole frames,
/// as in `tests-data/sv2-vectors.jsonl`), naming the first that has none: the suite
/// replaying the golden vectors reaches every message, whatever their number.
pub fn assert_frames_cover_the_catalog<'a>(frames: impl IntoIterator<Item = &'a [u8]>) {
    use sv2c_binary::messages::{CATALOG, frame_parts};
    let seen: std::collections::BTreeSet<(u16, u8)> = frames
        .into_iter()
        .filter_map(|f| frame_parts(f).ok())
        .map(|(ext, msg_type, _)| (ext & !sv2c_binary::CHANNEL_BIT, msg_type))
        .collect();
    for m in CATALOG {
        assert!(
            seen.contains(&(m.extension_type, m.msg_type)),
            "{}/{} is in CATALOG but has no vector in tests-data/sv2-vectors.jsonl",
            m.protocol,
            m.name
        );
    }
}
