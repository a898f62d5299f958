//! Interoperability with SRI's pool: `pool_sv2` 0.7.0 (the reference pool) between a
//! Template Provider written here and a standard-channel miner written here that really
//! hashes. Both speak to it through this library over Noise: the Template Provider as the
//! responder (Template Distribution protocol), the miner as the initiator (Mining
//! protocol). Every message either side receives comes from SRI's encoders, and every
//! message it sends must be accepted by SRI's decoders: the pool turns our templates into
//! jobs and validates our shares against them.
//!
//! The test needs the `pool_sv2` binary: `cargo install pool_sv2 --version 0.7.0 --locked
//! --no-default-features` (or `POOL_SV2=/path/to/pool_sv2`). It is `#[ignore]`d so that
//! `cargo test --workspace` does not need it; run it with
//!
//! ```sh
//! cargo test -p sv2c-roles --test pool_sv2_interop -- --ignored
//! ```
//!
//! Without the binary it fails with a message saying how to install it when `CI` is set,
//! and passes with a note otherwise.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

mod sri;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{
    Message, NewTemplate, OpenStandardMiningChannel, SetNewPrevHashTdp, SetupConnection,
    SetupConnectionSuccess, SubmitSharesStandard,
};
use sv2c_binary::{B064K, B0255, Protocol, Seq0255, Str0255, U256};
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator};
use sv2c_codec::{CodecError, Sv2Codec};
use sv2c_roles::identity::noise_server_identity;
use sv2c_roles::proxy::{Proxy, ProxyConfig, REQUIRES_STANDARD_JOBS};
use sv2c_roles::work;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_util::codec::Framed;

/// The authority key pair of SRI's example pool configuration (a published example key,
/// used here on the loopback interface only).
const POOL_AUTHORITY_PUBLIC: &str = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
const POOL_AUTHORITY_SECRET: &str = "mkDLTBBRxdBv998612qipDYoTK3YUrqLe8uWw7gu3iXbSrn2n";

/// Shares the miner finds and submits.
const SHARES: u32 = 5;

/// What the Template Provider saw of the pool.
#[derive(Debug)]
enum TpEvent {
    Received(Message),
    TemplatesSent,
}

/// The Template Provider: accepts the pool's connection over Noise, answers its
/// `SetupConnection`, sends one future template and the previous hash that activates it
/// once the pool has sent `CoinbaseOutputConstraints`, then reports every message it
/// receives until the pool hangs up.
async fn template_provider(listener: TcpListener, events: mpsc::UnboundedSender<TpEvent>) {
    let (_authority, responder) = noise_server_identity(Duration::from_secs(3600)).unwrap();
    let (tcp, _) = listener.accept().await.unwrap();
    let mut conn = noise::accept(tcp, &responder.responder(), Sv2Codec::<Message>::new())
        .await
        .expect("the pool's Noise handshake with our responder");
    while let Some(msg) = conn.next().await {
        let msg = msg.expect("a message from the pool that our codec decodes");
        let _ = events.send(TpEvent::Received(msg.clone()));
        match msg {
            Message::SetupConnection(setup) => {
                assert_eq!(setup.protocol, Protocol::TemplateDistribution);
                conn.send(Message::from(SetupConnectionSuccess {
                    used_version: 2,
                    flags: 0,
                }))
                .await
                .unwrap();
            }
            Message::CoinbaseOutputConstraints(_) => {
                conn.send(Message::from(new_template())).await.unwrap();
                conn.send(Message::from(new_prev_hash())).await.unwrap();
                let _ = events.send(TpEvent::TemplatesSent);
            }
            _ => {}
        }
    }
}

/// A template for block 100 000 with no transaction but the coinbase.
fn new_template() -> NewTemplate {
    NewTemplate {
        template_id: 1,
        future_template: true,
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        // BIP 34: the height, pushed as a 3-byte little-endian number.
        coinbase_prefix: B0255::try_from(vec![0x03, 0xa0, 0x86, 0x01]).unwrap(),
        coinbase_tx_input_sequence: 0xffff_ffff,
        coinbase_tx_value_remaining: 625_000_000,
        coinbase_tx_outputs_count: 0,
        coinbase_tx_outputs: B064K::default(),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::default(),
    }
}

/// The previous block of the template above. Its network target is the easiest there is
/// (regtest's `n_bits`), so that every share is also a block, and the pool sends each one
/// back to the Template Provider as a `SubmitSolution`.
fn new_prev_hash() -> SetNewPrevHashTdp {
    let now = u32::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    SetNewPrevHashTdp {
        template_id: 1,
        prev_hash: U256([0x11; 32]),
        header_timestamp: now,
        n_bits: 0x207f_ffff,
        target: U256([0xff; 32]),
    }
}

/// Starts the pool against the Template Provider at `tp`; returns the child (killed on
/// drop) and the address miners connect to.
async fn start_pool(binary: &Path, dir: &Path, tp: SocketAddr) -> (Child, SocketAddr) {
    let port = sri::free_port().await;
    let config = format!(
        r#"authority_public_key = "{POOL_AUTHORITY_PUBLIC}"
authority_secret_key = "{POOL_AUTHORITY_SECRET}"
cert_validity_sec = 3600
listen_address = "127.0.0.1:{port}"
coinbase_reward_script = "addr(tb1qa0sm0hxzj0x25rh8gw5xlzwlsfvvyz8u96w3p8)"
server_id = 1
pool_signature = "sv2c interop"
shares_per_minute = 60.0
share_batch_size = 1

[template_provider_type.Sv2Tp]
address = "{tp}"
"#
    );
    let path = dir.join(format!("pool-{port}.toml"));
    std::fs::write(&path, config).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let log = dir.join(format!("pool-{port}.log"));
    let child =
        sri::spawn_listening(binary, &["--config".as_ref(), path.as_os_str()], &log, addr).await;
    (child, addr)
}

/// The job the miner works on: from `NewMiningJob` and the `SetNewPrevHash` that
/// activates it.
#[derive(Debug, Clone, Copy)]
struct Job {
    id: u32,
    version: u32,
    merkle_root: [u8; 32],
}

/// What the miner saw.
#[derive(Debug, Default)]
struct MinerLog {
    jobs: u32,
    prev_hashes: u32,
    accepted: u32,
    rejected: Vec<String>,
    /// The shares submitted: (nonce, ntime, version).
    submitted: Vec<(u32, u32, u32)>,
}

/// A standard-channel miner: sets up, opens a channel, then finds `SHARES` shares that
/// meet the channel's target by hashing block headers, submits each and waits for its
/// answer.
async fn miner(pool: SocketAddr) -> Result<MinerLog, CodecError> {
    let authority = AuthorityPublicKey::from_base58check(POOL_AUTHORITY_PUBLIC).unwrap();
    let tcp = TcpStream::connect(pool).await?;
    let conn = noise::connect(
        tcp,
        Initiator::new(authority).unwrap(),
        Sv2Codec::<Message>::new(),
    )
    .await?;
    miner_on(conn, pool).await
}

/// [`miner`] on a connection already made (`pool`: the address it reached).
async fn miner_on<C>(mut conn: C, pool: SocketAddr) -> Result<MinerLog, CodecError>
where
    C: futures::Stream<Item = Result<Message, CodecError>>
        + futures::Sink<Message, Error = CodecError>
        + Unpin,
{
    let text = |s: &str| Str0255::try_from(s).unwrap();
    conn.send(Message::from(SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: REQUIRES_STANDARD_JOBS,
        endpoint_host: text("127.0.0.1"),
        endpoint_port: pool.port(),
        vendor: text("sv2c interop miner"),
        hardware_version: text("cpu"),
        firmware: text(env!("CARGO_PKG_VERSION")),
        device_id: text("miner-1"),
    }))
    .await?;
    conn.send(Message::from(OpenStandardMiningChannel {
        request_id: 7,
        user_identity: text("sv2c-interop"),
        // About 3 000 hashes a share at the pool's 60 shares a minute.
        nominal_hash_rate: 50.0,
        max_target: U256([0xff; 32]),
    }))
    .await?;

    let mut log = MinerLog::default();
    let mut channel = None;
    let mut target = None;
    let mut future: Vec<Job> = Vec::new();
    let mut active: Option<Job> = None;
    let mut prev: Option<([u8; 32], u32, u32)> = None;
    let mut nonce = 0u32;
    let mut submitted = 0u32;
    let mut awaiting = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while log.accepted + (log.rejected.len() as u32) < SHARES {
        if let (Some(ch), Some(t), Some(job), Some((prev_hash, ntime, nbits)), false) =
            (channel, target, active, prev, awaiting)
        {
            // Search for a share, then submit it and wait for the pool's answer.
            loop {
                let header = work::header(
                    job.version,
                    &prev_hash,
                    &job.merkle_root,
                    ntime,
                    nbits,
                    nonce,
                );
                let found = work::meets_target(&work::sha256d(&header), &t);
                nonce = nonce.wrapping_add(1);
                if found {
                    break;
                }
            }
            let found = nonce.wrapping_sub(1);
            conn.send(Message::from(SubmitSharesStandard {
                channel_id: ch,
                sequence_number: submitted,
                job_id: job.id,
                nonce: found,
                ntime,
                version: job.version,
            }))
            .await?;
            log.submitted.push((found, ntime, job.version));
            submitted += 1;
            awaiting = true;
        }
        let msg = timeout(deadline - Instant::now(), conn.next())
            .await
            .expect("the pool answered in time")
            .expect("the pool kept the connection open")?;
        match msg {
            Message::SetupConnectionSuccess(_) => {}
            Message::OpenStandardMiningChannelSuccess(m) => {
                assert_eq!(m.request_id, 7);
                channel = Some(m.channel_id);
                target = Some(m.target);
            }
            Message::SetTarget(m) => target = Some(m.maximum_target),
            Message::NewMiningJob(m) => {
                log.jobs += 1;
                let job = Job {
                    id: m.job_id,
                    version: m.version,
                    merkle_root: m.merkle_root.0,
                };
                match m.min_ntime {
                    Some(_) => active = Some(job),
                    None => future.push(job),
                }
            }
            Message::SetNewPrevHash(m) => {
                log.prev_hashes += 1;
                prev = Some((m.prev_hash.0, m.min_ntime, m.nbits));
                if let Some(job) = future.iter().find(|j| j.id == m.job_id) {
                    active = Some(*job);
                }
                future.clear();
            }
            Message::SubmitSharesSuccess(m) => {
                log.accepted += m.new_submits_accepted_count;
                awaiting = false;
            }
            Message::SubmitSharesError(m) => {
                log.rejected
                    .push(String::from_utf8_lossy(m.error_code.as_bytes()).into_owned());
                awaiting = false;
            }
            Message::SetupConnectionError(e) => panic!("setup refused: {e:?}"),
            Message::OpenMiningChannelError(e) => panic!("channel refused: {e:?}"),
            other => panic!("unexpected message from the pool: {other:?}"),
        }
    }
    Ok(log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the pool_sv2 binary; see the module docs"]
async fn sri_pool_between_our_template_provider_and_our_miner() {
    sri_pool_with_our_miner(false).await;
}

/// The same miner behind our proxy in aggregating mode: SRI's pool sees the proxy's one
/// extended channel and accepts the shares the proxy forwards for the miner's standard
/// channel (a merkle root the proxy computed for the miner's part of the extranonce).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the pool_sv2 binary; see the module docs"]
async fn sri_pool_behind_our_aggregating_proxy() {
    sri_pool_with_our_miner(true).await;
}

async fn sri_pool_with_our_miner(aggregate: bool) {
    let Some(binary) = sri::binary_or_skip(
        "pool_sv2",
        "POOL_SV2",
        "cargo install pool_sv2 --version 0.7.0 --locked --no-default-features",
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("sv2c-pool-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let tp_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tp_addr = tp_listener.local_addr().unwrap();
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let tp = tokio::spawn(template_provider(tp_listener, events_tx));
    let (mut pool, pool_addr) = start_pool(&binary, &dir, tp_addr).await;

    // The pool hands out jobs only once it has a template and its previous hash.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut received = Vec::new();
    loop {
        let event = timeout(deadline - Instant::now(), events.recv())
            .await
            .unwrap_or_else(|_| panic!("no templates sent within 30 s; see {}", dir.display()))
            .expect("the template provider ended early");
        match event {
            TpEvent::TemplatesSent => break,
            TpEvent::Received(m) => received.push(m.name()),
        }
    }
    assert_eq!(received, ["SetupConnection", "CoinbaseOutputConstraints"]);

    let mut proxy = None;
    let log = if aggregate {
        let upstream = TcpStream::connect(pool_addr).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let config = ProxyConfig {
            upstream_host: "127.0.0.1".into(),
            upstream_port: pool_addr.port(),
            upstream_noise: Some(POOL_AUTHORITY_PUBLIC.parse().unwrap()),
            aggregate: true,
            // The miner's rate: SRI's pool sets the channel target from it.
            aggregate_hashrate: 50.0,
            ..ProxyConfig::default()
        };
        let p = Proxy::start(upstream, listener, config)
            .await
            .unwrap_or_else(|e| panic!("the proxy did not start: {e}; see {}", dir.display()));
        let addr = p.local_addr();
        proxy = Some(p);
        let tcp = TcpStream::connect(addr).await.unwrap();
        miner_on(Framed::new(tcp, Sv2Codec::<Message>::new()), addr).await
    } else {
        miner(pool_addr).await
    }
    .expect("the miner's connection");
    eprintln!("miner: {log:?}");
    assert_eq!(
        log.rejected,
        Vec::<String>::new(),
        "shares refused by SRI's pool"
    );
    assert_eq!(log.accepted, SHARES);
    assert!(log.jobs >= 1 && log.prev_hashes >= 1, "{log:?}");

    // Every share was a block: the pool sends each to the Template Provider, built from
    // our template and the miner's share.
    let mut solutions = Vec::new();
    while solutions.len() < log.submitted.len() {
        let event = timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("the pool sent every block to the template provider")
            .expect("the template provider ended early");
        match event {
            TpEvent::Received(Message::SubmitSolution(s)) => {
                assert_eq!(s.template_id, 1);
                let height = [0x03, 0xa0, 0x86, 0x01]; // the template's coinbase prefix
                assert!(
                    s.coinbase_tx.as_bytes().windows(4).any(|w| w == height),
                    "the coinbase is not built on our template"
                );
                solutions.push((s.header_nonce, s.header_timestamp, s.version));
            }
            TpEvent::Received(Message::RequestTransactionData(_)) => {}
            other => panic!("unexpected at the template provider: {other:?}"),
        }
    }
    solutions.sort_unstable();
    let mut submitted = log.submitted.clone();
    submitted.sort_unstable();
    assert_eq!(solutions, submitted);

    if let Some(proxy) = proxy {
        // The proxy answers the miner itself; the pool's successes reach it on their own
        // time, possibly after the blocks reached the template provider.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut stats = proxy.stats();
        while stats.shares_accepted + stats.shares_rejected < u64::from(SHARES)
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
            stats = proxy.stats();
        }
        assert_eq!(
            (stats.shares_forwarded, stats.shares_accepted),
            (u64::from(SHARES), u64::from(SHARES)),
            "{stats:?}"
        );
        proxy.shutdown().await;
    }
    pool.kill().await.unwrap();
    tp.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
