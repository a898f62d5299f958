//! A type of the user's own named like one of the crate's variable-length types, written
//! bare. The derive takes the name to pick the borrowed twin (`Str0255Ref<'a>`) and the
//! compiler checks it, so the mix-up is reported at the field. (Written as a path,
//! `user::Str0255`, the type is read through the trait system and works: see
//! tests/derive_types.rs.)

use sv2c_binary::Wire;

/// Not `sv2c_binary::Str0255`.
#[derive(Debug, Clone, PartialEq, Wire)]
pub struct Str0255 {
    pub code: u16,
}

#[derive(Debug, Clone, PartialEq, Wire)]
pub struct UsesTheLookalike {
    pub name: Str0255,
    pub count: u32,
}

fn main() {}
