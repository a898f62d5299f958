//! The mining proxy in-process: shares end to end through the demo (plain and over
//! Noise), hostile clients mid-run, the forwarding rules for frames the proxy does not
//! decode, and a pool whose certificate does not match the configured authority.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{
    Message, OpenStandardMiningChannel, OpenStandardMiningChannelSuccess, SetNewPrevHash,
    SetTarget, SetupConnection, SetupConnectionSuccess, SubmitSharesError, SubmitSharesStandard,
};
use sv2c_binary::{B032, MessageType, Protocol, U256};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::NoiseError;
use sv2c_codec::{CodecError, Frame, FrameCodec, Header, Sv2Codec};
use sv2c_roles::demo::{Demo, DemoConfig, DemoSummary};
use sv2c_roles::identity::{CERTIFICATE_VALIDITY, noise_server_identity};
use sv2c_roles::miner::{MinerConfig, MinerError, run_miner};
use sv2c_roles::mock_pool::{MockPool, MockPoolConfig};
use sv2c_roles::proxy::routing::FIRST_DOWNSTREAM_CHANNEL_ID;
use sv2c_roles::proxy::{Proxy, ProxyConfig, ProxyError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

mod common;
use common::{connect, open_channel, setup_connection};

/// Asserts what every honest run must show (`channels`: opened by anyone).
fn assert_consistent(summary: &DemoSummary, miners: usize, channels: u64) {
    assert_eq!(summary.check(), Ok(()), "{summary}");
    let submitted = summary.shares_submitted();
    assert!(submitted > 0);
    assert_eq!(summary.miners.len(), miners);
    assert!(
        summary.miner_errors.is_empty(),
        "{:?}",
        summary.miner_errors
    );
    // Counted on each side independently.
    assert_eq!(summary.proxy.shares_forwarded, submitted);
    assert_eq!(summary.pool.shares_accepted, submitted);
    assert_eq!(summary.pool.shares_acknowledged, submitted);
    assert_eq!(summary.proxy.shares_accepted, submitted);
    assert_eq!(summary.shares_acknowledged_to_miners(), submitted);
    assert_eq!(summary.pool.shares_rejected, 0);
    assert_eq!(summary.pool.channels_opened, channels);
    assert_eq!(summary.proxy.channels_opened, channels);
    for m in &summary.miners {
        assert!(m.shares_submitted > 0, "{m:?}");
        assert_eq!(m.shares_accepted, m.shares_submitted, "{m:?}");
        // The pool numbers channels from 1000; the miner sees the proxy's own id.
        assert_eq!(m.channel_id, FIRST_DOWNSTREAM_CHANNEL_ID, "{m:?}");
        assert!(m.jobs >= 1 && m.prev_hashes == 1 && m.targets == 1, "{m:?}");
        assert_eq!(m.misrouted, 0);
        assert!(m.complete);
    }
    assert_eq!(summary.buffers_in_use_after_shutdown, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_flow_end_to_end_with_equal_counts_on_every_side() {
    let config = DemoConfig {
        miners: 3,
        duration: Duration::from_secs(1),
        ..DemoConfig::default()
    };
    let demo = Demo::start(config).await.unwrap();
    let summary = tokio::time::timeout(Duration::from_secs(20), demo.finish())
        .await
        .expect("the demo ends");
    assert_consistent(&summary, 3, 3);
    assert_eq!(summary.proxy.connections_failed, 0);
}

/// `--noise`: both hops encrypted. The counts agree exactly as over plain TCP, the pool
/// completed one handshake (the proxy's), and miners that do not verify the proxy's
/// certificate, or do not speak Noise, are not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_flow_end_to_end_over_noise_with_equal_counts_on_every_side() {
    let config = DemoConfig {
        miners: 3,
        duration: Duration::from_secs(1),
        noise: true,
        ..DemoConfig::default()
    };
    let demo = Demo::start(config).await.unwrap();
    let addr = demo.proxy_addr();

    // A miner configured with another authority refuses the proxy's certificate.
    let (other_authority, _) = noise_server_identity(CERTIFICATE_VALIDITY).unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let wrong_key = MinerConfig {
        noise: Some(other_authority),
        ..MinerConfig::default()
    };
    match run_miner(tcp, wrong_key).await {
        Err(MinerError::Codec(CodecError::Noise(NoiseError::CertificateSignature))) => {}
        other => panic!("expected a certificate error, got {other:?}"),
    }
    // A plain miner gets no SetupConnection.Success.
    let tcp = TcpStream::connect(addr).await.unwrap();
    let plain = MinerConfig {
        setup_timeout: Duration::from_millis(500),
        ..MinerConfig::default()
    };
    let result = run_miner(tcp, plain).await;
    assert!(result.is_err(), "a plain miner was served: {result:?}");

    let summary = tokio::time::timeout(Duration::from_secs(20), demo.finish())
        .await
        .expect("the demo ends");
    assert!(summary.noise);
    assert_consistent(&summary, 3, 3);
    assert_eq!(summary.pool.connections, 1);
    assert_eq!(summary.pool.noise_handshakes, 1);
    assert_eq!(summary.proxy.connections_accepted, 3 + 2);
}

/// A proxy whose `upstream_noise` key is not the pool's authority does not start: the
/// handshake fails on the certificate, no `SetupConnection` is sent, no miner gets in.
/// The same pool with the right key is accepted; a pool that does not speak Noise is a
/// handshake error too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_with_the_wrong_authority_key_does_not_start() {
    let (authority, responder) = noise_server_identity(CERTIFICATE_VALIDITY).unwrap();
    let (wrong_authority, _) = noise_server_identity(CERTIFICATE_VALIDITY).unwrap();
    let pool = MockPool::bind(
        "127.0.0.1:0",
        MockPoolConfig {
            noise: Some(responder),
            ..MockPoolConfig::default()
        },
    )
    .await
    .unwrap();
    let start = |key, pool_addr, timeout| async move {
        let upstream = TcpStream::connect(pool_addr).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listen_addr = listener.local_addr().unwrap();
        let config = ProxyConfig {
            upstream_noise: Some(key),
            upstream_setup_timeout: timeout,
            ..ProxyConfig::default()
        };
        (Proxy::start(upstream, listener, config).await, listen_addr)
    };

    let (result, listen_addr) =
        start(wrong_authority, pool.local_addr(), Duration::from_secs(5)).await;
    let err = result.expect_err("the proxy started with the wrong authority key");
    assert!(
        matches!(
            err,
            ProxyError::Handshake(CodecError::Noise(NoiseError::CertificateSignature))
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "upstream Noise handshake failed: noise: certificate signature does not verify under \
         the authority key"
    );
    assert!(
        TcpStream::connect(listen_addr).await.is_err(),
        "nobody listens for miners"
    );
    let stats = pool.stats();
    assert_eq!(
        (stats.channels_opened, stats.shares_accepted),
        (0, 0),
        "{stats:?}"
    );

    // The same pool, the right key: set up.
    let (result, _) = start(authority, pool.local_addr(), Duration::from_secs(5)).await;
    let proxy = result.expect("the proxy starts with the pool's authority key");
    proxy.shutdown().await;
    pool.shutdown().await;

    // A plain pool never answers the handshake (or closes): a handshake error.
    let plain_pool = MockPool::bind("127.0.0.1:0", MockPoolConfig::default())
        .await
        .unwrap();
    let (result, _) = start(
        authority,
        plain_pool.local_addr(),
        Duration::from_millis(300),
    )
    .await;
    let err = result.expect_err("the proxy started against a plain pool");
    assert!(matches!(err, ProxyError::Handshake(_)), "{err:?}");
    plain_pool.shutdown().await;
}

/// Reads until the proxy closes the connection (EOF or reset); panics if it stays open.
async fn assert_disconnected(mut tcp: TcpStream, what: &str) {
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue, // answers sent before the proxy gave up
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "{what}: the proxy did not close the connection"
    );
}

/// Connects, sets up, opens a channel; returns the raw socket.
async fn set_up_client(addr: std::net::SocketAddr) -> TcpStream {
    let mut framed = connect(addr, 0).await;
    framed.send(open_channel(9)).await.unwrap();
    loop {
        match framed.next().await.unwrap().unwrap() {
            Message::OpenStandardMiningChannelSuccess(s) => {
                assert_eq!(s.request_id, 9);
                break;
            }
            _ => continue, // jobs may follow quickly; only the answer matters here
        }
    }
    framed.into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_are_disconnected_and_the_miners_do_not_notice() {
    let config = DemoConfig {
        miners: 3,
        duration: Duration::from_millis(1500),
        proxy: ProxyConfig {
            setup_timeout: Duration::from_millis(300),
            ..ProxyConfig::default()
        },
        ..DemoConfig::default()
    };
    let demo = Demo::start(config).await.unwrap();
    let addr = demo.proxy_addr();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = demo.snapshot();

    let garbage = async {
        // An HTTP request: its "header" announces a 2 MiB payload, above the 64 KiB limit.
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: pool\r\n\r\n")
            .await
            .unwrap();
        assert_disconnected(tcp, "HTTP request").await;
    };
    let random = async {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let bytes: Vec<u8> = (0u32..200)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let _ = tcp.write_all(&bytes).await;
        assert_disconnected(tcp, "random bytes").await;
    };
    let oversize = async {
        // A well-behaved client with an open channel, then a 1 MiB share frame.
        let mut tcp = set_up_client(addr).await;
        let header = Header::new(0x8000, SubmitSharesStandard::MSG_TYPE, 1 << 20).unwrap();
        tcp.write_all(&header.to_bytes()).await.unwrap();
        let _ = tcp.write_all(&[0u8; 64]).await;
        assert_disconnected(tcp, "oversize frame").await;
    };
    let not_setup = async {
        // A valid frame, but of an unknown extension instead of SetupConnection.
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&[0x42, 0x42, 0x01, 0x03, 0x00, 0x00, 1, 2, 3])
            .await
            .unwrap();
        assert_disconnected(tcp, "first frame not SetupConnection").await;
    };
    let truncated = async {
        // Half a SetupConnection, then the write side closes.
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let frame = sv2c_binary::messages::encode_frame(&setup_connection(0)).unwrap();
        tcp.write_all(&frame[..10]).await.unwrap();
        tcp.shutdown().await.unwrap();
        assert_disconnected(tcp, "truncated frame").await;
    };
    let reset = async {
        // Set up, half a share, then a reset.
        let mut tcp = set_up_client(addr).await;
        tcp.write_all(&[0x00, 0x80, 0x1a, 24, 0, 0, 2, 0, 0])
            .await
            .unwrap();
        // Linger 0: the close sends a reset (and cannot block, the reason for the
        // deprecation).
        #[allow(deprecated)]
        tcp.set_linger(Some(Duration::ZERO)).unwrap();
        drop(tcp);
    };
    let silent = async {
        let tcp = TcpStream::connect(addr).await.unwrap();
        assert_disconnected(tcp, "silent client").await;
    };
    tokio::join!(
        garbage, random, oversize, not_setup, truncated, reset, silent
    );

    // The channels of the oversize and reset clients are closed upstream.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while demo.snapshot().pool.channels_closed < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "channels not closed upstream"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let during = demo.snapshot();
    assert!(
        during.pool.shares_accepted > before.pool.shares_accepted,
        "the miners kept mining"
    );

    let summary = tokio::time::timeout(Duration::from_secs(20), demo.finish())
        .await
        .expect("the demo ends");
    // Two hostile clients opened a channel each before misbehaving.
    assert_consistent(&summary, 3, 3 + 2);
    assert_eq!(summary.proxy.connections_accepted, 3 + 7);
    assert!(
        summary.proxy.connections_failed >= 7,
        "every hostile client counts as failed: {:?}",
        summary.proxy
    );
}

/// A scripted pool and a scripted miner around a real proxy, on frames: group messages
/// fan out, unknown-extension channel frames pass both ways with the id rewritten,
/// unknown non-channel frames stop at the proxy, shares on unknown channels are refused,
/// a channel frame above the upstream payload limit is dropped and the next one passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_the_proxy_does_not_decode_follow_the_spec_rules() {
    let pool = BufferPool::new(16, 1024).unwrap();
    let pool_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pool_addr = pool_listener.local_addr().unwrap();
    const GROUP: u32 = 77;
    const UNKNOWN_EXT: u16 = 0x4321;

    let script_pool = pool.clone();
    let pool_task = tokio::spawn(async move {
        let (tcp, _) = pool_listener.accept().await.unwrap();
        let mut up = Framed::new(tcp, FrameCodec::new(script_pool.clone()));
        let setup = up.next().await.unwrap().unwrap();
        assert_eq!(setup.header().msg_type(), SetupConnection::MSG_TYPE);
        let setup = setup.decode::<SetupConnection>().unwrap();
        assert_eq!(setup.protocol, Protocol::Mining);
        let ok = SetupConnectionSuccess {
            used_version: 2,
            flags: 0,
        };
        up.send(Frame::from_message(&ok, &script_pool).unwrap())
            .await
            .unwrap();
        // Two channels for the same miner, in one upstream group.
        let mut upstream_ids = Vec::new();
        for channel_id in [500u32, 501] {
            let open = up.next().await.unwrap().unwrap();
            let open = open.decode::<OpenStandardMiningChannel>().unwrap();
            upstream_ids.push(channel_id);
            let ok = OpenStandardMiningChannelSuccess {
                request_id: open.request_id,
                channel_id,
                target: U256([0xff; 32]),
                extranonce_prefix: B032::try_from([1, 2]).unwrap(),
                group_channel_id: GROUP,
            };
            up.send(Frame::from_message(&ok, &script_pool).unwrap())
                .await
                .unwrap();
        }
        // To the group: one copy per member on the miner's side.
        let prev_hash = SetNewPrevHash {
            channel_id: GROUP,
            job_id: 1,
            prev_hash: U256([7; 32]),
            min_ntime: 5,
            nbits: 6,
        };
        up.feed(Frame::from_message(&prev_hash, &script_pool).unwrap())
            .await
            .unwrap();
        // An unknown extension's channel message for channel 500, and a non-channel one.
        let mut payload = script_pool.acquire(6);
        payload.copy_from_slice(&[0xf4, 0x01, 0, 0, 0xde, 0xad]);
        up.feed(Frame::new(UNKNOWN_EXT | 0x8000, 0x05, payload).unwrap())
            .await
            .unwrap();
        let mut payload = script_pool.acquire(2);
        payload.copy_from_slice(&[1, 2]);
        up.feed(Frame::new(UNKNOWN_EXT, 0x06, payload).unwrap())
            .await
            .unwrap();
        let marker = SetTarget {
            channel_id: 501,
            maximum_target: U256([3; 32]),
        };
        up.feed(Frame::from_message(&marker, &script_pool).unwrap())
            .await
            .unwrap();
        SinkExt::<Frame>::flush(&mut up).await.unwrap();
        // The miner's unknown-extension channel frame arrives with the pool's id.
        let frame = up.next().await.unwrap().unwrap();
        assert_eq!(frame.header().wire_extension_type(), UNKNOWN_EXT | 0x8000);
        assert_eq!(frame.header().msg_type(), 0x07);
        assert_eq!(frame.payload(), [0xf5, 0x01, 0, 0, 0xbe, 0xef]);
        upstream_ids
    });

    let upstream = TcpStream::connect(pool_addr).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProxyConfig {
        // Above every frame of this exchange but the miner's oversize one.
        max_upstream_payload: 64,
        // The scripted pool knows no extensions: nothing is asked.
        upstream_extensions: Vec::new(),
        ..ProxyConfig::default()
    };
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();

    let tcp = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let mut miner = Framed::new(tcp, FrameCodec::new(pool.clone()));
    miner
        .send(Frame::from_message(&setup_connection(0), &pool).unwrap())
        .await
        .unwrap();
    let ok = miner.next().await.unwrap().unwrap();
    assert_eq!(ok.header().msg_type(), SetupConnectionSuccess::MSG_TYPE);
    let mut downstream_ids = Vec::new();
    for request_id in [1, 2] {
        miner
            .send(Frame::from_message(&open_channel(request_id), &pool).unwrap())
            .await
            .unwrap();
        let ok = miner.next().await.unwrap().unwrap();
        let ok = ok.decode::<OpenStandardMiningChannelSuccess>().unwrap();
        assert_eq!(ok.request_id, request_id);
        downstream_ids.push(ok.channel_id);
    }
    assert_eq!(
        downstream_ids,
        [FIRST_DOWNSTREAM_CHANNEL_ID, FIRST_DOWNSTREAM_CHANNEL_ID + 1]
    );

    // The group's SetNewPrevHash, once per channel, with the miner's ids.
    let mut prev_hash_channels = Vec::new();
    for _ in 0..2 {
        let f = miner.next().await.unwrap().unwrap();
        let p = f.decode::<SetNewPrevHash>().unwrap();
        assert_eq!((p.job_id, p.prev_hash), (1, U256([7; 32])));
        prev_hash_channels.push(p.channel_id);
    }
    prev_hash_channels.sort_unstable();
    assert_eq!(prev_hash_channels, downstream_ids);
    // The unknown-extension channel frame, intact but for the channel id (500 → 2).
    let f = miner.next().await.unwrap().unwrap();
    assert_eq!(f.header().wire_extension_type(), UNKNOWN_EXT | 0x8000);
    assert_eq!(f.header().msg_type(), 0x05);
    assert_eq!(f.payload(), [2, 0, 0, 0, 0xde, 0xad]);
    // The non-channel unknown frame was dropped: next comes the marker (501 → 3).
    let f = miner.next().await.unwrap().unwrap();
    let t = f.decode::<SetTarget>().unwrap();
    assert_eq!(
        (t.channel_id, t.maximum_target),
        (downstream_ids[1], U256([3; 32]))
    );

    // A share on a channel this miner does not have: refused by the proxy.
    let share = SubmitSharesStandard {
        channel_id: 99,
        sequence_number: 42,
        job_id: 1,
        nonce: 0,
        ntime: 5,
        version: 0x2000_0000,
    };
    miner
        .send(Frame::from_message(&share, &pool).unwrap())
        .await
        .unwrap();
    let f = miner.next().await.unwrap().unwrap();
    let e = f.decode::<SubmitSharesError>().unwrap();
    assert_eq!((e.channel_id, e.sequence_number), (99, 42));
    assert_eq!(e.error_code.as_str(), Ok("invalid-channel-id"));

    // Upstream, on the miner's channel 3 (→ 501): an unknown-extension channel frame too
    // long for the pool (dropped), then one that fits, in the same write.
    let mut payload = pool.acquire(100);
    payload.fill(0xaa);
    payload[..4].copy_from_slice(&[3, 0, 0, 0]);
    miner
        .feed(Frame::new(UNKNOWN_EXT | 0x8000, 0x08, payload).unwrap())
        .await
        .unwrap();
    let mut payload = pool.acquire(6);
    payload.copy_from_slice(&[3, 0, 0, 0, 0xbe, 0xef]);
    miner
        .send(Frame::new(UNKNOWN_EXT | 0x8000, 0x07, payload).unwrap())
        .await
        .unwrap();

    let upstream_ids = tokio::time::timeout(Duration::from_secs(5), pool_task)
        .await
        .expect("the scripted pool finishes")
        .unwrap();
    assert_eq!(upstream_ids, [500, 501]);
    // The non-channel frame, the stray share, the oversize frame.
    assert_eq!(proxy.stats().frames_dropped, 3);
    drop(miner);
    proxy.shutdown().await;
}

/// The proxy passes the pool's `SetupConnection.Success` flags on, and refuses miners
/// whose requirements it or the pool cannot meet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_connection_flags_follow_the_pool() {
    use sv2c_binary::messages::SetupConnectionError;
    use sv2c_roles::proxy::{
        REQUIRES_FIXED_VERSION, REQUIRES_VERSION_ROLLING, REQUIRES_WORK_SELECTION,
    };

    let pool_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pool_addr = pool_listener.local_addr().unwrap();
    let pool_task = tokio::spawn(async move {
        let (tcp, _) = pool_listener.accept().await.unwrap();
        let mut up = Framed::new(tcp, Sv2Codec::<Message>::new());
        let Message::SetupConnection(setup) = up.next().await.unwrap().unwrap() else {
            panic!("expected SetupConnection");
        };
        let ok = SetupConnectionSuccess {
            used_version: 2,
            flags: REQUIRES_FIXED_VERSION,
        };
        up.send(ok).await.unwrap();
        while up.next().await.is_some() {}
        setup.flags
    });
    let upstream = TcpStream::connect(pool_addr).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProxyConfig {
        upstream_flags: 0x1, // not the default: the pool must see exactly what is configured
        upstream_extensions: Vec::new(),
        ..ProxyConfig::default()
    };
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();

    // Returns the proxy's answer and whether it then closed the connection.
    let addr = proxy.local_addr();
    let try_setup = |protocol: Protocol, flags: u32| async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut framed = Framed::new(tcp, Sv2Codec::<Message>::new());
        framed
            .send(SetupConnection {
                protocol,
                ..setup_connection(flags)
            })
            .await
            .unwrap();
        let answer = framed.next().await.unwrap().unwrap();
        let closed = tokio::time::timeout(Duration::from_millis(300), framed.next()).await;
        (answer, matches!(closed, Ok(None) | Ok(Some(Err(_)))))
    };
    let refused = |answer: Message| match answer {
        Message::SetupConnectionError(SetupConnectionError { flags, error_code }) => {
            (flags, error_code.as_str().unwrap().to_owned())
        }
        other => panic!("expected SetupConnection.Error, got {other:?}"),
    };

    let (answer, closed) = try_setup(Protocol::Mining, 0).await;
    assert!(matches!(
        answer,
        Message::SetupConnectionSuccess(SetupConnectionSuccess {
            used_version: 2,
            flags: REQUIRES_FIXED_VERSION
        })
    ));
    assert!(!closed, "an accepted miner stays connected");

    let (answer, closed) = try_setup(Protocol::Mining, REQUIRES_VERSION_ROLLING).await;
    assert_eq!(
        refused(answer),
        (REQUIRES_VERSION_ROLLING, "unsupported-feature-flags".into())
    );
    assert!(closed);

    let (answer, closed) = try_setup(Protocol::Mining, REQUIRES_WORK_SELECTION).await;
    assert_eq!(
        refused(answer),
        (REQUIRES_WORK_SELECTION, "unsupported-feature-flags".into())
    );
    assert!(closed);

    let (answer, closed) = try_setup(Protocol::JobDeclaration, 0).await;
    assert_eq!(refused(answer), (0, "unsupported-protocol".into()));
    assert!(closed);

    // A connection task counts its failure just after closing the socket: on a busy
    // machine the count can trail the client's view by a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while proxy.stats().connections_failed < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(proxy.stats().connections_failed, 3);
    proxy.shutdown().await;
    assert_eq!(
        pool_task.await.unwrap(),
        0x1,
        "the proxy's own flags went upstream"
    );
}
