//! The `message_decode` check: one frame payload, decoded every way the catalog offers.
//!
//! Input format (fuzz target and saved inputs): `extension_type` (U16 LE, as on the wire,
//! channel bit included), `msg_type` (U8), then the payload. Shorter inputs are ignored.

use sv2c_binary::messages::{Message, MessageOrRaw, MessageRef, lookup};
use sv2c_binary::tlv::TlvTail;
use sv2c_binary::{CHANNEL_BIT, DispatchError, Encode, Frameable, MessageSet};

use super::alloc::peak_during;

/// Slack allowed on top of the payload length for an owned decode: the one shared copy
/// carries reference counts and allocator rounding.
pub const OWNED_DECODE_SLACK: usize = 256;

/// Builds a `message_decode` input.
pub fn input(extension_type: u16, msg_type: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(3 + payload.len());
    v.extend_from_slice(&extension_type.to_le_bytes());
    v.push(msg_type);
    v.extend_from_slice(payload);
    v
}

/// Runs the check on a `message_decode` input.
pub fn check_input(data: &[u8]) {
    super::alloc::assert_tracking();
    if let Some((&[e0, e1, msg_type], payload)) = data.split_first_chunk::<3>() {
        check(u16::from_le_bytes([e0, e1]), msg_type, payload);
    }
}

/// `true` if two owned messages are the same message with the same value. Messages with an
/// `f32` field holding NaN are not `==` to themselves, so equal encodings of the same
/// message type count as equal (an encoding determines every field's value and bits).
pub fn same_message(a: &Message, b: &Message) -> bool {
    a == b || (a.info() == b.info() && a.encode_to_vec() == b.encode_to_vec())
}

/// Decodes `payload` as `(extension_type, msg_type)`, owned and borrowed, and checks:
/// * both agree (same message and value, or the same error);
/// * the borrowed decode allocates nothing, the owned one at most the payload length
///   plus [`OWNED_DECODE_SLACK`], and nothing at all when it fails;
/// * an unknown message is one the catalog does not list, and `decode_or_raw` keeps it;
/// * a decoded message re-encodes to exactly as many bytes as it consumed, into a payload
///   that decodes to the same value, and the bytes after it (its TLV tail) re-encode
///   record by record to themselves.
pub fn check(extension_type: u16, msg_type: u8, payload: &[u8]) {
    let (owned, owned_peak) =
        peak_during(|| Message::decode_message(extension_type, msg_type, payload));
    let (borrowed, ref_peak) =
        peak_during(|| MessageRef::decode(extension_type, msg_type, payload));
    assert_eq!(ref_peak, 0, "a borrowed decode allocated {ref_peak} bytes");
    assert!(
        owned_peak <= payload.len() + OWNED_DECODE_SLACK,
        "an owned decode of a {}-byte payload allocated {owned_peak} bytes",
        payload.len()
    );

    // A proxy's set, `MessageOrRaw<Message>` (its own `decode_message_with` and
    // `decode_message_ref`, which wrap the message inside the enum's per-variant decoder),
    // owned and borrowed, against `decode_or_raw`, which composes the enum's decode by hand.
    let as_set =
        <MessageOrRaw<Message> as MessageSet>::decode_message(extension_type, msg_type, payload);
    match (
        as_set,
        Message::decode_or_raw(extension_type, msg_type, payload),
    ) {
        (Ok(MessageOrRaw::Known(a)), Ok(MessageOrRaw::Known(b))) => {
            assert!(same_message(&a, &b), "{a:?} != {b:?}");
        }
        (Ok(MessageOrRaw::Raw(a)), Ok(MessageOrRaw::Raw(b))) => assert_eq!(a, b),
        (Err(DispatchError::Decode(a)), Err(b)) => assert_eq!(a, b),
        other => panic!("MessageOrRaw<Message> and decode_or_raw differ: {other:?}"),
    }
    let as_set = <MessageOrRaw<Message> as MessageSet>::decode_message_ref(
        extension_type,
        msg_type,
        payload,
    );
    match (
        as_set,
        MessageRef::decode_or_raw(extension_type, msg_type, payload),
    ) {
        (Ok(MessageOrRaw::Known(a)), Ok(MessageOrRaw::Known(b))) => {
            assert!(
                same_message(&a.to_owned_value(), &b.to_owned_value()),
                "{a:?} != {b:?}"
            );
        }
        (Ok(MessageOrRaw::Raw(a)), Ok(MessageOrRaw::Raw(b))) => assert_eq!(a, b),
        (Err(DispatchError::Decode(a)), Err(b)) => assert_eq!(a, b),
        other => panic!("borrowed MessageOrRaw<Message> and decode_or_raw differ: {other:?}"),
    }

    let known = lookup(extension_type, msg_type);
    match (owned, borrowed) {
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "owned and borrowed decodes fail differently");
            assert_eq!(
                owned_peak, 0,
                "a failed owned decode allocated {owned_peak} bytes"
            );
            match a {
                DispatchError::UnknownMessage {
                    extension_id: ext,
                    msg_type: mt,
                } => {
                    assert!(known.is_none(), "{known:?} reported as unknown");
                    assert_eq!((ext, mt), (extension_type & !CHANNEL_BIT, msg_type));
                    match Message::decode_or_raw(extension_type, msg_type, payload) {
                        Ok(MessageOrRaw::Raw(raw)) => {
                            assert_eq!(raw.payload.as_slice(), payload);
                            assert_eq!(
                                (raw.extension_type, raw.msg_type),
                                (extension_type, msg_type)
                            );
                        }
                        other => panic!("decode_or_raw of an unknown message: {other:?}"),
                    }
                }
                DispatchError::Decode(e) => {
                    assert!(known.is_some(), "decode error {e} for an unknown message");
                    assert!(
                        e.offset() <= payload.len(),
                        "error offset past the input: {e}"
                    );
                    assert_eq!(
                        Message::decode_or_raw(extension_type, msg_type, payload).err(),
                        Some(e)
                    );
                }
                other => panic!("unexpected dispatch error {other:?}"),
            }
        }
        (Ok(owned), Ok(borrowed)) => {
            let info = known.expect("a message decoded, so the catalog lists it");
            assert_eq!(owned.info(), info);
            assert_eq!(borrowed.info(), info);
            assert_eq!(
                owned.wire_extension_type() & !CHANNEL_BIT,
                extension_type & !CHANNEL_BIT
            );
            assert_eq!(owned.msg_type(), msg_type);
            assert!(
                same_message(&borrowed.to_owned_value(), &owned),
                "borrowed {borrowed:?} and owned {owned:?} differ"
            );

            // Re-encoding: as many bytes as were consumed, decoding to the same value.
            let encoded = owned.encode_to_vec();
            assert_eq!(encoded.len(), owned.encoded_len());
            assert_eq!(
                borrowed.encode_to_vec(),
                encoded,
                "Ref and owned encode differently"
            );
            assert!(encoded.len() <= payload.len());
            let again = Message::decode_message(extension_type, msg_type, &encoded)
                .unwrap_or_else(|e| panic!("re-encoded {owned:?} does not decode: {e}"));
            assert!(same_message(&again, &owned), "{again:?} != {owned:?}");

            // The rest is the TLV tail; what parses of it re-encodes to itself.
            let (with_tail, tail) = Message::decode_with_tail(extension_type, msg_type, payload)
                .expect("decoded once already");
            assert!(same_message(&with_tail, &owned));
            let rest = &payload[encoded.len()..];
            assert_eq!(tail.as_bytes(), rest);
            check_tail(TlvTail::new(rest));
            if let Message::SubmitSharesExtended(_) = owned {
                let _ = TlvTail::new(rest).user_identity();
            }

            match Message::decode_or_raw(extension_type, msg_type, payload) {
                Ok(MessageOrRaw::Known(m)) => assert!(same_message(&m, &owned)),
                other => panic!("decode_or_raw of a known message: {other:?}"),
            }
        }
        (owned, borrowed) => {
            panic!("owned and borrowed decodes disagree: {owned:?} vs {borrowed:?}")
        }
    }
}

/// Walks a TLV tail: the records that parse re-encode to the bytes they came from, and
/// an error (which ends the walk) points inside the tail.
fn check_tail(tail: TlvTail<'_>) {
    let bytes = tail.as_bytes();
    let mut at = 0usize;
    for item in tail.iter() {
        match item {
            Ok(tlv) => {
                let enc = tlv.encode_to_vec();
                assert_eq!(bytes.get(at..at + enc.len()), Some(&enc[..]));
                at += enc.len();
            }
            Err(e) => {
                assert_eq!(e.offset(), at, "TLV error not at the record start: {e}");
                return;
            }
        }
    }
    assert_eq!(
        at,
        bytes.len(),
        "the TLV walk stopped early without an error"
    );
}
