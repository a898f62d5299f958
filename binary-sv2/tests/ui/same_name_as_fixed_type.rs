//! A type of the user's own that is named like one of the crate's fixed-size types. The
//! derive takes the name as a hint that `NameRef` can be an alias of the struct; the
//! compiler then finds the type is not ours and says so, at the field type.

use sv2c_binary::{Str0255, Wire};

/// Not `sv2c_binary::U256`: a variable-length type of the user's own.
#[derive(Debug, Clone, PartialEq, Wire)]
pub struct U256 {
    pub label: Str0255,
}

#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(msg_type = 0x70)]
pub struct UsesTheLookalike {
    pub value: U256,
    pub count: u32,
}

fn main() {}
