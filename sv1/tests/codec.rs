//! The codec's framing: line endings, blank lines, the length limit, invalid lines that do
//! not end the stream, `Framed` over a real stream.

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use sv2c_sv1::{Body, Id, InvalidKind, ParamsError, Response, Sv1Codec, Sv1Item, Sv1Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Decoder, Framed};

const SUBSCRIBE: &[u8] = br#"{"id":1,"method":"mining.subscribe","params":["cgminer/4.11.1"]}"#;

/// Every item `codec` yields for `input` fed in one piece, then at end of stream.
fn decode_all(codec: &mut Sv1Codec, input: &[u8]) -> Vec<Sv1Item> {
    let mut buf = BytesMut::from(input);
    let mut items = Vec::new();
    while let Some(item) = codec.decode_eof(&mut buf).expect("no I/O") {
        items.push(item);
    }
    items
}

#[track_caller]
fn kind(item: &Sv1Item) -> &InvalidKind {
    match item {
        Sv1Item::Invalid(e) => &e.kind,
        Sv1Item::Message(m) => panic!("expected an invalid line, got {m:?}"),
    }
}

#[track_caller]
fn message(item: &Sv1Item) -> &Sv1Message {
    match item {
        Sv1Item::Message(m) => m,
        Sv1Item::Invalid(e) => panic!("expected a message, got {e}"),
    }
}

#[test]
fn crlf_blank_lines_and_a_last_line_without_newline() {
    let mut input = Vec::new();
    input.extend_from_slice(b"\n\r\n   \n");
    input.extend_from_slice(SUBSCRIBE);
    input.extend_from_slice(b"\r\n\n");
    input.extend_from_slice(SUBSCRIBE);
    let items = decode_all(&mut Sv1Codec::new(), &input);
    assert_eq!(items.len(), 2);
    for item in &items {
        assert!(matches!(message(item).body, Body::Subscribe(_)));
    }
}

#[test]
fn invalid_lines_are_items_and_the_stream_goes_on() {
    let input = b"not json\n[1,2]\n{\"id\":1}\n{\"id\":-1,\"method\":\"x\"}\n\
        {\"id\":2,\"method\":\"mining.submit\",\"params\":[\"w\",\"j\",\"0\",\"1\",\"2\"]}\n\
        {\"id\":3,\"method\":\"mining.authorize\",\"params\":[\"w\",\"x\"]}\n";
    let items = decode_all(&mut Sv1Codec::new(), input);
    assert_eq!(items.len(), 6);
    assert!(matches!(kind(&items[0]), InvalidKind::Json(_)));
    assert!(matches!(kind(&items[1]), InvalidKind::NotRpc));
    assert!(matches!(kind(&items[2]), InvalidKind::NotRpc));
    assert!(matches!(kind(&items[3]), InvalidKind::Id));
    match kind(&items[4]) {
        InvalidKind::Params { method, source } => {
            assert_eq!(*method, "mining.submit");
            assert_eq!(
                *source,
                ParamsError::Field {
                    field: "extranonce2",
                    expected: "at most 32 bytes in hex"
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(message(&items[5]).id, Id::Num(3));
    let Sv1Item::Invalid(bad) = &items[0] else {
        unreachable!()
    };
    assert_eq!(&bad.excerpt[..], b"not json");
}

#[test]
fn an_unknown_method_is_a_message() {
    let items = decode_all(
        &mut Sv1Codec::new(),
        br#"{"id":9,"method":"mining.get_transactions","params":["4f"]}"#,
    );
    let m = message(&items[0]);
    assert_eq!(m.id, Id::Num(9));
    assert_eq!(
        m.body,
        Body::Unknown {
            method: "mining.get_transactions".into(),
            params: serde_json::json!(["4f"])
        }
    );
}

#[test]
fn a_complete_line_over_the_limit_is_reported_and_skipped() {
    let mut codec = Sv1Codec::new().with_max_line_len(64);
    let mut input = vec![b'x'; 100];
    input.push(b'\n');
    input.extend_from_slice(SUBSCRIBE);
    input.push(b'\n');
    let items = decode_all(&mut codec, &input);
    assert_eq!(items.len(), 2);
    assert!(matches!(kind(&items[0]), InvalidKind::TooLong { max: 64 }));
    message(&items[1]);
}

#[test]
fn a_long_line_arriving_in_pieces_is_never_buffered() {
    let mut codec = Sv1Codec::new().with_max_line_len(100);
    let mut buf = BytesMut::new();
    let mut reported = 0;
    // 10 000 bytes of one line, 37 at a time: the buffer stays below the limit plus one
    // piece, and the line is reported once.
    for _ in 0..270 {
        buf.extend_from_slice(&[b'a'; 37]);
        while let Some(item) = codec.decode(&mut buf).expect("no I/O") {
            assert!(matches!(kind(&item), InvalidKind::TooLong { max: 100 }));
            reported += 1;
        }
        assert!(buf.len() <= 101 + 37, "buffered {}", buf.len());
    }
    assert_eq!(reported, 1);
    // Its end, and the next line in the same read.
    buf.extend_from_slice(b"tail\n");
    buf.extend_from_slice(SUBSCRIBE);
    buf.extend_from_slice(b"\n");
    let item = codec
        .decode(&mut buf)
        .expect("no I/O")
        .expect("the next line");
    assert!(matches!(message(&item).body, Body::Subscribe(_)));
    assert!(buf.is_empty());
}

#[test]
fn a_line_of_exactly_the_limit_is_accepted() {
    let line = br#"{"id":1,"method":"mining.extranonce.subscribe","params":[]}"#;
    let mut codec = Sv1Codec::new().with_max_line_len(line.len());
    let mut input = line.to_vec();
    input.extend_from_slice(b"\r\n");
    let items = decode_all(&mut codec, &input);
    assert_eq!(message(&items[0]).body, Body::ExtranonceSubscribe);
}

#[test]
fn every_split_point_of_a_stream() {
    let stream: &[u8] = b"{\"id\":null,\"method\":\"mining.set_difficulty\",\"params\":[512]}\n\
        garbage\r\n\
        {\"id\":4,\"result\":true,\"error\":null}\n";
    let whole = decode_all(&mut Sv1Codec::new(), stream);
    assert_eq!(whole.len(), 3);
    for cut in 0..=stream.len() {
        let mut codec = Sv1Codec::new();
        let mut buf = BytesMut::from(&stream[..cut]);
        let mut items = Vec::new();
        while let Some(i) = codec.decode(&mut buf).expect("no I/O") {
            items.push(i);
        }
        buf.extend_from_slice(&stream[cut..]);
        while let Some(i) = codec.decode_eof(&mut buf).expect("no I/O") {
            items.push(i);
        }
        assert_eq!(items.len(), 3, "cut at {cut}");
        assert_eq!(format!("{items:?}"), format!("{whole:?}"), "cut at {cut}");
    }
}

#[tokio::test]
async fn framed_sees_every_line_and_answers() {
    let (mut miner, pool) = tokio::io::duplex(1 << 16);
    let mut pool = Framed::new(pool, Sv1Codec::new().with_max_line_len(256));
    miner
        .write_all(b"{\"id\":\"a\",\"jsonrpc\":\"2.0\",\"method\":\"mining.authorize\",\"params\":[\"w\",\"x\"]}\n")
        .await
        .expect("write");
    miner.write_all(&[b'z'; 1000]).await.expect("write");
    miner.write_all(b"\nnull\n").await.expect("write");
    miner.write_all(SUBSCRIBE).await.expect("write");
    miner.shutdown().await.expect("shutdown");

    let first = pool.next().await.expect("an item").expect("no I/O error");
    let auth = first.into_result().expect("a message");
    assert_eq!(auth.id, Id::Str("a".into()));
    assert!(auth.jsonrpc2);
    let too_long = pool.next().await.expect("an item").expect("no I/O error");
    assert!(matches!(kind(&too_long), InvalidKind::TooLong { max: 256 }));
    let null = pool.next().await.expect("an item").expect("no I/O error");
    assert!(matches!(kind(&null), InvalidKind::NotRpc));
    let sub = pool.next().await.expect("an item").expect("no I/O error");
    assert!(matches!(message(&sub).body, Body::Subscribe(_)));
    assert!(pool.next().await.is_none());

    // The answer echoes the id and `"jsonrpc"`.
    let mut reply = Sv1Message::response(auth.id, Response::ok(true));
    reply.jsonrpc2 = auth.jsonrpc2;
    pool.send(&reply).await.expect("send");
    let mut got = vec![0; 64];
    let n = miner.read(&mut got).await.expect("read");
    assert_eq!(
        &got[..n],
        b"{\"id\":\"a\",\"jsonrpc\":\"2.0\",\"result\":true,\"error\":null}\n"
    );
}

/// A line that arrives at the end of the read buffer: after the decoder saw its start, the
/// buffer has room for the rest of a share line (so `Framed`'s next read takes it whole),
/// made from the consumed bytes at the front, not from a larger allocation.
#[test]
fn an_incomplete_line_leaves_room_for_a_whole_line() {
    let submit: &[u8] = br#"{"id":7,"method":"mining.submit","params":["loadgen.12","1f","00000000","65a1b2c3","1d2e3f40"]}"#;
    let mut buf = BytesMut::with_capacity(512);
    while buf.len() + submit.len() < 512 - 60 {
        buf.extend_from_slice(submit);
        buf.extend_from_slice(b"\n");
    }
    let whole = buf.len() / (submit.len() + 1);
    buf.extend_from_slice(&submit[..60]);
    let mut codec = Sv1Codec::new();
    for _ in 0..whole {
        let item = codec
            .decode(&mut buf)
            .expect("no I/O")
            .expect("a whole line");
        assert!(matches!(message(&item).body, Body::Submit(_)));
    }
    assert!(codec.decode(&mut buf).expect("no I/O").is_none());
    assert_eq!(&buf[..], &submit[..60], "the incomplete line is kept");
    assert!(
        buf.capacity() - buf.len() >= submit.len(),
        "room for a whole line: {} of {}",
        buf.capacity() - buf.len(),
        buf.capacity()
    );
    assert_eq!(buf.capacity(), 512, "no larger allocation");
    buf.extend_from_slice(&submit[60..]);
    buf.extend_from_slice(b"\n");
    let item = codec.decode(&mut buf).expect("no I/O").expect("the line");
    assert!(matches!(message(&item).body, Body::Submit(_)));
}
