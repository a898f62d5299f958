//! The `differential` check: one frame payload, decoded by our decoder and by the
//! reference implementation's (`parsers_sv2::AnyMessage` over `framing_sv2`'s header, the
//! way SRI's roles decode), which must agree.
//!
//! Input format (as `message_decode`): `extension_type` (U16 LE, channel bit included),
//! `msg_type` (U8), then the payload. Shorter inputs are ignored.
//!
//! Agreement means: both reject it, or both accept it and re-encode the decoded message
//! to the same bytes (ours from the owned and from the borrowed decode). The one
//! documented difference is allowed (SV2-WIRE §1.2): bytes after the last field are a
//! TLV tail that both accept and the reference drops on re-encoding, so our re-encoding
//! is compared without it.
//!
//! This module needs the reference crates, so it is not part of `mod.rs`: the fuzz
//! target and `tests/differential_regressions.rs` include it by path.

use sv2c_binary::messages::{Message, MessageRef};
use sv2c_binary::{Encode, MessageSet};

/// Runs the check on an input.
pub(crate) fn check_input(data: &[u8]) {
    if let Some((&[e0, e1, msg_type], payload)) = data.split_first_chunk::<3>() {
        check(u16::from_le_bytes([e0, e1]), msg_type, payload);
    }
}

/// The reference decoder on a frame payload: its re-encoding, or `None` if it rejects it.
pub(crate) fn reference_reencode(ext: u16, msg_type: u8, payload: &[u8]) -> Option<Vec<u8>> {
    let mut header = Vec::with_capacity(6);
    header.extend_from_slice(&ext.to_le_bytes());
    header.push(msg_type);
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    let header = framing_sv2::header::Header::from_bytes(&header).ok()?;
    let mut payload = payload.to_vec();
    let any = parsers_sv2::AnyMessage::try_from((header, payload.as_mut_slice())).ok()?;
    Some(binary_sv2::to_bytes(any).expect("the reference re-encodes what it decoded"))
}

/// Decodes `payload` as `(ext, msg_type)` with both decoders and panics on disagreement.
pub(crate) fn check(ext: u16, msg_type: u8, payload: &[u8]) {
    if payload.len() > 0x00FF_FFFF {
        return; // not a frame: the length does not fit the header
    }
    let theirs = reference_reencode(ext, msg_type, payload);
    let ours = Message::decode_message(ext, msg_type, payload);
    let ours_ref = MessageRef::decode(ext, msg_type, payload);
    match (&ours, &theirs) {
        (Ok(m), Some(t)) => {
            let mine = m.encode_to_vec();
            assert_eq!(
                without_tail(&mine, t),
                &t[..],
                "both accept {ext:#06x}/{msg_type:#04x}, re-encodings differ: {m:?}"
            );
            let mine_ref = ours_ref
                .as_ref()
                .map(|r| r.encode_to_vec())
                .expect("owned accepted, borrowed must too");
            assert_eq!(without_tail(&mine_ref, t), &t[..], "borrowed re-encoding");
        }
        (Err(_), None) => assert!(ours_ref.is_err(), "owned rejected, borrowed accepted"),
        (Ok(m), None) => {
            panic!("we accept what the reference rejects: {ext:#06x}/{msg_type:#04x} {m:?}")
        }
        (Err(e), Some(_)) => {
            panic!("we reject what the reference accepts: {ext:#06x}/{msg_type:#04x}: {e}")
        }
    }
}

/// `ours` cut to the reference's length when the difference is a trailing tail that the
/// reference drops (see the module docs).
fn without_tail<'a>(ours: &'a [u8], theirs: &[u8]) -> &'a [u8] {
    if ours.len() > theirs.len() && ours.starts_with(theirs) {
        &ours[..theirs.len()]
    } else {
        ours
    }
}
