//! A crate that forbids `unsafe` can derive `Wire`: the derive emits no `unsafe` (the
//! derive crate's own tests check its expansion token by token). This file fails to compile
//! if that ever changes.
#![forbid(unsafe_code)]

use sv2c_binary::{B0255, Encode, Seq0255, Str0255, U256, Wire};

#[derive(Debug, Clone, PartialEq, Wire)]
struct Mixed {
    a: u8,
    name: Str0255,
    hash: U256,
    path: Seq0255<U256>,
    tail: B0255,
    flag: bool,
}

#[test]
fn a_forbid_unsafe_crate_derives_and_round_trips() {
    let v = Mixed {
        a: 7,
        name: Str0255::try_from("a name longer than the inline capacity of 32 bytes").unwrap(),
        hash: U256([3; 32]),
        path: Seq0255::from_slice(&[U256([1; 32]), U256([2; 32])]).unwrap(),
        tail: B0255::try_from(&[0x5a_u8; 200][..]).unwrap(),
        flag: true,
    };
    let bytes = v.encode_to_vec();
    assert_eq!(sv2c_binary::from_bytes::<Mixed>(&bytes).unwrap(), v);
}
