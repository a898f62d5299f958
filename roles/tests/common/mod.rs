//! What the roles' integration tests share: a plaintext client, its `SetupConnection`, its
//! first channel request and its next message; hostile peers' helpers.

// Each test crate compiles this module and uses only some of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, OpenStandardMiningChannel, SetupConnection};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_codec::Sv2Codec;
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use tokio_util::codec::{Encoder, Framed};

/// A plaintext connection to a pool or proxy.
pub(crate) type Client = Framed<TcpStream, Sv2Codec<Message>>;

/// A Mining protocol `SetupConnection` with `flags`.
pub(crate) fn setup_connection(flags: u32) -> SetupConnection {
    SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags,
        endpoint_host: Str0255::try_from("127.0.0.1").unwrap(),
        endpoint_port: 0,
        vendor: Str0255::try_from("test").unwrap(),
        hardware_version: Str0255::default(),
        firmware: Str0255::default(),
        device_id: Str0255::default(),
    }
}

/// A standard channel request for the user `test`, accepting any target.
pub(crate) fn open_channel(request_id: u32) -> OpenStandardMiningChannel {
    OpenStandardMiningChannel {
        request_id,
        user_identity: Str0255::try_from("test").unwrap(),
        nominal_hash_rate: 1e12,
        max_target: U256([0xff; 32]),
    }
}

/// The next message `client` receives; panics after 10 s, on a close or on a frame that
/// does not decode.
pub(crate) async fn next(client: &mut Client) -> Message {
    timeout(Duration::from_secs(10), client.next())
        .await
        .expect("a message in time")
        .expect("the connection stays open")
        .expect("a message that decodes")
}

/// A client on `tcp` whose `SetupConnection` (with `flags`) succeeded.
pub(crate) async fn set_up_on(tcp: TcpStream, flags: u32) -> Client {
    let mut client = Framed::new(tcp, Sv2Codec::new());
    client.send(setup_connection(flags)).await.unwrap();
    assert!(matches!(
        next(&mut client).await,
        Message::SetupConnectionSuccess(_)
    ));
    client
}

/// A client connected to `addr` whose `SetupConnection` (with `flags`) succeeded.
pub(crate) async fn connect(addr: SocketAddr, flags: u32) -> Client {
    set_up_on(TcpStream::connect(addr).await.unwrap(), flags).await
}

/// A client on `tcp`, set up (flags 0), with `channels` standard channels open; returns it
/// and the channel ids.
pub(crate) async fn set_up_with_channels(tcp: TcpStream, channels: u32) -> (Client, Vec<u32>) {
    let mut client = set_up_on(tcp, 0).await;
    for r in 0..channels {
        client.send(Message::from(open_channel(r))).await.unwrap();
    }
    let mut ids = Vec::new();
    while ids.len() < channels as usize {
        if let Message::OpenStandardMiningChannelSuccess(s) = next(&mut client).await {
            ids.push(s.channel_id);
        }
    }
    (client, ids)
}

/// Reads until the server closes the connection; the time it took, if within `limit`.
pub(crate) async fn closed_within(mut tcp: TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    timeout(limit, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
    .map(|()| started.elapsed())
}

/// A Noise client of the server at `addr` (whose authority is `authority`) that sets up,
/// then sends half of an encrypted `OpenStandardMiningChannel` (its header and part of
/// its payload) and nothing more: the server's read buffer stays empty, the bytes wait
/// in its Noise decryptor. Returns the socket.
pub(crate) async fn noise_half_frame(addr: SocketAddr, authority: AuthorityPublicKey) -> TcpStream {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let initiator = Initiator::new(authority).unwrap();
    let mut framed = noise::connect(tcp, initiator, Sv2Codec::<Message>::new())
        .await
        .unwrap();
    framed
        .send(Message::from(setup_connection(0)))
        .await
        .unwrap();
    let big = OpenStandardMiningChannel {
        user_identity: "x".repeat(255).as_str().try_into().unwrap(),
        ..open_channel(1)
    };
    let mut wire = std::mem::take(framed.write_buffer_mut());
    framed
        .codec_mut()
        .encode(Message::from(big), &mut wire)
        .unwrap();
    let mut tcp = framed.into_inner();
    tcp.write_all(&wire[..wire.len() / 2]).await.unwrap();
    tcp
}

/// A client of the server at `addr` that sets up, then sends a 1,000-byte frame one byte
/// every `pace`; the time until the server closed the connection, if within 5 s.
pub(crate) async fn trickle(addr: SocketAddr, pace: Duration) -> Option<Duration> {
    use sv2c_binary::MessageType;
    use sv2c_binary::messages::SubmitSharesStandard;

    let mut tcp = connect(addr, 0).await.into_inner();
    let header = sv2c_codec::Header::new(0, SubmitSharesStandard::MSG_TYPE, 1000).unwrap();
    let started = Instant::now();
    for byte in header.to_bytes().iter().chain([0u8; 1000].iter()) {
        if tcp.write_all(&[*byte]).await.is_err() {
            return Some(started.elapsed());
        }
        tokio::time::sleep(pace).await;
        if started.elapsed() > Duration::from_secs(5) {
            return None;
        }
    }
    None
}
