//! The `roundtrip` check: a well-formed message (built by `arbitrary` from the input)
//! encodes, frames, decodes back to itself both ways, and passes the `message_decode`
//! check.

use arbitrary::{Arbitrary, Unstructured};
use sv2c_binary::messages::{Message, MessageRef, encode_frame, frame_parts};
use sv2c_binary::{BufferTooSmall, CHANNEL_BIT, Encode, Frameable, MessageSet};

use super::message_decode::{self, same_message};

/// Runs the check on a `roundtrip` input: the bytes `arbitrary` turns into a [`Message`]
/// (exactly what the fuzz target does). Inputs too short for a message are ignored.
pub fn check_input(data: &[u8]) {
    super::alloc::assert_tracking();
    if let Ok(msg) = Message::arbitrary_take_rest(Unstructured::new(data)) {
        check(&msg);
    }
}

/// Encode → frame → decode (owned and borrowed) → equal, and the same bytes again.
pub fn check(msg: &Message) {
    let payload = msg.encode_to_vec();
    assert_eq!(payload.len(), msg.encoded_len());
    assert_eq!(
        msg.as_ref().encode_to_vec(),
        payload,
        "Ref encodes differently"
    );
    assert!(same_message(&msg.as_ref().to_owned_value(), msg));

    let mut exact = vec![0u8; payload.len()];
    assert_eq!(msg.encode_to_slice(&mut exact), Ok(payload.len()));
    assert_eq!(exact, payload);
    if let Some(short) = exact.get_mut(..payload.len().saturating_sub(1))
        && !payload.is_empty()
    {
        assert_eq!(
            msg.encode_to_slice(short),
            Err(BufferTooSmall {
                needed: payload.len(),
                available: payload.len() - 1
            })
        );
    }

    let frame = encode_frame(msg).expect("arbitrary messages are far below 16 MiB");
    let (ext, msg_type, body) = frame_parts(&frame).expect("a frame we just encoded");
    assert_eq!(body, payload);
    assert_eq!((ext, msg_type), (msg.wire_extension_type(), msg.msg_type()));
    assert_eq!(ext & CHANNEL_BIT != 0, msg.channel_msg());
    assert_eq!(ext & !CHANNEL_BIT, msg.extension_type());

    let decoded = Message::decode_message(ext, msg_type, body)
        .unwrap_or_else(|e| panic!("{msg:?} encoded to a payload that fails: {e}"));
    assert!(same_message(&decoded, msg), "{decoded:?} != {msg:?}");
    assert_eq!(decoded.encode_to_vec(), payload);
    let borrowed = MessageRef::decode(ext, msg_type, body)
        .unwrap_or_else(|e| panic!("{msg:?}: borrowed decode fails: {e}"));
    assert!(same_message(&borrowed.to_owned_value(), msg));
    assert_eq!(borrowed.encode_to_vec(), payload);

    message_decode::check(ext, msg_type, body);
}
