//! Framing behaviour with locally derived messages: splits at every byte, random chunks,
//! channel-id rewriting, unknown extensions, recoverable and fatal errors.

use bytes::BytesMut;
use proptest::prelude::*;
use sv2c_binary::{B064K, Encode, Seq064K, Str0255, U256, Wire};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{CodecError, Frame, FrameCodec, FrameDecoder, Header, Sv2Codec};
use tokio_util::codec::{Decoder, Encoder};

#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(msg_type = 0x1a, channel_msg)]
struct Share {
    channel_id: u32,
    sequence_number: u32,
    job_id: u32,
    nonce: u32,
    ntime: u32,
    version: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(extension_type = 0x4001, msg_type = 0x02)]
struct Blob {
    name: Str0255,
    data: B064K,
    hashes: Seq064K<U256>,
}

fn share(i: u32) -> Share {
    Share {
        channel_id: i,
        sequence_number: i.wrapping_mul(3),
        job_id: 7,
        nonce: 0xdead_beef ^ i,
        ntime: 0x6650_0000,
        version: 0x2000_0000,
    }
}

fn blob(n: usize) -> Blob {
    Blob {
        name: Str0255::try_from(format!("blob-{n}")).unwrap(),
        data: B064K::try_from(vec![n as u8; n]).unwrap(),
        hashes: Seq064K::from_slice(&vec![U256([n as u8; 32]); n % 5]).unwrap(),
    }
}

fn frame_bytes<T: sv2c_binary::Frameable>(msg: &T) -> Vec<u8> {
    let mut dst = BytesMut::new();
    Sv2Codec::<Share>::for_set().encode(msg, &mut dst).unwrap();
    dst.to_vec()
}

#[test]
fn encoder_writes_the_spec_worked_example() {
    // SV2-WIRE.md §2.1.
    let bytes = frame_bytes(&Share {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 0xdead_beef,
        ntime: 0x6650_0000,
        version: 0x2000_0000,
    });
    assert_eq!(
        hex::encode(bytes),
        "00801a180000010000000200000003000000efbeadde0000506600000020"
    );
}

#[test]
fn every_split_into_two_reads_decodes_identically() {
    let pool = BufferPool::new(4, 512).unwrap();
    let msgs = [
        frame_bytes(&share(9)),
        frame_bytes(&blob(40)),
        frame_bytes(&blob(0)),
    ];
    for bytes in &msgs {
        let whole = Header::from_prefix(bytes).unwrap();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);

            // Sans-io, copying from slices.
            let mut dec = FrameDecoder::new(pool.clone());
            let mut first = a;
            let got_a = dec.decode_from(&mut first).unwrap();
            assert!(first.is_empty());
            let frame = match got_a {
                Some(f) => {
                    assert_eq!(cut, bytes.len(), "a frame before all bytes arrived");
                    f
                }
                None => {
                    let mut second = b;
                    let f = dec.decode_from(&mut second).unwrap().expect("frame");
                    assert!(second.is_empty());
                    f
                }
            };
            assert_eq!(frame.header(), whole);
            assert_eq!(frame.to_vec(), *bytes);
            assert!(dec.is_idle());

            // Sans-io, zero-copy reads.
            let mut dec = FrameDecoder::new(pool.clone());
            let mut got = None;
            for part in [a, b] {
                let mut part = part;
                while !part.is_empty() {
                    let dst = dec.read_buf();
                    let n = dst.len().min(part.len());
                    dst[..n].copy_from_slice(&part[..n]);
                    part = &part[n..];
                    if let Some(f) = dec.advance(n).unwrap() {
                        assert!(got.is_none());
                        got = Some(f);
                    }
                }
            }
            assert_eq!(got.expect("frame").to_vec(), *bytes);

            // tokio Decoder, both codecs.
            let mut codec = FrameCodec::new(pool.clone());
            let mut owned = Sv2Codec::<Blob>::for_set();
            let mut share_codec = Sv2Codec::<Share>::for_set();
            let mut src = BytesMut::from(a);
            let mut src2 = BytesMut::from(a);
            let early = codec.decode(&mut src).unwrap();
            let early_owned = if whole.msg_type() == 0x02 {
                owned.decode(&mut src2).unwrap().map(|m| m.encode_to_vec())
            } else {
                share_codec
                    .decode(&mut src2)
                    .unwrap()
                    .map(|m| m.encode_to_vec())
            };
            if cut < bytes.len() {
                assert!(early.is_none() && early_owned.is_none());
                src.extend_from_slice(b);
                src2.extend_from_slice(b);
            }
            let f = early.or_else(|| codec.decode(&mut src).unwrap()).unwrap();
            assert_eq!(f.to_vec(), *bytes);
            let payload = early_owned
                .or_else(|| {
                    if whole.msg_type() == 0x02 {
                        owned.decode(&mut src2).unwrap().map(|m| m.encode_to_vec())
                    } else {
                        share_codec
                            .decode(&mut src2)
                            .unwrap()
                            .map(|m| m.encode_to_vec())
                    }
                })
                .unwrap();
            assert_eq!(payload, bytes[6..]);
            assert!(src.is_empty() && src2.is_empty());
        }
    }
    assert_eq!(pool.stats().in_use, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A stream of frames cut into random chunks (including 1-byte ones): every frame
    /// comes out whole and in order, leftover bytes carrying over.
    #[test]
    fn random_chunks(sizes in prop::collection::vec(0usize..700, 1..20),
                     cuts in prop::collection::vec(1usize..64, 1..200)) {
        let pool = BufferPool::new(3, 256).unwrap(); // small: exercises fallbacks too
        let msgs: Vec<Blob> = sizes.iter().map(|&n| blob(n)).collect();
        let stream: Vec<u8> = msgs.iter().flat_map(frame_bytes).collect();
        let mut dec = FrameDecoder::new(pool.clone());
        let mut got = Vec::new();
        let mut rest = &stream[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].min(rest.len());
            i += 1;
            let mut chunk = &rest[..n];
            rest = &rest[n..];
            while let Some(f) = dec.decode_from(&mut chunk).unwrap() {
                got.push(f.decode::<Blob>().unwrap());
            }
            prop_assert!(chunk.is_empty());
        }
        prop_assert_eq!(got, msgs);
        prop_assert!(dec.is_idle());
        prop_assert_eq!(pool.stats().in_use, 0);
    }
}

#[test]
fn channel_id_is_rewritten_in_place_and_unknown_extensions_pass_through() {
    let pool = BufferPool::new(2, 128).unwrap();
    // A channel message of an extension nobody here knows: ext 0x4abc | channel bit.
    let mut wire = vec![0xbc, 0xca, 0x09, 7, 0, 0];
    wire.extend([0x05, 0, 0, 0, 0xaa, 0xbb, 0xcc]);
    let mut codec = FrameCodec::new(pool.clone());
    let mut src = BytesMut::from(&wire[..]);
    let mut frame = codec.decode(&mut src).unwrap().unwrap();
    assert_eq!(frame.header().extension_id(), 0x4abc);
    assert!(frame.header().channel_msg());
    assert_eq!(frame.channel_id(), Some(5));
    // Decoding it as a known message set fails in a recoverable way ...
    let err = frame.decode::<Share>().unwrap_err();
    assert!(matches!(err, CodecError::UnknownMessage { .. }) && err.is_recoverable());
    // ... but it can be forwarded, with or without a new channel id.
    let mut out = BytesMut::new();
    codec.encode(&frame, &mut out).unwrap();
    assert_eq!(&out[..], &wire[..]);
    frame.set_channel_id(0x0102_0304).unwrap();
    out.clear();
    codec.encode(frame, &mut out).unwrap();
    assert_eq!(&out[..6], &wire[..6]);
    assert_eq!(&out[6..10], [4, 3, 2, 1]);
    assert_eq!(&out[10..], &wire[10..]);
    assert_eq!(pool.stats().in_use, 0);

    // Not a channel message: no channel id to read or write.
    let mut plain = Frame::from_message(&blob(3), &pool).unwrap();
    assert_eq!(plain.channel_id(), None);
    assert!(matches!(
        plain.set_channel_id(1),
        Err(CodecError::NoChannelId { .. })
    ));
}

#[test]
fn borrowed_decode_pins_the_slot_owned_decode_does_not() {
    let pool = BufferPool::new(2, 1024).unwrap();
    let frame = Frame::from_message(&blob(100), &pool).unwrap();
    assert!(frame.is_pooled());
    let view = frame.decode_ref::<Blob>().unwrap();
    assert_eq!(view.data.len(), 100);
    assert_eq!(pool.stats().in_use, 1);
    let owned: Blob = frame.decode().unwrap();
    drop(frame);
    assert_eq!(pool.stats().in_use, 0, "the owned message pins nothing");
    assert_eq!(owned, blob(100));
}

#[test]
fn recoverable_errors_consume_the_frame() {
    let mut stream = BytesMut::new();
    stream.extend_from_slice(&frame_bytes(&blob(3))); // unknown to Sv2Codec<Share>
    let mut bad = frame_bytes(&share(1));
    bad[3] = 23; // msg_length 23: one byte short for a Share
    bad.truncate(6 + 23);
    stream.extend_from_slice(&bad);
    stream.extend_from_slice(&frame_bytes(&share(2)));
    let mut codec = Sv2Codec::<Share>::for_set();

    // The unknown frame is skipped silently (counted); the undecodable one is an error.
    let e = codec.decode(&mut stream).unwrap_err();
    assert_eq!(codec.skipped_frames(), 1);
    match &e {
        CodecError::Decode { header, source } => {
            assert_eq!(header.msg_type(), 0x1a);
            assert_eq!(source.field(), "Share.version");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.is_recoverable());
    assert_eq!(codec.decode(&mut stream).unwrap(), Some(share(2)));
    assert!(stream.is_empty());
}

#[test]
fn oversize_frames_are_refused_before_reading_the_payload() {
    let pool = BufferPool::new(2, 128).unwrap();
    let header = [0x00, 0x00, 0x00, 0x01, 0x10, 0x00]; // 0x1001 = 4097 bytes announced
    let mut codec = FrameCodec::new(pool.clone()).max_payload(4096);
    let mut src = BytesMut::from(&header[..]);
    let e = codec.decode(&mut src).unwrap_err();
    assert!(matches!(
        e,
        CodecError::FrameTooLarge {
            len: 4097,
            max: 4096
        }
    ));
    assert!(!e.is_recoverable());

    let mut owned = Sv2Codec::<Share>::for_set().max_payload(4096);
    assert!(matches!(
        owned.decode(&mut BytesMut::from(&header[..])),
        Err(CodecError::FrameTooLarge { len: 4097, .. })
    ));

    let mut dec = FrameDecoder::new(pool.clone()).max_payload(4096);
    let mut input = &header[..];
    assert!(matches!(
        dec.decode_from(&mut input),
        Err(CodecError::FrameTooLarge { .. })
    ));
    // Failed for good, and nothing was taken from the pool.
    assert!(dec.read_buf().is_empty());
    assert!(matches!(
        dec.advance(0),
        Err(CodecError::FrameTooLarge { .. })
    ));
    assert_eq!(pool.stats().acquisitions(), 0);

    // Sending a message above the limit is refused too.
    let mut out = BytesMut::new();
    let mut small = Sv2Codec::<Blob>::for_set().max_payload(16);
    assert!(matches!(
        small.encode(&blob(40), &mut out),
        Err(CodecError::FrameTooLarge { .. })
    ));
    assert!(out.is_empty());
}

/// The message enums write a frame in one `match` (`Frameable::put_frame`, overridden):
/// the limit still applies to each variant, boxed or not, and a refused message leaves
/// nothing in the buffer; an accepted one is byte for byte the frame of the bare message.
#[test]
fn enum_frames_respect_the_limit_and_match_the_bare_message() {
    use sv2c_binary::messages::{
        Message, MessageOrRaw, RawMessage, SetupConnection, SubmitSharesExtended, encode_frame,
    };
    let ext = SubmitSharesExtended {
        channel_id: 7,
        sequence_number: 1,
        job_id: 2,
        nonce: 3,
        ntime: 4,
        version: 5,
        extranonce: vec![9; 8].try_into().unwrap(),
    };
    let setup = SetupConnection {
        protocol: sv2c_binary::Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 0,
        endpoint_host: Str0255::try_from("pool.example.com").unwrap(),
        endpoint_port: 3333,
        vendor: Str0255::try_from("v").unwrap(),
        hardware_version: Str0255::try_from("h").unwrap(),
        firmware: Str0255::try_from("f").unwrap(),
        device_id: Str0255::try_from("d").unwrap(),
    };
    let cases = [
        (Message::from(ext.clone()), encode_frame(&ext).unwrap()),
        (Message::from(setup.clone()), encode_frame(&setup).unwrap()),
    ];
    for (msg, bare) in cases {
        let mut out = BytesMut::new();
        let mut small = Sv2Codec::<Message>::new().with_max_payload_len(bare.len() - 7);
        assert!(matches!(
            small.encode(&msg, &mut out),
            Err(CodecError::FrameTooLarge { len, max }) if len == bare.len() - 6 && max == bare.len() - 7
        ));
        assert!(out.is_empty());
        let mut exact = Sv2Codec::<Message>::new().with_max_payload_len(bare.len() - 6);
        exact.encode(&msg, &mut out).unwrap();
        assert_eq!(&out[..], &bare[..]);
        assert_eq!(encode_frame(&msg).unwrap(), bare);
        assert_eq!(encode_frame(&msg.as_ref()).unwrap(), bare);
        let wrapped: MessageOrRaw<Message, RawMessage> = MessageOrRaw::Known(msg);
        assert_eq!(encode_frame(&wrapped).unwrap(), bare);
    }
}

#[test]
fn eof_inside_a_frame_is_reported() {
    let bytes = frame_bytes(&share(1));
    let mut codec = Sv2Codec::<Share>::for_set();
    let mut src = BytesMut::from(&bytes[..10]);
    assert!(matches!(
        codec.decode_eof(&mut src),
        Err(CodecError::TruncatedFrame { buffered: 10 })
    ));
    assert_eq!(codec.decode_eof(&mut BytesMut::new()).unwrap(), None);
}

#[test]
fn large_frames_beyond_a_slot_grow_on_the_heap_and_are_counted() {
    let pool = BufferPool::new(2, 256).unwrap();
    let msg = blob(5000);
    let bytes = frame_bytes(&msg);
    let mut dec = FrameDecoder::new(pool.clone());
    let mut input = &bytes[..];
    let frame = dec.decode_from(&mut input).unwrap().unwrap();
    assert!(!frame.is_pooled());
    assert_eq!(frame.decode::<Blob>().unwrap(), msg);
    assert_eq!(pool.stats().fallback_too_large, 1);
}

// ===== decode_from: whole-frame fast path vs the incremental path =====

/// One frame (header, payload, pooled?) or the error that stopped a drive.
type Produced = Result<(Header, Vec<u8>, bool), String>;

/// What one drive of a [`FrameDecoder`] produced: every frame (header, payload, pooled?)
/// or the error that stopped it, how many input bytes were consumed, the bytes of an
/// unfinished frame held, and the pool statistics (frames are kept alive until the end,
/// so pool exhaustion happens the same way in both drives).
type Outcome = (Vec<Produced>, usize, usize, sv2c_buffer_pool::PoolStats);

fn decoder(slots: usize, slot_size: usize, max: usize) -> FrameDecoder {
    FrameDecoder::new(BufferPool::new(slots, slot_size).unwrap()).max_payload(max)
}

/// The frames (kept alive) and results of one drive.
#[derive(Default)]
struct Drive {
    out: Vec<Produced>,
    held: Vec<Frame>,
}

impl Drive {
    /// Records one `decode_from` result; `false` when the drive must stop reading this
    /// input (no frame ready, or an error).
    fn take(&mut self, r: Result<Option<Frame>, CodecError>) -> bool {
        match r {
            Ok(Some(f)) => {
                self.out
                    .push(Ok((f.header(), f.payload().to_vec(), f.is_pooled())));
                self.held.push(f);
                true
            }
            Ok(None) => false,
            Err(e) => {
                self.out.push(Err(format!("{e:?}")));
                false
            }
        }
    }

    fn failed(&self) -> bool {
        matches!(self.out.last(), Some(Err(_)))
    }
}

/// All of `wire` in one slice: whole frames take the fast path.
fn drive_whole(mut dec: FrameDecoder, wire: &[u8]) -> Outcome {
    let mut input = wire;
    let mut drive = Drive::default();
    while drive.take(dec.decode_from(&mut input)) {}
    let stats = dec.pool().stats();
    (drive.out, wire.len() - input.len(), dec.buffered(), stats)
}

/// `wire` one byte per call: never a whole frame in the input, so always the
/// incremental path.
fn drive_bytewise(mut dec: FrameDecoder, wire: &[u8]) -> Outcome {
    let mut drive = Drive::default();
    let mut consumed = 0;
    for i in 0..wire.len() {
        let mut input = &wire[i..i + 1];
        loop {
            let r = dec.decode_from(&mut input);
            consumed = i + 1 - input.len();
            if !drive.take(r) {
                break;
            }
        }
        if drive.failed() {
            break;
        }
    }
    let stats = dec.pool().stats();
    (drive.out, consumed, dec.buffered(), stats)
}

fn raw_frame(extension_type: u16, msg_type: u8, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_le_bytes();
    let mut f = extension_type.to_le_bytes().to_vec();
    f.extend_from_slice(&[msg_type, len[0], len[1], len[2]]);
    f.extend_from_slice(payload);
    f
}

#[test]
fn whole_frame_fast_path_matches_the_incremental_path() {
    // Empty, short, exactly a slot, one over a slot (heap), and more frames than slots
    // (pool exhaustion), then a truncated frame.
    let mut wire = Vec::new();
    for (i, len) in [0usize, 1, 6, 64, 65, 3, 64, 7, 2, 0]
        .into_iter()
        .enumerate()
    {
        let payload: Vec<u8> = (0..len).map(|b| (b * 31 + i) as u8).collect();
        wire.extend(raw_frame(0x8000 | i as u16, i as u8, &payload));
    }
    let whole = drive_whole(decoder(4, 64, 1000), &wire);
    assert_eq!(whole.0.len(), 10);
    assert_eq!(whole.3.fallback_too_large, 1);
    assert!(whole.3.fallback_exhausted > 0);
    assert_eq!(whole, drive_bytewise(decoder(4, 64, 1000), &wire));

    let mut partial = wire.clone();
    partial.extend(&raw_frame(0, 9, &[5; 20])[..15]);
    let whole = drive_whole(decoder(4, 64, 1000), &partial);
    assert_eq!((whole.0.len(), whole.1, whole.2), (10, partial.len(), 15));
    assert_eq!(whole, drive_bytewise(decoder(4, 64, 1000), &partial));

    // A payload above the maximum but within a slot: the same error, after the same
    // bytes, and the decoder stays failed.
    let mut too_big = raw_frame(0, 1, &[1; 10]);
    too_big.extend(raw_frame(0, 2, &[2; 41]));
    too_big.extend(raw_frame(0, 3, &[3; 4]));
    let whole = drive_whole(decoder(4, 64, 40), &too_big);
    assert_eq!(whole.0.len(), 2);
    assert!(
        whole.0[1]
            .as_ref()
            .is_err_and(|e| e.contains("FrameTooLarge"))
    );
    assert_eq!(whole.1, 16 + 6);
    assert_eq!(whole, drive_bytewise(decoder(4, 64, 40), &too_big));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn decode_from_is_the_same_whole_or_bytewise(
        frames in proptest::collection::vec((any::<u16>(), any::<u8>(), 0usize..=160), 0..8),
        cut in 0usize..=200,
        slots in 1usize..=4,
        max in 0usize..=200,
    ) {
        let mut wire = Vec::new();
        for (i, (ext, ty, len)) in frames.iter().enumerate() {
            let payload: Vec<u8> = (0..*len).map(|b| (b + i) as u8).collect();
            wire.extend(raw_frame(*ext, *ty, &payload));
        }
        wire.truncate(wire.len().saturating_sub(cut % (wire.len() + 1)));
        let whole = drive_whole(decoder(slots, 64, max), &wire);
        prop_assert_eq!(whole, drive_bytewise(decoder(slots, 64, max), &wire));
    }
}
