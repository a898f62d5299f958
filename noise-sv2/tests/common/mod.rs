//! Shared setup for the integration tests.
#![allow(dead_code)]

use sv2c_noise::{
    AuthorityKeypair, Initiator, NoiseDecryptor, NoiseEncryptor, Responder, StaticKeypair,
    Transport,
};

/// Certificate window used by `pair()`.
pub(crate) const VALID_FROM: u32 = 1_000_000;
pub(crate) const NOT_VALID_AFTER: u32 = 2_000_000;

/// A full in-memory handshake with fresh keys: (client transport, server transport).
pub(crate) fn handshake() -> (Transport, Transport) {
    let authority = AuthorityKeypair::generate().unwrap();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        VALID_FROM,
        NOT_VALID_AFTER,
    )
    .unwrap();
    let (act1, initiator) = Initiator::new(authority.public_key()).unwrap().step_1();
    let (act2, server) = responder.step(&act1).unwrap();
    let client = initiator.step_2(&act2, VALID_FROM + 5).unwrap();
    (client, server)
}

/// Both halves of both sides: (client_tx, client_rx, server_tx, server_rx).
pub(crate) fn pair() -> (
    NoiseEncryptor,
    NoiseDecryptor,
    NoiseEncryptor,
    NoiseDecryptor,
) {
    let (client, server) = handshake();
    let (ctx, crx) = client.split();
    let (stx, srx) = server.split();
    (ctx, crx, stx, srx)
}

/// A plaintext frame with a `len`-byte payload of recognisable bytes.
pub(crate) fn frame(msg_type: u8, len: usize) -> Vec<u8> {
    assert!(len < 1 << 24);
    let mut f = Vec::with_capacity(6 + len);
    f.extend_from_slice(&[0x00, 0x80, msg_type]);
    f.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
    f.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(msg_type)));
    f
}

/// Decrypts everything in `wire`, returning the frames; panics on leftovers.
pub(crate) fn decrypt_all(rx: &mut NoiseDecryptor, wire: &[u8]) -> Vec<Vec<u8>> {
    let mut input = wire;
    let mut out = Vec::new();
    while let Some(f) = rx.decrypt(&mut input).unwrap() {
        out.push(f);
    }
    assert!(input.is_empty());
    out
}
