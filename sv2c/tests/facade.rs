//! The facade alone: derives without attributes, codecs, Noise and `FramedExt` through
//! `sv2c::prelude`.

use sv2c::noise::{AuthorityKeypair, Initiator, Responder, StaticKeypair, unix_time_now};
use sv2c::prelude::*;

/// A user's channel message, derived through the facade with no `crate` attribute.
#[derive(Debug, Clone, Default, PartialEq, Wire)]
#[sv2(extension_type = 0x4a11, msg_type = 0x03, channel_msg)]
struct BoardTemp {
    channel_id: u32,
    tenths_celsius: u16,
}

/// The Mining set plus the user's message.
#[derive(Debug, Clone, PartialEq, MessageSet)]
#[allow(clippy::large_enum_variant)]
enum Proto {
    Mining(MiningMessage),
    Temp(BoardTemp),
}

#[tokio::test]
async fn flush_and_close_without_turbofish_over_noise() {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 600,
    )
    .unwrap();
    let (a, b) = tokio::io::duplex(8192);
    let (client, server) = tokio::join!(
        noise::connect(
            a,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::<Proto>::new()
        ),
        noise::accept(b, &responder, Sv2Codec::<Proto>::new()),
    );
    let (mut client, mut server) = (client.unwrap(), server.unwrap());

    // `feed` only buffers; `flush_frames` writes without naming an item type.
    client
        .feed(BoardTemp {
            channel_id: 9,
            tenths_celsius: 655,
        })
        .await
        .unwrap();
    client.feed(UpdateChannel::default()).await.unwrap();
    client.flush_frames().await.unwrap();
    client.close_frames().await.unwrap();

    let mut got = Vec::new();
    while let Some(m) = server.next().await {
        got.push(m.unwrap());
    }
    assert_eq!(
        got,
        [
            Proto::Temp(BoardTemp {
                channel_id: 9,
                tenths_celsius: 655
            }),
            Proto::Mining(MiningMessage::UpdateChannel(UpdateChannel::default())),
        ]
    );
    assert_eq!(<BoardTemp as MessageType>::wire_extension_type(), 0xca11);
}

#[test]
fn types_display_and_parse_through_the_facade() {
    let target: U256 = "ff".repeat(32).parse().unwrap();
    assert_eq!(target, U256([0xff; 32]));
    let s: Str0255 = "rig".parse().unwrap();
    assert_eq!(format!("{s}"), "rig");
    let mut buf = BytesMut::new();
    BoardTemp::default().encode(&mut buf);
    assert_eq!(buf.len(), 6);
    assert_eq!(
        Sv2Codec::<Message>::new()
            .with_max_payload_len(100)
            .max_payload_len(),
        100
    );
}

#[tokio::test]
async fn frame_codec_flushes_without_turbofish_and_forwards_raw() {
    let pool = BufferPool::new(4, 256).unwrap();
    let (a, b) = tokio::io::duplex(4096);
    let mut tx = Framed::new(a, FrameCodec::new(pool.clone()));
    let mut rx = Framed::new(b, Sv2Codec::<MessageOrRaw<Message>>::new());
    let raw = RawMessage::new(0xcabc, 0x07, &[5, 0, 0, 0, 1]);
    tx.feed(raw.clone()).await.unwrap();
    tx.flush_frames().await.unwrap();
    tx.close_frames().await.unwrap();
    assert_eq!(rx.next().await.unwrap().unwrap(), MessageOrRaw::Raw(raw));
    assert!(rx.next().await.is_none());
}
