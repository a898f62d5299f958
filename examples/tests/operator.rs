//! The `pool` and `mining_proxy` programs as an operator runs them, as processes: bad
//! configuration is refused with one line and exit code 2, the Prometheus endpoint shows
//! counters that move while shares flow, SIGTERM makes clients get `Reconnect` and the
//! program exit 0, and the pool logs nothing per share.
//!
//! The example binaries are the ones `cargo test` builds with the tests (`cargo test -p
//! sv2c-examples`, or `cargo test -p sv2c-examples --test operator --example pool
//! --example mining_proxy` for this file alone: `--test operator` by itself does not
//! rebuild them).

use std::time::{Duration, Instant};

use sv2c::prelude::*;
use tokio::net::TcpStream;

mod common;
use common::{Program, after as addr_after, example, scrape, status_of, value};
use std::process::Command;

/// Opens `n` connections to `addr` and counts those the server closes within `wait`
/// (they read end-of-file; those it serves wait for `SetupConnection`); returns the
/// count and the connections, still open on this side.
async fn connect_and_count_closed(addr: &str, n: usize, wait: Duration) -> (usize, Vec<TcpStream>) {
    use tokio::io::AsyncReadExt;
    let mut conns = Vec::new();
    for _ in 0..n {
        conns.push(TcpStream::connect(addr).await.unwrap());
    }
    let reads: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                let read = tokio::time::timeout(wait, conn.read(&mut byte));
                (matches!(read.await, Ok(Ok(0))), conn)
            })
        })
        .collect();
    let mut closed = 0;
    let mut conns = Vec::new();
    for read in reads {
        let (eof, conn) = read.await.unwrap();
        closed += usize::from(eof);
        conns.push(conn);
    }
    (closed, conns)
}

#[test]
fn bad_configuration_is_one_line_and_exit_code_2() {
    let dir = std::env::temp_dir().join(format!("sv2c-operator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let unknown = file("unknown.toml", "listen = \"127.0.0.1:0\"\nbogus_key = 1\n");
    let bad_listen = file(
        "bad-listen.toml",
        "upstream = \"127.0.0.1:34254\"\nlisten = \"127.0.0.1:99999\"\n",
    );
    let bad_key = file(
        "bad-key.toml",
        "upstream = \"127.0.0.1:34254\"\nauthority_key = \"not-a-key\"\n",
    );
    let missing = dir.join("no-such-key.hex");
    let missing = missing.to_str().unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        ("pool", &["--config", &unknown], "bogus_key"),
        ("mining_proxy", &["--config", &unknown], "bogus_key"),
        ("pool", &["--listen", "127.0.0.1:99999"], "listen"),
        ("mining_proxy", &["--config", &bad_listen], "listen"),
        ("mining_proxy", &["--upstream", "127.0.0.1"], "upstream"),
        (
            "pool",
            &["--authority-secret-file", missing],
            "authority_secret_file",
        ),
        (
            "mining_proxy",
            &[
                "--upstream",
                "127.0.0.1:34254",
                "--authority-secret-file",
                missing,
            ],
            "authority_secret_file",
        ),
        (
            "mining_proxy",
            &["--upstream", "127.0.0.1:34254", "--authority-key", "xyz"],
            "authority_key",
        ),
        ("mining_proxy", &["--config", &bad_key], "authority_key"),
    ];
    for (name, args, key) in cases {
        let mut program = Program::start(name, args, None);
        let status = program.wait(Duration::from_secs(20));
        let out: Vec<String> = program.stdout.try_iter().collect();
        let err = &program.seen_stderr;
        eprintln!("{name} {}\n    → {err:?}", args.join(" "));
        assert_eq!(status.code(), Some(2), "{name} {args:?}: {err:?}");
        assert_eq!(err.len(), 1, "{name} {args:?}: one line, got {err:?}");
        assert!(err[0].contains(key), "{name} {args:?}: {err:?} names {key}");
        assert!(
            out.is_empty(),
            "{name} {args:?}: nothing started, got {out:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_demo_serves_metrics_that_move_while_shares_flow() {
    let mut demo = Program::start(
        "mining_proxy",
        &[
            "--miners",
            "2",
            "--seconds",
            "5",
            "--metrics",
            "127.0.0.1:0",
        ],
        None,
    );
    let line = demo.stderr_line("metrics at http://");
    let addr = addr_after(&line, "http://");
    std::thread::sleep(Duration::from_millis(1500));
    let first = scrape(&addr);
    std::thread::sleep(Duration::from_secs(1));
    let second = scrape(&addr);
    let accepted = |t: &str| value(t, "sv2c_shares_accepted_total");
    let up = |t: &str| value(t, "sv2c_frames_total{direction=\"to_upstream\"}");
    eprintln!(
        "accepted {} → {}, frames to upstream {} → {}",
        accepted(&first),
        accepted(&second),
        up(&first),
        up(&second)
    );
    assert!(accepted(&first) > 0, "{first}");
    assert!(accepted(&second) > accepted(&first), "{first}\n{second}");
    assert!(up(&second) > up(&first));
    assert_eq!(value(&second, "sv2c_connections_open"), 2, "{second}");
    assert!(value(&second, "sv2c_channels_open") >= 2, "{second}");
    assert!(value(&second, "sv2c_buffer_pool_slots") > 0, "{second}");
    assert!(second.ends_with("# EOF\n"));
    assert!(demo.wait(Duration::from_secs(30)).success());
}

type Conn = Framed<TcpStream, Sv2Codec<Message>>;

async fn connect_and_set_up(addr: &str) -> Conn {
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
    match next(&mut conn).await {
        Some(Message::SetupConnectionSuccess(_)) => conn,
        other => panic!("setup: {other:?}"),
    }
}

async fn next(conn: &mut Conn) -> Option<Message> {
    tokio::time::timeout(Duration::from_secs(20), conn.next())
        .await
        .expect("no message in time")
        .map(Result::unwrap)
}

/// After SIGTERM: what is still queued, then `Reconnect` (to the same endpoint), then the
/// end of the stream.
async fn expect_reconnect_then_close(conn: &mut Conn) {
    loop {
        match next(conn).await {
            Some(Message::Reconnect(r)) => {
                assert_eq!(r.new_port, 0);
                assert!(next(conn).await.is_none(), "closed after Reconnect");
                return;
            }
            Some(_) => {}
            None => panic!("closed without Reconnect"),
        }
    }
}

/// The pool at its default difficulty (8 bits): most shares of a miner that does not
/// search are rejected (`difficulty-too-low`); the metrics count them by reason, the log
/// has no line for any of them, and SIGTERM sends `Reconnect` and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_counts_rejections_without_logging_them_and_stops_on_sigterm() {
    let mut pool = Program::start(
        "pool",
        &["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"],
        None,
    );
    let listening = pool.stdout_line("listening on ");
    let addr = addr_after(&listening, "listening on ");
    let metrics = addr_after(&pool.stderr_line("metrics at http://"), "http://");
    let mut conn = connect_and_set_up(&addr).await;
    let open = OpenStandardMiningChannel {
        request_id: 1,
        user_identity: "test".parse().unwrap(),
        nominal_hash_rate: 1.0,
        max_target: U256([0xff; 32]),
    };
    conn.send(Message::from(open)).await.unwrap();
    let (mut channel, mut job) = (None, None);
    while channel.is_none() || job.is_none() {
        match next(&mut conn).await.expect("open answered") {
            Message::OpenStandardMiningChannelSuccess(s) => channel = Some(s.channel_id),
            Message::NewMiningJob(j) => job = Some(j.job_id),
            _ => {}
        }
    }
    const SHARES: u32 = 64;
    for n in 0..SHARES {
        let share = SubmitSharesStandard {
            channel_id: channel.unwrap(),
            sequence_number: n,
            job_id: job.unwrap(),
            nonce: n,
            ntime: 0x6650_0000,
            version: 0x2000_0000,
        };
        conn.feed(Message::from(share)).await.unwrap();
    }
    SinkExt::<Message>::flush(&mut conn).await.unwrap();
    let mut answered = 0;
    while answered < SHARES {
        match next(&mut conn).await.expect("shares answered") {
            Message::SubmitSharesSuccess(_) | Message::SubmitSharesError(_) => answered += 1,
            _ => {}
        }
    }
    let text = scrape(&metrics);
    let rejected = value(
        &text,
        "sv2c_shares_rejected_total{reason=\"difficulty-too-low\"}",
    );
    let accepted = value(&text, "sv2c_shares_accepted_total");
    assert_eq!(rejected + accepted, u64::from(SHARES), "{text}");
    assert!(rejected >= u64::from(SHARES) / 2, "{text}");
    assert_eq!(value(&text, "sv2c_connections_open"), 1, "{text}");
    assert_eq!(value(&text, "sv2c_channels_open"), 1, "{text}");

    pool.sigterm();
    expect_reconnect_then_close(&mut conn).await;
    let status = pool.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{:?}", pool.seen_stderr);
    // Start-up, the metrics line and the shutdown line; nothing per share.
    let log = &pool.seen_stderr;
    assert!(log.len() <= 3, "{log:?}");
    assert!(!log.iter().any(|l| l.contains("share")), "{log:?}");
}

/// `mining_proxy --config examples/config/proxy.toml` in front of the `pool` program
/// (flags override the file's addresses): shares from a simulated miner flow, the
/// proxy's metrics move; then a miner connected to the proxy gets `Reconnect` on SIGTERM,
/// and the proxy exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_with_its_config_file_in_front_of_the_pool_program() {
    // Every share meets a zero-bit target: all are accepted.
    let mut pool = Program::start(
        "pool",
        &["--listen", "127.0.0.1:0", "--difficulty-bits", "0"],
        None,
    );
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config/proxy.toml");
    let mut proxy = Program::start(
        "mining_proxy",
        &[
            "--config",
            config,
            "--upstream",
            &addr,
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
        ],
        Some("debug"),
    );
    let metrics = addr_after(&proxy.stderr_line("metrics at http://"), "http://");
    let line = proxy.stderr_line("miners connect to ");
    let proxy_addr = addr_after(&line, "miners connect to ");
    // One worker per core by default, all listening on the one port picked for port 0.
    let cores = std::thread::available_parallelism().unwrap().get();
    for _ in 1..cores {
        let line = proxy.stderr_line("miners connect to ");
        assert_eq!(addr_after(&line, "miners connect to "), proxy_addr);
    }

    let miner = tokio::spawn({
        let proxy_addr = proxy_addr.clone();
        async move {
            let tcp = TcpStream::connect(proxy_addr).await.unwrap();
            let config = sv2c_roles::miner::MinerConfig {
                duration: Duration::from_secs(3),
                ..Default::default()
            };
            sv2c_roles::miner::run_miner(tcp, config).await.unwrap()
        }
    });
    // RUST_LOG=debug shows the connection.
    proxy.stderr_line("connected");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let first = scrape(&metrics);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = scrape(&metrics);
    let accepted = |t: &str| value(t, "sv2c_shares_accepted_total");
    eprintln!(
        "proxy in front of pool: accepted {} → {}",
        accepted(&first),
        accepted(&second)
    );
    assert!(accepted(&first) > 0, "{first}");
    assert!(accepted(&second) > accepted(&first), "{first}\n{second}");
    assert_eq!(value(&second, "sv2c_connections_open"), 1, "{second}");
    let report = miner.await.unwrap();
    assert!(
        report.shares_accepted > 0 && report.shares_rejected == 0,
        "{report:?}"
    );

    let mut conn = connect_and_set_up(&proxy_addr).await;
    proxy.sigterm();
    expect_reconnect_then_close(&mut conn).await;
    let status = proxy.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{:?}", proxy.seen_stderr);
    pool.stop();
}

/// `--workers 2`: two proxies in one process, each with its own pool connection, sharing
/// the listen address; the metrics endpoint sums them, and SIGTERM stops both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_workers_share_the_address_and_their_counters_add_up() {
    let mut pool = Program::start(
        "pool",
        &["--listen", "127.0.0.1:0", "--difficulty-bits", "0"],
        Some("debug"),
    );
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    // A fixed port: with port 0 each worker would get its own.
    let listen = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    };
    let mut proxy = Program::start(
        "mining_proxy",
        &[
            "--upstream",
            &addr,
            "--listen",
            &listen,
            "--workers",
            "2",
            "--metrics",
            "127.0.0.1:0",
        ],
        None,
    );
    let metrics = addr_after(&proxy.stderr_line("metrics at http://"), "http://");
    let mut whose = Vec::new();
    for _ in 0..2 {
        let line = proxy.stderr_line("miners connect to ");
        assert_eq!(addr_after(&line, "miners connect to "), listen);
        whose.push(line.contains("worker 1 of 2: upstream"));
    }
    // Each worker's line says which worker set its pool connection up.
    whose.sort();
    assert_eq!(whose, [false, true], "{:?}", proxy.seen_stderr);
    // The pool saw two connections set up, one per worker.
    pool.stderr_line("connected");
    pool.stderr_line("connected");

    const MINERS: usize = 6;
    let miners: Vec<_> = (0..MINERS)
        .map(|_| {
            let listen = listen.clone();
            tokio::spawn(async move {
                let tcp = TcpStream::connect(listen).await.unwrap();
                let config = sv2c_roles::miner::MinerConfig {
                    duration: Duration::from_secs(3),
                    ..Default::default()
                };
                sv2c_roles::miner::run_miner(tcp, config).await.unwrap()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during = scrape(&metrics);
    assert_eq!(
        value(&during, "sv2c_connections_open"),
        MINERS as u64,
        "{during}"
    );
    let mut accepted = 0;
    for miner in miners {
        let report = miner.await.unwrap();
        assert!(report.shares_rejected == 0, "{report:?}");
        accepted += report.shares_accepted;
    }
    assert!(accepted > 0);
    let after = scrape(&metrics);
    assert_eq!(
        value(&after, "sv2c_shares_accepted_total"),
        accepted,
        "{after}"
    );
    proxy.stop();
    pool.stop();
}

/// Both programs run without glibc's per-thread cache of freed chunks (what a flood of
/// channels would otherwise keep: BENCHMARKS.md), unless the operator set
/// `GLIBC_TUNABLES`: then exactly the operator's tunables, and one exec at most.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_programs_run_without_the_allocators_thread_caches_unless_told() {
    let tunables_of = |program: &mut Program| {
        // The exec happens before the program says anything.
        program.stdout_line("listening on ");
        let environ = std::fs::read(format!("/proc/{}/environ", program.child.id())).unwrap();
        environ
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(b"GLIBC_TUNABLES="))
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let mut pool = Program::start("pool", &["--listen", "127.0.0.1:0"], None);
    assert_eq!(
        tunables_of(&mut pool).as_deref(),
        Some("glibc.malloc.tcache_count=0")
    );
    let start_with = |tunables: &str| {
        let mut cmd = Command::new(example("pool"));
        cmd.args(["--listen", "127.0.0.1:0"])
            .env("GLIBC_TUNABLES", tunables);
        Program::spawn(cmd, None)
    };
    let mut kept = start_with("glibc.malloc.tcache_count=7");
    assert_eq!(
        tunables_of(&mut kept).as_deref(),
        Some("glibc.malloc.tcache_count=7")
    );
    let mut other = start_with("glibc.malloc.arena_max=2");
    assert_eq!(
        tunables_of(&mut other).as_deref(),
        Some("glibc.malloc.arena_max=2")
    );
    for program in [&mut pool, &mut kept, &mut other] {
        program.stop();
    }
}

/// The proxy's `/ready` says whether it has its pool (503 while it has none), `/health`
/// that it serves; the pool program answers both too.
#[test]
fn the_programs_answer_health_and_readiness_probes() {
    let mut pool = Program::start(
        "pool",
        &["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"],
        None,
    );
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    let pool_metrics = addr_after(&pool.stderr_line("metrics at http://"), "http://");
    assert_eq!(status_of(&pool_metrics, "/health"), "HTTP/1.1 200 OK");
    assert_eq!(status_of(&pool_metrics, "/ready"), "HTTP/1.1 200 OK");
    let mut proxy = Program::start(
        "mining_proxy",
        &[
            "--upstream",
            &addr,
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--metrics",
            "127.0.0.1:0",
        ],
        None,
    );
    let metrics = addr_after(&proxy.stderr_line("metrics at http://"), "http://");
    proxy.stderr_line("miners connect to ");
    assert_eq!(status_of(&metrics, "/ready"), "HTTP/1.1 200 OK");
    pool.stop();
    // The pool's SIGTERM first sends the proxy `Reconnect`; on a loaded machine its exit
    // and the proxy's redial take a while.
    let deadline = Instant::now() + Duration::from_secs(30);
    while status_of(&metrics, "/ready") != "HTTP/1.1 503 Service Unavailable" {
        assert!(
            Instant::now() < deadline,
            "still ready 30 s after the pool left"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status_of(&metrics, "/health"), "HTTP/1.1 200 OK");
    assert!(scrape(&metrics).contains("sv2c_connections_open"));
    proxy.stop();
}

/// `--max-connections-per-address` caps one address's miners across all the workers of
/// the `mining_proxy` program, and a closed connection gives its place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_caps_one_address_across_its_workers() {
    let mut pool = Program::start("pool", &["--listen", "127.0.0.1:0"], None);
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    let listen = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    };
    let flags = ["--upstream", &addr, "--listen", &listen, "--workers", "2"];
    let mut proxy = Program::start(
        "mining_proxy",
        &[&flags[..], &["--max-connections-per-address", "3"]].concat(),
        None,
    );
    for _ in 0..2 {
        proxy.stderr_line("miners connect to ");
    }
    // Five from 127.0.0.1, spread by the kernel over both workers: three served.
    let (closed, conns) = connect_and_count_closed(&listen, 5, Duration::from_secs(1)).await;
    assert_eq!(closed, 2, "{:?}", proxy.seen_stderr);
    drop(conns);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (closed, _conns) = connect_and_count_closed(&listen, 3, Duration::from_secs(1)).await;
    assert_eq!(closed, 0, "the closed connections' places are given back");
    proxy.stop();
    pool.stop();
}

/// With `--listen` on port 0 the proxy picks its port once: when the pool goes away and
/// comes back, the proxy listens again where its miners knew it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_on_port_0_listens_on_the_same_port_after_the_pool_comes_back() {
    let mut pool = Program::start("pool", &["--listen", "127.0.0.1:0"], None);
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    let mut proxy = Program::start(
        "mining_proxy",
        &[
            "--upstream",
            &addr,
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ],
        None,
    );
    let first = addr_after(
        &proxy.stderr_line("miners connect to "),
        "miners connect to ",
    );

    pool.stop();
    let mut pool = Program::start("pool", &["--listen", &addr], None);
    pool.stdout_line("listening on ");
    let again = addr_after(
        &proxy.stderr_line("miners connect to "),
        "miners connect to ",
    );
    assert_eq!(again, first);
    let mut conn = connect_and_set_up(&again).await;

    proxy.sigterm();
    expect_reconnect_then_close(&mut conn).await;
    assert_eq!(proxy.wait(Duration::from_secs(15)).code(), Some(0));
    pool.stop();
}

/// `--max-connections` above what the open-files limit allows is lowered to it, with one
/// line: miners beyond are closed on arrival (the cap's one line), and `accept` never
/// fails for want of a file descriptor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_above_the_open_files_limit_is_lowered_to_it() {
    // 150 files: 150 - 64 spare = 86 connections.
    let mut pool = Program::start_with_open_files(
        "pool",
        &["--listen", "127.0.0.1:0", "--max-connections", "1000"],
        150,
    );
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    pool.stderr_line("max_connections 1000 is above the open-files limit");

    let (closed, conns) = connect_and_count_closed(&addr, 120, Duration::from_secs(1)).await;
    assert_eq!(closed, 120 - 86);
    pool.stderr_line("connection cap reached");

    drop(conns);
    pool.stop();
    let failed = pool
        .seen_stderr
        .iter()
        .filter(|l| l.contains("accept failed"))
        .count();
    assert_eq!(failed, 0, "{:?}", pool.seen_stderr);
}

/// The same for a proxy of many workers: each worker's own files (listener, pool
/// connection, runtime) are left free as well, so `accept` never fails for want of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_of_many_workers_leaves_their_own_files_free() {
    let mut pool = Program::start("pool", &["--listen", "127.0.0.1:0"], None);
    let addr = addr_after(&pool.stdout_line("listening on "), "listening on ");
    // 150 files, 20 workers: 150 - 64 spare - 19 × 4 = 10 miners.
    let mut proxy = Program::start_with_open_files(
        "mining_proxy",
        &[
            "--upstream",
            &addr,
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "20",
            "--max-connections",
            "1000",
        ],
        150,
    );
    // Every worker's start line, and the cap's one warning, in whatever order.
    let (mut started, mut warned, mut listen) = (0, false, String::new());
    while started < 20 || !warned {
        let line = proxy.stderr_line("");
        if line.contains("miners connect to ") {
            started += 1;
            listen = addr_after(&line, "miners connect to ");
        }
        warned |= line.contains("is above the open-files limit less 140: at most 10 connections");
    }
    let (closed, conns) = connect_and_count_closed(&listen, 120, Duration::from_secs(2)).await;
    assert_eq!(closed, 120 - 10, "{:?}", proxy.seen_stderr);
    proxy.stderr_line("connection cap reached");

    drop(conns);
    proxy.stop();
    let failed = proxy
        .seen_stderr
        .iter()
        .filter(|l| l.contains("accept failed"))
        .count();
    assert_eq!(failed, 0, "{:?}", proxy.seen_stderr);
    pool.stop();
}
