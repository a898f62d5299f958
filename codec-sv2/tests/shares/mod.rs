//! Frames for the read-loop tests (`decode_with.rs`, `read_batch.rs`): numbered shares, a
//! frame no set knows, and a known message that does not decode.

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
