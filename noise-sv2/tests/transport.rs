//! Transport encryption: sizes, chunking, hostile ciphertext, split input, limits.

mod common;

use bytes::BytesMut;
use common::{decrypt_all, frame, pair};
use proptest::prelude::*;
use sv2c_noise::{
    ENCRYPTED_HEADER_LEN, MAC_LEN, MAX_CHUNK_CIPHERTEXT, MAX_CHUNK_PLAINTEXT, NoiseDecryptor,
    NoiseEncryptor, NoiseError, PayloadTooLarge, payload_ciphertext_len, wire_len,
};

fn seal(tx: &mut NoiseEncryptor, f: &[u8]) -> Vec<u8> {
    let mut wire = BytesMut::new();
    let n = tx.encrypt_frame(f, &mut wire).unwrap();
    assert_eq!(n, wire.len());
    wire.to_vec()
}

#[test]
fn wire_length_formula() {
    assert_eq!(wire_len(0), 22);
    assert_eq!(wire_len(1), 22 + 1 + 16);
    assert_eq!(wire_len(38), 76);
    assert_eq!(wire_len(65_519), 22 + 65_535);
    assert_eq!(wire_len(65_520), 22 + 65_535 + 1 + 16);
    assert_eq!(wire_len(140_009), 140_079);
    assert_eq!(payload_ciphertext_len(0), 0);
    assert_eq!(payload_ciphertext_len(2 * 65_519), 2 * 65_535);
}

#[test]
fn sizes_around_chunk_boundaries_round_trip_both_ways() {
    let (mut ctx, mut crx, mut stx, mut srx) = pair();
    for len in [
        0,
        1,
        2,
        MAX_CHUNK_PLAINTEXT - 1,
        MAX_CHUNK_PLAINTEXT,
        MAX_CHUNK_PLAINTEXT + 1,
        65_535,
        65_536,
        2 * MAX_CHUNK_PLAINTEXT,
        2 * MAX_CHUNK_PLAINTEXT + 1,
        1 << 20,
    ] {
        let f = frame(7, len);
        let wire = seal(&mut ctx, &f);
        assert_eq!(wire.len(), wire_len(len), "len {len}");
        assert_eq!(decrypt_all(&mut srx, &wire), vec![f.clone()], "len {len}");

        let wire = seal(&mut stx, &f);
        assert_eq!(decrypt_all(&mut crx, &wire), vec![f], "len {len}");
    }
}

#[test]
fn chunks_are_laid_out_as_specified() {
    let (mut ctx, _, _, _) = pair();
    let len = 2 * MAX_CHUNK_PLAINTEXT + 100;
    let f = frame(1, len);
    let wire = seal(&mut ctx, &f);
    assert_eq!(
        wire.len(),
        ENCRYPTED_HEADER_LEN + 2 * MAX_CHUNK_CIPHERTEXT + 100 + MAC_LEN
    );
    // Plaintext never shows through (the keystream would have to be zero).
    assert_ne!(
        &wire[ENCRYPTED_HEADER_LEN..ENCRYPTED_HEADER_LEN + 64],
        &f[6..70]
    );
}

#[test]
fn many_frames_in_one_buffer() {
    let (mut ctx, _, _, mut srx) = pair();
    let frames: Vec<_> = (0..50).map(|i| frame(i as u8, i * 37)).collect();
    let mut wire = BytesMut::new();
    for f in &frames {
        ctx.encrypt_frame(f, &mut wire).unwrap();
    }
    assert_eq!(decrypt_all(&mut srx, &wire), frames);
    assert_eq!(ctx.nonce(), srx.nonce());
}

#[test]
fn bytes_mut_and_parts_produce_the_same_stream() {
    let (mut ctx, _, _, mut srx) = pair();
    let a = frame(1, 100);
    let b = frame(2, 70_000);
    let c = frame(3, 5);
    let mut wire = BytesMut::new();
    ctx.encrypt_frame(&a, &mut wire).unwrap();
    let mut bm = BytesMut::new();
    ctx.encrypt_frame(&b, &mut bm).unwrap();
    wire.extend_from_slice(&bm);
    let header: [u8; 6] = c[..6].try_into().unwrap();
    ctx.encrypt_parts(&header, &c[6..], &mut wire).unwrap();
    assert_eq!(decrypt_all(&mut srx, &wire), vec![a, b, c]);
}

#[test]
fn malformed_plaintext_frames_are_refused_without_using_a_nonce() {
    let (mut ctx, _, _, mut srx) = pair();
    let mut out = BytesMut::from(&[0xee][..]);
    for short in [&[][..], &[0, 0, 0, 0, 0][..]] {
        assert_eq!(
            ctx.encrypt_frame(short, &mut out),
            Err(NoiseError::FrameTooShort(short.len()))
        );
    }
    let mut f = frame(1, 10);
    f.pop();
    assert_eq!(
        ctx.encrypt_frame(&f, &mut out),
        Err(NoiseError::FrameLengthMismatch {
            announced: 10,
            actual: 9
        })
    );
    f.extend_from_slice(&[1, 2]);
    assert_eq!(
        ctx.encrypt_frame(&f, &mut out),
        Err(NoiseError::FrameLengthMismatch {
            announced: 10,
            actual: 11
        })
    );
    assert_eq!(out[..], [0xee], "nothing appended");
    assert_eq!(ctx.nonce(), 0);
    // The stream is still in sync.
    let wire = seal(&mut ctx, &frame(1, 10));
    assert_eq!(decrypt_all(&mut srx, &wire), vec![frame(1, 10)]);
}

#[test]
fn corrupted_header_ciphertext_or_tag_is_rejected_and_poisons() {
    // Each attempt needs a fresh receiver at nonce 0.
    for i in 0..ENCRYPTED_HEADER_LEN {
        let (mut tx, mut srx) = deterministic_pair();
        let mut wire = seal(&mut tx, &frame(1, 50));
        wire[i] ^= 0x04;
        let mut input = &wire[..];
        assert_eq!(
            srx.decrypt(&mut input),
            Err(NoiseError::HeaderDecrypt),
            "byte {i}"
        );
        let mut input = &wire[..];
        assert_eq!(srx.decrypt(&mut input), Err(NoiseError::Poisoned));
        assert_eq!(srx.bytes_needed(), 0);
    }
}

#[test]
fn corrupted_chunk_ciphertext_or_tag_names_the_chunk() {
    let len = MAX_CHUNK_PLAINTEXT + 500; // chunk 0 full, chunk 1 has 500 bytes
    let c0 = ENCRYPTED_HEADER_LEN;
    let c1 = c0 + MAX_CHUNK_CIPHERTEXT;
    let cases = [
        (c0, 0),                           // first byte of chunk 0
        (c0 + MAX_CHUNK_PLAINTEXT - 1, 0), // last ciphertext byte of chunk 0
        (c0 + MAX_CHUNK_PLAINTEXT, 0),     // first tag byte of chunk 0
        (c1 - 1, 0),                       // last tag byte of chunk 0
        (c1, 1),                           // first byte of chunk 1
        (c1 + 499, 1),                     // last ciphertext byte of chunk 1
        (c1 + 500, 1),                     // tag of chunk 1
        (c1 + 500 + MAC_LEN - 1, 1),       // last byte on the wire
    ];
    for (pos, index) in cases {
        let (mut ctx, mut srx) = deterministic_pair();
        let mut wire = seal(&mut ctx, &frame(9, len));
        assert_eq!(wire.len(), c1 + 500 + MAC_LEN);
        wire[pos] ^= 0x80;
        let mut input = &wire[..];
        assert_eq!(
            srx.decrypt(&mut input),
            Err(NoiseError::ChunkDecrypt { index }),
            "pos {pos}"
        );
        assert_eq!(srx.decrypt(&mut &wire[..]), Err(NoiseError::Poisoned));
    }
}

#[test]
fn replayed_and_reordered_frames_fail() {
    let (mut ctx, _, _, mut srx) = pair();
    let first = seal(&mut ctx, &frame(1, 20));
    assert_eq!(decrypt_all(&mut srx, &first), vec![frame(1, 20)]);
    // The same ciphertext again: the receiver's nonce has moved on.
    let mut input = first.as_slice();
    assert_eq!(srx.decrypt(&mut input), Err(NoiseError::HeaderDecrypt));

    // Frame b (nonces 2, 3) delivered before frame a (nonces 0, 1).
    let (mut ctx, _, _, mut srx) = pair();
    let _a = seal(&mut ctx, &frame(1, 20));
    let b = seal(&mut ctx, &frame(2, 20));
    let mut input = b.as_slice();
    assert_eq!(srx.decrypt(&mut input), Err(NoiseError::HeaderDecrypt));
}

#[test]
fn truncated_input_waits_and_never_yields_a_wrong_frame() {
    for len in [0, 1, 100, MAX_CHUNK_PLAINTEXT + 1] {
        let (mut ctx, _, _, mut srx) = pair();
        let f = frame(3, len);
        let wire = seal(&mut ctx, &f);
        let mut input = &wire[..wire.len() - 1];
        assert_eq!(srx.decrypt(&mut input), Ok(None), "len {len}");
        assert!(input.is_empty());
        assert!(srx.is_mid_frame());
        assert_eq!(srx.bytes_needed(), 1);
        assert_eq!(
            srx.finish(),
            Err(NoiseError::Truncated {
                buffered: wire.len() - 1
            })
        );
        // The last byte completes it.
        let mut input = &wire[wire.len() - 1..];
        assert_eq!(srx.decrypt(&mut input), Ok(Some(f)));
        assert_eq!(srx.finish(), Ok(()));
    }
}

#[test]
fn every_split_point_decodes_identically() {
    // Two frames back to back, cut into two pushes at every offset.
    // Every receiver starts from the same keys and nonce 0.
    let frames = vec![frame(1, 0), frame(2, 200)];
    let (mut tx, _) = deterministic_pair();
    let mut wire = BytesMut::new();
    for f in &frames {
        tx.encrypt_frame(f, &mut wire).unwrap();
    }
    for cut in 0..=wire.len() {
        let (_, mut rx) = deterministic_pair();
        let mut got = Vec::new();
        for part in [&wire[..cut], &wire[cut..]] {
            let mut input = part;
            while let Some(f) = rx.decrypt(&mut input).unwrap() {
                got.push(f);
            }
            assert!(input.is_empty());
        }
        assert_eq!(got, frames, "cut at {cut}");
        assert_eq!(rx.finish(), Ok(()));
    }
}

#[test]
fn split_points_around_chunk_edges_of_a_multi_chunk_frame() {
    let f = frame(5, 2 * MAX_CHUNK_PLAINTEXT + 10);
    let (mut tx, _) = deterministic_pair();
    let mut wire = BytesMut::new();
    tx.encrypt_frame(&f, &mut wire).unwrap();
    let c1 = ENCRYPTED_HEADER_LEN + MAX_CHUNK_CIPHERTEXT;
    let c2 = c1 + MAX_CHUNK_CIPHERTEXT;
    let mut cuts = vec![0, 1, 21, 22, 23];
    for edge in [c1 - MAC_LEN, c1, c2 - MAC_LEN, c2, wire.len()] {
        cuts.extend(edge.saturating_sub(2)..=(edge + 2).min(wire.len()));
    }
    cuts.extend((0..wire.len()).step_by(9_973));
    for cut in cuts {
        let (_, mut rx) = deterministic_pair();
        let mut a = &wire[..cut];
        let first = rx.decrypt(&mut a).unwrap();
        let mut b = &wire[cut..];
        let second = rx.decrypt(&mut b).unwrap();
        let got = first.or(second);
        assert_eq!(got.as_ref(), Some(&f), "cut at {cut}");
    }
}

#[test]
fn one_byte_at_a_time() {
    let (mut tx, _) = deterministic_pair();
    let frames = [frame(1, 3), frame(2, 0), frame(3, 1000)];
    let mut wire = BytesMut::new();
    for f in &frames {
        tx.encrypt_frame(f, &mut wire).unwrap();
    }
    let (_, mut rx) = deterministic_pair();
    let mut got = Vec::new();
    for b in wire.chunks(1) {
        let mut input = b;
        if let Some(f) = rx.decrypt(&mut input).unwrap() {
            got.push(f);
        }
    }
    assert_eq!(got, frames);
}

#[test]
fn oversize_frames_are_refused_right_after_the_header() {
    let (mut ctx, _, _, srx) = pair();
    let mut srx = srx.with_max_payload_len(100);
    assert_eq!(srx.max_payload_len(), 100);
    let ok = seal(&mut ctx, &frame(1, 100));
    assert_eq!(decrypt_all(&mut srx, &ok), vec![frame(1, 100)]);

    let big = seal(&mut ctx, &frame(1, 101));
    // Only the encrypted header is given: the error comes before any payload.
    let mut input = &big[..ENCRYPTED_HEADER_LEN];
    assert_eq!(
        srx.decrypt(&mut input),
        Err(NoiseError::PayloadTooLarge(PayloadTooLarge {
            len: 101,
            max: 100
        }))
    );
    assert_eq!(srx.decrypt(&mut &big[..]), Err(NoiseError::Poisoned));
}

#[test]
fn default_limit_is_the_u24_maximum() {
    let (_, _, _, srx) = pair();
    assert_eq!(srx.max_payload_len(), (1 << 24) - 1);
}

#[test]
fn a_huge_announced_frame_does_not_allocate_up_front() {
    // 16 MiB announced, 1 byte of payload sent, then the stream stops.
    let (mut ctx, _, _, mut srx) = pair();
    let big = frame(1, (1 << 24) - 1);
    let wire = seal(&mut ctx, &big);
    let mut input = &wire[..ENCRYPTED_HEADER_LEN + 1];
    assert_eq!(srx.decrypt(&mut input), Ok(None));
    assert_eq!(srx.bytes_needed(), wire.len() - ENCRYPTED_HEADER_LEN - 1);
    assert_eq!(
        srx.finish(),
        Err(NoiseError::Truncated {
            buffered: ENCRYPTED_HEADER_LEN + 1
        })
    );
}

/// Transport keys from a fixed handshake, so several receivers can start from the same
/// state: (initiator sending half, responder receiving half).
fn deterministic_pair() -> (NoiseEncryptor, NoiseDecryptor) {
    use std::sync::OnceLock;
    use sv2c_noise::{
        AuthorityKeypair, Certificate, EphemeralKey, Initiator, Responder, StaticKeypair,
    };
    // ElligatorSwift encodings are randomised; pick one per secret for the whole run.
    fn encoding(secret: u8) -> [u8; 64] {
        *StaticKeypair::from_secret_bytes([secret; 32])
            .unwrap()
            .ellswift()
    }
    static ENCODINGS: OnceLock<[[u8; 64]; 3]> = OnceLock::new();
    let [ie, re, rs] = *ENCODINGS.get_or_init(|| [encoding(0x11), encoding(0x22), encoding(0x33)]);

    let authority = AuthorityKeypair::from_secret_bytes([0x44; 32]).unwrap();
    let key = StaticKeypair::from_parts([0x33; 32], rs).unwrap();
    let cert = Certificate::sign_with_aux_rand(
        &authority,
        &key.x_only_public_key(),
        0,
        u32::MAX,
        &[0; 32],
    );
    let responder = Responder::new(key, cert);
    let (act1, init) = Initiator::with_ephemeral(
        Some(authority.public_key()),
        EphemeralKey::from_parts([0x11; 32], ie).unwrap(),
    )
    .step_1();
    let (act2, server) = responder
        .step_with_ephemeral(&act1, EphemeralKey::from_parts([0x22; 32], re).unwrap())
        .unwrap();
    let client = init.step_2(&act2, 1).unwrap();
    (client.split().0, server.split().1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_frames_round_trip_with_random_splits(
        lens in prop::collection::vec(
            prop_oneof![
                6 => 0usize..300,
                3 => 300usize..70_000,
                1 => 70_000usize..200_000,
            ],
            1..5,
        ),
        seed in any::<u64>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let (mut tx, mut rx) = deterministic_pair();
        let frames: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let mut f = frame(i as u8, len);
                // Vary payload bytes with the seed.
                for (j, b) in f.iter_mut().enumerate().skip(6) {
                    *b ^= (seed >> (j % 57)) as u8;
                }
                f
            })
            .collect();
        let mut wire = BytesMut::new();
        for f in &frames {
            tx.encrypt_frame(f, &mut wire).unwrap();
        }
        prop_assert_eq!(wire.len(), lens.iter().map(|&l| wire_len(l)).sum::<usize>());
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        points.push(0);
        points.push(wire.len());
        points.sort_unstable();
        let mut got = Vec::new();
        for w in points.windows(2) {
            let mut input = &wire[w[0]..w[1]];
            while let Some(f) = rx.decrypt(&mut input).unwrap() {
                got.push(f);
            }
            prop_assert!(input.is_empty());
        }
        prop_assert_eq!(got, frames);
        prop_assert_eq!(rx.finish(), Ok(()));
    }

    #[test]
    fn random_garbage_never_panics_and_never_yields_a_frame(
        garbage in prop::collection::vec(any::<u8>(), 0..2_000),
    ) {
        let (_, mut rx) = deterministic_pair();
        let mut input = garbage.as_slice();
        match rx.decrypt(&mut input) {
            Ok(None) => prop_assert!(garbage.len() < ENCRYPTED_HEADER_LEN),
            Ok(Some(_)) => prop_assert!(false, "forged frame accepted"),
            Err(e) => prop_assert_eq!(e, NoiseError::HeaderDecrypt),
        }
    }
}
