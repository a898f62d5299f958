//! The proxy against peers that stall, hold, trickle or vanish: each test plays the
//! attack against a proxy with short timeouts and checks that the proxy cuts the peer
//! off, gets its resources back, and keeps serving everyone else.

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_binary::MessageType;
use sv2c_binary::messages::{Message, SubmitSharesStandard};
use sv2c_codec::{Header, Sv2Codec};
use sv2c_roles::mock_pool::{MockPool, MockPoolConfig};
use sv2c_roles::proxy::{Backoff, Proxy, ProxyConfig, supervise};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::time::{Instant, sleep, timeout};
use tokio_util::codec::Framed;

mod common;
use common::{
    closed_within, noise_half_frame, open_channel, set_up_with_channels, setup_connection, trickle,
};

async fn start(pool_config: MockPoolConfig, config: ProxyConfig) -> (MockPool, Proxy) {
    let pool = MockPool::bind("127.0.0.1:0", pool_config).await.unwrap();
    let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();
    (pool, proxy)
}

async fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miner_that_stops_reading_is_disconnected_and_its_pool_slots_come_back() {
    // The pool sends every channel a job each millisecond; the attacker opens the most
    // channels allowed and never reads again, with a small receive buffer.
    let pool_config = MockPoolConfig {
        job_interval: Duration::from_millis(1),
        ..MockPoolConfig::default()
    };
    let config = ProxyConfig {
        write_timeout: Duration::from_millis(500),
        ..ProxyConfig::default()
    };
    let (pool, proxy) = start(pool_config, config.clone()).await;
    let before = proxy.pool_stats().in_use;

    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(proxy.local_addr()).await.unwrap();
    let channels = config.max_channels_per_connection as u32;
    let (framed, _) = set_up_with_channels(tcp, channels).await;
    let attacker = framed.into_inner();

    // A well-behaved miner beside it.
    let (mut miner, ids) =
        set_up_with_channels(TcpStream::connect(proxy.local_addr()).await.unwrap(), 1).await;

    let mut during = 0;
    let cut = wait_for(Duration::from_secs(30), || {
        during = during.max(proxy.pool_stats().in_use);
        proxy.stats().connections_open == 1
    })
    .await;
    assert!(
        cut,
        "the non-reading miner was not disconnected: {:?}",
        proxy.stats()
    );
    assert!(
        wait_for(Duration::from_secs(2), || proxy.pool_stats().in_use
            <= before)
        .await,
        "pool slots not returned: {:?}",
        proxy.pool_stats()
    );
    let after = proxy.pool_stats().in_use;
    eprintln!("pool slots in use: before {before}, during up to {during}, after {after}");
    assert!(
        closed_within(attacker, Duration::from_secs(5))
            .await
            .is_some(),
        "the attacker's socket is still open"
    );

    // The honest miner still gets answers.
    miner
        .send(SubmitSharesStandard {
            channel_id: ids[0],
            sequence_number: 1,
            job_id: 1,
            nonce: 7,
            ntime: 0,
            version: 0x2000_0000,
        })
        .await
        .unwrap();
    let answered = timeout(Duration::from_secs(5), async {
        loop {
            match miner.next().await.unwrap().unwrap() {
                Message::SubmitSharesSuccess(_) | Message::SubmitSharesError(_) => return,
                _ => continue,
            }
        }
    })
    .await;
    assert!(answered.is_ok(), "the honest miner got no answer");
    proxy.shutdown().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_miners_half_frames_and_tricklers_are_cut_off() {
    let config = ProxyConfig {
        idle_timeout: Duration::from_millis(1500),
        partial_frame_timeout: Duration::from_millis(400),
        ..ProxyConfig::default()
    };
    let (pool, proxy) = start(MockPoolConfig::default(), config).await;
    let addr = proxy.local_addr();

    // Set up, then silence: the idle timeout.
    let idle = async {
        let (framed, _) = set_up_with_channels(TcpStream::connect(addr).await.unwrap(), 1).await;
        closed_within(framed.into_inner(), Duration::from_secs(5)).await
    };
    // Set up, then 65,535 bytes of a 65,536-byte frame, held.
    let half = async {
        let (framed, _) = set_up_with_channels(TcpStream::connect(addr).await.unwrap(), 0).await;
        let mut tcp = framed.into_inner();
        let header = Header::new(0, SubmitSharesStandard::MSG_TYPE, 65_536 - 6).unwrap();
        tcp.write_all(&header.to_bytes()).await.unwrap();
        tcp.write_all(&vec![0u8; 65_535 - 6]).await.unwrap();
        closed_within(tcp, Duration::from_secs(5)).await
    };
    // Set up, then a frame one byte every 100 ms: never complete in time.
    let trickle = trickle(addr, Duration::from_millis(100));
    // A miner that talks regularly outlives the idle timeout.
    let talker = async {
        let (mut framed, ids) =
            set_up_with_channels(TcpStream::connect(addr).await.unwrap(), 1).await;
        for n in 0..25 {
            let share = SubmitSharesStandard {
                channel_id: ids[0],
                sequence_number: n,
                job_id: 1,
                nonce: n,
                ntime: 0,
                version: 0x2000_0000,
            };
            if framed.send(share).await.is_err() {
                return false;
            }
            sleep(Duration::from_millis(100)).await;
        }
        // Still connected: the proxy answers a further request.
        framed.send(open_channel(77)).await.is_ok()
            && timeout(Duration::from_secs(2), async {
                while let Some(Ok(m)) = framed.next().await {
                    if let Message::OpenStandardMiningChannelSuccess(s) = m
                        && s.request_id == 77
                    {
                        return true;
                    }
                }
                false
            })
            .await
            .unwrap_or(false)
    };
    let (idle, half, trickle, talker) = tokio::join!(idle, half, trickle, talker);
    let idle = idle.expect("idle miner not cut off");
    let half = half.expect("half-frame holder not cut off");
    let trickle = trickle.expect("trickler not cut off");
    eprintln!("cut off after: idle {idle:?}, half frame {half:?}, trickle {trickle:?}");
    assert!(
        idle >= Duration::from_millis(1400),
        "idle cut too early: {idle:?}"
    );
    assert!(
        half < Duration::from_millis(1400),
        "half frame held until the idle timeout"
    );
    assert!(
        trickle < Duration::from_millis(1400),
        "trickle held until the idle timeout"
    );
    assert!(talker, "a miner that talks was disconnected");
    proxy.shutdown().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noise_miner_holding_half_an_encrypted_frame_is_cut_off() {
    let (authority, identity) =
        sv2c_roles::identity::noise_server_identity(Duration::from_secs(3600)).unwrap();
    let config = ProxyConfig {
        idle_timeout: Duration::from_millis(3000),
        partial_frame_timeout: Duration::from_millis(400),
        downstream_noise: Some(identity),
        ..ProxyConfig::default()
    };
    let (pool, proxy) = start(MockPoolConfig::default(), config).await;
    // The proxy's read buffer stays empty: the bytes wait in its Noise decryptor.
    let tcp = noise_half_frame(proxy.local_addr(), authority).await;
    let cut = closed_within(tcp, Duration::from_secs(5))
        .await
        .expect("half-frame holder not cut off");
    eprintln!("noise half frame cut off after {cut:?}");
    assert!(
        cut < Duration::from_millis(2000),
        "half an encrypted frame held until the idle timeout: {cut:?}"
    );
    proxy.shutdown().await;
    pool.shutdown().await;
}

/// A miner that sets up, opens a channel and gets a share answered; `Err` says where it
/// stopped.
async fn one_share(addr: SocketAddr) -> Result<(), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let mut framed = Framed::new(tcp, Sv2Codec::new());
    framed
        .send(setup_connection(0))
        .await
        .map_err(|e| e.to_string())?;
    framed
        .send(open_channel(1))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        match framed.next().await {
            Some(Ok(Message::OpenStandardMiningChannelSuccess(s))) => {
                let share = SubmitSharesStandard {
                    channel_id: s.channel_id,
                    sequence_number: 1,
                    job_id: 1,
                    nonce: 1,
                    ntime: 0,
                    version: 0x2000_0000,
                };
                framed.send(share).await.map_err(|e| e.to_string())?;
            }
            Some(Ok(Message::SubmitSharesSuccess(_))) => return Ok(()),
            Some(Ok(Message::SetupConnectionError(e))) => return Err(format!("{e:?}")),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err("closed".into()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_pool_restarts_miners_are_told_to_reconnect_and_shares_flow_again() {
    let pool_config = MockPoolConfig {
        success_batch: 1,
        ..MockPoolConfig::default()
    };
    let pool = MockPool::bind("127.0.0.1:0", pool_config.clone())
        .await
        .unwrap();
    let pool_addr = pool.local_addr();
    let listen: SocketAddr = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let supervisor = tokio::spawn(async move {
        let backoff = Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(400),
        };
        supervise(
            &pool_addr.to_string(),
            listen,
            ProxyConfig::default(),
            backoff,
            move |_| {
                let _ = started_tx.send(());
            },
            async {
                let _ = stop_rx.await;
            },
        )
        .await;
    });
    started.recv().await.unwrap();
    one_share(listen)
        .await
        .expect("shares flow before the restart");

    // A miner connected when the pool goes away.
    let (mut miner, _) = set_up_with_channels(TcpStream::connect(listen).await.unwrap(), 1).await;
    pool.shutdown().await;
    let told = timeout(Duration::from_secs(5), async {
        while let Some(Ok(m)) = miner.next().await {
            if let Message::Reconnect(r) = m {
                return Some(r);
            }
        }
        None
    })
    .await
    .expect("no Reconnect in time")
    .expect("closed without Reconnect");
    assert_eq!((told.new_host.as_bytes(), told.new_port), (&b""[..], 0));

    // Down for a while (the proxy retries meanwhile), then back on the same address.
    sleep(Duration::from_millis(700)).await;
    let restarted = Instant::now();
    let pool = MockPool::bind(pool_addr, pool_config).await.unwrap();
    let flowing = timeout(Duration::from_secs(10), async {
        loop {
            if one_share(listen).await.is_ok() {
                return restarted.elapsed();
            }
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("shares did not flow again within 10 s of the pool's restart");
    eprintln!("shares flowing again {flowing:?} after the pool restarted");
    assert!(started.recv().await.is_some(), "a second proxy was started");
    // The metrics endpoint's `sv2c_upstream_reconnects_total` (process-wide).
    let reconnects =
        sv2c_roles::metrics::UPSTREAM_RECONNECTS.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(reconnects, 1);
    let _ = stop_tx.send(());
    supervisor.await.unwrap();
    pool.shutdown().await;
}

/// A pool that answers the proxy's `SetupConnection` and one channel request, then never
/// reads again (a frozen process, or one whose path is gone), with a small receive buffer.
async fn pool_that_stops_reading() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    use sv2c_binary::messages::{OpenStandardMiningChannelSuccess, SetupConnectionSuccess};
    use sv2c_binary::{B032, U256};
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(8).unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut up = Framed::new(tcp, Sv2Codec::<Message>::new());
        while let Some(Ok(m)) = up.next().await {
            match m {
                Message::SetupConnection(_) => {
                    let ok = SetupConnectionSuccess {
                        used_version: 2,
                        flags: 0,
                    };
                    up.send(Message::from(ok)).await.unwrap();
                }
                Message::OpenStandardMiningChannel(open) => {
                    let ok = OpenStandardMiningChannelSuccess {
                        request_id: open.request_id,
                        channel_id: 7,
                        target: U256([0xff; 32]),
                        extranonce_prefix: B032::try_from(vec![0; 8]).unwrap(),
                        group_channel_id: 1,
                    };
                    up.send(Message::from(ok)).await.unwrap();
                    break;
                }
                _ => {}
            }
        }
        // Holds the connection open and reads nothing more.
        sleep(Duration::from_secs(60)).await;
        drop(up);
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_that_stops_reading_is_given_up_at_the_write_timeout() {
    let (pool_addr, pool) = pool_that_stops_reading().await;
    let config = ProxyConfig {
        write_timeout: Duration::from_millis(300),
        ..ProxyConfig::default()
    };
    let upstream = TcpStream::connect(pool_addr).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = Proxy::start(upstream, listener, config).await.unwrap();

    // A miner submits shares as fast as it can: they fill the pool's receive buffer, the
    // proxy's send buffer and queue, until a write to the pool waits.
    let tcp = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let (mut miner, ids) = set_up_with_channels(tcp, 1).await;
    let flood = tokio::spawn(async move {
        for seq in 0u32.. {
            let share = SubmitSharesStandard {
                channel_id: ids[0],
                sequence_number: seq,
                job_id: 1,
                nonce: seq,
                ntime: 1,
                version: 0x2000_0000,
            };
            if miner.feed(Message::from(share)).await.is_err() {
                return;
            }
            if seq % 64 == 63 && SinkExt::<Message>::flush(&mut miner).await.is_err() {
                return;
            }
        }
    });

    let started = Instant::now();
    timeout(Duration::from_secs(20), proxy.upstream_closed())
        .await
        .expect("the proxy gives the pool up");
    assert!(proxy.stats().upstream_closed);
    // Not before a write waited for the whole timeout (the buffers fill in milliseconds).
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    flood.abort();
    pool.abort();
}

/// A pool that answers each connection's `SetupConnection`, then sends `Reconnect` to
/// `to` (and keeps the connection open: the proxy leaves because it was told to). Returns
/// its address and the number of connections it accepted so far.
async fn pool_that_redirects(
    to: SocketAddr,
) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering::Relaxed;
    use sv2c_binary::Str0255;
    use sv2c_binary::messages::{Reconnect, SetupConnectionSuccess};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, Relaxed);
            tokio::spawn(async move {
                let mut up = Framed::new(tcp, Sv2Codec::<Message>::new());
                while let Some(Ok(m)) = up.next().await {
                    if let Message::SetupConnection(_) = m {
                        let ok = SetupConnectionSuccess {
                            used_version: 2,
                            flags: 0,
                        };
                        up.send(Message::from(ok)).await.unwrap();
                        let go = Reconnect {
                            new_host: Str0255::try_from(to.ip().to_string()).unwrap(),
                            new_port: to.port(),
                        };
                        up.send(Message::from(go)).await.unwrap();
                    }
                }
            });
        }
    });
    (addr, accepted)
}

/// `supervise` on `upstream` with a short backoff, until `stop`; each proxy it starts
/// is reported on the returned receiver.
fn supervise_on(
    upstream: SocketAddr,
    listen: SocketAddr,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let supervisor = tokio::spawn(async move {
        let backoff = Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(60),
        };
        let on_start = move |_: &Proxy| {
            let _ = started_tx.send(());
        };
        let stop = async {
            let _ = stop.await;
        };
        let upstream = upstream.to_string();
        supervise(
            &upstream,
            listen,
            ProxyConfig::default(),
            backoff,
            on_start,
            stop,
        )
        .await;
    });
    (supervisor, started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_that_sends_reconnect_moves_the_proxy_to_the_pool_it_names() {
    let pool = MockPool::bind("127.0.0.1:0", MockPoolConfig::default())
        .await
        .unwrap();
    let (first, _) = pool_that_redirects(pool.local_addr()).await;
    let listen = free_addr().await;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (supervisor, mut started) = supervise_on(first, listen, stop_rx);
    // Started on the first pool, which sends it away (keeping the connection open); then
    // on the one it named.
    for _ in 0..2 {
        timeout(Duration::from_secs(5), started.recv())
            .await
            .expect("the proxy starts on each pool in turn")
            .unwrap();
    }
    one_share(listen)
        .await
        .expect("shares flow to the pool the first one named");
    assert_eq!(pool.stats().connections, 1);
    assert!(pool.stats().shares_accepted >= 1);
    let _ = stop_tx.send(());
    supervisor.await.unwrap();
}

/// A loopback address nothing listens on (bound, then released).
async fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_nowhere_sends_the_proxy_back_to_its_pool() {
    let nowhere = free_addr().await;
    let (pool, accepted) = pool_that_redirects(nowhere).await;
    let listen = free_addr().await;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (supervisor, _started) = supervise_on(pool, listen, stop_rx);
    // Dialled, sent to nowhere, the dial there refused, then back to the pool.
    let back = timeout(Duration::from_secs(5), async {
        while accepted.load(std::sync::atomic::Ordering::Relaxed) < 2 {
            sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(back.is_ok(), "the proxy came back to its configured pool");
    let _ = stop_tx.send(());
    supervisor.await.unwrap();
}

/// Two proxies given one `ConnectionCount` (a process's workers) are capped together: a
/// miner beyond the cap is closed on arrival at either, and one is served again once a
/// miner of the other has left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_sharing_a_count_are_capped_together() {
    use sv2c_roles::listen::ConnectionCount;
    let count = ConnectionCount::new();
    let config = ProxyConfig {
        max_connections: 2,
        connection_count: Some(count.clone()),
        ..ProxyConfig::default()
    };
    let (pool_a, a) = start(MockPoolConfig::default(), config.clone()).await;
    let (pool_b, b) = start(MockPoolConfig::default(), config).await;
    let (_first, _) =
        set_up_with_channels(TcpStream::connect(a.local_addr()).await.unwrap(), 1).await;
    let (second, _) =
        set_up_with_channels(TcpStream::connect(b.local_addr()).await.unwrap(), 1).await;
    assert_eq!(count.get(), 2);

    // A third miner is over the cap at either proxy, though each serves only one.
    for proxy in [&a, &b] {
        let third = TcpStream::connect(proxy.local_addr()).await.unwrap();
        assert!(
            closed_within(third, Duration::from_secs(5)).await.is_some(),
            "a miner over the workers' cap is closed"
        );
    }
    assert_eq!(count.get(), 2);

    // The second leaves: a miner is served at the first proxy again.
    drop(second);
    assert!(wait_for(Duration::from_secs(5), || count.get() == 1).await);
    let (_again, ids) =
        set_up_with_channels(TcpStream::connect(a.local_addr()).await.unwrap(), 1).await;
    assert_eq!(ids.len(), 1);
    assert_eq!(a.stats().connections_open, 2);

    // A proxy that stops gives its miners back to the count.
    a.shutdown().await;
    assert!(wait_for(Duration::from_secs(5), || count.get() == 0).await);
    b.shutdown().await;
    pool_a.shutdown().await;
    pool_b.shutdown().await;
}
