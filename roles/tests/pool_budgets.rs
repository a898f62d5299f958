//! The pool's budgets across connections: channels per connection and on the whole pool
//! (refused with `too-many-channels`, honest miners included, while it is full), the cap
//! per peer address, the worker ledger that keeps active workers however many names an
//! attacker invents; and a flood of channels from many connections, with the pool's
//! memory before, during and after (the flood driver: small here, full size against the
//! `pool` program with `SV2C_FLOOD_ADDR`, see [`flood_of_channels`]).

use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{Message, SubmitSharesStandard};
use sv2c_binary::tlv::{UserIdentity, WithTlvs};
use sv2c_roles::pool::{Pool, PoolConfig, TOO_MANY_CHANNELS};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};

mod common;
use common::{Client, closed_within, connect, next, open_channel, set_up_with_channels};
mod mining;
use mining::{mine, negotiated_client, open_extended};

/// Sends `n` channel requests (ids from `first_id`) and reads their answers; returns the
/// channels opened and the refusals' codes.
async fn open_many(client: &mut Client, first_id: u32, n: u32) -> (Vec<u32>, Vec<String>) {
    for r in first_id..first_id + n {
        client.send(Message::from(open_channel(r))).await.unwrap();
    }
    let (mut opened, mut refused) = (Vec::new(), Vec::new());
    while opened.len() + refused.len() < n as usize {
        match next(client).await {
            Message::OpenStandardMiningChannelSuccess(s) => opened.push(s.channel_id),
            Message::OpenMiningChannelError(e) => refused.push(e.error_code.to_string()),
            _ => {}
        }
    }
    (opened, refused)
}

/// Whether `client`'s share on `channel_id` is answered (success or error).
async fn answered(client: &mut Client, channel_id: u32) -> bool {
    let share = SubmitSharesStandard {
        channel_id,
        sequence_number: 1,
        job_id: 1,
        nonce: 1,
        ntime: 0,
        version: 0x2000_0000,
    };
    if client.send(Message::from(share)).await.is_err() {
        return false;
    }
    timeout(Duration::from_secs(5), async {
        loop {
            match next(client).await {
                Message::SubmitSharesSuccess(_) | Message::SubmitSharesError(_) => return true,
                _ => {}
            }
        }
    })
    .await
    .unwrap_or(false)
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_channel_budgets_hold_across_connections() {
    let config = PoolConfig {
        max_channels: 10,
        max_channels_per_connection: 6,
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let addr = pool.local_addr();
    let (mut honest, ids) = set_up_with_channels(TcpStream::connect(addr).await.unwrap(), 1).await;
    let too_many = |n: usize| vec![TOO_MANY_CHANNELS.to_owned(); n];

    // One connection: its own cap first (6 of 10).
    let mut first = connect(addr, 0).await;
    let (opened, refused) = open_many(&mut first, 0, 10).await;
    assert_eq!((opened.len(), refused), (6, too_many(4)));
    // Another: the pool's budget (3 left of 10).
    let mut second = connect(addr, 0).await;
    let (opened, refused) = open_many(&mut second, 0, 10).await;
    assert_eq!((opened.len(), refused), (3, too_many(7)));
    // While it is full, an honest miner's new channel is refused the same way, and the
    // channel it holds is served.
    let (opened, refused) = open_many(&mut honest, 100, 1).await;
    assert_eq!((opened.len(), refused), (0, too_many(1)));
    assert!(answered(&mut honest, ids[0]).await);
    let stats = pool.stats();
    assert_eq!((stats.channels_open, stats.channels_refused), (10, 12));

    // The flooder leaves: its places are free again.
    drop(second);
    until("the second connection's channels closed", || {
        pool.stats().channels_open == 7
    })
    .await;
    let (opened, refused) = open_many(&mut honest, 101, 1).await;
    assert_eq!((opened.len(), refused.len()), (1, 0));
    pool.shutdown().await;
}

#[tokio::test]
async fn connections_beyond_the_per_address_cap_are_closed_on_arrival() {
    let config = PoolConfig {
        max_connections_per_address: Some(2),
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let addr = pool.local_addr();
    let first = connect(addr, 0).await;
    let _second = connect(addr, 0).await;
    let third = TcpStream::connect(addr).await.unwrap();
    assert!(closed_within(third, Duration::from_secs(2)).await.is_some());
    assert_eq!(pool.stats().connections_refused_per_address, 1);
    drop(first);
    until("the first connection closed", || {
        pool.stats().connections_open == 1
    })
    .await;
    let _again = connect(addr, 0).await;
    pool.shutdown().await;
}

/// Mines and submits share `seq` on `c` tagged with the `user_identity` `name`.
async fn submit_as(client: &mut Client, c: &mining::Channel, seq: u32, name: &str) {
    let tlv = UserIdentity::try_from(name).unwrap().to_tlv().to_buf();
    client
        .send(WithTlvs::new(mine(c, seq)).with(tlv))
        .await
        .unwrap();
    loop {
        match next(client).await {
            Message::SubmitSharesSuccess(_) => return,
            Message::SubmitSharesError(e) => panic!("share {seq} refused: {e:?}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_worker_ledger_keeps_active_workers_and_evicts_idle_ones() {
    // Every identity seen in the last 10 minutes is active: made-up names overflow.
    let config = PoolConfig {
        max_workers: 3,
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let mut client = negotiated_client(pool.local_addr()).await;
    let c = open_extended(&mut client, "rig").await;
    submit_as(&mut client, &c, 0, "honest").await;
    for seq in 1..=20 {
        submit_as(&mut client, &c, seq, &format!("made-up-{seq}")).await;
    }
    submit_as(&mut client, &c, 21, "honest").await;
    let workers = pool.workers();
    let names: Vec<_> = workers
        .iter()
        .map(|(n, w)| (n.as_str(), w.shares_accepted))
        .collect();
    assert_eq!(names, [("honest", 2), ("made-up-1", 1), ("made-up-2", 1)]);
    assert_eq!(pool.workers_overflow().shares_accepted, 18);
    assert_eq!(pool.workers_evicted(), 0);
    pool.shutdown().await;

    // Nobody counts as active: the least recently seen makes room, its counts overflow.
    let config = PoolConfig {
        max_workers: 2,
        worker_active: Duration::ZERO,
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let mut client = negotiated_client(pool.local_addr()).await;
    let c = open_extended(&mut client, "rig").await;
    // (The recency order within one second of the pool's clock is that of first sight:
    // the unit tests of `pool::workers` show a worker seen again later moving up.)
    for (seq, name) in ["a", "b", "c"].into_iter().enumerate() {
        submit_as(&mut client, &c, seq as u32, name).await;
    }
    let names: Vec<_> = pool.workers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b", "c"]);
    assert_eq!(pool.workers_overflow().shares_accepted, 1);
    assert_eq!(pool.workers_evicted(), 1);
    pool.shutdown().await;
}

// ===== the flood =====

/// A line of `/proc/PID/status` in KiB (`VmRSS:`, `RssAnon:`, `RssFile:`).
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An honest miner: one channel, reading its jobs and sending a share a second (answered
/// with an error: it is not mined) until `check` changes, then one share, which must be
/// answered.
async fn honest_miner(addr: std::net::SocketAddr, mut check: watch::Receiver<bool>) -> bool {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, ids) = set_up_with_channels(tcp, 1).await;
    let mut every_second = tokio::time::interval(Duration::from_secs(1));
    let mut seq = 0;
    loop {
        tokio::select! {
            _ = check.changed() => break,
            _ = every_second.tick() => {
                seq += 1;
                let share = SubmitSharesStandard {
                    channel_id: ids[0],
                    sequence_number: seq,
                    job_id: 1,
                    nonce: seq,
                    ntime: 0,
                    version: 0x2000_0000,
                };
                if client.send(Message::from(share)).await.is_err() {
                    return false;
                }
            }
            m = futures::StreamExt::next(&mut client) => {
                if !matches!(m, Some(Ok(_))) {
                    return false;
                }
            }
        }
    }
    answered(&mut client, ids[0]).await
}

/// An attacker: opens channels `batch` at a time until one is refused, reports how many
/// it opened, then holds them (reading its jobs) until `release` changes, and closes.
async fn attacker(
    addr: std::net::SocketAddr,
    batch: u32,
    opened: tokio::sync::mpsc::Sender<usize>,
    mut release: watch::Receiver<bool>,
) {
    let mut client = connect(addr, 0).await;
    let mut total = 0;
    let mut next_id = 0;
    loop {
        let (ok, refused) = open_many(&mut client, next_id, batch).await;
        next_id += batch;
        total += ok.len();
        if !refused.is_empty() {
            assert!(
                refused.iter().all(|c| c == TOO_MANY_CHANNELS),
                "{refused:?}"
            );
            break;
        }
    }
    opened.send(total).await.unwrap();
    loop {
        tokio::select! {
            _ = release.changed() => return,
            m = futures::StreamExt::next(&mut client) => {
                if !matches!(m, Some(Ok(_))) {
                    return;
                }
            }
        }
    }
}

/// The flood driver. Honest miners (`SV2C_FLOOD_HONEST`, one channel each, a share a
/// second) connect and run for `SV2C_FLOOD_WARMUP_SECS`; then
/// `SV2C_FLOOD_CONNECTIONS` connections each open channels until refused, hold them, and
/// close; every honest miner's share must be answered afterwards. Prints the server's RSS
/// under the honest load, under the flood, and `SV2C_FLOOD_SETTLE_SECS` after the last
/// attacker closed.
///
/// By default it runs small against a pool in this process (a budget of 2,000 channels,
/// 20 attackers) and checks the budget held. With `SV2C_FLOOD_ADDR=IP:PORT` and
/// `SV2C_FLOOD_PID=PID` it floods that `pool` (or `mining_proxy`) program at full size
/// (200 attackers, 50 honest miners by default) and checks its RSS after the flood is at
/// most 1.1 times that under the honest load. `SV2C_FLOOD_PID` may list several
/// processes (`PROXY,POOL`): each one's RSS is printed and checked.
///
/// ```text
/// cargo build --release --example pool
/// target/release/examples/pool --listen 127.0.0.1:34254 & PID=$!
/// SV2C_FLOOD_ADDR=127.0.0.1:34254 SV2C_FLOOD_PID=$PID \
///     cargo test -p sv2c-roles --test pool_budgets flood -- --nocapture
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_of_channels() {
    let external = std::env::var("SV2C_FLOOD_ADDR").ok();
    let (pool, addr, pids) = match &external {
        Some(addr) => {
            let pids: Vec<u32> = std::env::var("SV2C_FLOOD_PID")
                .unwrap_or_default()
                .split(',')
                .filter_map(|p| p.trim().parse().ok())
                .collect();
            (
                None,
                addr.parse().expect("SV2C_FLOOD_ADDR is IP:PORT"),
                pids,
            )
        }
        None => {
            let config = PoolConfig {
                max_channels: 2_000,
                job_interval: Duration::from_millis(500),
                ..PoolConfig::default()
            };
            let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
            let addr = pool.local_addr();
            (Some(pool), addr, vec![std::process::id()])
        }
    };
    let full = external.is_some();
    let honest_n = env_or("SV2C_FLOOD_HONEST", if full { 50 } else { 10 });
    let attackers_n = env_or("SV2C_FLOOD_CONNECTIONS", if full { 200 } else { 20 });
    let batch = env_or("SV2C_FLOOD_BATCH", if full { 500 } else { 50 });
    let settle = Duration::from_secs(env_or("SV2C_FLOOD_SETTLE_SECS", if full { 10 } else { 0 }));
    // Each process's RSS, and of it the anonymous memory and the file pages (its code).
    let rss = || -> Vec<[u64; 3]> {
        let kib = |p, field| status_kib(p, field).unwrap_or(0);
        pids.iter()
            .map(|&p| [kib(p, "VmRSS:"), kib(p, "RssAnon:"), kib(p, "RssFile:")])
            .collect()
    };

    let (check, check_rx) = watch::channel(false);
    let honest: Vec<_> = (0..honest_n)
        .map(|_| tokio::spawn(honest_miner(addr, check_rx.clone())))
        .collect();
    let warmup = env_or("SV2C_FLOOD_WARMUP_SECS", if full { 12 } else { 1 });
    sleep(Duration::from_secs(warmup)).await;
    let before = rss();

    let started = Instant::now();
    let (release, release_rx) = watch::channel(false);
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel(attackers_n);
    let attackers: Vec<_> = (0..attackers_n)
        .map(|_| {
            let (tx, rx) = (opened_tx.clone(), release_rx.clone());
            tokio::spawn(attacker(addr, batch, tx, rx))
        })
        .collect();
    let mut flood_channels = 0;
    for _ in 0..attackers_n {
        flood_channels += opened_rx.recv().await.expect("an attacker's count");
    }
    let flooded_in = started.elapsed();
    sleep(Duration::from_secs(1)).await;
    let during = rss();
    if let Some(pool) = &pool {
        let s = pool.stats();
        assert_eq!(s.channels_open, 2_000, "the pool's budget, full");
        assert_eq!(flood_channels, 2_000 - honest_n);
        // Pool and clients in one process: 2,000 channels cost a few MiB on both sides;
        // without the budget these connections would open 20 × 32,768 (about 650 MiB).
        assert!(
            during[0][0] < before[0][0] + 64 * 1024,
            "{during:?} KiB under the flood"
        );
    }

    let _ = release.send(true);
    for a in attackers {
        a.await.unwrap();
    }
    if let Some(pool) = &pool {
        until("the attackers' channels closed", || {
            pool.stats().channels_open == honest_n as u64
        })
        .await;
    }
    sleep(settle).await;
    let after = rss();
    let _ = check.send(true);
    for h in honest {
        assert!(
            h.await.unwrap(),
            "an honest miner was not served after the flood"
        );
    }
    println!(
        "flood: {honest_n} honest miners, {attackers_n} connections opened {flood_channels} \
         channels in {flooded_in:.1?}"
    );
    for (i, &pid) in pids.iter().enumerate() {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let [b, d, a] = [before[i], during[i], after[i]];
        println!(
            "  {} (pid {pid}): RSS {} KiB before, {} KiB during, {} KiB {settle:?} after \
             the last attacker closed ({:.2}x before); anonymous {} / {} / {} KiB, file \
             {} / {} / {} KiB",
            name.trim(),
            b[0],
            d[0],
            a[0],
            a[0] as f64 / b[0].max(1) as f64,
            b[1],
            d[1],
            a[1],
            b[2],
            d[2],
            a[2],
        );
    }
    if full {
        // 1.1 times, and `SV2C_FLOOD_SLACK_KIB` (0 unless told). The `pool` and
        // `mining_proxy` programs run without glibc's per-thread caches of freed chunks
        // (their pages would stay: BENCHMARKS.md); a server run with them, or another
        // allocator's caches, may need some slack.
        let slack = env_or("SV2C_FLOOD_SLACK_KIB", 0u64) as f64;
        for (i, &pid) in pids.iter().enumerate() {
            let (before, after) = (before[i][0], after[i][0]);
            assert!(
                after as f64 <= 1.1 * before as f64 + slack,
                "pid {pid}: RSS {after} KiB after the flood, {before} KiB before"
            );
        }
    }
    if let Some(pool) = pool {
        pool.shutdown().await;
    }
}
