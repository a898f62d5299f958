use sv2c_binary::{Str0255, Wire};

#[derive(Wire)]
#[sv2(msg_type = 0x18, channel_msg)]
struct StartsWithString {
    reason_code: Str0255,
    channel_id: u32,
}

#[derive(Wire)]
#[sv2(msg_type = 0x19, channel_msg)]
struct WrongType {
    channel_id: u64,
}

fn main() {}
