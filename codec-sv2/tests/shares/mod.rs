//! Frames for the read-loop tests (`decode_with.rs`, `read_batch.rs`,
//! `read_batch_frames.rs`): numbered shares, a frame no set knows, a known message that
//! does not decode, a frame above the tests' payload limit, and the small golden frames.
// Each test file uses part of this module.
#![allow(dead_code)]

use sv2c_binary::messages::{MessageRef, SubmitSharesStandard, encode_frame};

/// The frame of a `SubmitSharesStandard` with sequence number `seq`.
pub(crate) fn share(seq: u32) -> Vec<u8> {
    encode_frame(&SubmitSharesStandard {
        channel_id: 9,
        sequence_number: seq,
        job_id: 1,
        nonce: 2,
        ntime: 3,
        version: 4,
    })
    .unwrap()
}

/// The sequence number of a share; panics on any other message.
pub(crate) fn seq_of(m: &MessageRef<'_>) -> u32 {
    match m {
        MessageRef::SubmitSharesStandard(s) => s.sequence_number,
        other => panic!("not a share: {other:?}"),
    }
}

/// A frame of an extension no set here knows.
pub(crate) fn unknown_frame() -> Vec<u8> {
    vec![0xbc, 0x4a, 0x01, 3, 0, 0, 1, 2, 3]
}

/// A known message (SubmitSharesStandard) whose payload is 4 bytes short.
pub(crate) fn undecodable_frame() -> Vec<u8> {
    let mut f = share(0);
    f.truncate(f.len() - 4);
    f[3] = 20;
    f
}

/// A frame announcing (and carrying) 1 KiB of payload: above the 512-byte limit of the
/// mixture tests.
pub(crate) fn kib_frame() -> Vec<u8> {
    let mut f = vec![0, 0, 0x1c, 0x00, 0x04, 0];
    f.extend_from_slice(&[0u8; 1024]);
    f
}

/// The golden vectors' frames of at most `max` bytes.
pub(crate) fn small_golden(max: usize) -> Vec<Vec<u8>> {
    crate::golden::records()
        .iter()
        .map(crate::golden::frame)
        .filter(|f| f.len() <= max)
        .collect()
}
