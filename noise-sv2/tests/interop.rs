//! Interoperability with the reference implementation (SRI's `noise_sv2` 2.x handshake and
//! `codec_sv2` 7.x Noise encoder/decoder), in both roles and both directions.

mod common;

use bytes::BytesMut;
use std::time::Duration;

use codec_sv2::{Decrypted, Handshake, NoiseDecoder, NoiseEncoder};
use codec_sv2::{TransportDecryptState, TransportEncryptState};
use framing_sv2::framing::SerializedFrame;
use sv2c_noise::{
    AuthorityKeypair, AuthorityPublicKey, Initiator, NoiseDecryptor, NoiseEncryptor, NoiseError,
    Responder, StaticKeypair, unix_time_now, wire_len,
};

/// Payload sizes required by the issue: 1 B, 64 KiB − 1, 64 KiB, 1 MiB.
const SIZES: [usize; 4] = [1, 65_535, 65_536, 1 << 20];

fn frame(msg_type: u8, len: usize) -> Vec<u8> {
    common::frame(msg_type, len)
}

/// The reference side of a connection.
struct Reference {
    encoder: NoiseEncoder,
    tx: TransportEncryptState,
    decoder: NoiseDecoder,
    rx: Option<TransportDecryptState>,
}

impl Reference {
    fn new(tx: TransportEncryptState, rx: TransportDecryptState) -> Self {
        Self {
            encoder: NoiseEncoder::new(),
            tx,
            decoder: NoiseDecoder::new(),
            rx: Some(rx),
        }
    }

    fn encrypt(&mut self, plaintext: &[u8]) -> Vec<u8> {
        let frame = SerializedFrame::from_bytes(plaintext.to_vec()).unwrap();
        let wire = self.encoder.encode_transport(frame, &mut self.tx).unwrap();
        AsRef::<[u8]>::as_ref(&wire).to_vec()
    }

    /// Feeds `wire` through the reference decoder the way its own callers do (fill
    /// `writable()`, call `next_transport_frame`) and returns the one frame it holds.
    fn decrypt(&mut self, wire: &[u8]) -> Vec<u8> {
        let mut state = self.rx.take().unwrap();
        let mut offset = 0;
        loop {
            let writable = self.decoder.writable();
            let n = writable.len();
            writable.copy_from_slice(&wire[offset..offset + n]);
            offset += n;
            match self.decoder.next_transport_frame(state) {
                Ok(Decrypted::Frame(frame, s)) => {
                    assert_eq!(offset, wire.len(), "reference left bytes over");
                    self.rx = Some(s);
                    return frame.as_bytes().to_vec();
                }
                Ok(Decrypted::Incomplete(_, s)) => state = s,
                Err(e) => panic!("reference decoder failed: {e:?}"),
            }
        }
    }
}

struct Ours {
    tx: NoiseEncryptor,
    rx: NoiseDecryptor,
}

impl Ours {
    fn encrypt(&mut self, plaintext: &[u8]) -> Vec<u8> {
        let mut wire = BytesMut::new();
        self.tx.encrypt_frame(plaintext, &mut wire).unwrap();
        wire.to_vec()
    }

    fn decrypt(&mut self, wire: &[u8]) -> Vec<u8> {
        let mut input = wire;
        let frame = self
            .rx
            .decrypt(&mut input)
            .unwrap()
            .expect("complete frame");
        assert!(input.is_empty());
        frame
    }
}

/// Both directions, every size, on one connection (so nonces advance across frames).
fn exchange(ours: &mut Ours, theirs: &mut Reference) {
    for (i, &len) in SIZES.iter().enumerate() {
        let up = frame(i as u8, len);
        let wire = ours.encrypt(&up);
        assert_eq!(wire.len(), wire_len(len));
        assert_eq!(theirs.decrypt(&wire), up, "ours -> reference, {len} B");

        let down = frame(0x80 | i as u8, len);
        let wire = theirs.encrypt(&down);
        assert_eq!(wire.len(), wire_len(len), "reference wire length, {len} B");
        assert_eq!(ours.decrypt(&wire), down, "reference -> ours, {len} B");
    }
}

fn authority() -> ([u8; 32], [u8; 32], AuthorityKeypair) {
    let kp = AuthorityKeypair::generate().unwrap();
    (kp.public_key().to_bytes(), kp.to_secret_bytes(), kp)
}

#[test]
fn our_initiator_with_reference_responder() {
    let (public, secret, _) = authority();
    let responder =
        noise_sv2::Responder::from_authority_kp(&public, &secret, Duration::from_secs(3_600))
            .unwrap();
    let (act1, initiator) = Initiator::new(AuthorityPublicKey::from_bytes(public).unwrap())
        .unwrap()
        .step_1();
    let (act2, their_transport) = Handshake::responder(responder).step_1(act1).unwrap();
    assert_eq!(act2.payload().len(), 234);
    let transport = initiator.step_2(act2.payload(), unix_time_now()).unwrap();
    let cert = transport.server_certificate().unwrap();
    assert_eq!(cert.version(), 0);
    assert!(cert.valid_from() <= unix_time_now() + 10);

    let (tx, rx) = transport.split();
    let (their_tx, their_rx) = their_transport.split();
    exchange(
        &mut Ours { tx, rx },
        &mut Reference::new(their_tx, their_rx),
    );
}

#[test]
fn reference_initiator_with_our_responder() {
    let (public, _, authority) = authority();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now,
        now + 3_600,
    )
    .unwrap();
    let initiator = noise_sv2::Initiator::from_raw_k(public).unwrap();
    let (act1, initiator) = Handshake::initiator(initiator).step_0().unwrap();
    let (act2, transport) = responder.step(act1.payload()).unwrap();
    let their_transport = initiator.step_2(act2).unwrap();

    let (tx, rx) = transport.split();
    let (their_tx, their_rx) = their_transport.split();
    exchange(
        &mut Ours { tx, rx },
        &mut Reference::new(their_tx, their_rx),
    );
}

#[test]
fn reference_initiator_rejects_our_certificate_from_another_authority() {
    let (public, _, _) = authority();
    let (_, _, other) = authority();
    let now = unix_time_now();
    let responder =
        Responder::from_authority(StaticKeypair::generate().unwrap(), &other, now, now + 3_600)
            .unwrap();
    let (act1, initiator) = Handshake::initiator(noise_sv2::Initiator::from_raw_k(public).unwrap())
        .step_0()
        .unwrap();
    let (act2, _) = responder.step(act1.payload()).unwrap();
    assert!(initiator.step_2(act2).is_err());
}

#[test]
fn reference_initiator_rejects_our_expired_certificate() {
    let (public, _, authority) = authority();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 7_200,
        now - 3_600,
    )
    .unwrap();
    let (act1, initiator) = Handshake::initiator(noise_sv2::Initiator::from_raw_k(public).unwrap())
        .step_0()
        .unwrap();
    let (act2, _) = responder.step(act1.payload()).unwrap();
    assert!(initiator.step_2(act2).is_err());
}

#[test]
fn our_initiator_rejects_reference_certificate_from_another_authority() {
    let (public, secret, _) = authority();
    let (_, _, other) = authority();
    let responder =
        noise_sv2::Responder::from_authority_kp(&public, &secret, Duration::from_secs(3_600))
            .unwrap();
    let (act1, initiator) = Initiator::new(other.public_key()).unwrap().step_1();
    let (act2, _) = Handshake::responder(responder).step_1(act1).unwrap();
    assert_eq!(
        initiator.step_2(act2.payload(), unix_time_now()).err(),
        Some(NoiseError::CertificateSignature)
    );
}

#[test]
fn our_decryptor_rejects_a_replayed_reference_frame() {
    let (public, secret, _) = authority();
    let responder =
        noise_sv2::Responder::from_authority_kp(&public, &secret, Duration::from_secs(3_600))
            .unwrap();
    let (act1, initiator) = Initiator::new(AuthorityPublicKey::from_bytes(public).unwrap())
        .unwrap()
        .step_1();
    let (act2, their_transport) = Handshake::responder(responder).step_1(act1).unwrap();
    let (_, mut rx) = initiator
        .step_2(act2.payload(), unix_time_now())
        .unwrap()
        .split();
    let (their_tx, their_rx) = their_transport.split();
    let mut theirs = Reference::new(their_tx, their_rx);
    let wire = theirs.encrypt(&frame(1, 10));
    let mut input = &wire[..];
    assert_eq!(rx.decrypt(&mut input).unwrap(), Some(frame(1, 10)));
    let mut input = &wire[..];
    assert_eq!(rx.decrypt(&mut input), Err(NoiseError::HeaderDecrypt));
}
