//! Side-by-side benchmarks: this crate vs the reference (`noise_sv2` 2.x handshake,
//! `codec_sv2` 7.x Noise encoder/decoder), in one run.
//!
//! ```text
//! cargo bench -p sv2c-noise --bench noise -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Groups:
//! * `handshake/full` — one complete handshake, both roles, including the initiator's
//!   ephemeral key. `ours` reuses a configured responder (static key + pre-signed
//!   certificate), which is how a server runs; `ours_fresh_responder` also generates the
//!   static key and signs a certificate per handshake, which is what the reference does
//!   (its responder cannot be reused).
//! * `handshake/responder` — the responder's work for one connection (act 1 in, act 2 out).
//! * `handshake/initiator_step_2` — the initiator's work on act 2 (ECDH ×2, certificate
//!   check, split); act 1 and act 2 are prepared outside the timed section.
//! * `transport/{64B,1KiB}` — encrypt one plaintext frame of that total size (header
//!   included) and decrypt it on the other side: `ours` and `reference` return an owned
//!   frame, `ours_in_place` decrypts into a reused buffer (`decrypt_into`).
//! * `aead_seal/{6B,58B,1018B}` — one ChaCha20-Poly1305 seal with `ring` (our backend) and
//!   with the `chacha20poly1305` crate (the reference's backend): the sizes of a header and
//!   of the payloads of the two transport frames.

// `criterion_group!` expands to an undocumented `pub fn`.
#![expect(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use bytes::BytesMut;

use codec_sv2::{Decrypted, Handshake, NoiseDecoder, NoiseEncoder};
use codec_sv2::{TransportDecryptState, TransportEncryptState};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use framing_sv2::framing::SerializedFrame;
use sv2c_noise::{
    AuthorityKeypair, AuthorityPublicKey, Initiator, NoiseDecryptor, NoiseEncryptor, Responder,
    StaticKeypair, unix_time_now,
};

/// Frame sizes of the transport group (6-byte header included).
const FRAME_SIZES: [(&str, usize); 2] = [("64B", 64), ("1KiB", 1024)];

/// Certificate lifetime given to the reference responder.
const CERT_VALIDITY: Duration = Duration::from_secs(3_600);

struct Keys {
    authority: AuthorityKeypair,
    public: [u8; 32],
    secret: [u8; 32],
}

fn keys() -> Keys {
    let authority = AuthorityKeypair::generate().unwrap();
    Keys {
        public: authority.public_key().to_bytes(),
        secret: authority.to_secret_bytes(),
        authority,
    }
}

fn our_responder(k: &Keys) -> Responder {
    let now = unix_time_now();
    Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &k.authority,
        now,
        now + 3_600,
    )
    .unwrap()
}

fn frame(total: usize) -> Vec<u8> {
    let len = total - 6;
    let mut f = vec![0x00, 0x80, 0x1b];
    f.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
    f.extend((0..len).map(|i| i as u8));
    f
}

// ===== handshake =====

fn handshake(c: &mut Criterion) {
    let k = keys();
    let authority = AuthorityPublicKey::from_bytes(k.public).unwrap();
    let responder = our_responder(&k);

    let mut g = c.benchmark_group("handshake/full");
    g.bench_function("ours", |b| {
        b.iter(|| {
            let (act1, initiator) = Initiator::new(authority).unwrap().step_1();
            let (act2, server) = responder.step(&act1).unwrap();
            let client = initiator.step_2(&act2, unix_time_now()).unwrap();
            black_box((client, server))
        })
    });
    g.bench_function("ours_fresh_responder", |b| {
        b.iter(|| {
            let responder = our_responder(&k);
            let (act1, initiator) = Initiator::new(authority).unwrap().step_1();
            let (act2, server) = responder.step(&act1).unwrap();
            let client = initiator.step_2(&act2, unix_time_now()).unwrap();
            black_box((client, server))
        })
    });
    g.bench_function("reference", |b| {
        b.iter(|| {
            let initiator = noise_sv2::Initiator::from_raw_k(k.public).unwrap();
            let (act1, initiator) = Handshake::initiator(initiator).step_0().unwrap();
            let act1: [u8; 64] = act1.payload().try_into().unwrap();
            let responder =
                noise_sv2::Responder::from_authority_kp(&k.public, &k.secret, CERT_VALIDITY)
                    .unwrap();
            let (act2, server) = Handshake::responder(responder).step_1(act1).unwrap();
            let act2: [u8; 234] = act2.payload().try_into().unwrap();
            let client = initiator.step_2(act2).unwrap();
            black_box((client, server))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("handshake/responder");
    g.bench_function("ours", |b| {
        b.iter_batched(
            || Initiator::new(authority).unwrap().step_1().0,
            |act1| black_box(responder.step(&act1).unwrap()),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("reference", |b| {
        b.iter_batched(
            || Initiator::new(authority).unwrap().step_1().0,
            |act1| {
                let responder =
                    noise_sv2::Responder::from_authority_kp(&k.public, &k.secret, CERT_VALIDITY)
                        .unwrap();
                black_box(Handshake::responder(responder).step_1(act1).unwrap())
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("handshake/initiator_step_2");
    g.bench_function("ours", |b| {
        b.iter_batched(
            || {
                let (act1, initiator) = Initiator::new(authority).unwrap().step_1();
                let (act2, _) = responder.step(&act1).unwrap();
                (initiator, act2)
            },
            |(initiator, act2)| black_box(initiator.step_2(&act2, unix_time_now()).unwrap()),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("reference", |b| {
        b.iter_batched(
            || {
                let initiator = noise_sv2::Initiator::from_raw_k(k.public).unwrap();
                let (act1, initiator) = Handshake::initiator(initiator).step_0().unwrap();
                let (act2, _) = responder.step(act1.payload()).unwrap();
                (initiator, act2)
            },
            |(initiator, act2)| black_box(initiator.step_2(act2).unwrap()),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

// ===== transport =====

fn our_transport(k: &Keys) -> (NoiseEncryptor, NoiseDecryptor) {
    let responder = our_responder(k);
    let (act1, initiator) = Initiator::new(k.authority.public_key()).unwrap().step_1();
    let (act2, server) = responder.step(&act1).unwrap();
    let client = initiator.step_2(&act2, unix_time_now()).unwrap();
    (client.split().0, server.split().1)
}

fn reference_transport(k: &Keys) -> (TransportEncryptState, TransportDecryptState) {
    let initiator = noise_sv2::Initiator::from_raw_k(k.public).unwrap();
    let (act1, initiator) = Handshake::initiator(initiator).step_0().unwrap();
    let act1: [u8; 64] = act1.payload().try_into().unwrap();
    let responder =
        noise_sv2::Responder::from_authority_kp(&k.public, &k.secret, CERT_VALIDITY).unwrap();
    let (act2, server) = Handshake::responder(responder).step_1(act1).unwrap();
    let act2: [u8; 234] = act2.payload().try_into().unwrap();
    let client = initiator.step_2(act2).unwrap();
    (client.split().0, server.split().1)
}

fn transport(c: &mut Criterion) {
    let k = keys();
    for (name, size) in FRAME_SIZES {
        let plaintext = frame(size);
        let mut g = c.benchmark_group(format!("transport/{name}"));

        let (mut tx, mut rx) = our_transport(&k);
        let mut wire = BytesMut::with_capacity(sv2c_noise::wire_len(size));
        g.bench_function("ours", |b| {
            b.iter(|| {
                wire.clear();
                tx.encrypt_frame(black_box(&plaintext), &mut wire).unwrap();
                let mut input = &wire[..];
                let frame = rx.decrypt(&mut input).unwrap().unwrap();
                black_box(frame)
            })
        });

        // The same round trip into a reused frame buffer (what `NoiseCodec` does): no
        // allocation per frame.
        let (mut tx, mut rx) = our_transport(&k);
        let mut frame = BytesMut::with_capacity(size);
        g.bench_function("ours_in_place", |b| {
            b.iter(|| {
                wire.clear();
                tx.encrypt_frame(black_box(&plaintext), &mut wire).unwrap();
                let mut input = &wire[..];
                frame.clear();
                let len = rx.decrypt_into(&mut input, &mut frame).unwrap().unwrap();
                black_box(&frame[..len]);
            })
        });

        let (mut tx, rx) = reference_transport(&k);
        let mut rx = Some(rx);
        let mut encoder = NoiseEncoder::new();
        let mut decoder = NoiseDecoder::new();
        // `SerializedFrame` wants a mutable buffer; encoding only reads it, so one copy of
        // the plaintext serves every iteration.
        let mut scratch = plaintext.clone();
        g.bench_function("reference", |b| {
            b.iter(|| {
                let frame = SerializedFrame::from_bytes(black_box(scratch.as_mut_slice())).unwrap();
                let encrypted = encoder.encode_transport(frame, &mut tx).unwrap();
                let wire: &[u8] = encrypted.as_ref();
                // Feed the decoder the way its callers do: fill `writable()`, then poll.
                let mut state = rx.take().unwrap();
                let mut offset = 0;
                let frame = loop {
                    let writable = decoder.writable();
                    let n = writable.len();
                    writable.copy_from_slice(&wire[offset..offset + n]);
                    offset += n;
                    match decoder.next_transport_frame(state).unwrap() {
                        Decrypted::Frame(frame, s) => {
                            rx = Some(s);
                            break frame;
                        }
                        Decrypted::Incomplete(_, s) => state = s,
                    }
                };
                black_box(frame)
            })
        });
        g.finish();
    }
}

// ===== AEAD backends =====

fn aead_backends(c: &mut Criterion) {
    use chacha20poly1305::aead::AeadInPlace;
    use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
    use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

    let key = [7u8; 32];
    let ring_key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &key).unwrap());
    let rc_key = ChaCha20Poly1305::new(&key.into());
    for size in [6usize, 58, 1018] {
        let mut g = c.benchmark_group(format!("aead_seal/{size}B"));
        let mut buf = vec![0x5a; size];
        let mut n = 0u64;
        g.bench_function("ring", |b| {
            b.iter(|| {
                n += 1;
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&n.to_le_bytes());
                let tag = ring_key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::empty(),
                        black_box(&mut buf),
                    )
                    .unwrap();
                black_box(tag)
            })
        });
        g.bench_function("chacha20poly1305", |b| {
            b.iter(|| {
                n += 1;
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&n.to_le_bytes());
                let tag = rc_key
                    .encrypt_in_place_detached(&nonce.into(), &[], black_box(&mut buf))
                    .unwrap();
                black_box(tag)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, handshake, transport, aead_backends);
criterion_main!(benches);
