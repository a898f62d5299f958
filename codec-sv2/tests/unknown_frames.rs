//! Spec §2.4 on a live connection: frames of messages the receiver does not know are
//! discarded silently by an endpoint (`Sv2Codec<Message>` skips and counts them) and come
//! out raw for a proxy (`Sv2Codec<MessageOrRaw<Message>>`); either way the connection stays
//! open and the next known message arrives. Plain `Framed` and Noise.

#![cfg(feature = "noise")]

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{
    Message, MessageOrRaw, OpenMiningChannelError, OpenStandardMiningChannel, Protocol, RawMessage,
    SetupConnection, SetupConnectionSuccess,
};
use sv2c_binary::{Str0255, U256};
use sv2c_codec::noise::{self, AuthorityKeypair, Initiator, Responder, StaticKeypair};
use sv2c_codec::{CodecError, Sv2Codec};
use tokio::io::{DuplexStream, duplex};
use tokio_util::codec::{Decoder, Encoder, Framed};

fn setup() -> SetupConnection {
    SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 0,
        endpoint_host: Str0255::try_from("pool.example").unwrap(),
        endpoint_port: 3333,
        vendor: Str0255::try_from("test").unwrap(),
        hardware_version: Str0255::default(),
        firmware: Str0255::default(),
        device_id: Str0255::default(),
    }
}

fn open() -> OpenStandardMiningChannel {
    OpenStandardMiningChannel {
        request_id: 42,
        user_identity: Str0255::try_from("alice").unwrap(),
        nominal_hash_rate: 1.0e12,
        max_target: U256::from([0xff; 32]),
    }
}

/// An experimental extension (0x4abc) this code base knows nothing about: one frame
/// without and one with the `channel_msg` bit (channel id 7).
fn unknown_frames() -> [RawMessage; 2] {
    [
        RawMessage::new(0x4abc, 0x01, &[1, 2, 3]),
        RawMessage::new(0xcabc, 0x02, &[7, 0, 0, 0, 9, 9]),
    ]
}

/// The client side: SetupConnection, the two unknown frames, OpenStandardMiningChannel;
/// then it expects an answer to each known message, proving the connection stayed open.
async fn client<C>(mut conn: Framed<DuplexStream, C>)
where
    C: Decoder<Item = Message, Error = CodecError>
        + Encoder<SetupConnection, Error = CodecError>
        + Encoder<RawMessage, Error = CodecError>
        + Encoder<OpenStandardMiningChannel, Error = CodecError>,
{
    conn.send(setup()).await.unwrap();
    for raw in unknown_frames() {
        conn.send(raw).await.unwrap();
    }
    conn.send(open()).await.unwrap();
    match conn.next().await {
        Some(Ok(Message::SetupConnectionSuccess(m))) => assert_eq!(m.used_version, 2),
        other => panic!("expected SetupConnection.Success, got {other:?}"),
    }
    match conn.next().await {
        Some(Ok(Message::OpenMiningChannelError(m))) => assert_eq!(m.request_id, 42),
        other => panic!("expected OpenMiningChannel.Error, got {other:?}"),
    }
}

/// The server side, an ordinary `while let Some(msg)` loop with `?`: returns the names of
/// the messages it saw, after the client hung up.
async fn endpoint<C>(conn: &mut Framed<DuplexStream, C>) -> Result<Vec<&'static str>, CodecError>
where
    C: Decoder<Item = Message, Error = CodecError>
        + Encoder<SetupConnectionSuccess, Error = CodecError>
        + Encoder<OpenMiningChannelError, Error = CodecError>,
{
    let mut seen = Vec::new();
    while let Some(msg) = conn.next().await {
        let msg = msg?;
        seen.push(msg.name());
        match msg {
            Message::SetupConnection(_) => {
                conn.send(SetupConnectionSuccess {
                    used_version: 2,
                    flags: 0,
                })
                .await?
            }
            Message::OpenStandardMiningChannel(m) => {
                conn.send(OpenMiningChannelError {
                    request_id: m.request_id,
                    error_code: Str0255::try_from("unknown-user").unwrap(),
                })
                .await?
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    Ok(seen)
}

#[tokio::test]
async fn plain_framed_endpoint_skips_unknown_frames_and_stays_open() {
    let (c, s) = duplex(4096);
    let mut server = Framed::new(s, Sv2Codec::<Message>::for_set());
    let (seen, ()) = tokio::join!(
        endpoint(&mut server),
        client(Framed::new(c, Sv2Codec::<Message>::for_set()))
    );
    assert_eq!(
        seen.unwrap(),
        ["SetupConnection", "OpenStandardMiningChannel"]
    );
    assert_eq!(server.codec().skipped_frames(), 2);
}

fn authority() -> (AuthorityKeypair, Responder) {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = noise::unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 3_600,
    )
    .unwrap();
    (authority, responder)
}

#[tokio::test]
async fn noise_endpoint_skips_unknown_frames_and_stays_open() {
    let (authority, responder) = authority();
    let (c, s) = duplex(4096);
    let (client_conn, server_conn) = tokio::join!(
        noise::connect(
            c,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::<Message>::for_set()
        ),
        noise::accept(s, &responder, Sv2Codec::<Message>::for_set()),
    );
    let mut server = server_conn.unwrap();
    let (seen, ()) = tokio::join!(endpoint(&mut server), client(client_conn.unwrap()));
    assert_eq!(
        seen.unwrap(),
        ["SetupConnection", "OpenStandardMiningChannel"]
    );
    assert_eq!(server.codec().inner().skipped_frames(), 2);
}

/// A proxy's loop: unknown frames are items, raw and intact, in order.
async fn proxy<C>(
    conn: &mut Framed<DuplexStream, C>,
) -> Result<Vec<MessageOrRaw<Message>>, CodecError>
where
    C: Decoder<Item = MessageOrRaw<Message>, Error = CodecError>
        + Encoder<SetupConnectionSuccess, Error = CodecError>
        + Encoder<OpenMiningChannelError, Error = CodecError>,
{
    let mut seen = Vec::new();
    while let Some(item) = conn.next().await {
        let item = item?;
        match &item {
            MessageOrRaw::Known(Message::SetupConnection(_)) => {
                conn.send(SetupConnectionSuccess {
                    used_version: 2,
                    flags: 0,
                })
                .await?
            }
            MessageOrRaw::Known(Message::OpenStandardMiningChannel(m)) => {
                conn.send(OpenMiningChannelError {
                    request_id: m.request_id,
                    error_code: Str0255::try_from("unknown-user").unwrap(),
                })
                .await?
            }
            MessageOrRaw::Known(other) => panic!("unexpected {other:?}"),
            MessageOrRaw::Raw(_) => {}
        }
        seen.push(item);
    }
    Ok(seen)
}

fn expected_proxy_items() -> Vec<MessageOrRaw<Message>> {
    let [a, b] = unknown_frames();
    vec![
        MessageOrRaw::Known(Message::SetupConnection(Box::new(setup()))),
        MessageOrRaw::Raw(a),
        MessageOrRaw::Raw(b),
        MessageOrRaw::Known(Message::OpenStandardMiningChannel(open())),
    ]
}

#[tokio::test]
async fn plain_framed_proxy_gets_unknown_frames_as_raw_items() {
    let (c, s) = duplex(4096);
    let mut server = Framed::new(s, Sv2Codec::<MessageOrRaw<Message>>::for_set());
    let (seen, ()) = tokio::join!(
        proxy(&mut server),
        client(Framed::new(c, Sv2Codec::<Message>::for_set()))
    );
    let seen = seen.unwrap();
    assert_eq!(seen, expected_proxy_items());
    let MessageOrRaw::Raw(raw) = &seen[2] else {
        unreachable!()
    };
    assert_eq!(raw.channel_id(), Some(7));
    assert_eq!(server.codec().skipped_frames(), 0);
}

#[tokio::test]
async fn noise_proxy_gets_unknown_frames_as_raw_items() {
    let (authority, responder) = authority();
    let (c, s) = duplex(4096);
    let (client_conn, server_conn) = tokio::join!(
        noise::connect(
            c,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::<Message>::for_set()
        ),
        noise::accept(s, &responder, Sv2Codec::<MessageOrRaw<Message>>::for_set()),
    );
    let mut server = server_conn.unwrap();
    let (seen, ()) = tokio::join!(proxy(&mut server), client(client_conn.unwrap()));
    assert_eq!(seen.unwrap(), expected_proxy_items());
}

/// A known message with a payload that does not decode is an error (the peer broke the
/// protocol) that consumed its frame: recoverable, the next frame decodes.
#[test]
fn undecodable_known_payload_is_a_recoverable_error() {
    use bytes::BytesMut;
    let mut wire = BytesMut::new();
    let mut codec = Sv2Codec::<Message>::for_set();
    // SetupConnection.Success is 6 bytes; send 3.
    codec
        .encode(RawMessage::new(0, 0x01, &[2, 0, 0]), &mut wire)
        .unwrap();
    codec
        .encode(RawMessage::new(0x4abc, 0x01, &[]), &mut wire)
        .unwrap();
    codec
        .encode(
            SetupConnectionSuccess {
                used_version: 2,
                flags: 5,
            },
            &mut wire,
        )
        .unwrap();
    let e = codec.decode(&mut wire).unwrap_err();
    assert!(
        matches!(e, CodecError::Decode { .. }) && e.is_recoverable(),
        "{e:?}"
    );
    assert_eq!(
        codec.decode(&mut wire).unwrap(),
        Some(Message::SetupConnectionSuccess(SetupConnectionSuccess {
            used_version: 2,
            flags: 5
        }))
    );
    assert_eq!(codec.skipped_frames(), 1);
    assert!(wire.is_empty());
}
