//! `Connection`: one type for plain and Noise connections, `flush()`/`close()` without a
//! type annotation (on a `Framed` of an `Sv2Codec` it is `E0283 type annotations
//! needed`), and `next_message`, which skips recoverable errors only.
#![cfg(feature = "noise")]

use futures::SinkExt;
use sv2c_binary::messages::{Message, MessageRef, SetupConnectionSuccess, UpdateChannel};
use sv2c_codec::noise::{
    self, AuthorityKeypair, Initiator, Responder, StaticKeypair, unix_time_now,
};
use sv2c_codec::{CodecError, Connection, Sv2Codec};
use tokio::io::{AsyncWriteExt, DuplexStream, duplex};
use tokio_util::codec::Framed;

async fn noise_pair() -> (Connection<DuplexStream>, Connection<DuplexStream>) {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 600,
    )
    .unwrap();
    let (a, b) = duplex(8192);
    let (client, server) = tokio::join!(
        noise::connect(
            a,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::new()
        ),
        noise::accept(b, &responder, Sv2Codec::new()),
    );
    (client.unwrap().into(), server.unwrap().into())
}

fn plain_pair() -> (Connection<DuplexStream>, Connection<DuplexStream>) {
    let (a, b) = duplex(8192);
    (
        Framed::new(a, Sv2Codec::<Message>::new()).into(),
        Framed::new(b, Sv2Codec::<Message>::new()).into(),
    )
}

/// The same code for both kinds: `feed`, then `flush()` and `close()` with no turbofish.
async fn exchange(mut client: Connection<DuplexStream>, mut server: Connection<DuplexStream>) {
    client.feed(UpdateChannel::default()).await.unwrap();
    client
        .feed(SetupConnectionSuccess {
            used_version: 2,
            flags: 0,
        })
        .await
        .unwrap();
    client.flush().await.unwrap();
    client.close().await.unwrap();
    let mut got = Vec::new();
    while let Some(m) = server.next_message().await.unwrap() {
        got.push(m.name());
    }
    assert_eq!(got, ["UpdateChannel", "SetupConnectionSuccess"]);
}

#[tokio::test]
async fn flush_and_close_need_no_type_annotation_plain_or_noise() {
    let (c, s) = plain_pair();
    assert!(!c.is_noise());
    exchange(c, s).await;
    let (c, s) = noise_pair().await;
    assert!(c.is_noise());
    exchange(c, s).await;
}

#[tokio::test]
async fn next_message_skips_a_frame_that_does_not_decode_and_stops_at_a_fatal_error() {
    let (mut raw, b) = duplex(8192);
    let mut server: Connection<DuplexStream> = Framed::new(b, Sv2Codec::<Message>::new()).into();
    // SetupConnection.Success with 2 of its 6 payload bytes: a complete frame that does
    // not decode (recoverable); then a good one; then a frame cut short by the end of the
    // stream (fatal).
    raw.write_all(&[0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x02, 0x00])
        .await
        .unwrap();
    raw.write_all(&[
        0x00, 0x00, 0x01, 0x06, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x00,
    ])
    .await
    .unwrap();
    raw.write_all(&[0x00, 0x00, 0x01, 0x06]).await.unwrap();
    drop(raw);

    let mut skipped = Vec::new();
    let first = server.next_message_with(|e| skipped.push(e)).await.unwrap();
    let Some(Message::SetupConnectionSuccess(ok)) = first else {
        panic!("expected the good frame, got {first:?}");
    };
    assert_eq!(ok.flags, 5);
    assert_eq!(skipped.len(), 1);
    assert!(matches!(skipped[0], CodecError::Decode { .. }));
    let fatal = server.next_message().await.unwrap_err();
    assert!(!fatal.is_recoverable(), "{fatal:?}");
}

/// The borrowed read loop through the same type, and the buffers given back after it.
async fn batch(mut client: Connection<DuplexStream>, mut server: Connection<DuplexStream>) {
    for _ in 0..3 {
        client.feed(UpdateChannel::default()).await.unwrap();
    }
    client.close().await.unwrap();
    let mut names = Vec::new();
    while let Some(n) = server
        .read_batch(|m: &MessageRef<'_>| names.push(m.name()))
        .await
        .unwrap()
    {
        assert!(n > 0);
        assert_eq!(server.partial_frame_len(), 0);
        server.release_buffers();
    }
    assert_eq!(names, ["UpdateChannel"; 3]);
}

#[tokio::test]
async fn read_batch_works_through_either_kind() {
    let (c, s) = plain_pair();
    batch(c, s).await;
    let (c, s) = noise_pair().await;
    batch(c, s).await;
}
