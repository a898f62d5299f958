//! The `pool` program's budgets, set by its flags and its configuration file: channels
//! per connection and on the whole pool (refused with `too-many-channels`), connections
//! per address (closed on arrival), and worker identities (a key the file sets).
//!
//! `cargo test -p sv2c-examples --test pool_budgets` (the test builds the example).

use std::time::Duration;

use sv2c::prelude::*;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

mod common;
use common::Program;

/// Starts the pool with `args`, built now if it is not up to date (a binary from before
/// the budgets' flags would refuse them); returns it and the address it printed.
fn start(args: &[&str]) -> (Program, String) {
    common::build_example("pool");
    let mut pool = Program::start("pool", args, None);
    let addr = common::after(&pool.stdout_line("listening on "), "listening on ");
    (pool, addr)
}

type Conn = Framed<TcpStream, Sv2Codec<Message>>;

async fn next(conn: &mut Conn) -> Message {
    tokio::time::timeout(Duration::from_secs(20), conn.next())
        .await
        .expect("a message in time")
        .expect("the connection stays open")
        .unwrap()
}

async fn set_up(addr: &str) -> Conn {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut conn = Framed::new(tcp, Sv2Codec::<Message>::new());
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        endpoint_host: "127.0.0.1".parse().unwrap(),
        vendor: "sv2c-test".parse().unwrap(),
        ..Default::default()
    };
    conn.send(Message::from(setup)).await.unwrap();
    assert!(matches!(
        next(&mut conn).await,
        Message::SetupConnectionSuccess(_)
    ));
    conn
}

/// Asks for `n` channels; returns how many opened and the refusals' codes.
async fn open(conn: &mut Conn, n: u32) -> (usize, Vec<String>) {
    for request_id in 0..n {
        let open = OpenStandardMiningChannel {
            request_id,
            user_identity: "test".parse().unwrap(),
            nominal_hash_rate: 1.0,
            max_target: U256([0xff; 32]),
        };
        conn.send(Message::from(open)).await.unwrap();
    }
    let (mut opened, mut refused) = (0, Vec::new());
    while opened + refused.len() < n as usize {
        match next(conn).await {
            Message::OpenStandardMiningChannelSuccess(_) => opened += 1,
            Message::OpenMiningChannelError(e) => refused.push(e.error_code.to_string()),
            _ => {}
        }
    }
    (opened, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_programs_budgets_come_from_its_flags_and_file() {
    let dir = std::env::temp_dir().join(format!("sv2c-pool-budgets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pool.toml");
    std::fs::write(
        &file,
        "max_channels = 3\nmax_workers = 10\nworker_active = 60\n",
    )
    .unwrap();
    let (_pool, addr) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
        "--max-channels-per-connection",
        "2",
        "--max-connections-per-address",
        "2",
    ]);
    let too_many = |n| vec!["too-many-channels".to_owned(); n];
    // This connection's cap (2), then the pool's (3).
    let mut first = set_up(&addr).await;
    assert_eq!(open(&mut first, 3).await, (2, too_many(1)));
    let mut second = set_up(&addr).await;
    assert_eq!(open(&mut second, 2).await, (1, too_many(1)));
    // A third connection from 127.0.0.1 is closed on arrival.
    let mut third = TcpStream::connect(&addr).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), third.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
