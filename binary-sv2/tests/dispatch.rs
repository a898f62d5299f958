//! Dispatch (spec §2.4): which `(extension_type, msg_type)` pairs are known, the channel
//! bit, unknown messages as typed errors or raw bytes, the per-protocol sets, and the
//! header constants every message carries.

use proptest::prelude::*;

use sv2c_binary::messages::{
    CATALOG, ChannelEndpointChanged, CommonMessage, ExtensionsMessage, JobDeclarationMessage,
    Message, MessageOrRaw, MessageProtocol, MessageRef, MiningMessage, RawMessage,
    RequestExtensions, SetNewPrevHash, SetNewPrevHashTdp, SubmitSharesStandard,
    TemplateDistributionMessage, encode_frame, lookup, lookup_name, split_frame,
};
use sv2c_binary::{DispatchError, Encode, Frameable, MessageSet, MessageType, Seq064K, U256};

fn share() -> SubmitSharesStandard {
    SubmitSharesStandard {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 0xdead_beef,
        ntime: 0x6650_0000,
        version: 0x2000_0000,
    }
}

#[test]
fn catalog_has_the_44_messages_of_the_spec_table() {
    assert_eq!(CATALOG.len(), 44);
    let count = |p| CATALOG.iter().filter(|m| m.protocol == p).count();
    assert_eq!(count(MessageProtocol::Common), 5);
    assert_eq!(count(MessageProtocol::Mining), 21);
    assert_eq!(count(MessageProtocol::JobDeclaration), 8);
    assert_eq!(count(MessageProtocol::TemplateDistribution), 7);
    assert_eq!(count(MessageProtocol::Extensions), 3);

    // Channel messages per SV2-WIRE §3.0: 0x03 and 0x15..=0x24 except 0x1e; nothing else.
    for m in CATALOG {
        let want = m.extension_type == 0
            && (m.msg_type == 0x03 || ((0x15..=0x24).contains(&m.msg_type) && m.msg_type != 0x1e));
        assert_eq!(m.channel_msg, want, "{}", m.name);
        assert_eq!(lookup(m.wire_extension_type(), m.msg_type), Some(*m));
        assert_eq!(lookup_name(m.protocol, m.name), Some(*m));
    }
    assert_eq!(lookup_name(MessageProtocol::Mining, "NewTemplate"), None);
    assert_eq!(
        lookup_name(MessageProtocol::TemplateDistribution, "SetNewPrevHash").map(|m| m.msg_type),
        Some(0x72)
    );
}

#[test]
fn exactly_the_catalog_ids_are_known() {
    for ext in [0u16, 1, 2, 0x4000, 0x7fff] {
        for msg_type in 0..=255u8 {
            let known = CATALOG
                .iter()
                .any(|m| m.extension_type == ext && m.msg_type == msg_type);
            for wire_ext in [ext, ext | 0x8000] {
                let r = Message::decode_message(wire_ext, msg_type, &[]);
                let r_ref = MessageRef::decode(wire_ext, msg_type, &[]);
                assert_eq!(r_ref.err(), r.clone().err(), "owned and borrowed agree");
                match r {
                    Err(DispatchError::UnknownMessage {
                        extension_id: extension_type,
                        msg_type: t,
                    }) => {
                        assert!(!known, "{ext:#06x}/{msg_type:#04x} should be known");
                        assert_eq!(
                            (extension_type, t),
                            (ext, msg_type),
                            "channel bit masked off"
                        );
                    }
                    // Known: an empty payload is too short for every message.
                    Err(DispatchError::Decode(_)) => assert!(known, "{ext:#06x}/{msg_type:#04x}"),
                    other => panic!("{ext:#06x}/{msg_type:#04x}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn reserved_0x1e_is_unknown() {
    let payload = share().encode_to_vec();
    assert_eq!(
        Message::decode_message(0x8000, 0x1e, &payload),
        Err(DispatchError::UnknownMessage {
            extension_id: 0,
            msg_type: 0x1e
        })
    );
    assert_eq!(
        MiningMessage::decode_message(0x8000, 0x1e, &payload),
        Err(DispatchError::UnknownMessage {
            extension_id: 0,
            msg_type: 0x1e
        })
    );
}

#[test]
fn channel_bit_is_ignored_for_lookup() {
    // SubmitSharesStandard with the channel bit cleared (Appendix A): decoded normally.
    let payload = share().encode_to_vec();
    assert_eq!(
        Message::decode_message(0x0000, 0x1a, &payload),
        Ok(share().into())
    );
    // An extension message with the bit set: same extension.
    let req = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&[2]).unwrap(),
    };
    let payload = req.encode_to_vec();
    assert_eq!(
        Message::decode_message(0x8001, 0x00, &payload),
        Ok(req.clone().into())
    );
    // Extension ids overlap core ids: (1, 0x00) is not SetupConnection.
    assert_eq!(
        Message::decode_message(0x0001, 0x00, &payload)
            .unwrap()
            .name(),
        "RequestExtensions"
    );
}

#[test]
fn encoding_sets_the_header_of_each_message() {
    let frame = encode_frame(&share()).unwrap();
    assert_eq!(frame[..6], [0x00, 0x80, 0x1a, 0x18, 0x00, 0x00]);
    let msg: Message = share().into();
    assert_eq!(encode_frame(&msg).unwrap(), frame);
    assert_eq!(encode_frame(&msg.as_ref()).unwrap(), frame);

    let req = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&[2]).unwrap(),
    };
    assert_eq!(
        encode_frame(&req).unwrap(),
        [
            0x01, 0x00, 0x00, 0x06, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00
        ]
    );
    assert_eq!(
        encode_frame(&ExtensionsMessage::from(req)).unwrap()[..3],
        [0x01, 0x00, 0x00]
    );
    let ch = ChannelEndpointChanged { channel_id: 9 };
    assert_eq!(
        encode_frame(&CommonMessage::from(ch)).unwrap()[..6],
        [0x00, 0x80, 0x03, 4, 0, 0]
    );
    assert_eq!(
        <ChannelEndpointChanged as MessageType>::wire_extension_type(),
        0x8000
    );
}

#[test]
fn unknown_messages_can_be_kept_raw_and_forwarded() {
    // An experimental extension's channel message.
    let payload = [0x07, 0x00, 0x00, 0x00, 0xaa, 0xbb];
    let owned = Message::decode_or_raw(0xc001, 0x05, &payload).unwrap();
    let MessageOrRaw::Raw(raw) = &owned else {
        panic!("expected raw")
    };
    assert_eq!(raw, &RawMessage::new(0xc001, 0x05, &payload));
    assert_eq!(
        (raw.channel_msg(), raw.extension_id(), raw.channel_id()),
        (true, 0x4001, Some(7))
    );
    let frame = encode_frame(&owned).unwrap();
    assert_eq!(frame[..6], [0x01, 0xc0, 0x05, 0x06, 0x00, 0x00]);
    assert_eq!(frame[6..], payload);

    let borrowed = MessageRef::decode_or_raw(0xc001, 0x05, &payload).unwrap();
    let MessageOrRaw::Raw(raw_ref) = borrowed else {
        panic!("expected raw")
    };
    assert_eq!(
        raw_ref.payload.as_ptr(),
        payload.as_ptr(),
        "borrowed, not copied"
    );
    assert_eq!(raw_ref.to_owned_value(), *raw);

    // A known message decodes; a known but broken one is still an error.
    let ok = Message::decode_or_raw(0x8000, 0x1a, &share().encode_to_vec()).unwrap();
    assert_eq!(ok, MessageOrRaw::Known(share().into()));
    assert!(Message::decode_or_raw(0x8000, 0x1a, &[1, 2, 3]).is_err());

    // A per-protocol set treats other protocols' messages as unknown.
    let msg = MiningMessage::decode_or_raw(0x8000, 0x03, &[9, 0, 0, 0]).unwrap();
    assert!(matches!(msg, MessageOrRaw::Raw(_)));
    assert_eq!(
        MiningMessage::decode_message(0, 0x00, &[]),
        Err(DispatchError::UnknownMessage {
            extension_id: 0,
            msg_type: 0
        })
    );

    // Stream of frames: split, dispatch, forward.
    let mut stream = encode_frame(&share()).unwrap();
    stream.extend(encode_frame(&raw_ref).unwrap());
    let (first, rest) = split_frame(&stream).unwrap();
    let (second, rest) = split_frame(rest).unwrap();
    assert!(rest.is_empty());
    assert_eq!(
        Message::decode_message(first.extension_type, first.msg_type, first.payload),
        Ok(share().into())
    );
    assert_eq!(second, raw_ref);
}

#[test]
fn the_two_set_new_prev_hash_are_told_apart() {
    let mining = SetNewPrevHash {
        channel_id: 1,
        job_id: 2,
        prev_hash: U256([3; 32]),
        min_ntime: 4,
        nbits: 5,
    };
    let tdp = SetNewPrevHashTdp {
        template_id: 1,
        prev_hash: U256([2; 32]),
        header_timestamp: 3,
        n_bits: 4,
        target: U256([5; 32]),
    };
    let m: Message = mining.clone().into();
    let t: Message = tdp.clone().into();
    assert_eq!(
        (m.name(), m.protocol(), m.msg_type()),
        ("SetNewPrevHash", MessageProtocol::Mining, 0x20)
    );
    assert_eq!(
        (t.name(), t.protocol(), t.msg_type()),
        (
            "SetNewPrevHash",
            MessageProtocol::TemplateDistribution,
            0x72
        )
    );
    assert!(matches!(t, Message::SetNewPrevHashTdp(_)));
    assert_eq!(
        TemplateDistributionMessage::try_from(t.clone()),
        Ok(TemplateDistributionMessage::SetNewPrevHash(tdp))
    );
    assert_eq!(MiningMessage::try_from(t.clone()), Err(t));
    assert_eq!(
        Message::from(MiningMessage::SetNewPrevHash(mining.clone())),
        m
    );
    assert_eq!(JobDeclarationMessage::try_from(m.clone()), Err(m));
}

#[test]
fn protocol_sets_convert_to_the_full_set() {
    for info in CATALOG {
        // Every message, decoded from the smallest payload that is valid for it (all
        // zeros with the right length: variable fields empty, OPTIONs absent) where one
        // exists.
        let zeros = [0u8; 100];
        let decoded = (0..=100)
            .find_map(|n| {
                Message::decode_message(info.wire_extension_type(), info.msg_type, &zeros[..n]).ok()
            })
            .unwrap_or_else(|| panic!("{} has no all-zero encoding", info.name));
        assert_eq!(decoded.info(), *info);
        let bytes = decoded.encode_to_vec();
        let back = MessageRef::decode(info.wire_extension_type(), info.msg_type, &bytes).unwrap();
        assert_eq!(back.to_owned_value(), decoded);
        let narrowed_ok = match info.protocol {
            MessageProtocol::Common => CommonMessage::try_from(decoded.clone())
                .map(Message::from)
                .ok(),
            MessageProtocol::Mining => MiningMessage::try_from(decoded.clone())
                .map(Message::from)
                .ok(),
            MessageProtocol::JobDeclaration => JobDeclarationMessage::try_from(decoded.clone())
                .map(Message::from)
                .ok(),
            MessageProtocol::TemplateDistribution => {
                TemplateDistributionMessage::try_from(decoded.clone())
                    .map(Message::from)
                    .ok()
            }
            MessageProtocol::Extensions => ExtensionsMessage::try_from(decoded.clone())
                .map(Message::from)
                .ok(),
        };
        assert_eq!(narrowed_ok, Some(decoded));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any header and payload: a typed result, never a panic; a decoded message re-encodes
    /// to bytes that decode to the same message, owned and borrowed alike.
    /// (Re-encoding may differ from the input only by normalising BOOL bytes to 0/1 and by
    /// dropping trailing bytes.)
    #[test]
    fn arbitrary_payloads_never_panic(
        ext in prop_oneof![Just(0u16), Just(0x8000), Just(1), Just(0x8001), any::<u16>()],
        msg_type in prop_oneof![0x00u8..=0x04, 0x10u8..=0x25, 0x50u8..=0x60, 0x70u8..=0x76, any::<u8>()],
        payload in proptest::collection::vec(any::<u8>(), 0..=160),
    ) {
        let owned = Message::decode_message(ext, msg_type, &payload);
        let borrowed = MessageRef::decode(ext, msg_type, &payload);
        match (&owned, &borrowed) {
            (Ok(m), Ok(r)) => {
                // Compared through their bytes: F32 fields may hold NaN.
                let bytes = m.encode_to_vec();
                prop_assert_eq!(&r.to_owned_value().encode_to_vec(), &bytes);
                prop_assert_eq!(&r.encode_to_vec(), &bytes);
                prop_assert!(bytes.len() <= payload.len());
                let again = Message::decode_message(ext, msg_type, &bytes).unwrap();
                prop_assert_eq!(again.encode_to_vec(), bytes);
                prop_assert_eq!(m.msg_type(), msg_type);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "owned {owned:?} vs borrowed {borrowed:?}"),
        }
    }
}

#[test]
fn borrowed_targets_point_into_the_payload_and_owned_copies_them() {
    use sv2c_binary::messages::{SetTarget, UpdateChannel};
    // ADR 0007/0008: the `U256` of these messages is a view into the frame when borrowed,
    // and a copy (equal bytes, its own storage) when owned.
    let mut target = [0u8; 32];
    for (i, b) in target.iter_mut().enumerate() {
        *b = i as u8 ^ 0x5a;
    }
    let update = UpdateChannel {
        channel_id: 9,
        nominal_hash_rate: 1.5e12,
        maximum_target: U256(target),
    };
    let payload = update.encode_to_vec();
    let MessageRef::UpdateChannel(view) = MessageRef::decode(0x8000, 0x16, &payload).unwrap()
    else {
        panic!("expected UpdateChannel")
    };
    assert!(core::ptr::eq(
        view.maximum_target,
        payload[8..40].as_ptr().cast()
    ));
    assert_eq!((view.channel_id, view.nominal_hash_rate), (9, 1.5e12));
    let Message::UpdateChannel(owned) = Message::decode_message(0x8000, 0x16, &payload).unwrap()
    else {
        panic!("expected UpdateChannel")
    };
    assert_eq!(owned, update);

    let set = SetTarget {
        channel_id: 4,
        maximum_target: U256(target),
    };
    let payload = set.encode_to_vec();
    let MessageRef::SetTarget(view) = MessageRef::decode(0x8000, 0x21, &payload).unwrap() else {
        panic!("expected SetTarget")
    };
    assert!(core::ptr::eq(
        view.maximum_target,
        payload[4..36].as_ptr().cast()
    ));
    assert_eq!(
        Message::decode_message(0x8000, 0x21, &payload).unwrap(),
        Message::SetTarget(set)
    );
    // Truncated in the target: an error from both forms, never a panic.
    assert!(MessageRef::decode(0x8000, 0x21, &payload[..35]).is_err());
    assert!(Message::decode_message(0x8000, 0x21, &payload[..35]).is_err());
}

/// The dispatch reads a fixed-length message from exactly its length's worth of bytes, with
/// one length check (`decode_ref_front`, and the same test in `decode_then_own`); every
/// other payload is read field by field. For every message type, on pseudo-random payloads
/// of every length up to 8 bytes past the fixed length (or 72 bytes), the owned and the
/// borrowed dispatch must agree with the type's own field-by-field decode from a reader
/// over the whole payload: the same message (compared through its encoding), or the same
/// error.
#[test]
fn dispatch_agrees_with_the_field_by_field_decode_at_every_length() {
    use sv2c_binary::messages::*;
    use sv2c_binary::{Decode, DecodeError, Reader, Wire, WireRef};

    /// xorshift64*: reproducible bytes without a dependency.
    fn bytes(seed: &mut u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                *seed ^= *seed >> 12;
                *seed ^= *seed << 25;
                *seed ^= *seed >> 27;
                (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
            })
            .collect()
    }

    /// Returns `T`'s ids and whether it has a fixed length.
    fn check<T: Wire + MessageType>(seed: &mut u64) -> ((u16, u8), bool) {
        let max = T::FIXED_LEN.map_or(72, |n| n + 8);
        for len in 0..=max {
            for _ in 0..8 {
                let payload = bytes(seed, len);
                let reference: Result<Vec<u8>, DecodeError> =
                    <T::Ref<'_> as Decode>::decode(&mut Reader::new(&payload))
                        .map(|r| r.to_owned_value().encode_to_vec());
                let (ext, ty) = (T::EXTENSION_TYPE, T::MSG_TYPE);
                let owned = Message::decode_message(ext, ty, &payload).map(|m| m.encode_to_vec());
                let borrowed = MessageRef::decode(ext, ty, &payload).map(|m| m.encode_to_vec());
                let expected = reference.map_err(DispatchError::Decode);
                let name = core::any::type_name::<T>();
                assert_eq!(owned, expected, "owned {name}, {len} bytes: {payload:02x?}");
                assert_eq!(
                    borrowed, expected,
                    "borrowed {name}, {len} bytes: {payload:02x?}"
                );
            }
        }
        ((T::EXTENSION_TYPE, T::MSG_TYPE), T::FIXED_LEN.is_some())
    }

    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let s = &mut seed;
    let fixed = [
        check::<SetupConnection>(s),
        check::<SetupConnectionSuccess>(s),
        check::<SetupConnectionError>(s),
        check::<ChannelEndpointChanged>(s),
        check::<Reconnect>(s),
        check::<OpenStandardMiningChannel>(s),
        check::<OpenStandardMiningChannelSuccess>(s),
        check::<OpenMiningChannelError>(s),
        check::<OpenExtendedMiningChannel>(s),
        check::<OpenExtendedMiningChannelSuccess>(s),
        check::<UpdateChannel>(s),
        check::<UpdateChannelError>(s),
        check::<CloseChannel>(s),
        check::<SetExtranoncePrefix>(s),
        check::<SetTarget>(s),
        check::<SetGroupChannel>(s),
        check::<SetCustomMiningJob>(s),
        check::<SetCustomMiningJobSuccess>(s),
        check::<SetCustomMiningJobError>(s),
        check::<NewMiningJob>(s),
        check::<NewExtendedMiningJob>(s),
        check::<SetNewPrevHash>(s),
        check::<SubmitSharesStandard>(s),
        check::<SubmitSharesExtended>(s),
        check::<SubmitSharesSuccess>(s),
        check::<SubmitSharesError>(s),
        check::<CoinbaseOutputConstraints>(s),
        check::<NewTemplate>(s),
        check::<SetNewPrevHashTdp>(s),
        check::<RequestTransactionData>(s),
        check::<RequestTransactionDataSuccess>(s),
        check::<RequestTransactionDataError>(s),
        check::<SubmitSolution>(s),
        check::<AllocateMiningJobToken>(s),
        check::<AllocateMiningJobTokenSuccess>(s),
        check::<ProvideMissingTransactions>(s),
        check::<ProvideMissingTransactionsSuccess>(s),
        check::<DeclareMiningJob>(s),
        check::<DeclareMiningJobSuccess>(s),
        check::<DeclareMiningJobError>(s),
        check::<PushSolution>(s),
        check::<RequestExtensions>(s),
        check::<RequestExtensionsSuccess>(s),
        check::<RequestExtensionsError>(s),
    ];
    // The list needs each type by name (`check::<T>`), so it is written out; it must name
    // every message of the catalog, once.
    for m in CATALOG {
        let rows = fixed
            .iter()
            .filter(|(ids, _)| *ids == (m.extension_type, m.msg_type))
            .count();
        assert_eq!(
            rows, 1,
            "{}/{} ({:#06x}/{:#04x}): the list of \
             dispatch_agrees_with_the_field_by_field_decode_at_every_length needs one \
             `check::<T>(s)` of its type",
            m.protocol, m.name, m.extension_type, m.msg_type
        );
    }
    assert_eq!(fixed.len(), CATALOG.len(), "a type outside the catalog");
    // The fast path is exercised: the fixed-length messages of the catalog.
    assert!(fixed.iter().filter(|(_, f)| *f).count() >= 8, "{fixed:?}");
}
