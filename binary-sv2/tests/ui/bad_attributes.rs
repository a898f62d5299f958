use sv2c_binary::Wire;

#[derive(Wire)]
#[sv2(msg_type = 256)]
struct MsgTypeTooLarge {
    a: u32,
}

#[derive(Wire)]
#[sv2(msg_type = 1, extension_type = 0x8001)]
struct ExtensionWithChannelBit {
    a: u32,
}

#[derive(Wire)]
#[sv2(msg_type = 1, chanel_msg)]
struct Misspelled {
    a: u32,
}

#[derive(Wire)]
#[sv2(msg_type = 1, msg_type = 2)]
struct Duplicate {
    a: u32,
}

#[derive(Wire)]
#[sv2(channel_msg, extension_type = 2)]
struct NotAMessage {
    channel_id: u32,
}

#[derive(Wire)]
struct BorrowNotAByteArray {
    #[sv2(borrow)]
    a: u32,
    #[sv2(borrow)]
    b: sv2c_binary::Str0255,
}

#[derive(Wire)]
struct BadFieldKeys {
    #[sv2(borow)]
    a: sv2c_binary::U256,
    #[sv2(borrow, borrow)]
    b: sv2c_binary::U256,
}

fn main() {}
