//! Stratum V1 miners through the programs: the `pool` program, the `mining_proxy`
//! program in front of it (`--aggregate --sv1-listen`), and SV1 test miners (written
//! with `sv2c-sv1`, real double SHA-256 at an easy target) in each firmware's message
//! order. Every share is answered `true`; those meeting the pool's target reach the pool
//! and are counted for the miner's worker name (a 70-byte one fitted to 32 bytes).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_channels::pow as work;
use sv2c_channels::pow::difficulty_to_target;
use sv2c_sv1::{
    Authorize, Body, Configure, Id, Submit, Subscribe, SuggestDifficulty, Sv1Codec, Sv1Item,
    Sv1Message, VERSION_ROLLING,
};
use tokio::net::TcpStream;
use tokio::process::Child;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::codec::Framed;

mod common;
#[allow(dead_code)] // the SRI helpers this test does not use
mod sri;

/// The pool's shares need 8 leading zero bits.
const POOL_BITS: u32 = 8;
/// Shares each miner submits.
const SHARES: usize = 6;

/// The message orders firmware uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// subscribe, authorize (cgminer).
    Standard,
    /// suggest_difficulty (with an id), subscribe, authorize (WhatsMiner).
    SuggestFirst,
    /// configure (version rolling), subscribe, authorize (Antminer, Bitaxe).
    ConfigureFirst,
}

/// What a miner saw: shares answered `true`, and of those, the ones meeting the pool's
/// target (forwarded to the pool).
#[derive(Debug, Default)]
struct Mined {
    accepted: usize,
    forwarded: usize,
}

/// The difficulty the WhatsMiner-order miner suggests: 4 times easier than the pool's
/// target, so that about 3 of 4 shares stay at the proxy.
fn suggested() -> f64 {
    sv2c_channels::pow::target_to_difficulty(&work::target_with_zero_bits(POOL_BITS - 2))
}

async fn send(framed: &mut Framed<TcpStream, Sv1Codec>, id: u64, body: Body) {
    framed.send(Sv1Message::request(id, body)).await.unwrap();
}

/// Opens the session in `order`'s message order.
async fn hello(framed: &mut Framed<TcpStream, Sv1Codec>, name: &str, order: Order) {
    match order {
        Order::Standard => {}
        Order::SuggestFirst => {
            let d = SuggestDifficulty {
                difficulty: suggested(),
            };
            send(framed, 3, Body::SuggestDifficulty(d)).await;
        }
        Order::ConfigureFirst => {
            let c = Configure {
                extensions: vec![VERSION_ROLLING.into()],
                version_rolling_mask: Some(0xffff_ffff),
                version_rolling_min_bit_count: Some(2),
                ..Configure::default()
            };
            send(framed, 3, Body::Configure(c)).await;
        }
    }
    let sub = Subscribe {
        user_agent: Some("sv2c-test-miner/1.0".into()),
        session_id: None,
    };
    send(framed, 1, Body::Subscribe(sub)).await;
    let auth = Authorize {
        name: name.into(),
        password: "x".into(),
    };
    send(framed, 2, Body::Authorize(auth)).await;
}

/// The session state a miner needs to mine.
#[derive(Debug, Default)]
struct State {
    extranonce1: Vec<u8>,
    extranonce2_size: usize,
    difficulty: Option<f64>,
    version_mask: u32,
    extranonce2: u64,
    next_id: u64,
}

/// Mines one share of `notify` at the miner's difficulty; returns the submit and whether
/// it meets the pool's target.
fn mine(state: &mut State, name: &str, n: &sv2c_sv1::Notify) -> Option<(Submit, bool)> {
    let difficulty = state.difficulty?;
    let mut prev_hash = [0u8; 32];
    for (word, out) in n.prevhash.chunks(4).zip(prev_hash.chunks_mut(4)) {
        out.copy_from_slice(&[word[3], word[2], word[1], word[0]]);
    }
    state.extranonce2 += 1;
    let en2 = state.extranonce2.to_le_bytes();
    let en2 = &en2[..state.extranonce2_size.min(8)];
    let coinbase = [&n.coinb1[..], &state.extranonce1, en2, &n.coinb2].concat();
    let root = work::merkle_root(work::sha256d(&coinbase), n.merkle_branch.iter());
    // Roll one version bit when version rolling was granted.
    let bits = state.version_mask & 0x0000_2000;
    let version = (n.version & !state.version_mask) | bits;
    let target = difficulty_to_target(difficulty);
    let pool = work::target_with_zero_bits(POOL_BITS);
    let nonce = (0u32..1 << 24).find(|&nonce| {
        let h = work::header(version, &prev_hash, &root, n.ntime, n.nbits, nonce);
        work::meets_target(&work::sha256d(&h), &target)
    })?;
    let h = work::header(version, &prev_hash, &root, n.ntime, n.nbits, nonce);
    let forwarded = work::meets_target(&work::sha256d(&h), &pool);
    let submit = Submit {
        worker: name.into(),
        job_id: n.job_id.clone(),
        extranonce2: sv2c_sv1::Extranonce::new(en2).unwrap(),
        ntime: n.ntime,
        nonce,
        version_bits: (state.version_mask != 0).then_some(bits),
    };
    Some((submit, forwarded))
}

/// Checks an answer to one of the session's requests (ids 1 to 3).
fn on_answer(state: &mut State, id: u64, r: &sv2c_sv1::Response, order: Order) {
    assert!(r.error.is_none(), "request {id}: {r:?}");
    match (id, order) {
        (1, _) => {
            let s = r.subscribe_result().unwrap();
            state.extranonce1 = s.extranonce1.as_bytes().to_vec();
            state.extranonce2_size = s.extranonce2_size;
            assert!(s.extranonce2_size <= 8 && s.extranonce2_size > 0, "{s:?}");
        }
        (2, _) => assert_eq!(r.as_bool(), Some(true)),
        (3, Order::SuggestFirst) => assert_eq!(r.as_bool(), Some(true)),
        (3, Order::ConfigureFirst) => {
            let c = r.configure_result().unwrap();
            assert_eq!(c.version_rolling, Some(true));
            assert_eq!(c.version_rolling_mask, Some(0x1fff_e000));
            state.version_mask = 0x1fff_e000;
        }
        _ => panic!("unexpected answer {id}: {r:?}"),
    }
}

/// One SV1 miner: opens its session in `order`, then submits a share for each job until
/// `SHARES` are answered.
async fn sv1_miner(
    addr: SocketAddr,
    name: String,
    order: Order,
) -> (Mined, Framed<TcpStream, Sv1Codec>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut framed = Framed::new(tcp, Sv1Codec::new());
    hello(&mut framed, &name, order).await;
    let mut state = State {
        next_id: 10,
        ..State::default()
    };
    let mut mined = Mined::default();
    let mut forwarded_ids = Vec::new();
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(15);
    while answered < SHARES {
        let item = timeout(deadline - Instant::now(), framed.next())
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer from the proxy in time"))
            .unwrap_or_else(|| panic!("{name}: the proxy closed the connection"))
            .unwrap();
        let Sv1Item::Message(msg) = item else {
            panic!("{name}: invalid line {item:?}")
        };
        match (msg.id, msg.body) {
            (_, Body::SetDifficulty(d)) => {
                if order == Order::SuggestFirst && state.difficulty.is_none() {
                    assert_eq!(d.difficulty, suggested());
                }
                state.difficulty = Some(d.difficulty);
            }
            (_, Body::Notify(n)) => {
                let Some((submit, forwarded)) = mine(&mut state, &name, &n) else {
                    continue;
                };
                state.next_id += 1;
                if forwarded {
                    forwarded_ids.push(state.next_id);
                }
                send(&mut framed, state.next_id, Body::Submit(submit)).await;
            }
            (Id::Num(id), Body::Response(r)) if id < 10 => on_answer(&mut state, id, &r, order),
            (Id::Num(id), Body::Response(r)) => {
                answered += 1;
                assert_eq!(r.as_bool(), Some(true), "{name}: share {id} refused: {r:?}");
                mined.accepted += 1;
                mined.forwarded += usize::from(forwarded_ids.contains(&id));
            }
            (id, body) => panic!("{name}: unexpected {id:?} {body:?}"),
        }
    }
    (mined, framed)
}

/// Reads what the proxy still sends until it closes; `true` if it said
/// `client.reconnect` first.
async fn told_to_reconnect(framed: &mut Framed<TcpStream, Sv1Codec>) -> bool {
    while let Ok(Some(Ok(item))) = timeout(Duration::from_secs(5), framed.next()).await {
        if let Sv1Item::Message(m) = item
            && matches!(m.body, Body::Reconnect(_))
        {
            return true;
        }
    }
    false
}

/// Our own programs as `cargo test` builds them (`target/<profile>/examples/`).
fn our_program(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo build --profile test --example {name}` builds it",
        path.display()
    );
    path
}

/// Sends SIGTERM to `child` and waits (up to 10 s) for it to exit 0.
async fn terminate(child: &mut Child) {
    let pid = child.id().expect("running").to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let exited = timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits within 10 s of SIGTERM")
        .unwrap();
    assert!(exited.success(), "{exited:?}");
}

/// The pool's `user_identity` for a worker name, as the proxy fits it (docs/sv1-miners.md).
fn fitted(name: &str) -> String {
    if name.len() <= 32 {
        return name.to_owned();
    }
    let hash = work::sha256d(name.as_bytes());
    format!("{}~{}", &name[..23], hex::encode(&hash[..4]))
}

/// The pool and the proxy programs of a test.
struct Programs {
    pool: Child,
    proxy: Child,
    /// The proxy's `--sv1-listen` address.
    sv1: SocketAddr,
    /// The proxy's `--listen` address (plain Sv2, and SV1 by its first bytes).
    sv2: SocketAddr,
    pool_log: PathBuf,
    proxy_log: PathBuf,
    /// The proxy's Prometheus endpoint.
    metrics: SocketAddr,
}

/// Starts the pool and the proxy programs.
async fn programs(test: &str) -> Programs {
    let dir = std::env::temp_dir().join(format!("sv2c-sv1-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = sri::free_port().await;
    let pool_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let pool_log = dir.join("pool.log");
    let bits = POOL_BITS.to_string();
    let listen = pool_addr.to_string();
    let pool_args = [
        "--listen",
        &listen,
        "--difficulty-bits",
        &bits,
        "--job-interval",
        "1",
    ];
    let pool_args: Vec<&std::ffi::OsStr> = pool_args.iter().map(|s| s.as_ref()).collect();
    let pool = sri::spawn_listening(&our_program("pool"), &pool_args, &pool_log, pool_addr).await;
    let proxy_addr: SocketAddr = format!("127.0.0.1:{}", sri::free_port().await)
        .parse()
        .unwrap();
    let sv1_addr: SocketAddr = format!("127.0.0.1:{}", sri::free_port().await)
        .parse()
        .unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", sri::free_port().await)
        .parse()
        .unwrap();
    let (up, listen, sv1) = (
        pool_addr.to_string(),
        proxy_addr.to_string(),
        sv1_addr.to_string(),
    );
    let metrics_arg = metrics.to_string();
    let args = [
        "--upstream",
        &up,
        "--listen",
        &listen,
        "--aggregate",
        "--sv1-listen",
        &sv1,
        "--workers",
        "1",
        "--metrics",
        &metrics_arg,
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
    let log = dir.join("mining_proxy.log");
    let proxy = sri::spawn_listening(&our_program("mining_proxy"), &args, &log, sv1_addr).await;
    Programs {
        pool,
        proxy,
        sv1: sv1_addr,
        sv2: proxy_addr,
        pool_log,
        proxy_log: log,
        metrics,
    }
}

/// The pool's final per-worker share counts (printed on SIGTERM).
/// Also checks that the proxy, shutting down, tells the still connected `miner` to
/// reconnect.
async fn pool_counts(
    mut pool: Child,
    mut proxy: Child,
    log: &std::path::Path,
    miner: &mut Framed<TcpStream, Sv1Codec>,
) -> Vec<String> {
    // Every answer the miners saw for a forwarded share was the pool's or came after the
    // proxy sent it: give the pool a moment to count the last ones.
    sleep(Duration::from_millis(300)).await;
    terminate(&mut proxy).await;
    assert!(
        told_to_reconnect(miner).await,
        "no client.reconnect on shutdown"
    );
    terminate(&mut pool).await;
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter(|l| l.starts_with("pool:   worker "))
        .map(str::to_owned)
        .collect()
}

/// The proxy's `/metrics` text.
async fn scrape(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    answer.split_once("\r\n\r\n").unwrap().1.to_owned()
}

async fn mine_in(order: Order, name: &str) {
    let p = programs(&format!("{order:?}")).await;
    let (mined, mut miner) = sv1_miner(p.sv1, name.to_owned(), order).await;
    eprintln!("{order:?}: {mined:?}");
    assert_eq!(mined.accepted, SHARES);
    let text = scrape(p.metrics).await;
    let local = mined.accepted - mined.forwarded;
    let want = format!(
        "sv2c_proxy_sv1_worker_shares_total{{worker=\"{}\",state=\"local\"}} {local}\n",
        fitted(name)
    );
    assert!(text.contains(&want), "{want:?} not in {text}");
    let lines = pool_counts(p.pool, p.proxy, &p.pool_log, &mut miner).await;
    eprintln!("per-worker lines at the pool: {lines:?}");
    if mined.forwarded > 0 {
        let want = format!(
            "pool:   worker {}: {} shares,",
            fitted(name),
            mined.forwarded
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "{want:?} not in {lines:?}"
        );
    }
    // The proxy's own per-worker line, printed at exit.
    let want = format!(
        "mining_proxy:   sv1 worker {}: {} forwarded, {} answered locally, 0 refused",
        fitted(name),
        mined.forwarded,
        mined.accepted - mined.forwarded
    );
    let text = std::fs::read_to_string(&p.proxy_log).unwrap();
    assert!(
        text.lines().any(|l| l == want),
        "{want:?} not in {}",
        p.proxy_log.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_then_authorize() {
    mine_in(Order::Standard, "acct.rig-standard").await;
}

/// WhatsMiner: `mining.suggest_difficulty` (with an id) before `mining.subscribe`; the
/// suggested difficulty is easier than the pool's, so some shares stay at the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggest_difficulty_first() {
    mine_in(Order::SuggestFirst, "acct.rig-whatsminer").await;
}

/// Antminer, Bitaxe: `mining.configure` with version rolling first; shares roll a bit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configure_first_with_version_rolling() {
    mine_in(Order::ConfigureFirst, "acct.rig-bitaxe").await;
}

/// A 70-byte worker name (a Bitcoin address and a rig name) works and is counted at the
/// pool under its fitted identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_70_byte_worker_name() {
    let name = format!("bc1q{}.rig-70", "x".repeat(59));
    assert_eq!(name.len(), 70);
    mine_in(Order::Standard, &name).await;
}

/// Garbage costs only its own connection: a peer sending lines that are not JSON-RPC is
/// closed after `MAX_INVALID_LINES`, a line above the length limit is an invalid line
/// (the connection goes on), and a miner beside them mines as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_costs_only_its_own_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let p = programs("garbage").await;
    let sv1 = p.sv1;
    let mut junk = TcpStream::connect(sv1).await.unwrap();
    for _ in 0..=sv2c_roles::proxy::sv1::MAX_INVALID_LINES {
        junk.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    }
    let mut rest = Vec::new();
    let closed = timeout(Duration::from_secs(5), junk.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(_))),
        "garbage not cut off: {closed:?}"
    );

    // A 10 KB line, then a subscribe on the same connection: answered.
    let long = TcpStream::connect(sv1).await.unwrap();
    let mut long = Framed::new(long, Sv1Codec::new());
    let line = format!("{{\"id\":9,\"method\":\"{}\"}}\n", "x".repeat(10_000));
    long.get_mut().write_all(line.as_bytes()).await.unwrap();
    hello(&mut long, "acct.long", Order::Standard).await;
    // The subscribe's answer (the authorize's may come first: the channel opens after).
    loop {
        let next = timeout(Duration::from_secs(5), long.next()).await.unwrap();
        let Some(Ok(Sv1Item::Message(m))) = next else {
            panic!("no answer after a long line: {next:?}")
        };
        if m.id == Id::Num(1) {
            break;
        }
    }

    let (mined, mut miner) = sv1_miner(sv1, "acct.beside".into(), Order::Standard).await;
    assert_eq!(mined.accepted, SHARES);
    let lines = pool_counts(p.pool, p.proxy, &p.pool_log, &mut miner).await;
    let want = format!("pool:   worker acct.beside: {} shares,", mined.forwarded);
    assert!(
        lines.iter().any(|l| l.starts_with(&want)),
        "{want:?} not in {lines:?}"
    );
}

/// One port for both: on the plain Sv2 listener, an SV1 miner (its first bytes `{` and
/// JSON text) mines, and an Sv2 miner beside it sets up and opens a channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sv1_and_sv2_on_one_port() {
    use sv2c_binary::messages::Message;
    let p = programs("one-port").await;
    let mut sv2 = common::connect(p.sv2, 0).await;
    sv2.send(common::open_channel(1)).await.unwrap();
    assert!(matches!(
        common::next(&mut sv2).await,
        Message::OpenStandardMiningChannelSuccess(_)
    ));
    let (mined, mut miner) = sv1_miner(p.sv2, "acct.shared-port".into(), Order::Standard).await;
    assert_eq!(mined.accepted, SHARES);
    let lines = pool_counts(p.pool, p.proxy, &p.pool_log, &mut miner).await;
    let want = format!(
        "pool:   worker acct.shared-port: {} shares,",
        mined.forwarded
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&want)),
        "{want:?} not in {lines:?}"
    );
}

/// Bad shares get SV1's error codes, in order, with the Stratum V2 code as the message:
/// the same share again (22, `duplicate-share`), an unknown job (21), a hash above the
/// miner's target (23), a worker that was not authorized (24); the good share before
/// them is `true`, and every answer comes in the order of the shares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_shares_get_sv1_errors() {
    let p = programs("bad-shares").await;
    let tcp = TcpStream::connect(p.sv1).await.unwrap();
    let mut framed = Framed::new(tcp, Sv1Codec::new());
    let name = "acct.bad";
    hello(&mut framed, name, Order::Standard).await;
    let mut state = State::default();
    let (good, notify) = loop {
        let Some(Ok(Sv1Item::Message(m))) = framed.next().await else {
            panic!("closed")
        };
        match (m.id, m.body) {
            (_, Body::SetDifficulty(d)) => state.difficulty = Some(d.difficulty),
            (_, Body::Notify(n)) => {
                if let Some((s, _)) = mine(&mut state, name, &n) {
                    break (s, n);
                }
            }
            (Id::Num(id), Body::Response(r)) => on_answer(&mut state, id, &r, Order::Standard),
            _ => {}
        }
    };
    let target = difficulty_to_target(state.difficulty.unwrap());
    let mut prev_hash = [0u8; 32];
    for (word, out) in notify.prevhash.chunks(4).zip(prev_hash.chunks_mut(4)) {
        out.copy_from_slice(&[word[3], word[2], word[1], word[0]]);
    }
    let coinbase = [
        &notify.coinb1[..],
        &state.extranonce1,
        good.extranonce2.as_bytes(),
        &notify.coinb2,
    ]
    .concat();
    let root = work::merkle_root(work::sha256d(&coinbase), notify.merkle_branch.iter());
    let low = (0u32..)
        .find(|&nonce| {
            let h = work::header(
                notify.version,
                &prev_hash,
                &root,
                good.ntime,
                notify.nbits,
                nonce,
            );
            !work::meets_target(&work::sha256d(&h), &target)
        })
        .unwrap();
    let shares = [
        (20, good.clone()),
        (21, good.clone()),
        (
            22,
            Submit {
                job_id: "ffffffff".into(),
                ..good.clone()
            },
        ),
        (
            23,
            Submit {
                nonce: low,
                ..good.clone()
            },
        ),
        (
            24,
            Submit {
                worker: "acct.stranger".into(),
                ..good
            },
        ),
    ];
    for (id, s) in shares {
        send(&mut framed, id, Body::Submit(s)).await;
    }
    let mut answers = Vec::new();
    while answers.len() < 5 {
        let next = timeout(Duration::from_secs(5), framed.next())
            .await
            .unwrap();
        let Some(Ok(Sv1Item::Message(m))) = next else {
            panic!("closed: {next:?}")
        };
        // The authorize's answer (id 2) may come after the first job.
        if let (Id::Num(id @ 20..), Body::Response(r)) = (m.id, m.body) {
            let code = r.error.map(|e| (e.code, e.message));
            answers.push((id, code));
        }
    }
    let code = |n: i64, m: &str| Some((n, m.to_owned()));
    // In the order of the shares.
    assert_eq!(
        answers,
        [
            (20, None),
            (21, code(22, "duplicate-share")),
            (22, code(21, "invalid-job-id")),
            (23, code(23, "difficulty-too-low")),
            (24, code(24, "unauthorized worker")),
        ]
    );
    let mut miner = framed;
    let _ = pool_counts(p.pool, p.proxy, &p.pool_log, &mut miner).await;
}
