//! The pool's exact answers to a miner that asks for what it cannot have: each
//! `SetupConnection` case, a second `SetupConnection`, each `UpdateChannel` case, hash
//! rates of 0, negative, infinite and NaN, maximum targets of zero and all ones, and the
//! `user_identity` TLV cases (pool module docs, "What a miner is answered").

use std::time::Duration;

use futures::SinkExt;
use sv2c_binary::messages::{
    Message, OpenExtendedMiningChannel, SetupConnection, SubmitSharesExtended, UpdateChannel,
    encode_frame,
};
use sv2c_binary::tlv::{UserIdentity, WithTlvs};
use sv2c_binary::{Protocol, Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_channels::vardiff::VardiffConfig;
use sv2c_roles::pool::{
    INVALID_CHANNEL_ID, INVALID_USER_IDENTITY, MAX_TARGET_OUT_OF_RANGE, Pool, PoolConfig,
};
use sv2c_roles::setup::{
    PROTOCOL_VERSION_MISMATCH, UNSUPPORTED_FEATURE_FLAGS, UNSUPPORTED_PROTOCOL,
};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

mod common;
use common::{Client, closed_within, connect, next, open_channel, set_up_with_channels};
mod mining;
use mining::{mine, negotiated_client, open_extended};

const BITS: u32 = 8;

fn config() -> PoolConfig {
    PoolConfig {
        share_target: work::target_with_zero_bits(BITS),
        ..PoolConfig::default()
    }
}

fn setup(protocol: Protocol, versions: (u16, u16), flags: u32) -> SetupConnection {
    SetupConnection {
        protocol,
        min_version: versions.0,
        max_version: versions.1,
        ..common::setup_connection(flags)
    }
}

/// Sends `setup` on a new connection; returns the answer and whether the pool then closed
/// the connection (within `wait`).
async fn answer_to(pool: &Pool, setup: SetupConnection, wait: Duration) -> (Message, bool) {
    let tcp = TcpStream::connect(pool.local_addr()).await.unwrap();
    let mut client = Framed::new(tcp, sv2c_codec::Sv2Codec::<Message>::new());
    client.send(setup).await.unwrap();
    let answer = next(&mut client).await;
    let closed = closed_within(client.into_inner(), wait).await;
    (answer, closed.is_some())
}

#[tokio::test]
async fn every_setup_case_gets_its_answer() {
    let pool = Pool::bind("127.0.0.1:0", config()).await.unwrap();
    let refusals = [
        (
            setup(Protocol::Mining, (3, 2), 0),
            0,
            PROTOCOL_VERSION_MISMATCH,
        ),
        (
            setup(Protocol::Mining, (3, 3), 0),
            0,
            PROTOCOL_VERSION_MISMATCH,
        ),
        (
            setup(Protocol::Mining, (1, 1), 0),
            0,
            PROTOCOL_VERSION_MISMATCH,
        ),
        (
            setup(Protocol::JobDeclaration, (2, 2), 0),
            0,
            UNSUPPORTED_PROTOCOL,
        ),
        (
            setup(Protocol::TemplateDistribution, (2, 2), 0),
            0,
            UNSUPPORTED_PROTOCOL,
        ),
        (
            setup(Protocol::Mining, (2, 2), 0x2),
            0x2,
            UNSUPPORTED_FEATURE_FLAGS,
        ),
        // Every flag: only the one the pool cannot honour is named.
        (
            setup(Protocol::Mining, (2, 2), u32::MAX),
            0x2,
            UNSUPPORTED_FEATURE_FLAGS,
        ),
    ];
    for (request, flags, code) in refusals {
        let what = format!("{request:?}");
        let (answer, closed) = answer_to(&pool, request, Duration::from_secs(2)).await;
        let Message::SetupConnectionError(e) = answer else {
            panic!("{what}: {answer:?}")
        };
        assert_eq!(
            (e.flags, e.error_code.to_string()),
            (flags, code.into()),
            "{what}"
        );
        assert!(closed, "{what}: left open");
    }
    // Ranges that hold 2, standard jobs and version rolling asked for, undefined bits.
    for (versions, flags) in [((2, 2), 0x0), ((1, 3), 0x5), ((0, u16::MAX), 0xffff_fff8)] {
        let request = setup(Protocol::Mining, versions, flags);
        let (answer, closed) = answer_to(&pool, request, Duration::from_millis(300)).await;
        let Message::SetupConnectionSuccess(ok) = answer else {
            panic!("{versions:?} {flags:#x}: {answer:?}")
        };
        assert_eq!((ok.used_version, ok.flags), (2, 0));
        assert!(!closed, "a set-up connection was closed");
    }
    assert_eq!(pool.stats().connections, 3);
    pool.shutdown().await;
}

#[tokio::test]
async fn a_second_setup_connection_closes_the_connection() {
    let pool = Pool::bind("127.0.0.1:0", config()).await.unwrap();
    // After set-up, and in the same read as the first.
    let mut client = connect(pool.local_addr(), 0).await;
    client.send(common::setup_connection(0)).await.unwrap();
    assert!(
        closed_within(client.into_inner(), Duration::from_secs(2))
            .await
            .is_some()
    );
    let mut tcp = TcpStream::connect(pool.local_addr()).await.unwrap();
    let setup = encode_frame(&Message::from(common::setup_connection(0))).unwrap();
    tcp.write_all(&[&setup[..], &setup[..]].concat())
        .await
        .unwrap();
    assert!(closed_within(tcp, Duration::from_secs(2)).await.is_some());
    pool.shutdown().await;
}

/// `UpdateChannel` for `channel_id`.
fn update(channel_id: u32, nominal_hash_rate: f32, maximum_target: U256) -> UpdateChannel {
    UpdateChannel {
        channel_id,
        nominal_hash_rate,
        maximum_target,
    }
}

/// The next message that is not a job or a new tip.
async fn next_answer(client: &mut Client) -> Message {
    loop {
        match next(client).await {
            Message::NewMiningJob(_)
            | Message::NewExtendedMiningJob(_)
            | Message::SetNewPrevHash(_) => {}
            m => return m,
        }
    }
}

/// `UpdateChannel.Error`'s channel and code, or panics.
#[track_caller]
fn update_error(m: Message) -> (u32, String) {
    match m {
        Message::UpdateChannelError(e) => (e.channel_id, e.error_code.to_string()),
        m => panic!("expected UpdateChannel.Error, got {m:?}"),
    }
}

#[tokio::test]
async fn every_update_channel_case_gets_its_answer() {
    for vardiff in [None, Some(VardiffConfig::default())] {
        let pool = Pool::bind(
            "127.0.0.1:0",
            PoolConfig {
                vardiff,
                ..config()
            },
        )
        .await
        .unwrap();
        let tcp = TcpStream::connect(pool.local_addr()).await.unwrap();
        let (mut client, ids) = set_up_with_channels(tcp, 1).await;
        let id = ids[0];
        let share_target = work::target_with_zero_bits(BITS);
        // An unknown channel; a maximum target of zero.
        client
            .send(update(id + 1000, 1e12, share_target))
            .await
            .unwrap();
        let expected = (id + 1000, INVALID_CHANNEL_ID.to_owned());
        assert_eq!(update_error(next_answer(&mut client).await), expected);
        client.send(update(id, 1e12, U256([0; 32]))).await.unwrap();
        let expected = (id, MAX_TARGET_OUT_OF_RANGE.to_owned());
        assert_eq!(update_error(next_answer(&mut client).await), expected);
        // Harder than the channel's target: SetTarget with it.
        let harder = work::target_with_zero_bits(BITS + 4);
        client.send(update(id, 1e12, harder)).await.unwrap();
        match next_answer(&mut client).await {
            Message::SetTarget(t) => assert_eq!((t.channel_id, t.maximum_target), (id, harder)),
            m => panic!("{m:?}"),
        }
        // The same maximum with any hash rate: nothing (the next answer is the marker's).
        for rate in [0.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e30] {
            client.send(update(id, rate, harder)).await.unwrap();
        }
        // Easier again (all ones): without vardiff, back to the pool's target; with it,
        // the controller's target stays until the share rate moves it.
        client
            .send(update(id, f32::NAN, U256([0xff; 32])))
            .await
            .unwrap();
        if vardiff.is_none() {
            match next_answer(&mut client).await {
                Message::SetTarget(t) => assert_eq!(t.maximum_target, share_target),
                m => panic!("{m:?}"),
            }
        }
        client.send(update(id + 1000, 1.0, harder)).await.unwrap();
        assert_eq!(update_error(next_answer(&mut client).await).0, id + 1000);
        pool.shutdown().await;
    }
}

#[tokio::test]
async fn hash_rates_are_not_used_and_max_targets_of_zero_are_refused() {
    let vardiff = Some(VardiffConfig {
        min_window_secs: 0,
        ..VardiffConfig::default()
    });
    let config = PoolConfig {
        vardiff,
        job_interval: Duration::from_millis(200),
        ..config()
    };
    let pool = Pool::bind("127.0.0.1:0", config).await.unwrap();
    let mut client = connect(pool.local_addr(), 0).await;
    let share_target = work::target_with_zero_bits(BITS);
    let rates = [
        0.0,
        -1.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
    ];
    for (r, rate) in rates.into_iter().enumerate() {
        let r = r as u32;
        let standard = sv2c_binary::messages::OpenStandardMiningChannel {
            nominal_hash_rate: rate,
            ..open_channel(2 * r)
        };
        let extended = OpenExtendedMiningChannel {
            request_id: 2 * r + 1,
            user_identity: Str0255::try_from("test").unwrap(),
            nominal_hash_rate: rate,
            max_target: U256([0xff; 32]),
            min_extranonce_size: 4,
        };
        client.send(standard).await.unwrap();
        client.send(extended).await.unwrap();
        for _ in 0..2 {
            match next_answer(&mut client).await {
                Message::OpenStandardMiningChannelSuccess(ok) => {
                    assert_eq!((ok.request_id, ok.target), (2 * r, share_target))
                }
                Message::OpenExtendedMiningChannelSuccess(ok) => {
                    assert_eq!((ok.request_id, ok.target), (2 * r + 1, share_target))
                }
                m => panic!("{rate}: {m:?}"),
            }
        }
    }
    // Maximum targets: zero is refused, all ones is the pool's target.
    let zero = sv2c_binary::messages::OpenStandardMiningChannel {
        max_target: U256([0; 32]),
        ..open_channel(100)
    };
    client.send(zero).await.unwrap();
    match next_answer(&mut client).await {
        Message::OpenMiningChannelError(e) => {
            assert_eq!(e.request_id, 100);
            assert_eq!(e.error_code.to_string(), MAX_TARGET_OUT_OF_RANGE);
        }
        m => panic!("{m:?}"),
    }
    assert_eq!(pool.stats().channels_open, 14);
    // Vardiff runs over these channels on every tick with no share: no panic, and no
    // target easier than all ones or zero is sent.
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        if let Message::SetTarget(t) = next(&mut client).await {
            assert_ne!(t.maximum_target, U256([0; 32]));
        }
    }
    assert_eq!(pool.stats().channels_open, 14);
    pool.shutdown().await;
}

// ===== the user_identity TLV =====

/// Sends `share` with `tail` after its fields (the frame's length counts it); returns
/// the error code of the answer, `None` for success.
async fn submit_with_tail(
    client: &mut Client,
    share: &SubmitSharesExtended,
    tail: &[u8],
) -> Option<String> {
    let mut frame = encode_frame(&Message::from(share.clone())).unwrap();
    frame.extend_from_slice(tail);
    let len = (frame.len() - 6) as u32;
    frame[3..6].copy_from_slice(&len.to_le_bytes()[..3]);
    client.get_mut().write_all(&frame).await.unwrap();
    match next_answer(client).await {
        Message::SubmitSharesSuccess(s) => {
            assert_eq!(s.last_sequence_number, share.sequence_number);
            None
        }
        Message::SubmitSharesError(e) => Some(e.error_code.to_string()),
        m => panic!("{m:?}"),
    }
}

/// A TLV header (extension 0x0002, field 0x01) announcing `len` bytes.
fn tlv_header(len: u16) -> Vec<u8> {
    let [lo, hi] = len.to_le_bytes();
    vec![0x02, 0x00, 0x01, lo, hi]
}

#[tokio::test]
async fn user_identity_tlvs_over_32_bytes_or_truncated_refuse_the_share() {
    let pool = Pool::bind("127.0.0.1:0", config()).await.unwrap();
    let mut client = negotiated_client(pool.local_addr()).await;
    let c = open_extended(&mut client, "channel-user").await;
    let share = mine(&c, 1);
    let with_value = |len: usize| [tlv_header(len as u16), vec![b'w'; len]].concat();
    let refused = Some(INVALID_USER_IDENTITY.to_owned());
    let bad_tails = [
        with_value(33),
        with_value(255),
        // Announces 10 bytes, carries 4.
        [tlv_header(10), b"abcd".to_vec()].concat(),
        // 3 stray bytes: not even a header.
        vec![0x02, 0x00, 0x01],
        // A record of another extension running past the end, before the identity.
        [vec![0x09, 0x00, 0x01, 0xff, 0x00], with_value(5)].concat(),
    ];
    for tail in &bad_tails {
        assert_eq!(
            submit_with_tail(&mut client, &share, tail).await,
            refused,
            "{tail:02x?}"
        );
    }
    // The share was not recorded: sent again with a good identity, it is accepted.
    assert_eq!(
        submit_with_tail(&mut client, &share, &with_value(32)).await,
        None
    );
    let sent =
        WithTlvs::new(mine(&c, 2)).with(UserIdentity::try_from("rig-7").unwrap().to_tlv().to_buf());
    client.send(sent).await.unwrap();
    assert!(matches!(
        next_answer(&mut client).await,
        Message::SubmitSharesSuccess(_)
    ));
    // A record of another extension, well formed, is skipped.
    let other = [vec![0x09, 0x00, 0x01, 0x01, 0x00, 0x00], with_value(3)].concat();
    assert_eq!(
        submit_with_tail(&mut client, &mine(&c, 3), &other).await,
        None
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let workers = pool.workers();
    let names: Vec<_> = workers
        .iter()
        .map(|(n, w)| (n.as_str(), w.shares_accepted))
        .collect();
    assert_eq!(names, [("rig-7", 1), ("www", 1), (&*"w".repeat(32), 1)]);
    let rejected = pool.stats().shares_rejected;
    assert_eq!(rejected, bad_tails.len() as u64);

    // Without 0x0002 negotiated, the tail is not read: the same bytes are accepted.
    let mut plain = connect(pool.local_addr(), 0).await;
    let c = open_extended(&mut plain, "plain-user").await;
    assert_eq!(
        submit_with_tail(&mut plain, &mine(&c, 1), &with_value(33)).await,
        None
    );
    pool.shutdown().await;
}

/// The aggregating proxy in front of the pool refuses the same `user_identity` TLVs the
/// pool refuses (it would otherwise acknowledge shares the pool then refuses), and
/// accepts a good one.
#[tokio::test]
async fn the_aggregating_proxy_refuses_the_user_identity_tlvs_the_pool_refuses() {
    use sv2c_roles::proxy::{Proxy, ProxyConfig};
    let pool = Pool::bind("127.0.0.1:0", config()).await.unwrap();
    let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_config = ProxyConfig {
        upstream_host: "127.0.0.1".into(),
        upstream_port: pool.local_addr().port(),
        aggregate: true,
        ..ProxyConfig::default()
    };
    let proxy = Proxy::start(upstream, listener, proxy_config)
        .await
        .unwrap();
    let mut client = negotiated_client(proxy.local_addr()).await;
    let c = open_extended(&mut client, "channel-user").await;
    let with_value = |len: usize| [tlv_header(len as u16), vec![b'w'; len]].concat();
    let refused = Some(INVALID_USER_IDENTITY.to_owned());
    let bad_tails = [
        with_value(33),
        with_value(255),
        [tlv_header(10), b"abcd".to_vec()].concat(),
        vec![0x02, 0x00, 0x01],
    ];
    let share = mine(&c, 1);
    for tail in &bad_tails {
        assert_eq!(
            submit_with_tail(&mut client, &share, tail).await,
            refused,
            "{tail:02x?}"
        );
    }
    assert_eq!(
        submit_with_tail(&mut client, &share, &with_value(32)).await,
        None
    );
    assert_eq!(pool.stats().shares_rejected, 0);
    proxy.shutdown().await;
    pool.shutdown().await;
}
