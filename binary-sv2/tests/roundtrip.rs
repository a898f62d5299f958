//! Property round trips for every data type and for derived messages, in both forms:
//! encode → decode gives the value back, `encoded_len()` equals the bytes written,
//! the borrowed decode made owned equals the owned decode, and re-encoding is identical.

mod common;

use std::fmt::Debug;

use common::{Kitchen, Output, Payout, SharesExt};
use proptest::collection::vec;
use proptest::prelude::*;
use sv2c_binary::{
    B016M, B032, B064K, B0255, DecodeErrorKind, Encode, Mac, PubKey, Seq064K, Seq0255, Signature,
    Str0255, U24, U256, Wire, WireRef, from_bytes_ref,
};

/// The full check for one value. `==` is only asserted for values equal to themselves
/// (an F32 NaN is not); bytes are compared for all.
#[track_caller]
fn check<T>(v: &T)
where
    T: Wire + Debug + PartialEq,
    for<'a> T::Ref<'a>: Debug + PartialEq,
{
    #[allow(clippy::eq_op)] // deliberate: false only for values like an F32 NaN
    let self_eq = v == v;
    let bytes = v.encode_to_vec();
    assert_eq!(bytes.len(), v.encoded_len(), "encoded_len of {v:?}");

    // Owned decode.
    let owned = T::decode_owned(&bytes).expect("owned decode");
    assert_eq!(owned.encode_to_vec(), bytes);
    if self_eq {
        assert_eq!(&owned, v);
    }
    T::decode_owned_exact(&bytes).expect("exact decode");

    // Borrowed decode, and back to owned.
    let r: T::Ref<'_> = from_bytes_ref(&bytes).expect("ref decode");
    assert_eq!(r.encoded_len(), bytes.len());
    assert_eq!(r.encode_to_vec(), bytes);
    let r_owned = r.to_owned_value();
    assert_eq!(r_owned.encode_to_vec(), bytes);
    if self_eq {
        assert_eq!(r, v.to_ref());
        assert_eq!(&r_owned, v);
    }

    // Trailing bytes: ignored by default, rejected by the exact decode.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0xee, 0xff]);
    assert_eq!(
        T::decode_owned(&longer)
            .expect("decode with tail")
            .encode_to_vec(),
        bytes
    );
    let err = T::decode_owned_exact(&longer).unwrap_err();
    assert_eq!(err.kind(), DecodeErrorKind::TrailingBytes { len: 2 });
    assert_eq!(err.offset(), bytes.len());

    // Encoding into a slice: exact size works, one byte less is refused without writing.
    let mut out = vec![0u8; bytes.len()];
    assert_eq!(v.encode_to_slice(&mut out), Ok(bytes.len()));
    assert_eq!(out, bytes);
    if !bytes.is_empty() {
        let mut short = vec![0u8; bytes.len() - 1];
        assert!(v.encode_to_slice(&mut short).is_err());
    }

    // Every strict prefix is rejected (all our test values end with a non-optional part).
    for cut in 0..bytes.len() {
        assert!(
            T::decode_owned(&bytes[..cut]).is_err(),
            "prefix of {cut}/{} bytes decoded",
            bytes.len()
        );
    }
}

fn bytes_up_to(max: usize) -> impl Strategy<Value = Vec<u8>> {
    // Mostly short, sometimes at or near the maximum.
    prop_oneof![
        4 => vec(any::<u8>(), 0..=max.min(40)),
        1 => vec(any::<u8>(), max.saturating_sub(2)..=max),
    ]
}

fn u256() -> impl Strategy<Value = U256> {
    any::<[u8; 32]>().prop_map(U256)
}
fn b032() -> impl Strategy<Value = B032> {
    bytes_up_to(32).prop_map(|b| B032::try_from(b).unwrap())
}
fn str0255() -> impl Strategy<Value = Str0255> {
    prop_oneof![
        ".{0,40}".prop_map(|s: String| {
            let mut s = s;
            while s.len() > 255 {
                s.pop();
            }
            Str0255::try_from(s).unwrap()
        }),
        bytes_up_to(255).prop_map(|b| Str0255::try_from(b).unwrap()),
    ]
}
fn b0255() -> impl Strategy<Value = B0255> {
    bytes_up_to(255).prop_map(|b| B0255::try_from(b).unwrap())
}
fn b064k() -> impl Strategy<Value = B064K> {
    prop_oneof![
        9 => vec(any::<u8>(), 0..300),
        1 => vec(any::<u8>(), 65_535..=65_535),
    ]
    .prop_map(|b| B064K::try_from(b).unwrap())
}
fn b016m() -> impl Strategy<Value = B016M> {
    prop_oneof![
        9 => vec(any::<u8>(), 0..300),
        1 => vec(any::<u8>(), 70_000..=70_000),
    ]
    .prop_map(|b| B016M::try_from(b).unwrap())
}
fn f32_any() -> impl Strategy<Value = f32> {
    any::<u32>().prop_map(f32::from_bits)
}

fn kitchen() -> impl Strategy<Value = Kitchen> {
    (
        (
            any::<bool>(),
            any::<u8>(),
            any::<u16>(),
            (0u32..=0xff_ffff).prop_map(|v| U24::try_from(v).unwrap()),
            any::<u32>(),
            any::<u64>(),
            f32_any(),
            u256(),
            b032(),
            str0255(),
        ),
        (
            b0255(),
            vec(any::<u8>(), 0..200).prop_map(|b| B064K::try_from(b).unwrap()),
            vec(any::<u8>(), 0..200).prop_map(|b| B016M::try_from(b).unwrap()),
            any::<Option<u32>>(),
            proptest::option::of(str0255()),
            vec(u256(), 0..8).prop_map(|v| Seq0255::from_slice(&v).unwrap()),
            vec(any::<u16>(), 0..50).prop_map(|v| Seq064K::from_slice(&v).unwrap()),
            vec(any::<u32>(), 0..50).prop_map(|v| Seq064K::from_slice(&v).unwrap()),
            vec(
                vec(any::<u8>(), 0..100).prop_map(|b| B016M::try_from(b).unwrap()),
                0..6,
            )
            .prop_map(|v| Seq064K::from_slice(&v).unwrap()),
            vec(str0255(), 0..6).prop_map(|v| Seq0255::from_slice(&v).unwrap()),
        ),
    )
        .prop_map(|(a, b)| Kitchen {
            flag: a.0,
            small: a.1,
            port: a.2,
            len24: a.3,
            id: a.4,
            total: a.5,
            rate: a.6,
            hash: a.7,
            prefix: a.8,
            name: a.9,
            token: b.0,
            script: b.1,
            blob: b.2,
            maybe: b.3,
            maybe_name: b.4,
            path: b.5,
            positions: b.6,
            ids: b.7,
            txs: b.8,
            names: b.9,
        })
}

fn output() -> impl Strategy<Value = Output> {
    (any::<u64>(), vec(any::<u8>(), 0..50)).prop_map(|(value, s)| Output {
        value,
        script: B064K::try_from(s).unwrap(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test] fn bool_rt(v: bool) { check(&v) }
    #[test] fn u8_rt(v: u8) { check(&v) }
    #[test] fn u16_rt(v: u16) { check(&v) }
    #[test] fn u24_rt(v in 0u32..=0xff_ffff) { check(&U24::try_from(v).unwrap()) }
    #[test] fn u32_rt(v: u32) { check(&v) }
    #[test] fn u64_rt(v: u64) { check(&v) }
    #[test] fn f32_rt(v in f32_any()) { check(&v) }
    #[test] fn u256_rt(v in u256()) { check(&v) }
    #[test] fn pubkey_rt(v: [u8; 32]) { check(&PubKey(v)) }
    #[test] fn signature_rt(v in vec(any::<u8>(), 64)) {
        check(&Signature(v.try_into().unwrap()))
    }
    #[test] fn mac_rt(v: [u8; 16]) { check(&Mac(v)) }
    #[test] fn b032_rt(v in b032()) { check(&v) }
    #[test] fn str0255_rt(v in str0255()) { check(&v) }
    #[test] fn b0255_rt(v in b0255()) { check(&v) }
    #[test] fn b064k_rt(v in b064k()) { check(&v) }
    #[test] fn b016m_rt(v in b016m()) { check(&v) }
    #[test] fn option_u32_rt(v: Option<u32>) { check(&v) }
    #[test] fn option_u256_rt(v in proptest::option::of(u256())) { check(&v) }
    #[test] fn option_str_rt(v in proptest::option::of(str0255())) { check(&v) }
    #[test] fn seq0255_u256_rt(v in vec(u256(), 0..=255)) {
        let s = Seq0255::from_slice(&v).unwrap();
        check(&s);
        prop_assert_eq!(s.to_vec(), v.clone());
        prop_assert_eq!(s.as_arrays().len(), v.len());
        for (i, x) in v.iter().enumerate() {
            prop_assert_eq!(s.get(i), Some(*x));
        }
        prop_assert_eq!(s.get(v.len()), None);
    }
    #[test] fn seq064k_u16_rt(v in vec(any::<u16>(), 0..600)) {
        let s = Seq064K::from_slice(&v).unwrap();
        check(&s);
        prop_assert_eq!(s.to_vec(), v);
    }
    #[test] fn seq064k_u32_rt(v in vec(any::<u32>(), 0..600)) {
        let s = Seq064K::from_slice(&v).unwrap();
        check(&s);
        prop_assert_eq!(s.to_vec(), v);
    }
    #[test] fn seq064k_b016m_rt(v in vec(b016m(), 0..5)) {
        let s = Seq064K::from_slice(&v).unwrap();
        check(&s);
        prop_assert_eq!(s.to_vec(), v.clone());
        let bytes = s.encode_to_vec();
        let r = sv2c_binary::Seq064KRef::<B016M>::decode_owned_ref(&bytes);
        for (i, x) in v.iter().enumerate() {
            prop_assert_eq!(r.get(i).map(|e| e.as_bytes()), Some(x.as_bytes()));
        }
    }
    #[test] fn seq0255_str_rt(v in vec(str0255(), 0..20)) {
        let s = Seq0255::from_slice(&v).unwrap();
        check(&s);
        prop_assert_eq!(s.to_vec(), v);
    }
    #[test] fn seq_option_rt(v in vec(any::<Option<u32>>(), 0..50)) {
        check(&Seq064K::from_slice(&v).unwrap())
    }
    #[test] fn shares_ext_rt(
        f in any::<[u32; 6]>(),
        e in b032(),
    ) {
        check(&SharesExt {
            channel_id: f[0], sequence_number: f[1], job_id: f[2],
            nonce: f[3], ntime: f[4], version: f[5], extranonce: e,
        })
    }
    #[test] fn kitchen_rt(k in kitchen()) { check(&k) }
    #[test] fn payout_rt(id: u32, first in output(), rest in vec(output(), 0..10)) {
        let p = Payout { request_id: id, first, rest: Seq064K::from_slice(&rest).unwrap() };
        check(&p);
        prop_assert_eq!(p.rest.to_vec(), rest);
    }
}

/// Helper used above: decode a borrowed sequence from its bytes.
trait DecodeOwnedRef<'a>: Sized {
    fn decode_owned_ref(bytes: &'a [u8]) -> Self;
}
impl<'a> DecodeOwnedRef<'a> for sv2c_binary::Seq064KRef<'a, B016M> {
    fn decode_owned_ref(bytes: &'a [u8]) -> Self {
        from_bytes_ref(bytes).unwrap()
    }
}
