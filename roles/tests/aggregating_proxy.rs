//! The proxy's aggregating mode in front of our pool: the pool sees one connection and
//! one extended channel; a standard and an extended miner behind the proxy get their own
//! extranonce prefixes, mine real shares against an easy target, and the pool accepts
//! every share the proxy forwards. Shares the proxy refuses never reach the pool.

use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{
    Message, OpenExtendedMiningChannel, OpenStandardMiningChannel,
    OpenStandardMiningChannelSuccess, RequestExtensions, SubmitSharesExtended,
    SubmitSharesStandard,
};
use sv2c_binary::tlv::{UserIdentity, WithTlvs};
use sv2c_binary::{B032, Seq064K, Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_roles::pool::{Pool, PoolConfig};
use sv2c_roles::proxy::aggregate::{MINER_EXTRANONCE_LEN, SUB_PREFIX_LEN};
use sv2c_roles::proxy::{Proxy, ProxyConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

mod common;
use common::{Client, connect, next};

/// Shares need 8 leading zero bits: a few hundred hashes each.
const BITS: u32 = 8;
/// Shares each miner submits.
const SHARES: u32 = 5;

/// A miner's channel and the job it mines on.
#[derive(Debug, Clone)]
struct Channel {
    id: u32,
    target: U256,
    extranonce_prefix: Vec<u8>,
    /// Extended channels: bytes the miner rolls. Standard: 0.
    extranonce_size: usize,
    job_id: u32,
    version: u32,
    /// Extended channels: the coinbase parts and path. Standard: the merkle root.
    work: Work,
    prev_hash: [u8; 32],
    ntime: u32,
    nbits: u32,
}

#[derive(Debug, Clone)]
enum Work {
    Extended {
        prefix: Vec<u8>,
        suffix: Vec<u8>,
        path: Vec<[u8; 32]>,
    },
    Standard {
        merkle_root: [u8; 32],
    },
}

async fn open_extended(client: &mut Client, user: &str, min_extranonce_size: u16) -> Message {
    let open = OpenExtendedMiningChannel {
        request_id: 7,
        user_identity: Str0255::try_from(user).unwrap(),
        nominal_hash_rate: 1e6,
        max_target: U256([0xff; 32]),
        min_extranonce_size,
    };
    client.send(open).await.unwrap();
    next(client).await
}

async fn extended_channel(client: &mut Client, user: &str) -> Channel {
    let Message::OpenExtendedMiningChannelSuccess(ok) = open_extended(client, user, 4).await else {
        panic!("extended channel refused")
    };
    assert_eq!(ok.request_id, 7);
    let Message::NewExtendedMiningJob(job) = next(client).await else {
        panic!("no job")
    };
    assert_eq!((job.channel_id, job.min_ntime), (ok.channel_id, None));
    let Message::SetNewPrevHash(tip) = next(client).await else {
        panic!("no prev hash")
    };
    assert_eq!((tip.channel_id, tip.job_id), (ok.channel_id, job.job_id));
    Channel {
        id: ok.channel_id,
        target: ok.target,
        extranonce_prefix: ok.extranonce_prefix.as_slice().to_vec(),
        extranonce_size: usize::from(ok.extranonce_size),
        job_id: job.job_id,
        version: job.version,
        work: Work::Extended {
            prefix: job.coinbase_tx_prefix.as_bytes().to_vec(),
            suffix: job.coinbase_tx_suffix.as_bytes().to_vec(),
            path: job.merkle_path.iter().map(|h| h.0).collect(),
        },
        prev_hash: tip.prev_hash.0,
        ntime: tip.min_ntime,
        nbits: tip.nbits,
    }
}

/// Opens a standard channel for `user` at 1 MH/s with `max_target`; panics unless it is
/// granted.
async fn open_standard(
    client: &mut Client,
    request_id: u32,
    user: &str,
    max_target: U256,
) -> OpenStandardMiningChannelSuccess {
    let open = OpenStandardMiningChannel {
        request_id,
        user_identity: Str0255::try_from(user).unwrap(),
        nominal_hash_rate: 1e6,
        max_target,
    };
    client.send(open).await.unwrap();
    let Message::OpenStandardMiningChannelSuccess(ok) = next(client).await else {
        panic!("standard channel refused")
    };
    ok
}

async fn standard_channel(client: &mut Client, user: &str) -> Channel {
    let ok = open_standard(client, 3, user, U256([0xff; 32])).await;
    assert_eq!(ok.request_id, 3);
    let Message::NewMiningJob(job) = next(client).await else {
        panic!("no job")
    };
    assert_eq!((job.channel_id, job.min_ntime), (ok.channel_id, None));
    let Message::SetNewPrevHash(tip) = next(client).await else {
        panic!("no prev hash")
    };
    assert_eq!((tip.channel_id, tip.job_id), (ok.channel_id, job.job_id));
    Channel {
        id: ok.channel_id,
        target: ok.target,
        extranonce_prefix: ok.extranonce_prefix.as_slice().to_vec(),
        extranonce_size: 0,
        job_id: job.job_id,
        version: job.version,
        work: Work::Standard {
            merkle_root: job.merkle_root.0,
        },
        prev_hash: tip.prev_hash.0,
        ntime: tip.min_ntime,
        nbits: tip.nbits,
    }
}

/// The miner's extranonce for share `seq`.
fn extranonce(c: &Channel, seq: u32) -> Vec<u8> {
    let mut e = vec![0u8; c.extranonce_size];
    let n = c.extranonce_size.min(4);
    e[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
    e
}

/// The merkle root of `c`'s job with the miner's `extranonce`.
fn root(c: &Channel, extranonce: &[u8]) -> [u8; 32] {
    match &c.work {
        Work::Standard { merkle_root } => *merkle_root,
        Work::Extended {
            prefix,
            suffix,
            path,
        } => {
            let coinbase = [prefix, &c.extranonce_prefix[..], extranonce, suffix].concat();
            work::merkle_root(work::sha256d(&coinbase), path.iter())
        }
    }
}

/// The first nonce whose header (at `ntime`) meets (`meets`) or misses the channel
/// target.
fn find_nonce(c: &Channel, extranonce: &[u8], ntime: u32, meets: bool) -> u32 {
    let root = root(c, extranonce);
    (0u32..)
        .find(|&n| {
            let h = work::header(c.version, &c.prev_hash, &root, ntime, c.nbits, n);
            work::meets_target(&work::sha256d(&h), &c.target) == meets
        })
        .unwrap()
}

/// The header hash of the share [`submit`] sends for `seq` (one that meets the target).
fn share_hash(c: &Channel, seq: u32) -> [u8; 32] {
    let en = extranonce(c, seq);
    let ntime = c.ntime + seq;
    let nonce = find_nonce(c, &en, ntime, true);
    let root = root(c, &en);
    work::sha256d(&work::header(
        c.version,
        &c.prev_hash,
        &root,
        ntime,
        c.nbits,
        nonce,
    ))
}

/// Submits share `seq` on `c` (job `job_id`, a nonce that meets the target or not),
/// tagged with `user` if given; returns the proxy's answer: `Ok(())` for success, the
/// error code otherwise.
async fn submit(
    client: &mut Client,
    c: &Channel,
    seq: u32,
    job_id: u32,
    meets: bool,
    user: Option<&str>,
) -> Result<(), String> {
    let en = extranonce(c, seq);
    // A standard miner has no extranonce to roll: each share has its own ntime.
    let ntime = c.ntime + seq;
    let nonce = find_nonce(c, &en, ntime, meets);
    match &c.work {
        Work::Standard { .. } => {
            let share = SubmitSharesStandard {
                channel_id: c.id,
                sequence_number: seq,
                job_id,
                nonce,
                ntime,
                version: c.version,
            };
            client.send(share).await.unwrap();
        }
        Work::Extended { .. } => {
            let share = SubmitSharesExtended {
                channel_id: c.id,
                sequence_number: seq,
                job_id,
                nonce,
                ntime,
                version: c.version,
                extranonce: B032::try_from(&en[..]).unwrap(),
            };
            let mut msg = WithTlvs::new(share);
            if let Some(user) = user {
                msg.push(UserIdentity::try_from(user).unwrap().to_tlv().to_buf());
            }
            client.send(msg).await.unwrap();
        }
    }
    loop {
        match next(client).await {
            Message::SubmitSharesSuccess(s) => {
                assert_eq!((s.channel_id, s.last_sequence_number), (c.id, seq));
                return Ok(());
            }
            Message::SubmitSharesError(e) => {
                assert_eq!((e.channel_id, e.sequence_number), (c.id, seq));
                return Err(String::from_utf8_lossy(e.error_code.as_bytes()).into_owned());
            }
            // Work keeps coming while the answer is on its way.
            Message::NewMiningJob(_)
            | Message::NewExtendedMiningJob(_)
            | Message::SetNewPrevHash(_)
            | Message::SetTarget(_) => {}
            other => panic!("expected a share answer, got {other:?}"),
        }
    }
}

/// A pool that keeps one job for the whole test (every share is on the current job),
/// and a proxy in aggregating mode in front of it.
async fn start() -> (Pool, Proxy) {
    start_with(PoolConfig {
        share_target: work::target_with_zero_bits(BITS),
        job_interval: Duration::from_secs(3600),
        ..PoolConfig::default()
    })
    .await
}

async fn start_with(pool_config: PoolConfig) -> (Pool, Proxy) {
    let pool = Pool::bind("127.0.0.1:0", pool_config).await.unwrap();
    let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProxyConfig {
        upstream_host: "127.0.0.1".into(),
        upstream_port: pool.local_addr().port(),
        upstream_extensions: vec![0x0002],
        aggregate: true,
        aggregate_user: "farm".into(),
        ..ProxyConfig::default()
    };
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();
    (pool, proxy)
}

/// Waits until the pool has answered every share the proxy forwarded, and the proxy has
/// counted the answers.
async fn settled(pool: &Pool, proxy: &Proxy) {
    timeout(Duration::from_secs(10), async {
        loop {
            let (s, p) = (pool.stats(), proxy.stats());
            if s.shares_accepted + s.shares_rejected >= p.shares_forwarded
                && p.shares_accepted >= s.shares_accepted
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the pool answers every forwarded share");
}

#[tokio::test]
async fn one_upstream_channel_serves_a_standard_and_an_extended_miner() {
    let (pool, proxy) = start().await;

    let mut ext_client = connect(proxy.local_addr(), 0).await;
    let request = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&[0x0002]).unwrap(),
    };
    ext_client.send(request).await.unwrap();
    assert!(matches!(
        next(&mut ext_client).await,
        Message::RequestExtensionsSuccess(_)
    ));
    let ext = extended_channel(&mut ext_client, "ext-miner").await;
    let mut std_client = connect(proxy.local_addr(), 0).await;
    let std = standard_channel(&mut std_client, "std-miner").await;

    // Distinct prefixes inside the one upstream extranonce: the pool's prefix, then each
    // miner's sub-prefix; the standard miner's is padded to the full extranonce.
    assert_ne!(ext.id, std.id);
    let upstream_len = ext.extranonce_prefix.len() - SUB_PREFIX_LEN;
    assert_eq!(
        ext.extranonce_prefix[..upstream_len],
        std.extranonce_prefix[..upstream_len]
    );
    assert_ne!(
        ext.extranonce_prefix[upstream_len..],
        std.extranonce_prefix[upstream_len..upstream_len + SUB_PREFIX_LEN]
    );
    assert_eq!(
        std.extranonce_prefix.len(),
        ext.extranonce_prefix.len() + ext.extranonce_size
    );
    // The pool grants what the proxy asks (more than its default of 8).
    assert_eq!(ext.extranonce_size, MINER_EXTRANONCE_LEN);
    assert!(
        std.extranonce_prefix[ext.extranonce_prefix.len()..]
            .iter()
            .all(|&b| b == 0)
    );

    for seq in 1..=SHARES {
        let user = if seq % 2 == 0 { "alice" } else { "bob" };
        assert_eq!(
            submit(&mut ext_client, &ext, seq, ext.job_id, true, Some(user)).await,
            Ok(())
        );
        assert_eq!(
            submit(&mut std_client, &std, seq, std.job_id, true, None).await,
            Ok(())
        );
    }
    settled(&pool, &proxy).await;
    let forwarded = u64::from(2 * SHARES);
    let stats = pool.stats();
    assert_eq!(stats.connections, 1, "the pool sees the proxy only");
    assert_eq!(
        stats.channels_opened, 1,
        "one upstream channel for both miners"
    );
    assert_eq!(stats.shares_accepted, forwarded);
    assert_eq!(stats.shares_rejected, 0);
    let p = proxy.stats();
    assert_eq!(
        (p.shares_forwarded, p.shares_accepted),
        (forwarded, forwarded)
    );
    assert_eq!(p.channels_opened, 2);
    // The `user_identity` TLVs of the extended miner's shares reached the pool intact;
    // the standard miner's shares count for the proxy's own channel.
    let mut workers: Vec<(String, u64)> = pool
        .workers()
        .into_iter()
        .map(|(name, w)| (name, w.shares_accepted))
        .collect();
    workers.sort();
    assert_eq!(
        workers,
        [
            ("alice".into(), u64::from(SHARES / 2)),
            ("bob".into(), u64::from(SHARES - SHARES / 2)),
            ("farm".into(), u64::from(SHARES)),
        ]
    );

    // Refused by the proxy, never forwarded: an unknown job, a hash above the target, an
    // extranonce of the wrong size.
    let seq = SHARES + 1;
    assert_eq!(
        submit(&mut ext_client, &ext, seq, ext.job_id + 100, true, None).await,
        Err("invalid-job-id".into())
    );
    assert_eq!(
        submit(&mut std_client, &std, seq, std.job_id + 100, true, None).await,
        Err("invalid-job-id".into())
    );
    assert_eq!(
        submit(&mut std_client, &std, seq + 1, std.job_id, false, None).await,
        Err("difficulty-too-low".into())
    );
    let short = Channel {
        extranonce_size: 3,
        ..ext.clone()
    };
    assert_eq!(
        submit(&mut ext_client, &short, seq + 2, ext.job_id, true, None).await,
        Err("bad-extranonce-size".into())
    );
    // A share on a channel that is not the miner's.
    let foreign = Channel {
        id: std.id,
        ..ext.clone()
    };
    assert_eq!(
        submit(&mut ext_client, &foreign, seq + 3, ext.job_id, true, None).await,
        Err("invalid-channel-id".into())
    );
    // The same share again: answered by the proxy, not forwarded.
    assert_eq!(
        submit(&mut std_client, &std, 1, std.job_id, true, None).await,
        Err("duplicate-share".into())
    );
    // One more good share: anything forwarded by mistake has been answered by then.
    assert_eq!(
        submit(&mut ext_client, &ext, seq + 4, ext.job_id, true, None).await,
        Ok(())
    );
    settled(&pool, &proxy).await;
    let stats = pool.stats();
    assert_eq!(
        (stats.shares_accepted, stats.shares_rejected),
        (forwarded + 1, 0)
    );
    let p = proxy.stats();
    assert_eq!(p.shares_forwarded, forwarded + 1);
    assert_eq!(p.shares_rejected, 6);

    // An extended channel that wants more than the bytes left is refused.
    let greedy = MINER_EXTRANONCE_LEN as u16 + 1;
    let Message::OpenMiningChannelError(e) = open_extended(&mut ext_client, "greedy", greedy).await
    else {
        panic!("a channel with {greedy} extranonce bytes was granted")
    };
    assert_eq!(e.error_code.as_bytes(), b"min-extranonce-size-too-large");
    // A miner that asks for a harder target than the pool's gets it.
    let hard = work::target_with_zero_bits(BITS + 4);
    let ok = open_standard(&mut std_client, 9, "hard", hard).await;
    assert_eq!(ok.target, hard);
    assert_eq!(pool.stats().channels_opened, 1);

    proxy.shutdown().await;
    pool.shutdown().await;
}

/// Shares that arrive in one read are answered in order: a channel's consecutive
/// accepted shares with one `SubmitShares.Success` that counts them, a refused one with
/// its error in between.
#[tokio::test]
async fn shares_of_one_read_are_acknowledged_together_in_order() {
    let (pool, proxy) = start().await;
    let mut client = connect(proxy.local_addr(), 0).await;
    let c = standard_channel(&mut client, "batch-miner").await;
    // Shares 1 and 2 meet the target, 3 does not, 4 and 5 do: one write.
    for seq in 1..=5u32 {
        let ntime = c.ntime + seq;
        let share = SubmitSharesStandard {
            channel_id: c.id,
            sequence_number: seq,
            job_id: c.job_id,
            nonce: find_nonce(&c, &[], ntime, seq != 3),
            ntime,
            version: c.version,
        };
        client.feed(share).await.unwrap();
    }
    SinkExt::<SubmitSharesStandard>::flush(&mut client)
        .await
        .unwrap();
    let mut answers = Vec::new();
    while answers.len() < 3 {
        match next(&mut client).await {
            Message::SubmitSharesSuccess(s) => {
                assert_eq!(s.channel_id, c.id);
                answers.push(format!(
                    "ok {} x{}",
                    s.last_sequence_number, s.new_submits_accepted_count
                ));
            }
            Message::SubmitSharesError(e) => {
                let code = String::from_utf8_lossy(e.error_code.as_bytes()).into_owned();
                answers.push(format!("error {} {code}", e.sequence_number));
            }
            Message::NewMiningJob(_) | Message::SetNewPrevHash(_) | Message::SetTarget(_) => {}
            other => panic!("expected a share answer, got {other:?}"),
        }
    }
    assert_eq!(
        answers,
        ["ok 2 x2", "error 3 difficulty-too-low", "ok 5 x2"]
    );
    settled(&pool, &proxy).await;
    assert_eq!(pool.stats().shares_accepted, 4);
    proxy.shutdown().await;
    pool.shutdown().await;
}

/// A miner that joins later gets the job and tip the proxy kept, and a sub-prefix no
/// other miner has; a miner that leaves does not disturb the others.
#[tokio::test]
async fn miners_joining_later_get_the_current_work_and_their_own_prefix() {
    let (pool, proxy) = start().await;
    let mut first = connect(proxy.local_addr(), 0).await;
    let a = standard_channel(&mut first, "a").await;
    // A standard miner's prefix is the pool's prefix and every byte the pool granted (what
    // the proxy asked for).
    let upstream_len = a.extranonce_prefix.len() - (SUB_PREFIX_LEN + MINER_EXTRANONCE_LEN);
    let sub = |c: &Channel| c.extranonce_prefix[upstream_len..][..SUB_PREFIX_LEN].to_vec();
    let mut subs = vec![sub(&a)];
    for k in 0..3u32 {
        let mut late = connect(proxy.local_addr(), 0).await;
        let c = if k % 2 == 0 {
            standard_channel(&mut late, "late").await
        } else {
            extended_channel(&mut late, "late").await
        };
        assert_eq!(
            c.extranonce_prefix[..upstream_len],
            a.extranonce_prefix[..upstream_len]
        );
        assert_eq!(submit(&mut late, &c, 1, c.job_id, true, None).await, Ok(()));
        subs.push(sub(&c));
        // The miner leaves; its sub-prefix is not given to the next one.
    }
    subs.sort();
    subs.dedup();
    assert_eq!(subs.len(), 4, "every miner has its own sub-prefix");
    assert_eq!(
        submit(&mut first, &a, 1, a.job_id, true, None).await,
        Ok(())
    );
    settled(&pool, &proxy).await;
    assert_eq!(pool.stats().shares_accepted, 4);
    assert_eq!(pool.stats().channels_opened, 1);
    proxy.shutdown().await;
    pool.shutdown().await;
}

/// Reads `client`'s messages until a `SetNewPrevHash` for a job announced after the
/// channel opened, and updates `c` to mine on it. Every message must be on `c`'s channel.
async fn follow_new_tip(client: &mut Client, c: &mut Channel) {
    let mut future = Vec::new();
    loop {
        match next(client).await {
            Message::NewMiningJob(job) => {
                assert_eq!(job.channel_id, c.id);
                if job.min_ntime.is_none() {
                    future.push((
                        job.job_id,
                        job.version,
                        Work::Standard {
                            merkle_root: job.merkle_root.0,
                        },
                    ));
                }
            }
            Message::NewExtendedMiningJob(job) => {
                assert_eq!(job.channel_id, c.id);
                if job.min_ntime.is_none() {
                    let work = Work::Extended {
                        prefix: job.coinbase_tx_prefix.as_bytes().to_vec(),
                        suffix: job.coinbase_tx_suffix.as_bytes().to_vec(),
                        path: job.merkle_path.iter().map(|h| h.0).collect(),
                    };
                    future.push((job.job_id, job.version, work));
                }
            }
            Message::SetNewPrevHash(tip) => {
                assert_eq!(tip.channel_id, c.id);
                let Some(k) = future.iter().position(|(id, ..)| *id == tip.job_id) else {
                    continue;
                };
                let (job_id, version, work) = future.swap_remove(k);
                c.job_id = job_id;
                c.version = version;
                c.work = work;
                c.prev_hash = tip.prev_hash.0;
                c.ntime = tip.min_ntime;
                c.nbits = tip.nbits;
                return;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// New jobs and chain tips reach every miner channel on its own id (a standard miner's
/// jobs with its own merkle root), and shares on them are accepted by the pool.
#[tokio::test]
async fn new_jobs_and_tips_are_relayed_to_every_miner() {
    let (pool, proxy) = start_with(PoolConfig {
        share_target: work::target_with_zero_bits(BITS),
        job_interval: Duration::from_millis(200),
        jobs_per_prev_hash: 3,
        ..PoolConfig::default()
    })
    .await;
    let mut std_client = connect(proxy.local_addr(), 0).await;
    let mut std = standard_channel(&mut std_client, "s").await;
    let mut ext_client = connect(proxy.local_addr(), 0).await;
    let mut ext = extended_channel(&mut ext_client, "e").await;
    let (first_std, first_ext) = (std.prev_hash, ext.prev_hash);
    follow_new_tip(&mut std_client, &mut std).await;
    follow_new_tip(&mut ext_client, &mut ext).await;
    assert_ne!(std.prev_hash, first_std);
    assert_ne!(ext.prev_hash, first_ext);
    assert_eq!(
        submit(&mut std_client, &std, 1, std.job_id, true, None).await,
        Ok(())
    );
    assert_eq!(
        submit(&mut ext_client, &ext, 1, ext.job_id, true, None).await,
        Ok(())
    );
    settled(&pool, &proxy).await;
    assert_eq!(pool.stats().shares_accepted, 2);
    assert_eq!(pool.stats().channels_opened, 1);
    proxy.shutdown().await;
    pool.shutdown().await;
}

/// Reads `client`'s messages until a `SetTarget`, keeping `c` on the newest job; returns
/// the target.
async fn until_set_target(client: &mut Client, c: &mut Channel) -> U256 {
    loop {
        match next(client).await {
            Message::NewMiningJob(job) if job.min_ntime.is_some() => {
                assert_eq!(job.channel_id, c.id);
                c.job_id = job.job_id;
                c.version = job.version;
                c.work = Work::Standard {
                    merkle_root: job.merkle_root.0,
                };
            }
            Message::NewExtendedMiningJob(job) if job.min_ntime.is_some() => {
                assert_eq!(job.channel_id, c.id);
                c.job_id = job.job_id;
                c.version = job.version;
                c.work = Work::Extended {
                    prefix: job.coinbase_tx_prefix.as_bytes().to_vec(),
                    suffix: job.coinbase_tx_suffix.as_bytes().to_vec(),
                    path: job.merkle_path.iter().map(|h| h.0).collect(),
                };
            }
            Message::SetTarget(t) => {
                assert_eq!(t.channel_id, c.id);
                return t.maximum_target;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The pool's `SetTarget` reaches every miner channel, bounded by the miner's own
/// `max_target`, and the proxy checks shares against the new target.
#[tokio::test]
async fn set_target_reaches_every_miner_within_its_max_target() {
    let start_target = work::target_with_zero_bits(BITS + 4);
    let (pool, proxy) = start_with(PoolConfig {
        share_target: start_target,
        job_interval: Duration::from_millis(200),
        jobs_per_prev_hash: 10_000,
        // No shares for a second: the pool makes the proxy's channel easier.
        vardiff: Some(sv2c_channels::vardiff::VardiffConfig {
            shares_per_minute: 600.0,
            min_window_secs: 1,
            window_secs: 5,
            deadband: 1.5,
            max_step: 16.0,
            max_target: U256([0xff; 32]),
        }),
        ..PoolConfig::default()
    })
    .await;
    let mut std_client = connect(proxy.local_addr(), 0).await;
    let mut std = standard_channel(&mut std_client, "s").await;
    let mut ext_client = connect(proxy.local_addr(), 0).await;
    let mut ext = extended_channel(&mut ext_client, "e").await;
    assert_eq!((std.target, ext.target), (start_target, start_target));
    let mut hard_client = connect(proxy.local_addr(), 0).await;
    let hard = open_standard(&mut hard_client, 3, "hard", start_target).await;
    let hard_id = hard.channel_id;

    let eased = until_set_target(&mut std_client, &mut std).await;
    assert!(
        work::meets_target(&start_target.0, &eased) && eased != start_target,
        "the pool made the target easier"
    );
    assert_eq!(until_set_target(&mut ext_client, &mut ext).await, eased);
    // The miner asked for no easier target than the start one: it keeps it.
    loop {
        match next(&mut hard_client).await {
            Message::SetTarget(t) => {
                assert_eq!((t.channel_id, t.maximum_target), (hard_id, start_target));
                break;
            }
            Message::NewMiningJob(_) | Message::SetNewPrevHash(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    // Shares that meet the eased target and not the start one are good.
    std.target = eased;
    ext.target = eased;
    let easy_only = |c: &Channel| {
        (1u32..)
            .find(|&seq| !work::meets_target(&share_hash(c, seq), &start_target))
            .unwrap()
    };
    let seq = easy_only(&std);
    assert_eq!(
        submit(&mut std_client, &std, seq, std.job_id, true, None).await,
        Ok(())
    );
    let seq = easy_only(&ext);
    assert_eq!(
        submit(&mut ext_client, &ext, seq, ext.job_id, true, None).await,
        Ok(())
    );
    settled(&pool, &proxy).await;
    let stats = pool.stats();
    assert_eq!((stats.shares_accepted, stats.shares_rejected), (2, 0));
    proxy.shutdown().await;
    pool.shutdown().await;
}
