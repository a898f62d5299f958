use sv2c_binary::messages::{Message, SetupConnectionSuccess};
use sv2c_binary::MessageSet;

#[derive(MessageSet)]
pub enum Shapes {
    Unit,
    Named { m: Message },
    Two(Message, SetupConnectionSuccess),
}

#[derive(MessageSet)]
pub struct NotAnEnum(Message);

#[derive(MessageSet)]
pub enum Empty {}

fn main() {}
