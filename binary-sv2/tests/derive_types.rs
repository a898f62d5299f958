//! `#[derive(Wire)]` reads field types through the trait system, not their names: type
//! aliases of wire types, and user types that share a name with one of this crate's
//! variable-length types, round-trip like any other field. (A user type named like one of
//! the crate's *fixed-size* types is a compile error instead: tests/ui/same_name_as_fixed_type.rs.)

use sv2c_binary::{
    B0255 as Bytes, Decode, Encode, MessageType, Seq0255, Str0255, U24, U256, Wire, WireRef,
};

/// Aliases with names the derive has never seen.
type Hash = U256;
type Worker = Str0255;
type Path = Seq0255<U256>;
type Count = u32;
type Small = U24;

#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4a00, msg_type = 0x01, channel_msg)]
struct Aliased {
    channel_id: Count,
    worker: Worker,
    best: Hash,
    path: Path,
    extra: Bytes,
    maybe: Option<Worker>,
    small: Small,
}

fn aliased() -> Aliased {
    Aliased {
        channel_id: 9,
        worker: Str0255::try_from("rig-07").unwrap(),
        best: U256([0xee; 32]),
        path: Seq0255::from_slice(&[U256([1; 32]), U256([2; 32])]).unwrap(),
        extra: Bytes::try_from(&[0x55u8; 60][..]).unwrap(),
        maybe: Some(Str0255::try_from("x").unwrap()),
        small: U24::try_from(0x01_02_03_u32).unwrap(),
    }
}

#[test]
fn aliased_field_types_round_trip_owned_and_borrowed() {
    let msg = aliased();
    let bytes = msg.encode_to_vec();
    // channel_id, then "rig-07" with its U8 length prefix.
    assert_eq!(
        &bytes[..11],
        &[9, 0, 0, 0, 6, b'r', b'i', b'g', b'-', b'0', b'7']
    );
    assert_eq!(bytes.len(), msg.encoded_len());

    let view = AliasedRef::decode_ref(&bytes).unwrap();
    assert_eq!(view.worker.as_str(), Ok("rig-07"));
    assert_eq!(view.best, U256([0xee; 32]));
    assert_eq!(view.path.len(), 2);
    assert_eq!(view.extra.as_bytes(), &[0x55u8; 60][..]);
    assert_eq!(view.encode_to_vec(), bytes);
    assert_eq!(view.to_owned_value(), msg);

    assert_eq!(Aliased::decode_owned(&bytes).unwrap(), msg);
    assert_eq!(msg.to_ref(), view);
    assert_eq!(Aliased::wire_extension_type(), 0xca00);
}

/// Every field is a fixed-size type written through an alias: the derive cannot tell from
/// the names, so it generates a `Ref` struct (rather than an alias of the struct), which
/// is still `Copy` because every field's borrowed form is.
#[derive(Debug, Clone, PartialEq, Wire)]
struct AllFixedThroughAliases {
    a: Count,
    b: Hash,
}

#[test]
fn fixed_fields_through_aliases_get_a_copy_ref_struct() {
    let v = AllFixedThroughAliases {
        a: 1,
        b: U256([3; 32]),
    };
    let bytes = v.encode_to_vec();
    assert_eq!(bytes.len(), 36);
    assert_eq!(<AllFixedThroughAliases as Wire>::FIXED_LEN, Some(36));
    let view = AllFixedThroughAliasesRef::decode_ref(&bytes).unwrap();
    let copy = view; // `Copy`: `view` stays usable
    assert_eq!(view, copy);
    assert_eq!(view.to_owned_value(), v);
}

/// Same spelling as fixed-size types of this crate, no alias: `NameRef` is the struct
/// itself, as before.
#[derive(Debug, Clone, Copy, PartialEq, Wire)]
struct Fixed {
    a: u32,
    b: sv2c_binary::U256,
    c: Option<U24>,
}

#[test]
fn fixed_spelling_keeps_the_alias() {
    let v = Fixed {
        a: 7,
        b: U256([4; 32]),
        c: None,
    };
    let bytes = v.encode_to_vec();
    let view: Fixed = FixedRef::decode_ref(&bytes).unwrap();
    assert_eq!(view, v);
    assert_eq!(Fixed::decode_owned(&bytes).unwrap(), v);
}

mod user {
    use sv2c_binary::{Str0255, Wire};

    /// A user type that shares its name with `sv2c_binary::B0255`, and is nothing like it.
    #[derive(Debug, Clone, PartialEq, Wire)]
    pub(crate) struct B0255 {
        pub(crate) tag: u8,
        pub(crate) name: Str0255,
    }
}

#[derive(Debug, Clone, PartialEq, Wire)]
struct UsesUserB0255 {
    inner: user::B0255,
    after: u16,
}

#[test]
fn a_user_type_named_like_a_variable_length_type_is_read_as_itself() {
    let v = UsesUserB0255 {
        inner: user::B0255 {
            tag: 0xab,
            name: Str0255::try_from("mine").unwrap(),
        },
        after: 0x0102,
    };
    let bytes = v.encode_to_vec();
    // No length prefix before `tag`: the user's type, not sv2c's B0_255.
    assert_eq!(bytes, [0xab, 4, b'm', b'i', b'n', b'e', 0x02, 0x01]);
    let view = UsesUserB0255Ref::decode_ref(&bytes).unwrap();
    let _: &user::B0255Ref<'_> = &view.inner;
    assert_eq!(view.inner.tag, 0xab);
    assert_eq!(view.to_owned_value(), v);
    assert_eq!(UsesUserB0255::decode_owned(&bytes).unwrap(), v);
}

/// A borrowed message can be used where a shorter-lived one is expected (`NameRef<'a>` is
/// covariant in `'a` when its fields are spelled as this crate's types), e.g. to keep views
/// of two buffers in one collection.
#[test]
fn borrowed_twins_of_our_types_are_covariant() {
    use sv2c_binary::messages::SetupConnectionRef;
    fn shorten<'long: 'short, 'short>(v: SetupConnectionRef<'long>) -> SetupConnectionRef<'short> {
        v
    }
    let payload = sv2c_binary::messages::SetupConnection::default().encode_to_vec();
    let forever: &'static [u8] = payload.clone().leak();
    let long: SetupConnectionRef<'static> = SetupConnectionRef::decode_ref(forever).unwrap();
    let short = SetupConnectionRef::decode_ref(&payload).unwrap();
    let both = [shorten(long), short];
    assert_eq!(both[0], both[1]);
}

/// `#[sv2(borrow)]` on byte arrays: the twin holds `&'a [u8; N]` into the input; on a
/// `B032`, a `B032Ref<'a>`.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4a00, msg_type = 0x05)]
struct Borrowing {
    n: u32,
    #[sv2(borrow)]
    hash: U256,
    #[sv2(borrow)]
    key: sv2c_binary::PubKey,
    #[sv2(borrow)]
    sig: sv2c_binary::Signature,
    #[sv2(borrow)]
    mac: sv2c_binary::Mac,
    plain: U256,
    #[sv2(borrow)]
    short: sv2c_binary::B032,
}

fn borrowing() -> Borrowing {
    Borrowing {
        n: 7,
        hash: U256([1; 32]),
        key: sv2c_binary::PubKey([2; 32]),
        sig: sv2c_binary::Signature([3; 64]),
        mac: sv2c_binary::Mac([4; 16]),
        plain: U256([5; 32]),
        short: sv2c_binary::B032::try_from(&[6u8; 3][..]).unwrap(),
    }
}

#[test]
fn borrowed_byte_arrays_point_into_the_input() {
    let msg = borrowing();
    let bytes = msg.encode_to_vec();
    assert_eq!(bytes.len(), 4 + 32 + 32 + 64 + 16 + 32 + 1 + 3);
    // Every field fixed-size, but a borrowed one: a struct of its own, not an alias.
    let view: BorrowingRef<'_> = BorrowingRef::decode_ref(&bytes).unwrap();
    assert!(core::ptr::eq(view.hash, bytes[4..36].as_ptr().cast()));
    assert!(core::ptr::eq(view.sig, bytes[68..132].as_ptr().cast()));
    assert!(core::ptr::eq(view.short.as_bytes(), &bytes[181..]));
    assert_eq!(
        (view.n, view.hash, view.key, view.sig, view.mac, view.plain),
        (7, &[1; 32], &[2; 32], &[3; 64], &[4; 16], U256([5; 32]))
    );
    assert_eq!(view.encoded_len(), bytes.len());
    assert_eq!(view.encode_to_vec(), bytes);
    assert_eq!(view.to_owned_value(), msg);
    assert_eq!(Borrowing::decode_owned(&bytes).unwrap(), msg);
    // `to_ref` borrows the owned value's bytes.
    let back = msg.to_ref();
    assert!(core::ptr::eq(back.hash, &msg.hash.0));
    assert!(core::ptr::eq(back.short.as_bytes(), msg.short.as_slice()));
    assert_eq!(back, view);
    assert_eq!(<Borrowing as Wire>::FIXED_LEN, None);
}

#[test]
fn a_truncated_borrowed_byte_array_names_its_wire_type_and_field() {
    let bytes = borrowing().encode_to_vec();
    for (cut, ty, field) in [
        (20, "U256", "Borrowing.hash"),
        (40, "PUBKEY", "Borrowing.key"),
        (100, "SIGNATURE", "Borrowing.sig"),
        (140, "MAC", "Borrowing.mac"),
        (182, "B0_32", "Borrowing.short"),
    ] {
        let err = BorrowingRef::decode_ref(&bytes[..cut]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(ty) && text.contains(field), "{cut}: {text}");
        assert_eq!(
            err.to_string(),
            Borrowing::decode_owned(&bytes[..cut])
                .unwrap_err()
                .to_string()
        );
    }
}

#[test]
fn borrowed_byte_arrays_keep_the_twin_covariant() {
    fn shorten<'long: 'short, 'short>(v: BorrowingRef<'long>) -> BorrowingRef<'short> {
        v
    }
    let forever: &'static [u8] = borrowing().encode_to_vec().leak();
    let long = BorrowingRef::decode_ref(forever).unwrap();
    assert_eq!(shorten(long).n, 7);
}
