use sv2c_binary::messages::{Message, MiningMessage, SetupConnectionSuccess};
use sv2c_binary::{MessageSet, Wire};

// An extension message that reuses the id of another extension message.
#[derive(Debug, Clone, Wire)]
#[sv2(extension_type = 0x4a11, msg_type = 0x02)]
pub struct WorkerReport {
    pub shares: u32,
}

#[derive(Debug, Clone, Wire)]
#[sv2(extension_type = 0x4a11, msg_type = 0x02)]
pub struct OtherReport {
    pub shares: u64,
}

// SetupConnection.Success is already in `Message`.
#[derive(Debug, Clone, MessageSet)]
pub enum StdTwice {
    Std(Message),
    Success(SetupConnectionSuccess),
}

// The whole Mining set is already in `Message`.
#[derive(Debug, Clone, MessageSet)]
pub enum Nested {
    Std(Message),
    Mining(MiningMessage),
}

#[derive(Debug, Clone, MessageSet)]
pub enum Reports {
    Report(WorkerReport),
    Other(OtherReport),
}

fn main() {}
