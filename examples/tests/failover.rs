//! Failover between ordered upstreams, through the programs as an operator starts them:
//! two `pool` programs, `mining_proxy --upstream A --upstream B` in front of them, and 50
//! simulated miners on the proxy. The preferred pool is killed (SIGKILL): shares are
//! accepted by the second within 2 s; the first comes back: the proxy returns to it once
//! it has answered for the hold time, and not before. The metrics and `/ready` name the
//! upstream in use. In the aggregating mode no miner's connection closes on either switch
//! (the proxy moves their channels to the new pool); in the forwarding mode every miner
//! reconnects. A stopped pool (SIGSTOP) is left after the silence timeout.
//!
//! The example binaries are the ones `cargo test` builds with the tests (`cargo test -p
//! sv2c-examples --test failover --example pool --example mining_proxy` for this file
//! alone: `--test failover` by itself does not rebuild them).

mod common;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use common::{Program, after, get, metric};
use futures::{SinkExt, StreamExt};
use sv2c_roles::miner::{MinerConfig, run_miner};
use sv2c_sv1::{Authorize, Body, Id, Subscribe, Sv1Codec, Sv1Item, Sv1Message};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// Simulated miners on the proxy.
const MINERS: usize = 50;
/// How long the preferred pool must answer before the proxy returns to it.
const HOLD: Duration = Duration::from_secs(1);
/// The longest a failover may take, from the kill to a share accepted by the second pool.
const FAILOVER_LIMIT: Duration = Duration::from_secs(2);

/// A `pool` program listening on `listen`: the program, its miners' address and its
/// metrics address.
fn pool(listen: &str) -> (Program, String, String) {
    let args = [
        "--listen",
        listen,
        "--difficulty-bits",
        "0",
        "--metrics",
        "127.0.0.1:0",
    ];
    let mut pool = Program::start("pool", &args, None);
    let addr = after(&pool.stdout_line("listening on "), "listening on ");
    let metrics = after(&pool.stderr_line("metrics at http://"), "http://");
    (pool, addr, metrics)
}

/// Sends `signal` (`STOP`, `CONT`) to `program`.
fn signal(program: &Program, signal: &str) {
    let id = program.child.id().to_string();
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &id])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Kills `program` (SIGKILL) and reaps it.
fn kill(program: &mut Program) {
    let _ = program.child.kill();
    let _ = program.child.wait();
}

/// `GET /ready` on `addr`: the status line and the body.
fn ready(addr: &str) -> (String, String) {
    let answer = get(addr, "/ready");
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .unwrap_or_default()
        .1
        .to_owned();
    (status, body)
}

fn accepted(pool_metrics: &str) -> u64 {
    metric(pool_metrics, "sv2c_shares_accepted_total")
}

fn active(proxy_metrics: &str, upstream: &str) -> u64 {
    metric(
        proxy_metrics,
        &format!("sv2c_proxy_upstream_active{{upstream=\"{upstream}\"}}"),
    )
}

/// Waits until `check` holds (polled every 20 ms) and returns how long that took;
/// panics after `limit`.
fn until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// Miners on `proxy`, on a runtime of their own, until `stop`: each connects (again
/// after its connection ends, retrying a refused dial every 20 ms) and mines;
/// `reconnects` counts the connections that ended on the miner's side (closed by the
/// proxy, or failed) before `stop`: each is followed by a new one.
fn miners(
    proxy: &str,
    stop: &Arc<AtomicBool>,
    reconnects: &Arc<AtomicU64>,
) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for k in 0..MINERS {
        let (proxy, stop, reconnects) = (proxy.to_owned(), stop.clone(), reconnects.clone());
        runtime.spawn(async move {
            while !stop.load(Relaxed) {
                let Ok(tcp) = TcpStream::connect(&proxy).await else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let config = MinerConfig {
                    user: format!("miner{k}"),
                    duration: Duration::from_secs(60),
                    window: 1,
                    ..MinerConfig::default()
                };
                let mine = run_miner(tcp, config);
                tokio::select! {
                    _ = mine => {
                        if !stop.load(Relaxed) {
                            reconnects.fetch_add(1, Relaxed);
                        }
                    }
                    _ = async {
                        while !stop.load(Relaxed) {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    } => {}
                }
            }
        });
    }
    runtime
}

/// The proxy in front of pools `a` and `b` (in that order) with `flags`: the program, its
/// metrics address and the address miners connect to.
fn proxy(a: &str, b: &str, flags: &[&str]) -> (Program, String, String) {
    let hold = HOLD.as_secs_f64().to_string();
    let mut args = vec![
        "--upstream",
        a,
        "--upstream",
        b,
        "--upstream-return-hold",
        &hold,
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--metrics",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(flags);
    let mut proxy = Program::start("mining_proxy", &args, None);
    let metrics = after(&proxy.stderr_line("metrics at http://"), "http://");
    let addr = after(
        &proxy.stderr_line("miners connect to "),
        "miners connect to ",
    );
    (proxy, metrics, addr)
}

/// The preferred pool killed, then back, with the proxy in `mode_flags`; with
/// `miners_kept`, no miner's connection may end on either switch. Returns the time from
/// the kill to the first share the second pool accepted, and the miners' reconnections.
fn failover_and_return(mode_flags: &[&str], miners_kept: bool) -> (Duration, u64) {
    let (mut first, a, a_metrics) = pool("127.0.0.1:0");
    let (mut second, b, b_metrics) = pool("127.0.0.1:0");
    let (mut proxy, proxy_metrics, proxy_addr) = proxy(&a, &b, mode_flags);
    assert_eq!(active(&proxy_metrics, &a), 1);
    assert_eq!(active(&proxy_metrics, &b), 0);
    assert_eq!(
        ready(&proxy_metrics),
        ("HTTP/1.1 200 OK".into(), format!("ready: upstream {a}\n"))
    );

    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicU64::new(0));
    let miners = miners(&proxy_addr, &stop, &reconnects);
    let limit = Duration::from_secs(20);
    until(limit, "shares on the first pool", || {
        accepted(&a_metrics) > 0
    });
    assert_eq!(accepted(&b_metrics), 0);

    // The preferred pool dies: shares reach the second within the limit.
    kill(&mut first);
    let failover = until(limit, "shares on the second pool", || {
        accepted(&b_metrics) > 0
    });
    let after_failover = reconnects.load(Relaxed);
    assert_eq!(active(&proxy_metrics, &a), 0);
    assert_eq!(active(&proxy_metrics, &b), 1);
    assert_eq!(
        ready(&proxy_metrics),
        ("HTTP/1.1 200 OK".into(), format!("ready: upstream {b}\n"))
    );
    assert_eq!(
        metric(&proxy_metrics, "sv2c_proxy_upstream_switches_total"),
        1
    );

    // The preferred pool comes back on its address: the proxy returns after the hold.
    let (mut first, _, a_metrics) = pool(&a);
    let back = until(limit, "shares on the first pool again", || {
        accepted(&a_metrics) > 0
    });
    assert!(back >= HOLD, "returned after {back:?}, before the hold");
    assert_eq!(active(&proxy_metrics, &a), 1);
    assert_eq!(active(&proxy_metrics, &b), 0);
    assert_eq!(
        metric(&proxy_metrics, "sv2c_proxy_upstream_switches_total"),
        2
    );
    if miners_kept {
        // Every miner still on its first connection, mining on the first pool again.
        let before = accepted(&a_metrics);
        until(limit, "more shares on the first pool", || {
            accepted(&a_metrics) > before + MINERS as u64
        });
        assert_eq!(after_failover, 0, "miners reconnected on the failover");
        assert_eq!(
            reconnects.load(Relaxed),
            0,
            "miners reconnected on the return"
        );
    }

    stop.store(true, Relaxed);
    miners.shutdown_timeout(Duration::from_secs(1));
    proxy.stop();
    first.stop();
    second.stop();
    eprintln!(
        "{mode_flags:?}: shares on the second pool {failover:?} after the kill; back on the \
         first {back:?} after it listened; {} miner reconnections",
        reconnects.load(Relaxed)
    );
    assert!(failover < FAILOVER_LIMIT, "failover took {failover:?}");
    (failover, reconnects.load(Relaxed))
}

/// Forwarding mode (the default): miners are told to reconnect to the proxy and are
/// served by the second pool.
#[test]
fn forwarding_proxy_fails_over_to_the_second_pool_and_returns() {
    let (_, reconnects) = failover_and_return(&[], false);
    assert!(reconnects >= MINERS as u64, "{reconnects}");
}

/// Aggregating mode: the same failover and return, and the 50 miners keep their
/// connections throughout: the proxy moves their channels to the second pool
/// (`SetExtranoncePrefix`, `SetTarget`, its jobs) and back.
#[test]
fn aggregating_proxy_fails_over_and_returns_without_losing_a_miner() {
    let (failover, reconnects) = failover_and_return(&["--aggregate"], true);
    assert!(failover < FAILOVER_LIMIT, "failover took {failover:?}");
    assert_eq!(reconnects, 0);
}

/// The preferred pool stopped (SIGSTOP: its kernel still acknowledges the proxy's bytes,
/// nothing answers): after the silence timeout the proxy moves to the second pool, and
/// once the first runs again (SIGCONT) and has answered for the hold, back to it.
#[test]
fn a_stopped_pool_is_left_after_the_silence_timeout() {
    stopped_pool(&[]);
}

/// The same in the aggregating mode, where no miner's connection ends.
#[test]
fn an_aggregating_proxy_leaves_a_stopped_pool_without_losing_a_miner() {
    assert_eq!(stopped_pool(&["--aggregate"]), 0);
}

/// The preferred pool stopped, then running again, with the proxy in `mode_flags`;
/// returns the miners' reconnections.
fn stopped_pool(mode_flags: &[&str]) -> u64 {
    const SILENCE: Duration = Duration::from_millis(500);
    let (mut first, a, a_metrics) = pool("127.0.0.1:0");
    let (mut second, b, b_metrics) = pool("127.0.0.1:0");
    let silence = SILENCE.as_secs_f64().to_string();
    let mut flags = vec!["--upstream-silence-timeout", &silence];
    flags.extend_from_slice(mode_flags);
    let (mut proxy, proxy_metrics, proxy_addr) = proxy(&a, &b, &flags);
    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicU64::new(0));
    let miners = miners(&proxy_addr, &stop, &reconnects);
    let limit = Duration::from_secs(20);
    until(limit, "shares on the first pool", || {
        accepted(&a_metrics) > 0
    });

    signal(&first, "STOP");
    let failover = until(limit, "shares on the second pool", || {
        accepted(&b_metrics) > 0
    });
    assert_eq!(active(&proxy_metrics, &b), 1);
    // The probes of the stopped pool get no answer: the proxy stays.
    std::thread::sleep(HOLD * 2);
    assert_eq!(active(&proxy_metrics, &b), 1);

    // Read once it runs again (the proxy stays away for the hold).
    signal(&first, "CONT");
    let before = accepted(&a_metrics);
    let back = until(limit, "the first pool in use again", || {
        active(&proxy_metrics, &a) == 1
    });
    until(limit, "shares on the first pool again", || {
        accepted(&a_metrics) > before
    });
    assert!(back >= HOLD, "returned after {back:?}, before the hold");

    stop.store(true, Relaxed);
    miners.shutdown_timeout(Duration::from_secs(1));
    proxy.stop();
    first.stop();
    second.stop();
    eprintln!(
        "SIGSTOP {mode_flags:?}: shares on the second pool {failover:?} after the stop \
         (silence timeout {SILENCE:?}); back on the first {back:?} after SIGCONT; {} miner \
         reconnections",
        reconnects.load(Relaxed)
    );
    assert!(
        failover < SILENCE + FAILOVER_LIMIT,
        "failover took {failover:?}"
    );
    reconnects.load(Relaxed)
}

/// An SV1 session on `addr`: `mining.extranonce.subscribe` first if `extranonce_changes`,
/// then `mining.subscribe` and `mining.authorize`; returns the connection and the
/// `extranonce1` it was given, once its first `mining.notify` came.
async fn sv1_session(
    addr: &str,
    extranonce_changes: bool,
) -> (Framed<TcpStream, Sv1Codec>, String) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut sv1 = Framed::new(tcp, Sv1Codec::new());
    if extranonce_changes {
        let subscribe = Sv1Message::request(1, Body::ExtranonceSubscribe);
        sv1.send(subscribe).await.unwrap();
    }
    let subscribe = Sv1Message::request(2, Body::Subscribe(Subscribe::default()));
    sv1.send(subscribe).await.unwrap();
    let authorize = Authorize {
        name: "w".into(),
        password: "x".into(),
    };
    sv1.send(Sv1Message::request(3, Body::Authorize(authorize)))
        .await
        .unwrap();
    let mut extranonce1 = None;
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), sv1.next()).await;
        let Ok(Some(Ok(Sv1Item::Message(m)))) = item else {
            panic!("no job: {item:?}");
        };
        match m.body {
            Body::Response(r) if m.id == Id::Num(2) => {
                extranonce1 = Some(r.result[1].as_str().unwrap().to_owned());
            }
            Body::Notify(_) if extranonce1.is_some() => break,
            _ => {}
        }
    }
    (sv1, extranonce1.unwrap())
}

/// What an SV1 miner hears after its pool is killed: `mining.set_extranonce` then a new
/// job (`Ok((extranonce1, extranonce2_size))`), or `client.reconnect` and the end of the
/// connection (`Err(true)`).
async fn after_the_kill(sv1: &mut Framed<TcpStream, Sv1Codec>) -> Result<(String, usize), bool> {
    let mut moved = None;
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), sv1.next()).await;
        let Ok(Some(Ok(item))) = item else {
            return Err(false);
        };
        let Sv1Item::Message(m) = item else {
            continue;
        };
        match m.body {
            Body::SetExtranonce(e) => {
                moved = Some((hex::encode(e.extranonce1.as_bytes()), e.extranonce2_size))
            }
            Body::Notify(n) if moved.is_some() => {
                assert!(n.clean_jobs, "the new pool's first job starts clean");
                return Ok(moved.unwrap());
            }
            Body::Reconnect(_) => {
                // The proxy closes the connection after it.
                let end = tokio::time::timeout(Duration::from_secs(5), async {
                    while let Some(Ok(_)) = sv1.next().await {}
                })
                .await;
                return Err(end.is_ok());
            }
            _ => {}
        }
    }
}

/// SV1 miners of an aggregating proxy whose pool is killed: the one that subscribed to
/// extranonce changes gets `mining.set_extranonce` (a new `extranonce1`, the same
/// `extranonce2_size`) and the second pool's jobs on the same connection; the other gets
/// `client.reconnect` and is disconnected.
#[test]
fn sv1_miners_get_set_extranonce_or_client_reconnect() {
    let (mut first, a, _) = pool("127.0.0.1:0");
    let (mut second, b, b_metrics) = pool("127.0.0.1:0");
    let mut proxy = Program::start(
        "mining_proxy",
        &[
            "--upstream",
            &a,
            "--upstream",
            &b,
            "--aggregate",
            "--listen",
            "127.0.0.1:0",
            "--sv1-listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ],
        None,
    );
    let sv1_addr = after(&proxy.stderr_line("SV1 miners to "), "SV1 miners to ");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (mut subscribed, e1) = sv1_session(&sv1_addr, true).await;
        let (mut plain, _) = sv1_session(&sv1_addr, false).await;
        kill(&mut first);
        let (moved_e1, e2_size) = after_the_kill(&mut subscribed).await.unwrap();
        // The two pools are alike and grant the proxy the same prefix: the same bytes.
        assert_eq!(moved_e1.len(), e1.len());
        assert_eq!(e2_size, 8);
        assert_eq!(after_the_kill(&mut plain).await, Err(true));
    });
    // The proxy's channel is on the second pool.
    assert_eq!(metric(&b_metrics, "sv2c_channels_open"), 1);
    proxy.stop();
    second.stop();
}
