//! Literal wire bytes from SV2-WIRE.md, and the errors malformed bytes give
//! (kind, byte offset, field).

mod common;

use common::{Kitchen, Payout, Shares, SharesExt, SharesExtRef};
use sv2c_binary::{
    B016M, B032, B064KRef, Decode, DecodeError, DecodeErrorKind, DispatchError, Encode, MessageSet,
    MessageType, Seq064K, Seq064KRef, Str0255, Str0255Ref, U24, U256, Wire, from_bytes,
    from_bytes_ref,
};

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s.replace(' ', "")).unwrap()
}

#[track_caller]
fn kind(e: DecodeError) -> DecodeErrorKind {
    e.kind()
}

#[test]
fn u24_is_three_bytes_little_endian() {
    assert_eq!(
        from_bytes_ref::<U24>(&[0x01, 0x02, 0x03]).unwrap().get(),
        0x03_02_01
    );
    assert_eq!(U24::MAX.encode_to_vec(), [0xff, 0xff, 0xff]);
    assert_eq!(
        U24::try_from(0x26u32).unwrap().encode_to_vec(),
        [0x26, 0, 0]
    );
    assert!(U24::try_from(0x0100_0000u32).is_err());
    assert_eq!(
        kind(from_bytes_ref::<U24>(&[1, 2]).unwrap_err()),
        DecodeErrorKind::Truncated {
            needed: 3,
            available: 2
        }
    );
}

#[test]
fn bool_reads_bit_zero_only_and_writes_canonical_bytes() {
    // Spec §1.2 / Appendix A: FE → false, FF → true, 02 → false, 03 → true.
    for (byte, want) in [
        (0x00, false),
        (0x01, true),
        (0xfe, false),
        (0xff, true),
        (0x02, false),
        (0x03, true),
    ] {
        assert_eq!(
            from_bytes_ref::<bool>(&[byte]),
            Ok(want),
            "byte {byte:#04x}"
        );
    }
    assert_eq!(true.encode_to_vec(), [1]);
    assert_eq!(false.encode_to_vec(), [0]);
}

#[test]
fn option_present_absent_and_bad_counts() {
    // Spec §1.1 example: absent = 00; present 0x66500000 = 01 00 00 50 66.
    assert_eq!(None::<u32>.encode_to_vec(), [0x00]);
    assert_eq!(Some(0x6650_0000u32).encode_to_vec(), hex("01 00 00 50 66"));
    assert_eq!(from_bytes_ref::<Option<u32>>(&hex("00")), Ok(None));
    assert_eq!(
        from_bytes_ref::<Option<u32>>(&hex("01 00 00 50 66")),
        Ok(Some(0x6650_0000))
    );
    for count in 2..=255u8 {
        let err = from_bytes_ref::<Option<u32>>(&[count, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(err.kind(), DecodeErrorKind::InvalidOptionCount { count });
        assert_eq!((err.offset(), err.wire_type()), (0, "OPTION"));
    }
    // Present but the element is cut short.
    assert_eq!(
        kind(from_bytes_ref::<Option<u32>>(&hex("01 00 00")).unwrap_err()),
        DecodeErrorKind::Truncated {
            needed: 4,
            available: 2
        }
    );
}

#[test]
fn b032_rejects_lengths_above_32_even_when_the_bytes_are_there() {
    for len in 33..=255usize {
        let mut bytes = vec![len as u8];
        bytes.resize(1 + len, 0xaa);
        let err = from_bytes_ref::<B032>(&bytes).unwrap_err();
        assert_eq!(err.kind(), DecodeErrorKind::TooLong { len, max: 32 });
        assert_eq!(err.offset(), 0);
    }
    let mut ok = vec![32u8];
    ok.resize(33, 0xaa);
    assert_eq!(from_bytes_ref::<B032>(&ok).unwrap().as_slice(), [0xaa; 32]);
    assert!(B032::try_from(&[0u8; 33][..]).is_err());
}

#[test]
fn length_prefix_larger_than_the_input() {
    // STR0_255 announcing 10 bytes with 3 present.
    let err = from_bytes_ref::<Str0255Ref<'_>>(&hex("0a 61 62 63")).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 11,
            available: 4
        }
    );
    // B0_64K announcing 0x0100 bytes with none present.
    let err = from_bytes_ref::<B064KRef<'_>>(&hex("00 01")).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 258,
            available: 2
        }
    );
    // B0_16M announcing 1 MiB + 1 (prefix 01 00 10) with 6 bytes present.
    let err = from_bytes::<B016M>(&hex("01 00 10 00 00 00 00 00 00")).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 3 + 0x10_0001,
            available: 9
        }
    );
    // A prefix cut in half.
    let err = from_bytes::<B016M>(&hex("01 00")).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 3,
            available: 2
        }
    );
}

#[test]
fn sequence_counts_larger_than_the_payload_could_hold() {
    // SEQ0_64K[U256] claiming 65535 elements with one present.
    let mut bytes = hex("ff ff");
    bytes.extend([0x11; 32]);
    let err = from_bytes::<Seq064K<U256>>(&bytes).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 2 + 65_535 * 32,
            available: 34
        }
    );
    assert_eq!(err.offset(), 0);
    // SEQ0_64K[B0_16M] claiming 3 transactions, the second one cut.
    let bytes = hex("03 00  01 00 00 aa  05 00 00 bb");
    let err = from_bytes_ref::<Seq064KRef<'_, B016M>>(&bytes).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 8,
            available: 4
        }
    );
    assert_eq!(err.offset(), 6, "offset of the second element's prefix");
}

#[test]
fn submit_shares_standard_worked_example() {
    // Spec §2.1: header 00 80 1a 18 00 00, then the 24-byte payload.
    let payload = hex("01000000 02000000 03000000 efbeadde 00005066 00000020");
    let m = Shares::decode_owned(&payload).unwrap();
    assert_eq!(
        m,
        Shares {
            channel_id: 1,
            sequence_number: 2,
            job_id: 3,
            nonce: 0xdead_beef,
            ntime: 0x6650_0000,
            version: 0x2000_0000,
        }
    );
    assert_eq!(m.encode_to_vec(), payload);
    assert_eq!(Shares::wire_extension_type().to_le_bytes(), [0x00, 0x80]);
    assert_eq!(Shares::MSG_TYPE, 0x1a);
    assert_eq!(<Shares as Wire>::FIXED_LEN, Some(24));
    const { assert!(<Shares as Wire>::INLINE) };
    // Appendix A: one byte short → error naming the field and the offsets.
    let err = Shares::decode_owned(&payload[..23]).unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 4,
            available: 3
        }
    );
    assert_eq!((err.offset(), err.field()), (20, "Shares.version"));
    assert_eq!(
        err.to_string(),
        "Shares.version: U32 at byte 20: needs 4 bytes, 3 available"
    );
    // Appendix A: three extra bytes are ignored by the message decoder (TLV room).
    let mut longer = payload.clone();
    longer.extend([1, 2, 3]);
    assert_eq!(Shares::decode_owned(&longer), Ok(m));
}

#[test]
fn submit_shares_extended_example_and_its_extranonce_limit() {
    // Spec §3.2: extranonce aabbccdd, no TLV.
    let payload = hex("01000000 02000000 03000000 efbeadde 00005066 00000020 04aabbccdd");
    let m: SharesExtRef<'_> = SharesExtRef::decode_ref(&payload).unwrap();
    assert_eq!(m.extranonce.as_slice(), [0xaa, 0xbb, 0xcc, 0xdd]);
    assert_eq!(m.encode_to_vec(), payload);
    assert_eq!(<SharesExt as Wire>::FIXED_LEN, None);
    // Appendix A: extranonce length 33 with 33 bytes present is rejected.
    let mut bad = payload[..24].to_vec();
    bad.push(33);
    bad.extend([0; 33]);
    let err = SharesExt::decode_owned(&bad).unwrap_err();
    assert_eq!(err.kind(), DecodeErrorKind::TooLong { len: 33, max: 32 });
    assert_eq!((err.offset(), err.field()), (24, "SharesExt.extranonce"));
}

#[test]
fn nested_errors_name_the_innermost_field() {
    // Payout.first.script announces 5 bytes, 1 present.
    let bytes = hex("07000000  0100000000000000  0500 aa");
    let err = Payout::decode_owned(&bytes).unwrap_err();
    assert_eq!(err.field(), "Output.script");
    assert_eq!(err.offset(), 12);
}

#[test]
fn strings_are_bytes_and_utf8_is_checked_only_on_demand() {
    // Spec §1.3 / Appendix A: an FF byte in a STR0_255 decodes.
    let s: Str0255 = from_bytes(&hex("03 61 ff 62")).unwrap();
    assert_eq!(s.as_bytes(), [0x61, 0xff, 0x62]);
    assert!(s.as_str().is_err());
    assert_eq!(format!("{s:?}"), "0x61ff62");
    let ok: Str0255 = from_bytes(&hex("02 68 69")).unwrap();
    assert_eq!(ok.as_str(), Ok("hi"));
    assert_eq!(format!("{ok:?}"), "\"hi\"");
    assert!(Str0255::try_from("x".repeat(256)).is_err());
    assert_eq!(
        Str0255::try_from("x".repeat(255)).unwrap().encoded_len(),
        256
    );
}

#[test]
fn single_message_is_a_message_set() {
    let payload = hex("01000000 02000000 03000000 efbeadde 00005066 00000020");
    // The channel bit is masked off before matching.
    let m = Shares::decode_message(0x8000, 0x1a, &payload).unwrap();
    assert_eq!(m.nonce, 0xdead_beef);
    assert_eq!(
        Shares::decode_message(0, 0x1b, &payload),
        Err(DispatchError::UnknownMessage {
            extension_id: 0,
            msg_type: 0x1b
        })
    );
    assert!(matches!(
        Shares::decode_message(0x8000, 0x1a, &payload[..5]),
        Err(DispatchError::Decode(_))
    ));
}

#[test]
fn kitchen_constants() {
    assert_eq!(Kitchen::EXTENSION_TYPE, 0x4002);
    assert_eq!(Kitchen::wire_extension_type(), 0x4002);
    assert_eq!(Kitchen::NAME, "Kitchen");
    const { assert!(!<Kitchen as Wire>::INLINE) };
    assert_eq!(<Kitchen as Wire>::FIXED_LEN, None);
}

#[test]
fn ref_borrows_the_input() {
    let s = Str0255::try_from("pool.example").unwrap();
    let bytes = s.encode_to_vec();
    let r: Str0255Ref<'_> = from_bytes_ref(&bytes).unwrap();
    // The borrowed bytes are the input's bytes, not a copy.
    assert_eq!(r.as_bytes().as_ptr(), bytes[1..].as_ptr());
}
