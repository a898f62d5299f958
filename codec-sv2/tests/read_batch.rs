//! `read_batch`, the borrowed read loop over tokio-util's `Framed` and `FramedRead`: it must
//! hand out exactly the messages `next()` yields (every golden vector, the stream written in
//! pieces down to single bytes), end cleanly or with a typed error at the end of the
//! stream, skip unknown frames without returning empty batches, recover after a bad
//! payload, stop at an oversized frame, lose nothing when cancelled, and mix with `next()`.

use std::time::Duration;

use futures::StreamExt;
use sv2c_binary::messages::Message;
use sv2c_codec::{CodecError, Sv2Codec, read_batch};
use tokio::io::{AsyncWriteExt, DuplexStream, duplex};
use tokio_util::codec::{Framed, FramedRead};

mod golden;
mod pipe;
mod shares;

use pipe::{pipe_in_pieces, write_in_pieces};
use shares::{kib_frame, seq_of, share, small_golden, undecodable_frame, unknown_frame};

/// A reader over `bytes`, written by a task in pieces of `piece` bytes.
fn reader_of(bytes: Vec<u8>, piece: usize) -> FramedRead<DuplexStream, Sv2Codec<Message>> {
    let (tx, rx) = duplex(256);
    tokio::spawn(write_in_pieces(tx, bytes, piece));
    FramedRead::new(rx, Sv2Codec::<Message>::new())
}

/// Every batch until the end of the stream: the sizes `read_batch` returned and the
/// messages, owned.
async fn read_all(
    reader: &mut FramedRead<DuplexStream, Sv2Codec<Message>>,
) -> Result<(Vec<usize>, Vec<Message>), CodecError> {
    let (mut sizes, mut messages) = (Vec::new(), Vec::new());
    while let Some(n) = read_batch(reader, |m| messages.push(m.to_owned_value())).await? {
        sizes.push(n);
    }
    Ok((sizes, messages))
}

#[tokio::test]
async fn the_same_messages_as_next_for_every_golden_vector_in_pieces() {
    let frames: Vec<Vec<u8>> = golden::records().iter().map(golden::frame).collect();
    golden::assert_frames_cover_the_catalog(frames.iter().map(Vec::as_slice));
    let stream = frames.concat();
    let mut expected = Vec::new();
    let mut owned = FramedRead::new(&stream[..], Sv2Codec::<Message>::new());
    while let Some(m) = owned.next().await {
        expected.push(m.unwrap());
    }
    assert_eq!(expected.len(), frames.len());

    for piece in [stream.len(), 4096, 1000] {
        check_pieces(&stream, piece, &expected).await;
    }
    // Byte by byte, the vectors' frames up to 1 KiB (the whole set is megabytes).
    let (small, expected_small): (Vec<_>, Vec<_>) = frames
        .iter()
        .zip(expected)
        .filter(|(f, _)| f.len() <= 1024)
        .map(|(f, m)| (f.clone(), m))
        .unzip();
    assert!(small.len() >= 44);
    for piece in [7, 1] {
        check_pieces(&small.concat(), piece, &expected_small).await;
    }
}

/// `stream`, written in pieces of `piece` bytes, yields `expected` through `read_batch`
/// in batches of at least one message, then ends cleanly and stays ended.
async fn check_pieces(stream: &[u8], piece: usize, expected: &[Message]) {
    let mut reader = reader_of(stream.to_vec(), piece);
    let (sizes, messages) = read_all(&mut reader).await.unwrap();
    assert!(
        sizes.iter().all(|&n| n >= 1),
        "pieces of {piece}: {sizes:?}"
    );
    assert_eq!(sizes.iter().sum::<usize>(), messages.len());
    assert_eq!(messages, expected, "pieces of {piece}");
    assert_eq!(read_batch(&mut reader, |_| {}).await.unwrap(), None);
}

#[tokio::test]
async fn a_stream_ending_inside_a_frame_is_truncated() {
    let mut bytes = [share(1), share(2)].concat();
    bytes.truncate(bytes.len() - 5);
    let mut reader = reader_of(bytes, 8);
    let mut seqs = Vec::new();
    let err = loop {
        match read_batch(&mut reader, |m| seqs.push(seq_of(m))).await {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a clean end inside a frame"),
            Err(e) => break e,
        }
    };
    assert_eq!(seqs, [1]);
    assert!(
        matches!(err, CodecError::TruncatedFrame { buffered: 25 }),
        "{err:?}"
    );
    assert!(!err.is_recoverable());
}

#[tokio::test]
async fn unknown_frames_are_skipped_without_an_empty_batch() {
    let unknown = unknown_frame();
    let (mut tx, rx) = duplex(1024);
    let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new());
    // Only unknown frames so far: the call must not return.
    tx.write_all(&[unknown.clone(), unknown.clone()].concat())
        .await
        .unwrap();
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        read_batch(&mut reader, |_| panic!("nothing to hand out")),
    )
    .await;
    assert!(
        waited.is_err(),
        "returned {waited:?} for unknown frames only"
    );
    assert_eq!(reader.decoder().skipped_frames(), 2);

    tx.write_all(&[unknown, share(5)].concat()).await.unwrap();
    let mut seqs = Vec::new();
    let n = read_batch(&mut reader, |m| seqs.push(seq_of(m))).await;
    assert_eq!(n.unwrap(), Some(1));
    assert_eq!(seqs, [5]);
    assert_eq!(reader.decoder().skipped_frames(), 3);
}

#[tokio::test]
async fn a_bad_payload_is_recoverable_and_the_next_call_carries_on() {
    let stream = [share(1), undecodable_frame(), share(2), share(3)].concat();
    let mut reader = reader_of(stream, 1 << 16);
    let mut seqs = Vec::new();
    let err = read_batch(&mut reader, |m| seqs.push(seq_of(m)))
        .await
        .unwrap_err();
    assert!(matches!(err, CodecError::Decode { .. }), "{err:?}");
    assert!(err.is_recoverable());
    assert_eq!(seqs, [1], "the message before the bad one was handed out");
    let n = read_batch(&mut reader, |m| seqs.push(seq_of(m))).await;
    assert_eq!(n.unwrap(), Some(2));
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(read_batch(&mut reader, |_| {}).await.unwrap(), None);
}

#[tokio::test]
async fn an_oversized_frame_is_fatal() {
    let (tx, rx) = duplex(1024);
    tokio::spawn(write_in_pieces(tx, [share(1), share(2)].concat(), 64));
    let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new().with_max_payload_len(23));
    let err = read_batch(&mut reader, |_| panic!("too large to hand out"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CodecError::FrameTooLarge { len: 24, max: 23 }),
        "{err:?}"
    );
    assert!(!err.is_recoverable());
}

#[tokio::test]
async fn a_call_cancelled_inside_a_frame_loses_nothing() {
    let (mut tx, rx) = duplex(1024);
    let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new());
    let frame = share(7);
    for cut in [1, 6, 17, frame.len() - 1] {
        tx.write_all(&frame[..cut]).await.unwrap();
        // The idle timeout fires with part of the frame read.
        let timed_out = tokio::time::timeout(
            Duration::from_millis(20),
            read_batch(&mut reader, |_| panic!("the frame is not complete")),
        )
        .await;
        assert!(timed_out.is_err());
        assert_eq!(
            reader.read_buffer().len(),
            cut,
            "the partial frame stays buffered"
        );
        tx.write_all(&frame[cut..]).await.unwrap();
        let mut seqs = Vec::new();
        let n = read_batch(&mut reader, |m| seqs.push(seq_of(m))).await;
        assert_eq!(n.unwrap(), Some(1), "cut at {cut}");
        assert_eq!(seqs, [7]);
    }
}

#[tokio::test]
async fn mixes_with_next_on_a_framed() {
    let (mut peer, io) = duplex(1024);
    let mut framed = Framed::new(io, Sv2Codec::<Message>::new());
    peer.write_all(&[share(0), share(1), share(2)].concat())
        .await
        .unwrap();
    match framed.next().await.unwrap().unwrap() {
        Message::SubmitSharesStandard(s) => assert_eq!(s.sequence_number, 0),
        other => panic!("{other:?}"),
    }
    // The two frames `next()` left buffered are handed out without waiting for a read
    // (the peer is still open and sends nothing more for now).
    let mut seqs = Vec::new();
    let n = tokio::time::timeout(
        Duration::from_secs(5),
        read_batch(&mut framed, |m| seqs.push(seq_of(m))),
    )
    .await
    .expect("buffered frames are handed out at once");
    assert_eq!(n.unwrap(), Some(2));
    assert_eq!(seqs, [1, 2]);

    peer.write_all(&share(3)[..10]).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(20), read_batch(&mut framed, |_| {}))
            .await
            .is_err()
    );
    peer.write_all(&share(3)[10..]).await.unwrap();
    match framed.next().await.unwrap().unwrap() {
        Message::SubmitSharesStandard(s) => assert_eq!(s.sequence_number, 3),
        other => panic!("{other:?}"),
    }
    drop(peer);
    assert_eq!(read_batch(&mut framed, |_| {}).await.unwrap(), None);
}

#[tokio::test]
async fn many_shares_arrive_in_few_batches_and_in_order() {
    let n = 20_000u32;
    let bytes: Vec<u8> = (0..n).flat_map(share).collect();
    let (tx, rx) = duplex(64 * 1024);
    tokio::spawn(write_in_pieces(tx, bytes, 30_001));
    let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new());
    let (mut seqs, mut batches) = (Vec::with_capacity(n as usize), 0);
    while let Some(k) = read_batch(&mut reader, |m| seqs.push(seq_of(m)))
        .await
        .unwrap()
    {
        assert!(k >= 1);
        batches += 1;
    }
    assert!(seqs.iter().copied().eq(0..n));
    // Each batch is at least one whole read's worth of frames, not one frame per call.
    assert!(batches < n as usize / 100, "{batches} batches");
    // The read buffer is back to an ordinary size, not grown with the stream.
    assert!(reader.read_buffer().capacity() <= 128 * 1024);
}

/// The future can be spawned on a multi-threaded runtime with a TCP connection.
#[test]
fn the_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    async fn handler(mut conn: Framed<tokio::net::TcpStream, Sv2Codec<Message>>) -> usize {
        let mut n = 0;
        while let Ok(Some(k)) = read_batch(&mut conn, |_| {}).await {
            n += k;
        }
        n
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.write_all(&[share(1), share(2)].concat()).await.unwrap();
        });
        let (tcp, _) = listener.accept().await.unwrap();
        let serving = handler(Framed::new(tcp, Sv2Codec::<Message>::new()));
        assert_send(&serving);
        client.await.unwrap();
        assert_eq!(tokio::spawn(serving).await.unwrap(), 2);
    });
}

// ===== against the sans-io decoder, on any mixture =====

/// What a reader sees: a message, an error (its `Debug` text), or the end.
#[derive(Debug, PartialEq)]
enum Event {
    Message(Message),
    Error(String),
    End,
}

/// The reference: `Decoder::decode` on the whole stream at once, carrying on after a
/// recoverable error, then the end-of-stream check.
fn sans_io_events(stream: &[u8], max_payload: usize) -> Vec<Event> {
    use tokio_util::codec::Decoder;
    let mut codec = Sv2Codec::<Message>::new().with_max_payload_len(max_payload);
    let mut buf = bytes::BytesMut::from(stream);
    let mut events = Vec::new();
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(m)) => events.push(Event::Message(m)),
            Ok(None) => {
                events.push(Event::End);
                return events;
            }
            Err(e) => {
                let recoverable = e.is_recoverable();
                events.push(Event::Error(format!("{e:?}")));
                if !recoverable {
                    return events;
                }
            }
        }
    }
}

/// The same stream through `read_batch`, written into a small pipe in the given pieces.
async fn read_batch_events(stream: Vec<u8>, pieces: Vec<usize>, max_payload: usize) -> Vec<Event> {
    let (rx, writer) = pipe_in_pieces(stream, pieces, 64);
    let mut reader = FramedRead::new(
        rx,
        Sv2Codec::<Message>::new().with_max_payload_len(max_payload),
    );
    let mut events = Vec::new();
    loop {
        let mut batch = Vec::new();
        let read = read_batch(&mut reader, |m| {
            batch.push(Event::Message(m.to_owned_value()))
        })
        .await;
        events.append(&mut batch);
        match read {
            Ok(Some(n)) => assert!(n >= 1),
            Ok(None) => {
                events.push(Event::End);
                break;
            }
            Err(e) => {
                let recoverable = e.is_recoverable();
                events.push(Event::Error(format!("{e:?}")));
                if !recoverable {
                    break;
                }
            }
        }
    }
    drop(reader);
    writer.await.unwrap();
    events
}

mod mixtures {
    use proptest::prelude::*;

    use super::*;

    /// One piece of a stream: a golden frame up to 300 bytes, a share, an unknown frame, a
    /// known message with a bad payload, or a frame above the reader's limit.
    fn piece(small: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::sample::select(small),
            4 => any::<u32>().prop_map(share),
            1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(|payload| {
                // Extension 0x4a7c (no set here knows it), any payload.
                let mut f = vec![0x7c, 0x4a, 0x05, payload.len() as u8, 0, 0];
                f.extend_from_slice(&payload);
                f
            }),
            1 => (0usize..24).prop_map(|keep| {
                let mut f = share(0);
                f.truncate(6 + keep);
                f[3] = keep as u8; // a SubmitSharesStandard too short to decode
                f
            }),
            1 => Just(kib_frame()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        /// Messages, errors and the end come out of `read_batch` exactly as out of the
        /// sans-io decoder, whatever the mixture and however the bytes arrive.
        #[test]
        fn read_batch_agrees_with_the_sans_io_decoder(
            frames in proptest::collection::vec(piece(small_golden(300)), 0..40),
            cut in 0usize..8,
            pieces in proptest::collection::vec(1usize..200, 1..8),
        ) {
            let mut stream = frames.concat();
            // Sometimes the stream ends inside its last frame.
            let keep = stream.len().saturating_sub(cut);
            stream.truncate(keep);
            let expected = sans_io_events(&stream, 512);
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(read_batch_events(stream, pieces, 512));
            prop_assert_eq!(got, expected);
        }
    }
}

/// A peer that streams nothing but unknown frames, as fast as it can, neither gets a
/// batch nor holds the thread: the idle timeout around `read_batch` fires, and another task
/// on the same single-threaded runtime keeps running meanwhile.
#[test]
fn a_flood_of_unknown_frames_is_cut_off_by_the_idle_timeout() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (mut tx, rx) = duplex(64 * 1024);
        let flood: Vec<u8> = std::iter::repeat_n(unknown_frame(), 1000)
            .flatten()
            .collect();
        let flooding = tokio::spawn(async move { while tx.write_all(&flood).await.is_ok() {} });
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let mut reader = FramedRead::new(rx, Sv2Codec::<Message>::new());
        let started = std::time::Instant::now();
        let read = tokio::time::timeout(
            Duration::from_millis(200),
            read_batch(&mut reader, |_| panic!("only unknown frames were sent")),
        )
        .await;
        assert!(read.is_err(), "returned {read:?} for unknown frames only");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the timeout came late"
        );
        assert!(
            reader.decoder().skipped_frames() > 1000,
            "the flood was read: {} frames skipped",
            reader.decoder().skipped_frames()
        );
        assert!(
            ticks.load(std::sync::atomic::Ordering::Relaxed) >= 5,
            "the other task was starved"
        );
        drop(reader);
        ticker.abort();
        flooding.await.unwrap();
    });
}

#[tokio::test]
async fn a_stalled_frame_announced_at_16_mib_holds_little() {
    use sv2c_codec::BatchRead;

    let (mut peer, ours) = duplex(64 * 1024);
    let mut framed = Framed::new(ours, Sv2Codec::<Message>::new());
    framed.release_buffers();
    // A header announcing 16 MiB − 1 bytes, then 10 bytes, then nothing.
    let mut hostile = vec![0, 0, 0x1a, 0xff, 0xff, 0xff];
    hostile.extend_from_slice(&[7; 10]);
    peer.write_all(&hostile).await.unwrap();
    for _ in 0..3 {
        let waiting = read_batch(&mut framed, |_| panic!("no frame is complete"));
        assert!(
            tokio::time::timeout(Duration::from_millis(20), waiting)
                .await
                .is_err()
        );
        assert_eq!(framed.read_buffer().len(), 16);
        assert_eq!(framed.partial_frame_len(), 16);
        // The 16 bytes and room for at most 1 KiB more, whatever the header announced.
        assert!(
            framed.read_buffer().capacity() <= 16 + 1024,
            "{} bytes held",
            framed.read_buffer().capacity()
        );
    }
}

#[tokio::test]
async fn between_batches_a_connection_keeps_only_a_partial_frame() {
    use futures::SinkExt;
    use sv2c_codec::BatchRead;

    let (mut peer, ours) = duplex(64 * 1024);
    let mut framed = Framed::new(ours, Sv2Codec::<Message>::new());
    // `Framed::new` starts with 8 KiB each way.
    assert!(framed.read_buffer().capacity() >= 8 * 1024);

    // A connection waiting for its first frame need not hold them: both are given back,
    // and the read below still works (into the thread's scratch buffer).
    framed.release_buffers();
    assert_eq!(framed.read_buffer().capacity(), 0);
    assert_eq!(framed.write_buffer().capacity(), 0);

    let (first, second) = (share(1), share(2));
    peer.write_all(&first).await.unwrap();
    peer.write_all(&second[..10]).await.unwrap();
    let mut seqs = Vec::new();
    let n = read_batch(&mut framed, |m| seqs.push(seq_of(m)))
        .await
        .unwrap();
    assert_eq!((n, &seqs[..]), (Some(1), &[1][..]));
    // Only the 10 bytes of the unfinished frame are kept, not the buffer they came in.
    assert_eq!(framed.read_buffer().len(), 10);
    assert!(framed.read_buffer().capacity() < 1024);

    peer.write_all(&second[10..]).await.unwrap();
    let n = read_batch(&mut framed, |m| seqs.push(seq_of(m)))
        .await
        .unwrap();
    assert_eq!((n, &seqs[..]), (Some(1), &[1, 2][..]));
    assert_eq!(framed.read_buffer().capacity(), 0);

    // Writes: the write buffer is given back once everything is written.
    framed.write_buffer_mut().reserve(8 * 1024);
    let msg =
        tokio_util::codec::Decoder::decode(&mut Sv2Codec::<Message>::new(), &mut second[..].into())
            .unwrap()
            .unwrap();
    framed.send(msg).await.unwrap();
    framed.release_buffers();
    assert_eq!(framed.write_buffer().capacity(), 0);
    // ... and the next write still arrives whole.
    let mut echo = FramedRead::new(peer, Sv2Codec::<Message>::new());
    let back = echo.next().await.unwrap().unwrap();
    assert!(matches!(back, Message::SubmitSharesStandard(s) if s.sequence_number == 2));
}
