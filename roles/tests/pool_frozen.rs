//! The `pool` and `mining_proxy --aggregate` programs, a miner submitting shares at a
//! steady rate through the proxy, and the pool frozen (SIGSTOP) for a while: the proxy
//! acknowledges at most `--max-unconfirmed-shares` shares the pool has not answered,
//! then its miners' answers wait for the pool's; once the pool runs again every share has
//! exactly one answer, and every share the proxy acknowledged is confirmed by the pool.
//!
//! The programs are the ones `cargo test --workspace` builds (`target/<profile>/examples/`);
//! without them (`cargo test -p sv2c-roles` alone) the test passes with a note, except
//! under CI. `SV2C_FREEZE_SECONDS` (default 3) sets how long the pool is stopped; the
//! numbers in `roles/README.md` come from a 10 s run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, SubmitSharesStandard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, timeout};

mod common;
use common::{connect, next, open_channel};

/// A program built beside this test, or `None` (with a note) outside CI.
fn program(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join(name);
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "{} missing: `cargo test --workspace` builds it",
        path.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{msg}");
    eprintln!("skipped: {msg}");
    None
}

async fn free_addr() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}

/// Starts `binary` with `args`, output to `log`; waits until it listens on `addr`.
async fn start(binary: &Path, args: &[&str], log: &Path, addr: SocketAddr) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(binary)
        .args(args)
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not start",
            binary.display()
        );
        sleep(Duration::from_millis(50)).await;
    }
    child
}

fn signal(child: &Child, sig: &str) {
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success()
    );
}

/// One scrape of `/metrics` at `addr`: the value of each `name{labels} value` line.
async fn scrape(addr: SocketAddr) -> Vec<(String, f64)> {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    tcp.read_to_string(&mut body).await.unwrap();
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

fn metric(m: &[(String, f64)], key: &str) -> u64 {
    m.iter()
        .find(|(k, _)| k == key)
        .map_or_else(|| panic!("no {key} in {m:?}"), |(_, v)| *v as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_pool_bounds_what_the_proxy_acknowledges() {
    let (Some(pool_bin), Some(proxy_bin)) = (program("pool"), program("mining_proxy")) else {
        return;
    };
    let freeze: u64 = std::env::var("SV2C_FREEZE_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("sv2c-frozen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pool_addr = free_addr().await;
    let mut pool = start(
        &pool_bin,
        &[
            "--listen",
            &pool_addr.to_string(),
            "--difficulty-bits",
            "0",
            "--job-interval",
            "3600",
        ],
        &dir.join("pool.log"),
        pool_addr,
    )
    .await;
    let (proxy_addr, metrics_addr) = (free_addr().await, free_addr().await);
    let max_unconfirmed = 256;
    let _proxy = start(
        &proxy_bin,
        &[
            "--upstream",
            &pool_addr.to_string(),
            "--listen",
            &proxy_addr.to_string(),
            "--aggregate",
            "--workers",
            "1",
            "--max-unconfirmed-shares",
            &max_unconfirmed.to_string(),
            "--metrics",
            &metrics_addr.to_string(),
        ],
        &dir.join("mining_proxy.log"),
        proxy_addr,
    )
    .await;

    let mut client = connect(proxy_addr, 0).await;
    client.send(Message::from(open_channel(1))).await.unwrap();
    let (mut channel, mut job) = (0, None);
    while job.is_none() {
        match next(&mut client).await {
            Message::OpenStandardMiningChannelSuccess(ok) => channel = ok.channel_id,
            Message::NewMiningJob(j) => job = Some(j),
            _ => {}
        }
    }
    let job = job.unwrap();
    let ntime = loop {
        if let Message::SetNewPrevHash(tip) = next(&mut client).await {
            break tip.min_ntime;
        }
    };
    let (mut sink, mut stream) = client.split::<Message>();
    // Answers: (sequence numbers covered by successes, errors).
    let rate = 100u32;
    let total = rate * (freeze as u32 + 2);
    let reader = tokio::spawn(async move {
        let (mut ok, mut refused) = (Vec::new(), Vec::new());
        let mut last = 0;
        while let Ok(Some(Ok(m))) = timeout(Duration::from_secs(40), stream.next()).await {
            match m {
                Message::SubmitSharesSuccess(s) => {
                    let n = s.new_submits_accepted_count;
                    assert_eq!(s.last_sequence_number, last + n, "answers in order");
                    ok.extend(last + 1..=s.last_sequence_number);
                    last = s.last_sequence_number;
                }
                Message::SubmitSharesError(e) => {
                    assert_eq!(e.sequence_number, last + 1, "answers in order");
                    refused.push(e);
                    last += 1;
                }
                _ => {}
            }
            if last == total {
                break;
            }
        }
        (ok, refused)
    });
    // 100 shares a second: 1 s, the pool frozen, then 1 s more.
    let started = Instant::now();
    let acked = "sv2c_proxy_shares_total{state=\"acknowledged\"}";
    let (mut at_stop, mut before_cont) = (0, 0);
    for seq in 1..=total {
        if seq == rate {
            // What the pool answered so far is in; then it stops, and only then is the
            // count read: a share the proxy acknowledged before the pool stopped (it may
            // lag behind the miner) can still be confirmed, and takes none of the bound.
            sleep(Duration::from_millis(100)).await;
            signal(&pool, "-STOP");
            at_stop = metric(&scrape(metrics_addr).await, acked);
        }
        if seq == rate * (freeze as u32 + 1) {
            before_cont = metric(&scrape(metrics_addr).await, acked);
            signal(&pool, "-CONT");
        }
        let share = SubmitSharesStandard {
            channel_id: channel,
            sequence_number: seq,
            job_id: job.job_id,
            nonce: seq,
            ntime,
            version: job.version,
        };
        sink.send(Message::from(share)).await.unwrap();
        let due = started + Duration::from_millis(u64::from(seq) * 1000 / u64::from(rate));
        tokio::time::sleep_until(due).await;
    }
    // Every share answered once the pool runs again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let m = loop {
        let m = scrape(metrics_addr).await;
        let unconfirmed = metric(&m, "sv2c_proxy_shares_unconfirmed");
        if unconfirmed == 0 || Instant::now() > deadline {
            break m;
        }
        sleep(Duration::from_millis(100)).await;
    };
    let (ok, refused) = timeout(Duration::from_secs(20), reader)
        .await
        .expect("every share answered")
        .unwrap();
    drop(sink);
    let acknowledged = metric(&m, acked);
    let confirmed = metric(&m, "sv2c_proxy_shares_total{state=\"confirmed\"}");
    let refused_after = metric(&m, "sv2c_proxy_shares_total{state=\"refused_after_ack\"}");
    let unconfirmed = metric(&m, "sv2c_proxy_shares_unconfirmed");
    signal(&pool, "-TERM");
    let _ = timeout(Duration::from_secs(10), pool.wait()).await;
    let during = before_cont - at_stop;
    println!(
        "pool frozen {freeze} s, {total} shares at {rate}/s, --max-unconfirmed-shares \
         {max_unconfirmed}: acknowledged ahead of the pool {acknowledged} ({during} while it \
         was frozen; {} shares' answers waited for the pool's), confirmed {confirmed}, \
         refused after acknowledgement {refused_after}, unanswered at the end {unconfirmed}",
        u64::from(total) - acknowledged
    );
    assert_eq!(ok.len() as u32, total, "refused: {refused:?}");
    assert_eq!(unconfirmed, 0);
    assert_eq!(refused_after, 0);
    assert_eq!(confirmed, acknowledged);
    // While the pool was frozen the proxy acknowledged the bound's worth of shares, no
    // more; the other shares of the freeze waited for the pool's answer.
    assert!(
        during <= max_unconfirmed,
        "{during} acknowledged while frozen"
    );
    let frozen_shares = u64::from(rate) * freeze;
    if frozen_shares > max_unconfirmed + 10 {
        assert!(
            during + 10 >= max_unconfirmed,
            "{during} acknowledged while frozen"
        );
        assert!(u64::from(total) - acknowledged >= frozen_shares - max_unconfirmed - 10);
    }
}
