//! The pool's chain tip is pool-wide: when its timer moves to the next block, every
//! connection's channels get the same previous hash (as a real block would reach them),
//! whenever each connection was opened.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, OpenStandardMiningChannel, SetupConnection};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_codec::Sv2Codec;
use sv2c_roles::pool::{Pool, PoolConfig};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_util::codec::Framed;

type Client = Framed<TcpStream, Sv2Codec<Message>>;

async fn next(client: &mut Client) -> Message {
    timeout(Duration::from_secs(10), client.next())
        .await
        .expect("a message in time")
        .expect("the connection stays open")
        .expect("a message that decodes")
}

/// A client with one standard channel; returns it and the previous hash its first job
/// was activated with.
async fn miner(addr: std::net::SocketAddr) -> (Client, [u8; 32]) {
    let mut client = Framed::new(TcpStream::connect(addr).await.unwrap(), Sv2Codec::new());
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 1,
        endpoint_host: Str0255::try_from("127.0.0.1").unwrap(),
        endpoint_port: 0,
        vendor: Str0255::try_from("test").unwrap(),
        hardware_version: Str0255::default(),
        firmware: Str0255::default(),
        device_id: Str0255::default(),
    };
    client.send(Message::from(setup)).await.unwrap();
    assert!(matches!(
        next(&mut client).await,
        Message::SetupConnectionSuccess(_)
    ));
    let open = OpenStandardMiningChannel {
        request_id: 1,
        user_identity: Str0255::try_from("tip").unwrap(),
        nominal_hash_rate: 1.0e12,
        max_target: U256([0xff; 32]),
    };
    client.send(Message::from(open)).await.unwrap();
    loop {
        if let Message::SetNewPrevHash(p) = next(&mut client).await {
            return (client, p.prev_hash.0);
        }
    }
}

/// The next previous hash `client` is sent.
async fn next_prev_hash(client: &mut Client) -> [u8; 32] {
    loop {
        if let Message::SetNewPrevHash(p) = next(client).await {
            return p.prev_hash.0;
        }
    }
}

#[tokio::test]
async fn every_connection_moves_to_the_same_next_block() {
    let config = PoolConfig {
        job_interval: Duration::from_millis(300),
        jobs_per_prev_hash: 2,
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let addr = pool.local_addr();
    let (mut a, first_a) = miner(addr).await;
    // The second connection opens a little later, between the timer's ticks.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut b, first_b) = miner(addr).await;
    assert_eq!(first_a, first_b, "both start on the pool's tip");

    let (next_a, next_b) = tokio::join!(next_prev_hash(&mut a), next_prev_hash(&mut b));
    assert_ne!(next_a, first_a, "a new block has a new previous hash");
    assert_eq!(next_a, next_b, "every connection gets the same new block");
    // The block after that: the tip is a chain, not a per-connection value.
    let (after_a, after_b) = tokio::join!(next_prev_hash(&mut a), next_prev_hash(&mut b));
    assert_eq!(after_a, after_b);
    assert_eq!(after_a, sv2c_roles::work::sha256d(&next_a));
    pool.shutdown().await;
}
