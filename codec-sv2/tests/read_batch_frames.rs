//! `read_batch` on a `FramedRead<_, FrameCodec>`, the borrowed frame loop of a proxy: it must
//! hand out exactly the frames `next()` yields, known or not (every golden vector, written in
//! pieces down to single bytes, and any mixture with oversized frames and a truncated end,
//! against the sans-io `Decoder`), forward them byte for byte, and take nothing from the
//! buffer pool.

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{RawMessageRef, encode_frame, encode_frame_into};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{CodecError, Frame, FrameCodec, read_batch};
use tokio::io::{AsyncReadExt, DuplexStream, duplex};
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

mod golden;
mod pipe;
mod shares;

use pipe::pipe_in_pieces;
use shares::{kib_frame, share, small_golden, unknown_frame};

/// What a reader sees: a frame (written back out as bytes), an error (its `Debug` text),
/// or the end.
#[derive(Debug, PartialEq)]
enum Event {
    Frame(Vec<u8>),
    Error(String),
    End,
}

fn pool() -> BufferPool {
    BufferPool::new(16, 512).unwrap()
}

/// The bytes of a borrowed frame, as they were on the wire.
fn borrowed_frame_bytes(f: &RawMessageRef<'_>) -> Vec<u8> {
    encode_frame(f).unwrap()
}

/// The reference: `Decoder::decode_eof` on the whole stream at once (fatal errors end it).
fn sans_io_events(stream: &[u8], max_payload: usize) -> Vec<Event> {
    let mut codec = FrameCodec::new(pool()).with_max_payload_len(max_payload);
    let mut buf = BytesMut::from(stream);
    let mut events = Vec::new();
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(f)) => events.push(Event::Frame(f.to_vec())),
            Ok(None) => {
                events.push(Event::End);
                return events;
            }
            Err(e) => {
                assert!(!e.is_recoverable(), "FrameCodec has no recoverable error");
                events.push(Event::Error(format!("{e:?}")));
                return events;
            }
        }
    }
}

/// The same stream through `read_batch`, written into a pipe in the given pieces; also
/// what the pool handed out meanwhile (it must be nothing).
async fn read_batch_events(
    stream: Vec<u8>,
    pieces: Vec<usize>,
    capacity: usize,
    max_payload: usize,
) -> (Vec<Event>, u64) {
    let (rx, writer) = pipe_in_pieces(stream, pieces, capacity);
    let pool = pool();
    let mut reader = FramedRead::new(
        rx,
        FrameCodec::new(pool.clone()).with_max_payload_len(max_payload),
    );
    let mut events = Vec::new();
    loop {
        let mut batch = Vec::new();
        let read = read_batch(&mut reader, |f| {
            batch.push(Event::Frame(borrowed_frame_bytes(f)))
        })
        .await;
        match read {
            Ok(Some(n)) => assert_eq!(n, batch.len()),
            Ok(None) => {
                events.append(&mut batch);
                events.push(Event::End);
                break;
            }
            Err(e) => {
                events.append(&mut batch);
                events.push(Event::Error(format!("{e:?}")));
                break;
            }
        }
        assert!(!batch.is_empty(), "an empty batch");
        events.append(&mut batch);
    }
    drop(reader);
    writer.await.unwrap();
    let stats = pool.stats();
    (
        events,
        stats.pooled + stats.fallback_exhausted + stats.fallback_too_large,
    )
}

#[tokio::test]
async fn every_golden_vector_in_pieces_as_next_yields_it() {
    let frames: Vec<Vec<u8>> = golden::records().iter().map(golden::frame).collect();
    golden::assert_frames_cover_the_catalog(frames.iter().map(Vec::as_slice));
    let stream = frames.concat();
    // The vectors' frames go up to megabytes: no payload limit below them.
    let max = sv2c_codec::MAX_PAYLOAD_LEN;
    let expected = sans_io_events(&stream, max);
    assert_eq!(expected.len(), frames.len() + 1);
    for (e, f) in expected.iter().zip(&frames) {
        assert_eq!(
            e,
            &Event::Frame(f.clone()),
            "the codec yields the wire bytes"
        );
    }
    for piece in [stream.len(), 4096, 1000] {
        let (got, taken) = read_batch_events(stream.clone(), vec![piece], 1 << 16, max).await;
        assert!(got == expected, "pieces of {piece}");
        assert_eq!(taken, 0, "pieces of {piece}: a payload buffer was taken");
    }
    // Byte by byte, the frames up to 1 KiB.
    let small: Vec<u8> = frames
        .iter()
        .filter(|f| f.len() <= 1024)
        .flatten()
        .copied()
        .collect();
    let expected_small = sans_io_events(&small, max);
    assert!(expected_small.len() > 44);
    for piece in [7, 1] {
        let (got, _) = read_batch_events(small.clone(), vec![piece], 64, max).await;
        assert!(got == expected_small, "pieces of {piece}");
    }
}

#[tokio::test]
async fn unknown_frames_are_handed_out_too() {
    let stream = [share(1), unknown_frame(), share(2)].concat();
    let (got, _) = read_batch_events(stream.clone(), vec![5], 64, 1024).await;
    assert_eq!(
        got,
        [
            Event::Frame(share(1)),
            Event::Frame(unknown_frame()),
            Event::Frame(share(2)),
            Event::End
        ]
    );
}

#[tokio::test]
async fn truncated_end_and_oversized_frame_are_fatal_after_the_frames_before_them() {
    let mut truncated = [share(1), share(2)].concat();
    truncated.truncate(truncated.len() - 5);
    let (got, _) = read_batch_events(truncated, vec![8], 64, 1024).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Event::Frame(share(1)));
    assert_eq!(
        got[1],
        Event::Error(format!("{:?}", CodecError::TruncatedFrame { buffered: 25 }))
    );

    let (got, _) = read_batch_events([share(1), share(2)].concat(), vec![100], 64, 23).await;
    assert_eq!(
        got,
        [Event::Error(format!(
            "{:?}",
            CodecError::FrameTooLarge { len: 24, max: 23 }
        ))]
    );
}

/// A proxy's forwarding loop: every frame read from the miner is written as it is into
/// the upstream connection's write buffer, one flush per batch. The upstream receives the
/// miner's bytes exactly, unknown extensions included.
#[tokio::test]
async fn a_forwarding_loop_passes_the_stream_through_byte_for_byte() {
    let frames: Vec<Vec<u8>> = golden::records()
        .iter()
        .map(golden::frame)
        .filter(|f| f.len() <= 4096)
        .chain([unknown_frame()])
        .collect();
    let mut stream = Vec::new();
    for round in 0..20u32 {
        for f in &frames {
            stream.extend_from_slice(f);
        }
        stream.extend_from_slice(&share(round));
    }
    let (miner, writing) = pipe_in_pieces(stream.clone(), vec![1, 30, 4096, 7, 500], 1024);
    let (proxy_up, mut pool_side) = duplex(1 << 16);
    let receiving = tokio::spawn(async move {
        let mut got = Vec::new();
        pool_side.read_to_end(&mut got).await.unwrap();
        got
    });

    let mut down = FramedRead::new(miner, FrameCodec::new(pool()));
    let mut up: FramedWrite<DuplexStream, FrameCodec> =
        FramedWrite::new(proxy_up, FrameCodec::new(pool()));
    let mut forwarded = 0;
    while let Some(n) = read_batch(&mut down, |f| {
        encode_frame_into(f, up.write_buffer_mut()).unwrap();
    })
    .await
    .unwrap()
    {
        forwarded += n;
        // `flush` needs the sink's item type spelled out: the codec encodes more than one.
        SinkExt::<Frame>::flush(&mut up).await.unwrap();
    }
    SinkExt::<Frame>::close(&mut up).await.unwrap();
    writing.await.unwrap();
    assert_eq!(forwarded, 20 * (frames.len() + 1));
    assert!(
        receiving.await.unwrap() == stream,
        "the forwarded bytes differ"
    );
}

#[tokio::test]
async fn mixes_with_next() {
    let (rx, writing) = pipe_in_pieces([share(0), share(1), share(2)].concat(), vec![90], 1024);
    let mut reader = FramedRead::new(rx, FrameCodec::new(pool()));
    let first = reader.next().await.unwrap().unwrap();
    assert_eq!(first.to_vec(), share(0));
    let mut rest = Vec::new();
    while read_batch(&mut reader, |f| rest.push(borrowed_frame_bytes(f)))
        .await
        .unwrap()
        .is_some()
    {}
    writing.await.unwrap();
    assert_eq!(rest, [share(1), share(2)]);
}

mod mixtures {
    use proptest::prelude::*;

    use super::*;

    /// One piece of a stream: a golden frame up to 300 bytes, a share, a frame of an
    /// extension nobody knows, or a frame above the reader's limit.
    fn piece(small: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::sample::select(small),
            4 => any::<u32>().prop_map(share),
            2 => (any::<u16>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..40))
                .prop_map(|(ext, ty, payload)| {
                    let mut f = ext.to_le_bytes().to_vec();
                    f.push(ty);
                    f.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
                    f.extend_from_slice(&payload);
                    f
                }),
            1 => Just(kib_frame()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        /// Frames, errors and the end come out of `read_batch` exactly as out of the
        /// sans-io decoder, whatever the mixture and however the bytes arrive.
        #[test]
        fn read_batch_agrees_with_the_sans_io_decoder(
            frames in proptest::collection::vec(piece(small_golden(300)), 0..40),
            cut in 0usize..8,
            pieces in proptest::collection::vec(1usize..200, 1..8),
        ) {
            let mut stream = frames.concat();
            let keep = stream.len().saturating_sub(cut);
            stream.truncate(keep);
            let expected = sans_io_events(&stream, 512);
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let (got, taken) = runtime.block_on(read_batch_events(stream, pieces, 64, 512));
            prop_assert_eq!(got, expected);
            prop_assert_eq!(taken, 0);
        }
    }
}
