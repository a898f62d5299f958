//! The pool's Template Distribution client against a Template Provider this test plays:
//! what it sends when it connects, what its channels get from the templates and tips it
//! is given, and that nothing the Template Provider sends (a frame that does not decode,
//! a template no job can be built from, a tip naming no template) nor its loss costs the
//! pool more than a log line: miners keep their jobs and the pool dials again.
//! (The `pool` and `template_provider` programs together, with miners finding blocks:
//! `examples/tests/pool_template_provider.rs`.)

mod common;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{
    Message, NewTemplate, SetNewPrevHashTdp, SetupConnectionSuccess, encode_frame,
};
use sv2c_binary::{B064K, B0255, Seq0255, U256};
use sv2c_codec::Sv2Codec;
use sv2c_roles::pool::{Pool, PoolConfig, TemplateProviderConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};
use tokio_util::codec::Framed;

use common::{next, open_channel, set_up_on};

type Tp = Framed<TcpStream, Sv2Codec<Message>>;

/// A template at `height` paying 3.125 BTC, with one template output (a made-up witness
/// commitment).
fn template(template_id: u64, future: bool, prefix: &[u8]) -> NewTemplate {
    let mut output = 0u64.to_le_bytes().to_vec();
    output.push(38);
    output.extend_from_slice(&[0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]);
    output.extend_from_slice(&[0x5a; 32]);
    NewTemplate {
        template_id,
        future_template: future,
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        coinbase_prefix: B0255::try_from(prefix).unwrap(),
        coinbase_tx_input_sequence: u32::MAX,
        coinbase_tx_value_remaining: 312_500_000,
        coinbase_tx_outputs_count: 1,
        coinbase_tx_outputs: B064K::try_from(output).unwrap(),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::from_slice(&[U256([7; 32])]).unwrap(),
    }
}

fn tip(template_id: u64, prev_hash: u8) -> SetNewPrevHashTdp {
    SetNewPrevHashTdp {
        template_id,
        prev_hash: U256([prev_hash; 32]),
        header_timestamp: 1_700_000_000,
        n_bits: 0x1d00_ffff,
        target: U256([0xff; 32]),
    }
}

/// Accepts the pool's connection and answers its setup; returns the constraints it sent.
async fn accept(listener: &TcpListener) -> (Tp, (u32, u16)) {
    let (tcp, _) = timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the pool dials")
        .unwrap();
    let mut tp = Framed::new(tcp, Sv2Codec::<Message>::new());
    let Some(Ok(Message::SetupConnection(setup))) = tp.next().await else {
        panic!("SetupConnection first");
    };
    assert_eq!(setup.protocol, sv2c_binary::Protocol::TemplateDistribution);
    assert_eq!((setup.min_version, setup.max_version), (2, 2));
    let success = SetupConnectionSuccess {
        used_version: 2,
        flags: 0,
    };
    tp.send(Message::from(success)).await.unwrap();
    let Some(Ok(Message::CoinbaseOutputConstraints(c))) = tp.next().await else {
        panic!("CoinbaseOutputConstraints next");
    };
    let constraints = (
        c.coinbase_output_max_additional_size,
        c.coinbase_output_max_additional_sigops,
    );
    (tp, constraints)
}

/// Waits until `f` holds for the pool's stats (at most 10 s).
async fn until(pool: &Pool, what: &str, f: impl Fn(&sv2c_roles::pool::PoolStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f(&pool.stats()) {
        assert!(Instant::now() < deadline, "{what}: {:?}", pool.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn templates_and_tips_drive_the_channels_and_a_hostile_provider_costs_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let p2pkh = [&[0x76, 0xa9, 0x14][..], &[0x42; 20], &[0x88, 0xac]].concat();
    let config = PoolConfig {
        coinbase_output: p2pkh.clone(),
        template_provider: Some(TemplateProviderConfig {
            address: listener.local_addr().unwrap().to_string(),
            authority_key: None,
        }),
        ..PoolConfig::default()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let (mut tp, constraints) = accept(&listener).await;
    // The pool's one output: 8 + 1 + 25 bytes, one legacy sigop (4 weight units).
    assert_eq!(constraints, (34, 4));
    until(&pool, "connected", |s| s.template_provider_connected).await;

    // A miner before any template: its channel opens, with no job yet.
    let tcp = TcpStream::connect(pool.local_addr()).await.unwrap();
    let mut miner = set_up_on(tcp, 0).await;
    miner.send(Message::from(open_channel(1))).await.unwrap();
    let Message::OpenStandardMiningChannelSuccess(open) = next(&mut miner).await else {
        panic!("the channel opens");
    };

    // A NewTemplate frame whose payload does not decode (it ends inside a field).
    let good = encode_frame(&Message::from(template(1, true, &[0x03, 0x40, 0xd1, 0x0c]))).unwrap();
    let mut broken = good[..6 + 20].to_vec();
    broken[3..6].copy_from_slice(&[20, 0, 0]);
    tp.get_mut().write_all(&broken).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A template whose coinbase prefix leaves no room for an extranonce, one with fewer
    // outputs than it counts, a tip naming a template never sent: all ignored.
    tp.feed(Message::from(template(2, true, &[0x01; 80])))
        .await
        .unwrap();
    let mut miscounted = template(5, true, &[0x03, 0x40, 0xd1, 0x0c]);
    miscounted.coinbase_tx_outputs_count = 2;
    tp.feed(Message::from(miscounted)).await.unwrap();
    tp.feed(Message::from(tip(5, 0x11))).await.unwrap();
    tp.feed(Message::from(tip(2, 0x11))).await.unwrap();
    tp.feed(Message::from(tip(99, 0x11))).await.unwrap();
    // Then a good future template and its tip: the channel's first job.
    tp.feed(Message::from(template(3, true, &[0x03, 0x40, 0xd1, 0x0c])))
        .await
        .unwrap();
    tp.send(Message::from(tip(3, 0x22))).await.unwrap();
    let Message::NewMiningJob(job) = next(&mut miner).await else {
        panic!("a job");
    };
    assert_eq!((job.channel_id, job.min_ntime), (open.channel_id, None));
    let Message::SetNewPrevHash(prev) = next(&mut miner).await else {
        panic!("its tip");
    };
    assert_eq!(
        (prev.job_id, prev.prev_hash),
        (job.job_id, U256([0x22; 32]))
    );
    assert_eq!(prev.min_ntime, 1_700_000_000);
    // A new template on the same tip: a job active at once, no new tip.
    tp.send(Message::from(template(4, false, &[0x03, 0x40, 0xd1, 0x0c])))
        .await
        .unwrap();
    let Message::NewMiningJob(update) = next(&mut miner).await else {
        panic!("a job");
    };
    assert_eq!(update.min_ntime, Some(1_700_000_000));
    assert!(update.job_id > job.job_id);
    assert!(pool.stats().template_provider_connected);
    assert!(
        timeout(Duration::from_millis(100), listener.accept())
            .await
            .is_err(),
        "the pool kept its one connection"
    );

    // The Template Provider goes: the pool says so, the miner keeps its job (nothing is
    // sent to it), and the pool dials again.
    drop(tp);
    until(&pool, "disconnected", |s| !s.template_provider_connected).await;
    let (mut tp, _) = accept(&listener).await;
    until(&pool, "connected again", |s| s.template_provider_connected).await;
    assert!(
        timeout(Duration::from_millis(300), miner.next())
            .await
            .is_err(),
        "the miner was sent nothing"
    );
    // The new connection's first tip reaches the miner.
    tp.feed(Message::from(template(1, true, &[0x03, 0x41, 0xd1, 0x0c])))
        .await
        .unwrap();
    tp.send(Message::from(tip(1, 0x33))).await.unwrap();
    let Message::NewMiningJob(_) = next(&mut miner).await else {
        panic!("a job");
    };
    let Message::SetNewPrevHash(prev) = next(&mut miner).await else {
        panic!("its tip");
    };
    assert_eq!(prev.prev_hash, U256([0x33; 32]));
    pool.shutdown().await;
}
