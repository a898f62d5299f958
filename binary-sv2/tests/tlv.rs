//! TLV tails (spec §3.6–3.7): scanning rules, the `user_identity` helper, encoding with
//! `WithTlvs`, and agreement with the reference implementation's `parsers_sv2::TlvList`.

use proptest::collection::vec;
use proptest::prelude::*;

use sv2c_binary::messages::{Message, MessageRef, SubmitSharesExtended, encode_frame, frame_parts};
use sv2c_binary::tlv::{Tlv, TlvBuf, TlvTail, UserIdentity, WithTlvs, decode_with_tail};
use sv2c_binary::{B032, DecodeErrorKind, Encode, MessageSet, WireRef};

fn share() -> SubmitSharesExtended {
    SubmitSharesExtended {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 0xdead_beef,
        ntime: 0x6650_0000,
        version: 0x2000_0000,
        extranonce: B032::try_from([0xaa, 0xbb, 0xcc, 0xdd]).unwrap(),
    }
}

#[test]
fn spec_example_frame_with_user_identity() {
    // SV2-WIRE §3.7: the full frame, as the reference writes it.
    let want = hex::decode(
        "00801b2c0000010000000200000003000000efbeadde000050660000002004aabbccdd0200010a00576f726b65725f303031",
    )
    .unwrap();
    let user = UserIdentity::try_from("Worker_001").unwrap();
    let frame = encode_frame(&share().with_user_identity(&user)).unwrap();
    assert_eq!(frame, want);

    let (ext, msg_type, payload) = frame_parts(&frame).unwrap();
    // The base decoders ignore the tail…
    let msg = Message::decode_message(ext, msg_type, payload).unwrap();
    assert_eq!(msg, share().into());
    // …and the tail is there to read, owned or borrowed.
    let (_, tail) = Message::decode_with_tail(ext, msg_type, payload).unwrap();
    assert_eq!(tail.as_tail().user_identity(), Ok(Some(user)));
    let (_, tail) = MessageRef::decode_with_tail(ext, msg_type, payload).unwrap();
    assert_eq!(tail.len(), 15);
    let (typed, tail2) =
        decode_with_tail::<sv2c_binary::messages::SubmitSharesExtendedRef<'_>>(payload).unwrap();
    assert_eq!(typed.to_owned_value(), share());
    assert_eq!(tail2, tail);
}

#[test]
fn scanning_records() {
    let mut bytes = Vec::new();
    Tlv::new(2, 1, b"rig").unwrap().encode(&mut bytes);
    Tlv::new(0x4001, 7, &[]).unwrap().encode(&mut bytes);
    let items: Vec<_> = TlvTail::new(&bytes)
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        (
            items[0].extension_type(),
            items[0].field_type(),
            items[0].value()
        ),
        (2, 1, &b"rig"[..])
    );
    assert_eq!(
        (
            items[1].extension_type(),
            items[1].field_type(),
            items[1].value()
        ),
        (0x4001, 7, &[][..])
    );
    assert_eq!(
        TlvTail::new(&bytes).find(0x4001, 7).unwrap(),
        Some(items[1])
    );
    assert_eq!(TlvTail::new(&bytes).find(3, 1).unwrap(), None);
    assert_eq!(TlvTail::new(&[]).iter().count(), 0);
}

#[test]
fn leftover_header_bytes_are_reported_last() {
    let mut bytes = Vec::new();
    Tlv::new(2, 1, b"ok").unwrap().encode(&mut bytes);
    for extra in 1..5 {
        let mut tail = bytes.clone();
        tail.extend(std::iter::repeat_n(0u8, extra));
        let items: Vec<_> = TlvTail::new(&tail).iter().collect();
        assert_eq!(items.len(), 2, "{extra} leftover bytes");
        assert!(items[0].is_ok());
        let err = items[1].unwrap_err();
        assert_eq!(
            err.kind(),
            DecodeErrorKind::Truncated {
                needed: 5,
                available: extra
            }
        );
        assert_eq!(err.offset(), bytes.len());
        // The reference's behaviour (stop quietly) is one adapter away.
        assert_eq!(TlvTail::new(&tail).iter().map_while(Result::ok).count(), 1);
    }
}

#[test]
fn value_past_the_end_is_an_error_and_ends_the_scan() {
    // Announces 10 value bytes, has 3; then bytes that would parse as another record.
    let tail = [0x02, 0x00, 0x01, 0x0a, 0x00, b'a', b'b', b'c'];
    let items: Vec<_> = TlvTail::new(&tail).iter().collect();
    assert_eq!(items.len(), 1);
    let err = items[0].unwrap_err();
    assert_eq!(
        err.kind(),
        DecodeErrorKind::Truncated {
            needed: 15,
            available: 8
        }
    );
    assert_eq!(TlvTail::new(&tail).user_identity().unwrap_err(), err);
}

#[test]
fn user_identity_limits() {
    assert!(UserIdentity::new(&[b'x'; 32]).is_ok());
    let err = UserIdentity::new(&[b'x'; 33]).unwrap_err();
    assert_eq!((err.actual, err.max), (33, 32));

    // A received user_identity longer than 32 bytes is rejected (spec §3.6, §7 D4).
    let long = Tlv::new(2, 1, &[b'y'; 40]).unwrap();
    let bytes = long.encode_to_vec();
    let err = TlvTail::new(&bytes).user_identity().unwrap_err();
    assert_eq!(err.kind(), DecodeErrorKind::TooLong { len: 40, max: 32 });

    let other = Tlv::new(3, 1, b"z").unwrap();
    let err = UserIdentity::from_tlv(&other).unwrap_err();
    assert_eq!(err.kind(), DecodeErrorKind::InvalidValue { value: 0x0301 });

    // Not UTF-8: kept as bytes, checked on demand.
    let raw = UserIdentity::new(&[0xff, 0xfe]).unwrap();
    assert!(raw.as_str().is_err());
    assert_eq!(raw.as_bytes(), [0xff, 0xfe]);
}

#[test]
fn tlv_values_are_bounded() {
    let big = vec![0u8; 65_536];
    assert!(Tlv::new(1, 1, &big).is_err());
    assert!(TlvBuf::new(1, 1, &big[..65_535]).is_ok());
}

#[test]
fn with_tlvs_keeps_records_ordered_by_extension() {
    let msg = WithTlvs::new(share())
        .with(TlvBuf::new(5, 1, b"e").unwrap())
        .with(TlvBuf::new(2, 2, b"b").unwrap())
        .with(TlvBuf::new(2, 1, b"c").unwrap())
        .with(TlvBuf::new(3, 0, b"d").unwrap());
    let order: Vec<_> = msg
        .tlvs
        .iter()
        .map(|t| (t.extension_type(), t.field_type()))
        .collect();
    assert_eq!(order, [(2, 2), (2, 1), (3, 0), (5, 1)]);
    let bytes = msg.encode_to_vec();
    assert_eq!(bytes.len(), msg.encoded_len());
    let (_, tail) =
        decode_with_tail::<sv2c_binary::messages::SubmitSharesExtendedRef<'_>>(&bytes).unwrap();
    let back = tail.to_bufs().unwrap();
    assert_eq!(back, msg.tlvs);
}

// ===== against the reference =====

fn tlv_records() -> impl Strategy<Value = Vec<(u16, u8, Vec<u8>)>> {
    vec((any::<u16>(), any::<u8>(), vec(any::<u8>(), 0..=40)), 0..=5)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Same bytes as the reference's `Tlv::encode`, and the reference's parser reads our
    /// encoding back, record for record.
    #[test]
    fn records_encode_like_the_reference(records in tlv_records()) {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for (ext, ft, value) in &records {
            Tlv::new(*ext, *ft, value).unwrap().encode(&mut ours);
            theirs.extend(parsers_sv2::Tlv::new(*ext, *ft, value.clone()).encode().unwrap());
        }
        prop_assert_eq!(&ours, &theirs);
        let parsed: Vec<_> = parsers_sv2::TlvList::from_bytes(&ours).iter().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed.len(), records.len());
        for (p, (ext, ft, value)) in parsed.iter().zip(&records) {
            prop_assert_eq!((p.r#type.extension_type, p.r#type.field_type, &p.value), (*ext, *ft, value));
        }
    }

    /// On arbitrary tails, we yield the same good records as the reference; where the
    /// reference reports an error we do too, and where it stops quietly (fewer than 5 bytes
    /// left) we report `Truncated` as the last item.
    #[test]
    fn arbitrary_tails_scan_like_the_reference(tail in vec(any::<u8>(), 0..=80)) {
        let ours: Vec<_> = TlvTail::new(&tail).iter().collect();
        let theirs: Vec<_> = parsers_sv2::TlvList::from_bytes(&tail).iter().collect();
        let ours_ok: Vec<_> = ours.iter().map_while(|r| r.ok()).map(|t| (t.extension_type(), t.field_type(), t.value().to_vec())).collect();
        let theirs_ok: Vec<_> = theirs.iter().map_while(|r| r.as_ref().ok()).map(|t| (t.r#type.extension_type, t.r#type.field_type, t.value.clone())).collect();
        prop_assert_eq!(&ours_ok, &theirs_ok);
        let consumed: usize = ours_ok.iter().map(|(_, _, v)| 5 + v.len()).sum();
        let left = tail.len() - consumed;
        match (theirs.len() > theirs_ok.len(), ours.len() > ours_ok.len()) {
            (true, true) => {}
            (false, true) => prop_assert!(left > 0 && left < 5, "we report an error the reference stops quietly on: {left} bytes"),
            (false, false) => prop_assert_eq!(left, 0),
            (true, false) => prop_assert!(false, "the reference reports an error we do not"),
        }
    }

    /// A SubmitSharesExtended with a user_identity TLV frames exactly like the reference's
    /// `TlvList::build_frame_bytes_with_tlvs`, and both read the identity back alike.
    #[test]
    fn user_identity_frames_like_the_reference(
        name in vec(any::<u8>(), 0..=32),
        extranonce in vec(any::<u8>(), 0..=32),
        seq in any::<u32>(),
    ) {
        let mut msg = share();
        msg.sequence_number = seq;
        msg.extranonce = B032::try_from(extranonce.clone()).unwrap();
        let user = UserIdentity::new(&name).unwrap();
        let ours = encode_frame(&msg.clone().with_user_identity(&user)).unwrap();

        let sri_msg = mining_sv2::SubmitSharesExtended {
            channel_id: msg.channel_id,
            sequence_number: seq,
            job_id: msg.job_id,
            nonce: msg.nonce,
            ntime: msg.ntime,
            version: msg.version,
            extranonce: binary_sv2::B032::try_from(extranonce.as_slice()).unwrap(),
        };
        let tlv = parsers_sv2::Tlv::new(2, 1, name.clone());
        let theirs = parsers_sv2::TlvList::from_slice(&[tlv])
            .unwrap()
            .build_frame_bytes_with_tlvs(parsers_sv2::Mining::SubmitSharesExtended(sri_msg))
            .unwrap();
        prop_assert_eq!(&ours, &theirs);

        let (ext, msg_type, payload) = frame_parts(&theirs).unwrap();
        let (_, tail) = MessageRef::decode_with_tail(ext, msg_type, payload).unwrap();
        let got = tail.user_identity().unwrap().unwrap();
        prop_assert_eq!(got.as_bytes(), &name[..]);
        let sri_user = extensions_sv2::UserIdentity::from_bytes(&name).unwrap();
        prop_assert_eq!(sri_user.as_bytes(), got.as_bytes());
    }
}
