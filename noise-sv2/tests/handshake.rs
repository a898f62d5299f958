//! Handshake behaviour: round trips, certificate checks, hostile act 1 / act 2.

mod common;

use bytes::BytesMut;
use common::{NOT_VALID_AFTER, VALID_FROM, decrypt_all, frame};
use sv2c_noise::{
    ACT1_LEN, ACT2_LEN, Act2Part, AuthorityKeypair, Certificate, EphemeralKey, Initiator,
    NoiseError, Responder, StaticKeypair, Transport,
};

struct Server {
    authority: AuthorityKeypair,
    responder: Responder,
}

fn server(valid_from: u32, not_valid_after: u32) -> Server {
    let authority = AuthorityKeypair::generate().unwrap();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        valid_from,
        not_valid_after,
    )
    .unwrap();
    Server {
        authority,
        responder,
    }
}

fn connect(s: &Server, now: u32) -> Result<(Transport, Transport), NoiseError> {
    let (act1, initiator) = Initiator::new(s.authority.public_key())?.step_1();
    let (act2, server) = s.responder.step(&act1)?;
    Ok((initiator.step_2(&act2, now)?, server))
}

#[test]
fn round_trip_in_both_directions() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    let (client, server) = connect(&s, VALID_FROM + 1).unwrap();
    assert_eq!(client.handshake_hash(), server.handshake_hash());
    assert_eq!(
        client.server_static_key(),
        Some(s.responder.static_key().x_only_public_key())
    );
    assert_eq!(client.server_certificate(), Some(s.responder.certificate()));

    let (mut ctx, mut crx) = client.split();
    let (mut stx, mut srx) = server.split();
    for i in 0..5u8 {
        let up = frame(i, 10 * i as usize);
        let mut wire = BytesMut::new();
        ctx.encrypt_frame(&up, &mut wire).unwrap();
        assert_eq!(decrypt_all(&mut srx, &wire), vec![up]);

        let down = frame(0x40 + i, 3 * i as usize);
        let mut wire = BytesMut::new();
        stx.encrypt_frame(&down, &mut wire).unwrap();
        assert_eq!(decrypt_all(&mut crx, &wire), vec![down]);
    }
}

#[test]
fn one_responder_serves_many_independent_connections() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    let (a_client, a_server) = connect(&s, VALID_FROM).unwrap();
    let (b_client, b_server) = connect(&s, VALID_FROM).unwrap();
    assert_ne!(a_client.handshake_hash(), b_client.handshake_hash());

    let (mut a_tx, _) = a_client.split();
    let (_, mut a_rx) = a_server.split();
    let (_, mut b_rx) = b_server.split();
    drop(b_client);
    let mut wire = BytesMut::new();
    a_tx.encrypt_frame(&frame(1, 4), &mut wire).unwrap();
    // Connection B's keys do not open connection A's traffic.
    let mut input = &wire[..];
    assert_eq!(b_rx.decrypt(&mut input), Err(NoiseError::HeaderDecrypt));
    assert_eq!(decrypt_all(&mut a_rx, &wire), vec![frame(1, 4)]);
}

#[test]
fn the_two_directions_use_different_keys() {
    let (client, _server) = common::handshake();
    let (mut ctx, mut crx) = client.split();
    let mut wire = BytesMut::new();
    ctx.encrypt_frame(&frame(1, 4), &mut wire).unwrap();
    // The client's own receive half (k2) cannot open what it sent (k1).
    let mut input = &wire[..];
    assert_eq!(crx.decrypt(&mut input), Err(NoiseError::HeaderDecrypt));
}

#[test]
fn certificate_window_with_ten_seconds_of_slack() {
    let s = server(1_000, 2_000);
    // inside and at the slack limits
    for now in [990, 1_000, 1_500, 2_000, 2_010] {
        connect(&s, now).unwrap_or_else(|e| panic!("now={now}: {e}"));
    }
    assert_eq!(
        connect(&s, 989).err(),
        Some(NoiseError::CertificateNotYetValid {
            valid_from: 1_000,
            now: 989
        })
    );
    assert_eq!(
        connect(&s, 2_011).err(),
        Some(NoiseError::CertificateExpired {
            not_valid_after: 2_000,
            now: 2_011
        })
    );
    assert_eq!(
        connect(&s, 0).err(),
        Some(NoiseError::CertificateNotYetValid {
            valid_from: 1_000,
            now: 0
        })
    );
}

#[test]
fn wrong_authority_is_rejected() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    let other = AuthorityKeypair::generate().unwrap();
    let (act1, initiator) = Initiator::new(other.public_key()).unwrap().step_1();
    let (act2, _) = s.responder.step(&act1).unwrap();
    assert_eq!(
        initiator.step_2(&act2, VALID_FROM).err(),
        Some(NoiseError::CertificateSignature)
    );
}

#[test]
fn certificate_for_another_server_key_is_rejected() {
    let authority = AuthorityKeypair::generate().unwrap();
    let other_key = StaticKeypair::generate().unwrap();
    let cert = Certificate::sign(
        &authority,
        &other_key.x_only_public_key(),
        VALID_FROM,
        NOT_VALID_AFTER,
    )
    .unwrap();
    let responder = Responder::new(StaticKeypair::generate().unwrap(), cert);
    let (act1, initiator) = Initiator::new(authority.public_key()).unwrap().step_1();
    let (act2, _) = responder.step(&act1).unwrap();
    assert_eq!(
        initiator.step_2(&act2, VALID_FROM).err(),
        Some(NoiseError::CertificateSignature)
    );
}

#[test]
fn unknown_certificate_version_is_rejected() {
    let authority = AuthorityKeypair::generate().unwrap();
    let key = StaticKeypair::generate().unwrap();
    let mut bytes = Certificate::sign(
        &authority,
        &key.x_only_public_key(),
        VALID_FROM,
        NOT_VALID_AFTER,
    )
    .unwrap()
    .to_bytes();
    bytes[0] = 1;
    let responder = Responder::new(key, Certificate::from_bytes(&bytes));
    let (act1, initiator) = Initiator::new(authority.public_key()).unwrap().step_1();
    let (act2, _) = responder.step(&act1).unwrap();
    assert_eq!(
        initiator.step_2(&act2, VALID_FROM).err(),
        Some(NoiseError::CertificateVersion(1))
    );
}

#[test]
fn unauthenticated_initiator_accepts_any_certificate() {
    // Expired and signed by an authority the client never heard of.
    let s = server(1, 2);
    let (act1, initiator) = Initiator::new_unauthenticated().unwrap().step_1();
    let (act2, server) = s.responder.step(&act1).unwrap();
    let client = initiator.step_2(&act2, 1_000_000).unwrap();
    assert_eq!(client.handshake_hash(), server.handshake_hash());
}

#[test]
fn set_certificate_renews_what_later_handshakes_present() {
    let mut s = server(1_000, 2_000);
    assert!(matches!(
        connect(&s, 5_000),
        Err(NoiseError::CertificateExpired { .. })
    ));
    let renewed = Certificate::sign(
        &s.authority,
        &s.responder.static_key().x_only_public_key(),
        4_000,
        6_000,
    )
    .unwrap();
    s.responder.set_certificate(renewed);
    connect(&s, 5_000).unwrap();
}

#[test]
fn every_corrupted_byte_of_act2_is_a_typed_error() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    // A fixed client ephemeral lets us rebuild the same client state for every attempt.
    let secret = [0x5a; 32];
    // Any valid encoding of the secret's public key will do; borrow one from a keypair.
    let ell = *StaticKeypair::from_secret_bytes(secret).unwrap().ellswift();
    let client = || {
        Initiator::with_ephemeral(
            Some(s.authority.public_key()),
            EphemeralKey::from_parts(secret, ell).unwrap(),
        )
        .step_1()
    };
    let (act1, _) = client();
    let (act2, _) = s.responder.step(&act1).unwrap();
    // Sanity: the untouched act 2 is accepted.
    client().1.step_2(&act2, VALID_FROM).unwrap();

    for i in 0..ACT2_LEN {
        for bit in [0x01, 0x80] {
            let mut bad = act2;
            bad[i] ^= bit;
            let err = client().1.step_2(&bad, VALID_FROM).err();
            let expected = if i < 144 {
                // The responder ephemeral (0..64) feeds the key that opens the static key,
                // so flipping it breaks the first MAC like flipping 64..144 does.
                Act2Part::StaticKey
            } else {
                Act2Part::Certificate
            };
            assert_eq!(
                err,
                Some(NoiseError::HandshakeDecrypt(expected)),
                "byte {i} bit {bit:#x}"
            );
        }
    }
}

#[test]
fn wrong_sized_handshake_messages_are_typed_errors() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    let (act1, _) = Initiator::new(s.authority.public_key()).unwrap().step_1();
    for len in [0, 1, ACT1_LEN - 1, ACT1_LEN + 1] {
        let mut msg = act1.to_vec();
        msg.resize(len, 0);
        assert_eq!(
            s.responder.step(&msg).err(),
            Some(NoiseError::HandshakeLength {
                expected: ACT1_LEN,
                actual: len
            })
        );
    }

    let (act2, _) = s.responder.step(&act1).unwrap();
    for len in [0, 64, 144, ACT2_LEN - 1, ACT2_LEN + 1] {
        let (_, initiator) = Initiator::new(s.authority.public_key()).unwrap().step_1();
        let mut msg = act2.to_vec();
        msg.resize(len, 0);
        assert_eq!(
            initiator.step_2(&msg, VALID_FROM).err(),
            Some(NoiseError::HandshakeLength {
                expected: ACT2_LEN,
                actual: len
            })
        );
    }
}

#[test]
fn arbitrary_act1_bytes_do_not_break_the_responder() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    for fill in [0x00, 0xff, 0x5a] {
        let (act2, _) = s.responder.step(&[fill; ACT1_LEN]).unwrap();
        assert_eq!(act2.len(), ACT2_LEN);
    }
}

#[test]
fn act2_meant_for_another_client_fails_authentication() {
    let s = server(VALID_FROM, NOT_VALID_AFTER);
    let (act1_a, _a) = Initiator::new(s.authority.public_key()).unwrap().step_1();
    let (_, b) = Initiator::new(s.authority.public_key()).unwrap().step_1();
    let (act2_for_a, _) = s.responder.step(&act1_a).unwrap();
    assert_eq!(
        b.step_2(&act2_for_a, VALID_FROM).err(),
        Some(NoiseError::HandshakeDecrypt(Act2Part::StaticKey))
    );
}

#[test]
fn ephemeral_from_parts_checks_the_encoding() {
    let a = StaticKeypair::from_secret_bytes([0x21; 32]).unwrap();
    let b = StaticKeypair::from_secret_bytes([0x22; 32]).unwrap();
    EphemeralKey::from_parts([0x21; 32], *a.ellswift()).unwrap();
    assert_eq!(
        EphemeralKey::from_parts([0x21; 32], *b.ellswift()).err(),
        Some(NoiseError::EllswiftMismatch)
    );
    assert_eq!(
        EphemeralKey::from_parts([0; 32], *a.ellswift()).err(),
        Some(NoiseError::InvalidSecretKey)
    );
    assert_eq!(
        StaticKeypair::from_secret_bytes([0xff; 32]).err(),
        Some(NoiseError::InvalidSecretKey)
    );
}

#[test]
fn debug_output_does_not_reveal_secrets() {
    let secret = [0x37; 32];
    let key = StaticKeypair::from_secret_bytes(secret).unwrap();
    let authority = AuthorityKeypair::from_secret_bytes(secret).unwrap();
    let responder = Responder::from_authority(key.clone(), &authority, 0, 1).unwrap();
    let secret_hex = hex::encode(secret);
    for text in [
        format!("{key:?}"),
        format!("{authority:?}"),
        format!("{responder:?}"),
    ] {
        assert!(!text.contains(&secret_hex), "{text}");
        assert!(!text.contains("3737373737"), "{text}");
    }
}
