//! `Sv2Codec::decode_all_with` and `Sv2Codec::decode_with`, the borrowed read-loop forms:
//! they must hand out exactly the messages `Decoder::decode` yields (every golden vector,
//! fed whole and in pieces down to single bytes), skip and count unknown frames, stop at a
//! bad payload with the frames before it handed out and the next call carrying on, stop at
//! an oversized frame, and leave a partial frame in the buffer.

use bytes::BytesMut;
use sv2c_binary::messages::{Message, SubmitSharesStandard};
use sv2c_codec::{CodecError, Sv2Codec};
use tokio_util::codec::Decoder;

mod golden;
mod shares;

use shares::{seq_of, share, undecodable_frame, unknown_frame};

/// One `decode_all_with` call, appending the shares' sequence numbers to `seqs`.
fn batch(
    codec: &mut Sv2Codec<Message>,
    buf: &mut BytesMut,
    seqs: &mut Vec<u32>,
) -> Result<usize, CodecError> {
    codec.decode_all_with(buf, |m| seqs.push(seq_of(m)))
}

/// What `Decoder::decode` yields for `stream`, and how many frames it skipped.
fn owned_messages(stream: &[u8]) -> (Vec<Message>, u64) {
    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(stream);
    let mut out = Vec::new();
    while let Some(m) = codec.decode(&mut buf).expect("golden frames decode") {
        out.push(m);
    }
    assert!(buf.is_empty());
    (out, codec.skipped_frames())
}

#[test]
fn the_same_messages_as_decode_for_every_golden_vector_whole_and_in_pieces() {
    let frames: Vec<Vec<u8>> = golden::records().iter().map(golden::frame).collect();
    golden::assert_frames_cover_the_catalog(frames.iter().map(Vec::as_slice));
    let stream: Vec<u8> = frames.concat();
    let (expected, skipped) = owned_messages(&stream);
    assert_eq!(
        expected.len(),
        frames.len(),
        "every golden frame is a message"
    );

    for piece in [usize::MAX, 4096, 7, 3, 1] {
        // Batches.
        let mut codec = Sv2Codec::<Message>::new();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut handed = 0;
        for chunk in stream.chunks(piece.min(stream.len())) {
            buf.extend_from_slice(chunk);
            handed += codec
                .decode_all_with(&mut buf, |m| got.push(m.to_owned_value()))
                .unwrap();
        }
        assert!(buf.is_empty(), "pieces of {piece}: bytes left");
        assert_eq!(handed, got.len());
        assert_eq!(got, expected, "decode_all_with, pieces of {piece}");
        assert_eq!(codec.skipped_frames(), skipped);

        // One frame per call.
        let mut codec = Sv2Codec::<Message>::new();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in stream.chunks(piece.min(stream.len())) {
            buf.extend_from_slice(chunk);
            while let Some(m) = codec.decode_with(&mut buf, |m| m.to_owned_value()).unwrap() {
                got.push(m);
            }
        }
        assert!(buf.is_empty());
        assert_eq!(got, expected, "decode_with, pieces of {piece}");
    }
}

#[test]
fn unknown_frames_are_skipped_and_counted() {
    let stream = [
        unknown_frame(),
        share(1),
        unknown_frame(),
        unknown_frame(),
        share(2),
        unknown_frame(),
    ]
    .concat();

    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(&stream[..]);
    let mut seqs = Vec::new();
    let n = batch(&mut codec, &mut buf, &mut seqs).unwrap();
    assert_eq!((n, seqs), (2, vec![1, 2]));
    assert_eq!(codec.skipped_frames(), 4);
    assert!(buf.is_empty());

    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(&stream[..]);
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), Some(1));
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), Some(2));
    // Only an unknown frame is left: it is consumed, and there is no message.
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), None);
    assert!(buf.is_empty());
    assert_eq!(codec.skipped_frames(), 4);
}

#[test]
fn a_bad_payload_stops_the_batch_after_the_messages_before_it_and_is_recoverable() {
    let stream = [share(1), share(2), undecodable_frame(), share(3)].concat();
    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(&stream[..]);
    let mut seqs = Vec::new();
    let err = batch(&mut codec, &mut buf, &mut seqs).unwrap_err();
    // The error names the bad frame's own header (read again from the buffer, two frames
    // in: an offset off by one frame would name a share's).
    let bad_header = &undecodable_frame()[..6];
    assert!(
        matches!(err, CodecError::Decode { ref header, .. } if header.to_bytes() == bad_header),
        "{err:?}"
    );
    assert!(err.is_recoverable());
    assert_eq!(seqs, [1, 2]);
    // The bad frame was consumed with the ones before it: the next call goes on.
    assert_eq!(buf[..], share(3)[..]);
    let n = batch(&mut codec, &mut buf, &mut seqs).unwrap();
    assert_eq!((n, &seqs[..]), (1, &[1, 2, 3][..]));

    // The same, one frame per call.
    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(&stream[..]);
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), Some(1));
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), Some(2));
    let err = codec.decode_with(&mut buf, seq_of).unwrap_err();
    assert!(
        matches!(err, CodecError::Decode { ref header, .. } if header.to_bytes() == bad_header),
        "{err:?}"
    );
    assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), Some(3));
    assert!(buf.is_empty());

    // The same, as a `Decoder`.
    let mut codec = Sv2Codec::<Message>::new();
    let mut buf = BytesMut::from(&stream[..]);
    for _ in 0..2 {
        assert!(codec.decode(&mut buf).unwrap().is_some());
    }
    let err = codec.decode(&mut buf).unwrap_err();
    assert!(
        matches!(err, CodecError::Decode { ref header, .. } if header.to_bytes() == bad_header),
        "{err:?}"
    );
    assert!(err.is_recoverable());
    assert_eq!(buf[..], share(3)[..]);
}

#[test]
fn an_oversized_frame_stops_the_batch_and_stays_in_the_buffer() {
    let mut big = vec![0x00, 0x00, 0x01, 100, 0, 0];
    big.extend_from_slice(&[0; 100]);
    let stream = [share(1), big.clone()].concat();
    let mut codec = Sv2Codec::<Message>::new().with_max_payload_len(64);
    let mut buf = BytesMut::from(&stream[..]);
    let mut seqs = Vec::new();
    let err = batch(&mut codec, &mut buf, &mut seqs).unwrap_err();
    assert!(
        matches!(err, CodecError::FrameTooLarge { len: 100, max: 64 }),
        "{err:?}"
    );
    assert!(!err.is_recoverable());
    assert_eq!(seqs, [1]);
    assert_eq!(buf[..], big[..], "the frames before it were consumed");

    // Known from its header alone: the payload need not have arrived.
    let mut buf = BytesMut::from(&big[..6]);
    let err = codec.decode_with(&mut buf, seq_of).unwrap_err();
    assert!(matches!(err, CodecError::FrameTooLarge { .. }), "{err:?}");
}

#[test]
fn a_partial_frame_waits_for_the_rest() {
    let one = share(5);
    let mut codec = Sv2Codec::<Message>::new();
    let mut seqs = Vec::new();
    for cut in 0..one.len() {
        let mut buf = BytesMut::from(&one[..cut]);
        let n = batch(&mut codec, &mut buf, &mut seqs).unwrap();
        assert_eq!((n, buf.len()), (0, cut), "cut at {cut}");
        assert_eq!(codec.decode_with(&mut buf, seq_of).unwrap(), None);
        assert_eq!(buf.len(), cut);
        buf.extend_from_slice(&one[cut..]);
        let n = batch(&mut codec, &mut buf, &mut seqs).unwrap();
        assert_eq!(n, 1);
        assert!(buf.is_empty());
    }
    assert_eq!(seqs, vec![5; one.len()]);
}

#[test]
fn a_single_message_set_hands_out_its_own_borrowed_type() {
    let stream = [share(1), unknown_frame(), share(2)].concat();
    let mut codec = Sv2Codec::<SubmitSharesStandard>::new();
    let mut buf = BytesMut::from(&stream[..]);
    let mut seqs = Vec::new();
    let n = codec
        .decode_all_with(&mut buf, |s: &SubmitSharesStandard| {
            seqs.push(s.sequence_number)
        })
        .unwrap();
    assert_eq!((n, seqs), (2, vec![1, 2]));
    assert_eq!(codec.skipped_frames(), 1);
}

#[test]
fn the_codec_items_are_no_larger_than_a_message() {
    // `Message`'s tag word has room for the tags of the `Option` and the `Result` around
    // it (ADR 0004), so a decoded item moves like a bare `Message`. A `CodecError` larger
    // than a `Message`'s data would grow every item the codec and `FramedRead` return.
    use core::mem::size_of;
    assert_eq!(
        size_of::<Result<Option<Message>, CodecError>>(),
        size_of::<Message>()
    );
    assert_eq!(
        size_of::<Option<Result<Message, CodecError>>>(),
        size_of::<Message>()
    );
    // And the error starts on a 16-byte boundary inside them, as `Message`'s data does
    // (ADR 0004: `FramedRead<_, Sv2Codec>` 26.5 -> 14.1 ns per share with it).
    assert_eq!(core::mem::align_of::<CodecError>(), 16);
    assert_eq!(core::mem::align_of::<Message>(), 16);
}
