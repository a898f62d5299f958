//! Measurements behind the proxy's hardening notes (README, "Running against real peers"):
//! `#[ignore]`d because they take seconds and print numbers rather than assert budgets
//! tightly. Run with
//! `cargo test --release -p sv2c-roles --test proxy_measurements -- --ignored --nocapture --test-threads 1`.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, SetupConnection, SubmitSharesStandard};
use sv2c_binary::{MessageType, Protocol, Str0255};
use sv2c_codec::{Header, Sv2Codec};
use sv2c_roles::mock_pool::{MockPool, MockPoolConfig};
use sv2c_roles::proxy::routing::ChannelMap;
use sv2c_roles::proxy::{Proxy, ProxyConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

/// 200,000 miners open a channel in the pool's one group and leave; the cost of 40,000
/// opens must not grow with the number departed (it did when groups kept every member).
#[test]
#[ignore = "measurement"]
fn churn_of_200k_miners_keeps_open_cost_flat() {
    let mut map = ChannelMap::new();
    let mut blocks = Vec::new();
    for block in 0..5u64 {
        let started = Instant::now();
        for i in 0..40_000u64 {
            let conn = block * 40_000 + i;
            map.add_connection(conn, ());
            let r = map.begin_open(conn, 1).unwrap();
            map.complete_open(r, conn as u32 + 1, 7).unwrap();
            map.remove_connection(conn);
        }
        blocks.push(started.elapsed());
    }
    eprintln!("40,000 churned opens per block: {blocks:?}");
    assert_eq!(map.group_sizes(), (0, 0));
    let (first, last) = (blocks[0], blocks[4]);
    assert!(last < first * 3, "open cost grew: {blocks:?}");
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// 500 miners each hold 65,535 bytes of a 65,536-byte frame: the proxy's memory while
/// they hold it and after the partial-frame timeout has cut them off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement"]
async fn rss_with_500_held_half_frames() {
    let pool = MockPool::bind("127.0.0.1:0", MockPoolConfig::default())
        .await
        .unwrap();
    let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProxyConfig {
        partial_frame_timeout: Duration::from_secs(3),
        ..ProxyConfig::default()
    };
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();
    let addr = proxy.local_addr();
    let before = rss_kib();
    // Two rounds: the second shows whether memory freed after the first is reused (the
    // allocator keeps freed pages mapped, so RSS does not drop back by itself).
    for round in 1..=2 {
        let mut held = Vec::new();
        for _ in 0..500 {
            let mut framed = Framed::new(TcpStream::connect(addr).await.unwrap(), Sv2Codec::new());
            framed
                .send(SetupConnection {
                    protocol: Protocol::Mining,
                    min_version: 2,
                    max_version: 2,
                    flags: 0,
                    endpoint_host: Str0255::default(),
                    endpoint_port: 0,
                    vendor: Str0255::try_from("rss").unwrap(),
                    hardware_version: Str0255::default(),
                    firmware: Str0255::default(),
                    device_id: Str0255::default(),
                })
                .await
                .unwrap();
            assert!(matches!(
                framed.next().await.unwrap().unwrap(),
                Message::SetupConnectionSuccess(_)
            ));
            let mut tcp = framed.into_inner();
            let header = Header::new(0, SubmitSharesStandard::MSG_TYPE, 65_536 - 6).unwrap();
            tcp.write_all(&header.to_bytes()).await.unwrap();
            tcp.write_all(&vec![0u8; 65_535 - 6]).await.unwrap();
            held.push(tcp);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let during = rss_kib();
        let open_during = proxy.stats().connections_open;
        let started = Instant::now();
        while proxy.stats().connections_open > 0 && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let cut_after = started.elapsed();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_kib();
        eprintln!(
            "round {round}: RSS before {before} KiB, with {open_during} half frames held {during} KiB, after the timeout ({} open, {cut_after:?} later) {after} KiB",
            proxy.stats().connections_open
        );
        assert_eq!(proxy.stats().connections_open, 0);
        drop(held);
    }
    proxy.shutdown().await;
    pool.shutdown().await;
}
