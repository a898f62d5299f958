//! One mistake in the derive's input gives one error: the derive still emits stub impls
//! (`Wire`, `Encode`, `Decode`, `NameRef`, the message constants), so the code below,
//! which uses all of them, adds no errors of its own.

use sv2c_binary::{Decode, Encode, MessageType, Str0255, Wire};

#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(msg_type = 0x71, chanel_msg)]
pub struct Misspelled {
    pub channel_id: u32,
    pub worker: Str0255,
}

fn use_it(bytes: &[u8]) -> usize {
    let owned = Misspelled::decode_owned(bytes).unwrap();
    let view: MisspelledRef<'_> = MisspelledRef::decode_ref(bytes).unwrap();
    let _ = Misspelled::MSG_TYPE;
    owned.encode_to_vec().len() + view.encoded_len()
}

fn main() {
    let _ = use_it(&[]);
}
