//! Interoperability with SRI's programs that take templates from a Template Provider:
//! `pool_sv2` 0.7.0 (the reference pool) and `jd_client_sv2` 0.6.0 in solo mining mode,
//! each between our `template_provider` program (`examples/examples/template_provider/`)
//! and a standard-channel miner written here that really hashes. Both speak to SRI's
//! program through this library over Noise: the Template Provider as the responder
//! (Template Distribution protocol), the miner as the initiator (Mining protocol). The
//! network target is regtest's, so every share is a block: SRI's program builds it from
//! our template and the miner's share and submits it, and the Template Provider checks it
//! as a node would (merkle root, proof of work, BIP34 height, witness commitment) and
//! moves its tip to it. The test asserts that every share the miner found came back as
//! an accepted block, and none was refused. One more puts our `mining_proxy` program
//! between `pool_sv2` and an SV1 miner built on SRI's `sv1_api`
//! (`sri/sv1_api_miner.rs`), with the same check.
//!
//! The tests need the binaries: `cargo install pool_sv2 --version 0.7.0 --locked
//! --no-default-features`, `cargo install jd_client_sv2 --version 0.6.0 --locked
//! --no-default-features` (or `POOL_SV2=…`, `JD_CLIENT_SV2=…`), and the example program
//! that `cargo test --workspace` builds. They are `#[ignore]`d so that `cargo test
//! --workspace` does not need SRI's programs; run them with
//!
//! ```sh
//! cargo build --example template_provider --example mining_proxy
//! cargo test -p sv2c-roles --test pool_sv2_interop -- --ignored
//! ```
//!
//! Without a binary they fail with a message saying how to install it when `CI` is set,
//! and pass with a note otherwise.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod sri;

use sri::sv1_api_miner::{Sv1Plan, sv1_api_miner};

use futures::SinkExt;
use futures::StreamExt;
use sv2c_binary::messages::{
    Message, OpenStandardMiningChannel, SetupConnection, SubmitSharesStandard,
};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator};
use sv2c_codec::{CodecError, Sv2Codec};
use sv2c_roles::proxy::{Proxy, ProxyConfig, REQUIRES_STANDARD_JOBS};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Child;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::codec::Framed;

/// The authority key pair of SRI's example configurations (a published example key,
/// used here on the loopback interface only), for the pool and the JD client.
const POOL_AUTHORITY_PUBLIC: &str = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
const POOL_AUTHORITY_SECRET: &str = "mkDLTBBRxdBv998612qipDYoTK3YUrqLe8uWw7gu3iXbSrn2n";

/// Shares the miner finds and submits: each is a block.
const SHARES: u32 = 5;

/// Our example program `name`, as `cargo test --workspace` built it beside this test
/// (target/<profile>/examples/).
fn our_program(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test --workspace` (or `cargo build --example {name}`) builds it",
        path.display()
    );
    path
}

/// Waits up to 30 s for a line of `log` starting with `prefix`; returns the rest of it.
async fn line_after(log: &Path, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(rest) = text.lines().find_map(|l| l.strip_prefix(prefix)) {
            return rest.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no line {prefix:?} in {}",
            log.display()
        );
        sleep(Duration::from_millis(100)).await;
    }
}

/// Our Template Provider, over Noise, with regtest's network target and a tip that
/// moves only with the blocks it accepts; returns the child (killed on drop), its
/// address, its authority key and its log.
async fn start_template_provider(dir: &Path) -> (Child, SocketAddr, String, PathBuf) {
    let port = sri::free_port().await;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let log = dir.join(format!("template_provider-{port}.log"));
    let child = sri::spawn_listening(
        &our_program("template_provider"),
        &[
            "--listen".as_ref(),
            addr.to_string().as_ref(),
            "--noise".as_ref(),
            "--nbits".as_ref(),
            "207fffff".as_ref(),
            "--block-interval".as_ref(),
            "0".as_ref(),
            "--transactions".as_ref(),
            "4".as_ref(),
        ],
        &log,
        addr,
    )
    .await;
    let key = line_after(&log, "template_provider: authority public key").await;
    (child, addr, key, log)
}

/// The hashes of the blocks the Template Provider accepted, and its refusals, as its log
/// shows them.
fn tp_outcomes(log: &Path) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let accepted = text
        .lines()
        .filter_map(|l| l.strip_prefix("template_provider: block accepted "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    let refused = text
        .lines()
        .filter(|l| l.starts_with("template_provider: block refused"))
        .map(str::to_owned)
        .collect();
    (accepted, refused)
}

/// Waits up to 10 s for the Template Provider to have judged `count` blocks; asserts that
/// it accepted exactly the miner's `blocks` (hashes as block explorers show them).
async fn assert_blocks_accepted(log: &Path, blocks: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut accepted, mut refused) = tp_outcomes(log);
    while accepted.len() + refused.len() < blocks.len() && Instant::now() < deadline {
        sleep(Duration::from_millis(100)).await;
        (accepted, refused) = tp_outcomes(log);
    }
    assert_eq!(
        refused,
        Vec::<String>::new(),
        "blocks refused; see {}",
        log.display()
    );
    let mut expected = blocks.to_vec();
    expected.sort_unstable();
    accepted.sort_unstable();
    assert_eq!(accepted, expected, "see {}", log.display());
}

/// Starts the pool against the Template Provider at `tp` (whose certificate it checks
/// against `tp_key`); returns the child (killed on drop) and the address miners connect
/// to.
async fn start_pool(
    binary: &Path,
    dir: &Path,
    tp: SocketAddr,
    tp_key: &str,
) -> (Child, SocketAddr) {
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
public_key = "{tp_key}"
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

/// Starts SRI's JD client in solo mining mode against the Template Provider at `tp`;
/// returns the child (killed on drop) and the address miners connect to.
async fn start_jd_client(
    binary: &Path,
    dir: &Path,
    tp: SocketAddr,
    tp_key: &str,
) -> (Child, SocketAddr) {
    let port = sri::free_port().await;
    let config = format!(
        r#"listening_address = "127.0.0.1:{port}"
max_supported_version = 2
min_supported_version = 2
authority_public_key = "{POOL_AUTHORITY_PUBLIC}"
authority_secret_key = "{POOL_AUTHORITY_SECRET}"
cert_validity_sec = 3600
shares_per_minute = 60.0
share_batch_size = 1
mode = "SOLOMINING"
jdc_signature = "sv2c interop"
coinbase_reward_script = "addr(tb1qa0sm0hxzj0x25rh8gw5xlzwlsfvvyz8u96w3p8)"
upstreams = []

[template_provider_type.Sv2Tp]
address = "{tp}"
public_key = "{tp_key}"
"#
    );
    let path = dir.join(format!("jd_client-{port}.toml"));
    std::fs::write(&path, config).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let log = dir.join(format!("jd_client-{port}.log"));
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
    /// The hashes of the shares submitted (each a block), as block explorers show them.
    blocks: Vec<String>,
}

/// A standard-channel miner: sets up, opens a channel, then finds `SHARES` shares that
/// meet the channel's target by hashing block headers, submits each and waits for its
/// answer. Every share is a block and moves the tip: the miner waits for the new tip (a
/// `SetNewPrevHash` more than the shares it sent) before it looks for the next share, so
/// that none is stale.
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
        let new_tip = log.prev_hashes > submitted;
        if let (Some(ch), Some(t), Some(job), Some((prev_hash, ntime, nbits)), false, true) =
            (channel, target, active, prev, awaiting, new_tip)
        {
            // Search for a share, then submit it and wait for the pool's answer.
            let hash = loop {
                let header = work::header(
                    job.version,
                    &prev_hash,
                    &job.merkle_root,
                    ntime,
                    nbits,
                    nonce,
                );
                let hash = work::sha256d(&header);
                nonce = nonce.wrapping_add(1);
                if work::meets_target(&hash, &t) {
                    break hash;
                }
            };
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
            log.blocks
                .push(hash.iter().rev().map(|b| format!("{b:02x}")).collect());
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

/// SRI's `pool_sv2`, or `None` where it is not installed (see [`sri::binary_or_skip`]).
fn pool_sv2() -> Option<PathBuf> {
    sri::binary_or_skip(
        "pool_sv2",
        "POOL_SV2",
        "cargo install pool_sv2 --version 0.7.0 --locked --no-default-features",
    )
}

/// A scratch directory for one test's configuration files and logs.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sv2c-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn sri_pool_with_our_miner(aggregate: bool) {
    let Some(binary) = pool_sv2() else {
        return;
    };
    let dir = scratch(if aggregate {
        "pool-interop-aggregate"
    } else {
        "pool-interop"
    });
    let (_tp, tp_addr, tp_key, tp_log) = start_template_provider(&dir).await;
    let (mut pool, pool_addr) = start_pool(&binary, &dir, tp_addr, &tp_key).await;
    line_after(&tp_log, "template_provider: coinbase constraints").await;

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
    assert!(log.jobs >= SHARES && log.prev_hashes >= SHARES, "{log:?}");

    // Every share was a block: the pool built it from our template and the miner's share
    // and sent it to the Template Provider, which accepted it.
    assert_blocks_accepted(&tp_log, &log.blocks).await;

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
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a user runs in front of SRI's pool for SV1 miners: our `mining_proxy` program
/// (`--aggregate --sv1-listen`, announcing 50 H/s so that SRI's pool sets an easy
/// channel target) between `pool_sv2` and an SV1 miner built on SRI's `sv1_api` 6.0.0.
/// Every good share is accepted, reaches the pool and comes back from the Template
/// Provider as an accepted block (regtest's target: each share is a block); the miner's
/// difficulty is the pool's channel target, announced before the first job; a share of
/// an unknown job, a duplicate, one below the difficulty and one with a longer
/// extranonce2 are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the pool_sv2 binary; see the module docs"]
async fn sv1_api_miner_through_our_proxy_to_sri_pool() {
    let Some(binary) = pool_sv2() else {
        return;
    };
    let dir = scratch("pool-interop-sv1");
    let (_tp, tp_addr, tp_key, tp_log) = start_template_provider(&dir).await;
    let (_pool, pool_addr) = start_pool(&binary, &dir, tp_addr, &tp_key).await;
    line_after(&tp_log, "template_provider: coinbase constraints").await;
    let (_proxy, sv1_addr) = sri::start_sv1_proxy(
        &our_program("mining_proxy"),
        &dir,
        pool_addr,
        POOL_AUTHORITY_PUBLIC,
        &["--aggregate-hashrate", "50"],
    )
    .await;
    let plan = Sv1Plan {
        shares: SHARES as usize,
        pool_target: U256([0xff; 32]),
        per_job: 1,
    };
    let answers = sv1_api_miner(sv1_addr, "sv1api.sri-pool", plan).await;
    eprintln!("sv1_api miner: {answers:?}");
    assert_eq!(
        answers.accepted,
        SHARES as usize,
        "logs in {}",
        dir.display()
    );
    for (fault, accepted, error) in &answers.faults {
        assert!(!accepted, "the proxy accepted a share with {fault:?}");
        assert!(error.is_some(), "{fault:?} refused without an error");
    }
    assert_blocks_accepted(&tp_log, &answers.accepted_hashes).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// SRI's JD client in solo mining mode: it takes templates from our Template Provider,
/// serves our miner, and submits the blocks the miner finds to the Template Provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the jd_client_sv2 binary; see the module docs"]
async fn sri_jd_client_solo_mining_between_our_template_provider_and_our_miner() {
    let Some(binary) = sri::binary_or_skip(
        "jd_client_sv2",
        "JD_CLIENT_SV2",
        "cargo install jd_client_sv2 --version 0.6.0 --locked --no-default-features",
    ) else {
        return;
    };
    let dir = scratch("jd-client-interop");
    let (_tp, tp_addr, tp_key, tp_log) = start_template_provider(&dir).await;
    let (mut jdc, jdc_addr) = start_jd_client(&binary, &dir, tp_addr, &tp_key).await;
    line_after(&tp_log, "template_provider: coinbase constraints").await;

    let log = miner(jdc_addr).await.expect("the miner's connection");
    eprintln!("miner: {log:?}");
    assert_eq!(
        log.rejected,
        Vec::<String>::new(),
        "shares refused by SRI's JD client"
    );
    assert_eq!(log.accepted, SHARES);
    assert_blocks_accepted(&tp_log, &log.blocks).await;

    jdc.kill().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
