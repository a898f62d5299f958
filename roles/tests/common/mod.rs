//! What the roles' integration tests share: a plaintext client, its `SetupConnection`, its
//! first channel request and its next message.

// Each test crate compiles this module and uses only some of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, OpenStandardMiningChannel, SetupConnection};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_codec::Sv2Codec;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_util::codec::Framed;

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
