//! `Display`/`FromStr` of the text and fixed-size byte types, and `Default` messages.

use sv2c_binary::messages::{Protocol, SetupConnection, SubmitSharesStandard};
use sv2c_binary::{ParseHexError, PubKey, Signature, Str0255, Str0255Ref, U256};

#[test]
fn str0255_display_is_lossy_text() {
    let s = Str0255::try_from("pool.example").unwrap();
    assert_eq!(s.to_string(), "pool.example");
    let bad = Str0255::try_from(&b"ab\xffcd\xe2\x82"[..]).unwrap();
    assert_eq!(bad.to_string(), "ab\u{fffd}cd\u{fffd}");
    assert!(bad.as_str().is_err());
    let r = Str0255Ref::try_from(&b"x\xc3"[..]).unwrap();
    assert_eq!(format!("[{r}]"), "[x\u{fffd}]");
}

#[test]
fn u256_hex_round_trip() {
    let mut bytes = [0u8; 32];
    bytes[0] = 0xab;
    bytes[31] = 0x01;
    let v = U256(bytes);
    let text = v.to_string();
    assert_eq!(
        text,
        "ab00000000000000000000000000000000000000000000000000000000000001"
    );
    assert_eq!(text.parse::<U256>().unwrap(), v);
    assert_eq!(
        format!("0X{}", text.to_uppercase())
            .parse::<U256>()
            .unwrap(),
        v
    );
    assert_eq!(
        "abc".parse::<U256>(),
        Err(ParseHexError::Length {
            ty: "U256",
            expected: 64,
            actual: 3
        })
    );
    let mut bad = text.clone();
    bad.replace_range(10..11, "g");
    assert_eq!(
        bad.parse::<U256>(),
        Err(ParseHexError::Digit {
            ty: "U256",
            position: 10
        })
    );
    let e: Box<dyn std::error::Error> = Box::new("".parse::<U256>().unwrap_err());
    assert_eq!(e.to_string(), "U256: expected 64 hex digits, got 0");
}

#[test]
fn pubkey_and_signature_hex() {
    let pk = PubKey([0x11; 32]);
    assert_eq!(pk.to_string().parse::<PubKey>().unwrap(), pk);
    let sig = Signature([0xfe; 64]);
    assert_eq!(sig.to_string().len(), 128);
    assert_eq!(sig.to_string().parse::<Signature>().unwrap(), sig);
}

#[test]
fn messages_have_defaults() {
    let setup = SetupConnection {
        vendor: Str0255::try_from("acme").unwrap(),
        ..Default::default()
    };
    assert_eq!(setup.protocol, Protocol::Mining);
    assert_eq!(setup.max_version, 0);
    assert!(setup.endpoint_host.as_bytes().is_empty());
    assert_eq!(SubmitSharesStandard::default().nonce, 0);
}
