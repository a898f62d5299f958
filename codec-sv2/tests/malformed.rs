//! The codec-level malformed-input matrix, run against every decoder: the sans-io
//! [`FrameDecoder`] (through `decode_from` and through `read_buf`/`advance`),
//! [`FrameCodec`] and [`Sv2Codec`].
//!
//! | family | input | expected |
//! |---|---|---|
//! | hostile length | a 16 MiB `msg_length` followed by 6 bytes (and by more, in dribbles) | waiting (`Ok(None)`), memory in proportion to the bytes received; at end of stream `TruncatedFrame` |
//! | oversize | a header announcing more than the configured cap (many caps, many lengths) | `FrameTooLarge` as soon as the header is complete, before any payload byte is buffered or allocated; fatal |
//! | at the cap | a header announcing exactly the cap | accepted |
//! | unknown messages | every `(extension_type, msg_type)` the catalog lacks, then a known frame | `Sv2Codec<Message>` skips it silently (counted, spec §2.4) and yields the next frame; `Sv2Codec<MessageOrRaw<Message>>` yields it raw |
//! | undecodable payloads | a known message cut short inside a complete frame, then a known frame | `Decode` (recoverable), and the next frame decodes |
//! | garbage streams | proptest: random bytes, and random frame sequences with corrupted lengths, in random chunks | only typed errors, never a panic, all decoders agree (the `frame_stream` fuzz check) |
//!
//! A tracking global allocator measures the peak of live heap bytes during each decode.

mod fuzz_checks;

use bytes::BytesMut;
use fuzz_checks::alloc::{assert_tracking, peak_during};
use fuzz_checks::frame_stream;
use proptest::prelude::*;
use sv2c_binary::messages::{
    CATALOG, Message, MessageOrRaw, MiningMessage, SetupConnectionSuccess, SubmitSharesStandard,
    encode_frame, lookup,
};
use sv2c_binary::{CHANNEL_BIT, DecodeErrorKind, Encode};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{CodecError, Frame, FrameCodec, FrameDecoder, MAX_PAYLOAD_LEN, Sv2Codec};
use tokio_util::codec::{Decoder, Encoder};

#[global_allocator]
static GLOBAL: fuzz_checks::alloc::Tracking = fuzz_checks::alloc::Tracking;

/// The most a decoder may hold beyond the bytes it received while waiting for a frame:
/// the tokio codecs reserve as much again, at least 1 KiB (`read_room`), the sans-io
/// decoder grows a large frame's buffer by at least 16 KiB.
const READ_AHEAD: usize = 16 * 1024 + 1024;

/// A header announcing `len` payload bytes of `SetupConnection.Success` (0x01).
fn header(len: usize) -> [u8; 6] {
    let [l0, l1, l2, _] = (len as u32).to_le_bytes();
    [0x00, 0x00, 0x01, l0, l1, l2]
}

fn known_frame() -> Vec<u8> {
    encode_frame(&SetupConnectionSuccess {
        used_version: 2,
        flags: 7,
    })
    .unwrap()
}

fn small_pool() -> BufferPool {
    BufferPool::new(2, 1024).unwrap()
}

// ===== hostile length =====

#[test]
fn a_16_mib_header_with_a_6_byte_body_waits_with_little_memory() {
    assert_tracking();
    let hostile: Vec<u8> = header(MAX_PAYLOAD_LEN).into_iter().chain(1..=6).collect();

    // Sans-io, from a slice.
    let mut dec = FrameDecoder::new(small_pool());
    let (r, peak_from) = peak_during(|| dec.decode_from(&mut &hostile[..]));
    assert!(r.unwrap().is_none());
    assert_eq!((dec.buffered(), dec.is_idle()), (12, false));

    // Sans-io, as a socket reader drives it.
    let mut dec = FrameDecoder::new(small_pool());
    let (r, peak_read) = peak_during(|| {
        let mut input = &hostile[..];
        let mut got = None;
        while !input.is_empty() {
            let buf = dec.read_buf();
            let n = buf.len().min(input.len());
            buf[..n].copy_from_slice(&input[..n]);
            input = &input[n..];
            got = dec.advance(n).unwrap();
        }
        got
    });
    assert!(r.is_none());
    assert_eq!(dec.buffered(), 12);

    // tokio codecs: waiting, then a truncated frame at end of stream.
    let mut frames = FrameCodec::new(small_pool());
    let mut src = BytesMut::from(&hostile[..]);
    let (r, peak_frame_codec) = peak_during(|| frames.decode(&mut src));
    assert!(r.unwrap().is_none());
    match frames.decode_eof(&mut src) {
        Err(CodecError::TruncatedFrame { buffered: 12 }) => {}
        other => panic!("FrameCodec at EOF: {other:?}"),
    }
    let mut owned = Sv2Codec::<Message>::new();
    let mut src = BytesMut::from(&hostile[..]);
    let (r, peak_sv2_codec) = peak_during(|| owned.decode(&mut src));
    assert!(r.unwrap().is_none());
    match owned.decode_eof(&mut src) {
        Err(e @ CodecError::TruncatedFrame { buffered: 12 }) => assert!(!e.is_recoverable()),
        other => panic!("Sv2Codec at EOF: {other:?}"),
    }

    // A slot-sized frame while every slot is taken: the sans-io decoder's pool buffer
    // falls back to the heap at the announced length, which a slot bounds.
    let slot = BufferPool::DEFAULT_SLOT_SIZE;
    let exhausted: Vec<u8> = header(slot).into_iter().chain(1..=6).collect();
    let mut dec = FrameDecoder::new(BufferPool::new(0, slot).unwrap());
    let (r, peak_exhausted) = peak_during(|| dec.decode_from(&mut &exhausted[..]));
    assert!(r.unwrap().is_none());

    eprintln!(
        "16 MiB header + 6 bytes, peak bytes: decode_from {peak_from}, read_buf {peak_read}, \
         FrameCodec {peak_frame_codec}, Sv2Codec {peak_sv2_codec}; \
         {slot}-byte header + 6 bytes with the pool exhausted: {peak_exhausted}"
    );
    for peak in [peak_from, peak_read, peak_frame_codec, peak_sv2_codec] {
        assert!(
            peak <= hostile.len() + READ_AHEAD,
            "peak {peak} for 12 bytes"
        );
    }
    assert!(
        peak_exhausted <= hostile.len() + slot,
        "peak {peak_exhausted}"
    );
}

#[test]
fn a_16_mib_header_fed_slowly_costs_memory_in_proportion() {
    assert_tracking();
    let mut received = 6usize;
    let mut dec = FrameDecoder::new(small_pool());
    let mut frames = FrameCodec::new(small_pool());
    let mut owned = Sv2Codec::<Message>::new();
    let (mut src_a, mut src_b) = (BytesMut::new(), BytesMut::new());
    let h = header(MAX_PAYLOAD_LEN);
    assert!(dec.decode_from(&mut &h[..]).unwrap().is_none());
    src_a.extend_from_slice(&h);
    src_b.extend_from_slice(&h);
    let chunk = [0xabu8; 3000];
    for round in 0..100 {
        let (_, peak) = peak_during(|| {
            assert!(dec.decode_from(&mut &chunk[..]).unwrap().is_none());
            src_a.extend_from_slice(&chunk);
            assert!(frames.decode(&mut src_a).unwrap().is_none());
            src_b.extend_from_slice(&chunk);
            assert!(owned.decode(&mut src_b).unwrap().is_none());
        });
        received += chunk.len();
        // Three decoders hold `received` each, with buffers that at most double.
        assert!(
            peak <= 3 * (2 * received + READ_AHEAD),
            "round {round}: peak {peak} for {received} bytes received"
        );
    }
    assert_eq!(dec.buffered(), received);
}

// ===== oversize =====

/// Caps and the lengths above them that every decoder must refuse.
fn oversize_cases() -> Vec<(usize, usize)> {
    let caps = [
        0,
        1,
        5,
        6,
        100,
        1023,
        1024,
        1025,
        65_535,
        65_600,
        1 << 20,
        MAX_PAYLOAD_LEN - 1,
    ];
    let mut cases = Vec::new();
    for cap in caps {
        for len in [cap + 1, cap + 2, cap + 1000, 2 * cap + 1, MAX_PAYLOAD_LEN] {
            if len > cap && len <= MAX_PAYLOAD_LEN {
                cases.push((cap, len));
            }
        }
    }
    cases
}

fn assert_too_large(
    what: &str,
    r: Result<impl std::fmt::Debug, CodecError>,
    len: usize,
    max: usize,
) {
    match r {
        Err(e) => {
            let exact =
                matches!(e, CodecError::FrameTooLarge { len: l, max: m } if (l, m) == (len, max));
            assert!(
                exact,
                "{what}: expected FrameTooLarge {{ {len}, {max} }}, got {e:?}"
            );
            assert!(!e.is_recoverable(), "{what}: FrameTooLarge must be fatal");
        }
        Ok(v) => panic!("{what}: expected FrameTooLarge {{ {len}, {max} }}, got Ok({v:?})"),
    }
}

#[test]
fn oversize_frames_are_refused_before_any_payload_is_buffered() {
    assert_tracking();
    let cases = oversize_cases();
    for &(cap, len) in &cases {
        let h = header(len);
        let what = format!("cap {cap}, msg_length {len}");

        // Sans-io: refused as the header completes; nothing allocated; stays failed.
        let mut dec = FrameDecoder::new(small_pool()).max_payload(cap);
        let (r, peak) = peak_during(|| dec.decode_from(&mut &h[..]));
        assert_too_large(&what, r, len, cap);
        assert_eq!(peak, 0, "{what}: sans-io allocated {peak} bytes");
        assert!(dec.read_buf().is_empty(), "{what}");
        assert_too_large(&what, dec.decode_from(&mut &known_frame()[..]), len, cap);

        // Sans-io, header written byte by byte through read_buf.
        let mut dec = FrameDecoder::new(small_pool()).max_payload(cap);
        for (i, b) in h.iter().enumerate() {
            dec.read_buf()[0] = *b;
            let r = dec.advance(1);
            if i < 5 {
                assert!(r.unwrap().is_none());
            } else {
                assert_too_large(&what, r, len, cap);
            }
        }
        assert_too_large(&what, dec.advance(0), len, cap);

        // tokio codecs: refused on the header alone, the buffer not grown for the payload.
        let mut frames = FrameCodec::new(small_pool()).max_payload(cap);
        let mut src = BytesMut::from(&h[..]);
        let (r, peak) = peak_during(|| frames.decode(&mut src));
        assert_too_large(&what, r, len, cap);
        assert_eq!(peak, 0, "{what}: FrameCodec allocated {peak} bytes");
        let mut owned = Sv2Codec::<Message>::new().max_payload(cap);
        let mut src = BytesMut::from(&h[..]);
        let (r, peak) = peak_during(|| owned.decode(&mut src));
        assert_too_large(&what, r, len, cap);
        assert_eq!(peak, 0, "{what}: Sv2Codec allocated {peak} bytes");
    }
    eprintln!("oversize: {} (cap, length) pairs x 4 decoders", cases.len());
    assert!(cases.len() >= 50);
}

#[test]
fn a_frame_at_the_cap_is_accepted_and_caps_are_clamped_to_the_protocol_limit() {
    for cap in [0usize, 1, 24, 1024, 5000] {
        let payload = vec![0x11u8; cap];
        let mut wire = header(cap).to_vec();
        wire.extend_from_slice(&payload);
        let mut dec = FrameDecoder::new(small_pool()).max_payload(cap);
        let frame = dec.decode_from(&mut &wire[..]).unwrap().expect("a frame");
        assert_eq!(frame.payload(), &payload[..]);
        let mut frames = FrameCodec::new(small_pool()).max_payload(cap);
        let frame = frames
            .decode(&mut BytesMut::from(&wire[..]))
            .unwrap()
            .expect("a frame");
        assert_eq!(frame.payload(), &payload[..]);
        // Sv2Codec: the frame passes the cap; the payload is then judged as a message.
        let mut owned = Sv2Codec::<Message>::new().max_payload(cap);
        let r = owned.decode(&mut BytesMut::from(&wire[..]));
        assert!(
            !matches!(r, Err(CodecError::FrameTooLarge { .. })),
            "cap {cap}: {r:?}"
        );
    }
    // A cap above the U24 maximum means the U24 maximum.
    let h = header(MAX_PAYLOAD_LEN);
    let mut dec = FrameDecoder::new(small_pool()).max_payload(usize::MAX);
    assert!(dec.decode_from(&mut &h[..]).unwrap().is_none());
    let mut owned = Sv2Codec::<Message>::new().max_payload(usize::MAX);
    assert!(owned.decode(&mut BytesMut::from(&h[..])).unwrap().is_none());
}

#[test]
fn encoders_refuse_payloads_above_the_cap() {
    let share = SubmitSharesStandard {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 4,
        ntime: 5,
        version: 6,
    };
    let len = share.encoded_len();
    for cap in [0, 1, len - 1] {
        let mut dst = BytesMut::new();
        let r = Sv2Codec::<Message>::new()
            .max_payload(cap)
            .encode(&share, &mut dst);
        assert_too_large(&format!("Sv2Codec encode, cap {cap}"), r, len, cap);
        assert!(dst.is_empty(), "nothing written");
        let frame = Frame::from_message(&share, &small_pool()).unwrap();
        let r = FrameCodec::new(small_pool())
            .max_payload(cap)
            .encode(frame, &mut dst);
        assert_too_large(&format!("FrameCodec encode, cap {cap}"), r, len, cap);
        assert!(dst.is_empty(), "nothing written");
    }
    let mut dst = BytesMut::new();
    Sv2Codec::<Message>::new()
        .max_payload(len)
        .encode(&share, &mut dst)
        .unwrap();
    assert_eq!(dst.len(), 6 + len);
}

// ===== unknown and undecodable messages =====

/// Decodes `stream` with `Sv2Codec<M>`: the unknown first frame is skipped silently (spec
/// §2.4, counted), and the first result is the known frame's message.
fn skipped_then_next<M: sv2c_binary::MessageSet + std::fmt::Debug>(what: &str, stream: &[u8]) -> M {
    let mut codec = Sv2Codec::<M>::for_set();
    let mut src = BytesMut::from(stream);
    let next = codec
        .decode(&mut src)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(src.is_empty(), "{what}: both frames consumed");
    assert_eq!(codec.skipped_frames(), 1, "{what}: one frame skipped");
    next.unwrap_or_else(|| panic!("{what}: the next frame did not decode"))
}

/// Decodes `stream` with `Sv2Codec<M>`: the first result must be a recoverable error
/// accepted by `is_expected`, the second the known frame's message.
fn error_then_next<M: sv2c_binary::MessageSet + std::fmt::Debug>(
    what: &str,
    stream: &[u8],
    is_expected: impl Fn(&CodecError) -> bool,
) -> M {
    let mut codec = Sv2Codec::<M>::for_set();
    let mut src = BytesMut::from(stream);
    let (r, peak) = peak_during(|| codec.decode(&mut src));
    match r {
        Err(e) if is_expected(&e) => assert!(e.is_recoverable(), "{what}: {e} not recoverable"),
        other => panic!("{what}: got {other:?}"),
    }
    assert_eq!(peak, 0, "{what}: refusing the frame allocated {peak} bytes");
    let next = codec
        .decode(&mut src)
        .unwrap_or_else(|e| panic!("{what}: next frame: {e}"));
    assert!(src.is_empty());
    next.unwrap_or_else(|| panic!("{what}: the next frame did not decode"))
}

#[test]
fn unknown_messages_are_recoverable_and_the_next_frame_decodes() {
    let known = known_frame();
    let mut cases = 0usize;
    for base in [0x0000u16, 0x0001, 0x0002, 0x00ff, 0x4000, 0x7fff] {
        for ext in [base, base | CHANNEL_BIT] {
            for mt in 0..=255u8 {
                if lookup(ext, mt).is_some() {
                    continue;
                }
                let payload = [7u8, 0, 0, 0, 0xaa, 0xbb];
                let mut stream = vec![0u8; 6];
                stream[..2].copy_from_slice(&ext.to_le_bytes());
                stream[2] = mt;
                stream[3] = payload.len() as u8;
                stream.extend_from_slice(&payload);
                stream.extend_from_slice(&known);
                let what = format!("{ext:#06x}/{mt:#04x}");
                let next: Message = skipped_then_next(&what, &stream);
                // As a proxy's item, the unknown frame comes out raw and intact.
                let mut raw_codec = Sv2Codec::<MessageOrRaw<Message>>::for_set();
                let mut src = BytesMut::from(&stream[..]);
                match raw_codec.decode(&mut src) {
                    Ok(Some(MessageOrRaw::Raw(r))) => {
                        assert_eq!((r.extension_type, r.msg_type), (ext, mt), "{what}");
                        assert_eq!(r.payload.as_slice(), payload, "{what}");
                    }
                    other => panic!("{what}: got {other:?}"),
                }
                assert!(matches!(
                    raw_codec.decode(&mut src),
                    Ok(Some(MessageOrRaw::Known(_)))
                ));
                assert_eq!(
                    next,
                    Message::SetupConnectionSuccess(SetupConnectionSuccess {
                        used_version: 2,
                        flags: 7
                    })
                );

                // FrameCodec forwards it as a frame; decoding it says unknown.
                let mut frames = FrameCodec::new(small_pool());
                let mut src = BytesMut::from(&stream[..]);
                let frame = frames.decode(&mut src).unwrap().expect("a frame");
                assert_eq!(frame.payload(), payload);
                assert!(matches!(
                    frame.decode::<Message>(),
                    Err(CodecError::UnknownMessage { .. })
                ));
                assert_eq!(frame.channel_id(), (ext & CHANNEL_BIT != 0).then_some(7));
                assert!(frames.decode(&mut src).unwrap().is_some());
                cases += 1;
            }
        }
    }
    // A message of another protocol is unknown to a protocol-specific codec.
    for info in CATALOG
        .iter()
        .filter(|i| i.protocol != sv2c_binary::messages::MessageProtocol::Mining)
    {
        let mut stream = vec![0u8; 6];
        stream[..2].copy_from_slice(&info.wire_extension_type().to_le_bytes());
        stream[2] = info.msg_type;
        let share = SubmitSharesStandard {
            channel_id: 9,
            sequence_number: 1,
            job_id: 2,
            nonce: 3,
            ntime: 4,
            version: 5,
        };
        stream.extend_from_slice(&encode_frame(&share).unwrap());
        let next: MiningMessage = skipped_then_next(info.name, &stream);
        assert_eq!(next, MiningMessage::SubmitSharesStandard(share));
        cases += 1;
    }
    eprintln!("unknown messages: {cases} cases");
    assert!(cases > 3000);
}

#[test]
fn undecodable_payloads_are_recoverable_and_the_next_frame_decodes() {
    let known = known_frame();
    let mut cases = 0usize;
    // Every catalog message with a payload too short for it: an empty payload, or a
    // B0_32 prefix of 33 for SubmitSharesExtended.
    for info in CATALOG {
        let mut stream = vec![0u8; 6];
        stream[..2].copy_from_slice(&info.wire_extension_type().to_le_bytes());
        stream[2] = info.msg_type;
        stream.extend_from_slice(&known);
        let next: Message = error_then_next(info.name, &stream, |e| {
            matches!(e, CodecError::Decode { header, source }
                if header.msg_type() == info.msg_type
                    && matches!(source.kind(), DecodeErrorKind::Truncated { available: 0, .. }))
        });
        assert_eq!(next.name(), "SetupConnectionSuccess");
        cases += 1;
    }
    let mut bad = vec![0u8; 24];
    bad.push(33);
    bad.extend_from_slice(&[0; 33]);
    let mut stream = vec![0x00, 0x80, 0x1b, bad.len() as u8, 0, 0];
    stream.extend_from_slice(&bad);
    stream.extend_from_slice(&known);
    let _: Message = error_then_next("B0_32 of 33", &stream, |e| {
        matches!(e, CodecError::Decode { source, .. }
            if source.kind() == DecodeErrorKind::TooLong { len: 33, max: 32 } && source.offset() == 24)
    });
    cases += 1;
    eprintln!("undecodable payloads: {cases} cases");
}

// ===== garbage streams =====

/// A frame of the garbage stream: an extension/type pair (mostly known), a payload, and
/// whether its length field lies (by up to ±300 bytes).
fn frame_strategy() -> impl Strategy<Value = Vec<u8>> {
    let known = prop::sample::select(
        CATALOG
            .iter()
            .map(|i| (i.wire_extension_type(), i.msg_type))
            .collect::<Vec<_>>(),
    );
    let ids = prop_oneof![4 => known, 1 => (any::<u16>(), any::<u8>())];
    (
        ids,
        prop::collection::vec(any::<u8>(), 0..300),
        -300i32..300,
        prop::bool::weighted(0.1),
    )
        .prop_map(|((ext, mt), payload, skew, lie)| {
            let len = if lie {
                (payload.len() as i32 + skew).clamp(0, MAX_PAYLOAD_LEN as i32) as usize
            } else {
                payload.len()
            };
            let mut f = ext.to_le_bytes().to_vec();
            f.push(mt);
            f.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
            f.extend_from_slice(&payload);
            f
        })
}

fn settings() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
    (
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 1..=8),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_give_only_typed_errors_and_decoders_agree(
        (cap_sel, slot_sel, sizes) in settings(),
        stream in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        frame_stream::check_input(&frame_stream::input(cap_sel, slot_sel, &sizes, &stream));
    }

    #[test]
    fn random_frame_sequences_give_only_typed_errors_and_decoders_agree(
        (cap_sel, slot_sel, sizes) in settings(),
        frames in prop::collection::vec(frame_strategy(), 0..12),
        tail in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        let mut stream: Vec<u8> = frames.concat();
        stream.extend_from_slice(&tail);
        frame_stream::check_input(&frame_stream::input(cap_sel, slot_sel, &sizes, &stream));
    }
}
