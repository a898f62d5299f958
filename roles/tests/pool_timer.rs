//! What the pool does on its job timer. Its chain tip is pool-wide: when the timer moves
//! to the next block, every connection's channels get the same previous hash (as a real
//! block would reach them), whenever each connection was opened. With variable difficulty,
//! a channel whose shares come faster than wanted is sent a harder `SetTarget`, and the
//! pool then checks its shares against that target. Its shutdown reaches every connection
//! the same way, one still in its Noise handshake included.

use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{Message, OpenStandardMiningChannel, SubmitSharesStandard};
use sv2c_binary::{Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_channels::pow::target_to_f64;
use sv2c_channels::vardiff::VardiffConfig;
use sv2c_codec::Sv2Codec;
use sv2c_codec::noise::{self, Initiator};
use sv2c_roles::identity::{CERTIFICATE_VALIDITY, noise_server_identity};
use sv2c_roles::pool::{Pool, PoolConfig};
use sv2c_roles::proxy::REQUIRES_STANDARD_JOBS;

mod common;
use common::{Client, connect, next, setup_connection};

/// A client with one standard channel; returns it and the previous hash its first job
/// was activated with.
async fn miner(addr: std::net::SocketAddr) -> (Client, [u8; 32]) {
    let mut client = connect(addr, REQUIRES_STANDARD_JOBS).await;
    let open = OpenStandardMiningChannel {
        request_id: 1,
        user_identity: Str0255::try_from("tip").unwrap(),
        nominal_hash_rate: 1.0e12,
        max_target: U256([0xff; 32]),
    };
    client.send(Message::from(open)).await.unwrap();
    loop {
        if let Message::SetNewPrevHash(p) = next(&mut client).await {
            return (client, p.prev_hash.0);
        }
    }
}

/// The next previous hash `client` is sent.
async fn next_prev_hash(client: &mut Client) -> [u8; 32] {
    loop {
        if let Message::SetNewPrevHash(p) = next(client).await {
            return p.prev_hash.0;
        }
    }
}

#[tokio::test]
async fn every_connection_moves_to_the_same_next_block() {
    let config = PoolConfig {
        job_interval: Duration::from_millis(300),
        jobs_per_prev_hash: 2,
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let addr = pool.local_addr();
    let (mut a, first_a) = miner(addr).await;
    // The second connection opens a little later, between the timer's ticks.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut b, first_b) = miner(addr).await;
    assert_eq!(first_a, first_b, "both start on the pool's tip");

    let (next_a, next_b) = tokio::join!(next_prev_hash(&mut a), next_prev_hash(&mut b));
    assert_ne!(next_a, first_a, "a new block has a new previous hash");
    assert_eq!(next_a, next_b, "every connection gets the same new block");
    // The block after that: the tip is a chain, not a per-connection value.
    let (after_a, after_b) = tokio::join!(next_prev_hash(&mut a), next_prev_hash(&mut b));
    assert_eq!(after_a, after_b);
    assert_eq!(after_a, sv2c_channels::pow::sha256d(&next_a));
    pool.shutdown().await;
}

/// The job a standard channel works on.
struct Job {
    channel_id: u32,
    job_id: u32,
    version: u32,
    merkle_root: [u8; 32],
    prev_hash: [u8; 32],
    ntime: u32,
    nbits: u32,
}

impl Job {
    fn hash(&self, nonce: u32) -> [u8; 32] {
        let h = work::header(
            self.version,
            &self.prev_hash,
            &self.merkle_root,
            self.ntime,
            self.nbits,
            nonce,
        );
        work::sha256d(&h)
    }
}

/// Submits `nonce` on `job`; returns the answer (`Ok`: accepted, `Err`: the error code),
/// following the jobs that arrive meanwhile.
async fn submit(client: &mut Client, job: &mut Job, seq: u32, nonce: u32) -> Result<(), String> {
    let share = SubmitSharesStandard {
        channel_id: job.channel_id,
        sequence_number: seq,
        job_id: job.job_id,
        nonce,
        ntime: job.ntime,
        version: job.version,
    };
    client.send(Message::from(share)).await.unwrap();
    loop {
        match next(client).await {
            Message::SubmitSharesSuccess(s) if s.last_sequence_number == seq => return Ok(()),
            Message::SubmitSharesError(e) if e.sequence_number == seq => {
                return Err(e.error_code.to_string());
            }
            Message::NewMiningJob(j) if j.min_ntime.is_some() => {
                job.job_id = j.job_id;
                job.merkle_root = j.merkle_root.0;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn vardiff_sends_a_harder_target_to_a_fast_channel_and_checks_shares_against_it() {
    let easiest = U256([0xff; 32]);
    let config = PoolConfig {
        share_target: easiest,
        job_interval: Duration::from_millis(300),
        jobs_per_prev_hash: 1000,
        vardiff: Some(VardiffConfig {
            shares_per_minute: 6.0,
            min_window_secs: 1,
            window_secs: 60,
            deadband: 1.5,
            max_step: 4.0,
            max_target: easiest,
        }),
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let mut client = connect(pool.local_addr(), REQUIRES_STANDARD_JOBS).await;
    let open = OpenStandardMiningChannel {
        request_id: 1,
        user_identity: Str0255::try_from("fast").unwrap(),
        nominal_hash_rate: 1.0e3,
        max_target: easiest,
    };
    client.send(Message::from(open)).await.unwrap();
    let Message::OpenStandardMiningChannelSuccess(ok) = next(&mut client).await else {
        panic!("channel refused")
    };
    assert_eq!(ok.target, easiest);
    let Message::NewMiningJob(j) = next(&mut client).await else {
        panic!("no job")
    };
    let Message::SetNewPrevHash(tip) = next(&mut client).await else {
        panic!("no prev hash")
    };
    let mut job = Job {
        channel_id: ok.channel_id,
        job_id: tip.job_id,
        version: j.version,
        merkle_root: j.merkle_root.0,
        prev_hash: tip.prev_hash.0,
        ntime: tip.min_ntime,
        nbits: tip.nbits,
    };

    // 40 shares at once, where 6 a minute are wanted: every hash meets the easiest target.
    for seq in 0..40 {
        assert_eq!(submit(&mut client, &mut job, seq, seq).await, Ok(()));
    }
    // The next ticks retarget, as hard as one step allows (4x).
    let new_target = loop {
        match next(&mut client).await {
            Message::SetTarget(t) => {
                assert_eq!(t.channel_id, job.channel_id);
                break t.maximum_target;
            }
            Message::NewMiningJob(j) if j.min_ntime.is_some() => {
                job.job_id = j.job_id;
                job.merkle_root = j.merkle_root.0;
            }
            _ => {}
        }
    };
    let step = target_to_f64(&easiest) / target_to_f64(&new_target);
    assert!((3.99..=4.01).contains(&step), "retargeted by {step}x");

    // The pool now refuses a share that only met the old target, and takes one that meets
    // the new one.
    let (miss, hit) = {
        let meets = |n: u32| work::meets_target(&job.hash(n), &new_target);
        let miss = (1000u32..).find(|&n| !meets(n)).unwrap();
        let hit = (1000u32..).find(|&n| meets(n)).unwrap();
        (miss, hit)
    };
    assert_eq!(
        submit(&mut client, &mut job, 100, miss).await,
        Err("difficulty-too-low".to_string())
    );
    // A new job may have arrived with the refusal: look for a hit on the job now current.
    let hit = if work::meets_target(&job.hash(hit), &new_target) {
        hit
    } else {
        (0u32..)
            .find(|&n| work::meets_target(&job.hash(n), &new_target))
            .unwrap()
    };
    assert_eq!(submit(&mut client, &mut job, 101, hit).await, Ok(()));
    pool.shutdown().await;
}

/// `Reconnect` goes to a connection serving when the pool shuts down, and to one that
/// was still in its Noise handshake then, once it is set up (within the shutdown's grace).
#[tokio::test]
async fn shutdown_tells_every_connection_to_reconnect_even_one_in_its_handshake() {
    let (authority, identity) = noise_server_identity(CERTIFICATE_VALIDITY).unwrap();
    let config = PoolConfig {
        noise: Some(identity),
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let addr = pool.local_addr();
    let handshake = |tcp| {
        noise::connect(
            tcp,
            Initiator::new(authority).unwrap(),
            Sv2Codec::<Message>::new(),
        )
    };
    let mut serving = handshake(tokio::net::TcpStream::connect(addr).await.unwrap())
        .await
        .unwrap();
    serving
        .send(Message::from(setup_connection(REQUIRES_STANDARD_JOBS)))
        .await
        .unwrap();
    // Accepted by the pool, its handshake not started.
    let late = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let stopped = tokio::spawn(pool.shutdown());
    let reconnect = |m: &Message| matches!(m, Message::Reconnect(r) if r.new_port == 0);
    loop {
        let m = tokio::time::timeout(
            Duration::from_secs(3),
            futures::StreamExt::next(&mut serving),
        )
        .await
        .expect("Reconnect in time")
        .expect("not closed before Reconnect")
        .unwrap();
        if reconnect(&m) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut late = handshake(late).await.unwrap();
    late.send(Message::from(setup_connection(REQUIRES_STANDARD_JOBS)))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Ok(Some(Ok(m))) =
        tokio::time::timeout(Duration::from_secs(3), futures::StreamExt::next(&mut late)).await
    {
        got.push(m);
    }
    assert!(
        matches!(got.first(), Some(Message::SetupConnectionSuccess(_))),
        "{got:?}"
    );
    assert!(got.last().is_some_and(reconnect), "{got:?}");
    stopped.await.unwrap();
}
