//! One mistake in a `#[derive(MessageSet)]` enum gives one error: the derive still emits
//! stub impls (`MessageSet`, `Frameable`, `Encode`, `NameRef`), so the code below adds
//! no errors of its own.

use sv2c_binary::messages::Message;
use sv2c_binary::{Encode, Frameable, MessageSet};

#[derive(MessageSet)]
pub enum Mixed {
    Std(Message),
    Oops { m: Message },
}

fn use_it(payload: &[u8]) -> usize {
    let m = Mixed::decode_message(0, 0, payload).unwrap();
    let r: MixedRef<'_> = Mixed::decode_message_ref(0, 0, payload).unwrap();
    let _ = r.msg_type();
    m.encoded_len() + Mixed::IDS.len()
}

fn main() {
    let _ = use_it(&[]);
}
