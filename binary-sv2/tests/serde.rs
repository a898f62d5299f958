//! The JSON mapping (feature `serde`): values the vectors do not contain (non-UTF-8
//! strings, non-finite F32), and rejection of malformed input with errors, not panics.

#![cfg(feature = "serde")]

use proptest::prelude::*;
use serde_json::{Value, json};

use sv2c_binary::messages::{
    Message, NewMiningJob, OpenStandardMiningChannel, SetupConnection, SubmitSharesExtended,
    UpdateChannel,
};
use sv2c_binary::tlv::TlvBuf;
use sv2c_binary::{B016M, B032, B064K, Encode, Protocol, Seq064K, Seq0255, Str0255, U24, U256};

fn round_trip<T>(v: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let json = serde_json::to_string(v).unwrap();
    serde_json::from_str(&json).unwrap()
}

#[test]
fn non_utf8_str0255_becomes_a_hex_object_and_round_trips() {
    let s = Str0255::try_from(&[0x66, 0x6f, 0xff, 0x00][..]).unwrap();
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!({"hex": "666fff00"})
    );
    assert_eq!(round_trip(&s), s);
    // Text stays text, including characters JSON escapes.
    let t = Str0255::try_from("rig \"1\"\n⛏").unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), json!("rig \"1\"\n⛏"));
    assert_eq!(round_trip(&t), t);
    // The hex form is accepted for text as well, in either case.
    let from_hex: Str0255 = serde_json::from_value(json!({"hex": "4142"})).unwrap();
    assert_eq!(from_hex.as_str(), Ok("AB"));
    let upper: Str0255 = serde_json::from_value(json!({"hex": "4A4b"})).unwrap();
    assert_eq!(upper.as_str(), Ok("JK"));

    // Inside a message.
    let msg = SetupConnection {
        protocol: Protocol::JobDeclaration,
        min_version: 2,
        max_version: 2,
        flags: 1,
        endpoint_host: Str0255::try_from(&[0xc3, 0x28][..]).unwrap(), // invalid UTF-8
        endpoint_port: 3333,
        vendor: Str0255::try_from("acme").unwrap(),
        hardware_version: Str0255::new(),
        firmware: Str0255::new(),
        device_id: Str0255::new(),
    };
    let v = serde_json::to_value(&msg).unwrap();
    assert_eq!(v["endpoint_host"], json!({"hex": "c328"}));
    assert_eq!(v["protocol"], json!(1));
    let back: SetupConnection = serde_json::from_value(v).unwrap();
    assert_eq!(back.encode_to_vec(), msg.encode_to_vec());
}

#[test]
fn non_finite_f32_round_trips_through_strings() {
    let mut msg = UpdateChannel {
        channel_id: 1,
        nominal_hash_rate: 0.0,
        maximum_target: U256([0; 32]),
    };
    for (bits, text) in [
        (f32::INFINITY.to_bits(), json!("inf")),
        (f32::NEG_INFINITY.to_bits(), json!("-inf")),
        (0x7fc0_0000, json!("NaN")),
        (0xffc0_0001, json!("NaN:0xffc00001")),
        (0x7f80_0001, json!("NaN:0x7f800001")),
    ] {
        msg.nominal_hash_rate = f32::from_bits(bits);
        let v = serde_json::to_value(&msg).unwrap();
        assert_eq!(v["nominal_hash_rate"], text);
        let back: UpdateChannel = serde_json::from_value(v).unwrap();
        assert_eq!(back.nominal_hash_rate.to_bits(), bits);
    }
    // Finite values are numbers, exact.
    // The f32 nearest to 728189.6 is exactly 728189.625, which is what JSON shows.
    msg.nominal_hash_rate = 728_189.6;
    assert_eq!(
        serde_json::to_value(&msg).unwrap()["nominal_hash_rate"],
        json!(728_189.625)
    );
    msg.nominal_hash_rate = 0.1;
    let back: UpdateChannel = round_trip(&msg);
    assert_eq!(back.nominal_hash_rate.to_bits(), 0.1f32.to_bits());
}

#[test]
fn json_shapes_follow_the_vector_mapping() {
    let job = NewMiningJob {
        channel_id: 1,
        job_id: 2,
        min_ntime: None,
        version: 3,
        merkle_root: U256([0xab; 32]),
    };
    assert_eq!(
        serde_json::to_value(&job).unwrap(),
        json!({"channel_id": 1, "job_id": 2, "min_ntime": null, "version": 3, "merkle_root": "ab".repeat(32)})
    );
    let seq = Seq0255::from_slice(&[U256([1; 32])]).unwrap();
    assert_eq!(
        serde_json::to_value(&seq).unwrap(),
        json!(["01".repeat(32)])
    );
    let txs = Seq064K::from_slice(&[B016M::try_from(vec![1, 2]).unwrap(), B016M::new()]).unwrap();
    assert_eq!(serde_json::to_value(&txs).unwrap(), json!(["0102", ""]));
    assert_eq!(
        serde_json::to_value(U24::try_from(70_000u32).unwrap()).unwrap(),
        json!(70_000)
    );
    let tlv = TlvBuf::new(2, 1, b"ab").unwrap();
    let v = serde_json::to_value(&tlv).unwrap();
    assert_eq!(
        v,
        json!({"extension_type": 2, "field_type": 1, "value": "6162"})
    );
    assert_eq!(serde_json::from_value::<TlvBuf>(v).unwrap(), tlv);

    // The dispatch enum serializes its fields and deserializes by message id.
    let msg: Message = job.clone().into();
    let v = serde_json::to_value(&msg).unwrap();
    assert_eq!(Message::deserialize_fields(0x8000, 0x15, &v).unwrap(), msg);
    assert!(
        Message::deserialize_fields(0, 0x1e, &v)
            .unwrap_err()
            .to_string()
            .contains("unknown message")
    );
}

#[test]
fn malformed_json_values_are_errors() {
    let bad: &[(&str, Value)] = &[
        ("U256 too short", json!("abcd")),
        ("U256 odd digits", json!("a".repeat(63))),
        ("U256 bad digit", json!(format!("{}zz", "00".repeat(31)))),
        ("U256 as a number", json!(5)),
    ];
    for (what, v) in bad {
        assert!(serde_json::from_value::<U256>(v.clone()).is_err(), "{what}");
    }
    assert!(serde_json::from_value::<B032>(json!("00".repeat(33))).is_err());
    assert_eq!(
        serde_json::from_value::<B032>(json!("00".repeat(32)))
            .unwrap()
            .len(),
        32
    );
    assert!(serde_json::from_value::<B064K>(json!("00".repeat(65_536))).is_err());
    assert!(serde_json::from_value::<Str0255>(json!("x".repeat(256))).is_err());
    assert!(serde_json::from_value::<Str0255>(json!({"hex": "00".repeat(256)})).is_err());
    assert!(serde_json::from_value::<Str0255>(json!({"text": "a"})).is_err());
    assert!(serde_json::from_value::<Str0255>(json!({"hex": "41", "more": 1})).is_err());
    assert!(serde_json::from_value::<Str0255>(json!(7)).is_err());
    let too_many: Vec<String> = (0..256).map(|_| "00".repeat(32)).collect();
    assert!(serde_json::from_value::<Seq0255<U256>>(json!(too_many)).is_err());
    assert!(serde_json::from_value::<Seq064K<u16>>(json!([1, 2, 70_000])).is_err());
    assert!(serde_json::from_value::<Protocol>(json!(3)).is_err());
    assert!(serde_json::from_value::<U24>(json!(16_777_216)).is_err());
    assert!(
        serde_json::from_value::<TlvBuf>(json!({"extension_type": 2, "field_type": 1})).is_err()
    );

    // Messages: unknown fields, missing fields, wrong types, out-of-range F32.
    let good = json!({"request_id": 1, "user_identity": "u", "nominal_hash_rate": 1.5,
                      "max_target": "00".repeat(32)});
    assert!(serde_json::from_value::<OpenStandardMiningChannel>(good.clone()).is_ok());
    let mut extra = good.clone();
    extra["surprise"] = json!(1);
    assert!(serde_json::from_value::<OpenStandardMiningChannel>(extra).is_err());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("max_target");
    assert!(serde_json::from_value::<OpenStandardMiningChannel>(missing).is_err());
    let mut huge = good.clone();
    huge["nominal_hash_rate"] = json!(1e300);
    assert!(serde_json::from_value::<OpenStandardMiningChannel>(huge).is_err());
    let mut negative_id = good;
    negative_id["request_id"] = json!(-1);
    assert!(serde_json::from_value::<OpenStandardMiningChannel>(negative_id).is_err());
}

fn arb_share() -> impl Strategy<Value = SubmitSharesExtended> {
    (
        any::<[u32; 6]>(),
        proptest::collection::vec(any::<u8>(), 0..=32),
    )
        .prop_map(|(n, e)| SubmitSharesExtended {
            channel_id: n[0],
            sequence_number: n[1],
            job_id: n[2],
            nonce: n[3],
            ntime: n[4],
            version: n[5],
            extranonce: B032::try_from(e).unwrap(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any STR0_255 bytes and any F32 bits survive JSON.
    #[test]
    fn any_string_and_float_round_trip(
        bytes in proptest::collection::vec(any::<u8>(), 0..=255),
        bits in any::<u32>(),
        share in arb_share(),
    ) {
        let msg = OpenStandardMiningChannel {
            request_id: 1,
            user_identity: Str0255::try_from(bytes).unwrap(),
            nominal_hash_rate: f32::from_bits(bits),
            max_target: U256([7; 32]),
        };
        let back: OpenStandardMiningChannel = round_trip(&msg);
        prop_assert_eq!(back.encode_to_vec(), msg.encode_to_vec());
        let back: SubmitSharesExtended = round_trip(&share);
        prop_assert_eq!(back, share);
    }
}
