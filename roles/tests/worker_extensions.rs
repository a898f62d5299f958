//! Extensions Negotiation (0x0001) and Worker-Specific Hashrate Tracking (0x0002) on our
//! pool and through our proxy: a client written here negotiates, mines real shares on an
//! extended channel and tags them with `user_identity` TLVs; the pool's per-worker counts
//! must name the right workers.

use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{
    CloseChannel, Message, OpenExtendedMiningChannel, RequestExtensions, SubmitSharesExtended,
};
use sv2c_binary::tlv::{UserIdentity, WithTlvs};
use sv2c_binary::{B032, Seq064K, Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_roles::pool::{Pool, PoolConfig};
use sv2c_roles::proxy::{Proxy, ProxyConfig};
use tokio::net::{TcpListener, TcpStream};

mod common;
use common::{Client, connect, next};

const BITS: u32 = 8;

/// Sends `RequestExtensions` for `ids`; returns the extensions granted, or `Err` with the
/// error's unsupported list.
async fn request(client: &mut Client, ids: &[u16]) -> Result<Vec<u16>, Vec<u16>> {
    let request = RequestExtensions {
        request_id: 42,
        requested_extensions: Seq064K::from_slice(ids).unwrap(),
    };
    client.send(request).await.unwrap();
    match next(client).await {
        Message::RequestExtensionsSuccess(s) => {
            assert_eq!(s.request_id, 42);
            Ok(s.supported_extensions.to_vec())
        }
        Message::RequestExtensionsError(e) => {
            assert_eq!(e.request_id, 42);
            Err(e.unsupported_extensions.to_vec())
        }
        other => panic!("expected a RequestExtensions answer, got {other:?}"),
    }
}

/// An open extended channel and the job to mine on.
struct Channel {
    id: u32,
    target: U256,
    extranonce_prefix: Vec<u8>,
    extranonce_size: usize,
    job_id: u32,
    version: u32,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    path: Vec<[u8; 32]>,
    prev_hash: [u8; 32],
    ntime: u32,
    nbits: u32,
}

async fn open(client: &mut Client, user: &str) -> Channel {
    let open = OpenExtendedMiningChannel {
        request_id: 1,
        user_identity: Str0255::try_from(user).unwrap(),
        nominal_hash_rate: 1e6,
        max_target: U256([0xff; 32]),
        min_extranonce_size: 4,
    };
    client.send(open).await.unwrap();
    let Message::OpenExtendedMiningChannelSuccess(ok) = next(client).await else {
        panic!("channel refused")
    };
    let Message::NewExtendedMiningJob(job) = next(client).await else {
        panic!("no job")
    };
    let Message::SetNewPrevHash(tip) = next(client).await else {
        panic!("no prev hash")
    };
    assert_eq!(tip.job_id, job.job_id);
    Channel {
        id: ok.channel_id,
        target: ok.target,
        extranonce_prefix: ok.extranonce_prefix.as_slice().to_vec(),
        extranonce_size: usize::from(ok.extranonce_size),
        job_id: job.job_id,
        version: job.version,
        prefix: job.coinbase_tx_prefix.as_bytes().to_vec(),
        suffix: job.coinbase_tx_suffix.as_bytes().to_vec(),
        path: job.merkle_path.iter().map(|h| h.0).collect(),
        prev_hash: tip.prev_hash.0,
        ntime: tip.min_ntime,
        nbits: tip.nbits,
    }
}

/// Share `seq` on `c`, mined: its extranonce is `seq`, its nonce the first that meets the
/// channel's target.
fn mine(c: &Channel, seq: u32) -> SubmitSharesExtended {
    let extranonce = {
        let mut e = vec![0u8; c.extranonce_size];
        e[..4].copy_from_slice(&seq.to_le_bytes());
        e
    };
    let mut coinbase = c.prefix.clone();
    coinbase.extend_from_slice(&c.extranonce_prefix);
    coinbase.extend_from_slice(&extranonce);
    coinbase.extend_from_slice(&c.suffix);
    let root = work::merkle_root(work::sha256d(&coinbase), c.path.iter());
    let nonce = (0u32..)
        .find(|&n| {
            let h = work::header(c.version, &c.prev_hash, &root, c.ntime, c.nbits, n);
            work::meets_target(&work::sha256d(&h), &c.target)
        })
        .unwrap();
    SubmitSharesExtended {
        channel_id: c.id,
        sequence_number: seq,
        job_id: c.job_id,
        nonce,
        ntime: c.ntime,
        version: c.version,
        extranonce: B032::try_from(&extranonce[..]).unwrap(),
    }
}

/// Mines share `seq` on `c` and submits it, tagged with `user` if given; returns whether
/// the answer was `SubmitShares.Success`.
async fn submit(client: &mut Client, c: &Channel, seq: u32, user: Option<&str>) -> bool {
    let mut msg = WithTlvs::new(mine(c, seq));
    if let Some(user) = user {
        msg.push(UserIdentity::try_from(user).unwrap().to_tlv().to_buf());
    }
    client.send(msg).await.unwrap();
    match next(client).await {
        Message::SubmitSharesSuccess(s) => s.last_sequence_number == seq,
        Message::SubmitSharesError(_) => false,
        other => panic!("expected a share answer, got {other:?}"),
    }
}

fn pool_config() -> PoolConfig {
    PoolConfig {
        share_target: work::target_with_zero_bits(BITS),
        job_interval: Duration::from_secs(3600),
        ..PoolConfig::default()
    }
}

/// `(worker, shares)` of the pool, with each worker's work checked: 2^BITS expected
/// hashes per share.
fn counts(pool: &Pool) -> Vec<(String, u64)> {
    pool.workers()
        .into_iter()
        .map(|(name, s)| {
            assert_eq!(s.work, s.shares_accepted as f64 * f64::from(1u32 << BITS));
            (name, s.shares_accepted)
        })
        .collect()
}

#[tokio::test]
async fn pool_negotiates_0x0002_and_counts_shares_per_user_identity() {
    let pool = Pool::bind("127.0.0.1:0", pool_config()).await.unwrap();

    let mut client = connect(pool.local_addr(), 0).await;
    // Unknown ids are left out of the success; 0x0002 is granted.
    assert_eq!(request(&mut client, &[0x0009, 0x0002]).await, Ok(vec![2]));
    let c = open(&mut client, "acct").await;
    let mut seq = 0;
    for user in ["alice", "bob", "alice", "alice", "bob"] {
        seq += 1;
        assert!(submit(&mut client, &c, seq, Some(user)).await);
    }
    // No TLV: the channel's own identity.
    seq += 1;
    assert!(submit(&mut client, &c, seq, None).await);

    // A connection that did not negotiate 0x0002: its TLVs are ignored.
    let mut plain = connect(pool.local_addr(), 0).await;
    let c2 = open(&mut plain, "acct2").await;
    assert!(submit(&mut plain, &c2, 1, Some("mallory")).await);

    // Only unsupported extensions: an error listing them.
    let mut third = connect(pool.local_addr(), 0).await;
    assert_eq!(request(&mut third, &[0x0009]).await, Err(vec![9]));

    assert_eq!(
        counts(&pool),
        [
            ("acct".into(), 1),
            ("acct2".into(), 1),
            ("alice".into(), 3),
            ("bob".into(), 2)
        ]
    );
    assert_eq!(pool.stats().shares_accepted, 7);
    pool.shutdown().await;
}

/// Shares that arrive in one read are acknowledged by one `SubmitShares.Success` per
/// channel, and counted for the channel's identity before that answer, also when the
/// channel is closed right behind them.
#[tokio::test]
async fn shares_read_together_are_acknowledged_together_and_counted_before_a_close() {
    let pool = Pool::bind("127.0.0.1:0", pool_config()).await.unwrap();
    let mut client = connect(pool.local_addr(), 0).await;
    let c = open(&mut client, "batch").await;
    for seq in 1..=5 {
        client.feed(Message::from(mine(&c, seq))).await.unwrap();
    }
    let close = CloseChannel {
        channel_id: c.id,
        reason_code: Str0255::try_from("done").unwrap(),
    };
    client.feed(Message::from(close)).await.unwrap();
    SinkExt::<Message>::flush(&mut client).await.unwrap();
    let (mut acked, mut answers, mut last) = (0, 0, 0);
    while acked < 5 {
        let Message::SubmitSharesSuccess(s) = next(&mut client).await else {
            panic!("a share was refused")
        };
        acked += s.new_submits_accepted_count;
        answers += 1;
        last = s.last_sequence_number;
    }
    assert_eq!((acked, last), (5, 5));
    // One write of six small frames: the pool reads them together (at most a split).
    assert!(answers <= 2, "{answers} answers to 5 shares sent together");
    assert_eq!(counts(&pool), [("batch".into(), 5)]);
    assert_eq!(pool.stats().shares_accepted, 5);
    pool.shutdown().await;
}

async fn proxy_in_front(pool: &Pool, upstream_extensions: Vec<u16>) -> Proxy {
    let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProxyConfig {
        upstream_host: "127.0.0.1".into(),
        upstream_port: pool.local_addr().port(),
        upstream_extensions,
        ..ProxyConfig::default()
    };
    Proxy::start(upstream, listener, config).await.unwrap()
}

#[tokio::test]
async fn proxy_grants_0x0002_when_the_pool_did_and_forwards_the_tlv_intact() {
    let pool = Pool::bind("127.0.0.1:0", pool_config()).await.unwrap();
    let proxy = proxy_in_front(&pool, vec![0x0002]).await;
    let mut client = connect(proxy.local_addr(), 0).await;
    assert_eq!(request(&mut client, &[0x0002]).await, Ok(vec![2]));
    let c = open(&mut client, "acct").await;
    let names = ["w0", "w1", "a-worker-name-of-32-bytes-long!!"];
    for (seq, user) in (1..).zip(names.iter().chain(names[..1].iter())) {
        assert!(submit(&mut client, &c, seq, Some(user)).await);
    }
    assert_eq!(
        counts(&pool),
        [
            ("a-worker-name-of-32-bytes-long!!".into(), 1),
            ("w0".into(), 2),
            ("w1".into(), 1)
        ]
    );
    proxy.shutdown().await;
    pool.shutdown().await;
}

#[tokio::test]
async fn proxy_refuses_0x0002_when_it_did_not_ask_the_pool() {
    let pool = Pool::bind("127.0.0.1:0", pool_config()).await.unwrap();
    let proxy = proxy_in_front(&pool, Vec::new()).await;
    let mut client = connect(proxy.local_addr(), 0).await;
    assert_eq!(request(&mut client, &[0x0002]).await, Err(vec![2]));
    proxy.shutdown().await;
    pool.shutdown().await;
}
